/* gsv_class.c: the classes of remote objects (DefClass) that modules define: loading
 * and checking them (every method's descriptor decodes and names its class), and
 * resolving the names clients use: "module/Class" or a unique "Class" for objects,
 * "module/Class.method" or "Class.method" for a method's descriptor. Built at startup,
 * then read-only like the rest of the registry. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gsv.h"

static void class_free(gsv_class *c) {
    if (!c) return;
    for (unsigned i = 0; i < c->nmethods; i++) {
        grd_free(c->methods[i].desc);
        free(c->methods[i].qualified);
    }
    for (unsigned i = 0; i < 2; i++) {
        grd_free(c->noop[i].desc);
        free(c->noop[i].qualified);
    }
    free(c->methods);
    free(c->qualified);
    free(c);
}

void gsv_classes_truncate(gsv_registry *reg, unsigned n) {
    while (reg->nclasses > n)
        class_free(reg->classes[--reg->nclasses]);
}

/* "module/Class.method" (malloc'd), its plain part after the '/'. */
static char *method_name(const char *mod, const char *cls, const char *m, const char **plain) {
    size_t len = strlen(mod) + strlen(cls) + strlen(m) + 3;
    char *q = malloc(len);
    if (!q) return NULL;
    snprintf(q, len, "%s/%s.%s", mod, cls, m);
    *plain = q + strlen(mod) + 1;
    return q;
}

/* The no-op standing for a missing _initialize or _finalize: nothing is invoked. */
static int make_noop(gsv_function *f, const char *mod, const char *cls, const char *m) {
    grd_desc *d = calloc(1, sizeof *d);
    f->qualified = method_name(mod, cls, m, &f->plain);
    if (!d || !f->qualified) {
        free(d);
        return -1;
    }
    d->version = GRD_FORMAT_VERSION;
    d->language = GRD_LANG_C;
    f->desc = d;
    f->stub = NULL;
    return 0;
}

static int valid_name(const char *s) {
    return s && *s && strlen(s) <= GRD_MAX_NAME && !strchr(s, '/') && !strchr(s, '.');
}

static int add_class(gsv_registry *reg, const char *mod, const gridrpc_stub_class *sc, const char *path,
                     gr_err *e) {
    if (!valid_name(sc->name) || (sc->nmethods && !sc->methods))
        return gr_seterr(e, GRID_ERR_CONFIG, "module '%s' has an invalid class table", path);
    for (unsigned i = 0; i < reg->nclasses; i++)
        if (strcmp(reg->classes[i]->stub->name, sc->name) == 0 &&
            strncmp(reg->classes[i]->qualified, mod, strlen(mod)) == 0 &&
            reg->classes[i]->qualified[strlen(mod)] == '/')
            return gr_seterr(e, GRID_ERR_CONFIG, "module '%s' defines class '%s' twice", path, sc->name);
    gsv_class *c = calloc(1, sizeof *c);
    gsv_class **cs = realloc(reg->classes, (reg->nclasses + 1) * sizeof *cs);
    if (cs) reg->classes = cs;
    if (!c || !cs || !(c->methods = calloc(sc->nmethods ? sc->nmethods : 1, sizeof *c->methods))) {
        free(c);
        return gr_seterr(e, GRID_ERR_NOMEM, "out of memory loading '%s'", path);
    }
    c->stub = sc;
    size_t len = strlen(mod) + 1 + strlen(sc->name) + 1;
    c->qualified = malloc(len);
    if (!c->qualified || make_noop(&c->noop[0], mod, sc->name, "_initialize") ||
        make_noop(&c->noop[1], mod, sc->name, "_finalize")) {
        class_free(c);
        return gr_seterr(e, GRID_ERR_NOMEM, "out of memory loading '%s'", path);
    }
    snprintf(c->qualified, len, "%s/%s", mod, sc->name);
    c->plain = c->qualified + strlen(mod) + 1;
    c->init = &c->noop[0];
    c->final = &c->noop[1];
    int rc = GRID_OK;
    for (unsigned i = 0; i < sc->nmethods && rc == GRID_OK; i++) {
        const gridrpc_stub_function *f = &sc->methods[i];
        gsv_function *g = &c->methods[i];
        grd_error de;
        if (!f->name || !*f->name || strlen(f->name) > GRD_MAX_NAME || !f->invoke || !f->descriptor) {
            rc = gr_seterr(e, GRID_ERR_CONFIG, "module '%s': method %u of class '%s' is invalid", path, i + 1,
                           sc->name);
            break;
        }
        for (unsigned j = 0; j < i; j++)
            if (strcmp(sc->methods[j].name, f->name) == 0)
                rc = gr_seterr(e, GRID_ERR_CONFIG, "module '%s': class '%s' defines method '%s' twice", path,
                               sc->name, f->name);
        if (rc) break;
        if (grd_decode(f->descriptor, f->descriptor_len, &g->desc, &de) != GRD_OK) {
            rc = gr_seterr(
                e, GRID_ERR_CONFIG,
                "module '%s': the descriptor of %s.%s does not decode (%s); rebuild the module with "
                "this version's idlc",
                path, sc->name, f->name, de.msg);
            break;
        }
        c->nmethods++; /* from here on class_free frees it */
        const grd_desc *d = g->desc;
        /* The argument vector's entry after the last parameter carries the state. */
        if (!(d->flags & GRD_FF_METHOD) || strcmp(d->cls, sc->name) != 0 || strcmp(d->name, f->name) != 0 ||
            strcmp(d->module, mod) != 0 || d->nparams >= GRD_MAX_PARAMS) {
            rc = gr_seterr(e, GRID_ERR_CONFIG,
                           "module '%s': the descriptor of %s.%s is not that method's (rebuild the module)",
                           path, sc->name, f->name);
            break;
        }
        if (!(g->qualified = method_name(mod, sc->name, f->name, &g->plain))) {
            rc = gr_seterr(e, GRID_ERR_NOMEM, "out of memory loading '%s'", path);
            break;
        }
        g->stub = f;
        int special = strcmp(f->name, "_initialize") == 0 ? 0 : strcmp(f->name, "_finalize") == 0 ? 1 : -1;
        if (special >= 0 && d->nparams) {
            rc = gr_seterr(e, GRID_ERR_CONFIG, "module '%s': %s.%s takes parameters, but it runs by itself",
                           path, sc->name, f->name);
            break;
        }
        if (special == 0) c->init = g;
        if (special == 1) c->final = g;
    }
    if (rc) {
        class_free(c);
        return rc;
    }
    reg->classes[reg->nclasses++] = c;
    return GRID_OK;
}

int gsv_classes_add(gsv_registry *reg, const gridrpc_stub_module_classes *t, const char *path, gr_err *e) {
    unsigned n0 = reg->nclasses;
    if (t->nclasses && !t->classes)
        return gr_seterr(e, GRID_ERR_CONFIG, "module '%s' has an invalid class table", path);
    for (unsigned i = 0; i < t->nclasses; i++) {
        int rc = add_class(reg, t->base.name, &t->classes[i], path, e);
        if (rc) {
            gsv_classes_truncate(reg, n0); /* a module is served whole or not at all */
            return rc;
        }
    }
    return GRID_OK;
}

const gsv_class *gsv_class_find(const gsv_registry *reg, const char *name, gr_err *e) {
    int qualified = strchr(name, '/') != NULL;
    const gsv_class *found = NULL;
    unsigned matches = 0;
    for (unsigned i = 0; i < reg->nclasses; i++) {
        const gsv_class *c = reg->classes[i];
        if (strcmp(qualified ? c->qualified : c->plain, name) == 0) {
            found = c;
            matches++;
        }
    }
    if (matches == 1) return found;
    if (matches > 1) {
        gr_seterr(e, GRID_ERR_NOT_FOUND,
                  "class name '%.300s' is ambiguous on this server: write module/%.300s", name, name);
        return NULL;
    }
    gr_seterr(e, GRID_ERR_NOT_FOUND,
              "no class '%.300s' on this server: check the name (module/Class, as DefClass declares it) and "
              "that gridrpcd loads the module that defines it",
              name);
    return NULL;
}

const gsv_function *gsv_class_method(const gsv_class *c, const char *method, gr_err *e) {
    for (unsigned i = 0; i < c->nmethods; i++)
        if (strcmp(c->methods[i].stub->name, method) == 0) return &c->methods[i];
    char list[600];
    size_t n = 0;
    list[0] = '\0';
    for (unsigned i = 0; i < c->nmethods && n < sizeof list; i++) {
        int w = snprintf(list + n, sizeof list - n, "%s%s", n ? ", " : "", c->methods[i].stub->name);
        if (w < 0) break;
        n += (size_t)w;
    }
    gr_seterr(e, GRID_ERR_NOT_FOUND, "class %s has no method '%.255s' (its methods: %s)", c->qualified,
              method, n ? list : "none");
    return NULL;
}

const gsv_function *gsv_method_find(const gsv_registry *reg, const char *name, gr_err *e) {
    const char *dot = strrchr(name, '.');
    if (!dot || dot == name || !dot[1]) {
        gr_seterr(e, GRID_ERR_NOT_FOUND, "'%.300s' names no method: write Class.method", name);
        return NULL;
    }
    char cls[GRP_MAX_FUNCTION_NAME + 1];
    size_t len = (size_t)(dot - name);
    if (len > GRP_MAX_FUNCTION_NAME) len = GRP_MAX_FUNCTION_NAME;
    memcpy(cls, name, len);
    cls[len] = '\0';
    const gsv_class *c = gsv_class_find(reg, cls, e);
    return c ? gsv_class_method(c, dot + 1, e) : NULL;
}
