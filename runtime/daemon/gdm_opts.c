/* gdm_opts.c: the daemons' command lines: the getopt loop with --help, --version and
 * the usage errors, and the values both take (addresses, ports, tokens, counts), said
 * the same way by both (gridrpcd and gridmetad name themselves as PROG). Secrets come
 * from files (--token-file): one typed on the command line is read by every user of
 * the machine in ps, so it is wiped from the arguments once copied. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

int gdm_opt_secret_file(const char *prog, const char *opt, const char *path, char *out) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO must not hang the start */
    if (fd < 0) return gdm_usage_error(prog, "%s: cannot read '%s': %s", opt, path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return gdm_usage_error(prog, "%s: '%s' is not a regular file", opt, path);
    }
    if (st.st_mode & 0077) {
        close(fd);
        return gdm_usage_error(prog,
                               "%s: '%s' has mode %04o: other users may read the secret; run 'chmod 600 %s'",
                               opt, path, (unsigned)st.st_mode & 07777, path);
    }
    char buf[GRP_MAX_TOKEN + 2];
    size_t got = 0;
    for (;;) {
        ssize_t k = read(fd, buf + got, sizeof buf - 1 - got);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        got += (size_t)k;
        if (got == sizeof buf - 1) break;
    }
    close(fd);
    buf[got] = '\0';
    /* The first line is the secret; an editor's final newline is not part of it. */
    buf[strcspn(buf, "\r\n")] = '\0';
    size_t n = strlen(buf);
    if (n == 0) return gdm_usage_error(prog, "%s: '%s' holds no token on its first line", opt, path);
    if (n > GRP_MAX_TOKEN)
        return gdm_usage_error(prog, "%s: a token has at most %d bytes", opt, GRP_MAX_TOKEN);
    memcpy(out, buf, n + 1);
    return 0;
}

int gdm_opt_secret_arg(const char *prog, const char *opt, char *v, char *out) {
    size_t n = strlen(v);
    /* Wiped even when refused: it was typed for all to see either way. */
    if (n > GRP_MAX_TOKEN) {
        gdm_scrub_arg(v);
        return gdm_usage_error(prog, "%s: a token has at most %d bytes", opt, GRP_MAX_TOKEN);
    }
    memcpy(out, v, n + 1);
    gdm_scrub_arg(v);
    return 0;
}

void gdm_scrub_arg(char *v) {
    /* /proc/PID/cmdline reads this memory: what was typed no longer shows in ps. */
    for (; v && *v; v++)
        *v = 'x';
}
