/* grm_files.c: filename arguments, whose files travel (docs/protocol.md). On the server
 * every file of a call lives in that call's own scratch folder, made at its first file
 * and removed whole, with whatever the body added to it, when the call is released. On
 * the client a file received replaces (or creates) the one at the path the caller named,
 * whole or not at all. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "grm_internal.h"

int grm_file_read(const char *path, uint32_t max, int missing_ok, uint8_t **out, uint32_t *len, gr_err *e) {
    *out = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 && missing_ok && errno == ENOENT) return GRID_OK;
    if (fd < 0) return gr_seterr(e, GRID_ERR_IO, "cannot read file '%s': %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) < 0 || S_ISDIR(st.st_mode)) {
        close(fd);
        return gr_seterr(e, GRID_ERR_IO, "cannot read file '%s': it is a folder", path);
    }
    if ((uint64_t)st.st_size > max) {
        close(fd);
        return gr_seterr(e, GRID_ERR_LIMIT, "file '%s' is larger than the limit of %u bytes", path, max);
    }
    size_t n = (size_t)st.st_size;
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf) {
        close(fd);
        return gr_seterr(e, GRID_ERR_NOMEM, "out of memory reading '%s'", path);
    }
    size_t got = 0;
    while (got < n) {
        ssize_t k = read(fd, buf + got, n - got);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        got += (size_t)k;
    }
    close(fd);
    *out = buf;
    *len = (uint32_t)got;
    return GRID_OK;
}

/* Writes N bytes of P into the open FD (named PATH for messages) and closes it. */
static int write_all(int fd, const char *path, const uint8_t *p, uint32_t n, gr_err *e) {
    size_t done = 0;
    while (done < n) {
        ssize_t k = write(fd, p + done, n - done);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) {
            int err = errno;
            close(fd);
            return gr_seterr(e, GRID_ERR_IO, "cannot write file '%s': %s (is the disk full?)", path,
                             strerror(err));
        }
        done += (size_t)k;
    }
    if (close(fd) != 0) return gr_seterr(e, GRID_ERR_IO, "cannot write file '%s': %s", path, strerror(errno));
    return GRID_OK;
}

/* Writes P whole under a temporary name next to PATH and renames it over PATH.
 * Returns -1 when no temporary file can be made there (the caller writes in place). */
static int save_by_rename(const char *path, const struct stat *old, const uint8_t *p, uint32_t n, gr_err *e) {
    static atomic_uint seq;
    size_t len = strlen(path) + 48;
    char *tmp = malloc(len);
    if (!tmp) return -1;
    snprintf(tmp, len, "%s.gridrpc-%ld-%u", path, (long)getpid(), atomic_fetch_add(&seq, 1));
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        free(tmp);
        return -1;
    }
    /* The replaced file's mode (should that fail, only the mode differs). */
    if (old) (void)fchmod(fd, old->st_mode & 07777);
    int rc = write_all(fd, path, p, n, e);
    if (!rc && rename(tmp, path) != 0)
        rc = gr_seterr(e, GRID_ERR_IO, "cannot write file '%s': %s", path, strerror(errno));
    if (rc) unlink(tmp);
    free(tmp);
    return rc;
}

int grm_file_save(const char *path, const uint8_t *p, uint32_t n, gr_err *e) {
    /* A new file, or a plain one of ours with one name, is replaced whole: a write that
     * fails (a full disk) leaves the caller's file as it was, not half of the new one
     * (tests/faults/disk-full.sh). A device, a pipe, a link, a file of another owner or
     * with other names, or a folder where no file can be made, is written in place. */
    struct stat st;
    int exists = lstat(path, &st) == 0;
    if (!exists || (S_ISREG(st.st_mode) && st.st_nlink == 1 && st.st_uid == geteuid())) {
        int rc = save_by_rename(path, exists ? &st : NULL, p, n, e);
        if (rc >= 0) return rc;
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return gr_seterr(e, GRID_ERR_IO, "cannot write file '%s': %s", path, strerror(errno));
    return write_all(fd, path, p, n, e);
}

/* The call's scratch folder, made on first use under $TMPDIR (else /tmp). */
static const char *scratch_dir(grm_call *c, gr_err *e) {
    if (c->scratch) return c->scratch;
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp) tmp = "/tmp";
    size_t n = strlen(tmp) + sizeof "/gridrpc-call-XXXXXX";
    char *d = malloc(n);
    if (!d) {
        gr_seterr(e, GRID_ERR_NOMEM, "out of memory");
        return NULL;
    }
    snprintf(d, n, "%s/gridrpc-call-XXXXXX", tmp);
    if (!mkdtemp(d)) {
        gr_seterr(e, GRID_ERR_IO,
                  "the server cannot create a scratch folder for the call's files in '%s': %s", tmp,
                  strerror(errno));
        free(d);
        return NULL;
    }
    c->scratch = d;
    return d;
}

int grm_file_scratch(grm_call *c, uint32_t i, uint64_t k, const uint8_t *data, uint32_t n, char **path,
                     gr_err *e) {
    const grd_param *p = &c->desc->params[i];
    *path = NULL;
    const char *dir = scratch_dir(c, e);
    if (!dir) return e->code;
    /* Named after the parameter, so a body's messages about its files make sense. */
    size_t len = strlen(dir) + strlen(p->name) + 32;
    char *f = malloc(len);
    if (!f) return gr_seterr(e, GRID_ERR_NOMEM, "out of memory");
    if (p->rank)
        snprintf(f, len, "%s/%s.%llu", dir, p->name, (unsigned long long)k);
    else
        snprintf(f, len, "%s/%s", dir, p->name);
    int fd = open(f, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    int rc = fd < 0 ? gr_seterr(e, GRID_ERR_IO, "the server cannot create '%s' for '%s': %s", f, p->name,
                                strerror(errno))
                    : write_all(fd, f, data, n, e);
    if (rc) {
        free(f);
        return rc;
    }
    *path = f;
    return GRID_OK;
}

/* Removes the folder entry NAME of DIRFD and, for a folder, everything under it. Links
 * are removed, never followed. DEPTH bounds the recursion of a hostile body. */
static void remove_tree(int dirfd, const char *name, int depth) {
    struct stat st;
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return;
    if (S_ISDIR(st.st_mode) && depth < 64) {
        int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
        if (d) {
            struct dirent *de;
            while ((de = readdir(d)) != NULL)
                if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
                    remove_tree(fd, de->d_name, depth + 1);
            closedir(d);
        } else if (fd >= 0) {
            close(fd);
        }
        unlinkat(dirfd, name, AT_REMOVEDIR);
    } else {
        unlinkat(dirfd, name, 0);
    }
}

void grm_scratch_remove(grm_call *c) {
    if (!c->scratch) return;
    remove_tree(AT_FDCWD, c->scratch, 0);
    free(c->scratch);
    c->scratch = NULL;
}

int grm_files_allocate_out(grm_call *c, uint32_t i, gr_err *e) {
    const grd_param *p = &c->desc->params[i];
    if (p->rank == 0) {
        int rc = grm_file_scratch(c, i, 0, NULL, 0, &c->sl[i].tmpfile, e);
        if (!rc) c->sl[i].val.str = c->sl[i].tmpfile;
        return rc;
    }
    /* An array: a fresh file for each element that travels back; the others (outside a
     * sub-range) stay NULL, and a zero-length array is NULL itself. */
    const grd_extent *x = &c->sl[i].ext;
    c->ptr[i] = NULL;
    if (x->elems == 0) return GRID_OK;
    char **v = calloc((size_t)x->elems, sizeof(char *));
    char **paths = calloc(x->sent ? (size_t)x->sent : 1, sizeof(char *));
    if (!v || !paths) {
        free(v);
        free(paths);
        return gr_seterr(e, GRID_ERR_NOMEM, "the server cannot allocate the file names of '%s'", p->name);
    }
    c->ptr[i] = v;
    c->sl[i].own_buf = 1;
    c->sl[i].own_strv = paths; /* freed by grm_release, ext.sent of them */
    for (uint64_t k = 0; k < x->sent; k++) {
        int rc = grm_file_scratch(c, i, k, NULL, 0, &paths[k], e);
        if (rc) return rc;
    }
    grm_strv_move(x, v, paths, 0);
    return GRID_OK;
}
