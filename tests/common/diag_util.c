/* diag_util.c: the checks shared by the Ninf-G style diag clients (diag_util.h). */
#include "diag_util.h"

int diag_failed;

void expect(int cond, const char *what) {
    if (!cond) {
        fprintf(stderr, "FAILED: %s\n", what);
        diag_failed = 1;
    }
}

void handle(grpc_function_handle_t *h, const char *name) {
    if (grpc_function_handle_default(h, name) != GRPC_NO_ERROR) {
        fprintf(stderr, "grpc_function_handle_default(%s): %s\n", name, grpc_last_error_np());
        exit(2);
    }
}

int call_ok(grpc_error_t rc, const char *what) {
    if (rc == GRPC_NO_ERROR) return 1;
    fprintf(stderr, "FAILED: %s: %s (%s)\n", what, grpc_error_string(rc), grpc_last_error_np());
    diag_failed = 1;
    return 0;
}
