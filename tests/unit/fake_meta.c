/* fake_meta.c: the fake metaserver of fake_meta.h. One thread accepts a connection and
 * serves it until it closes (or the test stops the fake), then accepts the next; every
 * message goes through the protocol layer, so what it records is what a real
 * gridmetad would decode. */
#include "fake_meta.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "grp_proto.h"

struct fake_meta {
    int listen_fd, port;
    uint32_t heartbeat_ms;
    int stop_pipe[2];
    pthread_t thread;
    pthread_mutex_t lock; /* everything below */
    int connections, registrations, nbeats, unregistrations;
    uint64_t unregistered; /* the id of the last UNREGISTER */
    int not_found_next, close_next, hang_next;
    uint64_t server_id, next_id;
    grp_register last;
    char token[GRP_MAX_TOKEN + 1];
    char token_copy[GRP_MAX_TOKEN + 1]; /* fake_meta_token's answer */
    fake_meta_beat beats[FAKE_META_MAX_BEATS];
    grw_reader r;
    grw_writer w;
};

static int stopping(fake_meta *fm) {
    struct pollfd p = {fm->stop_pipe[0], POLLIN, 0};
    return poll(&p, 1, 0) > 0;
}

/* Serves one message whose header is H; 0 to go on, -1 to close the connection. */
static int serve(fake_meta *fm, const grw_header *h) {
    gr_err e;
    int rc = -1;
    if (h->type == GRP_HELLO) {
        grp_hello m;
        if (grp_read_hello(&fm->r, &m, &e)) return -1;
        pthread_mutex_lock(&fm->lock);
        snprintf(fm->token, sizeof fm->token, "%s", m.token);
        pthread_mutex_unlock(&fm->lock);
        grp_hello_ok ok;
        memset(&ok, 0, sizeof ok);
        snprintf(ok.server, sizeof ok.server, "fake gridmetad");
        ok.version = GRW_VERSION;
        grp_limits_default(&ok.limits);
        ok.workers = ok.cores = 1;
        rc = grp_write_hello_ok(&fm->w, h->request_id, &ok, &e);
    } else if (h->type == GRP_REGISTER) {
        grp_register m;
        if (grp_read_register(&fm->r, &m, &e)) {
            fprintf(stderr, "fake_meta: bad REGISTER: %s\n", e.msg);
            return -1;
        }
        pthread_mutex_lock(&fm->lock);
        grp_register_free(&fm->last);
        fm->last = m;
        fm->registrations++;
        fm->server_id = ++fm->next_id;
        grp_register_ok ok = {fm->server_id, fm->heartbeat_ms};
        pthread_mutex_unlock(&fm->lock);
        rc = grp_write_register_ok(&fm->w, h->request_id, &ok, &e);
    } else if (h->type == GRP_HEARTBEAT) {
        grp_heartbeat m;
        if (grp_read_heartbeat(&fm->r, &m, &e)) return -1;
        pthread_mutex_lock(&fm->lock);
        if (fm->nbeats < FAKE_META_MAX_BEATS) {
            fake_meta_beat *b = &fm->beats[fm->nbeats++];
            b->t_ns = gr_now_ns();
            b->hb = m;
            b->known = fm->server_id != 0 && m.server_id == fm->server_id;
        }
        int not_found = fm->not_found_next, close_now = fm->close_next, hang = fm->hang_next;
        fm->not_found_next = fm->close_next = fm->hang_next = 0;
        if (not_found) fm->server_id = 0;
        pthread_mutex_unlock(&fm->lock);
        if (close_now) return -1;
        if (hang) return 0;
        if (not_found)
            rc = grp_write_error(&fm->w, h->request_id, GRID_ERR_NOT_FOUND, "no such server: register again",
                                 &e);
        else
            rc = grp_write_empty(&fm->w, GRP_HEARTBEAT_OK, h->request_id, &e);
    } else if (h->type == GRP_UNREGISTER) {
        uint64_t id;
        if (grp_read_unregister(&fm->r, &id, &e)) return -1;
        pthread_mutex_lock(&fm->lock);
        fm->unregistrations++;
        fm->unregistered = id;
        pthread_mutex_unlock(&fm->lock);
        rc = grp_write_empty(&fm->w, GRP_UNREGISTER_OK, h->request_id, &e);
    } else {
        fprintf(stderr, "fake_meta: unexpected %s\n", grp_type_name(h->type));
    }
    return rc ? -1 : 0;
}

static void serve_connection(fake_meta *fm, int fd) {
    grw_reader_init(&fm->r, fd, 1 << 24);
    grw_writer_init(&fm->w, fd);
    for (;;) {
        struct pollfd p[2] = {{fd, POLLIN, 0}, {fm->stop_pipe[0], POLLIN, 0}};
        if (poll(p, 2, -1) < 0 && errno != EINTR) break;
        if (p[1].revents) break;
        if (!p[0].revents) continue;
        grw_header h;
        gr_err e;
        fm->r.deadline_ns = gr_now_ns() + 5000000000LL;
        fm->w.deadline_ns = gr_now_ns() + 5000000000LL;
        if (grp_read_header(&fm->r, &h, &e) || serve(fm, &h)) break;
    }
    close(fd);
}

static void *accept_loop(void *arg) {
    fake_meta *fm = arg;
    while (!stopping(fm)) {
        struct pollfd p[2] = {{fm->listen_fd, POLLIN, 0}, {fm->stop_pipe[0], POLLIN, 0}};
        if (poll(p, 2, -1) < 0 && errno != EINTR) break;
        if (p[1].revents) break;
        if (!p[0].revents) continue;
        int fd = accept(fm->listen_fd, NULL, NULL);
        if (fd < 0) continue;
        pthread_mutex_lock(&fm->lock);
        fm->connections++;
        pthread_mutex_unlock(&fm->lock);
        serve_connection(fm, fd);
    }
    return NULL;
}

fake_meta *fake_meta_start(int port, uint32_t heartbeat_ms) {
    fake_meta *fm = calloc(1, sizeof *fm);
    if (!fm) return NULL;
    fm->heartbeat_ms = heartbeat_ms;
    pthread_mutex_init(&fm->lock, NULL);
    fm->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(fm->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons((uint16_t)port);
    socklen_t sl = sizeof a;
    if (fm->listen_fd < 0 || bind(fm->listen_fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        listen(fm->listen_fd, 16) != 0 || getsockname(fm->listen_fd, (struct sockaddr *)&a, &sl) != 0 ||
        pipe(fm->stop_pipe) != 0) {
        fprintf(stderr, "fake_meta: cannot listen on 127.0.0.1:%d: %s\n", port, strerror(errno));
        if (fm->listen_fd >= 0) close(fm->listen_fd);
        free(fm);
        return NULL;
    }
    fm->port = ntohs(a.sin_port);
    if (pthread_create(&fm->thread, NULL, accept_loop, fm) != 0) {
        close(fm->listen_fd);
        close(fm->stop_pipe[0]);
        close(fm->stop_pipe[1]);
        free(fm);
        return NULL;
    }
    return fm;
}

int fake_meta_port(const fake_meta *fm) {
    return fm->port;
}

void fake_meta_stop(fake_meta *fm) {
    if (!fm) return;
    if (write(fm->stop_pipe[1], "x", 1) != 1) perror("fake_meta: stop");
    pthread_join(fm->thread, NULL);
    close(fm->listen_fd);
    close(fm->stop_pipe[0]);
    close(fm->stop_pipe[1]);
    grp_register_free(&fm->last);
    pthread_mutex_destroy(&fm->lock);
    free(fm);
}

#define GETTER(type, name, field)                                                                            \
    type name(fake_meta *fm) {                                                                               \
        pthread_mutex_lock(&fm->lock);                                                                       \
        type v = fm->field;                                                                                  \
        pthread_mutex_unlock(&fm->lock);                                                                     \
        return v;                                                                                            \
    }
GETTER(int, fake_meta_connections, connections)
GETTER(int, fake_meta_registrations, registrations)
GETTER(int, fake_meta_beats, nbeats)
GETTER(int, fake_meta_unregistrations, unregistrations)
GETTER(uint64_t, fake_meta_unregistered, unregistered)
GETTER(uint64_t, fake_meta_server_id, server_id)

int fake_meta_beat_at(fake_meta *fm, int i, fake_meta_beat *out) {
    pthread_mutex_lock(&fm->lock);
    int ok = i >= 0 && i < fm->nbeats;
    if (ok) *out = fm->beats[i];
    pthread_mutex_unlock(&fm->lock);
    return ok ? 0 : -1;
}

int fake_meta_last_register(fake_meta *fm, grp_register *out) {
    pthread_mutex_lock(&fm->lock);
    int ok = fm->registrations > 0;
    if (ok) {
        *out = fm->last;
        size_t n = (fm->last.nfunctions ? fm->last.nfunctions : 1) * sizeof *out->functions;
        out->functions = malloc(n);
        if (out->functions)
            memcpy(out->functions, fm->last.functions, fm->last.nfunctions * sizeof *out->functions);
        ok = out->functions != NULL;
    }
    pthread_mutex_unlock(&fm->lock);
    return ok ? 0 : -1;
}

const char *fake_meta_token(fake_meta *fm) {
    pthread_mutex_lock(&fm->lock);
    memcpy(fm->token_copy, fm->token, sizeof fm->token_copy);
    pthread_mutex_unlock(&fm->lock);
    return fm->token_copy;
}

void fake_meta_not_found_next(fake_meta *fm) {
    pthread_mutex_lock(&fm->lock);
    fm->not_found_next = 1;
    pthread_mutex_unlock(&fm->lock);
}

void fake_meta_close_next(fake_meta *fm) {
    pthread_mutex_lock(&fm->lock);
    fm->close_next = 1;
    pthread_mutex_unlock(&fm->lock);
}

void fake_meta_hang_next(fake_meta *fm) {
    pthread_mutex_lock(&fm->lock);
    fm->hang_next = 1;
    pthread_mutex_unlock(&fm->lock);
}
