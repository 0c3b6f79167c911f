/* grc_call.c: one synchronous remote call. The steps: resolve the server, get the
 * descriptor (cached), build the arguments from the variadic list, send CALL (head,
 * then bulk arrays), read RESULT into the caller's buffers. The public entry points
 * over it are in grc_api.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grc_client.h"
#include "grm_marshal.h"

long grc_stat_calls;

/* Lists the parameters a caller must pass, for argument-count errors. */
static void param_list(const grd_desc *d, char *buf, size_t n) {
    size_t used = 0;
    buf[0] = '\0';
    for (uint32_t i = 0; i < d->nparams && used < n; i++)
        used += (size_t)snprintf(buf + used, n - used, "%s%s", i ? ", " : "", d->params[i].name);
}

/* Reads an ERROR body into E. */
static int read_error(grw_reader *r, gr_err *e) {
    uint32_t code;
    char *msg = NULL;
    int rc = grw_read_u32(r, &code, e);
    if (!rc) rc = grw_read_string(r, 4095, &msg, e);
    if (!rc) rc = grw_end(r, e);
    if (!rc) {
        int c = (int)code;
        if (c <= 0 || c >= GRID_ERROR_COUNT_NP) c = GRID_ERR_FAILED;
        gr_seterr(e, c, "%s", msg);
    }
    free(msg);
    return rc;
}

/* Sends CALL and reads its reply on connection C. Returns GRID_OK or the error; sets
 * *broken when the connection cannot be reused. */
static int exchange(grc_conn *c, const grc_target *t, const grm_call *call, int *broken, gr_err *e) {
    const grd_desc *d = call->desc;
    grw_header h;
    uint64_t id = c->next_id++;
    int rc = grw_begin(&c->wr, GRW_CALL, 0, id, e);
    if (!rc) rc = grw_write_string(&c->wr, t->name, e);
    if (!rc) rc = grw_write_u64(&c->wr, d->hash, e);
    if (!rc) rc = grm_write_head(&c->wr, call, GRM_TO_SERVER, &c->server, e);
    if (!rc) rc = grm_write_bulk(&c->wr, call, GRM_TO_SERVER, e);
    if (!rc) rc = grw_finish(&c->wr, e);
    if (rc) {
        *broken = 1;
        return rc;
    }
    rc = grw_read_header(&c->rd, &h, e);
    if (rc) {
        *broken = 1;
        if (rc == GRID_ERR_CONN_LOST)
            gr_seterr(e, GRID_ERR_CONN_LOST,
                      "the server closed the connection during the call: it may have crashed or been stopped "
                      "(check its log), or the call exceeded a server limit");
        return rc;
    }
    if (h.request_id != id) {
        *broken = 1;
        return gr_seterr(e, GRID_ERR_PROTOCOL, "reply to request %llu while waiting for %llu",
                         (unsigned long long)h.request_id, (unsigned long long)id);
    }
    if (h.type == GRW_ERROR) {
        int rc2 = read_error(&c->rd, e);
        if (rc2) {
            *broken = 1;
            return rc2;
        }
        if (e->code == GRID_ERR_PROTOCOL) *broken = 1;
        return e->code;
    }
    if (h.type != GRW_RESULT) {
        *broken = 1;
        return gr_seterr(e, GRID_ERR_PROTOCOL, "the server answered CALL with %s", grw_type_name(h.type));
    }
    uint64_t queue_ns, run_ns;
    grw_limits mine;
    grw_limits_default(&mine);
    mine.max_message = c->rd.max_message;
    mine.max_array = (uint64_t)-1 >> 1; /* the caller's own buffers: sized by the caller */
    mine.max_head = 0xffffffffu;
    grm_call *mut = (grm_call *)call;
    rc = grw_read_u64(&c->rd, &queue_ns, e);
    if (!rc) rc = grw_read_u64(&c->rd, &run_ns, e);
    if (!rc) rc = grm_read_head(&c->rd, mut, GRM_TO_CLIENT, &mine, e);
    if (!rc) rc = grm_read_bulk(&c->rd, mut, GRM_TO_CLIENT, e);
    if (!rc) rc = grw_end(&c->rd, e);
    if (rc) *broken = 1;
    return rc;
}

int grc_fill(grm_call *call, const grd_desc *d, const grc_target *t, const grc_args *args, gr_err *e) {
    if (args->nargs >= 0 && (uint32_t)args->nargs != d->nparams) {
        char params[512];
        param_list(d, params, sizeof params);
        return gr_seterr(e, GRID_ERR_ARGS, "%s takes %u argument%s (%s) but %d %s given", t->name, d->nparams,
                         d->nparams == 1 ? "" : "s", params, args->nargs, args->nargs == 1 ? "was" : "were");
    }
    grw_limits lim;
    grw_limits_default(&lim);
    if (!args->ap) return grm_from_argv(call, d, args->argv, &lim, e);
    va_list aq;
    va_copy(aq, *args->ap);
    int rc = grm_from_va(call, d, aq, &lim, e);
    va_end(aq);
    return rc;
}

int grc_call(const char *name, const grc_args *args, gr_err *e) {
    grc_config cfg;
    grc_target t;
    int rc = grc_config_get(&cfg, e);
    if (!rc) rc = grc_resolve(name, &cfg, &t, e);
    if (rc) return rc;
    /* The descriptor (and its parameter count) may change on a retry: room for any. */
    grm_call *call = malloc(grm_call_size(GRD_MAX_PARAMS));
    if (!call) return gr_seterr(e, GRID_ERR_NOMEM, "out of memory");
    for (int attempt = 0; attempt < 2; attempt++) {
        const grd_desc *d;
        rc = grc_descriptor(&t, &cfg, &d, e);
        if (rc) break;
        rc = grc_fill(call, d, &t, args, e);
        if (rc) break;
        grc_conn *c;
        rc = grc_conn_get(t.host, t.port, &cfg, &c, e);
        if (rc) break;
        /* The server's announced limits catch an oversized call before it is sent. */
        for (uint32_t i = 0; i < d->nparams && !rc; i++)
            if (d->params[i].rank > 0 && call->sl[i].ext.sent_bytes > c->server.max_array)
                rc = gr_seterr(
                    e, GRID_ERR_LIMIT,
                    "argument '%s' of %s has %llu bytes; the server at %s:%d accepts at most %llu per "
                    "array",
                    d->params[i].name, t.name, (unsigned long long)call->sl[i].ext.sent_bytes, t.host, t.port,
                    (unsigned long long)c->server.max_array);
        if (rc) {
            grc_conn_put(c, 0);
            break;
        }
        long long deadline = cfg.call_timeout > 0 ? gr_now_ns() + (long long)(cfg.call_timeout * 1e9) : 0;
        c->rd.deadline_ns = c->wr.deadline_ns = deadline;
        int broken = 0;
        rc = exchange(c, &t, call, &broken, e);
        if (rc == GRID_ERR_TIMEOUT)
            gr_seterr(e, GRID_ERR_TIMEOUT,
                      "no reply within %g s (GRIDRPC_TIMEOUT); the call may still be running",
                      cfg.call_timeout);
        grc_conn_put(c, broken || rc == GRID_ERR_TIMEOUT);
        if (rc == GRID_ERR_STALE && attempt == 0) {
            grc_cache_forget(&t);
            continue;
        }
        break;
    }
    free(call);
    if (!rc) __atomic_add_fetch(&grc_stat_calls, 1, __ATOMIC_RELAXED);
    if (rc) gr_prefixerr(e, "%s on %s:%d: ", t.name, t.host, t.port);
    return rc;
}
