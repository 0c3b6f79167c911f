/* call_bounds_test.c: what a call holds against gridrpcd's --max-call-memory, with a
 * real daemon on loopback and raw CALL messages (docs/server.md, "Limits"): results
 * are counted from the call's head until they are written ("results": a client that
 * does not read a large result keeps further calls out, and reading it lets them in;
 * a refusal tells no figures), and a peer that announces large arrays and stalls holds
 * little, only for --io-timeout ("stall": a call from another client is served
 * meanwhile; the stalled connections are dropped and what they held is released).
 * CALL_BOUNDS_ONLY=NAME runs one case. Every wait is bounded. Prints TAP. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "grd_desc.h"
#include "grp_proto.h"
#include "grw_wire.h"
#include "raw_peer.h"
#include "tap.h"

static const char *gridrpcd, *module;
static char job_dir[] = "/tmp/call-bounds-test.XXXXXX";
static int port;
static pid_t server_pid;
static grw_reader rd = {.fd = -1};
static grw_writer wr;

static double since(long long t0) {
    return (double)(gr_now_ns() - t0) / 1e9;
}

static void pause_s(double s) {
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* Starts gridrpcd on 127.0.0.1, any port, with the test module and ARGS (NULL-ended). */
static int start(const char *const *args) {
    const char *argv[32] = {
        gridrpcd,    "--host",      "127.0.0.1",
        "--port",    "0",           "--module",
        module,      "--log-level", getenv("CALL_BOUNDS_LOG") ? getenv("CALL_BOUNDS_LOG") : "error",
        "--job-dir", job_dir};
    int argc = 11;
    for (int i = 0; args[i] && argc < 31; i++)
        argv[argc++] = args[i];
    argv[argc] = NULL;
    port = raw_spawn(argv, NULL, NULL, 20, &server_pid);
    return port < 0 ? -1 : 0;
}

/* A connection that said HELLO (RCVBUF: its receive buffer when nonzero, a client
 * that reads slowly); -1 on failure. */
static int hello(int rcvbuf) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    if (rcvbuf) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        raw_send_hello(&wr, fd, "call_bounds_test") != 0 ||
        raw_read_reply(&rd, fd, 0, NULL, NULL, 0, NULL, 10) != GRP_HELLO_OK) {
        close(fd);
        return -1;
    }
    gr_err e;
    grw_skip(&rd, &e); /* HELLO_OK's body: the next reply starts clean */
    return fd;
}

/* The descriptor hash of test/NAME; 0 on failure. */
static uint64_t hash_of(int fd, const char *name) {
    gr_err e;
    char q[64];
    snprintf(q, sizeof q, "test/%s", name);
    grw_writer_init(&wr, fd);
    if (grw_begin(&wr, GRP_GET_DESCRIPTOR, 0, 2, &e) || grw_write_string(&wr, q, &e) || grw_finish(&wr, &e))
        return 0;
    if (raw_read_reply(&rd, fd, 0, NULL, NULL, 0, NULL, 10) != GRP_DESCRIPTOR) return 0;
    char *n = NULL;
    uint8_t *bytes = NULL;
    uint32_t len = 0;
    grd_desc *d = NULL;
    grd_error de;
    if (grw_read_string(&rd, 511, &n, &e) || grw_read_opaque(&rd, 1 << 20, &bytes, &len, &e) ||
        grw_end(&rd, &e) || grd_decode(bytes, len, &d, &de) != GRD_OK)
        d = NULL;
    uint64_t h = d ? d->hash : 0;
    grd_free(d);
    free(n);
    free(bytes);
    return h;
}

static size_t put32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
    return 4;
}

static size_t put64(uint8_t *p, uint64_t v) {
    return put32(p, (uint32_t)(v >> 32)) + put32(p + 4, (uint32_t)v);
}

/* Writes a CALL of test/NAME as request ID, by hand: its head section HEAD (LEN bytes,
 * a multiple of 4) announces BULK bytes of arrays, of which only SEND (zeros) are
 * written: SEND < BULK is a peer that stalls in the middle. 0 once written. */
static int send_call(int fd, uint64_t id, const char *name, uint64_t hash, const uint8_t *head, uint32_t len,
                     uint64_t bulk, uint64_t send) {
    uint8_t m[256];
    size_t n = 4, name_len = strlen(name);
    n += put32(m + n, GRW_MAGIC);
    n += put32(m + n, GRW_VERSION);
    n += put32(m + n, GRP_CALL);
    n += put32(m + n, 0);
    n += put64(m + n, id);
    n += put32(m + n, (uint32_t)name_len);
    memset(m + n, 0, (name_len + 3) & ~(size_t)3);
    memcpy(m + n, name, name_len);
    n += (name_len + 3) & ~(size_t)3;
    n += put64(m + n, hash);
    n += put32(m + n, len);
    memcpy(m + n, head, len);
    n += len;
    put32(m, 0x80000000u | (uint32_t)(n - 4 + bulk)); /* one fragment: the whole message */
    if (raw_send_all(fd, m, n) != 0) return -1;
    static const uint8_t zeros[65536];
    while (send > 0) {
        size_t k = send < sizeof zeros ? (size_t)send : sizeof zeros;
        if (raw_send_all(fd, zeros, k) != 0) return -1;
        send -= k;
    }
    return 0;
}

/* test/sleep_cancelable(0, N, out[N], &canceled): 12 bytes of head, 8 N bytes back. */
static int send_results(int fd, uint64_t id, uint64_t hash, int n) {
    uint8_t head[12];
    put64(head, 0); /* 0.0 seconds */
    put32(head + 8, (uint32_t)n);
    return send_call(fd, id, "test/sleep_cancelable", hash, head, sizeof head, 0, 0);
}

/* test/dims3(A, B, C, x[A][B][C]): 8 A B C bytes announced, SEND of them written. */
static int send_dims3(int fd, uint64_t id, uint64_t hash, int a, int b, int c, uint64_t send) {
    uint8_t head[12];
    put32(head, (uint32_t)a);
    put32(head + 4, (uint32_t)b);
    put32(head + 8, (uint32_t)c);
    return send_call(fd, id, "test/dims3", hash, head, sizeof head, 8ull * (uint64_t)a * b * c, send);
}

/* Reads replies on FD (skipping their bodies) until the one for request WANT: its type
 * and an ERROR's code and text; 0 when none came within TIMEOUT seconds. */
static uint32_t reply_for(int fd, uint64_t want, int *code, char *msg, size_t msglen, double timeout) {
    long long until = raw_deadline(timeout);
    for (;;) {
        double left = (double)(until - gr_now_ns()) / 1e9;
        if (left <= 0) return 0;
        uint64_t id = 0;
        gr_err e;
        uint32_t t = raw_read_reply(&rd, fd, 1, code, msg, msglen, &id, left);
        if (t && grw_skip(&rd, &e) != GRID_OK) return 0;
        if (t == 0 || id == want) return t;
    }
}

static int has_digit(const char *s) {
    for (; *s; s++)
        if (isdigit((unsigned char)*s)) return 1;
    return 0;
}

/* ---------------------------------------------------------------- results */

/* --max-call-memory 24M: a CALL of a few bytes whose result is 16 MiB holds 16 MiB
 * until the result is written. The client's receive buffer is small and it reads
 * nothing, so the first result cannot be written (16 MiB is past any socket buffers):
 * a second such call on the same connection (read right after the first, in order) is
 * refused; once the first result is read, the same call is served. */
static void results(void) {
    const char *args[] = {"--threads", "2", "--max-call-memory", "24M", NULL};
    if (start(args) != 0) {
        result(0, "results: starts with --max-call-memory 24M");
        return;
    }
    const int n = 2 << 20; /* 16 MiB of doubles back */
    int fd = hello(4096);
    uint64_t h = fd >= 0 ? hash_of(fd, "sleep_cancelable") : 0;
    int code = 0;
    char msg[4096] = "";
    int ok = h && send_results(fd, 1, h, n) == 0 && send_results(fd, 2, h, n) == 0;
    uint32_t t2 = ok ? reply_for(fd, 2, &code, msg, sizeof msg, 60) : 0;
    diag("results: the second call: %s", msg);
    result(t2 == GRP_ERROR && code == GRID_ERR_LIMIT && strstr(msg, "--max-call-memory"),
           "results: while a 16 MiB result is unread, a second call of 16 MiB results gets GRID_ERR_LIMIT "
           "(--max-call-memory 24M)");
    result(t2 == GRP_ERROR && !has_digit(msg) && strstr(msg, "retry"),
           "results: the refusal says what to do (retry) and shows none of the server's figures");
    /* The first result came before the refusal, or comes now: read whole (reply_for
     * skips bodies), it is released; the server frees the call just after it wrote the
     * last byte, so a call that comes first may still be refused: a few tries. */
    uint32_t t1 = reply_for(fd, 1, NULL, NULL, 0, 1);
    uint32_t t3 = 0;
    for (int i = 0; ok && i < 25 && t3 != GRP_RESULT; i++) {
        if (i) pause_s(0.2);
        t3 = send_results(fd, 3 + (uint64_t)i, h, n) == 0 ? reply_for(fd, 3 + (uint64_t)i, NULL, NULL, 0, 60)
                                                          : 0;
    }
    result(t3 == GRP_RESULT, "results: once the first result is read, the same call is served (first: %s)",
           t1 == GRP_RESULT ? "read after the refusal" : "read before it");
    /* Larger than the whole limit: cannot run here, whatever else runs; no figures. */
    code = 0;
    msg[0] = '\0';
    uint32_t t4 =
        fd >= 0 && send_results(fd, 40, h, 4 << 20) == 0 ? reply_for(fd, 40, &code, msg, sizeof msg, 30) : 0;
    diag("results: 32 MiB of results: %s", msg);
    result(t4 == GRP_ERROR && code == GRID_ERR_LIMIT && strstr(msg, "cannot run here") && !has_digit(msg),
           "results: a call whose results alone pass the limit gets GRID_ERR_LIMIT, 'cannot run here', no "
           "figures");
    if (fd >= 0) close(fd);
    result(raw_stop_status(server_pid, 5) == 0, "results: exits 0 on SIGTERM");
}

/* ---------------------------------------------------------------- stall */

/* --max-call-memory 64M --io-timeout 2: five connections announce 20 MiB of arguments
 * each (100 MiB: today three were admitted and held 60 MiB until the floor rate's
 * deadline, 22 s) and stall after 400 bytes. A 6 MiB call from another client is
 * served meanwhile; the five are dropped within --io-timeout (a bound of 2 + 5 s); then
 * a 60 MiB call is served: what they held was released. */
static void stall(void) {
    const char *args[] = {"--threads", "1", "--max-call-memory", "64M", "--io-timeout", "2", NULL};
    if (start(args) != 0) {
        result(0, "stall: starts with --max-call-memory 64M --io-timeout 2");
        return;
    }
    int fds[5], opened = 0;
    uint64_t h = 0;
    long long t_sent = 0;
    for (int i = 0; i < 5; i++) {
        int fd = hello(0);
        if (fd < 0) break;
        if (!h) h = hash_of(fd, "dims3");
        fds[opened++] = fd;
    }
    /* Sent together, after every HELLO: the stall clock starts here for all five. */
    int ok = h && opened == 5;
    t_sent = gr_now_ns();
    for (int i = 0; ok && i < 5; i++)
        ok = send_dims3(fds[i], 10 + (uint64_t)i, h, 80, 128, 256, 400) == 0;
    pause_s(0.5); /* their heads are read */
    int b = ok ? hello(0) : -1;
    int code = 0;
    char msg[4096] = "";
    long long t0 = gr_now_ns();
    uint32_t t = b >= 0 && send_dims3(b, 20, h, 48, 128, 128, 6ull << 20) == 0
                     ? reply_for(b, 20, &code, msg, sizeof msg, 30)
                     : 0;
    diag("stall: the 6 MiB call (connection %d): %s after %.2f s", b, t == GRP_RESULT ? "RESULT" : msg,
         since(t0));
    result(t == GRP_RESULT,
           "stall: while five connections stall after announcing 20 MiB each, another client's 6 MiB call is "
           "served (--max-call-memory 64M)");
    int closed = 0;
    for (int i = 0; i < opened; i++) {
        double left = 7.0 - since(t_sent);
        closed += raw_closed_within(fds[i], left > 0 ? left : 0.01);
    }
    diag("stall: %d of %d stalled connections closed, %.2f s after they stalled", closed, opened,
         since(t_sent));
    result(ok && closed == 5, "stall: the five stalled connections are dropped within --io-timeout 2 + 5 s");
    code = 0;
    msg[0] = '\0';
    t = b >= 0 && send_dims3(b, 21, h, 120, 128, 512, 60ull << 20) == 0
            ? reply_for(b, 21, &code, msg, sizeof msg, 60)
            : 0;
    diag("stall: the 60 MiB call: %s", t == GRP_RESULT ? "RESULT" : msg);
    result(t == GRP_RESULT, "stall: then a 60 MiB call is served: the stalled ones' holds were released");
    for (int i = 0; i < opened; i++)
        close(fds[i]);
    if (b >= 0) close(b);
    result(raw_stop_status(server_pid, 5) == 0, "stall: exits 0 on SIGTERM");
}

int main(void) {
    static char dpath[4096], mpath[4096];
    gridrpcd = raw_build_program("GRIDRPCD", "gridrpcd", dpath, sizeof dpath);
    module = raw_test_module(mpath, sizeof mpath);
    if (access(module, R_OK) != 0 || access(gridrpcd, X_OK) != 0) {
        printf("# SKIP: gridrpcd or the test module '%s' is not built\n", module);
        return 77;
    }
    signal(SIGPIPE, SIG_IGN);
    if (!mkdtemp(job_dir)) {
        printf("# cannot make a temporary folder: %s\n", strerror(errno));
        return 1;
    }
    const char *only = getenv("CALL_BOUNDS_ONLY");
    if (!only || !strcmp(only, "results")) results();
    if (!only || !strcmp(only, "stall")) stall();
    char rm[128];
    snprintf(rm, sizeof rm, "rm -rf '%s'", job_dir);
    if (system(rm) != 0) diag("could not remove %s", job_dir);
    printf("1..%d\n", tests);
    return failed ? 1 : 0;
}
