#!/usr/bin/env bash
# slow-reader.sh: a client that stops reading a large result (SIGSTOP once the server
# holds its call, and a second call with a small result on the same connection) must
# not keep a server of one worker from serving others, and is dropped by the
# server's write deadline (--io-timeout plus the size at 1 MiB/s); once it runs again
# it gets an error, never a partial result. In the lab (namespaces), where the socket
# buffers can be made small: with this machine's defaults tens of MB sit in buffers and
# a stopped reader would never block the server at all. Once with the calls run in the
# server, once with --isolate (executor processes, the default; the server's worker
# still sends the result). Root only
# (77 otherwise). About 30 s. TAP output.
. "$top_srcdir/tests/faults/lib.sh"
. "$top_srcdir/tests/lab/lab.sh"
lab_init fslow || { rc=$?; rm -rf "$T_TMP"; exit $rc; }
lab_host srv 30
lab_host slow 31
lab_host fast 32
# Small buffers where the stopped reader receives and where the server sends (these
# sysctls belong to each namespace).
ip netns exec "$(lab_ns slow)" sysctl -qw net.ipv4.tcp_rmem="4096 65536 262144" &&
  ip netns exec "$(lab_ns srv)" sysctl -qw net.ipv4.tcp_wmem="4096 65536 262144" ||
  { echo "# SKIP: cannot set the socket buffer sizes of a namespace"; finish; exit 77; }
# scenario PORT LABEL ARGS...: a gridrpcd of one worker with ARGS on PORT, a slow
# client, fast clients; LABEL names the checks.
scenario() {
  local port=$1 label=$2 slow_pid= t_stop t_fast t_drop SLOG SLOW_LOG S
  shift 2
  lab_start srv "$B/gridrpcd" --host "$(lab_ip srv)" --insecure --port "$port" --module "$FMOD" --module "$TESTMOD" \
    --threads 1 --io-timeout 2 --log-level debug "$@" || { fail "$label: gridrpcd starts"; return 1; }
  SLOG=$LAB_LOG
  ok "$label: gridrpcd starts (one worker, --io-timeout 2 $*)"
  S=$(lab_ip srv):$port
  # The result comes 2 s after the server holds the call: time enough to stop the client.
  lab_run_bg slow env GRIDRPC_SERVER=$S GRIDRPC_QUIET=1 timeout -s KILL 90 "$FC" slow $N 2
  SLOW_LOG=$LAB_LOG
  for _ in $(seq 1 100); do
    slow_pid=$(pgrep -P "$LAB_PID" | head -n 1)
    [ -n "$slow_pid" ] && break
    sleep 0.05
  done
  if [ -n "$slow_pid" ] && lab_wait_line "$SLOW_LOG" '^received' 20 "$slow_pid" >/dev/null; then
    kill -STOP "$slow_pid"
    t_stop=$(date +%s.%N)
    ok "$label: the slow client stops reading once the server holds its calls"
  else
    fail "$label: the slow client's call did not reach the server"; diag <"$SLOW_LOG"; return 1
  fi

  # Others are served meanwhile, large results too, well before the slow one's deadline.
  fast() { lab_exec fast env GRIDRPC_SERVER=$S GRIDRPC_QUIET=1 GRIDRPC_TIMEOUT=60 timeout -s KILL 60 "$FC" "$@"; }
  sleep 3 # the slow one's result is being written by now, and its small one waits
  fast big $N >"$T_TMP/fbig.out" 2>&1
  fast calls 4 0 sync >"$T_TMP/fcalls.out" 2>&1
  t_fast=$(date +%s.%N)
  if grep -q '^call 0 ok ' "$T_TMP/fbig.out" && f_clean "$T_TMP/fcalls.out" 4 && [ "$(f_summary "$T_TMP/fcalls.out" ok)" = 4 ]; then
    ok "$label: other clients are served while it does not read ($(python3 -c "print('%.1f' % ($t_fast - $t_stop))") s after it stopped)"
  else
    fail "$label: others while a client does not read"; diag <"$T_TMP/fbig.out"; diag <"$T_TMP/fcalls.out"
  fi
  # ...before the server gave up on the slow one: a worker was not free only because of that.
  local dropped='cannot send\|while sending its result'
  ! grep -q "$dropped" "$SLOG" && ! grep -q '^call ' "$SLOW_LOG" &&
    ok "$label: the slow client was still connected and stopped then" ||
    fail "$label: the slow client was dropped before the others were served"

  # The server drops it by the write deadline (2 + 8 s; up to 40 s allowed on a slow machine).
  if lab_wait_line "$SLOG" 'cannot send|while sending its result' 40 >/dev/null; then
    t_drop=$(date +%s.%N)
    ok "$label: the server drops the client that does not read ($(python3 -c "print('%.1f' % ($t_drop - $t_stop))") s after it stopped)"
  else
    fail "$label: the server never dropped the slow client"; tail -n 20 "$SLOG" | diag
  fi
  kill -CONT "$slow_pid"
  lab_wait_line "$SLOW_LOG" '^call 0 ' 30 >/dev/null
  lab_wait_line "$SLOW_LOG" '^call 1 ' 30 >/dev/null
  # Its small call may have got out before the large one (then it is checked correct).
  if grep -q '^call 0 error GRID_ERR_CONN_LOST ' "$SLOW_LOG" && grep -q '^call 1 \(error GRID_ERR_CONN_LOST\|ok\) ' "$SLOW_LOG"; then
    ok "$label: once it reads again its large call gets GRID_ERR_CONN_LOST, not a partial result"
  else
    fail "$label: the slow client's outcome"; diag <"$SLOW_LOG"
  fi
  fast calls 2 0 async >"$T_TMP/fafter.out" 2>&1
  f_clean "$T_TMP/fafter.out" 2 && [ "$(f_summary "$T_TMP/fafter.out" ok)" = 2 ] && ok "$label: the server goes on serving" ||
    { fail "$label: calls after the drop"; diag <"$T_TMP/fafter.out"; }
}
N=1048576 # 8 MiB of result: the write deadline is 2 + 8 s
scenario 7000 "in the server"
# The same with each call in a child process: the child writes, the parent waits for it.
scenario 7001 "--isolate" --isolate
finish
