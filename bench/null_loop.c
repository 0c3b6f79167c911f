/* null_loop.c: the C baseline of bench/python_overhead.py: N calls of test/null_call
 * and N calls of test/echo_double (LEN doubles) through the C grid_call, timed.
 *
 * Built as a shared object, python_overhead.py loads it with ctypes and runs these
 * loops in the same process as the Python loops (same libgridrpc, same connection), so
 * the difference per call is the Python binding's own cost. Built as a program it
 * prints the same numbers:
 *
 *     cc -O2 -I include bench/null_loop.c -L build/.libs -Wl,-rpath,build/.libs -lgridrpc
 *     GRIDRPC_SERVER=127.0.0.1:7000 ./a.out [N] [LEN]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <gridrpc.h>

double gridrpc_bench_null(int n);
double gridrpc_bench_echo(int n, int len, const double *in, double *out);

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Seconds per call of N null calls; negative if a call failed. */
double gridrpc_bench_null(int n) {
    double t0 = now();
    for (int i = 0; i < n; i++)
        if (grid_call("test/null_call") != GRID_OK) return -1;
    return (now() - t0) / n;
}

/* Seconds per call of N echo_double calls of LEN elements; negative on failure. */
double gridrpc_bench_echo(int n, int len, const double *in, double *out) {
    double t0 = now();
    for (int i = 0; i < n; i++)
        if (grid_call("test/echo_double", len, in, out) != GRID_OK) return -1;
    return (now() - t0) / n;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 20000;
    int len = argc > 2 ? atoi(argv[2]) : 8;
    if (n <= 0 || len <= 0) {
        fprintf(stderr, "usage: %s [N] [LEN]\n", argv[0]);
        return 2;
    }
    double *in = calloc((size_t)len, sizeof *in), *out = calloc((size_t)len, sizeof *out);
    if (!in || !out) return 1;
    if (grid_call("test/null_call") != GRID_OK) { /* warm up: connect, fetch the descriptor */
        fprintf(stderr, "null_loop: %s\n", grid_last_error());
        return 1;
    }
    gridrpc_bench_echo(100, len, in, out);
    double t_null = gridrpc_bench_null(n), t_echo = gridrpc_bench_echo(n, len, in, out);
    if (t_null < 0 || t_echo < 0) {
        fprintf(stderr, "null_loop: %s\n", grid_last_error());
        return 1;
    }
    printf("test/null_call          %10.0f ns/call\n", t_null * 1e9);
    printf("test/echo_double (%4d) %10.0f ns/call\n", len, t_echo * 1e9);
    free(in);
    free(out);
    return 0;
}
