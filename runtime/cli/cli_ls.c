/* cli_ls.c: gridrpc ls [PATTERN]: the functions there are, with their one-line
 * descriptions: from one server (LIST, then its descriptors on the same connection) or
 * from a metaserver (SERVERS says who has what; each description is fetched once, from
 * one up server that has the function, one connection per server). */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

typedef struct fn_entry {
    char *name;
    char *description; /* first line; NULL until fetched */
    uint32_t nservers;
    uint32_t *servers; /* indexes into the SERVERS list */
} fn_entry;

static int matches(const char *pattern, const char *name) {
    if (!pattern) return 1;
    if (strpbrk(pattern, "*?[")) return fnmatch(pattern, name, 0) == 0;
    return strstr(name, pattern) != NULL;
}

static char *first_line(const char *s) {
    size_t n = strcspn(s ? s : "", "\n");
    char *r = malloc(n + 1);
    if (r) {
        memcpy(r, s ? s : "", n);
        r[n] = '\0';
    }
    return r;
}

static int cmp_entry(const void *a, const void *b) {
    return strcmp(((const fn_entry *)a)->name, ((const fn_entry *)b)->name);
}

static void free_entries(fn_entry *v, size_t n) {
    for (size_t i = 0; i < n; i++) {
        free(v[i].name);
        free(v[i].description);
        free(v[i].servers);
    }
    free(v);
}

/* Fetches the description of every entry without one that server C has (ALL: every
 * entry), on C's one connection. */
static void describe_entries(cli_conn *c, fn_entry *v, size_t n, int all, uint32_t server) {
    for (size_t i = 0; i < n; i++) {
        if (v[i].description) continue;
        int has = all;
        for (uint32_t k = 0; !has && k < v[i].nservers; k++)
            has = v[i].servers[k] == server;
        if (!has) continue;
        char q[GRP_MAX_FUNCTION_NAME + 1];
        grd_desc *d = NULL;
        gr_err e = {0, ""};
        if (cli_get_descriptor(c, v[i].name, q, &d, &e) == GRID_OK) {
            v[i].description = first_line(d->description);
            grd_free(d);
        } else if (e.code == GRID_ERR_CONN_LOST || e.code == GRID_ERR_TIMEOUT ||
                   e.code == GRID_ERR_PROTOCOL) {
            return; /* the connection is gone: another server may still answer */
        }
    }
}

static void print_entries(const cli_opts *o, const fn_entry *v, size_t n, const grp_server_info *servers) {
    if (o->json) {
        fputs("{", stdout);
        if (o->target == CLI_METASERVER) {
            fputs("\"metaserver\": {\"host\": ", stdout);
            cli_json_string(stdout, o->meta_host);
            printf(", \"port\": %d}", o->meta_port);
        } else {
            fputs("\"server\": {\"host\": ", stdout);
            cli_json_string(stdout, o->server_host);
            printf(", \"port\": %d}", o->server_port);
        }
        fputs(", \"functions\": [", stdout);
        for (size_t i = 0; i < n; i++) {
            fputs(i ? ",\n  {\"name\": " : "\n  {\"name\": ", stdout);
            cli_json_string(stdout, v[i].name);
            fputs(", \"description\": ", stdout);
            if (v[i].description)
                cli_json_string(stdout, v[i].description);
            else
                fputs("null", stdout);
            if (servers) {
                fputs(", \"servers\": [", stdout);
                for (uint32_t k = 0; k < v[i].nservers; k++) {
                    const grp_server_info *s = &servers[v[i].servers[k]];
                    printf("%s{\"id\": %llu, \"name\": ", k ? ", " : "", (unsigned long long)s->id);
                    cli_json_string(stdout, s->name);
                    printf(", \"state\": \"%s\"}", s->state == GRP_SERVER_UP ? "up" : "down");
                }
                fputs("]", stdout);
            }
            fputs("}", stdout);
        }
        fputs("\n]}\n", stdout);
        return;
    }
    if (n == 0) return;
    static const char *const head3[] = {"FUNCTION", "SERVERS", "DESCRIPTION"};
    static const char *const head2[] = {"FUNCTION", "DESCRIPTION"};
    cli_table t;
    if (cli_table_init(&t, servers ? 3 : 2, servers ? head3 : head2, NULL)) return;
    for (size_t i = 0; i < n; i++) {
        char list[1024] = "";
        size_t len = 0;
        for (uint32_t k = 0; servers && k < v[i].nservers && len < sizeof list; k++) {
            const grp_server_info *s = &servers[v[i].servers[k]];
            int w = snprintf(list + len, sizeof list - len, "%s%llu%s", k ? "," : "",
                             (unsigned long long)s->id, s->state == GRP_SERVER_UP ? "" : "(down)");
            if (w < 0) break;
            len += (size_t)w;
        }
        const char *desc = v[i].description ? v[i].description : "-";
        const char *row3[] = {v[i].name, list, desc};
        const char *row2[] = {v[i].name, desc};
        cli_table_row(&t, servers ? row3 : row2);
    }
    cli_table_print(&t, stdout);
    cli_table_free(&t);
    if (servers) puts("(SERVERS: ids as in gridrpc status)");
}

static int ls_server(const cli_opts *o, const char *pattern, fn_entry **out, size_t *nout) {
    gr_err e = {0, ""};
    cli_conn *c;
    char **names = NULL;
    uint32_t count = 0;
    int rc = cli_connect(o, o->server_host, o->server_port, 0, &c, &e);
    if (!rc) rc = cli_list_functions(c, &names, &count, &e);
    if (rc) {
        cli_close(c);
        cli_error("%s", e.msg);
        return -1;
    }
    fn_entry *v = calloc(count ? count : 1, sizeof *v);
    size_t n = 0;
    for (uint32_t i = 0; v && i < count; i++)
        if (matches(pattern, names[i])) {
            v[n].name = names[i];
            names[i] = NULL;
            n++;
        }
    grp_free_names(names, count);
    if (!v) {
        cli_close(c);
        cli_error("out of memory");
        return -1;
    }
    qsort(v, n, sizeof *v, cmp_entry);
    describe_entries(c, v, n, 1, 0);
    cli_close(c);
    *out = v;
    *nout = n;
    return 0;
}

/* Adds server index S to the entry for NAME (creating it) in *V. */
static int add_function(fn_entry **v, size_t *n, size_t *cap, const char *name, uint32_t s) {
    for (size_t i = 0; i < *n; i++)
        if (strcmp((*v)[i].name, name) == 0) {
            uint32_t *ns = realloc((*v)[i].servers, ((*v)[i].nservers + 1) * sizeof *ns);
            if (!ns) return -1;
            ns[(*v)[i].nservers++] = s;
            (*v)[i].servers = ns;
            return 0;
        }
    if (*n == *cap) {
        size_t ncap = *cap ? *cap * 2 : 32;
        fn_entry *nv = realloc(*v, ncap * sizeof *nv);
        if (!nv) return -1;
        *v = nv;
        *cap = ncap;
    }
    fn_entry *f = &(*v)[*n];
    memset(f, 0, sizeof *f);
    f->name = strdup(name);
    f->servers = malloc(sizeof *f->servers);
    if (!f->name || !f->servers) {
        free(f->name);
        free(f->servers);
        return -1;
    }
    f->servers[0] = s;
    f->nservers = 1;
    (*n)++;
    return 0;
}

int cli_ls(int argc, char **argv, cli_opts *o) {
    if (argc > 1) {
        cli_error("ls takes at most one pattern, got %d arguments (gridrpc ls --help)", argc);
        return CLI_USAGE;
    }
    const char *pattern = argc ? argv[0] : NULL;
    if (cli_resolve_target(o, CLI_SERVER | CLI_METASERVER)) return CLI_FAIL;
    fn_entry *v = NULL;
    size_t n = 0;
    grp_server_info *servers = NULL;
    uint32_t nservers = 0;
    if (o->target == CLI_SERVER) {
        if (ls_server(o, pattern, &v, &n)) return CLI_FAIL;
    } else {
        gr_err e = {0, ""};
        if (cli_meta_servers(o, &servers, &nservers, &e)) {
            cli_error("%s", e.msg);
            return CLI_FAIL;
        }
        size_t cap = 0;
        for (uint32_t s = 0; s < nservers; s++)
            for (uint32_t k = 0; k < servers[s].nfunctions; k++)
                if (matches(pattern, servers[s].functions[k]) &&
                    add_function(&v, &n, &cap, servers[s].functions[k], s)) {
                    cli_error("out of memory");
                    free_entries(v, n);
                    grp_servers_free(servers, nservers);
                    return CLI_FAIL;
                }
        if (n) qsort(v, n, sizeof *v, cmp_entry);
        for (uint32_t s = 0; s < nservers; s++) {
            if (servers[s].state != GRP_SERVER_UP) continue;
            int missing = 0;
            for (size_t i = 0; i < n && !missing; i++)
                if (!v[i].description)
                    for (uint32_t k = 0; k < v[i].nservers; k++)
                        missing |= v[i].servers[k] == s;
            if (!missing) continue;
            cli_conn *c;
            if (cli_connect(o, servers[s].host, (int)servers[s].port, 0, &c, &e) != GRID_OK) continue;
            describe_entries(c, v, n, 0, s);
            cli_close(c);
        }
    }
    print_entries(o, v, n, servers);
    int status = CLI_OK;
    if (n == 0 && pattern) {
        cli_error("no function matches '%s'", pattern);
        status = CLI_FAIL;
    } else if (n == 0 && !o->json) {
        puts(o->target == CLI_METASERVER ? "(no server has registered any function yet)" : "(no functions)");
    }
    free_entries(v, n);
    grp_servers_free(servers, nservers);
    return status;
}
