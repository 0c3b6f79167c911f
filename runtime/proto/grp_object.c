/* grp_object.c: the messages of remote objects (Ninf-G's DefClass): OBJ_CREATE and its
 * reply OBJ_CREATED, OBJ_INVOKE (whose arguments are a CALL's, answered by RESULT) and
 * OBJ_DESTROY (answered by the empty OBJ_DESTROYED). docs/protocol.md has the layouts. */
#include <stdio.h>

#include "grp_proto.h"

void grp_object_id_hex(grp_object_id id, char out[33]) {
    snprintf(out, 33, "%016llx%016llx", (unsigned long long)id.hi, (unsigned long long)id.lo);
}

static int write_oid(grw_writer *w, grp_object_id o, gr_err *e) {
    int rc = grw_write_u64(w, o.hi, e);
    if (!rc) rc = grw_write_u64(w, o.lo, e);
    return rc;
}

static int read_oid(grw_reader *r, grp_object_id *o, gr_err *e) {
    o->hi = o->lo = 0;
    int rc = grw_read_u64(r, &o->hi, e);
    if (!rc) rc = grw_read_u64(r, &o->lo, e);
    return rc;
}

int grp_write_obj_create(grw_writer *w, uint64_t id, const char *cls, gr_err *e) {
    int rc = grw_begin(w, GRP_OBJ_CREATE, 0, id, e);
    if (!rc) rc = grw_write_string(w, cls, e);
    if (!rc) rc = grw_finish(w, e);
    return rc;
}

int grp_read_obj_create(grw_reader *r, char cls[GRP_MAX_FUNCTION_NAME + 1], gr_err *e) {
    int rc = grw_read_string_buf(r, cls, GRP_MAX_FUNCTION_NAME, e);
    if (!rc) rc = grw_end(r, e);
    if (!rc && !cls[0]) rc = gr_seterr(e, GRID_ERR_PROTOCOL, "OBJ_CREATE names no class");
    return rc;
}

int grp_write_obj_created(grw_writer *w, uint64_t id, grp_object_id object, const char *qualified,
                          gr_err *e) {
    int rc = grw_begin(w, GRP_OBJ_CREATED, 0, id, e);
    if (!rc) rc = write_oid(w, object, e);
    if (!rc) rc = grw_write_string(w, qualified, e);
    if (!rc) rc = grw_finish(w, e);
    return rc;
}

int grp_read_obj_created(grw_reader *r, grp_object_id *object, char qualified[GRP_MAX_FUNCTION_NAME + 1],
                         gr_err *e) {
    int rc = read_oid(r, object, e);
    if (!rc) rc = grw_read_string_buf(r, qualified, GRP_MAX_FUNCTION_NAME, e);
    if (!rc) rc = grw_end(r, e);
    if (!rc && grp_object_id_zero(*object))
        rc = gr_seterr(e, GRID_ERR_PROTOCOL, "OBJ_CREATED carries object id 0");
    return rc;
}

int grp_write_obj_invoke(grw_writer *w, uint64_t id, grp_object_id object, const char *method, uint64_t hash,
                         const grm_call *c, const grw_limits *lim, gr_err *e) {
    int rc = grw_begin(w, GRP_OBJ_INVOKE, 0, id, e);
    if (!rc) rc = write_oid(w, object, e);
    if (!rc) rc = grw_write_string(w, method, e);
    if (!rc) rc = grw_write_u64(w, hash, e);
    if (!rc) rc = grm_write_head(w, c, GRM_TO_SERVER, lim, e);
    if (!rc) rc = grm_write_bulk(w, c, GRM_TO_SERVER, e);
    if (!rc) rc = grw_finish(w, e);
    return rc;
}

int grp_read_obj_invoke_target(grw_reader *r, grp_invoke_target *t, gr_err *e) {
    t->hash = 0;
    t->method[0] = '\0';
    int rc = read_oid(r, &t->object, e);
    if (!rc) rc = grw_read_string_buf(r, t->method, GRP_MAX_METHOD_NAME, e);
    if (!rc) rc = grw_read_u64(r, &t->hash, e);
    if (!rc && !t->method[0]) rc = gr_seterr(e, GRID_ERR_PROTOCOL, "OBJ_INVOKE names no method");
    return rc;
}

int grp_write_obj_destroy(grw_writer *w, uint64_t id, grp_object_id object, gr_err *e) {
    int rc = grw_begin(w, GRP_OBJ_DESTROY, 0, id, e);
    if (!rc) rc = write_oid(w, object, e);
    if (!rc) rc = grw_finish(w, e);
    return rc;
}

int grp_read_obj_destroy(grw_reader *r, grp_object_id *object, gr_err *e) {
    int rc = read_oid(r, object, e);
    if (!rc) rc = grw_end(r, e);
    return rc;
}
