/* msg_fuzz.c: fuzz target for the protocol's message decoders: record-marking framing
 * (grw_reader), CALL decoding on the server side (grm_read_head / grm_read_bulk against
 * the descriptors of stubs/test.idl, so every parameter kind is reachable) and RESULT
 * decoding on the client side. The input is fed through a socket, as the server reads
 * it. Limits are small so the fuzzer explores the checks rather than the allocator. */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "grd_desc.h"
#include "gridrpc_stub.h"
#include "grm_marshal.h"
#include "grw_wire.h"

extern const gridrpc_stub_module gridrpc_module_test;

#define MAX_INPUT 60000

static grd_desc *descs[64];
static unsigned ndescs;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void load_descriptors(void) {
    if (ndescs) return;
    for (unsigned i = 0; i < gridrpc_module_test.nfunctions && i < 64; i++) {
        grd_error ge;
        const gridrpc_stub_function *f = &gridrpc_module_test.functions[i];
        if (grd_decode(f->descriptor, f->descriptor_len, &descs[ndescs], &ge) == GRD_OK) ndescs++;
    }
}

static const grd_desc *lookup(const char *name) {
    const char *slash = strchr(name, '/');
    const char *fn = slash ? slash + 1 : name;
    for (unsigned i = 0; i < ndescs; i++)
        if (strcmp(descs[i]->name, fn) == 0) return descs[i];
    return NULL;
}

/* Decodes one CALL body as gridrpcd does. */
static int server_call(grw_reader *r, const grw_limits *lim) {
    gr_err e;
    char *name = NULL;
    uint64_t hash;
    int rc = grw_read_string(r, 511, &name, &e);
    if (!rc) rc = grw_read_u64(r, &hash, &e);
    const grd_desc *d = rc ? NULL : lookup(name);
    free(name);
    if (rc) return rc;
    if (!d) return grw_skip(r, &e);
    grm_call *c = malloc(grm_call_size(d->nparams));
    grm_init(c, d, GRM_SERVER_SIDE);
    rc = grm_read_head(r, c, GRM_TO_SERVER, lim, &e);
    if (!rc) rc = grm_read_bulk(r, c, GRM_TO_SERVER, &e);
    if (!rc) rc = grw_end(r, &e);
    grm_release(c);
    free(c);
    return rc;
}

/* Decodes one RESULT body as the client does for test/echo_strings(3, in, out) and
 * test/echo_double(5, in, out). */
static int client_result(grw_reader *r, const grw_limits *lim, int which) {
    gr_err e;
    uint64_t q, t;
    int rc = grw_read_u64(r, &q, &e);
    if (!rc) rc = grw_read_u64(r, &t, &e);
    if (rc) return rc;
    const grd_desc *d = lookup(which ? "echo_strings" : "echo_double");
    if (!d) return grw_skip(r, &e);
    grm_call *c = malloc(grm_call_size(d->nparams));
    grm_init(c, d, GRM_CLIENT_SIDE);
    int n = which ? 3 : 5;
    double din[5] = {0}, dout[5] = {0};
    char *sin[3] = {"a", "b", "c"}, *sout[3] = {NULL, NULL, NULL};
    c->sl[0].val.i = n;
    c->ptr[1] = which ? (void *)sin : (void *)din;
    c->ptr[2] = which ? (void *)sout : (void *)dout;
    rc = grm_prepare(c, lim, &e);
    if (!rc) rc = grm_read_head(r, c, GRM_TO_CLIENT, lim, &e);
    if (!rc) rc = grm_read_bulk(r, c, GRM_TO_CLIENT, &e);
    if (!rc) rc = grw_end(r, &e);
    for (int i = 0; i < 3; i++)
        free(sout[i]);
    free(c);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > MAX_INPUT) return 0;
    load_descriptors();
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return 0;
    int big = 1 << 20;
    setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
    setsockopt(sv[0], SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    size_t off = 0;
    while (off < size) {
        ssize_t k = write(sv[1], data + off, size - off);
        if (k <= 0) break;
        off += (size_t)k;
    }
    close(sv[1]);
    if (off < size) {
        close(sv[0]);
        return 0;
    }
    grw_limits lim = {1 << 16, 1 << 14, 1 << 14};
    grw_reader *r = malloc(sizeof *r);
    grw_reader_init(r, sv[0], lim.max_message);
    for (int m = 0; m < 8; m++) {
        grw_header h;
        gr_err e;
        if (grw_read_header(r, &h, &e)) break;
        int rc;
        if (h.type == GRW_CALL)
            rc = server_call(r, &lim);
        else if (h.type == GRW_RESULT)
            rc = client_result(r, &lim, (int)(h.request_id & 1));
        else
            rc = grw_skip(r, &e);
        if (rc) break;
    }
    free(r);
    close(sv[0]);
    return 0;
}
