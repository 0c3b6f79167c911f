/* gms_db.c: the registry in SQLite: servers, their functions, client sites, link
 * measurements and a bounded call history (docs/metaserver.md lists the schema). The
 * file is in WAL mode and written by one thread that takes queued copies of changes and
 * applies them in one transaction per batch, so the decision path never waits for the
 * disk; a committed transaction survives a SIGKILL. At startup everything is read back
 * into the state. The schema is versioned: each migration step takes the file from one
 * version to the next. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>

#include "gms.h"

#define GMS_SCHEMA_VERSION 1
#define GMS_QUEUE_MAX 100000 /* queued writes; beyond this they are dropped (logged) */
#define GMS_CALLS_KEPT 10000 /* rows of call history */
/* A write waits this long for others to share its transaction (and its coalescing):
 * one commit per call would cost more CPU than the decision itself. */
#define GMS_BATCH_NS 20000000LL
#define GMS_BATCH_MAX 256 /* ops that commit at once without waiting */

typedef struct db_fn {
    char *name;
    uint64_t hash;
    uint32_t flags;
    double speed, run_s;
    uint32_t samples;
} db_fn;

enum { OP_SERVER, OP_STATE, OP_FN, OP_LINK, OP_CALL, OP_FORGET };

typedef struct db_op {
    struct db_op *next;
    int kind;
    union {
        struct {
            uint64_t id;
            char name[GRP_MAX_PEER_NAME + 1], host[GRP_MAX_HOST + 1];
            uint32_t port, cores, workers;
            double reg_speed, speed, mean_call_s;
            int up;
            int64_t beat_ms;
            uint64_t calls, failures;
            uint32_t nfns;
            db_fn *fns;
        } srv;
        struct {
            uint64_t server;
            db_fn fn;
        } fn;
        struct {
            char site[GRP_MAX_SITE + 1];
            uint64_t server;
            gms_link l;
        } link;
        struct {
            grp_report r;
            char site[GRP_MAX_SITE + 1];
            int64_t unix_ms;
        } call;
    } u;
} db_op;

struct gms_db {
    sqlite3 *db;
    char path[4096];
    pthread_t thread;
    int started;
    pthread_mutex_t lock;
    pthread_cond_t wake, done;
    db_op *head, *tail;
    uint64_t queued, committed, dropped, calls_since_trim;
    uint64_t coalesced; /* writes skipped: a later one in the batch wrote the same row */
    unsigned nqueued;
    int stop;
    unsigned flushing; /* threads in gms_db_flush: commit at once */
    long long last_drop_log;
    sqlite3_stmt *st_server, *st_state, *st_fn_del, *st_fn, *st_site, *st_link, *st_call, *st_trim;
    sqlite3_stmt *st_srv_del, *st_link_del;
};

/* ---------------------------------------------------------------- schema */

static int exec(sqlite3 *db, const char *sql, gr_err *e) {
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) == SQLITE_OK) return GRID_OK;
    gr_seterr(e, GRID_ERR_IO, "SQLite: %s", msg ? msg : sqlite3_errmsg(db));
    sqlite3_free(msg);
    return GRID_ERR_IO;
}

/* Takes the registry from version FROM to FROM + 1. */
static int migrate_step(sqlite3 *db, int from, gr_err *e) {
    switch (from) {
    case 0:
        return exec(
            db,
            "CREATE TABLE schema_version(version INTEGER NOT NULL);"
            "INSERT INTO schema_version VALUES(0);"
            "CREATE TABLE servers(id INTEGER PRIMARY KEY, name TEXT NOT NULL, host TEXT NOT NULL,"
            " port INTEGER NOT NULL, cores INTEGER NOT NULL, workers INTEGER NOT NULL,"
            " reg_speed REAL NOT NULL, speed REAL NOT NULL, mean_call_s REAL NOT NULL,"
            " state TEXT NOT NULL CHECK(state IN ('up','down')), last_beat_unix_ms INTEGER NOT NULL,"
            " calls INTEGER NOT NULL, failures INTEGER NOT NULL, UNIQUE(host, port));"
            "CREATE TABLE functions(server_id INTEGER NOT NULL, name TEXT NOT NULL,"
            " hash INTEGER NOT NULL, flags INTEGER NOT NULL, speed REAL NOT NULL,"
            " run_s REAL NOT NULL, samples INTEGER NOT NULL, PRIMARY KEY(server_id, name));"
            "CREATE TABLE sites(name TEXT PRIMARY KEY, first_seen_unix_ms INTEGER NOT NULL);"
            "CREATE TABLE links(site TEXT NOT NULL, server_id INTEGER NOT NULL,"
            " bandwidth REAL NOT NULL, latency REAL NOT NULL, bw_samples INTEGER NOT NULL,"
            " lat_samples INTEGER NOT NULL, bw_unix_ms INTEGER NOT NULL, lat_unix_ms INTEGER NOT NULL,"
            " PRIMARY KEY(site, server_id));"
            "CREATE TABLE calls(id INTEGER PRIMARY KEY AUTOINCREMENT, unix_ms INTEGER NOT NULL,"
            " decision INTEGER NOT NULL, server_id INTEGER NOT NULL, site TEXT NOT NULL,"
            " function TEXT NOT NULL, code INTEGER NOT NULL, bytes_in INTEGER NOT NULL,"
            " bytes_out INTEGER NOT NULL, total_ns INTEGER NOT NULL, queue_ns INTEGER NOT NULL,"
            " run_ns INTEGER NOT NULL, flops REAL NOT NULL);",
            e);
    }
    return gr_seterr(e, GRID_ERR_INTERNAL, "no migration from schema version %d", from);
}

static int schema_version(sqlite3 *db, int *v, gr_err *e) {
    sqlite3_stmt *st;
    *v = 0;
    if (sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master WHERE name='schema_version'", -1, &st,
                           NULL) != SQLITE_OK)
        return gr_seterr(e, GRID_ERR_IO, "SQLite: %s", sqlite3_errmsg(db));
    int exists = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) > 0;
    sqlite3_finalize(st);
    if (!exists) return GRID_OK;
    if (sqlite3_prepare_v2(db, "SELECT version FROM schema_version", -1, &st, NULL) != SQLITE_OK)
        return gr_seterr(e, GRID_ERR_IO, "SQLite: %s", sqlite3_errmsg(db));
    if (sqlite3_step(st) == SQLITE_ROW) *v = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return GRID_OK;
}

static int migrate(gms_db *d, gr_err *e) {
    int v;
    if (schema_version(d->db, &v, e)) return e->code;
    if (v > GMS_SCHEMA_VERSION)
        return gr_seterr(e, GRID_ERR_CONFIG,
                         "%s has registry schema version %d, newer than this gridmetad's %d: use a newer "
                         "gridmetad or another --db",
                         d->path, v, GMS_SCHEMA_VERSION);
    for (; v < GMS_SCHEMA_VERSION; v++) {
        char sql[80];
        snprintf(sql, sizeof sql, "UPDATE schema_version SET version=%d", v + 1);
        if (exec(d->db, "BEGIN IMMEDIATE", e)) return e->code;
        if (migrate_step(d->db, v, e) || exec(d->db, sql, e)) {
            exec(d->db, "ROLLBACK", NULL);
            return e->code;
        }
        if (exec(d->db, "COMMIT", e)) return e->code;
        gms_log(GMS_LOG_INFO, "registry %s: schema version %d", d->path, v + 1);
    }
    return GRID_OK;
}

gms_db *gms_db_open(const char *path, gr_err *e) {
    gms_db *d = calloc(1, sizeof *d);
    if (!d) {
        gr_seterr(e, GRID_ERR_NOMEM, "out of memory");
        return NULL;
    }
    snprintf(d->path, sizeof d->path, "%s", path);
    pthread_mutex_init(&d->lock, NULL);
    pthread_cond_init(&d->wake, NULL);
    pthread_cond_init(&d->done, NULL);
    if (sqlite3_open_v2(path, &d->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                        NULL) != SQLITE_OK) {
        gr_seterr(e, GRID_ERR_IO, "--db %s: cannot open the registry: %s", path,
                  d->db ? sqlite3_errmsg(d->db) : "out of memory");
        gms_db_close(d);
        return NULL;
    }
    sqlite3_busy_timeout(d->db, 5000);
    /* WAL: readers (sqlite3 on the file, a backup) never block the writer; NORMAL: a
     * committed transaction survives the process being killed. */
    if (exec(d->db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;", e) || migrate(d, e)) {
        gr_prefixerr(e, "--db %s: ", path);
        gms_db_close(d);
        return NULL;
    }
    return d;
}

/* ---------------------------------------------------------------- loading */

static const char *col_text(sqlite3_stmt *st, int i) {
    const unsigned char *t = sqlite3_column_text(st, i);
    return t ? (const char *)t : "";
}

int gms_db_load(gms_db *d, gms_state *st, long long now_ns, gr_err *e) {
    sqlite3_stmt *q;
    unsigned nservers = 0, nfns = 0, nlinks = 0;
    if (sqlite3_prepare_v2(
            d->db,
            "SELECT id, name, host, port, cores, workers, reg_speed, speed, mean_call_s, state,"
            " last_beat_unix_ms, calls, failures FROM servers ORDER BY id",
            -1, &q, NULL) != SQLITE_OK)
        goto fail;
    while (sqlite3_step(q) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(q, 0), port = sqlite3_column_int64(q, 3);
        if (id <= 0 || id >= GMS_MAX_SERVER_ID || port <= 0 || port > 65535) {
            gms_log(GMS_LOG_WARN, "registry: server row %" PRId64 " is not valid: skipped", id);
            continue;
        }
        if (!gms_state_restore_server(
                st, (uint64_t)id, col_text(q, 1), col_text(q, 2), (uint32_t)port,
                (uint32_t)sqlite3_column_int64(q, 4), (uint32_t)sqlite3_column_int64(q, 5),
                sqlite3_column_double(q, 6), sqlite3_column_double(q, 7), sqlite3_column_double(q, 8),
                strcmp(col_text(q, 9), "up") == 0, sqlite3_column_int64(q, 10),
                (uint64_t)sqlite3_column_int64(q, 11), (uint64_t)sqlite3_column_int64(q, 12), now_ns)) {
            sqlite3_finalize(q);
            return gr_seterr(e, GRID_ERR_NOMEM, "out of memory loading the registry");
        }
        nservers++;
    }
    sqlite3_finalize(q);
    if (sqlite3_prepare_v2(d->db,
                           "SELECT server_id, name, hash, flags, speed, run_s, samples FROM functions"
                           " ORDER BY server_id, rowid",
                           -1, &q, NULL) != SQLITE_OK)
        goto fail;
    while (sqlite3_step(q) == SQLITE_ROW) {
        gms_server *s = gms_state_find_id(st, (uint64_t)sqlite3_column_int64(q, 0));
        const char *name = col_text(q, 1);
        if (!s || !*name || strlen(name) > GRP_MAX_FUNCTION_NAME) continue;
        if (gms_state_restore_fn(s, name, (uint64_t)sqlite3_column_int64(q, 2),
                                 (uint32_t)sqlite3_column_int64(q, 3), sqlite3_column_double(q, 4),
                                 sqlite3_column_double(q, 5), (uint32_t)sqlite3_column_int64(q, 6))) {
            sqlite3_finalize(q);
            return gr_seterr(e, GRID_ERR_NOMEM, "out of memory loading the registry");
        }
        nfns++;
    }
    sqlite3_finalize(q);
    if (sqlite3_prepare_v2(d->db,
                           "SELECT site, server_id, bandwidth, latency, bw_samples, lat_samples, bw_unix_ms,"
                           " lat_unix_ms FROM links",
                           -1, &q, NULL) != SQLITE_OK)
        goto fail;
    while (sqlite3_step(q) == SQLITE_ROW) {
        if (strlen(col_text(q, 0)) > GRP_MAX_SITE) continue;
        if (gms_state_restore_link(st, col_text(q, 0), (uint64_t)sqlite3_column_int64(q, 1),
                                   sqlite3_column_double(q, 2), sqlite3_column_double(q, 3),
                                   (uint32_t)sqlite3_column_int64(q, 4), (uint32_t)sqlite3_column_int64(q, 5),
                                   sqlite3_column_int64(q, 6), sqlite3_column_int64(q, 7))) {
            sqlite3_finalize(q);
            return gr_seterr(e, GRID_ERR_NOMEM, "out of memory loading the registry");
        }
        nlinks++;
    }
    sqlite3_finalize(q);
    if (gms_state_reindex(st)) return gr_seterr(e, GRID_ERR_NOMEM, "out of memory indexing the registry");
    st->db = d;
    gms_log(GMS_LOG_INFO, "registry %s: %u servers, %u functions, %u links", d->path, nservers, nfns, nlinks);
    return GRID_OK;
fail:
    return gr_seterr(e, GRID_ERR_IO, "--db %s: cannot read the registry: %s", d->path, sqlite3_errmsg(d->db));
}

/* ---------------------------------------------------------------- the writer */

static int prepare(gms_db *d) {
    struct {
        sqlite3_stmt **st;
        const char *sql;
    } v[] = {
        {&d->st_server,
         "INSERT INTO servers(id, name, host, port, cores, workers, reg_speed, speed, mean_call_s,"
         " state, last_beat_unix_ms, calls, failures) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)"
         " ON CONFLICT(id) DO UPDATE SET name=excluded.name, host=excluded.host,"
         " port=excluded.port, cores=excluded.cores, workers=excluded.workers,"
         " reg_speed=excluded.reg_speed, speed=excluded.speed, mean_call_s=excluded.mean_call_s,"
         " state=excluded.state, last_beat_unix_ms=excluded.last_beat_unix_ms,"
         " calls=excluded.calls, failures=excluded.failures"},
        {&d->st_state, "UPDATE servers SET cores=?, workers=?, speed=?, mean_call_s=?, state=?,"
                       " last_beat_unix_ms=?, calls=?, failures=? WHERE id=?"},
        {&d->st_fn_del, "DELETE FROM functions WHERE server_id=?"},
        {&d->st_fn, "INSERT OR REPLACE INTO functions(server_id, name, hash, flags, speed, run_s, samples)"
                    " VALUES(?,?,?,?,?,?,?)"},
        {&d->st_site, "INSERT OR IGNORE INTO sites(name, first_seen_unix_ms) VALUES(?,?)"},
        {&d->st_link, "INSERT OR REPLACE INTO links(site, server_id, bandwidth, latency, bw_samples,"
                      " lat_samples, bw_unix_ms, lat_unix_ms) VALUES(?,?,?,?,?,?,?,?)"},
        {&d->st_call, "INSERT INTO calls(unix_ms, decision, server_id, site, function, code, bytes_in,"
                      " bytes_out, total_ns, queue_ns, run_ns, flops) VALUES(?,?,?,?,?,?,?,?,?,?,?,?)"},
        {&d->st_trim, "DELETE FROM calls WHERE id <= (SELECT max(id) FROM calls) - ?"},
        {&d->st_srv_del, "DELETE FROM servers WHERE id=?"},
        {&d->st_link_del, "DELETE FROM links WHERE server_id=?"},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        if (sqlite3_prepare_v3(d->db, v[i].sql, -1, SQLITE_PREPARE_PERSISTENT, v[i].st, NULL) != SQLITE_OK) {
            gms_log(GMS_LOG_ERROR, "registry: cannot prepare a statement: %s", sqlite3_errmsg(d->db));
            return -1;
        }
    return 0;
}

static void step(gms_db *d, sqlite3_stmt *st) {
    int rc = sqlite3_step(st);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW)
        gms_log(GMS_LOG_ERROR, "registry %s: write failed: %s", d->path, sqlite3_errmsg(d->db));
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
}

static void put_fn(gms_db *d, uint64_t server, const db_fn *f) {
    sqlite3_stmt *q = d->st_fn;
    sqlite3_bind_int64(q, 1, (int64_t)server);
    sqlite3_bind_text(q, 2, f->name, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 3, (int64_t)f->hash);
    sqlite3_bind_int64(q, 4, f->flags);
    sqlite3_bind_double(q, 5, f->speed);
    sqlite3_bind_double(q, 6, f->run_s);
    sqlite3_bind_int64(q, 7, f->samples);
    step(d, q);
}

static void apply(gms_db *d, const db_op *op) {
    sqlite3_stmt *q;
    switch (op->kind) {
    case OP_SERVER:
        q = d->st_server;
        sqlite3_bind_int64(q, 1, (int64_t)op->u.srv.id);
        sqlite3_bind_text(q, 2, op->u.srv.name, -1, SQLITE_STATIC);
        sqlite3_bind_text(q, 3, op->u.srv.host, -1, SQLITE_STATIC);
        sqlite3_bind_int64(q, 4, op->u.srv.port);
        sqlite3_bind_int64(q, 5, op->u.srv.cores);
        sqlite3_bind_int64(q, 6, op->u.srv.workers);
        sqlite3_bind_double(q, 7, op->u.srv.reg_speed);
        sqlite3_bind_double(q, 8, op->u.srv.speed);
        sqlite3_bind_double(q, 9, op->u.srv.mean_call_s);
        sqlite3_bind_text(q, 10, op->u.srv.up ? "up" : "down", -1, SQLITE_STATIC);
        sqlite3_bind_int64(q, 11, op->u.srv.beat_ms);
        sqlite3_bind_int64(q, 12, (int64_t)op->u.srv.calls);
        sqlite3_bind_int64(q, 13, (int64_t)op->u.srv.failures);
        step(d, q);
        sqlite3_bind_int64(d->st_fn_del, 1, (int64_t)op->u.srv.id);
        step(d, d->st_fn_del);
        for (uint32_t i = 0; i < op->u.srv.nfns; i++)
            put_fn(d, op->u.srv.id, &op->u.srv.fns[i]);
        break;
    case OP_STATE:
        q = d->st_state;
        sqlite3_bind_int64(q, 1, op->u.srv.cores);
        sqlite3_bind_int64(q, 2, op->u.srv.workers);
        sqlite3_bind_double(q, 3, op->u.srv.speed);
        sqlite3_bind_double(q, 4, op->u.srv.mean_call_s);
        sqlite3_bind_text(q, 5, op->u.srv.up ? "up" : "down", -1, SQLITE_STATIC);
        sqlite3_bind_int64(q, 6, op->u.srv.beat_ms);
        sqlite3_bind_int64(q, 7, (int64_t)op->u.srv.calls);
        sqlite3_bind_int64(q, 8, (int64_t)op->u.srv.failures);
        sqlite3_bind_int64(q, 9, (int64_t)op->u.srv.id);
        step(d, q);
        break;
    case OP_FN: put_fn(d, op->u.fn.server, &op->u.fn.fn); break;
    case OP_FORGET:
        /* The server's rows; its calls stay in the bounded history. */
        sqlite3_bind_int64(d->st_fn_del, 1, (int64_t)op->u.srv.id);
        step(d, d->st_fn_del);
        sqlite3_bind_int64(d->st_link_del, 1, (int64_t)op->u.srv.id);
        step(d, d->st_link_del);
        sqlite3_bind_int64(d->st_srv_del, 1, (int64_t)op->u.srv.id);
        step(d, d->st_srv_del);
        break;
    case OP_LINK:
        sqlite3_bind_text(d->st_site, 1, op->u.link.site, -1, SQLITE_STATIC);
        sqlite3_bind_int64(d->st_site, 2,
                           op->u.link.l.bw_unix_ms > op->u.link.l.lat_unix_ms ? op->u.link.l.bw_unix_ms
                                                                              : op->u.link.l.lat_unix_ms);
        step(d, d->st_site);
        q = d->st_link;
        sqlite3_bind_text(q, 1, op->u.link.site, -1, SQLITE_STATIC);
        sqlite3_bind_int64(q, 2, (int64_t)op->u.link.server);
        sqlite3_bind_double(q, 3, op->u.link.l.bandwidth);
        sqlite3_bind_double(q, 4, op->u.link.l.latency);
        sqlite3_bind_int64(q, 5, op->u.link.l.bw_samples);
        sqlite3_bind_int64(q, 6, op->u.link.l.lat_samples);
        sqlite3_bind_int64(q, 7, op->u.link.l.bw_unix_ms);
        sqlite3_bind_int64(q, 8, op->u.link.l.lat_unix_ms);
        step(d, q);
        break;
    case OP_CALL: {
        const grp_report *r = &op->u.call.r;
        q = d->st_call;
        sqlite3_bind_int64(q, 1, op->u.call.unix_ms);
        sqlite3_bind_int64(q, 2, (int64_t)r->decision);
        sqlite3_bind_int64(q, 3, (int64_t)r->server_id);
        sqlite3_bind_text(q, 4, op->u.call.site, -1, SQLITE_STATIC);
        sqlite3_bind_text(q, 5, r->function, -1, SQLITE_STATIC);
        sqlite3_bind_int64(q, 6, r->code);
        sqlite3_bind_int64(q, 7, (int64_t)r->bytes_in);
        sqlite3_bind_int64(q, 8, (int64_t)r->bytes_out);
        sqlite3_bind_int64(q, 9, (int64_t)r->total_ns);
        sqlite3_bind_int64(q, 10, (int64_t)r->queue_ns);
        sqlite3_bind_int64(q, 11, (int64_t)r->run_ns);
        sqlite3_bind_double(q, 12, r->flops);
        step(d, q);
        /* Bounded history: trim now and then rather than at every insert. */
        if (++d->calls_since_trim >= 1000) {
            d->calls_since_trim = 0;
            sqlite3_bind_int64(d->st_trim, 1, GMS_CALLS_KEPT);
            step(d, d->st_trim);
        }
        break;
    }
    }
}

static void free_op(db_op *op) {
    if (op->kind == OP_SERVER) {
        for (uint32_t i = 0; i < op->u.srv.nfns; i++)
            free(op->u.srv.fns[i].name);
        free(op->u.srv.fns);
    } else if (op->kind == OP_FN) {
        free(op->u.fn.fn.name);
    }
    free(op);
}

/* The row OP writes whole (a server's state, one of its functions, one link) as a key,
 * into K; 0 for ops that are never superseded (a call, a registration). */
static int row_key(const db_op *op, char *k, size_t len) {
    switch (op->kind) {
    case OP_STATE: snprintf(k, len, "s%llu", (unsigned long long)op->u.srv.id); return 1;
    case OP_FN: snprintf(k, len, "f%llu/%s", (unsigned long long)op->u.fn.server, op->u.fn.fn.name); return 1;
    case OP_LINK:
        snprintf(k, len, "l%llu/%s", (unsigned long long)op->u.link.server, op->u.link.site);
        return 1;
    default: return 0;
    }
}

/* Applies the batch OPS[0..N) in order, except the state, function and link writes
 * that a later op of the batch writes again (each is a snapshot of the whole row):
 * under a stream of REPORTs one row is written once per batch, not once per call. A
 * registration writes the state and functions too, so it supersedes earlier ones.
 * Returns the number of ops skipped. */
static unsigned apply_batch(gms_db *d, db_op **ops, unsigned n) {
    gms_map seen = {0};
    unsigned skipped = 0;
    char k[GRP_MAX_SITE + GRP_MAX_FUNCTION_NAME + 48];
    for (unsigned i = n; i-- > 0;) {
        db_op *op = ops[i];
        uint32_t v;
        if (row_key(op, k, sizeof k)) {
            if (gms_map_get(&seen, k, &v)) {
                ops[i] = NULL;
                skipped++;
                continue;
            }
            if (gms_map_put(&seen, k, 1)) break; /* out of memory: apply everything */
        } else if (op->kind == OP_SERVER) {
            snprintf(k, sizeof k, "s%llu", (unsigned long long)op->u.srv.id);
            if (gms_map_put(&seen, k, 1)) break;
            for (uint32_t j = 0; j < op->u.srv.nfns; j++) {
                snprintf(k, sizeof k, "f%llu/%s", (unsigned long long)op->u.srv.id, op->u.srv.fns[j].name);
                if (gms_map_put(&seen, k, 1)) break;
            }
        }
    }
    gms_map_free(&seen);
    for (unsigned i = 0; i < n; i++)
        if (ops[i]) apply(d, ops[i]);
    return skipped;
}

static void *writer_main(void *arg) {
    gms_db *d = arg;
    pthread_mutex_lock(&d->lock);
    for (;;) {
        while (!d->head && !d->stop)
            pthread_cond_wait(&d->wake, &d->lock);
        if (!d->head && d->stop) break;
        if (!d->stop && !d->flushing && d->nqueued < GMS_BATCH_MAX) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            long long ns = ts.tv_nsec + GMS_BATCH_NS;
            ts.tv_sec += (time_t)(ns / 1000000000LL);
            ts.tv_nsec = (long)(ns % 1000000000LL);
            /* Woken early by a flush, a stop, or a full batch (enqueue signals). */
            while (!d->stop && !d->flushing && d->nqueued < GMS_BATCH_MAX &&
                   pthread_cond_timedwait(&d->wake, &d->lock, &ts) == 0) {
            }
        }
        db_op *batch = d->head;
        d->head = d->tail = NULL;
        unsigned n = d->nqueued;
        d->nqueued = 0;
        pthread_mutex_unlock(&d->lock);
        int tx = sqlite3_exec(d->db, "BEGIN", NULL, NULL, NULL) == SQLITE_OK;
        db_op **ops = malloc(n * sizeof *ops);
        if (ops) {
            unsigned k = 0;
            for (db_op *op = batch; op && k < n; op = op->next)
                ops[k++] = op;
            d->coalesced += apply_batch(d, ops, k);
            free(ops);
        } else {
            for (db_op *op = batch; op; op = op->next)
                apply(d, op);
        }
        for (db_op *op = batch, *next; op; op = next) {
            next = op->next;
            free_op(op);
        }
        if (tx && sqlite3_exec(d->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
            gms_log(GMS_LOG_ERROR, "registry %s: commit failed: %s", d->path, sqlite3_errmsg(d->db));
            sqlite3_exec(d->db, "ROLLBACK", NULL, NULL, NULL);
        }
        pthread_mutex_lock(&d->lock);
        d->committed += n;
        pthread_cond_broadcast(&d->done);
    }
    pthread_mutex_unlock(&d->lock);
    return NULL;
}

int gms_db_start(gms_db *d, gr_err *e) {
    if (prepare(d)) return gr_seterr(e, GRID_ERR_IO, "--db %s: %s", d->path, sqlite3_errmsg(d->db));
    int rc = pthread_create(&d->thread, NULL, writer_main, d);
    if (rc)
        return gr_seterr(e, GRID_ERR_NOMEM, "cannot start the registry's writer thread: %s", strerror(rc));
    d->started = 1;
    return GRID_OK;
}

static void enqueue(gms_db *d, db_op *op) {
    pthread_mutex_lock(&d->lock);
    if (d->nqueued >= GMS_QUEUE_MAX || d->stop) {
        d->dropped++;
        long long now = gr_now_ns();
        int say = now - d->last_drop_log > 10000000000LL;
        if (say) d->last_drop_log = now;
        uint64_t dropped = d->dropped;
        pthread_mutex_unlock(&d->lock);
        if (say)
            gms_log(GMS_LOG_WARN, "registry %s: writes are behind; %llu dropped so far (the disk is slow?)",
                    d->path, (unsigned long long)dropped);
        free_op(op);
        return;
    }
    op->next = NULL;
    if (d->tail)
        d->tail->next = op;
    else
        d->head = op;
    d->tail = op;
    d->nqueued++;
    d->queued++;
    /* The writer needs waking for the first op of a batch and for a full one only. */
    if (d->nqueued == 1 || d->nqueued == GMS_BATCH_MAX) pthread_cond_signal(&d->wake);
    pthread_mutex_unlock(&d->lock);
}

static db_op *new_op(int kind) {
    db_op *op = calloc(1, sizeof *op);
    if (op)
        op->kind = kind;
    else
        gms_log(GMS_LOG_ERROR, "out of memory: a registry write is lost");
    return op;
}

static void fill_server(db_op *op, const gms_server *s) {
    op->u.srv.id = s->id;
    snprintf(op->u.srv.name, sizeof op->u.srv.name, "%s", s->name);
    snprintf(op->u.srv.host, sizeof op->u.srv.host, "%s", s->host);
    op->u.srv.port = s->port;
    op->u.srv.cores = s->cores;
    op->u.srv.workers = s->workers;
    op->u.srv.reg_speed = s->reg_speed;
    op->u.srv.speed = s->speed;
    op->u.srv.mean_call_s = s->mean_call_s;
    op->u.srv.up = s->up;
    op->u.srv.beat_ms = s->last_beat_unix_ms;
    op->u.srv.calls = s->calls;
    op->u.srv.failures = s->failures;
}

static int copy_fn(db_fn *o, const gms_fn *f) {
    o->name = strdup(f->name);
    o->hash = f->hash;
    o->flags = f->flags;
    o->speed = f->speed;
    o->run_s = f->run_s;
    o->samples = f->samples;
    return o->name ? 0 : -1;
}

void gms_db_put_server(gms_db *d, const gms_server *s) {
    if (!d) return;
    db_op *op = new_op(OP_SERVER);
    if (!op) return;
    fill_server(op, s);
    op->u.srv.fns = calloc(s->nfns ? s->nfns : 1, sizeof *op->u.srv.fns);
    for (uint32_t i = 0; op->u.srv.fns && i < s->nfns; i++) {
        if (copy_fn(&op->u.srv.fns[i], &s->fns[i])) break;
        op->u.srv.nfns = i + 1;
    }
    enqueue(d, op);
}

void gms_db_forget_server(gms_db *d, uint64_t id) {
    if (!d) return;
    db_op *op = new_op(OP_FORGET);
    if (!op) return;
    op->u.srv.id = id;
    enqueue(d, op);
}

void gms_db_put_server_state(gms_db *d, const gms_server *s) {
    if (!d) return;
    db_op *op = new_op(OP_STATE);
    if (!op) return;
    fill_server(op, s);
    enqueue(d, op);
}

void gms_db_put_fn(gms_db *d, const gms_server *s, const gms_fn *f) {
    if (!d) return;
    db_op *op = new_op(OP_FN);
    if (!op) return;
    op->u.fn.server = s->id;
    if (copy_fn(&op->u.fn.fn, f)) {
        free(op);
        return;
    }
    enqueue(d, op);
}

void gms_db_put_link(gms_db *d, const char *site, uint64_t server, const gms_link *l) {
    if (!d) return;
    db_op *op = new_op(OP_LINK);
    if (!op) return;
    snprintf(op->u.link.site, sizeof op->u.link.site, "%s", site);
    op->u.link.server = server;
    op->u.link.l = *l;
    enqueue(d, op);
}

void gms_db_put_call(gms_db *d, const grp_report *r, const char *site, int64_t unix_ms) {
    if (!d) return;
    db_op *op = new_op(OP_CALL);
    if (!op) return;
    op->u.call.r = *r;
    snprintf(op->u.call.site, sizeof op->u.call.site, "%s", site);
    op->u.call.unix_ms = unix_ms;
    enqueue(d, op);
}

void gms_db_flush(gms_db *d) {
    if (!d || !d->started) return;
    pthread_mutex_lock(&d->lock);
    uint64_t target = d->queued;
    d->flushing++;
    pthread_cond_signal(&d->wake);
    while (d->committed < target)
        pthread_cond_wait(&d->done, &d->lock);
    d->flushing--;
    pthread_mutex_unlock(&d->lock);
}

void gms_db_close(gms_db *d) {
    if (!d) return;
    if (d->started) {
        pthread_mutex_lock(&d->lock);
        d->stop = 1;
        pthread_cond_signal(&d->wake);
        pthread_mutex_unlock(&d->lock);
        pthread_join(d->thread, NULL);
    }
    sqlite3_stmt *v[] = {d->st_server, d->st_state, d->st_fn_del, d->st_fn,      d->st_site,
                         d->st_link,   d->st_call,  d->st_trim,   d->st_srv_del, d->st_link_del};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        sqlite3_finalize(v[i]);
    if (d->db) sqlite3_close(d->db);
    pthread_mutex_destroy(&d->lock);
    pthread_cond_destroy(&d->wake);
    pthread_cond_destroy(&d->done);
    free(d);
}
