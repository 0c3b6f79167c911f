/* auth_cost.c: what authentication costs a client, for bench/auth-cost.sh: the time of
 * a connection's set-up (connect, HELLO, the key handshake when GRIDRPC_KEY_FILE is set,
 * the descriptor, one null call) and of a null call on a connection already made. The
 * script runs it against two builds (before and after a change) in alternating rounds,
 * so both see the same machine.
 *
 *     GRIDRPC_SERVER=127.0.0.1:7000 [GRIDRPC_KEY_FILE=k] auth_cost SETUPS CALLS
 *
 * Prints one line: "setup_us X null_us Y" (medians over 5 slices of each loop). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <gridrpc.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Microseconds per iteration of N set-ups (FRESH) or null calls, median of 5 slices;
 * negative if a call failed. */
static double timed(int n, int fresh) {
    double slice[5];
    for (int s = 0; s < 5; s++) {
        double t0 = now();
        for (int i = 0; i < n / 5; i++) {
            if (fresh) grid_reset_np(); /* drops connections and descriptors */
            if (grid_call("test/null_call") != GRID_OK) {
                fprintf(stderr, "auth_cost: %s\n", grid_last_error());
                return -1;
            }
        }
        slice[s] = (now() - t0) / (n / 5) * 1e6;
    }
    qsort(slice, 5, sizeof slice[0], cmp);
    return slice[2];
}

int main(int argc, char **argv) {
    int setups = argc > 1 ? atoi(argv[1]) : 500, calls = argc > 2 ? atoi(argv[2]) : 20000;
    if (setups < 5 || calls < 5) {
        fprintf(stderr, "usage: auth_cost SETUPS CALLS (each at least 5)\n");
        return 2;
    }
    if (grid_call("test/null_call") != GRID_OK) { /* warm: the server's executors */
        fprintf(stderr, "auth_cost: %s\n", grid_last_error());
        return 1;
    }
    double setup = timed(setups, 1), null = timed(calls, 0);
    if (setup < 0 || null < 0) return 1;
    printf("setup_us %.1f null_us %.2f\n", setup, null);
    return 0;
}
