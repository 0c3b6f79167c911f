/* gr_linger.h: closing refused connections gently without blocking the accept loop.
 * The daemon writes its ERROR on the fresh socket (without waiting), then hands it here:
 * the socket is shut for writing and what the peer still sends (its HELLO) is read and
 * dropped for a short while, since closing with unread input would reset the
 * connection and could destroy the ERROR before the peer reads it. The accept loop
 * polls these sockets next to its own. Compiled into each daemon. */
#ifndef GR_LINGER_H
#define GR_LINGER_H

#include <poll.h>

#define GR_LINGER_MAX 256 /* sockets lingering at once; one more closes the oldest */

typedef struct gr_linger {
    int fd[GR_LINGER_MAX];
    long long until[GR_LINGER_MAX]; /* gr_now_ns deadline */
    unsigned n;
} gr_linger;

void gr_linger_init(gr_linger *l);
/* Takes FD (an ERROR was just written to it) for at most SECONDS. */
void gr_linger_add(gr_linger *l, int fd, double seconds);
/* Fills P with one entry per lingering socket (at most GR_LINGER_MAX); returns how many. */
unsigned gr_linger_fill(const gr_linger *l, struct pollfd *p);
/* Milliseconds until the next one expires (a poll timeout); -1 when none linger. */
int gr_linger_timeout_ms(const gr_linger *l);
/* After poll on the N entries of P (from gr_linger_fill, nothing added since): reads
 * and drops their input; closes those the peer closed and those past their time. */
void gr_linger_service(gr_linger *l, const struct pollfd *p, unsigned n);
void gr_linger_close_all(gr_linger *l);

/* Connections a daemon refused, counted so that a flood is logged at most once a second. */
typedef struct gr_refusals {
    long long last_log;
    unsigned since;
} gr_refusals;

/* Answers the fresh connection FD with ERROR GRID_ERR_LIMIT (request id 0) saying MSG,
 * then hands it to LINGER for 0.2 s (NULL: closes it now). The socket is fresh, so the
 * small message fits its send buffer: the write never waits (its deadline is now), and
 * a peer that reads nothing cannot hold the accept loop. Returns the refusals to log
 * now (this one included) when a second has passed since the last log, else 0. */
unsigned gr_refuse(gr_linger *linger, gr_refusals *r, int fd, const char *msg);

#endif
