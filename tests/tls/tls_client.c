/* tls_client.c: the client side of tests/tls/tls.sh, through the public API.
 *
 *   tls-client BASE MODE [CA]
 *
 * BASE is prepended to function names ("gridrpcs://127.0.0.1:7000/" or "" to route
 * through GRIDRPC_METASERVER); CA, when given, is set with grid_set_tls_ca_np. MODE:
 *   null   one null call; prints "ok", or the error's name and message (exit 1)
 *   full   sync, async (4 in flight on one connection) and a 16 MiB double array both
 *          ways (checked element by element), then "ok"
 *   cb     a call whose server calls back into this client 7 times (callback.so)
 * The script checks the printed messages; this program decides only what worked. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gridrpc.h"

static char base[512];

static const char *fn(const char *name) {
    static char buf[700];
    snprintf(buf, sizeof buf, "%s%s", base, name);
    return buf;
}

static int failed(const char *what, int rc) {
    printf("%s: %s: %s\n", what, grid_error_name(rc), grid_last_error());
    return 1;
}

static int full(void) {
    int rc = grid_call(fn("test/null_call"));
    if (rc != GRID_OK) return failed("sync", rc);

    /* Several calls in flight on one pipelined connection: the reader thread and the
     * writers share the TLS session. */
    enum { K = 4, SMALL = 1000 };
    static double in[K][SMALL], out[K][SMALL];
    int ids[K];
    for (int k = 0; k < K; k++) {
        for (int i = 0; i < SMALL; i++)
            in[k][i] = k * 10000.0 + i;
        ids[k] = grid_call_async(fn("test/echo_double"), SMALL, in[k], out[k]);
        if (ids[k] <= 0) return failed("async start", -ids[k]);
    }
    for (int k = 0; k < K; k++) {
        rc = grid_wait(ids[k]);
        if (rc != GRID_OK) {
            printf("async %d: %s: %s\n", k, grid_error_name(rc), grid_call_message_np(ids[k]));
            return 1;
        }
        for (int i = 0; i < SMALL; i++)
            if (out[k][i] != in[k][i]) {
                printf("async %d: element %d is %g, not %g\n", k, i, out[k][i], in[k][i]);
                return 1;
            }
    }

    /* 16 MiB each way: many TLS records, partial writes, the deadline per chunk. */
    const int n = 2 * 1024 * 1024;
    double *a = malloc((size_t)n * sizeof *a), *b = malloc((size_t)n * sizeof *b);
    if (!a || !b) return 1;
    for (int i = 0; i < n; i++) {
        a[i] = (double)i * 0.5 - 3.0;
        b[i] = 0;
    }
    rc = grid_call(fn("test/echo_double"), n, a, b);
    if (rc != GRID_OK) return failed("16 MiB", rc);
    for (int i = 0; i < n; i++)
        if (b[i] != a[i]) {
            printf("16 MiB: element %d is %g, not %g\n", i, b[i], a[i]);
            return 1;
        }
    free(a);
    free(b);
    printf("ok\n");
    return 0;
}

static int ticks;
static void tick(void) {
    ticks++;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: tls-client BASE null|full|cb [CA]\n");
        return 2;
    }
    snprintf(base, sizeof base, "%s", argv[1]);
    grid_set_timeouts_np(5, 60);
    if (argc > 3) {
        int rc = grid_set_tls_ca_np(argv[3]);
        if (rc != GRID_OK) return failed("grid_set_tls_ca_np", rc);
    }
    if (strcmp(argv[2], "null") == 0) {
        int rc = grid_call(fn("test/null_call"));
        if (rc != GRID_OK) return failed("null", rc);
        printf("ok\n");
        return 0;
    }
    if (strcmp(argv[2], "full") == 0) return full();
    if (strcmp(argv[2], "cb") == 0) {
        int count[1] = {0};
        int rc = grid_call(fn("callback/cb_zero"), 7, count, tick);
        if (rc != GRID_OK) return failed("callback", rc);
        if (ticks != 7 || count[0] != 7) {
            printf("callback: ran %d times, the server counted %d; 7 expected\n", ticks, count[0]);
            return 1;
        }
        printf("ok\n");
        return 0;
    }
    fprintf(stderr, "tls-client: unknown mode '%s'\n", argv[2]);
    return 2;
}
