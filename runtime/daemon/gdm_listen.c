/* gdm_listen.c: the daemons' listening sockets (gridrpcd's and gridmetad's protocol
 * port, gridmetad's status page) and how a socket address is written in logs. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "gdm.h"

void gdm_format_addr(const struct sockaddr *sa, char *out, size_t len, char *hostonly, size_t hostlen) {
    char host[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
        port = ntohs(in->sin_port);
        snprintf(out, len, "%s:%d", host, port);
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
        port = ntohs(in6->sin6_port);
        snprintf(out, len, "[%s]:%d", host, port);
    } else {
        snprintf(out, len, "?");
    }
    if (hostonly) snprintf(hostonly, hostlen, "%s", host);
}

int gdm_bind(const char *host, int port, int backlog, const char *host_opt, int *err, gr_err *e) {
    struct addrinfo hints, *res = NULL, *ai;
    char ps[16];
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    snprintf(ps, sizeof ps, "%d", port);
    *err = 0;
    int rc = getaddrinfo(host, ps, &hints, &res);
    if (rc != 0) {
        gr_seterr(e, GRID_ERR_CONFIG, "%s '%s': cannot resolve the address: %s", host_opt, host,
                  gai_strerror(rc));
        return -1;
    }
    int fd = -1;
    for (ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) {
            *err = errno;
            continue;
        }
        int one = 1;
        /* A restarted daemon must not wait for the old connections' TIME_WAIT. */
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, backlog) == 0) break;
        *err = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    return fd;
}

void gdm_where(int fd, const char *host, int port, char *out, size_t len) {
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
        gdm_format_addr((struct sockaddr *)&ss, out, len, NULL, 0);
    else
        snprintf(out, len, "%s:%d", host, port);
}

int gdm_listen(gdm_daemon *d, const char *host, int port, char *where, size_t len, gr_err *e) {
    int err;
    int fd = gdm_bind(host, port, SOMAXCONN, "--host", &err, e);
    if (fd < 0 && !err) return e->code;
    if (fd < 0)
        return gr_seterr(e, GRID_ERR_CONFIG, "cannot listen on %s:%d: %s%s%s%s", host, port, strerror(err),
                         err == EADDRINUSE ? " (another " : "", err == EADDRINUSE ? d->cfg.name : "",
                         err == EADDRINUSE ? " runs there? choose another --port, or 0 for any)" : "");
    d->fd = fd;
    gdm_where(fd, host, port, where, len);
    /* Scripts and tests wait for exactly this line: print it only once ready. */
    printf("listening on %s\n", where);
    fflush(stdout);
    return GRID_OK;
}
