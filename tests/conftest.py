"""Shared fixtures: a fixed, printed seed per test, and the GPU marker's skip."""

import os
import zlib

import numpy as np
import pytest


@pytest.fixture
def rng(request):
    """A generator seeded by the test's node id (stable from run to run and machine to machine, and
    different for each test and parameter set); LAPCLI_TEST_SEED overrides it for every test."""
    seed = int(os.environ.get("LAPCLI_TEST_SEED", zlib.crc32(request.node.nodeid.encode("utf-8"))))
    print(f"{request.node.name}: seed {seed} (LAPCLI_TEST_SEED={seed} replays it)")
    return np.random.default_rng(seed)


def pytest_collection_modifyitems(config, items):
    from lapcli.engines import cuda_status

    available, why = cuda_status()
    if available:
        return
    skip = pytest.mark.skip(reason=f"needs CUDA: {why}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
