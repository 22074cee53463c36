"""Scale-out through Dask, on a real LocalCluster of CPU worker processes."""

import builtins
import gc
import json
import socket
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import lapcli
from lapcli import scale
from lapcli.errors import LapInputError
from lapcli.io.read import read_matrix
from lapcli.scale import Failed, solve_dask_array, solve_many
from tests.test_cli import assert_one_line_error, invoke

TIMING_KEYS = {"total_ms", "problems_per_second", "details", "certificate"}
NEEDS_DASK = "needs Dask: pip install 'lapcli[dask]'"


def import_distributed():
    """Dask is an optional peer: the tests that need it skip where it is not installed (the tests
    of what happens without it run everywhere)."""
    pytest.importorskip("dask.array", reason=NEEDS_DASK)
    return pytest.importorskip("distributed", reason=NEEDS_DASK)


@pytest.fixture(scope="module")
def client():
    distributed = import_distributed()
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=":0") as cluster:
        with distributed.Client(cluster) as client:
            yield client


def mixed_inputs(tmp_path, rng):
    """2-D and 3-D arrays, integer and float, and file specs of both ranks."""
    np.save(tmp_path / "stack.npy", rng.integers(0, 50, (4, 6, 7)))
    np.savetxt(tmp_path / "m.csv", rng.integers(0, 50, (5, 3)), delimiter=",", fmt="%d")
    return [rng.integers(0, 100, (8, 8)), rng.random((3, 5, 4)), str(tmp_path / "stack.npy"),
            rng.random((6, 9)), str(tmp_path / "m.csv")]


def in_process(item):
    cost = read_matrix(item) if isinstance(item, str) else item
    return lapcli.solve(cost) if np.ndim(cost) == 2 else lapcli.solve_batch(cost)


def test_results_come_back_in_input_order_with_the_in_process_objectives(client, tmp_path, rng):
    inputs = mixed_inputs(tmp_path, rng)
    results = solve_many(inputs, client=client)
    assert len(results) == len(inputs)
    for item, got in zip(inputs, results):
        want = in_process(item)
        assert type(got) is type(want)
        if isinstance(want, lapcli.BatchSolution):
            np.testing.assert_allclose(got.objectives, want.objectives, rtol=1e-12)
            assert got.col_ind.shape == want.col_ind.shape
        else:
            assert got.objective == pytest.approx(want.objective, rel=1e-12)
            assert got.report.n_rows == np.shape(read_matrix(item) if isinstance(item, str) else item)[0]


def test_an_infeasible_and_a_bad_dtype_member_are_named_and_the_others_solve(client, rng):
    good = rng.integers(0, 9, (4, 4))
    infeasible = np.array([[np.inf, np.inf], [1.0, 2.0]])
    bad_dtype = np.array([["a", "b"], ["c", "d"]])
    results = solve_many([good, infeasible, good.T.copy(), bad_dtype, rng.random((2, 3, 3))], client=client)
    assert results[0].objective == lapcli.solve(good).objective
    assert results[2].objective == lapcli.solve(good.T).objective
    assert isinstance(results[4], lapcli.BatchSolution)
    assert results[1] == Failed(1, "InfeasibleError", "cost matrix is infeasible", bad_input=False)
    assert isinstance(results[3], Failed) and results[3].index == 3 and results[3].bad_input
    assert results[3].error_type == "LapTypeError" and "\n" not in results[3].message


def _explode():
    raise RuntimeError("this input cannot be unpickled on a worker")


class ExplodesOnArrival:
    """Pickles on the client; unpickling it on a worker raises: scattering it fails."""

    def __reduce__(self):
        return _explode, ()


class PathThatExplodesOnArrival(str):
    """A file spec (not scattered: it travels inside its task) whose unpickling raises where the
    task graph is read: the task itself errors, outside solve_input's handler, as when a worker
    dies."""

    def __reduce__(self):
        return _explode, ()


@pytest.mark.parametrize("bad", [ExplodesOnArrival(), PathThatExplodesOnArrival("/nowhere/m.npy")],
                         ids=["scatter-fails", "task-fails"])
def test_an_input_that_cannot_reach_or_run_on_a_worker_fails_alone(client, rng, bad):
    good = rng.integers(0, 9, (5, 5))
    calls = []
    results = solve_many([good, bad, good.T.copy()], client=client, progress=lambda *args: calls.append(args))
    assert results[0].objective == lapcli.solve(good).objective
    assert results[2].objective == lapcli.solve(good.T).objective
    assert isinstance(results[1], Failed) and results[1].index == 1 and not results[1].bad_input
    assert results[1].message and "\n" not in results[1].message
    assert calls == [(1, 3), (2, 3), (3, 3)]


def test_progress_is_called_once_per_input_with_done_increasing(client, rng):
    calls = []
    inputs = [rng.integers(0, 9, (5, 5)) for _ in range(6)]
    solve_many(inputs, client=client, progress=lambda done, total: calls.append((done, total)))
    assert calls == [(done, 6) for done in range(1, 7)]


def test_solve_dask_array_equals_solve_batch_on_the_whole_stack(client, rng):
    import dask.array as da

    stack = rng.random((12, 7, 9))
    costs = da.from_array(stack, chunks=(4, 3, 9))  # 3 blocks along B; the other axes get rechunked
    lazy = solve_dask_array(costs)
    assert isinstance(lazy, da.Array) and lazy.shape == (12, 7) and lazy.dtype == np.int64
    assert lazy.numblocks == (3, 1)
    np.testing.assert_array_equal(client.compute(lazy).result(), lapcli.solve_batch(stack).col_ind)


def test_cli_dask_and_scheduler_give_the_same_json_lines_as_in_process(client, tmp_path, rng):
    np.save(tmp_path / "a.npy", rng.integers(0, 40, (3, 5, 5)))
    np.savetxt(tmp_path / "b.csv", rng.integers(0, 40, (6, 4)), delimiter=",", fmt="%d", header="x,y,z,w", comments="")
    np.save(tmp_path / "c.npy", rng.random((7, 7)))
    specs = [tmp_path / "a.npy", tmp_path / "b.csv", tmp_path / "c.npy"]

    def lines(*extra):
        result = invoke("solve", *specs, "--json", *extra)
        assert result.exit_code == 0, result.output
        return [{k: v for k, v in json.loads(line).items() if k not in TIMING_KEYS} for line in result.stdout.splitlines()]

    expected = lines()
    assert [line["input"] for line in expected] == [str(s) for s in specs]
    assert lines("--scheduler", client.scheduler.address) == expected
    assert lines("--dask") == expected  # a local cluster of its own, closed afterwards


def test_cli_a_failed_input_is_one_error_line_and_the_others_still_print(client, tmp_path, rng):
    np.save(tmp_path / "a.npy", rng.integers(0, 40, (5, 5)))
    np.save(tmp_path / "inf.npy", np.array([[np.inf, np.inf], [1.0, 2.0]]))
    np.save(tmp_path / "nan.npy", np.array([[np.nan, 1.0], [1.0, 0.0]]))  # found by the worker's solve
    np.save(tmp_path / "text.npy", np.array([["a", "b"], ["c", "d"]]))  # found by the header, before any work
    address = client.scheduler.address
    infeasible = invoke("solve", tmp_path / "a.npy", tmp_path / "inf.npy", "--json", "--scheduler", address)
    assert infeasible.exit_code == 1
    assert len(infeasible.stdout.splitlines()) == 1 and f"Error: {tmp_path / 'inf.npy'}: cost matrix is infeasible" in infeasible.stderr
    bad = invoke("solve", tmp_path / "inf.npy", tmp_path / "nan.npy", tmp_path / "a.npy", "--json", "--scheduler", address)
    assert bad.exit_code == 2  # bad input outranks an infeasible one
    assert [json.loads(line)["input"] for line in bad.stdout.splitlines()] == [str(tmp_path / "a.npy")]
    early = invoke("solve", tmp_path / "text.npy", tmp_path / "a.npy", "--json", "--scheduler", address)
    assert early.exit_code == 2 and early.stdout == "" and "text.npy has dtype <U1" in early.stderr


def test_cli_a_bad_stdin_among_inputs_on_dask_fails_alone(client, tmp_path, rng):
    """stdin is read here, not on a worker: its refusal ended the whole run (nothing solved), where a
    bad file in its place is reported and the others still print (docs/scaling.md)."""
    np.save(tmp_path / "a.npy", rng.integers(0, 40, (5, 5)))
    np.save(tmp_path / "b.npy", rng.integers(0, 40, (4, 4)))
    address = client.scheduler.address
    for text, error in (("1,2\n3,x\n", "Error: stdin line 2, column 2: 'x' is not a number"), ("", "Error: stdin is empty")):
        result = invoke("solve", tmp_path / "a.npy", "-", tmp_path / "b.npy", "--json", "--scheduler", address, input=text)
        assert result.exit_code == 2 and error in result.stderr
        assert [json.loads(line)["input"] for line in result.stdout.splitlines()] == [str(tmp_path / "a.npy"),
                                                                                      str(tmp_path / "b.npy")]
    alone = invoke("solve", "-", "--json", "--scheduler", address, "--dask", input="1,2\n3,x\n")
    assert alone.exit_code == 2 and alone.stdout == ""


def test_cli_an_input_s_error_names_it_once_as_in_process(client, tmp_path, rng):
    np.save(tmp_path / "a.npy", rng.integers(0, 40, (5, 5)))
    (tmp_path / "bad.csv").write_text("1,2\n3,x\n")  # the reader's own words name the file
    specs = [tmp_path / "a.npy", tmp_path / "bad.csv"]
    local = invoke("solve", *specs, "--json")
    on_dask = invoke("solve", *specs, "--json", "--scheduler", client.scheduler.address)
    assert local.exit_code == on_dask.exit_code == 2
    line = f"Error: {tmp_path / 'bad.csv'} line 2, column 2: 'x' is not a number"
    assert line in local.stderr and on_dask.stderr.strip().splitlines()[-1] == line
    # words that name it later than first: stdin's ragged rows ("stdin: cannot parse stdin" once)
    ragged = [invoke("solve", "-", tmp_path / "a.npy", "-q", *route, input="1,2\n3\n") for route in
              ([], ["--scheduler", client.scheduler.address])]
    assert [result.stderr.strip().splitlines()[-1] for result in ragged] == [
        "Error: cannot parse stdin: ragged rows: line 2 has 1 column, line 1 has 2 columns"] * 2


def test_every_distributed_logger_is_quieted_for_one_line_an_input():
    """Importing distributed gives some of its loggers their own level (the client's WARNING): a
    scheduler that died mid-run printed the client's ERROR traceback among the one-line errors."""
    import logging

    from lapcli.cli.on_dask import quiet_dask_logs

    import_distributed()
    quiet_dask_logs()
    names = [name for name in logging.root.manager.loggerDict if name.startswith("distributed")]
    assert "distributed.client" in names
    assert all(logging.getLogger(name).getEffectiveLevel() == logging.CRITICAL for name in names)


def block_dask_imports(monkeypatch):
    """From now on `import dask…` and `import distributed…` fail, as where Dask is not installed."""
    # a Client an earlier test left for the garbage collector closes now, while it can still
    # import what closing needs (its __del__ under the block raised an ignored ImportError)
    gc.collect()
    real_import = builtins.__import__

    def no_dask(name, *args, **kwargs):
        if name.split(".")[0] in ("dask", "distributed"):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_dask)


def test_without_dask_the_error_says_how_to_install_it(monkeypatch, rng):
    block_dask_imports(monkeypatch)
    assert not scale.dask_available()
    with pytest.raises(LapInputError, match=r"^scale-out needs Dask: pip install 'lapcli\[dask\]'$"):
        solve_many([rng.random((3, 3))])
    with pytest.raises(LapInputError, match="scale-out needs Dask"):
        solve_dask_array(None)


def test_cli_with_a_bad_scheduler_address_is_one_line_exit_2(tmp_path, rng):
    import_distributed()
    np.save(tmp_path / "a.npy", rng.integers(0, 9, (3, 3)))
    bad_address = invoke("solve", tmp_path / "a.npy", "--scheduler", "nonsense::")
    assert_one_line_error(bad_address, 2, "cannot reach the Dask scheduler at nonsense::")


def test_a_scheduler_with_no_worker_is_one_line_exit_2_not_a_wait_for_ever(monkeypatch, tmp_path, rng):
    """as_completed waits for a worker: a scheduler without one held lap solve until killed, and
    --timeout did not bound it (a limit for the solve, which never started). The scheduler runs in
    a process of its own (one in this process, beside the module's cluster, held its close)."""
    import_distributed()
    monkeypatch.setattr(scale, "CONNECT_TIMEOUT_S", 0.5)
    np.save(tmp_path / "a.npy", rng.integers(0, 9, (3, 3)))
    script = ("import asyncio, distributed\n"
              "async def main():\n"
              "    async with distributed.Scheduler(host='127.0.0.1', port=0, dashboard_address=':0') as scheduler:\n"
              "        print(scheduler.address, flush=True)\n"
              "        await asyncio.sleep(120)\n"
              "asyncio.run(main())\n")
    empty = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        address = empty.stdout.readline().strip()
        began = time.perf_counter()
        result = invoke("solve", tmp_path / "a.npy", tmp_path / "a.npy", "--scheduler", address)
        assert time.perf_counter() - began < 30
    finally:
        empty.kill()
        empty.wait()
    assert_one_line_error(result, 2, f"the Dask scheduler at {address} has no worker: none joined in 0.5 s")


@pytest.mark.parametrize("reply, words", [(None, "no answer in"),
                                          (b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n", "not Dask's protocol")])
def test_a_scheduler_that_answers_nothing_or_another_protocol_is_one_line_exit_2(monkeypatch, tmp_path, rng, reply,
                                                                                   words):
    """Client's timeout bounds the connection only: a service that took it and never answered held
    lap solve for ever; an HTTP server's reply failed as "out of host memory", exit 1."""
    import_distributed()
    monkeypatch.setattr(scale, "CONNECT_TIMEOUT_S", 0.5)
    server = socket.create_server(("127.0.0.1", 0))

    def serve():
        connection, _ = server.accept()
        if reply is not None:
            connection.recv(100)
            connection.sendall(reply)
        time.sleep(5)  # holds the connection, as such a service does
        connection.close()

    threading.Thread(target=serve, daemon=True).start()
    np.save(tmp_path / "a.npy", rng.integers(0, 9, (3, 3)))
    result = invoke("solve", tmp_path / "a.npy", "--scheduler", f"tcp://127.0.0.1:{server.getsockname()[1]}")
    assert_one_line_error(result, 2, words)


def test_file_specs_reach_the_workers_as_the_caller_s_paths(client, tmp_path, rng, monkeypatch):
    """A worker reads a spec in its own folder (here the one the cluster started in): a relative name
    was another file or none there; with a scheduler's workers elsewhere, a wrong answer, exit 0."""
    import h5py

    cost = rng.integers(0, 50, (6, 6))
    np.save(tmp_path / "a.npy", cost)
    with h5py.File(tmp_path / "b.h5", "w") as handle:
        handle["group/costs"] = cost.T
    monkeypatch.chdir(tmp_path)
    solved = solve_many(["a.npy", "b.h5:/group/costs"], client=client)
    assert [s.objective for s in solved] == [in_process(str(tmp_path / "a.npy")).objective,
                                             lapcli.solve(cost.T).objective]
    # through a link to a folder, ".." is the link's target's parent, as the caller's system reads it
    # (an abspath made "link/../a.npy" ./a.npy: another file, or none)
    (tmp_path / "d1" / "d2").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "d1" / "d2")
    np.save(tmp_path / "d1" / "a.npy", cost[:3])
    np.save(tmp_path / "d1" / "only.npy", cost[:2])
    solved = solve_many(["link/../a.npy", "link/../only.npy"], client=client)
    assert [s.objective for s in solved] == [lapcli.solve(cost[:3]).objective, lapcli.solve(cost[:2]).objective]


def test_stdin_among_the_inputs_is_the_caller_s_read_here(client, rng, monkeypatch):
    """A worker process's stdin is its own (empty): "-" was "stdin is empty" there, or, on a
    thread of this process, read where the task ran. Read here, solved there; its refusal is its own."""
    import io

    cost = rng.integers(0, 50, (5, 5))
    text = "x,y\n" + "\n".join(",".join(map(str, row)) for row in cost[:, :2]) + "\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
    got = scale.solve_inputs(["-", cost, "-"], client=client)
    assert got[0].solution.objective == lapcli.solve(cost[:, :2]).objective
    assert any("header" in note for note in got[0].source_notes)  # the reader's note of the skipped header
    assert got[1].solution.objective == lapcli.solve(cost).objective and got[0].read_ms > 0
    assert isinstance(got[2], Failed) and got[2].bad_input and got[2].message == "stdin is empty"
    monkeypatch.setattr(sys, "stdin", io.StringIO("1,2\n3,4\n"))  # a notebook's: text, no bytes beneath
    assert scale.solve_inputs(["-"], client=client)[0].solution.objective == 5
    monkeypatch.setattr(sys, "stdin", io.BytesIO(b"1,2\n3,4\n"))  # bytes with no buffer beneath
    assert scale.solve_inputs(["-"], client=client)[0].solution.objective == 5
    monkeypatch.setattr(sys, "stdin", None)  # no stdin at all: bad input, not an AttributeError
    none = scale.solve_inputs(["-"], client=client)[0]
    assert isinstance(none, Failed) and none.bad_input and none.message == "stdin cannot be read: this process has none"


def test_a_dask_setting_the_local_cluster_cannot_parse_is_one_line_exit_2(tmp_path, rng):
    """A DASK_* value Dask cannot read stops its cluster before a task runs: the user's settings,
    not a lapcli bug, named in Dask's words."""
    import_distributed()
    import dask
    np.save(tmp_path / "a.npy", rng.integers(0, 9, (3, 3)))
    with dask.config.set({"distributed.comm.timeouts.connect": "bogus"}):
        bad_setting = invoke("solve", tmp_path / "a.npy", tmp_path / "a.npy", "--dask")
    assert_one_line_error(bad_setting, 2, "cannot start a local Dask cluster: 'Invalid time unit: bogus")


def test_cli_without_dask_is_one_line_exit_2(monkeypatch, tmp_path, rng):
    np.save(tmp_path / "a.npy", rng.integers(0, 9, (3, 3)))
    block_dask_imports(monkeypatch)
    missing = invoke("solve", tmp_path / "a.npy", tmp_path / "a.npy", "--dask")
    assert_one_line_error(missing, 2, "scale-out needs Dask: pip install 'lapcli[dask]'")


@pytest.mark.gpu
def test_local_cuda_cluster_spreads_stacks_over_every_gpu_in_input_order(rng):
    """With dask-cuda, solve_many's own cluster is a LocalCUDACluster (one worker per GPU, each
    solving on its device 0): the answers equal the in-process ones, in input order, and the
    cluster has one worker per visible GPU, each pinned to a different one."""
    distributed = import_distributed()
    pytest.importorskip("dask_cuda", reason="needs dask-cuda: pip install 'lapcli[dask-cuda]'")
    from dask_cuda import LocalCUDACluster

    stacks = [rng.random((40, 64, 64), dtype=np.float32) for _ in range(8)]
    with LocalCUDACluster() as cluster, distributed.Client(cluster) as client:
        results = solve_many(stacks, client=client)
        devices = client.run(lambda: __import__("os").environ.get("CUDA_VISIBLE_DEVICES", ""))
    for stack, result in zip(stacks, results):
        assert result.report.solver == "cuda-batch" and result.report.certified
        np.testing.assert_allclose(result.objectives, lapcli.solve_batch(stack).objectives, rtol=1e-6)
    assert len({value.split(",")[0] for value in devices.values()}) == scale.visible_gpus()


def test_a_nested_list_matrix_is_one_problem_as_solve_takes_it(client):
    """A list was taken for a list of matrices (an NPZ's): [[4, 1], [2, 0]] was refused as not 2-D."""
    matrix, stack = [[4, 1], [2, 0]], [np.array([[4, 1], [2, 0]]), np.array([[1, 9], [9, 1]])]
    one, several = solve_many([matrix, stack], client=client)
    assert one.objective == lapcli.solve(matrix).objective == 3
    assert several.objectives.tolist() == [3, 2]


def test_certify_reaches_the_workers(client, tmp_path, rng):
    """--certify with --dask or --scheduler was dropped: stacks came back uncertified."""
    np.save(tmp_path / "s.npy", rng.random((3, 5, 5)))
    result = invoke("solve", tmp_path / "s.npy", "--certify", "--json", "--scheduler", client.scheduler.address)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["certified"] is True
    assert solve_many([rng.random((3, 5, 5))], client=client, certify=True)[0].report.certified


def test_a_solver_this_machine_lacks_is_bad_input_on_the_workers_too(client, rng, monkeypatch):
    """In process it is exit 2 (an option this machine cannot serve); on the workers it was 1."""
    failed = scale._failed(0, lapcli.SolverUnavailable("solver 'cuda' cannot run here: no CUDA"))
    assert failed.bad_input


def test_a_dask_array_s_failing_problem_is_placed_in_the_whole_array(client, rng):
    import dask.array as da

    from lapcli.errors import InfeasibleError

    stack = rng.random((6, 3, 3))
    stack[4] = np.inf
    with pytest.raises(InfeasibleError, match="infeasible: problem 4 of 6 .in the block of problems 4 … 5 of the dask"):
        client.compute(solve_dask_array(da.from_array(stack, chunks=(2, 3, 3)))).result()
    stack[4], stack[3] = 0.0, np.nan  # named as the array's problem, not the block's ("problem 1 of 2")
    with pytest.raises(ValueError, match=r"invalid numeric entries: problem 3 of 6 .in the block of problems 2 … 3"):
        client.compute(solve_dask_array(da.from_array(stack, chunks=(2, 3, 3)))).result()
    with pytest.raises(LapInputError, match="solver 'numpy' solves one problem at a time"):  # now, not per block
        solve_dask_array(da.from_array(stack, chunks=(2, 3, 3)), solver="numpy")
    with pytest.raises(LapInputError, match="unknown solver"):
        solve_dask_array(da.from_array(stack, chunks=(2, 3, 3)), solver="nope")
    for sense in ("no", [True, False]):  # now, as the solver: not a problem of the block that first ran
        with pytest.raises(LapInputError, match=r"^maximize (must be True or False|is one True or False for every)"):
            solve_dask_array(da.from_array(stack, chunks=(2, 3, 3)), maximize=sense)


def test_cli_relative_inputs_are_named_as_given_on_dask_too(client, tmp_path, rng, monkeypatch):
    """A worker reads the caller's absolute path; notes and errors named that path (the JSON then
    differed from the in-process run's)."""
    monkeypatch.chdir(tmp_path)
    np.savetxt("h.csv", rng.integers(0, 40, (4, 4)), delimiter=",", fmt="%d", header="x,y,z,w", comments="")
    (tmp_path / "bad.csv").write_text("1,2\n3,x\n")
    solved, failed = scale.solve_inputs(["h.csv", "bad.csv"], client=client)
    assert solved.source_notes == ["skipped header line of h.csv: x,y,z,w"]
    assert failed.bad_input and "bad.csv" in failed.message and str(tmp_path) not in failed.message
    # "./" and "//", which pathlib drops from the joined path the readers name, as written too
    solved, failed = scale.solve_inputs(["./h.csv", ".//bad.csv"], client=client)
    assert solved.source_notes == ["skipped header line of ./h.csv: x,y,z,w"]
    assert failed.message.startswith(".//bad.csv line 2") and str(tmp_path) not in failed.message
    result = invoke("solve", "h.csv", "--json", "-q", "--scheduler", client.scheduler.address)
    assert json.loads(result.stdout)["notes"] == json.loads(invoke("solve", "h.csv", "--json", "-q").stdout)["notes"]


def test_inputs_that_are_one_input_or_cannot_travel_are_refused_as_bad_input(client, rng):
    """A str or an array given as ``inputs`` was iterated (each character a file, each row an input);
    an empty list member failed inside Dask's scatter, an unpicklable one raised out of the call."""
    good = rng.integers(0, 9, (4, 4))
    for one in ("a.npy", b"ab", {"x": 1}, np.ones((3, 2, 2))):
        with pytest.raises(LapInputError, match="inputs must be a list of inputs"):
            solve_many(one, client=client)
    with pytest.raises(LapInputError, match="give client= or scheduler=, not both"):  # the scheduler was ignored
        solve_many([good], client=client, scheduler="tcp://127.0.0.1:1")
    results = solve_many([good, [], threading.Lock(), good], client=client)
    assert results[1] == Failed(1, "LapInputError", "an empty list of problems", bad_input=True)
    assert results[2].bad_input and "input 2 cannot be sent to a worker: cannot pickle" in results[2].message
    assert results[0].objective == results[3].objective == lapcli.solve(good).objective


def test_a_task_takes_a_tuple_of_matrices_as_a_batch_and_refuses_ragged_rows_as_bad_input(rng):
    """What one task solves, as in process: a tuple of matrices of several shapes failed in NumPy's
    words ("inhomogeneous shape"), as did rows of differing length, both called no bad input."""
    members = (rng.random((2, 3)), rng.random((3, 2)))
    solved = scale.solve_input(0, members, {}, {})
    assert solved.solution.objectives.tolist() == lapcli.solve_batch(members).objectives.tolist()
    for ragged in ([[1, 2], [3, 4, 5]], [[[1, 2], [3]], [[1, 2], [3, 4]]]):
        assert scale.solve_input(1, ragged, {}, {}) == Failed(1, "LapInputError", "input is not a matrix: its rows "
                                                               "differ in length", bad_input=True)


def test_dask_s_own_failures_read_in_words():
    """KilledWorker's message names a task key and every worker's address."""
    KilledWorker = type("KilledWorker", (Exception,), {})
    assert scale._one_line(KilledWorker("Attempted to run task 'solve_input-642a' on 4 different workers")) == \
        "the Dask workers that took it died (each time it was tried)"


def test_cli_device_with_dask_is_refused_as_such_before_the_device_is_checked(tmp_path, rng):
    np.save(tmp_path / "a.npy", rng.integers(0, 9, (3, 3)))
    result = invoke("solve", tmp_path / "a.npy", tmp_path / "a.npy", "--dask", "--device", "0")
    assert_one_line_error(result, 2, "--device does not go with Dask")


def _sigint_disposition(queue):
    import signal

    queue.put(signal.getsignal(signal.SIGINT) == signal.SIG_IGN)


def test_a_local_cluster_s_workers_leave_ctrl_c_to_the_caller():
    """A Ctrl-C reaches the terminal's whole process group: each worker of a local cluster printed
    its KeyboardInterrupt traceback (70 lines on stderr). The cluster's processes start with SIGINT
    ignored, which a spawned process keeps (Python installs its handler only over the default);
    the caller's handler is back after."""
    import multiprocessing
    import signal

    before = signal.getsignal(signal.SIGINT)
    context = multiprocessing.get_context("spawn")  # as Dask's nannies start their workers
    queue = context.Queue()
    with scale._workers_ignore_ctrl_c():
        child = context.Process(target=_sigint_disposition, args=(queue,))
        child.start()
    assert queue.get(timeout=60) is True
    child.join(timeout=60)
    assert signal.getsignal(signal.SIGINT) is before
