/* grc_probe.c: the active link probe. On the first contact with the metaserver, the
 * client measures each up server whose link from this site the metaserver does not know
 * yet (bandwidth 0): PING round trips for the latency, then a PROBE (256 KiB each way,
 * at most 2 s) for the bandwidth, and REPORTs them with function "" (decision 0, code
 * 0). It runs on a background thread of its own so no call waits for it; the thread is
 * stopped (its current exchange cut) and joined by grid_reset_np and at exit. A server
 * that answers PROBE with ERROR (an older gridrpcd) gets the latency report only. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "grc_client.h"

#define PROBE_BYTES (256u << 10)
#define PROBE_LIMIT_NS 2000000000LL
#define PINGS 3

typedef struct target {
    uint64_t id;
    char host[GRC_MAX_HOST];
    int port;
} target;

static pthread_mutex_t plock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t thread;
static int running, stop, registered;
static int cur_fd = -1; /* the connection being measured, cut by grc_probe_stop */
static target *targets;
static uint32_t ntargets;
static grc_config pcfg;

/* One request and its reply header, EXPECT or an ERROR (returned as its code). */
static int exchange_head(grc_conn *c, uint32_t expect, const char *what, uint64_t id, int *in_step,
                         gr_err *e) {
    grw_header h;
    int rc = grp_read_header(&c->rd, &h, e);
    if (rc) {
        *in_step = 0;
        return rc;
    }
    if (h.request_id != id) {
        *in_step = 0;
        return gr_seterr(e, GRID_ERR_PROTOCOL, "reply to request %llu while waiting for %llu",
                         (unsigned long long)h.request_id, (unsigned long long)id);
    }
    return grp_expect(&c->rd, &h, expect, what, in_step, e);
}

/* Measures T and reports what it measured; 0 if the connection can be reused. */
static int measure(grc_conn *c, const target *t) {
    gr_err e;
    int in_step = 1;
    long long best = 0;
    c->rd.deadline_ns = c->wr.deadline_ns = gr_now_ns() + PROBE_LIMIT_NS;
    for (int i = 0; i < PINGS; i++) {
        uint64_t id = c->next_id++;
        long long t0 = gr_now_ns();
        int rc = grp_write_empty(&c->wr, GRP_PING, id, &e);
        if (!rc) rc = exchange_head(c, GRP_PONG, "PING", id, &in_step, &e);
        grp_pong pong;
        if (!rc) rc = grp_read_pong(&c->rd, &pong, &e);
        if (rc) return in_step && rc != GRID_ERR_PROTOCOL ? 0 : -1;
        long long dt = gr_now_ns() - t0;
        if (!best || dt < best) best = dt;
    }
    grc_meta_report_probe(t->id, 0, 0, (uint64_t)best, &pcfg);

    c->rd.deadline_ns = c->wr.deadline_ns = gr_now_ns() + PROBE_LIMIT_NS;
    uint64_t id = c->next_id++;
    long long t0 = gr_now_ns();
    uint32_t got = 0;
    int rc = grp_write_probe(&c->wr, id, PROBE_BYTES, PROBE_BYTES, &e);
    if (rc) return -1;
    rc = exchange_head(c, GRP_PROBE_OK, "PROBE", id, &in_step, &e);
    if (rc) return in_step ? 0 : -1; /* an ERROR: the server does not answer PROBE */
    rc = grp_read_probe_ok(&c->rd, &got, &e);
    if (rc) return -1;
    grc_meta_report_probe(t->id, PROBE_BYTES, got, (uint64_t)(gr_now_ns() - t0), &pcfg);
    return 0;
}

static void *probe_main(void *arg) {
    (void)arg;
    for (uint32_t i = 0;; i++) {
        pthread_mutex_lock(&plock);
        int done = stop || i >= ntargets;
        pthread_mutex_unlock(&plock);
        if (done) break;
        gr_err e;
        grc_conn *c;
        if (grc_conn_get(targets[i].host, targets[i].port, &pcfg, &c, &e)) continue;
        pthread_mutex_lock(&plock);
        int cut = stop;
        if (!cut) cur_fd = c->fd;
        pthread_mutex_unlock(&plock);
        /* The probe's payloads are the library's own traffic, not the program's:
         * grid_get_stats_np counts what calls and data handles move. */
        uint64_t *rt = c->rd.tally, *wt = c->wr.tally;
        c->rd.tally = c->wr.tally = NULL;
        int broken = cut ? 1 : measure(c, &targets[i]) != 0;
        c->rd.tally = rt;
        c->wr.tally = wt;
        pthread_mutex_lock(&plock);
        cur_fd = -1;
        broken |= stop;
        pthread_mutex_unlock(&plock);
        grc_conn_put(c, broken);
    }
    return NULL;
}

static void at_exit(void) {
    grc_probe_stop();
}

void grc_probe_start(const grp_server_info *v, uint32_t n, const grc_config *cfg) {
    pthread_mutex_lock(&plock);
    if (running) {
        pthread_mutex_unlock(&plock);
        return;
    }
    target *t = calloc(n ? n : 1, sizeof *t);
    uint32_t k = 0;
    for (uint32_t i = 0; t && i < n; i++)
        if (v[i].state == GRP_SERVER_UP && v[i].bandwidth <= 0) {
            t[k].id = v[i].id;
            snprintf(t[k].host, sizeof t[k].host, "%s", v[i].host);
            t[k].port = (int)v[i].port;
            k++;
        }
    if (!t || !k) {
        free(t);
        pthread_mutex_unlock(&plock);
        return;
    }
    targets = t;
    ntargets = k;
    pcfg = *cfg;
    if (pcfg.connect_timeout <= 0 || pcfg.connect_timeout > 2) pcfg.connect_timeout = 2;
    stop = 0;
    if (pthread_create(&thread, NULL, probe_main, NULL) == 0) {
        running = 1;
        if (!registered) registered = atexit(at_exit) == 0;
    } else {
        free(targets);
        targets = NULL;
    }
    pthread_mutex_unlock(&plock);
}

void grc_probe_stop(void) {
    pthread_mutex_lock(&plock);
    if (!running) {
        pthread_mutex_unlock(&plock);
        return;
    }
    stop = 1;
    if (cur_fd >= 0) shutdown(cur_fd, SHUT_RDWR);
    pthread_mutex_unlock(&plock);
    pthread_join(thread, NULL);
    pthread_mutex_lock(&plock);
    running = 0;
    free(targets);
    targets = NULL;
    ntargets = 0;
    pthread_mutex_unlock(&plock);
}
