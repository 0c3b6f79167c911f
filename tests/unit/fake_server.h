/* fake_server.h: a scriptable fake gridrpcd for client tests. It listens on 127.0.0.1
 * port 0, accepts connections on a thread (one thread per connection, at most
 * FAKE_MAX_CONNS), reads whole messages (record marking + header, its own framing code)
 * and hands each to the test's handler, which may reply with any bytes (grw_writer or
 * raw), pause, or close. fake_default_reply answers HELLO with HELLO_OK and
 * GET_DESCRIPTOR with the real descriptor of the test module (stubs/test.idl), so a
 * handler only scripts the messages it cares about. Usable from C and C++. */
#ifndef FAKE_SERVER_H
#define FAKE_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "grw_wire.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FAKE_MAX_CONNS 16

enum { FAKE_KEEP = 0, FAKE_CLOSE = 1 };

typedef struct fake_server fake_server;

/* One received message: its header and its body (without header, malloc'd). */
typedef struct fake_msg {
    grw_header h;
    uint8_t *body;
    size_t len;
} fake_msg;

/* Called on the connection's thread for each message; returns FAKE_KEEP or FAKE_CLOSE. */
typedef int (*fake_handler)(fake_server *fs, int fd, const fake_msg *m, void *user);

/* Starts a fake server; NULL on failure. */
fake_server *fake_server_start(fake_handler handler, void *user);
int fake_server_port(const fake_server *fs);
/* "127.0.0.1:PORT" (static storage inside FS). */
const char *fake_server_address(const fake_server *fs);
/* Messages received so far (all connections). */
int fake_server_messages(const fake_server *fs);
/* Stops listening (callable from a handler): new connections are refused, as by a
 * server that died; the open ones go on. */
void fake_server_refuse(fake_server *fs);
/* Closes every connection, joins every thread, frees FS. */
void fake_server_stop(fake_server *fs);

/* ---- replies ---- */
/* Sends N raw bytes (already framed); 0 on success. */
int fake_send_raw(int fd, const void *p, size_t n);
/* ERROR with CODE (any int, out-of-range ones too) and MSG. */
int fake_send_error(int fd, uint64_t request_id, int32_t code, const char *msg);
/* HELLO_OK with generous limits. */
int fake_send_hello_ok(int fd, uint64_t request_id);
/* DESCRIPTOR of FUNCTION (a test-module function name, without "test/"); -1 if unknown. */
int fake_send_descriptor(int fd, uint64_t request_id, const char *function);
/* HELLO -> HELLO_OK, GET_DESCRIPTOR -> DESCRIPTOR, PING -> PONG, anything else ->
 * ERROR GRID_ERR_FAILED. */
int fake_default_reply(fake_server *fs, int fd, const fake_msg *m, void *user);
/* The name in a GET_DESCRIPTOR or CALL body (static buffer per thread). */
const char *fake_msg_name(const fake_msg *m);
void fake_sleep_ms(int ms);

/* ---- building messages in memory (one fragment, last) ---- */
typedef struct fake_buf {
    uint8_t *p;
    size_t len, cap;
} fake_buf;
/* Starts a message: reserves the fragment marker and writes the header. */
void fake_buf_begin(fake_buf *b, uint32_t type, uint64_t request_id);
void fake_buf_u32(fake_buf *b, uint32_t v);
void fake_buf_u64(fake_buf *b, uint64_t v);
void fake_buf_bytes(fake_buf *b, const void *p, size_t n);
void fake_buf_string(fake_buf *b, const char *s, size_t n);
/* Fills in the fragment marker (last fragment, length len-4). */
void fake_buf_finish(fake_buf *b);
void fake_buf_free(fake_buf *b);

#ifdef __cplusplus
}
#endif

#endif /* FAKE_SERVER_H */
