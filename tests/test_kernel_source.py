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


def test_the_auction_takes_its_numbers_from_the_launcher_only():
    """kernels/auction.cu and its tiled release pass (auction_release.cu) define none of the numbers
    their launchers' kernel_defines pass (the auction's twin reads the same ones), and use every one."""
    from lapcli.cuda import auction, auction_release
    from lapcli.cuda.sap_cluster import kernel_text

    for source, defines, wanted in ((kernel_text("auction.cu"), auction.kernel_defines(), "AUCTION_DEFERRED"),
                                    (kernel_text(auction_release.FILE), auction_release.kernel_defines(),
                                     "AUCTION_RELEASE_THREADS")):
        # the code without its comments and its guard (#if !defined(...) ... #error)
        code = "\n".join(line.split("//")[0] for line in source.splitlines() if not line.startswith(("#if", "#error")))
        names = [define[2:].split("=")[0] for define in defines]
        assert wanted in names
        for name in names:
            assert f"#define {name}" not in source, f"{name} is defined in the kernel too"
            assert re.search(rf"\b{name}\b", code), f"{name} is not used by the kernel"


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
def test_kernel_refuses_to_compile_without_the_launchers_defines(tmp_path):
    source = tmp_path / "bare.cu"
    source.write_text(cuda_solver.kernel_source())
    result = subprocess.run([NVCC, "-arch=sm_90", "-cubin", "-std=c++17", "-o", str(tmp_path / "k.cubin"),
                             str(source)], capture_output=True, text=True)
    assert result.returncode != 0 and "kernel_defines" in result.stderr


def batch_parameters(source: str) -> list[tuple[str, str]]:
    """(type, name) of each parameter of the batch_lap kernel, read from its source text."""
    code = re.sub(r"//[^\n]*", "", source)
    declaration = re.search(r"__global__[^;{]*?\bbatch_lap\((.*?)\)\s*\{", code, re.S)
    assert declaration, "no __global__ batch_lap(...) { in kernels/batch_lap.cu"
    parameters = []
    for parameter in declaration.group(1).split(","):
        words = parameter.replace("__restrict__", " ").replace("*", " * ").split()
        parameters.append((" ".join(words[:-1]).replace(" *", "*"), words[-1]))
    return parameters


def batch_instantiation(dtype: str, k: int, threads: int, certify: bool, ragged: bool = False) -> str:
    """The explicit instantiation nvcc needs for one kernel the launcher names (kernel_name), its
    parameter types read from the source with T and D replaced by the dtype's."""
    from lapcli.cuda import batch_lap as cuda_batch

    cost, dual, _ = cuda_batch.KERNEL_TYPES[dtype]
    types = [re.sub(r"\bD\b", dual, re.sub(r"\bT\b", cost, kind))
             for kind, _ in batch_parameters(cuda_batch.kernel_source())]
    return f"template __global__ void {cuda_batch.kernel_name(dtype, k, threads, certify, ragged)}({', '.join(types)});"


def test_batch_kernel_parameters_are_the_launchers_in_order():
    """The launch packs its arguments into 8-byte slots by KERNEL_SIGNATURE, derived from
    KERNEL_PARAMETERS: a parameter added, dropped or moved in the kernel alone would hand it the
    wrong values."""
    from lapcli.cuda import batch_lap as cuda_batch

    parameters = batch_parameters(cuda_batch.kernel_source())
    assert [name for _, name in parameters] == [name for name, _ in cuda_batch.KERNEL_PARAMETERS]
    kinds = {"int": "i32", "unsigned long long": "u64"}
    assert [("ptr" if kind.endswith("*") else kinds[kind]) for kind, _ in parameters] == \
        [kind for _, kind in cuda_batch.KERNEL_PARAMETERS]
    assert cuda_batch.KERNEL_ARGUMENTS == len(parameters) == 24
    names = [name for name, _ in cuda_batch.KERNEL_PARAMETERS]
    ints = ("B", "n_stack", "m_stack", "transposed", "n_out", "exact")
    assert [at for at, letter in enumerate(cuda_batch.KERNEL_SIGNATURE) if letter == "i"] == \
        [names.index(name) for name in ints]
    assert len(cuda_batch._NO_CERTIFY) == len(names) - names.index("row_offset")


def test_batch_kernel_takes_its_abi_from_the_launcher_only():
    """The status codes and the certificate's slots are defined once, in lapcli/cuda/batch_lap.py:
    the kernel defines none of them itself and uses every one; slots are 0 .. count - 1; the only
    other conditional compile in the kernel is the tests' fault hook."""
    from lapcli.cuda import batch_lap as cuda_batch

    source = cuda_batch.kernel_source()
    defines = cuda_batch.kernel_defines()
    names = [d[2:].split("=")[0] for d in defines]
    assert set(names) == {*cuda_batch.STATUSES, *cuda_batch.STATS, *cuda_batch.SUMMARY,
                          "CERTIFY_STATS", "SUMMARY_SLOTS"}
    for name in names:
        assert f"#define {name}" not in source, f"{name} is defined in the kernel too"
        assert f"defined({name})" in source, f"the kernel does not require {name}"
        assert re.search(rf"\b{name}\b", source.split("#endif", 1)[1]), f"{name} is not used by the kernel"
    assert sorted(cuda_batch.STATS.values()) == list(range(cuda_batch.CERTIFY_STATS))
    assert sorted(cuda_batch.SUMMARY.values()) == list(range(cuda_batch.SUMMARY_SLOTS))
    assert cuda_batch.STATUS_OK == 0 and sorted(cuda_batch.STATUS_MESSAGES) == [1, 2, 3]
    conditionals = re.findall(r"^\s*#\s*(?:if|ifdef|ifndef|elif)\b.*$", source, re.M)
    assert [" ".join(c.split()[:2]).split("(")[0] for c in conditionals] == \
        ["#if !defined", "#ifdef BATCH_CORRUPT_PROBLEM"]
    assert cuda_batch.fault_defines((3, 1)) == ("-DBATCH_CORRUPT_PROBLEM=3", "-DBATCH_CORRUPT_MODE=1")
    assert cuda_batch.fault_defines(None) == ()


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
def test_batch_kernel_refuses_to_compile_without_the_launchers_defines(tmp_path):
    from lapcli.cuda import batch_lap as cuda_batch

    source = tmp_path / "one.cu"
    source.write_text(cuda_batch.kernel_source() + "\n" + batch_instantiation("int32", 1, 16, True) + "\n")
    command = [NVCC, "-arch=sm_90", "-cubin", "-std=c++17", "-o", str(tmp_path / "k.cubin"), str(source)]
    bare = subprocess.run(command, capture_output=True, text=True)
    assert bare.returncode != 0 and "kernel_defines" in bare.stderr
    defined = subprocess.run([*command[:1], *cuda_batch.kernel_defines(), *command[1:]], capture_output=True,
                             text=True)
    assert defined.returncode == 0, defined.stderr


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
def test_batch_kernel_compiles_for_every_dtype_layout_and_mode(tmp_path):
    """Every instantiation the launcher can ask for (kernel_name over LAYOUTS), with and without
    the fused certificate, compiles with the launcher's defines, and none spills more than a word
    or two (ptxas spills up to 16 bytes in a few of them; a per-thread array left in local memory
    would spill hundreds)."""
    from lapcli.cuda import batch_lap as cuda_batch

    from lapcli.engines.cuda.batch_members import IN_PLACE_DTYPES

    source = tmp_path / "batch.cu"
    lines = [cuda_batch.kernel_source()]
    for dtype in cuda_batch.KERNEL_TYPES:
        modes = ((False, False), (True, False), *([(True, True)] if dtype in IN_PLACE_DTYPES else []))
        for _, (k, threads) in cuda_batch.LAYOUTS:
            for certify, ragged in modes:
                lines.append(batch_instantiation(dtype, k, threads, certify, ragged))
    source.write_text("\n".join(lines) + "\n")
    result = subprocess.run([NVCC, "-arch=sm_90", "-cubin", "-std=c++17", *cuda_batch.kernel_defines(), "-Xptxas", "-v",
                             "-o", str(tmp_path / "b.cubin"), str(source)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    entries = result.stderr.split("Compiling entry function")[1:]
    stack_kernels = 2 * len(cuda_batch.KERNEL_TYPES) * len(cuda_batch.LAYOUTS)
    assert len(entries) == stack_kernels + len(IN_PLACE_DTYPES) * len(cuda_batch.LAYOUTS)
    certifying = [e for e in entries if "Lb1E" in e.split("'")[1]]
    assert len(certifying) == len(entries) - stack_kernels // 2
    spills = [int(re.search(r"(\d+) bytes spill stores", e).group(1)) for e in entries]
    assert max(spills) <= 16, [e.split("'")[1] for e, s in zip(entries, spills) if s > 16]
    # The certificate is inlined into the solve's kernel, so its registers are the launch's: with
    # 8-16 rows in flight it needed 106-184 per thread, and batches that fit the GPU at once ran in
    # two waves (docs/design.md). Each certified launch stays within 80 (ptxas 13.0,
    # sm_90: 56-80; the solve alone 32-72).
    registers = {e.split("'")[1]: int(re.search(r"Used (\d+) registers", e).group(1)) for e in certifying}
    stacks = {name: r for name, r in registers.items() if "Lb1ELb0E" in name}  # certified, not ragged
    assert len(stacks) == len(cuda_batch.KERNEL_TYPES) * len(cuda_batch.LAYOUTS)
    assert max(stacks.values()) <= 80, {name: r for name, r in stacks.items() if r > 80}
    # A ragged launch (float32 and int32 members in place, a tall one through its transpose) keeps
    # each member's strides and offsets and its staged rows' pitch beside the solve's state: 64-106
    # registers (ptxas 13.0, sm_90; 512-thread blocks hold one per multiprocessor at 65-128). Its
    # batches are a training step's images, far from filling the GPU's blocks.
    assert max(registers.values()) <= 112, {name: r for name, r in registers.items() if r > 112}


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
def test_the_ragged_launches_own_layouts_compile_without_spilling(tmp_path):
    """The layouts only ragged launches take (batch_abi.ragged_layout), for every in-place dtype:
    each compiled as the launcher compiles it, one instantiation a program (compiled together,
    ptxas spills up to 52 bytes in some, alone none), within the ragged launch's 112 registers."""
    from lapcli.cuda import batch_abi
    from lapcli.cuda import batch_lap as cuda_batch

    from lapcli.engines.cuda.batch_members import IN_PLACE_DTYPES

    ragged_only = batch_abi.all_layouts() - {layout for _, layout in batch_abi.LAYOUTS}
    assert ragged_only, "the ragged launches have layouts of their own"
    for k, threads in sorted(ragged_only):
        source = tmp_path / f"ragged_{k}_{threads}.cu"
        source.write_text("\n".join([cuda_batch.kernel_source(), *(batch_instantiation(dtype, k, threads, True, True)
                                                                   for dtype in IN_PLACE_DTYPES)]) + "\n")
        result = subprocess.run([NVCC, "-arch=sm_90", "-cubin", "-std=c++17", *cuda_batch.kernel_defines(), "-Xptxas",
                                 "-v", "-o", str(tmp_path / "r.cubin"), str(source)], capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        entries = result.stderr.split("Compiling entry function")[1:]
        assert len(entries) == len(IN_PLACE_DTYPES)
        for entry in entries:
            name = entry.split("'")[1]
            assert int(re.search(r"(\d+) bytes spill stores", entry).group(1)) <= 16, name
            assert int(re.search(r"Used (\d+) registers", entry).group(1)) <= 112, name


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
def test_a_group_that_is_not_a_power_of_two_does_not_compile(tmp_path):
    """A column's owner is j & (THREADS − 1): 320 threads would search with the wrong owners."""
    from lapcli.cuda import batch_lap as cuda_batch

    source = tmp_path / "odd.cu"
    source.write_text(cuda_batch.kernel_source() + "\n" + batch_instantiation("float32", 1, 320, True, True) + "\n")
    result = subprocess.run([NVCC, "-arch=sm_90", "-cubin", "-std=c++17", *cuda_batch.kernel_defines(), "-o",
                             str(tmp_path / "odd.cubin"), str(source)], capture_output=True, text=True)
    assert result.returncode != 0 and "group size" in result.stderr


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
    """Integer duals take S2's packed-word argmin (one 32-bit redux.sync per level) beside the
    64-bit one; float duals only the 64-bit one (three redux.sync per level): the same layout's
    integer kernel has more of them."""
    from lapcli.cuda import batch_lap as cuda_batch

    def redux_count(dtype: str) -> int:
        source = tmp_path / f"{dtype}.cu"
        source.write_text(cuda_batch.kernel_source() + "\n" + batch_instantiation(dtype, 4, 256, False) + "\n")
        ptx = tmp_path / f"{dtype}.ptx"
        result = subprocess.run([NVCC, "-arch=sm_90", "-ptx", "-std=c++17", *cuda_batch.kernel_defines(),
                                 "-o", str(ptx), str(source)], capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        return ptx.read_text().count("redux.sync.min.u32")

    assert redux_count("int32") > redux_count("float32") > 0


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
def test_the_ragged_kernels_compile_as_their_launcher_names_them(tmp_path):
    """Every kernel lapcli.cuda.ragged_pack asks for (its program's name expressions) compiles for
    sm_90 without spilling."""
    from lapcli.cuda import ragged_pack

    program = ragged_pack.program()
    uses = "".join(f"    (void)&{expression};\n" for _, expression, _ in program.kernels)
    (tmp_path / "ragged.cu").write_text(program.source + f"\nvoid lapcli_instantiate() {{\n{uses}}}\n")
    result = subprocess.run([NVCC, "-arch=sm_90", "-cubin", "-std=c++17", "-Xptxas", "-v", "-o",
                             str(tmp_path / "ragged.cubin"), str(tmp_path / "ragged.cu")],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stderr.count("Compiling entry function") == len(program.kernels)
    assert "spill stores" in result.stderr and all(
        line.split("bytes spill stores")[0].split()[-1] == "0" for line in result.stderr.splitlines()
        if "bytes spill stores" in line)


def compile_program(program, tmp_path, name: str, entries: int):
    """nvcc -Xptxas -v on a runtime Program with every kernel instantiated: it must build, have
    ``entries`` kernels and spill nothing. Returns the source path."""
    uses = "".join(f"    (void)&{expression};\n" for _, expression, _ in program.kernels)
    source = tmp_path / f"{name}.cu"
    source.write_text(program.source + f"\nvoid lapcli_instantiate() {{\n{uses}}}\n")
    result = subprocess.run([NVCC, "-arch=sm_90", "-cubin", "-std=c++17", "-Xptxas", "-v", *program.defines, "-o",
                             str(tmp_path / f"{name}.cubin"), str(source)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stderr.count("Compiling entry function") == len(program.kernels) == entries
    assert all(line.split("bytes spill stores")[0].split()[-1] == "0" for line in result.stderr.splitlines()
               if "bytes spill stores" in line)
    return source


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
def test_the_cluster_search_kernels_compile_without_spilling(tmp_path):
    """kernels/sap.cu as lapcli.cuda.sap_cluster compiles it (its defines, every dtype's name
    expression) builds for sm_90 with clusters and no spills; without the defines it refuses."""
    from lapcli.cuda import sap_cluster

    source = compile_program(sap_cluster.program(), tmp_path, "sap", 4)
    bare = subprocess.run([NVCC, "-arch=sm_90", "-cubin", "-std=c++17", "-o", str(tmp_path / "bare.cubin"),
                           str(source)], capture_output=True, text=True, check=False)
    assert bare.returncode != 0 and "kernel_defines" in bare.stderr


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
@pytest.mark.parametrize("metric, dim", [("sqeuclidean", 2), ("cosine", 3), ("minkowski", 16), ("chebyshev", 32)])
def test_the_point_kernels_compile_without_spilling(tmp_path, metric, dim):
    """Both streamed passes with the search, the searches on lowered pairs, and the passes with the
    auction's kernels (its tiled release pass too), on a Points source (lapcli.cuda.points.program) build for sm_90 with no spills, up to the largest dimension; the
    auction's numbers come from its launcher only (without its defines it refuses)."""
    from lapcli.cuda import points

    compile_program(points.program(metric, dim), tmp_path, "points", 3)
    from lapcli.engines.cuda.sap_points import tail_block_threads

    # the searches that finish an auction, on lowered pairs
    threads = tail_block_threads(dim)
    tail = compile_program(points.program(metric, dim, "tail", threads=threads), tmp_path, "tail", 1)
    assert f"-DTHREADS={threads}" in points.program(metric, dim, "tail", threads=threads).defines
    assert "LoweredPoints" in tail.read_text()
    source = compile_program(points.program(metric, dim, "auction"), tmp_path, "auction", 14)
    bare = subprocess.run([NVCC, "-arch=sm_90", "-cubin", "-std=c++17", "-o", str(tmp_path / "bare.cubin"),
                           str(source)], capture_output=True, text=True, check=False)
    assert bare.returncode != 0 and "kernel_defines" in bare.stderr


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
@pytest.mark.parametrize("dtype", ["int32", "int64", "float32", "float64"])
def test_the_dense_auction_kernels_compile_without_spilling(tmp_path, dtype):
    """The auction and both streamed passes on a dense work matrix (lapcli.cuda.auction.dense_program),
    the start of cuda-sap above the one-block search, build for sm_90 with no spills in every dtype."""
    from lapcli.cuda import auction

    compile_program(auction.dense_program(dtype), tmp_path, "dense", 7)


def test_nvrtc_includes_the_cccl_folder_that_holds_every_header_cooperative_groups_needs(tmp_path, monkeypatch):
    # CUDA 13.0's layout: nv/ beside cooperative_groups.h, cuda/std/ only under cccl/
    from lapcli.cuda import compiler

    root = tmp_path / "include"
    for header in ("cooperative_groups.h", "nv/target", "cccl/nv/target", "cccl/cuda/std/type_traits"):
        (root / header).parent.mkdir(parents=True, exist_ok=True)
        (root / header).write_text("")
    monkeypatch.setenv("CUDA_PATH", str(tmp_path))
    monkeypatch.setattr(compiler.os.path, "isfile", lambda path, real=compiler.os.path.isfile:
                        real(path) and str(path).startswith(str(tmp_path)))  # this machine's toolkit unseen
    found = compiler.cuda_include_dirs()
    assert found == [str(root), str(root / "cccl")]


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
@pytest.mark.parametrize("metric", ["sqeuclidean", "euclidean", "cityblock", "chebyshev", "minkowski", "cosine"])
def test_the_band_kernels_compile_without_spilling(tmp_path, metric):
    """kernels/sorted_band.cu on each metric's one-coordinate Points source (lapcli.cuda.sorted_band)
    builds for sm_90 with no spills (two blocks of 1,024 threads a multiprocessor, one for
    minkowski); without its defines it refuses."""
    from lapcli.cuda import sorted_band

    source = compile_program(sorted_band.program(metric), tmp_path, "band", 2)
    bare = subprocess.run([NVCC, "-arch=sm_90", "-cubin", "-std=c++17", "-o", str(tmp_path / "bare.cubin"),
                           str(source)], capture_output=True, text=True, check=False)
    assert bare.returncode != 0 and "kernel_defines" in bare.stderr
