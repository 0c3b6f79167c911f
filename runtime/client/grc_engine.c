/* grc_engine.c: the steps every remote call takes, whether the caller waits for it
 * (grc_call.c) or not (grc_async.c): resolve the server, get the descriptor (cached),
 * build the arguments, check them against the server's limits, send CALL, read
 * RESULT or ERROR, and after GRID_ERR_STALE fetch the descriptor again and go on with
 * the same arguments. Keeping them here is what makes both kinds of call behave alike. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grc_client.h"
#include "grp_proto.h"

/* Lists the parameters a caller must pass, for argument-count errors. */
static void param_list(const grd_desc *d, char *buf, size_t n) {
    size_t used = 0;
    buf[0] = '\0';
    for (uint32_t i = 0; i < d->nparams && used < n; i++)
        used += (size_t)snprintf(buf + used, n - used, "%s%s", i ? ", " : "", d->params[i].name);
}

static int fill(grm_call *call, const grd_desc *d, const grc_target *t, const grc_args *args, gr_err *e) {
    if (args->nargs >= 0 && (uint32_t)args->nargs != d->nparams) {
        char params[512];
        param_list(d, params, sizeof params);
        return gr_seterr(e, GRID_ERR_ARGS, "%s takes %u argument%s (%s) but %d %s given", t->name, d->nparams,
                         d->nparams == 1 ? "" : "s", params, args->nargs, args->nargs == 1 ? "was" : "were");
    }
    grw_limits lim;
    grw_limits_default(&lim);
    if (!args->ap) return grm_from_argv(call, d, args->argv, &lim, e);
    va_list aq;
    va_copy(aq, *args->ap);
    int rc = grm_from_va(call, d, aq, &lim, e);
    va_end(aq);
    return rc;
}

void grc_req_blame(const grc_req *q, gr_err *e) {
    if (q->t.name[0]) gr_prefixerr(e, "%s on %s:%d: ", q->t.name, q->t.host, q->t.port);
}

int grc_req_start(grc_req *q, const char *name, const grc_args *args, grc_config *cfg, gr_err *e) {
    memset(&q->t, 0, sizeof q->t);
    q->desc = NULL;
    q->call = NULL;
    q->refreshed = 0;
    int rc = grc_config_get(cfg, e);
    if (!rc) rc = grc_resolve(name, cfg, &q->t, e);
    if (!rc) rc = grc_descriptor(&q->t, cfg, &q->desc, e);
    if (!rc) {
        q->call = malloc(grm_call_size(q->desc->nparams));
        if (!q->call) rc = gr_seterr(e, GRID_ERR_NOMEM, "out of memory");
    }
    if (!rc) rc = fill(q->call, q->desc, &q->t, args, e);
    if (rc) {
        grc_req_blame(q, e);
        grc_req_free(q);
    }
    return rc;
}

void grc_req_free(grc_req *q) {
    free(q->call);
    q->call = NULL;
}

long long grc_req_deadline(const grc_config *cfg) {
    return cfg->call_timeout > 0 ? gr_now_ns() + (long long)(cfg->call_timeout * 1e9) : 0;
}

int grc_req_check(const grc_req *q, const grw_limits *server, gr_err *e) {
    const grd_desc *d = q->desc;
    for (uint32_t i = 0; i < d->nparams; i++)
        if (d->params[i].rank > 0 && q->call->sl[i].ext.sent_bytes > server->max_array)
            return gr_seterr(
                e, GRID_ERR_LIMIT,
                "argument '%s' of %s has %llu bytes; the server at %s:%d accepts at most %llu per "
                "array",
                d->params[i].name, q->t.name, (unsigned long long)q->call->sl[i].ext.sent_bytes, q->t.host,
                q->t.port, (unsigned long long)server->max_array);
    return GRID_OK;
}

int grc_req_send(const grc_req *q, grw_writer *w, uint64_t id, const grw_limits *server, gr_err *e) {
    return grp_write_call(w, id, q->t.name, q->desc->hash, q->call, server, e);
}

int grc_req_reply(grc_req *q, grw_reader *r, const grw_header *h, int *in_step, gr_err *e) {
    int rc = grp_expect(r, h, GRW_RESULT, "CALL", in_step, e);
    if (rc) return rc;
    grp_result_times times;
    rc = grp_read_result(r, q->call, &times, e);
    *in_step = rc == GRID_OK;
    return rc;
}

/* 1 if the caller's arguments, laid out for OLD, mean the same under NEW; else E says
 * which parameter changed. */
static int same_signature(const grd_desc *old, const grd_desc *new, const char *name, gr_err *e) {
    if (old->nparams != new->nparams)
        return gr_seterr(e, GRID_ERR_STALE,
                         "the interface of %s changed on the server: it now takes %u arguments, not %u; "
                         "update the caller",
                         name, new->nparams, old->nparams),
               0;
    for (uint32_t i = 0; i < old->nparams; i++) {
        const grd_param *a = &old->params[i], *b = &new->params[i];
        if (a->type != b->type || a->mode != b->mode || a->rank != b->rank ||
            (a->flags & GRD_PF_UNSIGNED) != (b->flags & GRD_PF_UNSIGNED))
            return gr_seterr(e, GRID_ERR_STALE,
                             "the interface of %s changed on the server: argument '%s' was %s %s of rank %u, "
                             "now %s %s of rank %u; update the caller",
                             name, a->name, grd_mode_name(a->mode), grd_type_name(a->type), a->rank,
                             grd_mode_name(b->mode), grd_type_name(b->type), b->rank),
                   0;
    }
    return 1;
}

/* Rebuilds CALL for descriptor D from the arguments it holds: its pointers are the
 * caller's argument vector, except the values of IN scalars, which live in its own
 * slots and are saved across grm_init. */
static int rebuild(grm_call *call, const grd_desc *d, gr_err *e) {
    uint32_t n = d->nparams;
    grm_value saved[GRD_MAX_PARAMS];
    void *argv[GRD_MAX_PARAMS];
    unsigned char own[GRD_MAX_PARAMS];
    for (uint32_t i = 0; i < n; i++) {
        saved[i] = call->sl[i].val;
        own[i] = call->ptr[i] == (void *)&call->sl[i].val || call->ptr[i] == (void *)&call->sl[i].val.str;
        argv[i] = own[i] ? (void *)&saved[i] : call->ptr[i];
    }
    grw_limits lim;
    grw_limits_default(&lim);
    int rc = grm_from_argv(call, d, argv, &lim, e);
    /* Point the values back into the call, which outlives this frame. */
    for (uint32_t i = 0; i < n; i++)
        if (own[i]) {
            call->sl[i].val = saved[i];
            call->ptr[i] = &call->sl[i].val; /* for strings too: val.str is at its start */
        }
    return rc;
}

int grc_req_refresh(grc_req *q, gr_err *e) {
    if (q->refreshed) return GRID_ERR_STALE; /* E holds the server's second STALE */
    q->refreshed = 1;
    grc_cache_forget(&q->t);
    grc_config cfg;
    const grd_desc *d;
    int rc = grc_config_get(&cfg, e);
    if (!rc) rc = grc_descriptor(&q->t, &cfg, &d, e);
    if (rc) return rc;
    if (!same_signature(q->desc, d, q->t.name, e)) return GRID_ERR_STALE;
    rc = rebuild(q->call, d, e);
    if (!rc) q->desc = d;
    return rc;
}
