#!/bin/sh
# tap-wrap.sh: runs one test program (or test script) under a time limit and speaks TAP
# for it, so that automake's TAP driver counts test cases one by one:
#  - GoogleTest programs: one line per test case;
#  - programs and scripts that print TAP ("ok N ...", "not ok N ...", "1..N"): their
#    own lines, renumbered in order, with the plan recomputed (a crash or a time-out
#    adds one failing line, so a half-run program never passes);
#  - anything else: one test, judged by its exit status (77: skipped).
# Time limit: GRIDRPC_TEST_TIMEOUT seconds per program (default 300; python's run.sh
# 1200, as pytest has its own 900 s limit inside), or GRIDRPC_TEST_TIMEOUT_<name> for one
# program (<name>: its file name with every other character than [A-Za-z0-9] as _, e.g.
# GRIDRPC_TEST_TIMEOUT_call_test=600). The program runs in a process group of its own
# (setsid); at the limit the whole group (servers it started too) gets SIGTERM, then
# SIGKILL 5 s later, and a "not ok ... timed out after N s" line names the program (and
# the GoogleTest case that was running). The group is also killed after a normal exit,
# so no stray server outlives its test.
prog=$1
shift
name=$(basename "$prog")
var=GRIDRPC_TEST_TIMEOUT_$(printf '%s' "$name" | tr -c 'A-Za-z0-9' '_')
eval "limit=\${$var:-}"
if [ -z "$limit" ]; then
  case "$prog" in
  */python/tests/run.sh) limit=${GRIDRPC_TEST_TIMEOUT:-1200} ;;
  *) limit=${GRIDRPC_TEST_TIMEOUT:-300} ;;
  esac
fi
case "$limit" in
'' | *[!0-9]*) echo "1..1"; echo "not ok 1 $name: bad time limit '$limit' ($var / GRIDRPC_TEST_TIMEOUT)"; exit 1 ;;
esac

t_start=$(date +%s)
out=$(mktemp "${TMPDIR:-/tmp}/tap-wrap.XXXXXX")
mark=$out.timeout
case "$prog" in
*.sh) set -- "${SHELL:-/bin/sh}" "$prog" "$@" ;;
*) set -- "$prog" "$@" ;;
esac
if command -v setsid >/dev/null 2>&1; then
  # In a non-interactive shell a background job is not a group leader, so setsid execs
  # the program itself: $! is its pid and its process group id.
  setsid "$@" >"$out" 2>&1 </dev/null &
  grouped=1
else
  "$@" >"$out" 2>&1 </dev/null &
  grouped=0
fi
pid=$!
killall_() { # killall_ SIGNAL: the program's group (or the program alone)
  if [ "$grouped" -eq 1 ]; then kill "-$1" "-$pid" 2>/dev/null; else kill "-$1" "$pid" 2>/dev/null; fi
}
(
  t=0
  while kill -0 "$pid" 2>/dev/null; do
    if [ "$t" -ge "$limit" ]; then
      : >"$mark"
      killall_ TERM
      s=0
      while kill -0 "$pid" 2>/dev/null && [ "$s" -lt 5 ]; do sleep 1; s=$((s + 1)); done
      killall_ KILL
      exit 0
    fi
    sleep 1
    t=$((t + 1))
  done
) >/dev/null 2>&1 </dev/null &
watchdog=$!
wait "$pid"
rc=$?
kill "$watchdog" 2>/dev/null
wait "$watchdog" 2>/dev/null
killall_ KILL # whatever the program left behind
timed_out=0
[ -f "$mark" ] && timed_out=1
rm -f "$mark"
to_msg="$name: timed out after $limit s ($var or GRIDRPC_TEST_TIMEOUT sets the limit); its process group was killed"

if grep -q '^\[==========\] Running' "$out"; then
  awk -v rc="$rc" -v to="$timed_out" -v tomsg="$to_msg" '
    /^\[ RUN      \]/ { name = $4; running[name] = 1; order[++n] = name; next }
    /^\[       OK \]/ { res[$4] = "ok"; next }
    /^\[  FAILED  \] [^ ]+[ ,]/ { nm = $4; sub(/,$/, "", nm); if (nm in running) res[nm] = "not ok"; next }
    /^\[  SKIPPED \] [^ ]+ \(/ { res[$4] = "skip"; next }
    { lines[n] = lines[n] "\n# " $0 }
    END {
      extra = (to == 1) || (n == 0 && rc != 0)
      print "1.." n + extra
      for (i = 1; i <= n; i++) {
        nm = order[i]; r = res[nm]
        if (r == "") { r = "not ok"; if (to == 1) lines[i] = lines[i] "\n# timed out in this test case" }
        if (r == "skip") print "ok " i " " nm " # SKIP"
        else print r " " i " " nm
        if (r == "not ok") printf "%s\n", lines[i]
      }
      if (to == 1) print "not ok " n + 1 " " tomsg
      else if (n == 0 && rc != 0) print "not ok 1 no test ran"
    }' "$out"
  if [ "$rc" -ne 0 ] && ! grep -q '^\[  FAILED  \]' "$out"; then
    echo "# exit status $rc"
    sed 's/^/# /' "$out" | tail -40
  fi
elif grep -Eq '^(ok|not ok)( |$)|^1\.\.[0-9]' "$out"; then
  # A TAP producer: keep its results and comments, number them in order, and put the plan
  # last. "1..0 # SKIP why" with no results stays as it is.
  awk -v rc="$rc" -v to="$timed_out" -v tomsg="$to_msg" -v prog="$name" '
    /^1\.\.[0-9]+/ { plan = $0; planned = $1; sub(/^1\.\./, "", planned); next }
    /^(ok|not ok)( |$)/ {
      bad = ($1 == "not")
      line = $0
      sub(/^(ok|not ok) *[0-9]* */, "", line)
      n++
      if (bad) { failed++; print "not ok " n " " line } else print "ok " n " " line
      next
    }
    /^Bail out!/ { print; next }
    { print (substr($0, 1, 1) == "#" ? $0 : "# " $0) }
    END {
      if (n == 0 && to != 1 && plan ~ /^1\.\.0/ && rc == 0) { print plan; exit }
      if (to == 1) { n++; print "not ok " n " " tomsg }
      else if (rc != 0 && rc != 77 && failed == 0) { n++; print "not ok " n " " prog ": exit status " rc " after " n - 1 " passing results" }
      else if (planned != "" && planned + 0 != n && failed == 0) { n++; print "not ok " n " " prog ": planned " planned " results, printed " n - 1 }
      print "1.." n
    }' "$out"
else
  sed 's/^/# /' "$out"
  echo "1..1"
  if [ "$timed_out" -eq 1 ]; then echo "not ok 1 $to_msg"
  elif [ "$rc" -eq 0 ]; then echo "ok 1 $name"
  elif [ "$rc" -eq 77 ]; then echo "ok 1 $name # SKIP"
  else echo "not ok 1 $name (exit status $rc)"; fi
fi
rm -f "$out"
# How long it took, in its log: what a slow tier is made of (grep '^# took' tests/*.log).
echo "# took $(($(date +%s) - t_start)) s: $name"
exit 0
