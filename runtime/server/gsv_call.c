/* gsv_call.c: the call runner. Any job taken off the queue runs as its kind says
 * (gsv_call_run); a function call answered on its connection runs here: give it its
 * share of the BLAS threads, invoke the stub (in an executor process when
 * gsv_exec_runs says so), send RESULT (or ERROR) on the caller's connection,
 * log it, and free everything the call owned so that nothing of it outlives the
 * answer. A result that may keep the worker waiting on a slow reader goes out from a
 * sender thread of its own instead. What a kind adds on top comes through its
 * operations (gsv_job_kind): no feature of the server is named here. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "grp_proto.h"
#include "gsv.h"

/* One call alone gets every core for its BLAS (data parallel); N concurrent calls get
 * cores / N each (task parallel): the Ninf J90 lesson (DESIGN.md). Returns the share;
 * sets it in this process unless the call runs elsewhere (IN_EXECUTOR: the executor
 * sets its own). */
static int share_blas_threads(gsv_server *s, int in_executor) {
    unsigned running = gsv_sched_running(s);
    int n = (int)(running > 1 ? s->cores / running : s->cores);
    /* --blas-threads: the study's fixed configurations (one PE per call, or all). */
    if (s->opt.blas_threads) n = (int)s->opt.blas_threads;
    if (n < 1) n = 1;
    if (in_executor || !s->blas_set_threads) return n;
    pthread_mutex_lock(&s->blas_lock);
    if (s->blas_threads != n) {
        s->blas_set_threads(n);
        s->blas_threads = n;
    }
    pthread_mutex_unlock(&s->blas_lock);
    return n;
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

/* ---------------------------------------------------------------- sender threads */

/* A result this large is sent by a thread of its own, and so is any result whose
 * connection is busy sending another: a client that reads slowly, or not at all until
 * the write deadline drops it, then holds no worker, and the others are served. A
 * smaller result on a free connection fits in the socket buffers and is written at
 * once, on the worker (tests/faults/slow-reader.sh). */
#define GSV_HANDOFF_BYTES (1u << 20)
/* How long a worker waits for its connection's write lock before it hands off. */
#define GSV_HANDOFF_WAIT_NS 20000000L
/* At most this many sender threads at once; beyond, the worker sends (and may wait). */
#define GSV_MAX_SENDERS 512u

/* The end of one call, done by a sender thread or by the worker itself. */
typedef struct sender {
    void (*end)(struct sender *);
    gsv_server *s;
    gsv_job *job;
    long long queue_ns, run_ns;
    uint64_t bytes;
} sender;

static pthread_mutex_t senders_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t senders_done = PTHREAD_COND_INITIALIZER;
static unsigned senders; /* under senders_lock */

/* Sends JOB's RESULT, logs the call and frees it: the end of every call that ran well. */
static void finish_call(gsv_server *s, gsv_job *job, long long queue_ns, long long run_ns, uint64_t bytes) {
    gr_err e;
    gr_clearerr(&e);
    int rc = send_result(s, job, queue_ns, run_ns, bytes, &e);
    gsv_call_log_at(job->conn->peer, job->fn->qualified, job->request_id, job->bytes_in, rc ? 0 : bytes,
                    queue_ns, run_ns, job->t_queued, rc, e.msg);
    gsv_job_free(job);
    /* Counted once its answer was sent (or could not be): the metaserver compares it
     * with what it assigned to learn how many calls finished here. */
    atomic_fetch_add(&s->calls_done, 1);
}

/* Counts a sender thread in (0 when there are too many already) or out. */
static int senders_take(void) {
    pthread_mutex_lock(&senders_lock);
    int room = senders < GSV_MAX_SENDERS;
    if (room) senders++;
    pthread_mutex_unlock(&senders_lock);
    return room;
}

static void senders_drop(void) {
    pthread_mutex_lock(&senders_lock);
    if (--senders == 0) pthread_cond_broadcast(&senders_done);
    pthread_mutex_unlock(&senders_lock);
}

static void *sender_main(void *arg) {
    sender *a = arg;
    a->end(a);
    free(a);
    senders_drop();
    return NULL;
}

/* Starts a sender thread that ends the call as A says (a copy of A); 0 when it did not
 * (shutting down, too many senders, or no thread to be had): the caller ends it. */
static int spawn_sender(gsv_server *s, const sender *a) {
    if (atomic_load(&s->stopping) || !senders_take()) return 0;
    sender *copy = malloc(sizeof *copy);
    pthread_attr_t at;
    pthread_t t;
    int ok = copy && pthread_attr_init(&at) == 0;
    if (ok) {
        *copy = *a;
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        ok = pthread_create(&t, &at, sender_main, copy) == 0;
        pthread_attr_destroy(&at);
    }
    if (ok) return 1;
    free(copy);
    senders_drop();
    return 0;
}

static void finish_plain(sender *a) {
    finish_call(a->s, a->job, a->queue_ns, a->run_ns, a->bytes);
}

/* 1 when another thread has held C's write lock for a while (a reply going out to a
 * slow reader); a reply of a fast one ends within the wait, and the worker then sends
 * its own without the cost of a thread. */
static int conn_busy(gsv_conn *c) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += GSV_HANDOFF_WAIT_NS;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    if (pthread_mutex_timedlock(&c->wlock, &ts) != 0) return 1;
    pthread_mutex_unlock(&c->wlock);
    return 0;
}

/* Hands JOB's result to a sender thread when it may keep the worker waiting; 0 when it
 * did not (small result, free connection, shutting down, too many senders, or no
 * thread to be had): the worker sends it. */
static int hand_off(gsv_server *s, gsv_job *job, long long queue_ns, long long run_ns, uint64_t bytes) {
    if (bytes < GSV_HANDOFF_BYTES && !conn_busy(job->conn)) return 0;
    sender a = {
        .end = finish_plain, .s = s, .job = job, .queue_ns = queue_ns, .run_ns = run_ns, .bytes = bytes};
    return spawn_sender(s, &a);
}

unsigned gsv_call_wait_senders(long long deadline_ns) {
    pthread_mutex_lock(&senders_lock);
    while (senders > 0 && gr_cond_wait_until(&senders_done, &senders_lock, deadline_ns) == 0) {
    }
    unsigned n = senders;
    pthread_mutex_unlock(&senders_lock);
    return n;
}

void gsv_call_run(gsv_server *s, gsv_job *job) {
    job->kind->run(s, job);
}

void gsv_call_fail(gsv_server *s, gsv_job *job, int code, const char *msg) {
    job->kind->fail(s, job, code, msg);
}

int gsv_call_invoke(gsv_server *s, gsv_job *job, gr_err *e) {
    int in_executor = gsv_exec_runs(s, job);
    int blas = share_blas_threads(s, in_executor);
    if (!in_executor) {
        gsv_job_invoke(s, job);
        return GRID_OK;
    }
    /* Flagged by a CANCEL like an in-process call: the executor's worker ends it. */
    gsv_sched_invoking(s, job, 1);
    int rc = gsv_exec_call(s, job, blas, e);
    gsv_sched_invoking(s, job, 0);
    /* The metaserver holds back a function that crashes on several servers. */
    if (rc == GRID_ERR_CRASHED) gsv_meta_crashed(s, job->fn->qualified, e->msg);
    return rc;
}

void gsv_call_answer(gsv_server *s, gsv_job *job) {
    gr_err e;
    gr_clearerr(&e);
    job->t_started = gr_now_ns();
    long long queue_ns = job->t_started - job->t_queued;
    int rc = gsv_call_invoke(s, job, &e);
    long long run_ns = gr_now_ns() - job->t_started;
    uint64_t bytes = grp_result_bytes(&job->call);
    if (!rc) {
        gsv_work_learn(s, job, run_ns);
        /* The kind's own step after the function may still fail the call: before RESULT. */
        if (job->kind->ran) rc = job->kind->ran(job, &e);
    }
    if (!rc) {
        if (!hand_off(s, job, queue_ns, run_ns, bytes)) finish_call(s, job, queue_ns, run_ns, bytes);
        return;
    }
    gsv_conn_send_error(job->conn, job->request_id, rc, e.msg);
    gsv_call_log_at(job->conn->peer, job->fn->qualified, job->request_id, job->bytes_in, 0, queue_ns, run_ns,
                    job->t_queued, rc, e.msg);
    gsv_job_free(job);
    atomic_fetch_add(&s->calls_done, 1);
}

void gsv_call_refuse(gsv_server *s, gsv_job *job, int code, const char *msg) {
    (void)s;
    long long queue_ns = gr_now_ns() - job->t_queued;
    gsv_conn_send_error(job->conn, job->request_id, code, msg);
    gsv_call_log(job->conn->peer, job->fn->qualified, job->request_id, job->bytes_in, 0, queue_ns, 0, code,
                 msg);
    gsv_job_free(job);
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
