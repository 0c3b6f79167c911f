/* grc_client.h: the client core behind grid_call: configuration, the connection pool,
 * the descriptor cache and one synchronous call. Private to the library (prefix grc_).
 * Everything here is MT-safe. */
#ifndef GRC_CLIENT_H
#define GRC_CLIENT_H

#include <pthread.h>
#include <stdarg.h>

#include "gr_error.h"
#include "grd_desc.h"
#include "grm_marshal.h"
#include "grp_auth.h"
#include "grp_meta.h"
#include "grp_proto.h"
#include "gr_scheme.h"
#include "grw_tls.h"
#include "grw_wire.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GRC_MAX_HOST 256
#define GRC_MAX_NAME (GRP_MAX_FUNCTION_NAME + 1)

/* Process-wide settings, read once from the environment and configuration file. */
typedef struct grc_config {
    char server_host[GRC_MAX_HOST]; /* default server, "" when none is configured */
    int server_port;
    double connect_timeout;   /* seconds, 0: none */
    double call_timeout;      /* seconds, 0: none */
    char timeout_source[320]; /* the setting call_timeout came from, for messages ("" : the default) */
    char token[GRP_MAX_TOKEN + 1];
    grp_keyset keys;   /* GRIDRPC_KEY_FILE, the file's 'key_file', grid_set_key_file_np; n 0: none */
    char source[1024]; /* where the default server came from, for messages */
    /* The metaserver (GRIDRPC_METASERVER, the file's 'metaserver', grid_set_metaserver_np):
     * when set, a plain function name is routed through it, even if a server is set. */
    char meta_host[GRC_MAX_HOST]; /* "" when none */
    int meta_port;
    char meta_source[256];       /* where it came from, for messages */
    char site[GRP_MAX_SITE + 1]; /* GRIDRPC_SITE, else the host name */
    uint32_t policy;             /* enum grp_policy: GRIDRPC_SCHEDULER or grid_set_scheduler_np */
    int reuse_max;               /* decision reuse: at most this many calls (GRIDRPC_REUSE, 0: off) */
    double reuse_seconds;        /* ... and for at most this long (GRIDRPC_REUSE_FOR) */
    /* A call whose server vanished runs again elsewhere at most this many times
     * (GRIDRPC_RETRIES, the file's 'retries'; 0: never). */
    int retries;
    char retries_source[320]; /* where retries came from, for messages ("": the default) */
    char tls_ca[1024];        /* CA file for gridrpcs:// servers; "": the system's store */
} grc_config;

/* Returns the settings (loaded on first use). Fails with GRID_ERR_CONFIG when the
 * configuration file is malformed. */
int grc_config_get(grc_config *out, gr_err *e);
/* SOURCE names the setting in messages (NULL: "grid_set_timeouts_np"). */
void grc_config_set_timeouts(double connect_seconds, double call_seconds, const char *source);
/* "5 s (GRIDRPC_TIMEOUT)": the call timeout of CFG and where it was set, for messages. */
const char *grc_timeout_text(const grc_config *cfg, char *buf, size_t n);
/* The absolute deadline of a call started now under CFG's call timeout (0: none). */
long long grc_config_deadline(const grc_config *cfg);
/* Replaces the configured token (GRIDRPC_TOKEN, the file's 'token') until it is called
 * with NULL or grc_config_reset: the OGF layer's grpc_initialize file may name one. */
/* Replaces the TLS CA file (GRIDRPC_TLS_CA, the file's 'tls_ca') until it is called with
 * NULL or grc_config_reset: grid_set_tls_ca_np. */
void grc_config_set_tls_ca(const char *path);
void grc_config_set_token(const char *token);
/* Replaces the configured keys (GRIDRPC_KEY_FILE, the file's 'key_file') by those of KS
 * until called with NULL or grc_config_reset; KS with no key: connect without one. */
void grc_config_set_keys(const grp_keyset *ks);
/* Replaces the configured metaserver until it is called with NULL (the configured one
 * again) or grc_config_reset; HOST "" means none (plain names go to the server). */
void grc_config_set_metaserver(const char *host, int port);
/* Replaces GRIDRPC_SCHEDULER (POLICY: enum grp_policy; -1: the configured one again). */
void grc_config_set_policy(int policy);
/* Forgets loaded settings (tests change the environment between calls). */
void grc_config_reset(void);

/* A function name resolved to a server: "gridrpc://h:p/m/f" or a plain name with the
 * configured server. */
typedef struct grc_target {
    char host[GRC_MAX_HOST];
    int port;
    char name[GRC_MAX_NAME]; /* "function" or "module/function" */
} grc_target;
int grc_resolve(const char *name, const grc_config *cfg, grc_target *t, gr_err *e);

/* A pooled connection (after HELLO). */
typedef struct grc_conn {
    int fd;
    grw_tls *tls;   /* a gridrpcs:// server's session, or NULL */
    char local[64]; /* this end, "ip:port": the server logs it as the call's peer */
    char host[GRC_MAX_HOST];
    int port;
    uint64_t next_id;
    grw_limits server; /* limits announced in HELLO_OK */
    int reused;        /* taken from the pool (grc_conn_stale) */
    long long rtt_ns;  /* HELLO's round trip when it opened */
    grw_reader rd;
    grw_writer wr;
    struct grc_conn *next;
} grc_conn;

/* Takes an idle connection to HOST:PORT or opens one. */
int grc_conn_get(const char *host, int port, const grc_config *cfg, grc_conn **out, gr_err *e);
/* 1 when a request on C, sent at SENT_NS, failed with RC the way it does when the
 * server closed C while it sat in the pool (its --idle-timeout fired as the request
 * left): C was reused, RC is GRID_ERR_CONN_LOST, not one byte came back, and the close
 * came within about a round trip of the send (at most max(100 ms, 4 HELLO round
 * trips)). The request may then go again on a new connection: the server closed before
 * reading it (a crash in that instant cannot be told apart; callers keep IDL Retry
 * "no" and GRID_CALL_NO_RETRY_NP). */
int grc_conn_stale(const grc_conn *c, int rc, long long sent_ns);
/* Returns a healthy connection to the pool, or closes it when BROKEN. */
void grc_conn_put(grc_conn *c, int broken);
/* Closes every idle connection. */
void grc_pool_reset(void);

/* The descriptor of T's function, from the cache or fetched (GET_DESCRIPTOR). The
 * descriptor stays valid until grc_cache_reset; *qualified is the server's name for it. */
int grc_descriptor(const grc_target *t, const grc_config *cfg, const grd_desc **out, gr_err *e);
/* Drops T's cached descriptor (after GRID_ERR_STALE). */
void grc_cache_forget(const grc_target *t);
void grc_cache_reset(void);

/* Counters behind grid_get_stats_np (atomic). */
extern long grc_stat_fetches, grc_stat_connections, grc_stat_calls;

/* Where a call's arguments come from: grid_call's variadic list or an argument vector. */
typedef struct grc_args {
    va_list *ap;       /* or NULL */
    void *const *argv; /* when ap is NULL */
    int nargs;         /* arguments after the name; -1: unknown (not checked) */
} grc_args;

/* ---- the call engine (grc_engine.c): what a synchronous and an asynchronous call
 * share, so that resolving, argument checks, limits, sending, reading the reply and the
 * retry after GRID_ERR_STALE exist once. */

/* How a plain name's call was routed by the metaserver (grc_meta.c), for its REPORT and
 * its failover to another server. */
/* The servers that failed one call. */
typedef struct grc_failed {
    uint64_t exclude[GRP_MAX_EXCLUDE];                      /* their ids (0: unknown) */
    char excluded_addr[GRP_MAX_EXCLUDE][GRC_MAX_HOST + 16]; /* the same, by address */
    char tried[1024]; /* "a:7001 (connection refused), b:7002 (connection lost)" */
} grc_failed;

typedef struct grc_route {
    int routed;                   /* the target came from the metaserver or its last-known servers */
    int no_retry;                 /* the caller's GRID_CALL_NO_RETRY_NP when the call started */
    int final;                    /* the error message already names the function and servers */
    int reused;                   /* the target is an earlier decision's (no SCHEDULE) */
    int no_reuse;                 /* ask SCHEDULE even for a call small enough to reuse (transactions) */
    const grp_affinity *affinity; /* bytes of the call's inputs already on servers (SCHEDULE) */
    uint32_t naffinity;           /* <= GRP_MAX_AFFINITY */
    int reported;                 /* this attempt's REPORT is written */
    uint64_t decision;            /* SCHEDULE_OK's; 0: a reused decision or a last-known server */
    uint64_t server_id;           /* 0 when unknown */
    uint64_t bytes_in, bytes_out; /* the CALL and RESULT sizes */
    double flops;                 /* Complexity for these arguments */
    uint32_t nexclude;            /* servers that failed this call (entries of failed) */
    int attempts;                 /* failovers so far */
    int lost;                     /* of those, after its server vanished (grc_code_is_server_lost) */
    struct grc_failed *failed;    /* allocated at the first failure: most calls never fail */
    long long sent_ns;            /* when the CALL started to go out (set by the sender before it
                                   * hands the call to another thread: REPORT's total_ns) */
    grp_result_times times;       /* from RESULT */
} grc_route;

/* Clears R for a new call (grc_req_free releases what it holds). */
void grc_route_reset(grc_route *r);
/* The failed servers, "a:7001 (connection refused), ...", or "". */
const char *grc_route_tried(const grc_route *r);
/* Records that the server of T (id R->server_id) failed the call with CODE (MSG): named
 * in the final error's list and excluded from the next SCHEDULE. */
void grc_route_failed(grc_route *r, const grc_target *t, int code, const char *msg);

/* ---- remote data handles (grc_data.c: the handles, their registry and exchanges;
 * grc_bind.c: handles as a call's arguments). A handle (the public grid_data_np) is one
 * datum of this process's session, with the servers that hold a copy of it. */
typedef struct grid_data_np grc_data;

/* A parameter of one call that a handle stands for: its input comes from the handle
 * (GRP_REF_IN), its output is kept as the handle on the call's server (GRP_REF_KEEP),
 * and also sent back into the caller's buffer (GRP_REF_RETURN). */
typedef struct grc_binding {
    grc_data *h;    /* NULL: the parameter travels as in a plain call; else a reference */
    unsigned flags; /* GRP_REF_* */
} grc_binding;

/* One call on its way: where it goes, the descriptor it was marshalled with, and its
 * arguments (sized for that descriptor). */
typedef struct grc_req {
    grc_target t;
    const grd_desc *desc;
    grm_call *call;
    int refreshed;        /* the descriptor was fetched again after GRID_ERR_STALE */
    grp_object_id object; /* a method invocation on this remote object (OBJ_INVOKE; t.name is
                           * "module/Class.method"); 0 for a call */
    grc_route route;
    /* Handles bound to parameters (grc_req_bind): nbind of bind[0..nparams) are set, and
     * the call goes as CALL_DATA. grc_req_fill binds the caller's handles passed as
     * arrays; the transaction engine may bind its own. nbind 0: a plain CALL. */
    int nbind;
    grc_binding bind[GRD_MAX_PARAMS];
} grc_req;

/* Resolves NAME, gets its descriptor and builds the arguments from ARGS; *CFG gets the
 * settings used. On failure E names the function and server (when known). */
int grc_req_start(grc_req *q, const char *name, const grc_args *args, grc_config *cfg, gr_err *e);
/* Builds q->call for q->desc from ARGS (after the target and descriptor are known). */
int grc_req_fill(grc_req *q, const grc_args *args, gr_err *e);
/* Checks the arguments against the limits the server announced (before sending). */
int grc_req_check(const grc_req *q, const grw_limits *server, gr_err *e);
/* Writes the CALL message with request ID (the caller holds the writer). */
int grc_req_send(const grc_req *q, grw_writer *w, uint64_t id, const grw_limits *server, gr_err *e);
/* Reads the reply whose header H was just read: RESULT into the caller's buffers, or
 * ERROR. Returns its code; *in_step: the connection can carry another message. */
int grc_req_reply(grc_req *q, grw_reader *r, const grw_header *h, int *in_step, gr_err *e);
/* After GRID_ERR_STALE: fetches the descriptor again and rebuilds the arguments for it,
 * once per call. GRID_OK: send again; otherwise the error that ends the call (the
 * interface changed in a way the caller's arguments cannot follow, or a second STALE). */
int grc_req_refresh(grc_req *q, gr_err *e);
void grc_req_free(grc_req *q);
/* Prefixes E with the call's function and server ("dmmul on host:port: "). */
void grc_req_blame(const grc_req *q, gr_err *e);
/* After the call failed with CODE (E: why) before its result arrived: for a routed call
 * whose server failed (refused, reset, lost; not a remote error), picks another server
 * (q->t) unless the function or the call forbids running it again. GRID_OK: send again;
 * otherwise the error that ends the call, in E (naming every server tried). */
int grc_req_failover(grc_req *q, int code, gr_err *e);
/* The call ended with CODE: REPORTs it to the metaserver (routed calls; never fails)
 * and records the server for grid_last_server_np. */
void grc_req_end(grc_req *q, int code);
/* 1 if CODE, seen before the result arrived, means the server failed (so the call may
 * run elsewhere): refused, reset, lost connection. */
int grc_code_is_server_failure(int code);
/* 1 for the server failures that mean the server vanished (connection refused or lost):
 * the call may have run there, so its reruns are counted against the 'retries' setting. */
int grc_code_is_server_lost(int code);
/* "1 (the default)", "0 (GRIDRPC_RETRIES)": CFG's retries and their source, for messages. */
const char *grc_retries_text(const grc_config *cfg, char *buf, size_t n);

/* ---- grid_interrupt_np (grc_interrupt.c) */
/* How many times grid_interrupt_np ran: a call whose count moved was interrupted. */
unsigned grc_interrupt_count(void);
/* Puts socket FD in the table grid_interrupt_np shuts down; the slot, or -1 when full
 * (the call then is not interruptible). */
int grc_interrupt_watch(int fd);
/* Takes SLOT out of the table (before its socket is closed). */
void grc_interrupt_unwatch(int slot);
/* grid_interrupt_np: counts an interrupt and shuts down every socket in the table.
 * Async-signal-safe. */
void grc_interrupt_all(void);
/* A few words for a failover message: why a server failed a call ("connection refused"). */
const char *grc_failure_words(int code, const char *msg);

/* ---- remote data handles (grc_data.c, grc_bind.c) */
/* The process's data session: a random nonzero id (getrandom) picked at first use, and
 * a new one after grc_data_reset. */
uint64_t grc_data_session(void);
/* 1 if P is a live handle, with *OUT set to it (OUT may be NULL); 0 otherwise. P is
 * only compared against the registry of live handles, never read through. Takes no
 * reference: use it while the handle cannot be freed (as for any buffer of a call). */
int grc_data_lookup(const void *p, grc_data **out);
/* grc_data_lookup with a reference taken on the handle found (NULL: P is none). */
grc_data *grc_data_take(const void *p);
/* References keep a handle's memory while a call uses it, even if the program frees it
 * meanwhile (the handle is then dead: grc_data_lookup no longer finds it). */
void grc_data_ref(grc_data *d);
void grc_data_release(grc_data *d);
/* The handle's id (unique in the session), element type (GRD_*) and count. */
uint64_t grc_data_id(const grc_data *d);
uint32_t grc_data_type(const grc_data *d);
uint64_t grc_data_count(const grc_data *d);
/* Bytes of D's data on HOST:PORT: its size when that server holds a current copy, else 0. */
uint64_t grc_data_bytes_on(const grc_data *d, const char *host, int port);
/* The servers holding a current copy of D (at most MAX): returns how many. */
int grc_data_copies(const grc_data *d, char (*hosts)[GRC_MAX_HOST], int *ports, uint64_t *server_ids,
                    int max);
/* A new handle without data (grid_data_new_np's), and freeing one on every server that
 * holds it (grid_data_free_np's; drops the registry's reference). */
int grc_data_new(grc_data **out, uint32_t type, uint64_t count, gr_err *e);
int grc_data_free(grc_data *d, gr_err *e);
/* The copy step: makes D's data present on HOST:PORT (SERVER_ID 0 when unknown): nothing
 * when it holds a current copy; else DATA_COPY from a server that does (server to
 * server), or DATA_PUT of the client's own copy when no server has one yet. Fails with
 * GRID_ERR_ARGS when D has no data or was freed, GRID_ERR_CONN_LOST when every server
 * holding it failed (D is then lost), or the destination's failure (GRID_ERR_CONNECT,
 * ...) naming HOST:PORT, *DEST_FAILED set (the call there may fail over). */
int grc_data_copy_to(grc_data *d, const char *host, int port, uint64_t server_id, const grc_config *cfg,
                     int *dest_failed, gr_err *e);
/* A call kept its output as D on HOST:PORT: D holds data there only; the other copies are
 * stale and freed (DATA_FREE) at the next data exchange or grc_data_flush. */
void grc_data_kept_on(grc_data *d, const char *host, int port, uint64_t server_id);
/* D's copy on HOST:PORT is gone (its server failed): forgotten; D is lost when no copy is left. */
void grc_data_gone_from(grc_data *d, const char *host, int port, const char *why);
/* Sends the pending DATA_FREEs of stale copies (never fails: a server that cannot be
 * reached frees them at session end or lease expiry). CFG NULL: the settings in effect.
 * Costs a lock and nothing else when none is pending. */
void grc_data_flush(const grc_config *cfg);
/* Ends the session on every server holding its data (SESSION_END), marks every handle
 * lost and starts a new session: grid_reset_np and grpc_finalize. */
void grc_data_reset(void);
/* What grid_data_put_np, grid_data_get_np, grid_data_where_np and grid_data_info_np do
 * (grc_data_api.c reports the outcome): GRID_OK or the error, E saying why. */
int grc_data_put(grc_data **h, const char *where, int type, size_t count, const void *buf, gr_err *e);
int grc_data_get(grc_data *h, void *buf, size_t count, gr_err *e);
const char *grc_data_where(const grc_data *h);
int grc_data_info(const grc_data *h, int *type, size_t *count, gr_err *e);

/* Binds parameter P of Q's prepared call to handle H with FLAGS (GRP_REF_*): P must be a
 * numeric array; IN takes GRP_REF_IN, OUT GRP_REF_KEEP[|RETURN], INOUT any of them;
 * H's type and count must be the parameter's (its full element count for this call).
 * Sets the call's skip masks and takes a reference on H (grc_req_free drops it). With
 * RETURN (or without IN) the caller's buffer stays in q->call->ptr[P]. GRID_ERR_ARGS
 * naming the parameter and the handle otherwise. */
int grc_req_bind(grc_req *q, uint32_t p, grc_data *h, unsigned flags, gr_err *e);
/* Binds every caller's handle passed where Q's call takes an array (grc_req_fill runs it). */
int grc_req_bind_args(grc_req *q, gr_err *e);
/* After the call was rebuilt for a new descriptor (STALE): checks the bindings again
 * and sets the skip masks. */
int grc_req_rebind(grc_req *q, gr_err *e);
/* Drops every binding's reference (grc_req_free). */
void grc_req_unbind(grc_req *q);
/* The CALL_DATA refs of Q's bindings, in parameter order (REFS: GRP_MAX_REFS); how many. */
uint32_t grc_req_refs(const grc_req *q, grp_ref *refs);
/* Before Q goes to q->t: copies each IN handle there (grc_data_copy_to). *SERVER_FAILED:
 * q->t itself failed (the call may fail over to another server); otherwise the error
 * is the handle's (lost, no data) and ends the call. */
int grc_req_place(grc_req *q, const grc_config *cfg, int *server_failed, gr_err *e);
/* After Q's reply with CODE: on success each KEEP handle now lives on q->t only; on a
 * server failure the IN handles' copies there are forgotten. Never fails. */
void grc_req_settle(grc_req *q, int code);
/* Where Q's input already lies, for placement (data affinity): up to MAX servers, each
 * with the bytes of Q's IN handles it holds; returns how many (0: none bound). */
typedef struct grc_data_site {
    char host[GRC_MAX_HOST];
    int port;
    uint64_t server_id; /* 0 when unknown */
    uint64_t bytes;
} grc_data_site;
size_t grc_req_data_sites(const grc_req *q, grc_data_site *out, size_t max);
/* Bytes sent and received on every client connection (grid_get_stats_np). */
extern uint64_t grc_stat_bytes_sent, grc_stat_bytes_received;

/* ---- the metaserver (grc_meta.c) */
/* Routes Q's plain-named call (already resolved to NAME) through the metaserver: fills
 * q->t, q->desc, q->call (from ARGS) and q->route. */
int grc_meta_start(grc_req *q, const char *name, const grc_args *args, const grc_config *cfg, gr_err *e);
/* Another server for Q after its server failed (q->route.exclude holds the failed). */
int grc_meta_reroute(grc_req *q, const grc_config *cfg, gr_err *e);
/* Sends REPORT for Q's attempt that ended with CODE (no reply is awaited). */
void grc_meta_report(grc_req *q, int code, const grc_config *cfg);
/* The descriptor of plain NAME through the metaserver (introspection calls): *T gets
 * the server it came from. */
int grc_meta_describe(const char *name, const grc_config *cfg, grc_target *t, const grd_desc **out,
                      gr_err *e);
/* The descriptor was fetched again (after STALE): later calls of NAME use D. */
void grc_meta_learn(const char *name, const grd_desc *d);
/* Closes the metaserver connection, stops the probe and forgets what it knew. */
void grc_meta_reset(void);
/* The thread's call flags (GRID_CALL_*_NP) and last server ("host:port"). */
unsigned grc_call_flags(void);
void grc_set_call_flags(unsigned flags);
void grc_set_last_server(const char *host, int port);
const char *grc_last_server(void);

/* ---- the active link probe (grc_probe.c) */
/* Starts (once per process and metaserver contact) a background thread that measures
 * latency (PING) and bandwidth (PROBE) to each of the N servers and REPORTs them with
 * function "". Takes a copy of V. */
void grc_probe_start(const grp_server_info *v, uint32_t n, const grc_config *cfg);
/* Stops the probe thread (its current exchange is cut) and joins it. */
void grc_probe_stop(void);
/* Writes a REPORT for a probe (grc_meta.c owns the connection). */
void grc_meta_report_probe(uint64_t server_id, uint64_t bytes_in, uint64_t bytes_out, uint64_t total_ns,
                           const grc_config *cfg);

/* ---- callbacks (grc_callback.c) */
/* The header H just read is CALLBACK for call Q: reads it, runs the caller's function
 * and answers CALLBACK_RESULT on W (under WLOCK when not NULL; SERVER: the limits the
 * server announced). A callback that cannot run is answered with an error (the server
 * then fails the call). Returns GRID_OK while the connection stays in step. */
int grc_callback_serve(grc_req *q, grw_reader *r, grw_writer *w, pthread_mutex_t *wlock,
                       const grw_limits *server, const grw_header *h, gr_err *e);
/* Reads the next message's header into H, first serving every CALLBACK of request ID
 * (call Q, on the caller's thread; W is the caller's): a synchronous call's wait for its
 * reply. Returns what grp_read_header returns, or the error that broke the stream. */
int grc_callback_await(grc_req *q, grw_reader *r, grw_writer *w, const grw_limits *server, uint64_t id,
                       grw_header *h, gr_err *e);
/* CALLBACK H for a call that ended here (canceled, timed out): skipped and answered with
 * CODE (MSG), so the body on the server goes on. */
int grc_callback_refuse(grw_reader *r, grw_writer *w, pthread_mutex_t *wlock, const grw_header *h, int code,
                        const char *msg, gr_err *e);

/* One synchronous call. */
int grc_call(const char *name, const grc_args *args, gr_err *e);
/* The times of the calling thread's last synchronous call into *OUT: 1, or 0 when none
 * has succeeded yet (grid_last_call_times_np). */
int grc_call_last_times(grid_call_times_np *out);
/* Runs the prepared request Q (grc_req_start, then any grc_req_bind) on the caller's
 * thread, as grid_call does: copies its IN handles to its server, sends, reads the
 * reply, fails over (routed calls), refreshes after STALE, and records its KEEP handles.
 * On failure E names the function and server. The caller grc_req_free's Q after.
 * INTERRUPTS: grc_interrupt_count() when the call began (grid_interrupt_np ends it). */
int grc_req_run(grc_req *q, const grc_config *cfg, unsigned interrupts, gr_err *e);

/* ---- transactions (grc_txn.c) */
/* 1 when the calling thread has a transaction open: its calls are recorded, not run. */
int grc_txn_active(void);
/* Records a call of NAME in the calling thread's open transaction. */
int grc_txn_record(const char *name, const grc_args *args, gr_err *e);

/* ---- what the caller is told (grc_report.c, below everything else) */
/* Sets the calling thread's last error (grid_last_error): cleared for GRID_OK, else MSG
 * (or CODE's text when MSG is empty). */
void grc_report(int code, const char *msg);
/* The calling thread's last error ("" when none). */
const char *grc_last_error(void);
/* Sets the calling thread's last error to MSG as it is (NULL: ""). */
void grc_set_last_error(const char *msg);

/* ---- asynchronous calls (grc_async.c) */
/* Starts a call; returns its id (> 0) or -code with E set. */
int grc_call_async(const char *name, const grc_args *args, gr_err *e);
/* Starts the request START prepares (grc_req_start's job for a call: target,
 * descriptor, arguments) as an asynchronous call; returns its id or -code. */
typedef int (*grc_req_starter)(grc_req *q, const void *ctx, const grc_args *args, grc_config *cfg, gr_err *e);
int grc_call_async_req(grc_req_starter start, const void *ctx, const grc_args *args, gr_err *e);
/* Waits for call ID; returns its code and points *MSG at its message. */
int grc_wait(int id, const char **msg);
/* Waits for any of IDS (N of them), or any outstanding call when IDS is NULL. */
int grc_wait_any(const int *ids, int n, int *done, const char **msg);
/* 1 when call ID is done, 0 while it runs; first handles the replies that have already
 * arrived on its connection if no other thread is reading them. */
int grc_probe(int id);
/* Waits until the server holds call ID's arguments (it answered a PING sent after the
 * CALL), the call ended, or its deadline passed. GRID_ERR_ARGS for an unknown id. */
int grc_wait_received(int id, gr_err *e);
int grc_cancel(int id);
/* The code of call ID (GRID_OK while running), -1 if unknown. */
int grc_session_error(int id, const char **msg, int *waited);
void grc_forget(int id);
void grc_async_reset(void);

#ifdef __cplusplus
}
#endif

#endif /* GRC_CLIENT_H */
