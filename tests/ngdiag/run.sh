#!/bin/sh
# ngdiag/run.sh: issue 10's IDL and server items 1-4 the way Ninf-G's diag programs meet
# them: modules with inline bodies built by gridrpc-module, served by a gridrpcd on
# loopback, called by a grpc.h client (diag.c) configured by a Ninf-G client.conf.
# Each module is built separately, so one item's failure does not hide the others.
. "$top_srcdir/tests/common/ng.sh"
src=$top_srcdir/tests/ngdiag

mods=
for m in strings cancel nulls files; do
  if "$GRIDRPC_MODULE" -o "$m.so" "$src/$m.idl" >"build-$m.out" 2>&1; then
    ok "$m.idl builds with gridrpc-module"
    mods="$mods --module $T_TMP/$m.so"
  else
    fail "$m.idl does not build with gridrpc-module"; diag <"build-$m.out"
  fi
done

ng_client diag "$src/diag.c"

mkdir scratch
: >server.out
# shellcheck disable=SC2086
TMPDIR=$T_TMP/scratch "$GRIDRPCD" --host 127.0.0.1 --port 0 --log-level warn $mods >server.out 2>&1 &
spid=$!
port=$(listening_port server.out $spid)
if [ -n "$port" ]; then ok "gridrpcd loads the modules (port $port)"; else fail "gridrpcd did not start"; diag <server.out; fi

ng_conf "$port"

mkdir client
for t in strings cancel nulls files; do
  timeout 60 ./diag client.conf "$t" "$T_TMP/client" >"$t.out" 2>"$t.err"; rc=$?
  if [ $rc -eq 0 ] && grep -qx OK "$t.out"; then ok "$t: as Ninf-G programs expect"; else fail "$t (rc $rc)"; diag <"$t.err"; fi
done
# Every scratch folder and file of the server's calls is gone.
left=$(find scratch -mindepth 1 | head -n 5)
if [ -z "$left" ]; then ok "the server left nothing in its TMPDIR"; else fail "left in the server's TMPDIR: $left"; fi

kill "$spid" 2>/dev/null
wait "$spid" 2>/dev/null
finish
