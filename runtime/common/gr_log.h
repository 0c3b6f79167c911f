/* gr_log.h: the daemons' log on stderr (gridrpcd, gridmetad): one line per event, with
 * the local time, the program's name and the level. Compiled into each daemon, not
 * into the client library. */
#ifndef GR_LOG_H
#define GR_LOG_H

#include <stddef.h>

enum { GR_LOG_ERROR = 0, GR_LOG_WARN = 1, GR_LOG_INFO = 2, GR_LOG_DEBUG = 3 };

/* Called by main before any thread starts: the name on each line and the level. */
void gr_log_init(const char *program, int level);
int gr_log_enabled(int level);
/* The message's bound in bytes before escaping (a longer one is cut). */
#define GR_LOG_MAX_MESSAGE 2048
/* Writes the message, its control characters escaped (\n, \r, \t, \xNN; also DEL,
 * C1 controls and malformed UTF-8), as one line. */
void gr_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Copies the first N bytes of IN (up to a NUL) into OUT (CAP bytes, NUL-terminated)
 * with gr_log's escapes; returns the length written (cut whole at an escape). */
size_t gr_log_escape(const char *in, size_t n, char *out, size_t cap);

#endif
