"""Time the same workload on 1 Dask worker and on N: does scale-out pay?

The workload (default: 2,000 problems of 512 x 512 float32, U[0, 1), split in 16 stacks of 125) is
written once as .npy files; each file is one task of ``lapcli.scale.solve_many``, read and solved by
``solve_batch`` on a worker. Timed: ``solve_many`` from submit to the last result (reading included,
cluster start and the first kernel compile on each worker not: every worker solves one small stack
first). On GPUs the clusters are dask-cuda ``LocalCUDACluster``s (1 worker: GPU 0 only; N: one
worker per visible GPU); without dask-cuda or GPUs, ``LocalCluster``s of CPU processes. Also timed:
the same files solved in this process, one after the other (no Dask). Every run's objectives must
agree with the first run's (a failed input fails the check).

Each cluster runs the workload --repeat times; the medians give the ratio.

Usage: python3 benchmarks/scale_check.py [--batch 2000] [--n 512] [--inputs 16] [--workers N] [--repeat 3] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import lapcli  # noqa: E402
from lapcli.scale import Solved, solve_inputs, visible_gpus  # noqa: E402
from lapcli.io.read import read_matrix  # noqa: E402


def write_workload(directory: str, batch: int, n: int, inputs: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    paths = []
    for index, share in enumerate(np.array_split(np.arange(batch), inputs)):
        path = os.path.join(directory, f"part{index:03d}.npy")
        np.save(path, rng.random((len(share), n, n), dtype=np.float32))
        paths.append(path)
    return paths


def warm_up():
    """On a worker: import, compile and run the batch engine once, outside the timing."""
    lapcli.solve_batch(np.random.default_rng(0).random((4, 64, 64), dtype=np.float32))
    return True


def start_cluster(workers: int, gpus: int, threads: int = 1):
    if gpus:
        from dask_cuda import LocalCUDACluster

        return LocalCUDACluster(CUDA_VISIBLE_DEVICES=list(range(workers)), threads_per_worker=threads)
    from distributed import LocalCluster

    return LocalCluster(n_workers=workers, processes=True, threads_per_worker=threads, dashboard_address=":0")


def timed_run(paths: list[str], workers: int, gpus: int, threads: int = 1, repeat: int = 1) -> dict:
    """Start a cluster, warm its workers, run ``solve_inputs`` over the files ``repeat`` times.
    Returns the seconds of each run, the start-up seconds, the last run's results and its per-task
    sums (read, solve, and the solve reports' h2d and kernel times), summed over all tasks."""
    from distributed import Client

    begin = time.perf_counter()
    with start_cluster(workers, gpus, threads) as cluster, Client(cluster) as client:
        client.wait_for_workers(workers)
        client.run(warm_up)
        started = time.perf_counter() - begin
        seconds = []
        for _ in range(repeat):
            start = time.perf_counter()
            results = solve_inputs(paths, client=client)
            seconds.append(time.perf_counter() - start)
    solved = [r for r in results if isinstance(r, Solved)]
    sums = {"read_ms": sum(r.read_ms for r in solved), "solve_ms": sum(r.solve_ms for r in solved),
            **{key: sum(r.solution.report.details.get(key, 0.0) for r in solved) for key in ("h2d_ms", "kernel_ms")}}
    return {"seconds": seconds, "start_s": started, "results": results, "task_sums_ms": sums}


def objectives(results: list) -> np.ndarray:
    failed = [r for r in results if not isinstance(r, Solved)]
    if failed:
        raise SystemExit(f"scale_check: {len(failed)} input(s) failed, first: {failed[0]}")
    return np.concatenate([np.asarray(r.solution.objectives, dtype=np.float64) for r in results])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=2000)
    parser.add_argument("--n", type=int, default=512)
    parser.add_argument("--inputs", type=int, default=16)
    parser.add_argument("--workers", type=int, help="N (default: the visible GPUs, else the CPU cores)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--threads-per-worker", type=int, default=1,
                        help="worker threads (2: one task reads its file while another solves)")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per cluster (the median is reported)")
    parser.add_argument("--no-in-process", action="store_true", help="skip the sequential in-process run")
    parser.add_argument("--out", help="also write the record as JSON here")
    args = parser.parse_args()

    gpus = visible_gpus()
    if gpus:
        try:
            import dask_cuda  # noqa: F401
        except ImportError:
            print("dask-cuda is not installed (pip install 'lapcli[dask-cuda]'): CPU workers instead", file=sys.stderr)
            gpus = 0
    workers = args.workers or gpus or os.cpu_count() or 1
    record = {"batch": args.batch, "n": args.n, "dtype": "float32", "inputs": args.inputs, "workers": workers,
              "gpus": gpus, "lapcli": lapcli.__version__, "python": platform.python_version(),
              "host": platform.node()}
    import dask
    import distributed

    record |= {"dask": dask.__version__, "distributed": distributed.__version__}
    with tempfile.TemporaryDirectory(prefix="scale_check_") as directory:
        paths = write_workload(directory, args.batch, args.n, args.inputs, args.seed)
        if not args.no_in_process:
            warm_up()
            start = time.perf_counter()
            reference = [lapcli.solve_batch(read_matrix(p)) for p in paths]
            record["in_process_s"] = time.perf_counter() - start
        one = timed_run(paths, 1, gpus, args.threads_per_worker, args.repeat)
        many = timed_run(paths, workers, gpus, args.threads_per_worker, args.repeat)
    base = objectives(one["results"])
    others = [("N workers", objectives(many["results"]))]
    if not args.no_in_process:
        others.append(("in-process", np.concatenate([np.asarray(r.objectives, dtype=np.float64) for r in reference])))
    for name, other in others:
        if not np.allclose(other, base, rtol=1e-5, atol=1e-3):
            raise SystemExit(f"scale_check: objectives of {name} differ from 1 worker's")
    one_s, many_s = float(np.median(one["seconds"])), float(np.median(many["seconds"]))
    record |= {"threads_per_worker": args.threads_per_worker, "repeat": args.repeat,
               "cluster_start_s_1": one["start_s"], "cluster_start_s_n": many["start_s"],
               "one_worker_runs_s": one["seconds"], "n_workers_runs_s": many["seconds"],
               "one_worker_s": one_s, "n_workers_s": many_s, "speedup": one_s / many_s,
               "task_sums_ms_1": one["task_sums_ms"], "task_sums_ms_n": many["task_sums_ms"],
               "problems_per_second_1": args.batch / one_s, "problems_per_second_n": args.batch / many_s}
    print(f"{args.batch} x {args.n}² float32 in {args.inputs} inputs ({'GPUs' if gpus else 'CPU processes'})")
    if "in_process_s" in record:
        print(f"  in process, sequential: {record['in_process_s']:.3f} s")
    for label, run, median in (("1 worker", one, one_s), (f"{workers} workers", many, many_s)):
        sums = ", ".join(f"{key[:-3]} {value:.0f}" for key, value in run["task_sums_ms"].items())
        print(f"  {label + ':':11s} median {median:.3f} s ({args.batch / median:,.0f} problems/s); runs "
              f"{' '.join(f'{s:.3f}' for s in run['seconds'])}; task sums ms: {sums}")
    print(f"  ratio 1 / {workers}: {record['speedup']:.2f}x (threads per worker {args.threads_per_worker}; cluster start "
          f"and warm-up, not timed: {one['start_s']:.1f} s / {many['start_s']:.1f} s)")
    if args.out:
        with open(args.out, "w") as handle:
            json.dump(record, handle, indent=2)


if __name__ == "__main__":
    main()
