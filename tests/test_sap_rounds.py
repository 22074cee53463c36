"""The searches that finish a point auction in rounds of many rows (kernels/sap_rounds.cu), on the
CPU: their NumPy twin (lapcli.twins.round_searches) from auction tails is optimal with feasible
duals, and the launcher's shared-memory account covers what the kernel declares."""

import re
import shutil
import subprocess

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment as scipy_lsa

from lapcli.points import distance_matrix
from lapcli.twins import auction_twin, hand_over, reference_stack, round_searches
from lapcli.work import float_eps

NVCC = shutil.which("nvcc")


def auction_tail(cost: np.ndarray):
    """An auction (its twin) whose chain limit left rows to the searches, handed over as the engine
    does: (v, col_of_row with the searched rows free, the lowered matrix, the last ε)."""
    n = cost.shape[0]
    final_eps = float_eps(n, cost.max()) / 8
    col_of_row, v, phases = auction_twin(cost, final_eps, max_chain=16, tail_rows=64, last_tail_to_searches=True,
                                         max_bids=10**7)
    v_start, col_start, searched = hand_over(cost, col_of_row, v, slack=2 * phases[-1][0])
    return v_start, col_start, searched, phases[-1][0]


@pytest.mark.parametrize("metric, grid", [("sqeuclidean", 0), ("cityblock", 0), ("cityblock", 12), ("euclidean", 8)])
def test_rounds_from_an_auction_tail_are_optimal_with_feasible_duals(rng, metric, grid):
    """Uniform points, and points on a grid (many tied costs and distances): the rounds reach the
    optimum from the auction's hand-over, with the duals the Dijkstra searches would certify, in
    fewer rounds than the rows they scan."""
    n = 300
    a, b = ((rng.integers(0, grid, (n, 2)) / grid, rng.integers(0, grid, (n, 2)) / grid) if grid
            else (rng.random((n, 2)), rng.random((n, 2))))
    cost = distance_matrix(a, b, metric)
    v_start, col_start, searched, eps = auction_tail(cost)
    assert (col_start < 0).sum() >= 5
    columns, v, rounds, rows = round_searches(searched, v_start, col_start, delta=4 * eps)
    assert sorted(columns.tolist()) == list(range(n)) and len(rounds) == (col_start < 0).sum()
    optimum = cost[scipy_lsa(cost)].sum()
    assert cost[np.arange(n), columns].sum() == pytest.approx(optimum, rel=1e-12, abs=1e-12)
    dijkstra, _, _, _ = reference_stack(searched[None], warm_start=(v_start[None], col_start[None]))
    assert searched[np.arange(n), columns].sum() == pytest.approx(searched[np.arange(n), dijkstra[0]].sum(), rel=1e-12)
    u = searched[np.arange(n), columns] - v[columns]
    reduced = searched - u[:, None] - v[None, :]
    assert reduced.min() >= -1e-12 * cost.max() and np.abs(reduced[np.arange(n), columns]).max() <= 1e-12 * cost.max()
    assert sum(rows) > sum(rounds)


def test_a_round_takes_at_most_its_rows_and_the_width_follows_the_count(rng):
    """With one row a round the twin is a Dijkstra search in label-correcting order: still optimal;
    a width far too large is halved until rounds take no more than their rows."""
    n = 120
    cost = distance_matrix(rng.random((n, 2)), rng.random((n, 2)), "sqeuclidean")
    v_start, col_start, searched, eps = auction_tail(cost)
    optimum = cost[scipy_lsa(cost)].sum()
    for rows_a_round, delta in ((1, 4 * eps), (32, 1e6)):
        columns, _, rounds, rows = round_searches(searched, v_start, col_start, rows_a_round=rows_a_round, delta=delta)
        assert cost[np.arange(n), columns].sum() == pytest.approx(optimum, rel=1e-12, abs=1e-12)
        assert all(r <= 1 + rows_a_round * (k - 1) for r, k in zip(rows, rounds))


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
@pytest.mark.parametrize("metric, dim, threads", [("euclidean", 2, 512), ("euclidean", 10, 512), ("minkowski", 10, 512),
                                                  ("minkowski", 11, 256), ("euclidean", 32, 256)])
def test_the_launchers_shared_account_covers_the_kernels(tmp_path, metric, dim, threads):
    """lapcli.cuda.sap_rounds.static_shared (what max_columns leaves out of a block's shared memory)
    is at least the static shared memory ptxas reports for the kernel, and it compiles unspilled,
    the costliest metric included at the most coordinates a 512-thread block takes."""
    from lapcli.cuda import points, sap_rounds

    program = points.program(metric, dim, "tail", threads=threads)
    source = tmp_path / "rounds.cu"
    source.write_text(program.source + "\nvoid lapcli_instantiate() {\n"
                      + "".join(f"    (void)&{expression};\n" for _, expression, _ in program.kernels) + "}\n")
    result = subprocess.run([NVCC, "-arch=sm_90", "-cubin", "-std=c++17", "-Xptxas", "-v", *program.defines, "-o",
                             str(tmp_path / "rounds.cubin"), str(source)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    assert set(re.findall(r"(\d+) bytes spill stores", result.stderr)) == {"0"}
    declared = int(re.search(r"(\d+) bytes smem", result.stderr).group(1))
    assert declared <= sap_rounds.static_shared(threads, dim + 2) < declared + 2048


def test_the_launchers_signature_is_the_kernels_parameters_in_order():
    """One letter a parameter of sap_rounds (lapcli.cuda.runtime.SLOT_CODES): a pointer, int,
    int64 or double each, in the kernel's order, so that a launch packs what the kernel reads."""
    from lapcli.cuda import sap_cluster, sap_rounds

    text = sap_cluster.kernel_text("sap_rounds.cu")
    parameters = text[text.index("sap_rounds(const void* first"):].split(")")[0].split("(", 1)[1].split(",")
    letters = "".join("p" if "*" in x else "i" if x.split()[0] == "int" else "q" if "long long" in x else "d"
                      for x in parameters)
    assert letters == sap_rounds.SIGNATURE
