"""Shared fixtures: a fixed, printed seed per test, the GPU marker's skip, and the CPU member loop's two paths."""

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


@pytest.fixture
def threads_only(monkeypatch):
    """The CPU member loop without its worker process (lapcli.engines.cpu.member_process): its
    helper thread's path, whatever an earlier test started."""
    monkeypatch.setenv("LAPCLI_WORKER_PROCESS", "0")
    share_small_lists(monkeypatch)


def share_small_lists(monkeypatch):
    """Lists of MEMBERS_SHARED_FROM members shared whatever their entries: the tests' lists are
    smaller than those where sharing pays (lapcli.engines.cpu.member_threads.sharing_pays). ``auto``
    picks the CPU member loop for a list on a GPU machine too (pin_cpu_engines)."""
    from lapcli.engines.cpu import member_threads

    pin_cpu_engines(monkeypatch)
    monkeypatch.setattr(member_threads, "SHARED_ENTRIES", 0)
    monkeypatch.setattr(member_threads, "SHARED_MEAN_ENTRIES", 0)


def pin_cpu_engines(monkeypatch):
    """``auto`` picks the CPU engines (a list: the member loop, scipy-batch), as on a machine without
    a GPU: the tests that read that loop's own behaviour (its threads, its worker, its messages)
    run the same on the GPU machine."""
    from lapcli.engines import auto

    monkeypatch.setattr(auto, "cuda_status", lambda: (False, "the tests pin the CPU engines"))


@pytest.fixture
def cpu_engines(monkeypatch):
    """``auto`` picks the CPU engines for this test (pin_cpu_engines)."""
    pin_cpu_engines(monkeypatch)


@pytest.fixture
def worker_process(monkeypatch):
    """The CPU member loop's worker process, started (a fresh one where an earlier test ended it)
    and loaded; two cores assumed, so that the engine uses it on a one-core machine too, and small
    lists shared (share_small_lists)."""
    from lapcli.engines.cpu import member_process, scipy_batch

    monkeypatch.delenv("LAPCLI_WORKER_PROCESS", raising=False)
    monkeypatch.setattr(scipy_batch, "CPUS", max(2, scipy_batch.CPUS))
    share_small_lists(monkeypatch)
    started = member_process._WORKERS.get(os.getpid())
    if started is not None and started.dead:
        member_process._WORKERS.pop(os.getpid())
    for _ in range(member_process.START_ON):
        member_process.worker()
    started = member_process._WORKERS.get(os.getpid())
    assert started is not None and started.ready.wait(30), "the worker process did not start"
    assert started.usable()
    return started
