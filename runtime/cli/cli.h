/* cli.h: what the parts of the gridrpc command-line tool share: the global options,
 * a protocol connection to one peer (gridrpcd or gridmetad) with the requests the tool
 * makes, the JSON writer, and one entry point per subcommand. Private to the tool. */
#ifndef GRIDRPC_CLI_H
#define GRIDRPC_CLI_H

#include <getopt.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "gr_error.h"
#include "grd_desc.h"
#include "grp_auth.h"
#include "grp_limits.h"
#include "grp_meta.h"
#include "grp_proto.h"
#include "gr_scheme.h"
#include "grw_tls.h"
#include "grw_wire.h"

#define CLI_PROGRAM "gridrpc"

/* Exit statuses: 0 done, 1 the request failed (unreachable peer, call error), 2 usage. */
enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2 };

/* Where the tool talks to: a metaserver or one server. */
enum cli_target { CLI_NONE = 0, CLI_METASERVER = 1, CLI_SERVER = 2 };

typedef struct cli_opts {
    int target; /* enum cli_target, after cli_resolve_target */
    char meta_host[GRP_MAX_HOST + 1];
    int meta_port;
    char server_host[GRP_MAX_HOST + 1];
    int server_port;
    char token[GRP_MAX_TOKEN + 1];
    char site[GRP_MAX_SITE + 1];
    int json;
    double timeout; /* seconds for each connection and request; 0: none */
    int have_token, have_timeout;
    const char *key_file; /* --key-file, else GRIDRPC_KEY_FILE; NULL: none */
    const char *role;     /* keygen --role: client, server or admin; NULL: untagged */
    double interval;      /* top --interval: seconds between refreshes */
    unsigned count;       /* top --count: refreshes before it stops; 0: until a signal */
    double wait;          /* fetch --wait before the job id: seconds */
    grp_keyset keys;      /* its keys, loaded by main before the command runs */
} cli_opts;

/* ---- cli_keygen.c: gridrpc keygen FILE */
int cli_keygen(int argc, char **argv, cli_opts *o);

/* ---- cli_conn.c: one connection after HELLO, and the requests of the tool */
typedef struct cli_conn {
    int fd;
    grw_tls *tls; /* a gridrpcs:// peer's session, or NULL */
    uint64_t next_id;
    char host[GRP_MAX_HOST + 1];
    int port;
    int is_meta; /* for error messages */
    grp_hello_ok hello;
    double timeout;
    grw_reader rd;
    grw_writer wr;
} cli_conn;

/* Connects to HOST:PORT and says HELLO. IS_META chooses the wording of errors ("cannot
 * reach the metaserver at H:P: connection refused; is gridmetad running? ..."). */
int cli_connect(const cli_opts *o, const char *host, int port, int is_meta, cli_conn **out, gr_err *e);
void cli_close(cli_conn *c);
/* Reads the reply header to request ID just sent and checks it is EXPECTED (its body
 * follows); otherwise the error, naming the peer and WHAT was asked. */
int cli_reply(cli_conn *c, uint64_t id, uint32_t expected, const char *what, gr_err *e);
int cli_list_functions(cli_conn *c, char ***names, uint32_t *count, gr_err *e);
/* *out: grd_free it. QUALIFIED (GRP_MAX_FUNCTION_NAME + 1 bytes): the server's name. */
int cli_get_descriptor(cli_conn *c, const char *name, char *qualified, grd_desc **out, gr_err *e);
int cli_ping(cli_conn *c, grp_pong *out, gr_err *e);
/* *v: grp_servers_free it. */
int cli_servers(cli_conn *c, const char *site, grp_server_info **v, uint32_t *count, gr_err *e);
/* HOLDS: the functions the metaserver holds back after crashes (*v: free it). */
int cli_holds(cli_conn *c, grp_hold **v, uint32_t *count, gr_err *e);
/* UNREGISTER of SERVER_ID (an administrator's action, with keys). */
int cli_unregister_server(cli_conn *c, uint64_t server_id, gr_err *e);
/* Opens the metaserver of O (CLI_METASERVER) and reads its SERVERS for O's site. */
int cli_meta_servers(const cli_opts *o, grp_server_info **v, uint32_t *count, gr_err *e);
/* Finds the descriptor of NAME: from O's server, or (metaserver) from the first up
 * server that lists it. SERVERS/NSERVERS: the metaserver's list (NULL for a server). */
int cli_find_descriptor(const cli_opts *o, const grp_server_info *servers, uint32_t nservers,
                        const char *name, char *qualified, grd_desc **out, gr_err *e);

/* ---- cli_json.c: writing JSON to a stream */
void cli_json_string(FILE *f, const char *s);
/* A number; NaN and infinities become null (JSON has neither). */
void cli_json_number(FILE *f, double v);
/* V in the fewest digits that read back as V ("0.1", "2", "1e+300"). */
void cli_format_double(double v, char *buf, size_t size);

/* ---- cli_table.c: aligned text tables (at most 64 columns) */
typedef struct cli_table {
    int ncols;
    const char *align; /* one letter per column: 'l' or 'r'; NULL: all left */
    char **cells;      /* nrows * ncols, the header first */
    size_t nrows, cap;
} cli_table;
int cli_table_init(cli_table *t, int ncols, const char *const *headers, const char *align);
int cli_table_row(cli_table *t, const char *const *cells);
void cli_table_print(const cli_table *t, FILE *f);
void cli_table_free(cli_table *t);

/* ---- cli_main.c */
/* Prints "gridrpc: MESSAGE\n" to stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Parses a subcommand's options (the global ones and OWN, its own, NULL-ended or NULL);
 * returns the index of the first operand, or -1 after printing the
 * usage error (*rc set) or the help (*rc 0). */
int cli_sub_options(int argc, char **argv, cli_opts *o, void (*help)(void), const struct option *own,
                    int *rc);
/* Fills O->target from the options and environment; on failure prints why. */
int cli_resolve_target(cli_opts *o, int need);
/* Wording for the target, "the metaserver at H:P" or "the server at H:P". */
const char *cli_target_name(const cli_opts *o, char *buf, size_t size);

/* The subcommands and options the parser knows, which gridrpc completion turns into
 * completion scripts (so a new one is completed without editing a script). */
typedef struct cli_command {
    const char *name;
    int (*run)(int argc, char **argv, cli_opts *o); /* NULL: help, which main runs itself */
    void (*help)(void);
    const struct option *opts; /* its own options, given after it; NULL-ended, or NULL */
    const char *operands;      /* completing its operands: NULL nothing, "@files", "@commands",
                                  else the words that may be given */
} cli_command;
extern const cli_command cli_commands[];
extern const size_t cli_ncommands;
/* The global options (before or after the command), NULL-ended. */
extern const struct option cli_global_opts[];
/* Completing option NAME's value: NULL when left to the user, "@files" for a file name,
 * else the words it may be. */
const char *cli_option_values(const char *name);

/* ---- subcommands: each returns the exit status */
int cli_status(int argc, char **argv, cli_opts *o);
/* The status view once into F, O's target resolved: the metaserver's servers and holds,
 * or one server's load. On failure nothing is printed, E says why and CLI_FAIL. */
int cli_status_print(const cli_opts *o, FILE *f, gr_err *e);
/* gridrpc top: the status view refreshed in place (cli_top.c). */
int cli_top(int argc, char **argv, cli_opts *o);
/* gridrpc completion SHELL: a completion script made from the tables (cli_completion.c). */
int cli_completion(int argc, char **argv, cli_opts *o);
int cli_ls(int argc, char **argv, cli_opts *o);
int cli_describe(int argc, char **argv, cli_opts *o);
int cli_call(int argc, char **argv, cli_opts *o);
/* two-phase calls: submit and fetch (cli_call.c), jobs and forget (cli_jobs.c) */
int cli_submit(int argc, char **argv, cli_opts *o);
int cli_fetch(int argc, char **argv, cli_opts *o);
int cli_jobs(int argc, char **argv, cli_opts *o);
int cli_forget(int argc, char **argv, cli_opts *o);
int cli_unregister(int argc, char **argv, cli_opts *o);
int cli_cancel(int argc, char **argv, cli_opts *o);
/* A job id's server and hex part: "host:port/HEX", or a bare HEX on O's server (HOST:
 * GRP_MAX_HOST + 1 bytes). Returns 0, or -1 after printing why. */
int cli_parse_job(cli_opts *o, const char *text, char *host, int *port, char hex[GRP_MAX_JOB_ID + 1]);
/* JOB_INFO of job HEX at HOST:PORT: its state, the descriptor of its function (*d: grd_free
 * it) and the IN scalars of its SUBMIT (*call, server side: grm_release and free it); for
 * a failed job only its state (*d and *call NULL). */
int cli_job_head(cli_opts *o, const char *host, int port, const char *hex, grp_job *info, char *qualified,
                 grd_desc **d, grm_call **call, gr_err *e);

/* ---- cli_values.c: arguments from the shell and results to it (gridrpc call) */
/* The tokens of one argument: "[1, 2, 3]" (nested lists are flattened, row-major),
 * "@FILE" (white-space-separated), or a single value. Quoted tokens ("a b") are
 * unquoted with JSON's escapes. */
typedef struct cli_values {
    uint32_t n;
    char **tok;
    int is_list; /* written as [..] or @FILE */
} cli_values;
/* Splits TEXT into OUT; on failure ERR says why. */
int cli_values_parse(const char *text, cli_values *out, char *err, size_t errsize);
void cli_values_free(cli_values *v);
/* Stores TOK as one element of grd_type TYPE (not string or complex) at DST: integers
 * must be whole and in range for the type (UNS: unsigned, not negative). */
int cli_store_number(const char *tok, uint32_t type, int uns, void *dst, char *err, size_t errsize);
/* The integer value at SRC of an integer TYPE, for dimension expressions. */
int64_t cli_load_int(const void *src, uint32_t type, int uns);
/* Formats the element at SRC of TYPE (numbers and complex ones) into BUF; JSON: complex
 * as [re, im] and non-finite numbers as null, else "1+2i". */
void cli_format_elem(const void *src, uint32_t type, int uns, int json, char *buf, size_t size);

#endif /* GRIDRPC_CLI_H */
