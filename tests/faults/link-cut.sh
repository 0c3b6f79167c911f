#!/usr/bin/env bash
# link-cut.sh: the server's link cut and restored (its cable unplugged in the lab) while
# calls are on it. A short cut (2 s) in the middle of 8 calls (4 sync, 4 async) whose
# 1 MiB arguments are crossing a 20 Mbit/s link: the calls complete, each with its own
# correct result. A cut longer than the client's call timeout (4 s): every call ends
# with GRID_ERR_TIMEOUT soon after that timeout, never hangs, and a new connection
# fails after the connect timeout, saying so. After the link is back, new
# calls work. Root only (77 otherwise). About 25 s. TAP output.
. "$top_srcdir/tests/faults/lib.sh"
. "$top_srcdir/tests/lab/lab.sh"
lab_init fcut || { rc=$?; rm -rf "$T_TMP"; exit $rc; }
lab_host cli 40
lab_host srv 41
lab_link srv 20mbit 0
lab_start srv "$B/gridrpcd" --host "$(lab_ip srv)" --insecure --port 7000 --module "$FMOD" --module "$TESTMOD" \
  --threads 8 --io-timeout 15 --log-level warn || { fail "gridrpcd starts"; finish; exit 1; }
S=$(lab_ip srv):7000
# client NAME TIMEOUT ARGS...: fault-client in the client host, in the background, its
# output in $T_TMP/NAME.out.
client() {
  local name=$1 to=$2
  shift 2
  lab_exec cli env GRIDRPC_SERVER=$S GRIDRPC_QUIET=1 GRIDRPC_TIMEOUT="$to" GRIDRPC_CONNECT_TIMEOUT=5 \
    timeout -s KILL 90 "$FC" "$@" >"$T_TMP/$name.out" 2>&1 &
  CPIDS+=($!)
}
CPIDS=()
# clients_gone: waits for the clients started so far to exit (their connections gone,
# so that conns counts only the next ones; under ASan the exit's leak check is slow).
clients_gone() {
  local p
  for p in "${CPIDS[@]}"; do wait "$p" 2>/dev/null; done
  CPIDS=()
}
# conns N: waits (up to 20 s) until the server has N client connections, so that the
# calls are on the link before it is cut.
conns() {
  local i
  for i in $(seq 1 200); do
    [ "$(ip netns exec "$(lab_ns srv)" ss -Htn state established '( sport = :7000 )' | wc -l)" -ge "$1" ] && return 0
    sleep 0.1
  done
  return 1
}
wait_summary() { # wait_summary NAME SECONDS
  local i
  for i in $(seq 1 $(($2 * 10))); do grep -q "^summary " "$T_TMP/$1.out" 2>/dev/null && return 0; sleep 0.1; done
  return 1
}

# ---- a short cut during the transfers: the calls complete
client a_sync 60 calls 4 0.5 sync 131072
client a_async 60 calls 4 0.5 async 131072
conns 5 || fail "the calls did not connect"
sleep 0.5
lab_link_down srv
sleep 2
lab_link_up srv
ok "the server's link was cut for 2 s while 8 MiB of arguments crossed it"
for c in a_sync a_async; do
  wait_summary $c 80
  if f_clean "$T_TMP/$c.out" 4 && [ "$(f_summary "$T_TMP/$c.out" ok)" = 4 ]; then
    ok "${c#a_}: the 4 calls complete after the short cut, each with its own result"
  else
    fail "${c#a_}: calls across a short cut"; diag <"$T_TMP/$c.out"
  fi
done

# ---- a cut longer than the call timeout: GRID_ERR_TIMEOUT, in bounded time
clients_gone
client b_sync 4 calls 3 1 sync
client b_async 4 calls 3 1 async
conns 4 || fail "the calls did not connect"
lab_link_down srv
t0=$(date +%s.%N)
for c in b_sync b_async; do
  wait_summary $c 40
  if f_clean "$T_TMP/$c.out" 3 && [ "$(grep -c '^call [0-9]* error GRID_ERR_TIMEOUT .*call timeout' "$T_TMP/$c.out")" = 3 ]; then
    ok "${c#b_}: the 3 calls end with GRID_ERR_TIMEOUT naming the call timeout"
  else
    fail "${c#b_}: calls across a long cut"; diag <"$T_TMP/$c.out"
  fi
done
t1=$(date +%s.%N)
python3 -c "import sys; sys.exit(0 if $t1 - $t0 < 30 else 1)" &&
  ok "they end in bounded time ($(python3 -c "print('%.1f' % ($t1 - $t0))") s after the cut; timeout 4 s)" ||
  fail "they took $(python3 -c "print('%.1f' % ($t1 - $t0))") s"
# A new client while the link is still down: its connection cannot be made, and it
# says so after the connect timeout (3 s here), not a hang (GRID_ERR_TIMEOUT when the
# descriptor is fetched first, "cannot connect ... no answer within 3 s").
lab_exec cli env GRIDRPC_SERVER=$S GRIDRPC_QUIET=1 GRIDRPC_CONNECT_TIMEOUT=3 \
  timeout -s KILL 60 "$FC" calls 1 0 sync >"$T_TMP/d.out" 2>&1
if f_clean "$T_TMP/d.out" 1 && grep -q '^call 0 error GRID_ERR_\(CONNECT\|TIMEOUT\) .*cannot connect to .*3 s' "$T_TMP/d.out"; then
  ok "a new connection while the link is down: an error naming the connect timeout"
else
  fail "a new connection while the link is down"; diag <"$T_TMP/d.out"
fi
lab_link_up srv

# ---- the link is back: new calls work
client c 30 calls 4 0 sync
wait_summary c 40
f_clean "$T_TMP/c.out" 4 && [ "$(f_summary "$T_TMP/c.out" ok)" = 4 ] && ok "after the link is back, calls work" ||
  { fail "calls after the link is back"; diag <"$T_TMP/c.out"; }
finish
