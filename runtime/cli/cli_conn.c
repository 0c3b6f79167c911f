/* cli_conn.c: the gridrpc tool's own connections: one HELLO, then the few requests it
 * makes (LIST, GET_DESCRIPTOR, PING, SERVERS), one at a time, each through the protocol
 * layer's encoders and decoders. Calls themselves go through the public API instead
 * (cli_call.c), so they go where any program's calls go. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "gr_suggest.h"
#include "grp_session.h"

/* The reason inside grw_connect's "cannot connect to H:P: REASON; is gridrpcd running
 * there?", lower-cased at its start, or the whole message when it has another form. */
static void connect_reason(const char *msg, const char *host, int port, char *out, size_t size) {
    char prefix[GRP_MAX_HOST + 64];
    snprintf(prefix, sizeof prefix, "cannot connect to %s:%d: ", host, port);
    const char *p = msg;
    size_t n = strlen(msg);
    if (strncmp(msg, prefix, strlen(prefix)) == 0) {
        p = msg + strlen(prefix);
        const char *semi = strchr(p, ';');
        n = semi ? (size_t)(semi - p) : strlen(p);
    }
    if (n >= size) n = size - 1;
    memcpy(out, p, n);
    out[n] = '\0';
    if (out[0] >= 'A' && out[0] <= 'Z' && !(out[1] >= 'A' && out[1] <= 'Z'))
        out[0] = (char)(out[0] - 'A' + 'a');
}

static void set_deadline(cli_conn *c) {
    long long d = c->timeout > 0 ? gr_now_ns() + (long long)(c->timeout * 1e9) : 0;
    c->rd.deadline_ns = c->wr.deadline_ns = d;
}

/* Rewords E for a request to C that failed with RC. */
static int blame(cli_conn *c, int rc, const char *what, gr_err *e) {
    const char *who = c->is_meta ? "the metaserver" : "the server";
    if (rc == GRID_ERR_TIMEOUT)
        return gr_seterr(e, rc, "%s at %s:%d did not answer %s within %g s (--timeout)", who, c->host,
                         c->port, what, c->timeout);
    if (rc == GRID_ERR_CONN_LOST)
        return gr_seterr(e, rc, "%s at %s:%d closed the connection during %s", who, c->host, c->port, what);
    /* A protocol error needs the request to make sense; the peer's own ERROR says it all. */
    if (rc == GRID_ERR_PROTOCOL)
        gr_prefixerr(e, "%s at %s:%d: %s: ", who, c->host, c->port, what);
    else
        gr_prefixerr(e, "%s at %s:%d: ", who, c->host, c->port);
    return rc;
}

int cli_connect(const cli_opts *o, const char *host, int port, int is_meta, cli_conn **out, gr_err *e) {
    *out = NULL;
    cli_conn *c = calloc(1, sizeof *c);
    if (!c) return gr_seterr(e, GRID_ERR_NOMEM, "out of memory");
    snprintf(c->host, sizeof c->host, "%s", host);
    c->port = port;
    c->is_meta = is_meta;
    c->timeout = o->timeout;
    c->next_id = 1;
    /* gridrpcs:// peers (marked when --server/--metaserver were parsed): the CA of
     * GRIDRPC_TLS_CA, else the system's. */
    c->fd = grp_dial(host, port, o->timeout, grw_tls_env_ca(), &c->tls, e);
    if (c->fd < 0 && strstr(e->msg, "TLS")) { /* connected, but TLS failed: E says why */
        int code = e->code;
        free(c);
        return code;
    }
    if (c->fd < 0) {
        char reason[512];
        connect_reason(e->msg, host, port, reason, sizeof reason);
        int code = e->code;
        if (is_meta)
            gr_seterr(e, code,
                      "cannot reach the metaserver at %s:%d: %s; is gridmetad running? set "
                      "GRIDRPC_METASERVER or pass --metaserver HOST:PORT",
                      host, port, reason);
        else
            gr_seterr(e, code,
                      "cannot reach the server at %s:%d: %s; is gridrpcd running there? set GRIDRPC_SERVER "
                      "or pass --server HOST:PORT",
                      host, port, reason);
        free(c);
        return code;
    }
    grw_limits lim;
    grp_limits_default(&lim);
    grw_reader_init(&c->rd, c->fd, lim.max_message);
    grw_writer_init(&c->wr, c->fd);
    c->rd.tls = c->wr.tls = c->tls;
    set_deadline(c);
    grp_hello m;
    memset(&m, 0, sizeof m);
    snprintf(m.client, sizeof m.client, "gridrpc %s", PACKAGE_VERSION);
    m.min_version = m.max_version = GRW_VERSION;
    snprintf(m.token, sizeof m.token, "%s", o->token);
    int refused;
    /* The session owns what is made on a computing server (a metaserver keeps nothing
     * of a client's, so it is not told). */
    if (!is_meta) {
        if (grp_session_secret(m.session, e)) {
            cli_close(c);
            return e->code;
        }
        m.session_len = GRP_SESSION_BYTES;
    }
    int rc = grp_auth_hello(&c->rd, &c->wr, c->next_id++, &m, &o->keys,
                            "pass --key-file FILE or set GRIDRPC_KEY_FILE", &c->hello, &refused, e);
    if (rc) {
        if (refused) gr_prefixerr(e, "it refused the connection: ");
        blame(c, rc, "HELLO", e);
        cli_close(c);
        return rc;
    }
    *out = c;
    return GRID_OK;
}

void cli_close(cli_conn *c) {
    if (!c) return;
    grw_tls_free(c->tls);
    if (c->fd >= 0) close(c->fd);
    free(c);
}

int cli_reply(cli_conn *c, uint64_t id, uint32_t expected, const char *what, gr_err *e) {
    grw_header h;
    int in_step;
    int rc = grp_read_header(&c->rd, &h, e);
    if (!rc && h.request_id != id)
        rc = gr_seterr(e, GRID_ERR_PROTOCOL, "reply to request %llu while waiting for %llu",
                       (unsigned long long)h.request_id, (unsigned long long)id);
    if (!rc) rc = grp_expect(&c->rd, &h, expected, what, &in_step, e);
    return rc ? blame(c, rc, what, e) : GRID_OK;
}

int cli_list_functions(cli_conn *c, char ***names, uint32_t *count, gr_err *e) {
    set_deadline(c);
    uint64_t id = c->next_id++;
    int rc = grp_write_empty(&c->wr, GRP_LIST, id, e);
    if (rc) return blame(c, rc, "LIST", e);
    rc = cli_reply(c, id, GRP_LIST_OK, "LIST", e);
    if (!rc) rc = grp_read_list_ok(&c->rd, names, count, e);
    return rc;
}

int cli_get_descriptor(cli_conn *c, const char *name, char *qualified, grd_desc **out, gr_err *e) {
    set_deadline(c);
    uint64_t id = c->next_id++;
    int rc = grp_write_get_descriptor(&c->wr, id, name, e);
    if (rc) return blame(c, rc, "GET_DESCRIPTOR", e);
    rc = cli_reply(c, id, GRP_DESCRIPTOR, "GET_DESCRIPTOR", e);
    if (!rc) rc = grp_read_descriptor(&c->rd, qualified, out, e);
    return rc;
}

int cli_ping(cli_conn *c, grp_pong *out, gr_err *e) {
    set_deadline(c);
    uint64_t id = c->next_id++;
    int rc = grp_write_empty(&c->wr, GRP_PING, id, e);
    if (rc) return blame(c, rc, "PING", e);
    rc = cli_reply(c, id, GRP_PONG, "PING", e);
    if (!rc) rc = grp_read_pong(&c->rd, out, e);
    return rc;
}

int cli_servers(cli_conn *c, const char *site, grp_server_info **v, uint32_t *count, gr_err *e) {
    set_deadline(c);
    uint64_t id = c->next_id++;
    int rc = grp_write_servers(&c->wr, id, site, e);
    if (rc) return blame(c, rc, "SERVERS", e);
    rc = cli_reply(c, id, GRP_SERVERS_OK, "SERVERS", e);
    if (!rc) rc = grp_read_servers_ok(&c->rd, v, count, e);
    return rc;
}

int cli_holds(cli_conn *c, grp_hold **v, uint32_t *count, gr_err *e) {
    set_deadline(c);
    uint64_t id = c->next_id++;
    int rc = grp_write_empty(&c->wr, GRP_HOLDS, id, e);
    if (rc) return blame(c, rc, "HOLDS", e);
    rc = cli_reply(c, id, GRP_HOLDS_OK, "HOLDS", e);
    if (!rc) rc = grp_read_holds_ok(&c->rd, v, count, e);
    return rc;
}

int cli_unregister_server(cli_conn *c, uint64_t server_id, gr_err *e) {
    set_deadline(c);
    uint64_t id = c->next_id++;
    int rc = grp_write_unregister(&c->wr, id, server_id, e);
    if (rc) return blame(c, rc, "UNREGISTER", e);
    rc = cli_reply(c, id, GRP_UNREGISTER_OK, "UNREGISTER", e);
    if (!rc) rc = grp_read_empty(&c->rd, e);
    return rc;
}

int cli_meta_servers(const cli_opts *o, grp_server_info **v, uint32_t *count, gr_err *e) {
    cli_conn *c;
    int rc = cli_connect(o, o->meta_host, o->meta_port, 1, &c, e);
    if (rc) return rc;
    rc = cli_servers(c, o->site, v, count, e);
    cli_close(c);
    return rc;
}

/* 1 if server S lists function NAME ("module/function", or a plain name matching the
 * part after the module). */
static int server_has(const grp_server_info *s, const char *name) {
    for (uint32_t k = 0; k < s->nfunctions; k++) {
        const char *f = s->functions[k];
        if (strcmp(f, name) == 0) return 1;
        const char *slash = strchr(name, '/') ? NULL : strchr(f, '/');
        if (slash && strcmp(slash + 1, name) == 0) return 1;
    }
    return 0;
}

/* The function of SERVERS that NAME is likeliest a typo of: a "module/function" for a
 * qualified NAME, else the part after the '/'; NULL when none is close. */
static const char *closest_function(const grp_server_info *servers, uint32_t nservers, const char *name) {
    int qualified = strchr(name, '/') != NULL;
    gr_suggest s;
    gr_suggest_init(&s, name);
    for (uint32_t i = 0; i < nservers; i++)
        for (uint32_t k = 0; k < servers[i].nfunctions; k++) {
            const char *f = servers[i].functions[k], *slash = strchr(f, '/');
            gr_suggest_offer(&s, qualified || !slash ? f : slash + 1);
        }
    return gr_suggest_best(&s);
}

int cli_find_descriptor(const cli_opts *o, const grp_server_info *servers, uint32_t nservers,
                        const char *name, char *qualified, grd_desc **out, gr_err *e) {
    cli_conn *c;
    int rc;
    if (o->target == CLI_SERVER) {
        rc = cli_connect(o, o->server_host, o->server_port, 0, &c, e);
        if (rc) return rc;
        rc = cli_get_descriptor(c, name, qualified, out, e);
        cli_close(c);
        return rc;
    }
    /* Only servers that are up: a down one would cost a connection timeout and could
     * not run the call anyway. Every failure is kept, to say why none answered. */
    char why[1024] = "";
    size_t wlen = 0;
    int tried = 0, down = 0;
    for (uint32_t i = 0; i < nservers; i++) {
        const grp_server_info *s = &servers[i];
        if (!server_has(s, name)) continue;
        if (s->state != GRP_SERVER_UP) {
            down++;
            continue;
        }
        tried++;
        rc = cli_connect(o, s->host, (int)s->port, 0, &c, e);
        if (!rc) {
            rc = cli_get_descriptor(c, name, qualified, out, e);
            cli_close(c);
        }
        if (!rc) return GRID_OK;
        int w = snprintf(why + wlen, sizeof why - wlen, "%s%s", wlen ? "; " : "", e->msg);
        if (w > 0) wlen = wlen + (size_t)w < sizeof why ? wlen + (size_t)w : sizeof why - 1;
    }
    if (tried == 1) return e->code;
    if (tried) return gr_seterr(e, GRID_ERR_CONNECT, "no server that has '%s' answered: %s", name, why);
    if (down)
        return gr_seterr(e, GRID_ERR_CONNECT, "every server that has '%s' is down (%d; see gridrpc status)",
                         name, down);
    const char *best = closest_function(servers, nservers, name);
    return gr_seterr(
        e, GRID_ERR_NOT_FOUND,
        "no server registered with the metaserver at %s:%d has '%s'; %s%s%s`gridrpc ls` lists the "
        "functions there are",
        o->meta_host, o->meta_port, name, best ? "did you mean '" : "", best ? best : "", best ? "'? " : "");
}
