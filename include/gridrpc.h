/* gridrpc.h: the public C API of GridRPC.
 *
 * The client calls (grid_call and the OGF GridRPC grpc_* API) arrive with the runtime;
 * this header already declares what the library provides today and the types that
 * generated client headers (idlc -o DIR x.idl -> x_client.h) rely on.
 */
#ifndef GRIDRPC_H
#define GRIDRPC_H

#include "gridrpc_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Returns the library's version, "MAJOR.MINOR.PATCH". MT-safe. */
const char *gridrpc_version(void);

/* Calls the remote function NAME ("dmmul", "module/function" or
 * "gridrpc://host:port/module/function") with the arguments its interface
 * descriptor describes. Returns 0 on success, an error code otherwise. */
int grid_call(const char *name, ...);

#ifdef __cplusplus
}
#endif

#endif /* GRIDRPC_H */
