/* gr_connlimit.h: admitting new connections in the daemons (gridrpcd, gridmetad):
 * how many are open in total and from each peer address, so that one address opening
 * thousands of connections is refused on its own while the others are still served;
 * and the descriptor limit a daemon needs for that. Compiled into each daemon. */
#ifndef GR_CONNLIMIT_H
#define GR_CONNLIMIT_H

#include <sys/socket.h>

typedef struct gr_connlimit gr_connlimit;

/* What gr_connlimit_admit decided. */
enum { GR_CONN_OK = 0, GR_CONN_TOTAL = 1, GR_CONN_PER_ADDR = 2 };

/* MAX_TOTAL connections at once, MAX_PER_ADDR of them from one address (IPv4-mapped
 * IPv6 counts as IPv4; other IPv6 addresses one by one: a /64 is often a whole LAN of
 * hosts, and the total bounds a peer that holds many addresses). NULL when out of
 * memory. */
gr_connlimit *gr_connlimit_new(unsigned max_total, unsigned max_per_addr);
void gr_connlimit_free(gr_connlimit *l);
/* Counts a new connection from SA. Returns GR_CONN_OK, or the limit it would pass
 * (nothing counted then); *OPEN: the connections open now from that address
 * (GR_CONN_PER_ADDR) or in total (GR_CONN_TOTAL, GR_CONN_OK). */
int gr_connlimit_admit(gr_connlimit *l, const struct sockaddr *sa, unsigned *open);
/* The connection from SA, admitted before, has closed. */
void gr_connlimit_release(gr_connlimit *l, const struct sockaddr *sa);
/* Connections open now. */
unsigned gr_connlimit_open(gr_connlimit *l);

/* Raises the soft limit of open descriptors (RLIMIT_NOFILE) to hold at least WANT, up
 * to the hard limit. Returns the soft limit now. */
unsigned long gr_raise_nofile(unsigned long want);

/* "127.0.0.1", "2001:db8::1": the address SA is counted under, for messages. */
void gr_connlimit_key_text(const struct sockaddr *sa, char *out, unsigned len);

#endif
