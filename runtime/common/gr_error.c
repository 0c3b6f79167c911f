/* gr_error.c: error values, the public error tables (generated from GRID_ERROR_MAP so
 * names and texts never drift from the codes), and the thread's last error message. */
#include "gr_error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

int gr_seterr(gr_err *e, int code, const char *fmt, ...) {
    if (e) {
        va_list ap;
        va_start(ap, fmt);
        e->code = code;
        vsnprintf(e->msg, sizeof e->msg, fmt, ap);
        va_end(ap);
    }
    return code;
}

void gr_clearerr(gr_err *e) {
    if (e) {
        e->code = GRID_OK;
        e->msg[0] = '\0';
    }
}

void gr_prefixerr(gr_err *e, const char *fmt, ...) {
    if (!e) return;
    char prefix[512], old[sizeof e->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, e->msg, sizeof old);
    snprintf(e->msg, sizeof e->msg, "%.511s%.511s", prefix, old);
}

long long gr_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int gr_cond_wait_until(pthread_cond_t *cond, pthread_mutex_t *mutex, long long deadline_ns) {
    long long left = deadline_ns - gr_now_ns();
    if (left <= 0) return ETIMEDOUT;
    /* The condition variables use the default (realtime) clock: the monotonic time left
     * is added to it. */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long long ns = (long long)ts.tv_nsec + left % 1000000000LL;
    ts.tv_sec += (time_t)(left / 1000000000LL + ns / 1000000000LL);
    ts.tv_nsec = (long)(ns % 1000000000LL);
    int rc = pthread_cond_timedwait(cond, mutex, &ts);
    return rc == ETIMEDOUT && gr_now_ns() >= deadline_ns ? ETIMEDOUT : 0;
}

const char *grid_error_string(int code) {
    switch (code) {
#define GRID_ERROR_TEXT_(name, value, text)                                                                  \
    case value: return text;
        GRID_ERROR_MAP(GRID_ERROR_TEXT_)
#undef GRID_ERROR_TEXT_
    }
    return "unknown error code";
}

const char *grid_error_name(int code) {
    switch (code) {
#define GRID_ERROR_NAME_(name, value, text)                                                                  \
    case value: return "GRID_" #name;
        GRID_ERROR_MAP(GRID_ERROR_NAME_)
#undef GRID_ERROR_NAME_
    }
    return "GRID_UNKNOWN";
}
