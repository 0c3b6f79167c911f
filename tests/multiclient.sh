#!/bin/sh
# multiclient.sh: the multi-client server experiment (examples/multiclient) against a
# real gridrpcd on loopback: 20 clients log one line each and agree on the three
# least-squares methods; then 200 simultaneous clients against thread-per-request and
# against a pool of only 5 workers, with no failed call. Correctness only: the times
# are benchmarked by bench/multiclient_bench.sh, never checked here.
. "$top_srcdir/tests/lib.sh"
GRIDRPCD=${GRIDRPCD:-$top_builddir/gridrpcd}
MODULES=${GRIDRPC_TEST_MODULES:-$top_builddir/stubs/.libs}
MULTICLIENT=$top_builddir/examples/multiclient
cd "$T_TMP" || exit 1

spid=
# start_server NAME ARGS...: gridrpcd on an ephemeral port (pid in $spid); exports
# GRIDRPC_SERVER once its listening line is out. Waits at most 30 s (a loaded machine).
start_server() {
  _name=$1; shift
  "$GRIDRPCD" --host 127.0.0.1 --port 0 --module-dir "$MODULES" "$@" >"$_name.listen" 2>"$_name.log" &
  spid=$!
  _i=0
  while [ $_i -lt 300 ]; do
    if grep -q '^listening on ' "$_name.listen" 2>/dev/null; then
      GRIDRPC_SERVER=$(sed -n 's/^listening on //p' "$_name.listen")
      export GRIDRPC_SERVER
      return 0
    fi
    kill -0 $spid 2>/dev/null || return 1
    sleep 0.1; _i=$((_i + 1))
  done
  return 1
}
# stop_server: SIGTERM, at most 10 s to exit 0, else SIGKILL; its status in $src.
stop_server() {
  kill -TERM $spid 2>/dev/null
  _i=0
  while [ $_i -lt 100 ] && kill -0 $spid 2>/dev/null; do sleep 0.1; _i=$((_i + 1)); done
  kill -KILL $spid 2>/dev/null
  wait $spid; src=$?
}
trap '[ -n "$spid" ] && kill -KILL $spid 2>/dev/null' EXIT
# 200 clients are 400 short-lived sockets in the server.
[ "$(ulimit -n)" = unlimited ] || [ "$(ulimit -n)" -ge 1024 ] || ulimit -n 1024 2>/dev/null

# run_clients NAME Q ARGS...: multiclient Q, bounded to 60 s; its status in $mrc.
run_clients() {
  _name=$1; shift
  timeout 60 "$MULTICLIENT" "$@" >"$_name.out" 2>&1; mrc=$?
}

if ! start_server pool --threads 4 --log-level info; then
  fail "gridrpcd starts"; diag <pool.log; finish; exit 1
fi
run_clients twenty 20
lines=$(grep -c '^client [0-9]*: start .*: ok$' twenty.out)
if [ $mrc -eq 0 ] && [ "$lines" -eq 20 ] && grep -q 'failed calls: 0; methods disagree: 0' twenty.out; then
  ok "20 clients: exit 0, one ok line each"
else
  fail "20 clients (exit $mrc, $lines ok lines)"; diag <twenty.out
fi
# Every client its own seed, so its own problem: 20 different residuals.
if [ "$(sed -n 's/^client [0-9]*: .*residual svd \([^ ]*\) .*/\1/p' twenty.out | sort -u | wc -l)" -eq 20 ]; then
  ok "each client solved its own problem"
else
  fail "residuals are not distinct per client"; diag <twenty.out
fi
if grep -q '^connect  *(ms, 20 clients): mean [0-9.]*  sd [0-9.]*' twenty.out \
  && grep -q '^response *(ms, 20 clients): mean [0-9.]*  sd [0-9.]*' twenty.out; then
  ok "summary gives mean and sd of connection and response times"
else
  fail "summary"; diag <twenty.out
fi
# The server's side of the log: one line per call.
calls=$(grep -c 'info: call .* lsq/lsq_experiment .* ok$' pool.log)
if [ "$calls" -eq 20 ]; then ok "the server logged the 20 calls"; else fail "server log has $calls calls"; diag <pool.log; fi

# Usage errors and a server that is not there are clear failures, not hangs.
"$MULTICLIENT" >usage.out 2>&1; rc=$?
if [ $rc -eq 2 ] && grep -q '^Usage: multiclient Q' usage.out; then ok "no arguments: usage, exit 2"; else fail "usage (rc $rc)"; fi
"$MULTICLIENT" 0 >zero.out 2>&1; rc=$?
if [ $rc -eq 2 ] && grep -q 'Q must be an integer from 1' zero.out; then ok "Q = 0 rejected"; else fail "Q = 0 (rc $rc)"; fi
stop_server
if [ "$src" = 0 ]; then ok "server exits 0 on SIGTERM"; else fail "server exit status $src"; fi
run_clients gone 3
if [ $mrc -eq 1 ] && [ "$(grep -c 'FAILED: .*cannot connect' gone.out)" -eq 3 ]; then
  ok "no server: each client fails with a connect error, exit 1"
else
  fail "no server (exit $mrc)"; diag <gone.out
fi

# 200 simultaneous clients: thread-per-request, then a pool far smaller than the crowd.
# (All from 127.0.0.1: the per-address limit is raised as for any known crowd behind one
# address; closing connections count until their reader is gone.)
for cfg in "thread:--mode thread --max-connections-per-address 1024" \
  "pool5:--mode pool --threads 5 --max-connections-per-address 1024"; do
  name=${cfg%%:*}
  # shellcheck disable=SC2086 # the options are meant to split
  if ! start_server "$name" ${cfg#*:} --log-level warn; then fail "$name: gridrpcd starts"; diag <"$name.log"; continue; fi
  run_clients "$name-200" 200 40 20
  lines=$(grep -c '^client [0-9]*: start .*: ok$' "$name-200.out")
  if [ $mrc -eq 0 ] && [ "$lines" -eq 200 ] && grep -q 'failed calls: 0; methods disagree: 0' "$name-200.out"; then
    ok "$name: 200 simultaneous clients, 0 failed calls"
  else
    fail "$name: 200 clients (exit $mrc, $lines ok)"; grep -v ': ok$' "$name-200.out" | head -20 | diag
  fi
  stop_server
  if [ "$src" = 0 ] && ! grep -q -e ' warn: ' -e ' error: ' "$name.log"; then
    ok "$name: no server warnings, clean exit"
  else
    fail "$name: server (exit $src)"; head -20 "$name.log" | diag
  fi
done
spid=
finish
