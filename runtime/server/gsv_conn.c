/* gsv_conn.c: one client connection: its reader thread (wait for a request, read its
 * header under the I/O timeout, hand it to gsv_request.c), writing whole messages
 * under the connection's write lock (so several calls of one connection can be in
 * flight and their answers never interleave), and closing.
 *
 * A connection lives while its reader runs and while any of its calls is in flight
 * (reference count); the last reference closes the socket, so a worker never writes
 * to a descriptor number that was reused. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gr_connlimit.h"
#include "grp_proto.h"
#include "gsv.h"

/* The slowest transfer rate tolerated on top of --io-timeout, for large messages. */
#define GSV_FLOOR_BYTES_PER_S (1024.0 * 1024.0)

long long gsv_io_deadline(const gsv_server *s, uint64_t bytes) {
    if (s->opt.io_timeout <= 0) return 0;
    double ns = (s->opt.io_timeout + (double)bytes / GSV_FLOOR_BYTES_PER_S) * 1e9;
    if (ns > 1e17) ns = 1e17;
    return gr_now_ns() + (long long)ns;
}

void gsv_conn_ref(gsv_conn *c) {
    atomic_fetch_add(&c->refs, 1);
}

void gsv_conn_unref(gsv_conn *c) {
    if (atomic_fetch_sub(&c->refs, 1) != 1) return;
    grw_tls_free(c->tls);
    close(c->fd);
    /* The descriptor is free: the peer's address may open another. */
    if (c->srv->connlimit) gr_connlimit_release(c->srv->connlimit, (const struct sockaddr *)&c->addr);
    pthread_mutex_destroy(&c->wlock);
    free(c);
}

void gsv_conn_abort(gsv_conn *c) {
    shutdown(c->fd, SHUT_RDWR);
}

/* ---------------------------------------------------------------- writing replies */

grw_writer *gsv_reply_lock(gsv_conn *c, uint64_t bytes) {
    pthread_mutex_lock(&c->wlock);
    if (c->broken) {
        pthread_mutex_unlock(&c->wlock);
        return NULL;
    }
    grw_writer_init(&c->w, c->fd);
    c->w.tls = c->tls;
    c->w.deadline_ns = gsv_io_deadline(c->srv, bytes);
    return &c->w;
}

int gsv_reply_unlock(gsv_conn *c, int rc, gr_err *e) {
    /* Part of the message may be on the wire already: the stream cannot be
     * resynchronised, so the connection ends (the client sees it lost). */
    if (rc) c->broken = 1;
    pthread_mutex_unlock(&c->wlock);
    if (rc) {
        gsv_log(GSV_LOG_DEBUG, "%s: cannot send: %s", c->peer, e->msg);
        gsv_conn_abort(c);
        return -1;
    }
    return 0;
}

int gsv_conn_send_error(gsv_conn *c, uint64_t request_id, int code, const char *msg) {
    gr_err e;
    grw_writer *w = gsv_reply_lock(c, 0);
    if (!w) return GRID_ERR_CONN_LOST;
    int rc = grp_write_error(w, request_id, code, msg, &e);
    gsv_reply_unlock(c, rc, &e);
    return rc;
}

/* Waits for the first byte of the next request. Returns GSV_KEEP when it came, else
 * what the reader does: GSV_CLOSE (the peer left, or the connection was idle past
 * --idle-timeout) or GSV_REFUSE (no HELLO in time: an ERROR was sent). */
static int wait_request(gsv_conn *c) {
    const gsv_options *o = &c->srv->opt;
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
        if (rc > 0) return GSV_KEEP;
        if (rc < 0) {
            if (errno == EINTR) continue;
            return GSV_CLOSE;
        }
        if (gr_now_ns() < until) continue; /* woke a little early */
        if (!c->hello_done) {
            gsv_log(GSV_LOG_WARN, "%s: dropped: no HELLO within %g s of connecting (--io-timeout)", c->peer,
                    o->io_timeout);
            gsv_conn_send_error(c, 0, GRID_ERR_TIMEOUT,
                                "the server timed out waiting for HELLO (--io-timeout): send HELLO at once "
                                "after connecting");
            return GSV_REFUSE;
        }
        if (gsv_conn_is_idle(c)) {
            gsv_log(GSV_LOG_DEBUG, "%s: closed: idle for %g s (--idle-timeout)", c->peer, o->idle_timeout);
            return GSV_CLOSE;
        }
        /* Something still runs for it (a call, an object, data): a new period starts. */
        since = gr_now_ns();
    }
}

/* Reads and answers one request. */
static int serve_one(gsv_conn *c) {
    gsv_server *s = c->srv;
    grw_header h;
    memset(&h, 0, sizeof h);
    gr_err e;
    gr_clearerr(&e);
    /* Between requests the reader sleeps in poll, woken by data, by the peer leaving, by
     * shutdown(), or by a time limit: HELLO must come within --io-timeout of the
     * connection's start; later, a connection that holds nothing is closed after
     * --idle-timeout. The I/O timeout runs from the first byte of a request. */
    if (!grw_has_buffered(&c->r)) {
        int rc = wait_request(c);
        if (rc != GSV_KEEP) return rc;
    }
    c->r.deadline_ns = gsv_io_deadline(s, 0);
    int rc = grp_read_header(&c->r, &h, &e);
    if (rc) {
        /* A well-formed header of an unknown type keeps its request id in the answer. */
        if (rc != GRID_ERR_PROTOCOL || h.magic != GRW_MAGIC || h.version != GRW_VERSION) h.request_id = 0;
        if (rc == GRID_ERR_CONN_LOST) {
            if (e.msg[0]) gsv_log(GSV_LOG_DEBUG, "%s: %s", c->peer, e.msg);
            return GSV_CLOSE;
        }
        if (rc == GRID_ERR_TIMEOUT) return gsv_request_failed(c, &h, "message header", &e);
        gsv_log(GSV_LOG_WARN, "%s: closing the connection: %s", c->peer, e.msg);
        gsv_conn_send_error(c, h.request_id, rc == GRID_ERR_LIMIT ? GRID_ERR_LIMIT : GRID_ERR_PROTOCOL,
                            e.msg);
        return GSV_REFUSE;
    }
    if (!c->hello_done && h.type != GRW_HELLO) {
        char msg[160];
        snprintf(msg, sizeof msg, "the first message on a connection must be HELLO, not %s (type %u)",
                 grw_type_name(h.type), h.type);
        gsv_log(GSV_LOG_WARN, "%s: closing the connection: %s", c->peer, msg);
        gsv_conn_send_error(c, h.request_id, GRID_ERR_PROTOCOL, msg);
        return GSV_REFUSE;
    }
    return gsv_request_serve(c, &h);
}

/* After an error the peer may still be sending: closing with unread input would reset
 * the connection and could destroy the ERROR just sent before the peer reads it. So
 * stop writing, then read and discard for a short while before the socket closes. */
static void linger(gsv_conn *c) {
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

/* Takes C off the server's list and drops the reader's reference. */
static void forget_conn(gsv_server *s, gsv_conn *c) {
    pthread_mutex_lock(&s->lock);
    if (c->prev)
        c->prev->next = c->next;
    else
        s->conns = c->next;
    if (c->next) c->next->prev = c->prev;
    s->nreaders--;
    pthread_mutex_unlock(&s->lock);
    gsv_conn_unref(c);
}

/* A TLS listener's handshake, on the reader thread (a slow client never holds up the
 * accept loop), within the I/O timeout. A client that spoke plain GridRPC is told, in
 * plain GridRPC, to use gridrpcs://. Returns GSV_KEEP, GSV_REFUSE or GSV_CLOSE. */
static int tls_handshake(gsv_conn *c) {
    gsv_server *s = c->srv;
    gr_err e;
    int plain = 0;
    /* Without --io-timeout a handshake still may not hold a thread for ever. */
    long long deadline = gsv_io_deadline(s, 0);
    if (!deadline) deadline = gr_now_ns() + 60000000000LL;
    c->tls = grw_tls_accept(s->tls, c->fd, deadline, &plain, &e);
    if (c->tls) {
        c->r.tls = c->tls;
        return GSV_KEEP;
    }
    gsv_log(GSV_LOG_WARN, "%s: closing the connection: %s", c->peer, e.msg);
    if (!plain) return GSV_CLOSE;
    gsv_conn_send_error(c, 0, GRID_ERR_PROTOCOL, GRW_TLS_PLAIN_REFUSAL);
    return GSV_REFUSE;
}

static void *reader_main(void *arg) {
    gsv_conn *c = arg;
    gsv_server *s = c->srv;
    int rc = s->tls ? tls_handshake(c) : GSV_KEEP;
    while (rc == GSV_KEEP && (rc = serve_one(c)) == GSV_KEEP) {
    }
    if (rc == GSV_REFUSE && !atomic_load(&s->stopping)) linger(c);
    gsv_log(GSV_LOG_DEBUG, "%s: connection closed", c->peer);
    gsv_callback_conn_closed(c);
    gsv_objects_conn_closed(c); /* its remote objects end with it */
    gsv_data_conn_closed(c);    /* its data sessions lose a connection */
    forget_conn(s, c);
    return NULL;
}

int gsv_conn_start(gsv_server *s, int fd, const char *peer, const struct sockaddr *sa, socklen_t salen) {
    gsv_conn *c = calloc(1, sizeof *c);
    if (!c) {
        close(fd);
        gr_connlimit_release(s->connlimit, sa);
        gsv_log(GSV_LOG_ERROR, "out of memory for a connection from %s", peer);
        return GRID_ERR_NOMEM;
    }
    c->srv = s;
    c->fd = fd;
    snprintf(c->peer, sizeof c->peer, "%s", peer);
    if (salen > sizeof c->addr) salen = sizeof c->addr;
    memcpy(&c->addr, sa, salen);
    c->hello_by = gr_now_ns() + (long long)(s->opt.io_timeout * 1e9);
    atomic_init(&c->refs, 1);
    atomic_init(&c->calls, 0);
    atomic_init(&c->objects, 0);
    pthread_mutex_init(&c->wlock, NULL);
    grw_reader_init(&c->r, fd, s->opt.limits.max_message);

    pthread_mutex_lock(&s->lock);
    c->next = s->conns;
    if (s->conns) s->conns->prev = c;
    s->conns = c;
    s->nreaders++;
    pthread_mutex_unlock(&s->lock);

    pthread_attr_t attr;
    pthread_t t;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    /* Readers are many (one per client) and need little stack. */
    pthread_attr_setstacksize(&attr, 512 * 1024);
    int rc = pthread_create(&t, &attr, reader_main, c);
    pthread_attr_destroy(&attr);
    if (rc) {
        gsv_log(GSV_LOG_ERROR, "cannot start a thread for the connection from %s: %s", peer, strerror(rc));
        gsv_conn_send_error(c, 0, GRID_ERR_BUSY, "the server cannot take more connections now: retry later");
        forget_conn(s, c);
        return GRID_ERR_BUSY;
    }
    gsv_log(GSV_LOG_DEBUG, "%s: connected", peer);
    return GRID_OK;
}

void gsv_conns_close_all(gsv_server *s, long long deadline_ns) {
    pthread_mutex_lock(&s->lock);
    for (gsv_conn *c = s->conns; c; c = c->next)
        gsv_conn_abort(c);
    while (s->nreaders > 0) {
        long long left = deadline_ns - gr_now_ns();
        if (left <= 0) break;
        pthread_mutex_unlock(&s->lock);
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
        pthread_mutex_lock(&s->lock);
    }
    pthread_mutex_unlock(&s->lock);
}
