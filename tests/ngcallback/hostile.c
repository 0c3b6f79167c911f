/* hostile.c (callback-hostile HOST PORT [leave]): a client that answers gridrpcd's callbacks
 * wrongly, against the callback/cb_many function of tests/ngcallback/callback.idl:
 * arguments too long, too short, a head where none belongs, an unknown code, a wrong
 * sequence number, and an answer nobody asked for. Each time the server must refuse the
 * answer (the call fails with ERROR naming the callback) and go on serving. Prints one
 * line per check; exit status 1 when one fails. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "grp_auth.h"
#include "grp_proto.h"

static int failures;

static void check(int cond, const char *what, const char *detail) {
    printf("%s %s%s%s\n", cond ? "ok" : "FAILED", what, detail && *detail ? ": " : "", detail ? detail : "");
    if (!cond) failures++;
}

typedef struct peer {
    int fd;
    grw_reader r;
    grw_writer w;
} peer;

static peer *dial(const char *host, int port) {
    gr_err e;
    peer *p = calloc(1, sizeof *p);
    p->fd = grw_connect(host, port, 5, &e);
    if (p->fd < 0) {
        fprintf(stderr, "connect: %s\n", e.msg);
        exit(2);
    }
    grw_reader_init(&p->r, p->fd, 1u << 26);
    grw_writer_init(&p->w, p->fd);
    p->r.deadline_ns = p->w.deadline_ns = 0;
    grp_hello m = {"callback-hostile", 1, 1, "", {0}, 0};
    grp_hello_ok ok;
    if (grp_auth_hello(&p->r, &p->w, 1, &m, NULL, "", &ok, NULL, &e)) {
        fprintf(stderr, "hello failed: %s\n", e.msg);
        exit(2);
    }
    return p;
}

static void hang_up(peer *p) {
    close(p->fd);
    free(p);
}

static void dummy(void) {}

/* Sends CALL ID of cb_many (N 2, times 3) and reads the CALLBACK it causes. */
static int call_until_callback(peer *p, const grd_desc *d, uint64_t id, grp_callback_target *t) {
    static double a[4] = {1, 2, 3, 4}, out[4];
    int n = 2, times = 3;
    void (*fn)(void) = dummy;
    void *argv[5] = {&n, &times, a, out, NULL};
    memcpy(&argv[4], &fn, sizeof fn);
    grm_call *c = malloc(grm_call_size(d->nparams));
    gr_err e;
    grw_limits lim;
    grp_limits_default(&lim);
    grw_header h;
    int rc = grm_from_argv(c, d, argv, &lim, &e);
    if (!rc) rc = grp_write_call(&p->w, id, "callback/cb_many", d->hash, c, &lim, &e);
    if (!rc) rc = grp_read_header(&p->r, &h, &e);
    if (!rc && (h.type != GRP_CALLBACK || h.request_id != id))
        rc = gr_seterr(&e, GRID_ERR_PROTOCOL, "expected CALLBACK, got %s", grp_type_name(h.type));
    if (!rc) rc = grp_read_callback_target(&p->r, t, &e);
    if (!rc) rc = grw_skip(&p->r, &e);
    free(c);
    if (rc) fprintf(stderr, "call %llu: %s\n", (unsigned long long)id, e.msg);
    return rc;
}

/* Reads the call's answer: it must be ERROR whose message says WANT. */
static void expect_error(peer *p, uint64_t id, const char *what, const char *want) {
    gr_err e;
    grw_header h;
    grp_error m;
    int rc = grp_read_header(&p->r, &h, &e);
    if (rc) {
        check(0, what, e.msg);
        return;
    }
    if (h.type != GRP_ERROR || h.request_id != id) {
        check(0, what, grp_type_name(h.type));
        return;
    }
    rc = grp_read_error(&p->r, &m, &e);
    check(!rc && strstr(m.message, "callback 'cb'") && strstr(m.message, want), what, rc ? e.msg : m.message);
}

/* CALLBACK_RESULT with GRID_OK, a head of HEAD_LEN bytes and BULK_LEN bytes of bulk. */
static void answer_raw(peer *p, uint64_t id, const grp_callback_target *t, uint32_t seq, int code,
                       uint32_t head_len, uint32_t bulk_len) {
    gr_err e;
    static const unsigned char zeros[256];
    grw_begin(&p->w, GRP_CALLBACK_RESULT, 0, id, &e);
    grw_write_u32(&p->w, t->index, &e);
    grw_write_u32(&p->w, seq, &e);
    grw_write_i32(&p->w, code, &e);
    grw_write_string(&p->w, "", &e);
    grw_write_u32(&p->w, head_len, &e);
    grw_write(&p->w, zeros, head_len, &e);
    grw_write(&p->w, zeros, bulk_len, &e);
    grw_finish(&p->w, &e);
}

static int pong(peer *p) {
    gr_err e;
    grw_header h;
    grp_pong m;
    return grp_write_empty(&p->w, GRP_PING, 99, &e) == 0 && grp_read_header(&p->r, &h, &e) == 0 &&
           h.type == GRP_PONG && grp_read_pong(&p->r, &m, &e) == 0;
}

/* callback-hostile HOST PORT leave: a call whose body calls back only after its client
 * left. Against a server of one worker, run.sh's next call finds that worker only if
 * the callback failed at once instead of waiting for an answer nobody will read. */
static int leave(const char *host, int port) {
    gr_err e;
    grw_header h;
    char q[GRP_MAX_FUNCTION_NAME + 1];
    peer *p = dial(host, port);
    grd_desc *da = NULL;
    if (grp_write_get_descriptor(&p->w, 3, "callback/cb_after", &e) || grp_read_header(&p->r, &h, &e) ||
        h.type != GRP_DESCRIPTOR || grp_read_descriptor(&p->r, q, &da, &e)) {
        fprintf(stderr, "descriptor of cb_after: %s\n", e.msg);
        return 2;
    }
    int ms = 300, rc[1];
    void (*fn)(void) = dummy;
    void *av[3] = {&ms, rc, NULL};
    memcpy(&av[2], &fn, sizeof fn);
    grm_call *c = malloc(grm_call_size(da->nparams));
    grw_limits lim;
    grp_limits_default(&lim);
    if (grm_from_argv(c, da, av, &lim, &e) ||
        grp_write_call(&p->w, 20, "callback/cb_after", da->hash, c, &lim, &e))
        check(0, "sending cb_after", e.msg);
    free(c);
    /* Let the server read the call before leaving. */
    check(pong(p), "a call that will call back later is on its way", "");
    hang_up(p);
    grd_free(da);
    return failures ? 1 : 0;
}

int main(int argc, char **argv) {
    if (argc != 3 && !(argc == 4 && strcmp(argv[3], "leave") == 0)) {
        fprintf(stderr, "usage: callback-hostile HOST PORT [leave]\n");
        return 2;
    }
    if (argc == 4) return leave(argv[1], atoi(argv[2]));
    const char *host = argv[1];
    int port = atoi(argv[2]);
    gr_err e;
    grw_header h;
    grd_desc *d = NULL;
    char q[GRP_MAX_FUNCTION_NAME + 1];
    peer *p = dial(host, port);
    if (grp_write_get_descriptor(&p->w, 2, "callback/cb_many", &e) || grp_read_header(&p->r, &h, &e) ||
        h.type != GRP_DESCRIPTOR || grp_read_descriptor(&p->r, q, &d, &e)) {
        fprintf(stderr, "descriptor: %s\n", e.msg);
        return 2;
    }
    grp_callback_target t;

    /* The callback's OUT d[2][2] is 32 bytes of bulk and no head. */
    if (!call_until_callback(p, d, 10, &t)) {
        answer_raw(p, 10, &t, t.seq, 0, 0, 40);
        expect_error(p, 10, "an answer with 8 bytes too many is refused", "refused");
    }
    if (!call_until_callback(p, d, 11, &t)) {
        answer_raw(p, 11, &t, t.seq, 0, 0, 24);
        expect_error(p, 11, "an answer with 8 bytes too few is refused", "refused");
    }
    if (!call_until_callback(p, d, 12, &t)) {
        answer_raw(p, 12, &t, t.seq, 0, 8, 32);
        expect_error(p, 12, "an answer with a head where none belongs is refused", "refused");
    }
    check(pong(p), "the connection still serves after answers it refused", "");

    /* An answer nobody asked for is ignored. */
    answer_raw(p, 77, &t, 1, 0, 0, 32);
    check(pong(p), "an unsolicited CALLBACK_RESULT is ignored", "");

    /* An unknown code, then a wrong sequence number: the stream cannot be trusted. */
    if (!call_until_callback(p, d, 13, &t)) {
        answer_raw(p, 13, &t, t.seq, 999, 0, 0);
        expect_error(p, 13, "an answer with an unknown code is refused", "malformed");
    }
    hang_up(p);
    p = dial(host, port);
    if (!call_until_callback(p, d, 14, &t)) {
        answer_raw(p, 14, &t, t.seq + 5, 0, 0, 32);
        expect_error(p, 14, "an answer with the wrong sequence number is refused", "while callback");
    }
    hang_up(p);

    /* The client leaves while the body waits for its callback: the server goes on. */
    p = dial(host, port);
    call_until_callback(p, d, 15, &t);
    hang_up(p);
    p = dial(host, port);
    check(pong(p), "the server serves new connections after all that", "");
    hang_up(p);
    grd_free(d);
    return failures ? 1 : 0;
}
