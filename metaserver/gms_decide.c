/* gms_decide.c: answering clients from the state: SCHEDULE (a snapshot of the candidate
 * servers for the call's site; those with room first, for gms_sched_pick; the work
 * counted as pending on the chosen server at once; the decision kept for the page and
 * the log; or, the chosen server being full (every server, or for mct the best one),
 * the request held), SERVERS, LIST and the PING
 * totals. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gms.h"
#include "gr_suggest.h"

/* The link from SITE (UINT32_MAX: unknown site) to S, into C: the measurement when it
 * is fresh, else the mean of S's fresh links from other sites, else the defaults. */
static void fill_link(const gms_server *s, uint32_t site, int64_t now_ms, gms_cand *c) {
    double bw = 0, lat = 0, sum_bw = 0, sum_lat = 0;
    int have_bw = 0, have_lat = 0, n_bw = 0, n_lat = 0;
    for (uint32_t i = 0; i < s->nlinks; i++) {
        const gms_link *l = &s->links[i];
        int fb = l->bw_samples && gms_link_fresh(l->bw_unix_ms, now_ms);
        int fl = l->lat_samples && gms_link_fresh(l->lat_unix_ms, now_ms);
        if (l->site == site) {
            if (fb) bw = l->bandwidth, have_bw = 1;
            if (fl) lat = l->latency, have_lat = 1;
        } else {
            if (fb) sum_bw += l->bandwidth, n_bw++;
            if (fl) sum_lat += l->latency, n_lat++;
        }
    }
    c->assumed_link = !have_bw || !have_lat;
    c->bandwidth = have_bw ? bw : n_bw ? sum_bw / n_bw : GMS_DEFAULT_BANDWIDTH;
    c->latency = have_lat ? lat : n_lat ? sum_lat / n_lat : GMS_DEFAULT_LATENCY;
}

/* The speed a server's start-up estimate stands for (the default when it gave none). */
static double base_speed(const gms_server *s) {
    return s->reg_speed > 0 ? s->reg_speed : GMS_DEFAULT_SPEED;
}

/* SPEED_RATIO: the function's measured speed over the server's start-up estimate,
 * averaged over the servers that measured it (0: none did). A server that has not run
 * the function yet is predicted at that ratio times its own estimate, not at the
 * estimate itself: a function's flops (its Complexity's units) can be far from the
 * start-up benchmark's, and comparing a measured server with an estimated one would
 * then decide by units, not by speed. */
static void fill_cand(const gms_server *s, const gms_fn *f, uint32_t site, int64_t now_ms, double speed_ratio,
                      gms_cand *c) {
    c->id = s->id;
    c->cores = s->cores;
    c->workers = s->workers;
    c->running = s->running;
    c->queued = s->queued;
    c->work_s = s->work_s;
    c->pending = s->pending;
    c->pending_s = s->pending_s;
    c->fresh_s = s->fresh_s;
    c->loadavg = s->loadavg;
    c->speed = f->speed > 0 ? f->speed : speed_ratio > 0 ? speed_ratio * base_speed(s) : base_speed(s);
    c->mean_call_s = s->mean_call_s;
    c->fn_run_s = f->run_s;
    fill_link(s, site, now_ms, c);
}

/* Keeps the chosen candidate and the best others (by estimate) in D. */
static void keep_candidates(gms_decision *d, const gms_cand *c, uint32_t n, uint32_t chosen) {
    d->cands[0] = (gms_decision_cand){c[chosen].id,       c[chosen].estimate, c[chosen].wait,
                                      c[chosen].transfer, c[chosen].compute,  c[chosen].assumed_link};
    uint32_t k = 1;
    for (uint32_t i = 0; i < n; i++) {
        if (i == chosen) continue;
        if (k == GMS_DECISION_CANDS && c[i].estimate >= d->cands[k - 1].estimate) continue;
        uint32_t j = k < GMS_DECISION_CANDS ? k++ : k - 1;
        while (j > 1 && d->cands[j - 1].estimate > c[i].estimate) {
            d->cands[j] = d->cands[j - 1];
            j--;
        }
        d->cands[j] = (gms_decision_cand){c[i].id,       c[i].estimate, c[i].wait,
                                          c[i].transfer, c[i].compute,  c[i].assumed_link};
    }
    d->ncands = k;
    d->ntotal = n;
}

/* Caps JOB's figures (the client's word) at GMS_FIGURE_SLACK times the largest the
 * function's completed calls reported on any of ENT's servers; a figure nothing was
 * measured for stays. Returns the longest measured run seconds (0: none). */
static double cap_figures(const gms_fnent *ent, gms_job *job) {
    double flops = 0, run_s = 0;
    uint64_t in = 0, out = 0;
    for (uint32_t i = 0; i < ent->n; i++) {
        const gms_fn *f = &ent->srv[i]->fns[ent->fi[i]];
        if (f->max_flops > flops) flops = f->max_flops;
        if (f->max_run_s > run_s) run_s = f->max_run_s;
        if (f->max_bytes_in > in) in = f->max_bytes_in;
        if (f->max_bytes_out > out) out = f->max_bytes_out;
    }
    if (flops > 0 && job->flops > flops * GMS_FIGURE_SLACK) job->flops = flops * GMS_FIGURE_SLACK;
    if (in && (double)job->bytes_in > (double)in * GMS_FIGURE_SLACK)
        job->bytes_in = (uint64_t)((double)in * GMS_FIGURE_SLACK);
    if (out && (double)job->bytes_out > (double)out * GMS_FIGURE_SLACK)
        job->bytes_out = (uint64_t)((double)out * GMS_FIGURE_SLACK);
    return run_s;
}

static int in_list(uint64_t id, const uint64_t *v, uint32_t n) {
    for (uint32_t i = 0; i < n; i++)
        if (v[i] == id) return 1;
    return 0;
}

/* The name some server has that NAME is likeliest a typo of (qualified names for
 * "module/function", plain ones for "function"), or NULL; it points into ST's map, so
 * it is used before the lock is let go. One pass over the names: most of them differ in
 * length by more than a typo and cost a comparison each. */
static const char *closest_function(const gms_state *st, const char *name) {
    int qualified = strchr(name, '/') != NULL;
    gr_suggest s;
    gr_suggest_init(&s, name);
    for (uint32_t i = 0; i < st->fnames.cap; i++) {
        const char *k = st->fnames.keys[i];
        if (k && (strchr(k, '/') != NULL) == qualified && st->fnents[st->fnames.vals[i]].n)
            gr_suggest_offer(&s, k);
    }
    return gr_suggest_best(&s);
}

int gms_state_schedule(gms_state *st, const grp_schedule *m, const char *site, long long now_ns,
                       int64_t unix_ms, int may_hold, double held_s, uint64_t *epoch, grp_schedule_ok *ok,
                       gms_decision *explain, gr_err *e) {
    pthread_mutex_lock(&st->lock);
    uint32_t k;
    if (!gms_map_get(&st->fnames, m->function, &k)) {
        const char *best = closest_function(st, m->function);
        int rc = gr_seterr(
            e, GRID_ERR_NOT_FOUND,
            "no registered server has function %.300s; %s%.*s%s`gridrpc ls` lists what the grid serves",
            m->function, best ? "did you mean '" : "", best ? GR_SUGGEST_MAX : 0, best ? best : "",
            best ? "'? " : "");
        pthread_mutex_unlock(&st->lock);
        return rc;
    }
    gms_fnent *ent = &st->fnents[k];
    double ratio_sum = 0;
    uint32_t ratio_n = 0;
    for (uint32_t i = 0; i < ent->n; i++) {
        const gms_fn *f = &ent->srv[i]->fns[ent->fi[i]];
        if (f->speed > 0) ratio_sum += f->speed / base_speed(ent->srv[i]), ratio_n++;
    }
    double ratio = ratio_n ? ratio_sum / ratio_n : 0;
    uint32_t si = gms_state_site(st, site, 0);
    uint32_t n = 0, down = 0, excluded = 0, full = 0;
    const gms_crash_fn *held = NULL;
    /* Servers where the function just crashed are left out while another can run it. */
    int avoid = 0;
    for (uint32_t i = 0; st->ncrash_fns && i < ent->n && !avoid; i++) {
        gms_server *s = ent->srv[i];
        const char *fn = s->fns[ent->fi[i]].name;
        avoid = s->up && !in_list(s->id, m->exclude, m->nexclude) && !gms_crash_held(st, fn, now_ns) &&
                !gms_crash_recent(st, fn, s->id, now_ns);
    }
    for (uint32_t i = 0; i < ent->n; i++) {
        gms_server *s = ent->srv[i];
        if (avoid && gms_crash_recent(st, s->fns[ent->fi[i]].name, s->id, now_ns)) continue;
        /* Held back after crashes: no server is offered for it (two modules may share a
         * short name; only the crashing one is held). */
        const gms_crash_fn *h = st->ncrash_fns ? gms_crash_held(st, s->fns[ent->fi[i]].name, now_ns) : NULL;
        if (h) {
            held = h;
            continue;
        }
        if (in_list(s->id, m->exclude, m->nexclude)) {
            excluded++;
            continue;
        }
        if (!s->up) {
            down++;
            continue;
        }
        gms_cand *c = &st->cbuf[n];
        st->cbuf_srv[n] = s;
        fill_cand(s, &s->fns[ent->fi[i]], si, unix_ms, ratio, c);
        /* Servers with room first: the policy chooses among them. */
        if (!gms_cand_full(c)) {
            uint32_t j = n - full;
            if (j != n) {
                gms_cand t = st->cbuf[j];
                st->cbuf[j] = *c;
                *c = t;
                gms_server *ts = st->cbuf_srv[j];
                st->cbuf_srv[j] = s;
                st->cbuf_srv[n] = ts;
            }
        } else {
            full++;
        }
        n++;
    }
    if (n == 0 && held) {
        int rc = gms_crash_refuse(st, held, now_ns, e);
        pthread_mutex_unlock(&st->lock);
        return rc;
    }
    if (n == 0) {
        pthread_mutex_unlock(&st->lock);
        return gr_seterr(e, GRID_ERR_CONNECT,
                         "every server with function %s is unavailable (%u down, %u already tried): "
                         "`gridrpc status` shows the servers and their state",
                         m->function, down, excluded);
    }
    int policy = m->policy != GRP_POLICY_DEFAULT ? (int)m->policy : st->policy;
    gms_job job = {m->flops, m->bytes_in, m->bytes_out, m->affinity, m->naffinity};
    double run_bound = cap_figures(ent, &job);
    /* Every candidate gets its estimate (the explanation shows them all). MCT weighs
     * the full servers too: a full server's estimate includes the wait for what it
     * holds, and waiting for the one server behind a fast link can beat running at once
     * behind a slow one (a data-heavy call: choosing only among servers with room sent
     * such calls across 20 Mbit/s links while the 1 Gbit/s server was a call away from
     * room). The other policies choose among servers with room, unless none has. */
    uint32_t room = n - full;
    uint32_t among = policy == GRP_POLICY_MCT || room == 0 ? n : room;
    int c = gms_sched_pick(policy, &job, st->cbuf, among, ent->rr);
    for (uint32_t i = among; i < n; i++)
        gms_sched_estimate(&job, &st->cbuf[i]);
    if (gms_cand_full(&st->cbuf[c])) {
        /* The best server is full: the request waits here until work ends somewhere,
         * then is decided again; past its hold it goes to that full server. */
        if (may_hold) {
            if (held_s == 0) st->held++;
            *epoch = st->room_epoch;
            pthread_mutex_unlock(&st->lock);
            return GMS_HELD;
        }
        if (held_s > 0) st->held_over++;
    }
    ent->rr++;
    gms_cand *cand = &st->cbuf[c];
    gms_server *s = st->cbuf_srv[c];

    /* Counted at assignment: the next decision, from any client, sees this work. */
    uint64_t id = st->next_decision++;
    gms_pending *p = &st->pending[id % GMS_PENDING_SLOTS];
    if (p->decision) {
        gms_pending_end(st, p);
        st->pending_dropped++;
    }
    p->decision = id;
    p->srv = s;
    /* A call that nothing predicts still occupies the server: count it as the default. */
    p->seconds = cand->compute > 0 ? cand->compute : GMS_DEFAULT_CALL_S;
    p->assigned_ns = now_ns;
    /* Counted until its REPORT, or until it has surely reached the server (whose
     * heartbeat then counts it): three times the estimate, but never past --pending-max
     * nor, once the function's calls were measured, past a bound from their longest run
     * and transfer: a client that declares huge flops and never reports cannot keep a
     * server full. The estimate has no upper bound of its own (found by
     * tests/fuzz/meta_fuzz.c): the comparisons keep the count of ns in range. */
    double life_s = cand->estimate * 3 + 60;
    if (run_bound > 0) {
        double measured = GMS_FIGURE_SLACK * run_bound + cand->transfer * 3 + 60;
        if (measured < life_s) life_s = measured;
    }
    if (life_s > st->pending_max_s) life_s = st->pending_max_s;
    if (!(life_s < 1e9)) life_s = 1e9;
    p->expires_ns = now_ns + (long long)(life_s * 1e9);
    s->pending++;
    s->pending_s += p->seconds;
    s->fresh_s += p->seconds;

    gms_decision *d = &st->ring[st->decisions % GMS_DECISIONS];
    d->id = id;
    d->unix_ms = unix_ms;
    snprintf(d->function, sizeof d->function, "%s", m->function);
    snprintf(d->site, sizeof d->site, "%s", site);
    d->policy = policy;
    d->chosen = s->id;
    keep_candidates(d, st->cbuf, n, (uint32_t)c);
    d->nfull = full;
    d->held_s = held_s;
    d->elapsed_ns = (double)(gr_now_ns() - now_ns);
    st->decisions++;
    if (explain) *explain = *d;

    ok->decision = id;
    ok->server_id = s->id;
    snprintf(ok->host, sizeof ok->host, "%s", s->host);
    ok->port = s->port;
    ok->estimate = policy == GRP_POLICY_MCT ? cand->estimate : 0;
    pthread_mutex_unlock(&st->lock);
    return GRID_OK;
}

int gms_state_servers(gms_state *st, const char *site, int64_t unix_ms, long long now_ns,
                      grp_server_info **out, uint32_t *count, gr_err *e) {
    pthread_mutex_lock(&st->lock);
    uint32_t n = st->nservers < GRP_MAX_SERVERS ? st->nservers : GRP_MAX_SERVERS;
    grp_server_info *v = calloc(n ? n : 1, sizeof *v);
    uint32_t si = gms_state_site(st, site, 0);
    uint32_t done = 0;
    int failed = !v;
    for (; !failed && done < n; done++) {
        const gms_server *s = st->servers[done];
        grp_server_info *o = &v[done];
        o->id = s->id;
        snprintf(o->name, sizeof o->name, "%s", s->name);
        snprintf(o->host, sizeof o->host, "%s", s->host);
        o->port = s->port;
        o->state = s->up ? GRP_SERVER_UP : GRP_SERVER_DOWN;
        o->cores = s->cores;
        o->workers = s->workers;
        o->running = s->running;
        o->queued = s->queued;
        o->pending = s->pending;
        o->loadavg = s->loadavg;
        o->speed = s->speed > 0 ? s->speed : s->reg_speed;
        /* Only fresh measurements: 0 tells the client to probe this link itself. */
        const gms_link *l = si == UINT32_MAX ? NULL : gms_server_link((gms_server *)s, si, 0);
        if (l && l->bw_samples && gms_link_fresh(l->bw_unix_ms, unix_ms)) o->bandwidth = l->bandwidth;
        if (l && l->lat_samples && gms_link_fresh(l->lat_unix_ms, unix_ms)) o->latency = l->latency;
        o->beat_age_ms = (uint64_t)((now_ns - s->last_beat_ns) / 1000000);
        o->calls = s->calls;
        o->failures = s->failures;
        uint32_t nf = s->nfns < GRP_MAX_FUNCTIONS ? s->nfns : GRP_MAX_FUNCTIONS;
        o->functions = calloc(nf ? nf : 1, sizeof *o->functions);
        failed = !o->functions;
        for (uint32_t j = 0; j < nf && !failed; j++) {
            if (!(o->functions[j] = strdup(s->fns[j].name)))
                failed = 1;
            else
                o->nfunctions = j + 1;
        }
    }
    pthread_mutex_unlock(&st->lock);
    if (failed) {
        grp_servers_free(v, done);
        return gr_seterr(e, GRID_ERR_NOMEM, "the metaserver is out of memory: retry later");
    }
    *out = v;
    *count = n;
    return GRID_OK;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int gms_state_list(gms_state *st, char ***names, uint32_t *count, gr_err *e) {
    pthread_mutex_lock(&st->lock);
    size_t total = 0;
    for (uint32_t i = 0; i < st->nservers; i++)
        if (st->servers[i]->up) total += st->servers[i]->nfns;
    char **v = calloc(total ? total : 1, sizeof *v);
    size_t n = 0;
    int failed = !v;
    for (uint32_t i = 0; i < st->nservers && !failed; i++) {
        const gms_server *s = st->servers[i];
        if (!s->up) continue;
        for (uint32_t j = 0; j < s->nfns && !failed; j++)
            if (!(v[n++] = strdup(s->fns[j].name))) failed = 1, n--;
    }
    pthread_mutex_unlock(&st->lock);
    if (failed) {
        grp_free_names(v, (uint32_t)n);
        return gr_seterr(e, GRID_ERR_NOMEM, "the metaserver is out of memory: retry later");
    }
    qsort(v, n, sizeof *v, cmp_str);
    size_t u = 0;
    for (size_t i = 0; i < n; i++) {
        if (u && strcmp(v[u - 1], v[i]) == 0) {
            free(v[i]);
            continue;
        }
        v[u++] = v[i];
    }
    if (u > GRP_MAX_LIST_COUNT) {
        grp_free_names(v, (uint32_t)u);
        return gr_seterr(e, GRID_ERR_LIMIT, "the grid serves more than %u functions", GRP_MAX_LIST_COUNT);
    }
    *names = v;
    *count = (uint32_t)u;
    return GRID_OK;
}

void gms_state_totals(gms_state *st, grp_pong *p) {
    memset(p, 0, sizeof *p);
    pthread_mutex_lock(&st->lock);
    for (uint32_t i = 0; i < st->nservers; i++) {
        const gms_server *s = st->servers[i];
        if (!s->up) continue;
        p->running += s->running;
        p->queued += s->queued;
        p->workers += s->workers;
        p->cores += s->cores;
        p->loadavg += s->loadavg;
    }
    pthread_mutex_unlock(&st->lock);
}
