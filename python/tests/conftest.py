"""conftest.py: a real gridrpcd on 127.0.0.1, port 0, for the Python tests.

Paths come from the environment make check sets (as for the C tests): GRIDRPCD (the
server program) and GRIDRPC_TEST_MODULES (the directory of the built modules). The
server's port comes from its first line, "listening on HOST:PORT"; it gets SIGTERM at
the end (SIGKILL if it does not stop).
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
from typing import Iterator, Sequence

import pytest


class Server:
    """One gridrpcd child process serving the test, linalg, nas and lsq modules."""

    def __init__(self, extra: Sequence[str] = (), log: str | None = None) -> None:
        prog = os.environ.get("GRIDRPCD")
        mods = os.environ.get("GRIDRPC_TEST_MODULES")
        if not prog or not mods:
            raise RuntimeError("GRIDRPCD and GRIDRPC_TEST_MODULES must be set (make check, python/tests/run.sh)")
        args = [prog, "--host", "127.0.0.1", "--port", "0", "--log-level", "warn"]
        for m in ("test", "linalg", "nas", "lsq"):
            path = os.path.join(mods, m + ".so")
            if os.path.exists(path):
                args += ["--module", path]
        # Two-phase jobs go to a folder of its own (not ~/.local/state), removed at stop.
        self.job_dir = tempfile.mkdtemp(prefix="gridrpc-pyjobs.")
        args += ["--job-dir", self.job_dir]
        args += list(extra)
        # LOG: where its stderr (the log, one line per call) goes, for tests that read it.
        self.log = log
        err = open(log, "wb") if log else None
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, stderr=err)
        if err:
            err.close()
        assert self.proc.stdout is not None
        line = b""
        deadline = time.monotonic() + 20
        fd = self.proc.stdout.fileno()
        while not line.endswith(b"\n"):
            if time.monotonic() > deadline:
                self.stop(signal.SIGKILL)
                raise RuntimeError("gridrpcd did not start within 20 s")
            ready, _, _ = select.select([fd], [], [], 0.1)
            if not ready:
                continue
            chunk = os.read(fd, 1)
            if not chunk:
                raise RuntimeError(f"gridrpcd exited before listening (status {self.proc.wait()})")
            line += chunk
        text = line.decode(errors="replace").strip()
        if not text.startswith("listening on ") or ":" not in text:
            self.stop(signal.SIGKILL)
            raise RuntimeError(f"unexpected first line from gridrpcd: {text!r}")
        self.port = int(text.rsplit(":", 1)[1])
        self.address = f"127.0.0.1:{self.port}"

    def url(self, function: str) -> str:
        return f"gridrpc://{self.address}/{function}"

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(6)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stdout:
            self.proc.stdout.close()
        shutil.rmtree(self.job_dir, ignore_errors=True)
        return self.proc.returncode


@pytest.fixture(scope="session")
def server() -> Iterator[Server]:
    """The suite's server; GRIDRPC_SERVER points at it."""
    import gridrpc

    s = Server()
    os.environ["GRIDRPC_SERVER"] = s.address
    for var in ("GRIDRPC_CONFIG", "GRIDRPC_TIMEOUT"):
        os.environ.pop(var, None)
    gridrpc.reset()
    yield s
    # Calls left in flight by a failed test must not block the reset.
    if not gridrpc.in_flight():
        gridrpc.reset()
    s.stop()


@pytest.fixture()
def one_thread_server() -> Iterator[Server]:
    """A server with one worker: a second call waits in its queue (cancel tests)."""
    s = Server(["--threads", "1"])
    yield s
    s.stop()
