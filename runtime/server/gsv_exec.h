/* gsv_exec.h: what gridrpcd and its executor processes share (gsv_exec.c is the
 * server's side, gsv_exec_main.c the executor's): the hidden command line that starts
 * an executor, the descriptors it finds open, and the layout of the shared-memory
 * region through which one call at a time goes in and comes back. */
#ifndef GSV_EXEC_H
#define GSV_EXEC_H

#include <stdatomic.h>
#include <stdint.h>

#include "gsv.h"

/* argv[1] of an executor: gridrpcd EXEC_ARG SERVER_PID SERVER_ARGS... (not in --help:
 * only gridrpcd itself starts one). */
#define GSV_EXEC_ARG "--executor-process"

/* The executor's descriptors, set up by the server before exec: the control socket
 * (a byte "ready" once the modules are loaded; either end closing means the other is
 * gone), the call region's memfd, the two eventfds that wake the executor (go) and
 * the server (done), and a datagram socket on which a call's shared buffers arrive
 * (one message of descriptors before the call is handed over, when it has any). */
enum { GSV_XFD_CTL = 3, GSV_XFD_MEM = 4, GSV_XFD_GO = 5, GSV_XFD_DONE = 6, GSV_XFD_PASS = 7 };

/* What the executor last did with the region's call (its state field). */
enum {
    GSV_XSTATE_IDLE = 0,
    GSV_XSTATE_RUNNING = 1,
    GSV_XSTATE_DONE = 2,
    GSV_XSTATE_BAD = 3,
    GSV_XSTATE_CALLBACK = 4
};
/* Why it died, when its fault handler could tell (its fault field): MEMORY is a fault
 * (SIGSEGV, SIGBUS, SIGABRT) right after an allocation failed (errno ENOMEM) under
 * --call-memory, as when a function uses the NULL malloc returned. */
enum { GSV_XFAULT_NONE = 0, GSV_XFAULT_STACK = 1, GSV_XFAULT_MEMORY = 2 };

/* The head of the region. The server writes the call (function, scalars, where each
 * buffer lies), the executor runs it and writes the scalars and buffers back in place.
 * The server never reads an offset or a length from here: it keeps its own copies, so
 * an executor that scribbles on the head can only spoil its own call's outputs. */
typedef struct gsv_xregion {
    /* The hand-off, on a cache line of its own. The server counts the calls it hands
     * over (go) and the executor the calls it finished (done); each side spins a few
     * microseconds for the other's count before it sleeps on its eventfd, and says when
     * it sleeps, so the other writes the eventfd only then: a null call crosses without
     * a system call when both are awake (gsv_exec_spin). */
    _Alignas(64) atomic_uint go; /* calls handed over (server) */
    atomic_uint done;            /* calls finished (executor) */
    atomic_int exec_sleeps;      /* the executor waits on its go eventfd (executor) */
    atomic_int server_sleeps;    /* the worker waits on the done eventfd (server) */
    _Alignas(64) uint64_t size;  /* bytes of the region the call uses (server): the executor maps that much */
    uint64_t hash;               /* the function's descriptor hash (server) */
    uint32_t fn;                 /* its index in the registry, the same in both processes (server) */
    /* A remote object's method (its executor is the object's own, gsv_exec_actor_*): its
     * class's index in the registry + 1 and its index among the class's methods; cls 0:
     * a plain function, fn. The executor keeps the object's state from the first call on. */
    uint32_t cls, method;
    int32_t blas;        /* BLAS threads for the call; 0: leave them (server) */
    uint64_t mem_limit;  /* --call-memory bytes; 0: none (server) */
    atomic_int canceled; /* the client canceled: grpc_is_canceled_np in the executor (server) */
    atomic_int state;    /* GSV_XSTATE_* (executor) */
    atomic_int fault;    /* GSV_XFAULT_* (executor) */
    uint64_t off[GRD_MAX_PARAMS], len[GRD_MAX_PARAMS]; /* each parameter's bytes; len 0: NULL */
    /* A parameter whose array is a shared buffer (gr_shbuf.h) is not in the region: it is
     * descriptor pass[i] (>= 0) of the message on GSV_XFD_PASS, LEN bytes from its start,
     * mapped shared (OUT, INOUT, WORK) or copy-on-write (IN: the function may scribble on
     * its inputs, never on the server's data); -1: in the region at OFF. */
    int32_t pass[GRD_MAX_PARAMS];
    uint32_t npass;               /* descriptors in that message (server) */
    int64_t ival[GRD_MAX_PARAMS]; /* the call's integer scalars as it began (server): callbacks' sizes */
    /* A callback the function called (the executor, with state GSV_XSTATE_CALLBACK and
     * its done count: the call's turn goes to the server, which runs it with the client
     * and hands the call back with its go count). Its number; its arrays in a shared
     * buffer of cb_size bytes sent on GSV_XFD_PASS (cb_pass 1), each at cb_off/cb_len;
     * its scalars in cb_val, where the server puts the OUT ones; its outcome in cb_rc
     * (server). */
    uint32_t cb_index, cb_pass;
    int32_t cb_rc;
    uint64_t cb_size;
    uint64_t cb_off[GRD_MAX_PARAMS], cb_len[GRD_MAX_PARAMS];
    grm_value cb_val[GRD_MAX_PARAMS];
    grm_value val[GRD_MAX_PARAMS]; /* the scalars, in and out */
    /* The OUT and INOUT strings the function left (executor): their bytes in one shared
     * buffer of str_size bytes sent on GSV_XFD_PASS as the call ends (str_pass 1), each at
     * str_off with str_len bytes, its '\0' included (0: NULL). */
    uint32_t str_pass;
    uint64_t str_size;
    uint64_t str_off[GRD_MAX_PARAMS], str_len[GRD_MAX_PARAMS];
} gsv_xregion;

/* How long each side spins for the other before it sleeps. The executor spins after a
 * call, long enough for a client's next sync call to cross loopback: the null call then
 * costs one wake-up (the worker's), not two. The worker only looks for a few hundred
 * nanoseconds (GSV_XSPIN_PAUSES): on two cores, workers spinning beside their executors
 * took the processors the readers and the executors needed, and pipelined calls ran at
 * 0.7 times the rate of workers that sleep (bench/run-core.sh async, 30,100 against
 * 42,700 calls/s). */
#define GSV_XSPIN_EXEC_NS 60000LL
#define GSV_XSPIN_SERVER_NS 0LL
#define GSV_XSPIN_PAUSES 32
/* A yield that returns later than this gave the processor to another thread: the spin
 * ends there (gsv_exec_spin), since on a busy machine it only takes time from the
 * client and the reader that would bring the next call (async pipelined null calls,
 * bench/run-core.sh, same run: 63,800-64,600/s spinning on, 68,800-76,600/s stopping;
 * the sync null call the same, 12-17 us). */
#define GSV_XSPIN_BUSY_NS 5000LL

/* Spins until *WORD differs from SEEN (1) or NS nanoseconds passed (0): GSV_XSPIN_PAUSES
 * looks first, then looks that yield the processor between them, so a spinning side
 * never keeps a runnable thread (the client, a reader) off a busy machine's cores. */
int gsv_exec_spin(atomic_uint *word, unsigned seen, long long ns);

/* Sends the N descriptors FDS on the datagram socket SOCK in one message; 0, or -1
 * (errno). Receives up to MAX of them into FDS; their number, or -1. */
int gsv_exec_send_fds(int sock, const int *fds, unsigned n);
int gsv_exec_receive_fds(int sock, int *fds, unsigned max);

/* Where the buffers begin: after the head, cache-line aligned. */
#define GSV_XDATA (((uint64_t)sizeof(gsv_xregion) + 63u) & ~(uint64_t)63u)

/* The executor's main (gsv_exec_main.c), from gridrpcd's main when argv[1] is
 * GSV_EXEC_ARG: loads the server's modules and runs calls until the server is gone. */
int gsv_exec_main(int argc, char **argv);

#endif /* GSV_EXEC_H */
