/* grc_jobs.c: two-phase calls (grid_submit_np, grid_job_fetch_np, grid_job_state_np,
 * grid_job_forget_np). A submit is a call whose reply is a job id instead of the
 * results: it goes where grid_call would go (metaserver or configured server) and is
 * marshalled the same way. A fetch asks the job's server for the job's function
 * (JOB_INFO), builds the caller's arguments against that function's descriptor, then
 * asks for the result (FETCH) until it arrives or the wait is over; the server holds
 * each FETCH at most GRP_MAX_JOB_WAIT_S, so a long wait is several FETCHes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gr_settings.h"
#include "grc_client.h"
#include "gridrpc.h"

/* "host:port/HEX" (or a bare HEX on the configured server) split into its parts. */
typedef struct job_ref {
    char host[GRC_MAX_HOST];
    int port;
    char hex[GRP_MAX_JOB_ID + 1];
} job_ref;

static int parse_job(const char *jobid, const grc_config *cfg, job_ref *j, gr_err *e) {
    if (!jobid || !*jobid)
        return gr_seterr(e, GRID_ERR_ARGS,
                         "no job id given: pass the id grid_submit_np wrote (host:port/HEX)");
    const char *slash = strrchr(jobid, '/');
    const char *hex = slash ? slash + 1 : jobid;
    if (!grp_job_id_ok(hex))
        return gr_seterr(
            e, GRID_ERR_ARGS,
            "'%.300s' is not a job id: it is host:port/HEX, HEX being %d to %d lowercase hex digits", jobid,
            GRP_MIN_JOB_ID, GRP_MAX_JOB_ID);
    snprintf(j->hex, sizeof j->hex, "%s", hex);
    if (!slash) {
        if (!cfg->server_host[0])
            return gr_seterr(
                e, GRID_ERR_CONFIG,
                "job id '%.300s' names no server and none is configured: write it as host:port/%s", jobid,
                hex);
        snprintf(j->host, sizeof j->host, "%s", cfg->server_host);
        j->port = cfg->server_port;
        return GRID_OK;
    }
    char hp[GRC_MAX_HOST + 16], err[300];
    size_t n = (size_t)(slash - jobid);
    int tls, scheme = gr_scheme_len(jobid, &tls);
    jobid += scheme;
    n -= (size_t)scheme;
    if (n >= sizeof hp)
        return gr_seterr(e, GRID_ERR_ARGS, "job id '%.300s': the server name is too long", jobid);
    memcpy(hp, jobid, n);
    hp[n] = '\0';
    if (gr_parse_hostport(hp, 0, j->host, sizeof j->host, &j->port, err, sizeof err))
        return gr_seterr(e, GRID_ERR_ARGS, "job id '%.300s': %s", jobid, err);
    if (tls) gr_tls_endpoint_mark(j->host, j->port);
    return GRID_OK;
}

static void format_job(char *out, size_t size, const char *host, int port, const char *hex) {
    /* A TLS server's jobs keep the scheme, so another process fetches them over TLS. */
    const char *scheme = gr_tls_endpoint(host, port) ? GR_SCHEME_TLS : "";
    snprintf(out, size, strchr(host, ':') ? "%s[%s]:%d/%s" : "%s%s:%d/%s", scheme, host, port, hex);
}

/* ---------------------------------------------------------------- submit */

static int send_submit(grc_conn *c, grc_req *q, char hex[GRP_MAX_JOB_ID + 1], int *broken, gr_err *e) {
    uint64_t id = c->next_id++;
    int rc = grp_write_submit(&c->wr, id, q->t.name, q->desc->hash, q->call, &c->server, e);
    if (rc) {
        *broken = 1;
        return rc;
    }
    grw_header h;
    rc = grp_read_header(&c->rd, &h, e);
    if (!rc && h.request_id != id)
        rc = gr_seterr(e, GRID_ERR_PROTOCOL, "reply to request %llu while waiting for %llu",
                       (unsigned long long)h.request_id, (unsigned long long)id);
    if (rc) {
        *broken = 1;
        return rc;
    }
    int in_step = 0;
    rc = grp_expect(&c->rd, &h, GRP_SUBMITTED, "SUBMIT", &in_step, e);
    if (!rc) rc = grp_read_job_id(&c->rd, hex, e);
    *broken = rc == GRID_OK ? 0 : !in_step;
    return rc;
}

/* A job outlives the client's data session (its handles may be freed before the job runs
 * again after a restart), so it takes arrays only. WHAT: the API function, for the message. */
static int refuse_handles(const grc_req *q, const char *what, gr_err *e) {
    if (!q->nbind) return GRID_OK;
    for (uint32_t i = 0; i < q->desc->nparams; i++)
        if (q->bind[i].h)
            return gr_seterr(e, GRID_ERR_ARGS,
                             "%s: argument %u ('%s') of %s is a data handle; a two-phase call takes the "
                             "array itself (grid_data_get_np copies a handle's data back)",
                             what, i + 1, q->desc->params[i].name, q->t.name);
    return GRID_OK;
}

static int submit(char *jobid, size_t size, const char *name, const grc_args *args, gr_err *e) {
    if (!jobid || size == 0)
        return gr_seterr(e, GRID_ERR_ARGS,
                         "grid_submit_np: no buffer for the job id (give GRID_JOB_ID_MAX_NP bytes)");
    jobid[0] = '\0';
    grc_config cfg;
    grc_req q;
    int rc = grc_req_start(&q, name, args, &cfg, e);
    if (rc) return rc;
    rc = refuse_handles(&q, "grid_submit_np", e);
    if (rc) {
        grc_req_free(&q);
        return rc;
    }
    char hex[GRP_MAX_JOB_ID + 1] = "";
    for (;;) {
        grc_conn *c;
        rc = grc_conn_get(q.t.host, q.t.port, &cfg, &c, e);
        if (rc) {
            if (rc == GRID_ERR_TIMEOUT) e->code = rc = GRID_ERR_CONNECT;
            if (grc_req_failover(&q, rc, e) == GRID_OK) continue;
            break;
        }
        rc = grc_req_check(&q, &c->server, e);
        if (rc) {
            grc_conn_put(c, 0);
            break;
        }
        c->rd.deadline_ns = c->wr.deadline_ns = grc_config_deadline(&cfg);
        int broken = 0;
        rc = send_submit(c, &q, hex, &broken, e);
        grc_conn_put(c, broken || rc == GRID_ERR_TIMEOUT);
        if (rc == GRID_ERR_STALE) {
            if (grc_req_refresh(&q, e) == GRID_OK) continue;
            break;
        }
        /* Refused, reset or lost before SUBMITTED: the server did not keep it (it
         * answers only once the job is on disk), so another server may take it. */
        if (rc && grc_req_failover(&q, rc, e) == GRID_OK) continue;
        break;
    }
    if (!rc) {
        char full[GRID_JOB_ID_MAX_NP + GRC_MAX_HOST];
        format_job(full, sizeof full, q.t.host, q.t.port, hex);
        if (strlen(full) >= size)
            rc = gr_seterr(e, GRID_ERR_ARGS,
                           "the job was submitted as %s, but the buffer of %zu bytes cannot hold its id "
                           "(give GRID_JOB_ID_MAX_NP bytes)",
                           full, size);
        else
            memcpy(jobid, full, strlen(full) + 1);
    }
    grc_req_end(&q, rc);
    if (rc) grc_req_blame(&q, e);
    grc_req_free(&q);
    return rc;
}

/* ---------------------------------------------------------------- one exchange */

/* Sends a request about job J with WRITE and reads the reply header, on a pooled
 * connection to J's server; *out gets the connection (the caller reads the body and
 * puts it back). */
typedef int (*job_request)(grw_writer *w, uint64_t id, const job_ref *j, uint32_t wait_ms, gr_err *e);

static int req_info(grw_writer *w, uint64_t id, const job_ref *j, uint32_t wait_ms, gr_err *e) {
    (void)wait_ms;
    return grp_write_job_id(w, GRP_JOB_INFO, id, j->hex, e);
}
static int req_forget(grw_writer *w, uint64_t id, const job_ref *j, uint32_t wait_ms, gr_err *e) {
    (void)wait_ms;
    return grp_write_job_id(w, GRP_FORGET, id, j->hex, e);
}
static int req_cancel(grw_writer *w, uint64_t id, const job_ref *j, uint32_t wait_ms, gr_err *e) {
    (void)wait_ms;
    return grp_write_job_id(w, GRP_JOB_CANCEL, id, j->hex, e);
}
static int req_fetch(grw_writer *w, uint64_t id, const job_ref *j, uint32_t wait_ms, gr_err *e) {
    return grp_write_fetch(w, id, j->hex, wait_ms, e);
}

static int exchange(const job_ref *j, const grc_config *cfg, job_request send, uint32_t wait_ms,
                    grc_conn **out, grw_header *h, gr_err *e) {
    grc_conn *c;
    int rc = grc_conn_get(j->host, j->port, cfg, &c, e);
    if (rc) return rc;
    long long deadline = grc_config_deadline(cfg), held = (long long)wait_ms * 1000000LL;
    c->rd.deadline_ns = c->wr.deadline_ns = deadline ? deadline + held : 0;
    /* Even without a call timeout the answer starts within the server's hold (the wait
     * asked for, at most GRP_MAX_JOB_WAIT_S) and some slack: a server that stopped
     * answering does not hang the caller. The body is then read as a call's. */
    if (!deadline) c->rd.deadline_ns = gr_now_ns() + held + (GRP_MAX_JOB_WAIT_S + 30) * 1000000000LL;
    uint64_t id = c->next_id++;
    rc = send(&c->wr, id, j, wait_ms, e);
    if (!rc) rc = grp_read_header(&c->rd, h, e);
    if (!deadline) c->rd.deadline_ns = 0;
    if (!rc && h->request_id != id)
        rc = gr_seterr(e, GRID_ERR_PROTOCOL, "reply to request %llu while waiting for %llu",
                       (unsigned long long)h->request_id, (unsigned long long)id);
    if (rc) {
        grc_conn_put(c, 1);
        return rc;
    }
    *out = c;
    return GRID_OK;
}

/* JOB_INFO: the job's state, function and descriptor hash (the head that follows is
 * skipped: a program has its own arguments). */
static int job_info(const job_ref *j, const grc_config *cfg, grp_job *info, uint64_t *hash, gr_err *e) {
    grc_conn *c;
    grw_header h;
    int rc = exchange(j, cfg, req_info, 0, &c, &h, e);
    if (rc) return rc;
    int in_step = 0;
    rc = grp_expect(&c->rd, &h, GRP_JOB_INFO_OK, "JOB_INFO", &in_step, e);
    if (!rc) rc = grp_read_job_info_ok(&c->rd, info, hash, e);
    if (!rc) {
        gr_err se;
        in_step = grw_skip(&c->rd, &se) == GRID_OK;
    }
    grc_conn_put(c, !in_step);
    return rc;
}

/* ---------------------------------------------------------------- fetch */

static int fetch(const char *jobid, double wait_s, const grc_args *args, gr_err *e) {
    grc_config cfg;
    job_ref j;
    int rc = grc_config_get(&cfg, e);
    if (!rc) rc = parse_job(jobid, &cfg, &j, e);
    if (rc) return rc;
    if (!(wait_s >= 0) || wait_s > 1e9)
        return gr_seterr(e, GRID_ERR_ARGS, "wait of %g seconds: give 0 (ask once) or a positive number",
                         wait_s);
    char full[GRID_JOB_ID_MAX_NP + GRC_MAX_HOST];
    format_job(full, sizeof full, j.host, j.port, j.hex);
    grp_job info;
    uint64_t hash;
    rc = job_info(&j, &cfg, &info, &hash, e);
    if (rc) {
        gr_prefixerr(e, "job %s: ", full);
        return rc;
    }
    if (info.state == GRP_JOB_FAILED) {
        /* Its stored ERROR is the answer; the function may not even be served any more. */
        grc_conn *c;
        grw_header h;
        int in_step = 0;
        rc = exchange(&j, &cfg, req_fetch, 0, &c, &h, e);
        if (!rc) {
            rc = grp_expect(&c->rd, &h, GRP_RESULT, "FETCH", &in_step, e);
            if (!rc) rc = gr_seterr(e, GRID_ERR_PROTOCOL, "the server answered a failed job with its RESULT");
            grc_conn_put(c, !in_step);
        }
        gr_prefixerr(e, "job %s: ", full);
        return rc;
    }
    /* The arguments are built against the function's descriptor, as for a call. */
    grc_req q;
    memset(&q, 0, sizeof q);
    grc_route_reset(&q.route);
    snprintf(q.t.host, sizeof q.t.host, "%s", j.host);
    q.t.port = j.port;
    snprintf(q.t.name, sizeof q.t.name, "%s", info.function);
    rc = grc_descriptor(&q.t, &cfg, &q.desc, e);
    if (!rc && q.desc->hash != hash) {
        grc_cache_forget(&q.t);
        rc = grc_descriptor(&q.t, &cfg, &q.desc, e);
        if (!rc && q.desc->hash != hash)
            rc =
                gr_seterr(e, GRID_ERR_STALE,
                          "the interface of %s changed on the server since the job was submitted: its result "
                          "can only be read with the old one",
                          info.function);
    }
    if (!rc) rc = grc_req_fill(&q, args, e);
    if (!rc) rc = refuse_handles(&q, "grid_job_fetch_np", e);
    long long until = gr_now_ns() + (long long)(wait_s * 1e9);
    while (!rc) {
        long long left_ms = (until - gr_now_ns()) / 1000000;
        if (left_ms < 0) left_ms = 0;
        uint32_t wait_ms =
            left_ms > GRP_MAX_JOB_WAIT_S * 1000LL ? GRP_MAX_JOB_WAIT_S * 1000u : (uint32_t)left_ms;
        grc_conn *c;
        grw_header h;
        rc = exchange(&j, &cfg, req_fetch, wait_ms, &c, &h, e);
        if (rc) break;
        int in_step = 0;
        if (h.type == GRP_JOB_STATE) {
            rc = grp_read_job_state(&c->rd, &info, e);
            grc_conn_put(c, rc != GRID_OK);
            if (rc) break;
            if (gr_now_ns() < until) continue;
            rc = gr_seterr(e, GRID_ERR_TIMEOUT, "%s is still %s%s: fetch it again later", info.function,
                           grp_job_state_name(info.state), wait_s > 0 ? " after the wait" : "");
            break;
        }
        rc = grc_req_reply(&q, &c->rd, &h, &in_step, e);
        grc_conn_put(c, !in_step);
        break;
    }
    if (rc) gr_prefixerr(e, "job %s: ", full);
    grc_req_free(&q);
    return rc;
}

/* ---------------------------------------------------------------- public */

static int finish_api(int rc, gr_err *e) {
    e->code = rc;
    grc_report(rc, rc ? e->msg : "");
    return rc;
}

int grid_submit_counted_np(int nargs, char *jobid, size_t size, const char *name, ...) {
    gr_err e;
    gr_clearerr(&e);
    va_list ap;
    va_start(ap, name);
    grc_args args = {&ap, NULL, nargs - 1};
    int rc = submit(jobid, size, name, &args, &e);
    va_end(ap);
    return finish_api(rc, &e);
}

int grid_submit_va_np(char *jobid, size_t size, const char *name, int nargs, va_list ap) {
    gr_err e;
    gr_clearerr(&e);
    va_list aq;
    va_copy(aq, ap);
    grc_args args = {&aq, NULL, nargs < 0 ? -1 : nargs};
    int rc = submit(jobid, size, name, &args, &e);
    va_end(aq);
    return finish_api(rc, &e);
}

int grid_submit_argv_np(char *jobid, size_t size, const char *name, int nargs, void *const *argv) {
    gr_err e;
    gr_clearerr(&e);
    grc_args args = {NULL, argv, nargs};
    int rc = argv || nargs == 0
                 ? submit(jobid, size, name, &args, &e)
                 : gr_seterr(&e, GRID_ERR_ARGS, "grid_submit_argv_np: the argument vector is NULL");
    return finish_api(rc, &e);
}

int grid_job_fetch_counted_np(int nargs, const char *jobid, double wait_seconds, ...) {
    gr_err e;
    gr_clearerr(&e);
    va_list ap;
    va_start(ap, wait_seconds);
    grc_args args = {&ap, NULL, nargs - 1};
    int rc = fetch(jobid, wait_seconds, &args, &e);
    va_end(ap);
    return finish_api(rc, &e);
}

int grid_job_fetch_va_np(const char *jobid, double wait_seconds, int nargs, va_list ap) {
    gr_err e;
    gr_clearerr(&e);
    va_list aq;
    va_copy(aq, ap);
    grc_args args = {&aq, NULL, nargs < 0 ? -1 : nargs};
    int rc = fetch(jobid, wait_seconds, &args, &e);
    va_end(aq);
    return finish_api(rc, &e);
}

int grid_job_fetch_argv_np(const char *jobid, double wait_seconds, int nargs, void *const *argv) {
    gr_err e;
    gr_clearerr(&e);
    grc_args args = {NULL, argv, nargs};
    int rc = argv || nargs == 0
                 ? fetch(jobid, wait_seconds, &args, &e)
                 : gr_seterr(&e, GRID_ERR_ARGS, "grid_job_fetch_argv_np: the argument vector is NULL");
    return finish_api(rc, &e);
}

/* grid_job_info_np from the protocol's job record. */
static void info_out(const grp_job *info, grid_job_info_np *out) {
    memset(out, 0, sizeof *out);
    snprintf(out->function, sizeof out->function, "%s", info->function);
    out->state = (int)info->state;
    out->code = info->code;
    out->submitted = (double)info->submitted_ms / 1000;
    out->finished = (double)info->finished_ms / 1000;
    out->bytes_in = info->bytes_in;
    out->bytes_out = info->bytes_out;
}

int grid_job_state_np(const char *jobid, grid_job_info_np *out) {
    gr_err e;
    gr_clearerr(&e);
    grc_config cfg;
    job_ref j;
    grp_job info;
    uint64_t hash;
    int rc = grc_config_get(&cfg, &e);
    if (!rc) rc = parse_job(jobid, &cfg, &j, &e);
    if (!rc) rc = job_info(&j, &cfg, &info, &hash, &e);
    if (!rc && out) info_out(&info, out);
    if (rc && jobid) gr_prefixerr(&e, "job %.300s: ", jobid);
    return finish_api(rc, &e);
}

int grid_job_cancel_np(const char *jobid, grid_job_info_np *out) {
    gr_err e;
    gr_clearerr(&e);
    grc_config cfg;
    job_ref j;
    grp_job info;
    int rc = grc_config_get(&cfg, &e);
    if (!rc) rc = parse_job(jobid, &cfg, &j, &e);
    grc_conn *c;
    grw_header h;
    if (!rc) rc = exchange(&j, &cfg, req_cancel, 0, &c, &h, &e);
    if (!rc) {
        int in_step = 0;
        rc = grp_expect(&c->rd, &h, GRP_JOB_STATE, "JOB_CANCEL", &in_step, &e);
        if (!rc) rc = grp_read_job_state(&c->rd, &info, &e);
        grc_conn_put(c, rc != GRID_OK && !in_step);
    }
    if (!rc && out) info_out(&info, out);
    if (rc && jobid) gr_prefixerr(&e, "job %.300s: ", jobid);
    return finish_api(rc, &e);
}

int grid_job_forget_np(const char *jobid) {
    gr_err e;
    gr_clearerr(&e);
    grc_config cfg;
    job_ref j;
    int rc = grc_config_get(&cfg, &e);
    if (!rc) rc = parse_job(jobid, &cfg, &j, &e);
    grc_conn *c;
    grw_header h;
    if (!rc) rc = exchange(&j, &cfg, req_forget, 0, &c, &h, &e);
    if (!rc) {
        int in_step = 0;
        rc = grp_expect(&c->rd, &h, GRP_FORGOTTEN, "FORGET", &in_step, &e);
        if (!rc) rc = grp_read_empty(&c->rd, &e);
        grc_conn_put(c, rc != GRID_OK && !in_step);
    }
    if (rc && jobid) gr_prefixerr(&e, "job %.300s: ", jobid);
    return finish_api(rc, &e);
}
