/* tls_wire_test.c: the wire layer over TLS on a socket pair, both ends in this process
 * (TAP). Each end has a reader thread and two writer threads sharing its one session,
 * as gridrpcd's reader and workers (and the client's async reader and callers) do, and
 * both ends send large messages at once: were a lock held across a wait for the socket,
 * the two ends would wait on each other for ever (the test's deadlines turn that into a
 * failure). Also: the scheme grammar and the endpoint set (gr_scheme.h), and the
 * client's refusal of a certificate for another name.
 *
 *   tls-wire-test CERT KEY CA      (CERT: a certificate for localhost, signed by CA) */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "grp_types.h"
#include "gr_scheme.h"
#include "gr_settings.h"
#include "grw_tls.h"
#include "grw_wire.h"

static int n_test, n_failed;
static void check(int ok, const char *what) {
    n_test++;
    if (!ok) n_failed++;
    printf("%s %d %s\n", ok ? "ok" : "not ok", n_test, what);
    fflush(stdout);
}

enum { WRITERS = 2, MESSAGES = 6, BYTES = 4 << 20 };

typedef struct end {
    int fd;
    grw_tls *tls;
    pthread_mutex_t wlock; /* whole messages, as gsv_reply_lock */
    grw_writer w;
    int received, bad;
    char err[1100];
} end;

static long long deadline(void) {
    return gr_now_ns() + 60LL * 1000000000LL;
}

/* Message: u32 writer, u32 sequence, then BYTES of a pattern both give. */
static uint8_t pattern(unsigned writer, unsigned seq, size_t i) {
    return (uint8_t)(writer * 31u + seq * 7u + i * 13u);
}

typedef struct writer_arg {
    end *e;
    unsigned id;
    int failed;
} writer_arg;

static void *writer_main(void *p) {
    writer_arg *a = p;
    uint8_t *buf = malloc(BYTES);
    for (unsigned s = 0; s < MESSAGES && buf; s++) {
        for (size_t i = 0; i < BYTES; i++)
            buf[i] = pattern(a->id, s, i);
        gr_err err;
        pthread_mutex_lock(&a->e->wlock);
        grw_writer *w = &a->e->w;
        grw_writer_init(w, a->e->fd);
        w->tls = a->e->tls;
        w->deadline_ns = deadline();
        int rc = grw_begin(w, GRP_DATA, 0, s + 1, &err);
        if (!rc) rc = grw_write_u32(w, a->id, &err);
        if (!rc) rc = grw_write_u32(w, s, &err);
        if (!rc) rc = grw_write(w, buf, BYTES, &err);
        if (!rc) rc = grw_finish(w, &err);
        pthread_mutex_unlock(&a->e->wlock);
        if (rc) {
            fprintf(stderr, "writer %u: %s\n", a->id, err.msg);
            a->failed = 1;
            break;
        }
    }
    free(buf);
    return NULL;
}

static void *reader_main(void *p) {
    end *e = p;
    grw_reader *r = malloc(sizeof *r);
    uint8_t *buf = malloc(BYTES);
    if (!r || !buf) {
        e->bad = 1;
        free(r);
        free(buf);
        return NULL;
    }
    grw_reader_init(r, e->fd, (uint64_t)BYTES + 1024);
    r->tls = e->tls;
    unsigned next[WRITERS] = {0};
    while (e->received < WRITERS * MESSAGES) {
        gr_err err;
        grw_header h;
        uint32_t id, seq;
        r->deadline_ns = deadline();
        int rc = grw_read_header(r, &h, &err);
        if (!rc) rc = grw_read_u32(r, &id, &err);
        if (!rc) rc = grw_read_u32(r, &seq, &err);
        if (!rc && (id >= WRITERS || seq != next[id])) {
            snprintf(e->err, sizeof e->err, "message %u of writer %u out of order", seq, id);
            e->bad = 1;
            break;
        }
        if (!rc) rc = grw_read(r, buf, BYTES, &err);
        if (!rc) rc = grw_end(r, &err);
        if (rc) {
            snprintf(e->err, sizeof e->err, "%s", err.msg);
            e->bad = 1;
            break;
        }
        for (size_t i = 0; i < BYTES; i++)
            if (buf[i] != pattern(id, seq, i)) {
                snprintf(e->err, sizeof e->err, "byte %zu of message %u of writer %u differs", i, seq, id);
                e->bad = 1;
                break;
            }
        if (e->bad) break;
        next[id]++;
        e->received++;
    }
    free(buf);
    free(r);
    return NULL;
}

typedef struct connect_arg {
    grw_tls_ctx *ctx;
    int fd;
    const char *host;
    grw_tls *tls;
    gr_err e;
} connect_arg;

static void *connect_main(void *p) {
    connect_arg *a = p;
    a->tls = grw_tls_connect(a->ctx, a->fd, a->host, deadline(), &a->e);
    return NULL;
}

/* Handshakes both ends of a fresh socket pair: the client checks HOST. */
static int pair(grw_tls_ctx *sctx, grw_tls_ctx *cctx, const char *host, end *s, end *c, gr_err *ce) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return -1;
    connect_arg ca = {cctx, sv[1], host, NULL, {0}};
    pthread_t t;
    pthread_create(&t, NULL, connect_main, &ca);
    gr_err se;
    int plain = 0;
    grw_tls *st = grw_tls_accept(sctx, sv[0], deadline(), &plain, &se);
    pthread_join(t, NULL);
    *ce = ca.e;
    s->fd = sv[0];
    c->fd = sv[1];
    s->tls = st;
    c->tls = ca.tls;
    return st && ca.tls ? 0 : -1;
}

static void close_end(end *e) {
    grw_tls_free(e->tls);
    close(e->fd);
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: tls-wire-test CERT KEY CA\n");
        return 2;
    }
    /* The scheme grammar. */
    int tls = -1;
    check(gr_scheme_len("gridrpcs://h:1", &tls) == 11 && tls == 1, "gridrpcs:// is the TLS scheme");
    check(gr_scheme_len("gridrpc://h:1", &tls) == 10 && tls == 0, "gridrpc:// is the plain scheme");
    check(gr_scheme_len("h:1", &tls) == 0 && gr_scheme_len("gridrpcx://h:1", NULL) == 0, "no scheme: 0");
    char host[256], err[512];
    int port = 0;
    check(gr_parse_hostport("gridrpcs://node7:7000", 0, host, sizeof host, &port, err, sizeof err) == 0 &&
              strcmp(host, "node7") == 0 && port == 7000 && gr_tls_endpoint("node7", 7000) &&
              !gr_tls_endpoint("node7", 7001),
          "gridrpcs://node7:7000 parses to node7, 7000 and marks that endpoint for TLS");
    check(gr_parse_hostport("gridrpcs://[::1]:7002", 0, host, sizeof host, &port, err, sizeof err) == 0 &&
              strcmp(host, "::1") == 0 && gr_tls_endpoint("::1", 7002),
          "gridrpcs://[::1]:7002: an IPv6 address");
    check(gr_parse_hostport("gridrpc://node8:7000", 0, host, sizeof host, &port, err, sizeof err) == 0 &&
              strcmp(host, "node8") == 0 && !gr_tls_endpoint("node8", 7000),
          "gridrpc://node8:7000 stays plain");
    gr_parse_hostport("node7:7000", 0, host, sizeof host, &port, err, sizeof err);
    check(gr_tls_endpoint("node7", 7000), "naming it plain later does not drop TLS");
    check(gr_parse_hostport("gridrpcs://", 0, host, sizeof host, &port, err, sizeof err) != 0 &&
              strstr(err, "gridrpcs://") != NULL,
          "gridrpcs:// without an address is refused, quoting it");

    gr_err e;
    grw_tls_ctx *sctx = grw_tls_server_ctx(argv[1], argv[2], &e);
    if (!sctx) printf("# %s\n", e.msg);
    grw_tls_ctx *cctx = grw_tls_client_ctx(argv[3], &e);
    if (!cctx) printf("# %s\n", e.msg);
    check(sctx && cctx, "server and client contexts");
    if (!sctx || !cctx) {
        printf("1..%d\n", n_test);
        return 1;
    }

    /* A certificate for localhost, reached as another name. */
    end s = {0}, c = {0};
    gr_err ce;
    int rc = pair(sctx, cctx, "elsewhere.example", &s, &c, &ce);
    check(rc != 0 && strstr(ce.msg, "not valid for 'elsewhere.example'"), "the client checks the host name");
    if (rc == 0 || !strstr(ce.msg, "not valid")) printf("# %s\n", ce.msg);
    close_end(&s);
    close_end(&c);

    /* Full duplex, many threads per session. */
    memset(&s, 0, sizeof s);
    memset(&c, 0, sizeof c);
    rc = pair(sctx, cctx, "localhost", &s, &c, &ce);
    check(rc == 0, "handshake on a socket pair");
    if (rc) {
        printf("# %s\n1..%d\n", ce.msg, n_test);
        return 1;
    }
    pthread_mutex_init(&s.wlock, NULL);
    pthread_mutex_init(&c.wlock, NULL);
    pthread_t rt[2], wt[2][WRITERS];
    writer_arg wa[2][WRITERS];
    end *ends[2] = {&s, &c};
    long long t0 = gr_now_ns();
    for (int k = 0; k < 2; k++) {
        pthread_create(&rt[k], NULL, reader_main, ends[1 - k]);
        for (unsigned i = 0; i < WRITERS; i++) {
            wa[k][i] = (writer_arg){ends[k], i, 0};
            pthread_create(&wt[k][i], NULL, writer_main, &wa[k][i]);
        }
    }
    int wfail = 0;
    for (int k = 0; k < 2; k++) {
        for (unsigned i = 0; i < WRITERS; i++) {
            pthread_join(wt[k][i], NULL);
            wfail |= wa[k][i].failed;
        }
        pthread_join(rt[k], NULL);
    }
    double secs = (double)(gr_now_ns() - t0) / 1e9;
    check(!wfail, "every writer sent all its messages");
    for (int k = 0; k < 2; k++) {
        end *x = ends[k];
        char what[200];
        snprintf(what, sizeof what, "the %s received %d x %d MiB, in order and intact",
                 k ? "client" : "server", WRITERS * MESSAGES, BYTES >> 20);
        check(!x->bad && x->received == WRITERS * MESSAGES, what);
        if (x->bad) printf("# %s\n", x->err);
    }
    printf("# %d MiB each way in %.2f s\n", WRITERS * MESSAGES * (BYTES >> 20), secs);
    close_end(&s);
    close_end(&c);
    grw_tls_ctx_free(sctx);
    printf("1..%d\n", n_test);
    return n_failed ? 1 : 0;
}
