/* raw_peer.h: what the tests that drive a real gridrpcd or gridmetad from raw sockets
 * share (server_hostile_test.c, limits_test.c, conn_limits_test.c, server_meta_test.c,
 * tests/data/data_server_test.c): starting the daemon and reading the port it listens
 * on, stopping it, a connection, sending bytes (raw_send.h), reading a reply's header (an ERROR's
 * code and text with it), a HELLO, and seeing the peer close. Header only, like
 * tap.h: each of these tests is one C file. */
#ifndef RAW_PEER_H
#define RAW_PEER_H

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "grp_types.h"
#include "grw_wire.h"
#include "raw_send.h"
#include "tap.h"

/* 1 in a sanitizer build, where every thread and allocation costs much more and the
 * shadow memory needs a large address space: a test makes its floods and stalls
 * smaller there (the same code paths, fewer of them) and limits no address space. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

/* The build's program NAME: $ENV if set, else $top_builddir/NAME (make check sets both),
 * in BUF of N bytes. */
static inline const char *raw_build_program(const char *env, const char *name, char *buf, size_t n) {
    const char *v = getenv(env), *top = getenv("top_builddir");
    if (v) return v;
    snprintf(buf, n, "%s/%s", top ? top : ".", name);
    return buf;
}

/* The test module (stubs/test.idl): $GRIDRPC_TEST_MODULES/test.so, else the build's. */
static inline const char *raw_test_module(char *buf, size_t n) {
    const char *dir = getenv("GRIDRPC_TEST_MODULES"), *top = getenv("top_builddir");
    if (dir)
        snprintf(buf, n, "%s/test.so", dir);
    else
        snprintf(buf, n, "%s/stubs/.libs/test.so", top ? top : ".");
    return buf;
}

static inline long long raw_deadline(double s) {
    return gr_now_ns() + (long long)(s * 1e9);
}

/* Forks and execs ARGV (ARGV[0]: the program, NULL-ended), its stdout into a pipe;
 * IN_CHILD(ARG), when not NULL, runs in the child first (its stderr, limits,
 * environment). Waits up to SECONDS for the daemon's first line, "listening on
 * HOST:PORT": returns PORT and sets *PID. -1 when it never came (diag says what came
 * instead; the child is killed and reaped). */
static inline int raw_spawn(const char *const *argv, void (*in_child)(void *), void *arg, double seconds,
                            pid_t *pid) {
    int out[2];
    if (pipe(out) < 0) return -1;
    fflush(stdout); /* the child must not print the TAP lines buffered so far again */
    pid_t child = fork();
    if (child < 0) return -1;
    if (child == 0) {
        if (in_child) in_child(arg);
        dup2(out[1], 1);
        close(out[0]);
        close(out[1]);
        execv(argv[0], (char *const *)argv);
        perror("exec");
        _exit(127);
    }
    close(out[1]);
    char line[256];
    size_t n = 0;
    long long until = raw_deadline(seconds);
    while (n < sizeof line - 1) {
        struct pollfd p = {out[0], POLLIN, 0};
        int ms = (int)((until - gr_now_ns()) / 1000000);
        if (ms <= 0 || poll(&p, 1, ms) <= 0) break;
        if (read(out[0], line + n, 1) != 1 || line[n] == '\n') break;
        n++;
    }
    line[n] = '\0';
    close(out[0]);
    const char *colon = strncmp(line, "listening on ", 13) == 0 ? strrchr(line, ':') : NULL;
    int port;
    if (!colon || sscanf(colon + 1, "%d", &port) != 1) {
        const char *name = strrchr(argv[0], '/');
        diag("%s did not print its listening line (got '%s')", name ? name + 1 : argv[0], line);
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
        return -1;
    }
    *pid = child;
    return port;
}

/* SIGTERM to PID, up to SECONDS for it to exit, then SIGKILL. Returns the seconds it
 * took to exit, or -1 when it had to be killed; *STATUS (when not NULL): its wait
 * status. */
static inline double raw_stop(pid_t pid, double seconds, int *status) {
    long long t0 = gr_now_ns(), until = raw_deadline(seconds);
    int st = 0;
    pid_t w;
    kill(pid, SIGTERM);
    while ((w = waitpid(pid, &st, WNOHANG)) == 0 && gr_now_ns() < until) {
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
    }
    double took = (double)(gr_now_ns() - t0) / 1e9;
    if (w == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
        took = -1;
    }
    if (status) *status = st;
    return took;
}

/* The exit status of a daemon stopped by raw_stop within SECONDS; -1 when it had to be
 * killed or did not exit by itself. */
static inline int raw_stop_status(pid_t pid, double seconds) {
    int st;
    if (raw_stop(pid, seconds, &st) < 0) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* A connection to 127.0.0.1:PORT; -1 (with a diag line) when there is none. */
static inline int raw_connect(int port) {
    gr_err e;
    int fd = grw_connect("127.0.0.1", port, 5, &e);
    if (fd < 0) diag("connect: %s", e.msg);
    return fd;
}

/* Reads one reply's header on FD with RD, and an ERROR's code into *CODE and text into
 * MSG; the rest of any other reply is left to read. KEEP: replies that came together
 * stay buffered for the next read on the same FD (else RD starts afresh). Returns the
 * reply's type (*ID: its request id); 0 when the connection closed or nothing came
 * within TIMEOUT seconds. */
static inline uint32_t raw_read_reply(grw_reader *rd, int fd, int keep, int *code, char *msg, size_t msglen,
                                      uint64_t *id, double timeout) {
    grw_header h;
    gr_err e;
    if (!keep || fd != rd->fd || !grw_has_buffered(rd)) grw_reader_init(rd, fd, 1 << 26);
    rd->deadline_ns = raw_deadline(timeout);
    if (grw_read_header(rd, &h, &e)) return 0;
    if (id) *id = h.request_id;
    if (h.type == GRP_ERROR) {
        uint32_t c;
        char *m = NULL;
        if (grw_read_u32(rd, &c, &e) || grw_read_string(rd, 4095, &m, &e)) return 0;
        if (code) *code = (int)c;
        if (msg) snprintf(msg, msglen, "%s", m);
        free(m);
    }
    return h.type;
}

/* 1 when the peer closes FD within TIMEOUT seconds (EOF or reset); what it sends
 * meanwhile is read and dropped. */
static inline int raw_closed_within(int fd, double timeout) {
    long long until = raw_deadline(timeout);
    char buf[4096];
    for (;;) {
        int ms = (int)((until - gr_now_ns()) / 1000000);
        if (ms <= 0) return 0;
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, ms) <= 0) return 0;
        ssize_t k = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR)) return 1;
    }
}

/* 1 once the peer of FD (an IPv4 connection) has shut its side: its socket, found in
 * /proc/net/tcp by the two addresses, is no longer ESTABLISHED (FIN_WAIT1 while the
 * data it queued still waits on this side's window, or gone); 0 if it still is after
 * TIMEOUT seconds. Tells a daemon that gave up on a stuck writer from one that is still
 * writing, without reading a byte (draining would let the write finish). */
static inline int raw_peer_shut_within(int fd, double timeout) {
    struct sockaddr_in me, peer;
    socklen_t n1 = sizeof me, n2 = sizeof peer;
    if (getsockname(fd, (struct sockaddr *)&me, &n1) != 0 ||
        getpeername(fd, (struct sockaddr *)&peer, &n2) != 0 || me.sin_family != AF_INET)
        return 0;
    /* /proc/net/tcp: "sl local rem st ...", addresses as %08X:%04X of the address as
     * stored (network order read as a host integer) and the port. */
    char local[32], remote[32];
    snprintf(local, sizeof local, "%08X:%04X", peer.sin_addr.s_addr, ntohs(peer.sin_port));
    snprintf(remote, sizeof remote, "%08X:%04X", me.sin_addr.s_addr, ntohs(me.sin_port));
    long long until = raw_deadline(timeout);
    while (gr_now_ns() < until) {
        FILE *f = fopen("/proc/net/tcp", "r");
        if (!f) return 0;
        char line[512], l[32], r[32];
        unsigned st;
        int found = 0, established = 0;
        while (fgets(line, sizeof line, f))
            if (sscanf(line, " %*s %31s %31s %x", l, r, &st) == 3 && !strcmp(l, local) &&
                !strcmp(r, remote)) {
                found = 1;
                established = st == 1;
            }
        fclose(f);
        if (!found || !established) return 1;
        struct timespec ts = {0, 50000000L};
        nanosleep(&ts, NULL);
    }
    return 0;
}

/* HELLO from client NAME, protocol versions GRW_VERSION to GRW_VERSION, no token,
 * written on FD with WR; 0 once written. */
static inline int raw_send_hello(grw_writer *wr, int fd, const char *name) {
    gr_err e;
    grw_writer_init(wr, fd);
    int rc = grw_begin(wr, GRP_HELLO, 0, 1, &e);
    if (!rc) rc = grw_write_string(wr, name, &e);
    if (!rc) rc = grw_write_u32(wr, GRW_VERSION, &e);
    if (!rc) rc = grw_write_u32(wr, GRW_VERSION, &e);
    if (!rc) rc = grw_write_string(wr, "", &e);
    if (!rc) rc = grw_finish(wr, &e);
    return rc;
}

#endif
