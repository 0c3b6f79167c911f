"""test_interrupt.py: Ctrl-C (SIGINT) during a synchronous call, or while a future's
result() waits, raises KeyboardInterrupt at once and stops the work on the server,
whether or not the function polls for a cancel: the server's log shows the call
canceled, not finished, and its one worker is free for the next call at once."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

import gridrpc
from conftest import Server


def interrupt_in(seconds: float) -> threading.Timer:
    """Sends this process SIGINT after SECONDS, as a Ctrl-C at the terminal would."""
    t = threading.Timer(seconds, os.kill, (os.getpid(), signal.SIGINT))
    t.start()
    return t


def log_lines(server: Server, function: str) -> list[str]:
    assert server.log
    with open(server.log, encoding="utf-8", errors="replace") as f:
        return [line for line in f if f" {function} " in line]


def assert_stopped_on_server(server: Server) -> None:
    """The interrupted test/sleep no longer runs on SERVER (one worker): the next call
    is answered at once, not after the sleep's 30 s, and the log shows the sleep
    canceled, not finished."""
    t1 = time.monotonic()
    assert gridrpc.call(server.url("test/echo_string"), "next", None) == "next"
    assert time.monotonic() - t1 < 15
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not log_lines(server, "test/sleep"):
        time.sleep(0.05)
    lines = log_lines(server, "test/sleep")
    assert len(lines) == 1 and "GRID_ERR_CANCELED" in lines[0], lines


def test_ctrl_c_cancels_the_call_on_the_server(tmp_path) -> None:
    s = Server(["--threads", "1", "--log-level", "info"], log=str(tmp_path / "server.log"))
    try:
        # test/sleep never polls grpc_is_canceled_np: only ending its executor stops it.
        t0 = time.monotonic()
        timer = interrupt_in(0.5)
        with pytest.raises(KeyboardInterrupt):
            gridrpc.call(s.url("test/sleep"), 30.0)
        took = time.monotonic() - t0
        timer.join()
        # At once: well before the 30 s the function would take (loaded machines
        # included), not when it returns.
        assert took < 15, f"KeyboardInterrupt came after {took:.1f} s"
        assert_stopped_on_server(s)
    finally:
        s.stop()


def test_a_handler_that_does_not_raise_gets_the_cancel_error() -> None:
    """A program's own SIGINT handler runs; the call ends canceled all the same."""
    s = Server(["--threads", "1"])
    seen: list[int] = []
    old = signal.signal(signal.SIGINT, lambda sig, frame: seen.append(sig))
    try:
        timer = interrupt_in(0.5)
        with pytest.raises(gridrpc.CanceledError, match="interrupted"):
            gridrpc.call(s.url("test/sleep"), 30.0)
        timer.join()
        assert seen == [signal.SIGINT]
    finally:
        signal.signal(signal.SIGINT, old)
        s.stop()


def test_calls_after_an_interrupt_are_not_affected() -> None:
    s = Server()
    try:
        timer = interrupt_in(0.3)
        with pytest.raises(KeyboardInterrupt):
            gridrpc.call(s.url("test/sleep"), 30.0)
        timer.join()
        for i in range(20):
            assert gridrpc.call(s.url("test/echo_string"), f"call {i}", None) == f"call {i}"
    finally:
        s.stop()


def test_ctrl_c_in_a_future_result_cancels_its_call(tmp_path) -> None:
    """Waiting on call_async's future: Ctrl-C cancels the remote call, then propagates."""
    s = Server(["--threads", "1", "--log-level", "info"], log=str(tmp_path / "server.log"))
    try:
        fut = gridrpc.call_async(s.url("test/sleep"), 30.0)
        timer = interrupt_in(0.5)
        t0 = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            fut.result()
        timer.join()
        assert time.monotonic() - t0 < 15
        assert fut.cancelled()
        assert_stopped_on_server(s)
    finally:
        s.stop()
