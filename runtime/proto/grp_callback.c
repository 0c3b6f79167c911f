/* grp_callback.c: the CALLBACK and CALLBACK_RESULT messages (docs/protocol.md). While a
 * call runs, its body may call a function of the client: the server sends CALLBACK
 * with the call's request id, the callback's parameter number, the invocation's
 * sequence number and the callback's IN and INOUT arguments; the client runs its
 * function and answers CALLBACK_RESULT with a code and, on success, the OUT and INOUT
 * arguments. The arguments are marshalled by the callback's own descriptor
 * (grd_callback_desc) exactly as a call's: the client plays the server's part. */
#include <stdio.h>
#include <string.h>

#include "grp_proto.h"

int grp_write_callback(grw_writer *w, uint64_t id, uint32_t index, uint32_t seq, const grm_call *c,
                       const grw_limits *lim, gr_err *e) {
    int rc = grw_begin(w, GRP_CALLBACK, 0, id, e);
    if (!rc) rc = grw_write_u32(w, index, e);
    if (!rc) rc = grw_write_u32(w, seq, e);
    if (!rc) rc = grm_write_head(w, c, GRM_TO_SERVER, lim, e);
    if (!rc) rc = grm_write_bulk(w, c, GRM_TO_SERVER, e);
    if (!rc) rc = grw_finish(w, e);
    return rc;
}

int grp_read_callback_target(grw_reader *r, grp_callback_target *t, gr_err *e) {
    t->index = t->seq = 0;
    int rc = grw_read_u32(r, &t->index, e);
    if (!rc) rc = grw_read_u32(r, &t->seq, e);
    if (!rc && t->index >= GRD_MAX_PARAMS)
        rc = gr_seterr(e, GRID_ERR_PROTOCOL, "CALLBACK names parameter %u, beyond the %u a function may have",
                       t->index + 1, GRD_MAX_PARAMS);
    return rc;
}

int grp_read_callback_args(grw_reader *r, grm_call *c, const grw_limits *lim, gr_err *e) {
    int rc = grm_read_head(r, c, GRM_TO_SERVER, lim, e);
    if (!rc) rc = grm_read_bulk(r, c, GRM_TO_SERVER, e);
    if (!rc) rc = grw_end(r, e);
    return rc;
}

int grp_write_callback_result(grw_writer *w, uint64_t id, uint32_t index, uint32_t seq, int code,
                              const char *msg, const grm_call *c, const grw_limits *lim, gr_err *e) {
    char cut[GRP_MAX_ERROR_MESSAGE + 1];
    snprintf(cut, sizeof cut, "%s", code && msg ? msg : "");
    int rc = grw_begin(w, GRP_CALLBACK_RESULT, 0, id, e);
    if (!rc) rc = grw_write_u32(w, index, e);
    if (!rc) rc = grw_write_u32(w, seq, e);
    if (!rc) rc = grw_write_i32(w, code, e);
    if (!rc) rc = grw_write_string(w, cut, e);
    if (!rc && code == GRID_OK) rc = grm_write_head(w, c, GRM_TO_CLIENT, lim, e);
    if (!rc && code == GRID_OK) rc = grm_write_bulk(w, c, GRM_TO_CLIENT, e);
    if (!rc) rc = grw_finish(w, e);
    return rc;
}

int grp_read_callback_status(grw_reader *r, grp_callback_status *s, gr_err *e) {
    uint32_t v = 0;
    s->index = s->seq = 0;
    s->code = GRID_ERR_PROTOCOL;
    s->message[0] = '\0';
    int rc = grw_read_u32(r, &s->index, e);
    if (!rc) rc = grw_read_u32(r, &s->seq, e);
    if (!rc) rc = grw_read_u32(r, &v, e);
    if (!rc) rc = grw_read_string_buf(r, s->message, GRP_MAX_ERROR_MESSAGE, e);
    if (rc) return rc;
    int code = (int)v;
    if (code < GRID_OK || code >= GRID_ERROR_COUNT_NP)
        return gr_seterr(e, GRID_ERR_PROTOCOL, "CALLBACK_RESULT with unknown code %d", code);
    s->code = code;
    /* A failure carries no arguments: the message must end here. */
    if (code != GRID_OK) return grw_end(r, e);
    return GRID_OK;
}

int grp_read_callback_result_args(grw_reader *r, grm_call *c, gr_err *e) {
    /* As RESULT: the arguments land in buffers the body gave, sized by the callback's
     * extents; the reader's message limit bounds the whole. */
    grw_limits mine;
    grp_limits_default(&mine);
    mine.max_message = r->max_message;
    mine.max_array = (uint64_t)-1 >> 1;
    mine.max_head = 0xffffffffu;
    int rc = grm_read_head(r, c, GRM_TO_CLIENT, &mine, e);
    if (!rc) rc = grm_read_bulk(r, c, GRM_TO_CLIENT, e);
    if (!rc) rc = grw_end(r, e);
    return rc;
}

uint64_t grp_callback_bytes(const grm_call *c, int dir) {
    uint64_t n = GRW_HEADER_BYTES + 16 + 4;
    for (uint32_t i = 0; i < c->desc->nparams; i++) {
        const grd_param *p = &c->desc->params[i];
        if (!grm_travels(p, dir)) continue;
        if (p->type == GRD_STRING || p->type == GRD_FILENAME)
            n += 8 * (p->rank ? c->sl[i].ext.sent : 1);
        else
            n += p->rank ? (c->sl[i].ext.sent_bytes + 3) & ~(uint64_t)3 : 16;
    }
    return n;
}
