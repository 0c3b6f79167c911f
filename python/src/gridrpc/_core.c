/* _core.c: the C extension behind the gridrpc Python package.
 *
 * It turns a Python call gridrpc.call(name, *args) into one grid_call_argv_np: the
 * function's interface (grid_describe_np, cached per name here) says how to convert
 * each argument: Python numbers and strings become the C scalars, arrays are taken
 * through the buffer protocol (numpy arrays, array.array, memoryview: C-contiguous,
 * the right element type and size, checked with grid_array_shape_np before anything is
 * sent), OUT scalars and strings come back as Python values, and an OUT array passed
 * as None is allocated (through the allocator the package registers: numpy.zeros) and
 * returned. An IN array that is not already such a buffer (a list, another dtype, a
 * Fortran-ordered view) is converted by the converter the package registers (numpy's
 * safe casting: _arrays.py); OUT and INOUT arrays never are. The GIL is released while the call is on the
 * network, so other Python threads run (and may call too: the C library is MT-safe).
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
 *
 * The extension is one C file per thing it serves (_core.h says what they share):
 * argument conversion and results (_core_convert.c), calls and Pending objects
 * (_core_calls.c), remote data handles (_core_data.c), transactions and two-phase calls
 * (_core_txn.c), errors and names (_core_errors.c), the library's settings
 * (_core_settings.c). This file holds the module: its global state, introspection and
 * its initialisation.
 */
#include "_core.h"

PyObject *error_factory;
PyObject *allocator;
PyObject *converter;
PyObject *fn_cache;
long sync_in_flight;
long async_open;

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
    SYNC_WITHOUT_GIL(rc = grid_list_functions_np(server, &names, &count));
    if (rc != GRID_OK) {
        const char *m = grid_last_error();
        if (rc == GRID_ERR_ARGS)
            raise_obj(rc, KIND_VALUE, PyUnicode_DecodeUTF8(m, (Py_ssize_t)strlen(m), "replace"));
        else
            raise_grid(rc, m);
        return NULL;
    }
    PyObject *list = str_list(names, count);
    grid_free_functions_np(names);
    return list;
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

static PyObject *core_set_converter(PyObject *self, PyObject *f) {
    (void)self;
    if (!PyCallable_Check(f)) {
        PyErr_SetString(PyExc_TypeError, "the converter must be callable");
        return NULL;
    }
    Py_INCREF(f);
    Py_XSETREF(converter, f);
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

/* The module's own functions; PyInit__core adds those of the other files. */
static PyMethodDef core_methods[] = {
    {"describe", (PyCFunction)(void (*)(void))core_describe, METH_FASTCALL,
     "describe(name) -> (module, name, description, ((param, type, mode, rank, unsigned), ...))"},
    {"list_functions", (PyCFunction)(void (*)(void))core_list_functions, METH_FASTCALL,
     "list_functions(server=None) -> sorted list of 'module/function' (LIST)"},
    {"stats", core_stats, METH_NOARGS, "the client's counters"},
    {"error_name", (PyCFunction)(void (*)(void))core_error_name, METH_FASTCALL,
     "error_name(code) -> (name, description)"},
    {"_set_error_factory", core_set_error_factory, METH_O, "registers factory(code, message, kind)"},
    {"_set_allocator", core_set_allocator, METH_O,
     "registers allocator(dtype, shape) for OUT arrays passed as None"},
    {"_set_converter", core_set_converter, METH_O,
     "registers converter(obj, dtype, where, recorded) for IN arrays not of their dtype and C-contiguous"},
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
    if (PyModule_AddFunctions(m, core_call_methods) < 0 || PyModule_AddFunctions(m, core_data_methods) < 0 ||
        PyModule_AddFunctions(m, core_txn_methods) < 0 || PyModule_AddFunctions(m, core_settings_methods) < 0)
        goto fail;
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
