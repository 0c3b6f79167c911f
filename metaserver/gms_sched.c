/* gms_sched.c: the three schedulers, as pure functions over a snapshot of candidates
 * (no locks, no clock, no I/O), so that a decision is cheap, testable without sockets
 * and explained by the same numbers whatever the policy.
 *
 * The cost model (minimum completion time), for one call on one server:
 *   wait     = the work outstanding there / its cores;
 *              work = the server's own prediction of the calls it holds (its
 *              heartbeat's work_s: it sees calls no metaserver routed) plus the
 *              predicted seconds of calls we assigned that have not reached it yet;
 *              from a server that predicts nothing, the predicted seconds of calls we
 *              assigned (pending) plus, for calls we know only as counts from the
 *              heartbeat, the server's mean call time (or this call's own compute
 *              time, or GMS_DEFAULT_CALL_S);
 *   transfer = (bytes in - bytes of the inputs the server already holds + bytes out)
 *              / bandwidth(site, server) + latency(site, server);
 *   compute  = flops / speed(server, function), or the function's measured mean run
 *              time when the call declares no flops. */
#include <math.h>

#include "gms.h"

uint32_t gms_cand_outstanding(const gms_cand *c) {
    uint32_t rq = c->running + c->queued;
    /* A pending call that reached the server is counted by its heartbeat too: take the
     * larger, not the sum, so it is not counted twice. */
    return rq > c->pending ? rq : c->pending;
}

uint32_t gms_cand_slots(const gms_cand *c) {
    uint32_t cores = c->cores ? c->cores : 1;
    return (c->workers > cores ? c->workers : cores) + cores;
}

int gms_cand_full(const gms_cand *c) {
    return gms_cand_outstanding(c) >= gms_cand_slots(c);
}

void gms_sched_estimate(const gms_job *job, gms_cand *c) {
    double compute = 0;
    if (job->flops > 0 && c->speed > 0)
        compute = job->flops / c->speed;
    else if (c->fn_run_s > 0)
        compute = c->fn_run_s;
    double bw = c->bandwidth > 0 ? c->bandwidth : GMS_DEFAULT_BANDWIDTH;
    uint64_t in = job->bytes_in;
    /* Data affinity: the inputs the server holds already are not sent there. */
    for (uint32_t i = 0; i < job->naffinity; i++)
        if (job->affinity[i].server_id == c->id)
            in -= job->affinity[i].bytes < in ? job->affinity[i].bytes : in;
    double transfer = (double)(in + job->bytes_out) / bw + c->latency;
    uint32_t cores = c->cores ? c->cores : 1;
    uint32_t n = gms_cand_outstanding(c), held = c->running + c->queued;
    /* Every outstanding call delays this one by its share of the cores, even before all
     * are busy (gridrpcd gives a lone call every core): so a burst fills idle servers
     * first. A call that nothing predicts still counts, as GMS_DEFAULT_CALL_S. */
    double work;
    if (c->work_s > 0 || held == 0) {
        /* Calls we assigned that the server does not hold yet: those assigned since its
         * last heartbeat, or (a big upload takes longer) all beyond what it holds. */
        uint32_t beyond = c->pending > held ? c->pending - held : 0;
        double coming = c->pending ? c->pending_s * beyond / c->pending : 0;
        work = c->work_s + (c->fresh_s > coming ? c->fresh_s : coming);
    } else {
        uint32_t unknown = n - c->pending;
        double per_call = c->mean_call_s > 0 ? c->mean_call_s : compute > 0 ? compute : GMS_DEFAULT_CALL_S;
        work = c->pending_s + unknown * per_call;
    }
    double wait = work / cores;
    c->compute = compute;
    c->transfer = transfer;
    c->wait = wait;
    c->estimate = wait + transfer + compute;
}

static double load_of(const gms_cand *c) {
    return (double)gms_cand_outstanding(c) / (c->cores ? c->cores : 1);
}

/* Equal within rounding: identical servers must fall through to the tie-breaks. */
static int same(double a, double b) {
    return fabs(a - b) <= 1e-9 * (fabs(a) > fabs(b) ? fabs(a) : fabs(b)) + 1e-12;
}

/* A is better than B by load, then load average (NetSolve's order). */
static int less_loaded(const gms_cand *a, const gms_cand *b) {
    double la = load_of(a), lb = load_of(b);
    if (!same(la, lb)) return la < lb;
    return a->loadavg < b->loadavg;
}

int gms_sched_pick(int policy, const gms_job *job, gms_cand *c, size_t n, uint64_t rr) {
    if (n == 0) return -1;
    for (size_t i = 0; i < n; i++)
        gms_sched_estimate(job, &c[i]);
    size_t best = 0;
    switch (policy) {
    case GRP_POLICY_ROUND_ROBIN: return (int)(rr % n);
    case GRP_POLICY_LEAST_LOAD:
        for (size_t i = 1; i < n; i++)
            if (less_loaded(&c[i], &c[best])) best = i;
        return (int)best;
    default:
        for (size_t i = 1; i < n; i++) {
            if (same(c[i].estimate, c[best].estimate)) {
                /* Equal predictions: the less loaded one, so a burst spreads. */
                if (less_loaded(&c[i], &c[best])) best = i;
            } else if (c[i].estimate < c[best].estimate) {
                best = i;
            }
        }
        return (int)best;
    }
}
