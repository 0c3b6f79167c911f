/* linalg.c: the implementations behind stubs/linalg.idl, on OpenBLAS (CBLAS) and
 * LAPACKE. Linpack's dgefa / dgesl keep their calling convention but run on LAPACK's
 * dgetrf / dgetrs, so clients written for Ninf's Linpack library work unchanged. */
#include <stdlib.h>

#include <cblas.h>
#include <lapacke.h>

#include "gridrpc_lib.h"

void gridrpc_lib_dmmul(int n, const double *A, const double *B, double *C) {
    if (n <= 0) return;
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, A, n, B, n, 0.0, C, n);
}

/* A block of M rows of a product: a distributed multiply gives each server some rows of
 * A and the whole of B (the sockets-vs-CORBA study's decomposition). */
void gridrpc_lib_dmmul_rows(int m, int n, const double *A, const double *B, double *C) {
    if (m <= 0 || n <= 0) return;
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, n, 1.0, A, n, B, n, 0.0, C, n);
}

void gridrpc_lib_ddot(int n, const double *x, const double *y, double *result) {
    *result = n > 0 ? cblas_ddot(n, x, 1, y, 1) : 0.0;
}

void gridrpc_lib_daxpy(int n, double alpha, const double *x, double *y) {
    if (n <= 0) return;
    cblas_daxpy(n, alpha, x, 1, y, 1);
}

void gridrpc_lib_dgemv(int m, int n, double alpha, const double *A, const double *x, double beta, double *y) {
    if (m <= 0) return;
    if (n <= 0) {
        /* BLAS returns early here and leaves y alone; the IDL promises y = beta * y. */
        cblas_dscal(m, beta, y, 1);
        return;
    }
    cblas_dgemv(CblasRowMajor, CblasNoTrans, m, n, alpha, A, n, x, 1, beta, y, 1);
}

/* Row-major LAPACKE factors the matrix the client sent, not its transpose, so ipvt
 * names row interchanges of A as Linpack's did (1-based, as LAPACK returns them). */
void gridrpc_lib_dgefa(int n, double *a, int *ipvt, int *info) {
    *info = 0;
    if (n <= 0) return;
    *info = LAPACKE_dgetrf(LAPACK_ROW_MAJOR, n, n, a, n, ipvt);
}

void gridrpc_lib_dgesl(int n, const double *a, const int *ipvt, double *b, int job) {
    if (n <= 0) return;
    /* Linpack's dgesl has no status to report: a bad factorization shows in b. */
    (void)LAPACKE_dgetrs(LAPACK_ROW_MAJOR, job == 0 ? 'N' : 'T', n, 1, a, n, ipvt, b, 1);
}

void gridrpc_lib_linpack(int n, double *a, double *b, int *info) {
    int *ipvt;

    *info = 0;
    if (n <= 0) return;
    ipvt = malloc((size_t)n * sizeof *ipvt);
    if (ipvt == NULL) {
        *info = LAPACK_WORK_MEMORY_ERROR;
        return;
    }
    *info = LAPACKE_dgesv(LAPACK_ROW_MAJOR, n, 1, a, n, ipvt, b, 1);
    free(ipvt);
}
