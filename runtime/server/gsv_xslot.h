/* gsv_xslot.h: the server's handle on one executor process, shared by the pool of
 * executors that run plain calls (gsv_exec.c) and the executors of remote objects, one
 * per object (gsv_exec_actor.c). Private to those two files. */
#ifndef GSV_XSLOT_H
#define GSV_XSLOT_H

#include <sys/types.h>

#include "gsv_exec.h"

typedef struct xslot {
    pid_t pid;
    unsigned seq;                 /* calls handed to this slot's executors: the server's own count */
    int ctl, go, done, pass, mem; /* the server's ends; mem stays across replacements */
    gsv_xregion *x;               /* the server's mapping of the region */
    uint64_t size;                /* its bytes */
    int state;                    /* the pool's XS_* (gsv_exec.c), under its lock */
} xslot;

/* How a call on an executor ended. ARGS: the call failed and the executor is unharmed
 * (the server could not hand the call over, or its strings are more than it sends: E
 * says why); every other end but DONE leaves the executor ended and reaped. */
enum { XEND_DONE, XEND_DIED, XEND_CANCELED, XEND_TIMEOUT, XEND_CPU, XEND_BAD, XEND_ARGS };

/* What an ended executor left: its pid, its wait status, its region's state and fault. */
typedef struct xdeath {
    pid_t pid;
    int status, state, fault;
} xdeath;

/* Makes X's region (no process yet); 0, or -1 with errno. */
int gsv_xslot_init(xslot *x);
/* Starts X's executor on the supervisor thread (its PR_SET_PDEATHSIG follows that thread)
 * and waits until it is ready; 0, or -1 (E: why). */
int gsv_xslot_spawn(xslot *x, gr_err *e);
/* Runs JOB on X's executor with BLAS threads; CLS and METHOD name an object's method
 * (gsv_exec.h's region; 0: a plain function). XEND_DONE with the outputs in JOB's
 * buffers, XEND_ARGS (E), or how the executor ended (D). */
int gsv_xslot_run(gsv_server *s, xslot *x, gsv_job *job, int blas, uint32_t cls, uint32_t method, xdeath *d,
                  gr_err *e);
/* Cuts a region grown by a large call back to its first size. */
void gsv_xslot_shrink(xslot *x);
/* Closes the channel of X's reaped executor (its region stays). */
void gsv_xslot_close(xslot *x);
/* The error, in E, for JOB's call that ended with END (not DONE or ARGS) on the executor
 * D tells of; LOST, when not NULL, is appended (what else the end cost). Its code. */
int gsv_xslot_error(gsv_server *s, const gsv_job *job, int end, const xdeath *d, const char *lost, gr_err *e);

#endif /* GSV_XSLOT_H */
