/* gr_shbuf.c: large buffers in memfds (gr_shbuf.h). A table from address to memfd tells
 * a shared buffer from a malloc'd one when it is freed; only page-aligned addresses are
 * looked up, since every shared buffer starts a mapping. */
#define _GNU_SOURCE
#include "gr_shbuf.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define BUCKETS 256

typedef struct shbuf {
    void *p;
    size_t bytes;
    int fd;
    struct shbuf *next;
} shbuf;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static shbuf *table[BUCKETS];

static unsigned bucket(const void *p) {
    uintptr_t a = (uintptr_t)p >> 12;
    return (unsigned)((a * 0x9e3779b97f4a7c15ull) >> 56) % BUCKETS;
}

static int page_aligned(const void *p) {
    return p && ((uintptr_t)p & 4095u) == 0;
}

void *gr_shbuf_alloc(size_t bytes) {
    if (!bytes) {
        errno = EINVAL;
        return NULL;
    }
    shbuf *b = malloc(sizeof *b);
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
    pthread_mutex_unlock(&lock);
    if (!found) {
        free(p);
        return;
    }
    munmap(found->p, found->bytes);
    close(found->fd);
    free(found);
}
