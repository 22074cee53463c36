"""Ragged batches: problems of different shapes, solved in ONE launch of the batch pipeline.

Three forms name the same thing, the members of a batch (``Members``):
  - a list of matrices of any shapes (NumPy, CuPy, torch CPU or CUDA: one kind per list);
  - a padded stack with per-problem sizes: member i is ``stack[i, :rows[i], :cols[i]]`` (numbers
    outside that corner are never read, NaN and ±inf too; a stack of Python objects is refused
    whole, as a stack without sizes is);
  - a matcher's block (DETR's ``C.view(B, Q, -1)``) with the per-image target counts k: member i
    is ``block[i, :, s_i : s_i + k_i]``, s_i = k_0 + … + k_{i−1}.

``pack`` gathers the members into one oriented work stack on their device (B, R, C), R ≤ C: a
tall member (rows > cols) is transposed, as the batch pipeline transposes a tall stack; rows past
a member's own are dummy rows of constant cost 0 (any column they take adds 0); a member's real
rows meet the columns past its own at a forbidden cost (+∞ for floats, through the pipeline's
forbidden entries; for integers one above the largest real cost, which an optimal answer never
takes: see _integer_forbidden). ``unpack`` maps the stack's answer back to each member's rows.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import chain
from typing import Any

import numpy as np

from .arrays import (Origin, as_array, common_dtype, is_cupy, is_torch, library_of, nested_array, one_stack,
                     torch_stream_if_other)
from .errors import LapInputError, TooWideError
from .problem import check_cost_dtype, own_forbidden
from .work_dtypes import WORK_DTYPES, work_dtype

TOO_WIDE = "integer costs too wide to pad a ragged batch exactly; solve a list of equal shapes, or use floats"


@dataclass
class Members:
    """A ragged batch: member i is rows[i] × cols[i] values of ``flat`` (a 1-D NumPy or CuPy array)
    from ``offsets[i]``, row after row ``strides[i]`` apart; or, for a list (``flat`` None), the
    list's own matrices ``arrays``: host ones solved where they are on the CPU (and concatenated
    only for a GPU engine), device ones of one dtype read in place at ``addresses`` (bytes).
    ``padded_rows``: the caller's rows of a padded-stack result (None: a list of results)."""

    flat: Any
    offsets: np.ndarray
    strides: np.ndarray
    rows: np.ndarray
    cols: np.ndarray
    origin: Origin
    padded_rows: int | None = None
    arrays: list | None = None  # the device matrices of a list read in place (kept alive)
    addresses: np.ndarray | None = None
    dtype: np.dtype | None = None
    dtypes: set | None = None  # a host list's members' own dtypes, where known
    packable: bool = True  # False: host members with no exact common type (lapcli.arrays.common_dtype)

    def __post_init__(self):
        if self.dtype is None:
            self.dtype = self.flat.dtype

    @property
    def xp(self):
        if self.flat is None:
            return np if isinstance(self.arrays[0], np.ndarray) else _cupy()
        return np if isinstance(self.flat, np.ndarray) else _cupy()

    def device_addresses(self, flat=None) -> np.ndarray:
        """Each member's first element's device byte address (``flat``: the flat array as the
        work dtype, if it was converted)."""
        if self.flat is None:
            return self.addresses
        flat = self.flat if flat is None else flat
        return flat.data.ptr + self.offsets * flat.itemsize

    def __len__(self) -> int:
        return len(self.rows)

    def member(self, i: int):
        """Member i as a 2-D view of ``flat`` (no copy), or the list's own device matrix."""
        if self.flat is None:
            matrix = self.arrays[i]
            return matrix if isinstance(matrix, np.ndarray) or is_cupy(matrix) else _cupy().from_dlpack(matrix.detach())
        rows, cols, stride, offset = int(self.rows[i]), int(self.cols[i]), int(self.strides[i]), int(self.offsets[i])
        if rows == 0 or cols == 0:
            return self.flat[:0].reshape(rows, cols)
        if offset + rows * stride <= len(self.flat):  # whole rows of the stride: a plain view (as_strided: 15 µs)
            return self.flat[offset:offset + rows * stride].reshape(rows, stride)[:, :cols]
        xp = self.xp
        window = self.flat[offset:offset + (rows - 1) * stride + cols]
        item = window.itemsize
        return xp.lib.stride_tricks.as_strided(window, shape=(rows, cols), strides=(stride * item, item))


def _cupy():
    return __import__("cupy")


def _in_place(matrices, library: str) -> Members | None:
    """Members that read a list of device matrices where they are (no concatenation): all on the
    GPU, of one work dtype, each row contiguous; None otherwise."""
    if library == "torch":
        if not all(m.is_cuda for m in matrices) or len({m.dtype for m in matrices}) != 1:
            return None
        device = _cupy().cuda.runtime.getDevice()
        if any(m.get_device() != device or m.is_neg() or m.is_conj() for m in matrices):
            return None  # another GPU than the launch's, or a lazy negation or conjugate: through as_array
        if torch_stream_if_other(device) is not None:
            return None  # read on another stream than torch's: DLPack's handshake orders them (as_array)
        try:
            dtype = np.dtype(str(matrices[0].dtype).removeprefix("torch."))
        except TypeError:  # bfloat16 and others NumPy lacks: as_array widens what it can
            return None
        shapes = [tuple(m.shape) for m in matrices]
        strides = [m.stride() for m in matrices]
        addresses = [m.data_ptr() for m in matrices]
        origin = Origin("torch", True)
    elif library == "cupy":
        if len({m.dtype for m in matrices}) != 1 or any(m.device.id != _cupy().cuda.runtime.getDevice()
                                                         for m in matrices):
            return None
        dtype = matrices[0].dtype
        shapes = [m.shape for m in matrices]
        strides = [tuple(s // m.itemsize for s in m.strides) for m in matrices]
        addresses = [m.data.ptr for m in matrices]
        origin = Origin("cupy", True)
    else:
        return None
    if dtype.name not in WORK_DTYPES or any(len(shape) != 2 for shape in shapes):
        return None
    if any(shape[1] > 1 and stride[1] != 1 for shape, stride in zip(shapes, strides)):
        return None  # a member whose rows are not contiguous: concatenated instead
    rows = np.array([s[0] for s in shapes], dtype=np.int64)
    cols = np.array([s[1] for s in shapes], dtype=np.int64)
    return Members(None, np.zeros(len(shapes), dtype=np.int64), np.array([s[0] for s in strides], dtype=np.int64),
                   rows, cols, origin, arrays=list(matrices), addresses=np.array(addresses, dtype=np.int64),
                   dtype=dtype)


def holds_booleans(values) -> bool:
    """Whether a list or tuple of sizes holds a boolean: NumPy makes [True, 2] integers, True a side of 1
    (a 0-d boolean array or tensor among them too)."""
    if not isinstance(values, (list, tuple)) or set(map(type, values)) <= {int}:  # Python ints: one C loop
        return False
    return any(isinstance(v, (bool, np.bool_)) or str(getattr(v, "dtype", "")) in ("bool", "torch.bool") for v in values)


def _sizes(values, name: str, batch: int) -> np.ndarray:
    """``values`` (a sequence, NumPy, CuPy or torch) as ``batch`` non-negative int64 sizes, or
    LapInputError saying what is wrong."""
    try:
        sizes = np.asarray(values.get() if is_cupy(values) else values.detach().cpu().numpy() if is_torch(values) else values)
    except (TypeError, ValueError):
        sizes = np.asarray(None)
    if sizes.shape != (batch,):
        integers = "1 integer" if batch == 1 else f"{batch} integers"
        raise LapInputError(f"{name} must be {integers}, one per problem, got shape {sizes.shape}")
    if sizes.dtype.kind not in "iu" and sizes.size:
        raise LapInputError(f"{name} must be integers, got {sizes.dtype}")
    if holds_booleans(values):
        raise LapInputError(f"{name} must be integers, got bool")
    if sizes.size and not 0 <= int(sizes.min()) <= int(sizes.max()) < 2**62:  # 2^62: past any array's side
        raise LapInputError(f"{name} must not be negative" if int(sizes.min()) < 0 else
                            f"{name} must be sides of arrays, got {int(sizes.max())}")
    return sizes.astype(np.int64)


def from_list(matrices) -> Members:
    """Members from a list of 2-D matrices: host matrices kept as they are, device matrices of one
    dtype with contiguous rows read in place, other device lists concatenated once."""
    if not matrices:
        raise LapInputError("an empty list of problems")
    if set(map(type, matrices)) == {np.ndarray}:  # the common host list: no conversion per matrix
        values, origin = list(matrices), Origin("numpy", False)
    else:
        libraries = {"numpy" if library_of(m) == "builtins" else library_of(m) for m in matrices}  # nested lists: host
        if len(libraries) > 1:
            raise LapInputError(f"a list of problems must be of one array library, got {', '.join(sorted(libraries))}")
        in_place = _in_place(matrices, next(iter(libraries)))
        if in_place is not None:
            return in_place
        arrays = [as_array(nested_array(m) if isinstance(m, (list, tuple)) else m) for m in matrices]
        values, origin = [a for a, _ in arrays], arrays[0][1]
    shapes = [a.shape for a in values]  # one pass a property: 1000 members ~0.18 ms, not 0.25
    if (bad := next((b for b, shape in enumerate(shapes) if len(shape) != 2), None)) is not None:
        raise LapInputError(f"every problem of a list must be a matrix (2-D); problem {bad} is {len(shapes[bad])}-D")
    dtypes = {a.dtype for a in values}
    for a, m in zip(values, matrices) if any(d.kind in "OUS" for d in dtypes) else ():  # each named as one matrix's
        check_cost_dtype(a.dtype, a, from_list=isinstance(m, (list, tuple)))
    for dtype in dtypes:  # as for one matrix: strings or objects are scipy's TypeError
        check_cost_dtype(dtype)
    rows, cols = np.fromiter(chain.from_iterable(shapes), np.int64, 2 * len(shapes)).reshape(-1, 2).T.copy()
    common = common_dtype(values, dtypes)  # None: integers of both signs past 2^63, or past 2^53 beside floats
    if origin.on_gpu:
        if common is None:
            raise TooWideError(TOO_WIDE)
        return concatenated(values, rows, cols, origin, _cupy(), common)
    # host matrices stay as they are: the CPU engine solves each where it is (NumPy's float64 names
    # integers of both signs past 2^63, which are refused where they must be packed together)
    return Members(None, np.zeros(len(values), dtype=np.int64), cols.copy(), rows, cols, origin, arrays=values,
                   dtype=np.result_type(*dtypes) if common is None else common, dtypes=dtypes,
                   packable=common is not None)


def from_padded(stack, sizes) -> Members:
    """Members from a padded (B, n, m) stack and ``sizes`` = (rows, cols), each B integers."""
    values, origin = _one_block(stack, "sizes go with a (B, n, m) stack (a list of any shapes needs none)",
                                "a stack of matrices (3-D array) with sizes")
    batch, n, m = values.shape
    if (isinstance(sizes, (dict, set, frozenset, str, bytes)) or getattr(sizes, "ndim", 1) == 0  # 0-d: no len
            or not hasattr(sizes, "__len__") or len(sizes) != 2):
        raise LapInputError("sizes must be (rows, cols): two sequences of one integer per problem")
    rows, cols = _sizes(sizes[0], "rows", batch), _sizes(sizes[1], "cols", batch)
    if batch and (rows.max() > n or cols.max() > m):
        raise LapInputError(f"sizes exceed the stack's {n}×{m} problems")
    values = values if values.flags.c_contiguous else values.copy()
    offsets = np.arange(batch, dtype=np.int64) * n * m
    return Members(values.reshape(-1), offsets, np.full(batch, m, dtype=np.int64), rows, cols, origin, padded_rows=n)


def _one_block(costs, what: str, expected: str):
    """(values, origin) of a padded stack or a matcher's block (lapcli.arrays.one_stack), 3-D
    (``expected``: what it is, in words), its costs numbers as one matrix's must be (scipy's errors
    for text, objects, complex)."""
    values, origin = as_array(one_stack(costs, what))
    if values.ndim != 3:  # first: None or a dict is no block, whatever its dtype
        raise LapInputError(f"expected {expected}, got a {values.ndim}-D array")
    check_cost_dtype(values.dtype, values, from_list=isinstance(costs, (list, tuple)))
    return values, origin


def from_stack(values, origin: Origin) -> Members:
    """Members from a C-contiguous (B, n, m) stack, each problem whole: what the batch engine reads
    in place (a tall stack through its transpose)."""
    batch, n, m = values.shape
    return Members(values.reshape(-1), np.arange(batch, dtype=np.int64) * n * m, np.full(batch, m, dtype=np.int64),
                   np.full(batch, n, dtype=np.int64), np.full(batch, m, dtype=np.int64), origin, padded_rows=n)


def from_block(block, targets) -> Members:
    """Members from a matcher's (B, Q, Σk) block and the k_i targets of each image: member i is
    block[i, :, s_i : s_i + k_i]."""
    values, origin = _one_block(block, "match takes a (B, Q, Σk) block of one shape", "a (B, Q, sum of targets) block")
    batch, queries, total = values.shape
    counts = _sizes(targets, "sizes", batch)
    counted = sum(counts.tolist())  # Python ints: an int64 sum of counts near 2^62 wraps round
    if counted != total:
        raise LapInputError(f"the target counts sum to {counted}, the block has {total} columns")
    values = values if values.flags.c_contiguous else values.copy()
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    offsets = np.arange(batch, dtype=np.int64) * queries * total + starts
    return Members(values.reshape(-1), offsets, np.full(batch, total, dtype=np.int64),
                   np.full(batch, queries, dtype=np.int64), counts, origin)


@dataclass
class Packed:
    """The oriented work stack of a ragged batch and what unpack needs."""

    stack: Any  # (B, R, C), R <= C
    tall: np.ndarray  # member transposed
    real_rows: np.ndarray  # p_i = min(rows, cols): the stack rows that are the member's
    table: Any = None  # on the device: per member (address, row stride, rows, cols, first pair)
    keep: Any = None  # what the table's asynchronous copy and the pack read, alive until the solve ends
    own_forbidden: np.ndarray | None = None  # problem.own_forbidden where padding columns are forbidden


def pack(members: Members, maximize: bool, upload: bool = False) -> Packed:
    """Gather the members into one (B, R, C) work stack on their device (see the module's
    docstring): kernels/ragged.cu for device members (``upload``: host members too, copied to the
    current device in one piece first), else ``pack_twin``."""
    rows, cols = members.rows, members.cols
    tall, real, wide = rows > cols, np.minimum(rows, cols), np.maximum(rows, cols)
    r_max, c_max = max(int(real.max()), 1), max(int(wide.max()), 1)
    padding_columns = bool(((wide < c_max) & (real > 0)).any())  # some real row meets columns past its own
    dtype = work_dtype(members.dtype)
    if members.xp is np:
        if members.arrays and not members.packable:  # a host list's matrices with no exact common type
            raise TooWideError(TOO_WIDE)  # (integers past 2^53 beside floats, of both signs past 2^63)
        members = flattened(members)
        if upload:  # a GPU engine solves them: packed there (the twin took ~35 ms of 1000 small members)
            members = replace(members, flat=_cupy().asarray(members.flat))
    unsigned64 = members.dtype.kind == "u" and members.dtype.itemsize == 8  # '>u8' too
    if unsigned64 and members.flat.size and int(members.flat.max()) >= 2**63 and any(  # padding aside
            int(members.member(b).max()) >= 2**63 for b in np.flatnonzero(members.rows * members.cols).tolist()):
        raise TooWideError(TOO_WIDE)
    if members.xp is np:
        packed = pack_twin(members, maximize, dtype, r_max, c_max, padding_columns)
    else:
        from .cuda import ragged_pack

        flat = members.flat.astype(dtype, copy=False) if members.flat is not None else None
        table, keep = ragged_pack.device_table(members, members.device_addresses(flat))
        forbidden = (-np.inf if maximize else np.inf) if dtype.kind == "f" else 0
        stack = ragged_pack.pack(dtype, table, len(members), r_max, c_max, forbidden)
        if padding_columns and dtype.kind != "f":  # the real costs' extreme is known once they are packed
            forbidden = _integer_forbidden(stack, maximize)
            if dtype == np.int32 and not -2**31 <= forbidden < 2**31:  # int64 work: the members widened first
                members = _widened(members)
                flat, dtype = members.flat, np.dtype(np.int64)
                table, keep = ragged_pack.device_table(members, members.device_addresses())
            stack = ragged_pack.pack(dtype, table, len(members), r_max, c_max, forbidden)
        packed = Packed(stack, tall, real, table, (keep, flat, members))
    if padding_columns and packed.stack.dtype.kind == "f":  # +inf padding: only the members' own count
        packed.own_forbidden = own_forbidden(packed.stack, real, wide, maximize)
    return packed


def concatenated(matrices, rows: np.ndarray, cols: np.ndarray, origin: Origin, xp, dtype=None) -> Members:
    """Members as one flat array of ``xp``: the matrices one after the other, in ``dtype`` (None: theirs)."""
    flat = xp.concatenate([xp.asarray(m, dtype=dtype).reshape(-1) for m in matrices])
    offsets = np.concatenate([[0], np.cumsum(rows * cols)[:-1]]).astype(np.int64)
    return Members(flat, offsets, cols.copy(), rows, cols, origin)


def flattened(members: Members) -> Members:
    """Host members as values of one flat array (a list of host matrices is kept as it is until a
    GPU engine needs it packed)."""
    if members.flat is not None:
        return members
    return concatenated(members.arrays, members.rows, members.cols, members.origin, np, members.dtype)


def _widened(members: Members) -> Members:
    """The members as int64 values of one flat device array."""
    if members.flat is not None:
        return Members(members.flat.astype(np.int64), members.offsets, members.strides, members.rows, members.cols,
                       members.origin)
    return concatenated([members.member(i) for i in range(len(members))], members.rows, members.cols,
                         members.origin, _cupy(), np.int64)


def pack_twin(members: Members, maximize: bool, dtype, r_max: int, c_max: int, padding_columns: bool) -> Packed:
    """kernels/ragged.cu's ragged_pack in NumPy (or CuPy) array operations: what the CPU tests run."""
    xp = members.xp
    on = lambda a: xp.asarray(a)[:, None, None]  # noqa: E731 - per member, broadcast over (R, C)
    x = xp.arange(r_max)[None, :, None]
    y = xp.arange(c_max)[None, None, :]
    tall = on(members.rows > members.cols)
    real, wide = on(np.minimum(members.rows, members.cols)), on(np.maximum(members.rows, members.cols))
    first, second = xp.where(tall, y, x), xp.where(tall, x, y)  # the member's own (row, col)
    valid = (x < real) & (y < wide)
    index = xp.where(valid, on(members.offsets) + first * on(members.strides) + second, 0)
    values = (members.flat[index] if members.flat.size else xp.zeros(index.shape)).astype(dtype)
    stack = xp.where(valid, values, dtype.type(0))  # dummy rows and padding columns 0 for now
    if padding_columns:
        forbidden = (-np.inf if maximize else np.inf) if dtype.kind == "f" else _integer_forbidden(stack, maximize)
        if dtype == np.int32 and not -2**31 <= forbidden < 2**31:
            dtype, stack = np.dtype(np.int64), stack.astype(np.int64)
        stack = xp.where((x < real) & ~valid, dtype.type(forbidden), stack)
    return Packed(stack, members.rows > members.cols, np.minimum(members.rows, members.cols))


def _integer_forbidden(stack, maximize: bool) -> int:
    """One above the largest cost of a stack packed with 0 where padding goes (one below the
    smallest when maximising). Any value above every real cost will do: an answer that gives a real
    row a padding column can give it instead a real column no real row takes (there are at least as
    many real columns as real rows; a dummy row there moves to the padding at the same cost 0),
    strictly cheaper, so an optimal answer takes none; the zeros only raise the bound."""
    big = int(stack.min()) - 1 if maximize else int(stack.max()) + 1
    if not -2**63 <= big < 2**63:
        raise TooWideError(TOO_WIDE)
    return big


def unpack(packed: Packed, col_of_row, members: Members):
    """(B, most rows) the column of each member's row, −1 where none, from the stack's (B, R) answer,
    on the answer's device (no host round trip): kernels/ragged.cu's ragged_unpack, or its twin below."""
    width = max(int(members.rows.max()), 0)
    if packed.table is not None:
        from .cuda import ragged_pack

        return ragged_pack.unpack(col_of_row, packed.table, width)
    xp = np if isinstance(col_of_row, np.ndarray) else _cupy()
    batch = len(members)
    here = xp.arange(col_of_row.shape[1])[None, :]
    tall = xp.asarray(packed.tall)[:, None]
    target = xp.where(tall, col_of_row, here)  # the member's row
    value = xp.where(tall, here, col_of_row)  # its column
    target = xp.where(here < xp.asarray(packed.real_rows)[:, None], target, width)  # else: a column thrown away
    out = xp.full((batch, width + 1), -1, dtype=np.int64)
    out[xp.arange(batch)[:, None], target] = value
    return out[:, :width]


def pairs(out, packed: Packed | None, counts: np.ndarray):
    """(2, Σ counts) int64, rows then columns: every member's assigned rows in order and their
    columns, member after member (counts[b] = min(rows, cols) of member b), as the in-place launch
    writes them (one array: one hand-over to the caller's library): kernels/ragged.cu's
    ragged_pairs, or its twin below."""
    if packed is not None and packed.table is not None:
        from .cuda import ragged_pack

        return ragged_pack.pairs(out, packed.table, int(counts.sum()))
    xp = np if isinstance(out, np.ndarray) else _cupy()
    assigned = [xp.flatnonzero(out[b] >= 0) for b in range(out.shape[0])]
    rows = xp.concatenate(assigned) if assigned else xp.zeros(0, dtype=np.int64)
    cols = xp.concatenate([out[b, r] for b, r in enumerate(assigned)]) if assigned else xp.zeros(0, dtype=np.int64)
    return xp.stack([rows.astype(np.int64), cols.astype(np.int64)])
