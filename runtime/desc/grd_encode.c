/* grd_encode.c: writes descriptors and module bundles in the XDR form of
 * docs/descriptor.md. Used by idlc only; the size is computed up front so the buffer is
 * allocated once and the 1 MiB limit is enforced before anything is written.
 */
#include "grd_internal.h"

#include <limits.h>
#include <rpc/xdr.h>
#include <stdlib.h>
#include <string.h>

#define HEADER_BYTES 20u /* magic, version, hash, body_length */

static size_t str_bytes(const char *s) {
    return 4 + GRD_XDR_PAD(s != NULL ? strlen(s) : 0);
}

static size_t prog_bytes(const grd_expr *e) {
    return 4 + (size_t)e->len * 12;
}

/* Body size of a validated descriptor (so every count is within its limit and no
 * sum can overflow). */
static size_t params_bytes(const grd_param *params, uint32_t np) {
    size_t n = 0;
    for (uint32_t i = 0; i < np; i++) {
        const grd_param *p = &params[i];
        n += str_bytes(p->name) + 16;
        for (uint32_t k = 0; k < p->rank; k++)
            n += prog_bytes(&p->dims[k].size) + prog_bytes(&p->dims[k].start) + prog_bytes(&p->dims[k].end) +
                 prog_bytes(&p->dims[k].step);
        if (p->type == GRD_CALLBACK) n += 4 + params_bytes(p->cb, p->ncb);
    }
    return n;
}

static size_t body_bytes(const grd_desc *d) {
    size_t n = str_bytes(d->module) + str_bytes(d->name) + str_bytes(d->description);
    if (d->flags & GRD_FF_METHOD) n += str_bytes(d->cls);
    if (d->flags & GRD_FF_TIMEOUT) n += 4;
    n += 8 + prog_bytes(&d->cost) + 4;
    return n + params_bytes(d->params, d->nparams);
}

static bool_t put_u32(XDR *x, uint32_t v) {
    u_int u = v;
    return xdr_u_int(x, &u);
}

static bool_t put_str(XDR *x, const char *s, u_int max) {
    /* xdr_string only reads the string when encoding; the cast drops const for its
     * in/out prototype. */
    char *p = (char *)(s != NULL ? s : "");
    return xdr_string(x, &p, max);
}

static bool_t put_prog(XDR *x, const grd_expr *e) {
    if (!put_u32(x, e->len)) return FALSE;
    for (uint32_t i = 0; i < e->len; i++) {
        int64_t operand = e->code[i].operand;
        if (!put_u32(x, e->code[i].op) || !xdr_int64_t(x, &operand)) return FALSE;
    }
    return TRUE;
}

/* A callback parameter is followed by its own parameters (docs/descriptor.md). */
static bool_t put_params(XDR *x, const grd_param *params, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        const grd_param *p = &params[i];
        if (!put_str(x, p->name, GRD_MAX_NAME) || !put_u32(x, p->type) || !put_u32(x, p->mode) ||
            !put_u32(x, p->flags) || !put_u32(x, p->rank))
            return FALSE;
        for (uint32_t k = 0; k < p->rank; k++) {
            const grd_dim *dim = &p->dims[k];
            if (!put_prog(x, &dim->size) || !put_prog(x, &dim->start) || !put_prog(x, &dim->end) ||
                !put_prog(x, &dim->step))
                return FALSE;
        }
        if (p->type == GRD_CALLBACK && (!put_u32(x, p->ncb) || !put_params(x, p->cb, p->ncb))) return FALSE;
    }
    return TRUE;
}

static bool_t put_body(XDR *x, const grd_desc *d) {
    if (!put_str(x, d->module, GRD_MAX_NAME) || !put_str(x, d->name, GRD_MAX_NAME) ||
        !put_str(x, d->description, GRD_MAX_DESCRIPTION) || !put_u32(x, d->flags) || !put_u32(x, d->language))
        return FALSE;
    if ((d->flags & GRD_FF_METHOD) && !put_str(x, d->cls, GRD_MAX_NAME)) return FALSE;
    if ((d->flags & GRD_FF_TIMEOUT) && !put_u32(x, d->timeout)) return FALSE;
    if (!put_prog(x, &d->cost) || !put_u32(x, d->nparams)) return FALSE;
    return put_params(x, d->params, d->nparams);
}

int grd_encode(grd_desc *desc, uint8_t **out, size_t *outlen, grd_error *err) {
    if (out == NULL || outlen == NULL) return grd_fail(err, GRD_E_ARG, "no output buffer");
    *out = NULL;
    *outlen = 0;
    int rc = grd_validate(desc, err);
    if (rc != GRD_OK) return rc;

    size_t body = body_bytes(desc);
    size_t total = HEADER_BYTES + body;
    if (total > GRD_MAX_ENCODED)
        return grd_fail(err, GRD_E_LIMIT, "encoded descriptor would be %zu bytes, over the limit of %u",
                        total, GRD_MAX_ENCODED);
    uint8_t *buf = malloc(total);
    if (buf == NULL) return grd_fail(err, GRD_E_NOMEM, "out of memory (%zu bytes)", total);

    XDR x;
    xdrmem_create(&x, (char *)buf + HEADER_BYTES, (u_int)body, XDR_ENCODE);
    bool_t ok = put_body(&x, desc) && xdr_getpos(&x) == body;
    xdr_destroy(&x);
    if (!ok) {
        free(buf);
        return grd_fail(err, GRD_E_INVALID, "internal error: body does not fit %zu bytes", body);
    }

    uint64_t hash = grd_fnv1a64(buf + HEADER_BYTES, body);
    u_int64_t h = hash;
    xdrmem_create(&x, (char *)buf, HEADER_BYTES, XDR_ENCODE);
    ok = put_u32(&x, GRD_MAGIC) && put_u32(&x, GRD_FORMAT_VERSION) && xdr_u_int64_t(&x, &h) &&
         put_u32(&x, (uint32_t)body);
    xdr_destroy(&x);
    if (!ok) {
        free(buf);
        return grd_fail(err, GRD_E_INVALID, "internal error: header does not fit");
    }
    desc->hash = hash;
    *out = buf;
    *outlen = total;
    return GRD_OK;
}

int grd_bundle_encode(const uint8_t *const *descs, const size_t *lens, uint32_t n, uint8_t **out,
                      size_t *outlen, grd_error *err) {
    if (out == NULL || outlen == NULL) return grd_fail(err, GRD_E_ARG, "no output buffer");
    *out = NULL;
    *outlen = 0;
    if (n > GRD_MAX_BUNDLE)
        return grd_fail(err, GRD_E_LIMIT, "%u descriptors exceed the bundle limit of %u", n, GRD_MAX_BUNDLE);
    if (n > 0 && (descs == NULL || lens == NULL)) return grd_fail(err, GRD_E_ARG, "no descriptors given");

    size_t total = 12;
    for (uint32_t i = 0; i < n; i++) {
        if (descs[i] == NULL && lens[i] > 0) return grd_fail(err, GRD_E_ARG, "descriptor %u has no bytes", i);
        if (lens[i] > GRD_MAX_ENCODED)
            return grd_fail(err, GRD_E_LIMIT, "descriptor %u is %zu bytes, over the limit of %u", i, lens[i],
                            GRD_MAX_ENCODED);
        total += 4 + GRD_XDR_PAD(lens[i]);
    }
    /* xdrmem addresses its buffer with a u_int. */
    if (total > UINT_MAX) return grd_fail(err, GRD_E_LIMIT, "bundle would be %zu bytes, too large", total);

    uint8_t *buf = malloc(total);
    if (buf == NULL) return grd_fail(err, GRD_E_NOMEM, "out of memory (%zu bytes)", total);
    XDR x;
    xdrmem_create(&x, (char *)buf, (u_int)total, XDR_ENCODE);
    bool_t ok = put_u32(&x, GRD_BUNDLE_MAGIC) && put_u32(&x, GRD_FORMAT_VERSION) && put_u32(&x, n);
    for (uint32_t i = 0; ok && i < n; i++)
        ok = put_u32(&x, (uint32_t)lens[i]) &&
             (lens[i] == 0 || xdr_opaque(&x, (char *)descs[i], (u_int)lens[i]));
    ok = ok && xdr_getpos(&x) == total;
    xdr_destroy(&x);
    if (!ok) {
        free(buf);
        return grd_fail(err, GRD_E_INVALID, "internal error: bundle does not fit %zu bytes", total);
    }
    *out = buf;
    *outlen = total;
    return GRD_OK;
}
