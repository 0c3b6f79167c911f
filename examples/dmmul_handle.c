/* dmmul_handle.c: remote data handles in a few lines. B is put on the server once and
 * multiplied by K different matrices A there; each call sends A only. The same K
 * products are then computed with B sent every time, and both the results and the bytes
 * the client sent are compared.
 *
 *     grid_data_np *hb;
 *     grid_data_put_np(&hb, NULL, GRID_TYPE_DOUBLE, n * n, B);   // B goes once
 *     for (k = 0; k < K; k++)
 *         grid_call("linalg/dmmul", n, A[k], hb, C[k]);            // the handle where B goes
 *     grid_data_free_np(hb);
 *
 * Usage: dmmul_handle N K   (GRIDRPC_SERVER=host:port names the server). */
#include <math.h>
#include <string.h>

#include <gridrpc.h>

#include "common.h"

static unsigned long long bytes_sent(void) {
    grid_stats_np s;
    grid_get_stats_np(&s);
    return s.bytes_sent;
}

int main(int argc, char **argv) {
    if (argc != 3 || strcmp(argv[1], "--help") == 0) {
        fprintf(argc == 2 ? stdout : stderr,
                "Usage: dmmul_handle N K\nMultiplies K N x N matrices by one matrix B kept on the server "
                "(a remote data handle), then with B sent each time, and compares.\n");
        return argc == 2 ? 0 : 2;
    }
    int n = parse_size(argv[1], 1, 5000, "N"), k = parse_size(argv[2], 1, 10000, "K");
    size_t nn = (size_t)n * n;
    double *A = malloc(nn * sizeof *A), *B = malloc(nn * sizeof *B);
    double *C = malloc(nn * sizeof *C), *L = malloc(nn * sizeof *L);
    if (!A || !B || !C || !L) {
        fprintf(stderr, "dmmul_handle: out of memory for n = %d\n", n);
        return 1;
    }
    random_fill(B, nn, 2);

    /* B put once: NULL is the default server (under a metaserver, the first call's). */
    double t0 = now_seconds();
    unsigned long long s0 = bytes_sent();
    grid_data_np *hb;
    if (grid_data_put_np(&hb, NULL, GRID_TYPE_DOUBLE, nn, B) != GRID_OK) {
        fprintf(stderr, "dmmul_handle: grid_data_put_np: %s\n", grid_last_error());
        return 1;
    }
    for (int i = 0; i < k; i++) {
        random_fill(A, nn, 100 + (unsigned long long)i);
        if (grid_call("linalg/dmmul", n, A, hb, C) != GRID_OK) {
            fprintf(stderr, "dmmul_handle: call %d with the handle: %s\n", i + 1, grid_last_error());
            return 1;
        }
    }
    double t_handle = now_seconds() - t0;
    unsigned long long b_handle = bytes_sent() - s0;
    grid_data_free_np(hb);

    /* The same products with B sent every time; the last C of each way must agree. */
    t0 = now_seconds();
    s0 = bytes_sent();
    for (int i = 0; i < k; i++) {
        random_fill(A, nn, 100 + (unsigned long long)i);
        if (grid_call("linalg/dmmul", n, A, B, L) != GRID_OK) {
            fprintf(stderr, "dmmul_handle: plain call %d: %s\n", i + 1, grid_last_error());
            return 1;
        }
    }
    double t_plain = now_seconds() - t0;
    unsigned long long b_plain = bytes_sent() - s0;

    /* To rounding: the server's BLAS may split one product differently from call to call. */
    double maxdiff = 0, scale = 1;
    for (size_t i = 0; i < nn; i++) {
        maxdiff = fmax(maxdiff, fabs(C[i] - L[i]));
        scale = fmax(scale, fabs(L[i]));
    }
    int ok = maxdiff <= 1e-12 * scale;
    printf(
        "dmmul_handle n=%d k=%d: B as a handle %.3f s, %.1f MB sent; B sent each time %.3f s, %.1f MB sent; "
        "%s\n",
        n, k, t_handle, (double)b_handle / 1e6, t_plain, (double)b_plain / 1e6, ok ? "OK" : "MISMATCH");
    free(A);
    free(B);
    free(C);
    free(L);
    return ok ? 0 : 1;
}
