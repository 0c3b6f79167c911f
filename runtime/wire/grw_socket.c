/* grw_socket.c: opening and tuning GridRPC's TCP connections. Small calls are latency
 * bound, so Nagle's algorithm is off (the peers measured in BENCH.md lose 40-220 ms a
 * call without TCP_NODELAY); keepalive lets a client notice a vanished host. */
#include "grw_wire.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

void grw_tune_socket(int fd) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
}

/* Waits for a non-blocking connect to finish within TIMEOUT seconds (0: forever). */
static int wait_connected(int fd, double timeout) {
    struct pollfd p = {fd, POLLOUT, 0};
    /* A timeout beyond poll's int milliseconds (about 24 days) waits as if unbounded. */
    int ms = timeout > 0 && timeout * 1000.0 < (double)INT_MAX ? (int)(timeout * 1000.0) : -1;
    if (timeout > 0 && ms == 0) ms = 1; /* under a millisecond still waits a little */
    int rc;
    do
        rc = poll(&p, 1, ms);
    while (rc < 0 && errno == EINTR);
    if (rc == 0) return ETIMEDOUT;
    if (rc < 0) return errno;
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0) return errno;
    return err;
}

int grw_connect(const char *host, int port, double timeout, gr_err *e) {
    struct addrinfo hints, *res = NULL, *ai;
    char portstr[16];
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    snprintf(portstr, sizeof portstr, "%d", port);
    int rc = getaddrinfo(host, portstr, &hints, &res);
    if (rc != 0) {
        gr_seterr(e, GRID_ERR_CONNECT, "cannot resolve host '%s': %s; check the server address", host,
                  gai_strerror(rc));
        return -1;
    }
    int last = ECONNREFUSED;
    for (ai = res; ai; ai = ai->ai_next) {
        int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) {
            last = errno;
            continue;
        }
        int flags = fcntl(fd, F_GETFL);
        fcntl(fd, F_SETFL, flags | O_NONBLOCK);
        int err = 0;
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
            err = errno == EINPROGRESS ? wait_connected(fd, timeout) : errno;
        }
        if (err == 0) {
            fcntl(fd, F_SETFL, flags);
            grw_tune_socket(fd);
            freeaddrinfo(res);
            return fd;
        }
        last = err;
        close(fd);
    }
    freeaddrinfo(res);
    if (last == ETIMEDOUT)
        gr_seterr(e, GRID_ERR_TIMEOUT, "cannot connect to %s:%d: no answer within %g s; is the host up?",
                  host, port, timeout);
    else
        gr_seterr(e, GRID_ERR_CONNECT, "cannot connect to %s:%d: %s; is gridrpcd running there?", host, port,
                  strerror(last));
    return -1;
}
