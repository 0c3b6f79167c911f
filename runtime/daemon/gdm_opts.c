/* gdm_opts.c: the daemons' usage errors and counts on the command line, said the same
 * way by both (gridrpcd and gridmetad name themselves as PROG). */
#include <stdio.h>

#include "gdm.h"
#include "gr_opts.h"

int gdm_usage_error(const char *prog, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int rc = gr_usage_verror(prog, fmt, ap);
    va_end(ap);
    return rc;
}

int gdm_opt_count(const char *prog, const char *opt, const char *v, unsigned long max, unsigned *out) {
    char msg[600];
    return gr_opt_count(opt, v, max, out, msg, sizeof msg) ? gdm_usage_error(prog, "%s", msg) : 0;
}

int gdm_opt_positive(const char *prog, const char *opt, const char *v, unsigned long max, unsigned *out) {
    unsigned n;
    int rc = gdm_opt_count(prog, opt, v, max, &n);
    if (rc) return rc;
    if (n == 0) return gdm_usage_error(prog, "%s: '%s' must be at least 1", opt, v);
    *out = n;
    return 0;
}
