/* gsv_exec_main.c: an executor process (gsv_exec.c starts them): gridrpcd run again
 * with the hidden GSV_EXEC_ARG, which loads the server's modules from the server's own
 * options and then runs the calls the server puts in its region, one at a time, until
 * the server is gone. Nothing here trusts the function: it may crash, exit, loop or
 * allocate without end; the server sees only this process end. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gsv_exec.h"

static gsv_server ex;
static gsv_xregion *region;
static uint64_t mapped;
static void (*blas_set)(int);
static int blas_now;
static int limited; /* RLIMIT_AS was set for the last call */

/* The top of the main stack and how far it may grow, for telling a stack overflow
 * from another SIGSEGV. */
static uintptr_t stack_top;
static rlim_t stack_max;

/* A function that calls exit() ends the executor here, with its status: the stdio
 * buffers and destructors of the modules are not worth a hang in a lock a dying
 * thread held. */
static void exit_now(int status, void *arg) {
    (void)arg;
    _exit(status);
}

static void on_fault(int sig, siginfo_t *si, void *uc) {
    /* The faulting thread's errno: ENOMEM when its last allocation failed. */
    int err = errno;
    (void)uc;
    uintptr_t a = (uintptr_t)si->si_addr;
    /* Within the stack's limit below its top, plus the guard gap. */
    if (region && sig == SIGSEGV && a < stack_top && stack_top - a <= stack_max + ((uintptr_t)1 << 20))
        atomic_store(&region->fault, GSV_XFAULT_STACK);
    else if (region && limited && err == ENOMEM)
        atomic_store(&region->fault, GSV_XFAULT_MEMORY);
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Fault handlers on a stack of their own (the main one may be the one that is full):
 * they tell a stack overflow, and a fault after an allocation failed under
 * --call-memory, from another death. */
static void catch_overflow(void) {
    static char alt[64 * 1024];
    stack_t ss = {.ss_sp = alt, .ss_size = sizeof alt, .ss_flags = 0};
    struct rlimit rl;
    int here;
    stack_top = (uintptr_t)&here;
    stack_max = getrlimit(RLIMIT_STACK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY ? rl.rlim_cur : 8u << 20;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    if (sigaltstack(&ss, NULL) == 0) {
        sigaction(SIGSEGV, &sa, NULL);
        sigaction(SIGBUS, &sa, NULL);
        sigaction(SIGABRT, &sa, NULL);
    }
}

/* Maps the region as far as the server says the call uses it. */
static int map_region(void) {
    uint64_t need = region ? region->size : GSV_XDATA;
    if (region && need <= mapped) return 0;
    struct stat st;
    if (fstat(GSV_XFD_MEM, &st) || (uint64_t)st.st_size < need || need < GSV_XDATA) return -1;
    if (region) munmap(region, (size_t)mapped);
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, GSV_XFD_MEM, 0);
    if (p == MAP_FAILED) {
        region = NULL;
        return -1;
    }
    region = p;
    mapped = (uint64_t)st.st_size;
    return 0;
}

/* --call-memory: the address space may grow by that much during the call. */
static void limit_memory(uint64_t bytes) {
    static uint64_t base_vm;
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long pages = 0;
    if (f) {
        if (fscanf(f, "%lu", &pages) != 1) pages = 0;
        fclose(f);
    }
    uint64_t vm = (uint64_t)pages * (uint64_t)sysconf(_SC_PAGESIZE);
    if (vm > base_vm) base_vm = vm;
    struct rlimit rl = {(rlim_t)(base_vm + bytes), RLIM_INFINITY};
    setrlimit(RLIMIT_AS, &rl);
}

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22 /* Linux 5.14; older headers lack it */
#endif

/* The shared buffers mapped for the running call (unmapped after it). */
static struct {
    void *p;
    size_t len;
} maps[GRD_MAX_PARAMS];
static unsigned nmaps;

static void unmap_buffers(void) {
    for (unsigned i = 0; i < nmaps; i++)
        munmap(maps[i].p, maps[i].len);
    nmaps = 0;
}

/* Maps parameter I's shared buffer FD (LEN bytes): shared for what the function writes
 * back, copy-on-write for an input (the server sent it read-only). NULL if it cannot.
 * Every page is mapped at once (one system call, not a fault per page), but an input's
 * only for reading: MAP_POPULATE on a private writable mapping breaks copy-on-write for
 * every page, which copied each input whole (two 32 MB copies in a dmmul of n = 2000). */
static void *map_buffer(int fd, uint64_t len, int input) {
    void *p = mmap(NULL, (size_t)len, PROT_READ | PROT_WRITE, input ? MAP_PRIVATE : MAP_SHARED | MAP_POPULATE,
                   fd, 0);
    if (p == MAP_FAILED) {
        gsv_log(GSV_LOG_ERROR, "cannot map a call's array of %llu bytes: %s", (unsigned long long)len,
                strerror(errno));
        return NULL;
    }
    if (input) madvise(p, (size_t)len, MADV_POPULATE_READ); /* only faster: a kernel without it faults */
    maps[nmaps].p = p;
    maps[nmaps++].len = (size_t)len;
    return p;
}

/* The server's count of calls handed over, as this executor last saw it. */
static unsigned seen;

/* Waits until the server hands the call over (a new call, or the current one back after
 * a callback): spins a little first (gsv_exec.h), then says it sleeps and looks at the
 * count once more before it does, so a count moved meanwhile is seen here or woken
 * through the eventfd (gsv_exec.c's hand_over). */
static void wait_go(void) {
    for (;;) {
        if (!gsv_exec_spin(&region->go, seen, GSV_XSPIN_EXEC_NS)) {
            atomic_store(&region->exec_sleeps, 1);
            if (atomic_load(&region->go) == seen) {
                struct pollfd pf[2] = {{GSV_XFD_GO, POLLIN, 0}, {GSV_XFD_CTL, POLLIN, 0}};
                if (poll(pf, 2, -1) < 0 && errno != EINTR) _exit(1);
                if (pf[1].revents) _exit(0); /* the server is gone */
                uint64_t v;
                if ((pf[0].revents & POLLIN) && read(GSV_XFD_GO, &v, sizeof v) < 0 && errno != EINTR)
                    _exit(1);
            }
            atomic_store(&region->exec_sleeps, 0);
            if (atomic_load(&region->go) == seen) continue; /* a wake-up left from an earlier call */
        }
        seen = atomic_load(&region->go);
        return;
    }
}

/* Gives the call's turn to the server: the call ended, or it asks for a callback. */
static void signal_done(void) {
    atomic_store(&region->done, seen);
    if (atomic_load(&region->server_sleeps)) {
        uint64_t v = 1;
        if (write(GSV_XFD_DONE, &v, sizeof v) != (ssize_t)sizeof v) _exit(1);
    }
}

/* The running call's function and its callbacks' descriptors (made at first use). */
static const gsv_function *running;
static grd_desc *cb_desc[GRD_MAX_PARAMS];
static gridrpc_stub_callback xcb[GRD_MAX_PARAMS];

/* A callback called by the running function (the stub's entry, as gsv_callback.c's
 * cb_call in the server's process): its arguments go to the server, in the region and
 * a shared buffer, the server runs it with the client, and the outputs come back into
 * the body's variables and arrays. Arrays travel whole both ways, so the parts of an
 * array that do not cross the wire keep what the body had there. */
static int xcb_call(const gridrpc_stub_callback *self, void **args) {
    gsv_xregion *r = region;
    uint32_t idx = self->index;
    if (!running || self != &xcb[idx] || idx >= running->desc->nparams) return GRIDRPC_STUB_CALLBACK_OUTSIDE;
    grd_error ge;
    if (!cb_desc[idx] && grd_callback_desc(running->desc, idx, r->ival, &cb_desc[idx], &ge) != GRD_OK)
        return GRID_ERR_ARGS;
    const grd_desc *d = cb_desc[idx];
    grm_call *c = malloc(grm_call_size(d->nparams));
    if (!c) return GRID_ERR_NOMEM;
    grw_limits lim;
    grp_limits_default(&lim);
    gr_err e;
    if (grm_from_argv(c, d, args, &lim, &e)) {
        free(c);
        return e.code;
    }
    uint64_t total = 0, off[GRD_MAX_PARAMS], len[GRD_MAX_PARAMS];
    for (uint32_t k = 0; k < d->nparams; k++) {
        const grd_param *p = &d->params[k];
        len[k] = p->rank > 0 && args[k] ? c->sl[k].ext.bytes : 0;
        off[k] = total;
        total += (len[k] + 63) & ~(uint64_t)63;
    }
    uint8_t *buf = total ? gr_shbuf_alloc((size_t)total, 0) : NULL;
    if (total && !buf) {
        free(c);
        return GRID_ERR_NOMEM;
    }
    for (uint32_t k = 0; k < d->nparams; k++) {
        const grd_param *p = &d->params[k];
        r->cb_off[k] = off[k];
        r->cb_len[k] = len[k];
        memset(&r->cb_val[k], 0, sizeof r->cb_val[k]);
        if (p->rank > 0) {
            if (len[k]) memcpy(buf + off[k], args[k], (size_t)len[k]);
        } else if (args[k] && p->mode != GRD_OUT) {
            memcpy(&r->cb_val[k], args[k], grd_type_size(p->type));
        }
    }
    r->cb_index = idx;
    r->cb_size = total;
    r->cb_pass = buf != NULL;
    r->cb_rc = GRID_ERR_CONN_LOST;
    int fd = buf ? gr_shbuf_fd(buf, NULL) : -1;
    if (buf && gsv_exec_send_fds(GSV_XFD_PASS, &fd, 1)) _exit(1); /* the server sees it end */
    atomic_store(&r->state, GSV_XSTATE_CALLBACK);
    signal_done();
    wait_go();
    atomic_store(&r->state, GSV_XSTATE_RUNNING);
    int rc = r->cb_rc;
    for (uint32_t k = 0; !rc && k < d->nparams; k++) {
        const grd_param *p = &d->params[k];
        if (p->mode == GRD_IN || !args[k]) continue;
        if (p->rank > 0) {
            if (len[k]) memcpy(args[k], buf + off[k], (size_t)len[k]);
        } else {
            memcpy(args[k], &r->cb_val[k], grd_type_size(p->type));
        }
    }
    gr_shbuf_free(buf);
    free(c);
    return rc;
}

/* A remote object's executor (gsv_exec_actor.c): the object's class and state, made at
 * its first call and kept for every later one. */
static const gsv_class *obj_class;
static void *obj_state;

/* The function the region names: a function of the registry, or an object's method (the
 * state made at the first, for this one object only); NULL when it names nothing here. */
static const gsv_function *called(const gsv_xregion *r) {
    if (!r->cls)
        return r->fn < ex.reg.nfns && ex.reg.fns[r->fn].desc->hash == r->hash ? &ex.reg.fns[r->fn] : NULL;
    const gsv_class *cls = r->cls <= ex.reg.nclasses ? ex.reg.classes[r->cls - 1] : NULL;
    if (!cls || r->method >= cls->nmethods || (obj_class && obj_class != cls)) return NULL;
    const gsv_function *f = &cls->methods[r->method];
    if (!f->stub || f->desc->hash != r->hash) return NULL;
    if (!obj_state) {
        obj_state = calloc(1, cls->stub->state_size ? cls->stub->state_size : 1);
        if (!obj_state) return NULL;
        obj_class = cls;
    }
    return f;
}

/* Hands the OUT and INOUT strings the function left in STR to the server: their bytes in
 * one shared buffer sent on the pass socket (gsv_exec.h's str_*); -1 if it cannot. */
static int put_strings(const grd_desc *d, char *const *str) {
    gsv_xregion *r = region;
    uint64_t total = 0;
    int any = 0;
    for (uint32_t i = 0; i < d->nparams; i++) {
        const grd_param *p = &d->params[i];
        r->str_off[i] = r->str_len[i] = 0;
        if (p->type != GRD_STRING || p->rank != 0 || (p->mode != GRD_OUT && p->mode != GRD_INOUT)) continue;
        any = 1;
        r->str_off[i] = total;
        r->str_len[i] = str[i] ? strlen(str[i]) + 1 : 0;
        total += r->str_len[i];
    }
    if (!any) return 0;
    /* One byte at least: a buffer of none cannot be made, and the server must still hear
     * of the NULLs. */
    uint8_t *buf = gr_shbuf_alloc((size_t)(total ? total : 1), 1);
    if (!buf) return -1;
    for (uint32_t i = 0; i < d->nparams; i++)
        if (r->str_len[i]) memcpy(buf + r->str_off[i], str[i], (size_t)r->str_len[i]);
    if (!total) buf[0] = 0;
    int fd = gr_shbuf_fd(buf, NULL);
    int rc = gsv_exec_send_fds(GSV_XFD_PASS, &fd, 1);
    gr_shbuf_free(buf); /* the message holds the memfd until the server takes it */
    if (rc) return -1;
    r->str_size = total ? total : 1;
    r->str_pass = 1;
    return 0;
}

/* Runs the call in the region: GSV_XSTATE_DONE, or BAD when it names no function here
 * or its buffers cannot be mapped. */
static int run_call(void) {
    gsv_xregion *r = region;
    /* The call's descriptors first, whatever else is wrong: left on the socket, they
     * would be taken for the next call's. */
    int fds[GRD_MAX_PARAMS];
    uint32_t npass = r->npass;
    if (npass && gsv_exec_receive_fds(GSV_XFD_PASS, fds, GRD_MAX_PARAMS) != (int)npass) return GSV_XSTATE_BAD;
    const gsv_function *f = called(r);
    /* gridrpc_stub.h: after a method's last argument comes its object's state. */
    void *ptr[GRD_MAX_PARAMS + 1];
    char *str[GRD_MAX_PARAMS] = {0};
    uint8_t *base = (uint8_t *)r;
    int bad = !f;
    for (uint32_t i = 0; !bad && i < f->desc->nparams; i++) {
        const grd_param *p = &f->desc->params[i];
        uint64_t off = r->off[i], len = r->len[i];
        int32_t k = r->pass[i];
        int text = p->type == GRD_STRING || p->type == GRD_FILENAME;
        void *d = NULL;
        if (p->type == GRD_CALLBACK) {
            xcb[i] = (gridrpc_stub_callback){.call = xcb_call, .server = NULL, .index = i};
            ptr[i] = &xcb[i];
            continue;
        }
        if (k >= 0) {
            bad = (uint32_t)k >= npass || !len || p->rank == 0 || text ||
                  !(d = map_buffer(fds[k], len, p->mode == GRD_IN));
            ptr[i] = d;
            continue;
        }
        if (len && (off < GSV_XDATA || off > mapped || len > mapped - off)) {
            bad = 1;
            continue;
        }
        d = len ? base + off : NULL;
        if (text) {
            bad = len && ((char *)d)[len - 1] != '\0';
            str[i] = d;
            ptr[i] = &str[i];
        } else {
            ptr[i] = p->rank == 0 ? (void *)&r->val[i] : d;
        }
    }
    /* The mappings hold the buffers now. */
    for (uint32_t k = 0; k < npass; k++)
        close(fds[k]);
    if (bad) {
        unmap_buffers();
        return GSV_XSTATE_BAD;
    }
    if (blas_set && r->blas > 0 && r->blas != blas_now) {
        blas_set(r->blas);
        blas_now = r->blas;
    }
    if (r->mem_limit) {
        limit_memory(r->mem_limit);
        limited = 1;
    }
    if (r->cls) ptr[f->desc->nparams] = obj_state;
    atomic_store(&r->state, GSV_XSTATE_RUNNING);
    errno = 0; /* an ENOMEM at a fault is then the function's (on_fault) */
    running = f;
    f->stub->invoke(ptr);
    running = NULL;
    for (uint32_t i = 0; i < GRD_MAX_PARAMS; i++) {
        grd_free(cb_desc[i]);
        cb_desc[i] = NULL;
    }
    int rc = put_strings(f->desc, str) ? GSV_XSTATE_BAD : GSV_XSTATE_DONE;
    unmap_buffers();
    return rc;
}

int gsv_exec_main(int argc, char **argv) {
    if (argc < 3) return 2;
    pid_t server = (pid_t)atoi(argv[2]);
    /* An orphan would compute for nobody: it ends with the server. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != server) return 5;
    for (int fd = GSV_XFD_CTL; fd <= GSV_XFD_PASS; fd++)
        fcntl(fd, F_SETFD, FD_CLOEXEC);
    argv[2] = argv[0];
    if (gsv_options_parse(argc - 2, argv + 2, &ex.opt) >= 0) return 2;
    /* The server already said what it had to about its modules. */
    gr_log_init("gridrpcd executor", GSV_LOG_ERROR);
    if (gsv_modules_load(&ex)) return 1;
    *(void **)&blas_set = gsv_registry_find_symbol(&ex.reg, "openblas_set_num_threads");
    catch_overflow();
    on_exit(exit_now, NULL);
    if (map_region()) return 1;
    gsv_job_cancel_flag(&region->canceled);
    /* The count the server gave this executor to start from (gsv_exec.c's spawn_one). */
    seen = atomic_load(&region->go);
    if (write(GSV_XFD_CTL, "r", 1) != 1) return 1;
    for (;;) {
        wait_go();
        /* The last call's limit must not keep the region from growing. */
        if (limited) {
            struct rlimit rl = {RLIM_INFINITY, RLIM_INFINITY};
            setrlimit(RLIMIT_AS, &rl);
            limited = 0;
        }
        gsv_xregion *before = region;
        if (map_region()) _exit(1); /* the server sees it end */
        if (region != before) gsv_job_cancel_flag(&region->canceled);
        atomic_store(&region->state, run_call());
        gr_shbuf_trim(); /* a callback's buffers: not kept in every executor */
        signal_done();
    }
}
