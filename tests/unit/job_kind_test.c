/* job_kind_test.c: the server's job dispatch without a connection (gsv_job.c, gsv_call.c,
 * gsv_sched.c): a job runs and fails through its kind's operations, its release runs
 * exactly once whichever way it ends, what the limits counted for it is given back, the
 * scheduler's workers (pool and thread mode) hand each job to its kind and a shutdown
 * fails the queued ones through their kind. Prints TAP. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "gsv.h"
#include "tap.h"

int grpc_is_canceled_np(int *error);

/* What the fake kind saw. */
static struct {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    int runs, fails, releases, invokes, canceled_seen;
    int fail_code;
    char fail_msg[64];
    gsv_job *last;
    int hold;    /* run waits while set */
    int running; /* a run is waiting */
} seen = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, 0, 0, 0, "", NULL, 0, 0};

static void fake_invoke(void **args) {
    (void)args;
    seen.invokes++;
    seen.canceled_seen = grpc_is_canceled_np(NULL);
}

static void fake_run(gsv_server *s, gsv_job *job) {
    pthread_mutex_lock(&seen.lock);
    seen.runs++;
    seen.last = job;
    seen.running = 1;
    pthread_cond_broadcast(&seen.changed);
    while (seen.hold)
        pthread_cond_wait(&seen.changed, &seen.lock);
    seen.running = 0;
    pthread_mutex_unlock(&seen.lock);
    gsv_job_invoke(s, job);
    gsv_job_free(job);
}

static void fake_fail(gsv_server *s, gsv_job *job, int code, const char *msg) {
    (void)s;
    pthread_mutex_lock(&seen.lock);
    seen.fails++;
    seen.fail_code = code;
    snprintf(seen.fail_msg, sizeof seen.fail_msg, "%s", msg);
    seen.last = job;
    pthread_mutex_unlock(&seen.lock);
    gsv_job_free(job);
}

static void fake_release(gsv_job *job) {
    (void)job;
    pthread_mutex_lock(&seen.lock);
    seen.releases++;
    pthread_mutex_unlock(&seen.lock);
}

static const gsv_job_kind fake_kind = {
    .where = GSV_WHERE_DAEMON, .run = fake_run, .fail = fake_fail, .release = fake_release};

static grd_desc desc; /* no parameters */
static const gridrpc_stub_function stub = {"fake", NULL, 0, fake_invoke};
static const gsv_function fn = {&stub, &desc, "test/fake", "fake"};

static void reset(void) {
    pthread_mutex_lock(&seen.lock);
    seen.runs = seen.fails = seen.releases = seen.invokes = seen.canceled_seen = 0;
    seen.fail_code = 0;
    seen.fail_msg[0] = '\0';
    seen.last = NULL;
    pthread_mutex_unlock(&seen.lock);
}

static void init_server(gsv_server *s, int mode) {
    memset(s, 0, sizeof *s);
    s->opt.mode = mode;
    s->opt.max_calls = 10;
    s->opt.max_calls_per_conn = 10;
    s->opt.max_call_memory = 1 << 20;
    s->workers = 1;
}

/* Without the scheduler: gsv_call_run and gsv_call_fail go to the kind. */
static void direct(void) {
    gsv_server s;
    init_server(&s, GSV_MODE_POOL);
    reset();
    gsv_job *job = gsv_job_new(&fake_kind, &s, NULL, &fn, 7);
    result(job && job->kind == &fake_kind && job->srv == &s && job->request_id == 7 && !job->conn,
           "gsv_job_new: the job carries its kind, server and request id");
    if (!job) return;
    atomic_store(&job->canceled, 1);
    gsv_call_run(&s, job);
    result(seen.runs == 1 && seen.fails == 0 && seen.last == job, "gsv_call_run: the kind's run, once");
    result(seen.invokes == 1 && seen.canceled_seen == 1,
           "gsv_job_invoke: the function ran, seeing its job's cancel flag");
    result(seen.releases == 1, "the run's free: the kind's release, once");

    reset();
    gr_err e;
    job = gsv_job_new(&fake_kind, &s, NULL, &fn, 8);
    int rc = job ? gsv_limits_admit(&s, NULL, job, 100, 100, &e) : GRID_ERR_NOMEM;
    result(rc == GRID_OK && atomic_load(&s.calls_open) == 1 && atomic_load(&s.call_bytes) == 100,
           "the limits count the job");
    if (!job) return;
    gsv_call_fail(&s, job, GRID_ERR_CANCELED, "canceled early");
    result(seen.fails == 1 && seen.runs == 0 && seen.fail_code == GRID_ERR_CANCELED &&
               strcmp(seen.fail_msg, "canceled early") == 0,
           "gsv_call_fail: the kind's fail, with the code and message");
    result(seen.releases == 1 && seen.invokes == 0, "the fail's free: release once, nothing invoked");
    result(atomic_load(&s.calls_open) == 0 && atomic_load(&s.call_bytes) == 0,
           "gsv_job_free gives back what the limits counted");

    reset();
    job = gsv_job_new(&fake_kind, &s, NULL, &fn, 9);
    gsv_job_free(job);
    result(seen.releases == 1 && seen.runs == 0 && seen.fails == 0,
           "a job freed before it was queued: release once, no run, no fail");
}

/* Through the scheduler in MODE: one job runs on a worker (held there), the next waits in
 * the queue (pool mode) and the shutdown fails it through its kind. */
static void scheduled(int mode, const char *name) {
    gsv_server s;
    gr_err e;
    init_server(&s, mode);
    reset();
    if (gsv_sched_start(&s, gsv_call_run, &e) != GRID_OK) {
        result(0, "%s: gsv_sched_start: %s", name, e.msg);
        return;
    }
    pthread_mutex_lock(&seen.lock);
    seen.hold = 1;
    pthread_mutex_unlock(&seen.lock);
    gsv_job *a = gsv_job_new(&fake_kind, &s, NULL, &fn, 1);
    int rc = a ? gsv_sched_submit(&s, a, &e) : GRID_ERR_NOMEM;
    pthread_mutex_lock(&seen.lock);
    while (rc == GRID_OK && !seen.running)
        pthread_cond_wait(&seen.changed, &seen.lock);
    pthread_mutex_unlock(&seen.lock);
    result(rc == GRID_OK && seen.runs == 1 && seen.last == a, "%s: a worker hands the job to its kind's run",
           name);
    gsv_job *b = NULL;
    if (mode == GSV_MODE_POOL) {
        b = gsv_job_new(&fake_kind, &s, NULL, &fn, 2);
        rc = b ? gsv_sched_submit(&s, b, &e) : GRID_ERR_NOMEM;
        result(rc == GRID_OK, "%s: a second job waits in the queue", name);
    }
    gsv_sched_stop(&s);
    if (b)
        result(seen.fails == 1 && seen.fail_code == GRID_ERR_SHUTDOWN && seen.last == b,
               "%s: the shutdown fails the queued job through its kind (GRID_ERR_SHUTDOWN)", name);
    pthread_mutex_lock(&seen.lock);
    seen.hold = 0;
    pthread_cond_broadcast(&seen.changed);
    pthread_mutex_unlock(&seen.lock);
    unsigned left = gsv_sched_wait_idle(&s, gr_now_ns() + 10000000000LL);
    gsv_sched_join(&s);
    result(left == 0 && seen.runs == 1 && seen.invokes == 1, "%s: the held job ran to its end", name);
    result(seen.releases == (b ? 2 : 1), "%s: every job released exactly once (%d)", name, seen.releases);
}

int main(void) {
    gr_log_init("job-kind-test", GSV_LOG_ERROR);
    direct();
    scheduled(GSV_MODE_POOL, "pool");
    scheduled(GSV_MODE_THREAD, "thread");
    printf("1..%d\n", tests);
    return failed ? 1 : 0;
}
