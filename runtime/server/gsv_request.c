/* gsv_request.c: answering each request a reader has read the header of: HELLO
 * (version and token), GET_DESCRIPTOR, LIST, PING, CANCEL, and CALL, whose arguments
 * are read whole into buffers the call owns before it is queued. Errors that leave the
 * stream in step are answered and the connection goes on; others close it. */
#include "config.h"

#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "gsv.h"

/* A request's body could not be read as it should. Errors that leave the stream in
 * step (bad arguments, a limit, an unknown function) are answered and the connection
 * goes on, once the rest of the message is skipped; anything else closes it. */
int gsv_request_failed(gsv_conn *c, const grw_header *h, const char *what, gr_err *e) {
    int code = e->code;
    if (code == GRID_ERR_CONN_LOST) {
        gsv_log(GSV_LOG_DEBUG, "%s: lost during %s: %s", c->peer, what, e->msg);
        return GSV_CLOSE;
    }
    if (code == GRID_ERR_TIMEOUT) {
        gsv_log(GSV_LOG_WARN, "%s: dropped: stalled in the middle of a %s for more than %g s (--io-timeout)",
                c->peer, what, c->srv->opt.io_timeout);
        gsv_conn_send_error(c, h->request_id, GRID_ERR_TIMEOUT,
                            "the server timed out waiting for the rest of the message (--io-timeout)");
        return GSV_REFUSE;
    }
    if (code != GRID_ERR_PROTOCOL) {
        gr_err se;
        if (grw_skip(&c->r, &se) == GRID_OK) {
            gsv_conn_send_error(c, h->request_id, code, e->msg);
            return GSV_KEEP;
        }
        if (se.code == GRID_ERR_CONN_LOST) return GSV_CLOSE;
        if (se.code == GRID_ERR_TIMEOUT) return gsv_request_failed(c, h, what, &se);
        if (code != GRID_ERR_LIMIT) code = GRID_ERR_PROTOCOL;
    }
    gsv_log(GSV_LOG_WARN, "%s: closing the connection: bad %s: %s", c->peer, what, e->msg);
    gsv_conn_send_error(c, h->request_id, code, e->msg);
    return GSV_REFUSE;
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
        return gsv_request_failed(c, h, "HELLO message", &e);
    }
    int result = GSV_KEEP;
    if (GRW_VERSION < vmin || GRW_VERSION > vmax) {
        char msg[200];
        snprintf(msg, sizeof msg, "the client speaks protocol versions %u to %u; this server speaks %u only",
                 vmin, vmax, GRW_VERSION);
        gsv_log(GSV_LOG_WARN, "%s: refused: %s", c->peer, msg);
        gsv_conn_send_error(c, h->request_id, GRID_ERR_PROTOCOL, msg);
        result = GSV_REFUSE;
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
            result = GSV_REFUSE;
        }
    }
    if (result == GSV_KEEP) {
        gsv_log(GSV_LOG_DEBUG, "%s: hello from '%s'", c->peer, client);
        gr_err we;
        grw_writer *w = gsv_reply_begin(c, GRW_HELLO_OK, h->request_id, 0, &we);
        if (!w) {
            result = GSV_CLOSE;
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
            if (gsv_reply_end(c, rc, &we)) result = GSV_CLOSE;
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
        return gsv_request_failed(c, h, "GET_DESCRIPTOR message", &e);
    }
    const gsv_function *f = gsv_registry_find(&c->srv->reg, name, &e);
    free(name);
    if (!f) return gsv_conn_send_error(c, h->request_id, e.code, e.msg) ? GSV_CLOSE : GSV_KEEP;
    grw_writer *w = gsv_reply_begin(c, GRW_DESCRIPTOR, h->request_id, f->stub->descriptor_len, &e);
    if (!w) return GSV_CLOSE;
    rc = grw_write_string(w, f->qualified, &e);
    if (!rc) rc = grw_write_opaque(w, f->stub->descriptor, (uint32_t)f->stub->descriptor_len, &e);
    return gsv_reply_end(c, rc, &e) ? GSV_CLOSE : GSV_KEEP;
}

static int on_ping(gsv_conn *c, const grw_header *h) {
    gr_err e;
    if (grw_end(&c->r, &e)) return gsv_request_failed(c, h, "PING message", &e);
    unsigned running, queued;
    gsv_sched_load(c->srv, &running, &queued);
    double load[1] = {0};
    if (getloadavg(load, 1) < 1) load[0] = 0;
    uint64_t bits;
    memcpy(&bits, &load[0], sizeof bits); /* XDR double: IEEE 754 big-endian */
    grw_writer *w = gsv_reply_begin(c, GRW_PONG, h->request_id, 0, &e);
    if (!w) return GSV_CLOSE;
    int rc = grw_write_u32(w, running, &e);
    if (!rc) rc = grw_write_u32(w, queued, &e);
    if (!rc) rc = grw_write_u32(w, c->srv->workers, &e);
    if (!rc) rc = grw_write_u32(w, c->srv->cores, &e);
    if (!rc) rc = grw_write_u64(w, bits, &e);
    return gsv_reply_end(c, rc, &e) ? GSV_CLOSE : GSV_KEEP;
}

static int on_list(gsv_conn *c, const grw_header *h) {
    gr_err e;
    if (grw_end(&c->r, &e)) return gsv_request_failed(c, h, "LIST message", &e);
    const gsv_registry *reg = &c->srv->reg;
    uint64_t bytes = 4;
    for (unsigned i = 0; i < reg->nfns; i++)
        bytes += 8 + strlen(reg->fns[i].qualified);
    grw_writer *w = gsv_reply_begin(c, GRW_LIST_OK, h->request_id, bytes, &e);
    if (!w) return GSV_CLOSE;
    int rc = grw_write_u32(w, reg->nfns, &e);
    for (unsigned i = 0; i < reg->nfns && !rc; i++)
        rc = grw_write_string(w, reg->fns[i].qualified, &e);
    return gsv_reply_end(c, rc, &e) ? GSV_CLOSE : GSV_KEEP;
}

/* Only queued calls can be canceled; a running one finishes and is answered as usual.
 * CANCEL has no reply of its own: the canceled call is answered ERROR
 * GRID_ERR_CANCELED. */
static int on_cancel(gsv_conn *c, const grw_header *h) {
    gr_err e;
    if (grw_end(&c->r, &e)) return gsv_request_failed(c, h, "CANCEL message", &e);
    gsv_job *job = gsv_sched_cancel(c->srv, c, h->request_id);
    if (job) gsv_call_fail(c->srv, job, GRID_ERR_CANCELED, "the call was canceled before it started");
    return GSV_KEEP;
}

/* Bytes of the arrays a CALL carries, known once its head is read. */
static uint64_t bulk_bytes(const grm_call *call) {
    uint64_t n = 0;
    for (uint32_t i = 0; i < call->desc->nparams; i++) {
        const grd_param *p = &call->desc->params[i];
        if (p->rank && p->type != GRD_STRING && p->type != GRD_FILENAME && grm_travels(p, GRM_TO_SERVER))
            n += call->sl[i].ext.sent_bytes;
    }
    return n;
}

static int on_call(gsv_conn *c, const grw_header *h) {
    gsv_server *s = c->srv;
    gr_err e;
    char *name = NULL;
    uint64_t hash = 0;
    int rc = grw_read_string(&c->r, 511, &name, &e);
    if (!rc) rc = grw_read_u64(&c->r, &hash, &e);
    if (rc) {
        free(name);
        return gsv_request_failed(c, h, "CALL message", &e);
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
        return gsv_request_failed(c, h, "CALL message", &e);
    }
    free(name);

    /* Only the job's header is zeroed: grm_init prepares as many argument slots as the
     * function has, not the whole table (a null call stays cheap). */
    gsv_job *job = malloc(offsetof(gsv_job, call) + grm_call_size(f->desc->nparams));
    if (job) memset(job, 0, offsetof(gsv_job, call));
    if (!job) {
        gr_seterr(&e, GRID_ERR_NOMEM, "the server is out of memory: retry later");
        return gsv_request_failed(c, h, "CALL message", &e);
    }
    gsv_conn_ref(c);
    job->conn = c;
    job->fn = f;
    job->request_id = h->request_id;
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
        return gsv_request_failed(c, h, "CALL message", &e);
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
        return GSV_KEEP;
    }
    if (gsv_sched_submit(s, job, &e) != GRID_OK) gsv_call_fail(s, job, e.code, e.msg);
    return GSV_KEEP;
}

int gsv_request_serve(gsv_conn *c, const grw_header *h) {
    switch (h->type) {
    case GRW_HELLO: return on_hello(c, h);
    case GRW_GET_DESCRIPTOR: return on_get_descriptor(c, h);
    case GRW_CALL: return on_call(c, h);
    case GRW_CANCEL: return on_cancel(c, h);
    case GRW_PING: return on_ping(c, h);
    case GRW_LIST: return on_list(c, h);
    }
    char msg[160];
    snprintf(msg, sizeof msg, "unexpected message %s (type %u) from a client", grw_type_name(h->type),
             h->type);
    gsv_log(GSV_LOG_WARN, "%s: closing the connection: %s", c->peer, msg);
    gsv_conn_send_error(c, h->request_id, GRID_ERR_PROTOCOL, msg);
    return GSV_REFUSE;
}
