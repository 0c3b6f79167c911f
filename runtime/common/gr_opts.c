/* gr_opts.c: command-line pieces the daemons share (gr_opts.h). */
#include "gr_opts.h"

#include "gr_suggest.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gr_usage_verror(const char *prog, const char *fmt, va_list ap) {
    char msg[768];
    vsnprintf(msg, sizeof msg, fmt, ap);
    fprintf(stderr, "%s: %s (see %s --help)\n", prog, msg, prog);
    return 2;
}

const char *gr_opt_name(const struct option *opts, int val, char *buf, size_t n) {
    for (const struct option *o = opts; o->name; o++)
        if (o->val == val) {
            snprintf(buf, n, "--%s", o->name);
            return buf;
        }
    snprintf(buf, n, "-%c", val);
    return buf;
}

void gr_opt_refused(const struct option *opts, const char *arg, int opt, char *msg, size_t n) {
    char name[64];
    int with_value = strncmp(arg, "--", 2) == 0 && strchr(arg, '=');
    if (opt > 0 && opt < 256 && !with_value) {
        snprintf(msg, n, "unknown option '-%c'", opt);
        return;
    }
    if (opt && with_value) {
        snprintf(msg, n, "%s takes no value", gr_opt_name(opts, opt, name, sizeof name));
        return;
    }
    snprintf(name, sizeof name, "%.*s", (int)strcspn(arg, "="), arg);
    char matches[512] = "";
    int found = 0;
    for (const struct option *o = opts; o->name; o++)
        if (strncmp(o->name, name + 2, strlen(name + 2)) == 0 && ++found)
            snprintf(matches + strlen(matches), sizeof matches - strlen(matches), "%s--%s",
                     found > 1 ? ", " : "", o->name);
    if (found > 1) {
        /* Already a list of what was meant: no guess on top of it. */
        snprintf(msg, n, "option '%s' is ambiguous: %s", name, matches);
        return;
    }
    gr_suggest s;
    gr_suggest_init(&s, strncmp(name, "--", 2) == 0 ? name + 2 : NULL);
    for (const struct option *o = opts; o->name; o++)
        gr_suggest_offer(&s, o->name);
    const char *best = gr_suggest_best(&s);
    if (best)
        snprintf(msg, n, "unknown option '%s': did you mean --%s?", name, best);
    else
        snprintf(msg, n, "unknown option '%s'", name);
}

int gr_opt_count(const char *opt, const char *v, unsigned long max, unsigned *out, char *msg, size_t n) {
    char *end;
    errno = 0;
    unsigned long long k = *v >= '0' && *v <= '9' ? strtoull(v, &end, 10) : 0;
    if (*v < '0' || *v > '9' || errno || *end != '\0')
        snprintf(msg, n, "%s: '%s' is not a positive integer", opt, v);
    else if (k == 0)
        snprintf(msg, n, "%s: '%s' must be at least 1", opt, v);
    else if (k > max)
        snprintf(msg, n, "%s: '%s' is too large: at most %lu", opt, v, max);
    else {
        *out = (unsigned)k;
        return 0;
    }
    return -1;
}
