/* grc_config.c: where the client finds its server and timeouts: GRIDRPC_SERVER,
 * GRIDRPC_TIMEOUT, GRIDRPC_CONNECT_TIMEOUT and GRIDRPC_TOKEN first, then the file named
 * by GRIDRPC_CONFIG or ~/.gridrpc.conf ("server host:port", "timeout SECONDS",
 * "connect_timeout SECONDS", "token TEXT", '#' comments). Loaded once per process. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grc_client.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int loaded;
static int load_error;
static char load_msg[1024];
static grc_config config;
static double forced_connect = -1, forced_call = -1;

/* Splits "host:port" (or "[v6]:port"); returns 0 on success. */
static int split_hostport(const char *s, char *host, size_t hn, int *port) {
    const char *colon = strrchr(s, ':');
    if (!colon || colon == s) return -1;
    char *end;
    long p = strtol(colon + 1, &end, 10);
    if (*end || p <= 0 || p > 65535) return -1;
    size_t len = (size_t)(colon - s);
    if (s[0] == '[' && colon[-1] == ']') {
        s++;
        len -= 2;
    }
    if (len == 0 || len >= hn) return -1;
    memcpy(host, s, len);
    host[len] = '\0';
    *port = (int)p;
    return 0;
}

static int parse_seconds(const char *s, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    while (*end == ' ' || *end == '\t')
        end++;
    if (end != s && *end == 's') end++;
    if (errno || end == s || *end || v < 0) return -1;
    *out = v;
    return 0;
}

static void load_file(const char *path, int required) {
    FILE *f = fopen(path, "r");
    if (!f) {
        if (required) {
            load_error = GRID_ERR_CONFIG;
            snprintf(load_msg, sizeof load_msg,
                     "cannot read the configuration file '%s' (GRIDRPC_CONFIG): %s", path, strerror(errno));
        }
        return;
    }
    char line[2048];
    int lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        char *h = strchr(line, '#');
        if (h) *h = '\0';
        char key[64], value[1536];
        value[0] = '\0';
        int n = sscanf(line, " %63s %1535[^\n]", key, value);
        if (n <= 0) continue;
        char *v = value;
        size_t vl = strlen(v);
        while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t' || v[vl - 1] == '\r'))
            v[--vl] = '\0';
        if (vl >= 2 && v[0] == '"' && v[vl - 1] == '"') {
            v[vl - 1] = '\0';
            v++;
        }
        int bad = n < 2;
        if (!bad && strcmp(key, "server") == 0) {
            if (!config.server_host[0]) {
                bad = split_hostport(v, config.server_host, sizeof config.server_host, &config.server_port);
                if (!bad) snprintf(config.source, sizeof config.source, "%s line %d", path, lineno);
            }
        } else if (!bad && strcmp(key, "timeout") == 0) {
            bad = parse_seconds(v, &config.call_timeout);
        } else if (!bad && strcmp(key, "connect_timeout") == 0) {
            bad = parse_seconds(v, &config.connect_timeout);
        } else if (!bad && strcmp(key, "token") == 0) {
            snprintf(config.token, sizeof config.token, "%.1000s", v);
        } else {
            bad = 1;
        }
        if (bad && !load_error) {
            load_error = GRID_ERR_CONFIG;
            snprintf(load_msg, sizeof load_msg,
                     "%.400s:%d: cannot use '%s%s%.200s': write 'server HOST:PORT', 'timeout SECONDS', "
                     "'connect_timeout SECONDS' or 'token TEXT'",
                     path, lineno, key, n > 1 ? " " : "", n > 1 ? v : "");
        }
    }
    fclose(f);
}

static void load(void) {
    memset(&config, 0, sizeof config);
    load_error = 0;
    load_msg[0] = '\0';
    config.connect_timeout = 10;
    config.call_timeout = 0;
    const char *s = getenv("GRIDRPC_SERVER");
    if (s && *s) {
        if (split_hostport(s, config.server_host, sizeof config.server_host, &config.server_port)) {
            load_error = GRID_ERR_CONFIG;
            snprintf(load_msg, sizeof load_msg,
                     "GRIDRPC_SERVER='%s' is not HOST:PORT (for example 127.0.0.1:7000)", s);
            config.server_host[0] = '\0';
        } else {
            snprintf(config.source, sizeof config.source, "GRIDRPC_SERVER");
        }
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
    const char *t = getenv("GRIDRPC_TIMEOUT");
    if (t && *t && parse_seconds(t, &config.call_timeout) && !load_error) {
        load_error = GRID_ERR_CONFIG;
        snprintf(load_msg, sizeof load_msg, "GRIDRPC_TIMEOUT='%s' is not a number of seconds", t);
    }
    t = getenv("GRIDRPC_CONNECT_TIMEOUT");
    if (t && *t && parse_seconds(t, &config.connect_timeout) && !load_error) {
        load_error = GRID_ERR_CONFIG;
        snprintf(load_msg, sizeof load_msg, "GRIDRPC_CONNECT_TIMEOUT='%s' is not a number of seconds", t);
    }
    t = getenv("GRIDRPC_TOKEN");
    if (t && *t) snprintf(config.token, sizeof config.token, "%s", t);
    loaded = 1;
}

int grc_config_get(grc_config *out, gr_err *e) {
    pthread_mutex_lock(&lock);
    if (!loaded) load();
    *out = config;
    if (forced_connect >= 0) out->connect_timeout = forced_connect;
    if (forced_call >= 0) out->call_timeout = forced_call;
    int rc = load_error;
    if (rc) gr_seterr(e, rc, "%s", load_msg);
    pthread_mutex_unlock(&lock);
    return rc;
}

void grc_config_set_timeouts(double connect_seconds, double call_seconds) {
    pthread_mutex_lock(&lock);
    forced_connect = connect_seconds;
    forced_call = call_seconds;
    pthread_mutex_unlock(&lock);
}

void grc_config_reset(void) {
    pthread_mutex_lock(&lock);
    loaded = 0;
    forced_connect = forced_call = -1;
    pthread_mutex_unlock(&lock);
}

int grc_resolve(const char *name, const grc_config *cfg, grc_target *t, gr_err *e) {
    memset(t, 0, sizeof *t);
    if (!name || !*name) return gr_seterr(e, GRID_ERR_ARGS, "no function name given");
    const char *prefix = "gridrpc://";
    if (strncmp(name, prefix, strlen(prefix)) == 0) {
        const char *hp = name + strlen(prefix);
        const char *slash = strchr(hp, '/');
        char hostport[GRC_MAX_HOST + 8];
        size_t len = slash ? (size_t)(slash - hp) : strlen(hp);
        if (!slash || !slash[1] || len >= sizeof hostport)
            return gr_seterr(e, GRID_ERR_ARGS, "'%s' is not gridrpc://HOST:PORT/[MODULE/]FUNCTION", name);
        memcpy(hostport, hp, len);
        hostport[len] = '\0';
        if (split_hostport(hostport, t->host, sizeof t->host, &t->port))
            return gr_seterr(e, GRID_ERR_ARGS, "'%s': '%s' is not HOST:PORT", name, hostport);
        name = slash + 1;
    } else {
        if (!cfg->server_host[0])
            return gr_seterr(e, GRID_ERR_CONFIG,
                             "no server for '%s': set GRIDRPC_SERVER=host:port, add 'server host:port' to "
                             "~/.gridrpc.conf (or the file GRIDRPC_CONFIG names), or call "
                             "gridrpc://host:port/%s",
                             name, name);
        snprintf(t->host, sizeof t->host, "%s", cfg->server_host);
        t->port = cfg->server_port;
    }
    if (strlen(name) >= sizeof t->name) return gr_seterr(e, GRID_ERR_ARGS, "function name too long");
    snprintf(t->name, sizeof t->name, "%s", name);
    return GRID_OK;
}
