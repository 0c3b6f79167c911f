/* gsv_copy_trust.c: where DATA_COPY may send a data handle (issue 25, findings 4 and 7;
 * docs/security.md). A client names the destination, so without a check a server
 * would connect anywhere and prove its key to whoever listens there. It goes only to a
 * server named by --copy-to or listed up by this server's metaserver (asked with
 * SERVERS on a connection of its own, as a server, each time: copies are rare and
 * large, and a list kept here could be stale). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "gr_scheme.h"
#include "gr_settings.h"
#include "grp_auth.h"
#include "grp_meta.h"
#include "gsv.h"

/* 1 if HOST:PORT (schemes stripped on both sides) name the same server. */
static int same(const char *a, unsigned aport, const char *b, unsigned bport) {
    int tls;
    a += gr_scheme_len(a, &tls);
    b += gr_scheme_len(b, &tls);
    return aport == bport && strcasecmp(a, b) == 0;
}

static int listed_by_metaserver(gsv_server *s, const char *host, unsigned port, gr_err *e) {
    const gsv_options *o = &s->opt;
    double timeout = o->io_timeout > 0 ? o->io_timeout : 30;
    grw_tls *tls = NULL;
    int fd = grp_dial(o->meta_host, o->meta_port, timeout, o->tls_ca ? o->tls_ca : grw_tls_env_ca(), &tls, e);
    if (fd < 0) return 0;
    grw_reader r;
    grw_writer w;
    grw_reader_init(&r, fd, GRP_DEFAULT_MAX_MESSAGE);
    grw_writer_init(&w, fd);
    r.tls = w.tls = tls;
    r.deadline_ns = w.deadline_ns = gr_now_ns() + (long long)(timeout * 1e9);
    grp_hello h;
    memset(&h, 0, sizeof h);
    snprintf(h.client, sizeof h.client, "gridrpcd %s (data copy check)", PACKAGE_VERSION);
    h.min_version = h.max_version = GRW_VERSION;
    const char *token = o->meta_token ? o->meta_token : o->token ? o->token : getenv("GRIDRPC_TOKEN");
    snprintf(h.token, sizeof h.token, "%s", token ? token : "");
    grp_hello_ok ok;
    grw_header hd;
    int in_step, found = 0;
    grp_server_info *v = NULL;
    uint32_t n = 0;
    int rc = grp_auth_hello_as(&r, &w, 1, &h, &s->meta_keys, GRP_ROLE_SERVER, GRP_PEER_GRIDMETAD, "", &ok,
                               NULL, e);
    if (!rc) rc = grp_write_servers(&w, 2, "", e);
    if (!rc) rc = grp_read_header(&r, &hd, e);
    if (!rc) rc = grp_expect(&r, &hd, GRP_SERVERS_OK, "SERVERS", &in_step, e);
    if (!rc) rc = grp_read_servers_ok(&r, &v, &n, e);
    for (uint32_t i = 0; !rc && i < n && !found; i++)
        found = v[i].state == GRP_SERVER_UP && same(v[i].host, v[i].port, host, port);
    if (!rc && !found) gr_seterr(e, GRID_ERR_CONFIG, "the metaserver does not list it up");
    grp_servers_free(v, n);
    grw_tls_free(tls);
    close(fd);
    return found;
}

int gsv_copy_trusted(gsv_server *s, const char *host, unsigned port, gr_err *e) {
    const gsv_options *o = &s->opt;
    for (unsigned i = 0; i < o->ncopy_to; i++) {
        char h[GRP_MAX_HOST + 1], err[256];
        int tls, p;
        const char *v = o->copy_to[i];
        v += gr_scheme_len(v, &tls);
        const char *colon = strrchr(v, ':');
        if (colon && strcmp(colon, ":*") == 0) {
            const char *want = host + gr_scheme_len(host, &tls);
            if ((size_t)(colon - v) == strlen(want) && strncasecmp(v, want, (size_t)(colon - v)) == 0)
                return GRID_OK;
            continue;
        }
        if (gr_parse_hostport(v, 0, h, sizeof h, &p, err, sizeof err) == 0 &&
            same(h, (unsigned)p, host, port))
            return GRID_OK;
    }
    gr_err me;
    gr_clearerr(&me);
    if (o->meta_port && listed_by_metaserver(s, host, port, &me)) return GRID_OK;
    if (o->meta_port)
        return gr_seterr(e, GRID_ERR_CONFIG, "not in --copy-to and not listed up by the metaserver (%s)",
                         me.msg);
    return gr_seterr(e, GRID_ERR_CONFIG,
                     "not in --copy-to, and this server has no metaserver to list servers");
}
