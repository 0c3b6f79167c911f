"""gridrpc: call remote numerical libraries (GridRPC servers) from Python.

Ninf style: one positional argument per IDL parameter, numpy arrays in and out.

    import numpy as np, gridrpc
    n = 500
    A, B = np.random.rand(n, n), np.random.rand(n, n)
    C = gridrpc.call("linalg/dmmul", n, A, B, None)   # OUT array as None: allocated, returned
    gridrpc.call("linalg/dmmul", n, A, B, C)          # or filled in place (returns None)
    info = gridrpc.call("linalg/linpack", n, A2, b, None)   # OUT int: returned
    f = gridrpc.call_async("linalg/dmmul", n, A, B, None, timeout=60)
    C = f.result()

Arguments, parameter by parameter (details in python/README.md):
  IN scalar             a Python number (int, float, complex), a str for string
                        (char: a 1-character str or an int)
  OUT scalar / string   None (anything: ignored); its value is returned
  INOUT scalar / string its value; the new value is returned
  array (IN)            anything numpy.asarray takes (an array of any dtype or layout,
                        a list of lists) of the declared size; a C-contiguous array of
                        the parameter's dtype (double: float64, int: int32, ...) is
                        sent as it is, anything else converted when no value changes
                        (numpy's "safe" casting; integers that fit): float -> int and
                        complex -> real raise ArgumentTypeError, an int out of range
                        ArgumentValueError. char arrays are not converted.
  array (OUT)           None: a zeroed numpy array of the declared shape and dtype is
                        allocated and returned; or a writable C-contiguous array of
                        the parameter's dtype, filled in place (never converted)
  array (INOUT)         a writable C-contiguous array of the parameter's dtype: filled
                        in place (never converted: the caller reads it back)
  WORK array            None
  string array          a list of str (IN, INOUT); OUT ones are returned as lists
  filename              a path (IN: sent; OUT: written)

Return convention: call returns the values the caller has no other way to get, in
parameter order: OUT and INOUT scalars and strings, string arrays, and the OUT arrays
passed as None. None when there are none, the value itself when there is one, else a
tuple. Arrays the caller passed are filled in place and not returned.

The server is chosen as in C: server="host:port" or "gridrpc://host:port/module/function"
names it, else GRIDRPC_METASERVER / GRIDRPC_SERVER=host:port, else the "server" line of
GRIDRPC_CONFIG or ~/.gridrpc.conf. After a failed call, a changed GRIDRPC_SERVER (and
the other GRIDRPC_* settings) takes effect at the next call, without reset().
Failures raise GridError subclasses (one per error code) with the library's message.

Data that stays on servers (python/README.md):
    hb = gridrpc.put(B)                       # a gridrpc.Data: pass it where B goes
    hc = gridrpc.Data.new("float64", (n, n))  # an OUT that stays on the server
    gridrpc.call("linalg/dmmul", n, A, hb, hc); C = hc.get()
    with gridrpc.transaction():               # calls recorded, run together at the end
        gridrpc.call("linalg/dmmul", n, A, B, X)   # OUT arrays must be passed here
    job = gridrpc.submit("linalg/dmmul", n, A, B, None)      # two-phase: a job id
    C = gridrpc.fetch(job, n, None, None, None, wait=60)     # from any process
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from . import _arrays, _core
from ._errors import (
    ERROR_CLASSES,
    ArgumentError,
    ArgumentTypeError,
    ArgumentValueError,
    AuthError,
    BusyError,
    CallTimeoutError,
    CanceledError,
    ConfigError,
    ConnectError,
    ConnectionLostError,
    CrashedError,
    FileError,
    GridError,
    InternalError,
    LimitError,
    NotFoundError,
    OutOfMemoryError,
    ProtocolError,
    RemoteError,
    ShutdownError,
    StaleError,
)
from ._futures import Future, _check_timeout, _target, call_async, in_flight
from ._data import Data, put
from ._jobs import JobState, fetch, forget, job_state, submit
from ._txn import Deferred, Transaction, transaction
from . import _txn

__version__ = "0.1.0"
#: The version of the C library the extension was loaded with.
library_version: str = _core.library_version

_call = _core.call


def call(name: str, /, *args: Any, timeout: float | None = None, server: str | None = None) -> Any:
    """Calls the remote function NAME and returns its results.

    NAME is "function", "module/function" or "gridrpc://host:port/module/function".
    ARGS: one per IDL parameter (see help(gridrpc)). An OUT array may be None: it is
    allocated (numpy.zeros of the declared shape and dtype) and returned.

    Returns the OUT and INOUT scalars and strings, string arrays and the OUT arrays
    passed as None, in parameter order: None when there are none, the value itself
    when there is one, else a tuple. OUT arrays passed by the caller are filled in
    place.

    Keyword arguments:
      timeout  seconds (> 0) the call may take; past it the call is canceled and
               CallTimeoutError raised. None: no limit of its own (GRIDRPC_TIMEOUT and
               set_timeouts still apply).
      server   "host:port": call NAME on that server.

    Raises a GridError subclass: ArgumentTypeError / ArgumentValueError (also
    TypeError / ValueError) for bad arguments, ConnectError, NotFoundError,
    CallTimeoutError, RemoteError, ShutdownError, ...
    """
    if timeout is None and server is None and _txn._local.__dict__.get("txn") is None:
        return _call(name, *args)
    txn = _txn.active()
    if txn is not None:
        if timeout is not None:
            raise ArgumentValueError(_core.GRID_ERR_ARGS,
                                     f"call({name!r}, timeout=...) inside a transaction: its calls run "
                                     "together at its end; give no timeout= there")
        return txn._record(_target(name, server), args)
    name = _target(name, server)
    if timeout is None:
        return _call(name, *args)
    _check_timeout(timeout)
    return call_async(name, *args, timeout=timeout).result()


def _allocate(dtype: str, shape: tuple[int, ...]) -> Any:
    """Allocates an OUT array passed as None (called by the C extension)."""
    try:
        import numpy
    except ImportError:
        raise ArgumentTypeError(_core.GRID_ERR_ARGS,
                                "an OUT array passed as None is allocated with numpy, which is not "
                                "installed: pip install numpy, or pass a writable array") from None
    return numpy.zeros(shape, dtype)


_core._set_allocator(_allocate)
_core._set_converter(_arrays.convert_in)

_DTYPES = {
    ("char", False): "int8",
    ("char", True): "uint8",
    ("short", False): "int16",
    ("short", True): "uint16",
    ("int", False): "int32",
    ("int", True): "uint32",
    ("long", False): "int64",
    ("long", True): "uint64",
    ("longlong", False): "int64",
    ("longlong", True): "uint64",
    ("float", False): "float32",
    ("double", False): "float64",
    ("scomplex", False): "complex64",
    ("dcomplex", False): "complex128",
}


@dataclass(frozen=True)
class Param:
    """One parameter of a remote function."""

    name: str
    type: str  # "double", "int", "string", ... as in the IDL
    mode: str  # "IN", "OUT", "INOUT" or "WORK"
    rank: int  # 0 for a scalar
    unsigned: bool = False

    @property
    def dtype(self) -> str | None:
        """The numpy dtype name of its elements ("float64"); None for strings and files."""
        return _DTYPES.get((self.type, self.unsigned if self.type not in ("float", "double") else False))


@dataclass(frozen=True)
class Function:
    """The interface of a remote function, from its descriptor."""

    module: str
    name: str
    description: str
    params: tuple[Param, ...]

    def signature(self) -> str:
        """"dmmul(IN int n, IN double A[][], ...)"."""
        parts = [f"{p.mode} {'unsigned ' if p.unsigned else ''}{p.type} {p.name}{'[]' * p.rank}"
                 for p in self.params]
        return f"{self.module}/{self.name}({', '.join(parts)})"


def describe(name: str, *, server: str | None = None) -> Function:
    """The interface of remote function NAME (its descriptor is fetched once); on
    server "host:port" when given."""
    module, fname, description, params = _core.describe(_target(name, server))
    return Function(module, fname, description, tuple(Param(*p) for p in params))


def list_functions(server: str | None = None) -> list[str]:
    """The names ("module/function", sorted) of the functions SERVER ("host:port")
    serves; None: those of every server registered with the configured metaserver
    (GRIDRPC_METASERVER), else those of the configured server (GRIDRPC_SERVER). Each
    can be passed to call() and describe().

    Raises ConfigError when nothing is configured, ConnectError when the server cannot
    be reached, ArgumentValueError for a malformed SERVER.
    """
    return _core.list_functions(server)


def set_timeouts(connect: float, call: float) -> None:
    """Timeouts in seconds for this process (0: none): opening a connection, and a
    whole call. Overrides GRIDRPC_CONNECT_TIMEOUT, GRIDRPC_TIMEOUT and the file."""
    _core.set_timeouts(connect, call)


def reset() -> None:
    """Closes every connection and forgets cached descriptors and settings (also
    set_timeouts'), so the environment (GRIDRPC_SERVER, ...) is read again. No call may
    be in flight. (After a failed call, changed GRIDRPC_* settings are picked up without
    it.)"""
    if in_flight():
        raise RuntimeError(f"gridrpc.reset() with {in_flight()} asynchronous calls in flight: wait for them first")
    _core.reset()


def stats() -> dict[str, int]:
    """The C client's counters for this process: descriptor_fetches, connections_opened,
    calls (calls completed successfully, synchronous and asynchronous), and bytes_sent
    and bytes_received on all its connections (what a gridrpc.Data saves)."""
    return dict(_core.stats())


def wait_all(futures: Iterable[Future], timeout: float | None = None) -> list[Any]:
    """Waits for the futures (of call_async) and returns their results in order;
    raises the first failure's error. TIMEOUT applies to each wait."""
    return [f.result(timeout) for f in list(futures)]


__all__ = [
    "ERROR_CLASSES",
    "ArgumentError",
    "ArgumentTypeError",
    "ArgumentValueError",
    "AuthError",
    "BusyError",
    "CallTimeoutError",
    "CanceledError",
    "ConfigError",
    "ConnectError",
    "ConnectionLostError",
    "CrashedError",
    "Data",
    "Deferred",
    "FileError",
    "Function",
    "Future",
    "GridError",
    "InternalError",
    "JobState",
    "LimitError",
    "NotFoundError",
    "OutOfMemoryError",
    "Param",
    "ProtocolError",
    "RemoteError",
    "ShutdownError",
    "StaleError",
    "Transaction",
    "call",
    "call_async",
    "describe",
    "fetch",
    "forget",
    "in_flight",
    "job_state",
    "library_version",
    "list_functions",
    "put",
    "reset",
    "set_timeouts",
    "stats",
    "submit",
    "transaction",
    "wait_all",
]
