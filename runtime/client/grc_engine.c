/* grc_engine.c: the steps every remote call takes, whether the caller waits for it
 * (grc_call.c) or not (grc_async.c): resolve the server, get the descriptor (cached),
 * build the arguments, check them against the server's limits, send CALL, read
 * RESULT or ERROR, and after GRID_ERR_STALE fetch the descriptor again and go on with
 * the same arguments. Keeping them here is what makes both kinds of call behave alike. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grc_client.h"
#include "grp_proto.h"

/* Lists the parameters a caller must pass, for argument-count errors. */
static void param_list(const grd_desc *d, char *buf, size_t n) {
    size_t used = 0;
    buf[0] = '\0';
    for (uint32_t i = 0; i < d->nparams && used < n; i++)
        used += (size_t)snprintf(buf + used, n - used, "%s%s", i ? ", " : "", d->params[i].name);
}

static int fill(grm_call *call, const grd_desc *d, const grc_args *args, gr_err *e) {
    if (args->nargs >= 0 && (uint32_t)args->nargs != d->nparams) {
        char params[512];
        param_list(d, params, sizeof params);
        return gr_seterr(e, GRID_ERR_ARGS, "the function takes %u argument%s (%s) but %d %s given",
                         d->nparams, d->nparams == 1 ? "" : "s", params, args->nargs,
                         args->nargs == 1 ? "was" : "were");
    }
    /* Only sizes that overflow are refused here: how large an array may be is the
     * server's to say (its --max-array, in HELLO_OK), which grc_req_check holds the call
     * to once it is known. The protocol's default limits here refused arrays past 1 GiB
     * that a server started with a larger --max-array takes. */
    grw_limits lim;
    grp_limits_default(&lim);
    lim.max_array = (uint64_t)-1 >> 1;
    if (!args->ap) return grm_from_argv(call, d, args->argv, &lim, e);
    va_list aq;
    va_copy(aq, *args->ap);
    int rc = grm_from_va(call, d, aq, &lim, e);
    va_end(aq);
    return rc;
}

int grc_req_fill(grc_req *q, const grc_args *args, gr_err *e) {
    q->nbind = 0;
    memset(q->bind, 0, q->desc->nparams * sizeof q->bind[0]);
    q->call = malloc(grm_call_size(q->desc->nparams));
    if (!q->call) return gr_seterr(e, GRID_ERR_NOMEM, "out of memory");
    int rc = fill(q->call, q->desc, args, e);
    /* Data handles passed where arrays go (grc_bind.c). */
    if (!rc) rc = grc_req_bind_args(q, e);
    return rc;
}

void grc_req_blame(const grc_req *q, gr_err *e) {
    /* A failover's final message names every server tried already. */
    if (q->t.name[0] && !q->route.final) gr_prefixerr(e, "%s on %s:%d: ", q->t.name, q->t.host, q->t.port);
}

static int is_url(const char *name) {
    return gr_scheme_len(name, NULL) > 0; /* gridrpc:// or gridrpcs:// */
}

void grc_route_reset(grc_route *r) {
    r->routed = r->no_retry = r->final = r->reused = r->reported = r->attempts = r->lost = 0;
    r->no_reuse = 0;
    r->affinity = NULL;
    r->naffinity = 0;
    r->decision = r->server_id = r->bytes_in = r->bytes_out = 0;
    r->flops = 0;
    r->nexclude = 0;
    r->failed = NULL;
    r->sent_ns = 0;
    memset(&r->times, 0, sizeof r->times);
}

int grc_req_start(grc_req *q, const char *name, const grc_args *args, grc_config *cfg, gr_err *e) {
    memset(&q->t, 0, sizeof q->t);
    grc_route_reset(&q->route);
    q->desc = NULL;
    q->call = NULL;
    q->refreshed = 0;
    q->object = (grp_object_id){0, 0};
    q->nbind = 0;
    q->route.no_retry = (grc_call_flags() & GRID_CALL_NO_RETRY_NP) != 0;
    int rc = grc_config_get(cfg, e);
    /* A plain name goes to the metaserver when one is configured, even if a server is
     * too; a gridrpc:// URL always goes where it says. */
    if (!rc && name && *name && !is_url(name) && cfg->meta_host[0]) {
        rc = grc_meta_start(q, name, args, cfg, e);
        if (rc) grc_req_free(q);
        return rc;
    }
    if (!rc) rc = grc_resolve(name, cfg, &q->t, e);
    if (!rc) rc = grc_descriptor(&q->t, cfg, &q->desc, e);
    if (!rc) rc = grc_req_fill(q, args, e);
    if (rc) {
        grc_req_blame(q, e);
        grc_req_free(q);
    }
    return rc;
}

void grc_req_free(grc_req *q) {
    grc_req_unbind(q);
    free(q->call);
    q->call = NULL;
    free(q->route.failed);
    q->route.failed = NULL;
    q->route.nexclude = 0;
}

int grc_req_check(const grc_req *q, const grw_limits *server, gr_err *e) {
    const grd_desc *d = q->desc;
    for (uint32_t i = 0; i < d->nparams; i++)
        if (d->params[i].rank > 0 && !(q->nbind && q->bind[i].h) &&
            q->call->sl[i].ext.sent_bytes > server->max_array)
            return gr_seterr(
                e, GRID_ERR_LIMIT,
                "argument '%s' of %s has %llu bytes; the server at %s:%d accepts at most %llu per "
                "array (its gridrpcd --max-array): split the data over several calls, or have the "
                "server started with a larger --max-array",
                d->params[i].name, q->t.name, (unsigned long long)q->call->sl[i].ext.sent_bytes, q->t.host,
                q->t.port, (unsigned long long)server->max_array);
    return GRID_OK;
}

int grc_req_send(const grc_req *q, grw_writer *w, uint64_t id, const grw_limits *server, gr_err *e) {
    if (!grp_object_id_zero(
            q->object)) { /* a remote object's method: the name ends ".method" (grc_object.c) */
        const char *dot = strrchr(q->t.name, '.');
        return grp_write_obj_invoke(w, id, q->object, dot ? dot + 1 : q->t.name, q->desc->hash, q->call,
                                    server, e);
    }
    if (q->nbind) { /* data handles stand for some arguments */
        grp_ref refs[GRP_MAX_REFS];
        uint32_t n = grc_req_refs(q, refs);
        return grp_write_call_data(w, id, q->t.name, q->desc->hash, grc_data_session(), refs, n, q->call,
                                   server, e);
    }
    return grp_write_call(w, id, q->t.name, q->desc->hash, q->call, server, e);
}

int grc_req_reply(grc_req *q, grw_reader *r, const grw_header *h, int *in_step, gr_err *e) {
    int rc = grp_expect(r, h, GRP_RESULT, "CALL", in_step, e);
    if (rc) return rc;
    rc = grp_read_result(r, q->call, &q->route.times, e);
    *in_step = rc == GRID_OK;
    return rc;
}

int grc_code_is_server_failure(int code) {
    /* The server (or the way to it) failed, or it refused to start the call: nothing
     * the arguments or the function did. GRID_ERR_FAILED, CRASHED (the function killed
     * its process: it would crash again), ARGS, TIMEOUT and the rest are the call's own
     * outcome and are never retried; AUTH (a refused key or token) would be refused by
     * the next server of the grid too, and is this client's to fix. */
    return code == GRID_ERR_CONNECT || code == GRID_ERR_CONN_LOST || code == GRID_ERR_SHUTDOWN ||
           code == GRID_ERR_BUSY;
}

int grc_code_is_server_lost(int code) {
    /* SHUTDOWN and BUSY are a live server's answer that it did not start the call: the
     * call did no harm there, and trying another costs no retry. */
    return code == GRID_ERR_CONNECT || code == GRID_ERR_CONN_LOST;
}

/* Appends "; not retried on another server: WHY" to E's message. */
static void not_retried(gr_err *e, int code, const char *why) {
    /* Appended with memcpy: GCC's -Wrestrict cannot tell E from Q under the sanitizers. */
    char tail[560];
    int k = snprintf(tail, sizeof tail, "; not retried on another server: %s", why);
    size_t n = strlen(e->msg);
    if (k > 0 && n + (size_t)k < sizeof e->msg) memcpy(e->msg + n, tail, (size_t)k + 1);
    e->code = code;
}

const char *grc_failure_words(int code, const char *msg) {
    switch (code) {
    case GRID_ERR_CONNECT: return strstr(msg, "refused") ? "connection refused" : "cannot connect";
    case GRID_ERR_CONN_LOST: return strstr(msg, "reset") ? "connection reset" : "connection lost";
    case GRID_ERR_SHUTDOWN: return "shutting down";
    case GRID_ERR_BUSY: return "overloaded";
    default: return grid_error_string(code);
    }
}

const char *grc_route_tried(const grc_route *r) {
    return r->failed ? r->failed->tried : "";
}

void grc_route_failed(grc_route *r, const grc_target *t, int code, const char *msg) {
    if (!r->failed && !(r->failed = calloc(1, sizeof *r->failed))) return; /* the list goes unsaid */
    grc_failed *f = r->failed;
    size_t used = strlen(f->tried);
    if (used < sizeof f->tried - 1)
        snprintf(f->tried + used, sizeof f->tried - used, "%s%s:%d (%s)", used ? ", " : "", t->host, t->port,
                 grc_failure_words(code, msg));
    if (r->nexclude >= GRP_MAX_EXCLUDE) return;
    snprintf(f->excluded_addr[r->nexclude], sizeof f->excluded_addr[0], "%s:%d", t->host, t->port);
    f->exclude[r->nexclude] = r->server_id;
    r->nexclude++;
}

int grc_req_failover(grc_req *q, int code, gr_err *e) {
    grc_route *r = &q->route;
    if (!r->routed || !grc_code_is_server_failure(code)) return code;
    grc_config cfg;
    gr_err ce;
    if (grc_config_get(&cfg, &ce)) return code;
    grc_meta_report(q, code, &cfg);
    grc_route_failed(r, &q->t, code, e->msg);
    const char *forbid = q->desc && (q->desc->flags & GRD_FF_NO_RETRY)
                             ? "the function must not run twice (IDL Retry \"no\")"
                         : r->no_retry ? "the call set GRID_CALL_NO_RETRY_NP"
                                       : NULL;
    char why[440];
    /* A call whose server vanished may be what took it down: it runs again elsewhere
     * at most 'retries' times, so it cannot take a grid's servers one after another. */
    if (!forbid && grc_code_is_server_lost(code) && r->lost >= cfg.retries) {
        char rt[360];
        grc_retries_text(&cfg, rt, sizeof rt);
        if (r->lost == 0) {
            snprintf(why, sizeof why, "retries are off: %s", rt);
            forbid = why;
        } else {
            r->final = 1;
            gr_seterr(e, code, "%s: no server could run the call: %s", q->t.name, grc_route_tried(r));
            snprintf(why, sizeof why, "its server vanished %d times and retries are %s", r->lost + 1, rt);
            not_retried(e, code, why);
            return code;
        }
    }
    if (forbid) {
        grc_req_blame(q, e);
        r->final = 1;
        not_retried(e, code, forbid);
        return code;
    }
    if (grc_code_is_server_lost(code)) r->lost++;
    gr_err re;
    gr_clearerr(&re);
    /* Once per server: a metaserver that names a failed server again does not loop. */
    int rc = r->nexclude < GRP_MAX_EXCLUDE && ++r->attempts < GRP_MAX_EXCLUDE ? grc_meta_reroute(q, &cfg, &re)
                                                                              : GRID_ERR_NOT_FOUND;
    if (rc == GRID_OK) return GRID_OK;
    r->final = 1;
    /* "No server left" is the expected end; anything else (the metaserver and every
     * known server unreachable) is worth saying too. */
    gr_seterr(e, code, "%s: no server could run the call: %s%s%s", q->t.name, grc_route_tried(r),
              rc != GRID_ERR_NOT_FOUND && re.msg[0] ? "; " : "", rc != GRID_ERR_NOT_FOUND ? re.msg : "");
    return code;
}

void grc_req_end(grc_req *q, int code) {
    if (q->t.host[0]) grc_set_last_server(q->t.host, q->t.port);
    if (!q->route.routed || q->route.reported) return;
    grc_config cfg;
    gr_err ce;
    if (grc_config_get(&cfg, &ce) == GRID_OK) grc_meta_report(q, code, &cfg);
}

/* 1 if the caller's arguments, laid out for OLD, mean the same under NEW; else E says
 * which parameter changed. */
static int same_signature(const grd_desc *old, const grd_desc *new, gr_err *e) {
    if (old->nparams != new->nparams)
        return gr_seterr(e, GRID_ERR_STALE,
                         "the interface changed on the server: it now takes %u arguments, not %u; "
                         "update the caller",
                         new->nparams, old->nparams),
               0;
    for (uint32_t i = 0; i < old->nparams; i++) {
        const grd_param *a = &old->params[i], *b = &new->params[i];
        if (a->type != b->type || a->mode != b->mode || a->rank != b->rank ||
            (a->flags & GRD_PF_UNSIGNED) != (b->flags & GRD_PF_UNSIGNED))
            return gr_seterr(e, GRID_ERR_STALE,
                             "the interface changed on the server: argument %u ('%s') was %s %s of rank %u, "
                             "now %s %s of rank %u; update the caller",
                             i + 2, a->name, grd_mode_name(a->mode), grd_type_name(a->type), a->rank,
                             grd_mode_name(b->mode), grd_type_name(b->type), b->rank),
                   0;
    }
    return 1;
}

/* Rebuilds CALL for descriptor D from the arguments it holds: its pointers are the
 * caller's argument vector, except the values of IN scalars, which live in its own
 * slots and are saved across grm_init. */
static int rebuild(grm_call *call, const grd_desc *d, gr_err *e) {
    uint32_t n = d->nparams;
    grm_value saved[GRD_MAX_PARAMS];
    void *argv[GRD_MAX_PARAMS];
    unsigned char own[GRD_MAX_PARAMS];
    for (uint32_t i = 0; i < n; i++) {
        saved[i] = call->sl[i].val;
        own[i] = call->ptr[i] == (void *)&call->sl[i].val || call->ptr[i] == (void *)&call->sl[i].val.str;
        argv[i] = own[i] ? (void *)&saved[i] : call->ptr[i];
    }
    grw_limits lim;
    grp_limits_default(&lim);
    int rc = grm_from_argv(call, d, argv, &lim, e);
    /* Point the values back into the call, which outlives this frame. */
    for (uint32_t i = 0; i < n; i++)
        if (own[i]) {
            call->sl[i].val = saved[i];
            call->ptr[i] = &call->sl[i].val; /* for strings too: val.str is at its start */
        }
    return rc;
}

int grc_req_refresh(grc_req *q, gr_err *e) {
    if (q->refreshed) return GRID_ERR_STALE; /* E holds the server's second STALE */
    q->refreshed = 1;
    grc_cache_forget(&q->t);
    grc_config cfg;
    const grd_desc *d;
    int rc = grc_config_get(&cfg, e);
    if (!rc) rc = grc_descriptor(&q->t, &cfg, &d, e);
    if (rc) return rc;
    if (!same_signature(q->desc, d, e)) return GRID_ERR_STALE;
    rc = rebuild(q->call, d, e);
    if (!rc) q->desc = d;
    if (!rc) rc = grc_req_rebind(q, e);
    if (!rc && q->route.routed) grc_meta_learn(q->t.name, d);
    return rc;
}
