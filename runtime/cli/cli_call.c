/* cli_call.c: gridrpc call FUNC ARGS...: the arguments typed at the shell are checked
 * against the function's descriptor (count, numbers, array lengths from its dimension
 * expressions), OUT arrays are allocated at the sizes those expressions give, and the
 * call is made through the public API (grid_call_argv_np), so it goes where any
 * program's call goes. Results are printed by name, or as one JSON object. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gr_settings.h"

/* One parameter's storage; ARGV[i] points into it. */
typedef struct slot {
    void *mem;   /* a scalar's bytes or an array's elements (malloc'd) */
    char *str;   /* a string or filename scalar's char * variable */
    char *given; /* what the command line gave: an INOUT call replaces str with a new copy */
    char **strs; /* an array of strings */
    uint64_t elems;
    grd_extent ext;
} slot;

typedef struct call_state {
    const grd_desc *d;
    slot s[GRD_MAX_PARAMS];
    void *argv[GRD_MAX_PARAMS];
    int64_t scalars[GRD_MAX_PARAMS];
} call_state;

static int is_int_type(uint32_t t) {
    return t == GRD_CHAR || t == GRD_SHORT || t == GRD_INT || t == GRD_LONG || t == GRD_LONGLONG;
}
static int is_text(uint32_t t) {
    return t == GRD_STRING || t == GRD_FILENAME;
}
static int is_complex(uint32_t t) {
    return t == GRD_SCOMPLEX || t == GRD_DCOMPLEX;
}
/* A parameter the command line gives: IN and INOUT ones, and filenames in any mode
 * (an OUT file needs a path to be written to). */
static int given(const grd_param *p) {
    if (p->mode == GRD_WORK) return 0;
    if (p->type == GRD_FILENAME && p->rank == 0) return 1;
    return p->mode == GRD_IN || p->mode == GRD_INOUT;
}
static int returned(const grd_param *p) {
    return p->mode == GRD_OUT || p->mode == GRD_INOUT;
}

/* "double [n][n]" for messages. */
static void param_type(const grd_desc *d, uint32_t i, char *buf, size_t size) {
    const grd_param *p = &d->params[i];
    char *dims = grd_dims_text(d, i);
    snprintf(buf, size, "%s%s%s%s", (p->flags & GRD_PF_UNSIGNED) ? "unsigned " : "", grd_type_name(p->type),
             dims && *dims ? " " : "", dims ? dims : "");
    free(dims);
}

/* The expected arguments, for a wrong count: "n (int), A (double [n][n]), B (...)". */
static void expected_list(const grd_desc *d, char *buf, size_t size) {
    size_t n = 0;
    buf[0] = '\0';
    for (uint32_t i = 0; i < d->nparams && n < size; i++) {
        if (!given(&d->params[i])) continue;
        char t[256];
        param_type(d, i, t, sizeof t);
        int w = snprintf(buf + n, size - n, "%s%s (%s)", n ? ", " : "", d->params[i].name, t);
        if (w < 0) break;
        n += (size_t)w;
    }
}

/* "n=2, m=3": the integer scalars a dimension depends on, for array-length messages. */
static void scalar_values(const call_state *st, char *buf, size_t size) {
    size_t n = 0;
    buf[0] = '\0';
    for (uint32_t i = 0; i < st->d->nparams && n < size; i++) {
        const grd_param *p = &st->d->params[i];
        if (p->rank != 0 || !is_int_type(p->type) || (p->mode != GRD_IN && p->mode != GRD_INOUT)) continue;
        int w = snprintf(buf + n, size - n, "%s%s=%lld", n ? ", " : "", p->name, (long long)st->scalars[i]);
        if (w < 0) break;
        n += (size_t)w;
    }
}

/* Fills scalar parameter I from TEXT. */
static int set_scalar(call_state *st, uint32_t i, const char *text, char *err, size_t errsize) {
    const grd_param *p = &st->d->params[i];
    slot *s = &st->s[i];
    if (is_text(p->type)) {
        st->argv[i] = &s->str;
        if (!given(p)) return 0; /* an OUT string: the library stores a malloc'd copy */
        s->str = s->given = strdup(text);
        if (!s->str) return snprintf(err, errsize, "out of memory"), -1;
        return 0;
    }
    s->mem = calloc(1, grd_type_size(p->type));
    if (!s->mem) return snprintf(err, errsize, "out of memory"), -1;
    st->argv[i] = s->mem;
    if (!given(p)) return 0;
    cli_values v;
    if (cli_values_parse(text, &v, err, errsize)) return -1;
    int rc = 0;
    uint32_t want = is_complex(p->type) ? 2 : 1;
    if (v.n != want) {
        snprintf(err, errsize, "expects %s, got %u values",
                 is_complex(p->type) ? "a complex number as [re,im]" : "one number", v.n);
        rc = -1;
    } else if (is_complex(p->type)) {
        uint32_t part = p->type == GRD_SCOMPLEX ? GRD_FLOAT : GRD_DOUBLE;
        size_t half = grd_type_size(p->type) / 2;
        rc = cli_store_number(v.tok[0], part, 0, s->mem, err, errsize);
        if (!rc) rc = cli_store_number(v.tok[1], part, 0, (char *)s->mem + half, err, errsize);
    } else {
        rc = cli_store_number(v.tok[0], p->type, (p->flags & GRD_PF_UNSIGNED) != 0, s->mem, err, errsize);
    }
    if (!rc && is_int_type(p->type))
        st->scalars[i] = cli_load_int(s->mem, p->type, (p->flags & GRD_PF_UNSIGNED) != 0);
    cli_values_free(&v);
    return rc;
}

/* Sizes array parameter I from the scalars and fills it from TEXT (NULL: not given). */
static int set_array(call_state *st, uint32_t i, const char *text, char *err, size_t errsize) {
    const grd_param *p = &st->d->params[i];
    slot *s = &st->s[i];
    grd_error ge = {0, ""};
    if (p->mode == GRD_WORK) {
        st->argv[i] = NULL;
        return 0;
    }
    if (grd_extent_of(st->d, i, st->scalars, 0, &s->ext, &ge) != GRD_OK)
        return snprintf(err, errsize, "%s", ge.msg), -1;
    s->elems = s->ext.elems;
    if (p->type == GRD_STRING) {
        s->strs = calloc(s->elems ? s->elems : 1, sizeof *s->strs);
        if (!s->strs) return snprintf(err, errsize, "out of memory"), -1;
        st->argv[i] = s->strs;
    } else {
        size_t esz = grd_type_size(p->type);
        if (s->ext.bytes > ((uint64_t)1 << 32))
            return snprintf(err, errsize, "is too large for the command line (%llu bytes)",
                            (unsigned long long)s->ext.bytes),
                   -1;
        s->mem = calloc(s->elems ? s->elems : 1, esz);
        if (!s->mem) return snprintf(err, errsize, "out of memory"), -1;
        st->argv[i] = s->mem;
    }
    if (!text) return 0;
    cli_values v;
    if (cli_values_parse(text, &v, err, errsize)) return -1;
    int per = is_complex(p->type) ? 2 : 1;
    int rc = 0;
    if ((uint64_t)v.n != s->elems * (uint64_t)per) {
        char t[256], vals[512];
        param_type(st->d, i, t, sizeof t);
        scalar_values(st, vals, sizeof vals);
        snprintf(err, errsize, "expects %llu %s (%s%s%s), got %u",
                 (unsigned long long)(s->elems * (uint64_t)per),
                 p->type == GRD_STRING ? "strings"
                 : is_complex(p->type) ? "numbers (re,im pairs)"
                                       : "numbers",
                 t, vals[0] ? " with " : "", vals, v.n);
        rc = -1;
    }
    for (uint64_t k = 0; !rc && k < s->elems; k++) {
        if (p->type == GRD_STRING) {
            s->strs[k] = v.tok[k];
            v.tok[k] = NULL; /* moved */
        } else if (is_complex(p->type)) {
            uint32_t part = p->type == GRD_SCOMPLEX ? GRD_FLOAT : GRD_DOUBLE;
            size_t half = grd_type_size(p->type) / 2;
            char *dst = (char *)s->mem + k * grd_type_size(p->type);
            rc = cli_store_number(v.tok[2 * k], part, 0, dst, err, errsize);
            if (!rc) rc = cli_store_number(v.tok[2 * k + 1], part, 0, dst + half, err, errsize);
        } else {
            rc = cli_store_number(v.tok[k], p->type, (p->flags & GRD_PF_UNSIGNED) != 0,
                                  (char *)s->mem + k * grd_type_size(p->type), err, errsize);
        }
        if (rc && v.n > 1) {
            char e2[1024];
            snprintf(e2, sizeof e2, "%s", err);
            snprintf(err, errsize, "element %llu: %.900s", (unsigned long long)k, e2);
        }
    }
    cli_values_free(&v);
    return rc;
}

static void free_state(call_state *st) {
    for (uint32_t i = 0; st->d && i < st->d->nparams; i++) {
        slot *s = &st->s[i];
        free(s->mem);
        if (s->given != s->str) free(s->given);
        free(s->str);
        if (s->strs)
            for (uint64_t k = 0; k < s->elems; k++)
                free(s->strs[k]);
        free(s->strs);
    }
}

/* Builds every argument; returns 0, or prints the problem naming the parameter. */
static int build(call_state *st, const char *fname, int argc, char **argv) {
    const grd_desc *d = st->d;
    /* A callback is a function of the caller's: a command line has none to pass. */
    for (uint32_t i = 0; i < d->nparams; i++)
        if (d->params[i].type == GRD_CALLBACK) {
            cli_error(
                "%s takes a callback ('%s', argument %u): call it from a program (grpc_call or grid_call "
                "with a function of yours), the command line cannot pass one",
                fname, d->params[i].name, i + 1);
            return -1;
        }
    int want = 0;
    for (uint32_t i = 0; i < d->nparams; i++)
        want += given(&d->params[i]);
    if (argc != want) {
        char list[2048];
        expected_list(d, list, sizeof list);
        cli_error("%s takes %d argument%s%s%s, %d given (gridrpc describe %s)", fname, want,
                  want == 1 ? "" : "s", want ? ": " : "", list, argc, fname);
        return -1;
    }
    /* Scalars first: arrays are sized by them, whatever their order. */
    const char *text[GRD_MAX_PARAMS] = {0};
    for (uint32_t i = 0, k = 0; i < d->nparams; i++)
        if (given(&d->params[i])) text[i] = argv[k++];
    char err[1024];
    for (int pass = 0; pass < 2; pass++)
        for (uint32_t i = 0; i < d->nparams; i++) {
            const grd_param *p = &d->params[i];
            if ((p->rank == 0) != (pass == 0)) continue;
            int rc = pass == 0 ? set_scalar(st, i, text[i] ? text[i] : "", err, sizeof err)
                               : set_array(st, i, text[i], err, sizeof err);
            if (rc) {
                char t[256];
                param_type(d, i, t, sizeof t);
                cli_error("%s: argument %s (%s %s): %s", fname, p->name, grd_mode_name(p->mode), t, err);
                return -1;
            }
        }
    return 0;
}

/* Prints element K of parameter I into BUF. */
static void elem(const call_state *st, uint32_t i, uint64_t k, int json, char *buf, size_t size) {
    const grd_param *p = &st->d->params[i];
    cli_format_elem((const char *)st->s[i].mem + k * grd_type_size(p->type), p->type,
                    (p->flags & GRD_PF_UNSIGNED) != 0, json, buf, size);
}

/* JSON of array I, nested by its dimensions from DIM on, elements from *K on. */
static void json_array(FILE *f, const call_state *st, uint32_t i, uint32_t dim, uint64_t *k) {
    const slot *s = &st->s[i];
    fputc('[', f);
    for (int64_t j = 0; j < s->ext.size[dim]; j++) {
        if (j) fputs(", ", f);
        if (dim + 1 < s->ext.rank) {
            json_array(f, st, i, dim + 1, k);
        } else if (st->d->params[i].type == GRD_STRING) {
            cli_json_string(f, s->strs[*k]);
            (*k)++;
        } else {
            char b[96];
            elem(st, i, (*k)++, 1, b, sizeof b);
            fputs(b, f);
        }
    }
    fputc(']', f);
}

static void print_json(const call_state *st, const char *fname) {
    fputs("{\"function\": ", stdout);
    cli_json_string(stdout, fname);
    fputs(", \"results\": {", stdout);
    int first = 1;
    for (uint32_t i = 0; i < st->d->nparams; i++) {
        const grd_param *p = &st->d->params[i];
        if (!returned(p)) continue;
        fputs(first ? "" : ", ", stdout);
        first = 0;
        cli_json_string(stdout, p->name);
        fputs(": ", stdout);
        const slot *s = &st->s[i];
        if (p->rank > 0) {
            uint64_t k = 0;
            json_array(stdout, st, i, 0, &k);
        } else if (is_text(p->type)) {
            if (s->str)
                cli_json_string(stdout, s->str);
            else
                fputs("null", stdout);
        } else {
            char b[96];
            elem(st, i, 0, 1, b, sizeof b);
            fputs(b, stdout);
        }
    }
    fputs("}}\n", stdout);
}

/* Prints array I for people: a vector on one line, a matrix row by row (columns
 * aligned), higher ranks as matrices one after another. */
static void print_array(const call_state *st, uint32_t i) {
    const grd_param *p = &st->d->params[i];
    const slot *s = &st->s[i];
    if (s->elems == 0) {
        printf("%s = []\n", p->name);
        return;
    }
    uint64_t cols = (uint64_t)s->ext.size[s->ext.rank - 1];
    int width = 0;
    char b[96];
    for (uint64_t k = 0; k < s->elems; k++) {
        int w;
        if (p->type == GRD_STRING) {
            w = (int)strlen(s->strs[k] ? s->strs[k] : "(null)") + 2;
        } else {
            elem(st, i, k, 0, b, sizeof b);
            w = (int)strlen(b);
        }
        if (w > width) width = w;
    }
    if (s->ext.rank == 1) {
        /* A vector on one line, as a list it could be given back as. */
        printf("%s = [", p->name);
        for (uint64_t k = 0; k < s->elems; k++) {
            fputs(k ? ", " : "", stdout);
            if (p->type == GRD_STRING) {
                cli_json_string(stdout, s->strs[k]);
            } else {
                elem(st, i, k, 0, b, sizeof b);
                fputs(b, stdout);
            }
        }
        puts("]");
        return;
    }
    printf("%s =\n", p->name);
    for (uint64_t k = 0; k < s->elems; k++) {
        if (k % cols == 0) fputs("  ", stdout);
        if (p->type == GRD_STRING) {
            printf("%s", k % cols ? " " : "");
            cli_json_string(stdout, s->strs[k]);
        } else {
            elem(st, i, k, 0, b, sizeof b);
            printf("%s%*s", k % cols ? " " : "", width, b);
        }
        if ((k + 1) % cols == 0) {
            fputc('\n', stdout);
            /* A blank line between the matrices of a 3-D array. */
            uint64_t plane = cols * (uint64_t)s->ext.size[s->ext.rank - 2];
            if (s->ext.rank > 2 && (k + 1) % plane == 0 && k + 1 < s->elems) fputc('\n', stdout);
        }
    }
}

static void print_text(const call_state *st) {
    int any = 0;
    for (uint32_t i = 0; i < st->d->nparams; i++) {
        const grd_param *p = &st->d->params[i];
        if (!returned(p)) continue;
        any = 1;
        const slot *s = &st->s[i];
        if (p->rank > 0) {
            print_array(st, i);
        } else if (is_text(p->type)) {
            printf("%s = ", p->name);
            if (s->str && p->type == GRD_STRING)
                cli_json_string(stdout, s->str);
            else
                fputs(s->str ? s->str : "(null)", stdout);
            fputc('\n', stdout);
        } else {
            char b[96];
            elem(st, i, 0, 0, b, sizeof b);
            printf("%s = %s\n", p->name, b);
        }
    }
    if (!any) puts("ok (the function returns nothing)");
}

/* What call and submit share: the function's descriptor (from the server or a server
 * the metaserver knows), the arguments from the command line, and where the request
 * goes (TARGET: a gridrpc:// URL with --server, else the name alone, routed as a
 * program's call is). Returns CLI_OK with *out set, or the exit status (printed). */
static int prepare(int argc, char **argv, cli_opts *o, const char *cmd, call_state **out, char *qualified,
                   char *target, size_t tsize) {
    *out = NULL;
    if (argc < 1) {
        cli_error("%s needs a function name: gridrpc %s FUNC ARGS... (gridrpc %s --help)", cmd, cmd, cmd);
        return CLI_USAGE;
    }
    const char *fname = argv[0];
    if (cli_resolve_target(o, CLI_SERVER | CLI_METASERVER)) return CLI_FAIL;
    gr_err e = {0, ""};
    grp_server_info *servers = NULL;
    uint32_t nservers = 0;
    if (o->target == CLI_METASERVER && cli_meta_servers(o, &servers, &nservers, &e)) {
        cli_error("%s", e.msg);
        return CLI_FAIL;
    }
    grd_desc *d = NULL;
    int rc = cli_find_descriptor(o, servers, nservers, fname, qualified, &d, &e);
    grp_servers_free(servers, nservers);
    if (rc) {
        cli_error("%s", e.msg);
        return CLI_FAIL;
    }
    call_state *st = calloc(1, sizeof *st);
    if (!st) {
        grd_free(d);
        cli_error("out of memory");
        return CLI_FAIL;
    }
    st->d = d;
    if (build(st, qualified, argc - 1, argv + 1)) {
        free_state(st);
        free(st);
        grd_free(d);
        return CLI_USAGE;
    }
    /* --server names the server in the call itself; otherwise the name alone goes where
     * a program's call goes (GRIDRPC_METASERVER: --metaserver was exported for it). */
    if (o->target == CLI_SERVER)
        snprintf(target, tsize, strchr(o->server_host, ':') ? "gridrpc://[%s]:%d/%s" : "gridrpc://%s:%d/%s",
                 o->server_host, o->server_port, qualified);
    else {
        char addr[GRP_MAX_HOST + 16];
        snprintf(addr, sizeof addr, strchr(o->meta_host, ':') ? "[%s]:%d" : "%s:%d", o->meta_host,
                 o->meta_port);
        setenv("GRIDRPC_METASERVER", addr, 1);
        setenv("GRIDRPC_SITE", o->site, 1);
        snprintf(target, tsize, "%s", qualified);
    }
    *out = st;
    return CLI_OK;
}

static void release(call_state *st) {
    if (!st) return;
    grd_desc *d = (grd_desc *)st->d;
    free_state(st);
    free(st);
    grd_free(d);
}

static volatile sig_atomic_t interrupted_by;

/* Ctrl-C (or a TERM, HUP) during the call: the server is told to cancel it, and the
 * tool says so instead of leaving the work running where nobody waits for it. */
static void on_interrupt(int sig) {
    interrupted_by = sig;
    grid_interrupt_np();
}

/* 128 + the signal, as a shell reports a program that a signal ended. */
static int interrupted_status(void) {
    return 128 + (int)interrupted_by;
}

static void catch_interrupts(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
}

int cli_call(int argc, char **argv, cli_opts *o) {
    call_state *st;
    char qualified[GRP_MAX_FUNCTION_NAME + 1];
    char target[GRP_MAX_FUNCTION_NAME + GRP_MAX_HOST + 32];
    int status = prepare(argc, argv, o, "call", &st, qualified, target, sizeof target);
    if (status != CLI_OK) return status;
    catch_interrupts();
    int rc = grid_call_argv_np(target, (int)st->d->nparams, st->argv);
    if (rc != GRID_OK && interrupted_by) {
        cli_error("interrupted (%s): %s was canceled on its server", strsignal(interrupted_by), qualified);
        status = interrupted_status();
    } else if (rc != GRID_OK) {
        cli_error("call %s failed: %s", qualified, grid_last_error());
        status = CLI_FAIL;
    } else if (o->json) {
        print_json(st, qualified);
    } else {
        print_text(st);
    }
    release(st);
    return status;
}

int cli_submit(int argc, char **argv, cli_opts *o) {
    call_state *st;
    char qualified[GRP_MAX_FUNCTION_NAME + 1];
    char target[GRP_MAX_FUNCTION_NAME + GRP_MAX_HOST + 32];
    int status = prepare(argc, argv, o, "submit", &st, qualified, target, sizeof target);
    if (status != CLI_OK) return status;
    char id[GRID_JOB_ID_MAX_NP];
    if (grid_submit_argv_np(id, sizeof id, target, (int)st->d->nparams, st->argv) != GRID_OK) {
        cli_error("submit %s failed: %s", qualified, grid_last_error());
        status = CLI_FAIL;
    } else if (o->json) {
        fputs("{\"job\": ", stdout);
        cli_json_string(stdout, id);
        fputs(", \"function\": ", stdout);
        cli_json_string(stdout, qualified);
        fputs("}\n", stdout);
    } else {
        puts(id);
    }
    release(st);
    return status;
}

/* Fills ST from the IN scalars of a kept SUBMIT (IN, server side as decoded): scalars as
 * they were given, arrays sized from them (IN ones are not needed: they do not come
 * back), filenames NULL (a fetched file result is not written anywhere). */
static int from_head(call_state *st, const grm_call *in, const char *fname) {
    const grd_desc *d = st->d;
    char err[1024];
    for (int pass = 0; pass < 2; pass++)
        for (uint32_t i = 0; i < d->nparams; i++) {
            const grd_param *p = &d->params[i];
            slot *s = &st->s[i];
            if ((p->rank == 0) != (pass == 0)) continue;
            if (pass == 1) {
                if (set_array(st, i, NULL, err, sizeof err)) {
                    cli_error("%s: argument %s: %s", fname, p->name, err);
                    return -1;
                }
                continue;
            }
            if (is_text(p->type)) {
                st->argv[i] = &s->str;
                const char *v = in->ptr[i] ? *(char *const *)in->ptr[i] : NULL;
                if (p->type == GRD_STRING && v && (p->mode == GRD_IN || p->mode == GRD_INOUT)) {
                    s->str = s->given = strdup(v);
                    if (!s->str) return -1;
                }
                continue;
            }
            s->mem = calloc(1, grd_type_size(p->type));
            if (!s->mem) return -1;
            st->argv[i] = s->mem;
            if ((p->mode == GRD_IN || p->mode == GRD_INOUT) && in->ptr[i])
                memcpy(s->mem, in->ptr[i], grd_type_size(p->type));
            if (is_int_type(p->type))
                st->scalars[i] = cli_load_int(s->mem, p->type, (p->flags & GRD_PF_UNSIGNED) != 0);
        }
    return 0;
}

int cli_fetch(int argc, char **argv, cli_opts *o) {
    const char *idtext = NULL;
    double wait = o->wait; /* --wait before the id (main's parser); after it, read below */
    for (int i = 0; i < argc; i++) {
        const char *v = NULL;
        if (strcmp(argv[i], "--wait") == 0) {
            if (i + 1 >= argc) {
                cli_error("--wait needs a duration (10, 500ms, 2m)");
                return CLI_USAGE;
            }
            v = argv[++i];
        } else if (strncmp(argv[i], "--wait=", 7) == 0) {
            v = argv[i] + 7;
        } else if (!idtext) {
            idtext = argv[i];
            continue;
        } else {
            cli_error("fetch takes one job id and --wait DURATION; unexpected '%s'", argv[i]);
            return CLI_USAGE;
        }
        char err[512];
        if (gr_parse_duration(v, &wait, err, sizeof err)) {
            cli_error("--wait: %s", err);
            return CLI_USAGE;
        }
    }
    if (!idtext) {
        cli_error("fetch needs a job id: gridrpc fetch HOST:PORT/HEX [--wait DURATION]");
        return CLI_USAGE;
    }
    char host[GRP_MAX_HOST + 1], hex[GRP_MAX_JOB_ID + 1];
    int port;
    if (cli_parse_job(o, idtext, host, &port, hex)) return CLI_USAGE;
    char id[GRP_MAX_HOST + GRP_MAX_JOB_ID + 32];
    snprintf(id, sizeof id, strchr(host, ':') ? "[%s]:%d/%s" : "%s:%d/%s", host, port, hex);
    /* The job's own timeout is the wait: --timeout bounds each exchange besides. */
    if (o->have_timeout) grid_set_timeouts_from_np(o->timeout, o->timeout + wait, "--timeout and --wait");
    grp_job info;
    char qualified[GRP_MAX_FUNCTION_NAME + 1];
    grd_desc *d;
    grm_call *in;
    gr_err e = {0, ""};
    if (cli_job_head(o, host, port, hex, &info, qualified, &d, &in, &e)) {
        cli_error("job %s: %s", id, e.msg);
        return CLI_FAIL;
    }
    if (info.state == GRP_JOB_FAILED) {
        /* Its own error, which the fetch reports. */
        grid_job_fetch_argv_np(id, 0, 0, NULL);
        cli_error("%s", grid_last_error());
        return CLI_FAIL;
    }
    call_state *st = calloc(1, sizeof *st);
    int status = CLI_OK;
    if (!st) {
        grm_release(in);
        free(in);
        grd_free(d);
        return CLI_FAIL;
    }
    st->d = d;
    if (from_head(st, in, qualified)) status = CLI_FAIL;
    grm_release(in);
    free(in);
    if (!status && grid_job_fetch_argv_np(id, wait, (int)d->nparams, st->argv) != GRID_OK) {
        cli_error("%s", grid_last_error());
        status = CLI_FAIL;
    }
    if (!status) {
        if (o->json)
            print_json(st, qualified);
        else
            print_text(st);
    }
    release(st);
    return status;
}
