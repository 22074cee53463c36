"""The ε-scaling auction's phases on dense matrices, exactly as engine ``cuda-sap`` starts a square
above its one-block search (lapcli.engines.cuda.sap_start.scaled_auction, then its hand-over), run
several times on the same matrix: the bids run in no fixed order, so its time moves from run to
run, and the phases tell where (rounds, rows released, bids, repeated scans, the longest eviction
chain one warp followed, ms). Needs CuPy and a Hopper GPU.

--scaling, --max-chain and --tail-rows replace the engine's ε factor and its chain limit
(lapcli.engines.cuda.sap_start's AUCTION_SCALING, chain_limit(n), AUCTION_TAIL_ROWS) for a run
that tries other values.

Usage (one JSON line per run on stdout):

    python3 benchmarks/auction_phases.py --cells 8192:geometric-int,16384:geometric --repeat 3
    python3 benchmarks/auction_phases.py --cells 8192:geometric-int --scaling 16 --max-chain 0
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from lapcli.generate import RANGELESS_KINDS, generate  # noqa: E402


def parse_cells(text: str) -> list[tuple[int, str]]:
    """``N:KIND,...`` (KIND one of lapcli.generate's kinds; uniform takes --range) as (n, kind)."""
    cells = []
    for item in text.split(","):
        size, _, kind = item.partition(":")
        cells.append((int(size), kind or "geometric"))
    return cells


def run_cell(n: int, kind: str, range_factor: float, seed: int, repeat: int, maximize: bool):
    """Yield one record a run: wall ms of the auction, whether it completed, the rows its hand-over
    leaves to the searches, and its phases."""
    import cupy

    from lapcli.cuda.hungarian import device_work
    from lapcli.engines.cuda.sap_start import scaled_auction
    from lapcli.problem import prepare

    cost = generate(n, kind=kind, range_factor=1 if kind in RANGELESS_KINDS else range_factor, seed=seed)
    work = device_work(prepare(cost, maximize=maximize))
    for run in range(repeat):
        began = time.perf_counter()
        found = scaled_auction(work, timeout=None)
        cupy.cuda.runtime.deviceSynchronize()
        wall_ms = (time.perf_counter() - began) * 1e3
        start = found.hand_over(work.values)
        start.restore()
        col_start = start.col_of_row
        yield {
            "n": n, "kind": kind, "dtype": cost.dtype.name, "maximize": maximize, "run": run,
            "auction_ms": round(wall_ms, 1), "compile_ms": round(found.compile_ms, 1), "complete": found.complete,
            "free_after_hand_over": int((col_start < 0).sum()),
            "phases": [{"eps": phase.eps, "rounds": phase.rounds, "released": phase.released, "bids": phase.bids,
                        "rescans": phase.rescans, "longest_chain": phase.longest_chain, "ms": round(phase.ms, 2),
                        "left_free": phase.left_free}
                       for phase in found.result.phases],
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cells", default="8192:geometric-int", help="N:KIND, comma-separated")
    parser.add_argument("--range", type=float, default=1000, help="R of the uniform kind")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--maximize", action="store_true")
    parser.add_argument("--scaling", type=float, default=None, help="ε's factor a phase (default: the engine's)")
    parser.add_argument("--max-chain", type=int, default=None, help="bids a chain may make, 0 none (default: the engine's)")
    parser.add_argument("--tail-rows", type=int, default=None, help="rows so left that end a phase (default: the engine's)")
    args = parser.parse_args()
    from lapcli.engines.cuda import sap_start

    for name, value in (("AUCTION_SCALING", args.scaling), ("AUCTION_TAIL_ROWS", args.tail_rows)):
        if value is not None:
            setattr(sap_start, name, value)
    if args.max_chain is not None:
        sap_start.chain_limit = lambda n: args.max_chain
    for n, kind in parse_cells(args.cells):
        for record in run_cell(n, kind, args.range, args.seed, args.repeat, args.maximize):
            print(json.dumps(record), flush=True)


if __name__ == "__main__":
    main()
