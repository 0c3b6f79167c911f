/* cli_status.c: gridrpc status: the servers a metaserver knows, with their state, load,
 * speed and the link from this site (SERVERS), and the functions it holds back after
 * they crashed on several servers (HOLDS); or one server's load (PING); printed once
 * here, or again and again by gridrpc top (cli_top.c). gridrpc unregister: an administrator removes a
 * server's entry (UNREGISTER). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

/* "-" for an unknown (zero) measurement, else V scaled, with DECIMALS decimals. */
static void measured(char *buf, size_t size, double v, double scale, int decimals) {
    if (v > 0)
        snprintf(buf, size, "%.*f", decimals, v * scale);
    else
        snprintf(buf, size, "-");
}

static void age(char *buf, size_t size, uint64_t ms) {
    double s = (double)ms / 1000.0;
    if (s < 10)
        snprintf(buf, size, "%.1fs", s);
    else if (s < 120)
        snprintf(buf, size, "%.0fs", s);
    else if (s < 7200)
        snprintf(buf, size, "%.0fm", s / 60);
    else
        snprintf(buf, size, "%.0fh", s / 3600);
}

/* A measurement for JSON: null when unknown. */
static void json_measured(FILE *f, double v) {
    if (v > 0)
        cli_json_number(f, v);
    else
        fputs("null", f);
}

/* The holds as JSON (after the servers); null when the metaserver could not say. */
static void print_holds_json(FILE *f, const grp_hold *h, uint32_t nh, int known) {
    fputs(",\n\"held\": ", f);
    if (!known) {
        fputs("null", f);
        return;
    }
    fputc('[', f);
    for (uint32_t i = 0; i < nh; i++) {
        fprintf(f, "%s\n  {\"function\": ", i ? "," : "");
        cli_json_string(f, h[i].function);
        fprintf(f, ", \"left_s\": %.1f, \"until_unix_ms\": %llu, \"servers\": ", (double)h[i].left_ms / 1e3,
                (unsigned long long)h[i].until_unix_ms);
        cli_json_string(f, h[i].servers);
        fputs(", \"what\": ", f);
        cli_json_string(f, h[i].what);
        fputc('}', f);
    }
    fputc(']', f);
}

/* The holds under the table: what is not offered, where it crashed, until when. */
static void print_holds(FILE *f, const grp_hold *h, uint32_t nh, int known, const char *why) {
    if (!known) {
        fprintf(f, "held back after crashes: unknown (%s)\n", why);
        return;
    }
    if (nh == 0) return;
    fprintf(f, "\nheld back from new calls (crashed on two servers within a minute):\n");
    for (uint32_t i = 0; i < nh; i++) {
        char at[40] = "?";
        time_t t = (time_t)(h[i].until_unix_ms / 1000);
        struct tm tm;
        if (localtime_r(&t, &tm)) strftime(at, sizeof at, "%H:%M:%S", &tm);
        fprintf(f, "  %s  offered again in %.0f s (at %s); crashed on %s: %s\n", h[i].function,
                (double)h[i].left_ms / 1e3 < 1 ? 1 : (double)h[i].left_ms / 1e3, at, h[i].servers, h[i].what);
    }
}

static void print_meta_json(FILE *f, const cli_opts *o, const grp_server_info *v, uint32_t n) {
    fputs("{\"metaserver\": {\"host\": ", f);
    cli_json_string(f, o->meta_host);
    fprintf(f, ", \"port\": %d}, \"site\": ", o->meta_port);
    cli_json_string(f, o->site);
    fputs(", \"servers\": [", f);
    for (uint32_t i = 0; i < n; i++) {
        const grp_server_info *s = &v[i];
        fprintf(f, "%s\n  {\"id\": %llu, \"name\": ", i ? "," : "", (unsigned long long)s->id);
        cli_json_string(f, s->name);
        fputs(", \"host\": ", f);
        cli_json_string(f, s->host);
        fprintf(f,
                ", \"port\": %u, \"state\": \"%s\", \"cores\": %u, \"workers\": %u, \"running\": %u, "
                "\"queued\": %u, \"pending\": %u, \"loadavg\": ",
                s->port, s->state == GRP_SERVER_UP ? "up" : "down", s->cores, s->workers, s->running,
                s->queued, s->pending);
        cli_json_number(f, s->loadavg);
        fputs(", \"speed\": ", f);
        json_measured(f, s->speed);
        fputs(", \"bandwidth\": ", f);
        json_measured(f, s->bandwidth);
        fputs(", \"latency\": ", f);
        json_measured(f, s->latency);
        fprintf(f, ", \"beat_age_ms\": %llu, \"calls\": %llu, \"failures\": %llu, \"functions\": [",
                (unsigned long long)s->beat_age_ms, (unsigned long long)s->calls,
                (unsigned long long)s->failures);
        for (uint32_t k = 0; k < s->nfunctions; k++) {
            if (k) fputs(", ", f);
            cli_json_string(f, s->functions[k]);
        }
        fputs("]}", f);
    }
    fputs("\n]", f);
}

static int print_meta_table(FILE *f, const cli_opts *o, const grp_server_info *v, uint32_t n) {
    uint32_t up = 0;
    for (uint32_t i = 0; i < n; i++)
        up += v[i].state == GRP_SERVER_UP;
    fprintf(f, "metaserver %s:%d, site %s: %u server%s, %u up\n", o->meta_host, o->meta_port, o->site, n,
            n == 1 ? "" : "s", up);
    if (n == 0) {
        fprintf(f, "no servers have registered yet: start one with gridrpcd --metaserver %s:%d\n",
                o->meta_host, o->meta_port);
        return 0;
    }
    static const char *const head[] = {"ID",   "NAME",    "ADDRESS", "STATE",   "RUN/QUEUE/PEND", "CORES",
                                       "LOAD", "GFLOP/S", "MB/S",    "LAT(MS)", "CALLS/FAIL",     "BEAT"};
    cli_table t;
    if (cli_table_init(&t, 12, head, "lllllrrrrrrr")) return -1;
    for (uint32_t i = 0; i < n; i++) {
        const grp_server_info *s = &v[i];
        char id[24], addr[GRP_MAX_HOST + 16], load[64], cores[16], lavg[32], speed[32], bw[32], lat[32],
            calls[48], beat[32];
        snprintf(id, sizeof id, "%llu", (unsigned long long)s->id);
        /* A TLS server is listed gridrpcs://HOST (docs/protocol.md): the scheme stays in front. */
        int tls;
        const char *h = s->host + gr_scheme_len(s->host, &tls);
        snprintf(addr, sizeof addr, strchr(h, ':') ? "%s[%s]:%u" : "%s%s:%u", tls ? GR_SCHEME_TLS : "", h,
                 s->port);
        snprintf(load, sizeof load, "%u/%u/%u", s->running, s->queued, s->pending);
        snprintf(cores, sizeof cores, "%u", s->cores);
        snprintf(lavg, sizeof lavg, "%.2f", s->loadavg);
        measured(speed, sizeof speed, s->speed, 1e-9, 2);
        measured(bw, sizeof bw, s->bandwidth, 1e-6, 1);
        measured(lat, sizeof lat, s->latency, 1e3, 2);
        snprintf(calls, sizeof calls, "%llu/%llu", (unsigned long long)s->calls,
                 (unsigned long long)s->failures);
        age(beat, sizeof beat, s->beat_age_ms);
        const char *row[] = {id,   s->name, addr,  s->state == GRP_SERVER_UP ? "up" : "DOWN",
                             load, cores,   lavg,  speed,
                             bw,   lat,     calls, beat};
        if (cli_table_row(&t, row)) {
            cli_table_free(&t);
            return -1;
        }
    }
    cli_table_print(&t, f);
    cli_table_free(&t);
    return 0;
}

/* One server's load (PING) into F; on failure nothing is printed and E says why. */
static int status_server(const cli_opts *o, FILE *f, gr_err *e) {
    cli_conn *c;
    grp_pong p;
    int rc = cli_connect(o, o->server_host, o->server_port, 0, &c, e);
    if (!rc) {
        rc = cli_ping(c, &p, e);
        if (rc) cli_close(c);
    }
    if (rc) return CLI_FAIL;
    if (o->json) {
        fputs("{\"server\": {\"host\": ", f);
        cli_json_string(f, o->server_host);
        fprintf(f, ", \"port\": %d, \"name\": ", o->server_port);
        cli_json_string(f, c->hello.server);
        fprintf(f,
                ", \"state\": \"up\", \"running\": %u, \"queued\": %u, \"workers\": %u, \"cores\": %u, "
                "\"loadavg\": ",
                p.running, p.queued, p.workers, p.cores);
        cli_json_number(f, p.loadavg);
        fputs("}}\n", f);
    } else {
        fprintf(f, "server   %s:%d (%s)\n", o->server_host, o->server_port, c->hello.server);
        fprintf(f, "state    up\n");
        fprintf(f, "running  %u\nqueued   %u\nworkers  %u\ncores    %u\nload     %.2f\n", p.running, p.queued,
                p.workers, p.cores, p.loadavg);
    }
    cli_close(c);
    return CLI_OK;
}

/* The metaserver's servers and holds into F; on failure nothing is printed. */
static int status_meta(const cli_opts *o, FILE *f, gr_err *e) {
    grp_server_info *v = NULL;
    uint32_t n = 0;
    cli_conn *c;
    int rc = cli_connect(o, o->meta_host, o->meta_port, 1, &c, e);
    if (!rc) {
        rc = cli_servers(c, o->site, &v, &n, e);
        if (rc) cli_close(c);
    }
    if (rc) return CLI_FAIL;
    /* A metaserver older than HOLDS answers ERROR: the servers are still worth showing. */
    grp_hold *h = NULL;
    uint32_t nh = 0;
    gr_err he = {0, ""};
    int known = cli_holds(c, &h, &nh, &he) == GRID_OK;
    cli_close(c);
    if (o->json) {
        print_meta_json(f, o, v, n);
        print_holds_json(f, h, nh, known);
        fputs("}\n", f);
    } else {
        rc = print_meta_table(f, o, v, n);
        print_holds(f, h, nh, known, he.msg);
    }
    free(h);
    grp_servers_free(v, n);
    if (rc) {
        gr_seterr(e, GRID_ERR_NOMEM, "out of memory");
        return CLI_FAIL;
    }
    return CLI_OK;
}

int cli_status_print(const cli_opts *o, FILE *f, gr_err *e) {
    return o->target == CLI_SERVER ? status_server(o, f, e) : status_meta(o, f, e);
}

int cli_status(int argc, char **argv, cli_opts *o) {
    if (argc > 0) {
        cli_error("status takes no arguments, got '%s' (gridrpc status --help)", argv[0]);
        return CLI_USAGE;
    }
    if (cli_resolve_target(o, CLI_SERVER | CLI_METASERVER)) return CLI_FAIL;
    gr_err e = {0, ""};
    int rc = cli_status_print(o, stdout, &e);
    if (rc) cli_error("%s", e.msg);
    return rc;
}

int cli_unregister(int argc, char **argv, cli_opts *o) {
    char *end = NULL;
    unsigned long long id = argc == 1 ? strtoull(argv[0], &end, 10) : 0;
    if (argc != 1 || !end || *end || !id) {
        cli_error("unregister takes one server id, the first column of gridrpc status (gridrpc unregister "
                  "--help)");
        return CLI_USAGE;
    }
    if (cli_resolve_target(o, CLI_METASERVER)) return CLI_FAIL;
    gr_err e = {0, ""};
    cli_conn *c;
    int rc = cli_connect(o, o->meta_host, o->meta_port, 1, &c, &e);
    if (rc) {
        cli_error("%s", e.msg);
        return CLI_FAIL;
    }
    rc = cli_unregister_server(c, (uint64_t)id, &e);
    cli_close(c);
    if (rc) {
        cli_error("%s", e.msg);
        return CLI_FAIL;
    }
    printf("unregistered server %llu\n", id);
    return CLI_OK;
}
