/* gox_api.c: the OGF GridRPC API (grpc_*, include/grpc_api.h) over the client core:
 * initialize/finalize, function handles, calls, and sessions. A session id is the
 * core's call id; the table here adds what the standard needs on top of the core's
 * record (the handle, whether a grpc wait took it, the failed-session list). State is
 * under one mutex that is never held across a blocking core call. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gox.h"

#define HANDLE_MAGIC 0x67525043u /* "gRPC": an initialized handle */

typedef struct gox_session {
    grpc_sessionid_t id;
    grpc_function_handle_t *handle;
    int waited; /* taken by a grpc wait: grpc_wait_any/all no longer return it */
    int listed; /* put on the failed-session list (once) */
} gox_session;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int initialized; /* read without the lock through __atomic */
static gox_config config;
static int timeouts_set;      /* grpc_initialize set the core's timeouts: finalize unsets them */
static gox_session *sessions; /* sorted by id */
static int nsessions, capsessions;
static grpc_sessionid_t *failed; /* FIFO: failed[failed_head .. nfailed) */
static int nfailed, capfailed, failed_head;

grpc_error_t gox_check_initialized(void) {
    if (__atomic_load_n(&initialized, __ATOMIC_ACQUIRE)) return GRPC_NO_ERROR;
    return gox_result(GRPC_NOT_INITIALIZED, "GridRPC is not initialized: call grpc_initialize first");
}

/* ---- Initializing and finalizing */

/* The file grpc_initialize(NULL) reads: Ninf-G's order. NULL when there is none. */
static const char *default_file(char *buf, size_t n) {
    const char *env = getenv("NG_CONFIG_FILE");
    if (env && *env) return env;
    const char *home = getenv("HOME");
    if (home && *home) {
        snprintf(buf, n, "%s/.ngconf", home);
        if (access(buf, F_OK) == 0) return buf;
    }
    return NULL;
}

grpc_error_t grpc_initialize(const char *config_file) {
    char buf[1024], msg[1024];
    pthread_mutex_lock(&lock);
    if (initialized) {
        pthread_mutex_unlock(&lock);
        return gox_result(GRPC_ALREADY_INITIALIZED,
                          "GridRPC is already initialized: call grpc_finalize first");
    }
    const char *path = config_file && *config_file ? config_file : default_file(buf, sizeof buf);
    gox_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.call_timeout = cfg.connect_timeout = -1;
    int rc = path ? gox_config_read(path, &cfg, msg, sizeof msg) : GRPC_NO_ERROR;
    /* The core's own settings (GRIDRPC_*, ~/.gridrpc.conf) apply to every call: a
     * mistake there is reported now rather than at the first call. */
    double core_connect = 0, core_call = 0;
    if (!rc && grid_get_timeouts_np(&core_connect, &core_call)) {
        snprintf(msg, sizeof msg, "%s", grid_last_error());
        rc = GRPC_CONFIGFILE_ERROR;
    }
    if (rc) {
        gox_config_free(&cfg);
        pthread_mutex_unlock(&lock);
        return gox_result(rc, "%s", msg);
    }
    if (cfg.call_timeout >= 0 || cfg.connect_timeout >= 0) {
        /* Only what the file sets: the core's own settings keep their names in messages. */
        grid_set_timeouts_from_np(cfg.connect_timeout, cfg.call_timeout, cfg.timeout_source);
        timeouts_set = 1;
    }
    config = cfg;
    __atomic_store_n(&initialized, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&lock);
    return gox_result(GRPC_NO_ERROR, NULL);
}

grpc_error_t grpc_finalize(void) {
    pthread_mutex_lock(&lock);
    if (!initialized) {
        pthread_mutex_unlock(&lock);
        return gox_check_initialized();
    }
    __atomic_store_n(&initialized, 0, __ATOMIC_RELEASE);
    gox_session *s = sessions;
    int n = nsessions;
    sessions = NULL;
    nsessions = capsessions = 0;
    free(failed);
    failed = NULL;
    nfailed = capfailed = failed_head = 0;
    gox_config_free(&config);
    if (timeouts_set) grid_clear_timeouts_np();
    timeouts_set = 0;
    pthread_mutex_unlock(&lock);
    /* Sessions still running are cancelled (they will not write into buffers the
     * program may free now); the core then forgets every record. */
    for (int i = 0; i < n; i++)
        if (!s[i].waited && grid_probe(s[i].id) == 0) grid_cancel(s[i].id);
    for (int i = 0; i < n; i++) {
        grid_wait(s[i].id);
        grid_forget_np(s[i].id);
    }
    free(s);
    /* The remote data of the program's session is freed on its servers. */
    grid_data_end_session_np();
    return gox_result(GRPC_NO_ERROR, NULL);
}

/* ---- Function handles */

grpc_error_t gox_check_handle(const grpc_function_handle_t *h) {
    if (h && h->magic_np == HANDLE_MAGIC) return GRPC_NO_ERROR;
    return gox_result(GRPC_INVALID_FUNCTION_HANDLE,
                      h ? "the function handle is not initialized (grpc_function_handle_init or _default) or "
                          "was destructed"
                        : "the function handle is NULL");
}

/* Binds H to FUNC on HOST:PORT once the server has described the function. */
static grpc_error_t bind_handle(grpc_function_handle_t *h, const char *host, int port, const char *func,
                                int transfer) {
    if (strlen(host) >= sizeof h->host_np || strlen(func) >= sizeof h->function_np)
        return gox_result(GRPC_OTHER_ERROR_CODE, "the server or function name is too long");
    grpc_function_handle_t t;
    memset(&t, 0, sizeof t);
    t.magic_np = HANDLE_MAGIC;
    t.port_np = port;
    t.transfer_np = transfer;
    snprintf(t.host_np, sizeof t.host_np, "%s", host);
    snprintf(t.function_np, sizeof t.function_np, "%s", func);
    gox_argv *a = malloc(sizeof *a);
    if (!a) return gox_result(GRPC_OTHER_ERROR_CODE, "out of memory");
    grpc_error_t rc = gox_argv_describe(&t, a);
    free(a);
    if (rc) return rc;
    *h = t;
    return gox_result(GRPC_NO_ERROR, NULL);
}

static grpc_error_t check_function(const grpc_function_handle_t *h, const char *func) {
    if (!h) return gox_result(GRPC_INVALID_FUNCTION_HANDLE, "the function handle is NULL");
    if (!func || !*func) return gox_result(GRPC_FUNCTION_NOT_FOUND, "no function name given");
    return GRPC_NO_ERROR;
}

/* The default server's handle (grpc_function_handle_default), PORT (nonzero) over
 * the server's own. */
static grpc_error_t bind_default(grpc_function_handle_t *h, const char *func, int port_given, int transfer) {
    char host[GOX_MAX_HOST] = "";
    int port = 0;
    pthread_mutex_lock(&lock);
    const char *assigned = gox_config_function_host(&config, func);
    if (assigned) gox_config_server(&config, assigned, host, sizeof host, &port);
    pthread_mutex_unlock(&lock);
    /* With a metaserver (the file's, or the core's), a function no <FUNCTION_INFO>
     * assigns is routed per call: the handle keeps the plain name and no server. */
    char meta[GOX_MAX_HOST];
    int meta_port;
    if (!host[0] && !port_given && grid_get_metaserver_np(meta, sizeof meta, &meta_port) == GRID_OK &&
        meta[0])
        return bind_handle(h, "", 0, func, transfer);
    pthread_mutex_lock(&lock);
    if (!host[0] && config.nservers)
        gox_config_server(&config, config.servers[0].host, host, sizeof host, &port);
    pthread_mutex_unlock(&lock);
    /* A malformed core configuration leaves HOST empty: that is reported below. */
    if (!host[0] && grid_get_server_np(host, sizeof host, &port)) host[0] = '\0';
    if (!host[0])
        return gox_result(GRPC_SERVER_NOT_FOUND,
                          "no default server for '%s': add a <SERVER> section (hostname, port) to the "
                          "configuration file given to grpc_initialize, or set GRIDRPC_SERVER=host:port",
                          func);
    return bind_handle(h, host, port_given ? port_given : port, func, transfer);
}

grpc_error_t gox_handle_init(grpc_function_handle_t *h, const char *server, int port_given, const char *func,
                             int transfer) {
    grpc_error_t rc = gox_check_initialized();
    if (!rc) rc = check_function(h, func);
    if (rc) return rc;
    if (!server || !*server) return bind_default(h, func, port_given, transfer);
    char host[GOX_MAX_HOST];
    int port;
    pthread_mutex_lock(&lock);
    gox_config_server(&config, server, host, sizeof host, &port);
    pthread_mutex_unlock(&lock);
    return bind_handle(h, host, port_given ? port_given : port, func, transfer);
}

grpc_error_t grpc_function_handle_default(grpc_function_handle_t *h, const char *func) {
    return gox_handle_init(h, NULL, 0, func, GRPC_ARGUMENT_TRANSFER_WAIT);
}

grpc_error_t grpc_function_handle_init(grpc_function_handle_t *h, const char *server, const char *func) {
    return gox_handle_init(h, server, 0, func, GRPC_ARGUMENT_TRANSFER_WAIT);
}

grpc_error_t grpc_list_functions_np(const char *server, char ***names, size_t *count) {
    grpc_error_t rc = gox_check_initialized();
    if (!rc && (!names || !count))
        rc = gox_result(GRPC_OTHER_ERROR_CODE, "grpc_list_functions_np: NAMES and COUNT must not be NULL");
    if (rc) return rc;
    *names = NULL;
    *count = 0;
    char host[GOX_MAX_HOST] = "", addr[GOX_MAX_HOST + 16];
    int port = 0;
    pthread_mutex_lock(&lock);
    if (server && *server)
        gox_config_server(&config, server, host, sizeof host, &port);
    else if (config.nservers)
        gox_config_server(&config, config.servers[0].host, host, sizeof host, &port);
    pthread_mutex_unlock(&lock);
    /* Neither named nor in the file: the core's default server. */
    if (host[0]) snprintf(addr, sizeof addr, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
    int n = 0;
    int g = grid_list_functions_np(host[0] ? addr : NULL, names, &n);
    if (g) return gox_result_core(gox_map(g));
    *count = (size_t)n;
    return gox_result(GRPC_NO_ERROR, NULL);
}

void grpc_free_functions_np(char **names) {
    grid_free_functions_np(names);
}

grpc_error_t grpc_function_handle_destruct(grpc_function_handle_t *h) {
    grpc_error_t rc = gox_check_initialized();
    if (!rc) rc = gox_check_handle(h);
    if (rc) return rc;
    h->magic_np = 0;
    return gox_result(GRPC_NO_ERROR, NULL);
}

/* ---- The session table (callers hold the lock) */

static int find(grpc_sessionid_t id) {
    int lo = 0, hi = nsessions - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        if (sessions[mid].id == id) return mid;
        if (sessions[mid].id < id)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

static int add_session(grpc_sessionid_t id, grpc_function_handle_t *h) {
    pthread_mutex_lock(&lock);
    if (nsessions == capsessions) {
        int cap = capsessions ? capsessions * 2 : 64;
        gox_session *s = realloc(sessions, (size_t)cap * sizeof *s);
        if (!s) {
            pthread_mutex_unlock(&lock);
            return -1;
        }
        sessions = s;
        capsessions = cap;
    }
    /* Ids grow, so this is nearly always an append; threads may finish out of order. */
    int at = nsessions;
    while (at > 0 && sessions[at - 1].id > id)
        at--;
    memmove(&sessions[at + 1], &sessions[at], (size_t)(nsessions - at) * sizeof *sessions);
    sessions[at] = (gox_session){id, h, 0, 0};
    nsessions++;
    pthread_mutex_unlock(&lock);
    return 0;
}

/* GRPC_NO_ERROR when ID is a session of ours (recorded otherwise). */
static grpc_error_t known(grpc_sessionid_t id) {
    pthread_mutex_lock(&lock);
    int i = find(id);
    pthread_mutex_unlock(&lock);
    if (i >= 0) return GRPC_NO_ERROR;
    if (id == GRPC_SESSIONID_VOID)
        return gox_result(GRPC_INVALID_SESSION_ID, "GRPC_SESSIONID_VOID is not a session");
    return gox_result(GRPC_INVALID_SESSION_ID, "%d is not a session of this GridRPC client", id);
}

static grpc_error_t known_all(const grpc_sessionid_t *ids, size_t n) {
    if (!ids && n) return gox_result(GRPC_OTHER_ERROR_CODE, "the array of session ids is NULL");
    for (size_t i = 0; i < n; i++) {
        grpc_error_t rc = known(ids[i]);
        if (rc) return rc;
    }
    return GRPC_NO_ERROR;
}

/* Records that a grpc wait took session ID with core result CODE; returns the wait's
 * result (GRPC_SESSION_FAILED for a failure, whose reason grpc_get_error gives). */
static grpc_error_t finish(grpc_sessionid_t id, int code) {
    pthread_mutex_lock(&lock);
    int i = find(id);
    if (i >= 0) {
        sessions[i].waited = 1;
        if (code != GRID_OK && !sessions[i].listed) {
            if (nfailed == capfailed) {
                int cap = capfailed ? capfailed * 2 : 16;
                grpc_sessionid_t *f = realloc(failed, (size_t)cap * sizeof *f);
                if (f) {
                    failed = f;
                    capfailed = cap;
                }
            }
            if (nfailed < capfailed) {
                failed[nfailed++] = id;
                sessions[i].listed = 1;
            }
        }
    }
    pthread_mutex_unlock(&lock);
    if (code == GRID_OK) return gox_result(GRPC_NO_ERROR, NULL);
    const char *m = grid_call_message_np(id);
    return gox_result(GRPC_SESSION_FAILED, "session %d failed (%s): %s", id,
                      grpc_error_name_np(gox_map(code)), m && *m ? m : grid_error_string(code));
}

/* The sessions no grpc wait has taken yet (a snapshot the caller frees). */
static grpc_sessionid_t *outstanding(int *n) {
    pthread_mutex_lock(&lock);
    grpc_sessionid_t *ids = malloc((size_t)(nsessions + 1) * sizeof *ids);
    *n = 0;
    if (ids)
        for (int i = 0; i < nsessions; i++)
            if (!sessions[i].waited) ids[(*n)++] = sessions[i].id;
    pthread_mutex_unlock(&lock);
    return ids;
}

/* ---- Calls */

/* One call, sync (SESSION NULL) or async, with arguments from AP or STACK. Variadic
 * arguments go to the core as they are (it decodes them against the interface, once,
 * for every API); an argument stack becomes an argument vector here. */
static grpc_error_t call(grpc_function_handle_t *h, grpc_sessionid_t *session, int given, va_list *ap,
                         const grpc_arg_stack_t *stack) {
    grpc_error_t rc = gox_check_initialized();
    if (!rc) rc = gox_check_handle(h);
    if (rc) return rc;
    gox_argv *a = malloc(sizeof *a);
    if (!a) return gox_result(GRPC_OTHER_ERROR_CODE, "out of memory");
    gox_url(h, a->url, sizeof a->url);
    if (!ap) {
        rc = gox_argv_describe(h, a);
        if (!rc) rc = gox_argv_from_stack(a, stack);
    }
    if (!rc && !session) {
        int g = ap ? grid_call_va_np(a->url, given, *ap) : grid_call_argv_np(a->url, a->nargs, a->argv);
        rc = g ? gox_result_core(gox_map(g)) : gox_result(GRPC_NO_ERROR, NULL);
    } else if (!rc) {
        /* The core marshals the arguments before it returns: the IN slots in A may go. */
        int id = ap ? grid_call_async_va_np(a->url, given, *ap)
                    : grid_call_async_argv_np(a->url, a->nargs, a->argv);
        if (id <= 0) {
            rc = gox_result_core(gox_map(id < 0 ? -id : GRID_ERR_INTERNAL));
        } else if (add_session(id, h)) {
            grid_cancel(id);
            grid_wait(id);
            grid_forget_np(id);
            rc = gox_result(GRPC_OTHER_ERROR_CODE, "out of memory");
        } else {
            /* Ninf-G's default: return once the server holds the arguments, so that
             * calls issued in turn reach the server in turn. */
            if (h->transfer_np == GRPC_ARGUMENT_TRANSFER_WAIT) grid_wait_received_np(id);
            *session = id;
            rc = gox_result(GRPC_NO_ERROR, NULL);
        }
    }
    free(a);
    return rc;
}

grpc_error_t grpc_call_counted_np(int nargs, grpc_function_handle_t *h, ...) {
    va_list ap;
    va_start(ap, h);
    grpc_error_t rc = call(h, NULL, nargs - 1, &ap, NULL);
    va_end(ap);
    return rc;
}

grpc_error_t(grpc_call)(grpc_function_handle_t *h, ...) {
    va_list ap;
    va_start(ap, h);
    grpc_error_t rc = call(h, NULL, -1, &ap, NULL);
    va_end(ap);
    return rc;
}

/* Checks SESSION before anything is started, and voids it in case of failure. */
static grpc_error_t check_session_out(grpc_sessionid_t *session) {
    if (!session) return gox_result(GRPC_OTHER_ERROR_CODE, "the session id pointer is NULL");
    return GRPC_NO_ERROR;
}

grpc_error_t grpc_call_async_counted_np(int nargs, grpc_function_handle_t *h, grpc_sessionid_t *session,
                                        ...) {
    grpc_error_t rc = gox_check_initialized();
    if (!rc) rc = check_session_out(session);
    if (rc) return rc;
    va_list ap;
    va_start(ap, session);
    rc = call(h, session, nargs - 2, &ap, NULL);
    va_end(ap);
    return rc;
}

grpc_error_t(grpc_call_async)(grpc_function_handle_t *h, grpc_sessionid_t *session, ...) {
    grpc_error_t rc = gox_check_initialized();
    if (!rc) rc = check_session_out(session);
    if (rc) return rc;
    va_list ap;
    va_start(ap, session);
    rc = call(h, session, -1, &ap, NULL);
    va_end(ap);
    return rc;
}

static grpc_error_t call_stack(grpc_function_handle_t *h, grpc_sessionid_t *session, grpc_arg_stack_t *stack,
                               int async) {
    grpc_error_t rc = gox_check_initialized();
    if (!rc && async) rc = check_session_out(session);
    if (!rc && !stack) rc = gox_result(GRPC_OTHER_ERROR_CODE, "the argument stack is NULL");
    if (rc) return rc;
    return call(h, async ? session : NULL, -1, NULL, stack);
}

grpc_error_t grpc_call_arg_stack(grpc_function_handle_t *h, grpc_arg_stack_t *stack) {
    return call_stack(h, NULL, stack, 0);
}

grpc_error_t grpc_call_arg_stack_async(grpc_function_handle_t *h, grpc_sessionid_t *session,
                                       grpc_arg_stack_t *stack) {
    return call_stack(h, session, stack, 1);
}

grpc_error_t grpc_call_argstack(grpc_function_handle_t *h, grpc_arg_stack_t *stack) {
    return call_stack(h, NULL, stack, 0);
}

grpc_error_t grpc_call_argstack_async(grpc_function_handle_t *h, grpc_sessionid_t *session,
                                      grpc_arg_stack_t *stack) {
    return call_stack(h, session, stack, 1);
}

/* ---- Sessions */

grpc_error_t grpc_get_handle(grpc_function_handle_t **handle, grpc_sessionid_t id) {
    grpc_error_t rc = gox_check_initialized();
    if (!rc && !handle) rc = gox_result(GRPC_OTHER_ERROR_CODE, "the handle pointer is NULL");
    if (!rc) rc = known(id);
    if (rc) return rc;
    pthread_mutex_lock(&lock);
    int i = find(id);
    grpc_function_handle_t *h = i >= 0 ? sessions[i].handle : NULL;
    pthread_mutex_unlock(&lock);
    *handle = h;
    return gox_result(GRPC_NO_ERROR, NULL);
}

grpc_error_t grpc_probe(grpc_sessionid_t id) {
    grpc_error_t rc = gox_check_initialized();
    if (!rc) rc = known(id);
    if (rc) return rc;
    int p = grid_probe(id);
    if (p < 0) return gox_result_core(GRPC_INVALID_SESSION_ID);
    return p ? gox_result(GRPC_NO_ERROR, NULL)
             : gox_result(GRPC_NOT_COMPLETED, "session %d is still running", id);
}

grpc_error_t grpc_probe_or(grpc_sessionid_t *ids, size_t n, grpc_sessionid_t *done) {
    grpc_error_t rc = gox_check_initialized();
    if (!rc && !done) rc = gox_result(GRPC_OTHER_ERROR_CODE, "the result pointer is NULL");
    if (!rc) rc = known_all(ids, n);
    if (rc) return rc;
    for (size_t i = 0; i < n; i++)
        if (grid_probe(ids[i]) == 1) {
            *done = ids[i];
            return gox_result(GRPC_NO_ERROR, NULL);
        }
    *done = GRPC_SESSIONID_VOID;
    return gox_result(GRPC_NONE_COMPLETED, "none of the %zu sessions has completed", n);
}

grpc_error_t grpc_cancel(grpc_sessionid_t id) {
    grpc_error_t rc = gox_check_initialized();
    if (!rc) rc = known(id);
    if (rc) return rc;
    int g = grid_cancel(id);
    return g ? gox_result_core(gox_map(g)) : gox_result(GRPC_NO_ERROR, NULL);
}

grpc_error_t grpc_cancel_all(void) {
    grpc_error_t rc = gox_check_initialized();
    if (rc) return rc;
    int n;
    grpc_sessionid_t *ids = outstanding(&n);
    if (!ids) return gox_result(GRPC_OTHER_ERROR_CODE, "out of memory");
    for (int i = 0; i < n; i++)
        grid_cancel(ids[i]);
    free(ids);
    return gox_result(GRPC_NO_ERROR, NULL);
}

grpc_error_t grpc_wait(grpc_sessionid_t id) {
    grpc_error_t rc = gox_check_initialized();
    if (!rc) rc = known(id);
    if (rc) return rc;
    return finish(id, grid_wait(id));
}

grpc_error_t grpc_wait_and(grpc_sessionid_t *ids, size_t n) {
    grpc_error_t rc = gox_check_initialized();
    if (!rc) rc = known_all(ids, n);
    if (rc) return rc;
    grpc_error_t first = GRPC_NO_ERROR;
    char msg[1024] = "";
    for (size_t i = 0; i < n; i++) {
        if (finish(ids[i], grid_wait(ids[i])) && !first) {
            first = GRPC_SESSION_FAILED;
            snprintf(msg, sizeof msg, "%s", grpc_last_error_np());
        }
    }
    return first ? gox_result(first, "%s (grpc_get_failed_sessionid lists the failed sessions)", msg)
                 : gox_result(GRPC_NO_ERROR, NULL);
}

grpc_error_t grpc_wait_all(void) {
    grpc_error_t rc = gox_check_initialized();
    if (rc) return rc;
    int n;
    grpc_sessionid_t *ids = outstanding(&n);
    if (!ids) return gox_result(GRPC_OTHER_ERROR_CODE, "out of memory");
    rc = grpc_wait_and(ids, (size_t)n);
    free(ids);
    return rc;
}

/* Waits for one of IDS (N > 0) that no other grpc wait takes first. */
static grpc_error_t wait_one(const grpc_sessionid_t *ids, int n, grpc_sessionid_t *done) {
    int d = GRID_ID_NONE;
    int code = grid_wait_or(ids, n, &d);
    if (d == GRID_ID_NONE) return gox_result_core(gox_map(code ? code : GRID_ERR_INTERNAL));
    *done = d;
    return finish(d, code);
}

grpc_error_t grpc_wait_or(grpc_sessionid_t *ids, size_t n, grpc_sessionid_t *done) {
    grpc_error_t rc = gox_check_initialized();
    if (!rc && !done) rc = gox_result(GRPC_OTHER_ERROR_CODE, "the result pointer is NULL");
    if (!rc && n == 0) rc = gox_result(GRPC_OTHER_ERROR_CODE, "grpc_wait_or needs at least one session");
    if (!rc && n > (size_t)1 << 30) rc = gox_result(GRPC_OTHER_ERROR_CODE, "too many sessions");
    if (!rc) rc = known_all(ids, n);
    if (rc) return rc;
    return wait_one(ids, (int)n, done);
}

grpc_error_t grpc_wait_any(grpc_sessionid_t *done) {
    grpc_error_t rc = gox_check_initialized();
    if (!rc && !done) rc = gox_result(GRPC_OTHER_ERROR_CODE, "the result pointer is NULL");
    if (rc) return rc;
    for (;;) {
        int n;
        grpc_sessionid_t *ids = outstanding(&n);
        if (!ids) return gox_result(GRPC_OTHER_ERROR_CODE, "out of memory");
        if (n == 0) {
            free(ids);
            *done = GRPC_SESSIONID_VOID;
            return gox_result(GRPC_NO_ERROR, NULL);
        }
        int d = GRID_ID_NONE;
        int code = grid_wait_or(ids, n, &d);
        free(ids);
        if (d == GRID_ID_NONE) return gox_result_core(gox_map(code ? code : GRID_ERR_INTERNAL));
        /* Another thread's wait may have taken D meanwhile: then look again. */
        pthread_mutex_lock(&lock);
        int i = find(d);
        int taken = i < 0 || sessions[i].waited;
        pthread_mutex_unlock(&lock);
        if (taken) continue;
        *done = d;
        return finish(d, code);
    }
}

/* ---- Errors of sessions */

grpc_error_t grpc_get_error(grpc_sessionid_t id) {
    grpc_error_t rc = gox_check_initialized();
    if (!rc) rc = known(id);
    if (rc) return rc;
    if (grid_probe(id) != 1) return gox_result(GRPC_NO_ERROR, NULL); /* still running */
    int code = grid_call_error_np(id);
    if (code == GRID_OK) return gox_result(GRPC_NO_ERROR, NULL);
    const char *m = grid_call_message_np(id);
    return gox_result(gox_map(code), "session %d: %s", id, m && *m ? m : grid_error_string(code));
}

grpc_error_t grpc_get_failed_sessionid(grpc_sessionid_t *id) {
    grpc_error_t rc = gox_check_initialized();
    if (!rc && !id) rc = gox_result(GRPC_OTHER_ERROR_CODE, "the session id pointer is NULL");
    if (rc) return rc;
    pthread_mutex_lock(&lock);
    *id = failed_head < nfailed ? failed[failed_head++] : GRPC_SESSIONID_VOID;
    if (failed_head == nfailed) failed_head = nfailed = 0;
    pthread_mutex_unlock(&lock);
    return gox_result(GRPC_NO_ERROR, NULL);
}

const char *grpc_session_message_np(grpc_sessionid_t id) {
    if (!__atomic_load_n(&initialized, __ATOMIC_ACQUIRE)) return "";
    pthread_mutex_lock(&lock);
    int i = find(id);
    pthread_mutex_unlock(&lock);
    if (i < 0) return "";
    const char *m = grid_call_message_np(id);
    return m ? m : "";
}

/* ---- For object handles (gox_object.c) */

grpc_error_t gox_default_server(const char *name, char *host, size_t hostsize, int *port) {
    host[0] = '\0';
    *port = 0;
    pthread_mutex_lock(&lock);
    const char *assigned = gox_config_function_host(&config, name);
    if (assigned) gox_config_server(&config, assigned, host, hostsize, port);
    if (!host[0] && config.nservers) gox_config_server(&config, config.servers[0].host, host, hostsize, port);
    pthread_mutex_unlock(&lock);
    if (!host[0] && grid_get_server_np(host, hostsize, port)) host[0] = '\0';
    if (!host[0])
        return gox_result(GRPC_SERVER_NOT_FOUND,
                          "no default server for '%s': add a <SERVER> section (hostname, port) to the "
                          "configuration file given to grpc_initialize, or set GRIDRPC_SERVER=host:port",
                          name);
    return GRPC_NO_ERROR;
}

void gox_server_address(const char *server, char *host, size_t hostsize, int *port) {
    pthread_mutex_lock(&lock);
    gox_config_server(&config, server, host, hostsize, port);
    pthread_mutex_unlock(&lock);
}

int gox_add_object_session(grpc_sessionid_t id) {
    return add_session(id, NULL);
}
