"""kernels/sap_rounds.cu launched on the GPU where its shared memory needs the opt-in."""

import numpy as np
import pytest

pytestmark = pytest.mark.gpu


def test_the_tail_searches_launch_where_static_and_dynamic_shared_memory_pass_48_kb(rng):
    """16-D points take blocks of 256 threads; with 10 columns a thread the columns' state is 43,520
    dynamic bytes beside the kernel's ~5.9 KB of its own: under 48 KB alone, past it together,
    where the driver refuses a launch that did not opt in. One free row searched from v = 0 over
    every column takes its nearest one."""
    cupy = pytest.importorskip("cupy")
    from lapcli.cuda import points as device_points
    from lapcli.cuda import sap_rounds
    from lapcli.cuda.runtime import current_gpu
    from lapcli.engines.cuda.sap_points import tail_block_threads
    from lapcli.points import prepare_points

    dim, threads = 16, tail_block_threads(16)
    blocks = current_gpu().sms
    m = 9 * threads * blocks + 1
    assert sap_rounds.slots(m, blocks, threads) == 10 and threads == 256
    row, columns = rng.random((1, dim)), rng.random((m, dim))
    points = device_points.upload(prepare_points(row, columns, "sqeuclidean"), "auction")
    records = cupy.zeros((1, dim + 2), dtype=cupy.float64)
    records[:, :dim] = points.rows
    records[:, dim] = -1  # no lowered pair
    result = device_points.search_lowered(points, records, cupy.zeros(m), cupy.full(1, -1, dtype=cupy.int32),
                                          threads, 1.0)
    result.checked_stats()
    assert int(result.col_of_row[0]) == int(np.argmin(((columns - row) ** 2).sum(axis=1)))
