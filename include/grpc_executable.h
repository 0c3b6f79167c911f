/* grpc_executable.h: what a remote function's body may call inside gridrpcd, as in
 * Ninf-G (server side; implemented by the server, not by libgridrpc). */
#ifndef GRIDRPC_GRPC_EXECUTABLE_H
#define GRIDRPC_GRPC_EXECUTABLE_H

#include "grpc.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Cooperative cancel: returns 1 when the client cancelled the call the calling thread
 * is running (the body should clean up and return), else 0 (also outside a call).
 * ERROR, when not NULL, receives GRPC_NO_ERROR. MT-safe.
 *
 * gridrpcd defines it and exports it to the modules it loads. The declaration is weak
 * so that a module links on its own (gridrpc-module links with --no-undefined) and the
 * dynamic loader binds it to the server's definition at dlopen; a call made where no
 * server defines it (a program that links the stub itself) returns 0 instead of
 * jumping to address 0. */
#if defined(__GNUC__) && defined(__ELF__)
int grpc_is_canceled_np(grpc_error_t *error) __attribute__((weak));

static inline int gridrpc_is_canceled_or_0_np(grpc_error_t *error) {
    if (grpc_is_canceled_np) return (grpc_is_canceled_np)(error);
    if (error) *error = GRPC_NO_ERROR;
    return 0;
}
#define grpc_is_canceled_np(error) gridrpc_is_canceled_or_0_np(error)
#else
int grpc_is_canceled_np(grpc_error_t *error);
#endif

#ifdef __cplusplus
}
#endif

#endif /* GRIDRPC_GRPC_EXECUTABLE_H */
