#!/usr/bin/env bash
# run-meta.sh: the metaserver benchmarks of issue 9 in one run, and their plot:
#  1. meta_sched_bench: decision time inside the metaserver, 10 / 100 / 1000 servers;
#  2. meta_load_bench: decisions/s from 1..32 concurrent clients against one real
#     gridmetad (10 and 100 servers), against its bare PROBE round trip;
#  3. meta_route_bench: a null call direct, routed reusing the decision, and routed
#     asking each time, against a REAL gridmetad and a real gridrpcd registered with it.
# Builds nothing: build first (see bench/README.md). Everything it starts is killed on
# exit. Usage: bench/run-meta.sh [--quick]
# Output: bench/results/meta_sched.csv, meta_load.csv, meta_route.csv, meta.svg
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
quick=
[ "${1:-}" = "--quick" ] && quick=--quick
for p in gridmetad gridrpcd gridrpc bench/meta_sched_bench bench/meta_load_bench bench/meta_route_bench; do
  if [ ! -x "$build/$p" ]; then
    echo "run-meta.sh: $build/$p is missing: build first:" >&2
    echo "  make -C $build -j2 && make -C $build bench/meta_sched_bench bench/meta_load_bench bench/meta_route_bench" >&2
    exit 2
  fi
done
mkdir -p bench/results
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  sleep 0.2
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
# wait_line FILE PREFIX: up to 20 s for "PREFIX..." in FILE; prints the rest of the line.
wait_line() {
  for _ in $(seq 1 200); do
    if grep -q "^$2" "$1" 2>/dev/null; then sed -n "s/^$2//p" "$1" | head -1; return 0; fi
    sleep 0.1
  done
  echo "run-meta.sh: no '$2' line in $1 within 20 s" >&2
  return 1
}
echo "$(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%Y-%m-%dT%H:%MZ)"

echo; echo "== 1. decision time inside the metaserver (meta_sched_bench)"
"$build/bench/meta_sched_bench" --csv bench/results/meta_sched.csv ${quick:+5000}

echo; echo "== 2. decisions per second from concurrent clients, one real gridmetad (meta_load_bench)"
"$build/bench/meta_load_bench" $quick --gridmetad "$build/gridmetad" --csv bench/results/meta_load.csv

echo; echo "== 3. a null call: direct, and routed by a real gridmetad (meta_route_bench)"
"$build/gridmetad" --host 127.0.0.1 --port 0 --db "$tmp/registry.db" --quiet >"$tmp/meta.out" 2>"$tmp/meta.err" &
pids+=("$!")
META=$(wait_line "$tmp/meta.out" 'listening on ')
"$build/gridrpcd" --host 127.0.0.1 --port 0 --module-dir "$build/stubs/.libs" --quiet --metaserver "$META" \
  --name bench >"$tmp/srv.out" 2>"$tmp/srv.err" &
pids+=("$!")
SERVER=$(wait_line "$tmp/srv.out" 'listening on ')
up=0
for _ in $(seq 1 100); do
  up=$("$build/gridrpc" --metaserver "$META" --json status 2>/dev/null |
    python3 -c 'import json,sys; print(sum(s["state"]=="up" for s in json.load(sys.stdin)["servers"]))' 2>/dev/null || echo 0)
  [ "$up" = 1 ] && break
  sleep 0.1
done
[ "$up" = 1 ] || { echo "run-meta.sh: gridrpcd at $SERVER did not register with $META within 10 s" >&2; cat "$tmp/srv.err" >&2; exit 1; }
echo "gridmetad at $META, gridrpcd at $SERVER (registered)"
GRIDRPC_SERVER=$SERVER GRIDRPC_METASERVER=$META GRIDRPC_QUIET=1 \
  "$build/bench/meta_route_bench" $quick --csv bench/results/meta_route.csv

echo
python3 bench/plot_meta.py bench/results && echo "plot: bench/results/meta.svg"
