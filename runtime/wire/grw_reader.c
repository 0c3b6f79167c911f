/* grw_reader.c: reading one record-marked message from a socket as a stream. Small
 * items come out of a 64 KiB buffer; large reads (array bulk) go straight into the
 * destination buffer, so an array costs one copy (kernel to its final place) plus the
 * in-place byte-order conversion. Every length is checked against the message limit
 * before it is trusted. */
#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "grw_internal.h"
#include "grw_tls.h"
#include "grw_wire.h"

int grw_poll_ms(long long deadline_ns) {
    if (deadline_ns == 0) return -1;
    long long left = deadline_ns - gr_now_ns();
    if (left <= 0) return 0;
    long long ms = (left + 999999) / 1000000;
    return ms > 1000000000 ? 1000000000 : (int)ms;
}

void grw_reader_init(grw_reader *r, int fd, uint64_t max_message) {
    memset(r, 0, offsetof(grw_reader, buf));
    r->fd = fd;
    r->max_message = max_message;
}

/* Reads at least 1 and at most N bytes from the socket. With a deadline the read is
 * tried first without blocking and poll() runs only when no data is ready, so a bulk
 * transfer costs one system call per chunk rather than two. */
static int sock_read(grw_reader *r, void *dst, size_t n, size_t *got, gr_err *e) {
    /* A stall ends the wait at idle_ns, before the message's own deadline. */
    long long deadline = r->deadline_ns;
    if (r->idle_ns > 0) {
        long long idle = gr_now_ns() + r->idle_ns;
        if (!deadline || idle < deadline) deadline = idle;
    }
    if (r->tls) {
        int rc = grw_tls_read(r->tls, dst, n, got, deadline, e);
        if (!rc && r->tally) __atomic_add_fetch(r->tally, (uint64_t)*got, __ATOMIC_RELAXED);
        return rc;
    }
    for (;;) {
        ssize_t k = recv(r->fd, dst, n, deadline ? MSG_DONTWAIT : 0);
        /* A file (a job kept on disk, gsv_jobs.c) reads the same bytes. */
        if (k < 0 && errno == ENOTSOCK) k = read(r->fd, dst, n);
        if (k > 0) {
            *got = (size_t)k;
            if (r->tally) __atomic_add_fetch(r->tally, (uint64_t)k, __ATOMIC_RELAXED);
            return GRID_OK;
        }
        if (k == 0) return gr_seterr(e, GRID_ERR_CONN_LOST, "the peer closed the connection");
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return gr_seterr(e, GRID_ERR_CONN_LOST, "reading from the peer: %s", strerror(errno));
        struct pollfd p = {r->fd, POLLIN, 0};
        int rc = poll(&p, 1, grw_poll_ms(deadline));
        if (rc == 0) return gr_seterr(e, GRID_ERR_TIMEOUT, "timed out waiting for the peer");
        if (rc < 0 && errno != EINTR)
            return gr_seterr(e, GRID_ERR_CONN_LOST, "waiting for the peer: %s", strerror(errno));
    }
}

/* Reads exactly N raw stream bytes (fragment headers included), buffer first. */
static int raw_read(grw_reader *r, void *dst, size_t n, gr_err *e) {
    uint8_t *d = dst;
    size_t avail = r->len - r->pos;
    if (avail) {
        size_t k = avail < n ? avail : n;
        memcpy(d, r->buf + r->pos, k);
        r->pos += k;
        d += k;
        n -= k;
    }
    while (n > 0) {
        size_t got;
        int rc;
        if (n >= sizeof r->buf / 2) {
            rc = sock_read(r, d, n, &got, e);
            if (rc) return rc;
            d += got;
            n -= got;
        } else {
            rc = sock_read(r, r->buf, sizeof r->buf, &got, e);
            if (rc) return rc;
            r->pos = 0;
            r->len = got;
            size_t k = got < n ? got : n;
            memcpy(d, r->buf, k);
            r->pos = k;
            d += k;
            n -= k;
        }
    }
    return GRID_OK;
}

/* Moves to the next fragment of the current record. */
static int next_fragment(grw_reader *r, gr_err *e) {
    if (r->last_frag) return gr_seterr(e, GRID_ERR_PROTOCOL, "message shorter than its contents say");
    uint8_t h[4];
    if (r->consumed + 4 > r->max_message)
        return gr_seterr(e, GRID_ERR_LIMIT, "message larger than the limit of %llu bytes",
                         (unsigned long long)r->max_message);
    r->consumed += 4;
    int rc = raw_read(r, h, 4, e);
    if (rc) return rc;
    uint32_t v = grw_get32(h);
    r->last_frag = (v & 0x80000000u) != 0;
    r->frag_left = v & 0x7fffffffu;
    return GRID_OK;
}

/* Refuses to read N more bytes when they would take the message past its limit. */
static int check_room(const grw_reader *r, size_t n, gr_err *e) {
    if (r->consumed + n > r->max_message || r->consumed + n < r->consumed)
        return gr_seterr(e, GRID_ERR_LIMIT, "message larger than the limit of %llu bytes",
                         (unsigned long long)r->max_message);
    return GRID_OK;
}

int grw_read(grw_reader *r, void *dst, size_t n, gr_err *e) {
    uint8_t *d = dst;
    int rc0 = check_room(r, n, e);
    if (rc0) return rc0;
    while (n > 0) {
        while (r->frag_left == 0) {
            int rc = next_fragment(r, e);
            if (rc) return rc;
            /* The fragment header just read counts too: the rest must still fit. */
            rc = check_room(r, n, e);
            if (rc) return rc;
        }
        size_t k = r->frag_left < n ? r->frag_left : n;
        if (r->credit && r->consumed + k > r->credit_to) {
            if (r->consumed >= r->credit_to) {
                int rc = r->credit(r, e);
                if (rc) return rc;
                if (r->credit_to <= r->consumed)
                    return gr_seterr(e, GRID_ERR_LIMIT, "no room for the rest of the message");
            }
            if (r->consumed + k > r->credit_to) k = (size_t)(r->credit_to - r->consumed);
        }
        int rc = raw_read(r, d, k, e);
        if (rc) return rc;
        r->frag_left -= (uint32_t)k;
        r->consumed += k;
        d += k;
        n -= k;
    }
    return GRID_OK;
}

int grw_read_header(grw_reader *r, grw_header *h, gr_err *e) {
    r->consumed = 0;
    r->frag_left = 0;
    r->last_frag = 0;
    r->in_message = 1;
    uint8_t b[GRW_HEADER_BYTES];
    /* A peer that closes between messages is not an error worth a message. */
    if (r->len == r->pos) {
        size_t got;
        int rc = sock_read(r, r->buf, sizeof r->buf, &got, e);
        if (rc == GRID_ERR_CONN_LOST && e && strcmp(e->msg, "the peer closed the connection") == 0)
            e->msg[0] = '\0';
        if (rc) return rc;
        r->pos = 0;
        r->len = got;
    }
    int rc = grw_read(r, b, sizeof b, e);
    if (rc) return rc;
    h->magic = grw_get32(b);
    h->version = grw_get32(b + 4);
    h->type = grw_get32(b + 8);
    h->flags = grw_get32(b + 12);
    h->request_id = (uint64_t)grw_get32(b + 16) << 32 | grw_get32(b + 20);
    if (h->magic != GRW_MAGIC)
        return gr_seterr(e, GRID_ERR_PROTOCOL,
                         "not a GridRPC message (magic 0x%08x): is the peer speaking GridRPC?", h->magic);
    if (h->version != GRW_VERSION)
        return gr_seterr(e, GRID_ERR_PROTOCOL, "protocol version %u is not supported (this side speaks %u)",
                         h->version, GRW_VERSION);
    if (h->flags != 0) return gr_seterr(e, GRID_ERR_PROTOCOL, "unknown message flags 0x%x", h->flags);
    return GRID_OK;
}

int grw_read_u32(grw_reader *r, uint32_t *v, gr_err *e) {
    uint8_t b[4];
    int rc = grw_read(r, b, 4, e);
    if (rc == GRID_OK) *v = grw_get32(b);
    return rc;
}

int grw_read_u64(grw_reader *r, uint64_t *v, gr_err *e) {
    uint8_t b[8];
    int rc = grw_read(r, b, 8, e);
    if (rc == GRID_OK) *v = (uint64_t)grw_get32(b) << 32 | grw_get32(b + 4);
    return rc;
}

static int skip_pad(grw_reader *r, uint32_t len, gr_err *e) {
    uint8_t pad[4];
    uint32_t n = (4 - (len & 3)) & 3;
    if (n == 0) return GRID_OK;
    int rc = grw_read(r, pad, n, e);
    if (rc) return rc;
    for (uint32_t i = 0; i < n; i++)
        if (pad[i] != 0) return gr_seterr(e, GRID_ERR_PROTOCOL, "non-zero XDR padding");
    return GRID_OK;
}

int grw_read_opaque(grw_reader *r, uint32_t max, uint8_t **out, uint32_t *len, gr_err *e) {
    *out = NULL;
    uint32_t n;
    int rc = grw_read_u32(r, &n, e);
    if (rc) return rc;
    if (n > max) return gr_seterr(e, GRID_ERR_LIMIT, "a field of %u bytes exceeds the limit of %u", n, max);
    if (r->consumed + n > r->max_message)
        return gr_seterr(e, GRID_ERR_LIMIT, "message larger than the limit of %llu bytes",
                         (unsigned long long)r->max_message);
    uint8_t *p = malloc((size_t)n + 1);
    if (!p) return gr_seterr(e, GRID_ERR_NOMEM, "out of memory for a field of %u bytes", n);
    rc = grw_read(r, p, n, e);
    if (!rc) rc = skip_pad(r, n, e);
    if (rc) {
        free(p);
        return rc;
    }
    p[n] = 0;
    *out = p;
    *len = n;
    return GRID_OK;
}

/* XDR strings carry no NUL: one inside would cut the C string short of its length. */
static int has_nul(const void *p, uint32_t n, gr_err *e) {
    if (!memchr(p, 0, n)) return 0;
    gr_seterr(e, GRID_ERR_PROTOCOL, "a string holds a NUL byte");
    return 1;
}

int grw_read_string(grw_reader *r, uint32_t max, char **out, gr_err *e) {
    uint8_t *p;
    uint32_t n;
    int rc = grw_read_opaque(r, max, &p, &n, e);
    if (rc) {
        *out = NULL;
        return rc;
    }
    if (has_nul(p, n, e)) {
        free(p);
        *out = NULL;
        return GRID_ERR_PROTOCOL;
    }
    *out = (char *)p;
    return GRID_OK;
}

int grw_read_string_buf(grw_reader *r, char *buf, uint32_t max, gr_err *e) {
    buf[0] = '\0';
    uint32_t n;
    int rc = grw_read_u32(r, &n, e);
    if (rc) return rc;
    if (n > max) return gr_seterr(e, GRID_ERR_LIMIT, "a string of %u bytes exceeds the limit of %u", n, max);
    rc = grw_read(r, buf, n, e);
    if (!rc) rc = skip_pad(r, n, e);
    if (rc) {
        buf[0] = '\0';
        return rc;
    }
    buf[n] = '\0';
    if (has_nul(buf, n, e)) {
        buf[0] = '\0';
        return GRID_ERR_PROTOCOL;
    }
    return GRID_OK;
}

int grw_end(grw_reader *r, gr_err *e) {
    /* Empty fragments may still follow; next_fragment counts their headers against the
     * message limit, so a peer cannot keep us here forever. */
    for (;;) {
        if (r->frag_left != 0) return gr_seterr(e, GRID_ERR_PROTOCOL, "message longer than its contents say");
        if (r->last_frag) break;
        int rc = next_fragment(r, e);
        if (rc) return rc;
    }
    r->in_message = 0;
    return GRID_OK;
}

int grw_more(grw_reader *r, int *more, gr_err *e) {
    *more = 0;
    while (r->frag_left == 0 && !r->last_frag) {
        int rc = next_fragment(r, e);
        if (rc) return rc;
    }
    *more = r->frag_left != 0;
    return GRID_OK;
}

int grw_skip(grw_reader *r, gr_err *e) {
    uint8_t sink[4096];
    for (;;) {
        while (r->frag_left > 0) {
            size_t k = r->frag_left < sizeof sink ? r->frag_left : sizeof sink;
            int rc = grw_read(r, sink, k, e);
            if (rc) return rc;
        }
        if (r->last_frag) break;
        int rc = next_fragment(r, e);
        if (rc) return rc;
    }
    r->in_message = 0;
    return GRID_OK;
}

int grw_has_buffered(const grw_reader *r) {
    return r->len > r->pos || (r->tls && grw_tls_pending(r->tls));
}

int grw_read_words(grw_reader *r, void *dst, size_t n, unsigned word, gr_err *e) {
    size_t bytes = n * word;
    if (word && bytes / word != n) return gr_seterr(e, GRID_ERR_LIMIT, "array too large");
    /* Convert chunk by chunk while the bytes are still in cache. */
    uint8_t *d = dst;
    size_t left = bytes;
    const size_t chunk = (size_t)1 << 20;
    while (left > 0) {
        size_t k = left < chunk ? left : chunk;
        int rc = grw_read(r, d, k, e);
        if (rc) return rc;
        if (word > 1) grw_swap_words(d, k / word, word);
        d += k;
        left -= k;
    }
    return skip_pad(r, (uint32_t)(bytes & 3), e);
}
