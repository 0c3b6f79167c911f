/* gsv_jobs.c: two-phase calls (SUBMIT, FETCH, JOB_STATE, JOBS, FORGET, JOB_INFO): calls
 * the server keeps on disk so that their results outlive the client's connection, the
 * client process and a restart of the server.
 *
 * The job folder (--job-dir, made 0700) holds two files per job, each a whole protocol
 * message as it travels on the wire:
 *   HEX.submit   the SUBMIT (a CALL under another type), written and fsynced before
 *                SUBMITTED is sent: a job the client was told about is never lost;
 *   HEX.result   its RESULT or ERROR (request id 0), written to HEX.result.tmp, fsynced
 *                and renamed: there is a whole reply or none. FETCH sends it as is, its
 *                request id patched, so a fetched result is exactly a CALL's reply.
 *   HEX.owner    who submitted it (grp_session.h: "k:KEYID" or "s:HASH"), written before
 *                the SUBMIT: only that owner (or an admin) may list, fetch, read, cancel
 *                or forget the job; to anyone else it does not exist. A SUBMIT kept
 *                without one (an older server's) is an admin's only.
 * The files' modification times are the submit and finish times. Each owner may keep
 * --job-quota bytes of SUBMITs and results; counted from the folder at start, so a
 * restart does not reset it. At start the folder is
 * read: finished jobs are fetchable, unfinished ones run again, *.tmp files (a write a
 * crash interrupted: never acknowledged) are removed. Finished jobs older than
 * --job-keep are removed by a sweeper thread.
 *
 * A job runs on the worker pool like a call, with no connection: its kind (submit_kind)
 * runs it here, in an executor process as a call's function is. FORGET and JOB_CANCEL
 * of a running job end it as a CANCEL ends a call. A full disk
 * refuses the SUBMIT (GRID_ERR_IO naming the folder); a result the disk refuses is kept
 * in memory (a memfd) so the job stays fetchable until the server stops, and runs again
 * after a restart since its SUBMIT is still on disk. */
#define _GNU_SOURCE
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "grp_proto.h"
#include "gsv.h"

typedef struct gsv_kept {
    grp_job j;                     /* id, function, state, code, times, bytes */
    char owner[GRP_OWNER_MAX + 1]; /* who may reach it ("": an admin only) */
    int storing;      /* its SUBMIT is being written: counted in its owner's quota, not findable */
    uint64_t hash;    /* of the descriptor the SUBMIT was marshalled with */
    int forgotten;    /* FORGET while it was queued or ran: dropped when its run ends */
    int canceled;     /* FORGET or JOB_CANCEL: it must not run (any more) */
    int has_job;      /* a gsv_job whose priv is this one is queued or runs: it outlives it */
    gsv_job *job;     /* that job, while has_job */
    gsv_job *running; /* that job while its function runs (a cancel flags it), else NULL */
    int mem_fd;       /* the reply kept in memory because the disk refused it; -1: on disk */
    struct gsv_kept *next;
} gsv_kept;

static struct {
    gsv_server *s;
    pthread_mutex_t lock;   /* everything below; never held while another lock is taken */
    pthread_cond_t changed; /* a job finished or was forgotten, or the server stops */
    gsv_kept *list;
    char dir[PATH_MAX];
    int dirfd;
    pthread_t sweeper;
    int sweeping;
} st = {NULL, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, "", -1, 0, 0};

static uint64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static uint64_t mtime_ms(const struct stat *sb) {
    return (uint64_t)sb->st_mtim.tv_sec * 1000 + (uint64_t)sb->st_mtim.tv_nsec / 1000000;
}

/* Under st.lock. */
static gsv_kept *find(const char *id) {
    for (gsv_kept *k = st.list; k; k = k->next)
        if (!k->forgotten && !k->storing && strcmp(k->j.id, id) == 0) return k;
    return NULL;
}

/* Under st.lock: job ID if C may reach it. Anyone else's job is answered as one that
 * does not exist, so that its existence is not revealed either. */
static gsv_kept *find_for(const gsv_conn *c, const char *id) {
    gsv_kept *k = find(id);
    return k && gsv_owner_may(c, k->owner) ? k : NULL;
}

/* Under st.lock: bytes OWNER keeps in the folder (its SUBMITs and results). */
static uint64_t owner_bytes(const char *owner) {
    uint64_t n = 0;
    for (gsv_kept *k = st.list; k; k = k->next)
        if (!k->forgotten && strcmp(k->owner, owner) == 0) n += k->j.bytes_in + k->j.bytes_out;
    return n;
}

static void unlink_files(const char *id) {
    char name[GRP_MAX_JOB_ID + 16];
    snprintf(name, sizeof name, "%s.result", id);
    unlinkat(st.dirfd, name, 0);
    snprintf(name, sizeof name, "%s.submit", id);
    unlinkat(st.dirfd, name, 0);
    snprintf(name, sizeof name, "%s.owner", id);
    unlinkat(st.dirfd, name, 0); /* last: a SUBMIT is never left without its owner */
}

/* Under st.lock: takes K out of the list and frees it. */
static void drop(gsv_kept *k) {
    for (gsv_kept **p = &st.list; *p; p = &(*p)->next)
        if (*p == k) {
            *p = k->next;
            break;
        }
    if (k->mem_fd >= 0) close(k->mem_fd);
    free(k);
}

/* ---------------------------------------------------------------- files */

typedef int (*write_fn)(grw_writer *w, void *arg, gr_err *e);

static int make_dirs(const char *path, gr_err *e);

/* Makes (if needed) and opens the job folder. The default folder is made at the first
 * SUBMIT rather than at start-up, so that a server nobody submits to leaves nothing in
 * the home folder; an explicit --job-dir is made at start-up, to fail early. */
static int open_folder(gr_err *e) {
    static pthread_mutex_t folder_lock = PTHREAD_MUTEX_INITIALIZER;
    int rc = GRID_OK;
    pthread_mutex_lock(&folder_lock);
    if (__atomic_load_n(&st.dirfd, __ATOMIC_ACQUIRE) < 0) {
        rc = make_dirs(st.dir, e);
        int fd = rc ? -1 : open(st.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (!rc && fd < 0)
            rc = gr_seterr(e, GRID_ERR_IO, "cannot open the job folder %s: %s (--job-dir)", st.dir,
                           strerror(errno));
        if (!rc) {
            /* Another user could read the kept arguments and results otherwise. */
            struct stat sb;
            if (fstat(fd, &sb) == 0 && (sb.st_mode & 077) && sb.st_uid == geteuid()) fchmod(fd, 0700);
            __atomic_store_n(&st.dirfd, fd, __ATOMIC_RELEASE);
        }
    }
    pthread_mutex_unlock(&folder_lock);
    return rc;
}

/* Writes one message to NAME in the folder: NAME.tmp, fsync, rename, fsync of the
 * folder. Returns GRID_OK (*bytes: its size) or GRID_ERR_IO with *err the errno (E says
 * what failed); nothing is left behind on failure. */
static int store_file(const char *name, write_fn fn, void *arg, uint64_t *bytes, int *err, gr_err *e) {
    if (open_folder(e)) {
        *err = errno;
        return e->code;
    }
    char tmp[GRP_MAX_JOB_ID + 32];
    snprintf(tmp, sizeof tmp, "%s.tmp", name);
    *err = 0;
    int fd = openat(st.dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        *err = errno;
        return gr_seterr(e, GRID_ERR_IO, "cannot create %s/%s: %s", st.dir, tmp, strerror(*err));
    }
    grw_writer *w = malloc(sizeof *w);
    int rc = w ? GRID_OK : gr_seterr(e, GRID_ERR_NOMEM, "out of memory");
    if (!rc) {
        grw_writer_init(w, fd);
        errno = 0;
        rc = fn(w, arg, e);
        if (rc) *err = errno;
    }
    free(w);
    struct stat sb;
    if (!rc && (fsync(fd) != 0 || fstat(fd, &sb) != 0)) {
        *err = errno;
        rc = gr_seterr(e, GRID_ERR_IO, "cannot write %s/%s: %s", st.dir, tmp, strerror(*err));
    }
    if (close(fd) != 0 && !rc) {
        *err = errno;
        rc = gr_seterr(e, GRID_ERR_IO, "cannot write %s/%s: %s", st.dir, tmp, strerror(*err));
    }
    if (!rc && renameat(st.dirfd, tmp, st.dirfd, name) != 0) {
        *err = errno;
        rc = gr_seterr(e, GRID_ERR_IO, "cannot rename %s/%s: %s", st.dir, tmp, strerror(*err));
    }
    if (!rc && fsync(st.dirfd) != 0) {
        *err = errno;
        unlinkat(st.dirfd, name, 0);
        rc = gr_seterr(e, GRID_ERR_IO, "cannot sync %s: %s", st.dir, strerror(*err));
    }
    if (rc) {
        unlinkat(st.dirfd, tmp, 0);
        if (!*err) *err = EIO;
        return rc == GRID_ERR_NOMEM ? rc : GRID_ERR_IO;
    }
    *bytes = (uint64_t)sb.st_size;
    return GRID_OK;
}

/* Writes K's owner to HEX.owner (tmp, fsync, rename; the SUBMIT's store fsyncs the
 * folder after). Returns GRID_OK or GRID_ERR_IO with *err the errno. */
static int store_owner(const gsv_kept *k, int *err, gr_err *e) {
    char name[GRP_MAX_JOB_ID + 16], tmp[GRP_MAX_JOB_ID + 24];
    snprintf(name, sizeof name, "%s.owner", k->j.id);
    snprintf(tmp, sizeof tmp, "%s.owner.tmp", k->j.id);
    *err = 0;
    if (open_folder(e)) {
        *err = errno;
        return e->code;
    }
    int fd = openat(st.dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    size_t n = strlen(k->owner);
    int ok = fd >= 0 && write(fd, k->owner, n) == (ssize_t)n && fsync(fd) == 0;
    if (!ok) *err = errno;
    if (fd >= 0 && close(fd) != 0 && ok) {
        ok = 0;
        *err = errno;
    }
    if (ok && renameat(st.dirfd, tmp, st.dirfd, name) != 0) {
        ok = 0;
        *err = errno;
    }
    if (ok) return GRID_OK;
    unlinkat(st.dirfd, tmp, 0);
    if (!*err) *err = EIO;
    return gr_seterr(e, GRID_ERR_IO, "cannot write %s/%s: %s", st.dir, name, strerror(*err));
}

/* Reads the owner of job ID into OUT ("" when there is none). */
static void load_owner(const char *id, char out[GRP_OWNER_MAX + 1]) {
    char name[GRP_MAX_JOB_ID + 16];
    snprintf(name, sizeof name, "%s.owner", id);
    out[0] = '\0';
    int fd = openat(st.dirfd, name, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    ssize_t n = read(fd, out, GRP_OWNER_MAX);
    close(fd);
    out[n > 0 ? n : 0] = '\0';
    if (n <= 2 || (strncmp(out, "k:", 2) != 0 && strncmp(out, "s:", 2) != 0) || strchr(out, '\n'))
        out[0] = '\0';
}

static int disk_full(int err) {
    return err == ENOSPC || err == EDQUOT;
}

/* ---------------------------------------------------------------- storing a reply */

typedef struct reply_arg {
    gsv_job *job;
    int code;
    const char *msg;
    long long queue_ns, run_ns;
} reply_arg;

static int write_reply(grw_writer *w, void *arg, gr_err *e) {
    reply_arg *a = arg;
    if (a->code) return grp_write_error(w, 0, a->code, a->msg, e);
    grp_result_times t = {(uint64_t)a->queue_ns, (uint64_t)a->run_ns};
    return grp_write_result(w, 0, &t, &a->job->call, &st.s->opt.limits, e);
}

/* Stores K's reply (A) and marks it finished; a reply the disk refuses is kept in a
 * memfd instead. Takes st.lock. A forgotten K is dropped later, by release_kept. */
static void finish(gsv_kept *k, reply_arg *a) {
    char name[GRP_MAX_JOB_ID + 16];
    snprintf(name, sizeof name, "%s.result", k->j.id);
    uint64_t bytes = 0;
    int err = 0, mem_fd = -1;
    gr_err e;
    int rc = store_file(name, write_reply, a, &bytes, &err, &e);
    if (rc) {
        gsv_log(GSV_LOG_WARN,
                "job %s: its result cannot be kept on disk (%s): kept in memory until the server stops; "
                "after a restart the job runs again%s",
                k->j.id, e.msg, disk_full(err) ? " (free space in the job folder)" : "");
        mem_fd = memfd_create("gridrpc-job", MFD_CLOEXEC);
        grw_writer *w = malloc(sizeof *w);
        struct stat sb;
        if (mem_fd >= 0 && w) {
            grw_writer_init(w, mem_fd);
            if (write_reply(w, a, &e) == GRID_OK && fstat(mem_fd, &sb) == 0)
                bytes = (uint64_t)sb.st_size;
            else {
                close(mem_fd);
                mem_fd = -1;
            }
        }
        free(w);
        if (mem_fd < 0) gsv_log(GSV_LOG_ERROR, "job %s: its result is lost: %s", k->j.id, e.msg);
    }
    pthread_mutex_lock(&st.lock);
    k->mem_fd = mem_fd;
    k->j.state = a->code ? GRP_JOB_FAILED : GRP_JOB_DONE;
    k->j.code = a->code;
    k->j.finished_ms = now_ms();
    k->j.bytes_out = bytes;
    pthread_cond_broadcast(&st.changed);
    pthread_mutex_unlock(&st.lock);
}

/* ---------------------------------------------------------------- running */

#define CANCELED_QUEUED "the job was canceled before it started (gridrpc cancel)"

static void fail_kept(gsv_server *s, gsv_job *job, int code, const char *msg);

/* Under st.lock: K must not run, or must stop (FORGET, JOB_CANCEL). */
static void cancel_locked(gsv_kept *k) {
    k->canceled = 1;
    if (k->running) gsv_job_cancel(k->running); /* its executor is ended */
}

/* JOB (of K) is done with K: K is dropped if it was forgotten meanwhile. Frees JOB. */
static void release_kept(gsv_kept *k, gsv_job *job) {
    pthread_mutex_lock(&st.lock);
    k->has_job = 0;
    k->job = k->running = NULL;
    if (k->forgotten) {
        unlink_files(k->j.id);
        drop(k);
    }
    pthread_cond_broadcast(&st.changed);
    pthread_mutex_unlock(&st.lock);
    gsv_job_free(job);
}

/* Runs a submitted JOB on a worker: invokes it, keeps its RESULT (or ERROR) on disk,
 * frees JOB. A job canceled while it was queued is not run. */
static void run_kept(gsv_server *s, gsv_job *job) {
    gsv_kept *k = job->priv;
    pthread_mutex_lock(&st.lock);
    int canceled = k->canceled;
    if (!canceled) {
        k->j.state = GRP_JOB_RUNNING;
        k->running = job;
    }
    pthread_mutex_unlock(&st.lock);
    if (canceled) {
        fail_kept(s, job, GRID_ERR_CANCELED, CANCELED_QUEUED);
        return;
    }
    job->t_started = gr_now_ns();
    long long queue_ns = job->t_started - job->t_queued;
    gr_err e;
    gr_clearerr(&e);
    int rc = gsv_call_invoke(s, job, &e);
    pthread_mutex_lock(&st.lock);
    k->running = NULL;
    pthread_mutex_unlock(&st.lock);
    long long run_ns = gr_now_ns() - job->t_started;
    if (!rc) gsv_work_learn(s, job, run_ns);
    reply_arg a = {job, rc, rc ? e.msg : NULL, queue_ns, run_ns};
    finish(k, &a);
    char peer[GRP_MAX_JOB_ID + 8];
    snprintf(peer, sizeof peer, "job %s", k->j.id);
    gsv_call_log_at(peer, job->fn->qualified, 0, job->bytes_in, rc ? 0 : grp_result_bytes(&job->call),
                    queue_ns, run_ns, job->t_queued, rc, rc ? e.msg : NULL);
    release_kept(k, job);
    atomic_fetch_add(&s->calls_done, 1);
}

/* JOB is not run: a shutdown leaves it to run after the restart; any other CODE is kept
 * as its reply. Frees JOB. */
static void fail_kept(gsv_server *s, gsv_job *job, int code, const char *msg) {
    (void)s;
    gsv_kept *k = job->priv;
    pthread_mutex_lock(&st.lock);
    int forgotten = k->forgotten;
    pthread_mutex_unlock(&st.lock);
    if (code == GRID_ERR_SHUTDOWN) {
        /* Not run: it stays on disk unfinished and runs after the restart. */
        gsv_log(GSV_LOG_INFO, "job %s: not run before the shutdown; it runs when the server starts again",
                k->j.id);
    } else if (!forgotten) {
        reply_arg a = {job, code, msg, 0, 0};
        finish(k, &a);
        gsv_log(GSV_LOG_WARN, "job %s: %s failed: %s", k->j.id, job->fn->qualified, msg);
    }
    release_kept(k, job);
}

/* A submitted job: no connection; its function runs in an executor as a call's does (the
 * result is kept by the server), and what it holds is its gsv_kept, which outlives it
 * (st.list). */
static const gsv_job_kind submit_kind = {.where = GSV_WHERE_ISOLABLE, .run = run_kept, .fail = fail_kept};

/* Loads the kept SUBMIT of K and queues it. Returns GRID_OK, or the error that fails the
 * job (E; the function is gone, or the file cannot be read). */
static int load_and_queue(gsv_server *s, gsv_kept *k, gr_err *e) {
    char name[GRP_MAX_JOB_ID + 16];
    snprintf(name, sizeof name, "%s.submit", k->j.id);
    int fd = openat(st.dirfd, name, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return gr_seterr(e, GRID_ERR_IO, "cannot open %s/%s: %s", st.dir, name, strerror(errno));
    grw_reader *r = malloc(sizeof *r);
    gsv_job *job = NULL;
    int rc = r ? GRID_OK : gr_seterr(e, GRID_ERR_NOMEM, "out of memory");
    grw_header h;
    grp_call_target t;
    if (!rc) {
        grw_reader_init(r, fd, s->opt.limits.max_message);
        rc = grp_read_header(r, &h, e);
    }
    if (!rc && h.type != GRP_SUBMIT)
        rc = gr_seterr(e, GRID_ERR_IO, "%s/%s is not a kept SUBMIT", st.dir, name);
    if (!rc) rc = grp_read_call_target(r, &t, e);
    const gsv_function *f = NULL;
    if (!rc && !(f = gsv_registry_find(&s->reg, t.name, NULL, e)))
        rc = gr_seterr(e, GRID_ERR_NOT_FOUND,
                       "%s is not served here any more (the server restarted without it)", t.name);
    if (!rc && f->desc->hash != t.hash)
        rc = gr_seterr(e, GRID_ERR_STALE, "the interface of %s changed while the job waited to run again",
                       f->qualified);
    if (!rc) {
        job = gsv_job_new(&submit_kind, s, NULL, f, 0);
        if (!job) rc = gr_seterr(e, GRID_ERR_NOMEM, "out of memory");
    }
    if (!rc) {
        job->priv = k;
        rc = grp_read_call_head(r, &job->call, &s->opt.limits, e);
        job->call.share = (unsigned char)gsv_exec_runs(s, job);
        if (!rc) rc = grp_read_call_bulk(r, &job->call, e);
        job->bytes_in = r->consumed;
        if (rc) gr_prefixerr(e, "%s/%s: ", st.dir, name);
    }
    free(r);
    close(fd);
    if (rc) {
        gsv_job_free(job);
        return rc;
    }
    pthread_mutex_lock(&st.lock);
    k->has_job = 1;
    k->job = job;
    pthread_mutex_unlock(&st.lock);
    job->t_queued = gr_now_ns();
    if (gsv_sched_submit(s, job, e) != GRID_OK) {
        fail_kept(s, job, e->code, e->msg);
        return GRID_OK; /* answered */
    }
    return GRID_OK;
}

/* ---------------------------------------------------------------- SUBMIT */

typedef struct submit_arg {
    gsv_job *job;
} submit_arg;

static int write_submit(grw_writer *w, void *arg, gr_err *e) {
    submit_arg *a = arg;
    return grp_write_submit(w, 0, a->job->fn->qualified, a->job->fn->desc->hash, &a->job->call,
                            &st.s->opt.limits, e);
}

/* A job id: 128 bits of the system's CSPRNG, so that nobody can name another's job by
 * guessing (ownership is checked as well: an id alone reaches nothing). */
static int new_id(char *out, gr_err *e) {
    unsigned char b[16];
    if (grp_auth_random(b, sizeof b, e)) return e->code;
    for (size_t i = 0; i < sizeof b; i++)
        snprintf(out + 2 * i, 3, "%02x", b[i]);
    return GRID_OK;
}

int gsv_jobs_submit(gsv_conn *c, const grw_header *h) {
    gsv_server *s = c->srv;
    gr_err e;
    gr_clearerr(&e);
    grp_call_target t;
    if (grp_read_call_target(&c->r, &t, &e)) return gsv_request_failed(c, h, "SUBMIT message", &e);
    const gsv_function *f = gsv_registry_find(&s->reg, t.name, c, &e);
    if (f && t.hash != f->desc->hash)
        gr_seterr(
            &e, GRID_ERR_STALE,
            "the interface of %s changed on the server (descriptor hash %016llx, the client used %016llx): "
            "fetch the descriptor again",
            f->qualified, (unsigned long long)f->desc->hash, (unsigned long long)t.hash);
    else if (f)
        for (uint32_t i = 0; i < f->desc->nparams; i++)
            if (f->desc->params[i].type == GRD_CALLBACK) {
                gr_seterr(
                    &e, GRID_ERR_ARGS,
                    "%s takes a callback ('%s'): a submitted job has no client to call back; use grid_call",
                    f->qualified, f->desc->params[i].name);
                break;
            }
    if (!f || e.code) return gsv_request_failed(c, h, "SUBMIT message", &e);
    if (!st.s) {
        gr_seterr(&e, GRID_ERR_CONFIG, "this server keeps no jobs");
        return gsv_request_failed(c, h, "SUBMIT message", &e);
    }
    if (strncmp(c->owner, "c:", 2) == 0 || !c->owner[0]) {
        gr_seterr(&e, GRID_ERR_CONFIG,
                  "this client sent no session identity in its HELLO (a client older than gridrpcd %s), so "
                  "nobody could fetch the job: upgrade the client, or connect with a key (--key-file)",
                  PACKAGE_VERSION);
        return gsv_request_failed(c, h, "SUBMIT message", &e);
    }
    gsv_job *job = gsv_job_new(&submit_kind, s, NULL, f, 0);
    if (!job) {
        gr_seterr(&e, GRID_ERR_NOMEM, "the server is out of memory: retry later");
        return gsv_request_failed(c, h, "SUBMIT message", &e);
    }
    int rc = gsv_call_read_args(s, c, job, NULL, &e);
    if (rc) {
        gsv_job_free(job);
        return gsv_request_failed(c, h, "SUBMIT message", &e);
    }

    gsv_kept *k = calloc(1, sizeof *k);
    if (!k) {
        gsv_job_free(job);
        return gsv_conn_send_error(c, h->request_id, GRID_ERR_NOMEM,
                                   "the server is out of memory: retry later")
                   ? GSV_CLOSE
                   : GSV_KEEP;
    }
    k->mem_fd = -1;
    if (new_id(k->j.id, &e)) {
        gsv_job_free(job);
        free(k);
        return gsv_conn_send_error(c, h->request_id, e.code, "the server cannot make a job id: retry later")
                   ? GSV_CLOSE
                   : GSV_KEEP;
    }
    snprintf(k->owner, sizeof k->owner, "%s", c->owner);
    snprintf(k->j.function, sizeof k->j.function, "%s", f->qualified);
    k->hash = f->desc->hash;
    k->j.state = GRP_JOB_QUEUED;
    k->j.submitted_ms = now_ms();
    /* The quota: what the owner keeps, and this SUBMIT (about the size it arrived in),
     * reserved under the lock so that two SUBMITs at once cannot both pass. */
    k->storing = 1;
    k->j.bytes_in = job->bytes_in;
    pthread_mutex_lock(&st.lock);
    uint64_t used = owner_bytes(k->owner);
    int over = used + k->j.bytes_in > s->opt.job_quota;
    if (!over) {
        k->next = st.list;
        st.list = k;
    }
    pthread_mutex_unlock(&st.lock);
    if (over) {
        gsv_log(GSV_LOG_WARN,
                "%s: SUBMIT of %s refused: its owner %.20s keeps %llu bytes of jobs, %llu more "
                "would pass --job-quota %llu",
                c->peer, f->qualified, k->owner, (unsigned long long)used, (unsigned long long)k->j.bytes_in,
                (unsigned long long)s->opt.job_quota);
        gsv_job_free(job);
        free(k);
        return gsv_conn_send_error(
                   c, h->request_id, GRID_ERR_LIMIT,
                   "the job was not accepted: the jobs you keep on this server would pass your quota of kept "
                   "arguments and results (gridrpcd --job-quota): fetch the results you need and forget old "
                   "jobs (gridrpc jobs; gridrpc forget ID), or wait until --job-keep removes finished ones")
                   ? GSV_CLOSE
                   : GSV_KEEP;
    }
    char name[GRP_MAX_JOB_ID + 16];
    snprintf(name, sizeof name, "%s.submit", k->j.id);
    submit_arg a = {job};
    int err;
    uint64_t stored = 0;
    rc = store_owner(k, &err, &e);
    if (!rc) rc = store_file(name, write_submit, &a, &stored, &err, &e);
    if (rc) {
        snprintf(name, sizeof name, "%s.owner", k->j.id);
        unlinkat(st.dirfd, name, 0);
        pthread_mutex_lock(&st.lock);
        drop(k); /* not freed twice: drop frees it */
        k = NULL;
        pthread_mutex_unlock(&st.lock);
        char msg[GRP_MAX_ERROR_MESSAGE + 1];
        if (disk_full(err))
            snprintf(
                msg, sizeof msg,
                "the job folder %.1000s is full (%s): the job was not accepted; free space there, shorten "
                "--job-keep, forget finished jobs (gridrpc forget ID), or start gridrpcd with --job-dir on "
                "a larger disk",
                st.dir, strerror(err));
        else
            snprintf(msg, sizeof msg, "the job was not accepted: %.3000s (check the job folder, --job-dir)",
                     e.msg);
        gsv_log(GSV_LOG_WARN, "%s: SUBMIT of %s refused: %s", c->peer, f->qualified, msg);
        gsv_job_free(job);
        return gsv_conn_send_error(c, h->request_id, GRID_ERR_IO, msg) ? GSV_CLOSE : GSV_KEEP;
    }
    job->priv = k;
    pthread_mutex_lock(&st.lock);
    k->has_job = 1;
    k->job = job;
    k->j.bytes_in = stored;
    k->storing = 0;
    pthread_mutex_unlock(&st.lock);
    gsv_log(GSV_LOG_INFO, "%s: job %s submitted: %s (%llu bytes kept)", c->peer, k->j.id, f->qualified,
            (unsigned long long)k->j.bytes_in);

    /* Queued before it is acknowledged: a JOB_CANCEL sent the moment the id arrives finds
     * the job in the queue (taken out) or running (stopped), never between the two, where
     * it could neither take it out nor stop it and the job ran after it was canceled. From
     * the queue on, a worker may end the job and a FORGET drop its record: the id is
     * copied first. */
    char id[GRP_MAX_JOB_ID + 1];
    snprintf(id, sizeof id, "%s", k->j.id);
    job->t_queued = gr_now_ns();
    if (atomic_load(&s->stopping))
        fail_kept(s, job, GRID_ERR_SHUTDOWN, "shutting down");
    else if (gsv_sched_submit(s, job, &e) != GRID_OK)
        fail_kept(s, job, e.code, e.msg);
    grw_writer *w = gsv_reply_lock(c, 0);
    int closing = !w || gsv_reply_unlock(c, grp_write_job_id(w, GRP_SUBMITTED, h->request_id, id, &e), &e);
    return closing ? GSV_CLOSE : GSV_KEEP;
}

/* ---------------------------------------------------------------- FETCH */

static int unknown(gsv_conn *c, const grw_header *h, const char *id) {
    char msg[300];
    snprintf(msg, sizeof msg,
             "no job %s on this server (forgotten, removed after --job-keep, or submitted to another server)",
             id);
    return gsv_conn_send_error(c, h->request_id, GRID_ERR_ARGS, msg) ? GSV_CLOSE : GSV_KEEP;
}

/* Sends the stored reply in FD as the answer to H: the message as kept, its request id
 * replaced. */
static int send_stored(gsv_conn *c, const grw_header *h, const char *id, int fd) {
    gr_err e;
    struct stat sb;
    unsigned char head[28];
    if (fstat(fd, &sb) != 0 || sb.st_size < (off_t)sizeof head ||
        pread(fd, head, sizeof head, 0) != (ssize_t)sizeof head ||
        memcmp(head + 4, "\x47\x52\x50\x43", 4) != 0) { /* GRW_MAGIC after the record mark */
        char msg[1200];
        snprintf(msg, sizeof msg, "the stored result of job %s is damaged (%.1000s/%s.result)", id, st.dir,
                 id);
        return gsv_conn_send_error(c, h->request_id, GRID_ERR_IO, msg) ? GSV_CLOSE : GSV_KEEP;
    }
    size_t chunk = 1 << 20;
    unsigned char *buf = malloc(chunk);
    if (!buf)
        return gsv_conn_send_error(c, h->request_id, GRID_ERR_NOMEM,
                                   "the server is out of memory: retry later")
                   ? GSV_CLOSE
                   : GSV_KEEP;
    grw_writer *w = gsv_reply_lock(c, (uint64_t)sb.st_size);
    if (!w) {
        free(buf);
        return GSV_CLOSE;
    }
    int rc = GRID_OK;
    for (off_t off = 0; off < sb.st_size && !rc;) {
        size_t want = (size_t)(sb.st_size - off) < chunk ? (size_t)(sb.st_size - off) : chunk;
        ssize_t n = pread(fd, buf, want, off);
        if (n <= 0) {
            rc = gr_seterr(&e, GRID_ERR_IO, "reading the stored result of job %s: %s", id,
                           n < 0 ? strerror(errno) : "it was cut short");
            break;
        }
        if (off == 0)
            for (int i = 0; i < 8; i++)
                buf[20 + i] = (unsigned char)(h->request_id >> (56 - 8 * i));
        rc = grw_write_raw(w, buf, (size_t)n, &e);
        off += n;
    }
    free(buf);
    return gsv_reply_unlock(c, rc, &e) ? GSV_CLOSE : GSV_KEEP;
}

/* Under st.lock: an fd reading K's stored reply (the caller closes it), or -1. */
static int open_reply(const gsv_kept *k) {
    if (k->mem_fd >= 0) return fcntl(k->mem_fd, F_DUPFD_CLOEXEC, 0);
    char name[GRP_MAX_JOB_ID + 16];
    snprintf(name, sizeof name, "%s.result", k->j.id);
    return openat(st.dirfd, name, O_RDONLY | O_CLOEXEC);
}

int gsv_jobs_fetch(gsv_conn *c, const grw_header *h) {
    gr_err e;
    char id[GRP_MAX_JOB_ID + 1];
    uint32_t wait_ms;
    if (grp_read_fetch(&c->r, id, &wait_ms, &e)) return gsv_request_failed(c, h, "FETCH message", &e);
    if (wait_ms > GRP_MAX_JOB_WAIT_S * 1000u) wait_ms = GRP_MAX_JOB_WAIT_S * 1000u;
    long long until = gr_now_ns() + (long long)wait_ms * 1000000LL;
    pthread_mutex_lock(&st.lock);
    gsv_kept *k;
    /* Wait in short slices: a shutdown must not wait for a long FETCH. */
    while ((k = find_for(c, id)) && k->j.state < GRP_JOB_DONE && gr_now_ns() < until &&
           !atomic_load(&c->srv->stopping)) {
        long long left = until - gr_now_ns();
        if (left > 200000000LL) left = 200000000LL;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        long long ns = ts.tv_nsec + left;
        ts.tv_sec += (time_t)(ns / 1000000000LL);
        ts.tv_nsec = (long)(ns % 1000000000LL);
        pthread_cond_timedwait(&st.changed, &st.lock, &ts);
    }
    if (!k) {
        pthread_mutex_unlock(&st.lock);
        return unknown(c, h, id);
    }
    grp_job j = k->j;
    int fd = j.state >= GRP_JOB_DONE ? open_reply(k) : -1;
    pthread_mutex_unlock(&st.lock);
    if (j.state < GRP_JOB_DONE) {
        grw_writer *w = gsv_reply_lock(c, 0);
        if (!w) return GSV_CLOSE;
        return gsv_reply_unlock(c, grp_write_job_state(w, h->request_id, &j, &e), &e) ? GSV_CLOSE : GSV_KEEP;
    }
    if (fd < 0) {
        char msg[1300];
        snprintf(msg, sizeof msg, "the stored result of job %s cannot be read (%.1000s/%s.result: %s)", id,
                 st.dir, id, strerror(errno));
        return gsv_conn_send_error(c, h->request_id, GRID_ERR_IO, msg) ? GSV_CLOSE : GSV_KEEP;
    }
    int rc = send_stored(c, h, id, fd);
    close(fd);
    return rc;
}

/* ---------------------------------------------------------------- JOBS, FORGET, JOB_INFO */

int gsv_jobs_list(gsv_conn *c, const grw_header *h) {
    gr_err e;
    if (grp_read_empty(&c->r, &e)) return gsv_request_failed(c, h, "JOBS message", &e);
    pthread_mutex_lock(&st.lock);
    uint32_t n = 0;
    /* The asker's jobs only (every job for an admin). */
#define LISTED(k) (!(k)->forgotten && !(k)->storing && gsv_owner_may(c, (k)->owner))
    for (gsv_kept *k = st.list; k; k = k->next)
        n += LISTED(k);
    if (n > GRP_MAX_JOBS) n = GRP_MAX_JOBS; /* the newest ones: the list is newest first */
    grp_job *v = malloc((n ? n : 1) * sizeof *v);
    uint32_t i = 0;
    for (gsv_kept *k = st.list; v && k && i < n; k = k->next)
        if (LISTED(k)) v[i++] = k->j;
#undef LISTED
    pthread_mutex_unlock(&st.lock);
    if (!v)
        return gsv_conn_send_error(c, h->request_id, GRID_ERR_NOMEM,
                                   "the server is out of memory: retry later")
                   ? GSV_CLOSE
                   : GSV_KEEP;
    grw_writer *w = gsv_reply_lock(c, (uint64_t)n * 600);
    int rc = w ? gsv_reply_unlock(c, grp_write_jobs_ok(w, h->request_id, v, n, &e), &e) : -1;
    free(v);
    return rc ? GSV_CLOSE : GSV_KEEP;
}

int gsv_jobs_forget(gsv_conn *c, const grw_header *h) {
    gr_err e;
    char id[GRP_MAX_JOB_ID + 1];
    if (grp_read_job_id(&c->r, id, &e)) return gsv_request_failed(c, h, "FORGET message", &e);
    pthread_mutex_lock(&st.lock);
    gsv_kept *k = find_for(c, id);
    if (k) {
        unlink_files(id);
        fsync(st.dirfd);
        if (!k->has_job) {
            drop(k);
        } else {
            k->forgotten = 1; /* dropped when its job is done with it */
            cancel_locked(k);
        }
        pthread_cond_broadcast(&st.changed);
    }
    pthread_mutex_unlock(&st.lock);
    if (!k) return unknown(c, h, id);
    gsv_log(GSV_LOG_INFO, "%s: job %s forgotten", c->peer, id);
    grw_writer *w = gsv_reply_lock(c, 0);
    if (!w) return GSV_CLOSE;
    return gsv_reply_unlock(c, grp_write_empty(w, GRP_FORGOTTEN, h->request_id, &e), &e) ? GSV_CLOSE
                                                                                         : GSV_KEEP;
}

/* JOB_CANCEL: a queued job is taken out of the queue and ends canceled; a running one is
 * ended as a CANCEL ends a call. Answered JOB_STATE once it ended, or after CANCEL_WAIT_MS
 * (a function in the server's own process that does not poll runs on). */
#define CANCEL_WAIT_MS 2000

int gsv_jobs_cancel(gsv_conn *c, const grw_header *h) {
    gsv_server *s = c->srv;
    gr_err e;
    char id[GRP_MAX_JOB_ID + 1];
    if (grp_read_job_id(&c->r, id, &e)) return gsv_request_failed(c, h, "JOB_CANCEL message", &e);
    pthread_mutex_lock(&st.lock);
    gsv_kept *k = find_for(c, id);
    gsv_job *queued = NULL;
    if (k && k->j.state < GRP_JOB_DONE && !k->canceled) {
        cancel_locked(k);
        if (k->j.state == GRP_JOB_QUEUED && k->has_job) queued = k->job;
    }
    pthread_mutex_unlock(&st.lock);
    if (!k) return unknown(c, h, id);
    gsv_log(GSV_LOG_INFO, "%s: job %s: cancel asked", c->peer, id);
    /* Still in the queue: out of it, and answered here. Taken by a worker meanwhile:
     * run_kept sees the flag and does the same. */
    if (queued && gsv_sched_take(s, queued, k)) fail_kept(s, queued, GRID_ERR_CANCELED, CANCELED_QUEUED);
    long long deadline = gr_now_ns() + (long long)CANCEL_WAIT_MS * 1000000;
    grp_job j;
    pthread_mutex_lock(&st.lock);
    while ((k = find_for(c, id)) && k->j.state < GRP_JOB_DONE &&
           gr_cond_wait_until(&st.changed, &st.lock, deadline) == 0) {
    }
    if (k) j = k->j;
    pthread_mutex_unlock(&st.lock);
    if (!k) return unknown(c, h, id); /* forgotten meanwhile */
    grw_writer *w = gsv_reply_lock(c, 0);
    if (!w) return GSV_CLOSE;
    return gsv_reply_unlock(c, grp_write_job_state(w, h->request_id, &j, &e), &e) ? GSV_CLOSE : GSV_KEEP;
}

/* JOB_INFO: the job and its SUBMIT's head, copied from the kept file, so that a fetch
 * from a process without the original arguments can size the outputs (and a job whose
 * function is gone still answers). */
int gsv_jobs_info(gsv_conn *c, const grw_header *h) {
    gsv_server *s = c->srv;
    gr_err e;
    gr_clearerr(&e);
    char id[GRP_MAX_JOB_ID + 1];
    if (grp_read_job_id(&c->r, id, &e)) return gsv_request_failed(c, h, "JOB_INFO message", &e);
    pthread_mutex_lock(&st.lock);
    gsv_kept *k = find_for(c, id);
    grp_job j;
    int fd = -1, err = 0;
    if (k) {
        j = k->j;
        char name[GRP_MAX_JOB_ID + 16];
        snprintf(name, sizeof name, "%s.submit", id);
        fd = openat(st.dirfd, name, O_RDONLY | O_CLOEXEC);
        err = errno;
    }
    pthread_mutex_unlock(&st.lock);
    if (!k) return unknown(c, h, id);
    int rc = fd < 0 ? gr_seterr(&e, GRID_ERR_IO, "cannot open the kept SUBMIT of job %s in %.1000s: %s", id,
                                st.dir, strerror(err))
                    : GRID_OK;
    grw_reader *r = malloc(sizeof *r);
    grw_header fh;
    grp_call_target t;
    uint8_t *head = NULL;
    uint32_t len = 0;
    if (!rc && !r) rc = gr_seterr(&e, GRID_ERR_NOMEM, "out of memory");
    if (!rc) {
        grw_reader_init(r, fd, s->opt.limits.max_message);
        rc = grp_read_header(r, &fh, &e);
    }
    if (!rc) rc = grp_read_call_target(r, &t, &e);
    if (!rc) rc = grp_read_submit_head_raw(r, s->opt.limits.max_head, &head, &len, &e);
    free(r);
    if (fd >= 0) close(fd);
    if (rc) {
        free(head);
        if (rc != GRID_ERR_IO && rc != GRID_ERR_NOMEM) gr_prefixerr(&e, "the kept SUBMIT of job %s: ", id);
        return gsv_conn_send_error(c, h->request_id, rc == GRID_ERR_NOMEM ? rc : GRID_ERR_IO, e.msg)
                   ? GSV_CLOSE
                   : GSV_KEEP;
    }
    grw_writer *w = gsv_reply_lock(c, len);
    int out =
        w ? gsv_reply_unlock(c, grp_write_job_info_ok(w, h->request_id, &j, t.hash, head, len, &e), &e) : -1;
    free(head);
    return out ? GSV_CLOSE : GSV_KEEP;
}

/* ---------------------------------------------------------------- start, expiry */

/* Removes the finished jobs older than --job-keep. */
static void sweep(void) {
    uint64_t now = now_ms(), keep = (uint64_t)(st.s->opt.job_keep * 1000);
    pthread_mutex_lock(&st.lock);
    for (gsv_kept *k = st.list, *next; k; k = next) {
        next = k->next;
        if (k->forgotten || k->has_job || k->j.state < GRP_JOB_DONE || k->j.finished_ms + keep > now)
            continue;
        gsv_log(GSV_LOG_INFO, "job %s expired (finished %.1f s ago; --job-keep %g s): removed", k->j.id,
                (double)(now - k->j.finished_ms) / 1000, st.s->opt.job_keep);
        unlink_files(k->j.id);
        drop(k);
    }
    pthread_mutex_unlock(&st.lock);
}

static void *sweeper(void *arg) {
    (void)arg;
    /* Often enough that a job is gone within a quarter of --job-keep (at most a minute
     * late), and at least every 50 ms apart. */
    double period = st.s->opt.job_keep / 4;
    if (period > 60) period = 60;
    if (period < 0.05) period = 0.05;
    pthread_mutex_lock(&st.lock);
    while (!atomic_load(&st.s->stopping)) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        long long ns = ts.tv_nsec + (long long)(period * 1e9);
        ts.tv_sec += (time_t)(ns / 1000000000LL);
        ts.tv_nsec = (long)(ns % 1000000000LL);
        pthread_cond_timedwait(&st.changed, &st.lock, &ts);
        if (atomic_load(&st.s->stopping)) break;
        pthread_mutex_unlock(&st.lock);
        sweep();
        pthread_mutex_lock(&st.lock);
    }
    pthread_mutex_unlock(&st.lock);
    return NULL;
}

/* mkdir -p PATH, the folders it makes 0700. */
static int make_dirs(const char *path, gr_err *e) {
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s", path);
    for (char *q = p + 1;; q++) {
        if (*q != '/' && *q) continue;
        char was = *q;
        *q = '\0';
        if (mkdir(p, 0700) != 0 && errno != EEXIST)
            return gr_seterr(e, GRID_ERR_IO, "cannot create the job folder %s: %s (--job-dir)", p,
                             strerror(errno));
        *q = was;
        if (!was) break;
    }
    return GRID_OK;
}

/* Reads the kept reply of ID: its state and code. */
static void read_reply_state(gsv_kept *k, int fd) {
    grw_reader *r = malloc(sizeof *r);
    grw_header h;
    gr_err e;
    k->j.state = GRP_JOB_DONE;
    if (!r) return;
    grw_reader_init(r, fd, st.s->opt.limits.max_message);
    if (grp_read_header(r, &h, &e) == GRID_OK && h.type == GRP_ERROR) {
        grp_error m;
        k->j.state = GRP_JOB_FAILED;
        k->j.code = grp_read_error(r, &m, &e) == GRID_OK ? m.code : GRID_ERR_IO;
    }
    free(r);
}

/* Reads the folder: finished jobs, unfinished ones (queued again), leftovers removed. */
static void load(gsv_server *s) {
    DIR *d = fdopendir(dup(st.dirfd));
    if (!d) return;
    struct dirent *de;
    unsigned done = 0, again = 0, cap = 0, unowned = 0;
    gsv_kept **rerun = NULL;
    while ((de = readdir(d))) {
        const char *dot = strchr(de->d_name, '.');
        if (!dot) continue;
        if (strstr(de->d_name, ".tmp")) {
            unlinkat(st.dirfd, de->d_name, 0); /* never acknowledged, or a reply to write again */
            continue;
        }
        if (strcmp(dot, ".owner") == 0) {
            /* An owner whose SUBMIT was never written (a crash between the two): removed. */
            char sub[GRP_MAX_JOB_ID + 16];
            struct stat ssb;
            snprintf(sub, sizeof sub, "%.*s.submit", (int)(dot - de->d_name), de->d_name);
            if ((size_t)(dot - de->d_name) <= GRP_MAX_JOB_ID && fstatat(st.dirfd, sub, &ssb, 0) != 0 &&
                errno == ENOENT)
                unlinkat(st.dirfd, de->d_name, 0);
            continue;
        }
        if (strcmp(dot, ".submit") != 0 || (size_t)(dot - de->d_name) > GRP_MAX_JOB_ID) continue;
        char id[GRP_MAX_JOB_ID + 1];
        snprintf(id, sizeof id, "%.*s", (int)(dot - de->d_name), de->d_name);
        struct stat sb;
        if (!grp_job_id_ok(id) || fstatat(st.dirfd, de->d_name, &sb, 0) != 0) continue;
        gsv_kept *k = calloc(1, sizeof *k);
        if (!k) break;
        k->mem_fd = -1;
        snprintf(k->j.id, sizeof k->j.id, "%s", id);
        load_owner(id, k->owner);
        if (!k->owner[0]) unowned++;
        k->j.submitted_ms = mtime_ms(&sb);
        k->j.bytes_in = (uint64_t)sb.st_size;
        k->j.state = GRP_JOB_QUEUED;
        /* The function's name, from the SUBMIT's target. */
        int fd = openat(st.dirfd, de->d_name, O_RDONLY | O_CLOEXEC);
        grw_reader *r = malloc(sizeof *r);
        if (fd >= 0 && r) {
            grw_header h;
            grp_call_target t;
            gr_err e;
            grw_reader_init(r, fd, s->opt.limits.max_message);
            if (grp_read_header(r, &h, &e) == GRID_OK && grp_read_call_target(r, &t, &e) == GRID_OK) {
                snprintf(k->j.function, sizeof k->j.function, "%s", t.name);
                k->hash = t.hash;
            }
        }
        free(r);
        if (fd >= 0) close(fd);
        char name[GRP_MAX_JOB_ID + 16];
        snprintf(name, sizeof name, "%s.result", id);
        fd = openat(st.dirfd, name, O_RDONLY | O_CLOEXEC);
        if (fd >= 0 && fstat(fd, &sb) == 0) {
            k->j.finished_ms = mtime_ms(&sb);
            k->j.bytes_out = (uint64_t)sb.st_size;
            read_reply_state(k, fd);
            done++;
        }
        if (fd >= 0) close(fd);
        if (k->j.state == GRP_JOB_QUEUED) {
            if (again == cap) {
                gsv_kept **v = realloc(rerun, (cap ? 2 * cap : 16) * sizeof *v);
                if (!v) {
                    free(k);
                    break;
                }
                rerun = v;
                cap = cap ? 2 * cap : 16;
            }
            rerun[again++] = k;
        }
        pthread_mutex_lock(&st.lock);
        k->next = st.list;
        st.list = k;
        pthread_mutex_unlock(&st.lock);
    }
    closedir(d);
    gsv_log(GSV_LOG_INFO, "jobs in %s: %u finished, %u to run again (--job-keep %g s)", st.dir, done, again,
            s->opt.job_keep);
    if (unowned)
        gsv_log(GSV_LOG_WARN,
                "%u job%s in %s %s no owner (kept by an older gridrpcd): no client can reach %s; they are "
                "removed after --job-keep",
                unowned, unowned == 1 ? "" : "s", st.dir, unowned == 1 ? "has" : "have",
                unowned == 1 ? "it" : "them");
    /* Queued after the scan: a job that fails at once does not change the folder being read. */
    for (unsigned i = 0; i < again; i++) {
        gr_err e;
        gr_clearerr(&e);
        if (load_and_queue(s, rerun[i], &e) == GRID_OK) {
            gsv_log(GSV_LOG_INFO, "job %s: %s runs again (it had not finished)", rerun[i]->j.id,
                    rerun[i]->j.function);
            continue;
        }
        gsv_log(GSV_LOG_WARN, "job %s cannot run again: %s", rerun[i]->j.id, e.msg);
        reply_arg a = {NULL, e.code ? e.code : GRID_ERR_IO, e.msg, 0, 0};
        finish(rerun[i], &a);
    }
    free(rerun);
}

/* The port listened on (--port 0: the one the system chose). */
static int listening_port(const gsv_server *s) {
    struct sockaddr_storage a;
    socklen_t n = sizeof a;
    if (s->listen_fd < 0 || getsockname(s->listen_fd, (struct sockaddr *)&a, &n) != 0) return s->opt.port;
    if (a.ss_family == AF_INET) return ntohs(((struct sockaddr_in *)&a)->sin_port);
    if (a.ss_family == AF_INET6) return ntohs(((struct sockaddr_in6 *)&a)->sin6_port);
    return s->opt.port;
}

int gsv_jobs_start(gsv_server *s, gr_err *e) {
    st.s = s;
    const char *dir = s->opt.job_dir;
    int port = listening_port(s);
    if (!dir || !*dir) {
        const char *xdg = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
        if (xdg && *xdg == '/')
            snprintf(st.dir, sizeof st.dir, "%s/gridrpc/jobs-%d", xdg, port);
        else if (home && *home)
            snprintf(st.dir, sizeof st.dir, "%s/.local/state/gridrpc/jobs-%d", home, port);
        else
            return gr_seterr(
                e, GRID_ERR_CONFIG,
                "no folder for kept jobs: neither XDG_STATE_HOME nor HOME is set; give --job-dir DIR");
    } else {
        snprintf(st.dir, sizeof st.dir, "%s", dir);
    }
    struct stat sb;
    if (dir && *dir) {
        int rc = open_folder(e);
        if (rc) return rc;
    } else if (stat(st.dir, &sb) == 0) {
        /* A default folder from an earlier run: its jobs are fetchable (or to run again). */
        int rc = open_folder(e);
        if (rc) return rc;
    }
    if (st.dirfd >= 0) load(s);
    sweep();
    if (pthread_create(&st.sweeper, NULL, sweeper, NULL) != 0)
        return gr_seterr(e, GRID_ERR_NOMEM, "cannot start the job sweeper thread");
    st.sweeping = 1;
    return GRID_OK;
}

void gsv_jobs_stop(gsv_server *s) {
    (void)s;
    if (!st.sweeping) return;
    pthread_mutex_lock(&st.lock);
    pthread_cond_broadcast(&st.changed);
    pthread_mutex_unlock(&st.lock);
    pthread_join(st.sweeper, NULL);
    st.sweeping = 0;
}
