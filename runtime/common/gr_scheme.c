/* gr_scheme.c: the gridrpc:// and gridrpcs:// schemes and the process's set of TLS
 * endpoints (gr_scheme.h). The set is small (the servers a process names) and only
 * grows; a lookup is a linear scan under a mutex, far below a connection's cost. */
#include "gr_scheme.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

int gr_scheme_len(const char *s, int *tls) {
    if (tls) *tls = 0;
    if (!s) return 0;
    if (strncmp(s, GR_SCHEME_TLS, strlen(GR_SCHEME_TLS)) == 0) {
        if (tls) *tls = 1;
        return (int)strlen(GR_SCHEME_TLS);
    }
    if (strncmp(s, GR_SCHEME_PLAIN, strlen(GR_SCHEME_PLAIN)) == 0) return (int)strlen(GR_SCHEME_PLAIN);
    return 0;
}

typedef struct endpoint {
    char *host;
    int port;
} endpoint;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static endpoint *set;
static size_t n, cap;

static int find(const char *host, int port) {
    for (size_t i = 0; i < n; i++)
        if (set[i].port == port && strcmp(set[i].host, host) == 0) return 1;
    return 0;
}

void gr_tls_endpoint_mark(const char *host, int port) {
    if (!host || !*host) return;
    pthread_mutex_lock(&lock);
    if (!find(host, port)) {
        if (n == cap) {
            size_t ncap = cap ? 2 * cap : 16;
            endpoint *p = realloc(set, ncap * sizeof *p);
            if (p) set = p, cap = ncap;
        }
        char *h = n < cap ? strdup(host) : NULL;
        /* Out of memory: the endpoint stays unmarked and its plain connection fails
         * its handshake with a clear error rather than silently skipping TLS. */
        if (h) set[n++] = (endpoint){h, port};
    }
    pthread_mutex_unlock(&lock);
}

int gr_tls_endpoint(const char *host, int port) {
    if (!host) return 0;
    pthread_mutex_lock(&lock);
    int r = find(host, port);
    pthread_mutex_unlock(&lock);
    return r;
}
