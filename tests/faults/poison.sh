#!/usr/bin/env bash
# poison.sh: retrying is for lost servers, not for functions that crash. With a
# metaserver (--crash-hold 8s) and three servers on loopback: a call of a crashing
# function (test/crash) fails with GRID_ERR_CRASHED after running on exactly one server;
# once it crashed on two servers the metaserver refuses it at once, naming the servers and
# when it is offered again, `gridrpc status` and the status page show the hold, and after
# it the function is offered again. Then lost servers: a server killed (SIGKILL) during a
# call makes the call run once more on another server and succeed; with
# GRIDRPC_RETRIES=0 the call fails with the lost-server error instead; and a call whose
# second server is killed too is not tried on a third. Loopback; about 40 s. TAP output.
. "$top_srcdir/tests/faults/lib.sh"
PC=$B/poison-client
[ -x "$PC" ] || { echo "# SKIP: poison-client not built (make check builds it)"; rm -rf "$T_TMP"; exit 77; }
HOLD=8
declare -A port_of

f_meta meta 0 --crash-hold "${HOLD}s" || { fail "gridmetad starts"; finish; exit 1; }
for s in s1 s2 s3; do
  f_server "$s" --threads 2 --metaserver "$META" --name "$s" || { fail "gridrpcd $s starts"; finish; exit 1; }
  pid_of[$s]=$srv_pid
  port_of[$s]=$srv_port
done
f_wait_up 3 && ok "three servers register" || { fail "three servers register"; f_status | diag; finish; exit 1; }
export GRIDRPC_METASERVER=$META GRIDRPC_TIMEOUT=60 GRIDRPC_CONNECT_TIMEOUT=5

# crash_runs: how many calls of test/crash the servers' logs show (each logs a failed
# call at warn level: "call PEER test/crash id=... GRID_ERR_CRASHED: ...").
crash_runs() { cat "$T_TMP"/s[1-5].err 2>/dev/null | grep -c ' call .* test/crash id='; }
crash_servers() { grep -l ' call .* test/crash id=' "$T_TMP"/s[1-5].err 2>/dev/null | wc -l; }

# ---- a crashing call runs on one server only
"$PC" crash 1 >"$T_TMP/one.out" 2>&1
if grep -q '^crash calls=1 executor=1 held=0 other=0 ' "$T_TMP/one.out" &&
   grep -q 'not retried: it would crash again' "$T_TMP/one.out"; then
  ok "a crashing call fails with GRID_ERR_CRASHED, saying it would crash again"
else fail "one crashing call"; diag <"$T_TMP/one.out"; fi
if [ "$(crash_runs)" = 1 ] && [ "$(crash_servers)" = 1 ]; then
  ok "it was tried on exactly one server: the others' logs show no call of it"
else fail "the crashing call ran $(crash_runs) time(s) on $(crash_servers) server(s)"; cat "$T_TMP"/s[1-3].err | diag; fi

# ---- two servers crashed: held back. Round robin sends consecutive calls to different
# servers, so the second crash is on another server.
GRIDRPC_SCHEDULER=round-robin "$PC" crash 12 >"$T_TMP/hold.out" 2>&1
held_from=$(sed -n 's/^call \([0-9]*\) held$/\1/p' "$T_TMP/hold.out" | head -n 1)
last_crash=$(sed -n 's/^call \([0-9]*\) executor$/\1/p' "$T_TMP/hold.out" | tail -n 1)
if grep -q '^crash calls=12 .* other=0 ' "$T_TMP/hold.out" && [ -n "$held_from" ] &&
   [ -n "$last_crash" ] && [ "$last_crash" -lt "$held_from" ]; then
  ok "after crashes on two servers every further call is refused (from call $held_from of 12)"
else fail "the hold"; diag <"$T_TMP/hold.out"; fi
if grep -q "^first hold: .*test/crash is held back from new calls: it crashed its executors on servers s[1-3] (127.0.0.1:[0-9]*), s[1-3] (127.0.0.1:[0-9]*).* within 60 s (the last: .*); it is offered again in [0-9]* s, at [0-9:]* UTC (gridmetad --crash-hold)" "$T_TMP/hold.out"; then
  ok "the refusal names the function, the servers it crashed on and when it is offered again"
else fail "the refusal's words"; diag <"$T_TMP/hold.out"; fi
# Held means no server ran it: every crash logged is one the client saw as one.
crashes=$(grep -c ' executor$' "$T_TMP/hold.out")
[ "$(crash_runs)" = $((crashes + 1)) ] && ok "refused calls reached no server ($crashes crashed, $(crash_runs) runs logged)" ||
  { fail "$(crash_runs) runs logged for $((crashes + 1)) crashes seen"; cat "$T_TMP"/s[1-3].err | diag; }
timeout 20 "$B/gridrpc" --metaserver "$META" status >"$T_TMP/status.out" 2>&1
if grep -q '^held back from new calls (crashed on two servers within a minute):' "$T_TMP/status.out" &&
   grep -q '^  test/crash  offered again in [0-9]* s (at [0-9:]*); crashed on s[1-3] (.*), s[1-3] (.*): ' "$T_TMP/status.out"; then
  ok "gridrpc status lists the hold"
else fail "gridrpc status"; diag <"$T_TMP/status.out"; fi
page=$(python3 -c "import json,urllib.request
d=json.load(urllib.request.urlopen('http://$HTTP/api/status', timeout=5))
c=[f for f in d['crashing'] if f['function']=='test/crash']
print(c[0]['held'], c[0]['left_s'] > 0, d['metaserver']['crash_holds'], d['metaserver']['crash_refused'] > 0)" 2>&1)
[ "$page" = "True True 1 True" ] && ok "the status page's JSON shows it held (api/status crashing)" || fail "api/status: $page"
# gridrpc status --json carries it too.
f_status >"$T_TMP/status.json" 2>&1
python3 -c 'import json,sys; h=json.load(open(sys.argv[1]))["held"]; sys.exit(0 if [x["function"] for x in h] == ["test/crash"] else 1)' "$T_TMP/status.json" &&
  ok "gridrpc status --json lists it under held" || { fail "status --json"; diag <"$T_TMP/status.json"; }

# ---- after the hold it is offered again
offered=
for _ in $(seq 1 $(((HOLD + 30) * 10))); do
  if f_status 2>/dev/null | python3 -c 'import json,sys; sys.exit(0 if json.load(sys.stdin)["held"] == [] else 1)'; then
    offered=yes; break
  fi
  sleep 0.1
done
timeout 30 "$B/gridrpc" call test/crash 0 >"$T_TMP/after.out" 2>&1; rc=$?
if [ -n "$offered" ] && [ $rc -eq 0 ]; then
  ok "after the hold it is offered again: a call that does not crash runs"
else fail "after the hold (offered: ${offered:-no}, rc $rc)"; diag <"$T_TMP/after.out"; f_status | diag; fi

# ---- lost servers. kill_busiest [EXCEPT]: SIGKILLs the server (not EXCEPT) that runs a
# call, once one does (6 s at most); sets victim. Each server is asked itself (gridrpc
# --server ... status): its own count is of calls running there now, where the
# metaserver's lags a beat (a server whose call had just ended was taken for the next
# call's, which then ran elsewhere untouched: a failure under load).
kill_busiest() {
  victim=
  for _ in $(seq 1 120); do
    for s in "${!pid_of[@]}"; do
      [ "$s" = "${1:-}" ] && continue
      kill -0 "${pid_of[$s]}" 2>/dev/null || continue
      n=$(timeout 5 "$B/gridrpc" --server "127.0.0.1:${port_of[$s]}" --json status 2>/dev/null |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["server"]["running"])' 2>/dev/null)
      if [ "${n:-0}" -gt 0 ]; then victim=$s; break; fi
    done
    [ -n "$victim" ] && break
    sleep 0.05
  done
  [ -n "$victim" ] && kill -KILL "${pid_of[$victim]}"
}
wait_client() { for _ in $(seq 1 900); do grep -q '^summary ' "$T_TMP/$1.out" && return 0; sleep 0.1; done; return 1; }

f_start once "$FC" calls 1 6 sync
kill_busiest
wait_client once
if [ -n "$victim" ] && f_clean "$T_TMP/once.out" 1 && [ "$(f_summary "$T_TMP/once.out" ok)" = 1 ] &&
   ! grep -q " ok pid=${pid_of[$victim]} " "$T_TMP/once.out"; then
  ok "a server killed during a call ($victim): the call runs once more on another server and succeeds"
else fail "retry after a kill (victim '${victim}')"; diag <"$T_TMP/once.out"; diag <"$T_TMP/once.err"; fi
dead1=$victim

# The server is killed once it is listed running a call, which may be as the call still
# connects (the count lags a beat): that is a lost server too, not retried either.
GRIDRPC_RETRIES=0 f_start never "$FC" calls 1 6 sync
kill_busiest "$dead1"
wait_client never
if [ -n "$victim" ] && f_clean "$T_TMP/never.out" 1 &&
   grep -Eq '^call 0 error GRID_ERR_CONN_LOST .*(the server closed the connection during the call|connecting to .*: reading from the peer).*not retried on another server: retries are off: 0 \(GRIDRPC_RETRIES\)' "$T_TMP/never.out"; then
  ok "with GRIDRPC_RETRIES=0 the call fails with the lost-server error ($victim killed)"
else fail "GRIDRPC_RETRIES=0 (victim '${victim}')"; diag <"$T_TMP/never.out"; fi
dead2=$victim

# At most once: two new servers beside the one left; the call's first and second
# servers are killed, and the error names those two only.
for s in s4 s5; do
  f_server "$s" --threads 2 --metaserver "$META" --name "$s" || { fail "gridrpcd $s starts"; finish; exit 1; }
  pid_of[$s]=$srv_pid
  port_of[$s]=$srv_port
done
f_wait_up 3 || { fail "s4 and s5 register"; f_status | diag; }
f_start twice "$FC" calls 1 8 sync
kill_busiest
first=$victim
kill_busiest "$first"
second=$victim
wait_client twice
if [ -n "$first" ] && [ -n "$second" ] && f_clean "$T_TMP/twice.out" 1 &&
   grep -q "^call 0 error GRID_ERR_CONN_LOST .*no server could run the call: [^,]* (connection [a-z]*), [^,]* (connection [a-z]*); not retried on another server: its server vanished 2 times and retries are 1 (the default)" "$T_TMP/twice.out"; then
  ok "a call whose second server is killed too ($first, $second) is not run a third time"
else fail "at most one retry (killed '${first}' '${second}')"; diag <"$T_TMP/twice.out"; fi
finish
