/* grw_wire.h: the GridRPC wire protocol (docs/protocol.md): messages framed by ONC RPC
 * record marking on TCP, a versioned XDR header, and streaming readers and writers
 * that move bulk array bytes with few copies. Private to the library (prefix grw_).
 *
 * A reader or writer belongs to one thread at a time; nothing here locks.
 */
#ifndef GRW_WIRE_H
#define GRW_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "gr_error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GRW_MAGIC 0x47525043u /* "GRPC" */
#define GRW_VERSION 1u
#define GRW_HEADER_BYTES 24u
/* Record marking: a fragment may be at most 2^31 - 1 bytes; writers stay well under. */
#define GRW_MAX_FRAGMENT ((size_t)1 << 30)

typedef struct grw_header {
    uint32_t magic, version, type, flags;
    uint64_t request_id;
} grw_header;

/* Limits applied to everything read from a peer. */
typedef struct grw_limits {
    uint64_t max_message; /* bytes in one message (record) */
    uint64_t max_array;   /* bytes of one array argument */
    uint32_t max_head;    /* bytes of a call's head section (scalars, strings, files) */
} grw_limits;

/* ---- socket helpers ---- */

/* Connects to HOST:PORT with a timeout (seconds, 0: none); sets TCP_NODELAY and
 * SO_KEEPALIVE. Returns the fd or -1 with E set (GRID_ERR_CONNECT, GRID_ERR_TIMEOUT). */
int grw_connect(const char *host, int port, double timeout, gr_err *e);
/* Sets the options every GridRPC socket uses (TCP_NODELAY, SO_KEEPALIVE). */
void grw_tune_socket(int fd);

/* ---- reading one message ---- */

struct grw_tls; /* a TLS session (grw_tls.h): when set, the bytes go through it */

typedef struct grw_reader {
    int fd;
    long long deadline_ns; /* absolute gr_now_ns() deadline, 0: none */
    uint64_t max_message;
    uint64_t consumed;  /* body bytes consumed in this message */
    uint32_t frag_left; /* bytes left in the current fragment */
    int last_frag;      /* the current fragment is the record's last */
    int in_message;
    size_t pos, len;     /* buffered bytes buf[pos..len) */
    uint64_t *tally;     /* when set, every byte received is added here (atomically): the
                          * client's statistics; grw_reader_init clears it */
    struct grw_tls *tls; /* the connection's TLS session, or NULL; grw_reader_init clears it */
    /* When nonzero, a wait for more bytes also ends (GRID_ERR_TIMEOUT) after this many ns
     * without any: a peer that stalls is dropped long before a deadline sized for the
     * whole message. */
    long long idle_ns;
    /* When set, called before the message's consumed bytes pass credit_to: it raises
     * credit_to (what the reader may take in, reserved as bytes come) or fails the read
     * with E set. grw_reader_init clears both. */
    int (*credit)(struct grw_reader *r, gr_err *e);
    void *credit_arg;
    uint64_t credit_to;
    uint8_t buf[65536];
} grw_reader;

void grw_reader_init(grw_reader *r, int fd, uint64_t max_message);
/* Waits for the next message and reads its header. Returns GRID_OK, or
 * GRID_ERR_CONN_LOST when the peer closed (E says whether cleanly: e->msg ""), or
 * GRID_ERR_PROTOCOL / GRID_ERR_TIMEOUT. A header with a wrong magic or version is
 * GRID_ERR_PROTOCOL. */
int grw_read_header(grw_reader *r, grw_header *h, gr_err *e);
/* Reads exactly N bytes of the current message's body into DST. */
int grw_read(grw_reader *r, void *dst, size_t n, gr_err *e);
/* Reads an XDR unsigned int / hyper / string / opaque from the body. The string and
 * opaque readers check MAX before allocating; *out is malloc'd (NUL-terminated). */
int grw_read_u32(grw_reader *r, uint32_t *v, gr_err *e);
int grw_read_u64(grw_reader *r, uint64_t *v, gr_err *e);
int grw_read_string(grw_reader *r, uint32_t max, char **out, gr_err *e);
int grw_read_opaque(grw_reader *r, uint32_t max, uint8_t **out, uint32_t *len, gr_err *e);
/* Reads an XDR string of at most MAX bytes into BUF (MAX + 1 bytes, NUL-terminated):
 * no allocation for the bounded names of message bodies. */
int grw_read_string_buf(grw_reader *r, char *buf, uint32_t max, gr_err *e);
/* Checks that the message has no bytes left (trailing bytes are GRID_ERR_PROTOCOL). */
int grw_end(grw_reader *r, gr_err *e);
/* *MORE: 1 if the current message has bytes left (an optional field a newer peer
 * appends), 0 at its end. */
int grw_more(grw_reader *r, int *more, gr_err *e);
/* Discards the rest of the current message (after an error that leaves the stream in
 * sync). Fails when the message is longer than the limit. */
int grw_skip(grw_reader *r, gr_err *e);
/* Bytes buffered in the reader (or inside its TLS session): used to tell
 * "nothing more arrives" from "more arrives"; not the message's remaining length. */
int grw_has_buffered(const grw_reader *r);

/* ---- writing one message ---- */

typedef struct grw_writer {
    int fd;
    long long deadline_ns;
    size_t len;          /* buffered bytes after the 4-byte fragment header slot */
    uint64_t *tally;     /* when set, every byte sent is added here (atomically): the client's
                          * statistics; grw_writer_init clears it */
    struct grw_tls *tls; /* the connection's TLS session, or NULL; grw_writer_init clears it */
    uint8_t buf[4 + 65536];
} grw_writer;

void grw_writer_init(grw_writer *w, int fd);
/* Starts a message with header H (magic and version are filled in). */
int grw_begin(grw_writer *w, uint32_t type, uint32_t flags, uint64_t request_id, gr_err *e);
/* Appends N bytes. Large blocks go straight to the socket, in fragments of their own. */
int grw_write(grw_writer *w, const void *src, size_t n, gr_err *e);
int grw_write_u32(grw_writer *w, uint32_t v, gr_err *e);
int grw_write_u64(grw_writer *w, uint64_t v, gr_err *e);
int grw_write_i32(grw_writer *w, int32_t v, gr_err *e);
int grw_write_string(grw_writer *w, const char *s, gr_err *e);
int grw_write_opaque(grw_writer *w, const void *p, uint32_t n, gr_err *e);
/* Appends N elements of WORD bytes each (1, 2, 4 or 8) from SRC converted to
 * big-endian, then zero padding to a multiple of 4: the bulk array fast path. */
int grw_write_words(grw_writer *w, const void *src, size_t n, unsigned word, gr_err *e);
/* Ends the message (sends what is buffered as the record's last fragment). */
int grw_finish(grw_writer *w, gr_err *e);
/* Sends N bytes that are already a framed message (a stored reply: gsv_jobs.c), outside
 * any message of W's own (nothing may be buffered). */
int grw_write_raw(grw_writer *w, const void *src, size_t n, gr_err *e);

/* Reads N elements of WORD bytes into DST and converts them from big-endian, then
 * consumes the padding: the receiving side of grw_write_words. */
int grw_read_words(grw_reader *r, void *dst, size_t n, unsigned word, gr_err *e);

/* Converts N words of WORD bytes between big-endian and host order in place. */
void grw_swap_words(void *p, size_t n, unsigned word);
/* The same from SRC into DST (one pass instead of a copy and a swap). */
void grw_copy_swap(void *dst, const void *src, size_t n, unsigned word);

#ifdef __cplusplus
}
#endif

#endif /* GRW_WIRE_H */
