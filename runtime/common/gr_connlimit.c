/* gr_connlimit.c: counting open connections per peer address and in total (a hash of
 * the addresses that have one open, under one lock taken only at accept and close),
 * and raising the descriptor limit the daemons need. */
#include "gr_connlimit.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#define NBUCKETS 1024

typedef struct addr_key {
    uint8_t family; /* 4 or 6 */
    uint8_t b[16];  /* IPv4: 4 bytes; IPv6: 16 */
} addr_key;

typedef struct entry {
    addr_key k;
    unsigned open;
    struct entry *next;
} entry;

struct gr_connlimit {
    pthread_mutex_t lock;
    unsigned max_total, max_per_addr, total;
    entry *buckets[NBUCKETS];
};

/* The key SA counts under: 0, or -1 for an address that is not IP (counted in the
 * total only). */
static int key_of(const struct sockaddr *sa, addr_key *k) {
    memset(k, 0, sizeof *k);
    if (sa->sa_family == AF_INET) {
        k->family = 4;
        memcpy(k->b, &((const struct sockaddr_in *)sa)->sin_addr, 4);
        return 0;
    }
    if (sa->sa_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
        if (IN6_IS_ADDR_V4MAPPED(a)) {
            k->family = 4;
            memcpy(k->b, a->s6_addr + 12, 4);
        } else {
            k->family = 6;
            memcpy(k->b, a->s6_addr, 16);
        }
        return 0;
    }
    return -1;
}

static unsigned hash_of(const addr_key *k) {
    uint32_t h = 2166136261u; /* FNV-1a */
    h = (h ^ k->family) * 16777619u;
    for (unsigned i = 0; i < sizeof k->b; i++)
        h = (h ^ k->b[i]) * 16777619u;
    return h % NBUCKETS;
}

static entry **find(gr_connlimit *l, const addr_key *k) {
    entry **pp = &l->buckets[hash_of(k)];
    while (*pp && memcmp(&(*pp)->k, k, sizeof *k) != 0)
        pp = &(*pp)->next;
    return pp;
}

gr_connlimit *gr_connlimit_new(unsigned max_total, unsigned max_per_addr) {
    gr_connlimit *l = calloc(1, sizeof *l);
    if (!l) return NULL;
    pthread_mutex_init(&l->lock, NULL);
    l->max_total = max_total;
    l->max_per_addr = max_per_addr;
    return l;
}

void gr_connlimit_free(gr_connlimit *l) {
    if (!l) return;
    for (unsigned b = 0; b < NBUCKETS; b++)
        while (l->buckets[b]) {
            entry *x = l->buckets[b];
            l->buckets[b] = x->next;
            free(x);
        }
    pthread_mutex_destroy(&l->lock);
    free(l);
}

int gr_connlimit_admit(gr_connlimit *l, const struct sockaddr *sa, unsigned *open) {
    addr_key k;
    int ip = key_of(sa, &k) == 0;
    pthread_mutex_lock(&l->lock);
    if (l->total >= l->max_total) {
        *open = l->total;
        pthread_mutex_unlock(&l->lock);
        return GR_CONN_TOTAL;
    }
    if (ip) {
        entry **pp = find(l, &k);
        if (*pp && (*pp)->open >= l->max_per_addr) {
            *open = (*pp)->open;
            pthread_mutex_unlock(&l->lock);
            return GR_CONN_PER_ADDR;
        }
        if (!*pp) {
            /* Out of memory for the entry: the address goes uncounted rather than refused
             * (the total still bounds it). */
            entry *x = calloc(1, sizeof *x);
            if (x) {
                x->k = k;
                *pp = x;
            }
        }
        if (*pp) (*pp)->open++;
    }
    *open = ++l->total;
    pthread_mutex_unlock(&l->lock);
    return GR_CONN_OK;
}

void gr_connlimit_release(gr_connlimit *l, const struct sockaddr *sa) {
    addr_key k;
    int ip = key_of(sa, &k) == 0;
    pthread_mutex_lock(&l->lock);
    if (l->total > 0) l->total--;
    if (ip) {
        entry **pp = find(l, &k);
        if (*pp && --(*pp)->open == 0) {
            entry *x = *pp;
            *pp = x->next;
            free(x);
        }
    }
    pthread_mutex_unlock(&l->lock);
}

unsigned gr_connlimit_open(gr_connlimit *l) {
    pthread_mutex_lock(&l->lock);
    unsigned n = l->total;
    pthread_mutex_unlock(&l->lock);
    return n;
}

unsigned long gr_raise_nofile(unsigned long want) {
    struct rlimit r;
    if (getrlimit(RLIMIT_NOFILE, &r) != 0) return 0;
    if (r.rlim_cur != RLIM_INFINITY && r.rlim_cur < want) {
        rlim_t target = r.rlim_max == RLIM_INFINITY || r.rlim_max > want ? (rlim_t)want : r.rlim_max;
        struct rlimit n = {target, r.rlim_max};
        if (setrlimit(RLIMIT_NOFILE, &n) == 0) r.rlim_cur = target;
    }
    return r.rlim_cur == RLIM_INFINITY ? (unsigned long)-1 : (unsigned long)r.rlim_cur;
}

void gr_connlimit_key_text(const struct sockaddr *sa, char *out, unsigned len) {
    addr_key k;
    char host[INET6_ADDRSTRLEN] = "?";
    if (key_of(sa, &k) != 0) {
        snprintf(out, len, "?");
    } else if (k.family == 4) {
        inet_ntop(AF_INET, k.b, host, sizeof host);
        snprintf(out, len, "%s", host);
    } else {
        inet_ntop(AF_INET6, k.b, host, sizeof host);
        snprintf(out, len, "%s", host);
    }
}
