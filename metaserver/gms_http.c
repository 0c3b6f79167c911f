/* gms_http.c: the status page over HTTP with libmicrohttpd (its own polling thread):
 * GET / is the page compiled in from metaserver/www/status.html, GET /api/status the
 * JSON of gms_status.c. We bind the socket ourselves (loopback by default, any free
 * port for 0) and hand it to the library, so the address printed is the one bound. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#include "gms.h"

struct gms_http {
    struct MHD_Daemon *d;
    gms_state *st;
};

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
                not_found[] = "not found: try / or /api/status\n";
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

struct gms_http *gms_http_start(gms_state *st, const char *host, int port, gr_err *e) {
    int err;
    int fd = gdm_bind(host, port, 64, "--http-host", &err, e);
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
    h->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL, handle, h,
                            MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30,
                            MHD_OPTION_CONNECTION_LIMIT, (unsigned)64, MHD_OPTION_END);
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
