/* gr_shbuf.h: large buffers that another process can map. Each is a memfd of its own,
 * mapped here. The server receives a large array of a call that an executor will run
 * straight into one (grm_bulk.c), hands the descriptor to the executor (gsv_exec.c),
 * and sends the result from the same pages: no copy crosses the process boundary. */
#ifndef GR_SHBUF_H
#define GR_SHBUF_H

#include <stddef.h>

/* Arrays below this many bytes are copied into an executor's region instead: a memfd
 * and its mapping cost more than copying them. */
#define GR_SHBUF_MIN ((size_t)256 << 10)

/* A buffer of BYTES (> 0, rounded up to whole pages) in a memfd of its own; NULL (errno
 * set) if none. It is zeroed unless OVERWRITTEN says its taker writes every byte of it
 * before anyone reads it (a buffer freed earlier may be handed out again, with the
 * bytes of its last use: gr_shbuf.c). */
void *gr_shbuf_alloc(size_t bytes, int overwritten);
/* P's memfd and its bytes (BYTES may be NULL), or -1 when P is not a shared buffer. */
int gr_shbuf_fd(const void *p, size_t *bytes);
/* Frees P: unmaps and closes a shared buffer, free()s anything else (NULL: nothing), so
 * whoever ends up owning a buffer (a call, the data store) frees it the same way. */
void gr_shbuf_free(void *p);
/* Releases every buffer the cache keeps (gr_shbuf.c); how many buffers it keeps, and
 * their bytes in BYTES (may be NULL). */
void gr_shbuf_trim(void);
unsigned gr_shbuf_cached(size_t *bytes);

#endif /* GR_SHBUF_H */
