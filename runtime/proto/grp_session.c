/* grp_session.c: the client's session secret and the server's owner names (grp_session.h). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "grp_auth.h"
#include "grp_session.h"

static int parse_hex(const char *s, uint8_t out[GRP_SESSION_BYTES]) {
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' '))
        n--;
    if (n != 2 * GRP_SESSION_BYTES) return -1;
    for (size_t i = 0; i < GRP_SESSION_BYTES; i++) {
        unsigned v;
        if (sscanf(s + 2 * i, "%2x", &v) != 1 || !strchr("0123456789abcdefABCDEF", s[2 * i]) ||
            !strchr("0123456789abcdefABCDEF", s[2 * i + 1]))
            return -1;
        out[i] = (uint8_t)v;
    }
    return 0;
}

static void to_hex(const uint8_t *b, size_t n, char *out) {
    for (size_t i = 0; i < n; i++)
        snprintf(out + 2 * i, 3, "%02x", b[i]);
}

/* Reads the secret in PATH. 1 if there is no such file, 0 with OUT filled, else an
 * error. */
static int read_secret(const char *path, uint8_t out[GRP_SESSION_BYTES], gr_err *e) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) return 1;
        return gr_seterr(e, GRID_ERR_CONFIG, "cannot read the session file %s: %s", path, strerror(errno));
    }
    char buf[80] = "";
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    buf[n > 0 ? n : 0] = '\0';
    if (parse_hex(buf, out) != 0)
        return gr_seterr(e, GRID_ERR_CONFIG,
                         "the session file %s does not hold 32 hex digits: remove it (a new one is "
                         "made) or set GRIDRPC_SESSION",
                         path);
    return GRID_OK;
}

/* Reads the secret in PATH, or makes the file with a fresh one. The new file is written
 * whole under a name of its own and then linked to PATH, which fails if PATH exists:
 * of processes starting at once (20 clients of one user) one wins and the others read
 * its file, never a half-written one. */
static int from_file(const char *path, uint8_t out[GRP_SESSION_BYTES], gr_err *e) {
    int rc = read_secret(path, out, e);
    if (rc != 1) return rc;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = '\0';
        mkdir(dir, 0700);
    }
    uint8_t fresh[GRP_SESSION_BYTES], tag[8];
    if ((rc = grp_auth_random(fresh, sizeof fresh, e)) || (rc = grp_auth_random(tag, sizeof tag, e)))
        return rc;
    char tmp[4200], hex[2 * GRP_SESSION_BYTES + 2], th[2 * sizeof tag + 1];
    to_hex(tag, sizeof tag, th);
    snprintf(tmp, sizeof tmp, "%s.%ld.%s", path, (long)getpid(), th);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return gr_seterr(e, GRID_ERR_CONFIG, "cannot create the session file %s: %s", path, strerror(errno));
    to_hex(fresh, sizeof fresh, hex);
    strcat(hex, "\n");
    int bad = write(fd, hex, strlen(hex)) != (ssize_t)strlen(hex) || fsync(fd) != 0;
    int err = errno;
    close(fd);
    if (bad) {
        unlink(tmp);
        return gr_seterr(e, GRID_ERR_CONFIG, "cannot write the session file %s: %s", path, strerror(err));
    }
    int linked = link(tmp, path) == 0;
    err = errno;
    unlink(tmp);
    if (linked) {
        memcpy(out, fresh, sizeof fresh);
        return GRID_OK;
    }
    if (err != EEXIST)
        return gr_seterr(e, GRID_ERR_CONFIG, "cannot create the session file %s: %s", path, strerror(err));
    rc = read_secret(path, out, e); /* another process made it first */
    return rc == 1 ? gr_seterr(e, GRID_ERR_CONFIG, "the session file %s vanished while being made", path)
                   : rc;
}

static struct {
    pthread_once_t once;
    int rc;
    gr_err e;
    uint8_t secret[GRP_SESSION_BYTES];
} sess = {PTHREAD_ONCE_INIT, 0, {0, ""}, {0}};

static void load(void) {
    gr_clearerr(&sess.e);
    const char *env = getenv("GRIDRPC_SESSION");
    if (env && *env) {
        if (parse_hex(env, sess.secret) != 0)
            sess.rc = gr_seterr(&sess.e, GRID_ERR_CONFIG,
                                "GRIDRPC_SESSION must be 32 hex digits (128 random bits, e.g. from "
                                "'od -An -tx1 -N16 /dev/urandom | tr -d \" \\n\"')");
        return;
    }
    const char *file = getenv("GRIDRPC_SESSION_FILE"), *home = getenv("HOME");
    char path[4096];
    if (file && *file)
        snprintf(path, sizeof path, "%s", file);
    else if (home && *home == '/')
        snprintf(path, sizeof path, "%s/.gridrpc/session", home);
    else {
        sess.rc = grp_auth_random(sess.secret, GRP_SESSION_BYTES, &sess.e);
        return;
    }
    sess.rc = from_file(path, sess.secret, &sess.e);
}

int grp_session_secret(uint8_t out[GRP_SESSION_BYTES], gr_err *e) {
    pthread_once(&sess.once, load);
    if (sess.rc) {
        *e = sess.e;
        return sess.rc;
    }
    memcpy(out, sess.secret, GRP_SESSION_BYTES);
    return GRID_OK;
}

void grp_owner_of(const char *key_id, const uint8_t *secret, uint32_t len, char out[GRP_OWNER_MAX + 1]) {
    out[0] = '\0';
    if (key_id && key_id[0]) {
        snprintf(out, GRP_OWNER_MAX + 1, "k:%s", key_id);
        return;
    }
    if (!len) return;
    /* A hash, so that neither the log nor the job folder holds what a client presents. */
    static const char tag[] = "gridrpc-session-v1";
    uint8_t md[EVP_MAX_MD_SIZE];
    unsigned mdlen = 0;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (!ctx || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1 ||
        EVP_DigestUpdate(ctx, tag, sizeof tag - 1) != 1 || EVP_DigestUpdate(ctx, secret, len) != 1 ||
        EVP_DigestFinal_ex(ctx, md, &mdlen) != 1 || mdlen < 16) {
        EVP_MD_CTX_free(ctx);
        return; /* "": owns nothing, may make nothing that is kept */
    }
    EVP_MD_CTX_free(ctx);
    out[0] = 's';
    out[1] = ':';
    to_hex(md, 16, out + 2);
}
