/* gsv_call.c: running one call on a worker thread: give it its share of the BLAS
 * threads, invoke the stub, send RESULT (or ERROR) on the caller's connection, log it,
 * and free everything the call owned so that nothing of it outlives the answer. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

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

/* The size of RESULT, for the log and the send deadline: exact for the header, the
 * numbers and the strings; a returned file counts as its length field only (the writer
 * does not count what it sends). */
static uint64_t result_bytes(const grm_call *c) {
    uint64_t n = GRW_HEADER_BYTES + 16 + 4;
    for (uint32_t i = 0; i < c->desc->nparams; i++) {
        const grd_param *p = &c->desc->params[i];
        if (!grm_travels(p, GRM_TO_CLIENT)) continue;
        if (p->type == GRD_STRING || p->type == GRD_FILENAME) {
            uint64_t elems = p->rank ? c->sl[i].ext.sent : 1;
            n += 8 * elems;
            if (p->rank == 0 && p->type == GRD_STRING && c->ptr[i] && *(char **)c->ptr[i])
                n += (strlen(*(char **)c->ptr[i]) + 3) & ~(uint64_t)3;
        } else if (p->rank == 0) {
            n += grd_type_size(p->type) > 4 ? grd_type_size(p->type) : 4;
        } else {
            n += (c->sl[i].ext.sent_bytes + 3) & ~(uint64_t)3;
        }
    }
    return n;
}

static int send_result(gsv_server *s, gsv_job *job, long long queue_ns, long long run_ns, uint64_t bytes,
                       gr_err *e) {
    gsv_conn *c = job->conn;
    int rc;
    pthread_mutex_lock(&c->wlock);
    if (c->broken) {
        rc = gr_seterr(e, GRID_ERR_CONN_LOST, "the connection was lost before the result could be sent");
    } else {
        grw_writer *w = &c->w;
        grw_writer_init(w, c->fd);
        w->deadline_ns = gsv_io_deadline(s, bytes);
        rc = grw_begin(w, GRW_RESULT, 0, job->request_id, e);
        if (!rc) rc = grw_write_u64(w, (uint64_t)queue_ns, e);
        if (!rc) rc = grw_write_u64(w, (uint64_t)run_ns, e);
        if (!rc) rc = grm_write_head(w, &job->call, GRM_TO_CLIENT, &s->opt.limits, e);
        if (!rc) rc = grm_write_bulk(w, &job->call, GRM_TO_CLIENT, e);
        if (!rc) rc = grw_finish(w, e);
        /* Part of the message may be on the wire already: the stream cannot be
         * resynchronised, so the connection ends (the client sees it lost). */
        if (rc) c->broken = 1;
    }
    pthread_mutex_unlock(&c->wlock);
    if (rc) gsv_conn_abort(c);
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
        w->deadline_ns = gsv_io_deadline(s, result_bytes(&job->call));
        int rc = grw_begin(w, GRW_RESULT, 0, job->request_id, &ce);
        if (!rc) rc = grw_write_u64(w, (uint64_t)queue_ns, &ce);
        if (!rc) rc = grw_write_u64(w, (uint64_t)rn, &ce);
        if (!rc) rc = grm_write_head(w, &job->call, GRM_TO_CLIENT, &s->opt.limits, &ce);
        if (!rc) rc = grm_write_bulk(w, &job->call, GRM_TO_CLIENT, &ce);
        if (!rc) rc = grw_finish(w, &ce);
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
                     rc ? 0 : result_bytes(&job->call), queue_ns, run_ns, rc, e.msg);
        gsv_job_free(job);
        return;
    }
    gsv_sched_invoking(s, job, 1);
    current_job = job;
    job->fn->stub->invoke(job->call.ptr);
    current_job = NULL;
    gsv_sched_invoking(s, job, 0);
    long long run_ns = gr_now_ns() - job->t_started;
    uint64_t bytes = result_bytes(&job->call);
    int rc = send_result(s, job, queue_ns, run_ns, bytes, &e);
    gsv_call_log(job->conn->peer, job->fn->qualified, job->request_id, job->bytes_in, rc ? 0 : bytes,
                 queue_ns, run_ns, rc, e.msg);
    gsv_job_free(job);
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
