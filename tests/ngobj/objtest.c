/* objtest.c: a client in the style of Ninf-G's samples (grpc.h only, a Ninf-G
 * client.conf) for remote objects (issue 10, item 7), one scenario per run:
 *   objtest CONFIG counter|leave|errors
 * counter: state persists across invocations; two handles are two objects;
 *          _initialize ran; arrays in, out and inout; async invocations of one object
 *          run in order while another object's run beside them.
 * leave:   creates an object and exits without destructing it (the server must still
 *          run its _finalize when the connection goes).
 * errors:  unknown class, unknown method, wrong argument count, a destructed handle.
 * core:    the same objects through the core API (grid_object_*_np, GRIDRPC_SERVER).
 * array:   handle arrays, the handle of a session, is_ready.
 * gone:    an object whose server went away (run.sh stops it between the files READY
 *          and GO in the current folder): the error says so and what to do.
 * cancel:  grpc_cancel of an invocation waiting for its object's turn (it never runs)
 *          and of a running one (the method sees grpc_is_canceled_np).
 * crash:   each object runs in a process of its own (prints "PIDS a b" for run.sh to
 *          compare with the server's) and keeps memory its methods allocated; a method
 *          that crashes (segfault, abort, exit) loses its own object, says so, and every
 *          later call of it says the object was lost; the other object keeps its state.
 * procs:   against a server with --max-object-processes 2: two objects live, a third is
 *          refused naming the option, and made once one of the two is destructed.
 * Prints "OK", or one "FAILED: ..." line per problem (exit 1); 2 when it cannot start. */
#include "diag_util.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <time.h>

static void counter(void) {
    grpc_object_handle_t_np a, b;
    long total = 0, now = 0, t1 = 0, now2 = 0, nb = 0;
    int calls = -1, init = 0;
    if (!call_ok(grpc_object_handle_default_np(&a, "counter/counter"), "init a")) return;
    /* The host of the config file: its port comes from there. */
    if (!call_ok(grpc_object_handle_init_np(&b, "127.0.0.1", "counter/counter"), "init b")) return;

    if (call_ok(grpc_invoke_np(&a, "get", &total, &calls, &init), "get"))
        expect(total == 1000 && calls == 0 && init == 1, "_initialize ran: total 1000, no calls yet");
    if (call_ok(grpc_invoke_np(&a, "add", 5, &now), "add 5")) expect(now == 1005, "a: 1000 + 5 = 1005");
    if (call_ok(grpc_invoke_np(&a, "add", 7, &now), "add 7")) expect(now == 1012, "a keeps its state: 1012");
    if (call_ok(grpc_invoke_np(&b, "add", 1, &nb), "b add 1"))
        expect(nb == 1001, "b is another object: 1001");
    if (call_ok(grpc_invoke_np(&a, "get", &total, &calls, &init), "get"))
        expect(total == 1012 && calls == 2, "a counted its two adds only");

    /* Strings: the state keeps a name. */
    char *old = NULL;
    if (call_ok(grpc_invoke_np(&a, "rename", "alpha", &old), "rename alpha"))
        expect(old && !*old, "no name at first");
    free(old);
    old = NULL;
    if (call_ok(grpc_invoke_np(&a, "rename", "beta", &old), "rename beta"))
        expect(old && strcmp(old, "alpha") == 0, "the object kept its name: alpha");
    free(old);

    /* Arrays: out[i] = in[i] * total, acc += (sum, n). */
    double in[5] = {1, 2, 3, 4, 5}, out[5] = {0}, acc[2] = {10, 0};
    if (call_ok(grpc_invoke_np(&a, "scale", 5, in, out, acc), "scale")) {
        int good = 1;
        for (int i = 0; i < 5; i++)
            good &= fabs(out[i] - in[i] * 1012) < 1e-9;
        expect(good, "scale: out = in * total");
        expect(acc[0] == 25 && acc[1] == 5, "scale: inout acc += (15, 5)");
    }

    /* Async: slow then add on a run in that order; b runs meanwhile. */
    grpc_sessionid_t s1, s2, s3;
    call_ok(grpc_invoke_async_np(&a, "slow", &s1, 300, &t1), "async slow");
    call_ok(grpc_invoke_async_np(&a, "add", &s2, 3, &now2), "async add");
    call_ok(grpc_invoke_async_np(&b, "add", &s3, 10, &nb), "async b add");
    expect(grpc_probe(s1) == GRPC_NOT_COMPLETED, "the slow method is still running right after the call");
    if (call_ok(grpc_wait(s3), "wait b")) expect(nb == 1011, "b: 1001 + 10");
    if (call_ok(grpc_wait_all(), "wait_all")) {
        expect(t1 == 1013, "slow ran first on a: 1012 + 1");
        expect(now2 == 1016, "then add 3 on a: 1016");
    }
    expect(grpc_get_error(s1) == GRPC_NO_ERROR && grpc_get_error(s2) == GRPC_NO_ERROR, "sessions succeeded");

    call_ok(grpc_object_handle_destruct_np(&a), "destruct a");
    call_ok(grpc_object_handle_destruct_np(&b), "destruct b");
}

static void leave(void) {
    grpc_object_handle_t_np a;
    long now = 0;
    if (!call_ok(grpc_object_handle_default_np(&a, "counter/counter"), "init")) return;
    if (call_ok(grpc_invoke_np(&a, "add", 42, &now), "add")) expect(now == 1042, "add 42");
    /* Exit without grpc_object_handle_destruct_np: the connection closes with the process. */
}

static void errors(void) {
    grpc_object_handle_t_np a;
    long now;
    grpc_error_t rc = grpc_object_handle_default_np(&a, "counter/nosuchclass");
    expect(rc == GRPC_FUNCTION_NOT_FOUND, "an unknown class is GRPC_FUNCTION_NOT_FOUND");
    expect(strstr(grpc_last_error_np(), "nosuchclass") != NULL, "the message names the unknown class");
    if (!call_ok(grpc_object_handle_default_np(&a, "counter"), "init by the plain class name")) return;
    rc = grpc_invoke_np(&a, "nosuchmethod", 1);
    expect(rc == GRPC_FUNCTION_NOT_FOUND, "an unknown method is GRPC_FUNCTION_NOT_FOUND");
    expect(strstr(grpc_last_error_np(), "nosuchmethod") && strstr(grpc_last_error_np(), "counter") &&
               strstr(grpc_last_error_np(), "add"),
           "the message names the class, the method and the methods there are");
    rc = grpc_invoke_np(&a, "add", 1);
    expect(rc == GRPC_OTHER_ERROR_CODE, "a wrong argument count is an error, not a crash");
    expect(strstr(grpc_last_error_np(), "takes 2 arguments") != NULL, "the message says how many");
    rc = grpc_invoke_np(&a, "add", 1, &now);
    expect(rc == GRPC_NO_ERROR && now == 1001, "the object still works after refused invocations");
    call_ok(grpc_object_handle_destruct_np(&a), "destruct");
    rc = grpc_invoke_np(&a, "add", 1, &now);
    expect(rc == GRPC_INVALID_OBJECT_HANDLE_NP, "a destructed handle is GRPC_INVALID_OBJECT_HANDLE_NP");
    rc = grpc_object_handle_destruct_np(&a);
    expect(rc == GRPC_INVALID_OBJECT_HANDLE_NP, "destructing twice is GRPC_INVALID_OBJECT_HANDLE_NP");
    grpc_sessionid_t s;
    rc = grpc_invoke_async_np(NULL, "add", &s, 1, &now);
    expect(rc == GRPC_INVALID_OBJECT_HANDLE_NP, "a NULL handle is GRPC_INVALID_OBJECT_HANDLE_NP");

    /* Handle attributes: the server (a host of the config file) and the class. */
    grpc_handle_attr_t_np at, got;
    void *v = NULL;
    grpc_handle_attr_initialize_np(&at);
    grpc_handle_attr_set_np(&at, GRPC_HANDLE_ATTR_HOSTNAME, "127.0.0.1");
    grpc_handle_attr_set_np(&at, GRPC_HANDLE_ATTR_FUNCNAME, "counter/counter");
    if (call_ok(grpc_object_handle_init_with_attr_np(&a, &at), "init_with_attr")) {
        rc = grpc_invoke_np(&a, "add", 4, &now);
        expect(rc == GRPC_NO_ERROR && now == 1004, "an object from attributes: 1004");
        if (call_ok(grpc_object_handle_get_attr_np(&a, &got), "get_attr")) {
            call_ok(grpc_handle_attr_get_np(&got, GRPC_HANDLE_ATTR_FUNCNAME, &v), "get FUNCNAME");
            expect(v && strcmp(v, "counter/counter") == 0, "get_attr gives the class back");
            if (v) grpc_handle_attr_release_np(v);
            grpc_handle_attr_destruct_np(&got);
        }
        call_ok(grpc_object_handle_destruct_np(&a), "destruct the object from attributes");
    }
    grpc_handle_attr_destruct_np(&at);
}

static double seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void cancel(void) {
    grpc_object_handle_t_np a;
    long now = 0, total = 0;
    int calls, init;
    grpc_sessionid_t s1, s2;
    if (!call_ok(grpc_object_handle_default_np(&a, "counter/counter"), "init")) return;
    double t0 = seconds();
    call_ok(grpc_invoke_async_np(&a, "wait_cancel", &s1, 5000), "async wait_cancel");
    call_ok(grpc_invoke_async_np(&a, "add", &s2, 3, &now), "async add behind it");
    usleep(200000);
    call_ok(grpc_cancel(s2), "cancel the add waiting for its turn");
    call_ok(grpc_cancel(s1), "cancel the running wait_cancel");
    expect(grpc_wait(s2) == GRPC_SESSION_FAILED && grpc_get_error(s2) == GRPC_CANCELED_NP,
           "the add was canceled");
    grpc_wait(s1);
    if (call_ok(grpc_invoke_np(&a, "get", &total, &calls, &init), "get")) {
        expect(total == 1100, "the running method saw grpc_is_canceled_np (+100) and the add never ran (+3)");
        expect(seconds() - t0 < 3.0, "the canceled method returned early");
    }
    call_ok(grpc_object_handle_destruct_np(&a), "destruct");
}

/* expect() with a printf-style description. */
static void expectf(int cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void expectf(int cond, const char *fmt, ...) {
    char what[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    expect(cond, what);
}

/* MSG tells how a process ended with WORDS; under a sanitizer (OBJ_SANITIZED, run.sh),
 * which catches faults itself and exits with its own status, any end will do. */
static int ended_with(const char *msg, const char *words) {
    if (getenv("OBJ_SANITIZED")) return strstr(msg, "crashed (signal") || strstr(msg, "exited with status");
    return strstr(msg, words) != NULL;
}

/* One crash of an object's method: HOW (counter.idl's crash), the words its error has. */
static void crash_one(int how, const char *words) {
    grpc_object_handle_t_np a;
    long now = 0;
    if (!call_ok(grpc_object_handle_default_np(&a, "counter/counter"), "init the object to crash")) return;
    call_ok(grpc_invoke_np(&a, "add", 2, &now), "add 2 before the crash");
    grpc_error_t rc = grpc_invoke_np(&a, "crash", how);
    const char *msg = grpc_last_error_np();
    expectf(rc != GRPC_NO_ERROR && strstr(msg, "counter/counter.crash") && ended_with(msg, words) &&
                strstr(msg, "the server is still up") && strstr(msg, "object was lost"),
            "crash %d fails its call, naming the method, what happened (%s) and that the object is lost: %s",
            how, words, msg);
    rc = grpc_invoke_np(&a, "add", 1, &now);
    msg = grpc_last_error_np();
    expectf(rc != GRPC_NO_ERROR && strstr(msg, "was lost") && strstr(msg, words) &&
                strstr(msg, "create a new"),
            "a later call of the lost object says so, and why: %s", msg);
    /* Destructing it is no error: the object is gone either way. */
    call_ok(grpc_object_handle_destruct_np(&a), "destruct the lost object");
}

static void crash(void) {
    grpc_object_handle_t_np a, b;
    int pa = 0, pb = 0;
    long now = 0;
    double sum = 0;
    if (!call_ok(grpc_object_handle_default_np(&a, "counter/counter"), "init a")) return;
    if (!call_ok(grpc_object_handle_default_np(&b, "counter/counter"), "init b")) return;
    call_ok(grpc_invoke_np(&a, "where", &pa), "a where");
    call_ok(grpc_invoke_np(&b, "where", &pb), "b where");
    expectf(pa > 0 && pb > 0 && pa != pb && pa != (int)getpid(), "two objects, two processes (%d, %d)", pa,
            pb);
    printf("PIDS %d %d\n", pa, pb);
    /* The state may point to memory a method allocated: the next method finds it. */
    if (call_ok(grpc_invoke_np(&b, "grow", 10, &sum), "b grow 10")) expect(sum == 55, "grow: 1..10 = 55");
    if (call_ok(grpc_invoke_np(&b, "grow", 2, &sum), "b grow 2")) expect(sum == 58, "grow again: 55 + 1 + 2");
    call_ok(grpc_invoke_np(&b, "add", 7, &now), "b add 7");
    crash_one(1, "signal 11");
    crash_one(2, "signal 6");
    crash_one(3, "exited with status 3");
    /* A method that never polls is ended by a cancel within the grace, and its object
     * with it. */
    grpc_object_handle_t_np d;
    grpc_sessionid_t sd;
    long t = 0;
    if (call_ok(grpc_object_handle_default_np(&d, "counter/counter"), "init d")) {
        call_ok(grpc_invoke_async_np(&d, "slow", &sd, 20000, &t), "async slow 20 s");
        usleep(300000);
        double t0 = seconds();
        call_ok(grpc_cancel(sd), "cancel the slow method");
        grpc_wait(sd);
        double took = seconds() - t0;
        expectf(grpc_get_error(sd) == GRPC_CANCELED_NP && took < 2.0,
                "a method that never polls is canceled (%.0f ms), not run for 20 s", took * 1e3);
        grpc_error_t rc = grpc_invoke_np(&d, "add", 1, &now);
        const char *msg = grpc_last_error_np();
        expectf(rc != GRPC_NO_ERROR && strstr(msg, "was lost") && strstr(msg, "canceled"),
                "its object was lost with its process, and says why: %s", msg);
        call_ok(grpc_object_handle_destruct_np(&d), "destruct d");
    }
    /* The other object never noticed. */
    int pb2 = 0;
    call_ok(grpc_invoke_np(&b, "where", &pb2), "b where, after the crashes");
    expect(pb2 == pb, "b still runs in its own process");
    if (call_ok(grpc_invoke_np(&b, "grow", 1, &sum), "b grow 1")) expect(sum == 59, "b kept its heap: 59");
    if (call_ok(grpc_invoke_np(&b, "add", 0, &now), "b add 0")) expect(now == 1007, "b kept its total: 1007");
    call_ok(grpc_object_handle_destruct_np(&a), "destruct a");
    call_ok(grpc_object_handle_destruct_np(&b), "destruct b");
}

static void procs(void) {
    grpc_object_handle_t_np a, b, c;
    long now = 0;
    if (!call_ok(grpc_object_handle_default_np(&a, "counter/counter"), "init a")) return;
    if (!call_ok(grpc_object_handle_default_np(&b, "counter/counter"), "init b")) return;
    grpc_error_t rc = grpc_object_handle_default_np(&c, "counter/counter");
    const char *msg = grpc_last_error_np();
    expectf(rc != GRPC_NO_ERROR && strstr(msg, "--max-object-processes") && strstr(msg, "at most 2"),
            "a third object is refused, naming the limit and the option: %s", msg);
    if (rc == GRPC_NO_ERROR) grpc_object_handle_destruct_np(&c);
    int pa = 0;
    call_ok(grpc_invoke_np(&a, "where", &pa), "a where");
    call_ok(grpc_object_handle_destruct_np(&a), "destruct a");
    /* The process of a is ended (and reaped) before its destroy is answered: a new object
     * may start at once. */
    expectf(pa > 0 && kill(pa, 0) == -1 && errno == ESRCH,
            "a's process %d is gone once its destroy is answered", pa);
    if (call_ok(grpc_object_handle_default_np(&c, "counter/counter"), "init c once a is gone")) {
        if (call_ok(grpc_invoke_np(&c, "add", 3, &now), "c add 3")) expect(now == 1003, "c works: 1003");
        call_ok(grpc_object_handle_destruct_np(&c), "destruct c");
    }
    if (call_ok(grpc_invoke_np(&b, "add", 4, &now), "b add 4")) expect(now == 1004, "b works: 1004");
    call_ok(grpc_object_handle_destruct_np(&b), "destruct b");
}

static void array(void) {
    grpc_object_handle_t_np hs[3], *from = NULL;
    long now[3] = {0, 0, 0};
    grpc_sessionid_t id;
    if (!call_ok(grpc_object_handle_array_default_np(hs, 3, "counter/counter"), "array_default")) return;
    for (int i = 0; i < 2; i++)
        if (call_ok(grpc_invoke_np(&hs[i], "add", 10 * (i + 1), &now[i]), "add"))
            expect(now[i] == 1000 + 10 * (i + 1), "each object of the array is its own");
    call_ok(grpc_invoke_async_np(&hs[2], "add", &id, 30, &now[2]), "async add on the third");
    expect(grpc_object_handle_get_from_session_np(&from, id) == GRPC_NO_ERROR && from == &hs[2],
           "get_from_session gives the session's handle");
    if (call_ok(grpc_wait(id), "wait")) expect(now[2] == 1030, "the third: 1030");
    expect(grpc_object_handle_is_ready_np(&hs[0]) == GRPC_NO_ERROR, "is_ready");
    call_ok(grpc_object_handle_array_destruct_np(hs, 3), "array_destruct");
    expect(grpc_object_handle_is_ready_np(&hs[0]) == GRPC_INVALID_OBJECT_HANDLE_NP,
           "not ready once destructed");
    expect(grpc_object_handle_get_from_session_np(&from, id) == GRPC_INVALID_SESSION_ID,
           "no handle for the session once its handle is destructed");
    grpc_object_handle_t_np bad[2];
    expect(grpc_object_handle_array_default_np(bad, 2, "counter/none") == GRPC_FUNCTION_NOT_FOUND,
           "an array of an unknown class fails whole");
}

static void gone(void) {
    grpc_object_handle_t_np a;
    long now = 0;
    if (!call_ok(grpc_object_handle_default_np(&a, "counter/counter"), "init")) return;
    call_ok(grpc_invoke_np(&a, "add", 1, &now), "add before");
    FILE *f = fopen("READY", "w");
    if (f) fclose(f);
    for (int i = 0; i < 400 && access("GO", F_OK) != 0; i++)
        usleep(25000);
    grpc_error_t rc = grpc_invoke_np(&a, "add", 1, &now);
    const char *m = grpc_last_error_np();
    expect(rc == GRPC_COMMUNICATION_FAILED, "an object whose server went away: GRPC_COMMUNICATION_FAILED");
    expect(strstr(m, "counter/counter.add") && strstr(m, "create a new object"),
           "the message names the class and method and says what to do");
    if (strstr(m, "create a new object") == NULL) fprintf(stderr, "message: %s\n", m);
    rc = grpc_invoke_np(&a, "add", 1, &now);
    expect(rc == GRPC_COMMUNICATION_FAILED && strstr(grpc_last_error_np(), "create a new object"),
           "and it stays gone");
    grpc_object_handle_destruct_np(&a); /* frees the handle whatever it says */
    expect(grpc_object_handle_is_ready_np(&a) == GRPC_INVALID_OBJECT_HANDLE_NP, "the handle is released");
}

static void core(void) {
    grid_object_np *o = NULL;
    long now = 0;
    if (grid_object_create_np(&o, NULL, "counter/counter") != GRID_OK) {
        fprintf(stderr, "FAILED: grid_object_create_np: %s\n", grid_last_error());
        diag_failed = 1;
        return;
    }
    expect(grid_object_invoke_np(o, "add", 2, &now) == GRID_OK && now == 1002, "grid_object_invoke_np: 1002");
    int id = grid_object_invoke_async_np(o, "add", 3, &now);
    expect(id > 0 && grid_wait(id) == GRID_OK && now == 1005,
           "grid_object_invoke_async_np then grid_wait: 1005");
    expect(grid_object_invoke_np(o, "add", 2) == GRID_ERR_ARGS, "a wrong argument count is GRID_ERR_ARGS");
    char url[1100];
    snprintf(url, sizeof url, "%s.scale", grid_object_url_np(o));
    grid_function_np fn;
    expect(grid_describe_np(url, &fn) == GRID_OK && fn.nparams == 4, "grid_describe_np of Class.method");
    expect(grid_object_destroy_np(o) == GRID_OK, "grid_object_destroy_np");
    expect(grid_object_create_np(&o, NULL, "counter/none") == GRID_ERR_NOT_FOUND &&
               strstr(grid_last_error(), "counter/none"),
           "an unknown class is GRID_ERR_NOT_FOUND, named");
}

int main(int argc, char *argv[]) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s CONFIG counter|leave|errors|core|cancel|array|crash|procs|gone\n",
                argv[0]);
        return 2;
    }
    if (grpc_initialize(argv[1]) != GRPC_NO_ERROR) {
        fprintf(stderr, "grpc_initialize: %s\n", grpc_last_error_np());
        return 2;
    }
    if (strcmp(argv[2], "counter") == 0)
        counter();
    else if (strcmp(argv[2], "leave") == 0)
        leave();
    else if (strcmp(argv[2], "errors") == 0)
        errors();
    else if (strcmp(argv[2], "core") == 0)
        core();
    else if (strcmp(argv[2], "cancel") == 0)
        cancel();
    else if (strcmp(argv[2], "array") == 0)
        array();
    else if (strcmp(argv[2], "crash") == 0)
        crash();
    else if (strcmp(argv[2], "procs") == 0)
        procs();
    else if (strcmp(argv[2], "gone") == 0)
        gone();
    else
        return 2;
    if (strcmp(argv[2], "leave") != 0) grpc_finalize();
    if (!diag_failed) printf("OK\n");
    return diag_failed;
}
