#!/bin/sh
# ngobj/run.sh: issue 10's item 7, remote objects (Ninf-G's DefClass / DefState /
# DefMethod), the way Ninf-G programs use them: a class with inline bodies built by
# gridrpc-module, served by a gridrpcd on loopback, used by a grpc.h client (objtest.c)
# configured by a Ninf-G client.conf. The class's _finalize appends to a file, so the
# test sees it run on destruct and when a client leaves without destructing.
. "$top_srcdir/tests/common/ng.sh"
src=$top_srcdir/tests/ngobj

if "$GRIDRPC_MODULE" -o counter.so "$src/counter.idl" >build.out 2>&1; then
  ok "counter.idl (DefClass with DefState and DefMethods) builds with gridrpc-module"
else
  fail "counter.idl does not build with gridrpc-module"; diag <build.out; finish; exit 1
fi
ng_client objtest "$src/objtest.c" -lm

NGOBJ_FINALIZE_LOG=$T_TMP/finalize.log
export NGOBJ_FINALIZE_LOG
: >"$NGOBJ_FINALIZE_LOG"
: >server.out
"$GRIDRPCD" --host 127.0.0.1 --port 0 --log-level warn --module "$T_TMP/counter.so" >server.out 2>&1 &
spid=$!
port=$(listening_port server.out $spid)
if [ -n "$port" ]; then ok "gridrpcd loads the class (port $port)"; else fail "gridrpcd did not start"; diag <server.out; fi

ng_conf "$port"

# A sanitizer catches a method's fault itself and exits with its own status.
case "${STUB_CFLAGS:-}" in *-fsanitize*) OBJ_SANITIZED=yes; export OBJ_SANITIZED ;; esac
for t in counter errors cancel array crash; do
  timeout 60 ./objtest client.conf "$t" >"$t.out" 2>"$t.err"; rc=$?
  if [ $rc -eq 0 ] && grep -qx OK "$t.out"; then ok "$t: as Ninf-G programs expect"; else fail "$t (rc $rc)"; diag <"$t.err"; fi
done
# crash printed the processes its two objects ran in: neither is the server.
set -- $(sed -n 's/^PIDS //p' crash.out)
if [ $# -eq 2 ] && [ "$1" != "$spid" ] && [ "$2" != "$spid" ] && [ "$1" != "$2" ]; then
  ok "each object runs in a process of its own, not the server's ($1, $2; server $spid)"
else
  fail "objects' processes: '$*' (server $spid)"; diag <crash.out
fi
if kill -0 $spid 2>/dev/null && grep -q "executor [0-9]*: counter/counter.crash \(crashed\|exited\)" server.out; then
  ok "after three objects' crashes the server is up, and its log names the crashing method"
else
  fail "the server after the objects' crashes"; diag <server.out
fi
GRIDRPC_SERVER=127.0.0.1:$port timeout 60 ./objtest client.conf core >core.out 2>core.err; rc=$?
if [ $rc -eq 0 ] && grep -qx OK core.out; then ok "core: grid_object_*_np"; else fail "core (rc $rc)"; diag <core.err; fi
# counter destructs its two objects (totals 1016 and 1011), errors its two (1001, and
# 1004 made from handle attributes), cancel its one (1100), array its three (1010,
# 1020, 1030), crash its two that did not crash (1007, and 1000 below; the three that
# crashed have no process left to finalize them), core its one (1005).
for total in 1016 1011 1001 1004 1100 1010 1020 1030 1007 1005; do
  if grep -qx "finalize $total" "$NGOBJ_FINALIZE_LOG"; then
    ok "_finalize ran when the handle of the object at $total was destructed"
  else
    fail "no _finalize for the object at $total"; diag <"$NGOBJ_FINALIZE_LOG"
  fi
done

# Raw clients: ids that name nothing, stale hashes, huge sizes, other connections (TAP).
if OBJ_TEST_PORT=$port timeout 60 "$top_builddir/obj-hostile-test" >hostile.out 2>&1; then
  ok "hostile object messages are refused and the server stays up ($(grep -c '^ok' hostile.out) checks)"
else
  fail "obj-hostile-test"; diag <hostile.out
fi

# A client that exits without destructing: the server ends the object with the connection.
# The client exits holding its object on purpose: what it leaves is the point, not a leak.
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" timeout 60 ./objtest client.conf leave >leave.out 2>leave.err; rc=$?
if [ $rc -eq 0 ] && grep -qx OK leave.out; then ok "leave: an object made and used"; else fail "leave (rc $rc)"; diag <leave.err; fi
i=0
while [ $i -lt 100 ] && ! grep -qx "finalize 1042" "$NGOBJ_FINALIZE_LOG"; do sleep 0.05; i=$((i + 1)); done
if grep -qx "finalize 1042" "$NGOBJ_FINALIZE_LOG"; then
  ok "the object of a client that left was finalized (no leak on the server)"
else
  fail "the object of a client that left was never finalized"; diag <"$NGOBJ_FINALIZE_LOG"
fi
# obj-hostile-test made 18 objects (crash made one more at 1000): one destroyed at 1006, one whose connection closed
# (at 1002, or 1003 when an invocation got in before the server saw the close) and 16
# destroyed unused (1000).
n=$(wc -l <"$NGOBJ_FINALIZE_LOG")
if [ "$n" -eq 30 ] && grep -qx "finalize 1006" "$NGOBJ_FINALIZE_LOG" && grep -qx "finalize 100[23]" "$NGOBJ_FINALIZE_LOG" &&
   [ "$(grep -cx "finalize 1000" "$NGOBJ_FINALIZE_LOG")" -eq 17 ]; then
  ok "each of the 30 objects left whole was finalized exactly once"
else
  fail "$n _finalize runs for 30 objects"; diag <"$NGOBJ_FINALIZE_LOG"
fi
if kill -0 $spid 2>/dev/null; then ok "the server is still up"; else fail "the server died"; diag <server.out; fi

# The server goes away under a live object: the client's next invocation says so.
mkdir gone && cd gone || exit 1
timeout 60 ../objtest ../client.conf gone >gone.out 2>gone.err &
cpid=$!
i=0
while [ $i -lt 400 ] && [ ! -f READY ]; do sleep 0.025; i=$((i + 1)); done
kill "$spid" 2>/dev/null
wait "$spid" 2>/dev/null
touch GO
wait "$cpid"; rc=$?
if [ $rc -eq 0 ] && grep -qx OK gone.out; then ok "gone: an object whose server went away"; else fail "gone (rc $rc)"; diag <gone.err; fi
cd .. || exit 1

# --max-objects-per-connection 2: two objects on one connection, the third refused
# (GRID_ERR_LIMIT naming the option), one more once one is destroyed (obj-hostile-test).
NGOBJ_FINALIZE_LOG=$T_TMP/finalize-limit.log
: >"$NGOBJ_FINALIZE_LOG"
: >limit-server.out
"$GRIDRPCD" --host 127.0.0.1 --port 0 --log-level warn --module "$T_TMP/counter.so" \
  --max-objects-per-connection 2 >limit-server.out 2>&1 &
spid=$!
lport=$(listening_port limit-server.out $spid)
if [ -n "$lport" ] && OBJ_TEST_PORT=$lport OBJ_TEST_LIMIT=2 timeout 60 "$top_builddir/obj-hostile-test" >limit.out 2>&1; then
  ok "--max-objects-per-connection 2: at and one past the bound ($(grep -c '^ok' limit.out) checks)"
else
  fail "--max-objects-per-connection 2"; diag <limit.out; diag <limit-server.out
fi
kill "$spid" 2>/dev/null
wait "$spid" 2>/dev/null

# --max-object-processes 2: two objects alive on the server, the third refused naming
# the option, one more once one is destroyed (objtest procs).
: >procs-server.out
"$GRIDRPCD" --host 127.0.0.1 --port 0 --log-level warn --module "$T_TMP/counter.so" \
  --max-object-processes 2 >procs-server.out 2>&1 &
spid=$!
pport=$(listening_port procs-server.out $spid)
mkdir procs && cd procs || exit 1
ng_conf "$pport"
timeout 60 ../objtest client.conf procs >procs.out 2>procs.err; rc=$?
if [ -n "$pport" ] && [ $rc -eq 0 ] && grep -qx OK procs.out; then
  ok "--max-object-processes 2: at and one past the bound, and room again after a destroy"
else
  fail "--max-object-processes 2 (rc $rc)"; diag <procs.err; diag <../procs-server.out
fi
cd .. || exit 1
kill "$spid" 2>/dev/null
wait "$spid" 2>/dev/null
finish
