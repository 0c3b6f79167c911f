/* gms_net.c: gridmetad's use of the daemon core (runtime/daemon/gdm.h): its settings
 * from the options, the wording of its refusals, a connection that knows the site of
 * its peer and stays open while it is a registered server's, requests handed to
 * gms_request.c, and the shutdown that wakes held requests. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gms.h"

static void refusal(int why, const char *addr, unsigned open, unsigned limit, char *msg, size_t len) {
    if (why == GDM_NO_DESCRIPTORS)
        snprintf(msg, len, "the metaserver is out of file descriptors: retry later");
    else if (why == GDM_FULL)
        snprintf(msg, len,
                 "the metaserver has %u connections open, its limit (--max-connections %u): retry later",
                 open, limit);
    else
        snprintf(msg, len,
                 "%s already has %u connections open to the metaserver, the most one address may have "
                 "(--max-connections-per-address %u): close some or retry later",
                 addr, open, limit);
}

static gms_conn *conn_of(gdm_conn *c) {
    return (gms_conn *)c; /* the core is its first member */
}

static void opened(gdm_conn *core) {
    gms_conn *c = conn_of(core);
    char peer[80];
    c->net = core->dm->cfg.ctx;
    gdm_format_addr((const struct sockaddr *)&core->addr, peer, sizeof peer, c->peer_host,
                    sizeof c->peer_host);
}

static int serve(gdm_conn *c, const grw_header *h) {
    return gms_request_serve(conn_of(c), h);
}

/* Servers keep one connection open for their heartbeats; clients' connections wait at
 * most --idle-timeout for their next request. */
static int busy(gdm_conn *c) {
    return conn_of(c)->server;
}

int gms_net_init(gms_net *n, gms_state *st, const gms_options *o) {
    n->st = st;
    n->opt = o;
    gdm_config cfg = {
        .name = "metaserver",
        .ctx = n,
        .conn_size = sizeof(gms_conn),
        .stack_size = 256 * 1024,
        .max_message = GMS_MAX_MESSAGE,
        .io_timeout = o->io_timeout,
        .idle_timeout = o->idle_timeout,
        .floor_rate = 1e6, /* large probes get time for their bytes at 1 MB/s */
        .serve = serve,
        .busy = busy,
        .opened = opened,
        .refusal = refusal,
    };
    return gdm_init(&n->dm, &cfg, o->max_conns, o->max_conns_per_addr);
}

gms_net *gms_net_listen(gms_state *st, const gms_options *o, gr_err *e) {
    /* Bad certificate files stop the start, before anything listens. */
    grw_tls_ctx *tls = NULL;
    if (o->tls_cert && !(tls = grw_tls_server_ctx(o->tls_cert, o->tls_key, e))) return NULL;
    gms_net *n = calloc(1, sizeof *n);
    if (!n || gms_net_init(n, st, o)) {
        free(n);
        grw_tls_ctx_free(tls);
        gr_seterr(e, GRID_ERR_NOMEM, "out of memory");
        return NULL;
    }
    n->dm.cfg.tls = tls;
    gdm_raise_nofile(&n->dm, 64);
    char where[80];
    if (gdm_listen(&n->dm, o->host, o->port, where, sizeof where, e)) {
        gdm_free(&n->dm);
        grw_tls_ctx_free(tls);
        free(n);
        return NULL;
    }
    gms_log(GMS_LOG_INFO, "listening on %s: scheduler %s, heartbeat %u ms, down after %u missed", where,
            grp_policy_name((uint32_t)o->policy), o->heartbeat_ms, o->down_after);
    return n;
}

void gms_net_run(gms_net *n, int sigfd) {
    gdm_accept_loop(&n->dm, sigfd);
    /* Wake held requests, then every connection thread, and wait (a little) for them. */
    gms_state_stop(n->st);
    gdm_close_all(&n->dm, gr_now_ns() + 2000000000LL);
}

void gms_net_free(gms_net *n) {
    /* A connection thread that outlived the wait still uses N. */
    if (!n || !gdm_free(&n->dm)) return;
    grw_tls_ctx_free(n->dm.cfg.tls);
    free(n);
}
