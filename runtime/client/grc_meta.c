/* grc_meta.c: the client's side of the metaserver (docs/metaserver-client.md). A plain
 * function name is routed here when a metaserver is configured: one persistent
 * connection to it (under one lock, released while a SCHEDULE's answer is awaited:
 * the metaserver may hold it until a REPORT makes room, and the REPORTs of this
 * process's own finished calls must still go out), SCHEDULE with the call's figures (bytes in and out,
 * Complexity flops: the descriptor evaluated for the caller's arguments), REPORT after
 * every call, and the list of servers it last named (SERVERS_OK and every SCHEDULE_OK),
 * which keeps calls running while the metaserver is unreachable. Calls too small to be
 * worth a decision reuse the last one for a while. The descriptor of a function is
 * cached by name: an identical hash is an identical interface whichever server has it. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "grc_client.h"

#define SEC_NS 1000000000LL
/* After a failed contact, calls use the last-known servers this long before the next
 * attempt, so an outage costs one connect timeout, not one per call. */
#define RETRY_NS (1 * SEC_NS)
/* The servers list is fetched again when older than this (one round trip). */
#define SERVERS_REFRESH_NS (5 * SEC_NS)
/* One exchange with the metaserver takes at most this long. */
#define META_TIMEOUT_S 5.0
/* A reused decision is REPORTed (with decision 0) once in this many calls. */
#define REUSE_REPORT_EVERY 8

/* A server the metaserver named. */
typedef struct known {
    uint64_t id;
    char host[GRC_MAX_HOST];
    int port;
    int up;
    double bandwidth, speed; /* from SERVERS_OK; 0: unknown */
    double base_wire_ns;     /* smoothed time outside the server of tiny calls: the bare round trip */
    char **functions;        /* owned */
    uint32_t nfunctions;
} known;

/* What the client knows about one function name. */
typedef struct fentry {
    char name[GRC_MAX_NAME];
    const grd_desc *desc; /* learned (owned by the descriptor cache) */
    /* the last decision, for reuse */
    uint32_t policy;
    uint64_t server_id;
    char host[GRC_MAX_HOST];
    int port;
    long long decided_ns;
    int uses;
    unsigned reuse_count;
    /* smoothed figures of its completed routed calls */
    double wire_ns, run_ns, bytes, flops;
    unsigned rr; /* round-robin position among last-known servers */
    struct fentry *next;
} fentry;

static pthread_mutex_t mlock = PTHREAD_MUTEX_INITIALIZER;
static grc_conn *conn; /* to conn->host:conn->port */
/* A thread awaits a SCHEDULE answer on CONN without mlock: only it reads CONN, others
 * may write REPORTs (whole messages, under mlock), nobody closes it; a REPORT whose
 * write fails sets conn_broken and the waiter closes it. Another request waits for
 * conn_free. */
static int conn_busy, conn_broken;
static pthread_cond_t conn_free = PTHREAD_COND_INITIALIZER;
static int down, warned;
static long long retry_at, servers_at;
static double rtt_ns; /* smoothed SCHEDULE round trip */
static known *servers;
static uint32_t nservers;
static fentry *funcs;
static int probed; /* the link probe started (once per process) */

static __thread unsigned call_flags;
static __thread char last_server[GRC_MAX_HOST + 8];

unsigned grc_call_flags(void) {
    return call_flags;
}
void grc_set_call_flags(unsigned flags) {
    call_flags = flags;
}
/* A TLS server registers its host as gridrpcs://HOST (docs/protocol.md): the endpoint
 * is marked for TLS (gr_scheme.h) and HOST kept bare, as every other address is. */
static void bare_host(char *host, int port) {
    int tls;
    int n = gr_scheme_len(host, &tls);
    if (!n) return;
    memmove(host, host + n, strlen(host + n) + 1);
    if (tls) gr_tls_endpoint_mark(host, port);
}

void grc_set_last_server(const char *host, int port) {
    int v6 = strchr(host, ':') != NULL;
    snprintf(last_server, sizeof last_server, "%s%s%s:%d", v6 ? "[" : "", host, v6 ? "]" : "", port);
}
const char *grc_last_server(void) {
    return last_server;
}

/* ---- names */

/* 1 if the server's function name A is the caller's B: equal, or the same function
 * with a module on one side only ("dmmul" and "linalg/dmmul"). */
static int same_function(const char *a, const char *b) {
    if (strcmp(a, b) == 0) return 1;
    const char *sa = strrchr(a, '/'), *sb = strrchr(b, '/');
    if ((!sa) == (!sb)) return 0;
    return strcmp(sa ? sa + 1 : a, sb ? sb + 1 : b) == 0;
}

/* mlock held */
static fentry *function_entry(const char *name) {
    for (fentry *f = funcs; f; f = f->next)
        if (strcmp(f->name, name) == 0) return f;
    fentry *f = calloc(1, sizeof *f);
    if (!f) return NULL;
    snprintf(f->name, sizeof f->name, "%s", name);
    f->next = funcs;
    funcs = f;
    return f;
}

/* ---- the last-known servers (mlock held) */

static known *find_known(uint64_t id, const char *host, int port) {
    for (uint32_t i = 0; i < nservers; i++)
        if ((id && servers[i].id == id) || (port == servers[i].port && strcmp(host, servers[i].host) == 0))
            return &servers[i];
    return NULL;
}

static void free_known(known *v, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        for (uint32_t j = 0; j < v[i].nfunctions; j++)
            free(v[i].functions[j]);
        free(v[i].functions);
    }
    free(v);
}

/* Replaces the list by SERVERS_OK's, keeping what was measured here. */
static void take_servers(const grp_server_info *v, uint32_t n) {
    known *k = calloc(n ? n : 1, sizeof *k);
    if (!k) return;
    for (uint32_t i = 0; i < n; i++) {
        k[i].id = v[i].id;
        snprintf(k[i].host, sizeof k[i].host, "%s", v[i].host);
        k[i].port = (int)v[i].port;
        k[i].up = v[i].state == GRP_SERVER_UP;
        k[i].bandwidth = v[i].bandwidth;
        k[i].speed = v[i].speed;
        known *old = find_known(v[i].id, v[i].host, (int)v[i].port);
        if (old) k[i].base_wire_ns = old->base_wire_ns;
        k[i].functions = calloc(v[i].nfunctions ? v[i].nfunctions : 1, sizeof(char *));
        for (uint32_t j = 0; k[i].functions && j < v[i].nfunctions; j++)
            if ((k[i].functions[k[i].nfunctions] = strdup(v[i].functions[j]))) k[i].nfunctions++;
    }
    free_known(servers, nservers);
    servers = k;
    nservers = n;
}

/* Notes that server ID at HOST:PORT has function NAME (from SCHEDULE_OK). */
static void note_server(uint64_t id, const char *host, int port, const char *name) {
    known *k = find_known(id, host, port);
    if (!k) {
        known *v = realloc(servers, (nservers + 1) * sizeof *v);
        if (!v) return;
        servers = v;
        k = &servers[nservers++];
        memset(k, 0, sizeof *k);
        k->id = id;
        snprintf(k->host, sizeof k->host, "%s", host);
        k->port = port;
    }
    k->up = 1;
    for (uint32_t j = 0; j < k->nfunctions; j++)
        if (same_function(k->functions[j], name)) return;
    char **f = realloc(k->functions, (k->nfunctions + 1) * sizeof *f);
    if (!f) return;
    k->functions = f;
    if ((f[k->nfunctions] = strdup(name))) k->nfunctions++;
}

static int has_function(const known *k, const char *name) {
    for (uint32_t j = 0; j < k->nfunctions; j++)
        if (same_function(k->functions[j], name)) return 1;
    return 0;
}

static int excluded(const grc_route *r, const known *k) {
    char addr[GRC_MAX_HOST + 8];
    snprintf(addr, sizeof addr, "%s:%d", k->host, k->port);
    for (uint32_t i = 0; i < r->nexclude; i++)
        if ((k->id && r->failed->exclude[i] == k->id) || strcmp(r->failed->excluded_addr[i], addr) == 0)
            return 1;
    return 0;
}

/* A last-known server with FE's function for Q (round robin), preferring those the
 * metaserver last saw up (ONLY_UP: only those). */
static int pick_known(fentry *fe, grc_req *q, const grc_config *cfg, const gr_err *why, int only_up,
                      gr_err *e) {
    for (int want_up = 1; want_up >= only_up; want_up--) {
        uint32_t n = 0;
        for (uint32_t i = 0; i < nservers; i++)
            n += has_function(&servers[i], fe->name) && !excluded(&q->route, &servers[i]) &&
                 servers[i].up >= want_up;
        if (!n) continue;
        uint32_t pick = fe->rr++ % n;
        for (uint32_t i = 0; i < nservers; i++) {
            known *k = &servers[i];
            if (!has_function(k, fe->name) || excluded(&q->route, k) || k->up < want_up) continue;
            if (pick--) continue;
            snprintf(q->t.host, sizeof q->t.host, "%s", k->host);
            q->t.port = k->port;
            q->route.server_id = k->id;
            q->route.decision = 0;
            return GRID_OK;
        }
    }
    if (nservers == 0)
        return gr_seterr(e, GRID_ERR_CONNECT,
                         "the metaserver at %s:%d (%s) is unreachable (%s) and no server is known from an "
                         "earlier contact: start gridmetad there, fix %s, or name a server: "
                         "gridrpc://HOST:PORT/%s",
                         cfg->meta_host, cfg->meta_port, cfg->meta_source, why->msg, cfg->meta_source,
                         fe->name);
    return gr_seterr(e, GRID_ERR_NOT_FOUND,
                     "the metaserver at %s:%d is unreachable (%s) and none of the %u servers it last named "
                     "has '%s'%s",
                     cfg->meta_host, cfg->meta_port, why->msg, nservers, fe->name,
                     q->route.nexclude ? " that was not tried already" : "");
}

/* ---- the connection (mlock held) */

static void close_conn(void) {
    if (conn) grc_conn_put(conn, 1);
    conn = NULL;
}

/* The metaserver could not be reached: say so once per outage. */
static void mark_down(const grc_config *cfg, const gr_err *why) {
    close_conn();
    down = 1;
    retry_at = gr_now_ns() + RETRY_NS;
    if (warned) return;
    warned = 1;
    const char *quiet = getenv("GRIDRPC_QUIET");
    if (quiet && *quiet && strcmp(quiet, "0") != 0) return;
    if (nservers)
        fprintf(
            stderr,
            "gridrpc: warning: the metaserver at %s:%d is unreachable (%s); calls go to the %u servers it "
            "last named until it answers again\n",
            cfg->meta_host, cfg->meta_port, why->msg, nservers);
    else
        fprintf(stderr,
                "gridrpc: warning: the metaserver at %s:%d is unreachable (%s), and it named no server "
                "before: calls that name no server fail until it answers\n",
                cfg->meta_host, cfg->meta_port, why->msg);
}

/* Reads the reply to request ID of type EXPECT (its header in *H), skipping anything
 * else the metaserver sent (an ERROR about an earlier REPORT). */
static int await(uint64_t id, uint32_t expect, const char *what, grw_header *h, int *in_step, gr_err *e) {
    for (;;) {
        int rc = grp_read_header(&conn->rd, h, e);
        if (rc) {
            *in_step = 0;
            return rc;
        }
        if (h->request_id == id) return grp_expect(&conn->rd, h, expect, what, in_step, e);
        rc = grw_skip(&conn->rd, e);
        if (rc) {
            *in_step = 0;
            return rc;
        }
    }
}

static int fetch_servers(const grc_config *cfg, gr_err *e);

/* T0 + SECONDS, or sooner: half the call's timeout bounds every wait for the metaserver
 * too, so a hung one costs an exchange at most that much (the other half is left for
 * the call itself), and then calls go to the servers it last named (mark_down) for a
 * while (tests/faults/meta-hang.sh). */
static double meta_wait_s(const grc_config *cfg, double seconds) {
    return cfg->call_timeout > 0 && cfg->call_timeout / 2 < seconds ? cfg->call_timeout / 2 : seconds;
}

static long long meta_deadline(const grc_config *cfg, long long t0, double seconds) {
    return t0 + (long long)(meta_wait_s(cfg, seconds) * 1e9);
}

/* Makes sure CONN is open to the configured metaserver. GRID_ERR_CONNECT when it
 * cannot be reached now (the caller falls back to the last-known servers). */
static int ensure_conn(const grc_config *cfg, gr_err *e) {
    if (conn && (conn->port != cfg->meta_port || strcmp(conn->host, cfg->meta_host) != 0)) close_conn();
    /* The metaserver closes a client's connection idle past its --idle-timeout: that is
     * no outage, only a reconnect (an ERROR about a REPORT may wait there: not a close). */
    if (conn && !grw_has_buffered(&conn->rd)) {
        char b;
        ssize_t k = recv(conn->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
        if (k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) close_conn();
    }
    if (conn) return GRID_OK;
    if (down && gr_now_ns() < retry_at)
        return gr_seterr(e, GRID_ERR_CONNECT, "it did not answer %.1f s ago", RETRY_NS / 1e9);
    grc_config c = *cfg;
    if (c.connect_timeout <= 0 || c.connect_timeout > META_TIMEOUT_S) c.connect_timeout = META_TIMEOUT_S;
    c.connect_timeout = meta_wait_s(cfg, c.connect_timeout);
    int rc = grc_conn_get(cfg->meta_host, cfg->meta_port, &c, &conn, e);
    if (rc) {
        conn = NULL;
        /* The connect's own hint is for a server: this peer is a gridmetad. */
        char *hint = strstr(e->msg, "; is gridrpcd running there?");
        if (hint) snprintf(hint, sizeof e->msg - (size_t)(hint - e->msg), "; is gridmetad running there?");
        mark_down(cfg, e);
        return GRID_ERR_CONNECT;
    }
    down = warned = 0;
    if (!servers_at) fetch_servers(cfg, e); /* first contact: the list and the probe */
    return conn ? GRID_OK : GRID_ERR_CONNECT;
}

/* Writes a request and waits for its reply header; a transport failure closes the
 * connection and marks the metaserver down (GRID_ERR_CONNECT). */
static int transport_failed(const grc_config *cfg, gr_err *e) {
    mark_down(cfg, e);
    return GRID_ERR_CONNECT;
}

static int fetch_servers(const grc_config *cfg, gr_err *e) {
    servers_at = gr_now_ns(); /* a metaserver that refuses SERVERS is not asked each call */
    uint64_t id = conn->next_id++;
    conn->rd.deadline_ns = conn->wr.deadline_ns = meta_deadline(cfg, gr_now_ns(), META_TIMEOUT_S);
    grw_header h = {0};
    int in_step = 0;
    int rc = grp_write_servers(&conn->wr, id, cfg->site, e);
    if (!rc) rc = await(id, GRP_SERVERS_OK, "SERVERS", &h, &in_step, e);
    if (rc) {
        if (!in_step) transport_failed(cfg, e);
        return rc;
    }
    grp_server_info *v;
    uint32_t n;
    rc = grp_read_servers_ok(&conn->rd, &v, &n, e);
    if (rc) {
        transport_failed(cfg, e);
        return rc;
    }
    for (uint32_t i = 0; i < n; i++)
        bare_host(v[i].host, (int)v[i].port);
    servers_at = gr_now_ns();
    take_servers(v, n);
    if (!probed) {
        probed = 1;
        grc_probe_start(v, n, cfg);
    }
    grp_servers_free(v, n);
    return GRID_OK;
}

/* Waits for the metaserver connection to be free, opens it if needed and refreshes a
 * stale SERVERS list. GRID_ERR_CONNECT (E: why) when it cannot be reached. mlock held. */
static int meta_ready(const grc_config *cfg, gr_err *e) {
    while (conn_busy)
        pthread_cond_wait(&conn_free, &mlock);
    int rc = ensure_conn(cfg, e);
    if (!rc && gr_now_ns() - servers_at > SERVERS_REFRESH_NS) {
        gr_err ignored;
        fetch_servers(cfg, &ignored); /* a stale list is still a list */
        if (!conn) rc = gr_seterr(e, GRID_ERR_CONNECT, "%s", ignored.msg);
    }
    return rc;
}

/* SCHEDULE for Q; *unreachable: the metaserver could not be asked (E: why). */
static int ask(grc_req *q, const grc_config *cfg, grp_schedule_ok *ok, int *unreachable, gr_err *e) {
    *unreachable = 0;
    int rc = meta_ready(cfg, e);
    if (rc) {
        *unreachable = 1;
        return rc;
    }
    grp_schedule m;
    memset(&m, 0, sizeof m);
    snprintf(m.function, sizeof m.function, "%s", q->t.name);
    snprintf(m.site, sizeof m.site, "%s", cfg->site);
    m.policy = cfg->policy;
    m.bytes_in = q->route.bytes_in;
    m.bytes_out = q->route.bytes_out;
    m.flops = q->route.flops;
    for (uint32_t i = 0; i < q->route.nexclude; i++)
        if (q->route.failed->exclude[i]) m.exclude[m.nexclude++] = q->route.failed->exclude[i];
    for (uint32_t i = 0; i < q->route.naffinity && i < GRP_MAX_AFFINITY; i++)
        m.affinity[m.naffinity++] = q->route.affinity[i];
    uint64_t id = conn->next_id++;
    long long t0 = gr_now_ns();
    conn->wr.deadline_ns = meta_deadline(cfg, t0, META_TIMEOUT_S);
    /* While every server is full the metaserver holds the answer (GRP_MAX_HOLD_S). */
    conn->rd.deadline_ns = meta_deadline(cfg, t0, META_TIMEOUT_S + GRP_MAX_HOLD_S);
    grw_header h = {0};
    int in_step = 0;
    rc = grp_write_schedule(&conn->wr, id, &m, e);
    if (!rc) {
        conn_busy = 1;
        pthread_mutex_unlock(&mlock);
        rc = await(id, GRP_SCHEDULE_OK, "SCHEDULE", &h, &in_step, e);
        if (!rc) rc = grp_read_schedule_ok(&conn->rd, ok, e);
        if (!rc) bare_host(ok->host, (int)ok->port);
        pthread_mutex_lock(&mlock);
        conn_busy = 0;
        pthread_cond_broadcast(&conn_free);
        if (conn_broken) {
            conn_broken = 0;
            close_conn(); /* a REPORT's write failed meanwhile: the answer was read, if any */
        }
    }
    if (rc) {
        if (!in_step || h.type == GRP_SCHEDULE_OK) {
            transport_failed(cfg, e);
            *unreachable = 1;
        }
        return rc;
    }
    double dt = (double)(gr_now_ns() - t0);
    /* An answer held while every server was full says nothing of the round trip. */
    if (rtt_ns <= 0)
        rtt_ns = dt;
    else if (dt < 4 * rtt_ns)
        rtt_ns = 0.8 * rtt_ns + 0.2 * dt;
    return GRID_OK;
}

/* ---- reuse of the last decision (mlock held) */

/* The predicted cost of Q's call beyond its bare round trip: transfer plus compute,
 * from the server's measured bandwidth and speed when the metaserver knows them, else
 * from this function's earlier calls (their time outside the server beyond the bare
 * round trip, scaled by Q's bytes; their run time, scaled by Q's flops); -1 when
 * unknown, as for a call much bigger than any measured. */
static double predicted_ns(const fentry *fe, const grc_route *r, const known *k) {
    double bytes = (double)(r->bytes_in + r->bytes_out);
    double xfer, compute;
    if (k && k->bandwidth > 0)
        xfer = bytes / k->bandwidth * 1e9;
    else if (fe->bytes > 0 && bytes <= 4 * fe->bytes && k && k->base_wire_ns > 0)
        xfer = (fe->wire_ns - k->base_wire_ns) * (bytes / fe->bytes);
    else
        return -1;
    if (r->flops > 0 && k && k->speed > 0)
        compute = r->flops / k->speed * 1e9;
    else if (r->flops > 0)
        compute = fe->flops > 0 ? fe->run_ns * (r->flops / fe->flops) : -1;
    else
        compute = fe->run_ns;
    if (compute < 0) return -1;
    return (xfer > 0 ? xfer : 0) + compute;
}

static int reusable(const fentry *fe, const grc_route *r, const grc_config *cfg) {
    if (cfg->reuse_max <= 0 || !fe->host[0] || fe->policy != cfg->policy || r->nexclude) return 0;
    if (fe->uses >= cfg->reuse_max || gr_now_ns() - fe->decided_ns > (long long)(cfg->reuse_seconds * 1e9))
        return 0;
    if (rtt_ns <= 0 || (fe->wire_ns <= 0 && fe->run_ns <= 0)) return 0; /* no call measured yet */
    double p = predicted_ns(fe, r, find_known(fe->server_id, fe->host, fe->port));
    return p >= 0 && p < rtt_ns;
}

/* ---- routing */

/* Sets Q's target for FE's function: a reused decision, the metaserver's, or (when it
 * is unreachable) a last-known server. mlock held. */
static int route_locked(grc_req *q, fentry *fe, const grc_config *cfg, int allow_reuse, gr_err *e) {
    grc_route *r = &q->route;
    r->routed = 1;
    r->reported = 0;
    r->reused = 0;
    r->decision = r->server_id = 0;
    if (allow_reuse && !r->no_reuse && reusable(fe, r, cfg)) {
        snprintf(q->t.host, sizeof q->t.host, "%s", fe->host);
        q->t.port = fe->port;
        r->server_id = fe->server_id;
        r->reused = 1;
        fe->uses++;
        return GRID_OK;
    }
    grp_schedule_ok ok;
    int unreachable;
    gr_err why;
    gr_clearerr(&why);
    int rc = ask(q, cfg, &ok, &unreachable, &why);
    if (rc == GRID_OK) {
        snprintf(q->t.host, sizeof q->t.host, "%s", ok.host);
        q->t.port = (int)ok.port;
        r->decision = ok.decision;
        r->server_id = ok.server_id;
        note_server(ok.server_id, ok.host, (int)ok.port, q->t.name);
        fe->policy = cfg->policy;
        fe->server_id = ok.server_id;
        snprintf(fe->host, sizeof fe->host, "%s", ok.host);
        fe->port = (int)ok.port;
        fe->decided_ns = gr_now_ns();
        fe->uses = 0;
        return GRID_OK;
    }
    if (unreachable) return pick_known(fe, q, cfg, &why, 0, e);
    /* The metaserver answered: no server (left) for the function. */
    return gr_seterr(e, rc, "the metaserver at %s:%d: %s", cfg->meta_host, cfg->meta_port, why.msg);
}

static int route(grc_req *q, const grc_config *cfg, int allow_reuse, gr_err *e) {
    pthread_mutex_lock(&mlock);
    fentry *fe = function_entry(q->t.name);
    int rc = fe ? route_locked(q, fe, cfg, allow_reuse, e) : gr_seterr(e, GRID_ERR_NOMEM, "out of memory");
    pthread_mutex_unlock(&mlock);
    return rc;
}

/* A server to fetch Q's descriptor from without a decision: one the metaserver last
 * listed up with the function (SERVERS, fetched on first contact; round robin). Fetching
 * a descriptor runs nothing, so it must not take a place the scheduler keeps for calls:
 * while every server is full a SCHEDULE waits for room, and 1,000 clients starting at
 * once waited seconds for their descriptors so (bench/load_bench --mode meta). With the
 * metaserver unreachable, a last-known server as for a call (or the error saying why);
 * ASK_METASERVER when none is listed with the function. */
#define ASK_METASERVER (-1)
static int pick_for_descriptor(grc_req *q, const grc_config *cfg, gr_err *e) {
    pthread_mutex_lock(&mlock);
    fentry *fe = function_entry(q->t.name);
    gr_err why, none;
    gr_clearerr(&why);
    int rc = fe ? meta_ready(cfg, &why) : gr_seterr(e, GRID_ERR_NOMEM, "out of memory");
    if (fe && rc) /* the metaserver cannot be reached */
        rc = pick_known(fe, q, cfg, &why, 0, e);
    else if (fe)
        rc = pick_known(fe, q, cfg, &why, 1, &none) == GRID_OK ? GRID_OK : ASK_METASERVER;
    pthread_mutex_unlock(&mlock);
    if (rc == GRID_OK) {
        q->route.routed = 1;
        q->route.reported = q->route.reused = 0;
    }
    return rc;
}

/* Learns the descriptor of Q's function from a server the metaserver listed with it, or
 * else from the one a first SCHEDULE (no figures yet) names, a decision then released
 * (REPORT, GRID_ERR_CANCELED). A server that cannot be reached is excluded and the next
 * one tried. */
static int learn(grc_req *q, const grc_config *cfg, const grd_desc **out, gr_err *e) {
    grc_route *r = &q->route;
    int failed = GRID_OK; /* the last server failure, once one failed */
    for (;;) {
        int rc = pick_for_descriptor(q, cfg, e);
        if (rc == ASK_METASERVER) rc = route(q, cfg, 0, e);
        if (rc) {
            if (failed) { /* name every server that failed, as a call's failover does */
                r->final = 1;
                return gr_seterr(e, failed, "%s: no server could run the call: %s", q->t.name,
                                 grc_route_tried(r));
            }
            return rc;
        }
        rc = grc_descriptor(&q->t, cfg, out, e);
        /* A server that does not answer in time (a hung one: connecting, HELLO, the
         * descriptor) is as failed as one that refuses the connection, as the call paths
         * say of connecting: the next server is tried. */
        if (rc == GRID_ERR_TIMEOUT) e->code = rc = GRID_ERR_CONNECT;
        if (r->decision) {
            r->bytes_in = r->bytes_out = 0;
            r->sent_ns = 0;
            grc_meta_report(q, rc == GRID_OK ? GRID_ERR_CANCELED : rc, cfg);
        }
        if (rc == GRID_OK || !grc_code_is_server_failure(rc) || r->nexclude >= GRP_MAX_EXCLUDE) {
            if (rc) gr_prefixerr(e, "%s on %s:%d: ", q->t.name, q->t.host, q->t.port);
            return rc;
        }
        failed = rc;
        grc_route_failed(r, &q->t, rc, e->msg);
    }
}

int grc_meta_start(grc_req *q, const char *name, const grc_args *args, const grc_config *cfg, gr_err *e) {
    if (strlen(name) >= sizeof q->t.name) return gr_seterr(e, GRID_ERR_ARGS, "function name too long");
    snprintf(q->t.name, sizeof q->t.name, "%s", name);
    pthread_mutex_lock(&mlock);
    fentry *fe = function_entry(name);
    const grd_desc *d = fe ? fe->desc : NULL;
    pthread_mutex_unlock(&mlock);
    if (!fe) return gr_seterr(e, GRID_ERR_NOMEM, "out of memory");
    int rc = GRID_OK;
    if (!d) {
        rc = learn(q, cfg, &d, e);
        if (rc) return rc;
        grc_meta_learn(name, d);
    }
    q->desc = d;
    rc = grc_req_fill(q, args, e);
    if (rc) {
        gr_prefixerr(e, "%s: ", name);
        return rc;
    }
    /* The figures the metaserver predicts with, for these arguments. */
    q->route.bytes_in = grp_call_bytes(name, q->call);
    q->route.bytes_out = grp_result_bytes(q->call);
    grd_error ge = {0, ""};
    double flops = 0;
    q->route.flops = grd_cost(d, q->call->ival, &flops, &ge) == GRD_OK ? flops : 0;
    return route(q, cfg, 1, e);
}

int grc_meta_reroute(grc_req *q, const grc_config *cfg, gr_err *e) {
    return route(q, cfg, 0, e);
}

void grc_meta_learn(const char *name, const grd_desc *d) {
    pthread_mutex_lock(&mlock);
    fentry *fe = function_entry(name);
    if (fe) fe->desc = d;
    pthread_mutex_unlock(&mlock);
}

int grc_meta_describe(const char *name, const grc_config *cfg, grc_target *t, const grd_desc **out,
                      gr_err *e) {
    grc_req q;
    memset(&q, 0, sizeof q);
    if (strlen(name) >= sizeof q.t.name) return gr_seterr(e, GRID_ERR_ARGS, "function name too long");
    snprintf(q.t.name, sizeof q.t.name, "%s", name);
    pthread_mutex_lock(&mlock);
    fentry *fe = function_entry(name);
    *out = fe ? fe->desc : NULL;
    if (fe && fe->host[0]) {
        snprintf(q.t.host, sizeof q.t.host, "%s", fe->host);
        q.t.port = fe->port;
    }
    pthread_mutex_unlock(&mlock);
    int rc = *out ? GRID_OK : learn(&q, cfg, out, e);
    if (!rc) grc_meta_learn(name, *out);
    *t = q.t;
    return rc;
}

/* ---- REPORT */

/* Writes R on the metaserver connection if there is one; never waits for a reply.
 * mlock held. */
static void write_report(const grp_report *r, const grc_config *cfg) {
    if (!conn || conn->port != cfg->meta_port || strcmp(conn->host, cfg->meta_host) != 0) return;
    gr_err e;
    conn->wr.deadline_ns = gr_now_ns() + (long long)(META_TIMEOUT_S * 1e9);
    if (grp_write_report(&conn->wr, conn->next_id++, r, &e)) {
        if (conn_busy)
            conn_broken = 1; /* the thread reading it closes it */
        else
            close_conn();
    }
}

/* Learns from Q's completed call for later reuse decisions. mlock held. */
static void measure(const grc_req *q, fentry *fe, double total_ns) {
    double run = (double)q->route.times.run_ns, queue = (double)q->route.times.queue_ns;
    double wire = total_ns - run - queue;
    if (wire < 0) wire = 0;
    const double a = 0.3; /* smoothing: recent calls count most */
    if (fe->wire_ns <= 0 && fe->run_ns <= 0) {
        fe->wire_ns = wire;
        fe->run_ns = run;
        fe->bytes = (double)(q->route.bytes_in + q->route.bytes_out);
        fe->flops = q->route.flops;
    } else {
        fe->wire_ns += a * (wire - fe->wire_ns);
        fe->run_ns += a * (run - fe->run_ns);
        fe->bytes += a * ((double)(q->route.bytes_in + q->route.bytes_out) - fe->bytes);
        fe->flops += a * (q->route.flops - fe->flops);
    }
    /* Calls of a few KiB move no data worth counting: their time outside the server is
     * the link's round trip, the part of every call that no decision changes. */
    known *k = find_known(q->route.server_id, q->t.host, q->t.port);
    if (k && q->route.bytes_in + q->route.bytes_out <= 4096)
        k->base_wire_ns = k->base_wire_ns > 0 ? k->base_wire_ns + a * (wire - k->base_wire_ns) : wire;
}

void grc_meta_report(grc_req *q, int code, const grc_config *cfg) {
    q->route.reported = 1;
    long long now = gr_now_ns();
    grp_report r;
    memset(&r, 0, sizeof r);
    r.decision = q->route.reused ? 0 : q->route.decision;
    r.server_id = q->route.server_id;
    /* A refused key or token is this client's failure, not the server's: reported as a
     * withdrawn assignment, which no metaserver counts against the server (one older
     * than GRID_ERR_AUTH would refuse the REPORT of a code it does not know). */
    r.code = code == GRID_ERR_AUTH ? GRID_ERR_CANCELED : code;
    snprintf(r.function, sizeof r.function, "%s", q->t.name);
    snprintf(r.site, sizeof r.site, "%s", cfg->site);
    r.bytes_in = q->route.bytes_in;
    r.bytes_out = code == GRID_OK ? q->route.bytes_out : 0;
    r.total_ns = q->route.sent_ns ? (uint64_t)(now - q->route.sent_ns) : 0;
    if (code == GRID_OK) {
        r.queue_ns = q->route.times.queue_ns;
        r.run_ns = q->route.times.run_ns;
    }
    r.flops = q->route.flops;
    pthread_mutex_lock(&mlock);
    fentry *fe = function_entry(q->t.name);
    int skip = 0;
    /* A function that crashed is not sent to the same decision again without asking:
     * the metaserver may hold it back now. */
    if (fe && code == GRID_ERR_CRASHED) fe->host[0] = '\0';
    if (fe && code == GRID_OK) {
        measure(q, fe, (double)r.total_ns);
        /* Reused decisions are reported now and then: the metaserver still learns. */
        if (q->route.reused) skip = fe->reuse_count++ % REUSE_REPORT_EVERY != 0;
    }
    if (!skip) write_report(&r, cfg);
    pthread_mutex_unlock(&mlock);
}

void grc_meta_report_probe(uint64_t server_id, uint64_t bytes_in, uint64_t bytes_out, uint64_t total_ns,
                           const grc_config *cfg) {
    grp_report r;
    memset(&r, 0, sizeof r);
    r.server_id = server_id;
    snprintf(r.site, sizeof r.site, "%s", cfg->site);
    r.bytes_in = bytes_in;
    r.bytes_out = bytes_out;
    r.total_ns = total_ns;
    pthread_mutex_lock(&mlock);
    write_report(&r, cfg);
    pthread_mutex_unlock(&mlock);
}

void grc_meta_reset(void) {
    grc_probe_stop();
    pthread_mutex_lock(&mlock);
    close_conn();
    free_known(servers, nservers);
    servers = NULL;
    nservers = 0;
    while (funcs) {
        fentry *n = funcs->next;
        free(funcs);
        funcs = n;
    }
    down = warned = probed = 0;
    retry_at = servers_at = 0;
    rtt_ns = 0;
    pthread_mutex_unlock(&mlock);
}
