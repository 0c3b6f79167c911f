/* gsv_callback.c: client callbacks during a call (Ninf IDL 'cb(IN double c[n], ...)').
 * The body calls the C function its stub made for a callback; that lands in cb_call on
 * the worker thread, which sends CALLBACK on the call's connection and sleeps until
 * the connection's reader thread has read the client's CALLBACK_RESULT straight into
 * the body's buffers (gsv_callback_result), the connection ends, or the client cancels
 * the call. Pipelined calls of one connection each wait for their own answer: answers
 * are matched by request id, and by callback number and sequence number.
 *
 * A failed callback (the client passed no function, its answer was malformed, the
 * connection ended) fails the whole call: the body's function returns the error, later
 * callbacks of the call return it at once, and the call is answered ERROR instead of
 * RESULT. A function in an executor calls its callbacks through the worker that runs
 * it (gsv_exec.c's run_callback, gsv_callback_run): the same path, with the arguments
 * in memory both processes map.
 *
 * Locking: cb_lock guards the list of waiting callbacks and their state; it is never
 * held while reading or writing a socket. A waiter being filled by the reader is marked
 * 'reading', so only the reader finishes it. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grp_proto.h"
#include "gsv.h"

struct gsv_callbacks {
    gsv_job *job;
    gridrpc_stub_callback stub[GRD_MAX_PARAMS]; /* the argument vector's entries */
    grd_desc *desc[GRD_MAX_PARAMS];             /* each callback's descriptor, made at its first use */
    uint32_t seq;                               /* callbacks sent so far */
    int failed;                                 /* the first failure's code: the call's result */
    char msg[GRP_MAX_ERROR_MESSAGE + 1];
    /* Under cb_lock: the connection's reader ended (no answer can come any more), and
     * the callback in flight. */
    int conn_gone;
    int waiting, reading, done, code;
    uint32_t wait_index, wait_seq;
    grm_call *wait_call;
    char wait_msg[GRP_MAX_ERROR_MESSAGE + 1];
    pthread_cond_t cond;
    struct gsv_callbacks *next;                /* the waiting list */
    struct gsv_callbacks *all_prev, *all_next; /* every attached call's, for conn_closed */
};

static pthread_mutex_t cb_lock = PTHREAD_MUTEX_INITIALIZER;
static gsv_callbacks *waiting, *all;

/* Records the call's failure (the first one counts) and returns its code. */
static int fail(gsv_callbacks *cs, uint32_t index, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(gsv_callbacks *cs, uint32_t index, int code, const char *fmt, ...) {
    if (cs->failed) return cs->failed;
    char why[GRP_MAX_ERROR_MESSAGE + 1];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    cs->failed = code;
    snprintf(cs->msg, sizeof cs->msg, "callback '%s' (argument %u): %.3700s",
             cs->job->fn->desc->params[index].name, index + 1, why);
    gsv_log(GSV_LOG_DEBUG, "%s: %s id=%llu: %s", cs->job->conn->peer, cs->job->fn->qualified,
            (unsigned long long)cs->job->request_id, cs->msg);
    return code;
}

static void unlist(gsv_callbacks *cs) {
    for (gsv_callbacks **pp = &waiting; *pp; pp = &(*pp)->next)
        if (*pp == cs) {
            *pp = cs->next;
            break;
        }
    cs->waiting = 0;
}

/* Finishes the waiter CS with CODE (MSG), cb_lock held. */
static void finish(gsv_callbacks *cs, int code, const char *msg) {
    cs->done = 1;
    cs->code = code;
    snprintf(cs->wait_msg, sizeof cs->wait_msg, "%s", msg ? msg : "");
    pthread_cond_signal(&cs->cond);
}

/* The stub's entry: runs callback SELF->index of the current call with ARGS (the body's
 * buffers, in the argument vector's layout). On the worker thread running the body. */
static int cb_call(const gridrpc_stub_callback *self, void **args) {
    gsv_callbacks *cs = self->server;
    gsv_job *job = cs->job;
    gsv_server *s = job->conn->srv;
    uint32_t idx = self->index;
    gr_err e;
    if (cs->failed) return cs->failed;
    if (atomic_load(&job->canceled)) return fail(cs, idx, GRID_ERR_CANCELED, "the call was canceled");
    const grd_desc *d = gsv_callback_desc(job, idx, &e);
    if (!d) return fail(cs, idx, e.code, "%s", e.msg);
    grm_call *c = malloc(grm_call_size(d->nparams));
    if (!c) return fail(cs, idx, GRID_ERR_NOMEM, "the server is out of memory");
    grw_limits lim;
    grp_limits_default(&lim);
    if (grm_from_argv(c, d, args, &lim, &e)) {
        free(c);
        return fail(cs, idx, e.code, "the body passed bad arguments: %s", e.msg);
    }
    uint32_t seq = ++cs->seq;
    pthread_mutex_lock(&cb_lock);
    if (cs->conn_gone) {
        pthread_mutex_unlock(&cb_lock);
        free(c);
        return fail(cs, idx, GRID_ERR_CONN_LOST, "the connection to the client ended");
    }
    cs->waiting = 1;
    cs->reading = cs->done = 0;
    cs->code = GRID_OK;
    cs->wait_index = idx;
    cs->wait_seq = seq;
    cs->wait_call = c;
    cs->next = waiting;
    waiting = cs;
    pthread_mutex_unlock(&cb_lock);

    int rc = GRID_ERR_CONN_LOST;
    grw_writer *w = gsv_reply_lock(job->conn, grp_callback_bytes(c, GRM_TO_SERVER));
    if (w) {
        rc = grp_write_callback(w, job->request_id, idx, seq, c, &s->opt.limits, &e);
        gsv_reply_unlock(job->conn, rc, &e);
    } else {
        gr_seterr(&e, GRID_ERR_CONN_LOST, "the connection to the client was lost");
    }
    pthread_mutex_lock(&cb_lock);
    if (rc && !cs->reading) finish(cs, e.code ? e.code : rc, e.msg);
    while (!cs->done)
        pthread_cond_wait(&cs->cond, &cb_lock);
    unlist(cs);
    cs->wait_call = NULL;
    int code = cs->code;
    char msg[GRP_MAX_ERROR_MESSAGE + 1];
    memcpy(msg, cs->wait_msg, sizeof msg);
    pthread_mutex_unlock(&cb_lock);
    /* Not grm_release: what arrived (OUT strings) belongs to the body now. */
    free(c);
    if (code) return fail(cs, idx, code, "%s", msg);
    return GRID_OK;
}

const grd_desc *gsv_callback_desc(gsv_job *job, uint32_t index, gr_err *e) {
    gsv_callbacks *cs = job->cb;
    if (!cs || index >= job->fn->desc->nparams || job->fn->desc->params[index].type != GRD_CALLBACK) {
        gr_seterr(e, GRID_ERR_PROTOCOL, "parameter %u of %s is no callback", index + 1, job->fn->qualified);
        return NULL;
    }
    if (!cs->desc[index]) {
        grd_error ge;
        if (grd_callback_desc(job->fn->desc, index, job->call.ival, &cs->desc[index], &ge) != GRD_OK) {
            gr_seterr(e, GRID_ERR_ARGS, "its parameters cannot be sized: %s", ge.msg);
            return NULL;
        }
    }
    return cs->desc[index];
}

int gsv_callback_run(gsv_job *job, uint32_t index, void **args) {
    return cb_call(&job->cb->stub[index], args);
}

int gsv_callback_attach(gsv_server *s, gsv_job *job, gr_err *e) {
    (void)s;
    const grd_desc *d = job->fn->desc;
    job->cb = NULL;
    if (grd_callback_count(d) == 0) return GRID_OK;
    gsv_callbacks *cs = calloc(1, sizeof *cs);
    if (!cs) return gr_seterr(e, GRID_ERR_NOMEM, "the server is out of memory: retry later");
    cs->job = job;
    pthread_cond_init(&cs->cond, NULL);
    for (uint32_t i = 0; i < d->nparams; i++)
        if (d->params[i].type == GRD_CALLBACK) {
            cs->stub[i].call = cb_call;
            cs->stub[i].server = cs;
            cs->stub[i].index = i;
            job->call.ptr[i] = &cs->stub[i];
        }
    job->cb = cs;
    pthread_mutex_lock(&cb_lock);
    cs->all_next = all;
    if (all) all->all_prev = cs;
    all = cs;
    pthread_mutex_unlock(&cb_lock);
    return GRID_OK;
}

int gsv_callback_failed(gsv_job *job, gr_err *e) {
    if (!job->cb || !job->cb->failed) return GRID_OK;
    return gr_seterr(e, job->cb->failed, "%s", job->cb->msg);
}

void gsv_callback_detach(gsv_job *job) {
    gsv_callbacks *cs = job->cb;
    if (!cs) return;
    pthread_mutex_lock(&cb_lock);
    if (cs->all_prev)
        cs->all_prev->all_next = cs->all_next;
    else
        all = cs->all_next;
    if (cs->all_next) cs->all_next->all_prev = cs->all_prev;
    pthread_mutex_unlock(&cb_lock);
    for (uint32_t i = 0; i < GRD_MAX_PARAMS; i++)
        grd_free(cs->desc[i]);
    pthread_cond_destroy(&cs->cond);
    free(cs);
    job->cb = NULL;
}

/* The waiter of call REQUEST_ID on C, cb_lock held; NULL when none waits. */
static gsv_callbacks *find(const gsv_conn *c, uint64_t request_id) {
    for (gsv_callbacks *cs = waiting; cs; cs = cs->next)
        if (cs->job->conn == c && cs->job->request_id == request_id && !cs->done) return cs;
    return NULL;
}

/* Skips the rest of a message whose answer no longer matters; GSV_CLOSE when the
 * stream cannot be kept in step. */
static int skip_rest(gsv_conn *c) {
    gr_err e;
    return grw_skip(&c->r, &e) == GRID_OK ? GSV_KEEP : GSV_CLOSE;
}

int gsv_callback_result(gsv_conn *c, const grw_header *h) {
    gr_err e;
    grp_callback_status st;
    int rc = grp_read_callback_status(&c->r, &st, &e);
    pthread_mutex_lock(&cb_lock);
    gsv_callbacks *cs = find(c, h->request_id);
    if (cs) cs->reading = 1;
    pthread_mutex_unlock(&cb_lock);
    if (!cs) {
        /* Late (the call was canceled meanwhile) or unsolicited: nothing waits for it. */
        gsv_log(GSV_LOG_DEBUG, "%s: CALLBACK_RESULT for request %llu, which waits for no callback: ignored",
                c->peer, (unsigned long long)h->request_id);
        return rc ? GSV_CLOSE : skip_rest(c);
    }
    int code = GRID_OK, keep = GSV_KEEP;
    char msg[GRP_MAX_ERROR_MESSAGE + 1] = "";
    if (rc) {
        code = e.code == GRID_ERR_CONN_LOST ? GRID_ERR_CONN_LOST : GRID_ERR_PROTOCOL;
        snprintf(msg, sizeof msg, "the client's answer was malformed: %.3900s", e.msg);
        keep = GSV_CLOSE;
    } else if (st.index != cs->wait_index || st.seq != cs->wait_seq) {
        code = GRID_ERR_PROTOCOL;
        snprintf(msg, sizeof msg, "the client answered callback %u #%u while callback %u #%u waited",
                 st.index + 1, st.seq, cs->wait_index + 1, cs->wait_seq);
        keep = GSV_CLOSE;
    } else if (st.code != GRID_OK) {
        code = st.code;
        snprintf(msg, sizeof msg, "the client could not run it: %.3900s",
                 st.message[0] ? st.message : grid_error_string(code));
    } else {
        c->r.deadline_ns = gsv_io_deadline(c->srv, grp_callback_bytes(cs->wait_call, GRM_TO_CLIENT));
        if (grp_read_callback_result_args(&c->r, cs->wait_call, &e) != GRID_OK) {
            /* Wrong sizes or types: refused, and the stream goes on when it can. */
            code = e.code == GRID_ERR_CONN_LOST || e.code == GRID_ERR_TIMEOUT ? e.code : GRID_ERR_PROTOCOL;
            snprintf(msg, sizeof msg, "the client's answer was refused: %.3900s", e.msg);
            keep = code == GRID_ERR_PROTOCOL ? skip_rest(c) : GSV_CLOSE;
        }
    }
    if (code) gsv_log(GSV_LOG_WARN, "%s: request %llu: %s", c->peer, (unsigned long long)h->request_id, msg);
    pthread_mutex_lock(&cb_lock);
    cs->reading = 0;
    finish(cs, code, msg);
    pthread_mutex_unlock(&cb_lock);
    return keep;
}

void gsv_callback_cancel(gsv_conn *c, uint64_t request_id) {
    pthread_mutex_lock(&cb_lock);
    gsv_callbacks *cs = find(c, request_id);
    if (cs && !cs->reading) finish(cs, GRID_ERR_CANCELED, "the call was canceled while the callback ran");
    pthread_mutex_unlock(&cb_lock);
}

void gsv_callback_conn_closed(gsv_conn *c) {
    pthread_mutex_lock(&cb_lock);
    /* Later callbacks of these calls fail at once: nothing would read their answers. */
    for (gsv_callbacks *cs = all; cs; cs = cs->all_next)
        if (cs->job->conn == c) cs->conn_gone = 1;
    for (gsv_callbacks *cs = waiting; cs; cs = cs->next)
        if (cs->job->conn == c && !cs->done && !cs->reading)
            finish(cs, GRID_ERR_CONN_LOST, "the connection to the client ended while the callback ran");
    pthread_mutex_unlock(&cb_lock);
}
