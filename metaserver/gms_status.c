/* gms_status.c: the /api/status JSON (schema in docs/metaserver.md; the status page and
 * `gridrpc status --json` read it, so its names are kept): the metaserver's totals,
 * every server with its load history, every link with its age, the recent
 * decisions with their candidates' estimates, the functions that crashed (those held
 * back from new calls first), the recently reported calls with their outcome, and each
 * function's counts and mean times over its servers. Strings are escaped for JSON; numbers
 * that are not finite are written as 0, which JSON can hold. The document is built
 * from a copy of the state taken under its lock, never under the lock itself. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gms.h"

static int reserve(gms_buf *b, size_t more) {
    if (b->failed) return -1;
    if (b->len + more + 1 <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + more + 1)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
        b->failed = 1;
        return -1;
    }
    b->p = p;
    b->cap = cap;
    return 0;
}

void gms_buf_printf(gms_buf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || reserve(b, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

/* The length of the valid UTF-8 sequence at P (1 to 4), or 0 when it is not one
 * (RFC 3629: no overlong forms, no surrogates, nothing past U+10FFFF). */
static int utf8_len(const unsigned char *p) {
    unsigned char c = p[0];
    if (c < 0x80) return 1;
    int n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    if (!n) return 0;
    unsigned char lo = c == 0xe0 ? 0xa0 : c == 0xf0 ? 0x90 : 0x80;
    unsigned char hi = c == 0xed ? 0x9f : c == 0xf4 ? 0x8f : 0xbf;
    if (p[1] < lo || p[1] > hi) return 0;
    for (int i = 2; i < n; i++)
        if ((p[i] & 0xc0) != 0x80) return 0;
    return n;
}

/* S as a JSON string. Names come from peers as bytes: what is not UTF-8 is written as
 * U+FFFD, since JSON is UTF-8 and its readers (python's json, browsers) refuse the rest. */
void gms_buf_json_string(gms_buf *b, const char *s) {
    if (reserve(b, strlen(s) * 6 + 2)) return;
    char *o = b->p + b->len;
    *o++ = '"';
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') {
            *o++ = '\\';
            *o++ = (char)*p;
        } else if (*p < 0x20 || *p == 0x7f) {
            o += sprintf(o, "\\u%04x", *p);
        } else if (*p >= 0x80) {
            int n = utf8_len(p);
            if (n) {
                memcpy(o, p, (size_t)n);
                o += n;
                p += n - 1;
            } else {
                o += sprintf(o, "\\ufffd");
            }
        } else {
            *o++ = (char)*p;
        }
    }
    *o++ = '"';
    *o = '\0';
    b->len = (size_t)(o - b->p);
}

static double num(double v) {
    return isfinite(v) ? v : 0;
}

static void server_json(gms_buf *b, const gms_server *s, long long now_ns, int64_t now_ms) {
    gms_cand c = {0};
    c.cores = s->cores;
    c.workers = s->workers;
    c.running = s->running;
    c.queued = s->queued;
    c.pending = s->pending;
    int full = gms_cand_full(&c);
    gms_buf_printf(b, "{\"id\":%llu,\"name\":", (unsigned long long)s->id);
    gms_buf_json_string(b, s->name);
    gms_buf_printf(b, ",\"host\":");
    gms_buf_json_string(b, s->host);
    gms_buf_printf(b,
                   ",\"port\":%u,\"state\":\"%s\",\"cores\":%u,\"workers\":%u,\"running\":%u,\"queued\":%u,"
                   "\"pending\":%u,\"work_s\":%.6g,\"full\":%s,\"loadavg\":%.3f,\"speed\":%.6g,"
                   "\"beat_age_ms\":%lld,\"last_beat_unix_ms\":%lld,\"last_seen_ms\":%lld,\"calls\":%llu,"
                   "\"failures\":%llu,\"functions\":[",
                   s->port, s->up ? "up" : "down", s->cores, s->workers, s->running, s->queued, s->pending,
                   num(s->work_s), full ? "true" : "false", num(s->loadavg),
                   num(s->speed > 0 ? s->speed : s->reg_speed), (now_ns - s->last_beat_ns) / 1000000,
                   (long long)s->last_beat_unix_ms,
                   /* beat_age_ms restarts with a restart's grace; a down server's age is
                    * told from the last beat the registry kept (-1: it never beat). */
                   s->last_beat_unix_ms > 0 ? (long long)(now_ms - s->last_beat_unix_ms) : -1LL,
                   (unsigned long long)s->calls, (unsigned long long)s->failures);
    for (uint32_t i = 0; i < s->nfns; i++) {
        if (i) gms_buf_printf(b, ",");
        gms_buf_json_string(b, s->fns[i].name);
    }
    gms_buf_printf(b, "],\"history\":[");
    for (uint32_t i = 0; i < s->hist_n; i++) {
        const gms_sample *h = &s->hist[(s->hist_head + GMS_HISTORY - s->hist_n + i) % GMS_HISTORY];
        gms_buf_printf(b, "%s[%lld,%u,%u,%.3f]", i ? "," : "", (long long)h->unix_ms, h->running, h->queued,
                       num(h->loadavg));
    }
    gms_buf_printf(b, "]}");
}

/* The functions that crashed, held ones first. */
static void crashing_json(gms_buf *b, const gms_crash_fn *v, uint32_t n, long long now_ns) {
    int first = 1;
    for (int pass = 1; pass >= 0; pass--)
        for (uint32_t i = 0; i < n; i++) {
            const gms_crash_fn *f = &v[i];
            int held = f->held_until_ns > now_ns;
            if (held != pass) continue;
            gms_buf_printf(b, "%s{\"function\":", first ? "" : ",\n");
            first = 0;
            gms_buf_json_string(b, f->name);
            gms_buf_printf(b, ",\"held\":%s,\"left_s\":%.1f,\"until_unix_ms\":%lld,\"servers\":",
                           held ? "true" : "false", held ? (double)(f->held_until_ns - now_ns) / 1e9 : 0.0,
                           held ? (long long)f->held_until_ms : 0LL);
            gms_buf_json_string(b, f->servers);
            gms_buf_printf(b, ",\"what\":");
            gms_buf_json_string(b, f->what);
            gms_buf_printf(b, ",\"crashes\":%llu,\"last_age_s\":%.1f}", (unsigned long long)f->crashes,
                           (double)(now_ns - f->seen_ns) / 1e9);
        }
}

/* The recent calls, newest first. The REPORT carries the error's code only: its name
 * and standard text stand for the message. */
static void recent_json(gms_buf *b, const gms_call *v, uint32_t n) {
    for (uint32_t k = 0; k < n; k++) {
        const gms_call *c = &v[k];
        gms_buf_printf(b, "%s{\"unix_ms\":%lld,\"function\":", k ? ",\n" : "", (long long)c->unix_ms);
        gms_buf_json_string(b, c->function);
        gms_buf_printf(b, ",\"site\":");
        gms_buf_json_string(b, c->site);
        gms_buf_printf(b, ",\"server\":%llu,\"server_name\":", (unsigned long long)c->server);
        gms_buf_json_string(b, c->server_name);
        gms_buf_printf(b, ",\"host\":");
        gms_buf_json_string(b, c->host);
        gms_buf_printf(b, ",\"port\":%u,\"seconds\":%.6g,\"run_s\":%.6g,\"ok\":%s,\"outcome\":", c->port,
                       num(c->total_s), num(c->run_s), c->code == GRID_OK ? "true" : "false");
        gms_buf_json_string(b, c->code == GRID_OK ? "OK" : grid_error_name(c->code));
        gms_buf_printf(b, ",\"message\":");
        gms_buf_json_string(b, c->code == GRID_OK ? "" : grid_error_string(c->code));
        gms_buf_printf(b, "}");
    }
}

/* Each function's counts over the servers that have it (by its registered name), for
 * those with a call reported; built after the lock is let go, from the copies. */
typedef struct fn_total {
    const char *name;
    uint64_t calls, failures;
    double total_s, run_total_s;
    uint32_t servers;
} fn_total;

static void functions_json(gms_buf *b, const gms_server *srv, uint32_t nsrv) {
    gms_map index = {0};
    fn_total *t = NULL;
    uint32_t n = 0, cap = 0;
    for (uint32_t i = 0; i < nsrv; i++)
        for (uint32_t j = 0; j < srv[i].nfns; j++) {
            const gms_fn *f = &srv[i].fns[j];
            if (!f->calls && !f->failures) continue;
            uint32_t k;
            if (!gms_map_get(&index, f->name, &k)) {
                if (n == cap) {
                    fn_total *p = realloc(t, (cap = cap ? cap * 2 : 64) * sizeof *t);
                    if (!p) goto nomem;
                    t = p;
                }
                k = n++;
                memset(&t[k], 0, sizeof t[k]);
                t[k].name = f->name;
                if (gms_map_put(&index, f->name, k)) goto nomem;
            }
            t[k].calls += f->calls;
            t[k].failures += f->failures;
            t[k].total_s += f->total_s;
            t[k].run_total_s += f->run_total_s;
            t[k].servers++;
        }
    for (uint32_t k = 0; k < n; k++) {
        gms_buf_printf(b, "%s{\"function\":", k ? ",\n" : "");
        gms_buf_json_string(b, t[k].name);
        double calls = (double)t[k].calls;
        gms_buf_printf(
            b, ",\"calls\":%llu,\"failures\":%llu,\"mean_s\":%.6g,\"mean_run_s\":%.6g,\"servers\":%u}",
            (unsigned long long)t[k].calls, (unsigned long long)t[k].failures,
            calls > 0 ? num(t[k].total_s / calls) : 0.0, calls > 0 ? num(t[k].run_total_s / calls) : 0.0,
            t[k].servers);
    }
    free(t);
    gms_map_free(&index);
    return;
nomem:
    free(t);
    gms_map_free(&index);
    b->failed = 1;
}

/* What the document shows, copied under the state's lock: the document is built from
 * it after the lock is let go, so a SCHEDULE never waits for a large page's formatting
 * (with 40 servers of many functions it took most of a second). */
typedef struct snapshot {
    long long start_ns;
    int policy;
    unsigned heartbeat_ms, down_after, holding;
    uint64_t calls, failures, decisions, held, held_over, crashes, crash_holds, crash_refused;
    double crash_hold_s;
    gms_server *servers; /* copies: fns (names in names[i]) and links are the snapshot's own */
    char **names;
    uint32_t nservers;
    const char **sites; /* the strings are the state's: never freed while it runs */
    uint32_t nsites;
    gms_decision *ring; /* newest first */
    uint32_t ndecisions;
    gms_crash_fn *crash;
    uint32_t ncrash;
    gms_call *recent; /* newest first */
    uint32_t nrecent;
    int failed;
} snapshot;

static void snapshot_free(snapshot *c) {
    for (uint32_t i = 0; c->servers && i < c->nservers; i++) {
        free(c->servers[i].fns);
        free(c->servers[i].links);
        free(c->names[i]);
    }
    free(c->servers);
    free(c->names);
    free(c->sites);
    free(c->ring);
    free(c->crash);
    free(c->recent);
}

/* Copies server S into O: its function names packed into one buffer (*NAMES). */
static int copy_server(const gms_server *s, gms_server *o, char **names) {
    *o = *s;
    o->fns = NULL;
    o->links = NULL;
    o->nfns = o->nlinks = 0;
    size_t len = 1;
    for (uint32_t i = 0; i < s->nfns; i++)
        len += strlen(s->fns[i].name) + 1;
    *names = malloc(len);
    o->fns = calloc(s->nfns ? s->nfns : 1, sizeof *o->fns);
    o->links = malloc((s->nlinks ? s->nlinks : 1) * sizeof *o->links);
    if (!*names || !o->fns || !o->links) return -1;
    char *p = *names;
    for (uint32_t i = 0; i < s->nfns; i++) {
        size_t n = strlen(s->fns[i].name) + 1;
        memcpy(p, s->fns[i].name, n);
        o->fns[i] = s->fns[i]; /* its counts, for the per-function figures */
        o->fns[i].name = p;
        o->fns[i].short_name = NULL; /* not used here: it would point into the state */
        p += n;
    }
    o->nfns = s->nfns;
    if (s->nlinks) memcpy(o->links, s->links, s->nlinks * sizeof *o->links);
    o->nlinks = o->caplinks = s->nlinks;
    return 0;
}

static void take_snapshot(gms_state *st, snapshot *c) {
    memset(c, 0, sizeof *c);
    pthread_mutex_lock(&st->lock);
    c->start_ns = st->start_ns;
    c->policy = st->policy;
    c->heartbeat_ms = st->heartbeat_ms;
    c->down_after = st->down_after;
    c->holding = st->holding;
    c->calls = st->calls;
    c->failures = st->failures;
    c->decisions = st->decisions;
    c->held = st->held;
    c->held_over = st->held_over;
    c->crashes = st->crashes;
    c->crash_holds = st->crash_holds;
    c->crash_refused = st->crash_refused;
    c->crash_hold_s = st->crash_hold_s;
    uint32_t n = st->nservers;
    c->servers = calloc(n ? n : 1, sizeof *c->servers);
    c->names = calloc(n ? n : 1, sizeof *c->names);
    c->failed = !c->servers || !c->names;
    for (uint32_t i = 0; i < n && !c->failed; i++) {
        c->nservers = i + 1;
        c->failed = copy_server(st->servers[i], &c->servers[i], &c->names[i]);
    }
    c->sites = malloc((st->nsites ? st->nsites : 1) * sizeof *c->sites);
    if (c->sites) {
        for (uint32_t i = 0; i < st->nsites; i++)
            c->sites[i] = st->sites[i];
        c->nsites = st->nsites;
    }
    uint32_t nd = (uint32_t)(st->decisions < GMS_DECISIONS ? st->decisions : GMS_DECISIONS);
    c->ring = malloc((nd ? nd : 1) * sizeof *c->ring);
    if (c->ring) {
        for (uint32_t k = 0; k < nd; k++)
            c->ring[k] = st->ring[(st->decisions - 1 - k) % GMS_DECISIONS];
        c->ndecisions = nd;
    }
    c->crash = malloc((st->ncrash_fns ? st->ncrash_fns : 1) * sizeof *c->crash);
    if (c->crash) {
        if (st->ncrash_fns) memcpy(c->crash, st->crash_fns, st->ncrash_fns * sizeof *c->crash);
        c->ncrash = st->ncrash_fns;
    }
    /* At most GMS_RECENT fixed-size entries: the copy under the lock stays short. */
    uint32_t nr = (uint32_t)(st->nrecent < GMS_RECENT ? st->nrecent : GMS_RECENT);
    c->recent = malloc((nr ? nr : 1) * sizeof *c->recent);
    if (c->recent) {
        for (uint32_t k = 0; k < nr; k++)
            c->recent[k] = st->recent[(st->nrecent - 1 - k) % GMS_RECENT];
        c->nrecent = nr;
    }
    c->failed |= !c->sites || !c->ring || !c->crash || !c->recent;
    pthread_mutex_unlock(&st->lock);
}

void gms_status_json(gms_state *st, gms_buf *b) {
    snapshot c;
    take_snapshot(st, &c);
    long long now_ns = gr_now_ns();
    int64_t now_ms = gms_unix_ms();
    if (c.failed) {
        snapshot_free(&c);
        b->failed = 1;
        return;
    }
    gms_buf_printf(
        b,
        "{\"metaserver\":{\"version\":\"%s\",\"scheduler\":\"%s\",\"uptime_s\":%lld,\"calls\":%llu,"
        "\"failures\":%llu,\"decisions\":%llu,\"heartbeat_ms\":%u,\"down_after\":%u,\"holding\":%u,"
        "\"held\":%llu,\"held_over\":%llu,\"crash_hold_s\":%.6g,\"crashes\":%llu,\"crash_holds\":%llu,"
        "\"crash_refused\":%llu,\"recent_max\":%u},\n\"servers\":[",
        PACKAGE_VERSION, grp_policy_name((uint32_t)c.policy), (now_ns - c.start_ns) / 1000000000LL,
        (unsigned long long)c.calls, (unsigned long long)c.failures, (unsigned long long)c.decisions,
        c.heartbeat_ms, c.down_after, c.holding, (unsigned long long)c.held, (unsigned long long)c.held_over,
        num(c.crash_hold_s), (unsigned long long)c.crashes, (unsigned long long)c.crash_holds,
        (unsigned long long)c.crash_refused, (unsigned)GMS_RECENT);
    for (uint32_t i = 0; i < c.nservers; i++) {
        if (i) gms_buf_printf(b, ",\n");
        server_json(b, &c.servers[i], now_ns, now_ms);
    }
    gms_buf_printf(b, "],\n\"links\":[");
    int first = 1;
    for (uint32_t i = 0; i < c.nservers; i++) {
        const gms_server *s = &c.servers[i];
        for (uint32_t j = 0; j < s->nlinks; j++) {
            const gms_link *l = &s->links[j];
            if (l->site >= c.nsites) continue;
            int64_t at = l->bw_unix_ms > l->lat_unix_ms ? l->bw_unix_ms : l->lat_unix_ms;
            gms_buf_printf(b, "%s{\"site\":", first ? "" : ",\n");
            first = 0;
            gms_buf_json_string(b, c.sites[l->site]);
            gms_buf_printf(
                b,
                ",\"server\":%llu,\"bandwidth\":%.6g,\"latency\":%.6g,\"samples\":%u,\"age_s\":%.1f,"
                "\"stale\":%s}",
                (unsigned long long)s->id, num(l->bandwidth), num(l->latency), l->bw_samples + l->lat_samples,
                (double)(now_ms - at) / 1000.0, gms_link_fresh(at, now_ms) ? "false" : "true");
        }
    }
    gms_buf_printf(b, "],\n\"decisions\":[");
    for (uint32_t k = 0; k < c.ndecisions; k++) {
        const gms_decision *d = &c.ring[k];
        gms_buf_printf(b, "%s{\"id\":%llu,\"unix_ms\":%lld,\"function\":", k ? ",\n" : "",
                       (unsigned long long)d->id, (long long)d->unix_ms);
        gms_buf_json_string(b, d->function);
        gms_buf_printf(b, ",\"site\":");
        gms_buf_json_string(b, d->site);
        gms_buf_printf(b,
                       ",\"policy\":\"%s\",\"chosen\":%llu,\"considered\":%u,\"full\":%u,\"held_s\":%.3f,"
                       "\"elapsed_us\":%.2f,\"candidates\":[",
                       grp_policy_name((uint32_t)d->policy), (unsigned long long)d->chosen, d->ntotal,
                       d->nfull, num(d->held_s), d->elapsed_ns / 1000);
        for (uint32_t i = 0; i < d->ncands; i++) {
            const gms_decision_cand *dc = &d->cands[i];
            gms_buf_printf(
                b,
                "%s{\"server\":%llu,\"estimate\":%.6g,\"wait\":%.6g,\"transfer\":%.6g,\"compute\":%.6g,"
                "\"assumed_link\":%s}",
                i ? "," : "", (unsigned long long)dc->server, num(dc->estimate), num(dc->wait),
                num(dc->transfer), num(dc->compute), dc->assumed_link ? "true" : "false");
        }
        gms_buf_printf(b, "]}");
    }
    gms_buf_printf(b, "],\n\"crashing\":[");
    crashing_json(b, c.crash, c.ncrash, now_ns);
    gms_buf_printf(b, "],\n\"recent\":[");
    recent_json(b, c.recent, c.nrecent);
    gms_buf_printf(b, "],\n\"functions\":[");
    functions_json(b, c.servers, c.nservers);
    gms_buf_printf(b, "]}\n");
    snapshot_free(&c);
}
