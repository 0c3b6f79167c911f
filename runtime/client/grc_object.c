/* grc_object.c: remote objects in the client core (Ninf-G's object handles): an object
 * handle owns a connection of its own (the server ties the object's life to it, as
 * Ninf-G ties it to its remote executable), creates the object with OBJ_CREATE and
 * destroys it with OBJ_DESTROY. A synchronous invocation goes over that connection;
 * an asynchronous one is an ordinary asynchronous call (grc_async.c) whose request
 * carries the object id, so waits, probes and cancel work on it unchanged. Methods'
 * descriptors ("module/Class.method") are fetched and cached as functions' are. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grc_client.h"

struct grid_object_np {
    pthread_mutex_t lock; /* one exchange at a time on conn */
    grc_conn *conn;       /* NULL once broken: the server has dropped the object */
    grc_target t;         /* the server; t.name is the class's qualified name */
    grp_object_id id;
    char url[GRC_MAX_HOST + GRC_MAX_NAME + 32];
};

const char *grid_object_url_np(const grid_object_np *obj) {
    return obj ? obj->url : "";
}

/* Reads the reply to request ID on C: its header must be TYPE (ERROR is the server's
 * refusal). Q: an invocation, whose method may call the caller's callbacks first
 * (grc_callback.c); NULL otherwise. *BROKEN: the connection cannot carry another message. */
static int expect(grc_conn *c, grc_req *q, uint64_t id, uint32_t type, const char *what, grw_header *h,
                  int *broken, gr_err *e) {
    int rc = q ? grc_callback_await(q, &c->rd, &c->wr, &c->server, id, h, e) : grp_read_header(&c->rd, h, e);
    if (rc) {
        *broken = 1;
        if (rc == GRID_ERR_CONN_LOST)
            gr_seterr(e, rc,
                      "the server closed the connection during %s: it may have crashed or been stopped",
                      what);
        return rc;
    }
    if (h->request_id != id) {
        *broken = 1;
        return gr_seterr(e, GRID_ERR_PROTOCOL, "reply to request %llu while waiting for %llu",
                         (unsigned long long)h->request_id, (unsigned long long)id);
    }
    int in_step = 1;
    rc = grp_expect(&c->rd, h, type, what, &in_step, e);
    *broken = !in_step;
    return rc;
}

int grid_object_create_np(grid_object_np **out, const char *server, const char *cls) {
    gr_err e;
    gr_clearerr(&e);
    if (!out || !cls || !*cls) {
        grc_report(GRID_ERR_ARGS, "grid_object_create_np: no object pointer or no class name");
        return GRID_ERR_ARGS;
    }
    *out = NULL;
    grid_object_np *o = calloc(1, sizeof *o);
    if (!o) {
        grc_report(GRID_ERR_NOMEM, "out of memory");
        return GRID_ERR_NOMEM;
    }
    grc_config cfg;
    char name[GRC_MAX_HOST + GRC_MAX_NAME + 32];
    if (server && *server)
        snprintf(name, sizeof name, "gridrpc://%s/%s", server, cls);
    else
        snprintf(name, sizeof name, "%s", cls);
    int rc = grc_config_get(&cfg, &e);
    if (!rc) rc = grc_resolve(name, &cfg, &o->t, &e);
    if (!rc) rc = grc_conn_get(o->t.host, o->t.port, &cfg, &o->conn, &e);
    if (rc == GRID_ERR_TIMEOUT) e.code = rc = GRID_ERR_CONNECT;
    if (!rc) {
        grc_conn *c = o->conn;
        uint64_t id = c->next_id++;
        c->rd.deadline_ns = c->wr.deadline_ns = grc_config_deadline(&cfg);
        int broken = 0;
        grw_header h;
        char qualified[GRP_MAX_FUNCTION_NAME + 1];
        rc = grp_write_obj_create(&c->wr, id, o->t.name, &e);
        if (rc) broken = 1;
        if (!rc) rc = expect(c, NULL, id, GRP_OBJ_CREATED, "OBJ_CREATE", &h, &broken, &e);
        if (!rc) rc = grp_read_obj_created(&c->rd, &o->id, qualified, &e);
        if (rc) {
            /* The class or the server refused (ERROR, in step) or the stream is lost:
             * either way this connection is closed, never pooled again. */
            grc_conn_put(c, 1);
            o->conn = NULL;
            (void)broken;
        } else {
            snprintf(o->t.name, sizeof o->t.name, "%s", qualified);
        }
    }
    if (rc) {
        gr_prefixerr(&e, "class %s on %s:%d: ", cls, o->t.host[0] ? o->t.host : "?", o->t.port);
        grc_report(rc, e.msg);
        free(o);
        return rc;
    }
    pthread_mutex_init(&o->lock, NULL);
    snprintf(o->url, sizeof o->url, "gridrpc://%s:%d/%s", o->t.host, o->t.port, o->t.name);
    if (strchr(o->t.host, ':'))
        snprintf(o->url, sizeof o->url, "gridrpc://[%s]:%d/%s", o->t.host, o->t.port, o->t.name);
    *out = o;
    grc_report(GRID_OK, NULL);
    return GRID_OK;
}

/* A request for METHOD of the object CTX: grc_req_start's work for an invocation. */
typedef struct invoke_ctx {
    grid_object_np *obj;
    const char *method;
} invoke_ctx;

static int start_invoke(grc_req *q, const void *ctx, const grc_args *args, grc_config *cfg, gr_err *e) {
    const invoke_ctx *ic = ctx;
    memset(q, 0, sizeof *q);
    grc_route_reset(&q->route);
    int rc = grc_config_get(cfg, e);
    if (rc) return rc;
    q->t = ic->obj->t;
    if (!ic->method || !*ic->method || strchr(ic->method, '.') || strchr(ic->method, '/') ||
        strlen(ic->obj->t.name) + 1 + strlen(ic->method) >= sizeof q->t.name)
        return gr_seterr(e, GRID_ERR_ARGS, "'%s' is not a method name of class %s",
                         ic->method ? ic->method : "", ic->obj->t.name);
    size_t n = strlen(ic->obj->t.name); /* fits: checked above */
    memcpy(q->t.name, ic->obj->t.name, n);
    q->t.name[n] = '.';
    memcpy(q->t.name + n + 1, ic->method, strlen(ic->method) + 1);
    q->object = ic->obj->id;
    rc = grc_descriptor(&q->t, cfg, &q->desc, e);
    if (!rc) rc = grc_req_fill(q, args, e);
    if (rc) {
        grc_req_blame(q, e);
        grc_req_free(q);
    }
    return rc;
}

static int invoke(grid_object_np *o, const char *method, const grc_args *args, gr_err *e) {
    grc_config cfg;
    grc_req q;
    invoke_ctx ic = {o, method};
    if (grc_txn_active())
        return gr_seterr(e, GRID_ERR_ARGS,
                         "%s: methods of remote objects cannot be part of a transaction (an object's state "
                         "is not data the transaction can stage): invoke it before grid_transaction_begin or "
                         "after grid_transaction_end",
                         method);
    int rc = start_invoke(&q, &ic, args, &cfg, e);
    if (rc) return rc;
    pthread_mutex_lock(&o->lock);
    for (;;) {
        grc_conn *c = o->conn;
        if (!c) {
            rc = gr_seterr(
                e, GRID_ERR_CONN_LOST,
                "the connection of this object was lost, and the server destroyed the object with it: "
                "create a new object");
            break;
        }
        rc = grc_req_check(&q, &c->server, e);
        if (rc) break;
        c->rd.deadline_ns = c->wr.deadline_ns = grc_config_deadline(&cfg);
        uint64_t id = c->next_id++;
        int broken = 0;
        grw_header h;
        rc = grc_req_send(&q, &c->wr, id, &c->server, e);
        if (rc) broken = 1;
        if (!rc) rc = expect(c, &q, id, GRP_RESULT, "OBJ_INVOKE", &h, &broken, e);
        if (!rc) {
            rc = grp_read_result(&c->rd, q.call, &q.route.times, e);
            broken = rc != GRID_OK; /* the reply was read whole, or the stream is lost */
        }
        if (rc == GRID_ERR_TIMEOUT) {
            gr_seterr(e, GRID_ERR_TIMEOUT,
                      "no reply within %g s (GRIDRPC_TIMEOUT); the method may still be running",
                      cfg.call_timeout);
            broken = 1;
        }
        if (rc == GRID_ERR_CONN_LOST)
            gr_seterr(
                e, rc,
                "the server closed the connection of this object during the invocation: it may have crashed "
                "or been stopped, and the object is gone with it: create a new object");
        if (broken) {
            /* The stream is out of step: the connection (and with it the object) is gone. */
            grc_conn_put(c, 1);
            o->conn = NULL;
        }
        if (rc == GRID_ERR_STALE && grc_req_refresh(&q, e) == GRID_OK) continue;
        break;
    }
    pthread_mutex_unlock(&o->lock);
    if (!rc) __atomic_add_fetch(&grc_stat_calls, 1, __ATOMIC_RELAXED);
    if (rc) grc_req_blame(&q, e);
    grc_req_free(&q);
    return rc;
}

static int bad_object(grid_object_np *obj, const char *fn) {
    if (obj) return GRID_OK;
    char m[160];
    snprintf(m, sizeof m, "%s: the object is NULL: create it with grid_object_create_np", fn);
    grc_report(GRID_ERR_ARGS, m);
    return GRID_ERR_ARGS;
}

int grid_object_invoke_va_np(grid_object_np *obj, const char *method, int nargs, va_list ap) {
    int rc = bad_object(obj, "grid_object_invoke_va_np");
    if (rc) return rc;
    gr_err e;
    gr_clearerr(&e);
    va_list aq;
    va_copy(aq, ap);
    grc_args args = {&aq, NULL, nargs < 0 ? -1 : nargs};
    rc = invoke(obj, method, &args, &e);
    va_end(aq);
    grc_report(rc, e.msg);
    return rc;
}

int grid_object_invoke_argv_np(grid_object_np *obj, const char *method, int nargs, void *const *argv) {
    int rc = bad_object(obj, "grid_object_invoke_argv_np");
    if (rc) return rc;
    gr_err e;
    gr_clearerr(&e);
    grc_args args = {NULL, argv, nargs};
    rc = invoke(obj, method, &args, &e);
    grc_report(rc, e.msg);
    return rc;
}

static int invoke_async(grid_object_np *obj, const char *method, const grc_args *args) {
    gr_err e;
    gr_clearerr(&e);
    invoke_ctx ic = {obj, method};
    int id = grc_call_async_req(start_invoke, &ic, args, &e);
    grc_report(id > 0 ? GRID_OK : -id, e.msg);
    return id;
}

int grid_object_invoke_async_va_np(grid_object_np *obj, const char *method, int nargs, va_list ap) {
    int rc = bad_object(obj, "grid_object_invoke_async_va_np");
    if (rc) return -rc;
    va_list aq;
    va_copy(aq, ap);
    grc_args args = {&aq, NULL, nargs < 0 ? -1 : nargs};
    int id = invoke_async(obj, method, &args);
    va_end(aq);
    return id;
}

int grid_object_invoke_async_argv_np(grid_object_np *obj, const char *method, int nargs, void *const *argv) {
    int rc = bad_object(obj, "grid_object_invoke_async_argv_np");
    if (rc) return -rc;
    grc_args args = {NULL, argv, nargs};
    return invoke_async(obj, method, &args);
}

int grid_object_invoke_counted_np(int nargs, grid_object_np *obj, const char *method, ...) {
    va_list ap;
    va_start(ap, method);
    int rc = grid_object_invoke_va_np(obj, method, nargs - 2, ap);
    va_end(ap);
    return rc;
}

int grid_object_invoke_async_counted_np(int nargs, grid_object_np *obj, const char *method, ...) {
    va_list ap;
    va_start(ap, method);
    int id = grid_object_invoke_async_va_np(obj, method, nargs - 2, ap);
    va_end(ap);
    return id;
}

int grid_object_destroy_np(grid_object_np *obj) {
    int rc = bad_object(obj, "grid_object_destroy_np");
    if (rc) return rc;
    gr_err e;
    gr_clearerr(&e);
    pthread_mutex_lock(&obj->lock);
    grc_conn *c = obj->conn;
    if (!c) {
        rc = gr_seterr(
            &e, GRID_ERR_CONN_LOST,
            "the connection of this object was lost earlier, and the server destroyed the object then");
    } else {
        grc_config cfg;
        rc = grc_config_get(&cfg, &e);
        uint64_t id = c->next_id++;
        c->rd.deadline_ns = c->wr.deadline_ns = grc_config_deadline(&cfg);
        int broken = 0;
        grw_header h;
        if (!rc) rc = grp_write_obj_destroy(&c->wr, id, obj->id, &e);
        if (!rc) rc = expect(c, NULL, id, GRP_OBJ_DESTROYED, "OBJ_DESTROY", &h, &broken, &e);
        if (!rc) rc = grp_read_empty(&c->rd, &e);
        /* Closed either way: if the destroy failed, the closing destroys the object. */
        grc_conn_put(c, 1);
        obj->conn = NULL;
    }
    pthread_mutex_unlock(&obj->lock);
    if (rc) gr_prefixerr(&e, "object of %s on %s:%d: ", obj->t.name, obj->t.host, obj->t.port);
    pthread_mutex_destroy(&obj->lock);
    free(obj);
    grc_report(rc, e.msg);
    return rc;
}
