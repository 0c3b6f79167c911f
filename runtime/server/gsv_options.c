/* gsv_options.c: gridrpcd's command line (getopt_long): --help, --version, and every
 * option checked here, so that a typo stops the server at once (exit 2, naming the
 * option) instead of surfacing later as a strange behaviour. Durations, sizes and the
 * port are read by gr_settings, as in the client's configuration files. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gr_opts.h"
#include "gr_scheme.h"
#include "gr_settings.h"
#include "grp_limits.h"
#include "gsv.h"

static const char help_text[] =
    "Usage: gridrpcd [OPTIONS]\n"
    "Serve the functions of GridRPC stub modules (built from IDL by idlc) to GridRPC clients.\n"
    "\n"
    "Modules:\n"
    "      --module PATH.so     load this module (repeatable); a module that cannot be loaded\n"
    "                           stops the server\n"
    "      --module-dir DIR     load every *.so in DIR (repeatable); a bad module there is\n"
    "                           reported and skipped\n"
    "      --default-modules    load the default modules too, after those named with --module\n"
    "                           and --module-dir\n"
    "      The default modules, served when neither --module nor --module-dir is given: every\n"
    "      *.so in " GRIDRPC_MODULE_DIR "\n"
    "      (make install puts the standard ones there: linalg, lsq and nas), then in the\n"
    "      directories of GRIDRPC_MODULE_PATH (colon-separated). The test module (test/crash\n"
    "      ends its executor, test/sleep holds a worker) is installed apart, in\n"
    "      " GRIDRPC_TEST_MODULE_DIR ": serve it only with --module\n"
    "      Functions answer to 'module/function', and to 'function' when no other loaded\n"
    "      module has a function of that name.\n"
    "\n"
    "Network:\n"
    "      --host ADDR          address to listen on (default 127.0.0.1: this machine only).\n"
    "                           Any other address needs --key-file or --tls-cert, or --insecure\n"
    "      --insecure           listen on a non-loopback --host with no key and no TLS: anyone\n"
    "                           who reaches the port can run anything here (logged at start)\n"
    "      --port N             TCP port (default 7000; 0: any free port). Once ready the server\n"
    "                           prints 'listening on HOST:PORT' on stdout\n"
    "      --key-file FILE      require every client to prove it holds a key of FILE\n"
    "                           (HMAC-SHA-256 challenge-response after HELLO; the key never\n"
    "                           crosses the wire, and this server proves it holds the key\n"
    "                           too). One key per line in hex, up to 8 (all accepted: add\n"
    "                           the new key to rotate), each after its role ('client HEX',\n"
    "                           'server HEX', 'admin HEX'; untagged: every role, warned);\n"
    "                           the first server key is also used for the metaserver and for\n"
    "                           DATA_COPY to other servers (docs/security.md). The file must\n"
    "                           not be readable by others (chmod 600). Make one with\n"
    "                           'gridrpc keygen FILE'\n"
    "      --token-file FILE    require clients to present the token on FILE's first line in\n"
    "                           HELLO (FILE mode 0600; weaker than --key-file: the token\n"
    "                           travels in clear text)\n"
    "      --token TOKEN        the same from the command line, where ps shows it to every\n"
    "                           user: accepted for old command lines, with a warning, and\n"
    "                           wiped from the process's arguments at start; use --token-file\n"
    "      --tls-cert FILE      serve TLS only (clients name this server gridrpcs://HOST:PORT),\n"
    "                           with this PEM certificate (chain); needs --tls-key\n"
    "      --tls-key FILE       the certificate's PEM private key\n"
    "      --tls-ca FILE        CA certificates (PEM) for the TLS servers this one connects to:\n"
    "                           a gridrpcs:// metaserver, data copies to gridrpcs:// servers\n"
    "                           (default: GRIDRPC_TLS_CA, else the system's store)\n"
    "\n"
    "Metaserver (gridmetad; see docs/server.md):\n"
    "      --metaserver HOST:PORT  register with this metaserver and send it heartbeats with\n"
    "                           the load; it is found again after it restarts; gridrpcs://HOST:PORT\n"
    "                           for a metaserver that serves TLS. With --tls-cert the address\n"
    "                           registered is gridrpcs://, so clients use TLS\n"
    "      --advertise HOST:PORT  the address clients should use (default: --host and the\n"
    "                           listening port; the host name when listening on every interface)\n"
    "      --name NAME          shown to people (default: 'gridrpcd on HOSTNAME')\n"
    "      --speed FLOPS        start-up speed estimate, flops/s (1e9, 2.5G); default: measured at\n"
    "                           start (about 20 ms: a small double matrix product on one core,\n"
    "                           times the cores)\n"
    "      --metaserver-token-file FILE\n"
    "                           token presented to the metaserver, on FILE's first line\n"
    "                           (default: --token-file, else GRIDRPC_TOKEN)\n"
    "      --metaserver-token TOKEN\n"
    "                           the same from the command line (warned about and wiped, as\n"
    "                           --token)\n"
    "      --metaserver-key-file FILE\n"
    "                           key file for the metaserver's handshake (default: --key-file)\n"
    "      --copy-to HOST:PORT  a server this one may send data handles to (DATA_COPY), besides\n"
    "                           those its metaserver lists up; repeat for more; HOST:* trusts\n"
    "                           every port of HOST. Without either, DATA_COPY is refused\n"
    "                           (docs/security.md)\n"
    "\n"
    "Execution:\n"
    "      --threads N          worker threads (default: one per online core)\n"
    "      --blas-threads N     OpenBLAS threads for every call (default: the cores shared by\n"
    "                           the calls running; 1 with --threads = cores: calls side by\n"
    "                           side, one core each; cores with --threads 1: one call at a\n"
    "                           time on every core; OPENBLAS_NUM_THREADS when set)\n"
    "      --mode pool|thread   pool: a fixed pool of workers (default); thread: a new thread\n"
    "                           per call (kept for comparison)\n"
    "      --queue fcfs|sjf     order of queued calls: first come first served (default), or\n"
    "                           shortest predicted job first (from the IDL Complexity)\n"
    "      --call-timeout TIME  end a call whose function runs longer than TIME (default: no\n"
    "                           limit); it fails with an error naming this option; a\n"
    "                           function's own IDL Timeout replaces it for that function\n"
    "      --call-timeout-max TIME  the most any call may run, whatever its IDL Timeout\n"
    "                           says; without --call-timeout, also the limit of the\n"
    "                           others (default: no cap)\n"
    "      --call-cpu TIME      end a call whose function uses more than TIME of CPU (all\n"
    "                           its threads together; default: no limit)\n"
    "      --call-memory SIZE   memory a call may allocate in its executor (default: no limit);\n"
    "                           past it the allocation fails, and so does the call\n"
    "      --in-process-unsafe  run calls on the server's own threads, not in executor processes:\n"
    "                           a function that crashes, calls exit() or overflows its stack\n"
    "                           then takes the whole server down; for trusted functions and\n"
    "                           benchmarks only\n"
    "      --isolate            accepted for old command lines: calls run in executor processes\n"
    "                           anyway (the default; docs/server.md)\n"
    "\n"
    "Two-phase calls (gridrpc submit / fetch; docs/server.md):\n"
    "      --job-dir DIR        keep submitted jobs and their results in DIR (created 0700; default\n"
    "                           $XDG_STATE_HOME/gridrpc/jobs-PORT, else ~/.local/state/gridrpc/jobs-PORT).\n"
    "                           A restart on the same DIR serves the finished jobs and runs the\n"
    "                           unfinished ones again\n"
    "      --job-keep TIME      remove a finished job this long after it finished (default 7d)\n"
    "      --job-quota SIZE     most bytes of kept arguments and results one owner (a key id, else\n"
    "                           a client session) may hold in the job folder (default 1G); a SUBMIT\n"
    "                           past it is refused until the owner forgets jobs\n"
    "\n"
    "Limits and timeouts:\n"
    "      --max-message SIZE   largest message accepted (default 1G)\n"
    "      --max-array SIZE     largest array argument (default 1G)\n"
    "      --max-head SIZE      largest head section of a call: scalars, strings, files\n"
    "                           (default 64M; at most 4G-1)\n"
    "      --io-timeout TIME    drop a client that stalls in the middle of a message for TIME\n"
    "                           (nothing arrives for TIME, whatever it announced), or sends no\n"
    "                           HELLO within TIME of connecting (default 60s; 0: never)\n"
    "      --idle-timeout TIME  close a connection that held nothing (no call, remote object or\n"
    "                           data) for TIME (default 5m; 0: never); clients reconnect unseen\n"
    "      --max-connections N  connections open at once (default 4096); more are answered\n"
    "                           ERROR GRID_ERR_LIMIT and closed\n"
    "      --max-connections-per-address N\n"
    "                           connections open at once from one address (default 256),\n"
    "                           so one host cannot take them all\n"
    "      --max-calls-per-connection N\n"
    "                           calls waiting or running from one connection (default 16384);\n"
    "                           one more is answered GRID_ERR_LIMIT, the connection goes on\n"
    "      --max-calls N        calls waiting or running in all (default 65536); the same\n"
    "      --max-objects-per-connection N\n"
    "                           remote objects one connection owns (default 1024); one more\n"
    "                           OBJ_CREATE is answered GRID_ERR_LIMIT\n"
    "      --max-object-processes N\n"
    "                           remote objects alive at once on this server, each in a process\n"
    "                           of its own (default 256); one more OBJ_CREATE is answered\n"
    "                           GRID_ERR_LIMIT\n"
    "      --max-sessions-per-connection N\n"
    "                           data sessions one connection uses (default 4096); a request\n"
    "                           naming one more is answered GRID_ERR_LIMIT\n"
    "      --max-call-memory SIZE  bytes of arguments and results held by waiting and running\n"
    "                           calls, until each result is written (default: a quarter of\n"
    "                           physical memory); arriving arrays are counted as they come\n"
    "      --data-memory SIZE   most bytes of remote data (data handles: DATA_PUT, KEEP outputs)\n"
    "                           held at once (default: a quarter of physical memory); more is\n"
    "                           refused with GRID_ERR_LIMIT\n"
    "      --data-grace TIME    free a session's data once none of its connections has been\n"
    "                           open for TIME (default 60s)\n"
    "      --data-lease TIME    free a session's data once it has not been used for TIME, even\n"
    "                           with a connection open (default 1h)\n"
    "      --shutdown-timeout TIME\n"
    "                           on SIGTERM or SIGINT, wait at most TIME for running calls to\n"
    "                           finish (default 30s)\n"
    "      SIZE is bytes or a whole number with K, M, G or T, powers of 1024 (4096, 64K, 16M);\n"
    "      TIME is seconds or a number with ms, s, m, h or d (30, 0.5, 250ms, 30s, 2m, 1h).\n"
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

/* The daemon core's usage errors and counts (gdm_opts.c), in gridrpcd's name. */
#define usage_error(...) gdm_usage_error("gridrpcd", __VA_ARGS__)
#define parse_count(opt, v, max, out) gdm_opt_count("gridrpcd", opt, v, max, out)
#define parse_positive(opt, v, max, out) gdm_opt_positive("gridrpcd", opt, v, max, out)

static int parse_size(const char *opt, const char *v, uint64_t max, uint64_t *out) {
    char err[512];
    uint64_t n;
    if (gr_parse_size(v, &n, err, sizeof err)) return usage_error("%s: %s", opt, err);
    if (n == 0) return usage_error("%s: '%s' must be at least 1", opt, v);
    if (n > max) return usage_error("%s: '%s' is too large: at most %" PRIu64 " bytes", opt, v, max);
    *out = n;
    return 0;
}

static int parse_duration(const char *opt, const char *v, double *out) {
    char err[512];
    if (gr_parse_duration(v, out, err, sizeof err)) return usage_error("%s: %s", opt, err);
    return 0;
}

/* A speed in flops/s: a positive number, optionally with K, M, G, T or P (powers of
 * 1000, as flops are counted): "1e9", "2.5G". */
static int parse_speed(const char *opt, const char *v, double *out) {
    static const char units[] = "KMGTP";
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (end != v && *end) {
        const char *u = strchr(units, *end);
        if (u && *u && end[1] == '\0') {
            for (const char *k = units; k <= u; k++)
                x *= 1000;
            end++;
        }
    }
    if (end == v || *end || errno || !(x > 0) || x > 1e21)
        return usage_error("%s: '%s' is not a speed: write flops per second, a positive number "
                           "optionally with K, M, G, T or P (1e9, 2.5G)",
                           opt, v);
    *out = x;
    return 0;
}

/* Picks one of NAMES (NULL-ended) for V; its index in *OUT. */
static int parse_choice(const char *opt, const char *v, const char *const *names, const char *listed,
                        int *out) {
    for (int i = 0; names[i]; i++)
        if (strcmp(v, names[i]) == 0) {
            *out = i;
            return 0;
        }
    return usage_error("%s: '%s' is not %s", opt, v, listed);
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

/* Long-only options, after the range of characters a short option can be. */
enum {
    OPT_HOST = 256,
    OPT_PORT,
    OPT_MODULE,
    OPT_MODULE_DIR,
    OPT_DEFAULT_MODULES,
    OPT_THREADS,
    OPT_BLAS_THREADS,
    OPT_MODE,
    OPT_QUEUE,
    OPT_TOKEN,
    OPT_MAX_MESSAGE,
    OPT_MAX_ARRAY,
    OPT_MAX_HEAD,
    OPT_IO_TIMEOUT,
    OPT_SHUTDOWN_TIMEOUT,
    OPT_LOG_LEVEL,
    OPT_QUIET,
    OPT_ISOLATE,
    OPT_METASERVER,
    OPT_ADVERTISE,
    OPT_NAME,
    OPT_SPEED,
    OPT_METASERVER_TOKEN,
    OPT_DATA_MEMORY,
    OPT_DATA_GRACE,
    OPT_DATA_LEASE,
    OPT_JOB_DIR,
    OPT_JOB_KEEP,
    OPT_JOB_QUOTA,
    OPT_KEY_FILE,
    OPT_METASERVER_KEY_FILE,
    OPT_COPY_TO,
    OPT_TLS_CERT,
    OPT_TLS_KEY,
    OPT_TLS_CA,
    OPT_IDLE_TIMEOUT,
    OPT_MAX_CONNECTIONS,
    OPT_MAX_CONNECTIONS_PER_ADDRESS,
    OPT_MAX_CALLS_PER_CONNECTION,
    OPT_MAX_CALLS,
    OPT_MAX_CALL_MEMORY,
    OPT_MAX_OBJECTS_PER_CONNECTION,
    OPT_MAX_OBJECT_PROCESSES,
    OPT_MAX_SESSIONS_PER_CONNECTION,
    OPT_IN_PROCESS,
    OPT_CALL_TIMEOUT,
    OPT_CALL_MEMORY,
    OPT_CALL_TIMEOUT_MAX,
    OPT_CALL_CPU,
    OPT_INSECURE,
    OPT_TOKEN_FILE,
    OPT_METASERVER_TOKEN_FILE,
};

static const struct option long_options[] = {
    {"host", required_argument, NULL, OPT_HOST},
    {"port", required_argument, NULL, OPT_PORT},
    {"module", required_argument, NULL, OPT_MODULE},
    {"module-dir", required_argument, NULL, OPT_MODULE_DIR},
    {"default-modules", no_argument, NULL, OPT_DEFAULT_MODULES},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"blas-threads", required_argument, NULL, OPT_BLAS_THREADS},
    {"mode", required_argument, NULL, OPT_MODE},
    {"queue", required_argument, NULL, OPT_QUEUE},
    {"token", required_argument, NULL, OPT_TOKEN},
    {"max-message", required_argument, NULL, OPT_MAX_MESSAGE},
    {"max-array", required_argument, NULL, OPT_MAX_ARRAY},
    {"max-head", required_argument, NULL, OPT_MAX_HEAD},
    {"io-timeout", required_argument, NULL, OPT_IO_TIMEOUT},
    {"shutdown-timeout", required_argument, NULL, OPT_SHUTDOWN_TIMEOUT},
    {"log-level", required_argument, NULL, OPT_LOG_LEVEL},
    {"quiet", no_argument, NULL, OPT_QUIET},
    {"isolate", no_argument, NULL, OPT_ISOLATE},
    {"in-process-unsafe", no_argument, NULL, OPT_IN_PROCESS},
    {"call-timeout", required_argument, NULL, OPT_CALL_TIMEOUT},
    {"call-memory", required_argument, NULL, OPT_CALL_MEMORY},
    {"call-timeout-max", required_argument, NULL, OPT_CALL_TIMEOUT_MAX},
    {"call-cpu", required_argument, NULL, OPT_CALL_CPU},
    {"insecure", no_argument, NULL, OPT_INSECURE},
    {"token-file", required_argument, NULL, OPT_TOKEN_FILE},
    {"metaserver-token-file", required_argument, NULL, OPT_METASERVER_TOKEN_FILE},
    {"metaserver", required_argument, NULL, OPT_METASERVER},
    {"advertise", required_argument, NULL, OPT_ADVERTISE},
    {"name", required_argument, NULL, OPT_NAME},
    {"speed", required_argument, NULL, OPT_SPEED},
    {"metaserver-token", required_argument, NULL, OPT_METASERVER_TOKEN},
    {"data-memory", required_argument, NULL, OPT_DATA_MEMORY},
    {"data-grace", required_argument, NULL, OPT_DATA_GRACE},
    {"data-lease", required_argument, NULL, OPT_DATA_LEASE},
    {"job-dir", required_argument, NULL, OPT_JOB_DIR},
    {"job-keep", required_argument, NULL, OPT_JOB_KEEP},
    {"job-quota", required_argument, NULL, OPT_JOB_QUOTA},
    {"key-file", required_argument, NULL, OPT_KEY_FILE},
    {"metaserver-key-file", required_argument, NULL, OPT_METASERVER_KEY_FILE},
    {"copy-to", required_argument, NULL, OPT_COPY_TO},
    {"tls-cert", required_argument, NULL, OPT_TLS_CERT},
    {"tls-key", required_argument, NULL, OPT_TLS_KEY},
    {"tls-ca", required_argument, NULL, OPT_TLS_CA},
    {"idle-timeout", required_argument, NULL, OPT_IDLE_TIMEOUT},
    {"max-connections", required_argument, NULL, OPT_MAX_CONNECTIONS},
    {"max-connections-per-address", required_argument, NULL, OPT_MAX_CONNECTIONS_PER_ADDRESS},
    {"max-calls-per-connection", required_argument, NULL, OPT_MAX_CALLS_PER_CONNECTION},
    {"max-calls", required_argument, NULL, OPT_MAX_CALLS},
    {"max-call-memory", required_argument, NULL, OPT_MAX_CALL_MEMORY},
    {"max-objects-per-connection", required_argument, NULL, OPT_MAX_OBJECTS_PER_CONNECTION},
    {"max-object-processes", required_argument, NULL, OPT_MAX_OBJECT_PROCESSES},
    {"max-sessions-per-connection", required_argument, NULL, OPT_MAX_SESSIONS_PER_CONNECTION},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {NULL, 0, NULL, 0},
};

/* parse_choice's index is the option's value. */
_Static_assert(GSV_MODE_POOL == 0 && GSV_MODE_THREAD == 1 && GSV_QUEUE_FCFS == 0 && GSV_QUEUE_SJF == 1 &&
                   GSV_LOG_ERROR == 0 && GSV_LOG_WARN == 1 && GSV_LOG_INFO == 2 && GSV_LOG_DEBUG == 3,
               "the choices of --mode, --queue and --log-level are listed in the order of their values");

/* Applies option VAL with value V (NULL for flags). */
static int apply(void *ctx, int val, const char *v) {
    gsv_options *o = ctx;
    static const char *const modes[] = {"pool", "thread", NULL}, *const queues[] = {"fcfs", "sjf", NULL},
                             *const levels[] = {"error", "warn", "info", "debug", NULL};
    char name[64];
    const char *opt = gdm_opt_name(long_options, val, name, sizeof name);
    char err[512];
    uint64_t n;
    int rc;
    switch (val) {
    case OPT_HOST: return gdm_opt_host("gridrpcd", opt, v, &o->host);
    case OPT_PORT: return gdm_opt_port("gridrpcd", opt, v, &o->port);
    case OPT_MODULE: return push(&o->modules, &o->nmodules, v);
    case OPT_MODULE_DIR: return push(&o->module_dirs, &o->nmodule_dirs, v);
    case OPT_DEFAULT_MODULES: o->defaults = 1; return 0;
    case OPT_THREADS: return parse_count(opt, v, 4096, &o->threads);
    case OPT_BLAS_THREADS: return parse_count(opt, v, 4096, &o->blas_threads);
    case OPT_MODE: return parse_choice(opt, v, modes, "pool or thread", &o->mode);
    case OPT_QUEUE: return parse_choice(opt, v, queues, "fcfs or sjf", &o->queue);
    case OPT_KEY_FILE:
    case OPT_METASERVER_KEY_FILE:
        if (!*v) return usage_error("%s: empty file name", opt);
        *(val == OPT_KEY_FILE ? &o->key_file : &o->meta_key_file) = v;
        return 0;
    case OPT_TOKEN:
    case OPT_METASERVER_TOKEN:
    case OPT_TOKEN_FILE:
    case OPT_METASERVER_TOKEN_FILE: {
        /* Kept in the options' own buffers: --token's bytes in argv are wiped once read,
         * since every user of the machine reads them in ps otherwise. */
        int own = val == OPT_TOKEN || val == OPT_TOKEN_FILE;
        char *buf = own ? o->token_buf : o->meta_token_buf;
        if (val == OPT_TOKEN || val == OPT_METASERVER_TOKEN) {
            if ((rc = gdm_opt_secret_arg("gridrpcd", opt, (char *)v, buf))) return rc;
            o->token_on_cmdline = val == OPT_TOKEN ? "--token" : "--metaserver-token";
        } else if ((rc = gdm_opt_secret_file("gridrpcd", opt, v, buf))) {
            return rc;
        }
        *(own ? &o->token : &o->meta_token) = buf;
        return 0;
    }
    case OPT_INSECURE: o->insecure = 1; return 0;
    case OPT_COPY_TO: {
        char host[GRP_MAX_HOST + 1], why[256];
        int port, tls;
        const char *hp = v + gr_scheme_len(v, &tls);
        const char *star = strrchr(hp, ':');
        /* HOST:* trusts every port of HOST: servers on port 0 of one machine (a test,
         * a study) cannot name each other's ports before they start. */
        if (star && strcmp(star, ":*") == 0) {
            if (star == hp || (size_t)(star - hp) > GRP_MAX_HOST)
                return usage_error("%s '%s': give HOST:PORT or HOST:* of a server", opt, v);
            return push(&o->copy_to, &o->ncopy_to, v);
        }
        if (gr_parse_hostport(hp, 0, host, sizeof host, &port, why, sizeof why) != 0)
            return usage_error("%s '%s': give HOST:PORT (or HOST:* for every port) of a server: %s", opt, v,
                               why);
        return push(&o->copy_to, &o->ncopy_to, v);
    }
    case OPT_MAX_MESSAGE:
        if ((rc = parse_size(opt, v, (uint64_t)1 << 62, &n))) return rc;
        o->limits.max_message = n;
        return 0;
    case OPT_MAX_ARRAY:
        if ((rc = parse_size(opt, v, (uint64_t)1 << 62, &n))) return rc;
        o->limits.max_array = n;
        return 0;
    case OPT_MAX_HEAD:
        if ((rc = parse_size(opt, v, UINT32_MAX, &n))) return rc;
        o->limits.max_head = (uint32_t)n;
        return 0;
    case OPT_IO_TIMEOUT: return parse_duration(opt, v, &o->io_timeout);
    case OPT_SHUTDOWN_TIMEOUT: return parse_duration(opt, v, &o->shutdown_timeout);
    case OPT_LOG_LEVEL: return parse_choice(opt, v, levels, "error, warn, info or debug", &o->log_level);
    case OPT_QUIET: o->log_level = GSV_LOG_ERROR; return 0;
    case OPT_ISOLATE: return 0; /* what every call gets now: executors */
    case OPT_IN_PROCESS: o->in_process = 1; return 0;
    case OPT_CALL_TIMEOUT: return parse_duration(opt, v, &o->call_timeout);
    case OPT_CALL_MEMORY: return parse_size(opt, v, (uint64_t)1 << 62, &o->call_memory);
    case OPT_CALL_TIMEOUT_MAX: return parse_duration(opt, v, &o->call_timeout_max);
    case OPT_CALL_CPU: return parse_duration(opt, v, &o->call_cpu);
    case OPT_METASERVER:
        if (gr_parse_hostport(v, 0, o->meta_host, sizeof o->meta_host, &o->meta_port, err, sizeof err))
            return usage_error("%s: %s", opt, err);
        return 0;
    case OPT_ADVERTISE:
        if (gr_parse_hostport(v, 0, o->adv_host, sizeof o->adv_host, &o->adv_port, err, sizeof err))
            return usage_error("%s: %s", opt, err);
        return 0;
    case OPT_NAME:
        if (!*v) return usage_error("%s: empty name", opt);
        if (strlen(v) > GRP_MAX_PEER_NAME)
            return usage_error("%s: a name has at most %d bytes", opt, GRP_MAX_PEER_NAME);
        o->name = v;
        return 0;
    case OPT_SPEED: return parse_speed(opt, v, &o->speed);
    case OPT_DATA_MEMORY:
        if ((rc = parse_size(opt, v, (uint64_t)1 << 62, &n))) return rc;
        o->data_memory = n;
        return 0;
    case OPT_DATA_GRACE:
    case OPT_DATA_LEASE: {
        double *t = val == OPT_DATA_GRACE ? &o->data_grace : &o->data_lease;
        if ((rc = parse_duration(opt, v, t))) return rc;
        if (*t <= 0) return usage_error("%s: '%s' must be more than 0", opt, v);
        return 0;
    }
    case OPT_JOB_DIR:
        if (!*v) return usage_error("%s: empty folder name", opt);
        if (strlen(v) > 3500) return usage_error("%s: the path is too long", opt);
        o->job_dir = v;
        return 0;
    case OPT_TLS_CERT:
    case OPT_TLS_KEY:
    case OPT_TLS_CA:
        if (!*v) return usage_error("%s: empty file name", opt);
        *(val == OPT_TLS_CERT ? &o->tls_cert : val == OPT_TLS_KEY ? &o->tls_key : &o->tls_ca) = v;
        return 0;
    case OPT_IDLE_TIMEOUT: return parse_duration(opt, v, &o->idle_timeout);
    case OPT_MAX_CONNECTIONS: return parse_positive(opt, v, 1u << 20, &o->max_conns);
    case OPT_MAX_CONNECTIONS_PER_ADDRESS: return parse_positive(opt, v, 1u << 20, &o->max_conns_per_addr);
    case OPT_MAX_CALLS_PER_CONNECTION: return parse_positive(opt, v, 1u << 24, &o->max_calls_per_conn);
    case OPT_MAX_CALLS: return parse_positive(opt, v, 1u << 24, &o->max_calls);
    case OPT_MAX_SESSIONS_PER_CONNECTION: return parse_positive(opt, v, 1u << 24, &o->max_sessions_per_conn);
    case OPT_MAX_OBJECTS_PER_CONNECTION: return parse_positive(opt, v, 1u << 24, &o->max_objects_per_conn);
    case OPT_MAX_OBJECT_PROCESSES: return parse_positive(opt, v, 1u << 16, &o->max_object_processes);
    case OPT_MAX_CALL_MEMORY: return parse_size(opt, v, (uint64_t)1 << 62, &o->max_call_memory);
    case OPT_JOB_QUOTA:
        if ((rc = parse_size(opt, v, (uint64_t)1 << 62, &o->job_quota))) return rc;
        if (!o->job_quota) return usage_error("%s: '%s' must be more than 0", opt, v);
        return 0;
    case OPT_JOB_KEEP:
        if ((rc = parse_duration(opt, v, &o->job_keep))) return rc;
        if (!(o->job_keep > 0)) return usage_error("%s: '%s' must be more than 0", opt, v);
        return 0;
    }
    return usage_error("unknown option '%s'", opt);
}

/* A quarter of physical memory: remote data must leave room for the calls' own
 * buffers (1 GiB when the size cannot be read). */
static uint64_t default_data_memory(void) {
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || size <= 0) return (uint64_t)1 << 30;
    return (uint64_t)pages * (uint64_t)size / 4;
}

int gsv_options_parse(int argc, char **argv, gsv_options *o) {
    memset(o, 0, sizeof *o);
    o->host = "127.0.0.1";
    o->port = 7000;
    o->mode = GSV_MODE_POOL;
    o->queue = GSV_QUEUE_FCFS;
    grp_limits_default(&o->limits);
    o->io_timeout = 60;
    o->shutdown_timeout = 30;
    o->log_level = GSV_LOG_INFO;
    o->data_memory = default_data_memory();
    o->data_grace = 60;
    o->data_lease = 3600;
    o->job_keep = 7 * 24 * 3600;
    o->job_quota = (uint64_t)1 << 30;
    /* The limits' defaults, and why: docs/server.md ("Limits"). */
    o->idle_timeout = 300;
    o->max_conns = 4096;
    o->max_conns_per_addr = 256;
    o->max_calls_per_conn = 16384;
    o->max_calls = 65536;
    o->max_objects_per_conn = 1024;
    o->max_object_processes = 256;
    o->max_sessions_per_conn = 4096;
    o->max_call_memory = default_data_memory();

    int rc = gdm_opt_parse("gridrpcd", argc, argv, "", long_options, help_text,
                           ": modules are given with --module", apply, o);
    if (rc >= 0) return rc;
    /* Naming modules means serving those: the defaults only when asked for. */
    if (o->nmodules == 0 && o->nmodule_dirs == 0) o->defaults = 1;
    /* The metaserver-only options do nothing alone: say so rather than ignore them. */
    if (!o->meta_port && (o->adv_port || o->name || o->speed > 0 || o->meta_token))
        return usage_error("--advertise, --name, --speed and --metaserver-token need --metaserver HOST:PORT");
    if (!o->meta_port && o->meta_key_file)
        return usage_error("--metaserver-key-file needs --metaserver HOST:PORT");
    if ((rc = gdm_opt_tls_pair("gridrpcd", o->tls_cert, o->tls_key))) return rc;
    /* A default above the cap would be cut without anyone asking for it. */
    if (o->call_timeout_max > 0 && o->call_timeout > o->call_timeout_max)
        return usage_error(
            "--call-timeout %g s is above --call-timeout-max %g s: the cap applies to every call; "
            "lower --call-timeout or raise the cap",
            o->call_timeout, o->call_timeout_max);
    return -1;
}

void gsv_options_free(gsv_options *o) {
    free(o->modules);
    free(o->module_dirs);
    free(o->copy_to);
    o->modules = NULL;
    o->module_dirs = NULL;
    o->copy_to = NULL;
}
