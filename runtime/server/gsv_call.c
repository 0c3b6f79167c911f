/* gsv_call.c: the call runner. Any job taken off the queue runs as its kind says
 * (gsv_call_run); a function call answered on its connection runs here: give it its
 * share of the BLAS threads, invoke the stub (in a child process under --isolate when
 * its kind may leave the daemon), send RESULT (or ERROR) on the caller's connection,
 * log it, and free everything the call owned so that nothing of it outlives the
 * answer. A result that may keep the worker waiting on a slow reader goes out from a
 * sender thread of its own instead. What a kind adds on top comes through its
 * operations (gsv_job_kind): no feature of the server is named here. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
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
    /* an isolated call (run_isolated): the child that sends its result, the channel to
     * it, what the child said (1: its function returned), whether a CANCEL killed it */
    pid_t pid;
    int ch, killed;
    ssize_t k;
    long long t0;
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

/* Forks are serialised with the making of each call's channel, so that a child only
 * ever holds its own end: another call's child holding a copy would keep that call's
 * parent from seeing its child die. */
static pthread_mutex_t fork_lock = PTHREAD_MUTEX_INITIALIZER;

/* The isolated call's child: invokes the function, says so on CH, waits for the parent's
 * go-ahead (the connection's write lock is then held for it) and sends RESULT itself,
 * from its own memory: the outputs are never copied through the parent. On a TLS
 * connection the child cannot write into the parent's session (its record counters
 * would part from the parent's): it writes RESULT on CH and the parent relays it. */
/* A function that calls exit() in the child ends it here, with its status: the handlers
 * registered before (the server's, a sanitizer's leak check) and stdio's buffers copied
 * from the server are the server's, and a lock another server thread held at fork()
 * would hang them. */
static void child_exit(int status, void *arg) {
    (void)arg;
    _exit(status);
}

static _Noreturn void isolated_child(gsv_server *s, gsv_job *job, int ch, pid_t parent, long long t0,
                                     long long queue_ns) {
    /* An orphan would compute for nobody: it ends with the server. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(5);
    on_exit(child_exit, NULL);
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
    grw_writer_init(w, c->tls ? ch : c->fd);
    w->deadline_ns = gsv_io_deadline(s, grp_result_bytes(&job->call));
    grp_result_times t = {(uint64_t)queue_ns, (uint64_t)rn};
    int rc = grp_write_result(w, job->request_id, &t, &job->call, &s->opt.limits, &ce);
    _exit(rc ? 2 : 0);
}

/* A TLS connection's isolated call: copies the RESULT its child writes on CH (until the
 * child closes it) into the connection's session; the write lock is held. */
static int relay_result(gsv_server *s, gsv_conn *c, gsv_job *job, int ch) {
    grw_writer *w = &c->w;
    grw_writer_init(w, c->fd);
    w->tls = c->tls;
    w->deadline_ns = gsv_io_deadline(s, grp_result_bytes(&job->call));
    uint8_t *buf = malloc(65536);
    if (!buf) return GRID_ERR_NOMEM;
    gr_err e;
    int rc = GRID_OK;
    for (;;) {
        ssize_t n = read(ch, buf, 65536);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break; /* the child is done (or gone: waitpid tells) */
        rc = grw_write_raw(w, buf, (size_t)n, &e);
        if (rc) {
            gsv_log(GSV_LOG_DEBUG, "%s: cannot relay the result of call %llu: %s", c->peer,
                    (unsigned long long)job->request_id, e.msg);
            break;
        }
    }
    free(buf);
    return rc;
}

/* The end of an isolated call once its function returned or its child is gone: the
 * go-ahead under the connection's write lock (the child sends its RESULT), the child
 * reaped, the lock released, any error answered, the call logged and freed. */
static void isolated_end(sender *a) {
    gsv_server *s = a->s;
    gsv_job *job = a->job;
    gsv_conn *c = job->conn;
    gr_err e;
    gr_clearerr(&e);
    int rc = GRID_OK, status = 0, began = 0;
    if (a->k == 1 && !a->killed) {
        pthread_mutex_lock(&c->wlock);
        began = !c->broken && send(a->ch, "g", 1, MSG_NOSIGNAL) == 1;
        if (!began) pthread_mutex_unlock(&c->wlock);
    }
    if (began && c->tls && relay_result(s, c, job, a->ch) != GRID_OK) {
        kill(a->pid, SIGKILL); /* the stream is broken: the rest has nowhere to go */
        c->broken = 1;
    }
    /* Declined (canceled, or the connection is gone): the child exits unheard. A child
     * that is gone already cannot be told, which changes nothing. */
    if (!began && a->k == 1 && send(a->ch, "n", 1, MSG_NOSIGNAL) != 1)
        gsv_log(GSV_LOG_DEBUG, "%s: the child of call %llu was gone before its answer was declined", c->peer,
                (unsigned long long)job->request_id);
    while (waitpid(a->pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (began) {
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) c->broken = 1;
        pthread_mutex_unlock(&c->wlock);
    }
    if (a->killed) {
        rc = gr_seterr(&e, GRID_ERR_CANCELED, "the call was canceled while it ran: its process was ended");
    } else if (a->k == 1 && !began) {
        rc = gr_seterr(&e, GRID_ERR_CONN_LOST, "the connection was lost before the result could be sent");
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        char why[64];
        if (WIFSIGNALED(status))
            snprintf(why, sizeof why, "crashed (signal %d, %s)", WTERMSIG(status),
                     strsignal(WTERMSIG(status)));
        else
            snprintf(why, sizeof why, "exited with status %d", WEXITSTATUS(status));
        rc = gr_seterr(&e, began ? GRID_ERR_CONN_LOST : GRID_ERR_FAILED, "%s %s%s", job->fn->qualified, why,
                       began ? " while sending its result" : ": the server is still up");
    }
    close(a->ch);
    long long run_ns = gr_now_ns() - a->t0;
    if (rc == GRID_ERR_CONN_LOST)
        gsv_conn_abort(c);
    else if (rc)
        gsv_conn_send_error(c, job->request_id, rc, e.msg);
    gsv_call_log_at(c->peer, job->fn->qualified, job->request_id, job->bytes_in,
                    rc ? 0 : grp_result_bytes(&job->call), a->queue_ns, run_ns, job->t_queued, rc, e.msg);
    if (!rc) gsv_work_learn(s, job, run_ns);
    gsv_job_free(job);
    atomic_fetch_add(&s->calls_done, 1);
}

/* Runs JOB in a child process, so a function that crashes or calls exit() takes down
 * only that child. The connection stays free while the child computes, so the other
 * calls of the connection run and answer meanwhile: the child reports on a socketpair
 * when the function returned; the parent then takes the connection's write lock, lets
 * the child send its RESULT, and holds the lock until the child is gone, so no other
 * reply interleaves with it. Until that go-ahead a CANCEL kills the child and the call
 * is answered CANCELED; a child that died on its own before it is answered ERROR
 * cleanly; one that died while writing lost the stream, and the connection ends. The
 * go-ahead and what follows are a sender thread's in pool mode, so a client that does
 * not read holds no worker (not in thread mode: the child dies with the thread that
 * forked it, PR_SET_PDEATHSIG). Answers, logs and frees JOB. */
static void run_isolated(gsv_server *s, gsv_job *job, long long queue_ns) {
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

    if (pid < 0) {
        gsv_sched_invoking(s, job, 0);
        if (ch[0] >= 0) close(ch[0]);
        gr_err e;
        gr_seterr(&e, GRID_ERR_BUSY, "the server cannot start a process for the call (%s): retry later",
                  strerror(fork_errno));
        gsv_conn_send_error(job->conn, job->request_id, e.code, e.msg);
        gsv_call_log_at(job->conn->peer, job->fn->qualified, job->request_id, job->bytes_in, 0, queue_ns,
                        gr_now_ns() - t0, job->t_queued, e.code, e.msg);
        gsv_job_free(job);
        atomic_fetch_add(&s->calls_done, 1);
        return;
    }
    gsv_sched_child(s, job, pid);
    char b;
    ssize_t k;
    while ((k = read(ch[0], &b, 1)) < 0 && errno == EINTR) {
    }
    /* From here on no CANCEL signals the child, which is reaped by isolated_end. */
    int killed = gsv_sched_child(s, job, 0);
    gsv_sched_invoking(s, job, 0);
    sender a = {.end = isolated_end,
                .s = s,
                .job = job,
                .queue_ns = queue_ns,
                .pid = pid,
                .ch = ch[0],
                .killed = killed,
                .k = k,
                .t0 = t0};
    if (s->opt.mode == GSV_MODE_POOL && spawn_sender(s, &a)) return;
    isolated_end(&a);
}

void gsv_call_run(gsv_server *s, gsv_job *job) {
    job->kind->run(s, job);
}

void gsv_call_fail(gsv_server *s, gsv_job *job, int code, const char *msg) {
    job->kind->fail(s, job, code, msg);
}

void gsv_call_answer(gsv_server *s, gsv_job *job) {
    gr_err e;
    gr_clearerr(&e);
    job->t_started = gr_now_ns();
    long long queue_ns = job->t_started - job->t_queued;
    share_blas_threads(s);
    if (s->opt.isolate && job->kind->where == GSV_WHERE_ISOLABLE) {
        run_isolated(s, job, queue_ns);
        return;
    }
    gsv_job_invoke(s, job);
    long long run_ns = gr_now_ns() - job->t_started;
    gsv_work_learn(s, job, run_ns);
    uint64_t bytes = grp_result_bytes(&job->call);
    /* The kind's own step after the function may still fail the call: before RESULT. */
    int rc = job->kind->ran ? job->kind->ran(job, &e) : GRID_OK;
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
