/* diag_util.h: the checks shared by the Ninf-G style diag clients (tests/ngdiag/diag.c,
 * tests/ngcallback/cbdiag.c, tests/ngobj/objtest.c): each failed check prints one
 * "FAILED: ..." line on stderr and sets diag_failed, which the client returns from main.
 * Compiled with each client by ng_client (tests/common/ng.sh; grpc.h only, as a Ninf-G
 * program is). */
#ifndef DIAG_UTIL_H
#define DIAG_UTIL_H

#include "grpc.h"

/* 1 once any check failed: the client's exit status. */
extern int diag_failed;

/* A failed check WHAT unless COND. */
void expect(int cond, const char *what);
/* The default handle of NAME in *H; exits 2 when there is none (the client cannot start). */
void handle(grpc_function_handle_t *h, const char *name);
/* 1 when RC is GRPC_NO_ERROR; else a failed check WHAT with the error and its detail. */
int call_ok(grpc_error_t rc, const char *what);

#endif
