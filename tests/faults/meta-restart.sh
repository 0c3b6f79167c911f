#!/usr/bin/env bash
# meta-restart.sh: the metaserver killed (SIGKILL) and restarted on its registry file
# while a client process keeps 12 threads of calls going through it (sync and async)
# on 8 workers, so that the metaserver holds some requests. The calls in progress at the
# kill finish (those held at the metaserver included), the client's calls go on to
# the servers it last heard of while the metaserver is away, a new client process meanwhile gets a
# clear error naming the metaserver (not a hang), the restarted metaserver lists every
# server it had (same ids) before they report again, they report again by themselves,
# and new client processes are routed through it. No call fails, none is wrong,
# duplicated or lost. Loopback; about 20 s. TAP output.
. "$top_srcdir/tests/faults/lib.sh"
f_grid 4
port=${META##*:}
# ids: "ID NAME" of every server the metaserver lists, sorted.
ids() { f_status 2>/dev/null | python3 -c 'import json,sys
print(" ".join(sorted("%s:%s" % (s["id"], s["name"]) for s in json.load(sys.stdin)["servers"])))' 2>/dev/null; }
before=$(ids)

export GRIDRPC_METASERVER=$META GRIDRPC_TIMEOUT=30 GRIDRPC_CONNECT_TIMEOUT=5
t_load=$(date +%s.%N)
f_start load "$FC" load 12 12 0.3
# 12 threads, 8 workers: the metaserver holds some requests until a server has room.
# Killed while it holds one, if that comes within 2 s.
sleep 1.5
holding=0
until_s=$(($(date +%s) + 2))
while [ "$(date +%s)" -lt "$until_s" ]; do
  holding=$(f_api holding)
  [ "${holding:-0}" -gt 0 ] && break
done
kill -KILL "$meta_pid"
echo "# the metaserver held $holding request(s) just before the kill"
k0=$(date +%s.%N)
wait "$meta_pid" 2>/dev/null
# A client process started now knows no server: a clear error, within the timeouts.
timeout 60 "$FC" calls 1 0 sync >"$T_TMP/fresh.out" 2>&1
if grep -q "^call 0 error GRID_ERR_[A-Z_]* .*metaserver at $META" "$T_TMP/fresh.out"; then
  ok "a new client while the metaserver is away gets an error naming it"
else
  fail "a new client while the metaserver is away"; diag <"$T_TMP/fresh.out"
fi
sleep 1.5
f_meta meta2 "$port" || { fail "gridmetad restarts on port $port"; diag <"$T_TMP/meta2.err"; finish; exit 1; }
k1=$(date +%s.%N)
after=$(ids)
[ -n "$before" ] && [ "$after" = "$before" ] && ok "the restarted metaserver lists every server it had, same ids ($after)" ||
  { fail "servers after the restart: '$after', before: '$before'"; }
f_wait_up 2 && ok "both servers report to the restarted metaserver by themselves" ||
  { fail "servers up after the restart"; f_status | diag; }
timeout 60 "$FC" calls 4 0 sync >"$T_TMP/new.out" 2>&1
if f_clean "$T_TMP/new.out" 4 && [ "$(f_summary "$T_TMP/new.out" ok)" = 4 ]; then
  ok "a new client process is routed through the restarted metaserver"
else
  fail "a new client after the restart"; diag <"$T_TMP/new.out"
fi

for _ in $(seq 1 600); do grep -q '^summary ' "$T_TMP/load.out" && break; sleep 0.1; done
n=$(f_summary "$T_TMP/load.out" calls)
if [ -n "$n" ] && [ "$n" -gt 20 ] && f_clean "$T_TMP/load.out" "$n" && [ "$(f_summary "$T_TMP/load.out" error)" = 0 ]; then
  ok "under load: all $n calls succeed with their own results across the kill and the restart"
else
  fail "the load through the kill and restart"; grep -v ' ok ' "$T_TMP/load.out" | diag; diag <"$T_TMP/load.err"
fi
# Calls were in flight at the kill and ended after it; calls also started while it was
# away and after it was back (times relative to the client's start).
span() { # span FILE: "across away back" counts of ok calls: in flight at the kill, started while away, after
  python3 -c "
import re,sys
k0=$1; k1=$2
t=[tuple(map(float, m.groups())) for m in re.finditer(r' ok pid=\d+ start=([\d.]+) end=([\d.]+)', open('$T_TMP/load.out').read())]
print(sum(s < k0 < e for s,e in t), sum(k0 < s < k1 for s,e in t), sum(s > k1 for s,e in t))"
}
# The client's clock starts at its exec, a moment after t_load: close enough for counts.
read -r across away back < <(span "$(python3 -c "print($k0 - $t_load)")" "$(python3 -c "print($k1 - $t_load)")")
echo "# calls in flight at the kill: $across; started while away: $away; after the restart: $back"
[ "${across:-0}" -gt 0 ] && ok "calls in flight at the kill finished well" || fail "no call was in flight at the kill"
[ "${away:-0}" -gt 0 ] && ok "calls went on while the metaserver was away" || fail "no call ran while it was away"
[ "${back:-0}" -gt 0 ] && ok "calls went on after the restart" || fail "no call after the restart"
finish
