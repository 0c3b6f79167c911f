"""test_data.py: remote data handles from Python (gridrpc.put, gridrpc.Data) against a
real gridrpcd: put/get round trips per dtype, a handle passed to many calls gives what
the plain calls give, an OUT kept on the server and fetched later, the factors of a
Linpack chain left on the server, handles in asynchronous calls, and the errors (wrong
dtype or size, a freed handle, freeing one in use).
"""

from __future__ import annotations

import numpy as np
import pytest

import gridrpc

pytestmark = pytest.mark.usefixtures("server")

DTYPES = [("char", np.int8, None), ("char", np.uint8, None), ("short", np.int16, None),
          ("int", np.int32, None), ("long", np.int64, None), ("longlong", np.int64, "longlong"),
          ("float", np.float32, None), ("double", np.float64, None), ("scomplex", np.complex64, None),
          ("dcomplex", np.complex128, None)]


@pytest.mark.parametrize("idl,dtype,type_", DTYPES)
def test_put_get_round_trip_and_call(idl: str, dtype: type, type_: str | None) -> None:
    x = (np.arange(12) * 7 - 30).astype(dtype).reshape(3, 4)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * x[::-1]
        x = x.astype(dtype)
    with gridrpc.put(x, type=type_) as h:
        assert h.dtype == np.dtype(dtype).name and h.shape == (3, 4) and h.size == 12 and h.type == idl
        assert h.where.startswith("127.0.0.1:")
        x_orig = x.copy()
        x[:] = 0  # the server holds its own copy
        got = h.get()
        assert got.dtype == np.dtype(dtype) and got.shape == (3, 4) and np.array_equal(got, x_orig)
        out = np.zeros_like(x_orig)
        assert h.get(out=out) is out and np.array_equal(out, x_orig)
        # The handle as the IN array of a call: the server reads its copy.
        echoed = gridrpc.call(f"test/echo_{idl}", 12, h, None)
        assert np.array_equal(echoed.reshape(3, 4).view(x_orig.dtype), x_orig)  # char: int8 comes back
    assert h.freed


def test_in_handle_in_many_calls_equals_plain_calls() -> None:
    rng = np.random.default_rng(7)
    n = 40
    B = rng.standard_normal((n, n))
    As = [rng.standard_normal((n, n)) for _ in range(6)]
    plain = [gridrpc.call("linalg/dmmul", n, A, B, None) for A in As]
    with gridrpc.put(B) as hb:
        for A, want in zip(As, plain):
            assert np.array_equal(gridrpc.call("linalg/dmmul", n, A, hb, None), want)
        # and in asynchronous calls
        futs = [gridrpc.call_async("linalg/dmmul", n, A, hb, None) for A in As]
        for f, want in zip(futs, plain):
            assert np.array_equal(f.result(30), want)


def test_handle_saves_the_bytes_of_b() -> None:
    n = 60
    B = np.ones((n, n))
    A = np.eye(n)
    hb = gridrpc.put(B)
    s0 = gridrpc.stats()
    gridrpc.call("linalg/dmmul", n, A, hb, None)
    s1 = gridrpc.stats()
    gridrpc.call("linalg/dmmul", n, A, B, None)
    s2 = gridrpc.stats()
    hb.free()
    sent_handle = s1["bytes_sent"] - s0["bytes_sent"]
    sent_plain = s2["bytes_sent"] - s1["bytes_sent"]
    # B is n*n doubles: the plain call sends it, the handle call does not (a CALL_DATA
    # carries a few bytes more of session and refs).
    assert sent_handle < n * n * 8 + 400 and sent_plain - sent_handle > n * n * 8 - 200, (sent_handle, sent_plain)


def test_out_kept_on_server_then_get() -> None:
    rng = np.random.default_rng(11)
    n = 30
    A, B = rng.standard_normal((n, n)), rng.standard_normal((n, n))
    want = gridrpc.call("linalg/dmmul", n, A, B, None)
    hc = gridrpc.Data.new(np.float64, (n, n))
    assert hc.where == ""
    assert gridrpc.call("linalg/dmmul", n, A, B, hc) is None  # nothing allocated nor returned
    assert hc.where.startswith("127.0.0.1:")
    # the kept result feeds another call without coming back
    want2 = gridrpc.call("linalg/dmmul", n, want, B, None)
    assert np.array_equal(gridrpc.call("linalg/dmmul", n, hc, B, None), want2)
    assert np.array_equal(hc.get(), want)
    hc.free()


def test_inout_handle_doubles_on_the_server() -> None:
    x = np.arange(10, dtype=np.float64)
    with gridrpc.put(x) as h:
        for _ in range(3):
            assert gridrpc.call("test/inout_double", 10, h) is None
        assert np.array_equal(x, np.arange(10))  # the caller's array is untouched
        assert np.array_equal(h.get(), np.arange(10) * 8)


def test_linpack_factors_stay_on_the_server() -> None:
    rng = np.random.default_rng(5)
    n = 50
    A = rng.standard_normal((n, n)) + n * np.eye(n)
    b = rng.standard_normal(n)
    a_plain = A.copy()
    ipvt_plain, info = gridrpc.call("linalg/dgefa", n, a_plain, None, None)
    x_plain = b.copy()
    gridrpc.call("linalg/dgesl", n, a_plain, ipvt_plain, x_plain, 0)
    with gridrpc.put(A) as ha, gridrpc.Data.new(np.int32, n) as hp:
        info2 = gridrpc.call("linalg/dgefa", n, ha, hp, None)
        assert info2 == info == 0
        x = b.copy()
        gridrpc.call("linalg/dgesl", n, ha, hp, x, 0)
        assert np.array_equal(x, x_plain)
        assert np.array_equal(hp.get(), ipvt_plain)


def test_wrong_dtype_names_both() -> None:
    with gridrpc.put(np.zeros((4, 4), np.float32)) as h:
        with pytest.raises(gridrpc.ArgumentTypeError) as ei:
            gridrpc.call("linalg/dmmul", 4, np.zeros((4, 4)), h, None)
    msg = str(ei.value)
    assert "argument 4 ('B'" in msg and "float64" in msg and "float32" in msg, msg
    assert isinstance(ei.value, TypeError)


def test_wrong_size_names_both_shapes() -> None:
    with gridrpc.put(np.zeros(9)) as h:
        with pytest.raises(gridrpc.ArgumentValueError) as ei:
            gridrpc.call("linalg/dmmul", 4, np.zeros((4, 4)), h, None)
    msg = str(ei.value)
    assert "(4, 4)" in msg and "16 elements" in msg and "(9,)" in msg and "9 elements" in msg, msg


def test_long_and_longlong_hint() -> None:
    with gridrpc.put(np.arange(3, dtype=np.int64)) as h:  # IDL long by default
        with pytest.raises(gridrpc.ArgumentTypeError, match="type='longlong'"):
            gridrpc.call("test/echo_longlong", 3, h, None)


def test_freed_handle_and_free_twice() -> None:
    h = gridrpc.put(np.ones(3))
    h.free()
    h.free()  # nothing
    assert h.freed and h.where == ""
    with pytest.raises(gridrpc.ArgumentValueError, match="freed"):
        gridrpc.call("test/echo_double", 3, h, None)
    with pytest.raises(gridrpc.ArgumentValueError, match="freed"):
        h.get()


def test_free_while_in_flight_is_refused(one_thread_server) -> None:  # type: ignore[no-untyped-def]
    url = one_thread_server.url
    h = gridrpc.put(np.ones(3), one_thread_server.address)
    f = gridrpc.call_async(url("test/sleep"), 0.5)
    g = gridrpc.call_async(url("test/echo_double"), 3, h, None)
    with pytest.raises(gridrpc.ArgumentValueError, match="in use"):
        h.free()
    assert np.array_equal(g.result(30), np.ones(3))
    f.result(30)
    h.free()


def test_get_out_of_wrong_dtype() -> None:
    with gridrpc.put(np.ones(3)) as h:
        with pytest.raises(gridrpc.ArgumentTypeError, match="float64"):
            h.get(out=np.zeros(3, np.float32))
        with pytest.raises(gridrpc.ArgumentValueError, match="3 elements"):
            h.get(out=np.zeros(4))


def test_put_refuses_what_has_no_idl_type() -> None:
    with pytest.raises(gridrpc.ArgumentTypeError, match="bool"):
        gridrpc.put(np.zeros(3, bool))
    with pytest.raises(gridrpc.ArgumentTypeError, match="float16"):
        gridrpc.put(np.zeros(3, np.float16))
    with pytest.raises(gridrpc.ArgumentValueError, match="C-contiguous"):
        gridrpc.put(np.zeros((4, 4))[:, 1])
    with pytest.raises(gridrpc.ArgumentTypeError, match="does not hold"):
        gridrpc.put(np.zeros(3), type="int")


def test_put_any_buffer() -> None:
    import array

    a = array.array("d", [1.5, 2.5, 3.5])
    with gridrpc.put(a) as h:
        assert h.dtype == "float64" and h.shape == (3,)
        assert np.array_equal(gridrpc.call("test/echo_double", 3, h, None), [1.5, 2.5, 3.5])


def test_reset_ends_the_session() -> None:
    h = gridrpc.put(np.ones(3))
    gridrpc.reset()
    with pytest.raises(gridrpc.ArgumentError, match="session"):
        h.get()
    h.free()  # still frees the handle
