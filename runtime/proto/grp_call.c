/* grp_call.c: the CALL and RESULT messages. Their fixed parts (the target function and
 * its descriptor hash; the server's queue and run times) are written and read here,
 * and their arguments by the descriptor-driven marshaller (grm_marshal.h): the head
 * section (scalars, strings, files) then the bulk section (numeric arrays). */
#include <string.h>
#include <sys/stat.h>

#include "grp_proto.h"

/* ---------------------------------------------------------------- CALL */

int grp_write_call(grw_writer *w, uint64_t id, const char *name, uint64_t hash, const grm_call *c,
                   const grw_limits *lim, gr_err *e) {
    return grp_write_call_as(w, GRP_CALL, id, name, hash, c, lim, e);
}

int grp_write_call_as(grw_writer *w, uint32_t type, uint64_t id, const char *name, uint64_t hash,
                      const grm_call *c, const grw_limits *lim, gr_err *e) {
    int rc = grw_begin(w, type, 0, id, e);
    if (!rc) rc = grw_write_string(w, name, e);
    if (!rc) rc = grw_write_u64(w, hash, e);
    if (!rc) rc = grm_write_head(w, c, GRM_TO_SERVER, lim, e);
    if (!rc) rc = grm_write_bulk(w, c, GRM_TO_SERVER, e);
    if (!rc) rc = grw_finish(w, e);
    return rc;
}

int grp_read_call_target(grw_reader *r, grp_call_target *t, gr_err *e) {
    t->hash = 0;
    int rc = grw_read_string_buf(r, t->name, GRP_MAX_FUNCTION_NAME, e);
    if (!rc) rc = grw_read_u64(r, &t->hash, e);
    return rc;
}

int grp_read_call_head(grw_reader *r, grm_call *c, const grw_limits *lim, gr_err *e) {
    return grm_read_head(r, c, GRM_TO_SERVER, lim, e);
}

int grp_read_call_bulk(grw_reader *r, grm_call *c, gr_err *e) {
    int rc = grm_read_bulk(r, c, GRM_TO_SERVER, e);
    if (!rc) rc = grw_end(r, e);
    return rc;
}

uint64_t grp_call_bulk_bytes(const grm_call *c) {
    uint64_t n = 0;
    for (uint32_t i = 0; i < c->desc->nparams; i++) {
        const grd_param *p = &c->desc->params[i];
        if (p->rank && p->type != GRD_STRING && p->type != GRD_FILENAME &&
            grm_call_travels(c, i, GRM_TO_SERVER))
            n += c->sl[i].ext.sent_bytes;
    }
    return n;
}

uint64_t grp_call_array_bytes(const grm_call *c) {
    uint64_t n = 0;
    for (uint32_t i = 0; i < c->desc->nparams; i++) {
        const grd_param *p = &c->desc->params[i];
        /* As grm_read_bulk allocates them: a data handle's array is the server's own. */
        if (p->rank && !((c->skip[GRM_TO_SERVER] >> i) & 1u) && !c->sl[i].own_buf) n += c->sl[i].ext.bytes;
    }
    return n;
}

static uint64_t pad4(uint64_t n) {
    return (n + 3) & ~(uint64_t)3;
}

uint64_t grp_call_bytes(const char *name, const grm_call *c) {
    uint64_t n = GRW_HEADER_BYTES + 4 + pad4(strlen(name)) + 8 + 4; /* target, hash, head length */
    for (uint32_t i = 0; i < c->desc->nparams; i++) {
        const grd_param *p = &c->desc->params[i];
        if (!grm_call_travels(c, i, GRM_TO_SERVER)) continue;
        if (p->type == GRD_STRING || p->type == GRD_FILENAME) {
            const char *s = p->rank == 0 && c->ptr[i] ? *(char *const *)c->ptr[i] : NULL;
            struct stat st;
            if (p->rank)
                n += 8 * c->sl[i].ext.sent;
            else if (!s)
                n += 4;
            else if (p->type == GRD_STRING)
                n += 8 + pad4(strlen(s));
            else
                n += 8 + (stat(s, &st) == 0 ? pad4((uint64_t)st.st_size) : 0);
        } else if (p->rank == 0) {
            n += grd_type_size(p->type) > 4 ? grd_type_size(p->type) : 4;
        } else {
            n += pad4(c->sl[i].ext.sent_bytes);
        }
    }
    return n;
}

/* ---------------------------------------------------------------- RESULT */

int grp_write_result(grw_writer *w, uint64_t id, const grp_result_times *t, const grm_call *c,
                     const grw_limits *lim, gr_err *e) {
    int rc = grw_begin(w, GRP_RESULT, 0, id, e);
    if (!rc) rc = grw_write_u64(w, t->queue_ns, e);
    if (!rc) rc = grw_write_u64(w, t->run_ns, e);
    if (!rc) rc = grm_write_head(w, c, GRM_TO_CLIENT, lim, e);
    if (!rc) rc = grm_write_bulk(w, c, GRM_TO_CLIENT, e);
    if (!rc) rc = grw_finish(w, e);
    return rc;
}

int grp_read_result(grw_reader *r, grm_call *c, grp_result_times *t, gr_err *e) {
    /* The arrays land in the caller's own buffers, sized by the caller and checked
     * against the call's extents; the message limit still bounds the whole. */
    grw_limits mine;
    grp_limits_default(&mine);
    mine.max_message = r->max_message;
    mine.max_array = (uint64_t)-1 >> 1;
    mine.max_head = 0xffffffffu;
    int rc = grw_read_u64(r, &t->queue_ns, e);
    if (!rc) rc = grw_read_u64(r, &t->run_ns, e);
    if (!rc) rc = grm_read_head(r, c, GRM_TO_CLIENT, &mine, e);
    if (!rc) rc = grm_read_bulk(r, c, GRM_TO_CLIENT, e);
    if (!rc) rc = grw_end(r, e);
    return rc;
}

uint64_t grp_result_bytes(const grm_call *c) {
    uint64_t n = GRW_HEADER_BYTES + 16 + 4;
    for (uint32_t i = 0; i < c->desc->nparams; i++) {
        const grd_param *p = &c->desc->params[i];
        if (!grm_call_travels(c, i, GRM_TO_CLIENT)) continue;
        if (p->type == GRD_STRING || p->type == GRD_FILENAME) {
            uint64_t elems = p->rank ? c->sl[i].ext.sent : 1;
            n += 8 * elems;
            if (p->rank == 0 && p->type == GRD_STRING && c->ptr[i] && *(char **)c->ptr[i])
                n += (strlen(*(char **)c->ptr[i]) + 3) & ~(uint64_t)3;
        } else if (p->rank == 0) {
            n += grd_type_size(p->type) > 4 ? grd_type_size(p->type) : 4;
        } else {
            n += (c->sl[i].ext.sent_bytes + 3) & ~(uint64_t)3;
        }
    }
    return n;
}
