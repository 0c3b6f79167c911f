/* numlib_test.c: checks the numerical library the servers host by default
 * (stubs/linalg.c, ep.c, lsq.c) by calling it directly, without stubs or network:
 * results against naive loops, Linpack's residual test, LAPACK's error reports,
 * agreement of the three least-squares methods, NPB's EP verification and the split
 * property clients rely on to spread EP across servers, and reentrancy. */
#include <cblas.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ep.h"
#include "gridrpc_lib.h"

static int failures;

static void result(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void result(int ok, const char *fmt, ...) {
    va_list ap;
    printf("%s - ", ok ? "ok" : "FAIL");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    if (!ok) failures++;
}

/* A fixed generator, so that a failure reproduces. */
static uint64_t rng_state = 12345;
static double urand(void) {
    uint64_t z = (rng_state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return (double)((z ^ (z >> 31)) >> 11) * 0x1.0p-52 - 1.0;
}

static double *rvec(size_t n) {
    double *v = malloc((n ? n : 1) * sizeof *v);
    if (v == NULL) {
        perror("malloc");
        exit(2);
    }
    for (size_t i = 0; i < n; i++)
        v[i] = urand();
    return v;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double norm_inf(int n, const double *v) {
    double r = 0;
    for (int i = 0; i < n; i++)
        r = fmax(r, fabs(v[i]));
    return r;
}

/* ---------------------------------------------------------------- BLAS level */

static void test_dmmul(int n) {
    double *A = rvec((size_t)n * n), *B = rvec((size_t)n * n), *C = rvec((size_t)n * n);
    int ok = 1;
    gridrpc_lib_dmmul(n, A, B, C);
    for (int i = 0; i < n && ok; i++)
        for (int j = 0; j < n && ok; j++) {
            double ref = 0, mag = 0;
            for (int k = 0; k < n; k++) {
                ref += A[i * n + k] * B[k * n + j];
                mag += fabs(A[i * n + k] * B[k * n + j]);
            }
            /* The classic bound for a dot product of length n, twice over. */
            if (fabs(C[i * n + j] - ref) > 2.0 * n * DBL_EPSILON * mag) {
                ok = 0;
                printf("# C[%d][%d] = %.17g, naive %.17g\n", i, j, C[i * n + j], ref);
            }
        }
    result(ok, "dmmul n=%d matches the naive triple loop", n);
    free(A);
    free(B);
    free(C);
}

/* dmmul_rows against a local dgemm of the whole product: every row block [r, r + m) of
 * A times B must be rows r..r+m-1 of A * B (the distributed multiply's premise), blocks
 * of uneven sizes included; a wrong leading dimension or row count fails here. */
static void test_dmmul_rows(int n) {
    double *A = rvec((size_t)n * n), *B = rvec((size_t)n * n), *C = rvec((size_t)n * n);
    double *R = rvec((size_t)n * n);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, A, n, B, n, 0.0, R, n);
    int ok = 1, blocks = 0;
    for (int r = 0, m = 1; r < n; r += m, m = m * 2 + 1) {
        if (m > n - r) m = n - r;
        gridrpc_lib_dmmul_rows(m, n, A + (size_t)r * n, B, C + (size_t)r * n);
        blocks++;
    }
    for (int i = 0; i < n && ok; i++)
        for (int j = 0; j < n && ok; j++) {
            double mag = 0;
            for (int k = 0; k < n; k++)
                mag += fabs(A[i * n + k] * B[k * n + j]);
            if (fabs(C[i * n + j] - R[i * n + j]) > 2.0 * n * DBL_EPSILON * mag) {
                ok = 0;
                printf("# C[%d][%d] = %.17g, dgemm %.17g\n", i, j, C[i * n + j], R[i * n + j]);
            }
        }
    result(ok, "dmmul_rows n=%d in %d row blocks of uneven sizes matches a local dgemm", n, blocks);
    /* A block of zero rows writes nothing. */
    C[0] = 42.0;
    gridrpc_lib_dmmul_rows(0, n, A, B, C);
    result(C[0] == 42.0, "dmmul_rows with m=0 leaves C alone");
    free(A);
    free(B);
    free(C);
    free(R);
}

static void test_blas1_2(void) {
    int n = 1000, m = 37, nc = 53, ok = 1;
    double *x = rvec(n), *y = rvec(n), *y0 = malloc(n * sizeof *y0), dot, ref = 0, mag = 0, alpha = 0.75;
    double *A = rvec((size_t)m * nc), *v = rvec(nc), *w = rvec(m), *w0 = malloc(m * sizeof *w0);

    for (int i = 0; i < n; i++)
        ref += x[i] * y[i], mag += fabs(x[i] * y[i]);
    gridrpc_lib_ddot(n, x, y, &dot);
    result(fabs(dot - ref) <= 2.0 * n * DBL_EPSILON * mag, "ddot n=%d matches a loop", n);
    dot = 42;
    gridrpc_lib_ddot(0, NULL, NULL, &dot);
    result(dot == 0.0, "ddot n=0 is 0");

    memcpy(y0, y, n * sizeof *y);
    gridrpc_lib_daxpy(n, alpha, x, y);
    for (int i = 0; i < n; i++)
        ok &= fabs(y[i] - (alpha * x[i] + y0[i])) <= 2 * DBL_EPSILON;
    result(ok, "daxpy n=%d matches a loop", n);

    memcpy(w0, w, m * sizeof *w);
    gridrpc_lib_dgemv(m, nc, 1.5, A, v, -0.5, w);
    ok = 1;
    for (int i = 0; i < m; i++) {
        double r = 0, g = 0;
        for (int j = 0; j < nc; j++)
            r += A[i * nc + j] * v[j], g += fabs(A[i * nc + j] * v[j]);
        ok &= fabs(w[i] - (1.5 * r - 0.5 * w0[i])) <= 4.0 * nc * DBL_EPSILON * (g + 1);
    }
    result(ok, "dgemv %dx%d matches a loop", m, nc);
    memcpy(w, w0, m * sizeof *w);
    gridrpc_lib_dgemv(m, 0, 1.0, NULL, NULL, 2.0, w);
    ok = 1;
    for (int i = 0; i < m; i++)
        ok &= w[i] == 2.0 * w0[i];
    result(ok, "dgemv with n=0 scales y by beta");
    free(x), free(y), free(y0), free(A), free(v), free(w), free(w0);
}

/* ---------------------------------------------------------------- Linpack */

/* Linpack's check: ||A x - b|| / (n ||A|| ||x|| eps), infinity norms; < 10 passes. */
static double normalized_residual(int n, const double *A, const double *x, const double *b, int trans) {
    double rmax = 0, anorm = 0;
    for (int i = 0; i < n; i++) {
        double r = -b[i], rowsum = 0;
        for (int j = 0; j < n; j++) {
            double aij = trans ? A[j * n + i] : A[i * n + j];
            r += aij * x[j];
            rowsum += fabs(aij);
        }
        rmax = fmax(rmax, fabs(r));
        anorm = fmax(anorm, rowsum);
    }
    return rmax / (n * anorm * norm_inf(n, x) * DBL_EPSILON);
}

static void test_linpack(int n) {
    size_t nn = (size_t)n * n;
    double *A = rvec(nn), *LU = malloc(nn * sizeof *LU), *b = rvec(n), *x = malloc(n * sizeof *x), res;
    int *ipvt = malloc(n * sizeof *ipvt), info = -99, pivots_ok = 1;

    memcpy(LU, A, nn * sizeof *A);
    gridrpc_lib_dgefa(n, LU, ipvt, &info);
    result(info == 0, "dgefa n=%d: info %d", n, info);
    for (int i = 0; i < n; i++)
        pivots_ok &= ipvt[i] >= i + 1 && ipvt[i] <= n;
    result(pivots_ok, "dgefa n=%d: pivots are 1-based rows i+1..n", n);

    memcpy(x, b, n * sizeof *b);
    gridrpc_lib_dgesl(n, LU, ipvt, x, 0);
    res = normalized_residual(n, A, x, b, 0);
    result(res < 10, "dgefa + dgesl job 0 n=%d: normalized residual %.3g", n, res);

    memcpy(x, b, n * sizeof *b);
    gridrpc_lib_dgesl(n, LU, ipvt, x, 1);
    res = normalized_residual(n, A, x, b, 1);
    result(res < 10, "dgesl job 1 solves A^T x = b, n=%d: normalized residual %.3g", n, res);

    memcpy(LU, A, nn * sizeof *A);
    memcpy(x, b, n * sizeof *b);
    info = -99;
    gridrpc_lib_linpack(n, LU, x, &info);
    res = normalized_residual(n, A, x, b, 0);
    result(info == 0 && res < 10, "linpack n=%d: info %d, normalized residual %.3g", n, info, res);
    free(A), free(LU), free(b), free(x), free(ipvt);
}

static void test_linpack_edges(void) {
    /* Row 2 is twice row 1: elimination leaves an exact zero pivot in column 3. */
    double S[9] = {1, 2, 3, 2, 4, 6, 1, 1, 1}, S2[9], b[3] = {1, 2, 3};
    int ipvt[3], info = -99;

    memcpy(S2, S, sizeof S);
    gridrpc_lib_dgefa(3, S, ipvt, &info);
    result(info == 3, "dgefa on a singular matrix: info %d (3 expected)", info);
    info = -99;
    gridrpc_lib_linpack(3, S2, b, &info);
    result(info > 0, "linpack on a singular matrix: info %d > 0", info);
    info = -99;
    gridrpc_lib_dgefa(0, NULL, NULL, &info);
    gridrpc_lib_dgesl(0, NULL, NULL, NULL, 0);
    result(info == 0, "dgefa / dgesl n=0 return quietly, info 0");
    info = -99;
    gridrpc_lib_linpack(-3, NULL, NULL, &info);
    result(info == 0, "linpack n<0 returns quietly, info 0");
}

/* ---------------------------------------------------------------- least squares */

static void test_lsq(int m, int n) {
    size_t mn = (size_t)m * n;
    double *A = rvec(mn), *b = rvec(m), *A0 = malloc(mn * sizeof *A0), *b0 = malloc(m * sizeof *b0);
    double *x[3], res[3], *r = malloc(m * sizeof *r), xnorm = 0, dmax = 0, anorm = 0, atr = 0, rn = 0;
    const char *names[3] = {"svd", "qr", "pinv"};
    int finite = 1;

    memcpy(A0, A, mn * sizeof *A);
    memcpy(b0, b, m * sizeof *b);
    for (int k = 0; k < 3; k++)
        x[k] = malloc(n * sizeof *x[k]);
    gridrpc_lib_lsq_svd(m, n, A, b, x[0], &res[0]);
    gridrpc_lib_lsq_qr(m, n, A, b, x[1], &res[1]);
    gridrpc_lib_lsq_pinv(m, n, A, b, x[2], &res[2]);
    result(memcmp(A, A0, mn * sizeof *A) == 0 && memcmp(b, b0, m * sizeof *b) == 0,
           "lsq %dx%d: A and b left unmodified", m, n);
    for (int k = 0; k < 3; k++)
        finite &= isfinite(res[k]);
    result(finite, "lsq %dx%d: residuals svd %.10g qr %.10g pinv %.10g", m, n, res[0], res[1], res[2]);

    xnorm = norm_inf(n, x[0]);
    for (int k = 1; k < 3; k++)
        for (int j = 0; j < n; j++)
            dmax = fmax(dmax, fabs(x[k][j] - x[0][j]));
    result(dmax <= 1e-8 * xnorm, "lsq %dx%d: the three methods agree (max difference %.3g)", m, n, dmax);
    result(fabs(res[1] - res[0]) <= 1e-8 * res[0] && fabs(res[2] - res[0]) <= 1e-8 * res[0],
           "lsq %dx%d: the three residual norms agree", m, n);

    /* The normal equations: the least-squares residual is orthogonal to A's columns. */
    for (int k = 0; k < 3; k++) {
        atr = 0;
        for (int i = 0; i < m; i++) {
            r[i] = -b[i];
            for (int j = 0; j < n; j++)
                r[i] += A[i * n + j] * x[k][j];
        }
        rn = 0;
        for (int i = 0; i < m; i++)
            rn += r[i] * r[i];
        rn = sqrt(rn);
        anorm = 0;
        for (int j = 0; j < n; j++) {
            double s = 0, c = 0;
            for (int i = 0; i < m; i++)
                s += A[i * n + j] * r[i], c += A[i * n + j] * A[i * n + j];
            atr = fmax(atr, fabs(s));
            anorm = fmax(anorm, sqrt(c));
        }
        result(atr <= 1e-10 * anorm * rn && fabs(rn - res[k]) <= 1e-10 * rn,
               "lsq_%s %dx%d: residual orthogonal to A's columns (|A^T r| %.3g) and |r| as reported",
               names[k], m, n, atr);
    }
    for (int k = 0; k < 3; k++)
        free(x[k]);
    free(A), free(b), free(A0), free(b0), free(r);
}

static void test_lsq_edges(void) {
    /* Underdetermined: all three find an exact solution. */
    int m = 5, n = 9;
    double *A = rvec((size_t)m * n), *b = rvec(m), x[9], res, err[3];
    void (*f[3])(int, int, const double *, const double *, double *,
                 double *) = {gridrpc_lib_lsq_svd, gridrpc_lib_lsq_qr, gridrpc_lib_lsq_pinv};
    int ok = 1;
    for (int k = 0; k < 3; k++) {
        f[k](m, n, A, b, x, &res);
        ok &= res < 1e-12;
    }
    result(ok, "lsq m<n (5x9): all three methods solve exactly");

    ok = 1;
    for (int k = 0; k < 3; k++) {
        x[0] = 7;
        f[k](0, 1, NULL, NULL, x, &res);
        ok &= res == 0 && x[0] == 0;
        f[k](3, 0, NULL, b, NULL, &res);
        ok &= fabs(res - sqrt(b[0] * b[0] + b[1] * b[1] + b[2] * b[2])) < 1e-15;
    }
    result(ok, "lsq with m or n = 0: x = 0, residual |b|");

    /* A zero column: QR without pivoting cannot solve, the SVD methods can. */
    for (int i = 0; i < m; i++)
        A[i * 3 + 1] = 0;
    gridrpc_lib_lsq_qr(m, 3, A, b, x, &res);
    result(isnan(res) && isnan(x[0]), "lsq_qr on a rank-deficient A: NaN (LAPACK info > 0)");
    gridrpc_lib_lsq_svd(m, 3, A, b, x, &res);
    ok = isfinite(res) && fabs(x[1]) < 1e-12;
    gridrpc_lib_lsq_pinv(m, 3, A, b, x, &res);
    ok &= isfinite(res) && fabs(x[1]) < 1e-12;
    result(ok, "lsq_svd and lsq_pinv on a rank-deficient A: finite, null-space component 0");

    gridrpc_lib_lsq_experiment(0, 4, 1, err);
    result(err[0] == 0 && err[1] == 0 && err[2] == 0, "lsq_experiment with m=0: errors 0");
    free(A), free(b);
}

static void test_lsq_experiment(void) {
    double e[3], e2[3], t = now();
    int ok = 1;
    gridrpc_lib_lsq_experiment(300, 60, 42, e);
    t = now() - t;
    for (int k = 0; k < 3; k++)
        ok &= isfinite(e[k]) && e[k] > 0 && fabs(e[k] - e[0]) <= 1e-8 * e[0];
    result(ok, "lsq_experiment 300x60 seed 42: %.12g %.12g %.12g (%.3f s)", e[0], e[1], e[2], t);
    gridrpc_lib_lsq_experiment(300, 60, 42, e2);
    ok = 1;
    for (int k = 0; k < 3; k++)
        ok &= fabs(e2[k] - e[k]) <= 1e-12 * e[k];
    gridrpc_lib_lsq_experiment(300, 60, 43, e2);
    result(ok && e2[0] != e[0], "lsq_experiment: the seed alone determines the problem");
    gridrpc_lib_lsq_experiment(20, 40, 5, e2);
    result(e2[0] < 1e-12 && e2[1] < 1e-12 && e2[2] < 1e-12, "lsq_experiment m<n: solved exactly");
}

/* ---------------------------------------------------------------- EP */

typedef struct ep_sums {
    double sx, sy, q[10];
} ep_sums;

static void ep_add(ep_sums *acc, int m, int first, int count) {
    ep_sums p;
    gridrpc_lib_ep(m, first, count, &p.sx, &p.sy, p.q);
    acc->sx += p.sx;
    acc->sy += p.sy;
    for (int i = 0; i < 10; i++)
        acc->q[i] += p.q[i];
}

static int ep_same(const ep_sums *a, const ep_sums *b) {
    int ok = fabs(a->sx - b->sx) <= 1e-9 * fabs(b->sx) && fabs(a->sy - b->sy) <= 1e-9 * fabs(b->sy);
    for (int i = 0; i < 10; i++)
        ok &= a->q[i] == b->q[i];
    return ok;
}

static ep_sums ep_whole;

static void test_ep(void) {
    ep_sums halves = {0}, thirds = {0}, none = {0};
    double t = now();
    int ok;

    ep_add(&ep_whole, 24, 0, 0);
    t = now() - t;
    result(gridrpc_ep_verify(24, ep_whole.sx, ep_whole.sy) == 1,
           "EP class S (m=24): sx %.15e sy %.15e verified (%.2f s)", ep_whole.sx, ep_whole.sy, t);
    result(gridrpc_ep_verify(23, 0, 0) == -1 && gridrpc_ep_verify(24, 0, 0) == 0 &&
               gridrpc_ep_verify(24, NAN, NAN) == 0,
           "gridrpc_ep_verify: -1 without a reference, 0 for wrong sums");

    ep_add(&halves, 24, 0, 1 << 23);
    ep_add(&halves, 24, 1 << 23, 1 << 23);
    result(ep_same(&halves, &ep_whole), "EP m=24 split in halves adds up to the whole run");
    /* Uneven pieces, the last one "count 0: to the end" and one running past the end. */
    ep_add(&thirds, 24, 0, 1000003);
    ep_add(&thirds, 24, 1000003, 9000000);
    ep_add(&thirds, 24, 10000003, 0);
    ep_add(&thirds, 24, 1 << 24, 5);
    result(ep_same(&thirds, &ep_whole), "EP m=24 split unevenly adds up to the whole run");

    ep_add(&none, 24, -1, 10);
    ep_add(&none, 30, 0, -1);
    ep_add(&none, -1, 0, 0);
    ok = none.sx == 0 && none.sy == 0;
    for (int i = 0; i < 10; i++)
        ok &= none.q[i] == 0;
    result(ok, "EP with a bad m, first or count: all zero");
}

/* ---------------------------------------------------------------- reentrancy */

typedef struct worker {
    int id;
    ep_sums ep;
    double err[3];
} worker;

static void *work(void *arg) {
    worker *w = arg;
    ep_add(&w->ep, 24, w->id << 22, 1 << 22);
    gridrpc_lib_lsq_experiment(120, 30, w->id, w->err);
    return NULL;
}

static void test_threads(void) {
    worker w[4];
    pthread_t tid[4];
    ep_sums sum = {0};
    double e[3];
    int ok = 1;
    for (int i = 0; i < 4; i++) {
        memset(&w[i], 0, sizeof w[i]);
        w[i].id = i;
        if (pthread_create(&tid[i], NULL, work, &w[i]) != 0) {
            result(0, "pthread_create");
            return;
        }
    }
    for (int i = 0; i < 4; i++)
        pthread_join(tid[i], NULL);
    for (int i = 0; i < 4; i++) {
        sum.sx += w[i].ep.sx, sum.sy += w[i].ep.sy;
        for (int j = 0; j < 10; j++)
            sum.q[j] += w[i].ep.q[j];
        gridrpc_lib_lsq_experiment(120, 30, i, e);
        for (int k = 0; k < 3; k++)
            ok &= fabs(e[k] - w[i].err[k]) <= 1e-12 * e[k];
    }
    result(ep_same(&sum, &ep_whole) && ok, "4 threads at once: EP quarters and lsq_experiment as run alone");
}

int main(void) {
    int sizes[] = {1, 7, 64, 200};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        test_dmmul(sizes[i]);
    gridrpc_lib_dmmul(0, NULL, NULL, NULL);
    result(1, "dmmul n=0 returns quietly");
    test_dmmul_rows(1);
    test_dmmul_rows(37);
    test_dmmul_rows(150);
    test_blas1_2();
    test_linpack(1);
    test_linpack(100);
    test_linpack(333);
    test_linpack_edges();
    test_lsq(60, 12);
    test_lsq(500, 80);
    test_lsq_edges();
    test_lsq_experiment();
    test_ep();
    test_threads();
    printf("numlib: %s (%d failure%s)\n", failures ? "FAILED" : "all checks passed", failures,
           failures == 1 ? "" : "s");
    return failures ? 1 : 0;
}
