"""Compile the CUDA source with the local nvcc exactly as NVRTC will at run time, so a syntax or
type error fails CI on a machine without a GPU. Also reads ptxas's spill report."""

import re
import shutil
import subprocess

import pytest

import lapcli
from lapcli.cuda import hungarian_abi as cuda_solver

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
def test_batch_kernel_compiles_for_every_dtype_layout_and_mode(tmp_path):
    """Every instantiation the launcher can ask for (kernel_name), with and without the fused
    certificate, compiles, and none spills more than a word or two (ptxas spills up to 16 bytes in
    a few of them; a per-thread array left in local memory would spill hundreds)."""
    from lapcli.cuda import batch_lap as cuda_batch

    source = tmp_path / "batch.cu"
    lines = [cuda_batch.kernel_source()]
    for dtype, (cost, dual, _) in cuda_batch.KERNEL_TYPES.items():
        for k, threads in [layout for _, layout in cuda_batch.LAYOUTS] + list(cuda_batch.MEASURED_LAYOUTS):
            for certify in (False, True):
                name = cuda_batch.kernel_name(dtype, k, threads, certify)
                lines.append(f"template __global__ void {name}(const {cost}*, int, int, int, int*, {dual}*, {dual}*, "
                             f"int*, unsigned long long*, unsigned long long, const {dual}*, const int*, const double*, int, int, int, long long*, "
                             "double*, long long*, unsigned long long*);")
    source.write_text("\n".join(lines) + "\n")
    result = subprocess.run([NVCC, "-arch=sm_90", "-cubin", "-std=c++17", "-Xptxas", "-v", "-o",
                             str(tmp_path / "b.cubin"), str(source)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    entries = result.stderr.split("Compiling entry function")[1:]
    assert len(entries) == 2 * len(cuda_batch.KERNEL_TYPES) * (len(cuda_batch.LAYOUTS) + len(cuda_batch.MEASURED_LAYOUTS))
    certifying = [e for e in entries if "Lb1E" in e.split("'")[1]]
    assert len(certifying) == len(entries) // 2
    spills = [int(re.search(r"(\d+) bytes spill stores", e).group(1)) for e in entries]
    assert max(spills) <= 16, [e.split("'")[1] for e, s in zip(entries, spills) if s > 16]
    # The certificate is inlined into the solve's kernel, so its registers are the launch's: with
    # 8-16 rows in flight it needed 106-184 per thread, and batches that fit the GPU at once ran in
    # two waves (docs/batch-notes.md). Each certified launch stays within 80 (the solve alone: 40-72).
    registers = {e.split("'")[1]: int(re.search(r"Used (\d+) registers", e).group(1)) for e in certifying}
    assert max(registers.values()) <= 80, {name: r for name, r in registers.items() if r > 80}


def test_zero_packing_widens_the_column_field_with_n():
    assert [cuda_solver.column_bits(n) for n in (1, 2, 3, 65536, 65537, 131072)] == [1, 1, 2, 16, 17, 17]
    cuda_solver.check_zero_packing(131072, 132)  # 993 local rows: 10 + 17 bits
    cuda_solver.check_zero_packing(65536, 1)  # 16 + 16
    with pytest.raises(lapcli.SolverError, match="cannot index n = 131072 on 2 blocks"):
        cuda_solver.check_zero_packing(131072, 2)  # 65,536 local rows need 16 bits, 17 are taken


def test_the_grid_is_one_block_per_sm_above_the_small_sizes_and_half_of_them_below():
    def grid(n, sms=132):
        return cuda_solver.plan_from_occupancy(n, 4, 512, 1, sms, 227 * 1024, lambda shared: 1).blocks

    limit = cuda_solver.HALF_GRID_UP_TO
    assert [grid(n) for n in (limit + 1, 4096, 8192)] == [132, 132, 132]
    assert [grid(n) for n in (1024, limit)] == [66, 66]
    assert grid(40) == 40 and grid(100) == 66 and grid(1000, sms=1) == 1  # never more blocks than rows; at least one


def test_the_device_state_lies_in_one_allocation_grouped_by_fill():
    """DeviceState fills its buffers with two memsets over one allocation: the zero-filled ones
    first, then the -1-filled ones (bytes 0xFF, so only signed integers may be among them), then
    the rest; each at a 256-byte aligned offset, none overlapping."""
    import numpy as np

    from lapcli.cuda import hungarian_abi as cuda_solver

    for n, dtype in ((1000, "int32"), (37, "float64"), (4096, "float32")):
        plan = cuda_solver.plan_from_occupancy(n, 4, 512, 1, 132, 227 * 1024, lambda shared: 1)
        layout = cuda_solver.buffer_layout(n, plan, dtype)
        arena = cuda_solver.plan_arena(layout)
        assert set(arena.offsets) == set(layout) == set(cuda_solver.STATE_POINTERS) - {"cost"}
        spans = sorted((arena.offsets[name], arena.offsets[name] + count * np.dtype(kind).itemsize, fill)
                       for name, (kind, count, fill) in layout.items())
        assert all(begin % 256 == 0 for begin, _, _ in spans)
        assert all(end <= next_begin for (_, end, _), (next_begin, _, _) in zip(spans, spans[1:]))
        assert spans[-1][1] <= arena.total
        for begin, end, fill in spans:
            if fill == 0:
                assert end <= arena.zeros_end
            elif fill == -1:
                assert arena.zeros_end <= begin and end <= arena.minus_ones_end
            else:
                assert begin >= arena.minus_ones_end
        assert arena.zeros_end < arena.minus_ones_end  # both groups exist
    with pytest.raises(ValueError, match="not a signed integer"):
        cuda_solver.plan_arena({"x": (np.dtype(np.float64), 8, -1)})


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
def test_the_packed_argmin_is_compiled_for_integer_duals_only(tmp_path):
    """BATCH_PACKED adds S2's packed-word argmin (one 32-bit redux.sync per level) beside the 64-bit
    one for integer duals, and leaves float duals' kernels as they were: the GPU test that compares
    the two builds bit for bit would also pass if the packed branch were never compiled in."""
    from lapcli.cuda import batch_lap as cuda_batch

    def redux_count(dtype: str, packed: int) -> int:
        cost, dual, _ = cuda_batch.KERNEL_TYPES[dtype]
        name = cuda_batch.kernel_name(dtype, 4, 256)
        source = tmp_path / f"{dtype}{packed}.cu"
        source.write_text(cuda_batch.kernel_source() + f"\ntemplate __global__ void {name}(const {cost}*, int, int, int, "
                          f"int*, {dual}*, {dual}*, int*, unsigned long long*, unsigned long long, const {dual}*, const int*, "
                          "const double*, int, int, int, long long*, double*, long long*, unsigned long long*);\n")
        ptx = tmp_path / f"{dtype}{packed}.ptx"
        result = subprocess.run([NVCC, "-arch=sm_90", "-ptx", "-std=c++17", f"-DBATCH_PACKED={packed}", "-o", str(ptx),
                                 str(source)], capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        return ptx.read_text().count("redux.sync.min.u32")

    assert redux_count("int32", 1) > redux_count("int32", 0) > 0
    assert redux_count("float32", 1) == redux_count("float32", 0) > 0
