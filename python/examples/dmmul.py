#!/usr/bin/env python3
"""dmmul.py: remote matrix multiply (linalg/dmmul) against numpy's own, with times.

    GRIDRPC_SERVER=host:port python3 dmmul.py [n ...]      (default n: 100 300 1000)

For each n: C = A @ B computed by the server (A and B travel, C comes back) and by
numpy locally; prints both times, the remote Mflop/s and the largest difference.
"""

from __future__ import annotations

import sys
import time

import numpy as np

import gridrpc


def main(argv: list[str]) -> int:
    sizes = [int(a) for a in argv] or [100, 300, 1000]
    rng = np.random.default_rng(0)
    gridrpc.describe("linalg/dmmul")  # connect and fetch the interface once, untimed
    print(f"{'n':>6} {'remote s':>10} {'Mflop/s':>9} {'numpy s':>10} {'max |diff|':>11}")
    for n in sizes:
        A = rng.standard_normal((n, n))
        B = rng.standard_normal((n, n))
        t0 = time.perf_counter()
        C = gridrpc.call("linalg/dmmul", n, A, B, None)  # OUT array as None: allocated, returned
        t_remote = time.perf_counter() - t0
        t0 = time.perf_counter()
        expect = A @ B
        t_local = time.perf_counter() - t0
        diff = float(np.max(np.abs(C - expect)))
        print(f"{n:>6} {t_remote:>10.4f} {2 * n**3 / t_remote / 1e6:>9.0f} {t_local:>10.4f} {diff:>11.2e}")
        if not np.allclose(C, expect, rtol=1e-10, atol=1e-10 * n):
            print(f"dmmul: the remote result differs from numpy's for n = {n}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except gridrpc.GridError as e:
        print(f"dmmul: {e}", file=sys.stderr)
        sys.exit(1)
