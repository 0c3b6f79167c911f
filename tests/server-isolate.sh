#!/bin/sh
# server-isolate.sh: gridrpcd's executor processes (the default; --isolate is an alias)
# against a real client on loopback. The calls of one connection run at once (each in
# an executor of its own; their start and end times, read there from the system-wide
# monotonic clock, must overlap), a cancel ends the running call's executor, a crash
# fails only its call while another of the same connection goes on, and large results
# of concurrent calls arrive whole and in step. Then, on servers without --isolate: a
# segfault, exit(3), abort() and a stack overflow each give their own error and the
# server goes on serving dmmul exactly; 200 crashes in a row leave it up; a cancel of a
# function that never polls frees a one-executor server at once; --call-timeout and
# --call-memory end a call with an error naming them.
. "$top_srcdir/tests/lib.sh"
GRIDRPCD=${GRIDRPCD:-$top_builddir/gridrpcd}
GRIDRPC_MODULE="$top_builddir/scripts/gridrpc-module"
GRIDRPC_INCLUDE="$top_srcdir/include"
export IDLC GRIDRPC_INCLUDE CC
lib=$top_builddir/.libs/libgridrpc.so
LINALG=$top_builddir/stubs/.libs/linalg.so
if [ ! -f "$lib" ]; then echo "1..0 # SKIP no shared libgridrpc (built with --disable-shared)"; rm -rf "$T_TMP"; exit 0; fi
cd "$T_TMP" || exit 1

cat >iso.idl <<'IDL'
Module iso;
Globals {
#include <time.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
static double mono(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
static volatile int depth_sink;
static int deep(int n) {
    volatile char pad[4096];
    pad[0] = (char)n;
    depth_sink = n;
    if (n > 0) return deep(n + 1) + pad[0];
    return 0;
}
static void nap(double seconds) {
    struct timespec ts;
    ts.tv_sec = (time_t)seconds;
    ts.tv_nsec = (long)((seconds - (double)ts.tv_sec) * 1e9);
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}
}
Define span(IN double seconds, OUT double *start, OUT double *end, OUT int *pid)
"sleeps SECONDS; START and END: the monotonic clock (one for every process of the machine)"
{
    *start = mono();
    *pid = (int)getpid();
    nap(seconds);
    *end = mono();
}
Define napping(IN double seconds, IN string pidfile)
"writes its process id to PIDFILE, then sleeps SECONDS"
{
    FILE *f = fopen(pidfile, "w");
    if (f) {
        fprintf(f, "%d\n", (int)getpid());
        fclose(f);
    }
    nap(seconds);
}
Define crash(IN double delay)
"dereferences NULL after DELAY seconds"
{
    nap(delay);
    *(volatile int *)0 = 1;
}
Define misbehave(IN int how)
"1 dereferences NULL, 2 calls exit(3), 3 aborts, 4 overflows its stack"
{
    if (how == 1) *(volatile int *)0 = 1;
    if (how == 2) exit(3);
    if (how == 3) abort();
    if (how == 4) deep(1);
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
Define scaled(IN int n, IN double k, IN double in[n], OUT double out[n])
"out = k * in"
{
    int i;
    for (i = 0; i < n; i++) out[i] = k * in[i];
}
IDL
if "$GRIDRPC_MODULE" iso.idl >mod.out 2>&1 && [ -f iso.so ]; then ok "test module builds"; else fail "test module"; diag <mod.out; finish; exit 1; fi

cat >client.c <<'C'
/* The client side of server-isolate.sh: one connection (the library pipelines calls
 * to one server), several calls in flight. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "gridrpc.h"

static char url[256];
static const char *fn(const char *name) {
    static char buf[300];
    snprintf(buf, sizeof buf, "%s/%s", url, name);
    return buf;
}
static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    if (argc < 3) return 2;
    snprintf(url, sizeof url, "gridrpc://127.0.0.1:%s/iso", argv[1]);
    grid_set_timeouts_np(5, 60);
    if (strcmp(argv[2], "overlap") == 0) {
        /* Three 1 s calls at once; print each one's start, end and process. */
        double start[3], end[3];
        int pid[3], id[3];
        for (int i = 0; i < 3; i++) {
            id[i] = grid_call_async(fn("span"), 1.0, &start[i], &end[i], &pid[i]);
            if (id[i] <= 0) { printf("async: %s\n", grid_last_error()); return 1; }
        }
        for (int i = 0; i < 3; i++) {
            int rc = grid_wait(id[i]);
            if (rc != GRID_OK) { printf("call %d: %s: %s\n", i, grid_error_name(rc), grid_call_message_np(id[i])); return 1; }
        }
        for (int i = 0; i < 3; i++) printf("%.6f %.6f %d\n", start[i], end[i], pid[i]);
        return 0;
    }
    if (strcmp(argv[2], "cancel") == 0 && argc > 3) {
        /* A long call, canceled once its child runs; then the connection goes on. */
        int id = grid_call_async(fn("napping"), 30.0, argv[3]);
        if (id <= 0) { printf("async: %s\n", grid_last_error()); return 1; }
        for (int i = 0; i < 200 && access(argv[3], F_OK) != 0; i++) usleep(50000);
        double t0 = now();
        int rc = grid_cancel(id);
        int wrc = grid_wait(id);
        printf("cancel %s wait %s %.3f\n", grid_error_name(rc), grid_error_name(wrc), now() - t0);
        double s, e;
        int pid;
        rc = grid_call(fn("span"), 0.0, &s, &e, &pid);
        printf("next %s %.3f\n", grid_error_name(rc), now() - t0);
        return 0;
    }
    if (strcmp(argv[2], "hang") == 0 && argc > 3) {
        int rc = grid_call(fn("napping"), 30.0, argv[3]);
        printf("hang %s\n", grid_error_name(rc));
        return 0;
    }
    if (strcmp(argv[2], "crash") == 0) {
        /* A crash while another call of the connection runs: only the crash fails. */
        double s, e;
        int pid;
        int a = grid_call_async(fn("span"), 1.0, &s, &e, &pid);
        int b = grid_call_async(fn("crash"), 0.2);
        int ra = grid_wait(a), rb = grid_wait(b);
        printf("span %s crash %s %s\n", grid_error_name(ra), grid_error_name(rb), grid_call_message_np(b));
        return 0;
    }
    if (strcmp(argv[2], "misbehave") == 0 && argc > 3) {
        /* One bad call per argument (misbehave's HOW); each prints its code and message.
         * A crash costs a replacement executor, not seconds: a call that waits 20 s for
         * one found the server not replacing them. */
        grid_set_timeouts_np(5, 20);
        for (int i = 3; i < argc; i++) {
            int rc = grid_call(fn("misbehave"), atoi(argv[i]));
            printf("how %s %s %s\n", argv[i], grid_error_name(rc), rc ? grid_last_error() : "");
        }
        return 0;
    }
    if (strcmp(argv[2], "loop") == 0 && argc > 3) {
        /* N segfaulting calls in a row: how many failed as crashes. */
        int n = atoi(argv[3]), crashed = 0;
        grid_set_timeouts_np(5, 20);
        for (int i = 0; i < n; i++) {
            int rc = grid_call(fn("misbehave"), 1);
            if (rc == GRID_ERR_CRASHED && strstr(grid_last_error(), "crashed (signal 11")) {
                crashed++;
                continue;
            }
            printf("call %d: %s %s\n", i, grid_error_name(rc), grid_last_error());
            break;
        }
        printf("loop %d of %d crashed\n", crashed, n);
        return 0;
    }
    if (strcmp(argv[2], "dmmul") == 0) {
        /* C = A B with small integers: exact in doubles. */
        enum { N = 64 };
        static double a[N * N], b[N * N], c[N * N];
        char f[300];
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
    if (strcmp(argv[2], "timeout") == 0 && argc > 3) {
        int rc = grid_call(fn("napping"), 30.0, argv[3]);
        printf("timeout %s %s\n", grid_error_name(rc), grid_last_error());
        double s, e;
        int pid;
        rc = grid_call(fn("span"), 0.0, &s, &e, &pid);
        printf("next %s\n", grid_error_name(rc));
        return 0;
    }
    if (strcmp(argv[2], "hog") == 0 && argc > 3) {
        for (int i = 3; i < argc; i++) {
            int got = 0, rc = grid_call(fn("hog"), atoi(argv[i]), &got);
            printf("hog %s %s %d %s\n", argv[i], grid_error_name(rc), got, rc ? grid_last_error() : "");
        }
        return 0;
    }
    if (strcmp(argv[2], "bulk") == 0) {
        /* Four calls with 8 MB results each, answered while the others run. */
        enum { N = 1 << 20, K = 4 };
        double *in = malloc(N * sizeof *in), *out[K];
        int id[K];
        for (int i = 0; i < N; i++) in[i] = i;
        for (int k = 0; k < K; k++) {
            out[k] = calloc(N, sizeof *out[k]);
            id[k] = grid_call_async(fn("scaled"), N, (double)(k + 1), in, out[k]);
        }
        int bad = 0;
        for (int k = 0; k < K; k++) {
            int rc = grid_wait(id[k]);
            if (rc != GRID_OK) { printf("call %d: %s: %s\n", k, grid_error_name(rc), grid_call_message_np(id[k])); bad++; continue; }
            for (int i = 0; i < N; i++)
                if (out[k][i] != (k + 1) * in[i]) { printf("call %d: out[%d] = %g\n", k, i, out[k][i]); bad++; break; }
        }
        printf("bulk %s\n", bad ? "bad" : "ok");
        for (int k = 0; k < K; k++)
            free(out[k]);
        free(in);
        return 0;
    }
    return 2;
}
C
# STUB_CFLAGS: the sanitizer flags of the build under test (its library needs them).
if "$CC" ${STUB_CFLAGS:-} -std=gnu11 -I"$GRIDRPC_INCLUDE" -o client client.c -L"$top_builddir/.libs" -lgridrpc \
  -Wl,-rpath,"$top_builddir/.libs" >cc.out 2>&1; then ok "client builds"; else fail "client"; diag <cc.out; finish; exit 1; fi

# start_server OUT ARGS...: gridrpcd in the background (pid in $spid), port in $port.
start_server() {
  _out=$1; shift
  "$GRIDRPCD" --host 127.0.0.1 --port 0 --module "$T_TMP/iso.so" --module "$LINALG" "$@" >"$_out" 2>"$_out.err" &
  spid=$!
  _i=0
  while [ $_i -lt 100 ]; do
    if grep -q '^listening on ' "$_out" 2>/dev/null; then
      port=$(sed -n 's/^listening on 127\.0\.0\.1://p' "$_out")
      return 0
    fi
    kill -0 $spid 2>/dev/null || return 1
    sleep 0.1; _i=$((_i + 1))
  done
  return 1
}
stop_server() { kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null; }
trap 'kill "$spid" 2>/dev/null' EXIT

# Enough workers for three calls at once on any machine (the pool defaults to the cores).
# --isolate: the old option still starts the server (executors are the default anyway).
if ! start_server srv.out --isolate --threads 4 --log-level info; then
  fail "gridrpcd --isolate starts"; diag <srv.out.err; finish; exit 1
fi

timeout 60 ./client "$port" overlap >overlap.out 2>&1; rc=$?
# Overlapped: every call started before any ended (the latest start precedes the
# earliest end), each in a process of its own.
if [ $rc -eq 0 ] && awk 'NF == 3 { n++; if (n == 1 || $1 > ls) ls = $1; if (n == 1 || $2 < fe) fe = $2; p[$3] = 1 }
    END { np = 0; for (k in p) np++; exit !(n == 3 && ls < fe && np == 3) }' overlap.out; then
  ok "three calls of one connection run at once"
else
  fail "three calls of one connection run at once (rc $rc)"; diag <overlap.out; diag <srv.out.err
fi

timeout 60 ./client "$port" cancel "$T_TMP/nap.pid" >cancel.out 2>&1; rc=$?
child=$(cat nap.pid 2>/dev/null)
if [ $rc -eq 0 ] && grep -Eq '^cancel GRID_OK wait GRID_ERR_CANCELED 0\.' cancel.out; then
  ok "grid_cancel returns at once; the call waits CANCELED"
else
  fail "cancel status (rc $rc)"; diag <cancel.out
fi
# The child is ended (and reaped) at once, not after its 30 s.
gone=no
_i=0
while [ -n "$child" ] && [ $_i -lt 50 ]; do
  if [ ! -e "/proc/$child" ]; then gone=yes; break; fi
  sleep 0.1; _i=$((_i + 1))
done
if [ "$gone" = yes ]; then ok "the canceled call's child is gone"; else fail "the canceled call's child (pid '$child') still runs"; diag <srv.out.err; fi
if grep -Eq '^next GRID_OK ([0-9]|1[0-9])\.' cancel.out; then ok "the server answers the next call at once"; else fail "call after cancel"; diag <cancel.out; fi
if grep -q 'iso/napping.*GRID_ERR_CANCELED: the call was canceled while it ran' srv.out.err; then
  ok "the server logs the call as canceled"
else
  fail "log of the canceled call"; diag <srv.out.err
fi

timeout 60 ./client "$port" crash >crash.out 2>&1; rc=$?
# Under a sanitizer the child's fault is caught and it exits with the sanitizer's status.
case "${STUB_CFLAGS:-}" in *-fsanitize*) crashed='crashed (signal 11\|exited with status' ;; *) crashed='crashed (signal 11' ;; esac
if [ $rc -eq 0 ] && grep -q "^span GRID_OK crash GRID_ERR_CRASHED .*\($crashed\)" crash.out && kill -0 "$spid" 2>/dev/null; then
  ok "a crash fails only its call; the other call of the connection and the server go on"
else
  fail "crash beside a running call (rc $rc)"; diag <crash.out
fi

timeout 120 ./client "$port" bulk >bulk.out 2>&1; rc=$?
if [ $rc -eq 0 ] && grep -q '^bulk ok$' bulk.out; then ok "concurrent large results arrive whole"; else fail "bulk (rc $rc)"; diag <bulk.out; fi

# Each way of dying gets its own words, and the server serves exact results afterwards.
case "${STUB_CFLAGS:-}" in *-fsanitize*) sanitized=yes ;; *) sanitized=no ;; esac
timeout 120 ./client "$port" misbehave 1 2 3 4 >kinds.out 2>&1
timeout 30 ./client "$port" dmmul >>kinds.out 2>&1
if [ "$sanitized" = yes ]; then
  # A sanitizer catches the faults itself and exits with its own status.
  if [ "$(grep -c '^how [1-4] GRID_ERR_CRASHED .*on server .*; the server is still up' kinds.out)" = 4 ]; then
    ok "segfault, exit(3), abort and stack overflow each fail their call (sanitized build)"
  else fail "four kinds of crash (sanitized)"; diag <kinds.out; fi
else
  if grep -q '^how 1 GRID_ERR_CRASHED .*iso/misbehave crashed (signal 11, Segmentation fault) on server .*; the server is still up; not retried: it would crash again' kinds.out &&
     grep -q '^how 2 GRID_ERR_CRASHED .*iso/misbehave exited with status 3 on server' kinds.out &&
     grep -q '^how 3 GRID_ERR_CRASHED .*iso/misbehave crashed (signal 6, Abort' kinds.out &&
     grep -q '^how 4 GRID_ERR_CRASHED .*iso/misbehave crashed (signal 11, Segmentation fault: stack overflow)' kinds.out; then
    ok "segfault, exit(3), abort and stack overflow each fail their call with their own words"
  else fail "four kinds of crash"; diag <kinds.out; fi
fi
if grep -q '^dmmul exact$' kinds.out && kill -0 "$spid" 2>/dev/null; then ok "after them the server serves dmmul exactly"; else fail "dmmul after crashes"; diag <kinds.out; fi
if grep -q 'warn: .*executor [0-9]*: iso/misbehave crashed (signal 11.*starting another' srv.out.err; then
  ok "the server logs each crash at warn level and starts another executor"
else fail "log of a crash"; diag <srv.out.err; fi

timeout 600 ./client "$port" loop 200 >loop.out 2>&1
timeout 30 ./client "$port" dmmul >>loop.out 2>&1
if grep -q '^loop 200 of 200 crashed$' loop.out && grep -q '^dmmul exact$' loop.out && kill -0 "$spid" 2>/dev/null; then
  ok "200 crashing calls in a row leave the server up and serving"
else fail "200 crashes"; diag <loop.out; fi

# A server killed outright takes its calls' children with it (they would compute for
# nobody).
timeout 60 ./client "$port" hang "$T_TMP/hang.pid" >hang.out 2>&1 &
cpid=$!
_i=0
while [ ! -s hang.pid ] && [ $_i -lt 100 ]; do sleep 0.1; _i=$((_i + 1)); done
child=$(cat hang.pid 2>/dev/null)
kill -9 "$spid"; wait "$spid" 2>/dev/null
gone=no
_i=0
while [ -n "$child" ] && [ $_i -lt 50 ]; do
  if [ ! -e "/proc/$child" ] || grep -q '^State:.*Z' "/proc/$child/status" 2>/dev/null; then gone=yes; break; fi
  sleep 0.1; _i=$((_i + 1))
done
if [ "$gone" = yes ]; then ok "no child outlives a killed server"; else fail "child '$child' outlives the server"; kill -9 "$child" 2>/dev/null; fi
wait "$cpid" 2>/dev/null

# One executor: a cancel of a function that never polls must free it for the next call
# at once (asked, a 50 ms grace, then ended), not after the function's 30 s.
if start_server one.out --threads 1 --log-level info; then
  timeout 60 ./client "$port" cancel "$T_TMP/one.pid" >one.out 2>&1
  took=$(sed -n 's/^next GRID_OK \([0-9.]*\)$/\1/p' one.out)
  echo "# cancel to the next call's answer on a one-executor server: ${took:-?} s"
  if grep -q '^cancel GRID_OK wait GRID_ERR_CANCELED' one.out && [ -n "$took" ] && awk -v t="$took" 'BEGIN { exit !(t < 1) }'; then
    ok "a cancel frees the only executor within 1 s (the function never polls)"
  else fail "cancel on a one-executor server"; diag <one.out; fi
  # Its only executor killed while idle: nothing notices until the next call is handed
  # to it, and that call runs on the replacement instead of failing.
  ex=$(pgrep -f -- "--executor-process $spid " | head -n 1)
  [ -n "$ex" ] && kill -KILL "$ex"
  sleep 0.2
  timeout 60 ./client "$port" dmmul >idle.out 2>&1
  if [ -n "$ex" ] && grep -q '^dmmul exact$' idle.out && grep -q "executor $ex died while idle" one.out.err; then
    ok "a call given to an executor that died while idle runs on its replacement"
  else fail "an executor killed while idle (pid '${ex}')"; diag <idle.out; diag <one.out.err; fi
  stop_server
else fail "gridrpcd --threads 1 starts"; diag <one.out.err; fi

if start_server limit.out --threads 1 --call-timeout 1s --call-memory 64M --log-level info; then
  timeout 60 ./client "$port" timeout "$T_TMP/lim.pid" >limit.out 2>&1
  if grep -q '^timeout GRID_ERR_FAILED .*iso/napping ran longer than 1 s, the server.s limit per call (--call-timeout)' limit.out &&
     grep -q '^next GRID_OK' limit.out; then
    ok "--call-timeout ends a call that runs too long, naming the option; the next call runs"
  else fail "--call-timeout"; diag <limit.out; fi
  timeout 60 ./client "$port" hog 16 256 16 >hog.out 2>&1
  if [ "$sanitized" = yes ]; then
    ok "--call-memory # SKIP a sanitizer's shadow memory needs more address space than RLIMIT_AS leaves"
  elif grep -q '^hog 16 GRID_OK 1' hog.out && grep -q '^hog 256 GRID_ERR_FAILED .*ran out of memory.*--call-memory' hog.out &&
     [ "$(grep -c '^hog 16 GRID_OK 1' hog.out)" = 2 ]; then
    ok "--call-memory: an allocation past it fails the call, naming the option; calls within it run"
  else fail "--call-memory"; diag <hog.out; fi
  stop_server
else fail "gridrpcd --call-timeout --call-memory starts"; diag <limit.out.err; fi
trap - EXIT
finish
