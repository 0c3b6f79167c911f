/* grc_config.c: where the client finds its server, metaserver and timeouts:
 * GRIDRPC_SERVER, GRIDRPC_METASERVER, GRIDRPC_TIMEOUT, GRIDRPC_CONNECT_TIMEOUT and
 * GRIDRPC_TOKEN and GRIDRPC_KEY_FILE first, then the file named by GRIDRPC_CONFIG or
 * ~/.gridrpc.conf ("server HOST:PORT", "metaserver HOST:PORT", "timeout DURATION",
 * "connect_timeout DURATION", "token TEXT", "key_file PATH", "retries N", '#' comments), every value in
 * the forms of gr_settings.h; GRIDRPC_SITE, GRIDRPC_SCHEDULER, GRIDRPC_REUSE and GRIDRPC_REUSE_FOR tune
 * routing, GRIDRPC_RETRIES (over 'retries') how often a call whose server vanished runs again. Loaded once
 * per process. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gr_settings.h"
#include "gr_suggest.h"
#include "grc_client.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int loaded;
static int load_error;
static char load_msg[1024];
static grc_config config;
static double forced_connect = -1, forced_call = -1;
static char forced_source[sizeof((grc_config *)0)->timeout_source]; /* names forced_call in messages */
static int token_forced;
static char forced_token[sizeof config.token];
static int keys_forced;
static grp_keyset forced_keys;
static int meta_forced;
static char forced_meta_host[sizeof config.meta_host];
static int forced_meta_port;
static int forced_policy = -1;
static int ca_forced;
static char forced_ca[sizeof config.tls_ca];

/* A call whose server vanished runs again on another at most this many times by
 * default: once covers a server lost to an outage, and a call that takes servers down
 * with it (a function run in-process, a machine it exhausts) costs at most two. */
#define GRC_RETRIES 1
#define GRC_RETRIES_MAX 100

/* Defaults of decision reuse (docs/metaserver-client.md says how they were measured). */
#define GRC_REUSE_MAX 64
#define GRC_REUSE_SECONDS 0.5

/* Records a configuration error; only the first is kept (it is the one to fix first). */
static void config_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void config_error(const char *fmt, ...) {
    if (load_error) return;
    load_error = GRID_ERR_CONFIG;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(load_msg, sizeof load_msg, fmt, ap);
    va_end(ap);
}

/* A retry count from V into *OUT (0..GRC_RETRIES_MAX); -1 with ERR otherwise. */
static int parse_retries(const char *v, int *out, char *err, size_t errsize) {
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (!*v || *end || errno || n < 0 || n > GRC_RETRIES_MAX) {
        snprintf(err, errsize,
                 "'%.100s' is not a number of retries (0..%d; 0: a call whose server vanished is never run "
                 "again)",
                 v, GRC_RETRIES_MAX);
        return -1;
    }
    *out = (int)n;
    return 0;
}

static int set_token(const char *v, char *err, size_t errsize) {
    if (strlen(v) >= sizeof config.token) {
        snprintf(err, errsize, "a token has at most %zu bytes", sizeof config.token - 1);
        return -1;
    }
    snprintf(config.token, sizeof config.token, "%s", v);
    return 0;
}

/* Applies "KEY V" from line LINENO of PATH. Returns 0, 1 for an unknown key, or -1
 * with ERR saying what is wrong with V. */
static int apply_line(const char *key, const char *v, const char *path, int lineno, char *err,
                      size_t errsize) {
    if (strcmp(key, "server") == 0) {
        char host[GRC_MAX_HOST];
        int port;
        if (gr_parse_hostport(v, 0, host, sizeof host, &port, err, errsize)) return -1;
        /* GRIDRPC_SERVER, or an earlier line, came first. */
        if (!config.server_host[0]) {
            memcpy(config.server_host, host, sizeof host);
            config.server_port = port;
            snprintf(config.source, sizeof config.source, "%s line %d", path, lineno);
        }
        return 0;
    }
    if (strcmp(key, "metaserver") == 0) {
        char host[GRC_MAX_HOST];
        int port;
        if (gr_parse_hostport(v, 0, host, sizeof host, &port, err, errsize)) return -1;
        if (!config.meta_host[0]) { /* GRIDRPC_METASERVER, or an earlier line, came first */
            memcpy(config.meta_host, host, sizeof host);
            config.meta_port = port;
            snprintf(config.meta_source, sizeof config.meta_source, "%.200s line %d", path, lineno);
        }
        return 0;
    }
    if (strcmp(key, "timeout") == 0) {
        snprintf(config.timeout_source, sizeof config.timeout_source, "'timeout' in %.200s line %d", path,
                 lineno);
        return gr_parse_duration(v, &config.call_timeout, err, errsize);
    }
    if (strcmp(key, "connect_timeout") == 0)
        return gr_parse_duration(v, &config.connect_timeout, err, errsize);
    if (strcmp(key, "token") == 0) return set_token(v, err, errsize);
    if (strcmp(key, "retries") == 0) {
        snprintf(config.retries_source, sizeof config.retries_source, "'retries' in %.200s line %d", path,
                 lineno);
        return parse_retries(v, &config.retries, err, errsize);
    }
    if (strcmp(key, "key_file") == 0) {
        if (config.keys.n) return 0; /* GRIDRPC_KEY_FILE, or an earlier line, came first */
        gr_err ke;
        if (grp_keyset_load(v, &config.keys, &ke)) {
            snprintf(err, errsize, "%.500s", ke.msg);
            return -1;
        }
        return 0;
    }
    if (strcmp(key, "tls_ca") == 0) {
        if (strlen(v) >= sizeof config.tls_ca) {
            snprintf(err, errsize, "the path is longer than %zu bytes", sizeof config.tls_ca - 1);
            return -1;
        }
        if (!config.tls_ca[0])
            snprintf(config.tls_ca, sizeof config.tls_ca, "%s", v); /* GRIDRPC_TLS_CA first */
        return 0;
    }
    return 1;
}

/* "did you mean 'timeout'? " when KEY is a typo of a key apply_line knows, else "" (a
 * known key refused for want of a value is no typo). */
static const char *key_hint(const char *key, char *buf, size_t n) {
    static const char *const keys[] = {"server", "metaserver", "timeout",  "connect_timeout",
                                       "token",  "retries",    "key_file", "tls_ca"};
    gr_suggest s;
    gr_suggest_init(&s, key);
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        gr_suggest_offer(&s, keys[i]);
    const char *best = gr_suggest_best(&s);
    if (best && strcmp(best, key) != 0)
        snprintf(buf, n, "did you mean '%s'? ", best);
    else if (n)
        buf[0] = '\0';
    return buf;
}

/* Splits LINE into KEY and the rest, without its comment, trailing blanks and quotes.
 * Returns how many of the two are there (0 for a blank line). */
static int split_line(char *line, char *key, size_t keysize, char **value) {
    /* A '#' starts a comment only outside quotes: a token or a path may hold one. */
    int quoted = 0;
    for (char *h = line; *h; h++) {
        if (*h == '"') quoted = !quoted;
        if (*h == '#' && !quoted) {
            *h = '\0';
            break;
        }
    }
    char *s = line + strspn(line, " \t\r\n");
    size_t kl = strcspn(s, " \t\r\n");
    if (kl == 0) return 0;
    snprintf(key, keysize, "%.*s", (int)kl, s);
    char *v = s + kl + strspn(s + kl, " \t\r\n");
    size_t vl = strlen(v);
    while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t' || v[vl - 1] == '\r' || v[vl - 1] == '\n'))
        v[--vl] = '\0';
    if (vl >= 2 && v[0] == '"' && v[vl - 1] == '"') {
        v[vl - 1] = '\0';
        v++;
    }
    *value = v;
    return vl ? 2 : 1;
}

static void load_file(const char *path, int required) {
    FILE *f = fopen(path, "r");
    if (!f) {
        if (required)
            config_error("cannot read the configuration file '%s' (GRIDRPC_CONFIG): %s", path,
                         strerror(errno));
        return;
    }
    char line[2048];
    int lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        if (!strchr(line, '\n') && !feof(f)) {
            config_error("%.400s:%d: the line is longer than %zu bytes", path, lineno, sizeof line - 2);
            break;
        }
        char key[64], *v = NULL, err[512];
        int n = split_line(line, key, sizeof key, &v);
        if (n == 0) continue;
        int rc = n == 2 ? apply_line(key, v, path, lineno, err, sizeof err) : 1;
        if (rc < 0) config_error("%.400s:%d: cannot use '%s %.200s': %s", path, lineno, key, v, err);
        char hint[96];
        if (rc > 0)
            config_error(
                "%.400s:%d: cannot use '%s%s%.200s': %swrite 'server HOST:PORT', 'metaserver HOST:PORT', "
                "'timeout DURATION', 'connect_timeout DURATION', 'token TEXT', 'key_file PATH' or "
                "'retries N' (DURATION: 30, 0.5, 250ms, 30s, 2m, 1h)",
                path, lineno, key, n > 1 ? " " : "", n > 1 ? v : "", key_hint(key, hint, sizeof hint));
    }
    fclose(f);
}

/* A duration from the environment variable NAME into *OUT, when it is set. */
static void env_duration(const char *name, double *out) {
    const char *t = getenv(name);
    char err[512];
    if (t && *t && gr_parse_duration(t, out, err, sizeof err)) config_error("%s: %s", name, err);
}

/* GRIDRPC_SITE, GRIDRPC_SCHEDULER, GRIDRPC_REUSE, GRIDRPC_REUSE_FOR. */
static void load_routing(void) {
    const char *site = getenv("GRIDRPC_SITE");
    if (site && *site) {
        if (strlen(site) > GRP_MAX_SITE)
            config_error("GRIDRPC_SITE: a site name has at most %d bytes", GRP_MAX_SITE);
        else
            snprintf(config.site, sizeof config.site, "%s", site);
    } else if (gethostname(config.site, sizeof config.site - 1) != 0) {
        snprintf(config.site, sizeof config.site, "localhost");
    }
    const char *pol = getenv("GRIDRPC_SCHEDULER");
    if (pol && *pol) {
        int p = grp_policy_parse(pol);
        if (p < 0)
            config_error(
                "GRIDRPC_SCHEDULER: unknown scheduler '%.100s': write mct, least-load, round-robin or "
                "default (the metaserver's own)",
                pol);
        else
            config.policy = (uint32_t)p;
    }
    config.reuse_max = GRC_REUSE_MAX;
    config.reuse_seconds = GRC_REUSE_SECONDS;
    const char *r = getenv("GRIDRPC_REUSE");
    if (r && *r) {
        char *end;
        long n = strtol(r, &end, 10);
        if (*end || n < 0 || n > 1000000)
            config_error("GRIDRPC_REUSE: '%.100s' is not a count of calls (0..1000000; 0: always ask the "
                         "metaserver)",
                         r);
        else
            config.reuse_max = (int)n;
    }
    env_duration("GRIDRPC_REUSE_FOR", &config.reuse_seconds);
}

static void load(void) {
    grp_keyset_clear(&config.keys);
    memset(&config, 0, sizeof config);
    load_error = 0;
    load_msg[0] = '\0';
    config.connect_timeout = 10;
    config.call_timeout = 0;
    config.retries = GRC_RETRIES;
    const char *s = getenv("GRIDRPC_SERVER");
    char err[512];
    if (s && *s) {
        if (gr_parse_hostport(s, 0, config.server_host, sizeof config.server_host, &config.server_port, err,
                              sizeof err))
            config_error("GRIDRPC_SERVER: %s", err);
        else
            snprintf(config.source, sizeof config.source, "GRIDRPC_SERVER");
    }
    const char *m = getenv("GRIDRPC_METASERVER");
    if (m && *m) {
        if (gr_parse_hostport(m, 0, config.meta_host, sizeof config.meta_host, &config.meta_port, err,
                              sizeof err))
            config_error("GRIDRPC_METASERVER: %s", err);
        else
            snprintf(config.meta_source, sizeof config.meta_source, "GRIDRPC_METASERVER");
    }
    load_routing();
    /* Before the file, whose 'key_file' line it overrides. */
    const char *kf = getenv("GRIDRPC_KEY_FILE");
    if (kf && *kf) {
        gr_err ke;
        if (grp_keyset_load(kf, &config.keys, &ke)) config_error("GRIDRPC_KEY_FILE: %s", ke.msg);
    }
    const char *ca = getenv("GRIDRPC_TLS_CA");
    if (ca && *ca) {
        if (strlen(ca) >= sizeof config.tls_ca)
            config_error("GRIDRPC_TLS_CA: the path is longer than %zu bytes", sizeof config.tls_ca - 1);
        else
            snprintf(config.tls_ca, sizeof config.tls_ca, "%s", ca);
    }
    const char *cf = getenv("GRIDRPC_CONFIG");
    if (cf && *cf) {
        load_file(cf, 1);
    } else {
        const char *home = getenv("HOME");
        if (home) {
            char path[1024];
            snprintf(path, sizeof path, "%s/.gridrpc.conf", home);
            load_file(path, 0);
        }
    }
    const char *ct = getenv("GRIDRPC_TIMEOUT");
    if (ct && *ct) snprintf(config.timeout_source, sizeof config.timeout_source, "GRIDRPC_TIMEOUT");
    env_duration("GRIDRPC_TIMEOUT", &config.call_timeout);
    env_duration("GRIDRPC_CONNECT_TIMEOUT", &config.connect_timeout);
    const char *rt = getenv("GRIDRPC_RETRIES");
    if (rt && *rt) {
        if (parse_retries(rt, &config.retries, err, sizeof err))
            config_error("GRIDRPC_RETRIES: %s", err);
        else
            snprintf(config.retries_source, sizeof config.retries_source, "GRIDRPC_RETRIES");
    }
    const char *t = getenv("GRIDRPC_TOKEN");
    if (t && *t && set_token(t, err, sizeof err)) config_error("GRIDRPC_TOKEN: %s", err);
    loaded = 1;
}

int grc_config_get(grc_config *out, gr_err *e) {
    pthread_mutex_lock(&lock);
    if (!loaded) load();
    *out = config;
    if (forced_connect >= 0) out->connect_timeout = forced_connect;
    if (forced_call >= 0) {
        out->call_timeout = forced_call;
        memcpy(out->timeout_source, forced_source, sizeof forced_source);
    }
    if (token_forced) memcpy(out->token, forced_token, sizeof out->token);
    if (keys_forced) out->keys = forced_keys;
    if (meta_forced) {
        memcpy(out->meta_host, forced_meta_host, sizeof out->meta_host);
        out->meta_port = forced_meta_port;
        snprintf(out->meta_source, sizeof out->meta_source, "grid_set_metaserver_np");
    }
    if (forced_policy >= 0) out->policy = (uint32_t)forced_policy;
    if (ca_forced) memcpy(out->tls_ca, forced_ca, sizeof out->tls_ca);
    int rc = load_error;
    if (rc) gr_seterr(e, rc, "%s", load_msg);
    pthread_mutex_unlock(&lock);
    return rc;
}

void grc_config_set_timeouts(double connect_seconds, double call_seconds, const char *source) {
    pthread_mutex_lock(&lock);
    forced_connect = connect_seconds;
    forced_call = call_seconds;
    snprintf(forced_source, sizeof forced_source, "%s", source && *source ? source : "grid_set_timeouts_np");
    pthread_mutex_unlock(&lock);
}

void grc_config_set_token(const char *token) {
    pthread_mutex_lock(&lock);
    token_forced = token != NULL;
    snprintf(forced_token, sizeof forced_token, "%s", token ? token : "");
    pthread_mutex_unlock(&lock);
}

void grc_config_set_keys(const grp_keyset *ks) {
    pthread_mutex_lock(&lock);
    keys_forced = ks != NULL;
    if (ks)
        forced_keys = *ks;
    else
        grp_keyset_clear(&forced_keys);
    pthread_mutex_unlock(&lock);
}

void grc_config_set_metaserver(const char *host, int port) {
    pthread_mutex_lock(&lock);
    meta_forced = host != NULL;
    snprintf(forced_meta_host, sizeof forced_meta_host, "%s", host ? host : "");
    forced_meta_port = port;
    pthread_mutex_unlock(&lock);
}

void grc_config_set_tls_ca(const char *path) {
    pthread_mutex_lock(&lock);
    ca_forced = path != NULL;
    snprintf(forced_ca, sizeof forced_ca, "%s", path ? path : "");
    pthread_mutex_unlock(&lock);
}

void grc_config_set_policy(int policy) {
    pthread_mutex_lock(&lock);
    forced_policy = policy;
    pthread_mutex_unlock(&lock);
}

const char *grc_timeout_text(const grc_config *cfg, char *buf, size_t n) {
    snprintf(buf, n, "%g s (%s)", cfg->call_timeout,
             cfg->timeout_source[0] ? cfg->timeout_source : "GRIDRPC_TIMEOUT");
    return buf;
}

const char *grc_retries_text(const grc_config *cfg, char *buf, size_t n) {
    snprintf(buf, n, "%d (%s)", cfg->retries, cfg->retries_source[0] ? cfg->retries_source : "the default");
    return buf;
}

long long grc_config_deadline(const grc_config *cfg) {
    return cfg->call_timeout > 0 ? gr_now_ns() + (long long)(cfg->call_timeout * 1e9) : 0;
}

void grc_config_reset(void) {
    pthread_mutex_lock(&lock);
    loaded = 0;
    forced_connect = forced_call = -1;
    ca_forced = 0;
    token_forced = 0;
    keys_forced = 0;
    grp_keyset_clear(&forced_keys);
    meta_forced = 0;
    forced_policy = -1;
    pthread_mutex_unlock(&lock);
}

int grc_resolve(const char *name, const grc_config *cfg, grc_target *t, gr_err *e) {
    memset(t, 0, sizeof *t);
    if (!name || !*name) return gr_seterr(e, GRID_ERR_ARGS, "no function name given");
    int tls, scheme = gr_scheme_len(name, &tls);
    if (scheme) {
        const char *hp = name + scheme;
        const char *slash = strchr(hp, '/');
        char hostport[GRC_MAX_HOST + 8];
        size_t len = slash ? (size_t)(slash - hp) : strlen(hp);
        if (!slash || !slash[1] || len >= sizeof hostport)
            return gr_seterr(e, GRID_ERR_ARGS, "'%s' is not gridrpc://HOST:PORT/[MODULE/]FUNCTION", name);
        memcpy(hostport, hp, len);
        hostport[len] = '\0';
        char err[512];
        if (gr_parse_hostport(hostport, 0, t->host, sizeof t->host, &t->port, err, sizeof err))
            return gr_seterr(e, GRID_ERR_ARGS, "'%s': %s", name, err);
        if (tls) gr_tls_endpoint_mark(t->host, t->port); /* gridrpcs://host:port/function */
        name = slash + 1;
    } else {
        if (!cfg->server_host[0])
            return gr_seterr(e, GRID_ERR_CONFIG,
                             "no server for '%s': set GRIDRPC_METASERVER=host:port (a metaserver chooses) "
                             "or GRIDRPC_SERVER=host:port, add 'server host:port' to ~/.gridrpc.conf (or the "
                             "file GRIDRPC_CONFIG names), or call gridrpc://host:port/%s",
                             name, name);
        snprintf(t->host, sizeof t->host, "%s", cfg->server_host);
        t->port = cfg->server_port;
    }
    if (strlen(name) >= sizeof t->name) return gr_seterr(e, GRID_ERR_ARGS, "function name too long");
    snprintf(t->name, sizeof t->name, "%s", name);
    return GRID_OK;
}
