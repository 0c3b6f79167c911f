/* gridrpc_f.c: the C half of the Fortran binding (module gridrpc, gridrpc.f90).
 *
 * The Fortran interfaces grid_call and grid_call_async are bind(C) with up to
 * GRF_MAX_ARGS optional assumed-type, assumed-rank dummies, so every argument arrives
 * here as a C descriptor (ISO_Fortran_binding.h) that says its type, kind, rank, shape
 * and strides, and an absent one as NULL. There is deliberately no Fortran procedure in
 * between: gfortran 12 loses the length and type of character actual arguments when a
 * non-bind(C) procedure forwards type(*) dummies (literals arrive as integer(1)).
 *
 * From the function's interface (grid_describe_np) each argument is checked against its
 * parameter and turned into the argument vector of grid_call_argv_np:
 *   - numeric scalars by reference (an IN integer of another kind is converted);
 *   - strings: trailing blanks trimmed into a C string; OUT strings copied back
 *     blank-padded;
 *   - arrays whose Fortran rank equals the IDL rank (>= 2) are transposed: the Fortran
 *     element a(i,j) is the IDL element a[i][j], so a Fortran program gets
 *     c = matmul(a, b) from linalg/dmmul with its own arrays. Any other rank is taken
 *     flat, in array element order; non-contiguous sections are gathered and scattered.
 * Asynchronous calls keep their temporaries in a table until grid_wait* copies the
 * results back into the Fortran arrays.
 *
 * Remote data handles (type(grid_data), a bind(C) pair of the grid_data_np pointer and
 * a tag) arrive as rank-0 descriptors of a derived type; one whose tag is right and
 * whose pointer the library knows as a live handle goes in the argument vector as it
 * is, in place of the array. Inside a transaction (grid_transaction_begin) a call is
 * recorded and its arrays are read when the transaction ends, so the temporaries stay
 * until then, one per Fortran array: every call of the transaction that passes that
 * array shares its copy, which keeps the dependencies between the calls visible to the
 * library (they are found by address), and results are copied back at the end.
 */
#include <ISO_Fortran_binding.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gridrpc.h"

#define GRF_MAX_ARGS 32

/* How an argument reached the argument vector. */
enum grf_how {
    GRF_DIRECT,    /* the Fortran object itself */
    GRF_VALUE,     /* a converted or captured scalar value (val) */
    GRF_STRING,    /* a C string (str) */
    GRF_STRINGS,   /* an array of C strings (strv) */
    GRF_TRANSPOSE, /* a C-order temporary (tmp) */
    GRF_GATHER,    /* a contiguous temporary of a non-contiguous section (tmp) */
    GRF_NONE       /* a WORK array: nothing is passed */
};

typedef struct grf_arg {
    CFI_cdesc_t *fd;                 /* the Fortran argument; a private copy in asynchronous calls */
    int own_fd;                      /* fd is our copy */
    int how;                         /* enum grf_how */
    int mode;                        /* the parameter's mode */
    size_t elem;                     /* bytes per element in the temporary */
    size_t count;                    /* elements in the temporary (GRF_GATHER, GRF_STRINGS) */
    long long ext[GRID_MAX_RANK_NP]; /* GRF_TRANSPOSE: the extents used, Fortran order */
    ptrdiff_t cs[GRID_MAX_RANK_NP];  /* and their strides in the temporary, in bytes */
    grid_scalar_np val;              /* GRF_VALUE: the library's scalar union */
    char *str, *str_orig;            /* GRF_STRING: the string passed, and the one we allocated */
    char **strv, **strv_orig;
    void *tmp;
} grf_arg;

typedef struct grf_call {
    int id;
    int nargs;
    struct grf_call *next;
    void *argv[GRF_MAX_ARGS];
    grf_arg a[GRF_MAX_ARGS];
} grf_call;

/* The message of this thread's last failed call is the library's one per-thread last
 * error (grid_last_error): the library's calls leave theirs there, and the argument
 * errors found here are put there (seterr), so grid_last_error_f reads it. */
/* The interface of the function being called: too big for the stack of every thread. */
static __thread grid_function_np grf_fn;

/* A remote data handle as Fortran holds it (type(grid_data) in gridrpc.f90). */
typedef struct grf_data {
    intptr_t ptr; /* the grid_data_np pointer; 0 when empty */
    int64_t tag;  /* GRF_DATA_TAG while it holds a handle */
} grf_data;
#define GRF_DATA_TAG 0x4752494444415441LL /* "GRIDDATA" */

/* A temporary shared by the calls of a transaction that pass one Fortran array. */
typedef struct grf_shared {
    struct grf_shared *next;
    CFI_cdesc_t *fd; /* a copy of the first descriptor */
    int how;         /* GRF_TRANSPOSE or GRF_GATHER */
    int out;         /* some call writes it: copied back at the end */
    size_t count;    /* GRF_GATHER: elements */
    long long ext[GRID_MAX_RANK_NP];
    ptrdiff_t cs[GRID_MAX_RANK_NP];
    void *tmp;
} grf_shared;

/* This thread's open transaction: the recorded calls (in order) and shared copies. */
typedef struct grf_txn {
    int open;
    grf_call *calls, **tail;
    grf_shared *shared;
} grf_txn;
static __thread grf_txn txn;
/* Set while a two-phase call's arguments are prepared: a kept job carries arrays only. */
static __thread int no_handles;

/* Calls waiting for grid_wait*: their temporaries and copy-backs. */
static pthread_mutex_t pending_lock = PTHREAD_MUTEX_INITIALIZER;
static grf_call *pending;

/* Implemented in Fortran (gridrpc.f90): ERROR STOP with MSG, which flushes the Fortran
 * units and exits with a failure status, as a failed Fortran statement would. */
void gridrpc_f_stop(const char *msg, int len);

/* The entry points the Fortran interfaces bind to. */
/* clang-format off */
#define GRF_DESCS(X) \
    X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15) X(16) \
    X(17) X(18) X(19) X(20) X(21) X(22) X(23) X(24) X(25) X(26) X(27) X(28) X(29) X(30) X(31) X(32)
/* clang-format on */
#define GRF_PARAM(k) CFI_cdesc_t *a##k,
#define GRF_ELEM(k) a##k,
void gridrpc_f_call(CFI_cdesc_t *name, GRF_DESCS(GRF_PARAM) int *ierr);
void gridrpc_f_call_async(int *id, CFI_cdesc_t *name, GRF_DESCS(GRF_PARAM) int *ierr);
void gridrpc_f_wait(int id, int *ierr);
void gridrpc_f_wait_all(int *ierr);
void gridrpc_f_wait_any(int *id, int *ierr);
int gridrpc_f_probe(int id, int *ierr);
void gridrpc_f_cancel(int id, int *ierr);
int gridrpc_f_last_error(char *buf, int len);
/* For the tests: 1 when calls know whether a function is implemented in Fortran. */
int gridrpc_f_knows_language(void);

static int seterr(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int seterr(const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    grid_set_last_error_np(msg);
    return GRID_ERR_ARGS;
}

/* Ends a Fortran entry point: stores RC in *IERR, or stops the program when the caller
 * did not ask for it (a Fortran statement that fails stops too). */
static void finish(int rc, int *ierr, const char *what) {
    if (rc == GRID_OK) grid_set_last_error_np(NULL);
    if (ierr) {
        *ierr = rc;
        return;
    }
    if (rc == GRID_OK) return;
    char msg[1400];
    const char *m = grid_last_error();
    /* The argument checks' messages begin with the call already ("grid_call('f'): ..."):
     * said once, not twice. */
    size_t wl = strlen(what);
    int named = strncmp(m, what, wl) == 0 && m[wl] == ':';
    int n = named ? snprintf(msg, sizeof msg, "%s (%s)", m, grid_error_name(rc))
                  : snprintf(msg, sizeof msg, "%s: %s (%s)", what, m[0] ? m : grid_error_string(rc),
                             grid_error_name(rc));
    gridrpc_f_stop(msg, n < (int)sizeof msg ? n : (int)sizeof msg - 1);
}

/* ---- Fortran types */

/* The Fortran spelling of descriptor D's type, for messages. */
static const char *ftype(const CFI_cdesc_t *d, char *buf, size_t n) {
    CFI_type_t t = d->type;
    if (t == CFI_type_char)
        snprintf(buf, n, "character(len=%zu)", d->elem_len);
    else if (t == CFI_type_int8_t || t == CFI_type_int16_t || t == CFI_type_int32_t || t == CFI_type_int64_t)
        snprintf(buf, n, "integer(%zu)", d->elem_len);
    else if (t == CFI_type_float || t == CFI_type_double)
        snprintf(buf, n, "real(%zu)", d->elem_len);
    else if (t == CFI_type_float_Complex || t == CFI_type_double_Complex)
        snprintf(buf, n, "complex(%zu)", d->elem_len / 2);
#ifdef CFI_type_Logical
    else if ((t & CFI_type_mask) == CFI_type_Logical)
        snprintf(buf, n, "logical(%zu)", d->elem_len);
#endif
    else
        snprintf(buf, n, "a type with no IDL counterpart (%zu-byte elements)", d->elem_len);
    return buf;
}

/* The Fortran type a parameter of IDL type T takes. */
static const char *wanted(int t) {
    switch (t) {
    case GRID_TYPE_CHAR: return "character(len=1) or integer(1) (c_signed_char)";
    case GRID_TYPE_SHORT: return "integer(2) (c_short)";
    case GRID_TYPE_INT: return "integer(4), the default integer (c_int)";
    case GRID_TYPE_LONG: return "integer(8) (c_long)";
    case GRID_TYPE_LONGLONG: return "integer(8) (c_long_long)";
    case GRID_TYPE_FLOAT: return "real(4) (c_float)";
    case GRID_TYPE_DOUBLE: return "real(8), double precision (c_double)";
    case GRID_TYPE_SCOMPLEX: return "complex(4) (c_float_complex)";
    case GRID_TYPE_DCOMPLEX: return "complex(8) (c_double_complex)";
    default: return "character(len=*)";
    }
}

/* The C size of one element of IDL type T (0 for strings), from the library's table. */
static size_t csize(int t) {
    return (size_t)grid_type_size_np(t);
}

static int is_fint(const CFI_cdesc_t *d) {
    CFI_type_t t = d->type;
    return t == CFI_type_int8_t || t == CFI_type_int16_t || t == CFI_type_int32_t || t == CFI_type_int64_t;
}

/* Whether Fortran argument D has exactly the representation of IDL type T. */
static int type_matches(const CFI_cdesc_t *d, int t) {
    CFI_type_t f = d->type;
    switch (t) {
    case GRID_TYPE_CHAR: return f == CFI_type_signed_char || f == CFI_type_char;
    case GRID_TYPE_SHORT: return f == CFI_type_short;
    case GRID_TYPE_INT: return f == CFI_type_int;
    case GRID_TYPE_LONG: return f == CFI_type_long;
    case GRID_TYPE_LONGLONG: return f == CFI_type_long_long;
    case GRID_TYPE_FLOAT: return f == CFI_type_float;
    case GRID_TYPE_DOUBLE: return f == CFI_type_double;
    case GRID_TYPE_SCOMPLEX: return f == CFI_type_float_Complex;
    case GRID_TYPE_DCOMPLEX: return f == CFI_type_double_Complex;
    default: return f == CFI_type_char;
    }
}

/* ---- Array element walks */

static size_t nelems(const CFI_cdesc_t *d) {
    size_t n = 1;
    for (int k = 0; k < d->rank; k++)
        n *= d->dim[k].extent > 0 ? (size_t)d->dim[k].extent : 0;
    return n;
}

/* The address of element K (0-based, array element order) of D. */
static char *elem_at(const CFI_cdesc_t *d, size_t k) {
    char *p = d->base_addr;
    for (int r = 0; r < d->rank; r++) {
        size_t e = (size_t)d->dim[r].extent;
        p += (ptrdiff_t)(k % e) * d->dim[r].sm;
        k /= e;
    }
    return p;
}

/* Copies the first N elements of D (array element order) to or from the dense buffer
 * BUF (one element is d->elem_len bytes). */
static void gather(const CFI_cdesc_t *d, char *buf, size_t n, int to_buf) {
    size_t es = d->elem_len;
    CFI_index_t idx[CFI_MAX_RANK] = {0};
    size_t done = 0;
    if (d->rank == 0) {
        if (n) to_buf ? memcpy(buf, d->base_addr, es) : memcpy(d->base_addr, buf, es);
        return;
    }
    while (done < n) {
        char *p = d->base_addr;
        for (int r = 1; r < d->rank; r++)
            p += idx[r] * d->dim[r].sm;
        /* The first dimension in one run. */
        for (CFI_index_t i = 0; i < d->dim[0].extent && done < n; i++, done++, p += d->dim[0].sm)
            to_buf ? memcpy(buf + done * es, p, es) : memcpy(p, buf + done * es, es);
        int r = 1;
        for (; r < d->rank; r++) {
            if (++idx[r] < d->dim[r].extent) break;
            idx[r] = 0;
        }
        if (r == d->rank) break;
    }
}

/* Moves one element of ES bytes; the usual sizes compile to one load and store. */
static inline void move_elem(char *to, const char *from, size_t es) {
    switch (es) {
    case 4: memcpy(to, from, 4); break;
    case 8: memcpy(to, from, 8); break;
    case 16: memcpy(to, from, 16); break;
    default: memcpy(to, from, es);
    }
}

/* Copies between Fortran array D and the dense array C: the Fortran element with
 * 0-based indexes (i1, ..., ir) is at byte offset sum(ik * CS[k]) of C, for ik below
 * EXT[k] (D may be larger: its leading block is used). C-order strides make a(i,j) the
 * IDL's a[i][j]. The two fast dimensions (Fortran's first, C's last) are walked in
 * tiles so that neither side strides through all of memory. */
static void copy_dense(const CFI_cdesc_t *d, char *c, const long long *ext, const ptrdiff_t *cs, int to_c) {
    enum { TILE = 32 };
    int r = d->rank;
    size_t es = d->elem_len;
    for (int k = 0; k < r; k++)
        if (ext[k] == 0) return;
    long long idx[CFI_MAX_RANK] = {0};
    long long n0 = ext[0], nl = ext[r - 1];
    ptrdiff_t f0 = d->dim[0].sm, fl = d->dim[r - 1].sm, c0 = cs[0], cl = cs[r - 1];
    for (;;) {
        char *fb = d->base_addr, *cb = c;
        for (int k = 1; k < r - 1; k++) {
            fb += idx[k] * d->dim[k].sm;
            cb += idx[k] * cs[k];
        }
        for (long long ii = 0; ii < n0; ii += TILE)
            for (long long jj = 0; jj < nl; jj += TILE) {
                long long ie = ii + TILE < n0 ? ii + TILE : n0, je = jj + TILE < nl ? jj + TILE : nl;
                for (long long i = ii; i < ie; i++)
                    for (long long j = jj; j < je; j++) {
                        char *fp = fb + i * f0 + j * fl, *cp = cb + i * c0 + j * cl;
                        to_c ? move_elem(cp, fp, es) : move_elem(fp, cp, es);
                    }
            }
        int k = 1;
        for (; k < r - 1; k++) {
            if (++idx[k] < ext[k]) break;
            idx[k] = 0;
        }
        if (k >= r - 1) break;
    }
}

/* ---- Strings */

/* A C copy of the Fortran string at P of LEN characters: trailing blanks are not part
 * of a Fortran string's value, and an explicit NUL (s // c_null_char) ends it early. */
static char *cstring(const char *p, size_t len) {
    const char *nul = memchr(p, '\0', len);
    if (nul) len = (size_t)(nul - p);
    while (len > 0 && p[len - 1] == ' ')
        len--;
    char *s = malloc(len + 1);
    if (s) {
        memcpy(s, p, len);
        s[len] = '\0';
    }
    return s;
}

/* Stores C string S into the Fortran string at P of LEN characters: blank-padded, or
 * cut at LEN, as a Fortran assignment does. */
static void fstring(char *p, size_t len, const char *s) {
    size_t n = s ? strlen(s) : 0;
    if (n > len) n = len;
    memcpy(p, s ? s : "", n);
    memset(p + n, ' ', len - n);
}

/* ---- One call */

/* Frees what ARG holds; with OK, first copies the results back into the Fortran
 * argument. */
static void arg_done(grf_arg *g, int ok) {
    int out = g->mode == GRID_MODE_OUT || g->mode == GRID_MODE_INOUT;
    switch (g->how) {
    case GRF_STRING:
        if (ok && out) fstring(g->fd->base_addr, g->fd->elem_len, g->str);
        /* The library replaces an OUT or INOUT string with a malloc'd copy. */
        if (g->str != g->str_orig) free(g->str);
        free(g->str_orig);
        break;
    case GRF_STRINGS:
        for (size_t k = 0; k < g->count; k++) {
            if (ok && out) fstring(elem_at(g->fd, k), g->fd->elem_len, g->strv[k]);
            if (g->strv[k] != g->strv_orig[k]) free(g->strv[k]);
            free(g->strv_orig[k]);
        }
        free(g->strv);
        free(g->strv_orig);
        break;
    case GRF_TRANSPOSE:
        if (ok && out) copy_dense(g->fd, g->tmp, g->ext, g->cs, 0);
        free(g->tmp);
        break;
    case GRF_GATHER:
        if (ok && out) gather(g->fd, g->tmp, g->count, 0);
        free(g->tmp);
        break;
    default: break;
    }
    if (g->own_fd) free(g->fd);
    g->how = GRF_NONE;
    g->own_fd = 0;
}

static void call_done(grf_call *c, int ok) {
    for (int i = 0; i < c->nargs; i++)
        arg_done(&c->a[i], ok);
}

/* "argument 3 ('A', IN double array)" for messages: argument 1 is the name. */
static const char *argname(const grid_param_np *p, int i, char *buf, size_t n) {
    static const char *const modes[] = {"?", "IN", "OUT", "INOUT", "WORK"};
    static const char *const types[] = {"?",     "char",   "short",    "int",      "long",   "longlong",
                                        "float", "double", "scomplex", "dcomplex", "string", "filename"};
    int m = p->mode >= 1 && p->mode <= 4 ? p->mode : 0, t = p->type >= 1 && p->type <= 11 ? p->type : 0;
    snprintf(buf, n, "argument %d ('%s', %s %s%s%s)", i + 2, p->name, modes[m],
             p->is_unsigned ? "unsigned " : "", types[t], p->rank ? " array" : "");
    return buf;
}

/* Converts the Fortran integer at D to the IN integer parameter of type T in G->val. */
static int convert_int(const CFI_cdesc_t *d, int t, grf_arg *g, const char *fname, const char *an) {
    long long v;
    switch (d->elem_len) {
    case 1: v = *(const int8_t *)d->base_addr; break;
    case 2: v = *(const int16_t *)d->base_addr; break;
    case 4: v = *(const int32_t *)d->base_addr; break;
    default: v = *(const int64_t *)d->base_addr; break;
    }
    long long lo = LLONG_MIN, hi = LLONG_MAX;
    switch (t) {
    case GRID_TYPE_CHAR: lo = SCHAR_MIN, hi = UCHAR_MAX; break;
    case GRID_TYPE_SHORT: lo = SHRT_MIN, hi = USHRT_MAX; break;
    case GRID_TYPE_INT: lo = INT_MIN, hi = UINT_MAX; break;
    default: break;
    }
    if (v < lo || v > hi)
        return seterr("grid_call('%s'): %s: the value %lld does not fit the parameter's type", fname, an, v);
    switch (t) {
    case GRID_TYPE_CHAR: g->val.c = (char)(signed char)v; break;
    case GRID_TYPE_SHORT: g->val.s = (short)v; break;
    case GRID_TYPE_INT: g->val.i = (int)v; break;
    case GRID_TYPE_LONG: g->val.l = (long)v; break;
    default: g->val.ll = v; break;
    }
    return GRID_OK;
}

/* Whether the function being called is implemented in Fortran (Calls "Fortran"), as
 * its descriptor says when the library reports it. */
static int is_fortran_impl(void) {
#ifdef GRID_HAVE_LANGUAGE_NP
    return grf_fn.language == GRID_LANG_FORTRAN_NP;
#else
    return 0;
#endif
}

int gridrpc_f_knows_language(void) {
#ifdef GRID_HAVE_LANGUAGE_NP
    return 1;
#else
    return 0;
#endif
}

/* Makes FD survive the Fortran statement that passed it (asynchronous calls). */
static int keep_desc(grf_arg *g) {
    size_t n = sizeof(CFI_cdesc_t) + (size_t)g->fd->rank * sizeof(CFI_dim_t);
    CFI_cdesc_t *copy = malloc(n);
    if (!copy) return seterr("out of memory");
    memcpy(copy, g->fd, n);
    g->fd = copy;
    g->own_fd = 1;
    return GRID_OK;
}

/* ---- Transactions: copies shared by the calls that pass one Fortran array */

/* Argument I of C, which needs a temporary of kind HOW (NEED elements of the IDL
 * type): inside a transaction it gets the one copy of its Fortran array that every
 * call of the transaction shares, made (from the array's values now) at its first use
 * and copied back at the end when some call writes it (OUT). */
static int shared_temp(grf_call *c, int i, int how, unsigned long long need, int out, const char *fname,
                       const char *an) {
    grf_arg *g = &c->a[i];
    const CFI_cdesc_t *d = g->fd;
    for (grf_shared *s = txn.shared; s; s = s->next) {
        int same = s->how == how && s->fd->base_addr == d->base_addr && s->fd->rank == d->rank &&
                   s->fd->elem_len == d->elem_len && (how != GRF_GATHER || s->count == g->count);
        for (int k = 0; same && k < d->rank; k++)
            same = s->fd->dim[k].sm == d->dim[k].sm && s->fd->dim[k].extent == d->dim[k].extent &&
                   (how != GRF_TRANSPOSE || (s->ext[k] == g->ext[k] && s->cs[k] == g->cs[k]));
        if (!same) continue;
        s->out |= out;
        g->how = GRF_NONE;
        c->argv[i] = s->tmp;
        return GRID_OK;
    }
    grf_shared *s = calloc(1, sizeof *s);
    size_t dn = sizeof(CFI_cdesc_t) + (size_t)d->rank * sizeof(CFI_dim_t);
    size_t bytes = how == GRF_TRANSPOSE ? (size_t)need * g->elem : g->count * d->elem_len;
    if (s) s->fd = malloc(dn);
    if (s && s->fd) s->tmp = malloc(bytes ? bytes : 1);
    if (!s || !s->fd || !s->tmp) {
        if (s) free(s->fd);
        free(s);
        return seterr("grid_call('%s'): out of memory for a copy of %s", fname, an);
    }
    memcpy(s->fd, d, dn);
    s->how = how;
    s->out = out;
    s->count = g->count;
    memcpy(s->ext, g->ext, sizeof s->ext);
    memcpy(s->cs, g->cs, sizeof s->cs);
    if (how == GRF_TRANSPOSE)
        copy_dense(d, s->tmp, s->ext, s->cs, 1);
    else
        gather(d, s->tmp, s->count, 1);
    s->next = txn.shared;
    txn.shared = s;
    g->how = GRF_NONE;
    c->argv[i] = s->tmp;
    return GRID_OK;
}

/* Ends this thread's transaction records: with OK, copies the results into the Fortran
 * arguments (each call's own, then the shared copies); frees everything. */
static void txn_close(int ok) {
    for (grf_call *c = txn.calls, *n; c; c = n) {
        n = c->next;
        call_done(c, ok);
        free(c);
    }
    for (grf_shared *s = txn.shared, *n; s; s = n) {
        n = s->next;
        if (ok && s->out) {
            if (s->how == GRF_TRANSPOSE)
                copy_dense(s->fd, s->tmp, s->ext, s->cs, 0);
            else
                gather(s->fd, s->tmp, s->count, 0);
        }
        free(s->tmp);
        free(s->fd);
        free(s);
    }
    memset(&txn, 0, sizeof txn);
}

/* ---- Remote data handles */

/* 1 when D is a type(grid_data) holding a handle the library knows (*H gets it); 0
 * when D is not a type(grid_data); -1 (the error set) for an empty or freed one. */
static int data_handle(const CFI_cdesc_t *d, grid_data_np **h) {
    /* A derived type (bind(C): CFI_type_struct) of the size of ours: only then are its
     * bytes read, and the tag and the library's registry decide. */
    if (d->rank != 0 || d->elem_len != sizeof(grf_data) || !d->base_addr ||
        (d->type != CFI_type_struct && d->type != CFI_type_other))
        return 0;
    grf_data hd;
    memcpy(&hd, d->base_addr, sizeof hd);
    if (hd.tag != GRF_DATA_TAG && (hd.tag != 0 || hd.ptr != 0)) return 0;
    *h = (grid_data_np *)hd.ptr;
    if (!hd.ptr || grid_data_info_np(*h, NULL, NULL) != GRID_OK) {
        seterr("the type(grid_data) handle passed is empty or was freed (grid_data_free): put the array "
               "again with grid_data_put");
        return -1;
    }
    return 1;
}

/* Scalars and strings, which the shapes of arrays may depend on. */
static int prepare_scalar(grf_call *c, int i, const grid_param_np *p, int async, const char *fname) {
    grf_arg *g = &c->a[i];
    CFI_cdesc_t *d = g->fd;
    char an[400], ft[96];
    argname(p, i, an, sizeof an);
    if (p->type == GRID_TYPE_STRING || p->type == GRID_TYPE_FILENAME) {
        if (d->type != CFI_type_char || d->rank != 0)
            return seterr("grid_call('%s'): %s is %s%s; pass a character(len=*) scalar", fname, an,
                          ftype(d, ft, sizeof ft), d->rank ? " array" : "");
        /* A filename is always a local path we send; only its file is OUT. */
        int in = p->type == GRID_TYPE_FILENAME || p->mode != GRID_MODE_OUT;
        g->str_orig = in ? cstring(d->base_addr, d->elem_len) : NULL;
        if (in && !g->str_orig) return seterr("out of memory");
        g->str = g->str_orig;
        g->how = GRF_STRING;
        if (p->type == GRID_TYPE_FILENAME) g->mode = GRID_MODE_IN;
        c->argv[i] = &g->str;
        return (async && g->mode != GRID_MODE_IN) ? keep_desc(g) : GRID_OK;
    }
    if (d->rank != 0)
        return seterr("grid_call('%s'): %s is a scalar but a rank-%d array was passed", fname, an,
                      (int)d->rank);
    if (!type_matches(d, p->type) || (p->type == GRID_TYPE_CHAR && d->elem_len != 1)) {
        /* An IN integer of another kind is converted: literals are default integers. */
        if (p->mode == GRID_MODE_IN && is_fint(d) && p->type >= GRID_TYPE_CHAR &&
            p->type <= GRID_TYPE_LONGLONG) {
            g->how = GRF_VALUE;
            c->argv[i] = &g->val;
            return convert_int(d, p->type, g, fname, an);
        }
        return seterr(
            "grid_call('%s'): %s is %s; pass %s%s", fname, an, ftype(d, ft, sizeof ft), wanted(p->type),
            (p->type == GRID_TYPE_DOUBLE || p->type == GRID_TYPE_DCOMPLEX) && d->type == CFI_type_float
                ? " (write 1.0d0 or real(x, 8) for a double precision value)"
                : "");
    }
    if (async && p->mode == GRID_MODE_IN) {
        /* An IN value may be an expression whose storage ends with the statement. */
        memcpy(&g->val, d->base_addr, csize(p->type));
        g->how = GRF_VALUE;
        c->argv[i] = &g->val;
    } else {
        g->how = GRF_DIRECT;
        c->argv[i] = d->base_addr;
    }
    return GRID_OK;
}

/* Arrays, sized from the scalars already in ARGV. */
static int prepare_array(grf_call *c, int i, const grid_param_np *p, int async, const char *fname) {
    grf_arg *g = &c->a[i];
    CFI_cdesc_t *d = g->fd;
    char an[400], ft[96];
    argname(p, i, an, sizeof an);
    if (p->mode == GRID_MODE_WORK) {
        /* Scratch space lives on the server: whatever was passed only holds the place. */
        g->how = GRF_NONE;
        c->argv[i] = NULL;
        return GRID_OK;
    }
    grid_data_np *h = NULL;
    int hr = data_handle(d, &h);
    if (hr < 0) {
        char msg[600];
        snprintf(msg, sizeof msg, "grid_call('%s'): %s: %s", fname, an, grid_last_error());
        return seterr("%s", msg);
    }
    if (hr && no_handles)
        return seterr("grid_submit('%s'): %s: a two-phase job cannot take a type(grid_data) handle: pass the "
                      "array (grid_data_get it first)",
                      fname, an);
    if (hr) { /* the library checks its type and size against the parameter */
        g->how = GRF_NONE;
        c->argv[i] = h;
        return GRID_OK;
    }
    int is_str = p->type == GRID_TYPE_STRING || p->type == GRID_TYPE_FILENAME;
    if (!type_matches(d, p->type))
        return seterr("grid_call('%s'): %s is %s; pass %s", fname, an, ftype(d, ft, sizeof ft),
                      wanted(p->type));
    long long dims[GRID_MAX_RANK_NP];
    int rc = grid_array_shape_np(fname, c->argv, i, dims);
    if (rc) return rc;
    unsigned long long need = 1;
    for (int k = 0; k < p->rank; k++)
        need *= (unsigned long long)dims[k];
    size_t have = nelems(d);
    if (have > 0 && !d->base_addr)
        return seterr("grid_call('%s'): %s is not allocated or not associated", fname, an);
    g->elem = is_str ? sizeof(char *) : csize(p->type);

    if (is_str) {
        if (have < need)
            return seterr("grid_call('%s'): %s has %zu elements but needs %llu", fname, an, have, need);
        g->count = (size_t)need;
        g->strv = calloc(need ? need : 1, sizeof(char *));
        g->strv_orig = calloc(need ? need : 1, sizeof(char *));
        g->how = GRF_STRINGS;
        if (!g->strv || !g->strv_orig) return seterr("out of memory");
        if (p->mode != GRID_MODE_OUT)
            for (size_t k = 0; k < g->count; k++) {
                g->strv[k] = g->strv_orig[k] = cstring(elem_at(d, k), d->elem_len);
                if (!g->strv[k]) return seterr("out of memory");
            }
        c->argv[i] = g->strv;
        return async && p->mode != GRID_MODE_IN ? keep_desc(g) : GRID_OK;
    }

    int copy_in = p->mode != GRID_MODE_OUT, out = p->mode != GRID_MODE_IN;
    if (d->rank == p->rank && p->rank >= 2) {
        /* Same rank: a(i,j) is a[i][j] for a function written in C, so the array is
         * copied in C order. A function written in Fortran declares its dimensions in
         * reverse (docs/idl.md), and gets the Fortran array as it is. Each Fortran
         * extent must cover the declared one; a larger array passes its leading block,
         * as a(1:n,1:n) would. */
        int r = p->rank, fortran = is_fortran_impl();
        for (int k = 0; k < r; k++)
            g->ext[k] = fortran ? dims[r - 1 - k] : dims[k];
        for (int k = 0; k < r; k++)
            if ((long long)d->dim[k].extent < g->ext[k]) {
                char fs[200], ds[200];
                size_t a = 0, b = 0;
                for (int q = 0; q < r; q++) {
                    a += (size_t)snprintf(fs + a, sizeof fs - a, "%s%lld", q ? "," : "",
                                          (long long)d->dim[q].extent);
                    b += (size_t)snprintf(ds + b, sizeof ds - b, "%s%lld", q ? "," : "", g->ext[q]);
                }
                return seterr("grid_call('%s'): %s has shape (%s) but the call needs (%s)", fname, an, fs,
                              ds);
            }
        if (d->elem_len != g->elem)
            return seterr(
                "grid_call('%s'): %s: a rank-%d array of %s cannot be matched element by element; pass "
                "character(len=1) or integer(1)",
                fname, an, r, ftype(d, ft, sizeof ft));
        int whole = 1;
        for (int k = 0; k < r; k++)
            whole = whole && (long long)d->dim[k].extent == g->ext[k];
        if (fortran && whole && CFI_is_contiguous(d)) {
            g->how = GRF_DIRECT;
            c->argv[i] = need ? d->base_addr : NULL;
            return GRID_OK;
        }
        if (fortran) {
            g->cs[0] = (ptrdiff_t)g->elem;
            for (int k = 1; k < r; k++)
                g->cs[k] = g->cs[k - 1] * (ptrdiff_t)g->ext[k - 1];
        } else {
            g->cs[r - 1] = (ptrdiff_t)g->elem;
            for (int k = r - 1; k > 0; k--)
                g->cs[k - 1] = g->cs[k] * (ptrdiff_t)g->ext[k];
        }
        if (txn.open) return shared_temp(c, i, GRF_TRANSPOSE, need, out, fname, an);
        g->how = GRF_TRANSPOSE;
        g->tmp = malloc(need ? (size_t)need * g->elem : 1);
        if (!g->tmp) return seterr("grid_call('%s'): out of memory for a copy of %s", fname, an);
        if (copy_in) copy_dense(d, g->tmp, g->ext, g->cs, 1);
        c->argv[i] = g->tmp;
        return async && out ? keep_desc(g) : GRID_OK;
    }
    /* Any other rank: the elements in array element order, flat. A character(len=n)
     * argument for a char array counts its characters. */
    if ((unsigned long long)have * d->elem_len < need * g->elem)
        return seterr("grid_call('%s'): %s has %zu elements but the call needs %llu", fname, an,
                      have * d->elem_len / g->elem, need);
    if (CFI_is_contiguous(d) || d->rank == 0) {
        g->how = GRF_DIRECT;
        c->argv[i] = need ? d->base_addr : NULL;
        return GRID_OK;
    }
    /* A section with gaps: gather the elements the call uses. */
    g->count = (size_t)((need * g->elem + d->elem_len - 1) / d->elem_len);
    if (txn.open) return shared_temp(c, i, GRF_GATHER, need, out, fname, an);
    g->how = GRF_GATHER;
    g->tmp = malloc(g->count ? g->count * d->elem_len : 1);
    if (!g->tmp) return seterr("grid_call('%s'): out of memory for a copy of %s", fname, an);
    if (copy_in) gather(d, g->tmp, g->count, 1);
    c->argv[i] = g->tmp;
    return async && out ? keep_desc(g) : GRID_OK;
}

/* Checks the arguments against the interface of FNAME and fills C. */
static int prepare(grf_call *c, const char *fname, CFI_cdesc_t *const *descs, int async) {
    int rc = grid_describe_np(fname, &grf_fn);
    if (rc) return rc;
    int n = 0;
    for (int i = 0; i < GRF_MAX_ARGS; i++)
        if (descs[i]) n = i + 1;
    for (int i = 0; i < n; i++)
        if (!descs[i])
            return seterr(
                "grid_call('%s'): argument %d is missing: pass the arguments in order, without gaps", fname,
                i + 2);
    if (n != grf_fn.nparams) {
        char list[600];
        size_t used = 0;
        list[0] = '\0';
        for (int i = 0; i < grf_fn.nparams && used < sizeof list; i++)
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "",
                                     grf_fn.params[i].name);
        if (grf_fn.nparams > GRF_MAX_ARGS)
            return seterr(
                "grid_call('%s'): the function has %d parameters; the Fortran binding passes at most %d",
                fname, grf_fn.nparams, GRF_MAX_ARGS);
        return seterr("grid_call('%s'): the function takes %d argument%s after its name (%s) but %d %s given",
                      fname, grf_fn.nparams, grf_fn.nparams == 1 ? "" : "s", list, n,
                      n == 1 ? "was" : "were");
    }
    c->nargs = n;
    for (int i = 0; i < n; i++) {
        memset(&c->a[i], 0, sizeof c->a[i]);
        c->a[i].fd = descs[i];
        c->a[i].mode = grf_fn.params[i].mode;
        c->a[i].how = GRF_NONE;
        c->argv[i] = NULL;
    }
    for (int i = 0; i < n; i++)
        if (grf_fn.params[i].rank == 0 &&
            (rc = prepare_scalar(c, i, &grf_fn.params[i], async, fname)) != GRID_OK)
            return rc;
    for (int i = 0; i < n; i++)
        if (grf_fn.params[i].rank > 0 &&
            (rc = prepare_array(c, i, &grf_fn.params[i], async, fname)) != GRID_OK)
            return rc;
    return GRID_OK;
}

/* The function name as a C string (trailing blanks trimmed). */
static int cname(const CFI_cdesc_t *name, char *buf, size_t n) {
    if (!name || name->type != CFI_type_char || name->rank != 0)
        return seterr("grid_call: the first argument must be the function's name, a character string");
    char *s = cstring(name->base_addr, name->elem_len);
    if (!s) return seterr("out of memory");
    int rc = strlen(s) < n ? GRID_OK : seterr("grid_call: the function name '%.40s...' is too long", s);
    if (!rc) memcpy(buf, s, strlen(s) + 1);
    free(s);
    return rc;
}

/* Inside a transaction: the call is recorded (grid_call_argv_np records it) with its
 * temporaries kept, as for an asynchronous call, until the transaction ends. */
static void record_call(CFI_cdesc_t *name, CFI_cdesc_t *const *descs, int *ierr) {
    char fname[1024] = "", what[1100];
    if (!txn.open) { /* begun from C */
        txn.open = 1;
        txn.tail = &txn.calls;
    }
    grf_call *c = calloc(1, sizeof *c);
    int rc = c ? cname(name, fname, sizeof fname) : seterr("out of memory");
    if (!rc) rc = prepare(c, fname, descs, 1);
    if (!rc) rc = grid_call_argv_np(fname, c->nargs, c->argv);
    if (!rc) {
        *txn.tail = c;
        txn.tail = &c->next;
    } else if (c) {
        call_done(c, 0);
        free(c);
    }
    snprintf(what, sizeof what, "grid_call('%s')", fname);
    finish(rc, ierr, what);
}

void gridrpc_f_call(CFI_cdesc_t *name, GRF_DESCS(GRF_PARAM) int *ierr) {
    CFI_cdesc_t *descs[GRF_MAX_ARGS] = {GRF_DESCS(GRF_ELEM)};
    if (grid_transaction_active_np()) {
        record_call(name, descs, ierr);
        return;
    }
    char fname[1024] = "", what[1100];
    grf_call c;
    c.nargs = 0;
    int rc = cname(name, fname, sizeof fname);
    if (!rc) rc = prepare(&c, fname, descs, 0);
    if (!rc) {
        rc = grid_call_argv_np(fname, c.nargs, c.argv);
    }
    call_done(&c, rc == GRID_OK);
    snprintf(what, sizeof what, "grid_call('%s')", fname);
    finish(rc, ierr, what);
}

void gridrpc_f_call_async(int *id, CFI_cdesc_t *name, GRF_DESCS(GRF_PARAM) int *ierr) {
    CFI_cdesc_t *descs[GRF_MAX_ARGS] = {GRF_DESCS(GRF_ELEM)};
    char fname[1024] = "", what[1100];
    grf_call *c = calloc(1, sizeof *c);
    *id = GRID_ID_NONE;
    int rc = c ? cname(name, fname, sizeof fname) : seterr("out of memory");
    if (!rc) rc = prepare(c, fname, descs, 1);
    if (!rc) {
        int r = grid_call_async_argv_np(fname, c->nargs, c->argv);
        if (r > 0) {
            c->id = *id = r;
            pthread_mutex_lock(&pending_lock);
            c->next = pending;
            pending = c;
            pthread_mutex_unlock(&pending_lock);
            finish(GRID_OK, ierr, "");
            return;
        }
        rc = r < 0 ? -r : GRID_ERR_INTERNAL;
    }
    if (c) {
        call_done(c, 0);
        free(c);
    }
    snprintf(what, sizeof what, "grid_call_async('%s')", fname);
    finish(rc, ierr, what);
}

/* Takes the record of call ID out of the table (NULL if the call was not ours). */
static grf_call *take(int id) {
    pthread_mutex_lock(&pending_lock);
    grf_call **pp = &pending, *c = NULL;
    while (*pp && (*pp)->id != id)
        pp = &(*pp)->next;
    if (*pp) {
        c = *pp;
        *pp = c->next;
    }
    pthread_mutex_unlock(&pending_lock);
    return c;
}

/* Completes waited call ID, whose result is RC: copies its results into the Fortran
 * arguments and forgets it (a Fortran program has no handle to forget it with). */
static void complete(int id, int rc) {
    grf_call *c = take(id);
    if (rc && !grid_last_error()[0]) {
        const char *m = grid_call_message_np(id);
        if (m && m[0]) grid_set_last_error_np(m);
    }
    if (c) {
        call_done(c, rc == GRID_OK);
        free(c);
    }
    grid_forget_np(id);
}

void gridrpc_f_wait(int id, int *ierr) {
    int rc = grid_wait(id);
    complete(id, rc);
    char what[64];
    snprintf(what, sizeof what, "grid_wait(%d)", id);
    finish(rc, ierr, what);
}

void gridrpc_f_wait_all(int *ierr) {
    int rc = grid_wait_all();
    char first[1024];
    snprintf(first, sizeof first, "%s", rc ? grid_last_error() : "");
    /* Every call of ours that has now been waited on; calls other threads started
     * since are left for their own wait. */
    for (;;) {
        int id = GRID_ID_NONE;
        pthread_mutex_lock(&pending_lock);
        for (grf_call *c = pending; c; c = c->next)
            if (grid_call_waited_np(c->id) == 1) {
                id = c->id;
                break;
            }
        pthread_mutex_unlock(&pending_lock);
        if (id == GRID_ID_NONE) break;
        int r = grid_call_error_np(id);
        grid_set_last_error_np(NULL);
        complete(id, r);
    }
    grid_set_last_error_np(first);
    finish(rc, ierr, "grid_wait_all");
}

void gridrpc_f_wait_any(int *id, int *ierr) {
    *id = GRID_ID_NONE;
    int rc = grid_wait_any(id);
    if (*id != GRID_ID_NONE) complete(*id, rc);
    finish(rc, ierr, "grid_wait_any");
}

int gridrpc_f_probe(int id, int *ierr) {
    /* grid_probe sets no message: an unknown id gets one here. */
    int r = grid_probe(id);
    char what[64];
    if (r < 0)
        seterr("unknown call id %d: it was never started, or was forgotten", id);
    else
        grid_set_last_error_np(NULL);
    snprintf(what, sizeof what, "grid_probe(%d)", id);
    finish(r < 0 ? -r : GRID_OK, ierr, what);
    return r == 1;
}

void gridrpc_f_cancel(int id, int *ierr) {
    /* The record stays: the call must still be waited on, which frees its copies. */
    int rc = grid_cancel(id);
    char what[64];
    snprintf(what, sizeof what, "grid_cancel(%d)", id);
    finish(rc, ierr, what);
}

int gridrpc_f_last_error(char *buf, int len) {
    const char *m = grid_last_error();
    int n = (int)strlen(m);
    if (n > len) n = len;
    memcpy(buf, m, (size_t)n);
    return n;
}

/* ---- Transactions */

void gridrpc_f_transaction_begin(int *ierr);
void gridrpc_f_transaction_end(int *ierr);
void gridrpc_f_transaction_abort(int *ierr);

void gridrpc_f_transaction_begin(int *ierr) {
    int rc = grid_transaction_begin();
    if (rc == GRID_OK) {
        txn_close(0); /* nothing left from a transaction ended from C */
        txn.open = 1;
        txn.tail = &txn.calls;
    }
    finish(rc, ierr, "grid_transaction_begin");
}

void gridrpc_f_transaction_end(int *ierr) {
    int rc = grid_transaction_end();
    txn_close(rc == GRID_OK);
    finish(rc, ierr, "grid_transaction_end");
}

void gridrpc_f_transaction_abort(int *ierr) {
    int rc = grid_transaction_abort_np();
    txn_close(0);
    finish(rc, ierr, "grid_transaction_abort");
}

/* ---- Remote data handles: grid_data_put, _get, _new, _free, _where */

void gridrpc_f_data_put(grf_data *h, CFI_cdesc_t *a, CFI_cdesc_t *where, const int *type, int *ierr);
void gridrpc_f_data_get(const grf_data *h, CFI_cdesc_t *a, int *ierr);
void gridrpc_f_data_new(grf_data *h, int type, int64_t count, int *ierr);
void gridrpc_f_data_free(grf_data *h, int *ierr);
int gridrpc_f_data_where(const grf_data *h, char *buf, int len);

/* The IDL type of the elements of Fortran array D (TYPE, when given, picks among the
 * IDL types of that representation: GRID_TYPE_LONGLONG for an integer(8) array). */
static int data_type(const CFI_cdesc_t *d, const int *type, const char *what, int *out) {
    static const int all[] = {GRID_TYPE_CHAR,   GRID_TYPE_SHORT,    GRID_TYPE_INT,
                              GRID_TYPE_LONG,   GRID_TYPE_LONGLONG, GRID_TYPE_FLOAT,
                              GRID_TYPE_DOUBLE, GRID_TYPE_SCOMPLEX, GRID_TYPE_DCOMPLEX};
    char ft[96];
    int t = 0;
    for (size_t k = 0; k < sizeof all / sizeof all[0] && !t; k++)
        if (type_matches(d, all[k]) && d->elem_len == csize(all[k])) t = all[k];
    if (!t)
        return seterr("%s: the array is %s, which has no IDL type: pass integer(1), integer(2), integer, "
                      "integer(8), real(4), real(8), complex(4) or complex(8)",
                      what, ftype(d, ft, sizeof ft));
    if (type) {
        int u = *type;
        int ints = (t >= GRID_TYPE_CHAR && t <= GRID_TYPE_LONGLONG) ==
                   (u >= GRID_TYPE_CHAR && u <= GRID_TYPE_LONGLONG);
        if (u < GRID_TYPE_CHAR || u > GRID_TYPE_DCOMPLEX || !ints || csize(u) != csize(t))
            return seterr("%s: type=%d does not hold the elements of a %s array (GRID_TYPE_LONGLONG picks "
                          "longlong for integer(8))",
                          what, u, ftype(d, ft, sizeof ft));
        t = u;
    }
    *out = t;
    return GRID_OK;
}

static const char *idl_name(int t) {
    static const char *const names[] = {"?",        "char",  "short",  "int",      "long",
                                        "longlong", "float", "double", "scomplex", "dcomplex"};
    return t >= 1 && t <= GRID_TYPE_DCOMPLEX ? names[t] : "?";
}

/* C-order strides (bytes) of the extents of D: a(i,j) is the IDL's a[i][j]. */
static void c_order(const CFI_cdesc_t *d, long long *ext, ptrdiff_t *cs) {
    int r = d->rank;
    for (int k = 0; k < r; k++)
        ext[k] = d->dim[k].extent;
    cs[r - 1] = (ptrdiff_t)d->elem_len;
    for (int k = r - 1; k > 0; k--)
        cs[k - 1] = cs[k] * (ptrdiff_t)ext[k];
}

void gridrpc_f_data_put(grf_data *h, CFI_cdesc_t *a, CFI_cdesc_t *where, const int *type, int *ierr) {
    h->ptr = 0;
    h->tag = 0;
    int t = 0, rc = data_type(a, type, "grid_data_put", &t);
    size_t n = nelems(a);
    char *w = NULL;
    void *tmp = NULL, *buf = a->base_addr;
    long long ext[CFI_MAX_RANK];
    ptrdiff_t cs[CFI_MAX_RANK];
    if (!rc && n > 0 && !a->base_addr)
        rc = seterr("grid_data_put: the array is not allocated or not associated");
    if (!rc && where && where->type == CFI_type_char) {
        w = cstring(where->base_addr, where->elem_len);
        if (!w) rc = seterr("out of memory");
    }
    if (!rc && (a->rank >= 2 || !CFI_is_contiguous(a)) && n > 0) {
        /* Rank >= 2: in C order, as grid_call passes it to a function written in C. */
        tmp = malloc(n * a->elem_len);
        if (!tmp)
            rc = seterr("grid_data_put: out of memory for a copy of %zu elements", n);
        else if (a->rank >= 2) {
            c_order(a, ext, cs);
            copy_dense(a, tmp, ext, cs, 1);
        } else
            gather(a, tmp, n, 1);
        buf = tmp;
    }
    grid_data_np *p = NULL;
    if (!rc) rc = grid_data_put_np(&p, w && w[0] ? w : NULL, t, n, buf);
    if (!rc) {
        h->ptr = (intptr_t)p;
        h->tag = GRF_DATA_TAG;
    }
    free(tmp);
    free(w);
    finish(rc, ierr, "grid_data_put");
}

/* The handle in H, or NULL with the error set. */
static grid_data_np *handle_of(const grf_data *h, const char *what) {
    if (h->tag != GRF_DATA_TAG || !h->ptr) {
        seterr("%s: the type(grid_data) handle is empty (never put, or freed)", what);
        return NULL;
    }
    return (grid_data_np *)h->ptr;
}

void gridrpc_f_data_get(const grf_data *h, CFI_cdesc_t *a, int *ierr) {
    grid_data_np *p = handle_of(h, "grid_data_get");
    int t = 0, ht = 0, rc = p ? grid_data_info_np(p, &ht, NULL) : GRID_ERR_ARGS;
    size_t count = 0, n = nelems(a);
    if (!rc) rc = grid_data_info_np(p, &ht, &count);
    if (!rc) rc = data_type(a, NULL, "grid_data_get", &t);
    if (!rc && t != ht && !(csize(t) == csize(ht) && t <= GRID_TYPE_LONGLONG && ht <= GRID_TYPE_LONGLONG))
        rc = seterr("grid_data_get: the array holds %s elements but the handle holds %s ones: pass %s",
                    idl_name(t), idl_name(ht), wanted(ht));
    if (!rc && n != count)
        rc = seterr("grid_data_get: the array has %zu elements but the handle holds %zu", n, count);
    if (!rc && n > 0 && !a->base_addr)
        rc = seterr("grid_data_get: the array is not allocated or not associated");
    if (!rc && n > 0) {
        if (a->rank < 2 && CFI_is_contiguous(a)) {
            rc = grid_data_get_np(p, a->base_addr, count);
        } else {
            char *tmp = malloc(n * a->elem_len);
            long long ext[CFI_MAX_RANK];
            ptrdiff_t cs[CFI_MAX_RANK];
            rc = tmp ? grid_data_get_np(p, tmp, count) : seterr("grid_data_get: out of memory");
            if (!rc && a->rank >= 2) {
                c_order(a, ext, cs);
                copy_dense(a, tmp, ext, cs, 0);
            } else if (!rc)
                gather(a, tmp, n, 0);
            free(tmp);
        }
    }
    finish(rc, ierr, "grid_data_get");
}

void gridrpc_f_data_new(grf_data *h, int type, int64_t count, int *ierr) {
    h->ptr = 0;
    h->tag = 0;
    grid_data_np *p = NULL;
    int rc = count < 0 ? seterr("grid_data_new: the count %lld is negative", (long long)count)
                       : grid_data_new_np(&p, type, (size_t)count);
    if (!rc) {
        h->ptr = (intptr_t)p;
        h->tag = GRF_DATA_TAG;
    }
    finish(rc, ierr, "grid_data_new");
}

void gridrpc_f_data_free(grf_data *h, int *ierr) {
    int rc = GRID_OK;
    if (h->tag == GRF_DATA_TAG && h->ptr) rc = grid_data_free_np((grid_data_np *)h->ptr);
    h->ptr = 0;
    h->tag = 0;
    finish(rc, ierr, "grid_data_free");
}

int gridrpc_f_data_where(const grf_data *h, char *buf, int len) {
    const char *w = h->tag == GRF_DATA_TAG && h->ptr ? grid_data_where_np((grid_data_np *)h->ptr) : "";
    int n = (int)strlen(w);
    if (n > len) n = len;
    memcpy(buf, w, (size_t)n);
    return n;
}

/* ---- Two-phase calls: grid_submit, grid_job_fetch, grid_job_forget */

void gridrpc_f_submit(CFI_cdesc_t *jobid, CFI_cdesc_t *name, GRF_DESCS(GRF_PARAM) int *ierr);
void gridrpc_f_job_fetch(CFI_cdesc_t *jobid, const double *wait, GRF_DESCS(GRF_PARAM) int *ierr);
void gridrpc_f_job_forget(CFI_cdesc_t *jobid, int *ierr);

void gridrpc_f_submit(CFI_cdesc_t *jobid, CFI_cdesc_t *name, GRF_DESCS(GRF_PARAM) int *ierr) {
    CFI_cdesc_t *descs[GRF_MAX_ARGS] = {GRF_DESCS(GRF_ELEM)};
    char fname[1024] = "", what[1100], job[GRID_JOB_ID_MAX_NP] = "";
    grf_call c;
    c.nargs = 0;
    int rc = cname(name, fname, sizeof fname);
    no_handles = 1;
    if (!rc) rc = prepare(&c, fname, descs, 0);
    no_handles = 0;
    if (!rc) rc = grid_submit_argv_np(job, sizeof job, fname, c.nargs, c.argv);
    call_done(&c, 0); /* a submit writes no output */
    if (!rc && (jobid->type != CFI_type_char || jobid->rank != 0 || strlen(job) > jobid->elem_len))
        rc = seterr(
            "grid_submit('%s'): the job id %s does not fit the first argument: pass a character(len=%d) "
            "variable",
            fname, job, GRID_JOB_ID_MAX_NP);
    if (!rc) fstring(jobid->base_addr, jobid->elem_len, job);
    snprintf(what, sizeof what, "grid_submit('%s')", fname);
    finish(rc, ierr, what);
}

/* The job id in JOBID as a C string, or NULL with the error set. */
static char *job_of(const CFI_cdesc_t *jobid, const char *what) {
    char *job = jobid && jobid->type == CFI_type_char && jobid->rank == 0
                    ? cstring(jobid->base_addr, jobid->elem_len)
                    : NULL;
    if (!job) seterr("%s: the job id must be a character string, as grid_submit wrote it", what);
    return job;
}

void gridrpc_f_job_fetch(CFI_cdesc_t *jobid, const double *wait, GRF_DESCS(GRF_PARAM) int *ierr) {
    CFI_cdesc_t *descs[GRF_MAX_ARGS] = {GRF_DESCS(GRF_ELEM)};
    char fname[1100] = "", what[1200];
    grf_call c;
    c.nargs = 0;
    char *job = job_of(jobid, "grid_job_fetch");
    int rc = job ? GRID_OK : GRID_ERR_ARGS;
    grid_job_info_np info;
    if (!rc) rc = grid_job_state_np(job, &info);
    if (!rc) {
        /* The arguments are checked against the function's interface on the job's server. */
        /* A TLS server's job id is gridrpcs://host:port/HEX: the function's URL keeps it. */
        const char *scheme = strncmp(job, "gridrpcs://", 11) == 0 ? "gridrpcs://" : "gridrpc://";
        const char *body = strncmp(job, scheme, strlen(scheme)) == 0 ? job + strlen(scheme) : job;
        const char *slash = strrchr(body, '/');
        if (!slash || slash == body)
            rc = seterr("grid_job_fetch: '%s' is not a job id (host:port/HEX)", job);
        else
            snprintf(fname, sizeof fname, "%s%.*s/%s", scheme, (int)(slash - body), body, info.function);
    }
    if (!rc) rc = prepare(&c, fname, descs, 0);
    if (!rc) rc = grid_job_fetch_argv_np(job, wait ? *wait : 0.0, c.nargs, c.argv);
    call_done(&c, rc == GRID_OK);
    snprintf(what, sizeof what, "grid_job_fetch('%s')", job ? job : "?");
    free(job);
    finish(rc, ierr, what);
}

void gridrpc_f_job_forget(CFI_cdesc_t *jobid, int *ierr) {
    char *job = job_of(jobid, "grid_job_forget");
    int rc = job ? grid_job_forget_np(job) : GRID_ERR_ARGS;
    free(job);
    finish(rc, ierr, "grid_job_forget");
}
