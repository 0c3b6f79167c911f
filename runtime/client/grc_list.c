/* grc_list.c: grid_list_functions_np, the functions one server offers (its LIST), the
 * C API's counterpart of `gridrpc ls --server HOST:PORT`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gr_settings.h"
#include "grc_client.h"

/* The server SERVER names ("host:port", "gridrpc://host:port[/...]", NULL or "": the
 * default server) into HOST and *PORT. */
static int list_target(const char *server, const grc_config *cfg, char *host, int *port, gr_err *e) {
    if (!server || !*server) {
        if (cfg->server_host[0]) {
            snprintf(host, GRC_MAX_HOST, "%s", cfg->server_host);
            *port = cfg->server_port;
            return GRID_OK;
        }
        return gr_seterr(
            e, GRID_ERR_CONFIG,
            "no default server to list: name one (\"host:port\"), or set GRIDRPC_SERVER=host:port; "
            "`gridrpc ls` lists what the servers of a metaserver offer");
    }
    char buf[GRC_MAX_HOST + 16], err[256];
    const char *s = strncmp(server, "gridrpc://", 10) == 0 ? server + 10 : server;
    size_t n = strcspn(s, "/");
    if (n >= sizeof buf) return gr_seterr(e, GRID_ERR_ARGS, "the server name '%.60s...' is too long", s);
    memcpy(buf, s, n);
    buf[n] = '\0';
    if (gr_parse_hostport(buf, 0, host, GRC_MAX_HOST, port, err, sizeof err))
        return gr_seterr(e, GRID_ERR_ARGS, "server '%s': %s", buf, err);
    return GRID_OK;
}

int grid_list_functions_np(const char *server, char ***names, int *count) {
    gr_err e;
    gr_clearerr(&e);
    if (!names || !count) {
        grc_report(GRID_ERR_ARGS, "grid_list_functions_np: NAMES and COUNT must not be NULL");
        return GRID_ERR_ARGS;
    }
    *names = NULL;
    *count = 0;
    grc_config cfg;
    char host[GRC_MAX_HOST];
    int port = 0;
    int rc = grc_config_get(&cfg, &e);
    if (!rc) rc = list_target(server, &cfg, host, &port, &e);
    grc_conn *c = NULL;
    if (!rc) rc = grc_conn_get(host, port, &cfg, &c, &e);
    char **v = NULL;
    uint32_t n = 0;
    if (!rc) {
        int in_step = 0;
        grw_header h;
        c->rd.deadline_ns = c->wr.deadline_ns = grc_req_deadline(&cfg);
        uint64_t id = c->next_id++;
        rc = grp_write_empty(&c->wr, GRW_LIST, id, &e);
        if (!rc) rc = grp_read_header(&c->rd, &h, &e);
        if (!rc && h.request_id != id)
            rc = gr_seterr(&e, GRID_ERR_PROTOCOL, "reply to request %llu while waiting for %llu",
                           (unsigned long long)h.request_id, (unsigned long long)id);
        if (!rc) rc = grp_expect(&c->rd, &h, GRW_LIST_OK, "LIST", &in_step, &e);
        if (!rc) rc = grp_read_list_ok(&c->rd, &v, &n, &e);
        grc_conn_put(c, rc != GRID_OK && (!in_step || c->rd.in_message));
    }
    /* One more slot for the NULL that ends the array. */
    char **out = NULL;
    if (!rc && (n > 0x7ffffffe || !(out = realloc(v, (n + 1) * sizeof *out)))) {
        grp_free_names(v, n);
        rc = gr_seterr(&e, GRID_ERR_NOMEM, "out of memory");
    }
    if (rc) {
        if (port) gr_prefixerr(&e, "listing the functions of %s:%d: ", host, port);
        grc_report(rc, e.msg);
        return rc;
    }
    out[n] = NULL;
    *names = out;
    *count = (int)n;
    grc_report(GRID_OK, "");
    return GRID_OK;
}

void grid_free_functions_np(char **names) {
    if (!names) return;
    for (char **p = names; *p; p++)
        free(*p);
    free(names);
}
