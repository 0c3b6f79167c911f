/* cli_main.c: gridrpc, the command-line tool people use every day: global options,
 * where to talk to (a metaserver or one server), the subcommands and their help. The
 * subcommands live in files of their own (cli_status.c, cli_ls.c, cli_call.c). The
 * tables of commands and options here are also what gridrpc completion reads. */
#include "config.h"

#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "gr_opts.h"
#include "gr_settings.h"
#include "gr_suggest.h"

#define DEFAULT_TIMEOUT 10.0

static const char global_help[] =
    "Global options (before or after the subcommand, before its arguments):\n"
    "  --metaserver HOST:PORT\n"
    "             the metaserver to ask (default: GRIDRPC_METASERVER)\n"
    "  --server HOST:PORT\n"
    "             talk to this one gridrpcd directly instead (default:\n"
    "             GRIDRPC_SERVER or the configuration file's server line, used\n"
    "             when no metaserver is set)\n"
    "             Either address may be written gridrpcs://HOST:PORT: TLS, the\n"
    "             server's certificate checked against GRIDRPC_TLS_CA (a PEM\n"
    "             file of CA certificates; default: the system's store)\n"
    "  --key-file FILE\n"
    "             prove the first key of FILE to servers and metaservers that\n"
    "             ask (gridrpcd/gridmetad --key-file), and check that they hold\n"
    "             it too; the key never crosses the wire (default:\n"
    "             GRIDRPC_KEY_FILE; make one with 'gridrpc keygen FILE')\n"
    "  --token TOKEN\n"
    "             the token sent in HELLO (default: GRIDRPC_TOKEN, which ps does not\n"
    "             show: prefer it; weaker than a key: it travels in clear text)\n"
    "  --site NAME\n"
    "             this client's site, whose links status shows (default:\n"
    "             GRIDRPC_SITE, else the host name)\n"
    "  --json     print JSON for scripts instead of tables\n"
    "  --timeout DURATION\n"
    "             limit for connecting and for each request (30, 500ms, 2m;\n"
    "             0: none; default 10 s; for call also the whole call)\n"
    "  -h, --help show help (of the subcommand, after it) and exit\n"
    "  -V, --version\n"
    "             show the version and exit\n";

static void usage(void) {
    fputs("Usage: gridrpc [OPTIONS] COMMAND [ARGS...]\n"
          "Look at a GridRPC grid and call its functions from the shell.\n"
          "\n"
          "Commands:\n"
          "  status            servers, up or down, load, speed, the bandwidth and latency\n"
          "                    from this site, and functions held back after crashes\n"
          "                    (with --server: that server's load)\n"
          "  ls [PATTERN]      functions and their one-line descriptions\n"
          "  describe FUNC     a function's parameters, dimensions, cost and servers\n"
          "  call FUNC ARGS... call a function with arguments from the shell and print\n"
          "                    its results\n"
          "  submit FUNC ARGS... submit a call as a job kept on the server; prints its id\n"
          "  fetch ID [--wait DURATION]\n"
          "                    the results of a submitted job, printed as call prints them\n"
          "  jobs [SERVER]     your jobs a server keeps (every server of the metaserver)\n"
          "  forget ID         delete a job and its results on its server (a running one\n"
          "                    is stopped)\n"
          "  cancel ID         stop a queued or running job; its record stays (fetch then\n"
          "                    says it was canceled)\n"
          "  unregister SERVER_ID  remove a server from the metaserver at once (an\n"
          "                    administrator's action: an admin key with keys)\n"
          "  keygen [--role R] FILE  write a new key file (32 random bytes in hex, mode 0600)\n"
          "                    for gridrpcd/gridmetad --key-file and GRIDRPC_KEY_FILE\n"
          "  top [--interval DURATION] [--count N]\n"
          "                    the status view refreshed in place (every 2 s) until Ctrl-C\n"
          "  completion bash|zsh  print a completion script for the shell\n"
          "  help [COMMAND]    show this help, or a command's\n"
          "\n"
          "A job is yours to fetch, list, cancel and forget: your key id's with --key-file,\n"
          "else your session's (~/.gridrpc/session, 0600, shared by your processes;\n"
          "GRIDRPC_SESSION_FILE names another file, GRIDRPC_SESSION gives its 32 hex digits).\n"
          "\n",
          stdout);
    fputs(global_help, stdout);
    fputs("\n"
          "Examples:\n"
          "  gridrpc --metaserver gridhost:7100 status\n"
          "  gridrpc --server node1:7000 ls linalg/\n"
          "  gridrpc describe linalg/dmmul\n"
          "  gridrpc call linalg/dmmul 2 '[1,2,3,4]' '[1,0,0,1]'\n"
          "  gridrpc submit linalg/dmmul 2 '[1,2,3,4]' '[1,0,0,1]'   (later: gridrpc fetch ID)\n"
          "\n"
          "Exit status: 0 done, 1 the request failed (the reason goes to standard\n"
          "error), 2 usage error.\n",
          stdout);
}

void cli_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs(CLI_PROGRAM ": ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

enum {
    OPT_METASERVER = 256,
    OPT_SERVER,
    OPT_TOKEN,
    OPT_SITE,
    OPT_JSON,
    OPT_TIMEOUT,
    OPT_KEY_FILE,
    OPT_ROLE,
    OPT_INTERVAL,
    OPT_COUNT,
    OPT_WAIT
};

const struct option cli_global_opts[] = {
    {"metaserver", required_argument, NULL, OPT_METASERVER},
    {"server", required_argument, NULL, OPT_SERVER},
    {"token", required_argument, NULL, OPT_TOKEN},
    {"key-file", required_argument, NULL, OPT_KEY_FILE},
    {"site", required_argument, NULL, OPT_SITE},
    {"json", no_argument, NULL, OPT_JSON},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {NULL, 0, NULL, 0},
};

/* Options of one command only, accepted after it (cli_commands names each table). */
static const struct option keygen_opts[] = {
    {"role", required_argument, NULL, OPT_ROLE},
    {NULL, 0, NULL, 0},
};
static const struct option top_opts[] = {
    {"interval", required_argument, NULL, OPT_INTERVAL},
    {"count", required_argument, NULL, OPT_COUNT},
    {NULL, 0, NULL, 0},
};
/* fetch also reads --wait after the job id itself (cli_fetch). */
static const struct option fetch_opts[] = {
    {"wait", required_argument, NULL, OPT_WAIT},
    {NULL, 0, NULL, 0},
};

const char *cli_option_values(const char *name) {
    static const struct {
        const char *name, *values;
    } values[] = {
        {"key-file", "@files"},
        {"role", "client server admin"},
    };
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++)
        if (strcmp(values[i].name, name) == 0) return values[i].values;
    return NULL;
}

/* The command whose own option is --NAME (the word up to any '='), or NULL. */
static const char *option_owner(const char *arg) {
    if (strncmp(arg, "--", 2) != 0) return NULL;
    size_t len = strcspn(arg + 2, "=");
    for (size_t i = 0; i < cli_ncommands; i++)
        for (const struct option *op = cli_commands[i].opts; op && op->name; op++)
            if (strlen(op->name) == len && strncmp(op->name, arg + 2, len) == 0) return cli_commands[i].name;
    return NULL;
}

/* Parses ARG as HOST:PORT for OPTION into HOST and *PORT; prints why not. */
static int parse_addr(const char *option, const char *arg, char *host, int *port) {
    char err[512];
    if (gr_parse_hostport(arg, 0, host, GRP_MAX_HOST + 1, port, err, sizeof err) != 0) {
        cli_error("%s: %s", option, err);
        return -1;
    }
    return 0;
}

/* Parses options from ARGV[*] (getopt's optind) up to the first operand: the global
 * ones and OWN, the options of the command being parsed (NULL: none). HELP prints its
 * help. Returns 0, 1 when help was shown, -1 on a usage error (printed). */
static int parse_options(int argc, char **argv, cli_opts *o, void (*help)(void), const struct option *own) {
    /* One table for getopt: the global options, then the command's own. */
    struct option opts[32];
    size_t n = 0;
    for (const struct option *op = cli_global_opts; op->name && n < 31; op++)
        opts[n++] = *op;
    for (const struct option *op = own; op && op->name && n < 31; op++)
        opts[n++] = *op;
    opts[n] = (struct option){NULL, 0, NULL, 0};
    opterr = 0;
    for (;;) {
        int prev = optind;
        int c = getopt_long(argc, argv, "+:hV", opts, NULL);
        if (c == -1) return 0;
        char err[512];
        switch (c) {
        case OPT_METASERVER:
            if (parse_addr("--metaserver", optarg, o->meta_host, &o->meta_port)) return -1;
            break;
        case OPT_SERVER:
            if (parse_addr("--server", optarg, o->server_host, &o->server_port)) return -1;
            break;
        case OPT_TOKEN:
            if (strlen(optarg) > GRP_MAX_TOKEN) {
                cli_error("--token: longer than the protocol's %d bytes", GRP_MAX_TOKEN);
                return -1;
            }
            snprintf(o->token, sizeof o->token, "%s", optarg);
            o->have_token = 1;
            /* ps shows the arguments to every user: wipe the copy there (GRIDRPC_TOKEN,
             * in the environment, is the way that never shows). */
            for (char *p = optarg; *p; p++)
                *p = 'x';
            break;
        case OPT_KEY_FILE:
            if (!*optarg) {
                cli_error("--key-file: empty file name");
                return -1;
            }
            o->key_file = optarg;
            break;
        case OPT_SITE:
            if (!*optarg || strlen(optarg) > GRP_MAX_SITE) {
                cli_error("--site: give a name of 1 to %d bytes", GRP_MAX_SITE);
                return -1;
            }
            snprintf(o->site, sizeof o->site, "%s", optarg);
            break;
        case OPT_JSON: o->json = 1; break;
        case OPT_ROLE: o->role = optarg; break;
        case OPT_INTERVAL:
            if (gr_parse_duration(optarg, &o->interval, err, sizeof err) != 0) {
                cli_error("--interval: %s", err);
                return -1;
            }
            /* Each refresh is a connection and two requests: faster would load the
             * metaserver and the terminal for nothing a person can read. */
            if (o->interval < 0.1) {
                cli_error("--interval: '%s' is too short: give at least 100ms", optarg);
                return -1;
            }
            break;
        case OPT_COUNT:
            if (gr_opt_count("--count", optarg, 1000000000UL, &o->count, err, sizeof err) != 0) {
                cli_error("%s", err);
                return -1;
            }
            break;
        case OPT_WAIT:
            if (gr_parse_duration(optarg, &o->wait, err, sizeof err) != 0) {
                cli_error("--wait: %s", err);
                return -1;
            }
            break;
        case OPT_TIMEOUT:
            if (gr_parse_duration(optarg, &o->timeout, err, sizeof err) != 0) {
                cli_error("--timeout: %s", err);
                return -1;
            }
            o->have_timeout = 1;
            break;
        case 'h': help(); return 1;
        case 'V': printf("gridrpc (GridRPC) %s\n", PACKAGE_VERSION); return 1;
        case ':': cli_error("%s needs a value", argv[prev]); return -1;
        default: {
            /* Another command's option: say whose it is and where it goes. */
            const char *owner = optopt ? NULL : option_owner(argv[prev]);
            if (owner) {
                cli_error("%.*s is an option of %s only: give it after the command (gridrpc %s --help)",
                          (int)strcspn(argv[prev], "="), argv[prev], owner, owner);
                return -1;
            }
            /* Said as the daemons say it: a typo of an option names the option. */
            gr_opt_refused(opts, argv[prev], optopt, err, sizeof err);
            cli_error("%s (see gridrpc --help)", err);
            return -1;
        }
        }
    }
}

int cli_sub_options(int argc, char **argv, cli_opts *o, void (*help)(void), const struct option *own,
                    int *rc) {
    optind = 1;
    int r = parse_options(argc, argv, o, help, own);
    if (r != 0) {
        *rc = r > 0 ? CLI_OK : CLI_USAGE;
        return -1;
    }
    return optind;
}

const char *cli_target_name(const cli_opts *o, char *buf, size_t size) {
    if (o->target == CLI_METASERVER)
        snprintf(buf, size, "the metaserver at %s:%d", o->meta_host, o->meta_port);
    else
        snprintf(buf, size, "the server at %s:%d", o->server_host, o->server_port);
    return buf;
}

int cli_resolve_target(cli_opts *o, int need) {
    (void)need;
    if (o->server_host[0]) {
        o->target = CLI_SERVER;
        return 0;
    }
    if (!o->meta_host[0]) {
        const char *env = getenv("GRIDRPC_METASERVER");
        if (env && *env) {
            char err[512];
            if (gr_parse_hostport(env, 0, o->meta_host, sizeof o->meta_host, &o->meta_port, err,
                                  sizeof err)) {
                cli_error("GRIDRPC_METASERVER: %s", err);
                return -1;
            }
        }
    }
    if (o->meta_host[0]) {
        o->target = CLI_METASERVER;
        return 0;
    }
    if (grid_get_server_np(o->server_host, sizeof o->server_host, &o->server_port) != GRID_OK) {
        cli_error("%s", grid_last_error());
        return -1;
    }
    if (o->server_host[0]) {
        o->target = CLI_SERVER;
        return 0;
    }
    cli_error("no metaserver or server to ask: pass --metaserver HOST:PORT or --server HOST:PORT, or set "
              "GRIDRPC_METASERVER or GRIDRPC_SERVER");
    return -1;
}

/* Defaults that come from the environment: the site and the token. */
static void defaults(cli_opts *o) {
    const char *site = getenv("GRIDRPC_SITE");
    if (site && *site)
        snprintf(o->site, sizeof o->site, "%.*s", GRP_MAX_SITE, site);
    else if (gethostname(o->site, sizeof o->site) != 0 || !o->site[0])
        snprintf(o->site, sizeof o->site, "localhost");
    o->site[sizeof o->site - 1] = '\0';
    const char *tok = getenv("GRIDRPC_TOKEN");
    if (tok) snprintf(o->token, sizeof o->token, "%.*s", GRP_MAX_TOKEN, tok);
    o->timeout = DEFAULT_TIMEOUT;
    o->interval = 2;
    const char *kf = getenv("GRIDRPC_KEY_FILE");
    if (kf && *kf) o->key_file = kf;
}

static void help_status(void) {
    fputs("Usage: gridrpc [OPTIONS] status\n"
          "Show the servers a metaserver knows: id, name, address, up or down, calls\n"
          "running/queued/pending (assigned, not yet done), cores, load average, speed\n"
          "(GFLOP/s), bandwidth (MB/s) and latency (ms) from this site ('-' when not\n"
          "measured yet), calls and failures, and the age of the last heartbeat; then\n"
          "the functions it holds back from new calls because they crashed their\n"
          "executors on two servers within a minute, with where, how and until when.\n"
          "With --server HOST:PORT: that one server's load (PING).\n"
          "\n",
          stdout);
    fputs(global_help, stdout);
}
static void help_ls(void) {
    fputs("Usage: gridrpc [OPTIONS] ls [PATTERN]\n"
          "List functions with their one-line descriptions. From a metaserver: every\n"
          "function its servers registered and which servers have it; with --server:\n"
          "the functions that server serves. PATTERN filters names: a shell pattern\n"
          "(linalg/d*) or, without wildcards, a part of the name (dmm).\n"
          "\n",
          stdout);
    fputs(global_help, stdout);
}
static void help_describe(void) {
    fputs("Usage: gridrpc [OPTIONS] describe FUNC\n"
          "Show a function's interface: its description, each parameter's mode, type\n"
          "and dimension expressions, its Complexity (flops as an expression of the\n"
          "scalar arguments), its flags, and the servers that have it.\n"
          "\n",
          stdout);
    fputs(global_help, stdout);
}
static void help_call(void) {
    fputs("Usage: gridrpc [OPTIONS] call FUNC ARGS...\n"
          "Call FUNC and print its results. Give one argument per IN and INOUT parameter,\n"
          "in order (see gridrpc describe FUNC); OUT parameters are left out (their\n"
          "arrays are sized from the dimension expressions), WORK arrays too. Filenames\n"
          "are given in every mode (an OUT file is written there).\n"
          "  numbers    42, -1.5, 1e-3; complex scalars as [re,im]\n"
          "  strings    as they are (quote them for the shell)\n"
          "  arrays     [1,2,3,4] (flat, row-major; complex ones as re,im pairs), or\n"
          "             @FILE: numbers separated by white space; string arrays as\n"
          "             [\"a\",\"b\"]\n"
          "Each OUT and INOUT argument is printed by name (matrices row by row); with\n"
          "--json one object {\"function\":..,\"results\":{NAME: value}}. The call goes\n"
          "where any program's call goes (the metaserver's choice, or --server).\n"
          "Ctrl-C (or TERM, HUP) stops the call on its server too: the tool sends CANCEL,\n"
          "says so and exits with 128 + the signal's number (130 for Ctrl-C).\n"
          "\n"
          "Example: gridrpc call linalg/dmmul 2 '[1,2,3,4]' '[1,0,0,1]'\n"
          "\n",
          stdout);
    fputs(global_help, stdout);
}

static void help_submit(void) {
    fputs("Usage: gridrpc [OPTIONS] submit FUNC ARGS...\n"
          "Submit a call of FUNC as a job: the arguments are given as for gridrpc call, the\n"
          "server keeps them on disk and runs the call, and the job id (HOST:PORT/HEX) is\n"
          "printed once the server has it. The results stay on the server (gridrpcd\n"
          "--job-keep) and can be fetched from any process: gridrpc fetch ID. With --json:\n"
          "{\"job\": ID, \"function\": NAME}.\n"
          "\n"
          "Example: gridrpc submit test/sleep_count 5\n"
          "\n",
          stdout);
    fputs(global_help, stdout);
}
static void help_fetch(void) {
    fputs("Usage: gridrpc [OPTIONS] fetch ID [--wait DURATION]\n"
          "Print the results of job ID (as gridrpc submit printed it) as gridrpc call\n"
          "prints a call's. No arguments are needed: the server kept the call's scalars,\n"
          "which size the results. Without --wait the server is asked once; with --wait\n"
          "the fetch waits up to DURATION for the job to finish. A job not finished yet\n"
          "fails with exit status 1 and says whether it is queued or running; a failed\n"
          "job prints its error. File results are not written anywhere (fetch them from\n"
          "a program with grid_job_fetch_np).\n"
          "\n",
          stdout);
    fputs(global_help, stdout);
}
static void help_jobs(void) {
    fputs("Usage: gridrpc [OPTIONS] jobs [SERVER]\n"
          "List the jobs kept by SERVER (HOST:PORT; default --server, or every server the\n"
          "metaserver knows as up): id, function, state (queued, running, done, failed\n"
          "with its error), submit and finish times, bytes kept for the call and its\n"
          "result.\n"
          "\n",
          stdout);
    fputs(global_help, stdout);
}
static void help_keygen(void) {
    fputs("Usage: gridrpc keygen [--role client|server|admin] FILE\n"
          "Write a new key file: 32 random bytes (OpenSSL's RAND_bytes) as 64 hex digits\n"
          "on one line, mode 0600, after the role the key may prove: 'client' (calls),\n"
          "'server' (REGISTER at a metaserver, DATA_COPY), 'admin' (everything). Without\n"
          "--role the key is untagged and may prove every role (daemons warn about it:\n"
          "any holder may then register as a server). An existing file is never replaced. Give the file to\n"
          "gridrpcd --key-file, gridmetad --key-file and the clients (GRIDRPC_KEY_FILE,\n"
          "grid_set_key_file_np, gridrpc --key-file, 'key_file PATH'); it must stay\n"
          "unreadable by others. To rotate: append the new key as a second line of the\n"
          "servers' file (both are accepted), move the clients to a file whose first line\n"
          "is the new key, then remove the old key. See docs/server.md \"Security\".\n"
          "\n"
          "See docs/security.md for who may do what.\n"
          "\n"
          "Example: gridrpc keygen --role client ~/.gridrpc.key\n",
          stdout);
}
static void help_forget(void) {
    fputs("Usage: gridrpc [OPTIONS] forget ID\n"
          "Delete job ID and its result on its server. A queued job will not run; a\n"
          "running one is stopped (its executor process is ended after a short grace).\n"
          "\n",
          stdout);
    fputs(global_help, stdout);
}
static void help_cancel(void) {
    fputs("Usage: gridrpc [OPTIONS] cancel ID\n"
          "Stop job ID: a queued job will not run, a running one is ended (asked, then its\n"
          "executor process ended after a short grace). Its record stays: gridrpc jobs\n"
          "shows it failed, and gridrpc fetch says it was canceled. A finished job is left\n"
          "as it is. Exit status 0 once the job is stopped (or had finished), 1 if it\n"
          "still runs after 2 s (a function in the server's own process that does not\n"
          "poll for a cancel) or the server does not know it.\n"
          "To stop a call made with gridrpc call, press Ctrl-C: the server is told to\n"
          "cancel it.\n"
          "\n",
          stdout);
    fputs(global_help, stdout);
}

static void help_unregister(void) {
    fputs("Usage: gridrpc [OPTIONS] unregister SERVER_ID\n"
          "Remove server SERVER_ID (the first column of gridrpc status) from the\n"
          "metaserver's list at once, instead of after gridmetad's --forget-after: for a\n"
          "server that is gone for good. An administrator's action: with keys, it needs a\n"
          "key tagged admin (gridrpc keygen --role admin), which the metaserver must hold.\n"
          "A server that is still running registers again with its next heartbeat.\n"
          "\n",
          stdout);
    fputs(global_help, stdout);
}

static void help_top(void) {
    fputs("Usage: gridrpc [OPTIONS] top [--interval DURATION] [--count N]\n"
          "The status view (the metaserver's servers, or with --server that server's load)\n"
          "refreshed in place every DURATION (default 2 s, at least 100ms) until Ctrl-C,\n"
          "or N times. On a terminal each refresh is redrawn over the last one under a\n"
          "line with the time and the address; the screen is given back on exit (exit\n"
          "status 0 on Ctrl-C or TERM). When standard output is not a terminal, or with\n"
          "--json, the refreshes are printed one after another without escape sequences\n"
          "(--json: one status object per refresh, {\"error\": ...} for a failed one).\n"
          "A metaserver or server that cannot be reached is shown as an error in the view,\n"
          "and top keeps trying each interval. With --count, the exit status is 1 when the\n"
          "last refresh failed, else 0.\n"
          "\n",
          stdout);
    fputs(global_help, stdout);
}
static void help_completion(void) {
    fputs("Usage: gridrpc completion bash|zsh\n"
          "Print a completion script for the shell, made from the commands and options\n"
          "this gridrpc knows. Nothing is installed: to use it,\n"
          "  bash: add to ~/.bashrc   source <(gridrpc completion bash)\n"
          "  zsh:  gridrpc completion zsh > ~/.zfunc/_gridrpc, with ~/.zfunc in $fpath\n"
          "        before compinit (fpath=(~/.zfunc $fpath); autoload -Uz compinit;\n"
          "        compinit), or in ~/.zshrc after compinit:\n"
          "        source <(gridrpc completion zsh)\n",
          stdout);
}

const cli_command cli_commands[] = {
    {"status", cli_status, help_status, NULL, NULL},
    {"ls", cli_ls, help_ls, NULL, NULL},
    {"describe", cli_describe, help_describe, NULL, NULL},
    {"call", cli_call, help_call, NULL, NULL},
    {"submit", cli_submit, help_submit, NULL, NULL},
    {"fetch", cli_fetch, help_fetch, fetch_opts, NULL},
    {"jobs", cli_jobs, help_jobs, NULL, NULL},
    {"forget", cli_forget, help_forget, NULL, NULL},
    {"cancel", cli_cancel, help_cancel, NULL, NULL},
    {"unregister", cli_unregister, help_unregister, NULL, NULL},
    {"keygen", cli_keygen, help_keygen, keygen_opts, "@files"},
    {"top", cli_top, help_top, top_opts, NULL},
    {"completion", cli_completion, help_completion, NULL, "bash zsh"},
    {"help", NULL, usage, NULL, "@commands"},
};
const size_t cli_ncommands = sizeof cli_commands / sizeof cli_commands[0];

static int find_command(const char *name) {
    for (size_t i = 0; i < cli_ncommands; i++)
        if (strcmp(cli_commands[i].name, name) == 0) return (int)i;
    return -1;
}

/* "did you mean 'status'? " when NAME is a typo of a command, else "". */
static const char *command_hint(const char *name, char *buf, size_t n) {
    gr_suggest s;
    gr_suggest_init(&s, name);
    for (size_t i = 0; i < cli_ncommands; i++)
        gr_suggest_offer(&s, cli_commands[i].name);
    const char *best = gr_suggest_best(&s);
    if (best)
        snprintf(buf, n, "did you mean '%s'? ", best);
    else
        buf[0] = '\0';
    return buf;
}

/* "status, ls, ... or help": every command of the table, for the messages that list them
 * (so a new command is named there without editing them). */
static const char *command_list(char *buf, size_t size) {
    size_t n = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < cli_ncommands && n < size; i++)
        n += (size_t)snprintf(buf + n, size - n, "%s%s",
                              i == 0                   ? ""
                              : i + 1 == cli_ncommands ? " or "
                                                       : ", ",
                              cli_commands[i].name);
    return buf;
}

int main(int argc, char **argv) {
    char list[512];
    cli_opts o;
    memset(&o, 0, sizeof o);
    defaults(&o);
    optind = 1;
    int r = parse_options(argc, argv, &o, usage, NULL);
    if (r) return r > 0 ? CLI_OK : CLI_USAGE;
    if (optind >= argc) {
        cli_error("no command given: use %s (gridrpc --help)", command_list(list, sizeof list));
        return CLI_USAGE;
    }
    const char *cmd = argv[optind];
    if (strcmp(cmd, "help") == 0) {
        if (optind + 1 >= argc) {
            usage();
            return CLI_OK;
        }
        int k = find_command(argv[optind + 1]);
        if (k < 0) {
            char hint[64];
            cli_error("no command '%s': %suse %s", argv[optind + 1],
                      command_hint(argv[optind + 1], hint, sizeof hint), command_list(list, sizeof list));
            return CLI_USAGE;
        }
        cli_commands[k].help();
        return CLI_OK;
    }
    int k = find_command(cmd);
    if (k < 0) {
        char hint[64];
        cli_error("unknown command '%s': %suse %s (gridrpc --help)", cmd,
                  command_hint(cmd, hint, sizeof hint), command_list(list, sizeof list));
        return CLI_USAGE;
    }
    /* The command sees its own name as argv[0] and parses the rest itself. */
    int sub_argc = argc - optind;
    char **sub_argv = argv + optind;
    int rc;
    int first = cli_sub_options(sub_argc, sub_argv, &o, cli_commands[k].help, cli_commands[k].opts, &rc);
    if (first < 0) return rc;
    if (o.have_timeout) {
        grid_set_timeouts_from_np(o.timeout, o.timeout, "--timeout"); /* named in timeout messages */
    }
    /* The key file is read once: the tool's own connections use O's keys, calls the
     * library's (grid_set_key_file_np); a file others may read stops here. */
    if (o.key_file && strcmp(cmd, "keygen") != 0) {
        gr_err ke;
        gr_clearerr(&ke);
        if (grp_keyset_load(o.key_file, &o.keys, &ke) != GRID_OK ||
            grid_set_key_file_np(o.key_file) != GRID_OK) {
            cli_error("--key-file: %s", ke.code ? ke.msg : grid_last_error());
            return CLI_USAGE;
        }
    }
    if (o.have_token && grid_set_token_np(o.token) != GRID_OK) {
        cli_error("--token: %s", grid_last_error());
        return CLI_USAGE;
    }
    return cli_commands[k].run(sub_argc - first, sub_argv + first, &o);
}
