#!/usr/bin/env bash
# dataclient/run.sh: remote data handles end to end: two gridrpcd on loopback (S2 with a small
# --data-memory) registered with a gridmetad, their logs at level info, and data-client-test (tests/dataclient/data_test.c) as
# the client; then the servers' logs must show nothing left of the client's session.
# TAP output: data-client-test's lines, then this script's own.
. "$top_srcdir/tests/lib.sh"
B=$top_builddir
export GRIDRPC_QUIET=1
unset GRIDRPC_SERVER GRIDRPC_CONFIG GRIDRPC_METASERVER NG_CONFIG_FILE
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
  wait 2>/dev/null
}
trap cleanup EXIT
mem2=$((4 * 1024 * 1024))
start() { # start NAME [OPTIONS...] -> $port, $pid
  _n=$1; shift
  "$B/gridrpcd" --host 127.0.0.1 --port 0 --module-dir "$B/stubs/.libs" --threads 2 --log-level info "$@" \
    >"$T_TMP/$_n.out" 2>"$T_TMP/$_n.log" &
  pid=$!
  pids+=("$pid")
  port=$(listening_port "$T_TMP/$_n.out" "$pid")
}
# A metaserver both register with, for the routed calls.
"$B/gridmetad" --host 127.0.0.1 --port 0 --db "$T_TMP/registry.db" --heartbeat 100ms --http 0 \
  >"$T_TMP/meta.out" 2>"$T_TMP/meta.err" &
pids+=("$!")
META=
wait_line "$T_TMP/meta.out" '^listening on ' && META=$(sed -n 's/^listening on //p' "$T_TMP/meta.out")
start s1 ${META:+--metaserver "$META" --name s1}; p1=$port; pid1=$pid
start s2 --data-memory "$mem2" ${META:+--metaserver "$META" --name s2}; p2=$port
if [ -z "$p1" ] || [ -z "$p2" ]; then
  echo "not ok 1 the two servers start"; cat "$T_TMP"/s*.out "$T_TMP"/s*.log | diag; echo "1..1"; exit 1
fi
DATA_S1=127.0.0.1:$p1 DATA_S2=127.0.0.1:$p2 DATA_LOG1=$T_TMP/s1.log DATA_LOG2=$T_TMP/s2.log DATA_S1_PID=$pid1 \
  DATA_S2_MEMORY=$mem2 DATA_META=$META timeout 120 "$B/data-client-test" >"$T_TMP/test.out" 2>"$T_TMP/test.err"
rc=$?
# Renumber data-client-test's lines into this script's plan.
while IFS= read -r line; do
  case $line in
  "ok "*) ok "${line#ok [0-9]* }" ;;
  "not ok "*) fail "${line#not ok [0-9]* }" ;;
  "#"*) echo "$line" ;;
  esac
done <"$T_TMP/test.out"
if [ -n "$META" ]; then ok "gridmetad started ($META)"; else fail "gridmetad did not start"; diag <"$T_TMP/meta.err"; fi
if [ $rc -eq 0 ]; then ok "data-client-test exits 0"; else fail "data-client-test exits $rc"; diag <"$T_TMP/test.err"; fi
if [ -n "${DATA_KEEP_LOGS:-}" ]; then cp "$T_TMP"/s*.log "$DATA_KEEP_LOGS"/; fi
finish
