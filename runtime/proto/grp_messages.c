/* grp_messages.c: the encoders and decoders of the protocol's small messages (HELLO,
 * HELLO_OK, GET_DESCRIPTOR, DESCRIPTOR, ERROR, PING, PONG, LIST, LIST_OK, CANCEL) and
 * the client's reading of a reply that may be ERROR instead. Bodies are laid out in
 * docs/protocol.md; each field is bounded by grp_limits.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "grp_proto.h"
#include "grw_tls.h"

_Static_assert(GRP_MAX_DESCRIPTOR == GRD_MAX_ENCODED, "a DESCRIPTOR carries one encoded descriptor");
_Static_assert(GRP_MAX_FUNCTION_NAME >= 2 * GRD_MAX_NAME + 1, "\"module/function\" fits a function name");

int grp_known_type(uint32_t type) {
    return (type >= GRP_HELLO && type <= GRP_AUTH_OK) || (type >= GRP_REGISTER && type <= GRP_HOLDS_OK) ||
           (type >= GRP_DATA_PUT && type <= GRP_CALL_DATA) ||
           (type >= GRP_OBJ_CREATE && type <= GRP_OBJ_DESTROYED) || type == GRP_CALLBACK ||
           (type >= GRP_SUBMIT && type <= GRP_JOB_INFO_OK) || type == GRP_CALLBACK_RESULT ||
           type == GRP_JOB_CANCEL;
}

int grp_read_header(grw_reader *r, grw_header *h, gr_err *e) {
    int rc = grw_read_header(r, h, e);
    if (rc) return rc;
    if (!grp_known_type(h->type))
        return gr_seterr(e, GRID_ERR_PROTOCOL,
                         "unknown message type %u (this side speaks protocol version %u)", h->type,
                         GRW_VERSION);
    return GRID_OK;
}

/* ---------------------------------------------------------------- HELLO, HELLO_OK */

int grp_write_hello(grw_writer *w, uint64_t id, const grp_hello *m, gr_err *e) {
    int rc = grw_begin(w, GRP_HELLO, 0, id, e);
    if (!rc) rc = grw_write_string(w, m->client, e);
    if (!rc) rc = grw_write_u32(w, m->min_version, e);
    if (!rc) rc = grw_write_u32(w, m->max_version, e);
    if (!rc) rc = grw_write_string(w, m->token, e);
    if (!rc && m->session_len) {
        if (m->session_len != GRP_SESSION_BYTES)
            return gr_seterr(e, GRID_ERR_INTERNAL, "a session secret of %u bytes", m->session_len);
        rc = grw_write_opaque(w, m->session, m->session_len, e);
    }
    if (!rc) rc = grw_finish(w, e);
    return rc;
}

int grp_read_hello(grw_reader *r, grp_hello *m, gr_err *e) {
    int rc = grw_read_string_buf(r, m->client, GRP_MAX_PEER_NAME, e);
    if (!rc) rc = grw_read_u32(r, &m->min_version, e);
    if (!rc) rc = grw_read_u32(r, &m->max_version, e);
    if (!rc) rc = grw_read_string_buf(r, m->token, GRP_MAX_TOKEN, e);
    /* The session secret came after the token (0.2); a client without it ends here. */
    m->session_len = 0;
    int more = 0;
    if (!rc) rc = grw_more(r, &more, e);
    if (!rc && more) {
        uint8_t *p = NULL;
        uint32_t n = 0;
        rc = grw_read_opaque(r, GRP_SESSION_BYTES, &p, &n, e);
        if (!rc && n != GRP_SESSION_BYTES)
            rc = gr_seterr(e, GRID_ERR_PROTOCOL, "a HELLO session secret must be %d bytes, not %u",
                           GRP_SESSION_BYTES, n);
        if (!rc) {
            memcpy(m->session, p, n);
            m->session_len = n;
        }
        free(p);
    }
    if (!rc) rc = grw_end(r, e);
    return rc;
}

int grp_write_hello_ok(grw_writer *w, uint64_t id, const grp_hello_ok *m, gr_err *e) {
    int rc = grw_begin(w, GRP_HELLO_OK, 0, id, e);
    if (!rc) rc = grw_write_string(w, m->server, e);
    if (!rc) rc = grw_write_u32(w, m->version, e);
    if (!rc) rc = grw_write_u64(w, m->limits.max_message, e);
    if (!rc) rc = grw_write_u64(w, m->limits.max_array, e);
    if (!rc) rc = grw_write_u32(w, m->limits.max_head, e);
    if (!rc) rc = grw_write_u32(w, m->workers, e);
    if (!rc) rc = grw_write_u32(w, m->cores, e);
    if (!rc) rc = grw_finish(w, e);
    return rc;
}

int grp_read_hello_ok(grw_reader *r, grp_hello_ok *m, gr_err *e) {
    int rc = grw_read_string_buf(r, m->server, GRP_MAX_PEER_NAME, e);
    if (!rc) rc = grw_read_u32(r, &m->version, e);
    if (!rc) rc = grw_read_u64(r, &m->limits.max_message, e);
    if (!rc) rc = grw_read_u64(r, &m->limits.max_array, e);
    if (!rc) rc = grw_read_u32(r, &m->limits.max_head, e);
    if (!rc) rc = grw_read_u32(r, &m->workers, e);
    if (!rc) rc = grw_read_u32(r, &m->cores, e);
    if (!rc) rc = grw_end(r, e);
    if (!rc && m->version != GRW_VERSION)
        rc = gr_seterr(e, GRID_ERR_PROTOCOL, "the server chose protocol version %u; this client speaks %u",
                       m->version, GRW_VERSION);
    return rc;
}

/* ---------------------------------------------------------------- descriptors */

int grp_write_get_descriptor(grw_writer *w, uint64_t id, const char *name, gr_err *e) {
    int rc = grw_begin(w, GRP_GET_DESCRIPTOR, 0, id, e);
    if (!rc) rc = grw_write_string(w, name, e);
    if (!rc) rc = grw_finish(w, e);
    return rc;
}

int grp_read_get_descriptor(grw_reader *r, char name[GRP_MAX_FUNCTION_NAME + 1], gr_err *e) {
    int rc = grw_read_string_buf(r, name, GRP_MAX_FUNCTION_NAME, e);
    if (!rc) rc = grw_end(r, e);
    return rc;
}

int grp_write_descriptor(grw_writer *w, uint64_t id, const char *qualified, const void *bytes, uint32_t len,
                         gr_err *e) {
    int rc = grw_begin(w, GRP_DESCRIPTOR, 0, id, e);
    if (!rc) rc = grw_write_string(w, qualified, e);
    if (!rc) rc = grw_write_opaque(w, bytes, len, e);
    if (!rc) rc = grw_finish(w, e);
    return rc;
}

int grp_read_descriptor(grw_reader *r, char qualified[GRP_MAX_FUNCTION_NAME + 1], grd_desc **out, gr_err *e) {
    *out = NULL;
    uint8_t *bytes = NULL;
    uint32_t len = 0;
    int rc = grw_read_string_buf(r, qualified, GRP_MAX_FUNCTION_NAME, e);
    if (!rc) rc = grw_read_opaque(r, GRP_MAX_DESCRIPTOR, &bytes, &len, e);
    if (!rc) rc = grw_end(r, e);
    if (!rc) {
        grd_error ge;
        if (grd_decode(bytes, len, out, &ge) != GRD_OK)
            rc = gr_seterr(e, GRID_ERR_PROTOCOL, "the server sent a bad descriptor for '%s': %s", qualified,
                           ge.msg);
    }
    free(bytes);
    return rc;
}

/* ---------------------------------------------------------------- ERROR */

int grp_write_error(grw_writer *w, uint64_t id, int code, const char *msg, gr_err *e) {
    size_t n = strlen(msg);
    if (n > GRP_MAX_ERROR_MESSAGE) n = GRP_MAX_ERROR_MESSAGE;
    int rc = grw_begin(w, GRP_ERROR, 0, id, e);
    if (!rc) rc = grw_write_i32(w, code, e);
    if (!rc) rc = grw_write_opaque(w, msg, (uint32_t)n, e);
    if (!rc) rc = grw_finish(w, e);
    return rc;
}

int grp_read_error(grw_reader *r, grp_error *m, gr_err *e) {
    uint32_t v;
    m->code = GRID_ERR_PROTOCOL;
    m->message[0] = '\0';
    int rc = grw_read_u32(r, &v, e);
    if (!rc) rc = grw_read_string_buf(r, m->message, GRP_MAX_ERROR_MESSAGE, e);
    if (!rc) rc = grw_end(r, e);
    if (rc) return rc;
    int code = (int)v;
    if (code > GRID_OK && code < GRID_ERROR_COUNT_NP) {
        m->code = code;
    } else {
        /* Not a code of ours: keep what the peer said, but never hand the number on. */
        char said[GRP_MAX_ERROR_MESSAGE + 1];
        memcpy(said, m->message, sizeof said);
        snprintf(m->message, sizeof m->message, "the peer sent an error with unknown code %d: %.3900s", code,
                 said);
    }
    return GRID_OK;
}

/* ---------------------------------------------------------------- empty bodies */

int grp_write_empty(grw_writer *w, uint32_t type, uint64_t id, gr_err *e) {
    int rc = grw_begin(w, type, 0, id, e);
    if (!rc) rc = grw_finish(w, e);
    return rc;
}

int grp_read_empty(grw_reader *r, gr_err *e) {
    return grw_end(r, e);
}

/* ---------------------------------------------------------------- PONG, LIST_OK */

int grp_write_pong(grw_writer *w, uint64_t id, const grp_pong *m, gr_err *e) {
    uint64_t bits;
    memcpy(&bits, &m->loadavg, sizeof bits); /* XDR double: IEEE 754, big-endian */
    int rc = grw_begin(w, GRP_PONG, 0, id, e);
    if (!rc) rc = grw_write_u32(w, m->running, e);
    if (!rc) rc = grw_write_u32(w, m->queued, e);
    if (!rc) rc = grw_write_u32(w, m->workers, e);
    if (!rc) rc = grw_write_u32(w, m->cores, e);
    if (!rc) rc = grw_write_u64(w, bits, e);
    if (!rc) rc = grw_finish(w, e);
    return rc;
}

int grp_read_pong(grw_reader *r, grp_pong *m, gr_err *e) {
    uint64_t bits = 0;
    int rc = grw_read_u32(r, &m->running, e);
    if (!rc) rc = grw_read_u32(r, &m->queued, e);
    if (!rc) rc = grw_read_u32(r, &m->workers, e);
    if (!rc) rc = grw_read_u32(r, &m->cores, e);
    if (!rc) rc = grw_read_u64(r, &bits, e);
    if (!rc) rc = grw_end(r, e);
    memcpy(&m->loadavg, &bits, sizeof bits);
    return rc;
}

int grp_write_list_ok(grw_writer *w, uint64_t id, const char *const *names, uint32_t count, gr_err *e) {
    if (count > GRP_MAX_LIST_COUNT)
        return gr_seterr(e, GRID_ERR_LIMIT, "%u functions exceed the LIST_OK limit of %u", count,
                         GRP_MAX_LIST_COUNT);
    int rc = grw_begin(w, GRP_LIST_OK, 0, id, e);
    if (!rc) rc = grw_write_u32(w, count, e);
    for (uint32_t i = 0; i < count && !rc; i++)
        rc = grw_write_string(w, names[i], e);
    if (!rc) rc = grw_finish(w, e);
    return rc;
}

void grp_free_names(char **names, uint32_t count) {
    if (!names) return;
    for (uint32_t i = 0; i < count; i++)
        free(names[i]);
    free(names);
}

int grp_read_list_ok(grw_reader *r, char ***names, uint32_t *count, gr_err *e) {
    *names = NULL;
    *count = 0;
    uint32_t n;
    int rc = grw_read_u32(r, &n, e);
    if (rc) return rc;
    if (n > GRP_MAX_LIST_COUNT)
        return gr_seterr(e, GRID_ERR_LIMIT, "a list of %u functions exceeds the limit of %u", n,
                         GRP_MAX_LIST_COUNT);
    /* Each entry takes at least 4 bytes: a count the message cannot hold is refused
     * before anything is allocated for it. */
    if ((uint64_t)n * 4 > r->max_message - r->consumed)
        return gr_seterr(e, GRID_ERR_PROTOCOL, "a list of %u functions cannot fit the message", n);
    char **v = calloc(n ? n : 1, sizeof *v);
    if (!v) return gr_seterr(e, GRID_ERR_NOMEM, "out of memory for a list of %u functions", n);
    uint32_t i = 0;
    for (; i < n && !rc; i++)
        rc = grw_read_string(r, GRP_MAX_FUNCTION_NAME, &v[i], e);
    if (!rc) rc = grw_end(r, e);
    if (rc) {
        grp_free_names(v, i);
        return rc;
    }
    *names = v;
    *count = n;
    return GRID_OK;
}

/* ---------------------------------------------------------------- replies */

int grp_expect(grw_reader *r, const grw_header *h, uint32_t expected, const char *what, int *in_step,
               gr_err *e) {
    *in_step = 0;
    if (h->type == expected) return GRID_OK;
    if (h->type == GRP_ERROR) {
        grp_error m;
        int rc = grp_read_error(r, &m, e);
        if (rc) return rc;
        *in_step = m.code != GRID_ERR_PROTOCOL;
        return gr_seterr(e, m.code, "%s", m.message);
    }
    return gr_seterr(e, GRID_ERR_PROTOCOL, "the server answered %s with %s", what, grp_type_name(h->type));
}

void grp_plain_refusal(int fd, long long deadline_ns, gr_err *e) {
    grw_reader *r = malloc(sizeof *r);
    if (r) {
        /* An ERROR is small: a larger message is not a refusal worth reading. */
        grw_reader_init(r, fd, 65536);
        r->deadline_ns = deadline_ns;
        grw_header h;
        gr_err pe;
        grp_error m;
        /* GRID_ERR_PROTOCOL is a plain server's answer to the TLS hello it could not read:
         * E already says that it does not speak TLS. */
        if (grp_read_header(r, &h, &pe) == GRID_OK && h.type == GRP_ERROR &&
            grp_read_error(r, &m, &pe) == GRID_OK && m.code != GRID_ERR_PROTOCOL)
            gr_seterr(e, m.code, "the server refused the connection before TLS: %s", m.message);
        free(r);
    }
}

int grp_dial(const char *host, int port, double timeout, const char *ca_file, struct grw_tls **tls,
             gr_err *e) {
    int plain = -1;
    int fd = grw_dial(host, port, timeout, ca_file, tls, &plain, e);
    if (fd < 0 && plain >= 0) {
        char was[sizeof e->msg];
        snprintf(was, sizeof was, "%s", e->msg);
        grp_plain_refusal(plain, gr_now_ns() + 2000000000LL, e);
        close(plain);
        if (strcmp(was, e->msg) != 0) gr_prefixerr(e, "connecting to %s:%d: ", host, port);
    }
    return fd;
}

const char *grp_type_name(uint32_t type) {
    switch (type) {
    case GRP_HELLO: return "HELLO";
    case GRP_HELLO_OK: return "HELLO_OK";
    case GRP_GET_DESCRIPTOR: return "GET_DESCRIPTOR";
    case GRP_DESCRIPTOR: return "DESCRIPTOR";
    case GRP_CALL: return "CALL";
    case GRP_RESULT: return "RESULT";
    case GRP_ERROR: return "ERROR";
    case GRP_CANCEL: return "CANCEL";
    case GRP_PING: return "PING";
    case GRP_PONG: return "PONG";
    case GRP_LIST: return "LIST";
    case GRP_LIST_OK: return "LIST_OK";
    case GRP_PROBE: return "PROBE";
    case GRP_PROBE_OK: return "PROBE_OK";
    case GRP_AUTH_CHALLENGE: return "AUTH_CHALLENGE";
    case GRP_AUTH: return "AUTH";
    case GRP_AUTH_OK: return "AUTH_OK";
    case GRP_REGISTER: return "REGISTER";
    case GRP_REGISTER_OK: return "REGISTER_OK";
    case GRP_HEARTBEAT: return "HEARTBEAT";
    case GRP_HEARTBEAT_OK: return "HEARTBEAT_OK";
    case GRP_SCHEDULE: return "SCHEDULE";
    case GRP_SCHEDULE_OK: return "SCHEDULE_OK";
    case GRP_REPORT: return "REPORT";
    case GRP_SERVERS: return "SERVERS";
    case GRP_SERVERS_OK: return "SERVERS_OK";
    case GRP_UNREGISTER: return "UNREGISTER";
    case GRP_UNREGISTER_OK: return "UNREGISTER_OK";
    case GRP_CRASHED: return "CRASHED";
    case GRP_CRASHED_OK: return "CRASHED_OK";
    case GRP_HOLDS: return "HOLDS";
    case GRP_HOLDS_OK: return "HOLDS_OK";
    case GRP_DATA_PUT: return "DATA_PUT";
    case GRP_DATA_OK: return "DATA_OK";
    case GRP_DATA_GET: return "DATA_GET";
    case GRP_DATA: return "DATA";
    case GRP_DATA_FREE: return "DATA_FREE";
    case GRP_DATA_COPY: return "DATA_COPY";
    case GRP_SESSION_END: return "SESSION_END";
    case GRP_CALL_DATA: return "CALL_DATA";
    case GRP_SUBMIT: return "SUBMIT";
    case GRP_SUBMITTED: return "SUBMITTED";
    case GRP_FETCH: return "FETCH";
    case GRP_JOB_STATE: return "JOB_STATE";
    case GRP_JOBS: return "JOBS";
    case GRP_JOBS_OK: return "JOBS_OK";
    case GRP_FORGET: return "FORGET";
    case GRP_FORGOTTEN: return "FORGOTTEN";
    case GRP_JOB_INFO: return "JOB_INFO";
    case GRP_JOB_INFO_OK: return "JOB_INFO_OK";
    case GRP_JOB_CANCEL: return "JOB_CANCEL";
    case GRP_OBJ_CREATE: return "OBJ_CREATE";
    case GRP_OBJ_CREATED: return "OBJ_CREATED";
    case GRP_OBJ_INVOKE: return "OBJ_INVOKE";
    case GRP_OBJ_DESTROY: return "OBJ_DESTROY";
    case GRP_OBJ_DESTROYED: return "OBJ_DESTROYED";
    case GRP_CALLBACK: return "CALLBACK";
    case GRP_CALLBACK_RESULT: return "CALLBACK_RESULT";
    }
    return "?";
}

void grp_limits_default(grw_limits *l) {
    l->max_message = GRP_DEFAULT_MAX_MESSAGE;
    l->max_array = GRP_DEFAULT_MAX_ARRAY;
    l->max_head = GRP_DEFAULT_MAX_HEAD;
}
