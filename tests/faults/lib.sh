# tests/faults/lib.sh: helpers of the fault tests (bash). Sourced first by each fault
# test: it sources tests/lib.sh and skips (77) when what the tests run is not built.
# Every process starts under `timeout -s KILL` (nothing outlives a hung test), and the
# EXIT trap kills whatever is left. f_start gives the real program's pid (not the
# timeout's), so a test can SIGKILL or SIGSTOP the program itself.
. "$top_srcdir/tests/lib.sh"
B=$top_builddir
FC=$B/fault-client
FMOD=$B/tests/faults/.libs/faults.so
TESTMOD=$B/stubs/.libs/test.so
F_LIMIT=${F_LIMIT:-120} # no process of a fault test lives longer (seconds)
export GRIDRPC_QUIET=1
unset GRIDRPC_SERVER GRIDRPC_METASERVER GRIDRPC_CONFIG GRIDRPC_TIMEOUT GRIDRPC_CONNECT_TIMEOUT GRIDRPC_RETRIES GRIDRPC_SCHEDULER
f_pids=()
f_cleanup() {
  local p
  for p in "${f_pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
  wait 2>/dev/null
}
trap f_cleanup EXIT

# f_need: skips (77) when the faults module or the client is not built.
f_need() {
  if [ ! -f "$FMOD" ] || [ ! -x "$FC" ] || [ ! -f "$TESTMOD" ]; then
    echo "# SKIP: tests/faults/faults.la, fault-client or stubs/test.la not built (make check builds them)"
    rm -rf "$T_TMP"
    exit 77
  fi
}

# f_start NAME CMD...: starts CMD in the background under timeout -s KILL $F_LIMIT,
# stdout to $T_TMP/NAME.out, stderr to $T_TMP/NAME.err; sets f_pid to CMD's own pid.
f_start() {
  local name=$1 t i
  shift
  # In a subshell that is not replaced by timeout ("|| exit") and whose own stderr goes
  # nowhere: it reports "Killed" when timeout re-raises the SIGKILL its program died of.
  (timeout -s KILL "$F_LIMIT" "$@" >"$T_TMP/$name.out" 2>"$T_TMP/$name.err" || exit $?) 2>/dev/null &
  local sub=$!
  f_pid= t=
  for i in $(seq 1 100); do
    [ -z "$t" ] && t=$(pgrep -P "$sub" | head -n 1)
    [ -n "$t" ] && f_pid=$(pgrep -P "$t" | head -n 1)
    [ -n "$f_pid" ] && break
    kill -0 "$sub" 2>/dev/null || break
    sleep 0.05
  done
  [ -n "$t" ] && f_pids+=("$t")
  [ -n "$f_pid" ] && f_pids+=("$f_pid")
  [ -n "$f_pid" ]
}

# f_meta NAME PORT [ARGS...]: gridmetad on 127.0.0.1:PORT (0: any) with its registry in
# $T_TMP/registry.db, its status page on any port and ARGS; sets META (HOST:PORT), HTTP
# and meta_pid.
f_meta() {
  f_start "$1" "$B/gridmetad" --host 127.0.0.1 --port "$2" --db "$T_TMP/registry.db" --heartbeat 100ms \
    --http 0 "${@:3}" || return 1
  meta_pid=$f_pid
  wait_line "$T_TMP/$1.out" '^listening on ' || { diag <"$T_TMP/$1.err"; return 1; }
  META=$(sed -n 's/^listening on //p' "$T_TMP/$1.out" | head -n 1)
  wait_line "$T_TMP/$1.out" '^http on ' && HTTP=$(sed -n 's/^http on //p' "$T_TMP/$1.out" | head -n 1)
}

# f_api FIELD: the metaserver's own counter FIELD (GET /api/status): holding, held, ...
f_api() {
  python3 -c "import json,urllib.request; print(json.load(urllib.request.urlopen('http://$HTTP/api/status', timeout=5))['metaserver']['$1'])" 2>/dev/null
}

# f_server NAME ARGS...: gridrpcd on 127.0.0.1, any port, serving the faults and test
# modules with ARGS; sets srv_pid and srv_port.
f_server() {
  local name=$1
  shift
  f_start "$name" "$B/gridrpcd" --host 127.0.0.1 --port 0 --module "$FMOD" --module "$TESTMOD" \
    --log-level warn "$@" || return 1
  srv_pid=$f_pid
  srv_port=$(listening_port "$T_TMP/$name.out" "$srv_pid") || { diag <"$T_TMP/$name.err"; return 1; }
}

# f_status: the metaserver's view as JSON (gridrpc status --json).
f_status() { timeout 20 "$B/gridrpc" --metaserver "$META" --json status; }
# f_up: how many servers the metaserver has up.
f_up() {
  f_status 2>/dev/null | python3 -c 'import json,sys; print(sum(s["state"]=="up" for s in json.load(sys.stdin)["servers"]))' 2>/dev/null
}
# f_wait_up N [TENTHS]: until N servers are up (default 20 s).
f_wait_up() {
  local i
  for i in $(seq 1 "${2:-200}"); do
    [ "$(f_up)" = "$1" ] && return 0
    sleep 0.1
  done
  return 1
}

# f_grid THREADS [META_ARGS...]: gridmetad ("meta", any port; META_ARGS more options)
# and two servers s1 and s2 of THREADS workers registered with it; pid_of[NAME] is each
# server's pid. A start or a registration that fails is a failed check, and the test
# ends there.
declare -A pid_of
f_grid() {
  local s
  f_meta meta 0 "${@:2}" || { fail "gridmetad starts"; finish; exit 1; }
  for s in s1 s2; do
    f_server "$s" --threads "$1" --metaserver "$META" --name "$s" || { fail "gridrpcd $s starts"; finish; exit 1; }
    pid_of[$s]=$srv_pid
  done
  f_wait_up 2 && ok "two servers register" || { fail "two servers register"; f_status | diag; finish; exit 1; }
}

# f_busiest: sets victim and held to the server that runs the most calls and how many
# it runs, once one runs at least one (3 s at most); victim is empty when none did.
f_busiest() {
  local _
  victim= held=0
  for _ in $(seq 1 60); do
    read -r victim held < <(f_status 2>/dev/null | python3 -c 'import json,sys
v=sorted(json.load(sys.stdin)["servers"], key=lambda s: -s["running"])
print(v[0]["name"], v[0]["running"]) if v and v[0]["running"] > 0 else print("", 0)' 2>/dev/null)
    [ -n "$victim" ] && [ "${held:-0}" -gt 0 ] && return 0
    sleep 0.05
  done
  victim=
  return 1
}

# f_summary FILE FIELD: a field of fault-client's summary line (calls, ok, error, wrong,
# dup, missing); empty when there is no summary.
f_summary() { sed -n "s/^summary .*\\b$2=\\([0-9]*\\).*/\\1/p" "$1"; }

# f_clean FILE N: fault-client's FILE has a summary of N calls, none wrong, duplicated
# or missing (errors are judged by the caller).
f_clean() {
  [ "$(f_summary "$1" calls)" = "$2" ] && [ "$(f_summary "$1" wrong)" = 0 ] &&
    [ "$(f_summary "$1" dup)" = 0 ] && [ "$(f_summary "$1" missing)" = 0 ]
}

f_need
