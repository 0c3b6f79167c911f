"""_futures.py: asynchronous calls as concurrent.futures futures.

call_async converts and checks the arguments at once (_core.prepare: argument errors,
and a failure to fetch the function's descriptor, raise there) and returns a Future;
the call is then sent by a background sender thread (Pending.send, which blocks without
the GIL while a big array goes out), so call_async never waits for the network once
the descriptor is known. One sender thread per server named in the call (plain names
share one): calls to one server go out in the order they were made, and a slow server
does not hold back calls to another.

One daemon waiter thread per process waits for completions (grid_wait_any, without the
GIL) and completes the futures: results or the call's error. The Pending object behind
each future holds the arguments' buffers (and converted strings) until the call
completes, so arrays passed to an async call must not be written by the program until
its future is done.

A call given timeout= has a deadline; a deadline thread cancels it in the library
(grid_cancel) when it passes and fails its future with CallTimeoutError.

Futures stay in the PENDING state until done (never RUNNING), so that cancel() can
succeed: it drops a call not sent yet, or asks the library to cancel (grid_cancel,
which guarantees no later writes into the arguments), and then cancels the future.
"""

from __future__ import annotations

import collections
import concurrent.futures
import heapq
import itertools
import os
import threading
import time
from typing import Any

from . import _core
from ._errors import ArgumentTypeError, ArgumentValueError, CallTimeoutError

_QUEUED, _SENDING, _SENT = 0, 1, 2


class Future(concurrent.futures.Future):  # type: ignore[type-arg]
    """The result of call_async: a concurrent.futures.Future whose cancel() cancels
    the remote call (grid_cancel).

    result(timeout) returns what call would (None, one value or a tuple; OUT arrays
    passed as None are among them) or raises the call's GridError; OUT arrays passed
    by the caller are filled when it is done. A KeyboardInterrupt (Ctrl-C) while
    result() or exception() waits cancels the call on its server, then propagates, as
    a synchronous call does.
    """

    def __init__(self, pending: _core.Pending, name: str, timeout: float | None = None) -> None:
        super().__init__()
        self._pending: _core.Pending | None = pending
        self._id: int = 0
        self._name: str = name
        self._stage: int = _QUEUED
        self._timeout: float | None = timeout

    @property
    def id(self) -> int:
        """The call's id in the C library (grid_call_async); 0 until it is sent."""
        return self._id

    @property
    def name(self) -> str:
        """The called function's name."""
        return self._name

    def result(self, timeout: float | None = None) -> Any:
        try:
            return super().result(timeout)
        except KeyboardInterrupt:
            self.cancel()
            raise

    def exception(self, timeout: float | None = None) -> BaseException | None:
        try:
            return super().exception(timeout)
        except KeyboardInterrupt:
            self.cancel()
            raise

    def running(self) -> bool:
        """True until the call is done (it is queued, being sent or running remotely)."""
        return not self.done()

    def cancel(self) -> bool:
        """Cancels the call unless it has already finished; True if it is canceled.

        A call not sent yet is dropped; one being sent is canceled once its arguments
        are out; a queued or running one is canceled on the server (grid_cancel). After
        a successful cancel the call never writes into the arrays passed.
        """
        with self._condition:
            while self._stage == _SENDING:
                # Polled: a notify on _condition would wake result() waiters, which do
                # not loop (concurrent.futures) and would raise TimeoutError.
                self._condition.wait(0.005)
            if self.done():
                return self.cancelled()
            if self._stage == _QUEUED:
                pending, self._pending = self._pending, None
                if pending is not None:
                    pending.discard()
                return super().cancel()
            if self._pending is None or _core.probe(self._id) == 1:
                return False  # finished: its result is on its way
            _core.cancel(self._id)
            return super().cancel()

    def _expire(self) -> None:
        """The call's timeout= passed: cancels it and fails the future."""
        with self._condition:
            if self.done():
                return
            if self._stage == _QUEUED:
                pending, self._pending = self._pending, None
                if pending is not None:
                    pending.discard()
            elif self._stage == _SENT:
                if self._pending is None or _core.probe(self._id) == 1:
                    return  # finished in time: its result is on its way
                _core.cancel(self._id)
            # _SENDING: the sender cancels it as soon as its arguments are out.
            self.set_exception(CallTimeoutError(
                _core.GRID_ERR_TIMEOUT,
                f"{self._name}: no reply within timeout={self._timeout:g} s (the timeout= argument); "
                "the call was canceled"))

    def _complete(self, rc: int) -> None:
        """Called once the library reported the call done with code RC."""
        pending, self._pending = self._pending, None
        if pending is None:
            return
        try:
            value = pending.finish(rc)
        except BaseException as e:  # the call's GridError, or MemoryError while converting
            if not self.done():
                try:
                    self.set_exception(e)
                except concurrent.futures.InvalidStateError:
                    pass  # canceled or timed out meanwhile
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

    def register(self, fut: Future) -> None:
        """FUT's call was sent: its completion will complete it."""
        with self._cond:
            if self._pid != os.getpid():  # forked: the parent's thread is not here
                self._thread, self._calls, self._early, self._pid = None, {}, {}, os.getpid()
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="gridrpc-waiter", daemon=True)
                self._thread.start()
            rc = self._early.pop(fut.id, None)
            if rc is None:
                self._calls[fut.id] = fut
                self._cond.notify()
                return
        fut._complete(rc)

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


class _Sender:
    """A thread that sends the calls to one server, in the order they were made."""

    def __init__(self, key: str) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._queue: collections.deque[Future] = collections.deque()
        self._thread = threading.Thread(target=self._run, name=f"gridrpc-sender {key or 'default'}",
                                        daemon=True)
        self._thread.start()

    def put(self, fut: Future) -> None:
        with self._cond:
            self._queue.append(fut)
            self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue:
                    self._cond.wait()
                fut = self._queue.popleft()
            _send(fut)
            del fut


def _send(fut: Future) -> None:
    """Sends FUT's call (unless canceled or timed out before) and hands it to the waiter."""
    with fut._condition:
        pending = fut._pending
        if fut.done() or pending is None:
            return
        fut._stage = _SENDING
    try:
        cid = pending.send()
    except BaseException as e:  # the call could not be started (connection, limits)
        with fut._condition:
            fut._pending = None
            fut._stage = _SENT
            if not fut.done():
                fut.set_exception(e)
        return
    with fut._condition:
        fut._id = cid
        fut._stage = _SENT
        expired = fut.done()  # timed out while its arguments were going out
    if expired:
        _core.cancel(cid)
    _waiter.register(fut)  # completes it, and releases the buffers, when the call ends


class _Deadlines:
    """The thread that times out calls given timeout= (one heap for the process)."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._heap: list[tuple[float, int, Future]] = []
        self._seq = itertools.count()
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()

    def add(self, when: float, fut: Future) -> None:
        with self._cond:
            if self._pid != os.getpid():
                self._thread, self._heap, self._pid = None, [], os.getpid()
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="gridrpc-deadlines", daemon=True)
                self._thread.start()
            heapq.heappush(self._heap, (when, next(self._seq), fut))
            self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while True:
                    while self._heap and self._heap[0][2].done():
                        heapq.heappop(self._heap)  # finished in time
                    if not self._heap:
                        self._cond.wait()
                        continue
                    left = self._heap[0][0] - time.monotonic()
                    if left <= 0:
                        fut = heapq.heappop(self._heap)[2]
                        break
                    self._cond.wait(left)
            fut._expire()
            del fut


_waiter = _Waiter()
_deadlines = _Deadlines()
_senders: dict[str, _Sender] = {}
_senders_lock = threading.Lock()
_senders_pid = os.getpid()


def _scheme(s: object) -> str:
    """The scheme S starts with: "gridrpcs://" (TLS), "gridrpc://", or ""."""
    if isinstance(s, str):
        for scheme in ("gridrpcs://", "gridrpc://"):
            if s.startswith(scheme):
                return scheme
    return ""


def _sender_for(name: str) -> _Sender:
    global _senders_pid
    scheme = _scheme(name)
    key = name[len(scheme):].split("/", 1)[0] if scheme else ""
    with _senders_lock:
        if _senders_pid != os.getpid():  # forked: the parent's threads are not here
            _senders.clear()
            _senders_pid = os.getpid()
        s = _senders.get(key)
        if s is None:
            s = _senders[key] = _Sender(key)
        return s


def _check_timeout(timeout: float | None) -> float | None:
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        try:
            timeout = float(timeout)  # numpy scalars, Decimal
        except (TypeError, ValueError):
            raise ArgumentTypeError(_core.GRID_ERR_ARGS,
                                    f"timeout= expects seconds (a number) or None, got {type(timeout).__name__}") \
                from None
    if not timeout > 0 or timeout == float("inf"):
        raise ArgumentValueError(_core.GRID_ERR_ARGS,
                                 f"timeout={timeout!r}: give a number of seconds > 0, or None for no limit")
    return float(timeout)


def _target(name: str, server: str | None) -> str:
    """NAME sent to SERVER ("host:port", "gridrpc://host:port" or "gridrpcs://host:port"
    for TLS): a gridrpc:// (gridrpcs://) URL."""
    if server is None:
        return name
    if not isinstance(server, str):
        raise ArgumentTypeError(_core.GRID_ERR_ARGS,
                                f"server= expects 'host:port' (a str), got {type(server).__name__}")
    scheme = _scheme(server)
    hp = server[len(scheme):]
    hp = hp.rstrip("/")
    if not hp or "/" in hp or ":" not in hp:
        raise ArgumentValueError(_core.GRID_ERR_ARGS, f"server={server!r}: expects 'host:port'")
    if _scheme(name):
        raise ArgumentValueError(_core.GRID_ERR_ARGS,
                                 f"{name!r} already names its server: give a plain name with server=, "
                                 "or drop server=")
    return f"{scheme or 'gridrpc://'}{hp}/{name}"


def call_async(name: str, /, *args: Any, timeout: float | None = None, server: str | None = None) -> Future:
    """Starts the remote call NAME (arguments as for call) and returns a Future at once.

    The call is sent in the background: call_async does not wait while a big array
    goes out. Calls to one server are sent in the order they were made.

    Keyword arguments:
      timeout  seconds (> 0) the call may take from now: past it the call is canceled
               and the future fails with CallTimeoutError. None: no limit of its own
               (GRIDRPC_TIMEOUT and set_timeouts still apply).
      server   "host:port": call NAME on that server (as "gridrpc://host:port/NAME").

    Argument errors, and a failure to fetch the function's interface, raise here;
    failures to send the call or of the call itself come from the future's result().
    The arrays passed stay in use until the future is done.
    """
    if _core.transaction_active():
        raise ArgumentValueError(_core.GRID_ERR_ARGS,
                                 f"call_async({name!r}) inside a transaction: the calls of a transaction "
                                 "run together at its end; use gridrpc.call there")
    name = _target(name, server)
    t = _check_timeout(timeout)
    fut = Future(_core.prepare(name, *args), name, t)
    if t is not None:
        _deadlines.add(time.monotonic() + t, fut)
    _sender_for(name).put(fut)
    return fut


def in_flight() -> int:
    """The number of asynchronous calls not yet completed (queued, being sent, running)."""
    return _core.open_calls()
