"""_futures.py: asynchronous calls as concurrent.futures futures.

call_async starts a call in the C library (grid_call_async_argv_np through
_core.start) and returns a Future at once. One daemon thread per process waits for
completions (grid_wait_any, with the GIL released) and completes the futures: results
or the call's error. The Pending object behind each future holds the arguments'
buffers (and converted strings) until the call completes, so arrays passed to an
async call must not be written by the program until its future is done.

Futures stay in the PENDING state until done (never RUNNING), so that cancel() can
succeed: it asks the library to cancel (grid_cancel, which guarantees no later writes
into the arguments) and then cancels the future.
"""

from __future__ import annotations

import concurrent.futures
import os
import threading
import time
from typing import Any

from . import _core


class Future(concurrent.futures.Future):  # type: ignore[type-arg]
    """The result of call_async: concurrent.futures.Future with cancel() mapped to
    grid_cancel. result() returns what call would (None, a value or a tuple) or
    raises the call's GridError; OUT arrays are filled when it is done."""

    def __init__(self, pending: _core.Pending) -> None:
        super().__init__()
        self._pending: _core.Pending | None = pending
        self._id: int = pending.id
        self._name: str = pending.name

    @property
    def id(self) -> int:
        """The call's id in the C library (grid_call_async)."""
        return self._id

    @property
    def name(self) -> str:
        """The called function's name."""
        return self._name

    def running(self) -> bool:
        return not self.done()

    def cancel(self) -> bool:
        """Cancels the call unless it has already finished; True if it is canceled."""
        with self._condition:
            if self.done():
                return self.cancelled()
            if self._pending is None or _core.probe(self._id) == 1:
                return False  # finished: its result is on its way
            _core.cancel(self._id)
            return super().cancel()

    def _complete(self, rc: int) -> None:
        """Called once the library reported the call done with code RC."""
        pending, self._pending = self._pending, None
        if pending is None:
            return
        try:
            value = pending.finish(rc)
        except BaseException as e:  # the call's GridError, or MemoryError while converting
            if not self.cancelled():
                try:
                    self.set_exception(e)
                except concurrent.futures.InvalidStateError:
                    pass
        else:
            try:
                self.set_result(value)
            except concurrent.futures.InvalidStateError:
                pass  # canceled meanwhile

    def __repr__(self) -> str:
        return f"<gridrpc.Future {self._name} id={self._id} {super().__repr__()[1:-1]}>"


class _Waiter:
    """The process's completion thread: waits for any call and completes its future."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._calls: dict[int, Future] = {}
        self._early: dict[int, int] = {}  # done before registered: id -> code
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()

    def in_flight(self) -> int:
        with self._cond:
            return len(self._calls)

    def submit(self, name: str, args: tuple[Any, ...]) -> Future:
        pending = _core.start(name, *args)
        fut = Future(pending)
        with self._cond:
            if self._pid != os.getpid():  # forked: the parent's thread is not here
                self._thread, self._calls, self._early, self._pid = None, {}, {}, os.getpid()
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="gridrpc-waiter", daemon=True)
                self._thread.start()
            rc = self._early.pop(pending.id, None)
            if rc is None:
                self._calls[pending.id] = fut
                self._cond.notify()
                return fut
        fut._complete(rc)
        return fut

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._calls:
                    self._cond.wait()
            rc, cid = _core.wait_any()
            if cid == 0:
                self._reap_waited_elsewhere()
                continue
            with self._cond:
                fut = self._calls.pop(cid, None)
                if fut is None:
                    self._early[cid] = rc
                    continue
            fut._complete(rc)

    def _reap_waited_elsewhere(self) -> None:
        """Nothing left to wait for in the library although futures are open: some
        other code waited on our calls (a C grid_wait_all). Complete them from their
        records."""
        with self._cond:
            done = [(cid, f) for cid, f in self._calls.items() if _core.call_waited(cid)]
            for cid, _ in done:
                del self._calls[cid]
        for cid, f in done:
            f._complete(_core.call_error(cid))
        if not done:
            time.sleep(0.001)


_waiter = _Waiter()


def call_async(name: str, *args: Any) -> Future:
    """Starts the remote call NAME (arguments as for call) and returns a Future.

    Errors found before the call is sent (arguments, connection) raise here; errors of
    the call itself come from the future's result(). The arrays passed stay in use
    until the future is done.
    """
    return _waiter.submit(name, args)


def in_flight() -> int:
    """The number of asynchronous calls not yet completed."""
    return _waiter.in_flight()
