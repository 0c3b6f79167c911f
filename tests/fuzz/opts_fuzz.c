/* opts_fuzz.c: fuzz target for the daemons' configuration, which is their command line
 * (neither reads a configuration file): gridrpcd's options (gsv_options.c) and
 * gridmetad's (gms_options.c), through getopt_long, the shared option helpers
 * (gr_opts.c) and the settings grammar (gr_settings.c).
 *
 * The input is split at NUL bytes and newlines into the words of a command line, given
 * to both parsers. Each must return go on (-1), 0 (--help, --version) or 2 (a usage
 * error), and what it accepts must be in the ranges the daemons rely on. */
#include "fuzz_util.h"
#include "gms.h"
#include "gsv.h"

#include <getopt.h>
#include <math.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_INPUT 4096
#define MAX_WORDS 64

static void check_server(const gsv_options *o) {
    fuzz_check(o->host && o->host[0], "gridrpcd has an address");
    fuzz_check(o->port >= 0 && o->port <= 65535, "gridrpcd's port is in range");
    fuzz_check(o->threads <= 4096 && o->blas_threads <= 4096, "thread counts are bounded");
    fuzz_check(o->mode == GSV_MODE_POOL || o->mode == GSV_MODE_THREAD, "a known mode");
    fuzz_check(o->queue == GSV_QUEUE_FCFS || o->queue == GSV_QUEUE_SJF, "a known queue");
    fuzz_check(o->log_level >= GSV_LOG_ERROR && o->log_level <= GSV_LOG_DEBUG, "a known log level");
    fuzz_check(o->limits.max_message > 0 && o->limits.max_array > 0 && o->limits.max_head > 0,
               "limits are positive");
    fuzz_check(o->io_timeout >= 0 && isfinite(o->io_timeout), "the I/O timeout is a duration");
    fuzz_check(o->shutdown_timeout >= 0 && isfinite(o->shutdown_timeout),
               "the shutdown timeout is a duration");
    fuzz_check(o->data_grace > 0 && o->data_lease > 0 && o->job_keep > 0, "data and job times are positive");
    fuzz_check(o->speed >= 0 && isfinite(o->speed), "the speed is a number");
    fuzz_check(o->meta_port >= 0 && o->meta_port <= 65535, "the metaserver's port is in range");
    fuzz_check(o->meta_port || (!o->adv_port && !o->name && !(o->speed > 0) && !o->meta_token),
               "metaserver options only with --metaserver");
    fuzz_check(o->defaults || o->nmodules || o->nmodule_dirs, "some modules are served");
    fuzz_check(!o->token || strlen(o->token) <= GRP_MAX_TOKEN, "the token fits HELLO");
}

static void check_meta(const gms_options *o) {
    fuzz_check(o->host && o->host[0] && o->db && o->db[0] && o->http_host && o->http_host[0],
               "gridmetad has its addresses and registry");
    fuzz_check(o->port >= 0 && o->port <= 65535, "gridmetad's port is in range");
    fuzz_check(o->http_port >= -1 && o->http_port <= 65535, "the status page's port is in range");
    fuzz_check(o->policy > GRP_POLICY_DEFAULT && o->policy < GRP_POLICY_COUNT, "a scheduler it has");
    fuzz_check(o->heartbeat_ms >= 10 && o->heartbeat_ms <= 3600000, "REGISTER_OK can carry the heartbeat");
    fuzz_check(o->down_after >= 1 && o->down_after <= 1000, "down-after is a count");
    fuzz_check(o->max_conns >= 1 && o->max_conns <= (1u << 20), "max-connections is a count");
    fuzz_check(o->max_conns_per_addr >= 1 && o->max_conns_per_addr <= (1u << 20),
               "max-connections-per-address is a count");
    fuzz_check(o->io_timeout >= 0 && isfinite(o->io_timeout), "the I/O timeout is a duration");
    fuzz_check(o->max_hold >= 0 && o->max_hold <= GRP_MAX_HOLD_S, "clients wait for a held answer");
    fuzz_check(!o->token || strlen(o->token) <= GRP_MAX_TOKEN, "the token fits HELLO");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > MAX_INPUT) return 0;
    char *text = fuzz_strndup(data, size);
    char *argv[MAX_WORDS + 2];
    int argc = 0;
    argv[argc++] = "gridrpcd";
    /* Words end at a newline or a NUL byte; the last one at the end of the input. */
    for (size_t i = 0, start = 0; size && i <= size && argc < MAX_WORDS + 1; i++)
        if (i == size || text[i] == '\n' || text[i] == '\0') {
            text[i] = '\0';
            argv[argc++] = text + start;
            start = i + 1;
        }
    argv[argc] = NULL;

    fuzz_quiet q = fuzz_quiet_begin();
    gsv_options so;
    optind = 0; /* a fresh getopt_long scan */
    int rc = gsv_options_parse(argc, argv, &so);
    gms_options mo;
    argv[0] = "gridmetad";
    optind = 0;
    int mrc = gms_options_parse(argc, argv, &mo);
    fuzz_quiet_end(q);

    fuzz_check(rc == -1 || rc == 0 || rc == 2, "gridrpcd goes on, exits 0 or reports a usage error");
    fuzz_check(mrc == -1 || mrc == 0 || mrc == 2, "gridmetad goes on, exits 0 or reports a usage error");
    if (rc == -1) check_server(&so);
    if (mrc == -1) check_meta(&mo);
    gsv_options_free(&so);
    free(text);
    return 0;
}
