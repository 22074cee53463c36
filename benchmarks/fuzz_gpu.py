"""Randomised verification of the CUDA solver against scipy, at scale (run on a GPU machine).

Each case draws a shape (n from 1 to --max-n, square or rectangular), a range R·n, a working dtype,
a kind (uniform, float, geometric, sanity, offset floats 1e6 + U(0, 1e-7), near-ties: integers
0..9 plus 1e-8·U(0, 1)), maximize or not, sometimes forbidden entries (sometimes enough to make
the problem infeasible), and a route: a host array, a CuPy view whose data pointer is not 16-byte
aligned, or a CSV round trip through lapcli's reader. The answer must match scipy's: the same
objective (exact for integers), a valid assignment of min(n, m) pairs, the same infeasibility,
and a certificate (an uncertified answer of a Hungarian engine is a failure).

Every failing case is saved to OUT/case-<i>.npz with its seed and parameters; replay one with
    python benchmarks/fuzz_gpu.py --replay OUT/case-17.npz
Prints the counts (solves, mismatches, errors, hangs stopped by the time limit) and writes
OUT/summary.json.
"""

from __future__ import annotations

import argparse
import re
import json
import math
import time
from pathlib import Path

import numpy as np
from scipy.optimize import linear_sum_assignment as scipy_lsa

import lapcli
from lapcli.generate import generate
from lapcli.problem import objective_tolerance

RANGES = (0.001, 0.01, 0.1, 1, 10, 100, 1000)
DTYPES = ("int32", "int64", "float32", "float64")


def draw_case(rng: np.random.Generator, max_n: int) -> dict:
    n = int(round(math.exp(rng.uniform(0, math.log(max_n)))))
    m = n if rng.random() < 0.75 else int(round(math.exp(rng.uniform(0, math.log(max_n)))))
    kind = str(rng.choice(["uniform"] * 6 + ["float", "geometric", "sanity", "offset", "near-tie", "wide"]))
    if kind == "sanity":
        m = n
    dtype = str(rng.choice(DTYPES)) if kind == "uniform" else str(rng.choice(["float32", "float64"]))
    if kind in ("offset", "near-tie"):
        dtype = "float64"  # their structure is below float32's resolution
    if kind == "wide":
        dtype = str(rng.choice(["int64", "uint64"]))  # near 2^53, 2^62, 2^63: float64 would round them
    return {
        "n": n, "m": m, "kind": kind, "range": float(rng.choice(RANGES)), "dtype": dtype,
        "maximize": bool(rng.random() < 0.2),
        "forbidden": float(rng.choice([0.0] * 6 + [0.05, 0.3, 0.9])),
        "route": str(rng.choice(["host"] * 8 + ["unaligned", "csv"])),
        "seed": int(rng.integers(2**31)),
    }


def build_matrix(case: dict) -> np.ndarray:
    rng = np.random.default_rng(case["seed"])
    shape = (case["n"], case["m"])
    if case["kind"] == "offset":
        cost = 1e6 + rng.uniform(0, 1e-7, shape)
    elif case["kind"] == "near-tie":
        cost = rng.integers(0, 10, shape) + 1e-8 * rng.random(shape)
    elif case["kind"] == "wide":  # integers float64 cannot hold: exact on every path, or refused
        signed = case["dtype"] == "int64"
        low = int(rng.choice([2**53 - 8, 2**62, -(2**63)] if signed else [2**53, 2**63, 2**64 - 2**20]))
        spread = int(rng.choice([8, 1000, 2**20]))
        cost = (np.array(low, dtype=object) + rng.integers(0, spread, shape).astype(object)).astype(case["dtype"])
    else:
        cost = generate(case["n"], case["m"], range_factor=case["range"], seed=case["seed"], kind=case["kind"],
                        dtype=None if case["kind"] != "uniform" else "int64")
    if case["kind"] == "uniform" and case["dtype"].startswith("int") and case["range"] >= 1 and case["seed"] % 7 == 0:
        cost = cost + (2**31 - 2 - cost.max()) * (case["dtype"] == "int64")  # values near int32 max
    if case["forbidden"] > 0:
        cost = cost.astype(np.float64)
        mask = np.random.default_rng(case["seed"] + 1).random(cost.shape) < case["forbidden"]
        cost[mask] = -np.inf if case["maximize"] else np.inf
    if case["dtype"] == "float32" and cost.dtype == np.float64:
        # float32 costs, as the user has them: solving float64 data with dtype="float32" rounds
        # it (the documented price of halving the matrix), and scipy would see other numbers
        cost = cost.astype(np.float32)
    return cost


def working_dtype(case: dict, cost: np.ndarray) -> str | None:
    if case["kind"] == "wide":
        return None  # lapcli chooses: int64 after an exact reduction
    if cost.dtype.kind == "f" and case["dtype"].startswith("int"):
        return None  # forbidden entries made it float: let lapcli choose
    return case["dtype"]


def routed(case: dict, cost: np.ndarray, out: Path | None = None):
    """The cost as the case's route delivers it to lapcli: as is, as a CuPy view 4–8 bytes past
    a 16-byte boundary, or written to CSV and read back by lapcli's reader."""
    route = case.get("route", "host")
    if route == "unaligned":
        try:
            import cupy
        except ImportError:
            return cost
        flat = cupy.empty(cost.size + 2, dtype=cost.dtype)
        view = flat[1:cost.size + 1].reshape(cost.shape)
        view[...] = cupy.asarray(cost)
        return view
    if route == "csv" and np.isfinite(cost).all() and cost.size:
        import io as _io

        from lapcli.io.text import read_text

        buffer = _io.BytesIO()
        np.savetxt(buffer, cost, delimiter=",", fmt="%d" if cost.dtype.kind in "iu" else "%.17g")
        return read_text(buffer.getvalue(), "fuzz.csv", header=False)  # as `lap solve --no-header`
    return cost


def exact_reference(cost: np.ndarray, maximize: bool):
    """scipy's answer, exact also for integers float64 cannot hold: solved on their exact reduction
    (lapcli.float64_exact.reduced_for_float64, the same optimal pairs); none when even that is too wide."""
    from lapcli.float64_exact import float64_exact, reduced_for_float64

    if float64_exact(cost):
        return scipy_lsa(cost, maximize=maximize)
    reduced = reduced_for_float64(cost, maximize)
    if reduced is None:
        raise ValueError("no exact float64 reference for these integers")  # counted as an error, not a pass
    return scipy_lsa(reduced)


def check(case: dict, cost: np.ndarray, solver: str = "cuda") -> tuple[str, str]:
    """('ok' | 'mismatch' | 'error' | 'hang' | 'uncertified', detail)."""
    try:
        ref_rows, ref_cols = exact_reference(cost, case["maximize"])
        expected = cost[ref_rows, ref_cols]
        expected = int(expected.astype(object).sum()) if cost.dtype.kind in "iu" else math.fsum(expected.tolist())
    except ValueError as error:
        if "infeasible" not in str(error):
            raise
        expected = "infeasible"
    try:
        solution = lapcli.solve(routed(case, cost), solver=solver, maximize=case["maximize"],
                                dtype=working_dtype(case, cost), timeout=60)
    except lapcli.InfeasibleError:
        return ("ok", "") if expected == "infeasible" else ("mismatch", f"{solver} says infeasible, scipy {expected}")
    except lapcli.SolverError as error:
        return ("hang", str(error)) if "time limit" in str(error) else ("error", str(error))
    except Exception as error:  # noqa: BLE001 - everything else is a finding
        return "error", f"{type(error).__name__}: {error}"
    if expected == "infeasible":
        return "mismatch", f"scipy says infeasible, {solver} found {solution.objective}"
    rows, cols = np.asarray(solution.row_ind), np.asarray(solution.col_ind)
    if len(rows) != min(cost.shape) or np.unique(cols).size != cols.size or np.any(np.diff(rows) <= 0):
        return "mismatch", "not a valid assignment"
    if cost.dtype.kind in "iu":
        ok = solution.objective == expected
    else:
        ok = abs(solution.objective - expected) <= objective_tolerance(cost)
    if not ok:
        return "mismatch", f"{solver} {solution.objective} scipy {expected}"
    if solver != "scipy" and not solution.report.certified:
        return "uncertified", f"{solver} returned no certificate"
    return "ok", ""


def check_batch(rng: np.random.Generator, solver: str) -> tuple[dict, np.ndarray, list[str]]:
    """A stack of B problems of one case's kind and shape through solve_batch (``solver`` is the
    batch engine), or half the time a ragged list of B problems of shapes up to the case's, on the
    GPU; each objective against scipy's and the certificate. Returns (case, stack or list,
    verdict per problem)."""
    case = draw_case(rng, 64)
    case["batch"] = int(rng.integers(1, 60))
    case["route"] = "host"
    case["ragged"] = bool(rng.random() < 0.5)
    if case["ragged"]:
        import cupy

        shapes = [(int(rng.integers(1, case["n"] + 1)), int(rng.integers(1, case["m"] + 1))) for _ in range(case["batch"])]
        if case["kind"] == "sanity":  # its optimum is the identity: square members
            shapes = [(r, r) for r, _ in shapes]
        stack = [build_matrix(dict(case, n=r, m=c, seed=case["seed"] + b)) for b, (r, c) in enumerate(shapes)]
        costs = [cupy.asarray(cost) for cost in stack]
    else:
        stack = np.stack([build_matrix(dict(case, seed=case["seed"] + b)) for b in range(case["batch"])])
        costs = stack
    expected = []
    for cost in stack:
        try:
            if cost.size == 0:
                expected.append(0)
                continue
            r, c = exact_reference(cost, case["maximize"])
            pairs = cost[r, c]  # summed exactly, as the single-problem check and lapcli do: NumPy's
            # sum of 47 costs of 1e6 + U(0, 1e-7) errs by more than the tolerance (2.2e-8 > 2.1e-8)
            expected.append(int(pairs.astype(object).sum()) if cost.dtype.kind in "biu" else math.fsum(pairs.tolist()))
        except ValueError:
            expected.append(None)
    try:
        solution = lapcli.solve_batch(costs, solver=solver, maximize=case["maximize"])
    except lapcli.InfeasibleError as error:
        listed = str(error).split(" of ")[0]
        named = {int(x) for x in re.findall(r"\d+", listed)}
        truth = {b for b, e in enumerate(expected) if e is None}
        agree = named == truth or ("…" in listed and named <= truth)  # at most 20 are listed
        return case, stack, ["ok" if agree else "mismatch"] * len(stack)
    except lapcli.LapInputError as error:  # integers too wide to pad a ragged batch exactly: refused, as documented
        verdict = "ok" if case["ragged"] and "too wide" in str(error) else "error"
        return dict(case, detail=str(error)), stack, [verdict] * len(stack)
    except Exception as error:  # noqa: BLE001
        return dict(case, detail=f"{type(error).__name__}: {error}"), stack, ["error"] * len(stack)
    from lapcli.engines import registry

    needs_certificate = registry.get(solver).capabilities.duals
    verdicts = []
    for b, cost in enumerate(stack):
        if expected[b] is None:
            verdicts.append("mismatch")
            continue
        tolerance = objective_tolerance(cost) + (1e-5 * abs(expected[b]) if cost.dtype == np.float32 else 0)
        good = abs(float(solution.objectives[b]) - float(expected[b])) <= tolerance
        certified = solution.report.certified or not needs_certificate
        verdicts.append("ok" if good and certified else ("mismatch" if not good else "uncertified"))
    return case, stack, verdicts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="fuzz-out")
    parser.add_argument("--seconds", type=float, default=420)
    parser.add_argument("--max-solves", type=int, default=100_000)
    parser.add_argument("--max-n", type=int, default=2048)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--replay", help="re-run one saved case (.npz)")
    parser.add_argument("--solver", default="cuda", help="solver under test (numpy: exercise the checker on a CPU)")
    parser.add_argument("--batch-solver", default=None, help="batch engine to fuzz too, one stack in ten cases "
                        "(cuda-batch on a GPU)")
    parser.add_argument("--sap-one-block-up-to", type=int, default=None,
                        help="cuda-sap's searches run in one block up to this many columns, in a thread-block "
                             "cluster above (default 2048; 0: every cuda-sap solve through kernels/sap.cu)")
    parser.add_argument("--sap-scaled-auction-from", type=int, default=None,
                        help="cuda-sap's squares of this many columns or more start from the epsilon-scaling "
                             "auction in the one-block range too (0: every size the auction takes)")
    args = parser.parse_args()
    from lapcli.engines.cuda import sap as cuda_sap

    if args.sap_one_block_up_to is not None:
        cuda_sap.ONE_BLOCK_UP_TO = args.sap_one_block_up_to
    if args.sap_scaled_auction_from is not None:
        cuda_sap.SCALED_AUCTION_FROM_FLOATS = cuda_sap.SCALED_AUCTION_FROM_INTEGERS = args.sap_scaled_auction_from
    if args.replay:
        saved = np.load(args.replay, allow_pickle=False)
        case = json.loads(str(saved["case"]))
        print(case, check(case, saved["cost"], args.solver))
        return
    seed = args.seed if args.seed is not None else int(np.random.SeedSequence().entropy % 2**32)
    rng = np.random.default_rng(seed)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    counts = {"solves": 0, "ok": 0, "mismatch": 0, "error": 0, "hang": 0, "uncertified": 0}
    lapcli.solve(np.eye(2), solver=args.solver)  # compile outside the clock of the first case
    start = time.perf_counter()
    largest = 0
    while time.perf_counter() - start < args.seconds and counts["solves"] < args.max_solves:
        if args.batch_solver and rng.random() < 0.1:
            case, stack, verdicts = check_batch(rng, args.batch_solver)
            for verdict in verdicts:
                counts["solves"] += 1
                counts[verdict] += 1
            counts["batches"] = counts.get("batches", 0) + 1
            counts["batch_members"] = counts.get("batch_members", 0) + len(verdicts)  # of the solves
            if any(v != "ok" for v in verdicts):
                path = out / f"batch-{counts['solves']}.npz"
                members = {f"cost_{b}": m for b, m in enumerate(stack)} if case.get("ragged") else {"cost": stack}
                np.savez_compressed(path, case=json.dumps(case), **members)
                bad = [b for b, v in enumerate(verdicts) if v != "ok"]
                print(f"batch {sorted(set(verdicts))}: {case} problems {bad[:10]} -> {path}", flush=True)
            continue
        case = draw_case(rng, args.max_n)
        cost = build_matrix(case)
        verdict, detail = check(case, cost, args.solver)
        counts["solves"] += 1
        counts[verdict] += 1
        largest = max(largest, case["n"], case["m"])
        if verdict != "ok":
            path = out / f"case-{counts['solves']}.npz"
            np.savez_compressed(path, cost=cost, case=json.dumps(case))
            print(f"{verdict}: {case} {detail} -> {path}", flush=True)
        if counts["solves"] % 500 == 0:
            print(f"{counts} after {time.perf_counter() - start:.0f} s", flush=True)
    elapsed = time.perf_counter() - start
    summary = dict(counts, solver=args.solver, seconds=round(elapsed, 1), seed=seed, max_n=args.max_n,
                   largest_side=largest)
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print("fuzz:", json.dumps(summary))
    print(f"{counts['ok']} passed, {counts['solves'] - counts['ok']} failed")


if __name__ == "__main__":
    main()
