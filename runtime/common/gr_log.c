/* gr_log.c: the daemons' log on stderr: one line per event, prefixed with the local time
 * (milliseconds), the program and the level. Each line is formatted first and written
 * with one fputs, so lines from concurrent threads never interleave. */
#include "gr_log.h"

#include <stdarg.h>
#include <stdio.h>
#include <sys/time.h>
#include <time.h>

/* Written once by main before any thread starts; read-only afterwards. */
static int log_level = GR_LOG_INFO;
static const char *log_program = "gridrpc";

static const char *const level_names[] = {"error", "warn", "info", "debug"};

void gr_log_init(const char *program, int level) {
    log_program = program;
    log_level = level;
}

int gr_log_enabled(int level) {
    return level <= log_level;
}

void gr_log(int level, const char *fmt, ...) {
    if (level > log_level) return;
    char line[2048];
    struct timeval tv;
    struct tm tm;
    gettimeofday(&tv, NULL);
    localtime_r(&tv.tv_sec, &tm);
    size_t n = strftime(line, sizeof line, "%Y-%m-%dT%H:%M:%S", &tm);
    n += (size_t)snprintf(line + n, sizeof line - n, ".%03d %s %s: ", (int)(tv.tv_usec / 1000), log_program,
                          level_names[level]);
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(line + n, sizeof line - n - 1, fmt, ap);
    va_end(ap);
    if (k < 0) k = 0;
    n += (size_t)k < sizeof line - n - 1 ? (size_t)k : sizeof line - n - 2;
    line[n++] = '\n';
    line[n] = '\0';
    fputs(line, stderr);
}
