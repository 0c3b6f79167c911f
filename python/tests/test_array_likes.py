"""test_array_likes.py: IN array arguments numpy would take are converted (issue on
first-hour rough edges, item 5), against a real gridrpcd: lists, other dtypes, Fortran
order and strided views give what the same values as a C-contiguous array of the
parameter's dtype give; nothing is converted that would change a value (float -> int,
complex -> real, float64 -> float32, an int out of range); OUT and INOUT arrays are
never converted; an argument already right does not reach the converter; a converted
copy lives as long as the call (call_async, transactions, submit).
"""

from __future__ import annotations

import array
import gc
from typing import Any, Iterator

import numpy as np
import pytest

import gridrpc
from gridrpc import _arrays, _core

pytestmark = pytest.mark.usefixtures("server")

N = 5
RNG = np.random.default_rng(11)
A = RNG.standard_normal((N, N))
B = RNG.standard_normal((N, N))


def dmmul(a: Any, b: Any) -> np.ndarray:
    return gridrpc.call("linalg/dmmul", N, a, b, None)


def echo(fn: str, x: Any, n: int | None = None) -> np.ndarray:
    return gridrpc.call("test/" + fn, len(x) if n is None else n, x, None)


@pytest.fixture()
def conversions() -> Iterator[list[Any]]:
    """The arguments that reach the converter during the test."""
    seen: list[Any] = []

    def counting(obj: Any, dtype: str, where: str, recorded: bool) -> Any:
        seen.append(obj)
        return _arrays.convert_in(obj, dtype, where, recorded)

    _core._set_converter(counting)
    try:
        yield seen
    finally:
        _core._set_converter(_arrays.convert_in)


# ---------------------------------------------------------------- what is converted


def test_lists_of_lists_give_the_numpy_result() -> None:
    want = dmmul(A, B)
    assert np.array_equal(dmmul(A.tolist(), B.tolist()), want)
    assert np.array_equal(dmmul(tuple(map(tuple, A.tolist())), B), want)
    # a flat list of n*n numbers, as a flat array is taken today
    assert np.array_equal(dmmul(A.ravel().tolist(), B), want)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.int16, np.uint8, np.bool_, np.float32])
def test_other_dtypes_for_a_double_parameter(dtype: type) -> None:
    x = (np.arange(7) * 3 - 5).astype(dtype)
    out = echo("echo_double", x)
    assert out.dtype == np.float64 and np.array_equal(out, x.astype(np.float64))
    assert x.dtype == np.dtype(dtype)  # the caller's array is left as it was


def test_int_lists_and_arrays_for_an_int_parameter() -> None:
    # a list of ints is int64 for numpy; the parameter is int32: taken, the values fit
    vals = [-(2**31), -1, 0, 7, 2**31 - 1]
    assert echo("echo_int", vals).tolist() == vals
    assert echo("echo_int", np.array(vals, np.int64)).tolist() == vals
    assert echo("echo_unsigned", [0, 2**32 - 1]).tolist() == [0, 2**32 - 1]
    assert echo("echo_short", np.array([-(2**15), 2**15 - 1], np.int64)).tolist() == [-(2**15), 2**15 - 1]
    # ints a float32 holds exactly
    assert echo("echo_float", [1, -(2**24), 2**24]).tolist() == [1.0, -(2.0**24), 2.0**24]
    assert echo("echo_dcomplex", [1, 2.5]).tolist() == [1 + 0j, 2.5 + 0j]


def test_fortran_order_and_views_are_taken_as_the_logical_array() -> None:
    want = dmmul(A, B)
    F = np.asfortranarray(A)
    assert not F.flags.c_contiguous
    assert np.array_equal(dmmul(F, np.asfortranarray(B)), want)
    # a transposed view: its logical matrix (A transposed), not its memory order (A)
    assert np.array_equal(dmmul(A.T, B), dmmul(A.T.copy(), B))
    assert not np.array_equal(dmmul(A.T, B), want)
    wide = np.zeros((N, 2 * N))
    wide[:, ::2] = A
    assert np.array_equal(dmmul(wide[:, ::2], B), want)
    x = np.arange(20.0)
    assert echo("echo_double", x[::3]).tolist() == x[::3].tolist()
    assert echo("echo_double", x[::-1]).tolist() == x[::-1].tolist()


def test_other_array_likes() -> None:
    class Like:
        def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
            return np.arange(4, dtype=np.int32)

    assert echo("echo_double", Like(), 4).tolist() == [0.0, 1.0, 2.0, 3.0]
    assert echo("echo_double", array.array("i", [3, 4])).tolist() == [3.0, 4.0]
    assert echo("echo_double", np.array([1.5, 2.5], ">f8")).tolist() == [1.5, 2.5]
    assert echo("echo_int", range(3), 3).tolist() == [0, 1, 2]
    assert echo("echo_double", np.float32(2.5), 1).tolist() == [2.5]  # one element, as numpy takes it


def test_the_callers_list_is_left_as_it_was() -> None:
    vals = [[1, 2], [3, 4]]
    gridrpc.call("linalg/dmmul", 2, vals, vals, None)
    assert vals == [[1, 2], [3, 4]] and all(type(v) is int for row in vals for v in row)


# ---------------------------------------------------------------- what is refused


@pytest.mark.parametrize("x", [np.array([1.0, 2.0]), [1.0, 2.0], [1, 2.5], np.array([1, 2], np.float32)])
def test_float_to_int_is_refused(x: Any) -> None:
    with pytest.raises(gridrpc.ArgumentTypeError) as e:
        echo("echo_int", x)
    msg = str(e.value)
    assert "test/echo_int: argument 3 ('in', IN int array)" in msg, msg
    assert "expects dtype int32, got float" in msg and "astype(numpy.int32)" in msg, msg


def test_values_that_would_change_are_refused() -> None:
    with pytest.raises(gridrpc.ArgumentTypeError, match="imaginary"):
        echo("echo_double", np.array([1 + 2j, 3]))
    with pytest.raises(gridrpc.ArgumentTypeError, match="complex128"):
        echo("echo_double", [1j])
    with pytest.raises(gridrpc.ArgumentTypeError, match=r"float64 values would be rounded to float32.*"
                                                         r"astype\(numpy.float32\)"):
        echo("echo_float", np.array([0.1, 0.2]))
    with pytest.raises(gridrpc.ArgumentTypeError, match="float64"):
        echo("echo_float", [0.5])  # a list of floats is float64: not silently rounded
    with pytest.raises(gridrpc.ArgumentTypeError, match="complex128"):
        echo("echo_scomplex", [0.1j])


@pytest.mark.parametrize(
    "fn,x,rng",
    [("echo_int", [1, 2**31], "-2147483648 .. 2147483647"),
     ("echo_int", np.array([-(2**31) - 1, 0], np.int64), "-2147483648 .. 2147483647"),
     ("echo_unsigned", [5, -1], "0 .. 4294967295"),
     ("echo_short", [40000], "-32768 .. 32767"),
     ("echo_long", [2**70], "-9223372036854775808 .. 9223372036854775807"),  # numpy: object
     ("echo_long", [-1, 2**63], "-9223372036854775808 .. 9223372036854775807"),  # numpy: float64
     ("echo_float", [2**24 + 1], "-16777216 .. 16777216")],
)
def test_integers_out_of_range_are_refused(fn: str, x: Any, rng: str) -> None:
    with pytest.raises(gridrpc.ArgumentValueError) as e:
        echo(fn, x)
    msg = str(e.value)
    assert "out of range" in msg and rng in msg and f"test/{fn}: argument 3" in msg, msg


def test_what_holds_no_numbers_is_refused() -> None:
    with pytest.raises(gridrpc.ArgumentTypeError, match=r"expects numbers \(dtype float64\), got an array of str"):
        echo("echo_double", ["1", "2"])
    with pytest.raises(gridrpc.ArgumentTypeError, match="object"):
        echo("echo_double", [1.0, None])
    with pytest.raises(gridrpc.ArgumentValueError, match="inhomogeneous"):
        gridrpc.call("linalg/dmmul", 2, [[1, 2], [3]], np.eye(2), None)


def test_the_converted_shape_is_checked_as_before() -> None:
    with pytest.raises(gridrpc.ArgumentValueError, match=r"expects shape \(5, 5\) \(25 elements of float64\), "
                                                         r"got shape \(2, 2\) \(4 elements\)"):
        dmmul([[1, 2], [3, 4]], B)
    with pytest.raises(gridrpc.ArgumentValueError, match=r"expects shape \(5, 5\)"):
        dmmul(np.asfortranarray(np.zeros((5, 4))), B)
    with pytest.raises(gridrpc.ArgumentValueError, match=r"expects shape \(3,\)"):
        echo("echo_double", [1, 2], 3)


@pytest.mark.parametrize(
    "fn,args,i,mode",
    [("test/echo_double", (2, np.zeros(2), [0.0, 0.0]), 2, "OUT"),
     ("test/echo_double", (2, np.zeros(2), np.zeros(2, np.float32)), 2, "OUT"),
     ("test/inout_double", (2, [1.0, 2.0]), 1, "INOUT"),
     ("test/inout_double", (2, np.arange(2, dtype=np.int64)), 1, "INOUT"),
     ("test/inout_double", (2, np.zeros(4)[::2]), 1, "INOUT"),
     ("linalg/dgefa", (2, np.asfortranarray(np.eye(2)), None, None), 1, "INOUT")],
)
def test_out_and_inout_arrays_are_not_converted(conversions: list[Any], fn: str, args: tuple[Any, ...], i: int,
                                                mode: str) -> None:
    with pytest.raises(gridrpc.ArgumentError) as e:
        gridrpc.call(fn, *args)
    msg = str(e.value)
    assert f"argument {i + 2} (" in msg and f"an {mode} array is written back in place" in msg, msg
    assert "IN arrays are converted, INOUT/OUT are not" in msg and "dtype float64" in msg, msg
    assert conversions == []


def test_char_arrays_keep_their_rules(conversions: list[Any]) -> None:
    assert echo("echo_char", b"abc").tolist() == [97, 98, 99]
    assert echo("echo_char", np.array([1, -2], np.int8)).tolist() == [1, -2]
    with pytest.raises(gridrpc.ArgumentTypeError, match="C-contiguous numpy array"):
        echo("echo_char", [1, 2])
    with pytest.raises(gridrpc.ArgumentTypeError, match="int16"):
        echo("echo_char", np.array([1, 2], np.int16))
    assert conversions == []


# ---------------------------------------------------------------- the fast path


def test_an_argument_already_right_is_not_converted(conversions: list[Any]) -> None:
    ro = A.copy()
    ro.flags.writeable = False
    dmmul(A, ro)
    echo("echo_double", array.array("d", [1.0, 2.0]))
    echo("echo_double", memoryview(np.arange(3.0)))
    echo("echo_int", np.arange(3, dtype=np.int32))
    gridrpc.call_async("linalg/dmmul", N, A, B, None).result(timeout=30)
    assert conversions == []
    lst = [1, 2]
    echo("echo_double", lst)
    assert len(conversions) == 1 and conversions[0] is lst


# ---------------------------------------------------------------- lifetimes


def test_transaction_takes_lists_and_refuses_copies_of_arrays() -> None:
    C = np.zeros((N, N))
    D = np.zeros((N, N))
    with gridrpc.transaction():
        gridrpc.call("linalg/dmmul", N, A.tolist(), B.tolist(), C)
        gc.collect()  # only the recorded call holds the converted copies now
    assert np.array_equal(C, dmmul(A, B))
    # A copy made when the call is recorded would miss what the calls before it write
    # (the transaction reads arrays at its end): C.T here would be the zeros of before.
    for arg in (C.T, C.astype(np.float32), list(C)):  # list(C): rows that are views of C
        with pytest.raises(gridrpc.ArgumentTypeError, match="inside a transaction"):
            with gridrpc.transaction():
                gridrpc.call("linalg/dmmul", N, A, B, C)
                gridrpc.call("linalg/dmmul", N, arg, B, D)
    assert not D.any()


def test_submit_converts_a_list() -> None:
    job = gridrpc.submit("linalg/dmmul", N, A.tolist(), np.asfortranarray(B), None)
    try:
        C = gridrpc.fetch(job, N, None, None, None, wait=30)
    finally:
        gridrpc.forget(job)
    assert np.array_equal(C, dmmul(A, B))
