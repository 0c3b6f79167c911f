// xdr_oracle_test.cpp: pins our wire bytes to XDR (RFC 4506) with an independent
// oracle. For every numeric type of the IDL, the bytes our encoders produce (the head
// encoder for scalars, the bulk path for arrays, both through real descriptors from
// stubs/test.idl) are compared with libtirpc's per-element routines (xdr_char,
// xdr_short, xdr_int, xdr_u_int, xdr_hyper, xdr_longlong_t, xdr_float, xdr_double,
// xdr_opaque) over the same values, and our decoders must read back what libtirpc
// wrote. A round trip alone cannot see a conversion both sides get wrong the same way
// (floats never swapped, doubles swapped as two 4-byte words, complex parts exchanged);
// these tests can. Hand-written RFC 4506 examples check the oracle itself.
//
// docs/protocol.md: head scalars are XDR items (char, short, int: int; long, longlong:
// hyper; float, double; complex: two of its part, real first). Bulk arrays are each
// element big-endian at its natural size (char 1, short 2), then zero padding of the
// whole array to 4: chars are XDR fixed-length opaque, a short is the low half of
// xdr_short's int, every other type is the concatenation of libtirpc's items.
#include "grp_types.h"
#include "grd_desc.h"
#include "gridrpc_stub.h"
#include "grm_marshal.h"
#include "grw_wire.h"

#include <gtest/gtest.h>

#include <rpc/xdr.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

extern "C" const gridrpc_stub_module gridrpc_module_test;

namespace {

using Bytes = std::vector<uint8_t>;

// ---- descriptors of stubs/test.idl ----

const grd_desc *Desc(const std::string &name) {
    static std::map<std::string, grd_desc *> descs;
    if (descs.empty()) {
        for (unsigned i = 0; i < gridrpc_module_test.nfunctions; i++) {
            const gridrpc_stub_function *f = &gridrpc_module_test.functions[i];
            grd_desc *d = nullptr;
            grd_error ge{};
            if (grd_decode(f->descriptor, f->descriptor_len, &d, &ge) == GRD_OK) descs[d->name] = d;
        }
    }
    auto it = descs.find(name);
    return it == descs.end() ? nullptr : it->second;
}

struct CallFree {
    void operator()(grm_call *c) const {
        grm_release(c);
        std::free(c);
    }
};
using CallPtr = std::unique_ptr<grm_call, CallFree>;

CallPtr NewCall(const grd_desc *d, int side) {
    auto *c = static_cast<grm_call *>(std::calloc(1, grm_call_size(d->nparams)));
    grm_init(c, d, side);
    return CallPtr(c);
}

grw_limits Limits() {
    grw_limits l;
    grp_limits_default(&l);
    return l;
}

// ---- sockets and raw bytes ----

struct Pair {
    int w = -1, r = -1;
    Pair() {
        int fd[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fd) == 0) {
            w = fd[0];
            r = fd[1];
        }
    }
    ~Pair() {
        if (w >= 0) close(w);
        if (r >= 0) close(r);
    }
};

void Put32(Bytes &b, uint32_t v) {
    for (int s = 24; s >= 0; s -= 8)
        b.push_back(static_cast<uint8_t>(v >> s));
}
Bytes Cat(std::initializer_list<Bytes> parts) {
    Bytes out;
    for (const Bytes &p : parts)
        out.insert(out.end(), p.begin(), p.end());
    return out;
}
// A 24-byte message header.
Bytes Header(uint32_t type) {
    Bytes b;
    Put32(b, GRW_MAGIC);
    Put32(b, GRW_VERSION);
    Put32(b, type);
    Put32(b, 0);
    Put32(b, 0);
    Put32(b, 1);
    return b;
}
// The head section: XDR opaque<> of BYTES (a multiple of 4 here).
Bytes Head(const Bytes &bytes) {
    Bytes b;
    Put32(b, static_cast<uint32_t>(bytes.size()));
    return Cat({b, bytes});
}

// Runs FN with a writer (in a thread) and returns the message's body: the record's
// fragments joined, without the 24-byte header (checked).
Bytes CaptureBody(const std::function<void(grw_writer *)> &fn) {
    Pair p;
    std::thread t([&] {
        auto w = std::make_unique<grw_writer>();
        grw_writer_init(w.get(), p.w);
        gr_err e{};
        EXPECT_EQ(grw_begin(w.get(), GRP_CALL, 0, 1, &e), GRID_OK);
        fn(w.get());
        EXPECT_EQ(grw_finish(w.get(), &e), GRID_OK);
        shutdown(p.w, SHUT_WR);
    });
    Bytes raw;
    uint8_t buf[65536];
    for (;;) {
        ssize_t k = recv(p.r, buf, sizeof buf, 0);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        raw.insert(raw.end(), buf, buf + k);
    }
    t.join();
    Bytes body;
    size_t pos = 0;
    bool last = false;
    while (!last && pos + 4 <= raw.size()) {
        uint32_t v = static_cast<uint32_t>(raw[pos]) << 24 | static_cast<uint32_t>(raw[pos + 1]) << 16 |
                     static_cast<uint32_t>(raw[pos + 2]) << 8 | raw[pos + 3];
        pos += 4;
        last = (v & 0x80000000u) != 0;
        size_t len = v & 0x7fffffffu;
        if (pos + len > raw.size()) break;
        body.insert(body.end(), raw.begin() + static_cast<long>(pos),
                    raw.begin() + static_cast<long>(pos + len));
        pos += len;
    }
    EXPECT_TRUE(last && pos == raw.size()) << "not one whole record";
    Bytes hdr = Header(GRP_CALL);
    EXPECT_TRUE(body.size() >= 24 && std::equal(hdr.begin(), hdr.end(), body.begin()));
    body.erase(body.begin(), body.begin() + std::min<size_t>(24, body.size()));
    return body;
}

// Feeds BODY as one message (header added) to a reader and runs FN on it after the
// header; then the message must end exactly.
void FeedBody(const Bytes &body, const std::function<void(grw_reader *)> &fn) {
    Pair p;
    Bytes raw;
    Put32(raw, 0x80000000u | static_cast<uint32_t>(24 + body.size()));
    raw = Cat({raw, Header(GRP_RESULT), body});
    std::thread t([&] {
        size_t done = 0;
        while (done < raw.size()) {
            ssize_t k = send(p.w, raw.data() + done, raw.size() - done, MSG_NOSIGNAL);
            if (k < 0 && errno == EINTR) continue;
            if (k <= 0) break;
            done += static_cast<size_t>(k);
        }
        shutdown(p.w, SHUT_WR); // a reader waiting for more sees the end
    });
    auto r = std::make_unique<grw_reader>();
    grw_reader_init(r.get(), p.r, uint64_t{1} << 30);
    gr_err e{};
    grw_header h{};
    EXPECT_EQ(grw_read_header(r.get(), &h, &e), GRID_OK) << e.msg;
    fn(r.get());
    EXPECT_EQ(grw_end(r.get(), &e), GRID_OK) << e.msg;
    shutdown(p.r, SHUT_RDWR); // a sender still blocked (our reader stopped early) gets EPIPE
    t.join();
}

std::string Hex(const Bytes &b, size_t max = 96) {
    static const char d[] = "0123456789abcdef";
    std::string s;
    for (size_t i = 0; i < b.size() && i < max; i++) {
        if (i) s += (i % 4 == 0) ? " | " : " ";
        s += d[b[i] >> 4];
        s += d[b[i] & 15];
    }
    if (b.size() > max) s += " ...";
    return s;
}

// First differing byte, for messages.
std::string Diff(const Bytes &got, const Bytes &want) {
    if (got.size() != want.size())
        return "sizes " + std::to_string(got.size()) + " and " + std::to_string(want.size());
    for (size_t i = 0; i < got.size(); i++)
        if (got[i] != want[i]) {
            size_t from = i & ~size_t{7};
            return "first difference at byte " + std::to_string(i) + ": got " +
                   Hex(Bytes(got.begin() + static_cast<long>(from),
                             got.begin() + static_cast<long>(std::min(from + 16, got.size())))) +
                   ", want " +
                   Hex(Bytes(want.begin() + static_cast<long>(from),
                             want.begin() + static_cast<long>(std::min(from + 16, want.size()))));
        }
    return "equal";
}

// ---- the oracle: libtirpc over xdrmem ----

Bytes Xdr(size_t cap, const std::function<bool(XDR *)> &fn) {
    Bytes b(cap + 4);
    XDR x;
    xdrmem_create(&x, reinterpret_cast<char *>(b.data()), static_cast<u_int>(b.size()), XDR_ENCODE);
    bool ok = fn(&x);
    EXPECT_TRUE(ok) << "libtirpc failed to encode";
    b.resize(xdr_getpos(&x));
    xdr_destroy(&x);
    return b;
}

// The XDR of every element of V, one libtirpc call each.
template <class T> Bytes PerElement(std::vector<T> v, bool (*elem)(XDR *, T *)) {
    return Xdr(v.size() * 16, [&](XDR *x) {
        for (T &t : v)
            if (!elem(x, &t)) return false;
        return true;
    });
}

bool XInt(XDR *x, int *v) {
    return xdr_int(x, v);
}
bool XUInt(XDR *x, unsigned *v) {
    return xdr_u_int(x, v);
}
bool XLong(XDR *x, long *v) {
    quad_t q = *v;
    return xdr_hyper(x, &q);
}
bool XLongLong(XDR *x, long long *v) {
    quad_t q = *v;
    return xdr_longlong_t(x, &q);
}
bool XFloat(XDR *x, float *v) {
    return xdr_float(x, v);
}
bool XDouble(XDR *x, double *v) {
    return xdr_double(x, v);
}
bool XScomplex(XDR *x, scomplex *v) {
    return xdr_float(x, &v->r) && xdr_float(x, &v->i);
}
bool XDcomplex(XDR *x, dcomplex *v) {
    return xdr_double(x, &v->r) && xdr_double(x, &v->i);
}

// char arrays: XDR fixed-length opaque (bytes, then zero padding to 4).
Bytes CharBulk(std::vector<char> v) {
    return Xdr(v.size() + 4, [&](XDR *x) { return xdr_opaque(x, v.data(), static_cast<u_int>(v.size())); });
}
// short arrays: 2 bytes each, the low-order half of xdr_short's big-endian int; then
// zero padding of the array to 4.
Bytes ShortBulk(const std::vector<short> &v) {
    Bytes out;
    for (short s : v) {
        Bytes one = Xdr(4, [&](XDR *x) { return xdr_short(x, &s); });
        out.push_back(one[2]);
        out.push_back(one[3]);
    }
    while (out.size() % 4)
        out.push_back(0);
    return out;
}

// ---- values ----

float F(uint32_t bits) {
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}
double D(uint64_t bits) {
    double d;
    std::memcpy(&d, &bits, 8);
    return d;
}

const std::vector<float> kFloats = {0.0f,
                                    -0.0f,
                                    1.0f,
                                    -1.0f,
                                    2.0f,
                                    0.1f,
                                    -3.5f,
                                    FLT_MIN,
                                    -FLT_MIN,
                                    FLT_MAX,
                                    -FLT_MAX,
                                    FLT_TRUE_MIN,  // smallest denormal
                                    F(0x007fffff), // largest denormal
                                    -FLT_TRUE_MIN,
                                    std::numeric_limits<float>::infinity(),
                                    -std::numeric_limits<float>::infinity(),
                                    F(0x7fc00000), // the quiet NaN, no payload
                                    F(0xffc00000), // negative quiet NaN
                                    3.14159265f,
                                    F(0x01020304),
                                    16777217.0f};
const std::vector<double> kDoubles = {0.0,
                                      -0.0,
                                      1.0,
                                      -1.0,
                                      2.0,
                                      0.1,
                                      -3.5,
                                      DBL_MIN,
                                      -DBL_MIN,
                                      DBL_MAX,
                                      -DBL_MAX,
                                      DBL_TRUE_MIN,
                                      D(0x000fffffffffffffull),
                                      -DBL_TRUE_MIN,
                                      std::numeric_limits<double>::infinity(),
                                      -std::numeric_limits<double>::infinity(),
                                      D(0x7ff8000000000000ull),
                                      D(0xfff8000000000000ull),
                                      3.141592653589793,
                                      D(0x0102030405060708ull),
                                      9007199254740993.0};

// N values cycling through the special ones, then pseudo-random ones of every bit
// pattern GEN makes (deterministic).
template <class T>
std::vector<T> Cycle(const std::vector<T> &special, size_t n, const std::function<T(uint64_t)> &gen) {
    std::vector<T> v(n);
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v[i] = i < special.size() ? special[i] : (i % 3 == 0 ? special[i % special.size()] : gen(x));
    }
    return v;
}

float RandFloat(uint64_t x) {
    float f = F(static_cast<uint32_t>(x));
    return std::isnan(f) ? 1.5f : f;
}
double RandDouble(uint64_t x) {
    double d = D(x);
    return std::isnan(d) ? 1.5 : d;
}

template <class T> bool SameBits(const std::vector<T> &a, const std::vector<T> &b) {
    return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

// ---- arrays through echo_<type>(IN int n, IN T in[n], OUT T out[n]) ----

// Checks VALS for function FN against the oracle's bytes WANT in four ways: the client
// encodes the CALL (head: n; bulk: in[]), the server decodes libtirpc's CALL bytes,
// the server encodes the RESULT (out[]), the client decodes libtirpc's RESULT bytes.
template <class T> void CheckArray(const std::string &fn, const std::vector<T> &vals, const Bytes &want) {
    SCOPED_TRACE(fn + " n = " + std::to_string(vals.size()));
    const grd_desc *d = Desc(fn);
    ASSERT_NE(d, nullptr);
    grw_limits lim = Limits();
    int n = static_cast<int>(vals.size());
    Bytes head_n = Head(Xdr(4, [&](XDR *x) { return xdr_int(x, &n); }));
    std::vector<T> in = vals, out(vals.size());

    // 1. Client CALL: our bytes are the oracle's.
    {
        auto c = NewCall(d, GRM_CLIENT_SIDE);
        void *argv[3] = {&n, in.data(), out.data()};
        gr_err e{};
        ASSERT_EQ(grm_from_argv(c.get(), d, argv, &lim, &e), GRID_OK) << e.msg;
        Bytes body = CaptureBody([&](grw_writer *w) {
            gr_err we{};
            EXPECT_EQ(grm_write_head(w, c.get(), GRM_TO_SERVER, &lim, &we), GRID_OK) << we.msg;
            EXPECT_EQ(grm_write_bulk(w, c.get(), GRM_TO_SERVER, &we), GRID_OK) << we.msg;
        });
        Bytes expect = Cat({head_n, want});
        EXPECT_TRUE(body == expect) << "CALL " << Diff(body, expect);
    }
    // 2. Server reads libtirpc's CALL; 3. and answers with the same values.
    {
        auto c = NewCall(d, GRM_SERVER_SIDE);
        FeedBody(Cat({head_n, want}), [&](grw_reader *r) {
            gr_err e{};
            ASSERT_EQ(grm_read_head(r, c.get(), GRM_TO_SERVER, &lim, &e), GRID_OK) << e.msg;
            ASSERT_EQ(grm_read_bulk(r, c.get(), GRM_TO_SERVER, &e), GRID_OK) << e.msg;
        });
        ASSERT_EQ(c->sl[0].val.i, n);
        std::vector<T> got(vals.size());
        if (n) std::memcpy(got.data(), c->ptr[1], vals.size() * sizeof(T));
        EXPECT_TRUE(SameBits(got, vals)) << "the server read other values";
        if (n) std::memcpy(c->ptr[2], vals.data(), vals.size() * sizeof(T));
        Bytes body = CaptureBody([&](grw_writer *w) {
            gr_err we{};
            EXPECT_EQ(grm_write_head(w, c.get(), GRM_TO_CLIENT, &lim, &we), GRID_OK) << we.msg;
            EXPECT_EQ(grm_write_bulk(w, c.get(), GRM_TO_CLIENT, &we), GRID_OK) << we.msg;
        });
        Bytes expect = Cat({Head({}), want});
        EXPECT_TRUE(body == expect) << "RESULT " << Diff(body, expect);
    }
    // 4. Client reads libtirpc's RESULT into its out[].
    {
        auto c = NewCall(d, GRM_CLIENT_SIDE);
        std::vector<T> got(vals.size());
        void *argv[3] = {&n, in.data(), got.data()};
        gr_err e{};
        ASSERT_EQ(grm_from_argv(c.get(), d, argv, &lim, &e), GRID_OK) << e.msg;
        FeedBody(Cat({Head({}), want}), [&](grw_reader *r) {
            gr_err re{};
            ASSERT_EQ(grm_read_head(r, c.get(), GRM_TO_CLIENT, &lim, &re), GRID_OK) << re.msg;
            ASSERT_EQ(grm_read_bulk(r, c.get(), GRM_TO_CLIENT, &re), GRID_OK) << re.msg;
        });
        EXPECT_TRUE(SameBits(got, vals)) << "the client read other values";
    }
}

// Small counts (every padding), the specials, and counts past the writer's 32 KiB
// in-buffer limit and its 1 MiB staging chunk.
std::vector<size_t> Counts(size_t esize, size_t nspecial) {
    return {1,
            2,
            3,
            5,
            nspecial,
            40000 / esize + 1,
            (size_t{1} << 20) / esize + 3,
            3 * (size_t{1} << 20) / esize + 1};
}

TEST(OracleBulk, Char) {
    std::vector<char> special;
    for (int c = -128; c < 128; c++)
        special.push_back(static_cast<char>(c));
    for (size_t n : Counts(1, special.size())) {
        auto v = Cycle<char>(special, n, [](uint64_t x) { return static_cast<char>(x >> 11); });
        CheckArray("echo_char", v, CharBulk(v));
    }
}

TEST(OracleBulk, Short) {
    std::vector<short> special = {0,     1, -1, -2, SHRT_MIN, SHRT_MAX, 0x0102, static_cast<short>(0x8001),
                                  0x00ff};
    for (size_t n : Counts(2, special.size())) {
        auto v = Cycle<short>(special, n, [](uint64_t x) { return static_cast<short>(x >> 9); });
        CheckArray("echo_short", v, ShortBulk(v));
    }
}

TEST(OracleBulk, Int) {
    std::vector<int> special = {0, 1, -1, -2, INT_MIN, INT_MAX, 0x01020304, static_cast<int>(0x80000001u)};
    for (size_t n : Counts(4, special.size())) {
        auto v = Cycle<int>(special, n, [](uint64_t x) { return static_cast<int>(x >> 7); });
        CheckArray("echo_int", v, PerElement(v, XInt));
    }
}

TEST(OracleBulk, UnsignedInt) {
    std::vector<unsigned> special = {0, 1, 0xffffffffu, 0x80000000u, 0x7fffffffu, 0x01020304u};
    for (size_t n : Counts(4, special.size())) {
        auto v = Cycle<unsigned>(special, n, [](uint64_t x) { return static_cast<unsigned>(x >> 5); });
        CheckArray("echo_unsigned", v, PerElement(v, XUInt));
    }
}

TEST(OracleBulk, LongIsHyper) {
    std::vector<long> special = {0,       1, -1, -2, LONG_MIN, LONG_MAX, 0x0102030405060708L, INT_MIN - 1L,
                                 1L << 32};
    for (size_t n : Counts(8, special.size())) {
        auto v = Cycle<long>(special, n, [](uint64_t x) { return static_cast<long>(x); });
        CheckArray("echo_long", v, PerElement(v, XLong));
    }
}

TEST(OracleBulk, LongLongIsHyper) {
    std::vector<long long> special = {
        0, 1, -1, -2, LLONG_MIN, LLONG_MAX, 0x0102030405060708LL, -0x0102030405060708LL};
    for (size_t n : Counts(8, special.size())) {
        auto v = Cycle<long long>(special, n, [](uint64_t x) { return static_cast<long long>(x); });
        CheckArray("echo_longlong", v, PerElement(v, XLongLong));
    }
}

TEST(OracleBulk, Float) {
    for (size_t n : Counts(4, kFloats.size())) {
        auto v = Cycle<float>(kFloats, n, RandFloat);
        CheckArray("echo_float", v, PerElement(v, XFloat));
    }
}

TEST(OracleBulk, Double) {
    for (size_t n : Counts(8, kDoubles.size())) {
        auto v = Cycle<double>(kDoubles, n, RandDouble);
        CheckArray("echo_double", v, PerElement(v, XDouble));
    }
}

TEST(OracleBulk, ScomplexRealFirst) {
    std::vector<scomplex> special;
    for (size_t i = 0; i < kFloats.size(); i++)
        special.push_back(scomplex{kFloats[i], kFloats[(i * 7 + 3) % kFloats.size()]});
    for (size_t n : Counts(8, special.size())) {
        auto v = Cycle<scomplex>(special, n, [](uint64_t x) {
            return scomplex{RandFloat(x), RandFloat(x >> 32)};
        });
        CheckArray("echo_scomplex", v, PerElement(v, XScomplex));
    }
}

TEST(OracleBulk, DcomplexRealFirst) {
    std::vector<dcomplex> special;
    for (size_t i = 0; i < kDoubles.size(); i++)
        special.push_back(dcomplex{kDoubles[i], kDoubles[(i * 7 + 3) % kDoubles.size()]});
    for (size_t n : Counts(16, special.size())) {
        auto v = Cycle<dcomplex>(special, n, [](uint64_t x) {
            return dcomplex{RandDouble(x), RandDouble(~x)};
        });
        CheckArray("echo_dcomplex", v, PerElement(v, XDcomplex));
    }
}

// Bulk words straight through grw_write_words / grw_read_words, without descriptors.
TEST(OracleBulk, WriteWordsAndReadWords) {
    auto floats = Cycle<float>(kFloats, 300000, RandFloat);
    auto doubles = Cycle<double>(kDoubles, 150001, RandDouble);
    Bytes wf = PerElement(floats, XFloat), wd = PerElement(doubles, XDouble);
    Bytes body = CaptureBody([&](grw_writer *w) {
        gr_err e{};
        EXPECT_EQ(grw_write_words(w, floats.data(), floats.size(), 4, &e), GRID_OK);
        EXPECT_EQ(grw_write_words(w, doubles.data(), doubles.size(), 8, &e), GRID_OK);
    });
    Bytes expect = Cat({wf, wd});
    EXPECT_TRUE(body == expect) << Diff(body, expect);
    std::vector<float> gf(floats.size());
    std::vector<double> gd(doubles.size());
    FeedBody(expect, [&](grw_reader *r) {
        gr_err e{};
        EXPECT_EQ(grw_read_words(r, gf.data(), gf.size(), 4, &e), GRID_OK) << e.msg;
        EXPECT_EQ(grw_read_words(r, gd.data(), gd.size(), 8, &e), GRID_OK) << e.msg;
    });
    EXPECT_TRUE(SameBits(gf, floats));
    EXPECT_TRUE(SameBits(gd, doubles));
}

// ---- scalars through echo_scalars (IN c s i l ll f d sc dc u, OUT the same) ----

struct Scalars {
    char c;
    short s;
    int i;
    long l;
    long long ll;
    float f;
    double d;
    scomplex sc;
    dcomplex dc;
    unsigned u;
};

const Scalars kRows[] = {
    {0, 0, 0, 0, 0, 0.0f, 0.0, {0.0f, -0.0f}, {-0.0, 0.0}, 0},
    {-1, -1, -1, -1, -1, -1.0f, -1.0, {1.0f, 2.0f}, {1.0, -2.0}, 0xffffffffu},
    {CHAR_MIN,
     SHRT_MIN,
     INT_MIN,
     LONG_MIN,
     LLONG_MIN,
     -FLT_MAX,
     -DBL_MAX,
     {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()},
     {D(0x7ff8000000000000ull), -std::numeric_limits<double>::infinity()},
     0x80000000u},
    {CHAR_MAX,
     SHRT_MAX,
     INT_MAX,
     LONG_MAX,
     LLONG_MAX,
     FLT_TRUE_MIN,
     DBL_TRUE_MIN,
     {FLT_MIN, F(0x7fc00000)},
     {DBL_MIN, D(0x000fffffffffffffull)},
     1},
    {'A',
     0x0102,
     0x01020304,
     0x0102030405060708L,
     -0x0102030405060708LL,
     3.14159265f,
     2.718281828459045,
     {F(0x01020304), F(0x80000001)},
     {D(0x0102030405060708ull), D(0x8000000000000001ull)},
     0x01020304u},
};

// The oracle's head: every IN (or OUT) scalar in parameter order, one libtirpc call each.
Bytes OracleScalars(Scalars v) {
    return Xdr(128, [&](XDR *x) {
        quad_t l = v.l;
        quad_t ll = v.ll;
        return xdr_char(x, &v.c) && xdr_short(x, &v.s) && xdr_int(x, &v.i) && xdr_hyper(x, &l) &&
               xdr_longlong_t(x, &ll) && xdr_float(x, &v.f) && xdr_double(x, &v.d) && xdr_float(x, &v.sc.r) &&
               xdr_float(x, &v.sc.i) && xdr_double(x, &v.dc.r) && xdr_double(x, &v.dc.i) &&
               xdr_u_int(x, &v.u);
    });
}

// Our head bytes for ROW sent by a client (IN scalars).
Bytes OurClientHead(const Scalars &row) {
    const grd_desc *d = Desc("echo_scalars");
    EXPECT_NE(d, nullptr);
    if (!d) return {};
    grw_limits lim = Limits();
    Scalars in = row, out{};
    void *argv[20] = {&in.c,  &in.s,  &in.i,  &in.l,  &in.ll,  &in.f,  &in.d,  &in.sc,  &in.dc,  &in.u,
                      &out.c, &out.s, &out.i, &out.l, &out.ll, &out.f, &out.d, &out.sc, &out.dc, &out.u};
    auto c = NewCall(d, GRM_CLIENT_SIDE);
    gr_err e{};
    EXPECT_EQ(grm_from_argv(c.get(), d, argv, &lim, &e), GRID_OK) << e.msg;
    return CaptureBody([&](grw_writer *w) {
        gr_err we{};
        EXPECT_EQ(grm_write_head(w, c.get(), GRM_TO_SERVER, &lim, &we), GRID_OK) << we.msg;
        EXPECT_EQ(grm_write_bulk(w, c.get(), GRM_TO_SERVER, &we), GRID_OK) << we.msg;
    });
}

bool SameScalars(const Scalars &a, const Scalars &b) {
    return a.c == b.c && a.s == b.s && a.i == b.i && a.l == b.l && a.ll == b.ll &&
           std::memcmp(&a.f, &b.f, 4) == 0 && std::memcmp(&a.d, &b.d, 8) == 0 &&
           std::memcmp(&a.sc, &b.sc, 8) == 0 && std::memcmp(&a.dc, &b.dc, 16) == 0 && a.u == b.u;
}

TEST(OracleHead, ScalarsBothDirections) {
    const grd_desc *d = Desc("echo_scalars");
    ASSERT_NE(d, nullptr);
    ASSERT_EQ(d->nparams, 20u);
    grw_limits lim = Limits();
    int row_no = 0;
    for (const Scalars &row : kRows) {
        SCOPED_TRACE("row " + std::to_string(row_no++));
        Bytes want = Head(OracleScalars(row));
        ASSERT_EQ(want.size(), 4u + 68u);
        // The client's CALL head.
        Bytes body = OurClientHead(row);
        EXPECT_TRUE(body == want) << "CALL " << Diff(body, want);
        // The server reads libtirpc's CALL head, and answers those values as its OUTs.
        auto c = NewCall(d, GRM_SERVER_SIDE);
        FeedBody(want, [&](grw_reader *r) {
            gr_err e{};
            EXPECT_EQ(grm_read_head(r, c.get(), GRM_TO_SERVER, &lim, &e), GRID_OK) << e.msg;
            EXPECT_EQ(grm_read_bulk(r, c.get(), GRM_TO_SERVER, &e), GRID_OK) << e.msg;
        });
        const grm_slot *sl = c->sl;
        Scalars got{sl[0].val.c, sl[1].val.s, sl[2].val.i,  sl[3].val.l,  sl[4].val.ll,
                    sl[5].val.f, sl[6].val.d, sl[7].val.sc, sl[8].val.dc, static_cast<unsigned>(sl[9].val.i)};
        EXPECT_TRUE(SameScalars(got, row)) << "the server read other values";
        // What the stub body does: copy every IN to its OUT.
        *static_cast<char *>(c->ptr[10]) = got.c;
        *static_cast<short *>(c->ptr[11]) = got.s;
        *static_cast<int *>(c->ptr[12]) = got.i;
        *static_cast<long *>(c->ptr[13]) = got.l;
        *static_cast<long long *>(c->ptr[14]) = got.ll;
        *static_cast<float *>(c->ptr[15]) = got.f;
        *static_cast<double *>(c->ptr[16]) = got.d;
        *static_cast<scomplex *>(c->ptr[17]) = got.sc;
        *static_cast<dcomplex *>(c->ptr[18]) = got.dc;
        *static_cast<unsigned *>(c->ptr[19]) = got.u;
        body = CaptureBody([&](grw_writer *w) {
            gr_err we{};
            EXPECT_EQ(grm_write_head(w, c.get(), GRM_TO_CLIENT, &lim, &we), GRID_OK) << we.msg;
        });
        EXPECT_TRUE(body == want) << "RESULT " << Diff(body, want);
        // The client reads libtirpc's RESULT head into its variables.
        Scalars in = row, out{};
        void *argv[20] = {&in.c,  &in.s,  &in.i,  &in.l,  &in.ll,  &in.f,  &in.d,  &in.sc,  &in.dc,  &in.u,
                          &out.c, &out.s, &out.i, &out.l, &out.ll, &out.f, &out.d, &out.sc, &out.dc, &out.u};
        auto cc = NewCall(d, GRM_CLIENT_SIDE);
        gr_err e{};
        ASSERT_EQ(grm_from_argv(cc.get(), d, argv, &lim, &e), GRID_OK) << e.msg;
        FeedBody(want, [&](grw_reader *r) {
            gr_err re{};
            EXPECT_EQ(grm_read_head(r, cc.get(), GRM_TO_CLIENT, &lim, &re), GRID_OK) << re.msg;
        });
        EXPECT_TRUE(SameScalars(out, row)) << "the client read other values";
    }
}

// ---- unsigned char and short (echo_unsigned_small): XDR's unsigned int, zero-extended ----

TEST(OracleHead, UnsignedCharAndShortAreUnsignedInts) {
    const grd_desc *d = Desc("echo_unsigned_small");
    ASSERT_NE(d, nullptr);
    ASSERT_EQ(d->nparams, 4u);
    grw_limits lim = Limits();
    const unsigned char chars[] = {0, 1, 127, 128, 200, 255};
    const unsigned short shorts[] = {0, 1, 32767, 32768, 60000, 65535};
    for (size_t k = 0; k < sizeof chars; k++) {
        unsigned char c = chars[k], oc = 0;
        unsigned short sh = shorts[k], os = 0;
        SCOPED_TRACE("values " + std::to_string(c) + ", " + std::to_string(sh));
        // The oracle: libtirpc's unsigned routines, as an independent peer would read them.
        Bytes want = Head(Xdr(16, [&](XDR *x) {
            u_char cc = c;
            u_short ss = sh;
            return xdr_u_char(x, &cc) && xdr_u_short(x, &ss);
        }));
        void *argv[4] = {&c, &sh, &oc, &os};
        auto cl = NewCall(d, GRM_CLIENT_SIDE);
        gr_err e{};
        ASSERT_EQ(grm_from_argv(cl.get(), d, argv, &lim, &e), GRID_OK) << e.msg;
        Bytes body = CaptureBody([&](grw_writer *w) {
            gr_err we{};
            EXPECT_EQ(grm_write_head(w, cl.get(), GRM_TO_SERVER, &lim, &we), GRID_OK) << we.msg;
        });
        EXPECT_TRUE(body == want) << "CALL " << Diff(body, want);
        // The server reads the oracle's bytes back as the same values.
        auto sv = NewCall(d, GRM_SERVER_SIDE);
        FeedBody(want, [&](grw_reader *r) {
            gr_err re{};
            EXPECT_EQ(grm_read_head(r, sv.get(), GRM_TO_SERVER, &lim, &re), GRID_OK) << re.msg;
        });
        EXPECT_EQ(*static_cast<unsigned char *>(sv->ptr[0]), c);
        EXPECT_EQ(*static_cast<unsigned short *>(sv->ptr[1]), sh);
        // Its RESULT is the oracle's too, and the client reads it into its variables.
        *static_cast<unsigned char *>(sv->ptr[2]) = c;
        *static_cast<unsigned short *>(sv->ptr[3]) = sh;
        body = CaptureBody([&](grw_writer *w) {
            gr_err we{};
            EXPECT_EQ(grm_write_head(w, sv.get(), GRM_TO_CLIENT, &lim, &we), GRID_OK) << we.msg;
        });
        EXPECT_TRUE(body == want) << "RESULT " << Diff(body, want);
        FeedBody(want, [&](grw_reader *r) {
            gr_err re{};
            EXPECT_EQ(grm_read_head(r, cl.get(), GRM_TO_CLIENT, &lim, &re), GRID_OK) << re.msg;
        });
        EXPECT_EQ(oc, c);
        EXPECT_EQ(os, sh);
    }
}

// ---- RFC 4506 by hand: the oracle and our code against literal bytes ----

TEST(Rfc4506, LiteralScalars) {
    Scalars row{'A', -2, -1, 0x0102030405060708L, -2, 1.0f, 1.0, {1.0f, -2.0f}, {1.0, 2.0}, 3};
    const Bytes want = {
        0x00, 0x00, 0x00, 0x44,                         // head: 68 bytes
        0x00, 0x00, 0x00, 0x41,                         // char 'A' as int
        0xff, 0xff, 0xff, 0xfe,                         // short -2 as int
        0xff, 0xff, 0xff, 0xff,                         // int -1
        0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, // long as hyper
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe, // longlong -2 as hyper
        0x3f, 0x80, 0x00, 0x00,                         // float 1.0
        0x3f, 0xf0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // double 1.0
        0x3f, 0x80, 0x00, 0x00, 0xc0, 0x00, 0x00, 0x00, // scomplex 1 - 2i: real part first
        0x3f, 0xf0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // dcomplex 1 + 2i: real part first
        0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
        0x00, 0x00, 0x00, 0x03,                         // unsigned int 3
    };
    EXPECT_EQ(Hex(Head(OracleScalars(row))), Hex(want)) << "the oracle is wrong";
    EXPECT_EQ(Hex(OurClientHead(row)), Hex(want));
}

TEST(Rfc4506, LiteralArrays) {
    std::vector<float> f = {1.0f, -0.0f, -2.0f};
    const Bytes wf = {0x3f, 0x80, 0x00, 0x00, 0x80, 0x00, 0x00, 0x00, 0xc0, 0x00, 0x00, 0x00};
    EXPECT_EQ(Hex(PerElement(f, XFloat)), Hex(wf));
    CheckArray("echo_float", f, wf);

    std::vector<double> d = {1.0, -2.0};
    const Bytes wd = {0x3f, 0xf0, 0, 0, 0, 0, 0, 0, 0xc0, 0x00, 0, 0, 0, 0, 0, 0};
    EXPECT_EQ(Hex(PerElement(d, XDouble)), Hex(wd));
    CheckArray("echo_double", d, wd);

    std::vector<char> c = {'a', 'b', 'c', 'd', 'e'};
    const Bytes wc = {0x61, 0x62, 0x63, 0x64, 0x65, 0x00, 0x00, 0x00};
    EXPECT_EQ(Hex(CharBulk(c)), Hex(wc));
    CheckArray("echo_char", c, wc);

    std::vector<short> s = {1, -2, 0x0102};
    const Bytes ws = {0x00, 0x01, 0xff, 0xfe, 0x01, 0x02, 0x00, 0x00};
    EXPECT_EQ(Hex(ShortBulk(s)), Hex(ws));
    CheckArray("echo_short", s, ws);

    std::vector<int> i = {-1, 0x01020304};
    CheckArray("echo_int", i, Bytes{0xff, 0xff, 0xff, 0xff, 0x01, 0x02, 0x03, 0x04});

    std::vector<long> l = {-2};
    CheckArray("echo_long", l, Bytes{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe});

    std::vector<scomplex> sc = {{1.0f, 2.0f}};
    const Bytes wsc = {0x3f, 0x80, 0x00, 0x00, 0x40, 0x00, 0x00, 0x00};
    EXPECT_EQ(Hex(PerElement(sc, XScomplex)), Hex(wsc));
    CheckArray("echo_scomplex", sc, wsc);

    std::vector<dcomplex> dc = {{1.0, -1.0}};
    const Bytes wdc = {0x3f, 0xf0, 0, 0, 0, 0, 0, 0, 0xbf, 0xf0, 0, 0, 0, 0, 0, 0};
    EXPECT_EQ(Hex(PerElement(dc, XDcomplex)), Hex(wdc));
    CheckArray("echo_dcomplex", dc, wdc);
}

TEST(Rfc4506, LiteralStrings) {
    // grw_write_string, and a string argument in the head (bool present; string).
    Bytes body = CaptureBody([](grw_writer *w) {
        gr_err e{};
        EXPECT_EQ(grw_write_string(w, "abc", &e), GRID_OK);
    });
    const Bytes abc = {0x00, 0x00, 0x00, 0x03, 0x61, 0x62, 0x63, 0x00};
    EXPECT_EQ(Hex(body), Hex(abc));
    char *s = const_cast<char *>("abc");
    EXPECT_EQ(Hex(Xdr(16, [&](XDR *x) { return xdr_string(x, &s, 100); })), Hex(abc))
        << "the oracle is wrong";

    const grd_desc *d = Desc("echo_string");
    ASSERT_NE(d, nullptr);
    grw_limits lim = Limits();
    for (const char *str : {"", "a", "ab", "abc", "abcd", "abcde"}) {
        SCOPED_TRACE(str);
        char *in = const_cast<char *>(str), *out = nullptr;
        void *argv[2] = {&in, &out};
        auto c = NewCall(d, GRM_CLIENT_SIDE);
        gr_err e{};
        ASSERT_EQ(grm_from_argv(c.get(), d, argv, &lim, &e), GRID_OK) << e.msg;
        body = CaptureBody([&](grw_writer *w) {
            gr_err we{};
            EXPECT_EQ(grm_write_head(w, c.get(), GRM_TO_SERVER, &lim, &we), GRID_OK) << we.msg;
        });
        bool_t present = TRUE;
        Bytes want = Head(Xdr(16 + std::strlen(str),
                              [&](XDR *x) { return xdr_bool(x, &present) && xdr_string(x, &in, 100); }));
        EXPECT_EQ(Hex(body), Hex(want));
        // And back: the server decodes libtirpc's bytes.
        auto sc = NewCall(d, GRM_SERVER_SIDE);
        FeedBody(want, [&](grw_reader *r) {
            gr_err re{};
            EXPECT_EQ(grm_read_head(r, sc.get(), GRM_TO_SERVER, &lim, &re), GRID_OK) << re.msg;
        });
        ASSERT_NE(sc->sl[0].val.str, nullptr);
        EXPECT_STREQ(sc->sl[0].val.str, str);
    }
}

} // namespace
