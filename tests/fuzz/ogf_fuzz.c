/* ogf_fuzz.c: fuzz target for the configuration file of the OGF API (grpc_initialize,
 * runtime/ogf/gox_config.c): our "key value" lines and Ninf-G 5's <SECTION> blocks, mixed,
 * with <INCLUDE> of other files, quoted values, comments and the settings grammar.
 *
 * The input is written as the file and read as grpc_initialize reads it; an included
 * file named "self.conf" is the input itself (so nesting and its limit are reached) and
 * "other.conf" a small valid file. Names with a '/' are not followed (the fuzzer must
 * not open /dev/stdin or a pipe). What is read must be what gox_config.h promises: hosts
 * that fit, ports in range, timeouts unset or not negative; the lookups run on every
 * server and function named. */
#define _GNU_SOURCE /* memmem */
#include "fuzz_util.h"
#include "gox.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_INPUT 16384

/* True when DATA names a file with a '/' (any '/' but those of closing tags). */
static int names_a_path(const uint8_t *data, size_t size) {
    if (!memmem(data, size, "INCLUDE", 7)) return 0;
    for (size_t i = 0; i < size; i++)
        if (data[i] == '/' && (i == 0 || data[i - 1] != '<')) return 1;
    return 0;
}

static void check_string(const char *s, size_t n, const char *what) {
    fuzz_check(memchr(s, '\0', n) != NULL, what);
}

static void check_config(const gox_config *c) {
    fuzz_check(c->nservers >= 0 && (c->nservers == 0 || c->servers), "servers");
    fuzz_check(c->nfuncs >= 0 && (c->nfuncs == 0 || c->funcs), "functions");
    for (int i = 0; i < c->nservers; i++) {
        const gox_server *s = &c->servers[i];
        check_string(s->host, sizeof s->host, "a server's host is a string");
        check_string(s->tag, sizeof s->tag, "a server's tag is a string");
        fuzz_check(s->host[0] != '\0', "a server has a host");
        fuzz_check(s->port >= 0 && s->port <= 65535, "a server's port is in range");
    }
    for (int i = 0; i < c->nfuncs; i++) {
        check_string(c->funcs[i].host, sizeof c->funcs[i].host, "a function's host is a string");
        check_string(c->funcs[i].func, sizeof c->funcs[i].func, "a function's name is a string");
        fuzz_check(c->funcs[i].host[0] && c->funcs[i].func[0], "a function and its host are named");
    }
    fuzz_check(c->default_port >= 0 && c->default_port <= 65535, "the default port is in range");
    fuzz_check(c->call_timeout == -1 || c->call_timeout >= 0, "the call timeout is unset or not negative");
    fuzz_check(c->connect_timeout == -1 || c->connect_timeout >= 0,
               "the connect timeout is unset or not negative");
    check_string(c->token, sizeof c->token, "the token is a string");
    fuzz_check(!c->has_meta || (c->meta_host[0] && c->meta_port >= 1 && c->meta_port <= 65535),
               "a metaserver has a host and a port");
}

/* The lookups a program makes with the names of C. */
static void lookups(const gox_config *c) {
    char host[GOX_MAX_HOST];
    int port;
    for (int i = 0; i < c->nservers; i++) {
        const char *names[2] = {c->servers[i].host, c->servers[i].tag};
        for (int k = 0; k < 2; k++) {
            port = -1;
            gox_config_server(c, names[k], host, sizeof host, &port);
            fuzz_check(port >= 1 && port <= 65535, "a server resolves to a port");
        }
    }
    for (int i = 0; i < c->nfuncs; i++) {
        const char *h = gox_config_function_host(c, c->funcs[i].func);
        fuzz_check(h != NULL, "a configured function has a host");
        port = -1;
        gox_config_server(c, h, host, sizeof host, &port);
        fuzz_check(port >= 1 && port <= 65535, "a function's server resolves to a port");
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static char self[600], other[600];
    if (size > MAX_INPUT || names_a_path(data, size)) return 0;
    if (!other[0]) {
        static const char text[] = "<SERVER>\n hostname other.example.org\n port 7001\n</SERVER>\n";
        fuzz_write_file("other.conf", (const uint8_t *)text, sizeof text - 1, other, sizeof other);
    }
    fuzz_write_file("self.conf", data, size, self, sizeof self);
    gox_config cfg;
    memset(&cfg, 0, sizeof cfg);
    char msg[1024];
    fuzz_quiet q = fuzz_quiet_begin(); /* what it ignores, it says on stderr */
    int rc = gox_config_read(self, &cfg, msg, sizeof msg);
    fuzz_quiet_end(q);
    if (rc == GRPC_NO_ERROR) {
        check_config(&cfg);
        lookups(&cfg);
    } else {
        fuzz_check(rc == GRPC_CONFIGFILE_ERROR || rc == GRPC_OTHER_ERROR_CODE, "an error code of the API");
        fuzz_check(msg[0] != '\0', "an error has a message");
    }
    gox_config_free(&cfg);
    return 0;
}
