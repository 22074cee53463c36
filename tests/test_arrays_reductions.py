"""lapcli.arrays.all_true and any_each: a device mask is reduced down its rows on the device and
the rest on the host (CuPy's whole-array reductions compile CUB kernels, seconds each on a fresh
machine). On the CPU a stand-in with CuPy's methods takes the device branch, so the split of a
mask into 4,096-wide rows and its tail is checked where CI runs; tests/test_cupy_imports_gpu.py
runs CuPy itself."""

import numpy as np
import pytest

from lapcli.arrays import all_true, any_each


class DeviceLike:
    """The CuPy methods the device branch calls, on a NumPy array (not an ndarray subclass)."""

    def __init__(self, values):
        self.values = np.asarray(values)

    size = property(lambda self: self.values.size)
    ndim = property(lambda self: self.values.ndim)

    def ravel(self):
        return DeviceLike(self.values.ravel())

    def reshape(self, *shape):
        return DeviceLike(self.values.reshape(*shape))

    def __getitem__(self, index):
        return DeviceLike(self.values[index])

    def all(self, axis=None):
        return DeviceLike(self.values.all(axis=axis))

    def any(self, axis=None):
        return DeviceLike(self.values.any(axis=axis))

    def get(self):
        return self.values.copy()


@pytest.mark.parametrize("shape", [(0,), (7,), (1 << 16,), (1 << 16 | 1,), (70_000,), (300, 300), (2, 4096, 9),
                                   (5, 4097)])
def test_all_true_is_numpys_all_on_either_branch(rng, shape):
    mask = np.ones(shape, dtype=bool)
    assert all_true(mask) and all_true(DeviceLike(mask))
    for _ in range(3 if mask.size else 0):  # one False anywhere, the tail past the last 4,096 too
        flat = mask.ravel().copy()
        flat[rng.integers(0, flat.size)] = False
        assert not all_true(flat.reshape(shape)) and not all_true(DeviceLike(flat.reshape(shape)))
    if mask.size:
        flat = mask.ravel().copy()
        flat[-1] = False
        assert not all_true(DeviceLike(flat.reshape(shape)))


def test_any_each_names_the_members_holding_a_true(rng):
    mask = np.zeros((6, 5, 7), dtype=bool)
    mask[[1, 4], [0, 4], [6, 2]] = True
    for form in (mask, DeviceLike(mask)):
        np.testing.assert_array_equal(any_each(form), [False, True, False, False, True, False])
    assert any_each(np.zeros((0, 3, 3), dtype=bool)).shape == (0,)
