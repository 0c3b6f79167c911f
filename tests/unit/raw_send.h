/* raw_send.h: writes all N bytes to a socket (EINTR retried, no SIGPIPE: a peer that
 * closed is an error returned). Shared by the fake servers (fake_server.c) and the tests
 * that talk to real daemons on raw sockets (raw_peer.h). Header only. */
#ifndef RAW_SEND_H
#define RAW_SEND_H

#include <errno.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>

/* 0 once all N bytes of P are sent; -1 when the connection fails first. */
static inline int raw_send_all(int fd, const void *p, size_t n) {
    const char *s = p;
    while (n > 0) {
        ssize_t k = send(fd, s, n, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        s += k;
        n -= (size_t)k;
    }
    return 0;
}

#endif
