"""Compile the CUDA source with the local nvcc exactly as NVRTC will at run time, so a syntax or
type error fails CI on a machine without a GPU. Also reads ptxas's spill report."""

import re
import shutil
import subprocess

import pytest

import lapcli
from lapcli.engines import cuda_hungarian as cuda_solver

NVCC = shutil.which("nvcc")


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
def test_kernel_compiles_for_sm90_with_runtime_defines(tmp_path):
    source = tmp_path / "hungarian_all.cu"
    instantiations = "\n".join(
        f"template __global__ void {cuda_solver.kernel_name(function, d)}({signature(function, d)});"
        for d in cuda_solver.KERNEL_TYPES
        for function in ("hungarian", "row_min_slack") + cuda_solver.STEPWISE_KERNELS
    )
    source.write_text(cuda_solver.kernel_source() + "\n" + instantiations + "\n")
    result = subprocess.run(
        [NVCC, "-arch=sm_90", "-cubin", "-std=c++17", *cuda_solver.kernel_defines(),
         "-Xptxas", "-v", "-o", str(tmp_path / "k.cubin"), str(source)],
        capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stderr
    kernels_per_type = 2 + len(cuda_solver.STEPWISE_KERNELS)
    assert result.stderr.count("Compiling entry function") == kernels_per_type * len(cuda_solver.KERNEL_TYPES)
    # the cooperative kernels must not spill to local memory
    for entry in re.split(r"Compiling entry function", result.stderr)[1:]:
        if entry.split("'")[1].startswith("_Z9hungarian"):
            assert "0 bytes spill stores" in entry, entry


def signature(function, dtype):
    cost, dual, _, _ = cuda_solver.KERNEL_TYPES[dtype]
    state = f"const State<{cost}, {dual}>*"
    if function == "row_min_slack":
        return f"const {cost}*, const {dual}*, const {dual}*, int, {dual}*"
    return f"{state}, int" if function in cuda_solver.EPOCH_KERNELS else state


def test_state_struct_layout_matches_the_kernel():
    # the pointers in order, then segment_capacity, eps, k, column_bits, time_limit_ns, max_rounds
    source = cuda_solver.kernel_source()
    body = source[source.index("struct State {"):source.index("};", source.index("struct State {"))]
    pointer_fields = [line.split("*")[1].strip(" ;").split(";")[0] for line in body.splitlines() if "*" in line.split("//")[0]]
    assert tuple(pointer_fields) == cuda_solver.STATE_POINTERS
    declarations = [line.split("//")[0].strip() for line in body.splitlines()[1:]]
    scalar_fields = [d.split()[-1].rstrip(";") for d in declarations if d and "*" not in d]
    assert tuple(scalar_fields) == cuda_solver.STATE_SCALARS


def test_kernel_takes_slots_and_statuses_from_the_launcher_only():
    """One source: the kernel defines none of the shared constants itself, and uses every one."""
    source = cuda_solver.kernel_source()
    for name in (*cuda_solver.SLOTS, *(define for define, _ in cuda_solver.STATUSES.values())):
        assert f"#define {name}" not in source, f"{name} is defined in the kernel too"
        assert name in source, f"{name} is not used by the kernel"


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
def test_kernel_refuses_to_compile_without_the_launchers_defines(tmp_path):
    source = tmp_path / "bare.cu"
    source.write_text(cuda_solver.kernel_source())
    result = subprocess.run([NVCC, "-arch=sm_90", "-cubin", "-std=c++17", "-o", str(tmp_path / "k.cubin"),
                             str(source)], capture_output=True, text=True)
    assert result.returncode != 0 and "kernel_defines" in result.stderr


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
def test_batch_finish_kernel_compiles_for_every_dtype(tmp_path):
    from importlib import resources

    from lapcli.engines import cuda_batch

    source = tmp_path / "finish.cu"
    body = resources.files("lapcli").joinpath("kernels/batch_finish.cu").read_text()
    lines = []
    for cost, dual, _ in cuda_batch.KERNEL_TYPES.values():
        lines.append(f"template __global__ void batch_finish<{cost}, {dual}>(const {cost}*, int, int, int, const int*, "
                     f"const {dual}*, const {dual}*, const int*, const double*, int, int, int, long long*, double*, "
                     "long long*);")
    source.write_text(body + "\n" + "\n".join(lines) + "\n")
    result = subprocess.run([NVCC, "-arch=sm_90", "-cubin", "-std=c++17", "-Xptxas", "-v", "-o",
                             str(tmp_path / "f.cubin"), str(source)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("0 bytes spill stores") == len(cuda_batch.KERNEL_TYPES)


def test_zero_packing_widens_the_column_field_with_n():
    assert [cuda_solver.column_bits(n) for n in (1, 2, 3, 65536, 65537, 131072)] == [1, 1, 2, 16, 17, 17]
    cuda_solver.check_zero_packing(131072, 132)  # 993 local rows: 10 + 17 bits
    cuda_solver.check_zero_packing(65536, 1)  # 16 + 16
    with pytest.raises(lapcli.SolverError, match="cannot index n = 131072 on 2 blocks"):
        cuda_solver.check_zero_packing(131072, 2)  # 65,536 local rows need 16 bits, 17 are taken
