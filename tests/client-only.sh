#!/bin/sh
# client-only.sh: the client-only build as a user who calls someone else's grid meets
# it. pkg-config is shown only libtirpc and OpenSSL (OpenBLAS, LAPACKE, SQLite and
# libmicrohttpd are as good as absent): a full configure refuses with a message that
# names --disable-server, and `configure --disable-server && make && make install`
# installs libgridrpc, the gridrpc tool, the headers, the Fortran module and both .pc
# files, and no server, metaserver or idlc. Nothing installed links a server library,
# and a C program built with `pkg-config --cflags --libs gridrpc` against that install
# calls this build's gridrpcd, as does the installed gridrpc tool.
. "$top_srcdir/tests/lib.sh"
prog_c=$top_srcdir/tests/common/installed_prog.c # the program built against the install
# A second whole build: once, in the plain tier (the sanitizer tiers build the same
# sources with the same flags minus their runtime, which an installed library lacks).
case "${STUB_CFLAGS:-}" in
*-fsanitize*)
  echo "1..1"
  echo "ok 1 # SKIP the client-only build is tested in the plain build (this one is built with sanitizers)"
  exit 0
  ;;
esac
cd "$T_TMP" || exit 1
unset MAKEFLAGS MFLAGS MAKELEVEL # a make of our own, not a job of the make running tests
MAKE=${MAKE_FOR_TESTS:-make}

# A pkg-config that knows only what the client needs: the .pc files of libtirpc,
# libssl and libcrypto (and GoogleTest's, for make check), copied from the system's.
mkdir pc
for m in libtirpc libssl libcrypto gtest gtest_main; do
  f=$(pkg-config --variable=pcfiledir "$m" 2>/dev/null)/$m.pc
  [ -f "$f" ] && cp "$f" pc/
done
export PKG_CONFIG_LIBDIR="$T_TMP/pc" PKG_CONFIG_PATH=
if pkg-config --exists openblas || pkg-config --exists sqlite3 || pkg-config --exists libmicrohttpd; then
  fail "the trimmed pkg-config still finds a server library"; finish; exit 1
fi

mkdir full
if (cd full && "$top_srcdir/configure" >configure.out 2>&1); then
  fail "a full configure without OpenBLAS should fail"
elif grep -q 'OpenBLAS not found.*--disable-server' full/configure.out; then
  ok "a full configure without OpenBLAS fails and names --disable-server"
else
  fail "the full configure's error"; tail -5 full/configure.out | diag
fi

mkdir client
P=$T_TMP/inst
if (cd client && "$top_srcdir/configure" --disable-server --prefix="$P" >configure.out 2>&1); then
  ok "configure --disable-server succeeds without OpenBLAS, LAPACKE, SQLite and libmicrohttpd"
else
  fail "configure --disable-server"; tail -20 client/configure.out | diag; finish; exit 1
fi
grep -q '^configure: builds: client only' client/configure.out && ok "its summary says the build is client only" ||
  { fail "configure's summary"; tail -3 client/configure.out | diag; }
if $MAKE -C client -j2 >make.out 2>&1 && $MAKE -C client install >install.out 2>&1; then
  ok "make && make install"
else
  fail "make && make install"; tail -30 make.out install.out | diag; finish; exit 1
fi

missing=
for f in bin/gridrpc bin/gridrpc-desc lib/libgridrpc.so lib/libgridrpc_fortran.so include/gridrpc.h \
  include/grpc.h include/gridrpc.mod lib/pkgconfig/gridrpc.pc lib/pkgconfig/gridrpc-fortran.pc; do
  [ -e "$P/$f" ] || missing="$missing $f"
done
[ -z "$missing" ] && ok "the library, the tool, the headers, gridrpc.mod and both .pc files are installed" ||
  fail "missing:$missing"
extra=$(cd "$P" && ls bin/gridrpcd bin/gridmetad bin/idlc lib/gridrpc/modules 2>/dev/null)
[ -z "$extra" ] && ok "no gridrpcd, gridmetad, idlc or served library is installed" || fail "installed anyway: $extra"
linked=$(for f in "$P"/lib/libgridrpc.so "$P"/lib/libgridrpc_fortran.so "$P"/bin/gridrpc; do
  readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'
done | grep -i -e openblas -e lapack -e sqlite -e microhttpd -e antlr | sort -u)
[ -z "$linked" ] && ok "nothing installed links OpenBLAS, LAPACKE, SQLite, libmicrohttpd or ANTLR" ||
  fail "installed files link: $linked"

# A server elsewhere: this build's gridrpcd with the test module.
"$GRIDRPCD" --host 127.0.0.1 --port 0 --module "$GRIDRPC_TEST_MODULES/test.so" >srv.out 2>srv.err &
spid=$!
trap 'kill "$spid" 2>/dev/null' EXIT
port=$(listening_port srv.out "$spid")
[ -n "$port" ] || { fail "gridrpcd starts"; diag <srv.err; finish; exit 1; }

if cc -o prog "$prog_c" $(PKG_CONFIG_PATH="$P/lib/pkgconfig" pkg-config --cflags --libs gridrpc) >cc.out 2>&1; then
  ok "a C program builds with pkg-config --cflags --libs gridrpc against the client-only install"
  if LD_LIBRARY_PATH="$P/lib" ./prog "127.0.0.1:$port" >prog.out 2>&1 && grep -q '^null_call GRID_OK' prog.out; then
    ok "it calls a server elsewhere"
  else
    fail "the program's call"; diag <prog.out
  fi
else
  fail "cc with the client-only gridrpc.pc"; diag <cc.out
fi
if LD_LIBRARY_PATH="$P/lib" "$P/bin/gridrpc" --server "127.0.0.1:$port" ls >ls.out 2>&1 && grep -q 'test/null_call' ls.out; then
  ok "the installed gridrpc tool lists the server's functions"
else
  fail "gridrpc ls"; diag <ls.out
fi
finish
