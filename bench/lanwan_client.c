/* lanwan_client.c: the clients of the LAN/WAN multi-client study (bench/lanwan.sh), as
 * the Ninf study's clients were: C client processes, each calling one function in a loop
 * for a fixed time, every call timed on this host's clock. It is examples/multiclient's
 * fork-and-gate pattern (one process per client, released together), but for a timed
 * loop of Linpack or EP calls instead of one race of one call.
 *
 * Usage: lanwan_client --clients C --seconds T (--linpack N | --ep M) [--out FILE]
 *        (GRIDRPC_SERVER names the server)
 *
 * Each client connects and fetches the function's descriptor before the gate opens, so
 * that the timed calls are steady state (the study's clients, too, were measured over a
 * long loop). A call started before the deadline is finished and counted. One CSV line
 * per call goes to FILE (default stdout), with these fields:
 *   client, seq            which client (0..C-1) and its call number
 *   local, request_id      the call's connection end and id: the key of the server's log
 *                          line for the call (gridrpcd's `call LOCAL FN id=ID ... at=NS`)
 *   t_submit_ns            before grid_call (T_submit), CLOCK_MONOTONIC of this host
 *   t_sent_ns, t_reply_ns  the CALL started to go out; the reply's header arrived
 *   t_complete_ns          grid_call returned: the result is in our buffers (T_complete)
 *   queue_ns, run_ns       the server's own, from RESULT
 *   bytes_out, bytes_in    the CALL's and the RESULT's size on the wire
 *   flops                  the call's operations: Linpack 2/3 n^3 + 2 n^2, EP 2^(M+1)
 *                          (NAS counts two random numbers per pair)
 *   ok                     1: the answer checked out (Linpack's normalised residual below
 *                          100, EP's sums equal to NAS's reference where it has one)
 * Exit status: 0 every call was right, 1 a call failed or gave a wrong answer, 2 usage. */
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gridrpc.h>

#include "../examples/common.h"
#include "../stubs/ep.h"

typedef struct workload {
    int linpack_n; /* > 0: Linpack of this order */
    int ep_m;      /* > 0: EP of 2^m pairs in one call */
    double flops;
} workload;

static long long mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Linpack's normalised residual ||A x - b|| / (n ||A|| ||x|| eps) (as examples/linpack). */
static double residual(int n, const double *A, const double *x, const double *b) {
    double rmax = 0, amax = 0, xmax = 0;
    for (int i = 0; i < n; i++) {
        double r = -b[i];
        for (int j = 0; j < n; j++) {
            r += A[(size_t)i * n + j] * x[j];
            amax = fmax(amax, fabs(A[(size_t)i * n + j]));
        }
        rmax = fmax(rmax, fabs(r));
        xmax = fmax(xmax, fabs(x[i]));
    }
    return rmax / (n * amax * xmax * DBL_EPSILON);
}

/* Writes one line with a single write(): the clients share FD (O_APPEND), and a line
 * written whole is never interleaved with another client's. */
static void put_line(int fd, const char *line) {
    size_t len = strlen(line);
    while (write(fd, line, len) < 0 && errno == EINTR)
        continue;
}

/* The body of client ID: gets ready, waits at the gate, calls until SECONDS have passed.
 * Never returns: its exit status is 0 (all right), 1 (a call failed or was wrong). */
static void run_client(int id, const workload *w, double seconds, int out_fd, int ready_fd, int gate_fd) {
    const char *fn = w->linpack_n > 0 ? "linalg/linpack" : "nas/ep";
    int n = w->linpack_n;
    size_t nn = (size_t)n * (size_t)n;
    double *A = NULL, *a = NULL, *b = NULL, *x = NULL;
    if (n > 0) {
        A = malloc(nn * sizeof *A);
        a = malloc(nn * sizeof *a);
        b = malloc((size_t)n * sizeof *b);
        x = malloc((size_t)n * sizeof *x);
        if (!A || !a || !b || !x) {
            fprintf(stderr, "lanwan_client %d: out of memory for n = %d\n", id, n);
            _exit(1);
        }
        random_fill(A, nn, 100 + (unsigned)id);
        random_fill(b, (size_t)n, 200 + (unsigned)id);
    }
    /* Bounded: no client waits forever on a server that stopped answering. */
    grid_set_timeouts_np(20, seconds + 600);
    grid_function_np f;
    int rc = grid_describe_np(fn, &f);
    char c = rc == GRID_OK ? 'r' : 'x', dummy;
    if (rc != GRID_OK) fprintf(stderr, "lanwan_client %d: %s: %s\n", id, fn, grid_last_error());
    if (write(ready_fd, &c, 1) != 1 || rc != GRID_OK) _exit(1);
    while (read(gate_fd, &dummy, 1) < 0 && errno == EINTR)
        continue;
    long long deadline = mono_ns() + (long long)(seconds * 1e9);
    int bad = 0;
    for (int seq = 0; mono_ns() < deadline; seq++) {
        double sx = 0, sy = 0, q[10];
        int info = -1;
        if (n > 0) {
            memcpy(a, A, nn * sizeof *a);
            memcpy(x, b, (size_t)n * sizeof *x);
        }
        long long t_submit = mono_ns();
        rc = n > 0 ? grid_call(fn, n, a, x, &info) : grid_call(fn, w->ep_m, 0, 1 << w->ep_m, &sx, &sy, q);
        long long t_complete = mono_ns();
        grid_call_times_np t;
        if (rc != GRID_OK || grid_last_call_times_np(&t) != GRID_OK) {
            fprintf(stderr, "lanwan_client %d: call %d failed: %s\n", id, seq, grid_last_error());
            _exit(1);
        }
        int ok = n > 0 ? info == 0 && residual(n, A, x, b) < 100 : gridrpc_ep_verify(w->ep_m, sx, sy) != 0;
        if (!ok) {
            fprintf(stderr, "lanwan_client %d: call %d gave a wrong answer\n", id, seq);
            bad = 1;
        }
        char line[640];
        snprintf(line, sizeof line, "%d,%d,%s,%llu,%lld,%lld,%lld,%lld,%lld,%lld,%llu,%llu,%.0f,%d\n", id,
                 seq, t.local, t.request_id, t_submit, t.sent_ns, t.reply_ns, t_complete, t.queue_ns,
                 t.run_ns, t.bytes_out, t.bytes_in, w->flops, ok);
        put_line(out_fd, line);
    }
    _exit(bad);
}

static void usage(FILE *to) {
    fprintf(to, "Usage: lanwan_client --clients C --seconds T (--linpack N | --ep M) [--out FILE]\n"
                "C client processes (1-256) call linalg/linpack of order N (1-20000) or nas/ep of 2^M\n"
                "pairs (M 10-30) on the server of GRIDRPC_SERVER in a loop for T seconds (0.1-36000),\n"
                "and write one CSV line per call (T_submit, T_complete, the server's queue and run\n"
                "times, the key of the server's log line); see the top of bench/lanwan_client.c.\n");
}

int main(int argc, char **argv) {
    static const struct option opts[] = {{"clients", required_argument, NULL, 'c'},
                                         {"seconds", required_argument, NULL, 's'},
                                         {"linpack", required_argument, NULL, 'l'},
                                         {"ep", required_argument, NULL, 'e'},
                                         {"out", required_argument, NULL, 'o'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    int clients = 0, opt;
    double seconds = 0;
    const char *out = NULL;
    workload w = {0, 0, 0};
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (opt) {
        case 'c': clients = parse_size(optarg, 1, 256, "--clients"); break;
        case 's': {
            char *end;
            seconds = strtod(optarg, &end);
            if (*end || !(seconds >= 0.1 && seconds <= 36000)) {
                fprintf(stderr, "lanwan_client: --seconds takes 0.1 to 36000, not '%s'\n", optarg);
                return 2;
            }
            break;
        }
        case 'l': w.linpack_n = parse_size(optarg, 1, 20000, "--linpack"); break;
        case 'e': w.ep_m = parse_size(optarg, 10, 30, "--ep"); break;
        case 'o': out = optarg; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind != argc || clients == 0 || seconds == 0 || (w.linpack_n > 0) == (w.ep_m > 0)) {
        fprintf(stderr, "lanwan_client: give --clients, --seconds and one of --linpack or --ep\n");
        usage(stderr);
        return 2;
    }
    double n = w.linpack_n;
    w.flops = w.linpack_n > 0 ? 2.0 / 3.0 * n * n * n + 2.0 * n * n : ldexp(1.0, w.ep_m + 1);
    int out_fd = out ? open(out, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644) : STDOUT_FILENO;
    if (out_fd < 0) {
        fprintf(stderr, "lanwan_client: cannot open %s: %s\n", out, strerror(errno));
        return 1;
    }
    int ready[2], gate[2];
    pid_t *pids = calloc((size_t)clients, sizeof *pids);
    if (pids == NULL || pipe(ready) != 0 || pipe(gate) != 0) {
        perror("lanwan_client");
        return 1;
    }
    fflush(NULL);
    for (int i = 0; i < clients; i++) {
        pids[i] = fork();
        if (pids[i] == 0) {
            close(ready[0]);
            close(gate[1]); /* else this client would hold its own gate shut */
            run_client(i, &w, seconds, out_fd, ready[1], gate[0]);
        }
        if (pids[i] < 0) {
            perror("lanwan_client: fork");
            for (int k = 0; k < i; k++)
                kill(pids[k], SIGKILL);
            return 1;
        }
    }
    close(ready[1]);
    close(gate[0]);
    /* Every client says 'r' (ready) or 'x' (its describe failed) or dies: a read of 0
     * bytes means every client has closed its end. */
    int nready = 0, nfailed = 0;
    char buf[256];
    ssize_t got;
    while (nready + nfailed < clients && (got = read(ready[0], buf, sizeof buf)) != 0) {
        if (got < 0) {
            if (errno == EINTR) continue;
            break;
        }
        for (ssize_t k = 0; k < got; k++)
            buf[k] == 'r' ? nready++ : nfailed++;
    }
    long long t0 = mono_ns();
    close(gate[1]); /* the gate opens for every client at once */
    int failed = nfailed > 0;
    for (int i = 0; i < clients; i++) {
        int st;
        while (waitpid(pids[i], &st, 0) < 0 && errno == EINTR)
            continue;
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) failed = 1;
    }
    long long t1 = mono_ns();
    /* The run's window, for CPU utilisation and load per run (stderr: not a call). */
    fprintf(stderr, "lanwan_client: window %lld %lld clients %d ready %d%s\n", t0, t1, clients, nready,
            failed ? " FAILED" : "");
    free(pids);
    return failed;
}
