/* grc_txn_api.c: the public transaction calls (grid_transaction_begin, _end, _abort_np,
 * _active_np, _get_stats_np) over the recording of grc_txn.c and the run of
 * grc_txn_run.c: each reports its outcome as the thread's last error. */
#include <string.h>

#include "grc_txn.h"

/* What the thread's last transaction did (grid_transaction_get_stats_np). */
static __thread grc_txn_stats last;

int grid_transaction_begin(void) {
    int rc = grc_txn_open();
    if (rc == GRID_ERR_ARGS) {
        grc_report(
            GRID_ERR_ARGS,
            "grid_transaction_begin: a transaction is already open on this thread (transactions do not "
            "nest): end it with grid_transaction_end or drop it with grid_transaction_abort_np first");
        return GRID_ERR_ARGS;
    }
    if (rc) {
        grc_report(GRID_ERR_NOMEM, "out of memory");
        return GRID_ERR_NOMEM;
    }
    grc_report(GRID_OK, NULL);
    return GRID_OK;
}

int grid_transaction_end(void) {
    grc_txn *x = grc_txn_take(); /* the calls below run for real (a callback's own grid_call too) */
    if (!x) {
        grc_report(GRID_ERR_ARGS, "grid_transaction_end: no transaction is open on this thread: call "
                                  "grid_transaction_begin first");
        return GRID_ERR_ARGS;
    }
    gr_err e;
    gr_clearerr(&e);
    memset(&last, 0, sizeof last);
    int rc = grc_txn_execute(x, &last, &e);
    grc_txn_drop(x);
    e.code = rc;
    grc_report(rc, e.msg);
    return rc;
}

int grid_transaction_abort_np(void) {
    grc_txn *x = grc_txn_take();
    if (!x) {
        grc_report(GRID_ERR_ARGS, "grid_transaction_abort_np: no transaction is open on this thread");
        return GRID_ERR_ARGS;
    }
    grc_txn_drop(x);
    grc_report(GRID_OK, NULL);
    return GRID_OK;
}

int grid_transaction_active_np(void) {
    return grc_txn_active();
}

int grid_transaction_get_stats_np(grid_transaction_stats_np *out) {
    if (!out) {
        grc_report(GRID_ERR_ARGS, "grid_transaction_get_stats_np: OUT is NULL");
        return GRID_ERR_ARGS;
    }
    out->calls = last.calls;
    out->raw = last.raw;
    out->war = last.war;
    out->waw = last.waw;
    out->reruns = last.reruns;
    out->by_ref = last.by_ref;
    out->recomputed = last.recomputed;
    out->servers = last.servers;
    out->seconds = last.seconds;
    grc_report(GRID_OK, NULL);
    return GRID_OK;
}
