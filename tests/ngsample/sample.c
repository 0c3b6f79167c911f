/* sample.c: a client written the way Ninf-G 5 samples are: it includes only "grpc.h"
 * (which must bring assert, malloc, exit, strcmp and getopt's optind), reads the
 * configuration file named on its command line, and calls library functions through
 * handles: sync, async with grpc_wait_all, an array of handles, a handle by tag, and
 * handles made from attributes in each argument transfer mode.
 * Built by tests/ngsample/run.sh with the flags pkg-config gives; prints "OK". */
#include "grpc.h"

#define N 4
#define NCALLS 8

static int failed;

static void expect(int cond, const char *what) {
    if (!cond) {
        fprintf(stderr, "FAILED: %s\n", what);
        failed = 1;
    }
}

/* C = A * B on the default server. */
static void matrix(void) {
    grpc_function_handle_t handle;
    double *a = malloc(N * N * sizeof(double)), *b = malloc(N * N * sizeof(double));
    double *c = malloc(N * N * sizeof(double));
    int i;
    assert(a && b && c);
    for (i = 0; i < N * N; i++) {
        a[i] = i;
        b[i] = (i % (N + 1)) == 0; /* the identity */
        c[i] = -1;
    }
    if (grpc_function_handle_default(&handle, "linalg/dmmul") != GRPC_NO_ERROR) {
        grpc_perror_np("grpc_function_handle_default");
        exit(2);
    }
    if (grpc_call(&handle, N, a, b, c) != GRPC_NO_ERROR) grpc_perror_np("grpc_call");
    for (i = 0; i < N * N; i++)
        expect(c[i] == a[i], "dmmul result");
    grpc_function_handle_destruct(&handle);
    free(a);
    free(b);
    free(c);
}

/* NCALLS asynchronous calls through an array of handles, then grpc_wait_all. */
static void parallel(void) {
    grpc_function_handle_t handles[NCALLS];
    grpc_sessionid_t ids[NCALLS];
    double x[NCALLS][N], y[NCALLS][N], dot[NCALLS];
    int i, k;
    for (k = 0; k < NCALLS; k++) {
        if (grpc_function_handle_default(&handles[k], "linalg/ddot") != GRPC_NO_ERROR) {
            grpc_perror_np("grpc_function_handle_default");
            exit(2);
        }
        for (i = 0; i < N; i++) {
            x[k][i] = k;
            y[k][i] = i;
        }
        dot[k] = -1;
        if (grpc_call_async(&handles[k], &ids[k], N, x[k], y[k], &dot[k]) != GRPC_NO_ERROR)
            grpc_perror_np("grpc_call_async");
    }
    if (grpc_wait_all() != GRPC_NO_ERROR) grpc_perror_np("grpc_wait_all");
    for (k = 0; k < NCALLS; k++) {
        expect(dot[k] == k * (0 + 1 + 2 + 3), "ddot result");
        expect(grpc_get_error(ids[k]) == GRPC_NO_ERROR, "grpc_get_error after wait");
        grpc_function_handle_destruct(&handles[k]);
    }
}

/* A string through the server tagged "echo", and a timed sleep by tag. */
static void tagged(void) {
    grpc_function_handle_t handle;
    char *out = NULL;
    grpc_sessionid_t id;
    if (grpc_function_handle_init(&handle, "echo", "test/echo_string") != GRPC_NO_ERROR) {
        grpc_perror_np("grpc_function_handle_init");
        exit(2);
    }
    if (grpc_call(&handle, "ninf", &out) != GRPC_NO_ERROR) grpc_perror_np("grpc_call");
    expect(out && strcmp(out, "ninf") == 0, "echo_string result");
    free(out);
    grpc_function_handle_destruct(&handle);
    grpc_function_handle_init(&handle, "echo", "test/sleep");
    grpc_call_async(&handle, &id, 0.05);
    while (grpc_probe(id) == GRPC_NOT_COMPLETED)
        usleep(1000);
    expect(grpc_wait(id) == GRPC_NO_ERROR, "sleep");
    grpc_function_handle_destruct(&handle);
}

/* Ninf-G's argument transfer modes through handle attributes, as its diag programs
 * test them: for each mode, a short call then two long ones, then one probe of the
 * short one after it had time to finish: it is done, never still waiting to be sent. */
static void transfer_modes(void) {
    grpc_argument_transfer_t_np modes[3] = {GRPC_ARGUMENT_TRANSFER_WAIT, GRPC_ARGUMENT_TRANSFER_NOWAIT,
                                            GRPC_ARGUMENT_TRANSFER_COPY};
    int m;
    for (m = 0; m < 3; m++) {
        grpc_handle_attr_t_np attr;
        grpc_function_handle_t handle;
        grpc_sessionid_t id[3];
        if (grpc_handle_attr_initialize_np(&attr) != GRPC_NO_ERROR ||
            grpc_handle_attr_set_np(&attr, GRPC_HANDLE_ATTR_FUNCNAME, (void *)"test/sleep") !=
                GRPC_NO_ERROR ||
            grpc_handle_attr_set_np(&attr, GRPC_HANDLE_ATTR_WAIT_ARG_TRANSFER, (void *)&modes[m]) !=
                GRPC_NO_ERROR ||
            grpc_function_handle_init_with_attr_np(&handle, &attr) != GRPC_NO_ERROR) {
            grpc_perror_np("handle attributes");
            exit(2);
        }
        grpc_handle_attr_destruct_np(&attr);
        grpc_call_async(&handle, &id[0], 0.05);
        grpc_call_async(&handle, &id[1], 0.6);
        grpc_call_async(&handle, &id[2], 0.6);
        usleep(300000);
        expect(grpc_probe(id[0]) == GRPC_NO_ERROR, "the short call is done when probed once");
        expect(grpc_wait_all() == GRPC_NO_ERROR, "transfer mode calls");
        grpc_function_handle_destruct(&handle);
    }
}

int main(int argc, char *argv[]) {
    int c;
    while ((c = getopt(argc, argv, "v")) != -1)
        if (c != 'v') exit(2);
    if (grpc_initialize(optind < argc ? argv[optind] : NULL) != GRPC_NO_ERROR) {
        fprintf(stderr, "grpc_initialize: %s\n", grpc_last_error_np());
        exit(2);
    }
    matrix();
    parallel();
    tagged();
    transfer_modes();
    grpc_finalize();
    if (!failed) printf("OK\n");
    return failed;
}
