/* gms_net.c: gridmetad's listening socket, the accept loop (which also watches a
 * signalfd, so SIGTERM and SIGINT only end the loop and shutdown runs on the main
 * thread), and one thread per connection that reads each request's header and hands it
 * to gms_request.c. Connections are bounded in total (--max-connections) and per peer
 * address (--max-connections-per-address): beyond them a peer is answered ERROR
 * GRID_ERR_LIMIT from the accept loop without waiting on it, and closed. */
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

#include "gms.h"
#include "gr_connlimit.h"
#include "gr_linger.h"

void gms_format_addr(const struct sockaddr *sa, char *out, size_t len, char *hostonly, size_t hostlen) {
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
    if (hostonly) snprintf(hostonly, hostlen, "%s", host);
}

gms_net *gms_net_listen(gms_state *st, const gms_options *o, gr_err *e) {
    /* Bad certificate files stop the start, before anything listens. */
    grw_tls_ctx *tls = NULL;
    if (o->tls_cert && !(tls = grw_tls_server_ctx(o->tls_cert, o->tls_key, e))) return NULL;
    struct addrinfo hints, *res = NULL, *ai;
    char port[16];
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    snprintf(port, sizeof port, "%d", o->port);
    int rc = getaddrinfo(o->host, port, &hints, &res);
    if (rc != 0) {
        gr_seterr(e, GRID_ERR_CONFIG, "--host '%s': cannot resolve the address: %s", o->host,
                  gai_strerror(rc));
        grw_tls_ctx_free(tls);
        return NULL;
    }
    int fd = -1, err = 0;
    for (ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) {
            err = errno;
            continue;
        }
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, SOMAXCONN) == 0) break;
        err = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        gr_seterr(e, GRID_ERR_CONFIG, "cannot listen on %s:%d: %s%s", o->host, o->port, strerror(err),
                  err == EADDRINUSE ? " (another metaserver runs there? choose another --port, or 0 for any)"
                                    : "");
        grw_tls_ctx_free(tls);
        return NULL;
    }
    gms_net *n = calloc(1, sizeof *n);
    if (!n) {
        close(fd);
        grw_tls_ctx_free(tls);
        gr_seterr(e, GRID_ERR_NOMEM, "out of memory");
        return NULL;
    }
    n->tls = tls;
    n->st = st;
    n->opt = o;
    n->fd = fd;
    n->connlimit = gr_connlimit_new(o->max_conns, o->max_conns_per_addr);
    if (!n->connlimit) {
        close(fd);
        free(n);
        gr_seterr(e, GRID_ERR_NOMEM, "out of memory");
        return NULL;
    }
    /* Every connection holds a descriptor: make room for --max-connections of them. */
    unsigned long want = (unsigned long)o->max_conns + GR_LINGER_MAX + 64;
    unsigned long have = gr_raise_nofile(want);
    if (have < want)
        gms_log(GMS_LOG_WARN,
                "only %lu file descriptors may be open (ulimit -n; the hard limit): fewer than "
                "--max-connections %u needs (%lu); connections past that are refused",
                have, o->max_conns, want);
    pthread_mutex_init(&n->lock, NULL);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    char where[INET6_ADDRSTRLEN + 16];
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
        gms_format_addr((struct sockaddr *)&ss, where, sizeof where, NULL, 0);
    else
        snprintf(where, sizeof where, "%s:%d", o->host, o->port);
    /* Scripts and tests wait for exactly this line: print it only once ready. */
    printf("listening on %s\n", where);
    fflush(stdout);
    gms_log(GMS_LOG_INFO, "listening on %s: scheduler %s, heartbeat %u ms, down after %u missed", where,
            grp_policy_name((uint32_t)o->policy), o->heartbeat_ms, o->down_after);
    return n;
}

static long long io_deadline(const gms_conn *c, uint64_t bytes) {
    double t = c->net->opt->io_timeout;
    if (t <= 0) return 0;
    /* Large probes get time for their bytes at a floor of 1 MB/s. */
    return gr_now_ns() + (long long)((t + (double)bytes / 1e6) * 1e9);
}

grw_writer *gms_conn_writer(gms_conn *c, uint64_t bytes) {
    grw_writer_init(&c->w, c->fd);
    c->w.tls = c->tls;
    c->w.deadline_ns = io_deadline(c, bytes);
    return &c->w;
}

int gms_conn_send_error(gms_conn *c, uint64_t id, int code, const char *msg) {
    gr_err e;
    return grp_write_error(gms_conn_writer(c, 0), id, code, msg, &e) ? -1 : 0;
}

/* Waits for the next request's first byte: GMS_KEEP when it came, GMS_CLOSE (the peer
 * left, or an idle client) or GMS_REFUSE (no HELLO in time: ERROR sent). */
static int wait_request(gms_conn *c) {
    const gms_options *o = c->net->opt;
    long long since = gr_now_ns();
    for (;;) {
        long long until = 0;
        if (!c->hello_done && o->io_timeout > 0)
            until = c->hello_by;
        else if (c->hello_done && !c->server && o->idle_timeout > 0)
            until = since + (long long)(o->idle_timeout * 1e9);
        int ms = -1;
        if (until) {
            long long left = until - gr_now_ns();
            ms = left <= 0 ? 0 : left / 1000000 > 86400000 ? 86400000 : (int)(left / 1000000) + 1;
        }
        struct pollfd p = {c->fd, POLLIN, 0};
        int rc = poll(&p, 1, ms);
        if (rc > 0) return GMS_KEEP;
        if (rc < 0) {
            if (errno == EINTR) continue;
            return GMS_CLOSE;
        }
        if (gr_now_ns() < until) continue;
        if (!c->hello_done) {
            gms_log(GMS_LOG_WARN, "%s: dropped: no HELLO within %g s of connecting (--io-timeout)", c->peer,
                    o->io_timeout);
            gms_conn_send_error(c, 0, GRID_ERR_TIMEOUT,
                                "the metaserver timed out waiting for HELLO (--io-timeout): send HELLO at "
                                "once after connecting");
            return GMS_REFUSE;
        }
        if (c->server) {
            since = gr_now_ns();
            continue;
        }
        gms_log(GMS_LOG_DEBUG, "%s: closed: idle for %g s (--idle-timeout)", c->peer, o->idle_timeout);
        return GMS_CLOSE;
    }
}

static int serve_one(gms_conn *c) {
    grw_header h;
    memset(&h, 0, sizeof h);
    gr_err e;
    gr_clearerr(&e);
    /* Servers keep one connection open for their heartbeats; clients' connections wait
     * at most --idle-timeout for their next request, and HELLO must come within
     * --io-timeout of connecting. The I/O timeout runs from a request's first byte. */
    if (!grw_has_buffered(&c->r)) {
        int rc = wait_request(c);
        if (rc != GMS_KEEP) return rc;
    }
    c->r.deadline_ns = io_deadline(c, 0);
    int rc = grp_read_header(&c->r, &h, &e);
    if (rc) {
        if (rc == GRID_ERR_CONN_LOST) return GMS_CLOSE;
        if (rc != GRID_ERR_PROTOCOL || h.magic != GRW_MAGIC || h.version != GRW_VERSION) h.request_id = 0;
        gms_log(GMS_LOG_WARN, "%s: closing the connection: %s", c->peer, e.msg);
        gms_conn_send_error(c, h.request_id,
                            rc == GRID_ERR_LIMIT || rc == GRID_ERR_TIMEOUT ? rc : GRID_ERR_PROTOCOL, e.msg);
        return GMS_REFUSE;
    }
    if (!c->hello_done && h.type != GRW_HELLO) {
        char msg[160];
        snprintf(msg, sizeof msg, "the first message on a connection must be HELLO, not %s (type %u)",
                 grw_type_name(h.type), h.type);
        gms_log(GMS_LOG_WARN, "%s: closing the connection: %s", c->peer, msg);
        gms_conn_send_error(c, h.request_id, GRID_ERR_PROTOCOL, msg);
        return GMS_REFUSE;
    }
    return gms_request_serve(c, &h);
}

/* After an error, read what the peer still sends for a moment before closing, so the
 * close does not reset the connection and destroy the ERROR before it is read. */
static void linger(gms_conn *c) {
    shutdown(c->fd, SHUT_WR);
    char sink[4096];
    long long until = gr_now_ns() + 500000000LL;
    size_t total = 0;
    while (total < (1u << 20)) {
        long long left = until - gr_now_ns();
        if (left <= 0) break;
        struct pollfd p = {c->fd, POLLIN, 0};
        int rc = poll(&p, 1, (int)(left / 1000000) + 1);
        if (rc < 0 && errno == EINTR) continue;
        if (rc <= 0) break;
        ssize_t k = read(c->fd, sink, sizeof sink);
        if (k <= 0) break;
        total += (size_t)k;
    }
}

static void forget(gms_conn *c) {
    gms_net *n = c->net;
    pthread_mutex_lock(&n->lock);
    if (c->prev)
        c->prev->next = c->next;
    else
        n->conns = c->next;
    if (c->next) c->next->prev = c->prev;
    /* Before the count drops: at 0, gms_net_free may free N and its connection counts. */
    gr_connlimit_release(n->connlimit, (const struct sockaddr *)&c->addr);
    n->nconns--;
    pthread_mutex_unlock(&n->lock);
    grw_tls_free(c->tls);
    close(c->fd);
    free(c);
}

/* A TLS listener's handshake, on the connection's thread, within the I/O timeout (60 s
 * without one). A peer that spoke plain GridRPC is told, in plain GridRPC, to use
 * gridrpcs://. Returns GMS_KEEP, GMS_REFUSE or GMS_CLOSE. */
static int tls_handshake(gms_conn *c) {
    gr_err e;
    int plain = 0;
    long long deadline = io_deadline(c, 0);
    if (!deadline) deadline = gr_now_ns() + 60000000000LL;
    c->tls = grw_tls_accept(c->net->tls, c->fd, deadline, &plain, &e);
    if (c->tls) {
        c->r.tls = c->tls;
        return GMS_KEEP;
    }
    gms_log(GMS_LOG_WARN, "%s: closing the connection: %s", c->peer, e.msg);
    if (!plain) return GMS_CLOSE;
    gms_conn_send_error(c, 0, GRID_ERR_PROTOCOL, GRW_TLS_PLAIN_REFUSAL);
    return GMS_REFUSE;
}

static void *conn_main(void *arg) {
    gms_conn *c = arg;
    int rc = c->net->tls ? tls_handshake(c) : GMS_KEEP;
    while (rc == GMS_KEEP && (rc = serve_one(c)) == GMS_KEEP) {
    }
    if (rc == GMS_REFUSE && !__atomic_load_n(&c->net->stopping, __ATOMIC_RELAXED)) linger(c);
    gms_log(GMS_LOG_DEBUG, "%s: connection closed", c->peer);
    forget(c);
    return NULL;
}

/* Starts a thread for FD from SA (admitted: counted by n->connlimit). */
static void start_conn(gms_net *n, int fd, const struct sockaddr *sa, socklen_t salen) {
    gms_conn *c = calloc(1, sizeof *c);
    if (!c) {
        close(fd);
        gr_connlimit_release(n->connlimit, sa);
        gms_log(GMS_LOG_ERROR, "out of memory for a connection");
        return;
    }
    c->net = n;
    c->fd = fd;
    if (salen > sizeof c->addr) salen = sizeof c->addr;
    memcpy(&c->addr, sa, salen);
    c->hello_by = gr_now_ns() + (long long)(n->opt->io_timeout * 1e9);
    gms_format_addr(sa, c->peer, sizeof c->peer, c->peer_host, sizeof c->peer_host);
    grw_reader_init(&c->r, fd, GMS_MAX_MESSAGE);
    pthread_mutex_lock(&n->lock);
    c->next = n->conns;
    if (n->conns) n->conns->prev = c;
    n->conns = c;
    n->nconns++;
    pthread_mutex_unlock(&n->lock);
    pthread_attr_t attr;
    pthread_t t;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    int rc = pthread_create(&t, &attr, conn_main, c);
    pthread_attr_destroy(&attr);
    if (rc) {
        gms_log(GMS_LOG_ERROR, "cannot start a thread for %s: %s", c->peer, strerror(rc));
        gms_conn_send_error(c, 0, GRID_ERR_BUSY,
                            "the metaserver cannot take more connections now: retry later");
        forget(c);
        return;
    }
    gms_log(GMS_LOG_DEBUG, "%s: connected", c->peer);
}

/* Refuses FD from SA with MSG (gr_refuse), logging at most once a second. */
static void refuse(gr_linger *linger, gr_refusals *r, int fd, const struct sockaddr *sa, const char *msg) {
    unsigned n = gr_refuse(linger, r, fd, msg);
    if (!n) return;
    char peer[80];
    gms_format_addr(sa, peer, sizeof peer, NULL, 0);
    gms_log(GMS_LOG_WARN, "%s: refused (%u refused in the last second): %s", peer, n, msg);
}

/* Counts the connection from SA; 0, or -1 with MSG naming the limit it is over. */
static int admit(gms_net *n, const struct sockaddr *sa, char *msg, size_t len) {
    unsigned open;
    int rc = gr_connlimit_admit(n->connlimit, sa, &open);
    if (rc == GR_CONN_OK) return 0;
    char addr[64];
    gr_connlimit_key_text(sa, addr, sizeof addr);
    if (rc == GR_CONN_TOTAL)
        snprintf(msg, len,
                 "the metaserver has %u connections open, its limit (--max-connections %u): retry later",
                 open, n->opt->max_conns);
    else
        snprintf(msg, len,
                 "%s already has %u connections open to the metaserver, the most one address may have "
                 "(--max-connections-per-address %u): close some or retry later",
                 addr, open, n->opt->max_conns_per_addr);
    return -1;
}

void gms_net_run(gms_net *n, int sigfd) {
    long long last_complaint = 0;
    static gr_linger linger;
    static struct pollfd p[2 + GR_LINGER_MAX];
    gr_refusals refused = {0, 0};
    gr_linger_init(&linger);
    /* Kept in reserve: out of descriptors, it is given up to accept and answer the
     * waiting peer rather than leave it in the listen queue, where no timeout runs. */
    int spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
    for (;;) {
        p[0] = (struct pollfd){n->fd, POLLIN, 0};
        p[1] = (struct pollfd){sigfd, POLLIN, 0};
        unsigned nl = gr_linger_fill(&linger, p + 2);
        int rc = poll(p, 2 + nl, gr_linger_timeout_ms(&linger));
        if (rc < 0) {
            if (errno == EINTR) continue;
            gms_log(GMS_LOG_ERROR, "poll: %s", strerror(errno));
            break;
        }
        if (nl) gr_linger_service(&linger, p + 2, nl);
        if (p[1].revents & POLLIN) {
            struct signalfd_siginfo si;
            if (read(sigfd, &si, sizeof si) == (ssize_t)sizeof si)
                gms_log(GMS_LOG_INFO, "%s received: shutting down",
                        si.ssi_signo == SIGINT ? "SIGINT" : "SIGTERM");
            break;
        }
        if (!(p[0].revents & POLLIN)) continue;
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        int fd = accept4(n->fd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC);
        if (fd < 0 && (errno == EMFILE || errno == ENFILE) && spare >= 0) {
            close(spare);
            sl = sizeof ss;
            fd = accept4(n->fd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC);
            if (fd >= 0) {
                refuse(NULL, &refused, fd, (struct sockaddr *)&ss,
                       "the metaserver is out of file descriptors: retry later");
                fd = -1;
                errno = EMFILE;
            }
            spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
        }
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED || errno == EAGAIN) continue;
            long long now = gr_now_ns();
            if (now - last_complaint > 1000000000LL) {
                gms_log(GMS_LOG_ERROR, "cannot accept a connection: %s", strerror(errno));
                last_complaint = now;
            }
            struct timespec ts = {0, 50000000};
            nanosleep(&ts, NULL);
            continue;
        }
        char msg[400];
        if (admit(n, (struct sockaddr *)&ss, msg, sizeof msg) != 0) {
            refuse(&linger, &refused, fd, (struct sockaddr *)&ss, msg);
            continue;
        }
        grw_tune_socket(fd);
        start_conn(n, fd, (struct sockaddr *)&ss, sl);
    }
    gr_linger_close_all(&linger);
    if (spare >= 0) close(spare);
    close(n->fd);
    n->fd = -1;
    /* Wake every connection thread and wait (a little) for them to leave. */
    __atomic_store_n(&n->stopping, 1, __ATOMIC_RELAXED);
    gms_state_stop(n->st);
    pthread_mutex_lock(&n->lock);
    for (gms_conn *c = n->conns; c; c = c->next)
        shutdown(c->fd, SHUT_RDWR);
    long long deadline = gr_now_ns() + 2000000000LL;
    while (n->nconns && gr_now_ns() < deadline) {
        pthread_mutex_unlock(&n->lock);
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
        pthread_mutex_lock(&n->lock);
    }
    pthread_mutex_unlock(&n->lock);
}

void gms_net_free(gms_net *n) {
    if (!n) return;
    /* A connection thread that outlived the wait still uses N. */
    pthread_mutex_lock(&n->lock);
    unsigned left = n->nconns;
    pthread_mutex_unlock(&n->lock);
    if (left) return;
    grw_tls_ctx_free(n->tls);
    gr_connlimit_free(n->connlimit);
    pthread_mutex_destroy(&n->lock);
    free(n);
}
