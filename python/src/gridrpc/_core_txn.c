/* _core_txn.c: transactions (calls recorded, then run together at the end) and
 * two-phase calls (submit now, fetch the results later, maybe from another process). */
#include "_core.h"

#include <string.h>

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
    SYNC_WITHOUT_GIL(rc = grid_call_argv_np(cs->cname, cs->n, cs->argv));
    if (rc != GRID_OK) {
        raise_grid(rc, grid_last_error());
        cs_forget_fn(cs);
        cs_release(cs);
        PyMem_Free(cs);
        return NULL;
    }
    return (PyObject *)wrap_pending(cs);
}

/* core_NAME(): None, or the error of the library's CALL raised. */
#define RC_FUNCTION(name, call)                                                                              \
    static PyObject *core_##name(PyObject *self, PyObject *unused) {                                         \
        (void)self;                                                                                          \
        (void)unused;                                                                                        \
        return none_or_raise(call);                                                                          \
    }
RC_FUNCTION(transaction_begin, grid_transaction_begin())
RC_FUNCTION(transaction_abort, grid_transaction_abort_np())

static PyObject *core_transaction_end(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    int rc;
    SYNC_WITHOUT_GIL(rc = grid_transaction_end()); /* the recorded calls run */
    if (rc == GRID_OK) env_dirty = 0;
    return none_or_raise(rc);
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
    SYNC_WITHOUT_GIL(rc = grid_submit_argv_np(job, sizeof job, cs.cname, cs.n, cs.argv));
    PyObject *res = sync_failed(&cs, rc, 1) < 0 ? NULL : PyUnicode_FromString(job);
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
    SYNC_WITHOUT_GIL(rc = grid_job_fetch_argv_np(job, wait, cs.n, cs.argv));
    return sync_results(&cs, rc, 0);
}

/* The job id ARG as a C string; NULL with a TypeError naming FNAME when it is not a str. */
static const char *job_arg(PyObject *arg, const char *fname) {
    const char *job = PyUnicode_Check(arg) ? PyUnicode_AsUTF8(arg) : NULL;
    if (!job && !PyErr_Occurred()) PyErr_Format(PyExc_TypeError, "%s(job): the job id is a str", fname);
    return job;
}

static PyObject *core_job_state(PyObject *self, PyObject *arg) {
    (void)self;
    const char *job = job_arg(arg, "job_state");
    if (!job) return NULL;
    grid_job_info_np info;
    int rc;
    WITHOUT_GIL(rc = grid_job_state_np(job, &info));
    if (rc != GRID_OK) {
        raise_grid(rc, grid_last_error());
        return NULL;
    }
    return Py_BuildValue("(siiddKK)", info.function, info.state, info.code, info.submitted, info.finished,
                         info.bytes_in, info.bytes_out);
}

static PyObject *core_job_forget(PyObject *self, PyObject *arg) {
    (void)self;
    const char *job = job_arg(arg, "forget");
    if (!job) return NULL;
    int rc;
    WITHOUT_GIL(rc = grid_job_forget_np(job));
    return none_or_raise(rc);
}

PyMethodDef core_txn_methods[] = {
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
    {NULL, NULL, 0, NULL},
};
