/* gdm_linger.h: closing refused connections gently without blocking the accept loop.
 * The daemon writes its ERROR on the fresh socket (without waiting), then hands it here:
 * the socket is shut for writing and what the peer still sends (its HELLO) is read and
 * dropped for a short while, since closing with unread input would reset the
 * connection and could destroy the ERROR before the peer reads it. The accept loop
 * polls these sockets next to its own. Part of the daemon core (gdm.h). */
#ifndef GDM_LINGER_H
#define GDM_LINGER_H

#include <poll.h>

#define GDM_LINGER_MAX 256 /* sockets lingering at once; one more closes the oldest */

typedef struct gdm_linger {
    int fd[GDM_LINGER_MAX];
    long long until[GDM_LINGER_MAX]; /* gr_now_ns deadline */
    unsigned n;
} gdm_linger;

void gdm_linger_init(gdm_linger *l);
/* Takes FD (an ERROR was just written to it) for at most SECONDS. */
void gdm_linger_add(gdm_linger *l, int fd, double seconds);
/* Fills P with one entry per lingering socket (at most GDM_LINGER_MAX); returns how many. */
unsigned gdm_linger_fill(const gdm_linger *l, struct pollfd *p);
/* Milliseconds until the next one expires (a poll timeout); -1 when none linger. */
int gdm_linger_timeout_ms(const gdm_linger *l);
/* After poll on the N entries of P (from gdm_linger_fill, nothing added since): reads
 * and drops their input; closes those the peer closed and those past their time. */
void gdm_linger_service(gdm_linger *l, const struct pollfd *p, unsigned n);
void gdm_linger_close_all(gdm_linger *l);

/* Connections a daemon refused, counted so that a flood is logged at most once a second. */
typedef struct gdm_refusals {
    long long last_log;
    unsigned since;
} gdm_refusals;

/* Answers the fresh connection FD with ERROR GRID_ERR_LIMIT (request id 0) saying MSG,
 * then hands it to LINGER for 0.2 s (NULL: closes it now). The socket is fresh, so the
 * small message fits its send buffer: the write never waits (its deadline is now), and
 * a peer that reads nothing cannot hold the accept loop. Returns the refusals to log
 * now (this one included) when a second has passed since the last log, else 0. */
unsigned gdm_refuse(gdm_linger *linger, gdm_refusals *r, int fd, const char *msg);

#endif
