#!/usr/bin/env bash
# server-kill.sh: a server killed (SIGKILL) in the middle of calls. With a metaserver and
# two servers, 16 calls (8 synchronous, 8 asynchronous, in two client processes) are
# running when the server holding some of them is killed: every call must still end
# with its own correct result, from the surviving server. Without a metaserver, calls
# running on a server that is killed end at once with GRID_ERR_CONN_LOST (not at their
# timeout), and the next call is refused with GRID_ERR_CONNECT. A function that must not
# run twice (Retry "no") gets a clear error instead of a second run. Never a wrong,
# duplicated or missing result. Loopback; about 25 s. TAP output.
. "$top_srcdir/tests/faults/lib.sh"

# ---- with a metaserver: the calls of the killed server run again on the other one
# Down after 3 s without a beat, not 300 ms: the survivor's beats came late under TSan
# on a loaded machine, it was marked down, and two retries found no server. The kill
# shows in the calls' lost connections, not in the heartbeat.
f_grid 8 --down-after 30

export GRIDRPC_METASERVER=$META GRIDRPC_TIMEOUT=60 GRIDRPC_CONNECT_TIMEOUT=5
t0=$(date +%s.%N)
f_start sync "$FC" calls 8 6 sync
f_start async "$FC" calls 8 6 async
# The victim: a server that runs calls (heartbeats every 100 ms), killed once it holds
# at least one; the calls last 6 s (a margin for a loaded machine), so none has ended yet.
f_busiest
if [ -n "$victim" ]; then
  kill -KILL "${pid_of[$victim]}"
  ok "the server $victim is killed while it runs $held call(s)"
else
  fail "no server showed a running call"; f_status | diag
fi
survivor=s1; [ "$victim" = s1 ] && survivor=s2
wait_client() { # wait_client NAME: waits for fault-client NAME (its timeout included)
  for _ in $(seq 1 600); do grep -q '^summary ' "$T_TMP/$1.out" && return 0; sleep 0.1; done
  return 1
}
wait_client sync; wait_client async
t1=$(date +%s.%N)
for c in sync async; do
  if f_clean "$T_TMP/$c.out" 8 && [ "$(f_summary "$T_TMP/$c.out" ok)" = 8 ]; then
    ok "$c: all 8 calls end with their own correct result"
  else
    fail "$c: calls after the kill"; diag <"$T_TMP/$c.out"; diag <"$T_TMP/$c.err"
  fi
done
# The calls the victim held ran again on the survivor: every result came from it
# (a call that ended on the victim before the kill would have its pid: none could, at 6 s).
others=$(cat "$T_TMP/sync.out" "$T_TMP/async.out" | grep ' ok ' | grep -vc "pid=${pid_of[$survivor]} ")
[ "$others" = 0 ] && ok "every result came from the surviving server" ||
  { fail "$others result(s) claim another server"; cat "$T_TMP/sync.out" "$T_TMP/async.out" | diag; }
python3 -c "import sys; sys.exit(0 if $t1 - $t0 < 60 else 1)" &&
  ok "the calls end in bounded time ($(python3 -c "print('%.1f' % ($t1 - $t0))") s)" || fail "the calls took $(python3 -c "print($t1 - $t0)") s"
# A function that must not run twice (IDL Retry "no": test/sleep_count) is not run
# again elsewhere: a clear error says why. Two servers again: the survivor and s4.
f_server s4 --threads 8 --metaserver "$META" --name s4 || { fail "gridrpcd s4 starts"; finish; exit 1; }
pid_of[s4]=$srv_pid
f_wait_up 2 || { fail "s4 registers"; f_status | diag; }
f_start once "$B/gridrpc" call test/sleep_count 4
victim=
for _ in $(seq 1 60); do
  victim=$(f_status 2>/dev/null | python3 -c 'import json,sys
print(" ".join(s["name"] for s in json.load(sys.stdin)["servers"] if s["running"] > 0 and s["state"] == "up"))' 2>/dev/null)
  [ -n "$victim" ] && break
  sleep 0.05
done
[ -n "$victim" ] && kill -KILL "${pid_of[$victim]}"
for _ in $(seq 1 300); do kill -0 "$f_pid" 2>/dev/null || break; sleep 0.1; done
if [ -n "$victim" ] && grep -q "GRID_ERR_CONN_LOST\|connection" "$T_TMP/once.err" &&
  grep -q "not retried on another server: the function must not run twice" "$T_TMP/once.err"; then
  ok "a call that must not run twice is not retried: the error says why"
else
  fail "a Retry \"no\" call on a killed server (victim '$victim')"; diag <"$T_TMP/once.err"; diag <"$T_TMP/once.out"
fi
unset GRIDRPC_METASERVER

# ---- without a metaserver: a clear GRID_ERR_CONN_LOST, at once
# s3 reports to the metaserver only so that the test sees its running calls; the
# clients name it directly.
f_server s3 --threads 16 --metaserver "$META" --name s3 || { fail "gridrpcd s3 starts"; finish; exit 1; }
export GRIDRPC_SERVER=127.0.0.1:$srv_port
c0=$(date +%s.%N)
f_start dsync "$FC" calls 6 20 sync
f_start dasync "$FC" calls 6 20 async
running=0
for _ in $(seq 1 200); do
  running=$(f_status 2>/dev/null | python3 -c 'import json,sys
print(sum(s["running"] for s in json.load(sys.stdin)["servers"] if s["name"] == "s3" and s["state"] == "up"))' 2>/dev/null)
  [ "${running:-0}" -ge 12 ] && break
  sleep 0.1
done
[ "${running:-0}" -ge 12 ] && ok "the server runs the 12 calls" || fail "the server runs ${running:-0} of the 12 calls"
kill -KILL "$srv_pid"
k0=$(date +%s.%N)
kill_at=$(python3 -c "print('%.2f' % ($k0 - $c0))")
wait_client dsync; wait_client dasync
k1=$(date +%s.%N)
# A call the server was running when it died ends with GRID_ERR_CONN_LOST naming the lost
# connection. One that had not reached it yet (only if fewer than 12 were seen running:
# a slow machine) may instead find the port closed: GRID_ERR_CONNECT, which says truly
# that it never left. Any other end, or fewer lost calls than were seen running, fails.
lost_all=0
for c in dsync dasync; do
  lost=$(grep -c '^call [0-9]* error GRID_ERR_CONN_LOST .*connection' "$T_TMP/$c.out")
  never=$(grep -c '^call [0-9]* error GRID_ERR_CONNECT ' "$T_TMP/$c.out")
  lost_all=$((lost_all + lost))
  if f_clean "$T_TMP/$c.out" 6 && [ "$(f_summary "$T_TMP/$c.out" error)" = 6 ] && [ $((lost + never)) = 6 ]; then
    ok "${c#d}: the 6 calls of the killed server end with GRID_ERR_CONN_LOST naming the lost connection ($lost) or, not yet sent, GRID_ERR_CONNECT ($never)"
  else
    fail "${c#d}: errors after the kill (the kill at ${kill_at}s of the clients' clock)"; diag <"$T_TMP/$c.out"
    # What the client and the server said (a failure seen twice under TSan: calls that
    # ended at once, before the kill, reset while connecting).
    tail -n 20 "$T_TMP/$c.err" | diag
    grep -v ' ok$' "$T_TMP/s3.err" | tail -n 40 | diag
  fi
done
[ "$lost_all" -ge "${running:-0}" ] && ok "every call seen running ($running) ends with GRID_ERR_CONN_LOST ($lost_all)" ||
  fail "$running calls were seen running but only $lost_all ended with GRID_ERR_CONN_LOST"
python3 -c "import sys; sys.exit(0 if $k1 - $k0 < 10 else 1)" &&
  ok "they end soon after the kill, not at the call's end ($(python3 -c "print('%.1f' % ($k1 - $k0))") s)" ||
  fail "they ended $(python3 -c "print('%.1f' % ($k1 - $k0))") s after the kill"
timeout 30 "$FC" calls 1 0 sync >"$T_TMP/after.out" 2>&1
if grep -q '^call 0 error GRID_ERR_CONNECT ' "$T_TMP/after.out"; then
  ok "a new call to the dead server fails with GRID_ERR_CONNECT"
else
  fail "a call to the dead server"; diag <"$T_TMP/after.out"
fi
finish
