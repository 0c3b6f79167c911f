/* _core_errors.c: the exceptions the gridrpc._core extension raises (through the
 * factory the package registers, so they are gridrpc.GridError subclasses) and the
 * names of IDL types and modes their messages use. */
#include "_core.h"

#include <string.h>

/* ------------------------------------------------------------------ errors */

/* Raises the exception the factory makes for CODE and MESSAGE (a Python str, stolen). */
void raise_obj(int code, int kind, PyObject *message) {
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
void raise_grid(int code, const char *msg) {
    env_dirty = 1;
    if (!msg || !*msg) msg = grid_error_string(code);
    raise_obj(code, KIND_GRID, PyUnicode_DecodeUTF8(msg, (Py_ssize_t)strlen(msg), "replace"));
}

/* None when the library's RC is GRID_OK; else its error raised (NULL). */
PyObject *none_or_raise(int rc) {
    if (rc != GRID_OK) {
        raise_grid(rc, grid_last_error());
        return NULL;
    }
    Py_RETURN_NONE;
}

/* Raises an argument error (GRID_ERR_ARGS) of KIND with a printf-style message
 * (PyUnicode_FromFormat's conversions). Returns -1. */
int arg_error(int kind, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    PyObject *msg = PyUnicode_FromFormatV(fmt, ap);
    va_end(ap);
    raise_obj(GRID_ERR_ARGS, kind, msg);
    return -1;
}

/* ------------------------------------------------------------------ names */

const char *type_name(int t) {
    static const char *const names[] = {"?",     "char",   "short",    "int",      "long",   "longlong",
                                        "float", "double", "scomplex", "dcomplex", "string", "filename"};
    return t >= 1 && t <= GRID_TYPE_FILENAME ? names[t] : "?";
}

const char *mode_name(int m) {
    static const char *const names[] = {"?", "IN", "OUT", "INOUT", "WORK"};
    return m >= 1 && m <= GRID_MODE_WORK ? names[m] : "?";
}

/* The numpy dtype that matches a parameter's element type (for messages). */
const char *dtype_name(const grid_param_np *p) {
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
Py_ssize_t type_size(int t) {
    return (Py_ssize_t)grid_type_size_np(t);
}

/* "(3, 4)" into BUF. */
const char *shape_str(const long long *dims, int rank, char *buf, size_t n) {
    size_t k = 0;
    buf[0] = '\0';
    k += (size_t)snprintf(buf + k, n - k, "(");
    for (int d = 0; d < rank && k < n; d++)
        k += (size_t)snprintf(buf + k, n - k, "%s%lld", d ? ", " : "", dims[d]);
    if (k < n) k += (size_t)snprintf(buf + k, n - k, rank == 1 ? ",)" : ")");
    return buf;
}
