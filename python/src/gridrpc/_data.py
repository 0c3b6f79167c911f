"""_data.py: remote data handles (gridrpc.put, gridrpc.Data).

An array put on a server once and passed to any number of calls in place of the array
(IN, OUT or INOUT), then fetched back with get(): the C library's grid_data_*_np
(docs/api.md "Remote data"). The element type and count live in the library; the
numpy dtype and shape are kept here so get() returns what was put.
"""

from __future__ import annotations

from typing import Any

from . import _core


class Data(_core.Data):
    """An array kept on a server: pass it to gridrpc.call (and call_async, submit,
    transactions) wherever the function takes that array.

    IN: the call reads the server's copy (copied server to server first when the call
    runs elsewhere). OUT and INOUT: the result stays on the call's server as this handle
    and does not come back until get(). The handle's dtype and size must be the
    parameter's for the call's sizes (else ArgumentTypeError / ArgumentValueError).

    Attributes: where ("host:port" of a server holding it, "" when none yet), dtype
    (numpy dtype name), shape, size, type (the IDL element type), freed.
    Use as a context manager to free it at the end of a block; a Data dropped without
    free() is freed when collected; reset() ends the session (the servers free the data
    and the handle refuses use).
    """

    __slots__ = ()

    @classmethod
    def new(cls, dtype: Any, shape: int | tuple[int, ...], *, type: str | None = None) -> "Data":
        """A handle with no data yet, for an OUT argument whose result stays on the
        server where the call runs. TYPE picks the IDL type when the dtype fits several
        (int64: "long", the default, or "longlong")."""
        import numpy

        dt = numpy.dtype(dtype)
        if isinstance(shape, int):
            shape = (shape,)
        shape = tuple(int(s) for s in shape)
        name = "S1" if dt.kind == "S" else dt.name
        return _core._data_new(cls, name, dt.kind if dt.kind != "b" else "?", dt.itemsize, shape, type)

    def get(self, out: Any = None) -> Any:
        """The data as a numpy array of the handle's dtype and shape (a new one, or OUT:
        a writable C-contiguous array of that dtype and size, filled and returned)."""
        if out is None:
            import numpy

            out = numpy.empty(self.shape, self.dtype)
        self._get_into(out)
        return out

    def __enter__(self) -> "Data":
        return self

    def __exit__(self, *exc: object) -> None:
        self.free()


def put(array: Any, where: str | None = None, *, type: str | None = None) -> Data:
    """Puts ARRAY (numpy or any C-contiguous buffer of a number dtype) on a server and
    returns its handle.

    WHERE: "host:port", "gridrpc://host:port", a function name (the server a call of it
    would go to), or None: the default server (under a metaserver the data waits in the
    client until the first call that uses it, and goes to that call's server).
    dtype -> IDL type: int8/uint8/S1 char, int16 short, int32 int, int64 long (type=
    "longlong" for a longlong parameter), float32 float, float64 double, complex64
    scomplex, complex128 dcomplex.
    """
    return _core._data_put(Data, array, where, type)
