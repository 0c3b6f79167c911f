/* conf_fuzz.c: fuzz target for the client's configuration: the file GRIDRPC_CONFIG names
 * (~/.gridrpc.conf: "server HOST:PORT", "metaserver HOST:PORT", "timeout DURATION",
 * "connect_timeout DURATION", "token TEXT", grc_config.c), the settings grammar every
 * configuration reader shares (gr_settings.h: durations, sizes, ports, host:port, yes/no),
 * and the resolution of function names ("gridrpc://host:port/fn", grc_resolve).
 *
 * The input is written as the configuration file and loaded as a client loads it; then
 * each of its lines is given, as a value, to every settings parser and, as a name, to
 * grc_resolve. What a parser accepts must be in the range it promises; what it refuses
 * must come with a message. */
#include <math.h>

#include "fuzz_util.h"
#include "gr_settings.h"
#include "grc_client.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_INPUT 16384

/* Every parser on the value V (a line of the input). */
static void settings(const char *v) {
    char err[512];
    double secs = -7;
    err[0] = '\0';
    if (gr_parse_duration(v, &secs, err, sizeof err) == 0)
        fuzz_check(secs >= 0 && secs <= GR_DURATION_MAX && isfinite(secs), "a duration is within range");
    else
        fuzz_check(err[0] != '\0' && secs == -7, "a refused duration has a message, no value");
    uint64_t bytes;
    err[0] = '\0';
    if (gr_parse_size(v, &bytes, err, sizeof err) != 0)
        fuzz_check(err[0] != '\0', "a refused size has a message");
    for (unsigned flags = 0; flags < 4; flags++) {
        int port = -7;
        err[0] = '\0';
        if (gr_parse_port(v, flags & GR_PORT_ZERO, &port, err, sizeof err) == 0)
            fuzz_check(port >= ((flags & GR_PORT_ZERO) ? 0 : 1) && port <= 65535, "a port is within range");
        else
            fuzz_check(err[0] != '\0' && port == -7, "a refused port has a message, no value");
        char host[64];
        port = -7;
        err[0] = '\0';
        if (gr_parse_hostport(v, flags, host, sizeof host, &port, err, sizeof err) == 0) {
            fuzz_check(memchr(host, '\0', sizeof host) != NULL, "the host is a string");
            fuzz_check(port >= 0 && port <= 65535, "host:port's port is within range");
            fuzz_check(port != 0 || (flags & (GR_PORT_ZERO | GR_PORT_OPTIONAL)), "port 0 only when allowed");
        } else {
            fuzz_check(err[0] != '\0' && port == -7, "a refused host:port has a message, no value");
        }
        /* A short host buffer: what does not fit is refused, never cut. */
        char tiny[4];
        if (gr_parse_hostport(v, flags, tiny, sizeof tiny, &port, NULL, 0) == 0)
            fuzz_check(strlen(tiny) < sizeof tiny, "a host that fits");
    }
    int b = -7;
    err[0] = '\0';
    if (gr_parse_bool(v, &b, err, sizeof err) == 0)
        fuzz_check(b == 0 || b == 1, "a yes/no is 0 or 1");
    else
        fuzz_check(err[0] != '\0' && b == -7, "a refused yes/no has a message, no value");
}

/* The name N resolved against CFG. */
static void resolve(const char *n, const grc_config *cfg) {
    grc_target t;
    gr_err e;
    if (grc_resolve(n, cfg, &t, &e) == GRID_OK) {
        fuzz_check(t.host[0] != '\0' && t.port >= 1 && t.port <= 65535, "a resolved name has a server");
        fuzz_check(t.name[0] != '\0' && memchr(t.name, '\0', sizeof t.name),
                   "a resolved name has a function");
    } else {
        fuzz_check(e.code != GRID_OK && e.msg[0] != '\0', "a refused name has a code and a message");
    }
}

static void check_config(const grc_config *c) {
    fuzz_check(c->server_host[0] == '\0' || (c->server_port >= 1 && c->server_port <= 65535),
               "a configured server has a port");
    fuzz_check(c->meta_host[0] == '\0' || (c->meta_port >= 1 && c->meta_port <= 65535),
               "a configured metaserver has a port");
    fuzz_check(c->call_timeout >= 0 && c->call_timeout <= GR_DURATION_MAX, "the call timeout is in range");
    fuzz_check(c->connect_timeout >= 0 && c->connect_timeout <= GR_DURATION_MAX,
               "the connect timeout is in range");
    fuzz_check(memchr(c->token, '\0', sizeof c->token) != NULL, "the token is a string");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static char path[600];
    if (size > MAX_INPUT) return 0;
    if (!path[0]) {
        /* Only the file counts: nothing from the environment of the run. */
        static const char *const vars[] = {
            "GRIDRPC_SERVER",          "GRIDRPC_METASERVER", "GRIDRPC_TIMEOUT",
            "GRIDRPC_CONNECT_TIMEOUT", "GRIDRPC_TOKEN",      "GRIDRPC_SITE",
            "GRIDRPC_SCHEDULER",       "GRIDRPC_REUSE",      "GRIDRPC_REUSE_FOR"};
        for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
            unsetenv(vars[i]);
    }
    fuzz_write_file("client.conf", data, size, path, sizeof path);
    setenv("GRIDRPC_CONFIG", path, 1);
    grc_config_reset();
    grc_config cfg;
    gr_err e;
    memset(&cfg, 0, sizeof cfg);
    if (grc_config_get(&cfg, &e) == GRID_OK)
        check_config(&cfg);
    else
        fuzz_check(e.code == GRID_ERR_CONFIG && e.msg[0] != '\0', "a refused file has a code and a message");

    char *text = fuzz_strndup(data, size);
    for (char *line = text, *next; line; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = '\0';
        settings(line);
        resolve(line, &cfg);
    }
    free(text);
    return 0;
}
