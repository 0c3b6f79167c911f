/* grpc_api.h: the OGF GridRPC standard API (GFD-R.52) over the GridRPC client core, as
 * Ninf-G 5 and GridSolve programs use it. gridrpc.h includes this file, so one
 * `#include <gridrpc.h>` (or Ninf-G's `#include "grpc.h"`) gives both APIs:
 *
 *     grpc_function_handle_t h;
 *     grpc_initialize(argv[1]);                  // a Ninf-G 5 or our own config file
 *     grpc_function_handle_default(&h, "linalg/dmmul");
 *     if (grpc_call(&h, n, A, B, C) != GRPC_NO_ERROR) grpc_perror_np("dmmul");
 *     grpc_function_handle_destruct(&h);
 *     grpc_finalize();
 *
 * Arguments to grpc_call are those of grid_call (gridrpc.h): IN scalars by value, OUT
 * and INOUT scalars by pointer, arrays by pointer. Session ids are the core's call ids.
 * Extensions end in _np. docs/grpc.md has the configuration formats and the mapping of
 * the core's GRID_* codes.
 *
 * Thread safety: every function is MT-safe except grpc_initialize and grpc_finalize,
 * which no other grpc_* call may overlap (as in Ninf-G). A handle may be shared by
 * threads once initialized; an argument stack belongs to one thread at a time.
 */
#ifndef GRPC_API_H
#define GRPC_API_H

#include <stddef.h>

#include "gridrpc.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Every grpc_* result code: name, value, text (grpc_error_string). The standard codes
 * come first, then Ninf-G's extensions; GRPC_LAST_ERROR_CODE is one past the last. */
#define GRPC_ERROR_MAP(XX)                                                                                   \
    XX(NO_ERROR, 0, "no error")                                                                              \
    XX(NOT_INITIALIZED, 1, "GridRPC is not initialized: call grpc_initialize first")                         \
    XX(ALREADY_INITIALIZED, 2, "GridRPC is already initialized")                                             \
    XX(CONFIGFILE_NOT_FOUND, 3, "the configuration file was not found")                                      \
    XX(CONFIGFILE_ERROR, 4, "the configuration file has an error")                                           \
    XX(SERVER_NOT_FOUND, 5, "the server was not found or cannot be reached")                                 \
    XX(FUNCTION_NOT_FOUND, 6, "the function was not found on the server")                                    \
    XX(INVALID_FUNCTION_HANDLE, 7, "the function handle is not valid")                                       \
    XX(INVALID_SESSION_ID, 8, "the session id is not valid")                                                 \
    XX(RPC_REFUSED, 9, "the server refused the call")                                                        \
    XX(COMMUNICATION_FAILED, 10, "communication with the server failed")                                     \
    XX(SESSION_FAILED, 11, "the session failed")                                                             \
    XX(NOT_COMPLETED, 12, "the call has not completed")                                                      \
    XX(NONE_COMPLETED, 13, "none of the calls has completed")                                                \
    XX(OTHER_ERROR_CODE, 14, "an error occurred (grpc_last_error_np says which)")                            \
    XX(UNKNOWN_ERROR_CODE, 15, "unknown error code")                                                         \
    XX(TIMEOUT_NP, 16, "the call timed out")                                                                 \
    XX(CANCELED_NP, 17, "the session was canceled")                                                          \
    XX(INVALID_OBJECT_HANDLE_NP, 18, "the object handle is not valid")

enum grpc_error_code_np {
#define GRPC_ERROR_ENUM_NP_(name, value, text) GRPC_##name = value,
    GRPC_ERROR_MAP(GRPC_ERROR_ENUM_NP_)
#undef GRPC_ERROR_ENUM_NP_
        GRPC_LAST_ERROR_CODE
};

/* An error or status code (GRPC_*). Compare codes by name, never by number. */
typedef int grpc_error_t;
/* A non-blocking call: a positive number, printed with %d. */
typedef int grpc_sessionid_t;
/* No session has this id: wait_any with nothing outstanding, failed-session list empty. */
#define GRPC_SESSIONID_VOID (-1)

/* When grpc_call_async returns (Ninf-G's argument transfer modes, a handle attribute):
 *   WAIT    once the server holds the call's arguments (it has read them whole), so
 *           calls issued one after another reach the server in that order before the
 *           program goes on. The default, as in Ninf-G. Costs one round trip per call.
 *   NOWAIT  as soon as the arguments are written to the connection (pipelined; the
 *           server may not have read them yet): the fastest way to issue many calls.
 *   COPY    as NOWAIT. Both may reuse or free IN buffers once grpc_call_async returns,
 *           as the arguments have been marshalled and written by then; OUT and INOUT
 *           buffers must stay valid until the session is waited on, in every mode. */
typedef enum grpc_argument_transfer_e_np {
    GRPC_ARGUMENT_TRANSFER_WAIT = 1,
    GRPC_ARGUMENT_TRANSFER_NOWAIT = 2,
    GRPC_ARGUMENT_TRANSFER_COPY = 3
} grpc_argument_transfer_t_np;

/* A function bound to a server. A complete type so that programs can declare handles
 * (and arrays of them) anywhere; its members are private (set by the handle_* calls). */
typedef struct grpc_function_handle_s {
    unsigned magic_np;     /* says the handle was initialized and not destructed */
    int port_np;           /* the server's TCP port */
    char host_np[256];     /* the server's host name or address */
    char function_np[512]; /* "module/function" or "function", as given */
    int transfer_np;       /* grpc_argument_transfer_t_np */
} grpc_function_handle_t;

/* An object handle (Ninf-G's remote objects): one object of an IDL class (DefClass)
 * on a server, whose state lives as long as the handle. Complete for the same reason
 * as function handles; its members are private. */
typedef struct grpc_object_handle_s_np {
    unsigned magic_np;                /* says the handle was initialized and not destructed */
    int port_np;                      /* the server's TCP port */
    char host_np[256];                /* the server's host name or address */
    char class_np[512];               /* "module/Class" or "Class", as given */
    struct grid_object_np *object_np; /* the core's object */
} grpc_object_handle_t_np;

/* Handle attributes (Ninf-G's names and values). Set with grpc_handle_attr_set_np,
 * VALUE pointing at: a char string (HOSTNAME, FUNCNAME, JOBMANAGER, SUBJECT,
 * QUEUENAME), an int (PORT, JOBSTARTTIMEOUT, JOBSTOPTIMEOUT, MPI_NCPUS) or a
 * grpc_argument_transfer_t_np (WAIT_ARG_TRANSFER). HOSTNAME is a host, a <SERVER> tag or
 * "host:port" as grpc_function_handle_init takes it; PORT 0 means the configured one.
 * JOBMANAGER, SUBJECT, JOBSTARTTIMEOUT, JOBSTOPTIMEOUT, QUEUENAME and MPI_NCPUS are
 * kept and returned but have no effect here (gridrpcd servers run already). */
typedef enum grpc_handle_attr_name_e_np {
    GRPC_HANDLE_ATTR_HOSTNAME,
    GRPC_HANDLE_ATTR_PORT,
    GRPC_HANDLE_ATTR_JOBMANAGER,
    GRPC_HANDLE_ATTR_SUBJECT,
    GRPC_HANDLE_ATTR_FUNCNAME,
    GRPC_HANDLE_ATTR_JOBSTARTTIMEOUT,
    GRPC_HANDLE_ATTR_JOBSTOPTIMEOUT,
    GRPC_HANDLE_ATTR_WAIT_ARG_TRANSFER,
    GRPC_HANDLE_ATTR_QUEUENAME,
    GRPC_HANDLE_ATTR_MPI_NCPUS
} grpc_handle_attr_name_t_np;

/* Its members are private: use the grpc_handle_attr_*_np calls. */
typedef struct grpc_handle_attr_s_np {
    unsigned magic_np;
    char *hostname_np, *funcname_np, *jobmanager_np, *subject_np, *queuename_np; /* malloc'd or NULL */
    int port_np, job_start_timeout_np, job_stop_timeout_np, mpi_ncpus_np;
    grpc_argument_transfer_t_np transfer_np;
} grpc_handle_attr_t_np;

/* An argument stack (both spellings below use the same type): one pointer per argument,
 * pushed in the order of the function's parameters. Each element is what grpc_call
 * takes for that parameter, except that IN scalars are passed by address
 * (push &n, not n): IN strings and filenames as char *, OUT/INOUT scalars and arrays as
 * pointers. */
typedef struct grpc_arg_stack_s grpc_arg_stack_t;

/* ---- Initializing and finalizing */

/* Reads CONFIG_FILE (our format or Ninf-G 5's, docs/grpc.md). NULL or "" falls back to
 * $NG_CONFIG_FILE, then $HOME/.ngconf, and else to our own settings (GRIDRPC_SERVER,
 * GRIDRPC_CONFIG, ~/.gridrpc.conf). GRPC_CONFIGFILE_NOT_FOUND, GRPC_CONFIGFILE_ERROR
 * (grpc_last_error_np says where), GRPC_ALREADY_INITIALIZED. */
grpc_error_t grpc_initialize(const char *config_file);
/* Cancels the sessions still running, forgets every session and the failed-session
 * list. grpc_initialize may be called again afterwards. */
grpc_error_t grpc_finalize(void);

/* ---- Function handles */

/* Binds HANDLE to FUNCTION ("module/function" or "function") on the default server:
 * the server the configuration's FUNCTION_INFO names for it, else the first server of
 * the configuration file, else our own default (GRIDRPC_SERVER...). The server is
 * contacted once to check that it offers the function (the interface is cached). */
grpc_error_t grpc_function_handle_default(grpc_function_handle_t *handle, const char *function);
/* Binds HANDLE to FUNCTION on SERVER: a <SERVER> tag or hostname of the configuration
 * file (its port is taken from there), "host:port", or a plain host (port from
 * <SERVER_DEFAULT>, else 7000). NULL or "" is the default server. */
grpc_error_t grpc_function_handle_init(grpc_function_handle_t *handle, const char *server,
                                       const char *function);
grpc_error_t grpc_function_handle_destruct(grpc_function_handle_t *handle);
/* Binds HANDLE as ATTR says: FUNCNAME (required) on HOSTNAME (a tag, host or
 * host:port; the default server when unset) at PORT (when nonzero), in its argument
 * transfer mode. */
grpc_error_t grpc_function_handle_init_with_attr_np(grpc_function_handle_t *handle,
                                                    grpc_handle_attr_t_np *attr);
/* Stores HANDLE's server, port, function and transfer mode in ATTR (initialized, or
 * not: it is initialized here; destruct it afterwards). */
grpc_error_t grpc_function_handle_get_attr_np(grpc_function_handle_t *handle, grpc_handle_attr_t_np *attr);

/* ---- Handle attributes */

/* Sets ATTR to the defaults: the default server, its configured port, no function,
 * GRPC_ARGUMENT_TRANSFER_WAIT. */
grpc_error_t grpc_handle_attr_initialize_np(grpc_handle_attr_t_np *attr);
/* Frees what ATTR holds; initialize it again to reuse it. */
grpc_error_t grpc_handle_attr_destruct_np(grpc_handle_attr_t_np *attr);
/* Sets attribute NAME from the value VALUE points at (copied). GRPC_OTHER_ERROR_CODE for
 * an unknown name, a NULL value, or a value out of range (a transfer mode other than the
 * three, a negative port or timeout, fewer than 1 CPU). */
grpc_error_t grpc_handle_attr_set_np(grpc_handle_attr_t_np *attr, grpc_handle_attr_name_t_np name,
                                     void *value);
/* Stores in *VALUE a malloc'd copy of attribute NAME (a char string, or an int or
 * grpc_argument_transfer_t_np to read through a pointer; NULL for an unset string);
 * free it with grpc_handle_attr_release_np. */
grpc_error_t grpc_handle_attr_get_np(grpc_handle_attr_t_np *attr, grpc_handle_attr_name_t_np name,
                                     void **value);
grpc_error_t grpc_handle_attr_release_np(void *value);

/* ---- Listing what a server offers */

/* The functions SERVER offers ("module/function" each, from its LIST): SERVER is what
 * grpc_function_handle_init takes (a <SERVER> tag, a host, host:port; NULL or "": the
 * default server). *NAMES receives a malloc'd array of *COUNT names ended by a NULL
 * entry: free it with grpc_free_functions_np. The command line does the same:
 * `gridrpc ls --server HOST:PORT`. */
grpc_error_t grpc_list_functions_np(const char *server, char ***names, size_t *count);
void grpc_free_functions_np(char **names);
/* Stores in *HANDLE the handle SESSION was started with. */
grpc_error_t grpc_get_handle(grpc_function_handle_t **handle, grpc_sessionid_t session);

/* ---- Calls
 *
 * grpc_call and grpc_call_async are macros that count their arguments, so a call with
 * too few or too many is an error instead of a crash; the functions behind them exist
 * under the same names for code that takes their address (#undef grpc_call). */

grpc_error_t(grpc_call)(grpc_function_handle_t *handle, ...);
grpc_error_t(grpc_call_async)(grpc_function_handle_t *handle, grpc_sessionid_t *session, ...);
/* The functions behind the macros: NARGS counts every argument of the macro call. */
grpc_error_t grpc_call_counted_np(int nargs, grpc_function_handle_t *handle, ...);
grpc_error_t grpc_call_async_counted_np(int nargs, grpc_function_handle_t *handle, grpc_sessionid_t *session,
                                        ...);
#define grpc_call(...) grpc_call_counted_np(GRID_NARGS_NP_(__VA_ARGS__), __VA_ARGS__)
#define grpc_call_async(...) grpc_call_async_counted_np(GRID_NARGS_NP_(__VA_ARGS__), __VA_ARGS__)

/* Argument stacks, Ninf-G's spelling. new returns NULL before grpc_initialize or when
 * MAXSIZE < 0; push returns GRPC_OTHER_ERROR_CODE when the stack is full; pop returns
 * the last pushed element, or NULL when empty. */
grpc_arg_stack_t *grpc_arg_stack_new(int maxsize);
grpc_error_t grpc_arg_stack_push_arg(grpc_arg_stack_t *stack, void *arg);
void *grpc_arg_stack_pop_arg(grpc_arg_stack_t *stack);
grpc_error_t grpc_arg_stack_destruct(grpc_arg_stack_t *stack);
grpc_error_t grpc_call_arg_stack(grpc_function_handle_t *handle, grpc_arg_stack_t *stack);
grpc_error_t grpc_call_arg_stack_async(grpc_function_handle_t *handle, grpc_sessionid_t *session,
                                       grpc_arg_stack_t *stack);
/* The same stacks, GFD-R.52 draft / DIET spelling. pop stores NULL in *ARG when empty. */
grpc_arg_stack_t *grpc_stack_create(size_t maxsize);
grpc_error_t grpc_stack_push(grpc_arg_stack_t *stack, void *arg);
grpc_error_t grpc_stack_pop(grpc_arg_stack_t *stack, void **arg);
grpc_error_t grpc_stack_destruct(grpc_arg_stack_t *stack);
grpc_error_t grpc_call_argstack(grpc_function_handle_t *handle, grpc_arg_stack_t *stack);
grpc_error_t grpc_call_argstack_async(grpc_function_handle_t *handle, grpc_sessionid_t *session,
                                      grpc_arg_stack_t *stack);

/* ---- Object handles (Ninf-G's remote objects; docs/grpc.md)
 *
 * grpc_object_handle_init_np creates an object of CLASS ("module/Class", as the IDL's
 * Module and DefClass name it) on SERVER (as for grpc_function_handle_init), running
 * the class's _initialize; _default_np uses the default server. The object's state
 * persists between grpc_invoke_np calls on the handle; several handles are several
 * independent objects. grpc_object_handle_destruct_np runs _finalize and ends the
 * object; so does losing the connection to its server. Methods take their arguments
 * exactly as grpc_call does; invocations of one object run one at a time in the order
 * they were made. An asynchronous invocation is a session like grpc_call_async's. */
grpc_error_t grpc_object_handle_default_np(grpc_object_handle_t_np *handle, const char *class_name);
grpc_error_t grpc_object_handle_init_np(grpc_object_handle_t_np *handle, const char *server,
                                        const char *class_name);
grpc_error_t grpc_object_handle_destruct_np(grpc_object_handle_t_np *handle);
/* With a handle attribute: HOSTNAME (and PORT) the server, FUNCNAME the class. */
grpc_error_t grpc_object_handle_init_with_attr_np(grpc_object_handle_t_np *handle,
                                                  grpc_handle_attr_t_np *attr);
/* Fills ATTR (initialized here; destruct it after) with the handle's server and class. */
grpc_error_t grpc_object_handle_get_attr_np(grpc_object_handle_t_np *handle, grpc_handle_attr_t_np *attr);
/* N objects at once (all or none), and their end. */
grpc_error_t grpc_object_handle_array_init_np(grpc_object_handle_t_np *handles, size_t n, const char *server,
                                              const char *class_name);
grpc_error_t grpc_object_handle_array_default_np(grpc_object_handle_t_np *handles, size_t n,
                                                 const char *class_name);
grpc_error_t grpc_object_handle_array_destruct_np(grpc_object_handle_t_np *handles, size_t n);
/* The handle SESSION (from grpc_invoke_async_np) was started with, while it lives. */
grpc_error_t grpc_object_handle_get_from_session_np(grpc_object_handle_t_np **handle,
                                                    grpc_sessionid_t session);
/* GRPC_NO_ERROR for an initialized handle, else GRPC_INVALID_OBJECT_HANDLE_NP. */
grpc_error_t grpc_object_handle_is_ready_np(grpc_object_handle_t_np *handle);
grpc_error_t(grpc_invoke_np)(grpc_object_handle_t_np *handle, const char *method, ...);
grpc_error_t(grpc_invoke_async_np)(grpc_object_handle_t_np *handle, const char *method,
                                   grpc_sessionid_t *session, ...);
/* The functions behind the macros: NARGS counts every argument of the macro call. */
grpc_error_t grpc_invoke_counted_np(int nargs, grpc_object_handle_t_np *handle, const char *method, ...);
grpc_error_t grpc_invoke_async_counted_np(int nargs, grpc_object_handle_t_np *handle, const char *method,
                                          grpc_sessionid_t *session, ...);
#define grpc_invoke_np(...) grpc_invoke_counted_np(GRID_NARGS_NP_(__VA_ARGS__), __VA_ARGS__)
#define grpc_invoke_async_np(...) grpc_invoke_async_counted_np(GRID_NARGS_NP_(__VA_ARGS__), __VA_ARGS__)
/* Argument stacks, as for grpc_call_arg_stack. */
grpc_error_t grpc_invoke_arg_stack_np(grpc_object_handle_t_np *handle, const char *method,
                                      grpc_arg_stack_t *stack);
grpc_error_t grpc_invoke_arg_stack_async_np(grpc_object_handle_t_np *handle, const char *method,
                                            grpc_sessionid_t *session, grpc_arg_stack_t *stack);

/* ---- Sessions
 *
 * A session stays queryable (grpc_get_error, grpc_get_handle) after it is waited on,
 * until grpc_finalize. A wait on a failed session returns GRPC_SESSION_FAILED and
 * grpc_get_error gives the reason (GRPC_CANCELED_NP for a cancelled one); failed
 * sessions seen by any wait are also listed for grpc_get_failed_sessionid. */

/* GRPC_NO_ERROR when SESSION has completed, GRPC_NOT_COMPLETED while it runs. Replies
 * are collected in the background, so polling in a loop sees completions. */
grpc_error_t grpc_probe(grpc_sessionid_t session);
/* Stores in *DONE one completed session of IDS (GRPC_NO_ERROR), else
 * GRPC_SESSIONID_VOID (GRPC_NONE_COMPLETED). */
grpc_error_t grpc_probe_or(grpc_sessionid_t *ids, size_t n, grpc_sessionid_t *done);
/* A queued call is dropped by the server, a running one is flagged (functions may poll
 * grpc_is_canceled_np); the session then fails with GRPC_CANCELED_NP. Cancelling a
 * completed session changes nothing. */
grpc_error_t grpc_cancel(grpc_sessionid_t session);
/* Cancels every session not yet waited on. */
grpc_error_t grpc_cancel_all(void);
grpc_error_t grpc_wait(grpc_sessionid_t session);
/* Waits for all N sessions; GRPC_SESSION_FAILED when one of them failed. */
grpc_error_t grpc_wait_and(grpc_sessionid_t *ids, size_t n);
/* Waits for one of the N sessions and stores it in *DONE. */
grpc_error_t grpc_wait_or(grpc_sessionid_t *ids, size_t n, grpc_sessionid_t *done);
/* Waits for every session not yet waited on. */
grpc_error_t grpc_wait_all(void);
/* Waits for any session not yet waited on and stores it in *DONE; with none
 * outstanding, *DONE = GRPC_SESSIONID_VOID and GRPC_NO_ERROR. */
grpc_error_t grpc_wait_any(grpc_sessionid_t *done);

/* ---- Errors */

/* SESSION's error: GRPC_NO_ERROR while it runs or when it succeeded. */
grpc_error_t grpc_get_error(grpc_sessionid_t session);
/* Takes the oldest session off the failed-session list into *ID (GRPC_SESSIONID_VOID
 * when the list is empty). */
grpc_error_t grpc_get_failed_sessionid(grpc_sessionid_t *id);
/* A description of CODE; unknown codes get GRPC_UNKNOWN_ERROR_CODE's. The strings are
 * static, except GRPC_OTHER_ERROR_CODE's right after a grpc_* call of the calling
 * thread failed with it: then it is that failure's message ("argument 2 ('in', IN
 * double array) is NULL but must hold 3 elements (grpc_last_error_np)"), valid until
 * the thread's next call of grpc_error_string. */
char *grpc_error_string(grpc_error_t code);
/* The static name of CODE ("GRPC_SESSION_FAILED"). */
const char *grpc_error_name_np(grpc_error_t code);
/* The code of the calling thread's last grpc_* call (Ninf-G's grpc_get_last_error_np). */
grpc_error_t grpc_get_last_error_np(void);
/* The calling thread's last failure, saying what happened and what to do ("" after a
 * success); valid until the thread's next grpc_* call. */
const char *grpc_last_error_np(void);
/* The detailed message of SESSION's failure ("" if none), valid until grpc_finalize. */
const char *grpc_session_message_np(grpc_sessionid_t session);
/* Prints "PREFIX: " (when PREFIX is neither NULL nor "") and the thread's last failure
 * on stderr. */
void grpc_perror_np(const char *prefix);

#ifdef __cplusplus
}
#endif

#endif /* GRPC_API_H */
