#!/usr/bin/env bash
# demo.sh: the five-minute tour. Sets the machine up (scripts/setup.sh), starts a
# computing server (gridrpcd) on loopback with the library of stubs/, and runs the
# examples against it: real remote calls, results checked against local computations,
# remote and local timings side by side; then a small grid: gridmetad with three servers
# registered, calls that name no server, how they were scheduled, a server killed while
# it runs a call and the call finishing elsewhere. Stops everything cleanly at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
build=${BUILD_DIR:-build}
log=$(mktemp "${TMPDIR:-/tmp}/gridrpcd-demo.XXXXXX")
server_pid=
grid_pids=()
cleanup() {
  for p in "${grid_pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${grid_pids[@]}"; do wait "$p" 2>/dev/null || true; done
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid"
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -f "$log" "$log.out" "$log".meta* "$log".s?.out
  rm -rf "$log".s?.jobs
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
echo "== 6. a grid: gridmetad and three servers on loopback; clients name only the metaserver"
"$build/gridmetad" --host 127.0.0.1 --port 0 --http 0 --db "$log.meta.db" --heartbeat 200ms \
  >"$log.meta.out" 2>"$log.meta.err" &
grid_pids+=($!)
for _ in $(seq 1 100); do grep -q '^http on ' "$log.meta.out" 2>/dev/null && break; sleep 0.1; done
meta=$(sed -n 's/^listening on //p' "$log.meta.out")
[ -n "$meta" ] || { cat "$log.meta.err"; echo "demo: gridmetad did not start" >&2; exit 1; }
echo "   gridmetad at $meta, status page at http://$(sed -n 's/^http on //p' "$log.meta.out")/"
declare -A spid
for name in s1 s2 s3; do
  "$build/gridrpcd" --host 127.0.0.1 --port 0 --module-dir "$build/stubs/.libs" --threads 1 --quiet \
    --job-dir "$log.$name.jobs" --metaserver "$meta" --name "$name" >"$log.$name.out" 2>/dev/null &
  spid[$name]=$!
  grid_pids+=($!)
done
export GRIDRPC_METASERVER=$meta GRIDRPC_QUIET=1
unset GRIDRPC_SERVER
for _ in $(seq 1 50); do
  [ "$("$build/gridrpc" --json status 2>/dev/null | python3 -c 'import json,sys; print(sum(s["state"]=="up" for s in json.load(sys.stdin)["servers"]))' 2>/dev/null)" = 3 ] && break
  sleep 0.2
done
echo "   GRIDRPC_METASERVER=$meta; no server named:"
"$build/examples/dmmul" 500 | sed 's/^/   /'
echo "   six concurrent 0.5 s calls are spread over the servers (work counted when assigned):"
calls=()
for _ in 1 2 3 4 5 6; do "$build/gridrpc" call test/sleep 0.5 >/dev/null & calls+=($!); done
for p in "${calls[@]}"; do wait "$p" || true; done
"$build/gridrpc" status | sed 's/^/   /'
echo "   a 2 s call; its server is killed after 0.5 s; the client retries it on another server:"
"$build/gridrpc" call test/sleep 2 >/dev/null 2>&1 &
call=$!
sleep 0.5
victim=$("$build/gridrpc" --json status | python3 -c 'import json,sys
for s in json.load(sys.stdin)["servers"]:
    if s["running"] or s["pending"]: print(s["name"]); break')
if [ -n "$victim" ]; then
  { kill -KILL "${spid[$victim]}"; wait "${spid[$victim]}"; } 2>/dev/null || true
  echo "   killed $victim"
fi
if wait "$call"; then echo "   the call finished on another server"; else echo "   the call failed"; fi
sleep 1
"$build/gridrpc" status | sed 's/^/   /'
echo "   the last decisions, as the metaserver explains them (GET /api/status):"
python3 -c '
import json,sys,urllib.request
d=json.load(urllib.request.urlopen("http://%s/api/status" % sys.argv[1], timeout=5)); names={s["id"]:s["name"] for s in d["servers"]}
for x in d["decisions"][:3]:
    c=", ".join("%s %.4fs" % (names.get(k["server"],k["server"]), k["estimate"]) for k in x["candidates"])
    print("   %s from %s: %s -> %s" % (x["function"], x["site"], c, names.get(x["chosen"])))' \
  "$(sed -n 's/^http on //p' "$log.meta.out")" || true

echo
echo "== 7. data that stays on the servers: handles, a transaction, a two-phase call"
alive=()
for name in s1 s2 s3; do
  kill -0 "${spid[$name]}" 2>/dev/null && alive+=("$(sed -n 's/^listening on //p' "$log.$name.out")")
done
servers=$(IFS=,; echo "${alive[*]}")
echo "   Linpack: factor once (dgefa), solve 4 right-hand sides (dgesl) on $servers:"
echo "   factors sent back and forth, kept on the servers as data handles, or chained by a transaction"
"$build/examples/linpack_chain" --servers "$servers" --rhs 4 800 | sed 's/^/   /'
echo "   a two-phase call: submit, write the job id down, fetch it later (from any process):"
job=$(GRIDRPC_SERVER=${alive[0]} "$build/gridrpc" submit linalg/ddot 3 '[1,2,3]' '[4,5,6]')
echo "   gridrpc submit linalg/ddot ... -> $job"
echo "   gridrpc fetch $job -> $(GRIDRPC_SERVER=${alive[0]} "$build/gridrpc" fetch "$job" --wait 10)"

echo
echo "demo: done. Try it yourself: GRIDRPC_SERVER=$address $build/examples/dmmul 1500 (after starting gridrpcd)."
