/* stub_invoke_test.c: calls the functions of a generated stub (tests/idl/stubtest.idl)
 * through its module table exactly as the server will: decode each descriptor, build
 * the argument vector of gridrpc_stub.h, invoke. Proves that the stub emitter passes
 * every kind of parameter the way the bodies expect. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "grd_desc.h"
#include "gridrpc_stub.h"

extern const gridrpc_stub_module gridrpc_module_stubtest;

/* The Calls "C" target of stubtest/scale. */
void stubtest_scale_out(double x, double *y);
void stubtest_scale_out(double x, double *y) {
    *y = -x;
}

static int failures;
#define CHECK(cond)                                                                                          \
    do {                                                                                                     \
        if (!(cond)) {                                                                                       \
            printf("not ok: %s:%d: %s\n", __FILE__, __LINE__, #cond);                                        \
            failures++;                                                                                      \
        }                                                                                                    \
    } while (0)

static const gridrpc_stub_function *find(const char *name) {
    for (unsigned i = 0; i < gridrpc_module_stubtest.nfunctions; i++)
        if (strcmp(gridrpc_module_stubtest.functions[i].name, name) == 0)
            return &gridrpc_module_stubtest.functions[i];
    return NULL;
}

int main(void) {
    const gridrpc_stub_module *m = &gridrpc_module_stubtest;
    CHECK(m->abi == GRIDRPC_STUB_ABI);
    CHECK(strcmp(m->name, "stubtest") == 0);
    CHECK(m->nfunctions == 5);

    /* Every embedded descriptor decodes and names its function. */
    for (unsigned i = 0; i < m->nfunctions; i++) {
        grd_desc *d = NULL;
        grd_error err;
        int rc = grd_decode(m->functions[i].descriptor, m->functions[i].descriptor_len, &d, &err);
        CHECK(rc == GRD_OK);
        if (rc == GRD_OK) {
            CHECK(strcmp(d->name, m->functions[i].name) == 0);
            CHECK(strcmp(d->module, "stubtest") == 0);
            grd_free(d);
        } else {
            printf("# %s: %s\n", m->functions[i].name, err.msg);
        }
    }

    {
        int n = 3;
        double a = 2.0, x[3] = {1, 2, 3}, y[3] = {10, 20, 30};
        void *args[] = {&n, &a, x, y};
        find("axpy")->invoke(args);
        CHECK(y[0] == 12 && y[1] == 24 && y[2] == 36);
    }
    {
        char c = 5;
        short s = 7;
        float f = 1.5f;
        scomplex z = {1.0f, 2.0f};
        int i = 0;
        double d = 0;
        dcomplex w = {0, 0};
        char *msg = NULL, *in = "hello";
        void *args[] = {&c, &s, &f, &z, &i, &d, &w, &msg, &in};
        find("outs")->invoke(args);
        CHECK(i == 12);
        CHECK(d == 3.0);
        CHECK(w.r == 1.0 && w.i == -2.0);
        CHECK(msg == in);
    }
    {
        int n = 4;
        double x[4] = {1, 2, 3, 4}, tmp[4], sum = 0;
        void *args[] = {&n, x, tmp, &sum};
        find("work")->invoke(args);
        CHECK(sum == 30.0);
    }
    {
        double x = 4.0, y = 0;
        void *args[] = {&x, &y};
        find("scale")->invoke(args);
        CHECK(y == -4.0);
    }
    {
        int s = 1;
        void *args[] = {&s};
        find("sleep")->invoke(args);
    }
    if (failures == 0) printf("stub invoke: all checks passed\n");
    return failures ? 1 : 0;
}
