/* gsv_data_call.c: CALL_DATA, a CALL some of whose arrays are data handles of the
 * session. After the head is read (the call's scalars size every array), each IN ref's
 * buffer is checked against the parameter (type, full element count) and bound as the
 * argument: shared for an IN parameter (the function only reads it), a private copy for
 * an INOUT one so that concurrent readers never see a half-written array. The bytes of
 * every KEEP output are reserved before the call is queued, so no computed result is
 * lost to --data-memory; when the function succeeded each is stored as its handle
 * (the buffer itself, no copy) before RESULT goes, so the client may use the handle as
 * soon as it has the answer. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grp_proto.h"
#include "gsv.h"

struct gsv_dcall {
    uint64_t session;
    uint32_t nrefs;
    grp_ref refs[GRP_MAX_REFS];
    gsv_dbuf *held[GRP_MAX_REFS]; /* IN buffers and stored KEEP outputs: references of the call */
    uint64_t reserved;            /* KEEP bytes reserved and not stored yet */
};

/* After the function ran successfully: stores JOB's KEEP outputs (before RESULT goes). */
static void keep_outputs(gsv_job *job) {
    struct gsv_dcall *dc = job->priv;
    if (!dc) return;
    const grd_desc *d = job->fn->desc;
    for (uint32_t k = 0; k < dc->nrefs; k++) {
        const grp_ref *f = &dc->refs[k];
        if (!(f->flags & GRP_REF_KEEP)) continue;
        uint32_t i = f->param;
        const grd_param *p = &d->params[i];
        grm_slot *sl = &job->call.sl[i];
        uint64_t bytes = sl->ext.bytes;
        /* The output buffer becomes the handle's: no copy. RETURN still sends it from
         * there, under the call's own reference. */
        void *buf = sl->own_buf ? job->call.ptr[i] : NULL;
        if (!buf && bytes) continue; /* never: the server allocated every output */
        gsv_dbuf *ref = NULL;
        uint64_t held = gsv_data_store(dc->session, f->handle, p->type, sl->ext.elems, buf, &ref);
        dc->reserved -= bytes;
        if (!ref) continue; /* not stored (logged): the buffer stays the call's */
        sl->own_buf = 0;
        if (dc->held[k]) gsv_data_release(dc->held[k]); /* the INOUT input's, no longer needed */
        if (!(f->flags & GRP_REF_RETURN)) {
            /* Nothing sends it: the store's is the only reference from here, so a client
             * that frees the handle as soon as the RESULT arrives frees the memory then,
             * not when this worker gets to release the job (a loaded server's limit
             * refused the next put otherwise). */
            gsv_data_release(ref);
            ref = NULL;
            job->call.ptr[i] = NULL;
        }
        dc->held[k] = ref;
        char a[32], b[32];
        gsv_log(GSV_LOG_INFO,
                "data keep %s session=%016" PRIx64 " handle=%" PRIu64
                " from parameter %u (%s) of %s: %" PRIu64 " %s (%s)%s, holding %s",
                job->conn->peer, dc->session, f->handle, i + 1, p->name, job->fn->qualified, sl->ext.elems,
                gsv_data_elems(p->type), gsv_data_size(bytes, a, sizeof a),
                (f->flags & GRP_REF_RETURN) ? " and returned" : "", gsv_data_size(held, b, sizeof b));
    }
}

/* Frees what JOB holds of the store (references, reservations). */
static void release_refs(gsv_job *job) {
    struct gsv_dcall *dc = job->priv;
    if (!dc) return;
    for (uint32_t k = 0; k < dc->nrefs; k++)
        gsv_data_release(dc->held[k]);
    if (dc->reserved) gsv_data_unreserve(dc->reserved);
    free(dc);
    job->priv = NULL;
}

/* A failed callback fails the call; else its KEEP outputs become handles. */
static int data_call_ran(gsv_job *job, gr_err *e) {
    int rc = gsv_callback_failed(job, e);
    if (!rc) keep_outputs(job);
    return rc;
}

static void data_call_release(gsv_job *job) {
    gsv_callback_detach(job);
    release_refs(job);
}

/* CALL_DATA's job: a call (gsv_call_answer) with data handles bound; it may run in an
 * executor (its outputs come back into the job's buffers, from which data_call_ran
 * stores the KEEP ones here). */
static const gsv_job_kind data_call_kind = {.where = GSV_WHERE_ISOLABLE,
                                            .run = gsv_call_answer,
                                            .fail = gsv_call_refuse,
                                            .ran = data_call_ran,
                                            .release = data_call_release};

/* Binds the refs of JOB (head read, extents known) and reserves its KEEP outputs. */
static int bind_refs(gsv_job *job, gr_err *e) {
    struct gsv_dcall *dc = job->priv;
    const grd_desc *d = job->fn->desc;
    const char *fn = job->fn->qualified;
    for (uint32_t k = 0; k < dc->nrefs; k++) {
        const grp_ref *f = &dc->refs[k];
        const grd_param *p = &d->params[f->param];
        const grd_extent *x = &job->call.sl[f->param].ext;
        if (f->flags & GRP_REF_IN) {
            gsv_dbuf *b = gsv_data_get(dc->session, f->handle);
            if (!b) {
                gsv_data_unknown(f->handle, e);
                gr_prefixerr(e, "parameter %u (%s) of %s: ", f->param + 1, p->name, fn);
                return e->code;
            }
            dc->held[k] = b;
            if (b->type != p->type || b->count != x->elems)
                return gr_seterr(e, GRID_ERR_ARGS,
                                 "parameter %u (%s) of %s takes %" PRIu64 " %s; handle %" PRIu64
                                 " holds %" PRIu64 " %s",
                                 f->param + 1, p->name, fn, x->elems, gsv_data_elems(p->type), f->handle,
                                 b->count, gsv_data_elems(b->type));
            if (p->mode == GRD_INOUT && b->bytes) {
                void *copy = malloc((size_t)b->bytes);
                if (!copy)
                    return gr_seterr(e, GRID_ERR_NOMEM,
                                     "the server cannot allocate %" PRIu64 " bytes for '%s'", b->bytes,
                                     p->name);
                memcpy(copy, b->p, (size_t)b->bytes);
                job->call.ptr[f->param] = copy;
                job->call.sl[f->param].own_buf = 1;
            } else {
                /* (grm_read_bulk leaves an array skipped TO_SERVER alone.) */
                job->call.ptr[f->param] = b->p;
            }
        }
        if (f->flags & GRP_REF_KEEP) {
            char what[400];
            snprintf(what, sizeof what, "the KEEP output of parameter %u (%s) of %s", f->param + 1, p->name,
                     fn);
            int rc = gsv_data_reserve(x->bytes, what, e);
            if (rc) return rc;
            dc->reserved += x->bytes;
        }
    }
    return GRID_OK;
}

int gsv_data_call_request(gsv_conn *c, const grw_header *h) {
    gsv_server *s = c->srv;
    gr_err e;
    grp_call_data_target *t = malloc(sizeof *t);
    if (!t) {
        gr_seterr(&e, GRID_ERR_NOMEM, "the server is out of memory: retry later");
        return gsv_request_failed(c, h, "CALL_DATA message", &e);
    }
    int rc = grp_read_call_data_target(&c->r, t, &e);
    const gsv_function *f = rc ? NULL : gsv_registry_find(&s->reg, t->name, c, &e);
    if (f && t->hash != f->desc->hash)
        rc = gr_seterr(
            &e, GRID_ERR_STALE,
            "the interface of %s changed on the server (descriptor hash %016llx, the client used %016llx): "
            "fetch the descriptor again",
            f->qualified, (unsigned long long)f->desc->hash, (unsigned long long)t->hash);
    else if (f)
        rc = grp_refs_check(f->desc, f->qualified, t->refs, t->nrefs, &e);
    if (!rc && f) rc = gsv_data_join(c, t->session, 0, NULL, &e);
    if (rc || !f) {
        if (e.code != GRID_ERR_PROTOCOL && e.code != GRID_ERR_CONN_LOST)
            gsv_call_log(c->peer, f ? f->qualified : t->name, h->request_id, c->r.consumed, 0, 0, 0, e.code,
                         e.msg);
        free(t);
        return gsv_request_failed(c, h, "CALL_DATA message", &e);
    }

    gsv_job *job = gsv_job_new(&data_call_kind, s, c, f, h->request_id);
    struct gsv_dcall *dc = calloc(1, sizeof *dc);
    if (!job || !dc) {
        gsv_job_free(job);
        free(dc);
        free(t);
        gr_seterr(&e, GRID_ERR_NOMEM, "the server is out of memory: retry later");
        return gsv_request_failed(c, h, "CALL_DATA message", &e);
    }
    dc->session = t->session;
    dc->nrefs = t->nrefs;
    memcpy(dc->refs, t->refs, t->nrefs * sizeof *t->refs);
    free(t);
    job->priv = dc;
    grp_refs_skip(dc->refs, dc->nrefs, job->call.skip);
    return gsv_request_queue_call(s, c, job, f, h, bind_refs, "CALL_DATA message");
}
