/* txn_bench.c: the overhead of a transaction per call, against the same calls made as
 * plain asynchronous calls (grid_call_async, then grid_wait_all) on the same servers, in
 * one run. The server is GRIDRPC_SERVER or the metaserver GRIDRPC_METASERVER, as for any
 * client. Independent calls (no data shared), so both forms can run them all at once:
 * what differs is the transaction's recording, graph, staging and landing.
 *
 *   txn_bench [CALLS [N [REPS]]]   CALLS calls of linalg/daxpy on N doubles each (N 0:
 *                                  test/null_call), REPS rounds of each form (best kept)
 * Prints one line per form (microseconds per call) and their ratio. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "gridrpc.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One round of CALLS calls: as a transaction (TXN) or asynchronous; seconds, or -1. */
static double round_of(int txn, int calls, int n, double **x, double **y) {
    double t0 = now();
    int rc = txn ? grid_transaction_begin() : GRID_OK;
    for (int i = 0; i < calls && rc == GRID_OK; i++) {
        if (txn)
            rc = n ? grid_call("linalg/daxpy", n, 1.0, x[i], y[i]) : grid_call("test/null_call");
        else {
            int id =
                n ? grid_call_async("linalg/daxpy", n, 1.0, x[i], y[i]) : grid_call_async("test/null_call");
            rc = id > 0 ? GRID_OK : -id;
        }
    }
    if (rc == GRID_OK) rc = txn ? grid_transaction_end() : grid_wait_all();
    if (rc != GRID_OK) {
        fprintf(stderr, "txn_bench: %s\n", grid_last_error());
        if (txn && grid_transaction_active_np()) grid_transaction_abort_np();
        return -1;
    }
    return now() - t0;
}

int main(int argc, char **argv) {
    int calls = argc > 1 ? atoi(argv[1]) : 200, n = argc > 2 ? atoi(argv[2]) : 1000;
    int reps = argc > 3 ? atoi(argv[3]) : 5;
    if (calls < 1 || n < 0 || reps < 1) {
        fprintf(stderr, "usage: txn_bench [CALLS >= 1 [N >= 0 [REPS >= 1]]]\n");
        return 2;
    }
    double **x = malloc((size_t)calls * sizeof *x), **y = malloc((size_t)calls * sizeof *y);
    for (int i = 0; i < calls; i++) {
        x[i] = calloc((size_t)n + 1, sizeof(double));
        y[i] = calloc((size_t)n + 1, sizeof(double));
    }
    double best[2] = {1e30, 1e30};
    if (round_of(0, calls, n, x, y) < 0) return 1; /* warm up: connections, descriptors */
    if (round_of(1, calls, n, x, y) < 0) return 1;
    for (int r = 0; r < reps; r++)
        for (int txn = 0; txn < 2; txn++) { /* alternated, so drift hits both */
            double t = round_of(txn, calls, n, x, y);
            if (t < 0) return 1;
            if (t < best[txn]) best[txn] = t;
        }
    const char *what = n ? "linalg/daxpy" : "test/null_call";
    printf("%d calls of %s (n=%d), best of %d rounds\n", calls, what, n, reps);
    printf("async:       %9.1f us/call\n", best[0] / calls * 1e6);
    printf("transaction: %9.1f us/call\n", best[1] / calls * 1e6);
    printf("overhead:    %9.1f us/call (ratio %.2f)\n", (best[1] - best[0]) / calls * 1e6, best[1] / best[0]);
    grid_transaction_stats_np s;
    grid_transaction_get_stats_np(&s);
    printf("last transaction: %ld calls on %ld servers, %ld RAW pairs\n", s.calls, s.servers, s.raw);
    return 0;
}
