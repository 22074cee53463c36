"""Randomised check of the library's CPU forms against a scipy loop (runs anywhere, no GPU).

Each case draws a small matrix (0 to 40 a side) of one of eleven dtypes, bool to float64: integers
over a small range, the dtype's whole range or its ends; floats from 1e-300 to 1e300 scale, offset
by 1e6, with ties, forbidden entries (+inf) and now and then a NaN or a −inf. Then one public form
solves it, sometimes beside more members of the same dtype:

    lsa       linear_sum_assignment                 solve     solve(solver=auto|scipy|numpy|lapx)
    stack     solve_batch on a (B, n, m) stack      list      batch_linear_assignment on a ragged list
              (a fifth of them large enough for      (a fifth of them 256+ members; two dtypes
              the CPU engine's two threads)          and odd layouts now and then)
    match     match on a (B, Q, Σk) block            sizes     batch_linear_assignment(stack, sizes=)
    torch     batch_linear_assignment on a list of CPU tensors (where torch is installed)

The answer must be scipy's: the same objective (exact for integers; where scipy's float64 rounds
integers past 2^53, at least as good as scipy's), the same error kind where scipy raises (invalid
entries, then infeasible), or one of lapcli's documented refusals of integers too wide for exact
int64 duals or for scipy's float64 (counted apart). Prints one line per failing case and the counts.

    python benchmarks/fuzz_cpu.py --seconds 120 --seed 1
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from scipy.optimize import linear_sum_assignment as scipy_lsa

import lapcli

DTYPES = ("bool", "int8", "uint8", "int16", "int32", "uint32", "int64", "uint64", "float16", "float32", "float64")
REFUSALS = ("too wide",)  # lapcli's documented refusals where scipy would round


def draw(rng, n: int, m: int, dtype: str) -> np.ndarray:
    if dtype == "bool":
        return rng.random((n, m)) < 0.5
    choice = int(rng.integers(0, 6))
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        lo, hi = [(0, 3), (0, 100), (info.min, info.max), (info.max - 50, info.max), (info.min, info.min + 50),
                  (-5, 5)][choice]
        return rng.integers(max(lo, info.min), min(hi, info.max), (n, m), dtype=dtype, endpoint=True)
    scale = (1.0, 1e-300, 1e300, 1e6, 1e-3, 1.0)[choice]
    cost = rng.random((n, m)) * scale + (1e6 if choice == 5 else 0.0)
    if rng.random() < 0.2:
        cost = np.round(cost * 4) / 4  # ties
    with np.errstate(over="ignore"):  # 1e300 in float16 or float32: +inf, a forbidden pair
        cost = cost.astype(dtype)
    if rng.random() < 0.3:
        cost[rng.random((n, m)) < 0.3] = np.inf
    if rng.random() < 0.05 and n and m:
        cost[rng.integers(0, n), rng.integers(0, m)] = rng.choice([np.nan, -np.inf])
    return cost


def odd_layout(rng, cost: np.ndarray) -> np.ndarray:
    """The same values in a layout the fast paths do not take: Fortran order, big-endian, or a
    view with strides."""
    choice = int(rng.integers(0, 3))
    if choice == 0:
        return np.asfortranarray(cost)
    if choice == 1 and cost.dtype.kind in "iuf" and cost.dtype.itemsize > 1:
        return cost.astype(cost.dtype.newbyteorder(">"))
    padded = np.repeat(cost, 2, axis=1)
    return padded[:, ::2]


def total(cost: np.ndarray, rows, cols):
    values = cost[np.asarray(rows), np.asarray(cols)]
    return sum(int(x) for x in values) if cost.dtype.kind in "iub" else float(np.sum(values.astype(np.float64)))


def scipy_answer(cost: np.ndarray, maximize: bool):
    """("ok", objective) or ("invalid" | "infeasible", message)."""
    try:
        rows, cols = scipy_lsa(cost, maximize=maximize)
    except ValueError as error:
        return ("infeasible" if "infeasible" in str(error) else "invalid", str(error))
    return ("ok", total(cost, rows, cols))


def expected(answers: list):
    """A batch's expected outcome: invalid entries anywhere first, then infeasibility, else ok."""
    for kind in ("invalid", "infeasible"):
        if any(a[0] == kind for a in answers):
            return kind
    return "ok"


def agrees(got, want, cost: np.ndarray, maximize: bool) -> bool:
    if isinstance(got, int) and isinstance(want, int):
        if cost.dtype.kind in "iu" and cost.size and max(abs(int(cost.min())), abs(int(cost.max()))) * min(cost.shape) >= 2**53:
            return got >= want if maximize else got <= want  # scipy rounded these; lapcli is exact
        return got == want
    bits = np.finfo(cost.dtype).bits if cost.dtype.kind == "f" else 64
    rel = 1e-9 if bits == 64 else 1e-6 * max(cost.size, 1)
    return abs(got - want) <= rel * max(1.0, abs(got), abs(want))


def check_members(members, columns, answers, maximize) -> None:
    """Each member's columns (−1 unassigned) give scipy's objective."""
    for b, (cost, cols) in enumerate(zip(members, columns)):
        cols = np.asarray(cols)[: cost.shape[0]]
        rows = np.flatnonzero(cols >= 0)
        assert len(rows) == min(cost.shape), f"member {b}: {len(rows)} pairs for {cost.shape}"
        got = total(cost, rows, cols[rows])
        assert agrees(got, answers[b][1], cost, maximize), f"member {b} {cost.shape}: {got} against {answers[b][1]}"


def run_case(rng, form: str, dtype: str, maximize: bool) -> str:
    """Solve one drawn case by ``form``; returns "ok" or "refused", raises AssertionError on a mismatch."""
    n, m = (int(x) for x in rng.integers(0, 9 if rng.random() < 0.5 else 40, 2))
    more = [draw(rng, *(int(x) for x in rng.integers(0, 30, 2)), dtype) for _ in range(int(rng.integers(0, 4)))]
    if form in ("lsa", "solve"):
        members = [draw(rng, n, m, dtype)]
    elif form == "stack":
        members = [draw(rng, n, m, dtype) for _ in range(1 + len(more))]
    elif form == "match":
        q, counts = max(n, 1), [int(k) for k in rng.integers(0, 12, 1 + len(more))]
        block = np.stack([np.concatenate([draw(rng, q, k, dtype) for k in counts], axis=1) for _ in counts])
        starts = np.concatenate([[0], np.cumsum(counts)]).astype(int)
        members = [block[i, :, starts[i]:starts[i] + k] for i, k in enumerate(counts)]
    elif form == "sizes":
        big_n, big_m, batch = max(n, 1), max(m, 1), 1 + len(more)
        stack = np.stack([draw(rng, big_n, big_m, dtype) for _ in range(batch)])
        rows, cols = rng.integers(0, big_n + 1, batch), rng.integers(0, big_m + 1, batch)
        if stack.dtype.kind == "f":  # what lies outside each corner is never read
            for b in range(batch):
                stack[b, rows[b]:, :], stack[b, :, cols[b]:] = np.nan, np.nan
        members = [stack[b, :rows[b], :cols[b]] for b in range(batch)]
    elif form == "list" and rng.random() < 0.2:  # the member loop on two threads: 256+ members, mixed
        kinds = [dtype, str(rng.choice(DTYPES))]  # dtypes and layouts (Fortran order, >f8, views)
        members = [draw(rng, *(int(x) for x in rng.integers(0, 30, 2)), kinds[int(rng.random() < 0.3)])
                   for _ in range(int(rng.integers(256, 300)))]
        members = [odd_layout(rng, c) if rng.random() < 0.1 else c for c in members]
    elif form == "stack" and rng.random() < 0.2:  # a stack the pipeline's threads share: ≥ 64 K entries
        members = [draw(rng, 16, 20, dtype) for _ in range(int(rng.integers(210, 260)))]
    elif form == "list":  # a short list: now and then a second dtype and odd layouts too
        second = str(rng.choice(DTYPES)) if rng.random() < 0.3 else dtype
        members = [draw(rng, n, m, dtype)] + [draw(rng, *c.shape, second) for c in more]
        members = [odd_layout(rng, c) if rng.random() < 0.1 else c for c in members]
    else:  # torch
        members = [draw(rng, n, m, dtype), *more]
    answers = [scipy_answer(cost, maximize) for cost in members]
    want = expected(answers)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if form == "lsa":
                rows, cols = lapcli.linear_sum_assignment(members[0], maximize=maximize)
                assert (np.diff(rows) > 0).all(), "rows not sorted"
                columns = [np.full(members[0].shape[0], -1)]
                columns[0][rows] = cols
            elif form == "solve":
                solver = str(rng.choice(["auto", "scipy", "numpy", "lapx"]))
                solution = lapcli.solve(members[0], maximize=maximize, solver=solver)
                columns = [np.full(members[0].shape[0], -1)]
                columns[0][solution.row_ind] = solution.col_ind
            elif form == "stack":
                columns = lapcli.solve_batch(np.stack(members), maximize=maximize).col_ind
            elif form == "match":
                columns = []
                for cost, (rows, cols) in zip(members, lapcli.match(block, counts, maximize=maximize)):
                    rows = np.asarray(rows)
                    assert (np.diff(rows) > 0).all(), "pairs not sorted by query"
                    columns.append(np.full(cost.shape[0], -1))
                    columns[-1][rows] = np.asarray(cols)
            elif form == "sizes":
                columns = lapcli.batch_linear_assignment(stack, maximize=maximize, sizes=(rows, cols))
            elif form == "torch":
                import torch

                got = lapcli.batch_linear_assignment([torch.from_numpy(c.copy()) for c in members], maximize=maximize)
                assert all(isinstance(c, torch.Tensor) and c.dtype == torch.int64 for c in got), "not int64 tensors"
                columns = [c.numpy() for c in got]
            else:
                columns = lapcli.batch_linear_assignment(members, maximize=maximize)
    except (ValueError, lapcli.SolverError) as error:
        text = str(error)
        if any(r in text for r in REFUSALS) and isinstance(error, (lapcli.LapInputError, lapcli.SolverError)):
            return "refused"
        kind = "infeasible" if "infeasible" in text else "invalid"  # the drop-in raises scipy's own errors
        assert kind == want, f"{type(error).__name__}: {text} where scipy gives {want}"
        return "ok"
    assert want == "ok", f"an answer where scipy gives {want}"
    check_members(members, columns, answers, maximize)
    return "ok"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    forms = ["lsa", "solve", "stack", "list", "match", "sizes"]
    try:
        import torch  # noqa: F401

        forms.append("torch")
    except ImportError:
        pass
    counts = {"ok": 0, "refused": 0, "mismatch": 0}
    end = time.monotonic() + args.seconds
    while time.monotonic() < end:
        form, dtype, maximize = str(rng.choice(forms)), str(rng.choice(DTYPES)), bool(rng.random() < 0.4)
        if form == "torch" and dtype in ("uint16", "uint32", "uint64", "float16"):
            continue  # torch.from_numpy's dtypes
        try:
            counts[run_case(rng, form, dtype, maximize)] += 1
        except AssertionError as error:
            counts["mismatch"] += 1
            if counts["mismatch"] <= 20:
                print(f"mismatch: {form} {dtype} maximize={maximize}: {error}", flush=True)
    print(f"seed {args.seed}: {sum(counts.values())} cases, {counts['ok']} agree, {counts['refused']} refused "
          f"(integers too wide), {counts['mismatch']} mismatches")


if __name__ == "__main__":
    main()
