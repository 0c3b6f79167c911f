/* txn_client.c: the client side of tests/txn-grid.sh: transactions against real
 * servers (GRIDRPC_METASERVER or GRIDRPC_SERVER set by the script). Each mode runs the
 * same calls as a transaction and plainly one by one, and compares the results bit for
 * bit; it prints what it saw and exits 0 only when every check held.
 *
 *   txn_client indep N SECONDS   N independent test/sleep calls in one transaction
 *   txn_client linpack N NRHS    dgefa, then dgesl on NRHS right-hand sides
 *   txn_client daxpy N           daxpy chains over overlapping ranges of one array
 *   txn_client subrange N        INOUT sub-ranges of one array, disjoint and overlapping
 *   txn_client kill N K SECONDS  K fast producers, a slow one (SECONDS) and K daxpy over
 *                                their results; prints "running" when the transaction starts
 *                                (the script kills a server then)
 *   txn_client dead N FLAG       records, waits for the file FLAG (its server killed), ends
 *   txn_client threads N T       T threads, each with its own transaction at the same time
 *   txn_client ogf N             grpc_call inside a transaction (GRIDRPC_SERVER set)
 *   txn_client handles N         the caller's own data handles inside a transaction
 *   txn_client bytes N K         K in-place daxpy on one array: bytes the client receives
 *   txn_client abort N           begin, record, abort: nothing runs, nothing is touched
 *   txn_client errors N          nested begin, async inside, end without begin, a failing
 *                                call named in the error, buffers untouched after it
 *   txn_client stats             prints the last transaction's counters (after a mode) */
#include <math.h>
#include <pthread.h>
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

/* The test's arrays live until the process ends; they are freed at exit so that the
 * sanitizer build's leak check sees only the library's leaks. */
static void *kept[4096];
static int nkept;
static void free_kept(void) {
    while (nkept > 0)
        free(kept[--nkept]);
}
static void *keep(void *p) {
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    if (!p) {
        fprintf(stderr, "txn_client: out of memory\n");
        exit(2);
    }
    pthread_mutex_lock(&lock);
    if (nkept == 0) atexit(free_kept);
    if (nkept < (int)(sizeof kept / sizeof kept[0])) kept[nkept++] = p;
    pthread_mutex_unlock(&lock);
    return p;
}
#define tmalloc(n) keep(malloc(n))
#define tcalloc(n, m) keep(calloc(n, m))

static void stats(void) {
    grid_transaction_stats_np s;
    grid_transaction_get_stats_np(&s);
    printf("stats calls=%ld raw=%ld war=%ld waw=%ld reruns=%ld servers=%ld by_ref=%ld recomputed=%ld "
           "seconds=%.3f\n",
           s.calls, s.raw, s.war, s.waw, s.reruns, s.servers, s.by_ref, s.recomputed, s.seconds);
}

static double *filled(int n, unsigned seed) {
    double *v = tmalloc((size_t)n * sizeof *v);
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
    double *a0 = filled(n * n, 1), *a1 = tmalloc((size_t)n * n * sizeof(double));
    double *a2 = tmalloc((size_t)n * n * sizeof(double));
    for (int i = 0; i < n; i++)
        a0[i * n + i] += n; /* well conditioned */
    memcpy(a1, a0, (size_t)n * n * sizeof(double));
    memcpy(a2, a0, (size_t)n * n * sizeof(double));
    int *p1 = tcalloc((size_t)n, sizeof(int)), *p2 = tcalloc((size_t)n, sizeof(int));
    double **b1 = tmalloc((size_t)nrhs * sizeof *b1), **b2 = tmalloc((size_t)nrhs * sizeof *b2);
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
    if (!same) {
        int da = 0, db = 0;
        for (int i = 0; i < n * n; i++)
            da += a1[i] != a2[i];
        for (int k = 0; k < nrhs; k++)
            for (int i = 0; i < n; i++)
                db += b1[k][i] != b2[k][i];
        printf("  differ: %d of the factors, %d of the solutions, pivots %s, info %d %d\n", da, db,
               memcmp(p1, p2, (size_t)n * sizeof(int)) ? "differ" : "same", info1, info2);
    }
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

/* K fast producers (kept on their servers), one slow producer of Y, and K daxpy calls
 * that read each fast result and Y: the script kills a server that holds a finished
 * fast result while the slow one still runs, so that result must be computed again. */
static int kill_mode(int n, int k, double seconds) {
    double **out = tmalloc((size_t)k * sizeof *out);
    int *canceled = tcalloc((size_t)k + 1, sizeof(int));
    double *y = tcalloc((size_t)n, sizeof(double));
    int rc = grid_transaction_begin();
    for (int i = 0; i < k && !rc; i++) {
        out[i] = tcalloc((size_t)n, sizeof(double));
        rc = grid_call("test/sleep_cancelable", 0.05, n, out[i], &canceled[i]);
    }
    if (!rc) rc = grid_call("test/sleep_cancelable", seconds, n, y, &canceled[k]);
    for (int i = 0; i < k && !rc; i++)
        rc = grid_call("linalg/daxpy", n, 2.0, out[i], y);
    check(rc == GRID_OK, "the calls are recorded");
    printf("running\n");
    fflush(stdout);
    rc = grid_transaction_end();
    check(rc == GRID_OK, "the transaction survives the killed server");
    int right = 1;
    for (int i = 0; i < n; i++)
        right = right && y[i] == 1.0 + 2.0 * k;
    for (int i = 0; i < k; i++)
        right = right && out[i][0] == 1.0 && out[i][n - 1] == 1.0 && canceled[i] == 0;
    check(right, "every result is right");
    stats();
    return 0;
}

/* K daxpy calls updating one array Y in place: as a transaction, only the last value of
 * Y comes back to the client (the intermediate ones stay on the servers), against K
 * times Y for the calls one by one; the results are the same bit for bit. */
static int bytes_mode(int n, int k) {
    double *x = filled(n, 11), *y1 = filled(n, 12), *y2 = filled(n, 12);
    grid_stats_np s0, s1, s2;
    grid_get_stats_np(&s0);
    int rc = 0;
    for (int i = 0; i < k && !rc; i++)
        rc = grid_call("linalg/daxpy", n, 0.25 * (i + 1), x, y1);
    grid_get_stats_np(&s1);
    check(rc == GRID_OK, "the plain chain succeeds");
    rc = grid_transaction_begin();
    for (int i = 0; i < k && !rc; i++)
        rc = grid_call("linalg/daxpy", n, 0.25 * (i + 1), x, y2);
    rc = rc ? rc : grid_transaction_end();
    grid_get_stats_np(&s2);
    check(rc == GRID_OK, "the transaction succeeds");
    check(memcmp(y1, y2, (size_t)n * sizeof(double)) == 0, "the result is the sequential one bit for bit");
    unsigned long long ybytes = (unsigned long long)n * sizeof(double);
    unsigned long long plain = s1.bytes_received - s0.bytes_received,
                       txn = s2.bytes_received - s1.bytes_received;
    printf("bytes received: plain %llu, transaction %llu (y: %llu bytes)\n", plain, txn, ybytes);
    check(plain >= (unsigned long long)k * ybytes, "the plain calls bring y back every time");
    check(txn < ybytes + ybytes / 2,
          "the transaction brings y back once: the intermediate values stay on the servers");
    stats();
    return 0;
}

/* The caller's own data handles inside a transaction: they are not staged, so every
 * use of one runs in program order (here a write after a read of the same handle). */
static int handles_mode(int n) {
    double *x = filled(n, 13), *y1 = filled(n, 14), *z1 = filled(n, 15), *y2 = filled(n, 14),
           *z2 = filled(n, 15);
    int rc = grid_call("linalg/daxpy", n, 2.0, x, y1);
    if (!rc) rc = grid_call("linalg/daxpy", n, 3.0, y1, z1);
    if (!rc) rc = grid_call("linalg/daxpy", n, -1.0, x, y1);
    check(rc == GRID_OK, "the plain calls succeed");
    grid_data_np *hy = NULL;
    rc = grid_data_put_np(&hy, "linalg/daxpy", GRID_TYPE_DOUBLE, (size_t)n, y2);
    check(rc == GRID_OK, "y is put on a server as a handle");
    if (!rc) rc = grid_transaction_begin();
    if (!rc) rc = grid_call("linalg/daxpy", n, 2.0, x, hy);  /* hy += 2x, on the server */
    if (!rc) rc = grid_call("linalg/daxpy", n, 3.0, hy, z2); /* reads hy */
    if (!rc) rc = grid_call("linalg/daxpy", n, -1.0, x, hy); /* then writes it: after the read */
    rc = rc ? rc : grid_transaction_end();
    check(rc == GRID_OK, "the transaction with a data handle succeeds");
    if (!rc) rc = grid_data_get_np(hy, y2, (size_t)n);
    check(rc == GRID_OK && memcmp(y1, y2, (size_t)n * sizeof(double)) == 0 &&
              memcmp(z1, z2, (size_t)n * sizeof(double)) == 0,
          "the handle's uses ran in program order: results bit for bit");
    grid_data_free_np(hy);
    stats();
    return 0;
}

/* The OGF API inside a transaction: grpc_call is recorded like grid_call, and
 * grpc_call_async is refused. */
static int ogf_mode(int n) {
    double *x = filled(n, 16), *y1 = filled(n, 17), *z1 = filled(n, 18), *y2 = filled(n, 17),
           *z2 = filled(n, 18);
    grpc_function_handle_t h;
    int ok = grpc_initialize(NULL) == GRPC_NO_ERROR &&
             grpc_function_handle_default(&h, "linalg/daxpy") == GRPC_NO_ERROR;
    check(ok, "grpc_initialize and a default handle");
    if (!ok) return 0;
    ok = grpc_call(&h, n, 2.0, x, y1) == GRPC_NO_ERROR && grpc_call(&h, n, 0.5, y1, z1) == GRPC_NO_ERROR;
    check(ok, "the plain grpc_calls succeed");
    check(grid_transaction_begin() == GRID_OK, "begin");
    ok = grpc_call(&h, n, 2.0, x, y2) == GRPC_NO_ERROR && grpc_call(&h, n, 0.5, y2, z2) == GRPC_NO_ERROR;
    check(ok && memcmp(y2, y1, (size_t)n * sizeof(double)) != 0, "grpc_call is recorded, not run");
    grpc_sessionid_t sid;
    check(grpc_call_async(&h, &sid, n, 1.0, x, y2) != GRPC_NO_ERROR, "grpc_call_async inside is refused");
    check(grid_transaction_end() == GRID_OK, "the transaction of grpc_calls succeeds");
    check(memcmp(y1, y2, (size_t)n * sizeof(double)) == 0 && memcmp(z1, z2, (size_t)n * sizeof(double)) == 0,
          "the grpc_calls' results are the sequential ones bit for bit");
    grpc_function_handle_destruct(&h);
    grpc_finalize();
    return 0;
}

/* Records two calls, waits for FLAG to exist (the script kills the only server then),
 * ends: the error names the call and why its server failed; nothing is touched. */
static int dead_mode(int n, const char *flag) {
    double *x = filled(n, 19), *y = filled(n, 20), *y0 = filled(n, 20);
    int rc = grid_transaction_begin();
    if (!rc) rc = grid_call("linalg/daxpy", n, 2.0, x, y);
    if (!rc) rc = grid_call("linalg/daxpy", n, 3.0, y, x);
    check(rc == GRID_OK, "two calls are recorded");
    printf("recorded\n");
    fflush(stdout);
    for (int i = 0; i < 400 && access(flag, F_OK) != 0; i++)
        usleep(50000);
    rc = grid_transaction_end();
    const char *m = grid_last_error();
    printf("error: %s\n", m);
    check(rc == GRID_ERR_CONNECT && strstr(m, "call 1 of 2 (linalg/daxpy)") &&
              strstr(m, "no server could run it") && strstr(m, "connection refused"),
          "the error names the call, the server and why");
    check(memcmp(y, y0, (size_t)n * sizeof(double)) == 0, "the caller's buffers are untouched");
    return 0;
}

/* Transactions are per thread: T threads each run their own chain at once. */
struct chain {
    int n, ok;
    double *x, *y, *want;
};
static void *chain_thread(void *arg) {
    struct chain *c = arg;
    int rc = grid_transaction_begin();
    for (int i = 0; i < 4 && !rc; i++)
        rc = grid_call("linalg/daxpy", c->n, 0.5 * (i + 1), c->x, c->y);
    rc = rc ? rc : grid_transaction_end();
    c->ok = rc == GRID_OK && memcmp(c->y, c->want, (size_t)c->n * sizeof(double)) == 0;
    return NULL;
}

static int threads_mode(int n, int t) {
    struct chain c[8];
    pthread_t th[8];
    if (t > 8) t = 8;
    for (int k = 0; k < t; k++) {
        c[k] = (struct chain){n, 0, filled(n, 30 + (unsigned)k), filled(n, 40 + (unsigned)k),
                              filled(n, 40 + (unsigned)k)};
        for (int i = 0; i < 4; i++)
            grid_call("linalg/daxpy", n, 0.5 * (i + 1), c[k].x, c[k].want);
    }
    for (int k = 0; k < t; k++)
        pthread_create(&th[k], NULL, chain_thread, &c[k]);
    int all = 1;
    for (int k = 0; k < t; k++) {
        pthread_join(th[k], NULL);
        all = all && c[k].ok;
    }
    check(all, "each thread's transaction gives its own sequential result bit for bit");
    check(grid_transaction_active_np() == 0, "the main thread has no transaction of theirs");
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
    double *in = tcalloc((size_t)big, sizeof(double)), *out = tcalloc((size_t)big, sizeof(double));
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
    else if (!strcmp(m, "dead") && argc > 3)
        dead_mode(a, argv[3]);
    else if (!strcmp(m, "threads"))
        threads_mode(a, b);
    else if (!strcmp(m, "ogf"))
        ogf_mode(a);
    else if (!strcmp(m, "handles"))
        handles_mode(a);
    else if (!strcmp(m, "bytes"))
        bytes_mode(a, b);
    else if (!strcmp(m, "errors"))
        errors(a);
    else {
        fprintf(stderr, "txn_client: unknown mode '%s'\n", m);
        return 2;
    }
    return bad;
}
