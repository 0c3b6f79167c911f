#!/usr/bin/env python3
"""linpack.py: the Linpack benchmark call (linalg/linpack: factor A, solve A x = b)
on a server, checked against numpy.linalg.solve, with Mflop/s.

    GRIDRPC_SERVER=host:port python3 linpack.py [n ...]     (default n: 100 500 1000)
"""

from __future__ import annotations

import sys
import time

import numpy as np

import gridrpc


def main(argv: list[str]) -> int:
    sizes = [int(a) for a in argv] or [100, 500, 1000]
    rng = np.random.default_rng(1)
    gridrpc.describe("linalg/linpack")  # connect and fetch the interface once, untimed
    print(f"{'n':>6} {'remote s':>10} {'Mflop/s':>9} {'numpy s':>10} {'residual':>10}")
    for n in sizes:
        A = rng.standard_normal((n, n))
        b = rng.standard_normal(n)
        a, x = A.copy(), b.copy()  # linpack overwrites both: a with its LU factors, x with the solution
        t0 = time.perf_counter()
        info = gridrpc.call("linalg/linpack", n, a, x, None)
        t_remote = time.perf_counter() - t0
        if info != 0:
            print(f"linpack: the matrix is singular (info = {info})", file=sys.stderr)
            return 1
        t0 = time.perf_counter()
        expect = np.linalg.solve(A, b)
        t_local = time.perf_counter() - t0
        flops = 2 * n**3 / 3 + 2 * n**2
        resid = float(np.linalg.norm(A @ x - b) / (np.linalg.norm(A) * np.linalg.norm(x) * n * np.finfo(float).eps))
        print(f"{n:>6} {t_remote:>10.4f} {flops / t_remote / 1e6:>9.0f} {t_local:>10.4f} {resid:>10.3f}")
        if not np.allclose(x, expect, rtol=1e-8, atol=1e-8):
            print(f"linpack: the remote solution differs from numpy's for n = {n}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except gridrpc.GridError as e:
        print(f"linpack: {e}", file=sys.stderr)
        sys.exit(1)
