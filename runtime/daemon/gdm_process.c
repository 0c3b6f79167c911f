/* gdm_process.c: what a daemon sets up for its whole process before any thread runs:
 * the signals that end it and the number of descriptors its connections need. */
#include <signal.h>
#include <stdio.h>
#include <sys/signalfd.h>

#include "gdm.h"
#include "gdm_linger.h"
#include "gr_connlimit.h"
#include "gr_log.h"

int gdm_signals(const char *prog) {
    /* A client that vanishes must cost a failed write, not the process. */
    signal(SIGPIPE, SIG_IGN);
    /* Blocked before any thread exists (a module's constructor may start some), so
     * SIGTERM and SIGINT reach only the signalfd: the accept loop ends, and shutdown
     * runs on the main thread, none of it in a signal handler. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    int fd = signalfd(-1, &set, SFD_CLOEXEC);
    if (fd < 0) {
        char what[64];
        snprintf(what, sizeof what, "%s: signalfd", prog);
        perror(what);
    }
    return fd;
}

void gdm_raise_nofile(const gdm_daemon *d, unsigned long extra) {
    /* Every connection holds a descriptor: make room for --max-connections of them,
     * plus the refused ones lingering and the daemon's own files. */
    unsigned long want = (unsigned long)d->max_conns + GDM_LINGER_MAX + extra;
    unsigned long have = gr_raise_nofile(want);
    if (have < want)
        gr_log(GR_LOG_WARN,
               "only %lu file descriptors may be open (ulimit -n; the hard limit): fewer than "
               "--max-connections %u needs (%lu); connections past that are refused",
               have, d->max_conns, want);
}
