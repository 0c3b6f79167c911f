/* gdm_conn.c: a daemon's connections: starting one on a reader thread of its own, the
 * list and counts of them, writing whole messages under the connection's write lock
 * (so several calls of one connection can be in flight and their answers never
 * interleave), and closing.
 *
 * A connection lives while its reader runs and while any work of it is in flight
 * (reference count); the last reference closes the socket, so nothing ever writes to
 * a descriptor number that was reused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "gdm.h"
#include "gr_connlimit.h"
#include "gr_log.h"
#include "grp_proto.h"

int gdm_init(gdm_daemon *d, const gdm_config *cfg, unsigned max_conns, unsigned max_conns_per_addr) {
    memset(d, 0, sizeof *d);
    d->cfg = *cfg;
    d->max_conns = max_conns;
    d->max_conns_per_addr = max_conns_per_addr;
    d->fd = -1;
    atomic_init(&d->stopping, 0);
    d->connlimit = gr_connlimit_new(max_conns, max_conns_per_addr);
    if (!d->connlimit) return -1;
    pthread_mutex_init(&d->lock, NULL);
    return 0;
}

unsigned gdm_conns_open(gdm_daemon *d) {
    pthread_mutex_lock(&d->lock);
    unsigned n = d->nconns;
    pthread_mutex_unlock(&d->lock);
    return n;
}

int gdm_free(gdm_daemon *d) {
    if (gdm_conns_open(d)) return 0;
    gr_connlimit_free(d->connlimit);
    d->connlimit = NULL;
    pthread_mutex_destroy(&d->lock);
    return 1;
}

long long gdm_io_deadline(const gdm_daemon *d, uint64_t bytes) {
    if (d->cfg.io_timeout <= 0) return 0;
    double ns = (d->cfg.io_timeout + (double)bytes / d->cfg.floor_rate) * 1e9;
    if (ns > 1e17) ns = 1e17;
    return gr_now_ns() + (long long)ns;
}

void gdm_conn_ref(gdm_conn *c) {
    atomic_fetch_add(&c->refs, 1);
}

void gdm_conn_unref(gdm_conn *c) {
    if (atomic_fetch_sub(&c->refs, 1) != 1) return;
    gdm_daemon *d = c->dm;
    grw_tls_free(c->tls);
    close(c->fd);
    pthread_mutex_destroy(&c->wlock);
    /* The descriptor is free: the peer's address may open another. Under the lock, as
     * gdm_free frees the counts once none is open. */
    pthread_mutex_lock(&d->lock);
    gr_connlimit_release(d->connlimit, (const struct sockaddr *)&c->addr);
    d->nconns--;
    pthread_mutex_unlock(&d->lock);
    free(c);
}

void gdm_conn_abort(gdm_conn *c) {
    shutdown(c->fd, SHUT_RDWR);
}

void gdm_conn_forget(gdm_conn *c) {
    gdm_daemon *d = c->dm;
    pthread_mutex_lock(&d->lock);
    if (c->prev)
        c->prev->next = c->next;
    else
        d->conns = c->next;
    if (c->next) c->next->prev = c->prev;
    d->nreaders--;
    pthread_mutex_unlock(&d->lock);
    gdm_conn_unref(c);
}

int gdm_conn_start(gdm_daemon *d, int fd, const struct sockaddr *sa, socklen_t salen) {
    char peer[80];
    gdm_format_addr(sa, peer, sizeof peer, NULL, 0);
    gdm_conn *c = calloc(1, d->cfg.conn_size);
    if (!c) {
        close(fd);
        gr_connlimit_release(d->connlimit, sa);
        gr_log(GR_LOG_ERROR, "out of memory for a connection from %s", peer);
        return GRID_ERR_NOMEM;
    }
    c->dm = d;
    c->fd = fd;
    snprintf(c->peer, sizeof c->peer, "%s", peer);
    if (salen > sizeof c->addr) salen = sizeof c->addr;
    memcpy(&c->addr, sa, salen);
    c->hello_by = gr_now_ns() + (long long)(d->cfg.io_timeout * 1e9);
    atomic_init(&c->refs, 1);
    pthread_mutex_init(&c->wlock, NULL);
    grw_reader_init(&c->r, fd, d->cfg.max_message);
    if (d->cfg.opened) d->cfg.opened(c);

    pthread_mutex_lock(&d->lock);
    c->next = d->conns;
    if (d->conns) d->conns->prev = c;
    d->conns = c;
    d->nreaders++;
    d->nconns++;
    pthread_mutex_unlock(&d->lock);

    pthread_attr_t attr;
    pthread_t t;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    /* Readers are many (one per client) and need little stack. */
    pthread_attr_setstacksize(&attr, d->cfg.stack_size);
    int rc = pthread_create(&t, &attr, gdm_reader_main, c);
    pthread_attr_destroy(&attr);
    if (rc) {
        gr_log(GR_LOG_ERROR, "cannot start a thread for the connection from %s: %s", peer, strerror(rc));
        char msg[100];
        snprintf(msg, sizeof msg, "the %s cannot take more connections now: retry later", d->cfg.name);
        gdm_send_error(c, 0, GRID_ERR_BUSY, msg);
        gdm_conn_forget(c);
        return GRID_ERR_BUSY;
    }
    gr_log(GR_LOG_DEBUG, "%s: connected", peer);
    return GRID_OK;
}

void gdm_close_all(gdm_daemon *d, long long deadline_ns) {
    pthread_mutex_lock(&d->lock);
    for (gdm_conn *c = d->conns; c; c = c->next)
        gdm_conn_abort(c);
    while (d->nreaders > 0 || d->nconns > 0) {
        long long left = deadline_ns - gr_now_ns();
        if (left <= 0) break;
        pthread_mutex_unlock(&d->lock);
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
        pthread_mutex_lock(&d->lock);
    }
    pthread_mutex_unlock(&d->lock);
}

/* ---------------------------------------------------------------- writing */

grw_writer *gdm_writer(gdm_conn *c, uint64_t bytes) {
    grw_writer_init(&c->w, c->fd);
    c->w.tls = c->tls;
    c->w.deadline_ns = gdm_io_deadline(c->dm, bytes);
    return &c->w;
}

grw_writer *gdm_reply_lock(gdm_conn *c, uint64_t bytes) {
    pthread_mutex_lock(&c->wlock);
    if (c->broken) {
        pthread_mutex_unlock(&c->wlock);
        return NULL;
    }
    return gdm_writer(c, bytes);
}

int gdm_reply_unlock(gdm_conn *c, int rc, gr_err *e) {
    /* Part of the message may be on the wire already: the stream cannot be
     * resynchronised, so the connection ends (the peer sees it lost). */
    if (rc) c->broken = 1;
    pthread_mutex_unlock(&c->wlock);
    if (rc) {
        gr_log(GR_LOG_DEBUG, "%s: cannot send: %s", c->peer, e->msg);
        gdm_conn_abort(c);
        return -1;
    }
    return 0;
}

int gdm_send_error(gdm_conn *c, uint64_t request_id, int code, const char *msg) {
    gr_err e;
    grw_writer *w = gdm_reply_lock(c, 0);
    if (!w) return GRID_ERR_CONN_LOST;
    int rc = grp_write_error(w, request_id, code, msg, &e);
    gdm_reply_unlock(c, rc, &e);
    return rc;
}
