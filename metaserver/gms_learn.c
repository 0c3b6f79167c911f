/* gms_learn.c: what the metaserver learns from REPORTs. A completed call gives the
 * server's speed for the function (flops / run time) and, from the time the call spent
 * outside the server's queue and run, its link to the client's site: a small transfer
 * measures the latency (one round trip), a large one the bandwidth once the latency is
 * taken off. A REPORT with no function is an active probe (bytes and total time only).
 * Each REPORT also ends the work counted as pending for its decision; a failure counts
 * against the server, and a refused or lost connection marks it down until it beats.
 * Every call reported (not probes, not withdrawn assignments) goes to the ring of recent
 * calls and to its function's counts on its server, for the status page. */
#include <stdio.h>
#include <string.h>

#include "gms.h"

/* Smoothed: a new sample moves the estimate by GMS_EWMA_ALPHA; the first sets it. */
static double ewma(double old, double sample, int first) {
    return first ? sample : old + GMS_EWMA_ALPHA * (sample - old);
}

static void end_pending(gms_state *st, uint64_t decision) {
    if (!decision) return;
    gms_pending *p = &st->pending[decision % GMS_PENDING_SLOTS];
    if (p->decision != decision) return;
    gms_pending_end(st, p);
}

static void learn_link(gms_state *st, gms_server *s, const char *site, uint64_t bytes, double transfer_s,
                       int64_t unix_ms) {
    if (transfer_s <= 0) return;
    uint32_t si = gms_state_site(st, site, 1);
    if (si == UINT32_MAX) return;
    gms_link *l = gms_server_link(s, si, 1);
    if (!l) return;
    if (bytes < GMS_SMALL_BYTES) {
        int first = !l->lat_samples || !gms_link_fresh(l->lat_unix_ms, unix_ms);
        l->latency = ewma(l->latency, transfer_s, first);
        l->lat_samples = first ? 1 : l->lat_samples + 1;
        l->lat_unix_ms = unix_ms;
    } else {
        double lat = l->lat_samples && gms_link_fresh(l->lat_unix_ms, unix_ms) ? l->latency : 0;
        double t = transfer_s - lat;
        /* A transfer no longer than the latency says nothing about the bandwidth. */
        if (t <= transfer_s * 0.01) return;
        int first = !l->bw_samples || !gms_link_fresh(l->bw_unix_ms, unix_ms);
        l->bandwidth = ewma(l->bandwidth, (double)bytes / t, first);
        l->bw_samples = first ? 1 : l->bw_samples + 1;
        l->bw_unix_ms = unix_ms;
    }
    gms_db_put_link(st->db, site, s->id, l);
}

/* Puts the call of M into the ring of recent calls (under st->lock; S may be NULL). */
static void remember_call(gms_state *st, const grp_report *m, const gms_server *s, const char *site,
                          int64_t unix_ms) {
    gms_call *c = &st->recent[st->nrecent++ % GMS_RECENT];
    memset(c, 0, sizeof *c);
    c->unix_ms = unix_ms;
    c->code = m->code;
    c->total_s = (double)m->total_ns / 1e9;
    c->run_s = (double)m->run_ns / 1e9;
    snprintf(c->function, sizeof c->function, "%s", m->function);
    snprintf(c->site, sizeof c->site, "%s", site);
    if (s) {
        c->server = s->id;
        c->port = s->port;
        snprintf(c->server_name, sizeof c->server_name, "%s", s->name);
        snprintf(c->host, sizeof c->host, "%s", s->host);
    }
}

void gms_state_report(gms_state *st, const grp_report *m, const char *site, long long now_ns,
                      int64_t unix_ms) {
    int marked_down = 0;
    char name[GRP_MAX_PEER_NAME + 1] = "";
    pthread_mutex_lock(&st->lock);
    end_pending(st, m->decision);
    gms_server *s = gms_state_find_id(st, m->server_id);
    if (m->code == GRID_ERR_CANCELED || m->code == GRID_ERR_AUTH) {
        /* A withdrawn assignment (the client only fetched the descriptor there, or its
         * caller cancelled), or a server that refused the client's key or token (the
         * client's credentials, not the server, failed): neither a failure of the server
         * nor a measurement. */
    } else if (m->code != GRID_OK) {
        st->failures++;
        remember_call(st, m, s, site, unix_ms);
        if (s) {
            s->failures++;
            gms_fn *f = m->function[0] ? gms_server_fn(s, m->function) : NULL;
            if (f) f->failures++;
            /* A client's word alone does not mark a server down (any client could say it of
             * any server): only when the metaserver's own evidence agrees, its heartbeat being
             * late. A server that beats on time stays up; a dead one is down at the next
             * sweep anyway (docs/security.md). */
            long long late_ns = (long long)st->heartbeat_ms * 1500000LL;
            if ((m->code == GRID_ERR_CONNECT || m->code == GRID_ERR_CONN_LOST) && s->up &&
                now_ns - s->last_beat_ns > late_ns) {
                /* Suspect until its next heartbeat says otherwise. */
                s->up = 0;
                marked_down = 1;
                snprintf(name, sizeof name, "%s", s->name);
            }
            gms_db_put_server_state(st->db, s);
        }
    } else if (s) {
        uint64_t bytes = m->bytes_in + m->bytes_out;
        if (m->function[0]) {
            s->calls++;
            st->calls++;
            remember_call(st, m, s, site, unix_ms);
            double run_s = (double)m->run_ns / 1e9;
            gms_fn *f = gms_server_fn(s, m->function);
            if (f) {
                f->calls++;
                f->total_s += (double)m->total_ns / 1e9;
                f->run_total_s += run_s;
            }
            if (run_s > 0) {
                /* Below a millisecond the run time is mostly the call's own overhead,
                 * not the flops: such a sample would drag the speed towards zero. */
                if (f && m->flops > 0 && run_s >= GMS_MIN_SPEED_RUN_S) {
                    double speed = m->flops / run_s;
                    f->speed = ewma(f->speed, speed, f->speed <= 0);
                    s->speed = ewma(s->speed, speed, s->speed <= 0);
                }
                if (f) {
                    f->run_s = ewma(f->run_s, run_s, f->samples == 0);
                    f->samples++;
                    /* What a call of it was seen to take: the bound of what a SCHEDULE may claim. */
                    if (m->flops > f->max_flops) f->max_flops = m->flops;
                    if (run_s > f->max_run_s) f->max_run_s = run_s;
                    if (m->bytes_in > f->max_bytes_in) f->max_bytes_in = m->bytes_in;
                    if (m->bytes_out > f->max_bytes_out) f->max_bytes_out = m->bytes_out;
                    gms_db_put_fn(st->db, s, f);
                }
                s->mean_call_s = ewma(s->mean_call_s, run_s, s->mean_call_s <= 0);
            }
            if (m->total_ns > m->queue_ns + m->run_ns)
                learn_link(st, s, site, bytes, (double)(m->total_ns - m->queue_ns - m->run_ns) / 1e9,
                           unix_ms);
            gms_db_put_server_state(st->db, s);
        } else {
            learn_link(st, s, site, bytes, (double)m->total_ns / 1e9, unix_ms);
        }
    }
    gms_db_put_call(st->db, m, site, unix_ms);
    pthread_mutex_unlock(&st->lock);
    if (marked_down)
        gms_log(GMS_LOG_WARN, "server %llu '%s' marked down: a client reported %s (until its next heartbeat)",
                (unsigned long long)m->server_id, name, grid_error_name(m->code));
}
