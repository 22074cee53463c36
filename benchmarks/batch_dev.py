"""Device-side check and timing of the batch kernel's launcher, lapcli/cuda/batch_lap.py.

1. correctness: solve_stack on fresh random stacks (all dtypes, square and rectangular, n = 1,
   B = 1, B = 0, large B, every layout of LAYOUTS forced) against a scipy loop (objective), the
   kernel's NumPy twin (exact for integers) and the dual certificate;
2. timings of four cells (float32 stacks B x n x n, integers in [0, 10n) or U[0, 1)): solve_stack
   device->device (CUDA events around the call, median of REPEATS, inputs rotated over 3 stacks)
   in the chosen layout (with --layouts, every layout that holds n columns), host->host (pageable
   cupy.asarray or staging.upload, solve, copy the columns back) beside torch-linear-assignment in
   the same process.

Usage: python3 benchmarks/batch_dev.py [--quick] [--layouts] [--no-tla] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np
from scipy.optimize import linear_sum_assignment as lsa

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import cupy  # noqa: E402

from lapcli.cuda import staging  # noqa: E402
from lapcli.cuda import batch_lap as cb  # noqa: E402
from lapcli.twins import check_duals, reference_stack  # noqa: E402

REPEATS = 15


def scipy_objectives(costs):
    out = []
    for c in costs:
        r, k = lsa(c)
        out.append(c[r, k].astype(np.float64).sum())
    return np.array(out)


def objectives(costs, col_of_row):
    b, n, _ = costs.shape
    return np.take_along_axis(costs, col_of_row[:, :, None].astype(np.int64), axis=2)[..., 0].astype(np.float64).sum(1)


def check(costs_host, dtype, label, *, scipy_limit=2000, twin_limit=50, layout=None):
    costs = cupy.asarray(costs_host)
    res = cb.solve_stack(costs, layout=layout)
    col, u, v, st = (cupy.asnumpy(x) for x in (res.col_of_row, res.u, res.v, res.status))
    batch = costs_host.shape[0]
    assert col.shape == (batch, costs_host.shape[1]) and st.shape == (batch,)
    assert np.all(st == 0), f"{label}: statuses {np.unique(st)}"
    idx = np.arange(min(batch, scipy_limit))
    got = objectives(costs_host[idx], col[idx])
    ref = scipy_objectives(costs_host[idx])
    if costs_host.dtype.kind in "iu":
        assert np.array_equal(got, ref), f"{label}: objective differs from scipy"
        eps = 0
    else:
        scale = np.abs(costs_host).max() * costs_host.shape[1]
        assert np.all(np.abs(got - ref) <= 1e-9 * max(1.0, scale)), f"{label}: {np.abs(got - ref).max()}"
        eps = 1e-9 * max(1.0, scale)
    sub = idx[: min(len(idx), 400)]
    check_duals(costs_host[sub], col[sub], u[sub], v[sub], eps)
    t = idx[: min(len(idx), twin_limit if costs_host.shape[2] < 128 else 3)]
    if costs_host.shape[1] <= 256:
        tc, tu, tv, _ = reference_stack(costs_host[t])
        if costs_host.dtype.kind in "iu":
            assert np.array_equal(tc, col[t]) and np.array_equal(tu, u[t]) and np.array_equal(tv, v[t]), \
                f"{label}: differs from the NumPy twin"
    return res


def correctness(rng, quick):
    shapes = [(1, 1, 1), (3, 1, 5), (7, 2, 2), (1, 5, 9), (33, 7, 7), (20, 16, 16), (9, 16, 30), (10, 31, 32),
              (5, 32, 33), (10, 33, 64), (6, 64, 64), (4, 50, 128), (3, 100, 129), (3, 128, 256), (2, 200, 256),
              (2, 256, 256), (2, 257, 500), (2, 300, 512), (1, 511, 1024), (2, 700, 700), (1, 1024, 1024),
              (2, 1000, 2048), (1, 2048, 2048)]
    dtypes = ["int32", "int64", "float32", "float64"]
    count = 0
    for b, n, m in shapes:
        for dtype in dtypes:
            if quick and dtype in ("int64", "float64") and m > 256:
                continue
            kind = rng.integers(0, 4)
            if dtype.startswith("int"):
                high = [2, 10 * n, 10**6, 2**30][kind]
                low = -high if kind == 2 else 0
                c = rng.integers(low, high, (b, n, m)).astype(dtype)
            else:
                c = (rng.random((b, n, m)) * [1, 1e-3, 1e3, 1][kind]).astype(dtype)
                if kind == 3:
                    c = np.round(c * 8).astype(dtype)  # float ties
            check(c, dtype, f"{dtype} {b}x{n}x{m}")
            count += 1
    # empty stack, a large batch, each layout forced at its width and 5 columns narrower
    res = cb.solve_stack(cupy.empty((0, 4, 4), dtype=np.float32))
    assert res.col_of_row.shape == (0, 4) and res.kernel_ms == 0.0
    c = rng.integers(0, 160, (100_000, 16, 16)).astype(np.float32)
    check(c, "float32", "100000x16x16", scipy_limit=3000)
    c = rng.random((20_000, 8, 24)).astype(np.float32)
    check(c, "float32", "20000x8x24", scipy_limit=2000)
    for _, layout in cb.LAYOUTS:
        m = layout[0] * layout[1]
        for mm in (m, m - 5):
            c = rng.integers(0, 10 * mm, (3, max(1, mm - 3), mm)).astype(np.int32)
            check(c, "int32", f"layout {layout} {c.shape}", layout=layout)
    # timeout: must return promptly with status 2 somewhere
    c = cupy.asarray(rng.random((64, 1024, 1024)).astype(np.float32))
    t = time.perf_counter()
    res = cb.solve_stack(c, timeout=2e-4)
    st = cupy.asnumpy(res.status)
    print(f"timeout 0.2 ms on 64x1024: {time.perf_counter() - t:.3f} s, statuses {np.bincount(st).tolist()}")
    assert np.any(st == 2)
    print(f"correctness: {count} random stacks + specials OK", flush=True)


def median_ms(samples):
    return statistics.median(samples)


def time_ours(stacks, layout):
    samples, kernel = [], []
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    for r in range(REPEATS + 2):
        x = stacks[r % len(stacks)]
        start.record()
        res = cb.solve_stack(x, layout=layout)
        end.record()
        end.synchronize()
        if r >= 2:
            samples.append(cupy.cuda.get_elapsed_time(start, end))
            kernel.append(res.kernel_ms)
    return median_ms(samples), median_ms(kernel)


def time_ours_h2h(hosts, upload):
    samples = []
    for r in range(REPEATS + 2):
        h = hosts[r % len(hosts)]
        t = time.perf_counter()
        x = upload(h)
        res = cb.solve_stack(x)
        cols = res.col_of_row.get()
        if r >= 2:
            samples.append((time.perf_counter() - t) * 1e3)
    assert cols.shape == h.shape[:2]
    return median_ms(samples)


def time_upload(hosts, upload):
    samples = []
    for r in range(REPEATS + 2):
        h = hosts[r % len(hosts)]
        t = time.perf_counter()
        upload(h)
        cupy.cuda.get_current_stream().synchronize()
        if r >= 2:
            samples.append((time.perf_counter() - t) * 1e3)
    return median_ms(samples)


def time_tla(hosts):
    import torch
    from torch_linear_assignment import batch_linear_assignment as bla

    dev = [torch.as_tensor(h).cuda() for h in hosts]
    cpu = [torch.as_tensor(h) for h in hosts]
    bla(dev[0])
    torch.cuda.synchronize()
    d2d = []
    for r in range(REPEATS + 2):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        out = bla(dev[r % len(dev)])
        e.record()
        e.synchronize()
        if r >= 2:
            d2d.append(s.elapsed_time(e))
    h2h = []
    for r in range(max(5, REPEATS // 2) + 1):
        t = time.perf_counter()
        out = bla(cpu[r % len(cpu)].cuda()).cpu()
        if r >= 1:
            h2h.append((time.perf_counter() - t) * 1e3)
    del dev
    torch.cuda.empty_cache()
    return median_ms(d2d), median_ms(h2h), out.numpy()


CELLS = [(10000, 16), (2000, 64), (500, 256), (64, 1024)]


def other_layouts(n):
    """name -> layout: every layout of LAYOUTS but the chosen one that holds n columns."""
    chosen = cb.choose_layout(n)
    return {f"K{k}T{t}": (k, t) for _, (k, t) in cb.LAYOUTS if k * t >= n and (k, t) != chosen}


def timings(rng, out_dir, no_tla, layouts):
    rows = []
    for kind in ("int", "unif"):
        for batch, n in CELLS:
            if kind == "int":
                hosts = [rng.integers(0, 10 * n, (batch, n, n)).astype(np.float32) for _ in range(3)]
            else:
                hosts = [rng.random((batch, n, n), dtype=np.float32) for _ in range(3)]
            stacks = [cupy.asarray(h) for h in hosts]
            res = check(hosts[0], "float32", f"cell {kind} {batch}x{n}", scipy_limit=200 if n >= 256 else 1000)
            ref_obj = objectives(hosts[0], cupy.asnumpy(res.col_of_row))
            variants = {"default": time_ours(stacks, None)}
            for name, layout in (other_layouts(n) if layouts else {}).items():
                variants[name] = time_ours(stacks, layout)
                got = objectives(hosts[0], cupy.asnumpy(cb.solve_stack(stacks[0], layout=layout).col_of_row))
                assert np.allclose(got, ref_obj, rtol=0, atol=1e-6 * n), f"layout {name} is wrong"
            best = min(variants, key=lambda k: variants[k][0])
            h2h_page = time_ours_h2h(hosts, cupy.asarray)
            h2h_pin = time_ours_h2h(hosts, staging.upload)
            up_page = time_upload(hosts, cupy.asarray)
            up_pin = time_upload(hosts, staging.upload)
            for chunk in (1 << 20, 4 << 20):
                for threads in (4, 8):
                    print(f"  upload chunk {chunk >> 20} MiB threads {threads}: "
                          f"{time_upload(hosts, lambda h: staging.upload(h, chunk_bytes=chunk, threads=threads)):.3f} ms")
            row = {"kind": kind, "B": batch, "n": n, "variants": variants, "best": best,
                   "default": f"K{cb.choose_layout(n)[0]}T{cb.choose_layout(n)[1]}",
                   "overhead_ms": variants["default"][0] - variants["default"][1],
                   "h2h_pageable": h2h_page, "h2h_pinned": h2h_pin, "upload_pageable": up_page,
                   "upload_pinned": up_pin}
            del stacks
            if not no_tla:
                try:
                    tla_d2d, tla_h2h, tla_cols = time_tla(hosts)
                    row["tla_d2d"], row["tla_h2h"] = tla_d2d, tla_h2h
                    tla_obj = objectives(hosts[(REPEATS // 2) % 3], tla_cols)
                    mine = cb.solve_stack(cupy.asarray(hosts[(REPEATS // 2) % 3]))
                    my_obj = objectives(hosts[(REPEATS // 2) % 3], cupy.asnumpy(mine.col_of_row))
                    row["tla_obj_maxdiff"] = float(np.abs(tla_obj - my_obj).max())
                except Exception as error:  # report, keep timing the rest
                    row["tla_error"] = repr(error)
            rows.append(row)
            print(json.dumps(row), flush=True)
            cupy.get_default_memory_pool().free_all_blocks()
    with open(os.path.join(out_dir, "timings.json"), "w") as f:
        json.dump(rows, f, indent=1)
    print("\n| cells | ours d2d (kernel) | other layouts (kernel ms) | tla d2d | x | ours h2h pageable / pinned | tla h2h | x |")
    for r in rows:
        d2d, kern = r["variants"]["default"]
        tla_d, tla_h = r.get("tla_d2d", float("nan")), r.get("tla_h2h", float("nan"))
        lays = " ".join(f"{k}:{v[1]:.3g}" for k, v in r["variants"].items() if k != "default")
        h2h = min(r["h2h_pageable"], r["h2h_pinned"])
        print(f"| {r['B']}x{r['n']} {r['kind']} | {d2d:.3f} ({kern:.3f}) | {lays} | {tla_d:.3f} | {tla_d / d2d:.1f} |"
              f" {r['h2h_pageable']:.2f} / {r['h2h_pinned']:.2f} (up {r['upload_pageable']:.2f}/{r['upload_pinned']:.2f}) |"
              f" {tla_h:.2f} | {tla_h / h2h:.1f} |")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--skip-check", action="store_true")
    parser.add_argument("--no-tla", action="store_true")
    parser.add_argument("--layouts", action="store_true", help="also time every other layout that holds n columns")
    parser.add_argument("--out", default=os.environ.get("OUT", "."))
    parser.add_argument("--ncu", nargs=3, metavar=("B", "N", "KIND"), help="solve one stack twice (for ncu)")
    args = parser.parse_args()
    if args.ncu:
        batch, n, kind = int(args.ncu[0]), int(args.ncu[1]), args.ncu[2]
        rng = np.random.default_rng(0)
        h = rng.integers(0, 10 * n, (batch, n, n)).astype(np.float32) if kind == "int" else rng.random((batch, n, n), dtype=np.float32)
        x = cupy.asarray(h)
        for _ in range(2):
            print(cb.solve_stack(x).details)
        return
    seed = int(os.environ.get("SEED", np.random.SeedSequence().entropy % 2**32))
    print(f"seed {seed}; device {cupy.cuda.runtime.getDeviceProperties(0)['name']}", flush=True)
    rng = np.random.default_rng(seed)
    t = time.perf_counter()
    if not args.skip_check:
        correctness(rng, args.quick)
        print(f"correctness took {time.perf_counter() - t:.1f} s", flush=True)
    timings(rng, args.out, args.no_tla, args.layouts)


if __name__ == "__main__":
    main()
