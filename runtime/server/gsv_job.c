/* gsv_job.c: a job's life whatever its kind: made with its kind and connection, invoked
 * (cancelable by flag while it runs), freed once with everything it holds. What a job
 * does on top (reply, object, kept result, data handles, callbacks) is its kind's
 * (gsv.h, gsv_job_kind), never this file's. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "gsv.h"

gsv_job *gsv_job_new(const gsv_job_kind *kind, gsv_server *s, gsv_conn *c, const gsv_function *f,
                     uint64_t request_id) {
    /* Only the job's header is zeroed: grm_init prepares as many argument slots as the
     * function has, not the whole table (a null call stays cheap). */
    gsv_job *job = malloc(offsetof(gsv_job, call) + grm_call_size(f->desc->nparams));
    if (!job) return NULL;
    memset(job, 0, offsetof(gsv_job, call));
    job->kind = kind;
    job->srv = s;
    if (c) gsv_conn_ref(c);
    job->conn = c;
    job->fn = f;
    job->request_id = request_id;
    grm_init(&job->call, f->desc, GRM_SERVER_SIDE);
    return job;
}

void gsv_job_free(gsv_job *job) {
    if (!job) return;
    if (job->kind->release) job->kind->release(job);
    if (job->call.desc) grm_release(&job->call);
    if (job->held) gsv_limits_release(job->srv, job);
    if (job->conn) gsv_conn_unref(job->conn);
    free(job);
}

/* The job the current worker thread is invoking, for grpc_is_canceled_np. */
static __thread gsv_job *current_job;

void gsv_job_cancel(gsv_job *job) {
    long long none = 0;
    __atomic_compare_exchange_n(&job->canceled_ns, &none, gr_now_ns(), 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    atomic_store(&job->canceled, 1);
}

void gsv_job_invoke(gsv_server *s, gsv_job *job) {
    gsv_sched_invoking(s, job, 1);
    current_job = job;
    job->fn->stub->invoke(job->call.ptr);
    current_job = NULL;
    gsv_sched_invoking(s, job, 0);
}

/* In an executor process: the region's flag that the server raises on a CANCEL. */
static atomic_int *exec_canceled;

void gsv_job_cancel_flag(atomic_int *flag) {
    exec_canceled = flag;
}

/* Called by long-running functions (Ninf-G's cooperative cancel, grpc_executable.h):
 * 1 when the client canceled the call being run on this thread. Exported from gridrpcd
 * for the modules it loads. */
int grpc_is_canceled_np(int *error);
int grpc_is_canceled_np(int *error) {
    if (error) *error = 0;
    if (exec_canceled) return atomic_load(exec_canceled) ? 1 : 0;
    return current_job && atomic_load(&current_job->canceled) ? 1 : 0;
}
