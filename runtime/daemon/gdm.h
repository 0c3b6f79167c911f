/* gdm.h: the daemon core that gridrpcd and gridmetad share (prefix gdm_): the listening
 * socket, the accept loop with its connection limits and refusals, one reader thread
 * per connection (TLS handshake, HELLO first, each request's header read under the I/O
 * timeout, then the daemon's serve()), the writer and its lock, the signals and the
 * option helpers. A daemon keeps only its own request switch.
 *
 * A daemon's connection type starts with GDM_CONN_HEAD, so its own code names the
 * core's fields directly (c->peer, c->r) and hands &c->core to these functions; the core
 * allocates gdm_config.conn_size bytes for each connection.
 *
 * Locks: gdm_daemon.lock guards the connection list and the counts; gdm_conn.wlock one
 * whole message on a socket at a time. Neither is taken while the other is held. */
#ifndef GDM_H
#define GDM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/socket.h>

#include "gr_error.h"
#include "grw_tls.h"
#include "grw_wire.h"

/* What the reader does after a request: go on; close (the peer left or the socket
 * failed); or refuse (an ERROR was just sent and the connection ends: linger). */
enum { GDM_KEEP = 0, GDM_CLOSE = 1, GDM_REFUSE = 2 };

/* Why the accept loop refuses a connection (gdm_config.refusal words it). */
enum { GDM_FULL = 0, GDM_FULL_ADDRESS = 1, GDM_NO_DESCRIPTORS = 2 };

struct gdm_daemon;

/* The fields of a connection that the core owns. */
#define GDM_CONN_FIELDS                                                                                      \
    struct gdm_daemon *dm;        /* the daemon that accepted it */                                          \
    int fd;                       /* closed with the last reference */                                       \
    char peer[80];                /* "host:port" */                                                          \
    struct sockaddr_storage addr; /* the peer's, as counted by the connection limits */                      \
    atomic_int refs;              /* the reader thread, plus one per piece of work in flight */              \
    pthread_mutex_t wlock;        /* whole messages on the socket; guards w and broken */                    \
    int broken;                   /* a write failed: later writes are skipped */                             \
    grw_writer w;                                                                                            \
    struct grw_tls *tls;          /* the TLS session (a TLS listener), set before any write */               \
    grw_reader r;                 /* the reader thread's only */                                             \
    int hello_done;               /* reader thread only: set by the daemon's HELLO */                        \
    long long hello_by;           /* HELLO must come before this (gr_now_ns; --io-timeout) */                \
    struct gdm_conn *prev, *next; /* dm->conns, under dm->lock */

typedef struct gdm_conn {
    GDM_CONN_FIELDS
} gdm_conn;

/* The first member of a daemon's connection type: CORE for the core's functions, and the
 * same storage by the fields' names. */
#define GDM_CONN_HEAD                                                                                        \
    union {                                                                                                  \
        gdm_conn core;                                                                                       \
        struct {                                                                                             \
            GDM_CONN_FIELDS                                                                                  \
        };                                                                                                   \
    }

typedef struct gdm_config {
    const char *name;      /* "server", "metaserver": the daemon in what peers are told */
    void *ctx;             /* the daemon's own state, for its hooks */
    size_t conn_size;      /* of the daemon's connection type (GDM_CONN_HEAD first) */
    size_t stack_size;     /* of each reader thread */
    uint32_t max_message;  /* bytes in one message read */
    double io_timeout;     /* seconds; 0: none (--io-timeout) */
    double idle_timeout;   /* seconds; 0: none (--idle-timeout) */
    double floor_rate;     /* bytes/s a large message gets on top of the I/O timeout */
    const char *stop_note; /* appended to the "SIGTERM received: shutting down" line */
    struct grw_tls_ctx *tls;
    /* Answers the request whose header H was read; returns GDM_KEEP, _CLOSE or _REFUSE. */
    int (*serve)(gdm_conn *c, const grw_header *h);
    /* A header that stalled past the I/O timeout (E); NULL: refused like a bad one. */
    int (*stalled)(gdm_conn *c, const grw_header *h, const char *what, gr_err *e);
    /* Nonzero while something holds C (a call, a registered server): no idle close. */
    int (*busy)(gdm_conn *c);
    /* The connection is set up, before its reader starts; and its reader ends. */
    void (*opened)(gdm_conn *c);
    void (*closed)(gdm_conn *c);
    /* The ERROR text for refusing a connection from ADDR (WHY: GDM_FULL...), OPEN
     * connections being open against LIMIT. */
    void (*refusal)(int why, const char *addr, unsigned open, unsigned limit, char *msg, size_t len);
} gdm_config;

typedef struct gdm_daemon {
    gdm_config cfg;
    unsigned max_conns, max_conns_per_addr;
    int fd;                         /* the listening socket, -1 when none */
    struct gr_connlimit *connlimit; /* per address and in total (runtime/common/gr_connlimit.c) */
    atomic_int stopping;            /* the accept loop ended: refused peers are not lingered on */
    pthread_mutex_t lock;
    gdm_conn *conns;
    unsigned nreaders; /* reader threads running */
    unsigned nconns;   /* connections not yet freed (a reference may outlive the reader) */
} gdm_daemon;

/* Sets up D (no socket yet) with its limits; 0, or -1 when out of memory. */
int gdm_init(gdm_daemon *d, const gdm_config *cfg, unsigned max_conns, unsigned max_conns_per_addr);
/* Connections not yet freed (a thread that outlived the shutdown may still use D). */
unsigned gdm_conns_open(gdm_daemon *d);
/* Frees D unless a connection is still open (a thread outlived the shutdown): 1 when
 * it freed, 0 when it left D alone. */
int gdm_free(gdm_daemon *d);

/* ---------------------------------------------------------------- process */

/* Ignores SIGPIPE and blocks SIGTERM and SIGINT (call before any thread starts) and
 * returns a signalfd that reports them; -1 (PROG's error printed) when none. */
int gdm_signals(const char *prog);
/* Raises the descriptor limit for the connections, EXTRA more and the lingering ones;
 * warns when the hard limit is lower. */
void gdm_raise_nofile(const gdm_daemon *d, unsigned long extra);

/* ---------------------------------------------------------------- listening */

/* "host:port" ("[v6]:port") of a socket address; the host alone into HOSTONLY if not NULL. */
void gdm_format_addr(const struct sockaddr *sa, char *out, size_t len, char *hostonly, size_t hostlen);
/* A socket listening on HOST:PORT (BACKLOG), or -1: E says why when HOST did not resolve
 * (HOST_OPT names its option), else *ERR holds the errno of the last try. */
int gdm_bind(const char *host, int port, int backlog, const char *host_opt, int *err, gr_err *e);
/* Where FD listens, "host:port" (HOST:PORT when it cannot be told). */
void gdm_where(int fd, const char *host, int port, char *out, size_t len);
/* D's listener on HOST:PORT (--host, --port): prints "listening on WHERE" once ready. */
int gdm_listen(gdm_daemon *d, const char *host, int port, char *where, size_t len, gr_err *e);
/* Accepts until SIGFD reports SIGTERM or SIGINT; then closes the listener. */
void gdm_accept_loop(gdm_daemon *d, int sigfd);

/* ---------------------------------------------------------------- connections */

/* Serves FD (accepted and admitted by d->connlimit as coming from SA) on a reader
 * thread of its own. */
int gdm_conn_start(gdm_daemon *d, int fd, const struct sockaddr *sa, socklen_t salen);
void gdm_conn_ref(gdm_conn *c);
/* Drops a reference; the last one closes the socket and frees the connection. */
void gdm_conn_unref(gdm_conn *c);
/* Ends the connection at once: its reader wakes up and the socket carries nothing more. */
void gdm_conn_abort(gdm_conn *c);
/* Shutdown: aborts every connection and waits (until DEADLINE_NS) until none is open. */
void gdm_close_all(gdm_daemon *d, long long deadline_ns);
/* An absolute deadline for moving BYTES to or from a peer: the I/O timeout plus time for
 * the bytes at the floor rate; 0 without an I/O timeout. */
long long gdm_io_deadline(const gdm_daemon *d, uint64_t bytes);

/* The connection's writer with the deadline set for BYTES, without the lock (for a
 * daemon whose reader thread is the only writer). */
grw_writer *gdm_writer(gdm_conn *c, uint64_t bytes);
/* Takes the write lock and returns the writer, ready for one whole message; NULL (lock
 * released) when the connection can no longer carry one. */
grw_writer *gdm_reply_lock(gdm_conn *c, uint64_t bytes);
/* Releases the lock; RC: how writing went. 0, or -1 when the connection broke (aborted). */
int gdm_reply_unlock(gdm_conn *c, int rc, gr_err *e);
/* Sends ERROR for REQUEST_ID under the write lock: 0, or the error. */
int gdm_send_error(gdm_conn *c, uint64_t request_id, int code, const char *msg);
/* A HELLO that could not be read (E: a field past its limit, or malformed; not a lost
 * or stalled connection): logs it, answers ERROR (GRID_ERR_LIMIT or GRID_ERR_PROTOCOL)
 * and returns GDM_REFUSE, which ends the connection: only a new HELLO could follow. */
int gdm_refuse_hello(gdm_conn *c, uint64_t request_id, const gr_err *e);

/* The reader thread of C (gdm_reader.c). */
void *gdm_reader_main(void *arg);
/* Takes C off its daemon's list and drops the reader's reference. */
void gdm_conn_forget(gdm_conn *c);

/* ---------------------------------------------------------------- options */

/* "PROG: MSG (see PROG --help)" on stderr; returns the exit status 2. */
int gdm_usage_error(const char *prog, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A count up to MAX for option OPT from V: 0, or the usage error's status. */
int gdm_opt_count(const char *prog, const char *opt, const char *v, unsigned long max, unsigned *out);
/* The same, at least 1 (a limit of 0 would refuse everything). */
int gdm_opt_positive(const char *prog, const char *opt, const char *v, unsigned long max, unsigned *out);
/* An address to listen on (--host) into *OUT: 0, or the usage error's status. */
int gdm_opt_host(const char *prog, const char *opt, const char *v, const char **out);
/* A port (--port, 0: any) into *OUT: 0, or the usage error's status. */
int gdm_opt_port(const char *prog, const char *opt, const char *v, int *out);
/* --tls-cert and --tls-key come together: 0, or the usage error's status. */
int gdm_opt_tls_pair(const char *prog, const char *cert, const char *key);

/* ---------------------------------------------------------------- safe defaults (gdm_secure.c) */

/* Nonzero when every address HOST names is a loopback one (127.0.0.0/8, ::1). */
int gdm_host_is_loopback(const char *host);
/* Called by main once the log is set up. On loopback: a one-line notice when nothing
 * GUARDED the port (no key file, no TLS). Elsewhere, unguarded: refused (usage error,
 * its status 2) unless INSECURE, which logs a loud warning instead. 0: go on. */
int gdm_check_exposure(const char *prog, const char *host, int guarded, int insecure);
/* The token on the first line of PATH (--token-file; mode 0600 or stricter) into OUT
 * (GRP_MAX_TOKEN + 1 bytes): 0, or the usage error's status. */
int gdm_opt_secret_file(const char *prog, const char *opt, const char *path, char *out);
/* A token typed on the command line (V, in argv's memory) copied into OUT (GRP_MAX_TOKEN
 * + 1 bytes), then wiped there: 0, or the usage error's status. */
int gdm_opt_secret_arg(const char *prog, const char *opt, char *v, char *out);
/* Overwrites the option value V in place (argv memory), so ps no longer shows it. */
void gdm_scrub_arg(char *v);

struct option;
/* Reads the command line with getopt_long: -h prints HELP, -V the version (both: 0);
 * a missing value, an unknown option or a word that is not an option is a usage error
 * (its status, 2); every other option goes to APPLY(CTX, VAL, VALUE), which returns 0
 * or a status. Returns -1 when the daemon is to run. SHORTOPTS: its flags beyond hV. */
int gdm_opt_parse(const char *prog, int argc, char **argv, const char *shortopts,
                  const struct option *longopts, const char *help, const char *extra_arg,
                  int (*apply)(void *ctx, int val, const char *v), void *ctx);
/* "--name" of the option of LONGOPTS whose value is VAL, for messages. */
const char *gdm_opt_name(const struct option *longopts, int val, char *buf, size_t n);

#endif /* GDM_H */
