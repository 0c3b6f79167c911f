/* grp_auth.c: the key handshake that follows HELLO (docs/protocol.md "Authentication"):
 * the AUTH_CHALLENGE, AUTH and AUTH_OK codecs, the HMAC-SHA-256 proofs and key ids
 * (libcrypto), and both sides of the exchange. The key itself never goes on the wire:
 * each side proves it holds the key by a MAC over both sides' fresh nonces, so a
 * recorded exchange is worthless on a new connection (the server's nonce differs), and
 * over the role claimed and what the answering side is, so a proof cannot be used for
 * another role or relayed to another kind of daemon (issue 25, finding 4). */
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "grp_auth.h"

static const char client_label[] = "gridrpc-auth-client-v2";
static const char server_label[] = "gridrpc-auth-server-v2";
static const char key_id_label[] = "gridrpc-key-id-v1";

/* ---------------------------------------------------------------- messages */

/* Reads an opaque<N> that must be exactly N bytes long into OUT. */
static int read_fixed(grw_reader *r, uint8_t *out, uint32_t n, const char *what, gr_err *e) {
    uint32_t len;
    int rc = grw_read_u32(r, &len, e);
    if (rc) return rc;
    if (len != n) return gr_seterr(e, GRID_ERR_PROTOCOL, "%s of %u bytes; it has %u", what, len, n);
    return grw_read(r, out, n, e); /* n is a multiple of 4: no padding */
}

int grp_write_auth_challenge(grw_writer *w, uint64_t id, const grp_auth_challenge *m, gr_err *e) {
    int rc = grw_begin(w, GRP_AUTH_CHALLENGE, 0, id, e);
    if (!rc) rc = grw_write_u32(w, GRP_AUTH_VERSION, e);
    if (!rc) rc = grw_write_opaque(w, m->nonce, GRP_AUTH_NONCE, e);
    if (!rc) rc = grw_write_u32(w, m->verifier, e);
    if (!rc) rc = grw_finish(w, e);
    return rc;
}

static const char upgrade_hint[] =
    "upgrade it to this version of GridRPC, whose handshake proves a role (docs/security.md)";

int grp_read_auth_challenge(grw_reader *r, grp_auth_challenge *m, gr_err *e) {
    uint32_t v;
    int rc = grw_read_u32(r, &v, e);
    if (rc) return rc;
    if (v == GRP_AUTH_NONCE)
        return gr_seterr(e, GRID_ERR_CONFIG,
                         "the server speaks the key handshake of GridRPC before roles (version 1): %s",
                         upgrade_hint);
    if (v != GRP_AUTH_VERSION)
        return gr_seterr(e, GRID_ERR_PROTOCOL, "AUTH_CHALLENGE of handshake version %u; this side speaks %u",
                         v, GRP_AUTH_VERSION);
    rc = read_fixed(r, m->nonce, GRP_AUTH_NONCE, "AUTH_CHALLENGE: a server nonce", e);
    if (!rc) rc = grw_read_u32(r, &m->verifier, e);
    if (!rc && m->verifier != GRP_PEER_GRIDRPCD && m->verifier != GRP_PEER_GRIDMETAD)
        rc = gr_seterr(e, GRID_ERR_PROTOCOL,
                       "AUTH_CHALLENGE: verifier %u is neither gridrpcd (%u) nor gridmetad (%u)", m->verifier,
                       GRP_PEER_GRIDRPCD, GRP_PEER_GRIDMETAD);
    if (!rc) rc = grw_end(r, e);
    return rc;
}

int grp_write_auth(grw_writer *w, uint64_t id, const grp_auth *m, gr_err *e) {
    int rc = grw_begin(w, GRP_AUTH, 0, id, e);
    if (!rc) rc = grw_write_string(w, m->key_id, e);
    if (!rc) rc = grw_write_u32(w, m->role, e);
    if (!rc) rc = grw_write_opaque(w, m->client_nonce, GRP_AUTH_NONCE, e);
    if (!rc) rc = grw_write_opaque(w, m->client_mac, GRP_AUTH_MAC, e);
    if (!rc) rc = grw_finish(w, e);
    return rc;
}

static int key_id_ok(const char *s) {
    if (strlen(s) != GRP_AUTH_KEY_ID_HEX) return 0;
    for (const char *p = s; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'))) return 0;
    return 1;
}

int grp_read_auth(grw_reader *r, grp_auth *m, gr_err *e) {
    int rc = grw_read_string_buf(r, m->key_id, GRP_AUTH_KEY_ID_HEX, e);
    if (!rc && !key_id_ok(m->key_id))
        rc = gr_seterr(e, GRID_ERR_PROTOCOL, "AUTH: the key id '%s' is not %d lowercase hex digits",
                       m->key_id, GRP_AUTH_KEY_ID_HEX);
    if (!rc) rc = grw_read_u32(r, &m->role, e);
    if (!rc && m->role == GRP_AUTH_NONCE)
        return gr_seterr(e, GRID_ERR_CONFIG,
                         "the client speaks the key handshake of GridRPC before roles (version 1): %s",
                         upgrade_hint);
    if (!rc && m->role != GRP_ROLE_CLIENT && m->role != GRP_ROLE_SERVER && m->role != GRP_ROLE_ADMIN)
        rc = gr_seterr(e, GRID_ERR_PROTOCOL, "AUTH: role %u is not client (1), server (2) or admin (4)",
                       m->role);
    if (!rc) rc = read_fixed(r, m->client_nonce, GRP_AUTH_NONCE, "AUTH: a client nonce", e);
    if (!rc) rc = read_fixed(r, m->client_mac, GRP_AUTH_MAC, "AUTH: a client MAC", e);
    if (!rc) rc = grw_end(r, e);
    return rc;
}

int grp_write_auth_ok(grw_writer *w, uint64_t id, const uint8_t mac[GRP_AUTH_MAC], gr_err *e) {
    int rc = grw_begin(w, GRP_AUTH_OK, 0, id, e);
    if (!rc) rc = grw_write_opaque(w, mac, GRP_AUTH_MAC, e);
    if (!rc) rc = grw_finish(w, e);
    return rc;
}

int grp_read_auth_ok(grw_reader *r, uint8_t mac[GRP_AUTH_MAC], gr_err *e) {
    int rc = read_fixed(r, mac, GRP_AUTH_MAC, "AUTH_OK: a server MAC", e);
    if (!rc) rc = grw_end(r, e);
    return rc;
}

/* ---------------------------------------------------------------- cryptography */

int grp_key_set_id(grp_key *k, gr_err *e) {
    uint8_t md[EVP_MAX_MD_SIZE];
    unsigned mdlen = 0;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    int ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) &&
             EVP_DigestUpdate(ctx, key_id_label, strlen(key_id_label)) &&
             EVP_DigestUpdate(ctx, k->bytes, k->len) && EVP_DigestFinal_ex(ctx, md, &mdlen) && mdlen >= 8;
    EVP_MD_CTX_free(ctx);
    if (!ok) return gr_seterr(e, GRID_ERR_INTERNAL, "SHA-256 failed (libcrypto)");
    for (int i = 0; i < GRP_AUTH_KEY_ID_HEX / 2; i++)
        snprintf(k->id + 2 * i, 3, "%02x", md[i]);
    OPENSSL_cleanse(md, sizeof md);
    return GRID_OK;
}

const char *grp_role_name(uint32_t role) {
    return role == GRP_ROLE_CLIENT   ? "client"
           : role == GRP_ROLE_SERVER ? "server"
           : role == GRP_ROLE_ADMIN  ? "admin"
                                     : "?";
}

/* HMAC-SHA-256(K, LABEL | A | B | ROLE | VERIFIER). */
static int mac3(const grp_key *k, const char *label, const uint8_t *a, const uint8_t *b, uint32_t role,
                uint32_t verifier, uint8_t out[GRP_AUTH_MAC], gr_err *e) {
    uint8_t msg[32 + 2 * GRP_AUTH_NONCE + 2];
    size_t ll = strlen(label);
    memcpy(msg, label, ll);
    memcpy(msg + ll, a, GRP_AUTH_NONCE);
    memcpy(msg + ll + GRP_AUTH_NONCE, b, GRP_AUTH_NONCE);
    msg[ll + 2 * GRP_AUTH_NONCE] = (uint8_t)role;
    msg[ll + 2 * GRP_AUTH_NONCE + 1] = (uint8_t)verifier;
    unsigned len = 0;
    uint8_t md[EVP_MAX_MD_SIZE];
    if (!HMAC(EVP_sha256(), k->bytes, (int)k->len, msg, ll + 2 * GRP_AUTH_NONCE + 2, md, &len) ||
        len != GRP_AUTH_MAC)
        return gr_seterr(e, GRID_ERR_INTERNAL, "HMAC-SHA-256 failed (libcrypto)");
    memcpy(out, md, GRP_AUTH_MAC);
    return GRID_OK;
}

int grp_auth_client_mac(const grp_key *k, const uint8_t server_nonce[GRP_AUTH_NONCE],
                        const uint8_t client_nonce[GRP_AUTH_NONCE], uint32_t role, uint32_t verifier,
                        uint8_t out[GRP_AUTH_MAC], gr_err *e) {
    return mac3(k, client_label, server_nonce, client_nonce, role, verifier, out, e);
}

int grp_auth_server_mac(const grp_key *k, const uint8_t client_nonce[GRP_AUTH_NONCE],
                        const uint8_t server_nonce[GRP_AUTH_NONCE], uint32_t role, uint32_t verifier,
                        uint8_t out[GRP_AUTH_MAC], gr_err *e) {
    return mac3(k, server_label, client_nonce, server_nonce, role, verifier, out, e);
}

const grp_key *grp_keyset_pick(const grp_keyset *ks, uint32_t role) {
    for (uint32_t i = 0; ks && i < ks->n; i++)
        if (ks->keys[i].roles & role) return &ks->keys[i];
    return NULL;
}

uint32_t grp_keyset_untagged(const grp_keyset *ks) {
    uint32_t n = 0;
    for (uint32_t i = 0; ks && i < ks->n; i++)
        n += !ks->keys[i].tagged;
    return n;
}

int grp_auth_random(uint8_t *out, size_t n, gr_err *e) {
    if (RAND_bytes(out, (int)n) != 1)
        return gr_seterr(e, GRID_ERR_INTERNAL, "no random bytes from libcrypto (RAND_bytes failed)");
    return GRID_OK;
}

/* ---------------------------------------------------------------- the connecting side */

/* Reads the next header; a closed connection gets a message. */
static int next_header(grw_reader *r, grw_header *h, const char *after, gr_err *e) {
    int rc = grp_read_header(r, h, e);
    if (rc == GRID_ERR_CONN_LOST && !e->msg[0])
        gr_seterr(e, rc, "the peer closed the connection after %s", after);
    return rc;
}

/* Proves K to the server (the AUTH_CHALLENGE's body is next on R) and checks its
 * proof. *H receives the header that follows: after a proven AUTH_OK the one after
 * it (*PROVEN 1), else the one that came instead of AUTH_OK (ERROR, say). */
static const char *peer_name(uint32_t verifier) {
    return verifier == GRP_PEER_GRIDMETAD ? "a metaserver (gridmetad)" : "a server (gridrpcd)";
}

static int answer_challenge(grw_reader *r, grw_writer *w, uint64_t id, const grp_key *k, uint32_t role,
                            uint32_t verifier, grw_header *h, int *proven, gr_err *e) {
    uint8_t want[GRP_AUTH_MAC], got[GRP_AUTH_MAC];
    grp_auth_challenge ch;
    grp_auth a;
    memset(&a, 0, sizeof a);
    int rc = grp_read_auth_challenge(r, &ch, e);
    if (!rc && verifier && ch.verifier != verifier)
        rc = gr_seterr(e, GRID_ERR_CONFIG,
                       "the peer is %s where %s was expected: no proof of the key was sent; check the "
                       "address",
                       peer_name(ch.verifier), peer_name(verifier));
    if (!rc) rc = grp_auth_random(a.client_nonce, sizeof a.client_nonce, e);
    if (!rc) rc = grp_auth_client_mac(k, ch.nonce, a.client_nonce, role, ch.verifier, a.client_mac, e);
    if (rc) return rc;
    const uint8_t *snonce = ch.nonce;
    a.role = role;
    memcpy(a.key_id, k->id, sizeof a.key_id);
    rc = grp_write_auth(w, id, &a, e);
    if (!rc) rc = next_header(r, h, "AUTH", e);
    if (rc || h->type != GRP_AUTH_OK) return rc;
    rc = grp_read_auth_ok(r, got, e);
    if (!rc) rc = grp_auth_server_mac(k, a.client_nonce, snonce, role, ch.verifier, want, e);
    if (rc) return rc;
    if (CRYPTO_memcmp(got, want, GRP_AUTH_MAC) != 0)
        return gr_seterr(e, GRID_ERR_AUTH,
                         "the server did not prove it holds the key: its AUTH_OK is wrong for key %s (a peer "
                         "that is not the server, or one with another key file); connection closed",
                         k->id);
    *proven = 1;
    return next_header(r, h, "AUTH_OK", e);
}

int grp_auth_hello(grw_reader *r, grw_writer *w, uint64_t id, const grp_hello *m, const grp_keyset *ks,
                   const char *how, grp_hello_ok *ok, int *refused, gr_err *e) {
    /* A program given an admin key acts as an administrator (every owner's jobs and
     * objects); any other key claims the client role. */
    const grp_key *k = ks && ks->n ? grp_keyset_pick(ks, GRP_ROLE_CLIENT) : NULL;
    uint32_t role = k && k->tagged && (k->roles & GRP_ROLE_ADMIN) ? GRP_ROLE_ADMIN : GRP_ROLE_CLIENT;
    return grp_auth_hello_as(r, w, id, m, ks, role, 0, how, ok, refused, e);
}

int grp_auth_hello_as(grw_reader *r, grw_writer *w, uint64_t id, const grp_hello *m, const grp_keyset *ks,
                      uint32_t role, uint32_t verifier, const char *how, grp_hello_ok *ok, int *refused,
                      gr_err *e) {
    if (refused) *refused = 0;
    const grp_key *k = grp_keyset_pick(ks, role);
    if (ks && ks->n && !k)
        return gr_seterr(e, GRID_ERR_CONFIG,
                         "no key of %s may act as a %s: add a line '%s HEX' (gridrpc keygen --role %s FILE) "
                         "or use an admin key",
                         ks->path, grp_role_name(role), grp_role_name(role), grp_role_name(role));
    int proven = 0, in_step;
    grw_header h;
    memset(&h, 0, sizeof h);
    int rc = grp_write_hello(w, id, m, e);
    if (!rc) rc = next_header(r, &h, "HELLO", e);
    if (!rc && h.type == GRP_AUTH_CHALLENGE) {
        if (!k)
            return gr_seterr(
                e, GRID_ERR_AUTH,
                "the server requires a key (it answered HELLO with AUTH_CHALLENGE) and this side "
                "has none: %s, with a copy of the key file it runs with (--key-file)",
                how && *how ? how : "give this program a key file");
        rc = answer_challenge(r, w, id, k, role, verifier, &h, &proven, e);
        if (!rc && !proven && h.type != GRP_ERROR)
            return gr_seterr(e, GRID_ERR_PROTOCOL, "the server answered AUTH with %s (type %u), not AUTH_OK",
                             grp_type_name(h.type), h.type);
    }
    if (!rc) rc = grp_expect(r, &h, GRP_HELLO_OK, proven ? "AUTH" : "HELLO", &in_step, e);
    if (rc) {
        if (h.type == GRP_ERROR && rc != GRID_ERR_PROTOCOL && refused) *refused = 1;
        return rc;
    }
    rc = grp_read_hello_ok(r, ok, e);
    if (!rc && k && !proven)
        rc = gr_seterr(
            e, GRID_ERR_AUTH,
            "the server did not prove it holds the key: it answered HELLO_OK without AUTH_CHALLENGE "
            "(it runs without --key-file, or it is not the server meant); connection refused: start "
            "the server with the key file, or connect without a key");
    return rc;
}

/* ---------------------------------------------------------------- the answering side */

int grp_auth_serve(grw_reader *r, grw_writer *w, uint64_t id, const grp_keyset *ks, uint32_t verifier,
                   char key_id[GRP_AUTH_KEY_ID_HEX + 1], uint32_t *role, gr_err *e) {
    uint8_t want[GRP_AUTH_MAC], smac[GRP_AUTH_MAC];
    grp_auth_challenge ch;
    ch.verifier = verifier;
    const uint8_t *snonce = ch.nonce;
    if (key_id) key_id[0] = '\0';
    if (role) *role = 0;
    int rc = grp_auth_random(ch.nonce, sizeof ch.nonce, e);
    if (!rc) rc = grp_write_auth_challenge(w, id, &ch, e);
    if (rc) return rc;
    grw_header h;
    rc = grp_read_header(r, &h, e);
    if (rc == GRID_ERR_CONN_LOST && !e->msg[0])
        return gr_seterr(e, rc,
                         "the client closed the connection instead of answering AUTH_CHALLENGE "
                         "(it has no key file?)");
    if (rc) return rc;
    if (h.type != GRP_AUTH)
        return gr_seterr(e, GRID_ERR_AUTH,
                         "authentication required: this server has keys (--key-file) and the client answered "
                         "AUTH_CHALLENGE with %s instead of AUTH: give the client the server's key file "
                         "(GRIDRPC_KEY_FILE, grid_set_key_file_np, gridrpc --key-file)",
                         grp_type_name(h.type));
    grp_auth a;
    rc = grp_read_auth(r, &a, e);
    if (rc) return rc;
    if (key_id) memcpy(key_id, a.key_id, GRP_AUTH_KEY_ID_HEX + 1);
    const grp_key *k = NULL;
    for (uint32_t i = 0; i < ks->n && !k; i++)
        if (strcmp(ks->keys[i].id, a.key_id) == 0) k = &ks->keys[i];
    if (!k)
        return gr_seterr(e, GRID_ERR_AUTH,
                         "authentication failed: the client's key (id %s) is not in this server's key file: "
                         "give the client a key of the server's --key-file (GRIDRPC_KEY_FILE)",
                         a.key_id);
    if (!(k->roles & a.role))
        return gr_seterr(e, GRID_ERR_AUTH,
                         "authentication failed: key %s is tagged '%s' here and may not act as a %s: use a "
                         "key tagged '%s' (docs/security.md)",
                         a.key_id, grp_role_name(k->roles), grp_role_name(a.role), grp_role_name(a.role));
    rc = grp_auth_client_mac(k, snonce, a.client_nonce, a.role, verifier, want, e);
    if (rc) return rc;
    if (CRYPTO_memcmp(want, a.client_mac, GRP_AUTH_MAC) != 0)
        return gr_seterr(
            e, GRID_ERR_AUTH,
            "authentication failed: the proof for key %s is wrong (a replayed or forged AUTH, or "
            "one made for another peer and relayed): connect again with the key of the "
            "server's --key-file",
            a.key_id);
    if (role) *role = a.role;
    rc = grp_auth_server_mac(k, a.client_nonce, snonce, a.role, verifier, smac, e);
    if (!rc) rc = grp_write_auth_ok(w, id, smac, e);
    return rc;
}
