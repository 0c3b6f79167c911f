/* ep.c: the NAS EP benchmark on a server: 2^M pairs of random numbers split into PARTS
 * asynchronous calls in flight together (each a range of pairs), the partial sums added
 * here and checked against the benchmark's verification values. Usage: ep M [PARTS]  (M = 24 is class S). */
#include <math.h>
#include <string.h>

#include <gridrpc.h>

#include "../stubs/ep.h"
#include "common.h"

int main(int argc, char **argv) {
    if (argc < 2 || argc > 3 || strcmp(argv[1], "--help") == 0) {
        fprintf(argc >= 2 ? stdout : stderr,
                "Usage: ep M [PARTS]\nRuns NAS EP for 2^M pairs on a GridRPC server in PARTS calls.\n");
        return argc >= 2 ? 0 : 2;
    }
    int m = parse_size(argv[1], 1, 40, "M");
    int parts = argc == 3 ? parse_size(argv[2], 1, 4096, "PARTS") : 1;
    long long total = 1LL << m;
    if (total / parts > 0x7fffffffLL) {
        fprintf(stderr, "ep: use more PARTS: each call covers at most 2^31 - 1 pairs\n");
        return 2;
    }
    double sx = 0, sy = 0, q[10] = {0};
    /* All parts in flight at once (asynchronous calls), as Ninf's EP runs were split
     * across servers; the sums are added when every part is back. */
    double *psx = calloc((size_t)parts, sizeof *psx), *psy = calloc((size_t)parts, sizeof *psy);
    double(*pq)[10] = calloc((size_t)parts, sizeof *pq);
    int *ids = calloc((size_t)parts, sizeof *ids);
    if (!psx || !psy || !pq || !ids) {
        fprintf(stderr, "ep: out of memory\n");
        return 1;
    }
    double t0 = now_seconds();
    for (int p = 0; p < parts; p++) {
        long long first = total * p / parts, last = total * (p + 1) / parts;
        ids[p] = grid_call_async("nas/ep", m, (int)first, (int)(last - first), &psx[p], &psy[p], pq[p]);
        if (ids[p] <= 0) {
            fprintf(stderr, "ep: remote call %d could not start: %s\n", p, grid_last_error());
            return 1;
        }
    }
    if (grid_wait_all() != GRID_OK) {
        fprintf(stderr, "ep: a remote call failed: %s\n", grid_last_error());
        return 1;
    }
    for (int p = 0; p < parts; p++) {
        sx += psx[p];
        sy += psy[p];
        for (int k = 0; k < 10; k++)
            q[k] += pq[p][k];
    }
    free(psx);
    free(psy);
    free(pq);
    free(ids);
    double t = now_seconds() - t0;
    int v = gridrpc_ep_verify(m, sx, sy);
    double gauss = 0;
    for (int k = 0; k < 10; k++)
        gauss += q[k];
    printf("ep m=%d in %d call%s: %.3f s, %.2f Mops, sx %.15e sy %.15e, %.0f Gaussian pairs: %s\n", m, parts,
           parts == 1 ? "" : "s", t, (double)total * 2 / t / 1e6, sx, sy, gauss,
           v == 1   ? "VERIFIED"
           : v == 0 ? "FAILED verification"
                    : "no reference for this M");
    return v == 0 ? 1 : 0;
}
