/* server_hostile_test.c: gridrpcd against hostile and broken clients. Starts the
 * server (GRIDRPCD, with the test module GRIDRPC_TEST_MODULE and --io-timeout 1),
 * then on raw sockets sends garbage, a wrong magic, a request before HELLO, truncated
 * and stalled messages, and calls with negative, enormous and overflowing dimensions.
 * After each one a fresh, proper connection must still get a PONG and a correct echo:
 * one bad client never takes the server down or blocks the others. Prints TAP. */
#include <errno.h>
#include <limits.h>
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

#include "grd_desc.h"
#include "grm_marshal.h"
#include "grw_wire.h"
#include "raw_peer.h"
#include "tap.h"

static int port;
static pid_t server_pid;
/* Reader and writer are large: one of each, reused. */
static grw_reader rd;
static grw_writer wr;

/* ---------------------------------------------------------------- server */

/* Starts gridrpcd on a free port with MODULE and the options in EXTRA (NULL-ended). */
static int start_server(const char *gridrpcd, const char *module, const char *const *extra) {
    const char *argv[32] = {gridrpcd,   "--host", "127.0.0.1",   "--port", "0",
                            "--module", module,   "--log-level", "warn"};
    int argc = 9;
    for (int i = 0; extra && extra[i] && argc < 31; i++)
        argv[argc++] = extra[i];
    argv[argc] = NULL;
    port = raw_spawn(argv, NULL, NULL, 20, &server_pid);
    return port < 0 ? -1 : 0;
}

/* Sends SIGTERM and waits up to SECONDS; returns the exit status, or -1. */
static int stop_server(double seconds, double *took) {
    int status;
    double t = raw_stop(server_pid, seconds, &status);
    if (took) *took = t < 0 ? seconds : t;
    return t >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int server_alive(void) {
    int status;
    return waitpid(server_pid, &status, WNOHANG) == 0;
}

/* ---------------------------------------------------------------- raw client */

static int connect_raw(void) {
    return raw_connect(port);
}

/* Reads one reply; for ERROR fills *code and MSG. Returns the type, or 0 when the
 * connection closed or timed out. */
static uint32_t read_reply(int fd, int *code, char *msg, size_t msglen, double timeout) {
    return raw_read_reply(&rd, fd, 0, code, msg, msglen, NULL, timeout);
}

/* Discards the rest of the current reply. */
static void skip_reply(void) {
    gr_err e;
    grw_skip(&rd, &e);
}

/* Connects and says HELLO; returns the fd or -1. */
static int connect_hello(void) {
    int fd = connect_raw();
    if (fd < 0) return -1;
    int code = 0;
    char msg[512];
    if (raw_send_hello(&wr, fd, "server_hostile_test") ||
        read_reply(fd, &code, msg, sizeof msg, 5) != GRP_HELLO_OK) {
        diag("HELLO was not answered HELLO_OK");
        close(fd);
        return -1;
    }
    skip_reply();
    return fd;
}

static int send_empty(int fd, uint32_t type, uint64_t id) {
    gr_err e;
    grw_writer_init(&wr, fd);
    int rc = grw_begin(&wr, type, 0, id, &e);
    if (!rc) rc = grw_finish(&wr, &e);
    return rc;
}

/* The descriptor of NAME, fetched as a client does. */
static grd_desc *get_descriptor(int fd, const char *name) {
    gr_err e;
    grw_writer_init(&wr, fd);
    if (grw_begin(&wr, GRP_GET_DESCRIPTOR, 0, 2, &e) || grw_write_string(&wr, name, &e) ||
        grw_finish(&wr, &e))
        return NULL;
    if (read_reply(fd, NULL, NULL, 0, 5) != GRP_DESCRIPTOR) return NULL;
    char *q = NULL;
    uint8_t *bytes = NULL;
    uint32_t len = 0;
    grd_desc *d = NULL;
    grd_error de;
    if (!grw_read_string(&rd, 511, &q, &e) && !grw_read_opaque(&rd, 1 << 20, &bytes, &len, &e) &&
        !grw_end(&rd, &e))
        grd_decode(bytes, len, &d, &de);
    free(q);
    free(bytes);
    return d;
}

/* A CALL to test/echo_double with N and its N doubles, marshalled through grm. */
static int good_echo(int fd, grd_desc *d, int n) {
    gr_err e;
    grw_limits lim;
    grp_limits_default(&lim);
    double *in = calloc((size_t)n, sizeof *in), *out = calloc((size_t)n, sizeof *out);
    for (int i = 0; i < n; i++)
        in[i] = i * 1.5 - 7;
    grm_call *c = calloc(1, grm_call_size(d->nparams));
    grm_init(c, d, GRM_CLIENT_SIDE);
    c->sl[0].val.i = n;
    c->ptr[1] = in;
    c->ptr[2] = out;
    int ok = grm_prepare(c, &lim, &e) == GRID_OK;
    grw_writer_init(&wr, fd);
    ok = ok && !grw_begin(&wr, GRP_CALL, 0, 77, &e) && !grw_write_string(&wr, "test/echo_double", &e) &&
         !grw_write_u64(&wr, d->hash, &e) && !grm_write_head(&wr, c, GRM_TO_SERVER, &lim, &e) &&
         !grm_write_bulk(&wr, c, GRM_TO_SERVER, &e) && !grw_finish(&wr, &e);
    int code = 0;
    char msg[512] = "";
    uint32_t t = ok ? read_reply(fd, &code, msg, sizeof msg, 5) : 0;
    if (t == GRP_RESULT) {
        uint64_t qns, rns;
        ok = !grw_read_u64(&rd, &qns, &e) && !grw_read_u64(&rd, &rns, &e) &&
             !grm_read_head(&rd, c, GRM_TO_CLIENT, &lim, &e) && !grm_read_bulk(&rd, c, GRM_TO_CLIENT, &e) &&
             !grw_end(&rd, &e);
        for (int i = 0; ok && i < n; i++)
            ok = out[i] == in[i];
        if (!ok) diag("echo_double: a wrong RESULT (%s)", e.msg);
    } else {
        if (t == GRP_ERROR)
            diag("echo_double answered ERROR %d: %s", code, msg);
        else
            diag("echo_double: no RESULT (type %u)", t);
        ok = 0;
    }
    free(c);
    free(in);
    free(out);
    return ok;
}

/* A fresh, proper client: HELLO, PING -> PONG, and a correct echo of 1000 doubles. */
static int healthy(void) {
    int fd = connect_hello();
    if (fd < 0) return 0;
    int ok = send_empty(fd, GRP_PING, 3) == 0 && read_reply(fd, NULL, NULL, 0, 5) == GRP_PONG;
    if (ok)
        skip_reply();
    else
        diag("PING was not answered PONG");
    grd_desc *d = ok ? get_descriptor(fd, "echo_double") : NULL;
    if (ok && !d) diag("GET_DESCRIPTOR echo_double failed");
    ok = ok && d && good_echo(fd, d, 1000);
    grd_free(d);
    close(fd);
    return ok;
}

/* Starts a CALL message: header, name, hash (of the real descriptor). */
static int begin_call(int fd, const char *name, uint64_t hash, uint64_t id) {
    gr_err e;
    grw_writer_init(&wr, fd);
    return grw_begin(&wr, GRP_CALL, 0, id, &e) || grw_write_string(&wr, name, &e) ||
           grw_write_u64(&wr, hash, &e);
}

/* Writes a head section of N ints. */
static int write_int_head(const int *v, unsigned n) {
    gr_err e;
    int rc = grw_write_u32(&wr, 4 * n, &e);
    for (unsigned i = 0; i < n && !rc; i++)
        rc = grw_write_i32(&wr, v[i], &e);
    return rc;
}

/* Sends a CALL of NAME whose head holds the ints V (no bulk) and expects ERROR WANT;
 * then the same connection must still answer PING. */
static void expect_args_error(const char *what, const char *name, const int *v, unsigned n, int want) {
    int fd = connect_hello();
    grd_desc *d = fd >= 0 ? get_descriptor(fd, name) : NULL;
    gr_err e;
    int code = -1;
    char msg[512] = "";
    int ok = d && !begin_call(fd, name, d->hash, 10) && !write_int_head(v, n) && !grw_finish(&wr, &e) &&
             read_reply(fd, &code, msg, sizeof msg, 5) == GRP_ERROR && code == want;
    if (!ok)
        diag("%s: got code %d '%s', wanted %s", what, code, msg, grid_error_name(want));
    else
        diag("%s: %s: %s", what, grid_error_name(code), msg);
    if (ok) {
        ok = send_empty(fd, GRP_PING, 11) == 0 && read_reply(fd, NULL, NULL, 0, 5) == GRP_PONG;
        if (!ok) diag("%s: the connection did not stay usable", what);
    }
    result(ok, "%s is ERROR %s and the connection stays usable", what, grid_error_name(want));
    grd_free(d);
    if (fd >= 0) close(fd);
    result(healthy(), "after %s: a new client gets PONG and a good echo", what);
}

/* Hostile input, one case after another, each followed by a healthy client. */
static void hostile_cases(void) {
    result(healthy(), "a proper client gets PONG and a good echo");

    /* Garbage: an HTTP request. Its first word reads as a fragment of 1.2 GB that never
     * comes: the server drops the connection (limit, or the I/O timeout). */
    {
        int fd = connect_raw();
        const char *http = "GET / HTTP/1.0\r\nHost: x\r\n\r\n";
        int ok = fd >= 0 && raw_send_all(fd, http, strlen(http)) == 0 && raw_closed_within(fd, 5);
        result(ok, "garbage bytes: the connection is dropped");
        if (fd >= 0) close(fd);
        result(healthy(), "after garbage: a new client gets PONG and a good echo");
    }
    /* Random bytes in a well-framed record. */
    {
        int fd = connect_raw();
        unsigned char junk[4 + 64];
        junk[0] = 0x80, junk[1] = 0, junk[2] = 0, junk[3] = 64;
        srand(7);
        for (int i = 4; i < (int)sizeof junk; i++)
            junk[i] = (unsigned char)rand();
        int code = -1;
        int ok = fd >= 0 && raw_send_all(fd, junk, sizeof junk) == 0 &&
                 read_reply(fd, &code, NULL, 0, 5) == GRP_ERROR && code == GRID_ERR_PROTOCOL &&
                 raw_closed_within(fd, 5);
        result(ok, "random bytes in a record: ERROR GRID_ERR_PROTOCOL, then closed");
        if (fd >= 0) close(fd);
        result(healthy(), "after random bytes: a new client gets PONG and a good echo");
    }
    /* A wrong magic. */
    {
        int fd = connect_raw();
        unsigned char m[4 + 24] = {0x80, 0, 0, 24, 'N', 'O', 'P', 'E', 0, 0, 0, 1, 0, 0, 0, 9};
        int code = -1;
        char msg[512] = "";
        int ok = fd >= 0 && raw_send_all(fd, m, sizeof m) == 0 &&
                 read_reply(fd, &code, msg, sizeof msg, 5) == GRP_ERROR && code == GRID_ERR_PROTOCOL &&
                 raw_closed_within(fd, 5);
        diag("wrong magic: %s", msg);
        result(ok, "wrong magic: ERROR GRID_ERR_PROTOCOL, then closed");
        if (fd >= 0) close(fd);
        result(healthy(), "after a wrong magic: a new client gets PONG and a good echo");
    }
    /* A request before HELLO. */
    {
        int fd = connect_raw();
        int code = -1;
        char msg[512] = "";
        int ok = fd >= 0 && send_empty(fd, GRP_PING, 5) == 0 &&
                 read_reply(fd, &code, msg, sizeof msg, 5) == GRP_ERROR && code == GRID_ERR_PROTOCOL &&
                 raw_closed_within(fd, 5);
        diag("before HELLO: %s", msg);
        result(ok, "a message before HELLO: ERROR GRID_ERR_PROTOCOL, then closed");
        if (fd >= 0) close(fd);
        result(healthy(), "after a message before HELLO: a new client gets PONG and a good echo");
    }
    /* A truncated CALL: the record ends inside the head. */
    {
        int fd = connect_hello();
        grd_desc *d = fd >= 0 ? get_descriptor(fd, "echo_double") : NULL;
        gr_err e;
        int code = -1;
        int ok = d && !begin_call(fd, "test/echo_double", d->hash, 6) && !grw_write_u32(&wr, 8, &e) &&
                 !grw_write_u32(&wr, 5, &e) && !grw_finish(&wr, &e) &&
                 read_reply(fd, &code, NULL, 0, 5) == GRP_ERROR && code == GRID_ERR_PROTOCOL &&
                 raw_closed_within(fd, 5);
        result(ok, "truncated CALL: ERROR GRID_ERR_PROTOCOL, then closed (got %d)", code);
        grd_free(d);
        if (fd >= 0) close(fd);
        result(healthy(), "after a truncated CALL: a new client gets PONG and a good echo");
    }
    /* Bad dimensions: the server refuses before allocating, and the connection goes on. */
    {
        int neg[1] = {-1};
        expect_args_error("a negative dimension", "test/echo_double", neg, 1, GRID_ERR_ARGS);
        int big[1] = {INT_MAX};
        expect_args_error("a dimension of 2^31-1 doubles", "test/echo_double", big, 1, GRID_ERR_LIMIT);
        int huge[6] = {1 << 20, 1 << 20, 0, 1 << 20, 0, 1 << 20};
        expect_args_error("an array of 2^40 doubles", "test/block2d", huge, 6, GRID_ERR_LIMIT);
        int ovf[6] = {INT_MAX, INT_MAX, 0, 1, 0, 1};
        expect_args_error("a dimension product that overflows", "test/block2d", ovf, 6, GRID_ERR_LIMIT);
    }
    /* A fragment of 0x7fffffff bytes announced, then a stall: dropped after --io-timeout. */
    {
        int fd = connect_hello();
        unsigned char m[4 + 8] = {0x7f, 0xff, 0xff, 0xff, 0x47, 0x52, 0x50, 0x43, 0, 0, 0, 1};
        long long t0 = gr_now_ns();
        int ok = fd >= 0 && raw_send_all(fd, m, sizeof m) == 0;
        /* Meanwhile another client is served at once. */
        int other = ok && healthy();
        ok = ok && raw_closed_within(fd, 5);
        double took = (double)(gr_now_ns() - t0) / 1e9;
        result(other, "a stalled client does not block another one");
        result(ok && took >= 0.9, "a stalled message is dropped after --io-timeout 1 (%.2f s)", took);
        if (fd >= 0) close(fd);
        result(healthy(), "after a stall: a new client gets PONG and a good echo");
    }
    /* Half a message, then the client closes. */
    {
        int fd = connect_hello();
        grd_desc *d = fd >= 0 ? get_descriptor(fd, "echo_double") : NULL;
        unsigned char m[4 + 20] = {0x00, 0x10, 0x00, 0x00, 0x47, 0x52, 0x50, 0x43, 0, 0, 0, 1, 0, 0, 0, 5};
        int ok = d && raw_send_all(fd, m, sizeof m) == 0;
        grd_free(d);
        if (fd >= 0) close(fd);
        result(ok, "half a message, then close");
        result(healthy(), "after half a message: a new client gets PONG and a good echo");
    }
    /* Unknown function and stale hash keep the connection. */
    {
        int fd = connect_hello();
        gr_err e;
        int code = -1;
        char msg[512] = "";
        int v[1] = {3};
        int ok = fd >= 0 && !begin_call(fd, "no_such_function", 1, 20) && !write_int_head(v, 1) &&
                 !grw_finish(&wr, &e) && read_reply(fd, &code, msg, sizeof msg, 5) == GRP_ERROR &&
                 code == GRID_ERR_NOT_FOUND && strstr(msg, "no_such_function") && strstr(msg, "gridrpc ls");
        diag("unknown function: %s", msg);
        result(ok, "an unknown function: ERROR GRID_ERR_NOT_FOUND naming it and suggesting gridrpc ls");
        ok = fd >= 0 && !begin_call(fd, "test/echo_double", 12345, 21) && !write_int_head(v, 1) &&
             !grw_finish(&wr, &e) && read_reply(fd, &code, msg, sizeof msg, 5) == GRP_ERROR &&
             code == GRID_ERR_STALE;
        diag("stale hash: %s", msg);
        result(ok, "a wrong descriptor hash: ERROR GRID_ERR_STALE");
        ok = fd >= 0 && send_empty(fd, GRP_PING, 22) == 0 && read_reply(fd, NULL, NULL, 0, 5) == GRP_PONG;
        result(ok, "the connection stays usable after both");
        if (fd >= 0) close(fd);
    }
}

/* Sends CALL test/sleep(SECONDS) with request id ID. */
static int send_sleep(int fd, uint64_t hash, double seconds, uint64_t id) {
    gr_err e;
    uint64_t bits;
    memcpy(&bits, &seconds, sizeof bits);
    return begin_call(fd, "test/sleep", hash, id) || grw_write_u32(&wr, 8, &e) ||
           grw_write_u64(&wr, bits, &e) || grw_finish(&wr, &e);
}

/* SIGTERM with one call running, one queued and one arriving afterwards: the running
 * one finishes and is answered, the others get GRID_ERR_SHUTDOWN, and the server
 * exits 0 soon after the running call ends. */
static void shutdown_case(const char *gridrpcd, const char *module) {
    const char *opts[] = {"--threads", "1", NULL};
    if (start_server(gridrpcd, module, opts) != 0) {
        result(0, "graceful shutdown: the server starts");
        return;
    }
    int a = connect_hello(), b = connect_hello(), c = connect_hello();
    grd_desc *d = a >= 0 ? get_descriptor(a, "sleep") : NULL;
    int ok = d && b >= 0 && c >= 0;
    ok = ok && !send_sleep(a, d->hash, 1.0, 100);
    struct timespec ts = {0, 200000000};
    nanosleep(&ts, NULL);
    ok = ok && !send_sleep(b, d->hash, 0.1, 200);
    nanosleep(&ts, NULL);
    kill(server_pid, SIGTERM);
    nanosleep(&ts, NULL);
    ok = ok && !send_sleep(c, d->hash, 0.0, 300);
    int code_b = -1, code_c = -1;
    uint32_t tb = ok ? read_reply(b, &code_b, NULL, 0, 5) : 0;
    uint32_t tc = ok ? read_reply(c, &code_c, NULL, 0, 5) : 0;
    uint32_t ta = ok ? read_reply(a, NULL, NULL, 0, 5) : 0;
    result(ok && ta == GRP_RESULT, "graceful shutdown: the running call finishes and its RESULT is sent");
    result(tb == GRP_ERROR && code_b == GRID_ERR_SHUTDOWN,
           "graceful shutdown: a queued call gets GRID_ERR_SHUTDOWN");
    result(tc == GRP_ERROR && code_c == GRID_ERR_SHUTDOWN,
           "graceful shutdown: a new call gets GRID_ERR_SHUTDOWN");
    double took = 0;
    int st = stop_server(5, &took);
    result(st == 0, "graceful shutdown: exit status 0 (%d), %.2f s after the results", st, took);
    grd_free(d);
    if (a >= 0) close(a);
    if (b >= 0) close(b);
    if (c >= 0) close(c);
}

/* --token: a HELLO with another token gets ERROR and the connection closes. */
static void token_case(const char *gridrpcd, const char *module) {
    const char *opts[] = {"--token", "s3cret", NULL};
    if (start_server(gridrpcd, module, opts) != 0) {
        result(0, "--token: the server starts");
        return;
    }
    int fd = connect_raw(), code = -1;
    char msg[512] = "";
    int ok = fd >= 0 && raw_send_hello(&wr, fd, "server_hostile_test") == 0 &&
             read_reply(fd, &code, msg, sizeof msg, 5) == GRP_ERROR && raw_closed_within(fd, 5);
    diag("wrong token: %s: %s", grid_error_name(code), msg);
    result(ok, "--token: a HELLO with another token gets ERROR and the connection closes");
    if (fd >= 0) close(fd);
    gr_err e;
    fd = connect_raw();
    grw_writer_init(&wr, fd);
    ok = fd >= 0 && !grw_begin(&wr, GRP_HELLO, 0, 1, &e) && !grw_write_string(&wr, "t", &e) &&
         !grw_write_u32(&wr, 1, &e) && !grw_write_u32(&wr, 1, &e) && !grw_write_string(&wr, "s3cret", &e) &&
         !grw_finish(&wr, &e) && read_reply(fd, NULL, NULL, 0, 5) == GRP_HELLO_OK;
    result(ok, "--token: the right token gets HELLO_OK");
    if (fd >= 0) close(fd);
    result(stop_server(5, NULL) == 0, "--token: exit 0 on SIGTERM");
}

/* Thread-per-request mode and the SJF queue serve correctly too. */
static void modes_case(const char *gridrpcd, const char *module) {
    const char *opts[] = {"--mode", "thread", "--queue", "sjf", NULL};
    int ok = start_server(gridrpcd, module, opts) == 0;
    result(ok && healthy() && healthy(), "--mode thread --queue sjf: PONG and good echoes");
    if (ok) result(stop_server(5, NULL) == 0, "--mode thread: exit 0 on SIGTERM");
}

/* Two modules with a function of the same name: the plain name is ambiguous and the
 * error lists both qualified names; each qualified name works. Needs idlc and cc. */
static void ambiguity_case(const char *gridrpcd, const char *module) {
    const char *top = getenv("top_builddir"), *cc = getenv("CC"), *idlc = getenv("IDLC");
    char idlc_path[4096], dir[] = "/tmp/gsv-amb.XXXXXX", cmd[16384];
    if (!idlc && top) {
        snprintf(idlc_path, sizeof idlc_path, "%s/idlc/idlc", top);
        idlc = idlc_path;
    }
    if (!idlc || access(idlc, X_OK) != 0 || !mkdtemp(dir)) {
        diag("no idlc: the ambiguity test is skipped");
        return;
    }
    const char *cppflags = getenv("STUB_CPPFLAGS");
    snprintf(cmd, sizeof cmd,
             "cd %s && printf 'Module amb_a;\nDefine twin(IN int n) \"a\" { }\n' >a.idl && "
             "printf 'Module amb_b;\nDefine twin(IN int n) \"b\" { }\n' >b.idl && "
             "'%s' --emit stub -o . a.idl b.idl && mkdir mods && "
             "%s %s -I'%s/include' -fPIC -shared -o mods/a.so a_stub.c && "
             "%s %s -I'%s/include' -fPIC -shared -o mods/b.so b_stub.c",
             dir, idlc, cc ? cc : "cc", cppflags ? cppflags : "",
             getenv("top_srcdir") ? getenv("top_srcdir") : "..", cc ? cc : "cc", cppflags ? cppflags : "",
             getenv("top_srcdir") ? getenv("top_srcdir") : "..");
    if (system(cmd) != 0) {
        result(0, "ambiguity: two modules with a function 'twin' build");
        return;
    }
    char mods[4200];
    snprintf(mods, sizeof mods, "%s/mods", dir);
    const char *opts[] = {"--module-dir", mods, NULL};
    if (start_server(gridrpcd, module, opts) != 0) {
        result(0, "ambiguity: the server starts");
        return;
    }
    int fd = connect_hello(), code = -1;
    char msg[512] = "";
    gr_err e;
    grw_writer_init(&wr, fd);
    int ok = fd >= 0 && !grw_begin(&wr, GRP_GET_DESCRIPTOR, 0, 1, &e) && !grw_write_string(&wr, "twin", &e) &&
             !grw_finish(&wr, &e) && read_reply(fd, &code, msg, sizeof msg, 5) == GRP_ERROR &&
             code == GRID_ERR_NOT_FOUND && strstr(msg, "amb_a/twin") && strstr(msg, "amb_b/twin");
    diag("ambiguous: %s", msg);
    result(ok, "ambiguity: a plain name in two modules is NOT_FOUND listing both qualified names");
    grd_desc *d = fd >= 0 ? get_descriptor(fd, "amb_b/twin") : NULL;
    result(d && strcmp(d->module, "amb_b") == 0, "ambiguity: the qualified name is served");
    grd_free(d);
    d = fd >= 0 ? get_descriptor(fd, "null_call") : NULL;
    result(d != NULL, "a plain name unique across modules is served");
    grd_free(d);
    ok = fd >= 0 && send_empty(fd, GRP_LIST, 9) == 0 && read_reply(fd, NULL, NULL, 0, 5) == GRP_LIST_OK;
    uint32_t n = 0;
    int seen = 0;
    if (ok && !grw_read_u32(&rd, &n, &e)) {
        for (uint32_t i = 0; i < n; i++) {
            char *q = NULL;
            if (grw_read_string(&rd, 511, &q, &e)) break;
            seen += strcmp(q, "amb_a/twin") == 0 || strcmp(q, "amb_b/twin") == 0 ||
                    strcmp(q, "test/echo_double") == 0;
            free(q);
        }
    }
    result(seen == 3, "LIST names every function, qualified (%u functions)", n);
    if (fd >= 0) close(fd);
    stop_server(5, NULL);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) diag("cannot remove %s", dir);
}

int main(void) {
    char dpath[4096], mpath[4096];
    const char *gridrpcd = raw_build_program("GRIDRPCD", "gridrpcd", dpath, sizeof dpath);
    const char *module = getenv("GRIDRPC_TEST_MODULE");
    if (!module) module = raw_test_module(mpath, sizeof mpath);
    if (access(module, R_OK) != 0) {
        printf("# SKIP: the test module '%s' is not built\n", module);
        return 77;
    }
    signal(SIGPIPE, SIG_IGN);
    const char *opts[] = {"--io-timeout", "1", "--threads", "2", NULL};
    if (start_server(gridrpcd, module, opts) != 0) {
        printf("not ok 1 gridrpcd starts\n1..1\n");
        return 1;
    }
    hostile_cases();
    result(server_alive(), "the server is still running");
    result(stop_server(10, NULL) == 0, "SIGTERM: the server exits 0");
    shutdown_case(gridrpcd, module);
    token_case(gridrpcd, module);
    modes_case(gridrpcd, module);
    ambiguity_case(gridrpcd, module);
    printf("1..%d\n", tests);
    return failed ? 1 : 0;
}
