"""Compile the CUDA source with the local nvcc exactly as NVRTC will at run time, so a syntax or
type error fails CI on a machine without a GPU. Also reads ptxas's spill report."""

import re
import shutil
import subprocess

import pytest

from lapcli.solvers import cuda_solver

NVCC = shutil.which("nvcc")


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
def test_kernel_compiles_for_sm90_with_runtime_defines(tmp_path):
    source = tmp_path / "hungarian_all.cu"
    instantiations = "\n".join(
        f"template __global__ void {cuda_solver.kernel_name(d)}"
        f"({signature(d)});"
        for d in cuda_solver.KERNEL_TYPES
    )
    source.write_text(cuda_solver.kernel_source() + "\n" + instantiations + "\n")
    result = subprocess.run(
        [NVCC, "-arch=sm_90", "-cubin", "-std=c++17", f"-DLAP_BLOCK={cuda_solver.BLOCK_SIZE}",
         "-Xptxas", "-v", "-o", str(tmp_path / "k.cubin"), str(source)],
        capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("Compiling entry function") == len(cuda_solver.KERNEL_TYPES)
    # the integer kernels (the common case) must not spill to local memory
    for entry in re.split(r"Compiling entry function", result.stderr)[1:]:
        if "IixE" in entry or "IxxE" in entry:
            assert "0 bytes spill stores" in entry, entry


def signature(dtype):
    cost, dual, _ = cuda_solver.KERNEL_TYPES[dtype]
    return (f"const {cost}*, int, {dual}, {dual}*, {dual}*, {dual}*, unsigned int*, long long, int*, int*, int*, "
            "int*, int*, int*, int*, int*, unsigned long long*, int*, int*, unsigned long long, long long")
