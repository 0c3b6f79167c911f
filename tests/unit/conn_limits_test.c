/* conn_limits_test.c: the limits on what a peer holds, with real daemons on loopback,
 * at and one past each bound (docs/server.md, "Limits"). gridrpcd: connections per
 * address and in total (the one past is answered ERROR GRID_ERR_LIMIT, request id 0,
 * naming the option, and closed: "limits"), calls per connection and in total ("calls"),
 * call memory ("memory"), --max-array and --max-head ("sizes"), data sessions per
 * connection ("sessions"), HELLO within --io-timeout, a stalled half CALL that holds no
 * worker, --idle-timeout and the client library's reconnect ("timeouts", "idle-data"),
 * a pooled connection closed just as a call leaves on it ("race", through a relay), a
 * client that never reads its result ("slowreader"), a flood of 2,000 connections from
 * 127.0.0.1 while 127.0.0.2 is still served promptly ("flood"), 1,000 connections that
 * send 3 bytes of a record header and stall, all closed within a bound of --io-timeout 1
 * ("stall"); gridmetad: the same connection limits, flood and stall, its timeouts, and a
 * client routed through it reconnecting after its idle close ("meta-*").
 * CONN_LIMITS_ONLY=NAME runs one case. Every wait is bounded. Prints TAP. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gr_connlimit.h"
#include "grd_desc.h"
#include "gridrpc.h"
#include "grm_marshal.h"
#include "grp_proto.h"
#include "grw_wire.h"
#include "raw_peer.h"
#include "tap.h"

static const char *gridrpcd, *gridmetad, *module;
static char job_dir[] = "/tmp/conn-limits-test.XXXXXX"; /* gridrpcd's --job-dir: a temporary folder */
static int port;
static pid_t server_pid;
static grw_reader rd = {.fd = -1}; /* large: one of each, reused */
static grw_writer wr;
static int small_rcvbuf; /* nonzero: connect_from sets SO_RCVBUF (a client that reads slowly) */

static double since(long long t0) {
    return (double)(gr_now_ns() - t0) / 1e9;
}

static void pause_s(double s) {
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* ---------------------------------------------------------------- daemons */

/* In the daemon's process: a low soft descriptor limit, as a shell often gives: the
 * daemon must raise its own to hold its connections (else the stalled ones of "stall"
 * wait unaccepted, the fault of issue 13). */
static void low_descriptor_limit(void *unused) {
    (void)unused;
    struct rlimit r;
    if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur > 256) {
        r.rlim_cur = 256;
        setrlimit(RLIMIT_NOFILE, &r);
    }
}

/* Starts PROG (gridrpcd or gridmetad) on 127.0.0.1, any port, with ARGS (NULL-ended). */
static int start(const char *prog, const char *const *args) {
    const char *argv[48];
    int argc = 0;
    argv[argc++] = prog;
    argv[argc++] = "--host";
    argv[argc++] = "127.0.0.1";
    argv[argc++] = "--port";
    argv[argc++] = "0";
    if (prog == gridrpcd) {
        argv[argc++] = "--module";
        argv[argc++] = module;
        argv[argc++] = "--log-level";
        argv[argc++] = "error";
        argv[argc++] = "--job-dir";
        argv[argc++] = job_dir;
    } else {
        argv[argc++] = "--db";
        argv[argc++] = ":memory:";
        argv[argc++] = "--quiet";
    }
    for (int i = 0; args && args[i] && argc < 46; i++)
        argv[argc++] = args[i];
    argv[argc] = NULL;
    port = raw_spawn(argv, low_descriptor_limit, NULL, 20, &server_pid);
    return port < 0 ? -1 : 0;
}

/* SIGTERM, at most 5 s, then SIGKILL. Returns the exit status, or -1. */
static int stop(void) {
    return raw_stop_status(server_pid, 5);
}

/* ---------------------------------------------------------------- raw client */

/* A connection from source address SRC (127.0.0.x); NONBLOCK: return at once (the
 * connect may still be under way). */
static int connect_from(const char *src, int nonblock) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), 0);
    if (fd < 0) return -1;
    if (small_rcvbuf) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small_rcvbuf, sizeof small_rcvbuf);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    inet_pton(AF_INET, src, &a.sin_addr);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    a.sin_port = htons((uint16_t)port);
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0 && errno != EINPROGRESS) {
        close(fd);
        return -1;
    }
    if (fd == rd.fd) rd.fd = -1; /* a new connection: nothing of the old one's is buffered */
    return fd;
}

/* Reads one message (and an ERROR's code and text); returns its type, 0 when the
 * connection closed or nothing came within TIMEOUT. *ID: its request id. Replies that
 * came together stay buffered for the next read on the same fd. */
static uint32_t read_reply(int fd, int *code, char *msg, size_t msglen, uint64_t *id, double timeout) {
    gr_err e;
    uint32_t t = raw_read_reply(&rd, fd, 1, code, msg, msglen, id, timeout);
    if (t) grw_skip(&rd, &e);
    return t;
}

/* Connects from SRC and says HELLO: the fd once HELLO_OK came, else -1 with the ERROR
 * (if one came) in *CODE, MSG and *ID. */
static int hello_from(const char *src, int *code, char *msg, size_t msglen, uint64_t *id) {
    int fd = connect_from(src, 0);
    if (fd < 0) return -1;
    if (code) *code = 0;
    if (msg && msglen) msg[0] = '\0';
    if (raw_send_hello(&wr, fd, "conn_limits_test") == 0 &&
        read_reply(fd, code, msg, msglen, id, 5) == GRP_HELLO_OK)
        return fd;
    close(fd);
    return -1;
}

static int ping(int fd) {
    gr_err e;
    grw_writer_init(&wr, fd);
    if (grw_begin(&wr, GRP_PING, 0, 3, &e) || grw_finish(&wr, &e)) return 0;
    return read_reply(fd, NULL, NULL, 0, NULL, 5) == GRP_PONG;
}

static uint32_t reply_for(int fd, uint64_t want, int *code, char *msg, size_t msglen, double timeout);

/* The descriptor of NAME (GET_DESCRIPTOR on FD); NULL on failure. */
static grd_desc *descriptor(int fd, const char *name) {
    gr_err e;
    grw_writer_init(&wr, fd);
    if (grw_begin(&wr, GRP_GET_DESCRIPTOR, 0, 2, &e) || grw_write_string(&wr, name, &e) ||
        grw_finish(&wr, &e))
        return NULL;
    grw_header h;
    if (fd != rd.fd || !grw_has_buffered(&rd)) grw_reader_init(&rd, fd, 1 << 26);
    rd.deadline_ns = raw_deadline(5);
    if (grw_read_header(&rd, &h, &e) || h.type != GRP_DESCRIPTOR) return NULL;
    char *q = NULL;
    uint8_t *bytes = NULL;
    uint32_t len = 0;
    grd_desc *d = NULL;
    grd_error de;
    if (grw_read_string(&rd, 511, &q, &e) || grw_read_opaque(&rd, 1 << 20, &bytes, &len, &e) ||
        grw_end(&rd, &e) || grd_decode(bytes, len, &d, &de) != GRD_OK)
        d = NULL;
    free(q);
    free(bytes);
    return d;
}

/* The descriptor hash of NAME; 0 on failure. */
static uint64_t descriptor_hash(int fd, const char *name) {
    grd_desc *d = descriptor(fd, name);
    uint64_t hash = d ? d->hash : 0;
    grd_free(d);
    return hash;
}

/* Writes CALL test/echo_double with N doubles (marshalled by grm, as a client does) as
 * request 77 on FD; 0 when written. */
static int echo_send(int fd, const grd_desc *d, int n) {
    gr_err e;
    grw_limits lim;
    grp_limits_default(&lim);
    double *in = calloc((size_t)n + 1, sizeof *in), *out = calloc((size_t)n + 1, sizeof *out);
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
    grm_release(c);
    free(c);
    free(in);
    free(out);
    return ok ? 0 : -1;
}

/* The same, and its reply's type, and an ERROR's code and message. */
static uint32_t echo(int fd, const grd_desc *d, int n, int *code, char *msg, size_t msglen) {
    return echo_send(fd, d, n) == 0 ? reply_for(fd, 77, code, msg, msglen, 5) : 0;
}

/* Writes CALL test/sleep(SECONDS) as request ID; returns the bytes of the record, or 0. */
static uint64_t send_sleep(int fd, uint64_t hash, double seconds, uint64_t id) {
    gr_err e;
    uint64_t bits, sent = 0;
    memcpy(&bits, &seconds, sizeof bits);
    grw_writer_init(&wr, fd);
    wr.tally = &sent;
    int rc = grw_begin(&wr, GRP_CALL, 0, id, &e) || grw_write_string(&wr, "test/sleep", &e) ||
             grw_write_u64(&wr, hash, &e) || grw_write_u32(&wr, 8, &e) || grw_write_u64(&wr, bits, &e) ||
             grw_finish(&wr, &e);
    wr.tally = NULL;
    return rc ? 0 : sent;
}

/* A proper call on a fresh connection from SRC: HELLO, then sleep(0) answered RESULT. */
static int served(const char *src) {
    int fd = hello_from(src, NULL, NULL, 0, NULL);
    if (fd < 0) return 0;
    uint64_t h = descriptor_hash(fd, "sleep");
    int ok = h && send_sleep(fd, h, 0, 9) && read_reply(fd, NULL, NULL, 0, NULL, 5) == GRP_RESULT;
    close(fd);
    return ok;
}

/* Reads replies on FD until one for request ID comes (others are ignored); its type
 * and ERROR code, 0 when none came within TIMEOUT. */
static uint32_t reply_for(int fd, uint64_t want, int *code, char *msg, size_t msglen, double timeout) {
    long long until = raw_deadline(timeout);
    for (;;) {
        double left = (double)(until - gr_now_ns()) / 1e9;
        if (left <= 0) return 0;
        uint64_t id = 0;
        uint32_t t = read_reply(fd, code, msg, msglen, &id, left);
        if (t == 0 || id == want) return t;
    }
}

/* ---------------------------------------------------------------- connection counts */

static void connection_limits(const char *prog, const char *what) {
    const char *args[] = {
        "--max-connections", "6", "--max-connections-per-address", "4", "--io-timeout", "5", NULL};
    if (start(prog, args) != 0) {
        result(0, "%s: starts with --max-connections 6 --max-connections-per-address 4", what);
        return;
    }
    int fds[8], n = 0, code = 0;
    uint64_t id = 99;
    char msg[4096];
    for (int i = 0; i < 4; i++)
        if ((fds[n] = hello_from("127.0.0.1", NULL, NULL, 0, NULL)) >= 0) n++;
    result(n == 4, "%s: 4 connections from 127.0.0.1 (the per-address bound) are served", what);
    int extra = hello_from("127.0.0.1", &code, msg, sizeof msg, &id);
    diag("5th from 127.0.0.1: %s", msg);
    result(extra < 0 && code == GRID_ERR_LIMIT && id == 0 && strstr(msg, "--max-connections-per-address 4") &&
               strstr(msg, "127.0.0.1"),
           "%s: a 5th from 127.0.0.1 gets ERROR GRID_ERR_LIMIT, request id 0, naming the option", what);
    for (int i = 0; i < 2; i++)
        if ((fds[n] = hello_from("127.0.0.2", NULL, NULL, 0, NULL)) >= 0) n++;
    result(n == 6, "%s: 127.0.0.2 is still served: 6 connections open (the total bound)", what);
    code = 0;
    extra = hello_from("127.0.0.3", &code, msg, sizeof msg, &id);
    diag("7th: %s", msg);
    result(extra < 0 && code == GRID_ERR_LIMIT && id == 0 && strstr(msg, "--max-connections 6"),
           "%s: a 7th (from 127.0.0.3) gets ERROR GRID_ERR_LIMIT naming --max-connections", what);
    /* The refused connection is closed, not left open. */
    int fd = connect_from("127.0.0.3", 0);
    int closed = fd >= 0 && raw_send_hello(&wr, fd, "conn_limits_test") == 0 &&
                 read_reply(fd, NULL, NULL, 0, NULL, 5) == GRP_ERROR && raw_closed_within(fd, 3);
    if (fd >= 0) close(fd);
    result(closed, "%s: the refused connection is closed by the server", what);
    /* A connection that closes frees its place (the server notices within a moment). */
    close(fds[0]);
    int again = -1;
    for (int tries = 0; tries < 40 && again < 0; tries++) {
        pause_s(0.05);
        again = hello_from("127.0.0.1", NULL, NULL, 0, NULL);
    }
    result(again >= 0, "%s: once one closes, 127.0.0.1 may open another", what);
    if (again >= 0) close(again);
    for (int i = 1; i < n; i++)
        close(fds[i]);
    result(stop() == 0, "%s: exits 0 on SIGTERM", what);
}

/* ---------------------------------------------------------------- flood */

/* 127.0.0.1 opens COUNT connections (far past its limit of 50) as fast as it can;
 * 127.0.0.2 must still be served promptly, and every refused connection closes. */
static void flood(const char *prog, const char *what, int count) {
    const char *args[] = {"--max-connections-per-address", "50", "--io-timeout", "1", "--threads", "1", NULL};
    const char *margs[] = {"--max-connections-per-address", "50", "--io-timeout", "1", NULL};
    if (start(prog, prog == gridrpcd ? args : margs) != 0) {
        result(0, "%s flood: starts", what);
        return;
    }
    int *fds = malloc((size_t)count * sizeof *fds), opened = 0;
    long long t0 = gr_now_ns();
    double worst = 0;
    int all_served = 1;
    for (int wave = 0; wave < 4; wave++) {
        for (int i = 0; i < count / 4; i++) {
            int fd = connect_from("127.0.0.1", 1);
            if (fd >= 0) fds[opened++] = fd;
        }
        /* Another address meanwhile: a full call, promptly. */
        long long t1 = gr_now_ns();
        int ok = prog == gridrpcd ? served("127.0.0.2") : 0;
        if (prog != gridrpcd) {
            int fd = hello_from("127.0.0.2", NULL, NULL, 0, NULL);
            ok = fd >= 0 && ping(fd);
            if (fd >= 0) close(fd);
        }
        double took = since(t1);
        if (took > worst) worst = took;
        all_served = all_served && ok;
    }
    diag("%s flood: %d connections opened from 127.0.0.1 in %.2f s; 127.0.0.2 served in at most %.3f s", what,
         opened, since(t0), worst);
    result(opened == count, "%s flood: 127.0.0.1 opened %d connections (limit 50)", what, opened);
    result(all_served && worst < 2.0,
           "%s flood: 127.0.0.2 is served promptly meanwhile (each in %.3f s at most; bound 2 s)", what,
           worst);
    /* Every one of them closes: the refused at once, the 50 admitted after --io-timeout 1
     * without HELLO. */
    long long until = raw_deadline(6);
    int open = opened, limit_seen = 0, timeout_seen = 0;
    char *gone = calloc((size_t)opened, 1);
    struct pollfd *p = calloc((size_t)opened, sizeof *p);
    while (open > 0 && gr_now_ns() < until) {
        int np = 0;
        int *map = malloc((size_t)opened * sizeof *map);
        for (int i = 0; i < opened; i++)
            if (!gone[i]) {
                p[np] = (struct pollfd){fds[i], POLLIN, 0};
                map[np++] = i;
            }
        int rc = poll(p, (nfds_t)np, 200);
        for (int k = 0; rc > 0 && k < np; k++) {
            if (!p[k].revents) continue;
            char buf[512];
            ssize_t got = recv(fds[map[k]], buf, sizeof buf, MSG_DONTWAIT);
            /* An ERROR: header (24 bytes after the fragment mark), then code 10 = LIMIT. */
            if (got >= 32 && buf[15] == GRP_ERROR && buf[31] == GRID_ERR_LIMIT) limit_seen++;
            if (got >= 32 && buf[15] == GRP_ERROR && buf[31] == GRID_ERR_TIMEOUT) timeout_seen++;
            if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) {
                gone[map[k]] = 1;
                open--;
            }
        }
        free(map);
    }
    diag(
        "%s flood: %d answered ERROR GRID_ERR_LIMIT, %d GRID_ERR_TIMEOUT (admitted, no HELLO); %d still open "
        "after %.1f s",
        what, limit_seen, timeout_seen, open, since(t0));
    result(open == 0, "%s flood: all %d connections are closed within 6 s (%d open)", what, opened, open);
    /* The admitted ones (50 at a time; more when a slot frees while the flood goes on)
     * are dropped for sending no HELLO; every other one is refused. */
    result(limit_seen + timeout_seen == opened && limit_seen >= opened - 50 * 4,
           "%s flood: each was told why: %d GRID_ERR_LIMIT (at least %d), %d GRID_ERR_TIMEOUT", what,
           limit_seen, opened - 200, timeout_seen);
    for (int i = 0; i < opened; i++)
        close(fds[i]);
    free(gone);
    free(p);
    free(fds);
    result(stop() == 0, "%s flood: exits 0 on SIGTERM", what);
}

/* ---------------------------------------------------------------- stalls */

/* COUNT connections each send 3 bytes of a record header and stall: with --io-timeout 8
 * every one is closed within a bound, and meanwhile (gridrpcd --threads 1) a call from
 * 127.0.0.2 still runs well before the timeout: no worker waits on them (a worker held
 * by one would hold the call until then, 8 s; the 3 s margin keeps a loaded TSan build,
 * which took over 2.5 s to accept the crowd and serve the call, from failing where
 * nothing is held). */
static void stall(const char *prog, const char *what, int count) {
    const double io = 8.0;
    char ios[16];
    snprintf(ios, sizeof ios, "%g", io);
    const char *args[] = {
        "--max-connections-per-address", "5000", "--io-timeout", ios, "--threads", "1", NULL};
    const char *margs[] = {"--max-connections-per-address", "5000", "--io-timeout", ios, NULL};
    if (start(prog, prog == gridrpcd ? args : margs) != 0) {
        result(0, "%s stall: starts", what);
        return;
    }
    int *fds = malloc((size_t)count * sizeof *fds), opened = 0;
    long long t0 = gr_now_ns();
    for (int i = 0; i < count; i++) {
        int fd = connect_from("127.0.0.1", 0);
        if (fd < 0) break;
        if (raw_send_all(fd, "\x80\x00\x00", 3) != 0) {
            close(fd);
            break;
        }
        fds[opened++] = fd;
    }
    double t_open = since(t0);
    /* A daemon slow to accept (sanitizers, a loaded machine) starts each timeout when it
     * accepts. Connections are accepted in order, so once a later one's HELLO is answered
     * every stalled one was accepted: the bound runs from then. */
    int probe = hello_from("127.0.0.3", NULL, NULL, 0, NULL);
    if (probe >= 0) {
        close(probe);
        t_open = since(t0);
    }
    int other = 1;
    if (prog == gridrpcd) {
        long long t1 = gr_now_ns();
        other = served("127.0.0.2") && since(t1) < io - 3.0;
        result(other, "%s stall: a call from 127.0.0.2 runs meanwhile (--threads 1: no worker is held)",
               what);
    }
    long long until = t0 + (long long)((t_open + io + 3.0) * 1e9); /* the timeout, then 3 s */
    int open = opened;
    char *gone = calloc((size_t)opened, 1);
    struct pollfd *p = calloc((size_t)opened, sizeof *p);
    int *map = malloc((size_t)opened * sizeof *map);
    /* Past the bound, what already arrived is still read (the check above may have taken
     * long), without waiting for more. */
    int busy = 1;
    while (open > 0 && (gr_now_ns() < until || busy)) {
        int np = 0;
        for (int i = 0; i < opened; i++)
            if (!gone[i]) {
                p[np] = (struct pollfd){fds[i], POLLIN, 0};
                map[np++] = i;
            }
        int rc = poll(p, (nfds_t)np, gr_now_ns() < until ? 100 : 0);
        busy = rc > 0;
        for (int k = 0; rc > 0 && k < np; k++) {
            if (!p[k].revents) continue;
            char buf[512];
            ssize_t got = recv(fds[map[k]], buf, sizeof buf, MSG_DONTWAIT);
            if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) {
                gone[map[k]] = 1;
                open--;
            }
        }
    }
    double took = since(t0);
    diag("%s stall: %d connections opened in %.2f s; %d open after %.2f s", what, opened, t_open, open, took);
    result(opened == count && open == 0,
           "%s stall: %d connections that sent 3 bytes and stalled are all closed within --io-timeout %g "
           "+ 3 s (%d of %d still open after %.2f s)",
           what, count, io, open, opened, took);
    for (int i = 0; i < opened; i++)
        close(fds[i]);
    free(gone);
    free(p);
    free(map);
    free(fds);
    result(stop() == 0, "%s stall: exits 0 on SIGTERM", what);
}

/* ---------------------------------------------------------------- calls */

/* --threads 1 --max-calls-per-connection 2 --max-calls 3: pipelined sleeps. */
static void call_counts(void) {
    const char *args[] = {"--threads", "1", "--max-calls-per-connection", "2", "--max-calls", "3", NULL};
    if (start(gridrpcd, args) != 0) {
        result(0, "calls: starts");
        return;
    }
    int a = hello_from("127.0.0.1", NULL, NULL, 0, NULL), b = hello_from("127.0.0.1", NULL, NULL, 0, NULL);
    uint64_t h = a >= 0 ? descriptor_hash(a, "sleep") : 0;
    int ok = a >= 0 && b >= 0 && h;
    /* A: two calls (one running, one waiting): the per-connection bound. */
    ok = ok && send_sleep(a, h, 0.4, 11) && send_sleep(a, h, 0.2, 12);
    pause_s(0.1);
    int code = 0;
    char msg[4096] = "";
    uint32_t t = ok && send_sleep(a, h, 0, 13) ? reply_for(a, 13, &code, msg, sizeof msg, 5) : 0;
    diag("A's 3rd call: %s", msg);
    result(
        t == GRP_ERROR && code == GRID_ERR_LIMIT && strstr(msg, "--max-calls-per-connection 2"),
        "calls: a 3rd call on one connection (2 waiting or running) gets GRID_ERR_LIMIT naming the option");
    /* B: one call makes 3 in all (the total bound); its second is one past. */
    uint32_t tb = ok && send_sleep(b, h, 0, 21) ? 1 : 0;
    code = 0;
    msg[0] = '\0';
    uint32_t t2 = tb && send_sleep(b, h, 0, 22) ? reply_for(b, 22, &code, msg, sizeof msg, 5) : 0;
    diag("B's 2nd call: %s", msg);
    result(t2 == GRP_ERROR && code == GRID_ERR_LIMIT && strstr(msg, "--max-calls 3"),
           "calls: a 4th call in all (3 waiting or running) gets GRID_ERR_LIMIT naming --max-calls");
    result(reply_for(a, 11, NULL, NULL, 0, 5) == GRP_RESULT &&
               reply_for(a, 12, NULL, NULL, 0, 5) == GRP_RESULT &&
               reply_for(b, 21, NULL, NULL, 0, 5) == GRP_RESULT,
           "calls: the 3 calls within the bounds are answered RESULT");
    /* Both connections go on: a new call each is served. */
    result(send_sleep(a, h, 0, 14) && reply_for(a, 14, NULL, NULL, 0, 5) == GRP_RESULT &&
               send_sleep(b, h, 0, 23) && reply_for(b, 23, NULL, NULL, 0, 5) == GRP_RESULT,
           "calls: after the refusals both connections go on (a new call each is answered)");
    if (a >= 0) close(a);
    if (b >= 0) close(b);
    result(stop() == 0, "calls: exits 0 on SIGTERM");
}

/* --max-call-memory: a sleep call (scalars only) counts its message's bytes: refused
 * under a limit of 1 byte, then two calls at exactly the bound and a third past it, and
 * the bound one byte lower. The refusals name the option and what to do, no figures. */
static void call_memory(void) {
    char lim[32];
    const char *args[] = {"--threads", "1", "--max-call-memory", lim, NULL};
    snprintf(lim, sizeof lim, "1");
    if (start(gridrpcd, args) != 0) {
        result(0, "call memory: starts");
        return;
    }
    int fd = hello_from("127.0.0.1", NULL, NULL, 0, NULL);
    uint64_t h = fd >= 0 ? descriptor_hash(fd, "sleep") : 0;
    int code = 0;
    char msg[4096] = "";
    uint64_t rec = h ? send_sleep(fd, h, 0, 1) : 0;
    uint32_t t = rec ? reply_for(fd, 1, &code, msg, sizeof msg, 5) : 0;
    /* A call of scalars only counts its message: the record as sent. */
    unsigned long long one = rec;
    diag("under 1 byte: %s", msg);
    result(t == GRP_ERROR && code == GRID_ERR_LIMIT && strstr(msg, "cannot run here") &&
               !strpbrk(msg, "0123456789"),
           "call memory: a call larger than the whole limit gets GRID_ERR_LIMIT saying it cannot run here, "
           "without the server's figures");
    result(ping(fd), "call memory: the connection goes on after the refusal");
    if (fd >= 0) close(fd);
    stop();
    if (!one) return;
    for (int lower = 0; lower <= 1; lower++) {
        snprintf(lim, sizeof lim, "%llu", 2 * one - (unsigned long long)lower);
        if (start(gridrpcd, args) != 0) {
            result(0, "call memory: starts with --max-call-memory %s", lim);
            continue;
        }
        fd = hello_from("127.0.0.1", NULL, NULL, 0, NULL);
        int ok = fd >= 0 && send_sleep(fd, h, 0.4, 1) && send_sleep(fd, h, 0, 2);
        pause_s(0.1);
        ok = ok && send_sleep(fd, h, 0, 3);
        int c2 = 0, c3 = 0;
        char m2[4096] = "", m3[4096] = "";
        /* Replies come as they are made: the refusals at once, the RESULTs later. */
        uint32_t t1 = 0, t2 = 0, t3 = 0;
        for (int k = 0; ok && k < 3; k++) {
            uint64_t id = 0;
            int cc = 0;
            char mm[4096] = "";
            uint32_t tt = read_reply(fd, &cc, mm, sizeof mm, &id, 5);
            if (id == 1) t1 = tt;
            if (id == 2) t2 = tt, c2 = cc, snprintf(m2, sizeof m2, "%s", mm);
            if (id == 3) t3 = tt, c3 = cc, snprintf(m3, sizeof m3, "%s", mm);
            if (!tt) break;
        }
        if (!lower) {
            diag("3rd call: %s", m3);
            result(
                t1 == GRP_RESULT && t2 == GRP_RESULT,
                "call memory: two calls of %llu bytes under --max-call-memory %s (at the bound) are served",
                one, lim);
            result(
                t3 == GRP_ERROR && c3 == GRID_ERR_LIMIT && strstr(m3, "--max-call-memory") &&
                    strstr(m3, "retry") && !strpbrk(m3, "0123456789"),
                "call memory: a third (one past) gets GRID_ERR_LIMIT saying to retry, without the figures");
        } else {
            diag("2nd call: %s", m2);
            result(t1 == GRP_RESULT && t2 == GRP_ERROR && c2 == GRID_ERR_LIMIT && c3 == GRID_ERR_LIMIT,
                   "call memory: under --max-call-memory %s (one byte less) the second call is one past and "
                   "refused, while the first runs",
                   lim);
        }
        if (fd >= 0) close(fd);
        stop();
    }
}

/* --max-array and --max-head at and one past their bound: echo_double of 1000 doubles
 * (8000 bytes) under --max-array 8000, then 1001; sleep's head of one double (8 bytes)
 * under --max-head 8, then 7. The refused call gets GRID_ERR_LIMIT, the connection goes on. */
static void sizes(void) {
    char head[16];
    const char *args[] = {"--max-array", "8000", "--max-head", head, NULL};
    for (int past = 0; past <= 1; past++) {
        snprintf(head, sizeof head, "%d", past ? 7 : 8);
        if (start(gridrpcd, args) != 0) {
            result(0, "sizes: starts");
            return;
        }
        int fd = hello_from("127.0.0.1", NULL, NULL, 0, NULL);
        grd_desc *d = fd >= 0 ? descriptor(fd, "echo_double") : NULL;
        uint64_t h = fd >= 0 ? descriptor_hash(fd, "sleep") : 0;
        int code = 0;
        char msg[4096] = "";
        if (!past) {
            result(d && echo(fd, d, 1000, &code, msg, sizeof msg) == GRP_RESULT,
                   "sizes: an array of 8000 bytes under --max-array 8000 is served");
            uint32_t t = d ? echo(fd, d, 1001, &code, msg, sizeof msg) : 0;
            diag("1001 doubles: %s", msg);
            result(t == GRP_ERROR && code == GRID_ERR_LIMIT && ping(fd),
                   "sizes: one of 8008 bytes gets GRID_ERR_LIMIT, the connection goes on");
            result(h && send_sleep(fd, h, 0, 5) && reply_for(fd, 5, NULL, NULL, 0, 5) == GRP_RESULT,
                   "sizes: a head of 8 bytes under --max-head 8 is served");
        } else {
            uint32_t t = h && send_sleep(fd, h, 0, 5) ? reply_for(fd, 5, &code, msg, sizeof msg, 5) : 0;
            diag("head under --max-head 7: %s", msg);
            result(t == GRP_ERROR && code == GRID_ERR_LIMIT && ping(fd),
                   "sizes: the same head under --max-head 7 gets GRID_ERR_LIMIT, the connection goes on");
        }
        grd_free(d);
        if (fd >= 0) close(fd);
        stop();
    }
}

/* A client that never reads its result: a result that large is sent by a thread of its
 * own (gsv_call.c), so the one worker (--threads 1) serves a call that comes meanwhile at
 * once; the write gives up after --io-timeout (plus the floor rate's second per MiB) and
 * the stuck connection is closed. */
static void slow_reader(void) {
    const char *args[] = {"--threads", "1", "--io-timeout", "1", NULL};
    if (start(gridrpcd, args) != 0) {
        result(0, "slow reader: starts");
        return;
    }
    small_rcvbuf = 4096;
    int fd = hello_from("127.0.0.1", NULL, NULL, 0, NULL);
    small_rcvbuf = 0;
    grd_desc *d = fd >= 0 ? descriptor(fd, "echo_double") : NULL;
    /* 8 MiB back: more than the server's socket send buffer (4 MiB at most by default)
     * and this one's small receive buffer hold; the write may take 1 + 8 s. */
    long long t_sent = gr_now_ns();
    int ok = d && echo_send(fd, d, 1 << 20) == 0;
    pause_s(0.3);
    int b = ok ? hello_from("127.0.0.2", NULL, NULL, 0, NULL) : -1;
    uint64_t h = b >= 0 ? descriptor_hash(b, "sleep") : 0;
    long long t0 = gr_now_ns();
    uint32_t t = h && send_sleep(b, h, 0, 8) ? reply_for(b, 8, NULL, NULL, 0, 20) : 0;
    double took = since(t0);
    /* A held worker would serve it only after the write's deadline (9 s): 7 leaves a
     * loaded TSan build room. */
    result(t == GRP_RESULT && took < 7,
           "slow reader: the stuck result holds no worker: a call from another client runs at once "
           "(after %.2f s)",
           took);
    /* The write gives up 1 s + 8 s (for 8 MiB) after it began, which a loaded machine
     * delays: wait, reading nothing (a drain before it gave up would let the write
     * finish), until the server's side of the connection is shut; then read fast: what
     * it had queued drains and its close shows. */
    int shut = ok && raw_peer_shut_within(fd, 60);
    diag("slow reader: the server shut the stuck connection %.1f s after the call was sent", since(t_sent));
    int big = 4 << 20;
    if (fd >= 0) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    result(shut && since(t_sent) > 9 && raw_closed_within(fd, 10),
           "slow reader: the stuck connection is closed, after the write's deadline");
    result(served("127.0.0.3"), "slow reader: afterwards a new client is served");
    grd_free(d);
    if (fd >= 0) close(fd);
    if (b >= 0) close(b);
    result(stop() == 0, "slow reader: exits 0 on SIGTERM");
}

/* --max-sessions-per-connection 2: DATA_PUT in sessions 1 and 2 is kept, in a third
 * session refused (GRID_ERR_LIMIT naming the option), in session 1 again kept. */
static void sessions(void) {
    const char *args[] = {"--max-sessions-per-connection", "2", NULL};
    if (start(gridrpcd, args) != 0) {
        result(0, "sessions: starts");
        return;
    }
    int fd = hello_from("127.0.0.1", NULL, NULL, 0, NULL);
    double v = 1.5;
    uint32_t t[4] = {0};
    int code = 0;
    char msg[4096] = "";
    const uint64_t session[4] = {11, 12, 13, 11};
    for (int i = 0; fd >= 0 && i < 4; i++) {
        gr_err e;
        grp_data_id d = {session[i], 1};
        grw_writer_init(&wr, fd);
        if (grp_write_data_put(&wr, 40 + (uint64_t)i, d, GRD_DOUBLE, 1, &v, &e) == 0)
            t[i] = reply_for(fd, 40 + (uint64_t)i, i == 2 ? &code : NULL, i == 2 ? msg : NULL, sizeof msg, 5);
    }
    diag("a third session: %s", msg);
    result(t[0] == GRP_DATA_OK && t[1] == GRP_DATA_OK,
           "sessions: data in 2 sessions on one connection (the bound) is kept");
    result(t[2] == GRP_ERROR && code == GRID_ERR_LIMIT && strstr(msg, "--max-sessions-per-connection 2"),
           "sessions: a third session gets GRID_ERR_LIMIT naming the option");
    result(t[3] == GRP_DATA_OK && ping(fd), "sessions: the connection goes on, in a session it already uses");
    if (fd >= 0) close(fd);
    result(stop() == 0, "sessions: exits 0 on SIGTERM");
}

/* --idle-timeout 1 and remote data: a connection whose session holds data is kept past
 * the timeout (closing it would start the data's grace period); once SESSION_END freed
 * it, the connection is idle and closes. */
static void idle_data(void) {
    const char *args[] = {"--idle-timeout", "1", NULL};
    if (start(gridrpcd, args) != 0) {
        result(0, "idle data: starts");
        return;
    }
    int fd = hello_from("127.0.0.1", NULL, NULL, 0, NULL);
    double v = 2.5;
    gr_err e;
    grp_data_id d = {21, 1};
    grw_writer_init(&wr, fd);
    int ok = fd >= 0 && grp_write_data_put(&wr, 50, d, GRD_DOUBLE, 1, &v, &e) == 0 &&
             reply_for(fd, 50, NULL, NULL, 0, 5) == GRP_DATA_OK;
    pause_s(1.8);
    result(ok && ping(fd), "idle data: a connection whose session holds data is kept past --idle-timeout 1");
    grw_writer_init(&wr, fd);
    ok = ok && grp_write_session_end(&wr, 51, 21, &e) == 0 &&
         reply_for(fd, 51, NULL, NULL, 0, 5) == GRP_DATA_OK;
    long long t0 = gr_now_ns();
    int closed = ok && raw_closed_within(fd, 4);
    result(closed, "idle data: after SESSION_END it is idle, and closed (%.2f s)", since(t0));
    if (fd >= 0) close(fd);
    result(stop() == 0, "idle data: exits 0 on SIGTERM");
}

/* gr_connlimit itself: IPv4-mapped IPv6 counts as its IPv4 address, other IPv6
 * addresses one by one, the total over all, and a release frees the place. */
static void connlimit_unit(void) {
    gr_connlimit *l = gr_connlimit_new(5, 2);
    struct sockaddr_in v4 = {0};
    v4.sin_family = AF_INET;
    inet_pton(AF_INET, "192.0.2.7", &v4.sin_addr);
    struct sockaddr_in6 mapped = {0}, a6 = {0}, b6 = {0};
    mapped.sin6_family = a6.sin6_family = b6.sin6_family = AF_INET6;
    inet_pton(AF_INET6, "::ffff:192.0.2.7", &mapped.sin6_addr);
    inet_pton(AF_INET6, "2001:db8::1", &a6.sin6_addr);
    inet_pton(AF_INET6, "2001:db8::2", &b6.sin6_addr);
    unsigned open = 0;
    int r1 = gr_connlimit_admit(l, (struct sockaddr *)&v4, &open);
    int r2 = gr_connlimit_admit(l, (struct sockaddr *)&mapped, &open);
    int r3 = gr_connlimit_admit(l, (struct sockaddr *)&v4, &open);
    result(r1 == GR_CONN_OK && r2 == GR_CONN_OK && r3 == GR_CONN_PER_ADDR && open == 2,
           "connlimit: ::ffff:192.0.2.7 counts as 192.0.2.7 (the third of 2 refused)");
    int r4 = gr_connlimit_admit(l, (struct sockaddr *)&a6, &open);
    int r5 = gr_connlimit_admit(l, (struct sockaddr *)&a6, &open);
    int r6 = gr_connlimit_admit(l, (struct sockaddr *)&b6, &open);
    result(r4 == GR_CONN_OK && r5 == GR_CONN_OK && r6 == GR_CONN_OK && gr_connlimit_open(l) == 5,
           "connlimit: 2001:db8::1 and ::2 count apart");
    int r7 = gr_connlimit_admit(l, (struct sockaddr *)&b6, &open);
    result(r7 == GR_CONN_TOTAL && open == 5, "connlimit: a sixth connection is over the total of 5");
    gr_connlimit_release(l, (struct sockaddr *)&mapped);
    int r8 = gr_connlimit_admit(l, (struct sockaddr *)&v4, &open);
    result(r8 == GR_CONN_OK, "connlimit: a release frees the place for the same address");
    char text[64];
    gr_connlimit_key_text((struct sockaddr *)&mapped, text, sizeof text);
    result(strcmp(text, "192.0.2.7") == 0, "connlimit: a mapped address is named as IPv4 (%s)", text);
    gr_connlimit_free(l);
}

/* ---------------------------------------------------------------- timeouts */

/* HELLO within --io-timeout; a half CALL that stalls holds no worker; --idle-timeout. */
static void timeouts(void) {
    const char *args[] = {"--threads", "1", "--io-timeout", "1", "--idle-timeout", "1", NULL};
    if (start(gridrpcd, args) != 0) {
        result(0, "timeouts: starts");
        return;
    }
    /* No HELLO at all: ERROR TIMEOUT and closed after --io-timeout. */
    int fd = connect_from("127.0.0.1", 0);
    long long t0 = gr_now_ns();
    int code = 0;
    char msg[4096] = "";
    uint32_t t = fd >= 0 ? read_reply(fd, &code, msg, sizeof msg, NULL, 5) : 0;
    double took = since(t0);
    int closed = fd >= 0 && raw_closed_within(fd, 3);
    diag("silent connection: %s after %.2f s", msg, took);
    result(t == GRP_ERROR && code == GRID_ERR_TIMEOUT && closed && took >= 0.9 && took < 3,
           "timeouts: a connection that sends no HELLO gets ERROR GRID_ERR_TIMEOUT and is closed after "
           "--io-timeout 1 (%.2f s)",
           took);
    if (fd >= 0) close(fd);

    /* A few bytes late, then a stall: HELLO is still due --io-timeout after connecting,
     * not after the first byte (which would give 0.9 + 1 s). */
    fd = connect_from("127.0.0.1", 0);
    t0 = gr_now_ns();
    pause_s(0.9);
    int sent = fd >= 0 && raw_send_all(fd, "\x80\x00\x00", 3) == 0;
    closed = sent && raw_closed_within(fd, 5);
    took = since(t0);
    result(closed && took < 1.8,
           "timeouts: a connection whose first bytes come late and stall is closed --io-timeout 1 after "
           "connecting (%.2f s)",
           took);
    if (fd >= 0) close(fd);

    /* Half a CALL, then a stall: another client's call still runs on the one worker. */
    int a = hello_from("127.0.0.1", NULL, NULL, 0, NULL);
    uint64_t h = a >= 0 ? descriptor_hash(a, "sleep") : 0;
    gr_err e;
    grw_writer_init(&wr, a);
    int ok = h && !grw_begin(&wr, GRP_CALL, 0, 5, &e) && !grw_write_string(&wr, "test/sleep", &e) &&
             !grw_write_u64(&wr, h, &e) && !grw_write_u32(&wr, 8, &e);
    /* Flush what is buffered as an unfinished fragment: header and 4 of its bytes. */
    uint8_t frag[4 + 4096];
    size_t n = wr.len;
    if (ok && n <= 4096) {
        frag[0] = (uint8_t)(0x00);
        frag[1] = (uint8_t)((n + 100) >> 16);
        frag[2] = (uint8_t)((n + 100) >> 8);
        frag[3] = (uint8_t)(n + 100);
        memcpy(frag + 4, wr.buf + 4, n);
        ok = raw_send_all(a, frag, 4 + n) == 0;
    }
    t0 = gr_now_ns();
    int other = ok && served("127.0.0.2");
    double t_other = since(t0);
    result(other && t_other < 0.9,
           "timeouts: while a half CALL stalls, another client's call runs at once (%.3f s, --threads 1)",
           t_other);
    result(ok && raw_closed_within(a, 4), "timeouts: the stalled half CALL is dropped (--io-timeout 1)");
    if (a >= 0) close(a);

    /* Idle: a connection that holds nothing closes after --idle-timeout 1. */
    fd = hello_from("127.0.0.1", NULL, NULL, 0, NULL);
    t0 = gr_now_ns();
    closed = fd >= 0 && raw_closed_within(fd, 4);
    took = since(t0);
    result(closed && took >= 0.9, "timeouts: an idle connection is closed after --idle-timeout 1 (%.2f s)",
           took);
    if (fd >= 0) close(fd);

    /* One with a call running for 2.5 s is not idle: it stays until the RESULT came. */
    fd = hello_from("127.0.0.1", NULL, NULL, 0, NULL);
    t0 = gr_now_ns();
    ok = fd >= 0 && h && send_sleep(fd, h, 2.5, 7);
    pause_s(1.5); /* past --idle-timeout: the connection still reads requests */
    int pong = ok && ping(fd);
    ok = ok && reply_for(fd, 7, NULL, NULL, 0, 6) == GRP_RESULT;
    took = since(t0);
    result(ok && pong && took >= 2.4,
           "timeouts: a connection with a call running past --idle-timeout is kept: it answers PING, then "
           "the RESULT comes (%.2f s)",
           took);
    t0 = gr_now_ns();
    closed = ok && raw_closed_within(fd, 4);
    result(closed, "timeouts: ... and closed once idle afterwards (%.2f s)", since(t0));
    if (fd >= 0) close(fd);

    /* The client library: a pooled connection the server closed is noticed before reuse. */
    char name[128];
    snprintf(name, sizeof name, "gridrpc://127.0.0.1:%d/test/sleep", port);
    grid_stats_np s0, s1;
    grid_get_stats_np(&s0);
    int rc1 = grid_call(name, 0.0);
    pause_s(1.6); /* past --idle-timeout: the server closes the pooled connection */
    int rc2 = grid_call(name, 0.0);
    int rc3 = grid_call(name, 0.0);
    grid_get_stats_np(&s1);
    long conns = s1.connections_opened - s0.connections_opened;
    if (rc2) diag("second call: %s", grid_last_error());
    result(rc1 == GRID_OK && rc2 == GRID_OK && rc3 == GRID_OK && conns == 2,
           "timeouts: the client reuses its pooled connection, notices the server closed it when idle, and "
           "reconnects without failing a call (%ld connections for 3 calls)",
           conns);
    /* Asynchronous calls share one pipelined connection per server: after the server
     * closed it as idle, the next call opens another. */
    int id1 = grid_call_async(name, 0.0);
    int w1 = id1 > 0 ? grid_wait(id1) : -id1;
    pause_s(1.6);
    int id2 = grid_call_async(name, 0.0);
    int w2 = id2 > 0 ? grid_wait(id2) : -id2;
    if (w2) diag("second async call: %s", grid_last_error());
    result(w1 == GRID_OK && w2 == GRID_OK,
           "timeouts: an asynchronous call after the server closed the idle connection succeeds");
    grid_reset_np();
    result(stop() == 0, "timeouts: exits 0 on SIGTERM");
}

/* ---------------------------------------------------------------- the close race */

/* A relay between the client library and gridrpcd that, when told, closes a client's
 * connection that is already known (it carried a call) as soon as the next request
 * arrives on it, unread and unforwarded: what the client sees when the server's
 * --idle-timeout fires just as a pooled connection is reused. */
enum { RELAY_MAX = 16 };
static struct {
    int listen_fd, port, stop;
    int drop_next; /* under __atomic: close the next reused connection's request */
    int dropped;
    int cfd[RELAY_MAX], sfd[RELAY_MAX], used[RELAY_MAX];
} relay;

static void *relay_main(void *arg) {
    (void)arg;
    while (!__atomic_load_n(&relay.stop, __ATOMIC_RELAXED)) {
        struct pollfd p[1 + 2 * RELAY_MAX];
        int who[1 + 2 * RELAY_MAX], n = 0;
        p[n] = (struct pollfd){relay.listen_fd, POLLIN, 0};
        who[n++] = -1;
        for (int i = 0; i < RELAY_MAX; i++)
            if (relay.cfd[i] >= 0) {
                p[n] = (struct pollfd){relay.cfd[i], POLLIN, 0};
                who[n++] = i;
                p[n] = (struct pollfd){relay.sfd[i], POLLIN, 0};
                who[n++] = RELAY_MAX + i;
            }
        if (poll(p, (nfds_t)n, 50) <= 0) continue;
        if (p[0].revents & POLLIN) {
            int c = accept(relay.listen_fd, NULL, NULL);
            int k = 0;
            while (k < RELAY_MAX && relay.cfd[k] >= 0)
                k++;
            gr_err e;
            int sv = c >= 0 && k < RELAY_MAX ? grw_connect("127.0.0.1", port, 5, &e) : -1;
            if (sv < 0) {
                if (c >= 0) close(c);
            } else {
                relay.cfd[k] = c;
                relay.sfd[k] = sv;
                relay.used[k] = 0;
            }
        }
        for (int j = 1; j < n; j++) {
            if (!p[j].revents) continue;
            int i = who[j] % RELAY_MAX, from_client = who[j] < RELAY_MAX;
            if (relay.cfd[i] < 0) continue;
            if (from_client && relay.used[i] && __atomic_exchange_n(&relay.drop_next, 0, __ATOMIC_RELAXED)) {
                __atomic_add_fetch(&relay.dropped, 1, __ATOMIC_RELAXED); /* before the client can see it */
                close(relay.cfd[i]); /* unread input: the client sees a reset */
                close(relay.sfd[i]);
                relay.cfd[i] = relay.sfd[i] = -1;
                continue;
            }
            char buf[65536];
            ssize_t k = recv(p[j].fd, buf, sizeof buf, 0);
            if (k <= 0 || raw_send_all(from_client ? relay.sfd[i] : relay.cfd[i], buf, (size_t)k) != 0) {
                close(relay.cfd[i]);
                close(relay.sfd[i]);
                relay.cfd[i] = relay.sfd[i] = -1;
                continue;
            }
            /* A reply went back: the connection has carried a request. */
            if (!from_client) relay.used[i] = 1;
        }
    }
    for (int i = 0; i < RELAY_MAX; i++)
        if (relay.cfd[i] >= 0) {
            close(relay.cfd[i]);
            close(relay.sfd[i]);
        }
    return NULL;
}

/* The client library, on a pooled connection the server closes as a call leaves on it:
 * the call goes again on a new connection and succeeds. */
static void close_race(void) {
    if (start(gridrpcd, NULL) != 0) {
        result(0, "close race: the server starts");
        return;
    }
    for (int i = 0; i < RELAY_MAX; i++)
        relay.cfd[i] = relay.sfd[i] = -1;
    relay.listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {0};
    socklen_t al = sizeof a;
    a.sin_family = AF_INET;
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    pthread_t t;
    int ok = relay.listen_fd >= 0 && bind(relay.listen_fd, (struct sockaddr *)&a, sizeof a) == 0 &&
             listen(relay.listen_fd, 16) == 0 &&
             getsockname(relay.listen_fd, (struct sockaddr *)&a, &al) == 0 &&
             pthread_create(&t, NULL, relay_main, NULL) == 0;
    if (!ok) {
        result(0, "close race: the relay starts");
        stop();
        return;
    }
    char name[128];
    snprintf(name, sizeof name, "gridrpc://127.0.0.1:%d/test/sleep", ntohs(a.sin_port));
    grid_reset_np();
    grid_stats_np s0, s1;
    grid_get_stats_np(&s0);
    int rc1 = grid_call(name, 0.0);
    __atomic_store_n(&relay.drop_next, 1, __ATOMIC_RELAXED);
    int rc2 = grid_call(name, 0.0);
    if (rc2) diag("the call on the closed connection: %s", grid_last_error());
    grid_get_stats_np(&s1);
    long conns = s1.connections_opened - s0.connections_opened;
    int dropped = __atomic_load_n(&relay.dropped, __ATOMIC_RELAXED);
    result(rc1 == GRID_OK && rc2 == GRID_OK && dropped == 1 && conns == 2,
           "close race: a call on a pooled connection closed as it leaves goes again on a new one and "
           "succeeds (%d dropped, %ld connections)",
           dropped, conns);
    grid_reset_np();
    __atomic_store_n(&relay.stop, 1, __ATOMIC_RELAXED);
    pthread_join(t, NULL);
    close(relay.listen_fd);
    result(stop() == 0, "close race: exits 0 on SIGTERM");
}

/* Through a metaserver with --idle-timeout 1: the client's metaserver connection is
 * closed while it waits between calls; the next call reconnects, with no warning that
 * the metaserver is unreachable; the server's own registration connection is kept. */
static void meta_idle(void) {
    const char *margs[] = {"--idle-timeout", "1", "--heartbeat", "200ms", NULL};
    if (start(gridmetad, margs) != 0) {
        result(0, "metaserver idle: gridmetad starts");
        return;
    }
    pid_t mpid = server_pid;
    int mport = port;
    char meta[64];
    snprintf(meta, sizeof meta, "127.0.0.1:%d", mport);
    const char *sargs[] = {"--metaserver", meta, "--speed", "1e9", NULL};
    if (start(gridrpcd, sargs) != 0) {
        result(0, "metaserver idle: gridrpcd starts");
        server_pid = mpid;
        stop();
        return;
    }
    pid_t spid = server_pid;
    setenv("GRIDRPC_METASERVER", meta, 1);
    setenv("GRIDRPC_QUIET", "0", 1);
    unsetenv("GRIDRPC_SERVER");
    grid_reset_np();
    /* Warnings go to stderr: keep them in a file for the check. */
    char errs[] = "/tmp/conn-limits-meta.XXXXXX";
    int efd = mkstemp(errs), saved = dup(2);
    fflush(stderr);
    if (efd >= 0) dup2(efd, 2);
    int rc1 = GRID_ERR_NOT_FOUND;
    for (int i = 0; i < 50 && rc1 != GRID_OK; i++) { /* until the server registered */
        rc1 = grid_call("test/sleep", 0.0);
        if (rc1) pause_s(0.1);
    }
    pause_s(1.6); /* past --idle-timeout: gridmetad closes the client's connection */
    int rc2 = grid_call("test/sleep", 0.0);
    pause_s(1.6);
    int rc3 = grid_call("test/sleep", 0.0);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char text[4096] = "";
    ssize_t k = efd >= 0 ? pread(efd, text, sizeof text - 1, 0) : 0;
    if (k > 0) text[k] = '\0';
    if (efd >= 0) close(efd);
    unlink(errs);
    if (text[0]) diag("client stderr: %s", text);
    result(
        rc1 == GRID_OK && rc2 == GRID_OK && rc3 == GRID_OK && !strstr(text, "unreachable"),
        "metaserver idle: calls through a metaserver that closes idle clients reconnect without a warning");
    unsetenv("GRIDRPC_METASERVER");
    grid_reset_np();
    result(stop() == 0, "metaserver idle: gridrpcd exits 0 on SIGTERM");
    server_pid = mpid;
    result(stop() == 0, "metaserver idle: gridmetad exits 0 on SIGTERM");
    (void)spid;
}

/* A call the metaserver places on a server that refuses the connection (over
 * --max-connections) goes to another server: two servers, one full (its only
 * connection held by a raw client), round-robin placement, every call succeeds. */
static void meta_full(void) {
    const char *margs[] = {"--scheduler", "round-robin", "--heartbeat", "200ms", NULL};
    if (start(gridmetad, margs) != 0) {
        result(0, "full server: gridmetad starts");
        return;
    }
    pid_t mpid = server_pid;
    int mport = port;
    char meta[64];
    snprintf(meta, sizeof meta, "127.0.0.1:%d", port);
    const char *fargs[] = {"--metaserver", meta, "--speed",           "1e9", "--name", "full",
                           "--threads",    "1",  "--max-connections", "1",   NULL};
    const char *oargs[] = {"--metaserver", meta, "--speed", "1e9", "--name", "open", "--threads", "1", NULL};
    pid_t fpid = 0, opid = 0;
    int held = -1;
    if (start(gridrpcd, fargs) == 0) {
        fpid = server_pid;
        held = hello_from("127.0.0.1", NULL, NULL, 0, NULL); /* its one connection */
    }
    if (start(gridrpcd, oargs) == 0) opid = server_pid;
    int ok = fpid && opid && held >= 0;
    /* Until both registered: the metaserver's PONG sums the workers of the servers up. */
    unsigned workers = 0;
    port = mport;
    for (int i = 0; ok && i < 100 && workers < 2; i++) {
        int m = hello_from("127.0.0.1", NULL, NULL, 0, NULL);
        gr_err e;
        grw_header hd;
        grp_pong pong;
        grw_writer_init(&wr, m);
        if (m >= 0 && !grw_begin(&wr, GRP_PING, 0, 3, &e) && !grw_finish(&wr, &e)) {
            grw_reader_init(&rd, m, 1 << 20);
            rd.deadline_ns = raw_deadline(5);
            if (!grw_read_header(&rd, &hd, &e) && hd.type == GRP_PONG && !grp_read_pong(&rd, &pong, &e))
                workers = pong.workers;
        }
        if (m >= 0) close(m);
        if (workers < 2) pause_s(0.1);
    }
    ok = ok && workers == 2;
    setenv("GRIDRPC_METASERVER", meta, 1);
    unsetenv("GRIDRPC_SERVER");
    setenv("GRIDRPC_QUIET", "1", 1);
    grid_reset_np();
    int fails = 0;
    char last[512] = "";
    for (int i = 0; ok && i < 6; i++) {
        int rc = grid_call("test/sleep", 0.0);
        if (rc) {
            fails++;
            snprintf(last, sizeof last, "%s", grid_last_error());
        }
    }
    if (fails) diag("a failed call: %s", last);
    result(
        ok && fails == 0,
        "full server: calls placed on a server over --max-connections go to the other one (%d of 6 failed)",
        fails);
    unsetenv("GRIDRPC_METASERVER");
    unsetenv("GRIDRPC_QUIET");
    grid_reset_np();
    if (held >= 0) close(held);
    int st = 0;
    if (opid) {
        server_pid = opid;
        st |= stop();
    }
    if (fpid) {
        server_pid = fpid;
        st |= stop();
    }
    server_pid = mpid;
    st |= stop();
    result(st == 0, "full server: the daemons exit 0 on SIGTERM");
}

/* gridmetad: a HELLO'd client connection closes after --idle-timeout; none without HELLO. */
static void meta_timeouts(void) {
    const char *args[] = {"--io-timeout", "1", "--idle-timeout", "1", NULL};
    if (start(gridmetad, args) != 0) {
        result(0, "gridmetad timeouts: starts");
        return;
    }
    int fd = connect_from("127.0.0.1", 0);
    long long t0 = gr_now_ns();
    int code = 0;
    uint32_t t = fd >= 0 ? read_reply(fd, &code, NULL, 0, NULL, 5) : 0;
    double took = since(t0);
    result(t == GRP_ERROR && code == GRID_ERR_TIMEOUT && took >= 0.9 && took < 3,
           "gridmetad: no HELLO within --io-timeout 1: ERROR GRID_ERR_TIMEOUT (%.2f s)", took);
    if (fd >= 0) close(fd);
    fd = hello_from("127.0.0.1", NULL, NULL, 0, NULL);
    t0 = gr_now_ns();
    int closed = fd >= 0 && ping(fd) && raw_closed_within(fd, 4);
    took = since(t0);
    result(closed && took >= 0.9,
           "gridmetad: an idle client connection is closed after --idle-timeout 1 (%.2f s)", took);
    if (fd >= 0) close(fd);
    result(stop() == 0, "gridmetad timeouts: exits 0 on SIGTERM");
}

int main(void) {
    static char dpath[4096], mpath[4096], gpath[4096];
    gridrpcd = raw_build_program("GRIDRPCD", "gridrpcd", dpath, sizeof dpath);
    gridmetad = raw_build_program("GRIDMETAD", "gridmetad", gpath, sizeof gpath);
    module = raw_test_module(mpath, sizeof mpath);
    if (access(module, R_OK) != 0 || access(gridrpcd, X_OK) != 0 || access(gridmetad, X_OK) != 0) {
        printf("# SKIP: gridrpcd, gridmetad or the test module '%s' is not built\n", module);
        return 77;
    }
    signal(SIGPIPE, SIG_IGN);
    if (!mkdtemp(job_dir)) {
        printf("# cannot make a temporary folder: %s\n", strerror(errno));
        return 1;
    }
    /* 127.0.0.2 and .3 are loopback too on Linux; check once. */
    int probe = connect_from("127.0.0.2", 1);
    if (probe < 0) {
        printf("# SKIP: cannot use 127.0.0.2 as a source address\n");
        return 77;
    }
    close(probe);
    /* The flood and the stall need more descriptors than the usual 1024 (the daemons
     * raise their own limit; this one raises the test's, inherited by them). */
    struct rlimit r;
    getrlimit(RLIMIT_NOFILE, &r);
    rlim_t want = 2600;
    if (r.rlim_cur < want && (r.rlim_max == RLIM_INFINITY || r.rlim_max >= want)) {
        r.rlim_cur = want;
        setrlimit(RLIMIT_NOFILE, &r);
    }
    getrlimit(RLIMIT_NOFILE, &r);
    int big = r.rlim_cur >= want && !SANITIZED;
    if (!big)
        diag("RLIMIT_NOFILE is %lu%s: the flood and stall cases are smaller", (unsigned long)r.rlim_cur,
             SANITIZED ? " (or a sanitizer build)" : "");

    /* CONN_LIMITS_ONLY=NAME runs one case (a name below), for debugging. */
    const char *only = getenv("CONN_LIMITS_ONLY");
#define RUN(name, call)                                                                                      \
    if (!only || strcmp(only, name) == 0) call
    RUN("connlimit", connlimit_unit());
    RUN("limits", connection_limits(gridrpcd, "gridrpcd"));
    RUN("calls", call_counts());
    RUN("memory", call_memory());
    RUN("sizes", sizes());
    RUN("sessions", sessions());
    RUN("idle-data", idle_data());
    RUN("timeouts", timeouts());
    RUN("slowreader", slow_reader());
    RUN("race", close_race());
    RUN("flood", flood(gridrpcd, "gridrpcd", big ? 2000 : 400));
    RUN("stall", stall(gridrpcd, "gridrpcd", big ? 1000 : 400));
    RUN("meta-limits", connection_limits(gridmetad, "gridmetad"));
    RUN("meta-flood", flood(gridmetad, "gridmetad", big ? 2000 : 400));
    RUN("meta-stall", stall(gridmetad, "gridmetad", big ? 1000 : 400));
    RUN("meta-timeouts", meta_timeouts());
    RUN("meta-idle", meta_idle());
    RUN("meta-full", meta_full());
    char rm[128];
    snprintf(rm, sizeof rm, "rm -rf '%s'", job_dir);
    if (system(rm) != 0) diag("could not remove %s", job_dir);
    printf("1..%d\n", tests);
    return failed ? 1 : 0;
}
