/* server_meta_test.c: gridrpcd with --metaserver against a fake metaserver
 * (fake_meta.c), and its PROBE answer. Checks that REGISTER carries every function the
 * server LISTs with its descriptor hash and the no-retry flag, the advertised address,
 * the name, the speed and the token; that heartbeats come at the interval asked for and
 * carry the load (a running call shows, calls_done counts it); that a metaserver which
 * forgets the server, closes the connection, or stops and comes back on its port gets
 * the server back without a restart, with one log line per outage; that SIGTERM with
 * the metaserver down still exits at once; and a PROBE round trip and its limit.
 * Prints TAP. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fake_meta.h"
#include "gridrpc.h"
#include "grp_auth.h"
#include "grp_meta.h"
#include "grp_proto.h"
#include "raw_peer.h"
#include "tap.h"

#define MAX_SERVERS 4

static pid_t pids[MAX_SERVERS];
static char logpath[64];

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static double now_s(void) {
    return (double)gr_now_ns() / 1e9;
}

/* ---------------------------------------------------------------- servers */

static void kill_all(void) {
    for (int i = 0; i < MAX_SERVERS; i++)
        if (pids[i] > 0) {
            kill(pids[i], SIGKILL);
            waitpid(pids[i], NULL, 0);
            pids[i] = 0;
        }
    if (logpath[0] && !getenv("KEEPLOG")) unlink(logpath);
}

static void on_signal(int sig) {
    for (int i = 0; i < MAX_SERVERS; i++)
        if (pids[i] > 0) kill(pids[i], SIGKILL);
    signal(sig, SIG_DFL);
    raise(sig);
}

/* What a server's process sets up before gridrpcd runs: GRIDRPC_TOKEN (unset when
 * NULL) and its stderr (appended to LOG, when not NULL). */
typedef struct child_setup {
    const char *env_token, *log;
} child_setup;

static void setup_child(void *arg) {
    const child_setup *c = arg;
    if (c->env_token)
        setenv("GRIDRPC_TOKEN", c->env_token, 1);
    else
        unsetenv("GRIDRPC_TOKEN");
    if (c->log) {
        FILE *f = freopen(c->log, "a", stderr);
        (void)f;
    }
}

/* Starts gridrpcd number SLOT with the test module, EXTRA options (NULL-ended) and
 * GRIDRPC_TOKEN=ENV_TOKEN (unset when NULL); its stderr goes to LOG when not NULL.
 * Returns the listening port, or -1. */
static int start_server(int slot, const char *const *extra, const char *env_token, const char *log) {
    const char *prog = getenv("GRIDRPCD"), *mods = getenv("GRIDRPC_TEST_MODULES");
    if (!prog || !mods) {
        diag("GRIDRPCD and GRIDRPC_TEST_MODULES must be set (make check)");
        return -1;
    }
    static char module[4096];
    snprintf(module, sizeof module, "%s/test.so", mods);
    const char *argv[40] = {prog, "--port", "0", "--module", module, "--threads", "2"};
    int argc = 7;
    for (int i = 0; extra && extra[i] && argc < 39; i++)
        argv[argc++] = extra[i];
    argv[argc] = NULL;
    child_setup c = {env_token, log};
    return raw_spawn(argv, setup_child, &c, 20, &pids[slot]);
}

/* SIGTERM, then the seconds until it exited (-1: not within LIMIT s; killed). */
static double stop_server(int slot, double limit, int *status) {
    double took = raw_stop(pids[slot], limit, status);
    pids[slot] = 0;
    return took;
}

/* Waits up to SECONDS for COND (an expression) to hold. */
#define WAIT_FOR(cond, seconds)                                                                              \
    do {                                                                                                     \
        double until_ = now_s() + (seconds);                                                                 \
        while (!(cond) && now_s() < until_)                                                                  \
            sleep_ms(10);                                                                                    \
    } while (0)

/* ---------------------------------------------------------------- a raw client */

static grw_reader rd;
static grw_writer wr;

/* Reads a reply header and checks its type (ERROR: its code, E its message). */
static int reply(uint32_t expected, const char *what, gr_err *e) {
    grw_header h;
    int in_step;
    rd.deadline_ns = gr_now_ns() + 5000000000LL;
    int rc = grp_read_header(&rd, &h, e);
    return rc ? rc : grp_expect(&rd, &h, expected, what, &in_step, e);
}

/* Connects and says HELLO with TOKEN; the socket, or -1. */
static int raw_open(int port, const char *token) {
    gr_err e;
    int fd = grw_connect("127.0.0.1", port, 5, &e);
    if (fd < 0) {
        diag("connect: %s", e.msg);
        return -1;
    }
    grw_reader_init(&rd, fd, 1 << 26);
    grw_writer_init(&wr, fd);
    grp_hello h;
    memset(&h, 0, sizeof h);
    snprintf(h.client, sizeof h.client, "server_meta_test");
    h.min_version = h.max_version = GRW_VERSION;
    snprintf(h.token, sizeof h.token, "%s", token ? token : "");
    grp_hello_ok ok;
    rd.deadline_ns = wr.deadline_ns = gr_now_ns() + 5000000000LL;
    if (grp_auth_hello(&rd, &wr, 1, &h, NULL, "", &ok, NULL, &e)) {
        diag("hello: %s", e.msg);
        close(fd);
        return -1;
    }
    return fd;
}

/* ---------------------------------------------------------------- checks */

/* REGISTER's functions against what the server answers to LIST and GET_DESCRIPTOR. */
static void check_functions(fake_meta *fm, int port, const char *token) {
    grp_register reg;
    if (fake_meta_last_register(fm, &reg)) {
        result(0, "REGISTER functions: no REGISTER");
        return;
    }
    int fd = raw_open(port, token);
    gr_err e;
    char **names = NULL;
    uint32_t count = 0;
    if (fd < 0 || grp_write_empty(&wr, GRP_LIST, 2, &e) || reply(GRP_LIST_OK, "LIST", &e) ||
        grp_read_list_ok(&rd, &names, &count, &e)) {
        result(0, "LIST");
        if (fd >= 0) close(fd);
        grp_register_free(&reg);
        return;
    }
    result(count > 0 && reg.nfunctions == count, "REGISTER has as many functions as LIST (%u, %u)",
           reg.nfunctions, count);
    int matched = 0, no_retry = 0, sleep_count_flag = -1, sleep_flag = -1;
    for (uint32_t i = 0; i < count; i++) {
        char q[GRP_MAX_FUNCTION_NAME + 1];
        grd_desc *d = NULL;
        if (grp_write_get_descriptor(&wr, 3, names[i], &e) || reply(GRP_DESCRIPTOR, "GET_DESCRIPTOR", &e) ||
            grp_read_descriptor(&rd, q, &d, &e)) {
            diag("GET_DESCRIPTOR %s: %s", names[i], e.msg);
            continue;
        }
        for (uint32_t j = 0; j < reg.nfunctions; j++) {
            const grp_function *f = &reg.functions[j];
            if (strcmp(f->name, names[i]) != 0) continue;
            uint32_t want = (d->flags & GRD_FF_NO_RETRY) ? GRP_FN_NO_RETRY : 0;
            if (f->hash == d->hash && f->flags == want)
                matched++;
            else
                diag("%s: REGISTER has hash %016llx flags %u, the descriptor %016llx flags %u", f->name,
                     (unsigned long long)f->hash, f->flags, (unsigned long long)d->hash, want);
            if (f->flags & GRP_FN_NO_RETRY) no_retry++;
            if (strcmp(f->name, "test/sleep_count") == 0) sleep_count_flag = (int)f->flags;
            if (strcmp(f->name, "test/sleep") == 0) sleep_flag = (int)f->flags;
        }
        grd_free(d);
    }
    result(matched == (int)count,
           "every function LISTed is registered with its descriptor's hash and flags (%d/%u)", matched,
           count);
    result(sleep_count_flag == (int)GRP_FN_NO_RETRY && sleep_flag == 0 && no_retry == 1,
           "test/sleep_count (Retry \"no\") is registered no-retry, test/sleep is not (%d, %d; %d no-retry)",
           sleep_count_flag, sleep_flag, no_retry);
    grp_free_names(names, count);
    grp_register_free(&reg);
    close(fd);
}

/* Beats that arrived between T0 and T1 (gr_now_ns); *UNKNOWN: those with a stale id. */
static int beats_between(fake_meta *fm, long long t0, long long t1, int *unknown) {
    int n = 0;
    fake_meta_beat b;
    if (unknown) *unknown = 0;
    for (int i = 0; fake_meta_beat_at(fm, i, &b) == 0; i++)
        if (b.t_ns >= t0 && b.t_ns < t1) {
            n++;
            if (unknown && !b.known) ++*unknown;
        }
    return n;
}

/* The first beat from index FROM on with running == RUNNING, within SECONDS; its index
 * or -1. */
static int wait_beat_running(fake_meta *fm, int from, unsigned running, double seconds, fake_meta_beat *out) {
    double until = now_s() + seconds;
    for (int i = from;;) {
        if (fake_meta_beat_at(fm, i, out) == 0) {
            if (out->hb.running == running) return i;
            i++;
            continue;
        }
        if (now_s() > until) return -1;
        sleep_ms(10);
    }
}

static void check_load(fake_meta *fm, int port) {
    char url[128];
    snprintf(url, sizeof url, "gridrpc://127.0.0.1:%d/test/sleep", port);
    fake_meta_beat b;
    int from = fake_meta_beats(fm);
    if (wait_beat_running(fm, from, 0, 2, &b) < 0) {
        result(0, "an idle beat before the call");
        return;
    }
    uint64_t done_before = b.hb.calls_done;
    result(b.hb.queued == 0 && b.hb.workers == 2 && b.hb.cores > 0,
           "an idle server beats running 0, queued 0, workers 2, cores %u", b.hb.cores);
    from = fake_meta_beats(fm);
    int id = grid_call_async(url, 0.8);
    int i = wait_beat_running(fm, from, 1, 0.7, &b);
    result(id > 0 && i >= 0, "a beat shows running 1 while test/sleep runs");
    int rc = id > 0 ? grid_wait(id) : -1;
    if (rc != GRID_OK) diag("the call failed: %s", grid_last_error());
    /* It learned that test/sleep(0.8) runs 0.8 s: the next one's beats predict what is
     * left of it (the first, unknown, was guessed at half its elapsed time). */
    from = fake_meta_beats(fm);
    id = grid_call_async(url, 0.8);
    /* A beat in the moment after the first call answered and before its worker counted
     * it done shows running 1 with nothing left: not this call's beat. */
    i = wait_beat_running(fm, from, 1, 0.7, &b);
    while (i >= 0 && b.hb.work_s <= 0)
        i = wait_beat_running(fm, i + 1, 1, 0.7, &b);
    double first_left = b.hb.work_s;
    int j = i >= 0 ? wait_beat_running(fm, i + 1, 1, 0.7, &b) : -1;
    double later_left = b.hb.work_s;
    int rc2 = id > 0 ? grid_wait(id) : -1;
    if (rc2 != GRID_OK || i < 0 || j < 0) diag("call %d: %s; beats %d, %d", id, grid_last_error(), i, j);
    result(rc2 == GRID_OK && i >= 0 && j >= 0 && first_left > 0.4 && first_left <= 0.8 &&
               later_left < first_left,
           "a beat predicts the seconds left of a running call of a known function (%.3f s, then %.3f s)",
           first_left, later_left);
    grid_reset_np(); /* joins the async reader before this server is stopped */
    from = fake_meta_beats(fm);
    i = wait_beat_running(fm, from, 0, 1, &b);
    result(rc == GRID_OK && i >= 0 && b.hb.calls_done == done_before + 2,
           "after the calls a beat shows running 0 and calls_done two more (%llu -> %llu)",
           (unsigned long long)done_before, (unsigned long long)b.hb.calls_done);
}

static void check_probe(int port, const char *token) {
    int fd = raw_open(port, token);
    gr_err e;
    uint32_t len = 0;
    int rc = fd < 0 || grp_write_probe(&wr, 5, 100000, 300001, &e) || reply(GRP_PROBE_OK, "PROBE", &e) ||
             grp_read_probe_ok(&rd, &len, &e);
    if (rc && fd >= 0) diag("probe: %s", e.msg);
    result(!rc && len == 300001, "PROBE of 100000 bytes asking 300001 back: PROBE_OK with %u bytes", len);
    /* A reply one byte over the protocol's bound, written by hand (the encoder refuses). */
    rc = fd < 0 || grw_begin(&wr, GRP_PROBE, 0, 6, &e) || grw_write_u32(&wr, GRP_MAX_PROBE + 1, &e) ||
         grw_write_u32(&wr, 0, &e) || grw_finish(&wr, &e);
    int code = rc ? -1 : reply(GRP_PROBE_OK, "PROBE", &e);
    result(code == GRID_ERR_LIMIT, "PROBE asking for %u bytes back: ERROR GRID_ERR_LIMIT (%d: %s)",
           GRP_MAX_PROBE + 1, code, code > 0 ? e.msg : "");
    len = 0;
    rc = fd < 0 || grp_write_probe(&wr, 7, 0, 8, &e) || reply(GRP_PROBE_OK, "PROBE", &e) ||
         grp_read_probe_ok(&rd, &len, &e);
    result(!rc && len == 8, "the connection still serves PROBE after the refusal");
    if (fd >= 0) close(fd);
}

static int count_lines(const char *path, const char *needle) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[2048];
    int n = 0;
    while (fgets(line, sizeof line, f))
        if (strstr(line, needle)) n++;
    fclose(f);
    return n;
}

/* ---------------------------------------------------------------- main */

int main(void) {
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    atexit(kill_all);
    snprintf(logpath, sizeof logpath, "/tmp/server-meta-test.%d.log", (int)getpid());

    fake_meta *fm = fake_meta_start(0, 100);
    if (!fm) {
        printf("1..0 # SKIP cannot start the fake metaserver\n");
        return 0;
    }
    int mport = fake_meta_port(fm);
    char maddr[32];
    snprintf(maddr, sizeof maddr, "127.0.0.1:%d", mport);

    /* ---- server A: every option given */
    const char *a_opts[] = {
        "--host", "127.0.0.1", "--metaserver", maddr,    "--advertise", "compute.example:4242",
        "--name", "node A",    "--token",      "secret", NULL};
    int port = start_server(0, a_opts, NULL, logpath);
    if (port < 0) {
        result(0, "gridrpcd starts with --metaserver");
        fake_meta_stop(fm);
        printf("1..%d\n", tests);
        return 1;
    }
    WAIT_FOR(fake_meta_registrations(fm) >= 1, 5);
    grp_register reg;
    int got = fake_meta_last_register(fm, &reg) == 0;
    result(got, "the server registers with the metaserver");
    if (got) {
        result(strcmp(reg.host, "compute.example") == 0 && reg.port == 4242,
               "REGISTER carries the --advertise address (%s:%u)", reg.host, reg.port);
        result(strcmp(reg.name, "node A") == 0, "REGISTER carries --name ('%s')", reg.name);
        result(reg.workers == 2 && reg.cores > 0, "REGISTER carries workers 2 and the cores (%u, %u)",
               reg.workers, reg.cores);
        result(reg.speed > 1e6 && reg.speed < 1e15, "the measured speed is plausible (%.3g flops/s)",
               reg.speed);
        grp_register_free(&reg);
    }
    result(strcmp(fake_meta_token(fm), "secret") == 0, "the metaserver gets --token by default ('%s')",
           fake_meta_token(fm));
    check_functions(fm, port, "secret");

    /* ---- heartbeats: interval and load */
    sleep_ms(150);
    long long t0 = gr_now_ns();
    sleep_ms(1000);
    int unknown, n = beats_between(fm, t0, gr_now_ns(), &unknown);
    result(n >= 5 && n <= 15 && unknown == 0,
           "heartbeat_ms 100: %d beats in 1 s (5 to 15), all with the id given", n);
    grid_set_token_np("secret");
    check_load(fm, port);
    check_probe(port, "secret");

    /* ---- a metaserver that forgot the server: REGISTER again on the same connection */
    int regs = fake_meta_registrations(fm), conns = fake_meta_connections(fm);
    uint64_t old_id = fake_meta_server_id(fm);
    fake_meta_not_found_next(fm);
    WAIT_FOR(fake_meta_registrations(fm) > regs, 3);
    result(fake_meta_registrations(fm) == regs + 1 && fake_meta_connections(fm) == conns &&
               fake_meta_server_id(fm) != old_id,
           "after ERROR NOT_FOUND the server registers again on the same connection");
    t0 = gr_now_ns();
    sleep_ms(400);
    n = beats_between(fm, t0, gr_now_ns(), &unknown);
    result(n >= 2 && unknown == 0, "then its beats carry the new id (%d beats, %d stale)", n, unknown);

    /* ---- a metaserver that drops the connection */
    regs = fake_meta_registrations(fm);
    conns = fake_meta_connections(fm);
    fake_meta_close_next(fm);
    WAIT_FOR(fake_meta_registrations(fm) > regs, 3);
    result(fake_meta_connections(fm) == conns + 1 && fake_meta_registrations(fm) == regs + 1,
           "after the metaserver closed the connection the server reconnects and registers");

    /* ---- a metaserver that stops and comes back on its port */
    fake_meta_stop(fm);
    sleep_ms(1500);
    fm = fake_meta_start(mport, 100);
    double t_back = now_s();
    if (fm) WAIT_FOR(fake_meta_registrations(fm) >= 1, 8);
    result(fm && fake_meta_registrations(fm) >= 1,
           "a metaserver restarted on its port gets the server back without a restart (%.2f s)",
           now_s() - t_back);
    int st;
    result(waitpid(pids[0], &st, WNOHANG) == 0, "the server kept running throughout");
    /* The fake metaserver counts a registration before the server logs it: up to 5 s for
     * the fourth line (a check tier once read 3). */
    int registered = count_lines(logpath, "registered with metaserver");
    for (int i = 0; i < 500 && registered < 4; i++) {
        sleep_ms(10);
        registered = count_lines(logpath, "registered with metaserver");
    }
    int outages = count_lines(logpath, "in the background");
    result(outages == 2, "one log line per outage, not per attempt (%d for 2 outages)", outages);
    result(registered == 4, "one 'registered' line per registration (%d for 4)", registered);

    /* ---- SIGTERM with the metaserver down */
    fake_meta_stop(fm);
    fm = NULL;
    sleep_ms(300);
    double took = stop_server(0, 2, &st);
    result(took >= 0 && took < 0.8 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
           "SIGTERM with the metaserver down: exit 0 at once, not after the backoff (%.2f s)", took);

    /* ---- server B: the defaults (wildcard address, name, token from GRIDRPC_TOKEN) */
    fm = fake_meta_start(0, 1000);
    if (!fm) return 1;
    snprintf(maddr, sizeof maddr, "127.0.0.1:%d", fake_meta_port(fm));
    const char *b_opts[] = {"--host", "0.0.0.0", "--insecure", "--metaserver",
                            maddr,    "--speed", "2.5G",       NULL};
    port = start_server(1, b_opts, "envtok", "/dev/null");
    WAIT_FOR(fake_meta_registrations(fm) >= 1, 5);
    char host[256] = "", name[300];
    gethostname(host, sizeof host);
    snprintf(name, sizeof name, "gridrpcd on %s", host);
    got = port > 0 && fake_meta_last_register(fm, &reg) == 0;
    result(got && strcmp(reg.host, host) == 0 && (int)reg.port == port,
           "listening on 0.0.0.0: the host name and the listening port are advertised (%s:%u)",
           got ? reg.host : "", got ? reg.port : 0);
    result(got && strcmp(reg.name, name) == 0, "the default name is '%s' ('%s')", name, got ? reg.name : "");
    result(got && reg.speed == 2.5e9, "--speed 2.5G is sent as 2.5e9 (%g)", got ? reg.speed : 0);
    result(strcmp(fake_meta_token(fm), "envtok") == 0,
           "without --token the metaserver gets GRIDRPC_TOKEN ('%s')", fake_meta_token(fm));
    if (got) grp_register_free(&reg);
    uint64_t b_id = fake_meta_server_id(fm);
    took = stop_server(1, 5, &st);
    result(took >= 0 && took < 0.8 && fake_meta_unregistrations(fm) == 1 &&
               fake_meta_unregistered(fm) == b_id,
           "SIGTERM: the server says UNREGISTER with its id %llu before it exits (%.2f s)",
           (unsigned long long)b_id, took);
    fake_meta_stop(fm);

    /* ---- server C: --metaserver-token wins over --token; SIGTERM while a beat waits
     * for an answer that never comes */
    fm = fake_meta_start(0, 100);
    if (!fm) return 1;
    snprintf(maddr, sizeof maddr, "127.0.0.1:%d", fake_meta_port(fm));
    const char *c_opts[] = {
        "--host", "127.0.0.1", "--metaserver", maddr, "--token", "a", "--metaserver-token", "b", NULL};
    port = start_server(2, c_opts, "envtok", "/dev/null");
    WAIT_FOR(fake_meta_registrations(fm) >= 1, 5);
    result(port > 0 && strcmp(fake_meta_token(fm), "b") == 0,
           "--metaserver-token is what the metaserver gets ('%s')", fake_meta_token(fm));
    fake_meta_hang_next(fm);
    n = fake_meta_beats(fm);
    WAIT_FOR(fake_meta_beats(fm) > n, 2);
    sleep_ms(100);
    n = fake_meta_beats(fm);
    took = stop_server(2, 2, &st);
    /* Under 0.8 s: less than the 1 s gsv_meta_stop allows before giving up on the
     * thread, so this fails if the blocked read is not woken. */
    result(n > 0 && took >= 0 && took < 0.8 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
           "SIGTERM while the metaserver does not answer a beat: exit 0 at once (%.2f s)", took);
    fake_meta_stop(fm);

    printf("1..%d\n", tests);
    return failed ? 1 : 0;
}
