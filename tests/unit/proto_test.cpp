// proto_test.cpp: the protocol layer (runtime/proto) on its own, over a socketpair:
// every message's encoder and decoder round trip; each bounded field at and one past
// its limit; error codes from a peer validated; unknown message types refused; the
// bytes of one message of each type pinned by golden files (tests/golden-msg/, so a
// change to the wire shows up as a diff; GRIDRPC_UPDATE_GOLDEN=1 rewrites them); and
// docs/protocol.md agreeing with grp_limits.h and the type numbers.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern "C" {
#include "gridrpc_stub.h"
#include "grp_proto.h"
#include "grp_session.h"
extern const gridrpc_stub_module gridrpc_module_test;
}

#include "proto_fixture.h"

namespace {

using proto_fixture::golden;
using proto_fixture::hex;
using proto_fixture::Pair;

const grd_desc *desc_of(const char *name) {
    static std::vector<grd_desc *> all;
    if (all.empty())
        for (unsigned i = 0; i < gridrpc_module_test.nfunctions; i++) {
            grd_desc *d;
            grd_error ge;
            const gridrpc_stub_function *f = &gridrpc_module_test.functions[i];
            if (grd_decode(f->descriptor, f->descriptor_len, &d, &ge) == GRD_OK) all.push_back(d);
        }
    for (grd_desc *d : all)
        if (strcmp(d->name, name) == 0) return d;
    return nullptr;
}

const gridrpc_stub_function *stub_of(const char *name) {
    for (unsigned i = 0; i < gridrpc_module_test.nfunctions; i++)
        if (strcmp(gridrpc_module_test.functions[i].name, name) == 0)
            return &gridrpc_module_test.functions[i];
    return nullptr;
}

std::string repeat(size_t n) {
    return std::string(n, 'x');
}

// ---------------------------------------------------------------- round trips

TEST(Proto, HelloRoundTrip) {
    Pair p;
    gr_err e;
    grp_hello m = {}, got;
    snprintf(m.client, sizeof m.client, "libgridrpc test");
    m.min_version = 1;
    m.max_version = 7;
    snprintf(m.token, sizeof m.token, "s3cret");
    ASSERT_EQ(GRID_OK, grp_write_hello(p.w, 42, &m, &e)) << e.msg;
    p.header(GRP_HELLO, 42);
    ASSERT_EQ(GRID_OK, grp_read_hello(p.r, &got, &e)) << e.msg;
    EXPECT_STREQ("libgridrpc test", got.client);
    EXPECT_EQ(1u, got.min_version);
    EXPECT_EQ(7u, got.max_version);
    EXPECT_STREQ("s3cret", got.token);
    EXPECT_EQ(0u, got.session_len); // an older client's HELLO: no session
}

TEST(Proto, HelloCarriesTheSessionSecret) {
    Pair p;
    gr_err e;
    grp_hello m = {}, got;
    snprintf(m.client, sizeof m.client, "c");
    m.min_version = m.max_version = 1;
    for (int i = 0; i < GRP_SESSION_BYTES; i++)
        m.session[i] = (uint8_t)(0xa0 + i);
    m.session_len = GRP_SESSION_BYTES;
    ASSERT_EQ(GRID_OK, grp_write_hello(p.w, 3, &m, &e)) << e.msg;
    p.header(GRP_HELLO, 3);
    ASSERT_EQ(GRID_OK, grp_read_hello(p.r, &got, &e)) << e.msg;
    ASSERT_EQ((uint32_t)GRP_SESSION_BYTES, got.session_len);
    EXPECT_EQ(0, memcmp(m.session, got.session, GRP_SESSION_BYTES));
}

TEST(Proto, HelloSessionOfAnotherLengthIsRefused) {
    for (uint32_t n : {0u, 15u, 17u}) {
        Pair p;
        gr_err e;
        grp_hello got;
        uint8_t b[17] = {};
        grw_begin(p.w, GRP_HELLO, 0, 1, &e);
        grw_write_string(p.w, "c", &e);
        grw_write_u32(p.w, 1, &e);
        grw_write_u32(p.w, 1, &e);
        grw_write_string(p.w, "", &e);
        grw_write_opaque(p.w, b, n, &e);
        grw_finish(p.w, &e);
        p.header(GRP_HELLO, 1);
        int rc = grp_read_hello(p.r, &got, &e);
        EXPECT_TRUE(rc == GRID_ERR_PROTOCOL || rc == GRID_ERR_LIMIT) << n << ": " << e.msg;
    }
}

TEST(Proto, OwnersAreKeyIdsOrSessionHashes) {
    char a[GRP_OWNER_MAX + 1], b[GRP_OWNER_MAX + 1], k[GRP_OWNER_MAX + 1], none[GRP_OWNER_MAX + 1];
    uint8_t s1[GRP_SESSION_BYTES] = {1}, s2[GRP_SESSION_BYTES] = {2};
    grp_owner_of("", s1, GRP_SESSION_BYTES, a);
    grp_owner_of(nullptr, s2, GRP_SESSION_BYTES, b);
    grp_owner_of("0123456789abcdef", s1, GRP_SESSION_BYTES, k);
    grp_owner_of("", s1, 0, none);
    EXPECT_EQ(34u, strlen(a));
    EXPECT_EQ(0, strncmp(a, "s:", 2));
    EXPECT_STRNE(a, b);
    // The secret itself is never the owner's name (the job folder and logs hold names).
    EXPECT_EQ(nullptr, strstr(a, "01000000000000000000000000000000"));
    EXPECT_STREQ("k:0123456789abcdef", k); // with a key, the key id owns, whatever the session
    EXPECT_STREQ("", none);
}

TEST(Proto, HelloOkRoundTripAndVersionChecked) {
    Pair p;
    gr_err e;
    grp_hello_ok m = {}, got;
    snprintf(m.server, sizeof m.server, "gridrpcd test");
    m.version = GRW_VERSION;
    m.limits = {(1ull << 40) + 3, (1ull << 33) + 5, 123456};
    m.workers = 9;
    m.cores = 4;
    ASSERT_EQ(GRID_OK, grp_write_hello_ok(p.w, 1, &m, &e)) << e.msg;
    p.header(GRP_HELLO_OK, 1);
    ASSERT_EQ(GRID_OK, grp_read_hello_ok(p.r, &got, &e)) << e.msg;
    EXPECT_STREQ("gridrpcd test", got.server);
    EXPECT_EQ((1ull << 40) + 3, got.limits.max_message);
    EXPECT_EQ((1ull << 33) + 5, got.limits.max_array);
    EXPECT_EQ(123456u, got.limits.max_head);
    EXPECT_EQ(9u, got.workers);
    EXPECT_EQ(4u, got.cores);

    m.version = GRW_VERSION + 1;
    ASSERT_EQ(GRID_OK, grp_write_hello_ok(p.w, 2, &m, &e));
    p.header(GRP_HELLO_OK, 2);
    EXPECT_EQ(GRID_ERR_PROTOCOL, grp_read_hello_ok(p.r, &got, &e));
    EXPECT_NE(nullptr, strstr(e.msg, "version"));
}

TEST(Proto, DescriptorRoundTripAndBadDescriptor) {
    Pair p;
    gr_err e;
    const gridrpc_stub_function *f = stub_of("echo_double");
    ASSERT_NE(nullptr, f);
    char name[GRP_MAX_FUNCTION_NAME + 1];
    ASSERT_EQ(GRID_OK, grp_write_get_descriptor(p.w, 3, "test/echo_double", &e));
    p.header(GRP_GET_DESCRIPTOR, 3);
    ASSERT_EQ(GRID_OK, grp_read_get_descriptor(p.r, name, &e)) << e.msg;
    EXPECT_STREQ("test/echo_double", name);

    ASSERT_EQ(GRID_OK, grp_write_descriptor(p.w, 4, "test/echo_double", f->descriptor,
                                            static_cast<uint32_t>(f->descriptor_len), &e));
    p.header(GRP_DESCRIPTOR, 4);
    grd_desc *d = nullptr;
    ASSERT_EQ(GRID_OK, grp_read_descriptor(p.r, name, &d, &e)) << e.msg;
    EXPECT_STREQ("test/echo_double", name);
    EXPECT_STREQ("echo_double", d->name);
    EXPECT_EQ(desc_of("echo_double")->hash, d->hash);
    grd_free(d);

    const uint8_t junk[8] = {0, 0, 0, 9, 1, 2, 3, 4};
    ASSERT_EQ(GRID_OK, grp_write_descriptor(p.w, 5, "x", junk, sizeof junk, &e));
    p.header(GRP_DESCRIPTOR, 5);
    EXPECT_EQ(GRID_ERR_PROTOCOL, grp_read_descriptor(p.r, name, &d, &e));
    EXPECT_EQ(nullptr, d);
    EXPECT_NE(nullptr, strstr(e.msg, "bad descriptor"));
}

TEST(Proto, PongListAndEmptyRoundTrip) {
    Pair p;
    gr_err e;
    grp_pong m = {3, 5, 8, 2, 1.75}, got;
    ASSERT_EQ(GRID_OK, grp_write_pong(p.w, 6, &m, &e));
    p.header(GRP_PONG, 6);
    ASSERT_EQ(GRID_OK, grp_read_pong(p.r, &got, &e)) << e.msg;
    EXPECT_EQ(3u, got.running);
    EXPECT_EQ(5u, got.queued);
    EXPECT_EQ(8u, got.workers);
    EXPECT_EQ(2u, got.cores);
    EXPECT_EQ(1.75, got.loadavg);

    const char *names[] = {"test/null_call", "linalg/dmmul", ""};
    ASSERT_EQ(GRID_OK, grp_write_list_ok(p.w, 7, names, 3, &e));
    p.header(GRP_LIST_OK, 7);
    char **v;
    uint32_t n;
    ASSERT_EQ(GRID_OK, grp_read_list_ok(p.r, &v, &n, &e)) << e.msg;
    ASSERT_EQ(3u, n);
    EXPECT_STREQ("linalg/dmmul", v[1]);
    EXPECT_STREQ("", v[2]);
    grp_free_names(v, n);

    for (uint32_t t : {GRP_CANCEL, GRP_PING, GRP_LIST}) {
        ASSERT_EQ(GRID_OK, grp_write_empty(p.w, t, 8, &e));
        p.header(t, 8);
        EXPECT_EQ(GRID_OK, grp_read_empty(p.r, &e)) << e.msg;
    }
    // An "empty" message with a body is refused.
    ASSERT_EQ(GRID_OK, grw_begin(p.w, GRP_PING, 0, 9, &e));
    ASSERT_EQ(GRID_OK, grw_write_u32(p.w, 1, &e));
    ASSERT_EQ(GRID_OK, grw_finish(p.w, &e));
    p.header(GRP_PING, 9);
    EXPECT_EQ(GRID_ERR_PROTOCOL, grp_read_empty(p.r, &e));
}

TEST(Proto, CallAndResultRoundTrip) {
    const grd_desc *d = desc_of("echo_double");
    ASSERT_NE(nullptr, d);
    Pair p;
    gr_err e;
    double in[3] = {1.0, -2.5, 1e300}, out[3] = {0, 0, 0};
    void *argv[3];
    int n = 3;
    argv[0] = &n;
    argv[1] = in;
    argv[2] = out;
    grm_call *c = static_cast<grm_call *>(malloc(grm_call_size(d->nparams)));
    grw_limits lim;
    grp_limits_default(&lim);
    ASSERT_EQ(GRID_OK, grm_from_argv(c, d, argv, &lim, &e)) << e.msg;
    grp_call_target t;
    snprintf(t.name, sizeof t.name, "test/echo_double");
    t.hash = d->hash;
    ASSERT_EQ(GRID_OK, grp_write_call(p.w, 10, t.name, t.hash, c, &lim, &e)) << e.msg;

    // The server's side: target, head, bulk, then run the function.
    p.header(GRP_CALL, 10);
    grp_call_target got;
    ASSERT_EQ(GRID_OK, grp_read_call_target(p.r, &got, &e)) << e.msg;
    EXPECT_STREQ("test/echo_double", got.name);
    EXPECT_EQ(d->hash, got.hash);
    grm_call *s = static_cast<grm_call *>(malloc(grm_call_size(d->nparams)));
    grm_init(s, d, GRM_SERVER_SIDE);
    ASSERT_EQ(GRID_OK, grp_read_call_head(p.r, s, &lim, &e)) << e.msg;
    EXPECT_EQ(24u, grp_call_bulk_bytes(s));
    ASSERT_EQ(GRID_OK, grp_read_call_bulk(p.r, s, &e)) << e.msg;
    stub_of("echo_double")->invoke(s->ptr);
    grp_result_times times = {111, 222};
    ASSERT_EQ(GRID_OK, grp_write_result(p.w, 10, &times, s, &lim, &e)) << e.msg;
    EXPECT_EQ(24u + 16 + 4 + 24, grp_result_bytes(s));

    p.header(GRP_RESULT, 10);
    grp_result_times tgot;
    ASSERT_EQ(GRID_OK, grp_read_result(p.r, c, &tgot, &e)) << e.msg;
    EXPECT_EQ(111u, tgot.queue_ns);
    EXPECT_EQ(222u, tgot.run_ns);
    EXPECT_EQ(1.0, out[0]);
    EXPECT_EQ(-2.5, out[1]);
    EXPECT_EQ(1e300, out[2]);
    grm_release(s);
    free(s);
    free(c);
}

// ---------------------------------------------------------------- ERROR codes

TEST(Proto, ErrorCodesFromThePeerAreValidated) {
    struct {
        int sent, seen;
    } cases[] = {{GRID_ERR_ARGS, GRID_ERR_ARGS},
                 {1, 1},
                 {GRID_ERROR_COUNT_NP - 1, GRID_ERROR_COUNT_NP - 1},
                 {GRID_ERROR_COUNT_NP, GRID_ERR_PROTOCOL},
                 {0, GRID_ERR_PROTOCOL},
                 {-5, GRID_ERR_PROTOCOL},
                 {9999, GRID_ERR_PROTOCOL}};
    for (auto &k : cases) {
        Pair p;
        gr_err e;
        ASSERT_EQ(GRID_OK, grp_write_error(p.w, 11, k.sent, "what the server said", &e));
        p.header(GRP_ERROR, 11);
        grp_error m;
        ASSERT_EQ(GRID_OK, grp_read_error(p.r, &m, &e)) << e.msg;
        EXPECT_EQ(k.seen, m.code) << "sent " << k.sent;
        EXPECT_NE(nullptr, strstr(m.message, "what the server said"));
        if (k.seen != k.sent) {
            EXPECT_NE(nullptr, strstr(m.message, std::to_string(k.sent).c_str()));
        }
    }
}

TEST(Proto, ExpectReadsErrorsAndRefusesOtherTypes) {
    Pair p;
    gr_err e;
    int in_step = -1;
    grw_header h;
    ASSERT_EQ(GRID_OK, grp_write_error(p.w, 12, GRID_ERR_NOT_FOUND, "no such function", &e));
    ASSERT_EQ(GRID_OK, grp_read_header(p.r, &h, &e));
    EXPECT_EQ(GRID_ERR_NOT_FOUND, grp_expect(p.r, &h, GRP_DESCRIPTOR, "GET_DESCRIPTOR", &in_step, &e));
    EXPECT_EQ(1, in_step);
    EXPECT_STREQ("no such function", e.msg);

    ASSERT_EQ(GRID_OK, grp_write_error(p.w, 13, 77777, "odd", &e));
    ASSERT_EQ(GRID_OK, grp_read_header(p.r, &h, &e));
    EXPECT_EQ(GRID_ERR_PROTOCOL, grp_expect(p.r, &h, GRP_RESULT, "CALL", &in_step, &e));
    EXPECT_EQ(0, in_step);

    ASSERT_EQ(GRID_OK, grp_write_empty(p.w, GRP_PING, 14, &e));
    ASSERT_EQ(GRID_OK, grp_read_header(p.r, &h, &e));
    EXPECT_EQ(GRID_ERR_PROTOCOL, grp_expect(p.r, &h, GRP_HELLO_OK, "HELLO", &in_step, &e));
    EXPECT_NE(nullptr, strstr(e.msg, "answered HELLO with PING")) << e.msg;
    EXPECT_EQ(0, in_step);

    ASSERT_EQ(GRID_OK, grp_write_empty(p.w, GRP_PONG, 15, &e));
    ASSERT_EQ(GRID_OK, grp_read_header(p.r, &h, &e));
    EXPECT_EQ(GRID_OK, grp_expect(p.r, &h, GRP_PONG, "PING", &in_step, &e));
}

TEST(Proto, ErrorMessagesAreCutToTheLimit) {
    Pair p;
    gr_err e;
    std::string longmsg = repeat(GRP_MAX_ERROR_MESSAGE + 100);
    ASSERT_EQ(GRID_OK, grp_write_error(p.w, 16, GRID_ERR_FAILED, longmsg.c_str(), &e));
    p.header(GRP_ERROR, 16);
    grp_error m;
    ASSERT_EQ(GRID_OK, grp_read_error(p.r, &m, &e)) << e.msg;
    EXPECT_EQ(size_t{GRP_MAX_ERROR_MESSAGE}, strlen(m.message));
}

TEST(Proto, UnknownMessageTypesAreRefused) {
    for (uint32_t type : {0u, 18u, 19u, 35u, 48u, 69u, 65u, 0xffffffffu}) {
        Pair p;
        gr_err e;
        grw_header h;
        ASSERT_EQ(GRID_OK, grw_begin(p.w, type, 0, 17, &e));
        ASSERT_EQ(GRID_OK, grw_finish(p.w, &e));
        EXPECT_EQ(GRID_ERR_PROTOCOL, grp_read_header(p.r, &h, &e)) << type;
        EXPECT_NE(nullptr, strstr(e.msg, "unknown message type")) << e.msg;
        EXPECT_EQ(17u, h.request_id); // kept, so the answer can name the request
    }
    for (uint32_t type = GRP_HELLO; type <= GRP_PROBE_OK; type++)
        EXPECT_EQ(1, grp_known_type(type));
    for (uint32_t type = GRP_REGISTER; type <= GRP_HOLDS_OK; type++)
        EXPECT_EQ(1, grp_known_type(type));
}

// ---------------------------------------------------------------- limits

// Writes a string field of N bytes in a message of TYPE and returns what DECODE says.
template <typename F> int field_of(uint32_t type, const std::vector<std::string> &strings, F decode) {
    Pair p;
    gr_err e;
    grw_header h;
    grw_begin(p.w, type, 0, 1, &e);
    for (size_t i = 0; i < strings.size(); i++) {
        grw_write_string(p.w, strings[i].c_str(), &e);
        if (type == GRP_HELLO && i == 0) {
            grw_write_u32(p.w, 1, &e);
            grw_write_u32(p.w, 1, &e);
        }
    }
    if (type == GRP_ERROR) {
        // ERROR is code then message: rebuild it.
        grw_begin(p.w, type, 0, 1, &e);
        grw_write_u32(p.w, GRID_ERR_FAILED, &e);
        grw_write_string(p.w, strings[0].c_str(), &e);
    }
    grw_finish(p.w, &e);
    if (grp_read_header(p.r, &h, &e)) return -1;
    return decode(p.r, &e);
}

TEST(Proto, EveryStringFieldAtAndOnePastItsLimit) {
    auto hello = [](grw_reader *r, gr_err *e) {
        grp_hello m;
        return grp_read_hello(r, &m, e);
    };
    EXPECT_EQ(GRID_OK, field_of(GRP_HELLO, {repeat(GRP_MAX_PEER_NAME), ""}, hello));
    EXPECT_EQ(GRID_ERR_LIMIT, field_of(GRP_HELLO, {repeat(GRP_MAX_PEER_NAME + 1), ""}, hello));
    EXPECT_EQ(GRID_OK, field_of(GRP_HELLO, {"c", repeat(GRP_MAX_TOKEN)}, hello));
    EXPECT_EQ(GRID_ERR_LIMIT, field_of(GRP_HELLO, {"c", repeat(GRP_MAX_TOKEN + 1)}, hello));

    auto getd = [](grw_reader *r, gr_err *e) {
        char name[GRP_MAX_FUNCTION_NAME + 1];
        return grp_read_get_descriptor(r, name, e);
    };
    EXPECT_EQ(GRID_OK, field_of(GRP_GET_DESCRIPTOR, {repeat(GRP_MAX_FUNCTION_NAME)}, getd));
    EXPECT_EQ(GRID_ERR_LIMIT, field_of(GRP_GET_DESCRIPTOR, {repeat(GRP_MAX_FUNCTION_NAME + 1)}, getd));

    auto call = [](grw_reader *r, gr_err *e) {
        grp_call_target t;
        return grp_read_call_target(r, &t, e);
    };
    EXPECT_EQ(GRID_ERR_LIMIT, field_of(GRP_CALL, {repeat(GRP_MAX_FUNCTION_NAME + 1)}, call));

    auto err = [](grw_reader *r, gr_err *e) {
        grp_error m;
        return grp_read_error(r, &m, e);
    };
    EXPECT_EQ(GRID_OK, field_of(GRP_ERROR, {repeat(GRP_MAX_ERROR_MESSAGE)}, err));
    EXPECT_EQ(GRID_ERR_LIMIT, field_of(GRP_ERROR, {repeat(GRP_MAX_ERROR_MESSAGE + 1)}, err));

    auto list = [](grw_reader *r, gr_err *e) {
        char **v;
        uint32_t n;
        int rc = grp_read_list_ok(r, &v, &n, e);
        grp_free_names(v, n);
        return rc;
    };
    {
        Pair p;
        gr_err e;
        grw_header h;
        grw_begin(p.w, GRP_LIST_OK, 0, 1, &e);
        grw_write_u32(p.w, 1, &e);
        grw_write_string(p.w, repeat(GRP_MAX_FUNCTION_NAME + 1).c_str(), &e);
        grw_finish(p.w, &e);
        ASSERT_EQ(GRID_OK, grp_read_header(p.r, &h, &e));
        EXPECT_EQ(GRID_ERR_LIMIT, list(p.r, &e));
    }
}

TEST(Proto, ListCountIsBoundedBeforeAllocating) {
    const char *one = "a";
    std::vector<const char *> names(GRP_MAX_LIST_COUNT + 1, one);
    Pair p(GRP_DEFAULT_MAX_MESSAGE);
    gr_err e, we;
    EXPECT_EQ(GRID_ERR_LIMIT, grp_write_list_ok(p.w, 1, names.data(), GRP_MAX_LIST_COUNT + 1, &e));
    // Larger than the socket's buffer: written while it is read.
    int wrc = -1;
    std::thread writer([&] { wrc = grp_write_list_ok(p.w, 2, names.data(), GRP_MAX_LIST_COUNT, &we); });
    p.header(GRP_LIST_OK, 2);
    char **v;
    uint32_t n;
    ASSERT_EQ(GRID_OK, grp_read_list_ok(p.r, &v, &n, &e)) << e.msg;
    writer.join();
    EXPECT_EQ(GRID_OK, wrc) << we.msg;
    EXPECT_EQ(uint32_t{GRP_MAX_LIST_COUNT}, n);
    grp_free_names(v, n);

    // A count over the limit, and a count the message cannot hold, fail at once.
    for (uint32_t count : {uint32_t{GRP_MAX_LIST_COUNT + 1}, 1000u}) {
        Pair q(4096);
        grw_header h;
        grw_begin(q.w, GRP_LIST_OK, 0, 3, &e);
        grw_write_u32(q.w, count, &e);
        grw_finish(q.w, &e);
        ASSERT_EQ(GRID_OK, grp_read_header(q.r, &h, &e));
        int rc = grp_read_list_ok(q.r, &v, &n, &e);
        EXPECT_EQ(count > GRP_MAX_LIST_COUNT ? GRID_ERR_LIMIT : GRID_ERR_PROTOCOL, rc) << e.msg;
    }
}

TEST(Proto, DescriptorOverItsLimitIsRefused) {
    Pair p(8u << 20);
    gr_err e, we;
    std::vector<uint8_t> big(GRP_MAX_DESCRIPTOR + 1, 0);
    // The reader refuses after the length word; closing its end ends the writer.
    std::thread writer(
        [&] { grp_write_descriptor(p.w, 1, "x", big.data(), static_cast<uint32_t>(big.size()), &we); });
    p.header(GRP_DESCRIPTOR, 1);
    char name[GRP_MAX_FUNCTION_NAME + 1];
    grd_desc *d = nullptr;
    EXPECT_EQ(GRID_ERR_LIMIT, grp_read_descriptor(p.r, name, &d, &e));
    EXPECT_EQ(nullptr, d);
    shutdown(p.fd[1], SHUT_RDWR);
    writer.join();
}

TEST(Proto, TrailingBytesAfterAMessageAreRefused) {
    Pair p;
    gr_err e;
    grp_hello m = {};
    // A HELLO with one more word than its fields.
    grw_begin(p.w, GRP_HELLO, 0, 1, &e);
    grw_write_string(p.w, "c", &e);
    grw_write_u32(p.w, 1, &e);
    grw_write_u32(p.w, 1, &e);
    grw_write_string(p.w, "", &e);
    grw_write_u32(p.w, 0, &e);
    grw_finish(p.w, &e);
    p.header(GRP_HELLO, 1);
    EXPECT_EQ(GRID_ERR_PROTOCOL, grp_read_hello(p.r, &m, &e));
}

// ---------------------------------------------------------------- golden bytes

const uint64_t kId = 0x0102030405060708ull;

TEST(ProtoGolden, SmallMessages) {
    gr_err e;
    {
        Pair p;
        grp_hello m = {};
        snprintf(m.client, sizeof m.client, "libgridrpc 1");
        m.min_version = m.max_version = 1;
        snprintf(m.token, sizeof m.token, "tok");
        grp_write_hello(p.w, kId, &m, &e);
        golden("hello", p.raw());
    }
    {
        Pair p;
        grp_hello m = {};
        snprintf(m.client, sizeof m.client, "libgridrpc 1");
        m.min_version = m.max_version = 1;
        for (int i = 0; i < GRP_SESSION_BYTES; i++)
            m.session[i] = (uint8_t)(0x10 + i);
        m.session_len = GRP_SESSION_BYTES;
        grp_write_hello(p.w, kId, &m, &e);
        golden("hello_session", p.raw());
    }
    {
        Pair p;
        grp_hello_ok m = {};
        snprintf(m.server, sizeof m.server, "gridrpcd 1");
        m.version = 1;
        m.limits = {GRP_DEFAULT_MAX_MESSAGE, GRP_DEFAULT_MAX_ARRAY, GRP_DEFAULT_MAX_HEAD};
        m.workers = 2;
        m.cores = 2;
        grp_write_hello_ok(p.w, kId, &m, &e);
        golden("hello_ok", p.raw());
    }
    {
        Pair p;
        grp_write_get_descriptor(p.w, kId, "test/echo_double", &e);
        golden("get_descriptor", p.raw());
    }
    {
        Pair p;
        const gridrpc_stub_function *f = stub_of("null_call");
        grp_write_descriptor(p.w, kId, "test/null_call", f->descriptor,
                             static_cast<uint32_t>(f->descriptor_len), &e);
        golden("descriptor", p.raw());
    }
    {
        Pair p;
        grp_write_error(p.w, kId, GRID_ERR_NOT_FOUND, "no function 'x'", &e);
        golden("error", p.raw());
    }
    {
        Pair p;
        grp_write_empty(p.w, GRP_CANCEL, kId, &e);
        golden("cancel", p.raw());
    }
    {
        Pair p;
        grp_write_empty(p.w, GRP_PING, kId, &e);
        golden("ping", p.raw());
    }
    {
        Pair p;
        grp_pong m = {1, 2, 3, 4, 0.5};
        grp_write_pong(p.w, kId, &m, &e);
        golden("pong", p.raw());
    }
    {
        Pair p;
        grp_write_empty(p.w, GRP_LIST, kId, &e);
        golden("list", p.raw());
    }
    {
        Pair p;
        const char *names[] = {"test/null_call", "linalg/dmmul"};
        grp_write_list_ok(p.w, kId, names, 2, &e);
        golden("list_ok", p.raw());
    }
}

// CALL and RESULT of echo_scalars (every scalar type, both directions) and of
// echo_double (a bulk array).
TEST(ProtoGolden, CallAndResult) {
    gr_err e;
    grw_limits lim;
    grp_limits_default(&lim);
    {
        const grd_desc *d = desc_of("echo_scalars");
        ASSERT_NE(nullptr, d);
        ASSERT_GE(d->nparams, 20u);
        char c = 'x', co = 0;
        short s = -1234, so = 0;
        int i = -123456789, io = 0;
        long l = -1234567890123L, lo = 0;
        long long ll = -987654321098765LL, llo = 0;
        float f = 3.5f, fo = 0;
        double dv = -2.0e300, dvo = 0;
        scomplex sc = {1.5f, -2.5f}, sco = {0, 0};
        dcomplex dc = {3.25, -4.75}, dco = {0, 0};
        unsigned u = 4000000000u, uo = 0;
        void *argv[20] = {&c,  &s,  &i,  &l,  &ll,  &f,  &dv,  &sc,  &dc,  &u,
                          &co, &so, &io, &lo, &llo, &fo, &dvo, &sco, &dco, &uo};
        grm_call *call = static_cast<grm_call *>(malloc(grm_call_size(d->nparams)));
        ASSERT_EQ(GRID_OK, grm_from_argv(call, d, argv, &lim, &e)) << e.msg;
        grp_call_target t;
        snprintf(t.name, sizeof t.name, "test/echo_scalars");
        t.hash = 0x1122334455667788ull; // not the descriptor's: the golden file must not follow it
        Pair p;
        ASSERT_EQ(GRID_OK, grp_write_call(p.w, kId, t.name, t.hash, call, &lim, &e)) << e.msg;
        golden("call_echo_scalars", p.raw());
        // The RESULT carries the same values back in the OUT parameters.
        co = c, so = s, io = i, lo = l, llo = ll, fo = f, dvo = dv, sco = sc, dco = dc, uo = u;
        Pair q;
        grp_result_times times = {1000, 2000};
        ASSERT_EQ(GRID_OK, grp_write_result(q.w, kId, &times, call, &lim, &e)) << e.msg;
        golden("result_echo_scalars", q.raw());
        free(call);
    }
    {
        const grd_desc *d = desc_of("echo_double");
        double in[3] = {1.0, -2.5, 1e300}, out[3] = {0.25, 0, -0.0};
        int n = 3;
        void *argv[3] = {&n, in, out};
        grm_call *call = static_cast<grm_call *>(malloc(grm_call_size(d->nparams)));
        ASSERT_EQ(GRID_OK, grm_from_argv(call, d, argv, &lim, &e)) << e.msg;
        grp_call_target t;
        snprintf(t.name, sizeof t.name, "test/echo_double");
        t.hash = 0x1122334455667788ull;
        Pair p;
        grp_write_call(p.w, kId, t.name, t.hash, call, &lim, &e);
        golden("call_echo_double", p.raw());
        Pair q;
        grp_result_times times = {1000, 2000};
        grp_write_result(q.w, kId, &times, call, &lim, &e);
        golden("result_echo_double", q.raw());
        free(call);
    }
}

// ---------------------------------------------------------------- the spec

std::string read_doc() {
    const char *top = getenv("top_srcdir");
    if (!top) return "";
    std::ifstream f(std::string(top) + "/docs/protocol.md");
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

TEST(ProtoSpec, DocsAgreeWithTheCode) {
    std::string doc = read_doc();
    ASSERT_FALSE(doc.empty()) << "docs/protocol.md not found (run through make check)";
    // Every message type: its number and name in the table.
    std::regex row(R"(\n\| (\d+) \| ([A-Z_]+) \| [^|]+\| ([^\n]*)\|)");
    int rows = 0;
    std::string list_ok_body;
    for (auto it = std::sregex_iterator(doc.begin(), doc.end(), row); it != std::sregex_iterator(); ++it) {
        uint32_t type = static_cast<uint32_t>(std::stoul((*it)[1]));
        EXPECT_EQ(1, grp_known_type(type)) << "docs list type " << type;
        EXPECT_STREQ((*it)[2].str().c_str(), grp_type_name(type)) << "type " << type;
        if ((*it)[2] == "LIST_OK") list_ok_body = (*it)[3];
        rows++;
    }
    int known = 0;
    for (uint32_t t = 1; t < 256; t++)
        known += grp_known_type(t);
    EXPECT_EQ(known, rows) << "every message type has a row in docs/protocol.md";
    // Every bounded field: the bound the docs give is the one the code enforces.
    struct {
        const char *field;
        unsigned long limit;
    } fields[] = {{"client", GRP_MAX_PEER_NAME},
                  {"server", GRP_MAX_PEER_NAME},
                  {"token", GRP_MAX_TOKEN},
                  {"name", GRP_MAX_FUNCTION_NAME},
                  {"qualified", GRP_MAX_FUNCTION_NAME},
                  {"message", GRP_MAX_ERROR_MESSAGE},
                  {"descriptor", GRP_MAX_DESCRIPTOR},
                  {"host", GRP_MAX_HOST},
                  {"site", GRP_MAX_SITE},
                  {"function", GRP_MAX_FUNCTION_NAME},
                  {"class", GRP_MAX_FUNCTION_NAME},
                  {"method", GRP_MAX_METHOD_NAME},
                  {"payload", GRP_MAX_PROBE},
                  {"what", GRP_MAX_CRASH_WHAT},
                  {"servers", GRP_MAX_HOLD_SERVERS}};
    for (auto &f : fields) {
        std::regex bound(std::string(R"(\b)") + f.field + R"(<(\d+)>)");
        int seen = 0;
        for (auto it = std::sregex_iterator(doc.begin(), doc.end(), bound); it != std::sregex_iterator();
             ++it) {
            EXPECT_EQ(f.limit, std::stoul((*it)[1])) << f.field << " in docs/protocol.md";
            seen++;
        }
        EXPECT_GT(seen, 0) << f.field << "<N> is not in docs/protocol.md";
    }
    std::smatch m;
    ASSERT_TRUE(std::regex_search(list_ok_body, m, std::regex(R"(count <= (\d+))"))) << list_ok_body;
    EXPECT_EQ(static_cast<unsigned long>(GRP_MAX_LIST_COUNT), std::stoul(m[1]));
    // The counts of the metaserver's messages.
    struct {
        const char *count;
        unsigned long limit;
    } counts[] = {{"nfunctions", GRP_MAX_FUNCTIONS}, {"nexclude", GRP_MAX_EXCLUDE},
                  {"naffinity", GRP_MAX_AFFINITY},   {"reply_bytes", GRP_MAX_PROBE},
                  {"nrefs", GRP_MAX_REFS},           {"nholds", GRP_MAX_HOLDS}};
    for (auto &c : counts) {
        std::regex bound(std::string(R"(\()") + c.count + R"( <= (\d+)\))");
        int seen = 0;
        for (auto it = std::sregex_iterator(doc.begin(), doc.end(), bound); it != std::sregex_iterator();
             ++it, seen++)
            EXPECT_EQ(c.limit, std::stoul((*it)[1])) << c.count << " in docs/protocol.md";
        EXPECT_GT(seen, 0) << "(" << c.count << " <= N) is not in docs/protocol.md";
    }
    ASSERT_TRUE(std::regex_search(doc, m, std::regex(R"(SERVERS_OK \|[^\n]*\(count <= (\d+)\) \|)")));
    EXPECT_EQ(static_cast<unsigned long>(GRP_MAX_SERVERS), std::stoul(m[1]));
    ASSERT_TRUE(std::regex_search(doc, m, std::regex(R"(magic; +/\* 0x([0-9a-f]+))")));
    EXPECT_EQ(GRW_MAGIC, std::stoul(m[1], nullptr, 16));
    ASSERT_TRUE(std::regex_search(doc, m, std::regex(R"(version; +/\* (\d+) \*/)")));
    EXPECT_EQ(GRW_VERSION, std::stoul(m[1]));
}

} // namespace
