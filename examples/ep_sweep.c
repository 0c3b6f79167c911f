/* ep_sweep.c: the NAS EP benchmark (nas/ep) split into PARTS calls over several servers,
 * two ways, with the sums checked against NPB's verification values:
 *
 *   async  PARTS grid_call_async calls, all in flight, then grid_wait_all (the way
 *          examples/ep.c spreads EP);
 *   txn    the same PARTS calls as plain synchronous grid_call between
 *          grid_transaction_begin and grid_transaction_end: recorded, not run, then run
 *          by the transaction at its end, independent calls at once on several servers.
 *
 * Where the calls go: with --servers, round-robin by URL; without, the plain name
 * "nas/ep", so a metaserver (GRIDRPC_METASERVER) places every call. With a small M and
 * many PARTS the time is the overhead per call: the transaction's against plain async
 * calls. Prints one line per run or CSV (--csv).
 *
 * Usage: ep_sweep [--servers HOST:PORT[,...]] [--mode async|txn|both] [--reps R] [--csv]
 *                 M PARTS */
#include <math.h>
#include <string.h>

#include <gridrpc.h>

#include "../stubs/ep.h"
#include "common.h"
#include "study.h"

static const char *prog = "ep_sweep";

typedef struct sweep {
    int m, parts, S; /* S = 0: the plain name, placed by the metaserver or configuration */
    char (*srv)[280];
    double *sx, *sy, (*q)[10];
} sweep;

static const char *fname(const sweep *w, int p, char *buf, size_t n) {
    return w->S ? study_url(buf, n, w->srv[p % w->S], "nas/ep") : "nas/ep";
}

/* Part P's range of pairs: [first, first + count). */
static void part_range(const sweep *w, int p, int *first, int *count) {
    long long total = 1LL << w->m;
    long long a = total * p / w->parts, b = total * (p + 1) / w->parts;
    *first = (int)a;
    *count = (int)(b - a);
}

static int run(const sweep *w, int txn) {
    char url[400];
    if (txn && grid_transaction_begin() != GRID_OK) {
        fprintf(stderr, "%s: grid_transaction_begin: %s\n", prog, grid_last_error());
        return 1;
    }
    for (int p = 0; p < w->parts; p++) {
        int first, count, rc;
        part_range(w, p, &first, &count);
        if (txn)
            rc = grid_call(fname(w, p, url, sizeof url), w->m, first, count, &w->sx[p], &w->sy[p], w->q[p]);
        else
            rc = grid_call_async(fname(w, p, url, sizeof url), w->m, first, count, &w->sx[p], &w->sy[p],
                                 w->q[p]) > 0
                     ? GRID_OK
                     : GRID_ERR_INTERNAL;
        if (rc != GRID_OK) {
            fprintf(stderr, "%s: part %d could not %s: %s\n", prog, p, txn ? "be recorded" : "start",
                    grid_last_error());
            if (txn)
                grid_transaction_abort_np();
            else
                grid_wait_all();
            return 1;
        }
    }
    int rc = txn ? grid_transaction_end() : grid_wait_all();
    if (rc != GRID_OK) {
        fprintf(stderr, "%s: %s failed: %s\n", prog, txn ? "the transaction" : "a part", grid_last_error());
        return 1;
    }
    return 0;
}

static void usage(FILE *f) {
    fprintf(f,
            "Usage: %s [--servers HOST:PORT[,...]] [--mode async|txn|both] [--reps R] [--csv] M PARTS\n"
            "Runs NAS EP for 2^M pairs in PARTS calls, as async calls and as a transaction;\n"
            "without --servers the metaserver (or the configured server) places each call.\n",
            prog);
}

int main(int argc, char **argv) {
    const char *servers = NULL, *mode = "both";
    int reps = 1, csv = 0, m = -1, parts = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--csv") == 0)
            csv = 1;
        else if (i + 1 < argc && strcmp(a, "--servers") == 0)
            servers = argv[++i];
        else if (i + 1 < argc && strcmp(a, "--mode") == 0)
            mode = argv[++i];
        else if (i + 1 < argc && strcmp(a, "--reps") == 0)
            reps = parse_size(argv[++i], 1, 1000, "--reps");
        else if (a[0] != '-' && m < 0)
            m = parse_size(a, 1, 40, "M");
        else if (a[0] != '-' && parts < 0)
            parts = parse_size(a, 1, 100000, "PARTS");
        else {
            fprintf(stderr, "%s: unexpected argument '%s'\n", prog, a);
            usage(stderr);
            return 2;
        }
    }
    if (m < 0 || parts < 0) {
        fprintf(stderr, "%s: M and PARTS are required\n", prog);
        usage(stderr);
        return 2;
    }
    if ((1LL << m) / parts > 0x7fffffffLL || (1LL << m) < parts) {
        fprintf(stderr,
                "%s: each part needs from 1 to 2^31 - 1 pairs: choose PARTS from %lld to %lld for M = %d\n",
                prog, ((1LL << m) + 0x7ffffffeLL) / 0x7fffffffLL, 1LL << m, m);
        return 2;
    }
    int do_async = strcmp(mode, "async") == 0 || strcmp(mode, "both") == 0;
    int do_txn = strcmp(mode, "txn") == 0 || strcmp(mode, "both") == 0;
    if (!do_async && !do_txn) {
        fprintf(stderr, "%s: --mode takes async, txn or both, not '%s'\n", prog, mode);
        return 2;
    }
    static char srv[STUDY_MAX_SERVERS][280];
    sweep w = {.m = m, .parts = parts, .srv = srv};
    w.S = servers ? study_servers(servers, srv, prog) : 0;
    w.sx = malloc((size_t)parts * sizeof *w.sx);
    w.sy = malloc((size_t)parts * sizeof *w.sy);
    w.q = malloc((size_t)parts * sizeof *w.q);
    if (!w.sx || !w.sy || !w.q) {
        fprintf(stderr, "%s: out of memory for %d parts\n", prog, parts);
        return 1;
    }
    if (csv)
        printf("mode,m,parts,servers,rep,seconds,us_per_call,wire_tx_bytes,wire_rx_bytes,txn_servers,"
               "verified,ok\n");
    int failed = 0;
    /* Run 0 warms up (connections, interfaces fetched, the servers' first touch of
     * their memory): checked, not reported. */
    for (int rep = 0; rep <= reps; rep++)
        for (int txn = 0; txn < 2; txn++) {
            if ((txn && !do_txn) || (!txn && !do_async)) continue;
            /* NaN: a part never written fails the sums below. */
            for (int p = 0; p < parts; p++) {
                w.sx[p] = w.sy[p] = NAN;
                for (int k = 0; k < 10; k++)
                    w.q[p][k] = NAN;
            }
            grid_stats_np w0, w1;
            grid_get_stats_np(&w0);
            double t0 = now_seconds();
            int rc = run(&w, txn);
            double t = now_seconds() - t0;
            grid_get_stats_np(&w1);
            double sx = 0, sy = 0, gauss = 0;
            for (int p = 0; p < parts; p++) {
                sx += w.sx[p];
                sy += w.sy[p];
                for (int k = 0; k < 10; k++)
                    gauss += w.q[p][k];
            }
            int v = gridrpc_ep_verify(m, sx, sy);
            /* Without a reference for this M, the sums must at least be whole. */
            int ok = rc == 0 && v != 0 && isfinite(sx) && isfinite(sy) && isfinite(gauss);
            failed |= !ok;
            const char *name = txn ? "txn" : "async";
            /* How many servers the transaction's calls ran on (the library's count). */
            grid_transaction_stats_np ts = {0};
            if (txn) grid_transaction_get_stats_np(&ts);
            if (rep == 0) {
                if (!ok) fprintf(stderr, "%s: the warm-up run (%s) failed\n", prog, name);
                continue;
            }
            if (csv)
                printf("%s,%d,%d,%d,%d,%.6f,%.2f,%llu,%llu,%ld,%d,%d\n", name, m, parts, w.S, rep, t,
                       t / parts * 1e6, w1.bytes_sent - w0.bytes_sent, w1.bytes_received - w0.bytes_received,
                       ts.servers, v, ok);
            else
                printf("ep_sweep m=%d %s, %d parts%s: %.3f s (%.1f us per call)%s, sx %.15e sy %.15e, %.0f "
                       "Gaussian pairs: %s\n",
                       m, name, parts, w.S ? " round-robin by URL" : " placed by the metaserver", t,
                       t / parts * 1e6, txn ? ", servers used: see --csv" : "", sx, sy, gauss,
                       !ok      ? "FAILED"
                       : v == 1 ? "VERIFIED"
                                : "no reference for this M");
            fflush(stdout);
        }
    free(w.sx);
    free(w.sy);
    free(w.q);
    return failed;
}
