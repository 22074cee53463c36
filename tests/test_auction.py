"""The ε-scaling auction of square point problems (kernels/auction.cu, lapcli.cuda.auction) on the
CPU: its schedule, and its NumPy twin (lapcli.twins.auction_twin, the kernel's rules with the bids
one at a time) against scipy on the costs that make an auction work hard."""

import io

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment as scipy_lsa

from lapcli.cuda import auction
from lapcli.points import distance_matrix
from lapcli.twins import auction_twin
from lapcli.work import float_eps


def test_the_schedule_falls_by_the_scaling_to_the_final_eps():
    phases = auction.schedule(1.0, 1e-6, scaling=10.0)
    assert phases[0] == 1.0 and phases[-1] == 1e-6
    assert np.allclose(np.array(phases[:-1])[1:] / np.array(phases[:-1])[:-1], 0.1)
    assert all(later < earlier for earlier, later in zip(phases, phases[1:]))
    assert auction.schedule(0.0, 1e-9) == [1e-9]  # all costs tied: one phase
    with pytest.raises(ValueError, match="positive"):
        auction.schedule(1.0, 0.0)


def solved_by_the_twin(cost):
    n = cost.shape[0]
    final_eps = float_eps(n, float(np.abs(cost).max())) / 8  # as engine cuda-sap sets it
    col_of_row, v, phases = auction_twin(cost, final_eps, max_bids=300_000)
    assert sorted(col_of_row.tolist()) == list(range(n))
    u = cost[np.arange(n), col_of_row] - v[col_of_row]
    assert (cost - u[:, None] - v[None, :]).min() >= -2 * final_eps
    return col_of_row, phases


@pytest.mark.parametrize("n", [40, 150])
def test_the_twin_is_optimal_on_uniform_points(rng, n):
    """(From n = 40: below, 2ε is a few ulps of the costs and rounding alone passes it; engine
    cuda-sap runs the auction from AUCTION_FROM points.)"""
    a, b = rng.random((n, 2)), rng.random((n, 2))
    cost = distance_matrix(a, b, "sqeuclidean")
    col_of_row, phases = solved_by_the_twin(cost)
    assert cost[np.arange(n), col_of_row].sum() == pytest.approx(cost[scipy_lsa(cost)].sum(), rel=1e-12, abs=1e-15)
    assert phases[-1][0] == pytest.approx(float_eps(n, float(cost.max())) / 8)


@pytest.mark.parametrize("kind", ["ties", "apart", "grid"])
def test_the_twin_where_near_columns_do_not_hold_the_answer(rng, kind):
    """All costs tied; two sets apart (every row's near columns are the same few, too few for a
    matching: without a row's dense bids the bids would never end); repeated points."""
    n = 300  # above the 128 near columns a row starts with
    if kind == "ties":
        a = b = np.zeros((n, 2))
    elif kind == "apart":
        a, b = rng.normal(scale=0.01, size=(n, 2)), rng.normal(loc=3.0, size=(n, 2))
    else:
        a, b = rng.integers(0, 3, size=(n, 2)).astype(float), rng.integers(0, 3, size=(n, 2)).astype(float)
    cost = distance_matrix(a, b, "euclidean")
    col_of_row, phases = solved_by_the_twin(cost)
    assert cost[np.arange(n), col_of_row].sum() == pytest.approx(cost[scipy_lsa(cost)].sum(), rel=1e-12, abs=1e-12)
    assert all(rounds <= 16 for _, rounds, _ in phases)  # the release pass adds what is missing, fast


def test_the_progress_line_follows_the_phases():
    """lap solve --points on a terminal: a transient line per ε phase; none when quiet or piped."""
    from rich.console import Console

    from lapcli.cli.points import phase_progress

    console = Console(file=io.StringIO(), force_terminal=True, width=120)
    with phase_progress(console, quiet=False) as follow:
        follow(auction.Phase(1e-3, 1, 4096, 9000, 0, 12, 1.5), 2)
        follow(auction.Phase(1e-4, 1, 100, 200, 0, 3, 0.5), 1)
    assert "ε 0.0001, 100 rows re-bid, 200 bids" in console.file.getvalue()
    with phase_progress(console, quiet=True) as follow:
        assert follow is None
    with phase_progress(Console(file=io.StringIO()), quiet=False) as follow:
        assert follow is None
