#!/usr/bin/env bash
# meta-hang.sh: the metaserver hung (SIGSTOP) while a client process keeps 6 threads of
# calls going through it. Without a call timeout, calls wait for it and none fails; once
# it runs again it does not declare the servers down for the heartbeats it missed
# itself. With a call timeout (GRIDRPC_TIMEOUT=3), each wait for a hung metaserver takes
# at most half of it: calls go on to the servers it last named while it hangs (or, on a
# very loaded machine, end by their timeout). None is wrong, duplicated or lost.
# Loopback; about 30 s. TAP output.
. "$top_srcdir/tests/faults/lib.sh"
f_grid 4
export GRIDRPC_METASERVER=$META GRIDRPC_CONNECT_TIMEOUT=5

# phase NAME LOAD_S STOP_AT HANG_S: load for LOAD_S, the metaserver stopped from STOP_AT
# for HANG_S; sets h0 h1 (the hang, in the client's seconds) and log0.
phase() {
  local t
  t=$(date +%s.%N)
  f_start "$1" "$FC" load "$2" 6 0.3
  sleep "$3"
  log0=$(wc -l <"$T_TMP/meta.err") # the metaserver's log lines before the hang
  kill -STOP "$meta_pid"
  h0=$(python3 -c "print($(date +%s.%N) - $t)")
  sleep "$4"
  kill -CONT "$meta_pid"
  h1=$(python3 -c "print($(date +%s.%N) - $t)")
  for _ in $(seq 1 900); do grep -q '^summary ' "$T_TMP/$1.out" && break; sleep 0.1; done
}
# stats FILE: "calls_ended_during_hang longest_call_s" from fault-client's lines.
stats() {
  python3 -c "
import re
t=[tuple(map(float, m.groups())) for m in re.finditer(r' ok pid=\d+ start=([\d.]+) end=([\d.]+)', open('$1').read())]
print(sum($h0 + 0.5 < e < $h1 for s, e in t), '%.1f' % max([e - s for s, e in t] or [0]))"
}
clean_load() { # clean_load NAME: every call of the load succeeded
  local n
  n=$(f_summary "$T_TMP/$1.out" calls)
  [ -n "$n" ] && [ "$n" -gt 10 ] && f_clean "$T_TMP/$1.out" "$n" && [ "$(f_summary "$T_TMP/$1.out" error)" = 0 ]
}

# ---- no call timeout: the calls wait, and none fails
phase wait 10 1.5 7
read -r during longest < <(stats "$T_TMP/wait.out")
echo "# no call timeout: stopped ${h0}..${h1} s; $during calls ended meanwhile; longest call ${longest} s"
clean_load wait && ok "no call timeout: every call succeeds across a 7 s hang of the metaserver (the servers time out meanwhile)" ||
  { fail "calls across the hang"; grep -v ' ok ' "$T_TMP/wait.out" | diag; }
# (A late beat on a loaded machine may mark a server down before the hang: not counted.)
if ! tail -n +$((log0 + 1)) "$T_TMP/meta.err" | grep -q "is down: no heartbeat" && f_wait_up 2; then
  ok "the metaserver does not declare the servers down for the beats it missed itself"
else
  fail "servers after the hang"; diag <"$T_TMP/meta.err"; f_status | diag
fi

# ---- a call timeout of 3 s: no call waits longer for the hung metaserver
export GRIDRPC_TIMEOUT=3
phase bounded 13 1.5 10
read -r during longest < <(stats "$T_TMP/bounded.out")
echo "# call timeout 3 s: stopped ${h0}..${h1} s; $during calls ended meanwhile; longest call ${longest} s"
# On a loaded machine a call may still run out of its 3 s: that is a clear error too.
n=$(f_summary "$T_TMP/bounded.out" calls)
if [ -n "$n" ] && [ "$n" -gt 10 ] && f_clean "$T_TMP/bounded.out" "$n" &&
  [ "$(grep -c '^call .* error ' "$T_TMP/bounded.out")" = "$(grep -c '^call .* error GRID_ERR_TIMEOUT .*call timeout' "$T_TMP/bounded.out")" ]; then
  ok "call timeout: across a 10 s hang every call succeeds ($(f_summary "$T_TMP/bounded.out" ok) of $n) or ends by its timeout"
else
  fail "calls across the hang (call timeout)"; grep -v ' ok ' "$T_TMP/bounded.out" | diag
fi
[ "${during:-0}" -gt 0 ] && ok "calls go on to the last-known servers while it hangs ($during)" ||
  fail "no call ended while the metaserver hung"
# Without the bound a call waits as long as the hang (h1 - h0, longer on a loaded machine).
python3 -c "import sys; sys.exit(0 if $longest < 0.75 * ($h1 - $h0) else 1)" &&
  ok "no call waited for the whole hang (longest ${longest} s)" ||
  fail "a call waited ${longest} s for the hung metaserver (call timeout 3 s)"
finish
