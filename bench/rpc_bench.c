/* rpc_bench.c: GridRPC against its baselines, measured in the same run (BENCH.md):
 *   null    sync null call round trip vs a raw TCP ping-pong (64 bytes, TCP_NODELAY)
 *   async   pipelined asynchronous null calls per second from one client (vs sync)
 *   bulk    a 64 MiB double array to the server and back vs raw TCP 64 MiB each way
 *   dmmul   remote linalg/dmmul vs local OpenBLAS dgemm, n = 500 .. 3000
 *   linpack remote linalg/linpack vs local LAPACK dgesv, n = 600 .. 4000 (Mflops)
 * The raw TCP peer is a forked echo process, like gridrpcd a process of its own.
 * Baseline and measured runs alternate, several rounds; medians with min and max.
 * Usage: rpc_bench [--quick] [--csv FILE] null|async|bulk|dmmul|linpack...
 * GRIDRPC_SERVER names a gridrpcd that serves the test and linalg modules. */
#include <cblas.h>
#include <errno.h>
#include <lapacke.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <gridrpc.h>

static int quick;
static FILE *csv;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct {
    double median, min, max, p99;
} stats;

static stats summarize(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    stats s = {v[n / 2], v[0], v[n - 1], v[(int)((n - 1) * 0.99)]};
    return s;
}

static void progress(const char *what) {
    fprintf(stderr, "  ... %s\n", what);
}

static void fill(double *a, size_t n, unsigned long long seed) {
    for (size_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        a[i] = (double)(seed >> 11) / 9007199254740992.0 - 0.5;
    }
}

/* ---- the raw TCP peer: echoes every byte it receives */

static int raw_port;
static pid_t raw_pid;

static int full_write(int fd, const void *p, size_t n) {
    const char *c = p;
    while (n > 0) {
        ssize_t k = write(fd, c, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        c += k;
        n -= (size_t)k;
    }
    return 0;
}

static int full_read(int fd, void *p, size_t n) {
    char *c = p;
    while (n > 0) {
        ssize_t k = read(fd, c, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        c += k;
        n -= (size_t)k;
    }
    return 0;
}

static void start_raw_peer(void) {
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (bind(ls, (struct sockaddr *)&a, sizeof a) || listen(ls, 8) ||
        getsockname(ls, (struct sockaddr *)&a, &len)) {
        perror("rpc_bench: raw peer");
        exit(1);
    }
    raw_port = ntohs(a.sin_port);
    raw_pid = fork();
    if (raw_pid == 0) {
        static char buf[1 << 20];
        for (;;) {
            int c = accept(ls, NULL, NULL);
            if (c < 0) continue;
            int one = 1;
            setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            ssize_t k;
            while ((k = read(c, buf, sizeof buf)) > 0)
                if (full_write(c, buf, (size_t)k)) break;
            close(c);
        }
    }
    close(ls);
}

static int raw_connect(void) {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons((unsigned short)raw_port);
    if (connect(s, (struct sockaddr *)&a, sizeof a)) {
        perror("rpc_bench: connect to raw peer");
        exit(1);
    }
    int one = 1;
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return s;
}

static void check(int rc, const char *what) {
    if (rc != GRID_OK) {
        fprintf(stderr, "rpc_bench: %s failed: %s\n", what, grid_last_error());
        exit(1);
    }
}

/* ---- null call */

static void bench_null(void) {
    int rounds = quick ? 3 : 7, calls = quick ? 2000 : 10000;
    double *raw = malloc(sizeof(double) * calls), *rpc = malloc(sizeof(double) * calls);
    double raw_med[16], rpc_med[16], raw_p99[16], rpc_p99[16];
    char msg[64] = {0};
    int s = raw_connect();
    check(grid_call("test/null_call"), "warm-up null call");
    for (int r = 0; r < rounds; r++) {
        progress("null call round");
        for (int i = 0; i < calls; i++) {
            double t = now();
            full_write(s, msg, sizeof msg);
            full_read(s, msg, sizeof msg);
            raw[i] = (now() - t) * 1e6;
        }
        for (int i = 0; i < calls; i++) {
            double t = now();
            check(grid_call("test/null_call"), "null call");
            rpc[i] = (now() - t) * 1e6;
        }
        stats a = summarize(raw, calls), b = summarize(rpc, calls);
        raw_med[r] = a.median;
        raw_p99[r] = a.p99;
        rpc_med[r] = b.median;
        rpc_p99[r] = b.p99;
    }
    close(s);
    stats a = summarize(raw_med, rounds), b = summarize(rpc_med, rounds);
    stats ap = summarize(raw_p99, rounds), bp = summarize(rpc_p99, rounds);
    double ratios[16];
    for (int r = 0; r < rounds; r++)
        ratios[r] = rpc_med[r] / raw_med[r];
    stats q = summarize(ratios, rounds);
    printf("\n(a) sync null call, cached descriptor, %d rounds x %d calls (us per round trip)\n\n", rounds,
           calls);
    printf("| %-26s | %8s | %8s | %8s | %8s |\n", "", "median", "min", "max", "p99");
    printf("|----------------------------|----------|----------|----------|----------|\n");
    printf("| %-26s | %8.1f | %8.1f | %8.1f | %8.1f |\n", "raw TCP ping-pong, 64 B", a.median, a.min, a.max,
           ap.median);
    printf("| %-26s | %8.1f | %8.1f | %8.1f | %8.1f |\n", "grid_call test/null_call", b.median, b.min, b.max,
           bp.median);
    printf("\nnull call / raw TCP: median %.2fx (min %.2fx, max %.2fx over rounds); target <= 1.25x\n",
           q.median, q.min, q.max);
    if (csv)
        fprintf(csv, "null,raw_us,%.3f\nnull,rpc_us,%.3f\nnull,ratio,%.3f\n", a.median, b.median, q.median);
    free(raw);
    free(rpc);
}

/* ---- pipelined asynchronous null calls from one client */

static void bench_async(void) {
    int rounds = quick ? 3 : 5, calls = quick ? 20000 : 100000, window = 5000;
    int *ids = malloc(sizeof(int) * (size_t)window);
    double rate[16], sync_rate[16];
    check(grid_call("test/null_call"), "warm-up null call");
    for (int r = 0; r < rounds; r++) {
        progress("async round");
        double t = now();
        for (int i = 0; i < calls; i += window) {
            for (int k = 0; k < window; k++) {
                ids[k] = grid_call_async("test/null_call");
                if (ids[k] <= 0) check(-ids[k], "async null call");
            }
            check(grid_wait_all(), "grid_wait_all");
            for (int k = 0; k < window; k++)
                grid_forget_np(ids[k]);
        }
        rate[r] = calls / (now() - t);
        int n = calls / 10;
        t = now();
        for (int i = 0; i < n; i++)
            check(grid_call("test/null_call"), "null call");
        sync_rate[r] = n / (now() - t);
    }
    stats a = summarize(rate, rounds), b = summarize(sync_rate, rounds);
    printf("\n(e) pipelined async null calls, one client, windows of %d in flight, %d rounds x %d calls\n\n",
           window, rounds, calls);
    printf("| %-30s | %12s | %12s | %12s |\n", "", "median/s", "min/s", "max/s");
    printf("|--------------------------------|--------------|--------------|--------------|\n");
    printf("| %-30s | %12.0f | %12.0f | %12.0f |\n", "sync grid_call, one at a time", b.median, b.min, b.max);
    printf("| %-30s | %12.0f | %12.0f | %12.0f |\n", "async, pipelined", a.median, a.min, a.max);
    printf("\npipelined / sync: %.1fx; target >= 100,000 calls/s\n", a.median / b.median);
    if (csv) fprintf(csv, "async,rate,%.0f\nasync,sync_rate,%.0f\n", a.median, b.median);
    free(ids);
}

/* ---- 64 MiB there and back */

static void bench_bulk(void) {
    int rounds = quick ? 3 : 7;
    size_t bytes = (size_t)64 << 20, n = bytes / sizeof(double);
    double *x = malloc(bytes);
    char *buf = malloc(bytes);
    fill(x, n, 7);
    memset(buf, 1, bytes);
    double raw_t[16], rpc_t[16], ratio[16];
    int s = raw_connect();
    for (int r = 0; r < rounds; r++) {
        progress("64 MiB round");
        double t = now();
        /* Send and receive concurrently, as the echo peer streams back. */
        pid_t w = fork();
        if (w == 0) {
            full_write(s, buf, bytes);
            _exit(0);
        }
        full_read(s, buf, bytes);
        waitpid(w, NULL, 0);
        raw_t[r] = now() - t;
        t = now();
        check(grid_call("test/inout_double", (int)n, x), "64 MiB inout call");
        rpc_t[r] = now() - t;
        ratio[r] = raw_t[r] / rpc_t[r];
    }
    close(s);
    stats a = summarize(raw_t, rounds), b = summarize(rpc_t, rounds), q = summarize(ratio, rounds);
    double gb = 2.0 * bytes / 1e9;
    printf("\n(b) 64 MiB of doubles to the server and back (2 x 64 MiB), %d rounds\n\n", rounds);
    printf("| %-34s | %9s | %9s | %9s |\n", "", "median s", "GB/s", "min..max s");
    printf("|------------------------------------|-----------|-----------|-------------------|\n");
    printf("| %-34s | %9.3f | %9.2f | %.3f..%.3f |\n", "raw TCP, 64 MiB each way", a.median, gb / a.median,
           a.min, a.max);
    printf("| %-34s | %9.3f | %9.2f | %.3f..%.3f |\n", "grid_call test/inout_double", b.median, gb / b.median,
           b.min, b.max);
    printf("\nthroughput grid_call / raw TCP: median %.2fx (min %.2fx, max %.2fx); target >= 0.8x\n",
           q.median, q.min, q.max);
    if (csv)
        fprintf(csv, "bulk,raw_s,%.4f\nbulk,rpc_s,%.4f\nbulk,ratio,%.3f\n", a.median, b.median, q.median);
    free(x);
    free(buf);
}

/* ---- dmmul remote vs local */

static void bench_dmmul(void) {
    int sizes[] = {500, 1000, 1500, 2000, 2500, 3000};
    int ns = quick ? 3 : 6, rounds = quick ? 2 : 3;
    printf("\n(c) dmmul remote (linalg/dmmul) vs local OpenBLAS dgemm, %d rounds each\n\n", rounds);
    printf("| %5s | %10s | %10s | %13s | %12s |\n", "n", "local s", "remote s", "remote/local",
           "remote GF/s");
    printf("|-------|------------|------------|---------------|--------------|\n");
    for (int k = 0; k < ns; k++) {
        int n = sizes[k];
        size_t nn = (size_t)n * n;
        double *A = malloc(nn * 8), *B = malloc(nn * 8), *C = malloc(nn * 8);
        fill(A, nn, 1);
        fill(B, nn, 2);
        double lt[8], rt[8], q[8];
        char what[64];
        snprintf(what, sizeof what, "dmmul n=%d", n);
        progress(what);
        for (int r = 0; r < rounds; r++) {
            double t = now();
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, A, n, B, n, 0.0, C, n);
            lt[r] = now() - t;
            t = now();
            check(grid_call("linalg/dmmul", n, A, B, C), "dmmul");
            rt[r] = now() - t;
            q[r] = rt[r] / lt[r];
        }
        stats l = summarize(lt, rounds), m = summarize(rt, rounds), qq = summarize(q, rounds);
        printf("| %5d | %10.3f | %10.3f | %6.2fx       | %12.2f |\n", n, l.median, m.median, qq.median,
               2.0 * n * (double)n * n / m.median / 1e9);
        if (csv) fprintf(csv, "dmmul,%d,%.4f,%.4f,%.3f\n", n, l.median, m.median, qq.median);
        free(A);
        free(B);
        free(C);
    }
    printf("\ntarget: remote/local <= 1.15x at n = 2000 (peers: 1.6-2.7x)\n");
}

/* ---- Linpack remote vs local, in the layout of the Ninf tables */

static void bench_linpack(void) {
    int sizes[] = {600, 1000, 1400, 2000, 3000, 4000};
    int ns = quick ? 3 : 6, rounds = quick ? 2 : 3;
    printf("\n(d) Linpack (LU factor + solve), Mflops, %d rounds each\n\n", rounds);
    printf("| %5s | %12s | %12s | %12s |\n", "n", "local Mflops", "remote Mflops", "remote/local");
    printf("|-------|--------------|---------------|--------------|\n");
    for (int k = 0; k < ns; k++) {
        int n = sizes[k];
        size_t nn = (size_t)n * n;
        double *A = malloc(nn * 8), *W = malloc(nn * 8), *b = malloc(n * 8), *x = malloc(n * 8);
        lapack_int *ip = malloc(n * sizeof *ip);
        fill(A, nn, 3);
        fill(b, (size_t)n, 4);
        double flops = 2.0 / 3.0 * n * (double)n * n + 2.0 * n * (double)n;
        double lm[8], rm[8], q[8];
        char what[64];
        snprintf(what, sizeof what, "linpack n=%d", n);
        progress(what);
        for (int r = 0; r < rounds; r++) {
            memcpy(W, A, nn * 8);
            memcpy(x, b, n * 8);
            double t = now();
            LAPACKE_dgesv(LAPACK_ROW_MAJOR, n, 1, W, n, ip, x, 1);
            lm[r] = flops / (now() - t) / 1e6;
            memcpy(W, A, nn * 8);
            memcpy(x, b, n * 8);
            int info;
            t = now();
            check(grid_call("linalg/linpack", n, W, x, &info), "linpack");
            rm[r] = flops / (now() - t) / 1e6;
            q[r] = rm[r] / lm[r];
        }
        stats l = summarize(lm, rounds), m = summarize(rm, rounds), qq = summarize(q, rounds);
        printf("| %5d | %12.0f | %13.0f | %11.2fx |\n", n, l.median, m.median, qq.median);
        if (csv) fprintf(csv, "linpack,%d,%.1f,%.1f,%.3f\n", n, l.median, m.median, qq.median);
        free(A);
        free(W);
        free(b);
        free(x);
        free(ip);
    }
    printf("\ntarget: remote >= 0.9x local Mflops for n >= 2000\n");
}

int main(int argc, char **argv) {
    int ran = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            quick = 1;
        } else if (strcmp(argv[i], "--csv") == 0 && i + 1 < argc) {
            csv = fopen(argv[++i], "w");
            if (!csv) {
                perror(argv[i]);
                return 1;
            }
        } else if (strcmp(argv[i], "--help") == 0) {
            printf("Usage: rpc_bench [--quick] [--csv FILE] null|async|bulk|dmmul|linpack...\n"
                   "Measures GridRPC against raw TCP and local OpenBLAS in the same run.\n"
                   "GRIDRPC_SERVER must name a gridrpcd serving the test and linalg modules.\n");
            return 0;
        }
    }
    start_raw_peer();
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "null") == 0)
            bench_null(), ran++;
        else if (strcmp(argv[i], "bulk") == 0)
            bench_bulk(), ran++;
        else if (strcmp(argv[i], "async") == 0)
            bench_async(), ran++;
        else if (strcmp(argv[i], "dmmul") == 0)
            bench_dmmul(), ran++;
        else if (strcmp(argv[i], "linpack") == 0)
            bench_linpack(), ran++;
    }
    kill(raw_pid, SIGTERM);
    waitpid(raw_pid, NULL, 0);
    if (csv) fclose(csv);
    if (!ran) {
        fprintf(stderr, "rpc_bench: name at least one of null async bulk dmmul linpack (see --help)\n");
        return 2;
    }
    return 0;
}
