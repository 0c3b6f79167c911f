/* grp_data.c: the messages of remote data handles (docs/protocol.md "Remote data"):
 * DATA_PUT and its reply DATA_OK, DATA_GET and its reply DATA, DATA_FREE, DATA_COPY,
 * SESSION_END, and CALL_DATA (a CALL some of whose arrays are handles: its refs, then a
 * CALL's head and bulk with the referenced arrays left out through grm_call.skip).
 * Elements move as CALL's bulk moves one whole array (grw_write_words/grw_read_words),
 * straight between the caller's buffer and the socket. */
#include <stdio.h>
#include <string.h>

#include "grp_proto.h"

_Static_assert(GRP_MAX_REFS == GRD_MAX_PARAMS, "a call has at most one ref per parameter");
_Static_assert(GRD_MAX_PARAMS <= 64, "skip masks are 64-bit");

int grp_data_type_ok(uint32_t type) {
    return type >= GRD_CHAR && type <= GRD_DCOMPLEX;
}

uint64_t grp_data_bytes(uint32_t type, uint64_t count) {
    if (!grp_data_type_ok(type)) return 0;
    uint64_t size = grd_type_size(type);
    if (count > UINT64_MAX / size) return 0;
    return count * size;
}

uint64_t grp_data_put_bytes(uint32_t type, uint64_t count) {
    return GRW_HEADER_BYTES + 8 + 8 + 4 + 8 + ((grp_data_bytes(type, count) + 3) & ~(uint64_t)3);
}

static int check_id(grp_data_id d, const char *msg, gr_err *e) {
    if (d.session == 0) return gr_seterr(e, GRID_ERR_PROTOCOL, "%s names session 0", msg);
    if (d.handle == 0) return gr_seterr(e, GRID_ERR_PROTOCOL, "%s names data handle 0", msg);
    return GRID_OK;
}

/* The elements of TYPE: COUNT of them at ELEMS, converted as a CALL's bulk array. */
static int write_elems(grw_writer *w, uint32_t type, uint64_t count, const void *elems, gr_err *e) {
    uint64_t bytes = grp_data_bytes(type, count);
    if (!bytes && count)
        return gr_seterr(e, GRID_ERR_ARGS, "%llu elements of type %u cannot be sent",
                         (unsigned long long)count, type);
    if (bytes > SIZE_MAX)
        return gr_seterr(e, GRID_ERR_LIMIT, "data of %llu bytes", (unsigned long long)bytes);
    unsigned word = grm_word_size(type);
    return grw_write_words(w, elems, (size_t)(bytes / word), word, e);
}

static int write_typed(grw_writer *w, uint32_t type, uint64_t count, const void *elems, gr_err *e) {
    if (!grp_data_type_ok(type))
        return gr_seterr(e, GRID_ERR_ARGS, "type %u is not a number type (1..9) and cannot be remote data",
                         type);
    int rc = grw_write_u32(w, type, e);
    if (!rc) rc = grw_write_u64(w, count, e);
    if (!rc) rc = write_elems(w, type, count, elems, e);
    return rc;
}

/* Reads TYPE and COUNT and checks them before the caller allocates for the elements. */
static int read_typed(grw_reader *r, const char *msg, uint32_t *type, uint64_t *count, uint64_t max_bytes,
                      gr_err *e) {
    int rc = grw_read_u32(r, type, e);
    if (!rc) rc = grw_read_u64(r, count, e);
    if (rc) return rc;
    if (!grp_data_type_ok(*type))
        return gr_seterr(e, GRID_ERR_PROTOCOL, "%s carries element type %u: not a number type (1..9)", msg,
                         *type);
    uint64_t size = grd_type_size(*type);
    if (*count > max_bytes / size)
        return gr_seterr(e, GRID_ERR_LIMIT,
                         "%s of %llu elements of %llu bytes exceeds the limit of %llu bytes", msg,
                         (unsigned long long)*count, (unsigned long long)size, (unsigned long long)max_bytes);
    /* A count the message cannot hold is refused before anything is allocated for it. */
    if (*count * size > r->max_message - r->consumed)
        return gr_seterr(e, GRID_ERR_LIMIT, "%s of %llu bytes cannot fit the message limit of %llu bytes",
                         msg, (unsigned long long)(*count * size), (unsigned long long)r->max_message);
    return GRID_OK;
}

int grp_read_data_elems(grw_reader *r, uint32_t type, uint64_t count, void *buf, gr_err *e) {
    uint64_t bytes = grp_data_bytes(type, count);
    if ((!bytes && count) || bytes > SIZE_MAX)
        return gr_seterr(e, GRID_ERR_INTERNAL, "%llu elements of type %u cannot be read",
                         (unsigned long long)count, type);
    unsigned word = grm_word_size(type);
    int rc = grw_read_words(r, buf, (size_t)(bytes / word), word, e);
    if (!rc) rc = grw_end(r, e);
    return rc;
}

/* ---------------------------------------------------------------- DATA_PUT, DATA */

int grp_write_data_put(grw_writer *w, uint64_t id, grp_data_id d, uint32_t type, uint64_t count,
                       const void *elems, gr_err *e) {
    int rc = grw_begin(w, GRP_DATA_PUT, 0, id, e);
    if (!rc) rc = grw_write_u64(w, d.session, e);
    if (!rc) rc = grw_write_u64(w, d.handle, e);
    if (!rc) rc = write_typed(w, type, count, elems, e);
    if (!rc) rc = grw_finish(w, e);
    return rc;
}

int grp_read_data_put(grw_reader *r, grp_data_id *d, uint32_t *type, uint64_t *count, uint64_t max_bytes,
                      gr_err *e) {
    int rc = grw_read_u64(r, &d->session, e);
    if (!rc) rc = grw_read_u64(r, &d->handle, e);
    if (!rc) rc = check_id(*d, "DATA_PUT", e);
    if (!rc) rc = read_typed(r, "DATA_PUT", type, count, max_bytes, e);
    return rc;
}

int grp_write_data(grw_writer *w, uint64_t id, uint32_t type, uint64_t count, const void *elems, gr_err *e) {
    int rc = grw_begin(w, GRP_DATA, 0, id, e);
    if (!rc) rc = write_typed(w, type, count, elems, e);
    if (!rc) rc = grw_finish(w, e);
    return rc;
}

int grp_read_data(grw_reader *r, uint32_t *type, uint64_t *count, uint64_t max_bytes, gr_err *e) {
    return read_typed(r, "DATA", type, count, max_bytes, e);
}

/* ---------------------------------------------------------------- DATA_GET, DATA_FREE */

static int write_id(grw_writer *w, uint32_t type, uint64_t id, grp_data_id d, gr_err *e) {
    int rc = grw_begin(w, type, 0, id, e);
    if (!rc) rc = grw_write_u64(w, d.session, e);
    if (!rc) rc = grw_write_u64(w, d.handle, e);
    if (!rc) rc = grw_finish(w, e);
    return rc;
}

static int read_id(grw_reader *r, const char *msg, grp_data_id *d, gr_err *e) {
    int rc = grw_read_u64(r, &d->session, e);
    if (!rc) rc = grw_read_u64(r, &d->handle, e);
    if (!rc) rc = grw_end(r, e);
    if (!rc) rc = check_id(*d, msg, e);
    return rc;
}

int grp_write_data_get(grw_writer *w, uint64_t id, grp_data_id d, gr_err *e) {
    return write_id(w, GRP_DATA_GET, id, d, e);
}

int grp_read_data_get(grw_reader *r, grp_data_id *d, gr_err *e) {
    return read_id(r, "DATA_GET", d, e);
}

int grp_write_data_free(grw_writer *w, uint64_t id, grp_data_id d, gr_err *e) {
    return write_id(w, GRP_DATA_FREE, id, d, e);
}

int grp_read_data_free(grw_reader *r, grp_data_id *d, gr_err *e) {
    return read_id(r, "DATA_FREE", d, e);
}

/* ---------------------------------------------------------------- DATA_COPY, SESSION_END */

int grp_write_data_copy(grw_writer *w, uint64_t id, const grp_data_copy *m, gr_err *e) {
    int rc = grw_begin(w, GRP_DATA_COPY, 0, id, e);
    if (!rc) rc = grw_write_u64(w, m->d.session, e);
    if (!rc) rc = grw_write_u64(w, m->d.handle, e);
    if (!rc) rc = grw_write_string(w, m->host, e);
    if (!rc) rc = grw_write_u32(w, m->port, e);
    if (!rc) rc = grw_finish(w, e);
    return rc;
}

int grp_read_data_copy(grw_reader *r, grp_data_copy *m, gr_err *e) {
    int rc = grw_read_u64(r, &m->d.session, e);
    if (!rc) rc = grw_read_u64(r, &m->d.handle, e);
    if (!rc) rc = grw_read_string_buf(r, m->host, GRP_MAX_HOST, e);
    if (!rc) rc = grw_read_u32(r, &m->port, e);
    if (!rc) rc = grw_end(r, e);
    if (!rc) rc = check_id(m->d, "DATA_COPY", e);
    if (!rc && !m->host[0]) rc = gr_seterr(e, GRID_ERR_PROTOCOL, "DATA_COPY names no destination host");
    if (!rc && (m->port == 0 || m->port > 65535))
        rc = gr_seterr(e, GRID_ERR_PROTOCOL, "DATA_COPY names port %u (1..65535)", m->port);
    return rc;
}

int grp_write_session_end(grw_writer *w, uint64_t id, uint64_t session, gr_err *e) {
    int rc = grw_begin(w, GRP_SESSION_END, 0, id, e);
    if (!rc) rc = grw_write_u64(w, session, e);
    if (!rc) rc = grw_finish(w, e);
    return rc;
}

int grp_read_session_end(grw_reader *r, uint64_t *session, gr_err *e) {
    int rc = grw_read_u64(r, session, e);
    if (!rc) rc = grw_end(r, e);
    if (!rc && *session == 0) rc = gr_seterr(e, GRID_ERR_PROTOCOL, "SESSION_END names session 0");
    return rc;
}

/* ---------------------------------------------------------------- CALL_DATA */

int grp_refs_valid(const grp_ref *refs, uint32_t n, gr_err *e) {
    if (n > GRP_MAX_REFS)
        return gr_seterr(e, GRID_ERR_LIMIT, "%u data handle refs exceed the limit of %u", n, GRP_MAX_REFS);
    for (uint32_t k = 0; k < n; k++) {
        const grp_ref *f = &refs[k];
        if (f->param >= GRD_MAX_PARAMS)
            return gr_seterr(e, GRID_ERR_PROTOCOL, "ref %u names parameter %u (a function has at most %u)", k,
                             f->param, GRD_MAX_PARAMS);
        if (k > 0 && f->param <= refs[k - 1].param)
            return gr_seterr(e, GRID_ERR_PROTOCOL,
                             "ref %u names parameter %u after parameter %u: refs must be in strictly "
                             "increasing parameter order",
                             k, f->param, refs[k - 1].param);
        if (f->handle == 0)
            return gr_seterr(e, GRID_ERR_PROTOCOL, "ref %u (parameter %u) names data handle 0", k, f->param);
        if (f->flags == 0 || (f->flags & ~(uint32_t)GRP_REF_ALL))
            return gr_seterr(e, GRID_ERR_PROTOCOL,
                             "ref %u (parameter %u) has flags 0x%x (IN 1, KEEP 2, RETURN 4)", k, f->param,
                             f->flags);
        if ((f->flags & GRP_REF_RETURN) && !(f->flags & GRP_REF_KEEP))
            return gr_seterr(e, GRID_ERR_PROTOCOL, "ref %u (parameter %u) has RETURN without KEEP", k,
                             f->param);
    }
    return GRID_OK;
}

int grp_refs_check(const grd_desc *d, const char *fn, const grp_ref *refs, uint32_t n, gr_err *e) {
    for (uint32_t k = 0; k < n; k++) {
        const grp_ref *f = &refs[k];
        if (f->param >= d->nparams)
            return gr_seterr(e, GRID_ERR_ARGS, "a data handle is passed for parameter %u of %s, which has %u",
                             f->param + 1, fn, d->nparams);
        const grd_param *p = &d->params[f->param];
        if (p->rank == 0 || !grp_data_type_ok(p->type) || p->mode == GRD_WORK)
            return gr_seterr(
                e, GRID_ERR_ARGS,
                "parameter %u (%s) of %s is a %s %s%s: only numeric IN, OUT or INOUT arrays take "
                "a data handle",
                f->param + 1, p->name, fn, grd_mode_name(p->mode), grd_type_name(p->type),
                p->rank ? " array" : "");
        const char *why = NULL;
        if (p->mode == GRD_IN && f->flags != GRP_REF_IN)
            why = "an IN parameter's handle can only be read (IN)";
        else if (p->mode == GRD_OUT && (f->flags & GRP_REF_IN))
            why = "an OUT parameter has no input to read from a handle";
        else if (p->mode == GRD_OUT && !(f->flags & GRP_REF_KEEP))
            why = "an OUT parameter's handle must be KEEP";
        if (why)
            return gr_seterr(e, GRID_ERR_ARGS, "parameter %u (%s) of %s: %s (flags 0x%x)", f->param + 1,
                             p->name, fn, why, f->flags);
    }
    return GRID_OK;
}

void grp_refs_skip(const grp_ref *refs, uint32_t n, uint64_t skip[3]) {
    skip[0] = skip[GRM_TO_SERVER] = skip[GRM_TO_CLIENT] = 0;
    for (uint32_t k = 0; k < n && k < GRP_MAX_REFS; k++) {
        uint64_t bit = (uint64_t)1 << (refs[k].param % 64);
        if (refs[k].flags & GRP_REF_IN) skip[GRM_TO_SERVER] |= bit;
        if ((refs[k].flags & GRP_REF_KEEP) && !(refs[k].flags & GRP_REF_RETURN)) skip[GRM_TO_CLIENT] |= bit;
    }
}

int grp_write_call_data(grw_writer *w, uint64_t id, const char *name, uint64_t hash, uint64_t session,
                        const grp_ref *refs, uint32_t nrefs, const grm_call *c, const grw_limits *lim,
                        gr_err *e) {
    int rc = grp_refs_valid(refs, nrefs, e);
    if (rc) return rc == GRID_ERR_PROTOCOL ? gr_seterr(e, GRID_ERR_INTERNAL, "CALL_DATA: %s", e->msg) : rc;
    uint64_t skip[3];
    grp_refs_skip(refs, nrefs, skip);
    if (skip[GRM_TO_SERVER] != c->skip[GRM_TO_SERVER] || skip[GRM_TO_CLIENT] != c->skip[GRM_TO_CLIENT])
        return gr_seterr(e, GRID_ERR_INTERNAL, "CALL_DATA: the call's skip masks are not its refs'");
    if (session == 0) return gr_seterr(e, GRID_ERR_INTERNAL, "CALL_DATA: session 0");
    rc = grw_begin(w, GRP_CALL_DATA, 0, id, e);
    if (!rc) rc = grw_write_string(w, name, e);
    if (!rc) rc = grw_write_u64(w, hash, e);
    if (!rc) rc = grw_write_u64(w, session, e);
    if (!rc) rc = grw_write_u32(w, nrefs, e);
    for (uint32_t k = 0; k < nrefs && !rc; k++) {
        rc = grw_write_u32(w, refs[k].param, e);
        if (!rc) rc = grw_write_u64(w, refs[k].handle, e);
        if (!rc) rc = grw_write_u32(w, refs[k].flags, e);
    }
    if (!rc) rc = grm_write_head(w, c, GRM_TO_SERVER, lim, e);
    if (!rc) rc = grm_write_bulk(w, c, GRM_TO_SERVER, e);
    if (!rc) rc = grw_finish(w, e);
    return rc;
}

int grp_read_call_data_target(grw_reader *r, grp_call_data_target *t, gr_err *e) {
    t->hash = t->session = 0;
    t->nrefs = 0;
    int rc = grw_read_string_buf(r, t->name, GRP_MAX_FUNCTION_NAME, e);
    if (!rc) rc = grw_read_u64(r, &t->hash, e);
    if (!rc) rc = grw_read_u64(r, &t->session, e);
    uint32_t n = 0;
    if (!rc) rc = grw_read_u32(r, &n, e);
    if (rc) return rc;
    if (t->session == 0) return gr_seterr(e, GRID_ERR_PROTOCOL, "CALL_DATA names session 0");
    if (n > GRP_MAX_REFS)
        return gr_seterr(e, GRID_ERR_LIMIT, "CALL_DATA carries %u data handle refs; the limit is %u", n,
                         GRP_MAX_REFS);
    for (uint32_t k = 0; k < n && !rc; k++) {
        rc = grw_read_u32(r, &t->refs[k].param, e);
        if (!rc) rc = grw_read_u64(r, &t->refs[k].handle, e);
        if (!rc) rc = grw_read_u32(r, &t->refs[k].flags, e);
    }
    if (rc) return rc;
    t->nrefs = n;
    rc = grp_refs_valid(t->refs, n, e);
    if (!rc && !t->name[0]) rc = gr_seterr(e, GRID_ERR_PROTOCOL, "CALL_DATA names no function");
    return rc;
}

uint64_t grp_call_data_bytes(const char *name, uint32_t nrefs, const grm_call *c) {
    return grp_call_bytes(name, c) + 8 + 4 + 16 * (uint64_t)nrefs;
}
