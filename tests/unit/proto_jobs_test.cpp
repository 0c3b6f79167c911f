// proto_jobs_test.cpp: the messages of two-phase calls (SUBMIT, SUBMITTED, FETCH,
// JOB_STATE, JOBS, JOBS_OK, FORGET, FORGOTTEN, JOB_INFO, JOB_INFO_OK; runtime/proto/
// grp_jobs.c) over a socketpair: round trips, what the decoders refuse (ids that are not
// 16 to 64 lowercase hex digits, unknown states, a failed job without an error code or a
// done one with one, counts past the limit or the message, trailing bytes), and the
// bytes of each message pinned by tests/golden-msg/.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

extern "C" {
#include "gridrpc_stub.h"
#include "grp_proto.h"
extern const gridrpc_stub_module gridrpc_module_test;
}

#include "proto_fixture.h"

namespace {

using proto_fixture::golden;
using proto_fixture::Pair;

const uint64_t kId = 0x0102030405060708ull;
const char *kJob = "0123456789abcdef0123456789abcdef";

const grd_desc *echo_double() {
    static grd_desc *d = nullptr;
    for (unsigned i = 0; !d && i < gridrpc_module_test.nfunctions; i++) {
        const gridrpc_stub_function *f = &gridrpc_module_test.functions[i];
        grd_error ge;
        if (strcmp(f->name, "echo_double") == 0) grd_decode(f->descriptor, f->descriptor_len, &d, &ge);
    }
    return d;
}

grp_job sample(uint32_t state, int code) {
    grp_job j;
    memset(&j, 0, sizeof j);
    snprintf(j.id, sizeof j.id, "%s", kJob);
    snprintf(j.function, sizeof j.function, "test/echo_double");
    j.state = state;
    j.code = code;
    j.submitted_ms = 1700000000123ull;
    j.finished_ms = state >= GRP_JOB_DONE ? 1700000004567ull : 0;
    j.bytes_in = 88;
    j.bytes_out = state >= GRP_JOB_DONE ? 72 : 0;
    return j;
}

TEST(ProtoJobs, JobIds) {
    EXPECT_EQ(1, grp_job_id_ok(kJob));
    EXPECT_EQ(1, grp_job_id_ok("0123456789abcdef"));           // 16
    EXPECT_EQ(0, grp_job_id_ok("0123456789abcde"));            // 15
    EXPECT_EQ(1, grp_job_id_ok(std::string(64, 'a').c_str())); // 64
    EXPECT_EQ(0, grp_job_id_ok(std::string(65, 'a').c_str())); // 65
    EXPECT_EQ(0, grp_job_id_ok("0123456789ABCDEF"));           // upper case
    EXPECT_EQ(0, grp_job_id_ok("0123456789abcdeg"));           // not hex
    EXPECT_EQ(0, grp_job_id_ok("../../etc/passwd0000"));       // a path
    EXPECT_STREQ("running", grp_job_state_name(GRP_JOB_RUNNING));
    EXPECT_STREQ("?", grp_job_state_name(9));
}

TEST(ProtoJobs, IdMessagesRoundTripAndRefuseBadIds) {
    gr_err e;
    char job[GRP_MAX_JOB_ID + 1];
    for (uint32_t type : {GRP_SUBMITTED, GRP_FORGET, GRP_JOB_INFO, GRP_JOB_CANCEL}) {
        Pair p;
        ASSERT_EQ(GRID_OK, grp_write_job_id(p.w, type, 9, kJob, &e)) << e.msg;
        p.header(type, 9);
        ASSERT_EQ(GRID_OK, grp_read_job_id(p.r, job, &e)) << e.msg;
        EXPECT_STREQ(kJob, job);
    }
    Pair p;
    EXPECT_EQ(GRID_ERR_PROTOCOL, grp_write_job_id(p.w, GRP_FORGET, 9, "nothex-nothex-nothex", &e));
    // A peer's bad id: written by hand.
    for (const char *bad : {"0123456789ABCDEF", "0123", "0123456789abcdef/x"}) {
        Pair q;
        grw_begin(q.w, GRP_FORGET, 0, 3, &e);
        grw_write_string(q.w, bad, &e);
        grw_finish(q.w, &e);
        q.header(GRP_FORGET, 3);
        EXPECT_EQ(GRID_ERR_PROTOCOL, grp_read_job_id(q.r, job, &e)) << bad;
        EXPECT_NE(nullptr, strstr(e.msg, "lowercase hex digits")) << e.msg;
    }
    // 65 digits: past the string's bound.
    Pair q;
    grw_begin(q.w, GRP_JOB_INFO, 0, 3, &e);
    grw_write_string(q.w, std::string(65, 'a').c_str(), &e);
    grw_finish(q.w, &e);
    q.header(GRP_JOB_INFO, 3);
    EXPECT_NE(GRID_OK, grp_read_job_id(q.r, job, &e));
    // Trailing bytes.
    Pair t;
    grw_begin(t.w, GRP_FORGET, 0, 3, &e);
    grw_write_string(t.w, kJob, &e);
    grw_write_u32(t.w, 0, &e);
    grw_finish(t.w, &e);
    t.header(GRP_FORGET, 3);
    EXPECT_EQ(GRID_ERR_PROTOCOL, grp_read_job_id(t.r, job, &e));
}

TEST(ProtoJobs, FetchRoundTrip) {
    Pair p;
    gr_err e;
    ASSERT_EQ(GRID_OK, grp_write_fetch(p.w, 4, kJob, 60000, &e)) << e.msg;
    p.header(GRP_FETCH, 4);
    char job[GRP_MAX_JOB_ID + 1];
    uint32_t wait = 0;
    ASSERT_EQ(GRID_OK, grp_read_fetch(p.r, job, &wait, &e)) << e.msg;
    EXPECT_STREQ(kJob, job);
    EXPECT_EQ(60000u, wait);
}

TEST(ProtoJobs, StateChecksStatesAndCodes) {
    gr_err e;
    for (uint32_t s = GRP_JOB_QUEUED; s <= GRP_JOB_FAILED; s++) {
        Pair p;
        grp_job j = sample(s, s == GRP_JOB_FAILED ? GRID_ERR_FAILED : GRID_OK), got;
        ASSERT_EQ(GRID_OK, grp_write_job_state(p.w, 2, &j, &e)) << e.msg;
        p.header(GRP_JOB_STATE, 2);
        ASSERT_EQ(GRID_OK, grp_read_job_state(p.r, &got, &e)) << e.msg;
        EXPECT_STREQ(j.id, got.id);
        EXPECT_STREQ(j.function, got.function);
        EXPECT_EQ(j.state, got.state);
        EXPECT_EQ(j.code, got.code);
        EXPECT_EQ(j.submitted_ms, got.submitted_ms);
        EXPECT_EQ(j.finished_ms, got.finished_ms);
        EXPECT_EQ(j.bytes_in, got.bytes_in);
        EXPECT_EQ(j.bytes_out, got.bytes_out);
    }
    // What a peer may not send: an unknown state, a failed job without a valid code, a
    // done one with a code.
    struct {
        uint32_t state;
        int32_t code;
    } bad[] = {{0, 0}, {5, 0}, {GRP_JOB_FAILED, 0}, {GRP_JOB_FAILED, GRID_ERROR_COUNT_NP}, {GRP_JOB_DONE, 3}};
    for (auto &b : bad) {
        Pair p;
        grw_begin(p.w, GRP_JOB_STATE, 0, 2, &e);
        grw_write_string(p.w, kJob, &e);
        grw_write_string(p.w, "f", &e);
        grw_write_u32(p.w, b.state, &e);
        grw_write_i32(p.w, b.code, &e);
        for (int k = 0; k < 4; k++)
            grw_write_u64(p.w, 0, &e);
        grw_finish(p.w, &e);
        p.header(GRP_JOB_STATE, 2);
        grp_job got;
        EXPECT_EQ(GRID_ERR_PROTOCOL, grp_read_job_state(p.r, &got, &e)) << b.state << " " << b.code;
    }
    Pair p;
    grp_job j = sample(7, 0);
    EXPECT_NE(GRID_OK, grp_write_job_state(p.w, 2, &j, &e));
}

TEST(ProtoJobs, JobsOkRoundTripAndCounts) {
    gr_err e;
    grp_job v[2] = {sample(GRP_JOB_DONE, GRID_OK), sample(GRP_JOB_FAILED, GRID_ERR_NOT_FOUND)};
    snprintf(v[1].id, sizeof v[1].id, "ffffffffffffffff");
    {
        Pair p;
        ASSERT_EQ(GRID_OK, grp_write_jobs_ok(p.w, 6, v, 2, &e)) << e.msg;
        p.header(GRP_JOBS_OK, 6);
        grp_job *got;
        uint32_t n;
        ASSERT_EQ(GRID_OK, grp_read_jobs_ok(p.r, &got, &n, &e)) << e.msg;
        ASSERT_EQ(2u, n);
        EXPECT_STREQ("ffffffffffffffff", got[1].id);
        EXPECT_EQ(GRID_ERR_NOT_FOUND, got[1].code);
        free(got);
    }
    {
        Pair p;
        grp_job *got;
        uint32_t n;
        ASSERT_EQ(GRID_OK, grp_write_jobs_ok(p.w, 6, v, 0, &e));
        p.header(GRP_JOBS_OK, 6);
        ASSERT_EQ(GRID_OK, grp_read_jobs_ok(p.r, &got, &n, &e)) << e.msg;
        EXPECT_EQ(0u, n);
        free(got);
    }
    Pair big;
    EXPECT_EQ(GRID_ERR_LIMIT, grp_write_jobs_ok(big.w, 6, v, GRP_MAX_JOBS + 1, &e));
    // A count past the limit, and one the message cannot hold: refused before allocating.
    for (uint32_t n : {(uint32_t)GRP_MAX_JOBS + 1, 1000u}) {
        Pair p;
        grw_begin(p.w, GRP_JOBS_OK, 0, 6, &e);
        grw_write_u32(p.w, n, &e);
        grw_finish(p.w, &e);
        p.header(GRP_JOBS_OK, 6);
        grp_job *got;
        uint32_t k;
        EXPECT_NE(GRID_OK, grp_read_jobs_ok(p.r, &got, &k, &e)) << n;
        EXPECT_EQ(nullptr, got);
    }
}

TEST(ProtoJobs, SubmitIsACallAndJobInfoCarriesItsHead) {
    const grd_desc *d = echo_double();
    ASSERT_NE(nullptr, d);
    gr_err e;
    grw_limits lim;
    grp_limits_default(&lim);
    double in[3] = {1.0, -2.5, 1e300}, out[3] = {0, 0, 0};
    int n = 3;
    void *argv[3] = {&n, in, out};
    grm_call *call = static_cast<grm_call *>(malloc(grm_call_size(d->nparams)));
    ASSERT_EQ(GRID_OK, grm_from_argv(call, d, argv, &lim, &e)) << e.msg;
    Pair p;
    ASSERT_EQ(GRID_OK, grp_write_submit(p.w, 8, "test/echo_double", d->hash, call, &lim, &e)) << e.msg;
    p.header(GRP_SUBMIT, 8);
    grp_call_target t;
    ASSERT_EQ(GRID_OK, grp_read_call_target(p.r, &t, &e)) << e.msg;
    EXPECT_STREQ("test/echo_double", t.name);
    uint8_t *head;
    uint32_t len;
    ASSERT_EQ(GRID_OK, grp_read_submit_head_raw(p.r, lim.max_head, &head, &len, &e)) << e.msg;
    EXPECT_EQ(4u, len); // n
    ASSERT_EQ(GRID_OK, grw_skip(p.r, &e)) << e.msg;

    // The head, sent back in JOB_INFO_OK, gives the scalars back.
    grp_job j = sample(GRP_JOB_RUNNING, GRID_OK), got;
    Pair q;
    ASSERT_EQ(GRID_OK, grp_write_job_info_ok(q.w, 8, &j, d->hash, head, len, &e)) << e.msg;
    q.header(GRP_JOB_INFO_OK, 8);
    uint64_t hash;
    ASSERT_EQ(GRID_OK, grp_read_job_info_ok(q.r, &got, &hash, &e)) << e.msg;
    EXPECT_EQ(d->hash, hash);
    EXPECT_EQ(GRP_JOB_RUNNING, got.state);
    grm_call *sv = static_cast<grm_call *>(malloc(grm_call_size(d->nparams)));
    grm_init(sv, d, GRM_SERVER_SIDE);
    ASSERT_EQ(GRID_OK, grp_read_job_info_head(q.r, sv, &lim, &e)) << e.msg;
    EXPECT_EQ(3, sv->ival[0]);
    EXPECT_EQ(3u, sv->sl[2].ext.elems); // the OUT array is sized by it
    grm_release(sv);
    free(sv);
    // A head larger than the reader's limit is refused.
    Pair r;
    grp_write_job_info_ok(r.w, 8, &j, d->hash, head, len, &e);
    r.header(GRP_JOB_INFO_OK, 8);
    ASSERT_EQ(GRID_OK, grp_read_job_info_ok(r.r, &got, &hash, &e));
    grw_limits small = lim;
    small.max_head = 2;
    sv = static_cast<grm_call *>(malloc(grm_call_size(d->nparams)));
    grm_init(sv, d, GRM_SERVER_SIDE);
    EXPECT_NE(GRID_OK, grp_read_job_info_head(r.r, sv, &small, &e));
    grm_release(sv);
    free(sv);
    free(head);
    free(call);
}

// ---------------------------------------------------------------- golden bytes

TEST(ProtoJobsGolden, EveryMessage) {
    gr_err e;
    grw_limits lim;
    grp_limits_default(&lim);
    const grd_desc *d = echo_double();
    ASSERT_NE(nullptr, d);
    double in[3] = {1.0, -2.5, 1e300}, out[3] = {0, 0, 0};
    int n = 3;
    void *argv[3] = {&n, in, out};
    grm_call *call = static_cast<grm_call *>(malloc(grm_call_size(d->nparams)));
    ASSERT_EQ(GRID_OK, grm_from_argv(call, d, argv, &lim, &e)) << e.msg;
    {
        Pair p;
        grp_write_submit(p.w, kId, "test/echo_double", 0x1122334455667788ull, call, &lim, &e);
        golden("submit", p.raw());
    }
    {
        Pair p;
        grp_write_job_id(p.w, GRP_SUBMITTED, kId, kJob, &e);
        golden("submitted", p.raw());
    }
    {
        Pair p;
        grp_write_fetch(p.w, kId, kJob, 30000, &e);
        golden("fetch", p.raw());
    }
    {
        Pair p;
        grp_job j = sample(GRP_JOB_RUNNING, GRID_OK);
        grp_write_job_state(p.w, kId, &j, &e);
        golden("job_state", p.raw());
    }
    {
        Pair p;
        grp_write_empty(p.w, GRP_JOBS, kId, &e);
        golden("jobs", p.raw());
    }
    {
        Pair p;
        grp_job v[2] = {sample(GRP_JOB_DONE, GRID_OK), sample(GRP_JOB_FAILED, GRID_ERR_FAILED)};
        grp_write_jobs_ok(p.w, kId, v, 2, &e);
        golden("jobs_ok", p.raw());
    }
    {
        Pair p;
        grp_write_job_id(p.w, GRP_FORGET, kId, kJob, &e);
        golden("forget", p.raw());
    }
    {
        Pair p;
        grp_write_empty(p.w, GRP_FORGOTTEN, kId, &e);
        golden("forgotten", p.raw());
    }
    {
        Pair p;
        grp_write_job_id(p.w, GRP_JOB_INFO, kId, kJob, &e);
        golden("job_info", p.raw());
    }
    {
        Pair p;
        grp_write_job_id(p.w, GRP_JOB_CANCEL, kId, kJob, &e);
        golden("job_cancel", p.raw());
    }
    {
        Pair p;
        grp_job j = sample(GRP_JOB_DONE, GRID_OK);
        const uint8_t head[4] = {0, 0, 0, 3};
        grp_write_job_info_ok(p.w, kId, &j, 0x1122334455667788ull, head, 4, &e);
        golden("job_info_ok", p.raw());
    }
    free(call);
}

} // namespace
