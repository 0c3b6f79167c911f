#!/bin/sh
# owners.sh: who may reach a two-phase job (issue 25, findings 2 and 3), against real
# gridrpcd on loopback. Without keys, client B (another session) cannot list, fetch, read
# (JOB_INFO), cancel or forget client A's job, and hears exactly what it would for an id
# that never existed; A, from other processes of its session, still does everything.
# With keys, the key id is the owner: the same session with another key reaches
# nothing, another session with the same key reaches the job. The job folder quota
# (--job-quota) refuses A's SUBMIT past it with GRID_ERR_LIMIT saying what to do, takes
# B's meanwhile, takes A's again after a forget, and still counts after a restart.
# Every wait is bounded; every server is killed on exit.
. "$top_srcdir/tests/lib.sh"
GRIDRPCD=${GRIDRPCD:-$top_builddir/gridrpcd}
CLI=${CLI:-$top_builddir/gridrpc}
JC=${JOBS_CLIENT:-$top_builddir/jobs-client}
TESTMOD=$top_builddir/stubs/.libs/test.so
for f in "$TESTMOD" "$JC"; do
  [ -f "$f" ] || { echo "1..0 # SKIP $f is not built (shared modules needed)"; rm -rf "$T_TMP"; exit 0; }
done
cd "$T_TMP" || exit 1
pid=
stop() { [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; [ -n "$pid" ] && wait "$pid" 2>/dev/null; pid=; }
trap 'stop' EXIT INT TERM
serve() {
  _log=$1; _p=$2; shift 2; : >"$_log.out"
  "$GRIDRPCD" --host 127.0.0.1 --port "$_p" --threads 2 --module "$TESTMOD" "$@" >"$_log.out" 2>"$_log" &
  pid=$!
  port=$(listening_port "$_log.out" "$pid") || { echo "# gridrpcd did not start"; diag <"$_log"; return 1; }
}
SA=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
SB=bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb
# as WHO CMD...: the CLI as client WHO (A or B: its session), bounded; output in cli.out.
as() { _s=$SA; [ "$1" = B ] && _s=$SB; shift; GRIDRPC_SESSION=$_s timeout 30 "$CLI" "$@" >cli.out 2>&1; rc=$?; }
# same_as_unknown FILE ID: FILE says exactly what unknown.out (the answer for a job that
# never existed, NOSUCH) says, with ID in its place.
NOSUCH=0123456789abcdef0123456789abcdef
same_as_unknown() { sed "s/$NOSUCH/$2/g" unknown.out | cmp -s - "$1"; }

# ---- the default session: one file, 0600, shared by the processes of one user
serve s1.log 0 --job-dir "$T_TMP/jobs1" || { fail "gridrpcd starts"; finish; exit 1; }
P=$port
timeout 30 "$CLI" --server "127.0.0.1:$P" submit test/echo_double 3 '[0,1.5,3]' >cli.out 2>&1
ID0=$(cat cli.out)
if [ "$(stat -c %a "$GRIDRPC_SESSION_FILE" 2>/dev/null)" = 600 ] && grep -qx '[0-9a-f]\{32\}' "$GRIDRPC_SESSION_FILE"; then
  ok "the session file is made 0600 with 128 random bits"; else fail "session file"; ls -l "$GRIDRPC_SESSION_FILE" | diag; fi
# Twenty processes of one user starting at once, with no session file yet: one makes
# it, every other reads it whole (none fails, no temporary file is left).
NS=$T_TMP/new-session/session
rpids=
for i in $(seq 1 20); do
  GRIDRPC_SESSION_FILE=$NS timeout 30 "$CLI" --server "127.0.0.1:$P" call test/null_call >"race$i.out" 2>&1 &
  rpids="$rpids $!"
done
wait $rpids
nok=$(for i in $(seq 1 20); do grep -L -i "error\|cannot\|session" "race$i.out"; done | wc -l)
if [ "$nok" = 20 ] && grep -qx '[0-9a-f]\{32\}' "$NS" && [ "$(ls "$T_TMP/new-session" | wc -l)" = 1 ]; then
  ok "20 processes making the session file at once all start, sharing one file"
else fail "session file race: $nok of 20 ok"; ls -la "$T_TMP/new-session" | diag; cat race*.out | diag; fi
timeout 30 "$JC" fetch "$ID0" 3 10 >jc.out 2>&1
if grep -qx ok jc.out; then ok "another process of the session (the library) fetches the CLI's job"; else fail "same-session fetch"; diag <jc.out; fi

# ---- no keys: A's job, B's attempts
as A --server "127.0.0.1:$P" submit test/echo_double 3 '[0,1.5,3]'
IDA=$(cat cli.out); HA=${IDA##*/}
case "$IDA" in 127.0.0.1:$P/????????????????????????????????) ok "A submits: $IDA" ;; *) fail "A submit: $IDA" ;; esac
as A fetch "$IDA" --wait 10
if [ $rc -eq 0 ] && grep -qx 'out = \[0, 1.5, 3\]' cli.out; then ok "A fetches its job"; else fail "A fetch (rc $rc)"; diag <cli.out; fi
as B jobs "127.0.0.1:$P"
if [ $rc -eq 0 ] && ! grep -q "$HA" cli.out && ! grep -q "${ID0##*/}" cli.out; then ok "B's jobs lists none of A's"; else fail "B lists A's jobs"; diag <cli.out; fi
as A jobs "127.0.0.1:$P"
if grep -q "$HA" cli.out; then ok "A's jobs lists it"; else fail "A's jobs"; diag <cli.out; fi
# grid_job_state_np asks JOB_INFO.
GRIDRPC_SESSION=$SB timeout 30 "$JC" state "$IDA" >jc.out 2>&1; jrc=$?
if [ $jrc -eq 3 ] && grep -q "^error GRID_ERR_ARGS: .*no job $HA" jc.out; then ok "B's JOB_INFO of A's job: no such job"; else fail "B JOB_INFO (rc $jrc)"; diag <jc.out; fi
for op in fetch cancel forget; do
  as B "$op" "127.0.0.1:$P/$NOSUCH"; cp cli.out unknown.out; urc=$rc
  as B "$op" "$IDA"
  if [ $rc -ne 0 ] && [ $rc -eq $urc ] && same_as_unknown cli.out "$HA"; then
    ok "B's $op of A's job: refused as for a job that never existed"
  else fail "B's $op of A's job (rc $rc)"; diag <cli.out; fi
done
as A fetch "$IDA"
if [ $rc -eq 0 ] && grep -qx 'out = \[0, 1.5, 3\]' cli.out; then ok "A's job is untouched by B's cancel and forget"; else fail "A refetch (rc $rc)"; diag <cli.out; fi
as A forget "$IDA"
if [ $rc -eq 0 ] && [ ! -e "$T_TMP/jobs1/$HA.submit" ] && [ ! -e "$T_TMP/jobs1/$HA.owner" ]; then ok "A forgets its job (files gone)"; else fail "A forget (rc $rc)"; diag <cli.out; fi
# A cancels its own job while it runs; B could not.
GRIDRPC_SESSION=$SA timeout 30 "$JC" submit-sleep "$P" 30 >jc.out 2>&1; IDS=$(cat jc.out)
as B cancel "$IDS"
b_rc=$rc
as A cancel "$IDS"
if [ $b_rc -ne 0 ] && [ $rc -eq 0 ]; then ok "A cancels its running job; B could not"; else fail "cancel (B rc $b_rc, A rc $rc)"; diag <cli.out; fi
stop

# ---- keys: the key id is the owner, not the session
"$CLI" keygen k1 >/dev/null && "$CLI" keygen k2 >/dev/null && "$CLI" keygen --role admin ka >/dev/null &&
  "$CLI" keygen --role client kc >/dev/null && (cat k1; cat k2; cat ka; cat kc) >k12 && chmod 600 k12
serve s2.log 0 --job-dir "$T_TMP/jobs2" --key-file k12 || { fail "gridrpcd --key-file starts"; finish; exit 1; }
P=$port
as A --key-file k1 --server "127.0.0.1:$P" submit test/echo_double 3 '[0,1.5,3]'
IDK=$(cat cli.out); HK=${IDK##*/}
as A --key-file k2 jobs "127.0.0.1:$P"
if [ $rc -eq 0 ] && ! grep -q "$HK" cli.out; then ok "the same session with another key does not list the job"; else fail "k2 lists k1's job"; diag <cli.out; fi
for op in fetch cancel forget; do
  as A --key-file k2 "$op" "127.0.0.1:$P/$NOSUCH"; cp cli.out unknown.out; urc=$rc
  as A --key-file k2 "$op" "$IDK"
  if [ $rc -ne 0 ] && [ $rc -eq $urc ] && same_as_unknown cli.out "$HK"; then
    ok "another key's $op: refused as for a job that never existed"
  else fail "another key's $op (rc $rc)"; diag <cli.out; fi
done
as B --key-file k1 fetch "$IDK" --wait 10
if [ $rc -eq 0 ] && grep -qx 'out = \[0, 1.5, 3\]' cli.out; then ok "another session with the same key fetches it (the key id owns it)"; else fail "same key fetch (rc $rc)"; diag <cli.out; fi
# An administrator (a key tagged admin) reaches every owner's jobs; a key tagged client
# is an owner like any other.
as B --key-file kc jobs "127.0.0.1:$P"
if [ $rc -eq 0 ] && ! grep -q "$HK" cli.out; then ok "a key tagged client does not list another key's job"; else fail "client-tagged key lists k1's job"; diag <cli.out; fi
GRIDRPC_KEY_FILE=kc GRIDRPC_SESSION=$SB timeout 30 "$JC" state "$IDK" >kc-info.out 2>&1; crc=$?
as B --key-file ka jobs "127.0.0.1:$P"
if [ $rc -eq 0 ] && grep -q "$HK" cli.out; then ok "an admin key lists another key's job"; else fail "admin jobs (rc $rc)"; diag <cli.out; fi
GRIDRPC_KEY_FILE=ka GRIDRPC_SESSION=$SB timeout 30 "$JC" state "$IDK" >cli.out 2>&1; rc=$?
if [ $rc -eq 0 ] && [ $crc -eq 3 ]; then ok "an admin key reads its JOB_INFO; the client-tagged key may not"; else fail "admin info (rc $rc, client-tagged rc $crc)"; diag <cli.out; diag <kc-info.out; fi
if grep -q "administrator (key" s2.log; then ok "the server logs the administrator's connection"; else fail "no administrator log line"; fi
stop

# ---- the job folder quota: A at its quota is refused, B is not, a forget makes room
serve s3.log 0 --job-dir "$T_TMP/jobs3" || { fail "gridrpcd starts"; finish; exit 1; }
P=$port
GRIDRPC_SESSION=$SA timeout 60 "$JC" submit "$P" 1000 >jc.out 2>&1; J=$(cat jc.out)
GRIDRPC_SESSION=$SA timeout 60 "$JC" fetch "$J" 1000 10 >/dev/null 2>&1
in=$(stat -c %s "$T_TMP/jobs3/${J##*/}.submit"); out=$(stat -c %s "$T_TMP/jobs3/${J##*/}.result")
stop
# Two finished jobs fit; a third SUBMIT would pass the quota by half its size.
Q=$((2 * (in + out) + in / 2))
serve s4.log 0 --job-dir "$T_TMP/jobs4" --job-quota "$Q" || { fail "gridrpcd --job-quota starts"; finish; exit 1; }
P=$port
jsub() { GRIDRPC_SESSION=$1 timeout 60 "$JC" submit "$P" 1000 >jc.out 2>&1; jrc=$?; }
jsub $SA; J1=$(cat jc.out); GRIDRPC_SESSION=$SA timeout 60 "$JC" fetch "$J1" 1000 10 >/dev/null 2>&1
jsub $SA; J2=$(cat jc.out); GRIDRPC_SESSION=$SA timeout 60 "$JC" fetch "$J2" 1000 10 >/dev/null 2>&1
jsub $SA
if [ $jrc -eq 3 ] && grep -q '^error GRID_ERR_LIMIT: .*quota.*forget' jc.out && ! grep -q "$Q" jc.out; then
  ok "A's SUBMIT past --job-quota $Q: GRID_ERR_LIMIT saying to forget jobs, no figures"
else fail "quota (rc $jrc)"; diag <jc.out; fi
if [ "$(ls "$T_TMP/jobs4" | grep -c '\.submit$')" = 2 ]; then ok "nothing was kept of the refused SUBMIT"; else fail "files"; ls "$T_TMP/jobs4" | diag; fi
jsub $SB
if [ $jrc -eq 0 ]; then ok "B's SUBMIT is taken meanwhile (the quota is per owner)"; else fail "B submit (rc $jrc)"; diag <jc.out; fi
# A restart reads the folder: A is still at its quota.
stop
serve s5.log "$P" --job-dir "$T_TMP/jobs4" --job-quota "$Q" || { fail "gridrpcd restarts"; finish; exit 1; }
jsub $SA
if [ $jrc -eq 3 ] && grep -q '^error GRID_ERR_LIMIT' jc.out; then ok "after a restart A is still at its quota"; else fail "quota after restart (rc $jrc)"; diag <jc.out; fi
GRIDRPC_SESSION=$SA timeout 30 "$CLI" forget "$J1" >cli.out 2>&1
jsub $SA
if [ $jrc -eq 0 ]; then ok "after A forgets a job, its SUBMIT is taken"; else fail "submit after forget (rc $jrc)"; diag <jc.out; fi
"$GRIDRPCD" --help >help.out 2>&1
if grep -q -- '--job-quota SIZE' help.out; then ok "--help documents --job-quota"; else fail "--help"; fi
"$GRIDRPCD" --job-quota 0 >bad.out 2>&1; brc=$?
if [ $brc -eq 2 ] && grep -q -- '--job-quota' bad.out; then ok "--job-quota 0 is a usage error"; else fail "--job-quota 0 (rc $brc)"; diag <bad.out; fi
stop
finish
