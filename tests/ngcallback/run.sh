#!/bin/sh
# ngcallback/run.sh: issue 10 item 8, client callbacks, the way Ninf-G's diag programs
# meet them: a module with inline bodies that call callbacks, built by gridrpc-module
# and served by gridrpcd on loopback, called by a grpc.h client (cbdiag.c) configured
# by a Ninf-G client.conf; then a hostile client (callback-hostile) that answers
# callbacks wrongly, and the same function under --isolate (an alias of the default).
# A function with callbacks runs in an executor (crash: one that crashes after its
# callbacks costs its own call only) unless its callbacks take text.
. "$top_srcdir/tests/common/ng.sh"
src=$top_srcdir/tests/ngcallback

if "$GRIDRPC_MODULE" -o callback.so "$src/callback.idl" >build.out 2>&1; then
  ok "callback.idl builds with gridrpc-module"
else
  fail "callback.idl does not build with gridrpc-module"; diag <build.out; finish; exit 1
fi
ng_client cbdiag "$src/cbdiag.c" -lpthread

# start_server OUT ARGS...: starts gridrpcd, sets spid and port.
start_server() {
  _out=$1; shift
  : >"$_out"
  "$GRIDRPCD" --host 127.0.0.1 --port 0 --log-level warn --module "$T_TMP/callback.so" "$@" >"$_out" 2>&1 &
  spid=$!
  port=$(listening_port "$_out" $spid)
}

start_server server.out --threads 4
if [ -n "$port" ]; then ok "gridrpcd loads the module (port $port)"; else fail "gridrpcd did not start"; diag <server.out; fi
ng_conf "$port"
mkdir client-tmp
for t in many two zero string async max null stack cancel big inout method crash inptr; do
  TMPDIR=$T_TMP/client-tmp timeout 60 ./cbdiag client.conf "$t" >"$t.out" 2>"$t.err"; rc=$?
  if [ $rc -eq 0 ] && grep -qx OK "$t.out"; then ok "$t: callbacks as Ninf-G programs expect"; else fail "$t (rc $rc)"; diag <"$t.err"; fi
done

# The files of the callbacks' filename arguments lived in a folder of their own, gone now.
left=$(find client-tmp -mindepth 1 | head -n 5)
if [ -z "$left" ]; then ok "the client left nothing in its TMPDIR"; else fail "left in the client's TMPDIR: $left"; fi

# The canceled call ended on the server too (its body's next callback was refused).
if grep -q "callback/cb_many.*CANCELED" server.out; then ok "the canceled call ended on the server"; else fail "the canceled call did not end on the server"; diag <server.out; fi

# A hostile client: wrong sizes, a wrong sequence number, an unsolicited answer. The
# server refuses each (the call fails with a message) and keeps serving.
HOSTILE=$top_builddir/callback-hostile
if [ -x "$HOSTILE" ]; then
  timeout 60 "$HOSTILE" 127.0.0.1 "$port" >hostile.out 2>&1; rc=$?
  if [ $rc -eq 0 ]; then ok "hostile callback answers are refused, the server survives"; else fail "callback-hostile (rc $rc)"; diag <hostile.out; fi
  if kill -0 "$spid" 2>/dev/null; then ok "gridrpcd is still running"; else fail "gridrpcd died"; diag <server.out; fi

else
  fail "callback-hostile was not built"
fi
kill "$spid" 2>/dev/null
wait "$spid" 2>/dev/null

# A call whose body calls back after its client left must free its worker: a server of
# one worker serves the next call.
start_server one.out --threads 1
ng_conf "$port"
timeout 20 "$HOSTILE" 127.0.0.1 "$port" leave >leave.out 2>&1
sleep 0.5
timeout 20 ./cbdiag client.conf zero >again.out 2>&1
if grep -qx OK again.out; then ok "a call whose client left frees its worker"; else fail "the worker stays taken by a call whose client left"; diag <leave.out; diag <again.out; fi
kill "$spid" 2>/dev/null
wait "$spid" 2>/dev/null

# cb_late calls the callback cb_zero kept, after cb_zero's call ended: only a server
# that runs both in one process (cb_late takes no callbacks, so it would run in an
# executor by default) can show the stub refusing it.
start_server inproc.out --in-process-unsafe
ng_conf "$port"
timeout 60 ./cbdiag client.conf zero >inz.out 2>inz.err
timeout 60 ./cbdiag client.conf late >late.out 2>late.err; rc=$?
if [ $rc -eq 0 ] && grep -qx OK late.out; then ok "late: a callback called after its call ended is refused (--in-process-unsafe)"; else fail "late (rc $rc)"; diag <late.err; fi
kill "$spid" 2>/dev/null
wait "$spid" 2>/dev/null

# --isolate is the default's alias: a function with callbacks runs (in an executor).
start_server isolate.out --isolate
ng_conf "$port"
timeout 60 ./cbdiag client.conf zero >iso.out 2>iso.err
if grep -qx OK iso.out; then ok "under --isolate a function with callbacks runs"; else fail "--isolate"; diag <iso.err; fi
# Methods of remote objects run in gridrpcd's own process (not yet in executors): their
# callbacks work.
timeout 60 ./cbdiag client.conf method >isom.out 2>isom.err
if grep -qx OK isom.out; then ok "under --isolate a method's callbacks run"; else fail "a method's callbacks under --isolate"; diag <isom.err; fi
kill "$spid" 2>/dev/null
wait "$spid" 2>/dev/null
finish
