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

/* A zeroed buffer of BYTES (> 0) in a memfd of its own; NULL (errno set) if none. */
void *gr_shbuf_alloc(size_t bytes);
/* P's memfd and its bytes (BYTES may be NULL), or -1 when P is not a shared buffer. */
int gr_shbuf_fd(const void *p, size_t *bytes);
/* Frees P: unmaps and closes a shared buffer, free()s anything else (NULL: nothing), so
 * whoever ends up owning a buffer (a call, the data store) frees it the same way. */
void gr_shbuf_free(void *p);

#endif /* GR_SHBUF_H */
