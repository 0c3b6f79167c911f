/* gdm_secure.c: the daemons' safe defaults, shared by gridrpcd and gridmetad: whether a
 * listening address is loopback, the refusal to listen elsewhere with nothing guarding
 * the port (unless --insecure), the start-up warning that says who can do what, and
 * secrets read from files (--token-file) rather than from the command line, where
 * every user of the machine can read them in ps. */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gdm.h"
#include "gr_log.h"
#include "grp_limits.h"

static int addr_is_loopback(const struct sockaddr *sa) {
    if (sa->sa_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
    if (sa->sa_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
        if (IN6_IS_ADDR_LOOPBACK(a)) return 1;
        return IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127;
    }
    return 0;
}

int gdm_host_is_loopback(const char *host) {
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    if (getaddrinfo(host, NULL, &hints, &res) != 0) return 0;
    /* Every address the name stands for: bind may take any of them. */
    int all = res != NULL;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next)
        if (!addr_is_loopback(ai->ai_addr)) all = 0;
    freeaddrinfo(res);
    return all;
}

int gdm_check_exposure(const char *prog, const char *host, int guarded, int insecure) {
    if (gdm_host_is_loopback(host)) {
        if (!guarded)
            gr_log(GR_LOG_INFO, "no key and no TLS: any program on this machine may use this %s (loopback "
                                "only; docs/server.md, \"Opening a server to a network\")",
                   prog);
        return 0;
    }
    if (guarded) return 0;
    if (!insecure)
        return gdm_usage_error(prog,
                               "--host %s is not a loopback address, and nothing guards this port: anyone who "
                               "reaches it could do anything a peer may. Give --key-file FILE (peers prove a "
                               "key; make one with 'gridrpc keygen FILE'), or --tls-cert FILE --tls-key FILE, "
                               "or --insecure to listen open anyway (docs/server.md, \"Opening a server to a "
                               "network\")",
                               host);
    gr_log(GR_LOG_WARN, "INSECURE: listening on %s with no key and no TLS (--insecure): ANYONE WHO REACHES THIS "
                        "PORT CAN DO ANYTHING a peer may (run, fetch, forget, register); see docs/server.md, "
                        "\"Opening a server to a network\"",
           host);
    return 0;
}

int gdm_opt_secret_file(const char *prog, const char *opt, const char *path, char *out) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return gdm_usage_error(prog, "%s: cannot read '%s': %s", opt, path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return gdm_usage_error(prog, "%s: '%s' is not a regular file", opt, path);
    }
    if (st.st_mode & 0077) {
        close(fd);
        return gdm_usage_error(prog, "%s: '%s' has mode %04o: other users may read the secret; run 'chmod 600 %s'",
                               opt, path, (unsigned)st.st_mode & 07777, path);
    }
    char buf[GRP_MAX_TOKEN + 2];
    size_t got = 0;
    for (;;) {
        ssize_t k = read(fd, buf + got, sizeof buf - 1 - got);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        got += (size_t)k;
        if (got == sizeof buf - 1) break;
    }
    close(fd);
    buf[got] = '\0';
    /* The first line is the secret; an editor's final newline is not part of it. */
    buf[strcspn(buf, "\r\n")] = '\0';
    size_t n = strlen(buf);
    if (n == 0) return gdm_usage_error(prog, "%s: '%s' holds no token on its first line", opt, path);
    if (n > GRP_MAX_TOKEN) return gdm_usage_error(prog, "%s: a token has at most %d bytes", opt, GRP_MAX_TOKEN);
    memcpy(out, buf, n + 1);
    return 0;
}

int gdm_opt_secret_arg(const char *prog, const char *opt, char *v, char *out) {
    size_t n = strlen(v);
    /* Wiped even when refused: it was typed for all to see either way. */
    if (n > GRP_MAX_TOKEN) {
        gdm_scrub_arg(v);
        return gdm_usage_error(prog, "%s: a token has at most %d bytes", opt, GRP_MAX_TOKEN);
    }
    memcpy(out, v, n + 1);
    gdm_scrub_arg(v);
    return 0;
}

void gdm_scrub_arg(char *v) {
    /* /proc/PID/cmdline reads this memory: what was typed no longer shows in ps. */
    for (; v && *v; v++)
        *v = 'x';
}
