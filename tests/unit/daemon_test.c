/* daemon_test.c: the daemon core (runtime/daemon/gdm.h) alone, with a toy serve() on
 * loopback: HELLO is answered, a request is handed to serve() and answered on the
 * same connection, a first message other than HELLO is refused, a connection over the
 * per-address limit gets the daemon's refusal, an idle connection is closed, and
 * SIGTERM ends the accept loop (TAP). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gdm.h"
#include "gr_log.h"
#include "grp_proto.h"
#include "tap.h"

typedef struct toy_conn {
    GDM_CONN_HEAD;
    unsigned served; /* requests answered on it */
} toy_conn;

/* HELLO: HELLO_OK; PING: PONG whose running counts the requests of the connection. */
static int toy_serve(gdm_conn *core, const grw_header *h) {
    toy_conn *c = (toy_conn *)core;
    gr_err e;
    if (h->type == GRP_HELLO) {
        grp_hello m;
        if (grp_read_hello(&c->r, &m, &e)) return GDM_CLOSE;
        c->hello_done = 1;
        grp_hello_ok ok;
        memset(&ok, 0, sizeof ok);
        snprintf(ok.server, sizeof ok.server, "toy");
        ok.version = GRW_VERSION;
        return grp_write_hello_ok(gdm_writer(core, 0), h->request_id, &ok, &e) ? GDM_CLOSE : GDM_KEEP;
    }
    if (h->type == GRP_PING && grp_read_empty(&c->r, &e) == GRID_OK) {
        grp_pong p;
        memset(&p, 0, sizeof p);
        p.running = ++c->served;
        grw_writer *w = gdm_reply_lock(core, 0);
        if (!w) return GDM_CLOSE;
        return gdm_reply_unlock(core, grp_write_pong(w, h->request_id, &p, &e), &e) ? GDM_CLOSE : GDM_KEEP;
    }
    gdm_send_error(core, h->request_id, GRID_ERR_PROTOCOL, "toy: not a request it knows");
    return GDM_REFUSE;
}

/* Held (never idle-closed) until it has had two requests answered: so the test decides
 * when the idle timeout may apply, whatever the machine's speed. */
static int toy_busy(gdm_conn *c) {
    return ((toy_conn *)c)->served < 2;
}

static void toy_refusal(int why, const char *addr, unsigned open, unsigned limit, char *msg, size_t len) {
    snprintf(msg, len, "toy refuses %s: %d, %u open, limit %u", addr, why, open, limit);
}

static int port;

/* A connection to the toy daemon, or -1. */
static int dial(void) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0) return fd;
    if (fd >= 0) close(fd);
    return -1;
}

/* Sends a HELLO (TYPE: GRP_HELLO) or an empty message of TYPE with request id ID. */
static int send_msg(int fd, uint32_t type, uint64_t id) {
    static grw_writer w;
    gr_err e;
    grw_writer_init(&w, fd);
    w.deadline_ns = gr_now_ns() + 5000000000LL;
    if (type != GRP_HELLO) return grp_write_empty(&w, type, id, &e);
    grp_hello m;
    memset(&m, 0, sizeof m);
    snprintf(m.client, sizeof m.client, "daemon-test");
    m.min_version = m.max_version = GRW_VERSION;
    return grp_write_hello(&w, id, &m, &e);
}

/* Reads the next message's header into H (its body into the outputs that apply):
 * GRID_OK, or the error (GRID_ERR_CONN_LOST when the daemon closed). */
static int recv_msg(grw_reader *r, grw_header *h, grp_error *err, grp_pong *pong) {
    gr_err e;
    r->deadline_ns = gr_now_ns() + 5000000000LL;
    int rc = grp_read_header(r, h, &e);
    if (rc) return rc;
    if (h->type == GRP_ERROR) return grp_read_error(r, err, &e);
    if (h->type == GRP_PONG) return grp_read_pong(r, pong, &e);
    grp_hello_ok ok;
    if (h->type == GRP_HELLO_OK) return grp_read_hello_ok(r, &ok, &e);
    return GRID_ERR_PROTOCOL;
}

static gdm_daemon d;
static int sigfd;

static void *accept_main(void *arg) {
    (void)arg;
    gdm_accept_loop(&d, sigfd);
    return NULL;
}

/* Waits (at most 30 s) until N connections are open in the daemon. */
static void wait_open(unsigned n) {
    for (int i = 0; i < 30000 && gdm_conns_open(&d) != n; i++)
        usleep(1000);
}

int main(void) {
    gr_log_init("daemon-test", GR_LOG_ERROR);
    sigfd = gdm_signals("daemon-test");
    if (sigfd < 0) return 1;
    static grw_reader r; /* large */
    gdm_config cfg = {.name = "toy",
                      .conn_size = sizeof(toy_conn),
                      .stack_size = 256 * 1024,
                      .max_message = 1 << 20,
                      .io_timeout = 30, /* no HELLO timeout within the test */
                      .idle_timeout = 0.2,
                      .floor_rate = 1e6,
                      .serve = toy_serve,
                      .busy = toy_busy,
                      .refusal = toy_refusal};
    gr_err e;
    char where[80];
    if (gdm_init(&d, &cfg, 8, 2) || gdm_listen(&d, "127.0.0.1", 0, where, sizeof where, &e)) {
        printf("Bail out! cannot start the toy daemon\n");
        return 1;
    }
    port = atoi(strrchr(where, ':') + 1);
    pthread_t t;
    pthread_create(&t, NULL, accept_main, NULL);

    grw_header h;
    grp_error err;
    grp_pong pong;
    /* Two connections from 127.0.0.1 are its most; the third is refused. */
    int p = dial(), q = dial(), x = dial();
    grw_reader_init(&r, x, 1 << 20);
    int ok = p >= 0 && q >= 0 && x >= 0 && recv_msg(&r, &h, &err, &pong) == GRID_OK && h.type == GRP_ERROR &&
             err.code == GRID_ERR_LIMIT && strstr(err.message, "toy refuses 127.0.0.1: 1, 2 open, limit 2");
    result(ok, "over the per-address limit: %s", ok ? err.message : "");
    close(x);
    close(q);
    close(p);
    wait_open(0);

    int a = dial();
    ok = a >= 0 && send_msg(a, GRP_HELLO, 1) == GRID_OK;
    grw_reader_init(&r, a, 1 << 20);
    ok = ok && recv_msg(&r, &h, &err, &pong) == GRID_OK && h.type == GRP_HELLO_OK && h.request_id == 1;
    result(ok, "HELLO is handed to serve() and answered");
    ok = send_msg(a, GRP_PING, 2) == GRID_OK && send_msg(a, GRP_PING, 3) == GRID_OK &&
         recv_msg(&r, &h, &err, &pong) == GRID_OK && h.type == GRP_PONG && pong.running == 1 &&
         recv_msg(&r, &h, &err, &pong) == GRID_OK && h.type == GRP_PONG && h.request_id == 3 &&
         pong.running == 2;
    result(ok, "two requests on one connection, answered in order");

    int b = dial();
    grw_reader_init(&r, b, 1 << 20);
    ok = b >= 0 && send_msg(b, GRP_PING, 7) == GRID_OK && recv_msg(&r, &h, &err, &pong) == GRID_OK &&
         h.type == GRP_ERROR && err.code == GRID_ERR_PROTOCOL && strstr(err.message, "must be HELLO");
    result(ok, "a first message other than HELLO is refused: %s", ok ? err.message : "");
    close(b);

    /* A's two requests are answered: nothing holds it, and --idle-timeout closes it. */
    grw_reader_init(&r, a, 1 << 20);
    ok = recv_msg(&r, &h, &err, &pong) == GRID_ERR_CONN_LOST;
    result(ok, "a connection nothing holds is closed after the idle timeout");
    close(a);

    kill(getpid(), SIGTERM);
    pthread_join(t, NULL);
    gdm_close_all(&d, gr_now_ns() + 2000000000LL);
    result(d.fd == -1 && gdm_free(&d) == 1, "SIGTERM ends the accept loop; every connection is freed");
    printf("1..%d\n", tests);
    return failed ? 1 : 0;
}
