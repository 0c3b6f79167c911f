/* cbdiag.c: a client in the style of Ninf-G's diag programs (grpc.h only, handles from
 * a Ninf-G client.conf) for issue 10 item 8, client callbacks:
 *   cbdiag CONFIG many|two|zero|string|async|max|null|late|stack|cancel|big|inout|method|crash|inptr
 * Each callback receives one pointer per parameter (IN scalars by address; strings as
 * char *, OUT strings as char **). Prints "OK", or one "FAILED: ..." line per problem
 * (exit status 1); 2 when it cannot start. */
#include "diag_util.h"

#include <pthread.h>

/* ---- many: a callback called many times with matrices both ways */

#define N 8
#define TIMES 25
static int many_calls, many_bad_t;
static pthread_t many_thread;

/* d = 2 * c, and the invocations arrive in order 1, 2, ... */
static void many_cb(int *t, double *c, double *d) {
    many_calls++;
    if (*t != many_calls) many_bad_t = 1;
    many_thread = pthread_self();
    for (int i = 0; i < N * N; i++)
        d[i] = 2 * c[i];
}

static void fill(double *a) {
    for (int i = 0; i < N * N; i++)
        a[i] = i * 0.5 - 3;
}

/* out = sum over t = 1..TIMES of 2 * t * a = TIMES * (TIMES + 1) * a. */
static int many_right(const double *a, const double *out) {
    for (int i = 0; i < N * N; i++)
        if (out[i] != (double)TIMES * (TIMES + 1) * a[i]) return 0;
    return 1;
}

static void many(void) {
    grpc_function_handle_t h;
    double a[N * N], out[N * N];
    fill(a);
    handle(&h, "callback/cb_many");
    many_calls = 0;
    if (call_ok(grpc_call(&h, N, TIMES, a, out, many_cb), "cb_many")) {
        expect(many_calls == TIMES, "cb_many calls its callback 25 times");
        expect(!many_bad_t, "the callback's IN scalar counts its invocations");
        expect(many_right(a, out), "cb_many sums what the callback returned");
        expect(pthread_equal(many_thread, pthread_self()),
               "a synchronous call's callback runs on the caller's thread");
    }
    grpc_function_handle_destruct(&h);
}

/* ---- big: matrices of 300 x 300 (720 KB) both ways, several times */

#define BIG 300
static int big_calls;
static void big_cb(int *t, double *c, double *d) {
    big_calls++;
    for (int i = 0; i < BIG * BIG; i++)
        d[i] = c[i] / *t; /* back to a */
}

static void big(void) {
    grpc_function_handle_t h;
    double *a = malloc(sizeof(double) * BIG * BIG), *out = malloc(sizeof(double) * BIG * BIG);
    for (int i = 0; i < BIG * BIG; i++)
        a[i] = (i % 977) * 0.25;
    handle(&h, "callback/cb_many");
    if (call_ok(grpc_call(&h, BIG, 4, a, out, big_cb), "cb_many 300 x 300")) {
        int right = big_calls == 4;
        for (int i = 0; i < BIG * BIG; i++)
            right &= out[i] == 4 * a[i];
        expect(right, "four callbacks of 720 KB each way");
    }
    free(a);
    free(out);
    grpc_function_handle_destruct(&h);
}

/* ---- async: the same with grpc_call_async, three calls pipelined on one connection */

static pthread_mutex_t async_lock = PTHREAD_MUTEX_INITIALIZER;
static int async_calls;
static void async_cb(int *t, double *c, double *d) {
    (void)t;
    pthread_mutex_lock(&async_lock);
    async_calls++;
    if (pthread_equal(pthread_self(), many_thread)) many_bad_t = 1; /* many_thread: main here */
    pthread_mutex_unlock(&async_lock);
    for (int i = 0; i < N * N; i++)
        d[i] = 2 * c[i];
}

static void async(void) {
    grpc_function_handle_t h;
    grpc_sessionid_t id[3];
    static double a[3][N * N], out[3][N * N];
    handle(&h, "callback/cb_many");
    many_thread = pthread_self();
    many_bad_t = 0;
    for (int k = 0; k < 3; k++) {
        fill(a[k]);
        for (int i = 0; i < N * N; i++)
            a[k][i] *= k + 1;
        if (!call_ok(grpc_call_async(&h, &id[k], N, TIMES, a[k], out[k], async_cb), "cb_many async")) return;
    }
    if (call_ok(grpc_wait_all(), "grpc_wait_all")) {
        expect(async_calls == 3 * TIMES, "three async calls run 75 callbacks in all");
        for (int k = 0; k < 3; k++)
            expect(many_right(a[k], out[k]), "each async call gets its own callbacks' results");
        expect(!many_bad_t, "an async call's callbacks run on the library's reader thread, not the caller's");
    }
    grpc_function_handle_destruct(&h);
}

/* ---- two: two callbacks in one function */

static int f_calls, g_calls;
static void f_cb(int *k, double *v, double *w) {
    f_calls++;
    for (int i = 0; i < *k; i++)
        w[i] = v[i] + 1;
}
static void g_cb(double *v, double *w) {
    g_calls++;
    for (int i = 0; i < 5; i++)
        w[i] = v[i] * 3;
}

static void two(void) {
    grpc_function_handle_t h;
    double x[5] = {1, 2, 3, 4, 5}, y[5] = {0};
    handle(&h, "callback/cb_two");
    if (call_ok(grpc_call(&h, 5, x, y, f_cb, g_cb), "cb_two")) {
        expect(f_calls == 1 && g_calls == 1, "cb_two calls each of its callbacks once");
        int right = 1;
        for (int i = 0; i < 5; i++)
            right &= y[i] == (x[i] + 1) * 3;
        expect(right, "cb_two returns g(f(x)) = (x + 1) * 3");
    }
    grpc_function_handle_destruct(&h);
}

/* ---- zero: a callback without parameters */

static int ticks;
static void tick(void) {
    ticks++;
}

static void zero(void) {
    grpc_function_handle_t h;
    int count[1] = {-1};
    handle(&h, "callback/cb_zero");
    if (call_ok(grpc_call(&h, 7, count, tick), "cb_zero")) {
        expect(ticks == 7, "cb_zero's callback ran 7 times");
        expect(count[0] == 7, "every callback returned 0 to the body");
    }
    grpc_function_handle_destruct(&h);
}

/* ---- crash: a function that crashes after its callbacks fails only its own call, and
 * the server runs the next one (its functions with callbacks run in executors) */

static void crash(void) {
    grpc_function_handle_t h;
    handle(&h, "callback/cb_crash");
    ticks = 0;
    grpc_error_t rc = grpc_call(&h, 3, tick);
    const char *why = grpc_last_error_np();
    expect(rc != GRPC_NO_ERROR && why && strstr(why, "crashed (signal 11") && strstr(why, "still up"),
           "cb_crash fails as a crash, the server still up");
    if (rc == GRPC_NO_ERROR || !why || !strstr(why, "crashed"))
        fprintf(stderr, "cb_crash: %s\n", why ? why : "");
    expect(ticks == 3, "its three callbacks ran before the crash");
    grpc_function_handle_destruct(&h);
    ticks = 0;
    zero();
}

/* ---- late: a callback called after its call ended is refused, not run */

static void late(void) {
    grpc_function_handle_t h;
    int count[1], rc[1] = {-2};
    handle(&h, "callback/cb_zero");
    call_ok(grpc_call(&h, 1, count, tick), "cb_zero");
    grpc_function_handle_destruct(&h);
    int before = ticks;
    handle(&h, "callback/cb_late");
    if (call_ok(grpc_call(&h, rc), "cb_late")) {
        expect(rc[0] == GRID_ERR_ARGS,
               "a callback called after its call ended returns GRID_ERR_ARGS to the body");
        expect(ticks == before, "nothing runs in the client for it");
    }
    grpc_function_handle_destruct(&h);
}

/* ---- null: the body calls a callback the client passed as NULL */

static void null(void) {
    grpc_function_handle_t h;
    int count[1];
    handle(&h, "callback/cb_zero");
    grpc_error_t rc = grpc_call(&h, 2, count, NULL);
    expect(rc == GRPC_OTHER_ERROR_CODE, "a call whose body calls a NULL callback fails (GRID_ERR_ARGS)");
    printf("%s\n", grpc_last_error_np());
    expect(strstr(grpc_last_error_np(), "tick") && strstr(grpc_last_error_np(), "NULL"),
           "the message names the callback and says it was NULL");
    if (diag_failed) fprintf(stderr, "  message: %s\n", grpc_last_error_np());
    /* The connection is still good. */
    ticks = 0;
    expect(grpc_call(&h, 3, count, tick) == GRPC_NO_ERROR && ticks == 3, "the next call runs its callbacks");
    /* A body that never calls it may get NULL. */
    expect(grpc_call(&h, 0, count, NULL) == GRPC_NO_ERROR,
           "NULL is fine for a callback the body does not call");
    grpc_function_handle_destruct(&h);
}

/* ---- string: string arguments both ways */

static char said[64];
static void say(char *msg, char **reply) {
    snprintf(said, sizeof said, "%s", msg ? msg : "(null)");
    *reply = "HELLO BACK"; /* the library copies it and never frees it */
}

static void string(void) {
    grpc_function_handle_t h;
    char *r = NULL;
    handle(&h, "callback/cb_string");
    if (call_ok(grpc_call(&h, "hello", &r, say), "cb_string")) {
        expect(strcmp(said, "hello") == 0, "the callback receives the body's string");
        expect(r && strcmp(r, "body got: HELLO BACK") == 0, "the body receives the callback's string");
        free(r);
    }
    grpc_function_handle_destruct(&h);
}

/* ---- max: a callback of 32 parameters */

#define M 6
static int max_ok;
static void many32(double *a0, double *a1, double *a2, double *a3, double *a4, double *a5, double *a6,
                   double *a7, double *a8, double *a9, double *a10, double *a11, double *a12, double *a13,
                   double *a14, double *a15, double *a16, double *a17, double *a18, double *a19, double *a20,
                   double *a21, double *a22, double *a23, double *a24, double *a25, double *a26, double *a27,
                   double *a28, double *a29, double *a30, double *r) {
    double *a[31] = {a0,  a1,  a2,  a3,  a4,  a5,  a6,  a7,  a8,  a9,  a10, a11, a12, a13, a14, a15,
                     a16, a17, a18, a19, a20, a21, a22, a23, a24, a25, a26, a27, a28, a29, a30};
    max_ok = 1;
    for (int i = 0; i < M; i++) {
        r[i] = 0;
        for (int k = 0; k < 31; k++) {
            if (a[k][i] != k + i) max_ok = 0; /* each argument in its place */
            r[i] += a[k][i];
        }
    }
}

static void max(void) {
    grpc_function_handle_t h;
    double s[1] = {0};
    handle(&h, "callback/cb_max");
    if (call_ok(grpc_call(&h, M, s, many32), "cb_max")) {
        expect(max_ok, "all 31 IN arrays arrive, each in its place");
        /* sum over i < 6, k < 31 of (k + i) = 6 * 465 + 31 * 15 */
        expect(s[0] == 6 * 465 + 31 * 15, "the body receives the 32nd (OUT) argument");
    }
    grpc_function_handle_destruct(&h);
}

/* ---- inout: INOUT arguments and files through callbacks */

static void step_cb(int *k, double *v) {
    *k += 1;
    for (int i = 0; i < 4; i++)
        v[i] *= 2;
}

static char copy_saw[64];
static void copy_cb(char *src, char *dst) {
    FILE *in = fopen(src, "r"), *out = fopen(dst, "w");
    size_t got = in ? fread(copy_saw, 1, sizeof copy_saw - 1, in) : 0;
    copy_saw[got] = 0;
    if (out) fprintf(out, "client read '%s'", copy_saw);
    if (in) fclose(in);
    if (out) fclose(out);
}

static void inout(void) {
    grpc_function_handle_t h;
    int total[1] = {0};
    char *text = NULL;
    handle(&h, "callback/cb_inout");
    if (call_ok(grpc_call(&h, 4, total, &text, step_cb, copy_cb), "cb_inout")) {
        /* k: 5 + 1; v: (0 + 1 + 2 + 3) * 2 */
        expect(total[0] == 6 + 12, "INOUT arguments go to the client and come back");
        expect(strcmp(copy_saw, "from the body") == 0, "the client's function reads the body's file");
        expect(text && strcmp(text, "client read 'from the body'") == 0,
               "the body reads the file the client wrote");
        if (diag_failed)
            fprintf(stderr, "  total %d, saw '%s', text '%s'\n", total[0], copy_saw, text ? text : "(null)");
        free(text);
    }
    grpc_function_handle_destruct(&h);
}

/* ---- method: a remote object's method with a callback, sync and async */

static double asked_seen[4];
static int asks;
static void ask_cb(int *k, double *seen, double *v) {
    int i = __atomic_fetch_add(&asks, 1, __ATOMIC_SEQ_CST);
    if (i < 4) asked_seen[i] = seen[0];
    for (int j = 0; j < *k; j++)
        v[j] = j + 1; /* 1 + 2 + ... + k */
}

static void method(void) {
    grpc_object_handle_t_np o;
    double now[1] = {0};
    if (grpc_object_handle_default_np(&o, "callback/acc") != GRPC_NO_ERROR) {
        fprintf(stderr, "FAILED: object handle: %s\n", grpc_last_error_np());
        diag_failed = 1;
        return;
    }
    if (call_ok(grpc_invoke_np(&o, "add_from", 3, now, ask_cb), "add_from 3"))
        expect(now[0] == 6 && asked_seen[0] == 0, "the method's callback runs in the client: total 6");
    if (call_ok(grpc_invoke_np(&o, "add_from", 4, now, ask_cb), "add_from 4"))
        expect(now[0] == 16 && asked_seen[1] == 6, "the state persists and the callback sees it: total 16");
    grpc_sessionid_t id;
    if (call_ok(grpc_invoke_async_np(&o, "add_from", &id, 2, now, ask_cb), "add_from async") &&
        call_ok(grpc_wait(id), "wait add_from"))
        expect(now[0] == 19 && asked_seen[2] == 16, "an async invocation's callback runs too: total 19");
    expect(__atomic_load_n(&asks, __ATOMIC_SEQ_CST) == 3, "one callback per invocation");
    grpc_object_handle_destruct_np(&o);
}

/* ---- stack: a callback pushed on a Ninf-G argument stack */

static void stack(void) {
    grpc_function_handle_t h;
    int times = 4, count[1] = {0};
    handle(&h, "callback/cb_zero");
    grpc_arg_stack_t *st = grpc_arg_stack_new(3);
    grpc_arg_stack_push_arg(st, &times);
    grpc_arg_stack_push_arg(st, count);
    grpc_arg_stack_push_arg(st, (void *)tick);
    ticks = 0;
    if (call_ok(grpc_call_arg_stack(&h, st), "cb_zero from an argument stack"))
        expect(ticks == 4 && count[0] == 4, "a callback pushed on an argument stack runs 4 times");
    grpc_arg_stack_destruct(st);
    grpc_function_handle_destruct(&h);
}

/* ---- cancel: an async call canceled while its body keeps calling back */

static int slow_calls; /* written by the reader thread, read by main: atomics */
static void slow_cb(int *t, double *c, double *d) {
    (void)t;
    __atomic_add_fetch(&slow_calls, 1, __ATOMIC_SEQ_CST);
    usleep(2000);
    for (int i = 0; i < N * N; i++)
        d[i] = c[i];
}

static void cancel(void) {
    grpc_function_handle_t h;
    grpc_sessionid_t id;
    static double a[N * N], out[N * N];
    fill(a);
    handle(&h, "callback/cb_many");
    if (!call_ok(grpc_call_async(&h, &id, N, 100000, a, out, slow_cb), "cb_many async")) return;
    while (__atomic_load_n(&slow_calls, __ATOMIC_SEQ_CST) < 5)
        usleep(1000);
    expect(grpc_cancel(id) == GRPC_NO_ERROR, "grpc_cancel of a session running callbacks");
    int after = __atomic_load_n(&slow_calls, __ATOMIC_SEQ_CST);
    usleep(200000);
    expect(__atomic_load_n(&slow_calls, __ATOMIC_SEQ_CST) == after,
           "no callback runs after grpc_cancel returned");
    expect(grpc_wait(id) == GRPC_SESSION_FAILED && grpc_get_error(id) == GRPC_CANCELED_NP,
           "the session ends canceled");
    grpc_function_handle_destruct(&h);
    /* The server stopped calling back, and serves the next call. */
    handle(&h, "callback/cb_zero");
    int count[1];
    ticks = 0;
    expect(grpc_call(&h, 2, count, tick) == GRPC_NO_ERROR && ticks == 2, "the next call runs its callbacks");
    grpc_function_handle_destruct(&h);
}

/* ---- inptr: 'IN int *k' in the IDL (Ninf-G's spelling of an IN scalar) */

static int inptr_calls;
static void inptr_cb(int *k, double *v, int *r) {
    inptr_calls++;
    r[0] = *k + (int)(2 * *v);
}

static void inptr(void) {
    grpc_function_handle_t h;
    int got[1] = {-3};
    handle(&h, "callback/cb_inptr");
    if (call_ok(grpc_call(&h, 7, 2.5, got, inptr_cb), "cb_inptr")) {
        expect(inptr_calls == 1, "cb_inptr calls its callback once");
        expect(got[0] == 75, "'IN int *n' and 'IN int *k' pass values; the callback gets their addresses");
        if (got[0] != 75) fprintf(stderr, "cb_inptr: got %d, want 75\n", got[0]);
    }
    grpc_function_handle_destruct(&h);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr,
                "usage: cbdiag CONFIG "
                "many|two|zero|string|async|max|null|late|stack|cancel|big|inout|method|crash|inptr\n");
        return 2;
    }
    if (grpc_initialize(argv[1]) != GRPC_NO_ERROR) {
        fprintf(stderr, "grpc_initialize: %s\n", grpc_last_error_np());
        return 2;
    }
    const char *t = argv[2];
    if (strcmp(t, "many") == 0)
        many();
    else if (strcmp(t, "two") == 0)
        two();
    else if (strcmp(t, "zero") == 0)
        zero();
    else if (strcmp(t, "string") == 0)
        string();
    else if (strcmp(t, "async") == 0)
        async();
    else if (strcmp(t, "max") == 0)
        max();
    else if (strcmp(t, "null") == 0)
        null();
    else if (strcmp(t, "late") == 0)
        late();
    else if (strcmp(t, "method") == 0)
        method();
    else if (strcmp(t, "inout") == 0)
        inout();
    else if (strcmp(t, "big") == 0)
        big();
    else if (strcmp(t, "stack") == 0)
        stack();
    else if (strcmp(t, "cancel") == 0)
        cancel();
    else if (strcmp(t, "crash") == 0)
        crash();
    else if (strcmp(t, "inptr") == 0)
        inptr();
    else {
        fprintf(stderr, "unknown test %s\n", t);
        return 2;
    }
    grpc_finalize();
    if (!diag_failed) printf("OK\n");
    return diag_failed;
}
