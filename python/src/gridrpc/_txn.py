"""_txn.py: transactions (with gridrpc.transaction(): ...).

The calls made inside the block are recorded by the C library (grid_transaction_begin),
not run; at the end of the block grid_transaction_end runs them all, independent ones at
once on different servers, and the caller's arrays end as if the calls had run one by one
in order. The arrays are read at the end (as Ninf did), so they must stay as they should
be read until then, and the binding keeps them alive. An IN array that would need a
converted copy (another dtype, a view) is refused: the copy would be taken when the call
is recorded, missing what the calls before it write; lists of numbers are converted.
Because the results are written only at the end, OUT arrays must be passed by the
caller: the binding cannot allocate and return them (passing None raises
ArgumentTypeError).
"""

from __future__ import annotations

import threading
from typing import Any

from . import _core

_local = threading.local()


def active() -> "Transaction | None":
    """The transaction open in this thread, or None."""
    return getattr(_local, "txn", None)


class Deferred:
    """What gridrpc.call returns inside a transaction: result() gives what call would
    have returned (OUT scalars, ...) once the transaction has ended."""

    __slots__ = ("_pending", "_value", "_error", "_done", "name")

    def __init__(self, pending: _core.Pending, name: str) -> None:
        self._pending: _core.Pending | None = pending
        self._value: Any = None
        self._error: BaseException | None = None
        self._done = False
        self.name = name

    def done(self) -> bool:
        return self._done

    def result(self) -> Any:
        if not self._done:
            raise RuntimeError(f"{self.name}: the call runs at the end of its transaction; "
                               "its result is known after the with block")
        if self._error is not None:
            raise self._error
        return self._value

    def _finish(self) -> None:
        p, self._pending = self._pending, None
        if p is not None:
            self._value = p.finish(_core.GRID_OK)
        self._done = True

    def _drop(self, error: BaseException | None) -> None:
        p, self._pending = self._pending, None
        if p is not None:
            p.discard()
        self._error = error or RuntimeError(f"{self.name}: its transaction was aborted")
        self._done = True

    def __repr__(self) -> str:
        return f"<gridrpc.Deferred {self.name} {'done' if self._done else 'recorded'}>"


class Transaction:
    """with gridrpc.transaction() as t: calls are recorded; they run at the end of the
    block. A block that raises aborts (nothing runs, no array is touched). After the
    block, t.stats says what ran (calls, dependencies, servers, reruns, seconds)."""

    def __init__(self) -> None:
        self._calls: list[Deferred] = []
        self.stats: dict[str, Any] = {}

    def _record(self, name: str, args: tuple[Any, ...]) -> Deferred:
        d = Deferred(_core.record(name, *args), name)
        self._calls.append(d)
        return d

    def __enter__(self) -> "Transaction":
        if active() is not None:
            raise RuntimeError("a transaction is already open in this thread (they do not nest)")
        _core.transaction_begin()
        _local.txn = self
        return self

    def __exit__(self, et: Any, ev: Any, tb: Any) -> bool:
        _local.txn = None
        if et is not None:
            _core.transaction_abort()
            for d in self._calls:
                d._drop(None)
            return False
        try:
            _core.transaction_end()
        except BaseException as e:
            for d in self._calls:
                d._drop(e)
            raise
        self.stats = _core.transaction_stats()
        for d in self._calls:
            d._finish()
        return False


def transaction() -> Transaction:
    """A context manager: the gridrpc.call calls inside run together at its end
    (grid_transaction_begin / grid_transaction_end). See python/README.md."""
    return Transaction()
