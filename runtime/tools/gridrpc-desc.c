/* gridrpc-desc: prints interface descriptors (.gdesc files written by idlc, or bytes
 * saved from a server) in the readable form the golden tests use, so a developer can
 * see what a client will be told about a function.
 */
#include "grd_desc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROGRAM "gridrpc-desc"
#define VERSION_LINE "gridrpc-desc (GridRPC) 0.1.0"
#define MAX_FILE ((size_t)64 << 20)

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: " PROGRAM " [--help] [--version] FILE...\n"
            "Print GridRPC interface descriptors in readable form.\n"
            "\n"
            "Each FILE holds one encoded descriptor (magic \"GRDS\") or a module bundle\n"
            "(magic \"GRDM\", a .gdesc file written by idlc). Every descriptor is checked\n"
            "as a client would check it, then printed. Files over 64 MiB are refused.\n"
            "\n"
            "  --help     show this help and exit\n"
            "  --version  show the version and exit\n"
            "\n"
            "Exit status: 0 when every file was printed, 1 when any could not be read or\n"
            "decoded (the reason goes to standard error as FILE: message), 2 on a usage\n"
            "error.\n");
}

/* Reads PATH whole into a malloc'd buffer; on failure prints "PATH: reason". */
static int read_file(const char *path, uint8_t **out, size_t *outlen)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "%s: %s\n", path, strerror(errno));
        return -1;
    }
    size_t cap = 0, len = 0;
    uint8_t *buf = NULL;
    for (;;) {
        if (len == cap) {
            /* One byte past the limit is enough to know a file is too large. */
            if (len > MAX_FILE) {
                fprintf(stderr, "%s: file is larger than the limit of 64 MiB\n", path);
                goto fail;
            }
            size_t ncap = cap ? cap * 2 : 65536;
            if (ncap > MAX_FILE + 1)
                ncap = MAX_FILE + 1;
            uint8_t *nbuf = realloc(buf, ncap);
            if (nbuf == NULL) {
                fprintf(stderr, "%s: out of memory\n", path);
                goto fail;
            }
            buf = nbuf;
            cap = ncap;
        }
        size_t n = fread(buf + len, 1, cap - len, f);
        len += n;
        if (n == 0) {
            if (ferror(f)) {
                fprintf(stderr, "%s: read error: %s\n", path, strerror(errno));
                goto fail;
            }
            break;
        }
    }
    if (len > MAX_FILE) {
        fprintf(stderr, "%s: file is larger than the limit of 64 MiB\n", path);
        goto fail;
    }
    fclose(f);
    *out = buf;
    *outlen = len;
    return 0;
fail:
    free(buf);
    fclose(f);
    return -1;
}

/* Decodes and prints one descriptor; WHERE prefixes errors ("FILE" or "FILE:
 * descriptor 3"). */
static int print_one(const char *where, const uint8_t *buf, size_t len, int *printed)
{
    grd_desc *d;
    grd_error err = {0, ""};
    if (grd_decode(buf, len, &d, &err) != GRD_OK) {
        fprintf(stderr, "%s: %s\n", where, err.msg);
        return -1;
    }
    char *text = grd_dump(d);
    grd_free(d);
    if (text == NULL) {
        fprintf(stderr, "%s: out of memory\n", where);
        return -1;
    }
    if (*printed)
        fputs("\n", stdout);
    fputs(text, stdout);
    free(text);
    *printed = 1;
    return 0;
}

static int print_file(const char *path, int *printed)
{
    uint8_t *buf;
    size_t len;
    if (read_file(path, &buf, &len) != 0)
        return -1;
    int rc = 0;
    if (len >= 4 && memcmp(buf, "GRDM", 4) == 0) {
        uint32_t n;
        size_t *offs, *lens;
        grd_error err = {0, ""};
        if (grd_bundle_split(buf, len, &n, &offs, &lens, &err) != GRD_OK) {
            fprintf(stderr, "%s: %s\n", path, err.msg);
            rc = -1;
        } else {
            for (uint32_t i = 0; i < n; i++) {
                char where[4096 + 32];
                snprintf(where, sizeof where, "%s: descriptor %u", path, i);
                if (print_one(where, buf + offs[i], lens[i], printed) != 0)
                    rc = -1;
            }
            free(offs);
            free(lens);
        }
    } else {
        rc = print_one(path, buf, len, printed);
    }
    free(buf);
    return rc;
}

int main(int argc, char **argv)
{
    int first = 1;
    for (; first < argc; first++) {
        const char *a = argv[first];
        if (strcmp(a, "--") == 0) {
            first++;
            break;
        }
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        }
        if (strcmp(a, "--version") == 0) {
            puts(VERSION_LINE);
            return 0;
        }
        if (a[0] != '-' || a[1] == '\0')
            break;
        fprintf(stderr, PROGRAM ": unknown option '%s'\n", a);
        usage(stderr);
        return 2;
    }
    if (first >= argc) {
        fprintf(stderr, PROGRAM ": no FILE given\n");
        usage(stderr);
        return 2;
    }
    int status = 0, printed = 0;
    for (int i = first; i < argc; i++)
        if (print_file(argv[i], &printed) != 0)
            status = 1;
    if (fflush(stdout) != 0) {
        fprintf(stderr, PROGRAM ": error writing output: %s\n", strerror(errno));
        status = 1;
    }
    return status;
}
