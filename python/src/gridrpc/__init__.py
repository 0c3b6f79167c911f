"""gridrpc: call remote numerical libraries (GridRPC servers) from Python.

Ninf style: one positional argument per IDL parameter, numpy arrays in and out.

    import numpy as np, gridrpc
    n = 500
    A, B = np.random.rand(n, n), np.random.rand(n, n)
    C = np.empty((n, n))
    gridrpc.call("linalg/dmmul", n, A, B, C)        # C = A @ B, computed remotely
    info = gridrpc.call("linalg/linpack", n, A2, b, None)   # OUT int: returned

Arguments, parameter by parameter (docs in python/README.md):
  IN scalar             a Python number (int, float, complex), a str for string
                        (char: a 1-character str or an int)
  OUT scalar / string   None (anything: ignored); its value is returned
  INOUT scalar / string its value; the new value is returned
  array (IN)            a C-contiguous array (numpy, array.array, memoryview) of the
                        matching dtype (double: float64, int: int32, ...) and size
  array (OUT, INOUT)    the same, writable: it is filled in place
  WORK array            None
  string array          a list of str (IN, INOUT); OUT ones are returned as lists
  filename              a path (IN: sent; OUT: written)
call returns the OUT and INOUT scalars and strings in parameter order: None when
there are none, the value when there is one, else a tuple.

The server is chosen as in C: "gridrpc://host:port/module/function" names it, else
GRIDRPC_SERVER=host:port, else the "server" line of GRIDRPC_CONFIG or ~/.gridrpc.conf.
Failures raise GridError (subclasses per error code) with the library's message.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import _core
from ._errors import (
    ArgumentError,
    ArgumentTypeError,
    ArgumentValueError,
    CallTimeoutError,
    CanceledError,
    ConfigError,
    ConnectError,
    ConnectionLostError,
    GridError,
    LimitError,
    NotFoundError,
    RemoteError,
)
from ._futures import Future, call_async, in_flight

__version__ = "0.1.0"
#: The version of the C library the extension was loaded with.
library_version: str = _core.library_version

#: Calls a remote function synchronously (see the module's doc); implemented in C.
call = _core.call

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


def describe(name: str) -> Function:
    """The interface of remote function NAME (its descriptor is fetched once)."""
    module, fname, description, params = _core.describe(name)
    return Function(module, fname, description, tuple(Param(*p) for p in params))


def set_timeouts(connect: float, call: float) -> None:
    """Timeouts in seconds for this process (0: none): opening a connection, and a
    whole call. Overrides GRIDRPC_CONNECT_TIMEOUT, GRIDRPC_TIMEOUT and the file."""
    _core.set_timeouts(connect, call)


def reset() -> None:
    """Closes every connection and forgets cached descriptors and settings, so the
    environment (GRIDRPC_SERVER, ...) is read again. No call may be in flight."""
    if in_flight():
        raise RuntimeError(f"gridrpc.reset() with {in_flight()} asynchronous calls in flight: wait for them first")
    _core.reset()


def stats() -> dict[str, int]:
    """The C client's counters: descriptor_fetches, connections_opened, calls."""
    return dict(_core.stats())


def wait_all(futures: Any, timeout: float | None = None) -> list[Any]:
    """Waits for the futures (of call_async) and returns their results in order;
    raises the first failure's error."""
    return [f.result(timeout) for f in list(futures)]


__all__ = [
    "ArgumentError",
    "ArgumentTypeError",
    "ArgumentValueError",
    "CallTimeoutError",
    "CanceledError",
    "ConfigError",
    "ConnectError",
    "ConnectionLostError",
    "Function",
    "Future",
    "GridError",
    "LimitError",
    "NotFoundError",
    "Param",
    "RemoteError",
    "call",
    "call_async",
    "describe",
    "in_flight",
    "library_version",
    "reset",
    "set_timeouts",
    "stats",
    "wait_all",
]
