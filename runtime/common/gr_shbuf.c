/* gr_shbuf.c: large buffers in memfds (gr_shbuf.h). A table from address to memfd tells
 * a shared buffer from a malloc'd one when it is freed; only page-aligned addresses are
 * looked up, since every shared buffer starts a mapping.
 *
 * Freed buffers are kept a while for the next of the same size: making a memfd of 64 MiB
 * and faulting its pages in costs as much as a third of sending it over loopback, and a
 * server mostly sees the same sizes again (the same function, the same n). The cache
 * holds at most GR_SHBUF_CACHE_BYTES in GR_SHBUF_CACHE_MAX buffers, each for at most
 * GR_SHBUF_CACHE_NS after it was freed (looked at whenever a buffer is made or freed). A
 * reused buffer holds its last call's bytes: it is zeroed unless its taker overwrites it
 * whole. */
#define _GNU_SOURCE
#include "gr_shbuf.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <unistd.h>

#define BUCKETS 256

typedef struct shbuf {
    void *p;
    size_t bytes;
    int fd;
    struct shbuf *next;
} shbuf;

#define GR_SHBUF_CACHE_MAX 8
#define GR_SHBUF_CACHE_BYTES ((size_t)256 << 20)
#define GR_SHBUF_CACHE_NS 10000000000LL

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static shbuf *table[BUCKETS];

/* The cache, under lock: freed buffers, the oldest first, with when each was freed. */
static struct {
    shbuf *b;
    long long at;
} cache[GR_SHBUF_CACHE_MAX];
static unsigned ncached;
static size_t cached_bytes;

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void release(shbuf *b) {
    munmap(b->p, b->bytes);
    close(b->fd);
    free(b);
}

/* Under lock: takes cache entry K out. */
static shbuf *uncache(unsigned k) {
    shbuf *b = cache[k].b;
    cached_bytes -= b->bytes;
    memmove(&cache[k], &cache[k + 1], (ncached - k - 1) * sizeof cache[0]);
    ncached--;
    return b;
}

/* Under lock: the entries too old to keep, into OUT (at most GR_SHBUF_CACHE_MAX); their count. */
static unsigned expire(shbuf **out, long long now) {
    unsigned n = 0;
    while (ncached && now - cache[0].at > GR_SHBUF_CACHE_NS)
        out[n++] = uncache(0);
    return n;
}

static size_t page_round(size_t bytes) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    return bytes > SIZE_MAX - page ? 0 : (bytes + page - 1) / page * page;
}

static unsigned bucket(const void *p) {
    uintptr_t a = (uintptr_t)p >> 12;
    return (unsigned)((a * 0x9e3779b97f4a7c15ull) >> 56) % BUCKETS;
}

static int page_aligned(const void *p) {
    return p && ((uintptr_t)p & 4095u) == 0;
}

/* A cached buffer of exactly BYTES (page-rounded), or NULL; drops expired ones. */
static shbuf *take_cached(size_t bytes) {
    shbuf *old[GR_SHBUF_CACHE_MAX], *b = NULL;
    pthread_mutex_lock(&lock);
    unsigned n = expire(old, now_ns());
    for (unsigned k = ncached; k-- > 0;)
        if (cache[k].b->bytes == bytes) {
            b = uncache(k);
            break;
        }
    pthread_mutex_unlock(&lock);
    for (unsigned k = 0; k < n; k++)
        release(old[k]);
    return b;
}

void *gr_shbuf_alloc(size_t bytes, int overwritten) {
    if (!bytes || !(bytes = page_round(bytes))) {
        errno = EINVAL;
        return NULL;
    }
    shbuf *b = take_cached(bytes);
    if (b) {
        if (!overwritten) memset(b->p, 0, b->bytes);
        unsigned k = bucket(b->p);
        pthread_mutex_lock(&lock);
        b->next = table[k];
        table[k] = b;
        pthread_mutex_unlock(&lock);
        return b->p;
    }
    b = malloc(sizeof *b);
    if (!b) return NULL;
    int fd = memfd_create("gridrpc-array", MFD_CLOEXEC);
    if (fd < 0) {
        free(b);
        return NULL;
    }
    void *p = MAP_FAILED;
    if (ftruncate(fd, (off_t)bytes) == 0)
        p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
    if (p == MAP_FAILED) {
        int err = errno;
        close(fd);
        free(b);
        errno = err;
        return NULL;
    }
    *b = (shbuf){p, bytes, fd, NULL};
    unsigned k = bucket(p);
    pthread_mutex_lock(&lock);
    b->next = table[k];
    table[k] = b;
    pthread_mutex_unlock(&lock);
    return p;
}

int gr_shbuf_fd(const void *p, size_t *bytes) {
    if (!page_aligned(p)) return -1;
    int fd = -1;
    pthread_mutex_lock(&lock);
    for (shbuf *b = table[bucket(p)]; b; b = b->next)
        if (b->p == p) {
            fd = b->fd;
            if (bytes) *bytes = b->bytes;
            break;
        }
    pthread_mutex_unlock(&lock);
    return fd;
}

void gr_shbuf_free(void *p) {
    if (!page_aligned(p)) {
        free(p);
        return;
    }
    shbuf *found = NULL;
    pthread_mutex_lock(&lock);
    for (shbuf **pp = &table[bucket(p)]; *pp; pp = &(*pp)->next)
        if ((*pp)->p == p) {
            found = *pp;
            *pp = found->next;
            break;
        }
    if (!found) {
        pthread_mutex_unlock(&lock);
        free(p);
        return;
    }
    /* Kept for the next buffer of its size, the oldest making room; what is too old or
     * too large goes. */
    shbuf *out[GR_SHBUF_CACHE_MAX + 1];
    long long now = now_ns();
    unsigned n = expire(out, now);
    if (found->bytes <= GR_SHBUF_CACHE_BYTES) {
        while (ncached &&
               (ncached == GR_SHBUF_CACHE_MAX || cached_bytes + found->bytes > GR_SHBUF_CACHE_BYTES))
            out[n++] = uncache(0);
        cache[ncached].b = found;
        cache[ncached++].at = now;
        cached_bytes += found->bytes;
    } else {
        out[n++] = found;
    }
    pthread_mutex_unlock(&lock);
    for (unsigned k = 0; k < n; k++)
        release(out[k]);
}

void gr_shbuf_trim(void) {
    shbuf *out[GR_SHBUF_CACHE_MAX];
    unsigned n = 0;
    pthread_mutex_lock(&lock);
    while (ncached)
        out[n++] = uncache(0);
    pthread_mutex_unlock(&lock);
    for (unsigned k = 0; k < n; k++)
        release(out[k]);
}

unsigned gr_shbuf_cached(size_t *bytes) {
    pthread_mutex_lock(&lock);
    unsigned n = ncached;
    if (bytes) *bytes = cached_bytes;
    pthread_mutex_unlock(&lock);
    return n;
}
