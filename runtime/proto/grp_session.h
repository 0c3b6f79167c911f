/* grp_session.h: who owns what a client makes on a server (docs/server.md, "Owners").
 * A peer that proved a key is that key's id; any other client is the session secret
 * it sends in HELLO: 128 random bits that the processes of one user share through a
 * 0600 file (or GRIDRPC_SESSION), so that a job submitted by one process can be fetched
 * by another. The server keeps only a hash of the secret. Private to the library. */
#ifndef GRP_SESSION_H
#define GRP_SESSION_H

#include <stdint.h>

#include "gr_error.h"
#include "grp_limits.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An owner: "k:" and a key id, or "s:" and 32 hex digits of a secret's hash. */
#define GRP_OWNER_MAX 40

/* This process's session secret: GRIDRPC_SESSION (32 hex digits) if set, else the file
 * GRIDRPC_SESSION_FILE or ~/.gridrpc/session (made with a fresh secret, 0600 in a 0700
 * folder, when missing), else a secret of this process alone (no HOME; the log of
 * nothing: a job is then fetchable by this process only). Read once. */
int grp_session_secret(uint8_t out[GRP_SESSION_BYTES], gr_err *e);

/* OUT: the owner of a connection that proved KEY_ID (non-empty), else of SECRET (LEN
 * bytes; 0: none, and OUT is ""). */
void grp_owner_of(const char *key_id, const uint8_t *secret, uint32_t len, char out[GRP_OWNER_MAX + 1]);

#ifdef __cplusplus
}
#endif

#endif
