/* burst_client.c: the program side of tests/metaserver-grid.sh's burst. One process
 * starts N asynchronous test/sleep(SECONDS) calls at once through the metaserver
 * (GRIDRPC_METASERVER) and waits for them all. Usage: burst-client N SECONDS
 * Prints "ok N calls in T s" and exits 0, or "error NAME: MESSAGE" and exits 3. A
 * sleep, not a computation, so that how long a call holds its server does not depend
 * on the machine's speed or load: the test sizes N from the grid's room. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "gridrpc.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    int n = argc == 3 ? atoi(argv[1]) : 0;
    double seconds = argc == 3 ? atof(argv[2]) : -1;
    if (n < 1 || n > 4096 || seconds < 0) {
        fprintf(stderr, "usage: burst-client N SECONDS  (1 <= N <= 4096)\n");
        return 2;
    }
    double t0 = now_s();
    for (int i = 0; i < n; i++) {
        int id = grid_call_async("test/sleep", seconds);
        if (id <= 0) {
            printf("error %s: call %d of %d could not start: %s\n", grid_error_name(-id), i + 1, n,
                   grid_last_error());
            return 3;
        }
    }
    int rc = grid_wait_all();
    if (rc != GRID_OK) {
        printf("error %s: %s\n", grid_error_name(rc), grid_last_error());
        return 3;
    }
    printf("ok %d calls in %.1f s\n", n, now_s() - t0);
    return 0;
}
