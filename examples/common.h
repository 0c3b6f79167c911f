/* common.h: small helpers shared by the examples (timing, random matrices). */
#ifndef EXAMPLES_COMMON_H
#define EXAMPLES_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static inline double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Fills A with reproducible values in [-1, 1). */
static inline void random_fill(double *a, size_t n, unsigned long long seed) {
    for (size_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        a[i] = (double)(seed >> 11) / 9007199254740992.0 * 2.0 - 1.0;
    }
}

static inline int parse_size(const char *s, int lo, int hi, const char *what) {
    char *end;
    long v = strtol(s, &end, 10);
    if (*end || v < lo || v > hi) {
        fprintf(stderr, "%s must be an integer from %d to %d, not '%s'\n", what, lo, hi, s);
        exit(2);
    }
    return (int)v;
}

#endif
