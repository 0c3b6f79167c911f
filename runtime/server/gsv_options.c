/* gsv_options.c: gridrpcd's command line: --help, --version, and every option checked
 * here, so that a typo stops the server at once (exit 2, naming the option) instead
 * of surfacing later as a strange behaviour. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gsv.h"

#ifndef GRIDRPC_MODULE_DIR
#define GRIDRPC_MODULE_DIR "/usr/local/lib/gridrpc/modules"
#endif

static const char help_text[] =
    "Usage: gridrpcd [OPTIONS]\n"
    "Serve the functions of GridRPC stub modules (built from IDL by idlc) to GridRPC clients.\n"
    "\n"
    "Modules:\n"
    "      --module PATH.so     load this module (repeatable); a module that cannot be loaded\n"
    "                           stops the server\n"
    "      --module-dir DIR     load every *.so in DIR (repeatable; default: " GRIDRPC_MODULE_DIR ");\n"
    "                           a bad module there is reported and skipped\n"
    "                           GRIDRPC_MODULE_PATH (colon-separated directories) adds more\n"
    "      Functions answer to 'module/function', and to 'function' when no other loaded\n"
    "      module has a function of that name.\n"
    "\n"
    "Network:\n"
    "      --host ADDR          address to listen on (default 0.0.0.0: every interface)\n"
    "      --port N             TCP port (default 7000; 0: any free port). Once ready the server\n"
    "                           prints 'listening on HOST:PORT' on stdout\n"
    "      --token TOKEN        require clients to present TOKEN in HELLO\n"
    "\n"
    "Execution:\n"
    "      --threads N          worker threads (default: one per online core)\n"
    "      --mode pool|thread   pool: a fixed pool of workers (default); thread: a new thread\n"
    "                           per call (kept for comparison)\n"
    "      --queue fcfs|sjf     order of queued calls: first come first served (default), or\n"
    "                           shortest predicted job first (from the IDL Complexity)\n"
    "      --isolate            run each call in a child process, so a function that crashes or\n"
    "                           calls exit() fails only its call (costs a fork per call)\n"
    "\n"
    "Limits and timeouts (BYTES may end in K, M or G: KiB, MiB, GiB):\n"
    "      --max-message BYTES  largest message accepted (default 1G)\n"
    "      --max-array BYTES    largest array argument (default 1G)\n"
    "      --max-head BYTES     largest head section of a call: scalars, strings, files\n"
    "                           (default 64M; at most 4G-1)\n"
    "      --io-timeout S       drop a client that stalls in the middle of a message for S\n"
    "                           seconds (default 60; 0: never). Idle connections are kept.\n"
    "      --shutdown-timeout S on SIGTERM or SIGINT, wait at most S seconds for running calls\n"
    "                           to finish (default 30)\n"
    "\n"
    "Logging (on stderr; one line per call at info level):\n"
    "      --log-level LEVEL    error, warn, info (default) or debug\n"
    "      --quiet              only errors (same as --log-level error)\n"
    "\n"
    "  -h, --help               show this help and exit\n"
    "  -V, --version            show the version and exit\n"
    "\n"
    "Exit status: 0 after a clean shutdown, 1 if the server cannot start, 2 on a usage error.\n"
    "See docs/server.md.\n";

/* Reports a usage error on stderr, naming the option; returns the exit status 2. */
static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "gridrpcd: %s (see gridrpcd --help)\n", msg);
    return 2;
}

static int parse_uint(const char *opt, const char *v, unsigned long long max, unsigned long long *out) {
    char *end;
    errno = 0;
    if (*v == '-' || *v == '\0') return usage_error("%s: '%s' is not a non-negative integer", opt, v);
    unsigned long long n = strtoull(v, &end, 10);
    if (errno || *end != '\0') return usage_error("%s: '%s' is not a non-negative integer", opt, v);
    if (n > max) return usage_error("%s: '%s' is too large", opt, v);
    *out = n;
    return 0;
}

static int parse_bytes(const char *opt, const char *v, unsigned long long max, unsigned long long *out) {
    char *end;
    errno = 0;
    if (*v == '-' || *v == '\0') return usage_error("%s: '%s' is not a byte count", opt, v);
    unsigned long long n = strtoull(v, &end, 10);
    unsigned shift = 0;
    if (*end == 'K' || *end == 'k')
        shift = 10, end++;
    else if (*end == 'M' || *end == 'm')
        shift = 20, end++;
    else if (*end == 'G' || *end == 'g')
        shift = 30, end++;
    if (errno || end == v || *end != '\0')
        return usage_error("%s: '%s' is not a byte count (like 64M)", opt, v);
    if (n == 0) return usage_error("%s: '%s' must be at least 1", opt, v);
    if (n > (max >> shift)) return usage_error("%s: '%s' is too large", opt, v);
    *out = n << shift;
    return 0;
}

static int parse_seconds(const char *opt, const char *v, double *out) {
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (errno || end == v || *end != '\0' || !isfinite(d) || d < 0 || d > 1e9)
        return usage_error("%s: '%s' is not a number of seconds", opt, v);
    *out = d;
    return 0;
}

static int push(const char ***list, unsigned *n, const char *v) {
    const char **p = realloc(*list, (*n + 1) * sizeof *p);
    if (!p) {
        fprintf(stderr, "gridrpcd: out of memory\n");
        return 1;
    }
    p[(*n)++] = v;
    *list = p;
    return 0;
}

/* Options that take a value, as "--name value" or "--name=value". */
static const char *const valued[] = {"--host",
                                     "--port",
                                     "--module",
                                     "--module-dir",
                                     "--threads",
                                     "--mode",
                                     "--queue",
                                     "--token",
                                     "--max-message",
                                     "--max-array",
                                     "--max-head",
                                     "--io-timeout",
                                     "--shutdown-timeout",
                                     "--log-level",
                                     NULL};

static int takes_value(const char *name) {
    for (int i = 0; valued[i]; i++)
        if (strcmp(valued[i], name) == 0) return 1;
    return 0;
}

/* Applies one option NAME with value V (NULL for flags). */
static int apply(gsv_options *o, const char *name, const char *v) {
    unsigned long long n;
    int rc = 0;
    if (strcmp(name, "--host") == 0) {
        if (!*v) return usage_error("%s: empty address", name);
        o->host = v;
    } else if (strcmp(name, "--port") == 0) {
        if ((rc = parse_uint(name, v, 65535, &n))) return rc;
        o->port = (int)n;
    } else if (strcmp(name, "--module") == 0) {
        return push(&o->modules, &o->nmodules, v);
    } else if (strcmp(name, "--module-dir") == 0) {
        if (o->default_dir) o->nmodule_dirs = 0, o->default_dir = 0;
        return push(&o->module_dirs, &o->nmodule_dirs, v);
    } else if (strcmp(name, "--threads") == 0) {
        if ((rc = parse_uint(name, v, 4096, &n))) return rc;
        if (n == 0) return usage_error("%s: '%s' must be at least 1", name, v);
        o->threads = (unsigned)n;
    } else if (strcmp(name, "--mode") == 0) {
        if (strcmp(v, "pool") == 0)
            o->mode = GSV_MODE_POOL;
        else if (strcmp(v, "thread") == 0)
            o->mode = GSV_MODE_THREAD;
        else
            return usage_error("%s: '%s' is not pool or thread", name, v);
    } else if (strcmp(name, "--queue") == 0) {
        if (strcmp(v, "fcfs") == 0)
            o->queue = GSV_QUEUE_FCFS;
        else if (strcmp(v, "sjf") == 0)
            o->queue = GSV_QUEUE_SJF;
        else
            return usage_error("%s: '%s' is not fcfs or sjf", name, v);
    } else if (strcmp(name, "--token") == 0) {
        if (strlen(v) > 1024) return usage_error("%s: a token has at most 1024 bytes", name);
        o->token = v;
    } else if (strcmp(name, "--max-message") == 0) {
        if ((rc = parse_bytes(name, v, (unsigned long long)1 << 62, &n))) return rc;
        o->limits.max_message = n;
    } else if (strcmp(name, "--max-array") == 0) {
        if ((rc = parse_bytes(name, v, (unsigned long long)1 << 62, &n))) return rc;
        o->limits.max_array = n;
    } else if (strcmp(name, "--max-head") == 0) {
        if ((rc = parse_bytes(name, v, UINT32_MAX, &n))) return rc;
        o->limits.max_head = (uint32_t)n;
    } else if (strcmp(name, "--io-timeout") == 0) {
        return parse_seconds(name, v, &o->io_timeout);
    } else if (strcmp(name, "--shutdown-timeout") == 0) {
        return parse_seconds(name, v, &o->shutdown_timeout);
    } else if (strcmp(name, "--log-level") == 0) {
        if (strcmp(v, "error") == 0)
            o->log_level = GSV_LOG_ERROR;
        else if (strcmp(v, "warn") == 0)
            o->log_level = GSV_LOG_WARN;
        else if (strcmp(v, "info") == 0)
            o->log_level = GSV_LOG_INFO;
        else if (strcmp(v, "debug") == 0)
            o->log_level = GSV_LOG_DEBUG;
        else
            return usage_error("%s: '%s' is not error, warn, info or debug", name, v);
    } else if (strcmp(name, "--quiet") == 0) {
        o->log_level = GSV_LOG_ERROR;
    } else if (strcmp(name, "--isolate") == 0) {
        o->isolate = 1;
    } else {
        return usage_error("unknown option '%s'", name);
    }
    return 0;
}

int gsv_options_parse(int argc, char **argv, gsv_options *o) {
    memset(o, 0, sizeof *o);
    o->host = "0.0.0.0";
    o->port = 7000;
    o->mode = GSV_MODE_POOL;
    o->queue = GSV_QUEUE_FCFS;
    grw_limits_default(&o->limits);
    o->io_timeout = 60;
    o->shutdown_timeout = 30;
    o->log_level = GSV_LOG_INFO;
    if (push(&o->module_dirs, &o->nmodule_dirs, GRIDRPC_MODULE_DIR)) return 1;
    o->default_dir = 1;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            fputs(help_text, stdout);
            return 0;
        }
        if (strcmp(a, "-V") == 0 || strcmp(a, "--version") == 0) {
            printf("gridrpcd (GridRPC) %s\n", PACKAGE_VERSION);
            return 0;
        }
        if (strncmp(a, "--", 2) != 0)
            return usage_error("unexpected argument '%s': modules are given with --module", a);
        char name[64];
        const char *eq = strchr(a, '=');
        size_t len = eq ? (size_t)(eq - a) : strlen(a);
        if (len >= sizeof name) return usage_error("unknown option '%s'", a);
        memcpy(name, a, len);
        name[len] = '\0';
        const char *v = NULL;
        if (takes_value(name)) {
            if (eq)
                v = eq + 1;
            else if (i + 1 < argc)
                v = argv[++i];
            else
                return usage_error("%s needs a value", name);
        } else if (eq) {
            if (strcmp(name, "--quiet") == 0) return usage_error("%s takes no value", name);
            return usage_error("unknown option '%s'", name);
        }
        int rc = apply(o, name, v);
        if (rc) return rc;
    }
    return -1;
}

void gsv_options_free(gsv_options *o) {
    free(o->modules);
    free(o->module_dirs);
    o->modules = NULL;
    o->module_dirs = NULL;
}
