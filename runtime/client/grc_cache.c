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

long grc_stat_fetches;

static int fetch(const grc_target *t, const grc_config *cfg, grd_desc **out, gr_err *e) {
    grc_conn *c;
    __atomic_add_fetch(&grc_stat_fetches, 1, __ATOMIC_RELAXED);
    int rc = grc_conn_get(t->host, t->port, cfg, &c, e);
    if (rc) return rc;
    long long deadline = cfg->call_timeout > 0 ? gr_now_ns() + (long long)(cfg->call_timeout * 1e9) : 0;
    c->rd.deadline_ns = c->wr.deadline_ns = deadline;
    grw_header h;
    rc = grw_begin(&c->wr, GRW_GET_DESCRIPTOR, 0, c->next_id++, e);
    if (!rc) rc = grw_write_string(&c->wr, t->name, e);
    if (!rc) rc = grw_finish(&c->wr, e);
    if (!rc) rc = grw_read_header(&c->rd, &h, e);
    int broken = rc != 0;
    if (!rc && h.type == GRW_ERROR) {
        uint32_t code;
        char *msg = NULL;
        rc = grw_read_u32(&c->rd, &code, e);
        if (!rc) rc = grw_read_string(&c->rd, 4095, &msg, e);
        if (!rc) rc = grw_end(&c->rd, e);
        broken = rc != 0;
        if (!rc) rc = gr_seterr(e, code ? (int)code : GRID_ERR_PROTOCOL, "%s", msg);
        free(msg);
    } else if (!rc && h.type == GRW_DESCRIPTOR) {
        char *qualified = NULL;
        uint8_t *bytes = NULL;
        uint32_t len = 0;
        rc = grw_read_string(&c->rd, GRC_MAX_NAME - 1, &qualified, e);
        if (!rc) rc = grw_read_opaque(&c->rd, GRD_MAX_ENCODED, &bytes, &len, e);
        if (!rc) rc = grw_end(&c->rd, e);
        broken = rc != 0;
        if (!rc) {
            grd_error ge;
            if (grd_decode(bytes, len, out, &ge) != GRD_OK)
                rc = gr_seterr(e, GRID_ERR_PROTOCOL, "the server sent a bad descriptor for '%s': %s", t->name,
                               ge.msg);
        }
        free(qualified);
        free(bytes);
    } else if (!rc) {
        broken = 1;
        rc = gr_seterr(e, GRID_ERR_PROTOCOL, "the server answered GET_DESCRIPTOR with %s",
                       grw_type_name(h.type));
    }
    grc_conn_put(c, broken);
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
