/* load_bench.c: many simultaneous clients against real servers (issue 13, item 5). The
 * bench starts the servers itself on loopback: (1) "direct": ONE gridrpcd, the clients
 * name it; (2) "meta": a gridmetad and two gridrpcd registered with it, the clients ask
 * the metaserver where to run each call. In each, N clients (default 1000) start at one
 * gate; each is a process of its own with its own connection (as separate programs
 * would be: the client library pools connections per process), connects, then calls in
 * a loop until the end of the run (--seconds, default 20): three test/echo_double of 16
 * doubles for every linalg/dmmul of 8 x 8, checking every result against what it sent
 * or against its own product.
 *
 * What each client records, in shared memory:
 *   connect   grid_describe_np of both functions: the TCP connection, the HELLO exchange
 *             and both descriptors (through the metaserver: the connection to it and its
 *             answer; the first call to each gridrpcd then pays that server's TCP and
 *             HELLO in its response time);
 *   response  each call, from grid_call to its return;
 *   in_call   set while a call is out: a call still out when the bench gives up (the
 *             end of the run + --grace) is LOST, the one thing that must never happen
 *             (a call that errs or times out is FAILED, with the library's message).
 * Every wait is bounded: clients ready within 60 s, a call at most --call-timeout, the
 * last call at most --grace after the end, servers 10 s to stop (then SIGKILL).
 *
 * Reports per run: clients, calls, ok, failed, lost, wrong results, connects that
 * failed, p50/p99/max of connect and of response time (log-spaced histogram, 2 % wide
 * buckets; max exact), calls/s, warnings and errors in the servers' logs. --csv FILE
 * appends one line per run. Exit 1 when anything failed, was lost or was wrong. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <gridrpc.h>

#define NBUCKETS 1200 /* 1 us x 1.02^1200: beyond any timeout */
#define BUCKET_BASE_MS 0.001
#define BUCKET_STEP 1.02
#define ECHO_N 16
#define MM_N 8

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- options */

static struct {
    int clients;
    double seconds, grace, call_timeout;
    const char *mode, *csv, *gridrpcd, *gridmetad, *module_dir;
    int threads;
} opt = {1000, 20, 30, 20, "both", NULL, NULL, NULL, NULL, 0};

static void usage(FILE *f) {
    fprintf(f, "Usage: load_bench [--clients N] [--seconds T] [--mode direct|meta|both] [--csv FILE]\n"
               "                  [--threads W] [--grace T] [--call-timeout T] [--gridrpcd PATH]\n"
               "                  [--gridmetad PATH] [--module-dir DIR]\n"
               "N simultaneous clients (default 1000), each a process with its own connection, call\n"
               "test/echo_double and linalg/dmmul in a loop for T seconds (default 20) against one\n"
               "gridrpcd (direct) and through a gridmetad with two gridrpcd (meta), all started here\n"
               "on loopback. Reports failed, lost and wrong calls and p50/p99/max of connect and\n"
               "response times; exit 1 when a call failed, was lost or was wrong.\n"
               "  --mode external   start no server: the clients use GRIDRPC_SERVER or GRIDRPC_METASERVER\n"
               "  --threads W       gridrpcd worker threads (default: its own, one per core)\n"
               "  --grace T         how long after the end the last calls may take (default 30)\n"
               "  --call-timeout T  the clients' call timeout (default 20)\n"
               "  --gridrpcd PATH   default: $GRIDRPCD, else ../gridrpcd next to this program\n"
               "  --gridmetad PATH  default: $GRIDMETAD, else ../gridmetad next to this program\n"
               "  --module-dir DIR  default: $GRIDRPC_TEST_MODULES, else ../stubs/.libs next to it\n");
}

static double parse_num(const char *s, double lo, double hi, const char *what) {
    char *end;
    double v = strtod(s ? s : "", &end);
    if (!s || !*s || *end || !(v >= lo && v <= hi)) {
        fprintf(stderr, "load_bench: %s must be a number from %g to %g, not '%s'\n", what, lo, hi,
                s ? s : "(missing)");
        exit(2);
    }
    return v;
}

/* PATH relative to this program's folder ("../gridrpcd" from build/bench/load_bench;
 * libtool runs the program from build/bench/.libs/, which does not count). */
static const char *beside_me(const char *argv0, const char *rel) {
    static char buf[3][4096];
    static int k;
    char *b = buf[k++ % 3];
    const char *slash = strrchr(argv0, '/');
    int dir = slash ? (int)(slash - argv0) : 0;
    if (dir >= 5 && !strncmp(argv0 + dir - 5, ".libs", 5) && (dir == 5 || argv0[dir - 6] == '/'))
        dir = dir > 5 ? dir - 6 : -1;
    if (dir > 0)
        snprintf(b, sizeof buf[0], "%.*s/%s", dir, argv0, rel);
    else if (dir == 0 && slash)
        snprintf(b, sizeof buf[0], "/%s", rel);
    else
        snprintf(b, sizeof buf[0], "%s", rel);
    return b;
}

/* ---- the servers */

typedef struct proc {
    pid_t pid;
    int port;
    int out; /* its stdout, kept open (never read again) so that a later write cannot fail */
    char log[256];
} proc;

static char tmpdir[] = "/tmp/load_bench.XXXXXX";

/* Starts ARGV (NULL-terminated) with stdout on a pipe and stderr in LOG; returns once
 * it printed "listening on HOST:PORT" (at most 30 s on a loaded machine), or exits. */
static void proc_start(proc *p, const char *name, char **argv) {
    int fd[2];
    snprintf(p->log, sizeof p->log, "%s/%s.log", tmpdir, name);
    if (pipe(fd)) {
        perror("load_bench: pipe");
        exit(1);
    }
    p->pid = fork();
    if (p->pid < 0) {
        perror("load_bench: fork");
        exit(1);
    }
    if (p->pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlives the bench */
        FILE *lf = freopen(p->log, "w", stderr);
        (void)lf;
        dup2(fd[1], 1);
        close(fd[0]);
        close(fd[1]);
        execv(argv[0], argv);
        fprintf(stderr, "load_bench: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(fd[1]);
    char buf[1024];
    size_t n = 0;
    double until = now() + 30;
    for (;;) {
        struct pollfd pf = {fd[0], POLLIN, 0};
        int left = (int)((until - now()) * 1000);
        if (left <= 0 || poll(&pf, 1, left) <= 0) {
            fprintf(stderr, "load_bench: %s did not print 'listening on HOST:PORT' within 30 s (log: %s)\n",
                    argv[0], p->log);
            exit(1);
        }
        ssize_t k = read(fd[0], buf + n, sizeof buf - 1 - n);
        if (k <= 0) {
            fprintf(stderr, "load_bench: %s exited before it listened; its log (%s):\n", argv[0], p->log);
            char cmd[400];
            snprintf(cmd, sizeof cmd, "tail -5 '%s' >&2", p->log);
            if (system(cmd)) { /* best effort */
            }
            exit(1);
        }
        n += (size_t)k;
        buf[n] = 0;
        char *l = strstr(buf, "listening on ");
        char *nl = l ? strchr(l, '\n') : NULL;
        if (nl) {
            *nl = 0;
            char *colon = strrchr(l, ':');
            p->port = colon ? atoi(colon + 1) : 0;
            if (p->port > 0) break;
        }
        if (n >= sizeof buf - 1) {
            fprintf(stderr, "load_bench: unexpected output from %s: %s\n", argv[0], buf);
            exit(1);
        }
    }
    p->out = fd[0];
}

/* SIGTERM, at most 10 s to exit, else SIGKILL. Returns its exit status (-1: killed). */
static int proc_stop(proc *p) {
    if (p->pid <= 0) return 0;
    kill(p->pid, SIGTERM);
    int st = 0;
    for (int i = 0; i < 200; i++) {
        if (waitpid(p->pid, &st, WNOHANG) == p->pid) {
            p->pid = 0;
            close(p->out);
            return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        }
        struct timespec ts = {0, 50000000};
        nanosleep(&ts, NULL);
    }
    kill(p->pid, SIGKILL);
    waitpid(p->pid, &st, 0);
    p->pid = 0;
    close(p->out);
    return -1;
}

/* Lines of P's log that hold NEEDLE. */
static int count_lines(const char *path, const char *needle) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char line[2048];
    int n = 0;
    while (fgets(line, sizeof line, f))
        n += strstr(line, needle) != NULL;
    fclose(f);
    return n;
}

/* ---- the clients */

enum { C_NEW = 0, C_CONNECTED, C_DONE, C_NOCONNECT };

typedef struct client_rec {
    int state;
    int in_call; /* 1 while a call is out: still 1 when the bench gives up: lost */
    double connect_ms;
    long calls, ok, failed, wrong;
    double max_ms;
    unsigned hist[NBUCKETS];
    char msg[200]; /* the first error */
} client_rec;

typedef struct shared {
    double deadline; /* CLOCK_MONOTONIC, shared by all processes */
} shared;

static int bucket(double ms) {
    if (!(ms > BUCKET_BASE_MS)) return 0;
    int b = (int)(log(ms / BUCKET_BASE_MS) / log(BUCKET_STEP));
    return b < NBUCKETS ? b : NBUCKETS - 1;
}

/* Deterministic values in [-1, 1). */
static void fill(double *a, int n, unsigned long long *seed) {
    for (int i = 0; i < n; i++) {
        *seed = *seed * 6364136223846793005ULL + 1442695040888963407ULL;
        a[i] = (double)(*seed >> 11) / 9007199254740992.0 * 2.0 - 1.0;
    }
}

/* One call of the mix (I-th of this client); 0 ok, 1 failed, 2 wrong. */
static int one_call(long i, unsigned long long *seed, client_rec *r) {
    int rc;
    if (i % 4 != 3) {
        double in[ECHO_N], out[ECHO_N];
        fill(in, ECHO_N, seed);
        memset(out, 0, sizeof out);
        rc = grid_call("test/echo_double", ECHO_N, in, out);
        if (rc != GRID_OK) goto failed;
        return memcmp(in, out, sizeof in) ? 2 : 0;
    }
    double a[MM_N * MM_N], b[MM_N * MM_N], c[MM_N * MM_N];
    fill(a, MM_N * MM_N, seed);
    fill(b, MM_N * MM_N, seed);
    memset(c, 0, sizeof c);
    rc = grid_call("linalg/dmmul", MM_N, a, b, c);
    if (rc != GRID_OK) goto failed;
    /* The product of values in [-1, 1): any order of summation agrees to ~1e-15. */
    for (int x = 0; x < MM_N; x++)
        for (int y = 0; y < MM_N; y++) {
            double s = 0;
            for (int k = 0; k < MM_N; k++)
                s += a[x * MM_N + k] * b[k * MM_N + y];
            if (fabs(s - c[x * MM_N + y]) > 1e-12) return 2;
        }
    return 0;
failed:
    if (!r->msg[0]) snprintf(r->msg, sizeof r->msg, "%s", grid_last_error());
    return 1;
}

/* Client ID: ready, gate, connect, calls until the deadline (at least one), done, then
 * holds its connection until the exit gate so that all N stay connected at once. */
static void run_client(int id, int report_fd, int gate_fd, int exit_fd, const shared *sh, client_rec *r) {
    char c = 'r', dummy;
    grid_set_timeouts_np(10, opt.call_timeout);
    if (write(report_fd, &c, 1) != 1) _exit(1);
    while (read(gate_fd, &dummy, 1) < 0 && errno == EINTR)
        continue;
    unsigned long long seed = 0x9e3779b97f4a7c15ULL * (unsigned long long)(id + 1);
    grid_function_np f;
    double t0 = now();
    int rc = grid_describe_np("test/echo_double", &f);
    if (rc == GRID_OK) rc = grid_describe_np("linalg/dmmul", &f);
    r->connect_ms = (now() - t0) * 1e3;
    if (rc != GRID_OK) {
        snprintf(r->msg, sizeof r->msg, "connect: %s", grid_last_error());
        r->state = C_NOCONNECT;
    } else {
        r->state = C_CONNECTED;
        for (long i = 0; i == 0 || now() < sh->deadline; i++) {
            r->in_call = 1;
            __atomic_thread_fence(__ATOMIC_SEQ_CST);
            double t = now();
            int res = one_call(i, &seed, r);
            double ms = (now() - t) * 1e3;
            r->calls++;
            r->in_call = 0;
            if (res == 1) {
                r->failed++;
                continue;
            }
            r->hist[bucket(ms)]++;
            if (ms > r->max_ms) r->max_ms = ms;
            if (res == 2) {
                r->wrong++;
                if (!r->msg[0]) snprintf(r->msg, sizeof r->msg, "wrong result in call %ld", i);
            } else {
                r->ok++;
            }
        }
        r->state = C_DONE;
    }
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    c = 'd';
    if (write(report_fd, &c, 1) != 1) _exit(1);
    while (read(exit_fd, &dummy, 1) < 0 && errno == EINTR)
        continue;
    _exit(0);
}

static pid_t *pids;

/* Waits for WANT bytes on FD or client ends, until UNTIL; returns how many came. */
static int await_clients(int fd, int n, int want, double until) {
    int got = 0;
    char buf[256];
    while (got < want && now() < until) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 100) > 0) {
            ssize_t k = read(fd, buf, sizeof buf);
            if (k > 0)
                got += (int)k;
            else if (k == 0 || errno != EINTR)
                break;
        }
        pid_t pid;
        int st;
        while ((pid = waitpid(-1, &st, WNOHANG)) > 0)
            for (int i = 0; i < n; i++)
                if (pids[i] == pid) {
                    pids[i] = 0; /* died before reporting: counted from its record */
                    got++;
                }
    }
    return got;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The value at quantile Q of a histogram of TOTAL counts: its bucket's upper edge. */
static double hist_quantile(const unsigned long long *h, unsigned long long total, double q) {
    if (total == 0) return NAN;
    unsigned long long want = (unsigned long long)ceil(q * (double)total), seen = 0;
    if (want == 0) want = 1;
    for (int b = 0; b < NBUCKETS; b++) {
        seen += h[b];
        if (seen >= want) return BUCKET_BASE_MS * pow(BUCKET_STEP, b + 1);
    }
    return NAN;
}

typedef struct result {
    long calls, ok, failed, lost, wrong, noconnect;
    long unfinished; /* clients connected but not done (and not in a call) when the bench gave up */
    double c50, c99, cmax, r50, r99, rmax, wall, rate;
    int warnings;
} result;

/* N clients against whatever the environment names (GRIDRPC_SERVER or _METASERVER). */
static result run_clients(int n) {
    result res = {0};
    client_rec *rec =
        mmap(NULL, (size_t)n * sizeof *rec, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    int report[2], gate[2], exit_gate[2];
    pids = calloc((size_t)n, sizeof *pids);
    if (rec == MAP_FAILED || sh == MAP_FAILED || !pids || pipe(report) || pipe(gate) || pipe(exit_gate)) {
        perror("load_bench");
        exit(1);
    }
    fflush(NULL);
    int started = 0;
    for (int i = 0; i < n; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            close(report[0]);
            close(gate[1]);
            close(exit_gate[1]);
            run_client(i, report[1], gate[0], exit_gate[0], sh, &rec[i]);
        }
        if (pid < 0) {
            fprintf(stderr, "load_bench: cannot start client %d: %s\n", i, strerror(errno));
            snprintf(rec[i].msg, sizeof rec[i].msg, "not started: %s", strerror(errno));
            rec[i].state = C_NOCONNECT;
            continue;
        }
        pids[i] = pid;
        started++;
    }
    close(report[1]);
    close(gate[0]);
    close(exit_gate[0]);
    int ready = await_clients(report[0], n, started, now() + 60);
    if (ready < started)
        fprintf(stderr, "load_bench: only %d of %d clients got ready in 60 s\n", ready, started);
    double t0 = now();
    sh->deadline = t0 + opt.seconds;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    close(gate[1]);
    /* The clients report once more each; the last calls get --grace after the end. */
    int done = await_clients(report[0], n, started, sh->deadline + opt.grace);
    res.wall = now() - t0;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    /* What is still out now was lost: read before the exit gate lets clients go. */
    for (int i = 0; i < n; i++) {
        res.lost += rec[i].in_call;
        if (rec[i].state == C_CONNECTED && !rec[i].in_call) res.unfinished++;
    }
    if (done < started)
        fprintf(stderr, "load_bench: %d clients still running %g s after the end\n", started - done,
                opt.grace);
    close(exit_gate[1]);
    for (int i = 0; i < n; i++) {
        if (pids[i] > 0) {
            if (done < started) kill(pids[i], SIGKILL);
            while (waitpid(pids[i], NULL, 0) < 0 && errno == EINTR)
                continue;
        }
    }
    close(report[0]);

    unsigned long long *h = calloc(NBUCKETS, sizeof *h), total = 0;
    double *conn = malloc((size_t)n * sizeof *conn);
    int nconn = 0, shown = 0;
    for (int i = 0; i < n; i++) {
        client_rec *r = &rec[i];
        res.calls += r->calls;
        res.ok += r->ok;
        res.failed += r->failed;
        res.wrong += r->wrong;
        if (r->state == C_NOCONNECT || r->state == C_NEW) res.noconnect++;
        if (r->state != C_NOCONNECT && r->state != C_NEW) conn[nconn++] = r->connect_ms;
        for (int b = 0; b < NBUCKETS; b++) {
            h[b] += r->hist[b];
            total += r->hist[b];
        }
        if (r->max_ms > res.rmax) res.rmax = r->max_ms;
        if ((r->msg[0] || r->state == C_NEW) && shown < 5) {
            fprintf(stderr, "load_bench: client %d: %s\n", i, r->msg[0] ? r->msg : "never connected");
            shown++;
        }
    }
    qsort(conn, (size_t)nconn, sizeof *conn, cmp_double);
    res.c50 = nconn ? conn[(int)ceil(0.50 * nconn) - 1] : NAN;
    res.c99 = nconn ? conn[(int)ceil(0.99 * nconn) - 1] : NAN;
    res.cmax = nconn ? conn[nconn - 1] : NAN;
    res.r50 = hist_quantile(h, total, 0.50);
    res.r99 = hist_quantile(h, total, 0.99);
    res.rate = res.wall > 0 ? (double)res.calls / res.wall : 0;
    free(h);
    free(conn);
    free(pids);
    munmap(rec, (size_t)n * sizeof *rec);
    munmap(sh, sizeof *sh);
    return res;
}

static void print_result(const char *mode, const result *r) {
    printf(
        "%-6s clients %d, %.1f s: calls %ld (ok %ld), failed %ld, lost %ld, wrong %ld, connects failed %ld, "
        "unfinished %ld, %.0f calls/s\n",
        mode, opt.clients, r->wall, r->calls, r->ok, r->failed, r->lost, r->wrong, r->noconnect,
        r->unfinished, r->rate);
    printf("%-6s connect ms: p50 %.3f  p99 %.3f  max %.3f;  response ms: p50 %.3f  p99 %.3f  max %.3f;  "
           "server log warnings/errors: %d\n",
           mode, r->c50, r->c99, r->cmax, r->r50, r->r99, r->rmax, r->warnings);
    fflush(stdout);
    if (!opt.csv) return;
    struct stat st;
    int fresh = stat(opt.csv, &st) != 0 || st.st_size == 0;
    FILE *f = fopen(opt.csv, "a");
    if (!f) {
        fprintf(stderr, "load_bench: %s: %s\n", opt.csv, strerror(errno));
        return;
    }
    if (fresh)
        fprintf(
            f,
            "mode,clients,seconds,calls,ok,failed,lost,wrong,connect_failed,connect_p50_ms,connect_p99_ms,"
            "connect_max_ms,response_p50_ms,response_p99_ms,response_max_ms,calls_per_s,server_warnings\n");
    fprintf(f, "%s,%d,%.3f,%ld,%ld,%ld,%ld,%ld,%ld,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.1f,%d\n", mode,
            opt.clients, r->wall, r->calls, r->ok, r->failed, r->lost, r->wrong, r->noconnect, r->c50, r->c99,
            r->cmax, r->r50, r->r99, r->rmax, r->rate, r->warnings);
    fclose(f);
}

/* Warnings and errors the servers logged (gridrpcd runs at --log-level warn). */
static int log_warnings(const proc *p) {
    return count_lines(p->log, " warn: ") + count_lines(p->log, " error: ");
}

static void gridrpcd_argv(char **argv, char *portbuf, const char *meta) {
    static char threads[16], conns[32];
    int k = 0;
    argv[k++] = (char *)opt.gridrpcd;
    /* Every client comes from 127.0.0.1: the per-address limit (default 256) must let
     * them all in, as an operator would raise it for a known crowd behind one address. */
    snprintf(conns, sizeof conns, "%d", opt.clients + 64 > 4096 ? opt.clients + 64 : 4096);
    argv[k++] = "--max-connections";
    argv[k++] = conns;
    argv[k++] = "--max-connections-per-address";
    argv[k++] = conns;
    argv[k++] = "--host";
    argv[k++] = "127.0.0.1";
    argv[k++] = "--port";
    argv[k++] = "0";
    argv[k++] = "--module-dir";
    argv[k++] = (char *)opt.module_dir;
    argv[k++] = "--log-level";
    argv[k++] = "warn";
    if (opt.threads > 0) {
        snprintf(threads, sizeof threads, "%d", opt.threads);
        argv[k++] = "--threads";
        argv[k++] = threads;
    }
    if (meta) {
        argv[k++] = "--metaserver";
        argv[k++] = portbuf;
        argv[k++] = "--speed";
        argv[k++] = "1e9"; /* no start-up measurement: both alike */
    }
    argv[k] = NULL;
}

static int run_direct(void) {
    proc s = {0};
    char *argv[24];
    gridrpcd_argv(argv, NULL, NULL);
    proc_start(&s, "gridrpcd", argv);
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", s.port);
    setenv("GRIDRPC_SERVER", addr, 1);
    unsetenv("GRIDRPC_METASERVER");
    result r = run_clients(opt.clients);
    int st = proc_stop(&s);
    r.warnings = log_warnings(&s) + (st != 0);
    print_result("direct", &r);
    return r.failed || r.lost || r.wrong || r.noconnect || r.unfinished;
}

/* The servers GRIDRPC_SERVER or GRIDRPC_METASERVER name, started elsewhere (soak.sh). */
static int run_external(void) {
    if (!getenv("GRIDRPC_SERVER") && !getenv("GRIDRPC_METASERVER")) {
        fprintf(stderr, "load_bench: --mode external needs GRIDRPC_SERVER or GRIDRPC_METASERVER\n");
        return 1;
    }
    result r = run_clients(opt.clients);
    print_result("extern", &r);
    return r.failed || r.lost || r.wrong || r.noconnect || r.unfinished;
}

static int run_meta(void) {
    proc m = {0}, s[2] = {{0}};
    char db[300], conns[32], *argv[24];
    snprintf(db, sizeof db, "%s/registry.db", tmpdir);
    /* The clients and both servers each hold a connection to the metaserver. */
    snprintf(conns, sizeof conns, "%d", opt.clients + 64);
    char *margv[] = {(char *)opt.gridmetad,
                     "--host",
                     "127.0.0.1",
                     "--port",
                     "0",
                     "--db",
                     db,
                     "--max-connections",
                     conns,
                     "--max-connections-per-address",
                     conns,
                     "--log-level",
                     "info",
                     NULL};
    proc_start(&m, "gridmetad", margv);
    char maddr[64];
    snprintf(maddr, sizeof maddr, "127.0.0.1:%d", m.port);
    for (int i = 0; i < 2; i++) {
        char name[32];
        snprintf(name, sizeof name, "gridrpcd%d", i + 1);
        gridrpcd_argv(argv, maddr, "meta");
        proc_start(&s[i], name, argv);
    }
    /* Both registered (gridmetad logs each), at most 30 s. */
    double until = now() + 30;
    while (count_lines(m.log, "registered") < 2) {
        if (now() > until) {
            fprintf(stderr, "load_bench: the servers did not register with gridmetad in 30 s (%s)\n", m.log);
            proc_stop(&s[0]);
            proc_stop(&s[1]);
            proc_stop(&m);
            return 1;
        }
        struct timespec ts = {0, 100000000};
        nanosleep(&ts, NULL);
    }
    unsetenv("GRIDRPC_SERVER");
    setenv("GRIDRPC_METASERVER", maddr, 1);
    result r = run_clients(opt.clients);
    int bad = 0;
    for (int i = 0; i < 2; i++) {
        bad += proc_stop(&s[i]) != 0;
        r.warnings += log_warnings(&s[i]);
    }
    bad += proc_stop(&m) != 0;
    r.warnings += log_warnings(&m) + bad;
    print_result("meta", &r);
    return r.failed || r.lost || r.wrong || r.noconnect || r.unfinished;
}

/* Descriptors: each client is a connection in the server (and one more in gridmetad). */
static void raise_nofile(int want) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl)) return;
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < (rlim_t)want) {
        rlim_t old = rl.rlim_cur;
        rl.rlim_cur =
            rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= (rlim_t)want ? (rlim_t)want : rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur >= (rlim_t)want) return;
        fprintf(stderr,
                "load_bench: warning: RLIMIT_NOFILE is %llu (hard %llu), wanted %d for %d clients: the "
                "servers may "
                "refuse connections (raise the hard limit: ulimit -Hn, /etc/security/limits.conf)\n",
                (unsigned long long)old, (unsigned long long)rl.rlim_max, want, opt.clients);
    }
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--clients")) {
            opt.clients = (int)parse_num(v, 1, 20000, "--clients");
        } else if (!strcmp(a, "--seconds")) {
            opt.seconds = parse_num(v, 0.1, 86400, "--seconds");
        } else if (!strcmp(a, "--grace")) {
            opt.grace = parse_num(v, 1, 3600, "--grace");
        } else if (!strcmp(a, "--call-timeout")) {
            opt.call_timeout = parse_num(v, 1, 3600, "--call-timeout");
        } else if (!strcmp(a, "--threads")) {
            opt.threads = (int)parse_num(v, 1, 4096, "--threads");
        } else if (!strcmp(a, "--mode") && v &&
                   (!strcmp(v, "direct") || !strcmp(v, "meta") || !strcmp(v, "both") ||
                    !strcmp(v, "external"))) {
            opt.mode = v;
        } else if (!strcmp(a, "--csv") && v) {
            opt.csv = v;
        } else if (!strcmp(a, "--gridrpcd") && v) {
            opt.gridrpcd = v;
        } else if (!strcmp(a, "--gridmetad") && v) {
            opt.gridmetad = v;
        } else if (!strcmp(a, "--module-dir") && v) {
            opt.module_dir = v;
        } else {
            fprintf(stderr, "load_bench: bad option or value: %s%s%s (see --help)\n", a, v ? " " : "",
                    v ? v : "");
            return 2;
        }
        i++;
    }
    if (!opt.gridrpcd)
        opt.gridrpcd = getenv("GRIDRPCD") ? getenv("GRIDRPCD") : beside_me(argv[0], "../gridrpcd");
    if (!opt.gridmetad)
        opt.gridmetad = getenv("GRIDMETAD") ? getenv("GRIDMETAD") : beside_me(argv[0], "../gridmetad");
    if (!opt.module_dir)
        opt.module_dir = getenv("GRIDRPC_TEST_MODULES") ? getenv("GRIDRPC_TEST_MODULES")
                                                        : beside_me(argv[0], "../stubs/.libs");
    int meta = !strcmp(opt.mode, "meta") || !strcmp(opt.mode, "both");
    int direct = !strcmp(opt.mode, "direct") || !strcmp(opt.mode, "both");
    if (!strcmp(opt.mode, "external")) {
        raise_nofile(opt.clients * 2 + 256);
        signal(SIGPIPE, SIG_IGN);
        return run_external() ? 1 : 0;
    }
    if (access(opt.gridrpcd, X_OK) || (meta && access(opt.gridmetad, X_OK))) {
        fprintf(stderr, "load_bench: %s: not found: build it or give --gridrpcd / --gridmetad PATH\n",
                access(opt.gridrpcd, X_OK) ? opt.gridrpcd : opt.gridmetad);
        return 2;
    }
    if (!mkdtemp(tmpdir)) {
        perror("load_bench: mkdtemp");
        return 1;
    }
    raise_nofile(opt.clients * 2 + 256);
    signal(SIGPIPE, SIG_IGN);
    unsetenv("GRIDRPC_CONFIG");
    printf(
        "load_bench: %d clients, %g s per run, call mix 3 test/echo_double (n=%d) : 1 linalg/dmmul (n=%d)\n",
        opt.clients, opt.seconds, ECHO_N, MM_N);
    fflush(stdout);
    int bad = 0;
    if (direct) bad |= run_direct();
    if (meta) bad |= run_meta();
    char cmd[300];
    if (!bad) {
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
        if (system(cmd)) { /* best effort */
        }
    } else {
        fprintf(stderr, "load_bench: server logs kept in %s\n", tmpdir);
    }
    return bad ? 1 : 0;
}
