/* gsv_conn.c: one client connection. Its reader thread reads each request whole
 * (header, then body) and either answers it at once (HELLO, PING, LIST,
 * GET_DESCRIPTOR, CANCEL) or, for CALL, reads the arguments into buffers the call owns
 * and queues it; workers answer calls later. Requests are never answered on the
 * reader's stack of state, so several calls of one connection can be in flight and
 * their answers go out whole, one at a time, under the connection's write lock.
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

#include "config.h"

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
    close(c->fd);
    pthread_mutex_destroy(&c->wlock);
    free(c);
}

void gsv_conn_abort(gsv_conn *c) {
    shutdown(c->fd, SHUT_RDWR);
}

/* ---------------------------------------------------------------- writing replies */

/* Takes the write lock and starts a message; NULL (lock released) when the
 * connection can no longer carry one. */
static grw_writer *reply_begin(gsv_conn *c, uint32_t type, uint64_t id, uint64_t bytes, gr_err *e) {
    pthread_mutex_lock(&c->wlock);
    if (c->broken) {
        pthread_mutex_unlock(&c->wlock);
        return NULL;
    }
    grw_writer_init(&c->w, c->fd);
    c->w.deadline_ns = gsv_io_deadline(c->srv, bytes);
    grw_begin(&c->w, type, 0, id, e);
    return &c->w;
}

/* Finishes the message begun by reply_begin (RC: how writing its body went) and
 * releases the lock. Returns 0, or -1 when the connection broke. */
static int reply_end(gsv_conn *c, int rc, gr_err *e) {
    if (!rc) rc = grw_finish(&c->w, e);
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
    int rc = GRID_ERR_CONN_LOST;
    pthread_mutex_lock(&c->wlock);
    if (!c->broken) {
        rc = grw_send_error(c->fd, request_id, code, msg, gsv_io_deadline(c->srv, 0), &e);
        if (rc) c->broken = 1;
    }
    pthread_mutex_unlock(&c->wlock);
    if (rc) gsv_conn_abort(c);
    return rc;
}

/* ---------------------------------------------------------------- reading requests */

/* What the reader does after a request: go on; close (the peer left or the socket
 * failed); or refuse (an ERROR was just sent and the connection ends: linger). */
enum { KEEP = 0, CLOSE = 1, REFUSE = 2 };

/* A request's body could not be read as it should. Errors that leave the stream in
 * step (bad arguments, a limit, an unknown function) are answered and the connection
 * goes on, once the rest of the message is skipped; anything else closes it. */
static int body_error(gsv_conn *c, const grw_header *h, const char *what, gr_err *e) {
    int code = e->code;
    if (code == GRID_ERR_CONN_LOST) {
        gsv_log(GSV_LOG_DEBUG, "%s: lost during %s: %s", c->peer, what, e->msg);
        return CLOSE;
    }
    if (code == GRID_ERR_TIMEOUT) {
        gsv_log(GSV_LOG_WARN, "%s: dropped: stalled in the middle of a %s for more than %g s (--io-timeout)",
                c->peer, what, c->srv->opt.io_timeout);
        gsv_conn_send_error(c, h->request_id, GRID_ERR_TIMEOUT,
                            "the server timed out waiting for the rest of the message (--io-timeout)");
        return REFUSE;
    }
    if (code != GRID_ERR_PROTOCOL) {
        gr_err se;
        if (grw_skip(&c->r, &se) == GRID_OK) {
            gsv_conn_send_error(c, h->request_id, code, e->msg);
            return KEEP;
        }
        if (se.code == GRID_ERR_CONN_LOST) return CLOSE;
        if (se.code == GRID_ERR_TIMEOUT) return body_error(c, h, what, &se);
        if (code != GRID_ERR_LIMIT) code = GRID_ERR_PROTOCOL;
    }
    gsv_log(GSV_LOG_WARN, "%s: closing the connection: bad %s: %s", c->peer, what, e->msg);
    gsv_conn_send_error(c, h->request_id, code, e->msg);
    return REFUSE;
}

static int on_hello(gsv_conn *c, const grw_header *h) {
    gsv_server *s = c->srv;
    gr_err e;
    char *client = NULL, *token = NULL;
    uint32_t vmin = 0, vmax = 0;
    int rc = grw_read_string(&c->r, 255, &client, &e);
    if (!rc) rc = grw_read_u32(&c->r, &vmin, &e);
    if (!rc) rc = grw_read_u32(&c->r, &vmax, &e);
    if (!rc) rc = grw_read_string(&c->r, 1024, &token, &e);
    if (!rc) rc = grw_end(&c->r, &e);
    if (rc) {
        free(client);
        free(token);
        return body_error(c, h, "HELLO message", &e);
    }
    int result = KEEP;
    if (GRW_VERSION < vmin || GRW_VERSION > vmax) {
        char msg[200];
        snprintf(msg, sizeof msg, "the client speaks protocol versions %u to %u; this server speaks %u only",
                 vmin, vmax, GRW_VERSION);
        gsv_log(GSV_LOG_WARN, "%s: refused: %s", c->peer, msg);
        gsv_conn_send_error(c, h->request_id, GRID_ERR_PROTOCOL, msg);
        result = REFUSE;
    } else if (s->opt.token) {
        /* Compare every byte whatever the input, so timing does not reveal a prefix. */
        size_t n = strlen(s->opt.token), m = strlen(token);
        unsigned diff = n != m;
        for (size_t i = 0; i < m; i++)
            diff |= (unsigned char)token[i] ^ (unsigned char)s->opt.token[i % (n ? n : 1)];
        if (diff) {
            gsv_log(GSV_LOG_WARN, "%s: refused: wrong token (client '%s')", c->peer, client);
            gsv_conn_send_error(
                c, h->request_id, GRID_ERR_CONFIG,
                "authentication failed: the token does not match the one this server requires");
            result = REFUSE;
        }
    }
    if (result == KEEP) {
        gsv_log(GSV_LOG_DEBUG, "%s: hello from '%s'", c->peer, client);
        gr_err we;
        grw_writer *w = reply_begin(c, GRW_HELLO_OK, h->request_id, 0, &we);
        if (!w) {
            result = CLOSE;
        } else {
            char name[64];
            snprintf(name, sizeof name, "gridrpcd %s", PACKAGE_VERSION);
            rc = grw_write_string(w, name, &we);
            if (!rc) rc = grw_write_u32(w, GRW_VERSION, &we);
            if (!rc) rc = grw_write_u64(w, s->opt.limits.max_message, &we);
            if (!rc) rc = grw_write_u64(w, s->opt.limits.max_array, &we);
            if (!rc) rc = grw_write_u32(w, s->opt.limits.max_head, &we);
            if (!rc) rc = grw_write_u32(w, s->workers, &we);
            if (!rc) rc = grw_write_u32(w, s->cores, &we);
            if (reply_end(c, rc, &we)) result = CLOSE;
            c->hello_done = 1;
        }
    }
    free(client);
    free(token);
    return result;
}

static int on_get_descriptor(gsv_conn *c, const grw_header *h) {
    gr_err e;
    char *name = NULL;
    int rc = grw_read_string(&c->r, 511, &name, &e);
    if (!rc) rc = grw_end(&c->r, &e);
    if (rc) {
        free(name);
        return body_error(c, h, "GET_DESCRIPTOR message", &e);
    }
    const gsv_function *f = gsv_registry_find(&c->srv->reg, name, &e);
    free(name);
    if (!f) return gsv_conn_send_error(c, h->request_id, e.code, e.msg) ? CLOSE : KEEP;
    grw_writer *w = reply_begin(c, GRW_DESCRIPTOR, h->request_id, f->stub->descriptor_len, &e);
    if (!w) return CLOSE;
    rc = grw_write_string(w, f->qualified, &e);
    if (!rc) rc = grw_write_opaque(w, f->stub->descriptor, (uint32_t)f->stub->descriptor_len, &e);
    return reply_end(c, rc, &e) ? CLOSE : KEEP;
}

static int on_ping(gsv_conn *c, const grw_header *h) {
    gr_err e;
    if (grw_end(&c->r, &e)) return body_error(c, h, "PING message", &e);
    unsigned running, queued;
    gsv_sched_load(c->srv, &running, &queued);
    double load[1] = {0};
    if (getloadavg(load, 1) < 1) load[0] = 0;
    uint64_t bits;
    memcpy(&bits, &load[0], sizeof bits); /* XDR double: IEEE 754 big-endian */
    grw_writer *w = reply_begin(c, GRW_PONG, h->request_id, 0, &e);
    if (!w) return CLOSE;
    int rc = grw_write_u32(w, running, &e);
    if (!rc) rc = grw_write_u32(w, queued, &e);
    if (!rc) rc = grw_write_u32(w, c->srv->workers, &e);
    if (!rc) rc = grw_write_u32(w, c->srv->cores, &e);
    if (!rc) rc = grw_write_u64(w, bits, &e);
    return reply_end(c, rc, &e) ? CLOSE : KEEP;
}

static int on_list(gsv_conn *c, const grw_header *h) {
    gr_err e;
    if (grw_end(&c->r, &e)) return body_error(c, h, "LIST message", &e);
    const gsv_registry *reg = &c->srv->reg;
    uint64_t bytes = 4;
    for (unsigned i = 0; i < reg->nfns; i++)
        bytes += 8 + strlen(reg->fns[i].qualified);
    grw_writer *w = reply_begin(c, GRW_LIST_OK, h->request_id, bytes, &e);
    if (!w) return CLOSE;
    int rc = grw_write_u32(w, reg->nfns, &e);
    for (unsigned i = 0; i < reg->nfns && !rc; i++)
        rc = grw_write_string(w, reg->fns[i].qualified, &e);
    return reply_end(c, rc, &e) ? CLOSE : KEEP;
}

/* Only queued calls can be canceled; a running one finishes and is answered as usual.
 * CANCEL has no reply of its own: the canceled call is answered ERROR
 * GRID_ERR_CANCELED. */
static int on_cancel(gsv_conn *c, const grw_header *h) {
    gr_err e;
    if (grw_end(&c->r, &e)) return body_error(c, h, "CANCEL message", &e);
    gsv_job *job = gsv_sched_cancel(c->srv, c, h->request_id);
    if (job) gsv_call_fail(c->srv, job, GRID_ERR_CANCELED, "the call was canceled before it started");
    return KEEP;
}

/* Bytes of the arrays a CALL carries, known once its head is read. */
static uint64_t bulk_bytes(const grm_call *call) {
    uint64_t n = 0;
    for (uint32_t i = 0; i < call->desc->nparams; i++) {
        const grd_param *p = &call->desc->params[i];
        if (p->rank && p->type != GRD_STRING && p->type != GRD_FILENAME && grm_travels(p, GRM_TO_SERVER))
            n += call->ext[i].sent_bytes;
    }
    return n;
}

static int on_call(gsv_conn *c, const grw_header *h, long long arrived) {
    gsv_server *s = c->srv;
    gr_err e;
    char *name = NULL;
    uint64_t hash = 0;
    int rc = grw_read_string(&c->r, 511, &name, &e);
    if (!rc) rc = grw_read_u64(&c->r, &hash, &e);
    if (rc) {
        free(name);
        return body_error(c, h, "CALL message", &e);
    }
    const gsv_function *f = gsv_registry_find(&s->reg, name, &e);
    int stale = f && hash != f->desc->hash;
    if (stale)
        gr_seterr(
            &e, GRID_ERR_STALE,
            "the interface of %s changed on the server (descriptor hash %016llx, the client used %016llx): "
            "fetch the descriptor again",
            f->qualified, (unsigned long long)f->desc->hash, (unsigned long long)hash);
    if (!f || stale) {
        gsv_call_log(c->peer, name, h->request_id, c->r.consumed, 0, 0, 0, e.code, e.msg);
        free(name);
        return body_error(c, h, "CALL message", &e);
    }
    free(name);

    gsv_job *job = calloc(1, sizeof *job);
    if (!job) {
        gr_seterr(&e, GRID_ERR_NOMEM, "the server is out of memory: retry later");
        return body_error(c, h, "CALL message", &e);
    }
    gsv_conn_ref(c);
    job->conn = c;
    job->fn = f;
    job->request_id = h->request_id;
    job->t_arrived = arrived;
    grm_init(&job->call, f->desc, GRM_SERVER_SIDE);
    rc = grm_read_head(&c->r, &job->call, GRM_TO_SERVER, &s->opt.limits, &e);
    if (!rc) {
        /* The head says how many bytes follow: allow for them at the floor rate. */
        c->r.deadline_ns = gsv_io_deadline(s, bulk_bytes(&job->call));
        rc = grm_read_bulk(&c->r, &job->call, GRM_TO_SERVER, &e);
    }
    if (!rc) rc = grw_end(&c->r, &e);
    job->bytes_in = c->r.consumed;
    if (rc) {
        if (e.code != GRID_ERR_CONN_LOST && e.code != GRID_ERR_TIMEOUT)
            gsv_call_log(c->peer, f->qualified, h->request_id, c->r.consumed, 0, 0, 0, e.code, e.msg);
        gsv_job_free(job);
        return body_error(c, h, "CALL message", &e);
    }
    if (s->opt.queue == GSV_QUEUE_SJF) {
        grd_error de;
        if (grd_cost(f->desc, job->call.ival, &job->cost, &de) != GRD_OK) {
            /* A cost that cannot be evaluated (overflow) is at least huge. */
            job->cost = 1e300;
        }
    }
    job->t_queued = gr_now_ns();
    if (atomic_load(&s->stopping)) {
        gsv_call_fail(s, job, GRID_ERR_SHUTDOWN, "the server is shutting down: retry on another server");
        return KEEP;
    }
    if (gsv_sched_submit(s, job, &e) != GRID_OK) gsv_call_fail(s, job, e.code, e.msg);
    return KEEP;
}

/* Reads and answers one request. */
static int serve_one(gsv_conn *c) {
    gsv_server *s = c->srv;
    grw_header h;
    gr_err e;
    gr_clearerr(&e);
    /* Idle connections may wait forever for their next request (the reader sleeps in
     * poll, woken by data, by the peer leaving, or by shutdown()); the I/O timeout runs
     * from the first byte of a request. */
    if (!grw_has_buffered(&c->r)) {
        struct pollfd p = {c->fd, POLLIN, 0};
        while (poll(&p, 1, -1) < 0)
            if (errno != EINTR) return CLOSE;
    }
    long long arrived = gr_now_ns();
    c->r.deadline_ns = gsv_io_deadline(s, 0);
    int rc = grw_read_header(&c->r, &h, &e);
    if (rc) {
        memset(&h, 0, sizeof h);
        if (rc == GRID_ERR_CONN_LOST) {
            if (e.msg[0]) gsv_log(GSV_LOG_DEBUG, "%s: %s", c->peer, e.msg);
            return CLOSE;
        }
        if (rc == GRID_ERR_TIMEOUT) return body_error(c, &h, "message header", &e);
        gsv_log(GSV_LOG_WARN, "%s: closing the connection: %s", c->peer, e.msg);
        gsv_conn_send_error(c, 0, rc == GRID_ERR_LIMIT ? GRID_ERR_LIMIT : GRID_ERR_PROTOCOL, e.msg);
        return REFUSE;
    }
    if (!c->hello_done && h.type != GRW_HELLO) {
        char msg[160];
        snprintf(msg, sizeof msg, "the first message on a connection must be HELLO, not %s (type %u)",
                 grw_type_name(h.type), h.type);
        gsv_log(GSV_LOG_WARN, "%s: closing the connection: %s", c->peer, msg);
        gsv_conn_send_error(c, h.request_id, GRID_ERR_PROTOCOL, msg);
        return REFUSE;
    }
    switch (h.type) {
    case GRW_HELLO: return on_hello(c, &h);
    case GRW_GET_DESCRIPTOR: return on_get_descriptor(c, &h);
    case GRW_CALL: return on_call(c, &h, arrived);
    case GRW_CANCEL: return on_cancel(c, &h);
    case GRW_PING: return on_ping(c, &h);
    case GRW_LIST: return on_list(c, &h);
    default: {
        char msg[160];
        snprintf(msg, sizeof msg, "unexpected message %s (type %u) from a client", grw_type_name(h.type),
                 h.type);
        gsv_log(GSV_LOG_WARN, "%s: closing the connection: %s", c->peer, msg);
        gsv_conn_send_error(c, h.request_id, GRID_ERR_PROTOCOL, msg);
        return REFUSE;
    }
    }
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

static void *reader_main(void *arg) {
    gsv_conn *c = arg;
    gsv_server *s = c->srv;
    int rc;
    while ((rc = serve_one(c)) == KEEP) {
    }
    if (rc == REFUSE && !atomic_load(&s->stopping)) linger(c);
    gsv_log(GSV_LOG_DEBUG, "%s: connection closed", c->peer);

    pthread_mutex_lock(&s->lock);
    if (c->prev)
        c->prev->next = c->next;
    else
        s->conns = c->next;
    if (c->next) c->next->prev = c->prev;
    s->nreaders--;
    pthread_mutex_unlock(&s->lock);
    gsv_conn_unref(c);
    return NULL;
}

int gsv_conn_start(gsv_server *s, int fd, const char *peer) {
    gsv_conn *c = calloc(1, sizeof *c);
    if (!c) {
        close(fd);
        gsv_log(GSV_LOG_ERROR, "out of memory for a connection from %s", peer);
        return GRID_ERR_NOMEM;
    }
    c->srv = s;
    c->fd = fd;
    snprintf(c->peer, sizeof c->peer, "%s", peer);
    atomic_init(&c->refs, 1);
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
        pthread_mutex_lock(&s->lock);
        if (c->prev)
            c->prev->next = c->next;
        else
            s->conns = c->next;
        if (c->next) c->next->prev = c->prev;
        s->nreaders--;
        pthread_mutex_unlock(&s->lock);
        gsv_conn_unref(c);
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
