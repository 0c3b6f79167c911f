/* meta_sched_test.c: the metaserver's schedulers (gms_sched_pick over hand-made
 * candidates) and its state (decisions counted as pending at assignment, learning from
 * REPORTs, exclusion, errors, holds of crashing functions), without sockets or SQLite.
 * Prints TAP. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gms.h"

static int tests, failed;

static void ok(int cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ok(int cond, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("%s %d ", cond ? "ok" : "not ok", ++tests);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    if (!cond) failed++;
}

static int near(double a, double b) {
    return fabs(a - b) <= 1e-6 * fabs(b) + 1e-12;
}

static gms_cand cand(uint64_t id, uint32_t cores, uint32_t running, uint32_t queued, double speed, double bw,
                     double lat) {
    gms_cand c;
    memset(&c, 0, sizeof c);
    c.id = id;
    c.cores = cores;
    c.running = running;
    c.queued = queued;
    c.speed = speed;
    c.bandwidth = bw;
    c.latency = lat;
    c.mean_call_s = 0.5;
    return c;
}

/* ---------------------------------------------------------------- pure schedulers */

static void test_mct(void) {
    /* A: behind a fast link (1 GB/s) and busy: 4 cores all running, 2 queued.
     * B: behind a slow link (10 MB/s) and idle. Both equally fast. */
    gms_cand c[2] = {cand(1, 4, 4, 2, 1e10, 1e9, 1e-4), cand(2, 4, 0, 0, 1e10, 1e7, 1e-2)};
    gms_job big = {1e9, 50000000, 50000000, NULL, 0}; /* 100 MB, 0.1 s of compute */
    int k = gms_sched_pick(GRP_POLICY_MCT, &big, c, 2, 0);
    ok(k == 0, "mct: a data-heavy call goes to the busy server behind the fast link (chose %d)", k);
    /* A: wait 6 calls x 0.5 s / 4 cores = 0.75 s; transfer 0.1 s + 1e-4; compute 0.1 s */
    ok(near(c[0].wait, 0.75) && near(c[0].transfer, 0.1001) && near(c[0].compute, 0.1),
       "mct: the busy server's estimate is wait 0.75 + transfer 0.1001 + compute 0.1 (got %g %g %g)",
       c[0].wait, c[0].transfer, c[0].compute);
    ok(near(c[1].estimate, 10.01 + 0.1) && c[1].wait == 0,
       "mct: the idle server behind 10 MB/s needs 10 s for 100 MB (estimate %g)", c[1].estimate);

    gms_job heavy = {1e12, 500, 500, NULL, 0}; /* 100 s of compute, 1 KB of data */
    k = gms_sched_pick(GRP_POLICY_MCT, &heavy, c, 2, 0);
    ok(k == 1, "mct: a compute-heavy call goes to the idle server even behind the slow link (chose %d)", k);
    ok(near(c[0].wait, 0.75) && c[0].estimate > c[1].estimate,
       "mct: the busy server's queue (0.75 s) is what tips the compute-heavy call (%g > %g)", c[0].estimate,
       c[1].estimate);

    k = gms_sched_pick(GRP_POLICY_LEAST_LOAD, &big, c, 2, 0);
    ok(k == 1, "least-load: sends even the data-heavy call to the idle server (chose %d)", k);

    /* A faster server wins a compute-heavy call when both are idle. */
    gms_cand f[2] = {cand(1, 1, 0, 0, 1e9, 1e8, 1e-3), cand(2, 1, 0, 0, 4e9, 1e8, 1e-3)};
    k = gms_sched_pick(GRP_POLICY_MCT, &heavy, f, 2, 0);
    ok(k == 1 && near(f[1].compute, 250), "mct: the faster of two idle servers (chose %d, compute %g)", k,
       f[1].compute);
}

/* Data affinity: the inputs a server holds already do not travel to it. */
static void test_affinity(void) {
    /* Two idle, equal servers behind 100 MB/s; a call sending 100 MB, most of it
     * already on server 2 (a transaction's intermediate result). */
    gms_cand c[2] = {cand(1, 4, 0, 0, 1e10, 1e8, 1e-3), cand(2, 4, 0, 0, 1e10, 1e8, 1e-3)};
    grp_affinity held[2] = {{7, 100000000}, {2, 80000000}}; /* server 7 is not a candidate */
    gms_job job = {1e9, 100000000, 1000, held, 2};
    int k = gms_sched_pick(GRP_POLICY_MCT, &job, c, 2, 0);
    ok(k == 1, "affinity: mct sends the call where 80 of its 100 MB already are (chose %d)", k);
    ok(near(c[1].transfer, 20001000 / 1e8 + 1e-3) && near(c[0].transfer, 100001000 / 1e8 + 1e-3),
       "affinity: only the missing 20 MB count on the holder (transfer %g s against %g s)", c[1].transfer,
       c[0].transfer);
    /* A much faster server elsewhere still wins a compute-heavy call. */
    c[0].speed = 1e12;
    gms_job heavy = {1e12, 100000000, 1000, held, 2};
    k = gms_sched_pick(GRP_POLICY_MCT, &heavy, c, 2, 0);
    ok(k == 0, "affinity: a server 100x faster is worth moving the data to (chose %d)", k);
    /* An entry claiming more than the call sends counts as all of it, never below zero. */
    grp_affinity all = {1, 200000000};
    gms_job over = {1e9, 100000000, 1000, &all, 1};
    c[0].speed = 1e10;
    gms_sched_pick(GRP_POLICY_MCT, &over, c, 2, 0);
    ok(near(c[0].transfer, 1000 / 1e8 + 1e-3), "affinity: never less than nothing to send (transfer %g)",
       c[0].transfer);
}

static void test_least_load(void) {
    gms_cand c[3] = {cand(1, 2, 2, 1, 1e9, 1e8, 1e-3), cand(2, 8, 2, 0, 1e9, 1e8, 1e-3),
                     cand(3, 8, 2, 0, 1e9, 1e8, 1e-3)};
    c[1].loadavg = 3.0;
    c[2].loadavg = 1.0;
    gms_job j = {0, 0, 0, NULL, 0};
    int k = gms_sched_pick(GRP_POLICY_LEAST_LOAD, &j, c, 3, 0);
    ok(k == 2, "least-load: lowest (running+queued)/cores, ties broken by load average (chose %d)", k);
    c[2].pending = 5; /* assigned by us, not yet seen in its heartbeat */
    k = gms_sched_pick(GRP_POLICY_LEAST_LOAD, &j, c, 3, 0);
    ok(k == 1, "least-load: pending work counts as load (chose %d)", k);
}

static void test_round_robin(void) {
    gms_cand c[3] = {cand(1, 1, 0, 0, 1e9, 1e8, 1e-3), cand(2, 1, 9, 9, 1e9, 1e8, 1e-3),
                     cand(3, 1, 0, 0, 1e9, 1e8, 1e-3)};
    gms_job j = {1, 1, 1, NULL, 0};
    int seen[3] = {0};
    for (uint64_t rr = 0; rr < 6; rr++)
        seen[gms_sched_pick(GRP_POLICY_ROUND_ROBIN, &j, c, 3, rr)]++;
    ok(seen[0] == 2 && seen[1] == 2 && seen[2] == 2,
       "round-robin: rotates over every candidate, busy or not");
    ok(gms_sched_pick(GRP_POLICY_MCT, &j, c, 0, 0) == -1, "no candidates: -1");
}

/* ---------------------------------------------------------------- state */

static void reg(gms_state *st, const char *host, uint32_t port, uint32_t cores, double speed, const char *fn,
                uint64_t *id) {
    grp_function f;
    memset(&f, 0, sizeof f);
    snprintf(f.name, sizeof f.name, "%s", fn);
    f.hash = 42;
    grp_register m;
    memset(&m, 0, sizeof m);
    snprintf(m.name, sizeof m.name, "test %s:%u", host, port);
    snprintf(m.host, sizeof m.host, "%s", host);
    m.port = port;
    m.cores = cores;
    m.workers = cores;
    m.speed = speed;
    m.nfunctions = 1;
    m.functions = &f;
    *id = gms_state_register(st, &m, gr_now_ns(), gms_unix_ms());
}

static grp_schedule sched(const char *fn, double flops, uint64_t bytes) {
    grp_schedule m;
    memset(&m, 0, sizeof m);
    snprintf(m.function, sizeof m.function, "%s", fn);
    snprintf(m.site, sizeof m.site, "lab");
    m.flops = flops;
    m.bytes_in = bytes;
    return m;
}

static gms_server *server(gms_state *st, uint64_t id) {
    return gms_state_find_id(st, id);
}

/* A burst of calls that nothing predicts (no flops, no history) on three idle two-core
 * servers whose links differ by microseconds: each call still counts as work where it
 * was assigned, so the burst fills the idle servers first instead of the nearest one. */
static void test_burst_without_predictions(void) {
    gms_state st;
    gms_state_init(&st, GRP_POLICY_MCT, 1000, 3);
    uint64_t id[3];
    for (int i = 0; i < 3; i++) {
        char host[32];
        snprintf(host, sizeof host, "10.0.0.%d", i + 1);
        reg(&st, host, 7000, 2, 0, "test/sleep", &id[i]);
    }
    for (int i = 0; i < 3; i++) { /* measured round trips of 50, 60 and 70 us */
        grp_report probe;
        memset(&probe, 0, sizeof probe);
        probe.server_id = id[i];
        probe.total_ns = 50000 + 10000 * (uint64_t)i;
        gms_state_report(&st, &probe, "lab", gr_now_ns(), gms_unix_ms());
    }
    gr_err e;
    int count[3] = {0, 0, 0};
    grp_schedule m = sched("sleep", 0, 0);
    for (int k = 0; k < 6; k++) {
        grp_schedule_ok r;
        if (gms_state_schedule(&st, &m, "lab", gr_now_ns(), gms_unix_ms(), 0, 0, NULL, &r, NULL, &e)) break;
        for (int i = 0; i < 3; i++)
            count[i] += r.server_id == id[i];
        if (k == 2)
            ok(count[0] == 1 && count[1] == 1 && count[2] == 1,
               "three unpredictable calls go to three idle servers (%d %d %d)", count[0], count[1], count[2]);
    }
    ok(count[0] == 2 && count[1] == 2 && count[2] == 2, "six go two to each two-core server (%d %d %d)",
       count[0], count[1], count[2]);
    gms_state_free(&st);
}

static void test_state(void) {
    gms_state st;
    gms_state_init(&st, GRP_POLICY_MCT, 1000, 3);
    uint64_t a, b, a2;
    reg(&st, "10.0.0.1", 7000, 1, 1e9, "linalg/dmmul", &a);
    reg(&st, "10.0.0.2", 7000, 1, 1e9, "linalg/dmmul", &b);
    reg(&st, "10.0.0.1", 7000, 1, 1e9, "linalg/dmmul", &a2);
    ok(a && b && a != b && a2 == a, "REGISTER: ids %llu and %llu; the same host:port keeps its id",
       (unsigned long long)a, (unsigned long long)b);

    gr_err e;
    grp_schedule_ok r1, r2;
    grp_schedule m = sched("dmmul", 1e9, 1000);
    long long now = gr_now_ns();
    int rc1 = gms_state_schedule(&st, &m, "lab", now, gms_unix_ms(), 0, 0, NULL, &r1, NULL, &e);
    int rc2 = gms_state_schedule(&st, &m, "lab", now, gms_unix_ms(), 0, 0, NULL, &r2, NULL, &e);
    ok(rc1 == GRID_OK && rc2 == GRID_OK && r1.server_id != r2.server_id,
       "two simultaneous decisions spread over two idle servers (pending counted at assignment: %llu, %llu)",
       (unsigned long long)r1.server_id, (unsigned long long)r2.server_id);
    ok(server(&st, r1.server_id)->pending == 1 && near(server(&st, r1.server_id)->pending_s, 1.0),
       "the chosen server has one pending call of 1 s");
    ok(r1.decision != r2.decision && r1.port == 7000 && strcmp(r1.host, "10.0.0.1") == 0,
       "SCHEDULE_OK names the decision and the server's address");

    grp_schedule q = sched("linalg/dmmul", 0, 0);
    q.exclude[0] = a;
    q.nexclude = 1;
    grp_schedule_ok r3;
    ok(gms_state_schedule(&st, &q, "lab", now, gms_unix_ms(), 0, 0, NULL, &r3, NULL, &e) == GRID_OK &&
           r3.server_id == b,
       "the qualified name works and the exclude list is honoured");
    q.exclude[1] = b;
    q.nexclude = 2;
    ok(gms_state_schedule(&st, &q, "lab", now, gms_unix_ms(), 0, 0, NULL, &r3, NULL, &e) ==
               GRID_ERR_CONNECT &&
           strstr(e.msg, "2 already tried"),
       "every server excluded: GRID_ERR_CONNECT (%s)", e.msg);
    grp_schedule u = sched("nosuch", 0, 0);
    ok(gms_state_schedule(&st, &u, "lab", now, gms_unix_ms(), 0, 0, NULL, &r3, NULL, &e) ==
               GRID_ERR_NOT_FOUND &&
           strstr(e.msg, "gridrpc ls"),
       "an unknown function: GRID_ERR_NOT_FOUND pointing to gridrpc ls (%s)", e.msg);
    ok(!strstr(e.msg, "did you mean"), "a name far from every function gets no guess (%s)", e.msg);
    /* A typo names what some server has: qualified for a qualified name, else plain. */
    u = sched("linalg/dmmull", 0, 0);
    ok(gms_state_schedule(&st, &u, "lab", now, gms_unix_ms(), 0, 0, NULL, &r3, NULL, &e) ==
               GRID_ERR_NOT_FOUND &&
           strstr(e.msg, "no registered server has function linalg/dmmull; did you mean 'linalg/dmmul'? "
                         "`gridrpc ls`"),
       "a typo of a qualified name: did you mean the function (%s)", e.msg);
    u = sched("dmmlu", 0, 0);
    ok(gms_state_schedule(&st, &u, "lab", now, gms_unix_ms(), 0, 0, NULL, &r3, NULL, &e) ==
               GRID_ERR_NOT_FOUND &&
           strstr(e.msg, "did you mean 'dmmul'?"),
       "a typo of a plain name: did you mean the plain name (%s)", e.msg);

    /* REPORT: the call of decision r1 ran 0.5 s for 1e9 flops (2 GFLOP/s), and moved
     * 10 MB in 0.1 s + 1 ms of latency outside the server. */
    gms_server *s1 = server(&st, r1.server_id);
    grp_report rep;
    memset(&rep, 0, sizeof rep);
    rep.decision = r1.decision;
    rep.server_id = r1.server_id;
    rep.code = GRID_OK;
    snprintf(rep.function, sizeof rep.function, "dmmul");
    rep.bytes_in = 100;
    rep.bytes_out = 100;
    rep.queue_ns = 1000000;
    rep.run_ns = 500000000;
    rep.total_ns = rep.queue_ns + rep.run_ns + 1000000; /* small: 1 ms is the latency */
    rep.flops = 1e9;
    gms_state_report(&st, &rep, "lab", gr_now_ns(), gms_unix_ms());
    ok(s1->pending == 0 && s1->pending_s == 0, "REPORT ends the decision's pending work");
    gms_fn *f = gms_server_fn(s1, "dmmul");
    ok(f && near(f->speed, 2e9) && near(s1->speed, 2e9), "speed learned: flops / run time = 2e9 (got %g)",
       f ? f->speed : -1);
    uint32_t site = gms_state_site(&st, "lab", 0);
    gms_link *l = site == UINT32_MAX ? NULL : gms_server_link(s1, site, 0);
    ok(l && near(l->latency, 1e-3) && l->lat_samples == 1 && l->bw_samples == 0,
       "a small transfer measures the latency (1 ms, got %g)", l ? l->latency : -1);
    rep.decision = 0;
    rep.bytes_in = 10000000;
    rep.bytes_out = 0;
    rep.total_ns = rep.queue_ns + rep.run_ns + 101000000; /* 0.101 s outside: 1 ms latency + 0.1 s */
    gms_state_report(&st, &rep, "lab", gr_now_ns(), gms_unix_ms());
    ok(l && near(l->bandwidth, 1e8) && l->bw_samples == 1,
       "a large transfer measures the bandwidth once the latency is taken off (1e8, got %g)",
       l ? l->bandwidth : -1);
    rep.run_ns = 1000000000; /* 1e9 flops in 1 s: the EWMA moves 30% of the way to 1e9 */
    gms_state_report(&st, &rep, "lab", gr_now_ns(), gms_unix_ms());
    ok(near(f->speed, 2e9 - 0.3 * 1e9), "speed is smoothed (EWMA 0.3: 1.7e9, got %g)", f->speed);
    ok(s1->calls == 3 && st.calls == 3, "calls are counted (%llu)", (unsigned long long)s1->calls);

    /* An active probe from another site: 1 MB in 10 ms. */
    grp_report probe;
    memset(&probe, 0, sizeof probe);
    probe.server_id = b;
    probe.code = GRID_OK;
    probe.bytes_in = 1000000;
    probe.total_ns = 10000000;
    gms_state_report(&st, &probe, "far", gr_now_ns(), gms_unix_ms());
    gms_link *pl = gms_server_link(server(&st, b), gms_state_site(&st, "far", 0), 0);
    ok(pl && near(pl->bandwidth, 1e8), "an active probe (function \"\") measures the link (got %g)",
       pl ? pl->bandwidth : -1);

    /* The learned link feeds the next decision; the other site's link is assumed. */
    gms_decision d;
    grp_schedule m2 = sched("dmmul", 1e6, 1000000);
    grp_schedule_ok r4;
    gms_state_schedule(&st, &m2, "lab", gr_now_ns(), gms_unix_ms(), 0, 0, NULL, &r4, &d, &e);
    int found_measured = 0, found_assumed = 0;
    for (uint32_t i = 0; i < d.ncands; i++) {
        if (d.cands[i].server == s1->id && !d.cands[i].assumed_link) found_measured = 1;
        if (d.cands[i].server != s1->id && d.cands[i].assumed_link) found_assumed = 1;
    }
    ok(d.ncands == 2 && found_measured && found_assumed,
       "the decision explains both candidates: a measured link and an assumed one");

    /* A failure that says the server is unreachable is counted; one client's word alone
     * does not mark down a server whose heartbeat is on time (issue 25), but it does
     * once the heartbeat is late, until it beats again. */
    grp_report fail;
    memset(&fail, 0, sizeof fail);
    fail.server_id = b;
    fail.code = GRID_ERR_CONN_LOST;
    gms_server *sb = server(&st, b);
    gms_state_report(&st, &fail, "lab", sb->last_beat_ns, gms_unix_ms());
    ok(sb->up && sb->failures == 1 && st.failures == 1,
       "REPORT of a lost connection, heartbeat on time: failure counted, still up");
    gms_state_report(&st, &fail, "lab", sb->last_beat_ns + 2LL * st.heartbeat_ms * 1000000LL, gms_unix_ms());
    ok(!sb->up && sb->failures == 2 && st.failures == 2,
       "REPORT of a lost connection, heartbeat late: marked down");
    /* A withdrawn assignment (the client only fetched the descriptor) is no failure. */
    grp_report withdrawn;
    memset(&withdrawn, 0, sizeof withdrawn);
    withdrawn.server_id = s1->id;
    withdrawn.code = GRID_ERR_CANCELED;
    gms_state_report(&st, &withdrawn, "lab", gr_now_ns(), gms_unix_ms());
    ok(s1->failures == 0 && st.failures == 2 && s1->up, "REPORT of a cancelled call: no failure, still up");
    /* A server that refused the client's key or token did its job: the client's
     * credentials failed, not the server. */
    withdrawn.code = GRID_ERR_AUTH;
    gms_state_report(&st, &withdrawn, "lab", gr_now_ns(), gms_unix_ms());
    ok(s1->failures == 0 && st.failures == 2 && s1->up,
       "REPORT of a refused key (GRID_ERR_AUTH): no failure, still up");
    /* A run too short to time the flops leaves the speed alone. */
    double before = f->speed;
    rep.run_ns = 200000; /* 0.2 ms: overhead, not flops */
    rep.flops = 16;
    gms_state_report(&st, &rep, "lab", gr_now_ns(), gms_unix_ms());
    ok(f->speed == before, "a sub-millisecond run does not move the speed (%g, was %g)", f->speed, before);
    grp_heartbeat hb;
    memset(&hb, 0, sizeof hb);
    hb.server_id = b;
    hb.cores = 2;
    hb.running = 1;
    ok(gms_state_heartbeat(&st, &hb, gr_now_ns(), gms_unix_ms()) == GRID_OK && sb->up && sb->cores == 2,
       "its next heartbeat brings it back up");
    hb.server_id = 999;
    ok(gms_state_heartbeat(&st, &hb, gr_now_ns(), gms_unix_ms()) == GRID_ERR_NOT_FOUND,
       "a heartbeat of an unknown id: GRID_ERR_NOT_FOUND");

    /* Down after missed heartbeats; pending work expires. */
    long long later = gr_now_ns() + 3500000000LL;
    gms_state_sweep(&st, later, gms_unix_ms());
    ok(!server(&st, a)->up && !sb->up, "the sweeper marks servers down after 3 missed heartbeats");
    ok(server(&st, r2.server_id)->pending >= 1, "pending work is kept while within its time");
    gms_state_sweep(&st, later + 120000000000LL, gms_unix_ms());
    ok(server(&st, r2.server_id)->pending == 0 && st.pending_dropped >= 1,
       "pending work whose REPORT never came is dropped after estimate x 3 + 60 s");

    char **names;
    uint32_t nn;
    gms_state_list(&st, &names, &nn, &e);
    ok(nn == 0, "LIST: no function while every server is down");
    grp_free_names(names, nn);
    hb.server_id = a;
    gms_state_heartbeat(&st, &hb, gr_now_ns(), gms_unix_ms());
    gms_state_list(&st, &names, &nn, &e);
    ok(nn == 1 && strcmp(names[0], "linalg/dmmul") == 0, "LIST: the functions of up servers");
    grp_free_names(names, nn);

    gms_buf j = {0};
    gms_status_json(&st, &j);
    ok(j.p && strstr(j.p, "\"servers\":[{\"id\":1,") && strstr(j.p, "\"site\":\"lab\"") &&
           strstr(j.p, "\"policy\":\"mct\""),
       "the status JSON lists servers, links and decisions");
    free(j.p);
    gms_state_free(&st);
}

/* The server's own prediction of its work (HEARTBEAT work_s) rules over our guesses,
 * and what we assigned since its last heartbeat is added to it. */
static void test_server_work(void) {
    /* A: near (1 GB/s) and running one call straight from another client that the server
     * predicts needs 3 s more; B: far (2 MB/s, 0.6 s round trips) and idle. EP: 2 s of
     * compute, 1 KB. */
    gms_cand c[2] = {cand(1, 1, 1, 0, 1e9, 1e9, 1e-4), cand(2, 1, 0, 0, 1e9, 2e6, 0.6)};
    c[0].work_s = 3;
    gms_job ep = {2e9, 500, 500, NULL, 0};
    int k = gms_sched_pick(GRP_POLICY_MCT, &ep, c, 2, 0);
    ok(k == 1 && near(c[0].wait, 3),
       "mct: a compute-heavy call leaves the near server whose own prediction is 3 s of work (wait %g, chose "
       "%d)",
       c[0].wait, k);
    /* Without the server's prediction the same call counts as the mean call, 0.5 s. */
    c[0].work_s = 0;
    k = gms_sched_pick(GRP_POLICY_MCT, &ep, c, 2, 0);
    ok(k == 0 && near(c[0].wait, 0.5), "mct: without it, the mean call (0.5 s) is assumed (wait %g)",
       c[0].wait);

    /* Two like servers, each holding one call the server predicts: A 1 s, B 1.5 s. A
     * was given a 1 s call since its heartbeat: A now has 2 s ahead, B 1.5 s. */
    gms_cand d[2] = {cand(1, 1, 1, 0, 1e9, 1e9, 1e-4), cand(2, 1, 1, 0, 1e9, 1e9, 1e-4)};
    d[0].work_s = 1;
    d[0].pending = 1;
    d[0].pending_s = 1;
    d[0].fresh_s = 1;
    d[1].work_s = 1.5;
    gms_job one = {1e9, 0, 0, NULL, 0};
    k = gms_sched_pick(GRP_POLICY_MCT, &one, d, 2, 0);
    ok(k == 1 && near(d[0].wait, 2) && near(d[1].wait, 1.5),
       "mct: work assigned since the last heartbeat is added to the server's prediction (waits %g, %g)",
       d[0].wait, d[1].wait);
    /* A call assigned before the heartbeat but not held by the server (still uploading)
     * is still on its way: counted too. */
    d[0].fresh_s = 0;
    d[0].running = 0;
    d[0].work_s = 0.25;
    d[1].running = 1;
    gms_sched_pick(GRP_POLICY_MCT, &one, d, 2, 0);
    ok(near(d[0].wait, 1.25), "mct: a pending call the server does not hold yet counts (wait %g)", d[0].wait);
}

static void test_slots(void) {
    gms_cand c = cand(1, 2, 0, 0, 1e9, 1e9, 1e-4);
    c.workers = 1;
    ok(gms_cand_slots(&c) == 4, "a 2-core server with 1 worker holds 4 calls before it is full (%u)",
       gms_cand_slots(&c));
    c.workers = 8;
    ok(gms_cand_slots(&c) == 10, "with 8 workers, 10 (%u)", gms_cand_slots(&c));
    c.running = 8;
    c.queued = 1;
    ok(!gms_cand_full(&c), "9 outstanding of 10: room");
    c.pending = 10;
    ok(gms_cand_full(&c), "10 assigned and not reported: full");
}

/* Every server full: a request is held (nothing assigned) until work ends; without
 * the hold it goes to the best full server. */
static void test_hold(void) {
    gms_state st;
    gms_state_init(&st, GRP_POLICY_MCT, 1000, 3);
    uint64_t a, b;
    reg(&st, "10.0.0.1", 7000, 1, 1e9, "test/work", &a); /* 1 core, 1 worker: 2 calls */
    reg(&st, "10.0.0.2", 7000, 1, 1e9, "test/work", &b);
    gr_err e;
    grp_schedule m = sched("work", 1e9, 0);
    grp_schedule_ok r[4];
    int okc = 0;
    for (int i = 0; i < 4; i++)
        okc += gms_state_schedule(&st, &m, "lab", gr_now_ns(), gms_unix_ms(), 1, 0, NULL, &r[i], NULL, &e) ==
               GRID_OK;
    ok(okc == 4 && server(&st, a)->pending == 2 && server(&st, b)->pending == 2,
       "four calls fill two one-core servers, two each");
    uint64_t epoch = 0;
    grp_schedule_ok h;
    uint64_t before = st.decisions;
    int rc = gms_state_schedule(&st, &m, "lab", gr_now_ns(), gms_unix_ms(), 1, 0, &epoch, &h, NULL, &e);
    ok(rc == GMS_HELD && st.decisions == before && server(&st, a)->pending == 2 && st.held == 1,
       "a fifth is held: nothing assigned (rc %d)", rc);
    long long t0 = gr_now_ns();
    ok(gms_state_wait_room(&st, epoch, t0 + 50000000LL) == 0 && gr_now_ns() - t0 >= 40000000LL,
       "waiting for room with no change lasts until the deadline");
    /* A REPORT ends one of A's calls: room. */
    grp_report rep;
    memset(&rep, 0, sizeof rep);
    rep.decision = r[0].decision;
    rep.server_id = r[0].server_id;
    snprintf(rep.function, sizeof rep.function, "work");
    rep.run_ns = 1000000000;
    gms_state_report(&st, &rep, "lab", gr_now_ns(), gms_unix_ms());
    ok(st.room_epoch != epoch, "a REPORT makes room (the epoch moved)");
    t0 = gr_now_ns();
    ok(gms_state_wait_room(&st, epoch, t0 + 5000000000LL) == 0 && gr_now_ns() - t0 < 1000000000LL,
       "so a wait from before it returns at once");
    rc = gms_state_schedule(&st, &m, "lab", gr_now_ns(), gms_unix_ms(), 1, 0.05, &epoch, &h, NULL, &e);
    ok(rc == GRID_OK && h.server_id == r[0].server_id && st.held_over == 0,
       "the held request now goes where the room is (server %llu)", (unsigned long long)h.server_id);
    /* Full again; a request past its hold goes to the best full server. */
    gms_decision d;
    rc = gms_state_schedule(&st, &m, "lab", gr_now_ns(), gms_unix_ms(), 0, 20, &epoch, &h, &d, &e);
    ok(rc == GRID_OK && st.held_over == 1 && d.nfull == 2 && d.held_s == 20,
       "past its hold, a request is placed on a full server (held_over %llu, %u full)",
       (unsigned long long)st.held_over, d.nfull);
    gms_state_stop(&st);
    ok(gms_state_wait_room(&st, st.room_epoch, gr_now_ns() + 5000000000LL) == -1,
       "a metaserver stopping ends every wait");
    gms_state_free(&st);
}

static int crashed(gms_state *st, uint64_t id, const char *fn, long long now, int *held, gr_err *e) {
    grp_crashed m;
    memset(&m, 0, sizeof m);
    m.server_id = id;
    snprintf(m.function, sizeof m.function, "%s", fn);
    snprintf(m.what, sizeof m.what, "crashed (signal 11, Segmentation fault)");
    return gms_state_crashed(st, &m, now, gms_unix_ms(), held, e);
}

/* Crashes: believed only for a registered server's own function; two on one server hold
 * nothing, and steer the next call elsewhere; one more on a second server within the
 * minute holds the function for --crash-hold, a SCHEDULE is refused with
 * GRID_ERR_CRASHED naming both, HOLDS lists it; after the hold it is offered again, and
 * the crashes before it do not count for the next. No crash ever: empty lists. */
static void test_crash_hold(void) {
    gms_state st;
    gms_state_init(&st, GRP_POLICY_MCT, 1000, 3);
    st.crash_hold_s = 300;
    gr_err e;
    grp_hold *h = NULL;
    uint32_t nh = 9;
    gms_buf b = {0};
    gms_status_json(&st, &b);
    ok(gms_state_holds(&st, gr_now_ns(), &h, &nh, &e) == GRID_OK && nh == 0 && b.p &&
           strstr(b.p, "\"crashing\":[]") && strstr(b.p, "\"crashes\":0"),
       "no crash ever: HOLDS and api/status list none");
    free(h);
    free(b.p);
    uint64_t a, c, d;
    reg(&st, "10.0.0.1", 7000, 4, 1e10, "test/crash", &a); /* the fastest: MCT's choice */
    reg(&st, "10.0.0.2", 7000, 4, 1e9, "test/crash", &c);
    reg(&st, "10.0.0.3", 7000, 4, 1e9, "test/other", &d);
    long long t = gr_now_ns();
    int held = 0;
    ok(crashed(&st, 99, "test/crash", t, &held, &e) == GRID_ERR_NOT_FOUND,
       "an unknown server's crash: NOT_FOUND");
    ok(crashed(&st, d, "test/crash", t, &held, &e) == GRID_ERR_ARGS && strstr(e.msg, "did not register"),
       "a crash of a function the server did not register: refused (%s)", e.msg);
    ok(crashed(&st, a, "test/crash", t, &held, &e) == GRID_OK && !held &&
           crashed(&st, a, "test/crash", t + 1000, &held, &e) == GRID_OK && !held,
       "two crashes on one server hold nothing");
    grp_schedule m = sched("crash", 1e9, 0);
    grp_schedule_ok r;
    int rc = gms_state_schedule(&st, &m, "lab", t + 2000, gms_unix_ms(), 0, 0, NULL, &r, NULL, &e);
    ok(rc == GRID_OK && r.server_id == c, "the next call goes to a server where it did not crash (%llu)",
       (unsigned long long)r.server_id);
    ok(crashed(&st, c, "test/crash", t + 30000000000LL, &held, &e) == GRID_OK && held && st.crash_holds == 1,
       "a crash on a second server 30 s later holds it");
    rc = gms_state_schedule(&st, &m, "lab", t + 31000000000LL, gms_unix_ms(), 0, 0, NULL, &r, NULL, &e);
    ok(rc == GRID_ERR_CRASHED &&
           strstr(e.msg, "test/crash is held back from new calls: it crashed its executors on servers") &&
           strstr(e.msg, "(10.0.0.1:7000)") && strstr(e.msg, "(10.0.0.2:7000)") &&
           strstr(e.msg, "offered again in 299 s"),
       "a SCHEDULE is refused: %s", e.msg);
    grp_schedule other = sched("test/other", 1e9, 0);
    ok(gms_state_schedule(&st, &other, "lab", t + 31000000000LL, gms_unix_ms(), 0, 0, NULL, &r, NULL, &e) ==
           GRID_OK,
       "other functions are still offered");
    ok(gms_state_holds(&st, t + 31000000000LL, &h, &nh, &e) == GRID_OK && nh == 1 &&
           strcmp(h[0].function, "test/crash") == 0 && h[0].left_ms == 299000,
       "HOLDS lists it with 299 s left");
    free(h);
    long long after = t + 30000000000LL + 300000000000LL;
    rc = gms_state_schedule(&st, &m, "lab", after, gms_unix_ms(), 0, 0, NULL, &r, NULL, &e);
    ok(rc == GRID_OK && gms_state_holds(&st, after, &h, &nh, &e) == GRID_OK && nh == 0,
       "after the hold it is offered again (rc %d)", rc);
    free(h);
    ok(crashed(&st, a, "test/crash", after + 1000, &held, &e) == GRID_OK && !held,
       "a crash after the hold does not count with those before it");
    gms_state_free(&st);
}

/* MCT weighs full servers too (the LAN/WAN study's multi-site mix): a data-heavy call
 * waits for the one server behind a fast link rather than run at once behind a slow
 * one; least-load still takes the server with room; a compute-heavy call goes to the
 * server with room when that is quicker. */
static void test_mct_full_best(void) {
    gms_state st;
    gms_state_init(&st, GRP_POLICY_MCT, 1000, 3);
    uint64_t a, b;
    reg(&st, "10.0.0.1", 7000, 1, 1e10, "test/work", &a); /* 1 core, 1 worker: full at 2 */
    reg(&st, "10.0.0.2", 7000, 1, 1e10, "test/work", &b);
    /* Links from "lab": 100 MB in 0.1 s to A (1 GB/s), in 10 s to B (10 MB/s). */
    for (int i = 0; i < 2; i++) {
        grp_report probe;
        memset(&probe, 0, sizeof probe);
        probe.server_id = i ? b : a;
        probe.bytes_in = 100000000;
        probe.total_ns = i ? 10000000000ULL : 100000000ULL;
        gms_state_report(&st, &probe, "lab", gr_now_ns(), gms_unix_ms());
    }
    gr_err e;
    grp_schedule big = sched("work", 1e9, 50000000); /* 50 MB in, 0.1 s of compute */
    grp_schedule_ok r[2], h;
    int placed = 0;
    for (int i = 0; i < 2; i++)
        placed += gms_state_schedule(&st, &big, "lab", gr_now_ns(), gms_unix_ms(), 1, 0, NULL, &r[i], NULL,
                                     &e) == GRID_OK &&
                  r[i].server_id == a;
    ok(placed == 2 && server(&st, a)->pending == 2, "mct: two data-heavy calls both go behind the fast link");
    uint64_t epoch = 0, before = st.decisions;
    int rc = gms_state_schedule(&st, &big, "lab", gr_now_ns(), gms_unix_ms(), 1, 0, &epoch, &h, NULL, &e);
    ok(rc == GMS_HELD && st.decisions == before && server(&st, b)->pending == 0,
       "mct: a third waits for the full fast-link server (0.35 s) instead of 5 s behind 10 MB/s (rc %d)", rc);
    gms_decision d;
    rc = gms_state_schedule(&st, &big, "lab", gr_now_ns(), gms_unix_ms(), 0, 20, &epoch, &h, &d, &e);
    ok(rc == GRID_OK && h.server_id == a && st.held_over == 1 && d.nfull == 1,
       "mct: past its hold it goes to that full server (server %llu, held_over %llu)",
       (unsigned long long)h.server_id, (unsigned long long)st.held_over);
    big.policy = GRP_POLICY_LEAST_LOAD;
    rc = gms_state_schedule(&st, &big, "lab", gr_now_ns(), gms_unix_ms(), 1, 0, &epoch, &h, NULL, &e);
    ok(rc == GRID_OK && h.server_id == b,
       "least-load: the same call goes to the server with room (server %llu)",
       (unsigned long long)h.server_id);
    grp_schedule heavy = sched("work", 1e10, 1000); /* 1 s of compute, 1 KB */
    rc = gms_state_schedule(&st, &heavy, "lab", gr_now_ns(), gms_unix_ms(), 1, 0, &epoch, &h, NULL, &e);
    ok(rc == GRID_OK && h.server_id == b,
       "mct: a compute-heavy call takes the server with room (server %llu)", (unsigned long long)h.server_id);
    gms_state_stop(&st);
    gms_state_free(&st);
}

/* A function measured on one server predicts it on another that has not run it, scaled
 * by their start-up estimates, instead of taking the estimate (other units) as is. */
static void test_speed_ratio(void) {
    gms_state st;
    gms_state_init(&st, GRP_POLICY_MCT, 1000, 3);
    uint64_t a, b;
    reg(&st, "10.0.0.1", 7000, 4, 1e9, "ep/ep", &a);
    reg(&st, "10.0.0.2", 7000, 4, 2e9, "ep/ep", &b);
    gr_err e;
    grp_schedule m = sched("ep", 1e8, 0);
    grp_schedule_ok r;
    gms_state_schedule(&st, &m, "lab", gr_now_ns(), gms_unix_ms(), 0, 0, NULL, &r, NULL, &e);
    grp_report rep;
    memset(&rep, 0, sizeof rep);
    rep.decision = r.decision;
    rep.server_id = a;
    snprintf(rep.function, sizeof rep.function, "ep");
    rep.flops = 1e8;
    rep.run_ns = 1000000000; /* 1e8 "flops" in 1 s: 10x slower than A's estimate */
    gms_state_report(&st, &rep, "lab", gr_now_ns(), gms_unix_ms());
    gms_decision d;
    gms_state_schedule(&st, &m, "lab", gr_now_ns(), gms_unix_ms(), 0, 0, NULL, &r, &d, &e);
    double ca = -1, cb = -1;
    for (uint32_t i = 0; i < d.ncands; i++) {
        if (d.cands[i].server == a) ca = d.cands[i].compute;
        if (d.cands[i].server == b) cb = d.cands[i].compute;
    }
    ok(near(ca, 1) && near(cb, 0.5) && r.server_id == b,
       "ep measured at 1e8/s on A predicts 2e8/s on B (twice A's estimate): compute %g s and %g s", ca, cb);
    gms_state_free(&st);
}

static void test_json_escape(void) {
    gms_buf b = {0};
    gms_buf_json_string(&b, "a\"b\\c\n\x01");
    ok(b.p && strcmp(b.p, "\"a\\\"b\\\\c\\u000a\\u0001\"") == 0, "JSON strings are escaped (%s)", b.p);
    free(b.p);
    /* Names come from peers as bytes: UTF-8 passes, anything else becomes U+FFFD (found by
     * tests/fuzz/meta_fuzz.c: python's json refused the whole status). */
    gms_buf u = {0};
    gms_buf_json_string(&u, "\xc3\xa9\xe2\x82\xac\xf0\x9d\x84\x9e|\xff|\xc3(|\xc0\xaf|\xed\xa0\x80|\xe2\x82");
    ok(u.p &&
           strcmp(
               u.p,
               "\"\xc3\xa9\xe2\x82\xac\xf0\x9d\x84\x9e|\\ufffd|\\ufffd(|\\ufffd\\ufffd|\\ufffd\\ufffd\\ufffd|"
               "\\ufffd\\ufffd\"") == 0,
       "JSON strings are UTF-8: bytes that are not become U+FFFD (%s)", u.p);
    free(u.p);
}

int main(void) {
    gr_log_init("meta-sched-test", GMS_LOG_ERROR);
    test_mct();
    test_affinity();
    test_least_load();
    test_round_robin();
    test_state();
    test_burst_without_predictions();
    test_server_work();
    test_slots();
    test_hold();
    test_crash_hold();
    test_mct_full_best();
    test_speed_ratio();
    test_json_escape();
    printf("1..%d\n", tests);
    return failed ? 1 : 0;
}
