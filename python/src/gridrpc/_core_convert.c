/* _core_convert.c: a Python call's arguments converted for grid_call_argv_np (the
 * call state: numbers, strings, arrays through the buffer protocol, each checked
 * against the function's interface), and its results back as Python values. */
#include "_core.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

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
void cs_free_outputs(callstate *cs) {
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
void cs_release(callstate *cs) {
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
void cs_forget_fn(callstate *cs) {
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
PyObject *get_fn(PyObject *name, const char *cname) {
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
    SYNC_WITHOUT_GIL(rc = grid_describe_np(cname, f));
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

int is_integer_type(int t) {
    return t == GRID_TYPE_CHAR || t == GRID_TYPE_SHORT || t == GRID_TYPE_INT || t == GRID_TYPE_LONG ||
           t == GRID_TYPE_LONGLONG;
}

/* The characters of str or bytes O (UTF-8 for a str) and their count in *LEN; NULL
 * when O is neither (no error set) or has no UTF-8 form (error set). */
static const char *chars_of(PyObject *o, Py_ssize_t *len) {
    if (PyUnicode_Check(o)) return PyUnicode_AsUTF8AndSize(o, len);
    if (!PyBytes_Check(o)) return NULL;
    *len = PyBytes_GET_SIZE(o);
    return PyBytes_AS_STRING(o);
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
        if (!(s = chars_of(o, &len)))
            return PyErr_Occurred() ? -1
                                    : arg_error(KIND_TYPE, ARG_FMT ": expects a str or bytes, got %s",
                                                ARG_ARGS(cs, i), Py_TYPE(o)->tp_name);
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
char format_kind(const char *f) {
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
const char *buffer_dtype(const Py_buffer *vw, char *buf, size_t n) {
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
        if (!(s = chars_of(it, &len)))
            return PyErr_Occurred() ? -1
                                    : arg_error(KIND_TYPE, ARG_FMT ": element %zd is a %s, not a str",
                                                ARG_ARGS(cs, i), k, Py_TYPE(it)->tp_name);
        if ((size_t)len != strlen(s))
            return arg_error(KIND_VALUE, ARG_FMT ": element %zd contains a NUL character", ARG_ARGS(cs, i),
                             k);
        cs->strv[i][k] = (char *)s;
        if (cs->strv0[i]) cs->strv0[i][k] = (char *)s;
    }
    return 0;
}

/* Whether buffer VW holds the elements of parameter P (their kind and size). */
static int dtype_ok(const grid_param_np *p, const Py_buffer *vw) {
    char k = format_kind(vw->format);
    char want = p->type == GRID_TYPE_FLOAT || p->type == GRID_TYPE_DOUBLE        ? 'f'
                : p->type == GRID_TYPE_SCOMPLEX || p->type == GRID_TYPE_DCOMPLEX ? 'c'
                : p->is_unsigned                                                 ? 'u'
                                                                                 : 'i';
    return vw->itemsize == type_size(p->type) &&
           (k == want || (p->type == GRID_TYPE_CHAR && (k == 'i' || k == 'u' || k == 'S')));
}

/* IN array argument O for parameter I converted by the registered converter (a new
 * reference), or NULL with its error (ArgumentTypeError, ...) set. */
static PyObject *convert_in(callstate *cs, int i, PyObject *o) {
    PyObject *dt = PyUnicode_FromString(dtype_name(&cs->fn->params[i]));
    PyObject *where = PyUnicode_FromFormat(ARG_FMT, ARG_ARGS(cs, i));
    PyObject *r = NULL;
    if (dt && where)
        r = PyObject_CallFunctionObjArgs(converter, o, dt, where, cs->mode == CS_TXN ? Py_True : Py_False,
                                         NULL);
    Py_XDECREF(dt);
    Py_XDECREF(where);
    return r;
}

/* Why OUT or INOUT parameter P's argument is not converted, into BUF. */
static const char *written_back(const grid_param_np *p, const char *dt, const char *shp, char *buf,
                                size_t n) {
    snprintf(buf, n,
             "an %s array is written back in place, so it is not converted: pass a writable C-contiguous "
             "numpy array of dtype %s and shape %s (IN arrays are converted, INOUT/OUT are not)",
             mode_name(p->mode), dt, shp);
    return buf;
}

static int take_buffer(callstate *cs, int i, const Py_buffer *vw, const long long *dims, int rank,
                       long long count, const char *shp);

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
    Py_buffer *vw = &cs->view[i];
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (!writable && p->type != GRID_TYPE_CHAR && converter) {
        /* An IN array of the right dtype, C-contiguous, is taken as it is (no Python call);
         * anything else is converted as numpy would, or refused (_arrays.py). */
        if (PyObject_CheckBuffer(o) && PyObject_GetBuffer(o, vw, flags) == 0) {
            if (dtype_ok(p, vw)) {
                cs->has_view[i] = 1;
                return take_buffer(cs, i, vw, dims, rank, count, shp);
            }
            PyBuffer_Release(vw);
        }
        PyErr_Clear();
        if (!(o = convert_in(cs, i, o))) return -1;
        cs->keep[i] = o; /* the copy the call reads: released with the call */
    }
    /* What is left is taken as it is or refused: OUT and INOUT arrays (never converted),
     * char arrays, and what the converter returned. */
    char why[400];
    if (!PyObject_CheckBuffer(o)) {
        if (writable)
            return arg_error(KIND_TYPE, ARG_FMT ": got %s; %s", ARG_ARGS(cs, i), Py_TYPE(o)->tp_name,
                             written_back(p, dt, shp, why, sizeof why));
        return arg_error(KIND_TYPE,
                         ARG_FMT ": expects a C-contiguous numpy array of dtype %s and shape %s, got %s",
                         ARG_ARGS(cs, i), dt, shp, Py_TYPE(o)->tp_name);
    }
    if (PyObject_GetBuffer(o, vw, flags) < 0) {
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        PyObject *err = ev ? PyObject_Str(ev) : NULL;
        Py_XDECREF(et);
        Py_XDECREF(ev);
        Py_XDECREF(tb);
        if (!err) PyErr_Clear();
        int r = writable ? arg_error(KIND_VALUE, ARG_FMT ": %S; %s", ARG_ARGS(cs, i), err ? err : Py_None,
                                     written_back(p, dt, shp, why, sizeof why))
                         : arg_error(KIND_VALUE,
                                     ARG_FMT ": %S: pass a C-contiguous array of dtype %s and shape %s "
                                             "(numpy.ascontiguousarray makes one)",
                                     ARG_ARGS(cs, i), err ? err : Py_None, dt, shp);
        Py_XDECREF(err);
        return r;
    }
    cs->has_view[i] = 1;
    if (!dtype_ok(p, vw)) {
        char got[200];
        if (writable)
            return arg_error(KIND_TYPE, ARG_FMT ": expects dtype %s, got %s; %s", ARG_ARGS(cs, i), dt,
                             buffer_dtype(vw, got, sizeof got), written_back(p, dt, shp, why, sizeof why));
        return arg_error(KIND_TYPE, ARG_FMT ": expects dtype %s, got %s (convert with .astype(numpy.%s))",
                         ARG_ARGS(cs, i), dt, buffer_dtype(vw, got, sizeof got),
                         p->type == GRID_TYPE_CHAR ? (p->is_unsigned ? "uint8" : "int8") : dt);
    }
    return take_buffer(cs, i, vw, dims, rank, count, shp);
}

/* Checks the shape of buffer VW for array parameter I (COUNT elements, DIMS) and passes
 * its memory. */
static int take_buffer(callstate *cs, int i, const Py_buffer *vw, const long long *dims, int rank,
                       long long count, const char *shp) {
    const char *dt = dtype_name(&cs->fn->params[i]);
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
int prepare_mode(callstate *cs, PyObject *const *args, Py_ssize_t nargs, int mode) {
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

int prepare(callstate *cs, PyObject *const *args, Py_ssize_t nargs) {
    return prepare_mode(cs, args, nargs, CS_CALL);
}

PyObject *str_value(const char *s) {
    if (!s) Py_RETURN_NONE;
    return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "surrogateescape");
}

/* A list of the N strings of V (str_value each). */
PyObject *str_list(char *const *v, Py_ssize_t n) {
    PyObject *list = PyList_New(0);
    for (Py_ssize_t k = 0; list && k < n; k++) {
        PyObject *s = str_value(v[k]);
        if (!s || PyList_Append(list, s) < 0) Py_CLEAR(list);
        Py_XDECREF(s);
    }
    return list;
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

/* 0 when the library call through CS returned GRID_OK (its settings work: no reload
 * needed); else -1 with its error raised and, with FORGET, the function's cached
 * interface dropped. */
int sync_failed(callstate *cs, int rc, int forget) {
    if (rc == GRID_OK) {
        env_dirty = 0;
        return 0;
    }
    raise_grid(rc, grid_last_error());
    if (forget) cs_forget_fn(cs);
    return -1;
}

/* Ends a synchronous call (or fetch) through CS whose library call returned RC: its
 * results, or NULL with the error raised (sync_failed). CS is released either way. */
PyObject *sync_results(callstate *cs, int rc, int forget) {
    PyObject *res = sync_failed(cs, rc, forget) < 0 ? NULL : results(cs);
    cs_free_outputs(cs);
    cs_release(cs);
    return res;
}

/* The call's results, in parameter order: OUT and INOUT scalars and strings, OUT/INOUT
 * string arrays (as lists) and the OUT arrays passed as None (allocated here); None
 * when there are none, the one value, or a tuple. Arrays the caller passed are filled
 * in place and not returned. */
PyObject *results(callstate *cs) {
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
            it = str_list(cs->strv[i], cs->strn[i]);
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
