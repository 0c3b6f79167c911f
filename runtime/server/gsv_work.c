/* gsv_work.c: the server's own prediction of the work it holds, for the metaserver.
 * The server sees every call it runs, routed by a metaserver or sent straight to it, so
 * it learns what each function's calls take here (run seconds, and flops per second for
 * calls whose Complexity gives flops) and sums, for HEARTBEAT, the seconds its running
 * calls still need and its queued calls will need. Everything is under sched.lock. */
#include <stdlib.h>

#include "gsv.h"

#define WORK_EWMA_ALPHA 0.3     /* weight of the newest run */
#define WORK_MIN_SPEED_RUN 1e-3 /* shorter runs say too little about the speed */

static gsv_fstat *stat_of(gsv_server *s, const gsv_job *job) {
    if (!s->sched.fstats || !job->fn || job->fn < s->reg.fns || job->fn >= s->reg.fns + s->reg.nfns)
        return NULL;
    return &s->sched.fstats[job->fn - s->reg.fns];
}

static double ewma(double old, double x) {
    return old > 0 ? (1 - WORK_EWMA_ALPHA) * old + WORK_EWMA_ALPHA * x : x;
}

void gsv_work_learn(gsv_server *s, const gsv_job *job, long long run_ns) {
    double run_s = (double)run_ns / 1e9;
    if (run_s <= 0) return;
    pthread_mutex_lock(&s->sched.lock);
    gsv_fstat *f = stat_of(s, job);
    if (f) {
        f->run_s = ewma(f->run_s, run_s);
        if (job->cost > 0 && run_s >= WORK_MIN_SPEED_RUN) f->speed = ewma(f->speed, job->cost / run_s);
    }
    s->sched.mean_run_s = ewma(s->sched.mean_run_s, run_s);
    pthread_mutex_unlock(&s->sched.lock);
}

/* Seconds JOB's run is predicted to take; -1 when nothing is known of its function.
 * Its flops at the function's measured speed when both are known (so a bigger call is
 * predicted longer), else the function's mean run. */
static double predicted(gsv_server *s, const gsv_job *job) {
    const gsv_fstat *f = stat_of(s, job);
    if (!f || f->run_s <= 0) return -1;
    if (job->cost > 0 && f->speed > 0) return job->cost / f->speed;
    return f->run_s;
}

double gsv_work_outstanding(gsv_server *s) {
    gsv_sched *q = &s->sched;
    long long now = gr_now_ns();
    double work = 0;
    pthread_mutex_lock(&q->lock);
    for (const gsv_job *j = q->running_list; j; j = j->rnext) {
        double ran = (double)(now - j->t_started) / 1e9, p = predicted(s, j);
        if (ran < 0) ran = 0;
        /* A call with no prediction, or one past it, is guessed to need about half
         * as long again as it has run: long runs tend to go on. */
        double left = p - ran, guess = ran / 2;
        work += left > guess ? left : guess;
    }
    for (size_t i = 0; i < q->len; i++) {
        double p = predicted(s, q->heap[i]);
        work += p >= 0 ? p : q->mean_run_s;
    }
    pthread_mutex_unlock(&q->lock);
    return work;
}
