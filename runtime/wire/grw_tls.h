/* grw_tls.h: TLS under the wire layer (OpenSSL). A server context holds the listener's
 * certificate and key; a client context a CA store (a file, or the system's). A session
 * wraps one connected socket after the handshake; the reader and writers of that
 * connection pass it to grw_reader/grw_writer (their tls field), and sock_read and
 * sock_writev then go through it.
 *
 * One session may be used by a reader thread and writer threads at once: every SSL call
 * is non-blocking and made under the session's mutex, and waiting (poll) happens outside
 * it, so a writer blocked on a full socket never keeps the reader from its bytes.
 *
 * Which servers speak TLS: a name "gridrpcs://host:port" marks that endpoint for the
 * process (gr_scheme.h); grw_dial connects and, for a marked endpoint, handshakes. */
#ifndef GRW_TLS_H
#define GRW_TLS_H

#include <stddef.h>
#include <sys/uio.h>

#include "gr_error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a TLS listener answers a client that spoke plain GridRPC to it. */
#define GRW_TLS_PLAIN_REFUSAL "this server accepts TLS connections only: name it gridrpcs://HOST:PORT"

typedef struct grw_tls_ctx grw_tls_ctx;
typedef struct grw_tls grw_tls;

/* A server context from a PEM certificate (chain) file and its private key. Fails with
 * GRID_ERR_CONFIG naming the file and the problem (unreadable, not PEM, key does not
 * match the certificate). */
grw_tls_ctx *grw_tls_server_ctx(const char *cert_file, const char *key_file, gr_err *e);
/* The client context for CA_FILE (NULL or "": the system's default store), made once per
 * file and kept for the process. */
grw_tls_ctx *grw_tls_client_ctx(const char *ca_file, gr_err *e);
void grw_tls_ctx_free(grw_tls_ctx *ctx);

/* Handshakes on the connected socket FD by DEADLINE_NS (gr_now_ns() clock, 0: none).
 * The client checks that the server's certificate names HOST (a name, or an IP address
 * for a literal address). Returns the session, or NULL with E naming the problem: an
 * untrusted or wrong-host certificate, a peer that speaks plain GridRPC, a timeout. The
 * socket is not closed on failure. *PLAIN_PEER (accept) is set when the client spoke
 * plain GridRPC: the caller may then answer it a plain ERROR (GRW_TLS_PLAIN_REFUSAL).
 * A client whose server answered in plain GridRPC gets GRID_ERR_PROTOCOL, and that
 * answer is still unread on FD (grp_plain_refusal reads an ERROR there: a server may
 * refuse a connection before TLS, when it is over a limit). */
grw_tls *grw_tls_accept(grw_tls_ctx *ctx, int fd, long long deadline_ns, int *plain_peer, gr_err *e);
grw_tls *grw_tls_connect(grw_tls_ctx *ctx, int fd, const char *host, long long deadline_ns, gr_err *e);
/* Sends close_notify if it can without waiting, and frees T (the socket stays open). */
void grw_tls_free(grw_tls *t);

/* Reads 1 to N bytes (waiting by DEADLINE_NS). GRID_ERR_CONN_LOST ("the peer closed
 * the connection" when it did), GRID_ERR_TIMEOUT. */
int grw_tls_read(grw_tls *t, void *dst, size_t n, size_t *got, long long deadline_ns, gr_err *e);
/* Writes every byte of IOV (modified in place). *SENT gets the bytes written. */
int grw_tls_writev(grw_tls *t, struct iovec *iov, int cnt, long long deadline_ns, size_t *sent, gr_err *e);
/* 1 when decrypted or received bytes wait inside the session (poll on the socket would
 * not see them). */
int grw_tls_pending(grw_tls *t);

/* Connects to HOST:PORT (grw_connect) and, when the endpoint speaks TLS (named
 * gridrpcs://, gr_scheme.h; HOST may also carry the scheme itself, as a metaserver lists
 * a TLS server), handshakes within TIMEOUT seconds with the client context
 * of CA_FILE. *TLS gets the session or NULL for a plain connection. Returns the fd or
 * -1 with E set; the socket is then closed, except when the TLS server answered in plain
 * GridRPC and PLAIN_FD is not NULL: *PLAIN_FD gets it, the answer unread (-1 otherwise;
 * grp_dial reads it). */
int grw_dial(const char *host, int port, double timeout, const char *ca_file, grw_tls **tls, int *plain_fd,
             gr_err *e);

/* The CA file the environment names (GRIDRPC_TLS_CA), or NULL. */
const char *grw_tls_env_ca(void);

#ifdef __cplusplus
}
#endif

#endif /* GRW_TLS_H */
