/* grc_call.c: one synchronous remote call on a pooled connection: the engine's steps
 * (grc_engine.c) with the caller's thread doing the I/O, which is the fastest way for
 * a caller that waits anyway (no hand-off to a reader thread). The public entry points
 * over it (grid_call, grid_last_call_times_np) are in grc_api.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gridrpc.h>

#include "grc_client.h"

/* The calling thread's last synchronous call, for grc_call_last_times: filled by
 * exchange() as the call goes, valid once it ended well. */
static __thread grid_call_times_np last_times;
static __thread int last_times_ok;

int grc_call_last_times(grid_call_times_np *out) {
    if (!last_times_ok) return 0;
    *out = last_times;
    return 1;
}

/* After grid_interrupt_np ended the wait for call ID on C: the server is told to cancel
 * it and the connection (its reading side shut) is dropped. */
static int interrupted(grc_conn *c, uint64_t id, int *broken, gr_err *e) {
    gr_err ce;
    c->wr.deadline_ns = gr_now_ns() + 1000000000LL; /* a full send buffer does not hold Ctrl-C up */
    grp_write_empty(&c->wr, GRP_CANCEL, id, &ce);
    *broken = 1;
    return gr_seterr(
        e, GRID_ERR_CANCELED,
        "the call was interrupted (Ctrl-C or grid_interrupt_np): the server was told to cancel it");
}

/* exchange's send and receive, as the call's socket is watched for an interrupt. */
static int exchange_watched(grc_conn *c, grc_req *q, uint64_t id, int *broken, gr_err *e) {
    long long sent_ns = q->route.sent_ns = gr_now_ns();
    int rc = grc_req_send(q, &c->wr, id, &c->server, e);
    if (rc) {
        *broken = 1;
        return rc;
    }
    grw_header h;
    for (;;) {
        rc = grp_read_header(&c->rd, &h, e);
        if (rc) {
            *broken = 1;
            if (rc == GRID_ERR_CONN_LOST)
                gr_seterr(
                    e, GRID_ERR_CONN_LOST,
                    "the server closed the connection during the call: it may have crashed or been stopped "
                    "(check its log), or the call exceeded a server limit");
            return rc;
        }
        if (h.request_id != id) {
            *broken = 1;
            return gr_seterr(e, GRID_ERR_PROTOCOL, "reply to request %llu while waiting for %llu",
                             (unsigned long long)h.request_id, (unsigned long long)id);
        }
        if (h.type != GRP_CALLBACK) break;
        /* The body calls one of the caller's functions: run it on this thread (grc_callback.c). */
        rc = grc_callback_serve(q, &c->rd, &c->wr, NULL, &c->server, &h, e);
        if (rc) {
            *broken = 1;
            return rc;
        }
    }
    long long reply_ns = gr_now_ns();
    int in_step;
    rc = grc_req_reply(q, &c->rd, &h, &in_step, e);
    *broken = !in_step;
    if (rc == GRID_OK) {
        /* Recorded only once the call succeeded: the connection's cached address, no
         * system call on the call's path. */
        grid_call_times_np *t = &last_times;
        t->done_ns = gr_now_ns();
        t->request_id = id;
        t->sent_ns = sent_ns;
        t->reply_ns = reply_ns;
        snprintf(t->local, sizeof t->local, "%s", c->local);
        snprintf(t->server, sizeof t->server, "%s:%d", c->host, c->port);
        t->queue_ns = (long long)q->route.times.queue_ns;
        t->run_ns = (long long)q->route.times.run_ns;
        t->bytes_out = grp_call_bytes(q->t.name, q->call);
        t->bytes_in = grp_result_bytes(q->call);
        last_times_ok = 1;
    }
    return rc;
}

/* Sends Q on connection C and reads its reply. Returns GRID_OK or the error; sets
 * *broken when the connection cannot be reused. GEN: grid_interrupt_np's count when the
 * call started; once it moves, the call ends as canceled. */
static int exchange(grc_conn *c, grc_req *q, unsigned gen, int *broken, gr_err *e) {
    uint64_t id = c->next_id++;
    last_times_ok = 0;
    /* Watched from before the send: an interrupt during a large send ends the wait for
     * the reply at once. */
    int slot = grc_interrupt_watch(c->fd);
    int rc = exchange_watched(c, q, id, broken, e);
    grc_interrupt_unwatch(slot);
    if (rc && grc_interrupt_count() != gen) return interrupted(c, id, broken, e);
    return rc;
}

int grc_call(const char *name, const grc_args *args, gr_err *e) {
    /* Inside a transaction the call is recorded; it runs at grid_transaction_end. */
    if (grc_txn_active()) return grc_txn_record(name, args, e);
    grc_config cfg;
    grc_req q;
    /* From here: an interrupt while the server is found and the descriptor fetched
     * still stops the call before it is sent. */
    unsigned gen = grc_interrupt_count();
    int rc = grc_req_start(&q, name, args, &cfg, e);
    if (rc) return rc;
    rc = grc_req_run(&q, &cfg, gen, e);
    grc_req_free(&q);
    return rc;
}

int grc_req_run(grc_req *q, const grc_config *cfg, unsigned gen, gr_err *e) {
    int rc, resent = 0;
    for (;;) {
        /* Interrupted between tries (a failover, a resend): nothing more is sent. */
        if (grc_interrupt_count() != gen) {
            rc = gr_seterr(e, GRID_ERR_CANCELED, "the call was interrupted (Ctrl-C or grid_interrupt_np)");
            break;
        }
        grc_conn *c;
        rc = grc_conn_get(q->t.host, q->t.port, cfg, &c, e);
        if (rc) {
            /* The call never left: a server that does not answer the connection at all
             * is as failed as one that refuses it. */
            if (rc == GRID_ERR_TIMEOUT) e->code = rc = GRID_ERR_CONNECT;
            /* A resent call did leave once: its pooled connection closed as it left,
             * which is also what a server killed as the call arrived looks like. A
             * server that then no longer answers makes that a lost connection (the call
             * may have run), never "it never left", whatever the timing. */
            if (resent && rc == GRID_ERR_CONNECT)
                rc = gr_seterr(e, GRID_ERR_CONN_LOST,
                               "the server closed the connection during the call and no longer accepts "
                               "connections: it may have crashed or been stopped (check its log)");
            if (grc_req_failover(q, rc, e) == GRID_OK) continue;
            break;
        }
        rc = grc_req_check(q, &c->server, e);
        if (rc) {
            grc_conn_put(c, 0);
            break;
        }
        /* Data handles among the arguments: their data goes to this server first. */
        int place_failed = 0;
        rc = grc_req_place(q, cfg, &place_failed, e);
        if (rc) {
            grc_conn_put(c, 0);
            if (place_failed && grc_req_failover(q, rc, e) == GRID_OK) continue;
            break;
        }
        c->rd.deadline_ns = c->wr.deadline_ns = grc_config_deadline(cfg);
        int broken = 0;
        rc = exchange(c, q, gen, &broken, e);
        if (rc == GRID_ERR_TIMEOUT) {
            char tt[400];
            gr_seterr(e, GRID_ERR_TIMEOUT,
                      "no reply within the call timeout of %s; the call may still be running",
                      grc_timeout_text(cfg, tt, sizeof tt));
        }
        int stale = grc_conn_stale(c, rc, q->route.sent_ns);
        grc_conn_put(c, broken || rc == GRID_ERR_TIMEOUT);
        /* The server closed the pooled connection as the call left (idle): it never read
         * the call, so it goes once more, on a new connection, unless it must not run twice. */
        if (stale && !resent && !q->route.no_retry && !(q->desc && (q->desc->flags & GRD_FF_NO_RETRY))) {
            resent = 1;
            continue;
        }
        grc_req_settle(q, rc);
        if (rc == GRID_ERR_STALE) {
            if (grc_req_refresh(q, e) == GRID_OK) continue;
            break;
        }
        if (rc && grc_req_failover(q, rc, e) == GRID_OK) continue;
        break;
    }
    grc_req_end(q, rc);
    if (q->nbind) grc_data_flush(cfg); /* copies a KEEP made stale */
    if (!rc) __atomic_add_fetch(&grc_stat_calls, 1, __ATOMIC_RELAXED);
    if (rc) grc_req_blame(q, e);
    return rc;
}
