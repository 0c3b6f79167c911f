/* multiclient.c: the multi-client server experiment. Q clients race to one server;
 * each sends matrix sizes M and N and a seed of its own; the server (lsq/lsq_experiment)
 * generates A (M x N) and b from the seed, solves A x = b by SVD, by QR and by the
 * pseudo-inverse in parallel, and returns the three residual norms |A x - b|. Each
 * client logs one line; a summary gives the mean and standard deviation of connection
 * and response times. The server logs each call itself (gridrpcd --log-level info).
 *
 * Usage: multiclient Q [M N]   (default M = 60, N = 40; GRIDRPC_SERVER names the server)
 *
 * Each client is a process of its own, not a thread. The client library keeps one pool
 * of connections and one descriptor cache per process, so a thread that starts late
 * would reuse a connection that an earlier thread has already released and would find
 * the descriptor cached: it would time a round trip, not a connection. A fresh process
 * is what a separate client program is. The processes are forked before the race and
 * wait at a gate (a pipe the parent closes once every client is ready), so all of them
 * start connecting together; their results come back in shared memory.
 *
 * What is timed, on CLOCK_MONOTONIC, in each client:
 *   tcp       a plain TCP connect() to the server's address, closed at once: the
 *             connection time of the seeds' experiment (the kernel's handshake and
 *             the listen queue; the server's reader sees the close and says nothing).
 *             Only with GRIDRPC_SERVER=host:port; it adds one short connection per
 *             client to the server's load.
 *   connect   what a new client pays before its first call can go out: the TCP
 *             connection, the HELLO exchange and the fetch of lsq_experiment's
 *             descriptor (grid_describe_np). The server answers all three on the
 *             connection's reader thread, never on a worker.
 *   response  the lsq_experiment call on that connection: sending, waiting in the
 *             server's queue for a worker, the three solves, the reply.
 *   start     how long after the gate opened the client got to run (on a machine with
 *             fewer cores than clients, the last ones start late).
 *
 * Checks: each residual is finite and at most ||b|| (x = 0 already achieves ||b||, and
 * ||b|| <= sqrt(M) since b is uniform in [-1, 1)), and the three methods agree to 1e-8
 * relative: they solve the same least-squares problem, so a disagreement is a wrong
 * answer, not rounding. Exit status: 0 all good, 1 a call failed or the methods
 * disagree, 2 usage. */
#include <errno.h>
#include <math.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gridrpc.h>

#include "common.h"

#define FUNCTION "lsq/lsq_experiment"
#define AGREE_REL 1e-8

enum { PENDING = 0, DONE, FAILED };

/* One client's record, written by the client process into shared memory. */
typedef struct client_result {
    int state;                              /* PENDING until the client wrote its record */
    double start;                           /* CLOCK_MONOTONIC, which all processes share */
    double tcp_ms, connect_ms, response_ms; /* tcp_ms < 0: not measured */
    double err[3];
    char msg[240];
} client_result;

/* The server's address for the tcp probe (from GRIDRPC_SERVER), resolved before the
 * clients start so that name lookup is not timed; probe_len 0: no probe. */
static struct sockaddr_storage probe_addr;
static socklen_t probe_len;

static void resolve_probe(void) {
    const char *s = getenv("GRIDRPC_SERVER");
    const char *colon = s ? strrchr(s, ':') : NULL;
    char host[256];
    struct addrinfo hints = {0}, *ai;
    if (colon == NULL || (size_t)(colon - s) >= sizeof host) return;
    snprintf(host, sizeof host, "%.*s", (int)(colon - s), s[0] == '[' ? s + 1 : s);
    if (host[0] != 0 && host[strlen(host) - 1] == ']') host[strlen(host) - 1] = 0;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, colon + 1, &hints, &ai) != 0) return;
    memcpy(&probe_addr, ai->ai_addr, ai->ai_addrlen);
    probe_len = ai->ai_addrlen;
    freeaddrinfo(ai);
}

/* Milliseconds for a blocking TCP connect() to the server; -1 if it failed. */
static double tcp_probe(void) {
    int fd = socket(probe_addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    double t0 = now_seconds();
    int rc = connect(fd, (struct sockaddr *)&probe_addr, probe_len);
    double t = (now_seconds() - t0) * 1e3;
    close(fd);
    return rc == 0 ? t : -1;
}

/* The clients, by index: their pids (0 once reaped) and exit statuses. */
static pid_t *pids;
static int *exit_status;
static int nclients;

/* Waits for WANT events from the clients, for at most TIMEOUT seconds: a byte on the
 * report pipe FD, or the end of a client that will never write one (a crash), reaped
 * here. Bounded, so that a client that never gets going cannot hold the race forever.
 * Returns how many events came; *ENDED counts the clients reaped. */
static int await_clients(int fd, int want, double timeout, int *ended) {
    char buf[256];
    int got = 0;
    double deadline = now_seconds() + timeout;
    while (got < want && now_seconds() < deadline) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 100) > 0) {
            ssize_t n = read(fd, buf, sizeof buf);
            if (n > 0)
                got += (int)n;
            else if (n == 0 || errno != EINTR)
                break;
        }
        pid_t pid;
        int st;
        while ((pid = waitpid(-1, &st, WNOHANG)) > 0)
            for (int i = 0; i < nclients; i++)
                if (pids[i] == pid) {
                    pids[i] = 0;
                    exit_status[i] = st;
                    got++;
                    ++*ended;
                }
    }
    return got;
}

/* The body of client ID: reports ready and waits at the gate; connects and calls;
 * reports done and waits at the exit gate, so that no client tears its process down
 * while others still race, and all Q are connected at once (simultaneous clients).
 * Never returns. */
static void run_client(int id, int m, int n, int report_fd, int gate_fd, int exit_fd, client_result *r) {
    char c = 'r', dummy;
    /* Bounded: no client waits forever on a server that stopped answering. */
    grid_set_timeouts_np(10, 120);
    /* A gate opens when the parent closes its write end: read returns 0 in every
     * client at once. */
    if (write(report_fd, &c, 1) != 1) _exit(1);
    while (read(gate_fd, &dummy, 1) < 0 && errno == EINTR)
        continue;
    r->start = now_seconds();
    r->tcp_ms = probe_len > 0 ? tcp_probe() : -1;
    double t0 = now_seconds();
    grid_function_np f;
    int rc = grid_describe_np(FUNCTION, &f);
    double t1 = now_seconds();
    r->connect_ms = (t1 - t0) * 1e3;
    if (rc == GRID_OK) {
        rc = grid_call(FUNCTION, m, n, id + 1, r->err);
        r->response_ms = (now_seconds() - t1) * 1e3;
    }
    if (rc != GRID_OK) snprintf(r->msg, sizeof r->msg, "%s", grid_last_error());
    r->state = rc == GRID_OK ? DONE : FAILED;
    c = 'd';
    if (write(report_fd, &c, 1) != 1) _exit(1);
    while (read(exit_fd, &dummy, 1) < 0 && errno == EINTR)
        continue;
    _exit(0);
}

/* "" if the three residuals are plausible and agree, else what is wrong. */
static const char *check_residuals(const double *e, int m) {
    double bound = sqrt((double)m) * (1 + 1e-12), big = 0;
    for (int k = 0; k < 3; k++) {
        if (!isfinite(e[k]) || e[k] < 0) return "a residual is not a finite norm";
        if (e[k] > bound) return "a residual exceeds ||b||";
        big = fmax(big, e[k]);
    }
    /* The absolute floor is for consistent systems (M <= N), whose residuals are pure
     * rounding noise that no relative test can compare. */
    double tol = AGREE_REL * big + 1e-12 * bound;
    if (fabs(e[1] - e[0]) > tol || fabs(e[2] - e[0]) > tol) return "the three methods disagree";
    return "";
}

typedef struct stats {
    double mean, sd, min, max, p99;
} stats;

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Mean, sample standard deviation, extremes and 99th percentile (nearest rank) of
 * the N values of V, which it sorts. */
static stats summarize(double *v, int n) {
    stats s = {0, 0, 0, 0, 0};
    if (n == 0) return s;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    for (int i = 0; i < n; i++)
        s.mean += v[i];
    s.mean /= n;
    for (int i = 0; i < n; i++)
        s.sd += (v[i] - s.mean) * (v[i] - s.mean);
    s.sd = n > 1 ? sqrt(s.sd / (n - 1)) : 0;
    s.min = v[0];
    s.max = v[n - 1];
    s.p99 = v[(int)ceil(0.99 * n) - 1];
    return s;
}

static void print_stats(const char *what, const stats *s, int n) {
    printf("%-8s (ms, %d clients): mean %.3f  sd %.3f  min %.3f  p99 %.3f  max %.3f\n", what, n, s->mean,
           s->sd, s->min, s->p99, s->max);
}

int main(int argc, char **argv) {
    if (argc < 2 || argc > 4 || argc == 3 || strcmp(argv[1], "--help") == 0) {
        fprintf(argc >= 2 ? stdout : stderr,
                "Usage: multiclient Q [M N]\n"
                "Q clients (processes) race to the GridRPC server of GRIDRPC_SERVER; each has it solve an\n"
                "M x N least-squares problem (default 60 x 40) from its own seed by SVD, QR and\n"
                "pseudo-inverse. Logs one line per client and the mean and standard deviation of\n"
                "connection and response times; exits 1 if a call failed or the methods disagree.\n");
        return argc >= 2 && strcmp(argv[1], "--help") == 0 ? 0 : 2;
    }
    int q = parse_size(argv[1], 1, 10000, "Q");
    int m = argc == 4 ? parse_size(argv[2], 1, 2000, "M") : 60;
    int n = argc == 4 ? parse_size(argv[3], 1, 2000, "N") : 40;

    client_result *res =
        mmap(NULL, (size_t)q * sizeof *res, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    int report[2], gate[2], exit_gate[2];
    pids = calloc((size_t)q, sizeof *pids);
    exit_status = calloc((size_t)q, sizeof *exit_status);
    if (res == MAP_FAILED || pids == NULL || exit_status == NULL || pipe(report) != 0 || pipe(gate) != 0 ||
        pipe(exit_gate) != 0) {
        perror("multiclient");
        return 1;
    }
    nclients = q;
    resolve_probe();
    /* Output flushed now is not written again by every child. */
    fflush(NULL);
    int started = 0, ended = 0;
    for (int i = 0; i < q; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            close(report[0]);
            close(gate[1]); /* else this client would hold its own gates shut */
            close(exit_gate[1]);
            run_client(i, m, n, report[1], gate[0], exit_gate[0], &res[i]);
        }
        if (pid < 0) {
            snprintf(res[i].msg, sizeof res[i].msg, "cannot start the client process: %s", strerror(errno));
            res[i].state = FAILED;
            continue;
        }
        pids[i] = pid;
        started++;
    }
    close(report[1]);
    close(gate[0]);
    close(exit_gate[0]);
    int nready = await_clients(report[0], started, 60, &ended);
    if (nready < started)
        fprintf(stderr, "multiclient: only %d of %d clients got ready in 60 s\n", nready, started);
    double gate_time = now_seconds();
    close(gate[1]);
    /* Every client that is still alive reports once more (or ends). The clients'
     * timeouts bound their calls to 130 s. */
    int alive = started - ended;
    int ndone = await_clients(report[0], alive, 150, &ended);
    double wall = now_seconds() - gate_time;
    if (ndone < alive)
        fprintf(stderr, "multiclient: only %d of %d clients finished in 150 s\n", ndone, alive);
    close(exit_gate[1]);
    for (int i = 0; i < q; i++) {
        if (pids[i] > 0) {
            /* A client stuck past every timeout is not waited for forever. */
            if (ndone < alive) kill(pids[i], SIGKILL);
            while (waitpid(pids[i], &exit_status[i], 0) < 0 && errno == EINTR)
                continue;
        }
        if (res[i].state == PENDING) {
            snprintf(res[i].msg, sizeof res[i].msg, "the client process died (%s)",
                     WIFSIGNALED(exit_status[i]) ? strsignal(WTERMSIG(exit_status[i])) : "no result");
            res[i].state = FAILED;
        }
    }

    /* The log, one line per client in client order; and the statistics. */
    double *tcp = malloc((size_t)q * sizeof *tcp), *conn = malloc((size_t)q * sizeof *conn),
           *resp = malloc((size_t)q * sizeof *resp);
    if (tcp == NULL || conn == NULL || resp == NULL) {
        perror("multiclient");
        return 1;
    }
    int ntcp = 0, nconn = 0, nresp = 0, failed = 0, wrong = 0, probe_failed = 0;
    double last_start = 0;
    const char *server = getenv("GRIDRPC_SERVER");
    printf("multiclient: %d clients, m=%d n=%d, %s at %s\n", q, m, n, FUNCTION,
           server ? server : "(configured)");
    for (int i = 0; i < q; i++) {
        client_result *r = &res[i];
        if (r->start > 0) last_start = fmax(last_start, r->start - gate_time);
        if (r->tcp_ms >= 0)
            tcp[ntcp++] = r->tcp_ms;
        else if (probe_len > 0 && r->start > 0)
            probe_failed++;
        printf("client %d: start +%.3f ms, tcp %.3f ms, connect %.3f ms", i, (r->start - gate_time) * 1e3,
               r->tcp_ms, r->connect_ms);
        if (r->state != DONE) {
            failed++;
            printf(": FAILED: %s\n", r->msg);
            continue;
        }
        const char *bad = check_residuals(r->err, m);
        wrong += *bad != 0;
        conn[nconn++] = r->connect_ms;
        resp[nresp++] = r->response_ms;
        printf(", response %.3f ms, residual svd %.10e qr %.10e pinv %.10e: %s\n", r->response_ms, r->err[0],
               r->err[1], r->err[2], *bad ? bad : "ok");
    }
    stats st = summarize(tcp, ntcp), sc = summarize(conn, nconn), sr = summarize(resp, nresp);
    if (probe_len > 0) print_stats("tcp", &st, ntcp);
    print_stats("connect", &sc, nconn);
    print_stats("response", &sr, nresp);
    printf("last client started %.3f ms after the gate; all done in %.3f s; failed calls: %d; methods "
           "disagree: %d; tcp connects failed: %d\n",
           last_start * 1e3, wall, failed, wrong, probe_failed);
    free(tcp);
    free(conn);
    free(resp);
    free(pids);
    free(exit_status);
    return failed || wrong ? 1 : 0;
}
