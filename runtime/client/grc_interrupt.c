/* grc_interrupt.c: the work of the public grid_interrupt_np, defined in grc_api.c. A
 * program's SIGINT handler (gridrpc call's, the Python binding's, a user's own) calls it
 * to end the synchronous calls in progress: each is canceled on its server (CANCEL,
 * then the connection is dropped) and returns GRID_ERR_CANCELED at once instead of
 * when the function finishes.
 *
 * Why shutdown(): it is async-signal-safe, and on Linux shutdown(SHUT_RD) wakes a thread
 * blocked in recv() or poll() on that socket, with no cost to a call that is never
 * interrupted (no extra descriptor in its poll, no slicing of its wait). The socket can
 * still send, so the call's thread sends CANCEL on it before dropping it. A call tells
 * an interrupt from a server that closed by the interrupt count, which moved.
 *
 * The table of sockets being waited on is lock-free (a signal handler cannot take a
 * lock). A socket leaves the table before its connection is closed, so a handler that
 * read a slot an instant before it emptied shuts down a socket that is still the
 * call's; the only descriptor it can touch is one in the table. */
#include <stdatomic.h>
#include <sys/socket.h>

#include "grc_client.h"

/* Sync calls in progress at once, over all threads; more are not interruptible. */
#define WATCH_SLOTS 256

static atomic_int watched[WATCH_SLOTS]; /* fd + 1; 0: free */
static atomic_uint interrupts;

unsigned grc_interrupt_count(void) {
    return atomic_load_explicit(&interrupts, memory_order_acquire);
}

int grc_interrupt_watch(int fd) {
    /* Start where this thread found room last time: one compare-and-swap as a rule. */
    static __thread unsigned hint;
    for (unsigned k = 0; k < WATCH_SLOTS; k++) {
        unsigned i = (hint + k) % WATCH_SLOTS;
        int free_slot = 0;
        if (atomic_load_explicit(&watched[i], memory_order_relaxed) == 0 &&
            atomic_compare_exchange_strong(&watched[i], &free_slot, fd + 1)) {
            hint = i;
            return (int)i;
        }
    }
    return -1;
}

void grc_interrupt_unwatch(int slot) {
    if (slot >= 0 && slot < WATCH_SLOTS) atomic_store(&watched[slot], 0);
}

void grc_interrupt_all(void) {
    atomic_fetch_add_explicit(&interrupts, 1, memory_order_acq_rel);
    for (unsigned i = 0; i < WATCH_SLOTS; i++) {
        int v = atomic_load(&watched[i]);
        if (v > 0) shutdown(v - 1, SHUT_RD);
    }
}
