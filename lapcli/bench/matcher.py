"""``lap bench --suite matcher``: the matcher of a DETR-style training step, every runner on the same block.

A cell is B images × Q queries × at most K targets: each image gets k_i targets, uniform in 1..K
(seeded per cell), and the cost block is DETR's ``C.view(B, Q, Σk)``, float32 U[0, 1) on the GPU
as a torch tensor (what a training step holds). Image i solves ``C[i, :, s_i : s_i + k_i]``.
Runners (skipped with a note where they cannot run here):

- ``scipy-loop``   DETR's ``HungarianMatcher``: the block ``.cpu()``, then scipy per image
- ``match``        ``lapcli.match(C, k)``: one call, the pairs left on the GPU
- ``list``         ``lapcli.batch_linear_assignment`` on the list of the B slices (made before the
                   clock starts): the columns, as the peers return them
- ``sizes``        ``lapcli.batch_linear_assignment`` on a (B, Q, K) stack padded with NaN (made
                   before the clock starts: the caller holds it), with sizes (Q, k)
- ``padded``       ``lapcli.solve_batch`` on the block padded to (B, Q, K) with a constant (the
                   caller's padding: after the transpose, constant rows that change no answer)
- ``torch-la``     torch-linear-assignment on the same constant-padded stack
- ``ha4detr``      HA4DETR (lapcli.bench.ha4detr, where ``LAPCLI_HA4DETR`` names its source) on the
                   block padded to (B, 300, 300) with +inf, as its demo passes it; cells of 300
                   queries and at most 300 targets, the others read ``skipped``

The three padded runners start from the matcher's block, as a training step does: their time
includes the padding (``pad_block``: the counts' copy to the GPU, a gather and a fill), which a
method that takes a padded stack needs.

Timing, checks and the table are those of the batch suite (lapcli.bench.batch): warm-up, then
timed calls until ``min_seconds``; every runner's per-image objectives are compared with the
runners' answer most of them agree with (lapcli.bench.batch.mismatches). GPU runners synchronise
before the clock stops.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..problem import objective_tolerance
from . import ha4detr
from .batch import BatchTiming, time_runner
from .batch_runners import BatchRunner, NotThisCell, always_available, cuda_batch_probe, torch_probe

MATCHER_CELLS: tuple[tuple[int, int, int], ...] = (  # (B, Q, K)
    (8, 100, 20), (32, 300, 50), (64, 300, 100), (16, 300, 300), (16, 900, 100), (128, 100, 30))
PAD = 1e6  # the constant of the padded runners' missing targets


@dataclass
class MatcherCase:
    block: Any  # (B, Q, Σk) float32 torch tensor, on the GPU where torch sees one
    counts: list[int]
    host: np.ndarray  # the same block on the host, for the check

    @property
    def starts(self) -> list[int]:
        return np.concatenate([[0], np.cumsum(self.counts)[:-1]]).astype(int).tolist()

    def image(self, i: int) -> np.ndarray:
        return self.host[i, :, self.starts[i]:self.starts[i] + self.counts[i]]

    def padded(self, fill: float, width: int | None = None):
        """(B, Q, width) torch CUDA tensor (width K, the most targets, by default): image i's
        targets first, ``fill`` after."""
        import torch

        batch, queries, _ = self.block.shape
        width = max(self.counts) if width is None else width
        out = torch.full((batch, queries, width), fill, dtype=self.block.dtype, device=self.block.device)
        for i, (start, count) in enumerate(zip(self.starts, self.counts)):
            out[i, :, :count] = self.block[i, :, start:start + count]
        return out


def pad_block(block, counts, width: int, fill: float):
    """(B, Q, width) from the matcher's (B, Q, Σk) block: image i's k_i targets first, ``fill``
    after. What a caller of a padded-stack solver writes, vectorised: the counts to the device (a
    list; a tensor already there is used as it is), one gather, one fill (a Python loop of B slice
    copies costs ~10 µs an image)."""
    import torch

    batch, queries, total = block.shape
    if total == 0:
        return torch.full((batch, queries, width), fill, dtype=block.dtype, device=block.device)
    sizes = torch.as_tensor(counts, device=block.device)
    starts = torch.cumsum(sizes, 0) - sizes
    column = torch.arange(width, device=block.device)
    source = (starts[:, None] + column).clamp_(max=total - 1)
    padded = block.gather(2, source[:, None, :].expand(batch, queries, width))
    return padded.masked_fill_((column >= sizes[:, None])[:, None, :], fill)


def matcher_case(batch: int, queries: int, most: int, seed: int) -> MatcherCase:
    import torch

    rng = np.random.default_rng(seed * 1_000_003 + batch * 7919 + queries * 31 + most)
    counts = rng.integers(1, most + 1, batch).tolist()
    host = rng.random((batch, queries, sum(counts)), dtype=np.float32)
    block = torch.from_numpy(host)
    return MatcherCase(block.cuda() if torch.cuda.is_available() else block, counts, host)


def _synchronised(result):
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return result


def _pairs_from_col_ind(col_ind, case: MatcherCase) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per image (queries, targets) from a (B, Q) column of each query (−1: none; ≥ k_i: padding)."""
    host = np.asarray(col_ind.cpu() if hasattr(col_ind, "cpu") else col_ind)
    pairs = []
    for i, count in enumerate(case.counts):
        rows = np.flatnonzero((host[i] >= 0) & (host[i] < count))
        pairs.append((rows, host[i, rows]))
    return pairs


def matcher_runners() -> dict[str, BatchRunner]:
    """Every runner of the suite, in table order; each takes a MatcherCase."""
    from scipy.optimize import linear_sum_assignment

    def scipy_loop(case):
        blocks = case.block.cpu().split(case.counts, -1)
        return [linear_sum_assignment(c[i]) for i, c in enumerate(blocks)]

    def match(case):
        from ..api import match as lapcli_match

        return _synchronised(lapcli_match(case.block, case.counts))

    def solve_list(slices):
        from ..api import batch_linear_assignment

        return _synchronised(batch_linear_assignment(slices))

    def solve_sized(prepared):
        from ..api import batch_linear_assignment

        stack, sizes = prepared
        return _synchronised(batch_linear_assignment(stack, sizes=sizes))

    def solve_padded(case):
        from ..pipeline import solve_batch

        return _synchronised(solve_batch(pad_block(case.block, case.counts, max(case.counts), PAD)).col_ind)

    def torch_la(case):
        from torch_linear_assignment import batch_linear_assignment

        return _synchronised(batch_linear_assignment(pad_block(case.block, case.counts, max(case.counts), PAD)))

    def ha4detr_setup(case):
        if not ha4detr.takes(case.block.shape[1], case.counts):
            raise NotThisCell(f"HA4DETR solves {ha4detr.ROWS} queries × at most {ha4detr.COLUMNS} targets")
        return ha4detr.module(), case

    def ha4detr_solve(prepared):
        import torch

        peer, case = prepared
        counts = torch.tensor(case.counts, dtype=torch.int32, device=case.block.device)
        return _synchronised(peer.hungarian_gpu(pad_block(case.block, counts, ha4detr.COLUMNS, float("inf")), counts))

    def pairs_of_list(col_ind):
        return [(np.flatnonzero(c.cpu().numpy() >= 0), c.cpu().numpy()[c.cpu().numpy() >= 0]) for c in col_ind]

    runners = [
        BatchRunner("scipy-loop", always_available, lambda case: case, scipy_loop, lambda pairs: pairs),
        BatchRunner("match", cuda_batch_probe, lambda case: case, match,
                    lambda pairs: [(r.cpu().numpy(), c.cpu().numpy()) for r, c in pairs]),
        BatchRunner("list", cuda_batch_probe, lambda case: [case.block[i, :, s:s + k] for i, (s, k)
                                                         in enumerate(zip(case.starts, case.counts))],
                    solve_list, pairs_of_list),
        BatchRunner("sizes", cuda_batch_probe,
                    lambda case: (case.padded(float("nan")), (np.full(len(case.counts), case.block.shape[1]),
                                                              np.array(case.counts))),
                    solve_sized, None),
        BatchRunner("padded", cuda_batch_probe, lambda case: case, solve_padded, None),
        BatchRunner("torch-la", torch_probe(), lambda case: case, torch_la, None),
        BatchRunner("ha4detr", ha4detr.available, ha4detr_setup, ha4detr_solve,
                    lambda out: ha4detr.pairs_of(out.cpu().numpy())),
    ]
    return {runner.name: runner for runner in runners}


def run_matcher_bench(cells, runner_names, runners, *, repeat, warmup, seed, min_seconds, on_progress=None):
    """Sweep cells × runners; per cell every runner's per-image objectives are compared with those
    most runners agree with (lapcli.bench.batch.mismatches). Returns (timings, failures)."""
    from .batch import BatchSettings, mismatches

    settings = BatchSettings(repeat=repeat, warmup=warmup, seed=seed, min_seconds=min_seconds)
    results, failures = [], []
    for batch, queries, most in cells:
        case = matcher_case(batch, queries, most, seed)
        answers = []
        for name in runner_names:
            runner = runners[name]
            timing = BatchTiming(batch, queries, f"K={most}", name, "ok")
            answer = time_runner(_with_case(runner, case), case, settings, timing)
            why = "" if answer is None else _not_a_matching(answer, queries, case.counts)
            if why:
                timing.status, timing.message = "invalid", why
                failures.append(f"{batch}×{queries}×{most}: {name}: {timing.message}")
            elif answer is not None:
                objectives = np.array([case.image(i)[rows, cols].astype(np.float64).sum() if len(rows) else 0.0
                                       for i, (rows, cols) in enumerate(answer)])
                timing.objective_total = float(objectives.sum())
                answers.append((timing, objectives))
            results.append(timing)
            if on_progress:
                on_progress(f"{batch}×{queries}×{most} {name}: {timing.status}")
        for timing, _, _, (reference, _) in mismatches(answers, lambda mine, theirs: differing(case, theirs, mine)):
            timing.status, timing.message = "mismatch", f"objectives differ from {reference}"
            failures.append(f"{batch}×{queries}×{most}: {timing.runner}: {timing.message}")
            if on_progress:
                on_progress(f"{batch}×{queries}×{most} {timing.runner}: mismatch")
    return results, failures


def differing(case: MatcherCase, objectives: np.ndarray, reference: np.ndarray) -> list[int]:
    """The images whose objectives differ from the reference's by more than the float tolerance of
    that image's costs (lapcli.problem.objective_tolerance), as the batch suite checks its stacks: a
    fixed rtol of 1e-5 passed an answer 3.5e-5 worse where the tolerance was 1.4e-9."""
    return [int(i) for i in np.flatnonzero(objectives != reference)
            if abs(objectives[i] - reference[i]) > objective_tolerance(case.image(i))]


def _not_a_matching(answer, queries: int, counts) -> str:
    """Why per-image pairs are no matcher's answer ('' where they are one): each image min(Q, k)
    pairs of distinct queries and distinct targets of its own."""
    for i, ((rows, cols), count) in enumerate(zip(answer, counts)):
        rows, cols = np.asarray(rows), np.asarray(cols)
        if len(rows) != min(queries, count) or len(cols) != len(rows):
            return f"image {i} has {len(rows)} pairs, not min(Q, k) = {min(queries, count)}"
        if len(rows) and (rows.min() < 0 or rows.max() >= queries or cols.min() < 0 or cols.max() >= count):
            return f"image {i} pairs a query or a target outside its {queries} × {count}"
        if len(set(rows.tolist())) != len(rows) or len(set(cols.tolist())) != len(cols):
            return f"image {i} takes a query or a target twice"
    return ""


def _with_case(runner: BatchRunner, case: MatcherCase) -> BatchRunner:
    """The runner with its answer read back as per-image pairs (padded runners' columns decoded)."""
    to_host = runner.to_host or (lambda col_ind: _pairs_from_col_ind(col_ind, case))
    return BatchRunner(runner.name, runner.available, runner.setup, runner.solve, to_host)
