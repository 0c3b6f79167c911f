/* grc_report.c: what the library tells its caller about what happened, below every
 * file that does the work: the calling thread's last error (grid_last_error; the one
 * per-thread error store of the library, which the OGF layer and the Fortran binding
 * set too) and the process's counters (grid_get_stats_np). The engine and the public
 * entry files report here; the public calls of grc_api.c read it. */
#include <stdio.h>

#include "grc_client.h"

long grc_stat_fetches, grc_stat_connections, grc_stat_calls;
uint64_t grc_stat_bytes_sent, grc_stat_bytes_received;

static __thread char last_error[1024];

void grc_report(int code, const char *msg) {
    if (code == GRID_OK)
        last_error[0] = '\0';
    else
        snprintf(last_error, sizeof last_error, "%s", msg && msg[0] ? msg : grid_error_string(code));
}

const char *grc_last_error(void) {
    return last_error;
}

void grc_set_last_error(const char *msg) {
    /* MSG may be grc_last_error() itself: copying it onto itself would overlap. */
    if (msg != last_error) snprintf(last_error, sizeof last_error, "%s", msg ? msg : "");
}
