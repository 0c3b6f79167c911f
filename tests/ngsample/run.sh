#!/bin/sh
# ngsample/run.sh: a program written for Ninf-G 5 (sample.c) builds unchanged with
# `cc prog.c $(pkg-config --cflags --libs gridrpc)` against the build tree, and runs
# against a gridrpcd started here with a Ninf-G 5 format configuration file.
. "$top_srcdir/tests/lib.sh"
cd "$T_TMP" || exit 1
GRIDRPCD=${GRIDRPCD:-$top_builddir/gridrpcd}
MODS=${GRIDRPC_TEST_MODULES:-$top_builddir/stubs/.libs}
# The test program links the shared library: with sanitizers it needs their flags.
SAMPLE_CFLAGS=${STUB_CFLAGS:-}

# An uninstalled gridrpc.pc: what an installed one says, pointing into the tree.
cat >gridrpc.pc <<PC
Name: gridrpc
Description: GridRPC (build tree)
Version: 0
Libs: -L$top_builddir/.libs -Wl,-rpath,$top_builddir/.libs -lgridrpc
Cflags: -I$top_srcdir/include
PC
if command -v pkg-config >/dev/null 2>&1; then
  flags=$(PKG_CONFIG_PATH=$T_TMP pkg-config --cflags --libs gridrpc)
else
  flags="-I$top_srcdir/include -L$top_builddir/.libs -Wl,-rpath,$top_builddir/.libs -lgridrpc"
fi
# shellcheck disable=SC2086
if $CC $SAMPLE_CFLAGS -o sample "$top_srcdir/tests/ngsample/sample.c" $flags >cc.out 2>&1 && [ ! -s cc.out ]; then
  ok "a Ninf-G 5 program builds with cc prog.c \$(pkg-config --cflags --libs gridrpc), no warnings"
else
  fail "building the Ninf-G 5 sample"; diag <cc.out
fi
# shellcheck disable=SC2086
if $CC -std=c99 -pedantic-errors -Wall -Wextra -fsyntax-only "$top_srcdir/tests/ngsample/sample.c" $flags -D_DEFAULT_SOURCE >c99.out 2>&1; then
  ok "grpc.h is C99 clean (-pedantic-errors)"
else
  fail "grpc.h under -std=c99 -pedantic-errors"; diag <c99.out
fi

"$GRIDRPCD" --host 127.0.0.1 --port 0 --log-level warn --module "$MODS/test.so" --module "$MODS/linalg.so" >server.out 2>&1 &
spid=$!
port=$(listening_port server.out $spid)
if [ -n "$port" ]; then ok "gridrpcd started (port $port)"; else fail "gridrpcd did not start"; diag <server.out; fi

# Ninf-G 5's client format, with what we ignore (CLIENT attributes, INVOKE_SERVER).
cat >client.conf <<CONF
# Ninf-G 5 client configuration
<CLIENT>
    loglevel 3
</CLIENT>

<SERVER>
    hostname 127.0.0.1
    port $port
    invoke_server SSH
</SERVER>

<SERVER>
    hostname "localhost"
    port $port
    tag echo
</SERVER>

<INVOKE_SERVER>
    type SSH
</INVOKE_SERVER>
CONF

./sample client.conf >run.out 2>run.err; rc=$?
if [ $rc -eq 0 ] && grep -qx OK run.out; then ok "the sample runs against gridrpcd"; else fail "the sample (rc $rc)"; diag <run.out; diag <run.err; fi
if grep -q "warning: section <INVOKE_SERVER> is ignored" run.err && grep -q "'loglevel' is ignored" run.err; then
  ok "what is ignored is said on stderr"
else
  fail "warnings about ignored settings"; diag <run.err
fi
NG_CONFIG_FILE=$T_TMP/client.conf ./sample >env.out 2>&1; rc=$?
if [ $rc -eq 0 ] && grep -qx OK env.out; then ok "grpc_initialize(NULL) reads \$NG_CONFIG_FILE"; else fail "NG_CONFIG_FILE (rc $rc)"; diag <env.out; fi
./sample "$T_TMP/missing.conf" >miss.out 2>&1; rc=$?
if [ $rc -eq 2 ] && grep -q "cannot read the configuration file '$T_TMP/missing.conf'" miss.out; then ok "a missing configuration file is reported"; else fail "missing file (rc $rc)"; diag <miss.out; fi

kill "$spid" 2>/dev/null
wait "$spid" 2>/dev/null
finish
