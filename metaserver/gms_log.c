/* gms_log.c: gridmetad's log on stderr: one line per event, prefixed with the local time
 * (milliseconds) and the level. Each line is formatted first and written with one
 * fputs, so lines from concurrent threads never interleave. */
#include <stdio.h>
#include <sys/time.h>
#include <time.h>

#include "gms.h"

/* Written once by main before any thread starts; read-only afterwards. */
static int log_level = GMS_LOG_INFO;

static const char *const level_names[] = {"error", "warn", "info", "debug"};

void gms_log_set_level(int level) {
    log_level = level;
}

int gms_log_enabled(int level) {
    return level <= log_level;
}

void gms_log(int level, const char *fmt, ...) {
    if (level > log_level) return;
    char line[2048];
    struct timeval tv;
    struct tm tm;
    gettimeofday(&tv, NULL);
    localtime_r(&tv.tv_sec, &tm);
    size_t n = strftime(line, sizeof line, "%Y-%m-%dT%H:%M:%S", &tm);
    n += (size_t)snprintf(line + n, sizeof line - n, ".%03d gridmetad %s: ", (int)(tv.tv_usec / 1000),
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
