/* grd_dump.c: the readable text form of a descriptor, printed by gridrpc-desc and
 * compared by the golden tests, so it must stay stable: change it only together with
 * the golden files.
 *
 * Programs are printed as infix with the fewest parentheses that keep them
 * unambiguous under this grammar, loosest first:
 *
 *   1  a ? b : c          right-associative
 *   2  ||                 left
 *   3  &&                 left
 *   4  == !=              left
 *   5  < <= > >=          left
 *   6  + -                left (binary)
 *   7  * / %              left
 *   8  ^                  right: a^b^c is a^(b^c)
 *   9  -x !x              prefix; a negative constant is at this level too
 *  10  constants, names, min(a, b), max(a, b), ( ... )
 *
 * So unary minus binds tighter than ^: -a^2 is (-a)^2, and -(a^2) keeps its
 * parentheses; a^-b needs none.
 */
#include "grd_internal.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { P_COND = 1, P_OR, P_AND, P_EQ, P_REL, P_ADD, P_MUL, P_POW, P_UNARY, P_PRIMARY };

/* A growable string; on allocation failure it sets failed and stops growing. */
typedef struct sbuf {
    char *s;
    size_t len, cap;
    int failed;
} sbuf;

static void sb_grow(sbuf *b, size_t extra) {
    if (b->failed) return;
    if (b->len + extra + 1 <= b->cap) return;
    size_t cap = b->cap ? b->cap : 128;
    while (cap < b->len + extra + 1)
        cap *= 2;
    char *s = realloc(b->s, cap);
    if (s == NULL) {
        b->failed = 1;
        return;
    }
    b->s = s;
    b->cap = cap;
}

static void sb_putn(sbuf *b, const char *s, size_t n) {
    sb_grow(b, n);
    if (b->failed) return;
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

static void sb_puts(sbuf *b, const char *s) {
    sb_putn(b, s, strlen(s));
}

static void sb_printf(sbuf *b, const char *fmt, ...) GRD_PRINTF(2, 3);
static void sb_printf(sbuf *b, const char *fmt, ...) {
    char tmp[64];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->failed = 1;
        return;
    }
    if ((size_t)n < sizeof tmp) {
        sb_putn(b, tmp, (size_t)n);
        return;
    }
    sb_grow(b, (size_t)n);
    if (b->failed) return;
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

/* ---- programs ---- */

typedef struct node {
    sbuf text;
    int prec;
} node;

static const char *binop(uint32_t op, int *prec, int *right_assoc) {
    *right_assoc = 0;
    switch (op) {
    case GRD_OP_ADD: *prec = P_ADD; return " + ";
    case GRD_OP_SUB: *prec = P_ADD; return " - ";
    case GRD_OP_MUL: *prec = P_MUL; return "*";
    case GRD_OP_DIV: *prec = P_MUL; return "/";
    case GRD_OP_MOD: *prec = P_MUL; return "%";
    case GRD_OP_POW:
        *prec = P_POW;
        *right_assoc = 1;
        return "^";
    case GRD_OP_LT: *prec = P_REL; return " < ";
    case GRD_OP_LE: *prec = P_REL; return " <= ";
    case GRD_OP_GT: *prec = P_REL; return " > ";
    case GRD_OP_GE: *prec = P_REL; return " >= ";
    case GRD_OP_EQ: *prec = P_EQ; return " == ";
    case GRD_OP_NE: *prec = P_EQ; return " != ";
    case GRD_OP_AND: *prec = P_AND; return " && ";
    case GRD_OP_OR: *prec = P_OR; return " || ";
    default: *prec = 0; return NULL;
    }
}

/* Appends operand N, parenthesized when it binds looser than MIN_PREC. */
static void put_operand(sbuf *b, const node *n, int min_prec) {
    const char *t = n->text.s != NULL ? n->text.s : "";
    if (n->prec < min_prec) {
        sb_puts(b, "(");
        sb_puts(b, t);
        sb_puts(b, ")");
    } else {
        sb_puts(b, t);
    }
}

/* Prints E as infix into OUT; returns 0 when E is not a well-formed program (the
 * dump then shows a placeholder instead). */
/* CB: the callback whose parameter E sizes (CBPARAM names its parameters), or NULL. */
static int put_expr(sbuf *out, const grd_desc *desc, const grd_param *cb, const grd_expr *e) {
    node st[GRD_MAX_STACK];
    unsigned sp = 0;
    int ok = 1;
    if (e->len > GRD_MAX_PROGRAM || e->code == NULL) return 0;
    for (uint32_t pc = 0; pc < e->len && ok; pc++) {
        const grd_insn *in = &e->code[pc];
        unsigned pops;
        if (!grd_op_arity(in->op, &pops) || sp < pops || (pops == 0 && sp == GRD_MAX_STACK)) {
            ok = 0;
            break;
        }
        sp -= pops;
        node *a = &st[sp];
        node r = {{NULL, 0, 0, 0}, P_PRIMARY};
        int prec, rassoc;
        const char *sym;
        switch (in->op) {
        case GRD_OP_CONST:
            sb_printf(&r.text, "%" PRId64, in->operand);
            if (in->operand < 0) r.prec = P_UNARY;
            break;
        case GRD_OP_PARAM:
            if (in->operand >= 0 && (uint64_t)in->operand < desc->nparams && desc->params != NULL &&
                desc->params[in->operand].name != NULL)
                sb_puts(&r.text, desc->params[in->operand].name);
            else
                sb_printf(&r.text, "$%" PRId64, in->operand);
            break;
        case GRD_OP_CBPARAM:
            if (cb != NULL && in->operand >= 0 && (uint64_t)in->operand < cb->ncb && cb->cb != NULL &&
                cb->cb[in->operand].name != NULL)
                sb_puts(&r.text, cb->cb[in->operand].name);
            else
                sb_printf(&r.text, "$cb%" PRId64, in->operand);
            break;
        case GRD_OP_NEG:
        case GRD_OP_NOT:
            r.prec = P_UNARY;
            sb_puts(&r.text, in->op == GRD_OP_NEG ? "-" : "!");
            /* "--x" would read as a decrement in C-like syntax. */
            put_operand(&r.text, a,
                        in->op == GRD_OP_NEG && a->text.s != NULL && a->text.s[0] == '-' ? P_PRIMARY
                                                                                         : P_UNARY);
            break;
        case GRD_OP_COND:
            r.prec = P_COND;
            put_operand(&r.text, &a[0], P_COND + 1);
            sb_puts(&r.text, " ? ");
            put_operand(&r.text, &a[1], P_COND);
            sb_puts(&r.text, " : ");
            put_operand(&r.text, &a[2], P_COND);
            break;
        case GRD_OP_MIN:
        case GRD_OP_MAX:
            sb_puts(&r.text, in->op == GRD_OP_MIN ? "min(" : "max(");
            put_operand(&r.text, &a[0], 0);
            sb_puts(&r.text, ", ");
            put_operand(&r.text, &a[1], 0);
            sb_puts(&r.text, ")");
            break;
        default:
            sym = binop(in->op, &prec, &rassoc);
            r.prec = prec;
            put_operand(&r.text, &a[0], rassoc ? prec + 1 : prec);
            sb_puts(&r.text, sym);
            put_operand(&r.text, &a[1], rassoc ? prec : prec + 1);
            break;
        }
        for (unsigned i = 0; i < pops; i++) {
            ok = ok && !a[i].text.failed;
            free(a[i].text.s);
        }
        st[sp++] = r;
    }
    ok = ok && sp == 1 && !st[0].text.failed;
    if (ok) sb_puts(out, st[0].text.s);
    for (unsigned i = 0; i < sp; i++)
        free(st[i].text.s);
    return ok;
}

static void put_prog(sbuf *out, const grd_desc *desc, const grd_param *cb, const grd_expr *e) {
    if (!put_expr(out, desc, cb, e)) sb_puts(out, "<invalid program>");
}

/* ---- the descriptor ---- */

static void put_quoted(sbuf *b, const char *s) {
    sb_puts(b, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': sb_puts(b, "\\\""); break;
        case '\\': sb_puts(b, "\\\\"); break;
        case '\n': sb_puts(b, "\\n"); break;
        case '\t': sb_puts(b, "\\t"); break;
        case '\r': sb_puts(b, "\\r"); break;
        default:
            /* Bytes outside printable ASCII are escaped so the dump is plain ASCII and
             * stable whatever the locale. */
            if (*p < 0x20 || *p >= 0x7f)
                sb_printf(b, "\\x%02x", *p);
            else
                sb_putn(b, (const char *)p, 1);
        }
    }
    sb_puts(b, "\"");
}

static const char *lang_name(uint32_t lang) {
    switch (lang) {
    case GRD_LANG_C: return "C";
    case GRD_LANG_CXX: return "C++";
    case GRD_LANG_FORTRAN: return "Fortran";
    default: return "?";
    }
}

static const char *str_or(const char *s, const char *dflt) {
    return s != NULL ? s : dflt;
}

/* The dimensions of array P: "[n][m : lo, hi, 1]". */
static void put_dims(sbuf *b, const grd_desc *desc, const grd_param *cb, const grd_param *p) {
    for (uint32_t d = 0; d < p->rank && d < GRD_MAX_RANK; d++) {
        const grd_dim *dim = &p->dims[d];
        sb_puts(b, "[");
        put_prog(b, desc, cb, &dim->size);
        /* A sub-range is shown whole, its absent parts as their defaults. */
        if (dim->start.len || dim->end.len || dim->step.len) {
            sb_puts(b, " : ");
            if (dim->start.len)
                put_prog(b, desc, cb, &dim->start);
            else
                sb_puts(b, "0");
            sb_puts(b, ", ");
            put_prog(b, desc, cb, dim->end.len ? &dim->end : &dim->size);
            sb_puts(b, ", ");
            if (dim->step.len)
                put_prog(b, desc, cb, &dim->step);
            else
                sb_puts(b, "1");
        }
        sb_puts(b, "]");
    }
    if (p->rank > GRD_MAX_RANK) sb_printf(b, "[... rank %u]", p->rank);
}

/* One parameter of a callback: "IN double c[n][n]". */
static void put_cb_param(sbuf *b, const grd_desc *desc, const grd_param *cb, const grd_param *p) {
    sb_printf(b, "%s ", grd_mode_name(p->mode));
    if (p->flags & GRD_PF_UNSIGNED) sb_puts(b, "unsigned ");
    sb_puts(b, grd_type_name(p->type));
    sb_puts(b, (p->flags & GRD_PF_POINTER) ? " *" : " ");
    sb_puts(b, str_or(p->name, "?"));
    if (p->rank > 0 && p->dims != NULL) put_dims(b, desc, cb, p);
}

static void put_param(sbuf *b, const grd_desc *desc, uint32_t i) {
    const grd_param *p = &desc->params[i];
    sb_printf(b, "  param %u ", i + 1);
    sb_puts(b, str_or(p->name, "?"));
    if (p->type == GRD_CALLBACK) {
        sb_puts(b, ": callback (");
        for (uint32_t j = 0; p->cb != NULL && j < p->ncb; j++) {
            if (j) sb_puts(b, ", ");
            put_cb_param(b, desc, p, &p->cb[j]);
        }
        sb_puts(b, ")\n");
        return;
    }
    sb_printf(b, ": %s ", grd_mode_name(p->mode));
    if (p->flags & GRD_PF_UNSIGNED) sb_puts(b, "unsigned ");
    sb_puts(b, grd_type_name(p->type));
    if (p->flags & GRD_PF_POINTER) sb_puts(b, " *");
    if (p->flags & ~(GRD_PF_UNSIGNED | GRD_PF_POINTER)) sb_printf(b, " flags 0x%x", p->flags);
    if (p->rank > 0 && p->dims != NULL) {
        sb_puts(b, " ");
        put_dims(b, desc, NULL, p);
    }
    sb_puts(b, "\n");
}

char *grd_dump(const grd_desc *desc) {
    if (desc == NULL) return NULL;
    sbuf b = {NULL, 0, 0, 0};
    sb_puts(&b, "function ");
    sb_puts(&b, str_or(desc->module, "?"));
    sb_puts(&b, "/");
    if (desc->flags & GRD_FF_METHOD) {
        sb_puts(&b, str_or(desc->cls, "?"));
        sb_puts(&b, ".");
    }
    sb_puts(&b, str_or(desc->name, "?"));
    sb_printf(&b, "  hash 0x%016" PRIx64 "  language %s  flags %u", desc->hash, lang_name(desc->language),
              desc->flags);
    if (desc->flags & GRD_FF_SHRINK) sb_puts(&b, " (shrink)");
    if (desc->flags & GRD_FF_NO_RETRY) sb_puts(&b, " (no-retry)");
    if (desc->flags & GRD_FF_METHOD) sb_puts(&b, " (method)");
    if (desc->flags & GRD_FF_TIMEOUT) sb_puts(&b, " (timeout)");
    sb_puts(&b, "\n  description ");
    put_quoted(&b, str_or(desc->description, ""));
    if (desc->flags & GRD_FF_TIMEOUT) sb_printf(&b, "\n  timeout %u s", desc->timeout);
    sb_puts(&b, "\n  cost ");
    if (desc->cost.len == 0)
        sb_puts(&b, "none");
    else
        put_prog(&b, desc, NULL, &desc->cost);
    sb_puts(&b, "\n");
    for (uint32_t i = 0; desc->params != NULL && i < desc->nparams; i++)
        put_param(&b, desc, i);
    if (b.failed) {
        free(b.s);
        return NULL;
    }
    return b.s;
}

char *grd_expr_text(const grd_desc *desc, const grd_expr *e) {
    if (desc == NULL || e == NULL || e->len == 0) return NULL;
    sbuf b = {NULL, 0, 0, 0};
    put_prog(&b, desc, NULL, e);
    if (b.failed) {
        free(b.s);
        return NULL;
    }
    return b.s;
}

char *grd_dims_text(const grd_desc *desc, uint32_t pindex) {
    if (desc == NULL || pindex >= desc->nparams) return NULL;
    const grd_param *p = &desc->params[pindex];
    sbuf b = {NULL, 0, 0, 0};
    sb_puts(&b, "");
    if (p->rank > 0 && p->dims != NULL) put_dims(&b, desc, NULL, p);
    if (p->type == GRD_CALLBACK) {
        sb_puts(&b, "(");
        for (uint32_t j = 0; p->cb != NULL && j < p->ncb; j++) {
            if (j) sb_puts(&b, ", ");
            put_cb_param(&b, desc, p, &p->cb[j]);
        }
        sb_puts(&b, ")");
    }
    if (b.failed) {
        free(b.s);
        return NULL;
    }
    return b.s;
}
