/* grc_data_api.c: the public calls of remote data handles (gridrpc.h "Remote data"):
 * each reports its outcome as the thread's last error over the handles of grc_data.c,
 * which the call engine uses too. */
#include "grc_client.h"

static int report(gr_err *e, int rc) {
    e->code = rc;
    grc_report(rc, e->msg);
    return rc;
}

int grid_data_put_np(grid_data_np **h, const char *where, int type, size_t count, const void *buf) {
    gr_err e;
    gr_clearerr(&e);
    return report(&e, grc_data_put(h, where, type, count, buf, &e));
}

int grid_data_new_np(grid_data_np **h, int type, size_t count) {
    gr_err e;
    gr_clearerr(&e);
    if (!h) return report(&e, gr_seterr(&e, GRID_ERR_ARGS, "grid_data_new_np: H is NULL"));
    *h = NULL;
    grc_data *d;
    int rc = grc_data_new(&d, (uint32_t)type, count, &e);
    if (!rc) *h = d;
    return report(&e, rc);
}

int grid_data_get_np(grid_data_np *h, void *buf, size_t count) {
    gr_err e;
    gr_clearerr(&e);
    return report(&e, grc_data_get(h, buf, count, &e));
}

int grid_data_free_np(grid_data_np *h) {
    gr_err e;
    gr_clearerr(&e);
    if (!h) return report(&e, GRID_OK);
    return report(&e, grc_data_free(h, &e));
}

const char *grid_data_where_np(const grid_data_np *h) {
    return grc_data_where(h);
}

int grid_data_info_np(const grid_data_np *h, int *type, size_t *count) {
    gr_err e;
    gr_clearerr(&e);
    return report(&e, grc_data_info(h, type, count, &e));
}

void grid_data_end_session_np(void) {
    grc_data_reset();
}
