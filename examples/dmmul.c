/* dmmul.c: the Ninf example: a matrix multiply moved to a server by changing one line.
 *
 *     dmmul(n, A, B, C);                       local
 *     grid_call("linalg/dmmul", n, A, B, C);   remote
 *
 * Usage: dmmul N   (GRIDRPC_SERVER=host:port names the server). */
#include <cblas.h>
#include <math.h>
#include <string.h>

#include <gridrpc.h>

#include "common.h"

int main(int argc, char **argv) {
    if (argc != 2 || strcmp(argv[1], "--help") == 0) {
        fprintf(argc == 2 ? stdout : stderr,
                "Usage: dmmul N\nMultiplies two N x N matrices on a GridRPC server "
                "and locally, and compares.\n");
        return argc == 2 ? 0 : 2;
    }
    int n = parse_size(argv[1], 1, 20000, "N");
    size_t nn = (size_t)n * n;
    double *A = malloc(nn * sizeof *A), *B = malloc(nn * sizeof *B);
    double *C = malloc(nn * sizeof *C), *L = malloc(nn * sizeof *L);
    if (!A || !B || !C || !L) {
        fprintf(stderr, "dmmul: out of memory for n = %d\n", n);
        return 1;
    }
    random_fill(A, nn, 1);
    random_fill(B, nn, 2);

    double t0 = now_seconds();
    if (grid_call("linalg/dmmul", n, A, B, C) != GRID_OK) {
        fprintf(stderr, "dmmul: remote call failed: %s\n", grid_last_error());
        return 1;
    }
    double remote = now_seconds() - t0;

    t0 = now_seconds();
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, A, n, B, n, 0.0, L, n);
    double local = now_seconds() - t0;

    double maxdiff = 0;
    for (size_t i = 0; i < nn; i++)
        maxdiff = fmax(maxdiff, fabs(C[i] - L[i]));
    int ok = maxdiff <= 1e-9 * n;
    printf("dmmul n=%d: remote %.3f s, local %.3f s (remote/local %.2fx), %.2f GFLOP/s remote, max |diff| "
           "%.2e %s\n",
           n, remote, local, remote / local, 2.0 * n * (double)n * n / remote / 1e9, maxdiff,
           ok ? "OK" : "MISMATCH");
    free(A);
    free(B);
    free(C);
    free(L);
    return ok ? 0 : 1;
}
