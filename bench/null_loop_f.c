/* null_loop_f.c: the C side of bench/fortran_overhead.f90: N calls of test/null_call
 * and N calls of test/echo_double through the C API, timed in the same process as the
 * Fortran loops, so the difference is the Fortran binding's own cost per call. */
#include <stdlib.h>
#include <time.h>

#include <gridrpc.h>

double gridrpc_bench_c_null(int n);
double gridrpc_bench_c_echo(int n, int len, const double *in, double *out);

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Seconds per call of N null calls; a negative value if a call failed. */
double gridrpc_bench_c_null(int n) {
    double t0 = now();
    for (int i = 0; i < n; i++)
        if (grid_call("test/null_call") != GRID_OK) return -1;
    return (now() - t0) / n;
}

/* Seconds per call of N echo_double calls of LEN elements. */
double gridrpc_bench_c_echo(int n, int len, const double *in, double *out) {
    double t0 = now();
    for (int i = 0; i < n; i++)
        if (grid_call("test/echo_double", len, in, out) != GRID_OK) return -1;
    return (now() - t0) / n;
}
