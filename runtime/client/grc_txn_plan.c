/* grc_txn_plan.c: a transaction's intermediate results that stay on the servers. An
 * output of call J that a later call K reads exactly (the same bytes of the caller's
 * memory, the whole array on both sides, no call in between writing any of them) is
 * kept on J's server as a data handle (GRP_REF_KEEP) and K takes it by reference
 * (GRP_REF_IN): the data goes server to server (DATA_COPY), or stays where it is when
 * K runs there too, and never crosses the client's link. It comes back to the client
 * (GRP_REF_RETURN) only when the caller's memory needs it: no later call overwrites all
 * of it, or a later call reads part of it (that input is assembled on the client). An
 * INOUT that is the only reader of a handle keeps its output in that same handle (one
 * binding per parameter), so a chain of in-place updates stays on the servers.
 *
 * A kept output lives only on the servers: when the ones holding it fail, the reader
 * gets no copy, and the producer runs again (grc_txn_lost_inputs), recursively, since
 * its own kept inputs may be gone too. Every run of a producer keeps into a fresh
 * handle, so a lost handle is never used again. */
#include <stdlib.h>
#include <string.h>

#include "grc_txn.h"

static int numeric(uint32_t type) {
    return type >= GRD_CHAR && type <= GRD_DCOMPLEX;
}

/* 1 when A (an output of one call) and B (an input of a later one) are the same bytes,
 * both whole arrays of one type: B's input is exactly A's output. */
static int exact(const grc_txn_call *ca, const grc_txn_arg *a, const grc_txn_call *cb, const grc_txn_arg *b) {
    const grd_param *pa = &ca->desc->params[a->param], *pb = &cb->desc->params[b->param];
    return !a->handle && !b->handle && a->user == b->user && a->lo == b->lo && a->hi == b->hi &&
           a->bytes == b->bytes && a->ext.whole && b->ext.whole && pa->type == pb->type &&
           a->ext.elems == b->ext.elems && numeric(pa->type) && a->lo < a->hi;
}

/* 1 when B (a write of a later call) covers every byte of A. */
static int covers(const grc_txn_arg *b, const grc_txn_arg *a) {
    return b->writes && !b->scalar && b->ext.whole && b->lo <= a->lo && b->hi >= a->hi;
}

static int overlaps(const grc_txn_arg *a, const grc_txn_arg *b) {
    return a->lo < a->hi && b->lo < b->hi && a->lo < b->hi && b->lo < a->hi;
}

void grc_txn_plan(grc_txn *x, grc_txn_stats *st) {
    for (int k = 0; k < x->ncalls; k++)
        for (uint32_t i = 0; i < x->call[k].narg; i++) {
            x->call[k].arg[i].src = x->call[k].arg[i].src_arg = -1;
            x->call[k].arg[i].keep = x->call[k].arg[i].reuse = x->call[k].arg[i].ret = 0;
            x->call[k].arg[i].readers = 0;
        }
    for (int j = 0; j < x->ncalls; j++) {
        grc_txn_call *cj = &x->call[j];
        for (uint32_t ai = 0; ai < cj->narg; ai++) {
            grc_txn_arg *a = &cj->arg[ai];
            /* A function that must not run twice keeps nothing: a lost result could not be
             * computed again. */
            if (cj->desc->flags & GRD_FF_NO_RETRY) continue;
            if (!a->writes || a->scalar || a->handle || !a->ext.whole || a->lo >= a->hi ||
                !numeric(cj->desc->params[a->param].type))
                continue;
            /* An INOUT fed by a handle keeps into that handle only as its only reader. */
            if (a->src >= 0 && x->call[a->src].arg[a->src_arg].readers != 1) continue;
            int readers = 0, partial = 0, covered = 0;
            for (int k = j + 1; k < x->ncalls && !covered; k++) {
                grc_txn_call *ck = &x->call[k];
                for (uint32_t bi = 0; bi < ck->narg; bi++) {
                    grc_txn_arg *b = &ck->arg[bi];
                    if (!b->reads || !overlaps(a, b)) continue;
                    if (exact(cj, a, ck, b) && b->src < 0)
                        readers++;
                    else
                        partial = 1;
                }
                for (uint32_t bi = 0; bi < ck->narg; bi++)
                    if (ck->arg[bi].writes && overlaps(a, &ck->arg[bi])) {
                        covered = covers(&ck->arg[bi], a);
                        if (!covered) partial = 1; /* later readers see a mix */
                        k = x->ncalls;             /* no exact reader after another writer */
                        break;
                    }
            }
            if (!readers) continue;
            a->keep = 1;
            a->reuse = a->src >= 0;
            a->ret = partial || !covered;
            /* The readers: the same scan, binding each. */
            for (int k = j + 1; k < x->ncalls; k++) {
                grc_txn_call *ck = &x->call[k];
                int stop = 0;
                for (uint32_t bi = 0; bi < ck->narg; bi++) {
                    grc_txn_arg *b = &ck->arg[bi];
                    if (b->reads && b->src < 0 && overlaps(a, b) && exact(cj, a, ck, b)) {
                        b->src = j;
                        b->src_arg = (int)ai;
                        a->readers++;
                        st->by_ref++;
                    }
                }
                for (uint32_t bi = 0; bi < ck->narg; bi++)
                    stop |= ck->arg[bi].writes && overlaps(a, &ck->arg[bi]);
                if (stop) break;
            }
        }
    }
}

grc_data *grc_txn_handle(grc_txn *x, grc_txn_arg *a) {
    /* A reused handle is its input's, which may be reused in turn: follow the chain. */
    for (int guard = 0; a && guard <= x->ncalls; guard++) {
        if (a->keep && !a->reuse) return a->h;
        if (a->src < 0) return NULL;
        a = &x->call[a->src].arg[a->src_arg];
    }
    return NULL;
}

int grc_txn_make_handles(grc_txn_call *c, gr_err *e) {
    for (uint32_t i = 0; i < c->narg; i++) {
        grc_txn_arg *a = &c->arg[i];
        if (!a->keep || a->reuse) continue;
        if (a->h) { /* an earlier run's: its readers that still need it take the new one */
            gr_err ignored;
            grc_data_free(a->h, &ignored);
            a->h = NULL;
        }
        int rc = grc_data_new(&a->h, c->desc->params[a->param].type, a->ext.elems, e);
        if (rc) return rc;
    }
    return GRID_OK;
}

void grc_txn_affinity(grc_txn *x, grc_txn_call *c, grc_route *r) {
    uint32_t n = 0;
    for (uint32_t i = 0; i < c->narg; i++) {
        grc_data *h = c->arg[i].src >= 0 ? grc_txn_handle(x, &c->arg[i]) : NULL;
        if (!h) continue;
        char hosts[GRP_MAX_AFFINITY][GRC_MAX_HOST];
        int ports[GRP_MAX_AFFINITY];
        uint64_t ids[GRP_MAX_AFFINITY];
        int m = grc_data_copies(h, hosts, ports, ids, GRP_MAX_AFFINITY);
        for (int k = 0; k < m; k++) {
            if (!ids[k]) continue;
            uint32_t at = 0;
            while (at < n && c->aff[at].server_id != ids[k])
                at++;
            if (at == n) {
                if (n == GRP_MAX_AFFINITY) continue;
                c->aff[n].server_id = ids[k];
                c->aff[n++].bytes = 0;
            }
            c->aff[at].bytes += c->arg[i].bytes;
        }
    }
    r->affinity = n ? c->aff : NULL;
    r->naffinity = n;
}

int grc_txn_bind(grc_txn *x, grc_txn_call *c, grc_req *q, gr_err *e) {
    for (uint32_t i = 0; i < c->narg; i++) {
        grc_txn_arg *a = &c->arg[i];
        unsigned flags = 0;
        if (a->src >= 0) flags |= GRP_REF_IN;
        if (a->keep) flags |= GRP_REF_KEEP | (a->ret ? GRP_REF_RETURN : 0);
        if (!flags) continue;
        grc_data *h = grc_txn_handle(x, a);
        if (!h) return gr_seterr(e, GRID_ERR_INTERNAL, "a transaction's handle is missing");
        int rc = grc_req_bind(q, a->param, h, flags, e);
        if (rc) return rc;
    }
    return GRID_OK;
}

int grc_txn_lost_inputs(grc_txn *x, grc_txn_call *c) {
    int n = 0;
    for (uint32_t i = 0; i < c->narg; i++) {
        grc_txn_arg *a = &c->arg[i];
        if (a->src < 0) continue;
        grc_data *h = grc_txn_handle(x, a);
        char hosts[1][GRC_MAX_HOST];
        int ports[1];
        uint64_t ids[1];
        if (h && grc_data_copies(h, hosts, ports, ids, 1) > 0) continue;
        /* The producer of the value this input needs runs again (its own lost inputs
         * are found when it fails to start in turn). */
        grc_txn_call *p = &x->call[a->src];
        if (p->state == GRC_TXN_DONE) {
            p->state = GRC_TXN_WAITING;
            n++;
        }
    }
    return n;
}

void grc_txn_free_handles(grc_txn *x) {
    for (int k = 0; k < x->ncalls; k++)
        for (uint32_t i = 0; i < x->call[k].narg; i++)
            if (x->call[k].arg[i].h) {
                gr_err ignored;
                grc_data_free(x->call[k].arg[i].h, &ignored);
                x->call[k].arg[i].h = NULL;
            }
}
