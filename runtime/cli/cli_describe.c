/* cli_describe.c: gridrpc describe FUNC: a function's interface as a caller needs it:
 * parameters with mode, type and dimension expressions (printed by the descriptor
 * library's own printer, grd_dump.c), the Complexity expression, flags, and the
 * servers that have it. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char *lang_name(uint32_t lang) {
    switch (lang) {
    case GRD_LANG_C: return "C";
    case GRD_LANG_CXX: return "C++";
    case GRD_LANG_FORTRAN: return "Fortran";
    default: return "?";
    }
}

/* The servers of the metaserver's list that have QUALIFIED. */
static int has_function(const grp_server_info *s, const char *qualified) {
    for (uint32_t k = 0; k < s->nfunctions; k++)
        if (strcmp(s->functions[k], qualified) == 0) return 1;
    return 0;
}

static void print_json(const cli_opts *o, const char *q, const grd_desc *d, const grp_server_info *v,
                       uint32_t n) {
    FILE *f = stdout;
    fputs("{\"name\": ", f);
    cli_json_string(f, q);
    fputs(", \"module\": ", f);
    cli_json_string(f, d->module);
    fputs(", \"function\": ", f);
    cli_json_string(f, d->name);
    fputs(", \"description\": ", f);
    cli_json_string(f, d->description);
    fprintf(f, ", \"hash\": \"0x%016" PRIx64 "\", \"language\": \"%s\", \"complexity\": ", d->hash,
            lang_name(d->language));
    char *cost = grd_expr_text(d, &d->cost);
    if (cost)
        cli_json_string(f, cost);
    else
        fputs("null", f);
    free(cost);
    fprintf(f,
            ", \"retry\": %s, \"shrink\": %s, \"timeout\": ", (d->flags & GRD_FF_NO_RETRY) ? "false" : "true",
            (d->flags & GRD_FF_SHRINK) ? "true" : "false");
    if (d->flags & GRD_FF_TIMEOUT)
        fprintf(f, "%u", d->timeout);
    else
        fputs("null", f);
    fputs(", \"parameters\": [", f);
    for (uint32_t i = 0; i < d->nparams; i++) {
        const grd_param *p = &d->params[i];
        fputs(i ? ",\n  {\"name\": " : "\n  {\"name\": ", f);
        cli_json_string(f, p->name);
        fprintf(f, ", \"mode\": \"%s\", \"type\": \"%s\", \"unsigned\": %s, \"rank\": %u, \"dims\": ",
                grd_mode_name(p->mode), grd_type_name(p->type),
                (p->flags & GRD_PF_UNSIGNED) ? "true" : "false", p->rank);
        char *dims = grd_dims_text(d, i);
        cli_json_string(f, dims ? dims : "");
        free(dims);
        fputs(", \"sizes\": [", f);
        for (uint32_t k = 0; k < p->rank && p->dims; k++) {
            char *sz = grd_expr_text(d, &p->dims[k].size);
            fputs(k ? ", " : "", f);
            cli_json_string(f, sz ? sz : "");
            free(sz);
        }
        fputs("]}", f);
    }
    fputs("\n]", f);
    if (o->target == CLI_METASERVER) {
        fputs(", \"servers\": [", f);
        int first = 1;
        for (uint32_t i = 0; i < n; i++) {
            if (!has_function(&v[i], q)) continue;
            printf("%s{\"id\": %llu, \"name\": ", first ? "" : ", ", (unsigned long long)v[i].id);
            first = 0;
            cli_json_string(f, v[i].name);
            fputs(", \"host\": ", f);
            cli_json_string(f, v[i].host);
            printf(", \"port\": %u, \"state\": \"%s\"}", v[i].port,
                   v[i].state == GRP_SERVER_UP ? "up" : "down");
        }
        fputs("]", f);
    } else {
        fputs(", \"servers\": [{\"host\": ", f);
        cli_json_string(f, o->server_host);
        printf(", \"port\": %d, \"state\": \"up\"}]", o->server_port);
    }
    fputs("}\n", f);
}

static void print_text(const cli_opts *o, const char *q, const grd_desc *d, const grp_server_info *v,
                       uint32_t n) {
    printf("%s\n", q);
    if (d->description && *d->description) printf("  %s\n", d->description);
    puts("");
    static const char *const head[] = {"  MODE", "TYPE", "NAME", "DIMENSIONS"};
    cli_table t;
    if (cli_table_init(&t, 4, head, NULL) == 0) {
        for (uint32_t i = 0; i < d->nparams; i++) {
            const grd_param *p = &d->params[i];
            char mode[16], type[64];
            snprintf(mode, sizeof mode, "  %s", grd_mode_name(p->mode));
            snprintf(type, sizeof type, "%s%s", (p->flags & GRD_PF_UNSIGNED) ? "unsigned " : "",
                     grd_type_name(p->type));
            char *dims = grd_dims_text(d, i);
            const char *row[] = {mode, type, p->name, dims ? dims : ""};
            cli_table_row(&t, row);
            free(dims);
        }
        if (d->nparams)
            cli_table_print(&t, stdout);
        else
            puts("  (no parameters)");
        cli_table_free(&t);
    }
    puts("");
    char *cost = grd_expr_text(d, &d->cost);
    printf("Complexity:  %s%s\n", cost ? cost : "not declared", cost ? " flops" : "");
    free(cost);
    printf("Retry:       %s\n", (d->flags & GRD_FF_NO_RETRY)
                                    ? "no (Retry \"no\": never re-executed on another server after a failure)"
                                    : "yes (re-executed on another server if its server fails)");
    if (d->flags & GRD_FF_SHRINK) printf("Shrink:      yes (strided sub-ranges are packed)\n");
    if (d->flags & GRD_FF_TIMEOUT)
        printf("Timeout:     %u s (its IDL's: a call that runs longer is stopped by the server)\n",
               d->timeout);
    printf("Language:    %s\nHash:        0x%016" PRIx64 "\n", lang_name(d->language), d->hash);
    fputs("Servers:     ", stdout);
    if (o->target == CLI_METASERVER) {
        int first = 1;
        for (uint32_t i = 0; i < n; i++) {
            if (!has_function(&v[i], q)) continue;
            printf("%s%llu %s (%s:%u%s)", first ? "" : ", ", (unsigned long long)v[i].id, v[i].name,
                   v[i].host, v[i].port, v[i].state == GRP_SERVER_UP ? "" : ", down");
            first = 0;
        }
        puts("");
    } else {
        printf("%s:%d\n", o->server_host, o->server_port);
    }
    /* How to call it from the shell: the arguments gridrpc call expects. */
    if (grd_callback_count(d) > 0) {
        puts("Call:        from a program only (grpc_call or grid_call, a function of yours per callback)");
        return;
    }
    printf("Call:        gridrpc call %s", q);
    for (uint32_t i = 0; i < d->nparams; i++) {
        const grd_param *p = &d->params[i];
        int given = p->mode != GRD_WORK &&
                    (p->mode == GRD_IN || p->mode == GRD_INOUT || (p->type == GRD_FILENAME && p->rank == 0));
        if (given) printf(p->rank ? " '[%s...]'" : " %s", p->name);
    }
    puts("");
}

int cli_describe(int argc, char **argv, cli_opts *o) {
    if (argc != 1) {
        cli_error("describe takes one function name, got %d arguments (gridrpc describe --help)", argc);
        return CLI_USAGE;
    }
    if (cli_resolve_target(o, CLI_SERVER | CLI_METASERVER)) return CLI_FAIL;
    gr_err e = {0, ""};
    grp_server_info *v = NULL;
    uint32_t n = 0;
    if (o->target == CLI_METASERVER && cli_meta_servers(o, &v, &n, &e)) {
        cli_error("%s", e.msg);
        return CLI_FAIL;
    }
    char q[GRP_MAX_FUNCTION_NAME + 1];
    grd_desc *d = NULL;
    if (cli_find_descriptor(o, v, n, argv[0], q, &d, &e)) {
        cli_error("%s", e.msg);
        grp_servers_free(v, n);
        return CLI_FAIL;
    }
    if (o->json)
        print_json(o, q, d, v, n);
    else
        print_text(o, q, d, v, n);
    grd_free(d);
    grp_servers_free(v, n);
    return CLI_OK;
}
