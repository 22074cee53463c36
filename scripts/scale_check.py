"""Time the same workload on 1 Dask worker and on N (issue #15): does scale-out pay?

The workload (default: 2,000 problems of 512 x 512 float32, U[0, 1), split in 16 stacks of 125) is
written once as .npy files; each file is one task of ``lapcli.scale.solve_many``, read and solved by
``solve_batch`` on a worker. Timed: ``solve_many`` from submit to the last result (reading included,
cluster start and the first kernel compile on each worker not: every worker solves one small stack
first). On GPUs the clusters are dask-cuda ``LocalCUDACluster``s (1 worker: GPU 0 only; N: one
worker per visible GPU); without dask-cuda or GPUs, ``LocalCluster``s of CPU processes. Also timed:
the same files solved in this process, one after the other (no Dask). Every run's objectives must
agree with the first run's (a failed input fails the check).

Usage: python3 scripts/scale_check.py [--batch 2000] [--n 512] [--inputs 16] [--workers N] [--out FILE.json]
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
from lapcli.scale import Failed, solve_many, visible_gpus  # noqa: E402
from lapcli.io import read_matrix  # noqa: E402


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


def timed_run(paths: list[str], workers: int, gpus: int, threads: int = 1) -> tuple[float, list, float]:
    """(seconds of solve_many, results, seconds to start the cluster and warm its workers)."""
    from distributed import Client

    begin = time.perf_counter()
    with start_cluster(workers, gpus, threads) as cluster, Client(cluster) as client:
        client.wait_for_workers(workers)
        client.run(warm_up)
        start = time.perf_counter()
        results = solve_many(paths, client=client)
        seconds = time.perf_counter() - start
    return seconds, results, start - begin


def objectives(results: list) -> np.ndarray:
    failed = [r for r in results if isinstance(r, Failed)]
    if failed:
        raise SystemExit(f"scale_check: {len(failed)} input(s) failed, first: {failed[0]}")
    return np.concatenate([np.asarray(r.objectives, dtype=np.float64) for r in results])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=2000)
    parser.add_argument("--n", type=int, default=512)
    parser.add_argument("--inputs", type=int, default=16)
    parser.add_argument("--workers", type=int, help="N (default: the visible GPUs, else the CPU cores)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--threads-per-worker", type=int, default=1,
                        help="worker threads (2: one task reads its file while another solves)")
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
        one_s, one, start_1 = timed_run(paths, 1, gpus, args.threads_per_worker)
        many_s, many, start_n = timed_run(paths, workers, gpus, args.threads_per_worker)
    base = objectives(one)
    for name, other in (("N workers", objectives(many)),) + (() if args.no_in_process else (("in-process", objectives(reference)),)):
        if not np.allclose(other, base, rtol=1e-5, atol=1e-3):
            raise SystemExit(f"scale_check: objectives of {name} differ from 1 worker's")
    record |= {"threads_per_worker": args.threads_per_worker, "cluster_start_s_1": start_1, "cluster_start_s_n": start_n,
               "one_worker_s": one_s, "n_workers_s": many_s, "speedup": one_s / many_s,
               "problems_per_second_1": args.batch / one_s, "problems_per_second_n": args.batch / many_s}
    print(f"{args.batch} x {args.n}² float32 in {args.inputs} inputs ({'GPUs' if gpus else 'CPU processes'})")
    if "in_process_s" in record:
        print(f"  in process, sequential: {record['in_process_s']:.3f} s")
    print(f"  1 worker:   {one_s:.3f} s ({record['problems_per_second_1']:,.0f} problems/s)")
    print(f"  {workers} workers: {many_s:.3f} s ({record['problems_per_second_n']:,.0f} problems/s)")
    print(f"  ratio 1 / {workers}: {record['speedup']:.2f}x (threads per worker {args.threads_per_worker}; cluster start "
          f"and warm-up, not timed: {start_1:.1f} s / {start_n:.1f} s)")
    if args.out:
        with open(args.out, "w") as handle:
            json.dump(record, handle, indent=2)


if __name__ == "__main__":
    main()
