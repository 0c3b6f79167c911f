/* grd_internal.h: helpers shared by the descriptor library's source files only.
 * Not installed and not part of the grd_desc.h contract.
 */
#ifndef GRD_INTERNAL_H
#define GRD_INTERNAL_H

#include "grd_desc.h"

#if defined(__GNUC__) || defined(__clang__)
#define GRD_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define GRD_PRINTF(f, a)
#endif

/* Fills ERR (which may be NULL) and returns CODE, so callers can `return grd_fail(...)`. */
int grd_fail(grd_error *err, int code, const char *fmt, ...) GRD_PRINTF(3, 4);

/* N rounded up to the 4-byte XDR unit (the bytes of an opaque item, with padding). */
#define GRD_XDR_PAD(n) (((size_t)(n) + 3u) & ~(size_t)3u)

/* 1 when S (LEN bytes) is a non-empty C identifier. */
int grd_is_identifier(const char *s, size_t len);

/* 1 when TYPE is one that a PARAM may read (char .. longlong). */
int grd_type_is_integer(uint32_t type);

/* Frees N parameters (names, programs, callbacks' parameters) and the array. */
void grd_free_params(grd_param *params, uint32_t n);

/* Stack effect of an opcode: how many values it pops and pushes; 0 when unknown. */
int grd_op_arity(uint32_t op, unsigned *pops);

#endif /* GRD_INTERNAL_H */
