# tests/common/ng.sh: what the Ninf-G style tests share (tests/ngdiag, tests/ngcallback,
# tests/ngobj; sourced first, sh): tests/lib.sh, the work folder $T_TMP as the current
# one, the programs they run, a grpc.h client built with the diag checks (ng_client)
# and a Ninf-G client.conf naming the local server (ng_conf).
. "$top_srcdir/tests/lib.sh"
cd "$T_TMP" || exit 1
GRIDRPCD=${GRIDRPCD:-$top_builddir/gridrpcd}
GRIDRPC_MODULE="$top_builddir/scripts/gridrpc-module"
GRIDRPC_INCLUDE="$top_srcdir/include"
export IDLC GRIDRPC_INCLUDE CC
CLIENT_CFLAGS=${STUB_CFLAGS:-}

# ng_client NAME SRC LIBS...: builds the grpc.h client NAME from SRC and the diag checks
# (tests/common/diag_util.c) against the build tree's libgridrpc and LIBS: one check;
# the test ends there when it does not build.
ng_client() {
  _ng_name=$1 _ng_src=$2
  shift 2
  # shellcheck disable=SC2086
  if $CC $CLIENT_CFLAGS -o "$_ng_name" "$_ng_src" "$top_srcdir/tests/common/diag_util.c" \
    -I"$top_srcdir/tests/common" -I"$top_srcdir/include" -L"$top_builddir/.libs" \
    -Wl,-rpath,"$top_builddir/.libs" -lgridrpc "$@" >cc.out 2>&1; then
    ok "the grpc.h client builds"
  else
    fail "building $(basename "$_ng_src")"; diag <cc.out; finish; exit 1
  fi
}

# ng_conf PORT: client.conf, a Ninf-G 5 client configuration naming 127.0.0.1:PORT.
ng_conf() {
  cat >client.conf <<CONF
# Ninf-G 5 client configuration
<SERVER>
    hostname 127.0.0.1
    port $1
</SERVER>
CONF
}
