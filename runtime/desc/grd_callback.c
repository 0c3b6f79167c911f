/* grd_callback.c: a callback parameter seen as a function of its own. At each callback
 * of a call both sides build the same descriptor from the function's descriptor and the
 * call's scalar values (grd_callback_desc), so the marshaller moves the callback's
 * arguments exactly as it moves a call's, with every check it makes, and knows nothing
 * of callbacks.
 */
#include "grd_internal.h"

#include <stdlib.h>
#include <string.h>

uint32_t grd_callback_count(const grd_desc *desc) {
    uint32_t n = 0;
    for (uint32_t i = 0; desc != NULL && i < desc->nparams; i++)
        n += desc->params[i].type == GRD_CALLBACK;
    return n;
}

/* Copies program E rewritten for the callback's own descriptor: PARAM i -> CONST
 * IVAL[i], CBPARAM j -> PARAM j. */
static int copy_prog(grd_expr *out, const grd_expr *e, const int64_t *ival, uint32_t nival) {
    out->len = 0;
    out->code = NULL;
    if (e->len == 0) return GRD_OK;
    out->code = malloc((size_t)e->len * sizeof *out->code);
    if (out->code == NULL) return GRD_E_NOMEM;
    out->len = e->len;
    for (uint32_t k = 0; k < e->len; k++) {
        grd_insn in = e->code[k];
        if (in.op == GRD_OP_PARAM) {
            if (in.operand < 0 || (uint64_t)in.operand >= nival) return GRD_E_INVALID;
            in.op = GRD_OP_CONST;
            in.operand = ival[in.operand];
        } else if (in.op == GRD_OP_CBPARAM) {
            in.op = GRD_OP_PARAM;
        }
        out->code[k] = in;
    }
    return GRD_OK;
}

int grd_callback_desc(const grd_desc *fn, uint32_t pindex, const int64_t *ival, grd_desc **out,
                      grd_error *err) {
    if (out == NULL) return grd_fail(err, GRD_E_ARG, "no output pointer");
    *out = NULL;
    if (fn == NULL || ival == NULL || pindex >= fn->nparams || fn->params[pindex].type != GRD_CALLBACK)
        return grd_fail(err, GRD_E_ARG, "parameter %u is not a callback", pindex);
    const grd_param *cb = &fn->params[pindex];
    grd_desc *d = calloc(1, sizeof *d);
    if (d == NULL) return grd_fail(err, GRD_E_NOMEM, "out of memory");
    d->version = GRD_FORMAT_VERSION;
    d->module = strdup(fn->module);
    d->name = strdup(cb->name);
    d->description = strdup("");
    d->language = GRD_LANG_C;
    int rc = d->module && d->name && d->description ? GRD_OK : GRD_E_NOMEM;
    if (rc == GRD_OK && cb->ncb > 0) {
        d->params = calloc(cb->ncb, sizeof *d->params);
        if (d->params == NULL) rc = GRD_E_NOMEM;
    }
    for (uint32_t j = 0; rc == GRD_OK && j < cb->ncb; j++) {
        const grd_param *s = &cb->cb[j];
        grd_param *p = &d->params[j];
        d->nparams = j + 1;
        p->name = strdup(s->name);
        p->type = s->type;
        p->mode = s->mode;
        p->flags = s->flags;
        if (p->name == NULL) rc = GRD_E_NOMEM;
        if (rc == GRD_OK && s->rank > 0) {
            p->dims = calloc(s->rank, sizeof *p->dims);
            if (p->dims == NULL)
                rc = GRD_E_NOMEM;
            else
                p->rank = s->rank;
        }
        for (uint32_t k = 0; rc == GRD_OK && k < p->rank; k++) {
            const grd_dim *sd = &s->dims[k];
            grd_dim *dd = &p->dims[k];
            rc = copy_prog(&dd->size, &sd->size, ival, fn->nparams);
            if (rc == GRD_OK) rc = copy_prog(&dd->start, &sd->start, ival, fn->nparams);
            if (rc == GRD_OK) rc = copy_prog(&dd->end, &sd->end, ival, fn->nparams);
            if (rc == GRD_OK) rc = copy_prog(&dd->step, &sd->step, ival, fn->nparams);
        }
    }
    if (rc != GRD_OK) {
        grd_free(d);
        return rc == GRD_E_NOMEM ? grd_fail(err, rc, "out of memory")
                                 : grd_fail(err, rc, "callback '%s': a program names no parameter", cb->name);
    }
    rc = grd_validate(d, err);
    if (rc != GRD_OK) {
        grd_free(d);
        return rc;
    }
    *out = d;
    return GRD_OK;
}
