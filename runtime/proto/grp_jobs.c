/* grp_jobs.c: the messages of two-phase calls (docs/protocol.md, "Jobs"): SUBMIT (a CALL
 * the server keeps on disk), SUBMITTED, FETCH, JOB_STATE, JOBS, JOBS_OK, FORGET,
 * FORGOTTEN, JOB_INFO and JOB_INFO_OK. A job id is checked to be 16 to 64 lowercase hex
 * digits wherever it is read, so it can name a file in the server's job folder as is. */
#include <stdlib.h>
#include <string.h>

#include "grp_proto.h"

int grp_job_id_ok(const char *id) {
    size_t n = strlen(id);
    if (n < GRP_MIN_JOB_ID || n > GRP_MAX_JOB_ID) return 0;
    for (size_t i = 0; i < n; i++)
        if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f'))) return 0;
    return 1;
}

const char *grp_job_state_name(uint32_t state) {
    switch (state) {
    case GRP_JOB_QUEUED: return "queued";
    case GRP_JOB_RUNNING: return "running";
    case GRP_JOB_DONE: return "done";
    case GRP_JOB_FAILED: return "failed";
    }
    return "?";
}

static int check_id(const char *job, gr_err *e) {
    if (grp_job_id_ok(job)) return GRID_OK;
    return gr_seterr(e, GRID_ERR_PROTOCOL, "a job id must be %d to %d lowercase hex digits, not '%.80s'",
                     GRP_MIN_JOB_ID, GRP_MAX_JOB_ID, job);
}

/* ---------------------------------------------------------------- SUBMIT */

int grp_write_submit(grw_writer *w, uint64_t id, const char *name, uint64_t hash, const grm_call *c,
                     const grw_limits *lim, gr_err *e) {
    return grp_write_call_as(w, GRP_SUBMIT, id, name, hash, c, lim, e);
}

/* ---------------------------------------------------------------- job ids */

int grp_write_job_id(grw_writer *w, uint32_t type, uint64_t id, const char *job, gr_err *e) {
    int rc = check_id(job, e);
    if (!rc) rc = grw_begin(w, type, 0, id, e);
    if (!rc) rc = grw_write_string(w, job, e);
    if (!rc) rc = grw_finish(w, e);
    return rc;
}

static int read_id(grw_reader *r, char job[GRP_MAX_JOB_ID + 1], gr_err *e) {
    job[0] = '\0';
    int rc = grw_read_string_buf(r, job, GRP_MAX_JOB_ID, e);
    if (!rc) rc = check_id(job, e);
    return rc;
}

int grp_read_job_id(grw_reader *r, char job[GRP_MAX_JOB_ID + 1], gr_err *e) {
    int rc = read_id(r, job, e);
    if (!rc) rc = grw_end(r, e);
    return rc;
}

int grp_write_fetch(grw_writer *w, uint64_t id, const char *job, uint32_t wait_ms, gr_err *e) {
    int rc = check_id(job, e);
    if (!rc) rc = grw_begin(w, GRP_FETCH, 0, id, e);
    if (!rc) rc = grw_write_string(w, job, e);
    if (!rc) rc = grw_write_u32(w, wait_ms, e);
    if (!rc) rc = grw_finish(w, e);
    return rc;
}

int grp_read_fetch(grw_reader *r, char job[GRP_MAX_JOB_ID + 1], uint32_t *wait_ms, gr_err *e) {
    *wait_ms = 0;
    int rc = read_id(r, job, e);
    if (!rc) rc = grw_read_u32(r, wait_ms, e);
    if (!rc) rc = grw_end(r, e);
    return rc;
}

/* ---------------------------------------------------------------- one job's state */

static int write_job(grw_writer *w, const grp_job *j, gr_err *e) {
    int rc = check_id(j->id, e);
    if (!rc && (j->state < GRP_JOB_QUEUED || j->state > GRP_JOB_FAILED))
        rc = gr_seterr(e, GRID_ERR_INTERNAL, "job state %u", j->state);
    if (!rc) rc = grw_write_string(w, j->id, e);
    if (!rc) rc = grw_write_string(w, j->function, e);
    if (!rc) rc = grw_write_u32(w, j->state, e);
    if (!rc) rc = grw_write_i32(w, j->code, e);
    if (!rc) rc = grw_write_u64(w, j->submitted_ms, e);
    if (!rc) rc = grw_write_u64(w, j->finished_ms, e);
    if (!rc) rc = grw_write_u64(w, j->bytes_in, e);
    if (!rc) rc = grw_write_u64(w, j->bytes_out, e);
    return rc;
}

/* Reads one job and checks its state and code: a failed job has an error code of
 * gridrpc.h, any other job GRID_OK. */
static int read_job(grw_reader *r, grp_job *j, gr_err *e) {
    memset(j, 0, sizeof *j);
    uint32_t code = 0;
    int rc = read_id(r, j->id, e);
    if (!rc) rc = grw_read_string_buf(r, j->function, GRP_MAX_FUNCTION_NAME, e);
    if (!rc) rc = grw_read_u32(r, &j->state, e);
    if (!rc) rc = grw_read_u32(r, &code, e);
    if (!rc) rc = grw_read_u64(r, &j->submitted_ms, e);
    if (!rc) rc = grw_read_u64(r, &j->finished_ms, e);
    if (!rc) rc = grw_read_u64(r, &j->bytes_in, e);
    if (!rc) rc = grw_read_u64(r, &j->bytes_out, e);
    if (rc) return rc;
    j->code = (int)code;
    if (j->state < GRP_JOB_QUEUED || j->state > GRP_JOB_FAILED)
        return gr_seterr(e, GRID_ERR_PROTOCOL, "job %s has an unknown state %u", j->id, j->state);
    int failed = j->state == GRP_JOB_FAILED;
    if (failed ? (j->code <= GRID_OK || j->code >= GRID_ERROR_COUNT_NP) : j->code != GRID_OK)
        return gr_seterr(e, GRID_ERR_PROTOCOL, "job %s is %s with error code %d", j->id,
                         grp_job_state_name(j->state), (int)code);
    return GRID_OK;
}

int grp_write_job_state(grw_writer *w, uint64_t id, const grp_job *j, gr_err *e) {
    int rc = grw_begin(w, GRP_JOB_STATE, 0, id, e);
    if (!rc) rc = write_job(w, j, e);
    if (!rc) rc = grw_finish(w, e);
    return rc;
}

int grp_read_job_state(grw_reader *r, grp_job *j, gr_err *e) {
    int rc = read_job(r, j, e);
    if (!rc) rc = grw_end(r, e);
    return rc;
}

/* ---------------------------------------------------------------- JOBS_OK */

int grp_write_jobs_ok(grw_writer *w, uint64_t id, const grp_job *v, uint32_t count, gr_err *e) {
    if (count > GRP_MAX_JOBS)
        return gr_seterr(e, GRID_ERR_LIMIT, "%u jobs exceed the JOBS_OK limit of %u", count, GRP_MAX_JOBS);
    int rc = grw_begin(w, GRP_JOBS_OK, 0, id, e);
    if (!rc) rc = grw_write_u32(w, count, e);
    for (uint32_t i = 0; i < count && !rc; i++)
        rc = write_job(w, &v[i], e);
    if (!rc) rc = grw_finish(w, e);
    return rc;
}

/* The smallest entry on the wire: an id of 16 digits, an empty function, 2 words, 4 hypers. */
#define MIN_JOB_BYTES (4 + GRP_MIN_JOB_ID + 4 + 4 + 4 + 4 * 8)

int grp_read_jobs_ok(grw_reader *r, grp_job **v, uint32_t *count, gr_err *e) {
    *v = NULL;
    *count = 0;
    uint32_t n;
    int rc = grw_read_u32(r, &n, e);
    if (rc) return rc;
    if (n > GRP_MAX_JOBS)
        return gr_seterr(e, GRID_ERR_LIMIT, "a list of %u jobs exceeds the limit of %u", n, GRP_MAX_JOBS);
    /* A count the message cannot hold is refused before anything is allocated for it. */
    if ((uint64_t)n * MIN_JOB_BYTES > r->max_message - r->consumed)
        return gr_seterr(e, GRID_ERR_PROTOCOL, "a list of %u jobs cannot fit the message", n);
    grp_job *a = calloc(n ? n : 1, sizeof *a);
    if (!a) return gr_seterr(e, GRID_ERR_NOMEM, "out of memory for a list of %u jobs", n);
    for (uint32_t i = 0; i < n && !rc; i++)
        rc = read_job(r, &a[i], e);
    if (!rc) rc = grw_end(r, e);
    if (rc) {
        free(a);
        return rc;
    }
    *v = a;
    *count = n;
    return GRID_OK;
}

/* ---------------------------------------------------------------- JOB_INFO_OK */

int grp_write_job_info_ok(grw_writer *w, uint64_t id, const grp_job *j, uint64_t hash, const void *head,
                          uint32_t len, gr_err *e) {
    int rc = grw_begin(w, GRP_JOB_INFO_OK, 0, id, e);
    if (!rc) rc = write_job(w, j, e);
    if (!rc) rc = grw_write_u64(w, hash, e);
    if (!rc) rc = grw_write_opaque(w, head, len, e);
    if (!rc) rc = grw_finish(w, e);
    return rc;
}

int grp_read_submit_head_raw(grw_reader *r, uint32_t max_head, uint8_t **head, uint32_t *len, gr_err *e) {
    *head = NULL;
    *len = 0;
    return grw_read_opaque(r, max_head, head, len, e);
}

int grp_read_job_info_ok(grw_reader *r, grp_job *j, uint64_t *hash, gr_err *e) {
    *hash = 0;
    int rc = read_job(r, j, e);
    if (!rc) rc = grw_read_u64(r, hash, e);
    return rc;
}

int grp_read_job_info_head(grw_reader *r, grm_call *c, const grw_limits *lim, gr_err *e) {
    int rc = grm_read_head(r, c, GRM_TO_SERVER, lim, e);
    if (!rc) rc = grw_end(r, e);
    return rc;
}
