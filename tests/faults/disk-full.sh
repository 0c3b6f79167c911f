#!/usr/bin/env bash
# disk-full.sh: a full disk under the server. Its file-argument folder (TMPDIR: each
# call's scratch folder) and its two-phase job folder are on a 1 MiB tmpfs. A file
# argument larger than the room gets GRID_ERR_IO naming the full disk, the caller's OUT
# file is left as it was, no scratch folder stays behind, and the server goes on with
# the next call; an OUT file the caller's own (full) disk cannot hold gets GRID_ERR_IO
# and leaves the caller's old file whole; a two-phase job whose result no longer fits on the disk is still
# fetched whole and correct (the server keeps it in memory), with no partial file
# left in the job folder, and a SUBMIT the folder cannot keep is refused with
# GRID_ERR_IO naming it (more of that: tests/jobs-disk-full.sh).
# Root only (mount), skipped with 77 otherwise. About 5 s. TAP output.
. "$top_srcdir/tests/faults/lib.sh"
if [ "$(id -u)" != 0 ]; then echo "# SKIP: mounting a small tmpfs needs root"; rm -rf "$T_TMP"; exit 77; fi
small=$T_TMP/small
mkdir "$small"
if ! mount -t tmpfs -o size=1m,mode=0700 tmpfs "$small" 2>"$T_TMP/mount.err"; then
  echo "# SKIP: cannot mount a tmpfs here: $(cat "$T_TMP/mount.err")"; rm -rf "$T_TMP"; exit 77
fi
trap 'f_cleanup; umount "$small" "$T_TMP/mine" 2>/dev/null; rm -rf "$T_TMP"' EXIT
mkdir "$small/scratch"
TMPDIR=$small/scratch f_server srv --threads 2 --job-dir "$small/jobs" ||
  { fail "gridrpcd starts on the small disk"; finish; exit 1; }
ok "gridrpcd starts with its scratch and job folders on a 1 MiB tmpfs"
export GRIDRPC_SERVER=127.0.0.1:$srv_port GRIDRPC_TIMEOUT=60
cd "$T_TMP" || exit 1

# A 2 MiB file argument: it cannot be stored.
python3 -c "import sys; sys.stdout.write('abcdefghij\n' * 200000)" >big.txt
echo "keep me" >out.txt
timeout 60 "$FC" file big.txt out.txt >big.out 2>&1
if grep -q "^error GRID_ERR_IO: .*No space left on device (is the disk full?)" big.out; then
  ok "a file argument larger than the disk: GRID_ERR_IO naming the full disk"
else
  fail "a file argument on a full disk"; diag <big.out
fi
[ "$(cat out.txt)" = "keep me" ] && ok "the caller's OUT file is left as it was" ||
  { fail "the OUT file changed"; head -c 200 out.txt | diag; }
left=
for _ in $(seq 1 50); do
  left=$(ls "$small/scratch")
  [ -z "$left" ] && break
  sleep 0.1
done
[ -z "$left" ] && ok "no scratch folder is left on the disk" || { fail "left in the scratch folder: $left"; }
echo "hello disk" >small.txt
timeout 60 "$FC" file small.txt up.txt >small.out 2>&1
if grep -qx ok small.out && [ "$(cat up.txt)" = "HELLO DISK" ]; then
  ok "the server goes on: the next file call is correct"
else
  fail "a file call after the full disk"; diag <small.out
fi

# The caller's own disk is full: a 300 KB OUT file on a 128 KiB tmpfs. GRID_ERR_IO
# naming it, and the caller's old file stays whole (not half of the new one).
mkdir "$T_TMP/mine"
if mount -t tmpfs -o size=128k tmpfs "$T_TMP/mine" 2>/dev/null; then
  python3 -c "import sys; sys.stdout.write('0123456789abcdefghi\n' * 15000)" >mid.txt
  echo "my old results" >"$T_TMP/mine/res.txt"
  timeout 60 "$FC" file mid.txt "$T_TMP/mine/res.txt" >mine.out 2>&1
  if grep -q "^error GRID_ERR_IO: .*cannot write file '$T_TMP/mine/res.txt': No space left on device" mine.out; then
    ok "an OUT file the caller's disk cannot hold: GRID_ERR_IO naming it"
  else
    fail "an OUT file on the caller's full disk"; diag <mine.out
  fi
  if [ "$(cat "$T_TMP/mine/res.txt")" = "my old results" ] && [ "$(ls "$T_TMP/mine")" = res.txt ]; then
    ok "the caller's old file is left whole, and nothing else"
  else
    fail "the caller's file after a failed write"; ls -l "$T_TMP/mine" | diag; head -c 100 "$T_TMP/mine/res.txt" | diag
  fi
  umount "$T_TMP/mine"
else
  fail "cannot mount the caller's small tmpfs"
fi

# Two-phase: the SUBMIT fits, its result (320 KB) no longer does.
n=40000
avail=$(df --output=avail -k "$small" | tail -n 1)
dd if=/dev/zero of="$small/fill" bs=1024 count=$((avail - 500)) >/dev/null 2>&1
timeout 60 "$FC" submit $n 1 >submit.out 2>&1
id=$(head -n 1 submit.out)
case "$id" in
127.0.0.1:*) ok "a job is submitted with room for it but not for its result ($(df --output=avail -k "$small" | tail -n 1 | tr -d ' ') KiB left)" ;;
*) fail "submit"; diag <submit.out ;;
esac
timeout 60 "$FC" fetch "$id" $n 30 >fetch.out 2>&1
if grep -q '^ok pid=' fetch.out; then
  ok "its result is fetched whole and correct although the disk was full"
else
  fail "fetch of a job whose result did not fit"; diag <fetch.out
fi
if grep -q "its result cannot be kept on disk (.*No space left on device" "$T_TMP/srv.err"; then
  ok "the server says the result is kept in memory because the disk is full"
else
  fail "no log line about the full disk"; diag <"$T_TMP/srv.err"
fi
ls "$small/jobs" | grep -q '\.tmp$' && { fail "a partial file is left in the job folder"; ls -l "$small/jobs" | diag; } ||
  ok "no partial file is left in the job folder"
# Nothing left at all: SUBMIT itself is refused, naming the full job folder.
dd if=/dev/zero of="$small/fill2" bs=4096 >/dev/null 2>&1
timeout 60 "$FC" submit 1000 0 >full.out 2>&1
if grep -q "^error GRID_ERR_IO: .*the job folder $small/jobs is full (No space left on device)" full.out; then
  ok "a SUBMIT the full job folder cannot keep: GRID_ERR_IO naming it"
else
  fail "SUBMIT on a full job folder"; diag <full.out
fi
rm -f "$small/fill" "$small/fill2"
timeout 60 "$FC" calls 2 0 sync >after.out 2>&1
f_clean after.out 2 && [ "$(f_summary after.out ok)" = 2 ] && ok "plain calls still work" ||
  { fail "calls after the full disk"; diag <after.out; }
cd / && f_cleanup && umount "$small"
finish
