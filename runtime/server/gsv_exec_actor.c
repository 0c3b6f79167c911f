/* gsv_exec_actor.c: remote objects in executors of their own. An object's state may hold
 * pointers into the memory its methods allocated (a DefState with a double *), so every
 * method of one object must run in one process: OBJ_CREATE starts an executor for the
 * object alone (as Ray starts a worker for an actor), its methods run there one at a
 * time (gsv_object.c keeps their turns), and OBJ_DESTROY ends it after _finalize. A
 * method that crashes, is canceled past its grace or runs past a limit ends the process,
 * and with it the object: that call and every later one of the object fail saying so,
 * and nothing else on the server notices. At most --max-object-processes of them live at
 * once. */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gsv_xslot.h"

struct gsv_xactor {
    xslot x;
    int lost;       /* its executor ended: the state is gone */
    char why[1024]; /* how (the error of the call that ended it) */
};

static atomic_uint live; /* actors started and not yet ended */

gsv_xactor *gsv_exec_actor_start(gsv_server *s, gr_err *e) {
    unsigned max = s->opt.max_object_processes;
    if (atomic_fetch_add(&live, 1) >= max) {
        atomic_fetch_sub(&live, 1);
        gr_seterr(e, GRID_ERR_LIMIT,
                  "this server runs at most %u remote objects at once, each in a process of its own "
                  "(--max-object-processes): destroy objects you no longer need, or try later or another "
                  "server",
                  max);
        return NULL;
    }
    gsv_xactor *a = calloc(1, sizeof *a);
    if (!a || gsv_xslot_init(&a->x)) {
        gr_seterr(e, GRID_ERR_NOMEM, "the server cannot make an object's process memory: %s",
                  a ? strerror(errno) : "out of memory");
        free(a);
        atomic_fetch_sub(&live, 1);
        return NULL;
    }
    if (gsv_xslot_spawn(&a->x, e)) {
        gr_prefixerr(e, "cannot start the object's process: ");
        munmap(a->x.x, (size_t)a->x.size);
        close(a->x.mem);
        free(a);
        atomic_fetch_sub(&live, 1);
        return NULL;
    }
    gsv_log(GSV_LOG_DEBUG, "object executor %d started", (int)a->x.pid);
    return a;
}

int gsv_exec_actor_lost(const gsv_xactor *a) {
    return a->lost;
}

int gsv_exec_actor_call(gsv_server *s, gsv_xactor *a, gsv_job *job, const gsv_class *cls, gr_err *e) {
    if (a->lost) return gr_seterr(e, GRID_ERR_NOT_FOUND, "%s", a->why);
    uint32_t ci = 0;
    while (ci < s->reg.nclasses && s->reg.classes[ci] != cls)
        ci++;
    uint32_t mi = (uint32_t)(job->fn - cls->methods);
    if (ci == s->reg.nclasses || job->fn < cls->methods || mi >= cls->nmethods)
        return gr_seterr(e, GRID_ERR_FAILED, "%s is not a method of %s on this server", job->fn->qualified,
                         cls->qualified);
    xdeath d;
    int end = gsv_xslot_run(s, &a->x, job, 0, ci + 1, mi, &d, e);
    if (end == XEND_DONE) {
        gsv_xslot_shrink(&a->x);
        return GRID_OK;
    }
    if (end == XEND_ARGS) return e->code;
    gsv_xslot_close(&a->x);
    a->lost = 1;
    int rc = gsv_xslot_error(s, job, end, &d, "the object was lost with its process: create a new one", e);
    /* Later calls say what ended it (the first 600 bytes of this call's error). */
    snprintf(a->why, sizeof a->why,
             "this object of %s was lost: its process ended in an earlier call (%.600s): create a new object",
             cls->qualified, e->msg);
    return rc;
}

void gsv_exec_actor_end(gsv_xactor *a) {
    if (!a) return;
    if (!a->lost && a->x.pid > 0) {
        kill(a->x.pid, SIGKILL);
        while (waitpid(a->x.pid, NULL, 0) < 0 && errno == EINTR) {
        }
        gsv_xslot_close(&a->x);
    }
    if (a->x.x) munmap(a->x.x, (size_t)a->x.size);
    if (a->x.mem >= 0) close(a->x.mem);
    free(a);
    atomic_fetch_sub(&live, 1);
}
