/* gsv_registry.c: the functions gridrpcd serves. Loads stub modules (dlopen, then the
 * module table from gridrpc_stub_entry), checks them (ABI, names, every descriptor
 * decodes and names its function) before serving anything from them, and resolves
 * the names clients call: "module/function" always, "function" when it is unique.
 * Built at startup, then read-only: lookups take no lock. */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "gr_suggest.h"
#include "gsv.h"

static int valid_name(const char *s) {
    if (!s || !*s || strlen(s) > GRD_MAX_NAME) return 0;
    return strchr(s, '/') == NULL;
}

/* Decodes and checks every function of TABLE; on success appends them to REG. */
static int add_functions(gsv_registry *reg, const gridrpc_stub_module *t, const char *path, gr_err *e) {
    gsv_function *fns = realloc(reg->fns, (reg->nfns + t->nfunctions) * sizeof *fns);
    if (!fns) return gr_seterr(e, GRID_ERR_NOMEM, "out of memory loading '%s'", path);
    reg->fns = fns;
    unsigned added = 0;
    int rc = GRID_OK;
    for (unsigned i = 0; i < t->nfunctions && rc == GRID_OK; i++) {
        const gridrpc_stub_function *f = &t->functions[i];
        gsv_function *g = &fns[reg->nfns + added];
        grd_error de;
        if (!valid_name(f->name) || !f->invoke || !f->descriptor) {
            rc = gr_seterr(e, GRID_ERR_CONFIG,
                           "module '%s': function %u has no valid name, descriptor or invoke routine", path,
                           i);
            break;
        }
        for (unsigned j = 0; j < i; j++)
            if (strcmp(t->functions[j].name, f->name) == 0)
                rc = gr_seterr(e, GRID_ERR_CONFIG, "module '%s' defines function '%s' twice", path, f->name);
        if (rc) break;
        memset(g, 0, sizeof *g);
        if (grd_decode(f->descriptor, f->descriptor_len, &g->desc, &de) != GRD_OK) {
            rc =
                gr_seterr(e, GRID_ERR_CONFIG,
                          "module '%s': the descriptor of '%s' does not decode (%s); rebuild the module with "
                          "this version's idlc",
                          path, f->name, de.msg);
            break;
        }
        if (strcmp(g->desc->name, f->name) != 0 || strcmp(g->desc->module, t->name) != 0) {
            rc = gr_seterr(e, GRID_ERR_CONFIG, "module '%s': the descriptor of '%s/%s' names '%s/%s'", path,
                           t->name, f->name, g->desc->module, g->desc->name);
            grd_free(g->desc);
            break;
        }
        size_t len = strlen(t->name) + 1 + strlen(f->name) + 1;
        g->qualified = malloc(len);
        if (!g->qualified) {
            grd_free(g->desc);
            rc = gr_seterr(e, GRID_ERR_NOMEM, "out of memory loading '%s'", path);
            break;
        }
        snprintf(g->qualified, len, "%s/%s", t->name, f->name);
        g->plain = g->qualified + strlen(t->name) + 1;
        g->stub = f;
        added++;
    }
    if (rc) {
        /* All or nothing: a module is served whole or not at all. */
        for (unsigned j = 0; j < added; j++) {
            grd_free(fns[reg->nfns + j].desc);
            free(fns[reg->nfns + j].qualified);
        }
        return rc;
    }
    reg->nfns += added;
    return GRID_OK;
}

int gsv_registry_load(gsv_registry *reg, const char *path, gr_err *e) {
    /* RTLD_LOCAL: two modules may define helpers of the same name. */
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) return gr_seterr(e, GRID_ERR_CONFIG, "cannot load module '%s': %s", path, dlerror());
    gridrpc_stub_entry_fn entry;
    /* dlsym returns void *; POSIX guarantees it converts to a function pointer. */
    *(void **)&entry = dlsym(h, GRIDRPC_STUB_ENTRY_SYMBOL);
    if (!entry) {
        dlclose(h);
        return gr_seterr(e, GRID_ERR_CONFIG,
                         "'%s' is not a GridRPC module: it has no %s(); build modules from IDL with idlc",
                         path, GRIDRPC_STUB_ENTRY_SYMBOL);
    }
    const gridrpc_stub_module *t = entry();
    if (!t) {
        dlclose(h);
        return gr_seterr(e, GRID_ERR_CONFIG, "module '%s': %s() returned no module table", path,
                         GRIDRPC_STUB_ENTRY_SYMBOL);
    }
    if (t->abi != GRIDRPC_STUB_ABI && t->abi != GRIDRPC_STUB_ABI_CLASSES) {
        /* The message first: T lives in the module. */
        gr_seterr(e, GRID_ERR_CONFIG,
                  "module '%s' was built for stub ABI %u but this gridrpcd speaks ABI %u; rebuild it with "
                  "this version's idlc",
                  path, t->abi, GRIDRPC_STUB_ABI);
        dlclose(h);
        return GRID_ERR_CONFIG;
    }
    if (!valid_name(t->name) || (t->nfunctions && !t->functions)) {
        dlclose(h);
        return gr_seterr(e, GRID_ERR_CONFIG, "module '%s' has an invalid module table", path);
    }
    for (unsigned i = 0; i < reg->nmods; i++) {
        if (strcmp(reg->mods[i].table->name, t->name) == 0) {
            gsv_log(GSV_LOG_WARN, "module '%s' from '%s' is already loaded from '%s'; ignoring '%s'", t->name,
                    path, reg->mods[i].path, path);
            dlclose(h);
            return GRID_OK;
        }
    }
    gsv_module *mods = realloc(reg->mods, (reg->nmods + 1) * sizeof *mods);
    char *p = strdup(path);
    if (!mods || !p) {
        if (mods) reg->mods = mods;
        free(p);
        dlclose(h);
        return gr_seterr(e, GRID_ERR_NOMEM, "out of memory loading '%s'", path);
    }
    reg->mods = mods;
    /* Classes first (gsv_class.c): the functions are the last step that can fail. */
    unsigned nclasses = reg->nclasses;
    int rc = t->abi == GRIDRPC_STUB_ABI_CLASSES
                 ? gsv_classes_add(reg, (const gridrpc_stub_module_classes *)(const void *)t, path, e)
                 : GRID_OK;
    if (!rc) rc = add_functions(reg, t, path, e);
    if (rc) {
        gsv_classes_truncate(reg, nclasses);
        free(p);
        dlclose(h);
        return rc;
    }
    mods[reg->nmods].handle = h;
    mods[reg->nmods].path = p;
    mods[reg->nmods].table = t;
    reg->nmods++;
    unsigned added_classes = reg->nclasses - nclasses;
    if (added_classes)
        gsv_log(GSV_LOG_INFO, "loaded module '%s' (%u function%s, %u class%s) from '%s'", t->name,
                t->nfunctions, t->nfunctions == 1 ? "" : "s", added_classes, added_classes == 1 ? "" : "es",
                path);
    else
        gsv_log(GSV_LOG_INFO, "loaded module '%s' (%u function%s) from '%s'", t->name, t->nfunctions,
                t->nfunctions == 1 ? "" : "s", path);
    return GRID_OK;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int gsv_registry_load_dir(gsv_registry *reg, const char *dir, int missing_ok, gr_err *e) {
    DIR *d = opendir(dir);
    if (!d) {
        if (missing_ok && errno == ENOENT) {
            gsv_log(GSV_LOG_DEBUG, "module directory '%s' does not exist", dir);
            return GRID_OK;
        }
        return gr_seterr(e, GRID_ERR_CONFIG, "cannot read module directory '%s': %s", dir, strerror(errno));
    }
    char **names = NULL;
    size_t n = 0;
    struct dirent *de;
    int rc = GRID_OK;
    while ((de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name);
        if (len < 4 || strcmp(de->d_name + len - 3, ".so") != 0) continue;
        char **nn = realloc(names, (n + 1) * sizeof *nn);
        if (!nn) {
            rc = gr_seterr(e, GRID_ERR_NOMEM, "out of memory reading '%s'", dir);
            break;
        }
        names = nn;
        if (!(names[n] = strdup(de->d_name))) {
            rc = gr_seterr(e, GRID_ERR_NOMEM, "out of memory reading '%s'", dir);
            break;
        }
        n++;
    }
    closedir(d);
    /* Sorted, so which of two same-named modules wins does not depend on the file system. */
    if (n) qsort(names, n, sizeof *names, cmp_str);
    for (size_t i = 0; i < n; i++) {
        if (rc == GRID_OK) {
            size_t len = strlen(dir) + 1 + strlen(names[i]) + 1;
            char *path = malloc(len);
            if (!path) {
                rc = gr_seterr(e, GRID_ERR_NOMEM, "out of memory reading '%s'", dir);
            } else {
                gr_err le;
                snprintf(path, len, "%s/%s", dir, names[i]);
                if (gsv_registry_load(reg, path, &le) != GRID_OK)
                    gsv_log(GSV_LOG_ERROR, "%s (skipped)", le.msg);
                free(path);
            }
        }
        free(names[i]);
    }
    free(names);
    return rc;
}

static int cmp_qualified(const void *a, const void *b) {
    return strcmp(((const gsv_function *)a)->qualified, ((const gsv_function *)b)->qualified);
}

static int cmp_plain(const void *a, const void *b) {
    const gsv_function *x = *(gsv_function *const *)a, *y = *(gsv_function *const *)b;
    int c = strcmp(x->plain, y->plain);
    return c ? c : strcmp(x->qualified, y->qualified);
}

int gsv_registry_seal(gsv_registry *reg, gr_err *e) {
    if (reg->nfns == 0) return GRID_OK;
    qsort(reg->fns, reg->nfns, sizeof *reg->fns, cmp_qualified);
    reg->by_plain = malloc(reg->nfns * sizeof *reg->by_plain);
    if (!reg->by_plain) return gr_seterr(e, GRID_ERR_NOMEM, "out of memory");
    for (unsigned i = 0; i < reg->nfns; i++)
        reg->by_plain[i] = &reg->fns[i];
    qsort(reg->by_plain, reg->nfns, sizeof *reg->by_plain, cmp_plain);
    return GRID_OK;
}

/* First index in by_plain whose plain name is NAME, or nfns. */
static unsigned first_plain(const gsv_registry *reg, const char *name) {
    unsigned lo = 0, hi = reg->nfns;
    while (lo < hi) {
        unsigned mid = lo + (hi - lo) / 2;
        if (strcmp(reg->by_plain[mid]->plain, name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The served name NAME is likeliest a typo of: a qualified one for "module/function", a
 * plain one (or, when that is ambiguous, its first qualified name) for "function". */
static const char *closest(const gsv_registry *reg, const char *name) {
    int qualified = strchr(name, '/') != NULL;
    gr_suggest s;
    gr_suggest_init(&s, name);
    for (unsigned i = 0; i < reg->nfns; i++)
        gr_suggest_offer(&s, qualified ? reg->fns[i].qualified : reg->by_plain[i]->plain);
    const char *best = gr_suggest_best(&s);
    if (!best || qualified) return best;
    unsigned i = first_plain(reg, best);
    if (i + 1 < reg->nfns && strcmp(reg->by_plain[i + 1]->plain, best) == 0)
        return reg->by_plain[i]->qualified;
    return best;
}

/* The address C's client reached this server at (the socket's own end, so a server on
 * every interface names the one used), as `gridrpc --server` takes it. */
static void conn_address(const gsv_conn *c, char *out, size_t n) {
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    char addr[96];
    if (!c || getsockname(c->fd, (struct sockaddr *)&ss, &sl) != 0) {
        snprintf(out, n, "HOST:PORT");
        return;
    }
    gdm_format_addr((struct sockaddr *)&ss, addr, sizeof addr, NULL, 0);
    snprintf(out, n, "%s%s", c->tls ? "gridrpcs://" : "", addr);
}

const gsv_function *gsv_registry_find(const gsv_registry *reg, const char *name, const gsv_conn *c,
                                      gr_err *e) {
    if (strchr(name, '/')) {
        unsigned lo = 0, hi = reg->nfns;
        while (lo < hi) {
            unsigned mid = lo + (hi - lo) / 2;
            int cmp = strcmp(reg->fns[mid].qualified, name);
            if (cmp == 0) return &reg->fns[mid];
            if (cmp < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
    } else if (reg->nfns) {
        unsigned i = first_plain(reg, name), j = i;
        while (j < reg->nfns && strcmp(reg->by_plain[j]->plain, name) == 0)
            j++;
        if (j == i + 1) return reg->by_plain[i];
        if (j > i + 1) {
            char list[700];
            size_t n = 0;
            list[0] = '\0';
            for (unsigned k = i; k < j && n < sizeof list - 1; k++) {
                int w = snprintf(list + n, sizeof list - n, "%s%s", k > i ? ", " : "",
                                 reg->by_plain[k]->qualified);
                if (w < 0) break;
                n += (size_t)w;
            }
            if (n >= sizeof list) n = sizeof list - 1;
            gr_seterr(e, GRID_ERR_NOT_FOUND, "function name '%s' is ambiguous on this server: call one of %s",
                      name, list);
            return NULL;
        }
    }
    char hint[GR_SUGGEST_MAX + 32] = "", where[128];
    const char *best = closest(reg, name);
    if (best) snprintf(hint, sizeof hint, "did you mean '%s'? ", best);
    conn_address(c, where, sizeof where);
    gr_seterr(e, GRID_ERR_NOT_FOUND,
              "no function '%.300s' on this server; %s`gridrpc ls --server %s` lists its functions", name,
              hint, where);
    return NULL;
}

void *gsv_registry_find_symbol(const gsv_registry *reg, const char *sym) {
    void *p = dlsym(RTLD_DEFAULT, sym);
    /* Modules are loaded RTLD_LOCAL, so their libraries (OpenBLAS) are not in the
     * global scope: look through each module's own dependencies too. */
    for (unsigned i = 0; !p && i < reg->nmods; i++)
        p = dlsym(reg->mods[i].handle, sym);
    return p;
}

void gsv_registry_free(gsv_registry *reg) {
    for (unsigned i = 0; i < reg->nfns; i++) {
        grd_free(reg->fns[i].desc);
        free(reg->fns[i].qualified);
    }
    /* Modules stay mapped: a worker that outlived the shutdown timeout may still run
     * their code, and unloading at exit gains nothing. */
    for (unsigned i = 0; i < reg->nmods; i++)
        free(reg->mods[i].path);
    gsv_classes_truncate(reg, 0);
    free(reg->classes);
    reg->classes = NULL;
    free(reg->fns);
    free(reg->by_plain);
    free(reg->mods);
    reg->fns = NULL;
    reg->by_plain = NULL;
    reg->mods = NULL;
    reg->nfns = reg->nmods = 0;
}
