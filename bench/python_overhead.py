#!/usr/bin/env python3
"""python_overhead.py: the Python binding's cost per call over the C API.

Times N calls of test/null_call and of test/echo_double (8 doubles, numpy arrays)
through gridrpc.call, and the same calls through the C grid_call (bench/null_loop.c,
compiled here as a shared object and run through ctypes: one foreign call per loop of
N, so ctypes adds nothing per call) in the same process, against the same gridrpcd on
loopback, over the same connection. Rounds are interleaved; the table gives the median
(min..max) ns per call, the binding's overhead (Python - C) and the ratio. Asynchronous
calls (64 in flight) are shown for scale.

    python3 bench/python_overhead.py [--build DIR] [-n N] [--rounds R]

DIR is the top build directory (default: $GRIDRPC_BUILD_DIR, else ./build). The gridrpc
package is imported from the environment, else built from python/ into a temporary
directory with pip. A gridrpcd from DIR is started on a free port (or set
GRIDRPC_SERVER to use a running one).
"""

from __future__ import annotations

import argparse
import ctypes
import os
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

TOP = Path(__file__).resolve().parent.parent


def import_gridrpc(build: Path, tmp: Path):  # type: ignore[no-untyped-def]
    try:
        import gridrpc

        return gridrpc
    except ImportError:
        pass
    print("building the gridrpc package from python/ ...", file=sys.stderr)
    env = dict(os.environ, GRIDRPC_BUILD_DIR=str(build), GRIDRPC_SRC_DIR=str(TOP), PIP_DISABLE_PIP_VERSION_CHECK="1")
    src = tmp / "src"
    shutil.copytree(TOP / "python", src, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    cmd = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(tmp / "site"), str(src)]
    if subprocess.run(cmd[:4] + ["--no-build-isolation", "--no-index"] + cmd[4:], env=env).returncode != 0:
        subprocess.run(cmd, env=env, check=True)
    sys.path.insert(0, str(tmp / "site"))
    import gridrpc

    return gridrpc


def start_server(build: Path) -> tuple[subprocess.Popen[bytes], str]:
    mods = build / "stubs" / ".libs"
    proc = subprocess.Popen([str(build / "gridrpcd"), "--host", "127.0.0.1", "--port", "0", "--log-level", "warn",
                             "--module", str(mods / "test.so")], stdout=subprocess.PIPE)
    assert proc.stdout is not None
    line = b""
    deadline = time.monotonic() + 20
    while not line.endswith(b"\n") and time.monotonic() < deadline:
        if select.select([proc.stdout], [], [], 0.1)[0]:
            c = os.read(proc.stdout.fileno(), 1)
            if not c:
                break
            line += c
    text = line.decode().strip()
    if not text.startswith("listening on "):
        proc.kill()
        raise SystemExit(f"gridrpcd did not start: {text!r}")
    return proc, text.split()[-1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", type=Path, default=Path(os.environ.get("GRIDRPC_BUILD_DIR", TOP / "build")))
    ap.add_argument("-n", type=int, default=20000, help="calls per loop (default 20000)")
    ap.add_argument("--rounds", type=int, default=7, help="interleaved rounds (default 7)")
    ap.add_argument("--len", type=int, default=8, help="doubles per echo_double call (default 8)")
    args = ap.parse_args()
    build = args.build.resolve()
    tmp = Path(tempfile.mkdtemp(prefix="gridrpc-bench-"))
    proc = None
    try:
        gridrpc = import_gridrpc(build, tmp)
        import numpy as np

        so = tmp / "null_loop.so"
        subprocess.run([os.environ.get("CC", "cc"), "-O2", "-shared", "-fPIC", f"-I{TOP / 'include'}",
                        str(TOP / "bench" / "null_loop.c"), f"-L{build / '.libs'}", f"-Wl,-rpath,{build / '.libs'}",
                        "-lgridrpc", "-o", str(so)], check=True)
        lib = ctypes.CDLL(str(so))
        lib.gridrpc_bench_null.restype = ctypes.c_double
        lib.gridrpc_bench_null.argtypes = [ctypes.c_int]
        lib.gridrpc_bench_echo.restype = ctypes.c_double
        lib.gridrpc_bench_echo.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]

        if "GRIDRPC_SERVER" not in os.environ:
            proc, addr = start_server(build)
            os.environ["GRIDRPC_SERVER"] = addr
        gridrpc.reset()
        n, m = args.n, args.len
        x = np.arange(m, dtype=np.float64)
        out = np.empty(m)
        call = gridrpc.call

        def timed(loop: Callable[[], object]) -> tuple[float, float]:
            """(wall, this thread's CPU) seconds per call of LOOP (N calls)."""
            c0, t0 = time.thread_time(), time.perf_counter()
            if loop() is False:
                raise SystemExit("the C loop failed: " + loop.__name__)
            return (time.perf_counter() - t0) / n, (time.thread_time() - c0) / n

        def py_null() -> None:
            for _ in range(n):
                call("test/null_call")

        def py_echo() -> None:
            for _ in range(n):
                call("test/echo_double", m, x, out)

        def c_null() -> bool:
            return bool(lib.gridrpc_bench_null(n) >= 0)

        def c_echo() -> bool:
            return bool(lib.gridrpc_bench_echo(n, m, x.ctypes.data, out.ctypes.data) >= 0)

        convert = gridrpc._core._convert

        def py_convert_null() -> None:
            for _ in range(n):
                convert("test/null_call")

        def py_convert_echo() -> None:
            for _ in range(n):
                convert("test/echo_double", m, x, out)

        def py_async() -> None:
            for k in range(0, n, 64):
                futs = [gridrpc.call_async("test/null_call") for _ in range(min(64, n - k))]
                for f in futs:
                    f.result()

        # warm up: connection, descriptors, caches
        call("test/null_call")
        lib.gridrpc_bench_null(200)
        lib.gridrpc_bench_echo(200, m, x.ctypes.data, out.ctypes.data)
        call("test/echo_double", m, x, out)
        loops = (("c_null", c_null), ("py_null", py_null), ("c_echo", c_echo), ("py_echo", py_echo),
                 ("py_async", py_async), ("conv_null", py_convert_null), ("conv_echo", py_convert_echo))
        wall: dict[str, list[float]] = {k: [] for k, _ in loops}
        cpu: dict[str, list[float]] = {k: [] for k, _ in loops}
        for r in range(args.rounds):
            for name, fn in loops:
                w_s, cpu_s = timed(fn)
                wall[name].append(w_s * 1e9)
                cpu[name].append(cpu_s * 1e9)
            print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)

        def cell(v: list[float]) -> str:
            return f"{statistics.median(v):.0f} ({min(v):.0f}..{max(v):.0f})"

        print(f"\nPython binding cost per call: {n} calls x {args.rounds} interleaved rounds, same process, "
              f"gridrpcd on loopback; median (min..max) ns per call")
        for title, res in (("wall-clock time per call", wall),
                           ("client CPU time per call (the calling thread; the network wait excluded)", cpu)):
            print(f"\n{title}\n")
            print("| call | C grid_call | Python gridrpc.call | overhead (median) | ratio |")
            print("| --- | --- | --- | --- | --- |")
            for label, ck, pk in (("test/null_call", "c_null", "py_null"),
                                  (f"test/echo_double, {m} float64", "c_echo", "py_echo")):
                cm, pm = statistics.median(res[ck]), statistics.median(res[pk])
                print(f"| {label} | {cell(res[ck])} | {cell(res[pk])} | {pm - cm:+.0f} ns | {pm / cm:.2f} |")
        print("\nthe binding's own work, no call (argument conversion and checks: _core._convert): "
              f"test/null_call {cell(wall['conv_null'])} ns, test/echo_double {cell(wall['conv_echo'])} ns")
        print(f"gridrpc.call_async test/null_call, 64 in flight: {cell(wall['py_async'])} ns per call (wall)")
        print(f"python {sys.version.split()[0]}, numpy {np.__version__}, libgridrpc {gridrpc.library_version}")
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
