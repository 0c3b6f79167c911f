// engine_test.cpp: the client's call engine against a scripted fake server that
// speaks through the protocol layer: a descriptor gone stale is fetched again and the
// call sent again, for grid_call and grid_call_async alike, once and only once; an
// interface that changed shape is not retried; and an error code outside gridrpc.h's
// range becomes GRID_ERR_PROTOCOL on every path (HELLO, GET_DESCRIPTOR, CALL sync and
// async). The fake runs the real test module's functions.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

extern "C" {
#include "gridrpc.h"
#include "gridrpc_stub.h"
#include "grp_proto.h"
extern const gridrpc_stub_module gridrpc_module_test;
}

namespace {

const gridrpc_stub_function *stub_of(const char *name) {
    for (unsigned i = 0; i < gridrpc_module_test.nfunctions; i++)
        if (strcmp(gridrpc_module_test.functions[i].name, name) == 0)
            return &gridrpc_module_test.functions[i];
    return nullptr;
}

// What the fake does differently from a real server. kNone: behave normally (0 is one
// of the codes a fake server must be able to send).
const int kNone = -1000000;
struct Script {
    int hello_error = kNone;      // answer HELLO with ERROR of this code
    int descriptor_error = kNone; // answer GET_DESCRIPTOR with ERROR of this code
    int call_error = kNone;       // answer every CALL with ERROR of this code
    int stale_calls = 0;          // answer this many CALLs with GRID_ERR_STALE first
    // After the first GET_DESCRIPTOR, serve this function's descriptor instead.
    const char *later_descriptor = nullptr;
};

Script stale(int n, const char *later = nullptr) {
    Script s;
    s.stale_calls = n;
    s.later_descriptor = later;
    return s;
}

Script failing(int hello, int descriptor, int call) {
    Script s;
    s.hello_error = hello;
    s.descriptor_error = descriptor;
    s.call_error = call;
    return s;
}

class FakeServer {
  public:
    explicit FakeServer(Script s) : script_(s) {
        lfd_ = socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a = {};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof a;
        if (bind(lfd_, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0 || listen(lfd_, 8) != 0 ||
            getsockname(lfd_, reinterpret_cast<sockaddr *>(&a), &len) != 0)
            abort();
        port_ = ntohs(a.sin_port);
        thread_ = std::thread([this] { accept_loop(); });
    }
    ~FakeServer() {
        stop_ = true;
        thread_.join();
        close(lfd_);
    }
    std::string url(const char *fn) const {
        return "gridrpc://127.0.0.1:" + std::to_string(port_) + "/" + fn;
    }
    int calls() const { return calls_; }
    int fetches() const { return fetches_; }

  private:
    void accept_loop() {
        std::vector<std::thread> conns;
        while (!stop_) {
            pollfd p = {lfd_, POLLIN, 0};
            if (poll(&p, 1, 50) <= 0) continue;
            int fd = accept(lfd_, nullptr, nullptr);
            if (fd >= 0) conns.emplace_back([this, fd] { serve(fd); });
        }
        for (auto &t : conns)
            t.join();
    }

    // Serves one connection until the client leaves or the fake stops (bounded waits).
    void serve(int fd) {
        grw_reader *r = static_cast<grw_reader *>(malloc(sizeof(grw_reader)));
        grw_writer *w = static_cast<grw_writer *>(malloc(sizeof(grw_writer)));
        grw_reader_init(r, fd, GRP_DEFAULT_MAX_MESSAGE);
        grw_writer_init(w, fd);
        while (!stop_) {
            pollfd p = {fd, POLLIN, 0};
            if (!grw_has_buffered(r) && poll(&p, 1, 50) <= 0) continue;
            r->deadline_ns = gr_now_ns() + 5000000000LL;
            grw_header h;
            gr_err e;
            if (grp_read_header(r, &h, &e) || !answer(r, w, h)) break;
        }
        close(fd);
        free(r);
        free(w);
    }

    bool answer(grw_reader *r, grw_writer *w, const grw_header &h) {
        gr_err e;
        switch (h.type) {
        case GRP_HELLO: {
            grp_hello m;
            if (grp_read_hello(r, &m, &e)) return false;
            if (script_.hello_error != kNone)
                return !grp_write_error(w, h.request_id, script_.hello_error, "hello", &e);
            grp_hello_ok ok = {};
            snprintf(ok.server, sizeof ok.server, "fake");
            ok.version = GRW_VERSION;
            grp_limits_default(&ok.limits);
            ok.workers = ok.cores = 1;
            return !grp_write_hello_ok(w, h.request_id, &ok, &e);
        }
        case GRP_GET_DESCRIPTOR: {
            char name[GRP_MAX_FUNCTION_NAME + 1];
            if (grp_read_get_descriptor(r, name, &e)) return false;
            if (script_.descriptor_error != kNone)
                return !grp_write_error(w, h.request_id, script_.descriptor_error, "descriptor", &e);
            const char *plain = strchr(name, '/') ? strchr(name, '/') + 1 : name;
            if (fetches_++ > 0 && script_.later_descriptor) plain = script_.later_descriptor;
            const gridrpc_stub_function *f = stub_of(plain);
            if (!f) return !grp_write_error(w, h.request_id, GRID_ERR_NOT_FOUND, "no such function", &e);
            return !grp_write_descriptor(w, h.request_id, name, f->descriptor,
                                         static_cast<uint32_t>(f->descriptor_len), &e);
        }
        case GRP_CALL: {
            grp_call_target t;
            if (grp_read_call_target(r, &t, &e)) return false;
            calls_++;
            const char *plain = strchr(t.name, '/') ? strchr(t.name, '/') + 1 : t.name;
            const gridrpc_stub_function *f = stub_of(plain);
            int code = script_.call_error;
            if (code == kNone && stale_sent_ < script_.stale_calls) {
                stale_sent_++;
                code = GRID_ERR_STALE;
            }
            if (code != kNone || !f) {
                if (grw_skip(r, &e)) return false;
                return !grp_write_error(w, h.request_id, f ? code : GRID_ERR_NOT_FOUND, "call refused", &e);
            }
            grd_desc *d;
            grd_error ge;
            if (grd_decode(f->descriptor, f->descriptor_len, &d, &ge) != GRD_OK) return false;
            grm_call *c = static_cast<grm_call *>(malloc(grm_call_size(d->nparams)));
            grm_init(c, d, GRM_SERVER_SIDE);
            grw_limits lim;
            grp_limits_default(&lim);
            bool ok = !grp_read_call_head(r, c, &lim, &e) && !grp_read_call_bulk(r, c, &e);
            if (ok) {
                f->invoke(c->ptr);
                grp_result_times times = {0, 0};
                ok = !grp_write_result(w, h.request_id, &times, c, &lim, &e);
            }
            grm_release(c);
            free(c);
            grd_free(d);
            return ok;
        }
        }
        return false;
    }

    Script script_;
    int lfd_ = -1, port_ = 0;
    std::atomic<bool> stop_{false};
    std::atomic<int> calls_{0}, fetches_{0};
    int stale_sent_ = 0;
    std::thread thread_;
};

class Engine : public ::testing::Test {
  protected:
    void SetUp() override {
        unsetenv("GRIDRPC_SERVER");
        unsetenv("GRIDRPC_CONFIG");
        setenv("GRIDRPC_TIMEOUT", "10", 1);
        grid_reset_np();
    }
    void TearDown() override { grid_reset_np(); }
};

// Calls echo_double synchronously or not; returns the code and checks the result.
int echo(const std::string &url, bool async) {
    double in[4] = {1, 2, 3, 4}, out[4] = {0, 0, 0, 0};
    int rc;
    if (async) {
        int id = grid_call_async(url.c_str(), 4, in, out);
        if (id <= 0) return -id;
        rc = grid_wait(id);
    } else {
        rc = grid_call(url.c_str(), 4, in, out);
    }
    if (rc == GRID_OK)
        for (int i = 0; i < 4; i++)
            EXPECT_EQ(in[i], out[i]);
    else
        for (int i = 0; i < 4; i++)
            EXPECT_EQ(0.0, out[i]);
    return rc;
}

TEST_F(Engine, StaleDescriptorIsFetchedAgainAndTheCallSentAgain) {
    for (bool async : {false, true}) {
        grid_reset_np();
        FakeServer fake(stale(1));
        ASSERT_EQ(GRID_OK, echo(fake.url("test/echo_double"), async)) << grid_last_error();
        EXPECT_EQ(2, fake.calls()) << (async ? "async" : "sync");
        EXPECT_EQ(2, fake.fetches()) << (async ? "async" : "sync");
        // The fresh descriptor is cached: the next call is one round trip.
        ASSERT_EQ(GRID_OK, echo(fake.url("test/echo_double"), async)) << grid_last_error();
        EXPECT_EQ(3, fake.calls());
        EXPECT_EQ(2, fake.fetches());
    }
}

TEST_F(Engine, StaleTwiceIsAnErrorNotALoop) {
    for (bool async : {false, true}) {
        grid_reset_np();
        FakeServer fake(stale(5));
        EXPECT_EQ(GRID_ERR_STALE, echo(fake.url("test/echo_double"), async));
        EXPECT_EQ(2, fake.calls()) << (async ? "async" : "sync");
    }
}

TEST_F(Engine, AnInterfaceThatChangedShapeIsNotRetried) {
    for (bool async : {false, true}) {
        grid_reset_np();
        // The second fetch describes echo_float: same arity, other element type.
        FakeServer fake(stale(1, "echo_float"));
        EXPECT_EQ(GRID_ERR_STALE, echo(fake.url("test/echo_double"), async));
        EXPECT_NE(nullptr, strstr(grid_last_error(), "changed")) << grid_last_error();
        EXPECT_EQ(1, fake.calls()) << (async ? "async" : "sync");
    }
}

TEST_F(Engine, OutOfRangeErrorCodesAreProtocolErrorsOnEveryPath) {
    for (int bad : {0, -5, 9999, static_cast<int>(GRID_ERROR_COUNT_NP)}) {
        for (bool async : {false, true}) {
            {
                grid_reset_np();
                FakeServer fake(failing(bad, kNone, kNone));
                EXPECT_EQ(GRID_ERR_PROTOCOL, echo(fake.url("test/echo_double"), async)) << "HELLO " << bad;
            }
            {
                grid_reset_np();
                FakeServer fake(failing(kNone, bad, kNone));
                EXPECT_EQ(GRID_ERR_PROTOCOL, echo(fake.url("test/echo_double"), async))
                    << "DESCRIPTOR " << bad;
            }
            {
                grid_reset_np();
                FakeServer fake(failing(kNone, kNone, bad));
                EXPECT_EQ(GRID_ERR_PROTOCOL, echo(fake.url("test/echo_double"), async)) << "CALL " << bad;
                EXPECT_NE(nullptr, strstr(grid_last_error(), std::to_string(bad).c_str()))
                    << grid_last_error();
            }
        }
    }
    // A code in range passes through unchanged.
    grid_reset_np();
    FakeServer fake(failing(kNone, kNone, GRID_ERR_BUSY));
    EXPECT_EQ(GRID_ERR_BUSY, echo(fake.url("test/echo_double"), false));
}

} // namespace
