// desc_test.cpp: unit tests of the interface descriptor library (runtime/desc): the
// encoding round trip, the dump text, program evaluation and array extents, and the
// decoder's defences against hostile bytes, which a client or server meets from the
// network.
#include "grd_desc.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

namespace {

using Bytes = std::vector<uint8_t>;
using DescPtr = std::unique_ptr<grd_desc, decltype(&grd_free)>;

// ---- building descriptors by hand (malloc'd, so grd_free can free them) ----

char *Dup(const std::string &s) {
    char *p = static_cast<char *>(std::malloc(s.size() + 1));
    std::memcpy(p, s.c_str(), s.size() + 1);
    return p;
}

grd_insn I(grd_op op, int64_t operand = 0) {
    return grd_insn{static_cast<uint32_t>(op), operand};
}
grd_insn K(int64_t k) {
    return I(GRD_OP_CONST, k);
}
grd_insn Pm(int64_t i) {
    return I(GRD_OP_PARAM, i);
}

grd_expr Prog(std::initializer_list<grd_insn> code) {
    grd_expr e{static_cast<uint32_t>(code.size()), nullptr};
    if (e.len) {
        e.code = static_cast<grd_insn *>(std::malloc(e.len * sizeof(grd_insn)));
        std::copy(code.begin(), code.end(), e.code);
    }
    return e;
}

grd_expr ProgV(const std::vector<grd_insn> &code) {
    grd_expr e{static_cast<uint32_t>(code.size()), nullptr};
    if (e.len) {
        e.code = static_cast<grd_insn *>(std::malloc(e.len * sizeof(grd_insn)));
        std::copy(code.begin(), code.end(), e.code);
    }
    return e;
}

DescPtr NewDesc(uint32_t nparams, const std::string &module = "linalg", const std::string &name = "f") {
    auto *d = static_cast<grd_desc *>(std::calloc(1, sizeof(grd_desc)));
    d->version = GRD_FORMAT_VERSION;
    d->module = Dup(module);
    d->name = Dup(name);
    d->description = Dup("");
    d->language = GRD_LANG_C;
    d->nparams = nparams;
    d->params = static_cast<grd_param *>(std::calloc(nparams ? nparams : 1, sizeof(grd_param)));
    return DescPtr(d, grd_free);
}

grd_param *SetParam(grd_desc *d, uint32_t i, const std::string &name, grd_type type, grd_mode mode,
                    uint32_t rank = 0, uint32_t flags = 0) {
    grd_param *p = &d->params[i];
    p->name = Dup(name);
    p->type = type;
    p->mode = mode;
    p->flags = flags;
    p->rank = rank;
    p->dims = rank ? static_cast<grd_dim *>(std::calloc(rank, sizeof(grd_dim))) : nullptr;
    return p;
}

// linalg/dmmul(IN int n, IN double A[n][n], IN double B[n][n], OUT double C[n][n]),
// cost 2*n^3.
DescPtr Dmmul() {
    DescPtr d = NewDesc(4, "linalg", "dmmul");
    std::free(d->description);
    d->description = Dup("double precision matrix multiply");
    SetParam(d.get(), 0, "n", GRD_INT, GRD_IN);
    const char *names[] = {"A", "B", "C"};
    for (uint32_t i = 0; i < 3; i++) {
        grd_param *p = SetParam(d.get(), i + 1, names[i], GRD_DOUBLE, i < 2 ? GRD_IN : GRD_OUT, 2);
        p->dims[0].size = Prog({Pm(0)});
        p->dims[1].size = Prog({Pm(0)});
    }
    d->cost = Prog({K(2), Pm(0), K(3), I(GRD_OP_POW), I(GRD_OP_MUL)});
    return d;
}

// Scalars n, m, s (IN int, INOUT long, IN short); x float[n : 1, n-1, 2];
// y double[m][n] OUT; r OUT double *; u IN unsigned char.
DescPtr Mixed() {
    DescPtr d = NewDesc(7, "sample", "mixed");
    std::free(d->description);
    d->description = Dup("say \"hi\"\\\n\x01\xff");
    d->language = GRD_LANG_FORTRAN;
    d->flags = GRD_FF_SHRINK;
    SetParam(d.get(), 0, "n", GRD_INT, GRD_IN);
    SetParam(d.get(), 1, "m", GRD_LONG, GRD_INOUT);
    SetParam(d.get(), 2, "s", GRD_SHORT, GRD_IN);
    grd_param *x = SetParam(d.get(), 3, "x", GRD_FLOAT, GRD_IN, 1);
    x->dims[0].size = Prog({Pm(0)});
    x->dims[0].start = Prog({K(1)});
    x->dims[0].end = Prog({Pm(0), K(1), I(GRD_OP_SUB)});
    x->dims[0].step = Prog({K(2)});
    grd_param *y = SetParam(d.get(), 4, "y", GRD_DOUBLE, GRD_OUT, 2);
    y->dims[0].size = Prog({Pm(1)});
    y->dims[1].size = Prog({Pm(0)});
    SetParam(d.get(), 5, "r", GRD_DOUBLE, GRD_OUT, 0, GRD_PF_POINTER);
    SetParam(d.get(), 6, "u", GRD_CHAR, GRD_IN, 0, GRD_PF_UNSIGNED);
    return d;
}

Bytes Encode(grd_desc *d) {
    uint8_t *buf = nullptr;
    size_t len = 0;
    grd_error err{};
    int rc = grd_encode(d, &buf, &len, &err);
    EXPECT_EQ(rc, GRD_OK) << err.msg;
    Bytes out(buf, buf + len);
    std::free(buf);
    return out;
}

struct Decoded {
    DescPtr desc{nullptr, grd_free};
    int code = -1;
    std::string msg;
};

Decoded Decode(const Bytes &b) {
    Decoded r;
    grd_desc *d = reinterpret_cast<grd_desc *>(1);
    grd_error err{};
    r.code = grd_decode(b.data(), b.size(), &d, &err);
    r.desc.reset(d);
    r.msg = err.msg;
    if (r.code != GRD_OK) {
        EXPECT_EQ(d, nullptr);
        EXPECT_FALSE(r.msg.empty());
    }
    return r;
}

std::string Dump(const grd_desc *d) {
    char *s = grd_dump(d);
    std::string out = s ? s : "<null>";
    std::free(s);
    return out;
}

// ---- raw XDR bytes, for descriptors the encoder would refuse to write ----

struct W {
    Bytes b;
    W &u32(uint32_t v) {
        for (int s = 24; s >= 0; s -= 8)
            b.push_back(static_cast<uint8_t>(v >> s));
        return *this;
    }
    W &i64(int64_t v) {
        u32(static_cast<uint32_t>(static_cast<uint64_t>(v) >> 32));
        return u32(static_cast<uint32_t>(v));
    }
    W &str(const std::string &s) {
        u32(static_cast<uint32_t>(s.size()));
        b.insert(b.end(), s.begin(), s.end());
        while (b.size() % 4)
            b.push_back(0);
        return *this;
    }
    W &prog(std::initializer_list<grd_insn> code) {
        u32(static_cast<uint32_t>(code.size()));
        for (const grd_insn &in : code)
            u32(in.op).i64(in.operand);
        return *this;
    }
    // The function part of a body: module m, name f, no description, C, no cost.
    W &head(uint32_t nparams) { return str("m").str("f").str("").u32(0).u32(GRD_LANG_C).u32(0).u32(nparams); }
    W &scalar(const std::string &name, grd_type t, grd_mode m, uint32_t flags = 0) {
        return str(name).u32(t).u32(m).u32(flags).u32(0);
    }
};

void Put32(Bytes &b, size_t at, uint32_t v) {
    for (int i = 0; i < 4; i++)
        b[at + i] = static_cast<uint8_t>(v >> (24 - 8 * i));
}

// Header + BODY with a correct body_length and hash.
Bytes Wrap(const Bytes &body) {
    W w;
    uint64_t h = grd_fnv1a64(body.data(), body.size());
    w.u32(GRD_MAGIC).u32(GRD_FORMAT_VERSION).u32(static_cast<uint32_t>(h >> 32));
    w.u32(static_cast<uint32_t>(h)).u32(static_cast<uint32_t>(body.size()));
    w.b.insert(w.b.end(), body.begin(), body.end());
    return w.b;
}

// Makes the header of B agree with its body again after an edit.
void Rehash(Bytes &b) {
    Bytes body(b.begin() + 20, b.end());
    b = Wrap(body);
}

// ---- basics ----

TEST(Basics, Names) {
    EXPECT_STREQ(grd_type_name(GRD_CHAR), "char");
    EXPECT_STREQ(grd_type_name(GRD_DOUBLE), "double");
    EXPECT_STREQ(grd_type_name(GRD_FILENAME), "filename");
    EXPECT_STREQ(grd_type_name(0), "?");
    EXPECT_STREQ(grd_type_name(GRD_CALLBACK), "callback");
    EXPECT_STREQ(grd_type_name(13), "?");
    EXPECT_STREQ(grd_type_name(0xffffffffu), "?");
    EXPECT_STREQ(grd_mode_name(GRD_IN), "IN");
    EXPECT_STREQ(grd_mode_name(GRD_INOUT), "INOUT");
    EXPECT_STREQ(grd_mode_name(GRD_WORK), "WORK");
    EXPECT_STREQ(grd_mode_name(5), "?");
}

TEST(Basics, TypeSizes) {
    EXPECT_EQ(grd_type_size(GRD_CHAR), 1u);
    EXPECT_EQ(grd_type_size(GRD_SHORT), sizeof(short));
    EXPECT_EQ(grd_type_size(GRD_INT), sizeof(int));
    EXPECT_EQ(grd_type_size(GRD_LONG), sizeof(long));
    EXPECT_EQ(grd_type_size(GRD_LONGLONG), sizeof(long long));
    EXPECT_EQ(grd_type_size(GRD_FLOAT), 4u);
    EXPECT_EQ(grd_type_size(GRD_DOUBLE), 8u);
    EXPECT_EQ(grd_type_size(GRD_SCOMPLEX), 8u);
    EXPECT_EQ(grd_type_size(GRD_DCOMPLEX), 16u);
    EXPECT_EQ(grd_type_size(GRD_STRING), sizeof(char *));
    EXPECT_EQ(grd_type_size(GRD_FILENAME), sizeof(char *));
    EXPECT_EQ(grd_type_size(0), 0u);
    EXPECT_EQ(grd_type_size(99), 0u);
}

TEST(Basics, Fnv1a64KnownValues) {
    EXPECT_EQ(grd_fnv1a64(nullptr, 0), 0xcbf29ce484222325ull);
    EXPECT_EQ(grd_fnv1a64(reinterpret_cast<const uint8_t *>("a"), 1), 0xaf63dc4c8601ec8cull);
    EXPECT_EQ(grd_fnv1a64(reinterpret_cast<const uint8_t *>("foobar"), 6), 0x85944171f73967e8ull);
}

TEST(Basics, FindParamAndFreeNull) {
    DescPtr d = Dmmul();
    EXPECT_EQ(grd_find_param(d.get(), "n"), 0);
    EXPECT_EQ(grd_find_param(d.get(), "C"), 3);
    EXPECT_EQ(grd_find_param(d.get(), "c"), -1);
    EXPECT_EQ(grd_find_param(d.get(), nullptr), -1);
    EXPECT_EQ(grd_find_param(nullptr, "n"), -1);
    grd_free(nullptr);
    EXPECT_EQ(grd_dump(nullptr), nullptr);
}

// ---- encode / decode ----

void ExpectSameExpr(const grd_expr &a, const grd_expr &b) {
    ASSERT_EQ(a.len, b.len);
    for (uint32_t i = 0; i < a.len; i++) {
        EXPECT_EQ(a.code[i].op, b.code[i].op);
        EXPECT_EQ(a.code[i].operand, b.code[i].operand);
    }
}

void ExpectSameDesc(const grd_desc *a, const grd_desc *b) {
    EXPECT_EQ(a->version, b->version);
    EXPECT_EQ(a->hash, b->hash);
    EXPECT_STREQ(a->module, b->module);
    EXPECT_STREQ(a->name, b->name);
    EXPECT_STREQ(a->description, b->description);
    EXPECT_EQ(a->flags, b->flags);
    EXPECT_EQ(a->language, b->language);
    EXPECT_EQ(a->timeout, b->timeout);
    ExpectSameExpr(a->cost, b->cost);
    ASSERT_EQ(a->nparams, b->nparams);
    for (uint32_t i = 0; i < a->nparams; i++) {
        const grd_param &p = a->params[i], &q = b->params[i];
        EXPECT_STREQ(p.name, q.name);
        EXPECT_EQ(p.type, q.type);
        EXPECT_EQ(p.mode, q.mode);
        EXPECT_EQ(p.flags, q.flags);
        ASSERT_EQ(p.rank, q.rank);
        for (uint32_t k = 0; k < p.rank; k++) {
            ExpectSameExpr(p.dims[k].size, q.dims[k].size);
            ExpectSameExpr(p.dims[k].start, q.dims[k].start);
            ExpectSameExpr(p.dims[k].end, q.dims[k].end);
            ExpectSameExpr(p.dims[k].step, q.dims[k].step);
        }
    }
}

TEST(Codec, RoundTripDmmul) {
    DescPtr d = Dmmul();
    Bytes b = Encode(d.get());
    ASSERT_GE(b.size(), 20u);
    EXPECT_EQ(b.size() % 4, 0u);
    EXPECT_EQ(0, std::memcmp(b.data(), "GRDS\0\0\0\1", 8));
    EXPECT_EQ(d->hash, grd_fnv1a64(b.data() + 20, b.size() - 20));
    Decoded r = Decode(b);
    ASSERT_EQ(r.code, GRD_OK) << r.msg;
    ExpectSameDesc(d.get(), r.desc.get());
    EXPECT_EQ(Encode(r.desc.get()), b);
}

// An IDL Timeout (flag bit 3) adds one word after the language, and only then: a
// descriptor without one keeps the bytes it had before the field existed.
TEST(Codec, RoundTripTimeout) {
    DescPtr d = Dmmul();
    Bytes plain = Encode(d.get());
    d->flags |= GRD_FF_TIMEOUT;
    d->timeout = 90;
    Bytes b = Encode(d.get());
    EXPECT_EQ(b.size(), plain.size() + 4);
    Decoded r = Decode(b);
    ASSERT_EQ(r.code, GRD_OK) << r.msg;
    EXPECT_EQ(r.desc->timeout, 90u);
    ExpectSameDesc(d.get(), r.desc.get());
    EXPECT_EQ(Encode(r.desc.get()), b);
    char *text = grd_dump(r.desc.get());
    ASSERT_NE(text, nullptr);
    EXPECT_NE(std::strstr(text, "flags 8 (timeout)"), nullptr) << text;
    EXPECT_NE(std::strstr(text, "\n  timeout 90 s\n"), nullptr) << text;
    std::free(text);
}

TEST(Codec, RoundTripMixedAndEmpty) {
    DescPtr d = Mixed();
    Bytes b = Encode(d.get());
    Decoded r = Decode(b);
    ASSERT_EQ(r.code, GRD_OK) << r.msg;
    ExpectSameDesc(d.get(), r.desc.get());

    DescPtr e = NewDesc(0, "m", "g");
    std::free(e->description);
    e->description = nullptr; // a missing description encodes as an empty one
    Bytes eb = Encode(e.get());
    EXPECT_EQ(eb.size(), 20u + 8 + 8 + 4 + 4 + 4 + 4 + 4);
    Decoded er = Decode(eb);
    ASSERT_EQ(er.code, GRD_OK) << er.msg;
    EXPECT_STREQ(er.desc->description, "");
    EXPECT_EQ(er.desc->nparams, 0u);
}

TEST(Codec, ExactBytesOfASmallDescriptor) {
    DescPtr d = NewDesc(1, "mod", "fn");
    SetParam(d.get(), 0, "n", GRD_INT, GRD_IN);
    d->cost = Prog({Pm(0)});
    Bytes body =
        W().str("mod").str("fn").str("").u32(0).u32(1).prog({Pm(0)}).u32(1).scalar("n", GRD_INT, GRD_IN).b;
    EXPECT_EQ(Encode(d.get()), Wrap(body));
}

TEST(Codec, EncodeRejectsInvalidAndArguments) {
    DescPtr d = Dmmul();
    d->params[1].type = 42;
    uint8_t *buf = reinterpret_cast<uint8_t *>(1);
    size_t len = 7;
    grd_error err{};
    EXPECT_EQ(grd_encode(d.get(), &buf, &len, &err), GRD_E_INVALID);
    EXPECT_EQ(buf, nullptr);
    EXPECT_EQ(len, 0u);
    EXPECT_NE(std::string(err.msg).find("unknown type 42"), std::string::npos) << err.msg;
    EXPECT_EQ(grd_encode(nullptr, &buf, &len, &err), GRD_E_ARG);
    EXPECT_EQ(grd_encode(d.get(), nullptr, &len, &err), GRD_E_ARG);
    d->params[1].type = GRD_DOUBLE;
    d->version = 2;
    EXPECT_EQ(grd_encode(d.get(), &buf, &len, &err), GRD_E_VERSION);
}

TEST(Codec, EncodeRefusesMoreThanOneMiB) {
    // 64 parameters of rank 8 with 255-instruction programs: about 6 MB.
    std::vector<grd_insn> big{K(1)};
    while (big.size() + 2 <= GRD_MAX_PROGRAM) {
        big.push_back(K(1));
        big.push_back(I(GRD_OP_ADD));
    }
    DescPtr d = NewDesc(GRD_MAX_PARAMS);
    for (uint32_t i = 0; i < GRD_MAX_PARAMS; i++) {
        grd_param *p = SetParam(d.get(), i, "p" + std::to_string(i), GRD_DOUBLE, GRD_IN, GRD_MAX_RANK);
        for (uint32_t k = 0; k < GRD_MAX_RANK; k++)
            p->dims[k].size = ProgV(big);
    }
    uint8_t *buf = nullptr;
    size_t len = 0;
    grd_error err{};
    EXPECT_EQ(grd_encode(d.get(), &buf, &len, &err), GRD_E_LIMIT);
    EXPECT_EQ(buf, nullptr);
    EXPECT_NE(std::string(err.msg).find("limit"), std::string::npos) << err.msg;
}

// ---- validation (shared by encode and decode) ----

void ExpectInvalid(grd_desc *d, int code, const std::string &part) {
    grd_error err{};
    EXPECT_EQ(grd_validate(d, &err), code) << err.msg;
    EXPECT_NE(std::string(err.msg).find(part), std::string::npos) << "message: " << err.msg;
}

TEST(Validate, GoodDescriptorsPass) {
    grd_error err{};
    EXPECT_EQ(grd_validate(Dmmul().get(), &err), GRD_OK) << err.msg;
    EXPECT_EQ(grd_validate(Mixed().get(), &err), GRD_OK) << err.msg;
    EXPECT_EQ(grd_validate(nullptr, &err), GRD_E_ARG);
}

TEST(Validate, Names) {
    {
        DescPtr d = Dmmul();
        std::free(d->module);
        d->module = Dup("");
        ExpectInvalid(d.get(), GRD_E_INVALID, "module name is empty");
    }
    {
        DescPtr d = Dmmul();
        std::free(d->name);
        d->name = Dup("9lives");
        ExpectInvalid(d.get(), GRD_E_INVALID, "function name '9lives' is not a C identifier");
    }
    {
        DescPtr d = Dmmul();
        std::free(d->name);
        d->name = nullptr;
        ExpectInvalid(d.get(), GRD_E_INVALID, "function name is missing");
    }
    {
        DescPtr d = Dmmul();
        std::free(d->module);
        d->module = Dup(std::string(256, 'a'));
        ExpectInvalid(d.get(), GRD_E_LIMIT, "module name is longer than the limit of 255");
    }
    {
        DescPtr d = Dmmul();
        std::free(d->module);
        d->module = Dup(std::string(255, 'a'));
        grd_error err{};
        EXPECT_EQ(grd_validate(d.get(), &err), GRD_OK) << err.msg;
    }
    {
        DescPtr d = Dmmul();
        std::free(d->params[2].name);
        d->params[2].name = Dup("a-b");
        ExpectInvalid(d.get(), GRD_E_INVALID, "parameter 3 name 'a-b' is not a C identifier");
    }
    {
        DescPtr d = Dmmul();
        std::free(d->params[2].name);
        d->params[2].name = Dup("A");
        ExpectInvalid(d.get(), GRD_E_INVALID, "parameter 3 ('A'): the name is also parameter 2");
    }
    {
        DescPtr d = Dmmul();
        std::free(d->description);
        d->description = Dup(std::string(4097, 'x'));
        ExpectInvalid(d.get(), GRD_E_LIMIT, "description");
        std::free(d->description);
        d->description = Dup(std::string(4096, 'x'));
        grd_error err{};
        EXPECT_EQ(grd_validate(d.get(), &err), GRD_OK) << err.msg;
    }
}

TEST(Validate, EnumsFlagsAndLimits) {
    {
        DescPtr d = Dmmul();
        d->language = 4;
        ExpectInvalid(d.get(), GRD_E_INVALID, "unknown language 4");
    }
    {
        DescPtr d = Dmmul();
        d->flags = 16;
        ExpectInvalid(d.get(), GRD_E_INVALID, "unknown function flag bits 0x10");
    }
    {
        // A Timeout (flag bit 3) is 1 s or more, and there is none without the flag.
        DescPtr d = Dmmul();
        d->flags = GRD_FF_TIMEOUT;
        ExpectInvalid(d.get(), GRD_E_INVALID, "timeout 0 s is outside 1 to 2147483647");
        d->timeout = GRD_MAX_TIMEOUT + 1u;
        ExpectInvalid(d.get(), GRD_E_INVALID, "timeout 2147483648 s is outside");
        d->timeout = GRD_MAX_TIMEOUT;
        grd_error err{};
        EXPECT_EQ(grd_validate(d.get(), &err), GRD_OK) << err.msg;
        d->flags = 0;
        ExpectInvalid(d.get(), GRD_E_INVALID, "a timeout on a descriptor without the timeout flag");
    }
    {
        // A method (flag bit 2) names its class; a function names none.
        DescPtr d = Dmmul();
        d->flags = GRD_FF_METHOD;
        ExpectInvalid(d.get(), GRD_E_INVALID, "class name");
        d->cls = strdup("not a name");
        ExpectInvalid(d.get(), GRD_E_INVALID, "class name");
        free(d->cls);
        d->cls = strdup("Counter");
        grd_error err{};
        EXPECT_EQ(grd_validate(d.get(), &err), GRD_OK) << err.msg;
        d->flags = 0;
        ExpectInvalid(d.get(), GRD_E_INVALID, "class name on a descriptor without the method flag");
    }
    {
        DescPtr d = Dmmul();
        d->params[1].mode = 0;
        ExpectInvalid(d.get(), GRD_E_INVALID, "parameter 2 ('A'): unknown mode 0");
    }
    {
        DescPtr d = Dmmul();
        d->params[1].type = 0;
        ExpectInvalid(d.get(), GRD_E_INVALID, "parameter 2 ('A'): unknown type 0");
    }
    {
        DescPtr d = Dmmul();
        d->params[0].flags = 4;
        ExpectInvalid(d.get(), GRD_E_INVALID, "parameter 1 ('n'): unknown flag bits 0x4");
    }
    {
        DescPtr d = Dmmul();
        d->nparams = GRD_MAX_PARAMS + 1;
        ExpectInvalid(d.get(), GRD_E_LIMIT, "65 parameters exceed the limit of 64");
        d->nparams = 4;
    }
    {
        DescPtr d = Dmmul();
        grd_param *p = &d->params[1];
        for (uint32_t k = 0; k < p->rank; k++)
            std::free(p->dims[k].size.code);
        std::free(p->dims);
        p->dims = static_cast<grd_dim *>(std::calloc(9, sizeof(grd_dim)));
        for (int k = 0; k < 9; k++)
            p->dims[k].size = Prog({K(1)});
        p->rank = 9;
        ExpectInvalid(d.get(), GRD_E_LIMIT, "parameter 2 ('A'): rank 9 exceeds the limit of 8");
    }
    {
        DescPtr d = Dmmul();
        grd_expr &e = d->params[1].dims[0].size;
        std::free(e.code);
        e.code = nullptr;
        e.len = 0;
        ExpectInvalid(d.get(), GRD_E_INVALID, "parameter 2 ('A') dimension 1: the size program is empty");
    }
}

TEST(Validate, ProgramRules) {
    auto with_cost = [](std::initializer_list<grd_insn> code) {
        DescPtr d = Mixed();
        d->cost = Prog(code);
        return d;
    };
    ExpectInvalid(with_cost({Pm(4)}).get(), GRD_E_INVALID,
                  "cost: instruction 0: PARAM 4 ('y') is not an integer IN or INOUT scalar");
    ExpectInvalid(with_cost({Pm(5)}).get(), GRD_E_INVALID, "PARAM 5 ('r')"); // OUT double *
    ExpectInvalid(with_cost({Pm(3)}).get(), GRD_E_INVALID, "PARAM 3 ('x')"); // float array
    ExpectInvalid(with_cost({Pm(7)}).get(), GRD_E_INVALID, "PARAM 7 is out of range (7 parameters)");
    ExpectInvalid(with_cost({Pm(-1)}).get(), GRD_E_INVALID, "PARAM -1 is out of range");
    ExpectInvalid(with_cost({K(1), I(GRD_OP_ADD)}).get(), GRD_E_INVALID,
                  "cost: instruction 1: stack underflow");
    ExpectInvalid(with_cost({K(1), K(2)}).get(), GRD_E_INVALID, "program leaves 2 values instead of one");
    ExpectInvalid(with_cost({K(1), I(static_cast<grd_op>(23))}).get(), GRD_E_INVALID,
                  "instruction 1: unknown opcode 23");
    // CBPARAM names a callback's own parameter: nowhere else (proto_callback_test.cpp).
    ExpectInvalid(with_cost({I(GRD_OP_CBPARAM, 0)}).get(), GRD_E_INVALID,
                  "cost: instruction 0: CBPARAM outside the parameters of a callback");
    ExpectInvalid(with_cost({I(static_cast<grd_op>(0))}).get(), GRD_E_INVALID, "unknown opcode 0");
    ExpectInvalid(with_cost({K(1), I(GRD_OP_NEG, 5)}).get(), GRD_E_INVALID,
                  "instruction 1: operand 5 on an op that takes none");
    // PARAM on an INOUT integer scalar and on an unsigned char scalar is fine.
    grd_error err{};
    EXPECT_EQ(grd_validate(with_cost({Pm(1), Pm(6), I(GRD_OP_ADD)}).get(), &err), GRD_OK) << err.msg;

    std::vector<grd_insn> deep;
    for (int i = 0; i < 33; i++)
        deep.push_back(K(i));
    for (int i = 0; i < 32; i++)
        deep.push_back(I(GRD_OP_ADD));
    DescPtr d = Mixed();
    d->cost = ProgV(deep);
    ExpectInvalid(d.get(), GRD_E_LIMIT, "instruction 32: stack depth exceeds the limit of 32");
    deep.erase(deep.begin());
    deep.pop_back();
    grd_expr e32 = ProgV(deep);
    std::swap(d->cost, e32);
    std::free(e32.code);
    EXPECT_EQ(grd_validate(d.get(), &err), GRD_OK) << err.msg;

    std::vector<grd_insn> longp{K(0)};
    for (int i = 0; i < 128; i++) {
        longp.push_back(K(1));
        longp.push_back(I(GRD_OP_ADD));
    }
    DescPtr l = Mixed();
    grd_expr &step = l->params[3].dims[0].step;
    std::free(step.code);
    step = ProgV(longp); // 257 instructions
    ExpectInvalid(l.get(), GRD_E_LIMIT,
                  "parameter 4 ('x') dimension 1 step: program of 257 instructions exceeds the "
                  "limit of 256");
}

// ---- dump ----

TEST(Dump, Dmmul) {
    DescPtr d = Dmmul();
    Bytes b = Encode(d.get());
    char hash[32];
    std::snprintf(hash, sizeof hash, "0x%016llx", static_cast<unsigned long long>(d->hash));
    EXPECT_EQ(Dump(d.get()), std::string("function linalg/dmmul  hash ") + hash +
                                 "  language C  flags 0\n"
                                 "  description \"double precision matrix multiply\"\n"
                                 "  cost 2*n^3\n"
                                 "  param 1 n: IN int\n"
                                 "  param 2 A: IN double [n][n]\n"
                                 "  param 3 B: IN double [n][n]\n"
                                 "  param 4 C: OUT double [n][n]\n");
}

TEST(Dump, MixedSubRangesFlagsAndEscapes) {
    DescPtr d = Mixed();
    grd_param *y = &d->params[4];
    y->dims[1].step = Prog({K(3)}); // start and end absent: printed as their defaults
    d->hash = 0x0123456789abcdefull;
    EXPECT_EQ(Dump(d.get()),
              "function sample/mixed  hash 0x0123456789abcdef  language Fortran  flags 1 (shrink)\n"
              "  description \"say \\\"hi\\\"\\\\\\n\\x01\\xff\"\n"
              "  cost none\n"
              "  param 1 n: IN int\n"
              "  param 2 m: INOUT long\n"
              "  param 3 s: IN short\n"
              "  param 4 x: IN float [n : 1, n - 1, 2]\n"
              "  param 5 y: OUT double [m][n : 0, n, 3]\n"
              "  param 6 r: OUT double *\n"
              "  param 7 u: IN unsigned char\n");
}

// The text of cost program CODE over parameters n and m.
std::string CostText(std::initializer_list<grd_insn> code) {
    DescPtr d = NewDesc(2);
    SetParam(d.get(), 0, "n", GRD_INT, GRD_IN);
    SetParam(d.get(), 1, "m", GRD_INT, GRD_IN);
    d->cost = Prog(code);
    std::string s = Dump(d.get());
    size_t at = s.find("  cost ");
    return s.substr(at + 7, s.find('\n', at) - at - 7);
}

TEST(Dump, InfixPrecedenceAndAssociativity) {
    const grd_insn n = Pm(0), m = Pm(1);
    auto op = [](grd_op o) { return I(o); };
    EXPECT_EQ(CostText({n, m, K(2), op(GRD_OP_MUL), op(GRD_OP_ADD)}), "n + m*2");
    EXPECT_EQ(CostText({n, m, op(GRD_OP_ADD), K(2), op(GRD_OP_MUL)}), "(n + m)*2");
    EXPECT_EQ(CostText({n, m, K(1), op(GRD_OP_SUB), op(GRD_OP_SUB)}), "n - (m - 1)");
    EXPECT_EQ(CostText({n, m, op(GRD_OP_SUB), K(1), op(GRD_OP_SUB)}), "n - m - 1");
    EXPECT_EQ(CostText({n, m, op(GRD_OP_MOD), K(2), op(GRD_OP_DIV)}), "n%m/2");
    EXPECT_EQ(CostText({n, m, K(2), op(GRD_OP_MOD), op(GRD_OP_DIV)}), "n/(m%2)");
    EXPECT_EQ(CostText({K(2), K(3), K(2), op(GRD_OP_POW), op(GRD_OP_POW)}), "2^3^2");
    EXPECT_EQ(CostText({K(2), K(3), op(GRD_OP_POW), K(2), op(GRD_OP_POW)}), "(2^3)^2");
    EXPECT_EQ(CostText({n, op(GRD_OP_NEG), K(2), op(GRD_OP_POW)}), "-n^2");
    EXPECT_EQ(CostText({n, K(2), op(GRD_OP_POW), op(GRD_OP_NEG)}), "-(n^2)");
    EXPECT_EQ(CostText({K(-2), K(2), op(GRD_OP_POW)}), "-2^2");
    EXPECT_EQ(CostText({n, m, op(GRD_OP_NEG), op(GRD_OP_POW)}), "n^-m");
    EXPECT_EQ(CostText({n, K(2), op(GRD_OP_POW), m, op(GRD_OP_MUL)}), "n^2*m");
    EXPECT_EQ(CostText({n, m, op(GRD_OP_MUL), K(2), op(GRD_OP_POW)}), "(n*m)^2");
    EXPECT_EQ(CostText({n, op(GRD_OP_NEG), op(GRD_OP_NEG)}), "-(-n)");
    EXPECT_EQ(CostText({K(-3), op(GRD_OP_NEG)}), "-(-3)");
    EXPECT_EQ(CostText({n, K(-3), op(GRD_OP_SUB)}), "n - -3");
    EXPECT_EQ(CostText({n, op(GRD_OP_NEG), m, op(GRD_OP_MUL)}), "-n*m");
    EXPECT_EQ(CostText({n, m, op(GRD_OP_MUL), op(GRD_OP_NEG)}), "-(n*m)");
    EXPECT_EQ(CostText({n, m, op(GRD_OP_LT), op(GRD_OP_NOT)}), "!(n < m)");
    EXPECT_EQ(CostText({n, op(GRD_OP_NOT), op(GRD_OP_NOT)}), "!!n");
    EXPECT_EQ(CostText({n, m, op(GRD_OP_AND), n, op(GRD_OP_NOT), op(GRD_OP_OR)}), "n && m || !n");
    EXPECT_EQ(CostText({n, m, n, op(GRD_OP_OR), op(GRD_OP_AND)}), "n && (m || n)");
    EXPECT_EQ(CostText({n, m, K(1), op(GRD_OP_LT), op(GRD_OP_EQ)}), "n == m < 1");
    EXPECT_EQ(CostText({n, m, op(GRD_OP_EQ), K(1), op(GRD_OP_LT)}), "(n == m) < 1");
    EXPECT_EQ(CostText({n, m, op(GRD_OP_NE), K(0), op(GRD_OP_NE)}), "n != m != 0");
    EXPECT_EQ(CostText({n, m, op(GRD_OP_LE), n, m, op(GRD_OP_GE), op(GRD_OP_AND)}), "n <= m && n >= m");
    EXPECT_EQ(CostText({n, m, op(GRD_OP_GT), m, n, op(GRD_OP_COND)}), "n > m ? m : n");
    EXPECT_EQ(CostText({n, m, K(1), op(GRD_OP_COND), K(2), K(3), op(GRD_OP_COND)}), "(n ? m : 1) ? 2 : 3");
    EXPECT_EQ(CostText({n, m, K(1), K(2), K(3), op(GRD_OP_COND), op(GRD_OP_COND)}), "n ? m : 1 ? 2 : 3");
    EXPECT_EQ(CostText({n, m, n, op(GRD_OP_OR), K(1), op(GRD_OP_COND)}), "n ? m || n : 1");
    EXPECT_EQ(CostText({n, K(1), op(GRD_OP_ADD), m, K(2), op(GRD_OP_MAX), op(GRD_OP_MIN)}),
              "min(n + 1, max(m, 2))");
    EXPECT_EQ(CostText({n, m, op(GRD_OP_MIN), K(2), op(GRD_OP_MUL)}), "min(n, m)*2");
    EXPECT_EQ(CostText({K(INT64_MIN)}), "-9223372036854775808");
    EXPECT_EQ(CostText({Pm(9)}), "$9"); // dump does not validate
    EXPECT_EQ(CostText({n, m}), "<invalid program>");
    EXPECT_EQ(CostText({I(GRD_OP_ADD)}), "<invalid program>");
    EXPECT_EQ(CostText({K(1), I(static_cast<grd_op>(99))}), "<invalid program>");
}

// ---- evaluation ----

struct EvalResult {
    int code;
    int64_t value;
    std::string msg;
};

EvalResult Eval(std::initializer_list<grd_insn> code, std::vector<int64_t> scalars = {}) {
    grd_expr e = Prog(code);
    EvalResult r{};
    grd_error err{};
    r.value = -12345;
    r.code = grd_eval(&e, scalars.empty() ? nullptr : scalars.data(), static_cast<uint32_t>(scalars.size()),
                      &r.value, &err);
    r.msg = err.msg;
    std::free(e.code);
    return r;
}

int64_t EvalOk(std::initializer_list<grd_insn> code, std::vector<int64_t> scalars = {}) {
    EvalResult r = Eval(code, scalars);
    EXPECT_EQ(r.code, GRD_OK) << r.msg;
    return r.value;
}

TEST(Eval, EveryOpcode) {
    auto bin = [](int64_t a, int64_t b, grd_op o) { return EvalOk({K(a), K(b), I(o)}); };
    EXPECT_EQ(EvalOk({K(-7)}), -7);
    EXPECT_EQ(EvalOk({Pm(1)}, {10, 20, 30}), 20);
    EXPECT_EQ(bin(7, 3, GRD_OP_ADD), 10);
    EXPECT_EQ(bin(7, 3, GRD_OP_SUB), 4); // pops b then a: a - b
    EXPECT_EQ(bin(7, 3, GRD_OP_MUL), 21);
    EXPECT_EQ(bin(7, 3, GRD_OP_DIV), 2);
    EXPECT_EQ(bin(-7, 3, GRD_OP_DIV), -2); // truncating
    EXPECT_EQ(bin(7, 3, GRD_OP_MOD), 1);
    EXPECT_EQ(bin(-7, 3, GRD_OP_MOD), -1);
    EXPECT_EQ(bin(INT64_MIN, -1, GRD_OP_MOD), 0);
    EXPECT_EQ(bin(2, 10, GRD_OP_POW), 1024);
    EXPECT_EQ(bin(-3, 3, GRD_OP_POW), -27);
    EXPECT_EQ(bin(0, 0, GRD_OP_POW), 1);
    EXPECT_EQ(bin(5, 0, GRD_OP_POW), 1);
    EXPECT_EQ(bin(-1, INT64_MAX, GRD_OP_POW), -1);
    EXPECT_EQ(bin(1, INT64_MAX, GRD_OP_POW), 1);
    EXPECT_EQ(bin(0, INT64_MAX, GRD_OP_POW), 0);
    EXPECT_EQ(bin(-2, 63, GRD_OP_POW), INT64_MIN);
    EXPECT_EQ(bin(3, 39, GRD_OP_POW), 4052555153018976267ll);
    EXPECT_EQ(EvalOk({K(5), I(GRD_OP_NEG)}), -5);
    EXPECT_EQ(EvalOk({K(INT64_MAX), I(GRD_OP_NEG)}), -INT64_MAX);
    EXPECT_EQ(bin(1, 2, GRD_OP_LT), 1);
    EXPECT_EQ(bin(2, 2, GRD_OP_LT), 0);
    EXPECT_EQ(bin(2, 2, GRD_OP_LE), 1);
    EXPECT_EQ(bin(3, 2, GRD_OP_LE), 0);
    EXPECT_EQ(bin(3, 2, GRD_OP_GT), 1);
    EXPECT_EQ(bin(2, 2, GRD_OP_GT), 0);
    EXPECT_EQ(bin(2, 2, GRD_OP_GE), 1);
    EXPECT_EQ(bin(1, 2, GRD_OP_GE), 0);
    EXPECT_EQ(bin(4, 4, GRD_OP_EQ), 1);
    EXPECT_EQ(bin(4, 5, GRD_OP_EQ), 0);
    EXPECT_EQ(bin(4, 5, GRD_OP_NE), 1);
    EXPECT_EQ(bin(4, 4, GRD_OP_NE), 0);
    EXPECT_EQ(bin(3, -2, GRD_OP_AND), 1);
    EXPECT_EQ(bin(3, 0, GRD_OP_AND), 0);
    EXPECT_EQ(bin(0, 0, GRD_OP_OR), 0);
    EXPECT_EQ(bin(0, 9, GRD_OP_OR), 1);
    EXPECT_EQ(EvalOk({K(0), I(GRD_OP_NOT)}), 1);
    EXPECT_EQ(EvalOk({K(-4), I(GRD_OP_NOT)}), 0);
    EXPECT_EQ(EvalOk({K(1), K(10), K(20), I(GRD_OP_COND)}), 10);
    EXPECT_EQ(EvalOk({K(0), K(10), K(20), I(GRD_OP_COND)}), 20);
    EXPECT_EQ(bin(-4, 9, GRD_OP_MIN), -4);
    EXPECT_EQ(bin(-4, 9, GRD_OP_MAX), 9);
}

TEST(Eval, PostfixNeedsNoPrecedence) {
    // (n + 1) * (m - 2) ^ 2 with n = 3, m = 7: 4 * 25
    EXPECT_EQ(
        EvalOk({Pm(0), K(1), I(GRD_OP_ADD), Pm(1), K(2), I(GRD_OP_SUB), K(2), I(GRD_OP_POW), I(GRD_OP_MUL)},
               {3, 7}),
        100);
    // n > 2 ? min(n, m) * 2 : -1
    EXPECT_EQ(EvalOk({Pm(0), K(2), I(GRD_OP_GT), Pm(0), Pm(1), I(GRD_OP_MIN), K(2), I(GRD_OP_MUL), K(-1),
                      I(GRD_OP_COND)},
                     {3, 7}),
              6);
}

TEST(Eval, ArithmeticErrors) {
    auto bin = [](int64_t a, int64_t b, grd_op o) { return Eval({K(a), K(b), I(o)}); };
    EvalResult r = bin(INT64_MAX, 1, GRD_OP_ADD);
    EXPECT_EQ(r.code, GRD_E_OVERFLOW);
    EXPECT_EQ(r.msg, "instruction 2: 9223372036854775807 + 1 overflows 64 bits");
    EXPECT_EQ(bin(INT64_MIN, 1, GRD_OP_SUB).code, GRD_E_OVERFLOW);
    EXPECT_EQ(bin(INT64_MAX / 2 + 1, 2, GRD_OP_MUL).code, GRD_E_OVERFLOW);
    EXPECT_EQ(bin(INT64_MIN, -1, GRD_OP_MUL).code, GRD_E_OVERFLOW);
    r = bin(INT64_MIN, -1, GRD_OP_DIV);
    EXPECT_EQ(r.code, GRD_E_OVERFLOW);
    EXPECT_NE(r.msg.find("-9223372036854775808 / -1 overflows"), std::string::npos) << r.msg;
    r = bin(5, 0, GRD_OP_DIV);
    EXPECT_EQ(r.code, GRD_E_DIVZERO);
    EXPECT_EQ(r.msg, "instruction 2: division by zero in 5 / 0");
    r = bin(5, 0, GRD_OP_MOD);
    EXPECT_EQ(r.code, GRD_E_DIVZERO);
    EXPECT_NE(r.msg.find("5 % 0"), std::string::npos) << r.msg;
    r = bin(2, -1, GRD_OP_POW);
    EXPECT_EQ(r.code, GRD_E_RANGE);
    EXPECT_NE(r.msg.find("negative exponent in 2 ^ -1"), std::string::npos) << r.msg;
    EXPECT_EQ(bin(2, 63, GRD_OP_POW).code, GRD_E_OVERFLOW);
    EXPECT_EQ(bin(3, 40, GRD_OP_POW).code, GRD_E_OVERFLOW);
    EXPECT_EQ(bin(-2, 64, GRD_OP_POW).code, GRD_E_OVERFLOW);
    EXPECT_EQ(bin(10, INT64_MAX, GRD_OP_POW).code, GRD_E_OVERFLOW);
    r = Eval({K(INT64_MIN), I(GRD_OP_NEG)});
    EXPECT_EQ(r.code, GRD_E_OVERFLOW);
    EXPECT_NE(r.msg.find("-(-9223372036854775808) overflows"), std::string::npos) << r.msg;
    // An error deep inside is reported with its own instruction.
    r = Eval({K(1), K(1), K(0), I(GRD_OP_DIV), I(GRD_OP_ADD)});
    EXPECT_EQ(r.code, GRD_E_DIVZERO);
    EXPECT_NE(r.msg.find("instruction 3"), std::string::npos) << r.msg;
}

TEST(Eval, UntakenBranchesDoNotFail) {
    // n > 0 ? m / n : 0 with n = 0
    const std::initializer_list<grd_insn> guarded = {Pm(0), K(0),          I(GRD_OP_GT), Pm(1),
                                                     Pm(0), I(GRD_OP_DIV), K(0),         I(GRD_OP_COND)};
    EXPECT_EQ(EvalOk(guarded, {0, 5}), 0);
    EXPECT_EQ(EvalOk(guarded, {2, 5}), 2);
    // The taken branch's error is reported.
    EvalResult r = Eval({K(1), K(1), K(0), I(GRD_OP_DIV), K(0), I(GRD_OP_COND)});
    EXPECT_EQ(r.code, GRD_E_DIVZERO);
    r = Eval({K(1), I(GRD_OP_NEG), K(0), I(GRD_OP_DIV), K(1), K(2), I(GRD_OP_COND)});
    EXPECT_EQ(r.code, GRD_E_DIVZERO); // a failing condition fails
    // n != 0 && m / n > 1; n == 0 || m / n > 1
    EXPECT_EQ(
        EvalOk({Pm(0), K(0), I(GRD_OP_NE), Pm(1), Pm(0), I(GRD_OP_DIV), K(1), I(GRD_OP_GT), I(GRD_OP_AND)},
               {0, 5}),
        0);
    EXPECT_EQ(
        EvalOk({Pm(0), K(0), I(GRD_OP_EQ), Pm(1), Pm(0), I(GRD_OP_DIV), K(1), I(GRD_OP_GT), I(GRD_OP_OR)},
               {0, 5}),
        1);
    EXPECT_EQ(Eval({K(1), K(1), K(0), I(GRD_OP_DIV), I(GRD_OP_AND)}).code, GRD_E_DIVZERO);
    EXPECT_EQ(Eval({K(0), K(1), K(0), I(GRD_OP_DIV), I(GRD_OP_OR)}).code, GRD_E_DIVZERO);
    // Errors flow through every other operator.
    EXPECT_EQ(Eval({K(1), K(0), I(GRD_OP_DIV), I(GRD_OP_NOT)}).code, GRD_E_DIVZERO);
    EXPECT_EQ(Eval({K(1), K(0), I(GRD_OP_DIV), I(GRD_OP_NEG)}).code, GRD_E_DIVZERO);
    EXPECT_EQ(Eval({K(1), K(0), I(GRD_OP_DIV), K(3), I(GRD_OP_MIN)}).code, GRD_E_DIVZERO);
    EXPECT_EQ(Eval({K(3), K(1), K(0), I(GRD_OP_DIV), I(GRD_OP_MAX)}).code, GRD_E_DIVZERO);
}

TEST(Eval, MalformedProgramsAndArguments) {
    EvalResult r = Eval({K(1), I(GRD_OP_ADD)});
    EXPECT_EQ(r.code, GRD_E_INVALID);
    EXPECT_EQ(r.msg, "instruction 1: stack underflow");
    r = Eval({K(1), K(2)});
    EXPECT_EQ(r.code, GRD_E_INVALID);
    EXPECT_NE(r.msg.find("leaves 2 values"), std::string::npos);
    r = Eval({K(1), I(static_cast<grd_op>(77))});
    EXPECT_EQ(r.code, GRD_E_INVALID);
    EXPECT_NE(r.msg.find("unknown opcode 77"), std::string::npos);
    r = Eval({Pm(3)}, {1, 2, 3});
    EXPECT_EQ(r.code, GRD_E_ARG);
    EXPECT_NE(r.msg.find("PARAM 3 has no value (3 scalars given)"), std::string::npos) << r.msg;
    EXPECT_EQ(Eval({Pm(-1)}, {1}).code, GRD_E_ARG);
    EXPECT_EQ(Eval({Pm(0)}).code, GRD_E_ARG); // no scalars at all

    std::vector<grd_insn> deep(33, K(1));
    grd_expr e = ProgV(deep);
    int64_t v;
    grd_error err{};
    EXPECT_EQ(grd_eval(&e, nullptr, 0, &v, &err), GRD_E_LIMIT);
    std::free(e.code);
    grd_expr empty{0, nullptr};
    EXPECT_EQ(grd_eval(&empty, nullptr, 0, &v, &err), GRD_E_ARG);
    EXPECT_NE(std::string(err.msg).find("absent"), std::string::npos);
    EXPECT_EQ(grd_eval(nullptr, nullptr, 0, &v, &err), GRD_E_ARG);
    grd_expr huge{GRD_MAX_PROGRAM + 1, nullptr};
    EXPECT_EQ(grd_eval(&huge, nullptr, 0, &v, &err), GRD_E_LIMIT);
    grd_expr nocode{3, nullptr};
    EXPECT_EQ(grd_eval(&nocode, nullptr, 0, &v, &err), GRD_E_ARG);
    // A null error pointer is allowed.
    grd_expr one = Prog({K(1), K(0), I(GRD_OP_DIV)});
    EXPECT_EQ(grd_eval(&one, nullptr, 0, &v, nullptr), GRD_E_DIVZERO);
    std::free(one.code);
}

// ---- extents ----

struct Ext {
    int code;
    grd_extent e;
    std::string msg;
};

Ext Extent(const grd_desc *d, uint32_t i, std::vector<int64_t> scalars, uint64_t max = 0) {
    Ext r{};
    grd_error err{};
    r.code = grd_extent_of(d, i, scalars.data(), max, &r.e, &err);
    r.msg = err.msg;
    return r;
}

// f(IN int a, IN int b, IN int c, IN int d, X double[a][b : c?..]) built per test.
DescPtr ArrayDesc(grd_type type, uint32_t rank) {
    DescPtr d = NewDesc(5);
    SetParam(d.get(), 0, "a", GRD_INT, GRD_IN);
    SetParam(d.get(), 1, "b", GRD_INT, GRD_IN);
    SetParam(d.get(), 2, "c", GRD_INT, GRD_IN);
    SetParam(d.get(), 3, "e", GRD_INT, GRD_IN);
    grd_param *p = SetParam(d.get(), 4, "A", type, GRD_IN, rank);
    for (uint32_t k = 0; k < rank; k++)
        p->dims[k].size = Prog({Pm(k % 4)});
    return d;
}

TEST(Extent, WholeArray) {
    DescPtr d = Dmmul();
    Ext r = Extent(d.get(), 1, {100, 0, 0, 0});
    ASSERT_EQ(r.code, GRD_OK) << r.msg;
    EXPECT_EQ(r.e.rank, 2u);
    EXPECT_EQ(r.e.size[0], 100);
    EXPECT_EQ(r.e.size[1], 100);
    EXPECT_EQ(r.e.start[1], 0);
    EXPECT_EQ(r.e.end[1], 100);
    EXPECT_EQ(r.e.step[1], 1);
    EXPECT_EQ(r.e.count[0], 100u);
    EXPECT_EQ(r.e.elems, 10000u);
    EXPECT_EQ(r.e.sent, 10000u);
    EXPECT_EQ(r.e.bytes, 80000u);
    EXPECT_EQ(r.e.sent_bytes, 80000u);
    EXPECT_EQ(r.e.whole, 1);
}

TEST(Extent, Scalars) {
    DescPtr d = Mixed();
    Ext r = Extent(d.get(), 0, {1, 2, 3, 0, 0, 0, 0});
    ASSERT_EQ(r.code, GRD_OK) << r.msg;
    EXPECT_EQ(r.e.rank, 0u);
    EXPECT_EQ(r.e.elems, 1u);
    EXPECT_EQ(r.e.sent, 1u);
    EXPECT_EQ(r.e.bytes, sizeof(int));
    EXPECT_EQ(r.e.sent_bytes, sizeof(int));
    EXPECT_EQ(r.e.whole, 1);
    r = Extent(d.get(), 5, {0, 0, 0, 0, 0, 0, 0}); // OUT double *r
    ASSERT_EQ(r.code, GRD_OK);
    EXPECT_EQ(r.e.bytes, 8u);
    r = Extent(d.get(), 5, {0, 0, 0, 0, 0, 0, 0}, 4);
    EXPECT_EQ(r.code, GRD_E_OVERFLOW);
}

TEST(Extent, SubRange) {
    DescPtr d = Mixed(); // x float[n : 1, n - 1, 2]
    struct {
        int64_t n;
        uint64_t count;
    } cases[] = {{2, 0}, {3, 1}, {4, 1}, {5, 2}, {10, 4}, {11, 5}};
    for (auto c : cases) {
        Ext r = Extent(d.get(), 3, {c.n, 0, 0, 0, 0, 0, 0});
        ASSERT_EQ(r.code, GRD_OK) << r.msg;
        EXPECT_EQ(r.e.start[0], 1);
        EXPECT_EQ(r.e.end[0], c.n - 1);
        EXPECT_EQ(r.e.step[0], 2);
        EXPECT_EQ(r.e.count[0], c.count) << "n = " << c.n;
        EXPECT_EQ(r.e.elems, static_cast<uint64_t>(c.n));
        EXPECT_EQ(r.e.sent, c.count);
        EXPECT_EQ(r.e.bytes, 4u * c.n);
        EXPECT_EQ(r.e.sent_bytes, 4u * c.count);
        EXPECT_EQ(r.e.whole, 0);
    }
    // n = 1: start 1 > end 0
    Ext r = Extent(d.get(), 3, {1, 0, 0, 0, 0, 0, 0});
    EXPECT_EQ(r.code, GRD_E_RANGE);
    EXPECT_EQ(r.msg, "dimension 1 of 'x': sub-range 1..0 is outside 0..1");
}

TEST(Extent, SubRangeInTwoDimensions) {
    DescPtr d = ArrayDesc(GRD_DCOMPLEX, 2); // A[a][b]
    grd_dim &d1 = d->params[4].dims[1];
    d1.start = Prog({Pm(2)});
    d1.step = Prog({Pm(3)});
    Ext r = Extent(d.get(), 4, {3, 10, 4, 3, 0});
    ASSERT_EQ(r.code, GRD_OK) << r.msg;
    EXPECT_EQ(r.e.count[0], 3u);
    EXPECT_EQ(r.e.count[1], 2u); // 4, 7
    EXPECT_EQ(r.e.end[1], 10);
    EXPECT_EQ(r.e.elems, 30u);
    EXPECT_EQ(r.e.sent, 6u);
    EXPECT_EQ(r.e.bytes, 480u);
    EXPECT_EQ(r.e.sent_bytes, 96u);
    EXPECT_EQ(r.e.whole, 0);
    r = Extent(d.get(), 4, {3, 10, 0, 1, 0}); // start 0 step 1: everything
    ASSERT_EQ(r.code, GRD_OK) << r.msg;
    EXPECT_EQ(r.e.whole, 1);
    r = Extent(d.get(), 4, {3, 10, 10, 1, 0}); // start == end == size: nothing sent
    ASSERT_EQ(r.code, GRD_OK) << r.msg;
    EXPECT_EQ(r.e.sent, 0u);
    EXPECT_EQ(r.e.elems, 30u);
    r = Extent(d.get(), 4, {3, 10, 0, 0, 0});
    EXPECT_EQ(r.code, GRD_E_RANGE);
    EXPECT_EQ(r.msg, "dimension 2 of 'A': step 0 is below 1");
    r = Extent(d.get(), 4, {3, 10, 0, -2, 0});
    EXPECT_EQ(r.code, GRD_E_RANGE);
    r = Extent(d.get(), 4, {3, 10, -1, 1, 0});
    EXPECT_EQ(r.code, GRD_E_RANGE);
    EXPECT_NE(r.msg.find("sub-range -1..10 is outside 0..10"), std::string::npos) << r.msg;
    r = Extent(d.get(), 4, {3, 10, 11, 1, 0});
    EXPECT_EQ(r.code, GRD_E_RANGE);
    d1.end = Prog({K(11)});
    r = Extent(d.get(), 4, {3, 10, 0, 1, 0});
    EXPECT_EQ(r.code, GRD_E_RANGE); // end beyond size
    EXPECT_NE(r.msg.find("sub-range 0..11 is outside 0..10"), std::string::npos) << r.msg;
    // Huge step: one element.
    std::free(d1.end.code);
    d1.end = grd_expr{0, nullptr};
    r = Extent(d.get(), 4, {3, 10, 2, INT64_MAX, 0});
    ASSERT_EQ(r.code, GRD_OK) << r.msg;
    EXPECT_EQ(r.e.count[1], 1u);
}

TEST(Extent, ZeroLengthAndNegativeSizes) {
    DescPtr d = ArrayDesc(GRD_DOUBLE, 3); // A[a][b][c]
    Ext r = Extent(d.get(), 4, {0, 5, 5, 0, 0});
    ASSERT_EQ(r.code, GRD_OK) << r.msg;
    EXPECT_EQ(r.e.elems, 0u);
    EXPECT_EQ(r.e.bytes, 0u);
    EXPECT_EQ(r.e.sent, 0u);
    EXPECT_EQ(r.e.whole, 1);
    // A zero dimension makes the product 0 even when the others alone would overflow.
    r = Extent(d.get(), 4, {INT64_MAX, INT64_MAX, 0, 0, 0});
    ASSERT_EQ(r.code, GRD_OK) << r.msg;
    EXPECT_EQ(r.e.elems, 0u);
    r = Extent(d.get(), 4, {4, -3, 2, 0, 0});
    EXPECT_EQ(r.code, GRD_E_RANGE);
    EXPECT_EQ(r.msg, "dimension 2 of 'A': size -3 is negative");
}

TEST(Extent, OverflowAndLimits) {
    DescPtr d = ArrayDesc(GRD_DOUBLE, 3);
    Ext r = Extent(d.get(), 4, {1 << 22, 1 << 22, 1 << 22, 0, 0}); // 2^66 elements
    EXPECT_EQ(r.code, GRD_E_OVERFLOW);
    EXPECT_NE(r.msg.find("parameter 'A'"), std::string::npos) << r.msg;
    r = Extent(d.get(), 4, {1 << 20, 1 << 20, 1 << 20, 0, 0}); // 2^60 elements, 2^63 bytes
    EXPECT_EQ(r.code, GRD_E_OVERFLOW) << r.msg;
    r = Extent(d.get(), 4, {1 << 20, 1 << 20, 1 << 19, 0, 0}); // 2^62 bytes: allowed
    ASSERT_EQ(r.code, GRD_OK) << r.msg;
    EXPECT_EQ(r.e.bytes, 1ull << 62);
    r = Extent(d.get(), 4, {10, 10, 10, 0, 0}, 8000);
    ASSERT_EQ(r.code, GRD_OK) << r.msg;
    EXPECT_EQ(r.e.bytes, 8000u);
    r = Extent(d.get(), 4, {10, 10, 10, 0, 0}, 7999);
    EXPECT_EQ(r.code, GRD_E_OVERFLOW);
    EXPECT_NE(r.msg.find("1000 elements of 8 bytes exceed the limit of 7999 bytes"), std::string::npos)
        << r.msg;
    r = Extent(d.get(), 4, {10, 10, 10, 0, 0}, 999); // the element count alone is over
    EXPECT_EQ(r.code, GRD_E_OVERFLOW);
}

// elements * element size is checked for 64-bit overflow on its own: 2^60 + 1 elements
// of 16 bytes are 2^64 + 16 bytes, which wraps to 16 and would pass every later test.
TEST(Extent, ByteCountOverflowIsCaughtBeforeItWraps) {
    struct {
        grd_type type;
        int64_t elems;
    } wraps[] = {
        {GRD_DCOMPLEX, (int64_t{1} << 60) + 1}, // 2^64 + 16 -> 16
        {GRD_DCOMPLEX, (int64_t{1} << 62) + 1}, // 2^66 + 16 -> 16
        {GRD_DOUBLE, (int64_t{1} << 61) + 1},   // 2^64 + 8 -> 8
        {GRD_SCOMPLEX, (int64_t{1} << 61) + 3}, // 2^64 + 24 -> 24
        {GRD_FLOAT, (int64_t{1} << 62) + 1},    // 2^64 + 4 -> 4
        {GRD_DCOMPLEX, INT64_MAX},
    };
    for (auto &w : wraps) {
        DescPtr d = ArrayDesc(w.type, 1);
        Ext r = Extent(d.get(), 4, {w.elems, 0, 0, 0, 0});
        EXPECT_EQ(r.code, GRD_E_OVERFLOW) << w.elems << " elements of type " << w.type << ": " << r.msg;
        EXPECT_NE(r.msg.find(std::to_string(w.elems) + " elements of " +
                             std::to_string(grd_type_size(w.type)) + " bytes exceed the limit"),
                  std::string::npos)
            << r.msg;
    }
    // Just under: computed exactly, up to the 2^63 - 1 ceiling.
    DescPtr dc = ArrayDesc(GRD_DCOMPLEX, 1);
    Ext r = Extent(dc.get(), 4, {(int64_t{1} << 59) - 1, 0, 0, 0, 0});
    ASSERT_EQ(r.code, GRD_OK) << r.msg;
    EXPECT_EQ(r.e.elems, (uint64_t{1} << 59) - 1);
    EXPECT_EQ(r.e.bytes, (uint64_t{1} << 63) - 16);
    EXPECT_EQ(r.e.sent_bytes, (uint64_t{1} << 63) - 16);
    r = Extent(dc.get(), 4, {int64_t{1} << 59, 0, 0, 0, 0}); // 2^63 bytes: one past the ceiling
    EXPECT_EQ(r.code, GRD_E_OVERFLOW) << r.msg;
    r = Extent(dc.get(), 4, {(int64_t{1} << 60) - 1, 0, 0, 0, 0}); // 2^64 - 16: no wrap, over
    EXPECT_EQ(r.code, GRD_E_OVERFLOW) << r.msg;
    DescPtr ch = ArrayDesc(GRD_CHAR, 1);
    r = Extent(ch.get(), 4, {INT64_MAX, 0, 0, 0, 0});
    ASSERT_EQ(r.code, GRD_OK) << r.msg;
    EXPECT_EQ(r.e.bytes, static_cast<uint64_t>(INT64_MAX));
    // Against an explicit limit: at it, and one element past it.
    r = Extent(dc.get(), 4, {1000, 0, 0, 0, 0}, 16000);
    ASSERT_EQ(r.code, GRD_OK) << r.msg;
    EXPECT_EQ(r.e.bytes, 16000u);
    r = Extent(dc.get(), 4, {1001, 0, 0, 0, 0}, 16000);
    EXPECT_EQ(r.code, GRD_E_OVERFLOW) << r.msg;
    // A wrap that lands under a small explicit limit is still refused.
    r = Extent(dc.get(), 4, {(int64_t{1} << 60) + 1, 0, 0, 0, 0}, 1000);
    EXPECT_EQ(r.code, GRD_E_OVERFLOW) << r.msg;
}

TEST(Extent, EvaluationErrorsNameTheField) {
    DescPtr d = ArrayDesc(GRD_INT, 2);
    grd_dim &d1 = d->params[4].dims[1];
    std::free(d1.size.code);
    d1.size = Prog({Pm(1), Pm(2), I(GRD_OP_DIV)});
    Ext r = Extent(d.get(), 4, {1, 1, 0, 0, 0});
    EXPECT_EQ(r.code, GRD_E_DIVZERO);
    EXPECT_EQ(r.msg, "dimension 2 of 'A', size: instruction 2: division by zero in 1 / 0");
    d1.start = Prog({Pm(0), K(INT64_MAX), I(GRD_OP_ADD)});
    r = Extent(d.get(), 4, {1, 6, 2, 0, 0});
    EXPECT_EQ(r.code, GRD_E_OVERFLOW);
    EXPECT_NE(r.msg.find("dimension 2 of 'A', start: "), std::string::npos) << r.msg;

    grd_extent e;
    grd_error err{};
    EXPECT_EQ(grd_extent_of(d.get(), 5, nullptr, 0, &e, &err), GRD_E_ARG);
    EXPECT_EQ(grd_extent_of(d.get(), 4, nullptr, 0, &e, &err), GRD_E_ARG); // PARAM, no values
    EXPECT_EQ(grd_extent_of(nullptr, 0, nullptr, 0, &e, &err), GRD_E_ARG);
}

TEST(Cost, Values) {
    DescPtr d = Dmmul();
    int64_t s[] = {10, 0, 0, 0};
    double flops = -1;
    grd_error err{};
    ASSERT_EQ(grd_cost(d.get(), s, &flops, &err), GRD_OK) << err.msg;
    EXPECT_EQ(flops, 2000.0);
    s[0] = 3000000; // 2 * 2.7e19 overflows
    EXPECT_EQ(grd_cost(d.get(), s, &flops, &err), GRD_E_OVERFLOW);
    EXPECT_NE(std::string(err.msg).find("cost: "), std::string::npos) << err.msg;
    DescPtr m = Mixed();
    ASSERT_EQ(grd_cost(m.get(), nullptr, &flops, &err), GRD_OK);
    EXPECT_EQ(flops, 0.0);
    m->cost = Prog({K(-5)});
    EXPECT_EQ(grd_cost(m.get(), nullptr, &flops, &err), GRD_E_RANGE);
}

// ---- hostile input ----

TEST(Hostile, EveryTruncationIsRejected) {
    DescPtr d = Mixed();
    d->cost = Prog({Pm(0), K(2), I(GRD_OP_POW)});
    Bytes b = Encode(d.get());
    for (size_t n = 0; n < b.size(); n++) {
        Bytes prefix(b.begin(), b.begin() + n);
        grd_desc *out = reinterpret_cast<grd_desc *>(1);
        grd_error err{};
        EXPECT_EQ(grd_decode(prefix.data(), n, &out, &err), GRD_E_TRUNCATED) << n << ": " << err.msg;
        EXPECT_EQ(out, nullptr);
        // With a consistent header, the parser itself must find the end.
        if (n >= 20 && n % 4 == 0) {
            Rehash(prefix);
            EXPECT_EQ(grd_decode(prefix.data(), n, &out, &err), GRD_E_TRUNCATED) << n << ": " << err.msg;
        }
    }
}

TEST(Hostile, EverySingleByteCorruption) {
    DescPtr d = Mixed();
    d->cost = Prog({Pm(0), Pm(1), I(GRD_OP_MAX), K(3), I(GRD_OP_MUL)});
    const Bytes good = Encode(d.get());
    int accepted = 0;
    for (size_t i = 0; i < good.size(); i++) {
        for (uint8_t x : {0x01, 0x80, 0xff}) {
            Bytes b = good;
            b[i] ^= x;
            for (int pass = 0; pass < 2; pass++) {
                if (pass == 1) {
                    if (i < 20) break;
                    Rehash(b); // past the hash check, into the parser
                }
                grd_desc *out = nullptr;
                grd_error err{};
                int rc = grd_decode(b.data(), b.size(), &out, &err);
                if (rc == GRD_OK) {
                    accepted++;
                    EXPECT_EQ(grd_validate(out, &err), GRD_OK) << err.msg;
                    char *text = grd_dump(out);
                    EXPECT_NE(text, nullptr);
                    std::free(text);
                    grd_free(out);
                } else {
                    EXPECT_EQ(out, nullptr);
                    EXPECT_NE(err.msg[0], '\0');
                    if (pass == 0 && i >= 20) {
                        EXPECT_EQ(rc, GRD_E_HASH) << i;
                    }
                }
            }
        }
    }
    // Some corruptions are harmless (a constant, a description byte, a flag bit).
    EXPECT_GT(accepted, 0);
}

TEST(Hostile, HeaderErrors) {
    const Bytes good = Encode(Dmmul().get());
    Decoded r;
    Bytes b = good;
    b[0] = 'X';
    r = Decode(b);
    EXPECT_EQ(r.code, GRD_E_MAGIC);
    EXPECT_NE(r.msg.find("bad magic 0x58524453"), std::string::npos) << r.msg;
    b = good;
    b[3] = 'M';
    EXPECT_EQ(Decode(b).code, GRD_E_MAGIC);
    b = good;
    b[7] = 2;
    r = Decode(b);
    EXPECT_EQ(r.code, GRD_E_VERSION);
    EXPECT_NE(r.msg.find("version 2"), std::string::npos);
    b = good;
    b[15] ^= 1;
    r = Decode(b);
    EXPECT_EQ(r.code, GRD_E_HASH);
    EXPECT_NE(r.msg.find("does not match"), std::string::npos);
    b = good;
    b.push_back(0);
    r = Decode(b);
    EXPECT_EQ(r.code, GRD_E_TRAILING);
    EXPECT_NE(r.msg.find("1 bytes follow"), std::string::npos) << r.msg;
    b.insert(b.end(), 3, 0);
    EXPECT_EQ(Decode(b).code, GRD_E_TRAILING);
    b = good;
    Put32(b, 16, static_cast<uint32_t>(good.size() - 20 - 2));
    EXPECT_EQ(Decode(b).code, GRD_E_INVALID); // not a multiple of 4
    Put32(b, 16, static_cast<uint32_t>(good.size() - 20 + 4));
    EXPECT_EQ(Decode(b).code, GRD_E_TRUNCATED);
    Put32(b, 16, 0xfffffffcu);
    EXPECT_EQ(Decode(b).code, GRD_E_TRUNCATED);
    // A consistent header over all but the last word: that word is trailing.
    b = good;
    b.resize(good.size() - 4);
    Rehash(b);
    b.insert(b.end(), good.end() - 4, good.end());
    EXPECT_EQ(Decode(b).code, GRD_E_TRAILING);
    // A body with bytes after the last parameter.
    b = good;
    b.insert(b.end(), 4, 0);
    Rehash(b);
    r = Decode(b);
    EXPECT_EQ(r.code, GRD_E_TRAILING);
    EXPECT_NE(r.msg.find("body ends at offset"), std::string::npos) << r.msg;
    // Over 1 MiB.
    b.assign(GRD_MAX_ENCODED + 4, 0);
    std::memcpy(b.data(), good.data(), 20);
    EXPECT_EQ(Decode(b).code, GRD_E_LIMIT);
    // A bundle is not a descriptor.
    b = W().u32(GRD_BUNDLE_MAGIC).u32(1).u32(0).b;
    r = Decode(b);
    EXPECT_EQ(r.code, GRD_E_MAGIC);
    EXPECT_NE(r.msg.find("bundle"), std::string::npos);
    // Null arguments.
    grd_desc *out;
    EXPECT_EQ(grd_decode(nullptr, 10, &out, nullptr), GRD_E_ARG);
    EXPECT_EQ(grd_decode(good.data(), good.size(), nullptr, nullptr), GRD_E_ARG);
    EXPECT_EQ(grd_decode(nullptr, 0, &out, nullptr), GRD_E_TRUNCATED);
}

TEST(Hostile, HugeCountsAreRejectedBeforeAllocating) {
    Decoded r = Decode(Wrap(W().head(0xffffffffu).b));
    EXPECT_EQ(r.code, GRD_E_LIMIT);
    EXPECT_EQ(r.msg, "4294967295 parameters exceed the limit of 64");
    r = Decode(Wrap(W().head(64).b)); // within the limit, but no bytes for them
    EXPECT_EQ(r.code, GRD_E_TRUNCATED);
    EXPECT_NE(r.msg.find("parameters: truncated"), std::string::npos) << r.msg;

    r = Decode(Wrap(W().u32(0xfffffff0u).b));
    EXPECT_EQ(r.code, GRD_E_LIMIT);
    EXPECT_EQ(r.msg, "module name: length 4294967280 exceeds the limit of 255");
    r = Decode(Wrap(W().str("m").str("f").u32(0xfffffff0u).b));
    EXPECT_EQ(r.code, GRD_E_LIMIT);
    EXPECT_NE(r.msg.find("description: length 4294967280"), std::string::npos);
    r = Decode(Wrap(W().str("m").str("f").u32(4096).b)); // allowed length, no bytes
    EXPECT_EQ(r.code, GRD_E_TRUNCATED);
    // (Padded so that the room for one parameter, checked first, is there.)
    r = Decode(Wrap(W().head(1).u32(0xfffffff0u).u32(0).u32(0).u32(0).u32(0).b));
    EXPECT_EQ(r.code, GRD_E_LIMIT);
    EXPECT_NE(r.msg.find("parameter 1 name: length 4294967280"), std::string::npos) << r.msg;

    r = Decode(Wrap(W().str("m").str("f").str("").u32(0).u32(1).u32(0xffffffffu).b));
    EXPECT_EQ(r.code, GRD_E_LIMIT);
    EXPECT_EQ(r.msg, "cost: program of 4294967295 instructions exceeds the limit of 256");
    r = Decode(Wrap(W().str("m").str("f").str("").u32(0).u32(1).u32(256).b));
    EXPECT_EQ(r.code, GRD_E_TRUNCATED);

    r = Decode(Wrap(W().head(1).str("A").u32(GRD_DOUBLE).u32(GRD_IN).u32(0).u32(9).b));
    EXPECT_EQ(r.code, GRD_E_LIMIT);
    EXPECT_EQ(r.msg, "parameter 1 ('A'): rank 9 exceeds the limit of 8");
    r = Decode(Wrap(W().head(1).str("A").u32(GRD_DOUBLE).u32(GRD_IN).u32(0).u32(0xffffffffu).b));
    EXPECT_EQ(r.code, GRD_E_LIMIT);
    r = Decode(Wrap(W().head(1).str("A").u32(GRD_DOUBLE).u32(GRD_IN).u32(0).u32(8).b));
    EXPECT_EQ(r.code, GRD_E_TRUNCATED);
    r = Decode(Wrap(W().head(1)
                        .str("A")
                        .u32(GRD_DOUBLE)
                        .u32(GRD_IN)
                        .u32(0)
                        .u32(1)
                        .u32(0x7fffffffu)
                        .u32(0)
                        .u32(0)
                        .u32(0)
                        .b));
    EXPECT_EQ(r.code, GRD_E_LIMIT);
    EXPECT_EQ(r.msg, "parameter 1 ('A') dimension 1 size: program of 2147483647 instructions exceeds "
                     "the limit of 256");
}

TEST(Hostile, StringContents) {
    Decoded r = Decode(Wrap(W().str(std::string("a\0b", 3)).str("f").str("").u32(0).u32(1).u32(0).u32(0).b));
    EXPECT_EQ(r.code, GRD_E_INVALID);
    EXPECT_NE(r.msg.find("NUL"), std::string::npos);
    Bytes body = W().head(0).b;
    body[5] = 'x'; // padding after "m"
    r = Decode(Wrap(body));
    EXPECT_EQ(r.code, GRD_E_INVALID);
    EXPECT_NE(r.msg.find("padding"), std::string::npos);
    r = Decode(Wrap(W().str("").str("f").str("").u32(0).u32(1).u32(0).u32(0).b));
    EXPECT_EQ(r.code, GRD_E_INVALID);
    EXPECT_EQ(r.msg, "module name is empty");
    r = Decode(Wrap(W().str("m").str("f g").str("").u32(0).u32(1).u32(0).u32(0).b));
    EXPECT_EQ(r.code, GRD_E_INVALID);
    r = Decode(Wrap(W().str("m").str("f").str("caf\xc3\xa9 \"x\"").u32(0).u32(1).u32(0).u32(0).b));
    EXPECT_EQ(r.code, GRD_OK) << r.msg; // descriptions may hold any byte but NUL
}

// One descriptor with a cost program and scalars n (IN int), o (OUT int), d (IN double),
// A (IN int[n]), io (INOUT longlong): the cost is CODE.
Bytes CostBody(std::initializer_list<grd_insn> code) {
    W w;
    w.str("m").str("f").str("").u32(0).u32(GRD_LANG_C).prog(code).u32(5);
    w.scalar("n", GRD_INT, GRD_IN).scalar("o", GRD_INT, GRD_OUT).scalar("d", GRD_DOUBLE, GRD_IN);
    w.str("A").u32(GRD_INT).u32(GRD_IN).u32(0).u32(1).prog({Pm(0)}).u32(0).u32(0).u32(0);
    w.scalar("io", GRD_LONGLONG, GRD_INOUT);
    return Wrap(w.b);
}

TEST(Hostile, BadProgramsAreRejectedByDecode) {
    EXPECT_EQ(Decode(CostBody({Pm(0), Pm(4), I(GRD_OP_MUL)})).code, GRD_OK);
    Decoded r = Decode(CostBody({Pm(1)}));
    EXPECT_EQ(r.code, GRD_E_INVALID);
    EXPECT_EQ(r.msg, "cost: instruction 0: PARAM 1 ('o') is not an integer IN or INOUT scalar");
    EXPECT_EQ(Decode(CostBody({Pm(2)})).code, GRD_E_INVALID); // a double
    EXPECT_EQ(Decode(CostBody({Pm(3)})).code, GRD_E_INVALID); // an array
    r = Decode(CostBody({Pm(5)}));
    EXPECT_EQ(r.code, GRD_E_INVALID);
    EXPECT_NE(r.msg.find("PARAM 5 is out of range"), std::string::npos);
    EXPECT_EQ(Decode(CostBody({Pm(INT64_MIN)})).code, GRD_E_INVALID);
    EXPECT_EQ(Decode(CostBody({Pm(0x100000000ll)})).code, GRD_E_INVALID);
    r = Decode(CostBody({I(GRD_OP_ADD)}));
    EXPECT_EQ(r.code, GRD_E_INVALID);
    EXPECT_NE(r.msg.find("stack underflow"), std::string::npos);
    r = Decode(CostBody({K(1), K(2)}));
    EXPECT_EQ(r.code, GRD_E_INVALID);
    EXPECT_NE(r.msg.find("leaves 2 values"), std::string::npos);
    r = Decode(CostBody({K(1), I(static_cast<grd_op>(0xffffffffu))}));
    EXPECT_EQ(r.code, GRD_E_INVALID);
    EXPECT_NE(r.msg.find("unknown opcode 4294967295"), std::string::npos);
    EXPECT_EQ(Decode(CostBody({K(1), I(GRD_OP_NOT, 1)})).code, GRD_E_INVALID);
    // An empty size program.
    W w;
    w.head(1).str("A").u32(GRD_INT).u32(GRD_IN).u32(0).u32(1).u32(0).u32(0).u32(0).u32(0);
    r = Decode(Wrap(w.b));
    EXPECT_EQ(r.code, GRD_E_INVALID);
    EXPECT_NE(r.msg.find("size program is empty"), std::string::npos);
    // Unknown enums and flags.
    EXPECT_EQ(Decode(Wrap(W().head(1).scalar("n", static_cast<grd_type>(13), GRD_IN).b)).code, GRD_E_INVALID);
    // A callback (type 12) is followed by its parameter count: without it, truncated.
    EXPECT_EQ(Decode(Wrap(W().head(1).scalar("n", GRD_CALLBACK, GRD_IN).b)).code, GRD_E_TRUNCATED);
    EXPECT_EQ(Decode(Wrap(W().head(1).scalar("n", GRD_INT, static_cast<grd_mode>(5)).b)).code, GRD_E_INVALID);
    EXPECT_EQ(Decode(Wrap(W().head(1).scalar("n", GRD_INT, GRD_IN, 8).b)).code, GRD_E_INVALID);
    EXPECT_EQ(Decode(Wrap(W().str("m").str("f").str("").u32(16).u32(1).u32(0).u32(0).b)).code, GRD_E_INVALID);
    // Flag bit 3 (a Timeout) puts the seconds after the language: 1 or more.
    EXPECT_EQ(Decode(Wrap(W().str("m").str("f").str("").u32(8).u32(1).u32(30).u32(0).u32(0).b)).code, GRD_OK);
    EXPECT_EQ(Decode(Wrap(W().str("m").str("f").str("").u32(8).u32(1).u32(0).u32(0).u32(0).b)).code,
              GRD_E_INVALID);
    EXPECT_EQ(Decode(Wrap(W().str("m").str("f").str("").u32(8).u32(1).u32(0).u32(0).b)).code,
              GRD_E_TRUNCATED);
    // Flag bit 2 (a method) puts the class name after the language.
    EXPECT_EQ(Decode(Wrap(W().str("m").str("f").str("").u32(4).u32(1).str("C").u32(0).u32(0).b)).code,
              GRD_OK);
    EXPECT_EQ(Decode(Wrap(W().str("m").str("f").str("").u32(4).u32(1).str("").u32(0).u32(0).b)).code,
              GRD_E_INVALID);
    EXPECT_NE(Decode(Wrap(W().str("m").str("f").str("").u32(4).u32(1).u32(0).u32(0).b)).code, GRD_OK);
    // Flag bits 0 and 1 (Shrink "yes", Retry "no") are known.
    EXPECT_EQ(Decode(Wrap(W().str("m").str("f").str("").u32(3).u32(1).u32(0).u32(0).b)).code, GRD_OK);
    EXPECT_EQ(Decode(Wrap(W().str("m").str("f").str("").u32(0).u32(0).u32(0).u32(0).b)).code, GRD_E_INVALID);
}

// ---- bundles ----

struct Split {
    int code;
    std::vector<std::pair<size_t, size_t>> parts;
    std::string msg;
};

Split DoSplit(const Bytes &b) {
    Split s{};
    uint32_t n = 99;
    size_t *offs = reinterpret_cast<size_t *>(1), *lens = reinterpret_cast<size_t *>(1);
    grd_error err{};
    s.code = grd_bundle_split(b.data(), b.size(), &n, &offs, &lens, &err);
    s.msg = err.msg;
    if (s.code == GRD_OK) {
        for (uint32_t i = 0; i < n; i++)
            s.parts.emplace_back(offs[i], lens[i]);
        std::free(offs);
        std::free(lens);
    } else {
        EXPECT_EQ(n, 0u);
        EXPECT_EQ(offs, nullptr);
        EXPECT_EQ(lens, nullptr);
        EXPECT_FALSE(s.msg.empty());
    }
    return s;
}

Bytes Bundle(const std::vector<Bytes> &descs) {
    std::vector<const uint8_t *> ptrs;
    std::vector<size_t> lens;
    for (const Bytes &d : descs) {
        ptrs.push_back(d.data());
        lens.push_back(d.size());
    }
    uint8_t *out = nullptr;
    size_t len = 0;
    grd_error err{};
    EXPECT_EQ(
        grd_bundle_encode(ptrs.data(), lens.data(), static_cast<uint32_t>(descs.size()), &out, &len, &err),
        GRD_OK)
        << err.msg;
    Bytes b(out, out + len);
    std::free(out);
    return b;
}

TEST(BundleTest, RoundTrip) {
    std::vector<Bytes> descs = {Encode(Dmmul().get()), Encode(Mixed().get()),
                                Encode(NewDesc(0, "m", "g").get())};
    Bytes b = Bundle(descs);
    EXPECT_EQ(0, std::memcmp(b.data(), "GRDM\0\0\0\1\0\0\0\3", 12));
    Split s = DoSplit(b);
    ASSERT_EQ(s.code, GRD_OK) << s.msg;
    ASSERT_EQ(s.parts.size(), 3u);
    for (size_t i = 0; i < 3; i++) {
        Bytes part(b.begin() + s.parts[i].first, b.begin() + s.parts[i].first + s.parts[i].second);
        EXPECT_EQ(part, descs[i]);
        EXPECT_EQ(Decode(part).code, GRD_OK);
    }
    Split e = DoSplit(Bundle({}));
    ASSERT_EQ(e.code, GRD_OK);
    EXPECT_TRUE(e.parts.empty());
}

TEST(BundleTest, UnalignedElementsArePadded) {
    Bytes odd = {1, 2, 3, 4, 5};
    Bytes b = Bundle({odd, Bytes{}, Bytes{9}});
    EXPECT_EQ(b.size(), 12u + 4 + 8 + 4 + 4 + 4);
    Split s = DoSplit(b);
    ASSERT_EQ(s.code, GRD_OK) << s.msg;
    ASSERT_EQ(s.parts.size(), 3u);
    EXPECT_EQ(s.parts[0], std::make_pair(size_t{16}, size_t{5}));
    EXPECT_EQ(s.parts[1], std::make_pair(size_t{28}, size_t{0}));
    EXPECT_EQ(s.parts[2], std::make_pair(size_t{32}, size_t{1}));
    b[21] = 7; // padding
    Split bad = DoSplit(b);
    EXPECT_EQ(bad.code, GRD_E_INVALID);
    EXPECT_NE(bad.msg.find("padding"), std::string::npos);
}

TEST(BundleTest, HostileBundles) {
    Bytes good = Bundle({Encode(Dmmul().get()), Encode(Mixed().get())});
    for (size_t n = 0; n < good.size(); n++) {
        Bytes prefix(good.begin(), good.begin() + n);
        EXPECT_EQ(DoSplit(prefix).code, GRD_E_TRUNCATED) << n;
    }
    Bytes b = good;
    b.push_back(0);
    EXPECT_EQ(DoSplit(b).code, GRD_E_TRAILING);
    b = good;
    b[0] = 'g';
    EXPECT_EQ(DoSplit(b).code, GRD_E_MAGIC);
    b = good;
    b[7] = 9;
    EXPECT_EQ(DoSplit(b).code, GRD_E_VERSION);
    Split s = DoSplit(W().u32(GRD_BUNDLE_MAGIC).u32(1).u32(0xffffffffu).b);
    EXPECT_EQ(s.code, GRD_E_LIMIT);
    EXPECT_EQ(s.msg, "bundle of 4294967295 descriptors exceeds the limit of 4096");
    EXPECT_EQ(DoSplit(W().u32(GRD_BUNDLE_MAGIC).u32(1).u32(4097).b).code, GRD_E_LIMIT);
    EXPECT_EQ(DoSplit(W().u32(GRD_BUNDLE_MAGIC).u32(1).u32(4096).b).code, GRD_E_TRUNCATED);
    s = DoSplit(W().u32(GRD_BUNDLE_MAGIC).u32(1).u32(1).u32(GRD_MAX_ENCODED + 1).b);
    EXPECT_EQ(s.code, GRD_E_LIMIT);
    EXPECT_NE(s.msg.find("bundle descriptor 0: length 1048577"), std::string::npos) << s.msg;
    s = DoSplit(W().u32(GRD_BUNDLE_MAGIC).u32(1).u32(2).u32(4).u32(0).u32(0xfffffff0u).b);
    EXPECT_EQ(s.code, GRD_E_LIMIT);
    s = DoSplit(W().u32(GRD_BUNDLE_MAGIC).u32(1).u32(1).u32(8).u32(0).b);
    EXPECT_EQ(s.code, GRD_E_TRUNCATED);
    s = DoSplit(Encode(Dmmul().get()));
    EXPECT_EQ(s.code, GRD_E_MAGIC);
    EXPECT_NE(s.msg.find("single descriptor"), std::string::npos);
    // Splitting never checks the elements: decoding them does.
    Split junk = DoSplit(Bundle({Bytes{1, 2, 3}}));
    ASSERT_EQ(junk.code, GRD_OK);
    EXPECT_EQ(Decode(Bytes{1, 2, 3}).code, GRD_E_TRUNCATED);
}

TEST(BundleTest, EncodeLimits) {
    uint8_t *out = nullptr;
    size_t len = 0;
    grd_error err{};
    const uint8_t byte = 0;
    const uint8_t *p = &byte;
    size_t big = GRD_MAX_ENCODED + 1;
    EXPECT_EQ(grd_bundle_encode(&p, &big, 1, &out, &len, &err), GRD_E_LIMIT);
    EXPECT_EQ(out, nullptr);
    EXPECT_EQ(grd_bundle_encode(&p, &big, GRD_MAX_BUNDLE + 1, &out, &len, &err), GRD_E_LIMIT);
    EXPECT_EQ(grd_bundle_encode(nullptr, nullptr, 1, &out, &len, &err), GRD_E_ARG);
    EXPECT_EQ(grd_bundle_encode(&p, &big, 1, nullptr, &len, &err), GRD_E_ARG);
}

} // namespace
