"""Compile lapcli's NVRTC programs for one GPU architecture into the kernel cache, on a machine
without a GPU: the point programs (every metric, the dimensions asked, the searches and the
auction), the classical kernel, the dense auction and the certificate's read pass of every dtype,
the cluster searches, the ragged pack and the batch kernel's in-place ragged launches (float32 and
int32, every layout). The batch kernel's other instantiations are left to the device.

NVRTC needs no device, and lapcli.cuda.compiler keys each cubin by source, options and kernel
names only, so a GPU machine given this folder as LAPCLI_CACHE_DIR loads the cubins instead of
compiling them (a lent GPU's time is short; a container image can ship them). Needs the
`cuda-bindings` package and NVRTC of the device driver's CUDA version (`nvidia-cuda-nvrtc==13.0.*`
for a CUDA 13.0 driver): the key does not hold NVRTC's version, and a cubin the driver refuses is
compiled again on the device.

    LAPCLI_CACHE_DIR=kernel-cache python benchmarks/warm_kernel_cache.py --arch 90 --dims 1,2,3,16
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ThreadPoolExecutor

DTYPES = ("int32", "int64", "float32", "float64")


def programs(dims) -> list:
    """Every lapcli.cuda.runtime.Program this script compiles, for point sets of ``dims``."""
    from lapcli import certificate
    from lapcli.cuda import auction, batch_lap, hungarian, points, ragged_pack, sap_cluster
    from lapcli.engines.cuda.batch_members import IN_PLACE_DTYPES

    found = [points.program(metric, dim, method)
             for method in points.METHODS for metric in points.METRIC_CODES for dim in dims]
    for dtype in DTYPES:
        found += [hungarian.program(dtype), auction.dense_program(dtype)]
        found += [certificate.row_slacks_program(dtype, exact) for exact in (True, False)]
    found += [batch_lap.program(dtype, k, threads, True, None, True)
              for dtype in IN_PLACE_DTYPES for _, (k, threads) in batch_lap.LAYOUTS]
    return [*found, sap_cluster.program(), ragged_pack.program()]


def compile_one(program, arch: tuple[int, int]) -> tuple[str, float]:
    """(label, seconds): the program's cubin in the cache, compiled unless it is there."""
    from lapcli.cuda import compiler

    began = time.perf_counter()
    compiler.compiled_cubin(program.label, program.source, compiler.compile_options(program.defines, arch),
                            {name: expression for name, expression, _ in program.kernels})
    return program.label, time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--arch", default="90", help="compute capability without the dot (H100, H200: 90)")
    parser.add_argument("--dims", default="1,2,3,16", help="point dimensions, comma-separated")
    parser.add_argument("--jobs", type=int, default=2, help="programs compiled at once")
    args = parser.parse_args()
    arch = (int(args.arch[:-1]), int(args.arch[-1]))
    from lapcli.cuda.compiler import cache_dir

    began = time.perf_counter()
    chosen = programs(tuple(int(d) for d in args.dims.split(",")))
    with ThreadPoolExecutor(args.jobs) as pool:
        for label, seconds in pool.map(lambda program: compile_one(program, arch), chosen):
            print(f"{label}: {seconds:.1f} s", flush=True)
    print(f"{len(chosen)} programs for sm_{args.arch} in {cache_dir()} ({time.perf_counter() - began:.0f} s)")


if __name__ == "__main__":
    main()
