/* _core_settings.c: the library's settings as the gridrpc._core extension sees them:
 * reloaded after a failure when the environment changed, set_timeouts, reset. */
#include "_core.h"

#include <stdlib.h>
#include <string.h>

/* The library reads its settings (GRIDRPC_SERVER, ...) once. After a failed call the
 * binding compares them with what they were at the last (re)load, and reloads the
 * library's settings when they changed, so a user who fixes GRIDRPC_SERVER after a
 * ConnectError or ConfigError needs no reset(). Only after a failure: the happy path
 * costs nothing. */
static const char *const env_names[] = {
    "GRIDRPC_SERVER",  "GRIDRPC_METASERVER",      "GRIDRPC_CONFIG",    "GRIDRPC_TOKEN",
    "GRIDRPC_TIMEOUT", "GRIDRPC_CONNECT_TIMEOUT", "GRIDRPC_SCHEDULER", "HOME"};
#define NENV (sizeof env_names / sizeof env_names[0])
static char *env_seen[NENV]; /* malloc'd values at the last load; NULL: unset */
int env_dirty;
static int timeouts_forced; /* set_timeouts was called: reapplied after a reload */
static double forced_connect, forced_call;

/* ------------------------------------------------------------------ settings */

/* Remembers the environment the library's settings were (re)loaded from. */
void env_snapshot(void) {
    for (size_t k = 0; k < NENV; k++) {
        free(env_seen[k]);
        const char *v = getenv(env_names[k]);
        env_seen[k] = v ? strdup(v) : NULL;
    }
}

static int env_changed(void) {
    for (size_t k = 0; k < NENV; k++) {
        const char *v = getenv(env_names[k]);
        if ((v == NULL) != (env_seen[k] == NULL) || (v && strcmp(v, env_seen[k]) != 0)) return 1;
    }
    return 0;
}

/* After a failure: reloads the library's settings when the environment changed and no
 * call is in flight (grid_reset_np needs that); the timeouts set_timeouts gave stay. */
void reload_if_env_changed(void) {
    if (!env_dirty || sync_in_flight > 0 || async_open > 0 || !env_changed()) return;
    PyDict_Clear(fn_cache);
    WITHOUT_GIL(grid_reset_np());
    if (timeouts_forced) grid_set_timeouts_np(forced_connect, forced_call);
    env_snapshot();
    env_dirty = 0;
}

static PyObject *core_set_timeouts(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "set_timeouts(connect, call) takes two numbers of seconds");
        return NULL;
    }
    double c = PyFloat_AsDouble(args[0]);
    if (c == -1.0 && PyErr_Occurred()) return NULL;
    double t = PyFloat_AsDouble(args[1]);
    if (t == -1.0 && PyErr_Occurred()) return NULL;
    int rc = grid_set_timeouts_np(c, t);
    if (rc != GRID_OK) {
        raise_obj(rc, KIND_VALUE, PyUnicode_FromString(grid_last_error()));
        return NULL;
    }
    timeouts_forced = 1;
    forced_connect = c;
    forced_call = t;
    Py_RETURN_NONE;
}

static PyObject *core_reset(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    if (sync_in_flight > 0) {
        PyErr_SetString(PyExc_RuntimeError, "reset() while a call is in flight in another thread");
        return NULL;
    }
    if (async_open > 0) {
        PyErr_Format(PyExc_RuntimeError, "reset() with %ld asynchronous calls open: wait for them first",
                     async_open);
        return NULL;
    }
    PyDict_Clear(fn_cache);
    WITHOUT_GIL(grid_reset_np());
    env_snapshot();
    env_dirty = 0;
    timeouts_forced = 0;
    Py_RETURN_NONE;
}

PyMethodDef core_settings_methods[] = {
    {"set_timeouts", (PyCFunction)(void (*)(void))core_set_timeouts, METH_FASTCALL,
     "set_timeouts(connect, call): seconds, 0 for none"},
    {"reset", core_reset, METH_NOARGS, "closes connections, forgets descriptors and settings"},
    {NULL, NULL, 0, NULL},
};
