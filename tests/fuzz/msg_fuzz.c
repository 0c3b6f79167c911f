/* msg_fuzz.c: fuzz target for every decoder of the protocol layer (grp_proto.h):
 * record-marking framing (grw_reader), CALL decoding on the server side against the
 * descriptors of stubs/test.idl (so every parameter kind is reachable), RESULT decoding
 * on the client side, OBJ_INVOKE like CALL (methods named after test functions), CALLBACK
 * and CALLBACK_RESULT, each small message's decoder (the remote objects' too) and the
 * metaserver's (grp_meta.h), data handles, two-phase jobs (SUBMIT with an odd request id
 * is read as gridrpcd reads its kept copy), with the decoders' promises checked
 * (validated codes, states, counts). The input is fed through a socket, as the server
 * reads it. Limits are small so the fuzzer explores the checks rather than the
 * allocator. tests/fuzz/README.md says where new messages plug in. */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "grd_desc.h"
#include "gridrpc_stub.h"
#include "grm_marshal.h"
#include "grp_auth.h"
#include "grp_meta.h"
#include "grp_proto.h"
#include "grw_wire.h"
#include "fuzz_util.h"

extern const gridrpc_stub_module gridrpc_module_test;

#define MAX_INPUT 60000

static grd_desc *descs[64];
static unsigned ndescs;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void load_descriptors(void) {
    if (ndescs) return;
    for (unsigned i = 0; i < gridrpc_module_test.nfunctions && i < 64; i++) {
        grd_error ge;
        const gridrpc_stub_function *f = &gridrpc_module_test.functions[i];
        if (grd_decode(f->descriptor, f->descriptor_len, &descs[ndescs], &ge) == GRD_OK) ndescs++;
    }
}

static const grd_desc *lookup(const char *name) {
    const char *slash = strchr(name, '/');
    const char *fn = slash ? slash + 1 : name;
    for (unsigned i = 0; i < ndescs; i++)
        if (strcmp(descs[i]->name, fn) == 0) return descs[i];
    return NULL;
}

/* Decodes one CALL body as gridrpcd does. */
static int server_call(grw_reader *r, const grw_limits *lim) {
    gr_err e;
    grp_call_target t;
    int rc = grp_read_call_target(r, &t, &e);
    if (rc) return rc;
    const grd_desc *d = lookup(t.name);
    if (!d) return grw_skip(r, &e);
    grm_call *c = malloc(grm_call_size(d->nparams));
    grm_init(c, d, GRM_SERVER_SIDE);
    rc = grp_read_call_head(r, c, lim, &e);
    if (!rc) rc = grp_read_call_bulk(r, c, &e);
    grm_release(c);
    free(c);
    return rc;
}

/* Reads SUBMIT as gridrpcd's JOB_INFO reads the copy it kept of one: the target, then
 * the head as bytes (their length bounded by max_head), the rest skipped. */
static int kept_submit(grw_reader *r, const grw_limits *lim) {
    gr_err e;
    grp_call_target t;
    uint8_t *head;
    uint32_t len;
    int rc = grp_read_call_target(r, &t, &e);
    if (rc) return rc;
    rc = grp_read_submit_head_raw(r, lim->max_head, &head, &len, &e);
    if (!rc && (len > lim->max_head || (len && !head))) abort();
    free(head);
    return rc ? rc : grw_skip(r, &e);
}

/* Decodes one OBJ_INVOKE body as gridrpcd does: the target, then (for a method named
 * after a test function, so every parameter kind is reachable) a CALL's arguments. */
static int server_invoke(grw_reader *r, const grw_limits *lim) {
    gr_err e;
    grp_invoke_target t;
    int rc = grp_read_obj_invoke_target(r, &t, &e);
    if (rc) return rc;
    if (!t.method[0] || strlen(t.method) > GRP_MAX_METHOD_NAME) abort(); /* promised */
    const grd_desc *d = lookup(t.method);
    if (!d) return grw_skip(r, &e);
    grm_call *c = malloc(grm_call_size(d->nparams));
    grm_init(c, d, GRM_SERVER_SIDE);
    rc = grp_read_call_head(r, c, lim, &e);
    if (!rc) rc = grp_read_call_bulk(r, c, &e);
    grm_release(c);
    free(c);
    return rc;
}

/* Decodes one CALL_DATA body as gridrpcd does: the target and refs (their promised
 * checks), the descriptor checks, the skip masks, then the arguments with every IN ref's
 * array bound to a buffer of the full size (a handle's). */
static int server_call_data(grw_reader *r, const grw_limits *lim) {
    gr_err e;
    grp_call_data_target t;
    int rc = grp_read_call_data_target(r, &t, &e);
    if (rc) return rc;
    if (t.session == 0 || t.nrefs > GRP_MAX_REFS) abort();
    for (uint32_t k = 0; k < t.nrefs; k++)
        if (t.refs[k].handle == 0 || t.refs[k].flags == 0 || (t.refs[k].flags & ~(uint32_t)GRP_REF_ALL) ||
            t.refs[k].param >= GRD_MAX_PARAMS || (k && t.refs[k].param <= t.refs[k - 1].param))
            abort();
    const grd_desc *d = lookup(t.name);
    if (!d || grp_refs_check(d, t.name, t.refs, t.nrefs, &e)) return grw_skip(r, &e);
    grm_call *c = malloc(grm_call_size(d->nparams));
    grm_init(c, d, GRM_SERVER_SIDE);
    grp_refs_skip(t.refs, t.nrefs, c->skip);
    void *bound[GRP_MAX_REFS] = {0};
    rc = grp_read_call_head(r, c, lim, &e);
    for (uint32_t k = 0; !rc && k < t.nrefs; k++) {
        if (!(t.refs[k].flags & GRP_REF_IN)) continue;
        bound[k] = calloc(1, (size_t)c->sl[t.refs[k].param].ext.bytes + 1);
        c->ptr[t.refs[k].param] = bound[k];
    }
    if (!rc) rc = grp_read_call_bulk(r, c, &e);
    grm_release(c);
    for (uint32_t k = 0; k < t.nrefs; k++)
        free(bound[k]);
    free(c);
    return rc;
}

/* Decodes DATA_PUT (server) or DATA (client): the elements land in a buffer allocated
 * only after the decoder's checks, of exactly the bytes it promised. */
static int data_message(grw_reader *r, uint32_t type, const grw_limits *lim) {
    gr_err e;
    grp_data_id d = {0, 0};
    uint32_t t;
    uint64_t n;
    int rc = type == GRP_DATA_PUT ? grp_read_data_put(r, &d, &t, &n, lim->max_array, &e)
                                  : grp_read_data(r, &t, &n, lim->max_array, &e);
    if (rc) return rc;
    if (type == GRP_DATA_PUT && (d.session == 0 || d.handle == 0)) abort();
    uint64_t bytes = grp_data_bytes(t, n);
    if (!grp_data_type_ok(t) || bytes > lim->max_array || (n && !bytes)) abort();
    void *buf = malloc((size_t)bytes + 1);
    rc = grp_read_data_elems(r, t, n, buf, &e);
    free(buf);
    return rc;
}

/* Decodes one RESULT body as the client does for test/echo_double(5, in, out) (even
 * request ids), test/echo_strings(3, in, out) (odd ones) and test/file_upper(in, out)
 * (2 modulo 4: the file received is written in a folder of our own, then removed). */
static int client_result(grw_reader *r, const grw_limits *lim, uint64_t id) {
    gr_err e;
    int which = id % 4 == 2 ? 2 : (int)(id & 1);
    const grd_desc *d = lookup(which == 2 ? "file_upper" : which ? "echo_strings" : "echo_double");
    if (!d) return grw_skip(r, &e);
    grm_call *c = malloc(grm_call_size(d->nparams));
    grm_init(c, d, GRM_CLIENT_SIDE);
    int n = which ? 3 : 5;
    double din[5] = {0}, dout[5] = {0};
    char *sin[3] = {"a", "b", "c"}, *sout[3] = {NULL, NULL, NULL};
    char out_path[600], *fin = "unused", *fout = out_path;
    if (which == 2) {
        snprintf(out_path, sizeof out_path, "%s/out", fuzz_tmpdir());
        c->ptr[0] = &fin;
        c->ptr[1] = &fout;
    } else {
        c->sl[0].val.i = n;
        c->ptr[1] = which ? (void *)sin : (void *)din;
        c->ptr[2] = which ? (void *)sout : (void *)dout;
    }
    grp_result_times t;
    int rc = grm_prepare(c, lim, &e);
    if (!rc) rc = grp_read_result(r, c, &t, &e);
    if (which == 2) unlink(out_path);
    for (int i = 0; i < 3; i++)
        free(sout[i]);
    free(c);
    return rc;
}

/* Decodes CALLBACK as the client does, and CALLBACK_RESULT as the server does, with
 * test/echo_double's descriptor standing for a callback's own (grd_callback_desc makes
 * an ordinary descriptor); the status's code must come out validated. */
static int callback_message(grw_reader *r, uint32_t type, const grw_limits *lim) {
    gr_err e;
    const grd_desc *d = lookup("echo_double");
    if (!d) return grw_skip(r, &e);
    grm_call *c = malloc(grm_call_size(d->nparams));
    int rc;
    if (type == GRP_CALLBACK) {
        grp_callback_target t;
        grm_init(c, d, GRM_SERVER_SIDE);
        rc = grp_read_callback_target(r, &t, &e);
        if (!rc && t.index >= GRD_MAX_PARAMS) abort();
        if (!rc) rc = grp_read_callback_args(r, c, lim, &e);
        grm_release(c);
    } else {
        grp_callback_status st;
        double din[5] = {0}, dout[5] = {0};
        grm_init(c, d, GRM_CLIENT_SIDE);
        c->sl[0].val.i = 5;
        c->ptr[1] = din;
        c->ptr[2] = dout;
        rc = grm_prepare(c, lim, &e);
        if (!rc) rc = grp_read_callback_status(r, &st, &e);
        if (!rc && (st.code < GRID_OK || st.code >= GRID_ERROR_COUNT_NP)) abort();
        if (!rc && st.code == GRID_OK) rc = grp_read_callback_result_args(r, c, &e);
    }
    free(c);
    return rc;
}

/* Decodes the metaserver's messages and the probe; aborts when a decoder lets through
 * what it promises to refuse. */
static int meta_message(grw_reader *r, uint32_t type) {
    gr_err e;
    switch (type) {
    case GRP_REGISTER: {
        grp_register m;
        int rc = grp_read_register(r, &m, &e);
        if (!rc && (m.nfunctions > GRP_MAX_FUNCTIONS || m.port == 0 || m.port > 65535 || !(m.speed >= 0)))
            abort();
        for (uint32_t i = 0; !rc && i < m.nfunctions; i++)
            if (m.functions[i].flags & ~GRP_FN_NO_RETRY) abort();
        grp_register_free(&m);
        return rc;
    }
    case GRP_REGISTER_OK: {
        grp_register_ok m;
        return grp_read_register_ok(r, &m, &e);
    }
    case GRP_HEARTBEAT: {
        grp_heartbeat m;
        return grp_read_heartbeat(r, &m, &e);
    }
    case GRP_SCHEDULE: {
        grp_schedule m;
        int rc = grp_read_schedule(r, &m, &e);
        if (!rc && (m.policy >= GRP_POLICY_COUNT || m.nexclude > GRP_MAX_EXCLUDE || !(m.flops >= 0))) abort();
        return rc;
    }
    case GRP_SCHEDULE_OK: {
        grp_schedule_ok m;
        return grp_read_schedule_ok(r, &m, &e);
    }
    case GRP_REPORT: {
        grp_report m;
        int rc = grp_read_report(r, &m, &e);
        if (!rc && (m.code < GRID_OK || m.code >= GRID_ERROR_COUNT_NP)) abort();
        return rc;
    }
    case GRP_UNREGISTER: {
        uint64_t id;
        return grp_read_unregister(r, &id, &e);
    }
    case GRP_SERVERS: {
        char site[GRP_MAX_SITE + 1];
        return grp_read_servers(r, site, &e);
    }
    case GRP_SERVERS_OK: {
        grp_server_info *v;
        uint32_t n;
        int rc = grp_read_servers_ok(r, &v, &n, &e);
        for (uint32_t i = 0; !rc && i < n; i++)
            if (v[i].state > GRP_SERVER_UP || v[i].nfunctions > GRP_MAX_FUNCTIONS) abort();
        grp_servers_free(v, n);
        return rc;
    }
    case GRP_CRASHED: {
        grp_crashed m;
        int rc = grp_read_crashed(r, &m, &e);
        if (!rc && (!m.function[0] || strlen(m.what) > GRP_MAX_CRASH_WHAT)) abort();
        return rc;
    }
    case GRP_HOLDS_OK: {
        grp_hold *v;
        uint32_t n;
        int rc = grp_read_holds_ok(r, &v, &n, &e);
        if (!rc && n > GRP_MAX_HOLDS) abort();
        for (uint32_t i = 0; !rc && i < n; i++)
            if (strlen(v[i].servers) > GRP_MAX_HOLD_SERVERS || strlen(v[i].what) > GRP_MAX_CRASH_WHAT)
                abort();
        if (!rc) free(v);
        return rc;
    }
    case GRP_PROBE: {
        uint32_t len, reply;
        return grp_read_probe(r, &len, &reply, &e);
    }
    case GRP_PROBE_OK: {
        uint32_t len;
        return grp_read_probe_ok(r, &len, &e);
    }
    case GRP_OBJ_CREATE: {
        char cls[GRP_MAX_FUNCTION_NAME + 1];
        int rc = grp_read_obj_create(r, cls, &e);
        if (!rc && !cls[0]) abort();
        return rc;
    }
    case GRP_OBJ_CREATED: {
        char q[GRP_MAX_FUNCTION_NAME + 1];
        grp_object_id id;
        int rc = grp_read_obj_created(r, &id, q, &e);
        if (!rc && grp_object_id_zero(id)) abort();
        return rc;
    }
    case GRP_OBJ_DESTROY: {
        grp_object_id id;
        return grp_read_obj_destroy(r, &id, &e);
    }
    case GRP_DATA_GET:
    case GRP_DATA_FREE: {
        grp_data_id d;
        int rc = type == GRP_DATA_GET ? grp_read_data_get(r, &d, &e) : grp_read_data_free(r, &d, &e);
        if (!rc && (d.session == 0 || d.handle == 0)) abort();
        return rc;
    }
    case GRP_DATA_COPY: {
        grp_data_copy m;
        int rc = grp_read_data_copy(r, &m, &e);
        if (!rc && (m.d.session == 0 || m.d.handle == 0 || !m.host[0] || m.port == 0 || m.port > 65535))
            abort();
        return rc;
    }
    case GRP_SESSION_END: {
        uint64_t session;
        int rc = grp_read_session_end(r, &session, &e);
        if (!rc && session == 0) abort();
        return rc;
    }
    }
    return grp_read_empty(r, &e);
}

/* A decoded job must be what grp_jobs.c promises: a well-formed id, a known state, an
 * error code exactly when it failed. */
static void check_job(const grp_job *j) {
    if (!grp_job_id_ok(j->id) || j->state < GRP_JOB_QUEUED || j->state > GRP_JOB_FAILED) abort();
    if (j->state == GRP_JOB_FAILED ? (j->code <= GRID_OK || j->code >= GRID_ERROR_COUNT_NP)
                                   : j->code != GRID_OK)
        abort();
}

/* Decodes the messages of two-phase calls (SUBMIT is read as CALL by the caller). */
static int job_message(grw_reader *r, uint32_t type, const grw_limits *lim) {
    gr_err e;
    char job[GRP_MAX_JOB_ID + 1];
    switch (type) {
    case GRP_SUBMITTED:
    case GRP_FORGET:
    case GRP_JOB_INFO:
    case GRP_JOB_CANCEL: {
        int rc = grp_read_job_id(r, job, &e);
        if (!rc && !grp_job_id_ok(job)) abort();
        return rc;
    }
    case GRP_FETCH: {
        uint32_t wait;
        int rc = grp_read_fetch(r, job, &wait, &e);
        if (!rc && !grp_job_id_ok(job)) abort();
        return rc;
    }
    case GRP_JOB_STATE: {
        grp_job j;
        int rc = grp_read_job_state(r, &j, &e);
        if (!rc) check_job(&j);
        return rc;
    }
    case GRP_JOBS_OK: {
        grp_job *v;
        uint32_t n;
        int rc = grp_read_jobs_ok(r, &v, &n, &e);
        if (!rc && n > GRP_MAX_JOBS) abort();
        for (uint32_t i = 0; !rc && i < n; i++)
            check_job(&v[i]);
        free(v);
        return rc;
    }
    case GRP_JOB_INFO_OK: {
        grp_job j;
        uint64_t hash;
        int rc = grp_read_job_info_ok(r, &j, &hash, &e);
        if (rc) return rc;
        check_job(&j);
        const grd_desc *d = lookup(j.function);
        if (!d) return grw_skip(r, &e);
        grm_call *c = malloc(grm_call_size(d->nparams));
        grm_init(c, d, GRM_SERVER_SIDE);
        rc = grp_read_job_info_head(r, c, lim, &e);
        grm_release(c);
        free(c);
        return rc;
    }
    }
    return grp_read_empty(r, &e);
}

/* Decodes the small messages with their own decoders. */
static int small_message(grw_reader *r, uint32_t type) {
    gr_err e;
    switch (type) {
    case GRP_HELLO: {
        grp_hello m;
        return grp_read_hello(r, &m, &e);
    }
    case GRP_HELLO_OK: {
        grp_hello_ok m;
        return grp_read_hello_ok(r, &m, &e);
    }
    case GRP_GET_DESCRIPTOR: {
        char name[GRP_MAX_FUNCTION_NAME + 1];
        return grp_read_get_descriptor(r, name, &e);
    }
    case GRP_DESCRIPTOR: {
        char name[GRP_MAX_FUNCTION_NAME + 1];
        grd_desc *d = NULL;
        int rc = grp_read_descriptor(r, name, &d, &e);
        grd_free(d);
        return rc;
    }
    case GRP_ERROR: {
        grp_error m;
        int rc = grp_read_error(r, &m, &e);
        if (!rc && (m.code <= GRID_OK || m.code >= GRID_ERROR_COUNT_NP)) abort(); /* must be validated */
        return rc;
    }
    case GRP_PONG: {
        grp_pong m;
        return grp_read_pong(r, &m, &e);
    }
    case GRP_LIST_OK: {
        char **names;
        uint32_t n;
        int rc = grp_read_list_ok(r, &names, &n, &e);
        grp_free_names(names, n);
        return rc;
    }
    /* The key handshake (grp_auth.c). */
    case GRP_AUTH_CHALLENGE: {
        grp_auth_challenge ch;
        return grp_read_auth_challenge(r, &ch, &e);
    }
    case GRP_AUTH: {
        grp_auth m;
        return grp_read_auth(r, &m, &e);
    }
    case GRP_AUTH_OK: {
        uint8_t mac[GRP_AUTH_MAC];
        return grp_read_auth_ok(r, mac, &e);
    }
    }
    return meta_message(r, type);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > MAX_INPUT) return 0;
    load_descriptors();
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return 0;
    int big = 1 << 20;
    setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
    setsockopt(sv[0], SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    size_t off = 0;
    while (off < size) {
        ssize_t k = write(sv[1], data + off, size - off);
        if (k <= 0) break;
        off += (size_t)k;
    }
    close(sv[1]);
    if (off < size) {
        close(sv[0]);
        return 0;
    }
    grw_limits lim = {1 << 16, 1 << 14, 1 << 14};
    grw_reader *r = malloc(sizeof *r);
    grw_reader_init(r, sv[0], lim.max_message);
    for (int m = 0; m < 8; m++) {
        grw_header h;
        gr_err e;
        if (grp_read_header(r, &h, &e)) break;
        int rc;
        if (h.type == GRP_SUBMIT && (h.request_id & 1))
            rc = kept_submit(r, &lim);
        else if (h.type == GRP_CALL || h.type == GRP_SUBMIT)
            rc = server_call(r, &lim);
        else if ((h.type >= GRP_SUBMITTED && h.type <= GRP_JOB_INFO_OK) || h.type == GRP_JOB_CANCEL)
            rc = job_message(r, h.type, &lim);
        else if (h.type == GRP_OBJ_INVOKE)
            rc = server_invoke(r, &lim);
        else if (h.type == GRP_CALL_DATA)
            rc = server_call_data(r, &lim);
        else if (h.type == GRP_DATA_PUT || h.type == GRP_DATA)
            rc = data_message(r, h.type, &lim);
        else if (h.type == GRP_RESULT)
            rc = client_result(r, &lim, h.request_id);
        else if (h.type == GRP_CALLBACK || h.type == GRP_CALLBACK_RESULT)
            rc = callback_message(r, h.type, &lim);
        else
            rc = small_message(r, h.type);
        if (rc) break;
    }
    free(r);
    close(sv[0]);
    return 0;
}
