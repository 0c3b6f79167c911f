/* grc_txn_graph.c: the data dependencies of a transaction, from the bytes each call
 * touches. Every array argument covers the bytes from its first to its last element
 * that travels (its extent's sent part: a sub-range touches only that); a call's read
 * set is its IN and INOUT arrays, its write set its OUT and INOUT arrays and scalar
 * outputs. Overlapping ranges make an edge: read after write (RAW), write after read
 * (WAR), write after write (WAW). Only RAW orders the run: every output goes to the
 * call's private stage and lands in the caller's memory in program order at the end,
 * so a later writer never disturbs an earlier reader and the last writer wins, as in
 * a run one by one. Also the byte copies between stages and the caller's memory,
 * element run by element run (a strided or sub-range output moves only its elements). */
#include <stdlib.h>
#include <string.h>

#include "grc_txn.h"

void grc_txn_runs(const grd_extent *ext, void (*fn)(uint64_t off, uint64_t cnt, void *arg), void *arg) {
    uint32_t r = ext->rank;
    if (ext->sent == 0) return;
    if (r == 0) { /* a scalar region */
        fn(0, 1, arg);
        return;
    }
    uint64_t stride[GRD_MAX_RANK], idx[GRD_MAX_RANK];
    stride[r - 1] = 1;
    for (uint32_t k = r - 1; k > 0; k--)
        stride[k - 1] = stride[k] * (uint64_t)ext->size[k];
    memset(idx, 0, sizeof idx);
    for (;;) {
        uint64_t base = 0;
        for (uint32_t k = 0; k + 1 < r; k++)
            base += ((uint64_t)ext->start[k] + idx[k] * (uint64_t)ext->step[k]) * stride[k];
        uint64_t first = base + (uint64_t)ext->start[r - 1];
        if (ext->step[r - 1] == 1)
            fn(first, ext->count[r - 1], arg);
        else
            for (uint64_t j = 0; j < ext->count[r - 1]; j++)
                fn(first + j * (uint64_t)ext->step[r - 1], 1, arg);
        /* The next index of the outer dimensions, the last varying fastest. */
        int k = (int)r - 2;
        while (k >= 0 && ++idx[k] >= ext->count[k])
            idx[k--] = 0;
        if (k < 0) return;
    }
}

struct span {
    uint64_t lo, hi;
    int any;
};
static void widen(uint64_t off, uint64_t cnt, void *arg) {
    struct span *s = arg;
    if (!s->any || off < s->lo) s->lo = off;
    if (!s->any || off + cnt > s->hi) s->hi = off + cnt;
    s->any = 1;
}

void grc_txn_arg_range(grc_txn_arg *a) {
    a->lo = a->hi = 0;
    if (!a->user || a->ext.sent == 0) return;
    /* The first and last elements touched: the corners of the sent box (the runs
     * would find them too, element by element, for a strided range). */
    struct span s = {0, 0, 0};
    uint32_t r = a->ext.rank;
    if (r == 0) {
        widen(0, 1, &s);
    } else {
        uint64_t stride[GRD_MAX_RANK], first = 0, lastel = 0;
        stride[r - 1] = 1;
        for (uint32_t k = r - 1; k > 0; k--)
            stride[k - 1] = stride[k] * (uint64_t)a->ext.size[k];
        for (uint32_t k = 0; k < r; k++) {
            first += (uint64_t)a->ext.start[k] * stride[k];
            lastel +=
                ((uint64_t)a->ext.start[k] + (a->ext.count[k] - 1) * (uint64_t)a->ext.step[k]) * stride[k];
        }
        widen(first, lastel - first + 1, &s);
    }
    a->lo = (uintptr_t)a->user + (uintptr_t)(s.lo * a->es);
    a->hi = (uintptr_t)a->user + (uintptr_t)(s.hi * a->es);
}

static int overlap(const grc_txn_arg *a, const grc_txn_arg *b) {
    return a->lo < a->hi && b->lo < b->hi && a->lo < b->hi && b->lo < a->hi;
}

unsigned grc_txn_depends(const grc_txn_call *j, const grc_txn_call *k) {
    unsigned kinds = 0;
    for (uint32_t a = 0; a < j->narg; a++)
        for (uint32_t b = 0; b < k->narg; b++) {
            const grc_txn_arg *x = &j->arg[a], *y = &k->arg[b];
            if (!overlap(x, y)) continue;
            if (x->writes && y->reads) kinds |= GRC_TXN_RAW;
            if (x->reads && y->writes) kinds |= GRC_TXN_WAR;
            if (x->writes && y->writes) kinds |= GRC_TXN_WAW;
        }
    return kinds;
}

int grc_txn_graph(grc_txn *x, grc_txn_stats *st, gr_err *e) {
    for (int k = 0; k < x->ncalls; k++) {
        grc_txn_call *c = &x->call[k];
        free(c->deps);
        c->deps = NULL;
        c->ndeps = 0;
        for (int j = 0; j < k; j++) {
            unsigned kinds = grc_txn_depends(&x->call[j], c);
            st->raw += (kinds & GRC_TXN_RAW) != 0;
            st->war += (kinds & GRC_TXN_WAR) != 0;
            st->waw += (kinds & GRC_TXN_WAW) != 0;
            if (!(kinds & GRC_TXN_RAW)) continue;
            int *v = realloc(c->deps, (size_t)(c->ndeps + 1) * sizeof *v);
            if (!v) return gr_seterr(e, GRID_ERR_NOMEM, "out of memory building the transaction's graph");
            c->deps = v;
            c->deps[c->ndeps++] = j;
        }
    }
    return GRID_OK;
}

struct copy {
    const grc_txn_arg *src;
    uintptr_t dlo, dhi; /* the destination's bytes, as caller addresses */
    char *dst;          /* where dlo lands */
};
static void copy_run(uint64_t off, uint64_t cnt, void *arg) {
    struct copy *m = arg;
    uintptr_t lo = (uintptr_t)m->src->user + (uintptr_t)(off * m->src->es);
    uintptr_t hi = lo + (uintptr_t)(cnt * m->src->es);
    if (lo < m->dlo) lo = m->dlo;
    if (hi > m->dhi) hi = m->dhi;
    if (lo >= hi) return;
    memcpy(m->dst + (lo - m->dlo), m->src->stage + (lo - (uintptr_t)m->src->user), hi - lo);
}

void grc_txn_overlay(const grc_txn_arg *src, grc_txn_arg *dst) {
    if (!src->stage || !dst->stage || !overlap(src, dst)) return;
    struct copy m = {src, (uintptr_t)dst->user, (uintptr_t)dst->user + (uintptr_t)dst->bytes, dst->stage};
    grc_txn_runs(&src->ext, copy_run, &m);
}

void grc_txn_land(const grc_txn_arg *src) {
    if (!src->stage || src->lo >= src->hi) return;
    struct copy m = {src, src->lo, src->hi, (char *)src->lo};
    grc_txn_runs(&src->ext, copy_run, &m);
}
