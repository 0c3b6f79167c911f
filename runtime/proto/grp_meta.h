/* grp_meta.h: the metaserver's messages (types 20-39) and the bandwidth probe
 * (PROBE/PROBE_OK), laid out in docs/protocol.md. Servers REGISTER and send HEARTBEATs;
 * clients ask SCHEDULE for a server, REPORT how the call went, and list SERVERS. Like
 * grp_proto.h, the only code that reads or writes these bodies: gridmetad, gridrpcd, the
 * client and the fuzzers share it. Every count is checked against grp_limits.h before
 * anything is allocated, every code and enum value is validated. Private (grp_). */
#ifndef GRP_META_H
#define GRP_META_H

#include <stdint.h>

#include "gr_error.h"
#include "grp_limits.h"
#include "grp_types.h"
#include "grw_wire.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Scheduling policies a SCHEDULE may ask for. */
enum grp_policy {
    GRP_POLICY_DEFAULT = 0, /* the metaserver's --scheduler */
    GRP_POLICY_MCT = 1,     /* minimum completion time */
    GRP_POLICY_LEAST_LOAD = 2,
    GRP_POLICY_ROUND_ROBIN = 3,
    GRP_POLICY_COUNT
};
/* "mct", "least-load", "round-robin", "default"; NULL for an unknown value. */
const char *grp_policy_name(uint32_t policy);
/* The policy NAME names (as above), or -1. */
int grp_policy_parse(const char *name);

/* Function flags in REGISTER. */
#define GRP_FN_NO_RETRY 1u /* must not be re-executed after a failure (IDL: "NoRetry") */

typedef struct grp_function {
    char name[GRP_MAX_FUNCTION_NAME + 1]; /* "module/function" */
    uint64_t hash;                        /* of its descriptor */
    uint32_t flags;                       /* GRP_FN_* */
} grp_function;

/* ---- REGISTER (server -> metaserver) / REGISTER_OK */
typedef struct grp_register {
    char name[GRP_MAX_PEER_NAME + 1]; /* for people: "gridrpcd on node7" */
    char host[GRP_MAX_HOST + 1];      /* where clients should connect */
    uint32_t port;
    uint32_t cores, workers;
    double speed;            /* flops/s estimate before any call completed; 0: unknown */
    uint32_t nfunctions;     /* <= GRP_MAX_FUNCTIONS */
    grp_function *functions; /* decoder: malloc'd (grp_register_free) */
} grp_register;

typedef struct grp_register_ok {
    uint64_t server_id;    /* > 0; the same address and port keep their id */
    uint32_t heartbeat_ms; /* how often the metaserver wants a HEARTBEAT */
} grp_register_ok;

int grp_write_register(grw_writer *w, uint64_t id, const grp_register *m, gr_err *e);
int grp_read_register(grw_reader *r, grp_register *m, gr_err *e);
void grp_register_free(grp_register *m);
int grp_write_register_ok(grw_writer *w, uint64_t id, const grp_register_ok *m, gr_err *e);
int grp_read_register_ok(grw_reader *r, grp_register_ok *m, gr_err *e);

/* ---- HEARTBEAT (server -> metaserver) / HEARTBEAT_OK (empty). A metaserver that does
 * not know SERVER_ID answers ERROR GRID_ERR_NOT_FOUND: the server registers again. */
typedef struct grp_heartbeat {
    uint64_t server_id;
    uint32_t running, queued, workers, cores;
    double loadavg;
    uint64_t calls_done; /* since the server started */
    /* The server's own prediction of the seconds its running and queued calls still
     * need (each call's predicted run time, from that function's calls it has run, less
     * what has already run); it sees calls no metaserver routed. 0: none predicted. */
    double work_s;
} grp_heartbeat;
int grp_write_heartbeat(grw_writer *w, uint64_t id, const grp_heartbeat *m, gr_err *e);
int grp_read_heartbeat(grw_reader *r, grp_heartbeat *m, gr_err *e);

/* ---- SCHEDULE (client -> metaserver) / SCHEDULE_OK. No server for the function is
 * ERROR GRID_ERR_NOT_FOUND, none up GRID_ERR_CONNECT. */
/* Bytes of a call's inputs that a server already holds (remote data: it need not
 * receive them again). */
typedef struct grp_affinity {
    uint64_t server_id;
    uint64_t bytes;
} grp_affinity;

typedef struct grp_schedule {
    char function[GRP_MAX_FUNCTION_NAME + 1];
    char site[GRP_MAX_SITE + 1];             /* the client's site (GRIDRPC_SITE) */
    uint32_t policy;                         /* enum grp_policy, validated */
    uint64_t bytes_in;                       /* bytes the call sends (its CALL message) */
    uint64_t bytes_out;                      /* bytes it receives back (its RESULT) */
    double flops;                            /* the descriptor's Complexity for these arguments; 0: none */
    uint32_t nexclude;                       /* <= GRP_MAX_EXCLUDE */
    uint64_t exclude[GRP_MAX_EXCLUDE];       /* server ids already tried by this call */
    uint32_t naffinity;                      /* <= GRP_MAX_AFFINITY */
    grp_affinity affinity[GRP_MAX_AFFINITY]; /* server ids nonzero, bytes <= bytes_in */
} grp_schedule;

typedef struct grp_schedule_ok {
    uint64_t decision; /* names this decision in REPORT */
    uint64_t server_id;
    char host[GRP_MAX_HOST + 1];
    uint32_t port;
    double estimate; /* predicted completion seconds (0 for policies that do not predict) */
} grp_schedule_ok;

int grp_write_schedule(grw_writer *w, uint64_t id, const grp_schedule *m, gr_err *e);
int grp_read_schedule(grw_reader *r, grp_schedule *m, gr_err *e);
int grp_write_schedule_ok(grw_writer *w, uint64_t id, const grp_schedule_ok *m, gr_err *e);
int grp_read_schedule_ok(grw_reader *r, grp_schedule_ok *m, gr_err *e);

/* ---- REPORT (client -> metaserver, no reply): how a scheduled call went. The
 * metaserver learns speed from flops / run time and the link from the bytes over the
 * time the call spent outside the server's queue and run. */
typedef struct grp_report {
    uint64_t decision; /* 0 when the call reused an earlier decision */
    uint64_t server_id;
    int32_t code; /* GRID_OK or the error; validated like ERROR's */
    char function[GRP_MAX_FUNCTION_NAME + 1];
    char site[GRP_MAX_SITE + 1];
    uint64_t bytes_in, bytes_out;
    uint64_t total_ns;         /* send start to result end, at the client */
    uint64_t queue_ns, run_ns; /* from RESULT */
    double flops;
} grp_report;
int grp_write_report(grw_writer *w, uint64_t id, const grp_report *m, gr_err *e);
int grp_read_report(grw_reader *r, grp_report *m, gr_err *e);

/* ---- UNREGISTER (server -> metaserver: it is stopping) / UNREGISTER_OK (empty). The
 * metaserver marks it down at once instead of after missed heartbeats; an unknown id
 * is answered ERROR GRID_ERR_NOT_FOUND. */
int grp_write_unregister(grw_writer *w, uint64_t id, uint64_t server_id, gr_err *e);
int grp_read_unregister(grw_reader *r, uint64_t *server_id, gr_err *e);

/* ---- CRASHED (server -> metaserver) / CRASHED_OK (empty): FUNCTION killed an executor
 * of the server (a signal, exit(), over --call-memory). Accepted only on the connection
 * that REGISTERed SERVER_ID, for a function it registered: the metaserver holds back a
 * function that crashed on two servers within a minute. */
typedef struct grp_crashed {
    uint64_t server_id;
    char function[GRP_MAX_FUNCTION_NAME + 1];
    char what[GRP_MAX_CRASH_WHAT + 1]; /* "crashed (signal 11, Segmentation fault)" */
} grp_crashed;
int grp_write_crashed(grw_writer *w, uint64_t id, const grp_crashed *m, gr_err *e);
int grp_read_crashed(grw_reader *r, grp_crashed *m, gr_err *e);

/* ---- HOLDS (client -> metaserver, empty) / HOLDS_OK: the functions the metaserver
 * holds back from new calls now. */
typedef struct grp_hold {
    char function[GRP_MAX_FUNCTION_NAME + 1];
    uint64_t left_ms;                       /* until it is offered again */
    uint64_t until_unix_ms;                 /* the same, on the metaserver's clock */
    char servers[GRP_MAX_HOLD_SERVERS + 1]; /* where it crashed: "s1 (host:port), s2 (host:port)" */
    char what[GRP_MAX_CRASH_WHAT + 1];      /* the last crash */
} grp_hold;
int grp_write_holds_ok(grw_writer *w, uint64_t id, const grp_hold *v, uint32_t count, gr_err *e);
/* *v: malloc'd array of *count (free). */
int grp_read_holds_ok(grw_reader *r, grp_hold **v, uint32_t *count, gr_err *e);

/* ---- SERVERS (client -> metaserver: the site whose links to show) / SERVERS_OK */
enum grp_server_state { GRP_SERVER_DOWN = 0, GRP_SERVER_UP = 1 };

typedef struct grp_server_info {
    uint64_t id;
    char name[GRP_MAX_PEER_NAME + 1];
    char host[GRP_MAX_HOST + 1];
    uint32_t port;
    uint32_t state; /* enum grp_server_state, validated */
    uint32_t cores, workers, running, queued;
    uint32_t pending; /* assigned by the metaserver, not yet reported done */
    double loadavg;
    double speed;         /* flops/s (measured, or the estimate) */
    double bandwidth;     /* bytes/s between the asking site and this server; 0: unknown */
    double latency;       /* seconds, one round trip; 0: unknown */
    uint64_t beat_age_ms; /* since its last heartbeat */
    uint64_t calls, failures;
    uint32_t nfunctions; /* <= GRP_MAX_FUNCTIONS */
    char **functions;    /* decoder: malloc'd names */
} grp_server_info;

int grp_write_servers(grw_writer *w, uint64_t id, const char *site, gr_err *e);
int grp_read_servers(grw_reader *r, char site[GRP_MAX_SITE + 1], gr_err *e);
int grp_write_servers_ok(grw_writer *w, uint64_t id, const grp_server_info *v, uint32_t count, gr_err *e);
/* *v: malloc'd array of *count (grp_servers_free). */
int grp_read_servers_ok(grw_reader *r, grp_server_info **v, uint32_t *count, gr_err *e);
void grp_servers_free(grp_server_info *v, uint32_t count);

/* ---- PROBE (client -> server or metaserver) / PROBE_OK: the client sends LEN bytes
 * and asks for REPLY bytes back (each <= GRP_MAX_PROBE); the payload is not looked at. */
int grp_write_probe(grw_writer *w, uint64_t id, uint32_t len, uint32_t reply, gr_err *e);
/* Reads and discards the payload; *reply: the bytes asked for. */
int grp_read_probe(grw_reader *r, uint32_t *len, uint32_t *reply, gr_err *e);
int grp_write_probe_ok(grw_writer *w, uint64_t id, uint32_t len, gr_err *e);
int grp_read_probe_ok(grw_reader *r, uint32_t *len, gr_err *e);

#ifdef __cplusplus
}
#endif

#endif /* GRP_META_H */
