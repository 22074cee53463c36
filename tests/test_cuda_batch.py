"""The batch kernel (kernels/batch_lap.cu, launched by lapcli/cuda/batch_lap.py) and the engine
cuda-batch (lapcli/engines/cuda/batch.py): its NumPy twin on the CPU, the kernel on a GPU."""

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment as scipy_lsa

from lapcli.cuda import batch_abi
from lapcli.cuda import batch_lap as cb
from lapcli.engines.cuda import batch as engine
from lapcli.twins import check_duals, column_reduction, reference_stack, row_reduction, search_steps


def scipy_objective(c):
    r, k = scipy_lsa(c)
    return c[r, k].astype(np.float64).sum()


def objective(c, cols):
    return c[np.arange(c.shape[0]), cols].astype(np.float64).sum()


SHAPES = [(4, 1, 1), (3, 1, 6), (5, 2, 2), (4, 7, 7), (3, 16, 16), (3, 9, 30), (2, 33, 64), (2, 40, 41)]


@pytest.mark.parametrize("dtype", ["int32", "int64", "float32", "float64"])
def test_reference_twin_matches_scipy_and_certifies(rng, dtype):
    for b, n, m in SHAPES:
        for high in (2, 10 * n, 10**6):
            if dtype.startswith("int"):
                c = rng.integers(-high // 2, high, (b, n, m)).astype(dtype)
            else:
                c = (rng.random((b, n, m)) * high).astype(dtype)
            col, u, v, status = reference_stack(c)
            assert np.all(status == 0)
            check_duals(c, col, u, v, 0 if dtype.startswith("int") else 1e-9 * high * n)
            for k in range(b):
                assert abs(objective(c[k], col[k]) - scipy_objective(c[k])) <= 1e-9 * high * n


def test_the_column_reduction_start_is_a_valid_warm_start(rng):
    """twins.column_reduction (the kernel's start for square problems): v = column minima; each
    row that is some column's minimum (lowest row on ties) takes the lowest such column; every
    assigned row is then tight at its row's minimum of c - v, which is all the searches need. The
    twin from it and from the cold start reach the same optimum."""
    for n, high in ((1, 5), (7, 3), (40, 400), (64, 2)):
        c = rng.integers(0, high, (n, n)).astype(np.int64)
        v, col_of_row = column_reduction(c)
        np.testing.assert_array_equal(v, c.min(axis=0))
        taken = col_of_row[col_of_row >= 0]
        assert taken.size == np.unique(taken).size == np.unique(c.argmin(axis=0)).size
        for i in np.flatnonzero(col_of_row >= 0):
            j = col_of_row[i]
            assert c[i, j] - v[j] == 0 == (c[i] - v).min()
            assert j == np.flatnonzero(c.argmin(axis=0) == i).min()
        warm, _, _, _ = reference_stack(c[None])
        cold, _, v_cold, _ = reference_stack(c[None], reduction_start=False)
        assert objective(c, warm[0]) == objective(c, cold[0]) == scipy_objective(c)
        assert v_cold.max() <= 0  # the cold start's duals only fall from 0


def test_the_row_reduction_start_is_a_valid_start_of_a_rectangular_problem(rng):
    """twins.row_reduction (the kernel's start for n < m): each row claims its row minimum's column
    (lowest column on ties), each column goes to the lowest row claiming it, and a row that kept
    its column lowers that column's v by the gap to its second-smallest cost (JV's reduction
    transfer). Every assigned row is then tight at its row's minimum of c − v, v < 0 only on taken
    columns, the twin from it reaches the cold start's optimum with duals that certify the
    rectangular problem (v <= 0, v == 0 on free columns), and it leaves far fewer rows to search
    from on a matcher's shape."""
    for n, m, high in ((1, 5, 5), (7, 9, 3), (40, 300, 400), (64, 65, 2), (50, 300, None)):
        c = rng.random((n, m)) if high is None else rng.integers(0, high, (n, m)).astype(np.int64)
        v, col_of_row = row_reduction(c)
        taken = col_of_row[col_of_row >= 0]
        assert taken.size == np.unique(taken).size == np.unique(c.argmin(axis=1)).size
        for i in np.flatnonzero(col_of_row >= 0):
            j = col_of_row[i]
            assert c[i, j] == c[i].min() and j == c[i].argmin()
            assert i == np.flatnonzero(c.argmin(axis=1) == j).min()
            assert v[j] == c[i, j] - np.sort(c[i])[1]  # the gap to the row's second-smallest cost
            assert c[i, j] - v[j] == (c[i] - v).min()  # tight at its row's minimum of c − v
        assert v.max() <= 0 and not v[np.setdiff1d(np.arange(m), taken)].any()
        if high is None:
            assert (v < 0).sum() == taken.size  # continuous costs: every kept column transfers
        warm, u, v_end, _ = reference_stack(c[None])
        cold, _, _, _ = reference_stack(c[None], reduction_start=False)
        check_duals(c[None], warm, u, v_end, 0 if high else 1e-12)
        assert objective(c, warm[0]) == pytest.approx(objective(c, cold[0])) == pytest.approx(scipy_objective(c))
        if high is None:
            assert (col_of_row < 0).sum() <= n // 4  # ~n² / 2m rows collide: ~4 of 50
    forbidden = np.array([[np.inf, np.inf, 5.0], [np.inf, np.inf, np.inf], [1.0, 2.0, 5.0]])
    v, col_of_row = row_reduction(forbidden)
    assert col_of_row.tolist() == [2, -1, 0]  # a row without a finite cost claims nothing
    assert v.tolist() == [-1.0, 0.0, 0.0]  # ... and one without a finite second cost transfers nothing


def test_the_reduction_transfer_shortens_the_searches_of_a_near_square_member():
    """The transfer's purpose, counted in the twin: the searches from the rows the row reduction
    leaves free take fewer Dijkstra steps on a matcher's near-square member."""
    c = np.random.default_rng(11).random((270, 300))
    v, col_of_row = row_reduction(c)
    with_transfer = search_steps(c, v, col_of_row)
    without = search_steps(c, np.zeros_like(v), col_of_row)
    assert with_transfer < 0.9 * without, (with_transfer, without)


def test_layout_choice_covers_every_width():
    for m in (1, 31, 32, 33, 64, 100, 128, 129, 256, 257, 512, 1000, 1024, 2047, 2048):
        k, threads = cb.choose_layout(m)
        assert m <= k * threads
    # half-warp groups (two problems per warp) up to 16 columns, then a warp per problem
    assert cb.choose_layout(16) == (1, 16) and cb.choose_layout(17) == (1, 32) and cb.choose_layout(33) == (2, 32)
    with pytest.raises(ValueError):
        cb.choose_layout(cb.MAX_COLUMNS + 1)
    assert cb.launch_shape(5, 16) == (2, 64) and cb.launch_shape(5, 32) == (3, 64)
    assert cb.launch_shape(5, 256) == (5, 256)


def test_a_ragged_launch_takes_more_threads_where_it_leaves_multiprocessors_idle():
    """One column a thread (a power of two of threads) while every member has a multiprocessor to
    itself, two while two share one, and the stacks' layouts beyond that and up to 32 columns."""
    sms = 132
    for m in (33, 50, 64, 65, 100, 128, 129, 300, 512, 513, 900, 1024):
        threads = 1 << (m - 1).bit_length()
        assert batch_abi.ragged_layout(m, 1, sms) == batch_abi.ragged_layout(m, sms, sms) == (1, threads)
        assert batch_abi.ragged_layout(m, sms + 1, sms) == batch_abi.ragged_layout(m, 2 * sms, sms) == (2, max(64, threads // 2))
        assert batch_abi.ragged_layout(m, 2 * sms + 1, sms) == cb.choose_layout(m)
    for m, batch in ((1, 1), (16, 8), (32, 64), (1025, 1), (2048, 200)):
        assert batch_abi.ragged_layout(m, batch, sms) == cb.choose_layout(m)
    for m in range(1, cb.MAX_COLUMNS + 1, 7):
        for batch in (1, 100, 200, 300):
            k, threads = batch_abi.ragged_layout(m, batch, sms)
            assert m <= k * threads and (k, threads) in batch_abi.all_layouts()
            assert threads & (threads - 1) == 0  # the kernel's groups are powers of two


def test_a_layout_override_names_one_of_the_kernels_layouts():
    """solve_stack / certified_stack take layout= (tests run every layout) only from the
    instantiations the launcher compiles (all_layouts), and only where it holds the problem's
    columns."""
    for layout in batch_abi.all_layouts():
        assert cb.checked_layout(layout, 1) == layout
        assert cb.checked_layout(list(layout), layout[0] * layout[1]) == layout
        with pytest.raises(ValueError, match="holds"):
            cb.checked_layout(layout, layout[0] * layout[1] + 1)
    for layout in ((4, 16), (8, 32), (1, 96), (3, 128), (1, 320)):
        with pytest.raises(ValueError, match="not one of the batch kernel's layouts"):
            cb.checked_layout(layout, 16)
    assert cb.checked_layout(None, 100) == cb.choose_layout(100)


def _kernel_key(x: float) -> int:
    """DualTraits<double>::key of batch_lap.cu, in Python: the IEEE bits made order-preserving."""
    import struct

    bits = struct.unpack("<Q", struct.pack("<d", x + 0.0))[0]
    return bits ^ (0xFFFF_FFFF_FFFF_FFFF if bits >> 63 else 1 << 63)


def test_summary_keys_decode_to_their_values_in_order():
    """The launch's summary holds extreme slacks as atomicMax'd keys (the minimum as ~key): each
    decodes to its value, and the keys order as the values do."""
    values = [-np.inf, -1e300, -2.5, -1e-300, -0.0, 0.0, 5e-324, 1e-12, 3.75, 1e308, np.inf]
    keys = [_kernel_key(x) for x in values]
    assert keys == sorted(keys)
    for x, key in zip(values, keys):
        assert cb.decode_key(key) == x
        assert cb.decode_key(~(~key & 0xFFFF_FFFF_FFFF_FFFF) & 0xFFFF_FFFF_FFFF_FFFF) == x
    assert max(keys[2], keys[8]) == _kernel_key(3.75)


def test_kernel_source_instantiates_one_name_per_layout():
    source = cb.kernel_source()
    assert "batch_lap" in source and "__reduce_min_sync" in source
    assert cb.kernel_name("float32", 4, 256) == "batch_lap<float, double, 4, 256, false, false>"
    assert cb.kernel_name("int32", 1, 16, certify=True) == "batch_lap<int, long long, 1, 16, true, false>"
    assert cb.kernel_name("float32", 4, 128, certify=True, ragged=True) == "batch_lap<float, double, 4, 128, true, true>"
    assert source.index("struct RaggedMember") < source.index("batch_lap(")  # the table's header, in front
    assert "certify_problem" in source and "atomicExch(&taken[j], r)" in source


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["int32", "int64", "float32", "float64"])
def test_gpu_matches_twin_and_scipy(rng, dtype):
    import cupy

    for b, n, m in SHAPES + [(3, 100, 128), (2, 200, 256), (2, 300, 700), (1, 1024, 1024), (1, 1000, 2048)]:
        if dtype.startswith("int"):
            c = rng.integers(0, 10 * n, (b, n, m)).astype(dtype)
        else:
            c = rng.random((b, n, m)).astype(dtype)
        res = cb.solve_stack(cupy.asarray(c))
        col, u, v, status = (cupy.asnumpy(x) for x in (res.col_of_row, res.u, res.v, res.status))
        assert np.all(status == 0)
        check_duals(c, col, u, v, 0 if dtype.startswith("int") else 1e-9 * n)
        for k in range(b):
            assert abs(objective(c[k], col[k]) - scipy_objective(c[k])) <= 1e-9 * n
        if m <= 64:
            tc, tu, tv, _ = reference_stack(c)
            if dtype.startswith("int"):
                assert np.array_equal(tc, col) and np.array_equal(tu, u) and np.array_equal(tv, v)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_the_packed_argmin_gives_the_twins_answer_where_it_saturates(rng, dtype):
    """Integer costs take S2's argmin on packed 32-bit words (distance above minVal, assigned flag,
    index) and the 64-bit keys where a distance saturates the word (from ~2^25 above minVal at 64
    columns, ~2^19 at 2048): on ranges from 2 to 2^30, negative costs too, the kernel gives the
    twin's answer bit for bit where the twin runs, and scipy's objective with exact duals beyond."""
    import cupy

    for b, n, m in [(64, 16, 16), (40, 30, 64), (8, 100, 256), (2, 500, 1024), (1, 1000, 2048)]:
        for low, high in ((0, 2), (0, 10 * m), (-(2**19), 2**19), (0, 2**30)):
            c = rng.integers(low, high, (b, n, m)).astype(dtype)
            res = cb.solve_stack(cupy.asarray(c))
            col, u, v, status = (cupy.asnumpy(x) for x in (res.col_of_row, res.u, res.v, res.status))
            assert np.all(status == 0)
            check_duals(c, col, u, v, 0)
            if m <= 64:
                tc, tu, tv, _ = reference_stack(c)
                np.testing.assert_array_equal(col, tc)
                np.testing.assert_array_equal(u, tu)
                np.testing.assert_array_equal(v, tv)
            else:
                assert [objective(c[k], col[k]) for k in range(b)] == [scipy_objective(c[k]) for k in range(b)]


@pytest.mark.gpu
@pytest.mark.parametrize("layout", [layout for _, layout in cb.LAYOUTS])
def test_gpu_every_layout_solves_narrower_problems_too(rng, layout):
    """Each of the kernel's layouts, forced (solve_stack's layout=), solves problems as wide as it
    holds and far narrower ones (most of its columns dead), half-warp groups included."""
    import cupy

    k, threads = layout
    for m in (3, k * threads // 2 + 1, k * threads):
        batch = 37 if m <= 256 else 3
        c = rng.integers(0, 10 * m, (batch, m, m)).astype(np.int32)
        res = cb.solve_stack(cupy.asarray(c), layout=layout)
        col, u, v, status = (cupy.asnumpy(x) for x in (res.col_of_row, res.u, res.v, res.status))
        assert np.all(status == 0) and res.details["layout"] == f"K={k} threads={threads}"
        check_duals(c, col, u, v, 0)
        assert [objective(c[b], col[b]) for b in range(batch)] == [scipy_objective(c[b]) for b in range(batch)]


@pytest.mark.gpu
def test_the_slot_packed_launch_gives_the_plain_launchs_answer(rng):
    """certified_stack packs its 20 arguments into 8-byte slots (lapcli.cuda.runtime); a slot out
    of place would solve another problem or none. Its columns and objectives equal those of the
    plain launch (solve_stack, other arguments) and scipy's optimum, for ints and floats,
    transposed problems and row offsets (added to the objectives) included."""
    import cupy

    for shape, dtype, transposed in (((300, 16, 16), "int32", False), ((40, 20, 70), "float32", True),
                                     ((9, 130, 200), "float64", False)):
        c = (rng.integers(0, 1000, shape) if dtype.startswith("int") else rng.random(shape)).astype(dtype)
        n_out = shape[2] if transposed else shape[1]
        offsets = rng.random(shape[:2]) if dtype == "float64" else None
        run = cb.certified_stack(cupy.asarray(c), n_out=n_out, transposed=transposed,
                                 row_offset=None if offsets is None else cupy.asarray(offsets))
        assert int(run.summary[1].get()) == 0  # every problem proved
        plain = cb.solve_stack(cupy.asarray(c))
        assert np.all(plain.status.get() == 0)
        plain_cols, cols, objectives = plain.col_of_row.get(), run.col_ind.get(), run.objective.get()
        for b in range(shape[0]):
            expected = plain_cols[b]
            if transposed:  # the work's rows are the caller's columns; -1 where no work row took a caller's row
                expected = np.full(n_out, -1)
                expected[plain_cols[b]] = np.arange(shape[1])
            assert np.array_equal(cols[b], expected)
            total = objective(c[b], plain_cols[b])
            assert total == pytest.approx(scipy_objective(c[b]))
            got = objectives[b] if dtype.startswith("int") else objectives[b:b + 1].view(np.float64)[0]
            assert got == pytest.approx(total + (offsets[b].sum() if offsets is not None else 0.0))


@pytest.mark.gpu
def test_gpu_empty_and_large_batch(rng):
    import cupy

    res = cb.solve_stack(cupy.empty((0, 3, 5), dtype=np.float32))
    assert res.col_of_row.shape == (0, 3) and res.v.shape == (0, 5) and res.kernel_ms == 0.0
    c = rng.integers(0, 160, (100_000, 16, 16)).astype(np.int32)
    res = cb.solve_stack(cupy.asarray(c))
    col = cupy.asnumpy(res.col_of_row)
    assert np.all(cupy.asnumpy(res.status) == 0)
    for k in rng.choice(100_000, 200, replace=False):
        assert objective(c[k], col[k]) == scipy_objective(c[k])


@pytest.mark.gpu
def test_gpu_timeout_sets_status(rng):
    import cupy

    for shape, timeout in (((64, 1024, 1024), 2e-4), ((100_000, 16, 16), 2e-6)):  # a block, half a warp per problem
        c = cupy.asarray(rng.random(shape, dtype=np.float32))
        status = cupy.asnumpy(cb.solve_stack(c, timeout=timeout).status)
        assert np.any(status == 2) and set(np.unique(status)) <= {0, 2}
        run = cb.certified_stack(c, n_out=shape[1], transposed=False, timeout=timeout)  # the driver launch's slots
        status = run.status.get()
        assert np.any(status == 2) and set(np.unique(status)) <= {0, 2}
        assert int(run.summary[1].get()) == int((status == 2).sum())  # an abandoned problem is not proved


@pytest.mark.gpu
def test_staged_upload_round_trips_through_every_path(rng, monkeypatch):
    """Pageable (small); pinned in place (a process's first upload); through the kept pinned buffer
    (uneven pieces, the buffer grown, uploads back to back while the last one's DMAs may still
    read it); and through the ring with more chunks than slots (slots reused while earlier DMAs may
    still run); into a new array and into a given one."""
    import cupy

    from lapcli.cuda import staging

    small = rng.integers(0, 9, (7, 3, 5)).astype(np.int64)
    assert np.array_equal(staging.upload(small).get(), small)
    big = rng.random((300, 64, 64), dtype=np.float32)  # 4.9 MB
    for _ in range(2):  # a process's first upload may be pinned in place, the next is staged
        assert np.array_equal(staging.upload(big).get(), big)
    read_only = big.copy()
    read_only.flags.writeable = False  # as np.load's memory map: registered read-only
    staging._uploads["seen"] = 0
    assert np.array_equal(staging.upload(read_only).get(), big)
    outs, sent = [], []
    for size in (1_300_001, 2_600_003, 1_000_000, 9_000_017):  # 5.2 to 36 MB, uneven tails
        fresh = rng.integers(-2**31, 2**31 - 1, (size,), dtype=np.int32)
        outs.append(staging.upload(fresh))  # no synchronisation between these uploads
        sent.append(fresh)
    for out, fresh in zip(outs, sent):
        assert np.array_equal(out.get(), fresh)
    monkeypatch.setattr(staging, "STAGED_UP_TO", 0)  # the ring
    for _ in range(2):
        fresh = rng.integers(-2**31, 2**31 - 1, (1_300_001,), dtype=np.int32)  # 5.2 MB, uneven tail
        out = cupy.zeros(fresh.shape, dtype=np.int32)
        staging.upload(fresh, out, chunk_bytes=40_000, threads=6)  # 130 chunks through 32 slots
        assert np.array_equal(out.get(), fresh)
    with pytest.raises(ValueError, match="host array's size"):
        staging.upload(big, cupy.empty(10, dtype=np.float32))


@pytest.mark.gpu
def test_a_page_locked_host_stack_is_sent_in_place(rng, monkeypatch):
    """A stack the caller keeps in pinned memory (cupyx.empty_pinned, torch's pin_memory()) is
    read by the DMA where it is: the staged route (a host copy) is not taken, and the answers are
    those of the same stack in pageable memory; a pageable stack still takes the staged route."""
    import cupy
    import cupyx
    import torch

    import lapcli
    from lapcli.cuda import staging

    stack = rng.random((2000, 24, 24), dtype=np.float32)  # 4.6 MB: the staged route when pageable
    expected = lapcli.solve_batch(stack)
    staged = []
    start_staged = staging._start_staged
    monkeypatch.setattr(staging, "_start_staged", lambda *args: staged.append(1) or start_staged(*args))
    lapcli.solve_batch(stack)
    assert staged  # the spy sees the staged route
    staged.clear()
    pinned = cupyx.empty_pinned(stack.shape, dtype=stack.dtype)
    pinned[...] = stack
    solution = lapcli.solve_batch(pinned)
    assert not staged
    assert isinstance(solution.col_ind, np.ndarray)
    assert np.array_equal(solution.col_ind, expected.col_ind)
    assert np.array_equal(solution.objectives, expected.objectives)
    tensor = torch.from_numpy(stack).pin_memory()
    assert np.array_equal(lapcli.batch_linear_assignment(tensor).numpy(), expected.col_ind)
    assert not staged
    out = staging.upload(pinned[:, :5])  # a non-contiguous view: copied to pageable memory first
    assert np.array_equal(out.get(), stack[:, :5])
    cupy.cuda.get_current_stream().synchronize()


# ----------------------------------------------------------------------------- the public batch API
def _scipy_objectives(stack, maximize=False):
    out = []
    for cost in stack:
        rows, cols = scipy_lsa(cost, maximize=maximize)
        out.append(cost[rows, cols].sum())
    return np.array(out)


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(300, 16, 16), (50, 20, 70), (50, 70, 20), (7, 256, 256), (3, 1, 1), (2, 1000, 1000)])
@pytest.mark.parametrize("kind", ["int", "float32", "float64", "forbidden"])
def test_solve_batch_on_the_gpu_matches_a_scipy_loop(rng, shape, kind):
    import lapcli

    for maximize in (False, True):
        if kind == "int":
            stack = rng.integers(-1000, 1000, shape)
        else:
            stack = rng.random(shape).astype("float32" if kind == "float32" else "float64")
        if kind == "forbidden":
            stack[rng.random(shape) < 0.2] = -np.inf if maximize else np.inf
            k = min(shape[1:])
            stack[:, np.arange(k), np.arange(k)] = 0.5
        solution = lapcli.solve_batch(stack, solver="cuda-batch", maximize=maximize)
        assert solution.report.certified and solution.report.solver == "cuda-batch"
        expected = _scipy_objectives(stack, maximize)
        if kind == "int":
            assert solution.objectives.tolist() == expected.tolist()
        else:
            np.testing.assert_allclose(solution.objectives, expected, rtol=1e-5 if kind == "float32" else 1e-9)
        assert solution.col_ind.shape == shape[:2]


def _no_pass_over_the_costs(monkeypatch):
    """Make any work-stack build or entry check fail: a plain stack must need neither."""
    import lapcli.problem

    def fail(*args, **kwargs):
        raise AssertionError("a plain stack was scanned or copied into a work stack")

    monkeypatch.setattr(lapcli.problem, "build_work", fail)
    monkeypatch.setattr(lapcli.problem, "check_entries", fail)


def _same_answers(plain, expected, dtype):
    if dtype == "int32":
        np.testing.assert_array_equal(plain.objectives, expected.objectives)
    else:
        np.testing.assert_allclose(plain.objectives, expected.objectives, rtol=1e-5)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["int32", "float32"])
@pytest.mark.parametrize("shape", [(300, 16, 16), (50, 20, 70), (7, 256, 256), (3, 1, 1), (70000, 1, 2)])
def test_a_plain_device_stack_is_its_own_work_stack(rng, monkeypatch, dtype, shape):
    """A C-contiguous int32 / float32 stack on the GPU (CuPy, or a CUDA torch tensor) to minimise is
    launched as it is: no entry pass, no work stack, no upload; its answers are scipy's."""
    import cupy
    import torch

    import lapcli

    stack = (rng.integers(-1000, 1000, shape) if dtype == "int32" else rng.random(shape)).astype(dtype)
    expected = lapcli.solve_batch(stack, solver="scipy-batch")
    _no_pass_over_the_costs(monkeypatch)
    for given, solver in ((cupy.asarray(stack), "auto"), (torch.tensor(stack, device="cuda"), "cuda-batch")):
        plain = lapcli.solve_batch(given, solver=solver)
        assert plain.report.certified and plain.report.solver == "cuda-batch"
        assert ("GPU" in plain.report.reason) if solver == "auto" else plain.report.reason == "requested"
        assert type(plain.col_ind) is type(given) and plain.col_ind.shape == shape[:2]
        _same_answers(plain, expected, dtype)
        assert plain.report.details["kernel_ms"] > 0 and plain.report.details["h2d_ms"] == 0
    # the objectives are the caller's own, not a view of the buffer the next call copies back into
    kept = plain.objectives.copy()
    lapcli.solve_batch(cupy.asarray(stack[::-1].copy() + (1 if dtype == "int32" else 0.5)))
    np.testing.assert_array_equal(plain.objectives, kept)


@pytest.mark.gpu
def test_other_device_stacks_get_a_work_stack(rng, monkeypatch):
    """Maximise, a tall view that is not contiguous, float64, a strided view or a requested dtype: a
    work stack is built (a contiguous tall float32 or int32 stack is read through its transpose:
    tests/test_ragged_gpu.py)."""
    import cupy

    import lapcli
    import lapcli.problem

    built = []
    build = lapcli.problem.build_work
    monkeypatch.setattr(lapcli.problem, "build_work", lambda *a, **k: built.append(1) or build(*a, **k))
    stack = cupy.asarray(rng.random((20, 9, 12)).astype(np.float32))
    for given, options in ((stack, {"maximize": True}), (stack.transpose(0, 2, 1), {}), (stack[:, ::2, :], {}),
                           (stack.astype(np.float64), {}), ((stack * 100).astype(np.int64), {}),
                           (stack, {"dtype": "float64"})):
        built.clear()
        solution = lapcli.solve_batch(given, **options)
        assert solution.report.certified and built
        np.testing.assert_allclose(solution.objectives, _scipy_objectives(cupy.asnumpy(given), options.get("maximize", False)),
                                   rtol=1e-5)


@pytest.mark.gpu
def test_a_plain_stack_with_infinities_is_checked_then_solved_once_more(rng, monkeypatch):
    """The plain launch meets the infinities and says so; the pipeline then checks the entries and
    the engine runs once more with the sentinels (two launches in all), and NaN is refused as scipy
    refuses it, naming the problem."""
    import cupy

    import lapcli

    launches = []
    for name in ("certified_launch", "certified_stack"):
        real = getattr(engine, name)
        monkeypatch.setattr(engine, name, lambda *a, real=real, **k: launches.append(1) or real(*a, **k))
    for where in (cupy.asarray, np.asarray):  # a device stack, and a host one (its plain launch uploads it)
        stack = rng.random((200, 10, 10)).astype(np.float32)
        stack[7, 3, :6] = np.inf
        launches.clear()
        solution = lapcli.solve_batch(where(stack))
        assert len(launches) == 2 and solution.report.certified
        np.testing.assert_allclose(solution.objectives, _scipy_objectives(stack), rtol=1e-5)
        stack[9, 1, 1] = np.nan
        with pytest.raises(ValueError, match="invalid numeric entries: problem 9 of 200"):
            lapcli.solve_batch(where(stack))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["int32", "float32"])
@pytest.mark.parametrize("shape", [(6000, 16, 16), (40, 30, 70), (3, 1, 1)])
def test_a_plain_host_stack_is_launched_as_its_upload_is_issued(rng, monkeypatch, dtype, shape):
    """A C-contiguous int32 / float32 host stack (NumPy, or a CPU torch tensor) to minimise is
    launched as soon as its upload is issued (the 6 MB one through the staged copiers), with no
    entry pass and no work stack, and gets scipy's answers, on the host."""
    import torch

    import lapcli

    stack = (rng.integers(-1000, 1000, shape) if dtype == "int32" else rng.random(shape)).astype(dtype)
    expected = lapcli.solve_batch(stack, solver="scipy-batch")
    _no_pass_over_the_costs(monkeypatch)
    for _ in range(2):  # a process's first upload may be pinned in place, the next is staged
        for given in (stack, torch.from_numpy(stack)):
            plain = lapcli.solve_batch(given)
            assert plain.report.certified and plain.report.solver == "cuda-batch"
            assert type(plain.col_ind) is type(given) and plain.col_ind.shape == shape[:2]
            _same_answers(plain, expected, dtype)
            assert plain.report.details["h2d_ms"] > 0 and plain.report.details["kernel_ms"] > 0
    kept = plain.col_ind.clone(), plain.objectives.copy()  # not views of a buffer the next call reuses
    lapcli.solve_batch(stack[::-1].copy())
    np.testing.assert_array_equal(plain.col_ind, kept[0])
    np.testing.assert_array_equal(plain.objectives, kept[1])


@pytest.mark.gpu
def test_host_stacks_solve_on_any_current_stream(rng):
    """The staged upload's copier threads issue DMAs on a side stream that the caller's stream then
    waits for: on a non-blocking stream of the caller's, and on the per-thread default stream (whose
    handle names another stream in each thread), the launch reads the whole upload."""
    import cupy

    import lapcli

    stack = rng.integers(0, 1000, (5000, 16, 16)).astype(np.int32)  # 5 MB: the staged route
    expected = lapcli.solve_batch(stack, device=0).objectives
    for stream in (cupy.cuda.Stream(non_blocking=True), cupy.cuda.Stream.ptds):
        with stream:
            for _ in range(3):
                fresh = stack + rng.integers(0, 2)  # a new host array each time
                solution = lapcli.solve_batch(fresh)
                np.testing.assert_array_equal(solution.objectives - expected, 16 * (fresh[0, 0, 0] - stack[0, 0, 0]))


@pytest.mark.gpu
def test_a_failed_staged_copy_is_raised_once_every_copier_stopped(rng, monkeypatch):
    """A copier's error reaches the caller only once every other copier has finished writing the
    kept buffer (one fails at once, another is slow); the buffer is then free for the next upload,
    which arrives whole; a second upload from a thread whose first is pending is refused."""
    import threading
    import time

    from lapcli.cuda import staging

    data = rng.integers(-2**31, 2**31 - 1, (3_000_001,), dtype=np.int32)  # 12 MB: the staged route
    staging.upload(data)  # a process's first upload may be pinned in place
    copyto, calls, slow_done = np.copyto, [], threading.Event()
    lock = threading.Lock()

    def failing(dst, src, *args, **kwargs):
        with lock:
            calls.append(1)
            call = len(calls)
        if call == 1:
            raise RuntimeError("copy failed")
        if call == 2:
            time.sleep(0.3)
            copyto(dst, src, *args, **kwargs)
            slow_done.set()
            return None
        return copyto(dst, src, *args, **kwargs)

    monkeypatch.setattr(np, "copyto", failing)
    with pytest.raises(RuntimeError, match="copy failed"):
        staging.upload(data)
    assert slow_done.is_set()  # the slow copier finished before the error was raised
    monkeypatch.setattr(np, "copyto", copyto)
    assert np.array_equal(staging.upload(data).get(), data)
    pending = staging.start_upload(data)
    with pytest.raises(RuntimeError, match="still pending"):
        staging.start_upload(data)
    assert np.array_equal(pending.wait().get(), data)


@pytest.mark.gpu
def test_batch_results_stay_where_the_input_lives(rng):
    import cupy
    import torch

    import lapcli

    stack = rng.random((40, 12, 12)).astype(np.float32)
    cols = lapcli.batch_linear_assignment(cupy.asarray(stack))
    assert isinstance(cols, cupy.ndarray) and cols.shape == (40, 12)
    tensor = torch.tensor(stack, device="cuda")
    tcols = lapcli.batch_linear_assignment(tensor)
    assert isinstance(tcols, torch.Tensor) and tcols.is_cuda and tcols.shape == (40, 12)
    np.testing.assert_array_equal(tcols.cpu().numpy(), cupy.asnumpy(cols))
    auto = lapcli.solve_batch(stack)
    assert auto.report.solver == "cuda-batch" and "GPU" in auto.report.reason


@pytest.mark.gpu
def test_batch_infeasible_members_are_named_on_the_gpu(rng):
    import lapcli

    stack = rng.random((64, 5, 5))
    stack[[3, 17], 2, :] = np.inf
    with pytest.raises(lapcli.InfeasibleError, match="problems 3, 17 of 64"):
        lapcli.solve_batch(stack, solver="cuda-batch")


@pytest.mark.gpu
def test_only_members_with_forbidden_entries_need_room_for_their_marker_on_the_gpu():
    """The work stack on CuPy: a member holding no forbidden entry needs no marker above its spread;
    one holding some whose spread leaves no room is refused by name (tests/test_batch.py on NumPy)."""
    import cupy

    import lapcli

    forbidden = np.array([[1.0, np.inf], [np.inf, 1.0]])
    for stack in (np.stack([forbidden, [[1e308, -1e307], [0.0, 1.0]]]),
                  np.stack([forbidden, [[3e38, -3e38], [0.0, 1.0]]]).astype(np.float32)):
        solution = lapcli.solve_batch(cupy.asarray(stack), solver="cuda-batch")
        np.testing.assert_allclose(cupy.asnumpy(solution.objectives), _scipy_objectives(stack, False), rtol=1e-7)
    with pytest.raises(ValueError, match="^problem 1 of 3: finite costs span too wide a range to mark"):
        lapcli.solve_batch(cupy.asarray(np.stack([forbidden, [[1e308, np.inf], [-1e308, 1.0]], forbidden])),
                           solver="cuda-batch")


def test_a_members_recheck_for_forbidden_entries_is_finite_and_whole():
    """Members with forbidden entries are rechecked at k · max|c| · 2^-50 of their finite costs, the
    min slack and the assigned pairs' both; scaled before the product, so costs near 1.8e308 keep a
    tolerance that can still refuse a slack."""
    from lapcli.engines.cuda.batch_collect import _recheck_with_scale

    stats = np.zeros((5, 4))
    stats[1], stats[4] = [-1e300, -1e290, -1.0, 0.0], 1  # min slack per member; 1: proved by the kernel
    stats[2, 3] = 1.0  # the last member's max assigned slack: within the kernel's tolerance, not the eps
    _recheck_with_scale(stats, np.array([1.5e308, 1.5e308, 1.0, 1.0]), 2)
    np.testing.assert_allclose(stats[3], [1.5e308 * 2.0**-49] * 2 + [2.0**-49] * 2)
    assert stats[4].tolist() == [0, 1, 0, 0]


@pytest.mark.gpu
def test_the_kernels_tolerance_for_costs_near_the_largest_double_is_finite():
    """The batch kernel's own k · max|c| · 2^-50, scaled first as on the host: a product that
    overflowed would certify any slack."""
    import cupy

    import lapcli

    forbidden = np.array([[1.0, np.inf], [np.inf, 1.0]])
    for stack in (np.array([[[1e308, -1e307], [0.0, 1.0]]] * 3),  # the kernel's tolerance
                  np.stack([forbidden, [[1e308, -1e307], [0.0, 1.0]]])):  # the host's recheck
        for xp in (np, cupy):
            solution = lapcli.solve_batch(xp.asarray(stack), solver="cuda-batch")
            tolerance = solution.report.certificate["tolerance"]
            assert solution.report.certified and 0 < tolerance < 1e295
            np.testing.assert_allclose(cupy.asnumpy(solution.objectives), _scipy_objectives(stack, False))


@pytest.mark.gpu
@pytest.mark.parametrize("on_gpu", [False, True])
def test_cuda_batch_finds_bad_entries_without_a_pre_pass(rng, on_gpu):
    """cuda-batch skips the finiteness pass: its finish kernel flags NaN and infinities, and the
    call then checks them as scipy would (one bad entry in one problem of many is enough)."""
    import cupy

    import lapcli

    xp = cupy if on_gpu else np
    for bad, maximize in ((np.nan, False), (-np.inf, False), (np.inf, True), (np.nan, True)):
        stack = rng.random((500, 24, 24))
        stack[321, 23, 7] = bad
        with pytest.raises(ValueError, match="invalid numeric entries"):
            lapcli.solve_batch(xp.asarray(stack), solver="cuda-batch", maximize=maximize)
    stack = rng.random((500, 24, 24)).astype(np.float32)
    stack[321, 5, :20] = np.inf  # allowed: forbidden pairs, found after the optimistic launch
    solution = lapcli.solve_batch(xp.asarray(stack), solver="cuda-batch")
    np.testing.assert_allclose(solution.objectives, _scipy_objectives(stack, False), rtol=1e-5)
    assert solution.report.certified


@pytest.mark.gpu
@pytest.mark.parametrize("mode", [1, 2])
@pytest.mark.parametrize("shape", [(8, 12, 12), (8, 5, 40), (4, 300, 300)])
def test_the_fused_certificate_refuses_a_spoilt_answer(rng, monkeypatch, mode, shape):
    """The solve launch proves each problem itself: spoil problem 3's answer inside the kernel (two
    rows' columns swapped, or one column given twice) and only problem 3 must fail its proof, and
    solve_batch must refuse the whole batch naming it."""
    import functools

    import cupy

    import lapcli

    stack = rng.random(shape)
    run = cb.certified_stack(cupy.asarray(stack), n_out=shape[1], transposed=False, fault=(3, mode))
    summary = run.summary.get()
    proved = run.stats[cb.STATS["STAT_PROVED"]].get()
    assert int(summary[cb.SUMMARY["SUMMARY_NOT_PROVED"]]) == 1 and list(np.flatnonzero(proved != 1)) == [3]
    clean = cb.certified_stack(cupy.asarray(stack), n_out=shape[1], transposed=False)
    assert int(clean.summary.get()[1]) == 0 and np.all(clean.stats[4].get() == 1)
    spoilt = functools.partial(cb.certified_stack, fault=(3, mode))
    monkeypatch.setattr(engine, "certified_stack", spoilt)  # the engine's general path (a float64 stack)
    with pytest.raises(lapcli.SolverError, match=f"failed on problems 3 of {shape[0]}: their optimality certificate"):
        lapcli.solve_batch(cupy.asarray(stack), solver="cuda-batch")


@pytest.mark.parametrize("nbytes, copiers, rounds", [(10_240_000, 4, 1), (32_768_001, 4, 2), (134_217_728, 8, 4), (7, 4, 2)])
def test_the_staged_plan_covers_every_byte_once_round_by_round(nbytes, copiers, rounds):
    """staging.staged_plan: the copiers' pieces tile the array exactly, each copier takes at most one
    piece per round, and round r's pieces all lie before round r + 1's (their DMAs go first)."""
    from lapcli.cuda.staging import staged_plan

    plan = staged_plan(nbytes, copiers, rounds)
    assert len(plan) == copiers and all(len(pieces) <= rounds for pieces in plan)
    pieces = sorted(piece for mine in plan for piece in mine)
    assert pieces[0][0] == 0 and pieces[-1][1] == nbytes
    assert all(a[1] == b[0] and a[0] < a[1] for a, b in zip(pieces, pieces[1:]))
    for r in range(rounds - 1):
        this_round = [mine[r] for mine in plan if len(mine) > r]
        next_round = [mine[r + 1] for mine in plan if len(mine) > r + 1]
        assert not next_round or max(end for _, end in this_round) <= min(begin for begin, _ in next_round)


def test_staging_asks_for_whole_rows_keeps_one_wave_and_opts_in_once(monkeypatch):
    """staging_bytes on an H100's numbers (132 SMs, 227 KB a block, 228 KB a multiprocessor): a
    member's rows of an odd pitch, whole rows only; capped so that the blocks a wave needs fit a
    multiprocessor; nothing above STAGE_MAX_COLUMNS or when staging is off; the kernel's opt-in
    asked once, before it is marked."""
    from types import SimpleNamespace

    import lapcli.cuda.driver as driver

    monkeypatch.setattr(driver, "open_gpu", lambda device: SimpleNamespace(sms=132, max_shared=232448,
                                                                           shared_per_sm=233472))
    opted = []

    class Kernel:
        def static_shared(self):
            return 10352

        def allow_shared(self, size):
            assert not hasattr(self, "static_bytes")  # marked only once the opt-in holds
            opted.append(size)

    kernel = Kernel()
    row = 301 * 4  # 300 columns: pitch 301
    assert cb.staging_bytes(kernel, 0, 32, 50, 300, 4, 128) == 50 * row  # whole member, one block an SM
    assert opted == [232448 - 10352]
    assert cb.staging_bytes(kernel, 0, 16, 300, 300, 4, 128) == (232448 - 10352) // row * row  # in part
    two_per_sm = 233472 // 2 - cb.SHARED_RESERVED - 10352
    assert cb.staging_bytes(kernel, 0, 208, 100, 300, 4, 128) == two_per_sm // row * row  # 208 blocks: 2 an SM
    assert cb.staging_bytes(kernel, 0, 8, 20, 100, 4, 32) == 2 * 20 * 101 * 4  # two 32-thread groups a block
    assert cb.staging_bytes(kernel, 0, 16, 100, 900, 4, 256) == 0  # wider than STAGE_MAX_COLUMNS
    monkeypatch.setattr(cb, "STAGE_MEMBERS", False)
    assert cb.staging_bytes(kernel, 0, 32, 50, 300, 4, 128) == 0
    assert opted == [232448 - 10352]  # asked once


def test_certified_arguments_name_the_result_views_the_launchers_read():
    """batch_abi.certified_arguments (both certified launchers' argument tuple) points the kernel at
    the same slots CertifiedStack reads its objectives, columns, stats and status from."""
    from lapcli.cuda.batch_abi import certified_arguments, certified_slots

    batch, n_out = 5, 7
    buffer = np.zeros(certified_slots(batch, n_out), dtype=np.int64)
    base = buffer.__array_interface__["data"][0]
    arguments = dict(zip((name for name, _ in cb.KERNEL_PARAMETERS),
                         certified_arguments(base, batch, 3, 9, n_out=n_out, exact=True, members=11, flat_out=13)))
    run = cb.CertifiedStack(buffer, batch, n_out, (), {})

    def at(view):
        return view.__array_interface__["data"][0]

    assert arguments["summary"] == at(run.summary) and arguments["objective_out"] == at(run.objective)
    assert arguments["out"] == at(run.col_ind) and arguments["stats"] == at(run.stats)
    assert arguments["status"] == at(run.status) and arguments["launch_start"] == base
    assert (arguments["B"], arguments["n_stack"], arguments["m_stack"], arguments["n_out"]) == (batch, 3, 9, n_out)
    assert (arguments["exact"], arguments["members"], arguments["flat_out"], arguments["cost"]) == (1, 11, 13, 0)
    assert run.status.size == batch and at(run.status) + 4 * batch <= base + buffer.nbytes
