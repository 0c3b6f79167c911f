"""test_txn_jobs.py: transactions (with gridrpc.transaction()) and two-phase calls
(gridrpc.submit / fetch / job_state / forget) from Python, against real gridrpcd:
independent calls and a dependent chain give the sequential result bit for bit, the
calls inside return Deferred placeholders whose results come at the end, OUT arrays must
be passed, a block that raises runs nothing, async calls are refused inside; a job
submitted here is fetched by a second Python process.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import gridrpc

pytestmark = pytest.mark.usefixtures("server")


def _mats(seed: int, n: int, k: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((n, n)) for _ in range(k)]


# ---------------------------------------------------------------- transactions


def test_two_independent_calls_equal_sequential() -> None:
    n = 30
    A, B, C, D = _mats(1, n, 4)
    want1 = gridrpc.call("linalg/dmmul", n, A, B, None)
    want2 = gridrpc.call("linalg/dmmul", n, C, D, None)
    out1, out2 = np.zeros((n, n)), np.zeros((n, n))
    with gridrpc.transaction() as t:
        d1 = gridrpc.call("linalg/dmmul", n, A, B, out1)
        d2 = gridrpc.call("linalg/dmmul", n, C, D, out2)
        assert isinstance(d1, gridrpc.Deferred) and not d1.done()
        assert not out1.any() and not out2.any()  # nothing ran yet
    assert np.array_equal(out1, want1) and np.array_equal(out2, want2)
    assert d1.done() and d1.result() is None and d2.result() is None
    assert t.stats["calls"] == 2 and t.stats["raw"] == 0


def test_dependent_chain_equals_sequential() -> None:
    n = 25
    A, B = _mats(2, n, 2)
    s1 = gridrpc.call("linalg/dmmul", n, A, B, None)
    s2 = gridrpc.call("linalg/dmmul", n, s1, B, None)
    s3 = gridrpc.call("linalg/dmmul", n, s2, A, None)
    t1, t2, t3 = np.zeros((n, n)), np.zeros((n, n)), np.zeros((n, n))
    with gridrpc.transaction() as t:
        gridrpc.call("linalg/dmmul", n, A, B, t1)
        gridrpc.call("linalg/dmmul", n, t1, B, t2)
        gridrpc.call("linalg/dmmul", n, t2, A, t3)
    assert np.array_equal(t1, s1) and np.array_equal(t2, s2) and np.array_equal(t3, s3)
    assert t.stats["raw"] >= 2


def test_linpack_chain_and_deferred_scalar() -> None:
    rng = np.random.default_rng(4)
    n = 40
    A = rng.standard_normal((n, n)) + n * np.eye(n)
    bs = [rng.standard_normal(n) for _ in range(3)]
    a = A.copy()
    ipvt, info = gridrpc.call("linalg/dgefa", n, a, None, None)
    want = []
    for b in bs:
        x = b.copy()
        gridrpc.call("linalg/dgesl", n, a, ipvt, x, 0)
        want.append(x)
    a2, ipvt2, xs = A.copy(), np.zeros(n, np.int32), [b.copy() for b in bs]
    with gridrpc.transaction():
        d = gridrpc.call("linalg/dgefa", n, a2, ipvt2, None)
        for x in xs:
            gridrpc.call("linalg/dgesl", n, a2, ipvt2, x, 0)
        with pytest.raises(RuntimeError, match="end of its transaction"):
            d.result()
    assert d.result() == info == 0  # the OUT int, known at the end
    assert np.array_equal(a2, a) and np.array_equal(ipvt2, ipvt)
    for x, w in zip(xs, want):
        assert np.array_equal(x, w)


def test_arrays_are_read_at_the_end() -> None:
    n = 4
    x = np.zeros(n)
    with gridrpc.transaction():
        out = np.zeros(n)
        gridrpc.call("test/echo_double", n, x, out)
        x[:] = 7  # what x holds at the end is what the call gets
    assert np.array_equal(out, np.full(n, 7.0))


def test_out_array_none_inside_a_transaction_is_a_clear_error() -> None:
    with pytest.raises(gridrpc.ArgumentTypeError, match="inside a transaction.*pass a writable numpy array"):
        with gridrpc.transaction():
            gridrpc.call("test/echo_double", 3, np.ones(3), None)
    assert not gridrpc._core.transaction_active()


def test_block_that_raises_runs_nothing() -> None:
    out = np.zeros(3)
    with pytest.raises(KeyError):
        with gridrpc.transaction():
            d = gridrpc.call("test/echo_double", 3, np.ones(3), out)
            raise KeyError("stop")
    assert not out.any()
    with pytest.raises(RuntimeError, match="aborted"):
        d.result()
    assert gridrpc.in_flight() == 0 and not gridrpc._core.transaction_active()


def test_async_and_nesting_refused_inside() -> None:
    with gridrpc.transaction():
        with pytest.raises(gridrpc.ArgumentValueError, match="inside a transaction"):
            gridrpc.call_async("test/echo_double", 3, np.ones(3), None)
        with pytest.raises(RuntimeError, match="already open"):
            with gridrpc.transaction():
                pass
        with pytest.raises(gridrpc.ArgumentValueError, match="inside a transaction"):
            gridrpc.submit("test/echo_double", 3, np.ones(3), None)


def test_failed_transaction_raises_names_the_call_and_leaves_arrays() -> None:
    from conftest import Server

    other = Server()
    out, out2 = np.zeros(3), np.zeros(3)
    try:
        with pytest.raises(gridrpc.GridError) as ei:
            with gridrpc.transaction():
                gridrpc.call("test/echo_double", 3, np.ones(3), out)
                gridrpc.call(other.url("test/echo_double"), 3, np.ones(3), out2)
                other.stop()  # its call cannot run: no other server is configured
    finally:
        other.stop()
    assert not out.any() and not out2.any()
    assert "test/echo_double" in str(ei.value) and "call 2 of 2" in str(ei.value), str(ei.value)


def test_handles_inside_a_transaction() -> None:
    n = 20
    A, B = _mats(9, n, 2)
    want = gridrpc.call("linalg/dmmul", n, A, B, None)
    out = np.zeros((n, n))
    with gridrpc.put(B) as hb:
        with gridrpc.transaction():
            gridrpc.call("linalg/dmmul", n, A, hb, out)
        with pytest.raises(gridrpc.ArgumentValueError, match="in use"):
            with gridrpc.transaction():
                gridrpc.call("linalg/dmmul", n, A, hb, out)
                hb.free()
    assert np.array_equal(out, want)


# ---------------------------------------------------------------- two-phase calls


def test_submit_then_fetch_from_another_process(server) -> None:  # type: ignore[no-untyped-def]
    n = 12
    A, B = _mats(3, n, 2)
    want = gridrpc.call("linalg/dmmul", n, A, B, None)
    job = gridrpc.submit("linalg/dmmul", n, A, B, None)
    assert job.startswith(server.address + "/")
    # The child saves into memory and writes the bytes itself: np.save on a pipe asks
    # the stream for its position, which fails on some machines and numpy versions.
    code = textwrap.dedent(f"""
        import io, sys, numpy as np, gridrpc
        C = gridrpc.fetch({job!r}, {n}, None, None, None, wait=30)
        buf = io.BytesIO()
        np.save(buf, C)
        sys.stdout.buffer.write(buf.getvalue())
        sys.stdout.buffer.flush()
    """)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60, env=env)
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    got = np.load(io.BytesIO(r.stdout))
    assert np.array_equal(got, want)
    st = gridrpc.job_state(job)
    assert st.state == "done" and st.function == "linalg/dmmul" and st.finished >= st.submitted > 0
    # fetched again, here, into a caller's array
    C = np.zeros((n, n))
    assert gridrpc.fetch(job, n, A, B, C) is None and np.array_equal(C, want)
    gridrpc.forget(job)
    with pytest.raises(gridrpc.ArgumentError):
        gridrpc.job_state(job)


def test_fetch_before_done_times_out(one_thread_server) -> None:  # type: ignore[no-untyped-def]
    job = gridrpc.submit("test/sleep_count", 1.0, None, server=one_thread_server.address)
    with pytest.raises(gridrpc.CallTimeoutError, match="fetch it again later"):
        gridrpc.fetch(job, 1.0, None, wait=0)
    assert gridrpc.job_state(job).state in ("queued", "running")
    assert isinstance(gridrpc.fetch(job, 1.0, None, wait=30), int)
    gridrpc.forget(job)


def test_a_job_refuses_data_handles() -> None:
    with gridrpc.put(np.arange(4.0)) as h:
        with pytest.raises(gridrpc.ArgumentTypeError, match="two-phase job cannot take a gridrpc.Data"):
            gridrpc.submit("test/echo_double", 4, h, None)
