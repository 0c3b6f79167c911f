/* grc_txn_run.c: running a transaction at its end. Every call whose RAW predecessors
 * are done starts at once on the asynchronous engine (grc_async.c), each placed by the
 * metaserver (its own SCHEDULE: ready calls spread over the servers) or sent to the
 * configured server; the engine's own failover is off for them, because the
 * transaction reruns a call itself: on another server (the failed ones excluded in
 * SCHEDULE), a bounded number of times (a call whose server vanished at most 'retries'
 * times, as a plain call; one whose function crashed never), with the same inputs, which are still there:
 * a call's inputs are assembled into its private stage from the caller's untouched
 * memory and the stages of the calls before it, and its outputs go to its own stages.
 * Only when every call is done do the outputs land in the caller's memory, in program
 * order; a failed transaction leaves the caller's memory as it was. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grc_txn.h"

static int is_text(uint32_t type) {
    return type == GRD_STRING || type == GRD_FILENAME;
}

/* Fills C's argument vector: the caller's pointer for an IN array no earlier call
 * writes, else a stage holding the input as the calls before it leave it (and room for
 * the output). */
static int stage(grc_txn *x, grc_txn_call *c, gr_err *e) {
    const grd_desc *d = c->desc;
    for (uint32_t i = 0; i < d->nparams; i++) {
        const grd_param *p = &d->params[i];
        c->argv[i] = &c->val[i];
        if (p->mode == GRD_WORK)
            c->argv[i] = NULL;
        else if (p->type == GRD_CALLBACK)
            c->argv[i] = c->fn[i];
        else if (is_text(p->type) && p->rank > 0)
            c->argv[i] = c->user_ptr[i];
        else if (p->type == GRD_STRING && p->mode != GRD_IN) {
            if (c->sout[i] != c->str[i]) free(c->sout[i]); /* a failed attempt's */
            c->sout[i] = p->mode == GRD_INOUT ? c->str[i] : NULL;
            c->argv[i] = &c->sout[i];
        } else if (is_text(p->type))
            c->argv[i] = &c->str[i];
    }
    for (uint32_t j = 0; j < c->narg; j++) {
        grc_txn_arg *a = &c->arg[j];
        int written_before = 0;
        if (a->handle) { /* the caller's data handle: the call binds it itself */
            c->argv[a->param] = a->user;
            continue;
        }
        if (a->src >= 0 && !a->writes) { /* a handle on the servers stands for it: never read */
            c->argv[a->param] = a->user;
            continue;
        }
        if (a->reads && a->src < 0)
            for (int k = 0; k < c->index && !written_before; k++)
                for (uint32_t b = 0; b < x->call[k].narg && !written_before; b++)
                    written_before = x->call[k].arg[b].writes && x->call[k].arg[b].lo < a->hi &&
                                     a->lo < x->call[k].arg[b].hi;
        if (!a->writes && !written_before) {
            c->argv[a->param] = a->user;
            continue;
        }
        if (!a->stage && a->bytes) {
            a->stage = malloc(a->bytes);
            if (!a->stage)
                return gr_seterr(e, GRID_ERR_NOMEM, "out of memory staging a transaction's arrays");
        }
        if (a->scalar)
            memcpy(a->stage, &c->val[a->param], a->es);
        else if (a->src >= 0)
            ; /* its input is a handle; the stage only receives the output */
        else if (a->reads && a->bytes)
            memcpy(a->stage, a->user, a->bytes);
        else if (a->bytes)
            memset(a->stage, 0, a->bytes);
        /* Earlier outputs over this input, in program order: the last writer wins. */
        if (written_before)
            for (int k = 0; k < c->index; k++)
                for (uint32_t b = 0; b < x->call[k].narg; b++)
                    if (x->call[k].arg[b].writes) grc_txn_overlay(&x->call[k].arg[b], a);
        c->argv[a->param] = a->stage;
    }
    return GRID_OK;
}

/* The asynchronous engine's starter for call C (CTX): its target and arguments. */
static int starter(grc_req *q, const void *ctx, const grc_args *args, grc_config *cfg, gr_err *e) {
    grc_txn_call *c = (grc_txn_call *)ctx; /* the engine passes it back as given */
    memset(&q->t, 0, sizeof q->t);
    grc_route_reset(&q->route);
    q->desc = NULL;
    q->call = NULL;
    q->refreshed = 0;
    q->object = (grp_object_id){0, 0};
    int rc = grc_config_get(cfg, e);
    if (!rc && c->routed && !cfg->meta_host[0])
        rc = gr_seterr(e, GRID_ERR_CONFIG,
                       "the metaserver setting was removed while the transaction was open: %s has no server",
                       c->t.name);
    grc_txn *x = c->txn;
    if (!rc && c->routed) {
        q->route.no_retry = 1;             /* the transaction reruns it, with its upstream results */
        grc_txn_affinity(x, c, &q->route); /* where its kept inputs already are */
        /* A call too small to be worth a decision reuses one, as a plain call would
         * (grc_meta.c); one whose inputs already lie on servers asks, to go there. */
        q->route.no_reuse = q->route.naffinity > 0;
        for (int f = 0; f < c->nfailed; f++) {
            grc_target ft;
            memset(&ft, 0, sizeof ft);
            snprintf(ft.host, sizeof ft.host, "%s", c->failed[f].host);
            ft.port = c->failed[f].port;
            q->route.server_id = c->failed[f].server_id;
            grc_route_failed(&q->route, &ft, c->failed[f].code, "");
        }
        q->route.server_id = 0;
        rc = grc_meta_start(q, c->t.name, args, cfg, e);
    } else if (!rc) {
        q->t = c->t;
        q->desc = c->desc;
        rc = grc_req_fill(q, args, e);
    }
    if (!rc) rc = grc_txn_bind(x, c, q, e);
    if (rc) {
        grc_req_free(q);
        return rc;
    }
    snprintf(c->host, sizeof c->host, "%s", q->t.host);
    c->port = q->t.port;
    c->server_id = q->route.server_id;
    return GRID_OK;
}

/* "call 3 of 5 (linalg/dgesl)" */
static const char *call_name(const grc_txn *x, const grc_txn_call *c, char *buf, size_t n) {
    snprintf(buf, n, "call %d of %d (%s)", c->index + 1, x->ncalls, c->t.name);
    return buf;
}

/* C's server failed it with CODE (MSG): noted for its exclusion and the message. GRID_OK
 * when C may run again elsewhere; otherwise the error that ends the transaction. */
static int server_failed(const grc_txn *x, grc_txn_call *c, int code, const char *msg, gr_err *e) {
    char nm[GRC_MAX_NAME + 64];
    size_t used = strlen(c->cause);
    snprintf(c->cause + used, sizeof c->cause - used, "%s%s:%d (%s)", used ? ", " : "", c->host, c->port,
             grc_failure_words(code, msg));
    if (c->nfailed < GRC_TXN_MAX_ATTEMPTS) {
        grc_txn_failure *f = &c->failed[c->nfailed++];
        snprintf(f->host, sizeof f->host, "%s", c->host);
        f->port = c->port;
        f->server_id = c->server_id;
        f->code = code;
    }
    call_name(x, c, nm, sizeof nm);
    if (!c->routed)
        return gr_seterr(e, code,
                         "%s: no server could run it: %s; no other server (no metaserver is configured)", nm,
                         c->cause);
    if (c->desc->flags & GRD_FF_NO_RETRY)
        return gr_seterr(
            e, code,
            "%s: no server could run it: %s; not run again: the function must not run twice (IDL "
            "Retry \"no\")",
            nm, c->cause);
    if (c->nfailed >= GRC_TXN_MAX_ATTEMPTS)
        return gr_seterr(e, code, "%s: no server could run it after %d attempts: %s", nm, c->nfailed,
                         c->cause);
    if (grc_code_is_server_lost(code)) {
        grc_config cfg;
        char rt[360];
        if (grc_config_get(&cfg, e)) return e->code;
        if (c->nlost >= cfg.retries)
            return gr_seterr(e, code,
                             "%s: no server could run it: %s; not run again: its server vanished %d time%s "
                             "and retries are %s",
                             nm, c->cause, c->nlost + 1, c->nlost ? "s" : "",
                             grc_retries_text(&cfg, rt, sizeof rt));
        c->nlost++;
    }
    return GRID_OK;
}

/* C's kept inputs were lost with their servers (E: MSG): C waits for their producers,
 * which run again. */
static int recompute(grc_txn *x, grc_txn_call *c, int n, int code, const char *msg, grc_txn_stats *st,
                     gr_err *e) {
    char nm[GRC_MAX_NAME + 64];
    c->state = GRC_TXN_WAITING;
    st->recomputed += n;
    st->reruns++;
    if (++c->recomputed < GRC_TXN_MAX_ATTEMPTS) return GRID_OK;
    return gr_seterr(e, code, "%s: its inputs kept on servers were lost %d times (the last: %s)",
                     call_name(x, c, nm, sizeof nm), c->recomputed, msg);
}

typedef struct running {
    int *id, *call;
    int n;
} running;

/* Starts C (its inputs staged), on another server each time its server fails. */
static int launch(grc_txn *x, grc_txn_call *c, running *r, grc_txn_stats *st, gr_err *e) {
    char nm[GRC_MAX_NAME + 64];
    for (;;) {
        int rc = grc_txn_make_handles(c, e);
        if (!rc) rc = stage(x, c, e);
        if (rc) return rc;
        c->host[0] = '\0';
        grc_args args = {NULL, c->argv, (int)c->desc->nparams};
        gr_err se;
        gr_clearerr(&se);
        int id = grc_call_async_req(starter, c, &args, &se);
        if (id > 0) {
            c->id = id;
            c->state = GRC_TXN_RUNNING;
            r->id[r->n] = id;
            r->call[r->n++] = c->index;
            return GRID_OK;
        }
        int code = -id;
        /* A kept input that no server holds any more: its producer runs again first. */
        int lost = code != GRID_ERR_CRASHED ? grc_txn_lost_inputs(x, c) : 0;
        if (lost) return recompute(x, c, lost, code, se.msg, st, e);
        if (c->host[0] && grc_code_is_server_failure(code)) {
            rc = server_failed(x, c, code, se.msg, e);
            if (rc) return rc;
            st->reruns++;
            continue;
        }
        call_name(x, c, nm, sizeof nm);
        if (c->nfailed)
            return gr_seterr(e, code, "%s: no server could run it: %s; then: %s", nm, c->cause, se.msg);
        return gr_seterr(e, code, "%s: %s", nm, se.msg);
    }
}

static void land(grc_txn *x) {
    for (int k = 0; k < x->ncalls; k++) {
        grc_txn_call *c = &x->call[k];
        for (uint32_t j = 0; j < c->narg; j++)
            if (c->arg[j].writes && (!c->arg[j].keep || c->arg[j].ret)) grc_txn_land(&c->arg[j]);
        for (uint32_t i = 0; i < c->desc->nparams; i++) {
            const grd_param *p = &c->desc->params[i];
            if (p->type != GRD_STRING || p->rank > 0 || p->mode == GRD_IN || !c->user_ptr[i]) continue;
            /* The caller owns the result (a malloc'd string), as after a plain call. */
            *(char **)c->user_ptr[i] = c->sout[i] == c->str[i] ? (c->str[i] = NULL, c->sout[i]) : c->sout[i];
            c->sout[i] = NULL;
        }
    }
}

static long count_servers(const grc_txn *x) {
    long n = 0;
    for (int k = 0; k < x->ncalls; k++) {
        const grc_txn_call *c = &x->call[k];
        int seen = 0;
        for (int j = 0; j < k && !seen; j++)
            seen = x->call[j].port == c->port && strcmp(x->call[j].host, c->host) == 0;
        n += !seen && c->host[0];
    }
    return n;
}

int grc_txn_execute(grc_txn *x, grc_txn_stats *st, gr_err *e) {
    long long t0 = gr_now_ns();
    st->calls = x->ncalls;
    int rc = grc_txn_graph(x, st, e);
    for (int k = 0; k < x->ncalls; k++)
        x->call[k].txn = x;
    if (!rc) grc_txn_plan(x, st);
    running r = {malloc((size_t)(x->ncalls + 1) * sizeof(int)), malloc((size_t)(x->ncalls + 1) * sizeof(int)),
                 0};
    if (!rc && (!r.id || !r.call)) rc = gr_seterr(e, GRID_ERR_NOMEM, "out of memory running a transaction");
    int done = 0, idle = 0;
    char nm[GRC_MAX_NAME + 64];
    while (!rc && done < x->ncalls) {
        for (int k = 0; k < x->ncalls && !rc; k++) {
            grc_txn_call *c = &x->call[k];
            if (c->state != GRC_TXN_WAITING) continue;
            int ready = 1;
            for (int j = 0; j < c->ndeps && ready; j++)
                ready = x->call[c->deps[j]].state == GRC_TXN_DONE;
            if (ready) rc = launch(x, c, &r, st, e);
        }
        if (rc) break;
        if (r.n == 0) { /* a call found its kept inputs lost: their producers start next round */
            if (++idle > x->ncalls + 1)
                rc = gr_seterr(e, GRID_ERR_INTERNAL, "the transaction has calls left but none can start");
            continue;
        }
        idle = 0;
        int id;
        const char *msg;
        int code = grc_wait_any(r.id, r.n, &id, &msg);
        int at = 0;
        while (at < r.n && r.id[at] != id)
            at++;
        if (at == r.n) {
            rc = gr_seterr(e, GRID_ERR_INTERNAL, "a transaction call finished that was not running: %s", msg);
            break;
        }
        grc_txn_call *c = &x->call[r.call[at]];
        r.id[at] = r.id[r.n - 1];
        r.call[at] = r.call[r.n - 1];
        r.n--;
        char m[1024];
        snprintf(m, sizeof m, "%s", msg);
        grc_forget(id);
        c->id = 0;
        /* Its kept inputs that lived only on a failed server: their producers run again. A
         * call whose function crashed ends the transaction: it would crash again. */
        int lost = code != GRID_OK && code != GRID_ERR_CRASHED ? grc_txn_lost_inputs(x, c) : 0;
        if (code == GRID_OK) {
            c->state = GRC_TXN_DONE;
        } else if (grc_code_is_server_failure(code)) {
            rc = server_failed(x, c, code, m, e);
            if (!rc && lost) rc = recompute(x, c, lost, code, m, st, e);
            if (!rc && !lost) {
                c->state = GRC_TXN_WAITING; /* started again above, on another server */
                st->reruns++;
            }
        } else if (lost) {
            rc = recompute(x, c, lost, code, m, st, e);
        } else {
            rc = gr_seterr(e, code, "%s: %s", call_name(x, c, nm, sizeof nm), m);
        }
        done = 0;
        for (int k = 0; k < x->ncalls; k++)
            done += x->call[k].state == GRC_TXN_DONE;
    }
    /* A failed transaction: the calls still running end here, and write nowhere after. */
    for (int k = 0; k < r.n; k++) {
        grc_cancel(r.id[k]);
        grc_forget(r.id[k]);
    }
    if (!rc) land(x);
    grc_txn_free_handles(x);
    st->servers = count_servers(x);
    st->seconds = (double)(gr_now_ns() - t0) / 1e9;
    free(r.id);
    free(r.call);
    return rc;
}
