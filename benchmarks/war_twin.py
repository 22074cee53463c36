"""The point auction's war rule (lapcli.cuda.auction.tail_wages_war) in its NumPy twin, with and
without it, on clustered points whose candidates are made as sparse as the engine's at larger n.

The engine keeps 160 candidates a row (128 near columns): at 32,768 points that is 0.5 % of the
columns, at 2,048 points (what the twin, a bid at a time, can run) 8 %. ``--near`` lowers the near
columns a lane keeps (lapcli.cuda.auction.NEAR, 4 in the engine) to bring the twin's ratio closer.
Prints one line a run: seconds, phases, rows left free (every deferred row and the last tail),
rows holding a column more than 2ε above their row's minimum at the hand-over (the searches take
both), and the bids of every phase.

    python benchmarks/war_twin.py --n 2048 --near 1 --chain 64 --tail 16 --seed 0
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from lapcli.cuda import auction  # noqa: E402
from lapcli.generate import generate_points  # noqa: E402
from lapcli.points import distance_matrix  # noqa: E402
from lapcli.twins import auction_twin  # noqa: E402
from lapcli.work import float_eps  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for flag, default in (("--n", 2048), ("--near", 1), ("--chain", 64), ("--tail", 16), ("--seed", 0)):
        parser.add_argument(flag, type=int, default=default)
    parser.add_argument("--without-rule", action="store_true", help="bid the wars out (defer_wars False)")
    args = parser.parse_args()
    auction.NEAR = args.near
    a = generate_points(args.n, 2, kind="clustered", seed=2 * args.seed + 1)
    b = generate_points(args.n, 2, kind="clustered", seed=2 * args.seed + 2)
    cost = distance_matrix(a, b, "sqeuclidean")
    began = time.perf_counter()
    col, v, phases = auction_twin(cost, float_eps(args.n, float(cost.max())) / 8, max_bids=10**8, max_chain=args.chain,
                                  tail_rows=args.tail, last_tail_to_searches=True, stalled_tail=True,
                                  defer_wars=not args.without_rule)
    seconds = time.perf_counter() - began
    eps = phases[-1][0]
    held = col >= 0
    reduced = cost - v[None, :]
    gap = reduced[np.arange(args.n), np.where(held, col, 0)] - reduced.min(axis=1)
    print(f"n {args.n} near {args.near} chain {args.chain} tail {args.tail} seed {args.seed} "
          f"rule {'off' if args.without_rule else 'on'}: {seconds:.1f} s, {len(phases)} phases, "
          f"free {int((~held).sum())} (deferred {sum(p[6] for p in phases)}), "
          f"held more than 2 eps off {int((held & (gap > 2 * eps)).sum())}, bids {[p[2] for p in phases]}")


if __name__ == "__main__":
    main()
