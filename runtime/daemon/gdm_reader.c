/* gdm_reader.c: a connection's reader thread: the TLS handshake, then for each request
 * a wait for its first byte (HELLO within --io-timeout of connecting, later at most
 * --idle-timeout while nothing holds the connection), its header read under the I/O
 * timeout, HELLO first, and the daemon's serve(); after a refusal, a short linger. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gdm.h"
#include "gr_log.h"
#include "grp_proto.h"

/* Says why C is dropped (CODE, for REQUEST_ID) in the log and to the peer. */
static int refuse(gdm_conn *c, uint64_t request_id, int code, const char *msg) {
    gr_log(GR_LOG_WARN, "%s: closing the connection: %s", c->peer, msg);
    gdm_send_error(c, request_id, code, msg);
    return GDM_REFUSE;
}

int gdm_refuse_hello(gdm_conn *c, uint64_t request_id, const gr_err *e) {
    gr_log(GR_LOG_WARN, "%s: refused: bad HELLO: %s", c->peer, e->msg);
    gdm_send_error(c, request_id, e->code == GRID_ERR_LIMIT ? GRID_ERR_LIMIT : GRID_ERR_PROTOCOL, e->msg);
    return GDM_REFUSE;
}

/* Waits for the first byte of the next request. Returns GDM_KEEP when it came, else
 * what the reader does: GDM_CLOSE (the peer left, or the connection was idle past
 * --idle-timeout) or GDM_REFUSE (no HELLO in time: an ERROR was sent). */
static int wait_request(gdm_conn *c) {
    const gdm_config *o = &c->dm->cfg;
    long long since = gr_now_ns();
    for (;;) {
        long long until = 0;
        if (!c->hello_done && o->io_timeout > 0)
            until = c->hello_by;
        else if (c->hello_done && o->idle_timeout > 0)
            until = since + (long long)(o->idle_timeout * 1e9);
        struct pollfd p = {c->fd, POLLIN, 0};
        int ms = -1;
        if (until) {
            long long left = until - gr_now_ns();
            ms = left <= 0 ? 0 : left / 1000000 > 86400000 ? 86400000 : (int)(left / 1000000) + 1;
        }
        int rc = poll(&p, 1, ms);
        if (rc > 0) return GDM_KEEP;
        if (rc < 0) {
            if (errno == EINTR) continue;
            return GDM_CLOSE;
        }
        if (gr_now_ns() < until) continue; /* woke a little early */
        if (!c->hello_done) {
            gr_log(GR_LOG_WARN, "%s: dropped: no HELLO within %g s of connecting (--io-timeout)", c->peer,
                   o->io_timeout);
            char msg[160];
            snprintf(msg, sizeof msg,
                     "the %s timed out waiting for HELLO (--io-timeout): send HELLO at once after connecting",
                     o->name);
            gdm_send_error(c, 0, GRID_ERR_TIMEOUT, msg);
            return GDM_REFUSE;
        }
        if (!o->busy || !o->busy(c)) {
            gr_log(GR_LOG_DEBUG, "%s: closed: idle for %g s (--idle-timeout)", c->peer, o->idle_timeout);
            return GDM_CLOSE;
        }
        /* Something still holds it (a call, a registered server): a new period starts. */
        since = gr_now_ns();
    }
}

/* Reads one request's header and hands it to the daemon. */
static int serve_one(gdm_conn *c) {
    const gdm_config *o = &c->dm->cfg;
    grw_header h;
    memset(&h, 0, sizeof h);
    gr_err e;
    gr_clearerr(&e);
    /* Between requests the reader sleeps in poll, woken by data, by the peer leaving, by
     * shutdown(), or by a time limit. The I/O timeout runs from a request's first byte. */
    if (!grw_has_buffered(&c->r)) {
        int rc = wait_request(c);
        if (rc != GDM_KEEP) return rc;
    }
    c->r.deadline_ns = gdm_io_deadline(c->dm, 0);
    /* HELLO is due within --io-timeout of connecting, however late this thread ran:
     * a peer that sent a few bytes and stalled is not given the timeout twice. */
    if (!c->hello_done && c->hello_by > 0 && o->io_timeout > 0 && c->hello_by < c->r.deadline_ns)
        c->r.deadline_ns = c->hello_by;
    int rc = grp_read_header(&c->r, &h, &e);
    if (rc) {
        /* A well-formed header of an unknown type keeps its request id in the answer. */
        if (rc != GRID_ERR_PROTOCOL || h.magic != GRW_MAGIC || h.version != GRW_VERSION) h.request_id = 0;
        if (rc == GRID_ERR_CONN_LOST) {
            if (e.msg[0]) gr_log(GR_LOG_DEBUG, "%s: %s", c->peer, e.msg);
            return GDM_CLOSE;
        }
        if (rc == GRID_ERR_TIMEOUT && o->stalled) return o->stalled(c, &h, "message header", &e);
        return refuse(c, h.request_id,
                      rc == GRID_ERR_LIMIT || rc == GRID_ERR_TIMEOUT ? rc : GRID_ERR_PROTOCOL, e.msg);
    }
    if (!c->hello_done && h.type != GRP_HELLO) {
        char msg[160];
        snprintf(msg, sizeof msg, "the first message on a connection must be HELLO, not %s (type %u)",
                 grp_type_name(h.type), h.type);
        return refuse(c, h.request_id, GRID_ERR_PROTOCOL, msg);
    }
    return o->serve(c, &h);
}

/* After an error the peer may still be sending: closing with unread input would reset
 * the connection and could destroy the ERROR just sent before the peer reads it. So
 * stop writing, then read and discard for a short while before the socket closes. */
static void linger(gdm_conn *c) {
    pthread_mutex_lock(&c->wlock);
    c->broken = 1;
    pthread_mutex_unlock(&c->wlock);
    shutdown(c->fd, SHUT_WR);
    char sink[4096];
    long long until = gr_now_ns() + 500000000LL;
    size_t total = 0;
    while (total < (1u << 20)) {
        long long left = until - gr_now_ns();
        if (left <= 0) break;
        struct pollfd p = {c->fd, POLLIN, 0};
        int rc = poll(&p, 1, (int)(left / 1000000) + 1);
        if (rc < 0 && errno == EINTR) continue;
        if (rc <= 0) break;
        ssize_t k = read(c->fd, sink, sizeof sink);
        if (k <= 0) break;
        total += (size_t)k;
    }
}

/* A TLS listener's handshake, on the reader thread (a slow client never holds up the
 * accept loop), within the I/O timeout. A client that spoke plain GridRPC is told, in
 * plain GridRPC, to use gridrpcs://. Returns GDM_KEEP, GDM_REFUSE or GDM_CLOSE. */
static int tls_handshake(gdm_conn *c) {
    gr_err e;
    int plain = 0;
    /* Without --io-timeout a handshake still may not hold a thread for ever. */
    long long deadline = gdm_io_deadline(c->dm, 0);
    if (!deadline) deadline = gr_now_ns() + 60000000000LL;
    c->tls = grw_tls_accept(c->dm->cfg.tls, c->fd, deadline, &plain, &e);
    if (c->tls) {
        c->r.tls = c->tls;
        return GDM_KEEP;
    }
    gr_log(GR_LOG_WARN, "%s: closing the connection: %s", c->peer, e.msg);
    if (!plain) return GDM_CLOSE;
    gdm_send_error(c, 0, GRID_ERR_PROTOCOL, GRW_TLS_PLAIN_REFUSAL);
    return GDM_REFUSE;
}

void *gdm_reader_main(void *arg) {
    gdm_conn *c = arg;
    gdm_daemon *d = c->dm;
    int rc = d->cfg.tls ? tls_handshake(c) : GDM_KEEP;
    while (rc == GDM_KEEP && (rc = serve_one(c)) == GDM_KEEP) {
    }
    if (rc == GDM_REFUSE && !atomic_load(&d->stopping)) linger(c);
    gr_log(GR_LOG_DEBUG, "%s: connection closed", c->peer);
    if (d->cfg.closed) d->cfg.closed(c);
    gdm_conn_forget(c);
    return NULL;
}
