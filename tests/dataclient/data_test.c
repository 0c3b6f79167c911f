/* data_test.c: remote data handles from the client's side against two real gridrpcd on
 * loopback (tests/dataclient/run.sh starts them): put/get of every number type; a handle as IN
 * of many dmmul calls (same C as plain calls, and the client sends B once, counted in
 * bytes); OUT into a new handle; INOUT; a handle moving server to server (the second
 * server's log says it came from the first); the asynchronous, argument-vector and OGF
 * forms; the errors for a wrong type or size, no data, and the memory limit; stale copies
 * freed after a KEEP; grpc_finalize and grid_reset_np freeing the session on the servers;
 * a handle lost with the only server holding it; arrays large enough to travel in shared
 * buffers (IN, OUT, INOUT, part of an INOUT, kept outputs, a handle scribbled on by the
 * function). Prints TAP.
 *
 * Environment: DATA_S1, DATA_S2 ("host:port"), DATA_LOG1, DATA_LOG2 (the servers' logs),
 * DATA_S1_PID (killed at the end), DATA_S2_MEMORY (S2's --data-memory in bytes), DATA_META
 * (a gridmetad both servers register with; optional). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "grc_client.h"
#include "grpc.h"
#include "gridrpc.h"
#include "tap.h"

static const char *s1, *s2, *slog1, *slog2;
static char url1[300], url2[300], inout1[300], inout2[300];

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Lines of PATH containing every one of the (up to 3) fragments; waits up to 5 s for at
 * least MIN of them. */
static int log_count(const char *path, int min, const char *a, const char *b, const char *c) {
    int n = 0;
    for (int tries = 0; tries < 100; tries++) {
        FILE *f = fopen(path, "r");
        n = 0;
        char line[4096];
        while (f && fgets(line, sizeof line, f))
            if (strstr(line, a) && (!b || strstr(line, b)) && (!c || strstr(line, c))) n++;
        if (f) fclose(f);
        if (n >= min) break;
        sleep_ms(50);
    }
    return n;
}

/* The handle id (handle=N) of the first line of PATH holding A and B. */
static int log_find(const char *path, const char *a, const char *b, unsigned long long *id) {
    FILE *f = fopen(path, "r");
    char line[4096];
    int found = 0;
    while (f && !found && fgets(line, sizeof line, f)) {
        const char *h = strstr(line, "handle=");
        if (strstr(line, a) && strstr(line, b) && h) found = sscanf(h, "handle=%llu", id) == 1;
    }
    if (f) fclose(f);
    return found;
}

static unsigned long long sent_bytes(void) {
    grid_stats_np s;
    grid_get_stats_np(&s);
    return s.bytes_sent;
}
static unsigned long long received_bytes(void) {
    grid_stats_np s;
    grid_get_stats_np(&s);
    return s.bytes_received;
}

static void fill(double *p, int n, double seed) {
    for (int i = 0; i < n; i++)
        p[i] = seed + (double)((i * 7919) % 1000) / 997.0;
}

/* 1 when X and Y agree to rounding: OpenBLAS's dgemm may split the work differently
 * from call to call (threads, alignment), so two runs of one product can differ in the
 * last bits; a wrong or stale B differs everywhere. */
static int same_mat(const double *x, const double *y, size_t n) {
    double scale = 0, diff = 0;
    for (size_t i = 0; i < n; i++) {
        double a = x[i] < 0 ? -x[i] : x[i], d = x[i] - y[i];
        if (a > scale) scale = a;
        if (d < 0) d = -d;
        if (!(d <= diff)) diff = d; /* a NaN counts */
    }
    return diff <= 1e-12 * (scale > 1 ? scale : 1);
}

static const char *idtext(const grid_data_np *h, char *buf, size_t n) {
    (void)h;
    snprintf(buf, n, "%s", grid_last_error());
    return buf;
}

/* ---- put/get of every number type */
static void round_trips(void) {
    static const int types[] = {GRID_TYPE_CHAR,   GRID_TYPE_SHORT,    GRID_TYPE_INT,
                                GRID_TYPE_LONG,   GRID_TYPE_LONGLONG, GRID_TYPE_FLOAT,
                                GRID_TYPE_DOUBLE, GRID_TYPE_SCOMPLEX, GRID_TYPE_DCOMPLEX};
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        size_t count = 1000 + t, size = grid_type_size_np(types[t]);
        unsigned char *in = malloc(count * size), *out = malloc(count * size);
        for (size_t i = 0; i < count * size; i++) {
            in[i] = (unsigned char)(i * 31 + t * 7 + 1);
            out[i] = 0;
        }
        /* Floats with these bytes may be NaNs: bytes, not values, must survive. */
        grid_data_np *h = NULL;
        int rc = grid_data_put_np(&h, s1, types[t], count, in);
        int rc2 = rc ? rc : grid_data_get_np(h, out, count);
        int type = 0;
        size_t cnt = 0;
        int rc3 = h ? grid_data_info_np(h, &type, &cnt) : -1;
        result(rc == GRID_OK && rc2 == GRID_OK && memcmp(in, out, count * size) == 0 && rc3 == 0 &&
                   type == types[t] && cnt == count && strcmp(grid_data_where_np(h), s1) == 0,
               "put/get of %zu elements of type %d round-trips bit for bit (where %s)", count, types[t],
               h ? grid_data_where_np(h) : "-");
        if (rc || rc2) diag("%s", grid_last_error());
        grid_data_free_np(h);
        free(in);
        free(out);
    }
}

/* ---- dmmul with B as a handle: same C, and B is not sent again */
static void dmmul_in(void) {
    enum { N = 120, CALLS = 50 };
    size_t nn = (size_t)N * N;
    double *A = malloc(nn * sizeof *A), *B = malloc(nn * sizeof *B), *C = malloc(nn * sizeof *C),
           *C2 = malloc(nn * sizeof *C2);
    fill(A, (int)nn, 1);
    fill(B, (int)nn, 2);
    int rc = grid_call(url1, N, A, B, C); /* warms the descriptor cache and the connection */
    unsigned long long s0 = sent_bytes();
    for (int i = 0; i < 5 && !rc; i++)
        rc = grid_call(url1, N, A, B, C);
    unsigned long long plain = (sent_bytes() - s0) / 5;
    grid_data_np *hb = NULL;
    if (!rc) rc = grid_data_put_np(&hb, s1, GRID_TYPE_DOUBLE, nn, B);
    unsigned long long s1b = sent_bytes();
    int same = 1;
    for (int i = 0; i < CALLS && !rc; i++) {
        memset(C2, 0, nn * sizeof *C2);
        rc = grid_call(url1, N, A, hb, C2);
        if (!same_mat(C, C2, nn)) {
            if (same) diag("call %d: C[0] %g, with the handle %g", i + 1, C[0], C2[0]);
            same = 0;
        }
    }
    unsigned long long per = (sent_bytes() - s1b) / CALLS;
    result(rc == GRID_OK && same, "%d dmmul calls with B as a handle give the same C as plain calls", CALLS);
    if (rc) diag("%s", grid_last_error());
    size_t bbytes = nn * sizeof(double);
    result(rc == GRID_OK && per < nn * sizeof(double) + 2048 && plain >= 2 * bbytes,
           "the client sends %llu bytes per call with B a handle (A is %zu), %llu with B sent (B is %zu)",
           per, bbytes, plain, bbytes);
    /* OUT left on the server: nothing of C comes back until it is asked for. */
    grid_data_np *hc = NULL;
    rc = grid_data_new_np(&hc, GRID_TYPE_DOUBLE, nn);
    unsigned long long r0 = received_bytes();
    if (!rc) rc = grid_call(url1, N, A, hb, hc);
    unsigned long long got = received_bytes() - r0;
    memset(C2, 0, nn * sizeof *C2);
    int rc2 = rc ? rc : grid_data_get_np(hc, C2, nn);
    result(rc == GRID_OK && rc2 == GRID_OK && got < 1024 && same_mat(C, C2, nn) &&
               strcmp(grid_data_where_np(hc), s1) == 0,
           "an OUT into grid_data_new_np stays on the server (%llu bytes came back), then gets the same C",
           got);
    if (rc || rc2) diag("%s", grid_last_error());
    /* The handle C feeds the next call as its A: C*B computed on the server alone. */
    double *D = malloc(nn * sizeof *D), *D2 = malloc(nn * sizeof *D2);
    rc = grid_call(url1, N, C, B, D);
    if (!rc) rc = grid_call(url1, N, hc, hb, D2);
    result(rc == GRID_OK && same_mat(D, D2, nn), "an OUT handle is the IN of the next call");

    /* The asynchronous and argument-vector forms take handles as well. */
    int ids[8], ok = 1;
    double *E[8];
    for (int k = 0; k < 8; k++) {
        E[k] = calloc(nn, sizeof *E[k]);
        ids[k] = grid_call_async(url1, N, A, hb, E[k]);
        if (ids[k] <= 0) ok = 0;
    }
    rc = grid_wait_and(ids, 8);
    for (int k = 0; k < 8; k++) {
        if (!same_mat(E[k], C, nn)) ok = 0;
        free(E[k]);
    }
    result(ok && rc == GRID_OK, "8 concurrent grid_call_async with B a handle give the right C");
    if (rc) diag("%s", grid_last_error());
    int n = N;
    memset(C2, 0, nn * sizeof *C2);
    void *argv[4] = {&n, A, hb, C2};
    rc = grid_call_argv_np(url1, 4, argv);
    result(rc == GRID_OK && same_mat(C, C2, nn), "grid_call_argv_np with B a handle");

    /* The OGF layer: grpc_call and grpc_call_async go through the same marshalling. */
    grpc_function_handle_t fh;
    grpc_error_t g = grpc_initialize(NULL);
    if (g == GRPC_NO_ERROR) g = grpc_function_handle_init(&fh, s1, "linalg/dmmul");
    memset(C2, 0, nn * sizeof *C2);
    if (g == GRPC_NO_ERROR) g = grpc_call(&fh, N, A, hb, C2);
    result(g == GRPC_NO_ERROR && same_mat(C, C2, nn), "grpc_call with B a handle");
    grpc_sessionid_t sid;
    memset(C2, 0, nn * sizeof *C2);
    g = grpc_call_async(&fh, &sid, N, A, hb, C2);
    if (g == GRPC_NO_ERROR) g = grpc_wait(sid);
    result(g == GRPC_NO_ERROR && same_mat(C, C2, nn), "grpc_call_async with B a handle");
    grpc_function_handle_destruct(&fh);

    /* Wrong type and wrong size are refused, naming the parameter and the handle. */
    float *Bf = calloc(nn, sizeof *Bf);
    grid_data_np *hf = NULL, *hs = NULL, *hn = NULL;
    char m[1024];
    rc = grid_data_put_np(&hf, s1, GRID_TYPE_FLOAT, nn, Bf);
    if (!rc) rc = grid_call(url1, N, A, hf, C2);
    idtext(hf, m, sizeof m);
    result(rc == GRID_ERR_ARGS && strstr(m, "'B'") && strstr(m, "doubles") && strstr(m, "floats"),
           "a handle of floats for a double array is refused: %s", m);
    rc = grid_data_put_np(&hs, s1, GRID_TYPE_DOUBLE, nn / 4, B);
    if (!rc) rc = grid_call(url1, N, A, hs, C2);
    idtext(hs, m, sizeof m);
    char want[64];
    snprintf(want, sizeof want, "takes %zu doubles", nn);
    result(rc == GRID_ERR_ARGS && strstr(m, want) && strstr(m, "holds 3600 doubles"),
           "a handle of the wrong size is refused: %s", m);
    rc = grid_data_new_np(&hn, GRID_TYPE_DOUBLE, nn);
    if (!rc) rc = grid_call(url1, N, A, hn, C2);
    idtext(hn, m, sizeof m);
    result(rc == GRID_ERR_ARGS && strstr(m, "no data yet"), "a handle with no data as IN is refused: %s", m);
    grid_data_free_np(hf);
    grid_data_free_np(hs);
    grid_data_free_np(hn);
    free(Bf);

    /* Server to server: B put on S1, the call on S2; the client sends none of B. */
    unsigned long long t0 = sent_bytes();
    memset(C2, 0, nn * sizeof *C2);
    rc = grid_call(url2, N, A, hb, C2);
    unsigned long long moved = sent_bytes() - t0;
    result(rc == GRID_OK && same_mat(C, C2, nn) && moved < bbytes + 4096,
           "a call on S2 with B put on S1 is right and the client sent %llu bytes (A: %zu, B: %zu)", moved,
           bbytes, bbytes);
    if (rc) diag("%s", grid_last_error());
    char to2[320];
    snprintf(to2, sizeof to2, "to %s", s2);
    char put2[64] = "?";
    unsigned long long hid = 0;
    if (log_count(slog1, 1, "data copy", to2, NULL) >= 1 && log_find(slog1, "data copy", to2, &hid))
        snprintf(put2, sizeof put2, "handle=%llu ", hid);
    result(hid && log_count(slog2, 1, "data put", put2, NULL) >= 1,
           "S1's log says it copied the handle (%s) to S2, and S2's log has its DATA_PUT", put2);

    /* INOUT: the result stays on the server it ran on; the copy on S1 is stale and freed. */
    enum { M = 1000 };
    double x[M], y[M], z[M];
    fill(x, M, 3);
    memcpy(y, x, sizeof x);
    grid_data_np *hx = NULL;
    rc = grid_data_put_np(&hx, s1, GRID_TYPE_DOUBLE, M, x);
    int frees = log_count(slog1, 0, "data free", NULL, NULL);
    if (!rc) rc = grid_call(inout1, M, y);  /* plain: y = 2x */
    if (!rc) rc = grid_call(inout2, M, hx); /* on S2 (copied there): 2x, kept on S2 */
    if (!rc) rc = grid_call(inout2, M, hx); /* 4x on S2 */
    if (!rc) rc = grid_call(inout1, M, y);  /* y = 4x */
    if (!rc) rc = grid_data_get_np(hx, z, M);
    result(rc == GRID_OK && memcmp(y, z, sizeof y) == 0 && strcmp(grid_data_where_np(hx), s2) == 0,
           "INOUT with a handle twice: 4x, now held by %s", grid_data_where_np(hx));
    if (rc) diag("%s", grid_last_error());
    result(log_count(slog1, frees + 1, "data free", NULL, NULL) > frees,
           "the stale copy on S1 was freed after the KEEP on S2");
    /* The same asynchronously, back on S1: S2's copy is stale once the call is waited for. */
    int frees2 = log_count(slog2, 0, "data free", NULL, NULL);
    int id = rc ? -1 : grid_call_async(inout1, M, hx);
    rc = id > 0 ? grid_wait(id) : -id;
    int freed2 = log_count(slog2, frees2 + 1, "data free", NULL, NULL) > frees2; /* by grid_wait */
    if (!rc) rc = grid_call(inout1, M, y);                                       /* y = 8x */
    if (!rc) rc = grid_data_get_np(hx, z, M);
    result(rc == GRID_OK && memcmp(y, z, sizeof y) == 0 && strcmp(grid_data_where_np(hx), s1) == 0 && freed2,
           "an asynchronous INOUT with the handle: 8x on S1, and grid_wait freed S2's stale copy");
    if (rc) diag("%s", grid_last_error());
    grid_data_free_np(hx);
    grid_data_free_np(hc);
    grid_data_free_np(hb);
    free(A);
    free(B);
    free(C);
    free(C2);
    free(D);
    free(D2);
}

/* ---- what the transaction engine uses (grc_client.h): lookup, bytes on a server, a
 * request's sites, and a binding the engine makes itself (KEEP and RETURN) */
static void internals(void) {
    enum { N = 40 };
    size_t nn = (size_t)N * N;
    double *A = malloc(nn * sizeof *A), *B = malloc(nn * sizeof *B), *C = calloc(nn, sizeof *C),
           *C2 = calloc(nn, sizeof *C2), *C3 = calloc(nn, sizeof *C3);
    fill(A, (int)nn, 5);
    fill(B, (int)nn, 6);
    grid_data_np *hb = NULL, *hc = NULL;
    int rc = grid_data_put_np(&hb, s1, GRID_TYPE_DOUBLE, nn, B);
    if (!rc) rc = grid_call(url1, N, A, B, C);
    char h1[256], h2[256];
    int p1 = 0, p2 = 0;
    sscanf(s1, "%255[^:]:%d", h1, &p1);
    sscanf(s2, "%255[^:]:%d", h2, &p2);
    grc_data *d = NULL;
    result(!rc && grc_data_lookup(hb, &d) && d == hb && !grc_data_lookup(A, NULL) &&
               grc_data_bytes_on(d, h1, p1) == nn * sizeof(double) && grc_data_bytes_on(d, h2, p2) == 0,
           "grc_data_lookup knows the handle and not an array; grc_data_bytes_on says it is on S1 only");
    /* A request for S2 with the handle: its input lies on S1. */
    int n = N;
    void *argv[4] = {&n, A, hb, C2};
    grc_args args = {NULL, argv, 4};
    grc_config cfg;
    grc_req q;
    gr_err e;
    gr_clearerr(&e);
    rc = grc_req_start(&q, url2, &args, &cfg, &e);
    grc_data_site sites[4];
    size_t ns = rc ? 0 : grc_req_data_sites(&q, sites, 4);
    result(!rc && q.nbind == 1 && q.bind[2].h == hb && q.bind[2].flags == GRP_REF_IN && ns == 1 &&
               strcmp(sites[0].host, h1) == 0 && sites[0].port == p1 && sites[0].bytes == nn * sizeof(double),
           "a prepared request binds the handle (IN) and says its %zu bytes lie on S1", nn * sizeof(double));
    if (!rc) grc_req_free(&q);
    /* The engine binds C to a new handle, KEEP and RETURN: the buffer and the handle get it. */
    argv[2] = B;
    if (!rc) rc = grid_data_new_np(&hc, GRID_TYPE_DOUBLE, nn);
    if (!rc) rc = grc_req_start(&q, url1, &args, &cfg, &e);
    int started = !rc;
    if (!rc) rc = grc_req_bind(&q, 3, hc, GRP_REF_KEEP | GRP_REF_RETURN, &e);
    if (!rc) rc = grc_req_run(&q, &cfg, grc_interrupt_count(), &e);
    if (started) grc_req_free(&q);
    if (!rc) rc = grid_data_get_np(hc, C3, nn);
    result(!rc && same_mat(C, C2, nn) && same_mat(C, C3, nn) &&
               grc_data_bytes_on(hc, h1, p1) == nn * sizeof(double),
           "grc_req_bind KEEP|RETURN: the buffer and the handle on S1 both hold C");
    if (rc) diag("%s / %s", e.msg, grid_last_error());
    /* A binding that breaks the rules is refused, naming the parameter. */
    rc = grc_req_start(&q, url1, &args, &cfg, &e);
    int brc = rc ? -1 : grc_req_bind(&q, 1, hc, GRP_REF_KEEP, &e);
    result(brc == GRID_ERR_ARGS && strstr(e.msg, "'A'"), "grc_req_bind refuses KEEP on an IN parameter: %s",
           e.msg);
    if (!rc) grc_req_free(&q);
    grid_data_free_np(hb);
    grid_data_free_np(hc);
    free(A);
    free(B);
    free(C);
    free(C2);
    free(C3);
}

/* ---- calls routed by a metaserver (DATA_META): a handle put with no server waits on
 * the client and goes to the first call's server; later calls send none of it */
static void routed(void) {
    const char *meta = getenv("DATA_META");
    if (!meta || !*meta) return;
    char mh[256];
    int mp = 0;
    sscanf(meta, "%255[^:]:%d", mh, &mp);
    enum { N = 100 };
    size_t nn = (size_t)N * N;
    double *A = malloc(nn * sizeof *A), *B = malloc(nn * sizeof *B), *C = calloc(nn, sizeof *C),
           *C2 = calloc(nn, sizeof *C2);
    fill(A, (int)nn, 7);
    fill(B, (int)nn, 8);
    int rc = grid_set_metaserver_np(mh, mp);
    /* Both servers register with the metaserver within a few heartbeats. */
    for (int i = 0; i < 100 && !rc; i++) {
        rc = grid_call("linalg/dmmul", N, A, B, C);
        if (rc) {
            sleep_ms(100);
            rc = i < 99 ? 0 : rc;
        } else {
            break;
        }
    }
    grid_data_np *hb = NULL, *hf = NULL;
    if (!rc) rc = grid_data_put_np(&hb, NULL, GRID_TYPE_DOUBLE, nn, B);
    int waits = !rc && grid_data_where_np(hb)[0] == '\0';
    if (!rc) rc = grid_call("linalg/dmmul", N, A, hb, C2);
    char first[300];
    snprintf(first, sizeof first, "%s", hb ? grid_data_where_np(hb) : "");
    result(!rc && waits && same_mat(C, C2, nn) && (strcmp(first, s1) == 0 || strcmp(first, s2) == 0),
           "under a metaserver a handle put with no server waits on the client, then goes to the call's "
           "server (%s)",
           first);
    if (rc) diag("%s", grid_last_error());
    unsigned long long t0 = sent_bytes();
    for (int i = 0; i < 4 && !rc; i++)
        rc = grid_call("linalg/dmmul", N, A, hb, C2);
    unsigned long long per = (sent_bytes() - t0) / 4;
    result(!rc && same_mat(C, C2, nn) && per < nn * sizeof(double) + 4096,
           "routed calls with the handle send %llu bytes each (A: %zu, B: %zu)", per, nn * sizeof(double),
           nn * sizeof(double));
    if (rc) diag("%s", grid_last_error());
    rc = grid_data_put_np(&hf, "linalg/dmmul", GRID_TYPE_DOUBLE, nn, B);
    const char *w = hf ? grid_data_where_np(hf) : "";
    result(!rc && (strcmp(w, s1) == 0 || strcmp(w, s2) == 0),
           "a put naming a function goes to its server (%s)", w);
    grid_data_free_np(hb);
    grid_data_free_np(hf);
    grid_set_metaserver_np(NULL, 0);
    free(A);
    free(B);
    free(C);
    free(C2);
}

/* ---- the memory limit of S2 */
static void memory_limit(void) {
    const char *lim = getenv("DATA_S2_MEMORY");
    size_t n = lim ? (size_t)strtoull(lim, NULL, 10) / sizeof(double) + 1024 : 0;
    double *big = n ? calloc(n, sizeof *big) : NULL;
    grid_data_np *h = NULL;
    int rc = big ? grid_data_put_np(&h, s2, GRID_TYPE_DOUBLE, n, big) : -1;
    const char *m = grid_last_error();
    result(rc == GRID_ERR_LIMIT && h == NULL && strstr(m, "--data-memory"),
           "a put over S2's --data-memory is refused: %s", m);
    free(big);
}

/* ---- a two-phase call takes arrays, not handles (its job outlives the session) */
static void submit_refuses_handles(void) {
    double x[4] = {1, 2, 3, 4}, y[4];
    grid_data_np *h = NULL;
    int rc = grid_data_put_np(&h, s1, GRID_TYPE_DOUBLE, 4, x);
    char job[GRID_JOB_ID_MAX_NP], url[300];
    snprintf(url, sizeof url, "gridrpc://%s/test/echo_double", s1);
    if (!rc) rc = grid_submit_np(job, sizeof job, url, 4, h, y);
    const char *m = grid_last_error();
    result(rc == GRID_ERR_ARGS && strstr(m, "argument 2 ('in')") && strstr(m, "two-phase"),
           "grid_submit_np refuses a data handle, naming the argument: %s", m);
    grid_data_free_np(h);
}

/* ---- ending the session */
static void session_end(void) {
    double x[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, y[10];
    grid_data_np *h1 = NULL, *h2 = NULL;
    int rc = grid_data_put_np(&h1, s1, GRID_TYPE_DOUBLE, 10, x);
    if (!rc) rc = grid_data_put_np(&h2, s2, GRID_TYPE_DOUBLE, 10, x);
    int e1 = log_count(slog1, 0, "data session", "ended", NULL),
        e2 = log_count(slog2, 0, "data session", "ended", NULL);
    grpc_finalize(); /* initialized in dmmul_in */
    result(rc == GRID_OK && log_count(slog1, e1 + 1, "data session", "ended", NULL) > e1 &&
               log_count(slog2, e2 + 1, "data session", "ended", NULL) > e2,
           "grpc_finalize ends the data session on both servers (their logs say so)");
    rc = grid_data_get_np(h1, y, 10);
    result(rc == GRID_ERR_ARGS && strstr(grid_last_error(), "session ended"),
           "a handle after the session ended is refused: %s", grid_last_error());
    result(grid_data_free_np(h1) == GRID_OK && grid_data_free_np(h2) == GRID_OK, "and is still freed");
    /* A new session after that; grid_reset_np ends it too. */
    rc = grid_data_put_np(&h1, s1, GRID_TYPE_DOUBLE, 10, x);
    e1 = log_count(slog1, 0, "data session", "ended", NULL);
    grid_reset_np();
    result(rc == GRID_OK && log_count(slog1, e1 + 1, "data session", "ended", NULL) > e1,
           "grid_reset_np ends the new session on S1");
    grid_data_free_np(h1);
}

/* ---- the only server holding a handle dies */
static void lost(void) {
    const char *pid = getenv("DATA_S1_PID");
    double x[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    grid_data_np *h = NULL;
    int rc = grid_data_put_np(&h, s1, GRID_TYPE_DOUBLE, 10, x);
    if (!rc && pid) kill((pid_t)atoi(pid), SIGKILL);
    sleep_ms(200);
    if (!rc) rc = grid_call(inout2, 10, h);
    const char *m = grid_last_error();
    char where[300];
    snprintf(where, sizeof where, "%s", s1);
    result(rc == GRID_ERR_CONN_LOST && strstr(m, "lost") && strstr(m, where) && strstr(m, "data handle"),
           "a handle whose only server died is lost, naming it and the server: %s", m);
    grid_data_free_np(h);
}

/* ---- large arrays: above GR_SHBUF_MIN (256 KiB) the server receives them into shared
 * buffers that the executor maps, and keeps a KEEP output in the same buffer */
static void shared_buffers(void) {
    enum { N = 200, X = 65536 }; /* 320,000 bytes a matrix, 512 KiB a vector */
    size_t nn = (size_t)N * N;
    char url[300];
    double *A = malloc(nn * sizeof *A), *B = malloc(nn * sizeof *B), *C = malloc(nn * sizeof *C),
           *C2 = malloc(nn * sizeof *C2), *ref = malloc(nn * sizeof *ref);
    fill(A, (int)nn, 3);
    fill(B, (int)nn, 4);
    for (size_t i = 0; i < nn; i++) { /* dmmul's row-major product, computed here */
        size_t r = i / N, c = i % N;
        double sum = 0;
        for (size_t k = 0; k < (size_t)N; k++)
            sum += A[r * N + k] * B[k * N + c];
        ref[i] = sum;
    }
    int rc = grid_call(url1, N, A, B, C);
    result(rc == GRID_OK && same_mat(ref, C, nn),
           "dmmul of %dx%d matrices (IN and OUT in shared buffers) is right", N, N);
    if (rc) diag("%s", grid_last_error());
    /* OUT kept on the server (the shared buffer becomes the handle's), then the IN of
     * the next call (handed to the executor read-only). */
    grid_data_np *hc = NULL, *hb = NULL;
    rc = grid_data_new_np(&hc, GRID_TYPE_DOUBLE, nn);
    if (!rc) rc = grid_data_put_np(&hb, s1, GRID_TYPE_DOUBLE, nn, B);
    if (!rc) rc = grid_call(url1, N, A, hb, hc);
    /* Another call's executor crashes on the same server: the data store is the server's,
     * and what the executors mapped of it is untouched. */
    snprintf(url, sizeof url, "gridrpc://%s/test/crash", s1);
    int crc = grid_call(url, 1);
    result(crc == GRID_ERR_CRASHED, "a crashing call on the same server fails alone (%s)",
           grid_error_string(crc));
    memset(C2, 0, nn * sizeof *C2);
    int rc2 = rc ? rc : grid_data_get_np(hc, C2, nn);
    result(rc == GRID_OK && rc2 == GRID_OK && same_mat(ref, C2, nn),
           "a large OUT kept as a handle reads back right, after that crash");
    if (rc || rc2) diag("%s", grid_last_error());
    double *D = malloc(nn * sizeof *D), *D2 = malloc(nn * sizeof *D2);
    rc = grid_call(url1, N, C2, B, D);
    if (!rc) rc = grid_call(url1, N, hc, hb, D2);
    result(rc == GRID_OK && same_mat(D, D2, nn),
           "a large kept handle and a data handle are the INs of the next call");
    if (rc) diag("%s", grid_last_error());
    /* A function that scribbles on its input: each call sees the handle's data, and the
     * handle still holds it after. */
    double *x = malloc(X * sizeof *x), *back = malloc(X * sizeof *back), want = 0;
    for (int i = 0; i < X; i++) {
        x[i] = (double)(i % 17);
        want += x[i];
    }
    grid_data_np *hx = NULL;
    double sum1 = 0, sum2 = 0, sum3 = 0;
    snprintf(url, sizeof url, "gridrpc://%s/test/scribble_in", s1);
    rc = grid_data_put_np(&hx, s1, GRID_TYPE_DOUBLE, X, x);
    if (!rc) rc = grid_call(url, X, hx, &sum1);
    if (!rc) rc = grid_call(url, X, hx, &sum2);
    if (!rc) rc = grid_data_get_np(hx, back, X);
    result(rc == GRID_OK && sum1 == want && sum2 == want && memcmp(back, x, X * sizeof *x) == 0,
           "a function that overwrites a large IN handle changes no one's data (sums %g, %g of %g)", sum1,
           sum2, want);
    if (rc) diag("%s", grid_last_error());
    rc = grid_call(url, X, x, &sum3);
    result(rc == GRID_OK && sum3 == want && x[X - 1] == (double)((X - 1) % 17),
           "the same with a plain large IN: the caller's array is untouched");
    /* INOUT whole, and INOUT of which only a part crosses (the rest stays the caller's). */
    for (int i = 0; i < X; i++)
        x[i] = i;
    rc = grid_call(inout1, X, x);
    int ok = rc == GRID_OK;
    for (int i = 0; i < X && ok; i++)
        ok = x[i] == 2.0 * i;
    result(ok, "inout_double on %d doubles doubles each", X);
    if (rc) diag("%s", grid_last_error());
    for (int i = 0; i < X; i++)
        x[i] = i;
    snprintf(url, sizeof url, "gridrpc://%s/test/subrange", s1);
    rc = grid_call(url, X, 1000, X - 1000, x);
    ok = rc == GRID_OK;
    for (int i = 0; i < X && ok; i++)
        ok = x[i] == (i >= 1000 && i < X - 1000 ? i + 1.0 : (double)i);
    result(ok, "subrange of a large INOUT changes exactly its part");
    if (rc) diag("%s", grid_last_error());
    /* The server keeps freed large buffers for the next array of their size: one that
     * is not overwritten whole must still start zeroed (work_zero fills its WORK array
     * with 1 after it counted). */
    snprintf(url, sizeof url, "gridrpc://%s/test/work_zero", s1);
    int nz[3] = {-1, -1, -1};
    for (int k = 0; k < 3 && !rc; k++)
        rc = grid_call(url, X, NULL, &nz[k]); /* WORK: nothing crosses */
    result(rc == GRID_OK && nz[0] == 0 && nz[1] == 0 && nz[2] == 0,
           "a large WORK array starts zeroed in every call, reused memory or not (%d, %d, %d not zero)",
           nz[0], nz[1], nz[2]);
    if (rc) diag("%s", grid_last_error());
    grid_data_free_np(hx);
    grid_data_free_np(hc);
    grid_data_free_np(hb);
    free(A), free(B), free(C), free(C2), free(ref), free(D), free(D2), free(x), free(back);
}

int main(void) {
    s1 = getenv("DATA_S1");
    s2 = getenv("DATA_S2");
    slog1 = getenv("DATA_LOG1");
    slog2 = getenv("DATA_LOG2");
    if (!s1 || !s2 || !slog1 || !slog2) {
        printf("1..0 # SKIP run through tests/dataclient/run.sh (DATA_S1, DATA_S2, DATA_LOG1, DATA_LOG2)\n");
        return 0;
    }
    snprintf(url1, sizeof url1, "gridrpc://%s/linalg/dmmul", s1);
    snprintf(url2, sizeof url2, "gridrpc://%s/linalg/dmmul", s2);
    snprintf(inout1, sizeof inout1, "gridrpc://%s/test/inout_double", s1);
    snprintf(inout2, sizeof inout2, "gridrpc://%s/test/inout_double", s2);
    round_trips();
    dmmul_in();
    shared_buffers();
    internals();
    routed();
    memory_limit();
    submit_refuses_handles();
    session_end();
    lost();
    printf("1..%d\n", tests);
    return failed ? 1 : 0;
}
