/* grm_marshal.h: arguments of one call, interpreted through the function's interface
 * descriptor, and their encoding in CALL and RESULT messages (docs/protocol.md). Both
 * sides use it: the client fills a grm_call from grid_call's variadic arguments, the
 * server from the wire; each evaluates the descriptor's programs on the call's scalars
 * to size every array and checks the limits before anything is allocated.
 *
 * Directions: GRM_TO_SERVER carries IN and INOUT parameters (the CALL message),
 * GRM_TO_CLIENT carries OUT and INOUT parameters (the RESULT message). WORK arrays
 * never travel; the server allocates them.
 */
#ifndef GRM_MARSHAL_H
#define GRM_MARSHAL_H

#include <stdarg.h>
#include <stdint.h>

#include "gr_error.h"
#include "grd_desc.h"
#include "grw_wire.h"
#include "gridrpc_types.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { GRM_TO_SERVER = 1, GRM_TO_CLIENT = 2 };
enum { GRM_CLIENT_SIDE = 1, GRM_SERVER_SIDE = 2 };

/* A scalar's value: the public union (gridrpc_types.h), so the bindings' slots and the
 * core's have one layout. */
typedef grid_scalar_np grm_value;

/* A callback parameter's value on the client: the caller's function, called with one
 * pointer per callback parameter (grc_callback.c), kept in its slot's val (grm_callback_fn). */
typedef void (*grm_fn)(void);
#ifndef __cplusplus
_Static_assert(sizeof(grm_fn) <= sizeof(grid_scalar_np), "a function pointer fits a slot");
#endif

/* What a call keeps per parameter besides its pointer and integer value. */
typedef struct grm_slot {
    grm_value val;  /* the value of a scalar (ptr points here unless the caller's) */
    grd_extent ext; /* the array's shape and the part that travels */
    /* Server side: what this call allocated and must free (arrays, strings, temp files). */
    unsigned char own_buf; /* ptr[i] is a buffer this call allocated */
    char *own_ptr;         /* a received string (the body may repoint an INOUT one) */
    char **own_strv;       /* received strings of an array (ext.sent of them) */
    char *tmpfile;         /* the path of a scalar filename's file (in the call's scratch folder) */
} grm_slot;

/* A call's arguments. It is allocated with room for its function's parameters only
 * (grm_call_size): a small call must not pay for the largest one. */
typedef struct grm_call {
    const grd_desc *desc;
    int side;
    /* The stub ABI argument vector (gridrpc_stub.h): scalars point at a value (sl[i].val
     * for values, the caller's variable for OUT/INOUT on the client), strings at a
     * char *, arrays at their first element. */
    void *ptr[GRD_MAX_PARAMS];
    /* Integer scalars as the call began: every extent is computed from these, so an
     * INOUT size changed by the function does not change the result's shape. */
    int64_t ival[GRD_MAX_PARAMS];
    /* Server: the folder holding the call's files (filename arguments), made at the
     * first one and removed whole by grm_release; NULL until then. */
    char *scratch;
    /* Bit i of skip[GRM_TO_SERVER] / skip[GRM_TO_CLIENT]: parameter i does not travel in
     * that direction although its mode says it would, because a remote data handle
     * stands for it (CALL_DATA's refs; docs/protocol.md "Remote data"). Every writer,
     * reader and size of this file and of grp_proto.h honours them; grm_init clears
     * them (everything travels). Server side: an array skipped TO_SERVER is not
     * allocated by grm_read_bulk: the server binds ptr[i] itself. */
    uint64_t skip[3];
    /* Server: the call runs in an executor process, so grm_read_bulk puts each array of
     * at least GR_SHBUF_MIN bytes in a shared buffer (gr_shbuf.h) the executor maps. */
    unsigned char share;
    grm_slot sl[]; /* one per parameter */
} grm_call;

/* Bytes to allocate for a grm_call of NPARAMS parameters. */
#define grm_call_size(nparams) (sizeof(grm_call) + (size_t)(nparams) * sizeof(grm_slot))

/* Returns 1 if parameter P travels in direction DIR. */
int grm_travels(const grd_param *p, int dir);
/* Returns 1 if parameter I of C travels in direction DIR in this call: its mode says so
 * and no data handle stands for it (skip). */
int grm_call_travels(const grm_call *c, uint32_t i, int dir);
/* The unit of byte-order conversion of TYPE: 1, 2, 4 or 8 (complex types convert per
 * component); 0 for strings and filenames, which are not bulk data. */
unsigned grm_word_size(uint32_t type);

/* Client: fills C from grid_call's variadic arguments (gridrpc.h lists the C types),
 * then computes every extent (grm_prepare). */
int grm_from_va(grm_call *c, const grd_desc *d, va_list ap, const grw_limits *lim, gr_err *e);

/* Client: fills C from an argument vector (grid_call_argv_np: ARGV[i] points at each
 * parameter's storage), then computes every extent. */
int grm_from_argv(grm_call *c, const grd_desc *d, void *const *argv, const grw_limits *lim, gr_err *e);

/* Computes ival and every array's extent from the current scalars, checking each
 * array against LIM->max_array. Names the parameter in errors (GRID_ERR_ARGS for a bad
 * size, GRID_ERR_LIMIT for a limit). */
int grm_prepare(grm_call *c, const grw_limits *lim, gr_err *e);

/* Writes the head section (scalars, strings, string arrays, file contents) of
 * direction DIR as an XDR opaque<> into W. */
int grm_write_head(grw_writer *w, const grm_call *c, int dir, const grw_limits *lim, gr_err *e);
/* Reads the head section of direction DIR into C (grm_init'ed for its descriptor).
 * Server (TO_SERVER): stores values, allocates strings, writes each file received
 * into the call's scratch folder, computes extents; a string, file or array absent or
 * of no elements reaches the body as NULL. Client (TO_CLIENT): stores OUT values
 * through the caller's pointers and writes each file received at the caller's path
 * (a NULL path discards it). */
int grm_read_head(grw_reader *r, grm_call *c, int dir, const grw_limits *lim, gr_err *e);

/* Writes the bulk section (numeric arrays, the sent part of each) of direction DIR. */
int grm_write_bulk(grw_writer *w, const grm_call *c, int dir, gr_err *e);
/* Reads the bulk section of direction DIR. Server: allocates every array (zeroed, full
 * size; NULL when it has no elements) including OUT and WORK ones, gives every OUT
 * filename a fresh file in the call's scratch folder, and reads the IN arrays. Client: reads into the
 * caller's buffers; elements outside a sub-range keep what the caller had. */
int grm_read_bulk(grw_reader *r, grm_call *c, int dir, gr_err *e);

/* Server: frees what the call allocated and removes its scratch folder (every file of
 * its filename arguments, and whatever the body wrote there). */
void grm_release(grm_call *c);

/* Client: the function passed for callback parameter I of C (NULL when none was). */
grm_fn grm_callback_fn(const grm_call *c, uint32_t i);

/* Initialises an empty call for DESC on SIDE (scalars point at val[]). Only the slots
 * of DESC's parameters are set; everything else in the struct is left as it was. */
void grm_init(grm_call *c, const grd_desc *d, int side);

#ifdef __cplusplus
}
#endif

#endif /* GRM_MARSHAL_H */
