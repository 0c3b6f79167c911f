/* grd_common.c: the descriptor library's small shared pieces (names, sizes, hash,
 * freeing, lookup) and grd_validate, the one place the format's semantic rules live:
 * the decoder runs it on what it parsed and the encoder on what it is given, so both
 * sides of the wire accept exactly the same descriptors.
 */
#include "grd_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int grd_fail(grd_error *err, int code, const char *fmt, ...) {
    if (err != NULL) {
        va_list ap;
        err->code = code;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return code;
}

const char *grd_type_name(uint32_t type) {
    static const char *const names[] = {
        "?",      "char",     "short",    "int",    "long",     "longlong", "float",
        "double", "scomplex", "dcomplex", "string", "filename", "callback",
    };
    return type < sizeof names / sizeof names[0] ? names[type] : "?";
}

const char *grd_mode_name(uint32_t mode) {
    static const char *const names[] = {"?", "IN", "OUT", "INOUT", "WORK"};
    return mode < sizeof names / sizeof names[0] ? names[mode] : "?";
}

size_t grd_type_size(uint32_t type) {
    switch (type) {
    case GRD_CHAR: return sizeof(char);
    case GRD_SHORT: return sizeof(short);
    case GRD_INT: return sizeof(int);
    case GRD_LONG: return sizeof(long);
    case GRD_LONGLONG: return sizeof(long long);
    case GRD_FLOAT: return sizeof(float);
    case GRD_DOUBLE: return sizeof(double);
    case GRD_SCOMPLEX: return 2 * sizeof(float);
    case GRD_DCOMPLEX: return 2 * sizeof(double);
    case GRD_STRING:
    case GRD_FILENAME: return sizeof(char *);
    case GRD_CALLBACK: return sizeof(void (*)(void));
    default: return 0;
    }
}

int grd_type_is_integer(uint32_t type) {
    return type >= GRD_CHAR && type <= GRD_LONGLONG;
}

int grd_op_arity(uint32_t op, unsigned *pops) {
    switch (op) {
    case GRD_OP_CONST:
    case GRD_OP_PARAM:
    case GRD_OP_CBPARAM: *pops = 0; return 1;
    case GRD_OP_NEG:
    case GRD_OP_NOT: *pops = 1; return 1;
    case GRD_OP_COND: *pops = 3; return 1;
    default:
        if (op >= GRD_OP_ADD && op <= GRD_OP_MAX) {
            *pops = 2;
            return 1;
        }
        *pops = 0;
        return 0;
    }
}

uint64_t grd_fnv1a64(const uint8_t *buf, size_t len) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++) {
        h ^= buf[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static void free_expr(grd_expr *e) {
    free(e->code);
    e->code = NULL;
    e->len = 0;
}

void grd_free_params(grd_param *params, uint32_t n) {
    if (params == NULL) return;
    for (uint32_t i = 0; i < n; i++) {
        grd_param *p = &params[i];
        free(p->name);
        if (p->dims != NULL) {
            for (uint32_t d = 0; d < p->rank; d++) {
                free_expr(&p->dims[d].size);
                free_expr(&p->dims[d].start);
                free_expr(&p->dims[d].end);
                free_expr(&p->dims[d].step);
            }
            free(p->dims);
        }
        grd_free_params(p->cb, p->ncb);
    }
    free(params);
}

void grd_free(grd_desc *desc) {
    if (desc == NULL) return;
    free(desc->cls);
    grd_free_params(desc->params, desc->nparams);
    free_expr(&desc->cost);
    free(desc->module);
    free(desc->name);
    free(desc->description);
    free(desc);
}

int grd_find_param(const grd_desc *desc, const char *name) {
    if (desc == NULL || name == NULL || desc->params == NULL) return -1;
    for (uint32_t i = 0; i < desc->nparams; i++)
        if (desc->params[i].name != NULL && strcmp(desc->params[i].name, name) == 0) return (int)i;
    return -1;
}

int grd_is_identifier(const char *s, size_t len) {
    if (len == 0) return 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        int alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
        if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return 0;
    }
    return 1;
}

/* ---- validation ---- */

/* strlen that stops looking after MAX bytes (strnlen is POSIX, not C99). */
static size_t bounded_len(const char *s, size_t max) {
    size_t n = 0;
    while (n < max && s[n] != '\0')
        n++;
    return n;
}

/* Checks one name; WHAT is e.g. "module name" or "parameter 3 name". */
static int check_name(const char *s, const char *what, grd_error *err) {
    if (s == NULL) return grd_fail(err, GRD_E_INVALID, "%s is missing", what);
    size_t len = bounded_len(s, GRD_MAX_NAME + 1);
    if (len > GRD_MAX_NAME)
        return grd_fail(err, GRD_E_LIMIT, "%s is longer than the limit of %u bytes", what, GRD_MAX_NAME);
    if (len == 0) return grd_fail(err, GRD_E_INVALID, "%s is empty", what);
    if (!grd_is_identifier(s, len))
        return grd_fail(err, GRD_E_INVALID, "%s '%s' is not a C identifier", what, s);
    return GRD_OK;
}

/* Checks one program against DESC's parameters; CTX prefixes messages. CB: the callback
 * whose parameter the program sizes (CBPARAM names its parameters), NULL elsewhere. */
static int check_prog(const grd_desc *desc, const grd_param *cb, const grd_expr *e, const char *ctx,
                      grd_error *err) {
    if (e->len == 0) return GRD_OK;
    if (e->len > GRD_MAX_PROGRAM)
        return grd_fail(err, GRD_E_LIMIT, "%s: program of %u instructions exceeds the limit of %u", ctx,
                        e->len, GRD_MAX_PROGRAM);
    if (e->code == NULL)
        return grd_fail(err, GRD_E_INVALID, "%s: program has %u instructions but no code", ctx, e->len);
    unsigned depth = 0;
    for (uint32_t pc = 0; pc < e->len; pc++) {
        const grd_insn *in = &e->code[pc];
        unsigned pops;
        if (!grd_op_arity(in->op, &pops))
            return grd_fail(err, GRD_E_INVALID, "%s: instruction %u: unknown opcode %u", ctx, pc, in->op);
        if (in->op == GRD_OP_PARAM) {
            int64_t i = in->operand;
            if (i < 0 || (uint64_t)i >= desc->nparams)
                return grd_fail(err, GRD_E_INVALID,
                                "%s: instruction %u: PARAM %lld is out of range (%u parameters)", ctx, pc,
                                (long long)i, desc->nparams);
            const grd_param *p = &desc->params[i];
            if (!grd_type_is_integer(p->type) || p->rank != 0 || (p->mode != GRD_IN && p->mode != GRD_INOUT))
                return grd_fail(err, GRD_E_INVALID,
                                "%s: instruction %u: PARAM %lld ('%s') is not an integer IN or "
                                "INOUT scalar",
                                ctx, pc, (long long)i, p->name);
        } else if (in->op == GRD_OP_CBPARAM) {
            int64_t j = in->operand;
            if (cb == NULL)
                return grd_fail(err, GRD_E_INVALID,
                                "%s: instruction %u: CBPARAM outside the parameters of a callback", ctx, pc);
            if (j < 0 || (uint64_t)j >= cb->ncb)
                return grd_fail(err, GRD_E_INVALID,
                                "%s: instruction %u: CBPARAM %lld is out of range (callback '%s' has %u "
                                "parameters)",
                                ctx, pc, (long long)j, cb->name, cb->ncb);
            const grd_param *q = &cb->cb[j];
            if (!grd_type_is_integer(q->type) || q->rank != 0 || (q->mode != GRD_IN && q->mode != GRD_INOUT))
                return grd_fail(
                    err, GRD_E_INVALID,
                    "%s: instruction %u: CBPARAM %lld ('%s') is not an integer IN or INOUT scalar "
                    "of callback '%s'",
                    ctx, pc, (long long)j, q->name, cb->name);
        } else if (in->op != GRD_OP_CONST && in->operand != 0) {
            return grd_fail(err, GRD_E_INVALID, "%s: instruction %u: operand %lld on an op that takes none",
                            ctx, pc, (long long)in->operand);
        }
        if (depth < pops) return grd_fail(err, GRD_E_INVALID, "%s: instruction %u: stack underflow", ctx, pc);
        depth = depth - pops + 1;
        if (depth > GRD_MAX_STACK)
            return grd_fail(err, GRD_E_LIMIT, "%s: instruction %u: stack depth exceeds the limit of %u", ctx,
                            pc, GRD_MAX_STACK);
    }
    if (depth != 1)
        return grd_fail(err, GRD_E_INVALID, "%s: program leaves %u values instead of one", ctx, depth);
    return GRD_OK;
}

/* The fields of N parameters (names, types, modes, flags, ranks, callbacks' shapes);
 * WHAT and WHERE name them in messages ("parameter 3 ('x') of callback 2 ('cb')"). The
 * parameters of a callback (WHERE non-empty) are ordinary IN, OUT or INOUT ones. */
static int check_fields(const grd_param *params, uint32_t n, const char *what, const char *where,
                        grd_error *err) {
    char ctx[320];
    int in_cb = where[0] != '\0';
    if (n > 0 && params == NULL)
        return grd_fail(err, GRD_E_INVALID, "%u parameters%s but no parameter array", n, where);
    for (uint32_t i = 0; i < n; i++) {
        const grd_param *p = &params[i];
        int rc;
        snprintf(ctx, sizeof ctx, "%s %u%s name", what, i + 1, where);
        if ((rc = check_name(p->name, ctx, err)) != GRD_OK) return rc;
        for (uint32_t j = 0; j < i; j++)
            if (strcmp(params[j].name, p->name) == 0)
                return grd_fail(err, GRD_E_INVALID, "%s %u ('%s')%s: the name is also %s %u's", what, i + 1,
                                p->name, where, what, j + 1);
        if (p->type < GRD_CHAR || p->type > (in_cb ? GRD_FILENAME : GRD_CALLBACK))
            return grd_fail(err, GRD_E_INVALID, "%s %u ('%s')%s: unknown type %u%s", what, i + 1, p->name,
                            where, p->type,
                            in_cb && p->type == GRD_CALLBACK ? " (no callbacks inside callbacks)" : "");
        if (p->mode < GRD_IN || p->mode > (in_cb ? GRD_INOUT : GRD_WORK))
            return grd_fail(err, GRD_E_INVALID, "%s %u ('%s')%s: unknown mode %u", what, i + 1, p->name,
                            where, p->mode);
        if (p->flags & ~(GRD_PF_UNSIGNED | GRD_PF_POINTER))
            return grd_fail(err, GRD_E_INVALID, "%s %u ('%s')%s: unknown flag bits 0x%x", what, i + 1,
                            p->name, where, p->flags & ~(GRD_PF_UNSIGNED | GRD_PF_POINTER));
        if (p->rank > GRD_MAX_RANK)
            return grd_fail(err, GRD_E_LIMIT, "%s %u ('%s')%s: rank %u exceeds the limit of %u", what, i + 1,
                            p->name, where, p->rank, GRD_MAX_RANK);
        if (p->rank > 0 && p->dims == NULL)
            return grd_fail(err, GRD_E_INVALID, "%s %u ('%s')%s: rank %u but no dimensions", what, i + 1,
                            p->name, where, p->rank);
        if (p->type == GRD_CALLBACK) {
            if (p->mode != GRD_IN || p->flags != 0 || p->rank != 0)
                return grd_fail(
                    err, GRD_E_INVALID,
                    "%s %u ('%s'): a callback has mode IN, no flags and rank 0 (mode %u, flags 0x%x, "
                    "rank %u)",
                    what, i + 1, p->name, p->mode, p->flags, p->rank);
            if (p->ncb > GRD_MAX_CB_PARAMS)
                return grd_fail(err, GRD_E_LIMIT,
                                "%s %u ('%s'): %u callback parameters exceed the limit of %u", what, i + 1,
                                p->name, p->ncb, GRD_MAX_CB_PARAMS);
        } else if (p->ncb != 0 || p->cb != NULL) {
            return grd_fail(err, GRD_E_INVALID,
                            "%s %u ('%s')%s: parameters of its own, but it is no callback", what, i + 1,
                            p->name, where);
        }
        if (in_cb && p->mode == GRD_WORK)
            return grd_fail(err, GRD_E_INVALID, "%s %u ('%s')%s: a callback has no WORK parameters", what,
                            i + 1, p->name, where);
    }
    return GRD_OK;
}

/* The dimension programs of P (a parameter of DESC, or of its callback CB). */
static int check_dims(const grd_desc *desc, const grd_param *cb, const grd_param *p, const char *pctx,
                      grd_error *err) {
    char ctx[400];
    for (uint32_t d = 0; d < p->rank; d++) {
        static const char *const field[] = {"size", "start", "end", "step"};
        const grd_expr *progs[4] = {&p->dims[d].size, &p->dims[d].start, &p->dims[d].end, &p->dims[d].step};
        if (progs[0]->len == 0)
            return grd_fail(err, GRD_E_INVALID, "%s dimension %u: the size program is empty", pctx, d + 1);
        for (int f = 0; f < 4; f++) {
            int rc;
            snprintf(ctx, sizeof ctx, "%s dimension %u %s", pctx, d + 1, field[f]);
            if ((rc = check_prog(desc, cb, progs[f], ctx, err)) != GRD_OK) return rc;
        }
    }
    return GRD_OK;
}

int grd_validate(const grd_desc *desc, grd_error *err) {
    int rc;
    char ctx[320];

    if (desc == NULL) return grd_fail(err, GRD_E_ARG, "no descriptor");
    if (desc->version != GRD_FORMAT_VERSION)
        return grd_fail(err, GRD_E_VERSION, "format version %u is not supported (expected %u)", desc->version,
                        GRD_FORMAT_VERSION);
    if ((rc = check_name(desc->module, "module name", err)) != GRD_OK) return rc;
    if ((rc = check_name(desc->name, "function name", err)) != GRD_OK) return rc;
    /* A missing description is the same as an empty one: it encodes identically. */
    if (desc->description != NULL &&
        bounded_len(desc->description, GRD_MAX_DESCRIPTION + 1) > GRD_MAX_DESCRIPTION)
        return grd_fail(err, GRD_E_LIMIT, "description is longer than the limit of %u bytes",
                        GRD_MAX_DESCRIPTION);
    if (desc->flags & ~GRD_FF_ALL)
        return grd_fail(err, GRD_E_INVALID, "unknown function flag bits 0x%x", desc->flags & ~GRD_FF_ALL);
    /* A Timeout is 1 s or more; without the flag there is none (the field is not encoded). */
    if ((desc->flags & GRD_FF_TIMEOUT) && (desc->timeout == 0 || desc->timeout > GRD_MAX_TIMEOUT))
        return grd_fail(err, GRD_E_INVALID, "timeout %u s is outside 1 to %u", desc->timeout,
                        GRD_MAX_TIMEOUT);
    if (!(desc->flags & GRD_FF_TIMEOUT) && desc->timeout != 0)
        return grd_fail(err, GRD_E_INVALID, "a timeout on a descriptor without the timeout flag");
    /* A method names its class; a function has none (the field is not encoded). */
    if ((desc->flags & GRD_FF_METHOD) && (rc = check_name(desc->cls, "class name", err)) != GRD_OK) return rc;
    if (!(desc->flags & GRD_FF_METHOD) && desc->cls != NULL)
        return grd_fail(err, GRD_E_INVALID, "a class name on a descriptor without the method flag");
    if (desc->language < GRD_LANG_C || desc->language > GRD_LANG_FORTRAN)
        return grd_fail(err, GRD_E_INVALID, "unknown language %u", desc->language);
    if (desc->nparams > GRD_MAX_PARAMS)
        return grd_fail(err, GRD_E_LIMIT, "%u parameters exceed the limit of %u", desc->nparams,
                        GRD_MAX_PARAMS);
    /* Every parameter's own fields first: programs may refer to any parameter, and
     * their checks rely on the referenced parameter being well-formed. */
    if ((rc = check_fields(desc->params, desc->nparams, "parameter", "", err)) != GRD_OK) return rc;
    for (uint32_t i = 0; i < desc->nparams; i++) {
        const grd_param *p = &desc->params[i];
        snprintf(ctx, sizeof ctx, "parameter %u ('%s')", i + 1, p->name);
        if ((rc = check_dims(desc, NULL, p, ctx, err)) != GRD_OK) return rc;
        if (p->type != GRD_CALLBACK) continue;
        snprintf(ctx, sizeof ctx, " of callback %u ('%s')", i + 1, p->name);
        if ((rc = check_fields(p->cb, p->ncb, "parameter", ctx, err)) != GRD_OK) return rc;
        for (uint32_t j = 0; j < p->ncb; j++) {
            snprintf(ctx, sizeof ctx, "parameter %u ('%s') of callback %u ('%s')", j + 1, p->cb[j].name,
                     i + 1, p->name);
            if ((rc = check_dims(desc, p, &p->cb[j], ctx, err)) != GRD_OK) return rc;
        }
    }
    return check_prog(desc, NULL, &desc->cost, "cost", err);
}
