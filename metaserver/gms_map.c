/* gms_map.c: a small string -> index map (open addressing, FNV-1a, linear probing) for
 * the lookups on the decision path: function names, client sites, server addresses.
 * Entries are never removed; the state rebuilds a map when its contents change. */
#include <stdlib.h>
#include <string.h>

#include "gms.h"

static uint32_t hash(const char *s) {
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static int grow(gms_map *m) {
    uint32_t cap = m->cap ? m->cap * 2 : 64;
    char **keys = calloc(cap, sizeof *keys);
    uint32_t *vals = calloc(cap, sizeof *vals);
    if (!keys || !vals) {
        free(keys);
        free(vals);
        return -1;
    }
    for (uint32_t i = 0; i < m->cap; i++) {
        if (!m->keys[i]) continue;
        uint32_t j = hash(m->keys[i]) & (cap - 1);
        while (keys[j])
            j = (j + 1) & (cap - 1);
        keys[j] = m->keys[i];
        vals[j] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    m->keys = keys;
    m->vals = vals;
    m->cap = cap;
    return 0;
}

int gms_map_put(gms_map *m, const char *key, uint32_t val) {
    /* at most half full: probes stay short */
    if ((m->n + 1) * 2 > m->cap && grow(m)) return -1;
    uint32_t j = hash(key) & (m->cap - 1);
    while (m->keys[j]) {
        if (strcmp(m->keys[j], key) == 0) {
            m->vals[j] = val;
            return 0;
        }
        j = (j + 1) & (m->cap - 1);
    }
    char *k = strdup(key);
    if (!k) return -1;
    m->keys[j] = k;
    m->vals[j] = val;
    m->n++;
    return 0;
}

int gms_map_get(const gms_map *m, const char *key, uint32_t *val) {
    if (!m->cap) return 0;
    uint32_t j = hash(key) & (m->cap - 1);
    while (m->keys[j]) {
        if (strcmp(m->keys[j], key) == 0) {
            *val = m->vals[j];
            return 1;
        }
        j = (j + 1) & (m->cap - 1);
    }
    return 0;
}

void gms_map_free(gms_map *m) {
    for (uint32_t i = 0; i < m->cap; i++)
        free(m->keys[i]);
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}
