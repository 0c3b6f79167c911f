/* gdm_linger.c: the refused sockets an accept loop lets drain before closing them
 * (gdm_linger.h). Every read is non-blocking: a peer can never hold the loop. */
#include "gdm_linger.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gr_error.h"
#include "grp_proto.h" /* the refusal is an ERROR message */

void gdm_linger_init(gdm_linger *l) {
    l->n = 0;
}

static void drop(gdm_linger *l, unsigned i) {
    close(l->fd[i]);
    l->n--;
    l->fd[i] = l->fd[l->n];
    l->until[i] = l->until[l->n];
}

void gdm_linger_add(gdm_linger *l, int fd, double seconds) {
    if (l->n == GDM_LINGER_MAX) {
        /* Full (a flood): the one closest to its end goes now. */
        unsigned oldest = 0;
        for (unsigned i = 1; i < l->n; i++)
            if (l->until[i] < l->until[oldest]) oldest = i;
        drop(l, oldest);
    }
    shutdown(fd, SHUT_WR);
    l->fd[l->n] = fd;
    l->until[l->n] = gr_now_ns() + (long long)(seconds * 1e9);
    l->n++;
}

unsigned gdm_linger_fill(const gdm_linger *l, struct pollfd *p) {
    for (unsigned i = 0; i < l->n; i++) {
        p[i].fd = l->fd[i];
        p[i].events = POLLIN;
        p[i].revents = 0;
    }
    return l->n;
}

int gdm_linger_timeout_ms(const gdm_linger *l) {
    if (l->n == 0) return -1;
    long long first = l->until[0];
    for (unsigned i = 1; i < l->n; i++)
        if (l->until[i] < first) first = l->until[i];
    long long left = first - gr_now_ns();
    return left <= 0 ? 0 : (int)(left / 1000000) + 1;
}

void gdm_linger_service(gdm_linger *l, const struct pollfd *p, unsigned n) {
    long long now = gr_now_ns();
    /* Mark first (P is in the order of l->fd), then drop from the end so the indices of
     * the entries still to visit do not move. */
    unsigned char done[GDM_LINGER_MAX];
    memset(done, 0, sizeof done);
    for (unsigned i = 0; i < n && i < l->n; i++) {
        if (p[i].fd != l->fd[i]) continue;
        if (p[i].revents) {
            char sink[4096];
            for (int k = 0; k < 16; k++) {
                ssize_t got = recv(l->fd[i], sink, sizeof sink, MSG_DONTWAIT);
                if (got > 0) continue;
                if (got == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) done[i] = 1;
                break;
            }
        }
        if (l->until[i] <= now) done[i] = 1;
    }
    for (unsigned i = l->n; i-- > 0;)
        if (done[i] || l->until[i] <= now) drop(l, i);
}

void gdm_linger_close_all(gdm_linger *l) {
    while (l->n)
        drop(l, l->n - 1);
}

unsigned gdm_refuse(gdm_linger *linger, gdm_refusals *r, int fd, const char *msg) {
    static grw_writer w; /* the accept loop's only; large */
    gr_err e;
    grw_writer_init(&w, fd);
    w.deadline_ns = gr_now_ns();
    grp_write_error(&w, 0, GRID_ERR_LIMIT, msg, &e);
    if (linger) {
        gdm_linger_add(linger, fd, 0.2);
    } else {
        shutdown(fd, SHUT_WR);
        close(fd);
    }
    r->since++;
    long long now = gr_now_ns();
    if (now - r->last_log < 1000000000LL) return 0;
    unsigned n = r->since;
    r->last_log = now;
    r->since = 0;
    return n;
}
