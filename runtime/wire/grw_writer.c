/* grw_writer.c: writing one record-marked message. Small items collect in a 64 KiB
 * buffer; a large block is sent with writev together with what is buffered, as one
 * fragment, so bulk arrays are not copied into the buffer. Arrays that need byte-order
 * conversion are converted in 1 MiB chunks into a staging area (the one copy XDR's
 * big-endian rule costs) and sent chunk by chunk. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "grw_internal.h"
#include "grw_tls.h"
#include "grw_wire.h"

void grw_writer_init(grw_writer *w, int fd) {
    w->fd = fd;
    w->deadline_ns = 0;
    w->len = 0;
    w->tally = NULL;
    w->tls = NULL;
}

/* Writes every byte of IOV (modified in place). Like the reader, tries first without
 * blocking and polls only when the socket buffer is full. */
static int sock_writev(grw_writer *w, struct iovec *iov, int cnt, gr_err *e) {
    if (w->tls) {
        size_t sent = 0;
        int rc = grw_tls_writev(w->tls, iov, cnt, w->deadline_ns, &sent, e);
        if (w->tally) __atomic_add_fetch(w->tally, (uint64_t)sent, __ATOMIC_RELAXED);
        return rc;
    }
    while (cnt > 0) {
        struct msghdr mh;
        memset(&mh, 0, sizeof mh);
        mh.msg_iov = iov;
        mh.msg_iovlen = (size_t)cnt;
        ssize_t k = sendmsg(w->fd, &mh, MSG_NOSIGNAL | (w->deadline_ns ? MSG_DONTWAIT : 0));
        /* A file (a job kept on disk, gsv_jobs.c) takes the same bytes; its errors
         * (ENOSPC) are the disk's, and errno keeps them for the caller. */
        if (k < 0 && errno == ENOTSOCK) {
            k = writev(w->fd, iov, cnt);
            if (k < 0 && errno != EINTR) {
                int err = errno;
                gr_seterr(e, GRID_ERR_IO, "writing: %s", strerror(err));
                errno = err;
                return GRID_ERR_IO;
            }
        }
        if (k < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                struct pollfd p = {w->fd, POLLOUT, 0};
                int rc = poll(&p, 1, grw_poll_ms(w->deadline_ns));
                if (rc == 0) return gr_seterr(e, GRID_ERR_TIMEOUT, "timed out sending to the peer");
                continue;
            }
            return gr_seterr(e, GRID_ERR_CONN_LOST, "sending to the peer: %s", strerror(errno));
        }
        size_t done = (size_t)k;
        if (w->tally) __atomic_add_fetch(w->tally, (uint64_t)k, __ATOMIC_RELAXED);
        while (cnt > 0 && done >= iov->iov_len) {
            done -= iov->iov_len;
            iov++;
            cnt--;
        }
        if (cnt > 0) {
            iov->iov_base = (char *)iov->iov_base + done;
            iov->iov_len -= done;
        }
    }
    return GRID_OK;
}

/* Sends the buffer plus EXTRA bytes at P as one fragment. */
static int flush_fragment(grw_writer *w, const void *p, size_t extra, int last, gr_err *e) {
    size_t n = w->len + extra;
    grw_put32(w->buf, (uint32_t)n | (last ? 0x80000000u : 0));
    struct iovec iov[2] = {{w->buf, 4 + w->len}, {(void *)p, extra}};
    int rc = sock_writev(w, iov, extra ? 2 : 1, e);
    w->len = 0;
    return rc;
}

int grw_begin(grw_writer *w, uint32_t type, uint32_t flags, uint64_t request_id, gr_err *e) {
    w->len = 0;
    uint8_t *b = w->buf + 4;
    grw_put32(b, GRW_MAGIC);
    grw_put32(b + 4, GRW_VERSION);
    grw_put32(b + 8, type);
    grw_put32(b + 12, flags);
    grw_put32(b + 16, (uint32_t)(request_id >> 32));
    grw_put32(b + 20, (uint32_t)request_id);
    w->len = GRW_HEADER_BYTES;
    (void)e;
    return GRID_OK;
}

#define GRW_BUF_CAP (sizeof(((grw_writer *)0)->buf) - 4)
/* Fragments never exceed this, well under record marking's 2^31 - 1. */

int grw_write(grw_writer *w, const void *src, size_t n, gr_err *e) {
    const uint8_t *s = src;
    if (n >= GRW_BUF_CAP / 2) {
        while (n > 0) {
            size_t k = n < GRW_MAX_FRAGMENT ? n : GRW_MAX_FRAGMENT;
            int rc = flush_fragment(w, s, k, 0, e);
            if (rc) return rc;
            s += k;
            n -= k;
        }
        return GRID_OK;
    }
    if (w->len + n > GRW_BUF_CAP) {
        int rc = flush_fragment(w, NULL, 0, 0, e);
        if (rc) return rc;
    }
    if (n == 0) return GRID_OK; /* an empty item may come with a NULL pointer: no memcpy */
    memcpy(w->buf + 4 + w->len, s, n);
    w->len += n;
    return GRID_OK;
}

int grw_write_u32(grw_writer *w, uint32_t v, gr_err *e) {
    uint8_t b[4];
    grw_put32(b, v);
    return grw_write(w, b, 4, e);
}

int grw_write_i32(grw_writer *w, int32_t v, gr_err *e) {
    return grw_write_u32(w, (uint32_t)v, e);
}

int grw_write_u64(grw_writer *w, uint64_t v, gr_err *e) {
    uint8_t b[8];
    grw_put32(b, (uint32_t)(v >> 32));
    grw_put32(b + 4, (uint32_t)v);
    return grw_write(w, b, 8, e);
}

static int write_pad(grw_writer *w, size_t len, gr_err *e) {
    static const uint8_t zero[4] = {0, 0, 0, 0};
    size_t n = (4 - (len & 3)) & 3;
    return n ? grw_write(w, zero, n, e) : GRID_OK;
}

int grw_write_opaque(grw_writer *w, const void *p, uint32_t n, gr_err *e) {
    int rc = grw_write_u32(w, n, e);
    if (!rc) rc = grw_write(w, p, n, e);
    if (!rc) rc = write_pad(w, n, e);
    return rc;
}

int grw_write_string(grw_writer *w, const char *s, gr_err *e) {
    size_t n = strlen(s);
    if (n > 0xffffffffu) return gr_seterr(e, GRID_ERR_LIMIT, "string too long");
    return grw_write_opaque(w, s, (uint32_t)n, e);
}

int grw_write_words(grw_writer *w, const void *src, size_t n, unsigned word, gr_err *e) {
    size_t bytes = n * word;
    if (word && bytes / word != n) return gr_seterr(e, GRID_ERR_LIMIT, "array too large");
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    int rc = grw_write(w, src, bytes, e);
#else
    int rc = GRID_OK;
    if (word == 1) {
        rc = grw_write(w, src, bytes, e);
    } else {
        const size_t chunk = (size_t)1 << 20;
        size_t cap = bytes < chunk ? bytes : chunk;
        uint8_t *stage = cap >= GRW_BUF_CAP / 2 ? malloc(cap) : NULL;
        const uint8_t *s = src;
        size_t left = bytes;
        while (left > 0 && rc == GRID_OK) {
            size_t k = left < chunk ? left : chunk;
            if (stage) {
                grw_copy_swap(stage, s, k / word, word);
                rc = grw_write(w, stage, k, e);
            } else {
                /* Small arrays: convert straight into the message buffer. */
                if (w->len + k > GRW_BUF_CAP) rc = flush_fragment(w, NULL, 0, 0, e);
                if (rc) break;
                grw_copy_swap(w->buf + 4 + w->len, s, k / word, word);
                w->len += k;
            }
            s += k;
            left -= k;
        }
        free(stage);
    }
#endif
    if (!rc) rc = write_pad(w, bytes, e);
    return rc;
}

int grw_finish(grw_writer *w, gr_err *e) {
    return flush_fragment(w, NULL, 0, 1, e);
}

int grw_write_raw(grw_writer *w, const void *src, size_t n, gr_err *e) {
    if (w->len) return gr_seterr(e, GRID_ERR_INTERNAL, "raw bytes inside a message");
    struct iovec iov = {(void *)src, n};
    return n ? sock_writev(w, &iov, 1, e) : GRID_OK;
}

/* Each word is loaded whole before it is stored, so DST may equal SRC (in place). */
void grw_copy_swap(void *dst, const void *src, size_t n, unsigned word) {
    uint8_t *d = dst;
    const uint8_t *s = src;
    if (word == 8) {
        for (size_t i = 0; i < n; i++) {
            uint64_t v;
            memcpy(&v, s + 8 * i, 8);
            v = __builtin_bswap64(v);
            memcpy(d + 8 * i, &v, 8);
        }
    } else if (word == 4) {
        for (size_t i = 0; i < n; i++) {
            uint32_t v;
            memcpy(&v, s + 4 * i, 4);
            v = __builtin_bswap32(v);
            memcpy(d + 4 * i, &v, 4);
        }
    } else if (word == 2) {
        for (size_t i = 0; i < n; i++) {
            uint16_t v;
            memcpy(&v, s + 2 * i, 2);
            v = __builtin_bswap16(v);
            memcpy(d + 2 * i, &v, 2);
        }
    } else if (d != s) {
        memcpy(d, s, n * word);
    }
}

void grw_swap_words(void *p, size_t n, unsigned word) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    (void)p;
    (void)n;
    (void)word;
#else
    grw_copy_swap(p, p, n, word);
#endif
}
