/* gsv_meta.c: gridrpcd's side of the metaserver (gridmetad). One thread connects,
 * says HELLO, REGISTERs every function of the registry (qualified name, descriptor hash,
 * GRP_FN_NO_RETRY for IDL's Retry "no") with the address clients should use, then sends
 * a HEARTBEAT with the load every heartbeat_ms the metaserver asked for, and between
 * beats a CRASHED for each function that killed one of its executors (queued by the
 * worker that saw it, gsv_meta_crashed; the metaserver holds back a function that
 * crashes on two servers within a minute). A metaserver
 * that forgot the server (ERROR GRID_ERR_NOT_FOUND) gets a new REGISTER; a lost or
 * silent one is reconnected with a bounded backoff (0.2 s doubling to 5 s), forever,
 * so a restarted metaserver finds its servers again without restarting them. One
 * outage is logged once, not once per attempt.
 *
 * The thread reads the load counters (gsv_sched_load, calls_done) and never holds a lock
 * that calls need, so a slow or dead metaserver cannot delay call serving. Every wait
 * (connect, the time between beats, the backoff) polls an eventfd that shutdown
 * writes, and a blocked read or write is woken by shutdown() of the socket, so SIGTERM
 * ends the thread at once. */
#define _GNU_SOURCE /* pthread_timedjoin_np */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "grp_meta.h"
#include "grp_proto.h"
#include "gr_scheme.h"
#include "gsv.h"

#define META_CONNECT_S 5.0 /* connecting */
#define META_REPLY_S 5.0   /* a reply, or writing one message */
#define META_BACKOFF_MIN 0.2
#define META_BACKOFF_MAX 5.0
#define META_MAX_MESSAGE (1u << 20) /* replies are small: REGISTER_OK, ERROR */
/* Crashes waiting to be told: one entry per function (a later crash updates it); one
 * older than the metaserver's window (a minute) counts for nothing there and is dropped. */
#define META_CRASHES 32
#define META_CRASH_MAX_AGE_NS 60000000000LL

typedef struct crash_note {
    char function[GRP_MAX_FUNCTION_NAME + 1];
    char what[GRP_MAX_CRASH_WHAT + 1];
    long long at_ns;
} crash_note;

typedef struct gsv_meta {
    gsv_server *srv;
    pthread_t thread;
    int wake; /* eventfd, readable once stopping */
    atomic_int stop;
    atomic_int between_beats;      /* waiting for the next beat: a stop can say goodbye */
    pthread_mutex_t lock;          /* fd, for the shutdown() that wakes a blocked read */
    int fd;                        /* the current connection, -1 */
    char where[GRP_MAX_HOST + 16]; /* "host:port" of the metaserver, for the log */
    char token[GRP_MAX_TOKEN + 1];
    grp_register reg; /* built once at start (the registry never changes) */
    uint64_t next_id;
    uint64_t server_id;
    uint32_t heartbeat_ms;
    grw_reader r;
    grw_writer w;
    grw_tls *tls; /* the connection's TLS session (a gridrpcs:// metaserver), or NULL */
} gsv_meta;

/* The crashes waiting to be told. Static, not in gsv_meta: a worker may queue one while
 * the server shuts down and gsv_meta_stop frees the thread's state. NEWS (an eventfd,
 * made once, never closed) is readable once a crash is queued; -1: no metaserver. */
static struct {
    pthread_mutex_t lock;
    crash_note notes[META_CRASHES];
    unsigned n, dropped;
    atomic_int news;
} crashq = {.lock = PTHREAD_MUTEX_INITIALIZER, .news = -1};

/* ---------------------------------------------------------------- waiting */

/* Waits up to SECONDS, or until stopping; 1 when stopping. When FD >= 0 it is watched
 * too and *READY says whether it became readable (the metaserver closed, or sent
 * something unasked); with NEWS, *NEWS says whether a crash was queued. */
static int wait_for(gsv_meta *m, double seconds, int fd, int *ready, int *news) {
    long long until = gr_now_ns() + (long long)(seconds * 1e9);
    if (ready) *ready = 0;
    if (news) *news = 0;
    for (;;) {
        if (atomic_load(&m->stop)) return 1;
        long long left = until - gr_now_ns();
        if (left <= 0) return 0;
        struct pollfd p[3] = {
            {m->wake, POLLIN, 0}, {news ? atomic_load(&crashq.news) : -1, POLLIN, 0}, {fd, POLLIN, 0}};
        int n = poll(p, fd >= 0 ? 3 : 2, (int)((left + 999999) / 1000000));
        if (n < 0 && errno != EINTR) return 0;
        if (n > 0 && (p[0].revents & POLLIN)) return 1;
        if (n > 0 && fd >= 0 && p[2].revents) {
            *ready = 1;
            return 0;
        }
        if (n > 0 && news && (p[1].revents & POLLIN)) {
            uint64_t v;
            if (read(p[1].fd, &v, sizeof v) < 0) {
                /* EAGAIN: another read took it; the queue is looked at anyway */
            }
            *news = 1;
            return 0;
        }
    }
}

/* ---------------------------------------------------------------- connecting */

/* Waits for the non-blocking connect of FD to finish, or for stop: 0 when connected,
 * else an errno value (ECANCELED when stopping). */
static int wait_connected(gsv_meta *m, int fd) {
    long long until = gr_now_ns() + (long long)(META_CONNECT_S * 1e9);
    for (;;) {
        long long left = until - gr_now_ns();
        if (atomic_load(&m->stop)) return ECANCELED;
        if (left <= 0) return ETIMEDOUT;
        struct pollfd p[2] = {{m->wake, POLLIN, 0}, {fd, POLLOUT, 0}};
        int n = poll(p, 2, (int)((left + 999999) / 1000000));
        if (n < 0 && errno != EINTR) return errno;
        if (n > 0 && (p[0].revents & POLLIN)) return ECANCELED;
        if (n > 0 && p[1].revents) {
            int err = 0;
            socklen_t sl = sizeof err;
            if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &sl) != 0) err = errno;
            return err;
        }
    }
}

/* Connects to the metaserver; unlike grw_connect the wait is cut short by shutdown.
 * Returns the connected socket or -1 with E set. */
static int meta_connect(gsv_meta *m, gr_err *e) {
    const gsv_options *o = &m->srv->opt;
    struct addrinfo hints, *res = NULL;
    char port[16];
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    snprintf(port, sizeof port, "%d", o->meta_port);
    int rc = getaddrinfo(o->meta_host, port, &hints, &res);
    if (rc != 0) {
        gr_seterr(e, GRID_ERR_CONNECT, "cannot resolve the host '%s': %s", o->meta_host, gai_strerror(rc));
        return -1;
    }
    int fd = -1, err = ECONNREFUSED;
    for (struct addrinfo *ai = res; ai && err != ECANCELED; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
        if (fd < 0) {
            err = errno;
            continue;
        }
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) break;
        err = errno == EINPROGRESS ? wait_connected(m, fd) : errno;
        if (err == 0) break;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        if (err == ECANCELED)
            gr_seterr(e, GRID_ERR_SHUTDOWN, "shutting down");
        else
            gr_seterr(e, GRID_ERR_CONNECT, "cannot connect: %s", strerror(err));
        return -1;
    }
    /* The reader and writer expect a blocking socket (they poll for their deadlines). */
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    grw_tune_socket(fd);
    return fd;
}

/* ---------------------------------------------------------------- one exchange */

/* Reads the reply to the message just sent: its header, then ERROR (its code returned,
 * *in_step telling whether the connection is still usable) or a reply of type EXPECTED
 * whose body the caller reads next. */
static int read_reply(gsv_meta *m, uint32_t expected, const char *what, int *in_step, gr_err *e) {
    grw_header h;
    *in_step = 0;
    m->r.deadline_ns = gr_now_ns() + (long long)(META_REPLY_S * 1e9);
    int rc = grp_read_header(&m->r, &h, e);
    if (rc == GRID_ERR_CONN_LOST && !e->msg[0]) gr_seterr(e, rc, "the metaserver closed the connection");
    if (!rc) rc = grp_expect(&m->r, &h, expected, what, in_step, e);
    if (rc == GRID_ERR_TIMEOUT) gr_seterr(e, rc, "no answer to %s within %g s", what, META_REPLY_S);
    return rc;
}

static void begin_write(gsv_meta *m) {
    m->w.deadline_ns = gr_now_ns() + (long long)(META_REPLY_S * 1e9);
}

static int say_hello(gsv_meta *m, gr_err *e) {
    grp_hello h;
    memset(&h, 0, sizeof h);
    snprintf(h.client, sizeof h.client, "gridrpcd %s", PACKAGE_VERSION);
    h.min_version = h.max_version = GRW_VERSION;
    snprintf(h.token, sizeof h.token, "%s", m->token);
    begin_write(m);
    m->r.deadline_ns = gr_now_ns() + (long long)(2 * META_REPLY_S * 1e9);
    grp_hello_ok ok;
    int rc = grp_auth_hello_as(
        &m->r, &m->w, ++m->next_id, &h, &m->srv->meta_keys, GRP_ROLE_SERVER, GRP_PEER_GRIDMETAD,
        "start gridrpcd with --key-file FILE (or --metaserver-key-file FILE)", &ok, NULL, e);
    if (rc == GRID_ERR_TIMEOUT) gr_seterr(e, rc, "no answer to HELLO within %g s", 2 * META_REPLY_S);
    return rc;
}

static int do_register(gsv_meta *m, gr_err *e) {
    begin_write(m);
    int in_step, rc = grp_write_register(&m->w, ++m->next_id, &m->reg, e);
    if (!rc) rc = read_reply(m, GRP_REGISTER_OK, "REGISTER", &in_step, e);
    grp_register_ok ok;
    if (!rc) rc = grp_read_register_ok(&m->r, &ok, e);
    if (rc) return rc;
    m->server_id = ok.server_id;
    m->heartbeat_ms = ok.heartbeat_ms;
    gsv_log(GSV_LOG_INFO,
            "registered with metaserver %s as server %llu (%u functions, heartbeat every %u ms)", m->where,
            (unsigned long long)ok.server_id, m->reg.nfunctions, ok.heartbeat_ms);
    return GRID_OK;
}

/* One HEARTBEAT and its answer. GRID_ERR_NOT_FOUND with *in_step: register again. */
static int beat(gsv_meta *m, int *in_step, gr_err *e) {
    gsv_server *s = m->srv;
    grp_heartbeat hb;
    memset(&hb, 0, sizeof hb);
    hb.server_id = m->server_id;
    gsv_sched_load(s, &hb.running, &hb.queued);
    hb.workers = s->workers;
    hb.cores = s->cores;
    if (getloadavg(&hb.loadavg, 1) < 1) hb.loadavg = 0;
    hb.calls_done = atomic_load(&s->calls_done);
    hb.work_s = gsv_work_outstanding(s);
    begin_write(m);
    int rc = grp_write_heartbeat(&m->w, ++m->next_id, &hb, e);
    *in_step = 0;
    if (!rc) rc = read_reply(m, GRP_HEARTBEAT_OK, "HEARTBEAT", in_step, e);
    if (!rc) rc = grp_read_empty(&m->r, e);
    return rc;
}

/* Tells the metaserver of the crashes queued since the last call: CRASHED and its
 * answer each. An ERROR answer (an old metaserver, a server it forgot) is logged and
 * the rest go on; a transport failure ends the connection (the rest are lost). */
static int send_crashes(gsv_meta *m, gr_err *e) {
    crash_note notes[META_CRASHES];
    pthread_mutex_lock(&crashq.lock);
    unsigned n = crashq.n, dropped = crashq.dropped;
    memcpy(notes, crashq.notes, n * sizeof notes[0]);
    crashq.n = crashq.dropped = 0;
    pthread_mutex_unlock(&crashq.lock);
    if (dropped)
        gsv_log(GSV_LOG_WARN,
                "metaserver %s: %u crashes of other functions were not told (more than %d at once)", m->where,
                dropped, META_CRASHES);
    long long now = gr_now_ns();
    for (unsigned i = 0; i < n; i++) {
        if (now - notes[i].at_ns > META_CRASH_MAX_AGE_NS) continue;
        grp_crashed c;
        memset(&c, 0, sizeof c);
        c.server_id = m->server_id;
        _Static_assert(sizeof c.function == sizeof notes[i].function && sizeof c.what == sizeof notes[i].what,
                       "a note is a CRASHED's text");
        memcpy(c.function, notes[i].function, sizeof c.function);
        memcpy(c.what, notes[i].what, sizeof c.what);
        begin_write(m);
        int in_step, rc = grp_write_crashed(&m->w, ++m->next_id, &c, e);
        if (!rc) rc = read_reply(m, GRP_CRASHED_OK, "CRASHED", &in_step, e);
        if (!rc) rc = grp_read_empty(&m->r, e);
        if (rc && !in_step) return rc;
        if (rc)
            gsv_log(GSV_LOG_WARN, "metaserver %s: CRASHED %s: %s", m->where, c.function, e->msg);
        else
            gsv_log(GSV_LOG_DEBUG, "metaserver %s: told that %s %s", m->where, c.function, c.what);
    }
    return GRID_OK;
}

void gsv_meta_crashed(gsv_server *s, const char *function, const char *msg) {
    (void)s;
    int news = atomic_load(&crashq.news);
    if (news < 0) return; /* no --metaserver */
    /* The message is "FN crashed (signal 11, ...) on server NAME; ...": the middle is
     * what happened. */
    const char *what = msg;
    size_t fl = strlen(function);
    if (strncmp(what, function, fl) == 0 && what[fl] == ' ') what += fl + 1;
    const char *end = strstr(what, " on server ");
    size_t wl = end ? (size_t)(end - what) : strlen(what);
    pthread_mutex_lock(&crashq.lock);
    crash_note *c = NULL;
    for (unsigned i = 0; i < crashq.n && !c; i++)
        if (strcmp(crashq.notes[i].function, function) == 0) c = &crashq.notes[i];
    if (!c && crashq.n < META_CRASHES) c = &crashq.notes[crashq.n++];
    if (c) {
        snprintf(c->function, sizeof c->function, "%s", function);
        snprintf(c->what, sizeof c->what, "%.*s", (int)(wl < GRP_MAX_CRASH_WHAT ? wl : GRP_MAX_CRASH_WHAT),
                 what);
        c->at_ns = gr_now_ns();
    } else {
        crashq.dropped++;
    }
    pthread_mutex_unlock(&crashq.lock);
    uint64_t one = 1;
    if (write(news, &one, sizeof one) < 0) {
        /* EAGAIN: the counter is already readable */
    }
}

#define META_GOODBYE_S 0.5    /* UNREGISTER and its answer, at shutdown */
#define META_STOP_GRACE_S 0.2 /* a stop waits this long for a thread not between beats */

/* The server is stopping: tells the metaserver, so that it is marked down at once and
 * no client is sent here meanwhile. Best effort, bounded: shutdown must not wait on a
 * slow metaserver. */
static void say_goodbye(gsv_meta *m) {
    gr_err e;
    long long until = gr_now_ns() + (long long)(META_GOODBYE_S * 1e9);
    m->w.deadline_ns = m->r.deadline_ns = until;
    grw_header h;
    int in_step = 0;
    int rc = grp_write_unregister(&m->w, ++m->next_id, m->server_id, &e);
    if (!rc) rc = grp_read_header(&m->r, &h, &e);
    if (!rc) rc = grp_expect(&m->r, &h, GRP_UNREGISTER_OK, "UNREGISTER", &in_step, &e);
    if (!rc) rc = grp_read_empty(&m->r, &e);
    if (rc)
        gsv_log(GSV_LOG_DEBUG, "metaserver %s: UNREGISTER: %s", m->where, e.msg);
    else
        gsv_log(GSV_LOG_INFO, "metaserver %s: unregistered (stopping)", m->where);
}

/* A connection's life: HELLO, REGISTER, then beats until the metaserver is lost or the
 * server stops. *REGISTERED: set once REGISTER succeeded on it. Returns why it ended. */
static int session(gsv_meta *m, int *registered, gr_err *e) {
    int fd = meta_connect(m, e);
    if (fd < 0) return e->code;
    pthread_mutex_lock(&m->lock);
    m->fd = fd;
    pthread_mutex_unlock(&m->lock);
    /* gsv_meta_stop may have run between the connect and the line above. */
    if (atomic_load(&m->stop)) return gr_seterr(e, GRID_ERR_SHUTDOWN, "shutting down");
    grw_reader_init(&m->r, fd, META_MAX_MESSAGE);
    grw_writer_init(&m->w, fd);
    const gsv_options *o = &m->srv->opt;
    if (gr_tls_endpoint(o->meta_host, o->meta_port)) {
        /* A gridrpcs:// metaserver: TLS first, checked against --tls-ca. */
        const char *ca = o->tls_ca ? o->tls_ca : grw_tls_env_ca();
        grw_tls_ctx *ctx = grw_tls_client_ctx(ca, e);
        grw_tls *t =
            ctx ? grw_tls_connect(ctx, fd, o->meta_host, gr_now_ns() + (long long)(META_REPLY_S * 1e9), e)
                : NULL;
        if (!t && e->code == GRID_ERR_PROTOCOL) /* a plain answer: a refusal says why */
            grp_plain_refusal(fd, gr_now_ns() + (long long)(META_REPLY_S * 1e9), e);
        if (!t) return e->code;
        pthread_mutex_lock(&m->lock);
        m->tls = t;
        pthread_mutex_unlock(&m->lock);
        m->r.tls = m->w.tls = t;
    }
    int rc = say_hello(m, e);
    while (!rc) {
        rc = do_register(m, e);
        if (rc) break;
        *registered = 1;
        rc = send_crashes(m, e); /* those queued while there was no metaserver */
        if (rc) break;
        long long next = gr_now_ns();
        for (;;) {
            /* Beats keep their rhythm whatever each exchange took. */
            next += (long long)m->heartbeat_ms * 1000000LL;
            int ready, news, stopping;
            do { /* crashes are told as they come, between beats */
                long long left = next - gr_now_ns();
                if (left < 0) next = gr_now_ns(), left = 0;
                atomic_store(&m->between_beats, 1);
                stopping = wait_for(m, (double)left / 1e9, fd, &ready, &news);
                atomic_store(&m->between_beats, 0);
                if (news && !stopping && !ready && (rc = send_crashes(m, e)) != GRID_OK) return rc;
            } while (news && !stopping && !ready);
            if (stopping) {
                say_goodbye(m);
                return gr_seterr(e, GRID_ERR_SHUTDOWN, "shutting down");
            }
            if (ready) {
                /* Nothing is due from the metaserver between beats: it closed, or it
                 * speaks out of turn. Either way this connection is done. */
                grw_header h;
                m->r.deadline_ns = gr_now_ns() + (long long)(META_REPLY_S * 1e9);
                rc = grp_read_header(&m->r, &h, e);
                if (rc == GRID_ERR_CONN_LOST && !e->msg[0])
                    gr_seterr(e, rc, "the metaserver closed the connection");
                if (!rc)
                    rc = gr_seterr(e, GRID_ERR_PROTOCOL, "the metaserver sent %s unasked",
                                   grp_type_name(h.type));
                return rc;
            }
            int in_step;
            rc = beat(m, &in_step, e);
            if (rc == GRID_ERR_NOT_FOUND && in_step) {
                gsv_log(GSV_LOG_INFO, "metaserver %s no longer knows server %llu: registering again",
                        m->where, (unsigned long long)m->server_id);
                rc = GRID_OK;
                break;
            }
            if (rc) return rc;
        }
    }
    return rc;
}

static void close_conn(gsv_meta *m) {
    pthread_mutex_lock(&m->lock);
    grw_tls_free(m->tls);
    m->tls = NULL;
    if (m->fd >= 0) close(m->fd);
    m->fd = -1;
    pthread_mutex_unlock(&m->lock);
}

static void *meta_main(void *arg) {
    gsv_meta *m = arg;
    if (m->reg.speed <= 0) {
        m->reg.speed = gsv_speed_measure(m->srv->cpus);
        gsv_log(GSV_LOG_INFO, "speed estimate for the metaserver: %.3g flops/s (measured; --speed sets it)",
                m->reg.speed);
    }
    double backoff = META_BACKOFF_MIN;
    int outage = 0; /* an outage was logged and has not ended */
    while (!atomic_load(&m->stop)) {
        gr_err e;
        gr_clearerr(&e);
        int registered = 0;
        session(m, &registered, &e);
        close_conn(m);
        if (atomic_load(&m->stop)) break;
        if (registered) {
            outage = 0;
            backoff = META_BACKOFF_MIN;
        }
        if (!outage) {
            gsv_log(GSV_LOG_INFO, "metaserver %s: %s; %s in the background", m->where, e.msg,
                    registered ? "reconnecting" : "retrying");
            outage = 1;
        } else {
            gsv_log(GSV_LOG_DEBUG, "metaserver %s: %s; next try in %g s", m->where, e.msg, backoff);
        }
        if (wait_for(m, backoff, -1, NULL, NULL)) break;
        backoff = backoff * 2 > META_BACKOFF_MAX ? META_BACKOFF_MAX : backoff * 2;
    }
    return NULL;
}

/* ---------------------------------------------------------------- start and stop */

static int is_wildcard(const char *host) {
    return !*host || strcmp(host, "0.0.0.0") == 0 || strcmp(host, "::") == 0 || strcmp(host, "[::]") == 0 ||
           strcmp(host, "*") == 0;
}

/* The address clients should use: --advertise, else the listening address, with the
 * host name in place of a wildcard. */
static int advertised_host(gsv_server *s, grp_register *reg, gr_err *e) {
    const gsv_options *o = &s->opt;
    if (o->adv_port) {
        snprintf(reg->host, sizeof reg->host, "%s", o->adv_host);
        reg->port = (uint32_t)o->adv_port;
        return GRID_OK;
    }
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    char port[16];
    if (getsockname(s->listen_fd, (struct sockaddr *)&ss, &sl) != 0 ||
        getnameinfo((struct sockaddr *)&ss, sl, NULL, 0, port, sizeof port, NI_NUMERICSERV) != 0)
        return gr_seterr(e, GRID_ERR_CONFIG, "cannot read the listening port: %s", strerror(errno));
    reg->port = (uint32_t)atoi(port);
    if (is_wildcard(o->host)) {
        char host[256];
        if (gethostname(host, sizeof host) != 0 || !*host)
            return gr_seterr(
                e, GRID_ERR_CONFIG,
                "listening on every interface and the host name is unknown: give --advertise HOST:PORT");
        host[sizeof host - 1] = '\0';
        snprintf(reg->host, sizeof reg->host, "%s", host);
    } else {
        if (strlen(o->host) > GRP_MAX_HOST)
            return gr_seterr(e, GRID_ERR_CONFIG, "--host is longer than %d bytes: give --advertise HOST:PORT",
                             GRP_MAX_HOST);
        snprintf(reg->host, sizeof reg->host, "%s", o->host);
    }
    return GRID_OK;
}

/* The same, with the scheme in front for a TLS listener: clients learn from the
 * metaserver's answers that this server speaks TLS (docs/protocol.md, REGISTER). */
static int advertised(gsv_server *s, grp_register *reg, gr_err *e) {
    int rc = advertised_host(s, reg, e);
    if (rc || !s->tls) return rc;
    char host[sizeof reg->host];
    if (strlen(reg->host) + strlen(GR_SCHEME_TLS) > GRP_MAX_HOST)
        return gr_seterr(e, GRID_ERR_CONFIG,
                         "the advertised host '%s' is too long for %s in front: give --advertise", reg->host,
                         GR_SCHEME_TLS);
    snprintf(host, sizeof host, "%s%s", GR_SCHEME_TLS, reg->host);
    memcpy(reg->host, host, sizeof host);
    return GRID_OK;
}

static void meta_free(gsv_meta *m) {
    free(m->reg.functions);
    if (m->wake >= 0) close(m->wake);
    pthread_mutex_destroy(&m->lock);
    free(m);
}

int gsv_meta_start(gsv_server *s, gr_err *e) {
    const gsv_options *o = &s->opt;
    if (!o->meta_port) return GRID_OK;
    gsv_meta *m = calloc(1, sizeof *m);
    if (!m) return gr_seterr(e, GRID_ERR_NOMEM, "out of memory");
    m->srv = s;
    m->fd = -1;
    m->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    pthread_mutex_init(&m->lock, NULL);
    atomic_init(&m->stop, 0);
    atomic_init(&m->between_beats, 0);
    snprintf(m->where, sizeof m->where, strchr(o->meta_host, ':') ? "[%s]:%d" : "%s:%d", o->meta_host,
             o->meta_port);
    const char *token = o->meta_token ? o->meta_token : o->token ? o->token : getenv("GRIDRPC_TOKEN");
    if (token && strlen(token) > GRP_MAX_TOKEN) {
        meta_free(m);
        return gr_seterr(e, GRID_ERR_CONFIG, "GRIDRPC_TOKEN is longer than %d bytes", GRP_MAX_TOKEN);
    }
    snprintf(m->token, sizeof m->token, "%s", token ? token : "");

    grp_register *reg = &m->reg;
    char host[256] = "";
    if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "?");
    host[sizeof host - 1] = '\0';
    if (o->name)
        snprintf(reg->name, sizeof reg->name, "%s", o->name);
    else
        snprintf(reg->name, sizeof reg->name, "gridrpcd on %s", host);
    reg->cores = s->cores;
    reg->workers = s->workers;
    reg->speed = o->speed;
    unsigned n = s->reg.nfns;
    if (n > GRP_MAX_FUNCTIONS) {
        gsv_log(GSV_LOG_WARN, "%u functions loaded: the metaserver is told of the first %d only", n,
                GRP_MAX_FUNCTIONS);
        n = GRP_MAX_FUNCTIONS;
    }
    reg->nfunctions = n;
    reg->functions = calloc(n ? n : 1, sizeof *reg->functions);
    if (atomic_load(&crashq.news) < 0) atomic_store(&crashq.news, eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    int rc = m->wake < 0 || atomic_load(&crashq.news) < 0
                 ? gr_seterr(e, GRID_ERR_CONFIG, "eventfd: %s", strerror(errno))
             : !reg->functions ? gr_seterr(e, GRID_ERR_NOMEM, "out of memory")
                               : advertised(s, reg, e);
    for (unsigned i = 0; !rc && i < n; i++) {
        const gsv_function *f = &s->reg.fns[i];
        snprintf(reg->functions[i].name, sizeof reg->functions[i].name, "%s", f->qualified);
        reg->functions[i].hash = f->desc->hash;
        reg->functions[i].flags = (f->desc->flags & GRD_FF_NO_RETRY) ? GRP_FN_NO_RETRY : 0;
    }
    if (!rc && (errno = pthread_create(&m->thread, NULL, meta_main, m)) != 0)
        rc = gr_seterr(e, GRID_ERR_CONFIG, "cannot start the metaserver thread: %s", strerror(errno));
    if (rc) {
        meta_free(m);
        return rc;
    }
    gsv_log(GSV_LOG_DEBUG, "metaserver %s: advertising %s:%u as '%s'", m->where, reg->host, reg->port,
            reg->name);
    /* Fine for a one-machine grid, a surprise on a real one: say so. */
    const char *bare = reg->host + gr_scheme_len(reg->host, NULL);
    if (strcmp(bare, "localhost") == 0 || strncmp(bare, "127.", 4) == 0 || strcmp(bare, "::1") == 0)
        gsv_log(GSV_LOG_INFO,
                "advertising the loopback address %s:%u to the metaserver: only clients on this host can "
                "reach it (give --advertise HOST:PORT, or --host with a routable address)",
                reg->host, reg->port);
    s->meta = m;
    return GRID_OK;
}

void gsv_meta_stop(gsv_server *s) {
    gsv_meta *m = s->meta;
    if (!m) return;
    atomic_store(&m->stop, 1);
    uint64_t one = 1;
    if (write(m->wake, &one, sizeof one) < 0) {
        /* The counter cannot overflow from one write; poll sees it readable anyway. */
    }
    /* Between beats the thread wakes at once, says goodbye (UNREGISTER, bounded by
     * META_GOODBYE_S) and ends; otherwise (blocked in a read or write) the shutdown of
     * its socket wakes it. */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long long ns = ts.tv_nsec + (long long)((META_GOODBYE_S + 0.1) * 1e9);
    ts.tv_sec += (time_t)(ns / 1000000000LL);
    ts.tv_nsec = (long)(ns % 1000000000LL);
    if (!atomic_load(&m->between_beats)) {
        /* Not waiting for a beat: perhaps just registered, perhaps blocked in a read.
         * A moment lets the first reach its goodbye; the second is then woken below. */
        clock_gettime(CLOCK_REALTIME, &ts);
        ns = ts.tv_nsec + (long long)(META_STOP_GRACE_S * 1e9);
        ts.tv_sec += (time_t)(ns / 1000000000LL);
        ts.tv_nsec = (long)(ns % 1000000000LL);
    }
    int joined = pthread_timedjoin_np(m->thread, NULL, &ts) == 0;
    if (!joined) {
        pthread_mutex_lock(&m->lock);
        if (m->fd >= 0) shutdown(m->fd, SHUT_RDWR);
        pthread_mutex_unlock(&m->lock);
    }
    /* Only a name lookup (getaddrinfo) cannot be interrupted: do not let one hold up the
     * shutdown; the thread then ends with the process. */
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 1;
    if (!joined && pthread_timedjoin_np(m->thread, NULL, &ts) != 0) {
        gsv_log(GSV_LOG_WARN, "metaserver %s: the registration thread did not stop within 1 s", m->where);
        pthread_detach(m->thread);
        s->meta = NULL;
        return;
    }
    meta_free(m);
    s->meta = NULL;
}
