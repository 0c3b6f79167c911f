// ogf_test.cpp: the OGF GridRPC API (grpc_*, GFD-R.52) end to end against real gridrpcd
// servers on loopback: initialize/finalize (twice, before, repeated), both configuration
// formats and their errors, handles (default, by tag, host, host:port, FUNCTION_INFO),
// sync and async calls, every wait and probe, cancel of queued and running calls,
// session queries after wait, the failed-session list, argument stacks in both
// spellings, and every error code.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "grpc.h"
#include "server_fixture.h"

namespace {

TestServer *server; // the default server: a worker per core
TestServer *single; // one worker: later calls queue behind a running one
std::string tmpdir;

std::string write_file(const std::string &name, const std::string &text) {
    std::string path = tmpdir + "/" + name;
    std::ofstream(path) << text;
    return path;
}

// A Ninf-G 5 client configuration naming both servers, with sections and attributes
// we ignore (with a warning) as real ones have.
std::string ninfg_config(const std::string &extra = "") {
    return "# Ninf-G 5 client configuration\n"
           "<CLIENT>\n"
           "    hostname localhost\n"
           "    loglevel 2   # a comment after a value\n"
           "</CLIENT>\n"
           "<SERVER>\n"
           "    hostname \"127.0.0.1\"\n"
           "    port " +
           std::to_string(server->port()) +
           "\n"
           "    tag main\n"
           "    invoke_server GT4py\n"
           "</SERVER>\n"
           "<SERVER>\n"
           "    hostname localhost\n"
           "    port " +
           std::to_string(single->port()) +
           "\n"
           "    tag single\n"
           "</SERVER>\n"
           "<FUNCTION_INFO>\n"
           "    hostname single\n"
           "    funcname test/echo_string\n"
           "</FUNCTION_INFO>\n"
           "<INVOKE_SERVER>\n"
           "    type GT4py\n"
           "</INVOKE_SERVER>\n" +
           extra;
}

// A TCP port with nothing listening on it.
int dead_port() {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a);
    socklen_t len = sizeof a;
    getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len);
    close(fd);
    return ntohs(a.sin_port);
}

class Ogf : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        server = new TestServer();
        single = new TestServer({"--threads", "1"});
        char dir[] = "/tmp/ogf-test.XXXXXX";
        tmpdir = mkdtemp(dir);
        // Nothing from the person running the tests: no ~/.ngconf, no ~/.gridrpc.conf.
        setenv("HOME", tmpdir.c_str(), 1);
        for (const char *v : {"GRIDRPC_SERVER", "GRIDRPC_CONFIG", "GRIDRPC_TIMEOUT", "NG_CONFIG_FILE"})
            unsetenv(v);
        grid_reset_np();
    }
    static void TearDownTestSuite() {
        grid_reset_np(); // stops the core's background readers (grpc_finalize keeps them)
        delete server;
        delete single;
        server = single = nullptr;
        std::string cmd = "rm -rf '" + tmpdir + "'";
        if (system(cmd.c_str()) != 0) perror("rm");
    }
    void SetUp() override {
        cfg_ = write_file("client.conf", ninfg_config());
        testing::internal::CaptureStderr(); // the warnings about ignored attributes
        ASSERT_EQ(GRPC_NO_ERROR, grpc_initialize(cfg_.c_str())) << grpc_last_error_np();
        warnings_ = testing::internal::GetCapturedStderr();
    }
    void TearDown() override {
        grpc_finalize(); // may have been finalized by the test already
    }
    std::string cfg_, warnings_;
};

// Tests that manage initialization themselves.
class OgfInit : public Ogf {
  protected:
    void SetUp() override {}
};

TEST_F(OgfInit, EverythingBeforeInitializeIsNotInitialized) {
    grpc_function_handle_t h;
    memset(&h, 0xab, sizeof h);
    grpc_function_handle_t before = h;
    grpc_sessionid_t id = 12345;
    EXPECT_EQ(GRPC_NOT_INITIALIZED, grpc_finalize());
    EXPECT_EQ(GRPC_NOT_INITIALIZED, grpc_function_handle_default(&h, "test/null_call"));
    EXPECT_EQ(GRPC_NOT_INITIALIZED, grpc_function_handle_init(&h, "main", "test/null_call"));
    EXPECT_EQ(GRPC_NOT_INITIALIZED, grpc_function_handle_destruct(&h));
    EXPECT_EQ(GRPC_NOT_INITIALIZED, grpc_call(&h));
    EXPECT_EQ(GRPC_NOT_INITIALIZED, grpc_call_async(&h, &id));
    EXPECT_EQ(0, memcmp(&h, &before, sizeof h)); // the handle was never touched
    EXPECT_EQ(12345, id);
    EXPECT_EQ(nullptr, grpc_arg_stack_new(3));
    EXPECT_EQ(nullptr, grpc_stack_create(3));
    EXPECT_EQ(GRPC_NOT_INITIALIZED, grpc_call_arg_stack(&h, nullptr));
    EXPECT_EQ(GRPC_NOT_INITIALIZED, grpc_call_argstack_async(&h, &id, nullptr));
    grpc_function_handle_t *hp = nullptr;
    EXPECT_EQ(GRPC_NOT_INITIALIZED, grpc_get_handle(&hp, 1));
    EXPECT_EQ(GRPC_NOT_INITIALIZED, grpc_probe(1));
    EXPECT_EQ(GRPC_NOT_INITIALIZED, grpc_probe_or(&id, 1, &id));
    EXPECT_EQ(GRPC_NOT_INITIALIZED, grpc_cancel(1));
    EXPECT_EQ(GRPC_NOT_INITIALIZED, grpc_cancel_all());
    EXPECT_EQ(GRPC_NOT_INITIALIZED, grpc_wait(1));
    EXPECT_EQ(GRPC_NOT_INITIALIZED, grpc_wait_and(&id, 1));
    EXPECT_EQ(GRPC_NOT_INITIALIZED, grpc_wait_or(&id, 1, &id));
    EXPECT_EQ(GRPC_NOT_INITIALIZED, grpc_wait_all());
    EXPECT_EQ(GRPC_NOT_INITIALIZED, grpc_wait_any(&id));
    EXPECT_EQ(GRPC_NOT_INITIALIZED, grpc_get_error(1));
    EXPECT_EQ(GRPC_NOT_INITIALIZED, grpc_get_failed_sessionid(&id));
    EXPECT_EQ(12345, id);
    EXPECT_EQ(GRPC_NOT_INITIALIZED, grpc_get_last_error_np());
    EXPECT_NE(nullptr, strstr(grpc_last_error_np(), "grpc_initialize"));
}

TEST_F(OgfInit, InitializeTwiceAndRepeatedly) {
    std::string cfg = write_file("client.conf", ninfg_config());
    testing::internal::CaptureStderr();
    for (int round = 0; round < 3; round++) {
        ASSERT_EQ(GRPC_NO_ERROR, grpc_initialize(cfg.c_str())) << grpc_last_error_np();
        EXPECT_EQ(GRPC_ALREADY_INITIALIZED, grpc_initialize(cfg.c_str()));
        grpc_function_handle_t h;
        ASSERT_EQ(GRPC_NO_ERROR, grpc_function_handle_default(&h, "test/null_call"));
        EXPECT_EQ(GRPC_NO_ERROR, grpc_call(&h));
        EXPECT_EQ(GRPC_NO_ERROR, grpc_function_handle_destruct(&h));
        EXPECT_EQ(GRPC_NO_ERROR, grpc_finalize());
        EXPECT_EQ(GRPC_NOT_INITIALIZED, grpc_finalize());
    }
    testing::internal::GetCapturedStderr();
}

TEST_F(OgfInit, MissingAndMalformedConfigurationFiles) {
    EXPECT_EQ(GRPC_CONFIGFILE_NOT_FOUND, grpc_initialize("/nonexistent/client.conf"));
    EXPECT_NE(nullptr, strstr(grpc_last_error_np(), "/nonexistent/client.conf"));
    EXPECT_EQ(GRPC_NOT_INITIALIZED, grpc_finalize()); // a failed initialize leaves nothing
    const struct {
        const char *text, *says;
    } bad[] = {
        {"<SERVER>\n hostname a\n", "is not closed"},
        {"<SERVER>\n port 7000\n</SERVER>\n", "without a hostname"},
        {"<SERVER>\n hostname a\n port 99999\n</SERVER>\n", "not a TCP port"},
        {"<SERVER>\n hostname a\n<CLIENT>\n</CLIENT>\n</SERVER>\n", "inside <SERVER>"},
        {"<SERVER>\n hostname a\n</CLIENT>\n", "closes <SERVER>"},
        {"</SERVER>\n", "without <SERVER>"},
        {"<SERVER>\n hostname \"a\n</SERVER>\n", "unterminated"},
        {"<SERVER_DEFAULT>\n session_timeout soon\n</SERVER_DEFAULT>\n", "not a duration"},
        {"<FUNCTION_INFO>\n funcname f\n</FUNCTION_INFO>\n", "needs both"},
        {"<SERVER>\n hostname\n</SERVER>\n", "needs a value"},
        {"<INCLUDE>\n filename /nonexistent/other.conf\n</INCLUDE>\n", "cannot read the included file"},
        {"server nohostport\n", "not HOST:PORT"},
        {"frobnicate yes\n", "'frobnicate'"},
        {"<SERVER> hostname a\n", "alone on its line"},
    };
    for (auto &b : bad) {
        std::string path = write_file("bad.conf", b.text);
        testing::internal::CaptureStderr();
        EXPECT_EQ(GRPC_CONFIGFILE_ERROR, grpc_initialize(path.c_str())) << b.text;
        testing::internal::GetCapturedStderr();
        EXPECT_NE(nullptr, strstr(grpc_last_error_np(), b.says)) << b.text << " -> " << grpc_last_error_np();
        EXPECT_NE(nullptr, strstr(grpc_last_error_np(), "bad.conf:")) << grpc_last_error_np();
        EXPECT_EQ(GRPC_NOT_INITIALIZED, grpc_finalize());
    }
    // An error in the core's own settings is found at initialize, not at the first call.
    setenv("GRIDRPC_SERVER", "no-port-here", 1);
    grid_reset_np();
    EXPECT_EQ(GRPC_CONFIGFILE_ERROR, grpc_initialize(nullptr));
    EXPECT_NE(nullptr, strstr(grpc_last_error_np(), "GRIDRPC_SERVER"));
    unsetenv("GRIDRPC_SERVER");
    grid_reset_np();
}

TEST_F(OgfInit, NullConfigFollowsNinfgOrder) {
    // No file anywhere: initialize works, but there is no default server.
    ASSERT_EQ(GRPC_NO_ERROR, grpc_initialize(nullptr)) << grpc_last_error_np();
    grpc_function_handle_t h;
    EXPECT_EQ(GRPC_SERVER_NOT_FOUND, grpc_function_handle_default(&h, "test/null_call"));
    EXPECT_NE(nullptr, strstr(grpc_last_error_np(), "<SERVER>"));
    // Our own default server serves when no file names one.
    setenv("GRIDRPC_SERVER", server->address().c_str(), 1);
    grid_reset_np();
    ASSERT_EQ(GRPC_NO_ERROR, grpc_function_handle_default(&h, "test/null_call")) << grpc_last_error_np();
    EXPECT_EQ(server->port(), h.port_np);
    unsetenv("GRIDRPC_SERVER");
    grid_reset_np();
    ASSERT_EQ(GRPC_NO_ERROR, grpc_finalize());

    // $HOME/.ngconf, then $NG_CONFIG_FILE before it.
    std::string home = write_file(".ngconf", "<SERVER>\n hostname 127.0.0.1\n port " +
                                                 std::to_string(single->port()) + "\n</SERVER>\n");
    ASSERT_EQ(GRPC_NO_ERROR, grpc_initialize("")) << grpc_last_error_np();
    ASSERT_EQ(GRPC_NO_ERROR, grpc_function_handle_default(&h, "test/null_call")) << grpc_last_error_np();
    EXPECT_EQ(single->port(), h.port_np);
    ASSERT_EQ(GRPC_NO_ERROR, grpc_finalize());
    std::string env = write_file("env.conf", "server 127.0.0.1:" + std::to_string(server->port()) + "\n");
    setenv("NG_CONFIG_FILE", env.c_str(), 1);
    ASSERT_EQ(GRPC_NO_ERROR, grpc_initialize(nullptr)) << grpc_last_error_np();
    ASSERT_EQ(GRPC_NO_ERROR, grpc_function_handle_default(&h, "test/null_call")) << grpc_last_error_np();
    EXPECT_EQ(server->port(), h.port_np);
    ASSERT_EQ(GRPC_NO_ERROR, grpc_finalize());
    setenv("NG_CONFIG_FILE", "/nonexistent/ng.conf", 1);
    EXPECT_EQ(GRPC_CONFIGFILE_NOT_FOUND, grpc_initialize(nullptr));
    unsetenv("NG_CONFIG_FILE");
    unlink(home.c_str());
}

TEST_F(OgfInit, OurConfigurationFormat) {
    std::string cfg = write_file("ours.conf", "# ours\nserver 127.0.0.1:" + std::to_string(single->port()) +
                                                  "\ntimeout 30s\nconnect_timeout \"5\"\n");
    ASSERT_EQ(GRPC_NO_ERROR, grpc_initialize(cfg.c_str())) << grpc_last_error_np();
    grpc_function_handle_t h;
    ASSERT_EQ(GRPC_NO_ERROR, grpc_function_handle_default(&h, "linalg/ddot")) << grpc_last_error_np();
    EXPECT_EQ(single->port(), h.port_np);
    double x[3] = {1, 2, 3}, y[3] = {4, 5, 6}, r = 0;
    ASSERT_EQ(GRPC_NO_ERROR, grpc_call(&h, 3, x, y, &r)) << grpc_last_error_np();
    EXPECT_EQ(32.0, r);
    ASSERT_EQ(GRPC_NO_ERROR, grpc_finalize());
}

TEST_F(Ogf, NinfgConfigurationWarnsAboutWhatItIgnores) {
    EXPECT_NE(std::string::npos, warnings_.find("client.conf:3: warning: <CLIENT> attribute 'hostname'"))
        << warnings_;
    EXPECT_NE(std::string::npos, warnings_.find("'invoke_server' is ignored")) << warnings_;
    EXPECT_NE(std::string::npos, warnings_.find("section <INVOKE_SERVER> is ignored")) << warnings_;
    EXPECT_EQ(std::string::npos, warnings_.find("'port'")) << warnings_; // honoured, not ignored
}

TEST_F(Ogf, HandlesFindTheirServer) {
    grpc_function_handle_t h;
    // The first <SERVER> is the default.
    ASSERT_EQ(GRPC_NO_ERROR, grpc_function_handle_default(&h, "test/null_call")) << grpc_last_error_np();
    EXPECT_EQ(server->port(), h.port_np);
    EXPECT_STREQ("127.0.0.1", h.host_np);
    // FUNCTION_INFO assigns echo_string to the server tagged "single", also by its plain name.
    ASSERT_EQ(GRPC_NO_ERROR, grpc_function_handle_default(&h, "test/echo_string")) << grpc_last_error_np();
    EXPECT_EQ(single->port(), h.port_np);
    ASSERT_EQ(GRPC_NO_ERROR, grpc_function_handle_default(&h, "echo_string")) << grpc_last_error_np();
    EXPECT_EQ(single->port(), h.port_np);
    // By tag, by hostname, by host:port; NULL is the default.
    ASSERT_EQ(GRPC_NO_ERROR, grpc_function_handle_init(&h, "single", "test/null_call"))
        << grpc_last_error_np();
    EXPECT_EQ(single->port(), h.port_np);
    EXPECT_STREQ("localhost", h.host_np);
    ASSERT_EQ(GRPC_NO_ERROR, grpc_function_handle_init(&h, "localhost", "test/null_call"));
    EXPECT_EQ(single->port(), h.port_np);
    ASSERT_EQ(GRPC_NO_ERROR, grpc_function_handle_init(&h, "main", "test/null_call"));
    EXPECT_EQ(server->port(), h.port_np);
    ASSERT_EQ(GRPC_NO_ERROR, grpc_function_handle_init(&h, server->address().c_str(), "null_call"));
    EXPECT_EQ(server->port(), h.port_np);
    ASSERT_EQ(GRPC_NO_ERROR, grpc_function_handle_init(&h, nullptr, "test/null_call"));
    EXPECT_EQ(server->port(), h.port_np);
    EXPECT_EQ(GRPC_NO_ERROR, grpc_call(&h));
    EXPECT_EQ(GRPC_NO_ERROR, grpc_function_handle_destruct(&h));
    // Arrays of handles, as Ninf-G programs declare them.
    grpc_function_handle_t hs[4];
    for (auto &x : hs)
        ASSERT_EQ(GRPC_NO_ERROR, grpc_function_handle_init(&x, "single", "test/null_call"));
    for (auto &x : hs)
        EXPECT_EQ(GRPC_NO_ERROR, grpc_call(&x));
    for (auto &x : hs)
        EXPECT_EQ(GRPC_NO_ERROR, grpc_function_handle_destruct(&x));
}

TEST_F(OgfInit, IncludeAndServerDefault) {
    write_file("servers.conf", "<SERVER>\n hostname 127.0.0.1\n tag inc\n</SERVER>\n");
    std::string cfg = write_file("top.conf", "<SERVER_DEFAULT>\n port " + std::to_string(single->port()) +
                                                 "\n</SERVER_DEFAULT>\n<INCLUDE>\n filename servers.conf\n"
                                                 "</INCLUDE>\n");
    ASSERT_EQ(GRPC_NO_ERROR, grpc_initialize(cfg.c_str())) << grpc_last_error_np();
    grpc_function_handle_t h;
    ASSERT_EQ(GRPC_NO_ERROR, grpc_function_handle_init(&h, "inc", "test/null_call")) << grpc_last_error_np();
    EXPECT_EQ(single->port(), h.port_np); // SERVER_DEFAULT's port
    EXPECT_EQ(GRPC_NO_ERROR, grpc_call(&h));
    ASSERT_EQ(GRPC_NO_ERROR, grpc_finalize());
}

TEST_F(Ogf, HandleErrors) {
    grpc_function_handle_t h;
    std::string dead = "127.0.0.1:" + std::to_string(dead_port());
    EXPECT_EQ(GRPC_SERVER_NOT_FOUND, grpc_function_handle_init(&h, dead.c_str(), "test/null_call"));
    EXPECT_NE(nullptr, strstr(grpc_last_error_np(), "connect")) << grpc_last_error_np();
    EXPECT_EQ(GRPC_FUNCTION_NOT_FOUND, grpc_function_handle_default(&h, "test/no_such_function"));
    EXPECT_EQ(GRPC_FUNCTION_NOT_FOUND, grpc_function_handle_default(&h, ""));
    EXPECT_EQ(GRPC_INVALID_FUNCTION_HANDLE, grpc_function_handle_default(nullptr, "test/null_call"));
    ASSERT_EQ(GRPC_NO_ERROR, grpc_function_handle_default(&h, "test/null_call"));
    ASSERT_EQ(GRPC_NO_ERROR, grpc_function_handle_destruct(&h));
    EXPECT_EQ(GRPC_INVALID_FUNCTION_HANDLE, grpc_function_handle_destruct(&h));
    EXPECT_EQ(GRPC_INVALID_FUNCTION_HANDLE, grpc_call(&h));
    grpc_sessionid_t id = 7;
    EXPECT_EQ(GRPC_INVALID_FUNCTION_HANDLE, grpc_call_async(&h, &id));
    EXPECT_EQ(GRPC_INVALID_FUNCTION_HANDLE, grpc_call((grpc_function_handle_t *)nullptr));
    grpc_function_handle_t garbage;
    memset(&garbage, 0, sizeof garbage);
    EXPECT_EQ(GRPC_INVALID_FUNCTION_HANDLE, grpc_call(&garbage));
}

TEST_F(Ogf, SyncCallsPassEveryKindOfArgument) {
    grpc_function_handle_t h;
    ASSERT_EQ(GRPC_NO_ERROR, grpc_function_handle_default(&h, "test/echo_scalars")) << grpc_last_error_np();
    char c = 'x', co = 0;
    short s = -1234, so = 0;
    float f = 3.5f, fo = 0;
    int io = 0;
    long lo = 0;
    long long llo = 0;
    double dout = 0;
    scomplex sc = {1.5f, -2.5f}, sco = {0, 0};
    dcomplex dc = {3.25, -4.75}, dco = {0, 0};
    unsigned int uo = 0;
    // char, short and float go through '...' promoted, as a C program passes them.
    ASSERT_EQ(GRPC_NO_ERROR,
              grpc_call(&h, c, s, -123456789, -1234567890123L, -987654321098765LL, f, -2.0e300, sc, dc,
                        4000000000u, &co, &so, &io, &lo, &llo, &fo, &dout, &sco, &dco, &uo))
        << grpc_last_error_np();
    EXPECT_EQ('x', co);
    EXPECT_EQ(-1234, so);
    EXPECT_EQ(-123456789, io);
    EXPECT_EQ(-1234567890123L, lo);
    EXPECT_EQ(-987654321098765LL, llo);
    EXPECT_EQ(3.5f, fo);
    EXPECT_EQ(-2.0e300, dout);
    EXPECT_EQ(-2.5f, sco.i);
    EXPECT_EQ(-4.75, dco.i);
    EXPECT_EQ(4000000000u, uo);
    EXPECT_EQ(GRPC_NO_ERROR, grpc_function_handle_destruct(&h));

    // Arrays and a matrix product on the linalg module.
    ASSERT_EQ(GRPC_NO_ERROR, grpc_function_handle_init(&h, "main", "linalg/dmmul"));
    const int n = 3;
    double A[9], B[9], C[9] = {0};
    for (int i = 0; i < 9; i++) {
        A[i] = i + 1;
        B[i] = i == 0 || i == 4 || i == 8 ? 1 : 0; // identity
    }
    ASSERT_EQ(GRPC_NO_ERROR, grpc_call(&h, n, A, B, C)) << grpc_last_error_np();
    for (int i = 0; i < 9; i++)
        EXPECT_EQ(A[i], C[i]);
    // The function behind the macro, for code that takes its address.
    grpc_error_t (*fp)(grpc_function_handle_t *, ...) = &(grpc_call);
    memset(C, 0, sizeof C);
    ASSERT_EQ(GRPC_NO_ERROR, fp(&h, n, A, B, C)) << grpc_last_error_np();
    EXPECT_EQ(A[8], C[8]);
    // A wrong count is an error, not a crash.
    EXPECT_EQ(GRPC_OTHER_ERROR_CODE, grpc_call(&h, n, A, B));
    EXPECT_NE(nullptr, strstr(grpc_last_error_np(), "takes 4 arguments")) << grpc_last_error_np();
    EXPECT_EQ(GRPC_NO_ERROR, grpc_function_handle_destruct(&h));

    // Strings: IN by value, OUT into a malloc'd copy.
    ASSERT_EQ(GRPC_NO_ERROR, grpc_function_handle_default(&h, "test/echo_string"));
    char *out = nullptr;
    ASSERT_EQ(GRPC_NO_ERROR, grpc_call(&h, "hello, grid", &out)) << grpc_last_error_np();
    EXPECT_STREQ("hello, grid", out);
    free(out);
    EXPECT_EQ(GRPC_NO_ERROR, grpc_function_handle_destruct(&h));
    EXPECT_EQ(GRPC_NO_ERROR, grpc_get_last_error_np());
    EXPECT_STREQ("", grpc_last_error_np());
}

TEST_F(Ogf, HundredAsyncCallsInFlight) {
    grpc_function_handle_t h;
    ASSERT_EQ(GRPC_NO_ERROR, grpc_function_handle_default(&h, "test/echo_int"));
    const int N = 100, len = 50;
    std::vector<std::vector<int>> in(N, std::vector<int>(len)), out(N, std::vector<int>(len, 0));
    std::vector<grpc_sessionid_t> ids(N);
    for (int k = 0; k < N; k++) {
        for (int i = 0; i < len; i++)
            in[k][i] = k * 1000 + i;
        ASSERT_EQ(GRPC_NO_ERROR, grpc_call_async(&h, &ids[k], len, in[k].data(), out[k].data()))
            << grpc_last_error_np();
        ASSERT_GT(ids[k], 0);
    }
    EXPECT_EQ(N, (int)std::set<grpc_sessionid_t>(ids.begin(), ids.end()).size());
    ASSERT_EQ(GRPC_NO_ERROR, grpc_wait_all()) << grpc_last_error_np();
    for (int k = 0; k < N; k++) {
        EXPECT_EQ(in[k], out[k]) << "session " << k;
        // Still queryable after the wait.
        EXPECT_EQ(GRPC_NO_ERROR, grpc_get_error(ids[k]));
        grpc_function_handle_t *hp = nullptr;
        EXPECT_EQ(GRPC_NO_ERROR, grpc_get_handle(&hp, ids[k]));
        EXPECT_EQ(&h, hp);
        EXPECT_EQ(GRPC_NO_ERROR, grpc_probe(ids[k]));
    }
    grpc_sessionid_t none = 0;
    EXPECT_EQ(GRPC_NO_ERROR, grpc_wait_any(&none));
    EXPECT_EQ(GRPC_SESSIONID_VOID, none);
    EXPECT_EQ(GRPC_NO_ERROR, grpc_wait(ids[0])); // a second wait on a session is fine
}

TEST_F(Ogf, WaitAnyAndOrReturnEachSessionOnce) {
    grpc_function_handle_t h;
    ASSERT_EQ(GRPC_NO_ERROR, grpc_function_handle_default(&h, "test/sleep"));
    grpc_sessionid_t none = 0;
    EXPECT_EQ(GRPC_NO_ERROR, grpc_wait_any(&none)); // nothing outstanding
    EXPECT_EQ(GRPC_SESSIONID_VOID, none);
    grpc_sessionid_t ids[4];
    double secs[4] = {0.3, 0.01, 0.2, 0.1};
    for (int k = 0; k < 4; k++)
        ASSERT_EQ(GRPC_NO_ERROR, grpc_call_async(&h, &ids[k], secs[k]));
    grpc_sessionid_t done = 0;
    ASSERT_EQ(GRPC_NO_ERROR, grpc_wait_or(ids, 4, &done));
    EXPECT_TRUE(done == ids[0] || done == ids[1] || done == ids[2] || done == ids[3]);
    std::set<grpc_sessionid_t> seen = {done};
    for (int k = 0; k < 3; k++) {
        ASSERT_EQ(GRPC_NO_ERROR, grpc_wait_any(&done)) << grpc_last_error_np();
        EXPECT_TRUE(seen.insert(done).second) << done << " returned twice";
    }
    EXPECT_EQ(4u, seen.size());
    EXPECT_EQ(GRPC_NO_ERROR, grpc_wait_any(&done));
    EXPECT_EQ(GRPC_SESSIONID_VOID, done);
    // wait_and over sessions already waited on returns at once.
    EXPECT_EQ(GRPC_NO_ERROR, grpc_wait_and(ids, 4));
    EXPECT_EQ(GRPC_OTHER_ERROR_CODE, grpc_wait_or(ids, 0, &done));
}

TEST_F(Ogf, ProbeInATightLoopSeesCompletion) {
    grpc_function_handle_t h, slow;
    ASSERT_EQ(GRPC_NO_ERROR, grpc_function_handle_default(&h, "test/sleep"));
    ASSERT_EQ(GRPC_NO_ERROR, grpc_function_handle_default(&slow, "test/sleep_cancelable"));
    grpc_sessionid_t id, other;
    ASSERT_EQ(GRPC_NO_ERROR, grpc_call_async(&h, &id, 0.2));
    int flag;
    ASSERT_EQ(GRPC_NO_ERROR, grpc_call_async(&slow, &other, 5.0, 0, (double *)nullptr, &flag));
    grpc_sessionid_t both[2] = {other, id}, done = 0;
    EXPECT_EQ(GRPC_NOT_COMPLETED, grpc_probe(id));
    EXPECT_EQ(GRPC_NONE_COMPLETED, grpc_probe_or(both, 2, &done));
    EXPECT_EQ(GRPC_SESSIONID_VOID, done);
    EXPECT_EQ(GRPC_NO_ERROR, grpc_get_error(id)); // running: no error yet
    auto t0 = std::chrono::steady_clock::now();
    while (grpc_probe(id) == GRPC_NOT_COMPLETED)
        ASSERT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
    EXPECT_EQ(GRPC_NO_ERROR, grpc_probe_or(both, 2, &done));
    EXPECT_EQ(id, done);
    EXPECT_EQ(GRPC_NO_ERROR, grpc_cancel(other));
    EXPECT_EQ(GRPC_SESSION_FAILED, grpc_wait(other));
    EXPECT_EQ(GRPC_NO_ERROR, grpc_wait(id));
}

TEST_F(Ogf, CancelQueuedAndRunningCalls) {
    grpc_function_handle_t sleeper, cancelable;
    ASSERT_EQ(GRPC_NO_ERROR, grpc_function_handle_init(&sleeper, "single", "test/sleep"));
    ASSERT_EQ(GRPC_NO_ERROR, grpc_function_handle_init(&cancelable, "single", "test/sleep_cancelable"))
        << grpc_last_error_np();
    // One worker: the second call queues behind the first.
    grpc_sessionid_t running, queued, running2;
    double out[4] = {0, 0, 0, 0};
    int flag = -1;
    ASSERT_EQ(GRPC_NO_ERROR, grpc_call_async(&sleeper, &running, 0.5));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ASSERT_EQ(GRPC_NO_ERROR, grpc_call_async(&cancelable, &queued, 0.0, 4, out, &flag));
    EXPECT_EQ(GRPC_NOT_COMPLETED, grpc_probe(queued));
    EXPECT_EQ(GRPC_NO_ERROR, grpc_cancel(queued));
    EXPECT_EQ(GRPC_SESSION_FAILED, grpc_wait(queued));
    EXPECT_EQ(GRPC_CANCELED_NP, grpc_get_error(queued));
    EXPECT_EQ(GRPC_NO_ERROR, grpc_wait(running)); // the call ahead of it was not disturbed
    // A running call (it polls grpc_is_canceled_np) stops early.
    ASSERT_EQ(GRPC_NO_ERROR, grpc_call_async(&cancelable, &running2, 5.0, 4, out, &flag));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_EQ(GRPC_NOT_COMPLETED, grpc_probe(running2));
    auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(GRPC_NO_ERROR, grpc_cancel_all());
    EXPECT_EQ(GRPC_SESSION_FAILED, grpc_wait_all());
    // Well before the 5 s call would end (room for a loaded machine, not for waiting it out).
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(2500));
    EXPECT_EQ(GRPC_CANCELED_NP, grpc_get_error(running2));
    EXPECT_EQ(GRPC_NO_ERROR, grpc_get_error(running));
    for (double v : out)
        EXPECT_EQ(0.0, v); // never written after cancel
    EXPECT_EQ(-1, flag);
    // Every failed session is listed once, oldest first.
    grpc_sessionid_t f;
    std::vector<grpc_sessionid_t> failed;
    for (;;) {
        ASSERT_EQ(GRPC_NO_ERROR, grpc_get_failed_sessionid(&f));
        if (f == GRPC_SESSIONID_VOID) break;
        failed.push_back(f);
    }
    EXPECT_EQ((std::vector<grpc_sessionid_t>{queued, running2}), failed);
    // The worker is free again soon (the cancelled call stopped).
    t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(GRPC_NO_ERROR, grpc_call(&sleeper, 0.0)) << grpc_last_error_np();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));
    EXPECT_EQ(GRPC_NO_ERROR, grpc_cancel(queued)); // a finished session: nothing changes
}

TEST_F(Ogf, VoidAndUnknownSessionIds) {
    grpc_function_handle_t *hp = nullptr;
    grpc_sessionid_t ids[2] = {GRPC_SESSIONID_VOID, 999999}, done = 0;
    for (grpc_sessionid_t id : ids) {
        EXPECT_EQ(GRPC_INVALID_SESSION_ID, grpc_get_handle(&hp, id));
        EXPECT_EQ(GRPC_INVALID_SESSION_ID, grpc_wait(id));
        EXPECT_EQ(GRPC_INVALID_SESSION_ID, grpc_probe(id));
        EXPECT_EQ(GRPC_INVALID_SESSION_ID, grpc_cancel(id));
        EXPECT_EQ(GRPC_INVALID_SESSION_ID, grpc_get_error(id));
    }
    EXPECT_EQ(nullptr, hp);
    EXPECT_EQ(GRPC_INVALID_SESSION_ID, grpc_wait_and(ids, 2));
    EXPECT_EQ(GRPC_INVALID_SESSION_ID, grpc_wait_or(ids, 2, &done));
    EXPECT_EQ(GRPC_INVALID_SESSION_ID, grpc_probe_or(ids, 2, &done));
    EXPECT_STREQ("", grpc_session_message_np(GRPC_SESSIONID_VOID));
    // A session of the Ninf-style API is not one of ours.
    int gid = grid_call_async(server->url("test/null_call").c_str());
    ASSERT_GT(gid, 0);
    EXPECT_EQ(GRPC_INVALID_SESSION_ID, grpc_wait(gid));
    EXPECT_EQ(GRID_OK, grid_wait(gid));
    grid_forget_np(gid);
}

TEST_F(Ogf, FinalizeForgetsSessionsAndFailures) {
    grpc_function_handle_t h;
    ASSERT_EQ(GRPC_NO_ERROR, grpc_function_handle_default(&h, "test/sleep_cancelable"));
    grpc_sessionid_t ok, bad, running;
    int flag;
    ASSERT_EQ(GRPC_NO_ERROR, grpc_call_async(&h, &ok, 0.0, 0, (double *)nullptr, &flag));
    ASSERT_EQ(GRPC_NO_ERROR, grpc_call_async(&h, &bad, 5.0, 0, (double *)nullptr, &flag));
    ASSERT_EQ(GRPC_NO_ERROR, grpc_cancel(bad));
    EXPECT_EQ(GRPC_SESSION_FAILED, grpc_wait_all());
    int flag2;
    ASSERT_EQ(GRPC_NO_ERROR, grpc_call_async(&h, &running, 5.0, 0, (double *)nullptr, &flag2)); // at finalize
    auto t0 = std::chrono::steady_clock::now();
    ASSERT_EQ(GRPC_NO_ERROR, grpc_finalize());
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));
    testing::internal::CaptureStderr();
    ASSERT_EQ(GRPC_NO_ERROR, grpc_initialize(cfg_.c_str()));
    testing::internal::GetCapturedStderr();
    for (grpc_sessionid_t id : {ok, bad, running})
        EXPECT_EQ(GRPC_INVALID_SESSION_ID, grpc_get_error(id));
    grpc_sessionid_t f = 0;
    ASSERT_EQ(GRPC_NO_ERROR, grpc_get_failed_sessionid(&f));
    EXPECT_EQ(GRPC_SESSIONID_VOID, f);
    grpc_sessionid_t none = 0;
    EXPECT_EQ(GRPC_NO_ERROR, grpc_wait_any(&none));
    EXPECT_EQ(GRPC_SESSIONID_VOID, none);
}

TEST_F(OgfInit, TimeoutsFromTheConfigurationFile) {
    std::string cfg =
        write_file("timeout.conf", "<SERVER>\n hostname 127.0.0.1\n port " + std::to_string(server->port()) +
                                       "\n session_timeout 0.3s\n</SERVER>\n");
    ASSERT_EQ(GRPC_NO_ERROR, grpc_initialize(cfg.c_str())) << grpc_last_error_np();
    grpc_function_handle_t h;
    ASSERT_EQ(GRPC_NO_ERROR, grpc_function_handle_default(&h, "test/sleep_cancelable"));
    int flag;
    EXPECT_EQ(GRPC_TIMEOUT_NP, grpc_call(&h, 2.0, 0, (double *)nullptr, &flag));
    grpc_sessionid_t id;
    ASSERT_EQ(GRPC_NO_ERROR, grpc_call_async(&h, &id, 2.0, 0, (double *)nullptr, &flag));
    EXPECT_EQ(GRPC_SESSION_FAILED, grpc_wait(id));
    EXPECT_EQ(GRPC_TIMEOUT_NP, grpc_get_error(id));
    EXPECT_NE(nullptr, strstr(grpc_session_message_np(id), "s")) << grpc_session_message_np(id);
    ASSERT_EQ(GRPC_NO_ERROR, grpc_finalize());
    // Finalize gives the timeouts back: the same call now completes.
    ASSERT_EQ(GRPC_NO_ERROR,
              grpc_initialize(write_file("t2.conf", "server " + server->address() + "\n").c_str()));
    ASSERT_EQ(GRPC_NO_ERROR, grpc_function_handle_default(&h, "test/sleep"));
    EXPECT_EQ(GRPC_NO_ERROR, grpc_call(&h, 0.5)) << grpc_last_error_np();
    ASSERT_EQ(GRPC_NO_ERROR, grpc_finalize());
}

TEST_F(OgfInit, TimeoutsGoThroughThePublicSettings) {
    std::string cfg =
        write_file("timeout2.conf", "<SERVER>\n hostname 127.0.0.1\n port " + std::to_string(server->port()) +
                                        "\n session_timeout 2m\n</SERVER>\n");
    ASSERT_EQ(GRPC_NO_ERROR, grpc_initialize(cfg.c_str())) << grpc_last_error_np();
    double connect = -1, call = -1;
    ASSERT_EQ(GRID_OK, grid_get_timeouts_np(&connect, &call)) << grid_last_error();
    EXPECT_EQ(120.0, call);
    EXPECT_EQ(10.0, connect); // not in the file: the core's
    ASSERT_EQ(GRPC_NO_ERROR, grpc_finalize());
    ASSERT_EQ(GRID_OK, grid_get_timeouts_np(&connect, &call));
    EXPECT_EQ(0.0, call); // given back
}

TEST_F(Ogf, OneLastErrorForBothApis) {
    EXPECT_EQ(GRPC_INVALID_FUNCTION_HANDLE, grpc_function_handle_destruct(nullptr));
    EXPECT_EQ(grid_last_error(), grpc_last_error_np()); // one store, not a copy
    EXPECT_NE(nullptr, strstr(grid_last_error(), "NULL")) << grid_last_error();
    grid_set_last_error_np("set by a binding");
    EXPECT_STREQ("set by a binding", grpc_last_error_np());
    grpc_function_handle_t h;
    ASSERT_EQ(GRPC_NO_ERROR, grpc_function_handle_default(&h, "test/null_call")) << grpc_last_error_np();
    EXPECT_STREQ("", grid_last_error());
    // A core failure's own message reaches grpc_last_error_np with the GRPC code.
    ASSERT_EQ(GRPC_NO_ERROR, grpc_function_handle_default(&h, "test/echo_double"));
    double a[2];
    EXPECT_EQ(GRPC_OTHER_ERROR_CODE, grpc_call(&h, 2, a));
    EXPECT_EQ(GRPC_OTHER_ERROR_CODE, grpc_get_last_error_np());
    EXPECT_NE(nullptr, strstr(grpc_last_error_np(), "takes 3 arguments")) << grpc_last_error_np();
    EXPECT_EQ(GRPC_NO_ERROR, grpc_function_handle_destruct(&h));
}

TEST_F(Ogf, ServerDeathIsACommunicationFailure) {
    TestServer doomed;
    grpc_function_handle_t h;
    ASSERT_EQ(GRPC_NO_ERROR, grpc_function_handle_init(&h, doomed.address().c_str(), "test/sleep"));
    grpc_sessionid_t ids[2];
    for (auto &id : ids)
        ASSERT_EQ(GRPC_NO_ERROR, grpc_call_async(&h, &id, 10.0));
    doomed.stop(SIGKILL);
    EXPECT_EQ(GRPC_SESSION_FAILED, grpc_wait_and(ids, 2));
    for (auto id : ids)
        EXPECT_EQ(GRPC_COMMUNICATION_FAILED, grpc_get_error(id));
    EXPECT_EQ(GRPC_SERVER_NOT_FOUND, grpc_call(&h, 0.0)); // nobody listens there now
}

TEST_F(Ogf, ArgumentStacksInBothSpellings) {
    grpc_function_handle_t h;
    ASSERT_EQ(GRPC_NO_ERROR, grpc_function_handle_default(&h, "test/echo_double"));
    int n = 5;
    double in[5] = {1, 2, 3, 4, 5}, out[5] = {0};
    // Ninf-G's: IN scalars by address, arrays as pointers.
    grpc_arg_stack_t *st = grpc_arg_stack_new(3);
    ASSERT_NE(nullptr, st);
    EXPECT_EQ(GRPC_NO_ERROR, grpc_arg_stack_push_arg(st, &n));
    EXPECT_EQ(GRPC_NO_ERROR, grpc_arg_stack_push_arg(st, in));
    EXPECT_EQ(GRPC_NO_ERROR, grpc_arg_stack_push_arg(st, out));
    EXPECT_EQ(GRPC_OTHER_ERROR_CODE, grpc_arg_stack_push_arg(st, out)); // full
    ASSERT_EQ(GRPC_NO_ERROR, grpc_call_arg_stack(&h, st)) << grpc_last_error_np();
    EXPECT_EQ(5.0, out[4]);
    memset(out, 0, sizeof out);
    grpc_sessionid_t id;
    ASSERT_EQ(GRPC_NO_ERROR, grpc_call_arg_stack_async(&h, &id, st)) << grpc_last_error_np();
    EXPECT_EQ(GRPC_NO_ERROR, grpc_wait(id));
    EXPECT_EQ(3.0, out[2]);
    EXPECT_EQ(out, grpc_arg_stack_pop_arg(st)); // the last pushed comes off first
    EXPECT_EQ(in, grpc_arg_stack_pop_arg(st));
    EXPECT_EQ(&n, grpc_arg_stack_pop_arg(st));
    EXPECT_EQ(nullptr, grpc_arg_stack_pop_arg(st));
    EXPECT_EQ(GRPC_OTHER_ERROR_CODE, grpc_call_arg_stack(&h, st)); // too few arguments
    EXPECT_EQ(GRPC_NO_ERROR, grpc_arg_stack_destruct(st));
    EXPECT_EQ(nullptr, grpc_arg_stack_new(-1));

    // The draft's / DIET's: the same stacks.
    grpc_arg_stack_t *s2 = grpc_stack_create(3);
    ASSERT_NE(nullptr, s2);
    memset(out, 0, sizeof out);
    EXPECT_EQ(GRPC_NO_ERROR, grpc_stack_push(s2, &n));
    EXPECT_EQ(GRPC_NO_ERROR, grpc_stack_push(s2, in));
    EXPECT_EQ(GRPC_NO_ERROR, grpc_stack_push(s2, out));
    ASSERT_EQ(GRPC_NO_ERROR, grpc_call_argstack(&h, s2)) << grpc_last_error_np();
    EXPECT_EQ(4.0, out[3]);
    memset(out, 0, sizeof out);
    ASSERT_EQ(GRPC_NO_ERROR, grpc_call_argstack_async(&h, &id, s2)) << grpc_last_error_np();
    EXPECT_EQ(GRPC_NO_ERROR, grpc_wait(id));
    EXPECT_EQ(1.0, out[0]);
    void *top = nullptr;
    EXPECT_EQ(GRPC_NO_ERROR, grpc_stack_pop(s2, &top));
    EXPECT_EQ(out, top);
    EXPECT_EQ(GRPC_NO_ERROR, grpc_stack_destruct(s2));

    // Strings are pushed as themselves; an OUT string as a char **.
    ASSERT_EQ(GRPC_NO_ERROR, grpc_function_handle_init(&h, "main", "test/echo_string"));
    char hello[] = "stacked";
    char *sout = nullptr;
    st = grpc_arg_stack_new(2);
    grpc_arg_stack_push_arg(st, hello);
    grpc_arg_stack_push_arg(st, &sout);
    ASSERT_EQ(GRPC_NO_ERROR, grpc_call_arg_stack(&h, st)) << grpc_last_error_np();
    EXPECT_STREQ("stacked", sout);
    free(sout);
    grpc_arg_stack_destruct(st);
    EXPECT_EQ(GRPC_OTHER_ERROR_CODE, grpc_call_arg_stack(&h, nullptr));
}

TEST_F(Ogf, ConcurrentThreads) {
    grpc_function_handle_t h;
    ASSERT_EQ(GRPC_NO_ERROR, grpc_function_handle_default(&h, "test/echo_double"));
    std::atomic<int> bad{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < 8; t++)
        ts.emplace_back([&, t] {
            for (int k = 0; k < 20; k++) {
                double in[3] = {t * 1.0, k * 1.0, 7}, out[3] = {0, 0, 0};
                if (k % 2) {
                    if (grpc_call(&h, 3, in, out) != GRPC_NO_ERROR) bad++;
                } else {
                    grpc_sessionid_t id;
                    if (grpc_call_async(&h, &id, 3, in, out) != GRPC_NO_ERROR ||
                        grpc_wait(id) != GRPC_NO_ERROR)
                        bad++;
                }
                if (memcmp(in, out, sizeof in) != 0) bad++;
            }
        });
    for (auto &t : ts)
        t.join();
    EXPECT_EQ(0, bad.load());
}

// Stops a server (SIGSTOP) for a scope: what it has not read stays in the sockets.
// SIGSTOP takes effect asynchronously: a thread of the server running on another core
// goes on until the kernel reschedules it, long enough on a loaded machine to answer a
// small call. So wait (at most 5 s) until /proc says the process is stopped ('T').
static bool task_stopped(const std::string &stat_path) {
    std::ifstream f(stat_path);
    std::string line;
    std::getline(f, line);
    size_t close = line.rfind(')');
    return close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'T';
}

static bool stopped(pid_t pid) {
    std::string dir = "/proc/" + std::to_string(pid) + "/task";
    DIR *d = opendir(dir.c_str());
    if (!d) return false;
    bool all = true;
    for (struct dirent *e; all && (e = readdir(d));)
        if (e->d_name[0] != '.') all = task_stopped(dir + "/" + e->d_name + "/stat");
    closedir(d);
    return all;
}

struct Paused {
    explicit Paused(pid_t pid) : pid_(pid) {
        kill(pid_, SIGSTOP);
        for (int i = 0; i < 500 && !stopped(pid_); i++)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ~Paused() { resume(); }
    void resume() {
        if (pid_ > 0) kill(pid_, SIGCONT);
        pid_ = -1;
    }
    pid_t pid_;
};

// Ninf-G's default (argument_transfer wait): grpc_call_async returns once the server
// holds the arguments, so calls issued in turn reach the server in turn. A stopped
// server reads nothing: the call must not return until it runs again. NOWAIT returns
// at once (pipelined).
TEST_F(Ogf, WaitTransferReturnsOnceTheServerHoldsTheArguments) {
    TestServer own; // stopped below: a server of its own
    grpc_function_handle_t h;
    ASSERT_EQ(GRPC_NO_ERROR, grpc_function_handle_init(&h, own.address().c_str(), "test/sleep"));
    grpc_sessionid_t id;
    ASSERT_EQ(GRPC_NO_ERROR, grpc_call_async(&h, &id, 0.0)); // the connection is open
    ASSERT_EQ(GRPC_NO_ERROR, grpc_wait(id));

    std::atomic<bool> returned{false};
    grpc_sessionid_t late = GRPC_SESSIONID_VOID;
    grpc_error_t rc = GRPC_OTHER_ERROR_CODE;
    {
        Paused stop(own.pid());
        std::thread t([&] {
            rc = grpc_call_async(&h, &late, 0.0);
            returned = true;
        });
        std::this_thread::sleep_for(std::chrono::milliseconds(400));
        EXPECT_FALSE(returned) << "grpc_call_async returned while the server could not have read the call";
        stop.resume();
        t.join();
    }
    EXPECT_EQ(GRPC_NO_ERROR, rc) << grpc_last_error_np();
    EXPECT_EQ(GRPC_NO_ERROR, grpc_wait(late));

    grpc_handle_attr_t_np attr;
    ASSERT_EQ(GRPC_NO_ERROR, grpc_handle_attr_initialize_np(&attr));
    grpc_argument_transfer_t_np nowait = GRPC_ARGUMENT_TRANSFER_NOWAIT;
    ASSERT_EQ(GRPC_NO_ERROR, grpc_handle_attr_set_np(&attr, GRPC_HANDLE_ATTR_WAIT_ARG_TRANSFER, &nowait));
    ASSERT_EQ(GRPC_NO_ERROR, grpc_handle_attr_set_np(&attr, GRPC_HANDLE_ATTR_FUNCNAME, (void *)"test/sleep"));
    ASSERT_EQ(GRPC_NO_ERROR,
              grpc_handle_attr_set_np(&attr, GRPC_HANDLE_ATTR_HOSTNAME, (void *)own.address().c_str()));
    grpc_function_handle_t fast;
    ASSERT_EQ(GRPC_NO_ERROR, grpc_function_handle_init_with_attr_np(&fast, &attr)) << grpc_last_error_np();
    grpc_handle_attr_destruct_np(&attr);
    {
        Paused stop(own.pid());
        auto t0 = std::chrono::steady_clock::now();
        ASSERT_EQ(GRPC_NO_ERROR, grpc_call_async(&fast, &late, 0.0));
        // The server is stopped: a call that waited for it would never return here.
        EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));
        EXPECT_EQ(GRPC_NOT_COMPLETED, grpc_probe(late));
    }
    EXPECT_EQ(GRPC_NO_ERROR, grpc_wait(late));
}

// Issued short, long, long on a one-worker server, then probed once: the short call
// is done or running, never waiting behind the others.
TEST_F(Ogf, CallsIssuedInTurnReachTheServerInTurn) {
    grpc_function_handle_t h;
    ASSERT_EQ(GRPC_NO_ERROR, grpc_function_handle_init(&h, "single", "test/sleep"));
    grpc_sessionid_t s, l1, l2;
    ASSERT_EQ(GRPC_NO_ERROR, grpc_call_async(&h, &s, 0.1));
    ASSERT_EQ(GRPC_NO_ERROR, grpc_call_async(&h, &l1, 1.0));
    ASSERT_EQ(GRPC_NO_ERROR, grpc_call_async(&h, &l2, 1.0));
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    EXPECT_EQ(GRPC_NO_ERROR, grpc_probe(s));
    EXPECT_EQ(GRPC_NOT_COMPLETED, grpc_probe(l2));
    EXPECT_EQ(GRPC_NO_ERROR, grpc_cancel(l2));
    grpc_wait_all();
}

// A reply that has arrived is seen by the next single probe, without any other call.
TEST_F(Ogf, OneProbeSeesAReplyAlreadyReceived) {
    grpc_function_handle_t h;
    ASSERT_EQ(GRPC_NO_ERROR, grpc_function_handle_default(&h, "test/null_call"));
    // A null call's reply normally arrives well within 50 ms, but a loaded machine may
    // take longer for any one of them: a probe that finds the call still running then is
    // right. What must hold is that a single probe reports a reply that has arrived, which
    // it does for most of the 20; a probe that never sees completion (only grpc_wait
    // does) fails here.
    int seen = 0, pending = 0;
    for (int i = 0; i < 20; i++) {
        grpc_sessionid_t id;
        ASSERT_EQ(GRPC_NO_ERROR, grpc_call_async(&h, &id));
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        int rc = grpc_probe(id);
        EXPECT_TRUE(rc == GRPC_NO_ERROR || rc == GRPC_NOT_COMPLETED) << "call " << i << ": " << rc;
        (rc == GRPC_NO_ERROR ? seen : pending)++;
        EXPECT_EQ(GRPC_NO_ERROR, grpc_wait(id));
        if (rc == GRPC_NOT_COMPLETED) {
            EXPECT_EQ(GRPC_NO_ERROR, grpc_probe(id)) << "after grpc_wait, call " << i;
        }
    }
    EXPECT_GE(seen, 1) << "no probe saw a reply 50 ms after the call (" << pending << " still pending)";
}

TEST_F(Ogf, HandleAttributes) {
    grpc_handle_attr_t_np attr;
    ASSERT_EQ(GRPC_NO_ERROR, grpc_handle_attr_initialize_np(&attr));
    void *v = nullptr;
    ASSERT_EQ(GRPC_NO_ERROR, grpc_handle_attr_get_np(&attr, GRPC_HANDLE_ATTR_WAIT_ARG_TRANSFER, &v));
    EXPECT_EQ(GRPC_ARGUMENT_TRANSFER_WAIT,
              *static_cast<grpc_argument_transfer_t_np *>(v)); // Ninf-G's default
    EXPECT_EQ(GRPC_NO_ERROR, grpc_handle_attr_release_np(v));
    ASSERT_EQ(GRPC_NO_ERROR, grpc_handle_attr_get_np(&attr, GRPC_HANDLE_ATTR_FUNCNAME, &v));
    EXPECT_EQ(nullptr, v);
    grpc_function_handle_t h;
    EXPECT_EQ(GRPC_FUNCTION_NOT_FOUND, grpc_function_handle_init_with_attr_np(&h, &attr));
    EXPECT_NE(nullptr, strstr(grpc_last_error_np(), "GRPC_HANDLE_ATTR_FUNCNAME"));

    // Values are copied in and out.
    char fn[] = "test/echo_string";
    ASSERT_EQ(GRPC_NO_ERROR, grpc_handle_attr_set_np(&attr, GRPC_HANDLE_ATTR_FUNCNAME, fn));
    fn[0] = 'X';
    ASSERT_EQ(GRPC_NO_ERROR, grpc_handle_attr_set_np(&attr, GRPC_HANDLE_ATTR_HOSTNAME, (void *)"127.0.0.1"));
    int port = single->port();
    ASSERT_EQ(GRPC_NO_ERROR, grpc_handle_attr_set_np(&attr, GRPC_HANDLE_ATTR_PORT, &port));
    grpc_argument_transfer_t_np copy = GRPC_ARGUMENT_TRANSFER_COPY;
    ASSERT_EQ(GRPC_NO_ERROR, grpc_handle_attr_set_np(&attr, GRPC_HANDLE_ATTR_WAIT_ARG_TRANSFER, &copy));
    ASSERT_EQ(GRPC_NO_ERROR, grpc_handle_attr_get_np(&attr, GRPC_HANDLE_ATTR_FUNCNAME, &v));
    EXPECT_STREQ("test/echo_string", static_cast<char *>(v));
    grpc_handle_attr_release_np(v);
    ASSERT_EQ(GRPC_NO_ERROR, grpc_handle_attr_get_np(&attr, GRPC_HANDLE_ATTR_PORT, &v));
    EXPECT_EQ(port, *static_cast<int *>(v));
    grpc_handle_attr_release_np(v);
    int ncpus = 4; // kept, without effect here
    EXPECT_EQ(GRPC_NO_ERROR, grpc_handle_attr_set_np(&attr, GRPC_HANDLE_ATTR_MPI_NCPUS, &ncpus));

    // Bad values are refused and change nothing.
    int bad = 7, zero = 0, negative = -1;
    EXPECT_EQ(GRPC_OTHER_ERROR_CODE,
              grpc_handle_attr_set_np(&attr, GRPC_HANDLE_ATTR_WAIT_ARG_TRANSFER, &bad));
    EXPECT_NE(nullptr, strstr(grpc_error_string(GRPC_OTHER_ERROR_CODE), "not an argument transfer mode"));
    EXPECT_EQ(GRPC_OTHER_ERROR_CODE, grpc_handle_attr_set_np(&attr, GRPC_HANDLE_ATTR_MPI_NCPUS, &zero));
    EXPECT_EQ(GRPC_OTHER_ERROR_CODE, grpc_handle_attr_set_np(&attr, GRPC_HANDLE_ATTR_PORT, &negative));
    EXPECT_EQ(GRPC_OTHER_ERROR_CODE,
              grpc_handle_attr_set_np(&attr, static_cast<grpc_handle_attr_name_t_np>(99), &zero));
    EXPECT_EQ(GRPC_OTHER_ERROR_CODE, grpc_handle_attr_set_np(&attr, GRPC_HANDLE_ATTR_PORT, nullptr));

    ASSERT_EQ(GRPC_NO_ERROR, grpc_function_handle_init_with_attr_np(&h, &attr)) << grpc_last_error_np();
    char *out = nullptr;
    ASSERT_EQ(GRPC_NO_ERROR, grpc_call(&h, "hello", &out)) << grpc_last_error_np();
    EXPECT_STREQ("hello", out);
    free(out);
    grpc_handle_attr_t_np back;
    ASSERT_EQ(GRPC_NO_ERROR, grpc_function_handle_get_attr_np(&h, &back));
    ASSERT_EQ(GRPC_NO_ERROR, grpc_handle_attr_get_np(&back, GRPC_HANDLE_ATTR_PORT, &v));
    EXPECT_EQ(single->port(), *static_cast<int *>(v));
    grpc_handle_attr_release_np(v);
    ASSERT_EQ(GRPC_NO_ERROR, grpc_handle_attr_get_np(&back, GRPC_HANDLE_ATTR_WAIT_ARG_TRANSFER, &v));
    EXPECT_EQ(GRPC_ARGUMENT_TRANSFER_COPY, *static_cast<grpc_argument_transfer_t_np *>(v));
    grpc_handle_attr_release_np(v);
    EXPECT_EQ(GRPC_NO_ERROR, grpc_handle_attr_destruct_np(&back));
    EXPECT_EQ(GRPC_NO_ERROR, grpc_handle_attr_destruct_np(&attr));
    EXPECT_EQ(GRPC_OTHER_ERROR_CODE,
              grpc_handle_attr_set_np(&attr, GRPC_HANDLE_ATTR_PORT, &port)); // destructed
    grpc_function_handle_destruct(&h);
    // By tag, as grpc_function_handle_init takes it.
    ASSERT_EQ(GRPC_NO_ERROR, grpc_handle_attr_initialize_np(&attr));
    grpc_handle_attr_set_np(&attr, GRPC_HANDLE_ATTR_HOSTNAME, (void *)"single");
    grpc_handle_attr_set_np(&attr, GRPC_HANDLE_ATTR_FUNCNAME, (void *)"test/null_call");
    ASSERT_EQ(GRPC_NO_ERROR, grpc_function_handle_init_with_attr_np(&h, &attr)) << grpc_last_error_np();
    EXPECT_EQ(single->port(), h.port_np);
    EXPECT_EQ(GRPC_NO_ERROR, grpc_call(&h));
    grpc_handle_attr_destruct_np(&attr);
    grpc_finalize();
    EXPECT_EQ(GRPC_NOT_INITIALIZED, grpc_handle_attr_initialize_np(&attr));
}

TEST_F(Ogf, ListFunctions) {
    char **names = nullptr;
    size_t n = 0;
    ASSERT_EQ(GRPC_NO_ERROR, grpc_list_functions_np("single", &names, &n)) << grpc_last_error_np();
    std::set<std::string> got;
    for (size_t i = 0; i < n; i++)
        got.insert(names[i]);
    EXPECT_EQ(nullptr, names[n]);
    EXPECT_TRUE(got.count("test/null_call") && got.count("linalg/dmmul")) << n << " names";
    grpc_free_functions_np(names);
    ASSERT_EQ(GRPC_NO_ERROR, grpc_list_functions_np(nullptr, &names, &n)); // the first <SERVER>
    EXPECT_EQ(got.size(), n);
    grpc_free_functions_np(names);
    int count = 0;
    ASSERT_EQ(GRID_OK, grid_list_functions_np(server->address().c_str(), &names, &count));
    EXPECT_EQ(got.size(), static_cast<size_t>(count));
    grid_free_functions_np(names);
    std::string dead = "127.0.0.1:" + std::to_string(dead_port());
    EXPECT_EQ(GRPC_SERVER_NOT_FOUND, grpc_list_functions_np(dead.c_str(), &names, &n));
    EXPECT_EQ(nullptr, names);
    EXPECT_NE(nullptr, strstr(grpc_last_error_np(), dead.c_str())) << grpc_last_error_np();
    EXPECT_EQ(GRID_ERR_ARGS, grid_list_functions_np("no port here", &names, &count));

    // The not-found message points to the listing, and names the function once.
    grpc_function_handle_t h;
    EXPECT_EQ(GRPC_FUNCTION_NOT_FOUND, grpc_function_handle_init(&h, "single", "test/no_such"));
    std::string m = grpc_last_error_np();
    EXPECT_NE(std::string::npos, m.find("grpc_list_functions_np")) << m;
    EXPECT_NE(std::string::npos, m.find("gridrpc ls --server localhost:" + std::to_string(single->port())))
        << m;
    EXPECT_EQ(m.find("test/no_such"), m.rfind("test/no_such")) << m;
}

// Item 11: one numbering, the function named once, timeouts naming their setting, and
// GRPC_OTHER_ERROR_CODE's string saying what failed.
TEST_F(OgfInit, MessagesSayWhatAndWhereOnce) {
    std::string conf = write_file("timeout.conf", "<SERVER>\n"
                                                  "    hostname 127.0.0.1\n"
                                                  "    port " +
                                                      std::to_string(server->port()) +
                                                      "\n"
                                                      "    session_timeout 0.3\n"
                                                      "</SERVER>\n");
    ASSERT_EQ(GRPC_NO_ERROR, grpc_initialize(conf.c_str())) << grpc_last_error_np();
    EXPECT_NE(nullptr, strstr(grpc_error_string(GRPC_OTHER_ERROR_CODE), "grpc_last_error_np"));
    grpc_function_handle_t h, s;
    ASSERT_EQ(GRPC_NO_ERROR, grpc_function_handle_default(&h, "test/echo_double"));
    double x[3] = {1, 2, 3}, y[3];
    grpc_error_t rc = grpc_call(&h, -1, x, y);
    EXPECT_EQ(GRPC_OTHER_ERROR_CODE, rc);
    std::string m = grpc_error_string(rc);
    EXPECT_NE(std::string::npos, m.find("dimension 1 of 'in': size -1 is negative")) << m;
    EXPECT_EQ(m.find("test/echo_double"), m.rfind("test/echo_double")) << m;
    rc = grpc_call(&h, 3, (double *)nullptr, y);
    m = grpc_last_error_np();
    EXPECT_NE(std::string::npos, m.find("argument 3 ('in', IN double array) is NULL")) << m;
    EXPECT_EQ(m.find("test/echo_double"), m.rfind("test/echo_double")) << m;
    EXPECT_EQ(GRPC_OTHER_ERROR_CODE, grpc_call(&h, 3, x));
    m = grpc_last_error_np();
    EXPECT_EQ(m.find("test/echo_double"), m.rfind("test/echo_double")) << m;

    ASSERT_EQ(GRPC_NO_ERROR, grpc_function_handle_default(&s, "test/sleep"));
    EXPECT_EQ(GRPC_TIMEOUT_NP, grpc_call(&s, 2.0));
    m = grpc_last_error_np();
    EXPECT_NE(std::string::npos, m.find("0.3 s ('session_timeout' in " + conf + " line 4)")) << m;
    grpc_sessionid_t id;
    ASSERT_EQ(GRPC_NO_ERROR, grpc_call_async(&s, &id, 2.0));
    EXPECT_EQ(GRPC_SESSION_FAILED, grpc_wait(id));
    EXPECT_EQ(GRPC_TIMEOUT_NP, grpc_get_error(id));
    m = grpc_last_error_np();
    EXPECT_NE(std::string::npos, m.find("'session_timeout' in " + conf)) << m;
    EXPECT_EQ(std::string::npos, m.find("GRIDRPC_TIMEOUT")) << m;
    grpc_finalize();
}

TEST(OgfCodes, EveryCodeHasAStringAndAName) {
    std::set<std::string> texts;
    const grpc_error_t codes[] = {GRPC_NO_ERROR,
                                  GRPC_NOT_INITIALIZED,
                                  GRPC_ALREADY_INITIALIZED,
                                  GRPC_CONFIGFILE_NOT_FOUND,
                                  GRPC_CONFIGFILE_ERROR,
                                  GRPC_SERVER_NOT_FOUND,
                                  GRPC_FUNCTION_NOT_FOUND,
                                  GRPC_INVALID_FUNCTION_HANDLE,
                                  GRPC_INVALID_SESSION_ID,
                                  GRPC_RPC_REFUSED,
                                  GRPC_COMMUNICATION_FAILED,
                                  GRPC_SESSION_FAILED,
                                  GRPC_NOT_COMPLETED,
                                  GRPC_NONE_COMPLETED,
                                  GRPC_OTHER_ERROR_CODE,
                                  GRPC_UNKNOWN_ERROR_CODE,
                                  GRPC_TIMEOUT_NP,
                                  GRPC_CANCELED_NP,
                                  GRPC_INVALID_OBJECT_HANDLE_NP};
    for (grpc_error_t c : codes) {
        const char *s = grpc_error_string(c);
        ASSERT_NE(nullptr, s);
        EXPECT_GT(strlen(s), 0u);
        EXPECT_TRUE(texts.insert(s).second) << "two codes share '" << s << "'";
        EXPECT_LT(c, GRPC_LAST_ERROR_CODE);
        EXPECT_EQ(0, strncmp(grpc_error_name_np(c), "GRPC_", 5));
    }
    EXPECT_EQ(static_cast<size_t>(GRPC_LAST_ERROR_CODE), sizeof codes / sizeof codes[0]);
    EXPECT_STREQ("GRPC_SESSION_FAILED", grpc_error_name_np(GRPC_SESSION_FAILED));
    EXPECT_STREQ(grpc_error_string(GRPC_UNKNOWN_ERROR_CODE), grpc_error_string(GRPC_LAST_ERROR_CODE));
    EXPECT_STREQ(grpc_error_string(GRPC_UNKNOWN_ERROR_CODE), grpc_error_string(-3));
    EXPECT_EQ(-1, GRPC_SESSIONID_VOID);
    testing::internal::CaptureStderr();
    grpc_finalize(); // not initialized: sets the last error
    grpc_perror_np("prog");
    std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(0u, err.find("prog: GridRPC is not initialized")) << err;
}

} // namespace
