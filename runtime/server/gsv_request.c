/* gsv_request.c: answering each request a reader has read the header of: HELLO
 * (version, token, then the key handshake of gsv_auth.c), GET_DESCRIPTOR, LIST, PING, PROBE, CANCEL, and
 * CALL, whose arguments are read whole into buffers the call owns before it is queued. Errors that leave the
 * stream in step are answered and the connection goes on; others close it. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grp_meta.h"
#include "grp_proto.h"
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
    grp_hello m;
    if (grp_read_hello(&c->r, &m, &e)) {
        if (e.code == GRID_ERR_CONN_LOST || e.code == GRID_ERR_TIMEOUT)
            return gsv_request_failed(c, h, "HELLO message", &e);
        return gdm_refuse_hello(&c->core, h->request_id, &e);
    }
    if (GRW_VERSION < m.min_version || GRW_VERSION > m.max_version) {
        char msg[200];
        snprintf(msg, sizeof msg, "the client speaks protocol versions %u to %u; this server speaks %u only",
                 m.min_version, m.max_version, GRW_VERSION);
        gsv_log(GSV_LOG_WARN, "%s: refused: %s", c->peer, msg);
        gsv_conn_send_error(c, h->request_id, GRID_ERR_PROTOCOL, msg);
        return GSV_REFUSE;
    }
    if (s->opt.token) {
        /* Compare every byte whatever the input, so timing does not reveal a prefix. */
        size_t n = strlen(s->opt.token), k = strlen(m.token);
        unsigned diff = n != k;
        for (size_t i = 0; i < k; i++)
            diff |= (unsigned char)m.token[i] ^ (unsigned char)s->opt.token[i % (n ? n : 1)];
        if (diff) {
            gsv_log(GSV_LOG_WARN, "%s: refused: wrong token (client '%s')", c->peer, m.client);
            gsv_conn_send_error(
                c, h->request_id, GRID_ERR_AUTH,
                "authentication failed: the token does not match the one this server requires: give the "
                "client the server's token (GRIDRPC_TOKEN, 'token' in the configuration file, "
                "grid_set_token_np)");
            return GSV_REFUSE;
        }
    }
    gsv_log(GSV_LOG_DEBUG, "%s: hello from '%s'", c->peer, m.client);
    grp_hello_ok ok;
    snprintf(ok.server, sizeof ok.server, "gridrpcd %s", PACKAGE_VERSION);
    ok.version = GRW_VERSION;
    ok.limits = s->opt.limits;
    ok.workers = s->workers;
    ok.cores = s->cores;
    return gsv_auth_hello(c, h, &m, &ok);
}

static int on_get_descriptor(gsv_conn *c, const grw_header *h) {
    gr_err e;
    char name[GRP_MAX_FUNCTION_NAME + 1];
    if (grp_read_get_descriptor(&c->r, name, &e))
        return gsv_request_failed(c, h, "GET_DESCRIPTOR message", &e);
    /* "Class.method" names a method of a remote object class (gsv_class.c). */
    const char *slash = strrchr(name, '/');
    const gsv_function *f = strchr(slash ? slash : name, '.') ? gsv_method_find(&c->srv->reg, name, &e)
                                                              : gsv_registry_find(&c->srv->reg, name, c, &e);
    if (!f) return gsv_conn_send_error(c, h->request_id, e.code, e.msg) ? GSV_CLOSE : GSV_KEEP;
    grw_writer *w = gsv_reply_lock(c, f->stub->descriptor_len);
    if (!w) return GSV_CLOSE;
    int rc = grp_write_descriptor(w, h->request_id, f->qualified, f->stub->descriptor,
                                  (uint32_t)f->stub->descriptor_len, &e);
    return gsv_reply_unlock(c, rc, &e) ? GSV_CLOSE : GSV_KEEP;
}

static int on_ping(gsv_conn *c, const grw_header *h) {
    gr_err e;
    if (grp_read_empty(&c->r, &e)) return gsv_request_failed(c, h, "PING message", &e);
    grp_pong m;
    gsv_sched_load(c->srv, &m.running, &m.queued);
    m.workers = c->srv->workers;
    m.cores = c->srv->cores;
    if (getloadavg(&m.loadavg, 1) < 1) m.loadavg = 0;
    grw_writer *w = gsv_reply_lock(c, 0);
    if (!w) return GSV_CLOSE;
    return gsv_reply_unlock(c, grp_write_pong(w, h->request_id, &m, &e), &e) ? GSV_CLOSE : GSV_KEEP;
}

static int on_list(gsv_conn *c, const grw_header *h) {
    gr_err e;
    if (grp_read_empty(&c->r, &e)) return gsv_request_failed(c, h, "LIST message", &e);
    const gsv_registry *reg = &c->srv->reg;
    uint64_t bytes = 4;
    const char **names = malloc((reg->nfns ? reg->nfns : 1) * sizeof *names);
    if (!names) {
        gr_seterr(&e, GRID_ERR_NOMEM, "the server is out of memory: retry later");
        return gsv_conn_send_error(c, h->request_id, e.code, e.msg) ? GSV_CLOSE : GSV_KEEP;
    }
    for (unsigned i = 0; i < reg->nfns; i++) {
        names[i] = reg->fns[i].qualified;
        bytes += 8 + strlen(names[i]);
    }
    grw_writer *w = gsv_reply_lock(c, bytes);
    int rc = w ? gsv_reply_unlock(c, grp_write_list_ok(w, h->request_id, names, reg->nfns, &e), &e) : -1;
    free(names);
    return rc ? GSV_CLOSE : GSV_KEEP;
}

/* The bandwidth probe: the payload is read and dropped, and REPLY bytes go back. The
 * protocol layer bounds both ways by GRP_MAX_PROBE and the reader by --max-message;
 * the time allowed grows with the bytes as for a CALL's bulk. */
static int on_probe(gsv_conn *c, const grw_header *h) {
    gr_err e;
    uint32_t len, reply;
    c->r.deadline_ns = gsv_io_deadline(c->srv, GRP_MAX_PROBE);
    if (grp_read_probe(&c->r, &len, &reply, &e)) return gsv_request_failed(c, h, "PROBE message", &e);
    gsv_log(GSV_LOG_DEBUG, "%s: probe: %u bytes in, %u bytes out", c->peer, len, reply);
    grw_writer *w = gsv_reply_lock(c, reply);
    if (!w) return GSV_CLOSE;
    return gsv_reply_unlock(c, grp_write_probe_ok(w, h->request_id, reply, &e), &e) ? GSV_CLOSE : GSV_KEEP;
}

/* A queued call is dropped; a running one is flagged (grpc_is_canceled_np) and
 * answered as usual, or, run in an executor, ended after a short grace (gsv_exec.c). CANCEL has no
 * reply of its own: the canceled call is answered ERROR GRID_ERR_CANCELED. */
static int on_cancel(gsv_conn *c, const grw_header *h) {
    gr_err e;
    if (grp_read_empty(&c->r, &e)) return gsv_request_failed(c, h, "CANCEL message", &e);
    gsv_callback_cancel(c, h->request_id);
    gsv_job *job = gsv_sched_cancel(c->srv, c, h->request_id);
    if (!job) job = gsv_object_cancel(c, h->request_id); /* waiting for its object's turn */
    if (job) gsv_call_fail(c->srv, job, GRID_ERR_CANCELED, "the call was canceled before it started");
    return GSV_KEEP;
}

/* CALL's job: answered on its connection, in an executor process (gsv_exec_runs); a failed
 * callback (gsv_callback.c) fails it, and its callbacks go with it. */
static const gsv_job_kind call_kind = {.where = GSV_WHERE_ISOLABLE,
                                       .run = gsv_call_answer,
                                       .fail = gsv_call_refuse,
                                       .ran = gsv_callback_failed,
                                       .release = gsv_callback_detach};

static int on_call(gsv_conn *c, const grw_header *h) {
    gsv_server *s = c->srv;
    gr_err e;
    grp_call_target t;
    if (grp_read_call_target(&c->r, &t, &e)) return gsv_request_failed(c, h, "CALL message", &e);
    const gsv_function *f = gsv_registry_find(&s->reg, t.name, c, &e);
    int stale = f && t.hash != f->desc->hash;
    if (stale)
        gr_seterr(
            &e, GRID_ERR_STALE,
            "the interface of %s changed on the server (descriptor hash %016llx, the client used %016llx): "
            "fetch the descriptor again",
            f->qualified, (unsigned long long)f->desc->hash, (unsigned long long)t.hash);
    if (!f || stale) {
        gsv_call_log(c->peer, t.name, h->request_id, c->r.consumed, 0, 0, 0, e.code, e.msg);
        return gsv_request_failed(c, h, "CALL message", &e);
    }

    gsv_job *job = gsv_job_new(&call_kind, s, c, f, h->request_id);
    if (!job) {
        gr_seterr(&e, GRID_ERR_NOMEM, "the server is out of memory: retry later");
        return gsv_request_failed(c, h, "CALL message", &e);
    }
    return gsv_request_queue_call(s, c, job, f, h, NULL, "CALL message");
}

int gsv_request_queue_call(gsv_server *s, gsv_conn *c, gsv_job *job, const gsv_function *f,
                           const grw_header *h, int (*bind)(gsv_job *, gr_err *), const char *what) {
    gr_err e;
    gr_clearerr(&e);
    if (gsv_call_read_args(s, c, job, bind, &e)) {
        /* A peer that left or stalled is not the call's failure: nothing to log. */
        if (e.code != GRID_ERR_CONN_LOST && e.code != GRID_ERR_TIMEOUT)
            gsv_call_log(c->peer, f->qualified, h->request_id, c->r.consumed, 0, 0, 0, e.code, e.msg);
        gsv_job_free(job);
        return gsv_request_failed(c, h, what, &e);
    }
    gsv_call_queue(s, job);
    return GSV_KEEP;
}

int gsv_call_read_args(gsv_server *s, gsv_conn *c, gsv_job *job, int (*bind)(gsv_job *, gr_err *),
                       gr_err *e) {
    int rc = grp_read_call_head(&c->r, &job->call, &s->opt.limits, e);
    if (rc) gsv_limits_name_array(e);
    if (!rc && bind) rc = bind(job, e);
    /* A call an executor runs receives its large arrays where the executor maps them. */
    job->call.share = (unsigned char)gsv_exec_runs(s, job);
    /* The head says how many bytes follow and what the results take: counted against
     * the limits before anything is allocated (over one, the caller skips the rest and
     * answers LIMIT). */
    if (!rc) rc = gsv_limits_read_call(s, c, job, e);
    job->bytes_in = c->r.consumed;
    return rc;
}

void gsv_call_queue(gsv_server *s, gsv_job *job) {
    gr_err e;
    if (s->opt.queue == GSV_QUEUE_SJF) {
        grd_error de;
        if (grd_cost(job->fn->desc, job->call.ival, &job->cost, &de) != GRD_OK) {
            /* A cost that cannot be evaluated (overflow) is at least huge. */
            job->cost = 1e300;
        }
    }
    job->t_queued = gr_now_ns();
    if (gsv_callback_attach(s, job, &e) != GRID_OK) {
        gsv_call_fail(s, job, e.code, e.msg);
        return;
    }
    if (atomic_load(&s->stopping)) {
        gsv_call_fail(s, job, GRID_ERR_SHUTDOWN, "the server is shutting down: retry on another server");
        return;
    }
    if (gsv_sched_submit(s, job, &e) != GRID_OK) gsv_call_fail(s, job, e.code, e.msg);
}

int gsv_request_serve(gsv_conn *c, const grw_header *h) {
    switch (h->type) {
    case GRP_HELLO: return on_hello(c, h);
    case GRP_GET_DESCRIPTOR: return on_get_descriptor(c, h);
    case GRP_CALL: return on_call(c, h);
    case GRP_CANCEL: return on_cancel(c, h);
    case GRP_PING: return on_ping(c, h);
    case GRP_LIST: return on_list(c, h);
    case GRP_PROBE: return on_probe(c, h);
    case GRP_CALLBACK_RESULT: return gsv_callback_result(c, h);
    case GRP_DATA_PUT:
    case GRP_DATA_GET:
    case GRP_DATA_FREE:
    case GRP_DATA_COPY:
    case GRP_SESSION_END:
    case GRP_CALL_DATA: return gsv_data_request(c, h);
    case GRP_OBJ_CREATE:
    case GRP_OBJ_INVOKE:
    case GRP_OBJ_DESTROY: return gsv_object_request(c, h);
    /* two-phase calls: gsv_jobs.c */
    case GRP_SUBMIT: return gsv_jobs_submit(c, h);
    case GRP_FETCH: return gsv_jobs_fetch(c, h);
    case GRP_JOBS: return gsv_jobs_list(c, h);
    case GRP_FORGET: return gsv_jobs_forget(c, h);
    case GRP_JOB_INFO: return gsv_jobs_info(c, h);
    case GRP_JOB_CANCEL: return gsv_jobs_cancel(c, h);
    }
    char msg[160];
    snprintf(msg, sizeof msg, "unexpected message %s (type %u) from a client", grp_type_name(h->type),
             h->type);
    gsv_log(GSV_LOG_WARN, "%s: closing the connection: %s", c->peer, msg);
    gsv_conn_send_error(c, h->request_id, GRID_ERR_PROTOCOL, msg);
    return GSV_REFUSE;
}
