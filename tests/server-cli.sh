#!/bin/sh
# server-cli.sh: gridrpcd's command line as an administrator meets it: help, version,
# usage errors (exit 2, naming the option), the listening line on --port 0, a prompt
# exit 0 on SIGTERM and SIGINT, and clear errors for modules that are missing, are not
# GridRPC modules, were built for another stub ABI, or carry a broken descriptor.
. "$top_srcdir/tests/lib.sh"
GRIDRPCD=${GRIDRPCD:-$top_builddir/gridrpcd}
cd "$T_TMP" || exit 1
mkdir empty

"$GRIDRPCD" --help >help.out 2>&1; rc=$?
missing=
for o in --module --module-dir --default-modules --host --port --threads --mode --queue --token --max-message --max-array \
  --max-head --io-timeout --shutdown-timeout --log-level --quiet --help --version \
  --metaserver --advertise --name --speed --metaserver-token --data-memory --data-grace --data-lease \
  --idle-timeout --max-connections --max-connections-per-address --max-calls-per-connection --max-calls \
  --max-call-memory --max-objects-per-connection --max-object-processes --max-sessions-per-connection \
  --insecure --token-file --metaserver-token-file; do
  grep -q -- "$o" help.out || missing="$missing $o"
done
if [ $rc -eq 0 ] && grep -q '^Usage: gridrpcd' help.out && [ -z "$missing" ]; then ok "--help explains every option"; else fail "--help (rc $rc, missing:$missing)"; fi
"$GRIDRPCD" --version >ver.out 2>&1; rc=$?
if [ $rc -eq 0 ] && grep -q '^gridrpcd (GridRPC) [0-9]' ver.out; then ok "--version"; else fail "--version"; diag <ver.out; fi

# usage_error NAME EXPECTED-TEXT ARGS...: exit status 2 and a message naming the option.
usage_error() {
  _name=$1; _want=$2; shift 2
  "$GRIDRPCD" "$@" >usage.out 2>&1; _rc=$?
  if [ $_rc -eq 2 ] && grep -q -- "$_want" usage.out; then ok "$_name"; else fail "$_name (rc $_rc)"; diag <usage.out; fi
}
usage_error "unknown option" "unknown option '--frobnicate'" --frobnicate
if grep -q "did you mean" usage.out; then fail "a far word gets no 'did you mean'"; diag <usage.out; else ok "a far word gets no 'did you mean'"; fi
usage_error "a typo of an option names it" "unknown option '--threds': did you mean --threads?" --threds 2
usage_error "a typo with its value" "unknown option '--max-conections': did you mean --max-connections?" --max-conections=5
usage_error "missing value" "--port needs a value" --port
usage_error "bad port" "--port: 'http' is not a TCP port: write a number from 0 to 65535" --port http
usage_error "port out of range" "--port: '70000' is not a TCP port" --port 70000
usage_error "port one past the top" "--port: '65536' is not a TCP port" --port=65536
usage_error "bad mode" "--mode: 'fork' is not pool or thread" --mode fork
usage_error "bad queue" "--queue: 'lifo' is not fcfs or sjf" --queue=lifo
usage_error "zero threads" "--threads: '0' must be at least 1" --threads 0
usage_error "bad size" "--max-array: '12Q' is not a size: write bytes (4096) or a whole number and K, M, G or T" --max-array 12Q
usage_error "size over a limit" "--max-head: '4G' is too large: at most 4294967295 bytes" --max-head 4G
usage_error "size past 2^64" "--max-message: '16777216T' is too large" --max-message 16777216T
usage_error "negative timeout" "--io-timeout: '-1' is not a duration" --io-timeout -1
usage_error "bad timeout unit" "gridrpcd: --io-timeout: '5x' is not a duration: write seconds (30, 0.5) or a number and a unit: ms, s, m, h or d (250ms, 30s, 2m, 1h)" --io-timeout 5x
usage_error "bad shutdown timeout" "--shutdown-timeout: 'soon' is not a duration" --shutdown-timeout=soon
usage_error "flag with a value" "--quiet takes no value" --quiet=yes
usage_error "ambiguous abbreviation" "option '--qu' is ambiguous: --queue, --quiet" --qu
if grep -q "did you mean" usage.out; then fail "an ambiguous abbreviation gets no 'did you mean'"; diag <usage.out; else ok "an ambiguous abbreviation gets no 'did you mean'"; fi
usage_error "bad log level" "--log-level: 'loud' is not error, warn, info or debug" --log-level loud
usage_error "stray argument" "unexpected argument 'test.so'" test.so
usage_error "metaserver without a port" "--metaserver: 'meta.example' is not HOST:PORT: the port is missing" --metaserver meta.example
usage_error "metaserver port 0" "'0' is not a TCP port: write a number from 1 to 65535" --metaserver meta.example:0
usage_error "bad advertise" "--advertise: '::1:7000' is not HOST:PORT" --metaserver m:1 --advertise ::1:7000
usage_error "bad speed" "--speed: '2x' is not a speed: write flops per second" --metaserver m:1 --speed 2x
usage_error "zero speed" "--speed: '0' is not a speed" --metaserver m:1 --speed 0
usage_error "empty name" "--name: empty name" --metaserver m:1 --name ''
usage_error "zero data memory" "--data-memory: '0' must be at least 1" --data-memory 0
usage_error "zero connections" "--max-connections-per-address: '0' must be at least 1" --max-connections-per-address 0
usage_error "bad idle timeout" "--idle-timeout: 'soon' is not a duration" --idle-timeout soon
usage_error "bad call memory" "--max-call-memory: 'lots' is not a size" --max-call-memory lots
usage_error "bad data memory" "--data-memory: 'lots' is not a size" --data-memory lots
usage_error "zero data grace" "--data-grace: '0' must be more than 0" --data-grace 0
usage_error "bad data lease" "--data-lease: 'forever' is not a duration" --data-lease forever
usage_error "advertise alone" "--advertise, --name, --speed and --metaserver-token need --metaserver HOST:PORT" --advertise h:1

# start_server OUT ARGS...: starts gridrpcd in the background (pid in $spid) and waits
# for its listening line in OUT.
start_server() {
  _out=$1; shift
  "$GRIDRPCD" --host 127.0.0.1 --port 0 --module-dir "$T_TMP/empty" "$@" >"$_out" 2>"$_out.err" &
  spid=$!
  listening_port "$_out" $spid >/dev/null
}
# stops_within PID SECONDS: waits for PID to exit; its status in $src.
stops_within() {
  _i=0
  while [ $_i -lt $(($2 * 10)) ]; do
    if ! kill -0 "$1" 2>/dev/null; then wait "$1"; src=$?; return 0; fi
    sleep 0.1; _i=$((_i + 1))
  done
  kill -9 "$1" 2>/dev/null; wait "$1"; src=killed
  return 1
}

if start_server port0.out && grep -Eq '^listening on 127\.0\.0\.1:[0-9]+$' port0.out \
  && [ "$(sed -n 's/^listening on 127\.0\.0\.1://p' port0.out)" -gt 0 ]; then
  ok "--port 0 prints 'listening on HOST:PORT' once ready"
else
  fail "--port 0 listening line"; diag <port0.out; diag <port0.out.err
fi
kill -TERM $spid
if stops_within $spid 5 && [ "$src" = 0 ]; then ok "SIGTERM: exit 0 promptly"; else fail "SIGTERM (status $src)"; diag <port0.out.err; fi

start_server int.out --threads 1 --mode thread --queue sjf --log-level debug
kill -INT $spid
if stops_within $spid 5 && [ "$src" = 0 ]; then ok "SIGINT: exit 0 promptly"; else fail "SIGINT (status $src)"; diag <int.out.err; fi

# Durations and sizes take units, as in the configuration files: the shutdown message
# shows 2m as 120 s.
if start_server units.out --io-timeout 2m --shutdown-timeout=2m --max-message 16MiB --max-array 1G --max-head 64K; then
  kill -TERM $spid
  if stops_within $spid 5 && [ "$src" = 0 ] && grep -q 'shutting down (at most 120 s for running calls)' units.out.err; then
    ok "--io-timeout 2m, --shutdown-timeout=2m (120 s), sizes with units"
  else
    fail "durations with units (status $src)"; diag <units.out.err
  fi
else
  fail "durations with units: the server did not start"; diag <units.out.err
fi

# A port already in use is a clear error.
if start_server busy1.out; then
  port=$(sed -n 's/^listening on 127\.0\.0\.1://p' busy1.out)
  "$GRIDRPCD" --host 127.0.0.1 --port "$port" --module-dir "$T_TMP/empty" >busy2.out 2>&1; rc=$?
  if [ $rc -eq 1 ] && grep -q "cannot listen on 127.0.0.1:$port" busy2.out; then ok "a port in use is a clear error"; else fail "port in use (rc $rc)"; diag <busy2.out; fi
  kill -TERM $spid; stops_within $spid 5
else
  fail "a port in use (first server did not start)"
fi

# ---- modules that cannot be served
"$GRIDRPCD" --port 0 --module "$T_TMP/nonexistent.so" >nofile.out 2>&1; rc=$?
if [ $rc -eq 1 ] && grep -q "cannot load module '$T_TMP/nonexistent.so'" nofile.out; then ok "a missing module is a clear error"; else fail "missing module (rc $rc)"; diag <nofile.out; fi
printf 'not an ELF file\n' >text.so
"$GRIDRPCD" --port 0 --module "$T_TMP/text.so" >text.out 2>&1; rc=$?
if [ $rc -eq 1 ] && grep -q "cannot load module '$T_TMP/text.so'" text.out; then ok "a file that is no shared object is a clear error"; else fail "not a shared object (rc $rc)"; diag <text.out; fi
"$GRIDRPCD" --port 0 --module-dir "$T_TMP/nonexistent" >nodir.out 2>&1; rc=$?
if [ $rc -eq 1 ] && grep -q "cannot read module directory '$T_TMP/nonexistent'" nodir.out; then ok "a missing --module-dir is a clear error"; else fail "missing --module-dir (rc $rc)"; diag <nodir.out; fi

# fake_module NAME C-BODY: builds NAME.so from a C file that includes gridrpc_stub.h.
fake_module() {
  { echo '#include "gridrpc_stub.h"'; echo "$2"; } >"$1.c"
  # shellcheck disable=SC2086
  $CC $STUB_CPPFLAGS -I"$top_srcdir/include" -fPIC -shared -o "$1.so" "$1.c" >"$1.cc.out" 2>&1
}
if fake_module plain 'int plain_answer(void); int plain_answer(void) { return 42; }'; then
  "$GRIDRPCD" --port 0 --module "$T_TMP/plain.so" >plain.out 2>&1; rc=$?
  if [ $rc -eq 1 ] && grep -q "'$T_TMP/plain.so' is not a GridRPC module" plain.out; then ok "a shared object that is not a GridRPC module"; else fail "not a GridRPC module (rc $rc)"; diag <plain.out; fi
else
  fail "cannot compile a plain shared object"; diag <plain.cc.out
fi
if fake_module abi '
static const gridrpc_stub_module m = {99, "abi", "abi.idl", 0, 0};
const gridrpc_stub_module *gridrpc_stub_entry(void);
const gridrpc_stub_module *gridrpc_stub_entry(void) { return &m; }'; then
  "$GRIDRPCD" --port 0 --module "$T_TMP/abi.so" >abi.out 2>&1; rc=$?
  if [ $rc -eq 1 ] && grep -q "module '$T_TMP/abi.so' was built for stub ABI 99" abi.out; then ok "a module of another ABI is refused"; else fail "ABI mismatch (rc $rc)"; diag <abi.out; fi
else
  fail "cannot compile the ABI module"; diag <abi.cc.out
fi
if fake_module baddesc '
static const unsigned char d[] = {0x47, 0x52, 0x44, 0x53, 0, 0, 0, 1, 1, 2, 3};
static void inv(void **a) { (void)a; }
static const gridrpc_stub_function f[] = {{"f", d, sizeof d, inv}};
static const gridrpc_stub_module m = {GRIDRPC_STUB_ABI, "baddesc", "baddesc.idl", 1, f};
const gridrpc_stub_module *gridrpc_stub_entry(void);
const gridrpc_stub_module *gridrpc_stub_entry(void) { return &m; }'; then
  "$GRIDRPCD" --port 0 --module "$T_TMP/baddesc.so" >baddesc.out 2>&1; rc=$?
  if [ $rc -eq 1 ] && grep -q "module '$T_TMP/baddesc.so': the descriptor of 'f' does not decode" baddesc.out; then ok "a module whose descriptor does not decode is refused"; else fail "bad descriptor (rc $rc)"; diag <baddesc.out; fi
  # In a --module-dir a bad module is reported, named and skipped; the server starts.
  mkdir mods && cp baddesc.so mods/
  if start_server dir.out --module-dir "$T_TMP/mods" && grep -q "baddesc.so.*(skipped)" dir.out.err; then
    ok "a bad module in --module-dir is named and skipped"
  else
    fail "bad module in --module-dir"; diag <dir.out.err
  fi
  kill -TERM $spid; stops_within $spid 5
else
  fail "cannot compile the bad-descriptor module"; diag <baddesc.cc.out
fi
# ---- which modules load: --module X serves X alone; the defaults (the configured
# directory and GRIDRPC_MODULE_PATH) only without --module/--module-dir or with
# --default-modules. The log counts functions in good English.
GRIDRPC_MODULE="$top_builddir/scripts/gridrpc-module"
mkdir -p sel/one sel/two
printf 'Module one;\nDefine f() "one function" { }\n' >sel/one.idl
printf 'Module two;\nDefine g() "first" { }\nDefine h() "second" { }\n' >sel/two.idl
if IDLC=$IDLC GRIDRPC_INCLUDE="$top_srcdir/include" CC=$CC "$GRIDRPC_MODULE" -o sel/one/one.so sel/one.idl >sel.out 2>&1 \
  && IDLC=$IDLC GRIDRPC_INCLUDE="$top_srcdir/include" CC=$CC "$GRIDRPC_MODULE" -o sel/two/two.so sel/two.idl >>sel.out 2>&1; then
  # start_bare OUT ARGS...: like start_server, without its --module-dir.
  start_bare() {
    _out=$1; shift
    "$GRIDRPCD" --host 127.0.0.1 --port 0 "$@" >"$_out" 2>"$_out.err" &
    spid=$!
    listening_port "$_out" $spid >/dev/null
  }
  if GRIDRPC_MODULE_PATH="$T_TMP/sel/two" start_bare just.out --module "$T_TMP/sel/one/one.so"; then
    if grep -q "loaded module 'one' (1 function) from" just.out.err && ! grep -q "module 'two'" just.out.err \
      && grep -q 'GRIDRPC_MODULE_PATH not searched: --module or --module-dir name the modules' just.out.err \
      && grep -q 'listening on 127.0.0.1:[0-9]*: 1 function,' just.out.err; then
      ok "--module X loads X alone (1 function), and says GRIDRPC_MODULE_PATH was not searched"
    else
      fail "--module X alone"; diag <just.out.err
    fi
  else
    fail "--module X alone: the server did not start"; diag <just.out.err
  fi
  kill -TERM $spid; stops_within $spid 5
  if GRIDRPC_MODULE_PATH="$T_TMP/sel/two" start_bare both.out --module "$T_TMP/sel/one/one.so" --default-modules; then
    if grep -q "loaded module 'one' (1 function)" both.out.err && grep -q "loaded module 'two' (2 functions)" both.out.err; then
      ok "--default-modules adds the default modules (2 functions)"
    else
      fail "--default-modules"; diag <both.out.err
    fi
  else
    fail "--default-modules: the server did not start"; diag <both.out.err
  fi
  kill -TERM $spid; stops_within $spid 5
  if GRIDRPC_MODULE_PATH="$T_TMP/sel/two" start_bare dflt.out; then
    if grep -q "loaded module 'two' (2 functions)" dflt.out.err; then ok "no --module: the default modules load"; else fail "defaults without --module"; diag <dflt.out.err; fi
  else
    fail "defaults without --module: the server did not start"; diag <dflt.out.err
  fi
  kill -TERM $spid; stops_within $spid 5
  if GRIDRPC_MODULE_PATH="$T_TMP/sel/two" start_bare dirs.out --module-dir "$T_TMP/sel/one"; then
    if grep -q "loaded module 'one'" dirs.out.err && ! grep -q "module 'two'" dirs.out.err; then ok "--module-dir D loads D alone"; else fail "--module-dir alone"; diag <dirs.out.err; fi
  else
    fail "--module-dir alone: the server did not start"; diag <dirs.out.err
  fi
  kill -TERM $spid; stops_within $spid 5
else
  fail "building the modules for the selection tests"; diag <sel.out
fi
if grep -q -- '--default-modules' help.out && grep -q 'linalg, lsq and nas' help.out && grep -q 'test-modules' help.out; then
  ok "--help names the default modules, and where the test module is instead"
else
  fail "--help on the default modules"
fi
finish
