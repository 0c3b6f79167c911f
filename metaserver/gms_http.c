/* gms_http.c: the status page over HTTP with libmicrohttpd (its own polling thread):
 * GET / is the page compiled in from metaserver/www/status.html, GET /api/status the
 * JSON of gms_status.c. We bind the socket ourselves (loopback by default, any free
 * port for 0) and hand it to the library, so the address printed is the one bound.
 *
 * Two defences: only the page's own Host names are answered (421 otherwise), so a web
 * page whose DNS name was rebound to this address cannot read /api/status from a
 * browser; and slow connections cannot take the page away from others (a short
 * inactivity timeout, a cap per address, and room for many connections). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#include "gms.h"

/* Connections from one address (loopback counts as one), and in all: a few hundred
 * idle sockets cost the polling thread little, and one host cannot take them all. */
#define GMS_HTTP_MAX_CONNECTIONS 1024u
#define GMS_HTTP_MAX_PER_ADDRESS 32u
/* A browser or curl sends its whole request at once: a connection quiet this long is
 * dropped. */
#define GMS_HTTP_TIMEOUT_S 10u

struct gms_http {
    struct MHD_Daemon *d;
    gms_state *st;
    /* The Host names answered, without ports; lower case. */
    char allow[GMS_MAX_HTTP_HOSTS + 8][260];
    int nallow;
};

static void allow_name(struct gms_http *h, const char *name) {
    if (h->nallow >= (int)(sizeof h->allow / sizeof h->allow[0]) || !*name) return;
    char *o = h->allow[h->nallow];
    size_t n = 0;
    for (; *name && n + 1 < sizeof h->allow[0]; name++)
        o[n++] = (char)tolower((unsigned char)*name);
    o[n] = '\0';
    h->nallow++;
}

/* Whether the Host header V names this page: its name (a port after ':' ignored; an
 * IPv6 address in brackets) is one of h->allow. No Host at all (HTTP/1.0) is answered:
 * a browser always sends one. */
static int host_allowed(const struct gms_http *h, const char *v) {
    if (!v) return 1;
    char name[260];
    size_t n = 0;
    if (*v == '[') {
        const char *end = strchr(v, ']');
        if (!end) return 0;
        n = (size_t)(end - v) + 1;
    } else {
        n = strcspn(v, ":");
    }
    if (n == 0 || n >= sizeof name) return 0;
    for (size_t i = 0; i < n; i++)
        name[i] = (char)tolower((unsigned char)v[i]);
    name[n] = '\0';
    if (n > 1 && name[n - 1] == '.') name[--n] = '\0'; /* "localhost." */
    for (int i = 0; i < h->nallow; i++)
        if (strcmp(name, h->allow[i]) == 0) return 1;
    return 0;
}

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned status, const char *type, void *body,
                             size_t len, enum MHD_ResponseMemoryMode mode) {
    struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, "Content-Type", type);
    MHD_add_response_header(r, "Cache-Control", "no-store");
    enum MHD_Result rc = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return rc;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                              const char *version, const char *upload, size_t *upload_size, void **state) {
    (void)version;
    (void)upload;
    struct gms_http *h = cls;
    /* The first call for a request only announces its headers. */
    if (!*state) {
        *state = (void *)1;
        return MHD_YES;
    }
    if (*upload_size) {
        *upload_size = 0;
        return MHD_YES;
    }
    static char not_allowed[] = "only GET is served here\n",
                not_found[] = "not found: try / or /api/status\n",
                misdirected[] = "this status page does not answer that Host name; gridmetad "
                                "--http-allow-host NAME adds one\n";
    if (!host_allowed(h, MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST)))
        return reply(conn, MHD_HTTP_MISDIRECTED_REQUEST, "text/plain", misdirected, strlen(misdirected),
                     MHD_RESPMEM_PERSISTENT);
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
        return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain", not_allowed, strlen(not_allowed),
                     MHD_RESPMEM_PERSISTENT);
    if (strcmp(url, "/api/status") == 0) {
        gms_buf b = {0};
        gms_status_json(h->st, &b);
        if (b.failed || !b.p) {
            free(b.p);
            static char oom[] = "{\"error\":\"out of memory\"}\n";
            return reply(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "application/json", oom, strlen(oom),
                         MHD_RESPMEM_PERSISTENT);
        }
        return reply(conn, MHD_HTTP_OK, "application/json", b.p, b.len, MHD_RESPMEM_MUST_FREE);
    }
    if (strcmp(url, "/") == 0 || strcmp(url, "/index.html") == 0)
        return reply(conn, MHD_HTTP_OK, "text/html; charset=utf-8", (void *)gms_status_html,
                     gms_status_html_len, MHD_RESPMEM_PERSISTENT);
    return reply(conn, MHD_HTTP_NOT_FOUND, "text/plain", not_found, strlen(not_found),
                 MHD_RESPMEM_PERSISTENT);
}

struct gms_http *gms_http_start(gms_state *st, const gms_options *o, gr_err *e) {
    const char *host = o->http_host;
    int port = o->http_port;
    int err;
    int fd = gdm_bind(host, port, 1024, "--http-host", &err, e);
    if (fd < 0) {
        if (err) gr_seterr(e, GRID_ERR_CONFIG, "--http %s:%d: cannot listen: %s", host, port, strerror(err));
        return NULL;
    }
    struct gms_http *h = calloc(1, sizeof *h);
    if (!h) {
        close(fd);
        gr_seterr(e, GRID_ERR_NOMEM, "out of memory");
        return NULL;
    }
    h->st = st;
    allow_name(h, "localhost");
    allow_name(h, "127.0.0.1");
    allow_name(h, "[::1]");
    char self[256];
    if (gethostname(self, sizeof self) == 0) {
        self[sizeof self - 1] = '\0';
        allow_name(h, self);
    }
    /* The address given, unless it stands for every interface (then the operator
     * names the page's public names with --http-allow-host). */
    if (strcmp(host, "0.0.0.0") != 0 && strcmp(host, "::") != 0) {
        char b[270];
        snprintf(b, sizeof b, strchr(host, ':') ? "[%s]" : "%s", host);
        allow_name(h, b);
    }
    for (int i = 0; i < o->http_nallow; i++)
        allow_name(h, o->http_allow[i]);
    h->d = MHD_start_daemon(MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL, handle, h,
                            MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_CONNECTION_TIMEOUT, GMS_HTTP_TIMEOUT_S,
                            MHD_OPTION_CONNECTION_LIMIT, GMS_HTTP_MAX_CONNECTIONS,
                            MHD_OPTION_PER_IP_CONNECTION_LIMIT, GMS_HTTP_MAX_PER_ADDRESS, MHD_OPTION_END);
    if (!h->d) {
        close(fd);
        free(h);
        gr_seterr(e, GRID_ERR_INTERNAL, "--http: libmicrohttpd could not start");
        return NULL;
    }
    char where[80];
    gdm_where(fd, host, port, where, sizeof where);
    printf("http on %s\n", where);
    fflush(stdout);
    gms_log(GMS_LOG_INFO, "status page on http://%s/ (JSON: /api/status)", where);
    return h;
}

void gms_http_stop(struct gms_http *h) {
    if (!h) return;
    /* MHD_stop_daemon closes the listening socket it was given. */
    MHD_stop_daemon(h->d);
    free(h);
}
