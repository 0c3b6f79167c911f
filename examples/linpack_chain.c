/* linpack_chain.c: the Linpack chain of issue 11: factor A once (linalg/dgefa), then
 * solve for R right-hand sides (linalg/dgesl, one call each, all in flight at once,
 * spread round-robin over the servers), three ways:
 *
 *   sent   the factors come back to the client after dgefa and go out again with every
 *          dgesl (what a stateless library forces: n^2 doubles each way and R more out);
 *   kept   A is put once on the first server as a remote data handle; dgefa factors it
 *          in place there and leaves ipvt there too (a handle made by grid_data_new_np);
 *          every dgesl passes both handles, and a server that lacks them gets a copy
 *          server to server (the client sends n^2 doubles once, whatever R and S);
 *   txn    the plain calls inside grid_transaction_begin / _end: the library finds the
 *          chain's dependencies from the buffers and keeps the factors on the servers.
 *
 * Every solution is checked with Linpack's normalised residual. Prints one line per run
 * or CSV (--csv), with the array bytes the client sent and received (counted from the
 * calls; not for txn, whose data movement is the library's), the bytes the library wrote
 * and read on its connections (grid_get_stats_np), and with --link-bytes the bytes on
 * the host's links (the lab's client namespace).
 *
 * Usage: linpack_chain --servers HOST:PORT[,...] [--mode sent|kept|txn|all] [--rhs R]
 *                      [--reps K] [--csv] [--link-bytes] N */
#include <float.h>
#include <math.h>
#include <string.h>

#include <gridrpc.h>

#include "common.h"
#include "study.h"

static const char *prog = "linpack_chain";

/* Linpack's normalised residual ||A x - b|| / (n ||A|| ||x|| eps). */
static double residual(int n, const double *A, const double *x, const double *b) {
    double rmax = 0, amax = 0, xmax = 0;
    for (int i = 0; i < n; i++) {
        double r = -b[i];
        for (int j = 0; j < n; j++) {
            r += A[(size_t)i * n + j] * x[j];
            amax = fmax(amax, fabs(A[(size_t)i * n + j]));
        }
        rmax = fmax(rmax, fabs(r));
        xmax = fmax(xmax, fabs(x[i]));
    }
    return rmax / (n * amax * xmax * DBL_EPSILON);
}

typedef struct chain {
    int n, R, S;
    char (*srv)[280];
    const double *A0, *B0; /* the matrix and the R right-hand sides (R x n), untouched */
    double *a, *x;         /* working copies: the factors, the solutions */
    int *ipvt;
    unsigned long long sent, received;
} chain;

#define D sizeof(double)

/* Starts the R solves (round-robin over the servers) with A and IPVT (buffers or
 * handles) and waits for them. */
static int solves(chain *c, const void *a, const void *ipvt, int counted) {
    char url[400];
    for (int k = 0; k < c->R; k++) {
        int id = grid_call_async(study_url(url, sizeof url, c->srv[k % c->S], "linalg/dgesl"), c->n, a, ipvt,
                                 c->x + (size_t)k * c->n, 0);
        if (id <= 0) {
            fprintf(stderr, "%s: dgesl %d on %s could not start: %s\n", prog, k, c->srv[k % c->S],
                    grid_last_error());
            grid_wait_all();
            return 1;
        }
        if (counted) c->sent += (unsigned long long)c->n * c->n * D + c->n * sizeof(int);
        c->sent += c->n * D;
        c->received += c->n * D;
    }
    if (grid_wait_all() != GRID_OK) {
        fprintf(stderr, "%s: a dgesl failed: %s\n", prog, grid_last_error());
        return 1;
    }
    return 0;
}

static int run_sent(chain *c) {
    char url[400];
    int info = -1;
    if (grid_call(study_url(url, sizeof url, c->srv[0], "linalg/dgefa"), c->n, c->a, c->ipvt, &info) !=
            GRID_OK ||
        info != 0) {
        fprintf(stderr, "%s: dgefa on %s failed (info %d): %s\n", prog, c->srv[0], info, grid_last_error());
        return 1;
    }
    c->sent += (unsigned long long)c->n * c->n * D;
    c->received += (unsigned long long)c->n * c->n * D + c->n * sizeof(int);
    return solves(c, c->a, c->ipvt, 1);
}

static int run_kept(chain *c) {
    char url[400];
    grid_data_np *ha = NULL, *hp = NULL;
    int info = -1, rc = 1;
    if (grid_data_put_np(&ha, c->srv[0], GRID_TYPE_DOUBLE, (size_t)c->n * c->n, c->a) != GRID_OK ||
        grid_data_new_np(&hp, GRID_TYPE_INT, (size_t)c->n) != GRID_OK) {
        fprintf(stderr, "%s: cannot make the handles on %s: %s\n", prog, c->srv[0], grid_last_error());
        goto out;
    }
    c->sent += (unsigned long long)c->n * c->n * D;
    /* a is INOUT: its input is the handle's data and its output replaces it there. */
    if (grid_call(study_url(url, sizeof url, c->srv[0], "linalg/dgefa"), c->n, (void *)ha, (void *)hp,
                  &info) != GRID_OK ||
        info != 0) {
        fprintf(stderr, "%s: dgefa on %s failed (info %d): %s\n", prog, c->srv[0], info, grid_last_error());
        goto out;
    }
    rc = solves(c, ha, hp, 0);
out:
    if ((ha && grid_data_free_np(ha) != GRID_OK) || (hp && grid_data_free_np(hp) != GRID_OK)) {
        fprintf(stderr, "%s: freeing the handles failed: %s\n", prog, grid_last_error());
        rc = 1;
    }
    return rc;
}

/* The same calls as run_sent, synchronous and in program order, recorded by a
 * transaction: the library runs them at grid_transaction_end. The servers are named
 * by URL, so the placement is ours; the data movement is the transaction's. */
static int run_txn(chain *c) {
    char url[400];
    int info = -1;
    if (grid_transaction_begin() != GRID_OK) {
        fprintf(stderr, "%s: grid_transaction_begin: %s\n", prog, grid_last_error());
        return 1;
    }
    if (grid_call(study_url(url, sizeof url, c->srv[0], "linalg/dgefa"), c->n, c->a, c->ipvt, &info) !=
        GRID_OK)
        goto fail;
    for (int k = 0; k < c->R; k++)
        if (grid_call(study_url(url, sizeof url, c->srv[k % c->S], "linalg/dgesl"), c->n, c->a, c->ipvt,
                      c->x + (size_t)k * c->n, 0) != GRID_OK)
            goto fail;
    if (grid_transaction_end() != GRID_OK) {
        fprintf(stderr, "%s: the transaction failed: %s\n", prog, grid_last_error());
        return 1;
    }
    if (info != 0) {
        fprintf(stderr, "%s: dgefa reported info %d\n", prog, info);
        return 1;
    }
    return 0;
fail:
    fprintf(stderr, "%s: recording a call failed: %s\n", prog, grid_last_error());
    grid_transaction_abort_np();
    return 1;
}

static void usage(FILE *f) {
    fprintf(f,
            "Usage: %s --servers HOST:PORT[,...] [--mode sent|kept|txn|all] [--rhs R] [--reps K]\n"
            "       [--csv] [--link-bytes] N\n"
            "Factors an N x N matrix (dgefa) and solves R right-hand sides (dgesl, default 8)\n"
            "with the factors sent back and forth, kept on the servers as remote data handles,\n"
            "or chained by a transaction; checks every residual.\n",
            prog);
}

int main(int argc, char **argv) {
    const char *servers = NULL, *mode = "all";
    int R = 8, reps = 1, csv = 0, link = 0, n = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--csv") == 0)
            csv = 1;
        else if (strcmp(a, "--link-bytes") == 0)
            link = 1;
        else if (i + 1 < argc && strcmp(a, "--servers") == 0)
            servers = argv[++i];
        else if (i + 1 < argc && strcmp(a, "--mode") == 0)
            mode = argv[++i];
        else if (i + 1 < argc && strcmp(a, "--rhs") == 0)
            R = parse_size(argv[++i], 1, 4096, "--rhs");
        else if (i + 1 < argc && strcmp(a, "--reps") == 0)
            reps = parse_size(argv[++i], 1, 1000, "--reps");
        else if (a[0] != '-' && n < 0)
            n = parse_size(a, 1, 20000, "N");
        else {
            fprintf(stderr, "%s: unexpected argument '%s'\n", prog, a);
            usage(stderr);
            return 2;
        }
    }
    if (n < 0 || servers == NULL) {
        fprintf(stderr, "%s: %s is required\n", prog, n < 0 ? "N" : "--servers");
        usage(stderr);
        return 2;
    }
    static const char *modes[] = {"sent", "kept", "txn"};
    int want[3] = {0};
    for (int m = 0; m < 3; m++)
        want[m] = strcmp(mode, "all") == 0 || strcmp(mode, modes[m]) == 0;
    if (!want[0] && !want[1] && !want[2]) {
        fprintf(stderr, "%s: --mode takes sent, kept, txn or all, not '%s'\n", prog, mode);
        return 2;
    }
    static char srv[STUDY_MAX_SERVERS][280];
    chain c = {.n = n, .R = R, .srv = srv};
    c.S = study_servers(servers, srv, prog);
    size_t nn = (size_t)n * n;
    double *A0 = malloc(nn * D), *B0 = malloc((size_t)R * n * D);
    c.a = malloc(nn * D);
    c.x = malloc((size_t)R * n * D);
    c.ipvt = malloc((size_t)n * sizeof(int));
    if (!A0 || !B0 || !c.a || !c.x || !c.ipvt) {
        fprintf(stderr, "%s: out of memory for n = %d\n", prog, n);
        return 1;
    }
    random_fill(A0, nn, 3);
    random_fill(B0, (size_t)R * n, 4);
    c.A0 = A0;
    c.B0 = B0;

    if (csv)
        printf("mode,n,servers,rhs,rep,seconds,sent_bytes,received_bytes,wire_tx_bytes,wire_rx_bytes,link_tx_"
               "bytes,"
               "link_rx_bytes,"
               "max_residual,ok\n");
    int failed = 0;
    /* Run 0 warms up (connections, interfaces fetched, the servers' first touch of
     * their memory): checked, not reported. */
    for (int rep = 0; rep <= reps; rep++)
        for (int m = 0; m < 3; m++) {
            if (!want[m]) continue;
            memcpy(c.a, A0, nn * D);
            memcpy(c.x, B0, (size_t)R * n * D);
            memset(c.ipvt, 0, (size_t)n * sizeof(int));
            c.sent = c.received = 0;
            unsigned long long rx0, tx0, rx1, tx1;
            grid_stats_np w0, w1;
            grid_get_stats_np(&w0);
            study_link_bytes(&rx0, &tx0);
            double t0 = now_seconds();
            int rc = m == 0 ? run_sent(&c) : m == 1 ? run_kept(&c) : run_txn(&c);
            double t = now_seconds() - t0;
            study_link_bytes(&rx1, &tx1);
            grid_get_stats_np(&w1);
            unsigned long long wtx = w1.bytes_sent - w0.bytes_sent,
                               wrx = w1.bytes_received - w0.bytes_received;
            double worst = 0;
            for (int k = 0; k < R; k++)
                worst = fmax(worst, residual(n, A0, c.x + (size_t)k * n, B0 + (size_t)k * n));
            /* A NaN residual (no solution at all) must fail too. */
            int ok = rc == 0 && worst < 100;
            failed |= !ok;
            /* What a transaction moves is the library's choice: only the wire counts it. */
            int counted = m != 2;
            char counts[64] = ",";
            if (counted) snprintf(counts, sizeof counts, "%llu,%llu", c.sent, c.received);
            if (rep == 0) {
                if (!ok) fprintf(stderr, "%s: the warm-up run (%s) failed\n", prog, modes[m]);
                continue;
            }
            if (csv)
                printf("%s,%d,%d,%d,%d,%.6f,%s,%llu,%llu,%llu,%llu,%.3f,%d\n", modes[m], n, c.S, R, rep, t,
                       counts, wtx, wrx, link ? tx1 - tx0 : 0ULL, link ? rx1 - rx0 : 0ULL, worst, ok);
            else
                printf(
                    "linpack_chain n=%d %s, %d right-hand sides on %d server%s: %.3f s, wire sent %.1f MB, "
                    "received %.1f MB; worst residual %.2f %s\n",
                    n, modes[m], R, c.S, c.S == 1 ? "" : "s", t, wtx / 1e6, wrx / 1e6, worst,
                    ok ? "OK" : "FAILED");
            if (!csv && link)
                printf("  link: sent %.1f MB, received %.1f MB\n", (tx1 - tx0) / 1e6, (rx1 - rx0) / 1e6);
            fflush(stdout);
        }
    free(A0);
    free(B0);
    free(c.a);
    free(c.x);
    free(c.ipvt);
    grid_reset_np(); /* ends the data session on every server */
    return failed;
}
