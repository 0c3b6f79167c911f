/* gox_error.c: the GRPC_* codes: their strings, the mapping from the core's GRID_*
 * codes, and the calling thread's last result: its GRPC code (Ninf-G's
 * grpc_get_last_error_np) and its message, which is the library's one per-thread last
 * error (grid_last_error), so the core's message of a failed call is already there. */
#include <stdio.h>
#include <string.h>

#include "gox.h"

/* Only the code is ours: GRPC_* codes are not the core's GRID_* ones. */
static __thread grpc_error_t last_code;

static const char *const texts[] = {
#define GOX_TEXT_(name, value, text) [value] = text,
    GRPC_ERROR_MAP(GOX_TEXT_)
#undef GOX_TEXT_
};

static const char *const names[] = {
#define GOX_NAME_(name, value, text) [value] = "GRPC_" #name,
    GRPC_ERROR_MAP(GOX_NAME_)
#undef GOX_NAME_
};

/* grpc_error_string's text for GRPC_OTHER_ERROR_CODE when this thread's last call
 * failed with it: that failure's own message. */
static __thread char other_text[1200];

char *grpc_error_string(grpc_error_t code) {
    /* The standard's prototype returns char *: the strings are static, never written. */
    if (code < 0 || code >= GRPC_LAST_ERROR_CODE) return (char *)texts[GRPC_UNKNOWN_ERROR_CODE];
    /* "An error occurred" says nothing: programs print grpc_error_string(rc) right after
     * the call, so when the thread's last call failed with this code, say what failed. */
    if (code == GRPC_OTHER_ERROR_CODE && last_code == code && *grid_last_error()) {
        snprintf(other_text, sizeof other_text, "%s (grpc_last_error_np)", grid_last_error());
        return other_text;
    }
    return (char *)texts[code];
}

const char *grpc_error_name_np(grpc_error_t code) {
    if (code < 0 || code >= GRPC_LAST_ERROR_CODE) return names[GRPC_UNKNOWN_ERROR_CODE];
    return names[code];
}

grpc_error_t gox_map(int grid_code) {
    switch (grid_code) {
    case GRID_OK: return GRPC_NO_ERROR;
    case GRID_ERR_CONNECT: return GRPC_SERVER_NOT_FOUND;
    case GRID_ERR_NOT_FOUND: return GRPC_FUNCTION_NOT_FOUND;
    case GRID_ERR_PROTOCOL:
    case GRID_ERR_CONN_LOST: return GRPC_COMMUNICATION_FAILED;
    case GRID_ERR_TIMEOUT: return GRPC_TIMEOUT_NP;
    /* The server would not take the call: shutting down, overloaded, over its limits. */
    case GRID_ERR_SHUTDOWN:
    case GRID_ERR_BUSY:
    case GRID_ERR_LIMIT: return GRPC_RPC_REFUSED;
    case GRID_ERR_CONFIG: return GRPC_CONFIGFILE_ERROR;
    /* A refused key, token or role: the server would not take the call from this
     * client (the standard's code for a call the server turns down); the message says
     * what was refused. */
    case GRID_ERR_AUTH: return GRPC_RPC_REFUSED;
    case GRID_ERR_CANCELED: return GRPC_CANCELED_NP;
    /* The function crashed its process on the server (which is still up). */
    case GRID_ERR_FAILED:
    case GRID_ERR_CRASHED: return GRPC_SESSION_FAILED;
    /* Wrong arguments, local files, memory, a twice-changed interface, our own bugs. */
    default: return GRPC_OTHER_ERROR_CODE;
    }
}

grpc_error_t gox_result(grpc_error_t code, const char *fmt, ...) {
    last_code = code;
    if (code == GRPC_NO_ERROR) {
        grid_set_last_error_np(NULL);
    } else if (!fmt) {
        grid_set_last_error_np(grpc_error_string(code));
    } else {
        /* Formatted apart: an argument may be the current message itself. */
        char msg[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        grid_set_last_error_np(msg);
    }
    return code;
}

grpc_error_t gox_result_core(grpc_error_t code) {
    /* The core's message of the call that failed is the thread's last error already. */
    if (code == GRPC_NO_ERROR || !*grid_last_error()) return gox_result(code, NULL);
    last_code = code;
    return code;
}

grpc_error_t grpc_get_last_error_np(void) {
    return last_code;
}

const char *grpc_last_error_np(void) {
    return grid_last_error();
}

void grpc_perror_np(const char *prefix) {
    const char *m = *grid_last_error() ? grid_last_error() : grpc_error_string(last_code);
    if (prefix && *prefix)
        fprintf(stderr, "%s: %s\n", prefix, m);
    else
        fprintf(stderr, "%s\n", m);
}
