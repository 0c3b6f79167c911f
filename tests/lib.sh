# lib.sh: helpers for the TAP test scripts (sourced). Each script calls plan N once it
# knows its count, then ok/fail for each check.
t_n=0
t_failed=0
ok() { t_n=$((t_n + 1)); echo "ok $t_n $*"; }
fail() { t_n=$((t_n + 1)); t_failed=$((t_failed + 1)); echo "not ok $t_n $*"; }
# check NAME CMD...: runs CMD, ok if it succeeds.
check() {
  _cname=$1; shift
  if "$@" >"$T_TMP/check.out" 2>&1; then ok "$_cname"; else fail "$_cname"; sed 's/^/# /' "$T_TMP/check.out"; fi
}
diag() { sed 's/^/# /'; }
# t_run RC CMD...: runs CMD, stdout to ./out, stderr to ./err (in the current folder);
# true when its status ($rc) is RC.
t_run() {
  _want=$1; shift
  "$@" >out 2>err; rc=$?
  [ "$rc" -eq "$_want" ]
}
# t_expect NAME RC TEXT CMD...: ok when CMD's status is RC and TEXT (a fixed string) is
# in its stdout or stderr.
t_expect() {
  _name=$1; _want=$2; _text=$3; shift 3
  if t_run "$_want" "$@" && cat out err | grep -qF -- "$_text"; then ok "$_name"; else
    fail "$_name (rc $rc, want $_want and '$_text')"; diag <out; diag <err
  fi
}
finish() { echo "1..$t_n"; rm -rf "$T_TMP"; [ "$t_failed" -eq 0 ]; }
: "${top_srcdir:?run through make check (top_srcdir unset)}"
: "${top_builddir:?run through make check (top_builddir unset)}"
IDLC=${IDLC:-$top_builddir/idlc/idlc}
GRIDRPC_DESC=${GRIDRPC_DESC:-$top_builddir/gridrpc-desc}
CC=${CC:-cc}
T_TMP=$(mktemp -d "${TMPDIR:-/tmp}/gridrpc-test.XXXXXX")
# The clients' session (who owns their jobs and objects): this test's own, shared by its
# processes as a user's are, and never the home folder's.
export GRIDRPC_SESSION_FILE="$T_TMP/session"
unset GRIDRPC_SESSION

# wait_line FILE REGEX [TENTHS]: up to TENTHS/10 s (default 10 s) for a line matching
# REGEX to appear in FILE.
wait_line() {
  _wl=0
  while [ $_wl -lt "${3:-100}" ]; do
    grep -q "$2" "$1" 2>/dev/null && return 0
    sleep 0.1; _wl=$((_wl + 1))
  done
  return 1
}

# listening_port FILE PID: up to 10 s, while PID lives, for FILE's "listening on
# HOST:PORT" line; prints PORT (nothing when it never came).
listening_port() {
  _lp=0
  while [ $_lp -lt 200 ]; do
    _port=$(sed -n 's/^listening on .*:\([0-9][0-9]*\)$/\1/p' "$1" | head -n 1)
    [ -n "$_port" ] && { echo "$_port"; return 0; }
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.05; _lp=$((_lp + 1))
  done
  return 1
}
