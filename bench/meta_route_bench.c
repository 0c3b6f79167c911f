/* meta_route_bench.c: what routing through a metaserver costs a small call, the figure
 * behind the decision-reuse threshold (docs/metaserver-client.md). Three ways to make
 * the same null call, measured in alternating rounds (medians, min and max):
 *   direct  gridrpc://SERVER/test/null_call          (no metaserver)
 *   ask     test/null_call, GRIDRPC_REUSE=0          (one SCHEDULE per call, plus REPORT)
 *   reuse   test/null_call, the default reuse rule   (a tiny call reuses the last decision)
 * GRIDRPC_SERVER names a gridrpcd serving the test module. GRIDRPC_METASERVER names the
 * metaserver (a gridmetad that knows that server); without it the bench forks a minimal
 * one that answers every SCHEDULE with GRIDRPC_SERVER at once, so "ask" then measures
 * the client's cost of a decision (one loopback round trip and the REPORT) without any
 * scheduling work.
 * x_direct is the ratio of the medians; x_paired the median of each round's ratio.
 * CSV (no header): mode,median_us,min_us,max_us,x_direct,x_paired.
 * Usage: meta_route_bench [--quick] [--csv FILE] */
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gr_settings.h"
#include "grp_meta.h"
#include "grp_proto.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* ---- the minimal metaserver (a child process) */

static void serve_one(int fd, const char *host, int port) {
    static grw_reader rd;
    static grw_writer wr;
    grw_reader_init(&rd, fd, GRP_DEFAULT_MAX_MESSAGE);
    grw_writer_init(&wr, fd);
    gr_err e;
    uint64_t decision = 1;
    for (;;) {
        grw_header h;
        if (grp_read_header(&rd, &h, &e)) return;
        int rc;
        if (h.type == GRP_HELLO) {
            grp_hello m;
            grp_hello_ok ok;
            memset(&ok, 0, sizeof ok);
            snprintf(ok.server, sizeof ok.server, "meta_route_bench");
            ok.version = GRW_VERSION;
            grp_limits_default(&ok.limits);
            rc = grp_read_hello(&rd, &m, &e);
            if (!rc) rc = grp_write_hello_ok(&wr, h.request_id, &ok, &e);
        } else if (h.type == GRP_SCHEDULE) {
            grp_schedule m;
            grp_schedule_ok ok;
            memset(&ok, 0, sizeof ok);
            rc = grp_read_schedule(&rd, &m, &e);
            ok.decision = decision++;
            ok.server_id = 1;
            snprintf(ok.host, sizeof ok.host, "%s", host);
            ok.port = (uint32_t)port;
            if (!rc) rc = grp_write_schedule_ok(&wr, h.request_id, &ok, &e);
        } else if (h.type == GRP_REPORT) {
            grp_report m;
            rc = grp_read_report(&rd, &m, &e);
        } else if (h.type == GRP_SERVERS) {
            char site[GRP_MAX_SITE + 1];
            rc = grp_read_servers(&rd, site, &e);
            /* no list: the bench measures calls, not the link probe */
            if (!rc) rc = grp_write_servers_ok(&wr, h.request_id, NULL, 0, &e);
        } else {
            rc = grw_skip(&rd, &e);
            if (!rc) rc = grp_write_error(&wr, h.request_id, GRID_ERR_PROTOCOL, "not served here", &e);
        }
        if (rc) return;
    }
}

/* Forks the minimal metaserver; returns its port (and *pid). */
static int start_meta(const char *host, int port, pid_t *pid) {
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof a;
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof a) || listen(lfd, 4) ||
        getsockname(lfd, (struct sockaddr *)&a, &al)) {
        perror("meta_route_bench: listen");
        exit(1);
    }
    *pid = fork();
    if (*pid == 0) {
        for (;;) {
            int fd = accept(lfd, NULL, NULL);
            if (fd < 0) _exit(0);
            grw_tune_socket(fd);
            if (fork() == 0) {
                serve_one(fd, host, port);
                _exit(0);
            }
            close(fd);
        }
    }
    close(lfd);
    return ntohs(a.sin_port);
}

/* ---- measuring */

enum { DIRECT, ASK, REUSE, NMODES };
static const char *const mode_name[NMODES] = {"direct", "ask", "reuse"};

/* Mean microseconds per call of N calls of NAME (after a warm-up). */
static double run(const char *name, int n) {
    for (int i = 0; i < 200; i++)
        if (grid_call(name) != GRID_OK) {
            fprintf(stderr, "meta_route_bench: %s: %s\n", name, grid_last_error());
            exit(1);
        }
    double t0 = now();
    for (int i = 0; i < n; i++)
        if (grid_call(name) != GRID_OK) {
            fprintf(stderr, "meta_route_bench: %s: %s\n", name, grid_last_error());
            exit(1);
        }
    return (now() - t0) / n * 1e6;
}

static void set_mode(int mode) {
    setenv("GRIDRPC_REUSE", mode == ASK ? "0" : "64", 1);
    grid_reset_np();
}

int main(int argc, char **argv) {
    int quick = 0;
    FILE *csv = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            quick = 1;
        } else if (strcmp(argv[i], "--csv") == 0 && i + 1 < argc) {
            csv = fopen(argv[++i], "w");
            if (!csv) {
                perror(argv[i]);
                return 2;
            }
        } else {
            fprintf(stderr, "usage: meta_route_bench [--quick] [--csv FILE]\n");
            return 2;
        }
    }
    const char *server = getenv("GRIDRPC_SERVER");
    char host[256], err[512];
    int port;
    if (!server || gr_parse_hostport(server, 0, host, sizeof host, &port, err, sizeof err)) {
        fprintf(stderr, "meta_route_bench: set GRIDRPC_SERVER=HOST:PORT (a gridrpcd with the test module)\n");
        return 2;
    }
    pid_t meta_pid = 0;
    const char *meta = getenv("GRIDRPC_METASERVER");
    if (!meta || !*meta) {
        char addr[64];
        snprintf(addr, sizeof addr, "127.0.0.1:%d", start_meta(host, port, &meta_pid));
        setenv("GRIDRPC_METASERVER", addr, 1);
        fprintf(stderr, "  ... a minimal metaserver on %s (no scheduling work)\n", addr);
    }
    char direct[600];
    snprintf(direct, sizeof direct, "gridrpc://%s/test/null_call", server);
    setenv("GRIDRPC_REUSE_FOR", "1h", 1); /* the reuse mode measures reuse, not its expiry */
    int rounds = quick ? 3 : 9, n = quick ? 2000 : 20000;
    double us[NMODES][16];
    /* ratio[m][r]: mode m over direct within round r. Rounds measured next to each other
     * share the machine's load of the moment, so on a shared machine the median of these
     * paired ratios is steadier than the ratio of the medians. The order of the modes
     * rotates from round to round, so none always runs first (cold) or last. */
    double ratio[NMODES][16];
    for (int r = 0; r < rounds; r++) {
        fprintf(stderr, "  ... round %d of %d\n", r + 1, rounds);
        for (int k = 0; k < NMODES; k++) {
            int m = (k + r) % NMODES;
            set_mode(m);
            us[m][r] = run(m == DIRECT ? direct : "test/null_call", n);
        }
        for (int m = 0; m < NMODES; m++)
            ratio[m][r] = us[m][r] / us[DIRECT][r];
    }
    double med[NMODES], paired[NMODES];
    printf("%-8s %10s %10s %10s %8s %8s\n", "mode", "median_us", "min_us", "max_us", "x_direct", "x_paired");
    for (int m = 0; m < NMODES; m++) {
        qsort(us[m], (size_t)rounds, sizeof(double), cmp_double);
        qsort(ratio[m], (size_t)rounds, sizeof(double), cmp_double);
        med[m] = us[m][rounds / 2];
        paired[m] = ratio[m][rounds / 2];
    }
    for (int m = 0; m < NMODES; m++) {
        printf("%-8s %10.2f %10.2f %10.2f %8.2f %8.2f\n", mode_name[m], med[m], us[m][0], us[m][rounds - 1],
               med[m] / med[DIRECT], paired[m]);
        if (csv)
            fprintf(csv, "%s,%.3f,%.3f,%.3f,%.4f,%.4f\n", mode_name[m], med[m], us[m][0], us[m][rounds - 1],
                    med[m] / med[DIRECT], paired[m]);
    }
    printf("a decision (SCHEDULE round trip + REPORT) costs about %.2f us here: calls predicted to cost "
           "less reuse the last decision\n",
           med[ASK] - med[DIRECT]);
    if (csv) fclose(csv);
    grid_reset_np();
    if (meta_pid > 0) {
        kill(meta_pid, SIGTERM);
        waitpid(meta_pid, NULL, 0);
    }
    return 0;
}
