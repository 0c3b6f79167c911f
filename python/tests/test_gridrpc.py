"""test_gridrpc.py: the gridrpc package end to end against a real gridrpcd (conftest.py):
every scalar and array type, strings, INOUT, WORK, sub-ranges, real linear algebra
(dmmul, Linpack) checked against numpy, async calls with many in flight, cancel, and
every error as an exception with the library's message.
"""

from __future__ import annotations

import array
import concurrent.futures
import gc
import os
import socket
import sys
import threading
import time

import numpy as np
import pytest

import gridrpc
from conftest import Server

pytestmark = pytest.mark.usefixtures("server")


# ---------------------------------------------------------------- sync calls


def test_null_call() -> None:
    assert gridrpc.call("test/null_call") is None
    assert gridrpc.call("null_call") is None  # plain name: unique on the server


def test_url_names_the_server(server) -> None:
    assert gridrpc.call(server.url("test/null_call")) is None


def test_every_scalar_type() -> None:
    out = gridrpc.call("test/echo_scalars", "x", -1234, -123456789, -1234567890123, -987654321098765, 3.5,
                       -2.0e300, 1.5 - 2.5j, 3.25 - 4.75j, 4000000000, *([None] * 10))
    assert out == ("x", -1234, -123456789, -1234567890123, -987654321098765, 3.5, -2.0e300, 1.5 - 2.5j,
                   3.25 - 4.75j, 4000000000)
    assert type(out[0]) is str and type(out[5]) is float and type(out[7]) is complex
    # chars as ints and bytes; numpy scalars convert too
    out = gridrpc.call("test/echo_scalars", 65, np.int16(7), np.int32(-1), np.int64(2**62), 0, np.float32(0.25),
                       np.float64(1e-300), 0, 1, np.uint32(2**32 - 1), *([0] * 10))
    assert out[:7] == ("A", 7, -1, 2**62, 0, 0.25, 1e-300) and out[7] == 0j and out[8] == 1 + 0j
    assert out[9] == 2**32 - 1
    assert gridrpc.call("test/echo_scalars", b"\xff", 0, 0, 0, 0, 0, 0, 0, 0, 0, *([0] * 10))[0] == "\xff"


@pytest.mark.parametrize(
    "fn,dtype",
    [
        ("echo_char", np.int8),
        ("echo_char", np.uint8),
        ("echo_short", np.int16),
        ("echo_int", np.int32),
        ("echo_long", np.int64),
        ("echo_longlong", np.int64),
        ("echo_float", np.float32),
        ("echo_double", np.float64),
        ("echo_scomplex", np.complex64),
        ("echo_dcomplex", np.complex128),
        ("echo_unsigned", np.uint32),
    ],
)
@pytest.mark.parametrize("n", [0, 1, 3, 1000, 70001])
def test_arrays_of_each_dtype(fn: str, dtype: type, n: int) -> None:
    rng = np.random.default_rng(n)
    x: np.ndarray
    if np.issubdtype(dtype, np.complexfloating):
        x = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dtype)
    elif np.issubdtype(dtype, np.floating):
        x = (rng.standard_normal(n) * 1e6).astype(dtype)
    else:
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, size=n, dtype=dtype, endpoint=True)
    out = np.zeros_like(x)
    assert gridrpc.call("test/" + fn, n, x, out) is None
    assert out.dtype == x.dtype and np.array_equal(out, x)


def test_bytes_array_for_char_and_other_buffers() -> None:
    x = np.frombuffer(b"hello", dtype="S1").copy()
    out = np.zeros(5, dtype="S1")
    gridrpc.call("test/echo_char", 5, x, out)
    assert out.tobytes() == b"hello"
    a = array.array("d", [1.0, 2.0, 3.0])
    b = array.array("d", [0.0] * 3)
    gridrpc.call("test/echo_double", 3, a, b)
    assert list(b) == [1.0, 2.0, 3.0]
    out2 = bytearray(4)
    gridrpc.call("test/echo_char", 4, b"grid", out2)
    assert out2 == b"grid"


def test_zero_length_arrays_may_be_none() -> None:
    # an IN array of no elements may be None; an OUT one passed as None is allocated
    # (empty) and returned, as for any size: the result's shape does not depend on n
    out = gridrpc.call("test/echo_double", 0, None, None)
    assert isinstance(out, np.ndarray) and out.shape == (0,) and out.dtype == np.float64
    assert gridrpc.call("test/echo_double", 0, np.empty(0), np.empty(0)) is None


def test_strings() -> None:
    assert gridrpc.call("test/echo_string", "hello, grid", None) == "hello, grid"
    assert gridrpc.call("test/echo_string", "", None) == ""
    assert gridrpc.call("test/echo_string", "grüße ✓", None) == "grüße ✓"
    assert gridrpc.call("test/echo_string", b"bytes too", None) == "bytes too"
    big = "z" * 200000
    assert gridrpc.call("test/echo_string", big, None) == big


def test_string_arrays() -> None:
    assert gridrpc.call("test/echo_strings", 3, ["alpha", "", "gamma"], None) == ["alpha", "", "gamma"]
    assert gridrpc.call("test/echo_strings", 0, [], None) == []


def test_inout_scalars_and_arrays() -> None:
    assert gridrpc.call("test/inout_scalars", 41, 1.25, "original") == (42, 2.5, "replaced")
    x = np.array([1.0, 2.0, 3.0])
    assert gridrpc.call("test/inout_double", 3, x) is None
    assert x.tolist() == [2.0, 4.0, 6.0]


def test_work_array_and_out_scalar() -> None:
    x = np.array([1.0, 2.0, 3.0, 4.0])
    assert gridrpc.call("test/work_sum", 4, x, None, None) == 30.0


def test_subrange_keeps_elements_outside_it() -> None:
    x = np.arange(10, dtype=np.float64)
    gridrpc.call("test/subrange", 10, 3, 7, x)
    assert x.tolist() == [0, 1, 2, 4, 5, 6, 7, 7, 8, 9]


def test_two_dimensional_block_and_stride() -> None:
    a = 100 + np.arange(30, dtype=np.float64).reshape(5, 6)
    expect = a.copy()
    expect[1:4, 2:5] += 1
    gridrpc.call("test/block2d", 5, 6, 1, 4, 2, 5, a)
    assert np.array_equal(a, expect)
    x = np.ones(10)
    gridrpc.call("test/strided", 10, 3, x)
    assert x.tolist() == [2.0 if i % 3 == 0 else 1.0 for i in range(10)]


def test_files(tmp_path) -> None:
    src = tmp_path / "in.txt"
    src.write_text("Hello, Files!\n")
    dst = tmp_path / "out.txt"
    assert gridrpc.call("test/file_upper", src, str(dst)) is None
    assert dst.read_text() == "HELLO, FILES!\n"
    with pytest.raises(gridrpc.GridError) as e:
        gridrpc.call("test/file_upper", "/nonexistent/input", str(dst))
    assert "/nonexistent/input" in str(e.value)


def test_describe() -> None:
    f = gridrpc.describe("linalg/dmmul")
    assert (f.module, f.name) == ("linalg", "dmmul")
    assert "matrix multiply" in f.description
    assert [(p.name, p.type, p.mode, p.rank) for p in f.params] == [
        ("n", "int", "IN", 0), ("A", "double", "IN", 2), ("B", "double", "IN", 2), ("C", "double", "OUT", 2)]
    assert f.params[1].dtype == "float64"
    assert gridrpc.describe("test/echo_unsigned").params[1].dtype == "uint32"
    assert f.signature().startswith("linalg/dmmul(IN int n, IN double A[][]")


# ---------------------------------------------------------------- real numerical calls


@pytest.mark.parametrize("n", [1, 7, 64, 300])
def test_dmmul_matches_numpy(n: int) -> None:
    rng = np.random.default_rng(n)
    A = rng.standard_normal((n, n))
    B = rng.standard_normal((n, n))
    C = np.empty((n, n))
    gridrpc.call("linalg/dmmul", n, A, B, C)
    np.testing.assert_allclose(C, A @ B, rtol=1e-10, atol=1e-10 * n)


@pytest.mark.parametrize("n", [1, 10, 200])
def test_linpack_matches_numpy_solve(n: int) -> None:
    rng = np.random.default_rng(100 + n)
    A = rng.standard_normal((n, n)) + n * np.eye(n)
    b = rng.standard_normal(n)
    expect = np.linalg.solve(A, b)
    a = A.copy()
    x = b.copy()
    info = gridrpc.call("linalg/linpack", n, a, x, None)
    assert info == 0
    np.testing.assert_allclose(x, expect, rtol=1e-9, atol=1e-9)
    # dgefa + dgesl: the factors stay in the caller's array between the calls
    a = A.copy()
    ipvt = np.zeros(n, dtype=np.int32)
    assert gridrpc.call("linalg/dgefa", n, a, ipvt, None) == 0
    x = b.copy()
    gridrpc.call("linalg/dgesl", n, a, ipvt, x, 0)
    np.testing.assert_allclose(x, expect, rtol=1e-9, atol=1e-9)


def test_linpack_singular_reports_info() -> None:
    a = np.zeros((3, 3))
    b = np.ones(3)
    assert gridrpc.call("linalg/linpack", 3, a, b, None) > 0


def test_ddot_daxpy_dgemv() -> None:
    x = np.arange(5, dtype=np.float64)
    y = np.ones(5)
    assert gridrpc.call("linalg/ddot", 5, x, y, None) == pytest.approx(10.0)
    gridrpc.call("linalg/daxpy", 5, 2.0, x, y)
    assert y.tolist() == [1, 3, 5, 7, 9]
    A = np.arange(6, dtype=np.float64).reshape(2, 3)
    v = np.array([1.0, 1.0, 1.0])
    w = np.array([1.0, -1.0])
    gridrpc.call("linalg/dgemv", 2, 3, 1.0, A, v, 0.5, w)
    np.testing.assert_allclose(w, A @ v + 0.5 * np.array([1.0, -1.0]))


def test_threads_call_concurrently() -> None:
    errors: list[BaseException] = []

    def worker(k: int) -> None:
        try:
            for i in range(50):
                x = np.full(100, float(k * 1000 + i))
                out = np.empty(100)
                gridrpc.call("test/echo_double", 100, x, out)
                assert np.array_equal(out, x)
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


# ---------------------------------------------------------------- async calls


def test_async_many_in_flight() -> None:
    n = 64
    ins = [np.full(1000, float(k)) for k in range(200)]
    outs = [np.empty(1000) for _ in ins]
    futs = [gridrpc.call_async("test/echo_double", 1000, i, o) for i, o in zip(ins, outs)]
    assert all(isinstance(f, concurrent.futures.Future) for f in futs)
    done, not_done = concurrent.futures.wait(futs, timeout=60)
    assert not not_done
    assert all(f.result() is None for f in futs)
    for i, o in zip(ins, outs):
        assert np.array_equal(i, o)
    # results of OUT scalars, and real work in parallel
    rng = np.random.default_rng(1)
    mats = [(rng.standard_normal((n, n)), rng.standard_normal((n, n)), np.empty((n, n))) for _ in range(16)]
    futs = [gridrpc.call_async("linalg/dmmul", n, A, B, C) for A, B, C in mats]
    sums = [gridrpc.call_async("test/work_sum", 3, np.array([1.0, 2.0, float(k)]), None, None) for k in range(20)]
    gridrpc.wait_all(futs, timeout=60)
    for A, B, C in mats:
        np.testing.assert_allclose(C, A @ B, rtol=1e-10, atol=1e-8)
    assert [f.result(timeout=60) for f in sums] == [5.0 + k * k for k in range(20)]
    assert gridrpc.in_flight() == 0


def test_async_callbacks_and_as_completed() -> None:
    seen: list[object] = []
    got = threading.Event()
    f = gridrpc.call_async("test/echo_string", "callback", None)

    def done(fut: concurrent.futures.Future) -> None:  # type: ignore[type-arg]
        seen.append(fut.result())
        got.set()

    f.add_done_callback(done)
    assert got.wait(30)
    assert seen == ["callback"]
    futs = [gridrpc.call_async("test/inout_scalars", k, 1.0, "s") for k in range(10)]
    results = sorted(f.result() for f in concurrent.futures.as_completed(futs, timeout=30))
    assert results == [(k + 1, 2.0, "replaced") for k in range(10)]
    assert f.done() and not f.running() and not f.cancelled() and f.exception() is None


def test_async_error_in_future(one_thread_server) -> None:
    f = gridrpc.call_async("test/sleep", 0.01)
    assert f.result(timeout=30) is None
    # an error of the call itself: the server dies during the call
    fut = gridrpc.call_async(one_thread_server.url("test/sleep"), 2.0)
    time.sleep(0.3)
    one_thread_server.stop(9)
    with pytest.raises(gridrpc.GridError) as e:
        fut.result(timeout=30)
    assert e.value.code in (6, 1, 5) and str(e.value)
    assert isinstance(fut.exception(), gridrpc.GridError)


def test_cancel(one_thread_server) -> None:
    url = one_thread_server.url("test/sleep")
    running = gridrpc.call_async(url, 1.5)
    time.sleep(0.2)
    queued = gridrpc.call_async(url, 30.0)  # waits behind the first: one worker
    t0 = time.monotonic()
    assert queued.cancel()
    assert queued.cancelled() and queued.done()
    with pytest.raises(concurrent.futures.CancelledError):
        queued.result(timeout=1)
    assert time.monotonic() - t0 < 5
    assert running.result(timeout=30) is None
    assert not running.cancel()  # finished: nothing to cancel
    # the server still answers, and nothing stays in flight
    assert gridrpc.call(one_thread_server.url("test/null_call")) is None
    deadline = time.monotonic() + 10
    while gridrpc.in_flight() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert gridrpc.in_flight() == 0


def test_cancel_keeps_buffers_safe(one_thread_server) -> None:
    url = one_thread_server.url
    blocker = gridrpc.call_async(url("test/sleep"), 0.5)
    x = np.arange(100000, dtype=np.float64)
    out = np.zeros_like(x)
    f = gridrpc.call_async(url("test/echo_double"), x.size, x, out)
    assert f.cancel()
    del x, out, f
    gc.collect()
    assert blocker.result(timeout=30) is None


def test_async_argument_errors_raise_at_once() -> None:
    with pytest.raises(gridrpc.ArgumentTypeError):  # float -> int is not converted
        gridrpc.call_async("test/echo_int", 3, np.zeros(3), np.zeros(3, dtype=np.int32))
    with pytest.raises(gridrpc.ArgumentTypeError):  # nor is an OUT array
        gridrpc.call_async("test/echo_double", 3, np.zeros(3), np.zeros(3, dtype=np.float32))
    with pytest.raises(gridrpc.NotFoundError):
        gridrpc.call_async("test/no_such_function")


# ---------------------------------------------------------------- errors


def test_unknown_function() -> None:
    with pytest.raises(gridrpc.NotFoundError) as e:
        gridrpc.call("test/no_such_function")
    assert e.value.code == 2 and e.value.name == "GRID_ERR_NOT_FOUND"
    assert "no_such_function" in str(e.value)


def test_wrong_argument_count() -> None:
    with pytest.raises(gridrpc.ArgumentTypeError) as e:
        gridrpc.call("test/echo_double", 3, np.zeros(3))
    assert isinstance(e.value, TypeError) and e.value.code == 3
    assert "takes 3 arguments (n, in, out) but 2 were given" in str(e.value)
    with pytest.raises(TypeError):
        gridrpc.call()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        gridrpc.call(42)  # type: ignore[arg-type]


def test_wrong_dtype() -> None:
    # IN arrays are converted unless a value would change (test_array_likes.py has the rules)
    with pytest.raises(gridrpc.ArgumentTypeError) as e:
        gridrpc.call("test/echo_double", 3, np.zeros(3, dtype=np.complex64), np.zeros(3))
    msg = str(e.value)
    assert "'in'" in msg and "float64" in msg and isinstance(e.value, TypeError)
    with pytest.raises(TypeError, match="int32"):
        gridrpc.call("test/echo_int", 2, np.zeros(2, dtype=np.float64), np.zeros(2, dtype=np.int32))
    with pytest.raises(ValueError, match="uint32"):
        gridrpc.call("test/echo_unsigned", 2, np.array([-1, 0], dtype=np.int32), np.zeros(2, dtype=np.uint32))
    # OUT arrays never are
    with pytest.raises(TypeError, match="int32"):
        gridrpc.call("test/echo_int", 2, np.zeros(2, dtype=np.int32), np.zeros(2, dtype=np.int64))
    with pytest.raises(TypeError, match="numpy array"):
        gridrpc.call("test/echo_double", 2, np.zeros(2), [0.0, 0.0])
    with pytest.raises(TypeError, match="expects an int"):
        gridrpc.call("test/echo_double", 2.0, np.zeros(2), np.zeros(2))
    with pytest.raises(TypeError, match="expects a float"):
        gridrpc.call("test/sleep", "soon")
    with pytest.raises(TypeError, match="WORK"):
        gridrpc.call("test/work_sum", 1, np.zeros(1), np.zeros(1), None)


def test_wrong_shape_and_layout() -> None:
    with pytest.raises(gridrpc.ArgumentValueError) as e:
        gridrpc.call("test/echo_double", 4, np.zeros(3), np.zeros(4))
    assert "'in'" in str(e.value) and "(4,)" in str(e.value) and isinstance(e.value, ValueError)
    with pytest.raises(ValueError, match=r"\(3, 3\)"):
        gridrpc.call("linalg/dmmul", 3, np.zeros((3, 3)), np.zeros((3, 3)), np.zeros((2, 2)))
    with pytest.raises(ValueError, match="shape"):  # transposed: same size, other shape
        gridrpc.call("test/block2d", 2, 3, 0, 1, 0, 1, np.zeros((3, 2)))
    # a flat array of the right size is accepted
    C = np.zeros(9)
    gridrpc.call("linalg/dmmul", 3, np.eye(3), np.eye(3), C)
    assert C.reshape(3, 3).tolist() == np.eye(3).tolist()
    with pytest.raises(ValueError, match="contiguous"):  # an OUT array is not copied
        gridrpc.call("linalg/dmmul", 3, np.zeros((3, 3)), np.zeros((3, 3)), np.zeros((3, 6))[:, ::2])
    ro = np.zeros(3)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="writable"):
        gridrpc.call("test/echo_double", 3, np.zeros(3), ro)
    with pytest.raises(TypeError, match="None but must hold 3"):
        gridrpc.call("test/echo_double", 3, None, np.zeros(3))
    with pytest.raises(ValueError, match="out of range"):
        gridrpc.call("test/echo_scalars", 0, 40000, *([0] * 18))
    with pytest.raises(ValueError, match="out of range"):
        gridrpc.call("test/echo_scalars", 0, 0, 0, 0, 0, 0, 0, 0, 0, -1, *([0] * 10))
    with pytest.raises(gridrpc.ArgumentError, match="negative|n"):
        gridrpc.call("test/echo_double", -1, None, None)
    with pytest.raises(ValueError, match="NUL"):
        gridrpc.call("test/echo_string", "a\0b", None)


def test_sizes_change_between_calls() -> None:
    """Shapes are re-derived whenever the size arguments change (the binding memoizes them)."""
    for n in (3, 5, 3, 0, 5, 1):
        x = np.arange(n, dtype=np.float64)
        out = np.empty(n)
        gridrpc.call("test/echo_double", n, x, out)
        assert np.array_equal(x, out)
        with pytest.raises(ValueError, match=f"\\({n + 1},\\)"):
            gridrpc.call("test/echo_double", n + 1, x, np.empty(n + 1))
    a = np.zeros((4, 6))
    gridrpc.call("test/block2d", 4, 6, 0, 4, 0, 6, a)
    with pytest.raises(ValueError, match=r"\(6, 4\)"):
        gridrpc.call("test/block2d", 6, 4, 0, 4, 0, 4, a)


def test_connection_refused() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(gridrpc.ConnectError) as e:
        gridrpc.call(f"gridrpc://127.0.0.1:{port}/test/null_call")
    assert e.value.code == 1 and "127.0.0.1" in str(e.value) and "refused" in str(e.value).lower()
    with pytest.raises(gridrpc.ConnectError):
        gridrpc.call_async(f"gridrpc://127.0.0.1:{port}/test/null_call")


def test_no_server_configured(server, monkeypatch) -> None:
    monkeypatch.delenv("GRIDRPC_SERVER")
    monkeypatch.setenv("GRIDRPC_CONFIG", "/nonexistent/gridrpc.conf")
    monkeypatch.setenv("HOME", "/nonexistent")
    gridrpc.reset()
    try:
        with pytest.raises(gridrpc.GridError) as e:
            gridrpc.call("test/null_call")
        assert str(e.value)
    finally:
        monkeypatch.undo()
        gridrpc.reset()
    assert gridrpc.call("test/null_call") is None


def test_timeouts() -> None:
    gridrpc.set_timeouts(5, 0.3)
    try:
        with pytest.raises(gridrpc.CallTimeoutError):
            gridrpc.call("test/sleep", 3.0)
    finally:
        gridrpc.set_timeouts(10, 0)
    with pytest.raises(ValueError):
        gridrpc.set_timeouts(-1, 0)


def test_errors_pickle_and_repr() -> None:
    import pickle

    try:
        gridrpc.call("test/no_such_function")
    except gridrpc.GridError as e:
        e2 = pickle.loads(pickle.dumps(e))
        assert type(e2) is type(e) and e2.code == e.code and str(e2) == str(e)
        assert "GRID_ERR_NOT_FOUND" in repr(e)


def test_stats_and_version() -> None:
    s = gridrpc.stats()
    assert s["calls"] > 0 and s["connections_opened"] > 0
    assert gridrpc.library_version.count(".") == 2


def test_no_leaks() -> None:
    """Many calls, including failing ones, leave no references behind."""
    x = np.arange(8, dtype=np.float64)
    out = np.empty(8)
    for _ in range(50):  # warm up caches
        gridrpc.call("test/echo_double", 8, x, out)
        gridrpc.call("test/echo_string", "s", None)
    refs_x, refs_out = sys.getrefcount(x), sys.getrefcount(out)
    gc.collect()
    before = len(gc.get_objects())
    for _ in range(2000):
        gridrpc.call("test/echo_double", 8, x, out)
        gridrpc.call("test/inout_scalars", 1, 2.0, "s")
        gridrpc.call("test/echo_strings", 2, ["a", "b"], None)
        with pytest.raises(TypeError):
            gridrpc.call("test/echo_double", 8, x.astype(np.complex64), out)
        gridrpc.call("test/echo_double", 8, [1, 2, 3, 4, 5, 6, 7, 8], out)  # converted
        with pytest.raises(TypeError):
            gridrpc.call("test/echo_int", 8, x, out.astype(np.int32))  # refused by the converter
        with pytest.raises(ValueError):
            gridrpc.call("test/echo_double", 7, x, out)
    for f in [gridrpc.call_async("test/echo_double", 8, x, out) for _ in range(200)]:
        f.result(timeout=30)
    del f
    gc.collect()
    assert sys.getrefcount(x) == refs_x and sys.getrefcount(out) == refs_out
    assert len(gc.get_objects()) - before < 100
    if os.path.exists("/proc/self/statm"):  # resident memory stays flat over many more calls
        def rss() -> int:
            with open("/proc/self/statm") as fh:
                return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

        r0 = rss()
        big = np.zeros(100000)
        big_out = np.empty(100000)
        big_int = np.zeros(100000, np.int32)
        for _ in range(300):
            gridrpc.call("test/echo_double", big.size, big, big_out)
            gridrpc.call("test/echo_double", big.size, big_int, big_out)  # its float64 copy is freed
            gridrpc.call("test/echo_string", "y" * 10000, None)
        assert rss() - r0 < 50 * 1024 * 1024


# ---------------------------------------------------------------- the example scripts


@pytest.mark.parametrize("script,sizes", [("dmmul.py", ["50", "200"]), ("linpack.py", ["50", "300"])])
def test_example_scripts(server, script: str, sizes: list[str]) -> None:
    """The examples, run as a user would: real dmmul and Linpack calls checked by numpy."""
    import subprocess

    path = os.path.join(os.path.dirname(__file__), os.pardir, "examples", script)
    env = dict(os.environ, GRIDRPC_SERVER=server.address, PYTHONPATH=os.pathsep.join(sys.path))
    r = subprocess.run([sys.executable, path, *sizes], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.strip().splitlines()
    assert len(lines) == 1 + len(sizes) and lines[0].split()[0] == "n"


def _key_file(path, hexdigits: str) -> str:
    path.write_text(hexdigits + "\n")
    path.chmod(0o600)
    return str(path)


def test_wrong_key_raises_auth_error(tmp_path, server) -> None:
    # A server with one key, a client with another: the server refuses the client's
    # credentials (GRID_ERR_AUTH), which is an AuthError and, as before the code existed,
    # still a ConfigError; a key file that cannot be read stays a plain ConfigError.
    s = Server(["--key-file", _key_file(tmp_path / "server.key", "a1" * 32)])
    wrong = _key_file(tmp_path / "client.key", "b2" * 32)
    try:
        os.environ["GRIDRPC_KEY_FILE"] = wrong
        gridrpc.reset()
        with pytest.raises(gridrpc.AuthError, match="is not in this server's key file") as e:
            gridrpc.call(s.url("test/null_call"))
        assert e.value.name == "GRID_ERR_AUTH"
        assert isinstance(e.value, gridrpc.ConfigError)
        os.environ["GRIDRPC_KEY_FILE"] = str(tmp_path / "missing.key")
        gridrpc.reset()
        with pytest.raises(gridrpc.ConfigError, match="cannot read the key file") as c:
            gridrpc.call(s.url("test/null_call"))
        assert not isinstance(c.value, gridrpc.AuthError)
        assert c.value.name == "GRID_ERR_CONFIG"
    finally:
        os.environ.pop("GRIDRPC_KEY_FILE", None)
        gridrpc.reset()
        s.stop()
