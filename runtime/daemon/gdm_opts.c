/* gdm_opts.c: the daemons' command lines: the getopt loop with --help, --version and
 * the usage errors, and the values both take (addresses, ports, tokens, counts), said
 * the same way by both (gridrpcd and gridmetad name themselves as PROG). */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "gdm.h"
#include "gr_opts.h"
#include "gr_settings.h"
#include "grp_limits.h"

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

int gdm_opt_host(const char *prog, const char *opt, const char *v, const char **out) {
    if (!*v) return gdm_usage_error(prog, "%s: empty address", opt);
    *out = v;
    return 0;
}

int gdm_opt_port(const char *prog, const char *opt, const char *v, int *out) {
    char err[512];
    if (gr_parse_port(v, GR_PORT_ZERO, out, err, sizeof err))
        return gdm_usage_error(prog, "%s: %s", opt, err);
    return 0;
}

int gdm_opt_token(const char *prog, const char *opt, const char *v, const char **out) {
    if (strlen(v) > GRP_MAX_TOKEN)
        return gdm_usage_error(prog, "%s: a token has at most %d bytes", opt, GRP_MAX_TOKEN);
    *out = v;
    return 0;
}

int gdm_opt_tls_pair(const char *prog, const char *cert, const char *key) {
    if (!cert == !key) return 0;
    return gdm_usage_error(prog, "%s",
                           cert ? "--tls-cert needs --tls-key FILE (the certificate's private key)"
                                : "--tls-key needs --tls-cert FILE (the certificate it belongs to)");
}

const char *gdm_opt_name(const struct option *longopts, int val, char *buf, size_t n) {
    return gr_opt_name(longopts, val, buf, n);
}

int gdm_opt_parse(const char *prog, int argc, char **argv, const char *shortopts,
                  const struct option *longopts, const char *help, const char *extra_arg,
                  int (*apply)(void *ctx, int val, const char *v), void *ctx) {
    char optstring[32];
    /* '+': stop at the first word that is not an option (it is a mistake, reported
     * below); ':': report a missing value here rather than through getopt. */
    snprintf(optstring, sizeof optstring, "+:hV%s", shortopts);
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, optstring, longopts, NULL)) != -1) {
        char name[64], msg[700];
        int rc = 0;
        switch (c) {
        case 'h': fputs(help, stdout); return 0;
        case 'V': printf("%s (GridRPC) %s\n", prog, PACKAGE_VERSION); return 0;
        case ':':
            return gdm_usage_error(prog, "%s needs a value",
                                   gr_opt_name(longopts, optopt, name, sizeof name));
        case '?':
            /* What getopt_long refused, said the way a person typed it. */
            gr_opt_refused(longopts, argv[optind - 1], optopt, msg, sizeof msg);
            return gdm_usage_error(prog, "%s", msg);
        default: rc = apply(ctx, c, optarg);
        }
        if (rc) return rc;
    }
    if (optind < argc) return gdm_usage_error(prog, "unexpected argument '%s'%s", argv[optind], extra_arg);
    return -1;
}
