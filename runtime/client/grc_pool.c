/* grc_pool.c: persistent connections, one per concurrent caller and server, reused
 * across calls: a call costs one round trip instead of a TCP handshake and a HELLO.
 * An idle connection that the server closed meanwhile (a restart) is noticed before it
 * is used, so a call never fails just because the pool held a dead connection. */
#include "config.h"

#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "grc_client.h"

#define GRC_IDLE_MAX 64

long grc_stat_connections;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static grc_conn *idle;
static int nidle;

/* 1 if the peer has closed the idle connection (or sent something unexpected). */
static int idle_conn_dead(int fd) {
    struct pollfd p = {fd, POLLIN, 0};
    return poll(&p, 1, 0) != 0;
}

static int hello(grc_conn *c, const grc_config *cfg, gr_err *e) {
    grw_header h;
    int rc = grw_begin(&c->wr, GRW_HELLO, 0, c->next_id++, e);
    if (!rc) rc = grw_write_string(&c->wr, "libgridrpc " PACKAGE_VERSION, e);
    if (!rc) rc = grw_write_u32(&c->wr, GRW_VERSION, e);
    if (!rc) rc = grw_write_u32(&c->wr, GRW_VERSION, e);
    if (!rc) rc = grw_write_string(&c->wr, cfg->token, e);
    if (!rc) rc = grw_finish(&c->wr, e);
    if (!rc) rc = grw_read_header(&c->rd, &h, e);
    if (rc) return rc;
    if (h.type == GRW_ERROR) {
        uint32_t code;
        char *msg = NULL;
        rc = grw_read_u32(&c->rd, &code, e);
        if (!rc) rc = grw_read_string(&c->rd, 4095, &msg, e);
        if (!rc)
            rc = gr_seterr(e, (int)code ? (int)code : GRID_ERR_PROTOCOL,
                           "the server refused the connection: %s", msg);
        free(msg);
        return rc;
    }
    if (h.type != GRW_HELLO_OK)
        return gr_seterr(e, GRID_ERR_PROTOCOL, "the server answered HELLO with %s", grw_type_name(h.type));
    char *server = NULL;
    uint32_t version, max_head, workers, cores;
    uint64_t max_message, max_array;
    rc = grw_read_string(&c->rd, 255, &server, e);
    if (!rc) rc = grw_read_u32(&c->rd, &version, e);
    if (!rc) rc = grw_read_u64(&c->rd, &max_message, e);
    if (!rc) rc = grw_read_u64(&c->rd, &max_array, e);
    if (!rc) rc = grw_read_u32(&c->rd, &max_head, e);
    if (!rc) rc = grw_read_u32(&c->rd, &workers, e);
    if (!rc) rc = grw_read_u32(&c->rd, &cores, e);
    if (!rc) rc = grw_end(&c->rd, e);
    free(server);
    if (rc) return rc;
    c->server.max_message = max_message;
    c->server.max_array = max_array;
    c->server.max_head = max_head;
    return GRID_OK;
}

int grc_conn_get(const char *host, int port, const grc_config *cfg, grc_conn **out, gr_err *e) {
    pthread_mutex_lock(&lock);
    grc_conn **pp = &idle;
    while (*pp) {
        grc_conn *c = *pp;
        if (c->port == port && strcmp(c->host, host) == 0) {
            *pp = c->next;
            nidle--;
            if (idle_conn_dead(c->fd)) {
                close(c->fd);
                free(c);
                continue;
            }
            pthread_mutex_unlock(&lock);
            c->next = NULL;
            *out = c;
            return GRID_OK;
        }
        pp = &c->next;
    }
    pthread_mutex_unlock(&lock);

    grc_conn *c = calloc(1, sizeof *c);
    if (!c) return gr_seterr(e, GRID_ERR_NOMEM, "out of memory");
    __atomic_add_fetch(&grc_stat_connections, 1, __ATOMIC_RELAXED);
    int fd = grw_connect(host, port, cfg->connect_timeout, e);
    if (fd < 0) {
        free(c);
        return e ? e->code : GRID_ERR_CONNECT;
    }
    c->fd = fd;
    snprintf(c->host, sizeof c->host, "%s", host);
    c->port = port;
    c->next_id = 1;
    grw_limits_default(&c->server);
    grw_reader_init(&c->rd, fd, c->server.max_message);
    grw_writer_init(&c->wr, fd);
    long long deadline = cfg->connect_timeout > 0 ? gr_now_ns() + (long long)(cfg->connect_timeout * 1e9) : 0;
    c->rd.deadline_ns = c->wr.deadline_ns = deadline;
    int rc = hello(c, cfg, e);
    if (rc) {
        gr_prefixerr(e, "connecting to %s:%d: ", host, port);
        close(fd);
        free(c);
        return rc;
    }
    *out = c;
    return GRID_OK;
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
    if (c) {
        close(c->fd);
        free(c);
    }
}

void grc_pool_reset(void) {
    pthread_mutex_lock(&lock);
    grc_conn *c = idle;
    idle = NULL;
    nidle = 0;
    pthread_mutex_unlock(&lock);
    while (c) {
        grc_conn *n = c->next;
        close(c->fd);
        free(c);
        c = n;
    }
}
