/* _core_calls.c: synchronous calls, asynchronous calls (Pending objects that keep a
 * call's state until it completes) and the waits on them. */
#include "_core.h"

#include <limits.h>
#include <structmember.h>

/* ------------------------------------------------------------------ sync call */

PyDoc_STRVAR(call_doc, "call(name, *args)\n--\n\n"
                       "Calls the remote function NAME with one argument per IDL parameter and returns its\n"
                       "OUT/INOUT scalars and strings and the OUT arrays passed as None (None, one value or\n"
                       "a tuple). OUT arrays passed are filled in place.");

/* Inside a transaction a call is recorded and its buffers are read at the end: only
 * record() keeps them alive that long. */
int refuse_in_transaction(const char *what) {
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
    interrupts_chain();
    SYNC_WITHOUT_GIL(rc = grid_call_argv_np(cs.cname, cs.n, cs.argv));
    if (interrupts_raise(rc) < 0) {
        cs_free_outputs(&cs);
        cs_release(&cs);
        return NULL;
    }
    return sync_results(&cs, rc, 1);
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
        WITHOUT_GIL(grid_cancel(id));
        WITHOUT_GIL(grid_wait(id));
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
    WITHOUT_GIL(id = grid_call_async_argv_np(cs->cname, cs->n, cs->argv));
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

PyTypeObject PendingType = {
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
PendingObject *wrap_pending(callstate *cs) {
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
int int_arg(PyObject *const *args, Py_ssize_t nargs, const char *fname, int *out) {
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

static PyObject *core_wait_any(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    int id = GRID_ID_NONE, rc;
    WITHOUT_GIL(rc = grid_wait_any(&id));
    return Py_BuildValue("(ii)", rc, id);
}

/* core_NAME(id): FUNC on the call id of a one-argument fastcall function, its int result
 * made a Python value by WRAP; without the GIL when NOGIL (FUNC may block). */
#define ID_FUNCTION(name, func, nogil, wrap)                                                                 \
    static PyObject *core_##name(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {                  \
        (void)self;                                                                                          \
        int id, rc;                                                                                          \
        if (int_arg(args, nargs, #name, &id) < 0) return NULL;                                               \
        if (nogil)                                                                                           \
            WITHOUT_GIL(rc = func(id));                                                                      \
        else                                                                                                 \
            rc = func(id);                                                                                   \
        return wrap(rc);                                                                                     \
    }
ID_FUNCTION(wait, grid_wait, 1, PyLong_FromLong)
ID_FUNCTION(probe, grid_probe, 0, PyLong_FromLong)
ID_FUNCTION(cancel, grid_cancel, 1, PyLong_FromLong)
ID_FUNCTION(call_error, grid_call_error_np, 0, PyLong_FromLong)
ID_FUNCTION(call_waited, grid_call_waited_np, 0, PyBool_FromLong)

PyMethodDef core_call_methods[] = {
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
    {NULL, NULL, 0, NULL},
};
