"""The runners of ``lap bench --suite batch`` (lapcli.bench.batch): each one's probe (whether it can
run here), its untimed setup (the stack moved where it solves, and its imports: scipy's is ~0.3 s,
which ``--warmup 0`` must not time), its timed solve and its answer on the host."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class BatchRunner:
    name: str
    available: Callable[[], tuple[bool, str]]
    setup: Callable[[np.ndarray], Any]  # untimed: the host stack → what ``solve`` takes
    solve: Callable[[Any], Any]  # timed: returns once the answer is complete (synchronised)
    to_host: Callable[[Any], np.ndarray]  # untimed: the answer → col_ind (B, n), −1 unassigned


class NotThisCell(Exception):
    """A runner's setup cannot take this cell (a peer's compile-time limits): the cell reads
    ``skipped`` with the reason, not ``error``."""


def cuda_batch_probe() -> tuple[bool, str]:
    from ..engines import registry

    return registry.get("cuda-batch").available()


def torch_probe(cuda: bool = True) -> Callable[[], tuple[bool, str]]:
    def probe() -> tuple[bool, str]:
        try:
            import torch
            from torch_linear_assignment import batch_linear_assignment  # noqa: F401
        except Exception as error:
            return False, f"torch-linear-assignment is not importable ({type(error).__name__})"
        if cuda and not torch.cuda.is_available():
            return False, "torch sees no CUDA device"
        return True, "torch-linear-assignment is installed"

    return probe


def lapx_probe() -> tuple[bool, str]:
    from ..engines.cpu.lapx import lapx_module

    try:
        lapx = lapx_module()
    except Exception as error:
        return False, f"lapx is not importable ({error})"
    if not hasattr(lapx, "lapjvx_batch"):
        return False, f"lapx {getattr(lapx, '__version__', '?')} has no lapjvx_batch (lapx >= 0.8)"
    return True, "lapx is installed"


def always_available() -> tuple[bool, str]:
    return True, "always available"


def lapcli_runner(engine: str, device_to_device: bool = False) -> BatchRunner:
    def setup(stack):  # the pipeline and the engine imported here, untimed (scipy-batch's scipy: ~0.3 s)
        from ..engines import registry
        from ..pipeline import solve_batch  # noqa: F401

        registry.get(engine).load()
        if device_to_device:
            import cupy

            on_gpu = cupy.asarray(stack)
            cupy.cuda.get_current_stream().synchronize()
            return on_gpu
        return stack

    def solve(stack):
        from ..pipeline import solve_batch

        col_ind = solve_batch(stack, solver=engine).col_ind
        if device_to_device:
            import cupy

            cupy.cuda.get_current_stream().synchronize()
        return col_ind

    def to_host(col_ind):
        if device_to_device:
            import cupy

            return cupy.asnumpy(col_ind)
        return np.asarray(col_ind)

    probe = cuda_batch_probe if engine == "cuda-batch" else always_available
    return BatchRunner(engine + (":d2d" if device_to_device else ""), probe, setup, solve, to_host)


def torch_runner(device_to_device: bool = False) -> BatchRunner:
    def setup(stack):
        import torch
        from torch_linear_assignment import batch_linear_assignment  # noqa: F401  (imported untimed)

        tensor = torch.from_numpy(stack)
        if device_to_device:
            tensor = tensor.cuda()
            torch.cuda.synchronize()
        return tensor

    def solve(tensor):
        import torch
        from torch_linear_assignment import batch_linear_assignment

        if device_to_device:
            out = batch_linear_assignment(tensor)
            torch.cuda.synchronize()
            return out
        return batch_linear_assignment(tensor.cuda()).cpu()

    def to_host(out):
        return out.cpu().numpy().astype(np.int64)

    return BatchRunner("torch-la" + (":d2d" if device_to_device else ""), torch_probe(), setup, solve, to_host)


def lapx_runner() -> BatchRunner:
    def solve(stack):
        from ..engines.cpu.lapx import lapx_module

        return stack.shape, lapx_module().lapjvx_batch(stack, extend_cost=stack.shape[1] != stack.shape[2],
                                                       return_cost=True)

    def to_host(answer):
        (batch, n, _), (_, rows, cols) = answer
        col_ind = np.full((batch, n), -1, dtype=np.int64)
        for b in range(batch):
            col_ind[b, np.asarray(rows[b], dtype=np.int64)] = cols[b]
        return col_ind

    def setup(stack):
        from ..engines.cpu.lapx import lapx_module

        lapx_module().lapjvx_batch(np.zeros((1, 2, 2)), return_cost=True)  # loaded untimed, first call too
        return stack

    return BatchRunner("lapx-batch", lapx_probe, setup, solve, to_host)


def scipy_loop_runner() -> BatchRunner:
    def solve(stack):
        from scipy.optimize import linear_sum_assignment

        col_ind = np.full(stack.shape[:2], -1, dtype=np.int64)
        for b in range(stack.shape[0]):
            rows, cols = linear_sum_assignment(stack[b])
            col_ind[b, rows] = cols
        return col_ind

    def setup(stack):
        from scipy.optimize import linear_sum_assignment  # noqa: F401  (imported untimed: ~0.3 s)

        return stack

    return BatchRunner("scipy-loop", always_available, setup, solve, lambda col_ind: col_ind)


def batch_runners() -> dict[str, BatchRunner]:
    """Every runner of the suite, in table order."""
    runners = [lapcli_runner("cuda-batch"), lapcli_runner("cuda-batch", True), torch_runner(), torch_runner(True),
               lapx_runner(), lapcli_runner("scipy-batch"), scipy_loop_runner()]
    return {runner.name: runner for runner in runners}
