/* grp_proto.h: the GridRPC protocol's messages (docs/protocol.md): one encoder and one
 * decoder per message type. This is the only code that writes or reads a message
 * body; the client, gridrpcd, the metaserver and the fuzzers all go through it. The
 * framing and the header are the wire layer's (grw_wire.h) and the arguments of CALL
 * and RESULT are marshalled by descriptor (grm_marshal.h) from here.
 *
 * Decoders check every length against grp_limits.h before storing anything, validate
 * every code they read (an error code outside gridrpc.h's range becomes
 * GRID_ERR_PROTOCOL), and end by checking that the message has no bytes left.
 * Encoders write a whole message, header to last fragment. Private to the library
 * (prefix grp_). */
#ifndef GRP_PROTO_H
#define GRP_PROTO_H

#include <stdint.h>

#include "gr_error.h"
#include "grd_desc.h"
#include "grm_marshal.h"
#include "grp_limits.h"
#include "grp_types.h"
#include "grw_wire.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- message bodies */

typedef struct grp_hello {
    char client[GRP_MAX_PEER_NAME + 1]; /* "libgridrpc 0.1.0": for logs */
    uint32_t min_version, max_version;  /* protocol versions the client speaks */
    char token[GRP_MAX_TOKEN + 1];      /* "" when none */
    /* The client's session secret (gr_session.h): who owns the jobs and objects it makes
     * when no key was proved. session_len 0: none (an older client; it may not SUBMIT). */
    uint8_t session[GRP_SESSION_BYTES];
    uint32_t session_len;
} grp_hello;

typedef struct grp_hello_ok {
    char server[GRP_MAX_PEER_NAME + 1];
    uint32_t version;  /* the version chosen */
    grw_limits limits; /* what the server accepts */
    uint32_t workers;  /* calls it runs at once */
    uint32_t cores;
} grp_hello_ok;

typedef struct grp_error {
    int code; /* GRID_ERR_*, validated */
    char message[GRP_MAX_ERROR_MESSAGE + 1];
} grp_error;

typedef struct grp_pong {
    uint32_t running, queued, workers, cores;
    double loadavg;
} grp_pong;

typedef struct grp_call_target {
    char name[GRP_MAX_FUNCTION_NAME + 1]; /* "function" or "module/function" */
    uint64_t hash;                        /* of the descriptor the client marshalled with */
} grp_call_target;

typedef struct grp_result_times {
    uint64_t queue_ns, run_ns; /* the server's queue wait and run time */
} grp_result_times;

/* Returns 1 if TYPE is a message type this version defines. */
int grp_known_type(uint32_t type);

/* Reads the next message's header (grw_read_header) and refuses a type this version
 * does not define (GRID_ERR_PROTOCOL). */
int grp_read_header(grw_reader *r, grw_header *h, gr_err *e);

/* ---- HELLO / HELLO_OK */
int grp_write_hello(grw_writer *w, uint64_t id, const grp_hello *m, gr_err *e);
int grp_read_hello(grw_reader *r, grp_hello *m, gr_err *e);
int grp_write_hello_ok(grw_writer *w, uint64_t id, const grp_hello_ok *m, gr_err *e);
int grp_read_hello_ok(grw_reader *r, grp_hello_ok *m, gr_err *e);

/* ---- GET_DESCRIPTOR / DESCRIPTOR */
int grp_write_get_descriptor(grw_writer *w, uint64_t id, const char *name, gr_err *e);
int grp_read_get_descriptor(grw_reader *r, char name[GRP_MAX_FUNCTION_NAME + 1], gr_err *e);
/* BYTES is an encoded descriptor (docs/descriptor.md). */
int grp_write_descriptor(grw_writer *w, uint64_t id, const char *qualified, const void *bytes, uint32_t len,
                         gr_err *e);
/* Reads and decodes the descriptor (*out: grd_free it). A descriptor that does not
 * decode is GRID_ERR_PROTOCOL naming why. */
int grp_read_descriptor(grw_reader *r, char qualified[GRP_MAX_FUNCTION_NAME + 1], grd_desc **out, gr_err *e);

/* ---- CALL: target, then the arguments travelling to the server */
/* Writes a whole CALL of C (client side, prepared) to function NAME, marshalled with
 * the descriptor of HASH. LIM: the server's announced limits, checked by the head
 * encoder. */
int grp_write_call(grw_writer *w, uint64_t id, const char *name, uint64_t hash, const grm_call *c,
                   const grw_limits *lim, gr_err *e);
/* The same body as message TYPE (SUBMIT carries a CALL's body). */
int grp_write_call_as(grw_writer *w, uint32_t type, uint64_t id, const char *name, uint64_t hash,
                      const grm_call *c, const grw_limits *lim, gr_err *e);
/* The server's side in three steps, because it must find the function (and its
 * descriptor) after the target and may set a deadline for the bulk once the head says
 * how many bytes follow. C is grm_init'ed for the function on the server side. */
int grp_read_call_target(grw_reader *r, grp_call_target *t, gr_err *e);
int grp_read_call_head(grw_reader *r, grm_call *c, const grw_limits *lim, gr_err *e);
/* Reads the bulk section and checks the message ends there. */
int grp_read_call_bulk(grw_reader *r, grm_call *c, gr_err *e);
/* Bytes of the arrays a CALL of C carries, known once its head is read. */
uint64_t grp_call_bulk_bytes(const grm_call *c);
/* Server: the bytes the arrays of C take once allocated (every array, IN, OUT, INOUT
 * and WORK, whole; those a data handle stands for are not the call's): with the head,
 * what the call holds until its result is written (gsv_limits.c). */
uint64_t grp_call_array_bytes(const grm_call *c);
/* The size of a CALL of C (client side, prepared) to function NAME: exact for the
 * header, target, numbers and strings; an array of strings counts 8 bytes an element
 * and a file its size now. What the client tells the metaserver a call sends. */
uint64_t grp_call_bytes(const char *name, const grm_call *c);

/* ---- RESULT: times, then the arguments travelling back */
int grp_write_result(grw_writer *w, uint64_t id, const grp_result_times *t, const grm_call *c,
                     const grw_limits *lim, gr_err *e);
/* Reads a RESULT into the caller's buffers of C (client side). The caller's own buffers
 * bound the arrays; LIM bounds the message and head. */
int grp_read_result(grw_reader *r, grm_call *c, grp_result_times *t, gr_err *e);
/* The size of a RESULT of C: exact for the header, numbers and strings; a returned
 * file counts as its length field only. For logs and send deadlines. */
uint64_t grp_result_bytes(const grm_call *c);

/* ---- CALLBACK / CALLBACK_RESULT (grp_callback.c): C is the callback's arguments,
 * marshalled with its own descriptor (grd_callback_desc). The server writes CALLBACK as a
 * client writes CALL (C on the client side: the body's buffers) and reads the answer as
 * a client reads RESULT; the client reads CALLBACK as a server reads CALL (C on the
 * server side: buffers it allocates) and answers as a server answers. */
typedef struct grp_callback_target {
    uint32_t index; /* the callback's parameter number in the function (< GRD_MAX_PARAMS) */
    uint32_t seq;   /* 1 for the call's first callback, then 2, 3, ...: the answer repeats it */
} grp_callback_target;

typedef struct grp_callback_status {
    uint32_t index, seq;
    int code; /* GRID_OK, or the client's error (validated) */
    char message[GRP_MAX_ERROR_MESSAGE + 1];
} grp_callback_status;

int grp_write_callback(grw_writer *w, uint64_t id, uint32_t index, uint32_t seq, const grm_call *c,
                       const grw_limits *lim, gr_err *e);
int grp_read_callback_target(grw_reader *r, grp_callback_target *t, gr_err *e);
/* The callback's IN and INOUT arguments, then the end of the message. */
int grp_read_callback_args(grw_reader *r, grm_call *c, const grw_limits *lim, gr_err *e);
/* CODE GRID_OK: C's OUT and INOUT arguments follow; otherwise MSG, and no arguments. */
int grp_write_callback_result(grw_writer *w, uint64_t id, uint32_t index, uint32_t seq, int code,
                              const char *msg, const grm_call *c, const grw_limits *lim, gr_err *e);
/* Reads CALLBACK_RESULT up to its arguments; a failure's message is checked to end there. */
int grp_read_callback_status(grw_reader *r, grp_callback_status *s, gr_err *e);
/* After a GRID_OK status: the OUT and INOUT arguments into C's buffers, then the end. */
int grp_read_callback_result_args(grw_reader *r, grm_call *c, gr_err *e);
/* About the size of a CALLBACK (DIR GRM_TO_SERVER) or of its answer (GRM_TO_CLIENT), for
 * send deadlines. */
uint64_t grp_callback_bytes(const grm_call *c, int dir);

/* ---- ERROR */
/* MSG is cut to GRP_MAX_ERROR_MESSAGE bytes. */
int grp_write_error(grw_writer *w, uint64_t id, int code, const char *msg, gr_err *e);
/* A code outside gridrpc.h's errors becomes GRID_ERR_PROTOCOL, its message saying so. */
int grp_read_error(grw_reader *r, grp_error *m, gr_err *e);

/* ---- messages without a body: CANCEL, PING, LIST */
int grp_write_empty(grw_writer *w, uint32_t type, uint64_t id, gr_err *e);
/* Checks that the body is empty. */
int grp_read_empty(grw_reader *r, gr_err *e);

/* ---- PONG, LIST_OK */
int grp_write_pong(grw_writer *w, uint64_t id, const grp_pong *m, gr_err *e);
int grp_read_pong(grw_reader *r, grp_pong *m, gr_err *e);
/* NAMES: COUNT function names. */
int grp_write_list_ok(grw_writer *w, uint64_t id, const char *const *names, uint32_t count, gr_err *e);
/* *names: a malloc'd array of *count malloc'd strings (grp_free_names). */
int grp_read_list_ok(grw_reader *r, char ***names, uint32_t *count, gr_err *e);
void grp_free_names(char **names, uint32_t count);

/* ---- remote objects (grp_object.c): OBJ_CREATE, OBJ_CREATED, OBJ_INVOKE,
 * OBJ_DESTROY, OBJ_DESTROYED. An object id is the server's: 128 bits (two hypers on the
 * wire, hi first) from its CSPRNG; all zero is never one. */
typedef struct grp_object_id {
    uint64_t hi, lo;
} grp_object_id;
static inline int grp_object_id_eq(grp_object_id a, grp_object_id b) {
    return a.hi == b.hi && a.lo == b.lo;
}
static inline int grp_object_id_zero(grp_object_id a) {
    return !a.hi && !a.lo;
}
/* "%016llx%016llx" of ID into OUT (33 bytes): for messages and logs. */
void grp_object_id_hex(grp_object_id id, char out[33]);
/* OBJ_CREATE: the class, "module/Class" or "Class". */
int grp_write_obj_create(grw_writer *w, uint64_t id, const char *cls, gr_err *e);
int grp_read_obj_create(grw_reader *r, char cls[GRP_MAX_FUNCTION_NAME + 1], gr_err *e);
/* OBJ_CREATED: the new object and its class's qualified name. */
int grp_write_obj_created(grw_writer *w, uint64_t id, grp_object_id object, const char *qualified, gr_err *e);
int grp_read_obj_created(grw_reader *r, grp_object_id *object, char qualified[GRP_MAX_FUNCTION_NAME + 1],
                         gr_err *e);
/* OBJ_INVOKE: object, method (a non-empty name), the hash of the method's descriptor,
 * then the arguments as in CALL (read them with grp_read_call_head and
 * grp_read_call_bulk). */
typedef struct grp_invoke_target {
    grp_object_id object;
    char method[GRP_MAX_METHOD_NAME + 1];
    uint64_t hash;
} grp_invoke_target;
int grp_write_obj_invoke(grw_writer *w, uint64_t id, grp_object_id object, const char *method, uint64_t hash,
                         const grm_call *c, const grw_limits *lim, gr_err *e);
int grp_read_obj_invoke_target(grw_reader *r, grp_invoke_target *t, gr_err *e);
/* OBJ_DESTROY: the object; its reply OBJ_DESTROYED is empty (grp_write_empty). */
int grp_write_obj_destroy(grw_writer *w, uint64_t id, grp_object_id object, gr_err *e);
int grp_read_obj_destroy(grw_reader *r, grp_object_id *object, gr_err *e);

/* ---- remote data handles (grp_data.c): DATA_PUT, DATA_OK, DATA_GET, DATA, DATA_FREE,
 * DATA_COPY, SESSION_END, CALL_DATA (docs/protocol.md "Remote data"). A session and a
 * handle are nonzero 64-bit ids the client picks; one datum keeps its (session, handle)
 * on every server holding a copy. Elements are of a number type (GRD_CHAR..GRD_DCOMPLEX)
 * and travel as CALL's bulk carries one whole array of that type and count. DATA_OK is
 * empty: grp_write_empty(w, GRP_DATA_OK, ...) and grp_read_empty. */
typedef struct grp_data_id {
    uint64_t session, handle;
} grp_data_id;

/* 1 when TYPE may be a data handle's element type (a number type). */
int grp_data_type_ok(uint32_t type);
/* Bytes COUNT elements of TYPE take in memory; 0 for a type that is not a number type
 * or a count whose size overflows 64 bits. */
uint64_t grp_data_bytes(uint32_t type, uint64_t count);

/* DATA_PUT: D, TYPE, COUNT, then the COUNT elements at ELEMS (host order). */
int grp_write_data_put(grw_writer *w, uint64_t id, grp_data_id d, uint32_t type, uint64_t count,
                       const void *elems, gr_err *e);
/* Reads DATA_PUT up to its elements, refusing (before anything is allocated) session or
 * handle 0 and a type that is not a number type (GRID_ERR_PROTOCOL) and elements of more
 * than MAX_BYTES bytes (GRID_ERR_LIMIT, naming both). The caller then allocates
 * grp_data_bytes(*type, *count) bytes and reads the elements straight into them with
 * grp_read_data_elems (or discards them with grw_skip). */
int grp_read_data_put(grw_reader *r, grp_data_id *d, uint32_t *type, uint64_t *count, uint64_t max_bytes,
                      gr_err *e);
/* Reads COUNT elements of TYPE into BUF (grp_data_bytes of them, host order after the
 * bulk conversion), then checks that the message ends there. */
int grp_read_data_elems(grw_reader *r, uint32_t type, uint64_t count, void *buf, gr_err *e);
/* The size of a DATA_PUT (or DATA) of COUNT elements of TYPE on the wire, header included. */
uint64_t grp_data_put_bytes(uint32_t type, uint64_t count);

/* DATA (the reply to DATA_GET): TYPE, COUNT, then the elements at ELEMS. */
int grp_write_data(grw_writer *w, uint64_t id, uint32_t type, uint64_t count, const void *elems, gr_err *e);
/* Reads DATA up to its elements (checks as grp_read_data_put's); the caller checks type
 * and count against its buffer, then grp_read_data_elems reads into it. */
int grp_read_data(grw_reader *r, uint32_t *type, uint64_t *count, uint64_t max_bytes, gr_err *e);

/* DATA_GET, DATA_FREE: D (session and handle nonzero). */
int grp_write_data_get(grw_writer *w, uint64_t id, grp_data_id d, gr_err *e);
int grp_read_data_get(grw_reader *r, grp_data_id *d, gr_err *e);
int grp_write_data_free(grw_writer *w, uint64_t id, grp_data_id d, gr_err *e);
int grp_read_data_free(grw_reader *r, grp_data_id *d, gr_err *e);

/* DATA_COPY: the server sends handle D to HOST:PORT (a DATA_PUT with the same ids). */
typedef struct grp_data_copy {
    grp_data_id d;
    char host[GRP_MAX_HOST + 1]; /* not empty */
    uint32_t port;               /* 1..65535 */
} grp_data_copy;
int grp_write_data_copy(grw_writer *w, uint64_t id, const grp_data_copy *m, gr_err *e);
int grp_read_data_copy(grw_reader *r, grp_data_copy *m, gr_err *e);

/* SESSION_END: SESSION (nonzero). */
int grp_write_session_end(grw_writer *w, uint64_t id, uint64_t session, gr_err *e);
int grp_read_session_end(grw_reader *r, uint64_t *session, gr_err *e);

/* CALL_DATA: a CALL some of whose array arguments are data handles. */
enum {
    GRP_REF_IN = 1,     /* the argument's input is the handle's data (IN or INOUT param) */
    GRP_REF_KEEP = 2,   /* its output is stored as the handle when the call succeeds */
    GRP_REF_RETURN = 4, /* with KEEP: the output is also sent back in RESULT */
    GRP_REF_ALL = 7
};
typedef struct grp_ref {
    uint32_t param; /* the parameter's index in the function (from 0) */
    uint32_t flags; /* GRP_REF_* */
    uint64_t handle;
} grp_ref;
typedef struct grp_call_data_target {
    char name[GRP_MAX_FUNCTION_NAME + 1];
    uint64_t hash;
    uint64_t session;
    uint32_t nrefs;
    grp_ref refs[GRP_MAX_REFS];
} grp_call_data_target;
/* What a decoder checks of refs without the descriptor: at most GRP_MAX_REFS
 * (GRID_ERR_LIMIT), params strictly increasing and < GRD_MAX_PARAMS, handles nonzero,
 * flags nonzero with no unknown bit and RETURN only with KEEP (GRID_ERR_PROTOCOL, naming
 * the ref). */
int grp_refs_valid(const grp_ref *refs, uint32_t n, gr_err *e);
/* What only the descriptor D of function FN tells: each ref names a numeric array
 * parameter (not WORK); an IN parameter takes exactly IN; an OUT one KEEP[|RETURN]; an
 * INOUT one any valid combination. GRID_ERR_ARGS naming the parameter otherwise. */
int grp_refs_check(const grd_desc *d, const char *fn, const grp_ref *refs, uint32_t n, gr_err *e);
/* The skip masks of a call with REFS (grm_call.skip): IN -> skip[GRM_TO_SERVER]; KEEP
 * without RETURN -> skip[GRM_TO_CLIENT]. Both sides set them on their grm_call before
 * writing or reading the head. */
void grp_refs_skip(const grp_ref *refs, uint32_t n, uint64_t skip[3]);
/* Writes CALL_DATA: target, session, refs, then C's head and bulk as grp_write_call does.
 * C's skip masks must be grp_refs_skip(REFS)'s (GRID_ERR_INTERNAL otherwise); the reply
 * is read with grp_read_result on the same C. */
int grp_write_call_data(grw_writer *w, uint64_t id, const char *name, uint64_t hash, uint64_t session,
                        const grp_ref *refs, uint32_t nrefs, const grm_call *c, const grw_limits *lim,
                        gr_err *e);
/* Server: reads CALL_DATA up to the head (grp_refs_valid's checks, session nonzero).
 * Then: grm_init, grp_refs_check, grp_refs_skip into c->skip, grp_read_call_head, bind
 * the IN refs' buffers to c->ptr (grm_read_bulk leaves those alone), grp_read_call_bulk. */
int grp_read_call_data_target(grw_reader *r, grp_call_data_target *t, gr_err *e);
/* The size of a CALL_DATA of C with NREFS refs (as grp_call_bytes; C's skip masks set). */
uint64_t grp_call_data_bytes(const char *name, uint32_t nrefs, const grm_call *c);
/* ---- two-phase calls (grp_jobs.c): SUBMIT, SUBMITTED, FETCH, JOB_STATE, JOBS, JOBS_OK,
 * FORGET, FORGOTTEN, JOB_INFO, JOB_INFO_OK, JOB_CANCEL. A job id on the wire is its hex part only
 * (GRP_MIN_JOB_ID..GRP_MAX_JOB_ID lowercase hex digits); decoders refuse anything else. */
enum grp_job_state { GRP_JOB_QUEUED = 1, GRP_JOB_RUNNING = 2, GRP_JOB_DONE = 3, GRP_JOB_FAILED = 4 };

typedef struct grp_job {
    char id[GRP_MAX_JOB_ID + 1];
    char function[GRP_MAX_FUNCTION_NAME + 1]; /* the server's qualified name */
    uint32_t state;                           /* enum grp_job_state, validated */
    int code;                                 /* GRID_OK, or the failed job's error (validated) */
    uint64_t submitted_ms, finished_ms;       /* Unix times in ms; finished 0 while not done */
    uint64_t bytes_in, bytes_out;             /* the SUBMIT's size; the stored reply's (0 while not done) */
} grp_job;

/* 1 if ID is a well-formed job id (the hex part). */
int grp_job_id_ok(const char *id);
/* A static name of STATE ("queued", "running", "done", "failed"), or "?". */
const char *grp_job_state_name(uint32_t state);
/* SUBMIT: a CALL's body under another type (read it with grp_read_call_target, _head and
 * _bulk). */
int grp_write_submit(grw_writer *w, uint64_t id, const char *name, uint64_t hash, const grm_call *c,
                     const grw_limits *lim, gr_err *e);
/* SUBMITTED, FETCH, FORGET, JOB_INFO and JOB_CANCEL carry a job id (FETCH then the wait
 * in ms). */
int grp_write_job_id(grw_writer *w, uint32_t type, uint64_t id, const char *job, gr_err *e);
int grp_read_job_id(grw_reader *r, char job[GRP_MAX_JOB_ID + 1], gr_err *e);
int grp_write_fetch(grw_writer *w, uint64_t id, const char *job, uint32_t wait_ms, gr_err *e);
int grp_read_fetch(grw_reader *r, char job[GRP_MAX_JOB_ID + 1], uint32_t *wait_ms, gr_err *e);
/* JOB_STATE: one job. */
int grp_write_job_state(grw_writer *w, uint64_t id, const grp_job *j, gr_err *e);
int grp_read_job_state(grw_reader *r, grp_job *j, gr_err *e);
/* JOBS_OK: COUNT jobs (<= GRP_MAX_JOBS). *v: malloc'd (free it; NULL when none). */
int grp_write_jobs_ok(grw_writer *w, uint64_t id, const grp_job *v, uint32_t count, gr_err *e);
int grp_read_jobs_ok(grw_reader *r, grp_job **v, uint32_t *count, gr_err *e);
/* JOB_INFO_OK: the job, its descriptor hash, then the SUBMIT's head section (IN scalars,
 * strings, files) exactly as the SUBMIT carried it: HEAD is that section's bytes as
 * grp_read_submit_head_raw gives them (the server needs no descriptor to answer). The
 * reader reads the head with grp_read_job_info_head into C (server side, grm_init'ed for
 * the function: grm_release it), which ends the message. */
int grp_write_job_info_ok(grw_writer *w, uint64_t id, const grp_job *j, uint64_t hash, const void *head,
                          uint32_t len, gr_err *e);
/* After grp_read_call_target of a kept SUBMIT: its head section as raw bytes (*head:
 * malloc'd, at most MAX_HEAD long), without interpreting it. */
int grp_read_submit_head_raw(grw_reader *r, uint32_t max_head, uint8_t **head, uint32_t *len, gr_err *e);
int grp_read_job_info_ok(grw_reader *r, grp_job *j, uint64_t *hash, gr_err *e);
int grp_read_job_info_head(grw_reader *r, grm_call *c, const grw_limits *lim, gr_err *e);

/* ---- replies, as a client reads them */

/* After the header H of a reply: if it is ERROR, reads it and returns its code with E
 * holding the server's message (*in_step: 1, the connection is still usable unless the
 * code is GRID_ERR_PROTOCOL); if it is EXPECTED returns GRID_OK to let the caller read
 * the body; anything else is GRID_ERR_PROTOCOL ("the server answered WHAT with X"),
 * *in_step 0. */
int grp_expect(grw_reader *r, const grw_header *h, uint32_t expected, const char *what, int *in_step,
               gr_err *e);

/* ---- connecting, with TLS for gridrpcs:// endpoints (grw_tls.h) */

/* grw_dial; when a gridrpcs:// server answered in plain GridRPC instead of TLS, that
 * answer is read (grp_plain_refusal): a server that refused the connection before TLS
 * (over a limit) is reported with its own code and message. Nothing is ever sent in
 * plain on such a connection. */
int grp_dial(const char *host, int port, double timeout, const char *ca_file, struct grw_tls **tls,
             gr_err *e);
/* Reads, by DEADLINE_NS, the plain answer left on FD where TLS was expected: an ERROR
 * (other than GRID_ERR_PROTOCOL, a plain server's answer to the TLS hello) replaces E
 * with its code and "the server refused the connection before TLS: MSG"; anything else
 * leaves E (it does not speak TLS). FD stays open. */
void grp_plain_refusal(int fd, long long deadline_ns, gr_err *e);

#ifdef __cplusplus
}
#endif

#endif /* GRP_PROTO_H */
