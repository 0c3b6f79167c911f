/* grc_callback.c: the client's side of callbacks (Ninf IDL 'cb(IN double c[n], ...)').
 * While a call waits for its RESULT the server may send CALLBACK: the body called the
 * function the caller passed for a callback parameter. The arguments arrive as a
 * call's arrive at a server (grm, server side, with the callback's own descriptor), the
 * caller's function runs with one pointer per parameter, and its OUT and INOUT
 * arguments go back in CALLBACK_RESULT. A synchronous call runs the callback on the
 * caller's thread; an asynchronous one on the reader thread of the server's connection
 * (grc_async.c). A callback the client cannot run (no function was passed, bad
 * arguments) is answered with an error: the server then fails the call with it. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grc_client.h"

/* Calls FN with the N pointers of A (N <= GRD_MAX_CB_PARAMS): every parameter of a
 * client callback is a pointer, so one function type per count covers them all. */
#define P1 void *
#define P2 P1, P1
#define P4 P2, P2
#define P8 P4, P4
#define P16 P8, P8
static void call_with(grm_fn fn, void **a, uint32_t n) {
#define A1(i) a[i]
#define A2(i) A1(i), A1(i + 1)
#define A4(i) A2(i), A2(i + 2)
#define A8(i) A4(i), A4(i + 4)
#define A16(i) A8(i), A8(i + 8)
    typedef void (*f0)(void);
    typedef void (*f1)(P1);
    typedef void (*f2)(P2);
    typedef void (*f3)(P2, P1);
    typedef void (*f4)(P4);
    typedef void (*f5)(P4, P1);
    typedef void (*f6)(P4, P2);
    typedef void (*f7)(P4, P2, P1);
    typedef void (*f8)(P8);
    typedef void (*f9)(P8, P1);
    typedef void (*f10)(P8, P2);
    typedef void (*f11)(P8, P2, P1);
    typedef void (*f12)(P8, P4);
    typedef void (*f13)(P8, P4, P1);
    typedef void (*f14)(P8, P4, P2);
    typedef void (*f15)(P8, P4, P2, P1);
    typedef void (*f16)(P16);
    typedef void (*f17)(P16, P1);
    typedef void (*f18)(P16, P2);
    typedef void (*f19)(P16, P2, P1);
    typedef void (*f20)(P16, P4);
    typedef void (*f21)(P16, P4, P1);
    typedef void (*f22)(P16, P4, P2);
    typedef void (*f23)(P16, P4, P2, P1);
    typedef void (*f24)(P16, P8);
    typedef void (*f25)(P16, P8, P1);
    typedef void (*f26)(P16, P8, P2);
    typedef void (*f27)(P16, P8, P2, P1);
    typedef void (*f28)(P16, P8, P4);
    typedef void (*f29)(P16, P8, P4, P1);
    typedef void (*f30)(P16, P8, P4, P2);
    typedef void (*f31)(P16, P8, P4, P2, P1);
    typedef void (*f32)(P16, P16);
    switch (n) {
    case 0: ((f0)fn)(); break;
    case 1: ((f1)fn)(A1(0)); break;
    case 2: ((f2)fn)(A2(0)); break;
    case 3: ((f3)fn)(A2(0), A1(2)); break;
    case 4: ((f4)fn)(A4(0)); break;
    case 5: ((f5)fn)(A4(0), A1(4)); break;
    case 6: ((f6)fn)(A4(0), A2(4)); break;
    case 7: ((f7)fn)(A4(0), A2(4), A1(6)); break;
    case 8: ((f8)fn)(A8(0)); break;
    case 9: ((f9)fn)(A8(0), A1(8)); break;
    case 10: ((f10)fn)(A8(0), A2(8)); break;
    case 11: ((f11)fn)(A8(0), A2(8), A1(10)); break;
    case 12: ((f12)fn)(A8(0), A4(8)); break;
    case 13: ((f13)fn)(A8(0), A4(8), A1(12)); break;
    case 14: ((f14)fn)(A8(0), A4(8), A2(12)); break;
    case 15: ((f15)fn)(A8(0), A4(8), A2(12), A1(14)); break;
    case 16: ((f16)fn)(A16(0)); break;
    case 17: ((f17)fn)(A16(0), A1(16)); break;
    case 18: ((f18)fn)(A16(0), A2(16)); break;
    case 19: ((f19)fn)(A16(0), A2(16), A1(18)); break;
    case 20: ((f20)fn)(A16(0), A4(16)); break;
    case 21: ((f21)fn)(A16(0), A4(16), A1(20)); break;
    case 22: ((f22)fn)(A16(0), A4(16), A2(20)); break;
    case 23: ((f23)fn)(A16(0), A4(16), A2(20), A1(22)); break;
    case 24: ((f24)fn)(A16(0), A8(16)); break;
    case 25: ((f25)fn)(A16(0), A8(16), A1(24)); break;
    case 26: ((f26)fn)(A16(0), A8(16), A2(24)); break;
    case 27: ((f27)fn)(A16(0), A8(16), A2(24), A1(26)); break;
    case 28: ((f28)fn)(A16(0), A8(16), A4(24)); break;
    case 29: ((f29)fn)(A16(0), A8(16), A4(24), A1(28)); break;
    case 30: ((f30)fn)(A16(0), A8(16), A4(24), A2(28)); break;
    case 31: ((f31)fn)(A16(0), A8(16), A4(24), A2(28), A1(30)); break;
    case 32: ((f32)fn)(A16(0), A16(16)); break;
    }
#undef A1
#undef A2
#undef A4
#undef A8
#undef A16
}

/* Answers CALLBACK H with CODE (MSG) or, for GRID_OK, C's OUT and INOUT arguments. */
static int answer(grw_writer *w, pthread_mutex_t *wlock, const grw_header *h, const grp_callback_target *t,
                  int code, const char *msg, const grm_call *c, const grw_limits *server, gr_err *e) {
    if (wlock) pthread_mutex_lock(wlock);
    int rc = grp_write_callback_result(w, h->request_id, t->index, t->seq, code, msg, c, server, e);
    if (wlock) pthread_mutex_unlock(wlock);
    return rc;
}

/* Skips the rest of CALLBACK H and answers it with CODE (MSG). */
static int refuse(grw_reader *r, grw_writer *w, pthread_mutex_t *wlock, const grw_header *h,
                  const grp_callback_target *t, int code, const char *msg, gr_err *e) {
    int rc = grw_skip(r, e);
    if (!rc) rc = answer(w, wlock, h, t, code, msg, NULL, NULL, e);
    return rc;
}

int grc_callback_refuse(grw_reader *r, grw_writer *w, pthread_mutex_t *wlock, const grw_header *h, int code,
                        const char *msg, gr_err *e) {
    grp_callback_target t;
    int rc = grp_read_callback_target(r, &t, e);
    if (!rc) rc = refuse(r, w, wlock, h, &t, code, msg, e);
    return rc;
}

int grc_callback_serve(grc_req *q, grw_reader *r, grw_writer *w, pthread_mutex_t *wlock,
                       const grw_limits *server, const grw_header *h, gr_err *e) {
    grp_callback_target t;
    char msg[1600];
    int rc = grp_read_callback_target(r, &t, e);
    if (rc) return rc;
    const grd_desc *fd = q->desc;
    if (t.index >= fd->nparams || fd->params[t.index].type != GRD_CALLBACK) {
        snprintf(msg, sizeof msg, "the server asked for callback argument %u, but %s has no callback there",
                 t.index + 1, q->t.name);
        return refuse(r, w, wlock, h, &t, GRID_ERR_PROTOCOL, msg, e);
    }
    const char *name = fd->params[t.index].name;
    grm_fn fn = grm_callback_fn(q->call, t.index);
    if (!fn) {
        snprintf(msg, sizeof msg, "the caller passed NULL for it: pass a function");
        return refuse(r, w, wlock, h, &t, GRID_ERR_ARGS, msg, e);
    }
    grd_desc *d = NULL;
    grd_error ge;
    if (grd_callback_desc(fd, t.index, q->call->ival, &d, &ge) != GRD_OK) {
        snprintf(msg, sizeof msg, "callback '%s' cannot be sized: %s", name, ge.msg);
        return refuse(r, w, wlock, h, &t, GRID_ERR_ARGS, msg, e);
    }
    grm_call *c = malloc(grm_call_size(d->nparams));
    if (!c) {
        grd_free(d);
        return refuse(r, w, wlock, h, &t, GRID_ERR_NOMEM, "the client is out of memory", e);
    }
    grm_init(c, d, GRM_SERVER_SIDE);
    grw_limits lim;
    grp_limits_default(&lim);
    lim.max_message = r->max_message;
    rc = grp_read_callback_args(r, c, &lim, e);
    if (rc) {
        /* Arguments the client will not take (sizes, limits) leave the stream in step. */
        int in_step =
            rc == GRID_ERR_ARGS || rc == GRID_ERR_LIMIT || rc == GRID_ERR_NOMEM || rc == GRID_ERR_IO;
        if (in_step) {
            snprintf(msg, sizeof msg, "the client refused the arguments of callback '%s': %.1000s", name,
                     e->msg);
            rc = refuse(r, w, wlock, h, &t, rc, msg, e);
        }
    } else {
        void *a[GRD_MAX_CB_PARAMS];
        for (uint32_t j = 0; j < d->nparams; j++) {
            const grd_param *p = &d->params[j];
            /* Strings and filenames as char * (an OUT or INOUT string as char **),
             * everything else by address: the convention of docs/grpc.md. */
            int by_value =
                p->rank == 0 && (p->type == GRD_FILENAME || (p->type == GRD_STRING && p->mode == GRD_IN));
            a[j] = by_value ? *(char **)c->ptr[j] : c->ptr[j];
        }
        call_with(fn, a, d->nparams);
        rc = answer(w, wlock, h, &t, GRID_OK, NULL, c, server, e);
    }
    grm_release(c);
    free(c);
    grd_free(d);
    return rc;
}

int grc_callback_await(grc_req *q, grw_reader *r, grw_writer *w, const grw_limits *server, uint64_t id,
                       grw_header *h, gr_err *e) {
    for (;;) {
        int rc = grp_read_header(r, h, e);
        if (rc || h->type != GRP_CALLBACK || h->request_id != id) return rc;
        rc = grc_callback_serve(q, r, w, NULL, server, h, e);
        if (rc) return rc;
    }
}
