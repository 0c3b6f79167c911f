/* _core.c: the C extension behind the gridrpc Python package.
 *
 * It turns a Python call gridrpc.call(name, *args) into one grid_call_argv_np: the
 * function's interface (grid_describe_np, cached per name here) says how to convert
 * each argument: Python numbers and strings become the C scalars, arrays are taken
 * through the buffer protocol (numpy arrays, array.array, memoryview: C-contiguous,
 * the right element type and size, checked with grid_array_shape_np before anything is
 * sent), OUT scalars and strings come back as Python values, and an OUT array passed
 * as None is allocated (through the allocator the package registers: numpy.zeros) and
 * returned. The GIL is released while the call is on the network, so other Python
 * threads run (and may call too: the C library is MT-safe).
 *
 * Asynchronous calls (prepare, then Pending.send from the package's sender thread)
 * keep the same conversion state on the heap, inside a Pending object, until the call
 * completes: the buffers stay exported (a numpy array cannot be resized meanwhile) and
 * converted strings stay referenced. The Python layer (_futures.py) waits for
 * completions in one background thread (wait_any) and turns them into futures.
 *
 * Errors are raised through a factory the package registers (_set_error_factory), so
 * they are gridrpc.GridError subclasses carrying the code and the library's message.
 * Entry points use METH_FASTCALL: the per-call overhead is what bench/python_overhead.py
 * measures.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "gridrpc.h"

#define MAXP GRID_MAX_PARAMS_NP

/* Kinds of argument errors, passed to the factory: it picks the exception class. */
enum { KIND_GRID = 0, KIND_TYPE = 1, KIND_VALUE = 2 };

static PyObject *error_factory; /* callable(code, message, kind) -> exception */
static PyObject *allocator;     /* callable(dtype, shape) -> a new zeroed array (numpy.zeros) */
static PyObject *fn_cache;      /* dict: name -> capsule holding a grid_function_np */
static long sync_in_flight;     /* synchronous calls on the network now (under the GIL) */
static long async_open;         /* Pending objects holding a call's state (under the GIL) */

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
static int env_dirty;        /* a call failed since the last successful one */
static int timeouts_forced;  /* set_timeouts was called: reapplied after a reload */
static double forced_connect, forced_call;

/* ------------------------------------------------------------------ errors */

/* Raises the exception the factory makes for CODE and MESSAGE (a Python str, stolen). */
static void raise_obj(int code, int kind, PyObject *message) {
    if (!message) return;
    if (!error_factory) {
        PyErr_SetObject(kind == KIND_TYPE    ? PyExc_TypeError
                        : kind == KIND_VALUE ? PyExc_ValueError
                                             : PyExc_RuntimeError,
                        message);
        Py_DECREF(message);
        return;
    }
    PyObject *exc = PyObject_CallFunction(error_factory, "iOi", code, message, kind);
    Py_DECREF(message);
    if (exc) {
        PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
        Py_DECREF(exc);
    }
}

/* Raises a library error: CODE with MSG (the library's text, maybe not valid UTF-8). */
static void raise_grid(int code, const char *msg) {
    env_dirty = 1;
    if (!msg || !*msg) msg = grid_error_string(code);
    raise_obj(code, KIND_GRID, PyUnicode_DecodeUTF8(msg, (Py_ssize_t)strlen(msg), "replace"));
}

/* Raises an argument error (GRID_ERR_ARGS) of KIND with a printf-style message
 * (PyUnicode_FromFormat's conversions). Returns -1. */
static int arg_error(int kind, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    PyObject *msg = PyUnicode_FromFormatV(fmt, ap);
    va_end(ap);
    raise_obj(GRID_ERR_ARGS, kind, msg);
    return -1;
}

/* ------------------------------------------------------------------ settings */

/* Remembers the environment the library's settings were (re)loaded from. */
static void env_snapshot(void) {
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
static void reload_if_env_changed(void) {
    if (!env_dirty || sync_in_flight > 0 || async_open > 0 || !env_changed()) return;
    PyDict_Clear(fn_cache);
    PyThreadState *ts = PyEval_SaveThread(); /* no GIL while the library works */
    grid_reset_np();
    if (timeouts_forced) grid_set_timeouts_np(forced_connect, forced_call);
    PyEval_RestoreThread(ts);
    env_snapshot();
    env_dirty = 0;
}

/* ------------------------------------------------------------------ names */

static const char *type_name(int t) {
    static const char *const names[] = {"?",     "char",   "short",    "int",      "long",   "longlong",
                                        "float", "double", "scomplex", "dcomplex", "string", "filename"};
    return t >= 1 && t <= GRID_TYPE_FILENAME ? names[t] : "?";
}

static const char *mode_name(int m) {
    static const char *const names[] = {"?", "IN", "OUT", "INOUT", "WORK"};
    return m >= 1 && m <= GRID_MODE_WORK ? names[m] : "?";
}

/* The numpy dtype that matches a parameter's element type (for messages). */
static const char *dtype_name(const grid_param_np *p) {
    int u = p->is_unsigned;
    switch (p->type) {
    case GRID_TYPE_CHAR: return "int8 or uint8";
    case GRID_TYPE_SHORT: return u ? "uint16" : "int16";
    case GRID_TYPE_INT: return u ? "uint32" : "int32";
    case GRID_TYPE_LONG: return sizeof(long) == 8 ? (u ? "uint64" : "int64") : (u ? "uint32" : "int32");
    case GRID_TYPE_LONGLONG: return u ? "uint64" : "int64";
    case GRID_TYPE_FLOAT: return "float32";
    case GRID_TYPE_DOUBLE: return "float64";
    case GRID_TYPE_SCOMPLEX: return "complex64";
    case GRID_TYPE_DCOMPLEX: return "complex128";
    default: return "?";
    }
}

/* Element size of a numeric type (0 for strings), from the library's own table. */
static Py_ssize_t type_size(int t) {
    return (Py_ssize_t)grid_type_size_np(t);
}

/* "(3, 4)" into BUF. */
static const char *shape_str(const long long *dims, int rank, char *buf, size_t n) {
    size_t k = 0;
    buf[0] = '\0';
    k += (size_t)snprintf(buf + k, n - k, "(");
    for (int d = 0; d < rank && k < n; d++)
        k += (size_t)snprintf(buf + k, n - k, "%s%lld", d ? ", " : "", dims[d]);
    if (k < n) k += (size_t)snprintf(buf + k, n - k, rank == 1 ? ",)" : ")");
    return buf;
}

/* ------------------------------------------------------------------ call state */

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

static PyTypeObject DataType;

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

static void cs_init(callstate *cs) {
    cs->name = NULL;
    cs->cname = NULL;
    cs->fnobj = NULL;
    cs->info = NULL;
    cs->fn = NULL;
    cs->n = 0;
    cs->memo_hit = 0;
    cs->mode = CS_CALL;
}

/* Frees the strings the library allocated for OUT and INOUT strings (a pointer that
 * differs from the one passed is a reply's malloc'd copy). */
static void cs_free_outputs(callstate *cs) {
    for (int i = 0; i < cs->n; i++) {
        const grid_param_np *p = &cs->fn->params[i];
        if (p->type != GRID_TYPE_STRING || (p->mode != GRID_MODE_OUT && p->mode != GRID_MODE_INOUT)) continue;
        if (p->rank == 0) {
            if (cs->val[i].str != cs->orig[i]) free(cs->val[i].str);
            cs->val[i].str = cs->orig[i];
        } else if (cs->strv[i]) {
            for (Py_ssize_t k = 0; k < cs->strn[i]; k++) {
                if (cs->strv[i][k] != cs->strv0[i][k]) free(cs->strv[i][k]);
                cs->strv[i][k] = cs->strv0[i][k];
            }
        }
    }
}

/* Releases buffers and references (needs the GIL). */
static void cs_release(callstate *cs) {
    for (int i = 0; i < cs->n; i++) {
        if (cs->has_view[i]) PyBuffer_Release(&cs->view[i]);
        cs->has_view[i] = 0;
        cs->alloc[i] = 0;
        if (cs->data[i]) ((DataObject *)cs->keep[i])->busy--;
        cs->data[i] = 0;
        Py_CLEAR(cs->keep[i]);
        PyMem_Free(cs->strv[i]);
        PyMem_Free(cs->strv0[i]);
        cs->strv[i] = cs->strv0[i] = NULL;
    }
    cs->n = 0;
    Py_CLEAR(cs->fnobj);
    Py_CLEAR(cs->name);
    cs->fn = NULL;
}

/* Forgets the cached interface of the call's function (after a failure: the function
 * may have changed on the server, or the name may now resolve elsewhere). */
static void cs_forget_fn(callstate *cs) {
    if (!cs->name) return;
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    if (PyDict_DelItem(fn_cache, cs->name) < 0) PyErr_Clear();
    PyErr_Restore(et, ev, tb);
}

static void fn_capsule_free(PyObject *cap) {
    PyMem_Free(PyCapsule_GetPointer(cap, "gridrpc._core.function"));
}

/* The interface of NAME: from the cache, else from grid_describe_np. New reference. */
static PyObject *get_fn(PyObject *name, const char *cname) {
    PyObject *cap = PyDict_GetItemWithError(fn_cache, name);
    if (cap) {
        Py_INCREF(cap);
        return cap;
    }
    if (PyErr_Occurred()) return NULL;
    fninfo *info = PyMem_Malloc(sizeof *info);
    if (!info) return PyErr_NoMemory();
    info->memo_valid = 0;
    grid_function_np *f = &info->f;
    int rc;
    sync_in_flight++;                        /* a reload must not reset the library under it */
    PyThreadState *ts = PyEval_SaveThread(); /* no GIL while the library works */
    rc = grid_describe_np(cname, f);
    PyEval_RestoreThread(ts);
    sync_in_flight--;
    if (rc != GRID_OK) {
        raise_grid(rc, grid_last_error());
        PyMem_Free(info);
        return NULL;
    }
    if (f->nparams < 0 || f->nparams > MAXP) {
        PyMem_Free(info);
        raise_grid(GRID_ERR_LIMIT, "the function has more parameters than the binding supports");
        return NULL;
    }
    cap = PyCapsule_New(info, "gridrpc._core.function", fn_capsule_free);
    if (!cap) {
        PyMem_Free(info);
        return NULL;
    }
    if (PyDict_SetItem(fn_cache, name, cap) < 0) {
        Py_DECREF(cap);
        return NULL;
    }
    return cap;
}

/* "linalg/dmmul: argument 3 ('A', IN double array)": the prefix of argument errors. */
#define ARG_FMT "%s/%s: argument %d ('%s', %s %s%s)"
#define ARG_ARGS(cs, i)                                                                                      \
    (cs)->fn->module, (cs)->fn->name, (i) + 2, (cs)->fn->params[i].name,                                     \
        mode_name((cs)->fn->params[i].mode), type_name((cs)->fn->params[i].type),                            \
        (cs)->fn->params[i].rank ? " array" : ""

static int is_integer_type(int t) {
    return t == GRID_TYPE_CHAR || t == GRID_TYPE_SHORT || t == GRID_TYPE_INT || t == GRID_TYPE_LONG ||
           t == GRID_TYPE_LONGLONG;
}

/* Converts Python integer O for integer parameter I, range-checked. */
static int to_integer(callstate *cs, int i, PyObject *o) {
    const grid_param_np *p = &cs->fn->params[i];
    grid_scalar_np *v = &cs->val[i];
    PyObject *ix = PyLong_CheckExact(o) ? (Py_INCREF(o), o) : PyNumber_Index(o);
    if (!ix) {
        PyErr_Clear();
        return arg_error(KIND_TYPE, ARG_FMT ": expects an int, got %s", ARG_ARGS(cs, i), Py_TYPE(o)->tp_name);
    }
    long long lo, hi;
    unsigned long long uhi;
    switch (p->type) {
    case GRID_TYPE_SHORT: lo = SHRT_MIN, hi = SHRT_MAX, uhi = USHRT_MAX; break;
    case GRID_TYPE_INT: lo = INT_MIN, hi = INT_MAX, uhi = UINT_MAX; break;
    case GRID_TYPE_LONG: lo = LONG_MIN, hi = LONG_MAX, uhi = ULONG_MAX; break;
    default: lo = LLONG_MIN, hi = LLONG_MAX, uhi = ULLONG_MAX; break;
    }
    int overflow = 0;
    long long sv = PyLong_AsLongLongAndOverflow(ix, &overflow);
    unsigned long long uv = 0;
    int bad = 0;
    if (sv == -1 && PyErr_Occurred()) {
        Py_DECREF(ix);
        return -1;
    }
    if (p->is_unsigned) {
        if (overflow < 0 || (!overflow && sv < 0))
            bad = 1;
        else if (overflow > 0) {
            uv = PyLong_AsUnsignedLongLong(ix);
            if (uv == (unsigned long long)-1 && PyErr_Occurred()) {
                PyErr_Clear();
                bad = 1;
            }
        } else
            uv = (unsigned long long)sv;
        if (uv > uhi) bad = 1;
    } else if (overflow || sv < lo || sv > hi)
        bad = 1;
    Py_DECREF(ix);
    if (bad) {
        if (p->is_unsigned)
            return arg_error(KIND_VALUE, ARG_FMT ": %R is out of range for unsigned %s (0 .. %llu)",
                             ARG_ARGS(cs, i), o, type_name(p->type), uhi);
        return arg_error(KIND_VALUE, ARG_FMT ": %R is out of range for %s (%lld .. %lld)", ARG_ARGS(cs, i), o,
                         type_name(p->type), lo, hi);
    }
    switch (p->type) {
    case GRID_TYPE_SHORT: v->s = p->is_unsigned ? (short)(unsigned short)uv : (short)sv; break;
    case GRID_TYPE_INT: v->i = p->is_unsigned ? (int)(unsigned)uv : (int)sv; break;
    case GRID_TYPE_LONG: v->l = p->is_unsigned ? (long)(unsigned long)uv : (long)sv; break;
    default: v->ll = p->is_unsigned ? (long long)uv : sv; break;
    }
    return 0;
}

/* Converts O for scalar parameter I (IN or INOUT: its value; OUT: ignored). */
static int to_scalar(callstate *cs, int i, PyObject *o) {
    const grid_param_np *p = &cs->fn->params[i];
    grid_scalar_np *v = &cs->val[i];
    cs->argv[i] = v;
    memset(v, 0, sizeof *v);
    if (p->mode == GRID_MODE_OUT && p->type != GRID_TYPE_FILENAME) return 0;
    switch (p->type) {
    case GRID_TYPE_CHAR: {
        long c = -1;
        if (PyUnicode_Check(o) && PyUnicode_GET_LENGTH(o) == 1) {
            c = (long)PyUnicode_READ_CHAR(o, 0);
            if (c > 255) c = -1000;
        } else if (PyBytes_Check(o) && PyBytes_GET_SIZE(o) == 1) {
            c = (unsigned char)PyBytes_AS_STRING(o)[0];
        } else if (PyIndex_Check(o)) {
            c = PyLong_AsLong(o);
            if (c == -1 && PyErr_Occurred()) {
                PyErr_Clear();
                c = -1000;
            }
            if (c < -128 || c > 255) c = -1000;
        } else {
            return arg_error(KIND_TYPE, ARG_FMT ": expects a 1-character str or bytes, or an int, got %s",
                             ARG_ARGS(cs, i), Py_TYPE(o)->tp_name);
        }
        if (c == -1000)
            return arg_error(KIND_VALUE,
                             ARG_FMT ": %R does not fit in a char (-128 .. 255, or one Latin-1 character)",
                             ARG_ARGS(cs, i), o);
        v->c = (char)c;
        return 0;
    }
    case GRID_TYPE_SHORT:
    case GRID_TYPE_INT:
    case GRID_TYPE_LONG:
    case GRID_TYPE_LONGLONG: return to_integer(cs, i, o);
    case GRID_TYPE_FLOAT:
    case GRID_TYPE_DOUBLE: {
        double d = PyFloat_CheckExact(o) ? PyFloat_AS_DOUBLE(o) : PyFloat_AsDouble(o);
        if (d == -1.0 && PyErr_Occurred()) {
            PyErr_Clear();
            return arg_error(KIND_TYPE, ARG_FMT ": expects a float, got %s", ARG_ARGS(cs, i),
                             Py_TYPE(o)->tp_name);
        }
        if (p->type == GRID_TYPE_FLOAT)
            v->f = (float)d;
        else
            v->d = d;
        return 0;
    }
    case GRID_TYPE_SCOMPLEX:
    case GRID_TYPE_DCOMPLEX: {
        Py_complex z = PyComplex_AsCComplex(o);
        if (z.real == -1.0 && PyErr_Occurred()) {
            PyErr_Clear();
            return arg_error(KIND_TYPE, ARG_FMT ": expects a complex, got %s", ARG_ARGS(cs, i),
                             Py_TYPE(o)->tp_name);
        }
        if (p->type == GRID_TYPE_SCOMPLEX) {
            v->sc.r = (float)z.real;
            v->sc.i = (float)z.imag;
        } else {
            v->dc.r = z.real;
            v->dc.i = z.imag;
        }
        return 0;
    }
    case GRID_TYPE_STRING: {
        const char *s;
        Py_ssize_t len;
        if (o == Py_None && p->mode == GRID_MODE_INOUT) {
            cs->orig[i] = NULL;
            return 0;
        }
        if (PyUnicode_Check(o)) {
            s = PyUnicode_AsUTF8AndSize(o, &len);
            if (!s) return -1;
        } else if (PyBytes_Check(o)) {
            s = PyBytes_AS_STRING(o);
            len = PyBytes_GET_SIZE(o);
        } else {
            return arg_error(KIND_TYPE, ARG_FMT ": expects a str or bytes, got %s", ARG_ARGS(cs, i),
                             Py_TYPE(o)->tp_name);
        }
        if ((size_t)len != strlen(s))
            return arg_error(KIND_VALUE, ARG_FMT ": the string contains a NUL character", ARG_ARGS(cs, i));
        Py_INCREF(o);
        cs->keep[i] = o;
        v->str = (char *)s;
        cs->orig[i] = v->str;
        return 0;
    }
    case GRID_TYPE_FILENAME: {
        PyObject *b = NULL;
        if (!PyUnicode_Check(o) && !PyBytes_Check(o) && !PyObject_HasAttrString(o, "__fspath__"))
            return arg_error(KIND_TYPE, ARG_FMT ": expects a path (str, bytes or os.PathLike), got %s",
                             ARG_ARGS(cs, i), Py_TYPE(o)->tp_name);
        if (!PyUnicode_FSConverter(o, &b)) {
            PyErr_Clear();
            return arg_error(KIND_VALUE, ARG_FMT ": %R is not a usable path", ARG_ARGS(cs, i), o);
        }
        cs->keep[i] = b;
        v->str = PyBytes_AS_STRING(b);
        return 0;
    }
    default: return arg_error(KIND_TYPE, ARG_FMT ": unsupported parameter type %d", ARG_ARGS(cs, i), p->type);
    }
}

/* The kind of a buffer format's element: 'i' signed, 'u' unsigned, 'f' float,
 * 'c' complex, 'S' bytes, 'b' bool; 0 when not a native simple element. */
static char format_kind(const char *f) {
    if (!f) return 'u'; /* no format: unsigned bytes */
    if (*f == '@' || *f == '=') f++;
#if PY_LITTLE_ENDIAN
    else if (*f == '<')
        f++;
#else
    else if (*f == '>' || *f == '!')
        f++;
#endif
    if (f[0] == 'Z' && f[1] && !f[2]) return strchr("fdg", f[1]) ? 'c' : 0;
    if (f[0] == '1' && f[1] == 's' && !f[2]) return 'S';
    if (!f[0] || f[1]) return 0;
    if (strchr("bhilqn", f[0])) return 'i';
    if (strchr("BHILQN", f[0])) return 'u';
    if (strchr("efdg", f[0])) return 'f';
    if (strchr("cs", f[0])) return 'S';
    if (f[0] == '?') return 'b';
    return 0;
}

/* The numpy name of a buffer's element type ("float32", "int64", "S1"), into BUF. */
static const char *buffer_dtype(const Py_buffer *vw, char *buf, size_t n) {
    const char *f = vw->format ? vw->format : "B";
    int bits = (int)(vw->itemsize * 8);
    switch (format_kind(f)) {
    case 'i': snprintf(buf, n, "int%d", bits); break;
    case 'u': snprintf(buf, n, "uint%d", bits); break;
    case 'f': snprintf(buf, n, "float%d", bits); break;
    case 'c': snprintf(buf, n, "complex%d", bits); break;
    case 'S': snprintf(buf, n, "S%zd", vw->itemsize); break;
    case 'b': snprintf(buf, n, "bool"); break;
    default:
        if ((f[0] == '<' || f[0] == '>' || f[0] == '!') && format_kind(f + 1))
            snprintf(buf, n, "a %s-endian %zd-byte type ('%s'; numpy: .astype(its native dtype))",
                     f[0] == '<' ? "little" : "big", vw->itemsize, f);
        else
            snprintf(buf, n, "a buffer of format '%s' (%zd-byte elements)", f, vw->itemsize);
    }
    return buf;
}

/* The numpy dtype an OUT array passed as None is allocated with. */
static const char *alloc_dtype(const grid_param_np *p) {
    if (p->type == GRID_TYPE_CHAR) return p->is_unsigned ? "uint8" : "int8";
    return dtype_name(p);
}

/* ------------------------------------------------------------------ data handles */

/* The IDL element type of numpy kind KIND ('i', 'u', 'f', 'c', 'S' as format_kind
 * gives them) and ITEMSIZE bytes; TYPE (an IDL type name, or NULL) picks among the
 * types of that representation ("longlong" rather than "long"). Raises and returns 0
 * when there is none. */
static int gtype_of(char kind, Py_ssize_t itemsize, const char *dtname, const char *type) {
    int t = 0;
    if ((kind == 'i' || kind == 'u' || kind == 'S') && itemsize == 1)
        t = GRID_TYPE_CHAR;
    else if ((kind == 'i' || kind == 'u') && itemsize == 2)
        t = GRID_TYPE_SHORT;
    else if ((kind == 'i' || kind == 'u') && itemsize == 4)
        t = GRID_TYPE_INT;
    else if ((kind == 'i' || kind == 'u') && itemsize == 8)
        t = type_size(GRID_TYPE_LONG) == 8 ? GRID_TYPE_LONG : GRID_TYPE_LONGLONG;
    else if (kind == 'f' && itemsize == 4)
        t = GRID_TYPE_FLOAT;
    else if (kind == 'f' && itemsize == 8)
        t = GRID_TYPE_DOUBLE;
    else if (kind == 'c' && itemsize == 8)
        t = GRID_TYPE_SCOMPLEX;
    else if (kind == 'c' && itemsize == 16)
        t = GRID_TYPE_DCOMPLEX;
    if (!t) {
        arg_error(KIND_TYPE,
                  "gridrpc.Data: elements of %s have no IDL type: use int8/uint8, int16, int32, int64, "
                  "float32, float64, complex64 or complex128 (.astype converts)",
                  dtname);
        return 0;
    }
    if (!type) return t;
    for (int u = GRID_TYPE_CHAR; u <= GRID_TYPE_DCOMPLEX; u++) {
        if (strcmp(type, type_name(u)) != 0) continue;
        int same_class = is_integer_type(u) == is_integer_type(t) &&
                         (u == GRID_TYPE_SCOMPLEX || u == GRID_TYPE_DCOMPLEX) ==
                             (t == GRID_TYPE_SCOMPLEX || t == GRID_TYPE_DCOMPLEX);
        if (same_class && type_size(u) == itemsize) return u;
        arg_error(KIND_TYPE, "gridrpc.Data: type='%s' does not hold elements of %s (%zd bytes each)", type,
                  dtname, itemsize);
        return 0;
    }
    arg_error(KIND_VALUE,
              "gridrpc.Data: type='%s' is not an IDL number type (char, short, int, long, longlong, float, "
              "double, scomplex, dcomplex)",
              type);
    return 0;
}

/* A handle as array argument I of a call: its type and element count must be the
 * parameter's (the library checks again against the server's descriptor). */
static int data_arg(callstate *cs, int i, DataObject *d, long long count, const char *shp) {
    const grid_param_np *p = &cs->fn->params[i];
    if (!d->h)
        return arg_error(KIND_VALUE, ARG_FMT ": the gridrpc.Data passed was freed: put the array again",
                         ARG_ARGS(cs, i));
    if (d->gtype != p->type) {
        int longs = (d->gtype == GRID_TYPE_LONG || d->gtype == GRID_TYPE_LONGLONG) &&
                    (p->type == GRID_TYPE_LONG || p->type == GRID_TYPE_LONGLONG);
        return arg_error(
            KIND_TYPE, ARG_FMT ": expects dtype %s, got a gridrpc.Data of dtype %S (IDL %s)%s%s%s",
            ARG_ARGS(cs, i), dtype_name(p), d->dtype, type_name(d->gtype),
            longs ? ": put it with type='" : "", longs ? type_name(p->type) : "", longs ? "'" : "");
    }
    if (d->count != count)
        return arg_error(KIND_VALUE,
                         ARG_FMT ": expects shape %s (%lld elements of %s), got a gridrpc.Data of shape %S "
                                 "(%zd elements)",
                         ARG_ARGS(cs, i), shp, count, dtype_name(p), d->shape, d->count);
    Py_INCREF(d);
    cs->keep[i] = (PyObject *)d;
    cs->data[i] = 1;
    d->busy++;
    cs->argv[i] = d->h; /* the library recognises its handle pointer */
    return 0;
}

/* A new, empty DataObject of class CLS (gridrpc.Data or a subclass). */
static DataObject *data_alloc(PyObject *cls, int gtype, Py_ssize_t count, Py_ssize_t itemsize,
                              PyObject *dtype, PyObject *shape) {
    if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject *)cls, &DataType)) {
        PyErr_SetString(PyExc_TypeError, "the class must be gridrpc.Data or a subclass");
        return NULL;
    }
    DataObject *d = (DataObject *)((PyTypeObject *)cls)->tp_alloc((PyTypeObject *)cls, 0);
    if (!d) return NULL;
    d->h = NULL;
    d->gtype = gtype;
    d->count = count;
    d->itemsize = itemsize;
    Py_INCREF(dtype);
    d->dtype = dtype;
    Py_INCREF(shape);
    d->shape = shape;
    d->busy = 0;
    return d;
}

PyDoc_STRVAR(data_put_doc,
             "_data_put(cls, array, where, type)\n--\n\n"
             "Puts ARRAY (any C-contiguous buffer) on a server; returns a CLS holding the handle.");

static PyObject *core_data_put(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "_data_put(cls, array, where, type)");
        return NULL;
    }
    const char *where = NULL, *type = NULL;
    if (args[2] != Py_None && !(where = PyUnicode_AsUTF8(args[2]))) return NULL;
    if (args[3] != Py_None && !(type = PyUnicode_AsUTF8(args[3]))) return NULL;
    PyObject *o = args[1];
    if (!PyObject_CheckBuffer(o))
        return arg_error(KIND_TYPE,
                         "gridrpc.put: expects a C-contiguous array (numpy, array.array, bytes), got %s",
                         Py_TYPE(o)->tp_name),
               NULL;
    Py_buffer vw;
    if (PyObject_GetBuffer(o, &vw, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        PyErr_Clear();
        return arg_error(KIND_VALUE,
                         "gridrpc.put: the %s is not C-contiguous: pass numpy.ascontiguousarray(it)",
                         Py_TYPE(o)->tp_name),
               NULL;
    }
    char dtn[200];
    buffer_dtype(&vw, dtn, sizeof dtn);
    char kind = format_kind(vw.format);
    int gtype = kind ? gtype_of(kind, vw.itemsize, dtn, type) : 0;
    if (!kind) arg_error(KIND_TYPE, "gridrpc.put: elements of %s have no IDL type", dtn);
    PyObject *shape = NULL, *dtype = NULL, *res = NULL;
    if (!gtype) goto done;
    shape = PyTuple_New(vw.ndim);
    for (int k = 0; shape && k < vw.ndim; k++) {
        PyObject *v = PyLong_FromSsize_t(vw.shape ? vw.shape[k] : vw.len / vw.itemsize);
        if (!v)
            Py_CLEAR(shape);
        else
            PyTuple_SET_ITEM(shape, k, v);
    }
    dtype = PyUnicode_FromString(kind == 'S' ? "S1" : dtn);
    if (!shape || !dtype) goto done;
    Py_ssize_t count = vw.len / vw.itemsize;
    DataObject *d = data_alloc(args[0], gtype, count, vw.itemsize, dtype, shape);
    if (!d) goto done;
    grid_data_np *h = NULL;
    int rc;
    sync_in_flight++;
    PyThreadState *ts = PyEval_SaveThread(); /* no GIL while the library works */
    rc = grid_data_put_np(&h, where, gtype, (size_t)count, vw.buf);
    PyEval_RestoreThread(ts);
    sync_in_flight--;
    if (rc != GRID_OK) {
        raise_grid(rc, grid_last_error());
        Py_DECREF(d);
        goto done;
    }
    env_dirty = 0;
    d->h = h;
    res = (PyObject *)d;
done:
    Py_XDECREF(shape);
    Py_XDECREF(dtype);
    PyBuffer_Release(&vw);
    return res;
}

PyDoc_STRVAR(data_new_doc, "_data_new(cls, dtype, kind, itemsize, shape, type)\n--\n\n"
                           "A handle with no data yet (an OUT argument that stays on the server).");

static PyObject *core_data_new(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 6 || !PyUnicode_Check(args[1]) || !PyUnicode_Check(args[2]) || !PyTuple_Check(args[4])) {
        PyErr_SetString(PyExc_TypeError,
                        "_data_new(cls, dtype: str, kind: str, itemsize: int, shape: tuple, type)");
        return NULL;
    }
    const char *dtn = PyUnicode_AsUTF8(args[1]), *kind = PyUnicode_AsUTF8(args[2]), *type = NULL;
    if (!dtn || !kind) return NULL;
    if (args[5] != Py_None && !(type = PyUnicode_AsUTF8(args[5]))) return NULL;
    Py_ssize_t itemsize = PyLong_AsSsize_t(args[3]);
    if (itemsize == -1 && PyErr_Occurred()) return NULL;
    int gtype = gtype_of(kind[0], itemsize, dtn, type);
    if (!gtype) return NULL;
    Py_ssize_t count = 1;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(args[4]); k++) {
        Py_ssize_t e = PyLong_AsSsize_t(PyTuple_GET_ITEM(args[4], k));
        if (e == -1 && PyErr_Occurred()) return NULL;
        if (e < 0 || __builtin_mul_overflow(count, e, &count))
            return arg_error(KIND_VALUE, "gridrpc.Data.new: shape %R is out of range", args[4]), NULL;
    }
    DataObject *d = data_alloc(args[0], gtype, count, itemsize, args[1], args[4]);
    if (!d) return NULL;
    int rc = grid_data_new_np(&d->h, gtype, (size_t)count);
    if (rc != GRID_OK) {
        d->h = NULL;
        raise_grid(rc, grid_last_error());
        Py_DECREF(d);
        return NULL;
    }
    return (PyObject *)d;
}

static int data_live(DataObject *d, const char *what) {
    if (d->h) return 0;
    return arg_error(KIND_VALUE, "gridrpc.Data.%s: this handle was freed", what);
}

PyDoc_STRVAR(data_get_into_doc,
             "_get_into(array)\n--\n\n"
             "Copies the data into ARRAY (writable, C-contiguous, of the handle's dtype and size).");

static PyObject *data_get_into(DataObject *self, PyObject *o) {
    if (data_live(self, "get") < 0) return NULL;
    Py_buffer vw;
    if (!PyObject_CheckBuffer(o) ||
        PyObject_GetBuffer(o, &vw, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_WRITABLE) < 0) {
        PyErr_Clear();
        return arg_error(
                   KIND_TYPE,
                   "gridrpc.Data.get: out= must be a writable C-contiguous array of dtype %S and shape %S",
                   self->dtype, self->shape),
               NULL;
    }
    char dtn[200];
    char kind = format_kind(vw.format);
    buffer_dtype(&vw, dtn, sizeof dtn);
    int gt = kind ? gtype_of(kind, vw.itemsize, dtn, NULL) : 0;
    if (!gt) PyErr_Clear();
    int same = gt == self->gtype || (gt && type_size(gt) == type_size(self->gtype) && is_integer_type(gt) &&
                                     is_integer_type(self->gtype));
    Py_ssize_t have = vw.len / (vw.itemsize ? vw.itemsize : 1);
    if (!same || have != self->count) {
        PyBuffer_Release(&vw);
        return arg_error(
                   same ? KIND_VALUE : KIND_TYPE,
                   "gridrpc.Data.get: out= is %s with %zd elements; the handle holds %zd elements of %S "
                   "(shape %S)",
                   dtn, have, self->count, self->dtype, self->shape),
               NULL;
    }
    int rc;
    self->busy++;
    sync_in_flight++;
    PyThreadState *ts = PyEval_SaveThread(); /* no GIL while the library works */
    rc = grid_data_get_np(self->h, vw.buf, (size_t)self->count);
    PyEval_RestoreThread(ts);
    sync_in_flight--;
    self->busy--;
    PyBuffer_Release(&vw);
    if (rc != GRID_OK) {
        raise_grid(rc, grid_last_error());
        return NULL;
    }
    Py_RETURN_NONE;
}

PyDoc_STRVAR(data_free_doc, "free()\n--\n\n"
                            "Frees the data on every server holding it. Later uses raise; freeing again does "
                            "nothing.");

static PyObject *data_free(DataObject *self, PyObject *unused) {
    (void)unused;
    if (!self->h) Py_RETURN_NONE;
    if (self->busy > 0)
        return arg_error(KIND_VALUE,
                         "gridrpc.Data.free: the handle is in use by %ld call(s) not finished (in flight, "
                         "or recorded in an open transaction): free it once they are done",
                         self->busy),
               NULL;
    grid_data_np *h = self->h;
    self->h = NULL;
    int rc;
    PyThreadState *ts = PyEval_SaveThread(); /* no GIL while the library works */
    rc = grid_data_free_np(h);
    PyEval_RestoreThread(ts);
    if (rc != GRID_OK) {
        raise_grid(rc, grid_last_error());
        return NULL;
    }
    Py_RETURN_NONE;
}

#if PY_VERSION_HEX >= 0x030D0000
#define finalizing() Py_IsFinalizing()
#else
#define finalizing() _Py_IsFinalizing()
#endif

static void data_dealloc(DataObject *self) {
    /* Dropped without free(): its data is freed on the servers too (not while the
     * interpreter exits: the servers free a vanished client's data after its grace). */
    if (self->h && !finalizing()) {
        grid_data_np *h = self->h;
        PyThreadState *ts = PyEval_SaveThread(); /* no GIL while the library works */
        grid_data_free_np(h);
        PyEval_RestoreThread(ts);
    }
    self->h = NULL;
    Py_CLEAR(self->dtype);
    Py_CLEAR(self->shape);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *data_get_where(DataObject *self, void *unused) {
    (void)unused;
    return PyUnicode_FromString(self->h ? grid_data_where_np(self->h) : "");
}

static PyObject *data_get_dtype(DataObject *self, void *unused) {
    (void)unused;
    Py_INCREF(self->dtype);
    return self->dtype;
}

static PyObject *data_get_shape(DataObject *self, void *unused) {
    (void)unused;
    Py_INCREF(self->shape);
    return self->shape;
}

static PyObject *data_get_type(DataObject *self, void *unused) {
    (void)unused;
    return PyUnicode_FromString(type_name(self->gtype));
}

static PyObject *data_get_freed(DataObject *self, void *unused) {
    (void)unused;
    return PyBool_FromLong(self->h == NULL);
}

static PyObject *data_repr(DataObject *self) {
    if (!self->h) return PyUnicode_FromFormat("<gridrpc.Data %S %S, freed>", self->dtype, self->shape);
    return PyUnicode_FromFormat("<gridrpc.Data %S %S on '%s'>", self->dtype, self->shape,
                                grid_data_where_np(self->h));
}

static PyMethodDef data_methods[] = {
    {"free", (PyCFunction)data_free, METH_NOARGS, data_free_doc},
    {"_get_into", (PyCFunction)data_get_into, METH_O, data_get_into_doc},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef data_members[] = {
    {"size", T_PYSSIZET, offsetof(DataObject, count), READONLY, "the number of elements"},
    {"itemsize", T_PYSSIZET, offsetof(DataObject, itemsize), READONLY, "bytes per element"},
    {NULL, 0, 0, 0, NULL},
};

static PyGetSetDef data_getset[] = {
    {"where", (getter)data_get_where, NULL, "\"host:port\" of a server holding the data ('' when none yet)",
     NULL},
    {"dtype", (getter)data_get_dtype, NULL, "the numpy dtype name of its elements", NULL},
    {"shape", (getter)data_get_shape, NULL, "the shape get() returns", NULL},
    {"type", (getter)data_get_type, NULL, "the IDL element type ('double', 'long', ...)", NULL},
    {"freed", (getter)data_get_freed, NULL, "True once free() ran", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject DataType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "gridrpc._core.Data",
    .tp_basicsize = sizeof(DataObject),
    .tp_dealloc = (destructor)data_dealloc,
    .tp_repr = (reprfunc)data_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "An array kept on a server (a remote data handle); see gridrpc.Data.",
    .tp_methods = data_methods,
    .tp_members = data_members,
    .tp_getset = data_getset,
};

/* A string array parameter I: a sequence of str or bytes (IN, INOUT), or anything
 * (OUT: the strings come back in the result). */
static int to_string_array(callstate *cs, int i, PyObject *o, long long count) {
    const grid_param_np *p = &cs->fn->params[i];
    Py_ssize_t n = (Py_ssize_t)count;
    cs->strn[i] = n;
    cs->strv[i] = PyMem_Calloc((size_t)(n ? n : 1), sizeof(char *));
    if (!cs->strv[i]) return PyErr_NoMemory(), -1;
    cs->argv[i] = cs->strv[i];
    if (p->mode != GRID_MODE_IN) {
        cs->strv0[i] = PyMem_Calloc((size_t)(n ? n : 1), sizeof(char *));
        if (!cs->strv0[i]) return PyErr_NoMemory(), -1;
    }
    if (p->mode == GRID_MODE_OUT) return 0;
    if (PyUnicode_Check(o) || PyBytes_Check(o) || !PySequence_Check(o))
        return arg_error(KIND_TYPE, ARG_FMT ": expects a sequence of %lld str, got %s", ARG_ARGS(cs, i),
                         count, Py_TYPE(o)->tp_name);
    PyObject *t = PySequence_Tuple(o); /* a private copy: the list may change meanwhile */
    if (!t) return -1;
    cs->keep[i] = t;
    if (PyTuple_GET_SIZE(t) != n)
        return arg_error(KIND_VALUE, ARG_FMT ": expects %lld strings, got %zd", ARG_ARGS(cs, i), count,
                         PyTuple_GET_SIZE(t));
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *it = PyTuple_GET_ITEM(t, k);
        const char *s;
        Py_ssize_t len;
        if (PyUnicode_Check(it)) {
            s = PyUnicode_AsUTF8AndSize(it, &len);
            if (!s) return -1;
        } else if (PyBytes_Check(it)) {
            s = PyBytes_AS_STRING(it);
            len = PyBytes_GET_SIZE(it);
        } else {
            return arg_error(KIND_TYPE, ARG_FMT ": element %zd is a %s, not a str", ARG_ARGS(cs, i), k,
                             Py_TYPE(it)->tp_name);
        }
        if ((size_t)len != strlen(s))
            return arg_error(KIND_VALUE, ARG_FMT ": element %zd contains a NUL character", ARG_ARGS(cs, i),
                             k);
        cs->strv[i][k] = (char *)s;
        if (cs->strv0[i]) cs->strv0[i][k] = (char *)s;
    }
    return 0;
}

/* Converts array argument O for parameter I: its size comes from the scalars already
 * converted (grid_array_shape_np). */
static int to_array(callstate *cs, int i, PyObject *o) {
    const grid_param_np *p = &cs->fn->params[i];
    char shp[160];
    cs->argv[i] = NULL;
    if (p->mode == GRID_MODE_WORK) {
        if (o != Py_None)
            return arg_error(KIND_TYPE, ARG_FMT ": is a WORK array: pass None (the server allocates it)",
                             ARG_ARGS(cs, i));
        return 0;
    }
    long long *dims = cs->info->memo_dims[i];
    int rank = p->rank < GRID_MAX_RANK_NP ? p->rank : GRID_MAX_RANK_NP;
    if (!cs->memo_hit) {
        int rc = grid_array_shape_np(cs->cname, cs->argv, i, dims);
        if (rc == GRID_ERR_ARGS) { /* a size argument's value (negative, too large) */
            const char *m = grid_last_error();
            raise_obj(rc, KIND_VALUE, PyUnicode_DecodeUTF8(m, (Py_ssize_t)strlen(m), "replace"));
            return -1;
        }
        if (rc != GRID_OK) {
            raise_grid(rc, grid_last_error());
            return -1;
        }
    }
    long long count = 1;
    for (int d = 0; d < rank; d++)
        if (dims[d] < 0 || __builtin_mul_overflow(count, dims[d], &count) || count > PY_SSIZE_T_MAX)
            return arg_error(KIND_VALUE, ARG_FMT ": its size %s is out of range", ARG_ARGS(cs, i),
                             shape_str(dims, rank, shp, sizeof shp));
    if (p->type == GRID_TYPE_STRING) return to_string_array(cs, i, o, count);
    if (p->type == GRID_TYPE_FILENAME)
        return arg_error(KIND_TYPE, ARG_FMT ": arrays of file names are not supported by the Python binding",
                         ARG_ARGS(cs, i));
    const char *dt = dtype_name(p);
    shape_str(dims, rank, shp, sizeof shp);
    if (PyObject_TypeCheck(o, &DataType)) {
        /* A job is kept as a plain call on the server's disk: it carries arrays only. */
        if (cs->mode == CS_SUBMIT || cs->mode == CS_FETCH)
            return arg_error(KIND_TYPE,
                             ARG_FMT
                             ": a two-phase job cannot take a gridrpc.Data: pass the array (data.get())",
                             ARG_ARGS(cs, i));
        return data_arg(cs, i, (DataObject *)o, count, shp);
    }
    if (o == Py_None && p->mode == GRID_MODE_OUT && cs->mode == CS_TXN)
        return arg_error(KIND_TYPE,
                         ARG_FMT ": is None, but inside a transaction the binding cannot allocate OUT "
                                 "arrays (the calls run at the end of the transaction): pass a writable "
                                 "numpy array of dtype %s and shape %s; the result lands in it at the end",
                         ARG_ARGS(cs, i), dt, shp);
    /* A fetch does not read IN arrays, but the library wants a buffer: a zeroed one
     * (not returned: results() returns outputs only). */
    if (o == Py_None && (p->mode == GRID_MODE_OUT || cs->mode == CS_FETCH)) {
        /* Allocated here from the evaluated dimensions, and returned by the call. */
        if (!allocator)
            return arg_error(KIND_TYPE, ARG_FMT ": no array allocator registered", ARG_ARGS(cs, i));
        PyObject *shape = PyTuple_New(rank);
        for (int d = 0; shape && d < rank; d++) {
            PyObject *v = PyLong_FromLongLong(dims[d]);
            if (!v)
                Py_CLEAR(shape);
            else
                PyTuple_SET_ITEM(shape, d, v);
        }
        if (!shape) return -1;
        o = PyObject_CallFunction(allocator, "sN", alloc_dtype(p), shape);
        if (!o) return -1;
        cs->keep[i] = o; /* owned; results() returns it */
        cs->alloc[i] = 1;
    } else if (o == Py_None) {
        if (count == 0) return 0;
        return arg_error(KIND_TYPE,
                         ARG_FMT ": is None but must hold %lld elements: pass a numpy array of dtype %s "
                                 "and shape %s (None is allocated for OUT arrays only)",
                         ARG_ARGS(cs, i), count, dt, shp);
    }
    int writable = p->mode != GRID_MODE_IN;
    if (!PyObject_CheckBuffer(o))
        return arg_error(KIND_TYPE,
                         ARG_FMT ": expects a %sC-contiguous numpy array of dtype %s and shape %s, got %s",
                         ARG_ARGS(cs, i), writable ? "writable " : "", dt, shp, Py_TYPE(o)->tp_name);
    Py_buffer *vw = &cs->view[i];
    if (PyObject_GetBuffer(o, vw, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0)) < 0) {
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        PyObject *why = ev ? PyObject_Str(ev) : NULL;
        Py_XDECREF(et);
        Py_XDECREF(ev);
        Py_XDECREF(tb);
        if (!why) PyErr_Clear();
        int r = arg_error(KIND_VALUE,
                          ARG_FMT ": %S: pass a %sC-contiguous array of dtype %s and shape %s "
                                  "(numpy.ascontiguousarray makes one)",
                          ARG_ARGS(cs, i), why ? why : Py_None, writable ? "writable " : "", dt, shp);
        Py_XDECREF(why);
        return r;
    }
    cs->has_view[i] = 1;
    char k = format_kind(vw->format);
    char want = p->type == GRID_TYPE_FLOAT || p->type == GRID_TYPE_DOUBLE        ? 'f'
                : p->type == GRID_TYPE_SCOMPLEX || p->type == GRID_TYPE_DCOMPLEX ? 'c'
                : p->is_unsigned                                                 ? 'u'
                                                                                 : 'i';
    int ok = vw->itemsize == type_size(p->type) &&
             (k == want || (p->type == GRID_TYPE_CHAR && (k == 'i' || k == 'u' || k == 'S')));
    if (!ok) {
        char got[200];
        return arg_error(KIND_TYPE, ARG_FMT ": expects dtype %s, got %s (convert with .astype(numpy.%s))",
                         ARG_ARGS(cs, i), dt, buffer_dtype(vw, got, sizeof got),
                         p->type == GRID_TYPE_CHAR ? (p->is_unsigned ? "uint8" : "int8") : dt);
    }
    long long have = vw->len / vw->itemsize;
    int same_shape = vw->ndim == rank && vw->shape;
    for (int d = 0; same_shape && d < rank; d++)
        if (vw->shape[d] != dims[d]) same_shape = 0;
    if (have != count || (vw->ndim == rank && !same_shape)) {
        char got[160];
        long long gd[GRID_MAX_RANK_NP];
        int gr = vw->ndim < GRID_MAX_RANK_NP ? vw->ndim : GRID_MAX_RANK_NP;
        for (int d = 0; d < gr; d++)
            gd[d] = vw->shape ? vw->shape[d] : have;
        return arg_error(KIND_VALUE,
                         ARG_FMT ": expects shape %s (%lld elements of %s), got shape %s (%lld elements)",
                         ARG_ARGS(cs, i), shp, count, dt, shape_str(gd, gr, got, sizeof got), have);
    }
    cs->argv[i] = count ? vw->buf : NULL;
    return 0;
}

/* Fills CS from ARGS (the name, then one argument per parameter). On failure an
 * exception is set; CS is left for cs_release. */
static int prepare_mode(callstate *cs, PyObject *const *args, Py_ssize_t nargs, int mode) {
    cs_init(cs);
    cs->mode = mode;
    reload_if_env_changed();
    if (nargs < 1 || !PyUnicode_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "the first argument must be the function's name (a str)");
        return -1;
    }
    Py_ssize_t len;
    cs->cname = PyUnicode_AsUTF8AndSize(args[0], &len);
    if (!cs->cname) return -1;
    if ((size_t)len != strlen(cs->cname)) {
        PyErr_SetString(PyExc_ValueError, "the function's name contains a NUL character");
        return -1;
    }
    Py_INCREF(args[0]);
    cs->name = args[0];
    cs->fnobj = get_fn(args[0], cs->cname);
    if (!cs->fnobj) return -1;
    cs->info = PyCapsule_GetPointer(cs->fnobj, "gridrpc._core.function");
    cs->fn = &cs->info->f;
    const grid_function_np *fn = cs->fn;
    int n = fn->nparams;
    for (int i = 0; i < n; i++) {
        cs->argv[i] = NULL;
        cs->orig[i] = NULL;
        cs->keep[i] = NULL;
        cs->strv[i] = cs->strv0[i] = NULL;
        cs->strn[i] = 0;
        cs->has_view[i] = 0;
        cs->alloc[i] = 0;
        cs->data[i] = 0;
    }
    cs->n = n;
    if (nargs - 1 != n) {
        char names[1024];
        size_t k = 0;
        names[0] = '\0';
        for (int i = 0; i < n && k < sizeof names; i++)
            k += (size_t)snprintf(names + k, sizeof names - k, "%s%s", i ? ", " : "", fn->params[i].name);
        return arg_error(KIND_TYPE, "%s/%s takes %d argument%s (%s) but %zd %s given", fn->module, fn->name,
                         n, n == 1 ? "" : "s", names, nargs - 1, nargs - 1 == 1 ? "was" : "were");
    }
    for (int i = 0; i < n; i++)
        if (fn->params[i].rank == 0 && to_scalar(cs, i, args[i + 1]) < 0) return -1;
    /* The shapes of the last call hold if the integer scalars they depend on are the same
     * (each is zero-extended in val[i]: see to_scalar). */
    fninfo *info = cs->info;
    int hit = info->memo_valid;
    for (int i = 0; i < n; i++) {
        const grid_param_np *p = &fn->params[i];
        if (p->rank == 0 && is_integer_type(p->type) && p->mode != GRID_MODE_OUT &&
            info->memo_key[i] != cs->val[i].ll)
            hit = 0;
    }
    cs->memo_hit = hit;
    if (!hit) info->memo_valid = 0;
    for (int i = 0; i < n; i++)
        if (fn->params[i].rank > 0 && to_array(cs, i, args[i + 1]) < 0) return -1;
    if (!hit) {
        for (int i = 0; i < n; i++)
            info->memo_key[i] = fn->params[i].rank == 0 ? cs->val[i].ll : 0;
        info->memo_valid = 1;
    }
    return 0;
}

static int prepare(callstate *cs, PyObject *const *args, Py_ssize_t nargs) {
    return prepare_mode(cs, args, nargs, CS_CALL);
}

static PyObject *str_value(const char *s) {
    if (!s) Py_RETURN_NONE;
    return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "surrogateescape");
}

static PyObject *scalar_value(const grid_param_np *p, const grid_scalar_np *v) {
    int u = p->is_unsigned;
    switch (p->type) {
    case GRID_TYPE_CHAR: return PyUnicode_FromOrdinal((unsigned char)v->c);
    case GRID_TYPE_SHORT: return PyLong_FromLong(u ? (long)(unsigned short)v->s : (long)v->s);
    case GRID_TYPE_INT: return u ? PyLong_FromUnsignedLong((unsigned)v->i) : PyLong_FromLong(v->i);
    case GRID_TYPE_LONG: return u ? PyLong_FromUnsignedLong((unsigned long)v->l) : PyLong_FromLong(v->l);
    case GRID_TYPE_LONGLONG:
        return u ? PyLong_FromUnsignedLongLong((unsigned long long)v->ll) : PyLong_FromLongLong(v->ll);
    case GRID_TYPE_FLOAT: return PyFloat_FromDouble(v->f);
    case GRID_TYPE_DOUBLE: return PyFloat_FromDouble(v->d);
    case GRID_TYPE_SCOMPLEX: return PyComplex_FromDoubles(v->sc.r, v->sc.i);
    case GRID_TYPE_DCOMPLEX: return PyComplex_FromDoubles(v->dc.r, v->dc.i);
    case GRID_TYPE_STRING: return str_value(v->str);
    default: Py_RETURN_NONE;
    }
}

/* The call's results, in parameter order: OUT and INOUT scalars and strings, OUT/INOUT
 * string arrays (as lists) and the OUT arrays passed as None (allocated here); None
 * when there are none, the one value, or a tuple. Arrays the caller passed are filled
 * in place and not returned. */
static PyObject *results(callstate *cs) {
    PyObject *items[MAXP];
    int m = 0;
    for (int i = 0; i < cs->n; i++) {
        const grid_param_np *p = &cs->fn->params[i];
        PyObject *it;
        if (p->mode != GRID_MODE_OUT && p->mode != GRID_MODE_INOUT) continue;
        if (p->type == GRID_TYPE_FILENAME) continue;
        if (cs->alloc[i]) {
            it = cs->keep[i];
            Py_INCREF(it);
        } else if (p->rank == 0) {
            it = scalar_value(p, &cs->val[i]);
        } else if (p->type == GRID_TYPE_STRING) {
            it = PyList_New(cs->strn[i]);
            for (Py_ssize_t k = 0; it && k < cs->strn[i]; k++) {
                PyObject *s = str_value(cs->strv[i][k]);
                if (!s)
                    Py_CLEAR(it);
                else
                    PyList_SET_ITEM(it, k, s);
            }
        } else {
            continue;
        }
        if (!it) {
            while (m > 0)
                Py_DECREF(items[--m]);
            return NULL;
        }
        items[m++] = it;
    }
    if (m == 0) Py_RETURN_NONE;
    if (m == 1) return items[0];
    PyObject *t = PyTuple_New(m);
    if (!t) {
        while (m > 0)
            Py_DECREF(items[--m]);
        return NULL;
    }
    for (int k = 0; k < m; k++)
        PyTuple_SET_ITEM(t, k, items[k]);
    return t;
}

/* ------------------------------------------------------------------ sync call */

PyDoc_STRVAR(call_doc, "call(name, *args)\n--\n\n"
                       "Calls the remote function NAME with one argument per IDL parameter and returns its\n"
                       "OUT/INOUT scalars and strings and the OUT arrays passed as None (None, one value or\n"
                       "a tuple). OUT arrays passed are filled in place.");

/* Inside a transaction a call is recorded and its buffers are read at the end: only
 * record() keeps them alive that long. */
static int refuse_in_transaction(const char *what) {
    if (!grid_transaction_active_np()) return 0;
    return arg_error(KIND_VALUE,
                     "%s inside a transaction: use gridrpc.call (it records the call and keeps its arrays "
                     "until the transaction ends)",
                     what);
}

static PyObject *core_call(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (refuse_in_transaction("_core.call") < 0) return NULL;
    callstate cs;
    if (prepare(&cs, args, nargs) < 0) {
        cs_release(&cs);
        return NULL;
    }
    int rc;
    sync_in_flight++;
    PyThreadState *ts = PyEval_SaveThread(); /* no GIL while the library works */
    rc = grid_call_argv_np(cs.cname, cs.n, cs.argv);
    PyEval_RestoreThread(ts);
    sync_in_flight--;
    PyObject *res = NULL;
    if (rc == GRID_OK) {
        env_dirty = 0;
        res = results(&cs);
    } else {
        raise_grid(rc, grid_last_error());
        cs_forget_fn(&cs);
    }
    cs_free_outputs(&cs);
    cs_release(&cs);
    return res;
}

PyDoc_STRVAR(convert_doc,
             "_convert(name, *args)\n--\n\n"
             "Converts and checks the arguments as call does, without calling: the binding's own\n"
             "cost per call (bench/python_overhead.py).");

static PyObject *core_convert(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    callstate cs;
    int rc = prepare(&cs, args, nargs);
    cs_release(&cs);
    if (rc < 0) return NULL;
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ async calls */

typedef struct {
    PyObject ob_base; /* PyObject_HEAD */
    callstate *cs;    /* NULL once finished or discarded */
    int id;           /* 0 until sent */
    int in_flight;    /* sent, not yet waited on */
    int sending;      /* send() is running (without the GIL) */
} PendingObject;

static void pending_drop(PendingObject *self) {
    callstate *cs = self->cs;
    if (!cs) return;
    self->cs = NULL;
    async_open--;
    cs_free_outputs(cs);
    cs_release(cs);
    PyMem_Free(cs);
    if (self->id > 0) grid_forget_np(self->id);
}

static void pending_dealloc(PendingObject *self) {
    if (self->cs && self->in_flight) {
        /* Dropped while running: the library must never touch the buffers again. */
        int id = self->id;
        PyThreadState *ts = PyEval_SaveThread(); /* no GIL while the library works */
        grid_cancel(id);
        grid_wait(id);
        PyEval_RestoreThread(ts);
        self->in_flight = 0;
    }
    pending_drop(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

PyDoc_STRVAR(finish_doc,
             "finish(rc)\n--\n\n"
             "Completes the call after a wait returned RC: returns its results or raises its error,\n"
             "then releases the buffers and forgets the call.");

static PyObject *pending_finish(PendingObject *self, PyObject *arg) {
    long rc = PyLong_AsLong(arg);
    if (rc == -1 && PyErr_Occurred()) return NULL;
    if (!self->cs || self->sending) {
        PyErr_SetString(PyExc_RuntimeError,
                        self->cs ? "the call is being sent" : "this call was already finished");
        return NULL;
    }
    self->in_flight = 0;
    PyObject *res = NULL;
    if (rc == GRID_OK) {
        env_dirty = 0;
        res = results(self->cs);
    } else {
        raise_grid((int)rc, grid_call_message_np(self->id));
        cs_forget_fn(self->cs);
    }
    pending_drop(self);
    return res;
}

PyDoc_STRVAR(discard_doc, "discard()\n--\n\nReleases an unsent or waited-on call's buffers without results.");

static PyObject *pending_discard(PendingObject *self, PyObject *unused) {
    (void)unused;
    if (self->cs && (self->in_flight || self->sending)) {
        PyErr_SetString(PyExc_RuntimeError, "the call is still in flight: wait for it first");
        return NULL;
    }
    pending_drop(self);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(send_doc, "send()\n--\n\n"
                       "Sends a prepared call (grid_call_async_argv_np, without the GIL: it may block while\n"
                       "a big argument goes out) and returns its id; raises and releases the call's\n"
                       "buffers when it cannot be started.");

static PyObject *pending_send(PendingObject *self, PyObject *unused) {
    (void)unused;
    if (!self->cs || self->sending || self->id) {
        PyErr_SetString(PyExc_RuntimeError, "this call was already sent or discarded");
        return NULL;
    }
    callstate *cs = self->cs;
    int id;
    self->sending = 1;
    PyThreadState *ts = PyEval_SaveThread(); /* no GIL while the library works */
    id = grid_call_async_argv_np(cs->cname, cs->n, cs->argv);
    PyEval_RestoreThread(ts);
    self->sending = 0;
    if (id <= 0) {
        raise_grid(id < 0 ? -id : GRID_ERR_INTERNAL, grid_last_error());
        cs_forget_fn(cs);
        pending_drop(self);
        return NULL;
    }
    self->id = id;
    self->in_flight = 1;
    return PyLong_FromLong(id);
}

static PyObject *pending_get_name(PendingObject *self, void *unused) {
    (void)unused;
    if (!self->cs || !self->cs->name) Py_RETURN_NONE;
    Py_INCREF(self->cs->name);
    return self->cs->name;
}

static PyMethodDef pending_methods[] = {
    {"send", (PyCFunction)pending_send, METH_NOARGS, send_doc},
    {"finish", (PyCFunction)pending_finish, METH_O, finish_doc},
    {"discard", (PyCFunction)pending_discard, METH_NOARGS, discard_doc},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef pending_members[] = {
    {"id", T_INT, offsetof(PendingObject, id), READONLY, "the call's id (grid_call_async); 0 until sent"},
    {NULL, 0, 0, 0, NULL},
};

static PyGetSetDef pending_getset[] = {
    {"name", (getter)pending_get_name, NULL, "the function's name (None once finished)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject PendingType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "gridrpc._core.Pending",
    .tp_basicsize = sizeof(PendingObject),
    .tp_dealloc = (destructor)pending_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An asynchronous call, holding its arguments' buffers until it completes.",
    .tp_methods = pending_methods,
    .tp_members = pending_members,
    .tp_getset = pending_getset,
};

/* A Pending object owning CS (released when it cannot be made). */
static PendingObject *wrap_pending(callstate *cs) {
    PendingObject *po = PyObject_New(PendingObject, &PendingType);
    if (!po) {
        cs_release(cs);
        PyMem_Free(cs);
        return NULL;
    }
    po->cs = cs;
    po->id = 0;
    po->in_flight = 0;
    po->sending = 0;
    async_open++;
    return po;
}

/* Converts and checks the arguments of an asynchronous call: a Pending object, not
 * sent yet. */
static PendingObject *new_pending(PyObject *const *args, Py_ssize_t nargs) {
    callstate *cs = PyMem_Malloc(sizeof *cs);
    if (!cs) return (PendingObject *)PyErr_NoMemory();
    if (prepare(cs, args, nargs) < 0) {
        cs_release(cs);
        PyMem_Free(cs);
        return NULL;
    }
    return wrap_pending(cs);
}

PyDoc_STRVAR(prepare_doc,
             "prepare(name, *args)\n--\n\n"
             "Converts and checks an asynchronous call's arguments (as call does) and returns a\n"
             "Pending object; its send() starts the call.");

static PyObject *core_prepare(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    return (PyObject *)new_pending(args, nargs);
}

PyDoc_STRVAR(start_doc,
             "start(name, *args)\n--\n\n"
             "prepare() and send() in one: starts an asynchronous call in this thread and returns\n"
             "its Pending object.");

static PyObject *core_start(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    PendingObject *po = new_pending(args, nargs);
    if (!po) return NULL;
    PyObject *id = pending_send(po, NULL);
    if (!id) {
        Py_DECREF(po);
        return NULL;
    }
    Py_DECREF(id);
    return (PyObject *)po;
}

/* ------------------------------------------------------------------ transactions */

PyDoc_STRVAR(record_doc,
             "record(name, *args)\n--\n\n"
             "Inside an open transaction (transaction_begin): records a call (grid_call_argv_np\n"
             "records it; nothing runs) and returns a Pending object that holds its buffers until\n"
             "the transaction ends (finish(0) then gives its results) or is dropped (discard()).\n"
             "OUT arrays must be passed: the binding cannot allocate them.");

static PyObject *core_record(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (!grid_transaction_active_np())
        return arg_error(KIND_VALUE, "record(): no transaction is open in this thread"), NULL;
    callstate *cs = PyMem_Malloc(sizeof *cs);
    if (!cs) return PyErr_NoMemory();
    if (prepare_mode(cs, args, nargs, CS_TXN) < 0) {
        cs_release(cs);
        PyMem_Free(cs);
        return NULL;
    }
    int rc;
    sync_in_flight++;
    PyThreadState *ts = PyEval_SaveThread(); /* no GIL while the library works */
    rc = grid_call_argv_np(cs->cname, cs->n, cs->argv);
    PyEval_RestoreThread(ts);
    sync_in_flight--;
    if (rc != GRID_OK) {
        raise_grid(rc, grid_last_error());
        cs_forget_fn(cs);
        cs_release(cs);
        PyMem_Free(cs);
        return NULL;
    }
    return (PyObject *)wrap_pending(cs);
}

static PyObject *core_transaction_begin(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    int rc = grid_transaction_begin();
    if (rc != GRID_OK) {
        raise_grid(rc, grid_last_error());
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *core_transaction_end(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    int rc;
    sync_in_flight++;
    PyThreadState *ts = PyEval_SaveThread(); /* no GIL while the calls run */
    rc = grid_transaction_end();
    PyEval_RestoreThread(ts);
    sync_in_flight--;
    if (rc != GRID_OK) {
        raise_grid(rc, grid_last_error());
        return NULL;
    }
    env_dirty = 0;
    Py_RETURN_NONE;
}

static PyObject *core_transaction_abort(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    int rc = grid_transaction_abort_np();
    if (rc != GRID_OK) {
        raise_grid(rc, grid_last_error());
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *core_transaction_active(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyBool_FromLong(grid_transaction_active_np());
}

static PyObject *core_transaction_stats(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    grid_transaction_stats_np s;
    memset(&s, 0, sizeof s);
    grid_transaction_get_stats_np(&s);
    return Py_BuildValue("{slslslslslslsd}", "calls", s.calls, "raw", s.raw, "war", s.war, "waw", s.waw,
                         "reruns", s.reruns, "servers", s.servers, "seconds", s.seconds);
}

/* ------------------------------------------------------------------ two-phase calls */

PyDoc_STRVAR(submit_doc,
             "submit(name, *args)\n--\n\n"
             "Submits a call (grid_submit_argv_np) and returns its job id \"host:port/HEX\" once the\n"
             "server has it on disk. OUT arrays are not written.");

static PyObject *core_submit(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (refuse_in_transaction("gridrpc.submit") < 0) return NULL;
    callstate cs;
    if (prepare_mode(&cs, args, nargs, CS_SUBMIT) < 0) {
        cs_release(&cs);
        return NULL;
    }
    char job[GRID_JOB_ID_MAX_NP];
    int rc;
    sync_in_flight++;
    PyThreadState *ts = PyEval_SaveThread(); /* no GIL while the library works */
    rc = grid_submit_argv_np(job, sizeof job, cs.cname, cs.n, cs.argv);
    PyEval_RestoreThread(ts);
    sync_in_flight--;
    PyObject *res = NULL;
    if (rc == GRID_OK) {
        env_dirty = 0;
        res = PyUnicode_FromString(job);
    } else {
        raise_grid(rc, grid_last_error());
        cs_forget_fn(&cs);
    }
    cs_release(&cs);
    return res;
}

PyDoc_STRVAR(fetch_doc,
             "fetch(job, wait, name, *args)\n--\n\n"
             "Fetches job JOB's results (grid_job_fetch_argv_np), waiting up to WAIT seconds; NAME is\n"
             "the function's name on the job's server (its interface converts ARGS, those of the\n"
             "submit: IN arrays may be None, OUT and INOUT arrays passed as None are allocated).\n"
             "Returns as call does.");

static PyObject *core_fetch(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs < 3 || !PyUnicode_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "fetch(job: str, wait: float, name: str, *args)");
        return NULL;
    }
    const char *job = PyUnicode_AsUTF8(args[0]);
    if (!job) return NULL;
    double wait = PyFloat_AsDouble(args[1]);
    if (wait == -1.0 && PyErr_Occurred()) return NULL;
    callstate cs;
    if (prepare_mode(&cs, args + 2, nargs - 2, CS_FETCH) < 0) {
        cs_release(&cs);
        return NULL;
    }
    int rc;
    sync_in_flight++;
    PyThreadState *ts = PyEval_SaveThread(); /* no GIL while the library works */
    rc = grid_job_fetch_argv_np(job, wait, cs.n, cs.argv);
    PyEval_RestoreThread(ts);
    sync_in_flight--;
    PyObject *res = NULL;
    if (rc == GRID_OK) {
        env_dirty = 0;
        res = results(&cs);
    } else {
        raise_grid(rc, grid_last_error());
    }
    cs_free_outputs(&cs);
    cs_release(&cs);
    return res;
}

static PyObject *core_job_state(PyObject *self, PyObject *arg) {
    (void)self;
    const char *job = PyUnicode_Check(arg) ? PyUnicode_AsUTF8(arg) : NULL;
    if (!job) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "job_state(job): the job id is a str");
        return NULL;
    }
    grid_job_info_np info;
    int rc;
    PyThreadState *ts = PyEval_SaveThread(); /* no GIL while the library works */
    rc = grid_job_state_np(job, &info);
    PyEval_RestoreThread(ts);
    if (rc != GRID_OK) {
        raise_grid(rc, grid_last_error());
        return NULL;
    }
    return Py_BuildValue("(siiddKK)", info.function, info.state, info.code, info.submitted, info.finished,
                         info.bytes_in, info.bytes_out);
}

static PyObject *core_job_forget(PyObject *self, PyObject *arg) {
    (void)self;
    const char *job = PyUnicode_Check(arg) ? PyUnicode_AsUTF8(arg) : NULL;
    if (!job) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "forget(job): the job id is a str");
        return NULL;
    }
    int rc;
    PyThreadState *ts = PyEval_SaveThread(); /* no GIL while the library works */
    rc = grid_job_forget_np(job);
    PyEval_RestoreThread(ts);
    if (rc != GRID_OK) {
        raise_grid(rc, grid_last_error());
        return NULL;
    }
    Py_RETURN_NONE;
}

PyDoc_STRVAR(open_calls_doc,
             "open_calls()\n--\n\n"
             "Asynchronous calls whose arguments the binding still holds (prepared, being sent,\n"
             "in flight, or done and not yet finished).");

static PyObject *core_open_calls(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyLong_FromLong(async_open);
}

/* Reads one int argument of a fastcall function. */
static int int_arg(PyObject *const *args, Py_ssize_t nargs, const char *fname, int *out) {
    if (nargs != 1) {
        PyErr_Format(PyExc_TypeError, "%s() takes exactly one argument (%zd given)", fname, nargs);
        return -1;
    }
    long v = PyLong_AsLong(args[0]);
    if (v == -1 && PyErr_Occurred()) return -1;
    if (v < INT_MIN || v > INT_MAX) {
        PyErr_Format(PyExc_OverflowError, "%s(): call id out of range", fname);
        return -1;
    }
    *out = (int)v;
    return 0;
}

static PyObject *core_wait(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    int id, rc;
    if (int_arg(args, nargs, "wait", &id) < 0) return NULL;
    PyThreadState *ts = PyEval_SaveThread(); /* no GIL while the library works */
    rc = grid_wait(id);
    PyEval_RestoreThread(ts);
    return PyLong_FromLong(rc);
}

static PyObject *core_wait_any(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    int id = GRID_ID_NONE, rc;
    PyThreadState *ts = PyEval_SaveThread(); /* no GIL while the library works */
    rc = grid_wait_any(&id);
    PyEval_RestoreThread(ts);
    return Py_BuildValue("(ii)", rc, id);
}

static PyObject *core_probe(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    int id;
    if (int_arg(args, nargs, "probe", &id) < 0) return NULL;
    return PyLong_FromLong(grid_probe(id));
}

static PyObject *core_cancel(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    int id, rc;
    if (int_arg(args, nargs, "cancel", &id) < 0) return NULL;
    PyThreadState *ts = PyEval_SaveThread(); /* no GIL while the library works */
    rc = grid_cancel(id);
    PyEval_RestoreThread(ts);
    return PyLong_FromLong(rc);
}

static PyObject *core_call_error(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    int id;
    if (int_arg(args, nargs, "call_error", &id) < 0) return NULL;
    return PyLong_FromLong(grid_call_error_np(id));
}

static PyObject *core_call_waited(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    int id;
    if (int_arg(args, nargs, "call_waited", &id) < 0) return NULL;
    return PyBool_FromLong(grid_call_waited_np(id));
}

/* ------------------------------------------------------------------ introspection, settings */

static PyObject *core_describe(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 1 || !PyUnicode_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "describe() takes the function's name (a str)");
        return NULL;
    }
    const char *cname = PyUnicode_AsUTF8(args[0]);
    if (!cname) return NULL;
    PyObject *cap = get_fn(args[0], cname);
    if (!cap) return NULL;
    const grid_function_np *f = PyCapsule_GetPointer(cap, "gridrpc._core.function");
    PyObject *params = PyTuple_New(f->nparams), *res = NULL;
    for (int i = 0; params && i < f->nparams; i++) {
        const grid_param_np *p = &f->params[i];
        PyObject *t = Py_BuildValue("(sssiN)", p->name, type_name(p->type), mode_name(p->mode), p->rank,
                                    PyBool_FromLong(p->is_unsigned));
        if (!t)
            Py_CLEAR(params);
        else
            PyTuple_SET_ITEM(params, i, t);
    }
    if (params) res = Py_BuildValue("(sssN)", f->module, f->name, f->description, params);
    Py_DECREF(cap);
    return res;
}

static PyObject *core_list_functions(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    const char *server = NULL;
    if (nargs > 1 || (nargs == 1 && args[0] != Py_None && !PyUnicode_Check(args[0]))) {
        PyErr_SetString(PyExc_TypeError, "list_functions() takes the server (\"host:port\", a str) or None");
        return NULL;
    }
    if (nargs == 1 && args[0] != Py_None && !(server = PyUnicode_AsUTF8(args[0]))) return NULL;
    reload_if_env_changed();
    char **names = NULL;
    int count = 0, rc;
    sync_in_flight++;
    PyThreadState *ts = PyEval_SaveThread(); /* no GIL while the library works */
    rc = grid_list_functions_np(server, &names, &count);
    PyEval_RestoreThread(ts);
    sync_in_flight--;
    if (rc != GRID_OK) {
        const char *m = grid_last_error();
        if (rc == GRID_ERR_ARGS)
            raise_obj(rc, KIND_VALUE, PyUnicode_DecodeUTF8(m, (Py_ssize_t)strlen(m), "replace"));
        else
            raise_grid(rc, m);
        return NULL;
    }
    PyObject *list = PyList_New(count);
    for (int i = 0; list && i < count; i++) {
        PyObject *s = str_value(names[i]);
        if (!s)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, i, s);
    }
    grid_free_functions_np(names);
    return list;
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
    PyThreadState *ts = PyEval_SaveThread(); /* no GIL while the library works */
    grid_reset_np();
    PyEval_RestoreThread(ts);
    env_snapshot();
    env_dirty = 0;
    timeouts_forced = 0;
    Py_RETURN_NONE;
}

static PyObject *core_stats(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    grid_stats_np s;
    grid_get_stats_np(&s);
    return Py_BuildValue("{slslslsKsK}", "descriptor_fetches", s.descriptor_fetches, "connections_opened",
                         s.connections_opened, "calls", s.calls, "bytes_sent", s.bytes_sent, "bytes_received",
                         s.bytes_received);
}

static PyObject *core_error_name(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    int code;
    if (int_arg(args, nargs, "error_name", &code) < 0) return NULL;
    return Py_BuildValue("(ss)", grid_error_name(code), grid_error_string(code));
}

static PyObject *core_set_allocator(PyObject *self, PyObject *f) {
    (void)self;
    if (!PyCallable_Check(f)) {
        PyErr_SetString(PyExc_TypeError, "the allocator must be callable");
        return NULL;
    }
    Py_INCREF(f);
    Py_XSETREF(allocator, f);
    Py_RETURN_NONE;
}

static PyObject *core_set_error_factory(PyObject *self, PyObject *f) {
    (void)self;
    if (!PyCallable_Check(f)) {
        PyErr_SetString(PyExc_TypeError, "the error factory must be callable");
        return NULL;
    }
    Py_INCREF(f);
    Py_XSETREF(error_factory, f);
    Py_RETURN_NONE;
}

static PyMethodDef core_methods[] = {
    {"call", (PyCFunction)(void (*)(void))core_call, METH_FASTCALL, call_doc},
    {"start", (PyCFunction)(void (*)(void))core_start, METH_FASTCALL, start_doc},
    {"prepare", (PyCFunction)(void (*)(void))core_prepare, METH_FASTCALL, prepare_doc},
    {"open_calls", core_open_calls, METH_NOARGS, open_calls_doc},
    {"_convert", (PyCFunction)(void (*)(void))core_convert, METH_FASTCALL, convert_doc},
    {"wait", (PyCFunction)(void (*)(void))core_wait, METH_FASTCALL, "wait(id) -> rc: waits for one call"},
    {"wait_any", core_wait_any, METH_NOARGS, "wait_any() -> (rc, id): waits for any call not yet waited on"},
    {"probe", (PyCFunction)(void (*)(void))core_probe, METH_FASTCALL, "probe(id) -> 1 done, 0 running"},
    {"cancel", (PyCFunction)(void (*)(void))core_cancel, METH_FASTCALL, "cancel(id) -> rc"},
    {"call_error", (PyCFunction)(void (*)(void))core_call_error, METH_FASTCALL, "call_error(id) -> rc"},
    {"call_waited", (PyCFunction)(void (*)(void))core_call_waited, METH_FASTCALL,
     "call_waited(id) -> whether a wait returned it"},
    {"describe", (PyCFunction)(void (*)(void))core_describe, METH_FASTCALL,
     "describe(name) -> (module, name, description, ((param, type, mode, rank, unsigned), ...))"},
    {"list_functions", (PyCFunction)(void (*)(void))core_list_functions, METH_FASTCALL,
     "list_functions(server=None) -> sorted list of 'module/function' (LIST)"},
    {"set_timeouts", (PyCFunction)(void (*)(void))core_set_timeouts, METH_FASTCALL,
     "set_timeouts(connect, call): seconds, 0 for none"},
    {"reset", core_reset, METH_NOARGS, "closes connections, forgets descriptors and settings"},
    {"stats", core_stats, METH_NOARGS, "the client's counters"},
    {"error_name", (PyCFunction)(void (*)(void))core_error_name, METH_FASTCALL,
     "error_name(code) -> (name, description)"},
    {"_set_error_factory", core_set_error_factory, METH_O, "registers factory(code, message, kind)"},
    {"_data_put", (PyCFunction)(void (*)(void))core_data_put, METH_FASTCALL, data_put_doc},
    {"_data_new", (PyCFunction)(void (*)(void))core_data_new, METH_FASTCALL, data_new_doc},
    {"record", (PyCFunction)(void (*)(void))core_record, METH_FASTCALL, record_doc},
    {"transaction_begin", core_transaction_begin, METH_NOARGS, "grid_transaction_begin()"},
    {"transaction_end", core_transaction_end, METH_NOARGS, "grid_transaction_end(): runs the recorded calls"},
    {"transaction_abort", core_transaction_abort, METH_NOARGS, "grid_transaction_abort_np()"},
    {"transaction_active", core_transaction_active, METH_NOARGS,
     "whether this thread has a transaction open"},
    {"transaction_stats", core_transaction_stats, METH_NOARGS, "what the last transaction_end did"},
    {"submit", (PyCFunction)(void (*)(void))core_submit, METH_FASTCALL, submit_doc},
    {"fetch", (PyCFunction)(void (*)(void))core_fetch, METH_FASTCALL, fetch_doc},
    {"job_state", core_job_state, METH_O,
     "job_state(job) -> (function, state, code, submitted, finished, bytes_in, bytes_out)"},
    {"job_forget", core_job_forget, METH_O, "job_forget(job): deletes the job on its server"},
    {"_set_allocator", core_set_allocator, METH_O,
     "registers allocator(dtype, shape) for OUT arrays passed as None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef core_module = {
    PyModuleDef_HEAD_INIT,
    "gridrpc._core",
    "The C core of the gridrpc package (see gridrpc).",
    -1,
    core_methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__core(void);
PyMODINIT_FUNC PyInit__core(void) {
    if (PyType_Ready(&PendingType) < 0 || PyType_Ready(&DataType) < 0) return NULL;
    PyObject *m = PyModule_Create(&core_module);
    if (!m) return NULL;
    fn_cache = PyDict_New();
    if (!fn_cache) goto fail;
    Py_INCREF(&PendingType);
    if (PyModule_AddObject(m, "Pending", (PyObject *)&PendingType) < 0) {
        Py_DECREF(&PendingType);
        goto fail;
    }
    Py_INCREF(&DataType);
    if (PyModule_AddObject(m, "Data", (PyObject *)&DataType) < 0) {
        Py_DECREF(&DataType);
        goto fail;
    }
    if (PyModule_AddStringConstant(m, "library_version", gridrpc_version()) < 0) goto fail;
    env_snapshot();
#define ADD_CODE_(name, value, text)                                                                         \
    if (PyModule_AddIntConstant(m, "GRID_" #name, value) < 0) goto fail;
    GRID_ERROR_MAP(ADD_CODE_)
#undef ADD_CODE_
    if (PyModule_AddIntConstant(m, "KIND_GRID", KIND_GRID) < 0 ||
        PyModule_AddIntConstant(m, "KIND_TYPE", KIND_TYPE) < 0 ||
        PyModule_AddIntConstant(m, "KIND_VALUE", KIND_VALUE) < 0)
        goto fail;
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
