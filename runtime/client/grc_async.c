/* grc_async.c: asynchronous calls. Calls to one server share one connection (a
 * "pipe"): the caller's thread marshals and sends its CALL under the pipe's write lock
 * and returns at once; a reader thread per pipe collects replies in the background and
 * stores each into its caller's buffers, so many calls are in flight on one connection
 * and grid_probe sees completions without making any call itself.
 *
 * Locking: one lock (alock) guards every session and the pipe list; a pipe's wlock
 * orders whole messages on its socket. alock is never held while writing to a socket
 * or while a reply body is read. A session whose reply is being read is marked
 * "reading"; grid_cancel waits for that to end, which is how "after grid_cancel
 * returns, nothing is written into the caller's buffers" holds.
 *
 * A pipe's rlock makes one thread at a time the reader of its socket: the reader thread
 * while it handles a message, or a grid_probe that finds a reply already received and
 * nobody reading it (it drains what has arrived, never waiting for more).
 *
 * Delivery (grid_wait_received_np): a PING sent after a CALL on the same connection is
 * answered only once the server has read every request before it, so its PONG says
 * that the server holds the call's arguments. The PING's request id carries the
 * session id in its low 32 bits and a generation in the high ones: a CALL sent again
 * (STALE, failover) is followed by a new PING, and a late PONG of an old one is
 * ignored. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "grc_client.h"

typedef struct grc_pipe {
    grc_conn *conn;
    pthread_mutex_t wlock;
    pthread_mutex_t rlock; /* held by whoever reads the next message (reader or probe) */
    pthread_t reader;
    int dead;
    int exited; /* the reader thread is done with the pipe (set under alock as its last
                 * step; the thread is detached: nobody joins it) */
    struct grc_pipe *next;
} grc_pipe;

typedef struct grc_session {
    int id;
    int done, cancelled, reading, waited;
    int rerouting; /* its server failed: a thread is sending it to another (grc_req_failover) */
    int code;
    char *msg;
    unsigned ping_gen; /* the last PING sent for delivery (0: none) */
    int acked;         /* its PONG arrived: the server holds the arguments */
    long long deadline_ns;
    grc_pipe *pipe;
    grc_req req;                       /* target, descriptor and arguments; req.call is NULL once done */
    struct grc_session *hnext;         /* hash chain */
    struct grc_session *oprev, *onext; /* outstanding (not waited) list */
} grc_session;

#define NBUCKETS 4096

static pthread_mutex_t alock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t acond = PTHREAD_COND_INITIALIZER;
static grc_session *buckets[NBUCKETS];
static grc_session *outstanding_head, *outstanding_tail;
static grc_pipe *pipes;
static int next_id = 1;

/* ---- the session table (alock held) */

static grc_session *find(int id) {
    for (grc_session *s = buckets[(unsigned)id % NBUCKETS]; s; s = s->hnext)
        if (s->id == id) return s;
    return NULL;
}

static void insert(grc_session *s) {
    unsigned b = (unsigned)s->id % NBUCKETS;
    s->hnext = buckets[b];
    buckets[b] = s;
    s->oprev = outstanding_tail;
    s->onext = NULL;
    if (outstanding_tail)
        outstanding_tail->onext = s;
    else
        outstanding_head = s;
    outstanding_tail = s;
}

static void unlist(grc_session *s) {
    if (s->waited) return;
    s->waited = 1;
    if (s->oprev)
        s->oprev->onext = s->onext;
    else
        outstanding_head = s->onext;
    if (s->onext)
        s->onext->oprev = s->oprev;
    else
        outstanding_tail = s->oprev;
    s->oprev = s->onext = NULL;
}

static void finish(grc_session *s, int code, const char *msg) {
    /* grid_get_stats_np counts completed calls, asynchronous ones too. */
    if (!code) __atomic_add_fetch(&grc_stat_calls, 1, __ATOMIC_RELAXED);
    s->done = 1;
    s->code = code;
    free(s->msg);
    s->msg = code && msg ? strdup(msg) : NULL;
    grc_req_free(&s->req);
    pthread_cond_broadcast(&acond);
}

/* ---- the reader thread of a pipe */

static int get_pipe(const grc_target *t, const grc_config *cfg, grc_pipe **out, gr_err *e);
static unsigned next_ping(grc_session *s);
static int write_ping(grc_pipe *p, int id, unsigned gen, gr_err *e);

/* Session S (marked rerouting) failed with CODE (MSG) before its result arrived: sends
 * it to another server as grc_req_failover picks, or finishes it with the error that
 * names every server tried. Runs on the thread that saw the failure, without alock. */
static void failover_session(grc_session *s, int code, const char *msg) {
    gr_err e;
    gr_seterr(&e, code, "%s", msg);
    int rc;
    for (;;) {
        rc = grc_req_failover(&s->req, code, &e);
        if (rc) break;
        pthread_mutex_lock(&alock);
        int gone = s->done;
        pthread_mutex_unlock(&alock);
        if (gone) break; /* canceled or timed out meanwhile */
        grc_config cfg;
        grc_pipe *np = NULL;
        rc = grc_config_get(&cfg, &e);
        if (!rc) rc = get_pipe(&s->req.t, &cfg, &np, &e);
        if (rc == GRID_ERR_TIMEOUT) e.code = rc = GRID_ERR_CONNECT;
        if (rc && grc_code_is_server_failure(rc)) {
            code = rc;
            continue;
        }
        if (!rc) rc = grc_req_check(&s->req, &np->conn->server, &e);
        int place_failed = 0;
        if (!rc) rc = grc_req_place(&s->req, &cfg, &place_failed, &e); /* its data handles go there first */
        if (rc && place_failed) {
            code = rc;
            continue;
        }
        if (rc) {
            grc_req_blame(&s->req, &e);
            break;
        }
        pthread_mutex_lock(&alock);
        s->pipe = np;
        s->req.route.sent_ns = gr_now_ns();            /* under alock: the reader reads it after taking it */
        unsigned gen = s->ping_gen ? next_ping(s) : 0; /* a caller waits for delivery */
        pthread_mutex_unlock(&alock);
        pthread_mutex_lock(&np->wlock);
        rc = grc_req_send(&s->req, &np->conn->wr, (uint64_t)s->id, &np->conn->server, &e);
        if (!rc && gen) rc = write_ping(np, s->id, gen, &e);
        pthread_mutex_unlock(&np->wlock);
        if (rc) shutdown(np->conn->fd, SHUT_RDWR);
        pthread_mutex_lock(&alock);
        /* Sent on a pipe still alive: its reader owns the call from here (and a later
         * failure of that pipe sees it as any other). */
        if (!rc && !np->dead) {
            s->rerouting = 0;
            pthread_cond_broadcast(&acond);
            pthread_mutex_unlock(&alock);
            return;
        }
        pthread_mutex_unlock(&alock);
        code = GRID_ERR_CONN_LOST;
        gr_seterr(&e, code, "the server closed the connection as the call was sent");
    }
    pthread_mutex_lock(&alock);
    s->rerouting = 0;
    if (!s->done) finish(s, rc, e.msg);
    pthread_cond_broadcast(&acond);
    pthread_mutex_unlock(&alock);
}

static void fail_pipe(grc_pipe *p, const char *why) {
    grc_session **moved = NULL;
    size_t nmoved = 0, cap = 0;
    pthread_mutex_lock(&alock);
    p->dead = 1;
    for (unsigned b = 0; b < NBUCKETS; b++)
        for (grc_session *s = buckets[b]; s; s = s->hnext) {
            if (s->pipe != p || s->done || s->rerouting) continue;
            /* A call routed by the metaserver may run elsewhere (grc_req_failover says). */
            if (s->req.route.routed && !s->cancelled) {
                if (nmoved == cap) {
                    size_t ncap = cap ? 2 * cap : 16;
                    grc_session **m = realloc(moved, ncap * sizeof *m);
                    if (m) {
                        moved = m;
                        cap = ncap;
                    }
                }
                if (nmoved < cap) {
                    s->rerouting = 1;
                    moved[nmoved++] = s;
                    continue;
                }
            }
            finish(s, GRID_ERR_CONN_LOST, why);
        }
    pthread_mutex_unlock(&alock);
    for (size_t i = 0; i < nmoved; i++)
        failover_session(moved[i], GRID_ERR_CONN_LOST, why);
    free(moved);
}

/* Starts a new delivery generation for S (alock held) and returns it: the PING that
 * follows S's CALL carries it, and only its PONG counts. */
static unsigned next_ping(grc_session *s) {
    s->acked = 0;
    if (++s->ping_gen == 0) s->ping_gen = 1;
    return s->ping_gen;
}

/* Writes the PING of generation GEN for session ID (the caller holds the wlock). */
static int write_ping(grc_pipe *p, int id, unsigned gen, gr_err *e) {
    return grp_write_empty(&p->conn->wr, GRP_PING, ((uint64_t)gen << 32) | (uint32_t)id, e);
}

/* Sends session S's CALL again after GRID_ERR_STALE, with the descriptor fetched anew;
 * runs on the reader thread while S is marked reading, so that grid_cancel waits and
 * the caller's buffers stay in use only while the call can still complete. */
static int resend_stale(grc_pipe *p, grc_session *s, gr_err *e) {
    int rc = grc_req_refresh(&s->req, e);
    if (!rc) rc = grc_req_check(&s->req, &p->conn->server, e);
    if (rc) return rc;
    s->req.route.sent_ns = gr_now_ns();
    pthread_mutex_lock(&alock);
    unsigned gen = s->ping_gen ? next_ping(s) : 0; /* a caller waits for delivery */
    pthread_mutex_unlock(&alock);
    pthread_mutex_lock(&p->wlock);
    rc = grc_req_send(&s->req, &p->conn->wr, (uint64_t)s->id, &p->conn->server, e);
    if (!rc && gen) rc = write_ping(p, s->id, gen, e);
    pthread_mutex_unlock(&p->wlock);
    if (rc) shutdown(p->conn->fd, SHUT_RDWR); /* half a message may be on the wire */
    return rc;
}

/* A PONG: the server has read every request sent before the PING it answers. */
static int on_pong(grc_pipe *p, const grw_header *h, gr_err *e) {
    grp_pong pong;
    int rc = grp_read_pong(&p->conn->rd, &pong, e);
    if (rc) return rc;
    pthread_mutex_lock(&alock);
    grc_session *s = find((int)(h->request_id & 0x7fffffff));
    if (s && s->ping_gen == (unsigned)(h->request_id >> 32)) {
        s->acked = 1;
        pthread_cond_broadcast(&acond);
    }
    pthread_mutex_unlock(&alock);
    return GRID_OK;
}

/* Reads and handles the next message of pipe P (the caller holds its rlock). Returns
 * 0, or -1 when the connection cannot carry another message (E: why; the caller fails
 * the pipe). */
static int handle_one(grc_pipe *p, gr_err *e) {
    grc_conn *c = p->conn;
    grw_header h;
    c->rd.deadline_ns = 0;
    gr_clearerr(e);
    int rc = grp_read_header(&c->rd, &h, e);
    if (rc) {
        if (rc == GRID_ERR_CONN_LOST)
            gr_seterr(e, rc,
                      "the server closed the connection during the call: it may have crashed or been "
                      "stopped (check its log)");
        return -1;
    }
    if (h.type == GRP_PONG) return on_pong(p, &h, e) ? -1 : 0;
    pthread_mutex_lock(&alock);
    grc_session *s = h.request_id <= 0x7fffffff ? find((int)h.request_id) : NULL;
    int discard = !s || s->done;
    if (!discard) s->reading = 1;
    pthread_mutex_unlock(&alock);

    int code = GRID_OK, in_step = 1, resent = 0, moved = 0, more = 0;
    if (discard) {
        /* A callback of a call that ended here is answered, so the body goes on. */
        rc = h.type == GRP_CALLBACK ? grc_callback_refuse(&c->rd, &c->wr, &p->wlock, &h, GRID_ERR_CANCELED,
                                                          "the call ended on the client (canceled or timed "
                                                          "out): its callbacks no longer run",
                                                          e)
                                    : grw_skip(&c->rd, e);
        in_step = rc == GRID_OK;
    } else if (h.type == GRP_CALLBACK) {
        /* The body calls one of the caller's functions: it runs here, on the thread
         * reading this connection's replies (grc_callback.c), and the call goes on. */
        code = grc_callback_serve(&s->req, &c->rd, &c->wr, &p->wlock, &c->server, &h, e);
        in_step = more = code == GRID_OK;
        if (code) grc_req_blame(&s->req, e);
    } else {
        code = grc_req_reply(&s->req, &c->rd, &h, &in_step, e);
        if (code == GRID_ERR_STALE && in_step) {
            code = resend_stale(p, s, e);
            resent = code == GRID_OK;
        }
        /* The server failed while its result was arriving: run it elsewhere. */
        moved = code && !in_step && s->req.route.routed && grc_code_is_server_failure(code);
        if (code && !moved) grc_req_blame(&s->req, e);
        if (!resent && !moved) grc_req_settle(&s->req, code);
        if (!resent && !moved) grc_req_end(&s->req, code);
    }

    pthread_mutex_lock(&alock);
    if (!discard) {
        s->reading = 0;
        if (moved) s->rerouting = 1;
        if (resent || moved || more)
            pthread_cond_broadcast(&acond); /* a cancel may wait for reading to end */
        else
            finish(s, code, e->msg);
    }
    pthread_mutex_unlock(&alock);
    if (moved) failover_session(s, code, e->msg);
    if (!in_step) {
        if (!e->msg[0]) gr_seterr(e, GRID_ERR_CONN_LOST, "the connection to the server failed");
        return -1;
    }
    return 0;
}

/* 1 when a message of P can be read without waiting for the network to deliver its
 * first byte: buffered in the reader, or readable on the socket (or the socket closed). */
static int readable(grc_pipe *p) {
    if (grw_has_buffered(&p->conn->rd)) return 1; /* in the reader, or in its TLS session */
    struct pollfd pf = {p->conn->fd, POLLIN, 0};
    return poll(&pf, 1, 0) > 0;
}

/* The reader's last step: a reader whose server failed ends on its own, and nothing may
 * be left to join at exit. */
static void reader_exits(void *arg) {
    grc_pipe *p = arg;
    pthread_mutex_lock(&alock);
    p->exited = 1;
    pthread_detach(pthread_self());
    pthread_cond_broadcast(&acond);
    pthread_mutex_unlock(&alock);
}

static void *reader_main(void *arg) {
    grc_pipe *p = arg;
    gr_err e;
    pthread_cleanup_push(reader_exits, p);
    for (;;) {
        /* Wait for bytes without the rlock, so that a probe may take them first (the
         * reader's buffer is a probe's too while it holds the rlock: look under it). */
        pthread_mutex_lock(&p->rlock);
        int buffered = grw_has_buffered(&p->conn->rd);
        pthread_mutex_unlock(&p->rlock);
        if (!buffered) {
            struct pollfd pf = {p->conn->fd, POLLIN, 0};
            if (poll(&pf, 1, -1) < 0 && errno != EINTR) {
                fail_pipe(p, "cannot wait for the server's replies");
                break;
            }
        }
        pthread_mutex_lock(&p->rlock);
        int failed = readable(p) ? handle_one(p, &e) : 0; /* a probe may have drained it */
        pthread_mutex_unlock(&p->rlock);
        if (failed) {
            fail_pipe(p, e.msg);
            break;
        }
    }
    pthread_cleanup_pop(1);
    return NULL;
}

/* Frees the dead pipes whose reader is done and that no call refers to any more (alock
 * held): a client that outlives many server failures does not keep their buffers until
 * grid_reset_np. */
static void reap_dead_pipes(void) {
    for (grc_pipe **pp = &pipes; *pp;) {
        grc_pipe *p = *pp;
        if (!p->dead || !p->exited) {
            pp = &p->next;
            continue;
        }
        int used = 0;
        for (unsigned b = 0; b < NBUCKETS && !used; b++)
            for (grc_session *s = buckets[b]; s && !used; s = s->hnext)
                used = s->pipe == p;
        if (used) {
            pp = &p->next;
            continue;
        }
        *pp = p->next;
        grc_conn_put(p->conn, 1);
        pthread_mutex_destroy(&p->wlock);
        pthread_mutex_destroy(&p->rlock);
        free(p);
    }
}

/* Returns a live pipe to HOST:PORT, opening one (with its reader) if needed. */
static int get_pipe(const grc_target *t, const grc_config *cfg, grc_pipe **out, gr_err *e) {
    pthread_mutex_lock(&alock);
    for (grc_pipe *p = pipes; p; p = p->next)
        if (!p->dead && p->conn->port == t->port && strcmp(p->conn->host, t->host) == 0) {
            *out = p;
            pthread_mutex_unlock(&alock);
            return GRID_OK;
        }
    pthread_mutex_unlock(&alock);
    grc_conn *c;
    int rc = grc_conn_get(t->host, t->port, cfg, &c, e);
    if (rc) return rc;
    pthread_mutex_lock(&alock);
    reap_dead_pipes();
    pthread_mutex_unlock(&alock);
    grc_pipe *p = calloc(1, sizeof *p);
    if (!p) {
        grc_conn_put(c, 1);
        return gr_seterr(e, GRID_ERR_NOMEM, "out of memory");
    }
    p->conn = c;
    c->wr.deadline_ns = 0;
    pthread_mutex_init(&p->wlock, NULL);
    pthread_mutex_init(&p->rlock, NULL);
    pthread_mutex_lock(&alock);
    /* Another thread may have opened one meanwhile: use it, drop ours. */
    for (grc_pipe *q = pipes; q; q = q->next)
        if (!q->dead && q->conn->port == t->port && strcmp(q->conn->host, t->host) == 0) {
            pthread_mutex_unlock(&alock);
            pthread_mutex_destroy(&p->wlock);
            pthread_mutex_destroy(&p->rlock);
            grc_conn_put(c, 0);
            free(p);
            *out = q;
            return GRID_OK;
        }
    if (pthread_create(&p->reader, NULL, reader_main, p) != 0) {
        pthread_mutex_unlock(&alock);
        pthread_mutex_destroy(&p->wlock);
        pthread_mutex_destroy(&p->rlock);
        grc_conn_put(c, 1);
        free(p);
        return gr_seterr(e, GRID_ERR_INTERNAL, "cannot start a reader thread: %s", strerror(errno));
    }
    p->next = pipes;
    pipes = p;
    pthread_mutex_unlock(&alock);
    *out = p;
    return GRID_OK;
}

/* ---- starting a call */

static int start_call(grc_req *q, const void *name, const grc_args *args, grc_config *cfg, gr_err *e) {
    return grc_req_start(q, name, args, cfg, e);
}

int grc_call_async(const char *name, const grc_args *args, gr_err *e) {
    return grc_call_async_req(start_call, name, args, e);
}

int grc_call_async_req(grc_req_starter start, const void *ctx, const grc_args *args, gr_err *e) {
    if (grc_txn_active())
        return -gr_seterr(
            e, GRID_ERR_ARGS,
            "asynchronous calls cannot be part of a transaction (the transaction runs its calls "
            "concurrently itself): use grid_call inside grid_transaction_begin/_end, or start the "
            "asynchronous call after grid_transaction_end");
    grc_config cfg;
    grc_session *s = calloc(1, sizeof *s);
    if (!s) return -gr_seterr(e, GRID_ERR_NOMEM, "out of memory");
    int rc = start(&s->req, ctx, args, &cfg, e);
    if (rc) {
        free(s);
        return -rc;
    }
    grc_pipe *p = NULL;
    for (;;) {
        p = NULL;
        rc = get_pipe(&s->req.t, &cfg, &p, e);
        if (rc == GRID_ERR_TIMEOUT) e->code = rc = GRID_ERR_CONNECT;
        /* Data handles among the arguments: their data goes to this server first. */
        int place_failed = 0;
        if (!rc) rc = grc_req_check(&s->req, &p->conn->server, e);
        if (!rc) rc = grc_req_place(&s->req, &cfg, &place_failed, e);
        if (rc && !place_failed && p) break;
        if (!rc || grc_req_failover(&s->req, rc, e) != GRID_OK) break;
    }
    if (rc) {
        grc_req_blame(&s->req, e);
        grc_req_free(&s->req);
        free(s);
        return -rc;
    }
    s->pipe = p;
    s->deadline_ns = grc_config_deadline(&cfg);

    pthread_mutex_lock(&alock);
    if (next_id == 0x7fffffff) next_id = 1;
    while (find(next_id))
        next_id++;
    s->id = next_id++;
    s->req.route.sent_ns = gr_now_ns();
    insert(s); /* registered before it is sent, so the reply always finds its session */
    int id = s->id;
    pthread_mutex_unlock(&alock);

    grc_conn *c = p->conn;
    pthread_mutex_lock(&p->wlock);
    rc = grc_req_send(&s->req, &c->wr, (uint64_t)s->id, &c->server, e);
    pthread_mutex_unlock(&p->wlock);
    if (rc) {
        /* The stream may hold half a message: this connection is finished. */
        shutdown(c->fd, SHUT_RDWR);
        pthread_mutex_lock(&alock);
        /* A routed call goes to another server, unless the pipe's reader took it. */
        int move = !s->done && !s->rerouting && s->req.route.routed;
        if (move) s->rerouting = 1;
        if (!move && !s->done && !s->rerouting) {
            grc_req_blame(&s->req, e);
            finish(s, rc, e->msg);
        }
        pthread_mutex_unlock(&alock);
        if (move) failover_session(s, rc, e->msg);
    }
    return id;
}

/* ---- waiting */

/* Sends CANCEL for call ID on pipe P (taken from the session under alock: once alock is
 * released a finished session may be forgotten and freed by another thread, as the
 * Python binding's completion thread does at once; pipes live until grc_async_reset). */
static void send_cancel(grc_pipe *p, int id) {
    gr_err e;
    if (!p || p->dead) return;
    pthread_mutex_lock(&p->wlock);
    grp_write_empty(&p->conn->wr, GRP_CANCEL, (uint64_t)id, &e);
    pthread_mutex_unlock(&p->wlock);
}

/* The message of a call that timed out, naming the setting that gave its timeout. */
static const char *timeout_msg(char *buf, size_t n) {
    grc_config cfg;
    gr_err e;
    char tt[400];
    grc_config_get(&cfg, &e); /* its settings were read when the call started */
    snprintf(buf, n, "no reply within the call timeout of %s; the call was canceled",
             grc_timeout_text(&cfg, tt, sizeof tt));
    return buf;
}

/* Waits (alock held) until S is done or its deadline passes; 1 if it timed out. */
static int wait_done(grc_session *s) {
    while (!s->done) {
        if (s->deadline_ns) {
            long long left = s->deadline_ns - gr_now_ns();
            if (left <= 0 && !s->reading && !s->rerouting) {
                s->cancelled = 1;
                char m[512];
                finish(s, GRID_ERR_TIMEOUT, timeout_msg(m, sizeof m));
                return 1;
            }
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            long long ns = (long long)ts.tv_nsec + (left > 0 ? left : 1000000);
            ts.tv_sec += (time_t)(ns / 1000000000LL);
            ts.tv_nsec = (long)(ns % 1000000000LL);
            pthread_cond_timedwait(&acond, &alock, &ts);
        } else {
            pthread_cond_wait(&acond, &alock);
        }
    }
    return 0;
}

static __thread char last_msg[1024];

static int unknown(int id) {
    snprintf(last_msg, sizeof last_msg, "unknown call id %d: it was never started, or was forgotten", id);
    return GRID_ERR_ARGS;
}

int grc_wait(int id, const char **msg) {
    pthread_mutex_lock(&alock);
    grc_session *s = find(id);
    if (!s) {
        pthread_mutex_unlock(&alock);
        *msg = last_msg;
        return unknown(id);
    }
    int timed_out = wait_done(s);
    unlist(s);
    int code = s->code;
    if (s->req.t.host[0]) grc_set_last_server(s->req.t.host, s->req.t.port);
    snprintf(last_msg, sizeof last_msg, "%s", s->msg ? s->msg : "");
    grc_pipe *pipe = s->pipe;
    pthread_mutex_unlock(&alock);
    if (timed_out) send_cancel(pipe, id);
    grc_data_flush(NULL); /* copies that a KEEP of the call made stale */
    *msg = last_msg;
    return code;
}

int grc_wait_any(const int *ids, int n, int *done, const char **msg) {
    *msg = last_msg;
    pthread_mutex_lock(&alock);
    for (;;) {
        grc_session *pick = NULL;
        int any = 0;
        long long soonest = 0;
        if (ids) {
            for (int k = 0; k < n; k++) {
                grc_session *s = find(ids[k]);
                if (!s) {
                    pthread_mutex_unlock(&alock);
                    *done = ids[k];
                    return unknown(ids[k]);
                }
                any = 1;
                if (s->done) {
                    pick = s;
                    break;
                }
                if (s->deadline_ns && (!soonest || s->deadline_ns < soonest)) soonest = s->deadline_ns;
            }
        } else {
            for (grc_session *s = outstanding_head; s; s = s->onext) {
                any = 1;
                if (s->done) {
                    pick = s;
                    break;
                }
                if (s->deadline_ns && (!soonest || s->deadline_ns < soonest)) soonest = s->deadline_ns;
            }
        }
        if (!any) {
            pthread_mutex_unlock(&alock);
            *done = GRID_ID_NONE;
            last_msg[0] = '\0';
            return GRID_OK;
        }
        if (pick) {
            unlist(pick);
            *done = pick->id;
            if (pick->req.t.host[0]) grc_set_last_server(pick->req.t.host, pick->req.t.port);
            snprintf(last_msg, sizeof last_msg, "%s", pick->msg ? pick->msg : "");
            int code = pick->code;
            pthread_mutex_unlock(&alock);
            grc_data_flush(NULL); /* copies that a KEEP of the call made stale */
            return code;
        }
        /* Expire calls past their deadline, then sleep until something changes. */
        if (soonest && soonest <= gr_now_ns()) {
            grc_session *list = ids ? NULL : outstanding_head;
            for (int k = 0; ids ? k < n : list != NULL; k++) {
                grc_session *s = ids ? find(ids[k]) : list;
                if (!ids) list = list->onext;
                if (s && !s->done && !s->reading && !s->rerouting && s->deadline_ns &&
                    s->deadline_ns <= gr_now_ns()) {
                    s->cancelled = 1;
                    char m[512];
                    finish(s, GRID_ERR_TIMEOUT, timeout_msg(m, sizeof m));
                }
            }
            continue;
        }
        if (soonest) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            long long ns = ts.tv_nsec + (soonest - gr_now_ns());
            ts.tv_sec += (time_t)(ns / 1000000000LL);
            ts.tv_nsec = (long)(ns % 1000000000LL);
            pthread_cond_timedwait(&acond, &alock, &ts);
        } else {
            pthread_cond_wait(&acond, &alock);
        }
    }
}

/* Handles the messages of P that have arrived, unless another thread is reading it
 * (it will handle them). Never waits for the network: a message whose first byte is
 * here is read whole, as the reader thread would. */
static void drain(grc_pipe *p) {
    if (pthread_mutex_trylock(&p->rlock) != 0) return;
    gr_err e;
    int failed = 0;
    while (!p->dead && readable(p))
        if ((failed = handle_one(p, &e)) != 0) break;
    /* The reader thread sees the broken stream too and fails the pipe. */
    if (failed) shutdown(p->conn->fd, SHUT_RDWR);
    pthread_mutex_unlock(&p->rlock);
}

int grc_probe(int id) {
    pthread_mutex_lock(&alock);
    grc_session *s = find(id);
    int r = s ? s->done : -GRID_ERR_ARGS;
    grc_pipe *p = s && !s->done && !s->rerouting ? s->pipe : NULL;
    pthread_mutex_unlock(&alock);
    if (!s) unknown(id);
    /* A reply already received counts even if the reader thread has not run yet. */
    if (p && !p->dead) {
        drain(p);
        pthread_mutex_lock(&alock);
        r = s->done;
        pthread_mutex_unlock(&alock);
    }
    return r;
}

int grc_wait_received(int id, gr_err *e) {
    pthread_mutex_lock(&alock);
    grc_session *s = find(id);
    if (!s) {
        pthread_mutex_unlock(&alock);
        unknown(id);
        return gr_seterr(e, GRID_ERR_ARGS, "%s", last_msg);
    }
    if (s->done || s->acked) {
        pthread_mutex_unlock(&alock);
        return GRID_OK;
    }
    /* A call being sent to another server (failover) gets its PING there: a nonzero
     * ping_gen asks for it. */
    unsigned gen = 0;
    if (!s->rerouting)
        gen = next_ping(s);
    else if (!s->ping_gen)
        s->ping_gen = 1;
    grc_pipe *p = s->pipe;
    pthread_mutex_unlock(&alock);
    if (gen) {
        gr_err we;
        pthread_mutex_lock(&p->wlock);
        int rc = p->dead ? GRID_ERR_CONN_LOST : write_ping(p, id, gen, &we);
        pthread_mutex_unlock(&p->wlock);
        /* A broken pipe fails or moves the call: the wait below sees that. */
        if (rc && !p->dead) shutdown(p->conn->fd, SHUT_RDWR);
    }
    pthread_mutex_lock(&alock);
    while (!s->done && !s->acked) {
        if (s->deadline_ns) {
            long long left = s->deadline_ns - gr_now_ns();
            if (left <= 0) break; /* the call's own wait reports the timeout */
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            long long ns = (long long)ts.tv_nsec + left;
            ts.tv_sec += (time_t)(ns / 1000000000LL);
            ts.tv_nsec = (long)(ns % 1000000000LL);
            pthread_cond_timedwait(&acond, &alock, &ts);
        } else {
            pthread_cond_wait(&acond, &alock);
        }
    }
    pthread_mutex_unlock(&alock);
    return GRID_OK;
}

int grc_cancel(int id) {
    pthread_mutex_lock(&alock);
    grc_session *s = find(id);
    if (!s) {
        pthread_mutex_unlock(&alock);
        return unknown(id);
    }
    /* A reply being stored right now completes the call: wait for it (and for a
     * failover that may be sending it elsewhere). */
    while (s->reading || s->rerouting)
        pthread_cond_wait(&acond, &alock);
    int was_done = s->done;
    if (!was_done) {
        s->cancelled = 1;
        finish(s, GRID_ERR_CANCELED, "the call was canceled (grid_cancel)");
    }
    grc_pipe *pipe = s->pipe;
    pthread_mutex_unlock(&alock);
    if (!was_done) send_cancel(pipe, id);
    last_msg[0] = '\0';
    return GRID_OK;
}

int grc_session_error(int id, const char **msg, int *waited) {
    pthread_mutex_lock(&alock);
    grc_session *s = find(id);
    int code = s ? (s->done ? s->code : GRID_OK) : -1;
    if (s) {
        *msg = s->done && s->msg ? s->msg : "";
        *waited = s->waited;
    }
    pthread_mutex_unlock(&alock);
    return code;
}

void grc_forget(int id) {
    pthread_mutex_lock(&alock);
    grc_session *s = find(id);
    if (s && s->done) {
        unlist(s);
        grc_session **pp = &buckets[(unsigned)id % NBUCKETS];
        while (*pp != s)
            pp = &(*pp)->hnext;
        *pp = s->hnext;
        free(s->msg);
        free(s);
    }
    pthread_mutex_unlock(&alock);
}

void grc_async_reset(void) {
    /* Fail what is in flight, stop every reader, free everything. */
    pthread_mutex_lock(&alock);
    grc_pipe *list = pipes;
    pipes = NULL;
    pthread_mutex_unlock(&alock);
    for (grc_pipe *p = list; p; p = p->next)
        shutdown(p->conn->fd, SHUT_RDWR);
    for (grc_pipe *p = list; p;) {
        grc_pipe *n = p->next;
        pthread_mutex_lock(&alock);
        while (!p->exited)
            pthread_cond_wait(&acond, &alock);
        pthread_mutex_unlock(&alock);
        grc_conn_put(p->conn, 1);
        pthread_mutex_destroy(&p->wlock);
        pthread_mutex_destroy(&p->rlock);
        free(p);
        p = n;
    }
    pthread_mutex_lock(&alock);
    for (unsigned b = 0; b < NBUCKETS; b++) {
        grc_session *s = buckets[b];
        while (s) {
            grc_session *n = s->hnext;
            grc_req_free(&s->req);
            free(s->msg);
            free(s);
            s = n;
        }
        buckets[b] = NULL;
    }
    outstanding_head = outstanding_tail = NULL;
    pthread_mutex_unlock(&alock);
}
