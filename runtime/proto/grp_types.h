/* grp_types.h: the protocol's message types (the header's type field; docs/protocol.md
 * lists them), their names, and the default limits a peer starts from. Proto owns
 * them: the wire layer below frames messages without knowing what they are. */
#ifndef GRP_TYPES_H
#define GRP_TYPES_H

#include <stdint.h>

#include "grp_limits.h"
#include "grw_wire.h"

#ifdef __cplusplus
extern "C" {
#endif

enum grp_type {
    GRP_HELLO = 1,
    GRP_HELLO_OK = 2,
    GRP_GET_DESCRIPTOR = 3,
    GRP_DESCRIPTOR = 4,
    GRP_CALL = 5,
    GRP_RESULT = 6,
    GRP_ERROR = 7,
    GRP_CANCEL = 8,
    GRP_PING = 9,
    GRP_PONG = 10,
    GRP_LIST = 11,
    GRP_LIST_OK = 12,
    GRP_PROBE = 13, /* bandwidth probe: any peer that answers CALL */
    GRP_PROBE_OK = 14,
    /* 15-17: the key handshake after HELLO (runtime/proto/grp_auth.c) */
    GRP_AUTH_CHALLENGE = 15, /* server -> client: a nonce to prove the key on */
    GRP_AUTH = 16,           /* client -> server: the key's id, the client's nonce and proof */
    GRP_AUTH_OK = 17,        /* server -> client: the server's proof; HELLO_OK follows */
    /* 20-39: the metaserver's (grp_meta.h) */
    GRP_REGISTER = 20,
    GRP_REGISTER_OK = 21,
    GRP_HEARTBEAT = 22,
    GRP_HEARTBEAT_OK = 23,
    GRP_SCHEDULE = 24,
    GRP_SCHEDULE_OK = 25,
    GRP_REPORT = 26, /* no reply */
    GRP_SERVERS = 27,
    GRP_SERVERS_OK = 28,
    GRP_UNREGISTER = 29,
    GRP_UNREGISTER_OK = 30,
    GRP_CRASHED = 31,    /* server -> metaserver: a function crashed its executor */
    GRP_CRASHED_OK = 32, /* empty */
    GRP_HOLDS = 33,      /* client -> metaserver: the functions held back after crashes */
    GRP_HOLDS_OK = 34,
    /* Remote data handles: runtime/proto/grp_data.c */
    GRP_DATA_PUT = 40,
    GRP_DATA_OK = 41, /* the reply to DATA_PUT, DATA_FREE, DATA_COPY, SESSION_END */
    GRP_DATA_GET = 42,
    GRP_DATA = 43,
    GRP_DATA_FREE = 44,
    GRP_DATA_COPY = 45,
    GRP_SESSION_END = 46,
    GRP_CALL_DATA = 47, /* answered RESULT, as CALL */
    /* Remote objects (Ninf-G's DefClass): runtime/proto/grp_object.c */
    GRP_OBJ_CREATE = 60,
    GRP_OBJ_CREATED = 61,
    GRP_OBJ_INVOKE = 62, /* answered RESULT, as CALL */
    GRP_OBJ_DESTROY = 63,
    GRP_OBJ_DESTROYED = 64,
    /* 48-49 reserved for remote data. */
    /* 50-59: two-phase calls (jobs kept on the server's disk): runtime/proto/grp_jobs.c */
    GRP_SUBMIT = 50,      /* a CALL to be kept: answered SUBMITTED */
    GRP_SUBMITTED = 51,   /* the job id */
    GRP_FETCH = 52,       /* answered RESULT (as CALL's), JOB_STATE (not done yet) or ERROR */
    GRP_JOB_STATE = 53,   /* one job's state */
    GRP_JOBS = 54,        /* list the jobs */
    GRP_JOBS_OK = 55,     /* their states */
    GRP_FORGET = 56,      /* delete a job */
    GRP_FORGOTTEN = 57,   /* empty */
    GRP_JOB_INFO = 58,    /* what a fetch needs to size the outputs */
    GRP_JOB_INFO_OK = 59, /* state, descriptor hash and the SUBMIT's head */
    /* 70-79: client callbacks during a call (grp_callback.c) */
    GRP_CALLBACK = 70,        /* server -> client: run callback INDEX of call request_id */
    GRP_CALLBACK_RESULT = 71, /* client -> server: its code and OUT arguments */
    /* 80-89: more two-phase call messages (grp_jobs.c) */
    GRP_JOB_CANCEL = 80 /* stop a queued or running job, keep its record: answered JOB_STATE */
};

/* Returns a static name for a message type ("CALL"), or "?". */
const char *grp_type_name(uint32_t type);
/* Sets L to the protocol's defaults (GRP_DEFAULT_MAX_* of grp_limits.h). */
void grp_limits_default(grw_limits *l);

#ifdef __cplusplus
}
#endif

#endif /* GRP_TYPES_H */
