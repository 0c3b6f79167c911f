/* gridrpc-desc: prints interface descriptors (.gdesc files written by idlc, or bytes
 * saved from a server) in the readable form the golden tests use, so a developer can
 * see what a client will be told about a function.
 */
#include "grd_desc.h"
#include "gr_opts.h"

#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define PROGRAM "gridrpc-desc"
#define VERSION_LINE "gridrpc-desc (GridRPC) 0.1.0"
#define MAX_FILE ((size_t)64 << 20)

static void usage(void) {
    fputs("Usage: " PROGRAM " [--help] [--version] [--eval NAME=VALUE]... [--] FILE...\n"
          "Print GridRPC interface descriptors in readable form.\n"
          "\n"
          "Each FILE holds one encoded descriptor (magic \"GRDS\") or a module bundle\n"
          "(magic \"GRDM\", a .gdesc file written by idlc). Every descriptor is checked\n"
          "as a client would check it, then printed. Files over 64 MiB are refused.\n"
          "\n"
          "  --eval NAME=VALUE\n"
          "             give the integer scalar NAME a value (repeat for several) and\n"
          "             print, for each function whose integer in-scalars all have one,\n"
          "             the size of every array and the cost, as a client computes them\n"
          "             before it sends a call\n"
          "  -h, --help\n"
          "             show this help and exit\n"
          "  -V, --version\n"
          "             show the version and exit\n"
          "\n"
          "Exit status: 0 when every file was printed, 1 when any could not be read or\n"
          "decoded (the reason goes to standard error as FILE: message), 2 on a usage\n"
          "error.\n",
          stdout);
}

/* Reads PATH whole into a malloc'd buffer; on failure prints "PATH: reason". */
static int read_file(const char *path, uint8_t **out, size_t *outlen) {
    struct stat st;
    /* Regular files can be refused unread; pipes are caught by the read loop. */
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && (uintmax_t)st.st_size > MAX_FILE) {
        fprintf(stderr, "%s: file is larger than the limit of 64 MiB\n", path);
        return -1;
    }
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "%s: %s\n", path, strerror(errno));
        return -1;
    }
    size_t cap = 0, len = 0;
    uint8_t *buf = NULL;
    for (;;) {
        if (len == cap) {
            /* One byte past the limit is enough to know a file is too large. */
            if (len > MAX_FILE) {
                fprintf(stderr, "%s: file is larger than the limit of 64 MiB\n", path);
                goto fail;
            }
            size_t ncap = cap ? cap * 2 : 65536;
            if (ncap > MAX_FILE + 1) ncap = MAX_FILE + 1;
            uint8_t *nbuf = realloc(buf, ncap);
            if (nbuf == NULL) {
                fprintf(stderr, "%s: out of memory\n", path);
                goto fail;
            }
            buf = nbuf;
            cap = ncap;
        }
        size_t n = fread(buf + len, 1, cap - len, f);
        len += n;
        if (n == 0) {
            if (ferror(f)) {
                fprintf(stderr, "%s: read error: %s\n", path, strerror(errno));
                goto fail;
            }
            break;
        }
    }
    if (len > MAX_FILE) {
        fprintf(stderr, "%s: file is larger than the limit of 64 MiB\n", path);
        goto fail;
    }
    fclose(f);
    *out = buf;
    *outlen = len;
    return 0;
fail:
    free(buf);
    fclose(f);
    return -1;
}

/* Values given with --eval. */
#define MAX_EVAL 64
static const char *eval_names[MAX_EVAL];
static int64_t eval_values[MAX_EVAL];
static int n_eval;

static int is_int_type(uint32_t t) {
    return t == GRD_CHAR || t == GRD_SHORT || t == GRD_INT || t == GRD_LONG || t == GRD_LONGLONG;
}

/* Prints the extents and cost of D for the --eval values. */
static void print_eval(const grd_desc *d) {
    int64_t scalars[GRD_MAX_PARAMS] = {0};
    for (uint32_t i = 0; i < d->nparams; i++) {
        const grd_param *p = &d->params[i];
        if (p->rank != 0 || !is_int_type(p->type) || (p->mode != GRD_IN && p->mode != GRD_INOUT)) continue;
        int found = 0;
        for (int k = 0; k < n_eval; k++)
            if (strcmp(eval_names[k], p->name) == 0) {
                scalars[i] = eval_values[k];
                found = 1;
            }
        if (!found) {
            printf("  eval: skipped (no --eval value for '%s')\n", p->name);
            return;
        }
    }
    grd_error err = {0, ""};
    uint64_t total = 0;
    for (uint32_t i = 0; i < d->nparams; i++) {
        const grd_param *p = &d->params[i];
        if (p->rank == 0) continue;
        grd_extent ext;
        if (grd_extent_of(d, i, scalars, 0, &ext, &err) != GRD_OK) {
            printf("  eval: %s\n", err.msg);
            return;
        }
        const char *dir = p->mode == GRD_IN      ? "sent"
                          : p->mode == GRD_OUT   ? "returned"
                          : p->mode == GRD_INOUT ? "sent and returned"
                                                 : "server only";
        printf("  eval: %s: %llu elements, %llu bytes %s\n", p->name, (unsigned long long)ext.sent,
               (unsigned long long)ext.sent_bytes, dir);
        if (p->mode != GRD_WORK) total += ext.sent_bytes * (p->mode == GRD_INOUT ? 2u : 1u);
    }
    double flops = 0;
    if (grd_cost(d, scalars, &flops, &err) != GRD_OK) {
        printf("  eval: cost: %s\n", err.msg);
        return;
    }
    printf("  eval: %llu array bytes cross the wire; cost %.4g flops\n", (unsigned long long)total, flops);
}

/* Decodes and prints one descriptor; WHERE prefixes errors ("FILE" or "FILE:
 * descriptor 3"). */
static int print_one(const char *where, const uint8_t *buf, size_t len, int *printed) {
    grd_desc *d;
    grd_error err = {0, ""};
    if (grd_decode(buf, len, &d, &err) != GRD_OK) {
        fprintf(stderr, "%s: %s\n", where, err.msg);
        return -1;
    }
    char *text = grd_dump(d);
    if (text == NULL) {
        grd_free(d);
        fprintf(stderr, "%s: out of memory\n", where);
        return -1;
    }
    if (*printed) fputs("\n", stdout);
    fputs(text, stdout);
    free(text);
    if (n_eval > 0) print_eval(d);
    grd_free(d);
    *printed = 1;
    return 0;
}

static int print_file(const char *path, int *printed) {
    uint8_t *buf;
    size_t len;
    if (read_file(path, &buf, &len) != 0) return -1;
    int rc = 0;
    if (len >= 4 && memcmp(buf, "GRDM", 4) == 0) {
        uint32_t n;
        size_t *offs, *lens;
        grd_error err = {0, ""};
        if (grd_bundle_split(buf, len, &n, &offs, &lens, &err) != GRD_OK) {
            fprintf(stderr, "%s: %s\n", path, err.msg);
            rc = -1;
        } else {
            for (uint32_t i = 0; i < n; i++) {
                char where[4096 + 32];
                snprintf(where, sizeof where, "%s: descriptor %u", path, i);
                if (print_one(where, buf + offs[i], lens[i], printed) != 0) rc = -1;
            }
            free(offs);
            free(lens);
        }
    } else {
        rc = print_one(path, buf, len, printed);
    }
    free(buf);
    return rc;
}

/* Records one --eval NAME=INTEGER. Returns 0, or the exit status 2 after a message. */
static int add_eval(const char *v) {
    const char *eq = v ? strchr(v, '=') : NULL;
    char *end = NULL;
    long long num = 0;
    if (eq) {
        errno = 0;
        num = strtoll(eq + 1, &end, 10);
    }
    if (!eq || eq == v || !end || *end || end == eq + 1 || errno == ERANGE) {
        fprintf(stderr, PROGRAM ": --eval needs NAME=INTEGER, as in --eval n=1000\n");
        return 2;
    }
    if (n_eval == MAX_EVAL) {
        fprintf(stderr, PROGRAM ": at most %d --eval values\n", MAX_EVAL);
        return 2;
    }
    char *name = strndup(v, (size_t)(eq - v));
    if (!name) {
        fprintf(stderr, PROGRAM ": out of memory\n");
        return 2;
    }
    eval_names[n_eval] = name;
    eval_values[n_eval++] = num;
    return 0;
}

/* What getopt_long refused in ARG (OPT: its optopt), as the user typed it: said as the
 * daemons say it (gr_opts.h), so a typo of an option names the option. */
static int bad_option(const struct option *opts, const char *arg, int opt) {
    char msg[256];
    gr_opt_refused(opts, arg, opt, msg, sizeof msg);
    fprintf(stderr, PROGRAM ": %s\nTry '" PROGRAM " --help'.\n", msg);
    return 2;
}

int main(int argc, char **argv) {
    enum { OPT_EVAL = 256 };
    static const struct option long_options[] = {{"eval", required_argument, NULL, OPT_EVAL},
                                                 {"help", no_argument, NULL, 'h'},
                                                 {"version", no_argument, NULL, 'V'},
                                                 {NULL, 0, NULL, 0}};
    /* '+': options come before the files; ':': a missing value is reported here. */
    opterr = 0;
    int c, rc;
    while ((c = getopt_long(argc, argv, "+:hV", long_options, NULL)) != -1) {
        switch (c) {
        case 'h': usage(); return 0;
        case 'V': puts(VERSION_LINE); return 0;
        case OPT_EVAL:
            if ((rc = add_eval(optarg))) return rc;
            break;
        case ':': return add_eval(NULL); /* only --eval takes a value */
        default: return bad_option(long_options, argv[optind - 1], optopt);
        }
    }
    int first = optind;
    if (first >= argc) {
        fprintf(stderr, PROGRAM ": no FILE given\nTry '" PROGRAM " --help'.\n");
        return 2;
    }
    int status = 0, printed = 0;
    for (int i = first; i < argc; i++)
        if (print_file(argv[i], &printed) != 0) status = 1;
    if (fflush(stdout) != 0) {
        fprintf(stderr, PROGRAM ": error writing output: %s\n", strerror(errno));
        status = 1;
    }
    return status;
}
