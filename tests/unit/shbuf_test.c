/* shbuf_test.c: the shared buffers of runtime/common/gr_shbuf.c: zeroed, page-aligned,
 * backed by a memfd another process sees (a child maps the descriptor and reads what this
 * process wrote, and writes back what this one reads); a freed one is kept for the next
 * of its size (zeroed again unless its taker overwrites it), at most 8 of them, and
 * trimming the cache unmaps it and closes its descriptor; a malloc'd pointer and NULL
 * pass through the same free; four threads allocating and freeing at once keep the
 * table whole. Prints TAP. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gr_shbuf.h"
#include "tap.h"

/* 1 if ADDR lies in a mapping of this process (/proc/self/maps). */
static int mapped(const void *addr) {
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) return -1;
    char line[512];
    int in = 0;
    while (!in && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx", &lo, &hi) == 2) in = (uintptr_t)addr >= lo && (uintptr_t)addr < hi;
    }
    fclose(f);
    return in;
}

static void *churn(void *arg) {
    unsigned seed = (unsigned)(uintptr_t)arg;
    int ok = 1;
    for (int i = 0; i < 200 && ok; i++) {
        size_t bytes = GR_SHBUF_MIN + (size_t)(rand_r(&seed) % 65536);
        unsigned char *p = gr_shbuf_alloc(bytes, i % 2);
        size_t got = 0;
        ok = p && gr_shbuf_fd(p, &got) >= 0 && got >= bytes && got < bytes + 4096 && (i % 2 || !p[bytes - 1]);
        if (p) {
            p[bytes - 1] = (unsigned char)i;
            gr_shbuf_free(p);
        }
    }
    return (void *)(uintptr_t)ok;
}

int main(void) {
    size_t bytes = GR_SHBUF_MIN + 12345, whole = (bytes + 4095) / 4096 * 4096;
    unsigned char *p = gr_shbuf_alloc(bytes, 0);
    int zero = p != NULL;
    for (size_t i = 0; zero && i < bytes; i++)
        zero = p[i] == 0;
    result(zero && ((uintptr_t)p & 4095u) == 0, "a shared buffer is zeroed and starts a page");

    size_t got = 0;
    int fd = p ? gr_shbuf_fd(p, &got) : -1;
    struct stat st;
    result(fd >= 0 && got == whole && fstat(fd, &st) == 0 && (size_t)st.st_size == whole,
           "its descriptor is a file of its size in whole pages (%zu bytes)", got);
    result(gr_shbuf_fd(p ? p + 4096 : NULL, NULL) == -1, "an address inside it is not a shared buffer");

    /* Another process maps the descriptor: it reads what was written here, and what it
     * writes is read here. */
    if (p) {
        for (size_t i = 0; i < bytes; i++)
            p[i] = (unsigned char)(i * 7);
    }
    pid_t child = fork();
    if (child == 0) {
        unsigned char *q = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (q == MAP_FAILED) _exit(2);
        for (size_t i = 0; i < bytes; i++)
            if (q[i] != (unsigned char)(i * 7)) _exit(3);
        q[bytes - 1] = 0xAB;
        _exit(0);
    }
    int status = -1;
    waitpid(child, &status, 0);
    result(
        WIFEXITED(status) && WEXITSTATUS(status) == 0 && p && p[bytes - 1] == 0xAB,
        "another process that maps it sees this one's bytes, and this one sees its writes (child status %d)",
        WIFEXITED(status) ? WEXITSTATUS(status) : -1);

    /* Freed, it is kept for the next buffer of its size: handed out again with its bytes
     * when the taker overwrites them, zeroed when not. */
    gr_shbuf_free(p);
    result(gr_shbuf_fd(p, NULL) == -1 && gr_shbuf_cached(NULL) == 1,
           "a freed buffer is no longer known, and is kept");
    unsigned char *again = gr_shbuf_alloc(bytes, 1);
    result(again == p && gr_shbuf_fd(again, NULL) == fd && again[bytes - 1] == 0xAB &&
               gr_shbuf_cached(NULL) == 0,
           "the next buffer of its size is the same one, bytes kept for a taker that overwrites it");
    gr_shbuf_free(again);
    again = gr_shbuf_alloc(bytes - 10, 0); /* the same pages */
    zero = again == p;
    for (size_t i = 0; zero && i < whole; i++)
        zero = again[i] == 0;
    result(zero, "for any other taker it is zeroed again, to its last page");
    unsigned char *other = gr_shbuf_alloc(bytes + 8192, 0);
    result(other && other != p, "a buffer of another size is not the kept one");
    gr_shbuf_free(other);
    gr_shbuf_free(again);
    size_t kept = 0;
    result(gr_shbuf_cached(&kept) == 2 && kept == whole + whole + 8192, "both are kept (%zu bytes)", kept);
    gr_shbuf_trim();
    errno = 0;
    int closed = fcntl(fd, F_GETFD) == -1 && errno == EBADF;
    result(closed && mapped(p) == 0 && gr_shbuf_cached(&kept) == 0 && kept == 0,
           "trimming the cache unmaps them and closes their descriptors");

    /* At most 8 are kept: the oldest go first. */
    unsigned char *many[10];
    for (int i = 0; i < 10; i++)
        many[i] = gr_shbuf_alloc(GR_SHBUF_MIN + (size_t)i * 4096, 1);
    int fd0 = many[0] ? gr_shbuf_fd(many[0], NULL) : -1;
    for (int i = 0; i < 10; i++)
        gr_shbuf_free(many[i]);
    errno = 0;
    result(gr_shbuf_cached(NULL) == 8 && fcntl(fd0, F_GETFD) == -1 && errno == EBADF && mapped(many[0]) == 0,
           "of 10 freed, the 8 newest are kept and the oldest is released");
    gr_shbuf_trim();

    /* malloc'd memory, page-aligned or not, goes through the same free (ASan sees a leak
     * or a bad free otherwise). */
    void *m = malloc(100), *a = NULL;
    int aligned = posix_memalign(&a, 4096, 8192) == 0;
    result(gr_shbuf_fd(m, NULL) == -1 && (!aligned || gr_shbuf_fd(a, NULL) == -1),
           "malloc'd memory is not a shared buffer");
    gr_shbuf_free(m);
    if (aligned) gr_shbuf_free(a);
    gr_shbuf_free(NULL);
    result(1, "gr_shbuf_free frees malloc'd memory and NULL");
    errno = 0;
    result(gr_shbuf_alloc(0, 0) == NULL && errno == EINVAL, "a buffer of 0 bytes is refused (EINVAL)");

    pthread_t t[4];
    int ok = 1;
    for (int i = 0; i < 4; i++)
        if (pthread_create(&t[i], NULL, churn, (void *)(uintptr_t)(i + 1))) ok = 0;
    for (int i = 0; i < 4; i++) {
        void *r = NULL;
        pthread_join(t[i], &r);
        if (!r) ok = 0;
    }
    result(ok, "four threads allocating and freeing 200 buffers each");
    printf("1..%d\n", tests);
    return failed ? 1 : 0;
}
