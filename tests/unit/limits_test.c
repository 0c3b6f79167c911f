/* limits_test.c: gridrpcd's limits at and one past their bound, seen from a raw socket:
 * --max-message (a well-framed CALL of exactly the limit is served, one word more is
 * ERROR GRID_ERR_LIMIT and the connection closes), the check made before allocating a
 * field (a head that announces 4 GiB under a 2 GiB address-space limit is LIMIT, not
 * NOMEM), HELLO's client name (255/256 bytes) and token (1024/1025), an element count
 * whose byte size overflows 64 bits, a CALL whose bulk data stops arriving
 * (--io-timeout), and floats in big-endian on the wire (a function that computes on
 * them). After every refusal a new client must still be served. Prints TAP. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "grp_types.h"
#include "fake_server.h"
#include "grd_desc.h"
#include "gridrpc_stub.h"
#include "grw_wire.h"
#include "raw_peer.h"
#include "tap.h"

extern const gridrpc_stub_module gridrpc_module_test;

static pid_t server_pid = -1;
static int port;
static grw_reader rd;

static double now_s(void) {
    return (double)gr_now_ns() / 1e9;
}

/* ---------------------------------------------------------------- the server */

/* Stops the server: SIGTERM, up to 5 s, then SIGKILL. Also run at exit. */
static void stop_server(void) {
    if (server_pid <= 0) return;
    raw_stop(server_pid, 5, NULL);
    server_pid = -1;
}

static void on_signal(int sig) {
    if (server_pid > 0) kill(server_pid, SIGKILL);
    signal(sig, SIG_DFL);
    raise(sig);
}

/* In the server's process: *ARG bytes of address space at most (0: no limit). */
static void limit_address_space(void *arg) {
    unsigned long long as_bytes = *(const unsigned long long *)arg;
    if (!as_bytes) return;
    struct rlimit rl = {as_bytes, as_bytes};
    setrlimit(RLIMIT_AS, &rl);
}

/* Starts gridrpcd with the test module and EXTRA options (NULL-ended); AS_BYTES > 0
 * limits its address space. Returns 0 when it listens. */
static int start_server(const char *const *extra, unsigned long long as_bytes) {
    const char *prog = getenv("GRIDRPCD"), *mods = getenv("GRIDRPC_TEST_MODULES");
    if (!prog || !mods) {
        diag("GRIDRPCD and GRIDRPC_TEST_MODULES must be set (make check)");
        return -1;
    }
    char module[4096];
    snprintf(module, sizeof module, "%s/test.so", mods);
    const char *argv[40] = {prog,       "--host", "127.0.0.1",   "--port", "0",
                            "--module", module,   "--log-level", "error"};
    int argc = 9;
    for (int i = 0; extra && extra[i] && argc < 39; i++)
        argv[argc++] = extra[i];
    argv[argc] = NULL;
    port = raw_spawn(argv, limit_address_space, &as_bytes, 20, &server_pid);
    if (port < 0) server_pid = -1;
    return port < 0 ? -1 : 0;
}

static int alive(void) {
    int st;
    return server_pid > 0 && waitpid(server_pid, &st, WNOHANG) == 0;
}

/* ---------------------------------------------------------------- raw client */

static int connect_raw(void) {
    return raw_connect(port);
}

static int send_buf(int fd, fake_buf *b) {
    fake_buf_finish(b);
    int rc = fake_send_raw(fd, b->p, b->len);
    fake_buf_free(b);
    return rc;
}

/* Reads one reply header (and an ERROR's code and message). 0: closed or timed out. */
static uint32_t read_reply(int fd, int *code, char *msg, size_t msglen, double timeout) {
    return raw_read_reply(&rd, fd, 0, code, msg, msglen, NULL, timeout);
}

static int send_hello_with(int fd, const char *client, size_t client_len, const char *token,
                           size_t token_len) {
    fake_buf b = {0};
    fake_buf_begin(&b, GRP_HELLO, 1);
    fake_buf_string(&b, client, client_len);
    fake_buf_u32(&b, 1);
    fake_buf_u32(&b, 1);
    fake_buf_string(&b, token, token_len);
    return send_buf(fd, &b);
}

/* Connects and says HELLO (with TOKEN); returns the fd or -1. */
static int connect_hello_token(const char *token) {
    int fd = connect_raw();
    if (fd < 0) return -1;
    if (send_hello_with(fd, "limits_test", 11, token, strlen(token)) ||
        read_reply(fd, NULL, NULL, 0, 5) != GRP_HELLO_OK) {
        diag("HELLO was not answered HELLO_OK");
        close(fd);
        return -1;
    }
    gr_err e;
    grw_skip(&rd, &e);
    return fd;
}

static int connect_hello(void) {
    return connect_hello_token("");
}

/* The hash of a test-module function's descriptor, from the module's own table. */
static uint64_t hash_of(const char *function) {
    for (unsigned i = 0; i < gridrpc_module_test.nfunctions; i++) {
        const gridrpc_stub_function *f = &gridrpc_module_test.functions[i];
        if (strcmp(f->name, function) != 0) continue;
        grd_desc *d = NULL;
        grd_error de;
        if (grd_decode(f->descriptor, f->descriptor_len, &d, &de) != GRD_OK) return 0;
        uint64_t h = d->hash;
        grd_free(d);
        return h;
    }
    return 0;
}

/* Starts CALL test/FUNCTION: header, name, hash. */
static void begin_call(fake_buf *b, const char *function, uint64_t id) {
    char q[256];
    snprintf(q, sizeof q, "test/%s", function);
    fake_buf_begin(b, GRP_CALL, id);
    fake_buf_string(b, q, strlen(q));
    fake_buf_u64(b, hash_of(function));
}

static void put_f64(fake_buf *b, double v) {
    uint64_t u;
    memcpy(&u, &v, 8);
    fake_buf_u64(b, u);
}

/* A CALL of test/echo_double with N doubles, one fragment; its size on the wire (with
 * the fragment marker) is 64 + 8 N bytes. */
static void echo_call(fake_buf *b, int n, int sent, uint64_t id) {
    begin_call(b, "echo_double", id);
    fake_buf_u32(b, 4);
    fake_buf_u32(b, (uint32_t)n);
    for (int i = 0; i < sent; i++)
        put_f64(b, i * 0.25 - 3);
}

/* Sends echo_double(N) on FD and checks the echoed values. */
static int echo_ok(int fd, int n) {
    fake_buf b = {0};
    echo_call(&b, n, n, 7);
    int code = 0;
    char msg[512] = "";
    uint32_t t = send_buf(fd, &b) == 0 ? read_reply(fd, &code, msg, sizeof msg, 10) : 0;
    if (t != GRP_RESULT) {
        diag("echo_double(%d): reply type %u, code %d: %s", n, t, code, msg);
        return 0;
    }
    gr_err e;
    uint64_t q, r;
    uint32_t head;
    int ok = !grw_read_u64(&rd, &q, &e) && !grw_read_u64(&rd, &r, &e) && !grw_read_u32(&rd, &head, &e) &&
             head == 0;
    for (int i = 0; ok && i < n; i++) {
        uint64_t u;
        double v;
        ok = !grw_read_u64(&rd, &u, &e);
        memcpy(&v, &u, 8);
        ok = ok && v == i * 0.25 - 3;
    }
    ok = ok && !grw_end(&rd, &e);
    if (!ok) diag("echo_double(%d): a wrong RESULT", n);
    return ok;
}

/* A new client is served: HELLO and a correct echo. */
static int healthy(void) {
    int fd = connect_hello();
    int ok = fd >= 0 && echo_ok(fd, 100);
    if (fd >= 0) close(fd);
    return ok && alive();
}

/* ---------------------------------------------------------------- cases */

static void max_message_case(void) {
    const char *opts[] = {"--max-message", "4096", NULL};
    if (start_server(opts, 0)) {
        result(0, "--max-message 4096: the server starts");
        return;
    }
    int fd = connect_hello();
    result(fd >= 0 && echo_ok(fd, 504), "--max-message 4096: a CALL of exactly 4096 bytes is served");
    if (fd >= 0) close(fd);

    fd = connect_hello();
    fake_buf b = {0};
    echo_call(&b, 505, 505, 8); /* 4104 bytes, one fragment */
    int code = -1;
    char msg[512] = "";
    uint32_t t = fd >= 0 && send_buf(fd, &b) == 0 ? read_reply(fd, &code, msg, sizeof msg, 5) : 0;
    diag("4104 bytes: type %u code %d: %s", t, code, msg);
    result(t == GRP_ERROR && code == GRID_ERR_LIMIT && strstr(msg, "4096"),
           "--max-message 4096: a CALL of 4104 bytes is ERROR GRID_ERR_LIMIT naming the limit");
    result(fd >= 0 && raw_closed_within(fd, 5), "--max-message 4096: then the connection is closed");
    if (fd >= 0) close(fd);
    result(healthy(), "--max-message 4096: a new client is still served");

    /* A message over the limit in many small fragments: counted across them. */
    fd = connect_hello();
    echo_call(&b, 600, 600, 9);
    fake_buf_finish(&b);
    size_t body = b.len - 4, off = 4;
    int sent = fd >= 0;
    for (int k = 0; sent && off < b.len && k < 10000; k++) {
        uint32_t n = body < 512 ? (uint32_t)body : 512;
        uint8_t mark[4];
        uint32_t v = (n == body ? 0x80000000u : 0) | n;
        mark[0] = (uint8_t)(v >> 24), mark[1] = (uint8_t)(v >> 16), mark[2] = (uint8_t)(v >> 8),
        mark[3] = (uint8_t)v;
        sent = fake_send_raw(fd, mark, 4) == 0 && fake_send_raw(fd, b.p + off, n) == 0;
        off += n;
        body -= n;
    }
    fake_buf_free(&b);
    code = -1;
    t = sent ? read_reply(fd, &code, msg, sizeof msg, 5) : 0;
    result(
        t == GRP_ERROR && code == GRID_ERR_LIMIT,
        "--max-message 4096: 4864 bytes in 512-byte fragments is ERROR GRID_ERR_LIMIT (got type %u code %d)",
        t, code);
    if (fd >= 0) close(fd);
    result(healthy(), "--max-message 4096: a new client is still served after the fragmented one");
    stop_server();
}

/* A head that announces 0xfffffff0 bytes (allowed by --max-head) in a server with
 * --max-message 4096 whose address space is 2 GiB: the message limit must refuse it
 * before anything is allocated (an attempt to allocate 4 GiB fails: NOMEM). */
static void head_before_malloc_case(void) {
    if (SANITIZED) {
        printf(
            "ok %d a 4 GiB head is refused before allocating # SKIP sanitizers need a large address space\n",
            ++tests);
        return;
    }
    const char *opts[] = {"--max-message", "4096", "--max-head", "4294967295", "--threads", "1", NULL};
    if (start_server(opts, 2ull << 30)) {
        result(0, "a 2 GiB gridrpcd starts");
        return;
    }
    int fd = connect_hello();
    fake_buf b = {0};
    begin_call(&b, "echo_double", 10);
    fake_buf_u32(&b, 0xfffffff0u);
    fake_buf_u32(&b, 1);
    int code = -1;
    char msg[512] = "";
    uint32_t t = fd >= 0 && send_buf(fd, &b) == 0 ? read_reply(fd, &code, msg, sizeof msg, 5) : 0;
    diag("4 GiB head: type %u code %d: %s", t, code, msg);
    result(t == GRP_ERROR && code == GRID_ERR_LIMIT,
           "a head announcing 4 GiB over --max-message 4096 is GRID_ERR_LIMIT before any allocation (not "
           "GRID_ERR_NOMEM)");
    if (fd >= 0) close(fd);
    result(healthy(), "after the 4 GiB head: a new client is still served");
    stop_server();
}

/* HELLO fields at and one past their bounds. */
static void hello_case(void) {
    static char token[1026], name[257];
    memset(token, 'k', 1024);
    token[1024] = '\0';
    memset(name, 'n', sizeof name - 1);
    name[256] = '\0';
    const char *opts[] = {"--token", token, NULL};
    if (start_server(opts, 0)) {
        result(0, "--token (1024 bytes): the server starts");
        return;
    }
    for (size_t len = 255; len <= 256; len++) {
        int fd = connect_raw(), code = -1;
        char msg[512] = "";
        uint32_t t = fd >= 0 && send_hello_with(fd, name, len, token, 1024) == 0
                         ? read_reply(fd, &code, msg, sizeof msg, 5)
                         : 0;
        if (len == 255)
            result(t == GRP_HELLO_OK, "HELLO with a client name of 255 bytes is HELLO_OK (type %u)", t);
        else {
            diag("client name 256: %s", msg);
            result(t == GRP_ERROR && code == GRID_ERR_LIMIT && raw_closed_within(fd, 5),
                   "HELLO with a client name of 256 bytes is ERROR GRID_ERR_LIMIT, and the server closes the "
                   "connection (type %u code %d)",
                   t, code);
        }
        if (fd >= 0) close(fd);
    }
    for (size_t len = 1024; len <= 1025; len++) {
        token[1024] = 'k';
        int fd = connect_raw(), code = -1;
        char msg[512] = "";
        uint32_t t = fd >= 0 && send_hello_with(fd, "t", 1, token, len) == 0
                         ? read_reply(fd, &code, msg, sizeof msg, 5)
                         : 0;
        if (len == 1024)
            result(t == GRP_HELLO_OK, "HELLO with the right token of 1024 bytes is HELLO_OK (type %u)", t);
        else {
            diag("token 1025: %s", msg);
            result(t == GRP_ERROR && code == GRID_ERR_LIMIT && raw_closed_within(fd, 5),
                   "HELLO with a token of 1025 bytes is ERROR GRID_ERR_LIMIT, and the server closes the "
                   "connection (type %u code %d)",
                   t, code);
        }
        if (fd >= 0) close(fd);
    }
    token[1024] = '\0';
    int fd = connect_hello_token(token);
    result(fd >= 0 && echo_ok(fd, 10) && alive(), "after the HELLO refusals: a new client is still served");
    if (fd >= 0) close(fd);
    stop_server();
}

/* dims3(a, b, c, x[a][b][c]) with a*b*c = 2^61 doubles: 2^64 bytes, which wraps to 0 in
 * 64 bits. The element count is under --max-array 2^62, so only the bytes overflow check
 * stands between this and a zero-byte array. */
static void overflow_case(void) {
    const char *opts[] = {"--max-array", "4611686018427387904", NULL};
    if (start_server(opts, SANITIZED ? 0 : 4ull << 30)) {
        result(0, "--max-array 2^62: the server starts");
        return;
    }
    int fd = connect_hello(), code = -1;
    char msg[512] = "";
    fake_buf b = {0};
    begin_call(&b, "dims3", 11);
    fake_buf_u32(&b, 12);
    fake_buf_u32(&b, 1u << 21);
    fake_buf_u32(&b, 1u << 20);
    fake_buf_u32(&b, 1u << 20);
    uint32_t t = fd >= 0 && send_buf(fd, &b) == 0 ? read_reply(fd, &code, msg, sizeof msg, 5) : 0;
    diag("2^61 doubles: type %u code %d: %s", t, code, msg);
    result(t == GRP_ERROR && code == GRID_ERR_LIMIT,
           "an array of 2^61 doubles (2^64 bytes) is ERROR GRID_ERR_LIMIT, not a wrapped-around size");
    if (fd >= 0) close(fd);
    result(healthy(), "after the overflowing size: a new client is still served");
    stop_server();
}

/* A CALL that announces 1000 doubles and sends 100 must be dropped within the I/O
 * timeout, not wait forever. */
static void bulk_stall_case(void) {
    const char *opts[] = {"--io-timeout", "1", NULL};
    if (start_server(opts, 0)) {
        result(0, "--io-timeout 1: the server starts");
        return;
    }
    int fd = connect_hello();
    fake_buf b = {0};
    begin_call(&b, "echo_double", 12);
    fake_buf_u32(&b, 4);
    fake_buf_u32(&b, 1000);
    for (int i = 0; i < 100; i++)
        put_f64(&b, i);
    /* Not the last fragment: the record announces more. */
    fake_buf_finish(&b);
    b.p[0] &= 0x7f;
    double t0 = now_s();
    int sent = fd >= 0 && fake_send_raw(fd, b.p, b.len) == 0;
    fake_buf_free(&b);
    int code = -1;
    uint32_t t = sent ? read_reply(fd, &code, NULL, 0, 6) : 0;
    int dropped = (t == GRP_ERROR && code == GRID_ERR_TIMEOUT) || (t == 0 && raw_closed_within(fd, 0.1));
    double took = now_s() - t0;
    result(
        dropped && took >= 0.8 && took < 4,
        "a CALL whose bulk stops after 100 of 1000 doubles is dropped after --io-timeout 1 (type %u code %d, "
        "%.2f s)",
        t, code, took);
    if (fd >= 0) close(fd);
    result(healthy(), "after the stalled bulk: a new client is still served");
    stop_server();
}

/* Floats cross the wire big-endian: twice_float computes on them. */
static void float_order_case(void) {
    if (start_server(NULL, 0)) {
        result(0, "float byte order: the server starts");
        return;
    }
    const float in[4] = {1.5f, -2.25f, 3.0e10f, 1.0e-3f};
    int fd = connect_hello(), code = -1;
    char msg[512] = "";
    fake_buf b = {0};
    begin_call(&b, "twice_float", 13);
    fake_buf_u32(&b, 4);
    fake_buf_u32(&b, 4);
    for (int i = 0; i < 4; i++) {
        uint32_t u;
        memcpy(&u, &in[i], 4);
        fake_buf_u32(&b, u);
    }
    uint32_t t = fd >= 0 && send_buf(fd, &b) == 0 ? read_reply(fd, &code, msg, sizeof msg, 5) : 0;
    gr_err e;
    uint64_t q, r;
    uint32_t head;
    int ok = t == GRP_RESULT && !grw_read_u64(&rd, &q, &e) && !grw_read_u64(&rd, &r, &e) &&
             !grw_read_u32(&rd, &head, &e) && head == 0;
    for (int i = 0; ok && i < 4; i++) {
        uint32_t u;
        float f;
        ok = !grw_read_u32(&rd, &u, &e);
        memcpy(&f, &u, 4);
        if (ok && f != 2 * in[i]) {
            diag("element %d: got %g, want %g", i, (double)f, (double)(2 * in[i]));
            ok = 0;
        }
    }
    result(ok, "twice_float on big-endian floats from a raw socket answers their doubles, big-endian");
    if (fd >= 0) close(fd);
    stop_server();
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    atexit(stop_server);
    max_message_case();
    head_before_malloc_case();
    hello_case();
    overflow_case();
    bulk_stall_case();
    float_order_case();
    printf("1..%d\n", tests);
    return failed ? 1 : 0;
}
