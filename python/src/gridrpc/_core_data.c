/* _core_data.c: remote data handles (gridrpc._core.Data): arrays put on a server and
 * passed to calls in place of the array. */
#include "_core.h"

#include <structmember.h>
#include <string.h>

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
int data_arg(callstate *cs, int i, DataObject *d, long long count, const char *shp) {
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
    SYNC_WITHOUT_GIL(rc = grid_data_put_np(&h, where, gtype, (size_t)count, vw.buf));
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
    SYNC_WITHOUT_GIL(rc = grid_data_get_np(self->h, vw.buf, (size_t)self->count));
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
    WITHOUT_GIL(rc = grid_data_free_np(h));
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
        WITHOUT_GIL(grid_data_free_np(h));
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

PyTypeObject DataType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "gridrpc._core.Data",
    .tp_doc = "An array kept on a server (a remote data handle); see gridrpc.Data.",
    .tp_basicsize = sizeof(DataObject),
    .tp_dealloc = (destructor)data_dealloc,
    .tp_repr = (reprfunc)data_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_methods = data_methods,
    .tp_members = data_members,
    .tp_getset = data_getset,
};

PyMethodDef core_data_methods[] = {
    {"_data_put", (PyCFunction)(void (*)(void))core_data_put, METH_FASTCALL, data_put_doc},
    {"_data_new", (PyCFunction)(void (*)(void))core_data_new, METH_FASTCALL, data_new_doc},
    {NULL, NULL, 0, NULL},
};
