/* gox_args.c: turns an argument stack into the argument vector of the core
 * (grid_call_argv_np); the interface (grid_describe_np, cached by the core) says how
 * many arguments there are and which type each has. grpc_call's variadic arguments need
 * nothing here: the core takes them as a va_list (grid_call_va_np). Also the argument
 * stacks, under both spellings found in the wild. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gox.h"

struct grpc_arg_stack_s {
    int max;
    int n;
    void **items;
};

void gox_url(const grpc_function_handle_t *h, char *url, size_t n) {
    if (!h->host_np[0]) {
        snprintf(url, n, "%s", h->function_np);
        return;
    }
    /* An IPv6 address needs brackets in the URL. */
    int v6 = strchr(h->host_np, ':') != NULL;
    snprintf(url, n, "gridrpc://%s%s%s:%d/%s", v6 ? "[" : "", h->host_np, v6 ? "]" : "", h->port_np,
             h->function_np);
}

grpc_error_t gox_argv_describe(const grpc_function_handle_t *h, gox_argv *a) {
    gox_url(h, a->url, sizeof a->url);
    int rc = grid_describe_np(a->url, &a->fn);
    return rc ? gox_result_core(gox_map(rc)) : GRPC_NO_ERROR;
}

static grpc_error_t count_error(const gox_argv *a, int given) {
    char params[1024];
    size_t used = 0;
    params[0] = '\0';
    for (int i = 0; i < a->fn.nparams && used < sizeof params; i++)
        used += (size_t)snprintf(params + used, sizeof params - used, "%s%s", i ? ", " : "",
                                 a->fn.params[i].name);
    return gox_result(GRPC_OTHER_ERROR_CODE, "%s/%s takes %d argument%s (%s) but %d %s given", a->fn.module,
                      a->fn.name, a->fn.nparams, a->fn.nparams == 1 ? "" : "s", params, given,
                      given == 1 ? "was" : "were");
}

grpc_error_t gox_argv_from_stack(gox_argv *a, const grpc_arg_stack_t *st) {
    const grid_function_np *fn = &a->fn;
    if (st->n != fn->nparams) return count_error(a, st->n);
    a->nargs = fn->nparams;
    for (int i = 0; i < fn->nparams; i++) {
        const grid_param_np *p = &fn->params[i];
        /* Strings are pushed as themselves (as grpc_call takes them); the core wants the
         * address of a char * variable. */
        if (p->rank == 0 &&
            (p->type == GRID_TYPE_FILENAME || (p->type == GRID_TYPE_STRING && p->mode == GRID_MODE_IN))) {
            a->slot[i].str = st->items[i];
            a->argv[i] = &a->slot[i].str;
        } else {
            a->argv[i] = st->items[i];
        }
    }
    return GRPC_NO_ERROR;
}

/* ---- Argument stacks (the owner thread's; no locking) */

static grpc_arg_stack_t *stack_new(long maxsize) {
    if (gox_check_initialized()) return NULL;
    if (maxsize < 0 || maxsize > GRID_MAX_PARAMS_NP) {
        gox_result(GRPC_OTHER_ERROR_CODE, "an argument stack holds 0 to %d arguments, not %ld",
                   GRID_MAX_PARAMS_NP, maxsize);
        return NULL;
    }
    grpc_arg_stack_t *s = calloc(1, sizeof *s);
    if (s) s->items = calloc((size_t)maxsize + 1, sizeof *s->items);
    if (!s || !s->items) {
        free(s);
        gox_result(GRPC_OTHER_ERROR_CODE, "out of memory");
        return NULL;
    }
    s->max = (int)maxsize;
    gox_result(GRPC_NO_ERROR, NULL);
    return s;
}

grpc_arg_stack_t *grpc_arg_stack_new(int maxsize) {
    return stack_new(maxsize);
}

grpc_arg_stack_t *grpc_stack_create(size_t maxsize) {
    return stack_new(maxsize > (size_t)GRID_MAX_PARAMS_NP ? -1L : (long)maxsize);
}

grpc_error_t grpc_arg_stack_push_arg(grpc_arg_stack_t *s, void *arg) {
    if (!s) return gox_result(GRPC_OTHER_ERROR_CODE, "the argument stack is NULL");
    if (s->n == s->max)
        return gox_result(GRPC_OTHER_ERROR_CODE, "the argument stack is full (%d arguments)", s->max);
    s->items[s->n++] = arg;
    return gox_result(GRPC_NO_ERROR, NULL);
}

grpc_error_t grpc_stack_push(grpc_arg_stack_t *s, void *arg) {
    return grpc_arg_stack_push_arg(s, arg);
}

void *grpc_arg_stack_pop_arg(grpc_arg_stack_t *s) {
    if (!s || s->n == 0) return NULL;
    return s->items[--s->n];
}

grpc_error_t grpc_stack_pop(grpc_arg_stack_t *s, void **arg) {
    if (!s || !arg) return gox_result(GRPC_OTHER_ERROR_CODE, "the argument stack or ARG is NULL");
    *arg = grpc_arg_stack_pop_arg(s);
    return gox_result(GRPC_NO_ERROR, NULL);
}

grpc_error_t grpc_arg_stack_destruct(grpc_arg_stack_t *s) {
    if (!s) return gox_result(GRPC_OTHER_ERROR_CODE, "the argument stack is NULL");
    free(s->items);
    free(s);
    return gox_result(GRPC_NO_ERROR, NULL);
}

grpc_error_t grpc_stack_destruct(grpc_arg_stack_t *s) {
    return grpc_arg_stack_destruct(s);
}
