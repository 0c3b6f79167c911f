/* gms_state.c: the metaserver's in-memory state and the changes servers make to it:
 * REGISTER (the same host:port keeps its id), HEARTBEAT (load, up again, history), the
 * sweeper's down detection and expiry of pending work, the function index the
 * decisions look names up in, and restoring all of it from the registry at startup.
 * Everything is under one mutex, held briefly; SQLite is only ever handed copies. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "gms.h"

int64_t gms_unix_ms(void) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

int gms_link_fresh(int64_t at_ms, int64_t now_ms) {
    return at_ms > 0 && now_ms - at_ms <= GMS_LINK_MAX_AGE_MS;
}

int gms_state_init(gms_state *st, int policy, unsigned heartbeat_ms, unsigned down_after) {
    memset(st, 0, sizeof *st);
    pthread_mutex_init(&st->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* gr_now_ns's clock */
    pthread_cond_init(&st->room, &ca);
    pthread_condattr_destroy(&ca);
    st->policy = policy;
    st->heartbeat_ms = heartbeat_ms;
    st->down_after = down_after;
    st->start_ns = gr_now_ns();
    st->next_id = 1;
    st->crash_hold_s = GMS_DEFAULT_CRASH_HOLD_S;
    st->pending_max_s = GMS_DEFAULT_PENDING_MAX_S;
    st->forget_after_s = GMS_DEFAULT_FORGET_AFTER_S;
    /* Decision ids differ across restarts, so a late REPORT of a decision made before
     * a restart never matches a new one. */
    st->next_decision = ((uint64_t)gms_unix_ms() << 12) + 1;
    st->pending = calloc(GMS_PENDING_SLOTS, sizeof *st->pending);
    st->ring = calloc(GMS_DECISIONS, sizeof *st->ring);
    st->recent = calloc(GMS_RECENT, sizeof *st->recent);
    return st->pending && st->ring && st->recent ? 0 : -1;
}

static void free_fnents(gms_state *st) {
    for (uint32_t i = 0; i < st->nfnents; i++) {
        free(st->fnents[i].srv);
        free(st->fnents[i].fi);
    }
    free(st->fnents);
    st->fnents = NULL;
    st->nfnents = 0;
    gms_map_free(&st->fnames);
}

static void free_fns(gms_server *s) {
    for (uint32_t i = 0; i < s->nfns; i++)
        free(s->fns[i].name);
    free(s->fns);
    s->fns = NULL;
    s->nfns = 0;
}

void gms_state_free(gms_state *st) {
    for (uint32_t i = 0; i < st->nservers; i++) {
        free_fns(st->servers[i]);
        free(st->servers[i]->links);
        free(st->servers[i]);
    }
    free(st->servers);
    free(st->by_id);
    free(st->cbuf);
    free(st->cbuf_srv);
    free(st->crash_fns);
    gms_map_free(&st->addr);
    free_fnents(st);
    for (uint32_t i = 0; i < st->nsites; i++)
        free(st->sites[i]);
    free(st->sites);
    gms_map_free(&st->site_map);
    free(st->pending);
    free(st->ring);
    free(st->recent);
    pthread_mutex_destroy(&st->lock);
    pthread_cond_destroy(&st->room);
}

gms_server *gms_state_find_id(gms_state *st, uint64_t id) {
    return id < st->cap_by_id ? st->by_id[id] : NULL;
}

gms_fn *gms_server_fn(gms_server *s, const char *name) {
    for (uint32_t i = 0; i < s->nfns; i++)
        if (strcmp(s->fns[i].name, name) == 0) return &s->fns[i];
    for (uint32_t i = 0; i < s->nfns; i++)
        if (strcmp(s->fns[i].short_name, name) == 0) return &s->fns[i];
    return NULL;
}

uint32_t gms_state_site(gms_state *st, const char *site, int create) {
    uint32_t v;
    if (gms_map_get(&st->site_map, site, &v)) return v;
    if (!create || st->nsites >= GMS_MAX_SITES) return UINT32_MAX;
    char **p = realloc(st->sites, (st->nsites + 1) * sizeof *p);
    if (!p) return UINT32_MAX;
    st->sites = p;
    if (!(p[st->nsites] = strdup(site))) return UINT32_MAX;
    if (gms_map_put(&st->site_map, site, st->nsites)) {
        free(p[st->nsites]);
        return UINT32_MAX;
    }
    return st->nsites++;
}

gms_link *gms_server_link(gms_server *s, uint32_t site, int create) {
    for (uint32_t i = 0; i < s->nlinks; i++)
        if (s->links[i].site == site) return &s->links[i];
    if (!create) return NULL;
    if (s->nlinks == s->caplinks) {
        uint32_t cap = s->caplinks ? s->caplinks * 2 : 4;
        gms_link *l = realloc(s->links, cap * sizeof *l);
        if (!l) return NULL;
        s->links = l;
        s->caplinks = cap;
    }
    gms_link *l = &s->links[s->nlinks++];
    memset(l, 0, sizeof *l);
    l->site = site;
    return l;
}

/* Adds S (id set) to the server tables. */
static int add_server(gms_state *st, gms_server *s) {
    if (s->id >= GMS_MAX_SERVER_ID) return -1;
    if (st->nservers == st->capservers) {
        uint32_t cap = st->capservers ? st->capservers * 2 : 16;
        gms_server **v = realloc(st->servers, cap * sizeof *v);
        gms_cand *c = realloc(st->cbuf, cap * sizeof *c);
        if (c) st->cbuf = c;
        gms_server **cs = realloc(st->cbuf_srv, cap * sizeof *cs);
        if (cs) st->cbuf_srv = cs;
        if (!v || !c || !cs) {
            if (v) st->servers = v;
            return -1;
        }
        st->servers = v;
        st->capservers = st->cbuf_cap = cap;
    }
    if (s->id >= st->cap_by_id) {
        uint64_t cap = st->cap_by_id ? st->cap_by_id : 64;
        while (cap <= s->id)
            cap *= 2;
        gms_server **b = realloc(st->by_id, cap * sizeof *b);
        if (!b) return -1;
        memset(b + st->cap_by_id, 0, (cap - st->cap_by_id) * sizeof *b);
        st->by_id = b;
        st->cap_by_id = cap;
    }
    char key[GRP_MAX_HOST + 16];
    snprintf(key, sizeof key, "%s:%u", s->host, s->port);
    if (gms_map_put(&st->addr, key, st->nservers)) return -1;
    st->servers[st->nservers++] = s;
    st->by_id[s->id] = s;
    if (s->id >= st->next_id) st->next_id = s->id + 1;
    return 0;
}

/* Appends entry (S, FI) to the index entry of NAME. */
static int index_name(gms_state *st, const char *name, gms_server *s, uint32_t fi) {
    uint32_t k;
    if (!gms_map_get(&st->fnames, name, &k)) {
        gms_fnent *v = realloc(st->fnents, (st->nfnents + 1) * sizeof *v);
        if (!v) return -1;
        st->fnents = v;
        memset(&v[st->nfnents], 0, sizeof *v);
        k = st->nfnents++;
        if (gms_map_put(&st->fnames, name, k)) return -1;
    }
    gms_fnent *ent = &st->fnents[k];
    /* One server with "a/f" and "b/f" is one candidate for "f". */
    if (ent->n && ent->srv[ent->n - 1] == s) return 0;
    if (ent->n == ent->cap) {
        uint32_t cap = ent->cap ? ent->cap * 2 : 4;
        gms_server **sv = realloc(ent->srv, cap * sizeof *sv);
        if (!sv) return -1;
        ent->srv = sv;
        uint32_t *f = realloc(ent->fi, cap * sizeof *f);
        if (!f) return -1;
        ent->fi = f;
        ent->cap = cap;
    }
    ent->srv[ent->n] = s;
    ent->fi[ent->n++] = fi;
    return 0;
}

int gms_state_reindex(gms_state *st) {
    /* Keep each name's rotation, so round-robin does not restart at every REGISTER. */
    gms_map old_names = st->fnames;
    gms_fnent *old = st->fnents;
    uint32_t nold = st->nfnents;
    memset(&st->fnames, 0, sizeof st->fnames);
    st->fnents = NULL;
    st->nfnents = 0;
    int rc = 0;
    for (uint32_t i = 0; i < st->nservers && !rc; i++) {
        gms_server *s = st->servers[i];
        for (uint32_t j = 0; j < s->nfns && !rc; j++) {
            rc = index_name(st, s->fns[j].name, s, j);
            if (!rc && s->fns[j].short_name != s->fns[j].name)
                rc = index_name(st, s->fns[j].short_name, s, j);
        }
    }
    for (uint32_t i = 0; i < old_names.cap; i++) {
        uint32_t k;
        if (old_names.keys[i] && gms_map_get(&st->fnames, old_names.keys[i], &k))
            st->fnents[k].rr = old[old_names.vals[i]].rr;
    }
    for (uint32_t i = 0; i < nold; i++) {
        free(old[i].srv);
        free(old[i].fi);
    }
    free(old);
    gms_map_free(&old_names);
    return rc;
}

static int set_fn(gms_fn *f, const char *name, uint64_t hash, uint32_t flags) {
    memset(f, 0, sizeof *f);
    if (!(f->name = strdup(name))) return -1;
    const char *slash = strrchr(f->name, '/');
    f->short_name = slash ? slash + 1 : f->name;
    f->hash = hash;
    f->flags = flags;
    return 0;
}

uint64_t gms_state_register(gms_state *st, const grp_register *m, long long now_ns, int64_t unix_ms) {
    pthread_mutex_lock(&st->lock);
    char key[GRP_MAX_HOST + 16];
    snprintf(key, sizeof key, "%s:%u", m->host, m->port);
    uint32_t k;
    gms_server *s;
    int fresh = 0;
    if (gms_map_get(&st->addr, key, &k)) {
        s = st->servers[k];
    } else {
        s = calloc(1, sizeof *s);
        if (!s) goto nomem;
        s->id = st->next_id;
        snprintf(s->host, sizeof s->host, "%s", m->host);
        s->port = m->port;
        if (add_server(st, s)) {
            free(s);
            goto nomem;
        }
        fresh = 1;
    }
    snprintf(s->name, sizeof s->name, "%s", m->name);
    s->cores = m->cores ? m->cores : 1;
    s->workers = m->workers;
    s->reg_speed = m->speed;
    s->up = 1;
    s->last_beat_ns = now_ns;
    s->last_beat_unix_ms = unix_ms;
    s->persisted_ms = unix_ms;
    /* A server that comes back with the same functions keeps what was measured. */
    gms_fn *fns = calloc(m->nfunctions ? m->nfunctions : 1, sizeof *fns);
    if (!fns) goto nomem;
    uint32_t n = 0;
    for (uint32_t i = 0; i < m->nfunctions; i++) {
        if (set_fn(&fns[n], m->functions[i].name, m->functions[i].hash, m->functions[i].flags)) continue;
        gms_fn *was = NULL;
        for (uint32_t j = 0; j < s->nfns && !was; j++)
            if (strcmp(s->fns[j].name, fns[n].name) == 0 && s->fns[j].hash == fns[n].hash) was = &s->fns[j];
        if (was) {
            fns[n].speed = was->speed;
            fns[n].run_s = was->run_s;
            fns[n].samples = was->samples;
            /* A gridrpcd that reconnects (a metaserver restart, a network blip) keeps
             * its counts on the status page. */
            fns[n].calls = was->calls;
            fns[n].failures = was->failures;
            fns[n].total_s = was->total_s;
            fns[n].run_total_s = was->run_total_s;
        }
        n++;
    }
    free_fns(s);
    s->fns = fns;
    s->nfns = n;
    if (gms_state_reindex(st)) gms_log(GMS_LOG_ERROR, "out of memory while indexing functions");
    gms_db_put_server(st->db, s);
    gms_state_room_made(st);
    uint64_t id = s->id;
    pthread_mutex_unlock(&st->lock);
    gms_log(GMS_LOG_INFO, "server %llu %s: %s:%u '%s', %u cores, %u functions", (unsigned long long)id,
            fresh ? "registered" : "registered again", m->host, m->port, m->name, m->cores, n);
    return id;
nomem:
    pthread_mutex_unlock(&st->lock);
    gms_log(GMS_LOG_ERROR, "out of memory registering %s:%u", m->host, m->port);
    return 0;
}

static void add_sample(gms_server *s, int64_t unix_ms) {
    if (s->hist_n) {
        uint32_t last = (s->hist_head + GMS_HISTORY - 1) % GMS_HISTORY;
        if (unix_ms - s->hist[last].unix_ms < GMS_HISTORY_STEP_MS) return;
    }
    gms_sample *h = &s->hist[s->hist_head];
    h->unix_ms = unix_ms;
    h->running = s->running;
    h->queued = s->queued;
    h->loadavg = s->loadavg;
    s->hist_head = (s->hist_head + 1) % GMS_HISTORY;
    if (s->hist_n < GMS_HISTORY) s->hist_n++;
}

int gms_state_heartbeat(gms_state *st, const grp_heartbeat *m, long long now_ns, int64_t unix_ms) {
    pthread_mutex_lock(&st->lock);
    gms_server *s = gms_state_find_id(st, m->server_id);
    if (!s) {
        pthread_mutex_unlock(&st->lock);
        return GRID_ERR_NOT_FOUND;
    }
    int was_up = s->up;
    s->running = m->running;
    s->queued = m->queued;
    s->workers = m->workers;
    if (m->cores) s->cores = m->cores;
    s->loadavg = m->loadavg;
    s->work_s = m->work_s;
    s->fresh_s = 0; /* what we assigned before this beat is in it, or still on its way */
    s->up = 1;
    s->last_beat_ns = now_ns;
    s->last_beat_unix_ms = unix_ms;
    add_sample(s, unix_ms);
    gms_state_room_made(st);
    /* The registry needs the state and a recent beat, not every beat. */
    if (!was_up || unix_ms - s->persisted_ms >= 5000) {
        s->persisted_ms = unix_ms;
        gms_db_put_server_state(st->db, s);
    }
    char name[GRP_MAX_PEER_NAME + 1];
    if (!was_up) snprintf(name, sizeof name, "%s", s->name);
    pthread_mutex_unlock(&st->lock);
    if (!was_up)
        gms_log(GMS_LOG_INFO, "server %llu '%s' is up again (heartbeat)", (unsigned long long)m->server_id,
                name);
    return GRID_OK;
}

int gms_state_unregister(gms_state *st, uint64_t id) {
    pthread_mutex_lock(&st->lock);
    gms_server *s = gms_state_find_id(st, id);
    if (!s) {
        pthread_mutex_unlock(&st->lock);
        return GRID_ERR_NOT_FOUND;
    }
    int was_up = s->up;
    s->up = 0;
    s->running = s->queued = 0;
    s->work_s = 0;
    gms_db_put_server_state(st->db, s);
    char name[GRP_MAX_PEER_NAME + 1];
    snprintf(name, sizeof name, "%s", s->name);
    pthread_mutex_unlock(&st->lock);
    gms_log(GMS_LOG_INFO, "server %llu '%s' is stopping: marked down%s", (unsigned long long)id, name,
            was_up ? "" : " (it was already)");
    return GRID_OK;
}

void gms_pending_end(gms_state *st, gms_pending *p) {
    gms_server *s = p->srv;
    if (s->pending) s->pending--;
    s->pending_s -= p->seconds;
    if (s->pending_s < 0 || !s->pending) s->pending_s = 0;
    if (p->assigned_ns > s->last_beat_ns) {
        s->fresh_s -= p->seconds;
        if (s->fresh_s < 0 || !s->pending) s->fresh_s = 0;
    }
    p->decision = 0;
    gms_state_room_made(st);
}

void gms_state_room_made(gms_state *st) {
    st->room_epoch++;
    if (st->holding) pthread_cond_broadcast(&st->room);
}

int gms_state_wait_room(gms_state *st, uint64_t epoch, long long deadline_ns) {
    pthread_mutex_lock(&st->lock);
    st->holding++;
    while (st->room_epoch == epoch && !st->stopping) {
        long long now = gr_now_ns();
        if (now >= deadline_ns) break;
        struct timespec ts = {(time_t)(deadline_ns / 1000000000LL), (long)(deadline_ns % 1000000000LL)};
        pthread_cond_timedwait(&st->room, &st->lock, &ts);
    }
    st->holding--;
    int stopping = st->stopping;
    pthread_mutex_unlock(&st->lock);
    return stopping ? -1 : 0;
}

void gms_state_stop(gms_state *st) {
    pthread_mutex_lock(&st->lock);
    st->stopping = 1;
    pthread_cond_broadcast(&st->room);
    pthread_mutex_unlock(&st->lock);
}

/* Deletes the server at index I of st->servers (st->lock held): its pending work, its
 * place in every index, its registry rows and its memory. A REGISTER from its host:port
 * later makes a new server. */
static void forget_server(gms_state *st, uint32_t i, const char *why) {
    gms_server *s = st->servers[i];
    for (uint32_t k = 0; k < GMS_PENDING_SLOTS; k++)
        if (st->pending[k].decision && st->pending[k].srv == s) gms_pending_end(st, &st->pending[k]);
    memmove(&st->servers[i], &st->servers[i + 1], (st->nservers - i - 1) * sizeof *st->servers);
    st->nservers--;
    st->by_id[s->id] = NULL;
    /* The address index holds positions in servers, which moved: built again. */
    gms_map_free(&st->addr);
    memset(&st->addr, 0, sizeof st->addr);
    char key[GRP_MAX_HOST + 16];
    for (uint32_t k = 0; k < st->nservers; k++) {
        snprintf(key, sizeof key, "%s:%u", st->servers[k]->host, st->servers[k]->port);
        if (gms_map_put(&st->addr, key, k)) gms_log(GMS_LOG_ERROR, "out of memory while indexing servers");
    }
    if (gms_state_reindex(st)) gms_log(GMS_LOG_ERROR, "out of memory while indexing functions");
    gms_db_forget_server(st->db, s->id);
    if (why)
        gms_log(GMS_LOG_INFO, "server %llu '%s' (%s:%u) forgotten: %s", (unsigned long long)s->id, s->name,
                s->host, s->port, why);
    else
        gms_log(GMS_LOG_INFO, "server %llu '%s' (%s:%u) forgotten: down for more than %g s (--forget-after)",
                (unsigned long long)s->id, s->name, s->host, s->port, st->forget_after_s);
    free_fns(s);
    free(s->links);
    free(s);
}

int gms_state_forget(gms_state *st, uint64_t id, const char *why) {
    pthread_mutex_lock(&st->lock);
    int rc = GRID_ERR_NOT_FOUND;
    for (uint32_t i = 0; i < st->nservers; i++)
        if (st->servers[i]->id == id) {
            forget_server(st, i, why);
            rc = GRID_OK;
            break;
        }
    pthread_mutex_unlock(&st->lock);
    return rc;
}

void gms_state_sweep(gms_state *st, long long now_ns, int64_t unix_ms) {
    long long limit = (long long)st->down_after * st->heartbeat_ms * 1000000LL;
    pthread_mutex_lock(&st->lock);
    /* A pass this late means this process did not run (stopped, starved): the beats were
     * missed here, not by the servers, which may be reconnecting after their own
     * timeouts. They get the grace of a restart (tests/faults/meta-hang.sh). */
    int stalled = st->last_sweep_ns && now_ns - st->last_sweep_ns > limit;
    st->last_sweep_ns = now_ns;
    for (uint32_t i = 0; i < st->nservers; i++) {
        gms_server *s = st->servers[i];
        if (stalled && s->up) s->down_not_before = now_ns + GMS_RESTART_GRACE_NS;
        if (!s->up || now_ns - s->last_beat_ns <= limit || now_ns < s->down_not_before) continue;
        s->up = 0;
        gms_db_put_server_state(st->db, s);
        gms_log(GMS_LOG_WARN, "server %llu '%s' (%s:%u) is down: no heartbeat for %lld ms (%u missed)",
                (unsigned long long)s->id, s->name, s->host, s->port, (now_ns - s->last_beat_ns) / 1000000,
                st->down_after);
    }
    /* Down and not seen for --forget-after: deleted, so that servers that come and go
     * (or made-up registrations) do not grow the state, the registry and the status
     * page without end. */
    /* By the wall clock of its last beat, which the registry keeps: a server down long
     * before a restart is forgotten at once. */
    double forget_ms = st->forget_after_s * 1e3;
    for (uint32_t i = st->nservers; st->forget_after_s > 0 && i-- > 0;) {
        gms_server *s = st->servers[i];
        if (!s->up && (double)(unix_ms - s->last_beat_unix_ms) > forget_ms) forget_server(st, i, NULL);
    }
    for (uint32_t i = 0; i < GMS_PENDING_SLOTS; i++) {
        gms_pending *p = &st->pending[i];
        if (!p->decision || p->expires_ns > now_ns) continue;
        /* Its REPORT never came: the work is no longer counted against the server. */
        gms_pending_end(st, p);
        st->pending_dropped++;
    }
    pthread_mutex_unlock(&st->lock);
}

/* ---------------------------------------------------------------- restoring */

gms_server *gms_state_restore_server(gms_state *st, uint64_t id, const char *name, const char *host,
                                     uint32_t port, uint32_t cores, uint32_t workers, double reg_speed,
                                     double speed, double mean_call_s, int up, int64_t last_beat_unix_ms,
                                     uint64_t calls, uint64_t failures, long long now_ns) {
    gms_server *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->id = id;
    snprintf(s->name, sizeof s->name, "%s", name);
    snprintf(s->host, sizeof s->host, "%s", host);
    s->port = port;
    s->cores = cores ? cores : 1;
    s->workers = workers;
    s->reg_speed = reg_speed;
    s->speed = speed;
    s->mean_call_s = mean_call_s;
    s->up = up;
    /* The grace before "down" counts from this start, not from the last beat seen, and
     * covers the servers' reconnection backoff. */
    s->last_beat_ns = now_ns;
    s->down_not_before = now_ns + GMS_RESTART_GRACE_NS;
    s->last_beat_unix_ms = last_beat_unix_ms;
    s->persisted_ms = last_beat_unix_ms;
    s->calls = calls;
    s->failures = failures;
    if (add_server(st, s)) {
        free(s);
        return NULL;
    }
    st->calls += calls;
    st->failures += failures;
    return s;
}

int gms_state_restore_fn(gms_server *s, const char *name, uint64_t hash, uint32_t flags, double speed,
                         double run_s, uint32_t samples) {
    gms_fn *f = realloc(s->fns, (s->nfns + 1) * sizeof *f);
    if (!f) return -1;
    s->fns = f;
    if (set_fn(&f[s->nfns], name, hash, flags)) return -1;
    f[s->nfns].speed = speed;
    f[s->nfns].run_s = run_s;
    f[s->nfns].samples = samples;
    s->nfns++;
    return 0;
}

int gms_state_restore_link(gms_state *st, const char *site, uint64_t server, double bw, double lat,
                           uint32_t bw_n, uint32_t lat_n, int64_t bw_ms, int64_t lat_ms) {
    gms_server *s = gms_state_find_id(st, server);
    uint32_t si = gms_state_site(st, site, 1);
    if (!s || si == UINT32_MAX) return 0;
    gms_link *l = gms_server_link(s, si, 1);
    if (!l) return -1;
    l->bandwidth = bw;
    l->latency = lat;
    l->bw_samples = bw_n;
    l->lat_samples = lat_n;
    l->bw_unix_ms = bw_ms;
    l->lat_unix_ms = lat_ms;
    return 0;
}
