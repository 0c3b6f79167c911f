/* meta_client_test.c: a real gridmetad ($top_builddir/gridmetad) driven over raw
 * protocol through the grp_ functions, as gridrpcd and the client will drive it:
 * HELLO, REGISTER of two servers, HEARTBEAT, SCHEDULE (spread, exclusion, errors),
 * REPORT, SERVERS, LIST, PING, PROBE; a server that stops beating is marked down; an
 * unknown id is asked to register again; hostile input is answered ERROR and the daemon
 * survives; a wrong token is refused; kill -9 and a restart on the same registry file
 * lists every server at once; GET /api/status returns JSON python3 accepts, with the
 * recent calls (a failure with its error, a hostile name intact, at most 200 of them)
 * and each function's counts. TAP. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "grp_auth.h"
#include "grp_meta.h"
#include "grp_proto.h"

static int tests, failed;
static grw_reader rd;
static grw_writer wr;
static char dir[256];

static void ok(int cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ok(int cond, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("%s %d ", cond ? "ok" : "not ok", ++tests);
    vprintf(fmt, ap);
    printf("\n");
    fflush(stdout);
    va_end(ap);
    if (!cond) failed++;
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---------------------------------------------------------------- the daemon */

typedef struct daemon_t {
    pid_t pid;
    int port, http;
} daemon_t;

static int start(daemon_t *d, const char *const *extra) {
    const char *top = getenv("top_builddir");
    char exe[512];
    snprintf(exe, sizeof exe, "%s/gridmetad", top ? top : ".");
    char db[300];
    snprintf(db, sizeof db, "%s/meta.db", dir);
    const char *argv[32] = {exe,     "--port",       "0", "--http",      "0",   "--db", db, "--heartbeat",
                            "100ms", "--down-after", "3", "--log-level", "warn"};
    int argc = 13;
    for (int i = 0; extra && extra[i] && argc < 31; i++)
        argv[argc++] = extra[i];
    argv[argc] = NULL;
    int out[2];
    if (pipe(out) < 0) return -1;
    d->pid = fork();
    if (d->pid < 0) return -1;
    if (d->pid == 0) {
        /* Its log goes to a file, printed as TAP comments when a case fails. */
        char log[300];
        snprintf(log, sizeof log, "%s/gridmetad.log", dir);
        FILE *lf = fopen(log, "a");
        if (lf) dup2(fileno(lf), 2);
        dup2(out[1], 1);
        close(out[0]);
        close(out[1]);
        execv(exe, (char *const *)argv);
        perror("exec gridmetad");
        _exit(127);
    }
    close(out[1]);
    char buf[512];
    size_t len = 0;
    d->port = d->http = 0;
    long long until = gr_now_ns() + 10000000000LL;
    while ((!d->port || !d->http) && gr_now_ns() < until) {
        struct pollfd p = {out[0], POLLIN, 0};
        if (poll(&p, 1, 200) <= 0) continue;
        ssize_t k = read(out[0], buf + len, sizeof buf - 1 - len);
        if (k <= 0) break;
        len += (size_t)k;
        buf[len] = '\0';
        char *l = strstr(buf, "listening on 127.0.0.1:");
        if (l) d->port = atoi(l + strlen("listening on 127.0.0.1:"));
        char *h = strstr(buf, "http on 127.0.0.1:");
        if (h && strchr(h, '\n')) d->http = atoi(h + strlen("http on 127.0.0.1:"));
    }
    close(out[0]);
    return d->port && d->http ? 0 : -1;
}

static int stop(daemon_t *d, int sig) {
    kill(d->pid, sig);
    int status = -1;
    for (int i = 0; i < 100; i++) {
        if (waitpid(d->pid, &status, WNOHANG) == d->pid) return status;
        sleep_ms(50);
    }
    kill(d->pid, SIGKILL);
    waitpid(d->pid, &status, 0);
    return -1;
}

static int alive(const daemon_t *d) {
    return waitpid(d->pid, NULL, WNOHANG) == 0;
}

/* ---------------------------------------------------------------- protocol */

static uint64_t next_id = 1;

static int dial(int port) {
    gr_err e;
    int fd = grw_connect("127.0.0.1", port, 5, &e);
    if (fd < 0) printf("# connect: %s\n", e.msg);
    return fd;
}

static long long soon(void) {
    return gr_now_ns() + 5000000000LL;
}

static void prep(int fd) {
    grw_writer_init(&wr, fd);
    wr.deadline_ns = soon();
}

/* Reads the reply header; expects EXPECTED; else the ERROR's code (and E). */
static int reply(int fd, uint32_t expected, gr_err *e) {
    grw_header h;
    grw_reader_init(&rd, fd, 1u << 24);
    rd.deadline_ns = soon();
    int rc = grp_read_header(&rd, &h, e);
    if (rc) return rc;
    int in_step;
    return grp_expect(&rd, &h, expected, grp_type_name(expected), &in_step, e);
}

static int hello(int fd, const char *token) {
    grp_hello m;
    memset(&m, 0, sizeof m);
    snprintf(m.client, sizeof m.client, "meta_client_test");
    m.min_version = m.max_version = GRW_VERSION;
    snprintf(m.token, sizeof m.token, "%s", token ? token : "");
    gr_err e;
    prep(fd);
    grw_reader_init(&rd, fd, 1u << 24);
    rd.deadline_ns = soon();
    grp_hello_ok ok;
    return grp_auth_hello(&rd, &wr, next_id++, &m, NULL, "", &ok, NULL, &e);
}

static int session(int port) {
    int fd = dial(port);
    if (fd >= 0 && hello(fd, getenv("META_TEST_TOKEN"))) {
        close(fd);
        return -1;
    }
    return fd;
}

static uint64_t do_register(int fd, const char *host, uint32_t port, uint32_t cores, int with_ep,
                            uint32_t *heartbeat_ms) {
    grp_function f[2];
    memset(f, 0, sizeof f);
    snprintf(f[0].name, sizeof f[0].name, "linalg/dmmul");
    f[0].hash = 0x1234;
    snprintf(f[1].name, sizeof f[1].name, "ep/ep");
    f[1].hash = 0x5678;
    f[1].flags = GRP_FN_NO_RETRY;
    grp_register m;
    memset(&m, 0, sizeof m);
    snprintf(m.name, sizeof m.name, "fake %s:%u", host, port);
    snprintf(m.host, sizeof m.host, "%s", host);
    m.port = port;
    m.cores = cores;
    m.workers = cores;
    m.speed = 2e9;
    m.nfunctions = with_ep ? 2 : 1;
    m.functions = f;
    gr_err e;
    prep(fd);
    if (grp_write_register(&wr, next_id++, &m, &e)) return 0;
    if (reply(fd, GRP_REGISTER_OK, &e)) {
        printf("# REGISTER: %s\n", e.msg);
        return 0;
    }
    grp_register_ok ok;
    if (grp_read_register_ok(&rd, &ok, &e)) return 0;
    if (heartbeat_ms) *heartbeat_ms = ok.heartbeat_ms;
    return ok.server_id;
}

static int beat(int fd, uint64_t id, uint32_t running, gr_err *e) {
    grp_heartbeat m = {id, running, 0, 2, 2, 0.5, 0, 0};
    prep(fd);
    if (grp_write_heartbeat(&wr, next_id++, &m, e)) return e->code;
    int rc = reply(fd, GRP_HEARTBEAT_OK, e);
    if (!rc) rc = grp_read_empty(&rd, e);
    return rc;
}

static int schedule(int fd, const char *fn, const uint64_t *exclude, uint32_t nexclude, grp_schedule_ok *ok,
                    gr_err *e) {
    grp_schedule m;
    memset(&m, 0, sizeof m);
    snprintf(m.function, sizeof m.function, "%s", fn);
    snprintf(m.site, sizeof m.site, "testsite");
    m.bytes_in = 8000;
    m.bytes_out = 8000;
    m.flops = 2e9;
    for (uint32_t i = 0; i < nexclude; i++)
        m.exclude[i] = exclude[i];
    m.nexclude = nexclude;
    prep(fd);
    if (grp_write_schedule(&wr, next_id++, &m, e)) return e->code;
    int rc = reply(fd, GRP_SCHEDULE_OK, e);
    if (!rc) rc = grp_read_schedule_ok(&rd, ok, e);
    return rc;
}

/* Registers a one-core, one-worker server with the single function FN. */
static uint64_t register_one(int fd, uint32_t port, const char *fn) {
    grp_function f;
    memset(&f, 0, sizeof f);
    snprintf(f.name, sizeof f.name, "%s", fn);
    grp_register m;
    memset(&m, 0, sizeof m);
    snprintf(m.name, sizeof m.name, "one-core %u", port);
    snprintf(m.host, sizeof m.host, "127.0.0.1");
    m.port = port;
    m.cores = m.workers = 1;
    m.nfunctions = 1;
    m.functions = &f;
    gr_err e;
    prep(fd);
    if (grp_write_register(&wr, next_id++, &m, &e) || reply(fd, GRP_REGISTER_OK, &e)) return 0;
    grp_register_ok ok;
    return grp_read_register_ok(&rd, &ok, &e) ? 0 : ok.server_id;
}

/* Milliseconds until FD has something to read (-1: nothing within LIMIT_MS). */
static int ms_until_readable(int fd, int limit_ms) {
    long long t0 = gr_now_ns();
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, limit_ms) != 1) return -1;
    return (int)((gr_now_ns() - t0) / 1000000);
}

static int servers(int fd, grp_server_info **v, uint32_t *n, gr_err *e);
static const grp_server_info *find(const grp_server_info *v, uint32_t n, uint64_t id);

/* Every server for a function full (a one-core server holds 2 calls): a third SCHEDULE
 * is held until a REPORT makes room; past --max-hold (1 s here) it is placed anyway. */
static void test_hold(int port) {
    int fa = session(port), fb = session(port);
    uint64_t id = fa >= 0 ? register_one(fa, 7009, "hold/only") : 0;
    ok(id != 0, "REGISTER a one-core server (2 calls before it is full)");
    if (!id || fb < 0) return;
    gr_err e;
    grp_schedule_ok s1, s2, s3;
    int rc1 = schedule(fa, "only", NULL, 0, &s1, &e), rc2 = schedule(fa, "only", NULL, 0, &s2, &e);
    ok(rc1 == GRID_OK && rc2 == GRID_OK, "two SCHEDULEs fill it");
    grp_schedule m;
    memset(&m, 0, sizeof m);
    snprintf(m.function, sizeof m.function, "only");
    m.flops = 1e9;
    prep(fb);
    grp_write_schedule(&wr, next_id++, &m, &e);
    ok(ms_until_readable(fb, 300) == -1, "a third is held: no answer within 300 ms");
    grp_report rep;
    memset(&rep, 0, sizeof rep);
    rep.decision = s1.decision;
    rep.server_id = s1.server_id;
    snprintf(rep.function, sizeof rep.function, "only");
    rep.run_ns = rep.total_ns = 100000000;
    prep(fa);
    grp_write_report(&wr, next_id++, &rep, &e);
    int waited = ms_until_readable(fb, 3000);
    int rc = waited >= 0 ? reply(fb, GRP_SCHEDULE_OK, &e) : -1;
    if (!rc) rc = grp_read_schedule_ok(&rd, &s3, &e);
    ok(rc == GRID_OK && s3.server_id == id && waited < 900,
       "a REPORT makes room: the held SCHEDULE is answered at once (%d ms), with that server", waited);
    /* Full again: the next waits out --max-hold (1 s), then goes to the full server. */
    long long t0 = gr_now_ns();
    rc = schedule(fb, "only", NULL, 0, &s3, &e);
    long long ms = (gr_now_ns() - t0) / 1000000;
    ok(rc == GRID_OK && s3.server_id == id && ms >= 900 && ms < 4000,
       "with no room made, it is answered after --max-hold, over the limit (%lld ms)", ms);

    /* CRASHED is believed from the connection that registered the server only: another
     * (a client) naming that server is refused, and the connection goes on. */
    grp_crashed cm;
    memset(&cm, 0, sizeof cm);
    cm.server_id = id;
    snprintf(cm.function, sizeof cm.function, "hold/only");
    snprintf(cm.what, sizeof cm.what, "crashed (signal 11, Segmentation fault)");
    prep(fb);
    rc = grp_write_crashed(&wr, next_id++, &cm, &e);
    if (!rc) rc = reply(fb, GRP_CRASHED_OK, &e);
    ok(rc == GRID_ERR_ARGS && strstr(e.msg, "did not register it"),
       "CRASHED from a connection that did not register the server: refused (%s)", e.msg);
    prep(fa);
    rc = grp_write_crashed(&wr, next_id++, &cm, &e);
    if (!rc) rc = reply(fa, GRP_CRASHED_OK, &e);
    if (!rc) rc = grp_read_empty(&rd, &e);
    ok(rc == GRID_OK, "CRASHED from the server's own connection: CRASHED_OK (%s)", rc ? e.msg : "");
    prep(fb);
    grp_hold *hv = NULL;
    uint32_t nh = 9;
    rc = grp_write_empty(&wr, GRP_HOLDS, next_id++, &e);
    if (!rc) rc = reply(fb, GRP_HOLDS_OK, &e);
    if (!rc) rc = grp_read_holds_ok(&rd, &hv, &nh, &e);
    free(hv);
    ok(rc == GRID_OK && nh == 0, "one server's crash holds nothing: HOLDS_OK is empty (%u)", nh);

    /* A server that stops says UNREGISTER: down at once, not after missed beats. */
    prep(fa);
    rc = grp_write_unregister(&wr, next_id++, id, &e);
    if (!rc) rc = reply(fa, GRP_UNREGISTER_OK, &e);
    if (!rc) rc = grp_read_empty(&rd, &e);
    grp_server_info *v = NULL;
    uint32_t n = 0;
    int down = rc == GRID_OK && servers(fa, &v, &n, &e) == GRID_OK && find(v, n, id) &&
               find(v, n, id)->state == GRP_SERVER_DOWN;
    grp_servers_free(v, n);
    ok(down, "UNREGISTER -> UNREGISTER_OK, and SERVERS shows the server down at once");
    ok(schedule(fa, "only", NULL, 0, &s3, &e) == GRID_ERR_CONNECT, "SCHEDULE no longer chooses it");
    prep(fa);
    rc = grp_write_unregister(&wr, next_id++, 987654, &e);
    if (!rc) rc = reply(fa, GRP_UNREGISTER_OK, &e);
    ok(rc == GRID_ERR_NOT_FOUND, "UNREGISTER of an unknown id: GRID_ERR_NOT_FOUND (%s)", e.msg);
    close(fa);
    close(fb);
}

static int servers(int fd, grp_server_info **v, uint32_t *n, gr_err *e) {
    prep(fd);
    if (grp_write_servers(&wr, next_id++, "testsite", e)) return e->code;
    int rc = reply(fd, GRP_SERVERS_OK, e);
    if (!rc) rc = grp_read_servers_ok(&rd, v, n, e);
    return rc;
}

static const grp_server_info *find(const grp_server_info *v, uint32_t n, uint64_t id) {
    for (uint32_t i = 0; i < n; i++)
        if (v[i].id == id) return &v[i];
    return NULL;
}

/* A fresh connection still gets a PONG: the daemon survived. */
static int responsive(int port) {
    int fd = session(port);
    if (fd < 0) return 0;
    gr_err e;
    prep(fd);
    int rc = grp_write_empty(&wr, GRP_PING, next_id++, &e);
    if (!rc) rc = reply(fd, GRP_PONG, &e);
    grp_pong p;
    if (!rc) rc = grp_read_pong(&rd, &p, &e);
    close(fd);
    return rc == GRID_OK;
}

/* Sends RAW bytes on a fresh connection (after HELLO when HELLO_FIRST) and returns the
 * code of the ERROR answered, or -1. */
static int hostile(int port, int hello_first, const void *raw, size_t len) {
    int fd = hello_first ? session(port) : dial(port);
    if (fd < 0) return -1;
    if (write(fd, raw, len) != (ssize_t)len) {
        close(fd);
        return -1;
    }
    gr_err e;
    int rc = reply(fd, GRP_PONG, &e);
    close(fd);
    return rc;
}

/* ---------------------------------------------------------------- HTTP */

static char *http_get(int port, const char *path) {
    int fd = dial(port);
    if (fd < 0) return NULL;
    char req[256];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: localhost\r\n\r\n", path);
    if (write(fd, req, (size_t)n) != n) {
        close(fd);
        return NULL;
    }
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (len + 4096 > cap) buf = realloc(buf, cap *= 2);
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 5000) <= 0) break;
        ssize_t k = read(fd, buf + len, cap - len - 1);
        if (k <= 0) break;
        len += (size_t)k;
    }
    buf[len] = '\0';
    close(fd);
    return buf;
}

static int json_valid(const char *body) {
    char path[300];
    snprintf(path, sizeof path, "%s/status.json", dir);
    FILE *f = fopen(path, "w");
    if (!f) return 0;
    fputs(body, f);
    fclose(f);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "python3 -m json.tool %s >/dev/null", path);
    return system(cmd) == 0;
}

/* 1 when the JSON BODY satisfies the python expression EXPR over it (d). */
static int json_check(const char *body, const char *expr) {
    char path[300], prog[300];
    snprintf(path, sizeof path, "%s/check.json", dir);
    snprintf(prog, sizeof prog, "%s/check.py", dir);
    FILE *f = fopen(path, "w"), *g = fopen(prog, "w");
    if (!f || !g) {
        if (f) fclose(f);
        if (g) fclose(g);
        return 0;
    }
    fputs(body, f);
    fclose(f);
    fprintf(g,
            "import json, sys\nd = json.load(open(sys.argv[1]))\nok = %s\n"
            "print('# ' + json.dumps(d.get('recent', [])[:3])[:600]) if not ok else None\n"
            "sys.exit(0 if ok else 1)\n",
            expr);
    fclose(g);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "python3 %s %s", prog, path);
    return system(cmd) == 0;
}

/* GET /api/status: its body (malloc'd, the headers cut), or NULL. */
static char *status_body(int port) {
    char *page = http_get(port, "/api/status");
    char *body = page ? strstr(page, "\r\n\r\n") : NULL;
    if (!body) {
        free(page);
        return NULL;
    }
    memmove(page, body + 4, strlen(body + 4) + 1);
    return page;
}

/* ---------------------------------------------------------------- the tests */

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    snprintf(dir, sizeof dir, "%s/meta-client-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    daemon_t d;
    if (start(&d, NULL)) {
        printf("not ok 1 gridmetad starts and prints its listening and http lines\n1..1\n");
        return 1;
    }
    ok(1, "gridmetad starts and prints 'listening on' and 'http on'");

    int fd = session(d.port);
    ok(fd >= 0, "HELLO -> HELLO_OK");
    if (fd < 0) {
        stop(&d, SIGKILL);
        printf("1..%d\n", tests);
        return 1;
    }
    uint32_t hb_ms = 0;
    uint64_t a = do_register(fd, "127.0.0.1", 7001, 2, 0, &hb_ms);
    uint64_t b = do_register(fd, "127.0.0.1", 7002, 2, 1, NULL);
    ok(a && b && a != b && hb_ms == 100, "REGISTER two servers: ids %llu, %llu; heartbeat asked every %u ms",
       (unsigned long long)a, (unsigned long long)b, hb_ms);
    ok(do_register(fd, "127.0.0.1", 7001, 2, 0, NULL) == a,
       "REGISTER again from the same address keeps the id");
    gr_err e;
    ok(beat(fd, a, 0, &e) == GRID_OK && beat(fd, b, 0, &e) == GRID_OK, "HEARTBEAT -> HEARTBEAT_OK");
    ok(beat(fd, 999999, 0, &e) == GRID_ERR_NOT_FOUND && strstr(e.msg, "register again"),
       "HEARTBEAT of an unknown id -> ERROR GRID_ERR_NOT_FOUND (%s)", e.msg);

    grp_schedule_ok s1, s2, s3;
    int r1 = schedule(fd, "dmmul", NULL, 0, &s1, &e);
    int r2 = schedule(fd, "linalg/dmmul", NULL, 0, &s2, &e);
    ok(r1 == GRID_OK && r2 == GRID_OK && s1.server_id != s2.server_id && s1.port >= 7001 && s1.estimate > 0,
       "SCHEDULE twice at once: the two idle servers both get one (%llu, %llu; estimate %g s)",
       (unsigned long long)s1.server_id, (unsigned long long)s2.server_id, s1.estimate);
    ok(schedule(fd, "ep", NULL, 0, &s3, &e) == GRID_OK && s3.server_id == b && s3.port == 7002,
       "SCHEDULE a function only one server has: that server");
    uint64_t ex[1] = {b};
    ok(schedule(fd, "ep/ep", ex, 1, &s3, &e) == GRID_ERR_CONNECT,
       "SCHEDULE excluding the only server: "
       "GRID_ERR_CONNECT (%s)",
       e.msg);
    ok(schedule(fd, "fft", NULL, 0, &s3, &e) == GRID_ERR_NOT_FOUND && strstr(e.msg, "gridrpc ls"),
       "SCHEDULE an unknown function: GRID_ERR_NOT_FOUND (%s)", e.msg);
    ok(schedule(fd, "linalg/dmmull", NULL, 0, &s3, &e) == GRID_ERR_NOT_FOUND &&
           strstr(e.msg, "did you mean 'linalg/dmmul'?"),
       "SCHEDULE a typo of a function: the function it is a typo of (%s)", e.msg);

    /* REPORT (no reply): the call of decision s1 ran 1 s and moved 16 KB in 2 ms. */
    grp_report rep;
    memset(&rep, 0, sizeof rep);
    rep.decision = s1.decision;
    rep.server_id = s1.server_id;
    rep.code = GRID_OK;
    snprintf(rep.function, sizeof rep.function, "dmmul");
    snprintf(rep.site, sizeof rep.site, "testsite");
    rep.bytes_in = rep.bytes_out = 8000;
    rep.queue_ns = 1000000;
    rep.run_ns = 1000000000;
    rep.total_ns = rep.queue_ns + rep.run_ns + 2000000;
    rep.flops = 4e9;
    prep(fd);
    ok(grp_write_report(&wr, next_id++, &rep, &e) == GRID_OK, "REPORT sent");

    grp_server_info *v = NULL;
    uint32_t n = 0;
    int rc = servers(fd, &v, &n, &e);
    const grp_server_info *ia = find(v, n, s1.server_id), *ib = find(v, n, b);
    ok(rc == GRID_OK && n == 2 && ia && ib && ia->state == GRP_SERVER_UP && ib->nfunctions == 2,
       "SERVERS lists both servers, up, with their functions");
    ok(ia && ia->calls == 1 && ia->pending == 0 && ia->speed == 4e9 && ia->latency > 0.0019 &&
           ia->latency < 0.0021,
       "the REPORT was learned: 1 call, nothing pending, speed 4e9, latency 2 ms (got %g, %g)",
       ia ? ia->speed : -1, ia ? ia->latency : -1);
    grp_servers_free(v, n);

    prep(fd);
    char **names = NULL;
    uint32_t nn = 0;
    rc = grp_write_empty(&wr, GRP_LIST, next_id++, &e);
    if (!rc) rc = reply(fd, GRP_LIST_OK, &e);
    if (!rc) rc = grp_read_list_ok(&rd, &names, &nn, &e);
    ok(rc == GRID_OK && nn == 2 && strcmp(names[0], "ep/ep") == 0 && strcmp(names[1], "linalg/dmmul") == 0,
       "LIST: the union of the servers' functions");
    grp_free_names(names, nn);

    prep(fd);
    grp_pong pong;
    rc = grp_write_empty(&wr, GRP_PING, next_id++, &e);
    if (!rc) rc = reply(fd, GRP_PONG, &e);
    if (!rc) rc = grp_read_pong(&rd, &pong, &e);
    ok(rc == GRID_OK && pong.cores == 4 && pong.workers == 4, "PING: totals over the up servers (%u cores)",
       pong.cores);

    prep(fd);
    uint32_t plen = 0;
    rc = grp_write_probe(&wr, next_id++, 100000, 200000, &e);
    if (!rc) rc = reply(fd, GRP_PROBE_OK, &e);
    if (!rc) rc = grp_read_probe_ok(&rd, &plen, &e);
    ok(rc == GRID_OK && plen == 200000, "PROBE 100 KB, 200 KB back: PROBE_OK of the size asked");

    /* Only A keeps beating: B is marked down after 3 x 100 ms. */
    for (int i = 0; i < 8; i++) {
        beat(fd, a, 1, &e);
        sleep_ms(100);
    }
    rc = servers(fd, &v, &n, &e);
    ia = find(v, n, a);
    ib = find(v, n, b);
    ok(rc == GRID_OK && ia && ib && ia->state == GRP_SERVER_UP && ib->state == GRP_SERVER_DOWN &&
           ib->beat_age_ms >= 300,
       "a server that stops beating is marked down after --down-after heartbeats");
    grp_servers_free(v, n);
    ok(schedule(fd, "ep", NULL, 0, &s3, &e) == GRID_ERR_CONNECT && strstr(e.msg, "1 down"),
       "SCHEDULE with its only server down: GRID_ERR_CONNECT (%s)", e.msg);
    ok(schedule(fd, "dmmul", NULL, 0, &s3, &e) == GRID_OK && s3.server_id == a,
       "the up server is still chosen");
    ok(beat(fd, b, 0, &e) == GRID_OK && schedule(fd, "ep", NULL, 0, &s3, &e) == GRID_OK,
       "a heartbeat brings it back");

    /* Hostile input: each answered ERROR, and the daemon goes on. */
    static const char garbage[] = "GET / HTTP/1.0\r\n\r\nxxxxxxxxxxxxxxxxxxxxxxxx";
    ok(hostile(d.port, 0, garbage, sizeof garbage - 1) == GRID_ERR_PROTOCOL && responsive(d.port),
       "garbage instead of a message: ERROR GRID_ERR_PROTOCOL, the daemon survives");
    /* A PING before HELLO. */
    int pfd = dial(d.port);
    prep(pfd);
    grp_write_empty(&wr, GRP_PING, 7, &e);
    ok(reply(pfd, GRP_PONG, &e) == GRID_ERR_PROTOCOL && strstr(e.msg, "HELLO"),
       "a request before HELLO: ERROR (%s)", e.msg);
    close(pfd);
    /* A CALL header to the metaserver, after HELLO. */
    pfd = session(d.port);
    prep(pfd);
    grw_begin(&wr, GRP_CALL, 0, 9, &e);
    grw_write_u32(&wr, 0, &e);
    grw_finish(&wr, &e);
    ok(reply(pfd, GRP_RESULT, &e) == GRID_ERR_PROTOCOL && responsive(d.port),
       "a message the metaserver does not take (CALL): ERROR GRID_ERR_PROTOCOL (%s)", e.msg);
    close(pfd);
    /* A REGISTER whose count of functions lies. */
    pfd = session(d.port);
    prep(pfd);
    grw_begin(&wr, GRP_REGISTER, 0, 11, &e);
    grw_write_string(&wr, "liar", &e);
    grw_write_string(&wr, "127.0.0.1", &e);
    grw_write_u32(&wr, 7009, &e);
    grw_write_u32(&wr, 1, &e);
    grw_write_u32(&wr, 1, &e);
    grw_write_u64(&wr, 0, &e);
    grw_write_u32(&wr, 4000000, &e);
    grw_finish(&wr, &e);
    rc = reply(pfd, GRP_REGISTER_OK, &e);
    ok((rc == GRID_ERR_LIMIT || rc == GRID_ERR_PROTOCOL) && responsive(d.port),
       "a REGISTER claiming 4 million functions: ERROR (%s), the daemon survives", e.msg);
    close(pfd);
    /* A SCHEDULE whose body is cut short (message ends early). */
    pfd = session(d.port);
    prep(pfd);
    grw_begin(&wr, GRP_SCHEDULE, 0, 12, &e);
    grw_write_string(&wr, "dmmul", &e);
    grw_finish(&wr, &e);
    ok(reply(pfd, GRP_SCHEDULE_OK, &e) != GRID_OK && responsive(d.port),
       "a truncated SCHEDULE: ERROR (%s), the daemon survives", e.msg);
    close(pfd);
    ok(alive(&d), "gridmetad is still running after the hostile input");

    /* The recent calls: a failure, then a call whose names are markup and quotes (peers
     * choose them); SERVERS after the REPORTs, on the same connection, so they are read. */
    rep.decision = 0;
    rep.server_id = a;
    rep.code = GRID_ERR_CRASHED;
    rep.run_ns = rep.queue_ns = 0;
    rep.total_ns = 250000000;
    snprintf(rep.function, sizeof rep.function, "linalg/dmmul");
    prep(fd);
    grp_write_report(&wr, next_id++, &rep, &e);
    rep.code = GRID_OK;
    snprintf(rep.function, sizeof rep.function, "<img src=x onerror=\"alert('f')\">\\");
    snprintf(rep.site, sizeof rep.site, "<script>\"site\"</script>");
    prep(fd);
    grp_write_report(&wr, next_id++, &rep, &e);
    if (servers(fd, &v, &n, &e) == GRID_OK) grp_servers_free(v, n);
    char *js = status_body(d.http);
    ok(js && json_check(js, "d['recent'][0]['function'] == '<img src=x onerror=\"alert(\\'f\\')\">\\\\' and "
                            "d['recent'][0]['site'] == '<script>\"site\"</script>' and d['recent'][0]['ok']"),
       "api/status: the newest recent call first, its function and site names intact (escaped JSON)");
    char expr[512];
    snprintf(expr, sizeof expr,
             "[(c['ok'], c['outcome'], c['server'], c['server_name'], c['function'], c['seconds'], "
             "bool(c['message'])) for c in d['recent'][1:2]] == "
             "[(False, 'GRID_ERR_CRASHED', %llu, 'fake 127.0.0.1:7001', 'linalg/dmmul', 0.25, True)]",
             (unsigned long long)a);
    ok(js && json_check(js, expr),
       "api/status: the failed call with its error's name and text, its server and duration");
    ok(js && json_check(
                 js, "[(f['calls'], f['failures'], round(f['mean_s'], 3), round(f['mean_run_s'], 3)) "
                     "for f in d['functions'] if f['function'] == 'linalg/dmmul'] == [(1, 1, 1.003, 1.0)]"),
       "api/status: per function, the calls, failures and mean times its REPORTs gave");
    free(js);
    /* More calls than the ring holds: the newest 200, newest first. */
    for (int i = 0; i < 250; i++) {
        snprintf(rep.function, sizeof rep.function, "bound/%d", i);
        prep(fd);
        grp_write_report(&wr, next_id++, &rep, &e);
    }
    if (servers(fd, &v, &n, &e) == GRID_OK) grp_servers_free(v, n);
    js = status_body(d.http);
    ok(js &&
           json_check(
               js, "len(d['recent']) == d['metaserver']['recent_max'] == 200 and "
                   "d['recent'][0]['function'] == 'bound/249' and d['recent'][-1]['function'] == 'bound/50'"),
       "api/status: after 250 more REPORTs, the recent calls are the newest 200, newest first");
    free(js);
    /* The first REPORT again, for the tests below. */
    snprintf(rep.function, sizeof rep.function, "dmmul");
    snprintf(rep.site, sizeof rep.site, "testsite");
    rep.queue_ns = 1000000;
    rep.run_ns = 1000000000;
    rep.total_ns = rep.queue_ns + rep.run_ns + 2000000;

    /* The status page's JSON. */
    char *page = http_get(d.http, "/api/status");
    char *body = page ? strstr(page, "\r\n\r\n") : NULL;
    ok(page && strncmp(page, "HTTP/1.", 7) == 0 && strstr(page, " 200 ") &&
           strstr(page, "application/json") && body && json_valid(body + 4),
       "GET /api/status: 200, application/json, JSON that python3 -m json.tool accepts");
    ok(body && strstr(body, "\"name\":\"fake 127.0.0.1:7002\"") && strstr(body, "\"decisions\":[{") &&
           strstr(body, "\"candidates\":[{\"server\":"),
       "the JSON has the servers and the decisions with their candidates");
    free(page);
    page = http_get(d.http, "/");
    ok(page && strstr(page, " 200 ") && strstr(page, "text/html") && strstr(page, "api/status"),
       "GET /: the status page");
    free(page);
    page = http_get(d.http, "/nope");
    ok(page && strstr(page, " 404 "), "GET of another path: 404");
    free(page);
    close(fd);

    /* kill -9, then a restart on the same file lists every server before any heartbeat,
     * in its last known state (up: they beat just before). */
    fd = session(d.port);
    beat(fd, a, 0, &e);
    beat(fd, b, 0, &e);
    /* Three REPORTs back to back: the registry writer coalesces their rows within a
     * batch, and must keep the last. */
    for (int i = 1; i <= 3; i++) {
        rep.decision = 0;
        rep.server_id = a;
        rep.flops = 1e9 * i;
        rep.run_ns = 500000000;
        prep(fd);
        grp_write_report(&wr, next_id++, &rep, &e);
    }
    double learned = -1;
    if (servers(fd, &v, &n, &e) == GRID_OK) {
        ia = find(v, n, a);
        learned = ia ? ia->speed : -1;
        grp_servers_free(v, n);
    }
    close(fd);
    sleep_ms(100); /* the writer thread commits queued changes within milliseconds */
    stop(&d, SIGKILL);
    const char *tok[] = {"--token", "s3cret", "--max-hold", "1s", "--down-after", "1000", NULL};
    if (start(&d, tok)) {
        ok(0, "gridmetad restarts on the same registry");
    } else {
        fd = dial(d.port);
        ok(fd >= 0 && hello(fd, "wrong") == GRID_ERR_AUTH, "a wrong token is refused: GRID_ERR_AUTH");
        if (fd >= 0) close(fd);
        fd = dial(d.port);
        ok(fd >= 0 && hello(fd, "s3cret") == GRID_OK, "the right token is accepted");
        rc = servers(fd, &v, &n, &e);
        ia = find(v, n, a);
        ib = find(v, n, b);
        ok(rc == GRID_OK && n == 2 && ia && ib && ib->nfunctions == 2 &&
               strcmp(ib->name, "fake 127.0.0.1:7002") == 0,
           "after kill -9 and a restart, SERVERS lists both servers at once, with their ids and functions");
        ok(ia && learned > 0 && learned != 4e9 && ia->speed == learned,
           "what was learned survives too, the last of three quick REPORTs (speed %g, was %g)",
           ia ? ia->speed : -1, learned);
        grp_servers_free(v, n);
        ok(schedule(fd, "dmmul", NULL, 0, &s3, &e) == GRID_OK,
           "SCHEDULE works at once after the restart (grace counted from startup)");
        ok(beat(fd, b, 0, &e) == GRID_OK, "a server's heartbeat with its old id is accepted");
        close(fd);
        setenv("META_TEST_TOKEN", "s3cret", 1);
        test_hold(d.port);
        int status = stop(&d, SIGTERM);
        ok(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0, "SIGTERM: exit 0");
    }
    char cmd[400];
    if (failed) {
        snprintf(cmd, sizeof cmd, "sed 's/^/# /' '%s/gridmetad.log'", dir);
        if (system(cmd) != 0) printf("# no log\n");
    }
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) printf("# could not remove %s\n", dir);
    printf("1..%d\n", tests);
    return failed ? 1 : 0;
}
