/* grc_async_api.c: the public asynchronous calls of gridrpc.h (grid_call_async,
 * grid_wait*, grid_probe, grid_cancel, the _np queries) over grc_async.c. */
#include <stdio.h>
#include <string.h>

#include "grc_client.h"

static int start(const char *name, const grc_args *args) {
    gr_err e;
    gr_clearerr(&e);
    int id = grc_call_async(name, args, &e);
    grc_report(id > 0 ? GRID_OK : -id, e.msg);
    return id;
}

int grid_call_async_counted_np(int nargs, const char *name, ...) {
    va_list ap;
    va_start(ap, name);
    grc_args args = {&ap, NULL, nargs - 1};
    int id = start(name, &args);
    va_end(ap);
    return id;
}

int grid_call_async_va_np(const char *name, int nargs, va_list ap) {
    /* A copy, as in grid_call_va_np: the parameter may be a decayed pointer. */
    va_list aq;
    va_copy(aq, ap);
    grc_args args = {&aq, NULL, nargs < 0 ? -1 : nargs};
    int id = start(name, &args);
    va_end(aq);
    return id;
}

int grid_call_async_argv_np(const char *name, int nargs, void *const *argv) {
    if (!argv && nargs > 0) {
        grc_report(GRID_ERR_ARGS, "grid_call_async_argv_np: the argument vector is NULL");
        return -GRID_ERR_ARGS;
    }
    grc_args args = {NULL, argv, nargs};
    return start(name, &args);
}

int grid_wait(int id) {
    const char *msg;
    int code = grc_wait(id, &msg);
    grc_report(code, msg);
    return code;
}

int grid_wait_any(int *id) {
    const char *msg;
    int dummy;
    int code = grc_wait_any(NULL, 0, id ? id : &dummy, &msg);
    grc_report(code, msg);
    return code;
}

int grid_wait_all(void) {
    int first = GRID_OK;
    char msg[1024] = "";
    for (;;) {
        int id;
        const char *m;
        int code = grc_wait_any(NULL, 0, &id, &m);
        if (id == GRID_ID_NONE) break;
        if (code && !first) {
            first = code;
            snprintf(msg, sizeof msg, "call %d: %s", id, m);
        }
    }
    grc_report(first, msg);
    return first;
}

int grid_wait_and(const int *ids, int n) {
    int first = GRID_OK;
    char msg[1024] = "";
    if (n > 0 && !ids) {
        grc_report(GRID_ERR_ARGS, "grid_wait_and: IDS is NULL");
        return GRID_ERR_ARGS;
    }
    for (int k = 0; k < n; k++) {
        const char *m;
        int code = grc_wait(ids[k], &m);
        if (code && !first) {
            first = code;
            snprintf(msg, sizeof msg, "call %d: %s", ids[k], m);
        }
    }
    grc_report(first, msg);
    return first;
}

int grid_wait_or(const int *ids, int n, int *done) {
    int dummy;
    if (n <= 0 || !ids) {
        grc_report(GRID_ERR_ARGS, "grid_wait_or: give at least one call id");
        return GRID_ERR_ARGS;
    }
    const char *msg;
    int code = grc_wait_any(ids, n, done ? done : &dummy, &msg);
    grc_report(code, msg);
    return code;
}

int grid_probe(int id) {
    return grc_probe(id);
}

int grid_wait_received_np(int id) {
    gr_err e;
    gr_clearerr(&e);
    int code = grc_wait_received(id, &e);
    grc_report(code, e.msg);
    return code;
}

int grid_cancel(int id) {
    int code = grc_cancel(id);
    char msg[128];
    snprintf(msg, sizeof msg, "unknown call id %d: it was never started, or was forgotten", id);
    grc_report(code, code ? msg : "");
    return code;
}

int grid_call_error_np(int id) {
    const char *msg;
    int waited;
    int code = grc_session_error(id, &msg, &waited);
    return code < 0 ? GRID_ERR_ARGS : code;
}

const char *grid_call_message_np(int id) {
    const char *msg = "";
    int waited;
    if (grc_session_error(id, &msg, &waited) < 0) return "";
    return msg;
}

int grid_call_waited_np(int id) {
    const char *msg;
    int waited = 0;
    if (grc_session_error(id, &msg, &waited) < 0) return 0;
    return waited;
}

void grid_forget_np(int id) {
    grc_forget(id);
}
