"""The host floor of the matcher's ragged forms: what torch charges for the per-image tensors they
hand back or read, whatever the solver. For B images of k pairs each, medians of 2000 calls, µs:

- ``2B views``: match's pairs, two ``split`` calls of a (2, B·k) int64 CUDA tensor into B pieces
  each, made and dropped (DETR's matcher returns two tensors an image);
- ``kept, then dropped``: the same, each call's list dropped when the next one is made;
- ``B views``: the columns of ``list`` (one tensor an image);
- ``reading B tensors``: ``list``'s input, each slice's address, shape, strides, dtype and device.

    python benchmarks/matcher_tensor_floor.py

Needs torch with a GPU.
"""

from __future__ import annotations

import statistics
import time


def median_us(call, repeat: int = 2000) -> float:
    for _ in range(100):
        call()
    times = []
    for _ in range(repeat):
        began = time.perf_counter_ns()
        call()
        times.append(time.perf_counter_ns() - began)
    return round(statistics.median(times) / 1e3, 1)


def main() -> None:
    import torch

    device = torch.device("cuda")
    for batch, k in ((32, 25), (64, 50)):
        pairs = torch.empty((2, batch * k), dtype=torch.int64, device=device)
        sizes = [k] * batch
        kept = []

        def keep_one():
            kept.append(list(zip(pairs[0].split(sizes), pairs[1].split(sizes))))
            if len(kept) > 1:
                kept.pop(0)

        block = torch.rand(batch, 300, batch * k, device=device)
        slices = [block[i, :, i * k:(i + 1) * k] for i in range(batch)]

        def read():
            for x in slices:
                x.data_ptr(), x.shape, x.stride(), x.dtype, x.get_device()

        print(f"B={batch}: 2B views {median_us(lambda: list(zip(pairs[0].split(sizes), pairs[1].split(sizes))))} µs, "
              f"kept, then dropped {median_us(keep_one)} µs, B views {median_us(lambda: pairs[0].split(sizes))} µs, "
              f"reading B tensors {median_us(read)} µs", flush=True)


if __name__ == "__main__":
    main()
