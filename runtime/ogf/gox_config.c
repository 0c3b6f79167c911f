/* gox_config.c: the configuration file grpc_initialize reads, in either of two formats,
 * even mixed in one file:
 *   ours (docs/api.md): "server host:port", "metaserver host:port", "timeout S",
 *     "connect_timeout S", "token T", "key_file PATH", "tls_ca FILE" lines (a server or
 *     metaserver written gridrpcs://host:port is reached over TLS);
 *   Ninf-G 5's client format: <SECTION> ... </SECTION> blocks of "attribute value"
 *     lines: <SERVER> (hostname, port, tag), <SERVER_DEFAULT> (port), <FUNCTION_INFO>
 *     (hostname, funcname), <INCLUDE> (filename), session_timeout as the call timeout,
 *     and our <CLIENT> attribute "metaserver host:port" (Ninf-G has none: its servers
 *     were found through MDS; docs/metaserver-client.md).
 * '#' starts a comment, values may be quoted; durations, ports and host:port are in the
 * forms of gr_settings.h, the same as everywhere else. What we cannot honour
 * (Ninf-G's invocation, proxies, logging...) is ignored with a warning on stderr, so a
 * Ninf-G configuration works unchanged; what is malformed, or an attribute Ninf-G does
 * not know either (gox_ninfg.c), is an error with its place. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gox.h"
#include "gr_settings.h"
#include "gr_suggest.h"

#define MAX_TOKENS 32
#define MAX_INCLUDE_DEPTH 8

enum section { S_NONE, S_CLIENT, S_SERVER_DEFAULT, S_SERVER, S_FUNCTION_INFO, S_INCLUDE, S_IGNORED };

/* Ninf-G 5's sections: the known ones we do not use are skipped with one warning. */
static const char *const ignored_sections[] = {"INVOKE_SERVER", "CLIENT_COMMUNICATION_PROXY",
                                               "INFORMATION_SOURCE", NULL};

typedef struct parser {
    gox_config *cfg;
    const char *path;
    int line;
    char *msg;
    size_t msgsize;
    int depth;
    /* the <SERVER> being read */
    char hosts[8][GOX_MAX_HOST];
    int nhosts;
    int port;
    char tag[GOX_MAX_HOST];
    /* the <FUNCTION_INFO> being read */
    char fhost[GOX_MAX_HOST];
    char fname[GOX_MAX_FUNC];
} parser;

static int fail(parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(parser *p, const char *fmt, ...) {
    int n = snprintf(p->msg, p->msgsize, "%s:%d: ", p->path, p->line);
    if (n < 0 || (size_t)n >= p->msgsize) return GRPC_CONFIGFILE_ERROR;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->msg + n, p->msgsize - (size_t)n, fmt, ap);
    va_end(ap);
    return GRPC_CONFIGFILE_ERROR;
}

static void warn(const parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(const parser *p, const char *fmt, ...) {
    char buf[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fprintf(stderr, "gridrpc: %s:%d: warning: %s\n", p->path, p->line, buf);
}

/* Splits LINE into tokens: whitespace separates, "..." quotes (with \" and \\), '#'
 * outside quotes ends the line. Returns the count, or -1 for an unterminated quote. */
static int tokenize(char *line, char **tok) {
    int n = 0;
    char *r = line, *w = line;
    for (;;) {
        while (*r == ' ' || *r == '\t' || *r == '\r' || *r == '\n')
            r++;
        if (!*r || *r == '#') break;
        if (n == MAX_TOKENS) break;
        tok[n++] = w;
        while (*r && *r != ' ' && *r != '\t' && *r != '\r' && *r != '\n' && *r != '#') {
            if (*r == '"') {
                r++;
                while (*r && *r != '"') {
                    if (*r == '\\' && (r[1] == '"' || r[1] == '\\')) r++;
                    *w++ = *r++;
                }
                if (*r != '"') return -1;
                r++;
            } else {
                *w++ = *r++;
            }
        }
        /* The terminator may overwrite the character that ended the token: R is past it. */
        int at_end = !*r || *r == '#';
        if (!at_end) r++;
        *w++ = '\0';
        if (at_end) break;
    }
    return n;
}

static int add_server(parser *p, const char *host, int port, const char *tag) {
    gox_config *c = p->cfg;
    gox_server *s = realloc(c->servers, (size_t)(c->nservers + 1) * sizeof *s);
    if (!s) return fail(p, "out of memory");
    c->servers = s;
    s += c->nservers++;
    memset(s, 0, sizeof *s);
    snprintf(s->host, sizeof s->host, "%s", host);
    snprintf(s->tag, sizeof s->tag, "%s", tag);
    s->port = port;
    return GRPC_NO_ERROR;
}

/* A time attribute that we honour process-wide (the core has one call timeout). */
static int set_time(parser *p, double *field, const char *key, const char *v) {
    double t;
    char err[512];
    if (gr_parse_duration(v, &t, err, sizeof err)) return fail(p, "%s: %s", key, err);
    if (*field >= 0 && *field != t) {
        warn(p, "%s %s: the client has one call timeout per process; keeping %g s", key, v, *field);
    } else {
        *field = t;
        /* Timeout messages name the setting that gave the value. */
        snprintf(p->cfg->timeout_source, sizeof p->cfg->timeout_source, "'%s' in %.200s line %d", key,
                 p->path, p->line);
    }
    return GRPC_NO_ERROR;
}

static int parse_port(parser *p, const char *v, int *port) {
    char err[512];
    if (gr_parse_port(v, 0, port, err, sizeof err)) return fail(p, "port: %s", err);
    return GRPC_NO_ERROR;
}

/* "; did you mean NAME?" when KEY is a typo of one of NAMES (NULL-terminated), else "". */
static const char *typo_hint(const char *const *names, const char *key, char *buf, size_t n) {
    gr_suggest s;
    gr_suggest_init(&s, key);
    for (; names && *names; names++)
        gr_suggest_offer(&s, *names);
    const char *best = gr_suggest_best(&s);
    if (best)
        snprintf(buf, n, "; did you mean %s?", best);
    else if (n)
        buf[0] = '\0';
    return buf;
}

/* Our own format's lines (outside any section). */
/* "metaserver HOST:PORT": the first one read wins, as for the core's own file. */
static int set_metaserver(parser *p, const char *v) {
    gox_config *c = p->cfg;
    char err[512], host[GOX_MAX_HOST];
    int port;
    if (gr_parse_hostport(v, 0, host, sizeof host, &port, err, sizeof err))
        return fail(p, "metaserver: %s", err);
    if (!c->has_meta) {
        memcpy(c->meta_host, host, sizeof host);
        c->meta_port = port;
        c->has_meta = 1;
    }
    return GRPC_NO_ERROR;
}

static int our_setting(parser *p, const char *key, const char *v) {
    gox_config *c = p->cfg;
    char err[512];
    if (strcmp(key, "metaserver") == 0) return set_metaserver(p, v);
    if (strcmp(key, "server") == 0) {
        char host[GOX_MAX_HOST];
        int port;
        if (gr_parse_hostport(v, 0, host, sizeof host, &port, err, sizeof err))
            return fail(p, "server: %s", err);
        return add_server(p, host, port, "");
    }
    if (strcmp(key, "timeout") == 0) return set_time(p, &c->call_timeout, key, v);
    if (strcmp(key, "connect_timeout") == 0) {
        if (gr_parse_duration(v, &c->connect_timeout, err, sizeof err)) return fail(p, "%s: %s", key, err);
        return GRPC_NO_ERROR;
    }
    if (strcmp(key, "token") == 0) {
        if (strlen(v) >= sizeof c->token) return fail(p, "token: at most %zu bytes", sizeof c->token - 1);
        snprintf(c->token, sizeof c->token, "%s", v);
        c->has_token = 1;
        return GRPC_NO_ERROR;
    }
    if (strcmp(key, "key_file") == 0) {
        if (strlen(v) >= sizeof c->key_file)
            return fail(p, "key_file: at most %zu bytes", sizeof c->key_file - 1);
        snprintf(c->key_file, sizeof c->key_file, "%s", v);
        snprintf(c->key_file_at, sizeof c->key_file_at, "%.1000s:%d", p->path, p->line);
        c->has_key_file = 1;
        return GRPC_NO_ERROR;
    }
    if (strcmp(key, "tls_ca") == 0) {
        if (!*v || strlen(v) >= sizeof c->tls_ca)
            return fail(p, "tls_ca: give the path of a PEM file of CA certificates (at most %zu bytes)",
                        sizeof c->tls_ca - 1);
        snprintf(c->tls_ca, sizeof c->tls_ca, "%s", v);
        c->has_tls_ca = 1;
        return GRPC_NO_ERROR;
    }
    static const char *const ours[] = {"metaserver", "server",   "timeout", "connect_timeout",
                                       "token",      "key_file", "tls_ca",  NULL};
    char hint[GR_SUGGEST_MAX + 32];
    return fail(p,
                "'%s' is neither a setting ('server HOST:PORT', 'metaserver HOST:PORT', 'timeout DURATION', "
                "'connect_timeout DURATION', 'token TEXT', 'key_file PATH', 'tls_ca FILE') nor inside a "
                "Ninf-G <SECTION>%s",
                key, typo_hint(ours, key, hint, sizeof hint));
}

static int read_file(parser *p, const char *path, int top);

/* One "key value..." line inside SEC (or outside any section). */
static int attribute(parser *p, enum section sec, const char *secname, char **tok, int n) {
    const char *key = tok[0];
    if (sec == S_IGNORED) return GRPC_NO_ERROR;
    if (n < 2) return fail(p, "'%s' needs a value", key);
    const char *v = tok[1];
    switch (sec) {
    case S_NONE: return our_setting(p, key, v);
    case S_SERVER:
        if (strcmp(key, "hostname") == 0) {
            for (int i = 1; i < n; i++) {
                if (p->nhosts == (int)(sizeof p->hosts / sizeof p->hosts[0]))
                    return fail(p, "too many hostnames in one <SERVER> (at most 8): write several sections");
                if (strlen(tok[i]) >= GOX_MAX_HOST) return fail(p, "hostname '%.40s...' is too long", tok[i]);
                snprintf(p->hosts[p->nhosts++], GOX_MAX_HOST, "%s", tok[i]);
            }
            return GRPC_NO_ERROR;
        }
        if (strcmp(key, "port") == 0) return parse_port(p, v, &p->port);
        if (strcmp(key, "tag") == 0) {
            snprintf(p->tag, sizeof p->tag, "%s", v);
            return GRPC_NO_ERROR;
        }
        if (strcmp(key, "session_timeout") == 0) return set_time(p, &p->cfg->call_timeout, key, v);
        break;
    case S_SERVER_DEFAULT:
        if (strcmp(key, "port") == 0) return parse_port(p, v, &p->cfg->default_port);
        if (strcmp(key, "session_timeout") == 0) return set_time(p, &p->cfg->call_timeout, key, v);
        break;
    case S_FUNCTION_INFO:
        if (strcmp(key, "hostname") == 0) {
            snprintf(p->fhost, sizeof p->fhost, "%s", v);
            return GRPC_NO_ERROR;
        }
        if (strcmp(key, "funcname") == 0) {
            snprintf(p->fname, sizeof p->fname, "%s", v);
            return GRPC_NO_ERROR;
        }
        break;
    case S_INCLUDE:
        if (strcmp(key, "filename") == 0) {
            for (int i = 1; i < n; i++) {
                int rc = read_file(p, tok[i], 0);
                if (rc) return rc;
            }
            return GRPC_NO_ERROR;
        }
        break;
    case S_CLIENT:
        if (strcmp(key, "metaserver") == 0) return set_metaserver(p, v);
        break;
    case S_IGNORED: break;
    }
    /* Ninf-G's own attributes we have no use for are only noted, so its files work as
     * they are. A name close to one of its section's is a typo, refused as Ninf-G 5
     * refuses it (a hostnme would otherwise leave the <SERVER> without its host); one
     * close to none is noted too: our list of Ninf-G's names may lack one a working
     * file holds, and a warning never breaks it. */
    const char *const *known = gox_ninfg_attributes(secname);
    for (const char *const *a = known; a && *a; a++)
        if (strcmp(*a, key) == 0) {
            warn(p, "<%s> attribute '%s' is ignored (GridRPC does not use it)", secname, key);
            return GRPC_NO_ERROR;
        }
    char hint[GR_SUGGEST_MAX + 32];
    static const char *const sections[] = {"SERVER", "SERVER_DEFAULT", "CLIENT", "FUNCTION_INFO", "INCLUDE"};
    for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++)
        for (const char *const *a = gox_ninfg_attributes(sections[i]); a && *a; a++)
            if (strcmp(*a, key) == 0)
                return fail(p, "unknown attribute '%.100s' in <%s>: it belongs in <%s>", key, secname,
                            sections[i]);
    if (!*typo_hint(known, key, hint, sizeof hint)) {
        warn(p, "<%s> attribute '%.100s' is unknown and ignored (check its spelling)", secname, key);
        return GRPC_NO_ERROR;
    }
    return fail(p, "unknown attribute '%.100s' in <%s>%s", key, secname, hint);
}

static enum section section_of(const char *name) {
    if (strcmp(name, "CLIENT") == 0) return S_CLIENT;
    if (strcmp(name, "SERVER_DEFAULT") == 0) return S_SERVER_DEFAULT;
    if (strcmp(name, "SERVER") == 0) return S_SERVER;
    if (strcmp(name, "FUNCTION_INFO") == 0) return S_FUNCTION_INFO;
    if (strcmp(name, "INCLUDE") == 0) return S_INCLUDE;
    return S_IGNORED;
}

/* Leaves section SEC: a <SERVER> or <FUNCTION_INFO> becomes an entry. */
static int close_section(parser *p, enum section sec) {
    if (sec == S_SERVER) {
        if (!p->nhosts) return fail(p, "<SERVER> without a hostname");
        for (int i = 0; i < p->nhosts; i++) {
            int rc = add_server(p, p->hosts[i], p->port, p->tag);
            if (rc) return rc;
        }
    } else if (sec == S_FUNCTION_INFO) {
        if (!p->fhost[0] || !p->fname[0]) return fail(p, "<FUNCTION_INFO> needs both hostname and funcname");
        gox_config *c = p->cfg;
        gox_funcinfo *f = realloc(c->funcs, (size_t)(c->nfuncs + 1) * sizeof *f);
        if (!f) return fail(p, "out of memory");
        c->funcs = f;
        f += c->nfuncs++;
        memcpy(f->host, p->fhost, sizeof f->host);
        memcpy(f->func, p->fname, sizeof f->func);
    }
    return GRPC_NO_ERROR;
}

static int parse_stream(parser *p, FILE *f) {
    char line[4096], secname[64] = "";
    enum section sec = S_NONE;
    int rc = GRPC_NO_ERROR, open_line = 0;
    while (!rc && fgets(line, sizeof line, f)) {
        p->line++;
        if (!strchr(line, '\n') && !feof(f)) return fail(p, "line longer than %zu bytes", sizeof line - 2);
        char *s = line;
        while (isspace((unsigned char)*s))
            s++;
        if (*s == '<') {
            char *end = strchr(s, '>');
            char *after = end ? end + 1 : NULL;
            while (after && isspace((unsigned char)*after))
                after++;
            if (!end || (*after && *after != '#'))
                return fail(p, "a section tag is '<NAME>' or '</NAME>' alone on its line");
            *end = '\0';
            int closing = s[1] == '/';
            const char *name = s + 1 + closing;
            if (!*name || strlen(name) >= sizeof secname) return fail(p, "bad section tag '<%s>'", s + 1);
            if (closing) {
                if (sec == S_NONE) return fail(p, "</%s> without <%s>", name, name);
                if (strcmp(name, secname) != 0)
                    return fail(p, "</%s> closes <%s> (opened on line %d)", name, secname, open_line);
                rc = close_section(p, sec);
                sec = S_NONE;
                secname[0] = '\0';
                continue;
            }
            if (sec != S_NONE)
                return fail(p, "<%s> inside <%s> (opened on line %d): close it first with </%s>", name,
                            secname, open_line, secname);
            snprintf(secname, sizeof secname, "%s", name);
            open_line = p->line;
            sec = section_of(name);
            if (sec == S_IGNORED) {
                int known = 0;
                for (int i = 0; ignored_sections[i]; i++)
                    known |= strcmp(name, ignored_sections[i]) == 0;
                warn(p, "section <%s> is ignored (%s)", name,
                     known ? "GridRPC servers need no invocation, proxy or information service"
                           : "not a section GridRPC knows");
            }
            p->nhosts = 0;
            p->port = 0;
            p->tag[0] = p->fhost[0] = p->fname[0] = '\0';
            continue;
        }
        char *tok[MAX_TOKENS];
        int n = tokenize(s, tok);
        if (n < 0) return fail(p, "unterminated quoted value");
        if (n == 0) continue;
        rc = attribute(p, sec, secname, tok, n);
    }
    if (!rc && ferror(f)) return fail(p, "read error: %s", strerror(errno));
    if (!rc && sec != S_NONE)
        return fail(p, "<%s> (line %d) is not closed: add </%s>", secname, open_line, secname);
    return rc;
}

/* Reads PATH; an <INCLUDE>d file may be named relative to the including file. */
static int read_file(parser *p, const char *path, int top) {
    if (p->depth >= MAX_INCLUDE_DEPTH)
        return fail(p, "<INCLUDE> nested more than %d deep (does a file include itself?)", MAX_INCLUDE_DEPTH);
    char buf[4096];
    FILE *f = fopen(path, "r");
    if (!f && !top && path[0] != '/') {
        const char *slash = strrchr(p->path, '/');
        if (slash) {
            snprintf(buf, sizeof buf, "%.*s/%s", (int)(slash - p->path), p->path, path);
            f = fopen(buf, "r");
            if (f) path = buf;
        }
    }
    if (!f) {
        int err = errno;
        if (top) {
            snprintf(p->msg, p->msgsize, "cannot read the configuration file '%s': %s", path, strerror(err));
            return GRPC_CONFIGFILE_NOT_FOUND;
        }
        return fail(p, "cannot read the included file '%s': %s", path, strerror(err));
    }
    parser sub = *p;
    sub.path = path;
    sub.line = 0;
    sub.depth = p->depth + 1;
    int rc = parse_stream(&sub, f);
    fclose(f);
    return rc;
}

int gox_config_read(const char *path, gox_config *cfg, char *msg, size_t msgsize) {
    parser *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(msg, msgsize, "out of memory");
        return GRPC_OTHER_ERROR_CODE;
    }
    cfg->call_timeout = cfg->connect_timeout = -1;
    p->cfg = cfg;
    p->path = path;
    p->msg = msg;
    p->msgsize = msgsize;
    msg[0] = '\0';
    int rc = read_file(p, path, 1);
    free(p);
    /* The core sends the token in every HELLO: it takes this file's for as long as CFG
     * lives (gox_config_free gives the core's own back), as grpc_initialize does with
     * the timeouts. */
    /* The key file is read now, so a bad one fails grpc_initialize naming the line. */
    if (rc == GRPC_NO_ERROR && cfg->has_key_file && grid_set_key_file_np(cfg->key_file) != GRID_OK) {
        snprintf(msg, msgsize, "%s: key_file: %s", cfg->key_file_at, grid_last_error());
        cfg->has_key_file = 0;
        rc = GRPC_CONFIGFILE_ERROR;
    }
    if (rc == GRPC_NO_ERROR && cfg->has_token) grid_set_token_np(cfg->token);
    if (rc == GRPC_NO_ERROR && cfg->has_meta) grid_set_metaserver_np(cfg->meta_host, cfg->meta_port);
    if (rc == GRPC_NO_ERROR && cfg->has_tls_ca && grid_set_tls_ca_np(cfg->tls_ca) != GRID_OK) {
        snprintf(msg, msgsize, "%s: tls_ca: %s", path, grid_last_error());
        cfg->has_tls_ca = 0;
        rc = GRPC_CONFIGFILE_ERROR;
    }
    return rc;
}

void gox_config_free(gox_config *cfg) {
    if (cfg->has_token) grid_set_token_np(NULL);
    if (cfg->has_key_file) grid_set_key_file_np(NULL);
    if (cfg->has_meta) grid_set_metaserver_np(NULL, 0);
    if (cfg->has_tls_ca) grid_set_tls_ca_np(NULL);
    free(cfg->servers);
    free(cfg->funcs);
    memset(cfg, 0, sizeof *cfg);
}

void gox_config_server(const gox_config *cfg, const char *server, char *host, size_t hostsize, int *port) {
    int dport = cfg->default_port ? cfg->default_port : GOX_DEFAULT_PORT;
    /* Tags first: a tag is the name programs are meant to pass. */
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < cfg->nservers; i++) {
            const gox_server *s = &cfg->servers[i];
            if (strcmp(pass ? s->host : s->tag, server) == 0) {
                snprintf(host, hostsize, "%s", s->host);
                *port = s->port ? s->port : dport;
                return;
            }
        }
    if (gr_parse_hostport(server, GR_PORT_OPTIONAL, host, hostsize, port, NULL, 0) == 0) {
        if (!*port) *port = dport;
        return;
    }
    snprintf(host, hostsize, "%s", server);
    *port = dport;
}

const char *gox_config_function_host(const gox_config *cfg, const char *func) {
    for (int i = 0; i < cfg->nfuncs; i++)
        if (strcmp(cfg->funcs[i].func, func) == 0) return cfg->funcs[i].host;
    /* "dmmul" matches "linalg/dmmul" and the other way round, as the core resolves. */
    const char *fs = strrchr(func, '/');
    for (int i = 0; i < cfg->nfuncs; i++) {
        const char *cs = strrchr(cfg->funcs[i].func, '/');
        if ((!fs) != (!cs) && strcmp(fs ? fs + 1 : func, cs ? cs + 1 : cfg->funcs[i].func) == 0)
            return cfg->funcs[i].host;
    }
    return NULL;
}
