/* grc_list.c: grid_list_functions_np (and grid_free_functions_np), the names of the functions a server
 * serves, or that the servers registered with the metaserver serve (both answer LIST), for bindings and
 * programs that want to show what they can call. One LIST round trip on a pooled connection. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gr_settings.h"
#include "grc_client.h"

static int cmp_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Where to ask: SERVER ("host:port", "gridrpc://host:port" or "gridrpcs://host:port"), else the configured
 * metaserver, else the configured server. WHAT names it for messages. */
static int pick(const char *server, const grc_config *cfg, char *host, size_t hostsize, int *port, char *what,
                size_t whatsize, gr_err *e) {
    if (server && *server) {
        int tls;
        const char *hp = server + gr_scheme_len(server, &tls);
        char buf[GRC_MAX_HOST + 16], err[512];
        size_t len = strcspn(hp, "/");
        if (hp[len] == '/' && hp[len + 1])
            return gr_seterr(
                e, GRID_ERR_ARGS,
                "grid_list_functions_np: '%s' names a function: give the server alone (host:port)", server);
        if (len >= sizeof buf)
            return gr_seterr(e, GRID_ERR_ARGS, "grid_list_functions_np: server name too long");
        memcpy(buf, hp, len);
        buf[len] = '\0';
        if (gr_parse_hostport(buf, 0, host, hostsize, port, err, sizeof err))
            return gr_seterr(e, GRID_ERR_ARGS, "grid_list_functions_np: '%s': %s", server, err);
        if (tls) gr_tls_endpoint_mark(host, *port);
        snprintf(what, whatsize, "the server %s:%d", host, *port);
        return GRID_OK;
    }
    if (cfg->meta_host[0]) {
        snprintf(host, hostsize, "%s", cfg->meta_host);
        *port = cfg->meta_port;
        snprintf(what, whatsize, "the metaserver %s:%d (%s)", host, *port, cfg->meta_source);
        return GRID_OK;
    }
    if (cfg->server_host[0]) {
        snprintf(host, hostsize, "%s", cfg->server_host);
        *port = cfg->server_port;
        snprintf(what, whatsize, "the server %s:%d (%s)", host, *port, cfg->source);
        return GRID_OK;
    }
    return gr_seterr(e, GRID_ERR_CONFIG,
                     "no server to list the functions of: give one (host:port), set GRIDRPC_METASERVER or "
                     "GRIDRPC_SERVER=host:port, or add 'server host:port' to ~/.gridrpc.conf");
}

static int list(const char *server, char ***names, uint32_t *count, gr_err *e) {
    grc_config cfg;
    char host[GRC_MAX_HOST], what[GRC_MAX_HOST + 1400]; /* + a source (1024) */
    int port = 0;
    int rc = grc_config_get(&cfg, e);
    if (!rc) rc = pick(server, &cfg, host, sizeof host, &port, what, sizeof what, e);
    if (rc) return rc;
    grc_conn *c;
    rc = grc_conn_get(host, port, &cfg, &c, e);
    if (!rc) {
        c->rd.deadline_ns = c->wr.deadline_ns = grc_config_deadline(&cfg);
        uint64_t id = c->next_id++;
        grw_header h;
        int in_step = 0;
        rc = grp_write_empty(&c->wr, GRP_LIST, id, e);
        if (!rc) rc = grp_read_header(&c->rd, &h, e);
        if (!rc && h.request_id != id)
            rc = gr_seterr(e, GRID_ERR_PROTOCOL, "reply to request %llu while waiting for %llu",
                           (unsigned long long)h.request_id, (unsigned long long)id);
        if (!rc) rc = grp_expect(&c->rd, &h, GRP_LIST_OK, "LIST", &in_step, e);
        if (!rc) in_step = (rc = grp_read_list_ok(&c->rd, names, count, e)) == GRID_OK;
        grc_conn_put(c, !in_step);
    }
    if (rc) {
        char why[sizeof e->msg];
        snprintf(why, sizeof why, "%s", e->msg);
        gr_seterr(e, rc, "listing the functions of %s: %s", what, why);
    }
    return rc;
}

int grid_list_functions_np(const char *server, char ***names, int *count) {
    gr_err e;
    gr_clearerr(&e);
    char **v = NULL;
    uint32_t n = 0;
    int rc = names && count ? list(server, &v, &n, &e)
                            : gr_seterr(&e, GRID_ERR_ARGS, "grid_list_functions_np: NAMES or COUNT is NULL");
    /* One more slot for the NULL that ends the array. */
    char **out = NULL;
    if (!rc && !(out = realloc(v, (n + 1) * sizeof *out))) {
        grp_free_names(v, n);
        rc = gr_seterr(&e, GRID_ERR_NOMEM, "out of memory for %u function names", n);
    }
    if (!rc) {
        if (n > 1) qsort(out, n, sizeof *out, cmp_name);
        out[n] = NULL;
        *names = out;
        *count = (int)n; /* the decoder refuses more than 65536 */
    } else if (names && count) {
        *names = NULL;
        *count = 0;
    }
    grc_report(rc, e.msg);
    return rc;
}

void grid_free_functions_np(char **names) {
    if (!names) return;
    for (char **p = names; *p; p++)
        free(*p);
    free(names);
}
