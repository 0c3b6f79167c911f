/* fuzz_main.c: a standalone driver for libFuzzer targets, for compilers without
 * -fsanitize=fuzzer (gcc). It replays a corpus, then a fixed, reproducible number of
 * mutations of it (some of them with the words of the target's dictionary), so `make
 * check` fuzzes a little on every build. Crashes are found by the sanitizers, which
 * abort the process; reaching the end means none occurred.
 *
 *     fuzz-TARGET [FILE_OR_DIR...]    (FUZZ_ITERATIONS mutations, default 20000 or
 *                                      the target's FUZZ_DEFAULT_ITERATIONS)
 *
 * Without arguments (as `make check` runs it) the corpus is $FUZZ_CORPUS, or else
 * $top_srcdir/tests/fuzz/corpus/TARGET (top_srcdir defaults to "."); the dictionary is
 * $FUZZ_DICT, or else $top_srcdir/tests/fuzz/TARGET.dict when there is one. TARGET is
 * the FUZZ_TARGET the program was built with (default "desc").
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#ifndef FUZZ_TARGET
#define FUZZ_TARGET "desc"
#endif
#ifndef FUZZ_DEFAULT_ITERATIONS
#define FUZZ_DEFAULT_ITERATIONS 20000
#endif

#define FUZZ_MAX_INPUT ((size_t)1 << 20)
#define FUZZ_MAX_WORD 128

typedef struct input {
    uint8_t *data;
    size_t size;
} input;

typedef struct corpus {
    input *v;
    size_t n, cap;
} corpus;

static void *xrealloc(void *p, size_t n) {
    p = realloc(p, n ? n : 1);
    if (p == NULL) {
        fprintf(stderr, "fuzz: out of memory\n");
        exit(1);
    }
    return p;
}

static void add_file(corpus *c, const char *path) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        perror(path);
        return;
    }
    uint8_t *buf = xrealloc(NULL, FUZZ_MAX_INPUT);
    size_t n = fread(buf, 1, FUZZ_MAX_INPUT, f);
    fclose(f);
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 16;
        c->v = xrealloc(c->v, c->cap * sizeof *c->v);
    }
    c->v[c->n].data = xrealloc(buf, n);
    c->v[c->n].size = n;
    c->n++;
}

static int cmp_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Adds PATH, or the regular files directly in it, in name order so runs repeat. */
static void add_path(corpus *c, const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) {
        perror(path);
        return;
    }
    if (!S_ISDIR(st.st_mode)) {
        add_file(c, path);
        return;
    }
    DIR *dir = opendir(path);
    if (dir == NULL) {
        perror(path);
        return;
    }
    char **names = NULL;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
        if (e->d_name[0] == '.') continue;
        names = xrealloc(names, (n + 1) * sizeof *names);
        size_t len = strlen(path) + strlen(e->d_name) + 2;
        names[n] = xrealloc(NULL, len);
        snprintf(names[n], len, "%s/%s", path, e->d_name);
        n++;
    }
    closedir(dir);
    qsort(names, n, sizeof *names, cmp_names);
    for (size_t i = 0; i < n; i++) {
        if (stat(names[i], &st) == 0 && S_ISREG(st.st_mode)) add_file(c, names[i]);
        free(names[i]);
    }
    free(names);
}

/* The dictionary: libFuzzer's format, one word a line, name="value" or "value", with
 * \\, \" and \xNN escapes; '#' lines are comments. */
typedef struct word {
    uint8_t b[FUZZ_MAX_WORD];
    size_t n;
} word;

static word *dict;
static size_t ndict;

static int hexval(int c) {
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

static void load_dict(const char *path, int required) {
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        if (required) perror(path);
        return;
    }
    char line[1024];
    int lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        char *p = line + strspn(line, " \t");
        if (*p == '#' || *p == '\n' || *p == '\0') continue;
        char *q = strchr(p, '"');
        word w = {{0}, 0};
        int ok = q != NULL;
        for (q = q ? q + 1 : NULL; ok && *q != '"'; q++) {
            int c = (unsigned char)*q;
            if (c == '\0' || c == '\n' || w.n == FUZZ_MAX_WORD) {
                ok = 0;
                break;
            }
            if (c == '\\') {
                if (q[1] == 'x' && hexval(q[2]) >= 0 && hexval(q[3]) >= 0) {
                    c = hexval(q[2]) * 16 + hexval(q[3]);
                    q += 3;
                } else if (q[1] == '\\' || q[1] == '"') {
                    c = (unsigned char)*++q;
                } else {
                    ok = 0;
                    break;
                }
            }
            w.b[w.n++] = (uint8_t)c;
        }
        if (!ok || w.n == 0) {
            fprintf(stderr, "%s:%d: not a dictionary word: write \"value\" or name=\"value\"\n", path,
                    lineno);
            continue;
        }
        dict = xrealloc(dict, (ndict + 1) * sizeof *dict);
        dict[ndict++] = w;
    }
    fclose(f);
}

static uint64_t next(uint64_t *s) {
    /* xorshift64: fixed seed, so every run tries the same inputs. */
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

/* Applies one random edit to BUF (SIZE bytes used, room for FUZZ_MAX_INPUT). */
static size_t mutate(uint8_t *buf, size_t size, uint64_t *rng) {
    static const uint32_t interesting[] = {0,    1,          2,          3,          4,          8,
                                           9,    16,         32,         64,         255,        256,
                                           4096, 0x7fffffff, 0x80000000, 0xfffffff0, 0xffffffff, 0xfffffffe};
    uint64_t r = next(rng);
    size_t pos = size ? (size_t)(next(rng) % size) : 0;
    if (ndict > 0 && r % 8 >= 6) { /* a dictionary word, inserted or written over */
        const word *w = &dict[next(rng) % ndict];
        if (r % 8 == 6) {
            if (size + w->n > FUZZ_MAX_INPUT) return size;
            memmove(buf + pos + w->n, buf + pos, size - pos);
            size += w->n;
        } else if (pos + w->n > size) {
            return size;
        }
        memcpy(buf + pos, w->b, w->n);
        return size;
    }
    switch (r % 6) {
    case 0: /* flip a bit */
        if (size) buf[pos] ^= (uint8_t)(1u << (next(rng) % 8));
        return size;
    case 1: /* set a byte */
        if (size) buf[pos] = (uint8_t)next(rng);
        return size;
    case 2: /* truncate */ return size ? (size_t)(next(rng) % size) : 0;
    case 3:   /* overwrite an aligned word with an interesting value */
    case 4: { /* or insert one */
        uint32_t v = interesting[next(rng) % (sizeof interesting / sizeof interesting[0])];
        pos &= ~(size_t)3;
        if (r % 6 == 4) {
            if (size + 4 > FUZZ_MAX_INPUT) return size;
            memmove(buf + pos + 4, buf + pos, size - pos);
            size += 4;
        } else if (pos + 4 > size) {
            return size;
        }
        buf[pos] = (uint8_t)(v >> 24);
        buf[pos + 1] = (uint8_t)(v >> 16);
        buf[pos + 2] = (uint8_t)(v >> 8);
        buf[pos + 3] = (uint8_t)v;
        return size;
    }
    default: /* delete a word */
        if (size >= 4) {
            pos &= ~(size_t)3;
            if (pos + 4 > size) pos = size - 4;
            memmove(buf + pos, buf + pos + 4, size - pos - 4);
            size -= 4;
        }
        return size;
    }
}

int main(int argc, char **argv) {
    corpus c = {NULL, 0, 0};
    for (int i = 1; i < argc; i++)
        add_path(&c, argv[i]);
    if (argc < 2) {
        const char *dir = getenv("FUZZ_CORPUS");
        char fallback[4096];
        if (dir == NULL || *dir == '\0') {
            const char *top = getenv("top_srcdir");
            snprintf(fallback, sizeof fallback, "%s/tests/fuzz/corpus/" FUZZ_TARGET,
                     top != NULL && *top != '\0' ? top : ".");
            dir = fallback;
        }
        add_path(&c, dir);
    }
    if (c.n == 0) {
        fprintf(stderr, "fuzz: no corpus inputs found\n");
        return 1;
    }

    const char *dpath = getenv("FUZZ_DICT");
    if (dpath != NULL && *dpath != '\0') {
        load_dict(dpath, 1);
    } else {
        const char *top = getenv("top_srcdir");
        char fallback[4096];
        snprintf(fallback, sizeof fallback, "%s/tests/fuzz/" FUZZ_TARGET ".dict",
                 top != NULL && *top != '\0' ? top : ".");
        load_dict(fallback, 0);
    }

    unsigned long iterations = FUZZ_DEFAULT_ITERATIONS;
    const char *env = getenv("FUZZ_ITERATIONS");
    if (env != NULL && *env != '\0') iterations = strtoul(env, NULL, 10);

    size_t runs = 0;
    for (size_t i = 0; i < c.n; i++, runs++)
        LLVMFuzzerTestOneInput(c.v[i].data, c.v[i].size);

    uint8_t *buf = xrealloc(NULL, FUZZ_MAX_INPUT);
    uint64_t rng = 0x9e3779b97f4a7c15ull;
    for (unsigned long it = 0; c.n > 0 && it < iterations; it++, runs++) {
        const input *in = &c.v[it % c.n];
        memcpy(buf, in->data, in->size);
        size_t size = in->size;
        int edits = 1 + (int)(next(&rng) % 4);
        for (int k = 0; k < edits; k++)
            size = mutate(buf, size, &rng);
        /* Exact-size copy, so reading past the input trips the address sanitizer. */
        uint8_t *exact = xrealloc(NULL, size);
        memcpy(exact, buf, size);
        LLVMFuzzerTestOneInput(exact, size);
        free(exact);
    }
    free(buf);
    free(dict);
    for (size_t i = 0; i < c.n; i++)
        free(c.v[i].data);
    free(c.v);
    printf("fuzz: %s: %zu inputs (%zu dictionary words), 0 crashes\n", FUZZ_TARGET, runs, ndict);
    return 0;
}
