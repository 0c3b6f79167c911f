/* gdm_secure.c: the daemons' safe default address, shared by gridrpcd and gridmetad:
 * whether a listening address is loopback, the refusal to listen elsewhere with
 * nothing guarding the port (unless --insecure), and the start-up line that says who
 * can do what. (Secrets off the command line: gdm_opts.c.) */
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "gdm.h"
#include "gr_log.h"

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
            gr_log(GR_LOG_INFO,
                   "no key and no TLS: any program on this machine may use this %s (loopback "
                   "only; docs/server.md, \"Opening a server to a network\")",
                   prog);
        return 0;
    }
    if (guarded) return 0;
    if (!insecure)
        return gdm_usage_error(
            prog,
            "--host %s is not a loopback address, and nothing guards this port: anyone who "
            "reaches it could do anything a peer may. Give --key-file FILE (peers prove a "
            "key; make one with 'gridrpc keygen FILE'), or --tls-cert FILE --tls-key FILE, "
            "or --insecure to listen open anyway (docs/server.md, \"Opening a server to a "
            "network\")",
            host);
    gr_log(GR_LOG_WARN,
           "INSECURE: listening on %s with no key and no TLS (--insecure): ANYONE WHO REACHES THIS "
           "PORT CAN DO ANYTHING a peer may (run, fetch, forget, register); see docs/server.md, "
           "\"Opening a server to a network\"",
           host);
    return 0;
}
