/* _core.h: what the C files of the gridrpc._core extension share: the call state
 * that converts a Python call's arguments (_core_convert.c), the remote data handle
 * type (_core_data.c), the pending call type (_core_calls.c), the error helpers
 * (_core_errors.c) and the module's global state (_core.c). Nothing here is visible
 * outside the extension: only PyInit__core is exported. */
#ifndef GRIDRPC_PY_CORE_H
#define GRIDRPC_PY_CORE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "gridrpc.h"

#pragma GCC visibility push(hidden)

#define MAXP GRID_MAX_PARAMS_NP

/* Kinds of argument errors, passed to the factory: it picks the exception class. */
enum { KIND_GRID = 0, KIND_TYPE = 1, KIND_VALUE = 2 };

/* A function's interface, cached per name, with the array shapes of its last call: a
 * loop calling with the same sizes skips grid_array_shape_np (shapes depend only on
 * the IN and INOUT integer scalars). Used under the GIL only. */
typedef struct fninfo {
    grid_function_np f;
    int memo_valid;
    long long memo_key[MAXP];
    long long memo_dims[MAXP][GRID_MAX_RANK_NP];
} fninfo;

/* A remote data handle (gridrpc.Data): an array kept on a server, passed to calls in
 * place of the array (the library recognises the grid_data_np pointer in the argument
 * vector). The numpy dtype and shape live here; the library knows the element type and
 * count. Used under the GIL only. */
typedef struct {
    PyObject_HEAD grid_data_np *h; /* NULL once freed */
    int gtype;                     /* GRID_TYPE_* of its elements */
    Py_ssize_t count;              /* elements */
    Py_ssize_t itemsize;
    PyObject *dtype; /* numpy dtype name (str) */
    PyObject *shape; /* tuple of ints */
    long busy;       /* calls holding it (a call in flight, or one recorded in a transaction) */
    PyObject *dict;  /* instance __dict__ (the Python subclass may add attributes) */
} DataObject;

extern PyTypeObject DataType; /* gridrpc._core.Data (_core_data.c) */

/* What a callstate is prepared for: a call; a call recorded in a transaction (the
 * binding cannot allocate OUT arrays: the library writes them at the transaction's
 * end); a fetch of a two-phase job (IN arrays may be None: they are not read). */
enum { CS_CALL = 0, CS_TXN = 1, CS_FETCH = 2, CS_SUBMIT = 3 };

/* Everything one call needs alive until it completes. Only the first n entries of
 * each array are initialised. */
typedef struct callstate {
    PyObject *name; /* the function's name (owned) */
    const char *cname;
    PyObject *fnobj; /* capsule of the function's interface (owned) */
    fninfo *info;
    const grid_function_np *fn;
    int memo_hit; /* the array shapes are those of the last call */
    int mode;     /* CS_CALL, CS_TXN or CS_FETCH */
    int n;
    void *argv[MAXP];
    grid_scalar_np val[MAXP]; /* IN scalars' storage (the library's union) */
    char *orig[MAXP];         /* an INOUT string: the pointer passed (a reply replaces it) */
    PyObject *keep[MAXP];     /* owned: an object whose memory argv[i] points into */
    char **strv[MAXP];        /* a string array: the vector passed */
    char **strv0[MAXP];       /* its pointers before the call (OUT, INOUT) */
    Py_ssize_t strn[MAXP];    /* its length */
    unsigned char has_view[MAXP];
    unsigned char alloc[MAXP]; /* keep[i] is an OUT array allocated here (returned) */
    unsigned char data[MAXP];  /* keep[i] is a gridrpc.Data passed as the array (busy counted) */
    Py_buffer view[MAXP];
} callstate;

/* "linalg/dmmul: argument 3 ('A', IN double array)": the prefix of argument errors. */
#define ARG_FMT "%s/%s: argument %d ('%s', %s %s%s)"
#define ARG_ARGS(cs, i)                                                                                      \
    (cs)->fn->module, (cs)->fn->name, (i) + 2, (cs)->fn->params[i].name,                                     \
        mode_name((cs)->fn->params[i].mode), type_name((cs)->fn->params[i].type),                            \
        (cs)->fn->params[i].rank ? " array" : ""

/* An asynchronous call, or one recorded in a transaction (_core_calls.c). */
typedef struct {
    PyObject ob_base; /* PyObject_HEAD */
    callstate *cs;    /* NULL once finished or discarded */
    int id;           /* 0 until sent */
    int in_flight;    /* sent, not yet waited on */
    int sending;      /* send() is running (without the GIL) */
} PendingObject;
extern PyTypeObject PendingType; /* gridrpc._core.Pending */

/* ---- global state (_core.c, _core_settings.c); all used under the GIL only */
extern PyObject *error_factory; /* callable(code, message, kind) -> exception */
extern PyObject *allocator;     /* callable(dtype, shape) -> a new zeroed array (numpy.zeros) */
extern PyObject *converter;     /* callable(obj, dtype, where, recorded) -> an IN array (_arrays.py) */
extern PyObject *fn_cache;      /* dict: name -> capsule holding a grid_function_np */
extern long sync_in_flight;     /* synchronous calls on the network now */
extern long async_open;         /* Pending objects holding a call's state */
extern int env_dirty;           /* a call failed since the last successful one */

/* ---- Ctrl-C during a sync call (_core_interrupt.c) */
/* Chains our SIGINT handler (grid_interrupt_np) before Python's, if it is not already:
 * called before each sync call, with the GIL. */
void interrupts_chain(void);
/* After a sync call that returned RC: -1 with KeyboardInterrupt (or whatever Python's
 * handler raised) set when the call was interrupted by a signal; 0 otherwise. */
int interrupts_raise(int rc);

/* Runs STMT without the GIL: other Python threads run while the library works. */
#define WITHOUT_GIL(stmt)                                                                                    \
    do {                                                                                                     \
        Py_BEGIN_ALLOW_THREADS stmt;                                                                         \
        Py_END_ALLOW_THREADS                                                                                 \
    } while (0)

/* The same, counted as a synchronous call in flight (a settings reload
 * must not reset the library under it). */
#define SYNC_WITHOUT_GIL(stmt)                                                                               \
    do {                                                                                                     \
        sync_in_flight++;                                                                                    \
        WITHOUT_GIL(stmt);                                                                                   \
        sync_in_flight--;                                                                                    \
    } while (0)

/* ---- errors and names (_core_errors.c) */
void raise_obj(int code, int kind, PyObject *message);
void raise_grid(int code, const char *msg);
int arg_error(int kind, const char *fmt, ...);
PyObject *none_or_raise(int rc);
const char *type_name(int t);
const char *mode_name(int m);
const char *dtype_name(const grid_param_np *p);
Py_ssize_t type_size(int t);
const char *shape_str(const long long *dims, int rank, char *buf, size_t n);

/* ---- settings (_core_settings.c) */
void env_snapshot(void);
void reload_if_env_changed(void);

/* ---- argument conversion and results (_core_convert.c) */
void cs_free_outputs(callstate *cs);
void cs_release(callstate *cs);
void cs_forget_fn(callstate *cs);
PyObject *get_fn(PyObject *name, const char *cname);
int is_integer_type(int t);
char format_kind(const char *f);
const char *buffer_dtype(const Py_buffer *vw, char *buf, size_t n);
int prepare_mode(callstate *cs, PyObject *const *args, Py_ssize_t nargs, int mode);
int prepare(callstate *cs, PyObject *const *args, Py_ssize_t nargs); /* for a call (CS_CALL) */
PyObject *str_value(const char *s);
PyObject *str_list(char *const *v, Py_ssize_t n);
int sync_failed(callstate *cs, int rc, int forget);
PyObject *sync_results(callstate *cs, int rc, int forget);
PyObject *results(callstate *cs);

/* ---- data handles (_core_data.c) */
int data_arg(callstate *cs, int i, DataObject *d, long long count, const char *shp);

/* ---- calls (_core_calls.c) */
int refuse_in_transaction(const char *what);
PendingObject *wrap_pending(callstate *cs);
int int_arg(PyObject *const *args, Py_ssize_t nargs, const char *fname, int *out);

/* The module's functions, one table per file (PyModule_AddFunctions adds each). */
extern PyMethodDef core_call_methods[], core_data_methods[], core_txn_methods[], core_settings_methods[];

#pragma GCC visibility pop

#endif
