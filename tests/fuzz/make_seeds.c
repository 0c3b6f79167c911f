/* make_seeds.c: writes the seed corpus of the descriptor fuzzer (tests/fuzz/corpus/desc)
 * from descriptors built by hand, so the seeds start the fuzzer inside valid encodings
 * that reach every part of the format: all types, modes and flags, sub-ranges, every
 * opcode, and a module bundle. Run it again only when the format changes:
 *     make_seeds DIR
 */
#include "grd_desc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *xcalloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size);
    if (p == NULL) {
        perror("calloc");
        exit(1);
    }
    return p;
}

static char *xstrdup(const char *s) {
    char *p = xcalloc(strlen(s) + 1, 1);
    memcpy(p, s, strlen(s));
    return p;
}

/* prog(n, op, operand, op, operand, ...): a program of N instructions. */
static grd_expr prog(uint32_t n, ...) {
    grd_expr e = {n, n ? xcalloc(n, sizeof(grd_insn)) : NULL};
    va_list ap;
    va_start(ap, n);
    for (uint32_t i = 0; i < n; i++) {
        e.code[i].op = (uint32_t)va_arg(ap, int);
        e.code[i].operand = va_arg(ap, int64_t);
    }
    va_end(ap);
    return e;
}

#define C(k) GRD_OP_CONST, (int64_t)(k)
#define P(i) GRD_OP_PARAM, (int64_t)(i)
#define O(op) GRD_OP_##op, (int64_t)0

static grd_desc *new_desc(const char *module, const char *name, const char *descr, uint32_t lang,
                          uint32_t flags, uint32_t nparams) {
    grd_desc *d = xcalloc(1, sizeof *d);
    d->version = GRD_FORMAT_VERSION;
    d->module = xstrdup(module);
    d->name = xstrdup(name);
    d->description = xstrdup(descr);
    d->language = lang;
    d->flags = flags;
    d->nparams = nparams;
    d->params = xcalloc(nparams, sizeof *d->params);
    return d;
}

static grd_param *param(grd_desc *d, uint32_t i, const char *name, uint32_t type, uint32_t mode,
                        uint32_t flags, uint32_t rank) {
    grd_param *p = &d->params[i];
    p->name = xstrdup(name);
    p->type = type;
    p->mode = mode;
    p->flags = flags;
    p->rank = rank;
    p->dims = rank ? xcalloc(rank, sizeof *p->dims) : NULL;
    return p;
}

static grd_desc *dmmul(void) {
    grd_desc *d = new_desc("linalg", "dmmul", "double precision matrix multiply", GRD_LANG_C, 0, 4);
    param(d, 0, "n", GRD_INT, GRD_IN, 0, 0);
    const char *names[] = {"A", "B", "C"};
    for (int i = 0; i < 3; i++) {
        grd_param *p = param(d, (uint32_t)i + 1, names[i], GRD_DOUBLE, i < 2 ? GRD_IN : GRD_OUT, 0, 2);
        p->dims[0].size = prog(1, P(0));
        p->dims[1].size = prog(1, P(0));
    }
    d->cost = prog(5, C(2), P(0), C(3), O(POW), O(MUL));
    return d;
}

/* Every type, mode and flag; sub-ranges; a cost that uses every opcode. */
static grd_desc *kitchen(void) {
    grd_desc *d = new_desc("sample", "kitchen_sink", "all \"types\"\tand\\modes\n\x01\xc3\xa9",
                           GRD_LANG_FORTRAN, GRD_FF_SHRINK, 13);
    param(d, 0, "n", GRD_INT, GRD_IN, 0, 0);
    param(d, 1, "m", GRD_LONG, GRD_INOUT, GRD_PF_UNSIGNED, 0);
    param(d, 2, "s", GRD_SHORT, GRD_IN, 0, 0);
    param(d, 3, "c", GRD_CHAR, GRD_IN, GRD_PF_UNSIGNED, 0);
    param(d, 4, "ll", GRD_LONGLONG, GRD_IN, 0, 0);
    grd_param *p = param(d, 5, "x", GRD_FLOAT, GRD_IN, 0, 1);
    p->dims[0].size = prog(1, P(0));
    p->dims[0].start = prog(1, C(1));
    p->dims[0].end = prog(3, P(0), C(1), O(SUB));
    p->dims[0].step = prog(1, C(2));
    p = param(d, 6, "y", GRD_DOUBLE, GRD_INOUT, 0, 2);
    p->dims[0].size = prog(3, P(0), P(1), O(MAX));
    p->dims[0].step = prog(1, P(2));
    p->dims[1].size = prog(6, P(0), C(0), O(GT), P(0), C(1), O(COND));
    p = param(d, 7, "z", GRD_SCOMPLEX, GRD_OUT, 0, 1);
    p->dims[0].size = prog(4, P(0), C(-1), O(NEG), O(MOD));
    p = param(d, 8, "w", GRD_DCOMPLEX, GRD_WORK, 0, 3);
    for (int i = 0; i < 3; i++)
        p->dims[i].size = prog(3, P(4), C(3), O(MIN));
    p->dims[2].end = prog(3, P(4), C(2), O(DIV));
    param(d, 9, "name", GRD_STRING, GRD_IN, 0, 0);
    param(d, 10, "path", GRD_FILENAME, GRD_OUT, 0, 0);
    param(d, 11, "r", GRD_DOUBLE, GRD_OUT, GRD_PF_POINTER, 0);
    p = param(d, 12, "names", GRD_STRING, GRD_IN, 0, 1);
    p->dims[0].size = prog(1, P(3));
    d->cost = prog(22, P(0), C(1), O(ADD), P(2), O(LT), P(0), P(1), O(LE), O(AND), O(NOT), P(0), C(2), O(GE),
                   P(0), C(3), O(EQ), O(OR), O(AND), P(0), P(0), O(NE), O(OR));
    return d;
}

/* dmmul with an IDL Timeout (flag bit 3: a word after the language) and Retry "no". */
static grd_desc *timed(void) {
    grd_desc *d = dmmul();
    d->flags = GRD_FF_NO_RETRY | GRD_FF_TIMEOUT;
    d->timeout = 30;
    return d;
}

static grd_desc *empty(void) {
    grd_desc *d = new_desc("m", "f", "", GRD_LANG_CXX, 0, 0);
    return d;
}

static void write_file(const char *dir, const char *name, const uint8_t *buf, size_t len) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (f == NULL || fwrite(buf, 1, len, f) != len || fclose(f) != 0) {
        perror(path);
        exit(1);
    }
    printf("%s: %zu bytes\n", path, len);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: make_seeds DIR\n");
        return 2;
    }
    grd_desc *descs[] = {dmmul(), kitchen(), empty(), timed()};
    const char *names[] = {"dmmul.grds", "kitchen.grds", "empty.grds", "timeout.grds"};
    enum { N = sizeof descs / sizeof descs[0] };
    uint8_t *enc[N];
    size_t lens[N];
    for (int i = 0; i < N; i++) {
        grd_error err = {0, ""};
        if (grd_encode(descs[i], &enc[i], &lens[i], &err) != GRD_OK) {
            fprintf(stderr, "%s: %s\n", names[i], err.msg);
            return 1;
        }
        write_file(argv[1], names[i], enc[i], lens[i]);
    }
    uint8_t *bundle;
    size_t blen;
    grd_error err = {0, ""};
    if (grd_bundle_encode((const uint8_t *const *)enc, lens, N, &bundle, &blen, &err) != GRD_OK) {
        fprintf(stderr, "bundle: %s\n", err.msg);
        return 1;
    }
    write_file(argv[1], "module.gdesc", bundle, blen);
    free(bundle);
    for (int i = 0; i < N; i++) {
        free(enc[i]);
        grd_free(descs[i]);
    }
    return 0;
}
