// call_test.cpp: grid_call end to end against a real gridrpcd on loopback: every IDL
// type and mode, sub-ranges, zero-length arrays, out scalars, inline and Calls stubs,
// descriptor caching, sequential and concurrent clients, and every client-side error.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gridrpc.h"
#include "server_fixture.h"

namespace {

// One server for the suite (starting one per test would dominate the run time).
TestServer *server;

class Call : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        server = new TestServer();
        setenv("GRIDRPC_SERVER", server->address().c_str(), 1);
        unsetenv("GRIDRPC_CONFIG");
        unsetenv("GRIDRPC_TIMEOUT");
        grid_reset_np();
    }
    static void TearDownTestSuite() {
        grid_reset_np();
        delete server;
        server = nullptr;
    }
};

TEST_F(Call, NullCall) {
    ASSERT_EQ(GRID_OK, grid_call("test/null_call")) << grid_last_error();
    ASSERT_EQ(GRID_OK, grid_call("null_call")) << grid_last_error(); // plain name, unique on the server
    EXPECT_STREQ("", grid_last_error());
}

TEST_F(Call, EveryScalarTypeRoundTrips) {
    char co = 0;
    short so = 0;
    int io = 0;
    long lo = 0;
    long long llo = 0;
    float fo = 0;
    double dout = 0;
    scomplex sc = {1.5f, -2.5f}, sco = {0, 0};
    dcomplex dc = {3.25, -4.75}, dco = {0, 0};
    unsigned int uo = 0;
    ASSERT_EQ(GRID_OK, grid_call("test/echo_scalars", 'x', (short)-1234, -123456789, -1234567890123L,
                                 -987654321098765LL, 3.5f, -2.0e300, sc, dc, 4000000000u, &co, &so, &io, &lo,
                                 &llo, &fo, &dout, &sco, &dco, &uo))
        << grid_last_error();
    EXPECT_EQ('x', co);
    EXPECT_EQ(-1234, so);
    EXPECT_EQ(-123456789, io);
    EXPECT_EQ(-1234567890123L, lo);
    EXPECT_EQ(-987654321098765LL, llo);
    EXPECT_EQ(3.5f, fo);
    EXPECT_EQ(-2.0e300, dout);
    EXPECT_EQ(1.5f, sco.r);
    EXPECT_EQ(-2.5f, sco.i);
    EXPECT_EQ(3.25, dco.r);
    EXPECT_EQ(-4.75, dco.i);
    EXPECT_EQ(4000000000u, uo);
}

template <typename T> void echo(const char *fn, int n, T (*gen)(int)) {
    std::vector<T> in(n), out(n);
    for (int i = 0; i < n; i++)
        in[i] = gen(i);
    ASSERT_EQ(GRID_OK, grid_call(fn, n, in.data(), out.data())) << fn << ": " << grid_last_error();
    for (int i = 0; i < n; i++)
        ASSERT_EQ(0, memcmp(&in[i], &out[i], sizeof(T))) << fn << " element " << i;
}

TEST_F(Call, EveryArrayTypeRoundTrips) {
    for (int n : {1, 3, 1000, 70001}) {
        echo<char>("test/echo_char", n, [](int i) { return static_cast<char>(i * 7); });
        echo<short>("test/echo_short", n, [](int i) { return static_cast<short>(i * 31 - 5000); });
        echo<int>("test/echo_int", n, [](int i) { return (i % 2000) * 1000003 - 7; });
        echo<long>("test/echo_long", n, [](int i) { return static_cast<long>(i) * 123456789012L - 5; });
        echo<long long>("test/echo_longlong", n,
                        [](int i) { return static_cast<long long>(i) * -8589934592LL; });
        echo<float>("test/echo_float", n, [](int i) { return static_cast<float>(i) / 3.0f; });
        echo<double>("test/echo_double", n, [](int i) { return std::sin(i) * 1e10; });
        echo<scomplex>("test/echo_scomplex", n, [](int i) { return scomplex{1.0f * i, -0.5f * i}; });
        echo<dcomplex>("test/echo_dcomplex", n, [](int i) { return dcomplex{1.0 / (i + 1), -2.0 * i}; });
        echo<unsigned int>("test/echo_unsigned", n,
                           [](int i) { return 4000000000u - static_cast<unsigned>(i); });
    }
}

TEST_F(Call, ZeroLengthArraysMayBeNull) {
    ASSERT_EQ(GRID_OK, grid_call("test/echo_double", 0, nullptr, nullptr)) << grid_last_error();
    double untouched = 42;
    ASSERT_EQ(GRID_OK, grid_call("test/echo_double", 0, &untouched, &untouched)) << grid_last_error();
    EXPECT_EQ(42, untouched);
}

TEST_F(Call, StringsInAndOut) {
    char *out = nullptr;
    ASSERT_EQ(GRID_OK, grid_call("test/echo_string", "hello, grid", &out)) << grid_last_error();
    ASSERT_NE(nullptr, out);
    EXPECT_STREQ("hello, grid", out);
    free(out);
    out = nullptr;
    ASSERT_EQ(GRID_OK, grid_call("test/echo_string", "", &out)) << grid_last_error();
    ASSERT_NE(nullptr, out);
    EXPECT_STREQ("", out); // "" is a real string
    free(out);
    std::string big(200000, 'z');
    ASSERT_EQ(GRID_OK, grid_call("test/echo_string", big.c_str(), &out)) << grid_last_error();
    EXPECT_EQ(big, out);
    free(out);
}

TEST_F(Call, StringArrays) {
    const char *in[3] = {"alpha", "", "gamma"};
    char *out[3] = {nullptr, nullptr, nullptr};
    ASSERT_EQ(GRID_OK, grid_call("test/echo_strings", 3, in, out)) << grid_last_error();
    for (int i = 0; i < 3; i++) {
        ASSERT_NE(nullptr, out[i]);
        EXPECT_STREQ(in[i], out[i]);
        free(out[i]);
    }
}

TEST_F(Call, InoutScalarsAndArrays) {
    int k = 41;
    double v = 1.25;
    char orig[] = "original";
    char *s = orig;
    ASSERT_EQ(GRID_OK, grid_call("test/inout_scalars", &k, &v, &s)) << grid_last_error();
    EXPECT_EQ(42, k);
    EXPECT_EQ(2.5, v);
    EXPECT_STREQ("replaced", s);
    EXPECT_NE(orig, s);
    free(s);
    std::vector<double> x = {1, 2, 3};
    ASSERT_EQ(GRID_OK, grid_call("test/inout_double", 3, x.data())) << grid_last_error();
    EXPECT_EQ((std::vector<double>{2, 4, 6}), x);
}

TEST_F(Call, WorkArraysStayOnTheServer) {
    double x[4] = {1, 2, 3, 4}, sum = 0;
    ASSERT_EQ(GRID_OK, grid_call("test/work_sum", 4, x, nullptr, &sum)) << grid_last_error();
    EXPECT_EQ(30.0, sum);
}

TEST_F(Call, SubRangeKeepsElementsOutsideIt) {
    std::vector<double> x(10);
    for (int i = 0; i < 10; i++)
        x[i] = i;
    ASSERT_EQ(GRID_OK, grid_call("test/subrange", 10, 3, 7, x.data())) << grid_last_error();
    for (int i = 0; i < 10; i++)
        EXPECT_EQ(i >= 3 && i < 7 ? i + 1.0 : i, x[i]) << i;
}

TEST_F(Call, TwoDimensionalBlockAndStride) {
    const int m = 5, n = 6;
    std::vector<double> a(m * n);
    for (int i = 0; i < m * n; i++)
        a[i] = 100 + i;
    ASSERT_EQ(GRID_OK, grid_call("test/block2d", m, n, 1, 4, 2, 5, a.data())) << grid_last_error();
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++)
            EXPECT_EQ(100 + i * n + j + ((i >= 1 && i < 4 && j >= 2 && j < 5) ? 1.0 : 0.0), a[i * n + j])
                << i << "," << j;
    std::vector<double> x(10, 1.0);
    ASSERT_EQ(GRID_OK, grid_call("test/strided", 10, 3, x.data())) << grid_last_error();
    for (int i = 0; i < 10; i++)
        EXPECT_EQ(i % 3 == 0 ? 2.0 : 1.0, x[i]) << i;
}

TEST_F(Call, FilesTravel) {
    char in[] = "/tmp/gridrpc-call-in-XXXXXX";
    int fd = mkstemp(in);
    ASSERT_GE(fd, 0);
    const char text[] = "Hello, Files!\n";
    ASSERT_EQ((ssize_t)strlen(text), write(fd, text, strlen(text)));
    close(fd);
    std::string out = std::string(in) + ".out";
    ASSERT_EQ(GRID_OK, grid_call("test/file_upper", in, out.c_str())) << grid_last_error();
    std::ifstream f(out);
    std::stringstream ss;
    ss << f.rdbuf();
    EXPECT_EQ("HELLO, FILES!\n", ss.str());
    unlink(in);
    unlink(out.c_str());
    EXPECT_EQ(GRID_ERR_IO, grid_call("test/file_upper", "/nonexistent/input", out.c_str()));
    EXPECT_NE(nullptr, strstr(grid_last_error(), "/nonexistent/input")) << grid_last_error();
}

TEST_F(Call, CallsStubOnOpenBlas) {
    const int n = 64;
    std::vector<double> A(n * n), B(n * n), C(n * n), R(n * n, 0.0);
    for (int i = 0; i < n * n; i++) {
        A[i] = std::sin(i);
        B[i] = std::cos(i);
    }
    ASSERT_EQ(GRID_OK, grid_call("linalg/dmmul", n, A.data(), B.data(), C.data())) << grid_last_error();
    for (int i = 0; i < n; i++)
        for (int k = 0; k < n; k++)
            for (int j = 0; j < n; j++)
                R[i * n + j] += A[i * n + k] * B[k * n + j];
    for (int i = 0; i < n * n; i++)
        ASSERT_NEAR(R[i], C[i], 1e-9) << i;
}

TEST_F(Call, DescriptorIsFetchedOncePerFunction) {
    grid_reset_np();
    grid_stats_np before, after;
    grid_get_stats_np(&before);
    for (int i = 0; i < 50; i++)
        ASSERT_EQ(GRID_OK, grid_call("test/null_call")) << grid_last_error();
    grid_get_stats_np(&after);
    EXPECT_EQ(1, after.descriptor_fetches - before.descriptor_fetches);
    EXPECT_EQ(1, after.connections_opened - before.connections_opened);
    EXPECT_EQ(50, after.calls - before.calls);
}

TEST_F(Call, UrlNamesTheServer) {
    std::string url = server->url("test/null_call");
    ASSERT_EQ(GRID_OK, grid_call(url.c_str())) << grid_last_error();
}

TEST_F(Call, ManySequentialCalls) {
    int out[4];
    int in[4] = {1, 2, 3, 4};
    for (int i = 0; i < 3000; i++) {
        in[0] = i;
        ASSERT_EQ(GRID_OK, grid_call("test/echo_int", 4, in, out)) << grid_last_error();
        ASSERT_EQ(i, out[0]);
    }
}

TEST_F(Call, ConcurrentClients) {
    const int threads = 16, calls = 100;
    std::vector<std::thread> ts;
    std::vector<int> failures(threads, 0);
    for (int t = 0; t < threads; t++)
        ts.emplace_back([t, &failures] {
            std::vector<double> in(257), out(257);
            for (int i = 0; i < calls; i++) {
                for (int k = 0; k < 257; k++)
                    in[k] = t * 1000000 + i * 1000 + k;
                if (grid_call("test/echo_double", 257, in.data(), out.data()) != GRID_OK || in != out)
                    failures[t]++;
            }
        });
    for (auto &t : ts)
        t.join();
    for (int t = 0; t < threads; t++)
        EXPECT_EQ(0, failures[t]) << "thread " << t;
}

// ---- the binding interface: argument vectors, introspection, shapes

TEST_F(Call, ArgvCallAndDescribe) {
    int n = 3;
    double in[3] = {1, 2, 3}, out[3] = {0, 0, 0};
    void *argv[] = {&n, in, out};
    ASSERT_EQ(GRID_OK, grid_call_argv_np("test/echo_double", 3, argv)) << grid_last_error();
    EXPECT_EQ(3.0, out[2]);
    EXPECT_EQ(GRID_ERR_ARGS, grid_call_argv_np("test/echo_double", 2, argv));
    const char *s = "argv";
    char *r = nullptr;
    void *sargv[] = {&s, &r};
    ASSERT_EQ(GRID_OK, grid_call_argv_np("test/echo_string", 2, sargv)) << grid_last_error();
    EXPECT_STREQ("argv", r);
    free(r);

    grid_function_np f;
    ASSERT_EQ(GRID_OK, grid_describe_np("linalg/dmmul", &f)) << grid_last_error();
    EXPECT_STREQ("linalg", f.module);
    EXPECT_STREQ("dmmul", f.name);
    ASSERT_EQ(4, f.nparams);
    EXPECT_STREQ("C", f.params[3].name);
    EXPECT_EQ(GRID_TYPE_DOUBLE, f.params[3].type);
    EXPECT_EQ(GRID_MODE_OUT, f.params[3].mode);
    EXPECT_EQ(2, f.params[3].rank);
    EXPECT_EQ(GRID_ERR_NOT_FOUND, grid_describe_np("linalg/nothing", &f));

    int m = 7;
    void *margv[] = {&m, nullptr, nullptr, nullptr};
    long long dims[8];
    ASSERT_EQ(GRID_OK, grid_array_shape_np("linalg/dmmul", margv, 1, dims)) << grid_last_error();
    EXPECT_EQ(7, dims[0]);
    EXPECT_EQ(7, dims[1]);
    EXPECT_EQ(GRID_ERR_ARGS, grid_array_shape_np("linalg/dmmul", margv, 9, dims));
}

// ---- errors: each is a code plus a message that says what to do

TEST_F(Call, UnknownFunction) {
    EXPECT_EQ(GRID_ERR_NOT_FOUND, grid_call("test/no_such_function", 1));
    EXPECT_NE(nullptr, strstr(grid_last_error(), "no_such_function")) << grid_last_error();
}

TEST_F(Call, WrongArgumentCount) {
    double a[1], b[1];
    EXPECT_EQ(GRID_ERR_ARGS, grid_call("test/echo_double", 1, a));
    EXPECT_NE(nullptr, strstr(grid_last_error(), "takes 3 arguments (n, in, out) but 2 were given"))
        << grid_last_error();
    EXPECT_EQ(GRID_ERR_ARGS, grid_call("test/echo_double", 1, a, b, b));
}

TEST_F(Call, NullArrayWithElements) {
    double out[2];
    EXPECT_EQ(GRID_ERR_ARGS, grid_call("test/echo_double", 2, nullptr, out));
    EXPECT_NE(nullptr, strstr(grid_last_error(), "'in'")) << grid_last_error();
}

TEST_F(Call, NegativeDimension) {
    double a[1], b[1];
    EXPECT_EQ(GRID_ERR_ARGS, grid_call("test/echo_double", -5, a, b));
    EXPECT_NE(nullptr, strstr(grid_last_error(), "negative")) << grid_last_error();
}

TEST_F(Call, SubRangeOutsideTheArray) {
    double x[10];
    EXPECT_EQ(GRID_ERR_ARGS, grid_call("test/subrange", 10, 5, 12, x));
}

TEST_F(Call, ConnectionRefused) {
    // A port nobody listens on: bind one, close it, use it.
    TestServer probe;
    int port = probe.port();
    probe.stop(SIGTERM);
    std::string url = "gridrpc://127.0.0.1:" + std::to_string(port) + "/test/null_call";
    EXPECT_EQ(GRID_ERR_CONNECT, grid_call(url.c_str()));
    EXPECT_NE(nullptr, strstr(grid_last_error(), "is gridrpcd running there?")) << grid_last_error();
}

TEST_F(Call, NoServerConfigured) {
    unsetenv("GRIDRPC_SERVER");
    setenv("GRIDRPC_CONFIG", "/nonexistent/gridrpc.conf", 1);
    grid_reset_np();
    EXPECT_EQ(GRID_ERR_CONFIG, grid_call("test/null_call"));
    EXPECT_NE(nullptr, strstr(grid_last_error(), "GRIDRPC_CONFIG")) << grid_last_error();
    unsetenv("GRIDRPC_CONFIG");
    grid_reset_np();
    setenv("HOME", "/nonexistent", 1);
    EXPECT_EQ(GRID_ERR_CONFIG, grid_call("test/null_call"));
    EXPECT_NE(nullptr, strstr(grid_last_error(), "GRIDRPC_SERVER")) << grid_last_error();
    setenv("GRIDRPC_SERVER", server->address().c_str(), 1);
    grid_reset_np();
}

TEST_F(Call, ConfigFile) {
    char path[] = "/tmp/gridrpc-conf-XXXXXX";
    int fd = mkstemp(path);
    std::string text = "# test configuration\nserver " + server->address() + "\ntimeout 30s\n";
    ASSERT_EQ((ssize_t)text.size(), write(fd, text.data(), text.size()));
    close(fd);
    unsetenv("GRIDRPC_SERVER");
    setenv("GRIDRPC_CONFIG", path, 1);
    grid_reset_np();
    EXPECT_EQ(GRID_OK, grid_call("test/null_call")) << grid_last_error();
    std::ofstream(path) << "server nowhere\n";
    grid_reset_np();
    EXPECT_EQ(GRID_ERR_CONFIG, grid_call("test/null_call"));
    EXPECT_NE(nullptr, strstr(grid_last_error(), ":1: cannot use 'server nowhere'")) << grid_last_error();
    unlink(path);
    unsetenv("GRIDRPC_CONFIG");
    setenv("GRIDRPC_SERVER", server->address().c_str(), 1);
    grid_reset_np();
}

TEST_F(Call, Timeout) {
    ASSERT_EQ(GRID_OK, grid_set_timeouts_np(5, 0.3));
    EXPECT_EQ(GRID_ERR_TIMEOUT, grid_call("test/sleep", 2.0));
    // The message names the setting that gave the timeout (here the API call).
    EXPECT_NE(nullptr,
              strstr(grid_last_error(), "no reply within the call timeout of 0.3 s (grid_set_timeouts_np)"))
        << grid_last_error();
    ASSERT_EQ(GRID_OK, grid_set_timeouts_np(10, 0));
    EXPECT_EQ(GRID_OK, grid_call("test/null_call")) << grid_last_error(); // a fresh connection works
}

TEST_F(Call, LimitExceeded) {
    TestServer small({"--max-array", "1000"});
    std::string url = small.url("test/echo_double");
    std::vector<double> a(1000), b(1000);
    EXPECT_EQ(GRID_ERR_LIMIT, grid_call(url.c_str(), 1000, a.data(), b.data()));
    EXPECT_NE(nullptr, strstr(grid_last_error(), "at most 1000")) << grid_last_error();
    // Which setting that is, and what to do.
    EXPECT_NE(nullptr, strstr(grid_last_error(), "(its gridrpcd --max-array): split the data"))
        << grid_last_error();
    EXPECT_EQ(GRID_OK, grid_call(url.c_str(), 100, a.data(), b.data())) << grid_last_error();
}

// How large an array may be is the server's to say: a server started with a larger
// --max-array takes an array past the protocol's default 1 GiB, which the client once
// refused by itself. An array of 2^27 + 2 doubles (just past 1 GiB) of which a
// sub-range of two elements crosses.
TEST_F(Call, ArrayPastTheDefaultLimitGoesToAServerThatTakesIt) {
    TestServer big({"--max-array", "4G"});
    std::string url = big.url("test/subrange");
    int n = (1 << 27) + 2;
    std::vector<double> x(4, 0.5); // the client reads and writes x[lo .. hi) only
    ASSERT_EQ(GRID_OK, grid_call(url.c_str(), n, 1, 3, x.data())) << grid_last_error();
    EXPECT_EQ(0.5, x[0]);
    EXPECT_EQ(1.5, x[1]);
    EXPECT_EQ(1.5, x[2]);
    EXPECT_EQ(0.5, x[3]);
    // The default server still says no, naming its limit.
    TestServer plain;
    std::string url2 = plain.url("test/subrange");
    EXPECT_EQ(GRID_ERR_LIMIT, grid_call(url2.c_str(), n, 1, 3, x.data()));
    EXPECT_NE(nullptr, strstr(grid_last_error(), "--max-array")) << grid_last_error();
}

TEST_F(Call, ServerDiesMidCall) {
    TestServer doomed;
    std::string url = doomed.url("test/sleep");
    std::thread killer([&doomed] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        doomed.stop(SIGKILL);
    });
    auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(GRID_ERR_CONN_LOST, grid_call(url.c_str(), 10.0));
    killer.join();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
    EXPECT_NE(nullptr, strstr(grid_last_error(), "closed the connection during the call"))
        << grid_last_error();
}

TEST_F(Call, IsolatedServerSurvivesCrashingFunctions) {
    TestServer iso({"--isolate"});
    std::string crash = iso.url("test/crash"), echo = iso.url("test/echo_double"),
                null = iso.url("test/null_call");
    EXPECT_EQ(GRID_ERR_CRASHED, grid_call(crash.c_str(), 1));
    EXPECT_NE(nullptr, strstr(grid_last_error(), "the server is still up; not retried: it would crash again"))
        << grid_last_error();
    EXPECT_EQ(GRID_ERR_CRASHED, grid_call(crash.c_str(), 2));
    EXPECT_NE(nullptr, strstr(grid_last_error(), "exited with status 3")) << grid_last_error();
    EXPECT_EQ(GRID_ERR_CRASHED, grid_call(crash.c_str(), 3));
    EXPECT_EQ(GRID_OK, grid_call(null.c_str())) << grid_last_error();
    std::vector<double> in(1000), out(1000);
    for (int i = 0; i < 1000; i++)
        in[i] = i * 0.5;
    ASSERT_EQ(GRID_OK, grid_call(echo.c_str(), 1000, in.data(), out.data())) << grid_last_error();
    EXPECT_EQ(in, out);
    EXPECT_EQ(GRID_OK, grid_call(crash.c_str(), 0)) << grid_last_error(); // behaves: fine
}

// A variadic wrapper of the kind grid_call_va_np exists for (the OGF grpc_call is one).
int forward(const char *name, int nargs, ...) {
    va_list ap;
    va_start(ap, nargs);
    int rc = grid_call_va_np(name, nargs, ap);
    va_end(ap);
    return rc;
}

int forward_async(const char *name, int nargs, ...) {
    va_list ap;
    va_start(ap, nargs);
    int id = grid_call_async_va_np(name, nargs, ap);
    va_end(ap);
    return id;
}

TEST_F(Call, VaListEntryPoints) {
    double in[3] = {1.5, -2.5, 4}, out[3] = {0, 0, 0};
    ASSERT_EQ(GRID_OK, forward("test/echo_double", 3, 3, in, out)) << grid_last_error();
    EXPECT_EQ(-2.5, out[1]);
    // Scalars arrive promoted, as through grid_call: a char, a float, a complex.
    scomplex sc = {1.5f, -2.5f}, sco = {0, 0};
    dcomplex dc = {3.25, -4.75}, dco = {0, 0};
    char co = 0;
    short so = 0;
    int io = 0;
    long lo = 0;
    long long llo = 0;
    float fo = 0;
    double dout = 0;
    unsigned int uo = 0;
    ASSERT_EQ(GRID_OK, forward("test/echo_scalars", -1, 'x', (short)-1234, -123456789, -1234567890123L,
                               -987654321098765LL, 3.5f, -2.0e300, sc, dc, 4000000000u, &co, &so, &io, &lo,
                               &llo, &fo, &dout, &sco, &dco, &uo))
        << grid_last_error();
    EXPECT_EQ('x', co);
    EXPECT_EQ(3.5f, fo);
    EXPECT_EQ(-2.5f, sco.i);
    EXPECT_EQ(-4.75, dco.i);
    EXPECT_EQ(4000000000u, uo);
    // A count that does not match is refused before any argument is read.
    EXPECT_EQ(GRID_ERR_ARGS, forward("test/echo_double", 2, 3, in));
    EXPECT_NE(nullptr, strstr(grid_last_error(), "takes 3 arguments (n, in, out) but 2 were given"))
        << grid_last_error();
    // The asynchronous form.
    double out2[3] = {0, 0, 0};
    int id = forward_async("test/echo_double", 3, 3, in, out2);
    ASSERT_GT(id, 0) << grid_last_error();
    ASSERT_EQ(GRID_OK, grid_wait(id)) << grid_last_error();
    EXPECT_EQ(4.0, out2[2]);
    grid_forget_np(id);
    EXPECT_EQ(-GRID_ERR_ARGS, forward_async("test/echo_double", 1, 3));
    EXPECT_NE(nullptr, strstr(grid_last_error(), "but 1 was given")) << grid_last_error();
}

TEST_F(Call, SettingsReadBack) {
    char host[256] = "unchanged";
    int port = -1;
    ASSERT_EQ(GRID_OK, grid_get_server_np(host, sizeof host, &port)) << grid_last_error();
    EXPECT_EQ(server->address(), std::string(host) + ":" + std::to_string(port));
    char tiny[4];
    EXPECT_EQ(GRID_ERR_ARGS, grid_get_server_np(tiny, sizeof tiny, &port));
    EXPECT_EQ(GRID_ERR_ARGS, grid_get_server_np(nullptr, 0, &port));

    double connect = -1, call = -1;
    ASSERT_EQ(GRID_OK, grid_get_timeouts_np(&connect, &call)) << grid_last_error();
    EXPECT_EQ(10.0, connect); // the defaults (GRIDRPC_TIMEOUT is unset)
    EXPECT_EQ(0.0, call);
    ASSERT_EQ(GRID_OK, grid_set_timeouts_np(5, 0.25));
    ASSERT_EQ(GRID_OK, grid_get_timeouts_np(&connect, &call));
    EXPECT_EQ(5.0, connect);
    EXPECT_EQ(0.25, call);
    grid_clear_timeouts_np();
    ASSERT_EQ(GRID_OK, grid_get_timeouts_np(&connect, nullptr));
    EXPECT_EQ(10.0, connect);
    ASSERT_EQ(GRID_OK, grid_get_timeouts_np(nullptr, &call));
    EXPECT_EQ(0.0, call);

    // No server configured, then a malformed setting.
    unsetenv("GRIDRPC_SERVER");
    setenv("GRIDRPC_CONFIG", "/dev/null", 1);
    grid_reset_np();
    ASSERT_EQ(GRID_OK, grid_get_server_np(host, sizeof host, &port)) << grid_last_error();
    EXPECT_STREQ("", host);
    EXPECT_EQ(0, port);
    setenv("GRIDRPC_TIMEOUT", "soon", 1);
    grid_reset_np();
    EXPECT_EQ(GRID_ERR_CONFIG, grid_get_timeouts_np(&connect, &call));
    EXPECT_NE(nullptr, strstr(grid_last_error(), "GRIDRPC_TIMEOUT")) << grid_last_error();
    EXPECT_EQ(GRID_ERR_CONFIG, grid_get_server_np(host, sizeof host, &port));
    unsetenv("GRIDRPC_TIMEOUT");
    unsetenv("GRIDRPC_CONFIG");
    setenv("GRIDRPC_SERVER", server->address().c_str(), 1);
    grid_reset_np();
}

// The token set by grid_set_token_np is what HELLO carries: a server with --token takes
// the call with it, refuses it with another one and without one.
TEST_F(Call, SetTokenIsSentInHello) {
    TestServer locked({"--token", "open-sesame"});
    std::string url = locked.url("test/null_call");
    ASSERT_EQ(GRID_OK, grid_set_token_np("open-sesame")) << grid_last_error();
    EXPECT_EQ(GRID_OK, grid_call(url.c_str())) << grid_last_error();
    grid_reset_np(); // new connections from here on
    ASSERT_EQ(GRID_OK, grid_set_token_np("wrong"));
    EXPECT_EQ(GRID_ERR_AUTH, grid_call(url.c_str()));
    EXPECT_NE(nullptr, strstr(grid_last_error(), "token")) << grid_last_error();
    ASSERT_EQ(GRID_OK, grid_set_token_np(nullptr));
    EXPECT_EQ(GRID_ERR_AUTH, grid_call(url.c_str()));
    EXPECT_EQ(GRID_ERR_ARGS, grid_set_token_np(std::string(1025, 't').c_str()));
    EXPECT_EQ(GRID_OK, grid_set_token_np(std::string(1024, 't').c_str()));
    grid_reset_np();
}

TEST_F(Call, SetLastError) {
    grid_set_last_error_np("a binding's own error");
    EXPECT_STREQ("a binding's own error", grid_last_error());
    grid_set_last_error_np(grid_last_error()); // onto itself: unchanged
    EXPECT_STREQ("a binding's own error", grid_last_error());
    std::string other;
    std::thread([&other] { other = grid_last_error(); }).join();
    EXPECT_EQ("", other); // per thread
    ASSERT_EQ(GRID_OK, grid_call("test/null_call")) << grid_last_error();
    EXPECT_STREQ("", grid_last_error()); // a call's result replaces it
    grid_set_last_error_np("again");
    grid_set_last_error_np(nullptr);
    EXPECT_STREQ("", grid_last_error());
    grid_set_last_error_np("again");
    grid_set_last_error_np("");
    EXPECT_STREQ("", grid_last_error());
}

TEST_F(Call, ErrorNamesAndStrings) {
    EXPECT_STREQ("GRID_ERR_CONNECT", grid_error_name(GRID_ERR_CONNECT));
    EXPECT_STREQ("cannot connect to the server", grid_error_string(GRID_ERR_CONNECT));
    EXPECT_STREQ("unknown error code", grid_error_string(999));
    // Every code of the map has its name and text; the last one is the newest.
    int n = 0;
#define CHECK_CODE_(name, value, text)                                                                       \
    EXPECT_STREQ("GRID_" #name, grid_error_name(value));                                                     \
    EXPECT_STREQ(text, grid_error_string(value));                                                            \
    EXPECT_EQ(n++, value);
    GRID_ERROR_MAP(CHECK_CODE_)
#undef CHECK_CODE_
    EXPECT_EQ(GRID_ERROR_COUNT_NP, n);
    EXPECT_EQ(18, GRID_ERR_AUTH);
    EXPECT_EQ(GRID_ERROR_COUNT_NP, GRID_ERR_AUTH + 1);
    EXPECT_STREQ("GRID_ERR_AUTH", grid_error_name(GRID_ERR_AUTH));
    EXPECT_NE(nullptr, strstr(grid_error_string(GRID_ERR_AUTH), "refused"))
        << grid_error_string(GRID_ERR_AUTH);
    EXPECT_STREQ("unknown error code", grid_error_string(GRID_ERROR_COUNT_NP));
}

} // namespace
