/* grp_auth.h: authentication without a secret on the wire (docs/protocol.md
 * "Authentication"): the key files, the AUTH_CHALLENGE, AUTH and AUTH_OK messages, the
 * HMAC-SHA-256 proofs, and the two sides of the handshake that follows HELLO. Every
 * peer that sends HELLO goes through grp_auth_hello and every peer that answers one
 * through grp_auth_serve, so there is one handshake in the tree. The cryptography is
 * OpenSSL's libcrypto (HMAC, SHA-256, RAND_bytes, CRYPTO_memcmp). Private to the
 * library (prefix grp_). */
#ifndef GRP_AUTH_H
#define GRP_AUTH_H

#include <stddef.h>
#include <stdint.h>

#include "grp_proto.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The roles a key may prove (docs/security.md): one is claimed per connection, in
 * AUTH and in both proofs. An admin key may claim any; an untagged key line too (the
 * meaning key files had before roles), which the daemons warn about at start. */
#define GRP_ROLE_CLIENT 1u
#define GRP_ROLE_SERVER 2u
#define GRP_ROLE_ADMIN 4u
#define GRP_ROLES_ALL 7u
/* What the answering side is, in AUTH_CHALLENGE and both proofs: a proof made for a
 * gridrpcd is worthless at a gridmetad and the other way round. */
#define GRP_PEER_GRIDRPCD 1u
#define GRP_PEER_GRIDMETAD 2u
/* AUTH_CHALLENGE's first word: the handshake's version (1 had none: its first word was
 * the nonce's length, GRP_AUTH_NONCE, which is how an old peer is recognised). */
#define GRP_AUTH_VERSION 2u

/* One key of a key file: its bytes and the id that names it on the wire. */
typedef struct grp_key {
    uint8_t bytes[GRP_AUTH_MAX_KEY];
    uint32_t len;                     /* GRP_AUTH_MIN_KEY..GRP_AUTH_MAX_KEY */
    char id[GRP_AUTH_KEY_ID_HEX + 1]; /* lowercase hex of SHA-256("gridrpc-key-id-v1" | key)[0..8) */
    uint32_t roles;                   /* GRP_ROLE_* it may claim */
    int tagged;                       /* 0: an untagged line (every role) */
} grp_key;

/* The keys of one key file, in the file's order: all are accepted when serving; the
 * first is the one used when connecting. n == 0: no key (no authentication). */
typedef struct grp_keyset {
    uint32_t n;
    grp_key keys[GRP_AUTH_MAX_KEYS];
    char path[512]; /* where they came from, for messages */
} grp_keyset;

/* AUTH_CHALLENGE: the answering side's nonce and what it is (GRP_PEER_*). */
typedef struct grp_auth_challenge {
    uint8_t nonce[GRP_AUTH_NONCE];
    uint32_t verifier; /* GRP_PEER_* */
} grp_auth_challenge;

/* AUTH: the client's proof. */
typedef struct grp_auth {
    char key_id[GRP_AUTH_KEY_ID_HEX + 1];
    uint32_t role; /* the one GRP_ROLE_* claimed */
    uint8_t client_nonce[GRP_AUTH_NONCE];
    uint8_t client_mac[GRP_AUTH_MAC];
} grp_auth;

/* ---- messages (the request id is the HELLO's on all of them) */
int grp_write_auth_challenge(grw_writer *w, uint64_t id, const grp_auth_challenge *m, gr_err *e);
/* A challenge of handshake version 1 (a server older than roles) is GRID_ERR_CONFIG
 * saying to upgrade it; another version or an unknown verifier GRID_ERR_PROTOCOL. */
int grp_read_auth_challenge(grw_reader *r, grp_auth_challenge *m, gr_err *e);
int grp_write_auth(grw_writer *w, uint64_t id, const grp_auth *m, gr_err *e);
/* Refuses a key id that is not GRP_AUTH_KEY_ID_HEX lowercase hex digits, a role that is
 * not one GRP_ROLE_*, and a nonce or MAC of another length than theirs
 * (GRID_ERR_PROTOCOL); an AUTH of handshake version 1 (no role: a client older than
 * roles) is GRID_ERR_CONFIG saying to upgrade it. */
int grp_read_auth(grw_reader *r, grp_auth *m, gr_err *e);
int grp_write_auth_ok(grw_writer *w, uint64_t id, const uint8_t mac[GRP_AUTH_MAC], gr_err *e);
int grp_read_auth_ok(grw_reader *r, uint8_t mac[GRP_AUTH_MAC], gr_err *e);

/* ---- the cryptography (libcrypto) */
/* Fills K->id from K->bytes. */
int grp_key_set_id(grp_key *k, gr_err *e);
/* The client's proof: HMAC-SHA-256(K, "gridrpc-auth-client-v2" | server_nonce |
 * client_nonce | role | verifier), role and verifier one byte each. */
int grp_auth_client_mac(const grp_key *k, const uint8_t server_nonce[GRP_AUTH_NONCE],
                        const uint8_t client_nonce[GRP_AUTH_NONCE], uint32_t role, uint32_t verifier,
                        uint8_t out[GRP_AUTH_MAC], gr_err *e);
/* The server's proof: HMAC-SHA-256(K, "gridrpc-auth-server-v2" | client_nonce |
 * server_nonce | role | verifier). */
int grp_auth_server_mac(const grp_key *k, const uint8_t client_nonce[GRP_AUTH_NONCE],
                        const uint8_t server_nonce[GRP_AUTH_NONCE], uint32_t role, uint32_t verifier,
                        uint8_t out[GRP_AUTH_MAC], gr_err *e);
/* "client", "server", "admin" for one GRP_ROLE_*; "?" otherwise. */
const char *grp_role_name(uint32_t role);
/* The first key of KS that may claim ROLE; NULL when none (or KS is NULL or empty). */
const grp_key *grp_keyset_pick(const grp_keyset *ks, uint32_t role);
/* How many keys of KS are untagged (may claim every role). */
uint32_t grp_keyset_untagged(const grp_keyset *ks);
/* N fresh random bytes (RAND_bytes). */
int grp_auth_random(uint8_t *out, size_t n, gr_err *e);

/* ---- key files (grp_keys.c) */
/* Parses a key file's TEXT (LEN bytes): '#' comments and blank lines are ignored, each
 * other line is an optional role ("client", "server" or "admin") and one key of
 * GRP_AUTH_MIN_KEY..GRP_AUTH_MAX_KEY bytes written as hex (an even count of digits), at most
 * GRP_AUTH_MAX_KEYS keys, at least one. SOURCE names the file in messages ("keys.txt line 3: ...").
 * GRID_ERR_CONFIG naming the line otherwise. */
int grp_keyset_parse(const char *text, size_t len, const char *source, grp_keyset *ks, gr_err *e);
/* Reads and parses the key file PATH. Refuses (GRID_ERR_CONFIG, with the mode and the
 * chmod to run) a file that others may read or write (mode & 0007) or the group may
 * write (mode & 0020). */
int grp_keyset_load(const char *path, grp_keyset *ks, gr_err *e);
/* Writes a new key file PATH: GRP_AUTH_KEYGEN_BYTES random bytes as hex, mode 0600,
 * after ROLE's name ("server 0a1b...") unless ROLE is 0 (an untagged key). Refuses to
 * replace an existing file (GRID_ERR_IO naming it). */
int grp_keygen(const char *path, uint32_t role, gr_err *e);
/* Wipes the key bytes (OPENSSL_cleanse) and empties KS. */
void grp_keyset_clear(grp_keyset *ks);

/* ---- the handshake */
/* The connecting side, from HELLO to HELLO_OK: writes HELLO (M) as request ID, answers
 * an AUTH_CHALLENGE with the first key of KS (NULL or empty: no key), checks the
 * server's AUTH_OK, and reads HELLO_OK into *OK. HOW says how this program is given a
 * key ("set GRIDRPC_KEY_FILE or call grid_set_key_file_np"), for the message when the
 * server asks for one. With a key, a server that answers HELLO_OK without a challenge
 * is refused ("the server did not prove it holds the key"), as is a wrong AUTH_OK, and
 * a challenge this side has no key for: GRID_ERR_AUTH (a key file that names no key of
 * the role is GRID_ERR_CONFIG: that is this side's own file). An ERROR from the peer returns its code with E
 * holding its message and *REFUSED set to 1 (REFUSED may be NULL); the deadlines of R and W bound everything.
 */
int grp_auth_hello(grw_reader *r, grw_writer *w, uint64_t id, const grp_hello *m, const grp_keyset *ks,
                   const char *how, grp_hello_ok *ok, int *refused, gr_err *e);
/* grp_auth_hello claiming ROLE (grp_auth_hello claims GRP_ROLE_CLIENT) with the first
 * key of KS that may, to a peer that must be VERIFIER (GRP_PEER_*; 0: either): a
 * challenge from another kind of peer is refused before any proof is made (a server
 * told to copy data to a metaserver's address does not prove its key there). */
int grp_auth_hello_as(grw_reader *r, grw_writer *w, uint64_t id, const grp_hello *m, const grp_keyset *ks,
                      uint32_t role, uint32_t verifier, const char *how, grp_hello_ok *ok, int *refused,
                      gr_err *e);
/* The answering side, after a HELLO (request ID) was read and accepted, when KS has
 * keys: writes AUTH_CHALLENGE with a fresh nonce and VERIFIER (what this side is,
 * GRP_PEER_*), reads AUTH, checks that the key it names may claim the role it claims
 * and the proof, and writes AUTH_OK. The caller then writes HELLO_OK. KEY_ID (may be
 * NULL) receives the client's key id, ROLE (may be NULL) the role it proved. A refused
 * key, role or proof returns GRID_ERR_AUTH, and an AUTH of handshake version 1
 * GRID_ERR_CONFIG, each with E's message meant for the client (send it as ERROR and
 * close); else the reader's error (GRID_ERR_CONN_LOST, GRID_ERR_TIMEOUT, GRID_ERR_PROTOCOL). */
int grp_auth_serve(grw_reader *r, grw_writer *w, uint64_t id, const grp_keyset *ks, uint32_t verifier,
                   char key_id[GRP_AUTH_KEY_ID_HEX + 1], uint32_t *role, gr_err *e);

#ifdef __cplusplus
}
#endif

#endif /* GRP_AUTH_H */
