/* ep.c: the NAS Parallel Benchmarks' EP kernel behind stubs/ep.idl. A run of 2^m pairs
 * can be cut into ranges of pairs computed by separate calls (on separate servers) and
 * added up: each call jumps the generator straight to its first pair, as NPB's own
 * parallel versions do, so every range sees exactly the deviates of the whole run. */
#include <math.h>
#include <stdint.h>

#include "gridrpc_lib.h"

#define EP_A 1220703125u   /* 5^13, NPB's multiplier */
#define EP_SEED 271828183u /* NPB's seed */
#define EP_MASK46 ((UINT64_C(1) << 46) - 1)
#define EP_R46 (1.0 / 70368744177664.0) /* 2^-46 */
#define EP_NQ 10

/* NPB's randlc computes a * x mod 2^46 exactly in doubles by splitting into 23-bit
 * halves; the low 64 bits of an unsigned product hold the same result, so this gives
 * bit-for-bit NPB's sequence at a fraction of the cost. */
static uint64_t mul46(uint64_t a, uint64_t b) {
    return (a * b) & EP_MASK46;
}

/* a^e mod 2^46 by repeated squaring. */
static uint64_t pow46(uint64_t a, uint64_t e) {
    uint64_t r = 1;
    while (e != 0) {
        if (e & 1) r = mul46(r, a);
        a = mul46(a, a);
        e >>= 1;
    }
    return r;
}

/* count 0 runs to the last pair (from first 0: the whole run). A range outside the
 * run, or a bad m, adds nothing: the sums come back zero. */
void gridrpc_lib_ep(int m, int first, int count, double *sx, double *sy, double *q) {
    double lsx = 0.0, lsy = 0.0, lq[EP_NQ] = {0};
    int64_t total, end, k;
    uint64_t x;
    int i;

    if (m >= 0 && m <= 62 && first >= 0 && count >= 0) {
        total = INT64_C(1) << m;
        end = count == 0 ? total : (int64_t)first + count;
        if (end > total) end = total;
        /* Pair p uses the generator's values 2p+1 and 2p+2 after the seed. */
        x = mul46(EP_SEED, pow46(EP_A, 2 * (uint64_t)first));
        for (k = first; k < end; k++) {
            double x1, x2, t1, t2, t3, t4, l;
            x = mul46(x, EP_A);
            x1 = 2.0 * ((double)x * EP_R46) - 1.0;
            x = mul46(x, EP_A);
            x2 = 2.0 * ((double)x * EP_R46) - 1.0;
            t1 = x1 * x1 + x2 * x2;
            /* t1 is never 0: x stays odd, so neither deviate is exactly 1/2. */
            if (t1 <= 1.0) {
                t2 = sqrt(-2.0 * log(t1) / t1);
                t3 = x1 * t2;
                t4 = x2 * t2;
                l = fmax(fabs(t3), fabs(t4));
                /* NPB assumes l < 10: a deviate beyond 10 has odds near 1e-23 per
                 * pair, but an index past q must not be written all the same. */
                if (l < EP_NQ) lq[(int)l] += 1.0;
                lsx += t3;
                lsy += t4;
            }
        }
    }
    *sx = lsx;
    *sy = lsy;
    for (i = 0; i < EP_NQ; i++)
        q[i] = lq[i];
}
