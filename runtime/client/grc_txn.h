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
    char *user;        /* the caller's pointer (an array's first element, a scalar's variable) */
    size_t es;         /* bytes of one element */
    grd_extent ext;    /* the elements the call reads or writes (its sent part) */
    uint64_t bytes;    /* bytes of the whole array in memory (the call's argument) */
    uintptr_t lo, hi;  /* [lo, hi): the bytes from the first to the last element touched */
    char *stage;       /* the call's private copy: its assembled input, then its output */
} grc_txn_arg;

/* Dependency kinds between an earlier call J and a later call K. */
enum { GRC_TXN_RAW = 1, GRC_TXN_WAR = 2, GRC_TXN_WAW = 4 };

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
    char cause[512]; /* why each server failed it: "a:1 (connection refused), ..." */
} grc_txn_call;

/* What the last transaction of this thread did (grid_transaction_stats_np). */
typedef struct grc_txn_stats {
    long calls, raw, war, waw, reruns, servers;
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

/* ---- the run (grc_txn_run.c) */

/* Runs every call of X (E names the failed call), lands the outputs in program order. */
int grc_txn_execute(grc_txn *x, grc_txn_stats *st, gr_err *e);
/* Frees what X's calls hold (not X itself). */
void grc_txn_free_calls(grc_txn *x);

#ifdef __cplusplus
}
#endif

#endif /* GRC_TXN_H */
