"""Ragged batches: a list of matrices of several shapes, a padded stack with sizes, and a matcher's
block (lapcli.match) agree with a scipy loop, on every engine; the padding rules of the GPU path
(lapcli.ragged.pack / unpack) are checked here on the CPU through the scipy batch engine."""

import dataclasses
import itertools

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment as scipy_lsa

import lapcli
from lapcli import ragged
from lapcli.errors import InfeasibleError, LapInputError, LapTypeError


def random_members(rng, count, largest, kind="int", forbidden=False):
    matrices = []
    for _ in range(count):
        shape = tuple(int(s) for s in rng.integers(0, largest + 1, 2))
        matrix = rng.integers(-40, 60, shape) if kind == "int" else rng.random(shape)
        if forbidden and matrix.size > 1 and kind == "float":
            matrix[0, 0] = np.inf  # one forbidden pair: every member stays feasible
        matrices.append(matrix)
    return matrices


def assert_loop_optimum(matrices, col_ind, objectives, maximize=False):
    """Each member's answer is a full matching of scipy's optimal value."""
    assert len(col_ind) == len(matrices) == len(objectives)
    for matrix, cols, objective in zip(matrices, col_ind, objectives):
        cols = np.asarray(cols)
        assert cols.shape == (matrix.shape[0],)
        rows = np.flatnonzero(cols >= 0)
        assert len(rows) == min(matrix.shape) and len(set(cols[rows].tolist())) == len(rows)
        expected = matrix[scipy_lsa(matrix, maximize=maximize)].sum() if matrix.size else 0
        assert matrix[rows, cols[rows]].sum() == pytest.approx(expected)
        assert objective == pytest.approx(expected)


def scipy_columns(matrix) -> list:
    """scipy's column of each row of ``matrix``, −1 where none."""
    cols = np.full(matrix.shape[0], -1)
    rows, taken = scipy_lsa(matrix)
    cols[rows] = taken
    return cols.tolist()


@pytest.fixture
def every_member_shared(monkeypatch, threads_only):
    """The CPU member loop's two threads share every member, however small (by default only those
    whose solve outlasts a GIL hand-off: lapcli.engines.cpu.member_threads)."""
    from lapcli.engines.cpu import member_threads

    monkeypatch.setattr(member_threads, "SHARED_FROM", 0)


@pytest.mark.parametrize("kind", ["int", "float"])
@pytest.mark.parametrize("maximize", [False, True])
@pytest.mark.parametrize("count", [80, 600])  # 600: the CPU engine's float members on two threads
def test_a_list_of_any_shapes_matches_a_scipy_loop(rng, kind, maximize, count, request):
    if count > 80:
        request.getfixturevalue("every_member_shared")
    matrices = random_members(rng, count, 9, kind, forbidden=not maximize)
    if count > 80:  # mixed dtypes: float32 and integer members among the others
        matrices[::7] = [m.astype(np.float32) for m in matrices[::7]]
        matrices[::11] = [rng.integers(-40, 60, m.shape) for m in matrices[::11]]
    solution = lapcli.solve_batch(matrices, maximize=maximize)
    assert_loop_optimum(matrices, solution.col_ind, solution.objectives, maximize)
    assert solution.report.batch == count and "several shapes" in solution.report.reason


def test_integer_members_float64_holds_are_converted_at_once_and_wide_ones_kept_exact(rng):
    """The CPU's ragged loop gives scipy float64 copies of integer members made in one pass where
    float64 holds every cost and path exactly; where one member is too wide, each member is judged
    alone (reduced exactly first): the optima stay exact either way."""
    from lapcli.engines.cpu.member_values import float64_copies

    narrow = [rng.integers(-1000, 1000, (int(r), int(c))) for r, c in rng.integers(1, 30, (300, 2))]
    copies = float64_copies(narrow)
    assert all(copy.dtype == np.float64 and np.array_equal(copy, m) for copy, m in zip(copies, narrow))
    assert float64_copies([*narrow[:3], narrow[3].astype(np.int32)]) is None  # mixed dtypes: one by one
    offset = 2**60  # float64 rounds these costs to multiples of 256: scipy on them would tie and err
    wide = [m + offset for m in narrow]
    assert float64_copies(wide) is None
    for maximize in (False, True):
        col_ind = lapcli.batch_linear_assignment(wide, maximize=maximize)
        for matrix, small, cols in zip(wide, narrow, col_ind):
            rows = np.flatnonzero(cols >= 0)
            best = small[scipy_lsa(small, maximize=maximize)].sum()  # a constant shift keeps the optima
            assert sum(map(int, matrix[rows, cols[rows]])) == int(best) + offset * len(rows)  # Python ints: no overflow
    assert_loop_optimum(narrow, lapcli.batch_linear_assignment(narrow), lapcli.solve_batch(narrow).objectives)


@pytest.mark.parametrize("kind", ["int", "float"])
@pytest.mark.parametrize("maximize", [False, True])
def test_the_padded_work_stack_keeps_every_members_optimum(rng, kind, maximize):
    """pack → the batch pipeline on the padded stack → unpack: tall members transposed, dummy rows,
    forbidden padding columns (+inf, or one above the largest cost for integers) never taken."""
    matrices = random_members(rng, 60, 8, kind, forbidden=not maximize)
    members = ragged.from_list(matrices)
    packed = ragged.pack(members, maximize)
    assert packed.stack.shape[1] <= packed.stack.shape[2]
    solved = lapcli.solve_batch(packed.stack, maximize=maximize, solver="scipy-batch")
    col_ind = ragged.unpack(packed, solved.col_ind, members)
    assert_loop_optimum(matrices, [col_ind[b, :m.shape[0]] for b, m in enumerate(matrices)], solved.objectives,
                        maximize)


def test_integer_padding_widens_to_int64_when_int32_cannot_hold_it(rng):
    matrices = [rng.integers(0, 2**30, (3, 5)).astype(np.int32), rng.integers(0, 2**30, (4, 2)).astype(np.int32)]
    matrices[0][1, 1] = 2**31 - 1  # the padding, one above it, needs int64
    members = ragged.from_list(matrices)
    packed = ragged.pack(members, maximize=False)
    assert packed.stack.dtype == np.int64
    solved = lapcli.solve_batch(packed.stack, solver="scipy-batch")
    col_ind = ragged.unpack(packed, solved.col_ind, members)
    assert_loop_optimum(matrices, [col_ind[b, :m.shape[0]] for b, m in enumerate(matrices)], solved.objectives)
    with pytest.raises(LapInputError, match="too wide to pad"):
        ragged.pack(ragged.from_list([np.array([[2**63 - 1, 0]]), np.array([[0, 1, 2]])]), maximize=False)
    with pytest.raises(LapInputError, match="too wide to pad"):  # a host list of uint64 beyond int64
        ragged.pack(ragged.from_list([np.array([[2**63 + 5, 1]], dtype=np.uint64),
                                      np.array([[1], [2]], dtype=np.uint64)]), maximize=False)


def test_an_int_dtype_refused_by_the_packed_stack_names_the_members_range():
    """The packed stack holds dummy rows' 0 and the padding one past the largest cost: a refusal of
    dtype int32 quotes the members' own range, and says when the padding alone does not fit."""
    with pytest.raises(LapInputError, match=r"^costs lie in \[5, 1099511627776\] and do not fit int32"):
        lapcli.solve_batch([np.array([[5, 2**40]]), np.array([[7, 8], [9, 10]])], dtype="int32")
    with pytest.raises(LapInputError, match=r"^costs lie in \[1, 2147483647\], but a ragged batch pads .* one past"):
        lapcli.solve_batch([np.array([[1, 2**31 - 1]]), np.array([[5]])], dtype="int32")
    with pytest.raises(LapInputError, match=r"^the costs negated to maximise lie in \[-5, 2147483648\] and do not"):
        lapcli.solve_batch([np.array([[-2**31, 3]]), np.array([[5]])], dtype="int32", maximize=True)
    with pytest.raises(LapInputError, match=r"^costs lie in \[5, 1099511627776\] and do not fit int32"):  # floats
        lapcli.solve_batch([np.array([[5.0, 2.0**40]]), np.array([[7.0, 8], [9, 10]])], dtype="int32")


def test_the_three_forms_give_the_same_answers(rng):
    """A list, a padded stack with sizes (garbage, NaN included, outside each corner) and DETR's
    block with target counts describe the same problems and get the same assignments."""
    batch, queries = 12, 7
    counts = rng.integers(0, 10, batch)
    block = rng.random((batch, queries, int(counts.sum())))
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    matrices = [block[i, :, s:s + k] for i, (s, k) in enumerate(zip(starts, counts))]
    listed = lapcli.solve_batch(matrices)
    padded = np.full((batch, queries, int(counts.max())), np.nan)
    for i, matrix in enumerate(matrices):
        padded[i, :, :matrix.shape[1]] = matrix
    sized = lapcli.solve_batch(padded, sizes=(np.full(batch, queries), counts))
    pairs = lapcli.match(block, counts)
    assert sized.col_ind.shape == (batch, queries)
    for i, matrix in enumerate(matrices):
        assert np.array_equal(listed.col_ind[i], sized.col_ind[i])
        rows, cols = pairs[i]
        assert rows.dtype == cols.dtype == np.int64 and np.all(np.diff(rows) > 0)  # sorted by query, as scipy
        expected_rows, expected_cols = scipy_lsa(matrix)
        assert matrix[rows, cols].sum() == pytest.approx(matrix[expected_rows, expected_cols].sum())
        assert np.array_equal(cols, listed.col_ind[i][rows])
    assert np.allclose(listed.objectives.astype(float), sized.objectives.astype(float))


def test_batch_linear_assignment_takes_sizes_and_lists(rng):
    stack = rng.integers(0, 50, (4, 6, 6))
    rows, cols = np.array([6, 2, 0, 5]), np.array([3, 6, 4, 5])
    col_ind = lapcli.batch_linear_assignment(stack, sizes=(rows, cols))
    assert col_ind.shape == (4, 6)
    for b in range(4):
        matrix = stack[b, :rows[b], :cols[b]]
        assert np.all(col_ind[b, rows[b]:] == -1)
        assert_loop_optimum([matrix], [col_ind[b, :rows[b]]], [matrix[scipy_lsa(matrix)].sum() if matrix.size else 0])
    listed = lapcli.batch_linear_assignment([stack[0, :2, :3], stack[1]])
    assert [len(c) for c in listed] == [2, 6]


@pytest.mark.parametrize("form", ["list", "threaded list", "sizes", "stack"])
def test_objectives_false_gives_the_same_columns_and_no_sums(rng, form, every_member_shared):
    """batch_linear_assignment returns columns only and asks solve_batch for no objectives: the
    columns are those of a call with them, and none is summed (None)."""
    count = 600 if form == "threaded list" else 30  # the CPU's member loop splits from 256 members
    if form in ("list", "threaded list"):
        costs = [rng.random((int(r), int(c))) for r, c in rng.integers(1, 12, (count, 2))]
        options = {}
    else:
        costs = rng.integers(0, 99, (count, 7, 9))
        options = {"sizes": (rng.integers(0, 8, count), rng.integers(0, 10, count))} if form == "sizes" else {}
    full = lapcli.solve_batch(costs, **options)
    bare = lapcli.solve_batch(costs, objectives=False, **options)
    assert bare.objectives is None and bare.report.objectives is None and full.objectives is not None
    if isinstance(full.col_ind, list):
        assert all(np.array_equal(a, b) for a, b in zip(full.col_ind, bare.col_ind))
    else:
        assert np.array_equal(full.col_ind, bare.col_ind)
    assert len(full.objectives) == count


def test_a_list_of_one_shape_comes_back_in_its_own_library(rng):
    torch = pytest.importorskip("torch")
    matrices = [torch.rand((4, 6), generator=torch.Generator().manual_seed(b)) for b in range(3)]
    col_ind = lapcli.batch_linear_assignment(matrices)
    assert isinstance(col_ind, torch.Tensor) and col_ind.shape == (3, 4)
    assert_loop_optimum([m.numpy() for m in matrices], col_ind.numpy(),
                        [m.numpy()[scipy_lsa(m.numpy())].sum() for m in matrices])
    assert lapcli.batch_linear_assignment([[[1, 2], [3, 0]], [[0, 5], [5, 0]]]).tolist() == [[0, 1], [0, 1]]


def test_torch_members_come_back_as_tensors():
    torch = pytest.importorskip("torch")
    generator = torch.Generator().manual_seed(5)
    matrices = [torch.rand((r, c), generator=generator) for r, c in ((3, 5), (6, 2), (4, 4))]
    col_ind = lapcli.batch_linear_assignment(matrices)
    assert all(isinstance(c, torch.Tensor) for c in col_ind)
    assert_loop_optimum([m.numpy() for m in matrices], [c.numpy() for c in col_ind],
                        [m.numpy()[scipy_lsa(m.numpy())].sum() for m in matrices])
    block = torch.rand((2, 5, 7), generator=generator)
    pairs = lapcli.match(block, torch.tensor([3, 4]))
    assert all(isinstance(r, torch.Tensor) and r.dtype == torch.int64 for r, _ in pairs)
    assert [len(r) for r, _ in pairs] == [3, 4]


@pytest.mark.parametrize("count", [6, 400])  # 400: solved on two threads, bad members in both halves
def test_bad_members_are_named(rng, count, every_member_shared):
    matrices = [rng.random((3, 3)) for _ in range(count - 1)]
    matrices.append(rng.random((2, 4)))
    bad = [3] if count == 6 else [3, 390]
    for b in bad:
        matrices[b][1, :] = np.inf  # a row with no finite cost: the member is infeasible
    named = "problem 3 of 6" if count == 6 else "problems 3, 390 of 400"
    with pytest.raises(InfeasibleError, match=f"infeasible: {named}"):
        lapcli.solve_batch(matrices)
    for b in bad:
        matrices[b][1, :] = np.nan
    with pytest.raises(ValueError, match=f"invalid numeric entries: {named}"):
        lapcli.solve_batch(matrices)


@pytest.mark.parametrize("count", [30, 300])  # 300: the CPU's member loop on two threads
def test_a_lists_columns_are_scipys_row_by_row(rng, count):
    """Each member's own int64 array, scipy's column of each row: tall members' unassigned rows and
    empty members' rows −1; a certified call checks them laid out padded."""
    shapes = [(int(r), int(c)) for r, c in rng.integers(1, 41, (count, 2))] + [(30, 5), (5, 30), (0, 4), (4, 0)]
    matrices = [rng.random(shape) for shape in shapes]
    col_ind = lapcli.batch_linear_assignment(matrices)
    assert all(cols.dtype == np.int64 for cols in col_ind)
    assert [cols.tolist() for cols in col_ind] == list(map(scipy_columns, matrices))
    certified = lapcli.solve_batch(matrices, certify=True)
    assert certified.report.certified and [c.tolist() for c in certified.col_ind] == [c.tolist() for c in col_ind]


def test_a_threaded_list_shares_its_large_members_and_keeps_the_small_ones(rng, monkeypatch, threads_only):
    """The helper thread solves half of the members whose work is at least SHARED_FROM, none of the
    others (two threads solving small members mostly wait on each other for the GIL)."""
    import threading

    from lapcli.engines.cpu import member_threads

    helped = []
    solved = member_threads.solved_here

    def spy(indices, *args, **options):
        if threading.current_thread().name.startswith("lapcli-cpu"):
            helped.extend(indices)
        return solved(indices, *args, **options)

    monkeypatch.setattr(member_threads, "solved_here", spy)
    matrices = [rng.random((int(r), int(c))) for r, c in rng.integers(1, 41, (400, 2))]
    solution = lapcli.solve_batch(matrices)
    large = [b for b, m in enumerate(matrices) if m.size * min(m.shape) >= member_threads.SHARED_FROM]
    assert solution.report.details["threads"] == 2 and set(helped) < set(large)
    assert len(helped) == (len(large) + 1) // 2
    assert_loop_optimum(matrices, solution.col_ind, solution.objectives)


@pytest.mark.parametrize("path", ["threads_only", "worker_process"])
@pytest.mark.parametrize("layout", ["C", "transposed"])
def test_a_threaded_list_refuses_a_spread_float64_overflows_and_solves_huge_ones(rng, layout, path, request):
    """Near ±1e308 scipy's sums overflow and its answer is not optimal: a long list (its spread
    checked by the helper thread while the caller solves, or by the caller beside the worker
    process: tests/test_member_process.py puts such a member in the worker's share) is refused as
    a short one is, whichever member it is and however laid out; huge costs whose rows' spreads
    fit are solved."""
    request.getfixturevalue(path)
    matrices = [rng.random((int(r), int(c))) for r, c in rng.integers(16, 41, (300, 2))]
    if layout == "transposed":  # not C-contiguous: the values are gathered another way
        matrices = [m.T for m in matrices]
    huge = np.array([[-9., -4., 2.], [-9., -8., 9.], [8., -9., -3.]]) * 1e307
    for at in (0, 1, 150, 299):
        listed = list(matrices)
        listed[at] = huge if layout == "C" else huge.T.copy().T
        with pytest.raises(LapInputError, match="overflows float64"):
            lapcli.batch_linear_assignment(listed)
        listed[at] = huge / 10  # a row spans 1.8e307: fits
        col_ind = lapcli.batch_linear_assignment(listed)
        assert col_ind[at].tolist() == scipy_lsa(huge / 10)[1].tolist() == [0, 1, 2]
        assert col_ind[at - 1].tolist() == scipy_columns(listed[at - 1])


def exact_columns(matrix) -> list:
    """The optimal column of each row of a small square integer matrix, by trying every
    permutation in Python's integers (scipy's float64 rounds costs past 2^53)."""
    import itertools

    values = np.asarray(matrix).astype(object)
    best = min(itertools.permutations(range(len(values))), key=lambda p: sum(values[i, j] for i, j in enumerate(p)))
    return list(best)


def test_a_list_of_one_shape_mixing_integers_and_floats_solves_each_exactly():
    """A list of one shape is solved as one stack, but integers beside floats share no exact type:
    NumPy's float64 rounds int64 past 2^53, torch stacks int32 beside float32 as float32 (2^25 + 1
    rounds) and beside float16 as float16 (2049 rounds, 70000 is inf: a feasible member was
    called infeasible). Each member is solved in its own dtype; the answer is still one (B, n)
    array of the members' library."""
    cases = [[np.array([[2**60 + 1, 2**60], [2**60, 2**60 + 3]]), np.zeros((2, 2))]]
    torch = None
    try:
        import torch
    except ImportError:
        pass
    if torch is not None:
        cases += [[torch.tensor([[2**25 + 1, 2**25], [2**25, 2**25 + 1]], dtype=torch.int32), torch.zeros(2, 2)],
                  [torch.tensor([[2049, 2048], [2048, 2049]], dtype=torch.int16), torch.zeros(2, 2, dtype=torch.float16)],
                  [torch.tensor([[70000, 80000], [1, 2]], dtype=torch.int32), torch.zeros(2, 2, dtype=torch.float16)]]
    for matrices in cases:
        expected = exact_columns(matrices[0])
        solution = lapcli.solve_batch(matrices)
        for found in (solution.col_ind, lapcli.batch_linear_assignment(matrices)):
            assert type(found) is type(matrices[0]) and tuple(found.shape) == (2, 2)
            assert found[0].tolist() == expected and sorted(found[1].tolist()) == [0, 1]
        assert int(solution.objectives[0]) == sum(int(matrices[0][i, j]) for i, j in enumerate(expected))


def test_nested_lists_in_a_list_of_one_shape_keep_their_own_exact_type():
    """A nested list beside another member is read as NumPy reads it alone (int64 past 2^53 stays
    int64, ints past 2^63 uint64), not as one float64 stack of the whole list, which rounded the
    first member's costs and chose its diagonal, 4 above the optimum."""
    wide = np.array([[2**55 + 3, 2**55 + 1], [2**55 + 1, 2**55 + 3]])
    top = [[2**64 - 1, 2**64 - 2], [2**64 - 2, 2**64 - 2]]
    for matrices in ([wide.tolist(), [[0.0, 0.0], [0.0, 0.0]]], [wide, [[0.0, 0.0], [0.0, 0.0]]],
                     [top, [[-1, 0], [0, -1]]]):
        first = np.asarray(matrices[0])
        expected = exact_columns(first)
        solution = lapcli.solve_batch(matrices)
        for found in (solution.col_ind, lapcli.batch_linear_assignment(matrices)):
            assert found[0].tolist() == expected
        assert int(solution.objectives[0]) == sum(int(first[i, j]) for i, j in enumerate(expected))


def test_auto_leaves_members_with_no_exact_common_type_to_scipy(monkeypatch):
    """Where a GPU could take a list, members that share no exact type to pack in (int64 past 2^53
    beside floats) are still solved by scipy, each in its own dtype; the others go to the GPU."""
    from lapcli.engines import auto

    monkeypatch.setattr(auto, "cuda_status", lambda: (True, "a GPU (test)"))
    monkeypatch.setattr(auto, "search_kernel_status", lambda: (True, ""))
    assert auto.choose_ragged(2, 2)[0] == "cuda-batch"
    assert auto.choose_ragged(2, 2, packable=False)[0] == "scipy-batch"


def test_sizes_read_only_each_problems_corner(rng):
    """Unsigned 64-bit padding past 2^63 beside small problems is not read, so not refused, with
    a work dtype asked for too (the packed route, which a GPU always takes); a problem's own
    entry past 2^63 still is."""
    stack = np.full((2, 3, 3), 2**64 - 1, dtype=np.uint64)
    stack[0, :2, :2] = [[4, 1], [2, 0]]
    stack[1, :3, :2] = [[3, 1], [1, 3], [5, 5]]
    sizes = ([2, 3], [2, 2])
    expected = [[1, 0, -1], [1, 0, -1]]
    assert lapcli.batch_linear_assignment(stack, sizes=sizes).tolist() == expected
    for dtype in ("int32", "int64", "float64"):
        assert lapcli.solve_batch(stack, sizes=sizes, dtype=dtype).col_ind.tolist() == expected
    stack[0, 0, 0] = 2**63
    with pytest.raises(LapInputError, match="too wide"):
        lapcli.solve_batch(stack, sizes=sizes, dtype="int64")
    for wrong in (3, {0: [1, 1], 1: [1, 1]}, "ab", {2, 3}, np.array(None), np.int64(2)):  # a set has no order
        with pytest.raises(LapInputError, match="sizes must be"):
            lapcli.batch_linear_assignment(stack, sizes=wrong)


def test_torch_sizes_are_sizes_not_tensors():
    """A torch.Size is a tuple of ints (``sizes=targets.shape``), not a tensor: it was read as one
    (AttributeError: no attribute 'cpu'); a 0-d tensor is refused as other non-pairs are."""
    torch = pytest.importorskip("torch")
    block = np.random.default_rng(3).random((2, 5, 6))
    assert [c.tolist() for _, c in lapcli.match(block, torch.Size([2, 4]))] == \
        [c.tolist() for _, c in lapcli.match(block, (2, 4))]
    sizes = (torch.Size([4, 5]), torch.Size([5, 6]))
    assert lapcli.batch_linear_assignment(block, sizes=sizes).tolist() == \
        lapcli.batch_linear_assignment(block, sizes=([4, 5], [5, 6])).tolist()
    with pytest.raises(LapInputError, match="sizes must be"):
        lapcli.batch_linear_assignment(block, sizes=torch.tensor(1.0))
    for sizes in (torch.Size([2, 2]), [torch.Size([1, 2]), torch.Size([3, 4])]):  # (the list: no 'is_cuda')
        with pytest.raises(LapInputError, match="every problem of a list must be a matrix"):
            lapcli.batch_linear_assignment(sizes)


def test_malformed_ragged_input_is_refused_with_lapclis_error(rng):
    torch = pytest.importorskip("torch")
    with pytest.raises(LapInputError, match="one array library"):
        lapcli.solve_batch([np.zeros((2, 2)), torch.zeros((3, 2))])
    with pytest.raises(LapInputError, match="rows must be 3 integers"):
        lapcli.solve_batch(np.zeros((3, 4, 4)), sizes=([1, 2], [1, 2, 3]))
    with pytest.raises(LapInputError, match="exceed"):
        lapcli.solve_batch(np.zeros((2, 4, 4)), sizes=([5, 1], [1, 1]))
    with pytest.raises(LapInputError, match="sum to 5"):
        lapcli.match(np.zeros((2, 3, 6)), [2, 3])
    with pytest.raises(LapInputError, match=f"sum to {4 * (2**62 - 1) + 9}"):  # 5 in int64, which wraps round
        lapcli.match(np.zeros((5, 1, 5), dtype=np.int8), [2**62 - 1] * 4 + [9])
    with pytest.raises(LapInputError, match=r"every problem of a list must be a matrix \(2-D\); problem 1 is 1-D"):
        lapcli.solve_batch([np.zeros((2, 2)), np.zeros(3)])
    # a sense per problem read as entries ("invalid numeric entries: problems 0, 1 of 2")
    for maximize in (np.array([True, False]), [True, False]):
        for costs in ([np.zeros((2, 2)), np.zeros((3, 2))], np.zeros((2, 3, 3))):
            with pytest.raises(LapInputError, match="maximize is one True or False for every problem of a call"):
                lapcli.solve_batch(costs, maximize=maximize)
            with pytest.raises(LapInputError, match="maximize is one True or False for every problem of a call"):
                lapcli.batch_linear_assignment(costs, maximize=maximize)  # the scipy loop's route too
    # named as the caller's list, not as the stack made of it ("got a 1-D array", "a 2-D array")
    with pytest.raises(LapInputError, match="an empty list of problems"):
        lapcli.batch_linear_assignment([])
    with pytest.raises(LapInputError, match="every problem of a list must be a matrix"):
        lapcli.batch_linear_assignment([np.zeros(3), np.zeros(3)])
    # sizes of the wrong kind name what is wrong (a dict once met CuPy's .get, 2^64 − 1 wrapped to −1)
    for sizes, message in (([1.5, 4.5], "must be integers"), ({"a": 1}, "2 integers"), ([[3], [3]], "shape"),
                           (np.array([2**64 - 1, 7], dtype=np.uint64), "sides of arrays"), ([7, -1], "negative"),
                           (_needing_grad([3.0, 2.0]), "must be integers"),
                           ([True, 3], "must be integers, got bool"), ((2, np.True_), "must be integers, got bool")):
        with pytest.raises(LapInputError, match=message):
            lapcli.match(np.zeros((2, 3, 6)), sizes)
    with pytest.raises(LapInputError, match="rows must be integers, got bool"):  # NumPy made [True, 2] sides 1, 2
        lapcli.solve_batch(np.zeros((2, 2, 2)), sizes=([True, 2], [2, 2]))
    with pytest.raises(LapInputError, match="must be integers, got bool"):  # a 0-d boolean array among them too
        lapcli.match(np.zeros((2, 3, 6)), [np.array(True), 5])
    torch = pytest.importorskip("torch", reason="torch is an optional peer")
    with pytest.raises(LapInputError, match="must be integers, got bool"):  # NumPy read tensor(True) as 1
        lapcli.match(np.zeros((2, 3, 6)), [torch.tensor(True), 5])
    from lapcli.engines.cuda import batch_torch  # the CUDA tensors' lean route leaves them to the refusal above

    assert batch_torch._integers([True, 3], 2) is None and batch_torch._integers((2, np.True_), 2) is None
    assert batch_torch._integers([2, 3], 2).tolist() == [2, 3]


def _needing_grad(values):
    """A float tensor that requires grad (its .numpy() raises torch's RuntimeError), or the list
    where torch is not installed."""
    try:
        import torch
    except ImportError:
        return values
    return torch.tensor(values, requires_grad=True)


def test_a_matcher_block_of_no_images_gives_no_pairs():
    """B = 0: no pairs in every library (NumPy's split at no index returned the whole array as one)."""
    torch = pytest.importorskip("torch")
    assert lapcli.match(np.zeros((0, 3, 0)), []) == []
    assert lapcli.match(torch.zeros((0, 3, 0)), torch.zeros(0, dtype=torch.int64)) == []


def test_the_drop_ins_return_their_pairs_without_a_certificate_they_would_throw_away(rng, monkeypatch):
    """match and batch_linear_assignment(sizes=...) return pairs or columns only: on the CPU no dual
    recovery runs for them (it took 5× the solve of 8 images of 300 × 40), and their sense is checked."""
    from lapcli import pipeline

    def recovered(*args, **kwargs):
        raise AssertionError("a certificate the call throws away")

    monkeypatch.setattr(pipeline, "certified_members", recovered)
    monkeypatch.setattr(pipeline, "certified_stack", recovered)
    block = rng.random((3, 120, 300))
    pairs = lapcli.match(block, [100, 0, 200])
    for image, (start, count) in enumerate(((0, 100), (100, 0), (100, 200))):
        rows, cols = scipy_lsa(block[image, :, start:start + count])
        assert block[image, pairs[image][0], start + pairs[image][1]].sum() == pytest.approx(
            block[image, rows, start + cols].sum(), rel=1e-12)
    columns = lapcli.batch_linear_assignment(block, sizes=([120, 100, 120], [110, 300, 200]))
    for image, (n, m) in enumerate(((120, 110), (100, 300), (120, 200))):
        assigned = np.flatnonzero(columns[image] >= 0)
        rows, cols = scipy_lsa(block[image, :n, :m])
        assert block[image, assigned, columns[image][assigned]].sum() == pytest.approx(block[image, rows, cols].sum())
    for maximize in ([False], np.array([True, False, True])):
        with pytest.raises(LapInputError, match="maximize is one True or False for every problem of a call"):
            lapcli.match(block, [100, 0, 200], maximize=maximize)


def test_big_endian_list_members_are_solved_as_native_ones(rng):
    """A list's '>f8' members were not float64 to the member loop's checks: unreduced, scipy compared
    1e6 + U(0, 1e-7) costs' magnitudes, not their spread (an answer 1e-10 above the optimum, which
    certify=True called a bug), and costs near 1e308 skipped the headroom their sums need."""
    for values in (1e6 + 1e-7 * rng.random((6, 6)), 1e308 + 7e307 * rng.random((6, 6))):
        native = lapcli.solve_batch([values, values[:2]], certify=True)
        swapped = lapcli.solve_batch([values.astype(">f8"), values[:2].astype(">f8")], certify=True)
        assert swapped.report.certified and native.report.certified
        assert [c.tolist() for c in swapped.col_ind] == [c.tolist() for c in native.col_ind]
        assert [c.tolist() for c in lapcli.batch_linear_assignment([values.astype(">f8"), values[:2]])] == \
            [c.tolist() for c in native.col_ind]


def test_invalid_entries_are_named_before_an_integer_dtype_refuses_infinities(rng):
    """dtype="int64" on a list or padded stack: NaN (or the wrong-signed infinity) is scipy's invalid
    entry, named by member as a stack's is, not "forbidden (infinite) entries" of the dtype."""
    stack = np.round(rng.random((3, 4, 4)) * 100)
    for bad, maximize in ((np.nan, False), (-np.inf, False), (np.inf, True)):
        stack[1, 1, 1] = bad
        for costs, sizes in (([stack[0], stack[1][:3], stack[2]], None), (stack, ([4, 4, 4], [4, 4, 4]))):
            with pytest.raises(LapInputError, match=r"^matrix contains invalid numeric entries: problem 1 of 3$"):
                lapcli.solve_batch(costs, sizes=sizes, dtype="int64", maximize=maximize)
    stack[1, 1, 1] = np.inf  # a forbidden pair: the dtype's own refusal
    with pytest.raises(LapInputError, match="forbidden .infinite. entries need a float working dtype, not int64"):
        lapcli.solve_batch([stack[0], stack[1][:3], stack[2]], dtype="int64")


def test_an_empty_member_leaves_the_default_certificate_of_the_others(rng, cpu_engines):
    """An image with no target (DETR's common case) has nothing to check: it once made the whole
    list's default certificate "members as small as 0 entries would cost more"."""
    large = [rng.random((200, 200)), rng.random((150, 180))]
    assert lapcli.solve_batch(large + [np.zeros((0, 5))]).report.certified
    small = lapcli.solve_batch([rng.random((3, 3)), np.zeros((0, 5))]).report
    assert not small.certified and "as small as 9 entries" in small.certificate["why"]


def test_ragged_objectives_past_int64_stay_exact_python_ints():
    """A member whose optimum passes int64 (two costs past 2^62): its objective is the Python int, as a
    stack's is, not a float64 rounding of every member's."""
    base = 2**62
    cost = np.array([[base + 1, base + 2], [base + 3, base + 5]], dtype=np.int64)
    expected = [2 * base + 5, base + 1]  # the anti-diagonal; the first row alone its first column
    assert [int(x) for x in lapcli.solve_batch([cost, cost[:1]]).objectives] == expected
    assert lapcli.solve_batch([cost[:1], cost[:1]]).objectives.dtype == np.int64  # int64 where it fits


def test_integer_objectives_are_int64_wherever_they_fit_on_every_route():
    """Costs near -2^62 whose sums fit int64: int64 objectives from a stack, as from a list or a padded
    stack (the stack's object array of Python ints once followed a bound, max |c| · n, not the sums)."""
    near = -(2**62) + np.array([[3, 1], [0, 2]])
    stack = np.stack([near, near])
    for objectives in (lapcli.solve_batch(stack).objectives, lapcli.solve_batch([near, near[:1]]).objectives,
                       lapcli.solve_batch(stack, sizes=([2, 2], [2, 2])).objectives):
        assert objectives.dtype == np.int64 and int(objectives[0]) == 2 * -(2**62) + 1
    wide = np.full((2, 2, 2), 2**62, dtype=np.int64)  # sums of 2^63: Python ints, exactly
    assert lapcli.solve_batch(wide).objectives.tolist() == [2**63, 2**63]


def test_the_matcher_suite_checks_every_form_against_detrs_scipy_loop():
    """lap bench --suite matcher's runners (all but torch-linear-assignment's, here on the CPU)
    find the scipy loop's objectives in small cells; a wrong runner is reported."""
    pytest.importorskip("torch")
    from lapcli.bench import matcher

    runners = matcher.matcher_runners()
    names = ("scipy-loop", "match", "list", "sizes", "padded")
    results, failures = matcher.run_matcher_bench(((3, 12, 5), (4, 6, 9)), names, runners, repeat=1, warmup=0,
                                                  seed=1, min_seconds=0.0)
    assert not failures and [r.status for r in results] == ["ok"] * 10
    broken = dict(runners)  # a match that drops every pair
    broken["match"] = dataclasses.replace(runners["match"],
                                          solve=lambda case: [(r[:0], c[:0]) for r, c in runners["match"].solve(case)])
    _, failures = matcher.run_matcher_bench(((3, 12, 5),), ("scipy-loop", "match"), broken, repeat=1, warmup=0,
                                            seed=1, min_seconds=0.0)
    assert failures and "0 pairs, not min(Q, k)" in failures[0]
    for spoil, words in ((lambda c: c + 1000, "outside its"), (lambda c: c[:1].repeat(len(c)), "twice")):
        broken["match"] = dataclasses.replace(runners["match"], solve=lambda case, spoil=spoil: [
            (r, spoil(c)) for r, c in runners["match"].solve(case)])  # a target past k, or one taken twice
        results, failures = matcher.run_matcher_bench(((3, 12, 5),), ("scipy-loop", "match"), broken, repeat=1,
                                                      warmup=0, seed=1, min_seconds=0.0)
        assert [r.status for r in results] == ["ok", "invalid"] and words in failures[0]


def test_the_matcher_suite_finds_an_answer_a_little_worse_than_the_optimum():
    """Objectives were compared with rtol 1e-5: image 0 given its next best query (3e-5 worse in a
    cell of 900 queries) passed; each image is held to its costs' float tolerance, as in the batch suite."""
    pytest.importorskip("torch")
    from lapcli.bench import matcher

    runners = matcher.matcher_runners()

    def worse(case):  # image 0's assigned query that costs least to replace by a free one, replaced
        answer = runners["scipy-loop"].solve(case)
        rows, cols = (np.array(part) for part in answer[0])
        cost = case.image(0).astype(np.float64)
        free = np.setdiff1d(np.arange(cost.shape[0]), rows)
        extra = cost[free][:, cols] - cost[rows, cols][None, :]
        f, i = np.unravel_index(np.argmin(extra), extra.shape)
        assert 0 < extra[f, i] < 1e-4  # inside the old check's atol
        rows[i] = free[f]
        order = np.argsort(rows)
        return [(rows[order], cols[order]), *answer[1:]]

    broken = dict(runners, match=dataclasses.replace(runners["scipy-loop"], solve=worse))
    results, failures = matcher.run_matcher_bench(((16, 900, 100),), ("scipy-loop", "match"), broken, repeat=1, warmup=0,
                                                  seed=0, min_seconds=0.0)
    assert [r.status for r in results] == ["ok", "mismatch"], [r.message for r in results]
    assert "objectives differ from scipy-loop" in failures[0]
    # first, the wrong one is still the one named: the others agree against it
    results, failures = matcher.run_matcher_bench(((16, 900, 100),), ("match", "scipy-loop", "list"), broken, repeat=1,
                                                  warmup=0, seed=0, min_seconds=0.0)
    assert [r.status for r in results] == ["mismatch", "ok", "ok"] and failures[0].startswith("16×900×100: match:")


def test_host_answers_for_a_torch_cuda_caller_come_back_as_torch_tensors():
    """The CPU member loop answers a torch CUDA batch with NumPy arrays: they go back through
    torch (on the host), never through the CuPy-only crossing."""
    torch = pytest.importorskip("torch")
    from lapcli.arrays import Origin

    answer = Origin("torch", True).to_caller(np.arange(5, dtype=np.int64))
    assert isinstance(answer, torch.Tensor) and answer.tolist() == [0, 1, 2, 3, 4]


def test_the_padded_runners_pad_the_block_as_a_slice_loop_does():
    """pad_block (timed in the padded runners) equals padding image by image, +inf and a constant,
    wider than the most targets, and a block without targets."""
    torch = pytest.importorskip("torch")
    from lapcli.bench import matcher

    for counts in ([3, 0, 5, 1], [0, 0]):
        case = matcher.MatcherCase(torch.rand((len(counts), 4, sum(counts))), counts, None)
        for width, fill in ((max(counts + [1]), matcher.PAD), (9, float("inf"))):
            assert torch.equal(matcher.pad_block(case.block, counts, width, fill), case.padded(fill, width))


def test_lap_bench_suite_matcher_runs_the_scipy_loop_and_refuses_foreign_options(tmp_path):
    pytest.importorskip("torch")
    from click.testing import CliRunner

    from lapcli.cli.main import cli

    result = CliRunner().invoke(cli, ["bench", "--suite", "matcher", "--solvers", "scipy-loop", "--repeat", "1",
                                      "--warmup", "0", "--json", str(tmp_path / "m.json")])
    assert result.exit_code == 0, result.output
    import json

    record = json.loads((tmp_path / "m.json").read_text())
    assert len(record["results"]) == 6 and {r["runner"] for r in record["results"]} == {"scipy-loop"}
    from lapcli.bench.matcher import MATCHER_CELLS  # its cells (B, Q, K), not the batch suite's kinds

    assert record["settings"]["cells"] == [list(cell) for cell in MATCHER_CELLS] and record["settings"]["kinds"] == []
    assert record["settings"]["suite"] == "matcher"  # named as the matrix suites' settings name theirs
    refused = CliRunner().invoke(cli, ["bench", "--suite", "matcher", "--scale", "0.5"])
    assert refused.exit_code == 2 and "--scale" in refused.stderr


def test_an_empty_padded_batch_gives_an_empty_answer():
    solution = lapcli.solve_batch(np.zeros((0, 3, 4)), sizes=([], []))
    assert solution.col_ind.shape == (0, 3) and len(solution.objectives) == 0 and solution.report.batch == 0
    for dtype, kind in ((np.float64, "f"), (np.float32, "f"), (np.int32, "i")):  # the sums' type of any batch's
        assert lapcli.solve_batch(np.zeros((0, 3, 4), dtype), sizes=([], [])).objectives.dtype.kind == kind
        assert lapcli.solve_batch(np.zeros((0, 3, 4), dtype)).objectives.dtype.kind == kind


def test_cpu_ragged_answers_are_certified_per_member(rng, cpu_engines):
    """The CPU's member loop: every member's duals recovered and checked when all are large enough
    (or certify=True), else the report says why."""
    large = [rng.random((100 + b, 110 - b)) for b in range(3)] + [rng.integers(0, 99, (120, 97))]
    report = lapcli.solve_batch(large, solver="scipy-batch", maximize=True).report
    assert report.certified and report.certificate["problems"] == 4
    small = [rng.random((3, 5)), rng.random((6, 2))]
    assert not lapcli.solve_batch(small, solver="scipy-batch").report.certified
    assert lapcli.solve_batch(small, solver="scipy-batch", certify=True).report.certified
    # a dtype asked for: the members' own (solved each as it is) or another (packed into one stack, as the
    # member loop declines it): certify holds on both
    stack, sizes = rng.random((2, 3, 5)), ([3, 2], [5, 4])
    for certify, dtype in itertools.product((True, False), ("float64", "float32")):
        for call in (lambda: lapcli.solve_batch(small, dtype=dtype, certify=certify),
                     lambda: lapcli.solve_batch(stack, sizes=sizes, dtype=dtype, certify=certify)):
            report = call().report
            assert report.certified == certify and ("padded" in report.details) == (dtype == "float32")


def _solve_600_members_and_exit():  # members large enough to be shared with the helper thread
    rng = np.random.default_rng(1)
    lapcli.batch_linear_assignment([rng.random((int(r), int(c))) for r, c in rng.integers(16, 30, (600, 2))])


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="no fork on this platform")
def test_a_forked_child_solves_a_threaded_list_after_its_parent(rng, cpu_engines):
    """The member loop's helper thread is kept for the process; a child forked after the parent
    used it has no such thread and must start its own, not wait on the parent's forever (the CPU
    engines pinned on a GPU machine too: the forked child inherits the pin)."""
    import multiprocessing

    _solve_600_members_and_exit()  # the parent's helper thread exists now
    child = multiprocessing.get_context("fork").Process(target=_solve_600_members_and_exit)
    child.start()
    child.join(60)
    if child.is_alive():
        child.terminate()
    assert child.exitcode == 0


def test_the_in_place_gpu_launch_declines_what_it_does_not_read():
    """cuda-batch reads float32 and int32 members (and narrower types, converted) in place; it
    hands the pipeline back (None: the packed work stack) maximised batches, float64 and int64
    work, a requested dtype other than theirs and members wider than its kernel's columns, before
    touching the GPU."""
    from lapcli.engines.cuda import batch_members
    from lapcli.cuda.batch_lap import MAX_COLUMNS

    def declined(matrices, maximize=False):
        return batch_members.run_members(ragged.from_list(matrices), maximize=maximize) is None

    small = [np.zeros((3, 4), np.float32), np.zeros((2, 1), np.float32)]
    assert declined(small, maximize=True)
    assert declined([m.astype(np.float64) for m in small])
    assert declined([m.astype(np.int64) for m in small])
    assert declined([np.zeros((1, MAX_COLUMNS + 1), np.float32)])
    assert declined([np.zeros((MAX_COLUMNS + 1, 2), np.int32)])
    assert batch_members.run_members(ragged.from_list(small), maximize=False, dtype="float64") is None
    assert batch_members.IN_PLACE_DTYPES == ("float32", "int32")
    assert ragged.work_dtype(np.dtype(np.float16)).name == "float32" and ragged.work_dtype(np.dtype(bool)).name == "int32"


def test_the_ragged_table_has_one_layout_for_python_and_cuda():
    """kernels/ragged_table.cuh's TABLE_FIELDS is lapcli.cuda.ragged_pack's, and the header comes
    before the kernels that read it."""
    from importlib import resources

    from lapcli.cuda import ragged_pack

    header = resources.files("lapcli").joinpath("kernels/ragged_table.cuh").read_text()
    assert f"#define TABLE_FIELDS {ragged_pack.TABLE_FIELDS}" in header
    source = ragged_pack.program().source
    assert source.index("struct RaggedMember") < source.index("__global__ void ragged_pack")


def test_a_requested_dtype_is_honoured_or_refused_for_a_ragged_list(rng):
    """As for a stack: float members asked to be solved as integers are refused unless every value
    is one (then solved exactly as int32); asked as float32 they are solved in float32. Never
    ignored."""
    matrices = [rng.random(tuple(shape)) for shape in rng.integers(1, 9, (12, 2))]
    with pytest.raises(LapInputError, match="costs are not integers, so they cannot be solved as int32"):
        lapcli.solve_batch(matrices, dtype="int32")
    integral = [np.floor(m * 50) for m in matrices]
    solution = lapcli.solve_batch(integral, dtype="int32")
    assert solution.report.dtype == "int32"
    assert [int(o) for o in solution.objectives] == [int(m[scipy_lsa(m)].sum()) for m in integral]
    assert lapcli.solve_batch(matrices, dtype="float32").report.dtype == "float32"


def test_the_ha4detr_peer_is_fed_and_read_as_its_demo_does(tmp_path, monkeypatch):
    """The matcher suite's ``ha4detr`` runner imports HA4DETR's source from LAPCLI_HA4DETR, hands it
    a (B, 300, 300) block padded with +inf and the int32 target counts, and reads its (B, 300, 2)
    answer (row i: i and query i's target, −1 where none); a cell it cannot hold reads skipped. A
    stand-in with HA4DETR's interface solves by scipy here (the real one needs nvcc and a GPU)."""
    pytest.importorskip("torch")
    from lapcli.bench import ha4detr, matcher

    monkeypatch.delenv(ha4detr.ENV, raising=False)
    assert not ha4detr.available()[0] and ha4detr.ENV in ha4detr.available()[1]
    (tmp_path / ha4detr.SOURCE).write_text('''
import numpy as np, torch
from scipy.optimize import linear_sum_assignment
print("built")  # HA4DETR prints its extension's path on import
def hungarian_gpu(cost, ncols):
    assert cost.shape[1:] == (300, 300) and cost.dtype == torch.float32 and ncols.dtype == torch.int32
    out = torch.full((cost.shape[0], 300, 2), -1, dtype=torch.int32)
    out[:, :, 0] = torch.arange(300, dtype=torch.int32)
    for b, n in enumerate(ncols.tolist()):
        assert torch.isinf(cost[b, :, n:]).all()
        rows, cols = linear_sum_assignment(cost[b, :, :n].cpu().numpy())
        out[b, torch.as_tensor(rows), 1] = torch.as_tensor(cols, dtype=torch.int32)
    return out.to(cost.device)
''')
    monkeypatch.setenv(ha4detr.ENV, str(tmp_path))
    ha4detr.module.cache_clear()
    runners = matcher.matcher_runners()
    results, failures = matcher.run_matcher_bench(((2, 300, 7), (2, 12, 5)), ("scipy-loop", "ha4detr"), runners,
                                                  repeat=1, warmup=0, seed=1, min_seconds=0.0)
    assert not failures and [r.status for r in results] == ["ok", "ok", "ok", "skipped"]
    assert results[1].objective_total == pytest.approx(results[0].objective_total)
    assert "300 queries" in results[3].message
    ha4detr.module.cache_clear()


def test_the_lean_torch_launchs_tables_equal_the_generic_members(rng):
    """lapcli.engines.cuda.batch_torch writes the members' table itself (no Members, no CuPy): for a
    matcher's block, a padded stack with sizes and a list, each row must name what lapcli.ragged's
    Members name (address = base + offset × itemsize, row stride, rows, cols) and where the member's
    pairs and flat rows start (as lapcli.cuda.ragged_pack.device_table counts them)."""
    from lapcli.cuda.ragged_pack import TABLE_FIELDS
    from lapcli.engines.cuda import batch_torch

    base, itemsize = 1 << 40, 4

    def generic(members):
        pairs, rows = np.minimum(members.rows, members.cols), members.rows
        return np.column_stack([base + members.offsets * itemsize, members.strides, members.rows, members.cols,
                                np.cumsum(pairs) - pairs, np.cumsum(rows) - rows])

    counts = rng.integers(0, 40, 9)
    counts[3] = 0
    block = np.zeros((9, 25, int(counts.sum())), dtype=np.float32)
    table = np.empty((9, TABLE_FIELDS), dtype=np.int64)
    batch_torch.block_table(table, base, itemsize, 25, block.shape[2], counts)
    expected = generic(ragged.from_block(block, counts))
    assert np.array_equal(table[:, :5], expected[:, :5])  # a block's flat rows are not written

    rows, cols = rng.integers(0, 31, 9), rng.integers(0, 41, 9)
    stack = np.zeros((9, 30, 40), dtype=np.float32)
    batch_torch.stack_table(table, base, itemsize, 30, 40, rows, cols)
    assert np.array_equal(table[:, :4], generic(ragged.from_padded(stack, (rows, cols)))[:, :4])

    matrices = [np.zeros((int(r), int(c)), dtype=np.float32) for r, c in zip(rows, cols)]
    members = ragged.flattened(ragged.from_list(matrices))
    entries = np.column_stack([base + members.offsets * itemsize, members.strides, members.rows, members.cols])
    batch_torch.list_table(table, entries)
    expected = generic(members)
    assert np.array_equal(table[:, [0, 1, 2, 3, 5]], expected[:, [0, 1, 2, 3, 5]])


@pytest.mark.parametrize("count", [1, 300])  # 300: the member loop on two threads
@pytest.mark.parametrize("odd", ["fortran", "big-endian", "float32 beside"])
def test_integer_members_keep_their_answers_beside_float64_members_gathered_apart(count, odd):
    """Integer members are solved as float64 copies in this thread's reused buffer; the float
    spread check gathers float64 members that are not native C-contiguous arrays elsewhere, never
    over those copies (it did: [[0, 9], [9, 0]] came back [1, 0])."""
    ints = [np.array([[0, 9], [9, 0]])] * count
    floats = np.array([[9.0, 0.0, 5.0], [0.0, 9.0, 5.0]])
    others = {"fortran": [np.asfortranarray(floats)], "big-endian": [floats.astype(">f8")],
              "float32 beside": [floats, floats.astype(np.float32)]}[odd]
    col_ind = lapcli.batch_linear_assignment(ints + others)
    assert [c.tolist() for c in col_ind[:count]] == [[0, 1]] * count
    solution = lapcli.solve_batch(ints + others)
    assert solution.objectives[:count].tolist() == [0] * count


def test_a_packed_list_matches_only_the_members_whose_own_entries_are_forbidden(rng, monkeypatch):
    """Packed into one stack (here by a dtype the members do not hold), every member but the widest meets
    forbidden padding columns, which never make it infeasible: the feasibility matching runs on the
    members whose own entries hold +inf alone (on every member it took ~0.27 ms each), and still
    names an infeasible one."""
    import scipy.sparse.csgraph as csgraph

    matched = []
    matching = csgraph.maximum_bipartite_matching
    monkeypatch.setattr(csgraph, "maximum_bipartite_matching", lambda *a, **k: matched.append(1) or matching(*a, **k))
    matrices = [rng.random((int(r), int(c)), dtype=np.float32) for r, c in rng.integers(2, 12, (60, 2))]
    matrices.append(rng.random((12, 12), dtype=np.float32))  # the widest: the others are padded
    for b in (3, 17):
        matrices[b][0, 0] = np.inf
    solution = lapcli.solve_batch(matrices, dtype="float64")
    assert len(matched) == 2 and "padded" in solution.report.details
    assert_loop_optimum(matrices, solution.col_ind, solution.objectives)
    matrices[17][:] = np.inf
    with pytest.raises(InfeasibleError, match="problem 17 of 61"):
        lapcli.solve_batch(matrices, dtype="float64")


def test_int64_beside_uint64_is_never_rounded_through_float64():
    """NumPy promotes int64 beside uint64 to float64, which rounds 2^53 + 3 and 2^53 + 5 up to
    2^53 + 4 and makes the worse matching look better: a list mixing them is solved as int64,
    of equal shapes (a stack) or not (int64 work requested); where an unsigned cost needs 2^63
    or more, each member is solved as it is (exactly), and packing them together is refused."""
    near = 2**53 + np.array([[3, 2], [5, 3]], dtype=np.int64)  # the optimum: the diagonal
    small = np.arange(4, dtype=np.uint64).reshape(2, 2)
    assert lapcli.solve_batch([near, small]).col_ind[0].tolist() == [0, 1]
    assert lapcli.solve_batch([near, small[:1]], dtype="int64").col_ind[0].tolist() == [0, 1]
    huge = 2**63 + np.array([[12, 5], [5, 5]], dtype=np.uint64)  # the optimum: the other diagonal
    solution = lapcli.solve_batch([near, huge])
    assert [c.tolist() for c in solution.col_ind] == [[0, 1], [1, 0]]
    assert solution.objectives.tolist() == [2**54 + 6, 2**64 + 10]
    with pytest.raises(LapInputError, match="too wide to pad"):
        lapcli.solve_batch([near, huge[:1]], dtype="float64")


def test_big_endian_uint64_past_int64_is_refused_as_native_is():
    stack = np.full((2, 3, 3), 2**63 + 1, dtype=">u8")
    for layout in (stack, stack.astype(np.uint64)):
        with pytest.raises(LapInputError, match="too wide to pad"):
            lapcli.solve_batch(layout, sizes=([2, 3], [3, 2]), dtype="int64")


@pytest.mark.parametrize("dtype", [np.int64, np.uint64, np.float64])
def test_a_short_list_of_empty_members_comes_back_empty(dtype):
    """Members with no entries (0 × 3, 2 × 0) give each row −1, with nothing to scan (an integer
    list's exactness check once took the minimum of no values)."""
    columns = lapcli.batch_linear_assignment([np.zeros((0, 3), dtype), np.zeros((2, 0), dtype)])
    assert [c.tolist() for c in columns] == [[], [-1, -1]]


def test_a_stack_too_wide_for_exact_int64_duals_is_refused_as_too_wide(rng, monkeypatch):
    """Members near 2^60 of several shapes, maximised: each is solved exactly on its own (the CPU's
    loop), but their padded stack (dummy rows cost 0, padding columns one below the least cost)
    spans too wide a range for the GPU's exact int64 duals,
    and members of no common type cannot be padded into one stack: both refusals are TooWideError,
    on which ``auto`` on a GPU solves each member alone instead (tests/test_ragged_gpu.py)."""
    from lapcli.errors import TooWideError
    from lapcli.work import build_work

    wide = [rng.integers(0, 50, (int(r), int(c))) + 2**60 for r, c in rng.integers(1, 7, (20, 2))]
    stack = ragged.pack(ragged.from_list(wide), True).stack
    with pytest.raises(TooWideError, match="too wide a range for exact int64 duals"):
        build_work(stack, np, maximize=True, forbidden=None, requested=None, square=True)
    unsigned = np.full((2, 3), 2**63 + 5, dtype=np.uint64)
    with pytest.raises(TooWideError, match="too wide to pad"):
        ragged.pack(ragged.from_list([wide[0], unsigned]), False)
    solution = lapcli.solve_batch([wide[0], unsigned], solver="scipy-batch")
    assert solution.objectives[1] == 2 * (2**63 + 5)
    member = np.array([[[0, 2**64 - 1, 5]]], dtype=np.uint64)  # a 1 × 3 member spanning uint64
    for call in (lambda: lapcli.solve_batch(member), lambda: lapcli.solve_batch(member, sizes=([1], [3]))):
        with pytest.raises(TooWideError, match="too wide"):  # the same class through sizes= as without
            call()
    stack = rng.integers(0, 9, (5, 3, 3))
    stack[3, 0, 0] = stack[4, 0, 0] = 2**62  # two members too wide: both named, in every form
    for call in (lambda: lapcli.batch_linear_assignment(stack), lambda: lapcli.solve_batch(list(stack)),
                 lambda: lapcli.batch_linear_assignment(stack, sizes=(np.full(5, 3), np.full(5, 3))),
                 lambda: lapcli.solve_batch(stack, dtype="int32")):
        with pytest.raises(TooWideError, match="^problems 3, 4 of 5: integer costs span too wide"):
            call()
    stack[0, 0, 0] = 2**40  # exact, past int32: members are judged by exactness, not by the dtype asked
    with pytest.raises(TooWideError, match="^problems 3, 4 of 5: integer costs span too wide"):
        lapcli.solve_batch(stack, dtype="int32")
    from lapcli.engines.cpu import scipy_batch

    monkeypatch.setattr(scipy_batch, "CPUS", 2)  # shares built by two threads: still the caller's numbering
    monkeypatch.setattr(scipy_batch, "SERIAL_BELOW", 0)
    monkeypatch.setattr(scipy_batch, "THREADS_FROM", 0)
    shared = rng.integers(0, 9, (200, 6, 6))
    shared[10, 0, 0] = shared[150, 0, 0] = 2**62
    with pytest.raises(TooWideError, match="^problems 10, 150 of 200: "):
        lapcli.solve_batch(shared, solver="scipy-batch")


@pytest.mark.parametrize("count", [3, 300])  # 300: shared with the worker process or the helper thread
@pytest.mark.parametrize("maximize", [False, True])
def test_float_members_far_from_zero_are_solved_on_their_spread(rng, cpu_engines, count, maximize):
    """1e6 + U(0, 1e-7) members: scipy given them as they are came back up to 0.8 of the spread off
    (certify=True raised the failed certificate, a small member's default answer was silently
    worse); each member reduced first, as a matrix's work is, is the matrix's optimum."""
    from lapcli.problem import objective_tolerance

    shapes = [(90, 100), (100, 90), (100, 100)] if count == 3 else [(24, 30), (30, 24), (27, 27)]
    members = [1e6 + rng.random(shapes[b % 3]) * 1e-7 for b in range(count)]
    solution = lapcli.solve_batch(members, maximize=maximize, certify=True)
    assert solution.report.certified
    for cost, objective in zip(members[:12], solution.objectives[:12]):
        best = lapcli.solve(cost, maximize=maximize).objective  # the matrix's reduced work
        assert abs(objective - best) <= objective_tolerance(cost)
    for cost in (np.full((2, 3), np.inf), np.array([[0.0, np.nan], [1.0, 2.0]])):  # scipy's words kept
        with pytest.raises((InfeasibleError, ValueError), match="infeasible|invalid"):
            lapcli.solve_batch([members[0], cost], maximize=maximize)


def test_a_torch_list_of_dtypes_torch_cannot_promote_is_solved_member_by_member(rng):
    """torch.stack has no promotion for uint16, uint32 or uint64 beside other integers (its
    RuntimeError escaped): such a list of one shape is solved as a ragged one, each member exactly."""
    torch = pytest.importorskip("torch")
    values = rng.integers(0, 2**31 - 1, (3, 4, 4))
    for unsigned in (torch.uint16, torch.uint32, torch.uint64):
        members = [torch.from_numpy(values[0] % 60000).to(unsigned), torch.from_numpy(values[1]).to(torch.int32),
                   torch.from_numpy(values[2]).to(torch.int64)]
        columns = lapcli.batch_linear_assignment(members)
        objectives = lapcli.solve_batch(members).objectives
        for member, cols, objective in zip(members, columns, objectives):
            cost = member.to(torch.int64).numpy()
            rows, best = scipy_lsa(cost)
            assert int(objective) == int(cost[rows, best].sum()) == int(cost[np.arange(4), np.asarray(cols)].sum())


def test_a_list_with_sizes_is_its_stack_and_answers_in_its_library(rng):
    """sizes (and match's block) take a (B, n, m) stack: a list of one shape is stacked in its own
    library, so torch members give torch answers (they came back as NumPy, and members with grad
    or in bfloat16 failed inside NumPy); a list of several shapes is refused in one line."""
    torch = pytest.importorskip("torch")
    members = [torch.tensor(rng.random((2, 3))) for _ in range(2)]
    sizes = ([1, 2], [2, 3])
    expected = lapcli.batch_linear_assignment(torch.stack(members), sizes=sizes)
    for form in (members, [m.clone().requires_grad_() for m in members], tuple(members)):
        got = lapcli.batch_linear_assignment(form, sizes=sizes)
        assert isinstance(got, torch.Tensor) and torch.equal(got, expected)
        assert isinstance(lapcli.solve_batch(form, sizes=sizes).col_ind, torch.Tensor)
    assert isinstance(lapcli.batch_linear_assignment([m.bfloat16() for m in members], sizes=sizes), torch.Tensor)
    pairs = lapcli.match([torch.tensor(rng.random((3, 4))) for _ in range(2)], [2, 2])
    assert all(isinstance(index, torch.Tensor) for pair in pairs for index in pair)
    with pytest.raises(LapInputError, match="of 2 shapes"):
        lapcli.batch_linear_assignment([members[0], torch.zeros(3, 3)], sizes=sizes)
    with pytest.raises(LapInputError, match="of 2 shapes"):
        lapcli.match([np.zeros((3, 4)), np.zeros((3, 5))], [2, 2])


def test_big_endian_float_members_are_solved_on_their_spread_as_native_ones():
    """A '>f8' stack or list (HDF5 or network-order data) took the scipy loop unreduced (its
    float64 test compares equal to the native type only): of these 1e6 + U(0, 1e-7) members, one
    came back 1.9e-9 off the optimum (2 % of the spread); they answer as their native copies."""
    draws = np.random.default_rng(19)
    members = np.concatenate([1e6 + draws.random((4, 12, 12)) * 1e-7 for _ in range(47)])
    for maximize in (False, True):
        native = lapcli.batch_linear_assignment(members, maximize=maximize)
        swapped = members.astype(">f8")
        assert np.array_equal(lapcli.batch_linear_assignment(swapped, maximize=maximize), native)
        for start in range(0, len(members), 20):  # lists the loop takes (short of the shared ones)
            chunk = list(swapped[start:start + 20])
            assert np.array_equal(lapcli.batch_linear_assignment(chunk, maximize=maximize), native[start:start + 20])


WIDE = np.array([[2**55 + 3, 2**55 + 1], [2**55 + 1, 2**55 + 3]], dtype=np.int64)  # optimum: the off-diagonal


def test_a_padded_list_or_block_of_no_exact_common_type_is_refused_not_rounded():
    """int64 costs past 2^53 beside a float matrix of the same shape: one (B, n, m) stack would be
    float64, in which 2^55 + 3 and 2^55 + 1 are one number and the diagonal looks optimal."""
    for form in (lambda costs: lapcli.solve_batch(costs, sizes=([2, 2], [2, 2])),
                 lambda costs: lapcli.batch_linear_assignment(costs, sizes=([2, 2], [2, 2])),
                 lambda costs: lapcli.match(costs, [2, 0])):
        for costs in ([WIDE, np.zeros((2, 2))], [WIDE.tolist(), [[0.0, 0.0], [0.0, 0.0]]],
                      [WIDE, [[0.0, 0.0], [0.0, 0.0]]]):  # nested lists: each as NumPy makes it, not all at once
            with pytest.raises(LapInputError, match="no exact type"):
                form(costs)
    assert lapcli.solve_batch([WIDE, np.zeros((2, 2))]).col_ind[0].tolist() == [1, 0]  # a list: each as it is


def test_a_padded_torch_list_of_integers_and_floats_is_solved_where_float64_holds_them():
    torch = pytest.importorskip("torch")
    costs = [torch.tensor([[3, 1], [2, 4]]), torch.tensor([[0.5, 0.1], [0.2, 0.9]])]
    assert lapcli.solve_batch(costs, sizes=([2, 2], [2, 2])).col_ind.tolist() == [[1, 0], [1, 0]]
    with pytest.raises(LapInputError, match="no exact type"):
        lapcli.solve_batch([torch.tensor(WIDE), costs[1].double()], sizes=([2, 2], [2, 2]))


def test_integers_asked_of_a_list_keep_its_integer_members_exact():
    answer = lapcli.solve_batch([WIDE, np.zeros((1, 2)), np.array([[3.0, 1.0]])], dtype="int64")
    assert answer.col_ind[0].tolist() == [1, 0] and answer.col_ind[2].tolist() == [1]
    assert int(answer.objectives[0]) == 2**56 + 2 and int(answer.objectives[2]) == 1
    with pytest.raises(LapInputError, match="not integers"):
        lapcli.solve_batch([WIDE, np.array([[0.5]])], dtype="int64")


@pytest.mark.parametrize("padded", [False, True])
def test_a_dtype_every_member_holds_is_solved_member_by_member_as_unasked(rng, padded, cpu_engines):
    """Asking for the members' own dtype changes nothing: no padded stack (a 200 × 200 member beside
    500 of 1 × 1 took 2.9 s and 1 GB padded, 0.3 s unasked), and members near -2^62 beside one
    another, each of spread 7 or less, are solved as unasked (padded, the spread of the padding's
    zeros refused them as too wide)."""
    near = -(2**62) + np.array([[3, 1], [0, 2]])
    floats = [rng.random((40, 40))] + [rng.random((1, 1)) for _ in range(30)]
    cases = [([near, near[:1, :1] + 7], "int64"), (floats, "float64")]
    for costs, dtype in cases:
        if padded:
            stack = np.zeros((len(costs), *np.max([c.shape for c in costs], axis=0)), dtype=costs[0].dtype)
            for b, cost in enumerate(costs):
                stack[b, :cost.shape[0], :cost.shape[1]] = cost
            sizes = ([c.shape[0] for c in costs], [c.shape[1] for c in costs])
            solve = lambda **kw: lapcli.solve_batch(stack, sizes=sizes, **kw)  # noqa: E731
        else:
            solve = lambda **kw: lapcli.solve_batch(costs, **kw)  # noqa: E731
        asked, unasked = solve(dtype=dtype), solve()
        assert "padded" not in asked.report.details and asked.report.solver == unasked.report.solver
        assert asked.objectives.tolist() == unasked.objectives.tolist()
        assert [np.asarray(c).tolist() for c in asked.col_ind] == [np.asarray(c).tolist() for c in unasked.col_ind]


def test_float_costs_asked_as_integers_sum_as_floats_on_every_route(rng):
    """A list or padded stack of float costs solved as int64 sums as the stack does and as it would
    unasked: float64 (its packed integer work once gave int64 objectives, the stack float64)."""
    stack = np.floor(rng.random((3, 5, 5)) * 100)
    routes = {"stack": lambda **kw: lapcli.solve_batch(stack, **kw),
              "list": lambda **kw: lapcli.solve_batch(list(stack), **kw),
              "ragged": lambda **kw: lapcli.solve_batch([stack[0], stack[1][:3], stack[2][:, :4]], **kw),
              "sizes": lambda **kw: lapcli.solve_batch(stack, sizes=([5, 3, 5], [5, 5, 4]), **kw)}
    for name, route in routes.items():
        asked, unasked = route(dtype="int64").objectives, route().objectives
        assert asked.dtype == unasked.dtype == np.float64, name
        assert asked.tolist() == unasked.tolist(), name


@pytest.mark.parametrize("values", [np.full((2, 2, 2), "1"), np.ones((2, 2, 2), dtype=complex),
                                    np.full((2, 2, 2), None, dtype=object)])
def test_a_padded_stack_or_block_of_non_numbers_is_refused_as_one_matrix_is(values):
    for form in (lambda: lapcli.solve_batch(values, sizes=([2, 0], [2, 2])),
                 lambda: lapcli.match(values, [1, 1])):
        with pytest.raises((LapTypeError, LapInputError)) as raised:
            form()
        assert type(raised.value).__module__ == "lapcli.errors"


@pytest.mark.parametrize("values", [None, "abc", {"a": 1}, [1.0, 2.0]])
def test_a_padded_stack_or_block_that_is_no_3d_array_is_named_so_whatever_it_holds(values):
    """None, text or a dict given as the block is no stack at all: named by its dimensions, as
    ``solve_batch`` names it without sizes, not by what its entries are."""
    with pytest.raises(LapInputError, match="with sizes, got a [01]-D array"):
        lapcli.solve_batch(values, sizes=([1], [1]))
    with pytest.raises(LapInputError, match=r"expected a \(B, Q, sum of targets\) block, got a [01]-D array"):
        lapcli.match(values, [1])


def test_batch_linear_assignment_takes_torch_linear_assignments_argument_name():
    stack = np.array([[[3.0, 1.0], [2.0, 4.0]]])
    assert lapcli.batch_linear_assignment(cost=stack).tolist() == [[1, 0]]
