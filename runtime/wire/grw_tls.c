/* grw_tls.c: TLS sessions for GridRPC connections with OpenSSL (grw_tls.h).
 *
 * The socket is reached through a BIO of our own that sends with MSG_NOSIGNAL (a peer
 * that left must not kill a client program with SIGPIPE, and a library may not change
 * the program's signal handling) and never blocks (MSG_DONTWAIT), so the descriptor
 * keeps its blocking mode for everything else that uses it. SSL calls run under the
 * session's mutex; a call that would block returns WANT_READ/WANT_WRITE, and the wait
 * (poll, by the deadline) happens with the mutex released. */
#include "grw_tls.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "gr_scheme.h"
#include "grw_internal.h"
#include "grw_wire.h"

struct grw_tls_ctx {
    SSL_CTX *ssl;
};

struct grw_tls {
    SSL *ssl;
    int fd;
    pthread_mutex_t lock;
    int err;         /* errno of the socket's last failure */
    int client;      /* this end connected */
    int plain;       /* client: the server's first bytes are plain GridRPC, left unread */
    uint8_t head[8]; /* the first bytes received: tells a plain GridRPC peer */
    size_t nhead;
};

/* ---------------------------------------------------------------- the socket BIO */

static int bio_write(BIO *b, const char *buf, int len) {
    grw_tls *t = BIO_get_data(b);
    BIO_clear_retry_flags(b);
    ssize_t k;
    do
        k = send(t->fd, buf, (size_t)len, MSG_NOSIGNAL | MSG_DONTWAIT);
    while (k < 0 && errno == EINTR);
    if (k < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            BIO_set_retry_write(b);
        else
            t->err = errno;
        return -1;
    }
    return (int)k;
}

static int bio_read(BIO *b, char *buf, int len) {
    grw_tls *t = BIO_get_data(b);
    BIO_clear_retry_flags(b);
    ssize_t k;
    if (t->client && t->nhead == 0) {
        /* The server's first bytes: a plain GridRPC answer (a refusal sent before TLS, or
         * a server without TLS) is left whole in the socket for the caller to read. */
        uint8_t b8[8];
        do
            k = recv(t->fd, b8, sizeof b8, MSG_PEEK | MSG_DONTWAIT);
        while (k < 0 && errno == EINTR);
        if (k == (ssize_t)sizeof b8 && b8[0] != 0x16 && b8[0] != 0x15 && grw_get32(b8 + 4) == GRW_MAGIC) {
            t->plain = 1;
            memcpy(t->head, b8, sizeof b8);
            t->nhead = sizeof b8;
            t->err = 0;
            return -1; /* no retry: the handshake fails, handshake_error says why */
        }
    }
    do
        k = recv(t->fd, buf, (size_t)len, MSG_DONTWAIT);
    while (k < 0 && errno == EINTR);
    if (k < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            BIO_set_retry_read(b);
        else
            t->err = errno;
        return -1;
    }
    for (ssize_t i = 0; i < k && t->nhead < sizeof t->head; i++)
        t->head[t->nhead++] = (uint8_t)buf[i];
    return (int)k;
}

static long bio_ctrl(BIO *b, int cmd, long num, void *ptr) {
    (void)b, (void)num, (void)ptr;
    return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}

static BIO_METHOD *bio_method;
static pthread_once_t bio_once = PTHREAD_ONCE_INIT;

static void make_bio_method(void) {
    BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "gridrpc socket");
    if (m && BIO_meth_set_write(m, bio_write) && BIO_meth_set_read(m, bio_read) &&
        BIO_meth_set_ctrl(m, bio_ctrl))
        bio_method = m;
}

/* ---------------------------------------------------------------- contexts */

/* The first error of OpenSSL's queue, as text (then the queue is cleared). */
static const char *ssl_reason(char *buf, size_t size) {
    unsigned long code = ERR_peek_last_error();
    const char *r = code ? ERR_reason_error_string(code) : NULL;
    snprintf(buf, size, "%s", r ? r : "unknown OpenSSL error");
    ERR_clear_error();
    return buf;
}

static SSL_CTX *new_ctx(const SSL_METHOD *method, gr_err *e) {
    SSL_CTX *c = SSL_CTX_new(method);
    if (!c) {
        char why[160];
        gr_seterr(e, GRID_ERR_NOMEM, "cannot make a TLS context: %s", ssl_reason(why, sizeof why));
        return NULL;
    }
    SSL_CTX_set_min_proto_version(c, TLS1_2_VERSION);
    /* Partial writes: a writer returns to poll (lock released) after each record it got
     * out; the buffer of a retried write may move as the iovec advances. */
    SSL_CTX_set_mode(c, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    /* Nothing here renegotiates (TLS 1.3 has no renegotiation at all): a peer asking for
     * it under TLS 1.2 is refused rather than served a handshake in mid-stream. */
    SSL_CTX_set_options(c, SSL_OP_NO_RENEGOTIATION);
#ifdef SSL_OP_IGNORE_UNEXPECTED_EOF
    /* A peer that closes without close_notify has simply gone: the record marking says
     * whether a message was complete, so no truncation goes unnoticed. */
    SSL_CTX_set_options(c, SSL_OP_IGNORE_UNEXPECTED_EOF);
#endif
    return c;
}

grw_tls_ctx *grw_tls_server_ctx(const char *cert_file, const char *key_file, gr_err *e) {
    char why[160];
    ERR_clear_error();
    SSL_CTX *c = new_ctx(TLS_server_method(), e);
    if (!c) return NULL;
    /* Connections are long-lived and never resumed: no tickets to send (and none left
     * unread on a client's idle pooled connection). */
    SSL_CTX_set_num_tickets(c, 0);
    if (access(cert_file, R_OK) != 0) {
        gr_seterr(e, GRID_ERR_CONFIG, "--tls-cert %s: cannot read it: %s", cert_file, strerror(errno));
        goto fail;
    }
    if (access(key_file, R_OK) != 0) {
        gr_seterr(e, GRID_ERR_CONFIG, "--tls-key %s: cannot read it: %s", key_file, strerror(errno));
        goto fail;
    }
    if (SSL_CTX_use_certificate_chain_file(c, cert_file) != 1) {
        gr_seterr(e, GRID_ERR_CONFIG, "--tls-cert %s: not a PEM certificate (%s)", cert_file,
                  ssl_reason(why, sizeof why));
        goto fail;
    }
    int loaded = SSL_CTX_use_PrivateKey_file(c, key_file, SSL_FILETYPE_PEM) == 1;
    /* OpenSSL checks the pair as it loads the key: a mismatch is said as such. */
    int mismatch = !loaded && ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH;
    if (!loaded && !mismatch) {
        gr_seterr(e, GRID_ERR_CONFIG, "--tls-key %s: not a PEM private key (%s)", key_file,
                  ssl_reason(why, sizeof why));
        goto fail;
    }
    if (mismatch || SSL_CTX_check_private_key(c) != 1) {
        gr_seterr(e, GRID_ERR_CONFIG,
                  "--tls-key %s does not match the certificate of --tls-cert %s (%s): give the key the "
                  "certificate was made for",
                  key_file, cert_file, ssl_reason(why, sizeof why));
        goto fail;
    }
    grw_tls_ctx *x = calloc(1, sizeof *x);
    if (!x) {
        gr_seterr(e, GRID_ERR_NOMEM, "out of memory");
        goto fail;
    }
    x->ssl = c;
    return x;
fail:
    SSL_CTX_free(c);
    return NULL;
}

/* Client contexts, one per CA file, kept for the process (a handful at most). */
static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static struct client_ctx {
    char *ca;
    grw_tls_ctx ctx;
    struct client_ctx *next;
} * client_ctxs;

grw_tls_ctx *grw_tls_client_ctx(const char *ca_file, gr_err *e) {
    const char *ca = ca_file ? ca_file : "";
    pthread_mutex_lock(&ctx_lock);
    for (struct client_ctx *k = client_ctxs; k; k = k->next)
        if (strcmp(k->ca, ca) == 0) {
            pthread_mutex_unlock(&ctx_lock);
            return &k->ctx;
        }
    char why[160];
    ERR_clear_error();
    SSL_CTX *c = new_ctx(TLS_client_method(), e);
    struct client_ctx *k = NULL;
    if (!c) goto out;
    SSL_CTX_set_verify(c, SSL_VERIFY_PEER, NULL);
    if (*ca) {
        if (access(ca, R_OK) != 0) {
            gr_seterr(e, GRID_ERR_CONFIG, "the TLS CA file %s cannot be read: %s (GRIDRPC_TLS_CA)", ca,
                      strerror(errno));
            goto out;
        }
        if (SSL_CTX_load_verify_locations(c, ca, NULL) != 1) {
            gr_seterr(e, GRID_ERR_CONFIG, "the TLS CA file %s holds no PEM certificate (%s)", ca,
                      ssl_reason(why, sizeof why));
            goto out;
        }
    } else if (SSL_CTX_set_default_verify_paths(c) != 1) {
        gr_seterr(e, GRID_ERR_CONFIG, "cannot load the system's CA certificates (%s): set GRIDRPC_TLS_CA",
                  ssl_reason(why, sizeof why));
        goto out;
    }
    k = calloc(1, sizeof *k);
    if (k) k->ca = strdup(ca);
    if (!k || !k->ca) {
        free(k);
        k = NULL;
        gr_seterr(e, GRID_ERR_NOMEM, "out of memory");
        goto out;
    }
    k->ctx.ssl = c;
    c = NULL;
    k->next = client_ctxs;
    client_ctxs = k;
out:
    pthread_mutex_unlock(&ctx_lock);
    SSL_CTX_free(c);
    return k ? &k->ctx : NULL;
}

void grw_tls_ctx_free(grw_tls_ctx *ctx) {
    if (!ctx) return;
    /* Client contexts are the process's (grw_tls_client_ctx); only servers free theirs. */
    pthread_mutex_lock(&ctx_lock);
    for (struct client_ctx *k = client_ctxs; k; k = k->next)
        if (&k->ctx == ctx) {
            pthread_mutex_unlock(&ctx_lock);
            return;
        }
    pthread_mutex_unlock(&ctx_lock);
    SSL_CTX_free(ctx->ssl);
    free(ctx);
}

const char *grw_tls_env_ca(void) {
    const char *ca = getenv("GRIDRPC_TLS_CA");
    return ca && *ca ? ca : NULL;
}

/* ---------------------------------------------------------------- sessions */

static grw_tls *new_session(grw_tls_ctx *ctx, int fd, gr_err *e) {
    pthread_once(&bio_once, make_bio_method);
    grw_tls *t = calloc(1, sizeof *t);
    BIO *b = NULL;
    if (t) t->ssl = SSL_new(ctx->ssl);
    if (t && t->ssl && bio_method) b = BIO_new(bio_method);
    if (!b) {
        if (t) SSL_free(t->ssl);
        free(t);
        gr_seterr(e, GRID_ERR_NOMEM, "out of memory for a TLS session");
        return NULL;
    }
    t->fd = fd;
    BIO_set_data(b, t);
    BIO_set_init(b, 1);
    SSL_set_bio(t->ssl, b, b);
    pthread_mutex_init(&t->lock, NULL);
    return t;
}

void grw_tls_free(grw_tls *t) {
    if (!t) return;
    pthread_mutex_lock(&t->lock);
    ERR_clear_error();
    if (SSL_is_init_finished(t->ssl)) SSL_shutdown(t->ssl); /* close_notify, never waits */
    ERR_clear_error();
    pthread_mutex_unlock(&t->lock);
    SSL_free(t->ssl);
    pthread_mutex_destroy(&t->lock);
    free(t);
}

/* Waits for FD to become readable (WANT_READ) or writable by DEADLINE_NS, at most CAP
 * milliseconds when CAP >= 0. Returns 0, or GRID_ERR_TIMEOUT / GRID_ERR_CONN_LOST. */
static int wait_fd(int fd, int want_read, long long deadline_ns, int cap, const char *what, gr_err *e) {
    struct pollfd p = {fd, want_read ? POLLIN : POLLOUT, 0};
    int ms = grw_poll_ms(deadline_ns);
    if (cap >= 0 && (ms < 0 || ms > cap)) ms = cap;
    int rc = poll(&p, 1, ms);
    if (rc < 0 && errno != EINTR)
        return gr_seterr(e, GRID_ERR_CONN_LOST, "waiting for the peer: %s", strerror(errno));
    if (rc == 0 && deadline_ns && gr_now_ns() >= deadline_ns)
        return gr_seterr(e, GRID_ERR_TIMEOUT, "timed out %s", what);
    return GRID_OK;
}

/* 1 when the first bytes the peer sent are a GridRPC record in clear (a record mark,
 * then the magic "GRPC"): a plain client or server at the other end. */
static int plain_gridrpc(const grw_tls *t) {
    return t->nhead >= 8 && grw_get32(t->head + 4) == GRW_MAGIC;
}

/* Describes a failed handshake in E. */
static int handshake_error(grw_tls *t, int client, const char *host, int ssl_err, gr_err *e) {
    char why[160];
    if (t->plain)
        return gr_seterr(e, GRID_ERR_PROTOCOL,
                         "TLS: the server answered in plain GridRPC: it does not speak TLS; name it "
                         "host:port (or gridrpc://host:port) without gridrpcs://");
    if (client && t->nhead < sizeof t->head) {
        /* OpenSSL stopped at the record header it could not use: look at the bytes after
         * it (left in the socket) to tell a plain GridRPC answer. */
        uint8_t more[sizeof t->head];
        ssize_t k = recv(t->fd, more, sizeof more, MSG_PEEK | MSG_DONTWAIT);
        for (ssize_t i = 0; i < k && t->nhead < sizeof t->head; i++)
            t->head[t->nhead++] = more[i];
    }
    if (client && plain_gridrpc(t))
        return gr_seterr(e, GRID_ERR_CONNECT,
                         "TLS: the server answered in plain GridRPC: it does not speak TLS; name it "
                         "host:port (or gridrpc://host:port) without gridrpcs://");
    long v = client ? SSL_get_verify_result(t->ssl) : X509_V_OK;
    if (client && v != X509_V_OK) {
        const char *what = X509_verify_cert_error_string(v);
        ERR_clear_error();
        if (v == X509_V_ERR_HOSTNAME_MISMATCH || v == X509_V_ERR_IP_ADDRESS_MISMATCH)
            return gr_seterr(e, GRID_ERR_CONNECT,
                             "TLS: the server's certificate is not valid for '%s' (%s): connect by a name "
                             "the certificate holds, or give the server a certificate for this name",
                             host, what);
        if (v == X509_V_ERR_CERT_HAS_EXPIRED || v == X509_V_ERR_CERT_NOT_YET_VALID)
            return gr_seterr(e, GRID_ERR_CONNECT,
                             "TLS: the server's certificate is not valid now (%s): the server needs a "
                             "current one (or check this host's clock)",
                             what);
        int issuer = v == X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY ||
                     v == X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT ||
                     v == X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE ||
                     v == X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN || v == X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT;
        if (issuer)
            return gr_seterr(e, GRID_ERR_CONNECT,
                             "TLS: the server's certificate is not trusted (%s): set GRIDRPC_TLS_CA (or "
                             "grid_set_tls_ca_np) to the CA file that signed it",
                             what);
        return gr_seterr(e, GRID_ERR_CONNECT, "TLS: the server's certificate is refused: %s", what);
    }
    if (ssl_err == SSL_ERROR_SYSCALL || ssl_err == SSL_ERROR_ZERO_RETURN) {
        ERR_clear_error();
        if (t->err) return gr_seterr(e, GRID_ERR_CONN_LOST, "TLS handshake: %s", strerror(t->err));
        return gr_seterr(e, GRID_ERR_CONN_LOST,
                         client ? "TLS handshake: the server closed the connection (does it speak TLS? a "
                                  "plain server is named host:port without gridrpcs://)"
                                : "TLS handshake: the client closed the connection");
    }
    ssl_reason(why, sizeof why);
    if (!client && t->nhead >= 1 && t->head[0] != 0x16)
        return gr_seterr(e, GRID_ERR_PROTOCOL, "TLS handshake: the client does not speak TLS (%s)", why);
    return gr_seterr(e, GRID_ERR_CONNECT, "TLS handshake failed: %s", why);
}

/* Runs the handshake to its end by DEADLINE_NS. */
static int handshake(grw_tls *t, int client, const char *host, long long deadline_ns, gr_err *e) {
    for (;;) {
        ERR_clear_error();
        int r = SSL_do_handshake(t->ssl);
        if (r == 1) return GRID_OK;
        int se = SSL_get_error(t->ssl, r);
        if (se == SSL_ERROR_WANT_READ || se == SSL_ERROR_WANT_WRITE) {
            int rc = wait_fd(t->fd, se == SSL_ERROR_WANT_READ, deadline_ns, -1, "in the TLS handshake", e);
            if (rc) return rc;
            continue;
        }
        return handshake_error(t, client, host, se, e);
    }
}

/* Looks at the client's first byte without taking it: 0 for TLS (a handshake record,
 * 0x16), 1 for plain GridRPC (a record mark: 0x80 or 0x00, the high byte of a last or
 * first fragment's header; OpenSSL then never sees it, and sends no alert that would
 * garble the plain ERROR the caller answers), -1 with E set for anything else, a
 * timeout or a closed connection. One byte decides, so a peer that sends a byte or two
 * and stalls costs a sleeping thread, not a polling one. */
static int peek_plain(int fd, long long deadline_ns, gr_err *e) {
    for (;;) {
        uint8_t b;
        ssize_t k = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
        if (k == 1) {
            if (b == 0x16) return 0;
            if (b == 0x80 || b == 0x00) return 1;
            return gr_seterr(e, GRID_ERR_PROTOCOL,
                             "the client speaks neither TLS nor GridRPC (first byte 0x%02x)", b),
                   -1;
        }
        if (k == 0) return gr_seterr(e, GRID_ERR_CONN_LOST, "the client closed the connection"), -1;
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            return gr_seterr(e, GRID_ERR_CONN_LOST, "reading from the client: %s", strerror(errno)), -1;
        if (wait_fd(fd, 1, deadline_ns, -1, "in the TLS handshake", e)) return -1;
    }
}

grw_tls *grw_tls_accept(grw_tls_ctx *ctx, int fd, long long deadline_ns, int *plain_peer, gr_err *e) {
    *plain_peer = 0;
    int plain = peek_plain(fd, deadline_ns, e);
    if (plain) {
        if (plain < 0) return NULL;
        *plain_peer = 1;
        gr_seterr(e, GRID_ERR_PROTOCOL,
                  "a plain GridRPC client at the TLS listener (it must use gridrpcs://)");
        return NULL;
    }
    grw_tls *t = new_session(ctx, fd, e);
    if (!t) return NULL;
    SSL_set_accept_state(t->ssl);
    int rc = handshake(t, 0, NULL, deadline_ns, e);
    if (rc) {
        grw_tls_free(t);
        return NULL;
    }
    return t;
}

grw_tls *grw_tls_connect(grw_tls_ctx *ctx, int fd, const char *host, long long deadline_ns, gr_err *e) {
    grw_tls *t = new_session(ctx, fd, e);
    if (!t) return NULL;
    SSL_set_connect_state(t->ssl);
    t->client = 1;
    unsigned char ip[16];
    int literal = inet_pton(AF_INET, host, ip) == 1 || inet_pton(AF_INET6, host, ip) == 1;
    int ok;
    if (literal) {
        /* An address is checked against the certificate's IP entries. */
        X509_VERIFY_PARAM *param = SSL_get0_param(t->ssl);
        ok = X509_VERIFY_PARAM_set1_ip_asc(param, host) == 1;
    } else {
        ok = SSL_set1_host(t->ssl, host) == 1 && SSL_set_tlsext_host_name(t->ssl, host) == 1;
    }
    if (!ok) {
        gr_seterr(e, GRID_ERR_CONNECT, "TLS: cannot check the server's name '%s'", host);
        grw_tls_free(t);
        return NULL;
    }
    if (handshake(t, 1, host, deadline_ns, e)) {
        grw_tls_free(t);
        return NULL;
    }
    return t;
}

int grw_tls_pending(grw_tls *t) {
    pthread_mutex_lock(&t->lock);
    int r = SSL_has_pending(t->ssl);
    pthread_mutex_unlock(&t->lock);
    return r;
}

/* What a failed SSL_read/SSL_write means for the connection. */
static int io_error(grw_tls *t, int se, const char *doing, gr_err *e) {
    char why[160];
    if (se == SSL_ERROR_ZERO_RETURN || (se == SSL_ERROR_SYSCALL && !t->err && !ERR_peek_error())) {
        ERR_clear_error();
        return gr_seterr(e, GRID_ERR_CONN_LOST, "the peer closed the connection");
    }
    if (se == SSL_ERROR_SYSCALL && t->err) {
        ERR_clear_error();
        return gr_seterr(e, GRID_ERR_CONN_LOST, "%s the peer: %s", doing, strerror(t->err));
    }
    return gr_seterr(e, GRID_ERR_CONN_LOST, "%s the peer over TLS: %s", doing, ssl_reason(why, sizeof why));
}

int grw_tls_read(grw_tls *t, void *dst, size_t n, size_t *got, long long deadline_ns, gr_err *e) {
    for (;;) {
        pthread_mutex_lock(&t->lock);
        ERR_clear_error();
        t->err = 0;
        int r = SSL_read_ex(t->ssl, dst, n, got);
        int se = r == 1 ? SSL_ERROR_NONE : SSL_get_error(t->ssl, r);
        int rc = GRID_OK;
        if (se != SSL_ERROR_NONE && se != SSL_ERROR_WANT_READ && se != SSL_ERROR_WANT_WRITE)
            rc = io_error(t, se, "reading from", e);
        pthread_mutex_unlock(&t->lock);
        if (se == SSL_ERROR_NONE) return GRID_OK;
        if (rc) return rc;
        /* A write the session needs (a key update's answer) may wait for a writer that
         * holds the socket: look again soon. */
        rc = wait_fd(t->fd, se == SSL_ERROR_WANT_READ, deadline_ns, se == SSL_ERROR_WANT_READ ? -1 : 10,
                     "waiting for the peer", e);
        if (rc) return rc;
    }
}

int grw_tls_writev(grw_tls *t, struct iovec *iov, int cnt, long long deadline_ns, size_t *sent, gr_err *e) {
    *sent = 0;
    while (cnt > 0) {
        if (iov->iov_len == 0) {
            iov++;
            cnt--;
            continue;
        }
        size_t k = 0;
        pthread_mutex_lock(&t->lock);
        ERR_clear_error();
        t->err = 0;
        int r = SSL_write_ex(t->ssl, iov->iov_base, iov->iov_len, &k);
        int se = r == 1 ? SSL_ERROR_NONE : SSL_get_error(t->ssl, r);
        int rc = GRID_OK;
        if (se != SSL_ERROR_NONE && se != SSL_ERROR_WANT_READ && se != SSL_ERROR_WANT_WRITE)
            rc = io_error(t, se, "sending to", e);
        pthread_mutex_unlock(&t->lock);
        if (rc) return rc;
        if (se == SSL_ERROR_NONE) {
            *sent += k;
            iov->iov_base = (char *)iov->iov_base + k;
            iov->iov_len -= k;
            continue;
        }
        /* WANT_READ in a write: the reader thread may be the one to take those bytes, so
         * poll briefly and try again rather than wait for them here. */
        rc = wait_fd(t->fd, se == SSL_ERROR_WANT_READ, deadline_ns, se == SSL_ERROR_WANT_READ ? 10 : -1,
                     "sending to the peer", e);
        if (rc) return rc;
    }
    return GRID_OK;
}

int grw_dial(const char *host, int port, double timeout, const char *ca_file, grw_tls **tls, int *plain_fd,
             gr_err *e) {
    *tls = NULL;
    if (plain_fd) *plain_fd = -1;
    /* A host as a metaserver lists it may still carry its scheme (gridrpcs://HOST). */
    int named_tls;
    host += gr_scheme_len(host, &named_tls);
    if (named_tls) gr_tls_endpoint_mark(host, port);
    int fd = grw_connect(host, port, timeout, e);
    if (fd < 0 || !gr_tls_endpoint(host, port)) return fd;
    grw_tls_ctx *ctx = grw_tls_client_ctx(ca_file, e);
    long long deadline = timeout > 0 ? gr_now_ns() + (long long)(timeout * 1e9) : 0;
    grw_tls *t = ctx ? grw_tls_connect(ctx, fd, host, deadline, e) : NULL;
    if (!t) {
        gr_prefixerr(e, "connecting to %s:%d: ", host, port);
        if (plain_fd && e && e->code == GRID_ERR_PROTOCOL)
            *plain_fd = fd; /* its plain answer is unread there */
        else
            close(fd);
        return -1;
    }
    *tls = t;
    return fd;
}
