/* grp_meta.c: encoders and decoders of the metaserver's messages (REGISTER, HEARTBEAT,
 * SCHEDULE, REPORT, SERVERS and their replies) and of the bandwidth probe. Bodies are
 * laid out in docs/protocol.md; every count, string and enum value is bounded here. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "grp_meta.h"

static const char *const policy_names[GRP_POLICY_COUNT] = {"default", "mct", "least-load", "round-robin"};

const char *grp_policy_name(uint32_t policy) {
    return policy < GRP_POLICY_COUNT ? policy_names[policy] : NULL;
}

int grp_policy_parse(const char *name) {
    for (int i = 0; i < GRP_POLICY_COUNT; i++)
        if (strcmp(name, policy_names[i]) == 0) return i;
    return -1;
}

/* XDR double: IEEE 754 bits, big-endian, as an unsigned hyper. */
static int write_double(grw_writer *w, double v, gr_err *e) {
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    return grw_write_u64(w, bits, e);
}

/* Reads a double that must be finite and >= 0 (rates, times, loads). */
static int read_measure(grw_reader *r, double *v, const char *what, gr_err *e) {
    uint64_t bits;
    int rc = grw_read_u64(r, &bits, e);
    if (rc) return rc;
    memcpy(v, &bits, sizeof bits);
    if (!isfinite(*v) || *v < 0)
        return gr_seterr(e, GRID_ERR_PROTOCOL, "the peer sent %s %g; it must be a finite number >= 0", what,
                         *v);
    return GRID_OK;
}

/* Refuses a count that exceeds MAX or that the rest of the message cannot hold at
 * MIN_BYTES an entry, before anything is allocated for it. */
static int check_count(const grw_reader *r, uint32_t n, uint32_t max, uint32_t min_bytes, const char *what,
                       gr_err *e) {
    if (n > max) return gr_seterr(e, GRID_ERR_LIMIT, "%u %s exceed the limit of %u", n, what, max);
    if ((uint64_t)n * min_bytes > r->max_message - r->consumed)
        return gr_seterr(e, GRID_ERR_PROTOCOL, "%u %s cannot fit the message", n, what);
    return GRID_OK;
}

static int check_port(uint32_t port, gr_err *e) {
    if (port == 0 || port > 65535)
        return gr_seterr(e, GRID_ERR_PROTOCOL, "the peer sent port %u; a port is 1..65535", port);
    return GRID_OK;
}

/* ---------------------------------------------------------------- REGISTER */

int grp_write_register(grw_writer *w, uint64_t id, const grp_register *m, gr_err *e) {
    if (m->nfunctions > GRP_MAX_FUNCTIONS)
        return gr_seterr(e, GRID_ERR_LIMIT, "%u functions exceed REGISTER's limit of %u", m->nfunctions,
                         GRP_MAX_FUNCTIONS);
    int rc = grw_begin(w, GRP_REGISTER, 0, id, e);
    if (!rc) rc = grw_write_string(w, m->name, e);
    if (!rc) rc = grw_write_string(w, m->host, e);
    if (!rc) rc = grw_write_u32(w, m->port, e);
    if (!rc) rc = grw_write_u32(w, m->cores, e);
    if (!rc) rc = grw_write_u32(w, m->workers, e);
    if (!rc) rc = write_double(w, m->speed, e);
    if (!rc) rc = grw_write_u32(w, m->nfunctions, e);
    for (uint32_t i = 0; i < m->nfunctions && !rc; i++) {
        rc = grw_write_string(w, m->functions[i].name, e);
        if (!rc) rc = grw_write_u64(w, m->functions[i].hash, e);
        if (!rc) rc = grw_write_u32(w, m->functions[i].flags, e);
    }
    if (!rc) rc = grw_finish(w, e);
    return rc;
}

void grp_register_free(grp_register *m) {
    free(m->functions);
    m->functions = NULL;
    m->nfunctions = 0;
}

int grp_read_register(grw_reader *r, grp_register *m, gr_err *e) {
    m->functions = NULL;
    m->nfunctions = 0;
    uint32_t n = 0;
    int rc = grw_read_string_buf(r, m->name, GRP_MAX_PEER_NAME, e);
    if (!rc) rc = grw_read_string_buf(r, m->host, GRP_MAX_HOST, e);
    if (!rc) rc = grw_read_u32(r, &m->port, e);
    if (!rc) rc = check_port(m->port, e);
    if (!rc) rc = grw_read_u32(r, &m->cores, e);
    if (!rc) rc = grw_read_u32(r, &m->workers, e);
    if (!rc) rc = read_measure(r, &m->speed, "a speed of", e);
    if (!rc) rc = grw_read_u32(r, &n, e);
    /* an entry: an empty string (4), a hash (8), flags (4) */
    if (!rc) rc = check_count(r, n, GRP_MAX_FUNCTIONS, 16, "functions", e);
    if (rc) return rc;
    if (!m->host[0]) return gr_seterr(e, GRID_ERR_PROTOCOL, "REGISTER names no host for clients to use");
    m->functions = calloc(n ? n : 1, sizeof *m->functions);
    if (!m->functions) return gr_seterr(e, GRID_ERR_NOMEM, "out of memory for %u functions", n);
    for (uint32_t i = 0; i < n && !rc; i++) {
        grp_function *f = &m->functions[i];
        rc = grw_read_string_buf(r, f->name, GRP_MAX_FUNCTION_NAME, e);
        if (!rc) rc = grw_read_u64(r, &f->hash, e);
        if (!rc) rc = grw_read_u32(r, &f->flags, e);
        if (!rc && (f->flags & ~GRP_FN_NO_RETRY))
            rc = gr_seterr(e, GRID_ERR_PROTOCOL, "function '%s' has unknown flags 0x%x", f->name, f->flags);
        if (!rc && !f->name[0])
            rc = gr_seterr(e, GRID_ERR_PROTOCOL, "REGISTER lists a function with no name");
    }
    if (!rc) rc = grw_end(r, e);
    if (rc) {
        grp_register_free(m);
        return rc;
    }
    m->nfunctions = n;
    return GRID_OK;
}

int grp_write_register_ok(grw_writer *w, uint64_t id, const grp_register_ok *m, gr_err *e) {
    int rc = grw_begin(w, GRP_REGISTER_OK, 0, id, e);
    if (!rc) rc = grw_write_u64(w, m->server_id, e);
    if (!rc) rc = grw_write_u32(w, m->heartbeat_ms, e);
    if (!rc) rc = grw_finish(w, e);
    return rc;
}

int grp_read_register_ok(grw_reader *r, grp_register_ok *m, gr_err *e) {
    int rc = grw_read_u64(r, &m->server_id, e);
    if (!rc) rc = grw_read_u32(r, &m->heartbeat_ms, e);
    if (!rc) rc = grw_end(r, e);
    if (!rc && m->server_id == 0) rc = gr_seterr(e, GRID_ERR_PROTOCOL, "the metaserver gave server id 0");
    if (!rc && (m->heartbeat_ms < 10 || m->heartbeat_ms > 3600000))
        rc = gr_seterr(e, GRID_ERR_PROTOCOL, "the metaserver asked for a heartbeat every %u ms (10..3600000)",
                       m->heartbeat_ms);
    return rc;
}

/* ---------------------------------------------------------------- HEARTBEAT */

int grp_write_heartbeat(grw_writer *w, uint64_t id, const grp_heartbeat *m, gr_err *e) {
    int rc = grw_begin(w, GRP_HEARTBEAT, 0, id, e);
    if (!rc) rc = grw_write_u64(w, m->server_id, e);
    if (!rc) rc = grw_write_u32(w, m->running, e);
    if (!rc) rc = grw_write_u32(w, m->queued, e);
    if (!rc) rc = grw_write_u32(w, m->workers, e);
    if (!rc) rc = grw_write_u32(w, m->cores, e);
    if (!rc) rc = write_double(w, m->loadavg, e);
    if (!rc) rc = grw_write_u64(w, m->calls_done, e);
    if (!rc) rc = write_double(w, m->work_s, e);
    if (!rc) rc = grw_finish(w, e);
    return rc;
}

int grp_read_heartbeat(grw_reader *r, grp_heartbeat *m, gr_err *e) {
    int rc = grw_read_u64(r, &m->server_id, e);
    if (!rc) rc = grw_read_u32(r, &m->running, e);
    if (!rc) rc = grw_read_u32(r, &m->queued, e);
    if (!rc) rc = grw_read_u32(r, &m->workers, e);
    if (!rc) rc = grw_read_u32(r, &m->cores, e);
    if (!rc) rc = read_measure(r, &m->loadavg, "a load average of", e);
    if (!rc) rc = grw_read_u64(r, &m->calls_done, e);
    if (!rc) rc = read_measure(r, &m->work_s, "an outstanding work (seconds) of", e);
    if (!rc) rc = grw_end(r, e);
    return rc;
}

/* ---------------------------------------------------------------- SCHEDULE */

int grp_write_schedule(grw_writer *w, uint64_t id, const grp_schedule *m, gr_err *e) {
    if (m->nexclude > GRP_MAX_EXCLUDE)
        return gr_seterr(e, GRID_ERR_LIMIT, "%u excluded servers exceed the limit of %u", m->nexclude,
                         GRP_MAX_EXCLUDE);
    if (m->naffinity > GRP_MAX_AFFINITY)
        return gr_seterr(e, GRID_ERR_LIMIT, "%u affinity entries exceed the limit of %u", m->naffinity,
                         GRP_MAX_AFFINITY);
    int rc = grw_begin(w, GRP_SCHEDULE, 0, id, e);
    if (!rc) rc = grw_write_string(w, m->function, e);
    if (!rc) rc = grw_write_string(w, m->site, e);
    if (!rc) rc = grw_write_u32(w, m->policy, e);
    if (!rc) rc = grw_write_u64(w, m->bytes_in, e);
    if (!rc) rc = grw_write_u64(w, m->bytes_out, e);
    if (!rc) rc = write_double(w, m->flops, e);
    if (!rc) rc = grw_write_u32(w, m->nexclude, e);
    for (uint32_t i = 0; i < m->nexclude && !rc; i++)
        rc = grw_write_u64(w, m->exclude[i], e);
    if (!rc) rc = grw_write_u32(w, m->naffinity, e);
    for (uint32_t i = 0; i < m->naffinity && !rc; i++) {
        rc = grw_write_u64(w, m->affinity[i].server_id, e);
        if (!rc) rc = grw_write_u64(w, m->affinity[i].bytes, e);
    }
    if (!rc) rc = grw_finish(w, e);
    return rc;
}

int grp_read_schedule(grw_reader *r, grp_schedule *m, gr_err *e) {
    m->nexclude = 0;
    m->naffinity = 0;
    uint32_t n = 0, na = 0;
    int rc = grw_read_string_buf(r, m->function, GRP_MAX_FUNCTION_NAME, e);
    if (!rc) rc = grw_read_string_buf(r, m->site, GRP_MAX_SITE, e);
    if (!rc) rc = grw_read_u32(r, &m->policy, e);
    if (!rc && m->policy >= GRP_POLICY_COUNT)
        rc = gr_seterr(e, GRID_ERR_PROTOCOL, "unknown scheduling policy %u (0..%d)", m->policy,
                       GRP_POLICY_COUNT - 1);
    if (!rc) rc = grw_read_u64(r, &m->bytes_in, e);
    if (!rc) rc = grw_read_u64(r, &m->bytes_out, e);
    if (!rc) rc = read_measure(r, &m->flops, "a flop count of", e);
    if (!rc) rc = grw_read_u32(r, &n, e);
    if (!rc) rc = check_count(r, n, GRP_MAX_EXCLUDE, 8, "excluded servers", e);
    for (uint32_t i = 0; i < n && !rc; i++)
        rc = grw_read_u64(r, &m->exclude[i], e);
    if (!rc) rc = grw_read_u32(r, &na, e);
    if (!rc) rc = check_count(r, na, GRP_MAX_AFFINITY, 16, "affinity entries", e);
    for (uint32_t i = 0; i < na && !rc; i++) {
        rc = grw_read_u64(r, &m->affinity[i].server_id, e);
        if (!rc) rc = grw_read_u64(r, &m->affinity[i].bytes, e);
        if (!rc && m->affinity[i].server_id == 0)
            rc = gr_seterr(e, GRID_ERR_PROTOCOL, "SCHEDULE affinity entry %u names server 0", i);
        if (!rc && m->affinity[i].bytes > m->bytes_in)
            rc =
                gr_seterr(e, GRID_ERR_PROTOCOL,
                          "SCHEDULE affinity entry %u says server %llu holds %llu bytes of a call that sends "
                          "%llu",
                          i, (unsigned long long)m->affinity[i].server_id,
                          (unsigned long long)m->affinity[i].bytes, (unsigned long long)m->bytes_in);
    }
    if (!rc) rc = grw_end(r, e);
    if (!rc && !m->function[0]) rc = gr_seterr(e, GRID_ERR_PROTOCOL, "SCHEDULE names no function");
    if (!rc) m->nexclude = n;
    if (!rc) m->naffinity = na;
    return rc;
}

int grp_write_schedule_ok(grw_writer *w, uint64_t id, const grp_schedule_ok *m, gr_err *e) {
    int rc = grw_begin(w, GRP_SCHEDULE_OK, 0, id, e);
    if (!rc) rc = grw_write_u64(w, m->decision, e);
    if (!rc) rc = grw_write_u64(w, m->server_id, e);
    if (!rc) rc = grw_write_string(w, m->host, e);
    if (!rc) rc = grw_write_u32(w, m->port, e);
    if (!rc) rc = write_double(w, m->estimate, e);
    if (!rc) rc = grw_finish(w, e);
    return rc;
}

int grp_read_schedule_ok(grw_reader *r, grp_schedule_ok *m, gr_err *e) {
    int rc = grw_read_u64(r, &m->decision, e);
    if (!rc) rc = grw_read_u64(r, &m->server_id, e);
    if (!rc) rc = grw_read_string_buf(r, m->host, GRP_MAX_HOST, e);
    if (!rc) rc = grw_read_u32(r, &m->port, e);
    if (!rc) rc = check_port(m->port, e);
    if (!rc) rc = read_measure(r, &m->estimate, "an estimate of", e);
    if (!rc) rc = grw_end(r, e);
    if (!rc && !m->host[0]) rc = gr_seterr(e, GRID_ERR_PROTOCOL, "SCHEDULE_OK names no host");
    return rc;
}

/* ---------------------------------------------------------------- REPORT */

int grp_write_report(grw_writer *w, uint64_t id, const grp_report *m, gr_err *e) {
    int rc = grw_begin(w, GRP_REPORT, 0, id, e);
    if (!rc) rc = grw_write_u64(w, m->decision, e);
    if (!rc) rc = grw_write_u64(w, m->server_id, e);
    if (!rc) rc = grw_write_i32(w, m->code, e);
    if (!rc) rc = grw_write_string(w, m->function, e);
    if (!rc) rc = grw_write_string(w, m->site, e);
    if (!rc) rc = grw_write_u64(w, m->bytes_in, e);
    if (!rc) rc = grw_write_u64(w, m->bytes_out, e);
    if (!rc) rc = grw_write_u64(w, m->total_ns, e);
    if (!rc) rc = grw_write_u64(w, m->queue_ns, e);
    if (!rc) rc = grw_write_u64(w, m->run_ns, e);
    if (!rc) rc = write_double(w, m->flops, e);
    if (!rc) rc = grw_finish(w, e);
    return rc;
}

int grp_read_report(grw_reader *r, grp_report *m, gr_err *e) {
    uint32_t code = 0;
    int rc = grw_read_u64(r, &m->decision, e);
    if (!rc) rc = grw_read_u64(r, &m->server_id, e);
    if (!rc) rc = grw_read_u32(r, &code, e);
    if (!rc) rc = grw_read_string_buf(r, m->function, GRP_MAX_FUNCTION_NAME, e);
    if (!rc) rc = grw_read_string_buf(r, m->site, GRP_MAX_SITE, e);
    if (!rc) rc = grw_read_u64(r, &m->bytes_in, e);
    if (!rc) rc = grw_read_u64(r, &m->bytes_out, e);
    if (!rc) rc = grw_read_u64(r, &m->total_ns, e);
    if (!rc) rc = grw_read_u64(r, &m->queue_ns, e);
    if (!rc) rc = grw_read_u64(r, &m->run_ns, e);
    if (!rc) rc = read_measure(r, &m->flops, "a flop count of", e);
    if (!rc) rc = grw_end(r, e);
    if (rc) return rc;
    m->code = (int32_t)code;
    if (m->code < GRID_OK || m->code >= GRID_ERROR_COUNT_NP)
        return gr_seterr(e, GRID_ERR_PROTOCOL, "REPORT carries unknown result code %d", m->code);
    return GRID_OK;
}

/* ---------------------------------------------------------------- UNREGISTER */

int grp_write_unregister(grw_writer *w, uint64_t id, uint64_t server_id, gr_err *e) {
    int rc = grw_begin(w, GRP_UNREGISTER, 0, id, e);
    if (!rc) rc = grw_write_u64(w, server_id, e);
    if (!rc) rc = grw_finish(w, e);
    return rc;
}

int grp_read_unregister(grw_reader *r, uint64_t *server_id, gr_err *e) {
    int rc = grw_read_u64(r, server_id, e);
    if (!rc) rc = grw_end(r, e);
    return rc;
}

/* ---------------------------------------------------------------- CRASHED, HOLDS */

int grp_write_crashed(grw_writer *w, uint64_t id, const grp_crashed *m, gr_err *e) {
    int rc = grw_begin(w, GRP_CRASHED, 0, id, e);
    if (!rc) rc = grw_write_u64(w, m->server_id, e);
    if (!rc) rc = grw_write_string(w, m->function, e);
    if (!rc) rc = grw_write_string(w, m->what, e);
    if (!rc) rc = grw_finish(w, e);
    return rc;
}

int grp_read_crashed(grw_reader *r, grp_crashed *m, gr_err *e) {
    int rc = grw_read_u64(r, &m->server_id, e);
    if (!rc) rc = grw_read_string_buf(r, m->function, GRP_MAX_FUNCTION_NAME, e);
    if (!rc && !m->function[0]) rc = gr_seterr(e, GRID_ERR_PROTOCOL, "CRASHED names no function");
    if (!rc) rc = grw_read_string_buf(r, m->what, GRP_MAX_CRASH_WHAT, e);
    if (!rc) rc = grw_end(r, e);
    return rc;
}

int grp_write_holds_ok(grw_writer *w, uint64_t id, const grp_hold *v, uint32_t count, gr_err *e) {
    if (count > GRP_MAX_HOLDS)
        return gr_seterr(e, GRID_ERR_LIMIT, "%u held functions exceed HOLDS_OK's limit of %u", count,
                         GRP_MAX_HOLDS);
    int rc = grw_begin(w, GRP_HOLDS_OK, 0, id, e);
    if (!rc) rc = grw_write_u32(w, count, e);
    for (uint32_t i = 0; i < count && !rc; i++) {
        rc = grw_write_string(w, v[i].function, e);
        if (!rc) rc = grw_write_u64(w, v[i].left_ms, e);
        if (!rc) rc = grw_write_u64(w, v[i].until_unix_ms, e);
        if (!rc) rc = grw_write_string(w, v[i].servers, e);
        if (!rc) rc = grw_write_string(w, v[i].what, e);
    }
    if (!rc) rc = grw_finish(w, e);
    return rc;
}

int grp_read_holds_ok(grw_reader *r, grp_hold **v, uint32_t *count, gr_err *e) {
    *v = NULL;
    *count = 0;
    uint32_t n;
    int rc = grw_read_u32(r, &n, e);
    /* an entry is at least 28 bytes: three empty strings and two numbers */
    if (!rc) rc = check_count(r, n, GRP_MAX_HOLDS, 28, "held functions", e);
    if (rc) return rc;
    grp_hold *h = calloc(n ? n : 1, sizeof *h);
    if (!h) return gr_seterr(e, GRID_ERR_NOMEM, "out of memory for %u held functions", n);
    for (uint32_t i = 0; i < n && !rc; i++) {
        rc = grw_read_string_buf(r, h[i].function, GRP_MAX_FUNCTION_NAME, e);
        if (!rc) rc = grw_read_u64(r, &h[i].left_ms, e);
        if (!rc) rc = grw_read_u64(r, &h[i].until_unix_ms, e);
        if (!rc) rc = grw_read_string_buf(r, h[i].servers, GRP_MAX_HOLD_SERVERS, e);
        if (!rc) rc = grw_read_string_buf(r, h[i].what, GRP_MAX_CRASH_WHAT, e);
    }
    if (!rc) rc = grw_end(r, e);
    if (rc) {
        free(h);
        return rc;
    }
    *v = h;
    *count = n;
    return GRID_OK;
}

/* ---------------------------------------------------------------- SERVERS */

int grp_write_servers(grw_writer *w, uint64_t id, const char *site, gr_err *e) {
    int rc = grw_begin(w, GRP_SERVERS, 0, id, e);
    if (!rc) rc = grw_write_string(w, site, e);
    if (!rc) rc = grw_finish(w, e);
    return rc;
}

int grp_read_servers(grw_reader *r, char site[GRP_MAX_SITE + 1], gr_err *e) {
    int rc = grw_read_string_buf(r, site, GRP_MAX_SITE, e);
    if (!rc) rc = grw_end(r, e);
    return rc;
}

int grp_write_servers_ok(grw_writer *w, uint64_t id, const grp_server_info *v, uint32_t count, gr_err *e) {
    if (count > GRP_MAX_SERVERS)
        return gr_seterr(e, GRID_ERR_LIMIT, "%u servers exceed SERVERS_OK's limit of %u", count,
                         GRP_MAX_SERVERS);
    int rc = grw_begin(w, GRP_SERVERS_OK, 0, id, e);
    if (!rc) rc = grw_write_u32(w, count, e);
    for (uint32_t i = 0; i < count && !rc; i++) {
        const grp_server_info *s = &v[i];
        if (s->nfunctions > GRP_MAX_FUNCTIONS)
            return gr_seterr(e, GRID_ERR_LIMIT, "server %s lists %u functions; the limit is %u", s->name,
                             s->nfunctions, GRP_MAX_FUNCTIONS);
        rc = grw_write_u64(w, s->id, e);
        if (!rc) rc = grw_write_string(w, s->name, e);
        if (!rc) rc = grw_write_string(w, s->host, e);
        if (!rc) rc = grw_write_u32(w, s->port, e);
        if (!rc) rc = grw_write_u32(w, s->state, e);
        if (!rc) rc = grw_write_u32(w, s->cores, e);
        if (!rc) rc = grw_write_u32(w, s->workers, e);
        if (!rc) rc = grw_write_u32(w, s->running, e);
        if (!rc) rc = grw_write_u32(w, s->queued, e);
        if (!rc) rc = grw_write_u32(w, s->pending, e);
        if (!rc) rc = write_double(w, s->loadavg, e);
        if (!rc) rc = write_double(w, s->speed, e);
        if (!rc) rc = write_double(w, s->bandwidth, e);
        if (!rc) rc = write_double(w, s->latency, e);
        if (!rc) rc = grw_write_u64(w, s->beat_age_ms, e);
        if (!rc) rc = grw_write_u64(w, s->calls, e);
        if (!rc) rc = grw_write_u64(w, s->failures, e);
        if (!rc) rc = grw_write_u32(w, s->nfunctions, e);
        for (uint32_t j = 0; j < s->nfunctions && !rc; j++)
            rc = grw_write_string(w, s->functions[j], e);
    }
    if (!rc) rc = grw_finish(w, e);
    return rc;
}

void grp_servers_free(grp_server_info *v, uint32_t count) {
    if (!v) return;
    for (uint32_t i = 0; i < count; i++) {
        for (uint32_t j = 0; j < v[i].nfunctions; j++)
            free(v[i].functions[j]);
        free(v[i].functions);
    }
    free(v);
}

static int read_server_info(grw_reader *r, grp_server_info *s, gr_err *e) {
    uint32_t n = 0;
    int rc = grw_read_u64(r, &s->id, e);
    if (!rc) rc = grw_read_string_buf(r, s->name, GRP_MAX_PEER_NAME, e);
    if (!rc) rc = grw_read_string_buf(r, s->host, GRP_MAX_HOST, e);
    if (!rc) rc = grw_read_u32(r, &s->port, e);
    if (!rc) rc = check_port(s->port, e);
    if (!rc) rc = grw_read_u32(r, &s->state, e);
    if (!rc && s->state > GRP_SERVER_UP)
        rc = gr_seterr(e, GRID_ERR_PROTOCOL, "server %s has unknown state %u", s->name, s->state);
    if (!rc) rc = grw_read_u32(r, &s->cores, e);
    if (!rc) rc = grw_read_u32(r, &s->workers, e);
    if (!rc) rc = grw_read_u32(r, &s->running, e);
    if (!rc) rc = grw_read_u32(r, &s->queued, e);
    if (!rc) rc = grw_read_u32(r, &s->pending, e);
    if (!rc) rc = read_measure(r, &s->loadavg, "a load average of", e);
    if (!rc) rc = read_measure(r, &s->speed, "a speed of", e);
    if (!rc) rc = read_measure(r, &s->bandwidth, "a bandwidth of", e);
    if (!rc) rc = read_measure(r, &s->latency, "a latency of", e);
    if (!rc) rc = grw_read_u64(r, &s->beat_age_ms, e);
    if (!rc) rc = grw_read_u64(r, &s->calls, e);
    if (!rc) rc = grw_read_u64(r, &s->failures, e);
    if (!rc) rc = grw_read_u32(r, &n, e);
    if (!rc) rc = check_count(r, n, GRP_MAX_FUNCTIONS, 4, "functions", e);
    if (rc) return rc;
    s->functions = calloc(n ? n : 1, sizeof *s->functions);
    if (!s->functions) return gr_seterr(e, GRID_ERR_NOMEM, "out of memory for %u functions", n);
    for (uint32_t j = 0; j < n && !rc; j++) {
        rc = grw_read_string(r, GRP_MAX_FUNCTION_NAME, &s->functions[j], e);
        if (!rc) s->nfunctions = j + 1;
    }
    return rc;
}

int grp_read_servers_ok(grw_reader *r, grp_server_info **v, uint32_t *count, gr_err *e) {
    *v = NULL;
    *count = 0;
    uint32_t n;
    int rc = grw_read_u32(r, &n, e);
    /* an entry is at least 120 bytes (ids, empty strings, numbers) */
    if (!rc) rc = check_count(r, n, GRP_MAX_SERVERS, 120, "servers", e);
    if (rc) return rc;
    grp_server_info *s = calloc(n ? n : 1, sizeof *s);
    if (!s) return gr_seterr(e, GRID_ERR_NOMEM, "out of memory for %u servers", n);
    uint32_t i = 0;
    for (; i < n && !rc; i++)
        rc = read_server_info(r, &s[i], e);
    if (!rc) rc = grw_end(r, e);
    if (rc) {
        grp_servers_free(s, i);
        return rc;
    }
    *v = s;
    *count = n;
    return GRID_OK;
}

/* ---------------------------------------------------------------- PROBE */

static int write_zeros(grw_writer *w, uint32_t len, gr_err *e) {
    static const uint8_t zeros[65536];
    int rc = grw_write_u32(w, len, e);
    for (uint32_t left = len; left && !rc;) {
        uint32_t n = left < sizeof zeros ? left : (uint32_t)sizeof zeros;
        rc = grw_write(w, zeros, n, e);
        left -= n;
    }
    static const uint8_t pad[4];
    if (!rc && (len & 3)) rc = grw_write(w, pad, 4 - (len & 3), e);
    return rc;
}

static int read_discard(grw_reader *r, uint32_t *len, gr_err *e) {
    int rc = grw_read_u32(r, len, e);
    if (!rc && *len > GRP_MAX_PROBE)
        return gr_seterr(e, GRID_ERR_LIMIT, "a probe of %u bytes exceeds the limit of %u", *len,
                         GRP_MAX_PROBE);
    uint8_t buf[16384];
    uint32_t left = (*len + 3) & ~3u;
    while (left && !rc) {
        uint32_t n = left < sizeof buf ? left : (uint32_t)sizeof buf;
        rc = grw_read(r, buf, n, e);
        left -= n;
    }
    return rc;
}

int grp_write_probe(grw_writer *w, uint64_t id, uint32_t len, uint32_t reply, gr_err *e) {
    if (len > GRP_MAX_PROBE || reply > GRP_MAX_PROBE)
        return gr_seterr(e, GRID_ERR_LIMIT, "a probe moves at most %u bytes each way", GRP_MAX_PROBE);
    int rc = grw_begin(w, GRP_PROBE, 0, id, e);
    if (!rc) rc = grw_write_u32(w, reply, e);
    if (!rc) rc = write_zeros(w, len, e);
    if (!rc) rc = grw_finish(w, e);
    return rc;
}

int grp_read_probe(grw_reader *r, uint32_t *len, uint32_t *reply, gr_err *e) {
    int rc = grw_read_u32(r, reply, e);
    if (!rc && *reply > GRP_MAX_PROBE)
        return gr_seterr(e, GRID_ERR_LIMIT, "a probe asked for %u bytes back; the limit is %u", *reply,
                         GRP_MAX_PROBE);
    if (!rc) rc = read_discard(r, len, e);
    if (!rc) rc = grw_end(r, e);
    return rc;
}

int grp_write_probe_ok(grw_writer *w, uint64_t id, uint32_t len, gr_err *e) {
    if (len > GRP_MAX_PROBE)
        return gr_seterr(e, GRID_ERR_LIMIT, "a probe moves at most %u bytes each way", GRP_MAX_PROBE);
    int rc = grw_begin(w, GRP_PROBE_OK, 0, id, e);
    if (!rc) rc = write_zeros(w, len, e);
    if (!rc) rc = grw_finish(w, e);
    return rc;
}

int grp_read_probe_ok(grw_reader *r, uint32_t *len, gr_err *e) {
    int rc = read_discard(r, len, e);
    if (!rc) rc = grw_end(r, e);
    return rc;
}
