// meta_route_test.cpp: the client routed by a metaserver. A scripted fake metaserver
// (fake_meta_route.h) names real gridrpcd servers on loopback (server_fixture.h) or a fake
// server (fake_server.h); the tests check where calls go, what SCHEDULE and REPORT carry,
// failover after a refused or killed server, the naming error when every server fails,
// the no-retry flag, the last-known servers when the metaserver is gone (and the one
// warning), async calls, the scheduler setting, decision reuse, the link probe and the
// OGF default handle.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "fake_meta_route.h"
#include "fake_server.h"
#include "grd_desc.h"
#include "gridrpc.h"
#include "gridrpc_stub.h"
#include "grpc.h"
#include "server_fixture.h"

extern "C" const gridrpc_stub_module gridrpc_module_test;

namespace {

const std::vector<std::string> kTestFunctions = {"test/null_call", "test/echo_double", "test/sleep"};

FakeMeta::Server entry(uint64_t id, int port, std::vector<std::string> f = kTestFunctions) {
    return FakeMeta::Server{id, "127.0.0.1", port, std::move(f)};
}

std::string last_server() {
    char buf[300];
    EXPECT_EQ(GRID_OK, grid_last_server_np(buf, sizeof buf));
    return buf;
}

// A port nothing listens on: a server started and stopped.
int closed_port() {
    TestServer s;
    int p = s.port();
    s.stop(SIGTERM);
    return p;
}

class MetaRoute : public ::testing::Test {
  protected:
    void SetUp() override {
        unsetenv("GRIDRPC_SERVER");
        unsetenv("GRIDRPC_METASERVER");
        unsetenv("GRIDRPC_CONFIG");
        unsetenv("GRIDRPC_TIMEOUT");
        unsetenv("GRIDRPC_QUIET");
        unsetenv("GRIDRPC_REUSE");
        unsetenv("GRIDRPC_REUSE_FOR");
        unsetenv("GRIDRPC_SCHEDULER");
        setenv("GRIDRPC_SITE", "testsite", 1);
        setenv("HOME", "/nonexistent", 1);
        grid_reset_np();
        grid_set_call_flags_np(0);
    }
    void TearDown() override {
        grid_set_call_flags_np(0);
        grid_reset_np();
    }
    void use(const FakeMeta &m) { ASSERT_EQ(GRID_OK, grid_set_metaserver_np("127.0.0.1", m.port())); }
};

bool echo_ok(int n = 100) {
    std::vector<double> in(n), out(n, 0);
    for (int i = 0; i < n; i++)
        in[i] = i * 0.5 - 3;
    if (grid_call("test/echo_double", n, in.data(), out.data()) != GRID_OK) return false;
    return in == out;
}

TEST_F(MetaRoute, PlainCallGoesWhereTheMetaserverSays) {
    TestServer a, b;
    FakeMeta meta({entry(7, b.port()), entry(3, a.port())}); // b first: b is chosen
    use(meta);
    ASSERT_TRUE(echo_ok()) << grid_last_error();
    EXPECT_EQ(b.address(), last_server());
    auto s = meta.schedules();
    // One SCHEDULE, with the call's figures: the descriptor came from a listed server.
    ASSERT_EQ(1u, s.size());
    EXPECT_STREQ("test/echo_double", s[0].function);
    EXPECT_STREQ("testsite", s[0].site);
    EXPECT_EQ(0u, s[0].policy);
    // CALL: header 24, name string 4+16, hash 8, head opaque 4 + int 4, 100 doubles.
    EXPECT_EQ(24u + 20 + 8 + 4 + 4 + 800, s[0].bytes_in);
    // RESULT: header 24, queue and run 16, empty head opaque 4, 100 doubles.
    EXPECT_EQ(24u + 16 + 4 + 800, s[0].bytes_out);
    // A second call needs one SCHEDULE (or none, reusing), never another descriptor.
    grid_stats_np before, after;
    grid_get_stats_np(&before);
    ASSERT_TRUE(echo_ok()) << grid_last_error();
    grid_get_stats_np(&after);
    EXPECT_EQ(before.descriptor_fetches, after.descriptor_fetches);
}

TEST_F(MetaRoute, ReportCarriesDecisionBytesAndServerTimes) {
    TestServer a;
    FakeMeta meta({entry(5, a.port())});
    use(meta);
    ASSERT_EQ(GRID_OK, grid_call("test/sleep", 0.05)) << grid_last_error();
    auto r = meta.call_reports(1);
    ASSERT_EQ(1u, r.size());
    auto answers = meta.answers();
    ASSERT_EQ(1u, answers.size());
    // The call's decision is reported done (learning the descriptor took none).
    EXPECT_EQ(answers[0].decision, r[0].decision);
    EXPECT_EQ(GRID_OK, r[0].code);
    EXPECT_EQ(5u, r[0].server_id);
    EXPECT_STREQ("test/sleep", r[0].function);
    EXPECT_STREQ("testsite", r[0].site);
    EXPECT_EQ(meta.schedules()[0].bytes_in, r[0].bytes_in);
    EXPECT_EQ(24u + 16 + 4, r[0].bytes_out);
    EXPECT_GE(r[0].run_ns, 45000000u);                     // the server slept 50 ms
    EXPECT_GE(r[0].total_ns, r[0].run_ns + r[0].queue_ns); // measured around it
    EXPECT_LT(r[0].total_ns, 5000000000u);
}

TEST_F(MetaRoute, BytesInIsTheCallOnTheWire) {
    // A fake server records the CALL it gets; the REPORT must say the same size.
    struct Seen {
        size_t call_bytes = 0;
    } seen;
    fake_server *fs = fake_server_start(
        [](fake_server *f, int fd, const fake_msg *m, void *user) -> int {
            if (m->h.type == GRP_CALL) {
                static_cast<Seen *>(user)->call_bytes = GRW_HEADER_BYTES + m->len;
                return fake_send_error(fd, m->h.request_id, GRID_ERR_FAILED, "scripted failure") ? FAKE_CLOSE
                                                                                                 : FAKE_KEEP;
            }
            return fake_default_reply(f, fd, m, user);
        },
        &seen);
    ASSERT_NE(nullptr, fs);
    FakeMeta meta({entry(9, fake_server_port(fs), {"test/echo_string"})});
    use(meta);
    char *out = nullptr;
    EXPECT_EQ(GRID_ERR_FAILED, grid_call("test/echo_string", "hello, metaserver", &out));
    auto r = meta.call_reports(1);
    ASSERT_EQ(1u, r.size());
    EXPECT_EQ(GRID_ERR_FAILED, r[0].code);
    EXPECT_EQ(seen.call_bytes, r[0].bytes_in);
    // A remote error is the call's outcome: never retried elsewhere.
    EXPECT_EQ(1u, meta.schedules().size());
    fake_server_stop(fs);
}

// A descriptor is fetched from a server the metaserver listed with the function, without
// a decision: fetching runs nothing, and while every server is full a SCHEDULE waits for
// room (1,000 clients starting at once waited seconds so). A listed server that is gone is
// skipped for the next; a metaserver that is gone leaves the last-known servers.
TEST_F(MetaRoute, LearningADescriptorTakesNoDecision) {
    TestServer a;
    FakeMeta meta({entry(1, closed_port()), entry(2, a.port())});
    use(meta);
    grid_stats_np before, st;
    grid_get_stats_np(&before);
    grid_function_np f;
    ASSERT_EQ(GRID_OK, grid_describe_np("test/echo_double", &f)) << grid_last_error();
    EXPECT_STREQ("echo_double", f.name);
    EXPECT_EQ(0u, meta.schedules().size());
    EXPECT_EQ(1, meta.servers_requests());
    grid_get_stats_np(&st);
    EXPECT_EQ(2L, st.descriptor_fetches - before.descriptor_fetches); // the gone one, then a
    // The call asks (and is reported); the descriptor is not fetched again.
    ASSERT_TRUE(echo_ok()) << grid_last_error();
    EXPECT_EQ(a.address(), last_server());
    EXPECT_LE(1u, meta.schedules().size());
    grid_get_stats_np(&st);
    EXPECT_EQ(2L, st.descriptor_fetches - before.descriptor_fetches);
    for (auto &r : meta.reports())
        EXPECT_NE(GRID_ERR_CANCELED, r.code) << "a decision taken only to learn a descriptor";
}

TEST_F(MetaRoute, RefusedServerIsExcludedAndTheNextRunsTheCall) {
    TestServer a, b;
    FakeMeta meta({entry(1, a.port()), entry(2, b.port())});
    use(meta);
    ASSERT_TRUE(echo_ok()) << grid_last_error(); // learns the descriptor from a
    EXPECT_EQ(a.address(), last_server());
    a.stop(SIGKILL);
    size_t before = meta.schedules().size();
    ASSERT_TRUE(echo_ok()) << grid_last_error();
    EXPECT_EQ(b.address(), last_server());
    auto s = meta.schedules();
    // The call may reuse the last decision (a was chosen) or ask; the failover asks.
    ASSERT_LE(before + 1, s.size());
    ASSERT_GE(before + 2, s.size());
    if (s.size() == before + 2) {
        EXPECT_EQ(0u, s[before].nexclude);
    }
    ASSERT_EQ(1u, s.back().nexclude);
    EXPECT_EQ(1u, s.back().exclude[0]);
    bool failure_reported = false;
    for (auto &r : meta.call_reports(4))
        failure_reported |= r.server_id == 1 && r.code == GRID_ERR_CONNECT;
    EXPECT_TRUE(failure_reported);
}

TEST_F(MetaRoute, ServerKilledMidCallIsRetriedElsewhere) {
    TestServer a, b;
    FakeMeta meta({entry(1, a.port()), entry(2, b.port())});
    use(meta);
    ASSERT_EQ(GRID_OK, grid_call("test/null_call")) << grid_last_error(); // descriptor cache warm
    ASSERT_EQ(GRID_OK, grid_call("test/sleep", 0.01)) << grid_last_error();
    std::thread killer([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(150));
        a.stop(SIGKILL);
    });
    auto t0 = std::chrono::steady_clock::now();
    int rc = grid_call("test/sleep", 0.5);
    killer.join();
    ASSERT_EQ(GRID_OK, rc) << grid_last_error();
    EXPECT_EQ(b.address(), last_server());
    EXPECT_GT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(600)); // ran twice
    bool lost = false;
    for (auto &r : meta.call_reports(4))
        lost |= r.server_id == 1 && r.code == GRID_ERR_CONN_LOST;
    EXPECT_TRUE(lost);
}

// A server that refuses the client's token refuses it at every attempt, and so would the
// grid's other servers that share it: GRID_ERR_AUTH ends the call there. It is neither
// retried on the next server nor reported to the metaserver as the server's failure.
TEST_F(MetaRoute, RefusedCredentialsAreNotFailedOver) {
    TestServer a({"--token", "not-this-clients"}), b;
    FakeMeta meta({entry(1, a.port()), entry(2, b.port())});
    use(meta);
    EXPECT_EQ(GRID_ERR_AUTH, grid_call("test/null_call"));
    std::string msg = grid_last_error();
    EXPECT_NE(std::string::npos, msg.find("the token does not match")) << msg;
    EXPECT_EQ(std::string::npos, msg.find("no server could run the call")) << msg;
    EXPECT_NE(b.address(), last_server()) << "the call failed over to the next server";
    for (auto &sc : meta.schedules())
        EXPECT_EQ(0u, sc.nexclude) << "a SCHEDULE excluded the refusing server";
    for (auto &r : meta.call_reports(1))
        EXPECT_TRUE(r.code == GRID_OK || r.code == GRID_ERR_CANCELED)
            << "server " << r.server_id << " reported failing with " << grid_error_name(r.code);
}

TEST_F(MetaRoute, EveryServerFailingNamesEachOne) {
    int pa = closed_port(), pb = closed_port();
    FakeMeta meta({entry(1, pa), entry(2, pb)});
    use(meta);
    EXPECT_EQ(GRID_ERR_CONNECT, grid_call("test/null_call"));
    std::string msg = grid_last_error();
    EXPECT_NE(std::string::npos, msg.find("test/null_call: no server could run the call: ")) << msg;
    EXPECT_NE(std::string::npos, msg.find("127.0.0.1:" + std::to_string(pa) + " (connection refused)"))
        << msg;
    EXPECT_NE(std::string::npos, msg.find("127.0.0.1:" + std::to_string(pb) + " (connection refused)"))
        << msg;
}

TEST_F(MetaRoute, NoRetryFlagStopsFailover) {
    TestServer a, b;
    FakeMeta meta({entry(1, a.port()), entry(2, b.port())});
    use(meta);
    ASSERT_TRUE(echo_ok()) << grid_last_error();
    a.stop(SIGKILL);
    EXPECT_EQ(GRID_ERR_ARGS, grid_set_call_flags_np(0x80));
    ASSERT_EQ(GRID_OK, grid_set_call_flags_np(GRID_CALL_NO_RETRY_NP));
    size_t before = meta.schedules().size();
    EXPECT_FALSE(echo_ok());
    std::string msg = grid_last_error();
    EXPECT_NE(std::string::npos, msg.find("not retried")) << msg;
    EXPECT_NE(std::string::npos, msg.find("GRID_CALL_NO_RETRY_NP")) << msg;
    auto s = meta.schedules();
    for (size_t i = before; i < s.size(); i++)
        EXPECT_EQ(0u, s[i].nexclude) << "a SCHEDULE asked for another server";
    // Without the flag the same call fails over.
    grid_set_call_flags_np(0);
    EXPECT_TRUE(echo_ok()) << grid_last_error();
    EXPECT_EQ(b.address(), last_server());
}

// A fake server whose test/null_call descriptor has FLAGS and which drops the
// connection on every CALL (a server killed while the call runs).
struct DroppingServer {
    std::vector<uint8_t> desc;
    fake_server *fs = nullptr;
    explicit DroppingServer(uint32_t flags) {
        const gridrpc_stub_module *mod = &gridrpc_module_test;
        for (unsigned i = 0; i < mod->nfunctions; i++) {
            if (strcmp(mod->functions[i].name, "null_call") != 0) continue;
            grd_desc *d = nullptr;
            grd_error err = {0, ""};
            if (grd_decode(mod->functions[i].descriptor, mod->functions[i].descriptor_len, &d, &err) !=
                GRD_OK)
                throw std::runtime_error(err.msg);
            d->flags |= flags;
            uint8_t *buf = nullptr;
            size_t len = 0;
            if (grd_encode(d, &buf, &len, &err) != GRD_OK) throw std::runtime_error(err.msg);
            desc.assign(buf, buf + len);
            free(buf);
            grd_free(d);
        }
        fs = fake_server_start(
            [](fake_server *f, int fd, const fake_msg *m, void *user) -> int {
                auto *self = static_cast<DroppingServer *>(user);
                if (m->h.type == GRP_CALL) return FAKE_CLOSE;
                if (m->h.type != GRP_GET_DESCRIPTOR) return fake_default_reply(f, fd, m, user);
                fake_buf b = {nullptr, 0, 0};
                fake_buf_begin(&b, GRP_DESCRIPTOR, m->h.request_id);
                fake_buf_string(&b, "test/null_call", 14);
                fake_buf_string(&b, reinterpret_cast<const char *>(self->desc.data()), self->desc.size());
                fake_buf_finish(&b);
                int rc = fake_send_raw(fd, b.p, b.len);
                fake_buf_free(&b);
                return rc ? FAKE_CLOSE : FAKE_KEEP;
            },
            this);
        if (!fs) throw std::runtime_error("fake server");
    }
    ~DroppingServer() { fake_server_stop(fs); }
    int port() const { return fake_server_port(fs); }
};

TEST_F(MetaRoute, RetryNoFunctionIsNotRunTwice) {
    TestServer b;
    {
        DroppingServer a(GRD_FF_NO_RETRY);
        FakeMeta meta({entry(1, a.port()), entry(2, b.port())});
        use(meta);
        EXPECT_EQ(GRID_ERR_CONN_LOST, grid_call("test/null_call"));
        std::string msg = grid_last_error();
        EXPECT_NE(std::string::npos, msg.find("not retried on another server")) << msg;
        EXPECT_NE(std::string::npos, msg.find("Retry \"no\"")) << msg;
        for (auto &s : meta.schedules())
            EXPECT_EQ(0u, s.nexclude) << "a SCHEDULE asked for another server";
    }
    grid_reset_np();
    {
        DroppingServer a(0); // the same failure without the flag: b runs it
        FakeMeta meta({entry(1, a.port()), entry(2, b.port())});
        use(meta);
        EXPECT_EQ(GRID_OK, grid_call("test/null_call")) << grid_last_error();
        EXPECT_EQ(b.address(), last_server());
    }
}

// Runs F with stderr going to a file; returns what was written.
template <class F> std::string capture_stderr(F f) {
    char path[] = "/tmp/meta-route-stderr-XXXXXX";
    int fd = mkstemp(path);
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);
    f();
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    close(fd);
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    unlink(path);
    return ss.str();
}

size_t count(const std::string &s, const std::string &what) {
    size_t n = 0;
    for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1))
        n++;
    return n;
}

TEST_F(MetaRoute, MetaserverGoneUsesLastKnownServersAndWarnsOnce) {
    setenv("GRIDRPC_REUSE", "0", 1); // each call asks (a reused decision would not notice)
    grid_reset_np();
    TestServer a, b;
    FakeMeta meta({entry(1, a.port()), entry(2, b.port())});
    use(meta);
    ASSERT_TRUE(echo_ok()) << grid_last_error();
    EXPECT_GE(meta.servers_requests(), 1);
    meta.stop();
    std::vector<std::string> used;
    std::string err = capture_stderr([&] {
        for (int i = 0; i < 4; i++) {
            // The client tries the metaserver again once a second: the outage goes on.
            if (i == 2) std::this_thread::sleep_for(std::chrono::milliseconds(1100));
            EXPECT_TRUE(echo_ok()) << grid_last_error();
            used.push_back(last_server());
        }
    });
    EXPECT_EQ(1u, count(err, "warning: the metaserver at 127.0.0.1:" + std::to_string(meta.port()) +
                                 " is unreachable"))
        << err;
    // Round robin over the servers it last named.
    EXPECT_NE(std::find(used.begin(), used.end(), a.address()), used.end());
    EXPECT_NE(std::find(used.begin(), used.end(), b.address()), used.end());
}

TEST_F(MetaRoute, MetaserverNeverReachedSaysItIsAMetaserver) {
    grid_reset_np();
    int port;
    {
        FakeMeta gone({});
        port = gone.port();
        gone.stop();
    }
    ASSERT_EQ(GRID_OK, grid_set_metaserver_np("127.0.0.1", port));
    std::string err = capture_stderr([&] { EXPECT_FALSE(echo_ok()); });
    std::string msg = grid_last_error();
    // The connect's hint names the daemon that is missing: a gridmetad, not a gridrpcd.
    EXPECT_NE(std::string::npos, msg.find("is gridmetad running there?")) << msg;
    EXPECT_EQ(std::string::npos, msg.find("gridrpcd")) << msg;
    EXPECT_NE(std::string::npos, msg.find("no server is known from an earlier contact")) << msg;
    // The warning does not speak of "the 0 servers it last named".
    EXPECT_EQ(1u, count(err, "is unreachable")) << err;
    EXPECT_NE(std::string::npos, err.find("it named no server before")) << err;
    EXPECT_EQ(std::string::npos, err.find("the 0 servers")) << err;
}

TEST_F(MetaRoute, MetaserverBackIsAskedAgainAndANewOutageWarnsAgain) {
    setenv("GRIDRPC_REUSE", "0", 1);
    grid_reset_np();
    TestServer a;
    auto meta = std::make_unique<FakeMeta>(std::vector<FakeMeta::Server>{entry(1, a.port())});
    int port = meta->port();
    use(*meta);
    ASSERT_TRUE(echo_ok()) << grid_last_error();
    meta->stop();
    std::string err = capture_stderr([&] { EXPECT_TRUE(echo_ok()) << grid_last_error(); });
    EXPECT_EQ(1u, count(err, "is unreachable")) << err;
    meta.reset();
    meta = std::make_unique<FakeMeta>(std::vector<FakeMeta::Server>{entry(1, a.port())}, port);
    std::this_thread::sleep_for(std::chrono::milliseconds(1100)); // the client retries once a second
    ASSERT_TRUE(echo_ok()) << grid_last_error();
    EXPECT_EQ(1u, meta->schedules().size()); // asked again (the descriptor is known)
    meta->stop();
    err = capture_stderr([&] { EXPECT_TRUE(echo_ok()) << grid_last_error(); });
    EXPECT_EQ(1u, count(err, "is unreachable")) << err;
}

TEST_F(MetaRoute, QuietSilencesTheWarning) {
    TestServer a;
    FakeMeta meta({entry(1, a.port())});
    use(meta);
    ASSERT_TRUE(echo_ok()) << grid_last_error();
    meta.stop();
    setenv("GRIDRPC_QUIET", "1", 1);
    std::string err = capture_stderr([&] { EXPECT_TRUE(echo_ok()) << grid_last_error(); });
    EXPECT_EQ("", err);
}

TEST_F(MetaRoute, MetaserverNeverReachedSaysWhatToDo) {
    int p = closed_port();
    ASSERT_EQ(GRID_OK, grid_set_metaserver_np("127.0.0.1", p));
    setenv("GRIDRPC_QUIET", "1", 1);
    EXPECT_EQ(GRID_ERR_CONNECT, grid_call("test/null_call"));
    std::string msg = grid_last_error();
    EXPECT_NE(std::string::npos, msg.find("the metaserver at 127.0.0.1:" + std::to_string(p))) << msg;
    EXPECT_NE(std::string::npos, msg.find("no server is known")) << msg;
    EXPECT_NE(std::string::npos, msg.find("gridrpc://HOST:PORT/test/null_call")) << msg;
}

TEST_F(MetaRoute, UrlAlwaysGoesDirect) {
    TestServer a;
    FakeMeta meta({});
    use(meta);
    ASSERT_EQ(GRID_OK, grid_call(a.url("test/null_call").c_str())) << grid_last_error();
    EXPECT_EQ(0u, meta.schedules().size());
}

TEST_F(MetaRoute, AsyncCallsRouteAndFailOver) {
    TestServer a, b;
    FakeMeta meta({entry(1, a.port()), entry(2, b.port())});
    use(meta);
    std::vector<double> in(50, 2.5), out(50, 0);
    int id = grid_call_async("test/echo_double", 50, in.data(), out.data());
    ASSERT_GT(id, 0) << grid_last_error();
    ASSERT_EQ(GRID_OK, grid_wait(id)) << grid_last_error();
    EXPECT_EQ(in, out);
    EXPECT_EQ(a.address(), last_server());
    EXPECT_EQ(1u, meta.call_reports(1).size());

    // Killed while the call runs: the reader thread sends it to b.
    id = grid_call_async("test/sleep", 0.5);
    ASSERT_GT(id, 0) << grid_last_error();
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    a.stop(SIGKILL);
    ASSERT_EQ(GRID_OK, grid_wait(id)) << grid_last_error();
    EXPECT_EQ(b.address(), last_server());

    // Refused at the start: the caller's thread picks b.
    std::fill(out.begin(), out.end(), 0);
    id = grid_call_async("test/echo_double", 50, in.data(), out.data());
    ASSERT_GT(id, 0) << grid_last_error();
    ASSERT_EQ(GRID_OK, grid_wait(id)) << grid_last_error();
    EXPECT_EQ(in, out);
    EXPECT_EQ(b.address(), last_server());
}

TEST_F(MetaRoute, AsyncAllFailingNamesEachServer) {
    TestServer a;
    FakeMeta meta({entry(1, a.port())});
    use(meta);
    ASSERT_EQ(GRID_OK, grid_call("test/null_call")) << grid_last_error();
    int id = grid_call_async("test/sleep", 0.5);
    ASSERT_GT(id, 0) << grid_last_error();
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    a.stop(SIGKILL);
    EXPECT_EQ(GRID_ERR_CONN_LOST, grid_wait(id));
    std::string msg = grid_last_error();
    EXPECT_NE(std::string::npos,
              msg.find("test/sleep: no server could run the call: " + a.address() + " (connection"))
        << msg;
}

TEST_F(MetaRoute, SchedulerPolicyTravelsInSchedule) {
    TestServer a;
    FakeMeta meta({entry(1, a.port())});
    use(meta);
    setenv("GRIDRPC_REUSE", "0", 1); // every call asks
    grid_reset_np();
    use(meta);
    EXPECT_EQ(GRID_ERR_ARGS, grid_set_scheduler_np("fastest"));
    std::string msg = grid_last_error();
    EXPECT_NE(std::string::npos, msg.find("mct")) << msg;
    EXPECT_NE(std::string::npos, msg.find("least-load")) << msg;
    EXPECT_NE(std::string::npos, msg.find("round-robin")) << msg;
    ASSERT_EQ(GRID_OK, grid_set_scheduler_np("least-load"));
    ASSERT_EQ(GRID_OK, grid_call("test/null_call")) << grid_last_error();
    EXPECT_EQ(static_cast<uint32_t>(GRP_POLICY_LEAST_LOAD), meta.schedules().back().policy);
    ASSERT_EQ(GRID_OK, grid_set_scheduler_np("round-robin"));
    ASSERT_EQ(GRID_OK, grid_call("test/null_call")) << grid_last_error();
    EXPECT_EQ(static_cast<uint32_t>(GRP_POLICY_ROUND_ROBIN), meta.schedules().back().policy);
    ASSERT_EQ(GRID_OK, grid_set_scheduler_np(nullptr));
    ASSERT_EQ(GRID_OK, grid_call("test/null_call")) << grid_last_error();
    EXPECT_EQ(static_cast<uint32_t>(GRP_POLICY_DEFAULT), meta.schedules().back().policy);
}

TEST_F(MetaRoute, SchedulerFromEnvironmentAndBadValue) {
    TestServer a;
    FakeMeta meta({entry(1, a.port())});
    setenv("GRIDRPC_SCHEDULER", "mct", 1);
    grid_reset_np();
    use(meta);
    ASSERT_EQ(GRID_OK, grid_call("test/null_call")) << grid_last_error();
    EXPECT_EQ(static_cast<uint32_t>(GRP_POLICY_MCT), meta.schedules().back().policy);
    setenv("GRIDRPC_SCHEDULER", "fastest", 1);
    grid_reset_np();
    EXPECT_EQ(GRID_ERR_CONFIG, grid_call("test/null_call"));
    EXPECT_NE(std::string::npos, std::string(grid_last_error()).find("GRIDRPC_SCHEDULER"))
        << grid_last_error();
}

// A call predicted to take less than asking the metaserver reuses the last decision. The
// metaserver answers 100 ms late, so a null call is always the cheaper (also under
// sanitizers on a loaded machine, where both round trips on loopback are noise), and the
// window is long enough that only the count of uses ends a decision.
TEST_F(MetaRoute, TinyCallsReuseTheDecision) {
    TestServer a;
    FakeMeta meta({entry(1, a.port())});
    meta.set_schedule_delay_ms(100);
    setenv("GRIDRPC_REUSE_FOR", "600", 1);
    grid_reset_np();
    use(meta);
    for (int i = 0; i < 40; i++)
        ASSERT_EQ(GRID_OK, grid_call("test/null_call")) << grid_last_error();
    size_t asked = meta.schedules().size();
    EXPECT_LE(asked, 3u) << "null calls should reuse the last decision";
    // Reused calls are still reported now and then (one in 8), with decision 0.
    size_t reused_reports = 0;
    for (auto &r : meta.call_reports(40)) // waits its 2 s: every REPORT that will come
        reused_reports += r.decision == 0 && r.code == GRID_OK;
    EXPECT_GE(reused_reports, 1u);
    EXPECT_LE(reused_reports, 6u) << "one reused call in 8 is reported, not each";

    // GRIDRPC_REUSE=4: a decision serves at most 4 more calls.
    setenv("GRIDRPC_REUSE", "4", 1);
    grid_reset_np();
    use(meta);
    size_t before = meta.schedules().size();
    for (int i = 0; i < 10; i++)
        ASSERT_EQ(GRID_OK, grid_call("test/null_call")) << grid_last_error();
    EXPECT_GE(meta.schedules().size() - before, 2u);
    EXPECT_LE(meta.schedules().size() - before, 4u);

    // GRIDRPC_REUSE_FOR: a decision older than the window is not reused.
    unsetenv("GRIDRPC_REUSE");
    setenv("GRIDRPC_REUSE_FOR", "0.05", 1);
    grid_reset_np();
    use(meta);
    before = meta.schedules().size();
    for (int i = 0; i < 3; i++) {
        ASSERT_EQ(GRID_OK, grid_call("test/null_call")) << grid_last_error();
        std::this_thread::sleep_for(std::chrono::milliseconds(120));
    }
    EXPECT_EQ(before + 3, meta.schedules().size());

    // GRIDRPC_REUSE=0: every call asks.
    setenv("GRIDRPC_REUSE", "0", 1);
    unsetenv("GRIDRPC_REUSE_FOR");
    grid_reset_np();
    use(meta);
    before = meta.schedules().size();
    for (int i = 0; i < 10; i++)
        ASSERT_EQ(GRID_OK, grid_call("test/null_call")) << grid_last_error();
    EXPECT_EQ(before + 10, meta.schedules().size()); // the descriptor needs none
}

TEST_F(MetaRoute, BigCallsAskEveryTime) {
    TestServer a;
    FakeMeta meta({entry(1, a.port())});
    use(meta);
    for (int i = 0; i < 6; i++)
        ASSERT_TRUE(echo_ok(200000)) << grid_last_error(); // 1.6 MB each way
    EXPECT_EQ(6u, meta.schedules().size());
}

TEST_F(MetaRoute, ProbeMeasuresUnknownLinks) {
    TestServer a, b;
    auto known = entry(2, b.port());
    known.bandwidth = 1e9; // the metaserver knows this link: not probed
    FakeMeta meta({entry(1, a.port()), known});
    use(meta);
    ASSERT_EQ(GRID_OK, grid_call("test/null_call")) << grid_last_error();
    std::vector<grp_report> probes;
    for (int i = 0; i < 200 && probes.empty(); i++) {
        for (auto &r : meta.reports())
            if (!r.function[0]) probes.push_back(r);
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_FALSE(probes.empty());
    for (auto &r : probes) {
        EXPECT_EQ(1u, r.server_id);
        EXPECT_EQ(0u, r.decision);
        EXPECT_EQ(GRID_OK, r.code);
        EXPECT_GT(r.total_ns, 0u);
        EXPECT_STREQ("testsite", r.site);
    }
    EXPECT_EQ(0u, probes[0].bytes_in); // the PING round trip
    // A gridrpcd that answers PROBE adds the bandwidth report; one that refuses it
    // (older) leaves the PING report alone. Either way nothing else is reported.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    probes.clear();
    for (auto &r : meta.reports())
        if (!r.function[0]) probes.push_back(r);
    ASSERT_LE(probes.size(), 2u);
    if (probes.size() == 2) {
        EXPECT_EQ(262144u, probes[1].bytes_in);
        EXPECT_EQ(262144u, probes[1].bytes_out);
        EXPECT_GT(probes[1].total_ns, probes[0].total_ns);
    }
}

TEST_F(MetaRoute, ConfigurationNamesTheMetaserver) {
    TestServer a, direct;
    FakeMeta meta({entry(1, a.port())});
    char path[] = "/tmp/meta-route-conf-XXXXXX";
    int fd = mkstemp(path);
    std::string text =
        "server " + direct.address() + "\nmetaserver 127.0.0.1:" + std::to_string(meta.port()) + "\n";
    ASSERT_EQ(static_cast<ssize_t>(text.size()), write(fd, text.data(), text.size()));
    close(fd);
    setenv("GRIDRPC_CONFIG", path, 1);
    grid_reset_np();
    // Both configured: a plain name goes to the metaserver.
    ASSERT_EQ(GRID_OK, grid_call("test/null_call")) << grid_last_error();
    EXPECT_EQ(a.address(), last_server());
    char host[256];
    int port = 0;
    ASSERT_EQ(GRID_OK, grid_get_metaserver_np(host, sizeof host, &port));
    EXPECT_EQ(meta.port(), port);
    // "" routes nothing: the default server again.
    ASSERT_EQ(GRID_OK, grid_set_metaserver_np("", 0));
    ASSERT_EQ(GRID_OK, grid_call("test/null_call")) << grid_last_error();
    EXPECT_EQ(direct.address(), last_server());
    unsetenv("GRIDRPC_CONFIG");
    unlink(path);
    // The environment form.
    setenv("GRIDRPC_METASERVER", ("127.0.0.1:" + std::to_string(meta.port())).c_str(), 1);
    grid_reset_np();
    ASSERT_EQ(GRID_OK, grid_call("test/null_call")) << grid_last_error();
    EXPECT_EQ(a.address(), last_server());
    setenv("GRIDRPC_METASERVER", "nowhere", 1);
    grid_reset_np();
    EXPECT_EQ(GRID_ERR_CONFIG, grid_call("test/null_call"));
    EXPECT_NE(std::string::npos, std::string(grid_last_error()).find("GRIDRPC_METASERVER"))
        << grid_last_error();
    unsetenv("GRIDRPC_METASERVER");
}

TEST_F(MetaRoute, OgfDefaultHandleGoesThroughTheMetaserver) {
    TestServer a, other;
    FakeMeta meta({entry(1, a.port())});
    char path[] = "/tmp/meta-route-ngconf-XXXXXX";
    int fd = mkstemp(path);
    std::string text = "<CLIENT>\n  metaserver 127.0.0.1:" + std::to_string(meta.port()) +
                       "\n</CLIENT>\n<SERVER>\n  hostname 127.0.0.1\n  port " + std::to_string(other.port()) +
                       "\n</SERVER>\n";
    ASSERT_EQ(static_cast<ssize_t>(text.size()), write(fd, text.data(), text.size()));
    close(fd);
    ASSERT_EQ(GRPC_NO_ERROR, grpc_initialize(path));
    grpc_function_handle_t h;
    ASSERT_EQ(GRPC_NO_ERROR, grpc_function_handle_default(&h, "test/null_call")) << grid_last_error();
    ASSERT_EQ(GRPC_NO_ERROR, grpc_call(&h)) << grid_last_error();
    EXPECT_EQ(a.address(), last_server());
    EXPECT_GE(meta.schedules().size(), 1u);
    grpc_function_handle_destruct(&h);
    grpc_finalize();
    unlink(path);
    // grpc_finalize gives the core's own (none) back.
    char host[256];
    int port = 1;
    ASSERT_EQ(GRID_OK, grid_get_metaserver_np(host, sizeof host, &port));
    EXPECT_STREQ("", host);
    EXPECT_EQ(0, port);
}

TEST_F(MetaRoute, LastServerNeedsRoom) {
    TestServer a;
    ASSERT_EQ(GRID_OK, grid_call(a.url("test/null_call").c_str())) << grid_last_error();
    char small[4];
    EXPECT_EQ(GRID_ERR_ARGS, grid_last_server_np(small, sizeof small));
    EXPECT_EQ(a.address(), last_server());
}

} // namespace
