/* meta_lab_client.c: the client of bench/meta-lab-study.sh. It makes plain-named calls
 * (routed by the metaserver in GRIDRPC_METASERVER) and prints one CSV line per call: which
 * server ran it (grid_last_server_np), how long it took, and whether the result was right
 * (EP against NPB's sums, dmmul on sampled entries, Linpack by its normalised residual), so
 * that a wrong answer can never pass as a fast one.
 *
 *   meta_lab_client burst M N          N whole EP runs of 2^M pairs, all in flight at once
 *                                      (grid_call_async, then grid_wait_any until none is
 *                                      left); then "wall,SECONDS"
 *   meta_lab_client mix LABEL SPEC     the calls of SPEC one after the other (synchronous),
 *                                      SPEC = "dmmul:600,ep:24,linpack:800,..." (dmmul:N,
 *                                      ep:M, linpack:N)
 *   meta_lab_client split M PARTS      one EP run of 2^M pairs cut into PARTS equal ranges,
 *                                      all in flight at once (the study's Figure 11: EP
 *                                      over S servers); the parts' sums added and checked
 *                                      against NPB's; then "wall,SECONDS"
 *
 * Lines: call,LABEL,SEQ,FUNC,SIZE,SERVER,START_S,SECONDS,OK (START_S from the process's first
 * call). Exit status: 0 when every call ran and was right, 1 otherwise, 2 on a usage error. */
#include <math.h>
#include <string.h>

#include <gridrpc.h>

#include "../examples/common.h"
#include "../stubs/ep.h"

/* One EP run's outputs, kept until the asynchronous call is waited on. */
typedef struct {
    double sx, sy, q[10];
    double t0;
    int id;
} ep_slot;

static double g_epoch;

static void print_call(const char *label, int seq, const char *func, int size, double t0, double secs,
                       int ok) {
    char server[256] = "";
    if (grid_last_server_np(server, sizeof server) != GRID_OK) snprintf(server, sizeof server, "?");
    printf("call,%s,%d,%s,%d,%s,%.4f,%.4f,%d\n", label, seq, func, size, server, t0 - g_epoch, secs, ok);
    fflush(stdout);
}

/* EP is verified only for the sizes NPB has sums for: the study uses those sizes. */
static int ep_ok(int m, double sx, double sy) {
    return gridrpc_ep_verify(m, sx, sy) != 0;
}

static int run_burst(int m, int n) {
    ep_slot *s = calloc((size_t)n, sizeof *s);
    if (!s) {
        fprintf(stderr, "meta_lab_client: out of memory for %d calls\n", n);
        return 1;
    }
    int bad = 0;
    g_epoch = now_seconds();
    for (int i = 0; i < n; i++) {
        s[i].t0 = now_seconds();
        s[i].id = grid_call_async("nas/ep", m, 0, 0, &s[i].sx, &s[i].sy, s[i].q);
        if (s[i].id <= 0) {
            fprintf(stderr, "meta_lab_client: EP call %d could not start: %s\n", i, grid_last_error());
            free(s);
            return 1;
        }
    }
    for (int done = 0; done < n; done++) {
        int id = GRID_ID_NONE;
        int rc = grid_wait_any(&id);
        double t1 = now_seconds();
        int i = 0;
        while (i < n && s[i].id != id)
            i++;
        if (i == n) {
            fprintf(stderr, "meta_lab_client: grid_wait_any returned unknown call %d: %s\n", id,
                    grid_last_error());
            free(s);
            return 1;
        }
        int ok = rc == GRID_OK && ep_ok(m, s[i].sx, s[i].sy);
        if (rc != GRID_OK)
            fprintf(stderr, "meta_lab_client: EP call %d failed: %s\n", i, grid_call_message_np(id));
        bad += !ok;
        print_call("burst", i, "ep", m, s[i].t0, t1 - s[i].t0, ok);
    }
    printf("wall,%.4f\n", now_seconds() - g_epoch);
    free(s);
    return bad ? 1 : 0;
}

/* One synchronous dmmul of size n; 1 when the call ran and 16 sampled entries of C match
 * the dot products computed here (cheap: the client must not compete for CPU). */
static int one_dmmul(int n, unsigned long long seed) {
    size_t nn = (size_t)n * n;
    double *a = malloc(nn * sizeof *a), *b = malloc(nn * sizeof *b), *c = malloc(nn * sizeof *c);
    int ok = 0;
    if (!a || !b || !c) {
        fprintf(stderr, "meta_lab_client: out of memory for dmmul n = %d\n", n);
        goto out;
    }
    random_fill(a, nn, seed);
    random_fill(b, nn, seed + 1);
    if (grid_call("linalg/dmmul", n, a, b, c) != GRID_OK) {
        fprintf(stderr, "meta_lab_client: dmmul n = %d failed: %s\n", n, grid_last_error());
        goto out;
    }
    ok = 1;
    for (int k = 0; k < 16; k++) {
        int i = (int)((k * 7919ULL + seed) % (unsigned)n),
            j = (int)((k * 104729ULL + seed * 3) % (unsigned)n);
        double d = 0;
        for (int l = 0; l < n; l++)
            d += a[(size_t)i * n + l] * b[(size_t)l * n + j];
        if (!(fabs(d - c[(size_t)i * n + j]) <= 1e-9 * n)) ok = 0;
    }
    if (!ok) fprintf(stderr, "meta_lab_client: dmmul n = %d returned a wrong product\n", n);
out:
    free(a);
    free(b);
    free(c);
    return ok;
}

/* Linpack's normalised residual ||A x - b|| / (n ||A|| ||x|| eps): O(n^2), cheap. */
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
    return rmax / (n * amax * xmax * 2.220446049250313e-16);
}

/* One synchronous Linpack call (factor and solve, A and b sent, both sent back): 1 when
 * it ran and its solution passes Linpack's residual test (as examples/linpack.c). */
static int one_linpack(int n, unsigned long long seed) {
    size_t nn = (size_t)n * n;
    double *a = malloc(nn * sizeof *a), *a0 = malloc(nn * sizeof *a0), *b = malloc((size_t)n * sizeof *b),
           *b0 = malloc((size_t)n * sizeof *b0);
    int ok = 0, info = -1;
    if (!a || !a0 || !b || !b0) {
        fprintf(stderr, "meta_lab_client: out of memory for linpack n = %d\n", n);
        goto out;
    }
    random_fill(a0, nn, seed);
    random_fill(b0, (size_t)n, seed + 1);
    memcpy(a, a0, nn * sizeof *a);
    memcpy(b, b0, (size_t)n * sizeof *b);
    if (grid_call("linalg/linpack", n, a, b, &info) != GRID_OK) {
        fprintf(stderr, "meta_lab_client: linpack n = %d failed: %s\n", n, grid_last_error());
        goto out;
    }
    double r = residual(n, a0, b, b0);
    ok = info == 0 && r < 100;
    if (!ok) fprintf(stderr, "meta_lab_client: linpack n = %d: info %d, residual %.3g (wrong)\n", n, info, r);
out:
    free(a);
    free(a0);
    free(b);
    free(b0);
    return ok;
}

/* NPB's sums for the run sizes the study uses: classes S, W, A (stubs/ep.h) and B. */
static int ep_whole_ok(int m, double sx, double sy) {
    if (m == 30)
        return fabs((sx - 4.033815542441498e+04) / 4.033815542441498e+04) <= GRIDRPC_EP_EPSILON &&
               fabs((sy + 2.660669192809235e+04) / 2.660669192809235e+04) <= GRIDRPC_EP_EPSILON;
    return gridrpc_ep_verify(m, sx, sy) != 0;
}

/* EP of 2^M pairs in PARTS ranges [2^M p / PARTS, 2^M (p+1) / PARTS), all started at once
 * under the plain name (the metaserver places each), then waited for one by one. */
static int run_split(int m, int parts) {
    long long total = 1LL << m;
    if (parts > total || total / parts > 0x7fffffffLL) {
        fprintf(stderr, "meta_lab_client: split: each part needs 1 to 2^31 - 1 pairs\n");
        return 2;
    }
    ep_slot *s = calloc((size_t)parts, sizeof *s);
    if (!s) {
        fprintf(stderr, "meta_lab_client: out of memory for %d parts\n", parts);
        return 1;
    }
    int bad = 0;
    g_epoch = now_seconds();
    for (int p = 0; p < parts; p++) {
        long long a = total * p / parts, b = total * (p + 1) / parts;
        s[p].t0 = now_seconds();
        s[p].id = grid_call_async("nas/ep", m, (int)a, (int)(b - a), &s[p].sx, &s[p].sy, s[p].q);
        if (s[p].id <= 0) {
            fprintf(stderr, "meta_lab_client: EP part %d could not start: %s\n", p, grid_last_error());
            free(s);
            return 1;
        }
    }
    double sx = 0, sy = 0;
    for (int done = 0; done < parts; done++) {
        int id = GRID_ID_NONE;
        int rc = grid_wait_any(&id);
        double t1 = now_seconds();
        int p = 0;
        while (p < parts && s[p].id != id)
            p++;
        if (p == parts) {
            fprintf(stderr, "meta_lab_client: grid_wait_any returned unknown call %d: %s\n", id,
                    grid_last_error());
            free(s);
            return 1;
        }
        if (rc != GRID_OK) {
            fprintf(stderr, "meta_lab_client: EP part %d failed: %s\n", p, grid_call_message_np(id));
            bad++;
        }
        sx += s[p].sx;
        sy += s[p].sy;
        print_call("split", p, "ep", m, s[p].t0, t1 - s[p].t0, rc == GRID_OK);
    }
    double wall = now_seconds() - g_epoch;
    if (!bad && !ep_whole_ok(m, sx, sy)) {
        fprintf(stderr, "meta_lab_client: EP m = %d in %d parts: the sums fail NPB's verification\n", m,
                parts);
        bad++;
    }
    printf("wall,%.4f\n", wall);
    free(s);
    return bad ? 1 : 0;
}

static int one_ep(int m) {
    double sx = 0, sy = 0, q[10] = {0};
    if (grid_call("nas/ep", m, 0, 0, &sx, &sy, q) != GRID_OK) {
        fprintf(stderr, "meta_lab_client: EP m = %d failed: %s\n", m, grid_last_error());
        return 0;
    }
    if (!ep_ok(m, sx, sy)) {
        fprintf(stderr, "meta_lab_client: EP m = %d returned sums that fail NPB's verification\n", m);
        return 0;
    }
    return 1;
}

static int run_mix(const char *label, const char *spec) {
    char *copy = strdup(spec), *save = NULL;
    int seq = 0, bad = 0;
    if (!copy) return 1;
    g_epoch = now_seconds();
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save), seq++) {
        char func[16];
        int size;
        char extra;
        if (sscanf(tok, "%15[a-z]:%d%c", func, &size, &extra) != 2 ||
            !((strcmp(func, "dmmul") == 0 && size >= 1 && size <= 5000) ||
              (strcmp(func, "linpack") == 0 && size >= 1 && size <= 5000) ||
              (strcmp(func, "ep") == 0 && size >= 10 && size <= 30))) {
            fprintf(stderr,
                    "meta_lab_client: bad call '%s' in SPEC: write dmmul:N (1-5000), linpack:N (1-5000) or "
                    "ep:M (10-30)\n",
                    tok);
            free(copy);
            return 2;
        }
        double t0 = now_seconds();
        unsigned long long seed = 1000ULL + (unsigned long long)seq * 2;
        int ok = func[0] == 'd'   ? one_dmmul(size, seed)
                 : func[0] == 'l' ? one_linpack(size, seed)
                                  : one_ep(size);
        double t1 = now_seconds();
        bad += !ok;
        print_call(label, seq, func, size, t0, t1 - t0, ok);
    }
    free(copy);
    return bad ? 1 : 0;
}

int main(int argc, char **argv) {
    if (argc == 4 && strcmp(argv[1], "burst") == 0)
        return run_burst(parse_size(argv[2], 10, 30, "M"), parse_size(argv[3], 1, 1024, "N"));
    if (argc == 4 && strcmp(argv[1], "mix") == 0) return run_mix(argv[2], argv[3]);
    if (argc == 4 && strcmp(argv[1], "split") == 0)
        return run_split(parse_size(argv[2], 10, 30, "M"), parse_size(argv[3], 1, 1024, "PARTS"));
    fprintf(argc > 1 && strcmp(argv[1], "--help") == 0 ? stdout : stderr,
            "Usage: meta_lab_client burst M N | mix LABEL SPEC | split M PARTS\n"
            "  burst M N         N EP runs of 2^M pairs at once (async), then the wall time\n"
            "  mix LABEL SPEC    calls one after the other; SPEC = dmmul:N,linpack:N,ep:M,...\n"
            "  split M PARTS     one EP run of 2^M pairs in PARTS calls at once, then the wall time\n"
            "Plain names: set GRIDRPC_METASERVER (or GRIDRPC_SERVER). One CSV line per call:\n"
            "  call,LABEL,SEQ,FUNC,SIZE,SERVER,START_S,SECONDS,OK\n");
    return argc > 1 && strcmp(argv[1], "--help") == 0 ? 0 : 2;
}
