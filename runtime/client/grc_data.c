/* grc_data.c: remote data handles on the client (gridrpc.h "Remote data"): the handle
 * objects, the registry that tells a handle from any other pointer passed as an array,
 * the process's data session, and the exchanges with servers (DATA_PUT, DATA_GET,
 * DATA_FREE, DATA_COPY, SESSION_END) over pooled connections. How a handle rides in a
 * call is grc_bind.c's; the public calls, which report their outcome, are
 * grc_data_api.c's.
 *
 * A handle remembers every server holding a current copy of its data. One lock (dlock)
 * guards the registry, every handle's fields, the session and the lists below; it is
 * never held during network I/O. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "gr_settings.h"
#include "grc_client.h"

typedef struct grc_copy {
    char host[GRC_MAX_HOST];
    int port;
    uint64_t server_id; /* 0 when unknown */
} grc_copy;

struct grid_data_np {
    uint64_t id;
    uint32_t type;
    uint64_t count;
    int refs;      /* the registry's while live, plus one per call binding it */
    int live;      /* in the registry: not freed by the program */
    int has_data;  /* put, or kept by a call */
    int lost;      /* its data is gone: the code to answer (GRID_ERR_ARGS: freed or session
                    * ended; GRID_ERR_CONN_LOST: every holder failed); why says how */
    char why[512]; /* for messages */
    /* A put with no server named under a metaserver: the data waits on the client for
     * the first call, which puts it where the metaserver runs that call. */
    void *local;
    int local_users; /* exchanges reading local right now */
    int local_done;  /* a server holds it now: free local when nobody reads it */
    grc_copy *copies;
    int ncopies, capcopies;
    char where[GRC_MAX_HOST + 16]; /* grid_data_where_np: the first copy's "host:port" */
    struct grid_data_np *hnext;    /* registry chain */
};

#define NBUCKETS 1024

static pthread_mutex_t dlock = PTHREAD_MUTEX_INITIALIZER;
static grc_data *buckets[NBUCKETS];
static uint64_t session;     /* 0 until first use */
static uint64_t next_handle; /* the last handle id given */

/* Servers that hold (or held) data of this session: SESSION_END goes to each. */
typedef struct site {
    char host[GRC_MAX_HOST];
    int port;
} site;
static site *sites;
static int nsites, capsites;

/* Stale copies to free (DATA_FREE) at the next exchange. */
typedef struct stale {
    char host[GRC_MAX_HOST];
    int port;
    uint64_t session, handle;
} stale;
static stale *stales;
static int nstales, capstales;

/* ---- registry and session (dlock held unless said) */

static unsigned bucket(const void *p) {
    uintptr_t u = (uintptr_t)p;
    return (unsigned)((u >> 4) ^ (u >> 14)) % NBUCKETS;
}

static grc_data *find_live(const void *p) {
    /* Only the chain's own entries are read: P itself never is. */
    for (grc_data *d = buckets[bucket(p)]; d; d = d->hnext)
        if ((const void *)d == p) return d;
    return NULL;
}

static void unregister(grc_data *d) {
    grc_data **pp = &buckets[bucket(d)];
    while (*pp && *pp != d)
        pp = &(*pp)->hnext;
    if (*pp) *pp = d->hnext;
    d->hnext = NULL;
    d->live = 0;
}

static uint64_t session_locked(void) {
    while (!session) {
        uint64_t s = 0;
        if (getrandom(&s, sizeof s, 0) != (ssize_t)sizeof s) {
            /* No entropy source: time and address still make collisions unlikely. */
            s = (uint64_t)gr_now_ns() ^ ((uint64_t)(uintptr_t)&s << 17) ^ (uint64_t)getpid();
        }
        session = s;
    }
    return session;
}

uint64_t grc_data_session(void) {
    pthread_mutex_lock(&dlock);
    uint64_t s = session_locked();
    pthread_mutex_unlock(&dlock);
    return s;
}

int grc_data_lookup(const void *p, grc_data **out) {
    if (!p) return 0;
    pthread_mutex_lock(&dlock);
    grc_data *d = find_live(p);
    pthread_mutex_unlock(&dlock);
    if (out) *out = d;
    return d != NULL;
}

grc_data *grc_data_take(const void *p) {
    if (!p) return NULL;
    pthread_mutex_lock(&dlock);
    grc_data *d = find_live(p);
    if (d) d->refs++;
    pthread_mutex_unlock(&dlock);
    return d;
}

void grc_data_ref(grc_data *d) {
    pthread_mutex_lock(&dlock);
    d->refs++;
    pthread_mutex_unlock(&dlock);
}

static void destroy(grc_data *d) {
    free(d->local);
    free(d->copies);
    free(d);
}

void grc_data_release(grc_data *d) {
    if (!d) return;
    pthread_mutex_lock(&dlock);
    int last = --d->refs == 0;
    pthread_mutex_unlock(&dlock);
    if (last) destroy(d);
}

uint64_t grc_data_id(const grc_data *d) {
    return d->id; /* never changes */
}
uint32_t grc_data_type(const grc_data *d) {
    return d->type;
}
uint64_t grc_data_count(const grc_data *d) {
    return d->count;
}

static int copy_index(const grc_data *d, const char *host, int port) {
    for (int i = 0; i < d->ncopies; i++)
        if (d->copies[i].port == port && strcmp(d->copies[i].host, host) == 0) return i;
    return -1;
}

uint64_t grc_data_bytes_on(const grc_data *d, const char *host, int port) {
    pthread_mutex_lock(&dlock);
    uint64_t n =
        d->has_data && !d->lost && copy_index(d, host, port) >= 0 ? grp_data_bytes(d->type, d->count) : 0;
    pthread_mutex_unlock(&dlock);
    return n;
}

/* Copies of D (at most MAX) into OUT; returns how many. */
int grc_data_copies(const grc_data *d, char (*hosts)[GRC_MAX_HOST], int *ports, uint64_t *ids, int max) {
    pthread_mutex_lock(&dlock);
    int n = d->lost ? 0 : d->ncopies < max ? d->ncopies : max;
    for (int i = 0; i < n; i++) {
        memcpy(hosts[i], d->copies[i].host, GRC_MAX_HOST);
        ports[i] = d->copies[i].port;
        ids[i] = d->copies[i].server_id;
    }
    pthread_mutex_unlock(&dlock);
    return n;
}

static void set_where(grc_data *d) {
    if (d->ncopies)
        snprintf(d->where, sizeof d->where, "%s:%d", d->copies[0].host, d->copies[0].port);
    else
        d->where[0] = '\0';
}

static void note_site(const char *host, int port) {
    for (int i = 0; i < nsites; i++)
        if (sites[i].port == port && strcmp(sites[i].host, host) == 0) return;
    if (nsites == capsites) {
        int cap = capsites ? 2 * capsites : 8;
        site *n = realloc(sites, (size_t)cap * sizeof *n);
        if (!n) return; /* the server frees the session after its grace period instead */
        sites = n;
        capsites = cap;
    }
    snprintf(sites[nsites].host, sizeof sites[0].host, "%s", host);
    sites[nsites++].port = port;
}

/* Forgets a pending DATA_FREE of D on HOST:PORT (a fresh copy goes there). */
static void unstale(const grc_data *d, const char *host, int port) {
    for (int i = 0; i < nstales; i++)
        if (stales[i].handle == d->id && stales[i].session == session && stales[i].port == port &&
            strcmp(stales[i].host, host) == 0)
            stales[i--] = stales[--nstales];
}

static void add_stale(const grc_data *d, const grc_copy *c) {
    if (nstales == capstales) {
        int cap = capstales ? 2 * capstales : 16;
        stale *n = realloc(stales, (size_t)cap * sizeof *n);
        if (!n) return; /* freed at session end instead */
        stales = n;
        capstales = cap;
    }
    stale *s = &stales[nstales++];
    memcpy(s->host, c->host, sizeof s->host);
    s->port = c->port;
    s->session = session;
    s->handle = d->id;
}

/* Records a current copy of D on HOST:PORT. */
static void add_copy(grc_data *d, const char *host, int port, uint64_t server_id) {
    int i = copy_index(d, host, port);
    unstale(d, host, port);
    note_site(host, port);
    if (i >= 0) {
        if (server_id) d->copies[i].server_id = server_id;
        return;
    }
    if (d->ncopies == d->capcopies) {
        int cap = d->capcopies ? 2 * d->capcopies : 4;
        grc_copy *n = realloc(d->copies, (size_t)cap * sizeof *n);
        if (!n) return; /* not remembered: a later call copies it there again */
        d->copies = n;
        d->capcopies = cap;
    }
    grc_copy *c = &d->copies[d->ncopies++];
    snprintf(c->host, sizeof c->host, "%s", host);
    c->port = port;
    c->server_id = server_id;
    set_where(d);
}

static void drop_local_if_done(grc_data *d) {
    if (d->local && d->local_done && d->local_users == 0) {
        free(d->local);
        d->local = NULL;
    }
}

void grc_data_kept_on(grc_data *d, const char *host, int port, uint64_t server_id) {
    pthread_mutex_lock(&dlock);
    if (!d->live || d->lost) {
        /* Freed (or its session ended) while the call ran: what the call kept is garbage. */
        grc_copy c;
        snprintf(c.host, sizeof c.host, "%s", host);
        c.port = port;
        if (!d->live) add_stale(d, &c); /* a session that ended freed it already */
        pthread_mutex_unlock(&dlock);
        return;
    }
    for (int i = 0; i < d->ncopies; i++)
        if (d->copies[i].port != port || strcmp(d->copies[i].host, host) != 0) add_stale(d, &d->copies[i]);
    d->ncopies = 0;
    d->has_data = 1;
    d->local_done = 1; /* the client's copy is older than the call's output */
    drop_local_if_done(d);
    add_copy(d, host, port, server_id);
    pthread_mutex_unlock(&dlock);
}

static void mark_lost(grc_data *d, int code, const char *why) {
    d->lost = code;
    snprintf(d->why, sizeof d->why, "%s", why);
    d->ncopies = 0;
    set_where(d);
}

void grc_data_gone_from(grc_data *d, const char *host, int port, const char *why) {
    pthread_mutex_lock(&dlock);
    int i = copy_index(d, host, port);
    if (i >= 0) {
        d->copies[i] = d->copies[--d->ncopies];
        set_where(d);
        if (d->ncopies == 0 && !d->local && d->has_data) {
            char m[sizeof d->why];
            snprintf(m, sizeof m, "its only copy was on %s:%d, which failed (%s)", host, port, why);
            mark_lost(d, GRID_ERR_CONN_LOST, m);
        }
    }
    pthread_mutex_unlock(&dlock);
}

/* ---- exchanges */

/* A pooled connection to HOST:PORT with the deadline of one data exchange. */
static int open_conn(const char *host, int port, const grc_config *cfg, grc_conn **c, gr_err *e) {
    int rc = grc_conn_get(host, port, cfg, c, e);
    if (rc == GRID_ERR_TIMEOUT) e->code = rc = GRID_ERR_CONNECT;
    if (rc) return rc;
    (*c)->rd.deadline_ns = (*c)->wr.deadline_ns = grc_config_deadline(cfg);
    return GRID_OK;
}

/* Reads the reply to request ID: TYPE, or ERROR (its code, *remote set: the server
 * answered, the connection is fine). *broken: the connection cannot be reused. */
static int await_reply(grc_conn *c, uint64_t id, uint32_t type, const char *what, int *remote, int *broken,
                       gr_err *e) {
    grw_header h;
    int rc = grp_read_header(&c->rd, &h, e);
    if (!rc && h.request_id != id)
        rc = gr_seterr(e, GRID_ERR_PROTOCOL, "reply to request %llu while waiting for %llu",
                       (unsigned long long)h.request_id, (unsigned long long)id);
    if (rc) {
        *broken = 1;
        if (rc == GRID_ERR_CONN_LOST)
            gr_seterr(e, rc,
                      "the server closed the connection during %s: it may have crashed or been stopped",
                      what);
        return rc;
    }
    int in_step = 1;
    rc = grp_expect(&c->rd, &h, type, what, &in_step, e);
    *broken = !in_step;
    *remote = rc && h.type == GRP_ERROR;
    return rc;
}

/* Ends an exchange: the connection back to the pool (closed when broken). */
static int done(grc_conn *c, int broken, int rc) {
    grc_conn_put(c, broken || rc == GRID_ERR_TIMEOUT);
    return rc;
}

/* DATA_PUT of D's COUNT elements at BUF on HOST:PORT (SES: the session). */
static int put_on(const char *host, int port, uint64_t ses, const grc_data *d, const void *buf,
                  const grc_config *cfg, int *remote, gr_err *e) {
    grc_conn *c;
    *remote = 0;
    int rc = open_conn(host, port, cfg, &c, e);
    if (rc) return rc;
    uint64_t bytes = grp_data_bytes(d->type, d->count);
    if (bytes > c->server.max_array || grp_data_put_bytes(d->type, d->count) > c->server.max_message) {
        *remote = 1;
        return done(
            c, 0,
            gr_seterr(e, GRID_ERR_LIMIT,
                      "%llu bytes of data; the server at %s:%d accepts at most %llu per array and %llu "
                      "per message (gridrpcd --max-array, --max-message)",
                      (unsigned long long)bytes, host, port, (unsigned long long)c->server.max_array,
                      (unsigned long long)c->server.max_message));
    }
    uint64_t id = c->next_id++;
    grp_data_id di = {ses, d->id};
    int broken = 0;
    rc = grp_write_data_put(&c->wr, id, di, d->type, d->count, buf, e);
    if (rc) broken = 1;
    if (!rc) rc = await_reply(c, id, GRP_DATA_OK, "DATA_PUT", remote, &broken, e);
    if (!rc && (rc = grp_read_empty(&c->rd, e)) != 0) broken = 1;
    return done(c, broken, rc);
}

/* A message with the ids of D (DATA_GET / DATA_FREE) or the session alone, then its
 * DATA_OK: the simple exchanges. */
enum { X_FREE, X_END };
static int simple(const char *host, int port, int kind, grp_data_id di, const grc_config *cfg, int *remote,
                  gr_err *e) {
    grc_conn *c;
    *remote = 0;
    int rc = open_conn(host, port, cfg, &c, e);
    if (rc) return rc;
    uint64_t id = c->next_id++;
    int broken = 0;
    const char *what = kind == X_FREE ? "DATA_FREE" : "SESSION_END";
    rc = kind == X_FREE ? grp_write_data_free(&c->wr, id, di, e)
                        : grp_write_session_end(&c->wr, id, di.session, e);
    if (rc) broken = 1;
    if (!rc) rc = await_reply(c, id, GRP_DATA_OK, what, remote, &broken, e);
    if (!rc && (rc = grp_read_empty(&c->rd, e)) != 0) broken = 1;
    return done(c, broken, rc);
}

/* DATA_GET of D from HOST:PORT into BUF. */
static int get_from(const char *host, int port, uint64_t ses, const grc_data *d, void *buf,
                    const grc_config *cfg, int *remote, gr_err *e) {
    grc_conn *c;
    *remote = 0;
    int rc = open_conn(host, port, cfg, &c, e);
    if (rc) return rc;
    uint64_t id = c->next_id++;
    grp_data_id di = {ses, d->id};
    int broken = 0;
    rc = grp_write_data_get(&c->wr, id, di, e);
    if (rc) broken = 1;
    if (!rc) rc = await_reply(c, id, GRP_DATA, "DATA_GET", remote, &broken, e);
    uint32_t type = 0;
    uint64_t count = 0;
    if (!rc) {
        uint64_t want = grp_data_bytes(d->type, d->count);
        rc = grp_read_data(&c->rd, &type, &count, want, e);
        if (!rc && (type != d->type || count != d->count))
            rc =
                gr_seterr(e, GRID_ERR_PROTOCOL, "the server sent %llu %s elements for handle %llu of %llu %s",
                          (unsigned long long)count, grd_type_name(type), (unsigned long long)d->id,
                          (unsigned long long)d->count, grd_type_name(d->type));
        if (!rc) rc = grp_read_data_elems(&c->rd, type, count, buf, e);
        if (rc) broken = 1;
    }
    return done(c, broken, rc);
}

/* DATA_COPY of D from the server at SRC to HOST:PORT. */
static int copy_from(const grc_copy *src, const char *host, int port, uint64_t ses, const grc_data *d,
                     const grc_config *cfg, int *remote, gr_err *e) {
    grc_conn *c;
    *remote = 0;
    int rc = open_conn(src->host, src->port, cfg, &c, e);
    if (rc) return rc;
    grp_data_copy m;
    memset(&m, 0, sizeof m);
    m.d.session = ses;
    m.d.handle = d->id;
    /* A TLS destination goes as gridrpcs://HOST: the source server then uses TLS too. */
    if (gr_tls_endpoint(host, port)) {
        if (strlen(host) + strlen(GR_SCHEME_TLS) >= sizeof m.host) {
            return done(
                c, 0, gr_seterr(e, GRID_ERR_ARGS, "the host name %s is too long for a TLS data copy", host));
        }
        snprintf(m.host, sizeof m.host, "%s%s", GR_SCHEME_TLS, host);
    } else {
        snprintf(m.host, sizeof m.host, "%s", host);
    }
    m.port = (uint32_t)port;
    uint64_t id = c->next_id++;
    int broken = 0;
    rc = grp_write_data_copy(&c->wr, id, &m, e);
    if (rc) broken = 1;
    if (!rc) rc = await_reply(c, id, GRP_DATA_OK, "DATA_COPY", remote, &broken, e);
    if (!rc && (rc = grp_read_empty(&c->rd, e)) != 0) broken = 1;
    return done(c, broken, rc);
}

void grc_data_flush(const grc_config *cfg) {
    pthread_mutex_lock(&dlock);
    stale *list = stales;
    int n = nstales;
    stales = NULL;
    nstales = capstales = 0;
    pthread_mutex_unlock(&dlock);
    grc_config own;
    gr_err ce;
    if (n && !cfg) cfg = grc_config_get(&own, &ce) == GRID_OK ? &own : NULL;
    for (int i = 0; i < n && cfg; i++) {
        gr_err e;
        int remote;
        grp_data_id di = {list[i].session, list[i].handle};
        simple(list[i].host, list[i].port, X_FREE, di, cfg, &remote, &e); /* best effort */
    }
    free(list);
}

/* Why D cannot give its data, or GRID_OK (dlock held). */
static int unusable(const grc_data *d, gr_err *e) {
    if (d->lost)
        return gr_seterr(e, d->lost, "data handle %llu is lost: %s; put its data again (grid_data_put_np)",
                         (unsigned long long)d->id, d->why);
    if (!d->has_data)
        return gr_seterr(e, GRID_ERR_ARGS,
                         "data handle %llu has no data yet: put some (grid_data_put_np) or pass it as an OUT "
                         "argument first",
                         (unsigned long long)d->id);
    return GRID_OK;
}

int grc_data_copy_to(grc_data *d, const char *host, int port, uint64_t server_id, const grc_config *cfg,
                     int *dest_failed, gr_err *e) {
    *dest_failed = 0;
    pthread_mutex_lock(&dlock);
    int rc = unusable(d, e);
    if (!rc && copy_index(d, host, port) >= 0) {
        pthread_mutex_unlock(&dlock);
        return GRID_OK;
    }
    uint64_t ses = session_locked();
    pthread_mutex_unlock(&dlock);
    if (rc) return rc;
    char tried[1024] = "";
    size_t used = 0;
    /* Each failed source is dropped, so this ends; the bound guards against copies that
     * other threads keep adding meanwhile. */
    for (int round = 0; round < 64; round++) {
        /* The first copy still known: servers that failed are dropped on the way. */
        pthread_mutex_lock(&dlock);
        grc_copy src;
        int have = d->ncopies > 0 && !d->lost;
        if (have) src = d->copies[0];
        void *local = !have && !d->lost ? d->local : NULL;
        if (local) d->local_users++;
        pthread_mutex_unlock(&dlock);
        int remote = 0;
        gr_err ce;
        gr_clearerr(&ce);
        if (have) {
            rc = copy_from(&src, host, port, ses, d, cfg, &remote, &ce);
            if (!rc) break;
            /* The source answered: the destination failed or refused (its words). */
            if (remote && (grc_code_is_server_failure(rc) || rc == GRID_ERR_LIMIT)) {
                *dest_failed = grc_code_is_server_failure(rc);
                return gr_seterr(e, rc, "copying data handle %llu from %s:%d to %s:%d: %s",
                                 (unsigned long long)d->id, src.host, src.port, host, port, ce.msg);
            }
            /* The source failed, or no longer holds it (freed after its lease): try another. */
            if (used < sizeof tried - 1)
                used += (size_t)snprintf(tried + used, sizeof tried - used, "%s%s:%d (%s)", used ? ", " : "",
                                         src.host, src.port, ce.msg);
            grc_data_gone_from(d, src.host, src.port, ce.msg);
            continue;
        }
        if (local) {
            rc = put_on(host, port, ses, d, local, cfg, &remote, &ce);
            pthread_mutex_lock(&dlock);
            d->local_users--;
            if (!rc) d->local_done = 1;
            drop_local_if_done(d);
            pthread_mutex_unlock(&dlock);
            if (!rc) break;
            *dest_failed = !remote && grc_code_is_server_failure(rc);
            return gr_seterr(e, rc, "putting data handle %llu on %s:%d: %s", (unsigned long long)d->id, host,
                             port, ce.msg);
        }
        pthread_mutex_lock(&dlock);
        if (!d->lost) mark_lost(d, GRID_ERR_CONN_LOST, tried[0] ? tried : "no server holds it");
        rc = unusable(d, e);
        pthread_mutex_unlock(&dlock);
        if (tried[0])
            gr_seterr(e, GRID_ERR_CONN_LOST,
                      "data handle %llu is lost: every server holding it failed: %s; put its data again "
                      "(grid_data_put_np)",
                      (unsigned long long)d->id, tried);
        return rc;
    }
    if (rc)
        return gr_seterr(e, rc, "data handle %llu could not be copied to %s:%d: tried %s",
                         (unsigned long long)d->id, host, port, tried);
    pthread_mutex_lock(&dlock);
    if (ses == session) add_copy(d, host, port, server_id);
    pthread_mutex_unlock(&dlock);
    return GRID_OK;
}

int grc_data_new(grc_data **out, uint32_t type, uint64_t count, gr_err *e) {
    *out = NULL;
    if (!grp_data_type_ok(type))
        return gr_seterr(e, GRID_ERR_ARGS,
                         "type %u is not a number type: use GRID_TYPE_CHAR ... GRID_TYPE_DCOMPLEX", type);
    if (count && !grp_data_bytes(type, count))
        return gr_seterr(e, GRID_ERR_LIMIT, "%llu elements of %s overflow 64 bits", (unsigned long long)count,
                         grd_type_name(type));
    grc_data *d = calloc(1, sizeof *d);
    if (!d) return gr_seterr(e, GRID_ERR_NOMEM, "out of memory");
    d->type = type;
    d->count = count;
    d->refs = 1;
    d->live = 1;
    pthread_mutex_lock(&dlock);
    d->id = ++next_handle;
    unsigned b = bucket(d);
    d->hnext = buckets[b];
    buckets[b] = d;
    pthread_mutex_unlock(&dlock);
    *out = d;
    return GRID_OK;
}

int grc_data_free(grc_data *d, gr_err *e) {
    pthread_mutex_lock(&dlock);
    if (!find_live(d)) {
        pthread_mutex_unlock(&dlock);
        return gr_seterr(e, GRID_ERR_ARGS, "grid_data_free_np: not a live data handle (freed already?)");
    }
    unregister(d);
    int n = d->lost ? 0 : d->ncopies;
    grc_copy *list = n ? malloc((size_t)n * sizeof *list) : NULL;
    if (list) memcpy(list, d->copies, (size_t)n * sizeof *list);
    d->ncopies = 0;
    uint64_t ses = session_locked();
    mark_lost(d, GRID_ERR_ARGS, "it was freed (grid_data_free_np)");
    pthread_mutex_unlock(&dlock);
    grc_config cfg;
    gr_err ce;
    if (list && grc_config_get(&cfg, &ce) == GRID_OK) {
        grp_data_id di = {ses, d->id};
        for (int i = 0; i < n; i++) {
            int remote;
            /* A server that is gone frees it with the session (grace or lease). */
            simple(list[i].host, list[i].port, X_FREE, di, &cfg, &remote, &ce);
        }
    }
    free(list);
    grc_data_release(d);
    return GRID_OK;
}

void grc_data_reset(void) {
    pthread_mutex_lock(&dlock);
    uint64_t ses = session;
    site *list = sites;
    int n = nsites;
    sites = NULL;
    nsites = capsites = 0;
    free(stales); /* SESSION_END frees them */
    stales = NULL;
    nstales = capstales = 0;
    for (unsigned b = 0; b < NBUCKETS; b++)
        for (grc_data *d = buckets[b]; d; d = d->hnext) {
            if (d->local && !d->local_done) { /* its data never left the client: still good */
                d->ncopies = 0;
                set_where(d);
                continue;
            }
            if (d->has_data && !d->lost)
                mark_lost(
                    d, GRID_ERR_ARGS,
                    "its session ended (grid_reset_np or grpc_finalize), which freed it on its servers");
            d->ncopies = 0;
        }
    session = 0; /* a new one at the next use */
    pthread_mutex_unlock(&dlock);
    if (ses && n) {
        grc_config cfg;
        gr_err e;
        if (grc_config_get(&cfg, &e) == GRID_OK) {
            /* Never wait long on the way out: a server that does not answer frees the
             * session after its grace period. */
            if (cfg.call_timeout <= 0 || cfg.call_timeout > 10) cfg.call_timeout = 10;
            for (int i = 0; i < n; i++) {
                int remote;
                grp_data_id di = {ses, 0};
                simple(list[i].host, list[i].port, X_END, di, &cfg, &remote, &e);
            }
        }
    }
    free(list);
}

/* ---- what the public calls of grc_data_api.c do */

/* The server WHERE names, for grid_data_put_np: *LAZY when the data should wait on the
 * client for its first call (a metaserver picks that call's server). */
static int resolve_where(const char *where, const grc_config *cfg, char *host, int *port, int *lazy,
                         gr_err *e) {
    *lazy = 0;
    char err[512];
    if (where && *where) {
        int tls, scheme = gr_scheme_len(where, &tls);
        int url = scheme > 0;
        const char *hp = where + scheme;
        const char *slash = strchr(hp, '/');
        if (url && slash && slash[1]) { /* gridrpc://host:port/function: its server */
            grc_target t;
            int rc = grc_resolve(where, cfg, &t, e);
            if (rc) return rc;
            snprintf(host, GRC_MAX_HOST, "%s", t.host);
            *port = t.port;
            return GRID_OK;
        }
        if (url || (strchr(hp, ':') && !slash)) { /* host:port */
            char buf[GRC_MAX_HOST + 16];
            size_t len = slash ? (size_t)(slash - hp) : strlen(hp);
            if (len >= sizeof buf) return gr_seterr(e, GRID_ERR_ARGS, "'%s': server name too long", where);
            memcpy(buf, hp, len);
            buf[len] = '\0';
            if (gr_parse_hostport(buf, 0, host, GRC_MAX_HOST, port, err, sizeof err))
                return gr_seterr(e, GRID_ERR_ARGS, "'%s': %s", where, err);
            if (tls) gr_tls_endpoint_mark(host, *port);
            return GRID_OK;
        }
        /* A function name: the server a call of it would go to. */
        grc_target t;
        memset(&t, 0, sizeof t);
        if (cfg->meta_host[0]) {
            const grd_desc *d;
            int rc = grc_meta_describe(where, cfg, &t, &d, e);
            if (rc) return rc;
            if (!t.host[0]) {
                *lazy = 1;
                return GRID_OK;
            }
        } else {
            int rc = grc_resolve(where, cfg, &t, e);
            if (rc) return rc;
        }
        snprintf(host, GRC_MAX_HOST, "%s", t.host);
        *port = t.port;
        return GRID_OK;
    }
    if (cfg->meta_host[0]) {
        *lazy = 1;
        return GRID_OK;
    }
    if (cfg->server_host[0]) {
        snprintf(host, GRC_MAX_HOST, "%s", cfg->server_host);
        *port = cfg->server_port;
        return GRID_OK;
    }
    return gr_seterr(
        e, GRID_ERR_CONFIG,
        "no server to put the data on: name one (\"host:port\" or a function), set "
        "GRIDRPC_METASERVER or GRIDRPC_SERVER=host:port, or add 'server host:port' to ~/.gridrpc.conf");
}

int grc_data_put(grc_data **h, const char *where, int type, size_t count, const void *buf, gr_err *e) {
    if (!h) return gr_seterr(e, GRID_ERR_ARGS, "grid_data_put_np: H is NULL");
    *h = NULL;
    if (!buf && count)
        return gr_seterr(e, GRID_ERR_ARGS, "grid_data_put_np: BUF is NULL but COUNT is %zu", count);
    grc_config cfg;
    char host[GRC_MAX_HOST] = "";
    int port = 0, lazy = 0;
    grc_data *d = NULL;
    int rc = grc_config_get(&cfg, e);
    if (!rc) rc = grc_data_new(&d, (uint32_t)type, count, e);
    if (rc) return rc;
    rc = resolve_where(where, &cfg, host, &port, &lazy, e);
    if (!rc) grc_data_flush(&cfg);
    size_t bytes = (size_t)grp_data_bytes(d->type, d->count);
    if (!rc && lazy) {
        d->local = malloc(bytes ? bytes : 1);
        if (!d->local)
            rc = gr_seterr(e, GRID_ERR_NOMEM, "out of memory for a client copy of %zu bytes", bytes);
        else
            memcpy(d->local, buf, bytes);
    } else if (!rc) {
        int remote;
        rc = put_on(host, port, grc_data_session(), d, buf, &cfg, &remote, e);
        if (rc) gr_prefixerr(e, "grid_data_put_np on %s:%d: ", host, port);
    }
    if (rc) {
        pthread_mutex_lock(&dlock);
        unregister(d);
        pthread_mutex_unlock(&dlock);
        grc_data_release(d);
        return rc;
    }
    pthread_mutex_lock(&dlock);
    d->has_data = 1;
    if (!lazy) add_copy(d, host, port, 0);
    pthread_mutex_unlock(&dlock);
    *h = d;
    return GRID_OK;
}

/* D is a live handle (dlock held)? Else E says so, for FN. */
static int check_live(const grid_data_np *h, const char *fn, gr_err *e) {
    if (!h) return gr_seterr(e, GRID_ERR_ARGS, "%s: the handle is NULL", fn);
    if (!find_live(h))
        return gr_seterr(e, GRID_ERR_ARGS,
                         "%s: not a live data handle (freed already, or not made by grid_data_put_np / "
                         "grid_data_new_np)",
                         fn);
    return GRID_OK;
}

int grc_data_get(grc_data *h, void *buf, size_t count, gr_err *e) {
    pthread_mutex_lock(&dlock);
    int rc = check_live(h, "grid_data_get_np", e);
    grc_data *d = h;
    if (!rc && count != d->count)
        rc =
            gr_seterr(e, GRID_ERR_ARGS, "grid_data_get_np: handle %llu holds %llu %s elements, not %zu",
                      (unsigned long long)d->id, (unsigned long long)d->count, grd_type_name(d->type), count);
    if (!rc && !buf && count) rc = gr_seterr(e, GRID_ERR_ARGS, "grid_data_get_np: BUF is NULL");
    if (!rc) rc = unusable(d, e);
    if (!rc) d->refs++;
    pthread_mutex_unlock(&dlock);
    if (rc) return rc;
    grc_config cfg;
    rc = grc_config_get(&cfg, e);
    if (!rc) grc_data_flush(&cfg);
    size_t bytes = (size_t)grp_data_bytes(d->type, d->count);
    while (!rc) {
        pthread_mutex_lock(&dlock);
        grc_copy src;
        int have = d->ncopies > 0 && !d->lost;
        if (have) src = d->copies[0];
        int local = !have && d->local && !d->local_done;
        if (local) memcpy(buf, d->local, bytes);
        if (!have && !local) rc = unusable(d, e);
        if (!have && !local && !rc) {
            mark_lost(d, GRID_ERR_CONN_LOST, "no server holds it");
            rc = unusable(d, e);
        }
        uint64_t ses = session_locked();
        pthread_mutex_unlock(&dlock);
        if (!have) break;
        int remote;
        gr_err ge;
        rc = get_from(src.host, src.port, ses, d, buf, &cfg, &remote, &ge);
        if (!rc) break;
        if (remote && rc != GRID_ERR_ARGS) { /* the server refused for a reason of its own */
            gr_seterr(e, rc, "grid_data_get_np: handle %llu on %s:%d: %s", (unsigned long long)d->id,
                      src.host, src.port, ge.msg);
            break;
        }
        /* That server failed or lost it: another copy, if any. */
        grc_data_gone_from(d, src.host, src.port, ge.msg);
        rc = GRID_OK;
    }
    grc_data_release(d);
    return rc;
}

const char *grc_data_where(const grc_data *h) {
    pthread_mutex_lock(&dlock);
    const char *w = h && find_live(h) ? h->where : "";
    pthread_mutex_unlock(&dlock);
    return w;
}

int grc_data_info(const grc_data *h, int *type, size_t *count, gr_err *e) {
    pthread_mutex_lock(&dlock);
    int rc = check_live(h, "grid_data_info_np", e);
    if (!rc && type) *type = (int)h->type;
    if (!rc && count) *count = (size_t)h->count;
    pthread_mutex_unlock(&dlock);
    return rc;
}
