/* gms_request.c: gridmetad's answer to each request: HELLO (version and token, exactly
 * as gridrpcd checks them, then the key handshake with --key-file), PING, LIST, PROBE, and the metaserver's
 * own messages (REGISTER, HEARTBEAT, SCHEDULE, REPORT, SERVERS, CRASHED, HOLDS). Bodies are read and written
 * only through the protocol layer (grp_proto.h, grp_meta.h). A body that cannot be read is answered ERROR:
 * when the stream is still in step the connection goes on, otherwise it is closed; nothing a peer sends takes
 * the metaserver down. */
#define _GNU_SOURCE /* POLLRDHUP */
#include "config.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gms.h"

static int failed(gms_conn *c, const grw_header *h, const char *what, gr_err *e) {
    int code = e->code;
    if (code == GRID_ERR_CONN_LOST) return GMS_CLOSE;
    if (code != GRID_ERR_PROTOCOL && code != GRID_ERR_TIMEOUT) {
        gr_err se;
        if (grw_skip(&c->r, &se) == GRID_OK) {
            gms_log(GMS_LOG_WARN, "%s: bad %s: %s", c->peer, what, e->msg);
            return gms_conn_send_error(c, h->request_id, code, e->msg) ? GMS_CLOSE : GMS_KEEP;
        }
        if (se.code == GRID_ERR_CONN_LOST) return GMS_CLOSE;
        if (code != GRID_ERR_LIMIT) code = GRID_ERR_PROTOCOL;
    }
    gms_log(GMS_LOG_WARN, "%s: closing the connection: bad %s: %s", c->peer, what, e->msg);
    gms_conn_send_error(c, h->request_id, code, e->msg);
    return GMS_REFUSE;
}

/* Sends the reply RC says was written; GMS_CLOSE when the connection broke. */
static int sent(gms_conn *c, int rc, gr_err *e) {
    if (!rc) return GMS_KEEP;
    gms_log(GMS_LOG_DEBUG, "%s: cannot send: %s", c->peer, e->msg);
    return GMS_CLOSE;
}

static int on_hello(gms_conn *c, const grw_header *h) {
    const gms_options *o = c->net->opt;
    gr_err e;
    grp_hello m;
    if (grp_read_hello(&c->r, &m, &e)) {
        if (e.code == GRID_ERR_CONN_LOST || e.code == GRID_ERR_TIMEOUT)
            return failed(c, h, "HELLO message", &e);
        return gdm_refuse_hello(&c->core, h->request_id, &e);
    }
    if (GRW_VERSION < m.min_version || GRW_VERSION > m.max_version) {
        char msg[200];
        snprintf(msg, sizeof msg,
                 "the peer speaks protocol versions %u to %u; this metaserver speaks %u only", m.min_version,
                 m.max_version, GRW_VERSION);
        gms_log(GMS_LOG_WARN, "%s: refused: %s", c->peer, msg);
        gms_conn_send_error(c, h->request_id, GRID_ERR_PROTOCOL, msg);
        return GMS_REFUSE;
    }
    if (o->token) {
        /* Every byte compared whatever the input: timing does not reveal a prefix. */
        size_t n = strlen(o->token), k = strlen(m.token);
        unsigned diff = n != k;
        for (size_t i = 0; i < k; i++)
            diff |= (unsigned char)m.token[i] ^ (unsigned char)o->token[i % (n ? n : 1)];
        if (diff) {
            gms_log(GMS_LOG_WARN, "%s: refused: wrong token (peer '%s')", c->peer, m.client);
            gms_conn_send_error(c, h->request_id, GRID_ERR_AUTH,
                                "authentication failed: the token does not match the one this metaserver "
                                "requires (GRIDRPC_TOKEN)");
            return GMS_REFUSE;
        }
    }
    gms_log(GMS_LOG_DEBUG, "%s: hello from '%s'", c->peer, m.client);
    grp_hello_ok ok;
    memset(&ok, 0, sizeof ok);
    snprintf(ok.server, sizeof ok.server, "gridmetad %s", PACKAGE_VERSION);
    ok.version = GRW_VERSION;
    grp_limits_default(&ok.limits);
    ok.limits.max_message = GMS_MAX_MESSAGE;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    ok.cores = n > 0 ? (uint32_t)n : 1;
    /* Without keys every peer may do everything, as before roles (warned at start). */
    c->role = GRP_ROLES_ALL;
    c->key_id[0] = '\0';
    if (o->keys.n) {
        char key_id[GRP_AUTH_KEY_ID_HEX + 1];
        int rc = grp_auth_serve(&c->r, gms_conn_writer(c, 0), h->request_id, &o->keys, GRP_PEER_GRIDMETAD,
                                key_id, &c->role, &e);
        if (rc) {
            gms_log(GMS_LOG_WARN, "%s: refused: %s (peer '%s')", c->peer, e.msg, m.client);
            if (rc == GRID_ERR_CONN_LOST) return GMS_CLOSE;
            gms_conn_send_error(
                c, h->request_id,
                rc == GRID_ERR_TIMEOUT || rc == GRID_ERR_CONFIG || rc == GRID_ERR_AUTH ? rc
                                                                                       : GRID_ERR_PROTOCOL,
                rc == GRID_ERR_TIMEOUT ? "the key handshake did not finish within --io-timeout" : e.msg);
            return GMS_REFUSE;
        }
        memcpy(c->key_id, key_id, sizeof c->key_id);
        gms_log(GMS_LOG_DEBUG, "%s: proved key %s as %s", c->peer, key_id, grp_role_name(c->role));
    }
    c->hello_done = 1;
    return sent(c, grp_write_hello_ok(gms_conn_writer(c, 0), h->request_id, &ok, &e), &e);
}

static int on_ping(gms_conn *c, const grw_header *h) {
    gr_err e;
    if (grp_read_empty(&c->r, &e)) return failed(c, h, "PING message", &e);
    grp_pong p;
    gms_state_totals(c->net->st, &p);
    return sent(c, grp_write_pong(gms_conn_writer(c, 0), h->request_id, &p, &e), &e);
}

static int on_list(gms_conn *c, const grw_header *h) {
    gr_err e;
    if (grp_read_empty(&c->r, &e)) return failed(c, h, "LIST message", &e);
    char **names = NULL;
    uint32_t n = 0;
    if (gms_state_list(c->net->st, &names, &n, &e))
        return gms_conn_send_error(c, h->request_id, e.code, e.msg) ? GMS_CLOSE : GMS_KEEP;
    int rc = grp_write_list_ok(gms_conn_writer(c, 0), h->request_id, (const char *const *)names, n, &e);
    grp_free_names(names, n);
    return sent(c, rc, &e);
}

static int on_probe(gms_conn *c, const grw_header *h) {
    gr_err e;
    uint32_t len, reply;
    if (grp_read_probe(&c->r, &len, &reply, &e)) return failed(c, h, "PROBE message", &e);
    return sent(c, grp_write_probe_ok(gms_conn_writer(c, reply), h->request_id, reply, &e), &e);
}

/* Refuses (ERROR, connection kept) a server message from a connection whose key may not
 * act as a server: a client key cannot register, beat for or unregister a server. */
static int refuse(gms_conn *c, const grw_header *h, gr_err *e) {
    gms_log(GMS_LOG_WARN, "%s: refused: %s", c->peer, e->msg);
    return gms_conn_send_error(c, h->request_id, e->code, e->msg) ? GMS_CLOSE : GMS_KEEP;
}

static int not_server(gms_conn *c, const char *what, gr_err *e) {
    if (c->role & GRP_ROLE_SERVER) return 0;
    gr_seterr(e, GRID_ERR_AUTH,
              "%s refused: key %s proved the %s role; only a server key (a key file line 'server HEX', "
              "gridrpc keygen --role server) may send %s (docs/security.md)",
              what, c->key_id, grp_role_name(c->role), what);
    return 1;
}

static int on_register(gms_conn *c, const grw_header *h) {
    gr_err e;
    grp_register m;
    if (grp_read_register(&c->r, &m, &e)) return failed(c, h, "REGISTER message", &e);
    int bad = not_server(c, "REGISTER", &e);
    if (!bad && c->net->opt->tls_cert && strncmp(m.host, "gridrpcs://", 11) != 0)
        bad = gr_seterr(&e, GRID_ERR_CONFIG,
                        "REGISTER of %s:%u refused: this metaserver serves TLS, and its clients must reach "
                        "every server by TLS too: start gridrpcd with --tls-cert and --tls-key",
                        m.host, m.port) != 0;
    if (!bad) bad = gms_state_claim(c->net->st, m.host, m.port, c->key_id, &e) != GRID_OK;
    if (bad) {
        grp_register_free(&m);
        return refuse(c, h, &e);
    }
    uint64_t id = gms_state_register(c->net->st, &m, gr_now_ns(), gms_unix_ms());
    if (id) gms_state_set_owner(c->net->st, id, c->key_id);
    c->server = 1;
    c->server_id = id;
    grp_register_free(&m);
    if (!id)
        return gms_conn_send_error(c, h->request_id, GRID_ERR_NOMEM,
                                   "the metaserver is out of memory: retry later")
                   ? GMS_CLOSE
                   : GMS_KEEP;
    grp_register_ok ok = {id, c->net->opt->heartbeat_ms};
    return sent(c, grp_write_register_ok(gms_conn_writer(c, 0), h->request_id, &ok, &e), &e);
}

static int on_heartbeat(gms_conn *c, const grw_header *h) {
    gr_err e;
    grp_heartbeat m;
    if (grp_read_heartbeat(&c->r, &m, &e)) return failed(c, h, "HEARTBEAT message", &e);
    if (not_server(c, "HEARTBEAT", &e) ||
        gms_state_check_owner(c->net->st, m.server_id, c->key_id, "HEARTBEAT", &e))
        return refuse(c, h, &e);
    if (gms_state_heartbeat(c->net->st, &m, gr_now_ns(), gms_unix_ms()) != GRID_OK) {
        char msg[160];
        snprintf(msg, sizeof msg, "server id %llu is not registered here: register again",
                 (unsigned long long)m.server_id);
        gms_log(GMS_LOG_INFO, "%s: heartbeat of unknown server %llu: asked to register", c->peer,
                (unsigned long long)m.server_id);
        return gms_conn_send_error(c, h->request_id, GRID_ERR_NOT_FOUND, msg) ? GMS_CLOSE : GMS_KEEP;
    }
    return sent(c, grp_write_empty(gms_conn_writer(c, 0), GRP_HEARTBEAT_OK, h->request_id, &e), &e);
}

static int on_unregister(gms_conn *c, const grw_header *h) {
    gr_err e;
    uint64_t id;
    if (grp_read_unregister(&c->r, &id, &e)) return failed(c, h, "UNREGISTER message", &e);
    /* An administrator (a key tagged admin that claimed the role) forgets any entry:
     * gridrpc unregister, for a server that is gone for good. */
    int admin = c->key_id[0] && c->role == GRP_ROLE_ADMIN;
    if (!admin && (not_server(c, "UNREGISTER", &e) ||
                   gms_state_check_owner(c->net->st, id, c->key_id, "UNREGISTER", &e)))
        return refuse(c, h, &e);
    if (admin)
        gms_log(GMS_LOG_WARN, "%s: server %llu unregistered by administrator key %s", c->peer,
                (unsigned long long)id, c->key_id);
    /* A server's own UNREGISTER marks it down (it may come back); an administrator's
     * forgets it at once. */
    if ((admin ? gms_state_forget(c->net->st, id, "unregistered by an administrator")
               : gms_state_unregister(c->net->st, id)) != GRID_OK) {
        char msg[160];
        snprintf(msg, sizeof msg, "server id %llu is not registered here", (unsigned long long)id);
        return gms_conn_send_error(c, h->request_id, GRID_ERR_NOT_FOUND, msg) ? GMS_CLOSE : GMS_KEEP;
    }
    return sent(c, grp_write_empty(gms_conn_writer(c, 0), GRP_UNREGISTER_OK, h->request_id, &e), &e);
}

/* A server's report that a function crashed its executor. Believed only from the
 * connection that registered that server: a client cannot have a function held back. */
static int on_crashed(gms_conn *c, const grw_header *h) {
    gr_err e;
    grp_crashed m;
    if (grp_read_crashed(&c->r, &m, &e)) return failed(c, h, "CRASHED message", &e);
    int held = 0, rc;
    if (!c->server_id || c->server_id != m.server_id)
        rc = gr_seterr(&e, GRID_ERR_ARGS,
                       "CRASHED for server %llu on a connection that did not register it: only a server "
                       "reports its own crashes",
                       (unsigned long long)m.server_id);
    else
        rc = gms_state_crashed(c->net->st, &m, gr_now_ns(), gms_unix_ms(), &held, &e);
    if (rc) {
        gms_log(GMS_LOG_WARN, "%s: CRASHED refused: %s", c->peer, e.msg);
        return gms_conn_send_error(c, h->request_id, rc, e.msg) ? GMS_CLOSE : GMS_KEEP;
    }
    gms_log(held ? GMS_LOG_WARN : GMS_LOG_INFO, "server %llu: %s %s%s", (unsigned long long)m.server_id,
            m.function, m.what,
            held ? "; it crashed on two servers within a minute: held back from new calls (--crash-hold)"
                 : "");
    return sent(c, grp_write_empty(gms_conn_writer(c, 0), GRP_CRASHED_OK, h->request_id, &e), &e);
}

static int on_holds(gms_conn *c, const grw_header *h) {
    gr_err e;
    if (grp_read_empty(&c->r, &e)) return failed(c, h, "HOLDS message", &e);
    grp_hold *v = NULL;
    uint32_t n = 0;
    if (gms_state_holds(c->net->st, gr_now_ns(), &v, &n, &e))
        return gms_conn_send_error(c, h->request_id, e.code, e.msg) ? GMS_CLOSE : GMS_KEEP;
    int rc = grp_write_holds_ok(gms_conn_writer(c, 0), h->request_id, v, n, &e);
    free(v);
    return sent(c, rc, &e);
}

static const char *site_of(const gms_conn *c, const char *declared) {
    return declared[0] ? declared : c->peer_host;
}

static void log_decision(const gms_conn *c, const grp_schedule *m, const gms_decision *d) {
    char line[1600];
    size_t n = 0;
    for (uint32_t i = 0; i < d->ncands && n < sizeof line - 160; i++) {
        const gms_decision_cand *k = &d->cands[i];
        n += (size_t)snprintf(line + n, sizeof line - n,
                              "%s server %llu: %.6g s = wait %.3g + transfer %.3g%s + compute %.3g",
                              i ? ";" : "", (unsigned long long)k->server, k->estimate, k->wait, k->transfer,
                              k->assumed_link ? " (assumed link)" : "", k->compute);
    }
    gms_log(GMS_LOG_DEBUG,
            "%s: decision %llu for %s from site '%s' (%s; %llu bytes in, %llu out, %.3g flops): chose server "
            "%llu "
            "of %u in %.1f us;%s%s",
            c->peer, (unsigned long long)d->id, m->function, d->site, grp_policy_name((uint32_t)d->policy),
            (unsigned long long)m->bytes_in, (unsigned long long)m->bytes_out, m->flops,
            (unsigned long long)d->chosen, d->ntotal, d->elapsed_ns / 1000, line,
            d->ntotal > d->ncands ? " (and more)" : "");
}

static int on_report(gms_conn *c, const grw_header *h) {
    gr_err e;
    grp_report m;
    if (grp_read_report(&c->r, &m, &e)) return failed(c, h, "REPORT message", &e);
    gms_state_report(c->net->st, &m, site_of(c, m.site), gr_now_ns(), gms_unix_ms());
    return GMS_KEEP;
}

/* While a SCHEDULE of C's is held, the client may still send REPORTs (its other calls
 * end; nothing else: it awaits the answer): they are read and applied here, since the
 * room they make may be what the held request waits for. GMS_KEEP, or how to end. */
static int serve_reports(gms_conn *c) {
    for (;;) {
        struct pollfd pf = {c->fd, POLLIN | POLLRDHUP, 0};
        int buffered = grw_has_buffered(&c->r);
        if (!buffered && poll(&pf, 1, 0) <= 0) return GMS_KEEP;
        if (!buffered && (pf.revents & (POLLRDHUP | POLLHUP | POLLERR))) return GMS_CLOSE;
        grw_header h;
        gr_err e;
        c->r.deadline_ns =
            c->net->opt->io_timeout > 0 ? gr_now_ns() + (long long)(c->net->opt->io_timeout * 1e9) : 0;
        int rc = grp_read_header(&c->r, &h, &e);
        if (rc) return rc == GRID_ERR_CONN_LOST ? GMS_CLOSE : failed(c, &h, "message", &e);
        if (h.type != GRP_REPORT) {
            char msg[200];
            snprintf(msg, sizeof msg,
                     "%s (type %u) while a SCHEDULE awaits its answer: only REPORT may come then",
                     grp_type_name(h.type), h.type);
            gms_log(GMS_LOG_WARN, "%s: closing the connection: %s", c->peer, msg);
            gms_conn_send_error(c, h.request_id, GRID_ERR_PROTOCOL, msg);
            return GMS_REFUSE;
        }
        if ((rc = on_report(c, &h)) != GMS_KEEP) return rc;
    }
}

static int on_schedule(gms_conn *c, const grw_header *h) {
    gr_err e;
    grp_schedule m;
    if (grp_read_schedule(&c->r, &m, &e)) return failed(c, h, "SCHEDULE message", &e);
    grp_schedule_ok ok;
    int debug = gms_log_enabled(GMS_LOG_DEBUG);
    gms_decision *d = debug ? malloc(sizeof *d) : NULL;
    gms_state *st = c->net->st;
    long long t0 = gr_now_ns(), until = t0 + (long long)(c->net->opt->max_hold * 1e9);
    int rc, rounds = 0;
    for (;;) {
        /* The chosen server being full (every server; for mct, the best one), the
         * request waits here, where a later decision can
         * still place it better, until work ends somewhere or the hold runs out. */
        long long now = gr_now_ns();
        uint64_t epoch = 0;
        rc = gms_state_schedule(st, &m, site_of(c, m.site), now, gms_unix_ms(), now < until,
                                rounds ? (double)(now - t0) / 1e9 : 0, &epoch, &ok, d, &e);
        if (rc != GMS_HELD) break;
        if (rounds++ == 0)
            gms_log(GMS_LOG_DEBUG, "%s: SCHEDULE %s: the server it needs is full: held (at most %.3g s)",
                    c->peer, m.function, c->net->opt->max_hold);
        int kept = serve_reports(c);
        if (kept != GMS_KEEP) {
            free(d);
            if (kept == GMS_CLOSE)
                gms_log(GMS_LOG_DEBUG, "%s: left while its SCHEDULE %s was held", c->peer, m.function);
            return kept;
        }
        long long slice = now + GMS_HOLD_SLICE_NS;
        if (gms_state_wait_room(st, epoch, slice < until ? slice : until)) {
            free(d);
            return gms_conn_send_error(c, h->request_id, GRID_ERR_SHUTDOWN,
                                       "the metaserver is shutting down: retry, or name a server")
                       ? GMS_CLOSE
                       : GMS_KEEP;
        }
    }
    if (rc) {
        free(d);
        gms_log(GMS_LOG_DEBUG, "%s: SCHEDULE %s: %s", c->peer, m.function, e.msg);
        return gms_conn_send_error(c, h->request_id, rc, e.msg) ? GMS_CLOSE : GMS_KEEP;
    }
    if (d) log_decision(c, &m, d);
    free(d);
    return sent(c, grp_write_schedule_ok(gms_conn_writer(c, 0), h->request_id, &ok, &e), &e);
}

static int on_servers(gms_conn *c, const grw_header *h) {
    gr_err e;
    char site[GRP_MAX_SITE + 1];
    if (grp_read_servers(&c->r, site, &e)) return failed(c, h, "SERVERS message", &e);
    grp_server_info *v = NULL;
    uint32_t n = 0;
    if (gms_state_servers(c->net->st, site_of(c, site), gms_unix_ms(), gr_now_ns(), &v, &n, &e))
        return gms_conn_send_error(c, h->request_id, e.code, e.msg) ? GMS_CLOSE : GMS_KEEP;
    int rc = grp_write_servers_ok(gms_conn_writer(c, 0), h->request_id, v, n, &e);
    grp_servers_free(v, n);
    return sent(c, rc, &e);
}

int gms_request_serve(gms_conn *c, const grw_header *h) {
    switch (h->type) {
    case GRP_HELLO: return on_hello(c, h);
    case GRP_PING: return on_ping(c, h);
    case GRP_LIST: return on_list(c, h);
    case GRP_PROBE: return on_probe(c, h);
    case GRP_REGISTER: return on_register(c, h);
    case GRP_HEARTBEAT: return on_heartbeat(c, h);
    case GRP_UNREGISTER: return on_unregister(c, h);
    case GRP_SCHEDULE: return on_schedule(c, h);
    case GRP_REPORT: return on_report(c, h);
    case GRP_SERVERS: return on_servers(c, h);
    case GRP_CRASHED: return on_crashed(c, h);
    case GRP_HOLDS: return on_holds(c, h);
    }
    char msg[200];
    snprintf(msg, sizeof msg,
             "unexpected message %s (type %u): a metaserver does not run calls; ask SCHEDULE for a server",
             grp_type_name(h->type), h->type);
    gms_log(GMS_LOG_WARN, "%s: closing the connection: %s", c->peer, msg);
    gms_conn_send_error(c, h->request_id, GRID_ERR_PROTOCOL, msg);
    return GMS_REFUSE;
}
