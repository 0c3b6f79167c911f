/* grc_cache.c: the client's descriptor cache (the first stage of two-stage RPC). A
 * descriptor is fetched once per server and function; later calls send its hash, and a
 * server whose function changed answers GRID_ERR_STALE so the entry is fetched again.
 * Entries are never freed while the process runs (only by grid_reset_np), so a pointer
 * handed out stays valid for the call that uses it. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grc_client.h"

typedef struct entry {
    char host[GRC_MAX_HOST];
    int port;
    char name[GRC_MAX_NAME];
    grd_desc *desc;
    int stale;
    struct entry *next;
} entry;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static entry *entries;

static entry *find(const grc_target *t) {
    for (entry *x = entries; x; x = x->next)
        if (!x->stale && x->port == t->port && strcmp(x->host, t->host) == 0 && strcmp(x->name, t->name) == 0)
            return x;
    return NULL;
}

static int fetch(const grc_target *t, const grc_config *cfg, grd_desc **out, gr_err *e) {
    grc_conn *c;
    __atomic_add_fetch(&grc_stat_fetches, 1, __ATOMIC_RELAXED);
    int rc = grc_conn_get(t->host, t->port, cfg, &c, e);
    if (rc) return rc;
    c->rd.deadline_ns = c->wr.deadline_ns = grc_config_deadline(cfg);
    grw_header h;
    int in_step = 0;
    rc = grp_write_get_descriptor(&c->wr, c->next_id++, t->name, e);
    if (!rc) rc = grp_read_header(&c->rd, &h, e);
    if (!rc) rc = grp_expect(&c->rd, &h, GRP_DESCRIPTOR, "GET_DESCRIPTOR", &in_step, e);
    if (!rc) {
        char qualified[GRP_MAX_FUNCTION_NAME + 1];
        rc = grp_read_descriptor(&c->rd, qualified, out, e);
        /* A descriptor that does not decode was still read whole. */
        in_step = rc == GRID_OK || (rc == GRID_ERR_PROTOCOL && !c->rd.in_message);
    }
    grc_conn_put(c, !in_step);
    /* The server's message names the function again (callers prefix it) and points
     * to the command line only: a program can list from C too. */
    const char *slash = strrchr(t->name, '/');
    int method = strchr(slash ? slash : t->name, '.') != NULL; /* the server's message lists the methods */
    if (rc == GRID_ERR_NOT_FOUND && !method)
        gr_seterr(e, rc,
                  "the server has no such function; grid_list_functions_np(\"%s:%d\", ...) "
                  "(grpc_list_functions_np) or `gridrpc ls --server %s:%d` lists those it has",
                  t->host, t->port, t->host, t->port);
    return rc;
}

int grc_descriptor(const grc_target *t, const grc_config *cfg, const grd_desc **out, gr_err *e) {
    pthread_mutex_lock(&lock);
    entry *x = find(t);
    pthread_mutex_unlock(&lock);
    if (x) {
        *out = x->desc;
        return GRID_OK;
    }
    grd_desc *d = NULL;
    int rc = fetch(t, cfg, &d, e);
    if (rc) return rc;
    pthread_mutex_lock(&lock);
    x = find(t);
    if (x) {
        /* Another thread fetched it meanwhile: keep one. */
        grd_free(d);
    } else {
        x = calloc(1, sizeof *x);
        if (!x) {
            pthread_mutex_unlock(&lock);
            grd_free(d);
            return gr_seterr(e, GRID_ERR_NOMEM, "out of memory");
        }
        snprintf(x->host, sizeof x->host, "%s", t->host);
        x->port = t->port;
        snprintf(x->name, sizeof x->name, "%s", t->name);
        x->desc = d;
        x->next = entries;
        entries = x;
    }
    *out = x->desc;
    pthread_mutex_unlock(&lock);
    return GRID_OK;
}

void grc_cache_forget(const grc_target *t) {
    pthread_mutex_lock(&lock);
    entry *x = find(t);
    if (x) x->stale = 1;
    pthread_mutex_unlock(&lock);
}

void grc_cache_reset(void) {
    pthread_mutex_lock(&lock);
    entry *x = entries;
    entries = NULL;
    pthread_mutex_unlock(&lock);
    while (x) {
        entry *n = x->next;
        grd_free(x->desc);
        free(x);
        x = n;
    }
}
