/* grm_call.c: one call's arguments: building them from grid_call's variadic list,
 * sizing every array from the descriptor, and releasing what the server allocated. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "grm_internal.h"

void grm_init(grm_call *c, const grd_desc *d, int side) {
    /* Only the slots of D's parameters: the table has room for GRD_MAX_PARAMS, and
     * clearing all of it would dominate a small call. */
    c->desc = d;
    c->side = side;
    c->scratch = NULL;
    c->skip[0] = c->skip[GRM_TO_SERVER] = c->skip[GRM_TO_CLIENT] = 0;
    c->share = 0;
    for (uint32_t i = 0; i < d->nparams; i++) {
        memset(&c->sl[i].val, 0, sizeof c->sl[i].val);
        c->ptr[i] = grm_is_text(d->params[i].type) ? (void *)&c->sl[i].val.str : (void *)&c->sl[i].val;
        c->ival[i] = 0;
        c->sl[i].own_buf = 0;
        c->sl[i].own_ptr = NULL;
        c->sl[i].own_strv = NULL;
        c->sl[i].tmpfile = NULL;
    }
}

grm_fn grm_callback_fn(const grm_call *c, uint32_t i) {
    grm_fn fn;
    memcpy(&fn, &c->sl[i].val.str, sizeof fn);
    return fn;
}

int grm_travels(const grd_param *p, int dir) {
    if (p->type == GRD_CALLBACK) return 0; /* a function of the client: only its calls travel */
    if (p->mode == GRD_INOUT) return 1;
    if (dir == GRM_TO_SERVER) return p->mode == GRD_IN;
    return p->mode == GRD_OUT;
}

int grm_call_travels(const grm_call *c, uint32_t i, int dir) {
    return grm_travels(&c->desc->params[i], dir) && !((c->skip[dir] >> i) & 1u);
}

unsigned grm_word_size(uint32_t type) {
    switch (type) {
    case GRD_CHAR: return 1;
    case GRD_SHORT: return 2;
    case GRD_INT:
    case GRD_FLOAT:
    case GRD_SCOMPLEX: return 4;
    case GRD_LONG:
    case GRD_LONGLONG:
    case GRD_DOUBLE:
    case GRD_DCOMPLEX: return 8;
    }
    return 0;
}

static int is_integer(uint32_t t) {
    return t == GRD_CHAR || t == GRD_SHORT || t == GRD_INT || t == GRD_LONG || t == GRD_LONGLONG;
}

/* The integer value of scalar parameter I (as the call began). */
static int64_t int_value(const grm_call *c, uint32_t i) {
    const grd_param *p = &c->desc->params[i];
    const void *v = c->ptr[i];
    int uns = (p->flags & GRD_PF_UNSIGNED) != 0;
    switch (p->type) {
    case GRD_CHAR: return uns ? (int64_t) * (const unsigned char *)v : (int64_t) * (const signed char *)v;
    case GRD_SHORT: return uns ? (int64_t) * (const unsigned short *)v : (int64_t) * (const short *)v;
    case GRD_INT: return uns ? (int64_t) * (const unsigned int *)v : (int64_t) * (const int *)v;
    case GRD_LONG: return (int64_t) * (const long *)v;
    case GRD_LONGLONG: return (int64_t) * (const long long *)v;
    }
    return 0;
}

int grm_prepare(grm_call *c, const grw_limits *lim, gr_err *e) {
    const grd_desc *d = c->desc;
    for (uint32_t i = 0; i < d->nparams; i++) {
        const grd_param *p = &d->params[i];
        c->ival[i] = 0;
        if (p->rank == 0 && is_integer(p->type) && (p->mode == GRD_IN || p->mode == GRD_INOUT) && c->ptr[i])
            c->ival[i] = int_value(c, i);
    }
    for (uint32_t i = 0; i < d->nparams; i++) {
        grd_error ge;
        if (grd_extent_of(d, i, c->ival, lim ? lim->max_array : 0, &c->sl[i].ext, &ge) != GRD_OK) {
            int code = ge.code == GRD_E_OVERFLOW ? GRID_ERR_LIMIT : GRID_ERR_ARGS;
            return gr_seterr(e, code, "%s", ge.msg);
        }
    }
    return GRID_OK;
}

/* Names the argument of parameter I for messages: "argument 3 ('A', IN double array)".
 * Arguments are numbered from 1 by their place in the call, the function's name (or
 * OGF handle) being the first, as the Python and Fortran bindings number them. */
static const char *arg_name(const grd_param *p, uint32_t i, char *buf, size_t n) {
    snprintf(buf, n, "argument %u ('%s', %s %s%s)", i + 2, p->name, grd_mode_name(p->mode),
             grd_type_name(p->type), p->rank ? " array" : "");
    return buf;
}

/* Finds the first path "" among the sent elements of an array of filenames. */
struct empty_path {
    char *const *v;
    uint64_t at;
};
static int empty_path_run(uint64_t off, uint64_t cnt, void *arg) {
    struct empty_path *m = arg;
    for (uint64_t k = 0; k < cnt; k++)
        if (m->v[off + k] && !m->v[off + k][0]) {
            m->at = off + k;
            return 1;
        }
    return 0;
}

/* An OUT or INOUT file given the path "" has nowhere to be written (no file can be
 * created at ''): refused before the call runs rather than failing once its result has
 * arrived and the work is lost. NULL is the way to discard a result file. */
static int check_out_paths(const grm_call *c, uint32_t i, gr_err *e) {
    const grd_param *p = &c->desc->params[i];
    char nm[256];
    if (p->type != GRD_FILENAME || (p->mode != GRD_OUT && p->mode != GRD_INOUT)) return GRID_OK;
    if (p->rank == 0) {
        const char *path = *(char *const *)c->ptr[i];
        if (path && !path[0])
            return gr_seterr(e, GRID_ERR_ARGS,
                             "%s is \"\": its file comes back and needs a path to be written at; pass "
                             "NULL to discard it",
                             arg_name(p, i, nm, sizeof nm));
        return GRID_OK;
    }
    struct empty_path m = {c->ptr[i], 0};
    if (m.v && grm_for_each_run(&c->sl[i].ext, empty_path_run, &m))
        return gr_seterr(e, GRID_ERR_ARGS,
                         "%s: element %llu is \"\": its file comes back and needs a path to be written "
                         "at; pass NULL to discard it",
                         arg_name(p, i, nm, sizeof nm), (unsigned long long)m.at);
    return GRID_OK;
}

/* Sizes every array and checks that each array that must hold elements is not NULL,
 * and that no file that comes back is to be written at "". */
static int check_args(grm_call *c, const grw_limits *lim, gr_err *e) {
    const grd_desc *d = c->desc;
    char nm[256];
    int rc = grm_prepare(c, lim, e);
    if (rc) return rc;
    for (uint32_t i = 0; i < d->nparams; i++) {
        const grd_param *p = &d->params[i];
        if (p->rank > 0 && p->mode != GRD_WORK && !c->ptr[i] && c->sl[i].ext.elems > 0)
            return gr_seterr(e, GRID_ERR_ARGS, "%s is NULL but must hold %llu elements",
                             arg_name(p, i, nm, sizeof nm), (unsigned long long)c->sl[i].ext.elems);
        if ((rc = check_out_paths(c, i, e)) != GRID_OK) return rc;
    }
    return GRID_OK;
}

int grm_from_va(grm_call *c, const grd_desc *d, va_list ap, const grw_limits *lim, gr_err *e) {
    grm_init(c, d, GRM_CLIENT_SIDE);
    char nm[256];
    for (uint32_t i = 0; i < d->nparams; i++) {
        const grd_param *p = &d->params[i];
        grm_value *v = &c->sl[i].val;
        if (p->rank > 0) {
            c->ptr[i] = va_arg(ap, void *);
            continue;
        }
        if (p->type == GRD_CALLBACK) {
            /* The client's function, kept in the slot; NULL is refused when the body calls it. */
            grm_fn fn = va_arg(ap, grm_fn);
            memcpy(&v->str, &fn, sizeof fn);
            continue;
        }
        if (p->type == GRD_FILENAME) {
            /* A path; NULL is allowed: an IN one reaches the body as NULL, an OUT one's
             * file is not kept. */
            v->str = va_arg(ap, char *);
            continue;
        }
        if (p->mode != GRD_IN) {
            c->ptr[i] = va_arg(ap, void *);
            if (!c->ptr[i])
                return gr_seterr(e, GRID_ERR_ARGS, "%s is NULL: pass a pointer to your variable",
                                 arg_name(p, i, nm, sizeof nm));
            continue;
        }
        /* IN scalars arrive through '...' with the C default promotions. */
        switch (p->type) {
        case GRD_CHAR: v->c = (char)va_arg(ap, int); break;
        case GRD_SHORT: v->s = (short)va_arg(ap, int); break;
        case GRD_INT: v->i = va_arg(ap, int); break;
        case GRD_LONG: v->l = va_arg(ap, long); break;
        case GRD_LONGLONG: v->ll = va_arg(ap, long long); break;
        case GRD_FLOAT: v->f = (float)va_arg(ap, double); break;
        case GRD_DOUBLE: v->d = va_arg(ap, double); break;
        case GRD_SCOMPLEX: v->sc = va_arg(ap, scomplex); break;
        case GRD_DCOMPLEX: v->dc = va_arg(ap, dcomplex); break;
        case GRD_STRING: v->str = va_arg(ap, char *); break;
        }
    }
    return check_args(c, lim, e);
}

int grm_from_argv(grm_call *c, const grd_desc *d, void *const *argv, const grw_limits *lim, gr_err *e) {
    grm_init(c, d, GRM_CLIENT_SIDE);
    char nm[256];
    for (uint32_t i = 0; i < d->nparams; i++) {
        const grd_param *p = &d->params[i];
        c->ptr[i] = argv[i];
        if (p->type == GRD_CALLBACK) {
            /* An argument stack holds the function itself, as a pointer. */
            grm_fn fn;
            memcpy(&fn, &argv[i], sizeof fn);
            memcpy(&c->sl[i].val.str, &fn, sizeof fn);
            c->ptr[i] = &c->sl[i].val;
            continue;
        }
        if (p->rank == 0 && !argv[i])
            return gr_seterr(e, GRID_ERR_ARGS, "%s is NULL: pass the address of its variable",
                             arg_name(p, i, nm, sizeof nm));
    }
    return check_args(c, lim, e);
}

void grm_release(grm_call *c) {
    if (!c->desc) return;
    for (uint32_t i = 0; i < c->desc->nparams; i++) {
        /* Only what arrived from the peer is freed: a body may store literals or its
         * own strings in OUT and INOUT parameters (COMPAT.md). */
        if (c->sl[i].own_strv) {
            for (uint64_t k = 0; k < c->sl[i].ext.sent; k++)
                free(c->sl[i].own_strv[k]);
            free(c->sl[i].own_strv);
        }
        if (c->sl[i].own_buf) gr_shbuf_free(c->ptr[i]);
        free(c->sl[i].own_ptr);
        free(c->sl[i].tmpfile); /* the file goes with the scratch folder */
        c->sl[i].own_buf = 0;
        c->sl[i].own_ptr = NULL;
        c->sl[i].own_strv = NULL;
        c->sl[i].tmpfile = NULL;
    }
    grm_scratch_remove(c);
}

struct strv_move {
    char **v, **packed;
    size_t n;
    int gather;
};
static int strv_run(uint64_t off, uint64_t cnt, void *arg) {
    struct strv_move *m = arg;
    for (uint64_t k = 0; k < cnt; k++, m->n++) {
        if (m->gather)
            m->packed[m->n] = m->v ? m->v[off + k] : NULL;
        else
            m->v[off + k] = m->packed[m->n];
    }
    return 0;
}

void grm_strv_move(const grd_extent *ext, char **v, char **packed, int gather) {
    struct strv_move m = {v, packed, 0, gather};
    grm_for_each_run(ext, strv_run, &m);
}

int grm_for_each_run(const grd_extent *ext, grm_run_fn fn, void *arg) {
    uint32_t r = ext->rank;
    if (r == 0 || ext->sent == 0) return 0;
    uint64_t stride[GRD_MAX_RANK], idx[GRD_MAX_RANK];
    stride[r - 1] = 1;
    for (uint32_t k = r - 1; k > 0; k--)
        stride[k - 1] = stride[k] * (uint64_t)ext->size[k];
    for (uint32_t k = 0; k < r; k++)
        idx[k] = 0;
    int contiguous = ext->step[r - 1] == 1;
    for (;;) {
        uint64_t base = 0;
        for (uint32_t k = 0; k + 1 < r; k++)
            base += ((uint64_t)ext->start[k] + idx[k] * (uint64_t)ext->step[k]) * stride[k];
        uint64_t first = base + (uint64_t)ext->start[r - 1];
        if (contiguous) {
            int rc = fn(first, ext->count[r - 1], arg);
            if (rc) return rc;
        } else {
            for (uint64_t j = 0; j < ext->count[r - 1]; j++) {
                int rc = fn(first + j * (uint64_t)ext->step[r - 1], 1, arg);
                if (rc) return rc;
            }
        }
        /* Next index of the outer dimensions, last varying fastest. */
        int k = (int)r - 2;
        while (k >= 0) {
            if (++idx[k] < ext->count[k]) break;
            idx[k] = 0;
            k--;
        }
        if (k < 0) break;
    }
    return 0;
}
