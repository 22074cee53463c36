"""lapcli.cuda.runtime's driver calls, without a GPU: a stand-in for cuda.bindings' driver module
records what the runtime asks of it."""

import types

import pytest

from lapcli.cuda import runtime

SET_DYNAMIC, GET_STATIC = "max dynamic shared", "static shared"


def stand_in_driver(static: int, calls: list):
    """The parts of cuda.bindings.driver a Kernel's shared-memory calls use; a kernel of ``static``
    bytes of static shared memory; every attribute set goes into ``calls``."""
    return types.SimpleNamespace(
        cuLaunchKernel=None, cuLaunchCooperativeKernel=None,
        CUresult=types.SimpleNamespace(CUDA_SUCCESS=0),
        CUfunction_attribute=types.SimpleNamespace(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES=SET_DYNAMIC,
                                                   CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES=GET_STATIC),
        cuFuncGetAttribute=lambda attribute, function: (0, static if attribute == GET_STATIC else 0),
        cuFuncSetAttribute=lambda function, attribute, value: calls.append((attribute, value)) or (0,))


@pytest.mark.parametrize("static, dynamic, opts_in", [
    (0, 48 * 1024, False),
    (0, 48 * 1024 + 1, True),
    (1024, 48 * 1024 - 1024, False),
    (1024, 48 * 1024 - 1023, True),
    # kernels/sap_rounds.cu's tail for 16-D points: 256 threads, 10 columns a thread (17 bytes
    # each), beside its own 5,856 bytes; the driver refused this launch without the opt-in
    (5856, 10 * 256 * 17, True),
    (4576, 11 * 256 * 17, True),
])
def test_a_kernel_opts_in_where_static_and_dynamic_shared_memory_pass_48_kb(monkeypatch, static, dynamic, opts_in):
    calls = []
    monkeypatch.setattr(runtime, "_driver", lambda: stand_in_driver(static, calls))
    kernel = runtime.Kernel(object(), "k", "p")
    kernel.allow_shared(dynamic)
    assert calls == ([(SET_DYNAMIC, dynamic)] if opts_in else [])
