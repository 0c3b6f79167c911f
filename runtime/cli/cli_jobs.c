/* cli_jobs.c: gridrpc jobs [SERVER] and gridrpc forget ID, and what gridrpc fetch needs
 * before it can fetch from a process that did not submit: the job's function, its
 * descriptor, and the IN scalars of the SUBMIT (JOB_INFO), which size the outputs.
 * (submit and fetch themselves are in cli_call.c, next to call, whose argument handling
 * and printing they share.) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "gr_settings.h"

/* A job id's server and hex part: "host:port/HEX", or a bare HEX on O's server. */
int cli_parse_job(cli_opts *o, const char *text, char *host, int *port, char hex[GRP_MAX_JOB_ID + 1]) {
    const char *slash = strrchr(text, '/');
    const char *h = slash ? slash + 1 : text;
    if (!grp_job_id_ok(h)) {
        cli_error(
            "'%s' is not a job id: gridrpc submit prints them as host:port/HEX (HEX: %d to %d lowercase "
            "hex digits)",
            text, GRP_MIN_JOB_ID, GRP_MAX_JOB_ID);
        return -1;
    }
    snprintf(hex, GRP_MAX_JOB_ID + 1, "%s", h);
    if (!slash) {
        if (cli_resolve_target(o, CLI_SERVER) || o->target != CLI_SERVER) {
            cli_error("job id '%s' names no server: write it as host:port/%s, or pass --server", text, h);
            return -1;
        }
        snprintf(host, GRP_MAX_HOST + 1, "%s", o->server_host);
        *port = o->server_port;
        return 0;
    }
    char hp[GRP_MAX_HOST + 32], err[512];
    int tls;
    const char *start = text + gr_scheme_len(text, &tls);
    snprintf(hp, sizeof hp, "%s%.*s", tls ? GR_SCHEME_TLS : "", (int)(slash - start), start);
    if (gr_parse_hostport(hp, 0, host, GRP_MAX_HOST + 1, port, err, sizeof err)) {
        cli_error("job id '%s': %s", text, err);
        return -1;
    }
    return 0;
}

static void set_deadline(cli_conn *c, double extra) {
    long long d = c->timeout > 0 ? gr_now_ns() + (long long)((c->timeout + extra) * 1e9) : 0;
    c->rd.deadline_ns = c->wr.deadline_ns = d;
}

int cli_job_head(cli_opts *o, const char *host, int port, const char *hex, grp_job *info, char *qualified,
                 grd_desc **d, grm_call **call, gr_err *e) {
    *d = NULL;
    *call = NULL;
    cli_conn *c, *c2;
    int rc = cli_connect(o, host, port, 0, &c, e);
    if (rc) return rc;
    set_deadline(c, 0);
    uint64_t id = c->next_id++, hash;
    rc = grp_write_job_id(&c->wr, GRP_JOB_INFO, id, hex, e);
    if (!rc) rc = cli_reply(c, id, GRP_JOB_INFO_OK, "JOB_INFO", e);
    if (!rc) rc = grp_read_job_info_ok(&c->rd, info, &hash, e);
    if (!rc && info->state == GRP_JOB_FAILED) {
        /* Nothing to size: the fetch gives its error (its function may be gone). */
        cli_close(c);
        return GRID_OK;
    }
    /* The descriptor on a second connection: the head that follows on the first is
     * read against it. */
    if (!rc) rc = cli_connect(o, host, port, 0, &c2, e);
    if (!rc) {
        rc = cli_get_descriptor(c2, info->function, qualified, d, e);
        cli_close(c2);
    }
    if (!rc && (*d)->hash != hash)
        rc =
            gr_seterr(e, GRID_ERR_STALE,
                      "the interface of %s changed on the server since the job was submitted: its result can "
                      "only be read with the old one",
                      info->function);
    if (!rc && !(*call = malloc(grm_call_size((*d)->nparams))))
        rc = gr_seterr(e, GRID_ERR_NOMEM, "out of memory");
    if (!rc) {
        grm_init(*call, *d, GRM_SERVER_SIDE);
        rc = grp_read_job_info_head(&c->rd, *call, &c->hello.limits, e);
        if (rc) {
            grm_release(*call);
            free(*call);
            *call = NULL;
        }
    }
    cli_close(c);
    if (rc) {
        grd_free(*d);
        *d = NULL;
    }
    return rc;
}

/* ---------------------------------------------------------------- jobs */

static int list_jobs(cli_opts *o, const char *host, int port, grp_job **v, uint32_t *n, gr_err *e) {
    cli_conn *c;
    int rc = cli_connect(o, host, port, 0, &c, e);
    if (rc) return rc;
    set_deadline(c, 0);
    uint64_t id = c->next_id++;
    rc = grp_write_empty(&c->wr, GRP_JOBS, id, e);
    if (!rc) rc = cli_reply(c, id, GRP_JOBS_OK, "JOBS", e);
    if (!rc) rc = grp_read_jobs_ok(&c->rd, v, n, e);
    cli_close(c);
    return rc;
}

static void when(uint64_t ms, char *buf, size_t size) {
    if (!ms) {
        snprintf(buf, size, "-");
        return;
    }
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(buf, size, "%Y-%m-%d %H:%M:%S", &tm);
}

static void job_id_text(const char *host, int port, const char *hex, char *buf, size_t size) {
    const char *scheme = gr_tls_endpoint(host, port) ? GR_SCHEME_TLS : "";
    snprintf(buf, size, strchr(host, ':') ? "%s[%s]:%d/%s" : "%s%s:%d/%s", scheme, host, port, hex);
}

typedef struct server_jobs {
    char host[GRP_MAX_HOST + 1];
    int port;
    grp_job *v;
    uint32_t n;
} server_jobs;

static void print_jobs(const cli_opts *o, const server_jobs *sv, int nsv) {
    if (o->json) {
        fputs("{\"jobs\": [", stdout);
        int first = 1;
        for (int s = 0; s < nsv; s++)
            for (uint32_t i = 0; i < sv[s].n; i++) {
                const grp_job *j = &sv[s].v[i];
                char id[GRP_MAX_HOST + GRP_MAX_JOB_ID + 32];
                job_id_text(sv[s].host, sv[s].port, j->id, id, sizeof id);
                fputs(first ? "\n  {\"id\": " : ",\n  {\"id\": ", stdout);
                first = 0;
                cli_json_string(stdout, id);
                fputs(", \"function\": ", stdout);
                cli_json_string(stdout, j->function);
                printf(", \"state\": \"%s\", \"code\": %d, \"error\": ", grp_job_state_name(j->state),
                       j->code);
                if (j->code)
                    cli_json_string(stdout, grid_error_name(j->code));
                else
                    fputs("null", stdout);
                printf(", \"submitted_ms\": %llu, \"finished_ms\": %llu, \"bytes_in\": %llu, \"bytes_out\": "
                       "%llu}",
                       (unsigned long long)j->submitted_ms, (unsigned long long)j->finished_ms,
                       (unsigned long long)j->bytes_in, (unsigned long long)j->bytes_out);
            }
        fputs(first ? "]}\n" : "\n]}\n", stdout);
        return;
    }
    static const char *const heads[] = {"ID", "FUNCTION", "STATE", "SUBMITTED", "FINISHED", "IN", "OUT"};
    cli_table t;
    if (cli_table_init(&t, 7, heads, "lllllrr")) return;
    for (int s = 0; s < nsv; s++)
        for (uint32_t i = 0; i < sv[s].n; i++) {
            const grp_job *j = &sv[s].v[i];
            char id[GRP_MAX_HOST + GRP_MAX_JOB_ID + 32], sub[32], fin[32], in[32], out[32], state[64];
            job_id_text(sv[s].host, sv[s].port, j->id, id, sizeof id);
            when(j->submitted_ms, sub, sizeof sub);
            when(j->finished_ms, fin, sizeof fin);
            snprintf(in, sizeof in, "%llu", (unsigned long long)j->bytes_in);
            snprintf(out, sizeof out, "%llu", (unsigned long long)j->bytes_out);
            snprintf(state, sizeof state, "%s%s%s", grp_job_state_name(j->state), j->code ? " " : "",
                     j->code ? grid_error_name(j->code) : "");
            const char *cells[] = {id, j->function, state, sub, fin, in, out};
            cli_table_row(&t, cells);
        }
    if (t.nrows > 1)
        cli_table_print(&t, stdout);
    else
        puts("no jobs");
    cli_table_free(&t);
}

int cli_jobs(int argc, char **argv, cli_opts *o) {
    if (argc > 1) {
        cli_error("jobs takes at most one server (gridrpc jobs [HOST:PORT])");
        return CLI_USAGE;
    }
    gr_err e = {0, ""};
    server_jobs *sv = NULL;
    int nsv = 0, status = CLI_OK;
    if (argc == 1 || (o->server_host[0])) {
        sv = calloc(1, sizeof *sv);
        if (!sv) return CLI_FAIL;
        char err[512];
        if (argc == 1 &&
            gr_parse_hostport(argv[0], 0, sv->host, sizeof sv->host, &sv->port, err, sizeof err)) {
            cli_error("jobs %s: %s", argv[0], err);
            free(sv);
            return CLI_USAGE;
        }
        if (argc == 0) {
            snprintf(sv->host, sizeof sv->host, "%s", o->server_host);
            sv->port = o->server_port;
        }
        nsv = 1;
    } else {
        if (cli_resolve_target(o, CLI_SERVER | CLI_METASERVER)) return CLI_FAIL;
        if (o->target == CLI_SERVER) {
            sv = calloc(1, sizeof *sv);
            if (!sv) return CLI_FAIL;
            snprintf(sv->host, sizeof sv->host, "%s", o->server_host);
            sv->port = o->server_port;
            nsv = 1;
        } else {
            /* Every server the metaserver knows as up. */
            grp_server_info *servers = NULL;
            uint32_t n = 0;
            if (cli_meta_servers(o, &servers, &n, &e)) {
                cli_error("%s", e.msg);
                return CLI_FAIL;
            }
            sv = calloc(n ? n : 1, sizeof *sv);
            for (uint32_t i = 0; sv && i < n; i++)
                if (servers[i].state == GRP_SERVER_UP) {
                    snprintf(sv[nsv].host, sizeof sv[nsv].host, "%s", servers[i].host);
                    sv[nsv++].port = (int)servers[i].port;
                }
            grp_servers_free(servers, n);
            if (!sv) return CLI_FAIL;
        }
    }
    for (int s = 0; s < nsv; s++)
        if (list_jobs(o, sv[s].host, sv[s].port, &sv[s].v, &sv[s].n, &e)) {
            cli_error("jobs of %s:%d: %s", sv[s].host, sv[s].port, e.msg);
            status = CLI_FAIL;
        }
    print_jobs(o, sv, nsv);
    for (int s = 0; s < nsv; s++)
        free(sv[s].v);
    free(sv);
    return status;
}

/* ---------------------------------------------------------------- forget */

/* The one job id that COMMAND (forget, cancel) takes, as HOST:PORT/HEX in ID (N bytes);
 * CLI_OK, or CLI_USAGE said. */
static int one_job(int argc, char **argv, cli_opts *o, const char *command, char *id, size_t n) {
    if (argc != 1) {
        cli_error("%s takes one job id (gridrpc %s HOST:PORT/HEX)", command, command);
        return CLI_USAGE;
    }
    char host[GRP_MAX_HOST + 1], hex[GRP_MAX_JOB_ID + 1];
    int port;
    if (cli_parse_job(o, argv[0], host, &port, hex)) return CLI_USAGE;
    job_id_text(host, port, hex, id, n);
    return CLI_OK;
}

int cli_forget(int argc, char **argv, cli_opts *o) {
    char id[GRP_MAX_HOST + GRP_MAX_JOB_ID + 32];
    int status = one_job(argc, argv, o, "forget", id, sizeof id);
    if (status != CLI_OK) return status;
    if (grid_job_forget_np(id) != GRID_OK) {
        cli_error("%s", grid_last_error());
        return CLI_FAIL;
    }
    if (o->json) {
        fputs("{\"forgotten\": ", stdout);
        cli_json_string(stdout, id);
        fputs("}\n", stdout);
    } else {
        printf("forgot %s\n", id);
    }
    return CLI_OK;
}

/* ---------------------------------------------------------------- cancel */

int cli_cancel(int argc, char **argv, cli_opts *o) {
    char id[GRP_MAX_HOST + GRP_MAX_JOB_ID + 32];
    int status = one_job(argc, argv, o, "cancel", id, sizeof id);
    if (status != CLI_OK) return status;
    grid_job_info_np info;
    if (grid_job_cancel_np(id, &info) != GRID_OK) {
        cli_error("%s", grid_last_error());
        return CLI_FAIL;
    }
    const char *state = grp_job_state_name((uint32_t)info.state);
    int stopped = info.state == GRID_JOB_FAILED_NP && info.code == GRID_ERR_CANCELED;
    if (o->json) {
        fputs("{\"job\": ", stdout);
        cli_json_string(stdout, id);
        printf(", \"state\": \"%s\", \"canceled\": %s}\n", state, stopped ? "true" : "false");
    } else if (stopped) {
        printf("canceled %s\n", id);
    } else if (info.state == GRID_JOB_RUNNING_NP) {
        printf("asked %s to stop; it is still running (its function runs in the server's own process and "
               "does not poll for a cancel)\n",
               id);
    } else {
        printf("%s had finished already (%s): nothing to cancel\n", id, state);
    }
    /* Still running: the caller can tell from the status. */
    return stopped || info.state != GRID_JOB_RUNNING_NP ? CLI_OK : CLI_FAIL;
}
