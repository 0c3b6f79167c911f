/* study.h: what the issue-11 study examples share (dmmul_dist, linpack_chain, ep_sweep):
 * the list of servers from the command line, the URL of a function on one of them, and
 * the bytes on this host's network links (the lab gives each host its own namespace, so
 * there they are exactly the bytes this client moved). */
#ifndef EXAMPLES_STUDY_H
#define EXAMPLES_STUDY_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STUDY_MAX_SERVERS 64

/* Splits "host:port,host:port" into SRV (each "host:port", or "gridrpcs://host:port" for
 * a server that speaks TLS); returns how many (at least one), or exits with a message
 * naming the bad entry. */
static inline int study_servers(const char *list, char srv[][280], const char *prog) {
    int n = 0;
    const char *p = list;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        size_t scheme = 0; /* a gridrpcs:// entry keeps its scheme, for study_url */
        if (strncmp(p, "gridrpc://", 10) == 0) {
            p += 10;
            len -= 10;
        } else if (strncmp(p, "gridrpcs://", 11) == 0) {
            scheme = 11;
        }
        if (len <= scheme || len >= 280 || memchr(p + scheme, ':', len - scheme) == NULL) {
            fprintf(stderr, "%s: --servers takes host:port entries separated by commas, not '%.*s'\n", prog,
                    (int)len, p);
            exit(2);
        }
        if (n == STUDY_MAX_SERVERS) {
            fprintf(stderr, "%s: at most %d servers in --servers\n", prog, STUDY_MAX_SERVERS);
            exit(2);
        }
        memcpy(srv[n], p, len);
        srv[n][len] = '\0';
        n++;
        p += len + (e != NULL);
    }
    if (n == 0) {
        fprintf(stderr, "%s: --servers is empty: give host:port[,host:port...]\n", prog);
        exit(2);
    }
    return n;
}

/* "gridrpc://SERVER/FUNC" into BUF (SERVER may carry gridrpcs:// itself). */
static inline const char *study_url(char *buf, size_t n, const char *server, const char *func) {
    snprintf(buf, n, "%s%s/%s", strncmp(server, "gridrpcs://", 11) == 0 ? "" : "gridrpc://", server, func);
    return buf;
}

/* Bytes received and sent on every interface but loopback of this process's network
 * namespace (/proc/net/dev). In the lab that is the client host's one link; on a shared
 * host it counts everyone's traffic, so the examples report it as "link" bytes only
 * when asked (--link-bytes). */
static inline void study_link_bytes(unsigned long long *rx, unsigned long long *tx) {
    *rx = *tx = 0;
    FILE *f = fopen("/proc/net/dev", "r");
    if (f == NULL) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (colon == NULL) continue; /* the two header lines */
        *colon = '\0';
        char *name = line;
        while (*name == ' ')
            name++;
        if (strcmp(name, "lo") == 0) continue;
        unsigned long long v[9];
        if (sscanf(colon + 1, "%llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
                   &v[4], &v[5], &v[6], &v[7], &v[8]) == 9) {
            *rx += v[0];
            *tx += v[8];
        }
    }
    fclose(f);
}

#endif
