#!/bin/sh
# metaserver-cli.sh: gridmetad's command line as an administrator meets it: help,
# version, usage errors (exit 2, naming the option), the listening and http lines on
# port 0, the registry file created where --db says, exit 0 on SIGTERM and SIGINT, and
# a clear error for a registry it cannot open.
. "$top_srcdir/tests/lib.sh"
GRIDMETAD=${GRIDMETAD:-$top_builddir/gridmetad}
cd "$T_TMP" || exit 1

"$GRIDMETAD" --help >help.out 2>&1; rc=$?
missing=
for o in --host --port --db --scheduler --http --http-host --token --heartbeat --down-after \
  --max-connections --max-connections-per-address --io-timeout --idle-timeout --log-level --verbose \
  --quiet --help --version --insecure --token-file --http-allow-host; do
  grep -q -- "$o" help.out || missing="$missing $o"
done
if [ $rc -eq 0 ] && grep -q '^Usage: gridmetad' help.out && [ -z "$missing" ]; then ok "--help explains every option"; else fail "--help (rc $rc, missing:$missing)"; fi
"$GRIDMETAD" --version >ver.out 2>&1; rc=$?
if [ $rc -eq 0 ] && grep -q '^gridmetad (GridRPC) [0-9]' ver.out; then ok "--version"; else fail "--version"; diag <ver.out; fi

usage_error() {
  _name=$1; _want=$2; shift 2
  "$GRIDMETAD" "$@" >usage.out 2>&1; _rc=$?
  if [ $_rc -eq 2 ] && grep -q -- "$_want" usage.out; then ok "$_name"; else fail "$_name (rc $_rc)"; diag <usage.out; fi
}
usage_error "unknown option" "unknown option '--frobnicate'" --frobnicate
usage_error "a typo of an option names it" "unknown option '--schedular': did you mean --scheduler?" --schedular mct
usage_error "missing value" "--port needs a value" --port
usage_error "bad port" "--port: 'http' is not a TCP port" --port http
usage_error "bad http port" "--http: '70000' is not a TCP port" --http 70000
usage_error "bad scheduler" "--scheduler: 'fastest' is not mct, least-load or round-robin" --scheduler fastest
usage_error "bad heartbeat" "--heartbeat: '5x' is not a duration" --heartbeat 5x
usage_error "zero connections" "--max-connections: '0' must be at least 1" --max-connections 0
usage_error "bad idle timeout" "--idle-timeout: 'soon' is not a duration" --idle-timeout soon
usage_error "heartbeat in bare milliseconds" "--heartbeat: '1000' would be 1000 seconds: write 1000ms" --heartbeat 1000
usage_error "heartbeat too short" "--heartbeat: '1ms' must be from 10ms to 1h" --heartbeat 1ms
usage_error "zero down-after" "--down-after: '0' must be at least 1" --down-after 0
usage_error "bad log level" "--log-level: 'loud' is not error, warn, info or debug" --log-level loud
usage_error "flag with a value" "--quiet takes no value" --quiet=yes
usage_error "stray argument" "unexpected argument 'extra'" extra

# start OUT ARGS...: gridmetad in the background (pid in $mpid), waiting for its lines.
start() {
  _out=$1; shift
  "$GRIDMETAD" --port 0 "$@" >"$_out" 2>"$_out.err" &
  mpid=$!
  _i=0
  while [ $_i -lt 100 ]; do
    grep -q '^listening on ' "$_out" 2>/dev/null && return 0
    kill -0 $mpid 2>/dev/null || return 1
    sleep 0.1; _i=$((_i + 1))
  done
  return 1
}
stops_within() {
  _i=0
  while [ $_i -lt $(($2 * 10)) ]; do
    if ! kill -0 "$1" 2>/dev/null; then wait "$1"; src=$?; return 0; fi
    sleep 0.1; _i=$((_i + 1))
  done
  kill -9 "$1" 2>/dev/null; wait "$1"; src=killed
  return 1
}

mkdir run && cd run
if start ../l.out --http 0 && grep -Eq '^listening on 127\.0\.0\.1:[0-9]+$' ../l.out \
  && [ "$(sed -n 's/^listening on 127\.0\.0\.1://p' ../l.out)" -gt 0 ]; then
  ok "--port 0 prints 'listening on HOST:PORT' once ready"
else
  fail "--port 0 listening line"; diag <../l.out; diag <../l.out.err
fi
_i=0; while [ $_i -lt 50 ] && ! grep -q '^http on ' ../l.out; do sleep 0.1; _i=$((_i + 1)); done
if grep -Eq '^http on 127\.0\.0\.1:[1-9][0-9]*$' ../l.out; then ok "--http 0 prints 'http on HOST:PORT' (loopback)"; else fail "http line"; diag <../l.out; fi
if [ -f gridmetad.db ]; then ok "the registry defaults to gridmetad.db in the current directory"; else fail "no gridmetad.db"; ls | diag; fi
kill -TERM $mpid
if stops_within $mpid 5 && [ "$src" = 0 ] && grep -q 'SIGTERM received' ../l.out.err; then ok "SIGTERM: exit 0 promptly"; else fail "SIGTERM (status $src)"; diag <../l.out.err; fi
cd ..

if start i.out --db ':memory:' --scheduler least-load -v; then
  kill -INT $mpid
  if stops_within $mpid 5 && [ "$src" = 0 ]; then ok "SIGINT: exit 0 (--db :memory:)"; else fail "SIGINT (status $src)"; diag <i.out.err; fi
else
  fail "start with --db :memory:"; diag <i.out.err
fi
if grep -q 'scheduler least-load' i.out.err; then ok "--scheduler is in effect (logged)"; else fail "--scheduler not logged"; diag <i.out.err; fi

"$GRIDMETAD" --port 0 --db "$T_TMP/no/such/dir/x.db" >nodb.out 2>&1; rc=$?
if [ $rc -eq 1 ] && grep -q "no/such/dir/x.db: cannot open the registry" nodb.out; then ok "a registry that cannot be opened: exit 1, naming the file"; else fail "bad --db (rc $rc)"; diag <nodb.out; fi

echo "not a database, just text that is long enough to be read as a header......................................" >bad.db
"$GRIDMETAD" --port 0 --db bad.db >bad.out 2>&1; rc=$?
if [ $rc -eq 1 ] && grep -q "bad.db" bad.out; then ok "a file that is not a registry: exit 1, naming it"; else fail "not a db (rc $rc)"; diag <bad.out; fi

finish
