"""Array interop: NumPy, CuPy and torch tensors in, the same library and device out.

torch is not a dependency: a tensor is recognised by its type's module. CPU tensors cross to
NumPy through ``Tensor.numpy()`` (no copy) and back through ``torch.from_numpy``. CUDA tensors
cross to CuPy without a copy: where torch's current stream is CuPy's (the default, both on the
legacy default stream) as a view of the tensor's memory and back as a bare DLPack capsule, since
work queued on one stream is ordered already; otherwise through ``torch.from_dlpack`` /
``cupy.from_dlpack``, whose stream handshake orders the two streams. The handshake's Python (torch's
stream and device queries) cost ~40 µs a crossing on an H100 machine, a tenth of a small matcher
call.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import LapInputError, LapTypeError


@dataclass(frozen=True)
class Origin:
    """Where an input came from, so that outputs can go back there."""

    library: str  # "numpy", "cupy" or "torch"
    on_gpu: bool

    def to_caller(self, array):
        """``array`` (NumPy or CuPy) as the caller's kind of array, on the caller's device."""
        if self.library == "torch":
            import torch

            if self.on_gpu:
                if is_cupy(array) and array.size and torch_stream_if_other(array.device.id) is None:  # one stream
                    return torch.utils.dlpack.from_dlpack(array.__dlpack__())
                return torch.from_dlpack(array)
            return torch.from_numpy(np.ascontiguousarray(host(array)))
        if self.library == "cupy":
            import cupy

            return cupy.asarray(array)
        return host(array)


def split_flat(flat, counts: np.ndarray) -> list:
    """``flat`` (NumPy, CuPy or torch, 1-D) cut into len(counts) consecutive views, one call for
    all of them (torch's split; a list of B slices costs B indexing calls). No counts: no views
    (NumPy's split at no index would return the whole array as one)."""
    if not len(counts):
        return []
    if is_torch(flat):
        return list(flat.split(counts.tolist()))
    xp = np if isinstance(flat, np.ndarray) else __import__("cupy")
    return xp.split(flat, np.cumsum(counts)[:-1].tolist())


def padded(columns: list, rows: np.ndarray) -> np.ndarray:
    """(B, most rows) int64, −1 past each member's own: host arrays of one member's columns each
    (for the certificate and the pairs, which read the padded layout)."""
    out = np.full((len(columns), int(rows.max()) if len(columns) else 0), -1, dtype=np.int64)
    for b, cols in enumerate(columns):
        out[b, :len(cols)] = cols
    return out


def host(array) -> np.ndarray:
    """``array`` as a NumPy array: a CuPy array copied to the host, anything else as NumPy sees it."""
    return array.get() if hasattr(array, "get") and not isinstance(array, np.ndarray) else np.asarray(array)


def all_true(mask) -> bool:
    """Whether every entry of a bool array (NumPy or CuPy) is True. On CuPy a large mask is reduced
    to 4,096 columns on the device, the rest on the host: a whole-array reduction (``.all()``,
    ``count_nonzero``, an integer ``sum``) compiles CUB kernels through NVRTC, 3-6 s each on a fresh
    machine's first call (H200), where a reduction down the rows compiles in ~0.2 s and then takes
    ~0.2 ms on 4096² (the CUB one 0.16)."""
    if isinstance(mask, np.ndarray) or mask.size <= 1 << 16:
        return bool(host(mask).all())
    flat = mask.ravel()
    whole = flat.size - flat.size % 4096
    return bool(flat[:whole].reshape(-1, 4096).all(axis=0).get().all()) and bool(flat[whole:].get().all())


def any_each(mask) -> np.ndarray:
    """(B,) host bool: whether each (n, m) mask of a (B, n, m) stack holds a True; on CuPy down
    its rows first, the rest on the host (:func:`all_true` says why)."""
    if isinstance(mask, np.ndarray):
        return mask.any(axis=(1, 2))
    return host(mask.any(axis=1)).any(axis=1)


def is_torch(x: Any) -> bool:
    """A torch tensor, subclasses too (nn.Parameter, MONAI's MetaTensor, a user's own): isinstance
    where torch is imported (no tensor exists without it). Not torch's other types: a torch.Size
    is a tuple of ints (``sizes=tensor.shape``)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor)


def check_dense(x: Any, what: str = "the costs", points: bool = False) -> None:
    """Refuse a sparse matrix or tensor (scipy.sparse, cupyx.scipy.sparse, torch's sparse layouts)
    by name: NumPy reads a scipy one as a single object ("setting an array element with a
    sequence", scipy's own message), and its absent entries would mean 0, not a forbidden pair.
    ``points``: ``x`` holds coordinates, not costs. (A NumPy array returns at once: the hot path
    of a list of many small matrices.)"""
    if type(x) is np.ndarray:
        return
    if type(x).__module__.startswith(("scipy.sparse", "cupyx.scipy.sparse")) and hasattr(x, "toarray"):
        kind = f"sparse {type(x).__name__}"  # (a LinearOperator, which has no toarray, is not one)
    elif is_torch(x) and "sparse" in str(getattr(x, "layout", "")):
        kind = f"sparse tensor ({x.layout})"
    elif is_torch(x):
        _check_readable_tensor(x, what)
        return
    else:
        return
    convert = ".toarray(), or .to_dense() for a tensor"
    if points:
        raise LapInputError(f"{what} are a {kind}: give dense coordinates ({convert})")
    raise LapInputError(f"{what} are a {kind}: lapcli solves dense costs; convert them "
                        f"({convert}) with forbidden pairs as inf, since an absent entry reads as 0 "
                        "(scipy.sparse.csgraph.min_weight_full_bipartite_matching solves a sparse graph as it is)")


def member_ndim(matrix: Any, index: int) -> int:
    """np.ndim of problem ``index`` of a list, whose rows differing in length (a ragged nested list)
    are refused by that index, not by NumPy's "inhomogeneous shape"."""
    check_dense(matrix, f"problem {index} of the list's costs")
    try:
        return np.ndim(matrix)
    except ValueError:
        raise LapInputError(f"problem {index} of the list is not a matrix: its rows differ in length") from None


def _check_readable_tensor(tensor, what: str) -> None:
    """Refuse by name a tensor lapcli cannot read (NumPy's conversion raised a bare TypeError): one
    on the meta device holds no values, one on another device than the CPU or CUDA must be moved,
    and a quantized one's integers are no costs until dequantized."""
    device = tensor.device.type
    if device == "meta":
        raise LapInputError(f"{what} are a tensor on the meta device, which holds no values")
    if device not in ("cpu", "cuda"):
        raise LapInputError(f"{what} are a tensor on the {device} device: lapcli reads CPU and CUDA tensors (.cpu())")
    if tensor.is_quantized:
        raise LapTypeError(f"{what} are a quantized tensor ({str(tensor.dtype)[6:]}): .dequantize() it first")
    if tensor.is_nested:  # torch's own "NestedTensorImpl doesn't support sizes" otherwise
        raise LapInputError(f"{what} are a nested (ragged) tensor: give its matrices as a list (tensor.unbind())")
    if str(tensor.layout) != "torch.strided":  # mkldnn's
        raise LapInputError(f"{what} are a tensor of layout {str(tensor.layout)[6:]}: .to_dense() it first")


def library_of(x: Any) -> str:
    """The array library ``x`` belongs to ("torch", "cupy", "numpy", "builtins", ...); a list or
    tuple is Python's whatever made it (a torch.Size is a tuple of ints)."""
    if is_torch(x):
        return "torch"
    return "builtins" if isinstance(x, (list, tuple)) else type(x).__module__.split(".")[0]


def is_cupy(x: Any) -> bool:
    return type(x).__module__.startswith("cupy")


def as_array(x: Any) -> tuple[Any, Origin]:
    """(NumPy or CuPy array, Origin) for NumPy/CuPy arrays, torch tensors and nested lists."""
    check_dense(x)
    if is_torch(x):
        tensor = x.detach().resolve_conj().resolve_neg()  # lazy conjugates and negations as values
        if tensor.dtype.is_floating_point and tensor.element_size() <= 2 and str(tensor.dtype) != "torch.float16":
            try:  # bfloat16 and the float8s: NumPy and CuPy have none; float32 holds each exactly
                tensor = tensor.float()
            except (NotImplementedError, RuntimeError):  # packed ones (float4_e2m1fn_x2) torch cannot widen
                raise LapTypeError(f"a {str(tensor.dtype)[6:]} tensor cannot be read: convert it to float32") from None
        if tensor.is_cuda:
            import cupy

            view = _cuda_view(tensor)
            return (view if view is not None else cupy.from_dlpack(tensor)), _TORCH_GPU
        try:
            return tensor.numpy(), _TORCH_CPU
        except TypeError:  # a type NumPy has none of (int4, uint1, bits8, complex32): torch's "unsupported ScalarType"
            raise LapTypeError(f"a tensor of {str(tensor.dtype)[6:]} cannot be read: convert it to a NumPy type "
                               "(float32, int64, ...)") from None
    if is_cupy(x):
        return x, _CUPY
    return native_order(np.asarray(x)), _NUMPY


def nested_array(x: list | tuple) -> np.ndarray:
    """A nested list of costs as NumPy reads it, its integers kept exact. NumPy reads integers of
    2^63 or more beside smaller or negative ones as float64, rounding them (2^63 + 5 becomes 2^63):
    uint64 holds them where none is negative; beside a negative one no 64-bit type does, and
    integers past 2^53 beside inf (a forbidden pair) only float64 holds, rounded: both refused, as
    the text reader refuses the latter. Beside other floats they are floats, rounded as given."""
    array = np.asarray(x)
    if array.dtype.kind != "f" or not array.size:
        return array
    top = float(np.abs(array).max())
    with_inf = not np.isfinite(top)  # inf or NaN beside the values: the largest finite one decides
    if with_inf:
        finite = array[np.isfinite(array)]
        top = float(np.abs(finite).max()) if finite.size else 0.0
    if top < 2.0**53:  # every integer below it is exact in float64
        return array
    rounded, lowest = False, 0
    for item in _items(x):  # lazily: the first float that is not inf ends it (a float matrix)
        if isinstance(item, (int, np.integer)):
            value = int(item)  # Python's int and float compare exactly; NumPy's scalars in float64
            rounded = rounded or float(value) != value
            lowest = min(lowest, value)
        elif not (isinstance(item, (float, np.floating)) and np.isinf(item)):
            return array
    if not rounded:
        return array
    if with_inf:  # (a NaN ended the walk above: only inf is left)
        raise LapInputError("integers past 2^53 beside inf, which float64 would round (an integer matrix holds no "
                            "inf): give forbidden pairs a large finite cost")
    if lowest >= 0:
        return np.asarray(x, dtype=np.uint64)
    raise LapInputError("integers of 2^63 or more beside negative ones: no 64-bit integer type holds them all "
                        "exactly and lapcli does not round integers; give them as float64 if rounding is acceptable")


def _items(x):
    """The entries of a nested list (arrays inside it too), one at a time."""
    for item in x:
        if isinstance(item, (list, tuple)):
            yield from _items(item)
        elif isinstance(item, np.ndarray):
            yield from _items(item.tolist()) if item.ndim else (item.item(),)
        else:
            yield item


def native_order(array: np.ndarray) -> np.ndarray:
    """A NumPy array in this machine's byte order: a big-endian '>u4' is not np.uint32 to the
    dtype checks that keep costs exact (it would be cast as a narrower signed type and wrap)."""
    return array if array.dtype.isnative else array.astype(array.dtype.newbyteorder("="))


def tensor_values(x: Any) -> Any:
    """A torch tensor as its values (as_array: detached, bfloat16 and the float8s as float32, which
    hold them exactly): a CPU one as NumPy, a CUDA one as CuPy on its memory, so that one matrix is
    read as the batch calls read it and answered in the matching array library; anything else as it is."""
    check_dense(x)
    return as_array(x)[0] if is_torch(x) else x


def torch_stream_if_other(device: int) -> int | None:
    """torch's current stream on ``device`` (its raw handle) when it is not CuPy's current stream
    there, else None: work one library queues is then ordered after the other's only through a
    handshake (an event), not by the stream itself."""
    import cupy
    import torch

    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # one C call; the public query costs ~13 µs
    theirs = raw(device) if raw is not None else torch.cuda.current_stream(device).cuda_stream
    if device == cupy.cuda.runtime.getDevice():
        ours = cupy.cuda.get_current_stream().ptr
    else:
        with cupy.cuda.Device(device):
            ours = cupy.cuda.get_current_stream().ptr
    return None if theirs == ours else theirs


def _cuda_view(tensor):
    """A CuPy array on a CUDA tensor's memory (no copy, the tensor kept alive by it; its lazy
    conjugate and negation resolved by the caller), or None where
    DLPack must carry it: torch's current stream is not CuPy's, the tensor is empty or lies on
    another device than CuPy's current one, or NumPy has no such dtype."""
    import cupy

    device = tensor.get_device()
    if tensor.numel() == 0 or device != cupy.cuda.runtime.getDevice() or torch_stream_if_other(device) is not None:
        return None
    try:
        dtype = np.dtype(str(tensor.dtype).removeprefix("torch."))
    except TypeError:
        return None
    strides = tuple(stride * dtype.itemsize for stride in tensor.stride())  # torch's are ≥ 0
    span = dtype.itemsize + sum((size - 1) * stride for size, stride in zip(tensor.shape, strides))
    memory = cupy.cuda.UnownedMemory(tensor.data_ptr(), span, tensor, device)
    return cupy.ndarray(tuple(tensor.shape), dtype, cupy.cuda.MemoryPointer(memory, 0), strides)


_TORCH_GPU, _TORCH_CPU = Origin("torch", True), Origin("torch", False)
_CUPY, _NUMPY = Origin("cupy", True), Origin("numpy", False)


def one_stack(costs, what: str):
    """``costs`` as one (B, n, m) array where a call takes only that (``what``: the call's words): a
    list or tuple of matrices of one shape stacked in their own library (:func:`stacked`: torch in,
    torch out); of several shapes, or of no exact common type, refused."""
    if not isinstance(costs, (list, tuple)) or not costs:
        return costs
    for index, matrix in enumerate(costs):
        check_dense(matrix, f"problem {index} of the list's costs")
    try:
        shapes = {tuple(np.shape(matrix)) for matrix in costs}
    except ValueError:  # a ragged nested list
        shapes = {None, ()}
    if len(shapes) != 1:
        raise LapInputError(f"{what}: these matrices are of {len(shapes)} shapes")
    # nested lists as the arrays NumPy makes of each (a list of them stacked whole: one float64)
    costs = [nested_array(matrix) if library_of(matrix) == "builtins" else matrix for matrix in costs]
    stack = stacked(costs)
    if stack is None and {library_of(matrix) for matrix in costs} == {"torch"}:
        stack = stacked([as_array(matrix)[0] for matrix in costs])  # integers beside floats: exact in float64?
    if stack is None:  # a stack NumPy would make rounds them (int64 past 2^53 as float64)
        raise LapInputError(f"{what}: these matrices share no exact type (integers past 2^53 beside floats, or "
                            "unsigned past 2^63 beside signed); give them one dtype")
    return stack


def stacked(matrices):
    """A list of matrices of one shape as one stack of their own library (torch, CuPy), so that the
    answer comes back as theirs; other lists (NumPy arrays, nested lists) as NumPy's; None where
    their values share no exact type (common_dtype; and integers beside floats, which torch would
    stack as the float type: 2^25 + 1 rounds in float32, 70000 is inf in float16): then they are
    solved as a ragged list, each member in its own dtype."""
    libraries = {library_of(m) for m in matrices}
    if libraries == {"torch"}:
        import torch

        floats = {bool(m.is_floating_point()) for m in matrices}
        if len(floats) != 1:
            return None
        try:
            return torch.stack(list(matrices))
        except RuntimeError:  # "Promotion for uint16, uint32, uint64 types is not supported": each as it is
            return None
    if len(libraries & {"torch", "cupy"}) and libraries != {"cupy"}:
        raise LapInputError(f"a list of problems must be of one array library, got {', '.join(sorted(libraries))}")
    if libraries != {"cupy"} and not all(isinstance(m, np.ndarray) for m in matrices):
        # nested lists each as NumPy reads it alone (the whole list as one array: float64, which rounds
        # int64 past 2^53 beside floats); text, None or objects: the list, refused in a list's words
        own = [m if isinstance(m, np.ndarray) else nested_array(m) if isinstance(m, (list, tuple)) else np.asarray(m)
               for m in matrices]
        if not all(m.dtype.kind in "biuf" for m in own):
            return matrices
        matrices = own
    common = common_dtype(matrices)  # int64 beside uint64: not NumPy's float64, which rounds past 2^53
    if common is None:
        return None
    if libraries == {"cupy"}:
        import cupy

        return cupy.stack([m.astype(common, copy=False) for m in matrices])
    if common == object:
        return matrices
    return np.stack([np.asarray(m).astype(common, copy=False) for m in matrices])  # np.matrix: plain arrays


def common_dtype(matrices, dtypes: set | None = None) -> np.dtype | None:
    """The dtype a list's matrices share exactly: NumPy's promotion, but int64 for integers of both
    signs up to 64 bits (NumPy promotes int64 beside uint64 to float64, which rounds costs past
    2^53); None where an unsigned one holds 2^63 or more beside a signed one, or a 64-bit integer
    one holds a value past 2^53 beside a float one (no exact common type: each is solved as it is,
    or refused where they must share one). ``dtypes``: theirs, if known."""
    dtypes = {m.dtype for m in matrices} if dtypes is None else dtypes
    try:
        common = np.result_type(*dtypes)
    except TypeError:  # no common type at all (strings beside numbers): the dtype checks name it
        return np.dtype(object)
    if common.kind != "f":
        return common
    if any(d.kind not in "biu" for d in dtypes):  # floats, beside integers float64 may round
        wide = [m for m in matrices if m.dtype.kind in "iu" and m.dtype.itemsize == 8 and m.size]
        return None if any(abs(int(m.max())) > 2**53 or abs(int(m.min())) > 2**53 for m in wide) else common
    if any(m.dtype.kind == "u" and m.size and int(m.max()) >= 2**63 for m in matrices):
        return None
    return np.dtype(np.int64)
