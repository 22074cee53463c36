"""The point auction's warm start (lapcli.engines.cuda.sap_warm) on the GPU: the sample is every
stride-th point along Morton's curve (sap_warm.stride), the column duals are the c-transform of
the sample's row duals, an auction started from them is still exact, and load_programs loads
what it runs (pytest -m gpu)."""

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment as scipy_lsa

import lapcli
from lapcli.generate import generate_points
from lapcli.points import distance_matrix, prepare_points
from .helpers import twin_sample_reach

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("metric, most, every", [("sqeuclidean", 8192, 16), ("cityblock", 8192, 16),
                                                 ("sqeuclidean", 40, 25)])
def test_the_sample_and_its_c_transform_are_their_twins(monkeypatch, rng, metric, most, every):
    """The rows put in order (auction_tiles.put_rows_in_order), every stride-th is every stride-th
    point of lapcli.twins.tiles.spatial_order (16th, or more where the sample would exceed
    SAMPLE_MOST): column_duals' sample; and c_transform() equals min over the sampled rows of
    c − u, bit for bit."""
    import cupy

    from lapcli.cuda import auction_tiles
    from lapcli.cuda import points as device_points
    from lapcli.engines.cuda import sap_warm
    from lapcli.twins.tiles import spatial_order

    monkeypatch.setattr(sap_warm, "SAMPLE_MOST", most)
    a, b = rng.random((1000, 2)), rng.random((1000, 2))
    problem = prepare_points(a, b, metric)
    on_device = device_points.upload(problem, "auction")
    auction_tiles.put_rows_in_order(on_device)
    rows = on_device.rows[::sap_warm.stride(len(a))].get()
    assert np.array_equal(rows, a[spatial_order(a)[::every]])
    u = rng.normal(0.0, 0.1, rows.shape[0])
    v = sap_warm.c_transform(on_device, cupy.asarray(rows), cupy.asarray(u)).get()
    assert np.array_equal(v, (distance_matrix(rows, b, metric) - u[:, None]).min(axis=0))


@pytest.mark.parametrize("kind, metric", [("clustered", "sqeuclidean"), ("uniform", "sqeuclidean"),
                                          ("uniform", "cityblock"), ("clustered", "euclidean")])
def test_an_auction_from_sampled_duals_is_exact(monkeypatch, kind, metric):
    """Where the warm start applies (WARM_FROM lowered here), the auction starts from the
    c-transform of the sample's duals, not from 0, and the answer is scipy's objective, certified;
    below WARM_FROM it starts from 0. The report gives the sample's reach, its CPU twin's (the
    same sample, solved by scipy), and the coarse factor it implies (COARSE_GROWS_FROM lowered:
    it grows only where the sample moves points far, on sqeuclidean)."""
    from lapcli.cuda import auction
    from lapcli.engines.cuda import sap_points, sap_warm

    n = 3000
    a = generate_points(n, 2, kind=kind, seed=5)
    b = generate_points(n, 2, kind=kind, seed=6)
    cost = distance_matrix(a, b, metric)
    starts = []
    solve = auction.solve
    monkeypatch.setattr(auction, "solve", lambda *args, **kwargs: starts.append(kwargs.get("v_start")) or solve(
        *args, **kwargs))
    monkeypatch.setattr(sap_warm, "WARM_FROM", n)
    monkeypatch.setattr(sap_points, "COARSE_GROWS_FROM", n // 2)
    solution = lapcli.solve_points(a, b, metric, solver="cuda-sap", timeout=300)
    assert solution.report.certified
    assert solution.objective == pytest.approx(cost[scipy_lsa(cost)].sum(), rel=1e-12)
    sampled = -(-n // sap_warm.stride(n))
    details = solution.report.details
    assert details["warm_start"] == f"the duals of {sampled:,} sampled points"
    reach = twin_sample_reach(a, b, metric)
    assert details["warm_start_reach"] == pytest.approx(reach, abs=0.051)  # (rounded to 0.1)
    if metric == "sqeuclidean":  # (where the reach decides; 199 and 9.5 on these sets, CPU)
        assert (reach > sap_warm.FAR_REACH) == (kind == "clustered")
    grows = kind == "clustered" and metric == "sqeuclidean"
    assert details["coarse_factor"] == auction.COARSE_FIRST * (2 if grows else 1)
    first = solution.report.steps[0]
    assert first.name.startswith("warm start") and first.count == sampled and first.ms > 0
    assert starts[-1] is not None and float(abs(starts[-1]).max()) > 0
    monkeypatch.setattr(sap_warm, "WARM_FROM", n + 1)
    plain = lapcli.solve_points(a, b, metric, solver="cuda-sap", timeout=300)
    assert starts[-1] is None and "warm_start" not in plain.report.details
    assert plain.report.steps[0].name.startswith("auction")
    assert plain.objective == pytest.approx(solution.objective, rel=1e-12)


def test_load_programs_holds_every_program_a_warm_start_runs(monkeypatch):
    """After sap_points.load_programs (what a timed caller loads first), the warm start of 32,768
    points (a sample of 2,048, searched in one block) and of 65,536 (4,096, over a cluster) asks
    for no program it did not load: a timed first solve compiles none."""
    from lapcli.cuda import batch_lap
    from lapcli.cuda import points as device_points
    from lapcli.cuda.runtime import current_gpu
    from lapcli.engines.cuda import sap, sap_points, sap_warm

    asked = [set()]

    class Recording(dict):  # every program runtime.load looks up, loaded before or not
        def get(self, key, default=None):
            asked[-1].add(key)
            return super().get(key, default)

    gpu = current_gpu()
    monkeypatch.setattr(gpu, "kernels", Recording(gpu.kernels))
    monkeypatch.setattr(batch_lap, "_kernels", {})  # its own lookup, before runtime.load's
    sap_points.load_programs("sqeuclidean", 2)
    loaded = asked[-1]
    for n in (sap_warm.WARM_FROM, 2 * sap_warm.WARM_FROM):
        asked.append(set())
        on_device = device_points.upload(prepare_points(generate_points(n, 2, kind="clustered", seed=1),
                                                        generate_points(n, 2, kind="clustered", seed=2)), "auction")
        start = sap_warm.column_duals(on_device, sap.solve)
        assert start.sampled == n // sap_warm.stride(n) and start.v.shape == (n,)
        assert asked[-1] and asked[-1] <= loaded, f"{n} points: {asked[-1] - loaded}"


def test_the_sample_is_square_when_its_stride_grows(monkeypatch):
    """With SAMPLE_MOST lowered the rows' and the columns' stride grow alike: the sample solved is
    a square of SAMPLE_MOST points a side."""
    from lapcli.cuda import points as device_points
    from lapcli.engines.cuda import sap, sap_warm

    monkeypatch.setattr(sap_warm, "SAMPLE_MOST", 100)
    n, shapes = 3000, []
    on_device = device_points.upload(prepare_points(generate_points(n, 2, kind="clustered", seed=3),
                                                    generate_points(n, 2, kind="clustered", seed=4)), "auction")

    def solve(problem, timeout=None):
        shapes.append((problem.n_rows, problem.n_cols))
        return sap.solve(problem, timeout=timeout)

    start = sap_warm.column_duals(on_device, solve)
    assert sap_warm.stride(n) == 30 and shapes == [(100, 100)] and start.sampled == 100 and start.v.shape == (n,)
