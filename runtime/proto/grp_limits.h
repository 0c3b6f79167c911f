/* grp_limits.h: every limit of the GridRPC protocol, in one place (docs/protocol.md
 * lists the same numbers and a test checks that the two agree). The wire, marshal and
 * protocol layers, the client, the server and the fuzzers take their bounds from here;
 * no other file spells one of these numbers. */
#ifndef GRP_LIMITS_H
#define GRP_LIMITS_H

/* Bytes of the strings in message bodies (XDR string<N>). */
#define GRP_MAX_PEER_NAME 255      /* HELLO client, HELLO_OK server */
#define GRP_MAX_TOKEN 1024         /* HELLO token */
#define GRP_SESSION_BYTES 16       /* HELLO session secret: 128 random bits */
#define GRP_MAX_FUNCTION_NAME 511  /* GET_DESCRIPTOR, DESCRIPTOR, CALL, LIST_OK names */
#define GRP_MAX_ERROR_MESSAGE 4095 /* ERROR message */
#define GRP_MAX_DESCRIPTOR 1048576 /* DESCRIPTOR opaque (GRD_MAX_ENCODED) */
#define GRP_MAX_LIST_COUNT 65536   /* LIST_OK entries */
#define GRP_MAX_HOST 255           /* REGISTER, SCHEDULE_OK, SERVERS_OK addresses */
#define GRP_MAX_SITE 255           /* SCHEDULE, REPORT, SERVERS client site names */
#define GRP_MAX_PROBE (8u << 20)   /* PROBE payload and the reply size it asks for */
#define GRP_MAX_FUNCTIONS 4096     /* functions in one REGISTER, per server in SERVERS_OK */
#define GRP_MAX_SERVERS 4096       /* servers in one SERVERS_OK */
#define GRP_MAX_EXCLUDE 64         /* servers a SCHEDULE asks to leave out */
#define GRP_MAX_AFFINITY 16        /* servers a SCHEDULE says hold some of the call's inputs */
#define GRP_MAX_METHOD_NAME 255    /* OBJ_INVOKE method names (GRD_MAX_NAME) */
#define GRP_MAX_REFS 64            /* data handle references in one CALL_DATA (GRD_MAX_PARAMS) */
#define GRP_MAX_HOLD_S 60          /* seconds a metaserver may hold a SCHEDULE (every server full) */
#define GRP_MAX_CRASH_WHAT 255     /* CRASHED's and HOLDS_OK's account of a crash */
#define GRP_MAX_HOLD_SERVERS 1023  /* HOLDS_OK: the servers a held function crashed on, as text */
#define GRP_MAX_HOLDS 1024         /* HOLDS_OK entries */

/* Authentication (grp_auth.h): AUTH_CHALLENGE, AUTH and AUTH_OK carry opaque<32>
 * nonces and MACs (exactly that long) and a key id of 16 lowercase hex digits. A key is
 * 16 to 64 bytes; a key file holds up to 8 (rotation); gridrpc keygen writes 32. */
#define GRP_AUTH_NONCE 32
#define GRP_AUTH_MAC 32
#define GRP_AUTH_KEY_ID_HEX 16
#define GRP_AUTH_MIN_KEY 16
#define GRP_AUTH_MAX_KEY 64
#define GRP_AUTH_MAX_KEYS 8
#define GRP_AUTH_KEYGEN_BYTES 32

/* Two-phase calls (grp_jobs.c): a job id on the wire is 16 to 64 lowercase hex digits. */
#define GRP_MIN_JOB_ID 16
#define GRP_MAX_JOB_ID 64
#define GRP_MAX_JOBS 65536    /* JOBS_OK entries */
#define GRP_MAX_JOB_WAIT_S 60 /* seconds a server holds a FETCH before it answers JOB_STATE */

/* Defaults of the configurable limits (gridrpcd --max-message, --max-array,
 * --max-head; the client's own reader): what one peer accepts from another. */
#define GRP_DEFAULT_MAX_MESSAGE (1ull << 30) /* bytes in one message (record) */
#define GRP_DEFAULT_MAX_ARRAY (1ull << 30)   /* bytes of one array argument */
#define GRP_DEFAULT_MAX_HEAD (64u << 20)     /* bytes of a call's head section */

#endif /* GRP_LIMITS_H */
