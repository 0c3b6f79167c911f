#!/bin/sh
# fortran.sh: the Fortran binding end to end. Builds a server module from Fortran
# subroutines (tests/fortran/fsub.f90, Calls "Fortran" in fsub.idl) with gridrpc-module,
# starts a gridrpcd serving it with the standard modules, and runs
# tests/fortran/fortran_test and tests/fortran/fdata_test (remote data handles,
# transactions) against it (one TAP line per PASS/FAIL line they print);
# then checks that a failed call without ierr stops the program with the reason.
. "$top_srcdir/tests/lib.sh"
GRIDRPCD=${GRIDRPCD:-$top_builddir/gridrpcd}
GRIDRPC_TEST_MODULES=${GRIDRPC_TEST_MODULES:-$top_builddir/stubs/.libs}
FTEST="$top_builddir/tests/fortran/fortran_test"
FSUB_O="$top_builddir/tests/fortran/fsub-pic.o"
GRIDRPC_INCLUDE="$top_srcdir/include"
export IDLC GRIDRPC_INCLUDE CC
cd "$T_TMP" || exit 1

spid=
stop_server() {
  [ -n "$spid" ] || return 0
  kill -TERM "$spid" 2>/dev/null
  _i=0
  while kill -0 "$spid" 2>/dev/null && [ $_i -lt 100 ]; do sleep 0.1; _i=$((_i + 1)); done
  kill -9 "$spid" 2>/dev/null
  wait "$spid" 2>/dev/null
  spid=
}
trap 'stop_server' EXIT

# The module: the stub idlc writes calls fscale_ by reference; the object comes from
# make (gfortran -fPIC), libgfortran for whatever runtime the compiler called.
if "$top_builddir/scripts/gridrpc-module" -o fsub.so "$top_srcdir/tests/fortran/fsub.idl" "$FSUB_O" -lgfortran \
  >module.out 2>&1; then
  ok "gridrpc-module builds a module from Fortran subroutines"
else
  fail "gridrpc-module with a Fortran object"; diag <module.out
fi

"$GRIDRPCD" --host 127.0.0.1 --port 0 --log-level warn --module "$GRIDRPC_TEST_MODULES/test.so" \
  --module "$GRIDRPC_TEST_MODULES/linalg.so" --module "$T_TMP/fsub.so" --job-dir "$T_TMP/jobs" >server.out 2>server.err &
spid=$!
_i=0
while ! grep -q '^listening on ' server.out 2>/dev/null && kill -0 "$spid" 2>/dev/null && [ $_i -lt 200 ]; do
  sleep 0.1; _i=$((_i + 1))
done
GRIDRPC_SERVER=$(sed -n 's/^listening on //p' server.out)
if [ -n "$GRIDRPC_SERVER" ]; then
  ok "gridrpcd serves test, linalg and the Fortran module"
else
  fail "gridrpcd did not start"; diag <server.err; finish; exit 1
fi
export GRIDRPC_SERVER

"$FTEST" >ftest.out 2>ftest.err; rc=$?
while IFS= read -r line; do
  case $line in
  "PASS "*) ok "${line#PASS }" ;;
  "SKIP "*) ok "${line#SKIP } # SKIP" ;;
  "FAIL "*) fail "${line#FAIL }" ;;
  *) echo "# $line" ;;
  esac
done <ftest.out
if [ $rc -eq 0 ] && grep -q '^PASS ' ftest.out; then ok "fortran_test ran to its end"; else
  fail "fortran_test exit status $rc"; diag <ftest.err
fi

# Remote data handles and transactions (tests/fortran/fdata_test.f90).
"$top_builddir/tests/fortran/fdata_test" >fdata.out 2>fdata.err; rc=$?
while IFS= read -r line; do
  case $line in
  "PASS "*) ok "data: ${line#PASS }" ;;
  "FAIL "*) fail "data: ${line#FAIL }" ;;
  *) echo "# $line" ;;
  esac
done <fdata.out
if [ $rc -eq 0 ] && grep -q '^PASS ' fdata.out; then ok "fdata_test ran to its end"; else
  fail "fdata_test exit status $rc"; diag <fdata.err
fi

# Without ierr, a failed call stops the program: non-zero status, reason on stderr.
"$FTEST" stop >stop.out 2>stop.err; rc=$?
if [ $rc -ne 0 ] && ! grep -q 'still running' stop.out && grep -q "grid_call('test/no_such_function')" stop.err \
  && grep -q 'GRID_ERR_NOT_FOUND' stop.err; then
  ok "a failed call without ierr stops the program with the reason"
else
  fail "error stop without ierr (rc $rc)"; diag <stop.out; diag <stop.err
fi

# An argument error without ierr names the call once, not twice ("grid_call('f'):
# grid_call('f'): ...").
"$FTEST" stop-args >stopa.out 2>stopa.err; rc=$?
named=$(grep -o "grid_call('test/echo_double')" stopa.err | wc -l)
if [ $rc -ne 0 ] && ! grep -q 'still running' stopa.out && [ "$named" = 1 ] && grep -q 'GRID_ERR_ARGS' stopa.err; then
  ok "an argument error without ierr stops the program naming the call once"
else
  fail "error stop for an argument error (rc $rc, the call named $named times)"; diag <stopa.out; diag <stopa.err
fi

stop_server
finish
