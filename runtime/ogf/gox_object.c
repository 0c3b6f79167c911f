/* gox_object.c: Ninf-G's object handles (grpc_object_handle_*_np, grpc_invoke_*_np) over
 * the core's remote objects (grid_object_*_np, gridrpc.h). The handle names its server
 * the way a function handle does; the object is created when the handle is
 * initialized (its _initialize runs) and destroyed with it (its _finalize runs).
 * Asynchronous invocations are sessions of the same table as grpc_call_async's, so
 * every wait, probe and cancel takes them. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gox.h"

#define OBJECT_MAGIC 0x4f424a48u /* "OBJH" */

/* The handle of each asynchronous invocation, for
 * grpc_object_handle_get_from_session_np: dropped when its handle is destructed. */
static pthread_mutex_t slock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    grpc_sessionid_t id;
    grpc_object_handle_t_np *h;
} * smap;
static size_t nsmap, capsmap;

static int remember(grpc_sessionid_t id, grpc_object_handle_t_np *h) {
    pthread_mutex_lock(&slock);
    if (nsmap == capsmap) {
        size_t cap = capsmap ? capsmap * 2 : 64;
        void *m = realloc(smap, cap * sizeof *smap);
        if (!m) {
            pthread_mutex_unlock(&slock);
            return -1;
        }
        smap = m;
        capsmap = cap;
    }
    smap[nsmap].id = id;
    smap[nsmap].h = h;
    nsmap++;
    pthread_mutex_unlock(&slock);
    return 0;
}

static void forget_handle(const grpc_object_handle_t_np *h) {
    pthread_mutex_lock(&slock);
    size_t k = 0;
    for (size_t i = 0; i < nsmap; i++)
        if (smap[i].h != h) smap[k++] = smap[i];
    nsmap = k;
    pthread_mutex_unlock(&slock);
}

static grpc_error_t check_object(const grpc_object_handle_t_np *h) {
    if (h && h->magic_np == OBJECT_MAGIC && h->object_np) return GRPC_NO_ERROR;
    return gox_result(
        GRPC_INVALID_OBJECT_HANDLE_NP,
        h ? "the object handle is not initialized (grpc_object_handle_init_np or _default_np) or "
            "was destructed"
          : "the object handle is NULL");
}

/* The GRPC code for the core's failure to create an object: a class the server does
 * not have is Ninf-G's FUNCTION_NOT_FOUND, as a missing function is. */
static grpc_error_t create(grpc_object_handle_t_np *h, const char *host, int port, const char *cls) {
    if (strlen(host) >= sizeof h->host_np || strlen(cls) >= sizeof h->class_np)
        return gox_result(GRPC_OTHER_ERROR_CODE, "the server or class name is too long");
    char server[sizeof h->host_np + 16];
    snprintf(server, sizeof server, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
    struct grid_object_np *o = NULL;
    int g = grid_object_create_np(&o, server, cls);
    if (g) return gox_result_core(gox_map(g));
    memset(h, 0, sizeof *h);
    h->magic_np = OBJECT_MAGIC;
    h->port_np = port;
    snprintf(h->host_np, sizeof h->host_np, "%s", host);
    snprintf(h->class_np, sizeof h->class_np, "%s", cls);
    h->object_np = o;
    return gox_result(GRPC_NO_ERROR, NULL);
}

static grpc_error_t check_class(const grpc_object_handle_t_np *h, const char *cls) {
    if (!h) return gox_result(GRPC_INVALID_OBJECT_HANDLE_NP, "the object handle is NULL");
    if (!cls || !*cls) return gox_result(GRPC_FUNCTION_NOT_FOUND, "no class name given");
    return GRPC_NO_ERROR;
}

grpc_error_t grpc_object_handle_default_np(grpc_object_handle_t_np *h, const char *cls) {
    grpc_error_t rc = gox_check_initialized();
    if (!rc) rc = check_class(h, cls);
    if (rc) return rc;
    char host[GOX_MAX_HOST];
    int port;
    rc = gox_default_server(cls, host, sizeof host, &port);
    return rc ? rc : create(h, host, port, cls);
}

grpc_error_t grpc_object_handle_init_np(grpc_object_handle_t_np *h, const char *server, const char *cls) {
    if (!server || !*server) return grpc_object_handle_default_np(h, cls);
    grpc_error_t rc = gox_check_initialized();
    if (!rc) rc = check_class(h, cls);
    if (rc) return rc;
    char host[GOX_MAX_HOST];
    int port;
    gox_server_address(server, host, sizeof host, &port);
    return create(h, host, port, cls);
}

/* With attributes (Ninf-G): HOSTNAME (and PORT, 0: the configured one) name the server,
 * FUNCNAME the class. Read through the attribute calls, which check the attribute. */
grpc_error_t grpc_object_handle_init_with_attr_np(grpc_object_handle_t_np *h, grpc_handle_attr_t_np *a) {
    void *host = NULL, *cls = NULL, *port = NULL;
    grpc_error_t rc = grpc_handle_attr_get_np(a, GRPC_HANDLE_ATTR_HOSTNAME, &host);
    if (!rc) rc = grpc_handle_attr_get_np(a, GRPC_HANDLE_ATTR_FUNCNAME, &cls);
    if (!rc) rc = grpc_handle_attr_get_np(a, GRPC_HANDLE_ATTR_PORT, &port);
    if (!rc && (!cls || !*(char *)cls))
        rc = gox_result(
            GRPC_FUNCTION_NOT_FOUND,
            "the handle attribute names no class: set GRPC_HANDLE_ATTR_FUNCNAME to \"module/Class\"");
    if (!rc) rc = check_class(h, cls);
    if (!rc) {
        char addr[GOX_MAX_HOST];
        int p = 0;
        if (host && *(char *)host)
            gox_server_address(host, addr, sizeof addr, &p);
        else
            rc = gox_default_server(cls, addr, sizeof addr, &p);
        if (!rc && port && *(int *)port > 0) p = *(int *)port;
        if (!rc) rc = create(h, addr, p, cls);
    }
    free(host);
    free(cls);
    free(port);
    return rc;
}

grpc_error_t grpc_object_handle_get_attr_np(grpc_object_handle_t_np *h, grpc_handle_attr_t_np *a) {
    grpc_error_t rc = gox_check_initialized();
    if (!rc) rc = check_object(h);
    if (!rc) rc = grpc_handle_attr_initialize_np(a);
    if (!rc) rc = grpc_handle_attr_set_np(a, GRPC_HANDLE_ATTR_HOSTNAME, h->host_np);
    if (!rc) rc = grpc_handle_attr_set_np(a, GRPC_HANDLE_ATTR_FUNCNAME, h->class_np);
    if (!rc) rc = grpc_handle_attr_set_np(a, GRPC_HANDLE_ATTR_PORT, &h->port_np);
    return rc;
}

grpc_error_t grpc_object_handle_destruct_np(grpc_object_handle_t_np *h) {
    grpc_error_t rc = gox_check_initialized();
    if (!rc) rc = check_object(h);
    if (rc) return rc;
    struct grid_object_np *o = h->object_np;
    h->magic_np = 0;
    h->object_np = NULL;
    forget_handle(h);
    int g = grid_object_destroy_np(o);
    return g ? gox_result_core(gox_map(g)) : gox_result(GRPC_NO_ERROR, NULL);
}

static grpc_error_t method_name(const char *method) {
    if (method && *method) return GRPC_NO_ERROR;
    return gox_result(GRPC_FUNCTION_NOT_FOUND, "no method name given");
}

/* Ninf-G programs may write the method as "name" or, like the Fortran API, "name()". */
static void plain_method(const char *method, char *out, size_t n) {
    snprintf(out, n, "%s", method);
    size_t len = strlen(out);
    if (len > 2 && strcmp(out + len - 2, "()") == 0) out[len - 2] = '\0';
}

/* Invokes METHOD with GIVEN arguments from AP (or the stack ARGV of NARGS) and, for an
 * asynchronous invocation (SESSION), records the session. */
static grpc_error_t invoke(grpc_object_handle_t_np *h, const char *method, grpc_sessionid_t *session,
                           int given, va_list *ap, int nargs, void *const *argv) {
    char m[256];
    plain_method(method, m, sizeof m);
    if (!session) {
        int g = ap ? grid_object_invoke_va_np(h->object_np, m, given, *ap)
                   : grid_object_invoke_argv_np(h->object_np, m, nargs, argv);
        return g ? gox_result_core(gox_map(g)) : gox_result(GRPC_NO_ERROR, NULL);
    }
    int id = ap ? grid_object_invoke_async_va_np(h->object_np, m, given, *ap)
                : grid_object_invoke_async_argv_np(h->object_np, m, nargs, argv);
    if (id <= 0) return gox_result_core(gox_map(id < 0 ? -id : GRID_ERR_INTERNAL));
    if (gox_add_object_session(id) || remember(id, h)) {
        grid_cancel(id);
        grid_wait(id);
        grid_forget_np(id);
        return gox_result(GRPC_OTHER_ERROR_CODE, "out of memory");
    }
    *session = id;
    return gox_result(GRPC_NO_ERROR, NULL);
}

static grpc_error_t start(grpc_object_handle_t_np *h, const char *method, grpc_sessionid_t *session,
                          int async) {
    grpc_error_t rc = gox_check_initialized();
    if (!rc) rc = check_object(h);
    if (!rc) rc = method_name(method);
    if (!rc && async && !session) rc = gox_result(GRPC_OTHER_ERROR_CODE, "the session id pointer is NULL");
    return rc;
}

grpc_error_t grpc_invoke_counted_np(int nargs, grpc_object_handle_t_np *h, const char *method, ...) {
    grpc_error_t rc = start(h, method, NULL, 0);
    if (rc) return rc;
    va_list ap;
    va_start(ap, method);
    rc = invoke(h, method, NULL, nargs - 2, &ap, 0, NULL);
    va_end(ap);
    return rc;
}

grpc_error_t(grpc_invoke_np)(grpc_object_handle_t_np *h, const char *method, ...) {
    grpc_error_t rc = start(h, method, NULL, 0);
    if (rc) return rc;
    va_list ap;
    va_start(ap, method);
    rc = invoke(h, method, NULL, -1, &ap, 0, NULL);
    va_end(ap);
    return rc;
}

grpc_error_t grpc_invoke_async_counted_np(int nargs, grpc_object_handle_t_np *h, const char *method,
                                          grpc_sessionid_t *session, ...) {
    grpc_error_t rc = start(h, method, session, 1);
    if (rc) return rc;
    va_list ap;
    va_start(ap, session);
    rc = invoke(h, method, session, nargs - 3, &ap, 0, NULL);
    va_end(ap);
    return rc;
}

grpc_error_t(grpc_invoke_async_np)(grpc_object_handle_t_np *h, const char *method, grpc_sessionid_t *session,
                                   ...) {
    grpc_error_t rc = start(h, method, session, 1);
    if (rc) return rc;
    va_list ap;
    va_start(ap, session);
    rc = invoke(h, method, session, -1, &ap, 0, NULL);
    va_end(ap);
    return rc;
}

/* The argument stack's elements as an argument vector for the method's interface. */
static grpc_error_t invoke_stack(grpc_object_handle_t_np *h, const char *method, grpc_sessionid_t *session,
                                 grpc_arg_stack_t *stack) {
    grpc_error_t rc = start(h, method, session, session != NULL);
    if (!rc && !stack) rc = gox_result(GRPC_OTHER_ERROR_CODE, "the argument stack is NULL");
    if (rc) return rc;
    gox_argv *a = malloc(sizeof *a);
    if (!a) return gox_result(GRPC_OTHER_ERROR_CODE, "out of memory");
    char m[256];
    plain_method(method, m, sizeof m);
    snprintf(a->url, sizeof a->url, "%s.%s", grid_object_url_np(h->object_np), m);
    int g = grid_describe_np(a->url, &a->fn);
    if (g)
        rc = gox_result_core(gox_map(g));
    else
        rc = gox_argv_from_stack(a, stack);
    if (!rc) rc = invoke(h, method, session, -1, NULL, a->nargs, a->argv);
    free(a);
    return rc;
}

grpc_error_t grpc_invoke_arg_stack_np(grpc_object_handle_t_np *h, const char *method,
                                      grpc_arg_stack_t *stack) {
    return invoke_stack(h, method, NULL, stack);
}

grpc_error_t grpc_invoke_arg_stack_async_np(grpc_object_handle_t_np *h, const char *method,
                                            grpc_sessionid_t *session, grpc_arg_stack_t *stack) {
    if (!session) return start(h, method, session, 1);
    return invoke_stack(h, method, session, stack);
}

/* ---- Arrays of handles and sessions (Ninf-G) */

grpc_error_t grpc_object_handle_array_init_np(grpc_object_handle_t_np *hs, size_t n, const char *server,
                                              const char *cls) {
    grpc_error_t rc = gox_check_initialized();
    if (!rc && !hs) rc = gox_result(GRPC_INVALID_OBJECT_HANDLE_NP, "the array of object handles is NULL");
    for (size_t i = 0; !rc && i < n; i++) {
        rc = grpc_object_handle_init_np(&hs[i], server, cls);
        if (rc) {
            /* All or none: the objects made so far end again. */
            char msg[1024];
            snprintf(msg, sizeof msg, "%s", grpc_last_error_np());
            while (i-- > 0)
                grpc_object_handle_destruct_np(&hs[i]);
            return gox_result(rc, "object %zu of %zu: %s", i + 1, n, msg);
        }
    }
    return rc;
}

grpc_error_t grpc_object_handle_array_default_np(grpc_object_handle_t_np *hs, size_t n, const char *cls) {
    return grpc_object_handle_array_init_np(hs, n, NULL, cls);
}

grpc_error_t grpc_object_handle_array_destruct_np(grpc_object_handle_t_np *hs, size_t n) {
    grpc_error_t rc = gox_check_initialized();
    if (!rc && !hs) rc = gox_result(GRPC_INVALID_OBJECT_HANDLE_NP, "the array of object handles is NULL");
    grpc_error_t first = rc;
    for (size_t i = 0; !rc && i < n; i++) {
        grpc_error_t r = grpc_object_handle_destruct_np(&hs[i]);
        if (r && !first) first = r;
    }
    return first ? first : gox_result(GRPC_NO_ERROR, NULL);
}

grpc_error_t grpc_object_handle_get_from_session_np(grpc_object_handle_t_np **hp, grpc_sessionid_t id) {
    grpc_error_t rc = gox_check_initialized();
    if (!rc && !hp) rc = gox_result(GRPC_OTHER_ERROR_CODE, "the handle pointer is NULL");
    if (rc) return rc;
    grpc_object_handle_t_np *h = NULL;
    pthread_mutex_lock(&slock);
    for (size_t i = 0; i < nsmap && !h; i++)
        if (smap[i].id == id) h = smap[i].h;
    pthread_mutex_unlock(&slock);
    if (!h)
        return gox_result(GRPC_INVALID_SESSION_ID,
                          "%d is not a session of a live object handle (grpc_invoke_async_np)", id);
    *hp = h;
    return gox_result(GRPC_NO_ERROR, NULL);
}

grpc_error_t grpc_object_handle_is_ready_np(grpc_object_handle_t_np *h) {
    grpc_error_t rc = gox_check_initialized();
    if (!rc) rc = check_object(h);
    return rc ? rc : gox_result(GRPC_NO_ERROR, NULL);
}
