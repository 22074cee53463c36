"""benchmarks/tail_replay.c, the CPU replay of the point auction's last searches, solves a tail
exactly in each of its modes: compiled here and run on a NumPy auction's hand-over (the twins),
written by benchmarks/save_tail.py's writer, its objective against scipy's."""

import importlib.util
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

from lapcli.generate import generate_points
from lapcli.points import distance_matrix
from lapcli.twins import hand_over
from lapcli.twins.auction import auction_twin

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
SOURCE = BENCHMARKS / "tail_replay.c"
COMPILER = shutil.which("cc") or shutil.which("gcc")


@pytest.fixture(scope="module")
def replay(tmp_path_factory):
    if COMPILER is None:
        pytest.skip("no C compiler")
    binary = tmp_path_factory.mktemp("replay") / "tail_replay"
    subprocess.run([COMPILER, "-O2", "-ffp-contract=off", "-o", str(binary), str(SOURCE), "-lm"], check=True)
    return binary


@pytest.fixture(scope="module", params=["sqeuclidean", "euclidean", "cityblock"])
def tail(tmp_path_factory, request):
    """A clustered tail: the auction's chains cut at 32 bids leave rows to the searches."""
    n = 384
    a, b = generate_points(n, 2, kind="clustered", seed=5), generate_points(n, 2, kind="clustered", seed=6)
    cost = distance_matrix(a, b, request.param)  # the kernels' numbers
    col, v, phases = auction_twin(cost, 1e-9, max_bids=10**7, max_chain=32, tail_rows=256, last_tail_to_searches=True)
    v, col, searched = hand_over(cost, col, v, slack=2 * phases[-1][0])
    assert (col < 0).sum() >= 4  # a tail worth replaying
    lowered_col = np.full(n, -1.0)
    lowered_cost = np.zeros(n)
    rows, cols = np.nonzero(searched != cost)
    lowered_col[rows], lowered_cost[rows] = cols, searched[rows, cols]
    folder = tmp_path_factory.mktemp("tail")
    spec = importlib.util.spec_from_file_location("save_tail", BENCHMARKS / "save_tail.py")
    save_tail = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(save_tail)  # the writer the GPU side uses
    save_tail.write_tail(folder, a, b, v, col, lowered_col, lowered_cost, request.param)
    rows, cols = linear_sum_assignment(cost)
    return folder, n, float(cost[rows, cols].sum())


@pytest.mark.parametrize("mode", [["single"], ["rounds", "32", "1e-9"], ["global", "50"], ["batch", "6"]],
                         ids=["single", "rounds", "global", "batch"])
def test_every_mode_ends_at_the_optimum(replay, tail, mode):
    folder, n, optimum = tail
    out = subprocess.run([str(replay), str(folder), *mode], check=True, capture_output=True, text=True).stdout
    last = out.strip().splitlines()[-1]
    assert f"{n} of {n} rows assigned" in last
    objective = float(last.rsplit("objective ", 1)[1])
    assert objective == pytest.approx(optimum, rel=1e-12, abs=1e-12)
