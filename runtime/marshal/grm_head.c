/* grm_head.c: the head section of CALL and RESULT messages: scalars, strings, arrays
 * of strings and file contents, XDR-encoded with libtirpc into one buffer. Numeric
 * scalars come first because arrays of strings are sized by them (docs/protocol.md).
 * The head arrives whole (its length is checked against the limit before it is read),
 * so decoding is bounded by what is in memory. */
#include <errno.h>
#include <fcntl.h>
#include <rpc/xdr.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "grm_internal.h"

static int numeric_scalar(const grd_param *p) {
    return p->rank == 0 && !grm_is_text(p->type);
}

/* Encodes (or decodes, or sizes: x_op of X) the numeric scalar at V. */
static bool_t xdr_scalar(XDR *x, uint32_t type, void *v) {
    switch (type) {
    case GRD_CHAR: {
        int t = x->x_op == XDR_ENCODE ? *(signed char *)v : 0;
        if (!xdr_int(x, &t)) return FALSE;
        if (x->x_op == XDR_DECODE) *(char *)v = (char)t;
        return TRUE;
    }
    case GRD_SHORT: return xdr_short(x, v);
    case GRD_INT: return xdr_int(x, v);
    case GRD_LONG: {
        int64_t t = x->x_op == XDR_ENCODE ? (int64_t) * (long *)v : 0;
        if (!xdr_int64_t(x, &t)) return FALSE;
        if (x->x_op == XDR_DECODE) *(long *)v = (long)t;
        return TRUE;
    }
    case GRD_LONGLONG: {
        int64_t t = x->x_op == XDR_ENCODE ? (int64_t) * (long long *)v : 0;
        if (!xdr_int64_t(x, &t)) return FALSE;
        if (x->x_op == XDR_DECODE) *(long long *)v = (long long)t;
        return TRUE;
    }
    case GRD_FLOAT: return xdr_float(x, v);
    case GRD_DOUBLE: return xdr_double(x, v);
    case GRD_SCOMPLEX: return xdr_float(x, &((scomplex *)v)->r) && xdr_float(x, &((scomplex *)v)->i);
    case GRD_DCOMPLEX: return xdr_double(x, &((dcomplex *)v)->r) && xdr_double(x, &((dcomplex *)v)->i);
    }
    return FALSE;
}

static size_t pad4(size_t n) {
    return (n + 3) & ~(size_t)3;
}

/* Moves the sent elements of a string array between the array V and the packed list
 * PACKED, in order: gathering (V -> PACKED) to send, scattering (PACKED -> V) on receipt. */
struct strv_move {
    char **v;
    char **packed;
    size_t n;
    int gather;
};
static int strv_run(uint64_t off, uint64_t cnt, void *arg) {
    struct strv_move *m = arg;
    for (uint64_t k = 0; k < cnt; k++, m->n++) {
        if (m->gather)
            m->packed[m->n] = m->v ? m->v[off + k] : NULL;
        else
            m->v[off + k] = m->packed[m->n];
    }
    return 0;
}

/* Reads a whole local file (at most MAX bytes) into a malloc'd buffer. */
static int read_file(const char *path, uint32_t max, uint8_t **out, uint32_t *len, gr_err *e) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return gr_seterr(e, GRID_ERR_IO, "cannot read file '%s': %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) < 0 || (uint64_t)st.st_size > max) {
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

static int write_file_at(const char *path, const uint8_t *p, uint32_t n, int create_tmp, char **tmp_out,
                         gr_err *e) {
    int fd;
    char *tmp = NULL;
    if (create_tmp) {
        const char *dir = getenv("TMPDIR");
        size_t len = strlen(dir && *dir ? dir : "/tmp") + 32;
        tmp = malloc(len);
        if (!tmp) return gr_seterr(e, GRID_ERR_NOMEM, "out of memory");
        snprintf(tmp, len, "%s/gridrpc-file-XXXXXX", dir && *dir ? dir : "/tmp");
        fd = mkstemp(tmp);
        path = tmp;
    } else {
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    }
    if (fd < 0) {
        int err = errno;
        free(tmp);
        return gr_seterr(e, GRID_ERR_IO, "cannot write file '%s': %s", create_tmp ? "(temporary)" : path,
                         strerror(err));
    }
    size_t done = 0;
    while (done < n) {
        ssize_t k = write(fd, p + done, n - done);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) {
            int err = errno;
            close(fd);
            if (tmp) {
                unlink(tmp);
                free(tmp);
            }
            return gr_seterr(e, GRID_ERR_IO, "cannot write file '%s': %s (is the disk full?)", path,
                             strerror(err));
        }
        done += (size_t)k;
    }
    close(fd);
    if (tmp_out) *tmp_out = tmp;
    return GRID_OK;
}

int grm_write_head(grw_writer *w, const grm_call *c, int dir, const grw_limits *lim, gr_err *e) {
    const grd_desc *d = c->desc;
    uint8_t *files[GRD_MAX_PARAMS] = {0};
    uint32_t flen[GRD_MAX_PARAMS] = {0};
    char **strv[GRD_MAX_PARAMS] = {0};
    int rc = GRID_OK;
    size_t size = 0;
    uint32_t max_head = lim ? lim->max_head : 0xffffffffu;

    /* Pass 1: size everything (reading files and collecting string arrays). */
    for (uint32_t i = 0; i < d->nparams && !rc; i++) {
        const grd_param *p = &d->params[i];
        if (!grm_travels(p, dir) || !numeric_scalar(p)) continue;
        size += (p->type == GRD_LONG || p->type == GRD_LONGLONG || p->type == GRD_DOUBLE) ? 8
                : p->type == GRD_DCOMPLEX                                                 ? 16
                : p->type == GRD_SCOMPLEX                                                 ? 8
                                                                                          : 4;
    }
    for (uint32_t i = 0; i < d->nparams && !rc; i++) {
        const grd_param *p = &d->params[i];
        if (!grm_travels(p, dir) || !grm_is_text(p->type)) continue;
        if (p->type == GRD_FILENAME && p->rank == 0) {
            const char *path = *(char *const *)c->ptr[i];
            if (path) rc = read_file(path, max_head, &files[i], &flen[i], e);
            size += 4 + (path ? 4 + pad4(flen[i]) : 0);
        } else if (p->rank == 0) {
            const char *s = *(char *const *)c->ptr[i];
            size += 4 + (s ? 4 + pad4(strlen(s)) : 0);
        } else {
            size_t n = c->sl[i].ext.sent;
            strv[i] = calloc(n ? n : 1, sizeof(char *));
            if (!strv[i]) {
                rc = gr_seterr(e, GRID_ERR_NOMEM, "out of memory");
                break;
            }
            struct strv_move mv = {c->ptr[i], strv[i], 0, 1};
            grm_for_each_run(&c->sl[i].ext, strv_run, &mv);
            for (size_t k = 0; k < n; k++)
                size += 4 + (strv[i][k] ? 4 + pad4(strlen(strv[i][k])) : 0);
        }
        if (size > max_head)
            rc = gr_seterr(e, GRID_ERR_LIMIT,
                           "strings and files of the call take more than the limit of %u bytes", max_head);
    }
    if (!rc && size > max_head)
        rc =
            gr_seterr(e, GRID_ERR_LIMIT, "the call's scalars take more than the limit of %u bytes", max_head);

    /* Pass 2: encode with libtirpc. */
    uint8_t *buf = NULL;
    if (!rc) {
        buf = malloc(size ? size : 4);
        if (!buf) rc = gr_seterr(e, GRID_ERR_NOMEM, "out of memory for %zu bytes of arguments", size);
    }
    if (!rc) {
        XDR x;
        xdrmem_create(&x, (char *)buf, (u_int)size, XDR_ENCODE);
        bool_t ok = TRUE;
        for (uint32_t i = 0; i < d->nparams && ok; i++) {
            const grd_param *p = &d->params[i];
            if (grm_travels(p, dir) && numeric_scalar(p)) ok = xdr_scalar(&x, p->type, c->ptr[i]);
        }
        for (uint32_t i = 0; i < d->nparams && ok; i++) {
            const grd_param *p = &d->params[i];
            if (!grm_travels(p, dir) || !grm_is_text(p->type)) continue;
            if (p->type == GRD_FILENAME && p->rank == 0) {
                bool_t present = *(char *const *)c->ptr[i] != NULL;
                char *fp = (char *)files[i];
                u_int fl = flen[i];
                ok = xdr_bool(&x, &present) && (!present || xdr_bytes(&x, &fp, &fl, max_head));
            } else if (p->rank == 0) {
                char *s = *(char **)c->ptr[i];
                bool_t present = s != NULL;
                ok = xdr_bool(&x, &present) && (!present || xdr_string(&x, &s, max_head));
            } else {
                for (size_t k = 0; k < c->sl[i].ext.sent && ok; k++) {
                    char *s = strv[i][k];
                    bool_t present = s != NULL;
                    ok = xdr_bool(&x, &present) && (!present || xdr_string(&x, &s, max_head));
                }
            }
        }
        if (!ok || xdr_getpos(&x) != size)
            rc = gr_seterr(e, GRID_ERR_INTERNAL, "encoding the arguments failed");
        xdr_destroy(&x);
    }
    if (!rc) rc = grw_write_opaque(w, buf, (uint32_t)size, e);
    free(buf);
    for (uint32_t i = 0; i < d->nparams; i++) {
        free(files[i]);
        free(strv[i]);
    }
    return rc;
}

int grm_read_head(grw_reader *r, grm_call *c, int dir, const grw_limits *lim, gr_err *e) {
    const grd_desc *d = c->desc;
    uint32_t max_head = lim ? lim->max_head : 0xffffffffu;
    uint8_t *buf;
    uint32_t len;
    int rc = grw_read_opaque(r, max_head, &buf, &len, e);
    if (rc) return rc;
    XDR x;
    xdrmem_create(&x, (char *)buf, len, XDR_DECODE);
    bool_t ok = TRUE;
    for (uint32_t i = 0; i < d->nparams && ok; i++) {
        const grd_param *p = &d->params[i];
        if (grm_travels(p, dir) && numeric_scalar(p)) ok = xdr_scalar(&x, p->type, c->ptr[i]);
    }
    if (!ok) {
        rc = gr_seterr(e, GRID_ERR_PROTOCOL, "the scalar arguments are truncated");
        goto out;
    }
    if (dir == GRM_TO_SERVER) {
        rc = grm_prepare(c, lim, e);
        if (rc) goto out;
    }
    for (uint32_t i = 0; i < d->nparams && !rc; i++) {
        const grd_param *p = &d->params[i];
        if (!grm_travels(p, dir) || !grm_is_text(p->type)) continue;
        bool_t present = FALSE;
        if (p->type == GRD_FILENAME && p->rank == 0) {
            char *fp = NULL;
            u_int fl = 0;
            if (!xdr_bool(&x, &present) || (present && !xdr_bytes(&x, &fp, &fl, len))) {
                free(fp);
                rc = gr_seterr(e, GRID_ERR_PROTOCOL, "file '%s' is truncated", p->name);
                break;
            }
            if (!present) {
                free(fp);
                continue;
            }
            if (c->side == GRM_SERVER_SIDE) {
                rc = write_file_at(NULL, (uint8_t *)fp, fl, 1, &c->sl[i].tmpfile, e);
                if (!rc) c->sl[i].val.str = c->sl[i].tmpfile;
            } else {
                rc = write_file_at(*(char **)c->ptr[i], (uint8_t *)fp, fl, 0, NULL, e);
            }
            free(fp);
        } else if (p->rank == 0) {
            char *s = NULL;
            if (!xdr_bool(&x, &present) || (present && !xdr_string(&x, &s, len))) {
                free(s);
                rc = gr_seterr(e, GRID_ERR_PROTOCOL, "string '%s' is truncated", p->name);
                break;
            }
            *(char **)c->ptr[i] = s;
            if (c->side == GRM_SERVER_SIDE) c->sl[i].own_ptr = s;
        } else {
            size_t n = c->sl[i].ext.sent;
            char **in = calloc(n ? n : 1, sizeof(char *));
            if (!in) {
                rc = gr_seterr(e, GRID_ERR_NOMEM, "out of memory");
                break;
            }
            size_t k;
            for (k = 0; k < n; k++) {
                present = FALSE;
                if (!xdr_bool(&x, &present) || (present && !xdr_string(&x, &in[k], len))) break;
            }
            if (k < n) {
                for (size_t j = 0; j <= k && j < n; j++)
                    free(in[j]);
                free(in);
                rc = gr_seterr(e, GRID_ERR_PROTOCOL, "string array '%s' is truncated", p->name);
                break;
            }
            if (c->side == GRM_SERVER_SIDE) {
                char **v = calloc(c->sl[i].ext.elems ? c->sl[i].ext.elems : 1, sizeof(char *));
                if (!v) {
                    for (size_t j = 0; j < n; j++)
                        free(in[j]);
                    free(in);
                    rc = gr_seterr(e, GRID_ERR_NOMEM, "out of memory");
                    break;
                }
                c->ptr[i] = v;
                c->sl[i].own_buf = 1;
            }
            struct strv_move mv = {c->ptr[i], in, 0, 0};
            grm_for_each_run(&c->sl[i].ext, strv_run, &mv);
            if (c->side == GRM_SERVER_SIDE)
                c->sl[i].own_strv = in;
            else
                free(in);
        }
    }
    if (!rc && xdr_getpos(&x) != len)
        rc = gr_seterr(e, GRID_ERR_PROTOCOL, "%u unexpected bytes after the arguments", len - xdr_getpos(&x));
out:
    xdr_destroy(&x);
    free(buf);
    return rc;
}
