#!/bin/sh
# jobs-disk-full.sh: a full job folder refuses SUBMIT with GRID_ERR_IO naming the folder
# and what to do, leaves no partial file, loses no job it had accepted, and the server
# keeps serving calls and fetches. The folder is a small tmpfs mounted here (root only;
# skipped with status 77 otherwise), unmounted on exit.
. "$top_srcdir/tests/lib.sh"
GRIDRPCD=${GRIDRPCD:-$top_builddir/gridrpcd}
CLI=${CLI:-$top_builddir/gridrpc}
JC=${JOBS_CLIENT:-$top_builddir/jobs-client}
TESTMOD=$top_builddir/stubs/.libs/test.so
if [ "$(id -u)" != 0 ]; then echo "# SKIP: mounting a small tmpfs for --job-dir needs root"; rm -rf "$T_TMP"; exit 77; fi
[ -f "$TESTMOD" ] && [ -f "$JC" ] || { echo "# SKIP: test.so or jobs-client not built"; rm -rf "$T_TMP"; exit 77; }
cd "$T_TMP" || exit 1
mkdir small
if ! mount -t tmpfs -o size=128k,mode=0700 tmpfs "$T_TMP/small" 2>mount.err; then
  echo "# SKIP: cannot mount a tmpfs here: $(cat mount.err)"; rm -rf "$T_TMP"; exit 77
fi
pid=
cleanup() {
  [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  umount "$T_TMP/small" 2>/dev/null
}
trap cleanup EXIT INT TERM
"$GRIDRPCD" --host 127.0.0.1 --port 0 --threads 2 --module "$TESTMOD" --job-dir "$T_TMP/small/jobs" \
  >srv.out 2>srv.log &
pid=$!
P=$(listening_port srv.out "$pid") || { fail "gridrpcd starts"; diag <srv.log; finish; exit 1; }
ok "gridrpcd starts on a tmpfs job folder"

timeout 60 "$JC" submit "$P" 4 >jc.out 2>&1
ID=$(cat jc.out)
case "$ID" in 127.0.0.1:*) ok "a job is accepted while there is room" ;; *) fail "first submit"; diag <jc.out ;; esac
# Fill the folder's file system to the last block.
dd if=/dev/zero of="$T_TMP/small/fill" bs=4096 >/dev/null 2>&1
timeout 60 "$JC" submit "$P" 4 >jc.out 2>&1; rc=$?
if [ $rc -eq 3 ] && grep -q "^error GRID_ERR_IO: .*the job folder $T_TMP/small/jobs is full (No space left on device): the job was not accepted; free space there" jc.out; then
  ok "a full disk refuses SUBMIT with GRID_ERR_IO naming the folder"; else fail "full disk submit (rc $rc)"; diag <jc.out; fi
if [ -z "$(ls "$T_TMP/small/jobs" | grep -v -e "^${ID##*/}\.submit$" -e "^${ID##*/}\.result$" -e "^${ID##*/}\.owner$")" ]; then
  ok "nothing of the refused job is left in the folder"; else fail "leftovers"; ls -l "$T_TMP/small/jobs" | diag; fi
timeout 30 "$CLI" --server "127.0.0.1:$P" call test/echo_double 2 '[1,2]' >cli.out 2>&1; rc=$?
if [ $rc -eq 0 ] && grep -qx 'out = \[1, 2\]' cli.out; then ok "the server keeps serving calls"; else fail "call after refusal (rc $rc)"; diag <cli.out; fi
timeout 60 "$JC" fetch "$ID" 4 10 >jc.out 2>&1; rc=$?
if [ $rc -eq 0 ] && grep -qx ok jc.out; then ok "the job accepted before is still fetchable"; else fail "fetch (rc $rc)"; diag <jc.out; fi
if grep -q "SUBMIT of test/echo_double refused: the job folder" srv.log; then ok "the refusal is logged"; else fail "no log line"; diag <srv.log; fi
rm -f "$T_TMP/small/fill"
timeout 60 "$JC" submit "$P" 4 >jc.out 2>&1; rc=$?
if [ $rc -eq 0 ]; then ok "with room again, SUBMIT is accepted"; else fail "submit after freeing (rc $rc)"; diag <jc.out; fi
finish
