/* grd_decode.c: reads descriptors and module bundles from untrusted bytes.
 *
 * Decoding is done by hand from big-endian bytes through one bounds-checked cursor, so
 * every read and every allocation size can be checked against the bytes that remain
 * and against a GRD_MAX_* limit first. Structure is parsed here; the semantic rules
 * (names, enums, references, stack discipline) are grd_validate's, shared with the
 * encoder.
 */
#include "grd_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HEADER_BYTES 20u
/* The fewest bytes a parameter (a 1-byte name would take 24; an empty one 20) and a
 * dimension (four empty programs) can occupy: multiplied by a count, they bound the
 * count by the input before the array is allocated. */
#define MIN_PARAM_BYTES 20u
#define MIN_DIM_BYTES 16u

typedef struct cursor {
    const uint8_t *p;
    size_t pos, end; /* reads stay in [pos, end) */
    grd_error *err;
    char ctx[320]; /* what is being read, for messages */
} cursor;

static size_t left(const cursor *c) {
    return c->end - c->pos;
}

static int need(cursor *c, size_t n, const char *what) {
    if (n > left(c))
        return grd_fail(c->err, GRD_E_TRUNCATED,
                        "%s%s%s: truncated at offset %zu (needs %zu bytes, %zu left)", c->ctx,
                        c->ctx[0] ? " " : "", what, c->pos, n, left(c));
    return GRD_OK;
}

static uint32_t be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t be64(const uint8_t *p) {
    return (uint64_t)be32(p) << 32 | be32(p + 4);
}

static int get_u32(cursor *c, uint32_t *v, const char *what) {
    int rc = need(c, 4, what);
    if (rc != GRD_OK) return rc;
    *v = be32(c->p + c->pos);
    c->pos += 4;
    return GRD_OK;
}

/* Reads an XDR string of at most MAX bytes into a new NUL-terminated *OUT. */
static int get_str(cursor *c, char **out, uint32_t max, const char *what) {
    uint32_t len;
    int rc = get_u32(c, &len, what);
    if (rc != GRD_OK) return rc;
    if (len > max)
        return grd_fail(c->err, GRD_E_LIMIT, "%s%s%s: length %u exceeds the limit of %u", c->ctx,
                        c->ctx[0] ? " " : "", what, len, max);
    size_t padded = GRD_XDR_PAD((size_t)len);
    if ((rc = need(c, padded, what)) != GRD_OK) return rc;
    const uint8_t *s = c->p + c->pos;
    if (memchr(s, 0, len) != NULL)
        return grd_fail(c->err, GRD_E_INVALID, "%s%s%s contains a NUL byte", c->ctx, c->ctx[0] ? " " : "",
                        what);
    for (size_t i = len; i < padded; i++)
        if (s[i] != 0)
            return grd_fail(c->err, GRD_E_INVALID, "%s%s%s: non-zero padding at offset %zu", c->ctx,
                            c->ctx[0] ? " " : "", what, c->pos + i);
    char *str = malloc((size_t)len + 1);
    if (str == NULL) return grd_fail(c->err, GRD_E_NOMEM, "out of memory");
    memcpy(str, s, len);
    str[len] = '\0';
    *out = str;
    c->pos += padded;
    return GRD_OK;
}

static int get_prog(cursor *c, grd_expr *e, const char *what) {
    uint32_t len;
    int rc = get_u32(c, &len, what);
    if (rc != GRD_OK) return rc;
    if (len == 0) return GRD_OK;
    if (len > GRD_MAX_PROGRAM)
        return grd_fail(c->err, GRD_E_LIMIT, "%s%s%s: program of %u instructions exceeds the limit of %u",
                        c->ctx, c->ctx[0] ? " " : "", what, len, GRD_MAX_PROGRAM);
    if ((rc = need(c, (size_t)len * 12, what)) != GRD_OK) return rc;
    grd_insn *code = malloc((size_t)len * sizeof *code);
    if (code == NULL) return grd_fail(c->err, GRD_E_NOMEM, "out of memory");
    const uint8_t *s = c->p + c->pos;
    for (uint32_t i = 0; i < len; i++, s += 12) {
        code[i].op = be32(s);
        code[i].operand = (int64_t)be64(s + 4);
    }
    c->pos += (size_t)len * 12;
    e->code = code;
    e->len = len;
    return GRD_OK;
}

static int get_param(cursor *c, grd_param *p, uint32_t i, const char *cbname);

/* A callback's parameters: a count (<= GRD_MAX_CB_PARAMS), then each as a parameter
 * that may not itself be a callback. */
static int get_callback(cursor *c, grd_param *p) {
    uint32_t n;
    int rc = get_u32(c, &n, "callback parameter count");
    if (rc != GRD_OK) return rc;
    if (n > GRD_MAX_CB_PARAMS)
        return grd_fail(c->err, GRD_E_LIMIT, "%s: %u callback parameters exceed the limit of %u", c->ctx, n,
                        GRD_MAX_CB_PARAMS);
    if (n == 0) return GRD_OK;
    if ((rc = need(c, (size_t)n * MIN_PARAM_BYTES, "callback parameters")) != GRD_OK) return rc;
    p->cb = calloc(n, sizeof *p->cb);
    if (p->cb == NULL) return grd_fail(c->err, GRD_E_NOMEM, "out of memory");
    p->ncb = n;
    for (uint32_t j = 0; j < n; j++)
        if ((rc = get_param(c, &p->cb[j], j, p->name)) != GRD_OK) return rc;
    return GRD_OK;
}

/* CBNAME: the callback whose parameter this is, NULL for a function's parameter. */
static int get_param(cursor *c, grd_param *p, uint32_t i, const char *cbname) {
    int rc;
    char where[300] = "";
    if (cbname) snprintf(where, sizeof where, " of callback '%s'", cbname);
    snprintf(c->ctx, sizeof c->ctx, "parameter %u%s", i + 1, where);
    if ((rc = get_str(c, &p->name, GRD_MAX_NAME, "name")) != GRD_OK) return rc;
    snprintf(c->ctx, sizeof c->ctx, "parameter %u ('%s')%s", i + 1, p->name, where);
    uint32_t rank;
    if ((rc = get_u32(c, &p->type, "type")) != GRD_OK || (rc = get_u32(c, &p->mode, "mode")) != GRD_OK ||
        (rc = get_u32(c, &p->flags, "flags")) != GRD_OK || (rc = get_u32(c, &rank, "rank")) != GRD_OK)
        return rc;
    if (p->type == GRD_CALLBACK) {
        if (cbname) return grd_fail(c->err, GRD_E_INVALID, "%s: a callback inside a callback", c->ctx);
        if (rank != 0)
            return grd_fail(c->err, GRD_E_INVALID, "%s: a callback has rank 0, not %u", c->ctx, rank);
        return get_callback(c, p);
    }
    if (rank == 0) return GRD_OK;
    if (rank > GRD_MAX_RANK)
        return grd_fail(c->err, GRD_E_LIMIT, "%s: rank %u exceeds the limit of %u", c->ctx, rank,
                        GRD_MAX_RANK);
    if ((rc = need(c, (size_t)rank * MIN_DIM_BYTES, "dimensions")) != GRD_OK) return rc;
    p->dims = calloc(rank, sizeof *p->dims);
    if (p->dims == NULL) return grd_fail(c->err, GRD_E_NOMEM, "out of memory");
    p->rank = rank;
    for (uint32_t d = 0; d < rank; d++) {
        char what[48];
        grd_dim *dim = &p->dims[d];
        snprintf(what, sizeof what, "dimension %u size", d + 1);
        if ((rc = get_prog(c, &dim->size, what)) != GRD_OK) return rc;
        snprintf(what, sizeof what, "dimension %u start", d + 1);
        if ((rc = get_prog(c, &dim->start, what)) != GRD_OK) return rc;
        snprintf(what, sizeof what, "dimension %u end", d + 1);
        if ((rc = get_prog(c, &dim->end, what)) != GRD_OK) return rc;
        snprintf(what, sizeof what, "dimension %u step", d + 1);
        if ((rc = get_prog(c, &dim->step, what)) != GRD_OK) return rc;
    }
    return GRD_OK;
}

static int get_body(cursor *c, grd_desc *d) {
    int rc;
    uint32_t nparams;
    if ((rc = get_str(c, &d->module, GRD_MAX_NAME, "module name")) != GRD_OK ||
        (rc = get_str(c, &d->name, GRD_MAX_NAME, "function name")) != GRD_OK ||
        (rc = get_str(c, &d->description, GRD_MAX_DESCRIPTION, "description")) != GRD_OK ||
        (rc = get_u32(c, &d->flags, "flags")) != GRD_OK ||
        (rc = get_u32(c, &d->language, "language")) != GRD_OK ||
        ((d->flags & GRD_FF_METHOD) && (rc = get_str(c, &d->cls, GRD_MAX_NAME, "class name")) != GRD_OK) ||
        ((d->flags & GRD_FF_TIMEOUT) && (rc = get_u32(c, &d->timeout, "timeout")) != GRD_OK) ||
        (rc = get_prog(c, &d->cost, "cost")) != GRD_OK ||
        (rc = get_u32(c, &nparams, "parameter count")) != GRD_OK)
        return rc;
    if (nparams > GRD_MAX_PARAMS)
        return grd_fail(c->err, GRD_E_LIMIT, "%u parameters exceed the limit of %u", nparams, GRD_MAX_PARAMS);
    if (nparams == 0) return GRD_OK;
    if ((rc = need(c, (size_t)nparams * MIN_PARAM_BYTES, "parameters")) != GRD_OK) return rc;
    d->params = calloc(nparams, sizeof *d->params);
    if (d->params == NULL) return grd_fail(c->err, GRD_E_NOMEM, "out of memory");
    d->nparams = nparams;
    for (uint32_t i = 0; i < nparams; i++)
        if ((rc = get_param(c, &d->params[i], i, NULL)) != GRD_OK) return rc;
    return GRD_OK;
}

int grd_decode(const uint8_t *buf, size_t len, grd_desc **out, grd_error *err) {
    if (out == NULL) return grd_fail(err, GRD_E_ARG, "no output pointer");
    *out = NULL;
    if (buf == NULL && len > 0) return grd_fail(err, GRD_E_ARG, "no input buffer");
    if (len < 4)
        return grd_fail(err, GRD_E_TRUNCATED, "input of %zu bytes is too short for a descriptor", len);
    uint32_t magic = be32(buf);
    if (magic == GRD_BUNDLE_MAGIC)
        return grd_fail(err, GRD_E_MAGIC, "this is a module bundle, not a single descriptor");
    if (magic != GRD_MAGIC) return grd_fail(err, GRD_E_MAGIC, "bad magic 0x%08x: not a descriptor", magic);
    if (len < 8)
        return grd_fail(err, GRD_E_TRUNCATED, "input of %zu bytes is too short for a descriptor", len);
    uint32_t version = be32(buf + 4);
    if (version != GRD_FORMAT_VERSION)
        return grd_fail(err, GRD_E_VERSION, "format version %u is not supported (expected %u)", version,
                        GRD_FORMAT_VERSION);
    if (len < HEADER_BYTES)
        return grd_fail(err, GRD_E_TRUNCATED,
                        "input of %zu bytes is shorter than a descriptor header (%u bytes)", len,
                        HEADER_BYTES);
    if (len > GRD_MAX_ENCODED)
        return grd_fail(err, GRD_E_LIMIT, "input of %zu bytes exceeds the limit of %u", len, GRD_MAX_ENCODED);
    uint64_t hash = be64(buf + 8);
    uint32_t body_length = be32(buf + 16);
    size_t avail = len - HEADER_BYTES;
    if (body_length % 4 != 0)
        return grd_fail(err, GRD_E_INVALID, "body_length %u is not a multiple of 4", body_length);
    if (body_length > avail)
        return grd_fail(err, GRD_E_TRUNCATED, "body_length is %u but only %zu bytes follow", body_length,
                        avail);
    if (body_length < avail)
        return grd_fail(err, GRD_E_TRAILING, "%zu bytes follow the %u-byte body", avail - body_length,
                        body_length);
    /* The hash goes first: it rejects damaged input before anything is allocated. */
    uint64_t actual = grd_fnv1a64(buf + HEADER_BYTES, body_length);
    if (actual != hash)
        return grd_fail(err, GRD_E_HASH, "hash 0x%016llx does not match the body (0x%016llx)",
                        (unsigned long long)hash, (unsigned long long)actual);

    grd_desc *d = calloc(1, sizeof *d);
    if (d == NULL) return grd_fail(err, GRD_E_NOMEM, "out of memory");
    d->version = version;
    d->hash = hash;
    cursor c = {.p = buf, .pos = HEADER_BYTES, .end = len, .err = err, .ctx = ""};
    int rc = get_body(&c, d);
    if (rc == GRD_OK && c.pos != c.end)
        rc = grd_fail(err, GRD_E_TRAILING,
                      "the body ends at offset %zu but body_length says %u bytes (to offset %zu)", c.pos,
                      body_length, c.end);
    if (rc == GRD_OK) rc = grd_validate(d, err);
    if (rc != GRD_OK) {
        grd_free(d);
        return rc;
    }
    *out = d;
    return GRD_OK;
}

int grd_bundle_split(const uint8_t *buf, size_t len, uint32_t *n, size_t **offs, size_t **lens,
                     grd_error *err) {
    if (n == NULL || offs == NULL || lens == NULL) return grd_fail(err, GRD_E_ARG, "no output pointers");
    *n = 0;
    *offs = NULL;
    *lens = NULL;
    if (buf == NULL && len > 0) return grd_fail(err, GRD_E_ARG, "no input buffer");
    if (len < 4) return grd_fail(err, GRD_E_TRUNCATED, "input of %zu bytes is too short for a bundle", len);
    uint32_t magic = be32(buf);
    if (magic == GRD_MAGIC)
        return grd_fail(err, GRD_E_MAGIC, "this is a single descriptor, not a module bundle");
    if (magic != GRD_BUNDLE_MAGIC)
        return grd_fail(err, GRD_E_MAGIC, "bad magic 0x%08x: not a module bundle", magic);

    cursor c = {.p = buf, .pos = 4, .end = len, .err = err, .ctx = "bundle"};
    uint32_t version, count;
    int rc;
    if ((rc = get_u32(&c, &version, "version")) != GRD_OK) return rc;
    if (version != GRD_FORMAT_VERSION)
        return grd_fail(err, GRD_E_VERSION, "bundle format version %u is not supported (expected %u)",
                        version, GRD_FORMAT_VERSION);
    if ((rc = get_u32(&c, &count, "count")) != GRD_OK) return rc;
    if (count > GRD_MAX_BUNDLE)
        return grd_fail(err, GRD_E_LIMIT, "bundle of %u descriptors exceeds the limit of %u", count,
                        GRD_MAX_BUNDLE);
    if ((rc = need(&c, (size_t)count * 4, "descriptor lengths")) != GRD_OK) return rc;
    /* One spare entry so a count of 0 still yields non-NULL arrays. */
    size_t *o = calloc((size_t)count + 1, sizeof *o);
    size_t *l = calloc((size_t)count + 1, sizeof *l);
    if (o == NULL || l == NULL) {
        free(o);
        free(l);
        return grd_fail(err, GRD_E_NOMEM, "out of memory");
    }
    for (uint32_t i = 0; i < count; i++) {
        uint32_t dlen;
        snprintf(c.ctx, sizeof c.ctx, "bundle descriptor %u", i);
        if ((rc = get_u32(&c, &dlen, "length")) != GRD_OK) goto fail;
        if (dlen > GRD_MAX_ENCODED) {
            rc = grd_fail(err, GRD_E_LIMIT, "%s: length %u exceeds the limit of %u", c.ctx, dlen,
                          GRD_MAX_ENCODED);
            goto fail;
        }
        size_t padded = GRD_XDR_PAD((size_t)dlen);
        if ((rc = need(&c, padded, "contents")) != GRD_OK) goto fail;
        for (size_t k = dlen; k < padded; k++)
            if (buf[c.pos + k] != 0) {
                rc = grd_fail(err, GRD_E_INVALID, "%s: non-zero padding at offset %zu", c.ctx, c.pos + k);
                goto fail;
            }
        o[i] = c.pos;
        l[i] = dlen;
        c.pos += padded;
    }
    if (c.pos != c.end) {
        rc = grd_fail(err, GRD_E_TRAILING, "%zu bytes follow the last descriptor of the bundle",
                      c.end - c.pos);
        goto fail;
    }
    *n = count;
    *offs = o;
    *lens = l;
    return GRD_OK;
fail:
    free(o);
    free(l);
    return rc;
}
