/* dmmul_dist.c: the distributed matrix multiply of the sockets-vs-CORBA study. The rows
 * of A are cut into K blocks (a task farm: K stays the same whatever the number of
 * servers S; the default 12 divides evenly over 1, 2, 3 and 4 servers), dealt
 * round-robin to the servers, every block one asynchronous call of linalg/dmmul_rows,
 * all in flight at once:
 *
 *   stateless  every call carries its rows of A and the whole of B (B crosses the
 *              client's link K times);
 *   stateful   B is put once on each server (grid_data_put_np, the S puts in parallel)
 *              and every call passes the handle where B goes (B crosses S times).
 *
 * Each run's C is checked against a local dgemm. Prints one line per run, or CSV
 * (--csv): the wall time, the time of the puts, the array bytes the client sent and
 * received (counted from the calls made), the bytes the library wrote and read on its
 * connections (grid_get_stats_np: messages and all), and with --link-bytes the bytes on
 * the host's non-loopback links (/proc/net/dev: exact in the lab, where the client has
 * its own namespace; packet headers included).
 *
 * Usage: dmmul_dist --servers HOST:PORT[,...] [--mode stateless|stateful|both]
 *                   [--blocks K] [--reps R] [--csv] [--link-bytes] N */
#include <cblas.h>
#include <math.h>
#include <pthread.h>
#include <string.h>

#include <gridrpc.h>

#include "common.h"
#include "study.h"

static const char *prog = "dmmul_dist";

typedef struct run {
    double seconds, put_seconds, maxdiff;
    unsigned long long sent, received; /* array bytes, counted from the calls */
    unsigned long long link_rx, link_tx;
    unsigned long long wire_tx, wire_rx; /* the library's count of every byte on its connections */
} run;

/* One server's put of B, on a thread of its own so that the S puts overlap as the S
 * servers' calls do. */
typedef struct put_job {
    const char *server;
    const double *B;
    size_t count;
    grid_data_np *h;
    int rc;
    char err[256];
} put_job;

static void *put_thread(void *arg) {
    put_job *j = arg;
    j->rc = grid_data_put_np(&j->h, j->server, GRID_TYPE_DOUBLE, j->count, j->B);
    if (j->rc != GRID_OK) snprintf(j->err, sizeof j->err, "%s", grid_last_error());
    return NULL;
}

/* One multiply C = A B over the S servers; STATEFUL puts B first. Returns 0, or 1 with a
 * message. */
static int multiply(int stateful, int n, int S, int nb, char srv[][280], const double *A, const double *B,
                    double *C, run *r) {
    char url[400];
    int rc = 0;
    size_t nn = (size_t)n * n;
    put_job jobs[STUDY_MAX_SERVERS];
    pthread_t th[STUDY_MAX_SERVERS];
    memset(jobs, 0, sizeof jobs);
    memset(C, 0, (size_t)n * n * sizeof *C);
    r->sent = r->received = 0;
    r->put_seconds = 0;
    double t0 = now_seconds();
    if (stateful) {
        for (int s = 0; s < S; s++) {
            jobs[s] = (put_job){.server = srv[s], .B = B, .count = nn};
            if (pthread_create(&th[s], NULL, put_thread, &jobs[s]) != 0) {
                fprintf(stderr, "%s: cannot start a thread for the put to %s\n", prog, srv[s]);
                return 1;
            }
        }
        for (int s = 0; s < S; s++)
            pthread_join(th[s], NULL);
        for (int s = 0; s < S; s++) {
            if (jobs[s].rc != GRID_OK) {
                fprintf(stderr, "%s: putting B on %s failed: %s\n", prog, srv[s], jobs[s].err);
                rc = 1;
            } else
                r->sent += (unsigned long long)nn * sizeof(double);
        }
        r->put_seconds = now_seconds() - t0;
    }
    /* Block b takes rows [n b / nb, n (b + 1) / nb) (sizes differ by one row at most)
     * and goes to server b mod S. */
    for (int b = 0; b < nb && rc == 0; b++) {
        int r0 = (int)((long long)n * b / nb), r1 = (int)((long long)n * (b + 1) / nb), m = r1 - r0;
        if (m == 0) continue;
        int s = b % S;
        const void *bp = stateful ? (const void *)jobs[s].h : (const void *)B;
        int id = grid_call_async(study_url(url, sizeof url, srv[s], "linalg/dmmul_rows"), m, n,
                                 A + (size_t)r0 * n, bp, C + (size_t)r0 * n);
        if (id <= 0) {
            fprintf(stderr, "%s: block %d (rows %d-%d) to %s could not start: %s\n", prog, b, r0, r1 - 1,
                    srv[s], grid_last_error());
            rc = 1;
            break;
        }
        r->sent += (unsigned long long)m * n * sizeof(double) +
                   (stateful ? 0 : (unsigned long long)nn * sizeof(double));
        r->received += (unsigned long long)m * n * sizeof(double);
    }
    if (grid_wait_all() != GRID_OK && rc == 0) {
        fprintf(stderr, "%s: a block failed: %s\n", prog, grid_last_error());
        rc = 1;
    }
    r->seconds = now_seconds() - t0;
    for (int s = 0; s < S; s++)
        if (jobs[s].h != NULL && grid_data_free_np(jobs[s].h) != GRID_OK) {
            fprintf(stderr, "%s: freeing B on %s failed: %s\n", prog, srv[s], grid_last_error());
            rc = 1;
        }
    return rc;
}

static void usage(FILE *f) {
    fprintf(f,
            "Usage: %s --servers HOST:PORT[,...] [--mode stateless|stateful|both] [--blocks K] [--reps R]\n"
            "       [--csv] [--link-bytes] N\n"
            "Multiplies two N x N matrices with the rows of A in K blocks (default 12) dealt\n"
            "round-robin to the servers, B sent with every block (stateless) or put once per\n"
            "server as a remote data handle (stateful); checks C against a local dgemm.\n",
            prog);
}

int main(int argc, char **argv) {
    const char *servers = NULL, *mode = "both";
    int K = -1, reps = 1, csv = 0, link = 0, n = -1;
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
        else if (i + 1 < argc && strcmp(a, "--blocks") == 0)
            K = parse_size(argv[++i], 1, 4096, "--blocks");
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
    int do_sl = strcmp(mode, "stateless") == 0 || strcmp(mode, "both") == 0;
    int do_sf = strcmp(mode, "stateful") == 0 || strcmp(mode, "both") == 0;
    if (!do_sl && !do_sf) {
        fprintf(stderr, "%s: --mode takes stateless, stateful or both, not '%s'\n", prog, mode);
        return 2;
    }
    static char srv[STUDY_MAX_SERVERS][280];
    int S = study_servers(servers, srv, prog);
    if (K < 0) { /* the default: 12 blocks (fewer when n < 12, more when S > 12) */
        K = n < 12 ? n : 12;
        if (K < S && S <= n) K = S;
    }
    if (S > n) {
        fprintf(stderr, "%s: N = %d has fewer rows than the %d servers: give every server a row at least\n",
                prog, n, S);
        return 2;
    }
    if (K < S || K > n) {
        fprintf(stderr, "%s: --blocks %d: give every server a block and every block a row (%d to %d here)\n",
                prog, K, S, n);
        return 2;
    }

    size_t nn = (size_t)n * n;
    double *A = malloc(nn * sizeof *A), *B = malloc(nn * sizeof *B);
    double *C = malloc(nn * sizeof *C), *L = malloc(nn * sizeof *L);
    if (!A || !B || !C || !L) {
        fprintf(stderr, "%s: out of memory for n = %d\n", prog, n);
        return 1;
    }
    random_fill(A, nn, 1);
    random_fill(B, nn, 2);
    double t0 = now_seconds();
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, A, n, B, n, 0.0, L, n);
    double local = now_seconds() - t0;

    if (csv)
        printf("mode,n,servers,blocks,rep,seconds,put_seconds,local_seconds,sent_bytes,received_bytes,"
               "wire_tx_bytes,wire_rx_bytes,link_tx_bytes,link_rx_bytes,maxdiff,ok\n");
    int failed = 0;
    /* Run 0 warms up (connections, interfaces fetched, the servers' first touch of
     * their memory): checked, not reported. */
    for (int rep = 0; rep <= reps; rep++)
        for (int v = 0; v < 2; v++) {
            int stateful = v == 1;
            if ((stateful && !do_sf) || (!stateful && !do_sl)) continue;
            run r = {0};
            unsigned long long rx0, tx0, rx1, tx1;
            grid_stats_np w0, w1;
            grid_get_stats_np(&w0);
            study_link_bytes(&rx0, &tx0);
            int rc = multiply(stateful, n, S, K, srv, A, B, C, &r);
            study_link_bytes(&rx1, &tx1);
            grid_get_stats_np(&w1);
            r.wire_tx = w1.bytes_sent - w0.bytes_sent;
            r.wire_rx = w1.bytes_received - w0.bytes_received;
            r.link_rx = rx1 - rx0;
            r.link_tx = tx1 - tx0;
            r.maxdiff = 0;
            for (size_t i = 0; i < nn; i++)
                r.maxdiff = fmax(r.maxdiff, fabs(C[i] - L[i]));
            /* Entries are sums of n products of numbers in [-1, 1): blocks computed
             * apart may round differently from the whole, never by more than this. */
            int ok = rc == 0 && r.maxdiff <= 1e-12 * n * n;
            failed |= !ok;
            const char *name = stateful ? "stateful" : "stateless";
            if (rep == 0) {
                if (!ok) fprintf(stderr, "%s: the warm-up run (%s) failed\n", prog, name);
                continue;
            }
            if (csv)
                printf("%s,%d,%d,%d,%d,%.6f,%.6f,%.6f,%llu,%llu,%llu,%llu,%llu,%llu,%.3e,%d\n", name, n, S, K,
                       rep, r.seconds, r.put_seconds, local, r.sent, r.received, r.wire_tx, r.wire_rx,
                       link ? r.link_tx : 0ULL, link ? r.link_rx : 0ULL, r.maxdiff, ok);
            else
                printf("dmmul_dist n=%d %s on %d server%s, %d blocks: %.3f s (puts %.3f s), local %.3f s; "
                       "arrays sent %.1f MB, received %.1f MB (wire %.1f / %.1f MB); max |diff| %.2e %s\n",
                       n, name, S, S == 1 ? "" : "s", K, r.seconds, r.put_seconds, local, r.sent / 1e6,
                       r.received / 1e6, r.wire_tx / 1e6, r.wire_rx / 1e6, r.maxdiff, ok ? "OK" : "FAILED");
            if (!csv && link)
                printf("  link: sent %.1f MB, received %.1f MB\n", r.link_tx / 1e6, r.link_rx / 1e6);
            fflush(stdout);
        }
    free(A);
    free(B);
    free(C);
    free(L);
    grid_reset_np(); /* ends the data session on every server */
    return failed;
}
