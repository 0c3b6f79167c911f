/* grc_pool.c: persistent connections, one per concurrent caller and server, reused
 * across calls: a call costs one round trip instead of a TCP handshake and a HELLO.
 * An idle connection that the server closed meanwhile (a restart, its --idle-timeout) is
 * noticed before it is used; one it closes just as a call leaves is seen by the caller
 * (grc_conn_stale), which sends the call again on a new connection: a call never fails
 * just because the pool held a dead connection. */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "grc_client.h"
#include "grp_session.h"

#define GRC_IDLE_MAX 64

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static grc_conn *idle;
static int nidle;

/* This end of FD as the server's log writes its peer ("ip:port", "[ip]:port"). */
static void local_address(int fd, char *out, size_t len) {
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    char host[INET6_ADDRSTRLEN] = "?";
    snprintf(out, len, "?");
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) != 0) return;
    if (ss.ss_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)&ss;
        inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
        snprintf(out, len, "%s:%d", host, ntohs(in->sin_port));
    } else if (ss.ss_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&ss;
        inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
        snprintf(out, len, "[%s]:%d", host, ntohs(in6->sin6_port));
    }
}

/* 1 if the peer has closed the idle connection (or sent something unexpected). */
static int idle_conn_dead(int fd) {
    struct pollfd p = {fd, POLLIN, 0};
    return poll(&p, 1, 0) != 0;
}

static void close_conn(grc_conn *c) {
    grw_tls_free(c->tls);
    close(c->fd);
    free(c);
}

static int hello(grc_conn *c, const grc_config *cfg, gr_err *e) {
    grp_hello m;
    memset(&m, 0, sizeof m);
    snprintf(m.client, sizeof m.client, "libgridrpc %s", PACKAGE_VERSION);
    m.min_version = m.max_version = GRW_VERSION;
    snprintf(m.token, sizeof m.token, "%s", cfg->token);
    /* Who owns the jobs and objects made over this connection when no key is proved. */
    if (grp_session_secret(m.session, e)) return e->code;
    m.session_len = GRP_SESSION_BYTES;
    grp_hello_ok ok;
    int refused;
    int rc = grp_auth_hello(&c->rd, &c->wr, c->next_id++, &m, &cfg->keys,
                            "set GRIDRPC_KEY_FILE=FILE, 'key_file FILE' in the configuration file, or call "
                            "grid_set_key_file_np",
                            &ok, &refused, e);
    if (refused) gr_prefixerr(e, "the server refused the connection: ");
    /* Over its connection limits (the message names which, and the option): to the caller
     * an overloaded server, which a metaserver's placement replaces. */
    if (refused && rc == GRID_ERR_LIMIT) e->code = rc = GRID_ERR_BUSY;
    if (!rc) c->server = ok.limits;
    return rc;
}

int grc_conn_get(const char *host, int port, const grc_config *cfg, grc_conn **out, gr_err *e) {
    pthread_mutex_lock(&lock);
    grc_conn **pp = &idle;
    while (*pp) {
        grc_conn *c = *pp;
        if (c->port == port && strcmp(c->host, host) == 0) {
            *pp = c->next;
            nidle--;
            if (idle_conn_dead(c->fd) || grw_has_buffered(&c->rd)) {
                close_conn(c);
                continue;
            }
            pthread_mutex_unlock(&lock);
            c->next = NULL;
            /* Empty: what arrives from now on shows in rd.len (grc_conn_stale). */
            c->rd.len = c->rd.pos = 0;
            c->reused = 1;
            *out = c;
            return GRID_OK;
        }
        pp = &c->next;
    }
    pthread_mutex_unlock(&lock);

    grc_conn *c = calloc(1, sizeof *c);
    if (!c) return gr_seterr(e, GRID_ERR_NOMEM, "out of memory");
    __atomic_add_fetch(&grc_stat_connections, 1, __ATOMIC_RELAXED);
    grw_tls *tls = NULL;
    int fd = grp_dial(host, port, cfg->connect_timeout, cfg->tls_ca, &tls, e);
    if (fd < 0) {
        free(c);
        return e ? e->code : GRID_ERR_CONNECT;
    }
    c->fd = fd;
    c->tls = tls;
    local_address(fd, c->local, sizeof c->local);
    snprintf(c->host, sizeof c->host, "%s", host);
    c->port = port;
    c->next_id = 1;
    grp_limits_default(&c->server);
    grw_reader_init(&c->rd, fd, c->server.max_message);
    grw_writer_init(&c->wr, fd);
    c->rd.tls = c->wr.tls = tls;
    c->rd.tally = &grc_stat_bytes_received; /* grid_get_stats_np */
    c->wr.tally = &grc_stat_bytes_sent;
    long long deadline = cfg->connect_timeout > 0 ? gr_now_ns() + (long long)(cfg->connect_timeout * 1e9) : 0;
    c->rd.deadline_ns = c->wr.deadline_ns = deadline;
    long long t0 = gr_now_ns();
    int rc = hello(c, cfg, e);
    c->rtt_ns = gr_now_ns() - t0;
    if (rc) {
        gr_prefixerr(e, "connecting to %s:%d: ", host, port);
        close_conn(c);
        return rc;
    }
    *out = c;
    return GRID_OK;
}

int grc_conn_stale(const grc_conn *c, int rc, long long sent_ns) {
    if (!c->reused || rc != GRID_ERR_CONN_LOST || c->rd.len != 0) return 0;
    long long window = 4 * c->rtt_ns > 100000000LL ? 4 * c->rtt_ns : 100000000LL;
    return gr_now_ns() - sent_ns <= window;
}

void grc_conn_put(grc_conn *c, int broken) {
    if (!c) return;
    pthread_mutex_lock(&lock);
    if (!broken && nidle < GRC_IDLE_MAX) {
        c->next = idle;
        idle = c;
        nidle++;
        c = NULL;
    }
    pthread_mutex_unlock(&lock);
    if (c) close_conn(c);
}

void grc_pool_reset(void) {
    pthread_mutex_lock(&lock);
    grc_conn *c = idle;
    idle = NULL;
    nidle = 0;
    pthread_mutex_unlock(&lock);
    while (c) {
        grc_conn *n = c->next;
        close_conn(c);
        c = n;
    }
}
