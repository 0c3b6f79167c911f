/* gsv_conn.c: what gridrpcd adds to the daemon core's connections (runtime/daemon):
 * a connection knows its server and counts its calls and objects; its requests go to
 * gsv_request.c; it is idle only when nothing of it is in flight; and when it closes,
 * its callbacks, remote objects and data sessions let go of it. */
#include "gsv.h"

static gsv_conn *conn_of(gdm_conn *c) {
    return (gsv_conn *)c; /* the core is its first member */
}

static void opened(gdm_conn *core) {
    gsv_conn *c = conn_of(core);
    c->srv = core->dm->cfg.ctx;
    atomic_init(&c->calls, 0);
    atomic_init(&c->objects, 0);
}

static int serve(gdm_conn *c, const grw_header *h) {
    return gsv_request_serve(conn_of(c), h);
}

static int stalled(gdm_conn *c, const grw_header *h, const char *what, gr_err *e) {
    return gsv_request_failed(conn_of(c), h, what, e);
}

static int busy(gdm_conn *c) {
    return !gsv_conn_is_idle(conn_of(c));
}

static void closed(gdm_conn *core) {
    gsv_conn *c = conn_of(core);
    /* Nobody waits for its calls any more (the client ended, was interrupted or lost
     * the network): their work stops rather than run to an answer nobody reads. */
    for (gsv_job *j = gsv_sched_cancel_conn(c->srv, c), *next; j; j = next) {
        next = j->rnext;
        j->rnext = NULL;
        gsv_call_fail(c->srv, j, GRID_ERR_CANCELED, "the client's connection closed before the call started");
    }
    gsv_callback_conn_closed(c);
    gsv_objects_conn_closed(c); /* its remote objects end with it */
    gsv_data_conn_closed(c);    /* its data sessions lose a connection */
}

void gsv_conn_hooks(gdm_config *cfg) {
    cfg->opened = opened;
    cfg->serve = serve;
    cfg->stalled = stalled;
    cfg->busy = busy;
    cfg->closed = closed;
}
