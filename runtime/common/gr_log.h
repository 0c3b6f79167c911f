/* gr_log.h: the daemons' log on stderr (gridrpcd, gridmetad): one line per event, with
 * the local time, the program's name and the level. Compiled into each daemon, not
 * into the client library. */
#ifndef GR_LOG_H
#define GR_LOG_H

enum { GR_LOG_ERROR = 0, GR_LOG_WARN = 1, GR_LOG_INFO = 2, GR_LOG_DEBUG = 3 };

/* Called by main before any thread starts: the name on each line and the level. */
void gr_log_init(const char *program, int level);
int gr_log_enabled(int level);
void gr_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
