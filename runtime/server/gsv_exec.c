/* gsv_exec.c: the executor pool, gridrpcd's side. The functions of plain calls run in
 * executor processes that the server starts before it serves (one per worker),
 * supervises and replaces, so a function that crashes, aborts, calls exit(),
 * overflows its stack or is killed costs its own call and nothing else.
 *
 * How an executor is made: fork+exec of /proc/self/exe with a hidden argument
 * (GSV_EXEC_ARG), which loads the same modules from the same options. gridrpcd is
 * multi-threaded (workers, readers, OpenBLAS's threads) by the time it needs a
 * replacement, and a plain fork() of it would run stub code beside locks that other
 * threads held at the fork; a zygote forked before the first thread would have to
 * load the modules itself first (their constructors start threads too), so it would
 * not stay single-threaded either. exec starts clean, and the spawn is posix_spawn
 * (vfork-like: no copy of the server's page tables). One supervisor thread starts
 * every executor, so that PR_SET_PDEATHSIG (which follows the thread that forked)
 * ends them with the server however it dies.
 *
 * How a call goes: the worker that took the call copies its arguments into the
 * executor's region (a memfd both map, grown when a call needs more), counts the call
 * in the region's `go` word (and writes the executor's `go` eventfd only if it sleeps
 * there: an executor spins a little after each call, so back-to-back calls cross without
 * a system call), looks at the `done` count for a moment, then sleeps on `done` and the
 * control socket (a hang-up there is the executor's death); then it copies the outputs
 * back into the job's own buffers:
 * RESULT goes out from the server exactly as for a call run in-process (TLS included,
 * kind->ran included: a KEEP output is stored from the job's buffer). A CANCEL raises
 * the executor's cooperative flag (grpc_is_canceled_np), and after a short grace the
 * executor is killed; the limits kill it outright: the wall-clock time (--call-timeout,
 * or the function's IDL Timeout, capped by --call-timeout-max) and the executor's CPU
 * time since the call began (--call-cpu: read from its process CPU clock, which counts
 * every thread the function starts).
 *
 * Where large arrays go: an array of at least GR_SHBUF_MIN bytes of a call that runs here
 * is received straight into a memfd of its own (grm_bulk.c, gr_shbuf.c), and so is a large
 * DATA_PUT. put_args sends those descriptors to the executor (SCM_RIGHTS on its pass
 * socket) instead of copying the bytes; the executor maps them, outputs shared and inputs
 * copy-on-write from a read-only descriptor, so a function that scribbles on its input
 * (or on a data handle's buffer, which other calls share) changes nothing of the
 * server's. The result goes out from the same pages, and a KEEP output stays in them. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gsv_xslot.h"

extern char **environ;

/* The region every executor starts with, and the size above which a region is cut
 * back to it after its call (the memory of one large call is not kept by every
 * executor for ever). */
#define XREGION_MIN ((uint64_t)1 << 20)
#define XREGION_KEEP ((uint64_t)16 << 20)
/* The worker looks at CANCEL and the time limit this often while its executor runs. */
#define XSLICE_MS 10
/* A canceled function gets this long to see grpc_is_canceled_np and return. */
#define XGRACE_NS 50000000LL
/* An executor must say it is ready (its modules loaded) within this. */
#define XSTART_MS 60000
/* While starting executors fails, a call that finds none free waits this long, then is
 * answered GRID_ERR_BUSY (a replacement takes tens of milliseconds when starting works). */
#define XTAKE_WAIT_NS 10000000000LL

enum { XS_FREE, XS_BUSY, XS_DEAD };

static struct {
    pthread_mutex_t lock;
    pthread_cond_t freed; /* a slot became free, the first executors started, or starting failed */
    pthread_cond_t cue;   /* the supervisor's: a slot died, or stop (apart, so a call's end wakes no one) */
    xslot *slots;
    unsigned n;
    char **argv; /* the executors' command line */
    char pid[24];
    int started;       /* under lock: the first round of executors is up (1) or failed (-1) */
    int stop;          /* under lock: gsv_exec_stop asks the supervisor to end */
    int failing;       /* under lock: the supervisor's last start of an executor failed */
    char failure[256]; /* under lock: why */
    pthread_t supervisor;
    int supervised; /* the supervisor thread was started (gsv_exec_stop joins it) */
    /* under lock: executors of remote objects to start (gsv_xslot_spawn), and the
     * condition their askers wait on */
    struct spawn_req *reqs;
    pthread_cond_t spawned;
} pool = {.lock = PTHREAD_MUTEX_INITIALIZER,
          .freed = PTHREAD_COND_INITIALIZER,
          .cue = PTHREAD_COND_INITIALIZER,
          .spawned = PTHREAD_COND_INITIALIZER};

/* An executor of a remote object the supervisor is asked to start. */
typedef struct spawn_req {
    xslot *x;
    int done, rc;
    gr_err e;
    struct spawn_req *next;
} spawn_req;

/* fd as one of the descriptors an executor inherits must not be one of their target
 * numbers, or an earlier dup2 of the spawn would overwrite it. */
static int above_targets(int fd) {
    if (fd < 0 || fd > GSV_XFD_PASS) return fd;
    int d = fcntl(fd, F_DUPFD_CLOEXEC, GSV_XFD_PASS + 1);
    close(fd);
    return d;
}

/* Maps (or remaps to SIZE) slot X's region. */
static int region_map(xslot *x, uint64_t size) {
    void *p = x->x ? mremap(x->x, (size_t)x->size, (size_t)size, MREMAP_MAYMOVE)
                   : mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED, x->mem, 0);
    if (p == MAP_FAILED) return -1;
    x->x = p;
    x->size = size;
    return 0;
}

/* Sets slot X's region to SIZE bytes (the file, then the server's mapping). */
static int region_resize(xslot *x, uint64_t size) {
    if (size < x->size) {
        if (region_map(x, size)) return -1;
        return ftruncate(x->mem, (off_t)size);
    }
    if (ftruncate(x->mem, (off_t)size)) return -1;
    return region_map(x, size);
}

int gsv_exec_spin(atomic_uint *word, unsigned seen, long long ns) {
    long long until = 0;
    for (unsigned i = 0;; i++) {
        if (atomic_load_explicit(word, memory_order_acquire) != seen) return 1;
        if (i < GSV_XSPIN_PAUSES) {
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
            continue;
        }
        if (ns <= 0) return 0;
        long long now = gr_now_ns();
        if (!until) until = now + ns;
        if (now >= until) return 0;
        sched_yield();
        /* A yield that took long means another thread wanted this processor and ran:
         * the machine is busy, and a spinner only takes time from whoever would send the
         * next call. Sleep instead (after one more look). */
        if (gr_now_ns() - now > GSV_XSPIN_BUSY_NS)
            return atomic_load_explicit(word, memory_order_acquire) != seen;
    }
}

/* Starts slot X's executor and waits until it says it is ready; -1 (E: why) if not. */
static int spawn_one(xslot *x, gr_err *e) {
    int sv[2] = {-1, -1}, ps[2] = {-1, -1}, go = -1, done = -1;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) ||
        socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ps) || (go = eventfd(0, EFD_CLOEXEC)) < 0 ||
        (done = eventfd(0, EFD_CLOEXEC)) < 0) {
        gr_seterr(e, GRID_ERR_FAILED, "cannot make an executor's channel: %s", strerror(errno));
        goto fail;
    }
    sv[0] = above_targets(sv[0]);
    sv[1] = above_targets(sv[1]);
    ps[0] = above_targets(ps[0]);
    ps[1] = above_targets(ps[1]);
    go = above_targets(go);
    done = above_targets(done);
    /* The new executor starts from the server's counts, whatever its predecessor left. */
    atomic_store(&x->x->go, x->seq);
    atomic_store(&x->x->done, x->seq);
    atomic_store(&x->x->exec_sleeps, 0);
    atomic_store(&x->x->server_sleeps, 0);
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    sigset_t none;
    sigemptyset(&none);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, sv[1], GSV_XFD_CTL);
    posix_spawn_file_actions_adddup2(&fa, x->mem, GSV_XFD_MEM);
    posix_spawn_file_actions_adddup2(&fa, go, GSV_XFD_GO);
    posix_spawn_file_actions_adddup2(&fa, done, GSV_XFD_DONE);
    posix_spawn_file_actions_adddup2(&fa, ps[1], GSV_XFD_PASS);
    posix_spawn_file_actions_addclosefrom_np(&fa, GSV_XFD_PASS + 1);
    posix_spawnattr_init(&at);
    /* The server blocks its signals for its signalfd: the executor's functions get the
     * usual dispositions and mask. */
    sigset_t all;
    sigfillset(&all);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &all);
    /* A process group of its own: a Ctrl-C at the server's terminal starts the server's
     * graceful shutdown, in which running calls finish; it must not end their executors
     * (they die with the server: PR_SET_PDEATHSIG). */
    posix_spawnattr_setpgroup(&at, 0);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
    pid_t pid;
    int rc = posix_spawn(&pid, "/proc/self/exe", &fa, &at, pool.argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    close(sv[1]);
    close(ps[1]);
    sv[1] = ps[1] = -1;
    if (rc) {
        gr_seterr(e, GRID_ERR_FAILED, "cannot start an executor process: %s", strerror(rc));
        goto fail;
    }
    struct pollfd pf = {sv[0], POLLIN, 0};
    char b = 0;
    int r;
    while ((r = poll(&pf, 1, XSTART_MS)) < 0 && errno == EINTR) {
    }
    if (r != 1 || read(sv[0], &b, 1) != 1 || b != 'r') {
        int status = 0;
        kill(pid, SIGKILL);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        if (r == 0)
            gr_seterr(e, GRID_ERR_FAILED, "an executor process did not start within %d s", XSTART_MS / 1000);
        else if (WIFEXITED(status))
            gr_seterr(e, GRID_ERR_FAILED, "an executor process exited with status %d as it started",
                      WEXITSTATUS(status));
        else
            gr_seterr(e, GRID_ERR_FAILED, "an executor process died as it started (signal %d)",
                      WIFSIGNALED(status) ? WTERMSIG(status) : 0);
        goto fail;
    }
    x->pid = pid;
    x->ctl = sv[0];
    x->go = go;
    x->done = done;
    x->pass = ps[0];
    return 0;
fail:
    if (sv[0] >= 0) close(sv[0]);
    if (sv[1] >= 0) close(sv[1]);
    if (ps[0] >= 0) close(ps[0]);
    if (ps[1] >= 0) close(ps[1]);
    if (go >= 0) close(go);
    if (done >= 0) close(done);
    return -1;
}

/* The supervisor: starts the first executors, then a replacement for each that died. */
static void *supervise(void *arg) {
    (void)arg;
    gr_err e;
    for (unsigned i = 0; i < pool.n; i++) {
        if (spawn_one(&pool.slots[i], &e)) {
            gsv_log(GSV_LOG_ERROR, "%s", e.msg);
            pthread_mutex_lock(&pool.lock);
            pool.started = -1;
            pthread_cond_broadcast(&pool.freed);
            pthread_mutex_unlock(&pool.lock);
            return NULL;
        }
    }
    pthread_mutex_lock(&pool.lock);
    for (unsigned i = 0; i < pool.n; i++)
        pool.slots[i].state = XS_FREE;
    pool.started = 1;
    pthread_cond_broadcast(&pool.freed);
    while (!pool.stop) {
        spawn_req *req = pool.reqs;
        if (req) {
            pool.reqs = req->next;
            pthread_mutex_unlock(&pool.lock);
            req->rc = spawn_one(req->x, &req->e);
            pthread_mutex_lock(&pool.lock);
            req->done = 1;
            pthread_cond_broadcast(&pool.spawned);
            continue;
        }
        xslot *dead = NULL;
        for (unsigned i = 0; i < pool.n && !dead; i++)
            if (pool.slots[i].state == XS_DEAD) dead = &pool.slots[i];
        if (!dead) {
            pthread_cond_wait(&pool.cue, &pool.lock);
            continue;
        }
        pthread_mutex_unlock(&pool.lock);
        int rc = spawn_one(dead, &e);
        if (rc) gsv_log(GSV_LOG_ERROR, "%s (trying again in 1 s)", e.msg);
        pthread_mutex_lock(&pool.lock);
        /* Calls waiting for an executor learn of a failure at once (take_slot). */
        pool.failing = rc != 0;
        if (rc) snprintf(pool.failure, sizeof pool.failure, "%.200s", e.msg);
        pthread_cond_broadcast(&pool.freed);
        if (!rc) {
            dead->state = XS_FREE;
            gsv_log(GSV_LOG_DEBUG, "executor %d started", (int)dead->pid);
        } else {
            long long until = gr_now_ns() + 1000000000LL;
            while (!pool.stop && !pool.reqs && gr_cond_wait_until(&pool.cue, &pool.lock, until) == 0) {
            }
        }
    }
    /* Stopping: nobody waits for an object's executor any more (no worker runs). */
    for (spawn_req *req; (req = pool.reqs) != NULL;) {
        pool.reqs = req->next;
        req->rc = gr_seterr(&req->e, GRID_ERR_SHUTDOWN, "the server is shutting down");
        req->done = 1;
    }
    pthread_cond_broadcast(&pool.spawned);
    pthread_mutex_unlock(&pool.lock);
    return NULL;
}

int gsv_xslot_spawn(xslot *x, gr_err *e) {
    spawn_req req = {.x = x};
    pthread_mutex_lock(&pool.lock);
    if (!pool.supervised || pool.stop) {
        pthread_mutex_unlock(&pool.lock);
        return gr_seterr(e, GRID_ERR_SHUTDOWN, "the server is shutting down");
    }
    req.next = pool.reqs;
    pool.reqs = &req;
    pthread_cond_broadcast(&pool.cue);
    while (!req.done)
        pthread_cond_wait(&pool.spawned, &pool.lock);
    pthread_mutex_unlock(&pool.lock);
    if (req.rc) *e = req.e;
    return req.rc ? -1 : 0;
}

int gsv_xslot_init(xslot *x) {
    *x = (xslot){.pid = 0, .ctl = -1, .go = -1, .done = -1, .pass = -1};
    x->mem = above_targets(memfd_create("gridrpcd-call", MFD_CLOEXEC));
    if (x->mem < 0) return -1;
    if (region_resize(x, XREGION_MIN)) {
        int err = errno;
        close(x->mem);
        x->mem = -1;
        errno = err;
        return -1;
    }
    return 0;
}

void gsv_xslot_shrink(xslot *x) {
    if (x->size > XREGION_KEEP) region_resize(x, XREGION_MIN);
}

void gsv_exec_stop(void) {
    if (!pool.supervised) return;
    pthread_mutex_lock(&pool.lock);
    pool.stop = 1;
    pthread_cond_broadcast(&pool.cue);
    pthread_cond_broadcast(&pool.freed);
    pthread_mutex_unlock(&pool.lock);
    /* A start in progress ends within XSTART_MS at worst; the server does not wait that
     * long to exit (the executors die with it anyway: PR_SET_PDEATHSIG). */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 5;
    if (pthread_timedjoin_np(pool.supervisor, NULL, &until) != 0) {
        gsv_log(GSV_LOG_WARN, "the executors' supervisor did not stop within 5 s");
        return;
    }
    pool.supervised = 0;
    /* No worker runs any more: every executor is idle, and nothing is lost by ending it. */
    for (unsigned i = 0; i < pool.n; i++) {
        xslot *x = &pool.slots[i];
        if (x->pid <= 0) continue;
        kill(x->pid, SIGKILL);
        while (waitpid(x->pid, NULL, 0) < 0 && errno == EINTR) {
        }
        x->pid = 0;
    }
}

int gsv_exec_start(gsv_server *s, int argc, char **argv, gr_err *e) {
    pool.n = s->workers ? s->workers : 1;
    pool.slots = calloc(pool.n, sizeof *pool.slots);
    pool.argv = calloc((size_t)argc + 3, sizeof *pool.argv);
    if (!pool.slots || !pool.argv) return gr_seterr(e, GRID_ERR_NOMEM, "out of memory");
    snprintf(pool.pid, sizeof pool.pid, "%d", (int)getpid());
    pool.argv[0] = argv[0];
    pool.argv[1] = (char *)GSV_EXEC_ARG;
    pool.argv[2] = pool.pid;
    for (int i = 1; i < argc; i++)
        pool.argv[i + 2] = argv[i];
    for (unsigned i = 0; i < pool.n; i++) {
        xslot *x = &pool.slots[i];
        if (gsv_xslot_init(x))
            return gr_seterr(e, GRID_ERR_FAILED, "cannot make an executor's memory region: %s",
                             strerror(errno));
        x->state = XS_DEAD;
    }
    /* It lives until gsv_exec_stop: the executors' PR_SET_PDEATHSIG follows it. */
    int rc = pthread_create(&pool.supervisor, NULL, supervise, NULL);
    if (rc) return gr_seterr(e, GRID_ERR_FAILED, "cannot start the executors' supervisor: %s", strerror(rc));
    pool.supervised = 1;
    pthread_mutex_lock(&pool.lock);
    while (!pool.started)
        pthread_cond_wait(&pool.freed, &pool.lock);
    rc = pool.started;
    pthread_mutex_unlock(&pool.lock);
    if (rc < 0) return gr_seterr(e, GRID_ERR_FAILED, "the executor processes could not start (see above)");
    gsv_log(GSV_LOG_DEBUG, "%u executor process%s started", pool.n, pool.n == 1 ? "" : "es");
    return GRID_OK;
}

int gsv_exec_carries(const gsv_function *fn) {
    /* What the region cannot carry yet stays in-process: arrays of strings or file names
     * (the body may repoint each element), and callbacks that take text. */
    const grd_desc *d = fn->desc;
    for (uint32_t i = 0; i < d->nparams; i++) {
        const grd_param *p = &d->params[i];
        if ((p->type == GRD_STRING || p->type == GRD_FILENAME) && p->rank > 0) return 0;
        for (uint32_t k = 0; k < p->ncb; k++)
            if (p->cb[k].type == GRD_STRING || p->cb[k].type == GRD_FILENAME) return 0;
    }
    return 1;
}

int gsv_exec_runs(const gsv_server *s, const gsv_job *job) {
    if (s->opt.in_process || !pool.n || job->kind->where != GSV_WHERE_ISOLABLE) return 0;
    return gsv_exec_carries(job->fn);
}

int gsv_exec_objects(const gsv_server *s, const gsv_class *cls) {
    if (s->opt.in_process || !pool.n) return 0;
    for (unsigned i = 0; i < cls->nmethods; i++)
        if (cls->methods[i].stub && !gsv_exec_carries(&cls->methods[i])) return 0;
    return 1;
}

static const char *server_name(const gsv_server *s, char *buf, size_t n);

/* A free executor for JOB, waiting for one; NULL (E: GRID_ERR_BUSY) when none came
 * within XTAKE_WAIT_NS while the supervisor fails to start them. A wait for executors
 * busy with other calls (--mode thread runs more calls than there are executors) is
 * not bounded: those calls end. */
static xslot *take_slot(gsv_server *s, const gsv_job *job, gr_err *e) {
    long long giveup = gr_now_ns() + XTAKE_WAIT_NS;
    pthread_mutex_lock(&pool.lock);
    for (;;) {
        for (unsigned i = 0; i < pool.n; i++)
            if (pool.slots[i].state == XS_FREE) {
                pool.slots[i].state = XS_BUSY;
                pthread_mutex_unlock(&pool.lock);
                return &pool.slots[i];
            }
        if (pool.failing && gr_now_ns() >= giveup) {
            char host[256];
            gr_seterr(e, GRID_ERR_BUSY,
                      "no executor process is free on server %s to run %s: starting one keeps failing (%s); "
                      "the server tries again every second: try later or another server, and see the "
                      "server's log",
                      server_name(s, host, sizeof host), job->fn->qualified, pool.failure);
            pthread_mutex_unlock(&pool.lock);
            return NULL;
        }
        gr_cond_wait_until(&pool.freed, &pool.lock, gr_now_ns() + 1000000000LL);
    }
}

/* Gives slot X back: free, or dead (its executor reaped; the supervisor replaces it). */
void gsv_xslot_close(xslot *x) {
    int *fds[] = {&x->ctl, &x->go, &x->done, &x->pass};
    for (unsigned i = 0; i < sizeof fds / sizeof fds[0]; i++) {
        if (*fds[i] >= 0) close(*fds[i]);
        *fds[i] = -1;
    }
    x->pid = 0;
}

static void give_slot(xslot *x, int dead) {
    if (dead) gsv_xslot_close(x);
    pthread_mutex_lock(&pool.lock);
    x->state = dead ? XS_DEAD : XS_FREE;
    pthread_cond_broadcast(dead ? &pool.cue : &pool.freed);
    pthread_mutex_unlock(&pool.lock);
}

/* The bytes parameter I of C takes in the region: 0 for a scalar number or a NULL. */
static uint64_t param_bytes(const grm_call *c, uint32_t i) {
    const grd_param *p = &c->desc->params[i];
    if (p->type == GRD_STRING || p->type == GRD_FILENAME) {
        const char *str = *(char *const *)c->ptr[i];
        return str ? strlen(str) + 1 : 0;
    }
    if (p->rank == 0 || !c->ptr[i]) return 0;
    return c->sl[i].ext.bytes;
}

int gsv_exec_send_fds(int sock, const int *fds, unsigned n) {
    char byte = 'f';
    struct iovec iov = {&byte, 1};
    union {
        char buf[CMSG_SPACE(sizeof(int) * GRD_MAX_PARAMS)];
        struct cmsghdr align;
    } u;
    if (n == 0 || n > GRD_MAX_PARAMS) {
        errno = EINVAL;
        return -1;
    }
    memset(&u, 0, sizeof u);
    struct msghdr m = {.msg_iov = &iov,
                       .msg_iovlen = 1,
                       .msg_control = u.buf,
                       .msg_controllen = CMSG_SPACE(sizeof(int) * n)};
    struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int) * n);
    memcpy(CMSG_DATA(cm), fds, sizeof(int) * n);
    ssize_t w;
    while ((w = sendmsg(sock, &m, MSG_NOSIGNAL)) < 0 && errno == EINTR) {
    }
    return w == 1 ? 0 : -1;
}

int gsv_exec_receive_fds(int sock, int *fds, unsigned max) {
    char byte;
    struct iovec iov = {&byte, 1};
    union {
        char buf[CMSG_SPACE(sizeof(int) * GRD_MAX_PARAMS)];
        struct cmsghdr align;
    } u;
    struct msghdr m = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
    ssize_t got;
    while ((got = recvmsg(sock, &m, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR) {
    }
    struct cmsghdr *cm = got == 1 ? CMSG_FIRSTHDR(&m) : NULL;
    if (!cm || cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS || cm->cmsg_len < CMSG_LEN(0))
        return -1;
    size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    int all[GRD_MAX_PARAMS];
    if (k > GRD_MAX_PARAMS) k = GRD_MAX_PARAMS;
    memcpy(all, CMSG_DATA(cm), k * sizeof(int));
    if (k > max) {
        for (size_t i = 0; i < k; i++)
            close(all[i]);
        return -1;
    }
    memcpy(fds, all, k * sizeof(int));
    return (int)k;
}

/* Lays JOB's arguments out in X's region (OFF/LEN: where each went, the server's own
 * copy; bit I of *PASSED: parameter I is a shared buffer the executor maps instead),
 * growing it as needed, and sends the shared buffers' descriptors. GRID_OK, or an error
 * in E. */
static int put_args(gsv_server *s, xslot *x, gsv_job *job, uint32_t cls, uint32_t method, uint64_t *off,
                    uint64_t *len, uint64_t *passed, gr_err *e) {
    grm_call *c = &job->call;
    uint32_t np = c->desc->nparams;
    /* Every buffer was already allocated within the server's limits: the region can
     * never need more than NP of the largest array and the head, or it was miscounted. */
    uint64_t cap = GSV_XDATA + (uint64_t)np * (s->opt.limits.max_array + 64) + s->opt.limits.max_head;
    uint64_t need = GSV_XDATA;
    int fds[GRD_MAX_PARAMS], own[GRD_MAX_PARAMS];
    int32_t pass[GRD_MAX_PARAMS];
    unsigned nfds = 0;
    *passed = 0;
    for (uint32_t i = 0; i < np; i++) {
        const grd_param *p = &c->desc->params[i];
        len[i] = param_bytes(c, i);
        pass[i] = -1;
        size_t bytes = 0;
        int fd = p->rank > 0 && len[i] && p->type != GRD_STRING && p->type != GRD_FILENAME
                     ? gr_shbuf_fd(c->ptr[i], &bytes)
                     : -1;
        if (fd >= 0 && bytes >= len[i]) {
            /* An input goes read-only: a data handle's buffer is shared by every call
             * that names it, and no executor may change it (it maps it copy-on-write). */
            own[nfds] = p->mode == GRD_IN;
            if (own[nfds]) {
                char path[64];
                snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
                fd = open(path, O_RDONLY | O_CLOEXEC);
            }
            if (fd < 0) {
                gr_seterr(e, GRID_ERR_FAILED, "the server cannot share '%s' of %s with its executor: %s",
                          p->name, job->fn->qualified, strerror(errno));
                goto fail;
            }
            pass[i] = (int32_t)nfds;
            fds[nfds++] = fd;
            *passed |= (uint64_t)1 << i;
            off[i] = 0;
            continue;
        }
        off[i] = len[i] ? need : 0;
        need += (len[i] + 63) & ~(uint64_t)63;
        if (need > cap) {
            gr_seterr(e, GRID_ERR_LIMIT, "the arguments of %s exceed the server's limits",
                      job->fn->qualified);
            goto fail;
        }
    }
    if (need > x->size) {
        uint64_t size = x->size;
        while (size < need)
            size *= 2;
        if (region_resize(x, size)) {
            gr_seterr(e, GRID_ERR_NOMEM, "the server cannot map %llu bytes for the call: %s",
                      (unsigned long long)size, strerror(errno));
            goto fail;
        }
    }
    gsv_xregion *r = x->x;
    uint8_t *base = (uint8_t *)r;
    for (uint32_t i = 0; i < np; i++) {
        const grd_param *p = &c->desc->params[i];
        r->off[i] = off[i];
        r->len[i] = len[i];
        r->pass[i] = pass[i];
        r->ival[i] = c->ival[i];
        if (pass[i] >= 0 || p->type == GRD_CALLBACK) continue;
        if (p->type != GRD_STRING && p->type != GRD_FILENAME && p->rank == 0) {
            memcpy(&r->val[i], c->ptr[i], sizeof r->val[i]);
        } else if (len[i]) {
            const void *from = p->rank == 0 ? *(char *const *)c->ptr[i] : c->ptr[i];
            /* OUT and WORK arrays arrive zeroed, as grm_read_bulk gives them. */
            if (p->rank > 0 && (p->mode == GRD_OUT || p->mode == GRD_WORK))
                memset(base + off[i], 0, (size_t)len[i]);
            else
                memcpy(base + off[i], from, (size_t)len[i]);
        }
    }
    r->npass = nfds;
    r->size = need;
    r->hash = job->fn->desc->hash;
    r->fn = cls ? 0 : (uint32_t)(job->fn - s->reg.fns);
    r->cls = cls;
    r->method = method;
    r->str_pass = 0;
    r->mem_limit = s->opt.call_memory;
    atomic_store(&r->canceled, 0);
    atomic_store(&r->fault, GSV_XFAULT_NONE);
    atomic_store(&r->state, GSV_XSTATE_IDLE);
    if (nfds && gsv_exec_send_fds(x->pass, fds, nfds)) {
        gr_seterr(e, GRID_ERR_FAILED, "the server cannot hand the arrays of %s to its executor: %s",
                  job->fn->qualified, strerror(errno));
        goto fail;
    }
    for (unsigned k = 0; k < nfds; k++)
        if (own[k]) close(fds[k]);
    return GRID_OK;
fail:
    for (unsigned k = 0; k < nfds; k++)
        if (own[k]) close(fds[k]);
    return e->code;
}

/* Takes the OUT and INOUT strings X's executor left for JOB's call: one shared buffer on
 * the pass socket, each string at the offset and with the length the region says, each
 * checked (inside the buffer, ending in its one '\0') and copied into the call, which owns
 * it from then on. -1 when the executor sent something malformed. */
static int get_strings(gsv_server *s, xslot *x, gsv_job *job, gr_err *e) {
    grm_call *c = &job->call;
    gsv_xregion *r = x->x;
    uint64_t size = r->str_size;
    int fd = -1, rc = -1;
    void *map = NULL;
    struct stat st;
    if (gsv_exec_receive_fds(x->pass, &fd, 1) != 1 || fstat(fd, &st) || !size || (uint64_t)st.st_size < size)
        goto done;
    if (size > s->opt.limits.max_head) {
        rc = -2;
        gr_seterr(e, GRID_ERR_LIMIT,
                  "the strings %s returned (%llu bytes) exceed the server's limit on a result's scalars and "
                  "strings (--max-head %u bytes)",
                  job->fn->qualified, (unsigned long long)size, s->opt.limits.max_head);
        goto done;
    }
    if ((map = mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, fd, 0)) == MAP_FAILED) {
        map = NULL;
        goto done;
    }
    for (uint32_t i = 0; i < c->desc->nparams; i++) {
        const grd_param *p = &c->desc->params[i];
        if (p->type != GRD_STRING || p->rank != 0 || (p->mode != GRD_OUT && p->mode != GRD_INOUT)) continue;
        uint64_t off = r->str_off[i], len = r->str_len[i];
        char *copy = NULL;
        if (len) {
            const char *from = (const char *)map + off;
            if (off > size || len > size - off || memchr(from, '\0', (size_t)len) != from + len - 1)
                goto done;
            if (!(copy = malloc((size_t)len))) goto done;
            memcpy(copy, from, (size_t)len);
        }
        /* What arrived from the client is the call's to free; so is what replaces it. */
        free(c->sl[i].own_ptr);
        c->sl[i].own_ptr = copy;
        *(char **)c->ptr[i] = copy;
    }
    rc = 0;
done:
    if (map) munmap(map, (size_t)size);
    if (fd >= 0) close(fd);
    return rc;
}

/* Copies the outputs of JOB's call back from X's region into the job's buffers (shared
 * buffers, PASSED, already hold theirs), and takes its strings; -1 when the executor
 * left them malformed, -2 (E) when they are more than the server sends. */
static int get_outputs(gsv_server *s, xslot *x, gsv_job *job, const uint64_t *off, const uint64_t *len,
                       uint64_t passed, gr_err *e) {
    grm_call *c = &job->call;
    const uint8_t *base = (const uint8_t *)x->x;
    for (uint32_t i = 0; i < c->desc->nparams; i++) {
        const grd_param *p = &c->desc->params[i];
        if (p->mode != GRD_OUT && p->mode != GRD_INOUT) continue;
        if (p->type == GRD_STRING || p->type == GRD_FILENAME)
            continue; /* get_strings; a path is the server's */
        if ((passed >> i) & 1u) continue;
        if (p->rank == 0)
            memcpy(c->ptr[i], &x->x->val[i], sizeof x->x->val[i]);
        else if (len[i])
            memcpy(c->ptr[i], base + off[i], (size_t)len[i]);
    }
    return x->x->str_pass ? get_strings(s, x, job, e) : 0;
}

/* What ended the executor: "crashed (signal 11, Segmentation fault)" in WHY. */
static void death_words(int status, int fault, char *why, size_t n) {
    if (WIFSIGNALED(status))
        snprintf(why, n, "crashed (signal %d, %s%s)", WTERMSIG(status), strsignal(WTERMSIG(status)),
                 fault == GSV_XFAULT_STACK ? ": stack overflow" : "");
    else
        snprintf(why, n, "exited with status %d", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

static const char *server_name(const gsv_server *s, char *buf, size_t n) {
    if (s->opt.name) return s->opt.name;
    if (gethostname(buf, n) != 0) snprintf(buf, n, "?");
    buf[n - 1] = '\0';
    return buf;
}

/* Where a call's wall-clock limit comes from. */
enum { XLIM_NONE, XLIM_SERVER, XLIM_IDL, XLIM_CAP };

/* The wall-clock limit of FN's calls in seconds (0: none) and its source (FROM): the
 * function's own IDL Timeout, else --call-timeout; never above --call-timeout-max. */
static double time_limit(const gsv_server *s, const gsv_function *fn, int *from) {
    double t = s->opt.call_timeout;
    *from = t > 0 ? XLIM_SERVER : XLIM_NONE;
    if (fn->desc->flags & GRD_FF_TIMEOUT) {
        t = fn->desc->timeout;
        *from = XLIM_IDL;
    }
    if (s->opt.call_timeout_max > 0 && (t <= 0 || t > s->opt.call_timeout_max)) {
        t = s->opt.call_timeout_max;
        *from = XLIM_CAP;
    }
    return t;
}

/* The CPU time the process behind CLOCK has used, in ns; -1 when it cannot be read. */
static long long cpu_ns(clockid_t clock) {
    struct timespec ts;
    if (clock_gettime(clock, &ts)) return -1;
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Hands the call in X's region to its executor: counts it, and wakes the executor
 * only when it sleeps. The count is stored before the sleeper flag is read, and the
 * executor sets its flag before it reads the count again (gsv_exec_main.c), so one of
 * the two always sees the other: the call is never missed, at worst woken twice. */
static int hand_over(xslot *x) {
    atomic_store(&x->x->go, ++x->seq);
    if (!atomic_load(&x->x->exec_sleeps)) return 0;
    uint64_t one = 1;
    return write(x->go, &one, sizeof one) == (ssize_t)sizeof one ? 0 : -1;
}

/* Runs the callback X's executor asks for on behalf of JOB's function (gsv_exec_main.c's
 * xcb_call): its scalars from the region, its arrays in the shared buffer that came on
 * the pass socket, mapped here, where the client's answer is read straight into. What
 * the executor wrote is checked, never trusted: a bad request fails the callback. */
static void run_callback(xslot *x, gsv_job *job) {
    gsv_xregion *r = x->x;
    uint32_t index = r->cb_index, pass = r->cb_pass;
    uint64_t size = r->cb_size;
    int fd = -1, rc = GRID_ERR_PROTOCOL;
    void *map = NULL;
    gr_err e;
    gr_clearerr(&e);
    if (pass && gsv_exec_receive_fds(x->pass, &fd, 1) != 1) fd = -1;
    const grd_desc *d = gsv_callback_desc(job, index, &e);
    struct stat st;
    if (d && pass &&
        (fd < 0 || fstat(fd, &st) || (uint64_t)st.st_size < size || !size ||
         (map = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED)) {
        map = NULL;
        d = NULL;
    }
    grm_value vals[GRD_MAX_PARAMS];
    void *args[GRD_MAX_PARAMS];
    for (uint32_t k = 0; d && k < d->nparams; k++) {
        const grd_param *p = &d->params[k];
        uint64_t off = r->cb_off[k], len = r->cb_len[k];
        if (p->rank == 0) {
            memcpy(&vals[k], &r->cb_val[k], sizeof vals[k]);
            args[k] = &vals[k];
        } else if (!len) {
            args[k] = NULL;
        } else if (!map || off > size || len > size - off) {
            d = NULL;
        } else {
            args[k] = (uint8_t *)map + off;
        }
    }
    /* The executor's buffers must hold what the callback's sizes say. */
    grm_call *c = d ? malloc(grm_call_size(d->nparams)) : NULL;
    if (c) {
        grw_limits lim;
        grp_limits_default(&lim);
        if (grm_from_argv(c, d, args, &lim, &e) == GRID_OK) {
            rc = GRID_OK;
            for (uint32_t k = 0; k < d->nparams; k++)
                if (d->params[k].rank > 0 && args[k] && c->sl[k].ext.bytes > r->cb_len[k])
                    rc = GRID_ERR_PROTOCOL;
        }
        free(c);
    }
    if (rc == GRID_OK) {
        rc = gsv_callback_run(job, index, args);
        for (uint32_t k = 0; k < d->nparams; k++)
            if (d->params[k].rank == 0 && d->params[k].mode != GRD_IN)
                memcpy(&r->cb_val[k], &vals[k], sizeof vals[k]);
    } else {
        gsv_log(GSV_LOG_WARN, "executor %d: a malformed callback request of %s: failed", (int)x->pid,
                job->fn->qualified);
    }
    if (map) munmap(map, (size_t)size);
    if (fd >= 0) close(fd);
    r->cb_rc = rc;
}

/* Waits for X's executor to finish the call of JOB: XEND_*. A CANCEL asks first, then
 * kills; the limits kill. */
static int wait_call(gsv_server *s, xslot *x, gsv_job *job) {
    long long t0 = gr_now_ns(), asked = 0;
    int from;
    double wall = time_limit(s, job->fn, &from);
    long long limit = wall > 0 ? (long long)(wall * 1e9) : 0;
    /* CPU time counts from the call's start: the executor's own start-up and its earlier
     * calls are not this call's. */
    long long cpu_limit = s->opt.call_cpu > 0 ? (long long)(s->opt.call_cpu * 1e9) : 0, cpu0 = -1;
    clockid_t clock;
    if (cpu_limit && clock_getcpuclockid(x->pid, &clock) == 0) cpu0 = cpu_ns(clock);
    int killed = 0;
    gsv_exec_spin(&x->x->done, x->seq - 1, GSV_XSPIN_SERVER_NS);
    for (;;) {
        if (!killed && atomic_load(&x->x->done) == x->seq) {
            int st = atomic_load(&x->x->state);
            if (st != GSV_XSTATE_CALLBACK) return st == GSV_XSTATE_DONE ? XEND_DONE : XEND_BAD;
            /* The function called a callback: run it with the client, hand the call back. */
            run_callback(x, job);
            if (hand_over(x)) {
                kill(x->pid, SIGKILL);
                return XEND_DIED;
            }
            continue;
        }
        /* Asleep from here: the executor writes `done` once it sees the flag. */
        atomic_store(&x->x->server_sleeps, 1);
        struct pollfd pf[2] = {{x->done, POLLIN, 0}, {x->ctl, POLLIN, 0}};
        int r = !killed && atomic_load(&x->x->done) == x->seq ? 0 : poll(pf, 2, XSLICE_MS);
        atomic_store(&x->x->server_sleeps, 0);
        if (r < 0 && errno != EINTR) {
            kill(x->pid, SIGKILL);
            return XEND_DIED;
        }
        if (r > 0 && (pf[0].revents & POLLIN)) {
            uint64_t v;
            if (read(x->done, &v, sizeof v) < 0 && errno != EAGAIN && errno != EINTR) {
                kill(x->pid, SIGKILL);
                return XEND_DIED;
            }
        }
        if (!killed && atomic_load(&x->x->done) == x->seq) continue;
        if (r > 0 && pf[1].revents) return killed ? killed : XEND_DIED;
        if (killed) continue;
        long long now = gr_now_ns();
        if (atomic_load(&job->canceled)) {
            if (!asked) {
                asked = now;
                atomic_store(&x->x->canceled, 1);
            } else if (now - asked >= XGRACE_NS) {
                kill(x->pid, SIGKILL);
                killed = XEND_CANCELED;
            }
        }
        if (!killed && limit && now - t0 >= limit) {
            kill(x->pid, SIGKILL);
            killed = XEND_TIMEOUT;
        }
        if (!killed && cpu0 >= 0) {
            long long used = cpu_ns(clock);
            if (used >= 0 && used - cpu0 >= cpu_limit) {
                kill(x->pid, SIGKILL);
                killed = XEND_CPU;
            }
        }
    }
}

/* The error of a call that LIMIT ended (XEND_TIMEOUT or XEND_CPU), in E: which limit,
 * where it comes from, and how to raise it. */
static int limit_error(gsv_server *s, const gsv_function *fn, int end, gr_err *e) {
    char host[256];
    const char *server = server_name(s, host, sizeof host);
    if (end == XEND_CPU)
        return gr_seterr(
            e, GRID_ERR_FAILED,
            "%s used more than %g s of CPU time (its threads together), the server's limit per call "
            "(--call-cpu), and was stopped on server %s: raise --call-cpu there, or give the "
            "call less work; the server is still up",
            fn->qualified, s->opt.call_cpu, server);
    int from;
    double t = time_limit(s, fn, &from);
    if (from == XLIM_IDL)
        return gr_seterr(e, GRID_ERR_FAILED,
                         "%s ran longer than %g s, its own limit (Timeout %u in its IDL), and was stopped on "
                         "server %s: raise its Timeout and rebuild the module, or give the call less work; "
                         "the server is still up",
                         fn->qualified, t, fn->desc->timeout, server);
    if (from == XLIM_CAP) {
        char idl[64] = "";
        if (fn->desc->flags & GRD_FF_TIMEOUT)
            snprintf(idl, sizeof idl, "; its IDL asks for Timeout %u", fn->desc->timeout);
        return gr_seterr(
            e, GRID_ERR_FAILED,
            "%s ran longer than %g s, the server's cap on every call (--call-timeout-max%s), and "
            "was stopped on server %s: raise --call-timeout-max there, or give the call less "
            "work; the server is still up",
            fn->qualified, t, idl, server);
    }
    return gr_seterr(
        e, GRID_ERR_FAILED,
        "%s ran longer than %g s, the server's limit per call (--call-timeout), and was stopped on "
        "server %s: raise --call-timeout there, or give the function a Timeout of its own in its "
        "IDL; the server is still up",
        fn->qualified, t, server);
}

int gsv_xslot_run(gsv_server *s, xslot *x, gsv_job *job, int blas, uint32_t cls, uint32_t method, xdeath *d,
                  gr_err *e) {
    uint64_t off[GRD_MAX_PARAMS], len[GRD_MAX_PARAMS], passed = 0;
    if (put_args(s, x, job, cls, method, off, len, &passed, e)) return XEND_ARGS;
    x->x->blas = blas;
    int end = hand_over(x) == 0 ? wait_call(s, x, job) : XEND_DIED;
    int out = end == XEND_DONE ? get_outputs(s, x, job, off, len, passed, e) : 0;
    if (out == -2) return XEND_ARGS;
    if (out) {
        gsv_log(GSV_LOG_WARN, "executor %d: malformed outputs of %s: ended", (int)x->pid, job->fn->qualified);
        end = XEND_BAD;
    }
    if (end == XEND_DONE) return end;
    d->state = atomic_load(&x->x->state);
    d->fault = atomic_load(&x->x->fault);
    d->status = 0;
    /* A hang-up need not be an exit (a function may close the descriptor): the executor
     * is ended either way before it is reaped. */
    kill(x->pid, SIGKILL);
    while (waitpid(x->pid, &d->status, 0) < 0 && errno == EINTR) {
    }
    d->pid = x->pid;
    return end;
}

/* Appends "; LOST" to E's message (when LOST is not NULL); E's code. */
static int cost_also(gr_err *e, const char *lost) {
    if (lost) {
        size_t n = strlen(e->msg);
        snprintf(e->msg + n, sizeof e->msg - n, "; %s", lost);
    }
    return e->code;
}

int gsv_xslot_error(gsv_server *s, const gsv_job *job, int end, const xdeath *d, const char *lost,
                    gr_err *e) {
    const char *fn = job->fn->qualified;
    char host[256];
    if (end == XEND_BAD) {
        gr_seterr(e, GRID_ERR_FAILED,
                  "the executor process of server %s could not run %s: its modules changed on disk since the "
                  "server started (restart the server), it could not map the call's arrays, or it sent back "
                  "malformed outputs (the server's log says which)",
                  server_name(s, host, sizeof host), fn);
        return cost_also(e, lost);
    }
    if (end == XEND_CANCELED) {
        gr_seterr(
            e, GRID_ERR_CANCELED,
            "the call was canceled while it ran: its process was ended %.0f ms after the cancel arrived",
            (double)(gr_now_ns() - __atomic_load_n(&job->canceled_ns, __ATOMIC_RELAXED)) / 1e6);
        return cost_also(e, lost);
    }
    if (end == XEND_TIMEOUT || end == XEND_CPU) {
        limit_error(s, job->fn, end, e);
        return cost_also(e, lost);
    }
    char why[160], mem[96] = "";
    death_words(d->status, d->fault, why, sizeof why);
    if (d->fault == GSV_XFAULT_MEMORY && s->opt.call_memory) {
        char size[32];
        gr_seterr(
            e, GRID_ERR_FAILED,
            "%s ran out of memory on server %s: a call may allocate at most %s there (--call-memory), and "
            "an allocation past that failed (then it %s); raise --call-memory there, or give the call less "
            "work; the server is still up",
            fn, server_name(s, host, sizeof host), gsv_data_size(s->opt.call_memory, size, sizeof size), why);
        cost_also(e, lost);
        gsv_log(GSV_LOG_WARN, "executor %d: %s%s", (int)d->pid, e->msg, lost ? "" : "; starting another");
        return GRID_ERR_FAILED;
    }
    if (s->opt.call_memory) {
        char size[32];
        snprintf(mem, sizeof mem, " (a call may allocate at most %s here: --call-memory)",
                 gsv_data_size(s->opt.call_memory, size, sizeof size));
    }
    /* GRID_ERR_CRASHED: no client, transaction or metaserver runs it again elsewhere. */
    gr_seterr(e, GRID_ERR_CRASHED,
              "%s %s on server %s%s; the server is still up; not retried: it would crash again", fn, why,
              server_name(s, host, sizeof host), mem);
    cost_also(e, lost);
    gsv_log(GSV_LOG_WARN, "executor %d: %s%s", (int)d->pid, e->msg, lost ? "" : "; starting another");
    return GRID_ERR_CRASHED;
}

int gsv_exec_call(gsv_server *s, gsv_job *job, int blas, gr_err *e) {
    for (int attempt = 0;; attempt++) {
        xslot *x = take_slot(s, job, e);
        if (!x) return GRID_ERR_BUSY;
        xdeath d;
        int end = gsv_xslot_run(s, x, job, blas, 0, 0, &d, e);
        if (end == XEND_DONE || end == XEND_ARGS) {
            if (end == XEND_DONE) gsv_xslot_shrink(x);
            give_slot(x, 0);
            return end == XEND_DONE ? GRID_OK : e->code;
        }
        give_slot(x, 1);
        /* An executor that died while idle (killed from outside) never saw this call: it
         * runs once more, on the replacement. */
        if (end == XEND_DIED && d.state == GSV_XSTATE_IDLE && attempt == 0) {
            gsv_log(GSV_LOG_WARN, "executor %d died while idle (status %d): replaced", (int)d.pid, d.status);
            continue;
        }
        return gsv_xslot_error(s, job, end, &d, NULL, e);
    }
}
