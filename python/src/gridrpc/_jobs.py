"""_jobs.py: two-phase calls (gridrpc.submit, fetch, job_state, forget).

submit sends a call and returns its job id ("host:port/HEX") once the server has it on
disk; any process may later fetch the results with the same arguments as the submit
(scalars size the arrays; IN arrays may be None; OUT arrays passed as None are allocated
and returned, as call does). The server keeps jobs on disk (gridrpcd --job-dir,
--job-keep), across its restarts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import _core
from ._futures import _target

_STATES = {1: "queued", 2: "running", 3: "done", 4: "failed"}


@dataclass(frozen=True)
class JobState:
    """A job's state on its server."""

    job: str
    function: str  # "module/function"
    state: str  # "queued", "running", "done" or "failed"
    code: int  # a failed job's error code; 0 otherwise
    submitted: float  # Unix time
    finished: float  # Unix time; 0 until it finished
    bytes_in: int
    bytes_out: int


def submit(name: str, /, *args: Any, server: str | None = None) -> str:
    """Submits a call of NAME (arguments as for call) and returns its job id, which can
    be written down and fetched from any process. OUT arrays are not written."""
    return _core.submit(_target(name, server), *args)


def job_state(job: str) -> JobState:
    """The state of JOB without fetching it (ArgumentError for an unknown job)."""
    function, state, code, submitted, finished, bi, bo = _core.job_state(job)
    return JobState(job, function, _STATES.get(state, "?"), code, submitted, finished, bi, bo)


def _server_of(job: str) -> str:
    """The URL prefix of JOB's server: "gridrpc://host:port" (gridrpcs:// for TLS)."""
    scheme = "gridrpcs://" if job.startswith("gridrpcs://") else "gridrpc://"
    body = job[len(scheme):] if job.startswith(scheme) else job
    if "/" not in body:
        raise ValueError(f"job id {job!r}: expected 'host:port/HEX' as submit returned it")
    return scheme + body.rsplit("/", 1)[0]


def fetch(job: str, /, *args: Any, wait: float = 0.0) -> Any:
    """Fetches JOB's results: ARGS are the submit's (scalars size the arrays; IN arrays
    may be None; OUT and INOUT arrays passed as None are allocated and returned, arrays
    passed are filled). Waits up to WAIT seconds for the job to finish (0: asks once);
    CallTimeoutError when it has not finished (fetch again later); the job's own error
    when it failed. Returns as call does; a job can be fetched again until forgotten."""
    st = _core.job_state(job)
    name = f"{_server_of(job)}/{st[0]}"
    return _core.fetch(job, float(wait), name, *args)


def forget(job: str) -> None:
    """Deletes JOB and its result on its server."""
    _core.job_forget(job)
