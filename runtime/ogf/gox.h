/* gox.h: the internals of the OGF GridRPC API (grpc_*, include/grpc_api.h): the
 * configuration read by grpc_initialize, the mapping of the core's codes, and the
 * argument vectors built for the core. Private to the library (prefix gox_), so
 * nothing here is exported next to Google gRPC's own grpc_ names. */
#ifndef GOX_H
#define GOX_H

#include <stdarg.h>

#include "gridrpc.h"
#include "grpc_api.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GOX_DEFAULT_PORT 7000 /* gridrpcd's default, for hosts named without a port */
/* The sizes of a handle's server and function names (grpc_api.h), whose room the core
 * matches (checked in grc_api.c): one definition of each limit. */
#define GOX_MAX_HOST sizeof(((grpc_function_handle_t *)0)->host_np)
#define GOX_MAX_FUNC sizeof(((grpc_function_handle_t *)0)->function_np)

/* ---- Configuration (gox_config.c) */

typedef struct gox_server {
    char host[GOX_MAX_HOST];
    char tag[GOX_MAX_HOST]; /* "" when none */
    int port;               /* 0: not given (SERVER_DEFAULT's port, else 7000) */
} gox_server;

typedef struct gox_funcinfo {
    char host[GOX_MAX_HOST]; /* a hostname or tag of a <SERVER> */
    char func[GOX_MAX_FUNC];
} gox_funcinfo;

typedef struct gox_config {
    gox_server *servers; /* in file order: the first is the default */
    int nservers;
    gox_funcinfo *funcs;
    int nfuncs;
    int default_port;         /* <SERVER_DEFAULT> port, 0 when not given */
    double call_timeout;      /* -1: not set in the file */
    char timeout_source[300]; /* where call_timeout was set ("'session_timeout' in FILE line N") */
    double connect_timeout;   /* -1: not set in the file */
    int has_token;            /* the file has a 'token' line: the core uses TOKEN while CFG lives */
    char token[GRID_MAX_TOKEN_NP + 1];
    int has_key_file; /* a 'key_file PATH' line: the core uses its keys while CFG lives */
    char key_file[1024];
    char key_file_at[1100]; /* "FILE:LINE", for the message when the key file is refused */
    int has_tls_ca;         /* a 'tls_ca' line: the core uses TLS_CA while CFG lives */
    char tls_ca[1024];      /* CA certificates (PEM) for gridrpcs:// servers */
    int has_meta; /* a 'metaserver HOST:PORT' (ours, or in <CLIENT>): the core uses it while CFG lives */
    char meta_host[GOX_MAX_HOST];
    int meta_port;
} gox_config;

/* Reads PATH (both formats) into CFG, which must be zeroed. Returns GRPC_NO_ERROR,
 * GRPC_CONFIGFILE_NOT_FOUND or GRPC_CONFIGFILE_ERROR with a message in MSG. Warns on
 * stderr about what it ignores. A 'token' it reads replaces the core's token until
 * gox_config_free(CFG). */
int gox_config_read(const char *path, gox_config *cfg, char *msg, size_t msgsize);
void gox_config_free(gox_config *cfg);
/* The host and port for SERVER (a tag, a hostname, "host:port" or a plain host). */
void gox_config_server(const gox_config *cfg, const char *server, char *host, size_t hostsize, int *port);
/* The server <FUNCTION_INFO> assigns to FUNC, or NULL. */
const char *gox_config_function_host(const gox_config *cfg, const char *func);
/* The attributes Ninf-G knows in SECTION ("SERVER", ...; gox_ninfg.c), NULL-terminated;
 * NULL for a section we do not read attribute by attribute. */
const char *const *gox_ninfg_attributes(const char *section);

/* ---- Codes (gox_error.c) */

/* The GRPC code for a core GRID_* code of a call that ran or was started. */
grpc_error_t gox_map(int grid_code);
/* Records the calling thread's last result (and message, printf-style; NULL: the
 * code's text). Returns CODE. */
grpc_error_t gox_result(grpc_error_t code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Records CODE with the core's last message (grid_last_error). */
grpc_error_t gox_result_core(grpc_error_t code);

/* ---- Argument vectors (gox_args.c) */

/* An argument vector for grid_call_argv_np and the storage of the IN scalars it points
 * into. Big (the storage is per parameter): callers allocate it. */
typedef struct gox_argv {
    grid_function_np fn; /* the interface (grid_describe_np) */
    char url[GOX_MAX_HOST + GOX_MAX_FUNC + 32];
    int nargs;
    void *argv[GRID_MAX_PARAMS_NP];
    grid_scalar_np slot[GRID_MAX_PARAMS_NP];
} gox_argv;

/* The core's name for HANDLE's function: gridrpc://host:port/function, or the plain
 * name when the handle has no host (the metaserver chooses per call). */
void gox_url(const grpc_function_handle_t *handle, char *url, size_t n);
/* Describes HANDLE's function into A and fills a->url. Returns a GRPC code (recorded). */
grpc_error_t gox_argv_describe(const grpc_function_handle_t *handle, gox_argv *a);
/* Takes the arguments from an argument stack. */
grpc_error_t gox_argv_from_stack(gox_argv *a, const grpc_arg_stack_t *stack);

/* ---- Shared state (gox_api.c) */

/* GRPC_NOT_INITIALIZED (recorded) unless grpc_initialize succeeded. */
grpc_error_t gox_check_initialized(void);
/* The server for NAME (a function or class) with no server given: <FUNCTION_INFO>'s,
 * else the first <SERVER>, else the core's default. GRPC_SERVER_NOT_FOUND (recorded)
 * when there is none. */
grpc_error_t gox_default_server(const char *name, char *host, size_t hostsize, int *port);
/* SERVER (a tag, a hostname, "host:port" or a plain host) as host and port. */
void gox_server_address(const char *server, char *host, size_t hostsize, int *port);
/* Records session ID of an object handle (grpc_invoke_async_np); -1 when out of memory. */
int gox_add_object_session(grpc_sessionid_t id);
/* GRPC_INVALID_FUNCTION_HANDLE (recorded) unless H is an initialized handle. */
grpc_error_t gox_check_handle(const grpc_function_handle_t *h);
/* Binds H to FUNC on SERVER (a tag, host, host:port; NULL or "": the default server),
 * at PORT_GIVEN when nonzero, with argument transfer mode TRANSFER. */
grpc_error_t gox_handle_init(grpc_function_handle_t *h, const char *server, int port_given, const char *func,
                             int transfer);

#ifdef __cplusplus
}
#endif

#endif /* GOX_H */
