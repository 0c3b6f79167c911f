// proto_object_test.cpp: the messages of remote objects (OBJ_CREATE, OBJ_CREATED,
// OBJ_INVOKE, OBJ_DESTROY, OBJ_DESTROYED; runtime/proto/grp_object.c) over a
// socketpair: round trips, every bounded field at and one past its limit, the values a
// decoder refuses (no class, no method, object id 0 in OBJ_CREATED), trailing bytes, and
// the bytes of each message pinned by tests/golden-msg/.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

extern "C" {
#include "gridrpc_stub.h"
#include "grp_proto.h"
extern const gridrpc_stub_module gridrpc_module_test;
}

#include "proto_fixture.h"

// For EXPECT_EQ on ids (found by argument-dependent lookup: the global namespace).
static bool operator==(const grp_object_id &a, const grp_object_id &b) {
    return grp_object_id_eq(a, b);
}

namespace {

using proto_fixture::golden;
using proto_fixture::Pair;

const grp_object_id kObj = {0x0123456789abcdefull, 0xfedcba9876543210ull};

const grd_desc *echo_double() {
    static grd_desc *d = nullptr;
    for (unsigned i = 0; !d && i < gridrpc_module_test.nfunctions; i++) {
        const gridrpc_stub_function *f = &gridrpc_module_test.functions[i];
        grd_error ge;
        if (strcmp(f->name, "echo_double") == 0) grd_decode(f->descriptor, f->descriptor_len, &d, &ge);
    }
    return d;
}

TEST(ProtoObject, CreateAndCreatedRoundTrip) {
    Pair p;
    gr_err e;
    char cls[GRP_MAX_FUNCTION_NAME + 1];
    ASSERT_EQ(GRID_OK, grp_write_obj_create(p.w, 5, "counter/counter", &e)) << e.msg;
    p.header(GRP_OBJ_CREATE, 5);
    ASSERT_EQ(GRID_OK, grp_read_obj_create(p.r, cls, &e)) << e.msg;
    EXPECT_STREQ("counter/counter", cls);
    ASSERT_EQ(GRID_OK, grp_write_obj_created(p.w, 5, kObj, "counter/counter", &e)) << e.msg;
    p.header(GRP_OBJ_CREATED, 5);
    grp_object_id id = {0, 0};
    ASSERT_EQ(GRID_OK, grp_read_obj_created(p.r, &id, cls, &e)) << e.msg;
    EXPECT_EQ(kObj, id);
    EXPECT_STREQ("counter/counter", cls);
}

TEST(ProtoObject, InvokeCarriesACallsArgumentsAndIsAnsweredByResult) {
    const grd_desc *d = echo_double();
    ASSERT_NE(nullptr, d);
    Pair p;
    gr_err e;
    grw_limits lim;
    grp_limits_default(&lim);
    double in[3] = {1.0, -2.5, 1e300}, out[3] = {0, 0, 0};
    int n = 3;
    void *argv[3] = {&n, in, out};
    grm_call *c = static_cast<grm_call *>(malloc(grm_call_size(d->nparams)));
    ASSERT_EQ(GRID_OK, grm_from_argv(c, d, argv, &lim, &e)) << e.msg;
    ASSERT_EQ(GRID_OK, grp_write_obj_invoke(p.w, 9, kObj, "scale", d->hash, c, &lim, &e)) << e.msg;
    p.header(GRP_OBJ_INVOKE, 9);
    grp_invoke_target t;
    ASSERT_EQ(GRID_OK, grp_read_obj_invoke_target(p.r, &t, &e)) << e.msg;
    EXPECT_EQ(kObj, t.object);
    EXPECT_STREQ("scale", t.method);
    EXPECT_EQ(d->hash, t.hash);
    grm_call *s = static_cast<grm_call *>(malloc(grm_call_size(d->nparams)));
    grm_init(s, d, GRM_SERVER_SIDE);
    ASSERT_EQ(GRID_OK, grp_read_call_head(p.r, s, &lim, &e)) << e.msg;
    ASSERT_EQ(GRID_OK, grp_read_call_bulk(p.r, s, &e)) << e.msg;
    EXPECT_EQ(3, *static_cast<int *>(s->ptr[0]));
    EXPECT_EQ(-2.5, static_cast<double *>(s->ptr[1])[1]);
    grm_release(s);
    free(s);
    free(c);
}

TEST(ProtoObject, DestroyRoundTripAndEmptyReply) {
    Pair p;
    gr_err e;
    grp_object_id id = {0, 0};
    ASSERT_EQ(GRID_OK, grp_write_obj_destroy(p.w, 3, kObj, &e)) << e.msg;
    p.header(GRP_OBJ_DESTROY, 3);
    ASSERT_EQ(GRID_OK, grp_read_obj_destroy(p.r, &id, &e)) << e.msg;
    EXPECT_EQ(kObj, id);
    ASSERT_EQ(GRID_OK, grp_write_empty(p.w, GRP_OBJ_DESTROYED, 3, &e)) << e.msg;
    p.header(GRP_OBJ_DESTROYED, 3);
    EXPECT_EQ(GRID_OK, grp_read_empty(p.r, &e)) << e.msg;
}

// A message of TYPE whose body is written by BODY; returns what DECODE says of it.
template <typename B, typename D> int decode_of(uint32_t type, B body, D decode, gr_err *e) {
    Pair p;
    grw_header h;
    grw_begin(p.w, type, 0, 1, e);
    body(p.w, e);
    grw_finish(p.w, e);
    if (grp_read_header(p.r, &h, e)) return -1;
    return decode(p.r, e);
}

TEST(ProtoObject, FieldsAtAndOnePastTheirLimits) {
    gr_err e;
    auto create = [](grw_reader *r, gr_err *le) {
        char cls[GRP_MAX_FUNCTION_NAME + 1];
        return grp_read_obj_create(r, cls, le);
    };
    auto invoke = [](grw_reader *r, gr_err *le) {
        grp_invoke_target t;
        return grp_read_obj_invoke_target(r, &t, le);
    };
    for (size_t n : {size_t(GRP_MAX_FUNCTION_NAME), size_t(GRP_MAX_FUNCTION_NAME) + 1}) {
        std::string s(n, 'c');
        int rc = decode_of(
            GRP_OBJ_CREATE, [&](grw_writer *w, gr_err *le) { grw_write_string(w, s.c_str(), le); }, create,
            &e);
        EXPECT_EQ(n <= GRP_MAX_FUNCTION_NAME ? GRID_OK : GRID_ERR_LIMIT, rc) << n << ": " << e.msg;
    }
    for (size_t n : {size_t(GRP_MAX_METHOD_NAME), size_t(GRP_MAX_METHOD_NAME) + 1}) {
        std::string s(n, 'm');
        int rc = decode_of(
            GRP_OBJ_INVOKE,
            [&](grw_writer *w, gr_err *le) {
                grw_write_u64(w, kObj.hi, le);
                grw_write_u64(w, kObj.lo, le);
                grw_write_string(w, s.c_str(), le);
                grw_write_u64(w, 1, le);
            },
            invoke, &e);
        EXPECT_EQ(n <= GRP_MAX_METHOD_NAME ? GRID_OK : GRID_ERR_LIMIT, rc) << n << ": " << e.msg;
    }
}

TEST(ProtoObject, DecodersRefuseWhatNamesNothing) {
    gr_err e;
    int rc = decode_of(
        GRP_OBJ_CREATE, [](grw_writer *w, gr_err *le) { grw_write_string(w, "", le); },
        [](grw_reader *r, gr_err *le) {
            char cls[GRP_MAX_FUNCTION_NAME + 1];
            return grp_read_obj_create(r, cls, le);
        },
        &e);
    EXPECT_EQ(GRID_ERR_PROTOCOL, rc);
    EXPECT_NE(nullptr, strstr(e.msg, "no class")) << e.msg;
    rc = decode_of(
        GRP_OBJ_INVOKE,
        [](grw_writer *w, gr_err *le) {
            grw_write_u64(w, kObj.hi, le);
            grw_write_u64(w, kObj.lo, le);
            grw_write_string(w, "", le);
            grw_write_u64(w, 1, le);
        },
        [](grw_reader *r, gr_err *le) {
            grp_invoke_target t;
            return grp_read_obj_invoke_target(r, &t, le);
        },
        &e);
    EXPECT_EQ(GRID_ERR_PROTOCOL, rc);
    EXPECT_NE(nullptr, strstr(e.msg, "no method")) << e.msg;
    rc = decode_of(
        GRP_OBJ_CREATED,
        [](grw_writer *w, gr_err *le) {
            grw_write_u64(w, 0, le);
            grw_write_u64(w, 0, le);
            grw_write_string(w, "m/C", le);
        },
        [](grw_reader *r, gr_err *le) {
            grp_object_id id;
            char q[GRP_MAX_FUNCTION_NAME + 1];
            return grp_read_obj_created(r, &id, q, le);
        },
        &e);
    EXPECT_EQ(GRID_ERR_PROTOCOL, rc);
    EXPECT_NE(nullptr, strstr(e.msg, "object id 0")) << e.msg;
    // Trailing bytes after the object id of OBJ_DESTROY.
    rc = decode_of(
        GRP_OBJ_DESTROY,
        [](grw_writer *w, gr_err *le) {
            grw_write_u64(w, kObj.hi, le);
            grw_write_u64(w, kObj.lo, le);
            grw_write_u32(w, 7, le);
        },
        [](grw_reader *r, gr_err *le) {
            grp_object_id id;
            return grp_read_obj_destroy(r, &id, le);
        },
        &e);
    EXPECT_EQ(GRID_ERR_PROTOCOL, rc);
    // An older peer's OBJ_DESTROY: a 64-bit id only.
    rc = decode_of(
        GRP_OBJ_DESTROY, [](grw_writer *w, gr_err *le) { grw_write_u64(w, kObj.hi, le); },
        [](grw_reader *r, gr_err *le) {
            grp_object_id id;
            return grp_read_obj_destroy(r, &id, le);
        },
        &e);
    EXPECT_EQ(GRID_ERR_PROTOCOL, rc);
    // A truncated OBJ_DESTROY.
    rc = decode_of(
        GRP_OBJ_DESTROY, [](grw_writer *w, gr_err *le) { grw_write_u32(w, 7, le); },
        [](grw_reader *r, gr_err *le) {
            grp_object_id id;
            return grp_read_obj_destroy(r, &id, le);
        },
        &e);
    EXPECT_NE(GRID_OK, rc);
}

TEST(ProtoObject, TypesAreKnownAndNamed) {
    for (uint32_t t = GRP_OBJ_CREATE; t <= GRP_OBJ_DESTROYED; t++) {
        EXPECT_EQ(1, grp_known_type(t)) << t;
        EXPECT_EQ(0, strncmp(grp_type_name(t), "OBJ_", 4)) << t;
    }
    EXPECT_EQ(0, grp_known_type(69));
    EXPECT_EQ(0, grp_known_type(65));
    EXPECT_EQ(60u, static_cast<unsigned>(GRP_OBJ_CREATE));
    EXPECT_EQ(64u, static_cast<unsigned>(GRP_OBJ_DESTROYED));
}

TEST(ProtoObjectGolden, EveryMessage) {
    gr_err e;
    const uint64_t kId = 0x0102030405060708ull;
    {
        Pair p;
        grp_write_obj_create(p.w, kId, "counter/counter", &e);
        golden("obj_create", p.raw());
    }
    {
        Pair p;
        grp_write_obj_created(p.w, kId, kObj, "counter/counter", &e);
        golden("obj_created", p.raw());
    }
    {
        const grd_desc *d = echo_double();
        ASSERT_NE(nullptr, d);
        grw_limits lim;
        grp_limits_default(&lim);
        double in[3] = {1.0, -2.5, 1e300}, out[3] = {0, 0, 0};
        int n = 3;
        void *argv[3] = {&n, in, out};
        grm_call *c = static_cast<grm_call *>(malloc(grm_call_size(d->nparams)));
        ASSERT_EQ(GRID_OK, grm_from_argv(c, d, argv, &lim, &e)) << e.msg;
        Pair p;
        // A hash of its own: the golden file must not follow the test module's descriptor.
        grp_write_obj_invoke(p.w, kId, kObj, "scale", 0x1122334455667788ull, c, &lim, &e);
        golden("obj_invoke", p.raw());
        free(c);
    }
    {
        Pair p;
        grp_write_obj_destroy(p.w, kId, kObj, &e);
        golden("obj_destroy", p.raw());
    }
    {
        Pair p;
        grp_write_empty(p.w, GRP_OBJ_DESTROYED, kId, &e);
        golden("obj_destroyed", p.raw());
    }
}

} // namespace
