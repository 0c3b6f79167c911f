/* gms_main.c: gridmetad's main: options, the registry loaded into the state, the
 * listener, the status page, the sweeper thread; then, on SIGTERM or SIGINT, a clean
 * shutdown (connections closed, the registry's queued writes committed, exit 0). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gms.h"

static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int stop;
} sweeper = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};

/* Marks servers down a few times per heartbeat interval, so "down" comes at most a
 * quarter interval late. */
static void *sweeper_main(void *arg) {
    gms_state *st = arg;
    long long step_ns = (long long)st->heartbeat_ms * 1000000LL / 4;
    if (step_ns > 250000000LL) step_ns = 250000000LL;
    if (step_ns < 2000000LL) step_ns = 2000000LL;
    pthread_mutex_lock(&sweeper.lock);
    while (!sweeper.stop) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        long long ns = ts.tv_nsec + step_ns;
        ts.tv_sec += ns / 1000000000LL;
        ts.tv_nsec = ns % 1000000000LL;
        pthread_cond_timedwait(&sweeper.cond, &sweeper.lock, &ts);
        if (sweeper.stop) break;
        pthread_mutex_unlock(&sweeper.lock);
        gms_state_sweep(st, gr_now_ns(), gms_unix_ms());
        pthread_mutex_lock(&sweeper.lock);
    }
    pthread_mutex_unlock(&sweeper.lock);
    return NULL;
}

int main(int argc, char **argv) {
    static gms_options opt;
    static gms_state st;
    int rc = gms_options_parse(argc, argv, &opt);
    if (rc >= 0) return rc;
    /* Whatever the daemon creates (the registry database and its journal, job folders
     * and files, an executor's files) is its own: 0600 files, 0700 folders. */
    umask(077);
    gr_log_init("gridmetad", opt.log_level);
    /* Safe defaults (docs/server.md, "Opening a server to a network"). */
    if ((rc = gdm_check_exposure("gridmetad", opt.host, opt.key_file || opt.tls_cert, opt.insecure)))
        return rc;
    /* The page has no keys of its own: beyond loopback it shows the grid to anyone. */
    if (opt.http_port >= 0 && !gdm_host_is_loopback(opt.http_host)) {
        if (!opt.insecure)
            return gdm_usage_error(
                "gridmetad",
                "--http-host %s is not a loopback address, and the status page has no access "
                "control: anyone who reaches it reads every server, function, decision and "
                "crash. Keep it on loopback and reach it through 'ssh -L', or give --insecure "
                "to serve it open anyway",
                opt.http_host);
        gms_log(
            GMS_LOG_WARN,
            "INSECURE: the status page listens on %s (--insecure): anyone who reaches it reads the grid's "
            "servers, functions, decisions and crashes",
            opt.http_host);
    }
    if (opt.token_on_cmdline)
        gms_log(GMS_LOG_WARN,
                "--token: a secret on the command line is shown by ps to every user until it is "
                "wiped at start: put it in a file (chmod 600) and give --token-file, or set "
                "GRIDRPC_TOKEN, or use --key-file");

    int sigfd = gdm_signals("gridmetad"); /* before any thread starts */
    if (sigfd < 0) return 1;

    gr_err e;
    /* A key file that others may read stops the metaserver before it listens. */
    if (opt.key_file && grp_keyset_load(opt.key_file, &opt.keys, &e)) {
        fprintf(stderr, "gridmetad: --key-file: %s\n", e.msg);
        return 1;
    }
    /* Without keys on loopback this is a notice (the machine's own users); listening
     * further needed --insecure, which gdm_check_exposure warns about loudly. */
    if (!opt.keys.n)
        gms_log(GMS_LOG_INFO, "no --key-file: anyone who reaches this metaserver may do anything (register, "
                              "unregister or report on any server); see docs/security.md");
    else if (grp_keyset_untagged(&opt.keys))
        gms_log(GMS_LOG_WARN,
                "%s: %u untagged key%s: any holder may register as a server; tag each line 'client HEX', "
                "'server HEX' or 'admin HEX' (docs/security.md)",
                opt.key_file, grp_keyset_untagged(&opt.keys), grp_keyset_untagged(&opt.keys) == 1 ? "" : "s");
    if (gms_state_init(&st, opt.policy, opt.heartbeat_ms, opt.down_after)) {
        fprintf(stderr, "gridmetad: out of memory\n");
        return 1;
    }
    st.crash_hold_s = opt.crash_hold;
    st.pending_max_s = opt.pending_max;
    st.forget_after_s = opt.forget_after;
    gms_db *db = gms_db_open(opt.db, &e);
    if (!db || gms_db_load(db, &st, gr_now_ns(), &e) || gms_db_start(db, &e)) {
        fprintf(stderr, "gridmetad: %s\n", e.msg);
        return 1;
    }
    gms_net *net = gms_net_listen(&st, &opt, &e);
    if (!net) {
        fprintf(stderr, "gridmetad: %s\n", e.msg);
        return 1;
    }
    struct gms_http *http = NULL;
    if (opt.http_port >= 0 && !(http = gms_http_start(&st, &opt, &e))) {
        fprintf(stderr, "gridmetad: %s\n", e.msg);
        return 1;
    }
    pthread_t sweep;
    if ((rc = pthread_create(&sweep, NULL, sweeper_main, &st))) {
        fprintf(stderr, "gridmetad: cannot start the sweeper thread: %s\n", strerror(rc));
        return 1;
    }

    gms_net_run(net, sigfd);

    pthread_mutex_lock(&sweeper.lock);
    sweeper.stop = 1;
    pthread_cond_signal(&sweeper.cond);
    pthread_mutex_unlock(&sweeper.lock);
    pthread_join(sweep, NULL);
    gms_http_stop(http);
    unsigned left = gdm_conns_open(&net->dm);
    if (left) {
        /* A connection thread still runs (stuck in a write?): commit what is queued and
         * leave without freeing what it may touch. */
        gms_db_flush(db);
        gms_log(GMS_LOG_WARN, "stopped with %u connections still closing", left);
        fflush(stdout);
        _exit(0);
    }
    gms_net_free(net);
    gms_db_close(db);
    gms_state_free(&st);
    gms_log(GMS_LOG_INFO, "stopped");
    close(sigfd);
    return 0;
}
