/* gsv_call.c: running one call on a worker thread: give it its share of the BLAS
 * threads, invoke the stub, send RESULT (or ERROR) on the caller's connection, log it,
 * and free everything the call owned so that nothing of it outlives the answer. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
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
    /* --blas-threads: the study's fixed configurations (one PE per call, or all). */
    if (s->opt.blas_threads) n = (int)s->opt.blas_threads;
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
void gsv_call_current(gsv_job *job) {
    current_job = job;
}

int grpc_is_canceled_np(int *error);
int grpc_is_canceled_np(int *error) {
    if (error) *error = 0;
    return current_job && atomic_load(&current_job->canceled) ? 1 : 0;
}

/* Forks are serialised with the making of each call's channel, so that a child only
 * ever holds its own end: another call's child holding a copy would keep that call's
 * parent from seeing its child die. */
static pthread_mutex_t fork_lock = PTHREAD_MUTEX_INITIALIZER;

/* The isolated call's child: invokes the function, says so on CH, waits for the parent's
 * go-ahead (the connection's write lock is then held for it) and sends RESULT itself,
 * from its own memory: the outputs are never copied through the parent. */
static _Noreturn void isolated_child(gsv_server *s, gsv_job *job, int ch, pid_t parent, long long t0,
                                     long long queue_ns) {
    /* An orphan would compute for nobody: it ends with the server. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(5);
    job->fn->stub->invoke(job->call.ptr);
    long long rn = gr_now_ns() - t0;
    char b = 1;
    if (send(ch, &b, 1, MSG_NOSIGNAL) != 1) _exit(3);
    ssize_t k;
    while ((k = read(ch, &b, 1)) < 0 && errno == EINTR) {
    }
    if (k != 1 || b != 'g') _exit(4); /* declined: canceled, or the connection is gone */
    gsv_conn *c = job->conn;
    grw_writer *w = &c->w;
    gr_err ce;
    grw_writer_init(w, c->fd);
    w->deadline_ns = gsv_io_deadline(s, grp_result_bytes(&job->call));
    grp_result_times t = {(uint64_t)queue_ns, (uint64_t)rn};
    int rc = grp_write_result(w, job->request_id, &t, &job->call, &s->opt.limits, &ce);
    _exit(rc ? 2 : 0);
}

/* Runs JOB in a child process, so a function that crashes or calls exit() takes down
 * only that child. The connection stays free while the child computes, so the other
 * calls of the connection run and answer meanwhile: the child reports on a socketpair
 * when the function returned; the parent then takes the connection's write lock, lets
 * the child send its RESULT, and holds the lock until the child is gone, so no other
 * reply interleaves with it. Until that go-ahead a CANCEL kills the child and the call
 * is answered CANCELED; a child that died on its own before it is answered ERROR
 * cleanly; one that died while writing lost the stream, and the connection ends.
 * Returns GRID_OK or the error already reported to the client. */
static int run_isolated(gsv_server *s, gsv_job *job, long long queue_ns, long long *run_ns, gr_err *e) {
    gsv_conn *c = job->conn;
    int ch[2] = {-1, -1};
    long long t0 = gr_now_ns();
    gsv_sched_invoking(s, job, 1);
    pthread_mutex_lock(&fork_lock);
    pid_t parent = getpid(), pid = -1;
    int fork_errno = 0;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ch) != 0) {
        fork_errno = errno;
    } else {
        pid = fork();
        if (pid == 0) {
            close(ch[0]);
            isolated_child(s, job, ch[1], parent, t0, queue_ns);
        }
        if (pid < 0) fork_errno = errno;
        close(ch[1]);
    }
    pthread_mutex_unlock(&fork_lock);

    int rc = GRID_OK, status = 0, began = 0, killed = 0;
    if (pid < 0) {
        gsv_sched_invoking(s, job, 0);
        rc = gr_seterr(e, GRID_ERR_BUSY, "the server cannot start a process for the call (%s): retry later",
                       strerror(fork_errno));
    } else {
        gsv_sched_child(s, job, pid);
        char b;
        ssize_t k;
        while ((k = read(ch[0], &b, 1)) < 0 && errno == EINTR) {
        }
        /* From here on no CANCEL signals the child, which is reaped below. */
        killed = gsv_sched_child(s, job, 0);
        gsv_sched_invoking(s, job, 0);
        if (k == 1 && !killed) {
            pthread_mutex_lock(&c->wlock);
            began = !c->broken && send(ch[0], "g", 1, MSG_NOSIGNAL) == 1;
            if (!began) pthread_mutex_unlock(&c->wlock);
        }
        /* Declined (canceled, or the connection is gone): the child exits unheard. A
         * child that is gone already cannot be told, which changes nothing. */
        if (!began && k == 1 && send(ch[0], "n", 1, MSG_NOSIGNAL) != 1)
            gsv_log(GSV_LOG_DEBUG, "%s: the child of call %llu was gone before its answer was declined",
                    c->peer, (unsigned long long)job->request_id);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        if (began) {
            if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) c->broken = 1;
            pthread_mutex_unlock(&c->wlock);
        }
        if (killed) {
            rc = gr_seterr(e, GRID_ERR_CANCELED, "the call was canceled while it ran: its process was ended");
        } else if (k == 1 && !began) {
            rc = gr_seterr(e, GRID_ERR_CONN_LOST, "the connection was lost before the result could be sent");
        } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            char why[64];
            if (WIFSIGNALED(status))
                snprintf(why, sizeof why, "crashed (signal %d, %s)", WTERMSIG(status),
                         strsignal(WTERMSIG(status)));
            else
                snprintf(why, sizeof why, "exited with status %d", WEXITSTATUS(status));
            rc = gr_seterr(e, began ? GRID_ERR_CONN_LOST : GRID_ERR_FAILED, "%s %s%s", job->fn->qualified,
                           why, began ? " while sending its result" : ": the server is still up");
        }
    }
    if (ch[0] >= 0) close(ch[0]);
    *run_ns = gr_now_ns() - t0;
    if (rc == GRID_ERR_CONN_LOST)
        gsv_conn_abort(c);
    else if (rc)
        gsv_conn_send_error(c, job->request_id, rc, e->msg);
    return rc;
}

void gsv_call_run(gsv_server *s, gsv_job *job) {
    if (job->kept) {
        gsv_jobs_run(s, job); /* a submitted job: no connection (gsv_jobs.c) */
        return;
    }
    if (job->obj) {
        gsv_object_run(s, job); /* a method of a remote object: gsv_object.c */
        return;
    }
    gr_err e;
    gr_clearerr(&e);
    job->t_started = gr_now_ns();
    long long queue_ns = job->t_started - job->t_queued;
    share_blas_threads(s);
    if (s->opt.isolate) {
        long long run_ns = 0;
        int rc = run_isolated(s, job, queue_ns, &run_ns, &e);
        gsv_call_log_at(job->conn->peer, job->fn->qualified, job->request_id, job->bytes_in,
                        rc ? 0 : grp_result_bytes(&job->call), queue_ns, run_ns, job->t_queued, rc, e.msg);
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
    if (rc) {
        gsv_conn_send_error(job->conn, job->request_id, rc, e.msg);
    } else {
        gsv_data_call_done(job); /* CALL_DATA's KEEP outputs become handles first */
        rc = send_result(s, job, queue_ns, run_ns, bytes, &e);
    }
    gsv_call_log_at(job->conn->peer, job->fn->qualified, job->request_id, job->bytes_in, rc ? 0 : bytes,
                    queue_ns, run_ns, job->t_queued, rc, e.msg);
    gsv_job_free(job);
    /* Counted once its answer was sent (or could not be): the metaserver compares it
     * with what it assigned to learn how many calls finished here. */
    atomic_fetch_add(&s->calls_done, 1);
}

void gsv_call_fail(gsv_server *s, gsv_job *job, int code, const char *msg) {
    if (job->kept) {
        gsv_jobs_fail(s, job, code, msg);
        return;
    }
    long long queue_ns = gr_now_ns() - job->t_queued;
    gsv_conn_send_error(job->conn, job->request_id, code, msg);
    gsv_call_log(job->conn->peer, job->fn->qualified, job->request_id, job->bytes_in, 0, queue_ns, 0, code,
                 msg);
    gsv_job_free(job);
}

void gsv_job_free(gsv_job *job) {
    if (!job) return;
    gsv_callback_detach(job);
    if (job->obj) gsv_object_job_done(job);
    if (job->call.desc) grm_release(&job->call);
    gsv_data_call_release(job);
    if (job->held) gsv_limits_release(job->conn ? job->conn->srv : gsv_jobs_server(), job);
    if (job->conn) gsv_conn_unref(job->conn);
    free(job);
}

void gsv_call_log(const char *peer, const char *function, uint64_t request_id, uint64_t bytes_in,
                  uint64_t bytes_out, long long queue_ns, long long run_ns, int code, const char *msg) {
    gsv_call_log_at(peer, function, request_id, bytes_in, bytes_out, queue_ns, run_ns, 0, code, msg);
}

void gsv_call_log_at(const char *peer, const char *function, uint64_t request_id, uint64_t bytes_in,
                     uint64_t bytes_out, long long queue_ns, long long run_ns, long long t_queued, int code,
                     const char *msg) {
    int level = code == GRID_OK ? GSV_LOG_INFO : GSV_LOG_WARN;
    if (!gsv_log_enabled(level)) return;
    char result[1200];
    if (code == GRID_OK)
        snprintf(result, sizeof result, "ok");
    else
        snprintf(result, sizeof result, "%s: %s", grid_error_name(code),
                 msg && *msg ? msg : grid_error_string(code));
    /* at=: when the call was queued, in ns of the server's CLOCK_MONOTONIC (0: unknown).
     * Exact to the ns, unlike the line's own millisecond wall-clock time. */
    char at[40] = "";
    if (t_queued > 0) snprintf(at, sizeof at, " at=%lld", t_queued);
    gsv_log(level, "call %s %s id=%llu in=%llu out=%llu%s queue=%.3fms run=%.3fms %s", peer, function,
            (unsigned long long)request_id, (unsigned long long)bytes_in, (unsigned long long)bytes_out, at,
            (double)queue_ns / 1e6, (double)run_ns / 1e6, result);
}
