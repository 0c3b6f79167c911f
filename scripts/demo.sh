#!/usr/bin/env bash
# demo.sh: the five-minute tour. Sets the machine up (scripts/setup.sh), starts a
# computing server (gridrpcd) on loopback with the library of stubs/, and runs the
# examples against it: real remote calls, results checked against local computations,
# remote and local timings side by side. Stops the server cleanly at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
build=${BUILD_DIR:-build}
log=$(mktemp "${TMPDIR:-/tmp}/gridrpcd-demo.XXXXXX")
server_pid=
cleanup() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid"
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -f "$log" "$log.out"
}
trap cleanup EXIT

echo
echo "== 1. idlc compiled the library's IDL (stubs/*.idl); what a client learns about dmmul:"
"$build/idlc/idlc" --emit desc -o "$build" stubs/linalg.idl
"$build/gridrpc-desc" --eval n=1000 "$build/linalg.gdesc" | sed -n '/linalg\/dmmul/,/^$/p' | sed 's/^/   /'

echo "== 2. starting gridrpcd on loopback with the default modules"
"$build/gridrpcd" --host 127.0.0.1 --port 0 --module-dir "$build/stubs/.libs" --log-level info \
  >"$log.out" 2>"$log" &
server_pid=$!
for _ in $(seq 1 100); do
  grep -q '^listening on ' "$log.out" 2>/dev/null && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$log"; echo "demo: gridrpcd did not start" >&2; exit 1; }
  sleep 0.1
done
address=$(sed -n 's/^listening on //p' "$log.out")
[ -n "$address" ] || { echo "demo: gridrpcd did not report its address" >&2; exit 1; }
export GRIDRPC_SERVER=$address
echo "   $(head -1 "$log.out"); GRIDRPC_SERVER=$address"

echo
echo "== 3. remote calls, checked against local OpenBLAS/LAPACK"
for n in 300 1000 2000; do "$build/examples/dmmul" "$n" | sed 's/^/   /'; done
for n in 500 1500; do "$build/examples/linpack" "$n" | sed 's/^/   /'; done
"$build/examples/ep" 24 4 | sed 's/^/   /'

echo
echo "== 4. errors say what happened and what to do"
"$build/examples/dmmul" 2>&1 | sed 's/^/   /' || true
GRIDRPC_SERVER=127.0.0.1:1 "$build/examples/dmmul" 10 2>&1 | sed 's/^/   /' || true

echo
echo "== 5. the server's log (one line per call), then a clean shutdown (SIGTERM)"
kill -TERM "$server_pid"
wait "$server_pid" && echo "   gridrpcd exited cleanly"
server_pid=
tail -n 8 "$log" | sed 's/^/   /'
echo
echo "demo: done. Try it yourself: GRIDRPC_SERVER=$address $build/examples/dmmul 1500 (after starting gridrpcd)."
