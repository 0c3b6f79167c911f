/* grm_head.c: the head section of CALL and RESULT messages: scalars, strings, arrays
 * of strings and file contents, XDR-encoded with libtirpc into one buffer. Numeric
 * scalars come first because arrays of strings are sized by them (docs/protocol.md).
 * The head arrives whole (its length is checked against the limit before it is read),
 * so decoding is bounded by what is in memory. */
#include <errno.h>
#include <fcntl.h>
#include <rpc/xdr.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "grm_internal.h"

static int numeric_scalar(const grd_param *p) {
    return p->rank == 0 && !grm_is_text(p->type);
}

/* Encodes (or decodes, or sizes: x_op of X) the numeric scalar at V. */
static bool_t xdr_scalar(XDR *x, const grd_param *p, void *v) {
    /* An unsigned char or short is XDR's unsigned int (zero-extended: 200 is 200 to any
     * XDR peer, not -56); the low bits are the same either way, so a peer that reads it
     * signed still gets its value. */
    int is_unsigned = (p->flags & GRD_PF_UNSIGNED) != 0;
    switch (p->type) {
    case GRD_CHAR: {
        if (is_unsigned) {
            u_int t = x->x_op == XDR_ENCODE ? *(unsigned char *)v : 0;
            if (!xdr_u_int(x, &t)) return FALSE;
            if (x->x_op == XDR_DECODE) *(unsigned char *)v = (unsigned char)t;
            return TRUE;
        }
        int t = x->x_op == XDR_ENCODE ? *(signed char *)v : 0;
        if (!xdr_int(x, &t)) return FALSE;
        if (x->x_op == XDR_DECODE) *(char *)v = (char)t;
        return TRUE;
    }
    case GRD_SHORT: return is_unsigned ? xdr_u_short(x, v) : xdr_short(x, v);
    case GRD_INT: return xdr_int(x, v);
    case GRD_LONG: {
        int64_t t = x->x_op == XDR_ENCODE ? (int64_t) * (long *)v : 0;
        if (!xdr_int64_t(x, &t)) return FALSE;
        if (x->x_op == XDR_DECODE) *(long *)v = (long)t;
        return TRUE;
    }
    case GRD_LONGLONG: {
        int64_t t = x->x_op == XDR_ENCODE ? (int64_t) * (long long *)v : 0;
        if (!xdr_int64_t(x, &t)) return FALSE;
        if (x->x_op == XDR_DECODE) *(long long *)v = (long long)t;
        return TRUE;
    }
    case GRD_FLOAT: return xdr_float(x, v);
    case GRD_DOUBLE: return xdr_double(x, v);
    case GRD_SCOMPLEX: return xdr_float(x, &((scomplex *)v)->r) && xdr_float(x, &((scomplex *)v)->i);
    case GRD_DCOMPLEX: return xdr_double(x, &((dcomplex *)v)->r) && xdr_double(x, &((dcomplex *)v)->i);
    }
    return FALSE;
}

static size_t pad4(size_t n) {
    return (n + 3) & ~(size_t)3;
}

/* One element of a text parameter: a string, or a file's contents. */
typedef struct text_item {
    char *data; /* the string (not owned when writing one), or the file's bytes (owned) */
    uint32_t len;
    bool_t present; /* FALSE: a NULL string, file name or file */
} text_item;

static int is_file(const grd_param *p) {
    return p->type == GRD_FILENAME;
}

/* The elements of text parameter I of C that travel now: one for a scalar, the sent
 * ones of an array. Files are read here; on the server a file the body removed travels
 * as absent, on the client a file that cannot be read fails the call; a path "" is an
 * empty file on either side. */
static int collect_text(const grm_call *c, uint32_t i, uint32_t max, text_item **out, size_t *count,
                        gr_err *e) {
    const grd_param *p = &c->desc->params[i];
    size_t n = p->rank ? (size_t)c->sl[i].ext.sent : 1;
    text_item *it = calloc(n ? n : 1, sizeof *it);
    char **v = calloc(n ? n : 1, sizeof(char *));
    *out = it;
    *count = it ? n : 0;
    if (!it || !v) {
        free(v);
        return gr_seterr(e, GRID_ERR_NOMEM, "out of memory");
    }
    if (p->rank)
        grm_strv_move(&c->sl[i].ext, c->ptr[i], v, 1);
    else
        v[0] = *(char *const *)c->ptr[i];
    int rc = GRID_OK;
    for (size_t k = 0; k < n && !rc; k++) {
        if (!v[k]) continue;
        if (!is_file(p)) {
            it[k].data = v[k];
            it[k].len = (uint32_t)strlen(v[k]);
            it[k].present = TRUE;
            continue;
        }
        uint8_t *bytes = NULL;
        if (!v[k][0]) {
            /* "" names no file but is not NULL: it travels as an empty file and the body
             * gets the path of one, as Ninf-G programs expect (NULL stays NULL). */
            it[k].data = malloc(1);
            it[k].present = it[k].data != NULL;
            if (!it[k].data) rc = gr_seterr(e, GRID_ERR_NOMEM, "out of memory");
            continue;
        }
        rc = grm_file_read(v[k], max, c->side == GRM_SERVER_SIDE, &bytes, &it[k].len, e);
        it[k].data = (char *)bytes;
        it[k].present = bytes != NULL;
        if (rc) gr_prefixerr(e, "'%s': ", p->name);
    }
    free(v);
    return rc;
}

static void free_items(const grd_param *p, text_item *it, size_t n) {
    if (!it) return;
    if (is_file(p))
        for (size_t k = 0; k < n; k++)
            free(it[k].data);
    free(it);
}

int grm_write_head(grw_writer *w, const grm_call *c, int dir, const grw_limits *lim, gr_err *e) {
    const grd_desc *d = c->desc;
    text_item *items[GRD_MAX_PARAMS] = {0};
    size_t nitems[GRD_MAX_PARAMS] = {0};
    int rc = GRID_OK;
    size_t size = 0;
    uint32_t max_head = lim ? lim->max_head : 0xffffffffu;

    /* Pass 1: size everything (reading files and collecting string arrays). */
    for (uint32_t i = 0; i < d->nparams && !rc; i++) {
        const grd_param *p = &d->params[i];
        if (!grm_call_travels(c, i, dir) || !numeric_scalar(p)) continue;
        size += (p->type == GRD_LONG || p->type == GRD_LONGLONG || p->type == GRD_DOUBLE) ? 8
                : p->type == GRD_DCOMPLEX                                                 ? 16
                : p->type == GRD_SCOMPLEX                                                 ? 8
                                                                                          : 4;
    }
    for (uint32_t i = 0; i < d->nparams && !rc; i++) {
        const grd_param *p = &d->params[i];
        if (!grm_call_travels(c, i, dir) || !grm_is_text(p->type)) continue;
        rc = collect_text(c, i, max_head, &items[i], &nitems[i], e);
        for (size_t k = 0; k < nitems[i] && !rc; k++)
            size += 4 + (items[i][k].present ? 4 + pad4(items[i][k].len) : 0);
        if (!rc && size > max_head)
            rc = gr_seterr(e, GRID_ERR_LIMIT,
                           "strings and files of the call take more than the limit of %u bytes", max_head);
    }
    if (!rc && size > max_head)
        rc =
            gr_seterr(e, GRID_ERR_LIMIT, "the call's scalars take more than the limit of %u bytes", max_head);

    /* Pass 2: encode with libtirpc. */
    uint8_t *buf = NULL;
    if (!rc) {
        buf = malloc(size ? size : 4);
        if (!buf) rc = gr_seterr(e, GRID_ERR_NOMEM, "out of memory for %zu bytes of arguments", size);
    }
    if (!rc) {
        XDR x;
        xdrmem_create(&x, (char *)buf, (u_int)size, XDR_ENCODE);
        bool_t ok = TRUE;
        for (uint32_t i = 0; i < d->nparams && ok; i++) {
            const grd_param *p = &d->params[i];
            if (grm_call_travels(c, i, dir) && numeric_scalar(p)) ok = xdr_scalar(&x, p, c->ptr[i]);
        }
        for (uint32_t i = 0; i < d->nparams && ok; i++) {
            const grd_param *p = &d->params[i];
            if (!grm_call_travels(c, i, dir) || !grm_is_text(p->type)) continue;
            for (size_t k = 0; k < nitems[i] && ok; k++) {
                text_item *t = &items[i][k];
                u_int len = t->len;
                ok = xdr_bool(&x, &t->present) &&
                     (!t->present || (is_file(p) ? xdr_bytes(&x, &t->data, &len, max_head)
                                                 : xdr_string(&x, &t->data, max_head)));
            }
        }
        if (!ok || xdr_getpos(&x) != size)
            rc = gr_seterr(e, GRID_ERR_INTERNAL, "encoding the arguments failed");
        xdr_destroy(&x);
    }
    if (!rc) rc = grw_write_opaque(w, buf, (uint32_t)size, e);
    free(buf);
    for (uint32_t i = 0; i < d->nparams; i++)
        free_items(&d->params[i], items[i], nitems[i]);
    return rc;
}

/* Decodes N elements of text parameter P into IT (strings NUL-terminated, files as
 * bytes; each malloc'd). Returns 0 when the head is cut short. */
static int decode_text(XDR *x, const grd_param *p, text_item *it, size_t n, u_int max) {
    for (size_t k = 0; k < n; k++) {
        u_int len = 0;
        if (!xdr_bool(x, &it[k].present)) return 0;
        if (!it[k].present) continue;
        if (is_file(p) ? !xdr_bytes(x, &it[k].data, &len, max) : !xdr_string(x, &it[k].data, max)) return 0;
        it[k].len = is_file(p) ? len : (uint32_t)strlen(it[k].data);
    }
    return 1;
}

/* Server: every file received becomes a file of the call's scratch folder; the
 * element's data is replaced by that file's path. */
static int files_to_scratch(grm_call *c, uint32_t i, text_item *it, size_t n, gr_err *e) {
    for (size_t k = 0; k < n; k++) {
        if (!it[k].present) continue;
        char *path;
        int rc = grm_file_scratch(c, i, k, (uint8_t *)it[k].data, it[k].len, &path, e);
        free(it[k].data);
        it[k].data = path;
        if (rc) return rc;
    }
    return GRID_OK;
}

/* Client: each file received is written at the path the caller gave for it. */
static int files_to_client(grm_call *c, uint32_t i, const text_item *it, size_t n, gr_err *e) {
    const grd_param *p = &c->desc->params[i];
    char **dest = calloc(n ? n : 1, sizeof(char *));
    if (!dest) return gr_seterr(e, GRID_ERR_NOMEM, "out of memory");
    if (p->rank)
        grm_strv_move(&c->sl[i].ext, c->ptr[i], dest, 1);
    else
        dest[0] = *(char **)c->ptr[i];
    int rc = GRID_OK;
    for (size_t k = 0; k < n && !rc; k++)
        if (it[k].present && dest[k]) rc = grm_file_save(dest[k], (uint8_t *)it[k].data, it[k].len, e);
    free(dest);
    return rc;
}

/* Stores the N decoded elements IT of text parameter I where the body (server) or the
 * caller (client) finds them; takes the elements' memory. */
static int place_text(grm_call *c, uint32_t i, text_item *it, size_t n, gr_err *e) {
    const grd_param *p = &c->desc->params[i];
    int server = c->side == GRM_SERVER_SIDE;
    int rc = GRID_OK;
    char **packed = NULL;
    if (is_file(p)) {
        rc = server ? files_to_scratch(c, i, it, n, e) : files_to_client(c, i, it, n, e);
        if (rc || !server) goto done;
    }
    if (p->rank == 0) {
        *(char **)c->ptr[i] = it[0].data;
        if (server && is_file(p))
            c->sl[i].tmpfile = it[0].data;
        else if (server)
            c->sl[i].own_ptr = it[0].data;
        it[0].data = NULL;
        goto done;
    }
    packed = calloc(n ? n : 1, sizeof(char *));
    if (!packed) {
        rc = gr_seterr(e, GRID_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (size_t k = 0; k < n; k++) {
        packed[k] = it[k].data;
        it[k].data = NULL;
    }
    if (server) {
        /* The body's array, NULL when it has no elements (as every empty array). */
        uint64_t elems = c->sl[i].ext.elems;
        char **v = elems ? calloc((size_t)elems, sizeof(char *)) : NULL;
        c->sl[i].own_strv = packed; /* ext.sent of them, freed by grm_release */
        if (elems && !v) {
            rc = gr_seterr(e, GRID_ERR_NOMEM, "out of memory");
            goto done;
        }
        c->ptr[i] = v;
        c->sl[i].own_buf = v != NULL;
    }
    grm_strv_move(&c->sl[i].ext, c->ptr[i], packed, 0);
    if (!server) free(packed); /* the strings are the caller's now */
done:
    for (size_t k = 0; k < n; k++)
        free(it[k].data);
    return rc;
}

int grm_read_head(grw_reader *r, grm_call *c, int dir, const grw_limits *lim, gr_err *e) {
    const grd_desc *d = c->desc;
    uint32_t max_head = lim ? lim->max_head : 0xffffffffu;
    uint8_t *buf;
    uint32_t len;
    int rc = grw_read_opaque(r, max_head, &buf, &len, e);
    if (rc) return rc;
    XDR x;
    xdrmem_create(&x, (char *)buf, len, XDR_DECODE);
    bool_t ok = TRUE;
    for (uint32_t i = 0; i < d->nparams && ok; i++) {
        const grd_param *p = &d->params[i];
        if (grm_call_travels(c, i, dir) && numeric_scalar(p)) ok = xdr_scalar(&x, p, c->ptr[i]);
    }
    if (!ok) {
        rc = gr_seterr(e, GRID_ERR_PROTOCOL, "the scalar arguments are truncated");
        goto out;
    }
    if (dir == GRM_TO_SERVER) {
        rc = grm_prepare(c, lim, e);
        if (rc) goto out;
    }
    for (uint32_t i = 0; i < d->nparams && !rc; i++) {
        const grd_param *p = &d->params[i];
        if (!grm_call_travels(c, i, dir) || !grm_is_text(p->type)) continue;
        /* Every element takes at least 4 bytes of the head: a count beyond what is left
         * is refused before anything is allocated for it. */
        size_t n = p->rank ? (size_t)c->sl[i].ext.sent : 1;
        const char *what =
            is_file(p) ? (p->rank ? "file array" : "file") : (p->rank ? "string array" : "string");
        if (n > (len - xdr_getpos(&x)) / 4) {
            rc = gr_seterr(e, GRID_ERR_PROTOCOL, "%s '%s' is truncated", what, p->name);
            break;
        }
        text_item *it = calloc(n ? n : 1, sizeof *it);
        if (!it) {
            rc = gr_seterr(e, GRID_ERR_NOMEM, "out of memory");
            break;
        }
        if (!decode_text(&x, p, it, n, len)) {
            for (size_t k = 0; k < n; k++)
                free(it[k].data);
            rc = gr_seterr(e, GRID_ERR_PROTOCOL, "%s '%s' is truncated", what, p->name);
        } else {
            rc = place_text(c, i, it, n, e);
        }
        free(it);
    }
    if (!rc && xdr_getpos(&x) != len)
        rc = gr_seterr(e, GRID_ERR_PROTOCOL, "%u unexpected bytes after the arguments", len - xdr_getpos(&x));
out:
    xdr_destroy(&x);
    free(buf);
    return rc;
}
