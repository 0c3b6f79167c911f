/* grd_desc.h: the interface descriptor library, shared by idlc, the client and the server.
 *
 * An interface descriptor is the compiled form of one IDL function: its module, name,
 * description, parameters (type, mode, rank, and per dimension size/start/end/step as
 * small postfix programs over the scalar in-arguments) and its cost program. idlc
 * builds one in memory and encodes it; a client or server decodes it from untrusted
 * bytes, then evaluates its programs on actual arguments to size every array before it
 * marshals anything. The byte format is specified in docs/descriptor.md.
 *
 * This header is private to the project (prefix grd_); the public API is gridrpc.h.
 * All functions are MT-safe: they touch only the objects they are given.
 */
#ifndef GRD_DESC_H
#define GRD_DESC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Encoding format version written in every descriptor. */
#define GRD_FORMAT_VERSION 1u
#define GRD_MAGIC 0x47524453u        /* "GRDS": one function's descriptor */
#define GRD_BUNDLE_MAGIC 0x4752444du /* "GRDM": a module's descriptors   */

/* Hard limits a decoder enforces before it allocates anything. */
#define GRD_MAX_NAME 255u          /* module, function and parameter names (bytes) */
#define GRD_MAX_DESCRIPTION 4096u  /* description string (bytes) */
#define GRD_MAX_PARAMS 64u         /* parameters per function */
#define GRD_MAX_RANK 8u            /* dimensions per array */
#define GRD_MAX_PROGRAM 256u       /* instructions per expression program */
#define GRD_MAX_STACK 32u          /* evaluation stack depth of a program */
#define GRD_MAX_CALLEE 255u        /* Calls target name (bytes) */
#define GRD_MAX_ENCODED (1u << 20) /* one encoded descriptor (bytes) */
#define GRD_MAX_BUNDLE 4096u       /* functions per module bundle */
#define GRD_MAX_CB_PARAMS 32u      /* parameters of one callback */

typedef enum grd_type {
    GRD_CHAR = 1,
    GRD_SHORT = 2,
    GRD_INT = 3,
    GRD_LONG = 4,
    GRD_LONGLONG = 5,
    GRD_FLOAT = 6,
    GRD_DOUBLE = 7,
    GRD_SCOMPLEX = 8,
    GRD_DCOMPLEX = 9,
    GRD_STRING = 10,
    GRD_FILENAME = 11,
    /* A client callback function (Ninf IDL 'cb(IN double c[n], OUT double d[n])'): the
     * parameter never travels; its own parameters are grd_param.cb. */
    GRD_CALLBACK = 12
} grd_type;

typedef enum grd_mode { GRD_IN = 1, GRD_OUT = 2, GRD_INOUT = 3, GRD_WORK = 4 } grd_mode;

/* Parameter flags. */
#define GRD_PF_UNSIGNED 0x1u /* unsigned integer type */
#define GRD_PF_POINTER 0x2u  /* declared *x: an out scalar passed by pointer */

/* Function flags. */
#define GRD_FF_SHRINK 0x1u   /* Shrink "yes": strided sub-ranges are packed */
#define GRD_FF_NO_RETRY 0x2u /* Retry "no": never re-executed on another server after a failure */
#define GRD_FF_METHOD 0x4u   /* a DefMethod of class cls: invoked on an object, never called */
#define GRD_FF_TIMEOUT 0x8u  /* Timeout SECONDS: the server's time limit for one call (timeout) */
#define GRD_FF_ALL (GRD_FF_SHRINK | GRD_FF_NO_RETRY | GRD_FF_METHOD | GRD_FF_TIMEOUT)
/* The longest IDL Timeout: seconds that fit an int. */
#define GRD_MAX_TIMEOUT 2147483647u

typedef enum grd_lang { GRD_LANG_C = 1, GRD_LANG_CXX = 2, GRD_LANG_FORTRAN = 3 } grd_lang;

/* Opcodes of the postfix programs. Binary operators pop b then a and push (a op b). */
typedef enum grd_op {
    GRD_OP_CONST = 1, /* push operand (a signed 64-bit constant) */
    GRD_OP_PARAM = 2, /* push the value of in-scalar parameter number operand */
    GRD_OP_ADD = 3,
    GRD_OP_SUB = 4,
    GRD_OP_MUL = 5,
    GRD_OP_DIV = 6, /* truncating; division by zero is an error */
    GRD_OP_MOD = 7,
    GRD_OP_POW = 8, /* a ^ b, b >= 0 */
    GRD_OP_NEG = 9, /* unary */
    GRD_OP_LT = 10,
    GRD_OP_LE = 11,
    GRD_OP_GT = 12,
    GRD_OP_GE = 13,
    GRD_OP_EQ = 14,
    GRD_OP_NE = 15,
    GRD_OP_AND = 16,
    GRD_OP_OR = 17,
    GRD_OP_NOT = 18,  /* unary */
    GRD_OP_COND = 19, /* pops c, b, a: pushes a ? b : c */
    GRD_OP_MIN = 20,
    GRD_OP_MAX = 21,
    /* Only in the programs of a callback's parameters: push the value of the
     * callback's own integer IN scalar number operand (PARAM there names the
     * function's parameters, as everywhere). */
    GRD_OP_CBPARAM = 22
} grd_op;

typedef struct grd_insn {
    uint32_t op;     /* grd_op */
    int64_t operand; /* CONST value or PARAM index; 0 otherwise */
} grd_insn;

/* A program; len == 0 means "absent" (the field's default applies). */
typedef struct grd_expr {
    uint32_t len;
    grd_insn *code;
} grd_expr;

/* One dimension: size, and the sub-range start/end/step that crosses the wire
 * (defaults: start 0, end size, step 1). */
typedef struct grd_dim {
    grd_expr size, start, end, step;
} grd_dim;

typedef struct grd_param {
    char *name;
    uint32_t type;  /* grd_type */
    uint32_t mode;  /* grd_mode */
    uint32_t flags; /* GRD_PF_* */
    uint32_t rank;  /* 0 for a scalar */
    grd_dim *dims;  /* rank entries, in C order (last varies fastest) */
    /* GRD_CALLBACK only (0 and NULL otherwise): the callback's parameters, each an
     * ordinary parameter (no callbacks inside callbacks). */
    uint32_t ncb;
    struct grd_param *cb;
} grd_param;

typedef struct grd_desc {
    uint32_t version; /* GRD_FORMAT_VERSION */
    uint64_t hash;    /* FNV-1a 64 of the encoded body; filled by encode and decode */
    char *module;
    char *name;
    char *description;
    uint32_t flags;    /* GRD_FF_* */
    uint32_t language; /* grd_lang of the implementation */
    char *cls;         /* GRD_FF_METHOD: the class (encoded after language); else NULL */
    uint32_t timeout;  /* GRD_FF_TIMEOUT: seconds a call may run on the server (encoded after
                          the class), 1 to GRD_MAX_TIMEOUT; else 0 */
    grd_expr cost;     /* flops of one call; len 0 when unknown */
    uint32_t nparams;
    grd_param *params;
} grd_desc;

/* Error codes of this library. */
typedef enum grd_err {
    GRD_OK = 0,
    GRD_E_TRUNCATED = 1, /* input ended early */
    GRD_E_MAGIC = 2,     /* not a descriptor */
    GRD_E_VERSION = 3,   /* unsupported format version */
    GRD_E_LIMIT = 4,     /* a count or length exceeds a GRD_MAX_* limit */
    GRD_E_INVALID = 5,   /* an out-of-range enum, bad reference or malformed program */
    GRD_E_HASH = 6,      /* hash does not match the body */
    GRD_E_TRAILING = 7,  /* bytes left after the descriptor */
    GRD_E_NOMEM = 8,
    GRD_E_OVERFLOW = 9, /* an evaluation overflowed 64 bits or a size limit */
    GRD_E_DIVZERO = 10,
    GRD_E_RANGE = 11, /* a negative size or a sub-range outside its dimension */
    GRD_E_ARG = 12    /* bad argument to a library function */
} grd_err;

/* A decode or evaluation error: code plus a message naming the problem. */
typedef struct grd_error {
    int code;
    char msg[256];
} grd_error;

/* Returns a static name for a grd_type ("double"), or "?" */
const char *grd_type_name(uint32_t type);
/* Returns a static name for a grd_mode ("IN"), or "?" */
const char *grd_mode_name(uint32_t mode);
/* Bytes one element of TYPE occupies in memory (char 1 ... dcomplex 16; string and
 * filename the size of a char pointer); 0 for an unknown type. */
size_t grd_type_size(uint32_t type);

/* ---- Encoding (idlc) ---- */

/* Encodes DESC into a malloc'd buffer (*out, *outlen) and stores the hash in
 * desc->hash. The descriptor is validated first (as decode would): an invalid one is
 * an error and nothing is returned. The caller frees *out. */
int grd_encode(grd_desc *desc, uint8_t **out, size_t *outlen, grd_error *err);

/* Encodes N already-encoded descriptors as a module bundle (docs/descriptor.md). */
int grd_bundle_encode(const uint8_t *const *descs, const size_t *lens, uint32_t n, uint8_t **out,
                      size_t *outlen, grd_error *err);

/* ---- Decoding (client and server: the input is untrusted) ---- */

/* Decodes LEN bytes at BUF into a new descriptor (*out, freed with grd_free). Checks
 * magic, version, every limit, every enum, every parameter reference (it must name an
 * integer IN or INOUT scalar), each program's stack discipline, and the hash. Never
 * reads outside BUF; on error *out is NULL and ERR says why. */
int grd_decode(const uint8_t *buf, size_t len, grd_desc **out, grd_error *err);

/* Splits a module bundle into its descriptors; *offs and *lens (malloc'd, n entries)
 * locate each encoded descriptor inside BUF. The caller frees both arrays. */
int grd_bundle_split(const uint8_t *buf, size_t len, uint32_t *n, size_t **offs, size_t **lens,
                     grd_error *err);

/* Validates an in-memory descriptor with the same rules as decode. */
int grd_validate(const grd_desc *desc, grd_error *err);

/* Frees a descriptor made by grd_decode (or built by hand with malloc'd parts). */
void grd_free(grd_desc *desc);

/* Returns the index of the parameter named NAME, or -1. */
int grd_find_param(const grd_desc *desc, const char *name);

/* ---- Evaluation ---- */

/* Evaluates PROG with SCALARS[i] the value of parameter i (only integer in-scalars are
 * read). An absent program (len 0) is an error GRD_E_ARG. */
int grd_eval(const grd_expr *prog, const int64_t *scalars, uint32_t nscalars, int64_t *result,
             grd_error *err);

/* The shape of one array argument for given scalar values. */
typedef struct grd_extent {
    uint32_t rank;
    int64_t size[GRD_MAX_RANK];   /* declared size of each dimension */
    int64_t start[GRD_MAX_RANK];  /* first index sent */
    int64_t end[GRD_MAX_RANK];    /* one past the last index sent */
    int64_t step[GRD_MAX_RANK];   /* stride of the indexes sent */
    uint64_t count[GRD_MAX_RANK]; /* indexes sent in each dimension */
    uint64_t elems;               /* elements in the whole array */
    uint64_t sent;                /* elements that cross the wire */
    uint64_t bytes;               /* bytes the whole array occupies in memory */
    uint64_t sent_bytes;          /* bytes of the elements that cross the wire */
    int whole;                    /* 1 when every element is sent */
} grd_extent;

/* Computes the extent of parameter PINDEX. Every size must be >= 0, every sub-range
 * 0 <= start <= end <= size with step >= 1, and the element and byte counts must not
 * exceed MAX_BYTES (0 for no limit beyond 2^63); otherwise an error names the
 * parameter and dimension. A scalar has rank 0, elems 1. */
int grd_extent_of(const grd_desc *desc, uint32_t pindex, const int64_t *scalars, uint64_t max_bytes,
                  grd_extent *out, grd_error *err);

/* Evaluates the cost program; a function without one costs 0. */
int grd_cost(const grd_desc *desc, const int64_t *scalars, double *flops, grd_error *err);

/* ---- Callbacks ---- */

/* Builds the descriptor of callback parameter PINDEX of FN as a function of its own, for
 * one call: its parameters are the callback's, every PARAM i (the function's scalar i)
 * becomes the constant IVAL[i] (the call's values) and every CBPARAM j becomes PARAM j.
 * The marshaller then sizes and moves the callback's arguments as any call's. Module:
 * FN's; name: the callback parameter's. *out is grd_free'd by the caller. */
int grd_callback_desc(const grd_desc *fn, uint32_t pindex, const int64_t *ival, grd_desc **out,
                      grd_error *err);
/* The number of callback parameters of DESC. */
uint32_t grd_callback_count(const grd_desc *desc);

/* ---- Text ---- */

/* Writes a readable multi-line dump of DESC (the golden-test form) into a malloc'd
 * string. Programs are printed back as infix expressions. */
char *grd_dump(const grd_desc *desc);
/* One program of DESC as the dump prints it ("2*n^3"), malloc'd; NULL when absent. */
char *grd_expr_text(const grd_desc *desc, const grd_expr *e);
/* The dimensions of parameter PINDEX as the dump prints them ("[n][n]", "[n : lo, hi, 1]";
 * "" for a scalar; a callback's parameters, "(IN int k, OUT double d[k])"), malloc'd;
 * NULL for a bad index. */
char *grd_dims_text(const grd_desc *desc, uint32_t pindex);

/* Returns FNV-1a 64 of LEN bytes. */
uint64_t grd_fnv1a64(const uint8_t *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* GRD_DESC_H */
