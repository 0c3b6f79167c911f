/* gridrpc_lib.h: the numerical library GridRPC serves by default, the Calls "C"
 * targets of stubs/linalg.idl, ep.idl and lsq.idl. The stubs bind these symbols under
 * names of their own, so the const qualifiers here are for callers linking directly
 * (tests, benchmarks) and never clash with a stub. Matrices are row-major (C order).
 * Every function is reentrant: the server calls them on several threads at once. */
#ifndef GRIDRPC_LIB_H
#define GRIDRPC_LIB_H

#ifdef __cplusplus
extern "C" {
#endif

/* linalg */
void gridrpc_lib_dmmul(int n, const double *A, const double *B, double *C);
void gridrpc_lib_dmmul_rows(int m, int n, const double *A, const double *B, double *C);
void gridrpc_lib_ddot(int n, const double *x, const double *y, double *result);
void gridrpc_lib_daxpy(int n, double alpha, const double *x, double *y);
void gridrpc_lib_dgemv(int m, int n, double alpha, const double *A, const double *x, double beta, double *y);
void gridrpc_lib_dgefa(int n, double *a, int *ipvt, int *info);
void gridrpc_lib_dgesl(int n, const double *a, const int *ipvt, double *b, int job);
void gridrpc_lib_linpack(int n, double *a, double *b, int *info);

/* nas */
void gridrpc_lib_ep(int m, int first, int count, double *sx, double *sy, double *q);

/* lsq */
void gridrpc_lib_lsq_svd(int m, int n, const double *A, const double *b, double *x, double *resid);
void gridrpc_lib_lsq_qr(int m, int n, const double *A, const double *b, double *x, double *resid);
void gridrpc_lib_lsq_pinv(int m, int n, const double *A, const double *b, double *x, double *resid);
void gridrpc_lib_lsq_experiment(int m, int n, int seed, double *err);

#ifdef __cplusplus
}
#endif

#endif /* GRIDRPC_LIB_H */
