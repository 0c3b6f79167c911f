/* gms_crash.c: functions that crash. Servers report each executor a function killed
 * (CRASHED, gms_request.c); a function that did so on two different servers within
 * GMS_CRASH_WINDOW_NS is held back from new calls for --crash-hold: a SCHEDULE of it
 * fails at once with GRID_ERR_CRASHED naming the servers and when it is offered again,
 * instead of sending the next caller to the next server to crash there. Until then a
 * server where the function just crashed is offered for it only when no other is: the
 * next crash, if it comes, is on another server (an MCT choice would otherwise send
 * call after call to the same fast server, each crashing there). The holds are
 * listed by HOLDS (gridrpc status) and the status page. Everything is under st->lock.
 *
 * Only servers report crashes, over the connection that registered them, and only of
 * functions they registered: a client's REPORT codes are never believed here, or any
 * client could have any function held back on every server. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gms.h"

/* The entry of function NAME, made when MAKE (evicting the one quiet longest, never a
 * held one, when GMS_CRASH_FNS are remembered); NULL when there is none. */
static gms_crash_fn *entry(gms_state *st, const char *name, int make, long long now_ns) {
    for (uint32_t i = 0; i < st->ncrash_fns; i++)
        if (strcmp(st->crash_fns[i].name, name) == 0) return &st->crash_fns[i];
    if (!make) return NULL;
    if (!st->crash_fns && !(st->crash_fns = calloc(GMS_CRASH_FNS, sizeof *st->crash_fns))) return NULL;
    gms_crash_fn *f = NULL;
    if (st->ncrash_fns < GMS_CRASH_FNS) {
        f = &st->crash_fns[st->ncrash_fns++];
    } else {
        for (uint32_t i = 0; i < st->ncrash_fns; i++) {
            gms_crash_fn *c = &st->crash_fns[i];
            if (c->held_until_ns > now_ns) continue;
            if (!f || c->seen_ns < f->seen_ns) f = c;
        }
        if (!f) return NULL; /* every one held: this crash goes uncounted */
    }
    memset(f, 0, sizeof *f);
    snprintf(f->name, sizeof f->name, "%s", name);
    return f;
}

/* The distinct servers among F's crashes since SINCE_NS, as "s1 (host:port), s2 (...)"
 * into F->servers; returns how many. */
static uint32_t crashed_on(gms_state *st, gms_crash_fn *f, long long since_ns) {
    uint64_t seen[GMS_CRASH_RECENT];
    uint32_t n = 0;
    size_t used = 0;
    f->servers[0] = '\0';
    for (uint32_t k = 0; k < f->nrecent; k++) {
        /* newest first */
        uint32_t at = (f->head + GMS_CRASH_RECENT - 1 - k) % GMS_CRASH_RECENT;
        if (f->recent[at].at_ns < since_ns) continue;
        uint64_t id = f->recent[at].server;
        int dup = 0;
        for (uint32_t j = 0; j < n && !dup; j++)
            dup = seen[j] == id;
        if (dup) continue;
        seen[n++] = id;
        const gms_server *s = gms_state_find_id(st, id);
        if (used < sizeof f->servers - 1)
            used +=
                (size_t)snprintf(f->servers + used, sizeof f->servers - used, "%s%s (%s:%u)",
                                 n > 1 ? ", " : "", s ? s->name : "?", s ? s->host : "?", s ? s->port : 0);
    }
    return n;
}

int gms_state_crashed(gms_state *st, const grp_crashed *m, long long now_ns, int64_t unix_ms, int *held_now,
                      gr_err *e) {
    *held_now = 0;
    pthread_mutex_lock(&st->lock);
    gms_server *s = gms_state_find_id(st, m->server_id);
    int rc = GRID_OK;
    if (!s)
        rc = gr_seterr(e, GRID_ERR_NOT_FOUND, "server id %llu is not registered here: register again",
                       (unsigned long long)m->server_id);
    else if (!gms_server_fn(s, m->function))
        rc = gr_seterr(e, GRID_ERR_ARGS, "server %llu (%s) did not register a function %s",
                       (unsigned long long)m->server_id, s->name, m->function);
    gms_crash_fn *f = rc ? NULL : entry(st, m->function, 1, now_ns);
    if (f) {
        st->crashes++;
        f->crashes++;
        f->seen_ns = now_ns;
        f->recent[f->head].server = m->server_id;
        f->recent[f->head].at_ns = now_ns;
        f->head = (f->head + 1) % GMS_CRASH_RECENT;
        if (f->nrecent < GMS_CRASH_RECENT) f->nrecent++;
        snprintf(f->what, sizeof f->what, "%s", m->what[0] ? m->what : "crashed");
        /* A crash during a hold (a call placed before it) neither extends nor renews it. */
        int held = f->held_until_ns > now_ns;
        if (!held && st->crash_hold_s > 0) {
            /* Crashes before the last hold ended were counted for it already. */
            long long since = now_ns - GMS_CRASH_WINDOW_NS;
            if (f->held_until_ns > since) since = f->held_until_ns;
            char servers[sizeof f->servers];
            memcpy(servers, f->servers, sizeof servers);
            if (crashed_on(st, f, since) >= 2) {
                f->held_until_ns = now_ns + (long long)(st->crash_hold_s * 1e9);
                f->held_until_ms = unix_ms + (int64_t)(st->crash_hold_s * 1e3);
                st->crash_holds++;
                *held_now = 1;
            } else {
                memcpy(f->servers, servers, sizeof servers); /* the last hold's, for the page */
            }
        }
    }
    pthread_mutex_unlock(&st->lock);
    return rc;
}

const gms_crash_fn *gms_crash_held(const gms_state *st, const char *name, long long now_ns) {
    for (uint32_t i = 0; i < st->ncrash_fns; i++) {
        const gms_crash_fn *f = &st->crash_fns[i];
        if (f->held_until_ns > now_ns && strcmp(f->name, name) == 0) return f;
    }
    return NULL;
}

int gms_crash_recent(const gms_state *st, const char *name, uint64_t id, long long now_ns) {
    for (uint32_t i = 0; i < st->ncrash_fns; i++) {
        const gms_crash_fn *f = &st->crash_fns[i];
        if (strcmp(f->name, name) != 0) continue;
        long long since = now_ns - GMS_CRASH_WINDOW_NS;
        if (f->held_until_ns > since) since = f->held_until_ns;
        for (uint32_t k = 0; k < f->nrecent; k++)
            if (f->recent[k].server == id && f->recent[k].at_ns >= since) return 1;
        return 0;
    }
    return 0;
}

/* "12:41:07 UTC" of unix time MS. */
static const char *clock_text(int64_t ms, char *buf, size_t n) {
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    if (!gmtime_r(&t, &tm) || !strftime(buf, n, "%H:%M:%S UTC", &tm)) snprintf(buf, n, "?");
    return buf;
}

int gms_crash_refuse(gms_state *st, const gms_crash_fn *f, long long now_ns, gr_err *e) {
    st->crash_refused++;
    char at[40];
    double left = (double)(f->held_until_ns - now_ns) / 1e9;
    return gr_seterr(
        e, GRID_ERR_CRASHED,
        "%s is held back from new calls: it crashed its executors on servers %s within %.0f s (the "
        "last: %s); it is offered again in %.0f s, at %s (gridmetad --crash-hold)",
        f->name, f->servers, GMS_CRASH_WINDOW_NS / 1e9, f->what, left < 1 ? 1 : left,
        clock_text(f->held_until_ms, at, sizeof at));
}

int gms_state_holds(gms_state *st, long long now_ns, grp_hold **v, uint32_t *n, gr_err *e) {
    *v = NULL;
    *n = 0;
    pthread_mutex_lock(&st->lock);
    uint32_t count = 0;
    for (uint32_t i = 0; i < st->ncrash_fns; i++)
        count += st->crash_fns[i].held_until_ns > now_ns;
    grp_hold *h = calloc(count ? count : 1, sizeof *h);
    uint32_t k = 0;
    for (uint32_t i = 0; h && i < st->ncrash_fns && k < count; i++) {
        const gms_crash_fn *f = &st->crash_fns[i];
        if (f->held_until_ns <= now_ns) continue;
        grp_hold *o = &h[k++];
        snprintf(o->function, sizeof o->function, "%s", f->name);
        o->left_ms = (uint64_t)((f->held_until_ns - now_ns) / 1000000);
        o->until_unix_ms = (uint64_t)f->held_until_ms;
        snprintf(o->servers, sizeof o->servers, "%s", f->servers);
        snprintf(o->what, sizeof o->what, "%s", f->what);
    }
    pthread_mutex_unlock(&st->lock);
    if (!h) return gr_seterr(e, GRID_ERR_NOMEM, "the metaserver is out of memory: retry later");
    *v = h;
    *n = k;
    return GRID_OK;
}
