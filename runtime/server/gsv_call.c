/* gsv_call.c: running one call on a worker thread: give it its share of the BLAS
 * threads, invoke the stub, send RESULT (or ERROR) on the caller's connection, log it,
 * and free everything the call owned so that nothing of it outlives the answer. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "grp_proto.h"
#include "gsv.h"

/* One call alone gets every core for its BLAS (data parallel); N concurrent calls get
 * cores / N each (task parallel): the Ninf J90 lesson (DESIGN.md). */
static void share_blas_threads(gsv_server *s) {
    if (!s->blas_set_threads) return;
    unsigned running = gsv_sched_running(s);
    int n = (int)(running > 1 ? s->cores / running : s->cores);
    if (n < 1) n = 1;
    pthread_mutex_lock(&s->blas_lock);
    if (s->blas_threads != n) {
        s->blas_set_threads(n);
        s->blas_threads = n;
    }
    pthread_mutex_unlock(&s->blas_lock);
}

static int send_result(gsv_server *s, gsv_job *job, long long queue_ns, long long run_ns, uint64_t bytes,
                       gr_err *e) {
    grw_writer *w = gsv_reply_lock(job->conn, bytes);
    if (!w)
        return gr_seterr(e, GRID_ERR_CONN_LOST, "the connection was lost before the result could be sent");
    grp_result_times t = {(uint64_t)queue_ns, (uint64_t)run_ns};
    int rc = grp_write_result(w, job->request_id, &t, &job->call, &s->opt.limits, e);
    gsv_reply_unlock(job->conn, rc, e);
    return rc;
}

/* The job the current worker thread is invoking, for grpc_is_canceled_np. */
static __thread gsv_job *current_job;

/* Called by long-running functions (Ninf-G's cooperative cancel, grpc_executable.h):
 * 1 when the client canceled the call being run on this thread. Exported from gridrpcd
 * for the modules it loads. */
int grpc_is_canceled_np(int *error);
int grpc_is_canceled_np(int *error) {
    if (error) *error = 0;
    return current_job && atomic_load(&current_job->canceled) ? 1 : 0;
}

/* Runs JOB in a child process that answers the client itself, so a function that
 * crashes or calls exit() takes down only that child. The connection's write lock is
 * held until the child is gone, so no other reply interleaves with its RESULT. A pipe
 * tells the parent whether the child began writing: if it died before, the parent can
 * still answer ERROR cleanly; if it died while writing, the stream is lost and the
 * connection ends. Returns GRID_OK or the error already reported to the client. */
static int run_isolated(gsv_server *s, gsv_job *job, long long queue_ns, long long *run_ns, gr_err *e) {
    gsv_conn *c = job->conn;
    int started[2];
    if (pipe(started) != 0)
        return gr_seterr(e, GRID_ERR_BUSY, "the server cannot isolate the call: %s", strerror(errno));
    pthread_mutex_lock(&c->wlock);
    long long t0 = gr_now_ns();
    pid_t pid = c->broken ? -1 : fork();
    if (pid == 0) {
        close(started[0]);
        job->fn->stub->invoke(job->call.ptr);
        long long rn = gr_now_ns() - t0;
        char one = 1;
        if (write(started[1], &one, 1) != 1) _exit(3);
        grw_writer *w = &c->w;
        gr_err ce;
        grw_writer_init(w, c->fd);
        w->deadline_ns = gsv_io_deadline(s, grp_result_bytes(&job->call));
        grp_result_times t = {(uint64_t)queue_ns, (uint64_t)rn};
        int rc = grp_write_result(w, job->request_id, &t, &job->call, &s->opt.limits, &ce);
        _exit(rc ? 2 : 0);
    }
    close(started[1]);
    int rc = GRID_OK, status = 0;
    if (pid < 0) {
        rc = gr_seterr(e, c->broken ? GRID_ERR_CONN_LOST : GRID_ERR_BUSY,
                       c->broken ? "the connection was lost before the call ran"
                                 : "the server cannot start a process for the call: retry later");
    } else {
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        char b;
        int began = read(started[0], &b, 1) == 1;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            char why[64];
            if (WIFSIGNALED(status))
                snprintf(why, sizeof why, "crashed (signal %d, %s)", WTERMSIG(status),
                         strsignal(WTERMSIG(status)));
            else
                snprintf(why, sizeof why, "exited with status %d", WEXITSTATUS(status));
            rc = gr_seterr(e, began ? GRID_ERR_CONN_LOST : GRID_ERR_FAILED, "%s %s%s", job->fn->qualified,
                           why, began ? " while sending its result" : ": the server is still up");
            if (began) c->broken = 1;
        }
    }
    close(started[0]);
    *run_ns = gr_now_ns() - t0;
    pthread_mutex_unlock(&c->wlock);
    if (rc == GRID_ERR_CONN_LOST)
        gsv_conn_abort(c);
    else if (rc)
        gsv_conn_send_error(c, job->request_id, rc, e->msg);
    return rc;
}

void gsv_call_run(gsv_server *s, gsv_job *job) {
    gr_err e;
    gr_clearerr(&e);
    job->t_started = gr_now_ns();
    long long queue_ns = job->t_started - job->t_queued;
    share_blas_threads(s);
    if (s->opt.isolate) {
        long long run_ns = 0;
        int rc = run_isolated(s, job, queue_ns, &run_ns, &e);
        gsv_call_log(job->conn->peer, job->fn->qualified, job->request_id, job->bytes_in,
                     rc ? 0 : grp_result_bytes(&job->call), queue_ns, run_ns, rc, e.msg);
        if (!rc) gsv_work_learn(s, job, run_ns);
        gsv_job_free(job);
        atomic_fetch_add(&s->calls_done, 1);
        return;
    }
    gsv_sched_invoking(s, job, 1);
    current_job = job;
    job->fn->stub->invoke(job->call.ptr);
    current_job = NULL;
    gsv_sched_invoking(s, job, 0);
    long long run_ns = gr_now_ns() - job->t_started;
    gsv_work_learn(s, job, run_ns);
    uint64_t bytes = grp_result_bytes(&job->call);
    /* A failed callback fails the call (gsv_callback.c). */
    int rc = gsv_callback_failed(job, &e);
    if (rc)
        gsv_conn_send_error(job->conn, job->request_id, rc, e.msg);
    else
        rc = send_result(s, job, queue_ns, run_ns, bytes, &e);
    gsv_call_log(job->conn->peer, job->fn->qualified, job->request_id, job->bytes_in, rc ? 0 : bytes,
                 queue_ns, run_ns, rc, e.msg);
    gsv_job_free(job);
    /* Counted once its answer was sent (or could not be): the metaserver compares it
     * with what it assigned to learn how many calls finished here. */
    atomic_fetch_add(&s->calls_done, 1);
}

void gsv_call_fail(gsv_server *s, gsv_job *job, int code, const char *msg) {
    (void)s;
    long long queue_ns = gr_now_ns() - job->t_queued;
    gsv_conn_send_error(job->conn, job->request_id, code, msg);
    gsv_call_log(job->conn->peer, job->fn->qualified, job->request_id, job->bytes_in, 0, queue_ns, 0, code,
                 msg);
    gsv_job_free(job);
}

void gsv_job_free(gsv_job *job) {
    if (!job) return;
    gsv_callback_detach(job);
    if (job->call.desc) grm_release(&job->call);
    if (job->conn) gsv_conn_unref(job->conn);
    free(job);
}

void gsv_call_log(const char *peer, const char *function, uint64_t request_id, uint64_t bytes_in,
                  uint64_t bytes_out, long long queue_ns, long long run_ns, int code, const char *msg) {
    int level = code == GRID_OK ? GSV_LOG_INFO : GSV_LOG_WARN;
    if (!gsv_log_enabled(level)) return;
    char result[1200];
    if (code == GRID_OK)
        snprintf(result, sizeof result, "ok");
    else
        snprintf(result, sizeof result, "%s: %s", grid_error_name(code),
                 msg && *msg ? msg : grid_error_string(code));
    gsv_log(level, "call %s %s id=%llu in=%llu out=%llu queue=%.3fms run=%.3fms %s", peer, function,
            (unsigned long long)request_id, (unsigned long long)bytes_in, (unsigned long long)bytes_out,
            (double)queue_ns / 1e6, (double)run_ns / 1e6, result);
}
