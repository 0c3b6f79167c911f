/* grc_txn.c: the recording of the calls made between grid_transaction_begin and _end
 * (whose public calls are grc_txn_api.c's). A transaction belongs to the thread that
 * began it. A recorded call has its function resolved and its
 * descriptor fetched at once (so a wrong name or argument count fails the grid_call
 * itself), its scalars and strings copied, and its array pointers kept: arrays are read
 * when the transaction ends, as Ninf's transactions did. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grc_txn.h"

static __thread grc_txn *cur;

int grc_txn_active(void) {
    return cur != NULL;
}

static int is_text(uint32_t type) {
    return type == GRD_STRING || type == GRD_FILENAME;
}

static char *dup_or_null(const char *s) {
    return s ? strdup(s) : NULL;
}

/* Finds where NAME runs when nothing is routed, or learns its descriptor through the
 * metaserver (the server is chosen at the end, call by call). */
static int resolve(grc_txn_call *c, const char *name, gr_err *e) {
    grc_config cfg;
    int rc = grc_config_get(&cfg, e);
    if (rc) return rc;
    if (!name || !*name) return gr_seterr(e, GRID_ERR_ARGS, "the function name is empty");
    if (!gr_scheme_len(name, NULL) && cfg.meta_host[0]) {
        if (strlen(name) >= sizeof c->t.name) return gr_seterr(e, GRID_ERR_ARGS, "function name too long");
        c->routed = 1;
        grc_target where;
        rc = grc_meta_describe(name, &cfg, &where, &c->desc, e);
        snprintf(c->t.name, sizeof c->t.name, "%s", name);
        return rc;
    }
    rc = grc_resolve(name, &cfg, &c->t, e);
    if (!rc) rc = grc_descriptor(&c->t, &cfg, &c->desc, e);
    if (rc && c->t.name[0]) gr_prefixerr(e, "%s on %s:%d: ", c->t.name, c->t.host, c->t.port);
    return rc;
}

static int add_arg(grc_txn_call *c, const grc_txn_arg *a, gr_err *e) {
    grc_txn_arg *v = realloc(c->arg, (c->narg + 1) * sizeof *v);
    if (!v) return gr_seterr(e, GRID_ERR_NOMEM, "out of memory recording a transaction");
    c->arg = v;
    v[c->narg] = *a;
    grc_txn_arg_range(&v[c->narg]);
    if (a->handle) { /* one datum: any two uses of it overlap */
        v[c->narg].lo = (uintptr_t)a->user;
        v[c->narg].hi = (uintptr_t)a->user + 1;
    }
    c->narg++;
    return GRID_OK;
}

/* Copies what the call needs from CALL (built from the caller's arguments) into C. */
static int take(grc_txn_call *c, const grm_call *call, gr_err *e) {
    const grd_desc *d = c->desc;
    for (uint32_t i = 0; i < d->nparams; i++) {
        const grd_param *p = &d->params[i];
        void *ptr = call->ptr[i];
        if (p->mode == GRD_WORK) continue; /* the server allocates it */
        if (p->type == GRD_CALLBACK) {
            memcpy(&c->fn[i], &call->sl[i].val.str, sizeof c->fn[i]);
            continue;
        }
        if (is_text(p->type) && p->rank > 0) {
            /* String arrays are not staged: the call reads and writes them in place. */
            c->user_ptr[i] = ptr;
            continue;
        }
        if (is_text(p->type)) {
            /* ptr points at the char * (the caller's, or the slot holding it). */
            const char *s = ptr ? *(char *const *)ptr : NULL;
            if (p->type == GRD_FILENAME || p->mode != GRD_OUT) {
                c->str[i] = dup_or_null(s);
                if (s && !c->str[i]) return gr_seterr(e, GRID_ERR_NOMEM, "out of memory");
            }
            if (p->type == GRD_STRING && p->mode != GRD_IN) c->user_ptr[i] = ptr;
            continue;
        }
        size_t es = grd_type_size(p->type);
        if (p->rank == 0) {
            if (p->mode != GRD_OUT) memcpy(&c->val[i], ptr, es);
            if (p->mode == GRD_IN) continue;
            c->user_ptr[i] = ptr;
            grc_txn_arg a;
            memset(&a, 0, sizeof a);
            a.param = i;
            a.writes = 1;
            a.scalar = 1;
            a.user = ptr;
            a.es = es;
            a.ext.elems = a.ext.sent = 1;
            a.ext.bytes = a.ext.sent_bytes = es;
            a.ext.whole = 1;
            a.bytes = es;
            int rc = add_arg(c, &a, e);
            if (rc) return rc;
            continue;
        }
        grc_txn_arg a;
        memset(&a, 0, sizeof a);
        a.param = i;
        a.reads = p->mode == GRD_IN || p->mode == GRD_INOUT;
        a.writes = p->mode == GRD_OUT || p->mode == GRD_INOUT;
        a.user = ptr;
        a.es = es;
        a.ext = call->sl[i].ext;
        a.bytes = a.ext.bytes;
        a.handle = ptr && grc_data_lookup(ptr, NULL); /* never read through: only compared */
        int rc = add_arg(c, &a, e);
        if (rc) return rc;
    }
    return GRID_OK;
}

int grc_txn_record(const char *name, const grc_args *args, gr_err *e) {
    grc_txn *x = cur;
    if (x->ncalls == x->cap) {
        int ncap = x->cap ? 2 * x->cap : 16;
        grc_txn_call *v = realloc(x->call, (size_t)ncap * sizeof *v);
        if (!v) return gr_seterr(e, GRID_ERR_NOMEM, "out of memory recording a transaction");
        x->call = v;
        x->cap = ncap;
    }
    grc_txn_call *c = &x->call[x->ncalls];
    memset(c, 0, sizeof *c);
    c->index = x->ncalls;
    int rc = resolve(c, name, e);
    grc_req q;
    memset(&q, 0, sizeof q);
    if (!rc) {
        q.t = c->t;
        q.desc = c->desc;
        rc = grc_req_fill(&q, args, e);
        if (rc) gr_prefixerr(e, "%s: ", c->t.name);
    }
    if (!rc) rc = take(c, q.call, e);
    grc_req_free(&q); /* with the references its check of the caller's handles took */
    if (rc) {
        gr_prefixerr(e, "transaction call %d not recorded: ", x->ncalls + 1);
        grc_txn x1 = {c, 1, 1};
        grc_txn_free_calls(&x1);
        return rc;
    }
    x->ncalls++;
    return GRID_OK;
}

void grc_txn_free_calls(grc_txn *x) {
    for (int k = 0; k < x->ncalls; k++) {
        grc_txn_call *c = &x->call[k];
        for (uint32_t i = 0; i < GRD_MAX_PARAMS; i++) {
            if (c->sout[i] != c->str[i]) free(c->sout[i]);
            free(c->str[i]);
        }
        for (uint32_t j = 0; j < c->narg; j++)
            free(c->arg[j].stage);
        free(c->arg);
        free(c->deps);
    }
}

int grc_txn_open(void) {
    if (cur) return GRID_ERR_ARGS;
    cur = calloc(1, sizeof *cur);
    return cur ? GRID_OK : GRID_ERR_NOMEM;
}

grc_txn *grc_txn_take(void) {
    grc_txn *x = cur;
    cur = NULL;
    return x;
}

void grc_txn_drop(grc_txn *x) {
    grc_txn_free_calls(x);
    free(x->call);
    free(x);
}
