/* gms_options.c: gridmetad's command line (getopt_long): --help, --version, and every
 * option checked here, so that a typo stops the metaserver at once (exit 2, naming the
 * option). Durations and ports are read by gr_settings, as everywhere in GridRPC. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gms.h"
#include "gr_opts.h"
#include "gr_settings.h"

static const char help_text[] =
    "Usage: gridmetad [OPTIONS]\n"
    "The GridRPC metaserver: computing servers (gridrpcd --metaserver HOST:PORT) register\n"
    "here and send heartbeats; clients (GRIDRPC_METASERVER=HOST:PORT) ask where to run each\n"
    "call, and report how it went, so the metaserver learns each server's speed and the\n"
    "bandwidth and latency between each client site and each server.\n"
    "\n"
    "Network:\n"
    "      --host ADDR          address to listen on (default 127.0.0.1: this machine only;\n"
    "                           0.0.0.0: every interface). Any other address needs --key-file\n"
    "                           or --tls-cert, or --insecure\n"
    "      --insecure           listen on a non-loopback --host with no key and no TLS: anyone\n"
    "                           who reaches the port can register servers and steer calls\n"
    "                           (logged at start)\n"
    "      --port N             TCP port (default 7100; 0: any free port). Once ready it\n"
    "                           prints 'listening on HOST:PORT' on stdout\n"
    "      --key-file FILE      servers and clients must prove they hold a key of FILE\n"
    "                           (HMAC-SHA-256 challenge-response after HELLO; the key never\n"
    "                           crosses the wire and the metaserver proves it holds it too).\n"
    "                           One key per line in hex, up to 8, all accepted (rotation),\n"
    "                           each after its role: 'client HEX', 'server HEX' (only these\n"
    "                           may REGISTER, HEARTBEAT, UNREGISTER, each its own entry) or\n"
    "                           'admin HEX'; an untagged line allows every role (warned).\n"
    "                           The file must not be readable by others (chmod 600). Make\n"
    "                           one with 'gridrpc keygen --role ROLE FILE'; docs/security.md\n"
    "      --token-file FILE    clients and servers must present the token on FILE's first\n"
    "                           line in HELLO (FILE mode 0600; weaker than --key-file: it\n"
    "                           travels in clear text; default: $GRIDRPC_TOKEN, else none)\n"
    "      --token TOKEN        the same from the command line, where ps shows it to every\n"
    "                           user: accepted for old command lines, with a warning, and\n"
    "                           wiped from the process's arguments at start\n"
    "      --max-connections N  connections served at once (default 4096); more are answered\n"
    "                           ERROR GRID_ERR_LIMIT and closed\n"
    "      --max-connections-per-address N\n"
    "                           connections at once from one address (default 256), so\n"
    "                           one host cannot take them all\n"
    "      --io-timeout TIME    drop a peer that stalls in the middle of a message, or sends no\n"
    "                           HELLO within TIME of connecting (default 30s; 0: never)\n"
    "      --idle-timeout TIME  close a client's connection that sent nothing for TIME (default\n"
    "                           5m; 0: never); servers' connections are kept\n"
    "      --tls-cert FILE      serve TLS only on --port (clients and servers then name this\n"
    "                           metaserver gridrpcs://HOST:PORT), with this PEM certificate\n"
    "                           (chain); needs --tls-key. The status page (--http) stays plain\n"
    "                           HTTP: keep it on a trusted address\n"
    "      --tls-key FILE       the certificate's PEM private key\n"
    "\n"
    "Registry and scheduling:\n"
    "      --db FILE            the SQLite registry (default gridmetad.db in the current\n"
    "                           directory; created if absent; ':memory:' keeps nothing)\n"
    "      --scheduler POLICY   mct (minimum completion time, default), least-load or\n"
    "                           round-robin; a client may ask for another per call\n"
    "      --heartbeat TIME     how often servers are asked to send a heartbeat (default 1s)\n"
    "      --down-after N       missed heartbeats before a server is marked down (default 3)\n"
    "      --max-hold TIME      a server is full with its workers busy and a core's worth\n"
    "                           queued each; while the server a call needs is full (every\n"
    "                           server; for mct the best one), the call waits here up to\n"
    "                           TIME for room (default 20s; at most 60s; 0: never wait,\n"
    "                           send it to that full server)\n"
    "      --crash-hold TIME    a function that crashed its executors on two servers within\n"
    "                           a minute is not offered to new calls for TIME (default 5m;\n"
    "                           0: never held back); its calls fail at once, naming the\n"
    "                           servers and when it is offered again\n"
    "      --pending-max TIME   a call placed here counts against its server until the\n"
    "                           client reports it, for at most TIME (default 10m), and less\n"
    "                           once the function's calls were measured; a client's flops\n"
    "                           and bytes count for at most 16 times the largest measured\n"
    "      --forget-after TIME  a server down for TIME is deleted, from memory and from\n"
    "                           the registry (default 1d; 0: never)\n"
    "\n"
    "Status page:\n"
    "      --http PORT          serve the status page and GET /api/status (JSON) on PORT\n"
    "                           (0: any free port; prints 'http on HOST:PORT' once ready)\n"
    "      --http-host ADDR     address of the status page (default 127.0.0.1); a non-loopback\n"
    "                           one needs --insecure (the page has no access control)\n"
    "      --http-allow-host NAME\n"
    "                           a Host header the page answers (repeatable; default: localhost,\n"
    "                           127.0.0.1, [::1] and --http-host, with or without the port).\n"
    "                           Other names get 421, so a web page whose name was rebound to\n"
    "                           this address cannot read /api/status\n"
    "\n"
    "Logging (on stderr):\n"
    "      --log-level LEVEL    error, warn, info (default) or debug (debug explains every\n"
    "                           decision: the candidates and their estimates)\n"
    "  -v, --verbose            same as --log-level debug\n"
    "      --quiet              only errors\n"
    "\n"
    "  -h, --help               show this help and exit\n"
    "  -V, --version            show the version and exit\n"
    "\n"
    "TIME is milliseconds or seconds with a unit: 250ms, 1s, 2m (a bare number is seconds).\n"
    "Exit status: 0 after SIGTERM or SIGINT, 1 if it cannot start, 2 on a usage error.\n"
    "See docs/metaserver.md.\n";

/* The daemon core's usage errors and counts (gdm_opts.c), in gridmetad's name. */
#define usage_error(...) gdm_usage_error("gridmetad", __VA_ARGS__)
#define parse_count(opt, v, max, out) gdm_opt_count("gridmetad", opt, v, max, out)
#define parse_positive(opt, v, max, out) gdm_opt_positive("gridmetad", opt, v, max, out)

enum {
    OPT_HOST = 256,
    OPT_PORT,
    OPT_DB,
    OPT_SCHEDULER,
    OPT_HTTP,
    OPT_HTTP_HOST,
    OPT_TOKEN,
    OPT_KEY_FILE,
    OPT_HEARTBEAT,
    OPT_DOWN_AFTER,
    OPT_MAX_CONNS,
    OPT_MAX_CONNS_PER_ADDR,
    OPT_IO_TIMEOUT,
    OPT_IDLE_TIMEOUT,
    OPT_MAX_HOLD,
    OPT_CRASH_HOLD,
    OPT_PENDING_MAX,
    OPT_FORGET_AFTER,
    OPT_LOG_LEVEL,
    OPT_QUIET,
    OPT_TLS_CERT,
    OPT_TLS_KEY,
    OPT_INSECURE,
    OPT_TOKEN_FILE,
    OPT_HTTP_ALLOW_HOST,
};

static const struct option long_options[] = {
    {"host", required_argument, NULL, OPT_HOST},
    {"port", required_argument, NULL, OPT_PORT},
    {"db", required_argument, NULL, OPT_DB},
    {"scheduler", required_argument, NULL, OPT_SCHEDULER},
    {"http", required_argument, NULL, OPT_HTTP},
    {"http-host", required_argument, NULL, OPT_HTTP_HOST},
    {"token", required_argument, NULL, OPT_TOKEN},
    {"key-file", required_argument, NULL, OPT_KEY_FILE},
    {"heartbeat", required_argument, NULL, OPT_HEARTBEAT},
    {"down-after", required_argument, NULL, OPT_DOWN_AFTER},
    {"max-connections", required_argument, NULL, OPT_MAX_CONNS},
    {"max-connections-per-address", required_argument, NULL, OPT_MAX_CONNS_PER_ADDR},
    {"io-timeout", required_argument, NULL, OPT_IO_TIMEOUT},
    {"idle-timeout", required_argument, NULL, OPT_IDLE_TIMEOUT},
    {"max-hold", required_argument, NULL, OPT_MAX_HOLD},
    {"crash-hold", required_argument, NULL, OPT_CRASH_HOLD},
    {"pending-max", required_argument, NULL, OPT_PENDING_MAX},
    {"forget-after", required_argument, NULL, OPT_FORGET_AFTER},
    {"log-level", required_argument, NULL, OPT_LOG_LEVEL},
    {"verbose", no_argument, NULL, 'v'},
    {"quiet", no_argument, NULL, OPT_QUIET},
    {"tls-cert", required_argument, NULL, OPT_TLS_CERT},
    {"tls-key", required_argument, NULL, OPT_TLS_KEY},
    {"insecure", no_argument, NULL, OPT_INSECURE},
    {"token-file", required_argument, NULL, OPT_TOKEN_FILE},
    {"http-allow-host", required_argument, NULL, OPT_HTTP_ALLOW_HOST},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {NULL, 0, NULL, 0},
};

static int apply(void *ctx, int val, const char *v) {
    gms_options *o = ctx;
    static const char *const levels[] = {"error", "warn", "info", "debug", NULL};
    char name[64], err[512];
    const char *opt = gdm_opt_name(long_options, val, name, sizeof name);
    double secs;
    switch (val) {
    case OPT_HOST: return gdm_opt_host("gridmetad", opt, v, &o->host);
    case OPT_PORT: return gdm_opt_port("gridmetad", opt, v, &o->port);
    case OPT_DB:
        if (!*v) return usage_error("%s: empty file name (use ':memory:' to keep nothing)", opt);
        o->db = v;
        return 0;
    case OPT_SCHEDULER: {
        int p = grp_policy_parse(v);
        if (p <= GRP_POLICY_DEFAULT)
            return usage_error("%s: '%s' is not mct, least-load or round-robin", opt, v);
        o->policy = p;
        return 0;
    }
    case OPT_HTTP: return gdm_opt_port("gridmetad", opt, v, &o->http_port);
    case OPT_HTTP_HOST: return gdm_opt_host("gridmetad", opt, v, &o->http_host);
    case OPT_KEY_FILE:
        if (!*v) return usage_error("%s: empty file name", opt);
        o->key_file = v;
        return 0;
    case OPT_TOKEN:
    case OPT_TOKEN_FILE: {
        /* Kept in the options' own buffer: --token's bytes in argv are wiped once read,
         * since every user of the machine reads them in ps otherwise. */
        int rc = val == OPT_TOKEN ? gdm_opt_secret_arg("gridmetad", opt, (char *)v, o->token_buf)
                                  : gdm_opt_secret_file("gridmetad", opt, v, o->token_buf);
        if (rc) return rc;
        o->token = o->token_buf;
        o->token_on_cmdline = val == OPT_TOKEN;
        return 0;
    }
    case OPT_INSECURE: o->insecure = 1; return 0;
    case OPT_HTTP_ALLOW_HOST:
        if (!*v || strlen(v) > 255) return usage_error("%s: '%s' is not a host name", opt, v);
        if (o->http_nallow >= GMS_MAX_HTTP_HOSTS)
            return usage_error("%s: at most %d names", opt, GMS_MAX_HTTP_HOSTS);
        o->http_allow[o->http_nallow++] = v;
        return 0;
    case OPT_HEARTBEAT:
        if (gr_parse_duration(v, &secs, err, sizeof err)) return usage_error("%s: %s", opt, err);
        /* A bare number is seconds in the settings grammar; "1000" almost surely meant ms. */
        if (strspn(v, "0123456789") == strlen(v) && secs > 60)
            return usage_error("%s: '%s' would be %s seconds: write %sms for milliseconds", opt, v, v, v);
        /* REGISTER_OK carries 10 ms .. 1 h (grp_read_register_ok refuses the rest). */
        if (secs < 0.01 || secs > 3600) return usage_error("%s: '%s' must be from 10ms to 1h", opt, v);
        o->heartbeat_ms = (unsigned)(secs * 1000 + 0.5);
        return 0;
    case OPT_DOWN_AFTER: return parse_count(opt, v, 1000, &o->down_after);
    case OPT_MAX_CONNS: return parse_positive(opt, v, 1u << 20, &o->max_conns);
    case OPT_MAX_CONNS_PER_ADDR: return parse_positive(opt, v, 1u << 20, &o->max_conns_per_addr);
    case OPT_IO_TIMEOUT:
        if (gr_parse_duration(v, &o->io_timeout, err, sizeof err)) return usage_error("%s: %s", opt, err);
        return 0;
    case OPT_IDLE_TIMEOUT:
        if (gr_parse_duration(v, &o->idle_timeout, err, sizeof err)) return usage_error("%s: %s", opt, err);
        return 0;
    case OPT_MAX_HOLD:
        if (gr_parse_duration(v, &o->max_hold, err, sizeof err)) return usage_error("%s: %s", opt, err);
        /* Clients wait GRP_MAX_HOLD_S for a held answer before they give up on us. */
        if (o->max_hold > GRP_MAX_HOLD_S)
            return usage_error("%s: '%s' is longer than clients wait (%ds)", opt, v, GRP_MAX_HOLD_S);
        return 0;
    case OPT_CRASH_HOLD:
        if (gr_parse_duration(v, &o->crash_hold, err, sizeof err)) return usage_error("%s: %s", opt, err);
        return 0;
    case OPT_PENDING_MAX:
        if (gr_parse_duration(v, &o->pending_max, err, sizeof err)) return usage_error("%s: %s", opt, err);
        if (o->pending_max <= 0) return usage_error("%s: '%s' must be more than 0", opt, v);
        return 0;
    case OPT_FORGET_AFTER:
        if (gr_parse_duration(v, &o->forget_after, err, sizeof err)) return usage_error("%s: %s", opt, err);
        return 0;
    case OPT_LOG_LEVEL:
        for (int i = 0; levels[i]; i++)
            if (strcmp(v, levels[i]) == 0) {
                o->log_level = i;
                return 0;
            }
        return usage_error("%s: '%s' is not error, warn, info or debug", opt, v);
    case 'v': o->log_level = GMS_LOG_DEBUG; return 0;
    case OPT_QUIET: o->log_level = GMS_LOG_ERROR; return 0;
    case OPT_TLS_CERT:
    case OPT_TLS_KEY:
        if (!*v) return usage_error("%s: empty file name", opt);
        *(val == OPT_TLS_CERT ? &o->tls_cert : &o->tls_key) = v;
        return 0;
    }
    return usage_error("unknown option '%s'", opt);
}

int gms_options_parse(int argc, char **argv, gms_options *o) {
    memset(o, 0, sizeof *o);
    o->host = "127.0.0.1";
    o->port = 7100;
    o->db = "gridmetad.db";
    o->policy = GRP_POLICY_MCT;
    o->http_port = -1;
    o->http_host = "127.0.0.1";
    o->heartbeat_ms = 1000;
    o->down_after = 3;
    /* The limits' defaults, and why: docs/metaserver.md and docs/server.md ("Limits"). */
    o->max_conns = 4096;
    o->max_conns_per_addr = 256;
    o->io_timeout = 30;
    o->idle_timeout = 300;
    o->max_hold = GMS_DEFAULT_HOLD_S;
    o->crash_hold = GMS_DEFAULT_CRASH_HOLD_S;
    o->pending_max = GMS_DEFAULT_PENDING_MAX_S;
    o->forget_after = GMS_DEFAULT_FORGET_AFTER_S;
    o->log_level = GMS_LOG_INFO;
    const char *env = getenv("GRIDRPC_TOKEN");
    if (env && *env) {
        if (strlen(env) > GRP_MAX_TOKEN)
            return usage_error("GRIDRPC_TOKEN: a token has at most %d bytes", GRP_MAX_TOKEN);
        o->token = env;
    }
    int rc = gdm_opt_parse("gridmetad", argc, argv, "v", long_options, help_text, "", apply, o);
    if (rc >= 0) return rc;
    if ((rc = gdm_opt_tls_pair("gridmetad", o->tls_cert, o->tls_key))) return rc;
    return -1;
}
