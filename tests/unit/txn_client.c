/* txn_client.c: the client side of tests/txn-grid.sh: transactions against real
 * servers (GRIDRPC_METASERVER or GRIDRPC_SERVER set by the script). Each mode runs the
 * same calls as a transaction and plainly one by one, and compares the results bit for
 * bit; it prints what it saw and exits 0 only when every check held.
 *
 *   txn_client indep N SECONDS   N independent test/sleep calls in one transaction
 *   txn_client linpack N NRHS    dgefa, then dgesl on NRHS right-hand sides
 *   txn_client daxpy N           daxpy chains over overlapping ranges of one array
 *   txn_client subrange N        INOUT sub-ranges of one array, disjoint and overlapping
 *   txn_client kill N K SECONDS  K slow independent producers and a daxpy chain over their
 *                                results; prints "running" when the transaction starts (the
 *                                script kills a server then)
 *   txn_client abort N           begin, record, abort: nothing runs, nothing is touched
 *   txn_client errors N          nested begin, async inside, end without begin, a failing
 *                                call named in the error, buffers untouched after it
 *   txn_client stats             prints the last transaction's counters (after a mode) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gridrpc.h"

static int bad;

static void check(int ok, const char *what) {
    printf("%s: %s\n", ok ? "ok" : "FAILED", what);
    if (!ok) {
        printf("  last error: %s\n", grid_last_error());
        bad = 1;
    }
}

static void stats(void) {
    grid_transaction_stats_np s;
    grid_transaction_get_stats_np(&s);
    printf("stats calls=%ld raw=%ld war=%ld waw=%ld reruns=%ld servers=%ld seconds=%.3f\n", s.calls, s.raw,
           s.war, s.waw, s.reruns, s.servers, s.seconds);
}

static double *filled(int n, unsigned seed) {
    double *v = malloc((size_t)n * sizeof *v);
    srand(seed);
    for (int i = 0; i < n; i++)
        v[i] = (double)rand() / RAND_MAX - 0.5;
    return v;
}

static int indep(int n, double seconds) {
    int rc = grid_transaction_begin();
    for (int i = 0; i < n && !rc; i++)
        rc = grid_call("test/sleep", seconds);
    check(rc == GRID_OK, "the sleep calls are recorded");
    rc = grid_transaction_end();
    check(rc == GRID_OK, "the transaction of independent calls succeeds");
    stats();
    return 0;
}

static int linpack(int n, int nrhs) {
    double *a0 = filled(n * n, 1), *a1 = malloc((size_t)n * n * sizeof(double));
    double *a2 = malloc((size_t)n * n * sizeof(double));
    for (int i = 0; i < n; i++)
        a0[i * n + i] += n; /* well conditioned */
    memcpy(a1, a0, (size_t)n * n * sizeof(double));
    memcpy(a2, a0, (size_t)n * n * sizeof(double));
    int *p1 = calloc((size_t)n, sizeof(int)), *p2 = calloc((size_t)n, sizeof(int));
    double **b1 = malloc((size_t)nrhs * sizeof *b1), **b2 = malloc((size_t)nrhs * sizeof *b2);
    for (int k = 0; k < nrhs; k++) {
        b1[k] = filled(n, 10 + (unsigned)k);
        b2[k] = filled(n, 10 + (unsigned)k);
    }
    int info1 = -1, info2 = -2;
    /* one by one */
    int rc = grid_call("linalg/dgefa", n, a1, p1, &info1);
    for (int k = 0; k < nrhs && !rc; k++)
        rc = grid_call("linalg/dgesl", n, a1, p1, b1[k], 0);
    check(rc == GRID_OK, "the plain calls succeed");
    /* as a transaction */
    rc = grid_transaction_begin();
    if (!rc) rc = grid_call("linalg/dgefa", n, a2, p2, &info2);
    for (int k = 0; k < nrhs && !rc; k++)
        rc = grid_call("linalg/dgesl", n, a2, p2, b2[k], 0);
    check(rc == GRID_OK && memcmp(a0, a2, (size_t)n * n * sizeof(double)) == 0 && info2 == -2,
          "recording touches nothing");
    rc = grid_transaction_end();
    check(rc == GRID_OK, "the transaction succeeds");
    int same = memcmp(a1, a2, (size_t)n * n * sizeof(double)) == 0 &&
               memcmp(p1, p2, (size_t)n * sizeof(int)) == 0 && info1 == info2;
    for (int k = 0; k < nrhs; k++)
        same = same && memcmp(b1[k], b2[k], (size_t)n * sizeof(double)) == 0;
    check(same, "factors, pivots, info and every solution are the sequential ones bit for bit");
    stats();
    return 0;
}

/* The sequence of daxpy calls over overlapping parts of one array Y (3N long). */
static int daxpy_seq(int n, double *y, const double *x) {
    int rc = grid_call("linalg/daxpy", n, 0.5, x, y);                              /* y[0,n) += .5 x */
    if (!rc) rc = grid_call("linalg/daxpy", 2 * n, 2.0, y, y + n);                 /* y[n,3n) += 2 y[0,2n) */
    if (!rc) rc = grid_call("linalg/daxpy", n, -1.5, y + 2 * n, y + n / 2);        /* partial overlap */
    if (!rc) rc = grid_call("linalg/daxpy", n, 3.0, x, y + 2 * n);                 /* after call 2's write */
    if (!rc) rc = grid_call("linalg/daxpy", n / 2, 1.0, y + n / 4, y + 5 * n / 2); /* reads the middle */
    return rc;
}

static int daxpy(int n) {
    double *x = filled(n, 3), *y1 = filled(3 * n, 4), *y2 = filled(3 * n, 4), *y0 = filled(3 * n, 4);
    int rc = daxpy_seq(n, y1, x);
    check(rc == GRID_OK, "the plain daxpy chain succeeds");
    rc = grid_transaction_begin();
    if (!rc) rc = daxpy_seq(n, y2, x);
    check(rc == GRID_OK && memcmp(y0, y2, 3 * (size_t)n * sizeof(double)) == 0, "recording touches nothing");
    rc = grid_transaction_end();
    check(rc == GRID_OK, "the transaction of the chain succeeds");
    check(memcmp(y1, y2, 3 * (size_t)n * sizeof(double)) == 0,
          "the chain's result is the sequential one bit for bit");
    stats();
    return 0;
}

static int subrange_seq(int n, double *x) {
    int rc = grid_call("test/subrange", n, 0, n / 2, x);              /* [0, n/2) */
    if (!rc) rc = grid_call("test/subrange", n, n / 2, n, x);         /* disjoint: [n/2, n) */
    if (!rc) rc = grid_call("linalg/daxpy", n, 2.0, x, x);            /* all of it, in place */
    if (!rc) rc = grid_call("test/subrange", n, n / 4, n / 2 + 1, x); /* overlaps both halves */
    if (!rc) rc = grid_call("test/strided", n, 3, x);                 /* every third element */
    return rc;
}

static int subrange(int n) {
    double *x1 = filled(n, 5), *x2 = filled(n, 5);
    int rc = subrange_seq(n, x1);
    check(rc == GRID_OK, "the plain sub-range calls succeed");
    rc = grid_transaction_begin();
    if (!rc) rc = subrange_seq(n, x2);
    rc = rc ? rc : grid_transaction_end();
    check(rc == GRID_OK, "the transaction of sub-range calls succeeds");
    check(memcmp(x1, x2, (size_t)n * sizeof(double)) == 0,
          "sub-range results are the sequential ones bit for bit");
    stats();
    return 0;
}

static int kill_mode(int n, int k, double seconds) {
    double **out = malloc((size_t)k * sizeof *out);
    int *canceled = calloc((size_t)k, sizeof(int));
    double *y = calloc((size_t)n, sizeof(double));
    int rc = grid_transaction_begin();
    for (int i = 0; i < k && !rc; i++) {
        out[i] = calloc((size_t)n, sizeof(double));
        rc = grid_call("test/sleep_cancelable", seconds, n, out[i], &canceled[i]);
    }
    for (int i = 0; i < k && !rc; i++)
        rc = grid_call("linalg/daxpy", n, 2.0, out[i], y);
    check(rc == GRID_OK, "the calls are recorded");
    printf("running\n");
    fflush(stdout);
    rc = grid_transaction_end();
    check(rc == GRID_OK, "the transaction survives the killed server");
    int right = 1;
    for (int i = 0; i < n; i++)
        right = right && y[i] == 2.0 * k;
    for (int i = 0; i < k; i++)
        right = right && out[i][0] == 1.0 && out[i][n - 1] == 1.0 && canceled[i] == 0;
    check(right, "every result is right");
    stats();
    return 0;
}

static int abort_mode(int n) {
    double *x = filled(n, 6), *y = filled(n, 7), *y0 = filled(n, 7);
    grid_stats_np s0, s1;
    grid_get_stats_np(&s0);
    int rc = grid_transaction_begin();
    if (!rc) rc = grid_call("linalg/daxpy", n, 2.0, x, y);
    check(rc == GRID_OK && grid_transaction_active_np() == 1, "a call is recorded");
    check(grid_transaction_abort_np() == GRID_OK && grid_transaction_active_np() == 0, "abort drops it");
    grid_get_stats_np(&s1);
    check(memcmp(y, y0, (size_t)n * sizeof(double)) == 0 && s1.calls == s0.calls,
          "nothing ran, nothing changed");
    check(grid_transaction_end() == GRID_ERR_ARGS, "end after abort: no transaction");
    rc = grid_call("linalg/daxpy", n, 2.0, x, y);
    check(rc == GRID_OK && y[0] == y0[0] + 2.0 * x[0], "a call after abort runs at once");
    return 0;
}

static int errors(int n) {
    double *x = filled(n, 8), *y = filled(n, 9), *y0 = filled(n, 9);
    check(grid_transaction_end() == GRID_ERR_ARGS && strstr(grid_last_error(), "grid_transaction_begin"),
          "end without begin is refused and says what to do");
    check(grid_transaction_abort_np() == GRID_ERR_ARGS, "abort without begin is refused");
    check(grid_transaction_begin() == GRID_OK, "begin");
    check(grid_transaction_begin() == GRID_ERR_ARGS && strstr(grid_last_error(), "nest"),
          "a nested begin is refused, naming the problem");
    int id = grid_call_async("linalg/daxpy", n, 2.0, x, y);
    check(id == -GRID_ERR_ARGS && strstr(grid_last_error(), "transaction"),
          "an asynchronous call inside is refused");
    check(grid_call("linalg/no_such_function", n) != GRID_OK,
          "a call of an unknown function fails when recorded");
    check(grid_call("linalg/daxpy", n, 2.0, x, y) == GRID_OK, "call 1 is recorded");
    check(grid_call("linalg/daxpy", n, 1.0, y, x) == GRID_OK, "call 2 is recorded");
    check(grid_call("test/sleep", 0.0) == GRID_OK, "call 3 is recorded");
    /* Larger than the servers' --max-array (4 MiB): refused when it is about to be sent. */
    int big = 600000;
    double *in = calloc((size_t)big, sizeof(double)), *out = calloc((size_t)big, sizeof(double));
    check(grid_call("test/echo_double", big, in, out) == GRID_OK,
          "call 4 (too big for the servers) is recorded");
    int rc = grid_transaction_end();
    const char *m = grid_last_error();
    printf("error: %s\n", m);
    check(rc == GRID_ERR_LIMIT && strstr(m, "call 4 of 4 (test/echo_double)"),
          "the failed call is named in the error");
    check(memcmp(y, y0, (size_t)n * sizeof(double)) == 0,
          "a failed transaction leaves the buffers untouched");
    check(grid_transaction_active_np() == 0, "the failed transaction is closed");
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: txn_client MODE ARGS (see the file's comment)\n");
        return 2;
    }
    const char *m = argv[1];
    int a = argc > 2 ? atoi(argv[2]) : 0, b = argc > 3 ? atoi(argv[3]) : 0;
    if (!strcmp(m, "indep"))
        indep(a, atof(argv[3]));
    else if (!strcmp(m, "linpack"))
        linpack(a, b);
    else if (!strcmp(m, "daxpy"))
        daxpy(a);
    else if (!strcmp(m, "subrange"))
        subrange(a);
    else if (!strcmp(m, "kill"))
        kill_mode(a, b, atof(argv[4]));
    else if (!strcmp(m, "abort"))
        abort_mode(a);
    else if (!strcmp(m, "errors"))
        errors(a);
    else {
        fprintf(stderr, "txn_client: unknown mode '%s'\n", m);
        return 2;
    }
    return bad;
}
