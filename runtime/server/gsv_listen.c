/* gsv_listen.c: the listening socket and the accept loop. The loop also watches a
 * signalfd for SIGTERM and SIGINT, so a signal only ends the loop; all the shutdown
 * work happens afterwards on the main thread, none of it in a signal handler. */
#define _GNU_SOURCE /* accept4 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "gr_connlimit.h"
#include "gr_linger.h"
#include "grp_proto.h"
#include "gsv.h"

/* "host:port" of a socket address ("[v6]:port" for IPv6). */
static void format_addr(const struct sockaddr *sa, char *out, size_t len) {
    char host[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
        port = ntohs(in->sin_port);
        snprintf(out, len, "%s:%d", host, port);
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
        port = ntohs(in6->sin6_port);
        snprintf(out, len, "[%s]:%d", host, port);
    } else {
        snprintf(out, len, "?");
    }
}

int gsv_listen(gsv_server *s, gr_err *e) {
    struct addrinfo hints, *res = NULL, *ai;
    char port[16];
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    snprintf(port, sizeof port, "%d", s->opt.port);
    int rc = getaddrinfo(s->opt.host, port, &hints, &res);
    if (rc != 0)
        return gr_seterr(e, GRID_ERR_CONFIG, "--host '%s': cannot resolve the address: %s", s->opt.host,
                         gai_strerror(rc));
    int fd = -1, err = 0;
    for (ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) {
            err = errno;
            continue;
        }
        int one = 1;
        /* A restarted server must not wait for the old connections' TIME_WAIT. */
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, SOMAXCONN) == 0) break;
        err = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0)
        return gr_seterr(
            e, GRID_ERR_CONFIG, "cannot listen on %s:%d: %s%s", s->opt.host, s->opt.port, strerror(err),
            err == EADDRINUSE ? " (another server runs there? choose another --port, or 0 for any)" : "");
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    char where[INET6_ADDRSTRLEN + 16];
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
        format_addr((struct sockaddr *)&ss, where, sizeof where);
    else
        snprintf(where, sizeof where, "%s:%d", s->opt.host, s->opt.port);
    s->listen_fd = fd;
    /* Scripts and tests wait for exactly this line: print it only once ready. */
    printf("listening on %s\n", where);
    fflush(stdout);
    unsigned workers = s->opt.mode == GSV_MODE_POOL ? s->workers : 0;
    gsv_log(GSV_LOG_INFO, "listening on %s: %u function%s, %u worker%s%s, %u core%s, queue %s", where,
            s->reg.nfns, s->reg.nfns == 1 ? "" : "s", workers, workers == 1 ? "" : "s",
            s->opt.mode == GSV_MODE_POOL ? "" : " (thread per call)", s->cores, s->cores == 1 ? "" : "s",
            s->opt.queue == GSV_QUEUE_SJF ? "sjf" : "fcfs");
    return GRID_OK;
}

/* Refuses FD from PEER with MSG (gr_refuse), logging at most once a second. */
static void refuse(gr_linger *linger, gr_refusals *r, int fd, const char *peer, const char *msg) {
    unsigned n = gr_refuse(linger, r, fd, msg);
    if (n) gsv_log(GSV_LOG_WARN, "%s: refused (%u refused in the last second): %s", peer, n, msg);
}

/* Counts the connection from SA against --max-connections and
 * --max-connections-per-address; returns 0, or -1 with MSG saying which is full. */
static int admit(gsv_server *s, const struct sockaddr *sa, char *msg, size_t len) {
    unsigned open;
    int rc = gr_connlimit_admit(s->connlimit, sa, &open);
    if (rc == GR_CONN_OK) return 0;
    char addr[INET6_ADDRSTRLEN + 8];
    gr_connlimit_key_text(sa, addr, sizeof addr);
    if (rc == GR_CONN_TOTAL)
        snprintf(msg, len,
                 "the server has %u connections open, its limit (--max-connections %u): retry later, "
                 "close idle connections, or use another server",
                 open, s->opt.max_conns);
    else
        snprintf(msg, len,
                 "%s already has %u connections open to this server, the most one address may have "
                 "(--max-connections-per-address %u): close some (one connection carries many calls) "
                 "or retry later",
                 addr, open, s->opt.max_conns_per_addr);
    return -1;
}

void gsv_accept_loop(gsv_server *s, int sigfd) {
    long long last_complaint = 0;
    static gr_linger linger; /* large: not on the stack */
    static struct pollfd p[2 + GR_LINGER_MAX];
    gr_refusals refused = {0, 0};
    gr_linger_init(&linger);
    /* A descriptor kept in reserve: when the process runs out, it is given up for a
     * moment to accept the waiting peer and tell it why, rather than leave it hanging
     * in the listen queue where no timeout applies. */
    int spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
    for (;;) {
        p[0] = (struct pollfd){s->listen_fd, POLLIN, 0};
        p[1] = (struct pollfd){sigfd, POLLIN, 0};
        unsigned nl = gr_linger_fill(&linger, p + 2);
        int rc = poll(p, 2 + nl, gr_linger_timeout_ms(&linger));
        if (rc < 0) {
            if (errno == EINTR) continue;
            gsv_log(GSV_LOG_ERROR, "poll: %s", strerror(errno));
            break;
        }
        if (nl) gr_linger_service(&linger, p + 2, nl);
        if (p[1].revents & POLLIN) {
            struct signalfd_siginfo si;
            if (read(sigfd, &si, sizeof si) == (ssize_t)sizeof si)
                gsv_log(GSV_LOG_INFO, "%s received: shutting down (at most %g s for running calls)",
                        si.ssi_signo == SIGINT ? "SIGINT" : "SIGTERM", s->opt.shutdown_timeout);
            break;
        }
        if (!(p[0].revents & POLLIN)) continue;
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        int fd = accept4(s->listen_fd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC);
        if (fd < 0 && (errno == EMFILE || errno == ENFILE) && spare >= 0) {
            close(spare);
            sl = sizeof ss;
            fd = accept4(s->listen_fd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC);
            if (fd >= 0) {
                char peer[80], msg[300];
                format_addr((struct sockaddr *)&ss, peer, sizeof peer);
                snprintf(msg, sizeof msg,
                         "the server is out of file descriptors (%u connections open): retry later or use "
                         "another server",
                         gr_connlimit_open(s->connlimit));
                refuse(NULL, &refused, fd, peer, msg); /* no descriptor to spare for lingering */
                fd = -1;
                errno = EMFILE;
            }
            spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
        }
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED || errno == EAGAIN) continue;
            /* Out of descriptors or memory: say so once a second, back off, go on. */
            long long now = gr_now_ns();
            if (now - last_complaint > 1000000000LL) {
                gsv_log(GSV_LOG_ERROR, "cannot accept a connection: %s", strerror(errno));
                last_complaint = now;
            }
            struct timespec ts = {0, 50000000};
            nanosleep(&ts, NULL);
            continue;
        }
        char peer[80], msg[400];
        format_addr((struct sockaddr *)&ss, peer, sizeof peer);
        if (admit(s, (struct sockaddr *)&ss, msg, sizeof msg) != 0) {
            refuse(&linger, &refused, fd, peer, msg);
            continue;
        }
        grw_tune_socket(fd);
        gsv_conn_start(s, fd, peer, (struct sockaddr *)&ss, sl);
    }
    gr_linger_close_all(&linger);
    if (spare >= 0) close(spare);
    close(s->listen_fd);
    s->listen_fd = -1;
}
