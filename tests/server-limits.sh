#!/bin/sh
# server-limits.sh: gridrpcd's limits per call, against a real client on loopback. Each
# limit ends its call with its own error, naming the limit, where it comes from and the
# option or IDL line that raises it, and the server then serves dmmul exactly:
#   - an IDL Timeout ends that function's endless loop; a function of the same module
#     without one runs longer than it unharmed; gridrpc describe shows the Timeout;
#   - --call-timeout ends an endless loop; a function's looser IDL Timeout wins over it;
#     --call-timeout-max caps the IDL Timeout;
#   - --call-cpu ends a function whose threads burn CPU (its own thread only waits for
#     them, so only the threads' CPU can count), and not one that sleeps three times the
#     limit (wall time is not CPU time);
#   - --call-memory: an allocation past it fails the call as "ran out of memory", while
#     a plain crash under the same limit stays a crash;
#   - executors that cannot be started any more fail a call with GRID_ERR_BUSY after a
#     bounded wait instead of holding it for ever, and calls run again once they can;
#   - SIGTERM stops the server and its executors (the supervisor's clean stop).
# Bounds hold on a loaded machine: a limit is checked by its words, never by how soon
# it struck, and functions that must not be stopped run at least twice a limit.
. "$top_srcdir/tests/lib.sh"
GRIDRPCD=${GRIDRPCD:-$top_builddir/gridrpcd}
CLI=${GRIDRPC_CLI:-$top_builddir/gridrpc}
GRIDRPC_MODULE="$top_builddir/scripts/gridrpc-module"
GRIDRPC_INCLUDE="$top_srcdir/include"
export IDLC GRIDRPC_INCLUDE CC
lib=$top_builddir/.libs/libgridrpc.so
LINALG=$top_builddir/stubs/.libs/linalg.so
if [ ! -f "$lib" ]; then echo "1..0 # SKIP no shared libgridrpc (built with --disable-shared)"; rm -rf "$T_TMP"; exit 0; fi
cd "$T_TMP" || exit 1
case "${STUB_CFLAGS:-}" in *-fsanitize*) sanitized=yes ;; *) sanitized=no ;; esac

cat >lim.idl <<'IDL'
Module lim;
Globals {
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double mono(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
/* Busy until SECONDS of wall time have passed (for ever when negative). */
static void busy(double seconds) {
    double end = mono() + seconds;
    volatile unsigned long n = 0;
    while (seconds < 0 || mono() < end) n++;
}
static void *burner(void *arg) {
    (void)arg;
    busy(-1);
    return NULL;
}
}
Define loop_idl(IN int n)
"loops for ever; its own limit is 1 s"
Timeout 1
{ (void)n; busy(-1); }
Define loop_60(IN int n)
"loops for ever; its own limit is 60 s"
Timeout "1m"
{ (void)n; busy(-1); }
Define spin(IN double seconds, OUT double *took)
"busy for SECONDS; no limit of its own"
{ double t0 = mono(); busy(seconds); *took = mono() - t0; }
Define spin_60(IN double seconds, OUT double *took)
"busy for SECONDS; its own limit is 60 s"
Timeout 60
{ double t0 = mono(); busy(seconds); *took = mono() - t0; }
Define loop(IN int n)
"loops for ever; no limit of its own"
{ (void)n; busy(-1); }
Define burn(IN int threads)
"THREADS threads burn CPU for ever; the calling thread only waits for them"
{
    pthread_t t[8];
    int i;
    for (i = 0; i < threads && i < 8; i++) pthread_create(&t[i], NULL, burner, NULL);
    for (i = 0; i < threads && i < 8; i++) pthread_join(t[i], NULL);
}
Define nap(IN double seconds, OUT double *took)
"sleeps SECONDS (no CPU)"
{
    double t0 = mono();
    struct timespec ts;
    ts.tv_sec = (time_t)seconds;
    ts.tv_nsec = (long)((seconds - (double)ts.tv_sec) * 1e9);
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
    *took = mono() - t0;
}
Define hog(IN int mib, OUT int *got)
"allocates and touches MIB MiB (a NULL from malloc crashes it)"
{
    size_t n = (size_t)mib << 20;
    char *p = malloc(n);
    memset(p, 1, n);
    *got = p[n - 1];
    free(p);
}
Define segv(IN int n)
"dereferences NULL"
{ *(volatile int *)0 = n; }
IDL
if "$GRIDRPC_MODULE" lim.idl >mod.out 2>&1 && [ -f lim.so ]; then ok "test module builds"; else fail "test module"; diag <mod.out; finish; exit 1; fi

cat >client.c <<'C'
/* The client side of server-limits.sh: client PORT FUNCTION ARG prints one line,
 * "FUNCTION CODE SECONDS MESSAGE" (SECONDS: the function's own measure of its time,
 * or the call's when it failed); client PORT dmmul checks a 64 x 64 product exactly. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "gridrpc.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    if (argc < 3) return 2;
    char f[300];
    grid_set_timeouts_np(5, 120);
    if (strcmp(argv[2], "dmmul") == 0) {
        enum { N = 64 };
        static double a[N * N], b[N * N], c[N * N];
        snprintf(f, sizeof f, "gridrpc://127.0.0.1:%s/linalg/dmmul", argv[1]);
        for (int i = 0; i < N * N; i++) {
            a[i] = i % 7;
            b[i] = (i % 5) - 2;
        }
        int rc = grid_call(f, N, a, b, c);
        if (rc != GRID_OK) { printf("dmmul %s %s\n", grid_error_name(rc), grid_last_error()); return 0; }
        for (int i = 0; i < N; i++)
            for (int j = 0; j < N; j++) {
                double want = 0;
                for (int k = 0; k < N; k++) want += a[i * N + k] * b[k * N + j];
                if (c[i * N + j] != want) { printf("dmmul C[%d][%d] = %g, not %g\n", i, j, c[i * N + j], want); return 0; }
            }
        printf("dmmul exact\n");
        return 0;
    }
    if (argc < 4) return 2;
    snprintf(f, sizeof f, "gridrpc://127.0.0.1:%s/lim/%s", argv[1], argv[2]);
    const char *fn = argv[2];
    double t0 = now(), took = -1;
    int rc, got = 0;
    if (strcmp(fn, "spin") == 0 || strcmp(fn, "spin_60") == 0 || strcmp(fn, "nap") == 0)
        rc = grid_call(f, atof(argv[3]), &took);
    else if (strcmp(fn, "hog") == 0)
        rc = grid_call(f, atoi(argv[3]), &got);
    else
        rc = grid_call(f, atoi(argv[3]));
    if (rc != GRID_OK || took < 0) took = now() - t0;
    printf("%s %s %.3f %s\n", fn, grid_error_name(rc), took, rc ? grid_last_error() : (got ? "got" : ""));
    return 0;
}
C
if $CC ${STUB_CFLAGS:-} -std=gnu11 -I"$GRIDRPC_INCLUDE" -o client client.c -L"$top_builddir/.libs" -lgridrpc \
  -Wl,-rpath,"$top_builddir/.libs" >cc.out 2>&1; then ok "client builds"; else fail "client"; diag <cc.out; finish; exit 1; fi

# start_server OUT MODULE ARGS...: gridrpcd in the background (pid in $spid), port in $port.
start_server() {
  _out=$1; _mod=$2; shift 2
  "$GRIDRPCD" --host 127.0.0.1 --port 0 --module "$_mod" --module "$LINALG" --log-level info "$@" \
    >"$_out" 2>"$_out.err" &
  spid=$!
  port=$(listening_port "$_out" "$spid") && [ -n "$port" ]
}
stop_server() { kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null; }
trap 'kill "$spid" 2>/dev/null' EXIT

# call NAME FUNCTION ARG: one call, its line appended to NAME.out; then dmmul on the
# same server, appended too.
call() {
  timeout 150 ./client "$port" "$2" "$3" >>"$1.out" 2>&1
  timeout 60 ./client "$port" dmmul >>"$1.out" 2>&1
}
# exact NAME: every dmmul of NAME.out was exact.
exact() {
  [ "$(grep -c '^dmmul' "$1.out")" -ge 1 ] && ! grep '^dmmul' "$1.out" | grep -qv '^dmmul exact$'
}
# took NAME FUNCTION: the seconds of FUNCTION's line in NAME.out.
took() { sed -n "s/^$2 [A-Z_]* \([0-9.]*\) .*/\1/p" "$1.out" | head -n 1; }
at_least() { awk -v t="$1" -v m="$2" 'BEGIN { exit !(t != "" && t + 0 >= m) }'; }

# --- The IDL's own limit, on a server with none of its own.
if start_server idl.out "$T_TMP/lim.so"; then
  call idl loop_idl 0
  call idl spin 3
  if grep -q "^loop_idl GRID_ERR_FAILED .* lim/loop_idl ran longer than 1 s, its own limit (Timeout 1 in its IDL), and was stopped on server .*: raise its Timeout and rebuild the module" idl.out &&
     at_least "$(took idl loop_idl)" 1; then
    ok "an IDL Timeout 1 ends that function's endless loop, naming the IDL line"
  else fail "IDL Timeout"; diag <idl.out; fi
  if grep -q '^spin GRID_OK' idl.out && at_least "$(took idl spin)" 3; then
    ok "a function of the same module without a Timeout runs 3 s unharmed"
  else fail "the IDL Timeout reached another function"; diag <idl.out; fi
  if exact idl && kill -0 "$spid" 2>/dev/null; then ok "the server serves dmmul exactly after the IDL limit"; else fail "dmmul after the IDL limit"; diag <idl.out; fi
  # The limit travels in the descriptor: gridrpc describe shows it to clients.
  timeout 30 "$CLI" --server "127.0.0.1:$port" describe lim/loop_60 >describe.out 2>&1
  timeout 30 "$CLI" --server "127.0.0.1:$port" --json describe lim/loop_idl >>describe.out 2>&1
  timeout 30 "$CLI" --server "127.0.0.1:$port" --json describe lim/spin >>describe.out 2>&1
  if grep -q '^Timeout: *60 s (its IDL' describe.out && grep -q '"name": "lim/loop_idl".*"timeout": 1,' describe.out &&
     grep -q '"name": "lim/spin".*"timeout": null,' describe.out; then
    ok "gridrpc describe shows a function's IDL Timeout (text and JSON), and null without one"
  else fail "describe with a Timeout"; diag <describe.out; fi
  # SIGTERM: the supervisor stops and every executor is gone with the server.
  kids=$(cat /proc/"$spid"/task/*/children 2>/dev/null || ps -o pid= --ppid "$spid" 2>/dev/null)
  kill "$spid"
  _i=0
  while kill -0 "$spid" 2>/dev/null && [ $_i -lt 300 ]; do sleep 0.1; _i=$((_i + 1)); done
  wait "$spid" 2>/dev/null; src=$?
  left=
  for k in $kids; do
    if [ -e "/proc/$k" ] && ! grep -q '^State:.*Z' "/proc/$k/status" 2>/dev/null; then left="$left $k"; fi
  done
  if [ -n "$kids" ] && [ "$src" = 0 ] && [ -z "$left" ] && grep -q 'stopped' idl.out.err &&
     ! grep -q 'supervisor did not stop' idl.out.err; then
    ok "SIGTERM stops the server (status 0), its supervisor and its executors"
  else fail "SIGTERM (status $src, executors '$kids', left '$left')"; diag <idl.out.err; fi
else fail "gridrpcd starts"; diag <idl.out.err; fi

# --- The server's limit per call, a looser IDL Timeout, and the cap.
if start_server wall.out "$T_TMP/lim.so" --call-timeout 1s --call-timeout-max 4s; then
  call wall loop 0
  call wall spin_60 2.5
  call wall loop_60 0
  if grep -q "^loop GRID_ERR_FAILED .* lim/loop ran longer than 1 s, the server's limit per call (--call-timeout), and was stopped on server .*: raise --call-timeout there" wall.out &&
     at_least "$(took wall loop)" 1; then
    ok "--call-timeout ends an endless loop, naming the option"
  else fail "--call-timeout"; diag <wall.out; fi
  if grep -q '^spin_60 GRID_OK' wall.out && at_least "$(took wall spin_60)" 2.5; then
    ok "a function's looser IDL Timeout wins over --call-timeout (2.5 s under a 1 s default)"
  else fail "IDL Timeout over --call-timeout"; diag <wall.out; fi
  if grep -q "^loop_60 GRID_ERR_FAILED .* lim/loop_60 ran longer than 4 s, the server's cap on every call (--call-timeout-max; its IDL asks for Timeout 60)" wall.out &&
     at_least "$(took wall loop_60)" 4; then
    ok "--call-timeout-max caps an IDL Timeout, naming both"
  else fail "--call-timeout-max"; diag <wall.out; fi
  if exact wall && kill -0 "$spid" 2>/dev/null; then ok "the server serves dmmul exactly after each time limit"; else fail "dmmul after time limits"; diag <wall.out; fi
  stop_server
else fail "gridrpcd --call-timeout --call-timeout-max starts"; diag <wall.out.err; fi
"$GRIDRPCD" --call-timeout 5s --call-timeout-max 2s >usage.out 2>&1; rc=$?
if [ $rc -ne 0 ] && grep -q -- '--call-timeout 5 s is above --call-timeout-max 2 s' usage.out; then
  ok "--call-timeout above --call-timeout-max is refused, naming both"
else fail "--call-timeout above the cap (rc $rc)"; diag <usage.out; fi

# --- CPU time, not wall time.
if start_server cpu.out "$T_TMP/lim.so" --call-cpu 1s; then
  call cpu burn 2
  call cpu nap 3
  if grep -q "^burn GRID_ERR_FAILED .* lim/burn used more than 1 s of CPU time (its threads together), the server's limit per call (--call-cpu), and was stopped on server .*: raise --call-cpu there" cpu.out; then
    ok "--call-cpu ends a call whose threads burn CPU, naming the option"
  else fail "--call-cpu"; diag <cpu.out; fi
  if grep -q '^nap GRID_OK' cpu.out && at_least "$(took cpu nap)" 3; then
    ok "--call-cpu 1s leaves a call that sleeps 3 s alone (CPU time, not wall time)"
  else fail "--call-cpu stopped a sleeping call"; diag <cpu.out; fi
  if exact cpu && kill -0 "$spid" 2>/dev/null; then ok "the server serves dmmul exactly after the CPU limit"; else fail "dmmul after the CPU limit"; diag <cpu.out; fi
  stop_server
else fail "gridrpcd --call-cpu starts"; diag <cpu.out.err; fi

# --- Memory: an allocation past the limit, and a plain crash under it.
if [ "$sanitized" = yes ]; then
  ok "--call-memory # SKIP a sanitizer's shadow memory needs more address space than RLIMIT_AS leaves"
  ok "a crash under --call-memory # SKIP sanitized build"
  ok "dmmul after --call-memory # SKIP sanitized build"
elif start_server mem.out "$T_TMP/lim.so" --call-memory 64M; then
  call mem hog 16
  call mem hog 256
  call mem segv 1
  if grep -q '^hog GRID_OK .* got$' mem.out &&
     grep -q '^hog GRID_ERR_FAILED .* lim/hog ran out of memory on server .*: a call may allocate at most 64 MiB there (--call-memory), and an allocation past that failed (then it crashed (signal 11' mem.out; then
    ok "--call-memory: 16 MiB runs, 256 MiB fails as out of memory, naming the limit and the option"
  else fail "--call-memory"; diag <mem.out; fi
  if grep -q '^segv GRID_ERR_CRASHED .*lim/segv crashed (signal 11' mem.out && ! grep '^segv' mem.out | grep -q 'ran out of memory'; then
    ok "a NULL dereference under --call-memory is a crash, not out of memory"
  else fail "crash under --call-memory"; diag <mem.out; fi
  if exact mem && kill -0 "$spid" 2>/dev/null; then ok "the server serves dmmul exactly after the memory limit"; else fail "dmmul after --call-memory"; diag <mem.out; fi
  stop_server
else fail "gridrpcd --call-memory starts"; diag <mem.out.err; fi

# --- Executors that cannot start: the module's file is gone when a crash needs a
# replacement; a call then waits a bounded time and gets GRID_ERR_BUSY; with the file
# back, the supervisor's next try succeeds and calls run again.
mkdir -p gone && cp lim.so gone/lim.so
if start_server busy.out "$T_TMP/gone/lim.so" --threads 1; then
  mv gone/lim.so gone/lim.so.away
  timeout 60 ./client "$port" segv 1 >>busy.out 2>&1
  timeout 150 ./client "$port" spin 0 >>busy.out 2>&1
  if grep -q '^spin GRID_ERR_BUSY .*no executor process is free on server .* to run lim/spin: starting one keeps failing (an executor process exited with status 1 as it started)' busy.out; then
    ok "no executor can start: a call gets GRID_ERR_BUSY naming why, after a bounded wait"
  else fail "GRID_ERR_BUSY when executors cannot start"; diag <busy.out; diag <busy.out.err; fi
  mv gone/lim.so.away gone/lim.so
  _i=0
  while ! grep -q '^spin GRID_OK' busy.out && [ $_i -lt 30 ]; do
    timeout 150 ./client "$port" spin 0 >>busy.out 2>&1
    _i=$((_i + 1))
  done
  timeout 60 ./client "$port" dmmul >>busy.out 2>&1
  if grep -q '^spin GRID_OK' busy.out && grep -q '^dmmul exact$' busy.out; then
    ok "once an executor starts again, calls run"
  else fail "calls after the executors came back"; diag <busy.out; fi
  stop_server
else fail "gridrpcd --threads 1 starts"; diag <busy.out.err; fi
trap - EXIT
finish
