/* linpack.c: the Ninf Linpack experiment: solve A x = b on a server (LU factor and
 * solve in one call) and locally, check the residual as Linpack does, report Mflops.
 * Usage: linpack N   (GRIDRPC_SERVER=host:port names the server). */
#include <float.h>
#include <lapacke.h>
#include <math.h>
#include <string.h>

#include <gridrpc.h>

#include "common.h"

/* Linpack's normalised residual ||A x - b|| / (n ||A|| ||x|| eps). */
static double residual(int n, const double *A, const double *x, const double *b) {
    double rmax = 0, amax = 0, xmax = 0;
    for (int i = 0; i < n; i++) {
        double r = -b[i];
        for (int j = 0; j < n; j++) {
            r += A[(size_t)i * n + j] * x[j];
            amax = fmax(amax, fabs(A[(size_t)i * n + j]));
        }
        rmax = fmax(rmax, fabs(r));
        xmax = fmax(xmax, fabs(x[i]));
    }
    return rmax / (n * amax * xmax * DBL_EPSILON);
}

int main(int argc, char **argv) {
    if (argc != 2 || strcmp(argv[1], "--help") == 0) {
        fprintf(argc == 2 ? stdout : stderr,
                "Usage: linpack N\nSolves an N x N system on a GridRPC server and "
                "locally, and checks both.\n");
        return argc == 2 ? 0 : 2;
    }
    int n = parse_size(argv[1], 1, 20000, "N");
    size_t nn = (size_t)n * n;
    double *A = malloc(nn * sizeof *A), *A1 = malloc(nn * sizeof *A1), *A2 = malloc(nn * sizeof *A2);
    double *b = malloc(n * sizeof *b), *x1 = malloc(n * sizeof *x1), *x2 = malloc(n * sizeof *x2);
    lapack_int *ipiv = malloc(n * sizeof *ipiv);
    if (!A || !A1 || !A2 || !b || !x1 || !x2 || !ipiv) {
        fprintf(stderr, "linpack: out of memory for n = %d\n", n);
        return 1;
    }
    random_fill(A, nn, 3);
    random_fill(b, (size_t)n, 4);
    memcpy(A1, A, nn * sizeof *A);
    memcpy(A2, A, nn * sizeof *A);
    memcpy(x1, b, n * sizeof *b);
    memcpy(x2, b, n * sizeof *b);
    double flops = 2.0 / 3.0 * n * (double)n * n + 2.0 * n * (double)n;

    int info = -1;
    double t0 = now_seconds();
    if (grid_call("linalg/linpack", n, A1, x1, &info) != GRID_OK) {
        fprintf(stderr, "linpack: remote call failed: %s\n", grid_last_error());
        return 1;
    }
    double remote = now_seconds() - t0;

    t0 = now_seconds();
    int linfo = LAPACKE_dgesv(LAPACK_ROW_MAJOR, n, 1, A2, n, ipiv, x2, 1);
    double local = now_seconds() - t0;

    double r1 = residual(n, A, x1, b), r2 = residual(n, A, x2, b);
    int ok = info == 0 && linfo == 0 && r1 < 100 && r2 < 100;
    printf("linpack n=%d: remote %.1f Mflops (%.3f s), local %.1f Mflops (%.3f s), remote/local %.2fx; "
           "residual remote %.2f local %.2f %s\n",
           n, flops / remote / 1e6, remote, flops / local / 1e6, local, (flops / remote) / (flops / local),
           r1, r2, ok ? "OK" : "FAILED");
    free(A);
    free(A1);
    free(A2);
    free(b);
    free(x1);
    free(x2);
    free(ipiv);
    return ok ? 0 : 1;
}
