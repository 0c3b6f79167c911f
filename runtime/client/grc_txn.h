/* grc_txn.h: transactions (grid_transaction_begin ... grid_transaction_end), private to
 * the client core. The calls of a transaction are recorded (grc_txn.c), their data
 * dependencies come from the byte ranges their array arguments touch (grc_txn_graph.c),
 * and at the end they run concurrently with every output staged, so the caller's
 * buffers end exactly as if the calls had run one by one (grc_txn_run.c). */
#ifndef GRC_TXN_H
#define GRC_TXN_H

#include <stddef.h>
#include <stdint.h>

#include "grc_client.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Attempts of one call before the transaction gives up on it (each on another server). */
#define GRC_TXN_MAX_ATTEMPTS 8

/* One array argument of a recorded call, or one numeric scalar output (a 1-element
 * region), as byte ranges of the caller's memory. */
typedef struct grc_txn_arg {
    uint32_t param;
    int reads, writes; /* IN or INOUT / OUT or INOUT */
    int scalar;        /* an OUT or INOUT numeric scalar (the caller's variable) */
    int handle;        /* the caller passed a data handle (grid_data_np): it is its own datum,
                        * never staged; every access to it is ordered (lo, hi: its pointer) */
    char *user;        /* the caller's pointer (an array's first element, a scalar's variable) */
    size_t es;         /* bytes of one element */
    grd_extent ext;    /* the elements the call reads or writes (its sent part) */
    uint64_t bytes;    /* bytes of the whole array in memory (the call's argument) */
    uintptr_t lo, hi;  /* [lo, hi): the bytes from the first to the last element touched */
    char *stage;       /* the call's private copy: its assembled input, then its output */
    /* Data kept on servers (grc_txn_plan.c): an output that a later call reads exactly
     * (same bytes, whole array, no writer in between) stays on its server as a handle
     * and goes to the reader server to server. */
    int src, src_arg; /* an input taken from the handle of call SRC's arg SRC_ARG (-1: none) */
    int keep;         /* the output is kept as a handle (KEEP) */
    int reuse;        /* ... as the handle its input came from (INOUT, its only reader) */
    int ret;          /* ... and sent back too (RETURN): the caller's memory needs it */
    int readers;      /* later args that take the kept output */
    grc_data *h;      /* the handle (a kept output that does not reuse its input's) */
} grc_txn_arg;

/* Dependency kinds between an earlier call J and a later call K. */
enum { GRC_TXN_RAW = 1, GRC_TXN_WAR = 2, GRC_TXN_WAW = 4, GRC_TXN_ORDER = 8 /* a data handle both use */ };

enum { GRC_TXN_WAITING = 0, GRC_TXN_RUNNING, GRC_TXN_DONE };

/* A server that failed one call, for its exclusion and the final message. */
typedef struct grc_txn_failure {
    char host[GRC_MAX_HOST];
    int port;
    uint64_t server_id;
    int code;
} grc_txn_failure;

/* One recorded call. */
typedef struct grc_txn_call {
    struct grc_txn *txn;
    int index;                      /* program order, from 0 */
    grc_target t;                   /* where it goes when not routed (a URL, or the configured server) */
    int routed;                     /* a plain name placed by the metaserver at the end */
    const grd_desc *desc;           /* fetched when the call was recorded */
    grm_value val[GRD_MAX_PARAMS];  /* scalars: IN values, OUT and INOUT staging */
    char *str[GRD_MAX_PARAMS];      /* strings and filenames: the copies taken when recorded */
    char *sout[GRD_MAX_PARAMS];     /* OUT and INOUT strings: the result (lands at the end) */
    void *fn[GRD_MAX_PARAMS];       /* callbacks: the caller's function */
    void *user_ptr[GRD_MAX_PARAMS]; /* OUT and INOUT scalars and strings: the caller's variable */
    void *argv[GRD_MAX_PARAMS];     /* the argument vector the call runs with */
    grc_txn_arg *arg;
    uint32_t narg;
    /* the graph */
    int *deps; /* earlier calls whose outputs it reads (RAW) */
    int ndeps;
    /* the run */
    int state, id, attempts;
    char host[GRC_MAX_HOST]; /* where it was sent last */
    int port;
    uint64_t server_id;
    grc_txn_failure failed[GRC_TXN_MAX_ATTEMPTS];
    int nfailed;
    int nlost;                          /* of those, with its server vanished (counted against 'retries') */
    char cause[512];                    /* why each server failed it: "a:1 (connection refused), ..." */
    int recomputed;                     /* times it ran again because a result it had kept was lost */
    grp_affinity aff[GRP_MAX_AFFINITY]; /* where its inputs' handles are (SCHEDULE) */
} grc_txn_call;

/* What the last transaction of this thread did (grid_transaction_stats_np). */
typedef struct grc_txn_stats {
    long calls, raw, war, waw, reruns, servers;
    long by_ref;     /* inputs passed server to server as handles (not through the client) */
    long recomputed; /* producers run again because their kept outputs were lost */
    double seconds;
} grc_txn_stats;

/* The open transaction of this thread. */
typedef struct grc_txn {
    grc_txn_call *call;
    int ncalls, cap;
} grc_txn;

/* 1 when the calling thread has a transaction open (its grid_calls are recorded). */
int grc_txn_active(void);
/* Records a call of NAME with ARGS in the open transaction. */
int grc_txn_record(const char *name, const grc_args *args, gr_err *e);
/* Opens a transaction on the calling thread: GRID_OK, GRID_ERR_ARGS when one is open
 * already (they do not nest), GRID_ERR_NOMEM. */
int grc_txn_open(void);
/* Takes the calling thread's transaction away (NULL: none is open): from then on its
 * calls run for real, and X is the caller's to run and drop. */
grc_txn *grc_txn_take(void);
/* Frees X and every call it recorded. */
void grc_txn_drop(grc_txn *x);

/* ---- the graph (grc_txn_graph.c): pure functions over recorded calls */

/* Fills A's byte range [lo, hi) from its user pointer, element size and extent (empty
 * when nothing is sent). */
void grc_txn_arg_range(grc_txn_arg *a);
/* The dependency kinds (GRC_TXN_RAW | WAR | WAW) of later call K on earlier call J:
 * overlapping byte ranges of J's outputs and K's inputs, and so on. */
unsigned grc_txn_depends(const grc_txn_call *j, const grc_txn_call *k);
/* Fills every call's deps (RAW predecessors) and counts the edges of each kind. */
int grc_txn_graph(grc_txn *x, grc_txn_stats *st, gr_err *e);
/* Copies, into DST's stage, the bytes of SRC's output (its stage) that fall in DST's
 * range; only the elements SRC writes (its sent ones). */
void grc_txn_overlay(const grc_txn_arg *src, grc_txn_arg *dst);
/* Copies SRC's written elements from its stage to the caller's memory. */
void grc_txn_land(const grc_txn_arg *src);
/* Calls FN(offset, count) for every run of consecutive elements of EXT's sent part
 * (element offsets in the whole array), as the marshaller walks them. */
void grc_txn_runs(const grd_extent *ext, void (*fn)(uint64_t off, uint64_t cnt, void *arg), void *arg);

/* ---- data kept on servers (grc_txn_plan.c) */

/* Marks the outputs that stay on their servers as handles and the inputs that take
 * them (needs the graph's ranges); counts them in ST. */
void grc_txn_plan(grc_txn *x, grc_txn_stats *st);
/* The handle arg A of call C reads or writes (NULL: none). */
grc_data *grc_txn_handle(grc_txn *x, grc_txn_arg *a);
/* Makes the handles call C keeps its outputs in (new ones on each run). */
int grc_txn_make_handles(grc_txn_call *c, gr_err *e);
/* Fills C's affinity (bytes of its handle inputs per server) into its route. */
void grc_txn_affinity(grc_txn *x, grc_txn_call *c, grc_route *r);
/* Binds C's handles to Q's prepared call. */
int grc_txn_bind(grc_txn *x, grc_txn_call *c, grc_req *q, gr_err *e);
/* After C failed: marks for a rerun every producer whose kept output C needs and which
 * no server holds any more; returns how many. */
int grc_txn_lost_inputs(grc_txn *x, grc_txn_call *c);
/* Frees every handle of X on the servers. */
void grc_txn_free_handles(grc_txn *x);

/* ---- the run (grc_txn_run.c) */

/* Runs every call of X (E names the failed call), lands the outputs in program order. */
int grc_txn_execute(grc_txn *x, grc_txn_stats *st, gr_err *e);
/* Frees what X's calls hold (not X itself). */
void grc_txn_free_calls(grc_txn *x);

#ifdef __cplusplus
}
#endif

#endif /* GRC_TXN_H */
