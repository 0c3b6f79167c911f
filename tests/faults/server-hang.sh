#!/usr/bin/env bash
# server-hang.sh: a server that hangs (SIGSTOP) with calls on it, with a metaserver and
# two servers. Its calls end with GRID_ERR_TIMEOUT at the client's call timeout (a hung
# server cannot be told from a long call any sooner), the metaserver marks it down and
# new calls go to the other server; once it runs again it is up again, its late
# answers reach nobody (every result is checked), and it serves new calls; a client
# process whose calls timed out on it goes on with correct results once it runs again.
# Loopback; about 30 s. TAP output.
. "$top_srcdir/tests/faults/lib.sh"
f_grid 8
export GRIDRPC_METASERVER=$META GRIDRPC_TIMEOUT=10 GRIDRPC_CONNECT_TIMEOUT=5

# 4 sync and 4 async calls of 5 s, in one process each; stop a server that holds some
# (5 s: a margin for a loaded machine, where the server is found late).
f_start sync "$FC" calls 4 5 sync
f_start async "$FC" calls 4 5 async
f_busiest
[ -n "$victim" ] || { fail "no server showed a running call"; f_status | diag; finish; exit 1; }
kill -STOP "${pid_of[$victim]}"
t0=$(date +%s.%N)
ok "the server $victim hangs while it runs $held call(s)"
other=s1; [ "$victim" = s1 ] && other=s2
for c in sync async; do
  for _ in $(seq 1 600); do grep -q '^summary ' "$T_TMP/$c.out" && break; sleep 0.1; done
done
t1=$(date +%s.%N)
# Each call either ended well (on the other server: its pid) or by its timeout.
bad=$(cat "$T_TMP/sync.out" "$T_TMP/async.out" | grep '^call ' |
  grep -v -e " ok pid=${pid_of[$other]} " -e ' error GRID_ERR_TIMEOUT .*call timeout')
timeouts=$(cat "$T_TMP/sync.out" "$T_TMP/async.out" | grep -c ' error GRID_ERR_TIMEOUT ')
if f_clean "$T_TMP/sync.out" 4 && f_clean "$T_TMP/async.out" 4 && [ -z "$bad" ] && [ "$timeouts" -ge 1 ]; then
  ok "its calls end with GRID_ERR_TIMEOUT ($timeouts), the others with their own results from $other"
else
  fail "calls on a hung server"; cat "$T_TMP/sync.out" "$T_TMP/async.out" | diag
fi
python3 -c "import sys; sys.exit(0 if $t1 - $t0 < 30 else 1)" &&
  ok "in bounded time ($(python3 -c "print('%.1f' % ($t1 - $t0))") s; call timeout 10 s)" ||
  fail "the calls took $(python3 -c "print('%.1f' % ($t1 - $t0))") s"
if f_wait_up 1 && [ "$(f_status | python3 -c 'import json,sys
print(" ".join(s["name"] for s in json.load(sys.stdin)["servers"] if s["state"] == "up"))')" = "$other" ]; then
  ok "the metaserver marks the hung server down"
else
  fail "the hung server is not marked down"; f_status | diag
fi
timeout 60 "$FC" calls 4 0 sync >"$T_TMP/new.out" 2>&1
if f_clean "$T_TMP/new.out" 4 && [ "$(grep -c " ok pid=${pid_of[$other]} " "$T_TMP/new.out")" = 4 ]; then
  ok "new calls go to $other"
else
  fail "new calls while a server hangs"; diag <"$T_TMP/new.out"
fi
kill -CONT "${pid_of[$victim]}"
f_wait_up 2 && ok "once it runs again it is up again" || { fail "the server is not up again"; f_status | diag; }
export GRIDRPC_SERVER=127.0.0.1:$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$T_TMP/$victim.out")
unset GRIDRPC_METASERVER
timeout 60 "$FC" calls 4 0 async >"$T_TMP/back.out" 2>&1
if f_clean "$T_TMP/back.out" 4 && [ "$(grep -c " ok pid=${pid_of[$victim]} " "$T_TMP/back.out")" = 4 ]; then
  ok "and it serves new calls correctly"
else
  fail "calls to the server after it ran again"; diag <"$T_TMP/back.out"
fi

# The same process goes on after its calls timed out on a hung server: when the server
# runs again its late answers (to calls given up) must reach no later call, on the
# same connections (async) or pooled ones (sync).
export GRIDRPC_TIMEOUT=3
t=$(date +%s.%N)
f_start late "$FC" load 10 4 0.3
sleep 1.5
kill -STOP "${pid_of[$victim]}"
c0=$(python3 -c "print($(date +%s.%N) - $t)")
sleep 5
kill -CONT "${pid_of[$victim]}"
c1=$(python3 -c "print($(date +%s.%N) - $t)")
for _ in $(seq 1 600); do grep -q '^summary ' "$T_TMP/late.out" && break; sleep 0.1; done
n=$(f_summary "$T_TMP/late.out" calls)
after=$(python3 -c "
import re
print(sum(float(m.group(1)) > $c1 + 0.5 for m in re.finditer(r' ok pid=\d+ start=([\d.]+)', open('$T_TMP/late.out').read())))")
echo "# stopped ${c0}..${c1} s; $(f_summary "$T_TMP/late.out" error) calls timed out; $after calls started after it ran again"
if [ -n "$n" ] && f_clean "$T_TMP/late.out" "$n" && [ "$(f_summary "$T_TMP/late.out" error)" -ge 1 ] &&
  [ "$(grep -c '^call .* error ' "$T_TMP/late.out")" = "$(grep -c '^call .* error GRID_ERR_TIMEOUT .*call timeout' "$T_TMP/late.out")" ] &&
  [ "$after" -gt 0 ]; then
  ok "a client whose calls timed out on the hung server goes on with correct results once it runs again"
else
  fail "calls after the server ran again"; grep -v ' ok ' "$T_TMP/late.out" | diag
fi
finish
