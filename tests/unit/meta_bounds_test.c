/* meta_bounds_test.c: what a peer's messages may make gridmetad hold, and for how long,
 * with a real gridmetad on loopback driven by raw protocol (docs/metaserver.md,
 * "Bounds"): a client's flops are capped by what was measured for the function
 * ("caps"); SCHEDULEs that declare huge flops and are never REPORTed stop counting
 * against their server after --pending-max ("pending"); a server down for
 * --forget-after leaves memory, the registry and the status page, while one that
 * beats stays ("forget"); a SCHEDULE does not wait for a large status document to be
 * built ("status"); a HELLO refused for a field past its limit ends its connection
 * ("hello"). META_BOUNDS_ONLY=NAME runs one case. Every wait is bounded. TAP. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "grp_auth.h"
#include "grp_meta.h"
#include "grp_proto.h"
#include "raw_peer.h"
#include "tap.h"

static char dir[] = "/tmp/meta-bounds-test.XXXXXX";
static grw_reader rd;
static grw_writer wr;
static uint64_t next_id = 1;

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static double since(long long t0) {
    return (double)(gr_now_ns() - t0) / 1e9;
}

/* ---------------------------------------------------------------- the daemon */

static pid_t pid;
static int port, http;

/* Starts gridmetad with its registry in DIR/NAME.db, the status page, and EXTRA. */
static int start(const char *name, const char *const *extra) {
    const char *top = getenv("top_builddir");
    char exe[512], db[300], log[300];
    snprintf(exe, sizeof exe, "%s/gridmetad", top ? top : ".");
    snprintf(db, sizeof db, "%s/%s.db", dir, name);
    snprintf(log, sizeof log, "%s/%s.log", dir, name);
    const char *argv[40] = {exe, "--port", "0", "--http", "0", "--db", db, "--log-level", "info"};
    int argc = 9;
    for (int i = 0; extra[i] && argc < 39; i++)
        argv[argc++] = extra[i];
    argv[argc] = NULL;
    int out[2];
    if (pipe(out) < 0) return -1;
    fflush(stdout);
    pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        FILE *lf = fopen(log, "w");
        if (lf) dup2(fileno(lf), 2);
        dup2(out[1], 1);
        close(out[0]);
        close(out[1]);
        execv(exe, (char *const *)argv);
        _exit(127);
    }
    close(out[1]);
    char buf[1024];
    size_t len = 0;
    port = http = 0;
    long long until = gr_now_ns() + 20000000000LL;
    while ((!port || !http) && gr_now_ns() < until && len < sizeof buf - 1) {
        struct pollfd p = {out[0], POLLIN, 0};
        if (poll(&p, 1, 200) <= 0) continue;
        ssize_t k = read(out[0], buf + len, sizeof buf - 1 - len);
        if (k <= 0) break;
        len += (size_t)k;
        buf[len] = '\0';
        char *l = strstr(buf, "listening on 127.0.0.1:");
        if (l) port = atoi(l + strlen("listening on 127.0.0.1:"));
        char *h = strstr(buf, "http on 127.0.0.1:");
        if (h && strchr(h, '\n')) http = atoi(h + strlen("http on 127.0.0.1:"));
    }
    close(out[0]);
    if (port && http) return 0;
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    diag("gridmetad did not start (%s): see %s", name, log);
    return -1;
}

static int stop(void) {
    kill(pid, SIGTERM);
    int status = -1;
    for (int i = 0; i < 200; i++) {
        if (waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        sleep_ms(50);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
}

/* ---------------------------------------------------------------- protocol */

static void prep(int fd) {
    grw_writer_init(&wr, fd);
    wr.deadline_ns = gr_now_ns() + 10000000000LL;
}

static int reply(int fd, uint32_t expected, double timeout, gr_err *e) {
    grw_header h;
    grw_reader_init(&rd, fd, 1u << 26);
    rd.deadline_ns = gr_now_ns() + (long long)(timeout * 1e9);
    int rc = grp_read_header(&rd, &h, e);
    if (rc) return rc;
    int in_step;
    return grp_expect(&rd, &h, expected, grp_type_name(expected), &in_step, e);
}

static int session(void) {
    gr_err e;
    int fd = grw_connect("127.0.0.1", port, 5, &e);
    if (fd < 0) return -1;
    grp_hello m;
    memset(&m, 0, sizeof m);
    snprintf(m.client, sizeof m.client, "meta_bounds_test");
    m.min_version = m.max_version = GRW_VERSION;
    prep(fd);
    grw_reader_init(&rd, fd, 1u << 24);
    rd.deadline_ns = gr_now_ns() + 10000000000LL;
    grp_hello_ok ok;
    if (grp_auth_hello(&rd, &wr, next_id++, &m, NULL, "", &ok, NULL, &e)) {
        close(fd);
        return -1;
    }
    return fd;
}

/* REGISTERs a server at 127.0.0.1:SPORT with CORES cores (as many workers) and the
 * NFNS functions FNS; its id, 0 on failure. */
static uint64_t register_server(int fd, uint32_t sport, uint32_t cores, grp_function *fns, uint32_t nfns) {
    grp_register m;
    memset(&m, 0, sizeof m);
    snprintf(m.name, sizeof m.name, "bounds %u", sport);
    snprintf(m.host, sizeof m.host, "127.0.0.1");
    m.port = sport;
    m.cores = m.workers = cores;
    m.speed = 1e9;
    m.nfunctions = nfns;
    m.functions = fns;
    gr_err e;
    prep(fd);
    if (grp_write_register(&wr, next_id++, &m, &e) || reply(fd, GRP_REGISTER_OK, 10, &e)) return 0;
    grp_register_ok ok;
    return grp_read_register_ok(&rd, &ok, &e) ? 0 : ok.server_id;
}

static uint64_t register_one(int fd, uint32_t sport, const char *fn) {
    grp_function f;
    memset(&f, 0, sizeof f);
    snprintf(f.name, sizeof f.name, "%s", fn);
    return register_server(fd, sport, 1, &f, 1);
}

static int beat(int fd, uint64_t id) {
    grp_heartbeat m = {id, 0, 0, 1, 1, 0.1, 0, 0};
    gr_err e;
    prep(fd);
    if (grp_write_heartbeat(&wr, next_id++, &m, &e)) return -1;
    return reply(fd, GRP_HEARTBEAT_OK, 10, &e) || grp_read_empty(&rd, &e) ? -1 : 0;
}

/* Writes a SCHEDULE of FN declaring FLOPS (mct). */
static int send_schedule(int fd, const char *fn, double flops) {
    grp_schedule m;
    memset(&m, 0, sizeof m);
    snprintf(m.function, sizeof m.function, "%s", fn);
    snprintf(m.site, sizeof m.site, "testsite");
    m.policy = GRP_POLICY_MCT;
    m.bytes_in = m.bytes_out = 1000;
    m.flops = flops;
    gr_err e;
    prep(fd);
    return grp_write_schedule(&wr, next_id++, &m, &e) ? -1 : 0;
}

/* A SCHEDULE and its answer (within TIMEOUT); the error code otherwise. */
static int schedule(int fd, const char *fn, double flops, double timeout, grp_schedule_ok *ok) {
    gr_err e;
    if (send_schedule(fd, fn, flops)) return -1;
    int rc = reply(fd, GRP_SCHEDULE_OK, timeout, &e);
    if (!rc) rc = grp_read_schedule_ok(&rd, ok, &e);
    return rc;
}

/* The number of servers SERVERS lists with id ID (0 or 1), -1 on failure. */
static int listed(int fd, uint64_t id) {
    gr_err e;
    prep(fd);
    if (grp_write_servers(&wr, next_id++, "testsite", &e) || reply(fd, GRP_SERVERS_OK, 10, &e)) return -1;
    grp_server_info *v = NULL;
    uint32_t n = 0;
    if (grp_read_servers_ok(&rd, &v, &n, &e)) return -1;
    int found = 0;
    for (uint32_t i = 0; i < n; i++)
        found += v[i].id == id;
    grp_servers_free(v, n);
    return found;
}

/* GET PATH from the status page: the whole answer (malloc'd), NULL on failure. */
static char *http_get(const char *path) {
    gr_err e;
    int fd = grw_connect("127.0.0.1", http, 5, &e);
    if (fd < 0) return NULL;
    char req[256];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: 127.0.0.1:%d\r\n\r\n", path, http);
    if (write(fd, req, (size_t)n) != n) {
        close(fd);
        return NULL;
    }
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    for (; buf;) {
        if (len + 65536 > cap) {
            char *p = realloc(buf, cap *= 2);
            if (!p) break;
            buf = p;
        }
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 20000) <= 0) break;
        ssize_t k = read(fd, buf + len, cap - len - 1);
        if (k <= 0) break;
        len += (size_t)k;
    }
    if (buf) buf[len] = '\0';
    close(fd);
    return buf;
}

/* ---------------------------------------------------------------- caps */

/* One REPORT measures caps/f at 1e6 flops in 10 ms (1e8 flops/s); a SCHEDULE then
 * declaring 1e18 flops is predicted as at most 16 times the measured call, not 10^10 s. */
static void caps(void) {
    const char *args[] = {"--heartbeat", "1s", "--down-after", "100", NULL};
    if (start("caps", args) != 0) {
        result(0, "caps: gridmetad starts");
        return;
    }
    int fd = session();
    uint64_t id = fd >= 0 ? register_one(fd, 7301, "caps/f") : 0;
    gr_err e;
    grp_report r;
    memset(&r, 0, sizeof r);
    r.server_id = id;
    r.code = GRID_OK;
    snprintf(r.function, sizeof r.function, "caps/f");
    snprintf(r.site, sizeof r.site, "testsite");
    r.bytes_in = r.bytes_out = 1000;
    r.run_ns = 10000000;
    r.total_ns = 11000000;
    r.flops = 1e6;
    prep(fd);
    int ok = id && grp_write_report(&wr, next_id++, &r, &e) == 0;
    grp_schedule_ok s;
    memset(&s, 0, sizeof s);
    /* The REPORT has no answer: a SCHEDULE on the same connection comes after it. */
    int rc = ok ? schedule(fd, "caps/f", 1e18, 10, &s) : -1;
    diag("caps: estimate %.6g s for 1e18 flops declared", s.estimate);
    result(rc == GRID_OK && s.estimate > 0 && s.estimate < 10,
           "caps: after a call measured at 1e6 flops in 10 ms, a SCHEDULE declaring 1e18 flops is estimated "
           "at under 10 s (got %.3g s)",
           s.estimate);
    if (fd >= 0) close(fd);
    result(stop() == 0, "caps: exits 0 on SIGTERM");
}

/* ---------------------------------------------------------------- pending */

/* A one-core server is full with 2 calls. Two SCHEDULEs of 1e18 flops that are never
 * REPORTed fill it; under --pending-max 2s a third, held while it is full (--max-hold
 * 30s), is answered once they expire: within 15 s rather than after the whole hold. */
static void pending(void) {
    const char *args[] = {"--heartbeat", "1s",         "--down-after", "100", "--pending-max",
                          "2s",          "--max-hold", "30s",          NULL};
    if (start("pending", args) != 0) {
        result(0, "pending: gridmetad starts with --pending-max 2s");
        return;
    }
    int fd = session();
    uint64_t id = fd >= 0 ? register_one(fd, 7302, "pend/f") : 0;
    grp_schedule_ok s1, s2, s3;
    int ok = id && schedule(fd, "pend/f", 1e18, 10, &s1) == GRID_OK &&
             schedule(fd, "pend/f", 1e18, 10, &s2) == GRID_OK;
    result(ok, "pending: two SCHEDULEs declaring 1e18 flops fill a one-core server");
    long long t0 = gr_now_ns();
    int rc = ok ? schedule(fd, "pend/f", 1e18, 40, &s3) : -1;
    double took = since(t0);
    diag("pending: the third SCHEDULE was answered after %.2f s", took);
    result(rc == GRID_OK && took < 15,
           "pending: a third is answered once the unreported work expires (%.2f s; --max-hold is 30 s)",
           took);
    if (fd >= 0) close(fd);
    result(stop() == 0, "pending: exits 0 on SIGTERM");
}

/* ---------------------------------------------------------------- forget */

static int db_rows(const char *name, uint64_t id) {
    char cmd[600];
    snprintf(
        cmd, sizeof cmd,
        "sqlite3 '%s/%s.db' \"SELECT (SELECT count(*) FROM servers WHERE id=%llu) + (SELECT count(*) FROM "
        "functions WHERE server_id=%llu)\" 2>/dev/null",
        dir, name, (unsigned long long)id, (unsigned long long)id);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    int n = -1;
    if (fscanf(p, "%d", &n) != 1) n = -1;
    pclose(p);
    return n;
}

/* --forget-after 2s: a server that stops beating goes down, then is deleted from the
 * SERVERS list, the status page and the registry; one that beats all along stays. */
static void forget(void) {
    const char *args[] = {"--heartbeat", "100ms", "--down-after", "3", "--forget-after", "2s", NULL};
    if (start("forget", args) != 0) {
        result(0, "forget: gridmetad starts with --forget-after 2s");
        return;
    }
    int fa = session(), fb = session();
    uint64_t gone = fa >= 0 ? register_one(fa, 7303, "forget/gone") : 0;
    uint64_t kept = fb >= 0 ? register_one(fb, 7304, "forget/kept") : 0;
    int ok = gone && kept;
    /* The registry has it (the writer commits within moments). */
    int rows = -1;
    for (int i = 0; ok && i < 50 && rows < 2; i++) {
        sleep_ms(100);
        beat(fb, kept);
        rows = db_rows("forget", gone);
    }
    result(rows == 2, "forget: the registry holds the server and its function (%d rows)", rows);
    long long t0 = gr_now_ns();
    int in_list = 1;
    while (ok && in_list != 0 && since(t0) < 15) {
        sleep_ms(100);
        if (beat(fb, kept)) break;
        in_list = listed(fb, gone);
    }
    diag("forget: gone from SERVERS after %.2f s", since(t0));
    result(ok && in_list == 0, "forget: the server that stopped beating leaves SERVERS (within 15 s)");
    result(ok && listed(fb, kept) == 1, "forget: the one that beats is still listed");
    char *page = http_get("/api/status");
    result(page && strstr(page, "\"port\":7304") && !strstr(page, "\"port\":7303"),
           "forget: /api/status shows the one that beats, not the forgotten one");
    free(page);
    rows = -1;
    for (int i = 0; ok && i < 50 && rows != 0; i++) {
        sleep_ms(100);
        beat(fb, kept);
        rows = db_rows("forget", gone);
    }
    result(rows == 0, "forget: its rows are deleted from the registry (%d left)", rows);
    result(db_rows("forget", kept) == 2, "forget: the other server's rows stay");
    if (fa >= 0) close(fa);
    if (fb >= 0) close(fb);
    result(stop() == 0, "forget: exits 0 on SIGTERM");
}

/* ---------------------------------------------------------------- status */

static atomic_int fetching; /* the fetcher thread runs while set */
static double fetch_max;

static void *fetcher(void *arg) {
    (void)arg;
    while (atomic_load(&fetching)) {
        long long t0 = gr_now_ns();
        free(http_get("/api/status"));
        double t = since(t0);
        if (t > fetch_max) fetch_max = t;
    }
    return NULL;
}

/* 8 servers of 4,000 functions with long names make a status document of about 17
 * MB (3 of 1,500 under sanitizers, whose allocations make registering slow). While it is fetched over and
 * over, SCHEDULEs of another function do not wait while it is built: of 40, at most 6 (a loaded machine's
 * hiccups) take a quarter of the slowest fetch. Built under the state's lock, a third of them or more did. */
static void status(void) {
    /* No registry: its writes of 32,000 functions are not what is measured here. */
    const char *args[] = {"--heartbeat", "1s", "--down-after", "100", "--db", ":memory:", NULL};
    if (start("status", args) != 0) {
        result(0, "status: gridmetad starts");
        return;
    }
    const int NFNS = SANITIZED ? 1500 : 4000, NSRV = SANITIZED ? 3 : 8;
    grp_function *f = calloc(NFNS, sizeof *f);
    int fd = session();
    int ok = f && fd >= 0;
    for (uint32_t s = 0; ok && s < (uint32_t)NSRV; s++) {
        for (int i = 0; i < NFNS; i++)
            snprintf(f[i].name, sizeof f[i].name,
                     "module%u/f%04d_a_function_with_a_long_name_for_the_status_document_%0400d", s, i, i);
        ok = register_server(fd, 7400 + s, 4, f, NFNS) != 0;
    }
    grp_function one;
    memset(&one, 0, sizeof one);
    snprintf(one.name, sizeof one.name, "quick/f");
    ok = ok && register_server(fd, 7500, 64, &one, 1) != 0;
    free(f);
    char *page = ok ? http_get("/api/status") : NULL;
    size_t size = page ? strlen(page) : 0;
    free(page);
    diag("status: the document is %.1f MB", (double)size / 1e6);
    pthread_t t;
    atomic_store(&fetching, 1);
    fetch_max = 0;
    int started = ok && pthread_create(&t, NULL, fetcher, NULL) == 0;
    double took_v[40];
    int answered = 0, n = 0;
    long long t0 = gr_now_ns();
    for (int i = 0; started && i < 40 && since(t0) < 20; i++) {
        grp_schedule_ok s;
        long long t1 = gr_now_ns();
        if (schedule(fd, "quick/f", 1e6, 30, &s) == GRID_OK) answered++;
        took_v[n++] = since(t1);
        sleep_ms(20);
        /* Each SCHEDULE is counted as pending: reported at once, the server stays free. */
        grp_report r;
        memset(&r, 0, sizeof r);
        r.decision = s.decision;
        r.server_id = s.server_id;
        r.code = GRID_ERR_CANCELED;
        gr_err e;
        prep(fd);
        grp_write_report(&wr, next_id++, &r, &e);
    }
    atomic_store(&fetching, 0);
    if (started) pthread_join(t, NULL);
    int slow = 0;
    double worst = 0;
    for (int i = 0; i < n; i++) {
        slow += took_v[i] >= fetch_max / 4;
        if (took_v[i] > worst) worst = took_v[i];
    }
    diag("status: slowest SCHEDULE %.3f s, slowest status fetch %.3f s", worst, fetch_max);
    result(answered >= 10 && fetch_max > 0 && slow <= 6,
           "status: while the status document is built again and again, %d of %d SCHEDULEs take a quarter of "
           "the slowest fetch (%.3f s) or more (at most 6 allowed)",
           slow, n, fetch_max);
    if (fd >= 0) close(fd);
    result(stop() == 0, "status: exits 0 on SIGTERM");
}

/* HELLO with a client name one past its limit: ERROR GRID_ERR_LIMIT, and gridmetad
 * closes the connection (only a new HELLO could follow). */
static void hello(void) {
    const char *none[] = {NULL};
    if (start("hello", none)) {
        result(0, "hello: gridmetad starts");
        return;
    }
    static char name[257];
    memset(name, 'n', 256);
    int fd = raw_connect(port), code = -1;
    char msg[512] = "";
    uint32_t t = fd >= 0 && raw_send_hello(&wr, fd, name) == 0
                     ? raw_read_reply(&rd, fd, 0, &code, msg, sizeof msg, NULL, 5)
                     : 0;
    result(t == GRP_ERROR && code == GRID_ERR_LIMIT && raw_closed_within(fd, 5),
           "hello: a client name of 256 bytes is ERROR GRID_ERR_LIMIT, and the connection is closed (type %u "
           "code %d: %s)",
           t, code, msg);
    if (fd >= 0) close(fd);
    result(stop() == 0, "hello: exits 0 on SIGTERM");
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    const char *top = getenv("top_builddir");
    char exe[512];
    snprintf(exe, sizeof exe, "%s/gridmetad", top ? top : ".");
    if (access(exe, X_OK) != 0 || system("sqlite3 -version >/dev/null 2>&1") != 0) {
        printf("# SKIP: gridmetad is not built, or the sqlite3 shell is missing\n");
        return 77;
    }
    if (!mkdtemp(dir)) {
        printf("# cannot make a temporary folder: %s\n", strerror(errno));
        return 1;
    }
    const char *only = getenv("META_BOUNDS_ONLY");
    if (!only || !strcmp(only, "caps")) caps();
    if (!only || !strcmp(only, "pending")) pending();
    if (!only || !strcmp(only, "forget")) forget();
    if (!only || !strcmp(only, "status")) status();
    if (!only || !strcmp(only, "hello")) hello();
    if (!failed) {
        char rm[128];
        snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
        if (system(rm) != 0) diag("could not remove %s", dir);
    } else {
        diag("the daemons' logs are in %s", dir);
    }
    printf("1..%d\n", tests);
    return failed ? 1 : 0;
}
