#!/usr/bin/env bash
# run-core.sh: the core-path benchmarks of BENCH.md in one run: starts gridrpcd on
# loopback, runs rpc_bench (null call, 64 MiB, dmmul, Linpack; each against its
# baseline measured in the same run), prints the tables and writes a PNG plot.
# Usage: bench/run-core.sh [--quick] [BENCHMARK...]   (after scripts/setup.sh)
# Output: bench/results/core.csv, bench/results/core.png
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
quick=
[ "${1:-}" = "--quick" ] && { quick=--quick; shift; }
which=("$@")
[ ${#which[@]} -gt 0 ] || which=(null async bulk dmmul linpack)
make -C "$build" -s bench/rpc_bench >/dev/null
mkdir -p bench/results
out=$(mktemp)
"$build/gridrpcd" --host 127.0.0.1 --port 0 --module-dir "$build/stubs/.libs" --quiet >"$out" &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null; rm -f "$out"' EXIT
for _ in $(seq 1 100); do grep -q '^listening on ' "$out" && break; sleep 0.1; done
export GRIDRPC_SERVER=$(sed -n 's/^listening on //p' "$out")
# The local baseline's OpenBLAS threads would otherwise spin ~0.1 s after each dgemm
# and steal the cores from the remote call measured next (gridrpcd sets the same).
export OPENBLAS_THREAD_TIMEOUT=${OPENBLAS_THREAD_TIMEOUT:-16}
echo "gridrpcd at $GRIDRPC_SERVER; $(nproc) cores; $(date -u +%Y-%m-%dT%H:%MZ)"
"$build/bench/rpc_bench" $quick --csv bench/results/core.csv "${which[@]}"
python3 bench/plot_core.py bench/results/core.csv bench/results/core.png && echo "plot: bench/results/core.png"
