/* grp_keys.c: key files (docs/server.md "Security", docs/security.md): text, '#'
 * comments and blank lines ignored, one key per other line in hex, after the role it
 * may prove ("client", "server", "admin"; none: every role, as before roles existed); up to GRP_AUTH_MAX_KEYS
 * so a key can be rotated (servers accept every key, clients use the first). A key file others can read is
 * refused with the chmod that fixes it: a key that leaks lets anyone in. `gridrpc keygen FILE` writes a new
 * one (grp_keygen). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "grp_auth.h"

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

void grp_keyset_clear(grp_keyset *ks) {
    OPENSSL_cleanse(ks->keys, sizeof ks->keys);
    ks->n = 0;
}

/* Parses one key line S of N bytes (no comment, trimmed) into K. */
static int parse_key(const char *s, size_t n, const char *source, int lineno, grp_key *k, gr_err *e) {
    for (size_t i = 0; i < n; i++)
        if (hexval(s[i]) < 0)
            return gr_seterr(e, GRID_ERR_CONFIG,
                             "%s line %d: '%c' (column %zu) is not a hex digit: a key is written as hex "
                             "digits only (make a new key file with 'gridrpc keygen FILE')",
                             source, lineno, s[i], i + 1);
    if (n % 2)
        return gr_seterr(
            e, GRID_ERR_CONFIG,
            "%s line %d: an odd number of hex digits (%zu): a key is whole bytes, two digits each", source,
            lineno, n);
    if (n < 2 * GRP_AUTH_MIN_KEY || n > 2 * GRP_AUTH_MAX_KEY)
        return gr_seterr(e, GRID_ERR_CONFIG,
                         "%s line %d: a key of %zu bytes; a key has %d to %d bytes (%d to %d hex digits): "
                         "make one with 'gridrpc keygen FILE'",
                         source, lineno, n / 2, GRP_AUTH_MIN_KEY, GRP_AUTH_MAX_KEY, 2 * GRP_AUTH_MIN_KEY,
                         2 * GRP_AUTH_MAX_KEY);
    k->len = (uint32_t)(n / 2);
    for (size_t i = 0; i < k->len; i++)
        k->bytes[i] = (uint8_t)(hexval(s[2 * i]) << 4 | hexval(s[2 * i + 1]));
    return grp_key_set_id(k, e);
}

int grp_keyset_parse(const char *text, size_t len, const char *source, grp_keyset *ks, gr_err *e) {
    memset(ks, 0, sizeof *ks);
    snprintf(ks->path, sizeof ks->path, "%s", source);
    int lineno = 0, rc = GRID_OK;
    size_t pos = 0;
    while (pos < len && !rc) {
        size_t end = pos;
        while (end < len && text[end] != '\n')
            end++;
        lineno++;
        const char *s = text + pos;
        size_t n = end - pos;
        pos = end + 1;
        const char *hash = memchr(s, '#', n);
        if (hash) n = (size_t)(hash - s);
        while (n && (*s == ' ' || *s == '\t')) {
            s++;
            n--;
        }
        while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
            n--;
        if (!n) continue;
        /* An optional role word before the key; without one the key may prove every role. */
        uint32_t roles = GRP_ROLES_ALL;
        int tagged = 0;
        static const struct {
            const char *word;
            uint32_t roles;
        } tags[] = {{"client", GRP_ROLE_CLIENT}, {"server", GRP_ROLE_SERVER}, {"admin", GRP_ROLES_ALL}};
        for (size_t t = 0; t < sizeof tags / sizeof tags[0] && !tagged; t++) {
            size_t wl = strlen(tags[t].word);
            if (n > wl && memcmp(s, tags[t].word, wl) == 0 && (s[wl] == ' ' || s[wl] == '\t')) {
                roles = tags[t].roles;
                tagged = 1;
                s += wl;
                n -= wl;
                while (n && (*s == ' ' || *s == '\t')) {
                    s++;
                    n--;
                }
            }
        }
        if (!tagged && n && !(hexval(*s) >= 0)) {
            size_t wl = 0;
            while (wl < n && s[wl] != ' ' && s[wl] != '\t')
                wl++;
            rc = gr_seterr(e, GRID_ERR_CONFIG,
                           "%s line %d: '%.*s' is not a role: a key line is 'client HEX', 'server HEX', "
                           "'admin HEX' or HEX alone (every role)",
                           source, lineno, (int)(wl > 20 ? 20 : wl), s);
            break;
        }
        if (ks->n == GRP_AUTH_MAX_KEYS) {
            rc =
                gr_seterr(e, GRID_ERR_CONFIG,
                          "%s line %d: more than %d keys; keep at most %d (two are enough to rotate: the new "
                          "one and the old one)",
                          source, lineno, GRP_AUTH_MAX_KEYS, GRP_AUTH_MAX_KEYS);
            break;
        }
        rc = parse_key(s, n, source, lineno, &ks->keys[ks->n], e);
        if (!rc) {
            ks->keys[ks->n].roles = roles;
            ks->keys[ks->n].tagged = tagged;
            ks->n++;
        }
    }
    if (!rc && ks->n == 0)
        rc = gr_seterr(e, GRID_ERR_CONFIG, "%s holds no key: make one with 'gridrpc keygen FILE'", source);
    if (rc) grp_keyset_clear(ks);
    return rc;
}

int grp_keyset_load(const char *path, grp_keyset *ks, gr_err *e) {
    memset(ks, 0, sizeof *ks);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return gr_seterr(e, GRID_ERR_CONFIG, "cannot read the key file '%s': %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return gr_seterr(e, GRID_ERR_CONFIG, "the key file '%s' is not a regular file", path);
    }
    unsigned mode = (unsigned)st.st_mode & 07777;
    if (mode & 0027) {
        close(fd);
        return gr_seterr(e, GRID_ERR_CONFIG,
                         "the key file '%s' has mode %04o: %s may %s it, and anyone who reads it can connect "
                         "as a trusted peer; run 'chmod 600 %s' (or 640 for a group that needs it)",
                         path, mode, mode & 0007 ? "other users" : "the group",
                         mode & 0007 ? ((mode & 0004) ? "read" : "write or run") : "write", path);
    }
    if (st.st_size > 64 * 1024) {
        close(fd);
        return gr_seterr(e, GRID_ERR_CONFIG, "the key file '%s' is %lld bytes; a key file is a few lines",
                         path, (long long)st.st_size);
    }
    size_t n = (size_t)st.st_size, got = 0;
    char *buf = malloc(n + 1);
    if (!buf) {
        close(fd);
        return gr_seterr(e, GRID_ERR_NOMEM, "out of memory");
    }
    while (got < n) {
        ssize_t k = read(fd, buf + got, n - got);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        got += (size_t)k;
    }
    close(fd);
    int rc = grp_keyset_parse(buf, got, path, ks, e);
    OPENSSL_cleanse(buf, n + 1);
    free(buf);
    return rc;
}

int grp_keygen(const char *path, uint32_t role, gr_err *e) {
    uint8_t key[GRP_AUTH_KEYGEN_BYTES];
    char line[16 + 2 * GRP_AUTH_KEYGEN_BYTES + 2];
    int rc = grp_auth_random(key, sizeof key, e);
    if (rc) return rc;
    size_t off0 = role ? (size_t)snprintf(line, 16, "%s ", grp_role_name(role)) : 0;
    for (size_t i = 0; i < sizeof key; i++)
        snprintf(line + off0 + 2 * i, 3, "%02x", key[i]);
    line[off0 + 2 * sizeof key] = '\n';
    line[off0 + 2 * sizeof key + 1] = '\0';
    OPENSSL_cleanse(key, sizeof key);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        int err = errno;
        OPENSSL_cleanse(line, sizeof line);
        return gr_seterr(e, GRID_ERR_IO, "cannot create the key file '%s': %s%s", path, strerror(err),
                         err == EEXIST ? " (a key file is never replaced: remove it first, or choose another "
                                         "name and add the new key as a line of the old file to rotate)"
                                       : "");
    }
    /* O_CREAT's mode is cut by the umask; a key file is 0600 whatever the umask. */
    fchmod(fd, 0600);
    size_t len = strlen(line), off = 0;
    while (off < len) {
        ssize_t k = write(fd, line + off, len - off);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        off += (size_t)k;
    }
    OPENSSL_cleanse(line, sizeof line);
    if (off < len || close(fd) != 0) {
        unlink(path);
        return gr_seterr(e, GRID_ERR_IO, "cannot write the key file '%s': %s", path, strerror(errno));
    }
    return GRID_OK;
}
