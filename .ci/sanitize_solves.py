"""Small solves through every kernel, for compute-sanitizer (.ci/gpu-check.sh runs it under memcheck,
racecheck and synccheck). ``--short``: fewer and smaller problems on the dense paths, for racecheck
and synccheck, whose time grows with every shared-memory access (H100, racecheck: the cluster path
at n = 300 and the dense float auction at n = 1030 passed three minutes, the float tail at 300
points in both dtypes two more); memcheck runs them all. Prints each part's start on stderr, so a
run cut off by its limit shows where it was."""
import sys
import time

import numpy as np

import lapcli

short = "--short" in sys.argv[1:]
began = time.perf_counter()


def part(name):
    print(f"[{time.perf_counter() - began:7.1f} s] {name}", file=sys.stderr, flush=True)


rng = np.random.default_rng(7)
part("one-block searches, the classical kernel")
for n, r in ((37, 10), (130, 1000), (300, 1)):
    for dtype in ("int32", "float64"):
        for solver in ("cuda", "cuda-sap"):
            lapcli.solve((rng.integers(0, max(1, r * n), (n, n))).astype(dtype), solver=solver)
lapcli.solve(rng.random((90, 60)), solver="cuda", maximize=True)
lapcli.solve(rng.random((90, 60)), solver="cuda-sap", maximize=True)
part("the batch kernel")
for shape in ((40, 16, 16), (20, 30, 70), (20, 70, 30), (3, 300, 300)):  # the batch kernel, certify fused
    lapcli.solve_batch(rng.integers(0, 1000, shape).astype("int32"), solver="cuda-batch")
    lapcli.solve_batch(rng.random(shape).astype("float32"), solver="cuda-batch", maximize=True)
for maximize in (False, True):  # ragged batches: read in place (float32), or packed (maximised, int64)
    lapcli.solve_batch([rng.random((int(r), int(c))).astype("float32") for r, c in rng.integers(0, 40, (30, 2))],
                       solver="cuda-batch", maximize=maximize)
    lapcli.solve_batch([rng.integers(0, 99, (int(r), int(c))) for r, c in rng.integers(0, 40, (30, 2))],
                       solver="cuda-batch", maximize=maximize)
from lapcli.engines.cuda import sap as cuda_sap
from lapcli.cuda import auction
part("the cluster path")
cuda_sap.ONE_BLOCK_UP_TO = 0  # cuda-sap's cluster path on small problems: the dense auction (integers), kernels/sap.cu
for n in (37,) if short else (37, 300):
    for dtype in ("int32", "float64"):
        lapcli.solve((rng.integers(0, 1000 * n, (n, n))).astype(dtype), solver="cuda-sap")
lapcli.solve(rng.random((90, 60)), solver="cuda-sap", maximize=True)
if not short:  # (short: the float tail below runs the same auction, on fewer points)
    part("the dense float auction")
    lapcli.solve(rng.random((1030, 1030)), solver="cuda-sap")  # its float answer, certified as it is
cuda_sap.ONE_BLOCK_UP_TO = 2048
from lapcli.engines.cuda import sap_start
part("a float tail, lowered and searched")
# a float tail: its pairs lowered (float64, and a float64 copy of float32), its rows searched in one block, then
# over a cluster; the scaled auction forced down to 512 points (short: 300 in one block, 40 over a cluster)
chain_limit, sap_start.chain_limit = sap_start.chain_limit, lambda n: 2
cuda_sap.SCALED_AUCTION_FROM_FLOATS = 0
for one_block_up_to in (2048, 0):
    # short: the cluster's searches (the slow part under racecheck) on 40 points, the auction from 32
    tail_n = 512 if not short else 300 if one_block_up_to else 40
    cuda_sap.ONE_BLOCK_UP_TO, auction.AUCTION_FROM = one_block_up_to, 512 if not short else min(256, tail_n - 8)
    a, b = rng.random((tail_n, 2)), rng.random((tail_n, 2))
    distances = ((a[:, None, :] - b[None, :, :]) ** 2).sum(-1)
    for dtype in ("float64",) if short else ("float64", "float32"):
        lapcli.solve(distances.astype(dtype), solver="cuda-sap")
cuda_sap.ONE_BLOCK_UP_TO, cuda_sap.SCALED_AUCTION_FROM_FLOATS, sap_start.chain_limit = 2048, 2048, chain_limit
auction.AUCTION_FROM = 1024
part("ragged batches")
import cupy
lapcli.match(cupy.asarray(rng.random((6, 50, 60))), [10, 0, 15, 5, 20, 10])  # float64: packed
lapcli.match(cupy.asarray(rng.random((6, 50, 60)).astype("float32")), [10, 0, 15, 5, 20, 10])  # in place, pairs
lapcli.solve_batch(cupy.asarray(rng.random((5, 30, 7)).astype("float32")))  # a tall stack through its transpose
import importlib.util
if importlib.util.find_spec("torch"):  # torch's lean launches (engines/cuda/batch_torch.py); a 300 x 300 member staged in part
    import torch
    lapcli.match(torch.rand((6, 50, 60), device="cuda"), [10, 0, 15, 5, 20, 10])
    lapcli.batch_linear_assignment(torch.rand((4, 30, 40), device="cuda"), sizes=([30, 5, 0, 12], [40, 40, 9, 3]))
    lapcli.batch_linear_assignment([torch.rand((300, 300), device="cuda"), torch.rand((7, 3), device="cuda")])
    # the ragged launches' own layouts: one column a thread (1 x 1024), two (2 x 64: more members than SMs)
    lapcli.batch_linear_assignment(torch.rand((3, 20, 900), device="cuda"), sizes=([20, 5, 1], [900, 700, 3]))
    lapcli.batch_linear_assignment(torch.rand((140, 8, 100), device="cuda"))
part("point sets through the cluster kernel")
wide = 200 if short else 700  # the cluster kernel's searches: racecheck's time
for (n, m), metric in (((37, 37), "sqeuclidean"), ((60 if short else 300,) * 2, "cosine"), ((40, wide), "minkowski"),
                       ((wide, 40), "cityblock")):  # point sets: the implicit costs, the passes, the cluster kernel
    lapcli.solve_points(rng.random((n, 3)), rng.random((m, 3)), metric, solver="cuda-sap", maximize=n > m)
part("point sets through the auction, then the searches in rounds")
auction.AUCTION_FROM = 256 if short else 1024  # the auction (squares), from 300 points when short,
auction_n = 300 if short else 1100  # bidding a warp a row (the floor's part below runs a block a row)
block_rows_up_to = auction.BLOCK_ROWS_UP_TO
auction.BLOCK_ROWS_UP_TO = 0 if short else block_rows_up_to
for n, metric in ((auction_n, "sqeuclidean"), (auction.AUCTION_FROM, "euclidean")):
    lapcli.solve_points(rng.random((n, 2)), rng.random((n, 2)), metric, solver="cuda-sap")
from lapcli.engines.cuda import sap_points  # chains of 2 bids park rows: the searches in rounds take them
points_chain_limit, sap_points.points_chain_limit = sap_points.points_chain_limit, lambda n: 2
lapcli.solve_points(rng.random((auction_n, 2)), rng.random((auction_n, 2)), "cityblock", solver="cuda-sap")
# a price war forced with a tail of 2 rows: three quarters of the rows crowd a quarter of the columns, the
# surplus parks more rows round after round, and the release passes skip the rows deferred to the searches
tail_rows, sap_points.TAIL_ROWS = sap_points.TAIL_ROWS, 2
crowded, sparse = 3 * auction_n // 4, auction_n - 3 * auction_n // 4
lapcli.solve_points(np.concatenate([rng.normal(0.0, 0.03, (crowded, 2)), rng.normal(1.0, 0.03, (sparse, 2))]),
                    np.concatenate([rng.normal(0.0, 0.03, (sparse, 2)), rng.normal(1.0, 0.03, (crowded, 2))]),
                    solver="cuda-sap")
sap_points.TAIL_ROWS = tail_rows
sap_points.points_chain_limit, auction.BLOCK_ROWS_UP_TO = points_chain_limit, block_rows_up_to
from lapcli.cuda import points as device_points  # the floor's paths from a row's fifth bid, a warp and a block a row,
dense_after = auction.DENSE_AFTER  # on 300 points (racecheck's time)
part("the floor from a row's fifth bid")
auction.DENSE_AFTER, auction.AUCTION_FROM = 4, 256
device_points.program.cache_clear()
for auction.BLOCK_ROWS_UP_TO in (0, 10**9):
    lapcli.solve_points(rng.random((300, 2)), rng.random((300, 2)), "cityblock", solver="cuda-sap")
auction.DENSE_AFTER, auction.BLOCK_ROWS_UP_TO, auction.AUCTION_FROM = dense_after, block_rows_up_to, 1024
device_points.program.cache_clear()
if not short:  # memcheck only (racecheck's time: a 300-point auction's bids and 300 searches)
    part("tied and repeated points: candidates from each row's own columns, wrapping past the last")
    auction.AUCTION_FROM = 256
    lapcli.solve_points(np.zeros((300, 2)), np.zeros((300, 2)), "euclidean", solver="cuda-sap")
    lapcli.solve_points(rng.integers(0, 3, (300, 2)).astype(float), rng.integers(0, 3, (300, 2)).astype(float),
                        "euclidean", solver="cuda-sap")
    part("an auction stopped by its budget at once: the searches take every row")
    from lapcli.engines.cuda import sap_start
    budget = sap_start.AUCTION_BUDGET_MIN_S, sap_start.AUCTION_BUDGET_PER_ROW_S
    sap_start.AUCTION_BUDGET_MIN_S, sap_start.AUCTION_BUDGET_PER_ROW_S = 0.0, 0.0
    lapcli.solve_points(rng.random((300, 2)), rng.random((300, 2)), "sqeuclidean", solver="cuda-sap")
    sap_start.AUCTION_BUDGET_MIN_S, sap_start.AUCTION_BUDGET_PER_ROW_S = budget
    part("a warm start: a sample's Morton order, its matrix solved, the c-transform of its duals")
    from lapcli.engines.cuda import sap_warm
    warm_from, sap_warm.WARM_FROM = sap_warm.WARM_FROM, 300
    lapcli.solve_points(rng.normal(0.0, 0.1, (300, 2)), rng.normal(0.1, 0.1, (300, 2)), "sqeuclidean",
                        solver="cuda-sap")
    sap_warm.WARM_FROM = warm_from
    auction.AUCTION_FROM = 1024
part("the band programme of 1-D rectangles: a block, and a grid of three; two launches each")
from lapcli.engines.cpu import sorted_points
from lapcli.cuda import sorted_band as device_band
device_from, sorted_points.DEVICE_BAND_FROM = sorted_points.DEVICE_BAND_FROM, 0
cells_a_launch, device_band.CELLS_A_LAUNCH = device_band.CELLS_A_LAUNCH, 1 << 21  # 30 rows a launch
for maximize in (False, True):
    lapcli.solve_points(rng.random((40, 1)), rng.random((70, 1)), "cityblock", maximize=maximize)
    lapcli.solve_points(rng.random((60, 1)), rng.random((2200, 1)), maximize=maximize)
sorted_points.DEVICE_BAND_FROM, device_band.CELLS_A_LAUNCH = device_from, cells_a_launch
part("sanitized solves done")
