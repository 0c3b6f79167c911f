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
 * ERROR, when not NULL, receives GRPC_NO_ERROR. MT-safe. */
int grpc_is_canceled_np(grpc_error_t *error);

#ifdef __cplusplus
}
#endif

#endif /* GRIDRPC_GRPC_EXECUTABLE_H */
