/* gr_error.h: the error value every internal layer returns: a GRID_* code (gridrpc.h)
 * and a message that says what happened and what to do. Private to the library. */
#ifndef GR_ERROR_H
#define GR_ERROR_H

#include <stddef.h>

#include "gridrpc.h"

#include <pthread.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gr_err {
    int code;       /* GRID_* */
    char msg[1024]; /* "" when code is GRID_OK */
} gr_err;

/* Sets E to CODE and a printf-style message; returns CODE. E may be NULL. */
int gr_seterr(gr_err *e, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Clears E to GRID_OK. */
void gr_clearerr(gr_err *e);
/* Prefixes E's message with a printf-style context ("calling linalg/dmmul: "). */
void gr_prefixerr(gr_err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Nanoseconds on the monotonic clock. */
long long gr_now_ns(void);
/* Waits on COND (MUTEX held) until it is signalled or gr_now_ns() reaches DEADLINE_NS.
 * Returns 0 when woken (the caller checks its condition again), ETIMEDOUT once the
 * deadline has passed (at once when it already has). */
int gr_cond_wait_until(pthread_cond_t *cond, pthread_mutex_t *mutex, long long deadline_ns);

#ifdef __cplusplus
}
#endif

#endif /* GR_ERROR_H */
