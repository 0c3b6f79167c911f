/* meta_sched_bench.c: the metaserver's decision time with 10, 100 and 1000 servers
 * registered (issue 9: under 20 us at 100). Each server has its own functions and one
 * shared function, a random load and measured links from a few sites; a decision is
 * gms_state_schedule for the shared function (candidate snapshot, MCT over all of them,
 * pending counted, decision kept) as gridmetad runs it, without the socket. Each
 * decision is followed by its REPORT (not timed) so the pending work stays bounded.
 * Prints one line per size: median, mean and 99th percentile in microseconds.
 * Usage: meta_sched_bench [--csv FILE] [ITERATIONS]   (default 20000; a quarter at 1000) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gms.h"

static int cmp(const void *a, const void *b) {
    long long x = *(const long long *)a, y = *(const long long *)b;
    return x < y ? -1 : x > y;
}

static void run(unsigned nservers, unsigned iters, FILE *csv) {
    gms_state st;
    gms_state_init(&st, GRP_POLICY_MCT, 1000, 3);
    srand(12345);
    grp_function fns[8];
    for (unsigned i = 0; i < nservers; i++) {
        memset(fns, 0, sizeof fns);
        snprintf(fns[0].name, sizeof fns[0].name, "linalg/dmmul");
        for (unsigned k = 1; k < 8; k++)
            snprintf(fns[k].name, sizeof fns[k].name, "mod%u/f%u", i, k);
        grp_register m;
        memset(&m, 0, sizeof m);
        snprintf(m.name, sizeof m.name, "bench %u", i);
        snprintf(m.host, sizeof m.host, "10.%u.%u.%u", i >> 16, (i >> 8) & 255, i & 255);
        m.port = 7000;
        m.cores = 1 + (unsigned)rand() % 32;
        m.speed = 1e9 * (1 + rand() % 10);
        m.nfunctions = 8;
        m.functions = fns;
        uint64_t id = gms_state_register(&st, &m, gr_now_ns(), gms_unix_ms());
        grp_heartbeat hb = {
            id, (uint32_t)rand() % 8, (uint32_t)rand() % 4, m.cores, m.cores, rand() % 400 / 100.0,
            0,  rand() % 300 / 100.0};
        gms_state_heartbeat(&st, &hb, gr_now_ns(), gms_unix_ms());
        for (unsigned s = 0; s < 4; s++) {
            char site[32];
            snprintf(site, sizeof site, "site%u", s);
            grp_report p;
            memset(&p, 0, sizeof p);
            p.server_id = id;
            p.bytes_in = 1000000;
            p.total_ns = 1000000 + (uint64_t)(rand() % 100) * 1000000;
            gms_state_report(&st, &p, site, gr_now_ns(), gms_unix_ms());
        }
    }
    long long *t = malloc(iters * sizeof *t);
    grp_schedule q;
    memset(&q, 0, sizeof q);
    snprintf(q.function, sizeof q.function, "dmmul");
    q.flops = 2e9;
    q.bytes_in = 24000000;
    q.bytes_out = 8000000;
    gr_err e;
    for (unsigned i = 0; i < iters; i++) {
        grp_schedule_ok ok;
        const char *site = i & 1 ? "site1" : "site3";
        long long t0 = gr_now_ns();
        int rc = gms_state_schedule(&st, &q, site, t0, gms_unix_ms(), 0, 0, NULL, &ok, NULL, &e);
        t[i] = gr_now_ns() - t0;
        if (rc) {
            fprintf(stderr, "meta_sched_bench: %s\n", e.msg);
            exit(1);
        }
        grp_report r;
        memset(&r, 0, sizeof r);
        r.decision = ok.decision;
        r.server_id = ok.server_id;
        gms_state_report(&st, &r, site, gr_now_ns(), gms_unix_ms());
    }
    qsort(t, iters, sizeof *t, cmp);
    double sum = 0;
    for (unsigned i = 0; i < iters; i++)
        sum += (double)t[i];
    printf("%5u servers: median %7.2f us  mean %7.2f us  p99 %7.2f us  (%u decisions)\n", nservers,
           t[iters / 2] / 1e3, sum / iters / 1e3, t[iters * 99 / 100] / 1e3, iters);
    if (csv)
        fprintf(csv, "%u,%.3f,%.3f,%.3f,%u\n", nservers, t[iters / 2] / 1e3, sum / iters / 1e3,
                t[iters * 99 / 100] / 1e3, iters);
    free(t);
    gms_state_free(&st);
}

int main(int argc, char **argv) {
    unsigned iters = 20000;
    FILE *csv = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--csv") == 0 && i + 1 < argc) {
            if (!(csv = fopen(argv[++i], "w"))) {
                perror(argv[i]);
                return 2;
            }
            fprintf(csv, "servers,median_us,mean_us,p99_us,decisions\n");
        } else if (argv[i][0] >= '1' && argv[i][0] <= '9') {
            iters = (unsigned)atoi(argv[i]);
        } else {
            fprintf(stderr, "usage: meta_sched_bench [--csv FILE] [ITERATIONS]\n");
            return 2;
        }
    }
    if (iters < 100) iters = 100;
    gr_log_init("meta_sched_bench", GMS_LOG_ERROR);
    run(10, iters, csv);
    run(100, iters, csv);
    run(1000, iters / 4, csv);
    if (csv) fclose(csv);
    return 0;
}
