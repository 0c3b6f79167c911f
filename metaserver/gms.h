/* gms.h: the internals of gridmetad, the metaserver, shared by its files (prefix gms_).
 * One file per job: options, logging, the in-memory state (servers, links, pending work,
 * decisions), the schedulers (pure functions over a snapshot of candidates), the SQLite
 * registry and its writer thread, the network (the daemon core of runtime/daemon: the
 * listener, one thread per connection),
 * the status JSON and the HTTP server, main.
 *
 * Threads and what they own:
 *   main       options, loads the registry, accepts connections, runs shutdown;
 *   conn       one per connection: reads a request, asks the state, answers;
 *   sweeper    marks servers down after missed heartbeats, drops stale pending work;
 *   db writer  applies queued registry changes to SQLite in batched transactions;
 *   http       libmicrohttpd's polling thread (GET / and GET /api/status).
 * Locks: gms_state.lock guards all the state; gms_db's queue has its own; they are
 * never nested except state -> db queue (the state enqueues writes while it holds its
 * lock; the writer never takes the state's lock). */
#ifndef GMS_H
#define GMS_H

#include <pthread.h>
#include <sys/socket.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "gdm.h"
#include "gr_error.h"
#include "gr_log.h"
#include "grp_auth.h"
#include "grp_meta.h"
#include "grp_proto.h"
#include "grw_tls.h"

/* ---------------------------------------------------------------- logging */

enum { GMS_LOG_ERROR = 0, GMS_LOG_WARN = 1, GMS_LOG_INFO = 2, GMS_LOG_DEBUG = 3 };
/* The daemons' shared log (runtime/common/gr_log.c), under this prefix; main calls
 * gr_log_init("gridmetad", level) once. */
#define gms_log gr_log
#define gms_log_enabled gr_log_enabled

/* ---------------------------------------------------------------- options */

#define GMS_MAX_HTTP_HOSTS 16

typedef struct gms_options {
    const char *host;
    int port;
    const char *db; /* file, or ":memory:" */
    int policy;     /* GRP_POLICY_MCT, _LEAST_LOAD, _ROUND_ROBIN */
    int http_port;  /* -1: no status page; 0: any free port */
    const char *http_host;
    const char *token; /* NULL: none required */
    unsigned heartbeat_ms;
    unsigned down_after; /* missed heartbeats before a server is down */
    unsigned max_conns;
    unsigned max_conns_per_addr; /* --max-connections-per-address */
    double io_timeout;           /* seconds a request may stall in the middle; 0: never */
    double idle_timeout;         /* --idle-timeout: a client connection quiet this long closes; 0: never */
    double max_hold;             /* seconds a SCHEDULE may wait while every server is full; 0: never */
    double crash_hold;           /* --crash-hold: seconds a function that crashed on two servers is held */
    double pending_max;          /* --pending-max: seconds a decision's work counts unreported */
    double forget_after;         /* --forget-after: seconds down before a server is deleted; 0: never */
    int log_level;
    /* The key handshake after HELLO (grp_auth.h) */
    const char *key_file;           /* --key-file; NULL: none */
    grp_keyset keys;                /* its keys, loaded by main (n 0: no handshake) */
    const char *tls_cert, *tls_key; /* --tls-cert/--tls-key: the protocol listener is TLS only */

    /* Safe defaults (gdm_secure.c; docs/server.md, "Opening a server to a network") */
    int insecure;                               /* --insecure: a non-loopback --host with no key and no TLS */
    int token_on_cmdline;                       /* --token was typed on the command line (warned about) */
    char token_buf[GRP_MAX_TOKEN + 1];          /* what token holds when given by --token or --token-file */
    const char *http_allow[GMS_MAX_HTTP_HOSTS]; /* --http-allow-host: more names the page answers */
    int http_nallow;
} gms_options;

/* Parses ARGV into O. Returns -1 to go on, or an exit status: 0 after --help or
 * --version, 2 after a usage error (reported on stderr). */
int gms_options_parse(int argc, char **argv, gms_options *o);

/* ---------------------------------------------------------------- model constants */

#define GMS_DEFAULT_SPEED 1e9        /* flops/s of a server that gave no estimate */
#define GMS_DEFAULT_BANDWIDTH 100e6  /* bytes/s of a link nothing is known about */
#define GMS_DEFAULT_LATENCY 0.5e-3   /* seconds, one round trip */
#define GMS_LINK_MAX_AGE_MS 600000   /* link measurements older than this are stale */
#define GMS_EWMA_ALPHA 0.3           /* weight of a new sample */
#define GMS_SMALL_BYTES 65536        /* transfers below this measure latency only */
#define GMS_MIN_SPEED_RUN_S 1e-3     /* shorter runs say too little about the speed */
#define GMS_DEFAULT_CALL_S 0.01      /* seconds of a call nothing predicts (no flops, no history) */
#define GMS_DECISIONS 200            /* the ring of recent decisions */
#define GMS_DECISION_CANDS 8         /* candidates kept per decision (the best ones) */
#define GMS_RECENT 200               /* the ring of recently reported calls (status page) */
#define GMS_HISTORY 300              /* load samples per server: 5 minutes at 1/s */
#define GMS_HISTORY_STEP_MS 1000     /* at most one sample per second */
#define GMS_PENDING_SLOTS 65536      /* outstanding decisions tracked at once */
#define GMS_MAX_SITES 4096           /* client sites remembered */
#define GMS_DEFAULT_HOLD_S 20.0      /* --max-hold's default (at most GRP_MAX_HOLD_S) */
#define GMS_HOLD_SLICE_NS 20000000LL /* a held request reads its client's REPORTs this often */
/* What a client's SCHEDULE may make the state hold (docs/metaserver.md "Bounds"). */
#define GMS_FIGURE_SLACK 16.0              /* its flops and bytes: at most this times the largest measured */
#define GMS_DEFAULT_PENDING_MAX_S 600.0    /* --pending-max's default */
#define GMS_DEFAULT_FORGET_AFTER_S 86400.0 /* --forget-after's default: a day */
/* A function that crashed its executors on two servers within GMS_CRASH_WINDOW_NS is held
 * back from new calls for --crash-hold (gms_crash.c). */
#define GMS_CRASH_WINDOW_NS 60000000000LL
#define GMS_DEFAULT_CRASH_HOLD_S 300.0
#define GMS_CRASH_FNS 1024 /* functions whose crashes are remembered at once */
#define GMS_CRASH_RECENT 8 /* crashes remembered per function */
/* gridrpcd tries a lost metaserver again at least every 5 s (META_BACKOFF_MAX in
 * runtime/server/gsv_meta.c): a server restored from the registry at start is given that
 * long (and a second to connect) to come back, on top of the missed heartbeats, before it
 * is declared down. Shorter, and every call after a restart fails with "every server is
 * unavailable" until the servers' next try (tests/faults/meta-restart.sh). */
#define GMS_RESTART_GRACE_NS 6000000000LL

/* ---------------------------------------------------------------- schedulers */

/* What the scheduler sees of one server for one call (gms_sched.c is pure: the state
 * fills these under its lock; tests and the bench fill them by hand). */
typedef struct gms_cand {
    uint64_t id;
    uint32_t cores, workers, running, queued; /* from the last heartbeat */
    double work_s;                            /* the server's prediction of their seconds; 0: none */
    uint32_t pending;                         /* assigned by us, not yet reported done */
    double pending_s;                         /* their predicted compute seconds */
    double fresh_s;                           /* of those, assigned since the last heartbeat */
    double loadavg;
    double speed;       /* flops/s for this function: measured, estimate or default */
    double mean_call_s; /* mean run seconds of a call on this server; 0: unknown */
    double fn_run_s;    /* mean run seconds of this function here; 0: unknown */
    double bandwidth;   /* bytes/s between the asking site and this server */
    double latency;     /* seconds */
    int assumed_link;   /* bandwidth or latency is not a measurement of this link */
    /* outputs of gms_sched_pick */
    double estimate, wait, transfer, compute;
} gms_cand;

typedef struct gms_job {
    double flops;
    uint64_t bytes_in, bytes_out;
    /* Servers that already hold some of the inputs (remote data): those bytes need not
     * travel there. NULL when none. */
    const grp_affinity *affinity;
    uint32_t naffinity;
} gms_job;

/* Calls outstanding on C: those the heartbeat saw plus pending ones that had not yet
 * reached the server (a pending call that reached it is in running + queued). */
uint32_t gms_cand_outstanding(const gms_cand *c);
/* The calls C may hold before it is full: what its workers run at once plus a core's
 * worth each queued; beyond that a call waits at the metaserver, where a later and
 * better decision can still be made. */
uint32_t gms_cand_slots(const gms_cand *c);
int gms_cand_full(const gms_cand *c);
/* Fills every candidate's estimate (wait + transfer + compute, the MCT model, whatever
 * the policy: decisions are explained the same way) and returns the index POLICY
 * chooses, or -1 when N is 0. RR: the rotation counter of round-robin. */
int gms_sched_pick(int policy, const gms_job *job, gms_cand *c, size_t n, uint64_t rr);
/* Fills C's estimate alone (as gms_sched_pick does for each candidate). */
void gms_sched_estimate(const gms_job *job, gms_cand *c);

/* ---------------------------------------------------------------- state */

typedef struct gms_fn {
    char *name;             /* "module/function" as registered */
    const char *short_name; /* after the last '/' */
    uint64_t hash;
    uint32_t flags;
    double speed; /* measured flops/s EWMA; 0: none */
    double run_s; /* measured run seconds EWMA; 0: none */
    uint32_t samples;
    /* The largest figures a completed call of it reported (in memory only): a client's
     * SCHEDULE may not claim more than GMS_FIGURE_SLACK times these. 0: none yet. */
    double max_flops, max_run_s;
    uint64_t max_bytes_in, max_bytes_out;
    /* What the REPORTs of it said (in memory only: the status page's per-function counts
     * and means; the EWMAs above follow the recent calls, these the whole run). */
    uint64_t calls, failures;
    double total_s, run_total_s; /* summed over the completed calls */
} gms_fn;

typedef struct gms_link {
    uint32_t site; /* index into gms_state.sites */
    double bandwidth, latency;
    uint32_t bw_samples, lat_samples;
    int64_t bw_unix_ms, lat_unix_ms; /* last updates (0: never) */
} gms_link;

typedef struct gms_sample {
    int64_t unix_ms;
    uint32_t running, queued;
    double loadavg;
} gms_sample;

typedef struct gms_server {
    uint64_t id;
    char owner[GRP_AUTH_KEY_ID_HEX + 1]; /* key id that registered it ("": none yet; gms_owner.c) */
    char name[GRP_MAX_PEER_NAME + 1];
    char host[GRP_MAX_HOST + 1];
    uint32_t port;
    uint32_t cores, workers, running, queued;
    double loadavg;
    double work_s;      /* HEARTBEAT's prediction of the seconds its calls still need */
    double reg_speed;   /* REGISTER's estimate; 0: none */
    double speed;       /* measured EWMA over all its functions; 0: none */
    double mean_call_s; /* measured run seconds EWMA; 0: none */
    int up;
    int64_t persisted_ms;      /* last time its load was queued for the registry */
    long long last_beat_ns;    /* monotonic */
    long long down_not_before; /* monotonic: not declared down before (a restart's or a stall's grace) */
    int64_t last_beat_unix_ms;
    uint64_t calls, failures;
    uint32_t pending;
    double pending_s;
    double fresh_s; /* pending seconds assigned since the last heartbeat */
    gms_fn *fns;
    uint32_t nfns;
    gms_link *links;
    uint32_t nlinks, caplinks;
    gms_sample hist[GMS_HISTORY];
    uint32_t hist_head, hist_n;
} gms_server;

/* A name -> value map (open addressing, power-of-two capacity; keys are copied). */
typedef struct gms_map {
    char **keys;
    uint32_t *vals;
    uint32_t cap, n;
} gms_map;

int gms_map_put(gms_map *m, const char *key, uint32_t val);        /* 0, or -1: out of memory */
int gms_map_get(const gms_map *m, const char *key, uint32_t *val); /* 1 when found */
void gms_map_free(gms_map *m);

/* Servers that have one function name (qualified or short). */
typedef struct gms_fnent {
    uint32_t n, cap;
    gms_server **srv;
    uint32_t *fi; /* the function's index in each server */
    uint64_t rr;
} gms_fnent;

typedef struct gms_pending {
    uint64_t decision; /* 0: free slot */
    gms_server *srv;
    double seconds;
    long long assigned_ns, expires_ns;
} gms_pending;

typedef struct gms_decision_cand {
    uint64_t server;
    double estimate, wait, transfer, compute;
    int assumed_link;
} gms_decision_cand;

typedef struct gms_decision {
    uint64_t id;
    int64_t unix_ms;
    char function[GRP_MAX_FUNCTION_NAME + 1];
    char site[GRP_MAX_SITE + 1];
    int policy;
    uint64_t chosen;
    uint32_t ncands; /* kept (at most GMS_DECISION_CANDS) */
    uint32_t ntotal; /* candidates considered */
    uint32_t nfull;  /* of those, full (chosen only when every one was, after the hold) */
    double elapsed_ns;
    double held_s; /* the request waited this long for room */
    gms_decision_cand cands[GMS_DECISION_CANDS];
} gms_decision;

/* A call as its client's REPORT told it (the status page's stream of recent calls). The
 * server's name and address are copied at report time: a server forgotten since still
 * shows where the call ran. The REPORT carries the error code only, not its message. */
typedef struct gms_call {
    int64_t unix_ms;
    uint64_t server; /* 0: the REPORT named no server we know */
    int32_t code;
    uint32_t port;
    double total_s, run_s; /* at the client (send to result); in the server's run */
    char function[GRP_MAX_FUNCTION_NAME + 1];
    char site[GRP_MAX_SITE + 1];
    char server_name[GRP_MAX_PEER_NAME + 1];
    char host[GRP_MAX_HOST + 1];
} gms_call;

/* The crashes of one function (gms_crash.c). */
typedef struct gms_crash_fn {
    char name[GRP_MAX_FUNCTION_NAME + 1]; /* "module/function" as the server registered it */
    struct {
        uint64_t server;
        long long at_ns;
    } recent[GMS_CRASH_RECENT]; /* a ring, the newest at (head - 1) */
    uint32_t head, nrecent;
    uint64_t crashes;                       /* ever */
    long long seen_ns;                      /* the last crash */
    long long held_until_ns;                /* monotonic; 0: never held */
    int64_t held_until_ms;                  /* the same, unix time */
    char servers[GRP_MAX_HOLD_SERVERS + 1]; /* where it crashed, when the hold began */
    char what[GRP_MAX_CRASH_WHAT + 1];      /* its last crash */
} gms_crash_fn;

struct gms_db;

typedef struct gms_state {
    pthread_mutex_t lock;
    int policy;
    unsigned heartbeat_ms, down_after;
    long long last_sweep_ns; /* monotonic: the sweeper's last pass (0: none yet) */
    struct gms_db *db;       /* NULL: nothing is persisted (tests) */
    long long start_ns;
    gms_server *
        *servers; /* in id order; freed only by forget_server (--forget-after, an admin), under lock */
    uint32_t nservers, capservers;
    gms_server **by_id; /* index: server id (ids are small and dense) */
    uint64_t cap_by_id;
    uint64_t next_id;
    gms_cand *cbuf; /* candidates of the decision in progress (under the lock) */
    gms_server **cbuf_srv;
    uint32_t cbuf_cap;
    gms_map addr;   /* "host:port" -> index in servers */
    gms_map fnames; /* function name -> index in fnents */
    gms_fnent *fnents;
    uint32_t nfnents;
    char **sites;
    uint32_t nsites;
    gms_map site_map;
    gms_pending *pending; /* GMS_PENDING_SLOTS, by decision id */
    uint64_t next_decision;
    gms_decision *ring; /* GMS_DECISIONS */
    uint64_t decisions, calls, failures, pending_dropped;
    gms_call *recent; /* GMS_RECENT, a ring: the newest at (nrecent - 1) % GMS_RECENT */
    uint64_t nrecent; /* calls ever put in it */
    /* Requests held while the server they need was full: they wait on ROOM for a change of
     * ROOM_EPOCH (work ended or a server came up) or STOPPING. */
    pthread_cond_t room;
    uint64_t room_epoch;
    uint32_t holding;
    uint64_t held, held_over; /* requests ever held; of those, placed on a full server */
    int stopping;
    /* Crashing functions (gms_crash.c). */
    double crash_hold_s;   /* --crash-hold; 0: never hold */
    double pending_max_s;  /* --pending-max: the longest a decision's work is counted unreported */
    double forget_after_s; /* --forget-after: a server down this long is deleted; 0: never */
    gms_crash_fn *crash_fns;
    uint32_t ncrash_fns;
    uint64_t crashes, crash_holds, crash_refused; /* reported; holds begun; SCHEDULEs refused */
} gms_state;

int gms_state_init(gms_state *st, int policy, unsigned heartbeat_ms, unsigned down_after);
void gms_state_free(gms_state *st);

/* Who may write a server entry (gms_owner.c): entries belong to the server key that
 * registered them. Before REGISTER of HOST:PORT by key OWNER: GRID_OK (an unowned
 * existing entry is claimed for OWNER), or GRID_ERR_AUTH when another key registered
 * it (E says what to do). */
int gms_state_claim(gms_state *st, const char *host, uint32_t port, const char *owner, gr_err *e);
/* After REGISTER: entry ID belongs to OWNER unless another key holds it already. */
void gms_state_set_owner(gms_state *st, uint64_t id, const char *owner);
/* Before HEARTBEAT or UNREGISTER of ID by key OWNER: GRID_OK (also for an unknown id,
 * which the caller answers as today), or GRID_ERR_AUTH when another key registered it. */
int gms_state_check_owner(gms_state *st, uint64_t id, const char *owner, const char *what, gr_err *e);

/* REGISTER: the same host:port keeps its id. Returns the id. */
uint64_t gms_state_register(gms_state *st, const grp_register *m, long long now_ns, int64_t unix_ms);
/* UNREGISTER: the server is stopping: down at once. GRID_ERR_NOT_FOUND: unknown id. */
int gms_state_unregister(gms_state *st, uint64_t id);
/* Deletes server ID everywhere (memory, indexes, registry), as --forget-after does;
 * WHY for the log. GRID_ERR_NOT_FOUND when there is no such server. */
int gms_state_forget(gms_state *st, uint64_t id, const char *why);
/* HEARTBEAT: GRID_OK, or GRID_ERR_NOT_FOUND for an unknown id. */
int gms_state_heartbeat(gms_state *st, const grp_heartbeat *m, long long now_ns, int64_t unix_ms);
/* SCHEDULE from SITE (never ""): GRID_OK with OK filled, or an error in E. When EXPLAIN
 * is not NULL it receives a copy of the decision (for the debug log). Every server
 * being full: with MAY_HOLD, GMS_HELD and *EPOCH set for gms_state_wait_room (nothing
 * assigned); without, the best full one. HELD_S: how long the request has waited. */
#define GMS_HELD (-1)
int gms_state_schedule(gms_state *st, const grp_schedule *m, const char *site, long long now_ns,
                       int64_t unix_ms, int may_hold, double held_s, uint64_t *epoch, grp_schedule_ok *ok,
                       gms_decision *explain, gr_err *e);
/* Waits until room may have been made since EPOCH, or until DEADLINE_NS (monotonic).
 * Returns 0, or -1 when the metaserver is stopping. */
int gms_state_wait_room(gms_state *st, uint64_t epoch, long long deadline_ns);
/* Ends P's work on its server (REPORT, expiry, a reused slot) and wakes held requests
 * (under st->lock). */
void gms_pending_end(gms_state *st, gms_pending *p);
/* Wakes held requests (under st->lock): work ended or a server came up. */
void gms_state_room_made(gms_state *st);
/* Shutdown: held requests give up. */
void gms_state_stop(gms_state *st);
/* REPORT from SITE (never ""). */
void gms_state_report(gms_state *st, const grp_report *m, const char *site, long long now_ns,
                      int64_t unix_ms);
/* SERVERS_OK for SITE: a malloc'd copy (grp_servers_free). */
int gms_state_servers(gms_state *st, const char *site, int64_t unix_ms, long long now_ns, grp_server_info **v,
                      uint32_t *n, gr_err *e);
/* LIST_OK: the sorted union of the function names of up servers (grp_free_names). */
int gms_state_list(gms_state *st, char ***names, uint32_t *n, gr_err *e);
/* PONG: sums over up servers. */
void gms_state_totals(gms_state *st, grp_pong *p);
/* Marks servers down after missed heartbeats and drops pending work past its time. */
void gms_state_sweep(gms_state *st, long long now_ns, int64_t unix_ms);

/* Restoring from the registry at startup (before any thread runs). */
gms_server *gms_state_restore_server(gms_state *st, uint64_t id, const char *name, const char *host,
                                     uint32_t port, uint32_t cores, uint32_t workers, double reg_speed,
                                     double speed, double mean_call_s, int up, int64_t last_beat_unix_ms,
                                     uint64_t calls, uint64_t failures, long long now_ns);
gms_server *gms_state_find_id(gms_state *st, uint64_t id);
int gms_state_restore_fn(gms_server *s, const char *name, uint64_t hash, uint32_t flags, double speed,
                         double run_s, uint32_t samples);
int gms_state_restore_link(gms_state *st, const char *site, uint64_t server, double bw, double lat,
                           uint32_t bw_n, uint32_t lat_n, int64_t bw_ms, int64_t lat_ms);
/* Rebuilds the function index (after restoring). */
int gms_state_reindex(gms_state *st);

/* CRASHED from the connection that registered M->server_id: GRID_OK (*HELD_NOW: this
 * crash began a hold), GRID_ERR_NOT_FOUND for an unknown server, GRID_ERR_ARGS for a
 * function it did not register. E says why. */
int gms_state_crashed(gms_state *st, const grp_crashed *m, long long now_ns, int64_t unix_ms, int *held_now,
                      gr_err *e);
/* Under st->lock: the hold on function NAME (as registered), or NULL when it is offered. */
const gms_crash_fn *gms_crash_held(const gms_state *st, const char *name, long long now_ns);
/* Under st->lock: 1 when function NAME crashed on server ID within the window (since its
 * last hold ended): SCHEDULE offers that server only when no other is left, so a
 * second crash, if any, is on another server and holds the function. */
int gms_crash_recent(const gms_state *st, const char *name, uint64_t id, long long now_ns);
/* Under st->lock: E = GRID_ERR_CRASHED naming F's hold (for a refused SCHEDULE). */
int gms_crash_refuse(gms_state *st, const gms_crash_fn *f, long long now_ns, gr_err *e);
/* HOLDS_OK: the holds in force (a malloc'd copy, possibly empty). */
int gms_state_holds(gms_state *st, long long now_ns, grp_hold **v, uint32_t *n, gr_err *e);

/* Helpers shared by the state's files. */
gms_fn *gms_server_fn(gms_server *s, const char *name);
uint32_t gms_state_site(gms_state *st, const char *site, int create); /* UINT32_MAX: none */
gms_link *gms_server_link(gms_server *s, uint32_t site, int create);
#define GMS_MAX_SERVER_ID (1u << 24)
int gms_link_fresh(int64_t at_ms, int64_t now_ms);
int64_t gms_unix_ms(void);

/* ---------------------------------------------------------------- registry (SQLite) */

typedef struct gms_db gms_db;
/* Opens (creates, migrates) the registry at PATH. */
gms_db *gms_db_open(const char *path, gr_err *e);
/* Loads everything into ST (servers keep their last state; their grace starts NOW). */
int gms_db_load(gms_db *db, gms_state *st, long long now_ns, gr_err *e);
/* Starts the writer thread. */
int gms_db_start(gms_db *db, gr_err *e);
/* Drains the queue, stops the writer, closes. */
void gms_db_close(gms_db *db);
/* Queued writes (never block on SQLite; DB may be NULL: nothing happens). */
void gms_db_put_server(gms_db *db, const gms_server *s);
void gms_db_put_server_state(gms_db *db, const gms_server *s);
/* Deletes server ID's rows: the server, its functions and its links (--forget-after). */
void gms_db_forget_server(gms_db *db, uint64_t id);
void gms_db_put_fn(gms_db *db, const gms_server *s, const gms_fn *f);
void gms_db_put_link(gms_db *db, const char *site, uint64_t server, const gms_link *l);
void gms_db_put_call(gms_db *db, const grp_report *r, const char *site, int64_t unix_ms);
/* Waits until every write queued so far is committed (tests, shutdown). */
void gms_db_flush(gms_db *db);

/* ---------------------------------------------------------------- status */

typedef struct gms_buf {
    char *p;
    size_t len, cap;
    int failed; /* out of memory: the text is incomplete */
} gms_buf;
void gms_buf_printf(gms_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void gms_buf_json_string(gms_buf *b, const char *s);

/* The /api/status JSON (docs/metaserver.md) into B. */
void gms_status_json(gms_state *st, gms_buf *b);

/* The HTTP server on O's --http-host and --http (0: any port), answering the Host names
 * of gms_http.c; prints "http on HOST:PORT" once ready. */
struct gms_http;
struct gms_http *gms_http_start(gms_state *st, const gms_options *o, gr_err *e);
void gms_http_stop(struct gms_http *h);

/* The embedded page (metaserver/www/status.html, generated gms_www.c). */
extern const unsigned char gms_status_html[];
extern const unsigned int gms_status_html_len;

/* ---------------------------------------------------------------- network */

#define GMS_MAX_MESSAGE (16u << 20) /* bytes in one message we accept */

typedef struct gms_conn gms_conn;
typedef struct gms_net {
    gdm_daemon dm; /* the listener, the connections and their limits (runtime/daemon) */
    gms_state *st;
    const gms_options *opt;
} gms_net;

/* A connection: the core's fields (fd, peer, addr, r, w, tls, hello_done; gdm.h), then
 * the metaserver's. */
struct gms_conn {
    GDM_CONN_HEAD;
    gms_net *net;
    char peer_host[64]; /* the site of a client that declares none */
    int server;         /* it registered a server: its heartbeats keep it, never idle-closed */
    uint64_t server_id; /* the server it registered last (0: none): only it may report CRASHED */
    uint32_t role;      /* the GRP_ROLE_* its key proved; every role when no keys are configured */
    char key_id[GRP_AUTH_KEY_ID_HEX + 1]; /* the key it proved ("": no keys) */
};

enum { GMS_KEEP = GDM_KEEP, GMS_CLOSE = GDM_CLOSE, GMS_REFUSE = GDM_REFUSE };

/* Sets up N's daemon core for ST and the options O (no socket yet); 0, or -1 when out
 * of memory. */
int gms_net_init(gms_net *n, gms_state *st, const gms_options *o);
gms_net *gms_net_listen(gms_state *st, const gms_options *o, gr_err *e);
/* Accepts until SIGFD reports SIGTERM or SIGINT, then closes every connection. */
void gms_net_run(gms_net *n, int sigfd);
void gms_net_free(gms_net *n);
/* Answers the request whose header H was read (gms_request.c). */
int gms_request_serve(gms_conn *c, const grw_header *h);
/* Writes ERROR CODE/MSG; 0, or -1 when the connection is broken. */
static inline int gms_conn_send_error(gms_conn *c, uint64_t id, int code, const char *msg) {
    return gdm_send_error(&c->core, id, code, msg) ? -1 : 0;
}
/* A writer on C's socket with the I/O deadline set for BYTES (the connection's thread
 * is its only writer). */
static inline grw_writer *gms_conn_writer(gms_conn *c, uint64_t bytes) {
    return gdm_writer(&c->core, bytes);
}

#endif /* GMS_H */
