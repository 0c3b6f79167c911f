/* meta_load_bench.c: decisions per second that ONE real gridmetad gives many concurrent
 * clients (issue 9: at least 20,000/s on these 2 cores). The bench starts gridmetad on
 * loopback (--port 0, a temporary registry file), registers S fake servers through the
 * protocol layer (REGISTER, then a HEARTBEAT per server every second from a forked
 * beater, as gridrpcd would), then forks P clients, each on its own connection, each
 * doing SCHEDULE (a mix of dmmul of several sizes and EP, with their real bytes and
 * flops) and the REPORT of the "call" for every decision, as fast as it can for a fixed
 * time. The baseline, measured in the same run with the same P: the bare round trip
 * through the same gridmetad (PROBE of 0 bytes: its connection threads and sockets, no
 * scheduling), so "x probe" is the share of the transport's capacity left after the
 * decision and its REPORT. Prints decisions/s per S and P, and p50/p99 of one SCHEDULE
 * round trip (log-spaced histogram, 2% wide buckets).
 * Usage: meta_load_bench [--quick] [--csv FILE] [--gridmetad PATH] [--servers 10,100]
 *                        [--clients 1,2,4,8,16,32] [--seconds T] [--db FILE]
 *                        [--scheduler mct|least-load|round-robin] */
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
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "grp_auth.h"
#include "grp_meta.h"
#include "grp_proto.h"

#define MAX_LIST 16
#define NBUCKETS 1400 /* 100 ns x 1.02^1400: far beyond any round trip */
#define BUCKET_BASE_NS 100.0
#define BUCKET_STEP 1.02

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what, const gr_err *e) {
    fprintf(stderr, "meta_load_bench: %s: %s\n", what, e ? e->msg : strerror(errno));
    exit(1);
}

/* ---- one protocol connection */

typedef struct conn {
    int fd;
    uint64_t next_id;
    grw_reader *r;
    grw_writer *w;
} conn;

/* GRIDRPC_KEY_FILE's keys, for a gridmetad run with --key-file (NULL: none). */
static const grp_keyset *bench_keys(void) {
    static grp_keyset ks;
    static int loaded;
    if (!loaded) {
        const char *f = getenv("GRIDRPC_KEY_FILE");
        gr_err e;
        if (f && *f && grp_keyset_load(f, &ks, &e)) die("GRIDRPC_KEY_FILE", &e);
        loaded = 1;
    }
    return ks.n ? &ks : NULL;
}

static void conn_open(conn *c, const char *host, int port) {
    gr_err e;
    c->fd = grw_connect(host, port, 5.0, &e);
    if (c->fd < 0) die("connect to gridmetad", &e);
    c->r = malloc(sizeof *c->r);
    c->w = malloc(sizeof *c->w);
    if (!c->r || !c->w) die("out of memory", NULL);
    grw_reader_init(c->r, c->fd, GRP_DEFAULT_MAX_MESSAGE);
    grw_writer_init(c->w, c->fd);
    c->next_id = 1;
    grp_hello m;
    memset(&m, 0, sizeof m);
    snprintf(m.client, sizeof m.client, "meta_load_bench");
    m.min_version = m.max_version = GRW_VERSION;
    grp_hello_ok ok;
    int refused;
    if (grp_auth_hello(c->r, c->w, c->next_id++, &m, bench_keys(), "set GRIDRPC_KEY_FILE", &ok, &refused, &e))
        die(refused ? "HELLO refused" : "HELLO", &e);
}

static void conn_close(conn *c) {
    close(c->fd);
    free(c->r);
    free(c->w);
}

/* Reads the reply to a request: 0 when it is of type WANT (body left to read), else
 * the ERROR's code (body read) with its message in E. */
static int expect(conn *c, uint32_t want, gr_err *e) {
    grw_header h;
    if (grp_read_header(c->r, &h, e)) die("reading a reply", e);
    if (h.type == want) return 0;
    grp_error er;
    if (h.type != GRP_ERROR || grp_read_error(c->r, &er, e)) die("unexpected reply", e);
    snprintf(e->msg, sizeof e->msg, "%.900s", er.message);
    return er.code ? er.code : GRID_ERR_PROTOCOL;
}

/* ---- gridmetad */

static pid_t metad_pid;

/* Starts PATH on loopback with registry DB; returns its port. */
static int metad_start(const char *path, const char *db, const char *sched) {
    int p[2];
    if (pipe(p)) die("pipe", NULL);
    metad_pid = fork();
    if (metad_pid < 0) die("fork", NULL);
    if (metad_pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlives the bench */
        dup2(p[1], 1);
        close(p[0]);
        close(p[1]);
        execl(path, path, "--host", "127.0.0.1", "--port", "0", "--db", db, "--scheduler", sched,
              "--heartbeat", "1s", "--quiet", (char *)NULL);
        fprintf(stderr, "meta_load_bench: cannot run %s: %s (give --gridmetad PATH)\n", path,
                strerror(errno));
        _exit(127);
    }
    close(p[1]);
    char buf[512];
    size_t n = 0;
    double until = now() + 20;
    for (;;) {
        struct pollfd pf = {p[0], POLLIN, 0};
        int left = (int)((until - now()) * 1000);
        if (left <= 0 || poll(&pf, 1, left) <= 0) {
            fprintf(stderr, "meta_load_bench: %s did not print 'listening on HOST:PORT' within 20 s\n", path);
            exit(1);
        }
        ssize_t k = read(p[0], buf + n, sizeof buf - 1 - n);
        if (k <= 0) {
            fprintf(stderr, "meta_load_bench: %s exited before it listened\n", path);
            exit(1);
        }
        n += (size_t)k;
        buf[n] = 0;
        char *l = strstr(buf, "listening on ");
        char *colon = l ? strchr(l, '\n') : NULL;
        if (colon) {
            *colon = 0;
            colon = strrchr(l, ':');
            if (!colon) break;
            close(p[0]);
            return atoi(colon + 1);
        }
        if (n >= sizeof buf - 1) break;
    }
    fprintf(stderr, "meta_load_bench: unexpected output from %s: %s\n", path, buf);
    exit(1);
}

static void metad_stop(void) {
    if (metad_pid <= 0) return;
    kill(metad_pid, SIGTERM);
    int st;
    for (int i = 0; i < 100; i++) {
        if (waitpid(metad_pid, &st, WNOHANG) == metad_pid) {
            metad_pid = 0;
            return;
        }
        usleep(50000);
    }
    kill(metad_pid, SIGKILL);
    waitpid(metad_pid, &st, 0);
    metad_pid = 0;
}

/* ---- the fake servers */

typedef struct fake {
    uint64_t id;
    uint32_t cores;
} fake;

static void register_servers(conn *c, fake *v, unsigned nservers) {
    grp_function fns[8];
    for (unsigned i = 0; i < nservers; i++) {
        memset(fns, 0, sizeof fns);
        snprintf(fns[0].name, sizeof fns[0].name, "linalg/dmmul");
        snprintf(fns[1].name, sizeof fns[1].name, "nas/ep");
        for (unsigned k = 2; k < 8; k++)
            snprintf(fns[k].name, sizeof fns[k].name, "mod%u/f%u", i, k);
        for (unsigned k = 0; k < 8; k++)
            fns[k].hash = 0x9e3779b97f4a7c15ull * (k + 1);
        grp_register m;
        memset(&m, 0, sizeof m);
        snprintf(m.name, sizeof m.name, "fake %u", i);
        snprintf(m.host, sizeof m.host, "10.%u.%u.%u", i >> 16, (i >> 8) & 255, i & 255);
        m.port = 7000;
        m.cores = m.workers = 1 + (unsigned)rand() % 16;
        m.speed = 1e9 * (1 + rand() % 10);
        m.nfunctions = 8;
        m.functions = fns;
        gr_err e;
        grp_register_ok ok;
        if (grp_write_register(c->w, c->next_id++, &m, &e)) die("REGISTER", &e);
        if (expect(c, GRP_REGISTER_OK, &e) || grp_read_register_ok(c->r, &ok, &e)) die("REGISTER", &e);
        v[i].id = ok.server_id;
        v[i].cores = m.cores;
    }
}

/* One HEARTBEAT per server, with a random load, as the servers would send them. */
static void beat_all(conn *c, const fake *v, unsigned nservers) {
    for (unsigned i = 0; i < nservers; i++) {
        grp_heartbeat hb = {.server_id = v[i].id,
                            .running = (uint32_t)rand() % (v[i].cores + 1),
                            .queued = (uint32_t)rand() % 3,
                            .workers = v[i].cores,
                            .cores = v[i].cores,
                            .loadavg = rand() % 400 / 100.0};
        gr_err e;
        if (grp_write_heartbeat(c->w, c->next_id++, &hb, &e)) die("HEARTBEAT", &e);
        if (expect(c, GRP_HEARTBEAT_OK, &e) || grp_read_empty(c->r, &e)) die("HEARTBEAT", &e);
    }
}

/* A child that beats for every server once a second until killed. */
static pid_t start_beater(const char *host, int port, const fake *v, unsigned nservers) {
    pid_t pid = fork();
    if (pid < 0) die("fork", NULL);
    if (pid > 0) return pid;
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    conn c;
    conn_open(&c, host, port);
    for (;;) {
        beat_all(&c, v, nservers);
        usleep(1000000);
    }
}

/* ---- the clients */

typedef struct result {
    uint64_t count, errors;
    char first_error[200];
    uint32_t hist[NBUCKETS];
} result;

enum { MODE_DECIDE, MODE_PROBE };

static void record(result *res, double seconds) {
    double ns = seconds * 1e9;
    int b = ns <= BUCKET_BASE_NS ? 0 : (int)(log(ns / BUCKET_BASE_NS) / log(BUCKET_STEP));
    if (b >= NBUCKETS) b = NBUCKETS - 1;
    res->hist[b]++;
}

/* One realistic request: dmmul of a size from a mix, or EP (compute only). */
static void make_request(grp_schedule *q, unsigned i, const char *site) {
    static const unsigned sizes[] = {100, 200, 400, 800, 1600};
    memset(q, 0, sizeof *q);
    snprintf(q->site, sizeof q->site, "%s", site);
    if (i % 4 == 3) {
        snprintf(q->function, sizeof q->function, "nas/ep");
        q->bytes_in = 96;
        q->bytes_out = 200;
        q->flops = 2.7e9;
    } else {
        double n = sizes[i % 5];
        snprintf(q->function, sizeof q->function, "dmmul");
        q->bytes_in = (uint64_t)(2 * n * n * 8 + 160);
        q->bytes_out = (uint64_t)(n * n * 8 + 120);
        q->flops = 2 * n * n * n;
    }
}

static void client_main(int mode, int who, const char *host, int port, int ready_fd, int go_fd,
                        double seconds, result *res) {
    conn c;
    conn_open(&c, host, port);
    char site[32];
    snprintf(site, sizeof site, "site%d", who % 4);
    if (write(ready_fd, "r", 1) != 1) _exit(1);
    char b;
    if (read(go_fd, &b, 1) < 0) _exit(1); /* EOF when the parent closes it: everyone starts */
    gr_err e;
    double end = now() + seconds;
    for (unsigned i = (unsigned)who;; i++) {
        double t0 = now();
        if (t0 >= end) break;
        if (mode == MODE_PROBE) {
            uint32_t len;
            if (grp_write_probe(c.w, c.next_id++, 0, 0, &e)) die("PROBE", &e);
            if (expect(&c, GRP_PROBE_OK, &e) || grp_read_probe_ok(c.r, &len, &e)) die("PROBE", &e);
            record(res, now() - t0);
            res->count++;
            continue;
        }
        grp_schedule q;
        make_request(&q, i, site);
        grp_schedule_ok ok;
        if (grp_write_schedule(c.w, c.next_id++, &q, &e)) die("SCHEDULE", &e);
        int rc = expect(&c, GRP_SCHEDULE_OK, &e);
        if (rc) {
            if (!res->errors++) snprintf(res->first_error, sizeof res->first_error, "%.190s", e.msg);
            continue;
        }
        if (grp_read_schedule_ok(c.r, &ok, &e)) die("SCHEDULE_OK", &e);
        record(res, now() - t0);
        res->count++;
        /* The call "ran": its REPORT, with the figures a client measures. */
        grp_report p;
        memset(&p, 0, sizeof p);
        p.decision = ok.decision;
        p.server_id = ok.server_id;
        p.code = GRID_OK;
        snprintf(p.function, sizeof p.function, "%s", q.function);
        snprintf(p.site, sizeof p.site, "%s", site);
        p.bytes_in = q.bytes_in;
        p.bytes_out = q.bytes_out;
        p.flops = q.flops;
        p.run_ns = (uint64_t)(q.flops / 4e9 * 1e9) + 1000;
        p.queue_ns = 20000;
        p.total_ns =
            p.run_ns + p.queue_ns + (uint64_t)((double)(q.bytes_in + q.bytes_out) / 1e8 * 1e9) + 300000;
        if (grp_write_report(c.w, c.next_id++, &p, &e)) die("REPORT", &e);
    }
    conn_close(&c);
}

typedef struct figures {
    double per_s, p50_us, p99_us;
    double metad_cpu_us, client_cpu_us; /* CPU time per request: gridmetad's, the clients' */
    uint64_t errors;
    char first_error[200];
} figures;

static double percentile(const uint32_t *hist, uint64_t total, double q) {
    uint64_t want = (uint64_t)ceil(q * (double)total), seen = 0;
    if (want == 0) want = 1;
    for (int b = 0; b < NBUCKETS; b++) {
        seen += hist[b];
        if (seen >= want) return BUCKET_BASE_NS * pow(BUCKET_STEP, b + 0.5) / 1e3;
    }
    return NAN;
}

/* CPU seconds (user + system) gridmetad has used so far, from /proc; NAN if unknown. */
static double metad_cpu(void) {
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)metad_pid);
    FILE *f = fopen(path, "r");
    if (!f) return NAN;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')'); /* the command name may hold spaces */
    unsigned long long ut, st;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
        return NAN;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static double children_cpu(void) {
    struct rusage ru;
    getrusage(RUSAGE_CHILDREN, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
           (double)ru.ru_stime.tv_usec * 1e-6;
}

static figures run_clients(int mode, int nclients, const char *host, int port, double seconds) {
    result *res =
        mmap(NULL, (size_t)nclients * sizeof *res, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (res == MAP_FAILED) die("mmap", NULL);
    memset(res, 0, (size_t)nclients * sizeof *res);
    int ready[2], go[2];
    if (pipe(ready) || pipe(go)) die("pipe", NULL);
    pid_t pids[64];
    for (int i = 0; i < nclients; i++) {
        pids[i] = fork();
        if (pids[i] < 0) die("fork", NULL);
        if (pids[i] == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            close(ready[0]);
            close(go[1]);
            client_main(mode, i, host, port, ready[1], go[0], seconds, &res[i]);
            _exit(0);
        }
    }
    close(ready[1]);
    close(go[0]);
    for (int i = 0; i < nclients; i++) {
        char b;
        struct pollfd pf = {ready[0], POLLIN, 0};
        if (poll(&pf, 1, 20000) <= 0 || read(ready[0], &b, 1) != 1) {
            fprintf(stderr, "meta_load_bench: a client did not connect within 20 s\n");
            exit(1);
        }
    }
    double t0 = now(), m0 = metad_cpu(), c0 = children_cpu();
    close(go[1]); /* every client sees EOF at once and starts */
    int failed = 0;
    for (int i = 0; i < nclients; i++) {
        int st;
        waitpid(pids[i], &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st)) failed = 1;
    }
    double wall = now() - t0, m1 = metad_cpu(), c1 = children_cpu();
    close(ready[0]);
    if (failed) {
        fprintf(stderr, "meta_load_bench: a client failed (its message is above)\n");
        exit(1);
    }
    figures f;
    memset(&f, 0, sizeof f);
    uint64_t total = 0;
    static uint32_t hist[NBUCKETS];
    memset(hist, 0, sizeof hist);
    for (int i = 0; i < nclients; i++) {
        total += res[i].count;
        f.errors += res[i].errors;
        if (res[i].errors && !f.first_error[0])
            snprintf(f.first_error, sizeof f.first_error, "%s", res[i].first_error);
        for (int b = 0; b < NBUCKETS; b++)
            hist[b] += res[i].hist[b];
    }
    /* Each client ran SECONDS from the common start; the slowest finishing adds little. */
    f.per_s = (double)total / (wall > seconds ? seconds + (wall - seconds) / 2 : seconds);
    f.metad_cpu_us = total ? (m1 - m0) / (double)total * 1e6 : NAN;
    f.client_cpu_us = total ? (c1 - c0) / (double)total * 1e6 : NAN;
    f.p50_us = percentile(hist, total, 0.50);
    f.p99_us = percentile(hist, total, 0.99);
    munmap(res, (size_t)nclients * sizeof *res);
    return f;
}

/* ---- main */

static int parse_list(const char *s, unsigned *out, unsigned max_value) {
    int n = 0;
    while (*s && n < MAX_LIST) {
        char *end;
        unsigned long v = strtoul(s, &end, 10);
        if (end == s || v == 0 || v > max_value) return -1;
        out[n++] = (unsigned)v;
        s = *end == ',' ? end + 1 : end;
        if (*end && *end != ',') return -1;
    }
    return *s ? -1 : n;
}

static void usage(void) {
    fprintf(stderr,
            "usage: meta_load_bench [--quick] [--csv FILE] [--gridmetad PATH] [--servers 10,100]\n"
            "                       [--clients 1,2,4,8,16,32] [--seconds T] [--db FILE] [--scheduler P]\n"
            "  --gridmetad  default: ../gridmetad next to this program, else $GRIDMETAD\n"
            "  --db         default: a temporary file, removed at the end (':memory:' keeps nothing)\n");
    exit(2);
}

int main(int argc, char **argv) {
    unsigned servers[MAX_LIST] = {10, 100}, clients[MAX_LIST] = {1, 2, 4, 8, 16, 32};
    int nservers = 2, nclients = 6, quick = 0, clients_given = 0;
    double seconds = 2;
    const char *metad = getenv("GRIDMETAD"), *db = NULL, *sched = "mct";
    char metad_buf[4096];
    FILE *csv = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--quick") == 0) {
            quick = 1;
            continue;
        }
        if (!v) usage();
        i++;
        if (strcmp(a, "--csv") == 0) {
            if (!(csv = fopen(v, "w"))) {
                perror(v);
                return 2;
            }
        } else if (strcmp(a, "--gridmetad") == 0) {
            metad = v;
        } else if (strcmp(a, "--servers") == 0) {
            if ((nservers = parse_list(v, servers, 100000)) <= 0) usage();
        } else if (strcmp(a, "--clients") == 0) {
            if ((nclients = parse_list(v, clients, 64)) <= 0) usage();
            clients_given = 1;
        } else if (strcmp(a, "--seconds") == 0) {
            seconds = atof(v);
            if (!(seconds > 0 && seconds <= 600)) usage();
        } else if (strcmp(a, "--db") == 0) {
            db = v;
        } else if (strcmp(a, "--scheduler") == 0) {
            if (grp_policy_parse(v) <= 0) usage();
            sched = v;
        } else {
            usage();
        }
    }
    if (quick) {
        seconds = seconds < 0.5 ? seconds : 0.5;
        if (!clients_given) {
            static const unsigned q[] = {1, 4, 16};
            memcpy(clients, q, sizeof q);
            nclients = 3;
        }
    }
    if (!metad) {
        /* build/bench/meta_load_bench -> build/gridmetad */
        snprintf(metad_buf, sizeof metad_buf, "%s", argv[0]);
        char *slash = strrchr(metad_buf, '/');
        if (slash)
            snprintf(slash + 1, sizeof metad_buf - (size_t)(slash + 1 - metad_buf), "../gridmetad");
        else
            snprintf(metad_buf, sizeof metad_buf, "../gridmetad");
        metad = metad_buf;
    }
    if (access(metad, X_OK)) {
        fprintf(stderr, "meta_load_bench: %s: %s: build gridmetad or give --gridmetad PATH\n", metad,
                strerror(errno));
        return 2;
    }
    char tmpdir[] = "/tmp/meta_load_bench.XXXXXX", dbfile[64];
    if (!db) {
        if (!mkdtemp(tmpdir)) die("mkdtemp", NULL);
        snprintf(dbfile, sizeof dbfile, "%s/registry.db", tmpdir);
        db = dbfile;
    }
    signal(SIGPIPE, SIG_IGN);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    printf("gridmetad %s, scheduler %s, registry %s; %ld cores; %.1f s per point\n", metad, sched,
           db == dbfile ? "in a temporary file" : db, ncpu, seconds);
    printf("(cpu: CPU microseconds per request, user + system, in gridmetad / in the client processes)\n");
    printf("%7s %7s %12s %8s %8s %9s %9s %11s %9s %9s %7s %7s\n", "servers", "clients", "decisions/s",
           "p50_us", "p99_us", "cpu_metad", "cpu_cli", "probe_rt/s", "probe_p50", "cpu_metad", "x_probe",
           "errors");
    if (csv)
        fprintf(csv, "servers,clients,decisions_per_s,p50_us,p99_us,metad_cpu_us,client_cpu_us,probe_per_s,"
                     "probe_p50_us,probe_metad_cpu_us,x_probe,errors\n");
    srand(12345);
    for (int s = 0; s < nservers; s++) {
        int port = metad_start(metad, db, sched);
        conn reg;
        conn_open(&reg, "127.0.0.1", port);
        fake *v = calloc(servers[s], sizeof *v);
        if (!v) die("out of memory", NULL);
        register_servers(&reg, v, servers[s]);
        beat_all(&reg, v, servers[s]);
        conn_close(&reg);
        pid_t beater = start_beater("127.0.0.1", port, v, servers[s]);
        /* A short warm-up: connection threads, the registry writer, the learned links. */
        run_clients(MODE_DECIDE, 2, "127.0.0.1", port, quick ? 0.1 : 0.3);
        for (int k = 0; k < nclients; k++) {
            figures d = run_clients(MODE_DECIDE, (int)clients[k], "127.0.0.1", port, seconds);
            figures p = run_clients(MODE_PROBE, (int)clients[k], "127.0.0.1", port, seconds);
            printf("%7u %7u %12.0f %8.1f %8.1f %9.1f %9.1f %11.0f %9.1f %9.1f %7.2f %7llu\n", servers[s],
                   clients[k], d.per_s, d.p50_us, d.p99_us, d.metad_cpu_us, d.client_cpu_us, p.per_s,
                   p.p50_us, p.metad_cpu_us, d.per_s / p.per_s, (unsigned long long)d.errors);
            fflush(stdout);
            if (d.errors) fprintf(stderr, "meta_load_bench: SCHEDULE failed: %s\n", d.first_error);
            if (csv)
                fprintf(csv, "%u,%u,%.1f,%.2f,%.2f,%.2f,%.2f,%.1f,%.2f,%.2f,%.4f,%llu\n", servers[s],
                        clients[k], d.per_s, d.p50_us, d.p99_us, d.metad_cpu_us, d.client_cpu_us, p.per_s,
                        p.p50_us, p.metad_cpu_us, d.per_s / p.per_s, (unsigned long long)d.errors);
        }
        kill(beater, SIGKILL);
        waitpid(beater, NULL, 0);
        metad_stop();
        free(v);
        if (db == dbfile) {
            char f[96];
            const char *suffix[] = {"", "-wal", "-shm"};
            for (int i = 0; i < 3; i++) {
                snprintf(f, sizeof f, "%s%s", dbfile, suffix[i]);
                unlink(f);
            }
        }
    }
    if (db == dbfile) rmdir(tmpdir);
    if (csv) fclose(csv);
    return 0;
}
