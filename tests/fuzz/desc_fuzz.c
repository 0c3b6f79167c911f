/* desc_fuzz.c: libFuzzer target for the descriptor decoder, bundle splitter, dumper,
 * encoder and evaluator, which all face bytes from an untrusted peer.
 *
 * Besides the raw input it decodes a copy whose header is repaired (body_length and
 * hash recomputed): a mutated body almost never matches its hash, and without the
 * repair the fuzzer would spend its time on the hash check instead of the parser.
 * Whatever decodes must also validate, re-encode to the same bytes and dump the same,
 * and every program and extent is evaluated; a broken invariant aborts.
 */
#include "grd_desc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HEADER_BYTES 20u

static void check(int cond, const char *what) {
    if (!cond) {
        fprintf(stderr, "desc_fuzz: invariant broken: %s\n", what);
        abort();
    }
}

static void put32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* Evaluates every extent and the cost of D for one scalar vector. */
static void evaluate(const grd_desc *d, const int64_t *scalars) {
    for (uint32_t i = 0; i < d->nparams; i++) {
        grd_extent ext;
        grd_error err = {0, ""};
        int rc = grd_extent_of(d, i, scalars, (uint64_t)1 << 30, &ext, &err);
        check(rc != GRD_OK || ext.bytes <= ((uint64_t)1 << 30), "extent within max_bytes");
        check(rc != GRD_OK || (ext.sent <= ext.elems && ext.sent_bytes <= ext.bytes), "sent <= whole");
        check(rc == GRD_OK || err.msg[0] != '\0', "error has a message");
        rc = grd_extent_of(d, i, scalars, 0, &ext, &err);
        check(rc == GRD_OK || err.msg[0] != '\0', "error has a message");
        for (uint32_t k = 0; rc == GRD_OK && k < ext.rank; k++) {
            int64_t r;
            check(ext.start[k] >= 0 && ext.start[k] <= ext.end[k] && ext.end[k] <= ext.size[k] &&
                      ext.step[k] >= 1 && ext.count[k] <= (uint64_t)ext.size[k],
                  "extent dimension in range");
            const grd_dim *dim = &d->params[i].dims[k];
            check(grd_eval(&dim->size, scalars, d->nparams, &r, &err) == GRD_OK && r == ext.size[k],
                  "size evaluates as in the extent");
        }
    }
    double flops;
    grd_error err = {0, ""};
    if (grd_cost(d, scalars, &flops, &err) == GRD_OK) check(flops >= 0, "cost non-negative");
}

static void exercise(const grd_desc *d, const uint8_t *data, size_t size) {
    int64_t v[GRD_MAX_PARAMS];
    static const int64_t special[] = {0, 1, -1, 2, 3, 7, 1000, INT64_MAX, INT64_MIN, 1 << 20};
    for (int round = 0; round < 4; round++) {
        for (uint32_t i = 0; i < GRD_MAX_PARAMS; i++) {
            uint8_t byte = size ? data[(i * 7u + (uint32_t)round * 13u) % size] : 0;
            switch (round) {
            case 0: v[i] = 0; break;
            case 1: v[i] = byte % 17; break;
            case 2: v[i] = special[byte % (sizeof special / sizeof special[0])]; break;
            default: v[i] = (int64_t)byte - 128; break;
            }
        }
        evaluate(d, v);
    }
    evaluate(d, NULL);
}

static void try_descriptor(const uint8_t *data, size_t size) {
    grd_desc *d;
    grd_error err = {0, ""};
    if (grd_decode(data, size, &d, &err) != GRD_OK) {
        check(d == NULL, "no descriptor on error");
        check(err.code != GRD_OK && err.msg[0] != '\0', "error has a code and message");
        return;
    }
    check(grd_validate(d, &err) == GRD_OK, "decoded descriptor validates");
    char *text = grd_dump(d);
    check(text != NULL, "dump");

    uint8_t *enc;
    size_t enclen;
    uint64_t hash = d->hash;
    check(grd_encode(d, &enc, &enclen, &err) == GRD_OK, "decoded descriptor encodes");
    check(d->hash == hash, "re-encoding keeps the hash");
    check(enclen == size && memcmp(enc, data, size) == 0, "encoding is canonical");
    grd_desc *d2;
    check(grd_decode(enc, enclen, &d2, &err) == GRD_OK, "re-encoding decodes");
    char *text2 = grd_dump(d2);
    check(text2 != NULL && strcmp(text, text2) == 0, "re-encoding dumps the same");
    free(text2);
    grd_free(d2);
    free(enc);
    free(text);

    exercise(d, data, size);
    grd_free(d);
}

/* Decodes DATA as is, then with its header made consistent with its body. */
static void try_both(const uint8_t *data, size_t size) {
    try_descriptor(data, size);
    if (size < HEADER_BYTES || size > GRD_MAX_ENCODED) return;
    uint8_t *copy = malloc(size);
    if (copy == NULL) return;
    memcpy(copy, data, size);
    size_t body = (size - HEADER_BYTES) & ~(size_t)3;
    put32(copy, GRD_MAGIC);
    put32(copy + 4, GRD_FORMAT_VERSION);
    uint64_t h = grd_fnv1a64(copy + HEADER_BYTES, body);
    put32(copy + 8, (uint32_t)(h >> 32));
    put32(copy + 12, (uint32_t)h);
    put32(copy + 16, (uint32_t)body);
    try_descriptor(copy, HEADER_BYTES + body);
    free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 2 * (size_t)GRD_MAX_ENCODED) return 0;
    try_both(data, size);

    uint32_t n;
    size_t *offs, *lens;
    grd_error err = {0, ""};
    if (grd_bundle_split(data, size, &n, &offs, &lens, &err) == GRD_OK) {
        for (uint32_t i = 0; i < n; i++) {
            check(offs[i] <= size && lens[i] <= size - offs[i], "bundle element inside input");
            try_both(data + offs[i], lens[i]);
        }
        free(offs);
        free(lens);
    } else {
        check(n == 0 && offs == NULL && lens == NULL, "no split on error");
    }
    return 0;
}
