// proto_meta_test.cpp: the metaserver's messages and the probe (runtime/proto/grp_meta.c)
// over a socketpair: each encoder/decoder round trip; every count at and one past its
// bound, refused before anything is allocated; enum values, ports, codes and measures
// validated; the bytes of each message pinned by golden files (tests/golden-msg/).
#include <cmath>
#include <cstring>
#include <limits>

#include "proto_fixture.h"

extern "C" {
#include "grp_meta.h"
}

namespace {

using proto_fixture::golden;
using proto_fixture::Pair;

const uint64_t kId = 0x0102030405060708ull;

grp_register sample_register(std::vector<grp_function> &fns) {
    fns.resize(2);
    memset(fns.data(), 0, fns.size() * sizeof fns[0]);
    snprintf(fns[0].name, sizeof fns[0].name, "linalg/dmmul");
    fns[0].hash = 0x1122334455667788ull;
    snprintf(fns[1].name, sizeof fns[1].name, "test/counter");
    fns[1].hash = 0x99aabbccddeeff00ull;
    fns[1].flags = GRP_FN_NO_RETRY;
    grp_register m = {};
    snprintf(m.name, sizeof m.name, "gridrpcd on node7");
    snprintf(m.host, sizeof m.host, "10.0.0.7");
    m.port = 7000;
    m.cores = 16;
    m.workers = 16;
    m.speed = 2.5e10;
    m.nfunctions = 2;
    m.functions = fns.data();
    return m;
}

TEST(ProtoMeta, RegisterRoundTrip) {
    std::vector<grp_function> fns;
    grp_register m = sample_register(fns);
    Pair p;
    gr_err e;
    ASSERT_EQ(GRID_OK, grp_write_register(p.w, 9, &m, &e)) << e.msg;
    p.header(GRP_REGISTER, 9);
    grp_register got;
    ASSERT_EQ(GRID_OK, grp_read_register(p.r, &got, &e)) << e.msg;
    EXPECT_STREQ("gridrpcd on node7", got.name);
    EXPECT_STREQ("10.0.0.7", got.host);
    EXPECT_EQ(7000u, got.port);
    EXPECT_EQ(16u, got.cores);
    EXPECT_EQ(16u, got.workers);
    EXPECT_EQ(2.5e10, got.speed);
    ASSERT_EQ(2u, got.nfunctions);
    EXPECT_STREQ("linalg/dmmul", got.functions[0].name);
    EXPECT_EQ(0x1122334455667788ull, got.functions[0].hash);
    EXPECT_EQ(0u, got.functions[0].flags);
    EXPECT_STREQ("test/counter", got.functions[1].name);
    EXPECT_EQ(GRP_FN_NO_RETRY, got.functions[1].flags);
    grp_register_free(&got);
}

// Writes a REGISTER whose function list is edited by EDIT and returns what the decoder says.
template <typename F> int register_with(F edit, gr_err *e) {
    std::vector<grp_function> fns;
    grp_register m = sample_register(fns);
    edit(m);
    Pair p;
    grp_write_register(p.w, 1, &m, e);
    grw_header h;
    if (grp_read_header(p.r, &h, e)) return -1;
    grp_register got;
    int rc = grp_read_register(p.r, &got, e);
    if (!rc) grp_register_free(&got);
    return rc;
}

TEST(ProtoMeta, RegisterValidatesItsFields) {
    gr_err e;
    EXPECT_EQ(GRID_ERR_PROTOCOL, register_with([](grp_register &m) { m.port = 0; }, &e));
    EXPECT_NE(nullptr, strstr(e.msg, "port 0")) << e.msg;
    EXPECT_EQ(GRID_ERR_PROTOCOL, register_with([](grp_register &m) { m.port = 65536; }, &e));
    EXPECT_EQ(GRID_OK, register_with([](grp_register &m) { m.port = 65535; }, &e)) << e.msg;
    EXPECT_EQ(GRID_ERR_PROTOCOL, register_with([](grp_register &m) { m.host[0] = 0; }, &e));
    EXPECT_NE(nullptr, strstr(e.msg, "no host")) << e.msg;
    EXPECT_EQ(GRID_ERR_PROTOCOL, register_with([](grp_register &m) { m.speed = -1; }, &e));
    EXPECT_EQ(GRID_ERR_PROTOCOL,
              register_with([](grp_register &m) { m.speed = std::numeric_limits<double>::quiet_NaN(); }, &e));
    EXPECT_EQ(GRID_ERR_PROTOCOL, register_with([](grp_register &m) { m.functions[1].flags = 2; }, &e));
    EXPECT_NE(nullptr, strstr(e.msg, "unknown flags")) << e.msg;
    EXPECT_EQ(GRID_ERR_PROTOCOL, register_with([](grp_register &m) { m.functions[0].name[0] = 0; }, &e));
    EXPECT_EQ(GRID_OK, register_with([](grp_register &m) { m.nfunctions = 0; }, &e)) << e.msg;
}

TEST(ProtoMeta, RegisterFunctionCountAtAndPastItsLimit) {
    gr_err e;
    std::vector<grp_function> many(GRP_MAX_FUNCTIONS + 1);
    for (size_t i = 0; i < many.size(); i++) {
        memset(&many[i], 0, sizeof many[i]);
        snprintf(many[i].name, sizeof many[i].name, "m/f%zu", i);
    }
    auto with_count = [&](uint32_t n) {
        return register_with(
            [&](grp_register &m) {
                m.functions = many.data();
                m.nfunctions = n;
            },
            &e);
    };
    EXPECT_EQ(GRID_OK, with_count(GRP_MAX_FUNCTIONS)) << e.msg;
    // The encoder refuses to write one past; a hand-made count one past is refused by the decoder.
    std::vector<grp_function> fns;
    grp_register m = sample_register(fns);
    m.functions = many.data();
    m.nfunctions = GRP_MAX_FUNCTIONS + 1;
    Pair q;
    EXPECT_EQ(GRID_ERR_LIMIT, grp_write_register(q.w, 1, &m, &e));
    Pair p;
    grw_begin(p.w, GRP_REGISTER, 0, 1, &e);
    grw_write_string(p.w, "n", &e);
    grw_write_string(p.w, "h", &e);
    grw_write_u32(p.w, 1, &e);
    grw_write_u32(p.w, 1, &e);
    grw_write_u32(p.w, 1, &e);
    grw_write_u64(p.w, 0, &e);
    grw_write_u32(p.w, GRP_MAX_FUNCTIONS + 1, &e);
    grw_finish(p.w, &e);
    p.header(GRP_REGISTER, 1);
    grp_register got;
    EXPECT_EQ(GRID_ERR_LIMIT, grp_read_register(p.r, &got, &e));
    EXPECT_EQ(nullptr, got.functions);
    // A count within the limit that the message cannot hold is refused before allocating.
    Pair s;
    grw_begin(s.w, GRP_REGISTER, 0, 1, &e);
    grw_write_string(s.w, "n", &e);
    grw_write_string(s.w, "h", &e);
    grw_write_u32(s.w, 1, &e);
    grw_write_u32(s.w, 1, &e);
    grw_write_u32(s.w, 1, &e);
    grw_write_u64(s.w, 0, &e);
    grw_write_u32(s.w, 100, &e);
    grw_finish(s.w, &e);
    s.r->max_message = 200; // 100 entries of at least 16 bytes do not fit
    s.header(GRP_REGISTER, 1);
    EXPECT_EQ(GRID_ERR_PROTOCOL, grp_read_register(s.r, &got, &e));
    EXPECT_NE(nullptr, strstr(e.msg, "cannot fit")) << e.msg;
}

TEST(ProtoMeta, RegisterOkValidatesIdAndInterval) {
    gr_err e;
    for (auto [id, ms, want] : {std::tuple<uint64_t, uint32_t, int>{5, 1000, GRID_OK},
                                {0, 1000, GRID_ERR_PROTOCOL},
                                {5, 9, GRID_ERR_PROTOCOL},
                                {5, 10, GRID_OK},
                                {5, 3600000, GRID_OK},
                                {5, 3600001, GRID_ERR_PROTOCOL}}) {
        Pair p;
        grp_register_ok m = {id, ms};
        ASSERT_EQ(GRID_OK, grp_write_register_ok(p.w, 3, &m, &e));
        p.header(GRP_REGISTER_OK, 3);
        grp_register_ok got = {};
        EXPECT_EQ(want, grp_read_register_ok(p.r, &got, &e)) << id << " " << ms;
        if (want == GRID_OK) {
            EXPECT_EQ(id, got.server_id);
            EXPECT_EQ(ms, got.heartbeat_ms);
        }
    }
}

TEST(ProtoMeta, HeartbeatRoundTripAndBadLoad) {
    gr_err e;
    grp_heartbeat m = {42, 3, 5, 8, 16, 2.75, 1234567, 4.5};
    Pair p;
    ASSERT_EQ(GRID_OK, grp_write_heartbeat(p.w, 4, &m, &e));
    p.header(GRP_HEARTBEAT, 4);
    grp_heartbeat got = {};
    ASSERT_EQ(GRID_OK, grp_read_heartbeat(p.r, &got, &e)) << e.msg;
    EXPECT_EQ(42u, got.server_id);
    EXPECT_EQ(3u, got.running);
    EXPECT_EQ(5u, got.queued);
    EXPECT_EQ(8u, got.workers);
    EXPECT_EQ(16u, got.cores);
    EXPECT_EQ(2.75, got.loadavg);
    EXPECT_EQ(1234567u, got.calls_done);
    EXPECT_EQ(4.5, got.work_s);
    m.work_s = -1;
    Pair w;
    grp_write_heartbeat(w.w, 4, &m, &e);
    w.header(GRP_HEARTBEAT, 4);
    EXPECT_EQ(GRID_ERR_PROTOCOL, grp_read_heartbeat(w.r, &got, &e));
    EXPECT_NE(nullptr, strstr(e.msg, "outstanding work")) << e.msg;
    m.work_s = 0;
    m.loadavg = std::numeric_limits<double>::infinity();
    Pair q;
    grp_write_heartbeat(q.w, 4, &m, &e);
    q.header(GRP_HEARTBEAT, 4);
    EXPECT_EQ(GRID_ERR_PROTOCOL, grp_read_heartbeat(q.r, &got, &e));
    EXPECT_NE(nullptr, strstr(e.msg, "load average")) << e.msg;
}

TEST(ProtoMeta, UnregisterRoundTrip) {
    gr_err e;
    Pair p;
    ASSERT_EQ(GRID_OK, grp_write_unregister(p.w, 9, 77, &e));
    p.header(GRP_UNREGISTER, 9);
    uint64_t id = 0;
    ASSERT_EQ(GRID_OK, grp_read_unregister(p.r, &id, &e)) << e.msg;
    EXPECT_EQ(77u, id);
    EXPECT_STREQ("UNREGISTER", grp_type_name(GRP_UNREGISTER));
}

// CRASHED and HOLDS_OK carry their texts whole; a CRASHED without a function, an
// over-long text and a count the message cannot hold are refused.
TEST(ProtoMeta, CrashedAndHoldsRoundTrip) {
    gr_err e;
    grp_crashed m = {7, "test/crash", "crashed (signal 11, Segmentation fault)"}, got;
    Pair p;
    ASSERT_EQ(GRID_OK, grp_write_crashed(p.w, 3, &m, &e));
    p.header(GRP_CRASHED, 3);
    ASSERT_EQ(GRID_OK, grp_read_crashed(p.r, &got, &e)) << e.msg;
    EXPECT_EQ(7u, got.server_id);
    EXPECT_STREQ("test/crash", got.function);
    EXPECT_STREQ("crashed (signal 11, Segmentation fault)", got.what);
    EXPECT_STREQ("CRASHED", grp_type_name(GRP_CRASHED));
    EXPECT_STREQ("CRASHED_OK", grp_type_name(GRP_CRASHED_OK));
    EXPECT_STREQ("HOLDS", grp_type_name(GRP_HOLDS));
    EXPECT_STREQ("HOLDS_OK", grp_type_name(GRP_HOLDS_OK));

    grp_crashed none = {7, "", "x"};
    Pair q;
    grp_write_crashed(q.w, 4, &none, &e);
    q.header(GRP_CRASHED, 4);
    EXPECT_EQ(GRID_ERR_PROTOCOL, grp_read_crashed(q.r, &got, &e));
    EXPECT_NE(nullptr, strstr(e.msg, "names no function")) << e.msg;

    std::vector<grp_hold> v(2);
    snprintf(v[0].function, sizeof v[0].function, "test/crash");
    v[0].left_ms = 299500;
    v[0].until_unix_ms = 1795869733483ull;
    snprintf(v[0].servers, sizeof v[0].servers, "s2 (127.0.0.1:7002), s1 (127.0.0.1:7001)");
    snprintf(v[0].what, sizeof v[0].what, "exited with status 3");
    snprintf(v[1].function, sizeof v[1].function, "iso/hog");
    Pair h;
    ASSERT_EQ(GRID_OK, grp_write_holds_ok(h.w, 5, v.data(), 2, &e));
    h.header(GRP_HOLDS_OK, 5);
    grp_hold *out = nullptr;
    uint32_t n = 0;
    ASSERT_EQ(GRID_OK, grp_read_holds_ok(h.r, &out, &n, &e)) << e.msg;
    ASSERT_EQ(2u, n);
    EXPECT_STREQ("test/crash", out[0].function);
    EXPECT_EQ(299500u, out[0].left_ms);
    EXPECT_EQ(1795869733483ull, out[0].until_unix_ms);
    EXPECT_STREQ("s2 (127.0.0.1:7002), s1 (127.0.0.1:7001)", out[0].servers);
    EXPECT_STREQ("exited with status 3", out[0].what);
    EXPECT_STREQ("iso/hog", out[1].function);
    free(out);
    Pair empty;
    ASSERT_EQ(GRID_OK, grp_write_holds_ok(empty.w, 6, nullptr, 0, &e));
    empty.header(GRP_HOLDS_OK, 6);
    ASSERT_EQ(GRID_OK, grp_read_holds_ok(empty.r, &out, &n, &e)) << e.msg;
    EXPECT_EQ(0u, n);
    free(out);
    EXPECT_EQ(GRID_ERR_LIMIT, grp_write_holds_ok(empty.w, 7, v.data(), GRP_MAX_HOLDS + 1, &e));
}

grp_schedule sample_schedule() {
    grp_schedule m = {};
    snprintf(m.function, sizeof m.function, "dmmul");
    snprintf(m.site, sizeof m.site, "lab-a");
    m.policy = GRP_POLICY_MCT;
    m.bytes_in = 3ull << 30;
    m.bytes_out = 1ull << 30;
    m.flops = 2e12;
    m.nexclude = 2;
    m.exclude[0] = 7;
    m.exclude[1] = 0xffffffffffull;
    m.naffinity = 2;
    m.affinity[0] = {3, 1ull << 30};
    m.affinity[1] = {9, 4096};
    return m;
}

TEST(ProtoMeta, ScheduleRoundTrip) {
    gr_err e;
    grp_schedule m = sample_schedule();
    Pair p;
    ASSERT_EQ(GRID_OK, grp_write_schedule(p.w, 5, &m, &e));
    p.header(GRP_SCHEDULE, 5);
    grp_schedule got;
    memset(&got, 0xff, sizeof got);
    ASSERT_EQ(GRID_OK, grp_read_schedule(p.r, &got, &e)) << e.msg;
    EXPECT_STREQ("dmmul", got.function);
    EXPECT_STREQ("lab-a", got.site);
    EXPECT_EQ(GRP_POLICY_MCT, got.policy);
    EXPECT_EQ(3ull << 30, got.bytes_in);
    EXPECT_EQ(1ull << 30, got.bytes_out);
    EXPECT_EQ(2e12, got.flops);
    ASSERT_EQ(2u, got.nexclude);
    EXPECT_EQ(7u, got.exclude[0]);
    EXPECT_EQ(0xffffffffffull, got.exclude[1]);
    ASSERT_EQ(2u, got.naffinity);
    EXPECT_EQ(3u, got.affinity[0].server_id);
    EXPECT_EQ(1ull << 30, got.affinity[0].bytes);
    EXPECT_EQ(9u, got.affinity[1].server_id);
    EXPECT_EQ(4096u, got.affinity[1].bytes);
}

template <typename F> int schedule_with(F edit, gr_err *e) {
    grp_schedule m = sample_schedule();
    edit(m);
    Pair p;
    if (grp_write_schedule(p.w, 1, &m, e)) return -1;
    grw_header h;
    if (grp_read_header(p.r, &h, e)) return -2;
    grp_schedule got;
    return grp_read_schedule(p.r, &got, e);
}

TEST(ProtoMeta, ScheduleValidatesPolicyFlopsAndExcludes) {
    gr_err e;
    EXPECT_EQ(GRID_OK, schedule_with([](grp_schedule &m) { m.policy = GRP_POLICY_COUNT - 1; }, &e));
    EXPECT_EQ(GRID_ERR_PROTOCOL, schedule_with([](grp_schedule &m) { m.policy = GRP_POLICY_COUNT; }, &e));
    EXPECT_NE(nullptr, strstr(e.msg, "policy")) << e.msg;
    EXPECT_EQ(GRID_ERR_PROTOCOL, schedule_with([](grp_schedule &m) { m.flops = -0.5; }, &e));
    EXPECT_EQ(GRID_ERR_PROTOCOL, schedule_with([](grp_schedule &m) { m.function[0] = 0; }, &e));
    EXPECT_EQ(GRID_OK, schedule_with([](grp_schedule &m) { m.nexclude = GRP_MAX_EXCLUDE; }, &e)) << e.msg;
    // One past: the encoder refuses, and a hand-made message is refused by the decoder.
    EXPECT_EQ(-1, schedule_with([](grp_schedule &m) { m.nexclude = GRP_MAX_EXCLUDE + 1; }, &e));
    EXPECT_EQ(GRID_ERR_LIMIT, e.code);
    Pair p;
    grw_begin(p.w, GRP_SCHEDULE, 0, 1, &e);
    grw_write_string(p.w, "f", &e);
    grw_write_string(p.w, "s", &e);
    grw_write_u32(p.w, 0, &e);
    grw_write_u64(p.w, 0, &e);
    grw_write_u64(p.w, 0, &e);
    grw_write_u64(p.w, 0, &e);
    grw_write_u32(p.w, GRP_MAX_EXCLUDE + 1, &e);
    for (unsigned i = 0; i <= GRP_MAX_EXCLUDE; i++)
        grw_write_u64(p.w, i, &e);
    grw_finish(p.w, &e);
    p.header(GRP_SCHEDULE, 1);
    grp_schedule got;
    EXPECT_EQ(GRID_ERR_LIMIT, grp_read_schedule(p.r, &got, &e));
    EXPECT_EQ(0u, got.nexclude);
}

TEST(ProtoMeta, ScheduleValidatesAffinity) {
    gr_err e;
    EXPECT_EQ(GRID_OK, schedule_with(
                           [](grp_schedule &m) {
                               m.naffinity = GRP_MAX_AFFINITY;
                               for (auto &a : m.affinity)
                                   a = {1, 1};
                           },
                           &e))
        << e.msg;
    EXPECT_EQ(-1, schedule_with([](grp_schedule &m) { m.naffinity = GRP_MAX_AFFINITY + 1; }, &e));
    EXPECT_EQ(GRID_ERR_LIMIT, e.code);
    EXPECT_EQ(GRID_ERR_PROTOCOL, schedule_with([](grp_schedule &m) { m.affinity[1].server_id = 0; }, &e));
    EXPECT_NE(nullptr, strstr(e.msg, "server 0")) << e.msg;
    // A server cannot hold more of the call's inputs than the call sends.
    EXPECT_EQ(GRID_ERR_PROTOCOL,
              schedule_with([](grp_schedule &m) { m.affinity[0].bytes = m.bytes_in + 1; }, &e));
    EXPECT_NE(nullptr, strstr(e.msg, "holds")) << e.msg;
}

TEST(ProtoMeta, ScheduleOkRoundTripAndValidation) {
    gr_err e;
    grp_schedule_ok m = {77, 3, "node3.example", 7003, 0.125};
    Pair p;
    ASSERT_EQ(GRID_OK, grp_write_schedule_ok(p.w, 6, &m, &e));
    p.header(GRP_SCHEDULE_OK, 6);
    grp_schedule_ok got = {};
    ASSERT_EQ(GRID_OK, grp_read_schedule_ok(p.r, &got, &e)) << e.msg;
    EXPECT_EQ(77u, got.decision);
    EXPECT_EQ(3u, got.server_id);
    EXPECT_STREQ("node3.example", got.host);
    EXPECT_EQ(7003u, got.port);
    EXPECT_EQ(0.125, got.estimate);
    for (auto edit : {+[](grp_schedule_ok &x) { x.port = 0; }, +[](grp_schedule_ok &x) { x.host[0] = 0; },
                      +[](grp_schedule_ok &x) { x.estimate = -1; }}) {
        grp_schedule_ok bad = m;
        edit(bad);
        Pair q;
        grp_write_schedule_ok(q.w, 6, &bad, &e);
        q.header(GRP_SCHEDULE_OK, 6);
        EXPECT_EQ(GRID_ERR_PROTOCOL, grp_read_schedule_ok(q.r, &got, &e));
    }
}

grp_report sample_report() {
    grp_report m = {};
    m.decision = 77;
    m.server_id = 3;
    m.code = GRID_ERR_CONN_LOST;
    snprintf(m.function, sizeof m.function, "linalg/dmmul");
    snprintf(m.site, sizeof m.site, "lab-a");
    m.bytes_in = 1000;
    m.bytes_out = 2000;
    m.total_ns = 5000000;
    m.queue_ns = 1000;
    m.run_ns = 3000000;
    m.flops = 1e9;
    return m;
}

TEST(ProtoMeta, ReportRoundTripAndCodes) {
    gr_err e;
    grp_report m = sample_report();
    Pair p;
    ASSERT_EQ(GRID_OK, grp_write_report(p.w, 7, &m, &e));
    p.header(GRP_REPORT, 7);
    grp_report got = {};
    ASSERT_EQ(GRID_OK, grp_read_report(p.r, &got, &e)) << e.msg;
    EXPECT_EQ(77u, got.decision);
    EXPECT_EQ(3u, got.server_id);
    EXPECT_EQ(GRID_ERR_CONN_LOST, got.code);
    EXPECT_STREQ("linalg/dmmul", got.function);
    EXPECT_STREQ("lab-a", got.site);
    EXPECT_EQ(1000u, got.bytes_in);
    EXPECT_EQ(2000u, got.bytes_out);
    EXPECT_EQ(5000000u, got.total_ns);
    EXPECT_EQ(1000u, got.queue_ns);
    EXPECT_EQ(3000000u, got.run_ns);
    EXPECT_EQ(1e9, got.flops);
    for (int code : {0, GRID_ERROR_COUNT_NP - 1, static_cast<int>(GRID_ERROR_COUNT_NP), -1}) {
        m.code = code;
        Pair q;
        grp_write_report(q.w, 7, &m, &e);
        q.header(GRP_REPORT, 7);
        int want = code >= 0 && code < GRID_ERROR_COUNT_NP ? GRID_OK : GRID_ERR_PROTOCOL;
        EXPECT_EQ(want, grp_read_report(q.r, &got, &e)) << code;
    }
}

std::vector<grp_server_info> sample_servers(std::vector<char *> &names) {
    static char f1[] = "linalg/dmmul", f2[] = "ep/ep";
    names = {f1, f2};
    std::vector<grp_server_info> v(2);
    memset(v.data(), 0, v.size() * sizeof v[0]);
    v[0].id = 1;
    snprintf(v[0].name, sizeof v[0].name, "fast");
    snprintf(v[0].host, sizeof v[0].host, "10.77.0.2");
    v[0].port = 7000;
    v[0].state = GRP_SERVER_UP;
    v[0].cores = 4;
    v[0].workers = 4;
    v[0].running = 1;
    v[0].queued = 2;
    v[0].pending = 3;
    v[0].loadavg = 1.5;
    v[0].speed = 1e10;
    v[0].bandwidth = 1.25e8;
    v[0].latency = 0.0002;
    v[0].beat_age_ms = 250;
    v[0].calls = 10;
    v[0].failures = 1;
    v[0].nfunctions = 2;
    v[0].functions = names.data();
    v[1].id = 2;
    snprintf(v[1].name, sizeof v[1].name, "slow");
    snprintf(v[1].host, sizeof v[1].host, "10.77.0.3");
    v[1].port = 7001;
    v[1].state = GRP_SERVER_DOWN;
    return v;
}

TEST(ProtoMeta, ServersRoundTrip) {
    gr_err e;
    Pair a;
    ASSERT_EQ(GRID_OK, grp_write_servers(a.w, 8, "lab-a", &e));
    a.header(GRP_SERVERS, 8);
    char site[GRP_MAX_SITE + 1];
    ASSERT_EQ(GRID_OK, grp_read_servers(a.r, site, &e));
    EXPECT_STREQ("lab-a", site);

    std::vector<char *> names;
    auto v = sample_servers(names);
    Pair p;
    ASSERT_EQ(GRID_OK, grp_write_servers_ok(p.w, 8, v.data(), 2, &e)) << e.msg;
    p.header(GRP_SERVERS_OK, 8);
    grp_server_info *got;
    uint32_t n;
    ASSERT_EQ(GRID_OK, grp_read_servers_ok(p.r, &got, &n, &e)) << e.msg;
    ASSERT_EQ(2u, n);
    EXPECT_EQ(1u, got[0].id);
    EXPECT_STREQ("fast", got[0].name);
    EXPECT_STREQ("10.77.0.2", got[0].host);
    EXPECT_EQ(7000u, got[0].port);
    EXPECT_EQ(GRP_SERVER_UP, got[0].state);
    EXPECT_EQ(4u, got[0].cores);
    EXPECT_EQ(4u, got[0].workers);
    EXPECT_EQ(1u, got[0].running);
    EXPECT_EQ(2u, got[0].queued);
    EXPECT_EQ(3u, got[0].pending);
    EXPECT_EQ(1.5, got[0].loadavg);
    EXPECT_EQ(1e10, got[0].speed);
    EXPECT_EQ(1.25e8, got[0].bandwidth);
    EXPECT_EQ(0.0002, got[0].latency);
    EXPECT_EQ(250u, got[0].beat_age_ms);
    EXPECT_EQ(10u, got[0].calls);
    EXPECT_EQ(1u, got[0].failures);
    ASSERT_EQ(2u, got[0].nfunctions);
    EXPECT_STREQ("linalg/dmmul", got[0].functions[0]);
    EXPECT_STREQ("ep/ep", got[0].functions[1]);
    EXPECT_EQ(GRP_SERVER_DOWN, got[1].state);
    EXPECT_EQ(0u, got[1].nfunctions);
    grp_servers_free(got, n);
}

TEST(ProtoMeta, ServersOkValidatesStateAndCounts) {
    gr_err e;
    std::vector<char *> names;
    auto v = sample_servers(names);
    v[1].state = 2;
    Pair p;
    grp_write_servers_ok(p.w, 8, v.data(), 2, &e);
    p.header(GRP_SERVERS_OK, 8);
    grp_server_info *got;
    uint32_t n;
    EXPECT_EQ(GRID_ERR_PROTOCOL, grp_read_servers_ok(p.r, &got, &n, &e));
    EXPECT_EQ(nullptr, got);
    EXPECT_EQ(0u, n);
    // A server count past the limit, or more than the message can hold, allocates nothing.
    for (uint32_t count : {GRP_MAX_SERVERS + 1u, 1000u}) {
        Pair q;
        grw_begin(q.w, GRP_SERVERS_OK, 0, 1, &e);
        grw_write_u32(q.w, count, &e);
        grw_finish(q.w, &e);
        q.r->max_message = 4096;
        q.header(GRP_SERVERS_OK, 1);
        int rc = grp_read_servers_ok(q.r, &got, &n, &e);
        EXPECT_EQ(count > GRP_MAX_SERVERS ? GRID_ERR_LIMIT : GRID_ERR_PROTOCOL, rc) << count;
        EXPECT_EQ(nullptr, got);
    }
    v[1].state = GRP_SERVER_UP;
    Pair s;
    EXPECT_EQ(GRID_ERR_LIMIT, grp_write_servers_ok(s.w, 8, v.data(), GRP_MAX_SERVERS + 1, &e));
}

TEST(ProtoMeta, ProbeMovesTheBytesAskedFor) {
    gr_err e;
    for (uint32_t len : {0u, 1u, 3u, 65536u + 5, 1u << 20}) {
        Pair p;
        ASSERT_EQ(GRID_OK, grp_write_probe(p.w, 9, len, len / 2, &e)) << e.msg;
        p.header(GRP_PROBE, 9);
        uint32_t got_len = 1, reply = 1;
        ASSERT_EQ(GRID_OK, grp_read_probe(p.r, &got_len, &reply, &e)) << e.msg;
        EXPECT_EQ(len, got_len);
        EXPECT_EQ(len / 2, reply);
        Pair q;
        ASSERT_EQ(GRID_OK, grp_write_probe_ok(q.w, 9, reply, &e));
        q.header(GRP_PROBE_OK, 9);
        ASSERT_EQ(GRID_OK, grp_read_probe_ok(q.r, &got_len, &e)) << e.msg;
        EXPECT_EQ(reply, got_len);
    }
    Pair p;
    EXPECT_EQ(GRID_ERR_LIMIT, grp_write_probe(p.w, 9, GRP_MAX_PROBE + 1, 0, &e));
    EXPECT_EQ(GRID_ERR_LIMIT, grp_write_probe(p.w, 9, 0, GRP_MAX_PROBE + 1, &e));
    Pair q;
    grw_begin(q.w, GRP_PROBE, 0, 1, &e);
    grw_write_u32(q.w, GRP_MAX_PROBE + 1, &e);
    grw_write_u32(q.w, 0, &e);
    grw_finish(q.w, &e);
    q.header(GRP_PROBE, 1);
    uint32_t len, reply;
    EXPECT_EQ(GRID_ERR_LIMIT, grp_read_probe(q.r, &len, &reply, &e));
}

TEST(ProtoMeta, PolicyNames) {
    EXPECT_EQ(GRP_POLICY_MCT, grp_policy_parse("mct"));
    EXPECT_EQ(GRP_POLICY_LEAST_LOAD, grp_policy_parse("least-load"));
    EXPECT_EQ(GRP_POLICY_ROUND_ROBIN, grp_policy_parse("round-robin"));
    EXPECT_EQ(GRP_POLICY_DEFAULT, grp_policy_parse("default"));
    EXPECT_EQ(-1, grp_policy_parse("fastest"));
    for (int i = 0; i < GRP_POLICY_COUNT; i++)
        EXPECT_EQ(i, grp_policy_parse(grp_policy_name(static_cast<uint32_t>(i))));
    EXPECT_EQ(nullptr, grp_policy_name(GRP_POLICY_COUNT));
}

TEST(ProtoMetaGolden, EveryMessage) {
    gr_err e;
    {
        std::vector<grp_function> fns;
        grp_register m = sample_register(fns);
        Pair p;
        grp_write_register(p.w, kId, &m, &e);
        golden("register", p.raw());
    }
    {
        grp_register_ok m = {5, 1000};
        Pair p;
        grp_write_register_ok(p.w, kId, &m, &e);
        golden("register_ok", p.raw());
    }
    {
        grp_heartbeat m = {42, 3, 5, 8, 16, 2.75, 1234567, 4.5};
        Pair p;
        grp_write_heartbeat(p.w, kId, &m, &e);
        golden("heartbeat", p.raw());
    }
    {
        grp_schedule m = sample_schedule();
        Pair p;
        grp_write_schedule(p.w, kId, &m, &e);
        golden("schedule", p.raw());
    }
    {
        grp_schedule_ok m = {77, 3, "node3.example", 7003, 0.125};
        Pair p;
        grp_write_schedule_ok(p.w, kId, &m, &e);
        golden("schedule_ok", p.raw());
    }
    {
        grp_report m = sample_report();
        Pair p;
        grp_write_report(p.w, kId, &m, &e);
        golden("report", p.raw());
    }
    {
        Pair p;
        grp_write_unregister(p.w, kId, 42, &e);
        golden("unregister", p.raw());
    }
    {
        Pair p;
        grp_write_servers(p.w, kId, "lab-a", &e);
        golden("servers", p.raw());
    }
    {
        std::vector<char *> names;
        auto v = sample_servers(names);
        Pair p;
        grp_write_servers_ok(p.w, kId, v.data(), 2, &e);
        golden("servers_ok", p.raw());
    }
    {
        Pair p;
        grp_write_probe(p.w, kId, 5, 3, &e);
        golden("probe", p.raw());
    }
    {
        grp_crashed m = {42, "linalg/dmmul", "crashed (signal 11, Segmentation fault)"};
        Pair p;
        grp_write_crashed(p.w, kId, &m, &e);
        golden("crashed", p.raw());
    }
    {
        Pair p;
        grp_write_empty(p.w, GRP_HOLDS, kId, &e);
        golden("holds", p.raw());
    }
    {
        grp_hold m;
        memset(&m, 0, sizeof m);
        snprintf(m.function, sizeof m.function, "test/crash");
        m.left_ms = 299500;
        m.until_unix_ms = 1795869733483ull;
        snprintf(m.servers, sizeof m.servers, "s2 (127.0.0.1:7002), s1 (127.0.0.1:7001)");
        snprintf(m.what, sizeof m.what, "crashed (signal 11, Segmentation fault)");
        Pair p;
        grp_write_holds_ok(p.w, kId, &m, 1, &e);
        golden("holds_ok", p.raw());
    }
}

} // namespace
