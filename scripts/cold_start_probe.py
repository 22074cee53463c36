"""Where a cold CUDA process's start-up goes (issue #12, docs/dispatch.md "Start-up").

    python scripts/cold_start_probe.py MATRIX.npy [--runs 5]

Runs each variant as a fresh process, ``--runs`` times, and prints its wall time: read an NPY
matrix with NumPy and copy it to the device, with the CUDA driver started
- ``serial``: first, then NumPy's import and the read (as the driver launcher did);
- ``thread``: in a thread (ctypes, which releases the GIL) while NumPy imports;
- ``fork``: in a forked child that copies the file's bytes itself;
and, for ``serial`` and ``thread``, ending with a normal exit, ``os._exit`` (``_x``), or the
context's teardown left to a child that waits for the process's exit (``_fx``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

VARIANTS = ("serial", "serial_x", "serial_fx", "thread", "thread_x", "thread_fx", "fork")


def ctypes_start():
    import ctypes

    driver = ctypes.CDLL("libcuda.so.1")
    assert driver.cuInit(0) == 0
    device, context = ctypes.c_int(), ctypes.c_void_p()
    assert driver.cuDeviceGet(ctypes.byref(device), 0) == 0
    assert driver.cuDevicePrimaryCtxRetain(ctypes.byref(context), device) == 0
    assert driver.cuCtxSetCurrent(context) == 0
    driver.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
    driver.cuMemcpyHtoD_v2.argtypes = [ctypes.c_uint64, ctypes.c_void_p, ctypes.c_size_t]
    return driver


def upload(driver, address: int, nbytes: int) -> None:
    import ctypes

    assert driver.cuCtxSetCurrent(ctypes.c_void_p(primary_context(driver))) == 0
    pointer = ctypes.c_uint64()
    assert driver.cuMemAlloc_v2(ctypes.byref(pointer), nbytes) == 0
    assert driver.cuMemcpyHtoD_v2(pointer.value, address, nbytes) == 0


def primary_context(driver) -> int:
    import ctypes

    device, context = ctypes.c_int(), ctypes.c_void_p()
    driver.cuDeviceGet(ctypes.byref(device), 0)
    driver.cuDevicePrimaryCtxRetain(ctypes.byref(context), device)
    return context.value


def detach_teardown() -> None:
    read_end, write_end = os.pipe()
    if os.fork() == 0:
        os.close(write_end)
        for fd in (0, 1, 2):
            os.close(fd)
        os.read(read_end, 1)
        os._exit(0)
    os.close(read_end)


def variant(name: str, path: str) -> None:
    base = name.split("_")[0]
    if base == "serial":
        driver = ctypes_start()
        import numpy as np

        matrix = np.load(path)
        upload(driver, matrix.ctypes.data, matrix.nbytes)
    elif base == "thread":
        import threading

        box = {}
        thread = threading.Thread(target=lambda: box.setdefault("driver", ctypes_start()))
        thread.start()
        import numpy as np

        matrix = np.load(path)
        thread.join()
        upload(box["driver"], matrix.ctypes.data, matrix.nbytes)
    else:  # fork: the child starts the driver and uploads the file's bytes; the parent reads with NumPy
        done_read, done_write = os.pipe()
        if os.fork() == 0:
            import ctypes

            driver = ctypes_start()
            data = open(path, "rb").read()
            upload(driver, ctypes.cast(ctypes.c_char_p(data), ctypes.c_void_p).value, len(data))
            os.write(done_write, b"1")
            for fd in (0, 1, 2):
                os.close(fd)
            os._exit(0)
        import numpy as np

        np.load(path)
        os.read(done_read, 1)
    sys.stdout.flush()
    if name.endswith("_fx"):
        detach_teardown()
        os._exit(0)
    if name.endswith("_x"):
        os._exit(0)


def main() -> None:
    if sys.argv[1] == "--variant":
        variant(sys.argv[2], sys.argv[3])
        return
    path = sys.argv[1]
    runs = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 5
    walls = {name: [] for name in VARIANTS}
    for _ in range(runs):
        for name in VARIANTS:
            start = time.perf_counter()
            subprocess.run([sys.executable, __file__, "--variant", name, path], check=True)
            walls[name].append(round((time.perf_counter() - start) * 1e3))
    for name, times in walls.items():
        print(f"{name:10s} wall ms {sorted(times)}")


if __name__ == "__main__":
    main()
