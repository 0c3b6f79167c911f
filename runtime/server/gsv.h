/* gsv.h: the internals of gridrpcd, the computing server, shared by its files (prefix
 * gsv_). One file per job: options, logging, module registry, listener, connections,
 * requests, scheduler (queue and workers), call execution, main.
 *
 * Threads and what they own:
 *   main         parses options, loads modules, accepts connections, runs shutdown;
 *   reader       one per connection: reads each request whole, answers the small ones
 *                (HELLO, PING, LIST, GET_DESCRIPTOR) itself and queues CALLs;
 *   worker       pool mode: N threads take calls off the queue; thread mode: one
 *                thread per call. A worker invokes the function and writes RESULT.
 *   meta         with --metaserver: registers and sends heartbeats (gsv_meta.c); it
 *                only reads the load counters, so it never holds up a call.
 *   supervisor   starts the executor processes that run plain calls and a replacement
 *                for each that dies (gsv_exec.c); a worker waits on its executor.
 * Locks (never nested: no lock is taken while another is held):
 *   gsv_server.dm.lock  the connection list and counts (the daemon core, gdm.h);
 *   gsv_sched.lock    the queue and the running/queued counters;
 *   gsv_conn.wlock    (gdm.h) one whole message on a connection's socket at a time (held while
 *                     writing, so pipelined calls of one connection never interleave);
 *   gsv_exec.c's pool lock  which executor processes are free, busy or being replaced;
 *   gsv_server.blas_lock  changes of the process-wide OpenBLAS thread count;
 *   the connection counts' (runtime/common/gr_connlimit.c): at accept, and when a
 *                     connection's last reference goes (gdm_conn_unref).
 * The limits on calls (gsv_limits.c) are atomics, without a lock.
 * The registry and the options never change after startup and are read without locks.
 */
#ifndef GSV_H
#define GSV_H

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "gdm.h"
#include "gr_log.h"
#include "gr_shbuf.h"
#include "grd_desc.h"
#include "grp_auth.h"
#include "grp_limits.h"
#include "grp_session.h"
#include "gridrpc_stub.h"
#include "grm_marshal.h"
#include "grw_tls.h"
#include "grw_wire.h"

/* ---------------------------------------------------------------- options */

/* The default modules' directory, where make install puts the standard modules (set by
 * the build to $(pkglibdir)/modules). */
#ifndef GRIDRPC_MODULE_DIR
#define GRIDRPC_MODULE_DIR "/usr/local/lib/gridrpc/modules"
#endif
/* Where make install puts the test module (test/crash, test/sleep): apart from the
 * defaults, so an installed server serves it only when named with --module. */
#ifndef GRIDRPC_TEST_MODULE_DIR
#define GRIDRPC_TEST_MODULE_DIR "/usr/local/lib/gridrpc/test-modules"
#endif

enum { GSV_MODE_POOL = 0, GSV_MODE_THREAD = 1 };
enum { GSV_QUEUE_FCFS = 0, GSV_QUEUE_SJF = 1 };
enum { GSV_LOG_ERROR = 0, GSV_LOG_WARN = 1, GSV_LOG_INFO = 2, GSV_LOG_DEBUG = 3 };

typedef struct gsv_options {
    const char *host;
    int port;
    const char **modules; /* --module, in order */
    unsigned nmodules;
    const char **module_dirs; /* --module-dir, in order */
    unsigned nmodule_dirs;
    int defaults;            /* load the default modules too: none of --module and --module-dir
                                was given, or --default-modules was */
    unsigned threads;        /* 0: one per core */
    unsigned blas_threads;   /* --blas-threads: BLAS threads of every call; 0: cores / running calls */
    int mode;                /* GSV_MODE_* */
    int queue;               /* GSV_QUEUE_* */
    int in_process;          /* --in-process-unsafe: calls run on the worker threads, so a function
                                that crashes takes the server down (executors otherwise) */
    double call_timeout;     /* --call-timeout seconds; 0: none (executors only) */
    double call_timeout_max; /* --call-timeout-max: the cap on an IDL Timeout; 0: none */
    double call_cpu;         /* --call-cpu: CPU seconds of a call (all its threads); 0: none */
    uint64_t call_memory;    /* --call-memory bytes an executor may add during a call; 0: none */
    const char *token;       /* NULL: no token required (--token-file, --token) */
    grw_limits limits;
    double io_timeout;       /* seconds; 0: none */
    double shutdown_timeout; /* seconds */
    int log_level;           /* GSV_LOG_* */
    /* The metaserver (--metaserver): port 0 when none. */
    char meta_host[GRP_MAX_HOST + 1];
    int meta_port;
    const char *meta_token;          /* --metaserver-token; NULL: --token, else GRIDRPC_TOKEN */
    char adv_host[GRP_MAX_HOST + 1]; /* --advertise; port 0: the listening address */
    int adv_port;
    const char *name; /* --name; NULL: "gridrpcd on HOSTNAME" */
    double speed;     /* --speed, flops/s; 0: measured at start */
    /* Remote data (gsv_data.c): --data-memory bytes, --data-grace and --data-lease seconds. */
    uint64_t data_memory;
    double data_grace, data_lease;
    /* Two-phase calls (gsv_jobs.c) */
    const char *job_dir; /* --job-dir; NULL: $XDG_STATE_HOME/gridrpc/jobs-PORT or ~/.local/state/... */
    double job_keep;     /* --job-keep seconds: a finished job is removed this long after it ended */
    uint64_t job_quota;  /* --job-quota: bytes of kept SUBMITs and results one owner may hold */
    /* The key handshake (gsv_auth.c); NULL when not given. */
    const char *key_file;      /* --key-file: clients must prove one of its keys */
    const char *meta_key_file; /* --metaserver-key-file; NULL: --key-file */
    const char **copy_to;      /* --copy-to HOST:PORT: DATA_COPY destinations trusted (gsv_copy_trust.c) */
    unsigned ncopy_to;
    /* TLS (grw_tls.h): --tls-cert and --tls-key make the listener TLS only; --tls-ca is the
     * CA file for the TLS servers this one connects to (metaserver, data copies). */
    const char *tls_cert, *tls_key, *tls_ca;
    /* Limits on what peers hold (gsv_limits.c, gsv_listen.c; docs/server.md's table). */
    unsigned max_conns;            /* --max-connections: open at once */
    unsigned max_conns_per_addr;   /* --max-connections-per-address */
    unsigned max_calls_per_conn;   /* --max-calls-per-connection: waiting or running, one connection */
    unsigned max_calls;            /* --max-calls: waiting or running, every connection */
    unsigned max_objects_per_conn; /* --max-objects-per-connection: remote objects one connection owns */
    unsigned
        max_object_processes; /* --max-object-processes: objects alive at once, each in its own executor */
    unsigned max_sessions_per_conn; /* --max-sessions-per-connection: data sessions one connection uses */
    uint64_t max_call_memory;       /* --max-call-memory: bytes of arguments held by those calls */
    double idle_timeout;            /* --idle-timeout seconds; 0: never */

    /* Safe defaults (gdm_secure.c; docs/server.md, "Opening a server to a network") */
    int insecure;                 /* --insecure: a non-loopback --host with no key and no TLS */
    const char *token_on_cmdline; /* "--token" when a token was typed there (warned about) */
    char token_buf[GRP_MAX_TOKEN + 1], meta_token_buf[GRP_MAX_TOKEN + 1]; /* what token, meta_token hold */
} gsv_options;

/* Parses ARGV into OPT. Returns -1 to go on, or an exit status: 0 after --help or
 * --version, 2 after a usage error (already reported on stderr). */
int gsv_options_parse(int argc, char **argv, gsv_options *opt);
void gsv_options_free(gsv_options *opt);

/* ---------------------------------------------------------------- logging */

/* The daemons' shared log (runtime/common/gr_log.c), under this prefix; main calls
 * gr_log_init("gridrpcd", level) once. */
#define gsv_log gr_log
#define gsv_log_enabled gr_log_enabled

/* ---------------------------------------------------------------- module registry */

typedef struct gsv_function {
    const gridrpc_stub_function *stub;
    grd_desc *desc;    /* decoded once at load; lives as long as the server */
    char *qualified;   /* "module/function" */
    const char *plain; /* points into qualified, after the '/' */
} gsv_function;

typedef struct gsv_module {
    void *handle;
    char *path;
    const gridrpc_stub_module *table;
} gsv_module;

typedef struct gsv_registry {
    gsv_module *mods;
    unsigned nmods;
    gsv_function *fns; /* sorted by qualified name */
    unsigned nfns;
    gsv_function **by_plain;    /* the same functions sorted by plain name */
    struct gsv_class **classes; /* DefClass classes of every module, in load order (gsv_class.c) */
    unsigned nclasses;
} gsv_registry;

/* A class of remote objects (DefClass) and its methods, each served like a function
 * (its gsv_function's qualified name is "module/Class.method"). */
typedef struct gsv_class {
    const gridrpc_stub_class *stub;
    char *qualified;   /* "module/Class" */
    const char *plain; /* after the '/' */
    gsv_function *methods;
    unsigned nmethods;
    const gsv_function *init, *final; /* _initialize and _finalize: a method, or a no-op of the class */
    gsv_function noop[2]; /* the no-ops: no stub (nothing runs), a descriptor without parameters */
} gsv_class;

/* Adds the classes of table T (loaded from PATH), checking each the way functions are. */
int gsv_classes_add(gsv_registry *reg, const gridrpc_stub_module_classes *t, const char *path, gr_err *e);
/* Frees the classes from index N on (N = 0: all of them). */
void gsv_classes_truncate(gsv_registry *reg, unsigned n);
/* Finds class NAME ("module/Class", or "Class" when unique); E says why not. */
const gsv_class *gsv_class_find(const gsv_registry *reg, const char *name, gr_err *e);
/* Finds method METHOD of C; E names the class and its methods when there is none. */
const gsv_function *gsv_class_method(const gsv_class *c, const char *method, gr_err *e);
/* The method NAME ("module/Class.method" or "Class.method"), for GET_DESCRIPTOR. */
const gsv_function *gsv_method_find(const gsv_registry *reg, const char *name, gr_err *e);

/* Loads the module at PATH. Returns GRID_OK, or an error naming the file. A module
 * whose name is already loaded is skipped with a warning (the first one wins). */
int gsv_registry_load(gsv_registry *reg, const char *path, gr_err *e);
/* Loads every *.so in DIR (sorted by name); a bad module is logged and skipped.
 * MISSING_OK: a directory that does not exist is not an error. */
int gsv_registry_load_dir(gsv_registry *reg, const char *dir, int missing_ok, gr_err *e);
/* Builds the lookup indexes; call once after the last load. */
int gsv_registry_seal(gsv_registry *reg, gr_err *e);
/* Finds NAME ("function" or "module/function"). On failure E holds
 * GRID_ERR_NOT_FOUND and a message naming NAME (or the candidates of an ambiguous
 * plain name), the function served it is a typo of, if one is close, and the command
 * that lists them with the address C's client reached (C: NULL, none: "HOST:PORT"). */
struct gsv_conn;
const gsv_function *gsv_registry_find(const gsv_registry *reg, const char *name, const struct gsv_conn *c,
                                      gr_err *e);
/* Looks up openblas_set_num_threads: globally, else in the modules' dependencies. */
void *gsv_registry_find_symbol(const gsv_registry *reg, const char *sym);
void gsv_registry_free(gsv_registry *reg);

/* ---------------------------------------------------------------- scheduler */

struct gsv_job;
struct gsv_server;

/* What a worker does with a job it took off the queue: gsv_call_run in gridrpcd. */
typedef void (*gsv_runner)(struct gsv_server *s, struct gsv_job *job);

typedef struct gsv_sched {
    gsv_runner run; /* given at start: the queue hands jobs to it and knows nothing of calls */
    pthread_mutex_t lock;
    pthread_cond_t work;   /* a job was queued, or stopping */
    pthread_cond_t idle;   /* running dropped to 0 */
    struct gsv_job **heap; /* binary heap ordered by gsv_job_before */
    size_t len, cap;
    uint64_t seq;     /* arrival counter: FCFS order and SJF ties */
    unsigned running; /* calls being invoked or answered */
    unsigned threads; /* live worker threads (pool and thread mode) */
    int stopping;
    pthread_t *pool;
    unsigned npool;
    struct gsv_job *running_list; /* jobs being invoked: CANCEL flags them */
    struct gsv_fstat *fstats;     /* per function (registry order): what its runs took */
    double mean_run_s;            /* EWMA of every call's run seconds; 0: none yet */
} gsv_sched;

/* What the calls of one function took here (gsv_work.c, under sched.lock). */
typedef struct gsv_fstat {
    double run_s; /* EWMA of run seconds; 0: none yet */
    double speed; /* EWMA of Complexity flops / run second, for calls that declare flops */
} gsv_fstat;

/* ---------------------------------------------------------------- server */

struct gsv_conn;

typedef struct gsv_server {
    gsv_options opt;
    gsv_registry reg;
    unsigned cores;          /* CPUs this process may use, rounded up (gsv_cpus.c) */
    double cpus;             /* the same, unrounded: a cgroup quota may give 0.4 */
    unsigned workers;        /* pool size (thread mode: reported as cores) */
    int listen_fd;           /* dm.fd while the accept loop runs, else -1 */
    struct grw_tls_ctx *tls; /* the listener's TLS context (--tls-cert), or NULL */
    atomic_int stopping;     /* SIGTERM/SIGINT seen: no new calls run */

    gdm_daemon dm; /* the listener, the connections and their limits (runtime/daemon) */

    gsv_sched sched;

    /* openblas_set_num_threads, or NULL when no module links OpenBLAS. The setting is
     * process-wide, so changing it is serialised and skipped when unchanged. */
    void (*blas_set_threads)(int);
    pthread_mutex_t blas_lock;
    int blas_threads; /* under blas_lock: the value last set, 0 before the first */

    atomic_ullong calls_done; /* calls run and answered (HEARTBEAT's calls_done) */
    struct gsv_meta *meta;    /* the registration thread, or NULL (no --metaserver) */
    grp_keyset keys;          /* --key-file's, loaded at start; n 0: none (grp_auth.h) */
    grp_keyset meta_keys;     /* --metaserver-key-file's, else a copy of keys */
    atomic_uint calls_open;   /* calls read and not yet answered (gsv_limits.c) */
    atomic_ullong call_bytes; /* bytes of their arguments */
} gsv_server;

/* An absolute deadline for moving BYTES to or from a peer: the I/O timeout plus time
 * for the bytes at a floor rate, so large messages on slow links are not cut off. */
static inline long long gsv_io_deadline(const gsv_server *s, uint64_t bytes) {
    return gdm_io_deadline(&s->dm, bytes);
}

/* ---------------------------------------------------------------- connections */

/* A connection: the core's fields (fd, peer, addr, refs: the reader plus one per job
 * in flight, wlock, w, broken, tls, r, hello_done; gdm.h), then the server's. */
typedef struct gsv_conn {
    GDM_CONN_HEAD;
    gsv_server *srv;
    atomic_uint calls;      /* its calls read and not yet answered (gsv_limits.c) */
    atomic_uint objects;    /* remote objects it owns (gsv_object.c) */
    struct gsv_dconn *data; /* reader thread only: the data sessions it joined (gsv_data.c) */
    /* Who made what this connection makes (grp_session.h), set once at HELLO: "k:KEYID"
     * when a key was proved, else "s:" and its session's hash, else (an older client
     * with no session) "c:" and random digits of this connection alone, which may keep
     * no job; "" before HELLO. */
    char owner[GRP_OWNER_MAX + 1];
    int is_admin;  /* may reach every owner's jobs and objects: set by an admin credential */
    int is_server; /* proved a key tagged server (a server copying data here) */
} gsv_conn;

/* 1 if C may see and act on what OWNER made: the same owner, or an admin. A resource
 * with no owner ("") is reachable by an admin only. */
int gsv_owner_may(const gsv_conn *c, const char *owner);

/* The core's connection functions (gdm.h) on a server's connection: references (the
 * last closes the socket), sending an ERROR, aborting, and one whole message under the
 * write lock (gsv_reply_lock: NULL when the connection can no longer carry one). */
static inline void gsv_conn_ref(gsv_conn *c) {
    gdm_conn_ref(&c->core);
}
static inline void gsv_conn_unref(gsv_conn *c) {
    gdm_conn_unref(&c->core);
}
static inline int gsv_conn_send_error(gsv_conn *c, uint64_t request_id, int code, const char *msg) {
    return gdm_send_error(&c->core, request_id, code, msg);
}
static inline void gsv_conn_abort(gsv_conn *c) {
    gdm_conn_abort(&c->core);
}
static inline grw_writer *gsv_reply_lock(gsv_conn *c, uint64_t bytes) {
    return gdm_reply_lock(&c->core, bytes);
}
static inline int gsv_reply_unlock(gsv_conn *c, int rc, gr_err *e) {
    return gdm_reply_unlock(&c->core, rc, e);
}

/* ---------------------------------------------------------------- requests */

/* What the reader does after a request: go on; close (the peer left or the socket
 * failed); or refuse (an ERROR was just sent and the connection ends: linger). */
enum { GSV_KEEP = GDM_KEEP, GSV_CLOSE = GDM_CLOSE, GSV_REFUSE = GDM_REFUSE };

/* Reads the body of the request whose header is H and answers it (or queues it).
 * Returns GSV_KEEP, GSV_CLOSE or GSV_REFUSE. */
int gsv_request_serve(gsv_conn *c, const grw_header *h);
/* Handles a failure E while reading the request H (WHAT names it for the log). */
int gsv_request_failed(gsv_conn *c, const grw_header *h, const char *what, gr_err *e);
/* Reads the arguments of JOB, a call of F (BIND, when set, binds its data handles), and
 * queues it: GSV_KEEP; or, when they cannot be read, frees JOB and answers as
 * gsv_request_failed does for WHAT ("CALL message"). */
int gsv_request_queue_call(gsv_server *s, gsv_conn *c, struct gsv_job *job, const gsv_function *f,
                           const grw_header *h, int (*bind)(struct gsv_job *, gr_err *), const char *what);

/* ---------------------------------------------------------------- jobs and calls */

typedef struct gsv_callbacks gsv_callbacks; /* gsv_callback.c */
struct gsv_job;

/* Where the jobs of a kind run. Every job is taken off the queue by a worker thread; a
 * kind says whether its function may leave the daemon's process (an executor process,
 * gsv_exec.c) or must stay in it, because the job works on state the daemon holds
 * (an object's, a kept job's, the store's KEEP outputs) or waits on its connection's
 * reader (callbacks). The runner (gsv_call_answer) honours it. */
enum { GSV_WHERE_DAEMON = 0, GSV_WHERE_ISOLABLE = 1 };

/* What a job is and how it behaves, set by the request handler that makes it (CALL in
 * gsv_request.c, CALL_DATA in gsv_data_call.c, the object requests in gsv_object.c,
 * SUBMIT in gsv_jobs.c): the scheduler and the call runner only go through it, so
 * that no feature's code is named there. */
typedef struct gsv_job_kind {
    int where; /* GSV_WHERE_* */
    /* On a worker, once the job is taken off the queue: runs it, answers it and frees it. */
    void (*run)(struct gsv_server *s, struct gsv_job *job);
    /* The job is not run (canceled, refused, shutdown): answers it with CODE and MSG
     * (or keeps it for later) and frees it. */
    void (*fail)(struct gsv_server *s, struct gsv_job *job, int code, const char *msg);
    /* Optional, for the kinds run by gsv_call_answer: after the function returned in
     * the daemon's process and before RESULT goes. Returns GRID_OK, or the error (E)
     * that answers the call instead. */
    int (*ran)(struct gsv_job *job, gr_err *e);
    /* Optional: frees what the kind holds for the job (its priv, its callbacks); called
     * once, from gsv_job_free. */
    void (*release)(struct gsv_job *job);
} gsv_job_kind;

typedef struct gsv_job {
    const gsv_job_kind *kind;
    void *priv;           /* the kind's own state (its object, data refs, kept job); NULL: none */
    struct gsv_job *next; /* a queue of the kind's own (an object's jobs waiting their turn) */
    gsv_server *srv;      /* the server it runs on (a kept job has no connection) */
    gsv_conn *conn;       /* holds a reference; NULL for a kept job */
    gsv_callbacks *cb;    /* the function takes callbacks: their state (gsv_callback.c); else NULL */
    const gsv_function *fn;
    uint64_t request_id;
    double cost;                   /* predicted flops (SJF key) */
    uint64_t seq;                  /* arrival order */
    long long t_queued, t_started; /* read whole and queued; invoke began */
    uint64_t bytes_in;
    atomic_int canceled;           /* CANCEL arrived while it ran (grpc_is_canceled_np) */
    long long canceled_ns;         /* when the first cancel arrived (gsv_job_cancel); 0: none */
    struct gsv_job *rprev, *rnext; /* sched.running_list, under sched.lock, while invoked */
    int held;                      /* GSV_HELD_*: what gsv_limits_admit counted for it */
    uint64_t held_bytes;           /* the argument bytes it counted */
    grm_call call;                 /* arguments, buffers the job owns; last: sized for the function */
} gsv_job;

/* A new job of KIND calling F for REQUEST_ID on connection C (a reference is taken; NULL:
 * none) of server S, its arguments ready to read (gsv_job.c). NULL: out of memory. */
gsv_job *gsv_job_new(const gsv_job_kind *kind, gsv_server *s, gsv_conn *c, const gsv_function *f,
                     uint64_t request_id);
/* Frees JOB: its kind's release, its arguments, what the limits counted, its connection. */
void gsv_job_free(gsv_job *job);
/* Flags JOB canceled (grpc_is_canceled_np; an executor running it is ended after a
 * grace), noting when the first cancel arrived. */
void gsv_job_cancel(gsv_job *job);
/* Invokes JOB's function on this thread, flagged by a CANCEL while it runs
 * (grpc_is_canceled_np). */
void gsv_job_invoke(gsv_server *s, gsv_job *job);
/* In an executor: grpc_is_canceled_np reads FLAG (the shared region's) from now on. */
void gsv_job_cancel_flag(atomic_int *flag);

/* ---------------------------------------------------------------- executors (gsv_exec.c) */

/* Starts one executor process per worker (ARGC/ARGV: the server's command line, which
 * they load their modules from) and the thread that replaces those that die; returns
 * once all are ready, or an error. */
int gsv_exec_start(gsv_server *s, int argc, char **argv, gr_err *e);
/* 1 when FN's arguments can cross to an executor: no arrays of strings or file names,
 * no callback that takes text (those stay in-process in this version). */
int gsv_exec_carries(const gsv_function *fn);
/* 1 when JOB's function runs in an executor: its kind may leave the daemon
 * (GSV_WHERE_ISOLABLE), its arguments can cross (gsv_exec_carries), and the server is not
 * --in-process-unsafe. */
int gsv_exec_runs(const gsv_server *s, const gsv_job *job);
/* 1 when the objects of CLS each get an executor of their own (gsv_exec_actor_*): every
 * method's arguments can cross, and the server is not --in-process-unsafe. */
int gsv_exec_objects(const gsv_server *s, const gsv_class *cls);
/* A remote object's own executor process (gsv_exec_actor.c), as a Ray actor: it holds
 * the object's state, runs its methods one at a time, and its crash costs that object
 * and nothing else. */
typedef struct gsv_xactor gsv_xactor;
/* Starts one (waiting until it is ready); NULL with E when the server runs
 * --max-object-processes of them already or it cannot start. */
gsv_xactor *gsv_exec_actor_start(gsv_server *s, gr_err *e);
/* Runs JOB (a method of CLS) on A's executor: GRID_OK with the outputs in JOB's buffers,
 * or the error: the method crashed, was canceled or ran past a limit (the executor was
 * ended: the object is lost, and every later call of it fails saying so). */
int gsv_exec_actor_call(gsv_server *s, gsv_xactor *a, gsv_job *job, const gsv_class *cls, gr_err *e);
/* 1 when A's executor has ended (the object's state is gone). */
int gsv_exec_actor_lost(const gsv_xactor *a);
/* Ends A's executor and frees A (NULL: nothing). */
void gsv_exec_actor_end(gsv_xactor *a);
/* Runs JOB's function in a free executor (waiting for one) with BLAS threads: GRID_OK
 * with the outputs in JOB's buffers, or the error (E) that answers the call: the
 * executor died (it is replaced), a CANCEL ended it, a limit did (--call-timeout or
 * the function's IDL Timeout, --call-cpu, --call-memory), or no executor could be had
 * (GRID_ERR_BUSY: starting them keeps failing). */
int gsv_exec_call(gsv_server *s, gsv_job *job, int blas, gr_err *e);
/* At shutdown, once no worker runs: stops the supervisor thread and ends the idle
 * executors. */
void gsv_exec_stop(void);
/* Loads the modules the options name (gsv_main.c; the executors' too): 0, or 1 after
 * saying why on stderr. */
int gsv_modules_load(gsv_server *s);

/* ---------------------------------------------------------------- limits (gsv_limits.c) */

enum { GSV_HELD_SERVER = 1, GSV_HELD_CONN = 2 };
/* JOB's head was read (C, the connection it came on): counts it against
 * --max-calls-per-connection (when JOB has a connection), --max-calls and
 * --max-call-memory (BYTES now, of the NEED bytes it will hold in all) until
 * gsv_limits_release. Returns GRID_OK, or GRID_ERR_LIMIT with E naming the limit and
 * what to do, not the server's figures (nothing counted). */
int gsv_limits_admit(gsv_server *s, gsv_conn *c, gsv_job *job, uint64_t bytes, uint64_t need, gr_err *e);
/* JOB's call head was read from C: admits it (gsv_limits_admit: its head and every
 * array, OUT and WORK ones included) and reads its bulk, reserving the bytes that
 * arrive in steps as they come; a stall of --io-timeout fails the read
 * (GRID_ERR_TIMEOUT). */
int gsv_limits_read_call(gsv_server *s, gsv_conn *c, gsv_job *job, gr_err *e);
/* Uncounts what JOB holds (from gsv_job_free). */
void gsv_limits_release(gsv_server *s, gsv_job *job);
/* A call head refused because an array is larger than the server takes (E, from
 * grp_read_call_head) gets the option's name and what to do appended. */
void gsv_limits_name_array(gr_err *e);
/* 1 when C holds nothing the server would lose by closing it: no call in flight, no
 * remote object, no data session (reader thread only). */
int gsv_conn_is_idle(gsv_conn *c);
/* Objects C owns now (gsv_object.c). */
unsigned gsv_objects_owned(const gsv_conn *c);
/* 1 when a data session C joined still holds data (gsv_data.c; reader thread only). */
int gsv_data_conn_holds(const gsv_conn *c);

/* ---------------------------------------------------------------- remote objects */

/* gsv_object.c. An object belongs to the connection that created it and dies with it
 * (its _finalize runs); any connection may invoke it by id. Its jobs (create, invoke,
 * destroy) run one at a time in arrival order: only one is in the scheduler at once,
 * the rest wait in the object's own queue. */
/* OBJ_CREATE, OBJ_INVOKE, OBJ_DESTROY: read and answered (or queued) like CALL. */
int gsv_object_request(gsv_conn *c, const grw_header *h);
/* The connection C closes: its objects are destroyed (their _finalize runs). */
void gsv_objects_conn_closed(gsv_conn *c);
/* Objects alive now (tests, logs). */
unsigned gsv_objects_count(void);

/* CANCEL of an invocation that waits in its object's queue (not yet in the scheduler):
 * takes it out and returns it (the caller answers it), or NULL. */
gsv_job *gsv_object_cancel(gsv_conn *c, uint64_t request_id);

/* The scheduler's runner: runs JOB as its kind says (kind->run), which answers and frees it. */
void gsv_call_run(gsv_server *s, gsv_job *job);
/* The run of a function call answered on its connection (the CALL and CALL_DATA kinds):
 * sets the BLAS threads, invokes the function (in an executor process when
 * gsv_exec_runs says so), sends RESULT (or ERROR), logs the call and frees JOB. A large
 * result, or one for a connection busy sending another, is sent by a thread of its own
 * (the worker goes on). */
void gsv_call_answer(gsv_server *s, gsv_job *job);
/* Sets the BLAS threads and runs JOB's function: in an executor process when
 * gsv_exec_runs says so (a CANCEL or a limit ends it: the error in E), else on this
 * thread. GRID_OK once the function returned. */
int gsv_call_invoke(gsv_server *s, gsv_job *job, gr_err *e);
/* Shutdown: waits until no such sender thread is left, or DEADLINE_NS; returns how
 * many are left. */
unsigned gsv_call_wait_senders(long long deadline_ns);
/* JOB is not run: its kind answers it with CODE/MSG (kind->fail) and frees it. */
void gsv_call_fail(gsv_server *s, gsv_job *job, int code, const char *msg);
/* The fail of the kinds answered on a connection: ERROR CODE/MSG, logged, JOB freed. */
void gsv_call_refuse(gsv_server *s, gsv_job *job, int code, const char *msg);
/* Logs one answered call at info level: time, peer, function, bytes in and out, queue
 * and run time, result (CODE and MSG for an error). */
void gsv_call_log(const char *peer, const char *function, uint64_t request_id, uint64_t bytes_in,
                  uint64_t bytes_out, long long queue_ns, long long run_ns, int code, const char *msg);
/* The same for a call that was queued at T_QUEUED (gr_now_ns, CLOCK_MONOTONIC): the line
 * also says `at=NS`, so that a client on the same clock (or one that corrects the skew)
 * can place the call's enqueue and dequeue on its own time line (bench/lanwan.sh). */
void gsv_call_log_at(const char *peer, const char *function, uint64_t request_id, uint64_t bytes_in,
                     uint64_t bytes_out, long long queue_ns, long long run_ns, long long t_queued, int code,
                     const char *msg);

/* Starts the workers (pool mode); every job taken off the queue goes to RUN, which
 * answers and frees it. */
int gsv_sched_start(gsv_server *s, gsv_runner run, gr_err *e);
/* Queues JOB (pool mode) or starts a thread for it (thread mode). Returns GRID_OK, or
 * an error code (JOB untouched, still the caller's) when the server is stopping or no
 * thread could be made. */
int gsv_sched_submit(gsv_server *s, gsv_job *job, gr_err *e);
/* Removes the queued call REQUEST_ID of CONN; returns it (the caller answers it), or
 * NULL when it is not queued. A call being invoked is flagged instead, for
 * grpc_is_canceled_np; it finishes and is answered as usual, unless it runs in an
 * executor: that one is ended after a grace (gsv_exec.c) and the call answered CANCELED. */
gsv_job *gsv_sched_cancel(gsv_server *s, gsv_conn *conn, uint64_t request_id);
/* CONN closed: its running calls are flagged canceled (an executor's is ended after the
 * grace), and its queued ones are taken out and returned as a list through their
 * `rnext` (the caller fails each: nobody waits for them any more). */
gsv_job *gsv_sched_cancel_conn(gsv_server *s, gsv_conn *conn);
/* Takes JOB out of the queue if it is there (and its priv is still PRIV: the pointer may
 * have been freed and reused since the caller saw it); 1 then (the caller answers it). */
int gsv_sched_take(gsv_server *s, gsv_job *job, const void *priv);
/* Marks JOB as being invoked (cancelable by flag) or no longer. */
void gsv_sched_invoking(gsv_server *s, gsv_job *job, int on);

/* Stops taking calls: every queued one is answered ERROR GRID_ERR_SHUTDOWN. */
void gsv_sched_stop(gsv_server *s);
/* Waits until no call runs, or DEADLINE_NS; returns the number still running. */
unsigned gsv_sched_wait_idle(gsv_server *s, long long deadline_ns);
/* Joins the pool's threads (only after gsv_sched_wait_idle returned 0). */
void gsv_sched_join(gsv_server *s);
void gsv_sched_load(gsv_server *s, unsigned *running, unsigned *queued);
/* Learns from a call of JOB's function that ran RUN_NS (gsv_work.c). */
void gsv_work_learn(gsv_server *s, const struct gsv_job *job, long long run_ns);
/* The predicted seconds the running and queued calls still need (HEARTBEAT's work_s). */
double gsv_work_outstanding(gsv_server *s);
/* Calls running now (taken off the queue and not yet answered). */
unsigned gsv_sched_running(gsv_server *s);

/* After a call's arguments were read into JOB: its cost (SJF), callbacks, then the
 * queue; answers JOB itself when it cannot be queued (gsv_request.c). */
void gsv_call_queue(gsv_server *s, gsv_job *job);
/* Reads the arguments of a CALL, CALL_DATA or SUBMIT from C into JOB->call (grm_init'ed):
 * the head, BIND (may be NULL: CALL_DATA binds its data handles there), then the bulk
 * under a deadline its size sets. Sets job->bytes_in. */
int gsv_call_read_args(gsv_server *s, gsv_conn *c, gsv_job *job, int (*bind)(gsv_job *, gr_err *), gr_err *e);

/* ---------------------------------------------------------------- remote data */

/* gsv_data.c: the store of remote data, keyed by (session, handle). Each datum is a
 * reference-counted buffer: the store holds one reference, each call reading it one
 * more, so a replacement or a free never pulls memory from under a running call. The
 * bytes of live buffers plus reservations (a DATA_PUT being read, the KEEP outputs of
 * queued calls) stay within --data-memory. A session is freed whole when none of its
 * connections has been open for --data-grace, or when unused for --data-lease (a
 * sweeper thread). One lock (the store's), never held while another is taken. */
typedef struct gsv_dbuf {
    unsigned refs; /* under the store's lock */
    uint32_t type; /* GRD_CHAR..GRD_DCOMPLEX */
    uint64_t count, bytes;
    void *p; /* NULL when bytes is 0 */
} gsv_dbuf;

/* Starts the sweeper (after the options are parsed); stops it and frees everything. */
int gsv_data_start(gsv_server *s, gr_err *e);
void gsv_data_stop(void);
/* C names SESSION: joins it (creating it when new) and marks it used now, if C may use
 * it: the session's owner (or an admin, or a proved server key), or any connection
 * while the session has no owner. PUT: C is to store a handle there; a connection with
 * neither key nor session may then join a session it does not own as a guest (*GUEST
 * 1: it may add handles, never replace one). Else GRID_ERR_ARGS, as for an unknown
 * handle. */
int gsv_data_join(gsv_conn *c, uint64_t session, int put, int *guest, gr_err *e);
/* 1 if SESSION holds HANDLE. */
int gsv_data_has(uint64_t session, uint64_t handle);
/* 1 if C may end SESSION (its owner, an admin, a server key; or no one owns it). */
int gsv_data_may_end(const gsv_conn *c, uint64_t session);
/* C closes: its sessions lose a connection (the grace period starts at the last). */
void gsv_data_conn_closed(gsv_conn *c);
/* Reserves BYTES of --data-memory for WHAT ("DATA_PUT", "the KEEP output of ..."), or
 * GRID_ERR_LIMIT saying what the server holds and what to do. */
int gsv_data_reserve(uint64_t bytes, const char *what, gr_err *e);
void gsv_data_unreserve(uint64_t bytes);
/* Stores P (malloc'd; grp_data_bytes(TYPE, COUNT) bytes, reserved before) as handle
 * (SESSION, HANDLE), creating or replacing it: the reservation becomes use. With REF,
 * *REF gets a reference of the caller's to the new buffer (NULL if it could not be
 * stored: P is then still the caller's). Returns the store's bytes held after it. */
uint64_t gsv_data_store(uint64_t session, uint64_t handle, uint32_t type, uint64_t count, void *p,
                        gsv_dbuf **ref);
/* A new reference to the handle's buffer, or NULL when the session has no such handle. */
gsv_dbuf *gsv_data_get(uint64_t session, uint64_t handle);
void gsv_data_release(gsv_dbuf *b);
/* Forgets the handle; returns its bytes (0 when there was none: *found 0). */
uint64_t gsv_data_free(uint64_t session, uint64_t handle, int *found);
/* Forgets every handle of SESSION; *n and *bytes: what was freed. */
void gsv_data_session_end(uint64_t session, unsigned *n, uint64_t *bytes);
/* Bytes held (live buffers) and reserved now. */
void gsv_data_usage(uint64_t *held, uint64_t *reserved);
/* "1.5 MiB": BYTES for people, in BUF. */
const char *gsv_data_size(uint64_t bytes, char *buf, size_t n);
/* The message of an unknown handle. */
int gsv_data_unknown(uint64_t handle, gr_err *e);

/* gsv_data_req.c: DATA_PUT, DATA_GET, DATA_FREE, DATA_COPY, SESSION_END and CALL_DATA,
 * read (and answered, or queued) like the other requests. */
int gsv_data_request(gsv_conn *c, const grw_header *h);
/* gsv_data_copy.c: DATA_COPY's transfer, on a thread of its own (the reader goes on). */
struct grp_data_copy;
/* Takes the reference B; answers the request itself (DATA_OK or ERROR) when done. */
/* DATA_COPY's destination HOST (scheme stripped or not) PORT: GRID_OK when --copy-to
 * names it or this server's metaserver lists it up; else GRID_ERR_CONFIG with why in E
 * (for the log only: the client gets one message whatever the reason). */
int gsv_copy_trusted(gsv_server *s, const char *host, unsigned port, gr_err *e);
int gsv_data_copy_start(gsv_conn *c, uint64_t request_id, const struct grp_data_copy *m, gsv_dbuf *b,
                        gr_err *e);
/* "doubles", "scomplex numbers": elements of TYPE, for messages. */
const char *gsv_data_elems(uint32_t type);
/* gsv_data_call.c: CALL_DATA: read, bind the refs, queue (a job of its own kind). */
int gsv_data_call_request(gsv_conn *c, const grw_header *h);

/* ---------------------------------------------------------------- callbacks (gsv_callback.c) */

/* After JOB's arguments were read: points each callback parameter's entry of the
 * argument vector at the server's side of it (in-process), and readies the callbacks an
 * executor asks for (gsv_callback_run). */
int gsv_callback_attach(gsv_server *s, gsv_job *job, gr_err *e);
/* The descriptor of callback parameter INDEX of JOB (sized by the call's values; made at
 * its first use and kept with the job); NULL (E: why) when it has no callbacks there. */
const grd_desc *gsv_callback_desc(gsv_job *job, uint32_t index, gr_err *e);
/* Runs callback INDEX of JOB with the argument vector ARGS (its descriptor's layout),
 * as the function's own call of it would in-process: for a function in an executor. */
int gsv_callback_run(gsv_job *job, uint32_t index, void **args);
/* After invoke: the code of a callback that failed the call (E: why), else GRID_OK (a
 * kind's ran). */
int gsv_callback_failed(gsv_job *job, gr_err *e);
/* Frees JOB's callbacks, if any (from a kind's release). */
void gsv_callback_detach(gsv_job *job);
/* The reader read the header H of CALLBACK_RESULT: reads it into the waiting callback's
 * buffers and wakes it. Returns GSV_KEEP or GSV_CLOSE. */
int gsv_callback_result(gsv_conn *c, const grw_header *h);
/* CANCEL of call REQUEST_ID: a callback it waits for returns GRID_ERR_CANCELED. */
void gsv_callback_cancel(gsv_conn *c, uint64_t request_id);
/* The reader of C ends: every callback waiting on C returns GRID_ERR_CONN_LOST. */
void gsv_callback_conn_closed(gsv_conn *c);

/* ---------------------------------------------------------------- two-phase calls (gsv_jobs.c) */

/* Opens (creates 0700) the job folder, reads the jobs kept there (unfinished ones are
 * queued to run again) and starts the thread that removes expired ones. After
 * gsv_sched_start and gsv_listen (the default folder is named after the port). */
int gsv_jobs_start(gsv_server *s, gr_err *e);
/* Shutdown: stops the expiry thread. */
void gsv_jobs_stop(gsv_server *s);
/* SUBMIT, FETCH, JOBS, FORGET, JOB_INFO and JOB_CANCEL: read and answered by the reader. */
int gsv_jobs_submit(gsv_conn *c, const grw_header *h);
int gsv_jobs_fetch(gsv_conn *c, const grw_header *h);
int gsv_jobs_list(gsv_conn *c, const grw_header *h);
int gsv_jobs_forget(gsv_conn *c, const grw_header *h);
int gsv_jobs_info(gsv_conn *c, const grw_header *h);
int gsv_jobs_cancel(gsv_conn *c, const grw_header *h);

/* ---------------------------------------------------------------- listener */

/* Sets up the daemon core (s->dm) for the options: 0, or -1 when out of memory. */
int gsv_daemon_init(gsv_server *s);
/* Binds the listening socket and prints "listening on HOST:PORT" on stdout. */
int gsv_listen(gsv_server *s, gr_err *e);
/* The core's hooks for a server's connections (gsv_conn.c). */
void gsv_conn_hooks(gdm_config *cfg);

/* ---------------------------------------------------------------- metaserver */

/* With --metaserver: starts the thread that registers this server and sends its
 * heartbeats, reconnecting whenever the metaserver is lost (after gsv_listen: the
 * advertised port defaults to the listening one). Nothing without --metaserver. */
int gsv_meta_start(gsv_server *s, gr_err *e);
/* Shutdown: wakes the thread wherever it waits and joins it (within about a second). */
void gsv_meta_stop(gsv_server *s);
/* FUNCTION killed its executor (MSG: the call's GRID_ERR_CRASHED message): the
 * registration thread tells the metaserver (CRASHED) soon, without blocking the caller.
 * Nothing happens without --metaserver. */
void gsv_meta_crashed(gsv_server *s, const char *function, const char *msg);

/* ---------------------------------------------------------------- keys (gsv_auth.c) */

/* Loads --key-file into s->keys and --metaserver-key-file (else the same keys) into
 * s->meta_keys; GRID_ERR_CONFIG naming the file and what to do. */
int gsv_keys_load(gsv_server *s, gr_err *e);
/* After an accepted HELLO (header H) on C: the key handshake when the server has keys
 * (grp_auth_serve), then HELLO_OK (OK). GSV_KEEP, or GSV_REFUSE / GSV_CLOSE after
 * answering ERROR and logging why. */
int gsv_auth_hello(struct gsv_conn *c, const grw_header *h, const grp_hello *m, const grp_hello_ok *ok);

/* The start-up speed estimate sent in REGISTER, flops/s: a cache-resident double
 * matrix product timed on this thread for about 20 ms (at most 50), times CORES. */
double gsv_speed_measure(double cpus);
/* The CPUs this process may use: online processors, narrowed by the affinity mask and
 * a cgroup CPU quota (fractional: a quota of 40% of a CPU is 0.4). */
double gsv_cpus_available(void);

#endif /* GSV_H */
