/* grd_eval.c: evaluates descriptor programs on actual scalar arguments, and from them
 * the shape and byte size of every array argument and the cost of a call.
 *
 * Every step is checked: the values come from a remote peer, and the results size
 * buffers. An arithmetic error (overflow, division by zero, negative exponent) does
 * not stop evaluation at once: it travels as a "poisoned" stack value and is reported
 * only if it reaches the result. So COND, AND and OR behave like C's ?:, && and ||:
 * `n > 0 ? m / n : 0` is fine for n == 0, although postfix code computes both arms.
 */
#include "grd_internal.h"

#include <stdio.h>
#include <string.h>

/* A stack value, or the arithmetic error that produced it. */
typedef struct slot {
    int64_t v;
    int code;     /* GRD_OK, or the error this value carries */
    uint32_t pc;  /* of the failing instruction */
    uint32_t op;  /* its opcode */
    int64_t a, b; /* its operands */
} slot;

static const char *op_symbol(uint32_t op) {
    switch (op) {
    case GRD_OP_ADD: return "+";
    case GRD_OP_SUB: return "-";
    case GRD_OP_MUL: return "*";
    case GRD_OP_DIV: return "/";
    case GRD_OP_MOD: return "%";
    case GRD_OP_POW: return "^";
    default: return "?";
    }
}

static int report(const slot *s, grd_error *err) {
    long long a = (long long)s->a, b = (long long)s->b;
    switch (s->code) {
    case GRD_E_DIVZERO:
        return grd_fail(err, s->code, "instruction %u: division by zero in %lld %s 0", s->pc, a,
                        op_symbol(s->op));
    case GRD_E_RANGE:
        return grd_fail(err, s->code, "instruction %u: negative exponent in %lld ^ %lld", s->pc, a, b);
    default:
        if (s->op == GRD_OP_NEG)
            return grd_fail(err, s->code, "instruction %u: -(%lld) overflows 64 bits", s->pc, a);
        return grd_fail(err, s->code, "instruction %u: %lld %s %lld overflows 64 bits", s->pc, a,
                        op_symbol(s->op), b);
    }
}

/* Computes a OP b into *r; returns GRD_OK or the error code. */
static int arith(uint32_t op, int64_t a, int64_t b, int64_t *r) {
    switch (op) {
    case GRD_OP_ADD: return __builtin_add_overflow(a, b, r) ? GRD_E_OVERFLOW : GRD_OK;
    case GRD_OP_SUB: return __builtin_sub_overflow(a, b, r) ? GRD_E_OVERFLOW : GRD_OK;
    case GRD_OP_MUL: return __builtin_mul_overflow(a, b, r) ? GRD_E_OVERFLOW : GRD_OK;
    case GRD_OP_DIV:
        if (b == 0) return GRD_E_DIVZERO;
        if (a == INT64_MIN && b == -1) return GRD_E_OVERFLOW;
        *r = a / b;
        return GRD_OK;
    case GRD_OP_MOD:
        if (b == 0) return GRD_E_DIVZERO;
        *r = b == -1 ? 0 : a % b; /* INT64_MIN % -1 traps on x86 although it is 0 */
        return GRD_OK;
    case GRD_OP_POW: {
        if (b < 0) return GRD_E_RANGE;
        /* Squaring: once a needed square overflows, so does the product that uses it,
         * because every factor has magnitude >= 1 when |a| >= 2. */
        int64_t result = 1, base = a;
        uint64_t e = (uint64_t)b;
        while (e != 0) {
            if ((e & 1) && __builtin_mul_overflow(result, base, &result)) return GRD_E_OVERFLOW;
            e >>= 1;
            if (e != 0 && __builtin_mul_overflow(base, base, &base)) return GRD_E_OVERFLOW;
        }
        *r = result;
        return GRD_OK;
    }
    case GRD_OP_LT: *r = a < b; return GRD_OK;
    case GRD_OP_LE: *r = a <= b; return GRD_OK;
    case GRD_OP_GT: *r = a > b; return GRD_OK;
    case GRD_OP_GE: *r = a >= b; return GRD_OK;
    case GRD_OP_EQ: *r = a == b; return GRD_OK;
    case GRD_OP_NE: *r = a != b; return GRD_OK;
    case GRD_OP_MIN: *r = a < b ? a : b; return GRD_OK;
    case GRD_OP_MAX: *r = a > b ? a : b; return GRD_OK;
    default: return GRD_E_INVALID;
    }
}

int grd_eval(const grd_expr *prog, const int64_t *scalars, uint32_t nscalars, int64_t *result,
             grd_error *err) {
    if (prog == NULL || result == NULL) return grd_fail(err, GRD_E_ARG, "no program or result");
    if (prog->len == 0) return grd_fail(err, GRD_E_ARG, "the program is absent");
    if (prog->len > GRD_MAX_PROGRAM)
        return grd_fail(err, GRD_E_LIMIT, "program of %u instructions exceeds the limit of %u", prog->len,
                        GRD_MAX_PROGRAM);
    if (prog->code == NULL) return grd_fail(err, GRD_E_ARG, "the program has no code");
    if (scalars == NULL) nscalars = 0;

    slot st[GRD_MAX_STACK];
    unsigned sp = 0;
    for (uint32_t pc = 0; pc < prog->len; pc++) {
        const grd_insn *in = &prog->code[pc];
        unsigned pops;
        if (!grd_op_arity(in->op, &pops))
            return grd_fail(err, GRD_E_INVALID, "instruction %u: unknown opcode %u", pc, in->op);
        if (sp < pops) return grd_fail(err, GRD_E_INVALID, "instruction %u: stack underflow", pc);
        if (pops == 0 && sp == GRD_MAX_STACK)
            return grd_fail(err, GRD_E_LIMIT, "instruction %u: stack depth exceeds the limit of %u", pc,
                            GRD_MAX_STACK);
        sp -= pops;
        slot *a = &st[sp]; /* operands are a[0], a[1], a[2] */
        slot r = {.v = 0, .code = GRD_OK, .pc = pc, .op = in->op, .a = 0, .b = 0};
        switch (in->op) {
        case GRD_OP_CONST: r.v = in->operand; break;
        case GRD_OP_CBPARAM:
            /* Callback programs are evaluated only after grd_callback_desc rewrote them. */
            return grd_fail(err, GRD_E_INVALID, "instruction %u: CBPARAM outside a callback's descriptor",
                            pc);
        case GRD_OP_PARAM:
            if (in->operand < 0 || (uint64_t)in->operand >= nscalars)
                return grd_fail(err, GRD_E_ARG, "instruction %u: PARAM %lld has no value (%u scalars given)",
                                pc, (long long)in->operand, nscalars);
            r.v = scalars[in->operand];
            break;
        case GRD_OP_NEG:
            if (a->code != GRD_OK)
                r = *a;
            else if (__builtin_sub_overflow((int64_t)0, a->v, &r.v)) {
                r.code = GRD_E_OVERFLOW;
                r.a = a->v;
            }
            break;
        case GRD_OP_NOT:
            if (a->code != GRD_OK)
                r = *a;
            else
                r.v = !a->v;
            break;
        case GRD_OP_AND:
            if (a->code != GRD_OK)
                r = *a;
            else if (a->v == 0)
                r.v = 0;
            else if (a[1].code != GRD_OK)
                r = a[1];
            else
                r.v = a[1].v != 0;
            break;
        case GRD_OP_OR:
            if (a->code != GRD_OK)
                r = *a;
            else if (a->v != 0)
                r.v = 1;
            else if (a[1].code != GRD_OK)
                r = a[1];
            else
                r.v = a[1].v != 0;
            break;
        case GRD_OP_COND: r = a->code != GRD_OK ? *a : a->v != 0 ? a[1] : a[2]; break;
        default:
            if (a->code != GRD_OK)
                r = *a;
            else if (a[1].code != GRD_OK)
                r = a[1];
            else {
                r.a = a->v;
                r.b = a[1].v;
                r.code = arith(in->op, a->v, a[1].v, &r.v);
            }
            break;
        }
        st[sp++] = r;
    }
    if (sp != 1) return grd_fail(err, GRD_E_INVALID, "the program leaves %u values instead of one", sp);
    if (st[0].code != GRD_OK) return report(&st[0], err);
    *result = st[0].v;
    return GRD_OK;
}

/* Evaluates one dimension field; a failure is reported with the parameter, the
 * dimension and the field. */
static int eval_field(const grd_desc *desc, const grd_param *p, uint32_t d, const char *field,
                      const grd_expr *e, const int64_t *scalars, int64_t *v, grd_error *err) {
    grd_error inner = {0, ""};
    int rc = grd_eval(e, scalars, scalars != NULL ? desc->nparams : 0, v, &inner);
    if (rc != GRD_OK)
        return grd_fail(err, rc, "dimension %u of '%s', %s: %s", d + 1, p->name, field, inner.msg);
    return GRD_OK;
}

/* A product of non-negative counts that is 0 when any count is 0, whatever the
 * others; otherwise *r and 1 when it stays <= LIMIT. */
static int product(const uint64_t *v, uint32_t n, uint64_t limit, uint64_t *r) {
    uint64_t acc = 1;
    for (uint32_t i = 0; i < n; i++)
        if (v[i] == 0) {
            *r = 0;
            return 1;
        }
    for (uint32_t i = 0; i < n; i++)
        if (__builtin_mul_overflow(acc, v[i], &acc) || acc > limit) return 0;
    *r = acc;
    return 1;
}

int grd_extent_of(const grd_desc *desc, uint32_t pindex, const int64_t *scalars, uint64_t max_bytes,
                  grd_extent *out, grd_error *err) {
    if (desc == NULL || out == NULL) return grd_fail(err, GRD_E_ARG, "no descriptor or output");
    if (pindex >= desc->nparams || desc->params == NULL)
        return grd_fail(err, GRD_E_ARG, "parameter %u does not exist (%u parameters)", pindex, desc->nparams);
    const grd_param *p = &desc->params[pindex];
    const char *name = p->name != NULL ? p->name : "?";
    size_t esize = grd_type_size(p->type);
    uint64_t limit = max_bytes != 0 && max_bytes < (uint64_t)INT64_MAX ? max_bytes : (uint64_t)INT64_MAX;
    memset(out, 0, sizeof *out);
    if (esize == 0) return grd_fail(err, GRD_E_INVALID, "parameter '%s': unknown type %u", name, p->type);
    if (p->rank > GRD_MAX_RANK)
        return grd_fail(err, GRD_E_LIMIT, "parameter '%s': rank %u exceeds the limit of %u", name, p->rank,
                        GRD_MAX_RANK);
    if (p->rank > 0 && p->dims == NULL)
        return grd_fail(err, GRD_E_INVALID, "parameter '%s': rank %u but no dimensions", name, p->rank);

    uint64_t sizes[GRD_MAX_RANK];
    out->rank = p->rank;
    for (uint32_t d = 0; d < p->rank; d++) {
        const grd_dim *dim = &p->dims[d];
        int64_t size, start = 0, end, step = 1;
        int rc;
        if ((rc = eval_field(desc, p, d, "size", &dim->size, scalars, &size, err)) != GRD_OK) return rc;
        if (size < 0)
            return grd_fail(err, GRD_E_RANGE, "dimension %u of '%s': size %lld is negative", d + 1, name,
                            (long long)size);
        end = size;
        if (dim->start.len != 0 &&
            (rc = eval_field(desc, p, d, "start", &dim->start, scalars, &start, err)) != GRD_OK)
            return rc;
        if (dim->end.len != 0 &&
            (rc = eval_field(desc, p, d, "end", &dim->end, scalars, &end, err)) != GRD_OK)
            return rc;
        if (dim->step.len != 0 &&
            (rc = eval_field(desc, p, d, "step", &dim->step, scalars, &step, err)) != GRD_OK)
            return rc;
        if (start < 0 || start > end || end > size)
            return grd_fail(err, GRD_E_RANGE, "dimension %u of '%s': sub-range %lld..%lld is outside 0..%lld",
                            d + 1, name, (long long)start, (long long)end, (long long)size);
        if (step < 1)
            return grd_fail(err, GRD_E_RANGE, "dimension %u of '%s': step %lld is below 1", d + 1, name,
                            (long long)step);
        uint64_t span = (uint64_t)end - (uint64_t)start; /* 0 <= span <= size */
        out->size[d] = size;
        out->start[d] = start;
        out->end[d] = end;
        out->step[d] = step;
        out->count[d] = span / (uint64_t)step + (span % (uint64_t)step != 0);
        sizes[d] = (uint64_t)size;
    }

    uint64_t elems, sent, bytes, sent_bytes;
    if (!product(sizes, p->rank, limit, &elems))
        return grd_fail(err, GRD_E_OVERFLOW, "parameter '%s': the element count exceeds the limit of %llu",
                        name, (unsigned long long)limit);
    if (!product(out->count, p->rank, limit, &sent)) /* sent <= elems: cannot happen */
        return grd_fail(err, GRD_E_OVERFLOW,
                        "parameter '%s': the sent element count exceeds the limit of %llu", name,
                        (unsigned long long)limit);
    if (__builtin_mul_overflow(elems, (uint64_t)esize, &bytes) || bytes > limit)
        return grd_fail(err, GRD_E_OVERFLOW,
                        "parameter '%s': %llu elements of %zu bytes exceed the limit of %llu bytes", name,
                        (unsigned long long)elems, esize, (unsigned long long)limit);
    sent_bytes = sent * (uint64_t)esize; /* <= bytes */
    out->elems = elems;
    out->sent = sent;
    out->bytes = bytes;
    out->sent_bytes = sent_bytes;
    out->whole = sent == elems;
    return GRD_OK;
}

int grd_cost(const grd_desc *desc, const int64_t *scalars, double *flops, grd_error *err) {
    if (desc == NULL || flops == NULL) return grd_fail(err, GRD_E_ARG, "no descriptor or output");
    *flops = 0;
    if (desc->cost.len == 0) return GRD_OK;
    grd_error inner = {0, ""};
    int64_t v;
    int rc = grd_eval(&desc->cost, scalars, scalars != NULL ? desc->nparams : 0, &v, &inner);
    if (rc != GRD_OK) return grd_fail(err, rc, "cost: %s", inner.msg);
    if (v < 0) return grd_fail(err, GRD_E_RANGE, "cost: %lld is negative", (long long)v);
    *flops = (double)v;
    return GRD_OK;
}
