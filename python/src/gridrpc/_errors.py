"""_errors.py: the exceptions of the gridrpc package.

Every failure is a GridError carrying the C library's error code (.code), its name
(.name, "GRID_ERR_CONNECT") and the library's message (.message, also str(e)), which
says what happened and what to do. Every error code has its own subclass (ERROR_CLASSES
maps code -> class); argument errors found before anything is sent are also TypeError
or ValueError, as Python expects.
"""

from __future__ import annotations

from . import _core

KIND_GRID = _core.KIND_GRID
KIND_TYPE = _core.KIND_TYPE
KIND_VALUE = _core.KIND_VALUE


class GridError(Exception):
    """A GridRPC call or setting failed (code, name and the library's message)."""

    code: int
    name: str
    message: str

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.name = _core.error_name(code)[0]
        self.message = message

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name}, {self.message!r})"

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (type(self), (self.code, self.message))


class ConnectError(GridError):
    """GRID_ERR_CONNECT: the server cannot be reached (refused, unknown host)."""


class ConnectionLostError(GridError):
    """GRID_ERR_CONN_LOST: the connection closed during the call."""


class NotFoundError(GridError, LookupError):
    """GRID_ERR_NOT_FOUND: no such function on the server."""


class ArgumentError(GridError):
    """GRID_ERR_ARGS: wrong arguments (count, types, sizes)."""


class ArgumentTypeError(ArgumentError, TypeError):
    """An argument of the wrong type or dtype, or a wrong number of arguments."""


class ArgumentValueError(ArgumentError, ValueError):
    """An argument of the wrong shape or size, out of range, or not C-contiguous."""


class LimitError(GridError):
    """GRID_ERR_LIMIT: a size limit of the client or the server was exceeded."""


class CallTimeoutError(GridError):
    """GRID_ERR_TIMEOUT: no answer in time (set_timeouts, GRIDRPC_TIMEOUT)."""


class CanceledError(GridError):
    """GRID_ERR_CANCELED: the call was canceled."""


class ConfigError(GridError):
    """GRID_ERR_CONFIG: no server configured, or a bad configuration file."""


class AuthError(ConfigError):
    """GRID_ERR_AUTH: a server or metaserver refused this client's key, token or role
    (or the client refused a server that could not prove the same key); the message
    names what was refused and what to do. A ConfigError, as such refusals were before
    the code existed, so 'except ConfigError' still catches them."""


class RemoteError(GridError):
    """GRID_ERR_FAILED: the remote function failed."""


class ShutdownError(GridError):
    """GRID_ERR_SHUTDOWN: the server is shutting down (the call was not run: retry elsewhere)."""


class ProtocolError(GridError):
    """GRID_ERR_PROTOCOL: a malformed or unexpected message (version mismatch?)."""


class OutOfMemoryError(GridError, MemoryError):
    """GRID_ERR_NOMEM: the client or the server ran out of memory."""


class StaleError(GridError):
    """GRID_ERR_STALE: the function's interface changed on the server in a way the
    arguments cannot follow (describe() it again)."""


class BusyError(GridError):
    """GRID_ERR_BUSY: the server is overloaded (its queue is full): retry later."""


class FileError(GridError):
    """GRID_ERR_IO: a local file (a filename argument) could not be read or written."""


class CrashedError(RemoteError):
    """GRID_ERR_CRASHED: the remote function crashed its process on the server (signal,
    exit(), over the server's memory limit); the server is still up. Not retried: it
    would crash again."""


class InternalError(GridError):
    """GRID_ERR_INTERNAL: a bug in GridRPC (please report it with the message)."""


#: The exception class of each error code (GRID_ERR_ARGS: ArgumentError; the binding's
#: own argument checks raise its subclasses ArgumentTypeError and ArgumentValueError).
ERROR_CLASSES: dict[int, type[GridError]] = {
    _core.GRID_ERR_CONNECT: ConnectError,
    _core.GRID_ERR_NOT_FOUND: NotFoundError,
    _core.GRID_ERR_ARGS: ArgumentError,
    _core.GRID_ERR_LIMIT: LimitError,
    _core.GRID_ERR_PROTOCOL: ProtocolError,
    _core.GRID_ERR_CONN_LOST: ConnectionLostError,
    _core.GRID_ERR_TIMEOUT: CallTimeoutError,
    _core.GRID_ERR_SHUTDOWN: ShutdownError,
    _core.GRID_ERR_CONFIG: ConfigError,
    _core.GRID_ERR_NOMEM: OutOfMemoryError,
    _core.GRID_ERR_CANCELED: CanceledError,
    _core.GRID_ERR_STALE: StaleError,
    _core.GRID_ERR_FAILED: RemoteError,
    _core.GRID_ERR_BUSY: BusyError,
    _core.GRID_ERR_IO: FileError,
    _core.GRID_ERR_INTERNAL: InternalError,
    _core.GRID_ERR_CRASHED: CrashedError,
    _core.GRID_ERR_AUTH: AuthError,
}


def make_error(code: int, message: str, kind: int = KIND_GRID) -> GridError:
    """The exception for CODE and MESSAGE (KIND: an argument error's Python kind)."""
    if kind == KIND_TYPE:
        return ArgumentTypeError(code, message)
    if kind == KIND_VALUE:
        return ArgumentValueError(code, message)
    return ERROR_CLASSES.get(code, GridError)(code, message)


_core._set_error_factory(make_error)
