"""_arrays.py: IN array arguments converted the way numpy converts array-likes.

The C extension takes an IN array as it is when it is already a C-contiguous buffer of
the parameter's dtype (no Python call: the fast path). Anything else (a list, a tuple, an
array of another dtype, a Fortran-ordered or strided view, any array-like numpy.asarray
takes) comes here (convert_in, registered with _core._set_converter) and is made a
C-contiguous numpy array of the parameter's dtype, kept alive by the call until it ends.

No value is changed silently: numpy's "safe" casting decides (int32 -> float64, float32
-> float64, bool -> any number are fine; float -> int, complex -> real, float64 ->
float32 are refused, naming how to convert explicitly). Integers that need a narrower
integer dtype, or a float dtype that cannot hold every integer of theirs (int64 ->
float32), are taken when every value fits exactly: a Python list of ints is int64 for
numpy, and the parameter is often int (int32).

OUT and INOUT arrays are never converted (the caller reads their memory back): the C
extension refuses them with the strict rules.
"""

from __future__ import annotations

from typing import Any

from . import _core
from ._errors import ArgumentTypeError, ArgumentValueError

_ARGS = _core.GRID_ERR_ARGS


def _plain_numbers(obj: Any) -> bool:
    """Whether OBJ is a (nested) list or tuple of plain values: nothing in it can alias
    an array another call writes."""
    import numpy

    if not isinstance(obj, (list, tuple)):
        return False
    stack = [obj]
    while stack:
        for x in stack.pop():
            if isinstance(x, (list, tuple)):
                stack.append(x)
            elif not isinstance(x, (int, float, complex, str, bytes, numpy.generic)):
                return False
    return True


def _int_values(obj: Any) -> list[int] | None:
    """The values of a (nested) list or tuple of Python ints, or None when something
    else is in it (numpy makes such a list float64 or object when a value does not fit
    int64; the error should then name the value, not the dtype)."""
    out: list[int] = []
    stack = [obj]
    while stack:
        x = stack.pop()
        if isinstance(x, (list, tuple)):
            stack.extend(x)
        elif isinstance(x, int) and not isinstance(x, bool):
            out.append(x)
        else:
            return None
    return out


def _range_error(where: str, value: int, dtype: Any, lo: int, hi: int) -> ArgumentValueError:
    return ArgumentValueError(_ARGS, f"{where}: {value} is out of range for {dtype} ({lo} .. {hi}); "
                                     "the values must fit the parameter's type")


def _how(obj: Any, dtype: str) -> str:
    """How to convert OBJ explicitly, in the caller's terms."""
    import numpy

    if isinstance(obj, numpy.ndarray):
        return f"x.astype(numpy.{dtype})"
    return f"numpy.asarray(x).astype(numpy.{dtype})"


def convert_in(obj: Any, dtype: str, where: str, recorded: bool) -> Any:
    """OBJ made a C-contiguous numpy array of DTYPE for an IN array parameter (called by
    the C extension when OBJ is not one already). WHERE names the argument in errors;
    RECORDED: the call is recorded in a transaction (its arrays are read at the end).

    Raises ArgumentTypeError when converting would change values (float -> int, ...)
    or OBJ holds no numbers, ArgumentValueError when an integer does not fit DTYPE or
    OBJ is not array-like (ragged lists). The shape is checked by the caller.
    """
    try:
        import numpy
    except ImportError:
        raise ArgumentTypeError(_ARGS, f"{where}: expects a C-contiguous array of dtype {dtype} (lists and "
                                       "other dtypes are converted with numpy, which is not installed)") \
            from None
    if recorded and not _plain_numbers(obj):
        # A later call's IN array is read at the transaction's end, after the calls
        # before it wrote theirs: a copy made now could hold the values of before.
        raise ArgumentTypeError(_ARGS, f"{where}: inside a transaction the arrays are read at its end, so "
                                       f"a {type(obj).__name__} that is not a C-contiguous array of dtype "
                                       f"{dtype} is not converted (a copy made now would miss what the "
                                       "calls before it write): pass one (numpy.ascontiguousarray(x, "
                                       f"dtype=numpy.{dtype})), or a list of numbers")
    want = numpy.dtype(dtype)
    try:
        a = numpy.asarray(obj)
    except (ValueError, TypeError, OverflowError) as e:
        raise ArgumentValueError(_ARGS, f"{where}: a {type(obj).__name__} that numpy cannot make an array "
                                        f"of {dtype}: {e}") from None
    src = a.dtype
    if want.kind in "iu" and src.kind in "fO" and isinstance(obj, (list, tuple)):
        ints = _int_values(obj)  # ints beyond int64, which numpy made float64 or object
        if ints is not None:
            info = numpy.iinfo(want)
            bad = next((v for v in ints if not info.min <= v <= info.max), None)
            if bad is not None:
                raise _range_error(where, bad, want, int(info.min), int(info.max))
            return numpy.array(obj, dtype=want)
    if src.kind not in "biufc":
        what = {"U": "str", "S": "bytes", "O": "object", "V": "structured", "M": "datetime64",
                "m": "timedelta64"}.get(src.kind, str(src))
        raise ArgumentTypeError(_ARGS, f"{where}: expects numbers (dtype {dtype}), got an array of {what} "
                                       f"(dtype {src}) from a {type(obj).__name__}")
    if not numpy.can_cast(src, want, "safe"):
        if src.kind in "iu" and want.kind in "iufc" and a.size:
            # Integers: taken when every value fits (exactly, for a float dtype).
            lo, hi = int(a.min()), int(a.max())
            if want.kind in "iu":
                info = numpy.iinfo(want)
                rlo, rhi = int(info.min), int(info.max)
            else:
                rhi = 2 ** (numpy.finfo(want).nmant + 1)
                rlo = -rhi
            if lo < rlo or hi > rhi:
                raise _range_error(where, lo if lo < rlo else hi, want, rlo, rhi)
        elif not (src.kind in "iu" and want.kind in "iufc"):
            if src.kind == "c" and want.kind != "c":
                reason = "the imaginary parts would be dropped"
            elif want.kind in "iu":
                reason = "floats would be truncated to integers"
            else:
                reason = f"{src} values would be rounded to {want}"
            raise ArgumentTypeError(_ARGS, f"{where}: expects dtype {dtype}, got {src} ({reason}; IN arrays "
                                           "are converted only when no value changes): if that is meant, "
                                           f"pass {_how(obj, dtype)}")
    return numpy.asarray(a, dtype=want, order="C")
