/* gsv_data_copy.c: DATA_COPY: this server sends one of its handles to another server
 * as a client would (HELLO with this server's --token and the key handshake with the
 * first key of its --key-file, then DATA_PUT with the same
 * session and handle), so the bytes go server to server and never through the client.
 * The transfer runs on a detached thread of its own, holding a reference to the
 * connection and to the buffer, so the connection's reader goes on meanwhile; the
 * origin gets DATA_OK once the destination said DATA_OK, else ERROR naming it. */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "grp_proto.h"
#include "gr_scheme.h"
#include "gsv.h"

typedef struct copy_job {
    gsv_conn *c;
    uint64_t request_id;
    grp_data_copy m;
    gsv_dbuf *b;
    grw_writer w;
    grw_reader r;
} copy_job;

/* Reads the destination's reply to the message just sent (EXPECTED, or ERROR). */
static int reply(copy_job *j, uint32_t expected, const char *what, gr_err *e) {
    grw_header h;
    int in_step;
    int rc = grp_read_header(&j->r, &h, e);
    if (rc == GRID_ERR_CONN_LOST && !e->msg[0]) gr_seterr(e, rc, "it closed the connection");
    if (!rc) rc = grp_expect(&j->r, &h, expected, what, &in_step, e);
    return rc;
}

/* The whole exchange with the destination; E says what went wrong. */
static int send_copy(copy_job *j, gr_err *e) {
    gsv_server *s = j->c->srv;
    double connect_s = s->opt.io_timeout > 0 ? s->opt.io_timeout : 30;
    /* A client names a TLS destination gridrpcs://HOST (docs/protocol.md, DATA_COPY). */
    int tls_dest;
    const char *host = j->m.host + gr_scheme_len(j->m.host, &tls_dest);
    int rc = gsv_copy_trusted(s, host, j->m.port, e);
    if (rc) return rc;
    if (tls_dest) gr_tls_endpoint_mark(host, (int)j->m.port);
    grw_tls *tls = NULL;
    int fd =
        grp_dial(host, (int)j->m.port, connect_s, s->opt.tls_ca ? s->opt.tls_ca : grw_tls_env_ca(), &tls, e);
    if (fd < 0) return e->code;
    grw_writer_init(&j->w, fd);
    grw_reader_init(&j->r, fd, GRP_DEFAULT_MAX_MESSAGE);
    j->w.tls = j->r.tls = tls;
    long long deadline = gsv_io_deadline(s, j->b->bytes);
    if (!deadline) deadline = gr_now_ns() + (long long)3600e9; /* --io-timeout 0: still bounded */
    j->w.deadline_ns = j->r.deadline_ns = deadline;
    grp_hello hello;
    memset(&hello, 0, sizeof hello);
    snprintf(hello.client, sizeof hello.client, "gridrpcd %s (data copy)", PACKAGE_VERSION);
    hello.min_version = hello.max_version = GRW_VERSION;
    snprintf(hello.token, sizeof hello.token, "%s", s->opt.token ? s->opt.token : "");
    grp_hello_ok ok;
    /* The copy proves this server's own role to a gridrpcd only (the proof binds both). */
    rc = grp_auth_hello_as(&j->r, &j->w, 1, &hello, &s->keys, GRP_ROLE_SERVER, GRP_PEER_GRIDRPCD,
                           "start the servers with the same --key-file", &ok, NULL, e);
    if (!rc && j->b->bytes > ok.limits.max_array) {
        char a[32], b[32];
        rc = gr_seterr(e, GRID_ERR_LIMIT, "it takes arrays of at most %s; the handle holds %s",
                       gsv_data_size(ok.limits.max_array, a, sizeof a),
                       gsv_data_size(j->b->bytes, b, sizeof b));
    }
    if (!rc) rc = grp_write_data_put(&j->w, 2, j->m.d, j->b->type, j->b->count, j->b->p, e);
    if (!rc) rc = reply(j, GRP_DATA_OK, "DATA_PUT", e);
    if (!rc) rc = grp_read_empty(&j->r, e);
    grw_tls_free(tls);
    close(fd);
    return rc;
}

static void *copy_main(void *arg) {
    copy_job *j = arg;
    gsv_conn *c = j->c;
    gr_err e;
    gr_clearerr(&e);
    long long t0 = gr_now_ns();
    int rc = send_copy(j, &e);
    double ms = (double)(gr_now_ns() - t0) / 1e6;
    char a[32];
    if (rc) {
        /* The destination's memory limit stays what it is (it was reached and proved a
         * server). Anything else gets one message whatever happened (not trusted, port
         * closed, refused, silent, another program's banner): a client must not learn
         * through this server what listens where (issue 25, finding 7); the log says. */
        int code = rc == GRID_ERR_LIMIT ? GRID_ERR_LIMIT : GRID_ERR_CONNECT;
        char msg[GRP_MAX_ERROR_MESSAGE + 1];
        if (code == GRID_ERR_LIMIT)
            snprintf(msg, sizeof msg, "DATA_COPY of data handle %" PRIu64 " to %s:%u failed: %s",
                     j->m.d.handle, j->m.host, j->m.port, e.msg);
        else
            snprintf(msg, sizeof msg,
                     "DATA_COPY of data handle %" PRIu64 " to %s:%u failed: it is not a server this one may "
                     "copy to (--copy-to, or listed up by its metaserver) or it did not complete the copy as "
                     "one; the server's log says why",
                     j->m.d.handle, j->m.host, j->m.port);
        gsv_log(GSV_LOG_WARN, "data copy %s session=%016" PRIx64 " handle=%" PRIu64 " to %s:%u failed: %s",
                c->peer, j->m.d.session, j->m.d.handle, j->m.host, j->m.port, e.msg);
        gsv_conn_send_error(c, j->request_id, code, msg);
    } else {
        gsv_log(GSV_LOG_INFO, "data copy %s session=%016" PRIx64 " handle=%" PRIu64 " to %s:%u %s in %.1f ms",
                c->peer, j->m.d.session, j->m.d.handle, j->m.host, j->m.port,
                gsv_data_size(j->b->bytes, a, sizeof a), ms);
        grw_writer *w = gsv_reply_lock(c, 0);
        if (w) gsv_reply_unlock(c, grp_write_empty(w, GRP_DATA_OK, j->request_id, &e), &e);
    }
    gsv_data_release(j->b);
    gsv_conn_unref(c);
    free(j);
    return NULL;
}

int gsv_data_copy_start(gsv_conn *c, uint64_t request_id, const grp_data_copy *m, gsv_dbuf *b, gr_err *e) {
    copy_job *j = malloc(sizeof *j);
    if (!j) {
        gsv_data_release(b);
        return gr_seterr(e, GRID_ERR_NOMEM, "the server is out of memory: retry later");
    }
    j->c = c;
    j->request_id = request_id;
    j->m = *m;
    j->b = b;
    gsv_conn_ref(c);
    pthread_attr_t attr;
    pthread_t t;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&t, &attr, copy_main, j);
    pthread_attr_destroy(&attr);
    if (rc) {
        gsv_conn_unref(c);
        gsv_data_release(b);
        free(j);
        return gr_seterr(e, GRID_ERR_BUSY, "the server cannot start a thread for DATA_COPY: retry later");
    }
    return GRID_OK;
}
