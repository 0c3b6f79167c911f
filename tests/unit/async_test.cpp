// async_test.cpp: asynchronous calls against a real gridrpcd: many calls in flight on
// one connection, every wait form, probe, cancel of queued and running calls (and the
// promise that a canceled call never writes into the caller's buffers), timeouts.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "gridrpc.h"
#include "server_fixture.h"

namespace {

TestServer *server;
TestServer *single; // one worker: later calls queue behind a running one

class Async : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        server = new TestServer();
        single = new TestServer({"--threads", "1"});
        setenv("GRIDRPC_SERVER", server->address().c_str(), 1);
        unsetenv("GRIDRPC_TIMEOUT");
        grid_reset_np();
    }
    static void TearDownTestSuite() {
        grid_reset_np();
        delete server;
        delete single;
    }
};

TEST_F(Async, HundredCallsInFlight) {
    const int n = 100, len = 64;
    std::vector<std::vector<double>> in(n, std::vector<double>(len)), out(n, std::vector<double>(len, 0));
    std::vector<int> ids(n);
    for (int k = 0; k < n; k++) {
        for (int i = 0; i < len; i++)
            in[k][i] = k * 1000 + i;
        ids[k] = grid_call_async("test/echo_double", len, in[k].data(), out[k].data());
        ASSERT_GT(ids[k], 0) << grid_last_error();
    }
    ASSERT_EQ(GRID_OK, grid_wait_all()) << grid_last_error();
    for (int k = 0; k < n; k++)
        EXPECT_EQ(in[k], out[k]) << "call " << k;
    for (int k = 0; k < n; k++) {
        EXPECT_EQ(1, grid_probe(ids[k]));
        EXPECT_EQ(GRID_OK, grid_call_error_np(ids[k]));
        EXPECT_EQ(1, grid_call_waited_np(ids[k]));
        grid_forget_np(ids[k]);
    }
    EXPECT_EQ(-GRID_ERR_ARGS, grid_probe(ids[0])); // forgotten
}

TEST_F(Async, WaitAnyAndOr) {
    int slow = grid_call_async("test/sleep", 0.3);
    int fast = grid_call_async("test/null_call");
    ASSERT_GT(slow, 0);
    ASSERT_GT(fast, 0);
    int done = 0;
    ASSERT_EQ(GRID_OK, grid_wait_any(&done));
    EXPECT_EQ(fast, done);
    ASSERT_EQ(GRID_OK, grid_wait_any(&done));
    EXPECT_EQ(slow, done);
    ASSERT_EQ(GRID_OK, grid_wait_any(&done)); // nothing outstanding
    EXPECT_EQ(GRID_ID_NONE, done);

    int k = 0;
    double v = 1;
    char *str = nullptr;
    int ids[2] = {grid_call_async("test/sleep", 0.3), grid_call_async("test/inout_scalars", &k, &v, &str)};
    ASSERT_GT(ids[0], 0);
    ASSERT_GT(ids[1], 0) << grid_last_error();
    ASSERT_EQ(GRID_OK, grid_wait_or(ids, 2, &done)) << grid_last_error();
    EXPECT_EQ(ids[1], done);
    EXPECT_EQ(1, k);
    EXPECT_EQ(2.0, v);
    EXPECT_STREQ("replaced", str);
    free(str);
    ASSERT_EQ(GRID_OK, grid_wait_and(ids, 2));
}

TEST_F(Async, WaitReportsFailuresPerCall) {
    double x[2];
    int ok = grid_call_async("test/null_call");
    int bad = grid_call_async("test/echo_double", -1, x, x);
    EXPECT_EQ(-GRID_ERR_ARGS, bad); // refused before it started
    int missing = grid_call_async("test/no_such_function");
    EXPECT_EQ(-GRID_ERR_NOT_FOUND, missing);
    EXPECT_EQ(GRID_OK, grid_wait(ok));
    EXPECT_EQ(GRID_ERR_ARGS, grid_wait(123456789));
    EXPECT_NE(nullptr, strstr(grid_last_error(), "unknown call id")) << grid_last_error();
}

TEST_F(Async, ProbeSeesCompletionWithoutOtherCalls) {
    int id = grid_call_async("test/sleep", 0.05);
    ASSERT_GT(id, 0);
    auto t0 = std::chrono::steady_clock::now();
    while (grid_probe(id) == 0) {
        ASSERT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
    }
    EXPECT_EQ(GRID_OK, grid_wait(id));
}

TEST_F(Async, CancelQueuedCall) {
    std::string blocker = single->url("test/sleep");
    std::string target = single->url("test/sleep_cancelable");
    int running = grid_call_async(blocker.c_str(), 0.5);
    ASSERT_GT(running, 0) << grid_last_error();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    double out[4] = {0, 0, 0, 0};
    int canceled_flag = -1;
    int queued = grid_call_async(target.c_str(), 0.0, 4, out, &canceled_flag);
    ASSERT_GT(queued, 0);
    EXPECT_EQ(0, grid_probe(queued));
    ASSERT_EQ(GRID_OK, grid_cancel(queued));
    EXPECT_EQ(GRID_ERR_CANCELED, grid_wait(queued));
    EXPECT_EQ(GRID_OK, grid_wait(running));
    // The server dropped the queued call: nothing ever reaches our buffers.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    for (double v : out)
        EXPECT_EQ(0.0, v);
    EXPECT_EQ(-1, canceled_flag);
}

TEST_F(Async, CancelRunningCall) {
    std::string url = single->url("test/sleep_cancelable");
    double out[4] = {0, 0, 0, 0};
    int flag = -1;
    int id = grid_call_async(url.c_str(), 5.0, 4, out, &flag);
    ASSERT_GT(id, 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    auto t0 = std::chrono::steady_clock::now();
    ASSERT_EQ(GRID_OK, grid_cancel(id));
    // Released at once: well before the 5 s call would end, with room for a loaded machine.
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(2500));
    EXPECT_EQ(GRID_ERR_CANCELED, grid_wait(id));
    EXPECT_EQ(GRID_ERR_CANCELED, grid_call_error_np(id));
    // The server saw the flag and stopped early: the next call on it runs promptly.
    t0 = std::chrono::steady_clock::now();
    std::string null_url = single->url("test/null_call");
    EXPECT_EQ(GRID_OK, grid_call(null_url.c_str())) << grid_last_error();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
    for (double v : out)
        EXPECT_EQ(0.0, v); // never written after cancel returned
    EXPECT_EQ(-1, flag);
    EXPECT_EQ(GRID_OK, grid_cancel(id)); // canceling a finished call changes nothing
}

TEST_F(Async, TimeoutCancelsTheCall) {
    ASSERT_EQ(GRID_OK, grid_set_timeouts_np(5, 0.2));
    int id = grid_call_async("test/sleep", 2.0);
    ASSERT_GT(id, 0);
    EXPECT_EQ(GRID_ERR_TIMEOUT, grid_wait(id));
    ASSERT_EQ(GRID_OK, grid_set_timeouts_np(10, 0));
    EXPECT_EQ(GRID_OK, grid_call("test/null_call"));
}

TEST_F(Async, ServerDeathFailsCallsInFlight) {
    TestServer doomed;
    std::string url = doomed.url("test/sleep");
    int ids[3];
    for (int &id : ids) {
        id = grid_call_async(url.c_str(), 10.0);
        ASSERT_GT(id, 0);
    }
    doomed.stop(SIGKILL);
    for (int id : ids)
        EXPECT_EQ(GRID_ERR_CONN_LOST, grid_wait(id));
}

TEST_F(Async, ConcurrentThreadsShareThePipe) {
    std::vector<std::thread> ts;
    std::vector<int> bad(8, 0);
    for (int t = 0; t < 8; t++)
        ts.emplace_back([t, &bad] {
            for (int i = 0; i < 50; i++) {
                int in[3] = {t, i, 7}, out[3] = {0, 0, 0};
                int id = grid_call_async("test/echo_int", 3, in, out);
                if (id <= 0 || grid_wait(id) != GRID_OK || memcmp(in, out, sizeof in) != 0) bad[t]++;
                grid_forget_np(id);
            }
        });
    for (auto &t : ts)
        t.join();
    for (int t = 0; t < 8; t++)
        EXPECT_EQ(0, bad[t]) << t;
}

} // namespace
