/* _core_interrupt.c: Ctrl-C during a synchronous call stops the remote work and raises
 * KeyboardInterrupt at once. Python's own SIGINT handler only sets a flag that the
 * interpreter looks at between bytecodes, which a call blocked in C without the GIL
 * never reaches: the call would run to its end on the server first. So the handler
 * Python installed is chained: ours calls grid_interrupt_np (async-signal-safe: the
 * sync calls in progress send CANCEL and return GRID_ERR_CANCELED), then Python's,
 * and the caller runs Python's handler (PyErr_CheckSignals) as soon as the call is
 * back. signal.signal() installs Python's handler again, so the chain is checked at
 * every sync call (one sigaction(2) that reads it). */
#include "_core.h"

#include <signal.h>
#include <string.h>

static struct sigaction chained; /* Python's handler, set before ours is installed */

static void on_sigint(int sig, siginfo_t *info, void *uctx) {
    grid_interrupt_np();
    if (chained.sa_flags & SA_SIGINFO)
        chained.sa_sigaction(sig, info, uctx);
    else if (chained.sa_handler != SIG_DFL && chained.sa_handler != SIG_IGN)
        chained.sa_handler(sig);
}

void interrupts_chain(void) {
    struct sigaction cur;
    if (sigaction(SIGINT, NULL, &cur) != 0) return;
    if ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_sigint) return;
    /* SIG_DFL ends the process, whose connections' close cancels its calls on the
     * servers; SIG_IGN means the program wants no interruption. */
    if (!(cur.sa_flags & SA_SIGINFO) && (cur.sa_handler == SIG_DFL || cur.sa_handler == SIG_IGN)) return;
    chained = cur; /* ours is not installed now: no handler reads it meanwhile */
    struct sigaction sa = cur;
    sa.sa_flags |= SA_SIGINFO;
    sa.sa_sigaction = on_sigint;
    sigaction(SIGINT, &sa, NULL);
}

int interrupts_raise(int rc) {
    return rc == GRID_ERR_CANCELED && PyErr_CheckSignals() < 0 ? -1 : 0;
}
