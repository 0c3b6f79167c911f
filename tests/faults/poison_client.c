/* poison_client.c: the client side of the crashing-function tests (tests/faults/poison.sh,
 * tests/poison-grid.sh). The servers and metaserver come from GRIDRPC_METASERVER (or
 * GRIDRPC_SERVER), the timeouts from GRIDRPC_TIMEOUT.
 *
 *   crash N        N calls of test/crash(1) (it dereferences NULL), one after another;
 *                  each must fail with GRID_ERR_CRASHED: its executor crashed, or the
 *                  metaserver holds the function back. Prints "call I executor|held"
 *                  for each, the first message of each kind, and "crash calls=N
 *                  executor=A held=B other=C seconds=S"
 *   math STOPFILE  linalg/dmmul and linalg/linpack in turns until STOPFILE exists (at
 *                  least 4 of each, at most 100,000), each result compared exactly with
 *                  the answer computed here: "math running" after the first of each, then
 *                  "math dmmul=A linpack=B wrong=C errors=D"
 *
 * Exit 0 when every outcome was the expected one, 1 otherwise, 2 on a usage error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gridrpc.h"

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int crash(int n) {
    int executor = 0, held = 0, other = 0;
    double t0 = now_s();
    for (int i = 0; i < n; i++) {
        int rc = grid_call("test/crash", 1);
        const char *msg = grid_last_error();
        /* Under a sanitizer the fault is caught and the executor exits with its status. */
        if (rc == GRID_ERR_CRASHED && (strstr(msg, "crashed (signal") || strstr(msg, "exited with status")) &&
            strstr(msg, "the server is still up")) {
            if (!executor++) printf("first executor crash: call %d: %s\n", i, msg);
            printf("call %d executor\n", i);
        } else if (rc == GRID_ERR_CRASHED && strstr(msg, "is held back from new calls")) {
            if (!held++) printf("first hold: call %d: %s\n", i, msg);
            printf("call %d held\n", i);
        } else {
            if (other++ < 5) printf("unexpected: call %d: %s %s\n", i, grid_error_name(rc), msg);
        }
    }
    printf("crash calls=%d executor=%d held=%d other=%d seconds=%.2f\n", n, executor, held, other,
           now_s() - t0);
    return other ? 1 : 0;
}

/* C = A B for small integers: exact in doubles, whatever order the BLAS adds in. */
static int dmmul_once(int k, int *wrong) {
    enum { N = 48 };
    static double a[N * N], b[N * N], c[N * N], want[N * N];
    for (int i = 0; i < N * N; i++) {
        a[i] = (double)((i * 7 + k) % 11) - 5;
        b[i] = (double)((i * 3 + 2 * k) % 13) - 6;
    }
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            double s = 0;
            for (int l = 0; l < N; l++)
                s += a[i * N + l] * b[l * N + j];
            want[i * N + j] = s;
        }
    int rc = grid_call("linalg/dmmul", N, a, b, c);
    if (rc) {
        printf("dmmul error: %s %s\n", grid_error_name(rc), grid_last_error());
        return rc;
    }
    if (memcmp(c, want, sizeof c) != 0) {
        printf("dmmul %d: wrong result\n", k);
        ++*wrong;
    }
    return 0;
}

/* A x = b with A unit upper triangular of small integers and an integer x: partial
 * pivoting keeps the diagonal (nothing below it), so the solve is exact. */
static int linpack_once(int k, int *wrong) {
    enum { N = 40 };
    static double a[N * N], x[N], rhs[N];
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            a[i * N + j] = j < i ? 0 : j == i ? 1 : (double)((i + 2 * j + k) % 3) - 1;
    for (int i = 0; i < N; i++) {
        x[i] = (double)((i * 5 + k) % 9) - 4;
        rhs[i] = 0;
    }
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            rhs[i] += a[i * N + j] * x[j];
    int info = -1;
    int rc = grid_call("linalg/linpack", N, a, rhs, &info);
    if (rc) {
        printf("linpack error: %s %s\n", grid_error_name(rc), grid_last_error());
        return rc;
    }
    if (info != 0 || memcmp(rhs, x, sizeof x) != 0) {
        printf("linpack %d: wrong result (info %d)\n", k, info);
        ++*wrong;
    }
    return 0;
}

static int math(const char *stop) {
    int dm = 0, lp = 0, wrong = 0, errors = 0;
    for (int k = 0; k < 100000; k++) {
        if (k >= 4 && access(stop, F_OK) == 0) break;
        if (dmmul_once(k, &wrong))
            errors++;
        else
            dm++;
        if (linpack_once(k, &wrong))
            errors++;
        else
            lp++;
        if (k == 0) printf("math running\n"); /* the caller may start what runs beside it */
    }
    printf("math dmmul=%d linpack=%d wrong=%d errors=%d\n", dm, lp, wrong, errors);
    return wrong || errors ? 1 : 0;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 3 && strcmp(argv[1], "crash") == 0) return crash(atoi(argv[2]));
    if (argc == 3 && strcmp(argv[1], "math") == 0) return math(argv[2]);
    fprintf(stderr, "usage: poison-client crash N | math STOPFILE\n");
    return 2;
}
