/* obj_hostile_test.c: gridrpcd's remote objects against raw clients (run by
 * tests/ngobj/run.sh with OBJ_TEST_PORT, a server that loads counter.idl): ids that
 * name nothing (never made, 0, destroyed, dead with their connection), unknown
 * methods, a stale descriptor hash, a method's array sized far past every limit, and
 * invocations from another connection: of the same client session (allowed) and of
 * another session or of an old client that sent none (refused exactly as an id that
 * does not exist). Ids must not follow a counter. After each refusal the same
 * connection must still answer, and the server must stay up. Prints TAP. */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "grp_auth.h"
#include "grp_proto.h"
#include "tap.h"

static int port;

/* One raw client connection (after HELLO). */
typedef struct conn {
    int fd;
    uint64_t next;
    grw_reader r;
    grw_writer w;
} conn;

/* A connection of client session WHO (a letter: its secret is 16 times that byte), or
 * of an old client that sends no session (WHO 0). */
static conn *open_conn_as(char who) {
    gr_err e;
    conn *c = calloc(1, sizeof *c);
    c->fd = grw_connect("127.0.0.1", port, 5, &e);
    if (c->fd < 0) {
        printf("# connect: %s\n", e.msg);
        exit(1);
    }
    grw_reader_init(&c->r, c->fd, 1 << 24);
    grw_writer_init(&c->w, c->fd);
    c->next = 1;
    grp_hello m = {0};
    snprintf(m.client, sizeof m.client, "obj_hostile_test");
    if (who) {
        memset(m.session, who, GRP_SESSION_BYTES);
        m.session_len = GRP_SESSION_BYTES;
    }
    m.min_version = m.max_version = 1;
    grp_hello_ok ok;
    if (grp_auth_hello(&c->r, &c->w, c->next++, &m, NULL, "", &ok, NULL, &e)) {
        printf("# HELLO failed: %s\n", e.msg);
        exit(1);
    }
    return c;
}

static conn *open_conn(void) {
    return open_conn_as('A');
}

static void close_conn(conn *c) {
    close(c->fd);
    free(c);
}

/* Reads the reply header; for ERROR, its code and message. Returns the type, 0 when
 * the connection failed. */
static uint32_t reply(conn *c, int *code, char *msg, size_t n) {
    gr_err e;
    grw_header h;
    c->r.deadline_ns = gr_now_ns() + 10000000000LL;
    if (grp_read_header(&c->r, &h, &e)) return 0;
    if (h.type == GRP_ERROR) {
        grp_error m;
        if (grp_read_error(&c->r, &m, &e)) return 0;
        *code = m.code;
        snprintf(msg, n, "%s", m.message);
    }
    return h.type;
}

/* PING answered by PONG: the connection is still in step. */
static int in_step(conn *c) {
    gr_err e;
    int code;
    char msg[64];
    if (grp_write_empty(&c->w, GRP_PING, c->next++, &e)) return 0;
    if (reply(c, &code, msg, sizeof msg) != GRP_PONG) return 0;
    grp_pong p;
    return grp_read_pong(&c->r, &p, &e) == GRID_OK;
}

/* The inverse of splitmix64's finaliser, which an older gridrpcd applied to a counter. */
static uint64_t unmix(uint64_t z) {
    z = (z ^ (z >> 31) ^ (z >> 62)) * 0x319642b2d24d8ec3ull;
    z = (z ^ (z >> 27) ^ (z >> 54)) * 0x96de1b173f119089ull;
    return z ^ (z >> 30) ^ (z >> 60);
}

typedef grp_object_id oid;
static const oid none_id = {0, 0};

static int made_one(oid id) {
    return !grp_object_id_zero(id);
}

/* OBJ_CREATE of CLS on C: the id, or all zero (*CODE and MSG say why). */
static oid create_or(conn *c, const char *cls, int *code, char *msg, size_t n) {
    gr_err e;
    char q[GRP_MAX_FUNCTION_NAME + 1];
    oid id = none_id;
    msg[0] = '\0';
    if (grp_write_obj_create(&c->w, c->next++, cls, &e)) return none_id;
    if (reply(c, code, msg, n) != GRP_OBJ_CREATED) return none_id;
    if (grp_read_obj_created(&c->r, &id, q, &e)) return none_id;
    return id;
}

static oid create(conn *c, const char *cls) {
    int code = 0;
    char msg[512];
    oid id = create_or(c, cls, &code, msg, sizeof msg);
    if (!made_one(id)) printf("# create %s: %d %s\n", cls, code, msg);
    return id;
}

static grd_desc *describe(conn *c, const char *name) {
    gr_err e;
    int code;
    char msg[512], q[GRP_MAX_FUNCTION_NAME + 1];
    grd_desc *d = NULL;
    if (grp_write_get_descriptor(&c->w, c->next++, name, &e)) return NULL;
    if (reply(c, &code, msg, sizeof msg) != GRP_DESCRIPTOR) return NULL;
    if (grp_read_descriptor(&c->r, q, &d, &e)) return NULL;
    return d;
}

/* counter.add(n, &now) on object ID with HASH: returns the reply type; *now or the error. */
static uint32_t add(conn *c, oid id, const grd_desc *d, uint64_t hash, int n, long *now, int *code, char *msg,
                    size_t msgn) {
    gr_err e;
    grw_limits lim;
    grp_limits_default(&lim);
    void *argv[2] = {&n, now};
    grm_call *call = malloc(grm_call_size(d->nparams));
    uint32_t t = 0;
    if (!grm_from_argv(call, d, argv, &lim, &e) &&
        !grp_write_obj_invoke(&c->w, c->next++, id, "add", hash, call, &lim, &e)) {
        t = reply(c, code, msg, msgn);
        grp_result_times times;
        if (t == GRP_RESULT && grp_read_result(&c->r, call, &times, &e)) t = 0;
    }
    free(call);
    return t;
}

static int destroy(conn *c, oid id, int *code, char *msg, size_t n) {
    gr_err e;
    if (grp_write_obj_destroy(&c->w, c->next++, id, &e)) return 0;
    uint32_t t = reply(c, code, msg, n);
    if (t == GRP_OBJ_DESTROYED) grp_read_empty(&c->r, &e);
    return (int)t;
}

/* OBJ_TEST_LIMIT=N, a server with --max-objects-per-connection N: N objects on one
 * connection are made, one more is GRID_ERR_LIMIT naming the option (the connection goes
 * on, another connection may still make one), and one more once one is destroyed. */
static int limit_case(int n) {
    conn *a = open_conn(), *b = open_conn();
    oid ids[64] = {{0, 0}};
    int made = 0, code = 0;
    char msg[4096] = "";
    for (int i = 0; a && i < n && i < 64; i++)
        if (made_one(ids[i] = create(a, "counter"))) made++;
    result(made == n, "%d objects on one connection (the bound) are made", n);
    gr_err e;
    uint32_t t =
        a && !grp_write_obj_create(&a->w, a->next++, "counter", &e) ? reply(a, &code, msg, sizeof msg) : 0;
    printf("# one past: %s\n", msg);
    result(t == GRP_ERROR && code == GRID_ERR_LIMIT && strstr(msg, "--max-objects-per-connection"),
           "one more is ERROR GRID_ERR_LIMIT naming --max-objects-per-connection");
    result(a && in_step(a), "the connection still answers");
    oid other = b ? create(b, "counter") : none_id;
    result(made_one(other), "another connection still makes its own object");
    result(a && made > 0 && destroy(a, ids[0], &code, msg, sizeof msg) == GRP_OBJ_DESTROYED,
           "one of them is destroyed");
    result(a && made_one(create(a, "counter")), "then one more is made on that connection");
    if (a) close_conn(a);
    if (b) close_conn(b);
    printf("1..%d\n", tests);
    return failed ? 1 : 0;
}

int main(void) {
    const char *p = getenv("OBJ_TEST_PORT");
    if (!p) {
        printf("1..0 # SKIP: run by tests/ngobj/run.sh (OBJ_TEST_PORT)\n");
        return 77;
    }
    port = atoi(p);
    signal(SIGPIPE, SIG_IGN);
    const char *lim = getenv("OBJ_TEST_LIMIT");
    if (lim) return limit_case(atoi(lim));
    conn *a = open_conn();
    int code = 0;
    char msg[4096];
    long now = 0;

    grd_desc *d = describe(a, "counter/counter.add");
    result(d && (d->flags & GRD_FF_METHOD) && strcmp(d->cls, "counter") == 0,
           "GET_DESCRIPTOR of counter/counter.add: a method descriptor of class counter");
    grd_desc *plain = describe(a, "counter.add");
    result(plain && d && plain->hash == d->hash, "the plain Class.method name finds the same descriptor");
    grd_free(plain);
    if (!d) {
        printf("1..%d\n", tests);
        return 1;
    }

    /* Ids that name nothing. */
    oid ids[] = {{0, 0}, {0x5eed5eed5eed5eedull, 1}, {~0ull, ~0ull}};
    for (unsigned i = 0; i < 3; i++) {
        code = 0;
        uint32_t t = add(a, ids[i], d, d->hash, 1, &now, &code, msg, sizeof msg);
        char hex[33];
        grp_object_id_hex(ids[i], hex);
        result(t == GRP_ERROR && code == GRID_ERR_NOT_FOUND && strstr(msg, "does not exist"),
               "OBJ_INVOKE of unknown object %s: NOT_FOUND (%s)", hex, msg);
        result(in_step(a), "the connection still answers");
    }
    code = 0;
    result(destroy(a, (oid){0, 0x1234}, &code, msg, sizeof msg) == GRP_ERROR && code == GRID_ERR_NOT_FOUND,
           "OBJ_DESTROY of an unknown object: NOT_FOUND");

    /* A real object, then a destroyed one. */
    oid id = create(a, "counter/counter");
    result(made_one(id), "OBJ_CREATE counter/counter");
    result(add(a, id, d, d->hash, 5, &now, &code, msg, sizeof msg) == GRP_RESULT && now == 1005,
           "OBJ_INVOKE add(5) after _initialize: 1005");
    code = 0;
    result(add(a, id, d, d->hash ^ 1, 5, &now, &code, msg, sizeof msg) == GRP_ERROR && code == GRID_ERR_STALE,
           "a stale descriptor hash: STALE (%s)", msg);
    result(in_step(a), "the connection still answers");
    /* An unknown method: the body is skipped whole. */
    {
        gr_err e;
        grw_begin(&a->w, GRP_OBJ_INVOKE, 0, a->next++, &e);
        grw_write_u64(&a->w, id.hi, &e);
        grw_write_u64(&a->w, id.lo, &e);
        grw_write_string(&a->w, "nosuch", &e);
        grw_write_u64(&a->w, 1, &e);
        grw_write_u32(&a->w, 4, &e);
        grw_write_u32(&a->w, 7, &e);
        grw_finish(&a->w, &e);
        code = 0;
        uint32_t t = reply(a, &code, msg, sizeof msg);
        result(t == GRP_ERROR && code == GRID_ERR_NOT_FOUND && strstr(msg, "counter/counter") &&
                   strstr(msg, "nosuch") && strstr(msg, "add"),
               "an unknown method: NOT_FOUND naming the class and its methods (%s)", msg);
        result(in_step(a), "the connection still answers");
    }
    /* scale(n, in[n], out[n], acc[2]) with n far past any limit: refused before allocating. */
    {
        grd_desc *sd = describe(a, "counter/counter.scale");
        int sizes[] = {0x7fffffff, -5};
        for (unsigned i = 0; sd && i < 2; i++) {
            gr_err e;
            grw_begin(&a->w, GRP_OBJ_INVOKE, 0, a->next++, &e);
            grw_write_u64(&a->w, id.hi, &e);
            grw_write_u64(&a->w, id.lo, &e);
            grw_write_string(&a->w, "scale", &e);
            grw_write_u64(&a->w, sd->hash, &e);
            grw_write_u32(&a->w, 4, &e); /* head: the scalar n */
            grw_write_i32(&a->w, sizes[i], &e);
            grw_finish(&a->w, &e);
            code = 0;
            uint32_t t = reply(a, &code, msg, sizeof msg);
            result(t == GRP_ERROR && (code == GRID_ERR_LIMIT || code == GRID_ERR_ARGS),
                   "scale with n = %d: refused (%s)", sizes[i], msg);
        }
        result(sd != NULL, "GET_DESCRIPTOR of counter/counter.scale");
        grd_free(sd);
        conn *x = open_conn();
        result(in_step(x), "the server still answers a new connection");
        close_conn(x);
    }
    /* Another client (session B) knows the id: to it the object does not exist, in the
     * very words of an id that was never made; the object is unchanged. */
    {
        conn *x = open_conn_as('B'), *old = open_conn_as(0);
        char none[4096] = "", want[4096];
        int c2 = 0;
        oid never = {0x5eed5eed5eed5eedull, 0x5eed5eed5eed5eedull};
        char hex[33];
        add(x, never, d, d->hash, 1, &now, &c2, none, sizeof none);
        char *at = strstr(none, "5eed5eed5eed5eed5eed5eed5eed5eed");
        grp_object_id_hex(id, hex);
        if (at) snprintf(want, sizeof want, "%.*s%s%s", (int)(at - none), none, hex, at + 32);
        code = 0;
        msg[0] = '\0';
        uint32_t t = add(x, id, d, d->hash, 100, &now, &code, msg, sizeof msg);
        result(t == GRP_ERROR && code == GRID_ERR_NOT_FOUND && at && strcmp(msg, want) == 0,
               "another session invokes the object: NOT_FOUND, as for an id never made (%s)", msg);
        code = 0;
        result(destroy(x, id, &code, msg, sizeof msg) == GRP_ERROR && code == GRID_ERR_NOT_FOUND,
               "another session destroys it: NOT_FOUND");
        code = 0;
        result(add(old, id, d, d->hash, 100, &now, &code, msg, sizeof msg) == GRP_ERROR &&
                   code == GRID_ERR_NOT_FOUND,
               "a client without a session invokes it: NOT_FOUND");
        /* An older client reads 64-bit ids: it is told to upgrade rather than misread one. */
        code = 0;
        oid mine = create_or(old, "counter", &code, msg, sizeof msg);
        result(!made_one(mine) && code == GRID_ERR_CONFIG && strstr(msg, "upgrade"),
               "a client without a session (an older one) is refused OBJ_CREATE, told to upgrade (%s)", msg);
        result(in_step(x) && in_step(old), "their connections still answer");
        close_conn(x);
        close_conn(old);
    }
    /* Another connection of the same session may invoke the object while its owner lives. */
    conn *b = open_conn();
    result(add(b, id, d, d->hash, 1, &now, &code, msg, sizeof msg) == GRP_RESULT && now == 1006,
           "another connection of the same session invokes the object, untouched by the others: 1006");
    code = 0;
    result(destroy(b, id, &code, msg, sizeof msg) == GRP_OBJ_DESTROYED, "OBJ_DESTROY: OBJ_DESTROYED");
    code = 0;
    result(add(a, id, d, d->hash, 1, &now, &code, msg, sizeof msg) == GRP_ERROR && code == GRID_ERR_NOT_FOUND,
           "a destroyed object: NOT_FOUND");
    code = 0;
    result(destroy(a, id, &code, msg, sizeof msg) == GRP_ERROR && code == GRID_ERR_NOT_FOUND,
           "destroying it again: NOT_FOUND");

    /* An object dies with the connection that created it. */
    conn *owner = open_conn();
    oid oid1 = create(owner, "counter");
    result(made_one(oid1) && add(b, oid1, d, d->hash, 2, &now, &code, msg, sizeof msg) == GRP_RESULT &&
               now == 1002,
           "an object of another connection works");
    close_conn(owner);
    int gone = 0;
    for (int i = 0; i < 100 && !gone; i++) {
        code = 0;
        uint32_t t = add(b, oid1, d, d->hash, 1, &now, &code, msg, sizeof msg);
        gone = t == GRP_ERROR && code == GRID_ERR_NOT_FOUND;
        if (!gone) {
            struct timespec ts = {0, 20000000};
            nanosleep(&ts, NULL);
        }
    }
    result(gone, "once its connection closed, the object is gone: NOT_FOUND");
    result(in_step(b) && in_step(a), "both connections still answer");

    /* Ids do not follow a counter: neither consecutive nor a bijection of one (the old
     * splitmix64 of seed + counter, whose inverse of consecutive ids differs by 1), and
     * any two differ in many bits. */
    {
        enum { N = 16 };
        oid v[N];
        int made = 0, counter = 0, close_bits = 0;
        for (int i = 0; i < N; i++)
            if (made_one(v[i] = create(a, "counter"))) made++;
        for (int i = 1; i < N; i++) {
            /* Each half on its own, as an older server's 64-bit id (and its counter) was. */
            for (int half = 0; half < 2; half++) {
                uint64_t u = half ? v[i].lo : v[i].hi, w = half ? v[i - 1].lo : v[i - 1].hi;
                uint64_t x = unmix(u), y = unmix(w);
                if (x - y < 1024 || y - x < 1024 || u - w < 1024 || w - u < 1024) counter++;
            }
            if (__builtin_popcountll(v[i].hi ^ v[i - 1].hi) + __builtin_popcountll(v[i].lo ^ v[i - 1].lo) <
                32)
                close_bits++;
        }
        result(made == N, "%d objects made in a row", N);
        result(counter == 0, "their ids follow no counter (%d of %d half-pairs did)", counter, 2 * (N - 1));
        result(close_bits == 0, "consecutive 128-bit ids differ in many bits (%d pairs in fewer than 32)",
               close_bits);
        for (int i = 0; i < N; i++)
            destroy(a, v[i], &code, msg, sizeof msg);
    }

    grd_free(d);
    close_conn(a);
    close_conn(b);
    printf("1..%d\n", tests);
    return failed ? 1 : 0;
}
