/* gsv_sched.c: the run queue and the threads that run calls. Pool mode: a fixed set of
 * workers takes calls off one queue, a binary heap ordered FCFS (arrival) or SJF
 * (predicted flops, then arrival). Thread mode: a new detached thread per call, the
 * thread-per-request design kept for the comparison benchmarks.
 *
 * Everything here is under sched.lock: the heap, the running and thread counters and
 * the stopping flag. Jobs are answered outside the lock (a write may block). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gsv.h"

/* The queue order. SJF puts the smallest predicted cost first (flops from the IDL
 * Complexity; the server's speed is the same for every call, so flops order as well as
 * seconds would); ties, and FCFS, go by arrival. SJF can starve a long call behind a
 * steady stream of short ones: there is no aging yet (docs/server.md). */
static int job_before(const gsv_server *s, const gsv_job *a, const gsv_job *b) {
    if (s->opt.queue == GSV_QUEUE_SJF && a->cost != b->cost) return a->cost < b->cost;
    return a->seq < b->seq;
}

static void heap_swap(gsv_job **h, size_t i, size_t j) {
    gsv_job *t = h[i];
    h[i] = h[j];
    h[j] = t;
}

static void sift_up(gsv_server *s, size_t i) {
    gsv_job **h = s->sched.heap;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!job_before(s, h[i], h[p])) break;
        heap_swap(h, i, p);
        i = p;
    }
}

static void sift_down(gsv_server *s, size_t i) {
    gsv_job **h = s->sched.heap;
    size_t n = s->sched.len;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && job_before(s, h[l], h[m])) m = l;
        if (r < n && job_before(s, h[r], h[m])) m = r;
        if (m == i) break;
        heap_swap(h, i, m);
        i = m;
    }
}

/* Removes and returns heap entry I. */
static gsv_job *heap_remove(gsv_server *s, size_t i) {
    gsv_sched *q = &s->sched;
    gsv_job *j = q->heap[i];
    q->heap[i] = q->heap[--q->len];
    if (i < q->len) {
        sift_down(s, i);
        sift_up(s, i);
    }
    return j;
}

/* Counts JOB as running and runs it; afterwards wakes a shutdown waiting for idle. */
static void run_counted(gsv_server *s, gsv_job *job) {
    s->sched.run(s, job);
    pthread_mutex_lock(&s->sched.lock);
    if (--s->sched.running == 0) pthread_cond_broadcast(&s->sched.idle);
    pthread_mutex_unlock(&s->sched.lock);
}

static void *pool_worker(void *arg) {
    gsv_server *s = arg;
    gsv_sched *q = &s->sched;
    pthread_mutex_lock(&q->lock);
    for (;;) {
        while (q->len == 0 && !q->stopping)
            pthread_cond_wait(&q->work, &q->lock);
        if (q->len == 0) break; /* stopping and nothing left */
        gsv_job *job = heap_remove(s, 0);
        q->running++;
        pthread_mutex_unlock(&q->lock);
        run_counted(s, job);
        pthread_mutex_lock(&q->lock);
    }
    q->threads--;
    pthread_mutex_unlock(&q->lock);
    return NULL;
}

static void *thread_worker(void *arg) {
    gsv_job *job = arg;
    gsv_server *s = job->srv;
    run_counted(s, job);
    pthread_mutex_lock(&s->sched.lock);
    s->sched.threads--;
    pthread_mutex_unlock(&s->sched.lock);
    return NULL;
}

int gsv_sched_start(gsv_server *s, gsv_runner run, gr_err *e) {
    gsv_sched *q = &s->sched;
    q->run = run;
    pthread_mutex_init(&q->lock, NULL);
    pthread_cond_init(&q->work, NULL);
    pthread_cond_init(&q->idle, NULL);
    q->fstats = calloc(s->reg.nfns ? s->reg.nfns : 1, sizeof *q->fstats);
    if (!q->fstats)
        return gr_seterr(e, GRID_ERR_NOMEM, "out of memory for %u functions' statistics", s->reg.nfns);
    if (s->opt.mode != GSV_MODE_POOL) return GRID_OK;
    q->pool = calloc(s->workers, sizeof *q->pool);
    if (!q->pool) return gr_seterr(e, GRID_ERR_NOMEM, "out of memory for %u workers", s->workers);
    for (unsigned i = 0; i < s->workers; i++) {
        pthread_mutex_lock(&q->lock);
        q->threads++;
        pthread_mutex_unlock(&q->lock);
        int rc = pthread_create(&q->pool[i], NULL, pool_worker, s);
        if (rc) {
            pthread_mutex_lock(&q->lock);
            q->threads--;
            pthread_mutex_unlock(&q->lock);
            return gr_seterr(e, GRID_ERR_INTERNAL, "cannot start worker %u of %u: %s", i + 1, s->workers,
                             strerror(rc));
        }
        q->npool++;
    }
    return GRID_OK;
}

int gsv_sched_submit(gsv_server *s, gsv_job *job, gr_err *e) {
    gsv_sched *q = &s->sched;
    pthread_mutex_lock(&q->lock);
    if (q->stopping) {
        pthread_mutex_unlock(&q->lock);
        return gr_seterr(e, GRID_ERR_SHUTDOWN, "the server is shutting down: retry on another server");
    }
    job->seq = q->seq++;
    job->t_queued = gr_now_ns();
    if (s->opt.mode == GSV_MODE_THREAD) {
        pthread_attr_t attr;
        pthread_t t;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        /* Counted before the thread starts, so a shutdown waiting for idle sees it. */
        q->running++;
        q->threads++;
        int rc = pthread_create(&t, &attr, thread_worker, job);
        pthread_attr_destroy(&attr);
        if (rc) {
            q->running--;
            q->threads--;
            if (q->running == 0) pthread_cond_broadcast(&q->idle);
            pthread_mutex_unlock(&q->lock);
            return gr_seterr(e, GRID_ERR_BUSY,
                             "the server cannot start a thread for the call (%s): retry later", strerror(rc));
        }
        pthread_mutex_unlock(&q->lock);
        return GRID_OK;
    }
    if (q->len == q->cap) {
        size_t cap = q->cap ? q->cap * 2 : 64;
        gsv_job **h = realloc(q->heap, cap * sizeof *h);
        if (!h) {
            pthread_mutex_unlock(&q->lock);
            return gr_seterr(e, GRID_ERR_NOMEM, "the server is out of memory for its queue: retry later");
        }
        q->heap = h;
        q->cap = cap;
    }
    q->heap[q->len++] = job;
    sift_up(s, q->len - 1);
    pthread_cond_signal(&q->work);
    pthread_mutex_unlock(&q->lock);
    return GRID_OK;
}

gsv_job *gsv_sched_cancel(gsv_server *s, gsv_conn *conn, uint64_t request_id) {
    gsv_job *found = NULL;
    pthread_mutex_lock(&s->sched.lock);
    for (size_t i = 0; i < s->sched.len; i++) {
        gsv_job *j = s->sched.heap[i];
        if (j->conn == conn && j->request_id == request_id) {
            found = heap_remove(s, i);
            break;
        }
    }
    if (!found)
        for (gsv_job *j = s->sched.running_list; j; j = j->rnext)
            if (j->conn == conn && j->request_id == request_id)
                gsv_job_cancel(j); /* an executor's worker sees it (gsv_exec.c) */
    pthread_mutex_unlock(&s->sched.lock);
    return found;
}

gsv_job *gsv_sched_cancel_conn(gsv_server *s, gsv_conn *conn) {
    gsv_job *dropped = NULL;
    pthread_mutex_lock(&s->sched.lock);
    /* From the top again after each removal: heap_remove's sifting may move a job of
     * CONN to a place already looked at. */
    for (size_t i = 0; i < s->sched.len;) {
        if (s->sched.heap[i]->conn != conn) {
            i++;
            continue;
        }
        gsv_job *j = heap_remove(s, i);
        j->rnext = dropped;
        dropped = j;
        i = 0;
    }
    for (gsv_job *j = s->sched.running_list; j; j = j->rnext)
        if (j->conn == conn) gsv_job_cancel(j);
    pthread_mutex_unlock(&s->sched.lock);
    return dropped;
}

int gsv_sched_take(gsv_server *s, gsv_job *job, const void *priv) {
    int found = 0;
    pthread_mutex_lock(&s->sched.lock);
    for (size_t i = 0; i < s->sched.len && !found; i++)
        if (s->sched.heap[i] == job && job->priv == priv) {
            heap_remove(s, i);
            found = 1;
        }
    pthread_mutex_unlock(&s->sched.lock);
    return found;
}

void gsv_sched_invoking(gsv_server *s, gsv_job *job, int on) {
    gsv_sched *q = &s->sched;
    pthread_mutex_lock(&q->lock);
    if (on) {
        job->rprev = NULL;
        job->rnext = q->running_list;
        if (q->running_list) q->running_list->rprev = job;
        q->running_list = job;
    } else {
        if (job->rprev)
            job->rprev->rnext = job->rnext;
        else
            q->running_list = job->rnext;
        if (job->rnext) job->rnext->rprev = job->rprev;
        job->rprev = job->rnext = NULL;
    }
    pthread_mutex_unlock(&q->lock);
}

void gsv_sched_stop(gsv_server *s) {
    gsv_sched *q = &s->sched;
    pthread_mutex_lock(&q->lock);
    q->stopping = 1;
    gsv_job **left = q->heap;
    size_t n = q->len;
    q->heap = NULL;
    q->len = q->cap = 0;
    pthread_cond_broadcast(&q->work);
    pthread_mutex_unlock(&q->lock);
    /* Each through its kind: a kept job stays on disk to run after the restart. */
    for (size_t i = 0; i < n; i++)
        left[i]->kind->fail(s, left[i], GRID_ERR_SHUTDOWN,
                            "the server is shutting down: retry on another server");
    free(left);
}

unsigned gsv_sched_wait_idle(gsv_server *s, long long deadline_ns) {
    gsv_sched *q = &s->sched;
    pthread_mutex_lock(&q->lock);
    while (q->running > 0 && gr_cond_wait_until(&q->idle, &q->lock, deadline_ns) == 0) {
    }
    unsigned running = q->running;
    pthread_mutex_unlock(&q->lock);
    return running;
}

void gsv_sched_join(gsv_server *s) {
    gsv_sched *q = &s->sched;
    for (unsigned i = 0; i < q->npool; i++)
        pthread_join(q->pool[i], NULL);
    q->npool = 0;
    /* Thread mode: the detached threads are done with every job once running is 0;
     * wait for them to leave too so that nothing runs while the process exits. */
    pthread_mutex_lock(&q->lock);
    while (q->threads > 0) {
        pthread_mutex_unlock(&q->lock);
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
        pthread_mutex_lock(&q->lock);
    }
    pthread_mutex_unlock(&q->lock);
    free(q->pool);
    q->pool = NULL;
    free(q->fstats);
    q->fstats = NULL;
}

void gsv_sched_load(gsv_server *s, unsigned *running, unsigned *queued) {
    pthread_mutex_lock(&s->sched.lock);
    *running = s->sched.running;
    *queued = (unsigned)s->sched.len;
    pthread_mutex_unlock(&s->sched.lock);
}

unsigned gsv_sched_running(gsv_server *s) {
    pthread_mutex_lock(&s->sched.lock);
    unsigned n = s->sched.running;
    pthread_mutex_unlock(&s->sched.lock);
    return n;
}
