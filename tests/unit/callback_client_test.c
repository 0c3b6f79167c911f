/* callback_client_test.c: the client's side of callbacks against a scripted fake server
 * (fake_server.h) offering test/cbf(IN int n, cb(IN double c[n], OUT double d[n])): a
 * well-formed CALLBACK runs the caller's function (sync and async calls) and its answer
 * carries the OUT argument; a CALLBACK naming a parameter that is no callback, or none
 * at all, arguments of the wrong size, and a NULL function are answered or refused
 * without running the caller's function and without crashing. Prints TAP. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grp_types.h"
#include "fake_server.h"
#include "grd_desc.h"
#include "gridrpc.h"
#include "tap.h"

/* ---- the fake server's script */

enum { GOOD, NOT_A_CALLBACK, NO_SUCH_PARAMETER, SHORT_ARGUMENTS };
static int mode;
static uint8_t *desc_bytes;
static size_t desc_len;
/* What the client answered: the fake server's threads write, the test reads after the
 * call (under lock: the socket is no synchronisation a race detector sees). */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int answered, answer_code;
static double answer_d[3];

static uint32_t be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static uint64_t be64(const uint8_t *p) {
    return (uint64_t)be32(p) << 32 | be32(p + 4);
}

static void send_buf(int fd, fake_buf *b) {
    fake_buf_finish(b);
    fake_send_raw(fd, b->p, b->len);
    fake_buf_free(b);
}

/* CALLBACK for callback parameter INDEX of call ID with N doubles of c. */
static void send_callback(int fd, uint64_t id, uint32_t index, int n) {
    fake_buf b = {0};
    fake_buf_begin(&b, GRP_CALLBACK, id);
    fake_buf_u32(&b, index);
    fake_buf_u32(&b, 1);
    fake_buf_u32(&b, 0); /* head: no scalars travel */
    for (int i = 0; i < n; i++) {
        double v = i + 1;
        uint64_t u;
        memcpy(&u, &v, sizeof u);
        fake_buf_u64(&b, u);
    }
    send_buf(fd, &b);
}

static void send_result(int fd, uint64_t id) {
    fake_buf b = {0};
    fake_buf_begin(&b, GRP_RESULT, id);
    fake_buf_u64(&b, 0);
    fake_buf_u64(&b, 0);
    fake_buf_u32(&b, 0); /* head: nothing travels back */
    send_buf(fd, &b);
}

static int handler(fake_server *fs, int fd, const fake_msg *m, void *user) {
    if (m->h.type == GRP_GET_DESCRIPTOR && strstr(fake_msg_name(m), "cbf")) {
        fake_buf b = {0};
        fake_buf_begin(&b, GRP_DESCRIPTOR, m->h.request_id);
        fake_buf_string(&b, "test/cbf", 8);
        fake_buf_string(&b, (const char *)desc_bytes, desc_len);
        send_buf(fd, &b);
        return FAKE_KEEP;
    }
    if (m->h.type == GRP_CALL) {
        pthread_mutex_lock(&lock);
        int now = mode;
        pthread_mutex_unlock(&lock);
        switch (now) {
        case GOOD: send_callback(fd, m->h.request_id, 1, 3); break;
        case NOT_A_CALLBACK: send_callback(fd, m->h.request_id, 0, 3); break;
        case NO_SUCH_PARAMETER: send_callback(fd, m->h.request_id, 70, 3); break;
        case SHORT_ARGUMENTS: send_callback(fd, m->h.request_id, 1, 2); break;
        }
        return FAKE_KEEP;
    }
    if (m->h.type == GRP_CALLBACK_RESULT) {
        /* index, seq, code, message, then (code 0) head length 0 and d[3] */
        pthread_mutex_lock(&lock);
        if (m->len >= 16) {
            answer_code = (int)be32(m->body + 8);
            size_t off = 12 + 4 + ((be32(m->body + 12) + 3) & ~3u);
            if (answer_code == 0 && m->len >= off + 4 + 24)
                for (int i = 0; i < 3; i++) {
                    uint64_t u = be64(m->body + off + 4 + 8 * i);
                    memcpy(&answer_d[i], &u, sizeof u);
                }
            answered++;
        }
        pthread_mutex_unlock(&lock);
        send_result(fd, m->h.request_id);
        return FAKE_KEEP;
    }
    return fake_default_reply(fs, fd, m, user);
}

/* ---- the caller's function */

static int cb_calls; /* async: the library's reader thread runs cb */
static void cb(double *c, double *d) {
    __atomic_add_fetch(&cb_calls, 1, __ATOMIC_SEQ_CST);
    for (int i = 0; i < 3; i++)
        d[i] = 2 * c[i];
}

static void reset(int m) {
    pthread_mutex_lock(&lock);
    mode = m;
    answered = answer_code = 0;
    __atomic_store_n(&cb_calls, 0, __ATOMIC_SEQ_CST);
    memset(answer_d, 0, sizeof answer_d);
    pthread_mutex_unlock(&lock);
}

/* Reads what the fake server recorded. */
static void seen(int *n, int *code, double d[3]) {
    pthread_mutex_lock(&lock);
    *n = answered;
    *code = answer_code;
    memcpy(d, answer_d, sizeof answer_d);
    pthread_mutex_unlock(&lock);
}

/* test/cbf(IN int n, cb(IN double c[n], OUT double d[n])) */
static int make_descriptor(void) {
    grd_insn n = {GRD_OP_PARAM, 0};
    grd_dim dim = {{1, &n}, {0, NULL}, {0, NULL}, {0, NULL}};
    grd_param cbp[2] = {{"c", GRD_DOUBLE, GRD_IN, 0, 1, &dim, 0, NULL},
                        {"d", GRD_DOUBLE, GRD_OUT, 0, 1, &dim, 0, NULL}};
    grd_param params[2] = {{"n", GRD_INT, GRD_IN, 0, 0, NULL, 0, NULL},
                           {"cb", GRD_CALLBACK, GRD_IN, 0, 0, NULL, 2, cbp}};
    grd_desc d = {.version = GRD_FORMAT_VERSION,
                  .module = "test",
                  .name = "cbf",
                  .description = "",
                  .language = GRD_LANG_C,
                  .nparams = 2,
                  .params = params};
    grd_error err;
    if (grd_encode(&d, &desc_bytes, &desc_len, &err) != GRD_OK) {
        fprintf(stderr, "encode: %s\n", err.msg);
        return -1;
    }
    return 0;
}

int main(void) {
    if (make_descriptor()) return 1;
    fake_server *fs = fake_server_start(handler, NULL);
    if (!fs) return 1;
    char name[128];
    snprintf(name, sizeof name, "gridrpc://%s/test/cbf", fake_server_address(fs));

    int n, code;
    double d[3];
    reset(GOOD);
    int rc = grid_call(name, 3, cb);
    seen(&n, &code, d);
    result(rc == GRID_OK && cb_calls == 1, "a CALLBACK runs the caller's function once (rc %d: %s)", rc,
           grid_last_error());
    result(n == 1 && code == 0 && d[0] == 2 && d[2] == 6,
           "its answer carries the OUT argument the function wrote");

    reset(GOOD);
    int id = grid_call_async(name, 3, cb);
    rc = id > 0 ? grid_wait(id) : -id;
    seen(&n, &code, d);
    result(rc == GRID_OK && __atomic_load_n(&cb_calls, __ATOMIC_SEQ_CST) == 1 && n == 1 && d[1] == 4,
           "the same for an asynchronous call (rc %d: %s)", rc, grid_last_error());

    reset(GOOD);
    rc = grid_call(name, 3, (void (*)(double *, double *))NULL);
    seen(&n, &code, d);
    result(rc == GRID_OK && n == 1 && code == GRID_ERR_ARGS,
           "a NULL function is answered GRID_ERR_ARGS (code %d), the call goes on", code);

    reset(NOT_A_CALLBACK);
    rc = grid_call(name, 3, cb);
    seen(&n, &code, d);
    result(rc == GRID_OK && cb_calls == 0 && n == 1 && code == GRID_ERR_PROTOCOL,
           "a CALLBACK naming a parameter that is no callback is answered GRID_ERR_PROTOCOL (code %d)", code);

    reset(NO_SUCH_PARAMETER);
    rc = grid_call(name, 3, cb);
    result(rc == GRID_ERR_PROTOCOL && cb_calls == 0,
           "a CALLBACK naming parameter 70 fails the call with GRID_ERR_PROTOCOL (rc %d: %s)", rc,
           grid_last_error());

    reset(SHORT_ARGUMENTS);
    rc = grid_call(name, 3, cb);
    result(rc != GRID_OK && cb_calls == 0, "arguments shorter than the callback's fail the call (rc %d: %s)",
           rc, grid_last_error());

    reset(GOOD);
    rc = grid_call(name, 3, cb);
    result(rc == GRID_OK && cb_calls == 1, "the next call works (rc %d)", rc);

    grid_reset_np(); /* joins the async reader thread before the server goes */
    fake_server_stop(fs);
    free(desc_bytes);
    printf("1..%d\n", tests);
    return failed ? 1 : 0;
}
