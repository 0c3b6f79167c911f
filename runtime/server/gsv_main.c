/* gsv_main.c: gridrpcd's main: options, modules, workers, listener, then the
 * graceful shutdown that a SIGTERM or SIGINT starts (stop accepting, answer queued
 * calls GRID_ERR_SHUTDOWN, let running calls finish and send their results, exit 0
 * within --shutdown-timeout). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gsv.h"
#include "gsv_exec.h"

/* Modules named with --module must load; directories are searched leniently. The
 * default modules (the configured directory, which may be missing, and the directories
 * of GRIDRPC_MODULE_PATH) are loaded when no module was named, or with
 * --default-modules: a server started with --module X serves X alone. */
int gsv_modules_load(gsv_server *s) {
    gr_err e;
    for (unsigned i = 0; i < s->opt.nmodules; i++) {
        if (gsv_registry_load(&s->reg, s->opt.modules[i], &e) != GRID_OK) {
            fprintf(stderr, "gridrpcd: %s\n", e.msg);
            return 1;
        }
    }
    for (unsigned i = 0; i < s->opt.nmodule_dirs; i++) {
        if (gsv_registry_load_dir(&s->reg, s->opt.module_dirs[i], 0, &e) != GRID_OK) {
            fprintf(stderr, "gridrpcd: --module-dir: %s\n", e.msg);
            return 1;
        }
    }
    const char *env = getenv("GRIDRPC_MODULE_PATH");
    if (!s->opt.defaults) {
        if (env && *env)
            gsv_log(GSV_LOG_INFO,
                    "GRIDRPC_MODULE_PATH not searched: --module or --module-dir name the modules "
                    "to serve (add --default-modules to load the default ones too)");
    } else {
        if (gsv_registry_load_dir(&s->reg, GRIDRPC_MODULE_DIR, 1, &e) != GRID_OK) {
            fprintf(stderr, "gridrpcd: the default module directory: %s\n", e.msg);
            return 1;
        }
        if (env && *env) {
            char *copy = strdup(env), *save = NULL;
            if (!copy) return 1;
            for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
                if (gsv_registry_load_dir(&s->reg, d, 0, &e) != GRID_OK)
                    gsv_log(GSV_LOG_WARN, "GRIDRPC_MODULE_PATH: %s (skipped)", e.msg);
            }
            free(copy);
        }
    }
    if (gsv_registry_seal(&s->reg, &e) != GRID_OK) {
        fprintf(stderr, "gridrpcd: %s\n", e.msg);
        return 1;
    }
    if (s->reg.nfns == 0)
        gsv_log(GSV_LOG_WARN, "no functions loaded: give modules with --module or --module-dir");
    return 0;
}

int main(int argc, char **argv) {
    /* An executor process (gsv_exec.c started it): the same program, another job. */
    if (argc > 1 && strcmp(argv[1], GSV_EXEC_ARG) == 0) return gsv_exec_main(argc, argv);
    static gsv_server server; /* static: a worker outliving the shutdown timeout may
                                 still touch it while the process exits */
    gsv_server *s = &server;
    int rc = gsv_options_parse(argc, argv, &s->opt);
    if (rc >= 0) return rc;
    /* Whatever the daemon creates (the registry database and its journal, job folders
     * and files, an executor's files) is its own: 0600 files, 0700 folders. */
    umask(077);
    gr_log_init("gridrpcd", s->opt.log_level);
    /* Safe defaults (docs/server.md, "Opening a server to a network"). */
    if ((rc = gdm_check_exposure("gridrpcd", s->opt.host, s->opt.key_file || s->opt.tls_cert,
                                 s->opt.insecure)))
        return rc;
    if (s->opt.token_on_cmdline)
        gsv_log(
            GSV_LOG_WARN,
            "%s: a secret on the command line is shown by ps to every user until it is wiped at start: "
            "put it in a file (chmod 600) and give --token-file / --metaserver-token-file, or use --key-file",
            s->opt.token_on_cmdline);

    /* OpenBLAS threads busy-wait about 0.1 s after each call by default; on a server
     * that spin steals the cores the next request's I/O needs (measured: remote dmmul
     * n = 2000 went from 1.6x to 1.3x local with this). Before any module is loaded,
     * since OpenBLAS reads it when it starts; an operator's own setting wins. */
    setenv("OPENBLAS_THREAD_TIMEOUT", "16", 0);
    /* An operator's OPENBLAS_NUM_THREADS is meant for every call: the share per running
     * call would override it at the first invoke otherwise. --blas-threads wins. */
    const char *obt = getenv("OPENBLAS_NUM_THREADS");
    if (!s->opt.blas_threads && obt && atoi(obt) > 0 && atoi(obt) <= 4096)
        s->opt.blas_threads = (unsigned)atoi(obt);

    /* Before any thread exists (module constructors such as OpenBLAS's start threads). */
    int sigfd = gdm_signals("gridrpcd");
    if (sigfd < 0) return 1;

    /* Cores: what the affinity mask and a cgroup quota leave (a quota of 0.4 CPU is one
     * core, and a speed of 0.4 of one). */
    s->cpus = gsv_cpus_available();
    s->cores = s->cpus > 1 ? (unsigned)(s->cpus + 0.999) : 1;
    s->workers = s->opt.threads ? s->opt.threads : s->cores;
    s->listen_fd = -1;
    atomic_init(&s->stopping, 0);
    atomic_init(&s->calls_done, 0);
    pthread_mutex_init(&s->blas_lock, NULL);

    /* A key file that others may read stops the server before it serves anything. */
    gr_err ke;
    if (gsv_keys_load(s, &ke) != GRID_OK) {
        fprintf(stderr, "gridrpcd: %s\n", ke.msg);
        return 1;
    }
    if (gsv_daemon_init(s)) {
        fprintf(stderr, "gridrpcd: out of memory\n");
        return 1;
    }
    gdm_raise_nofile(&s->dm, 128);
    atomic_init(&s->calls_open, 0);
    atomic_init(&s->call_bytes, 0);

    if (gsv_modules_load(s)) return 1;
    *(void **)&s->blas_set_threads = gsv_registry_find_symbol(&s->reg, "openblas_set_num_threads");
    gsv_log(GSV_LOG_DEBUG, "BLAS threads per call: %s",
            s->blas_set_threads ? "cores / running calls (OpenBLAS found)"
                                : "not managed (no OpenBLAS loaded)");

    gr_err e;
    if (s->opt.tls_cert && !(s->tls = grw_tls_server_ctx(s->opt.tls_cert, s->opt.tls_key, &e))) {
        fprintf(stderr, "gridrpcd: %s\n", e.msg);
        return 1;
    }
    /* The executors are up before the first call is read. */
    if (!s->opt.in_process && gsv_exec_start(s, argc, argv, &e) != GRID_OK) {
        fprintf(stderr, "gridrpcd: %s\n", e.msg);
        return 1;
    }
    if (gsv_data_start(s, &e) != GRID_OK || gsv_sched_start(s, gsv_call_run, &e) != GRID_OK ||
        gsv_listen(s, &e) != GRID_OK || gsv_jobs_start(s, &e) != GRID_OK ||
        gsv_meta_start(s, &e) != GRID_OK) {
        fprintf(stderr, "gridrpcd: %s\n", e.msg);
        return 1;
    }
    gdm_accept_loop(&s->dm, sigfd);
    s->listen_fd = -1;
    /* The metaserver stops hearing from this server first: it is marked down after its
     * missed beats, while running calls finish here. */
    gsv_meta_stop(s);

    /* Shutdown: no new calls run; queued ones are answered; running ones finish. */
    atomic_store(&s->stopping, 1);
    gsv_jobs_stop(s);
    gsv_sched_stop(s);
    long long deadline = gr_now_ns() + (long long)(s->opt.shutdown_timeout * 1e9);
    unsigned left = gsv_sched_wait_idle(s, deadline);
    left += gsv_call_wait_senders(deadline); /* results still being sent (gsv_call.c) */
    if (left) {
        gsv_log(GSV_LOG_WARN, "%u call%s still running after %g s (--shutdown-timeout): exiting anyway", left,
                left == 1 ? "" : "s", s->opt.shutdown_timeout);
        fflush(stdout);
        /* Workers are still inside module code: skip atexit handlers and destructors. */
        _exit(0);
    }
    gdm_close_all(&s->dm, gr_now_ns() + 2000000000LL);
    gsv_sched_join(s);
    gsv_exec_stop(); /* no worker is left to use an executor */
    gsv_log(GSV_LOG_INFO, "stopped");
    if (!gdm_conns_open(&s->dm)) {
        gsv_data_stop(); /* no reader can name a session any more */
        gsv_registry_free(&s->reg);
        grw_tls_ctx_free(s->tls);
    }
    gsv_options_free(&s->opt);
    close(sigfd);
    return 0;
}
