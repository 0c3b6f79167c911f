#!/bin/sh
# jobs.sh: two-phase calls against a real gridrpcd on loopback. A job submitted by one
# process (which then exits) is fetched by another, by a program (jobs-client) and by
# the CLI without the original arguments; a fetch of an unfinished job says so and
# writes nothing; after SIGKILL and a restart on the same --job-dir a finished job is
# still fetchable and an unfinished one runs again (in the new process: sleep_count
# counts from 1); a job whose function is gone after the restart fails with its own
# error; forget removes a job; --job-keep removes finished ones; unknown ids are errors.
# Every wait is bounded; every server is killed on exit.
. "$top_srcdir/tests/lib.sh"
GRIDRPCD=${GRIDRPCD:-$top_builddir/gridrpcd}
CLI=${CLI:-$top_builddir/gridrpc}
JC=${JOBS_CLIENT:-$top_builddir/jobs-client}
TESTMOD=$top_builddir/stubs/.libs/test.so
LINALG=$top_builddir/stubs/.libs/linalg.so
for f in "$TESTMOD" "$LINALG" "$JC"; do
  [ -f "$f" ] || { echo "1..0 # SKIP $f is not built (shared modules needed)"; rm -rf "$T_TMP"; exit 0; }
done
cd "$T_TMP" || exit 1
pid=
stop() { [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; [ -n "$pid" ] && wait "$pid" 2>/dev/null; pid=; }
trap 'stop' EXIT INT TERM
# serve LOG PORT ARGS...: starts gridrpcd (port 0: any), sets pid and port.
serve() {
  _log=$1; _p=$2; shift 2
  "$GRIDRPCD" --host 127.0.0.1 --port "$_p" --threads 2 "$@" >"$_log.out" 2>"$_log" &
  pid=$!
  port=$(listening_port "$_log.out" "$pid") || { echo "# gridrpcd did not start"; diag <"$_log"; return 1; }
}
# jc ARGS...: jobs-client, bounded; output in jc.out, status in jrc.
jc() { timeout 60 "$JC" "$@" >jc.out 2>&1; jrc=$?; }

serve srv1.log 0 --module "$TESTMOD" --job-dir "$T_TMP/jobs" || { fail "gridrpcd starts"; finish; exit 1; }
P=$port
if [ "$(stat -c %a "$T_TMP/jobs")" = 700 ]; then ok "--job-dir is created 0700"; else fail "job folder mode $(stat -c %a "$T_TMP/jobs")"; fi

# ---- submit in one process, fetch in others
jc submit "$P" 5
ID1=$(cat jc.out)
case "$ID1" in 127.0.0.1:$P/????????????????*) ok "submit prints host:port/HEX" ;; *) fail "submit: $ID1 (rc $jrc)" ;; esac
if [ "$(ls "$T_TMP/jobs" | grep -c "^${ID1##*/}.submit$")" = 1 ]; then ok "the SUBMIT is kept on disk"; else fail "no ${ID1##*/}.submit"; ls -l "$T_TMP/jobs" | diag; fi
jc fetch "$ID1" 5 10
if [ $jrc -eq 0 ] && grep -qx ok jc.out; then ok "another process fetches the right result"; else fail "fetch (rc $jrc)"; diag <jc.out; fi
timeout 30 "$CLI" fetch "$ID1" --wait 10 >cli.out 2>&1; rc=$?
if [ $rc -eq 0 ] && grep -qx 'out = \[0, 1.5, 3, 4.5, 6\]' cli.out; then ok "gridrpc fetch ID sizes the output from the kept scalars"; else fail "gridrpc fetch (rc $rc)"; diag <cli.out; fi
timeout 30 "$CLI" --json fetch "$ID1" >cli.out 2>&1
if grep -q '"results": {"out": \[0, 1.5, 3, 4.5, 6\]}' cli.out; then ok "gridrpc --json fetch"; else fail "--json fetch"; diag <cli.out; fi
jc state "$ID1"
if grep -qx 'done GRID_OK test/echo_double' jc.out; then ok "grid_job_state_np: done"; else fail "state"; diag <jc.out; fi

# ---- the CLI submits, a program fetches
timeout 30 "$CLI" --server "127.0.0.1:$P" submit test/echo_double 3 '[0,1.5,3]' >cli.out 2>&1
ID0=$(cat cli.out)
jc fetch "$ID0" 3 10
if [ $jrc -eq 0 ] && grep -qx ok jc.out; then ok "gridrpc submit, fetched by a program"; else fail "CLI submit $ID0"; diag <jc.out; fi

# ---- not finished yet: a clear state, nothing written
jc submit-sleep "$P" 3
ID2=$(cat jc.out)
jc fetch-count "$ID2" 0
if [ $jrc -eq 3 ] && grep -q '^error GRID_ERR_TIMEOUT: job .*test/sleep_count is still \(queued\|running\): fetch it again later' jc.out; then
  ok "fetch of an unfinished job: GRID_ERR_TIMEOUT naming its state"; else fail "pending fetch (rc $jrc)"; diag <jc.out; fi
timeout 30 "$CLI" fetch "$ID2" >cli.out 2>&1; rc=$?
if [ $rc -eq 1 ] && grep -q 'still \(queued\|running\)' cli.out; then ok "gridrpc fetch of an unfinished job exits 1"; else fail "CLI pending (rc $rc)"; diag <cli.out; fi
timeout 30 "$CLI" jobs "127.0.0.1:$P" >cli.out 2>&1
if grep -q "^127.0.0.1:$P/${ID2##*/} *test/sleep_count *\(queued\|running\) " cli.out && grep -q "^127.0.0.1:$P/${ID1##*/} *test/echo_double *done " cli.out; then
  ok "gridrpc jobs lists every job with its state"; else fail "jobs"; diag <cli.out; fi

# ---- SIGKILL while ID2 runs; restart on the same folder and port
stop
serve srv2.log "$P" --module "$TESTMOD" --job-dir "$T_TMP/jobs" || { fail "gridrpcd restarts"; finish; exit 1; }
if grep -q "job ${ID2##*/}: test/sleep_count runs again" srv2.log; then ok "the unfinished job runs again at restart"; else fail "no rerun"; diag <srv2.log; fi
jc fetch "$ID1" 5 0
if [ $jrc -eq 0 ] && grep -qx ok jc.out; then ok "a finished job is still fetchable after SIGKILL and restart"; else fail "fetch after restart (rc $jrc)"; diag <jc.out; fi
jc fetch-count "$ID2" 30
if [ $jrc -eq 0 ] && grep -qx 'count=1' jc.out; then ok "the rerun job's result comes from the restarted server"; else fail "rerun fetch (rc $jrc)"; diag <jc.out; fi

# ---- a job whose function is gone after a restart fails with its own error
jc submit-sleep "$P" 3
ID3=$(cat jc.out)
stop
serve srv3.log "$P" --module "$LINALG" --job-dir "$T_TMP/jobs" || { fail "gridrpcd restarts with linalg"; finish; exit 1; }
jc fetch-count "$ID3" 10
if [ $jrc -eq 3 ] && grep -q 'error GRID_ERR_NOT_FOUND: .*test/sleep_count is not served here any more' jc.out; then
  ok "a failed job's fetch gives its own error"; else fail "failed job (rc $jrc)"; diag <jc.out; fi
jc state "$ID3"
if grep -q '^failed GRID_ERR_NOT_FOUND test/sleep_count' jc.out; then ok "grid_job_state_np: failed with its code"; else fail "failed state"; diag <jc.out; fi
timeout 30 "$CLI" fetch "$ID3" >cli.out 2>&1; rc=$?
if [ $rc -eq 1 ] && grep -q 'test/sleep_count is not served here any more' cli.out; then ok "gridrpc fetch prints a failed job's error"; else fail "CLI failed job (rc $rc)"; diag <cli.out; fi

# ---- forget and unknown ids
timeout 30 "$CLI" forget "$ID1" >cli.out 2>&1; rc=$?
jc fetch "$ID1" 5 0
if [ $rc -eq 0 ] && [ $jrc -eq 3 ] && grep -q "error GRID_ERR_ARGS: job $ID1: no job ${ID1##*/} on this server" jc.out &&
  [ ! -e "$T_TMP/jobs/${ID1##*/}.submit" ] && [ ! -e "$T_TMP/jobs/${ID1##*/}.result" ]; then
  ok "forget deletes the job and its files"; else fail "forget (rc $rc/$jrc)"; diag <cli.out; diag <jc.out; fi
jc forget "127.0.0.1:$P/0123456789abcdef0123"
if [ $jrc -eq 3 ] && grep -q 'GRID_ERR_ARGS: .*no job 0123456789abcdef0123 on this server' jc.out; then ok "forget of an unknown job"; else fail "unknown forget"; diag <jc.out; fi
timeout 30 "$CLI" fetch "127.0.0.1:$P/nothex" >cli.out 2>&1; rc=$?
if [ $rc -eq 2 ] && grep -q "is not a job id" cli.out; then ok "a malformed id is a usage error"; else fail "bad id (rc $rc)"; diag <cli.out; fi
stop

# ---- --job-keep: a finished job is removed once it is older
serve srv4.log 0 --module "$TESTMOD" --job-dir "$T_TMP/jobs4" --job-keep 1s || { fail "gridrpcd --job-keep"; finish; exit 1; }
jc submit "$port" 2
ID4=$(cat jc.out)
jc fetch "$ID4" 2 10
r1=$jrc
if [ $r1 -eq 0 ] && wait_line srv4.log "job ${ID4##*/} expired"; then
  jc fetch "$ID4" 2 0
  if [ $jrc -eq 3 ] && grep -q 'GRID_ERR_ARGS' jc.out && [ -z "$(ls "$T_TMP/jobs4")" ]; then ok "--job-keep removes a finished job"; else fail "expired job still there (rc $jrc)"; diag <jc.out; fi
else
  fail "--job-keep 1s: no expiry (fetch rc $r1)"; diag <srv4.log
fi
stop

# ---- the default folder, and the options' checks
XDG_STATE_HOME="$T_TMP/state" serve srv5.log 0 --module "$TESTMOD" || { fail "gridrpcd without --job-dir"; finish; exit 1; }
# A server nobody submits to leaves nothing behind; the first SUBMIT makes the folder.
if [ ! -e "$T_TMP/state/gridrpc" ]; then ok "the default job folder waits for the first SUBMIT"; else fail "default job folder made at start-up"; fi
jc submit "$port" 2
if [ "$(stat -c %a "$T_TMP/state/gridrpc/jobs-$port" 2>/dev/null)" = 700 ] && ls "$T_TMP/state/gridrpc/jobs-$port" | grep -q '\.submit$'; then ok "default job folder \$XDG_STATE_HOME/gridrpc/jobs-PORT, 0700, made at the first SUBMIT"; else fail "no $T_TMP/state/gridrpc/jobs-$port (submit rc $jrc)"; diag <jc.out; diag <srv5.log; fi
stop
env -u XDG_STATE_HOME HOME="$T_TMP/home" "$GRIDRPCD" --host 127.0.0.1 --port 0 --module "$TESTMOD" >srv6.log.out 2>srv6.log &
pid=$!
port=$(listening_port srv6.log.out "$pid")
[ -n "$port" ] && jc submit "$port" 2
if [ -n "$port" ] && [ -d "$T_TMP/home/.local/state/gridrpc/jobs-$port" ]; then ok "without XDG_STATE_HOME: ~/.local/state/gridrpc/jobs-PORT"; else fail "HOME default"; diag <srv6.log; fi
stop
"$GRIDRPCD" --help >help.out 2>&1
if grep -q -- '--job-dir DIR' help.out && grep -q -- '--job-keep TIME' help.out; then ok "--help documents --job-dir and --job-keep"; else fail "--help"; fi
"$GRIDRPCD" --job-keep soon >bad.out 2>&1; rc=$?
if [ $rc -eq 2 ] && grep -q -- "--job-keep: 'soon'" bad.out; then ok "a bad --job-keep is a usage error"; else fail "--job-keep soon (rc $rc)"; diag <bad.out; fi
"$GRIDRPCD" --job-keep 0 >bad.out 2>&1; rc=$?
if [ $rc -eq 2 ] && grep -q -- "--job-keep: '0' must be more than 0" bad.out; then ok "--job-keep 0 is refused"; else fail "--job-keep 0 (rc $rc)"; diag <bad.out; fi
: >"$T_TMP/afile"
"$GRIDRPCD" --host 127.0.0.1 --port 0 --module "$TESTMOD" --job-dir "$T_TMP/afile/jobs" >bad.out 2>&1 &
pid=$!
_i=0; while kill -0 "$pid" 2>/dev/null && [ $_i -lt 100 ]; do sleep 0.1; _i=$((_i + 1)); done
stop
if grep -q "cannot create the job folder $T_TMP/afile/jobs: Not a directory (--job-dir)" bad.out; then ok "a job folder that cannot be made stops the server, naming it"; else fail "bad --job-dir"; diag <bad.out; fi
finish
