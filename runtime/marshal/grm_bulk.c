/* grm_bulk.c: the bulk section of CALL and RESULT messages: numeric arrays, only the
 * elements of each sub-range, converted to big-endian in bulk (grw_write_words). A
 * whole array goes straight between the caller's buffer and the socket; a sub-range is
 * gathered into (or scattered from) a temporary buffer of exactly the elements sent. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "grm_internal.h"

struct copy_ctx {
    uint8_t *array;  /* the whole array */
    uint8_t *packed; /* the elements sent, back to back */
    size_t elem;     /* bytes per element */
    size_t pos;      /* bytes of packed consumed or produced */
    int gather;      /* 1: array -> packed, 0: packed -> array */
};

static int copy_run(uint64_t off, uint64_t cnt, void *arg) {
    struct copy_ctx *c = arg;
    size_t n = (size_t)cnt * c->elem;
    uint8_t *a = c->array + (size_t)off * c->elem;
    if (c->gather)
        memcpy(c->packed + c->pos, a, n);
    else
        memcpy(a, c->packed + c->pos, n);
    c->pos += n;
    return 0;
}

static int is_bulk(const grd_param *p) {
    return p->rank > 0 && !grm_is_text(p->type);
}

/* Moves the bulk section of direction DIR: to W (gathering each array's sent elements)
 * when W is given, else from R (scattering them into place). Whole arrays go straight
 * between their buffer and the socket. */
static int move_bulk(grm_call *c, int dir, grw_writer *w, grw_reader *r, gr_err *e) {
    const grd_desc *d = c->desc;
    for (uint32_t i = 0; i < d->nparams; i++) {
        const grd_param *p = &d->params[i];
        const grd_extent *x = &c->sl[i].ext;
        if (!grm_call_travels(c, i, dir) || !is_bulk(p) || x->sent == 0) continue;
        unsigned word = grm_word_size(p->type);
        size_t words = (size_t)x->sent_bytes / word;
        int rc;
        if (x->whole) {
            rc = w ? grw_write_words(w, c->ptr[i], words, word, e)
                   : grw_read_words(r, c->ptr[i], words, word, e);
        } else {
            uint8_t *packed = malloc((size_t)x->sent_bytes);
            if (!packed)
                return gr_seterr(e, GRID_ERR_NOMEM, "out of memory for the sub-range of '%s'", p->name);
            struct copy_ctx cc = {c->ptr[i], packed, grd_type_size(p->type), 0, w != NULL};
            if (w) {
                grm_for_each_run(x, copy_run, &cc);
                rc = grw_write_words(w, packed, words, word, e);
            } else {
                rc = grw_read_words(r, packed, words, word, e);
                if (!rc) grm_for_each_run(x, copy_run, &cc);
            }
            free(packed);
        }
        if (rc) {
            gr_prefixerr(e, "array '%s': ", p->name);
            return rc;
        }
    }
    return GRID_OK;
}

int grm_write_bulk(grw_writer *w, const grm_call *c, int dir, gr_err *e) {
    /* move_bulk only reads the call when writing. */
    return move_bulk((grm_call *)c, dir, w, NULL, e);
}

/* Server: gives every array and out-only text parameter its storage before the call. */
static int server_allocate(grm_call *c, gr_err *e) {
    const grd_desc *d = c->desc;
    for (uint32_t i = 0; i < d->nparams; i++) {
        const grd_param *p = &d->params[i];
        if (p->type == GRD_FILENAME && p->mode == GRD_OUT) {
            int rc = grm_files_allocate_out(c, i, e);
            if (rc) return rc;
        } else if (p->rank > 0 && !c->sl[i].own_buf) {
            /* An array a data handle stands for is bound by the server instead. */
            if ((c->skip[GRM_TO_SERVER] >> i) & 1u) continue;
            size_t bytes = (size_t)c->sl[i].ext.bytes;
            if (bytes == 0) {
                c->ptr[i] = NULL;
                continue;
            }
            /* An array that arrives whole is overwritten at once: no need to zero it. */
            int arrives_whole = grm_travels(p, GRM_TO_SERVER) && c->sl[i].ext.whole && !grm_is_text(p->type);
            /* An executor's call maps its large arrays instead of copying them. */
            int shared = c->share && bytes >= GR_SHBUF_MIN && !grm_is_text(p->type);
            void *b = shared          ? gr_shbuf_alloc(bytes, arrives_whole)
                      : arrives_whole ? malloc(bytes)
                                      : calloc(1, bytes);
            if (!b)
                return gr_seterr(e, GRID_ERR_NOMEM, "the server cannot allocate %zu bytes for '%s'", bytes,
                                 p->name);
            c->ptr[i] = b;
            c->sl[i].own_buf = 1;
        }
    }
    return GRID_OK;
}

int grm_read_bulk(grw_reader *r, grm_call *c, int dir, gr_err *e) {
    if (c->side == GRM_SERVER_SIDE && dir == GRM_TO_SERVER) {
        int rc = server_allocate(c, e);
        if (rc) return rc;
    }
    return move_bulk(c, dir, NULL, r, e);
}
