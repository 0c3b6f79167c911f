/* gox_ninfg.c: the attributes a Ninf-G client configuration file may hold in each
 * section we read (the Ninf-G 5 user's manual, "Ninf-G Client configuration file",
 * plus the Ninf-G 4 spellings old files still carry, and our own <CLIENT> metaserver).
 * gox_config.c honours a few of them and warns that the rest are ignored; a name that
 * is none of them is a typo or a mistake, refused as Ninf-G 5 refuses it, with the
 * closest name of its section. Names are case-sensitive, as Ninf-G's are. */
#include <string.h>

#include "gox.h"

/* The TCP and logging attributes <CLIENT> and <SERVER> share. */
#define TCP_ATTRS                                                                                            \
    "tcp_nodelay", "tcp_connect_retryCount", "tcp_connect_retryBaseInterval",                                \
        "tcp_connect_retryIncreaseRatio", "tcp_connect_retryRandom"

/* <FUNCTION_INFO> and <SERVER> both set these per function or per server. */
#define TIMEOUT_ATTRS                                                                                        \
    "session_timeout", "transfer_timeout_argument", "transfer_timeout_result",                               \
        "transfer_timeout_callbackArgument", "transfer_timeout_callbackResult"

/* Everything <SERVER_DEFAULT> may set (a <SERVER> also has hostname and tag). */
#define SERVER_ATTRS                                                                                         \
    "port", "invoke_server", "invoke_server_option", "mpi_runCommand", "mpi_runNCPUs",                       \
        "communication_proxy", "communication_proxy_staging", "communication_proxy_path",                    \
        "communication_proxy_option", "jobmanager", "subject", "client_hostname", "job_startTimeout",        \
        "job_stopTimeout", "job_maxTime", "job_maxWallTime", "job_maxCpuTime", "job_queue", "job_project",   \
        "job_hostCount", "job_minMemory", "job_maxMemory", "job_rslExtensions", "heartbeat",                 \
        "heartbeat_timeoutCount", "heartbeat_timeoutCountOnTransfer", "redirect_outerr", TCP_ATTRS,          \
        "argument_transfer", "compress", "compress_threshold", "argument_blockSize", "workDirectory",        \
        "coreDumpSize", "commLog_enable", "commLog_filePath", "commLog_suffix", "commLog_nFiles",            \
        "commLog_maxFileSize", "commLog_overwriteDirectory", "debug", "debug_display", "debug_terminal",     \
        "debug_debugger", "debug_busyLoop", "environment", TIMEOUT_ATTRS, "keep_connection", "staging",      \
        /* Ninf-G 4 */ "mds_hostname", "mds_tag", "mpi_runNoOfCPUs", "gass_scheme", "crypt", "protocol",     \
        "force_xdr"

static const char *const client_attrs[] = {
    "hostname", "save_sessionInfo", "loglevel", "loglevel_globusToolkit", "loglevel_ninfgProtocol",
    "loglevel_ninfgInternal", "loglevel_ninfgGrpc", "log_filePath", "log_suffix", "log_nFiles",
    "log_maxFileSize", "log_overwriteDirectory", "tmp_dir", "refresh_credential", "invoke_server_log",
    "client_communication_proxy_log", "information_service_log", "fortran_compatible", "handling_signals",
    "listen_port", TCP_ATTRS, "metaserver", /* ours */
    /* Ninf-G 4 */
    "listen_port_authonly", "listen_port_GSI", "listen_port_SSL", NULL};
static const char *const server_attrs[] = {"hostname", "tag", SERVER_ATTRS, NULL};
static const char *const server_default_attrs[] = {SERVER_ATTRS, NULL};
static const char *const function_info_attrs[] = {"hostname", "funcname",    "staging",
                                                  "backend",  TIMEOUT_ATTRS, NULL};
static const char *const include_attrs[] = {"filename", NULL};

const char *const *gox_ninfg_attributes(const char *section) {
    static const struct {
        const char *name;
        const char *const *attrs;
    } sections[] = {{"CLIENT", client_attrs},
                    {"SERVER", server_attrs},
                    {"SERVER_DEFAULT", server_default_attrs},
                    {"FUNCTION_INFO", function_info_attrs},
                    {"INCLUDE", include_attrs}};
    for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++)
        if (strcmp(sections[i].name, section) == 0) return sections[i].attrs;
    return NULL;
}
