/* txn_graph_test.c: a transaction's graph and data movement without servers
 * (grc_txn_graph.c, grc_txn_plan.c): byte ranges of whole, sub-range and strided
 * arguments, RAW/WAR/WAW from overlapping ranges, inputs assembled from earlier outputs
 * element by element, outputs landing only where they write, and which outputs stay on
 * the servers. Prints TAP. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grc_txn.h"
#include "tap.h"

/* A 1-D extent of N elements, sending [START, END) by STEP. */
static grd_extent ext1(int64_t n, int64_t start, int64_t end, int64_t step) {
    grd_extent x;
    memset(&x, 0, sizeof x);
    x.rank = 1;
    x.size[0] = n;
    x.start[0] = start;
    x.end[0] = end;
    x.step[0] = step;
    x.count[0] = end > start ? (uint64_t)((end - start + step - 1) / step) : 0;
    x.elems = (uint64_t)n;
    x.sent = x.count[0];
    x.bytes = (uint64_t)n * sizeof(double);
    x.sent_bytes = x.sent * sizeof(double);
    x.whole = start == 0 && end == n && step == 1;
    return x;
}

static grd_desc desc1; /* one double array parameter: the plan looks at its type */

static grc_txn_arg arg(double *p, grd_extent x, int reads, int writes) {
    grc_txn_arg a;
    memset(&a, 0, sizeof a);
    a.user = (char *)p;
    a.es = sizeof(double);
    a.ext = x;
    a.bytes = x.bytes;
    a.reads = reads;
    a.writes = writes;
    a.src = a.src_arg = -1;
    grc_txn_arg_range(&a);
    return a;
}

static grc_txn_call call(int index, grc_txn_arg *args, uint32_t n) {
    grc_txn_call c;
    memset(&c, 0, sizeof c);
    c.index = index;
    c.desc = &desc1;
    c.arg = args;
    c.narg = n;
    return c;
}

int main(void) {
    static grd_param par = {0};
    par.type = GRD_DOUBLE;
    par.mode = GRD_INOUT;
    par.rank = 1;
    desc1.nparams = 1;
    desc1.params = &par;
    double y[100];

    /* ranges */
    grc_txn_arg whole = arg(y, ext1(100, 0, 100, 1), 1, 1);
    grc_txn_arg sub = arg(y, ext1(100, 10, 20, 1), 1, 1);
    grc_txn_arg strided = arg(y, ext1(100, 5, 100, 10), 1, 1);
    result(whole.lo == (uintptr_t)y && whole.hi == (uintptr_t)(y + 100),
           "a whole array covers all its bytes");
    result(sub.lo == (uintptr_t)(y + 10) && sub.hi == (uintptr_t)(y + 20),
           "a sub-range covers [10, 20) only");
    result(strided.lo == (uintptr_t)(y + 5) && strided.hi == (uintptr_t)(y + 96),
           "a strided range covers its first to its last element (5 .. 95)");

    /* dependencies */
    grc_txn_arg w1[] = {arg(y, ext1(100, 0, 50, 1), 0, 1)};   /* writes y[0,50) */
    grc_txn_arg r2[] = {arg(y, ext1(100, 49, 60, 1), 1, 0)};  /* reads y[49,60): overlaps by one */
    grc_txn_arg r3[] = {arg(y, ext1(100, 50, 100, 1), 1, 0)}; /* reads y[50,100): touches, no overlap */
    grc_txn_arg w4[] = {arg(y, ext1(100, 55, 56, 1), 0, 1)};  /* writes y[55] */
    grc_txn_call c1 = call(0, w1, 1), c2 = call(1, r2, 1), c3 = call(2, r3, 1), c4 = call(3, w4, 1);
    result(grc_txn_depends(&c1, &c2) == GRC_TXN_RAW, "one overlapping element is a read after write");
    result(grc_txn_depends(&c1, &c3) == 0, "adjacent ranges are independent");
    result(grc_txn_depends(&c2, &c4) == GRC_TXN_WAR, "a later write over an earlier read is WAR");
    result(grc_txn_depends(&c1, &c4) == 0 && grc_txn_depends(&c3, &c4) == GRC_TXN_WAR,
           "y[55]: WAR on the reader of [50,100) only");
    grc_txn_arg w5[] = {arg(y, ext1(100, 40, 45, 1), 0, 1)};
    grc_txn_call c5 = call(4, w5, 1);
    result(grc_txn_depends(&c1, &c5) == GRC_TXN_WAW, "two writes of y[40,45) are WAW");

    grc_txn x = {NULL, 0, 0};
    grc_txn_call v[5] = {c1, c2, c3, c4, c5};
    x.call = v;
    x.ncalls = 5;
    grc_txn_stats st;
    memset(&st, 0, sizeof st);
    gr_err e;
    int grc = grc_txn_graph(&x, &st, &e);
    result(grc == GRID_OK && st.raw == 1 && st.war == 2 && st.waw == 1,
           "the graph counts 1 RAW, 2 WAR, 1 WAW (got %ld %ld %ld)", st.raw, st.war, st.waw);
    result(v[1].ndeps == 1 && v[1].deps[0] == 0 && v[2].ndeps == 0 && v[3].ndeps == 0 && v[4].ndeps == 0,
           "only RAW makes a call wait (staging takes care of WAR and WAW)");
    for (int k = 0; k < 5; k++)
        free(v[k].deps);

    /* assembly: a strided writer's elements only */
    double mem[20], out[20], in[20];
    for (int i = 0; i < 20; i++)
        mem[i] = i;
    grc_txn_arg sw = arg(mem, ext1(20, 1, 20, 4), 0, 1); /* writes 1, 5, 9, 13, 17 */
    for (int i = 0; i < 20; i++)
        out[i] = -1 - i;
    sw.stage = (char *)out;
    grc_txn_arg rd = arg(mem + 4, ext1(10, 0, 10, 1), 1, 0); /* reads mem[4,14) */
    memcpy(in, mem + 4, 10 * sizeof(double));
    rd.stage = (char *)in;
    grc_txn_overlay(&sw, &rd);
    int good = 1;
    for (int i = 0; i < 10; i++) {
        int el = i + 4;
        double want = (el - 1) % 4 == 0 ? -1 - el : el;
        good = good && in[i] == want;
    }
    result(good, "an input gets the strided writer's elements 5, 9, 13 and keeps the rest");
    grc_txn_land(&sw);
    good = 1;
    for (int i = 0; i < 20; i++)
        good = good && mem[i] == ((i - 1) % 4 == 0 && i >= 1 ? -1 - i : i);
    result(good, "an output lands only on the elements it writes");

    /* which outputs stay on the servers: y updated in place three times, then read in part */
    double z[10];
    grc_txn_arg p1[] = {arg(z, ext1(10, 0, 10, 1), 1, 1)};
    grc_txn_arg p2[] = {arg(z, ext1(10, 0, 10, 1), 1, 1)};
    grc_txn_arg p3[] = {arg(z, ext1(10, 0, 10, 1), 1, 1)};
    grc_txn_arg p4[] = {arg(z, ext1(10, 2, 5, 1), 1, 0)};
    grc_txn_call w[4] = {call(0, p1, 1), call(1, p2, 1), call(2, p3, 1), call(3, p4, 1)};
    grc_txn t = {w, 4, 4};
    memset(&st, 0, sizeof st);
    grc_txn_plan(&t, &st);
    result(p1[0].keep && !p1[0].reuse && !p1[0].ret, "the first update stays on its server, not returned");
    result(p2[0].src == 0 && p2[0].keep && p2[0].reuse && !p2[0].ret,
           "the second takes it by reference and keeps into it");
    result(p3[0].src == 1 && !p3[0].keep,
           "the third takes it; a partial reader follows, so its output comes back");
    result(p4[0].src < 0 && st.by_ref == 2, "the partial reader reads through the client (%ld by reference)",
           st.by_ref);
    /* An output read by reference and never overwritten: the caller's memory needs it too. */
    grc_txn_arg q1[] = {arg(z, ext1(10, 0, 10, 1), 0, 1)};
    grc_txn_arg q2[] = {arg(z, ext1(10, 0, 10, 1), 1, 0)};
    grc_txn_call u[2] = {call(0, q1, 1), call(1, q2, 1)};
    grc_txn t2 = {u, 2, 2};
    grc_txn_plan(&t2, &st);
    result(q1[0].keep && q1[0].ret && q2[0].src == 0,
           "kept for its reader and returned for the caller (RETURN)");
    printf("1..%d\n", tests);
    return failed ? 1 : 0;
}
