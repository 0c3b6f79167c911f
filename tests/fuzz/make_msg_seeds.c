/* make_msg_seeds.c: writes the seed corpus of msg_fuzz (tests/fuzz/corpus/msg): valid
 * CALL messages for several functions of stubs/test.idl and valid RESULT messages, as
 * the real client and server encode them. Run from the build tree:
 *     make-msg-seeds DIR */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gridrpc_stub.h"
#include "grm_marshal.h"
#include "grp_meta.h"
#include "grp_proto.h"
#include "grw_wire.h"

extern const gridrpc_stub_module gridrpc_module_test;

static const grd_desc *find(const char *name) {
    for (unsigned i = 0; i < gridrpc_module_test.nfunctions; i++)
        if (strcmp(gridrpc_module_test.functions[i].name, name) == 0) {
            grd_desc *d;
            grd_error ge;
            const gridrpc_stub_function *f = &gridrpc_module_test.functions[i];
            if (grd_decode(f->descriptor, f->descriptor_len, &d, &ge) == GRD_OK) return d;
        }
    fprintf(stderr, "no function %s\n", name);
    exit(1);
}

/* Encodes a message into FILE: CALL (result = 0), RESULT (1), OBJ_INVOKE (2),
 * CALLBACK (3) or CALLBACK_RESULT (4) of fn with varargs. */
static void seed(const char *dir, const char *file, const char *fn, int result, uint64_t id, ...) {
    const grd_desc *d = find(fn);
    int sv[2];
    socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    int big = 1 << 20;
    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
    grm_call *c = malloc(grm_call_size(d->nparams));
    va_list ap;
    va_start(ap, id);
    gr_err e;
    grw_limits lim;
    grp_limits_default(&lim);
    if (grm_from_va(c, d, ap, &lim, &e)) {
        fprintf(stderr, "%s: %s\n", fn, e.msg);
        exit(1);
    }
    va_end(ap);
    grw_writer *w = malloc(sizeof *w);
    grw_writer_init(w, sv[0]);
    int rc;
    if (result == 3) {
        /* A callback's arguments (echo_double's descriptor standing for the callback's). */
        rc = grp_write_callback(w, id, 3, 1, c, &lim, &e);
    } else if (result == 4) {
        rc = grp_write_callback_result(w, id, 3, 1, GRID_OK, NULL, c, &lim, &e);
    } else if (result == 1) {
        grp_result_times t = {1, 2};
        rc = grp_write_result(w, id, &t, c, &lim, &e);
    } else if (result == 2) {
        /* OBJ_INVOKE of a method named after FN (msg_fuzz decodes it with FN's descriptor). */
        rc = grp_write_obj_invoke(w, id, (grp_object_id){0x0123456789abcdefull, 0xfedcba9876543210ull}, fn,
                                  d->hash, c, &lim, &e);
    } else {
        rc = grp_write_call(w, id, fn, d->hash, c, &lim, &e);
    }
    close(sv[0]);
    char path[4096], buf[1 << 16];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *f = fopen(path, "wb");
    ssize_t k;
    while ((k = read(sv[1], buf, sizeof buf)) > 0)
        fwrite(buf, 1, (size_t)k, f);
    fclose(f);
    close(sv[1]);
    free(w);
    free(c);
    if (rc) {
        fprintf(stderr, "%s: encoding failed\n", fn);
        exit(1);
    }
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: make-msg-seeds DIR\n");
        return 2;
    }
    double x[5] = {1, 2, 3, 4, 5}, y[5];
    const char *s3[3] = {"alpha", "", "gamma"};
    char *o3[3];
    double a[4 * 5];
    for (int i = 0; i < 20; i++)
        a[i] = i;
    seed(argv[1], "call-echo-double", "echo_double", 0, 1, 5, x, y);
    seed(argv[1], "call-echo-strings", "echo_strings", 0, 2, 3, s3, o3);
    seed(argv[1], "call-block2d", "block2d", 0, 3, 4, 5, 1, 3, 2, 4, a);
    seed(argv[1], "call-strided", "strided", 0, 4, 5, 2, x);
    int k = 1;
    double v = 2;
    char *s = "text";
    seed(argv[1], "call-inout-scalars", "inout_scalars", 0, 5, &k, &v, &s);
    scomplex sc = {1, 2};
    dcomplex dc = {3, 4};
    char co;
    short so;
    int io;
    long lo;
    long long llo;
    float fo;
    double dout;
    scomplex sco;
    dcomplex dco;
    unsigned uo;
    seed(argv[1], "call-echo-scalars", "echo_scalars", 0, 6, 'c', 2, 3, 4L, 5LL, 6.0, 7.0, sc, dc, 8u, &co,
         &so, &io, &lo, &llo, &fo, &dout, &sco, &dco, &uo);
    seed(argv[1], "result-echo-double", "echo_double", 1, 8, 5, x, x);
    char *r3[3] = {"x", "yy", "zzz"};
    seed(argv[1], "result-echo-strings", "echo_strings", 1, 9, 3, s3, r3);
    seed(argv[1], "obj-invoke-echo-double", "echo_double", 2, 10, 5, x, y);
    seed(argv[1], "obj-invoke-echo-strings", "echo_strings", 2, 11, 3, s3, o3);
    seed(argv[1], "callback", "echo_double", 3, 12, 5, x, y);
    seed(argv[1], "callback-result", "echo_double", 4, 13, 5, x, x);

    /* File arguments: their bytes travel in the head (request id 14: msg_fuzz decodes a
     * RESULT with an id of 2 modulo 4 as file_upper's). */
    char in[] = "/tmp/gridrpc-seed-in-XXXXXX";
    int fd = mkstemp(in);
    if (fd < 0 || write(fd, "some text\n", 10) != 10) {
        perror(in);
        return 1;
    }
    close(fd);
    seed(argv[1], "call-file-upper", "file_upper", 0, 14, in, in);
    seed(argv[1], "result-file-upper", "file_upper", 1, 14, in, in);
    unlink(in);

    /* PROBE_OK with 16 bytes of payload. */
    int sv[2];
    socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    grw_writer *w = malloc(sizeof *w);
    grw_writer_init(w, sv[0]);
    gr_err e;
    int rc = grp_write_probe_ok(w, 15, 16, &e);
    close(sv[0]);
    char path[4096], buf[4096];
    snprintf(path, sizeof path, "%s/probe_ok", argv[1]);
    FILE *f = fopen(path, "wb");
    ssize_t got;
    while (f && (got = read(sv[1], buf, sizeof buf)) > 0)
        fwrite(buf, 1, (size_t)got, f);
    if (f) fclose(f);
    close(sv[1]);
    free(w);
    return rc || !f;
}
