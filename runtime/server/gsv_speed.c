/* gsv_speed.c: the start-up speed estimate a server sends to the metaserver before any
 * of its calls has been measured. A naive double matrix product small enough to stay in
 * the L1/L2 cache is timed on one core for about 20 ms and the rate is multiplied by the
 * CPUs this process may use (gsv_cpus.c: affinity and cgroup quota included): roughly what compute-bound
 * numerical code reaches, enough to rank servers of different speeds until the metaserver learns real
 * per-function speeds from completed calls. */
#include <stdlib.h>

#include "gsv.h"

enum { N = 48 };                                  /* 3 x 18 KiB: in cache on any current CPU */
#define GSV_SPEED_NS 20000000LL                   /* measuring time */
#define GSV_SPEED_FLOPS (2.0 * N * (double)N * N) /* one product: n^3 multiply-adds */

/* C += A * B (row-major N x N), i-k-j order as naive scientific code writes it. */
static void product(const double *a, const double *b, double *c) {
    for (int i = 0; i < N; i++)
        for (int k = 0; k < N; k++) {
            double aik = a[i * N + k];
            for (int j = 0; j < N; j++)
                c[i * N + j] += aik * b[k * N + j];
        }
}

double gsv_speed_measure(double cpus) {
    double *m = malloc(3 * N * N * sizeof *m);
    if (!m) return 0;
    double *a = m, *b = m + N * N, *c = m + 2 * N * N;
    for (int i = 0; i < N * N; i++) {
        a[i] = 1.0 + (double)(i % 7) * 1e-3;
        b[i] = 1.0 - (double)(i % 5) * 1e-3;
        c[i] = 0;
    }
    product(a, b, c); /* warm the caches and the page tables */
    long long t0 = gr_now_ns(), t;
    unsigned long reps = 0;
    do {
        product(a, b, c);
        reps++;
        t = gr_now_ns();
    } while (t - t0 < GSV_SPEED_NS);
    /* The result is used, so the compiler cannot drop the products. */
    volatile double sink = c[N * N / 2];
    (void)sink;
    free(m);
    double seconds = (double)(t - t0) / 1e9;
    /* A cgroup quota may not throttle 20 ms of work: scale by the CPUs it leaves. */
    return seconds > 0 ? GSV_SPEED_FLOPS * (double)reps / seconds * (cpus > 0 ? cpus : 1) : 0;
}
