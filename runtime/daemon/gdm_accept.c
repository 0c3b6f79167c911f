/* gdm_accept.c: the accept loop. It also watches a signalfd for SIGTERM and SIGINT, so a
 * signal only ends the loop; all the shutdown work happens afterwards on the main
 * thread. A connection over --max-connections or --max-connections-per-address is
 * answered ERROR GRID_ERR_LIMIT from here, without waiting on the peer, and closed. */
#define _GNU_SOURCE /* accept4 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "gdm.h"
#include "gdm_linger.h"
#include "gr_connlimit.h"
#include "gr_log.h"

/* Refuses FD from PEER with MSG (gdm_refuse), logging at most once a second. */
static void refuse(gdm_linger *linger, gdm_refusals *r, int fd, const char *peer, const char *msg) {
    unsigned n = gdm_refuse(linger, r, fd, msg);
    if (n) gr_log(GR_LOG_WARN, "%s: refused (%u refused in the last second): %s", peer, n, msg);
}

/* Counts the connection from SA against the limits; 0, or -1 with MSG saying which is
 * full. */
static int admit(gdm_daemon *d, const struct sockaddr *sa, char *msg, size_t len) {
    unsigned open;
    int rc = gr_connlimit_admit(d->connlimit, sa, &open);
    if (rc == GR_CONN_OK) return 0;
    char addr[64];
    gr_connlimit_key_text(sa, addr, sizeof addr);
    if (rc == GR_CONN_TOTAL)
        d->cfg.refusal(GDM_FULL, addr, open, d->max_conns, msg, len);
    else
        d->cfg.refusal(GDM_FULL_ADDRESS, addr, open, d->max_conns_per_addr, msg, len);
    return -1;
}

/* Out of descriptors: SPARE, kept in reserve, is given up for a moment to accept the
 * waiting peer and tell it why, rather than leave it hanging in the listen queue where
 * no timeout applies. Returns the new spare, errno set for the accept loop. */
static int refuse_with_spare(gdm_daemon *d, gdm_refusals *refused, int spare) {
    close(spare);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    int fd = accept4(d->fd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC);
    int err = fd >= 0 ? EMFILE : errno; /* what the loop then sees */
    if (fd >= 0) {
        char peer[80], msg[300];
        gdm_format_addr((struct sockaddr *)&ss, peer, sizeof peer, NULL, 0);
        d->cfg.refusal(GDM_NO_DESCRIPTORS, peer, gr_connlimit_open(d->connlimit), d->max_conns, msg,
                       sizeof msg);
        refuse(NULL, refused, fd, peer, msg); /* no descriptor to spare for lingering */
    }
    spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
    errno = err;
    return spare;
}

/* Reports the signal waiting on SIGFD. */
static void log_signal(const gdm_daemon *d, int sigfd) {
    struct signalfd_siginfo si;
    if (read(sigfd, &si, sizeof si) == (ssize_t)sizeof si)
        gr_log(GR_LOG_INFO, "%s received: shutting down%s", si.ssi_signo == SIGINT ? "SIGINT" : "SIGTERM",
               d->cfg.stop_note ? d->cfg.stop_note : "");
}

void gdm_accept_loop(gdm_daemon *d, int sigfd) {
    long long last_complaint = 0;
    static gdm_linger linger; /* large: not on the stack */
    static struct pollfd p[2 + GDM_LINGER_MAX];
    gdm_refusals refused = {0, 0};
    gdm_linger_init(&linger);
    int spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
    for (;;) {
        p[0] = (struct pollfd){d->fd, POLLIN, 0};
        p[1] = (struct pollfd){sigfd, POLLIN, 0};
        unsigned nl = gdm_linger_fill(&linger, p + 2);
        int rc = poll(p, 2 + nl, gdm_linger_timeout_ms(&linger));
        if (rc < 0) {
            if (errno == EINTR) continue;
            gr_log(GR_LOG_ERROR, "poll: %s", strerror(errno));
            break;
        }
        if (nl) gdm_linger_service(&linger, p + 2, nl);
        if (p[1].revents & POLLIN) {
            log_signal(d, sigfd);
            break;
        }
        if (!(p[0].revents & POLLIN)) continue;
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        int fd = accept4(d->fd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC);
        if (fd < 0 && (errno == EMFILE || errno == ENFILE) && spare >= 0) {
            spare = refuse_with_spare(d, &refused, spare);
        }
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED || errno == EAGAIN) continue;
            /* Out of descriptors or memory: say so once a second, back off, go on. */
            long long now = gr_now_ns();
            if (now - last_complaint > 1000000000LL) {
                gr_log(GR_LOG_ERROR, "cannot accept a connection: %s", strerror(errno));
                last_complaint = now;
            }
            struct timespec ts = {0, 50000000};
            nanosleep(&ts, NULL);
            continue;
        }
        char peer[80], msg[400];
        if (admit(d, (struct sockaddr *)&ss, msg, sizeof msg) != 0) {
            gdm_format_addr((struct sockaddr *)&ss, peer, sizeof peer, NULL, 0);
            refuse(&linger, &refused, fd, peer, msg);
            continue;
        }
        grw_tune_socket(fd);
        gdm_conn_start(d, fd, (struct sockaddr *)&ss, sl);
    }
    gdm_linger_close_all(&linger);
    if (spare >= 0) close(spare);
    close(d->fd);
    d->fd = -1;
    atomic_store(&d->stopping, 1);
}
