/* fake_server.c: the scriptable fake server of fake_server.h. Its framing reader is its
 * own (not grw_reader), so a fault in the library's reader cannot hide itself. Every
 * wait is bounded: reads poll in 100 ms steps and give up when the server stops. */
#include "grp_types.h"
#include "fake_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "gridrpc_stub.h"
#include "raw_send.h"

extern const gridrpc_stub_module gridrpc_module_test;

typedef struct fake_conn {
    fake_server *fs;
    int fd;
    pthread_t thread;
    int used;
} fake_conn;

struct fake_server {
    int lfd, port;
    int stopping; /* atomic: read by every connection thread */
    int refusing; /* atomic: fake_server_refuse was called: the acceptor has ended */
    fake_handler handler;
    void *user;
    pthread_t acceptor;
    pthread_mutex_t lock;
    fake_conn conns[FAKE_MAX_CONNS];
    int messages;
    char address[64];
};

void fake_sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* Reads exactly N bytes; -1 on EOF, error, or when the server stops. */
static int read_full(fake_server *fs, int fd, void *dst, size_t n) {
    uint8_t *d = dst;
    while (n > 0) {
        if (__atomic_load_n(&fs->stopping, __ATOMIC_ACQUIRE)) return -1;
        struct pollfd p = {fd, POLLIN, 0};
        int rc = poll(&p, 1, 100);
        if (rc < 0 && errno != EINTR) return -1;
        if (rc <= 0) continue;
        ssize_t k = recv(fd, d, n, 0);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        d += k;
        n -= (size_t)k;
    }
    return 0;
}

static uint32_t get32(const uint8_t *b) {
    return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

/* Reads one record (at most 64 MiB) into *M; -1 when the connection ends. */
static int read_message(fake_server *fs, int fd, fake_msg *m) {
    uint8_t *all = NULL;
    size_t len = 0;
    for (int frags = 0; frags < 100000; frags++) {
        uint8_t mark[4];
        if (read_full(fs, fd, mark, 4)) break;
        uint32_t v = get32(mark), n = v & 0x7fffffffu;
        if (len + n > (64u << 20)) break;
        uint8_t *p = realloc(all, len + n + 1);
        if (!p) break;
        all = p;
        if (read_full(fs, fd, all + len, n)) break;
        len += n;
        if (!(v & 0x80000000u)) continue;
        if (len < GRW_HEADER_BYTES) break;
        m->h.magic = get32(all);
        m->h.version = get32(all + 4);
        m->h.type = get32(all + 8);
        m->h.flags = get32(all + 12);
        m->h.request_id = (uint64_t)get32(all + 16) << 32 | get32(all + 20);
        m->len = len - GRW_HEADER_BYTES;
        m->body = malloc(m->len + 1);
        if (!m->body) break;
        memcpy(m->body, all + GRW_HEADER_BYTES, m->len);
        free(all);
        return 0;
    }
    free(all);
    return -1;
}

static void *conn_main(void *arg) {
    fake_conn *c = arg;
    fake_server *fs = c->fs;
    for (int i = 0; i < 1000000 && !__atomic_load_n(&fs->stopping, __ATOMIC_ACQUIRE); i++) {
        fake_msg m;
        if (read_message(fs, c->fd, &m)) break;
        pthread_mutex_lock(&fs->lock);
        fs->messages++;
        pthread_mutex_unlock(&fs->lock);
        int r = fs->handler(fs, c->fd, &m, fs->user);
        free(m.body);
        if (r == FAKE_CLOSE) break;
    }
    shutdown(c->fd, SHUT_RDWR);
    return NULL;
}

static void *accept_main(void *arg) {
    fake_server *fs = arg;
    while (!__atomic_load_n(&fs->stopping, __ATOMIC_ACQUIRE) &&
           !__atomic_load_n(&fs->refusing, __ATOMIC_ACQUIRE)) {
        struct pollfd p = {fs->lfd, POLLIN, 0};
        if (poll(&p, 1, 100) <= 0) continue;
        int fd = accept(fs->lfd, NULL, NULL);
        if (fd < 0) continue;
        pthread_mutex_lock(&fs->lock);
        fake_conn *c = NULL;
        for (int i = 0; i < FAKE_MAX_CONNS && !c; i++)
            if (!fs->conns[i].used) c = &fs->conns[i];
        if (c) {
            c->fs = fs;
            c->fd = fd;
            c->used = 1;
            if (pthread_create(&c->thread, NULL, conn_main, c) != 0) c->used = 0;
        }
        pthread_mutex_unlock(&fs->lock);
        if (!c || !c->used) close(fd);
    }
    return NULL;
}

fake_server *fake_server_start(fake_handler handler, void *user) {
    fake_server *fs = calloc(1, sizeof *fs);
    if (!fs) return NULL;
    fs->handler = handler ? handler : fake_default_reply;
    fs->user = user;
    pthread_mutex_init(&fs->lock, NULL);
    fs->lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    socklen_t al = sizeof a;
    if (fs->lfd < 0 || bind(fs->lfd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fs->lfd, 16) != 0 ||
        getsockname(fs->lfd, (struct sockaddr *)&a, &al) != 0) {
        if (fs->lfd >= 0) close(fs->lfd);
        free(fs);
        return NULL;
    }
    fs->port = ntohs(a.sin_port);
    snprintf(fs->address, sizeof fs->address, "127.0.0.1:%d", fs->port);
    if (pthread_create(&fs->acceptor, NULL, accept_main, fs) != 0) {
        close(fs->lfd);
        free(fs);
        return NULL;
    }
    return fs;
}

int fake_server_port(const fake_server *fs) {
    return fs->port;
}

const char *fake_server_address(const fake_server *fs) {
    return fs->address;
}

int fake_server_messages(const fake_server *fs) {
    pthread_mutex_lock((pthread_mutex_t *)&fs->lock);
    int n = fs->messages;
    pthread_mutex_unlock((pthread_mutex_t *)&fs->lock);
    return n;
}

void fake_server_refuse(fake_server *fs) {
    __atomic_store_n(&fs->refusing, 1, __ATOMIC_RELEASE);
    /* A listening socket shut down leaves the port closed: connects are refused. */
    shutdown(fs->lfd, SHUT_RDWR);
}

void fake_server_stop(fake_server *fs) {
    if (!fs) return;
    __atomic_store_n(&fs->stopping, 1, __ATOMIC_RELEASE);
    pthread_join(fs->acceptor, NULL);
    close(fs->lfd);
    for (int i = 0; i < FAKE_MAX_CONNS; i++)
        if (fs->conns[i].used) {
            shutdown(fs->conns[i].fd, SHUT_RDWR);
            pthread_join(fs->conns[i].thread, NULL);
            close(fs->conns[i].fd);
        }
    pthread_mutex_destroy(&fs->lock);
    free(fs);
}

/* ---------------------------------------------------------------- building */

static void reserve(fake_buf *b, size_t n) {
    if (b->len + n <= b->cap) return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n)
        cap *= 2;
    uint8_t *p = realloc(b->p, cap);
    if (!p) abort();
    b->p = p;
    b->cap = cap;
}

void fake_buf_bytes(fake_buf *b, const void *p, size_t n) {
    reserve(b, n);
    if (n) memcpy(b->p + b->len, p, n);
    b->len += n;
}

void fake_buf_u32(fake_buf *b, uint32_t v) {
    uint8_t x[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
    fake_buf_bytes(b, x, 4);
}

void fake_buf_u64(fake_buf *b, uint64_t v) {
    fake_buf_u32(b, (uint32_t)(v >> 32));
    fake_buf_u32(b, (uint32_t)v);
}

void fake_buf_string(fake_buf *b, const char *s, size_t n) {
    static const uint8_t zero[4] = {0, 0, 0, 0};
    fake_buf_u32(b, (uint32_t)n);
    fake_buf_bytes(b, s, n);
    fake_buf_bytes(b, zero, (4 - (n & 3)) & 3);
}

void fake_buf_begin(fake_buf *b, uint32_t type, uint64_t request_id) {
    b->len = 0;
    fake_buf_u32(b, 0); /* the fragment marker, filled in by fake_buf_finish */
    fake_buf_u32(b, GRW_MAGIC);
    fake_buf_u32(b, GRW_VERSION);
    fake_buf_u32(b, type);
    fake_buf_u32(b, 0);
    fake_buf_u64(b, request_id);
}

void fake_buf_finish(fake_buf *b) {
    uint32_t v = 0x80000000u | (uint32_t)(b->len - 4);
    b->p[0] = (uint8_t)(v >> 24), b->p[1] = (uint8_t)(v >> 16), b->p[2] = (uint8_t)(v >> 8),
    b->p[3] = (uint8_t)v;
}

void fake_buf_free(fake_buf *b) {
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

/* ---------------------------------------------------------------- replies */

int fake_send_raw(int fd, const void *p, size_t n) {
    return raw_send_all(fd, p, n);
}

static int send_buf(int fd, fake_buf *b) {
    fake_buf_finish(b);
    int rc = fake_send_raw(fd, b->p, b->len);
    fake_buf_free(b);
    return rc;
}

int fake_send_error(int fd, uint64_t request_id, int32_t code, const char *msg) {
    fake_buf b = {0};
    fake_buf_begin(&b, GRP_ERROR, request_id);
    fake_buf_u32(&b, (uint32_t)code);
    fake_buf_string(&b, msg, strlen(msg));
    return send_buf(fd, &b);
}

int fake_send_hello_ok(int fd, uint64_t request_id) {
    fake_buf b = {0};
    fake_buf_begin(&b, GRP_HELLO_OK, request_id);
    fake_buf_string(&b, "fake_server", 11);
    fake_buf_u32(&b, GRW_VERSION);
    fake_buf_u64(&b, (uint64_t)1 << 30); /* max_message */
    fake_buf_u64(&b, (uint64_t)1 << 30); /* max_array */
    fake_buf_u32(&b, 64u << 20);         /* max_head */
    fake_buf_u32(&b, 1);                 /* workers */
    fake_buf_u32(&b, 1);                 /* cores */
    return send_buf(fd, &b);
}

int fake_send_descriptor(int fd, uint64_t request_id, const char *function) {
    const gridrpc_stub_module *mod = &gridrpc_module_test;
    for (unsigned i = 0; i < mod->nfunctions; i++) {
        const gridrpc_stub_function *f = &mod->functions[i];
        if (strcmp(f->name, function) != 0) continue;
        char q[512];
        snprintf(q, sizeof q, "test/%s", f->name);
        fake_buf b = {0};
        fake_buf_begin(&b, GRP_DESCRIPTOR, request_id);
        fake_buf_string(&b, q, strlen(q));
        fake_buf_string(&b, (const char *)f->descriptor, f->descriptor_len);
        return send_buf(fd, &b);
    }
    return -1;
}

const char *fake_msg_name(const fake_msg *m) {
    static __thread char name[512];
    name[0] = '\0';
    if (m->len < 4) return name;
    uint32_t n = get32(m->body);
    if (n >= sizeof name || 4 + (size_t)n > m->len) return name;
    memcpy(name, m->body + 4, n);
    name[n] = '\0';
    return name;
}

int fake_default_reply(fake_server *fs, int fd, const fake_msg *m, void *user) {
    (void)fs, (void)user;
    switch (m->h.type) {
    case GRP_HELLO: return fake_send_hello_ok(fd, m->h.request_id) ? FAKE_CLOSE : FAKE_KEEP;
    case GRP_GET_DESCRIPTOR: {
        const char *name = fake_msg_name(m);
        const char *slash = strchr(name, '/');
        if (fake_send_descriptor(fd, m->h.request_id, slash ? slash + 1 : name) == 0) return FAKE_KEEP;
        return fake_send_error(fd, m->h.request_id, GRID_ERR_NOT_FOUND, "no such function") ? FAKE_CLOSE
                                                                                            : FAKE_KEEP;
    }
    case GRP_PING: {
        fake_buf b = {0};
        fake_buf_begin(&b, GRP_PONG, m->h.request_id);
        for (int i = 0; i < 4; i++)
            fake_buf_u32(&b, 0);
        fake_buf_u64(&b, 0);
        return send_buf(fd, &b) ? FAKE_CLOSE : FAKE_KEEP;
    }
    case GRP_CANCEL: return FAKE_KEEP;
    default:
        return fake_send_error(fd, m->h.request_id, GRID_ERR_FAILED, "the fake server does not serve this")
                   ? FAKE_CLOSE
                   : FAKE_KEEP;
    }
}
