"""Issue #14 lead: how many Hungarian steps remain after an auction start (the NumPy twin's
``auction_start``: parallel rounds of Jonker–Volgenant's augmenting row reduction).

    python scripts/auction_start_counts.py [--sizes 512,1024] [--rounds 0,25,50,100,200,400]

For each size, cost kind and number of auction rounds: the rows starred by the auction, the
twin's step counts 3 / 4 / 5 / 6 (phases, step-4 rounds, augmentations, dual updates) and the
answer checked against scipy. The counts are the kernel's (the twin takes the kernel's steps);
the rounds are what a kernel phase would add (a few grid-wide steps each).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from scipy.optimize import linear_sum_assignment

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lapcli.engines.numpy_hungarian import auction_start, solve_square  # noqa: E402
from lapcli.engines.steps import StepRecorder  # noqa: E402
from lapcli.problem import prepare  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="512,1024")
    parser.add_argument("--rounds", default="0,25,50,100,200,400")
    parser.add_argument("--seed", type=int, default=14)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    print("| n | costs | auction rounds | rows starred by it | steps 3 / 4 / 5 / 6 |")
    print("|---:|---|---:|---:|---|")
    for n in map(int, args.sizes.split(",")):
        kinds = {f"int [0, {r}n)": rng.integers(0, r * n, (n, n)) for r in (1, 100, 1000)}
        kinds["float64 U[0,1)"] = rng.random((n, n))
        for label, cost in kinds.items():
            work = prepare(cost).work_on(np)
            rows, best = linear_sum_assignment(cost)
            for rounds in map(int, args.rounds.split(",")):
                recorder = StepRecorder()
                cols, _, _ = solve_square(work.values, work.eps, recorder, auction_rounds=rounds)
                assert np.isclose(cost[rows, cols].sum(), cost[rows, best].sum(), rtol=1e-12), (n, label, rounds)
                values = work.values.astype(np.int64 if work.values.dtype.kind in "iu" else np.float64)
                starred = int((auction_start(values, rounds)[2] >= 0).sum()) if rounds else 0
                c = recorder.counts
                print(f"| {n} | {label} | {rounds} | {starred} | {c[3]} / {c[4]} / {c[5]} / {c[6]} |", flush=True)


if __name__ == "__main__":
    main()
