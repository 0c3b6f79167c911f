/* gsv_limits.c: what calls may hold on the server before they are answered: calls
 * waiting or running per connection (--max-calls-per-connection) and in total
 * (--max-calls), and the bytes of their arguments and results (--max-call-memory). A
 * call is counted once its head is read (its sizes are then known, OUT arrays' too)
 * and before its arrays are allocated; the bytes still to arrive are reserved in steps
 * as they come, so a peer that announces much and stalls holds little, and only for
 * --io-timeout. A call is uncounted when its job is freed (its result written, or the
 * call failed or canceled). Over a limit only that call is refused (GRID_ERR_LIMIT, the
 * rest of its message skipped): the connection goes on. The refusal says what the peer
 * may do; the figures go to the server's log. Counters are atomics: a call that would pass a limit is
 * added, seen over, and taken back, so two racing calls near a bound may both be
 * refused but never both admitted over it. */
#include <stdio.h>
#include <string.h>

#include "grp_proto.h"
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

/* Adds BYTES to what calls hold unless that passes --max-call-memory; 0 when added. */
static int add_memory(gsv_server *s, uint64_t bytes, unsigned long long *before) {
    *before = atomic_fetch_add(&s->call_bytes, bytes);
    if (*before + bytes > s->opt.max_call_memory || *before + bytes < *before) {
        atomic_fetch_sub(&s->call_bytes, bytes);
        return -1;
    }
    return 0;
}

/* A call refused for --max-call-memory: the figures go to the server's log only; the
 * peer is told what it may do (NEED: all the call would hold, arguments and results). */
static int refuse_memory(gsv_server *s, gsv_conn *c, uint64_t bytes, uint64_t need, unsigned long long held,
                         gr_err *e) {
    char a[32], h[32], m[32];
    gsv_log(GSV_LOG_WARN,
            "%s: call refused: %s more would take the call data held (%s) past --max-call-memory %s",
            c ? c->peer : "-", gsv_data_size(bytes, a, sizeof a), gsv_data_size(held, h, sizeof h),
            gsv_data_size(s->opt.max_call_memory, m, sizeof m));
    if (need > s->opt.max_call_memory)
        return gr_seterr(
            e, GRID_ERR_LIMIT,
            "the call's arguments and results need more memory than this server holds for waiting "
            "and running calls (--max-call-memory): it cannot run here; split the work into "
            "smaller calls or use a server with a larger limit");
    return gr_seterr(
        e, GRID_ERR_LIMIT,
        "the server holds too much data of waiting and running calls to take this one now "
        "(--max-call-memory): retry once earlier calls have finished and their results have been "
        "read, or use another server");
}

int gsv_limits_admit(gsv_server *s, gsv_conn *c, gsv_job *job, uint64_t bytes, uint64_t need, gr_err *e) {
    const gsv_options *o = &s->opt;
    int per_conn = job->conn != NULL;
    if (per_conn && add_bounded_u(&c->calls, 1, o->max_calls_per_conn) < 0)
        return gr_seterr(e, GRID_ERR_LIMIT,
                         "this connection already has %u calls waiting or running, the most the server "
                         "allows one connection (--max-calls-per-connection %u): wait for some results "
                         "before sending more calls, or spread them over more connections",
                         o->max_calls_per_conn, o->max_calls_per_conn);
    if (add_bounded_u(&s->calls_open, 1, o->max_calls) < 0) {
        if (per_conn) atomic_fetch_sub(&c->calls, 1);
        return gr_seterr(e, GRID_ERR_LIMIT,
                         "the server has as many calls waiting or running as it takes (--max-calls %u): "
                         "retry later or use another server",
                         o->max_calls);
    }
    unsigned long long before;
    if (need > o->max_call_memory || add_memory(s, bytes, &before) != 0) {
        atomic_fetch_sub(&s->calls_open, 1);
        if (per_conn) atomic_fetch_sub(&c->calls, 1);
        return refuse_memory(s, c, bytes, need, atomic_load(&s->call_bytes), e);
    }
    job->held = GSV_HELD_SERVER | (per_conn ? GSV_HELD_CONN : 0);
    job->held_bytes = bytes;
    return GRID_OK;
}

/* ---------------------------------------------------------------- a call's bulk, in steps */

/* What an announced array may hold before its bytes arrive: a peer that stalls after
 * its head holds at most this much of each array (and only for --io-timeout). */
#define GSV_RESERVE_STEP ((uint64_t)1 << 20)

typedef struct stepper {
    gsv_server *s;
    gsv_conn *c;
    gsv_job *job;
    uint64_t left; /* bytes of the bulk not reserved yet */
} stepper;

/* The reader's credit: the next step of the bulk is reserved before its bytes are read. */
static int reserve_step(grw_reader *r, gr_err *e) {
    stepper *st = r->credit_arg;
    uint64_t n = st->left < GSV_RESERVE_STEP ? st->left : GSV_RESERVE_STEP;
    unsigned long long before;
    if (n && add_memory(st->s, n, &before) != 0) return refuse_memory(st->s, st->c, n, 0, before, e);
    st->left -= n;
    st->job->held_bytes += n;
    /* Fragment headers are counted in the head's figure; past the bulk the reader
     * still takes them and the message's end. */
    r->credit_to = r->consumed + (n ? n : GSV_RESERVE_STEP);
    return GRID_OK;
}

int gsv_limits_read_call(gsv_server *s, gsv_conn *c, gsv_job *job, gr_err *e) {
    grm_call *call = &job->call;
    uint64_t bulk = grp_call_bulk_bytes(call), arrays = grp_call_array_bytes(call);
    /* Everything the call holds until its result has been written: its head, every
     * array (OUT and WORK ones too, allocated before it runs) and what arrives. */
    uint64_t rest = arrays > bulk ? arrays - bulk : 0;
    uint64_t now = c->r.consumed + rest, first = bulk < GSV_RESERVE_STEP ? bulk : GSV_RESERVE_STEP;
    int rc = gsv_limits_admit(s, c, job, now + first, now + bulk, e);
    if (rc) return rc;
    /* The whole bulk may take its time at the floor rate, but a stall of --io-timeout
     * drops the connection (and the call's hold with it). */
    c->r.deadline_ns = gsv_io_deadline(s, bulk);
    c->r.idle_ns = (long long)(s->opt.io_timeout * 1e9);
    stepper st = {s, c, job, bulk - first};
    c->r.credit = reserve_step;
    c->r.credit_arg = &st;
    c->r.credit_to = c->r.consumed + first;
    rc = grp_read_call_bulk(&c->r, call, e);
    c->r.credit = NULL;
    c->r.credit_arg = NULL;
    c->r.idle_ns = 0;
    return rc;
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

void gsv_limits_name_array(gr_err *e) {
    /* The descriptor layer's words for an array past the limit it was given, which the
     * server gives as --max-array: it cannot name the option, the server can. */
    if (e->code != GRID_ERR_LIMIT || !strstr(e->msg, "elements of") || !strstr(e->msg, "exceed the limit of"))
        return;
    size_t n = strlen(e->msg);
    snprintf(
        e->msg + n, sizeof e->msg - n,
        " (this server's --max-array): send less per call, or ask its administrator to raise --max-array");
}
