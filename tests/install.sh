#!/bin/sh
# install.sh: make install as a user meets it. A staged install (DESTDIR) holds the
# programs, libraries, headers, the Fortran module and both .pc files; a C program and a
# Fortran program built with pkg-config from it link and run (calling the installed
# gridrpcd); the ldconfig hook leaves a staged install alone; make uninstall removes
# every file. Then the real thing, as root: make install to the configured prefix inside
# a private mount namespace whose /usr and /etc are copy-on-write (so nothing
# reaches this machine), where a program built with plain `pkg-config --cflags --libs
# gridrpc` runs without LD_LIBRARY_PATH against a gridrpcd serving its default modules.
# The test module (test/crash ends an executor) is installed apart: never a default.
. "$top_srcdir/tests/lib.sh"
prog_c=$top_srcdir/tests/common/installed_prog.c # the program built against the install
# What is installed is what users build against with a plain cc: the sanitizer builds'
# libraries need their runtime first, so the install is tested in the plain build only.
case "${STUB_CFLAGS:-}" in
*-fsanitize*)
  echo "1..1"
  echo "ok 1 # SKIP make install is tested in the plain build (this one is built with sanitizers)"
  exit 0
  ;;
esac
cd "$T_TMP" || exit 1
# A make of our own, not a job of the make that runs the tests.
unset MAKEFLAGS MFLAGS MAKELEVEL
MAKE=${MAKE_FOR_TESTS:-make}
mk() { $MAKE -s -C "$top_builddir" "$@"; }
# Every installation directory, as make sees it.
dirs() {
  mk -f Makefile -f - print-dirs <<'EOF'
print-dirs:
	@echo "prefix=$(prefix)"; echo "bindir=$(bindir)"; echo "libdir=$(libdir)"; echo "includedir=$(includedir)"; echo "pkglibdir=$(pkglibdir)"
EOF
}
dirs >dirs.out 2>&1 || { fail "reading the installation directories"; diag <dirs.out; finish; exit 1; }
prefix=$(sed -n 's/^prefix=//p' dirs.out)
bindir=$(sed -n 's/^bindir=//p' dirs.out)
libdir=$(sed -n 's/^libdir=//p' dirs.out)
includedir=$(sed -n 's/^includedir=//p' dirs.out)
pkglibdir=$(sed -n 's/^pkglibdir=//p' dirs.out)

# A fake ldconfig records whether the hook ran it.
mkdir fakebin
printf '#!/bin/sh\necho "ldconfig $*" >>"%s/ldconfig.calls"\n' "$T_TMP" >fakebin/ldconfig
chmod +x fakebin/ldconfig

# ---------------------------------------------------------------- staged (DESTDIR)
D=$T_TMP/dest
if LDCONFIG=$T_TMP/fakebin/ldconfig mk install DESTDIR="$D" >install.out 2>&1; then ok "make install DESTDIR=..."; else fail "make install DESTDIR"; diag <install.out; finish; exit 1; fi
missing=
for f in "$bindir/gridrpcd" "$bindir/idlc" "$bindir/gridrpc-module" "$libdir/libgridrpc.so" \
  "$libdir/libgridrpc_fortran.so" "$includedir/gridrpc.h" "$includedir/grpc.h" "$includedir/gridrpc.mod" \
  "$libdir/pkgconfig/gridrpc.pc" "$libdir/pkgconfig/gridrpc-fortran.pc" "$pkglibdir/modules/linalg.so" \
  "$pkglibdir/test-modules/test.so"; do
  [ -e "$D$f" ] || missing="$missing $f"
done
if [ -z "$missing" ]; then ok "programs, libraries, headers, gridrpc.mod, both .pc files and the modules are installed"; else fail "missing:$missing"; fi
if [ ! -e ldconfig.calls ]; then ok "a DESTDIR install does not run ldconfig"; else fail "ldconfig ran for a DESTDIR install"; diag <ldconfig.calls; fi
if [ ! -e "$D$pkglibdir/modules/test.so" ]; then ok "the test module is not among the default modules ($pkglibdir/modules)"; else fail "test.so is installed with the default modules"; fi

cat >fprog.f90 <<'F'
! Built with pkg-config against the installed Fortran module and library.
program fprog
  use gridrpc
  implicit none
  integer :: ierr
  call grid_wait_all(ierr)
  print '(a,i0)', 'fortran ierr=', ierr
end program fprog
F
# start_gridrpcd OUT ARGS...: the installed gridrpcd on a free port; $spid, $port.
start_gridrpcd() {
  _out=$1; shift
  "$@" --host 127.0.0.1 --port 0 >"$_out" 2>"$_out.err" &
  spid=$!
  _i=0
  while [ $_i -lt 100 ]; do
    if grep -q '^listening on ' "$_out" 2>/dev/null; then port=$(sed -n 's/^listening on 127\.0\.0\.1://p' "$_out"); return 0; fi
    kill -0 $spid 2>/dev/null || return 1
    sleep 0.1; _i=$((_i + 1))
  done
  return 1
}
spid=
trap '[ -n "$spid" ] && kill "$spid" 2>/dev/null' EXIT

# pkg-config reads the staged .pc files; the sysroot puts their paths under $D.
pc() { PKG_CONFIG_PATH="$D$libdir/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$D" pkg-config "$@"; }
if pc --cflags --libs gridrpc >pc.out 2>&1 && cc -o prog "$prog_c" $(cat pc.out) >cc.out 2>&1; then
  ok "a C program builds with pkg-config --cflags --libs gridrpc"
  if start_gridrpcd srv.out env LD_LIBRARY_PATH="$D$libdir" "$D$bindir/gridrpcd" --module "$D$pkglibdir/test-modules/test.so" \
    && LD_LIBRARY_PATH="$D$libdir" ./prog "127.0.0.1:$port" >prog.out 2>&1 && grep -q '^null_call GRID_OK' prog.out; then
    ok "it runs and calls the installed gridrpcd"
  else
    fail "the staged program and server"; diag <prog.out; diag <srv.out.err
  fi
  [ -n "$spid" ] && kill "$spid" 2>/dev/null && wait "$spid" 2>/dev/null; spid=
  # The installed modules as the defaults (GRIDRPC_MODULE_PATH: the staged folder stands
  # for the configured one): linalg is served, test/null_call is not.
  if start_gridrpcd dsrv.out env LD_LIBRARY_PATH="$D$libdir" GRIDRPC_MODULE_PATH="$D$pkglibdir/modules" "$D$bindir/gridrpcd" \
    && LD_LIBRARY_PATH="$D$libdir" "$D$bindir/gridrpc" --server "127.0.0.1:$port" ls >dls.out 2>&1 \
    && grep -q 'linalg/dmmul' dls.out && ! grep -q '^ *test/' dls.out \
    && { LD_LIBRARY_PATH="$D$libdir" ./prog "127.0.0.1:$port" >dprog.out 2>&1 || :; } \
    && grep -q '^null_call GRID_ERR' dprog.out; then
    ok "an installed gridrpcd with no module options serves linalg but not the test module"
  else
    fail "the default modules of the installed gridrpcd"; diag <dls.out; diag <dprog.out; diag <dsrv.out.err
  fi
  [ -n "$spid" ] && kill "$spid" 2>/dev/null && wait "$spid" 2>/dev/null; spid=
else
  fail "C program with pkg-config"; diag <pc.out; diag <cc.out
fi
if command -v gfortran >/dev/null 2>&1; then
  if pc --cflags --libs gridrpc-fortran >fpc.out 2>&1 && gfortran -o fprog fprog.f90 $(cat fpc.out) >fcc.out 2>&1 \
    && LD_LIBRARY_PATH="$D$libdir" ./fprog >fprog.out 2>&1 && grep -q '^fortran ierr=0' fprog.out; then
    ok "a Fortran program builds with pkg-config --cflags --libs gridrpc-fortran and runs"
  else
    fail "Fortran program with gridrpc-fortran.pc"; diag <fpc.out; diag <fcc.out; diag <fprog.out 2>/dev/null
  fi
else
  ok "# SKIP no gfortran"
fi
if LDCONFIG=$T_TMP/fakebin/ldconfig mk uninstall DESTDIR="$D" >uninstall.out 2>&1 && [ -z "$(find "$D" -type f -o -type l)" ]; then
  ok "make uninstall DESTDIR=... removes every file"
else
  fail "uninstall left files"; find "$D" -type f -o -type l | diag
fi
if [ ! -e ldconfig.calls ]; then ok "nor does a DESTDIR uninstall run ldconfig"; else fail "ldconfig ran for a DESTDIR uninstall"; diag <ldconfig.calls; fi

# ---------------------------------------------------------------- the real root
# Only where the real thing can be undone completely: root, a prefix under /usr, and a
# private mount namespace with overlays over /usr and /etc (the linker's cache).
real_skip=
if [ "$(id -u)" != 0 ]; then real_skip="not root"
elif ! command -v unshare >/dev/null 2>&1; then real_skip="no unshare"
else case "$prefix" in /usr | /usr/*) ;; *) real_skip="prefix $prefix is not under /usr (configured elsewhere)" ;; esac
fi
# The hook runs ldconfig only for a libdir the linker searches (elsewhere it prints how
# to add it, which README.md says too).
if [ -z "$real_skip" ]; then
  ldc=$(command -v ldconfig || echo /sbin/ldconfig)
  "$ldc" -v -N -X 2>/dev/null | grep -q "^$libdir:" || real_skip="$libdir is not searched by the dynamic linker here"
fi
if [ -n "$real_skip" ]; then
  ok "# SKIP the real-root install: $real_skip"
  finish; exit $?
fi
cat >inside.sh <<EOF
# Runs in the private mount namespace: nothing written under /usr or to the linker's
# cache outlives it. Any step of the set-up failing ends it before make install runs.
set -e
T=$T_TMP
unset LDCONFIG
mount --make-rprivate /
mkdir -p "\$T/ns"
mount -t tmpfs gridrpc-test "\$T/ns"
mkdir "\$T/ns/up" "\$T/ns/work" "\$T/ns/etc-up" "\$T/ns/etc-work" "\$T/ns/ldcache"
mount -t overlay gridrpc-test -o lowerdir=/usr,upperdir="\$T/ns/up",workdir="\$T/ns/work" /usr
# ldconfig writes /etc/ld.so.cache~ and renames it: /etc is copy-on-write too.
mount -t overlay gridrpc-test -o lowerdir=/etc,upperdir="\$T/ns/etc-up",workdir="\$T/ns/etc-work" /etc
if [ -d /var/cache/ldconfig ]; then mount --bind "\$T/ns/ldcache" /var/cache/ldconfig; fi
grep -q ' /usr .* - overlay ' /proc/self/mountinfo
grep -q ' /etc .* - overlay ' /proc/self/mountinfo
if [ -d /var/cache/ldconfig ]; then grep -q ' /var/cache/ldconfig ' /proc/self/mountinfo; fi
echo ready
set +e
$MAKE -s -C "$top_builddir" install >"\$T/real-install.out" 2>&1 || { echo "FAIL make install"; exit 0; }
echo "PASS make install to $prefix"
grep -q '^gridrpc: .*ldconfig' "\$T/real-install.out" && echo "PASS the install ran ldconfig" || echo "FAIL the install did not run ldconfig"
env -u LD_LIBRARY_PATH sh -c 'cc -o "\$1/rprog" "\$2" \$(pkg-config --cflags --libs gridrpc)' sh "\$T" "$prog_c" >"\$T/rcc.out" 2>&1 \
  && echo "PASS cc installed_prog.c \\\$(pkg-config --cflags --libs gridrpc)" || echo "FAIL cc with the installed gridrpc.pc"
env -u LD_LIBRARY_PATH "$bindir/gridrpcd" --host 127.0.0.1 --port 0 --default-modules --module "$pkglibdir/test-modules/test.so" >"\$T/rsrv.out" 2>"\$T/rsrv.out.err" &
spid=\$!
i=0
while [ \$i -lt 100 ] && ! grep -q '^listening on ' "\$T/rsrv.out"; do sleep 0.1; i=\$((i + 1)); done
port=\$(sed -n 's/^listening on 127\\.0\\.0\\.1://p' "\$T/rsrv.out")
env -u LD_LIBRARY_PATH "\$T/rprog" "127.0.0.1:\$port" >"\$T/rprog.out" 2>&1 && grep -q '^null_call GRID_OK' "\$T/rprog.out" \
  && echo "PASS it runs without LD_LIBRARY_PATH and calls a gridrpcd serving the default modules" \
  || echo "FAIL the program built against the real install"
kill \$spid 2>/dev/null; wait \$spid 2>/dev/null
$MAKE -s -C "$top_builddir" uninstall >"\$T/real-uninstall.out" 2>&1 && echo "PASS make uninstall" || echo "FAIL make uninstall"
left=\$(cd "\$T/ns/up" && find . -type f -o -type l | grep -i -e gridrpc -e grpc -e idlc | head -5)
[ -z "\$left" ] && echo "PASS make uninstall removes what make install put under $prefix" || echo "FAIL left: \$left"
EOF
timeout 300 unshare -m sh inside.sh >inside.out 2>inside.err; rc=$?
if ! grep -q '^ready$' inside.out; then
  ok "# SKIP the real-root install: no private mount namespace with an overlay here (rc $rc: $(tail -1 inside.err))"
else
  while read -r verdict what; do
    case $verdict in PASS) ok "real root: $what" ;; FAIL) fail "real root: $what" ;; esac
  done <inside.out
  if grep -q '^FAIL' inside.out; then
    for f in real-install.out rcc.out rsrv.out.err rprog.out real-uninstall.out; do [ -f "$f" ] && { echo "$f:"; cat "$f"; } | diag; done
  fi
  [ "$(grep -c '^PASS' inside.out)" -eq 6 ] || fail "real root: $(grep -c '^PASS' inside.out) of 6 steps passed"
fi
trap - EXIT
finish
