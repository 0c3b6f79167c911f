// proto_callback_test.cpp: client callbacks below the server and the client: a
// descriptor with callback parameters (encode, decode, dump, the rules its decoder
// enforces), the callback's own descriptor for one call (grd_callback_desc), and the
// CALLBACK and CALLBACK_RESULT messages over a socketpair: round trips, the checks of
// their decoders on hostile input, and their bytes pinned by tests/golden-msg/.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

extern "C" {
#include "grd_desc.h"
#include "grp_proto.h"
}

#include "proto_fixture.h"

namespace {

using proto_fixture::golden;
using proto_fixture::Pair;

const uint64_t kId = 0x0102030405060708ull;

grd_insn insn(uint32_t op, int64_t operand = 0) {
    grd_insn i;
    i.op = op;
    i.operand = operand;
    return i;
}

// f(IN int n, OUT double s[1], cb(IN int k, IN double c[n][k], OUT double d[k], IN string msg)):
// a descriptor built by hand, as idlc builds one, with programs naming the function's n
// (PARAM 0) and the callback's own k (CBPARAM 0).
struct Built {
    grd_insn pn = insn(GRD_OP_PARAM, 0), pk = insn(GRD_OP_CBPARAM, 0), one = insn(GRD_OP_CONST, 1);
    grd_dim cdims[2] = {}, ddims[1] = {}, sdims[1] = {};
    grd_param cb[4] = {};
    grd_param params[3] = {};
    grd_desc d = {};
    Built() {
        cdims[0].size = {1, &pn};
        cdims[1].size = {1, &pk};
        ddims[0].size = {1, &pk};
        sdims[0].size = {1, &one};
        cb[0] = {const_cast<char *>("k"), GRD_INT, GRD_IN, 0, 0, nullptr, 0, nullptr};
        cb[1] = {const_cast<char *>("c"), GRD_DOUBLE, GRD_IN, 0, 2, cdims, 0, nullptr};
        cb[2] = {const_cast<char *>("d"), GRD_DOUBLE, GRD_OUT, 0, 1, ddims, 0, nullptr};
        cb[3] = {const_cast<char *>("msg"), GRD_STRING, GRD_IN, 0, 0, nullptr, 0, nullptr};
        params[0] = {const_cast<char *>("n"), GRD_INT, GRD_IN, 0, 0, nullptr, 0, nullptr};
        params[1] = {const_cast<char *>("s"), GRD_DOUBLE, GRD_OUT, 0, 1, sdims, 0, nullptr};
        params[2] = {const_cast<char *>("cb"), GRD_CALLBACK, GRD_IN, 0, 0, nullptr, 4, cb};
        d.version = GRD_FORMAT_VERSION;
        d.module = const_cast<char *>("m");
        d.name = const_cast<char *>("f");
        d.description = const_cast<char *>("");
        d.language = GRD_LANG_C;
        d.nparams = 3;
        d.params = params;
    }
    std::string invalid() {
        grd_error err{};
        if (grd_validate(&d, &err) == GRD_OK) return "";
        return err.msg;
    }
};

grd_desc *roundtrip(Built &b) {
    uint8_t *buf = nullptr;
    size_t len = 0;
    grd_error err{};
    EXPECT_EQ(GRD_OK, grd_encode(&b.d, &buf, &len, &err)) << err.msg;
    grd_desc *out = nullptr;
    EXPECT_EQ(GRD_OK, grd_decode(buf, len, &out, &err)) << err.msg;
    free(buf);
    return out;
}

TEST(CallbackDesc, EncodesDecodesAndDumps) {
    Built b;
    grd_desc *d = roundtrip(b);
    ASSERT_NE(nullptr, d);
    EXPECT_EQ(1u, grd_callback_count(d));
    ASSERT_EQ(4u, d->params[2].ncb);
    char *dump = grd_dump(d);
    EXPECT_NE(
        nullptr,
        strstr(dump, "param 3 cb: callback (IN int k, IN double c[n][k], OUT double d[k], IN string msg)"))
        << dump;
    free(dump);

    // The callback's descriptor for a call with n = 3: n becomes 3, k its own PARAM 0.
    int64_t ival[3] = {3, 0, 0};
    grd_desc *cd = nullptr;
    grd_error err{};
    ASSERT_EQ(GRD_OK, grd_callback_desc(d, 2, ival, &cd, &err)) << err.msg;
    dump = grd_dump(cd);
    EXPECT_NE(nullptr, strstr(dump, "function m/cb")) << dump;
    EXPECT_NE(nullptr, strstr(dump, "param 2 c: IN double [3][k]")) << dump;
    EXPECT_NE(nullptr, strstr(dump, "param 3 d: OUT double [k]")) << dump;
    free(dump);
    int64_t cval[4] = {5, 0, 0, 0};
    grd_extent ext;
    ASSERT_EQ(GRD_OK, grd_extent_of(cd, 1, cval, 0, &ext, &err)) << err.msg;
    EXPECT_EQ(15u, ext.elems);
    grd_free(cd);
    EXPECT_EQ(GRD_E_ARG, grd_callback_desc(d, 1, ival, &cd, &err)) << "s is no callback";
    EXPECT_EQ(nullptr, cd);
    grd_free(d);
}

TEST(CallbackDesc, TheRulesOfTheFormat) {
    {
        Built b;
        b.params[2].rank = 1;
        b.params[2].dims = b.sdims;
        EXPECT_NE("", b.invalid()) << "a callback has rank 0";
    }
    {
        Built b;
        b.params[2].mode = GRD_OUT;
        EXPECT_NE(std::string::npos, b.invalid().find("mode IN"));
    }
    {
        Built b;
        b.cb[3].type = GRD_CALLBACK;
        EXPECT_NE(std::string::npos, b.invalid().find("no callbacks inside callbacks"));
    }
    {
        Built b;
        b.cb[2].mode = GRD_WORK;
        EXPECT_NE("", b.invalid()) << "no WORK parameters in a callback";
    }
    {
        Built b;
        b.params[2].ncb = GRD_MAX_CB_PARAMS + 1;
        EXPECT_NE(std::string::npos, b.invalid().find("exceed the limit of 32"));
    }
    {
        Built b;
        b.cb[1].dims[1].size = {1, &b.pn};
        b.pn.op = GRD_OP_CBPARAM;
        b.pn.operand = 2; // 'd', an OUT array
        EXPECT_NE(std::string::npos, b.invalid().find("not an integer IN or INOUT scalar of callback 'cb'"));
    }
    {
        Built b;
        b.sdims[0].size = {1, &b.pk}; // CBPARAM in the function's own parameter
        EXPECT_NE(std::string::npos, b.invalid().find("CBPARAM outside the parameters of a callback"));
    }
    {
        Built b;
        b.cb[1].name = const_cast<char *>("k");
        EXPECT_NE(std::string::npos, b.invalid().find("the name is also parameter 1's"));
    }
    {
        Built b;
        b.params[0].ncb = 1;
        b.params[0].cb = b.cb;
        EXPECT_NE(std::string::npos, b.invalid().find("it is no callback"));
    }
    Built ok;
    EXPECT_EQ("", ok.invalid());
}

// ---------------------------------------------------------------- the messages

// The callback's descriptor for n = 2 (c[2][k], d[k], msg).
grd_desc *callback_of(Built &b) {
    int64_t ival[3] = {2, 0, 0};
    grd_desc *cd = nullptr;
    grd_error err{};
    EXPECT_EQ(GRD_OK, grd_callback_desc(&b.d, 2, ival, &cd, &err)) << err.msg;
    return cd;
}

TEST(CallbackMessages, RoundTrip) {
    Built b;
    grd_desc *cd = callback_of(b);
    ASSERT_NE(nullptr, cd);
    Pair p;
    gr_err e;
    grw_limits lim;
    grp_limits_default(&lim);
    // The server's side: the body's buffers.
    int k = 3;
    double c[6] = {1, 2, 3, 4, 5, 6}, d[3] = {0, 0, 0};
    const char *msg = "hello";
    void *argv[4] = {&k, c, d, &msg};
    grm_call *sc = static_cast<grm_call *>(malloc(grm_call_size(cd->nparams)));
    ASSERT_EQ(GRID_OK, grm_from_argv(sc, cd, argv, &lim, &e)) << e.msg;
    ASSERT_EQ(GRID_OK, grp_write_callback(p.w, kId, 2, 7, sc, &lim, &e)) << e.msg;

    // The client's side: allocates, runs, answers.
    p.header(GRP_CALLBACK, kId);
    grp_callback_target t;
    ASSERT_EQ(GRID_OK, grp_read_callback_target(p.r, &t, &e)) << e.msg;
    EXPECT_EQ(2u, t.index);
    EXPECT_EQ(7u, t.seq);
    grm_call *cc = static_cast<grm_call *>(malloc(grm_call_size(cd->nparams)));
    grm_init(cc, cd, GRM_SERVER_SIDE);
    ASSERT_EQ(GRID_OK, grp_read_callback_args(p.r, cc, &lim, &e)) << e.msg;
    EXPECT_EQ(3, *static_cast<int *>(cc->ptr[0]));
    EXPECT_EQ(6.0, static_cast<double *>(cc->ptr[1])[5]);
    EXPECT_STREQ("hello", *static_cast<char **>(cc->ptr[3]));
    double *out = static_cast<double *>(cc->ptr[2]);
    for (int i = 0; i < 3; i++)
        out[i] = 10 + i;
    ASSERT_EQ(GRID_OK, grp_write_callback_result(p.w, kId, t.index, t.seq, GRID_OK, nullptr, cc, &lim, &e))
        << e.msg;

    // The server reads the answer into the body's buffers.
    p.header(GRP_CALLBACK_RESULT, kId);
    grp_callback_status st;
    ASSERT_EQ(GRID_OK, grp_read_callback_status(p.r, &st, &e)) << e.msg;
    EXPECT_EQ(2u, st.index);
    EXPECT_EQ(7u, st.seq);
    EXPECT_EQ(GRID_OK, st.code);
    ASSERT_EQ(GRID_OK, grp_read_callback_result_args(p.r, sc, &e)) << e.msg;
    EXPECT_EQ(10.0, d[0]);
    EXPECT_EQ(12.0, d[2]);
    grm_release(cc);
    free(cc);
    free(sc);
    grd_free(cd);
}

TEST(CallbackMessages, AFailureCarriesItsCodeAndMessage) {
    Pair p;
    gr_err e;
    ASSERT_EQ(GRID_OK,
              grp_write_callback_result(p.w, 5, 1, 2, GRID_ERR_ARGS, "no function", nullptr, nullptr, &e))
        << e.msg;
    p.header(GRP_CALLBACK_RESULT, 5);
    grp_callback_status st;
    ASSERT_EQ(GRID_OK, grp_read_callback_status(p.r, &st, &e)) << e.msg;
    EXPECT_EQ(GRID_ERR_ARGS, st.code);
    EXPECT_STREQ("no function", st.message);
}

// A hand-made CALLBACK_RESULT: INDEX, SEQ, CODE, an empty message, then EXTRA bytes.
void write_status(Pair &p, uint32_t index, uint32_t seq, int32_t code, size_t extra) {
    gr_err e;
    std::vector<uint8_t> zeros(extra, 0);
    grw_begin(p.w, GRP_CALLBACK_RESULT, 0, 9, &e);
    grw_write_u32(p.w, index, &e);
    grw_write_u32(p.w, seq, &e);
    grw_write_i32(p.w, code, &e);
    grw_write_string(p.w, "", &e);
    if (extra) grw_write(p.w, zeros.data(), extra, &e);
    grw_finish(p.w, &e);
}

TEST(CallbackMessages, HostileAnswersAreRefused) {
    gr_err e;
    grp_callback_status st;
    {
        Pair p;
        write_status(p, 0, 1, 99, 0);
        p.header(GRP_CALLBACK_RESULT, 9);
        EXPECT_EQ(GRID_ERR_PROTOCOL, grp_read_callback_status(p.r, &st, &e));
        EXPECT_NE(nullptr, strstr(e.msg, "unknown code 99")) << e.msg;
    }
    {
        Pair p;
        write_status(p, 0, 1, -1, 0);
        p.header(GRP_CALLBACK_RESULT, 9);
        EXPECT_EQ(GRID_ERR_PROTOCOL, grp_read_callback_status(p.r, &st, &e)) << "a negative code";
    }
    {
        Pair p;
        write_status(p, 0, 1, GRID_ERR_ARGS, 8);
        p.header(GRP_CALLBACK_RESULT, 9);
        EXPECT_EQ(GRID_ERR_PROTOCOL, grp_read_callback_status(p.r, &st, &e)) << "arguments after a failure";
    }
    {
        // A CALLBACK whose callback number cannot be a parameter.
        Pair p;
        grw_begin(p.w, GRP_CALLBACK, 0, 9, &e);
        grw_write_u32(p.w, GRD_MAX_PARAMS, &e);
        grw_write_u32(p.w, 1, &e);
        grw_finish(p.w, &e);
        p.header(GRP_CALLBACK, 9);
        grp_callback_target t;
        EXPECT_EQ(GRID_ERR_PROTOCOL, grp_read_callback_target(p.r, &t, &e));
    }
    {
        // Arguments of the wrong size for the callback's descriptor: d[3] is 24 bytes.
        Built b;
        grd_desc *cd = callback_of(b);
        int k = 3;
        double c[6] = {0}, d[3] = {0};
        const char *msg = "";
        void *argv[4] = {&k, c, d, &msg};
        grw_limits lim;
        grp_limits_default(&lim);
        grm_call *sc = static_cast<grm_call *>(malloc(grm_call_size(cd->nparams)));
        ASSERT_EQ(GRID_OK, grm_from_argv(sc, cd, argv, &lim, &e)) << e.msg;
        for (size_t bulk : {16u, 32u}) {
            Pair p;
            write_status(p, 2, 1, GRID_OK, 4 + bulk); // head length 0, then the bulk
            p.header(GRP_CALLBACK_RESULT, 9);
            ASSERT_EQ(GRID_OK, grp_read_callback_status(p.r, &st, &e)) << e.msg;
            EXPECT_NE(GRID_OK, grp_read_callback_result_args(p.r, sc, &e)) << bulk << " bytes of bulk";
        }
        free(sc);
        grd_free(cd);
    }
}

TEST(CallbackGolden, Messages) {
    Built b;
    grd_desc *cd = callback_of(b);
    ASSERT_NE(nullptr, cd);
    gr_err e;
    grw_limits lim;
    grp_limits_default(&lim);
    int k = 2;
    double c[4] = {1, -2, 0.5, 1e10}, d[2] = {3.25, -0.0};
    const char *msg = "hi";
    void *argv[4] = {&k, c, d, &msg};
    grm_call *sc = static_cast<grm_call *>(malloc(grm_call_size(cd->nparams)));
    ASSERT_EQ(GRID_OK, grm_from_argv(sc, cd, argv, &lim, &e)) << e.msg;
    {
        Pair p;
        grp_write_callback(p.w, kId, 2, 1, sc, &lim, &e);
        golden("callback", p.raw());
    }
    {
        Pair p;
        grp_write_callback_result(p.w, kId, 2, 1, GRID_OK, nullptr, sc, &lim, &e);
        golden("callback_result", p.raw());
    }
    {
        Pair p;
        grp_write_callback_result(p.w, kId, 2, 1, GRID_ERR_ARGS, "no function was passed", nullptr, nullptr,
                                  &e);
        golden("callback_result_error", p.raw());
    }
    free(sc);
    grd_free(cd);
}

} // namespace
