// blackbox_test.cpp: the client library against scripted fake servers (fake_server.h)
// and real gridrpcd processes, through the public API only: out-of-range error codes on
// every reply path, an ERROR message over the client's limit, float byte order on the
// wire, grid_cancel racing a half-received RESULT, the config file's token, the SJF
// and FCFS queues with one worker, and --isolate reporting a child killed by a signal.
// Every call runs under a client call timeout, so a missing reply fails, never hangs.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "grp_types.h"
#include "fake_server.h"
#include "gridrpc.h"
#include "server_fixture.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

class Blackbox : public ::testing::Test {
  protected:
    void SetUp() override {
        unsetenv("GRIDRPC_CONFIG");
        unsetenv("GRIDRPC_TOKEN");
        unsetenv("GRIDRPC_TIMEOUT");
        grid_reset_np();
        ASSERT_EQ(GRID_OK, grid_set_timeouts_np(5, 20));
    }
    void TearDown() override {
        grid_reset_np();
        unsetenv("GRIDRPC_SERVER");
        if (fs_) fake_server_stop(fs_);
        fs_ = nullptr;
    }
    // Starts a fake server and points GRIDRPC_SERVER at it.
    void fake(fake_handler h, void *user) {
        fs_ = fake_server_start(h, user);
        ASSERT_NE(nullptr, fs_);
        setenv("GRIDRPC_SERVER", fake_server_address(fs_), 1);
        grid_reset_np();
    }
    fake_server *fs_ = nullptr;
};

// ---------------------------------------------------------------- error codes

// Answers messages of type `on` with ERROR `code`; everything else as a server would.
struct ErrorOn {
    uint32_t on;
    int32_t code;
    std::string msg = "scripted error";
};

int error_on(fake_server *fs, int fd, const fake_msg *m, void *user) {
    auto *s = static_cast<ErrorOn *>(user);
    if (m->h.type == s->on)
        return fake_send_error(fd, m->h.request_id, s->code, s->msg.c_str()) ? FAKE_CLOSE : FAKE_KEEP;
    return fake_default_reply(fs, fd, m, user);
}

enum class Path { Hello, Descriptor, SyncCall, AsyncCall };

int call_through(Path p) {
    if (p != Path::AsyncCall) return grid_call("test/null_call");
    int id = grid_call_async("test/null_call");
    if (id <= 0) return -id;
    return grid_wait(id);
}

uint32_t type_of(Path p) {
    switch (p) {
    case Path::Hello: return GRP_HELLO;
    case Path::Descriptor: return GRP_GET_DESCRIPTOR;
    default: return GRP_CALL;
    }
}

class ErrorCodes : public Blackbox, public ::testing::WithParamInterface<Path> {};

// A code outside 1..GRID_ERROR_COUNT_NP-1 is the server breaking the protocol.
TEST_P(ErrorCodes, OutOfRangeCodeIsProtocolError) {
    for (int32_t code : {0, -5, 9999}) {
        SCOPED_TRACE("code " + std::to_string(code));
        ErrorOn s{type_of(GetParam()), code};
        fake(error_on, &s);
        int rc = call_through(GetParam());
        EXPECT_EQ(GRID_ERR_PROTOCOL, rc) << grid_error_name(rc) << ": " << grid_last_error();
        grid_reset_np();
        fake_server_stop(fs_);
        fs_ = nullptr;
    }
}

// An in-range code comes through as itself (the check above is not "everything is
// PROTOCOL").
TEST_P(ErrorCodes, InRangeCodeComesThrough) {
    ErrorOn s{type_of(GetParam()), GRID_ERR_NOMEM, "scripted out of memory"};
    fake(error_on, &s);
    int rc = call_through(GetParam());
    EXPECT_EQ(GRID_ERR_NOMEM, rc) << grid_error_name(rc) << ": " << grid_last_error();
}

// The newest code, a refused key or token, is read as itself on every path (a peer that
// predates it would see an unknown code: OutOfRangeCodeIsProtocolError).
TEST_P(ErrorCodes, AuthCodeComesThrough) {
    ErrorOn s{type_of(GetParam()), GRID_ERR_AUTH, "authentication failed: scripted"};
    fake(error_on, &s);
    int rc = call_through(GetParam());
    EXPECT_EQ(GRID_ERR_AUTH, rc) << grid_error_name(rc) << ": " << grid_last_error();
    EXPECT_NE(nullptr, strstr(grid_last_error(), "authentication failed: scripted")) << grid_last_error();
}

std::string path_name(const ::testing::TestParamInfo<Path> &info) {
    static const char *const names[] = {"Hello", "Descriptor", "SyncCall", "AsyncCall"};
    return names[static_cast<int>(info.param)];
}

INSTANTIATE_TEST_SUITE_P(EveryReplyPath, ErrorCodes,
                         ::testing::Values(Path::Hello, Path::Descriptor, Path::SyncCall, Path::AsyncCall),
                         path_name);

// ---------------------------------------------------------------- a server gone as a call left

// The first CALL is answered (an ERROR: the connection stays and goes back to the pool);
// on the second, which reuses that pooled connection, the server stops listening and
// closes it, as a server killed as the call arrived does. The client cannot tell that
// from a pooled connection closed while idle, so it sends the call once more, finds the
// port closed, and must report the call as lost (it may have run), never as one that
// never left (GRID_ERR_CONNECT, which a caller may retry freely).
int gone_on_second_call(fake_server *fs, int fd, const fake_msg *m, void *user) {
    auto *calls = static_cast<int *>(user);
    if (m->h.type != GRP_CALL) return fake_default_reply(fs, fd, m, user);
    if (++*calls == 1)
        return fake_send_error(fd, m->h.request_id, GRID_ERR_FAILED, "first call") ? FAKE_CLOSE : FAKE_KEEP;
    fake_server_refuse(fs);
    return FAKE_CLOSE;
}

TEST_F(Blackbox, ServerGoneAsTheCallLeftIsALostConnection) {
    int calls = 0;
    fake(gone_on_second_call, &calls);
    EXPECT_EQ(GRID_ERR_FAILED, grid_call("test/null_call")) << grid_last_error();
    int rc = grid_call("test/null_call");
    EXPECT_EQ(GRID_ERR_CONN_LOST, rc) << grid_error_name(rc) << ": " << grid_last_error();
    EXPECT_NE(nullptr, strstr(grid_last_error(), "during the call")) << grid_last_error();
    EXPECT_EQ(2, calls); // the resend found the port closed: no third CALL
}

// ---------------------------------------------------------------- ERROR message limit

class ErrorMessage : public Blackbox, public ::testing::WithParamInterface<bool> {};

// 4095 bytes is the most an ERROR message may hold: 4095 comes through, 4096 is
// GRID_ERR_LIMIT naming the limit, and the process goes on to the next call.
TEST_P(ErrorMessage, OverTheLimitIsLimitError) {
    bool async = GetParam();
    Path p = async ? Path::AsyncCall : Path::SyncCall;
    ErrorOn s{GRP_CALL, GRID_ERR_FAILED, std::string(4095, 'm')};
    fake(error_on, &s);
    int rc = call_through(p);
    EXPECT_EQ(GRID_ERR_FAILED, rc) << grid_last_error();
    EXPECT_NE(nullptr, strstr(grid_last_error(), "mmmmmmmm")) << grid_last_error();

    s.msg = std::string(4096, 'm');
    grid_reset_np();
    rc = call_through(p);
    EXPECT_EQ(GRID_ERR_LIMIT, rc) << grid_error_name(rc) << ": " << grid_last_error();
    EXPECT_NE(nullptr, strstr(grid_last_error(), "4095")) << grid_last_error();

    s.msg = "short";
    grid_reset_np();
    rc = call_through(p);
    EXPECT_EQ(GRID_ERR_FAILED, rc) << grid_last_error();
}

std::string sync_name(const ::testing::TestParamInfo<bool> &info) {
    return info.param ? "Async" : "Sync";
}

INSTANTIATE_TEST_SUITE_P(SyncAndAsync, ErrorMessage, ::testing::Values(false, true), sync_name);

// ---------------------------------------------------------------- float byte order

const float kFloatIn[3] = {1.5f, -2.25f, 3.0e10f};
const float kFloatOut[3] = {4.5f, -8.0f, 1.0e-3f};

uint32_t be32(const uint8_t *b) {
    return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

// Checks that CALL echo_float carries kFloatIn big-endian; answers kFloatOut big-endian.
int float_server(fake_server *fs, int fd, const fake_msg *m, void *user) {
    auto *call_ok = static_cast<std::atomic<int> *>(user);
    if (m->h.type != GRP_CALL) return fake_default_reply(fs, fd, m, user);
    // name (string "test/echo_float": 4 + 16), hash (8), head (4 + int n), bulk.
    const size_t bulk = 20 + 8 + 8;
    int ok = m->len == bulk + 12 && be32(m->body + 32) == 3;
    for (int i = 0; ok && i < 3; i++) {
        uint32_t u;
        memcpy(&u, &kFloatIn[i], 4);
        ok = be32(m->body + bulk + 4 * i) == u;
    }
    call_ok->store(ok ? 1 : -1);
    fake_buf b = {nullptr, 0, 0};
    fake_buf_begin(&b, GRP_RESULT, m->h.request_id);
    fake_buf_u64(&b, 0);
    fake_buf_u64(&b, 0);
    fake_buf_u32(&b, 0);
    for (float f : kFloatOut) {
        uint32_t u;
        memcpy(&u, &f, 4);
        fake_buf_u32(&b, u);
    }
    fake_buf_finish(&b);
    int rc = fake_send_raw(fd, b.p, b.len);
    fake_buf_free(&b);
    return rc ? FAKE_CLOSE : FAKE_KEEP;
}

TEST_F(Blackbox, FloatsAreBigEndianOnTheWire) {
    std::atomic<int> call_ok{0};
    fake(float_server, &call_ok);
    float out[3] = {0, 0, 0};
    ASSERT_EQ(GRID_OK, grid_call("test/echo_float", 3, kFloatIn, out)) << grid_last_error();
    EXPECT_EQ(1, call_ok.load()) << "the CALL's floats were not big-endian";
    for (int i = 0; i < 3; i++)
        EXPECT_EQ(kFloatOut[i], out[i]) << i;
}

// ---------------------------------------------------------------- cancel vs. a half RESULT

struct HalfResult {
    int n;
    std::atomic<int> half_sent{0};
    std::atomic<int> rest_started{0};
};

// Answers CALL echo_double(n) with a RESULT of n 7.0s: half of it, a 300 ms pause, the rest.
int half_result(fake_server *fs, int fd, const fake_msg *m, void *user) {
    auto *s = static_cast<HalfResult *>(user);
    if (m->h.type != GRP_CALL) return fake_default_reply(fs, fd, m, user);
    fake_buf b = {nullptr, 0, 0};
    fake_buf_begin(&b, GRP_RESULT, m->h.request_id);
    fake_buf_u64(&b, 0);
    fake_buf_u64(&b, 0);
    fake_buf_u32(&b, 0);
    double v = 7.0;
    uint64_t u;
    memcpy(&u, &v, 8);
    for (int i = 0; i < s->n; i++)
        fake_buf_u64(&b, u);
    fake_buf_finish(&b);
    size_t half = b.len / 2;
    int rc = fake_send_raw(fd, b.p, half);
    s->half_sent.store(1);
    fake_sleep_ms(300);
    s->rest_started.store(1); // before the send: the client may consume it before send returns
    if (!rc) rc = fake_send_raw(fd, b.p + half, b.len - half);
    fake_buf_free(&b);
    return rc ? FAKE_CLOSE : FAKE_KEEP;
}

// grid_cancel during the pause waits until the reply is consumed; afterwards the
// caller's buffer never changes again.
TEST_F(Blackbox, CancelWaitsForAHalfReceivedResult) {
    HalfResult s;
    s.n = 20000;
    fake(half_result, &s);
    std::vector<double> in(s.n, 1.0), out(s.n, -1.0);
    int id = grid_call_async("test/echo_double", s.n, in.data(), out.data());
    ASSERT_GT(id, 0) << grid_last_error();
    auto t0 = Clock::now();
    while (!s.half_sent.load() && seconds_since(t0) < 10)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ASSERT_EQ(1, s.half_sent.load()) << "the fake server never got the CALL";
    std::this_thread::sleep_for(std::chrono::milliseconds(50)); // the reader is inside the body
    auto t1 = Clock::now();
    EXPECT_EQ(GRID_OK, grid_cancel(id)) << grid_last_error();
    double took = seconds_since(t1);
    EXPECT_EQ(1, s.rest_started.load())
        << "grid_cancel returned during the pause, before the rest of the RESULT was sent (" << took << " s)";
    std::vector<double> snapshot = out;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    EXPECT_TRUE(snapshot == out) << "the buffer changed after grid_cancel returned";
    int rc = grid_wait(id);
    EXPECT_TRUE(rc == GRID_ERR_CANCELED || rc == GRID_OK) << grid_error_name(rc);
    EXPECT_TRUE(snapshot == out) << "the buffer changed after grid_wait";
}

// ---------------------------------------------------------------- token in the config file

TEST_F(Blackbox, ConfigFileToken) {
    TestServer srv({"--token", "s3cret-token"});
    unsetenv("GRIDRPC_SERVER");
    char path[] = "/tmp/gridrpc-token-XXXXXX";
    int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    close(fd);
    setenv("GRIDRPC_CONFIG", path, 1);

    std::ofstream(path) << "server " << srv.address() << "\ntoken s3cret-token\n";
    grid_reset_np();
    EXPECT_EQ(GRID_OK, grid_call("test/null_call")) << grid_last_error();

    std::ofstream(path) << "server " << srv.address() << "\n";
    grid_reset_np();
    int rc = grid_call("test/null_call");
    EXPECT_NE(GRID_OK, rc) << "no token, yet the server accepted the call";
    EXPECT_NE(nullptr, strstr(grid_last_error(), "token")) << grid_last_error();

    std::ofstream(path) << "server " << srv.address() << "\ntoken wrong-token\n";
    grid_reset_np();
    rc = grid_call("test/null_call");
    EXPECT_NE(GRID_OK, rc) << "a wrong token, yet the server accepted the call";
    EXPECT_NE(nullptr, strstr(grid_last_error(), "token")) << grid_last_error();
    unlink(path);
}

// ---------------------------------------------------------------- queue order

// With one worker: a blocker runs, then a costly and a cheap call queue (in that order).
// Returns the start positions {blocker, costly, cheap}.
std::vector<int> queue_order(const TestServer &srv) {
    std::string fn = srv.url("test/sleep_cost");
    int ob = 0, oc = 0, oh = 0;
    int blocker = grid_call_async(fn.c_str(), 1, 0.8, &ob);
    std::this_thread::sleep_for(std::chrono::milliseconds(200)); // the blocker is running
    int costly = grid_call_async(fn.c_str(), 1000000000, 0.05, &oc);
    int cheap = grid_call_async(fn.c_str(), 1, 0.05, &oh);
    EXPECT_GT(blocker, 0) << grid_last_error();
    EXPECT_GT(costly, 0) << grid_last_error();
    EXPECT_GT(cheap, 0) << grid_last_error();
    EXPECT_EQ(GRID_OK, grid_wait_all()) << grid_last_error();
    return {ob, oc, oh};
}

TEST_F(Blackbox, SjfRunsTheCheapCallFirst) {
    TestServer srv({"--threads", "1", "--queue", "sjf"});
    std::vector<int> o = queue_order(srv);
    EXPECT_EQ(1, o[0]);
    EXPECT_EQ(2, o[2]) << "the cheap call did not run first";
    EXPECT_EQ(3, o[1]) << "the costly call did not run last";
}

TEST_F(Blackbox, FcfsRunsInArrivalOrder) {
    TestServer srv({"--threads", "1", "--queue", "fcfs"});
    std::vector<int> o = queue_order(srv);
    EXPECT_EQ(1, o[0]);
    EXPECT_EQ(2, o[1]);
    EXPECT_EQ(3, o[2]);
}

// ---------------------------------------------------------------- isolate mode

// A child killed by a signal is an error naming the signal, answered promptly.
TEST_F(Blackbox, IsolatedChildKilledBySignalIsAnError) {
    TestServer iso({"--isolate"});
    ASSERT_EQ(GRID_OK, grid_set_timeouts_np(5, 10));
    std::string crash = iso.url("test/crash");
    for (int how : {1, 3}) {
        SCOPED_TRACE("crash(" + std::to_string(how) + ")");
        auto t0 = Clock::now();
        int rc = grid_call(crash.c_str(), how);
        EXPECT_EQ(GRID_ERR_CRASHED, rc) << grid_error_name(rc) << ": " << grid_last_error();
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
        // The sanitizers catch the fault in the child and exit with their own status.
        EXPECT_TRUE(strstr(grid_last_error(), "signal") || strstr(grid_last_error(), "exited with status"))
            << grid_last_error();
#else
        EXPECT_NE(nullptr, strstr(grid_last_error(), "signal")) << grid_last_error();
#endif
        EXPECT_LT(seconds_since(t0), 8.0);
    }
    std::string null = iso.url("test/null_call");
    EXPECT_EQ(GRID_OK, grid_call(null.c_str())) << grid_last_error();
}

} // namespace
