/* diag.c: a client in the style of Ninf-G's diag programs (grpc.h only, handles from a
 * Ninf-G client.conf) for issue 10's IDL and server items 1-4, one item per run:
 *   diag CONFIG strings|cancel|nulls|files [DIR]
 * DIR (files) is a folder of the client's for the files it receives. Prints "OK", or
 * one "FAILED: ..." line per problem (exit status 1); 2 when it cannot start. */
#include "diag_util.h"

#include <sys/stat.h>
#include <time.h>

/* Item 1: OUT string o[] is one out string. */
static void strings(void) {
    grpc_function_handle_t h;
    char *o = NULL, *io;
    handle(&h, "strings/string_out");
    if (call_ok(grpc_call(&h, "abc", &o), "string_out")) {
        expect(o && strcmp(o, "got abc") == 0, "string_out returns 'got abc'");
        free(o);
    }
    grpc_function_handle_destruct(&h);
    handle(&h, "strings/string_literal");
    o = NULL;
    if (call_ok(grpc_call(&h, &o), "string_literal")) {
        expect(o && strcmp(o, "literal") == 0, "string_literal returns 'literal'");
        free(o);
    }
    grpc_function_handle_destruct(&h);
    handle(&h, "strings/string_inout");
    io = "mixed Case";
    if (call_ok(grpc_call(&h, &io), "string_inout")) {
        expect(io && strcmp(io, "MIXED CASE") == 0, "string_inout upper-cases its string");
        free(io);
    }
    grpc_function_handle_destruct(&h);
    /* The manual's samples write one value as 'OUT double result[]'. */
    double x = 1.25, r = 0;
    int count = 4;
    handle(&h, "strings/one_value");
    if (call_ok(grpc_call(&h, &x, &r, &count), "one_value")) {
        expect(r == 2.5, "'OUT double result[]' returns one value");
        expect(count == 5, "'INOUT int count[]' goes both ways");
    }
    grpc_function_handle_destruct(&h);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Item 2: a running call sees its cancel through grpc_is_canceled_np. */
static void cancel(void) {
    grpc_function_handle_t h, q;
    grpc_sessionid_t id;
    int canceled = -1, seen = 0;
    struct timespec pause = {0, 300000000}, poll = {0, 20000000};
    double t0;
    handle(&h, "cancel/wait_cancel");
    handle(&q, "cancel/cancels_seen");
    if (!call_ok(grpc_call(&q, &seen), "cancels_seen") || seen != 0) expect(0, "no cancel seen before");
    if (!call_ok(grpc_call_async(&h, &id, 10.0, &canceled), "wait_cancel")) return;
    nanosleep(&pause, NULL); /* the call is running on the server now */
    t0 = now();
    expect(grpc_cancel(id) == GRPC_NO_ERROR, "grpc_cancel");
    grpc_wait(id);
    while (now() - t0 < 5.0) {
        if (!call_ok(grpc_call(&q, &seen), "cancels_seen")) break;
        if (seen) break;
        nanosleep(&poll, NULL);
    }
    expect(seen == 1, "the body saw grpc_is_canceled_np return 1 (with GRPC_NO_ERROR) within 5 s");
    expect(canceled == -1, "the cancelled call's OUT argument is left alone");
    /* An uncancelled call runs to its end and sees nothing. */
    canceled = -1;
    if (call_ok(grpc_call(&h, 0.05, &canceled), "wait_cancel 0.05 s"))
        expect(canceled == 0, "no cancel seen");
    grpc_function_handle_destruct(&h);
    grpc_function_handle_destruct(&q);
}

/* Item 3: zero-length arrays and NULL strings and file names arrive as NULL. */
static void nulls(void) {
    grpc_function_handle_t h;
    int mask = 0, n = 0, k;
    char buf[160];
    char *io = NULL;
    handle(&h, "nulls/null_arrays");
    /* The client's buffers for zero-length arrays may be NULL too (COMPAT.md). */
    if (call_ok(grpc_call(&h, n, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                          NULL, NULL, NULL, NULL, &mask),
                "null_arrays")) {
        for (k = 0; k < 17; k++) {
            snprintf(buf, sizeof buf, "zero-length array %d (of 17, in IDL order) reaches the body as NULL",
                     k + 1);
            expect(mask & (1 << k), buf);
        }
    }
    grpc_function_handle_destruct(&h);
    handle(&h, "nulls/null_scalars");
    mask = 0;
    if (call_ok(grpc_call(&h, NULL, NULL, &io, &mask), "null_scalars")) {
        expect(mask & 1, "a NULL IN string reaches the body as NULL");
        expect(mask & 2, "a NULL IN filename reaches the body as NULL");
        expect(mask & 4, "a NULL INOUT string reaches the body as NULL");
        expect(io == NULL, "... and comes back NULL");
    }
    mask = -1;
    char x[] = "x";
    io = x;
    if (call_ok(grpc_call(&h, "", "/dev/null", &io, &mask), "null_scalars with values"))
        expect(mask == 0, "\"\", an empty file and a string are not NULL");
    if (io != x) free(io); /* the INOUT string comes back in a buffer the library made */
    grpc_function_handle_destruct(&h);
}

/* Reads FILE whole into BUF; returns its length, or -1. */
static long slurp(const char *file, char *buf, size_t n) {
    FILE *f = fopen(file, "r");
    size_t got;
    if (!f) return -1;
    got = fread(buf, 1, n - 1, f);
    buf[got] = 0;
    fclose(f);
    return (long)got;
}

static void spit(const char *file, const char *text) {
    FILE *f = fopen(file, "w");
    assert(f);
    fputs(text, f);
    fclose(f);
}

/* 1 when the last error's message holds S. */
static int last_says(const char *s) {
    const char *m = grpc_last_error_np();
    return m && strstr(m, s);
}

/* Item 4: OUT file names, scalar and arrays, land at the client's paths. */
static void files(const char *dir) {
    grpc_function_handle_t h;
    char one[512], p0[512], p1[512], p2[512], want[64], got[256], msg[700];
    char *many[3] = {p0, p1, p2}, *inv[3] = {p0, p1, p2}, *scratch = NULL, *why = NULL, *joined = NULL;
    struct stat st;
    struct timespec tick = {0, 20000000};
    int k;
    snprintf(one, sizeof one, "%s/one.txt", dir);
    for (k = 0; k < 3; k++)
        snprintf(many[k], 512, "%s/many%d.txt", dir, k);
    /* One of them exists with longer contents: it is replaced, not merged. */
    spit(p1, "old contents, longer than the new ones\n");
    handle(&h, "files/file_out");
    if (call_ok(grpc_call(&h, 3, "tag", one, many, &scratch, &why), "file_out")) {
        snprintf(msg, sizeof msg, "the body got fresh files in one folder (it says: %s)", why ? why : "");
        expect(why == NULL, msg);
        expect(slurp(one, got, sizeof got) >= 0 && strcmp(got, "tag\n") == 0, "the scalar OUT file arrived");
        for (k = 0; k < 3; k++) {
            snprintf(want, sizeof want, "tag %d\n", k);
            snprintf(msg, sizeof msg, "OUT file %d of the array arrived at %s", k + 1, many[k]);
            expect(slurp(many[k], got, sizeof got) >= 0 && strcmp(got, want) == 0, msg);
        }
        expect(scratch && *scratch == '/', "the body's paths are absolute");
        /* The server removes it once the result is sent: give it a moment. */
        for (k = 0; k < 150 && scratch && stat(scratch, &st) == 0; k++)
            nanosleep(&tick, NULL);
        snprintf(msg, sizeof msg, "the call's scratch folder %s is gone after the call",
                 scratch ? scratch : "?");
        expect(scratch && stat(scratch, &st) != 0, msg);
        expect(!scratch || strncmp(scratch, dir, strlen(dir)) != 0, "the scratch folder is the server's");
        free(scratch);
        free(why);
    }
    grpc_function_handle_destruct(&h);

    /* IN file name arrays carry the files, not the client's paths. */
    handle(&h, "files/file_in");
    spit(p0, "a");
    spit(p1, "bc");
    spit(p2, "");
    if (call_ok(grpc_call(&h, 3, inv, &joined), "file_in")) {
        expect(joined && strcmp(joined, "abc") == 0, "IN file names of an array arrive as files");
        free(joined);
    }
    grpc_function_handle_destruct(&h);

    handle(&h, "files/file_inout");
    if (call_ok(grpc_call(&h, 3, inv), "file_inout")) {
        expect(slurp(p0, got, sizeof got) >= 0 && strcmp(got, "a+0") == 0, "INOUT file 1 came back changed");
        expect(slurp(p1, got, sizeof got) >= 0 && strcmp(got, "bc+1") == 0, "INOUT file 2 came back changed");
        expect(slurp(p2, got, sizeof got) >= 0 && strcmp(got, "+2") == 0, "INOUT file 3 came back changed");
    }
    /* An INOUT file named "" could not be written back: refused before the call runs. */
    char *blank[1] = {""};
    spit(p0, "a");
    expect(grpc_call(&h, 1, blank) != GRPC_NO_ERROR && last_says("element 0 is \"\""),
           "an INOUT file named \"\" is refused, naming the element");
    grpc_function_handle_destruct(&h);

    /* "" is an empty file, NULL no file (Ninf-G). */
    long size = -3;
    handle(&h, "files/file_size");
    if (call_ok(grpc_call(&h, "", &size), "file_size(\"\")"))
        expect(size == 0, "an IN file named \"\" reaches the body as the path of an empty file");
    size = -3;
    if (call_ok(grpc_call(&h, NULL, &size), "file_size(NULL)"))
        expect(size == -1, "an IN file NULL reaches the body as NULL");
    grpc_function_handle_destruct(&h);

    /* An OUT file named "" has nowhere to be written: refused before the call runs,
     * with a message that says to pass NULL to discard it. */
    handle(&h, "files/file_out");
    expect(grpc_call(&h, 0, "tag", "", NULL, &scratch, &why) != GRPC_NO_ERROR &&
               last_says("pass NULL to discard it"),
           "an OUT file named \"\" is refused");
    grpc_function_handle_destruct(&h);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: diag CONFIG strings|cancel|nulls|files [DIR]\n");
        return 2;
    }
    if (grpc_initialize(argv[1]) != GRPC_NO_ERROR) {
        grpc_perror_np("grpc_initialize");
        return 2;
    }
    if (strcmp(argv[2], "strings") == 0)
        strings();
    else if (strcmp(argv[2], "cancel") == 0)
        cancel();
    else if (strcmp(argv[2], "nulls") == 0)
        nulls();
    else if (strcmp(argv[2], "files") == 0 && argc > 3)
        files(argv[3]);
    else {
        fprintf(stderr, "diag: unknown test '%s'\n", argv[2]);
        return 2;
    }
    grpc_finalize();
    if (!diag_failed) printf("OK\n");
    return diag_failed;
}
