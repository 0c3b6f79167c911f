/* gsv_object.c: remote objects (Ninf-G's DefClass) in gridrpcd. The object table maps
 * ids to objects; each object holds its class's state (zero-filled, state_size bytes)
 * and a queue of jobs. OBJ_CREATE, OBJ_INVOKE and OBJ_DESTROY become jobs that run on
 * the workers like calls, but one object's jobs take turns in arrival order: only the
 * object's first job is in the scheduler, so two methods never touch one state at once
 * and no worker ever waits for a turn (no deadlock however few workers there are).
 *
 * Lifetime: an object belongs to the connection that created it. It ends with
 * OBJ_DESTROY or when that connection closes; either way its _finalize runs after the
 * jobs already queued, and its state is freed once its last job is over. Only its
 * owner (the identity of the connection that made it, grp_session.h) or an admin may
 * invoke or destroy it; to anyone else it does not exist. Ids are 128 bits drawn from
 * the system's CSPRNG (never a counter), so knowing one's own ids tells nothing of
 * others'.
 *
 * Where methods run: each object gets an executor process of its own, which holds its
 * state (gsv_exec_actor.c): a method that crashes loses that object and nothing else.
 * Objects of a class with a method whose arguments cannot cross to an executor
 * (gsv_exec_carries), and every object of an --in-process-unsafe server, keep their state
 * here and run their methods in the server's process. One lock (olock) guards the table and every object's
 * queue; it is never held while another lock is taken or a message is written. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "grp_proto.h"
#include "gsv.h"

typedef struct gsv_object {
    grp_object_id id;
    const gsv_class *cls;
    gsv_server *srv;
    gsv_conn *owner; /* not a reference: its objects are unlisted before it closes (under olock) */
    char owner_id[GRP_OWNER_MAX + 1]; /* who may invoke and destroy it (gsv_owner_may) */
    void *state;                      /* in the server's process (in_process), else NULL */
    int in_process;                   /* its methods run here, not in an executor of its own */
    gsv_xactor *actor;                /* its executor (made by its create job; NULL in_process or before) */
    int busy;                         /* one of its jobs is in the scheduler or running */
    int listed;                       /* in the table: it can be invoked and destroyed */
    int jobs;                         /* jobs that exist (queued, scheduled or running) */
    gsv_job *qhead, *qtail;           /* jobs waiting for their turn */
    struct gsv_object *hnext;         /* table chain */
} gsv_object;

#define NBUCKETS 1024

static pthread_mutex_t olock = PTHREAD_MUTEX_INITIALIZER;
static gsv_object *buckets[NBUCKETS];
static unsigned nobjects; /* listed */

unsigned gsv_objects_count(void) {
    pthread_mutex_lock(&olock);
    unsigned n = nobjects;
    pthread_mutex_unlock(&olock);
    return n;
}

static gsv_object *lookup(grp_object_id id);

/* Frees O: its state, or its executor (ended). */
static void object_free(gsv_object *o) {
    gsv_exec_actor_end(o->actor);
    free(o->state);
    free(o);
}

/* olock held: a fresh id, 128 bits from the CSPRNG; all zero when it gives none. */
static grp_object_id new_id(void) {
    grp_object_id none = {0, 0};
    for (int tries = 0; tries < 8; tries++) {
        uint8_t b[16];
        gr_err e;
        if (grp_auth_random(b, sizeof b, &e)) return none;
        grp_object_id id;
        memcpy(&id.hi, b, 8);
        memcpy(&id.lo, b + 8, 8);
        if (!grp_object_id_zero(id) && !lookup(id)) return id;
    }
    return none;
}

static unsigned bucket(grp_object_id id) {
    return (unsigned)((id.hi ^ id.lo) % NBUCKETS);
}

static gsv_object *lookup(grp_object_id id) {
    for (gsv_object *o = buckets[bucket(id)]; o; o = o->hnext)
        if (grp_object_id_eq(o->id, id)) return o;
    return NULL;
}

/* olock held: takes O out of the table (it can no longer be named). */
static void unlist(gsv_object *o) {
    if (!o->listed) return;
    gsv_object **pp = &buckets[bucket(o->id)];
    while (*pp != o)
        pp = &(*pp)->hnext;
    *pp = o->hnext;
    o->listed = 0;
    nobjects--;
    /* A listed object's owner is open: its reader unlists them all before it leaves. */
    if (o->owner) atomic_fetch_sub(&o->owner->objects, 1);
}

static const gsv_job_kind create_kind, invoke_kind, destroy_kind, drop_kind;

/* Hands JOB to the scheduler, or answers it when the server will not take it. */
static void schedule(gsv_server *s, gsv_job *job) {
    gr_err e;
    job->t_queued = gr_now_ns();
    int rc = atomic_load(&s->stopping) ? gr_seterr(&e, GRID_ERR_SHUTDOWN, "the server is shutting down")
                                       : gsv_sched_submit(s, job, &e);
    if (rc == GRID_OK) return;
    if (job->kind == &destroy_kind || job->kind == &drop_kind) {
        /* The object ends anyway: run _finalize here rather than leak its state. */
        job->kind->run(s, job);
        return;
    }
    if (job->kind == &create_kind) {
        /* Never made: the client hears so, and nobody can name the object. */
        pthread_mutex_lock(&olock);
        unlist(job->priv);
        pthread_mutex_unlock(&olock);
    }
    gsv_call_fail(s, job, rc, e.msg);
}

/* Queues JOB for its object: it runs now if the object is idle, else after the jobs
 * before it. An invocation of an object destroyed meanwhile (its owner closed while the
 * request was read) is refused: returns 0 and JOB is not the object's. */
static int submit(gsv_server *s, gsv_job *job) {
    gsv_object *o = job->priv;
    pthread_mutex_lock(&olock);
    if (job->kind == &invoke_kind && !o->listed) {
        pthread_mutex_unlock(&olock);
        job->priv = NULL;
        return 0;
    }
    o->jobs++;
    int now = !o->busy;
    if (now) {
        o->busy = 1;
    } else {
        job->next = NULL;
        if (o->qtail)
            o->qtail->next = job;
        else
            o->qhead = job;
        o->qtail = job;
    }
    pthread_mutex_unlock(&olock);
    if (now) schedule(s, job);
    return 1;
}

/* The job is over (its kind's release): the object's next job gets its turn. */
static void job_done(gsv_job *job) {
    gsv_object *o = job->priv;
    if (!o) return; /* never the object's */
    job->priv = NULL;
    pthread_mutex_lock(&olock);
    o->jobs--;
    gsv_job *next = o->qhead;
    if (next) {
        o->qhead = next->next;
        if (!o->qhead) o->qtail = NULL;
    } else {
        o->busy = 0;
    }
    /* Gone from the table and nothing left to run: the state goes. */
    int last = !o->listed && o->jobs == 0;
    pthread_mutex_unlock(&olock);
    if (next) schedule(o->srv, next);
    if (last) {
        object_free(o);
    }
}

/* A new job of KIND for object O on connection C. */
static gsv_job *new_job(gsv_conn *c, gsv_object *o, const gsv_function *f, const gsv_job_kind *kind,
                        uint64_t request_id) {
    gsv_job *job = gsv_job_new(kind, c->srv, c, f, request_id);
    if (job) job->priv = o;
    return job;
}

static int fail(gsv_conn *c, const grw_header *h, const char *what, gr_err *e) {
    gsv_call_log(c->peer, what, h->request_id, c->r.consumed, 0, 0, 0, e->code, e->msg);
    return gsv_conn_send_error(c, h->request_id, e->code, e->msg) ? GSV_CLOSE : GSV_KEEP;
}

static int on_create(gsv_conn *c, const grw_header *h) {
    gsv_server *s = c->srv;
    gr_err e;
    char name[GRP_MAX_FUNCTION_NAME + 1];
    if (grp_read_obj_create(&c->r, name, &e)) return gsv_request_failed(c, h, "OBJ_CREATE message", &e);
    const gsv_class *cls = gsv_class_find(&s->reg, name, &e);
    if (!cls) return fail(c, h, name, &e);
    if (strncmp(c->owner, "c:", 2) == 0 || !c->owner[0]) {
        /* A client older than 128-bit object ids (it sent no session in HELLO): it would
         * misread OBJ_CREATED's id. */
        gr_seterr(&e, GRID_ERR_CONFIG,
                  "this client is older than this server's remote objects (it sent no session in its "
                  "HELLO and reads 64-bit object ids): upgrade the client (libgridrpc %s or later)",
                  PACKAGE_VERSION);
        return fail(c, h, cls->qualified, &e);
    }
    /* Only this connection's reader creates its objects: the count cannot grow meanwhile. */
    if (atomic_load(&c->objects) >= s->opt.max_objects_per_conn) {
        gr_seterr(&e, GRID_ERR_LIMIT,
                  "this connection already owns %u remote objects, the most the server allows one "
                  "connection (--max-objects-per-connection %u): destroy objects it no longer needs, or "
                  "create them over more connections",
                  atomic_load(&c->objects), s->opt.max_objects_per_conn);
        return fail(c, h, cls->qualified, &e);
    }
    gsv_object *o = calloc(1, sizeof *o);
    /* An object of a class whose methods cannot all cross to an executor lives here. */
    if (o && (o->in_process = !gsv_exec_objects(s, cls)))
        o->state = calloc(1, cls->stub->state_size ? cls->stub->state_size : 1);
    gsv_job *job =
        o && (o->state || !o->in_process) ? new_job(c, o, cls->init, &create_kind, h->request_id) : NULL;
    if (!job) {
        if (o) object_free(o);
        gr_seterr(&e, GRID_ERR_NOMEM, "the server is out of memory for an object of %s: retry later",
                  cls->qualified);
        return fail(c, h, cls->qualified, &e);
    }
    o->cls = cls;
    o->srv = s;
    o->owner = c;
    snprintf(o->owner_id, sizeof o->owner_id, "%s", c->owner);
    pthread_mutex_lock(&olock);
    o->id = new_id();
    if (grp_object_id_zero(o->id)) {
        pthread_mutex_unlock(&olock);
        job->priv = NULL; /* never listed: nothing to unlist */
        gsv_job_free(job);
        object_free(o);
        gr_seterr(&e, GRID_ERR_INTERNAL,
                  "the server cannot make an object id (no random bytes): retry later");
        return fail(c, h, cls->qualified, &e);
    }
    o->hnext = buckets[bucket(o->id)];
    buckets[bucket(o->id)] = o;
    o->listed = 1;
    nobjects++;
    atomic_fetch_add(&c->objects, 1);
    pthread_mutex_unlock(&olock);
    submit(s, job); /* a create is never refused */
    return GSV_KEEP;
}

/* The object ID still listed and C's to use, or NULL with E saying so (the same words
 * for another owner's object as for none). olock held. */
static gsv_object *find_listed(const gsv_conn *c, grp_object_id id, gr_err *e) {
    gsv_object *o = !grp_object_id_zero(id) ? lookup(id) : NULL;
    if (o && !gsv_owner_may(c, o->owner_id)) o = NULL;
    char hex[33];
    grp_object_id_hex(id, hex);
    if (!o)
        gr_seterr(e, GRID_ERR_NOT_FOUND,
                  "object %s does not exist on this server: it was destroyed, or the connection that "
                  "created it closed; create a new object",
                  hex);
    return o;
}

static int on_invoke(gsv_conn *c, const grw_header *h) {
    gsv_server *s = c->srv;
    gr_err e;
    grp_invoke_target t;
    if (grp_read_obj_invoke_target(&c->r, &t, &e)) return gsv_request_failed(c, h, "OBJ_INVOKE message", &e);
    pthread_mutex_lock(&olock);
    gsv_object *o = find_listed(c, t.object, &e);
    const gsv_class *cls = o ? o->cls : NULL;
    if (o) o->jobs++; /* keeps it while this request is read */
    pthread_mutex_unlock(&olock);
    const gsv_function *f = cls ? gsv_class_method(cls, t.method, &e) : NULL;
    if (f && t.hash != f->desc->hash) {
        gr_seterr(
            &e, GRID_ERR_STALE,
            "the interface of %s changed on the server (descriptor hash %016llx, the client used %016llx): "
            "fetch the descriptor again",
            f->qualified, (unsigned long long)f->desc->hash, (unsigned long long)t.hash);
        f = NULL;
    }
    gsv_job *job = f ? new_job(c, o, f, &invoke_kind, h->request_id) : NULL;
    if (f && !job) gr_seterr(&e, GRID_ERR_NOMEM, "the server is out of memory: retry later");
    int rc = job ? GRID_OK : e.code;
    if (!rc && (rc = grp_read_call_head(&c->r, &job->call, &s->opt.limits, &e)) != GRID_OK)
        gsv_limits_name_array(&e);
    if (!rc) rc = gsv_limits_read_call(s, c, job, &e);
    if (job) job->bytes_in = c->r.consumed;
    /* A method's callbacks (gsv_callback.c), read whole first so the stream stays in step. */
    int cbrc = !rc ? gsv_callback_attach(s, job, &e) : GRID_OK;
    if (rc) {
        if (e.code != GRID_ERR_CONN_LOST && e.code != GRID_ERR_TIMEOUT)
            gsv_call_log(c->peer, f ? f->qualified : t.method, h->request_id, c->r.consumed, 0, 0, 0, e.code,
                         e.msg);
        if (job) {
            job->priv = NULL; /* not submitted: only the read's hold is dropped below */
            gsv_job_free(job);
        }
    }
    /* The job holds the object from here (submit counts it); then the read's hold goes,
     * never before: a hold of zero lets the object be freed. */
    if (!rc && cbrc) {
        job->priv = NULL; /* not submitted */
        gsv_call_fail(s, job, e.code, e.msg);
    }
    int queued = !rc && !cbrc && submit(s, job);
    if (!rc && !cbrc && !queued) {
        char hex[33];
        grp_object_id_hex(t.object, hex);
        gr_seterr(&e, GRID_ERR_NOT_FOUND,
                  "object %s was destroyed while this invocation arrived (the connection that created it "
                  "closed): create a new object",
                  hex);
        gsv_call_fail(s, job, e.code, e.msg);
    }
    if (o) {
        pthread_mutex_lock(&olock);
        o->jobs--;
        int last = !o->listed && o->jobs == 0 && !o->busy;
        pthread_mutex_unlock(&olock);
        if (last) {
            object_free(o);
        }
    }
    if (rc) return gsv_request_failed(c, h, "OBJ_INVOKE message", &e);
    return GSV_KEEP;
}

/* Ends O (unlisted by the caller, who also took a hold on it: jobs + 1, so that its
 * last job cannot free it meanwhile): queues its _finalize after its other jobs, then
 * drops the hold. */
static void destroy(gsv_object *o, gsv_conn *c, const gsv_job_kind *kind, uint64_t request_id) {
    gsv_job *job = new_job(c, o, o->cls->final, kind, request_id);
    if (job) {
        submit(o->srv, job); /* a destroy is never refused */
    } else {
        /* No memory for the job: the object still ends, without _finalize. */
        gsv_log(GSV_LOG_ERROR, "out of memory: object of %s destroyed without its _finalize",
                o->cls->qualified);
    }
    pthread_mutex_lock(&olock);
    o->jobs--;
    int last = o->jobs == 0 && !o->busy;
    pthread_mutex_unlock(&olock);
    if (last) {
        object_free(o);
    }
}

static int on_destroy(gsv_conn *c, const grw_header *h) {
    gr_err e;
    grp_object_id id;
    if (grp_read_obj_destroy(&c->r, &id, &e)) return gsv_request_failed(c, h, "OBJ_DESTROY message", &e);
    pthread_mutex_lock(&olock);
    gsv_object *o = find_listed(c, id, &e);
    if (o) {
        unlist(o);
        o->jobs++; /* destroy's hold */
    }
    pthread_mutex_unlock(&olock);
    if (!o) return fail(c, h, "OBJ_DESTROY", &e);
    destroy(o, c, &destroy_kind, h->request_id);
    return GSV_KEEP;
}

gsv_job *gsv_object_cancel(gsv_conn *c, uint64_t request_id) {
    gsv_job *found = NULL;
    pthread_mutex_lock(&olock);
    for (unsigned b = 0; b < NBUCKETS && !found; b++)
        for (gsv_object *o = buckets[b]; o && !found; o = o->hnext)
            for (gsv_job **pp = &o->qhead; *pp; pp = &(*pp)->next) {
                gsv_job *j = *pp;
                if (j->conn != c || j->request_id != request_id || j->kind != &invoke_kind) continue;
                *pp = j->next;
                if (o->qtail == j) {
                    o->qtail = NULL;
                    for (gsv_job *k = o->qhead; k; k = k->next)
                        o->qtail = k;
                }
                /* It never had its turn: the object's running job keeps it alive. */
                o->jobs--;
                j->priv = NULL;
                found = j;
                break;
            }
    pthread_mutex_unlock(&olock);
    return found;
}

unsigned gsv_objects_owned(const gsv_conn *c) {
    return atomic_load(&c->objects);
}

void gsv_objects_conn_closed(gsv_conn *c) {
    for (;;) {
        gsv_object *o = NULL;
        pthread_mutex_lock(&olock);
        for (unsigned b = 0; b < NBUCKETS && !o; b++)
            for (gsv_object *x = buckets[b]; x && !o; x = x->hnext)
                if (x->owner == c) o = x;
        if (o) {
            unlist(o);
            o->jobs++; /* destroy's hold */
        }
        pthread_mutex_unlock(&olock);
        if (!o) return;
        gsv_log(GSV_LOG_DEBUG, "%s: connection closed: destroying its object of %s", c->peer,
                o->cls->qualified);
        destroy(o, c, &drop_kind, 0);
    }
}

int gsv_object_request(gsv_conn *c, const grw_header *h) {
    switch (h->type) {
    case GRP_OBJ_CREATE: return on_create(c, h);
    case GRP_OBJ_INVOKE: return on_invoke(c, h);
    default: return on_destroy(c, h);
    }
}

/* ---- on a worker */

static int reply(gsv_server *s, gsv_job *job, long long queue_ns, long long run_ns, uint64_t *bytes,
                 gr_err *e) {
    gsv_object *o = job->priv;
    *bytes = job->kind == &invoke_kind ? grp_result_bytes(&job->call) : 64;
    /* A failed callback fails the invocation (gsv_callback.c). */
    if (job->kind == &invoke_kind && gsv_callback_failed(job, e)) {
        *bytes = 0;
        gsv_conn_send_error(job->conn, job->request_id, e->code, e->msg);
        return e->code;
    }
    grw_writer *w = gsv_reply_lock(job->conn, *bytes);
    if (!w) return gr_seterr(e, GRID_ERR_CONN_LOST, "the connection was lost before the reply could be sent");
    int rc;
    if (job->kind == &create_kind) {
        rc = grp_write_obj_created(w, job->request_id, o->id, o->cls->qualified, e);
    } else if (job->kind == &destroy_kind) {
        rc = grp_write_empty(w, GRP_OBJ_DESTROYED, job->request_id, e);
    } else {
        grp_result_times t = {(uint64_t)queue_ns, (uint64_t)run_ns};
        rc = grp_write_result(w, job->request_id, &t, &job->call, &s->opt.limits, e);
    }
    gsv_reply_unlock(job->conn, rc, e);
    return rc;
}

/* Runs JOB's method in O's own executor (started by the create job); its error in E.
 * A destroy of an object whose executor is gone has nothing left to finalize. */
static int run_in_actor(gsv_server *s, gsv_object *o, gsv_job *job, gr_err *e) {
    if (job->kind == &create_kind) {
        if (!(o->actor = gsv_exec_actor_start(s, e))) return e->code;
    } else if (!o->actor) {
        /* Its create failed after this job was queued. */
        return job->kind == &invoke_kind
                   ? gr_seterr(e, GRID_ERR_NOT_FOUND,
                               "this object of %s was never made (its creation failed): "
                               "create a new object",
                               o->cls->qualified)
                   : GRID_OK;
    }
    if (!job->fn->stub) return GRID_OK;
    if (job->kind != &invoke_kind && job->kind != &create_kind && gsv_exec_actor_lost(o->actor))
        return GRID_OK;
    /* Flagged by a CANCEL like any running call: the worker ends the executor after a grace. */
    gsv_sched_invoking(s, job, 1);
    int rc = gsv_exec_actor_call(s, o->actor, job, o->cls, e);
    gsv_sched_invoking(s, job, 0);
    return rc;
}

/* Runs an object job on a worker: the method (in the object's executor, or on its state
 * here), then the reply; frees the job. A create that failed unlists its object. */
static void run(gsv_server *s, gsv_job *job) {
    gsv_object *o = job->priv;
    gr_err e;
    gr_clearerr(&e);
    job->t_started = gr_now_ns();
    long long queue_ns = job->t_started - job->t_queued;
    int rc = GRID_OK;
    if (!o->in_process) {
        rc = run_in_actor(s, o, job, &e);
        /* A destroy is the object's last job: its process ends before the answer, so the
         * client may make another object in its place at once (--max-object-processes). */
        if (job->kind == &destroy_kind || job->kind == &drop_kind) {
            gsv_exec_actor_end(o->actor);
            o->actor = NULL;
        }
    } else if (job->fn->stub) {
        /* gridrpc_stub.h: the entry after the last argument is the object's state. */
        job->call.ptr[job->fn->desc->nparams] = o->state;
        gsv_job_invoke(s, job); /* a CANCEL flags it for grpc_is_canceled_np */
    }
    long long run_ns = gr_now_ns() - job->t_started;
    uint64_t bytes = 0;
    if (rc && job->kind == &create_kind) {
        /* Never made: nobody can name it, and its release frees it. */
        pthread_mutex_lock(&olock);
        unlist(o);
        pthread_mutex_unlock(&olock);
    }
    if (rc && job->kind != &drop_kind)
        gsv_conn_send_error(job->conn, job->request_id, rc, e.msg);
    else if (!rc)
        rc = job->kind == &drop_kind ? GRID_OK : reply(s, job, queue_ns, run_ns, &bytes, &e);
    char what[GRP_MAX_FUNCTION_NAME + 56];
    char hex[33];
    grp_object_id_hex(o->id, hex);
    snprintf(what, sizeof what, "%s [object %s]", job->fn->qualified, hex);
    gsv_call_log_at(job->conn->peer, what, job->request_id, job->bytes_in, rc ? 0 : bytes, queue_ns, run_ns,
                    job->t_queued, rc, e.msg);
    gsv_job_free(job);
    atomic_fetch_add(&s->calls_done, 1);
}

static void release(gsv_job *job) {
    gsv_callback_detach(job);
    job_done(job);
}

/* An object's jobs run on the workers (GSV_WHERE_DAEMON): each hands its method to the
 * object's own executor (run_in_actor), or runs it on the state held here. One not run
 * is answered like a call (gsv_call_refuse); its release gives the object's next job its
 * turn. DROP, a destroy nobody asked for (the owner left), has no reply. */
static const gsv_job_kind create_kind = {
    .where = GSV_WHERE_DAEMON, .run = run, .fail = gsv_call_refuse, .release = release};
static const gsv_job_kind invoke_kind = {
    .where = GSV_WHERE_DAEMON, .run = run, .fail = gsv_call_refuse, .release = release};
static const gsv_job_kind destroy_kind = {
    .where = GSV_WHERE_DAEMON, .run = run, .fail = gsv_call_refuse, .release = release};
static const gsv_job_kind drop_kind = {
    .where = GSV_WHERE_DAEMON, .run = run, .fail = gsv_call_refuse, .release = release};
