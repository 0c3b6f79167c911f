/* lsq.c: least squares A x = b three ways (SVD, QR, pseudo-inverse) behind
 * stubs/lsq.idl, and the multi-client server experiment, which generates a problem
 * from a seed and solves it the three ways at once. LAPACK overwrites its inputs, so
 * every solver works on copies and measures its residual against the originals. */
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>
#include <lapacke.h>

#include "gridrpc_lib.h"

static int imax(int a, int b) {
    return a > b ? a : b;
}
static int imin(int a, int b) {
    return a < b ? a : b;
}

/* Singular values below this are treated as zero, by dgelsd and pinv alike, so that the
 * two agree on the rank of a nearly singular A (the cutoff of MATLAB's pinv). */
static double rank_cutoff(int m, int n) {
    return imax(m, n) * DBL_EPSILON;
}

/* ||A x - b||_2 with the caller's A and b. */
static double residual(int m, int n, const double *A, const double *x, const double *b) {
    double *r = malloc((size_t)m * sizeof *r), norm;
    if (r == NULL) return NAN;
    memcpy(r, b, (size_t)m * sizeof *r);
    cblas_dgemv(CblasRowMajor, CblasNoTrans, m, n, 1.0, A, n, x, 1, -1.0, r, 1);
    norm = cblas_dnrm2(m, r, 1);
    free(r);
    return norm;
}

static void fail(int n, double *x, double *resid) {
    for (int i = 0; i < n; i++)
        x[i] = NAN;
    *resid = NAN;
}

/* Degenerate shapes have an answer without LAPACK (which rejects some of them): with
 * no unknowns the residual is all of b, with no equations x = 0 is the least-norm
 * solution. Returns 1 when it answered. */
static int degenerate(int m, int n, const double *b, double *x, double *resid) {
    if (m > 0 && n > 0) return 0;
    for (int i = 0; i < n; i++)
        x[i] = 0.0;
    *resid = m > 0 ? cblas_dnrm2(m, b, 1) : 0.0;
    return 1;
}

/* Copies of A and of b, the latter max(m, n) long: LAPACK returns x in it. */
static int copy_inputs(int m, int n, const double *A, const double *b, double **Ac, double **bc) {
    size_t ldb = (size_t)imax(m, n);
    *Ac = malloc((size_t)m * (size_t)n * sizeof **Ac);
    *bc = calloc(ldb, sizeof **bc);
    if (*Ac == NULL || *bc == NULL) {
        free(*Ac);
        free(*bc);
        return -1;
    }
    memcpy(*Ac, A, (size_t)m * (size_t)n * sizeof **Ac);
    memcpy(*bc, b, (size_t)m * sizeof **bc);
    return 0;
}

void gridrpc_lib_lsq_svd(int m, int n, const double *A, const double *b, double *x, double *resid) {
    double *Ac, *bc, *s;
    lapack_int rank, info = -1;

    if (degenerate(m, n, b, x, resid)) return;
    if (copy_inputs(m, n, A, b, &Ac, &bc) != 0) {
        fail(n, x, resid);
        return;
    }
    s = malloc((size_t)imin(m, n) * sizeof *s);
    if (s != NULL)
        info = LAPACKE_dgelsd(LAPACK_ROW_MAJOR, m, n, 1, Ac, n, bc, 1, s, rank_cutoff(m, n), &rank);
    if (info == 0) {
        memcpy(x, bc, (size_t)n * sizeof *x);
        *resid = residual(m, n, A, x, b);
    } else {
        fail(n, x, resid);
    }
    free(s);
    free(Ac);
    free(bc);
}

void gridrpc_lib_lsq_qr(int m, int n, const double *A, const double *b, double *x, double *resid) {
    double *Ac, *bc;
    lapack_int info;

    if (degenerate(m, n, b, x, resid)) return;
    if (copy_inputs(m, n, A, b, &Ac, &bc) != 0) {
        fail(n, x, resid);
        return;
    }
    /* info > 0: A is rank deficient, where QR without pivoting has no answer. */
    info = LAPACKE_dgels(LAPACK_ROW_MAJOR, 'N', m, n, 1, Ac, n, bc, 1);
    if (info == 0) {
        memcpy(x, bc, (size_t)n * sizeof *x);
        *resid = residual(m, n, A, x, b);
    } else {
        fail(n, x, resid);
    }
    free(Ac);
    free(bc);
}

void gridrpc_lib_lsq_pinv(int m, int n, const double *A, const double *b, double *x, double *resid) {
    int k = imin(m, n);
    double *Ac = NULL, *s, *u, *vt, *c, *superb, tol;
    lapack_int info = -1;

    if (degenerate(m, n, b, x, resid)) return;
    /* A = U S V^T, thin: U is m x k, V^T is k x n. */
    s = malloc((size_t)k * sizeof *s);
    u = malloc((size_t)m * (size_t)k * sizeof *u);
    vt = malloc((size_t)k * (size_t)n * sizeof *vt);
    c = malloc((size_t)k * sizeof *c);
    superb = malloc((size_t)imax(k - 1, 1) * sizeof *superb);
    if (s != NULL && u != NULL && vt != NULL && c != NULL && superb != NULL &&
        (Ac = malloc((size_t)m * (size_t)n * sizeof *Ac)) != NULL) {
        memcpy(Ac, A, (size_t)m * (size_t)n * sizeof *Ac);
        info = LAPACKE_dgesvd(LAPACK_ROW_MAJOR, 'S', 'S', m, n, Ac, n, s, u, k, vt, n, superb);
    }
    if (info == 0) {
        /* x = V S^+ U^T b, dropping the singular values a rank-deficient A makes noise of. */
        tol = rank_cutoff(m, n) * s[0];
        cblas_dgemv(CblasRowMajor, CblasTrans, m, k, 1.0, u, k, b, 1, 0.0, c, 1);
        for (int i = 0; i < k; i++)
            c[i] = s[i] > tol ? c[i] / s[i] : 0.0;
        cblas_dgemv(CblasRowMajor, CblasTrans, k, n, 1.0, vt, n, c, 1, 0.0, x, 1);
        *resid = residual(m, n, A, x, b);
    } else {
        fail(n, x, resid);
    }
    free(Ac);
    free(s);
    free(u);
    free(vt);
    free(c);
    free(superb);
}

/* ---------------------------------------------------------------- the experiment */

/* splitmix64: small, good enough for test matrices, and its state lives with the
 * caller, so concurrent experiments never share a generator. */
static uint64_t splitmix64(uint64_t *state) {
    uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* Uniform in [-1, 1) from the top 53 bits. */
static double uniform(uint64_t *state) {
    return (double)(splitmix64(state) >> 11) * 0x1.0p-52 - 1.0;
}

typedef void (*lsq_solver)(int, int, const double *, const double *, double *, double *);

typedef struct lsq_job {
    lsq_solver solve;
    int m, n;
    const double *A, *b;
    double *x;
    double err;
} lsq_job;

static void *run_job(void *arg) {
    lsq_job *j = arg;
    j->solve(j->m, j->n, j->A, j->b, j->x, &j->err);
    return NULL;
}

void gridrpc_lib_lsq_experiment(int m, int n, int seed, double *err) {
    static const lsq_solver solvers[3] = {gridrpc_lib_lsq_svd, gridrpc_lib_lsq_qr, gridrpc_lib_lsq_pinv};
    lsq_job jobs[3];
    pthread_t tid[3];
    int started[3] = {0, 0, 0};
    uint64_t state = (uint64_t)(uint32_t)seed;
    double *A, *b, *x;
    size_t mn;

    if (m <= 0 || n <= 0) {
        err[0] = err[1] = err[2] = 0.0;
        return;
    }
    mn = (size_t)m * (size_t)n;
    A = malloc(mn * sizeof *A);
    b = malloc((size_t)m * sizeof *b);
    x = malloc(3 * (size_t)n * sizeof *x);
    if (A == NULL || b == NULL || x == NULL) {
        err[0] = err[1] = err[2] = NAN;
        goto out;
    }
    for (size_t i = 0; i < mn; i++)
        A[i] = uniform(&state);
    for (int i = 0; i < m; i++)
        b[i] = uniform(&state);

    /* The three solvers only read A and b, so they can share them. */
    for (int i = 0; i < 3; i++) {
        jobs[i] = (lsq_job){solvers[i], m, n, A, b, x + (size_t)i * (size_t)n, NAN};
        started[i] = pthread_create(&tid[i], NULL, run_job, &jobs[i]) == 0;
    }
    /* A server short of threads still gets its answer, only later. */
    for (int i = 0; i < 3; i++) {
        if (started[i])
            pthread_join(tid[i], NULL);
        else
            run_job(&jobs[i]);
        err[i] = jobs[i].err;
    }
out:
    free(A);
    free(b);
    free(x);
}
