/* gsv_limits.c: what calls may hold on the server before they are answered: calls
 * waiting or running per connection (--max-calls-per-connection) and in total
 * (--max-calls), and the bytes of their arguments (--max-call-memory). A call is
 * counted once its head is read (its size is then known) and before its bulk is
 * allocated, and uncounted when its job is freed (answered, failed or canceled). Over a
 * limit only that call is refused (GRID_ERR_LIMIT, the rest of its message skipped):
 * the connection goes on. Counters are atomics: a call that would pass a limit is
 * added, seen over, and taken back, so two racing calls near a bound may both be
 * refused but never both admitted over it. */
#include <stdio.h>

#include "gsv.h"

/* Adds N to *V unless the result passes MAX; returns the value before, or -1 (nothing
 * added) when it would pass. */
static long long add_bounded_u(atomic_uint *v, unsigned n, unsigned max) {
    unsigned before = atomic_fetch_add(v, n);
    if (before + n > max) {
        atomic_fetch_sub(v, n);
        return -1;
    }
    return before;
}

/* "123 bytes", "1572864 bytes (1.5 MiB)": exact first (a test reads it), then for people. */
static void exact_size(uint64_t bytes, char *out, size_t n) {
    char h[32];
    if (bytes < 1024)
        snprintf(out, n, "%llu bytes", (unsigned long long)bytes);
    else
        snprintf(out, n, "%llu bytes (%s)", (unsigned long long)bytes, gsv_data_size(bytes, h, sizeof h));
}

int gsv_limits_admit(gsv_server *s, gsv_conn *c, gsv_job *job, uint64_t bytes, gr_err *e) {
    const gsv_options *o = &s->opt;
    int per_conn = job->conn != NULL;
    if (per_conn && add_bounded_u(&c->calls, 1, o->max_calls_per_conn) < 0)
        return gr_seterr(e, GRID_ERR_LIMIT,
                         "this connection already has %u calls waiting or running, the most the server "
                         "allows one connection (--max-calls-per-connection %u): wait for some results "
                         "before sending more calls, or spread them over more connections",
                         atomic_load(&c->calls), o->max_calls_per_conn);
    if (add_bounded_u(&s->calls_open, 1, o->max_calls) < 0) {
        if (per_conn) atomic_fetch_sub(&c->calls, 1);
        return gr_seterr(e, GRID_ERR_LIMIT,
                         "the server already has %u calls waiting or running, its limit (--max-calls %u): "
                         "retry later or use another server",
                         atomic_load(&s->calls_open), o->max_calls);
    }
    unsigned long long before = atomic_fetch_add(&s->call_bytes, bytes);
    if (before + bytes > o->max_call_memory || before + bytes < before) {
        atomic_fetch_sub(&s->call_bytes, bytes);
        atomic_fetch_sub(&s->calls_open, 1);
        if (per_conn) atomic_fetch_sub(&c->calls, 1);
        char a[64], h[64], m[32];
        exact_size(bytes, a, sizeof a);
        exact_size(before, h, sizeof h);
        gsv_data_size(o->max_call_memory, m, sizeof m);
        if (bytes > o->max_call_memory)
            return gr_seterr(e, GRID_ERR_LIMIT,
                             "the call's %s of arguments exceed what this server holds for waiting and "
                             "running calls (--max-call-memory %s): it cannot run here; split the work into "
                             "smaller calls or use a server with a larger limit",
                             a, m);
        return gr_seterr(e, GRID_ERR_LIMIT,
                         "the call's %s of arguments would take the call data held by waiting and running "
                         "calls from %s past the server's limit of %s (--max-call-memory): retry once "
                         "earlier calls have finished, or use another server",
                         a, h, m);
    }
    job->held = GSV_HELD_SERVER | (per_conn ? GSV_HELD_CONN : 0);
    job->held_bytes = bytes;
    return GRID_OK;
}

void gsv_limits_release(gsv_server *s, gsv_job *job) {
    if (!job->held) return;
    atomic_fetch_sub(&s->call_bytes, job->held_bytes);
    atomic_fetch_sub(&s->calls_open, 1);
    if ((job->held & GSV_HELD_CONN) && job->conn) atomic_fetch_sub(&job->conn->calls, 1);
    job->held = 0;
    job->held_bytes = 0;
}

int gsv_conn_is_idle(gsv_conn *c) {
    /* The reader's own reference is the only one: no call, callback or data copy of
     * this connection is in flight. */
    if (atomic_load(&c->refs) > 1) return 0;
    if (gsv_data_conn_holds(c)) return 0;
    return gsv_objects_owned(c) == 0;
}
