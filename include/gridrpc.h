/* gridrpc.h: the public C API of GridRPC (the Ninf-style grid_* calls).
 *
 * A program calls a remote function as it would call the local one:
 *
 *     if (grid_call("linalg/dmmul", n, A, B, C) != GRID_OK)
 *         fprintf(stderr, "dmmul: %s\n", grid_last_error());
 *
 * Arguments follow the function's IDL, parameter by parameter:
 *   IN scalar              its value (char, short and int as int, float as double,
 *                          long as long, longlong as long long, scomplex and dcomplex
 *                          by value, string as const char *)
 *   OUT or INOUT scalar    a pointer to the caller's variable (an out string: a char **
 *                          that receives a malloc'd copy the caller frees)
 *   array, any mode        a pointer to its first element, C order (NULL when empty)
 *   WORK array             NULL (scratch space lives on the server)
 *   filename               the path of a local file (IN: sent; OUT: written)
 * grid_call is a macro that counts its arguments, so a call with too few or too many
 * is an error (GRID_ERR_ARGS) instead of a crash.
 *
 * Which server: a name may be "function", "module/function" or
 * "gridrpc://host:port/module/function". A URL goes to its server. Without a host, the
 * metaserver chooses when one is configured (GRIDRPC_METASERVER=host:port, a
 * "metaserver" line, grid_set_metaserver_np: docs/metaserver-client.md), else the server
 * is the one set by GRIDRPC_SERVER=host:port, else the first "server" line of the file
 * named by GRIDRPC_CONFIG, else of ~/.gridrpc.conf (docs/api.md).
 *
 * Every function here is MT-safe: threads may call concurrently; each call uses a
 * connection of its own from a pool.
 */
#ifndef GRIDRPC_H
#define GRIDRPC_H

#include <stdarg.h>
#include <stddef.h>

#include "gridrpc_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Error codes. The same numbers travel in the protocol's ERROR messages. */
#define GRID_ERROR_MAP(XX)                                                                                   \
    XX(OK, 0, "no error")                                                                                    \
    XX(ERR_CONNECT, 1, "cannot connect to the server")                                                       \
    XX(ERR_NOT_FOUND, 2, "no such function on the server")                                                   \
    XX(ERR_ARGS, 3, "wrong arguments for the function")                                                      \
    XX(ERR_LIMIT, 4, "a size limit was exceeded")                                                            \
    XX(ERR_PROTOCOL, 5, "malformed or unexpected message")                                                   \
    XX(ERR_CONN_LOST, 6, "the connection to the server was lost")                                            \
    XX(ERR_TIMEOUT, 7, "timed out")                                                                          \
    XX(ERR_SHUTDOWN, 8, "the server is shutting down")                                                       \
    XX(ERR_CONFIG, 9, "bad configuration")                                                                   \
    XX(ERR_NOMEM, 10, "out of memory")                                                                       \
    XX(ERR_CANCELED, 11, "the call was canceled")                                                            \
    XX(ERR_STALE, 12, "the function's interface changed on the server")                                      \
    XX(ERR_FAILED, 13, "the remote function failed")                                                         \
    XX(ERR_BUSY, 14, "the server is overloaded")                                                             \
    XX(ERR_IO, 15, "a local file could not be read or written")                                              \
    XX(ERR_INTERNAL, 16, "internal error")                                                                   \
    XX(ERR_CRASHED, 17, "the remote function crashed")                                                       \
    XX(ERR_AUTH, 18, "the peer refused the credentials (key, token or role)")

enum grid_error_code {
#define GRID_ERROR_ENUM_(name, value, text) GRID_##name = value,
    GRID_ERROR_MAP(GRID_ERROR_ENUM_)
#undef GRID_ERROR_ENUM_
        GRID_ERROR_COUNT_NP
};

/* Returns the library's version, "MAJOR.MINOR.PATCH". */
const char *gridrpc_version(void);

/* Returns a static description of CODE ("cannot connect to the server"). */
const char *grid_error_string(int code);
/* Returns a static name of CODE ("GRID_ERR_CONNECT"). */
const char *grid_error_name(int code);
/* Returns the detailed message of the calling thread's last failed call, saying what
 * happened and what to do ("cannot connect to 127.0.0.1:7000: Connection refused; is
 * gridrpcd running there? (GRIDRPC_SERVER)"); "" when the last call succeeded. The
 * string stays valid until the thread's next call into the library. */
const char *grid_last_error(void);
/* Sets the calling thread's last error message (what grid_last_error returns; NULL or
 * "" clears it), for layers over this API that find errors of their own: the OGF
 * grpc_* calls and the language bindings keep their messages here, so a thread has one
 * last error whichever API it called last. */
void grid_set_last_error_np(const char *msg);

/* Calls the remote function NAME with its arguments (see above). Blocks until the
 * results are in the caller's buffers or the call failed. Returns GRID_OK or an error
 * code; on error, OUT buffers may be partly written. */
#define grid_call(...) grid_call_counted_np(GRID_NARGS_NP_(__VA_ARGS__), __VA_ARGS__)
/* The function behind grid_call: NARGS counts NAME and every argument after it. */
int grid_call_counted_np(int nargs, const char *name, ...);
/* grid_call for callers that cannot count (their own variadic wrappers, bindings):
 * trusts the descriptor for the number of arguments. */
int grid_call_uncounted_np(const char *name, ...);
/* grid_call for layers with variadic entry points of their own (the OGF grpc_call,
 * wrappers that forward their '...'): the arguments after the name are in AP, as
 * grid_call takes them. NARGS is how many the caller passed, checked against the
 * function before any is read; -1: unknown, the function's interface says how many to
 * read. AP is read through a copy: the caller still owns it and calls va_end. */
int grid_call_va_np(const char *name, int nargs, va_list ap);

/* Timeouts in seconds for this process (0: none). connect applies to opening a
 * connection; call to a whole call (send, remote run, receive). Defaults come from
 * GRIDRPC_CONNECT_TIMEOUT (10) and GRIDRPC_TIMEOUT (0) or the configuration file. */
int grid_set_timeouts_np(double connect_seconds, double call_seconds);
/* grid_set_timeouts_np for layers with settings of their own (the OGF configuration
 * file): a negative value leaves that timeout as configured, and SOURCE names the
 * setting in timeout messages ("'session_timeout' in client.conf line 7"). */
int grid_set_timeouts_from_np(double connect_seconds, double call_seconds, const char *source);
/* Undoes grid_set_timeouts_np: the timeouts are again those of the environment or the
 * configuration file. */
void grid_clear_timeouts_np(void);
/* Sets the token sent in HELLO for the process, over GRIDRPC_TOKEN and the
 * configuration file; NULL gives the configured one back. GRID_ERR_ARGS for a token
 * longer than the protocol's 1024 bytes. */
int grid_set_token_np(const char *token);
/* Uses the keys of the key file PATH for the process, over GRIDRPC_KEY_FILE and the
 * configuration file's 'key_file': every new connection then proves the file's first
 * key to the server and checks that the server holds it too (docs/api.md
 * "Authentication"); the key never crosses the wire. NULL gives the configured keys
 * back; "" connects without a key. GRID_ERR_CONFIG (the setting unchanged) for a file
 * that cannot be read, holds no valid key, or may be read by others (the message says
 * the chmod to run). Connections already open keep what they proved. */
int grid_set_key_file_np(const char *path);
/* Sets the file of CA certificates (PEM) that gridrpcs:// servers' certificates must be
 * signed by, for the process, over GRIDRPC_TLS_CA and the configuration file's 'tls_ca'
 * line; NULL gives the configured one back (none: the system's CA store). The file is
 * loaded at once: GRID_ERR_CONFIG when it cannot be read or holds no certificate. A
 * server named gridrpcs://host:port must present a certificate for HOST (a name, or an
 * IP address for a literal address), signed by one of these CAs. */
int grid_set_tls_ca_np(const char *path);
/* The timeouts in effect (as grid_set_timeouts_np takes them). GRID_ERR_CONFIG when the
 * environment or configuration file is malformed (grid_last_error says where); the
 * outputs are then untouched. Either pointer may be NULL. */
int grid_get_timeouts_np(double *connect_seconds, double *call_seconds);
/* The default server (GRIDRPC_SERVER, else the configuration file's "server" line):
 * HOST receives its name (HOSTSIZE bytes at most, "" and *PORT 0 when none is
 * configured). GRID_ERR_CONFIG for a malformed configuration, GRID_ERR_ARGS when HOST
 * is NULL or too small. */
int grid_get_server_np(char *host, size_t hostsize, int *port);

/* ---- the metaserver (docs/metaserver-client.md) */
/* Routes plain function names through the metaserver at HOST:PORT for the process, over
 * GRIDRPC_METASERVER and the configuration file; HOST "" routes none (plain names go to
 * the default server); NULL gives the configured one back. GRID_ERR_ARGS for a bad
 * port or a host name longer than 255 bytes. */
int grid_set_metaserver_np(const char *host, int port);
/* The metaserver in effect (as grid_get_server_np: "" and *PORT 0 when none). */
int grid_get_metaserver_np(char *host, size_t hostsize, int *port);
/* The scheduling policy the process asks the metaserver for: "mct", "least-load" or
 * "round-robin"; NULL (or "default"): the metaserver's own (GRIDRPC_SCHEDULER sets the
 * start value). GRID_ERR_ARGS for another name, listing the accepted ones. */
int grid_set_scheduler_np(const char *policy);
/* Flags for the calling thread's next calls (grid_set_call_flags_np). */
#define GRID_CALL_NO_RETRY_NP 1u /* never run the call again on another server after a failure */
/* Sets the calling thread's call flags (an OR of GRID_CALL_*_NP; 0: none) for every
 * call it starts until changed. GRID_ERR_ARGS for an unknown flag. */
int grid_set_call_flags_np(unsigned flags);
/* The server ("host:port") that ran the calling thread's last call (grid_call, or the
 * call grid_wait last waited for); "" before any. GRID_ERR_ARGS when BUF is NULL or
 * smaller than the name needs. */
int grid_last_server_np(char *buf, size_t n);

/* The functions a server serves, "module/function", sorted, as `gridrpc ls` lists
 * them: SERVER is "host:port" (or "gridrpc://host:port"); NULL or "": the configured
 * metaserver (the functions of every server registered with it), else the configured
 * server. *NAMES receives a malloc'd array of *COUNT malloc'd strings, ended by a NULL
 * entry: free it with grid_free_functions_np. One LIST round trip; GRID_ERR_CONFIG when
 * nothing is configured, GRID_ERR_CONNECT etc. as calls. On failure *NAMES is NULL and
 * *COUNT 0. */
int grid_list_functions_np(const char *server, char ***names, int *count);
/* Frees what grid_list_functions_np returned (NULL is fine). */
void grid_free_functions_np(char **names);

/* Closes every pooled connection and forgets every cached descriptor and setting, so
 * the environment is read again. Calls may be made afterwards (they reconnect); no
 * call may be in flight in another thread while it runs. */
void grid_reset_np(void);

/* What the client did so far in this process: descriptors fetched from servers
 * (GET_DESCRIPTOR round trips), connections opened, and calls completed. */
typedef struct grid_stats_np {
    long descriptor_fetches;
    long connections_opened;
    long calls;
    /* Bytes the client sent and received on all its connections (servers and metaserver):
     * calls, remote data, descriptors; not the background bandwidth probe's payloads. */
    unsigned long long bytes_sent, bytes_received;
} grid_stats_np;
void grid_get_stats_np(grid_stats_np *out);

/* Where the calling thread's last synchronous call (grid_call and its _va_np, _argv_np
 * and uncounted forms) spent its time, for studies of many clients (bench/lanwan.sh).
 * Times are CLOCK_MONOTONIC in ns on this host; queue_ns and run_ns are the server's
 * own (sent in RESULT). request_id and local match the server's log line for the call
 * (`call LOCAL FUNCTION id=ID ... at=NS`), whose at= is the enqueue on the server's
 * clock: with the client's sent_ns and done_ns it bounds the clock skew of two hosts. */
typedef struct grid_call_times_np {
    unsigned long long request_id;          /* the CALL's id on its connection */
    char local[64];                         /* this end of the connection, "ip:port" ("[ip]:port" v6) */
    char server[280];                       /* the server that answered, "host:port" */
    long long sent_ns;                      /* the CALL started to go out */
    long long reply_ns;                     /* the reply's header arrived */
    long long done_ns;                      /* the result was in the caller's buffers */
    long long queue_ns, run_ns;             /* the server's queue wait and run time */
    unsigned long long bytes_out, bytes_in; /* the CALL's and the RESULT's size on the wire */
} grid_call_times_np;
/* GRID_OK and *OUT filled, or GRID_ERR_CONFIG when this thread's last synchronous call
 * failed or none was made (*OUT zeroed). */
int grid_last_call_times_np(grid_call_times_np *out);

/* ---- Asynchronous calls
 *
 * grid_call_async starts a call and returns at once with its id (> 0), or a negative
 * error code (-GRID_ERR_*) when the call could not be started (grid_last_error says
 * why). Many calls may be in flight at once; calls to one server share one connection
 * (pipelined). The caller's buffers must stay valid until the call is waited on. A
 * call's record stays queryable (grid_call_error_np) after it is waited on, until
 * grid_forget_np or grid_reset_np. All of these are MT-safe. */

#define GRID_ID_NONE 0

#define grid_call_async(...) grid_call_async_counted_np(GRID_NARGS_NP_(__VA_ARGS__), __VA_ARGS__)
int grid_call_async_counted_np(int nargs, const char *name, ...);
/* The va_list form (see grid_call_va_np). */
int grid_call_async_va_np(const char *name, int nargs, va_list ap);
/* The argument-vector form (see grid_call_argv_np). */
int grid_call_async_argv_np(const char *name, int nargs, void *const *argv);

/* Waits for call ID; returns its result code (GRID_ERR_ARGS for an unknown id). */
int grid_wait(int id);
/* Waits for every call not yet waited on; GRID_OK, or the first failure's code. */
int grid_wait_all(void);
/* Waits for any call not yet waited on and stores its id in *ID; returns its code.
 * With none outstanding: *ID = GRID_ID_NONE and GRID_OK. */
int grid_wait_any(int *id);
/* Waits for all N calls of IDS; GRID_OK, or the first failure's code. */
int grid_wait_and(const int *ids, int n);
/* Waits for any of the N calls of IDS; stores it in *DONE and returns its code. */
int grid_wait_or(const int *ids, int n, int *done);
/* 1 when call ID has finished, 0 while it runs, -GRID_ERR_ARGS for an unknown id.
 * Replies are collected in the background: polling needs no other call, and a reply
 * that has already arrived is handled by the probe itself when the background reader
 * has not got to it yet (the probe never waits for the network). */
int grid_probe(int id);
/* Waits until the server holds call ID's arguments: it has read the whole CALL (it
 * answers a PING sent after it), or the call ended, or its call timeout passed. Costs
 * one round trip; grid_call_async itself returns once the CALL is written to the
 * socket, without waiting (pipelined). The OGF layer calls this for handles in
 * GRPC_ARGUMENT_TRANSFER_WAIT mode. GRID_OK, or GRID_ERR_ARGS for an unknown id; the
 * call's own result comes from grid_wait. */
int grid_wait_received_np(int id);
/* Cancels call ID: a queued call is dropped by the server, a running one is flagged
 * (long-running functions may poll grpc_is_canceled_np). When grid_cancel returns, the
 * call will never write into the caller's buffers, and waiting on it returns
 * GRID_ERR_CANCELED. Cancelling a finished call changes nothing and returns GRID_OK. */
int grid_cancel(int id);
/* The result code of call ID (GRID_OK while it runs; GRID_ERR_ARGS if unknown). */
int grid_call_error_np(int id);
/* The detailed message of call ID's failure ("" if none), valid until it is forgotten. */
const char *grid_call_message_np(int id);
/* 1 if call ID has been waited on (by any grid_wait* call), else 0. */
int grid_call_waited_np(int id);
/* Forgets the record of finished call ID. */
void grid_forget_np(int id);

/* Ends the synchronous calls in progress (grid_call and its forms, in every thread) as
 * canceled: each sends CANCEL to its server, which stops the function (its executor is
 * ended if it does not poll grpc_is_canceled_np within a short grace), and returns
 * GRID_ERR_CANCELED at once. Async-signal-safe: meant for a SIGINT handler, so that
 * Ctrl-C stops the remote work and not only the program. Calls that have not yet
 * connected, and asynchronous calls (grid_cancel), are not affected. */
void grid_interrupt_np(void);

/* ---- Transactions (Ninf's Ninf_transaction_begin/_end; docs/api.md "Transactions")
 *
 * Between grid_transaction_begin and grid_transaction_end, grid_call (and its _va_np,
 * _argv_np and uncounted forms, and the OGF grpc_call and grpc_call_arg_stack) records
 * the call and returns GRID_OK at once: the function is resolved and its interface
 * fetched, scalars and strings are copied, array pointers are kept, nothing runs. The
 * arrays are read at grid_transaction_end, as Ninf did: the caller must not free them
 * before, and what they hold at the end is what the calls get. grid_transaction_end
 * builds the data-dependency graph from the bytes each array argument touches (an
 * output of one call that a later call reads, overlapping ranges counted), runs every
 * call whose inputs are ready at once (the metaserver places each one, so independent
 * calls run on different servers; without one the configured server runs them all),
 * reruns on another server a call whose server fails, and leaves the caller's buffers
 * and OUT scalars exactly as if the calls had run one by one in order. INOUT scalars are
 * taken when recorded (a scalar output is not an input of a later call of the same
 * transaction). A failed transaction leaves the caller's memory untouched and its error
 * names the call ("call 3 of 5 (linalg/dgesl): ...") and every server that failed it.
 * Asynchronous calls and object methods inside a transaction are refused. Per thread:
 * each thread may have one transaction open. */
int grid_transaction_begin(void);
/* Runs the recorded calls; GRID_OK when all succeeded. GRID_ERR_ARGS when none is open. */
int grid_transaction_end(void);
/* Drops the open transaction: nothing runs, no buffer is touched. */
int grid_transaction_abort_np(void);
/* 1 when the calling thread has a transaction open, else 0. */
int grid_transaction_active_np(void);
/* What the calling thread's last grid_transaction_end did. */
typedef struct grid_transaction_stats_np {
    long calls;      /* calls recorded */
    long raw;        /* pairs of calls with a read-after-write dependency (overlapping bytes) */
    long war;        /* ... write after read (resolved by staging: they do not wait) */
    long waw;        /* ... write after write (the later write lands last) */
    long reruns;     /* calls run again after their server failed or their kept inputs were lost */
    long by_ref;     /* inputs taken server to server from an earlier call's kept output */
    long recomputed; /* calls run again because an output they kept was lost with its server */
    long servers;    /* distinct servers that ran a call */
    double seconds;
} grid_transaction_stats_np;
int grid_transaction_get_stats_np(grid_transaction_stats_np *out);

/* ---- Remote objects (Ninf-G's DefClass; docs/api.md)
 *
 * An object of an IDL class lives on one server and keeps its state between the
 * invocations of its methods. It lives as long as its handle: grid_object_destroy_np
 * ends it (after its _finalize), and so does the loss of the handle's connection, which
 * the handle holds open for the object alone. Methods take their arguments exactly as
 * grid_call does. Invocations of one object run one at a time, in the order they were
 * made; different objects run at once. All of these are MT-safe. */
typedef struct grid_object_np grid_object_np;

/* Creates an object of class CLS ("module/Class", or "Class" when unique) on SERVER
 * ("host:port"; NULL or "": the default server); its _initialize runs first. */
int grid_object_create_np(grid_object_np **obj, const char *server, const char *cls);
/* Invokes METHOD of OBJ and waits for it: grid_object_invoke_np(obj, "method", args...)
 * counts its arguments as grid_call does. */
#define grid_object_invoke_np(...) grid_object_invoke_counted_np(GRID_NARGS_NP_(__VA_ARGS__), __VA_ARGS__)
int grid_object_invoke_counted_np(int nargs, grid_object_np *obj, const char *method, ...);
/* The same, arguments as for grid_call_va_np. */
int grid_object_invoke_va_np(grid_object_np *obj, const char *method, int nargs, va_list ap);
int grid_object_invoke_argv_np(grid_object_np *obj, const char *method, int nargs, void *const *argv);
/* Starts METHOD of OBJ: returns a call id for grid_wait and the rest (> 0), or
 * -GRID_ERR_*. The object must outlive the call. */
#define grid_object_invoke_async_np(...)                                                                     \
    grid_object_invoke_async_counted_np(GRID_NARGS_NP_(__VA_ARGS__), __VA_ARGS__)
int grid_object_invoke_async_counted_np(int nargs, grid_object_np *obj, const char *method, ...);
int grid_object_invoke_async_va_np(grid_object_np *obj, const char *method, int nargs, va_list ap);
int grid_object_invoke_async_argv_np(grid_object_np *obj, const char *method, int nargs, void *const *argv);
/* Destroys OBJ on its server (its _finalize runs) and frees the handle. */
int grid_object_destroy_np(grid_object_np *obj);
/* "gridrpc://host:port/module/Class": with ".method" appended, the name of a method's
 * interface for grid_describe_np. */
const char *grid_object_url_np(const grid_object_np *obj);

/* ---- Remote data (docs/api.md "Remote data")
 *
 * An array put on a server once and used by many calls: a handle is passed wherever a
 * function takes that array (IN, OUT or INOUT; grid_call, grid_call_async, their _va and
 * _argv forms, grpc_call*), in place of the array's pointer. IN: the call reads the
 * server's copy (copied there server to server first when it lies on another server);
 * OUT and INOUT: the result stays on the call's server as the handle, and does not come
 * back until grid_data_get_np. Type and size are checked against the function's
 * interface. Handles belong to the process's session: grid_reset_np and grpc_finalize
 * end it (the servers free the data; the handles stay allocated but refuse use until
 * grid_data_free_np), and a server frees the data of a client that vanished after its
 * grace period. All of these are MT-safe. */
typedef struct grid_data_np grid_data_np;
/* Puts COUNT elements of TYPE (GRID_TYPE_CHAR ... GRID_TYPE_DCOMPLEX) from BUF on a
 * server; *H gets the handle (NULL on failure). WHERE: "host:port", "gridrpc://host:port",
 * a function name (the server a call of it would go to), or NULL: the default server;
 * under a metaserver the data then waits on the client until the first call using it,
 * and goes to that call's server. */
int grid_data_put_np(grid_data_np **h, const char *where, int type, size_t count, const void *buf);
/* A handle with no data yet, for an OUT argument whose result stays where the call ran. */
int grid_data_new_np(grid_data_np **h, int type, size_t count);
/* Copies the data into BUF (COUNT must equal the handle's count). */
int grid_data_get_np(grid_data_np *h, void *buf, size_t count);
/* Frees the data on every server holding it, and the handle. NULL: nothing. */
int grid_data_free_np(grid_data_np *h);
/* "host:port" of a server holding the data ("" when none does yet, or H is not a handle). */
const char *grid_data_where_np(const grid_data_np *h);
/* The handle's element type (GRID_TYPE_*) and count; either pointer may be NULL. */
int grid_data_info_np(const grid_data_np *h, int *type, size_t *count);
/* Ends the process's data session now: every server holding its data frees it, and
 * every handle is then lost (grid_data_free_np still frees it). grid_reset_np and
 * grpc_finalize do this; later puts start a new session. */
void grid_data_end_session_np(void);
/* ---- Two-phase calls (docs/api.md "Two-phase calls"): submit a call, get a job id
 * that can be written down, and fetch its results later, from this process or another,
 * even after the server restarted. The server keeps the call and its result on disk
 * (gridrpcd --job-dir, --job-keep). */

/* Bytes a job id may take, NUL included: "host:port/HEX" (HEX: 32 hex digits today). */
#define GRID_JOB_ID_MAX_NP 340

/* Submits a call of NAME with its arguments (as grid_call takes them) and returns once
 * the server has them on disk: JOBID (SIZE bytes) receives "host:port/HEX". OUT buffers
 * are not touched. grid_submit_np(jobid, sizeof jobid, "test/echo_double", n, in, out):
 * counted like grid_call. GRID_ERR_IO when the server's job folder is full (the job was
 * not accepted; the message names the folder). */
#define grid_submit_np(jobid, size, ...)                                                                     \
    grid_submit_counted_np(GRID_NARGS_NP_(__VA_ARGS__), jobid, size, __VA_ARGS__)
int grid_submit_counted_np(int nargs, char *jobid, size_t size, const char *name, ...);
int grid_submit_va_np(char *jobid, size_t size, const char *name, int nargs, va_list ap);
int grid_submit_argv_np(char *jobid, size_t size, const char *name, int nargs, void *const *argv);

/* Fetches the results of job JOBID into the arguments, which are those of the submit
 * (scalars size the arrays; OUT and INOUT buffers receive the results; IN arrays are
 * checked for their size as in a call but not read). Waits up to WAIT_SECONDS for the
 * job to finish (0: asks once). Returns GRID_OK with the results in place;
 * GRID_ERR_TIMEOUT when the job has not finished yet (nothing written; grid_last_error
 * says whether it is queued or running: fetch again later); the job's own error when it
 * failed; GRID_ERR_ARGS for a job the server does not know (forgotten, expired, or never
 * submitted there). A job can be fetched any number of times until it is forgotten or
 * expires. grid_job_fetch_np(jobid, 10.0, n, in, out): counted like grid_call. */
#define grid_job_fetch_np(jobid, ...)                                                                        \
    grid_job_fetch_counted_np(GRID_NARGS_NP_(__VA_ARGS__), jobid, __VA_ARGS__)
int grid_job_fetch_counted_np(int nargs, const char *jobid, double wait_seconds, ...);
int grid_job_fetch_va_np(const char *jobid, double wait_seconds, int nargs, va_list ap);
int grid_job_fetch_argv_np(const char *jobid, double wait_seconds, int nargs, void *const *argv);

enum grid_job_state_np {
    GRID_JOB_QUEUED_NP = 1,
    GRID_JOB_RUNNING_NP = 2,
    GRID_JOB_DONE_NP = 3,
    GRID_JOB_FAILED_NP = 4
};

typedef struct grid_job_info_np {
    char function[512];                     /* "module/function" */
    int state;                              /* enum grid_job_state_np */
    int code;                               /* a failed job's error code; GRID_OK otherwise */
    double submitted;                       /* Unix time, seconds */
    double finished;                        /* Unix time, seconds; 0 until it finished */
    unsigned long long bytes_in, bytes_out; /* kept SUBMIT and result sizes (0 until finished) */
} grid_job_info_np;

/* The state of job JOBID without fetching it (INFO may be NULL: only whether the server
 * knows it). GRID_ERR_ARGS for an unknown job. */
int grid_job_state_np(const char *jobid, grid_job_info_np *info);
/* Deletes job JOBID and its result on the server. A queued job is dropped; a running
 * one is canceled (its executor is ended after a short grace) and dropped when its run
 * ends. GRID_ERR_ARGS for an unknown job. */
int grid_job_forget_np(const char *jobid);
/* Stops job JOBID but keeps its record: a queued one will not run, a running one is
 * ended as grid_cancel ends a call; it then ends failed with GRID_ERR_CANCELED, which
 * fetching it returns. INFO (may be NULL) gets its state once it ended, or "running"
 * when it did not end within 2 s (a function run in the server's own process that does
 * not poll grpc_is_canceled_np). A finished job is left as it is. GRID_ERR_ARGS for an
 * unknown job. */
int grid_job_cancel_np(const char *jobid, grid_job_info_np *info);

/* ---- For language bindings (Fortran, Python): the interface and an argument vector */

enum grid_type_np {
    GRID_TYPE_CHAR = 1,
    GRID_TYPE_SHORT = 2,
    GRID_TYPE_INT = 3,
    GRID_TYPE_LONG = 4,
    GRID_TYPE_LONGLONG = 5,
    GRID_TYPE_FLOAT = 6,
    GRID_TYPE_DOUBLE = 7,
    GRID_TYPE_SCOMPLEX = 8,
    GRID_TYPE_DCOMPLEX = 9,
    GRID_TYPE_STRING = 10,
    GRID_TYPE_FILENAME = 11,
    GRID_TYPE_CALLBACK = 12 /* a function of the caller's (docs/grpc.md, "Callbacks") */
};
enum grid_mode_np { GRID_MODE_IN = 1, GRID_MODE_OUT = 2, GRID_MODE_INOUT = 3, GRID_MODE_WORK = 4 };

#define GRID_MAX_PARAMS_NP 64
#define GRID_MAX_RANK_NP 8
#define GRID_MAX_TOKEN_NP 1024 /* bytes of an authentication token */

typedef struct grid_param_np {
    char name[256];
    int type;        /* enum grid_type_np */
    int mode;        /* enum grid_mode_np */
    int rank;        /* 0 for a scalar; dimensions are in C order */
    int is_unsigned; /* an unsigned integer type */
} grid_param_np;

enum grid_lang_np { GRID_LANG_C_NP = 1, GRID_LANG_CXX_NP = 2, GRID_LANG_FORTRAN_NP = 3 };
#define GRID_HAVE_LANGUAGE_NP 1

typedef struct grid_function_np {
    char module[256];
    char name[256];
    char description[4097];
    int nparams;
    grid_param_np params[GRID_MAX_PARAMS_NP];
    int language; /* enum grid_lang_np: what the function is written in */
} grid_function_np;

/* Bytes of one element of TYPE (enum grid_type_np) in memory; 0 for strings,
 * filenames, callbacks and unknown types. */
unsigned long grid_type_size_np(int type);

/* Fills OUT with the interface of NAME (fetching its descriptor once, as grid_call
 * does). */
int grid_describe_np(const char *name, grid_function_np *out);

/* grid_call with the arguments as a vector of NARGS pointers, one per parameter:
 * ARGV[i] points at the argument's storage for every kind of parameter: a scalar's
 * variable (IN: read, OUT and INOUT: written), a string's or filename's char *
 * variable (an OUT string receives a malloc'd copy), an array's first element (NULL
 * when empty; WORK arrays NULL); for a callback, the function itself cast to void *. */
int grid_call_argv_np(const char *name, int nargs, void *const *argv);

/* The declared size of each dimension of array parameter PARAM (0-based) of NAME, for
 * the scalar arguments in ARGV (laid out as for grid_call_argv_np; only the IN and INOUT
 * integer scalars are read): DIMS receives rank entries, C order. Bindings use it to
 * check or allocate arrays before a call. */
int grid_array_shape_np(const char *name, void *const *argv, int param, long long *dims);

/* Counts 1 to 64 arguments (standard C99: never called with none). */
#define GRID_NARGS_NP_(...)                                                                                  \
    GRID_NARGS_PICK_NP_(__VA_ARGS__, 64, 63, 62, 61, 60, 59, 58, 57, 56, 55, 54, 53, 52, 51, 50, 49, 48, 47, \
                        46, 45, 44, 43, 42, 41, 40, 39, 38, 37, 36, 35, 34, 33, 32, 31, 30, 29, 28, 27, 26,  \
                        25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, \
                        2, 1, 0)
#define GRID_NARGS_PICK_NP_(a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, \
                            a19, a20, a21, a22, a23, a24, a25, a26, a27, a28, a29, a30, a31, a32, a33, a34,  \
                            a35, a36, a37, a38, a39, a40, a41, a42, a43, a44, a45, a46, a47, a48, a49, a50,  \
                            a51, a52, a53, a54, a55, a56, a57, a58, a59, a60, a61, a62, a63, a64, n, ...)    \
    n

#ifdef __cplusplus
}
#endif

/* The OGF GridRPC standard API (grpc_*) over the same core. */
#include "grpc_api.h"

#endif /* GRIDRPC_H */
