/* grc_api.c: the public synchronous entry points of gridrpc.h (grid_call and its
 * argument-vector and va_list forms, introspection, settings, statistics, the last
 * error, reset) over the client core. The error store and the counters they read are
 * grc_report.c's, below the core, which reports there itself. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grc_client.h"
#include "grm_marshal.h"

/* The public enums and limits of gridrpc.h are the descriptor's own (grd_desc.h) under
 * public names: grid_describe_np copies descriptor codes through unconverted, and the
 * bindings size their tables by the public limits. gridrpc.h cannot include the private
 * header, so each value is defined twice; these make a renumbering on either side fail
 * to compile. (idlc's model ties itself to grd_desc.h in emit_descriptor.cpp.) */
#define GRC_SAME_(pub, priv) _Static_assert((long long)(pub) == (long long)(priv), #pub " != " #priv)
GRC_SAME_(GRID_TYPE_CHAR, GRD_CHAR);
GRC_SAME_(GRID_TYPE_SHORT, GRD_SHORT);
GRC_SAME_(GRID_TYPE_INT, GRD_INT);
GRC_SAME_(GRID_TYPE_LONG, GRD_LONG);
GRC_SAME_(GRID_TYPE_LONGLONG, GRD_LONGLONG);
GRC_SAME_(GRID_TYPE_FLOAT, GRD_FLOAT);
GRC_SAME_(GRID_TYPE_DOUBLE, GRD_DOUBLE);
GRC_SAME_(GRID_TYPE_SCOMPLEX, GRD_SCOMPLEX);
GRC_SAME_(GRID_TYPE_DCOMPLEX, GRD_DCOMPLEX);
GRC_SAME_(GRID_TYPE_STRING, GRD_STRING);
GRC_SAME_(GRID_TYPE_FILENAME, GRD_FILENAME);
GRC_SAME_(GRID_TYPE_CALLBACK, GRD_CALLBACK);
GRC_SAME_(GRID_MODE_IN, GRD_IN);
GRC_SAME_(GRID_MODE_OUT, GRD_OUT);
GRC_SAME_(GRID_MODE_INOUT, GRD_INOUT);
GRC_SAME_(GRID_MODE_WORK, GRD_WORK);
GRC_SAME_(GRID_LANG_C_NP, GRD_LANG_C);
GRC_SAME_(GRID_LANG_CXX_NP, GRD_LANG_CXX);
GRC_SAME_(GRID_LANG_FORTRAN_NP, GRD_LANG_FORTRAN);
GRC_SAME_(GRID_MAX_PARAMS_NP, GRD_MAX_PARAMS);
GRC_SAME_(GRID_MAX_RANK_NP, GRD_MAX_RANK);
GRC_SAME_(sizeof((grid_function_np *)0)->module, GRD_MAX_NAME + 1);
GRC_SAME_(sizeof((grid_function_np *)0)->name, GRD_MAX_NAME + 1);
GRC_SAME_(sizeof((grid_param_np *)0)->name, GRD_MAX_NAME + 1);
GRC_SAME_(sizeof((grid_function_np *)0)->description, GRD_MAX_DESCRIPTION + 1);
/* The OGF layer builds gridrpc://host:port/function from a handle: the core must hold
 * whatever a handle holds. */
GRC_SAME_(sizeof((grpc_function_handle_t *)0)->host_np, GRC_MAX_HOST);
GRC_SAME_(sizeof((grpc_function_handle_t *)0)->function_np, GRC_MAX_NAME);
GRC_SAME_(GRID_MAX_TOKEN_NP, GRP_MAX_TOKEN);
/* grm_value is the public scalar union. */
_Static_assert(sizeof(grm_value) == sizeof(grid_scalar_np), "grm_value is grid_scalar_np");
#undef GRC_SAME_

void grid_get_stats_np(grid_stats_np *out) {
    out->descriptor_fetches = __atomic_load_n(&grc_stat_fetches, __ATOMIC_RELAXED);
    out->connections_opened = __atomic_load_n(&grc_stat_connections, __ATOMIC_RELAXED);
    out->calls = __atomic_load_n(&grc_stat_calls, __ATOMIC_RELAXED);
    out->bytes_sent = __atomic_load_n(&grc_stat_bytes_sent, __ATOMIC_RELAXED);
    out->bytes_received = __atomic_load_n(&grc_stat_bytes_received, __ATOMIC_RELAXED);
}

static void report(const gr_err *e) {
    grc_report(e->code, e->msg);
}

const char *grid_last_error(void) {
    return grc_last_error();
}

void grid_set_last_error_np(const char *msg) {
    grc_set_last_error(msg);
}

int grid_call_counted_np(int nargs, const char *name, ...) {
    gr_err e;
    gr_clearerr(&e);
    va_list ap;
    va_start(ap, name);
    grc_args args = {&ap, NULL, nargs - 1};
    int rc = grc_call(name, &args, &e);
    va_end(ap);
    e.code = rc;
    report(&e);
    return rc;
}

int grid_call_uncounted_np(const char *name, ...) {
    gr_err e;
    gr_clearerr(&e);
    va_list ap;
    va_start(ap, name);
    grc_args args = {&ap, NULL, -1};
    int rc = grc_call(name, &args, &e);
    va_end(ap);
    e.code = rc;
    report(&e);
    return rc;
}

int grid_last_call_times_np(grid_call_times_np *out) {
    if (!grc_call_last_times(out)) {
        memset(out, 0, sizeof *out);
        grc_report(GRID_ERR_CONFIG, "no synchronous call of this thread has succeeded yet");
        return GRID_ERR_CONFIG;
    }
    return GRID_OK;
}

int grid_call_va_np(const char *name, int nargs, va_list ap) {
    gr_err e;
    gr_clearerr(&e);
    /* A va_list parameter may have decayed to a pointer (x86-64): the core takes the
     * address of a real va_list object, so it gets a copy. */
    va_list aq;
    va_copy(aq, ap);
    grc_args args = {&aq, NULL, nargs < 0 ? -1 : nargs};
    int rc = grc_call(name, &args, &e);
    va_end(aq);
    e.code = rc;
    report(&e);
    return rc;
}

int grid_call_argv_np(const char *name, int nargs, void *const *argv) {
    gr_err e;
    gr_clearerr(&e);
    grc_args args = {NULL, argv, nargs};
    int rc = argv || nargs == 0
                 ? grc_call(name, &args, &e)
                 : gr_seterr(&e, GRID_ERR_ARGS, "grid_call_argv_np: the argument vector is NULL");
    e.code = rc;
    report(&e);
    return rc;
}

/* Resolves NAME and gets its descriptor, for the introspection calls. */
static int lookup(const char *name, const grd_desc **d, gr_err *e) {
    grc_config cfg;
    grc_target t;
    memset(&t, 0, sizeof t);
    int rc = grc_config_get(&cfg, e);
    if (!rc && name && *name && !gr_scheme_len(name, NULL) && cfg.meta_host[0])
        return grc_meta_describe(name, &cfg, &t, d, e);
    if (!rc) rc = grc_resolve(name, &cfg, &t, e);
    if (!rc) rc = grc_descriptor(&t, &cfg, d, e);
    if (rc && t.name[0]) gr_prefixerr(e, "%s on %s:%d: ", t.name, t.host, t.port);
    return rc;
}

unsigned long grid_type_size_np(int type) {
    if (type == GRD_STRING || type == GRD_FILENAME || type == GRD_CALLBACK) return 0;
    return (unsigned long)grd_type_size((uint32_t)type);
}

int grid_describe_np(const char *name, grid_function_np *out) {
    gr_err e;
    gr_clearerr(&e);
    const grd_desc *d;
    int rc = out ? lookup(name, &d, &e) : gr_seterr(&e, GRID_ERR_ARGS, "grid_describe_np: OUT is NULL");
    if (!rc) {
        memset(out, 0, sizeof *out);
        snprintf(out->module, sizeof out->module, "%s", d->module);
        snprintf(out->name, sizeof out->name, "%s", d->name);
        snprintf(out->description, sizeof out->description, "%s", d->description ? d->description : "");
        out->nparams = (int)d->nparams;
        out->language = (int)d->language;
        for (uint32_t i = 0; i < d->nparams; i++) {
            const grd_param *p = &d->params[i];
            snprintf(out->params[i].name, sizeof out->params[i].name, "%s", p->name);
            out->params[i].type = (int)p->type;
            out->params[i].mode = (int)p->mode;
            out->params[i].rank = (int)p->rank;
            out->params[i].is_unsigned = (p->flags & GRD_PF_UNSIGNED) != 0;
        }
    }
    e.code = rc;
    report(&e);
    return rc;
}

int grid_array_shape_np(const char *name, void *const *argv, int param, long long *dims) {
    gr_err e;
    gr_clearerr(&e);
    const grd_desc *d;
    int rc = lookup(name, &d, &e);
    if (!rc && (param < 0 || (uint32_t)param >= d->nparams || !argv || !dims))
        rc = gr_seterr(&e, GRID_ERR_ARGS,
                       "grid_array_shape_np: parameter %d is out of range (0..%u) or a pointer is NULL",
                       param, d->nparams - 1);
    if (!rc) {
        grm_call *c = malloc(grm_call_size(d->nparams));
        if (!c) {
            rc = gr_seterr(&e, GRID_ERR_NOMEM, "out of memory");
        } else {
            grm_init(c, d, GRM_CLIENT_SIDE);
            for (uint32_t i = 0; i < d->nparams; i++)
                c->ptr[i] = argv[i];
            rc = grm_prepare(c, NULL, &e);
            if (!rc)
                for (uint32_t k = 0; k < c->sl[param].ext.rank; k++)
                    dims[k] = c->sl[param].ext.size[k];
            free(c);
        }
    }
    e.code = rc;
    report(&e);
    return rc;
}

int grid_set_timeouts_np(double connect_seconds, double call_seconds) {
    if (connect_seconds < 0 || call_seconds < 0) {
        grc_set_last_error("timeouts must be >= 0 seconds (0: none)");
        return GRID_ERR_ARGS;
    }
    grc_config_set_timeouts(connect_seconds, call_seconds, NULL);
    grc_report(GRID_OK, NULL);
    return GRID_OK;
}

int grid_set_timeouts_from_np(double connect_seconds, double call_seconds, const char *source) {
    /* Negative: not forced, as in grid_clear_timeouts_np. */
    grc_config_set_timeouts(connect_seconds < 0 ? -1 : connect_seconds, call_seconds < 0 ? -1 : call_seconds,
                            source);
    grc_report(GRID_OK, NULL);
    return GRID_OK;
}

int grid_set_token_np(const char *token) {
    gr_err e;
    gr_clearerr(&e);
    if (token && strlen(token) > GRP_MAX_TOKEN)
        gr_seterr(&e, GRID_ERR_ARGS, "grid_set_token_np: a token has at most %d bytes, not %zu",
                  GRP_MAX_TOKEN, strlen(token));
    else
        grc_config_set_token(token);
    report(&e);
    return e.code;
}

int grid_set_key_file_np(const char *path) {
    gr_err e;
    gr_clearerr(&e);
    if (!path) {
        grc_config_set_keys(NULL);
    } else {
        grp_keyset ks;
        memset(&ks, 0, sizeof ks);
        if (!*path || grp_keyset_load(path, &ks, &e) == GRID_OK)
            grc_config_set_keys(&ks);
        else
            gr_prefixerr(&e, "grid_set_key_file_np: ");
        grp_keyset_clear(&ks);
    }
    report(&e);
    return e.code;
}

int grid_set_tls_ca_np(const char *path) {
    gr_err e;
    gr_clearerr(&e);
    /* Loaded now, so a wrong file is reported here rather than at the first call. */
    if (path && (!*path || strlen(path) >= sizeof(((grc_config *)0)->tls_ca)))
        gr_seterr(&e, GRID_ERR_ARGS, "grid_set_tls_ca_np: give the path of a PEM file of CA certificates");
    else if (path && !grw_tls_client_ctx(path, &e))
        gr_prefixerr(&e, "grid_set_tls_ca_np: ");
    else
        grc_config_set_tls_ca(path);
    report(&e);
    return e.code;
}

void grid_clear_timeouts_np(void) {
    /* Negative: not forced (grc_config.c), so the loaded settings apply again. */
    grc_config_set_timeouts(-1, -1, NULL);
    grc_report(GRID_OK, NULL);
}

int grid_get_timeouts_np(double *connect_seconds, double *call_seconds) {
    gr_err e;
    gr_clearerr(&e);
    grc_config cfg;
    int rc = grc_config_get(&cfg, &e);
    if (!rc && connect_seconds) *connect_seconds = cfg.connect_timeout;
    if (!rc && call_seconds) *call_seconds = cfg.call_timeout;
    e.code = rc;
    report(&e);
    return rc;
}

int grid_get_server_np(char *host, size_t hostsize, int *port) {
    gr_err e;
    gr_clearerr(&e);
    grc_config cfg;
    int rc = host && hostsize ? grc_config_get(&cfg, &e)
                              : gr_seterr(&e, GRID_ERR_ARGS, "grid_get_server_np: HOST is NULL or empty");
    if (!rc && strlen(cfg.server_host) >= hostsize)
        rc = gr_seterr(&e, GRID_ERR_ARGS,
                       "grid_get_server_np: the server's name '%s' needs %zu bytes, not %zu", cfg.server_host,
                       strlen(cfg.server_host) + 1, hostsize);
    if (!rc) {
        memcpy(host, cfg.server_host, strlen(cfg.server_host) + 1);
        if (port) *port = cfg.server_host[0] ? cfg.server_port : 0;
    }
    e.code = rc;
    report(&e);
    return rc;
}

int grid_set_metaserver_np(const char *host, int port) {
    gr_err e;
    gr_clearerr(&e);
    if (host && strlen(host) >= GRC_MAX_HOST)
        gr_seterr(&e, GRID_ERR_ARGS, "grid_set_metaserver_np: a host name has at most %d bytes",
                  GRC_MAX_HOST - 1);
    else if (host && *host && (port < 1 || port > 65535))
        gr_seterr(&e, GRID_ERR_ARGS, "grid_set_metaserver_np: port %d is not 1..65535", port);
    else
        grc_config_set_metaserver(host, host && *host ? port : 0);
    report(&e);
    return e.code;
}

int grid_get_metaserver_np(char *host, size_t hostsize, int *port) {
    gr_err e;
    gr_clearerr(&e);
    grc_config cfg;
    int rc = host && hostsize ? grc_config_get(&cfg, &e)
                              : gr_seterr(&e, GRID_ERR_ARGS, "grid_get_metaserver_np: HOST is NULL or empty");
    if (!rc && strlen(cfg.meta_host) >= hostsize)
        rc = gr_seterr(&e, GRID_ERR_ARGS, "grid_get_metaserver_np: the name '%s' needs %zu bytes, not %zu",
                       cfg.meta_host, strlen(cfg.meta_host) + 1, hostsize);
    if (!rc) {
        memcpy(host, cfg.meta_host, strlen(cfg.meta_host) + 1);
        if (port) *port = cfg.meta_host[0] ? cfg.meta_port : 0;
    }
    e.code = rc;
    report(&e);
    return rc;
}

int grid_set_scheduler_np(const char *policy) {
    gr_err e;
    gr_clearerr(&e);
    int p = policy ? grp_policy_parse(policy) : GRP_POLICY_DEFAULT;
    if (p < 0)
        gr_seterr(&e, GRID_ERR_ARGS,
                  "grid_set_scheduler_np: unknown scheduler '%.100s': use \"mct\", \"least-load\" or "
                  "\"round-robin\" (NULL or \"default\": the metaserver's own)",
                  policy);
    else
        grc_config_set_policy(p);
    report(&e);
    return e.code;
}

int grid_set_call_flags_np(unsigned flags) {
    gr_err e;
    gr_clearerr(&e);
    if (flags & ~GRID_CALL_NO_RETRY_NP)
        gr_seterr(&e, GRID_ERR_ARGS,
                  "grid_set_call_flags_np: unknown flags 0x%x (known: GRID_CALL_NO_RETRY_NP)",
                  flags & ~GRID_CALL_NO_RETRY_NP);
    else
        grc_set_call_flags(flags);
    report(&e);
    return e.code;
}

int grid_last_server_np(char *buf, size_t n) {
    gr_err e;
    gr_clearerr(&e);
    const char *s = grc_last_server();
    if (!buf || n <= strlen(s))
        gr_seterr(&e, GRID_ERR_ARGS, "grid_last_server_np: BUF needs %zu bytes", strlen(s) + 1);
    else
        memcpy(buf, s, strlen(s) + 1);
    report(&e);
    return e.code;
}

void grid_reset_np(void) {
    /* The calling thread's open transaction holds descriptors the reset frees. */
    if (grc_txn_active()) grid_transaction_abort_np();
    grc_data_reset(); /* SESSION_END, over the pool still open */
    grc_meta_reset();
    grc_async_reset();
    grc_pool_reset();
    grc_cache_reset();
    grc_config_reset();
}

void grid_interrupt_np(void) {
    grc_interrupt_all();
}
