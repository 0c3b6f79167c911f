/* tap.h: TAP output for the C test programs that drive real daemons (included once per
 * program): result() prints "ok N ..." or "not ok N ...", diag() a "# ..." line; TESTS
 * and FAILED count them for the plan and the exit status. */
#ifndef TAP_H
#define TAP_H

#include <stdarg.h>
#include <stdio.h>

static int tests, failed;

static void result(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3), unused));
static void result(int ok, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("%s %d ", ok ? "ok" : "not ok", ++tests);
    vprintf(fmt, ap);
    printf("\n");
    fflush(stdout);
    va_end(ap);
    if (!ok) failed++;
}

static void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2), unused));
static void diag(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("# ");
    vprintf(fmt, ap);
    printf("\n");
    fflush(stdout);
    va_end(ap);
}

#endif
