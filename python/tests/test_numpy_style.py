"""test_numpy_style.py: the binding as numpy users write it (issue 10, items 9 and 10),
against real gridrpcd (and gridmetad) processes on loopback: OUT arrays passed as None
are allocated and returned, several outs come back as a tuple, timeout= and server=,
call_async returns while a big array is still going out (and a list converted for it
stays alive until sent), stats() counts async calls, GRIDRPC_SERVER set after a failed
call takes effect without reset(), every error code raises its documented class, dtype
errors name numpy dtypes, help() shows signatures and docs, and list_functions lists
what a server or the metaserver's grid serves.
"""

from __future__ import annotations

import gc
import inspect
import os
import pydoc
import re
import select
import signal
import socket
import subprocess
import threading
import time
from typing import Iterator

import numpy as np
import pytest

import gridrpc
from conftest import Server

pytestmark = pytest.mark.usefixtures("server")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------- OUT arrays as None


@pytest.mark.parametrize(
    "fn,dtype",
    [("echo_char", np.int8), ("echo_short", np.int16), ("echo_int", np.int32), ("echo_long", np.int64),
     ("echo_float", np.float32), ("echo_double", np.float64), ("echo_scomplex", np.complex64),
     ("echo_dcomplex", np.complex128), ("echo_unsigned", np.uint32)],
)
def test_out_array_none_is_allocated_with_its_dtype(fn: str, dtype: type) -> None:
    x = (np.arange(7) * 3 - 5).astype(dtype)
    out = gridrpc.call("test/" + fn, 7, x, None)
    assert isinstance(out, np.ndarray) and out.dtype == np.dtype(dtype) and out.shape == (7,)
    assert np.array_equal(out, x)


def test_out_matrix_none_has_the_declared_shape() -> None:
    rng = np.random.default_rng(3)
    A, B = rng.standard_normal((6, 6)), rng.standard_normal((6, 6))
    C = gridrpc.call("linalg/dmmul", 6, A, B, None)
    assert C.shape == (6, 6) and C.dtype == np.float64 and C.flags.c_contiguous
    np.testing.assert_allclose(C, A @ B, rtol=1e-12, atol=1e-12)
    # the same through call_async, and a fresh array each call
    C2 = gridrpc.call_async("linalg/dmmul", 6, A, B, None).result(timeout=30)
    assert C2 is not C and np.array_equal(C2, C)
    # shapes follow the size arguments of each call
    assert gridrpc.call("linalg/dmmul", 2, np.eye(2), np.eye(2), None).shape == (2, 2)


def test_several_outs_come_back_as_a_tuple() -> None:
    n = 4
    rng = np.random.default_rng(4)
    A = rng.standard_normal((n, n)) + n * np.eye(n)
    a = A.copy()
    res = gridrpc.call("linalg/dgefa", n, a, None, None)  # OUT int ipvt[n], OUT int *info
    assert isinstance(res, tuple) and len(res) == 2
    ipvt, info = res
    assert info == 0 and isinstance(ipvt, np.ndarray) and ipvt.dtype == np.int32 and ipvt.shape == (n,)
    b = rng.standard_normal(n)
    x = b.copy()
    gridrpc.call("linalg/dgesl", n, a, ipvt, x, 0)
    np.testing.assert_allclose(x, np.linalg.solve(A, b), rtol=1e-9, atol=1e-9)
    # an OUT array the caller passes is filled in place and not returned
    ipvt2 = np.zeros(n, dtype=np.int32)
    assert gridrpc.call("linalg/dgefa", n, A.copy(), ipvt2, None) == 0
    assert np.array_equal(ipvt2, ipvt)
    # OUT array and OUT scalar of one function, in parameter order
    out, canceled = gridrpc.call("test/sleep_cancelable", 0.0, 3, None, None)
    assert isinstance(out, np.ndarray) and out.shape == (3,) and canceled == 0


def test_none_is_refused_where_nothing_can_be_allocated() -> None:
    with pytest.raises(gridrpc.ArgumentTypeError, match="OUT arrays only"):
        gridrpc.call("test/inout_double", 3, None)  # INOUT: the input is needed
    with pytest.raises(gridrpc.ArgumentTypeError, match="OUT arrays only"):
        gridrpc.call("test/echo_double", 3, None, None)  # IN


# ---------------------------------------------------------------- timeout= and server=


def test_timeout_keyword() -> None:
    t0 = time.monotonic()
    with pytest.raises(gridrpc.CallTimeoutError) as e:
        gridrpc.call("test/sleep", 5.0, timeout=0.3)
    assert time.monotonic() - t0 < 3
    assert "timeout=0.3" in str(e.value) and e.value.code == 7
    assert gridrpc.call("test/sleep", 0.01, timeout=30) is None
    assert np.array_equal(gridrpc.call("test/echo_int", 2, np.array([1, 2], np.int32), None, timeout=30),
                          [1, 2])
    f = gridrpc.call_async("test/sleep", 5.0, timeout=0.3)
    with pytest.raises(gridrpc.CallTimeoutError):
        f.result(timeout=10)
    assert gridrpc.call_async("test/sleep", 0.01, timeout=30).result(timeout=30) is None
    for bad in (0, -1, float("nan")):
        with pytest.raises(gridrpc.ArgumentValueError):
            gridrpc.call("test/null_call", timeout=bad)
    with pytest.raises(gridrpc.ArgumentTypeError):
        gridrpc.call("test/null_call", timeout="soon")
    deadline = time.monotonic() + 10
    while gridrpc.in_flight() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert gridrpc.in_flight() == 0


def test_server_keyword(one_thread_server) -> None:
    other = one_thread_server.address
    assert gridrpc.call("test/sleep_count", 0.0, None, server=other) == 1
    assert gridrpc.call("test/sleep_count", 0.0, None, server="gridrpc://" + other) == 2
    assert gridrpc.call_async("test/sleep_count", 0.0, None, server=other).result(timeout=30) == 3
    assert gridrpc.describe("test/sleep_count", server=other).name == "sleep_count"
    port = free_port()
    with pytest.raises(gridrpc.ConnectError, match=str(port)):
        gridrpc.call("test/null_call", server=f"127.0.0.1:{port}")
    with pytest.raises(gridrpc.ArgumentValueError, match="already names"):
        gridrpc.call(one_thread_server.url("test/null_call"), server=other)
    with pytest.raises(gridrpc.ArgumentValueError):
        gridrpc.call("test/null_call", server="no-port")
    with pytest.raises(gridrpc.ArgumentTypeError):
        gridrpc.call("test/null_call", server=7000)


# ---------------------------------------------------------------- call_async does not block


class Throttle:
    """A TCP proxy to a server whose client-to-server direction can be paused: while
    paused, a client's big CALL fills the socket buffers and its sender blocks."""

    def __init__(self, port: int) -> None:
        self.target = port
        self.lsock = socket.socket()
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(8)
        self.port = self.lsock.getsockname()[1]
        self.flowing = threading.Event()
        self.flowing.set()
        self.stop = threading.Event()
        self.socks: list[socket.socket] = []
        self.threads = [threading.Thread(target=self._accept, daemon=True)]
        self.threads[0].start()

    def _accept(self) -> None:
        self.lsock.settimeout(0.1)
        while not self.stop.is_set():
            try:
                c, _ = self.lsock.accept()
            except OSError:
                continue
            s = socket.create_connection(("127.0.0.1", self.target))
            self.socks += [c, s]
            for a, b, gated in ((c, s, True), (s, c, False)):
                t = threading.Thread(target=self._pump, args=(a, b, gated), daemon=True)
                t.start()
                self.threads.append(t)

    def _pump(self, a: socket.socket, b: socket.socket, gated: bool) -> None:
        try:
            while not self.stop.is_set():
                if gated and not self.flowing.wait(0.1):
                    continue
                r, _, _ = select.select([a], [], [], 0.1)
                if not r:
                    continue
                data = a.recv(1 << 16)
                if not data:
                    break
                b.sendall(data)
        except OSError:
            pass
        finally:
            for s in (a, b):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        self.flowing.set()
        self.stop.set()
        for t in self.threads:
            t.join(5)
        for s in self.socks + [self.lsock]:
            s.close()


@pytest.fixture()
def throttle(server) -> Iterator[Throttle]:
    t = Throttle(server.port)
    yield t
    t.close()


def test_call_async_returns_while_a_big_array_goes_out(throttle) -> None:
    url = f"gridrpc://127.0.0.1:{throttle.port}/test/echo_double"
    small, small_out = np.arange(4, dtype=np.float64), np.zeros(4)
    gridrpc.call_async(url, 4, small, small_out).result(timeout=30)  # the connection is open
    small_out[:] = 0
    n = 4 << 20  # 32 MiB: far more than the socket buffers hold
    x = np.random.default_rng(5).standard_normal(n)
    throttle.flowing.clear()
    # If call_async blocked while sending, only this timer would let it return.
    threading.Timer(4.0, throttle.flowing.set).start()
    t0 = time.monotonic()
    out = np.zeros(n)
    f = gridrpc.call_async(url, n, x, out)
    f2 = gridrpc.call_async(url, 4, small, small_out)  # queued behind it, same connection
    took = time.monotonic() - t0
    assert took < 1.0, f"call_async blocked {took:.1f} s while the array was going out"
    assert not f.done() and not f2.done()
    throttle.flowing.set()
    assert f.result(timeout=60) is None
    assert np.array_equal(out, x)
    assert f2.result(timeout=60) is None and np.array_equal(small_out, small)


def test_call_async_keeps_a_converted_list_while_it_goes_out(throttle) -> None:
    url = f"gridrpc://127.0.0.1:{throttle.port}/test/echo_double"
    gridrpc.call_async(url, 1, np.ones(1), np.zeros(1)).result(timeout=30)  # the connection is open
    n = 2 << 20  # 16 MiB as float64: more than the socket buffers hold
    values = list(range(256)) * (n // 256)  # small ints: the list itself is 16 MiB of pointers
    throttle.flowing.clear()
    threading.Timer(10.0, throttle.flowing.set).start()  # in case the test fails before it
    out = np.zeros(n)
    f = gridrpc.call_async(url, n, values, out)
    deadline = time.monotonic() + 10
    while f._stage != gridrpc._futures._SENDING and time.monotonic() < deadline:
        time.sleep(0.01)
    assert f._stage == gridrpc._futures._SENDING and not f.done()
    # Only the call holds the float64 copy now; memory freed here would be reused.
    del values
    gc.collect()
    junk = [np.full(n, -1.0) for _ in range(2)]
    throttle.flowing.set()
    assert f.result(timeout=60) is None
    assert np.array_equal(out, np.tile(np.arange(256.0), n // 256))
    del junk


def test_cancel_before_the_call_is_sent(throttle) -> None:
    url = f"gridrpc://127.0.0.1:{throttle.port}/test/echo_double"
    gridrpc.call_async(url, 1, np.ones(1), np.zeros(1)).result(timeout=30)
    throttle.flowing.clear()
    threading.Timer(4.0, throttle.flowing.set).start()
    n = 4 << 20
    big_out = np.zeros(n)
    big = gridrpc.call_async(url, n, np.ones(n), big_out)
    out = np.zeros(3)
    queued = gridrpc.call_async(url, 3, np.ones(3), out)
    assert queued.cancel() and queued.cancelled()
    assert queued.id == 0  # dropped before it was sent
    throttle.flowing.set()
    assert big.result(timeout=60) is None and big_out[-1] == 1.0
    assert out.tolist() == [0.0, 0.0, 0.0]  # never sent, never written
    deadline = time.monotonic() + 10
    while gridrpc.in_flight() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert gridrpc.in_flight() == 0


# ---------------------------------------------------------------- stats, settings


def test_stats_count_async_calls() -> None:
    before = gridrpc.stats()["calls"]
    futs = [gridrpc.call_async("test/null_call") for _ in range(10)]
    gridrpc.wait_all(futs, timeout=30)
    mid = gridrpc.stats()["calls"]
    assert mid - before == 10
    gridrpc.call("test/null_call")
    assert gridrpc.stats()["calls"] - mid == 1


def test_gridrpc_server_set_after_a_failed_call_takes_effect(server, monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("GRIDRPC_SERVER", f"127.0.0.1:{free_port()}")
    gridrpc.reset()
    gridrpc.set_timeouts(5, 0.3)  # kept across the reload the binding does
    try:
        with pytest.raises(gridrpc.ConnectError):
            gridrpc.call("test/null_call")
        monkeypatch.setenv("GRIDRPC_SERVER", server.address)
        assert gridrpc.call("test/null_call") is None  # no reset()
        with pytest.raises(gridrpc.CallTimeoutError):
            gridrpc.call("test/sleep", 3.0)
        # no server configured at all: ConfigError, then it is set
        monkeypatch.delenv("GRIDRPC_SERVER")
        monkeypatch.delenv("GRIDRPC_CONFIG", raising=False)
        monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.gridrpc.conf
        gridrpc.reset()
        with pytest.raises(gridrpc.ConfigError, match="no server"):
            gridrpc.call("test/null_call")
        monkeypatch.setenv("GRIDRPC_SERVER", server.address)
        assert gridrpc.call_async("test/null_call").result(timeout=30) is None
    finally:
        monkeypatch.undo()
        gridrpc.reset()
    assert gridrpc.call("test/null_call") is None


# ---------------------------------------------------------------- exceptions


def test_every_error_code_has_its_documented_class() -> None:
    codes = {getattr(gridrpc._core, k) for k in dir(gridrpc._core) if k.startswith("GRID_ERR_")}
    assert set(gridrpc.ERROR_CLASSES) == codes
    classes = set(gridrpc.ERROR_CLASSES.values())
    assert len(classes) == len(codes)  # one class per code
    readme = open(os.path.join(os.path.dirname(__file__), os.pardir, "README.md")).read()
    for cls in classes:
        assert issubclass(cls, gridrpc.GridError) and cls.__doc__
        assert cls.__name__ in gridrpc.__all__ and getattr(gridrpc, cls.__name__) is cls
        assert f"`{cls.__name__}`" in readme, f"{cls.__name__} is not documented in python/README.md"
    assert issubclass(gridrpc.ShutdownError, gridrpc.GridError)
    e = gridrpc._errors.make_error(gridrpc._core.GRID_ERR_SHUTDOWN, "shutting down")
    assert type(e) is gridrpc.ShutdownError and e.name == "GRID_ERR_SHUTDOWN"


def test_crash_raises_crashed_error(server) -> None:
    # test/crash(1) dereferences NULL in its executor: CrashedError, which is a
    # RemoteError (code that catches the latter still does), and the server goes on.
    with pytest.raises(gridrpc.CrashedError) as e:
        gridrpc.call(server.url("test/crash"), 1)
    assert isinstance(e.value, gridrpc.RemoteError)
    assert e.value.name == "GRID_ERR_CRASHED"
    assert "the server is still up; not retried: it would crash again" in str(e.value)
    assert gridrpc.call(server.url("test/null_call")) is None


def test_shutdown_raises_shutdown_error(one_thread_server) -> None:
    url = one_thread_server.url("test/sleep")
    running = gridrpc.call_async(url, 1.0)
    time.sleep(0.2)
    queued = gridrpc.call_async(url, 0.1)  # waits behind it: one worker
    deadline = time.monotonic() + 10
    while queued.id == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.2)
    one_thread_server.proc.send_signal(signal.SIGTERM)
    with pytest.raises(gridrpc.ShutdownError) as e:
        queued.result(timeout=30)
    assert e.value.code == 8 and "shutting down" in str(e.value)
    assert running.result(timeout=30) is None


def test_server_killed_during_a_call_raises_connection_lost_error(one_thread_server) -> None:
    f = gridrpc.call_async(one_thread_server.url("test/sleep"), 5.0)
    deadline = time.monotonic() + 10
    while f.id == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.3)
    one_thread_server.stop(signal.SIGKILL)
    with pytest.raises(gridrpc.ConnectionLostError) as e:
        f.result(timeout=30)
    assert e.value.code == 6 and e.value.name == "GRID_ERR_CONN_LOST"


def test_negative_size_raises_argument_value_error() -> None:
    with pytest.raises(gridrpc.ArgumentValueError) as e:
        gridrpc.call("test/echo_double", -1, None, None)
    assert isinstance(e.value, ValueError) and "negative" in str(e.value)
    with pytest.raises(gridrpc.ArgumentValueError):
        gridrpc.call_async("linalg/dmmul", -3, None, None, None)


@pytest.mark.parametrize(
    "arr,name",
    [(np.zeros(3, np.float32), "float32"), (np.zeros(3, np.int64), "int64"), (np.zeros(3, np.bool_), "bool"),
     (np.zeros(3, np.uint8), "uint8"), (np.zeros(3, np.complex64), "complex64"),
     (np.zeros(3, np.int16), "int16")],
)
def test_dtype_errors_name_numpy_dtypes(arr: np.ndarray, name: str) -> None:
    # an OUT array is never converted (an IN one is: test_array_likes.py)
    with pytest.raises(gridrpc.ArgumentTypeError) as e:
        gridrpc.call("test/echo_double", 3, np.zeros(3), arr)
    msg = str(e.value)
    assert f"expects dtype float64, got {name}" in msg, msg
    assert "format" not in msg and "written back in place" in msg


def test_dtype_error_of_another_byte_order() -> None:
    with pytest.raises(gridrpc.ArgumentTypeError, match="big-endian"):
        gridrpc.call("test/echo_double", 3, np.zeros(3), np.zeros(3, ">f8"))


# ---------------------------------------------------------------- help()


def test_help_shows_signatures_and_docs() -> None:
    for name in ("call", "call_async", "describe", "list_functions", "set_timeouts", "reset", "stats",
                 "wait_all", "in_flight"):
        fn = getattr(gridrpc, name)
        sig = inspect.signature(fn)
        assert sig.return_annotation is not inspect.Signature.empty, name
        for p in sig.parameters.values():
            assert p.annotation is not inspect.Parameter.empty, f"{name}({p.name})"
        assert fn.__doc__ and len(fn.__doc__.strip()) > 30, name
    text = pydoc.render_doc(gridrpc.call, renderer=pydoc.plaintext)
    assert re.search(r"timeout: 'float \| None' = None|timeout: float \| None = None", text), text
    assert "server" in text and "Returns" in text and "tuple" in text
    module = pydoc.render_doc(gridrpc, renderer=pydoc.plaintext)
    for word in ("call_async", "list_functions", "ShutdownError", "allocated"):
        assert word in module, word
    assert gridrpc.Future.cancel.__doc__ and gridrpc.Future.id.__doc__


# ---------------------------------------------------------------- listing


def test_list_functions_of_a_server(server, one_thread_server) -> None:
    names = gridrpc.list_functions()
    assert names == sorted(names) and len(names) == len(set(names))
    assert {"test/echo_double", "test/null_call", "linalg/dmmul"} <= set(names)
    assert gridrpc.list_functions(server.address) == names
    assert gridrpc.list_functions("gridrpc://" + one_thread_server.address) == names
    f = gridrpc.describe(names[0])
    assert f"{f.module}/{f.name}" == names[0]
    port = free_port()
    with pytest.raises(gridrpc.ConnectError, match=str(port)):
        gridrpc.list_functions(f"127.0.0.1:{port}")
    with pytest.raises(gridrpc.ArgumentValueError):
        gridrpc.list_functions("no-port-here")
    with pytest.raises(gridrpc.ArgumentValueError, match="names a function"):
        gridrpc.list_functions(one_thread_server.url("test/null_call"))


def test_list_functions_without_a_server(monkeypatch, tmp_path) -> None:
    monkeypatch.delenv("GRIDRPC_SERVER")
    monkeypatch.delenv("GRIDRPC_CONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    gridrpc.reset()
    try:
        with pytest.raises(gridrpc.ConfigError, match="GRIDRPC_SERVER"):
            gridrpc.list_functions()
    finally:
        monkeypatch.undo()
        gridrpc.reset()


class Metaserver:
    """A gridmetad on 127.0.0.1, port 0, with an in-memory registry."""

    def __init__(self) -> None:
        prog = os.path.join(os.path.dirname(os.environ["GRIDRPCD"]), "gridmetad")
        if not os.path.exists(prog):
            pytest.skip(f"no gridmetad next to {os.environ['GRIDRPCD']}")
        self.proc = subprocess.Popen([prog, "--host", "127.0.0.1", "--port", "0", "--db", ":memory:",
                                      "--heartbeat", "200ms"], stdout=subprocess.PIPE,
                                     stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], 20)
        line = self.proc.stdout.readline().decode().strip() if ready else ""
        if not line.startswith("listening on "):
            self.stop()
            raise RuntimeError(f"gridmetad did not start: {line!r}")
        self.address = line.split()[-1]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(6)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stdout:
            self.proc.stdout.close()


def test_list_functions_of_the_metaservers_grid(monkeypatch) -> None:
    meta = Metaserver()
    grid_server = None
    try:
        grid_server = Server(["--metaserver", meta.address])
        monkeypatch.setenv("GRIDRPC_METASERVER", meta.address)
        gridrpc.reset()
        names: list[str] = []
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:  # until the server has registered
            names = gridrpc.list_functions()
            if names:
                break
            time.sleep(0.1)
        assert {"test/echo_double", "linalg/dmmul"} <= set(names) and names == sorted(names)
        assert gridrpc.list_functions(grid_server.address) == names  # a server, named
    finally:
        monkeypatch.undo()
        gridrpc.reset()
        if grid_server:
            grid_server.stop()
        meta.stop()
