// proto_data_test.cpp: the messages of remote data handles (DATA_PUT, DATA_OK, DATA_GET,
// DATA, DATA_FREE, DATA_COPY, SESSION_END, CALL_DATA; runtime/proto/grp_data.c) and the
// marshal skip masks they rely on, over a socketpair: round trips of every element type,
// what each decoder refuses (ids 0, bad types, counts over the limits, bad refs: flags,
// order, count), the descriptor checks of refs, that a referenced array leaves the CALL
// and the RESULT (and their sizes) exactly, and the bytes pinned by tests/golden-msg/.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

extern "C" {
#include "gridrpc_stub.h"
#include "grp_proto.h"
extern const gridrpc_stub_module gridrpc_module_test;
}

#include "proto_fixture.h"

namespace {

using proto_fixture::golden;
using proto_fixture::Pair;

const grp_data_id kId = {0x1111222233334444ull, 7};

// Decoded once per name and kept for the whole run (freed at exit, for the leak check).
const grd_desc *desc(const char *name) {
    static std::map<std::string, std::unique_ptr<grd_desc, void (*)(grd_desc *)>> cache;
    auto it = cache.find(name);
    if (it != cache.end()) return it->second.get();
    for (unsigned i = 0; i < gridrpc_module_test.nfunctions; i++) {
        const gridrpc_stub_function *f = &gridrpc_module_test.functions[i];
        grd_desc *d = nullptr;
        grd_error ge;
        if (strcmp(f->name, name) == 0 && grd_decode(f->descriptor, f->descriptor_len, &d, &ge) == GRD_OK) {
            cache.emplace(name, std::unique_ptr<grd_desc, void (*)(grd_desc *)>(d, grd_free));
            return d;
        }
    }
    return nullptr;
}

grm_call *new_call(const grd_desc *d) {
    return static_cast<grm_call *>(calloc(1, grm_call_size(d->nparams)));
}

// Puts COUNT elements of TYPE (raw bytes BYTES) and reads them back on the other side.
void put_round_trip(uint32_t type, uint64_t count) {
    size_t bytes = grp_data_bytes(type, count);
    std::vector<uint8_t> src(bytes), dst(bytes + 1, 0xee);
    for (size_t i = 0; i < bytes; i++)
        src[i] = static_cast<uint8_t>(i * 37 + type);
    Pair p;
    gr_err e;
    ASSERT_EQ(GRID_OK, grp_write_data_put(p.w, 3, kId, type, count, src.data(), &e)) << e.msg;
    p.header(GRP_DATA_PUT, 3);
    grp_data_id d;
    uint32_t t;
    uint64_t n;
    ASSERT_EQ(GRID_OK, grp_read_data_put(p.r, &d, &t, &n, bytes, &e)) << e.msg;
    EXPECT_EQ(kId.session, d.session);
    EXPECT_EQ(kId.handle, d.handle);
    EXPECT_EQ(type, t);
    EXPECT_EQ(count, n);
    ASSERT_EQ(GRID_OK, grp_read_data_elems(p.r, t, n, dst.data(), &e)) << e.msg;
    if (bytes) {
        EXPECT_EQ(0, memcmp(src.data(), dst.data(), bytes)) << "type " << type;
    }
    EXPECT_EQ(0xee, dst[bytes]) << "wrote past the elements";
}

TEST(ProtoData, PutCarriesEveryNumberTypeExactly) {
    for (uint32_t t = GRD_CHAR; t <= GRD_DCOMPLEX; t++)
        for (uint64_t n : {0ull, 1ull, 5ull, 1000ull})
            put_round_trip(t, n);
}

TEST(ProtoData, TheElementsAreBigEndianAsACallsBulk) {
    Pair p;
    gr_err e;
    double x[2] = {1.0, -2.0};
    ASSERT_EQ(GRID_OK, grp_write_data(p.w, 4, GRD_DOUBLE, 2, x, &e)) << e.msg;
    std::vector<uint8_t> raw = p.raw();
    // header 24 + fragment mark 4 + type 4 + count 8, then 1.0 as big-endian IEEE.
    ASSERT_EQ(size_t(4 + 24 + 4 + 8 + 16), raw.size());
    const uint8_t one[8] = {0x3f, 0xf0, 0, 0, 0, 0, 0, 0};
    EXPECT_EQ(0, memcmp(one, raw.data() + 40, 8));
    EXPECT_EQ(uint64_t(24 + 8 + 8 + 4 + 8 + 16), grp_data_put_bytes(GRD_DOUBLE, 2));
}

TEST(ProtoData, DataIsReadIntoTheCallersBuffer) {
    Pair p;
    gr_err e;
    int32_t v[3] = {1, -2, 1 << 30}, got[3] = {0, 0, 0};
    ASSERT_EQ(GRID_OK, grp_write_data(p.w, 8, GRD_INT, 3, v, &e)) << e.msg;
    p.header(GRP_DATA, 8);
    uint32_t t;
    uint64_t n;
    ASSERT_EQ(GRID_OK, grp_read_data(p.r, &t, &n, sizeof got, &e)) << e.msg;
    ASSERT_EQ(uint32_t(GRD_INT), t);
    ASSERT_EQ(3u, n);
    ASSERT_EQ(GRID_OK, grp_read_data_elems(p.r, t, n, got, &e)) << e.msg;
    EXPECT_EQ(0, memcmp(v, got, sizeof v));
}

TEST(ProtoData, SmallMessagesRoundTrip) {
    Pair p;
    gr_err e;
    grp_data_id d;
    ASSERT_EQ(GRID_OK, grp_write_data_get(p.w, 1, kId, &e));
    p.header(GRP_DATA_GET, 1);
    ASSERT_EQ(GRID_OK, grp_read_data_get(p.r, &d, &e)) << e.msg;
    EXPECT_EQ(kId.handle, d.handle);
    ASSERT_EQ(GRID_OK, grp_write_data_free(p.w, 2, kId, &e));
    p.header(GRP_DATA_FREE, 2);
    ASSERT_EQ(GRID_OK, grp_read_data_free(p.r, &d, &e)) << e.msg;
    EXPECT_EQ(kId.session, d.session);
    grp_data_copy c = {kId, "node7.example.org", 9123}, c2;
    ASSERT_EQ(GRID_OK, grp_write_data_copy(p.w, 3, &c, &e));
    p.header(GRP_DATA_COPY, 3);
    ASSERT_EQ(GRID_OK, grp_read_data_copy(p.r, &c2, &e)) << e.msg;
    EXPECT_STREQ("node7.example.org", c2.host);
    EXPECT_EQ(9123u, c2.port);
    EXPECT_EQ(kId.handle, c2.d.handle);
    uint64_t s = 0;
    ASSERT_EQ(GRID_OK, grp_write_session_end(p.w, 4, kId.session, &e));
    p.header(GRP_SESSION_END, 4);
    ASSERT_EQ(GRID_OK, grp_read_session_end(p.r, &s, &e)) << e.msg;
    EXPECT_EQ(kId.session, s);
    ASSERT_EQ(GRID_OK, grp_write_empty(p.w, GRP_DATA_OK, 5, &e));
    p.header(GRP_DATA_OK, 5);
    EXPECT_EQ(GRID_OK, grp_read_empty(p.r, &e));
}

// A message of TYPE whose body is written by BODY; returns what DECODE says of it.
template <typename B, typename D> int decode_of(uint32_t type, B body, D decode, gr_err *e) {
    Pair p(1 << 20);
    grw_header h;
    grw_begin(p.w, type, 0, 1, e);
    body(p.w, e);
    grw_finish(p.w, e);
    if (grp_read_header(p.r, &h, e)) return -1;
    return decode(p.r, e);
}

int put_of(uint64_t session, uint64_t handle, uint32_t type, uint64_t count, uint64_t max_bytes, gr_err *e) {
    return decode_of(
        GRP_DATA_PUT,
        [&](grw_writer *w, gr_err *le) {
            grw_write_u64(w, session, le);
            grw_write_u64(w, handle, le);
            grw_write_u32(w, type, le);
            grw_write_u64(w, count, le);
            grw_write_u64(w, 0, le); // some element bytes
        },
        [&](grw_reader *r, gr_err *le) {
            grp_data_id d;
            uint32_t t;
            uint64_t n;
            return grp_read_data_put(r, &d, &t, &n, max_bytes, le);
        },
        e);
}

TEST(ProtoData, PutRefusesIdsTypesAndCountsBeforeAllocating) {
    gr_err e;
    EXPECT_EQ(GRID_OK, put_of(1, 1, GRD_DOUBLE, 1, 8, &e)) << e.msg;
    EXPECT_EQ(GRID_ERR_PROTOCOL, put_of(0, 1, GRD_DOUBLE, 1, 8, &e));
    EXPECT_NE(nullptr, strstr(e.msg, "session 0")) << e.msg;
    EXPECT_EQ(GRID_ERR_PROTOCOL, put_of(1, 0, GRD_DOUBLE, 1, 8, &e));
    EXPECT_NE(nullptr, strstr(e.msg, "handle 0")) << e.msg;
    for (uint32_t bad : {0u, uint32_t(GRD_STRING), uint32_t(GRD_FILENAME), uint32_t(GRD_CALLBACK), 99u}) {
        EXPECT_EQ(GRID_ERR_PROTOCOL, put_of(1, 1, bad, 1, 8, &e)) << bad;
        EXPECT_NE(nullptr, strstr(e.msg, "not a number type")) << e.msg;
    }
    // One element past the array limit, and counts whose byte size overflows.
    EXPECT_EQ(GRID_ERR_LIMIT, put_of(1, 1, GRD_DOUBLE, 2, 15, &e));
    EXPECT_NE(nullptr, strstr(e.msg, "exceeds the limit of 15 bytes")) << e.msg;
    EXPECT_EQ(GRID_ERR_LIMIT, put_of(1, 1, GRD_DCOMPLEX, UINT64_MAX / 8, UINT64_MAX, &e));
    // Within the array limit but more than the message can hold.
    EXPECT_EQ(GRID_ERR_LIMIT, put_of(1, 1, GRD_CHAR, 2 << 20, UINT64_MAX, &e));
    EXPECT_NE(nullptr, strstr(e.msg, "message limit")) << e.msg;
    // Fewer element bytes than the count says: the read fails, it does not hang.
    Pair p;
    double x[4] = {0};
    grp_write_data_put(p.w, 1, kId, GRD_DOUBLE, 1, x, &e);
    p.header(GRP_DATA_PUT, 1);
    grp_data_id d;
    uint32_t t;
    uint64_t n;
    ASSERT_EQ(GRID_OK, grp_read_data_put(p.r, &d, &t, &n, 64, &e));
    EXPECT_NE(GRID_OK, grp_read_data_elems(p.r, t, 2, x, &e));
}

TEST(ProtoData, SmallDecodersRefuseIdsZeroPortsAndTrailingBytes) {
    gr_err e;
    auto get = [](grw_reader *r, gr_err *le) {
        grp_data_id d;
        return grp_read_data_get(r, &d, le);
    };
    auto ids = [](uint64_t s, uint64_t h) {
        return [=](grw_writer *w, gr_err *le) {
            grw_write_u64(w, s, le);
            grw_write_u64(w, h, le);
        };
    };
    EXPECT_EQ(GRID_ERR_PROTOCOL, decode_of(GRP_DATA_GET, ids(0, 3), get, &e));
    EXPECT_EQ(GRID_ERR_PROTOCOL, decode_of(GRP_DATA_GET, ids(3, 0), get, &e));
    auto freer = [](grw_reader *r, gr_err *le) {
        grp_data_id d;
        return grp_read_data_free(r, &d, le);
    };
    EXPECT_EQ(GRID_ERR_PROTOCOL, decode_of(GRP_DATA_FREE, ids(0, 3), freer, &e));
    EXPECT_EQ(GRID_ERR_PROTOCOL, decode_of(
                                     GRP_DATA_FREE,
                                     [](grw_writer *w, gr_err *le) {
                                         grw_write_u64(w, 1, le);
                                         grw_write_u64(w, 1, le);
                                         grw_write_u32(w, 0, le);
                                     },
                                     freer, &e));
    auto end = [](grw_reader *r, gr_err *le) {
        uint64_t s;
        return grp_read_session_end(r, &s, le);
    };
    EXPECT_EQ(GRID_ERR_PROTOCOL,
              decode_of(
                  GRP_SESSION_END, [](grw_writer *w, gr_err *le) { grw_write_u64(w, 0, le); }, end, &e));
    auto copy = [](grw_reader *r, gr_err *le) {
        grp_data_copy m;
        return grp_read_data_copy(r, &m, le);
    };
    auto copy_body = [](const std::string &host, uint32_t port) {
        return [=](grw_writer *w, gr_err *le) {
            grw_write_u64(w, 1, le);
            grw_write_u64(w, 2, le);
            grw_write_string(w, host.c_str(), le);
            grw_write_u32(w, port, le);
        };
    };
    EXPECT_EQ(GRID_OK, decode_of(GRP_DATA_COPY, copy_body("h", 65535), copy, &e)) << e.msg;
    EXPECT_EQ(GRID_ERR_PROTOCOL, decode_of(GRP_DATA_COPY, copy_body("h", 0), copy, &e));
    EXPECT_EQ(GRID_ERR_PROTOCOL, decode_of(GRP_DATA_COPY, copy_body("h", 65536), copy, &e));
    EXPECT_NE(nullptr, strstr(e.msg, "port 65536")) << e.msg;
    EXPECT_EQ(GRID_ERR_PROTOCOL, decode_of(GRP_DATA_COPY, copy_body("", 80), copy, &e));
    EXPECT_EQ(GRID_OK, decode_of(GRP_DATA_COPY, copy_body(std::string(GRP_MAX_HOST, 'h'), 80), copy, &e));
    EXPECT_EQ(GRID_ERR_LIMIT,
              decode_of(GRP_DATA_COPY, copy_body(std::string(GRP_MAX_HOST + 1, 'h'), 80), copy, &e));
}

// ---------------------------------------------------------------- refs

TEST(ProtoData, RefsValidRefusesWhatTheWireCanGetWrong) {
    gr_err e;
    grp_ref ok[2] = {{1, GRP_REF_IN, 5}, {2, GRP_REF_KEEP | GRP_REF_RETURN, 6}};
    EXPECT_EQ(GRID_OK, grp_refs_valid(ok, 2, &e)) << e.msg;
    grp_ref unsorted[2] = {{2, GRP_REF_IN, 5}, {1, GRP_REF_KEEP, 6}};
    EXPECT_EQ(GRID_ERR_PROTOCOL, grp_refs_valid(unsorted, 2, &e));
    EXPECT_NE(nullptr, strstr(e.msg, "increasing")) << e.msg;
    grp_ref dup[2] = {{1, GRP_REF_IN, 5}, {1, GRP_REF_KEEP, 6}};
    EXPECT_EQ(GRID_ERR_PROTOCOL, grp_refs_valid(dup, 2, &e));
    grp_ref far[1] = {{GRD_MAX_PARAMS, GRP_REF_IN, 5}};
    EXPECT_EQ(GRID_ERR_PROTOCOL, grp_refs_valid(far, 1, &e));
    grp_ref zero[1] = {{1, GRP_REF_IN, 0}};
    EXPECT_EQ(GRID_ERR_PROTOCOL, grp_refs_valid(zero, 1, &e));
    for (uint32_t f :
         {0u, 8u, 9u, 0x80000001u, uint32_t(GRP_REF_RETURN), uint32_t(GRP_REF_IN | GRP_REF_RETURN)}) {
        grp_ref bad[1] = {{1, f, 5}};
        EXPECT_EQ(GRID_ERR_PROTOCOL, grp_refs_valid(bad, 1, &e)) << f;
    }
    grp_ref many[GRP_MAX_REFS + 1];
    for (uint32_t k = 0; k <= GRP_MAX_REFS; k++)
        many[k] = {k, GRP_REF_IN, k + 1};
    EXPECT_EQ(GRID_OK, grp_refs_valid(many, GRP_MAX_REFS, &e)) << e.msg;
    EXPECT_EQ(GRID_ERR_LIMIT, grp_refs_valid(many, GRP_MAX_REFS + 1, &e));
}

TEST(ProtoData, RefsCheckAgainstTheDescriptorNamesTheParameter) {
    gr_err e;
    const grd_desc *echo = desc("echo_double"), *inout = desc("inout_double"), *work = desc("work_sum");
    ASSERT_TRUE(echo && inout && work);
    grp_ref good[2] = {{1, GRP_REF_IN, 5}, {2, GRP_REF_KEEP, 6}};
    EXPECT_EQ(GRID_OK, grp_refs_check(echo, "test/echo_double", good, 2, &e)) << e.msg;
    grp_ref in_keep[1] = {{1, GRP_REF_IN | GRP_REF_KEEP, 5}};
    EXPECT_EQ(GRID_ERR_ARGS, grp_refs_check(echo, "test/echo_double", in_keep, 1, &e));
    EXPECT_NE(nullptr, strstr(e.msg, "parameter 2 (in) of test/echo_double")) << e.msg;
    grp_ref out_in[1] = {{2, GRP_REF_IN, 5}};
    EXPECT_EQ(GRID_ERR_ARGS, grp_refs_check(echo, "test/echo_double", out_in, 1, &e));
    EXPECT_NE(nullptr, strstr(e.msg, "parameter 3 (out)")) << e.msg;
    grp_ref scalar[1] = {{0, GRP_REF_IN, 5}};
    EXPECT_EQ(GRID_ERR_ARGS, grp_refs_check(echo, "test/echo_double", scalar, 1, &e));
    EXPECT_NE(nullptr, strstr(e.msg, "parameter 1 (n)")) << e.msg;
    grp_ref beyond[1] = {{3, GRP_REF_IN, 5}};
    EXPECT_EQ(GRID_ERR_ARGS, grp_refs_check(echo, "test/echo_double", beyond, 1, &e));
    for (uint32_t f : {uint32_t(GRP_REF_IN), uint32_t(GRP_REF_KEEP), uint32_t(GRP_REF_IN | GRP_REF_KEEP),
                       uint32_t(GRP_REF_IN | GRP_REF_KEEP | GRP_REF_RETURN)}) {
        grp_ref r[1] = {{1, f, 5}};
        EXPECT_EQ(GRID_OK, grp_refs_check(inout, "test/inout_double", r, 1, &e)) << f << ": " << e.msg;
    }
    grp_ref w[1] = {{2, GRP_REF_KEEP, 5}}; // WORK double tmp[n]
    EXPECT_EQ(GRID_ERR_ARGS, grp_refs_check(work, "test/work_sum", w, 1, &e));
    EXPECT_NE(nullptr, strstr(e.msg, "WORK")) << e.msg;
}

TEST(ProtoData, SkipMasksFollowTheFlags) {
    grp_ref refs[3] = {
        {1, GRP_REF_IN, 5}, {4, GRP_REF_KEEP, 6}, {63, GRP_REF_IN | GRP_REF_KEEP | GRP_REF_RETURN, 7}};
    uint64_t skip[3] = {9, 9, 9};
    grp_refs_skip(refs, 3, skip);
    EXPECT_EQ((1ull << 1) | (1ull << 63), skip[GRM_TO_SERVER]);
    EXPECT_EQ(1ull << 4, skip[GRM_TO_CLIENT]);
}

// ---------------------------------------------------------------- CALL_DATA

struct EchoCall {
    const grd_desc *d = desc("echo_double");
    int n = 3;
    double in[3] = {1.0, -2.5, 1e300}, out[3] = {7, 7, 7};
    grm_call *c = nullptr;
    grw_limits lim;
    EchoCall() {
        grp_limits_default(&lim);
        void *argv[3] = {&n, in, out};
        c = new_call(d);
        gr_err e;
        if (grm_from_argv(c, d, argv, &lim, &e)) ADD_FAILURE() << e.msg;
    }
    ~EchoCall() { free(c); }
};

TEST(ProtoData, CallDataLeavesTheReferencedArrayOut) {
    EchoCall k;
    ASSERT_NE(nullptr, k.d);
    grp_ref refs[2] = {{1, GRP_REF_IN, 5}, {2, GRP_REF_KEEP, 6}};
    uint64_t plain = grp_call_bytes("test/echo_double", k.c);
    uint64_t plain_result = grp_result_bytes(k.c);
    grp_refs_skip(refs, 2, k.c->skip);
    EXPECT_EQ(plain - 24, grp_call_bytes("test/echo_double", k.c)) << "the 3 doubles leave the CALL";
    EXPECT_EQ(plain_result - 24, grp_result_bytes(k.c)) << "the 3 doubles leave the RESULT";
    EXPECT_EQ(0u, grp_call_bulk_bytes(k.c));
    EXPECT_EQ(grp_call_bytes("test/echo_double", k.c) + 12 + 32,
              grp_call_data_bytes("test/echo_double", 2, k.c));

    Pair p;
    gr_err e;
    ASSERT_EQ(GRID_OK, grp_write_call_data(p.w, 11, "test/echo_double", k.d->hash, kId.session, refs, 2, k.c,
                                           &k.lim, &e))
        << e.msg;
    p.header(GRP_CALL_DATA, 11);
    grp_call_data_target t;
    ASSERT_EQ(GRID_OK, grp_read_call_data_target(p.r, &t, &e)) << e.msg;
    EXPECT_STREQ("test/echo_double", t.name);
    EXPECT_EQ(k.d->hash, t.hash);
    EXPECT_EQ(kId.session, t.session);
    ASSERT_EQ(2u, t.nrefs);
    EXPECT_EQ(1u, t.refs[0].param);
    EXPECT_EQ(5u, t.refs[0].handle);
    EXPECT_EQ(uint32_t(GRP_REF_IN), t.refs[0].flags);
    EXPECT_EQ(uint32_t(GRP_REF_KEEP), t.refs[1].flags);
    ASSERT_EQ(GRID_OK, grp_refs_check(k.d, t.name, t.refs, t.nrefs, &e)) << e.msg;

    // The server's side: the IN array is bound (here to a buffer of its own), not read.
    grm_call *s = new_call(k.d);
    grm_init(s, k.d, GRM_SERVER_SIDE);
    grp_refs_skip(t.refs, t.nrefs, s->skip);
    ASSERT_EQ(GRID_OK, grp_read_call_head(p.r, s, &k.lim, &e)) << e.msg;
    EXPECT_EQ(3, *static_cast<int *>(s->ptr[0]));
    double bound[3] = {4, 5, 6};
    s->ptr[1] = bound;
    ASSERT_EQ(GRID_OK, grp_read_call_bulk(p.r, s, &e)) << e.msg; // ends exactly: nothing of in[]
    EXPECT_EQ(static_cast<void *>(bound), s->ptr[1]);
    EXPECT_EQ(0, s->sl[1].own_buf);
    ASSERT_NE(nullptr, s->ptr[2]); // the OUT array is the server's
    EXPECT_EQ(1, s->sl[2].own_buf);
    for (int i = 0; i < 3; i++)
        static_cast<double *>(s->ptr[2])[i] = bound[i] * 2;

    // RESULT without the kept OUT array: the client's buffer is left alone.
    grp_result_times times = {1, 2};
    ASSERT_EQ(GRID_OK, grp_write_result(p.w, 11, &times, s, &k.lim, &e)) << e.msg;
    p.header(GRP_RESULT, 11);
    ASSERT_EQ(GRID_OK, grp_read_result(p.r, k.c, &times, &e)) << e.msg;
    EXPECT_EQ(7.0, k.out[0]);
    EXPECT_EQ(7.0, k.out[2]);
    // With RETURN the output travels back too.
    grp_ref ret[2] = {{1, GRP_REF_IN, 5}, {2, GRP_REF_KEEP | GRP_REF_RETURN, 6}};
    grp_refs_skip(ret, 2, s->skip);
    grp_refs_skip(ret, 2, k.c->skip);
    ASSERT_EQ(GRID_OK, grp_write_result(p.w, 12, &times, s, &k.lim, &e)) << e.msg;
    p.header(GRP_RESULT, 12);
    ASSERT_EQ(GRID_OK, grp_read_result(p.r, k.c, &times, &e)) << e.msg;
    EXPECT_EQ(8.0, k.out[0]);
    EXPECT_EQ(12.0, k.out[2]);
    grm_release(s);
    free(s);
}

TEST(ProtoData, CallDataWriterRefusesMasksThatAreNotItsRefs) {
    EchoCall k;
    Pair p;
    gr_err e;
    grp_ref refs[1] = {{1, GRP_REF_IN, 5}};
    EXPECT_EQ(GRID_ERR_INTERNAL,
              grp_write_call_data(p.w, 1, "test/echo_double", k.d->hash, 9, refs, 1, k.c, &k.lim, &e));
    grp_refs_skip(refs, 1, k.c->skip);
    EXPECT_EQ(GRID_ERR_INTERNAL,
              grp_write_call_data(p.w, 1, "test/echo_double", k.d->hash, 0, refs, 1, k.c, &k.lim, &e));
    grp_ref bad[1] = {{1, 0, 5}};
    EXPECT_EQ(GRID_ERR_INTERNAL,
              grp_write_call_data(p.w, 1, "test/echo_double", k.d->hash, 9, bad, 1, k.c, &k.lim, &e));
}

// A CALL_DATA target with N refs written by REF(k); returns what the decoder says.
template <typename R> int target_of(uint64_t session, uint32_t n, R ref, gr_err *e) {
    return decode_of(
        GRP_CALL_DATA,
        [&](grw_writer *w, gr_err *le) {
            grw_write_string(w, "test/echo_double", le);
            grw_write_u64(w, 1, le);
            grw_write_u64(w, session, le);
            grw_write_u32(w, n, le);
            for (uint32_t k = 0; k < n && k < 100; k++) {
                grp_ref f = ref(k);
                grw_write_u32(w, f.param, le);
                grw_write_u64(w, f.handle, le);
                grw_write_u32(w, f.flags, le);
            }
        },
        [](grw_reader *r, gr_err *le) {
            grp_call_data_target t;
            return grp_read_call_data_target(r, &t, le);
        },
        e);
}

TEST(ProtoData, CallDataTargetRefusesBadRefs) {
    gr_err e;
    auto seq = [](uint32_t k) { return grp_ref{k, GRP_REF_IN, k + 1}; };
    EXPECT_EQ(GRID_OK, target_of(9, 2, seq, &e)) << e.msg;
    EXPECT_EQ(GRID_OK, target_of(9, GRP_MAX_REFS, seq, &e)) << e.msg;
    EXPECT_EQ(GRID_ERR_LIMIT, target_of(9, GRP_MAX_REFS + 1, seq, &e));
    EXPECT_EQ(GRID_ERR_LIMIT, target_of(9, 0xffffffffu, seq, &e)); // refused before reading them
    EXPECT_EQ(GRID_ERR_PROTOCOL, target_of(0, 1, seq, &e));
    EXPECT_NE(nullptr, strstr(e.msg, "session 0")) << e.msg;
    EXPECT_EQ(GRID_ERR_PROTOCOL, target_of(
                                     9, 2,
                                     [](uint32_t k) {
                                         return grp_ref{2 - k, GRP_REF_IN, 1};
                                     },
                                     &e));
    EXPECT_NE(nullptr, strstr(e.msg, "increasing")) << e.msg;
    EXPECT_EQ(GRID_ERR_PROTOCOL, target_of(
                                     9, 1,
                                     [](uint32_t) {
                                         return grp_ref{1, 16, 1};
                                     },
                                     &e));
    EXPECT_NE(nullptr, strstr(e.msg, "flags 0x10")) << e.msg;
    EXPECT_EQ(GRID_ERR_PROTOCOL, target_of(
                                     9, 1,
                                     [](uint32_t) {
                                         return grp_ref{1, GRP_REF_RETURN | GRP_REF_IN, 1};
                                     },
                                     &e));
    EXPECT_NE(nullptr, strstr(e.msg, "RETURN without KEEP")) << e.msg;
    EXPECT_EQ(GRID_ERR_PROTOCOL, target_of(
                                     9, 1,
                                     [](uint32_t) {
                                         return grp_ref{1, GRP_REF_IN, 0};
                                     },
                                     &e));
    // Cut short inside the refs.
    int rc = decode_of(
        GRP_CALL_DATA,
        [](grw_writer *w, gr_err *le) {
            grw_write_string(w, "f", le);
            grw_write_u64(w, 1, le);
            grw_write_u64(w, 9, le);
            grw_write_u32(w, 2, le);
            grw_write_u32(w, 1, le);
        },
        [](grw_reader *r, gr_err *le) {
            grp_call_data_target t;
            return grp_read_call_data_target(r, &t, le);
        },
        &e);
    EXPECT_NE(GRID_OK, rc);
}

TEST(ProtoData, TypesAreKnownAndNamed) {
    const char *names[] = {"DATA_PUT",  "DATA_OK",   "DATA_GET",    "DATA",
                           "DATA_FREE", "DATA_COPY", "SESSION_END", "CALL_DATA"};
    for (uint32_t t = 40; t <= 47; t++) {
        EXPECT_EQ(1, grp_known_type(t)) << t;
        EXPECT_STREQ(names[t - 40], grp_type_name(t));
    }
    EXPECT_EQ(0, grp_known_type(48));
    EXPECT_EQ(0, grp_known_type(39));
    EXPECT_EQ(40u, static_cast<unsigned>(GRP_DATA_PUT));
    EXPECT_EQ(47u, static_cast<unsigned>(GRP_CALL_DATA));
}

TEST(ProtoDataGolden, EveryMessage) {
    gr_err e;
    const uint64_t kReq = 0x0102030405060708ull;
    {
        Pair p;
        double x[3] = {1.0, -2.5, 1e300};
        grp_write_data_put(p.w, kReq, kId, GRD_DOUBLE, 3, x, &e);
        golden("data_put", p.raw());
    }
    {
        Pair p;
        const char s[5] = {'h', 'e', 'l', 'l', 'o'};
        grp_write_data_put(p.w, kReq, kId, GRD_CHAR, 5, s, &e);
        golden("data_put_char", p.raw());
    }
    {
        Pair p;
        grp_write_empty(p.w, GRP_DATA_OK, kReq, &e);
        golden("data_ok", p.raw());
    }
    {
        Pair p;
        grp_write_data_get(p.w, kReq, kId, &e);
        golden("data_get", p.raw());
    }
    {
        Pair p;
        int32_t v[2] = {-1, 0x01020304};
        grp_write_data(p.w, kReq, GRD_INT, 2, v, &e);
        golden("data", p.raw());
    }
    {
        Pair p;
        grp_write_data_free(p.w, kReq, kId, &e);
        golden("data_free", p.raw());
    }
    {
        Pair p;
        grp_data_copy c = {kId, "127.0.0.1", 9002};
        grp_write_data_copy(p.w, kReq, &c, &e);
        golden("data_copy", p.raw());
    }
    {
        Pair p;
        grp_write_session_end(p.w, kReq, kId.session, &e);
        golden("session_end", p.raw());
    }
    {
        EchoCall k;
        grp_ref refs[2] = {{1, GRP_REF_IN, 5}, {2, GRP_REF_KEEP, 6}};
        grp_refs_skip(refs, 2, k.c->skip);
        Pair p;
        // A hash of its own: the golden file must not follow the test module's descriptor.
        grp_write_call_data(p.w, kReq, "test/echo_double", 0x1122334455667788ull, kId.session, refs, 2, k.c,
                            &k.lim, &e);
        golden("call_data", p.raw());
    }
}

} // namespace
