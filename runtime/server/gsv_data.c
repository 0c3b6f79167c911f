/* gsv_data.c: gridrpcd's store of remote data (docs/server.md "Remote data"): handles
 * keyed by (session, handle), each a reference-counted buffer; the sessions, joined by
 * the connections that name them; the memory bound (--data-memory) with reservations;
 * and the sweeper that frees a session after --data-grace without a connection or
 * --data-lease without use. Everything here is under one lock, taken for short
 * bookkeeping only: buffers are allocated, filled and freed outside it. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "grp_proto.h"
#include "gsv.h"

#define NBUCKETS 4096u

typedef struct entry {
    uint64_t handle;
    struct dsession *sess;
    gsv_dbuf *buf;
    struct entry *bnext;         /* bucket chain */
    struct entry *sprev, *snext; /* the session's entries */
} entry;

typedef struct dsession {
    uint64_t id;
    unsigned nconns;    /* connections that joined it and are open */
    long long used_ns;  /* last message naming it */
    long long alone_ns; /* when its last connection closed (nconns 0) */
    entry *entries;
    unsigned n;
    uint64_t bytes;
    /* Who may use it (gsv_conn's owner): set by the first connection that has a key or
     * a session; "" while only connections with neither (older clients, servers copying
     * data without a key) named it, which any connection may then use. */
    char owner[GRP_OWNER_MAX + 1];
    struct dsession *next;
} dsession;

/* The sessions a connection joined (reader thread only). */
struct gsv_dconn {
    uint64_t *ids;
    unsigned n, cap;
};

static struct {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    entry *buckets[NBUCKETS];
    dsession *sessions;
    uint64_t held, reserved, limit;
    double grace, lease;
    int running, stop;
    pthread_t sweeper;
} st = {.lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER};

static unsigned bucket_of(uint64_t session, uint64_t handle) {
    uint64_t h = session * 0x9e3779b97f4a7c15ull ^ handle * 0xc2b2ae3d27d4eb4full;
    return (unsigned)(h >> 40) % NBUCKETS;
}

const char *gsv_data_size(uint64_t bytes, char *buf, size_t n) {
    static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double v = (double)bytes;
    unsigned u = 0;
    while (v >= 1024 && u < 5) {
        v /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(buf, n, "%" PRIu64 " bytes", bytes);
    else if (v == (double)(uint64_t)v)
        snprintf(buf, n, "%.0f %s", v, units[u]);
    else
        snprintf(buf, n, "%.1f %s", v, units[u]);
    return buf;
}

int gsv_data_unknown(uint64_t handle, gr_err *e) {
    return gr_seterr(e, GRID_ERR_ARGS,
                     "no data handle %" PRIu64
                     " in this session on this server (freed, expired after its lease, or never put here)",
                     handle);
}

/* ---------------------------------------------------------------- buffers and memory */

/* Drops a reference under the lock; returns the buffer to free outside it, or NULL. */
static gsv_dbuf *unref_locked(gsv_dbuf *b) {
    if (--b->refs) return NULL;
    st.held -= b->bytes;
    return b;
}

static void dbuf_free(gsv_dbuf *b) {
    if (!b) return;
    gr_shbuf_free(b->p); /* a KEEP output may be an executor call's shared buffer */
    free(b);
}

void gsv_data_release(gsv_dbuf *b) {
    if (!b) return;
    pthread_mutex_lock(&st.lock);
    b = unref_locked(b);
    pthread_mutex_unlock(&st.lock);
    dbuf_free(b);
}

int gsv_data_reserve(uint64_t bytes, const char *what, gr_err *e) {
    pthread_mutex_lock(&st.lock);
    uint64_t busy = st.held + st.reserved;
    int ok = bytes <= st.limit && busy <= st.limit - bytes;
    if (ok) st.reserved += bytes;
    pthread_mutex_unlock(&st.lock);
    if (ok) return GRID_OK;
    char a[32], b[32], c[32];
    return gr_seterr(e, GRID_ERR_LIMIT,
                     "this server holds %s of remote data; %s of %s exceeds --data-memory %s: free handles "
                     "(grid_data_free_np) or start gridrpcd with a larger --data-memory",
                     gsv_data_size(busy, a, sizeof a), what, gsv_data_size(bytes, b, sizeof b),
                     gsv_data_size(st.limit, c, sizeof c));
}

void gsv_data_unreserve(uint64_t bytes) {
    pthread_mutex_lock(&st.lock);
    st.reserved -= bytes;
    pthread_mutex_unlock(&st.lock);
}

void gsv_data_usage(uint64_t *held, uint64_t *reserved) {
    pthread_mutex_lock(&st.lock);
    *held = st.held;
    *reserved = st.reserved;
    pthread_mutex_unlock(&st.lock);
}

/* ---------------------------------------------------------------- sessions */

static dsession *find_session(uint64_t id) {
    for (dsession *s = st.sessions; s; s = s->next)
        if (s->id == id) return s;
    return NULL;
}

static dsession *get_session(uint64_t id, long long now) {
    dsession *s = find_session(id);
    if (s) return s;
    s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->id = id;
    s->used_ns = s->alone_ns = now;
    s->next = st.sessions;
    st.sessions = s;
    return s;
}

static entry *find_entry(uint64_t session_id, uint64_t handle) {
    for (entry *x = st.buckets[bucket_of(session_id, handle)]; x; x = x->bnext)
        if (x->handle == handle && x->sess->id == session_id) return x;
    return NULL;
}

/* Unlinks X from its bucket and session; returns its buffer to free outside the lock. */
static gsv_dbuf *remove_entry(entry *x) {
    entry **pp = &st.buckets[bucket_of(x->sess->id, x->handle)];
    while (*pp != x)
        pp = &(*pp)->bnext;
    *pp = x->bnext;
    if (x->sprev)
        x->sprev->snext = x->snext;
    else
        x->sess->entries = x->snext;
    if (x->snext) x->snext->sprev = x->sprev;
    x->sess->n--;
    x->sess->bytes -= x->buf->bytes;
    gsv_dbuf *b = unref_locked(x->buf);
    free(x);
    return b;
}

/* Buffers whose last reference went, collected under the lock and freed outside it. */
typedef struct dead {
    gsv_dbuf *b;
    struct dead *next;
} dead;

/* Empties S (under the lock), adding the buffers to free to LIST. */
static dead *empty_session(dsession *s, dead *list) {
    while (s->entries) {
        gsv_dbuf *b = remove_entry(s->entries);
        if (!b) continue;
        dead *d = malloc(sizeof *d);
        if (!d) {
            /* Out of memory for the list: free now, under the lock (rare, still correct). */
            dbuf_free(b);
            continue;
        }
        d->b = b;
        d->next = list;
        list = d;
    }
    return list;
}

static void free_dead(dead *list) {
    while (list) {
        dead *n = list->next;
        dbuf_free(list->b);
        free(list);
        list = n;
    }
}

static void unlink_session(dsession *s) {
    dsession **pp = &st.sessions;
    while (*pp != s)
        pp = &(*pp)->next;
    *pp = s->next;
    free(s);
}

/* 1 if C may use session S as its own (st.lock held); claims an unowned S for C. */
static int may_use(const gsv_conn *c, dsession *s) {
    int anonymous = !c->owner[0] || strncmp(c->owner, "c:", 2) == 0;
    if (!s->owner[0]) {
        /* A server copying a client's handle here acts for that client: it owns nothing. */
        if (!anonymous && !c->is_server) snprintf(s->owner, sizeof s->owner, "%s", c->owner);
        return 1;
    }
    return gsv_owner_may(c, s->owner) || c->is_server;
}

int gsv_data_join(gsv_conn *c, uint64_t id, int put, int *guest, gr_err *e) {
    if (guest) *guest = 0;
    struct gsv_dconn *d = c->data;
    if (!d) {
        d = c->data = calloc(1, sizeof *d);
        if (!d) return gr_seterr(e, GRID_ERR_NOMEM, "the server is out of memory: retry later");
    }
    int joined = 0;
    for (unsigned i = 0; i < d->n && !joined; i++)
        joined = d->ids[i] == id;
    /* Each session costs the store an entry and this list a slot: a peer naming new ones
     * without end is refused (a client process uses one; a server copying data on
     * behalf of its clients, one per client). */
    if (!joined && d->n >= c->srv->opt.max_sessions_per_conn)
        return gr_seterr(e, GRID_ERR_LIMIT,
                         "this connection already used %u data sessions, the most the server allows one "
                         "connection (--max-sessions-per-connection %u): a client process needs one; "
                         "open another connection for more",
                         d->n, c->srv->opt.max_sessions_per_conn);
    if (!joined && d->n == d->cap) {
        unsigned cap = d->cap ? 2 * d->cap : 4;
        uint64_t *ids = realloc(d->ids, cap * sizeof *ids);
        if (!ids) return gr_seterr(e, GRID_ERR_NOMEM, "the server is out of memory: retry later");
        d->ids = ids;
        d->cap = cap;
    }
    long long now = gr_now_ns();
    pthread_mutex_lock(&st.lock);
    dsession *s = get_session(id, now);
    int allowed = s && may_use(c, s);
    /* A connection with neither key nor session (a server copying a handle here without
     * a key) may add to a session it does not own, never read, free or replace. */
    int as_guest = s && !allowed && put && (!c->owner[0] || strncmp(c->owner, "c:", 2) == 0);
    if (s && (allowed || as_guest)) {
        s->used_ns = now;
        if (!joined) s->nconns++;
    }
    pthread_mutex_unlock(&st.lock);
    if (!s) return gr_seterr(e, GRID_ERR_NOMEM, "the server is out of memory: retry later");
    if (!allowed && !as_guest)
        /* The same words as for a handle never put here: the session's existence is not
         * told to whoever guesses its id. */
        return gr_seterr(
            e, GRID_ERR_ARGS,
            "no data of this session on this server: data handles belong to the client (its key, "
            "or its session) that made them");
    if (guest) *guest = as_guest;
    if (!joined) d->ids[d->n++] = id;
    return GRID_OK;
}

int gsv_data_conn_holds(const gsv_conn *c) {
    const struct gsv_dconn *d = c->data;
    if (!d) return 0;
    /* Only a session that still holds data counts: an ended or expired one loses nothing
     * when this connection closes. */
    int holds = 0;
    pthread_mutex_lock(&st.lock);
    for (unsigned i = 0; i < d->n && !holds; i++) {
        const dsession *x = find_session(d->ids[i]);
        holds = x && x->n > 0;
    }
    pthread_mutex_unlock(&st.lock);
    return holds;
}

void gsv_data_conn_closed(gsv_conn *c) {
    struct gsv_dconn *d = c->data;
    if (!d) return;
    long long now = gr_now_ns();
    pthread_mutex_lock(&st.lock);
    for (unsigned i = 0; i < d->n; i++) {
        dsession *s = find_session(d->ids[i]);
        if (s && s->nconns && --s->nconns == 0) s->alone_ns = now;
    }
    pthread_mutex_unlock(&st.lock);
    /* The sweeper looks again at once: a grace shorter than its period still counts. */
    pthread_cond_signal(&st.wake);
    free(d->ids);
    free(d);
    c->data = NULL;
}

/* ---------------------------------------------------------------- handles */

uint64_t gsv_data_store(uint64_t session_id, uint64_t handle, uint32_t type, uint64_t count, void *p,
                        gsv_dbuf **ref) {
    uint64_t bytes = grp_data_bytes(type, count);
    gsv_dbuf *b = malloc(sizeof *b);
    entry *x = malloc(sizeof *x);
    long long now = gr_now_ns();
    pthread_mutex_lock(&st.lock);
    st.reserved -= bytes;
    dsession *s = b && x ? get_session(session_id, now) : NULL;
    if (!s) {
        /* No memory for the bookkeeping: the data is dropped, as if freed at once (with
         * REF, P stays the caller's). */
        pthread_mutex_unlock(&st.lock);
        gsv_log(GSV_LOG_ERROR, "out of memory storing data handle %" PRIu64 ": dropped", handle);
        free(b);
        free(x);
        if (ref)
            *ref = NULL;
        else
            gr_shbuf_free(p);
        return 0;
    }
    s->used_ns = now;
    *b = (gsv_dbuf){ref ? 2 : 1, type, count, bytes, p};
    if (ref) *ref = b;
    st.held += bytes;
    gsv_dbuf *old = NULL;
    entry *e = find_entry(session_id, handle);
    if (e) {
        /* Replaced in place: a call still reading the old buffer keeps its reference. */
        s->bytes += bytes - e->buf->bytes;
        old = unref_locked(e->buf);
        e->buf = b;
        free(x);
    } else {
        *x = (entry){handle, s, b, NULL, NULL, s->entries};
        unsigned k = bucket_of(session_id, handle);
        x->bnext = st.buckets[k];
        st.buckets[k] = x;
        if (s->entries) s->entries->sprev = x;
        s->entries = x;
        s->n++;
        s->bytes += bytes;
    }
    uint64_t held = st.held;
    pthread_mutex_unlock(&st.lock);
    dbuf_free(old);
    return held;
}

gsv_dbuf *gsv_data_get(uint64_t session_id, uint64_t handle) {
    pthread_mutex_lock(&st.lock);
    entry *x = find_entry(session_id, handle);
    gsv_dbuf *b = x ? x->buf : NULL;
    if (b) {
        b->refs++;
        x->sess->used_ns = gr_now_ns();
    }
    pthread_mutex_unlock(&st.lock);
    return b;
}

int gsv_data_has(uint64_t session_id, uint64_t handle) {
    pthread_mutex_lock(&st.lock);
    int has = find_entry(session_id, handle) != NULL;
    pthread_mutex_unlock(&st.lock);
    return has;
}

int gsv_data_may_end(const gsv_conn *c, uint64_t session_id) {
    pthread_mutex_lock(&st.lock);
    dsession *s = find_session(session_id);
    int may = !s || !s->owner[0] || gsv_owner_may(c, s->owner) || c->is_server;
    pthread_mutex_unlock(&st.lock);
    return may;
}

uint64_t gsv_data_free(uint64_t session_id, uint64_t handle, int *found) {
    pthread_mutex_lock(&st.lock);
    entry *x = find_entry(session_id, handle);
    uint64_t bytes = x ? x->buf->bytes : 0;
    gsv_dbuf *b = x ? remove_entry(x) : NULL;
    *found = x != NULL;
    pthread_mutex_unlock(&st.lock);
    dbuf_free(b);
    return bytes;
}

void gsv_data_session_end(uint64_t session_id, unsigned *n, uint64_t *bytes) {
    pthread_mutex_lock(&st.lock);
    dsession *s = find_session(session_id);
    dead *list = NULL;
    *n = s ? s->n : 0;
    *bytes = s ? s->bytes : 0;
    if (s) {
        list = empty_session(s, NULL);
        /* The session itself stays while connections name it (they may put again). */
        if (s->nconns == 0) unlink_session(s);
    }
    pthread_mutex_unlock(&st.lock);
    free_dead(list);
}

/* ---------------------------------------------------------------- the sweeper */

/* Frees the sessions whose grace or lease ran out; returns when the next may. */
static void sweep(long long now) {
    dead *list = NULL;
    dsession *s = st.sessions;
    while (s) {
        dsession *next = s->next;
        double idle_s = (double)(now - s->used_ns) / 1e9, alone_s = (double)(now - s->alone_ns) / 1e9;
        int grace = s->nconns == 0 && alone_s >= st.grace, lease = !grace && s->n && idle_s >= st.lease;
        if (grace || lease) {
            char b[32];
            if (s->n)
                gsv_log(GSV_LOG_INFO,
                        "data session %016" PRIx64
                        " expired: %s for %.1f s (--data-%s): freed %u handle%s, %s",
                        s->id, grace ? "no connection" : "not used", grace ? alone_s : idle_s,
                        grace ? "grace" : "lease", s->n, s->n == 1 ? "" : "s",
                        gsv_data_size(s->bytes, b, sizeof b));
            list = empty_session(s, list);
            if (s->nconns == 0) unlink_session(s);
        }
        s = next;
    }
    pthread_mutex_unlock(&st.lock);
    free_dead(list);
    pthread_mutex_lock(&st.lock);
}

static void *sweeper_main(void *arg) {
    (void)arg;
    /* A quarter of the shorter period, between 50 ms and 5 s: a 1 s grace is honoured
     * within about 0.25 s, a 60 s one checked every 5 s. */
    double period = (st.grace < st.lease ? st.grace : st.lease) / 4;
    if (period < 0.05) period = 0.05;
    if (period > 5) period = 5;
    pthread_mutex_lock(&st.lock);
    while (!st.stop) {
        sweep(gr_now_ns());
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        long long ns = ts.tv_nsec + (long long)(period * 1e9);
        ts.tv_sec += ns / 1000000000LL;
        ts.tv_nsec = ns % 1000000000LL;
        pthread_cond_timedwait(&st.wake, &st.lock, &ts);
    }
    pthread_mutex_unlock(&st.lock);
    return NULL;
}

int gsv_data_start(gsv_server *srv, gr_err *e) {
    st.limit = srv->opt.data_memory;
    st.grace = srv->opt.data_grace;
    st.lease = srv->opt.data_lease;
    st.stop = 0;
    int rc = pthread_create(&st.sweeper, NULL, sweeper_main, NULL);
    if (rc) return gr_seterr(e, GRID_ERR_INTERNAL, "cannot start the data sweeper thread: %s", strerror(rc));
    st.running = 1;
    return GRID_OK;
}

void gsv_data_stop(void) {
    if (!st.running) return;
    pthread_mutex_lock(&st.lock);
    st.stop = 1;
    pthread_cond_signal(&st.wake);
    pthread_mutex_unlock(&st.lock);
    pthread_join(st.sweeper, NULL);
    st.running = 0;
    pthread_mutex_lock(&st.lock);
    dead *list = NULL;
    while (st.sessions) {
        list = empty_session(st.sessions, list);
        unlink_session(st.sessions);
    }
    pthread_mutex_unlock(&st.lock);
    free_dead(list);
}
