/* grc_bind.c: remote data handles as a call's arguments. A handle passed where a
 * function takes an array (or bound by the transaction engine) makes the call a
 * CALL_DATA: its input is the handle's copy on the call's server (copied there server
 * to server first when it lies elsewhere), and its output stays there as the handle
 * instead of coming back. The handle objects and exchanges are grc_data.c's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grc_client.h"

/* "argument 3 ('B', IN double array)", as grm_call.c numbers them (the function's name
 * being the first argument; the call's errors are prefixed with the function). */
static const char *arg_name(const grc_req *q, uint32_t i, char *buf, size_t n) {
    const grd_param *p = &q->desc->params[i];
    snprintf(buf, n, "argument %u ('%s', %s %s%s)", i + 2, p->name, grd_mode_name(p->mode),
             grd_type_name(p->type), p->rank ? " array" : "");
    return buf;
}

static int numeric(uint32_t type) {
    return type >= GRD_CHAR && type <= GRD_DCOMPLEX;
}

/* The call's skip masks from its bindings (grp_refs_skip, as the server derives them). */
static void apply_skips(grc_req *q) {
    grp_ref refs[GRP_MAX_REFS];
    uint32_t n = grc_req_refs(q, refs);
    q->call->skip[0] = q->call->skip[GRM_TO_SERVER] = q->call->skip[GRM_TO_CLIENT] = 0;
    grp_refs_skip(refs, n, q->call->skip);
}

uint32_t grc_req_refs(const grc_req *q, grp_ref *refs) {
    uint32_t n = 0;
    if (!q->nbind || !q->desc) return 0;
    for (uint32_t i = 0; i < q->desc->nparams && n < GRP_MAX_REFS; i++)
        if (q->bind[i].h) {
            refs[n].param = i;
            refs[n].flags = q->bind[i].flags;
            refs[n].handle = grc_data_id(q->bind[i].h);
            n++;
        }
    return n;
}

/* What the flags of a binding may be for a parameter of MODE (the wire's rules). */
static int flags_ok(uint32_t mode, unsigned flags) {
    if (!flags || (flags & ~(unsigned)GRP_REF_ALL)) return 0;
    if ((flags & GRP_REF_RETURN) && !(flags & GRP_REF_KEEP)) return 0;
    if (mode == GRD_IN) return flags == GRP_REF_IN;
    if (mode == GRD_OUT) return !(flags & GRP_REF_IN);
    return mode == GRD_INOUT;
}

/* Checks binding H (FLAGS) of parameter P against the descriptor and the call's sizes. */
static int check_binding(const grc_req *q, uint32_t p, grc_data *h, unsigned flags, gr_err *e) {
    char nm[600];
    const grd_param *par = &q->desc->params[p];
    if (par->rank == 0 || !numeric(par->type) || par->mode == GRD_WORK)
        return gr_seterr(e, GRID_ERR_ARGS, "%s is not a number array: it cannot be a data handle",
                         arg_name(q, p, nm, sizeof nm));
    if (!flags_ok(par->mode, flags))
        return gr_seterr(e, GRID_ERR_ARGS, "%s cannot be bound to a data handle with flags 0x%x",
                         arg_name(q, p, nm, sizeof nm), flags);
    uint64_t want = q->call->sl[p].ext.elems;
    if (grc_data_type(h) != par->type || grc_data_count(h) != want) {
        const char *tn = grd_type_name(par->type), *hn = grd_type_name(grc_data_type(h));
        return gr_seterr(
            e, GRID_ERR_ARGS,
            "%s takes %llu %s%s; data handle %llu holds %llu %s%s: pass a handle of that type and "
            "size, or the array itself",
            arg_name(q, p, nm, sizeof nm), (unsigned long long)want, tn, want == 1 ? "" : "s",
            (unsigned long long)grc_data_id(h), (unsigned long long)grc_data_count(h), hn,
            grc_data_count(h) == 1 ? "" : "s");
    }
    return GRID_OK;
}

int grc_req_bind(grc_req *q, uint32_t p, grc_data *h, unsigned flags, gr_err *e) {
    if (!q->call || p >= q->desc->nparams || !h)
        return gr_seterr(e, GRID_ERR_INTERNAL, "grc_req_bind: parameter %u of a call of %u, or no handle", p,
                         q->desc ? q->desc->nparams : 0);
    if (!grp_object_id_zero(q->object))
        return gr_seterr(
            e, GRID_ERR_ARGS,
            "methods of remote objects take no data handles (argument %u): pass the array itself", p + 2);
    int rc = check_binding(q, p, h, flags, e);
    if (rc) return rc;
    grc_data_ref(h);
    if (q->bind[p].h)
        grc_data_release(q->bind[p].h);
    else
        q->nbind++;
    q->bind[p].h = h;
    q->bind[p].flags = flags;
    apply_skips(q);
    return GRID_OK;
}

int grc_req_bind_args(grc_req *q, gr_err *e) {
    const grd_desc *d = q->desc;
    for (uint32_t i = 0; i < d->nparams; i++) {
        const grd_param *p = &d->params[i];
        if (p->rank == 0 || p->type == GRD_CALLBACK || p->mode == GRD_WORK || !q->call->ptr[i]) continue;
        grc_data *h = grc_data_take(q->call->ptr[i]);
        if (!h) continue;
        unsigned flags = p->mode == GRD_IN    ? GRP_REF_IN
                         : p->mode == GRD_OUT ? GRP_REF_KEEP
                                              : GRP_REF_IN | GRP_REF_KEEP;
        int rc = grc_req_bind(q, i, h, flags, e);
        grc_data_release(h);
        if (rc) return rc;
    }
    return GRID_OK;
}

int grc_req_rebind(grc_req *q, gr_err *e) {
    if (!q->nbind) return GRID_OK;
    for (uint32_t i = 0; i < q->desc->nparams; i++)
        if (q->bind[i].h) {
            int rc = check_binding(q, i, q->bind[i].h, q->bind[i].flags, e);
            if (rc) return rc;
        }
    apply_skips(q);
    return GRID_OK;
}

void grc_req_unbind(grc_req *q) {
    if (!q->nbind) return;
    /* Only the descriptor's entries are set (grc_req_fill clears those alone). */
    for (uint32_t i = 0; i < q->desc->nparams; i++)
        if (q->bind[i].h) {
            grc_data_release(q->bind[i].h);
            q->bind[i].h = NULL;
            q->bind[i].flags = 0;
        }
    q->nbind = 0;
}

int grc_req_place(grc_req *q, const grc_config *cfg, int *server_failed, gr_err *e) {
    *server_failed = 0;
    if (!q->nbind) return GRID_OK;
    grc_data_flush(cfg);
    for (uint32_t i = 0; i < q->desc->nparams; i++) {
        grc_data *h = q->bind[i].h;
        if (!h || !(q->bind[i].flags & GRP_REF_IN)) continue;
        int rc = grc_data_copy_to(h, q->t.host, q->t.port, q->route.server_id, cfg, server_failed, e);
        if (rc) {
            char nm[600];
            gr_prefixerr(e, "%s: ", arg_name(q, i, nm, sizeof nm));
            return rc;
        }
    }
    return GRID_OK;
}

void grc_req_settle(grc_req *q, int code) {
    if (!q->nbind || code != GRID_OK) return;
    for (uint32_t i = 0; i < q->desc->nparams; i++)
        if (q->bind[i].h && (q->bind[i].flags & GRP_REF_KEEP))
            grc_data_kept_on(q->bind[i].h, q->t.host, q->t.port, q->route.server_id);
}

size_t grc_req_data_sites(const grc_req *q, grc_data_site *out, size_t max) {
    size_t n = 0;
    if (!q->nbind) return 0;
    enum { MAXC = 64 };
    char hosts[MAXC][GRC_MAX_HOST];
    int ports[MAXC];
    uint64_t ids[MAXC];
    for (uint32_t i = 0; i < q->desc->nparams; i++) {
        grc_data *h = q->bind[i].h;
        if (!h || !(q->bind[i].flags & GRP_REF_IN)) continue;
        uint64_t bytes = grp_data_bytes(grc_data_type(h), grc_data_count(h));
        int nc = grc_data_copies(h, hosts, ports, ids, MAXC);
        for (int k = 0; k < nc; k++) {
            size_t j = 0;
            while (j < n && !(out[j].port == ports[k] && strcmp(out[j].host, hosts[k]) == 0))
                j++;
            if (j == n) {
                if (n == max) continue;
                memset(&out[n], 0, sizeof out[n]);
                memcpy(out[n].host, hosts[k], sizeof out[n].host);
                out[n].port = ports[k];
                n++;
            }
            out[j].bytes += bytes;
            if (ids[k]) out[j].server_id = ids[k];
        }
    }
    return n;
}
