/* fake_meta.h: a scriptable fake metaserver for gridrpcd's tests. It listens on
 * 127.0.0.1 (a given port, so it can be stopped and started again where the server
 * expects it), serves one connection at a time on a thread of its own through the real
 * protocol layer (grp_read_register, grp_write_register_ok, ...), and records what the
 * server sent: HELLO tokens, each REGISTER, each HEARTBEAT with its arrival time. The
 * test can make it answer the next HEARTBEAT with ERROR GRID_ERR_NOT_FOUND (a
 * metaserver that forgot the server), close the connection instead of answering, or
 * never answer it. */
#ifndef FAKE_META_H
#define FAKE_META_H

#include <stdint.h>

#include "grp_meta.h"

#define FAKE_META_MAX_BEATS 4096

typedef struct fake_meta fake_meta;

typedef struct fake_meta_beat {
    long long t_ns; /* gr_now_ns() at arrival */
    grp_heartbeat hb;
    int known; /* hb.server_id was the id of the current registration */
} fake_meta_beat;

/* Starts listening on 127.0.0.1:PORT (0: any free port); REGISTER_OK asks for a beat
 * every HEARTBEAT_MS. NULL on failure (message on stderr). */
fake_meta *fake_meta_start(int port, uint32_t heartbeat_ms);
int fake_meta_port(const fake_meta *fm);
/* Closes the listener and the connection, joins the thread, frees FM. */
void fake_meta_stop(fake_meta *fm);

/* Counters so far. */
int fake_meta_connections(fake_meta *fm);
int fake_meta_registrations(fake_meta *fm);
int fake_meta_beats(fake_meta *fm);
int fake_meta_unregistrations(fake_meta *fm);
/* The server id of the last UNREGISTER (0: none). */
uint64_t fake_meta_unregistered(fake_meta *fm);
/* Copies beat I (0-based); 0, or -1 when there is no such beat. */
int fake_meta_beat_at(fake_meta *fm, int i, fake_meta_beat *out);
/* Copies the last REGISTER (OUT->functions malloc'd: grp_register_free); 0 or -1. */
int fake_meta_last_register(fake_meta *fm, grp_register *out);
/* The id given to the last REGISTER. */
uint64_t fake_meta_server_id(fake_meta *fm);
/* The token of the last HELLO (storage inside FM, valid until the next call). */
const char *fake_meta_token(fake_meta *fm);

/* The next HEARTBEAT is answered ERROR GRID_ERR_NOT_FOUND and the registration is
 * forgotten; or the connection is closed without an answer. */
void fake_meta_not_found_next(fake_meta *fm);
void fake_meta_close_next(fake_meta *fm);
/* The next HEARTBEAT is read and never answered (a hung metaserver). */
void fake_meta_hang_next(fake_meta *fm);

#endif /* FAKE_META_H */
