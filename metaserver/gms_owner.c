/* gms_owner.c: who may write a server entry (issue 25, docs/security.md). An entry
 * belongs to the server key that first registered it; REGISTER of its host:port,
 * HEARTBEAT and UNREGISTER of its id with another key are refused, so a peer cannot
 * take over, rename or mark down a server it is not. Without keys there is no owner
 * ("") and everything is as before roles: the daemon warns at start. An entry loaded
 * from the registry after a restart has no owner until its server registers again. */
#include <stdio.h>
#include <string.h>

#include "gms.h"

static gms_server *find_addr(gms_state *st, const char *host, uint32_t port) {
    char key[GRP_MAX_HOST + 16];
    uint32_t k;
    snprintf(key, sizeof key, "%s:%u", host, port);
    return gms_map_get(&st->addr, key, &k) ? st->servers[k] : NULL;
}

static int taken(const gms_server *s, const char *owner) {
    return owner[0] && s->owner[0] && strcmp(s->owner, owner) != 0;
}

int gms_state_claim(gms_state *st, const char *host, uint32_t port, const char *owner, gr_err *e) {
    int rc = GRID_OK;
    pthread_mutex_lock(&st->lock);
    gms_server *s = find_addr(st, host, port);
    if (s && taken(s, owner))
        rc = gr_seterr(e, GRID_ERR_AUTH,
                       "REGISTER of %s:%u refused: server %llu at that address was registered with another "
                       "server key (id %s); a server registers only its own address: give this server its "
                       "own host:port, or register it with the key that server uses",
                       host, port, (unsigned long long)s->id, s->owner);
    else if (s && owner[0] && !s->owner[0])
        snprintf(s->owner, sizeof s->owner, "%s", owner);
    pthread_mutex_unlock(&st->lock);
    return rc;
}

void gms_state_set_owner(gms_state *st, uint64_t id, const char *owner) {
    pthread_mutex_lock(&st->lock);
    gms_server *s = gms_state_find_id(st, id);
    if (s && !s->owner[0]) snprintf(s->owner, sizeof s->owner, "%s", owner);
    pthread_mutex_unlock(&st->lock);
}

int gms_state_check_owner(gms_state *st, uint64_t id, const char *owner, const char *what, gr_err *e) {
    int rc = GRID_OK;
    pthread_mutex_lock(&st->lock);
    gms_server *s = gms_state_find_id(st, id);
    if (s && taken(s, owner))
        rc = gr_seterr(e, GRID_ERR_AUTH,
                       "%s of server %llu refused: it was registered with another server key (id %s); only "
                       "the server that registered it may send %s for it",
                       what, (unsigned long long)id, s->owner, what);
    pthread_mutex_unlock(&st->lock);
    return rc;
}
