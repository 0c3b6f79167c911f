/* gsv_data_req.c: the remote data requests on a connection's reader thread: DATA_PUT
 * (elements read straight into a buffer allocated after the limits were checked),
 * DATA_GET, DATA_FREE, SESSION_END and DATA_COPY (whose transfer runs on a thread of its
 * own, gsv_data_copy.c); CALL_DATA goes to gsv_data_call.c. Each names a session, which
 * the connection joins. Put, free and session end are logged at info level. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grp_proto.h"
#include "gsv.h"

const char *gsv_data_elems(uint32_t type) {
    switch (type) {
    case GRD_CHAR: return "chars";
    case GRD_SHORT: return "shorts";
    case GRD_INT: return "ints";
    case GRD_LONG: return "longs";
    case GRD_LONGLONG: return "longlongs";
    case GRD_FLOAT: return "floats";
    case GRD_DOUBLE: return "doubles";
    case GRD_SCOMPLEX: return "scomplex numbers";
    case GRD_DCOMPLEX: return "dcomplex numbers";
    }
    return "elements";
}

static int answer_ok(gsv_conn *c, const grw_header *h) {
    gr_err e;
    grw_writer *w = gsv_reply_lock(c, 0);
    if (!w) return GSV_CLOSE;
    return gsv_reply_unlock(c, grp_write_empty(w, GRP_DATA_OK, h->request_id, &e), &e) ? GSV_CLOSE : GSV_KEEP;
}

static int answer_error(gsv_conn *c, const grw_header *h, const gr_err *e) {
    return gsv_conn_send_error(c, h->request_id, e->code, e->msg) ? GSV_CLOSE : GSV_KEEP;
}

static int on_put(gsv_conn *c, const grw_header *h) {
    gsv_server *s = c->srv;
    gr_err e;
    grp_data_id d;
    uint32_t type;
    uint64_t count;
    if (grp_read_data_put(&c->r, &d, &type, &count, s->opt.limits.max_array, &e))
        return gsv_request_failed(c, h, "DATA_PUT message", &e);
    uint64_t bytes = grp_data_bytes(type, count);
    int guest = 0;
    if (gsv_data_join(c, d.session, 1, &guest, &e) ||
        (guest && gsv_data_has(d.session, d.handle) &&
         gr_seterr(&e, GRID_ERR_ARGS,
                   "data handle %" PRIu64 " exists in this session, which this connection does not own: it "
                   "may add handles there, never replace one",
                   d.handle)) ||
        gsv_data_reserve(bytes, "DATA_PUT", &e)) {
        gsv_log(GSV_LOG_WARN, "data put %s session=%016" PRIx64 " handle=%" PRIu64 " refused: %s", c->peer,
                d.session, d.handle, e.msg);
        return gsv_request_failed(c, h, "DATA_PUT message", &e);
    }
    /* A large array goes where the executors can map it: the calls that name the handle
     * then take it without a copy (gsv_exec.c). */
    void *p = !bytes                                        ? NULL
              : bytes >= GR_SHBUF_MIN && !s->opt.in_process ? gr_shbuf_alloc((size_t)bytes, 1)
                                                            : malloc((size_t)bytes);
    int rc = bytes && !p
                 ? gr_seterr(&e, GRID_ERR_NOMEM, "the server cannot allocate %" PRIu64 " bytes", bytes)
                 : GRID_OK;
    if (!rc) {
        c->r.deadline_ns = gsv_io_deadline(s, bytes);
        rc = grp_read_data_elems(&c->r, type, count, p, &e);
    }
    if (rc) {
        gr_shbuf_free(p);
        gsv_data_unreserve(bytes);
        return gsv_request_failed(c, h, "DATA_PUT message", &e);
    }
    uint64_t held = gsv_data_store(d.session, d.handle, type, count, p, NULL);
    char a[32], b[32];
    gsv_log(GSV_LOG_INFO,
            "data put %s session=%016" PRIx64 " handle=%" PRIu64 " %" PRIu64 " %s (%s), holding %s", c->peer,
            d.session, d.handle, count, gsv_data_elems(type), gsv_data_size(bytes, a, sizeof a),
            gsv_data_size(held, b, sizeof b));
    return answer_ok(c, h);
}

static int on_get(gsv_conn *c, const grw_header *h) {
    gr_err e;
    grp_data_id d;
    if (grp_read_data_get(&c->r, &d, &e)) return gsv_request_failed(c, h, "DATA_GET message", &e);
    if (gsv_data_join(c, d.session, 0, NULL, &e)) return answer_error(c, h, &e);
    gsv_dbuf *b = gsv_data_get(d.session, d.handle);
    if (!b) {
        gsv_data_unknown(d.handle, &e);
        return answer_error(c, h, &e);
    }
    grw_writer *w = gsv_reply_lock(c, b->bytes);
    int rc = w ? gsv_reply_unlock(c, grp_write_data(w, h->request_id, b->type, b->count, b->p, &e), &e) : -1;
    gsv_log(GSV_LOG_DEBUG, "data get %s session=%016" PRIx64 " handle=%" PRIu64 " %" PRIu64 " bytes%s",
            c->peer, d.session, d.handle, b->bytes, rc ? ": not sent" : "");
    gsv_data_release(b);
    return rc ? GSV_CLOSE : GSV_KEEP;
}

static int on_free(gsv_conn *c, const grw_header *h) {
    gr_err e;
    grp_data_id d;
    if (grp_read_data_free(&c->r, &d, &e)) return gsv_request_failed(c, h, "DATA_FREE message", &e);
    if (gsv_data_join(c, d.session, 0, NULL, &e)) return answer_error(c, h, &e);
    int found;
    uint64_t bytes = gsv_data_free(d.session, d.handle, &found), held, reserved;
    gsv_data_usage(&held, &reserved);
    char a[32], b[32];
    gsv_log(GSV_LOG_INFO, "data free %s session=%016" PRIx64 " handle=%" PRIu64 " %s, holding %s", c->peer,
            d.session, d.handle, found ? gsv_data_size(bytes, a, sizeof a) : "(none here)",
            gsv_data_size(held, b, sizeof b));
    return answer_ok(c, h);
}

static int on_session_end(gsv_conn *c, const grw_header *h) {
    gr_err e;
    uint64_t session;
    if (grp_read_session_end(&c->r, &session, &e)) return gsv_request_failed(c, h, "SESSION_END message", &e);
    unsigned n = 0;
    uint64_t bytes = 0;
    /* Another owner's session is left alone, and the answer is the same OK: whoever
     * guesses an id learns nothing. */
    if (gsv_data_may_end(c, session))
        gsv_data_session_end(session, &n, &bytes);
    else
        gsv_log(GSV_LOG_WARN,
                "data session %016" PRIx64 ": SESSION_END from %s, which does not own it: ignored", session,
                c->peer);
    char a[32];
    gsv_log(GSV_LOG_INFO, "data session %016" PRIx64 " ended by %s: freed %u handle%s, %s", session, c->peer,
            n, n == 1 ? "" : "s", gsv_data_size(bytes, a, sizeof a));
    return answer_ok(c, h);
}

static int on_copy(gsv_conn *c, const grw_header *h) {
    gr_err e;
    grp_data_copy m;
    if (grp_read_data_copy(&c->r, &m, &e)) return gsv_request_failed(c, h, "DATA_COPY message", &e);
    if (gsv_data_join(c, m.d.session, 0, NULL, &e)) return answer_error(c, h, &e);
    gsv_dbuf *b = gsv_data_get(m.d.session, m.d.handle);
    if (!b) {
        gsv_data_unknown(m.d.handle, &e);
        return answer_error(c, h, &e);
    }
    if (gsv_data_copy_start(c, h->request_id, &m, b, &e)) return answer_error(c, h, &e);
    return GSV_KEEP;
}

int gsv_data_request(gsv_conn *c, const grw_header *h) {
    switch (h->type) {
    case GRP_DATA_PUT: return on_put(c, h);
    case GRP_DATA_GET: return on_get(c, h);
    case GRP_DATA_FREE: return on_free(c, h);
    case GRP_SESSION_END: return on_session_end(c, h);
    case GRP_DATA_COPY: return on_copy(c, h);
    }
    return gsv_data_call_request(c, h);
}
