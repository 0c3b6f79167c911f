/* grm_internal.h: helpers shared by the marshal files (private). */
#ifndef GRM_INTERNAL_H
#define GRM_INTERNAL_H

#include "gr_shbuf.h"
#include "grm_marshal.h"

/* Calls FN(offset, count, arg) for each contiguous run of elements of an array that
 * its extent sends, in C order; offsets and counts are in elements. Returns the first
 * non-zero FN result. */
typedef int (*grm_run_fn)(uint64_t offset, uint64_t count, void *arg);
int grm_for_each_run(const grd_extent *ext, grm_run_fn fn, void *arg);

/* Moves the sent elements of a string array between the whole array V and the list
 * PACKED (ext->sent of them, in order): GATHER copies V -> PACKED (a NULL V gives NULLs),
 * else PACKED -> V. */
void grm_strv_move(const grd_extent *ext, char **v, char **packed, int gather);

/* grm_files.c. Reads the file PATH whole (at most MAX bytes) into a malloc'd
 * *OUT; with MISSING_OK a file that does not exist gives *OUT = NULL and GRID_OK. */
int grm_file_read(const char *path, uint32_t max, int missing_ok, uint8_t **out, uint32_t *len, gr_err *e);
/* Client: writes N bytes of P at PATH, creating the file or replacing its contents. */
int grm_file_save(const char *path, const uint8_t *p, uint32_t n, gr_err *e);
/* Server: a fresh file for element K of filename parameter I (K = 0 for a scalar) in
 * the call's scratch folder, holding N bytes of DATA; *PATH (malloc'd) names it. */
int grm_file_scratch(grm_call *c, uint32_t i, uint64_t k, const uint8_t *data, uint32_t n, char **path,
                     gr_err *e);
/* Server: gives the OUT filename parameter I (scalar or array) fresh empty files. */
int grm_files_allocate_out(grm_call *c, uint32_t i, gr_err *e);
/* Server: removes the call's scratch folder with everything in it. */
void grm_scratch_remove(grm_call *c);

/* 1 for string and filename types. */
static inline int grm_is_text(uint32_t type) {
    return type == GRD_STRING || type == GRD_FILENAME;
}

#endif /* GRM_INTERNAL_H */
