/* grm_internal.h: helpers shared by the marshal files (private). */
#ifndef GRM_INTERNAL_H
#define GRM_INTERNAL_H

#include "grm_marshal.h"

/* Calls FN(offset, count, arg) for each contiguous run of elements of an array that
 * its extent sends, in C order; offsets and counts are in elements. Returns the first
 * non-zero FN result. */
typedef int (*grm_run_fn)(uint64_t offset, uint64_t count, void *arg);
int grm_for_each_run(const grd_extent *ext, grm_run_fn fn, void *arg);

/* 1 for string and filename types. */
static inline int grm_is_text(uint32_t type) {
    return type == GRD_STRING || type == GRD_FILENAME;
}

#endif /* GRM_INTERNAL_H */
