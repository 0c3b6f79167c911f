/* gsv_auth.c: gridrpcd's keys (--key-file, --metaserver-key-file) and its side of the
 * key handshake after HELLO (grp_auth_serve does the work; this file adds the locking,
 * the log and the ERROR a refused client reads). */
#include <stdio.h>
#include <string.h>

#include "grp_auth.h"
#include "gsv.h"

int gsv_keys_load(gsv_server *s, gr_err *e) {
    const gsv_options *o = &s->opt;
    memset(&s->keys, 0, sizeof s->keys);
    memset(&s->meta_keys, 0, sizeof s->meta_keys);
    if (o->key_file && grp_keyset_load(o->key_file, &s->keys, e)) {
        gr_prefixerr(e, "--key-file: ");
        return e->code;
    }
    if (o->meta_key_file) {
        if (grp_keyset_load(o->meta_key_file, &s->meta_keys, e)) {
            gr_prefixerr(e, "--metaserver-key-file: ");
            return e->code;
        }
    } else {
        s->meta_keys = s->keys;
    }
    if (s->keys.n)
        gsv_log(GSV_LOG_INFO, "clients must prove a key of %s (%u key%s, first id %s)", o->key_file,
                s->keys.n, s->keys.n == 1 ? "" : "s", s->keys.keys[0].id);
    uint32_t untagged = grp_keyset_untagged(&s->keys);
    if (untagged)
        gsv_log(GSV_LOG_WARN,
                "%s: %u untagged key%s: any holder may act as a server too (copy data here, register at "
                "a metaserver that shares the file); tag each line 'client HEX', 'server HEX' or 'admin "
                "HEX' (docs/security.md)",
                o->key_file, untagged, untagged == 1 ? "" : "s");
    return GRID_OK;
}

int gsv_owner_may(const gsv_conn *c, const char *owner) {
    if (c->is_admin) return 1;
    return c->owner[0] && strcmp(c->owner, owner) == 0;
}

int gsv_auth_hello(gsv_conn *c, const grw_header *h, const grp_hello *m, const grp_hello_ok *ok) {
    gsv_server *s = c->srv;
    gr_err e;
    gr_clearerr(&e);
    /* Nothing else writes on a connection before its HELLO_OK: the write lock is held
     * across the whole exchange, whose reads run under the HELLO's I/O deadline. */
    grw_writer *w = gsv_reply_lock(c, 0);
    if (!w) return GSV_CLOSE;
    char key_id[GRP_AUTH_KEY_ID_HEX + 1] = "";
    uint32_t role = 0;
    int rc = s->keys.n
                 ? grp_auth_serve(&c->r, w, h->request_id, &s->keys, GRP_PEER_GRIDRPCD, key_id, &role, &e)
                 : GRID_OK;
    if (rc) {
        gsv_reply_unlock(c, 0, &e);
        gsv_log(GSV_LOG_WARN, "%s: refused: %s (client '%s')", c->peer, e.msg, m->client);
        if (rc == GRID_ERR_CONN_LOST) return GSV_CLOSE;
        /* The client is told what was refused (AUTH), that it speaks an older handshake
         * (CONFIG) or ran out of time; anything else is its malformed message. */
        int code =
            rc == GRID_ERR_TIMEOUT || rc == GRID_ERR_CONFIG || rc == GRID_ERR_AUTH ? rc : GRID_ERR_PROTOCOL;
        gsv_conn_send_error(c, h->request_id, code,
                            rc == GRID_ERR_TIMEOUT ? "the key handshake did not finish within --io-timeout"
                                                   : e.msg);
        return GSV_REFUSE;
    }
    if (key_id[0]) gsv_log(GSV_LOG_DEBUG, "%s: proved key %s", c->peer, key_id);
    /* With a key its id is the owner (every holder of one key is one owner); without, the
     * session the client sent, which nothing protects on the wire without TLS. */
    grp_owner_of(key_id, m->session, m->session_len, c->owner);
    if (!c->owner[0]) {
        /* An older client, with no session: what it makes is this connection's alone. */
        uint8_t b[16];
        gr_err re;
        if (grp_auth_random(b, sizeof b, &re) == GRID_OK) {
            snprintf(c->owner, sizeof c->owner, "c:");
            for (int i = 0; i < 16; i++)
                snprintf(c->owner + 2 + 2 * i, 3, "%02x", b[i]);
        }
    }
    c->is_admin = role == GRP_ROLE_ADMIN;   /* proved with a key tagged admin */
    c->is_server = role == GRP_ROLE_SERVER; /* a server copying data here */
    if (c->is_admin) gsv_log(GSV_LOG_INFO, "%s: administrator (key %s)", c->peer, key_id);
    c->hello_done = 1;
    return gsv_reply_unlock(c, grp_write_hello_ok(w, h->request_id, ok, &e), &e) ? GSV_CLOSE : GSV_KEEP;
}
