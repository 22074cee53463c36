"""Engine ``sorted``'s band programme on the GPU (lapcli.cuda.sorted_band, kernels/sorted_band.cu):
the host programme's pairs from the same costs, on every metric, both senses, ties, bands of one
column and of many bit words a warp, over one block and many; auto's route to it; its time limit (pytest -m gpu)."""

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment as scipy_lsa

import lapcli
from lapcli.cuda import sorted_band as device_band
from lapcli.engines.cpu import sorted_band, sorted_points
from lapcli.errors import SolverError
from lapcli.points import costs, distance_matrix, prepare_points

from .test_points import CASES
from .test_points_band import sets

pytestmark = pytest.mark.gpu

# (k, m): one column to spare, one row, widths of one bit word and not, a warp's segment of many
# words (width > 1,024) and a last one cut short, more rows than a launch holds
SHAPES = [(1, 5), (7, 8), (50, 83), (300, 1330), (33, 33 + 40_000), (2_000, 2_600)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("kind", ["uniform", "tied", "apart"])
@pytest.mark.parametrize("maximize", [False, True])
@pytest.mark.parametrize("metric, p", CASES)
def test_the_device_takes_the_host_s_pairs(rng, metric, p, maximize, kind, shape, monkeypatch):
    """Sorted sides as the engine passes them: the same columns as the host programme (the same
    costs, ties to the leftmost column), minkowski's pow within an ulp: the same total."""
    monkeypatch.setattr(device_band, "CELLS_A_LAUNCH", 1 << 18)  # several launches a problem
    monkeypatch.setattr(device_band, "WORDS_A_WARP", 1)  # a block for every 1,024 columns of the band
    monkeypatch.setattr(device_band, "BACK_ROWS_A_LAUNCH", 7)  # the read-back in slices, each from the row after
    k, m = shape
    problem = prepare_points(*sets(rng, k, m, kind), metric, p=p, maximize=maximize)
    x = np.sort(np.asarray(problem.rows, dtype=np.float64)[:, 0])[:, None]
    y = np.sort(np.asarray(problem.columns, dtype=np.float64)[:, 0])[:, None]
    y = y[::-1] if maximize else y
    on_host = sorted_band.band_pairs(x, y, metric, problem.p, problem.sign)
    on_device, _ = device_band.band_pairs(x, y, metric, problem.p, problem.sign)
    assert on_device.dtype == np.int64 and np.all(np.diff(on_device) > 0)
    if metric != "minkowski":
        assert on_device.tolist() == on_host.tolist()
    total = [float(costs(x[:, 0], y[cols, 0], metric, problem.p).sum()) for cols in (on_host, on_device)]
    assert total[1] == pytest.approx(total[0], rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("maximize", [False, True])
def test_a_wide_band_over_many_blocks(rng, maximize):
    """50 × 300,050 points: the grid's default blocks (many), the host's pairs."""
    problem = prepare_points(*sets(rng, 50, 300_050, "uniform"), maximize=maximize)
    x = np.sort(np.asarray(problem.rows)[:, 0])[:, None]
    y = np.sort(np.asarray(problem.columns)[:, 0])[:, None]
    y = y[::-1] if maximize else y
    on_device, _ = device_band.band_pairs(x, y, "sqeuclidean", 2.0, problem.sign)
    assert on_device.tolist() == sorted_band.band_pairs(x, y, "sqeuclidean", 2.0, problem.sign).tolist()


@pytest.mark.parametrize("maximize", [False, True])
def test_auto_runs_a_large_band_on_the_gpu(rng, maximize):
    """3,000 × 4,500 points (4.5 M cells, above DEVICE_BAND_FROM): the band on the GPU, scipy's
    optimum on cdist's matrix, certified."""
    a, b = rng.random((4500, 1)), rng.normal(size=(3000, 1))
    assert sorted_points.band_on_device(3000, 4500)
    solution = lapcli.solve_points(a, b, "euclidean", maximize=maximize)
    assert solution.report.solver == "sorted" and solution.report.certified
    assert solution.report.steps[1].name == "pairs in order over the band (GPU)"
    assert solution.report.device != "cpu"
    cost = distance_matrix(a, b, "euclidean")
    assert solution.objective == pytest.approx(cost[scipy_lsa(cost, maximize=maximize)].sum(), rel=1e-12)


def test_the_device_band_honours_the_time_limit(rng, monkeypatch):
    monkeypatch.setattr(device_band, "CELLS_A_LAUNCH", 1 << 12)
    x, y = np.sort(rng.random((500, 1)), axis=0), np.sort(rng.random((900, 1)), axis=0)
    with pytest.raises(SolverError, match="the sorted band ran past the time limit: 0 of 500 rows matched"):
        device_band.band_pairs(x, y, "sqeuclidean", 2.0, 1.0, timeout=0.0, began=0.0)
    with pytest.raises(SolverError, match="time limit"):
        lapcli.solve_points(rng.random((3000, 1)), rng.random((4500, 1)), timeout=1e-4)


def test_the_device_read_back_honours_the_time_limit(rng, monkeypatch):
    """The clock is read between the read-back's slices too: the rows in one launch, then late."""
    import itertools

    monkeypatch.setattr(device_band, "BACK_ROWS_A_LAUNCH", 64)
    monkeypatch.setattr(device_band, "perf_counter", itertools.chain([0.0], itertools.repeat(10.0)).__next__)
    x, y = np.sort(rng.random((500, 1)), axis=0), np.sort(rng.random((900, 1)), axis=0)
    with pytest.raises(SolverError, match="the sorted band ran past the time limit: 0 of 500 pairs read back"):
        device_band.band_pairs(x, y, "sqeuclidean", 2.0, 1.0, timeout=1.0, began=0.0)
