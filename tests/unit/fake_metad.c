/* fake_metad.c: a metaserver scripted for tests/cli.sh, until the real gridmetad can
 * be used there: it answers HELLO and SERVERS (through the protocol layer, as the real
 * one does) with a fixed grid of two servers, "alpha" up with every measurement and
 * "beta" down with none, and refuses anything else with ERROR. Each SERVERS request's
 * site goes to standard error ("SERVERS site=NAME") so the test can check --site.
 *
 *   fake-metad [--alpha HOST:PORT] [--empty]
 *     --alpha   the address given for alpha (a real gridrpcd, so that ls, describe
 *               and call through the metaserver reach real descriptors)
 *     --empty   no servers at all
 * Prints "listening on 127.0.0.1:PORT" once ready; runs until killed. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "grp_meta.h"
#include "grp_proto.h"

static char alpha_host[GRP_MAX_HOST + 1] = "127.0.0.1";
static uint32_t alpha_port = 1; /* nothing listens there unless --alpha */
static int empty;

static void serve(int fd) {
    grw_reader *r = malloc(sizeof *r);
    grw_writer *w = malloc(sizeof *w);
    if (!r || !w) goto out;
    grw_reader_init(r, fd, 1 << 20);
    grw_writer_init(w, fd);
    for (;;) {
        gr_err e = {0, ""};
        grw_header h;
        if (grp_read_header(r, &h, &e)) break;
        if (h.type == GRP_HELLO) {
            grp_hello m;
            if (grp_read_hello(r, &m, &e)) break;
            grp_hello_ok ok;
            memset(&ok, 0, sizeof ok);
            snprintf(ok.server, sizeof ok.server, "fake-metad");
            ok.version = GRW_VERSION;
            grp_limits_default(&ok.limits);
            ok.workers = ok.cores = 1;
            if (grp_write_hello_ok(w, h.request_id, &ok, &e)) break;
        } else if (h.type == GRP_SERVERS) {
            char site[GRP_MAX_SITE + 1];
            if (grp_read_servers(r, site, &e)) break;
            fprintf(stderr, "SERVERS site=%s\n", site);
            char *fa[] = {"linalg/dmmul", "test/echo_int", "test/echo_string"};
            char *fb[] = {"linalg/dmmul", "only/on_beta"};
            grp_server_info v[2];
            memset(v, 0, sizeof v);
            v[0].id = 1;
            snprintf(v[0].name, sizeof v[0].name, "alpha");
            snprintf(v[0].host, sizeof v[0].host, "%s", alpha_host);
            v[0].port = alpha_port;
            v[0].state = GRP_SERVER_UP;
            v[0].cores = 8;
            v[0].workers = 4;
            v[0].running = 3;
            v[0].queued = 2;
            v[0].pending = 1;
            v[0].loadavg = 2.5;
            v[0].speed = 12.5e9;
            v[0].bandwidth = 117.5e6;
            v[0].latency = 0.00042;
            v[0].beat_age_ms = 300;
            v[0].calls = 1234;
            v[0].failures = 5;
            v[0].nfunctions = 3;
            v[0].functions = fa;
            v[1].id = 2;
            snprintf(v[1].name, sizeof v[1].name, "beta");
            snprintf(v[1].host, sizeof v[1].host, "10.9.9.9");
            v[1].port = 7002;
            v[1].state = GRP_SERVER_DOWN;
            v[1].cores = 2;
            v[1].workers = 2;
            v[1].beat_age_ms = 95000;
            v[1].calls = 7;
            v[1].failures = 7;
            v[1].nfunctions = 2;
            v[1].functions = fb;
            if (grp_write_servers_ok(w, h.request_id, v, empty ? 0 : 2, &e)) break;
        } else {
            if (grw_skip(r, &e)) break;
            if (grp_write_error(w, h.request_id, GRID_ERR_PROTOCOL,
                                "fake-metad answers HELLO and SERVERS only", &e))
                break;
        }
    }
out:
    free(r);
    free(w);
    close(fd);
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--alpha") == 0 && i + 1 < argc) {
            const char *hp = argv[++i];
            const char *colon = strrchr(hp, ':');
            if (!colon || (size_t)(colon - hp) > GRP_MAX_HOST) {
                fprintf(stderr, "fake-metad: --alpha HOST:PORT\n");
                return 2;
            }
            snprintf(alpha_host, sizeof alpha_host, "%.*s", (int)(colon - hp), hp);
            alpha_port = (uint32_t)atoi(colon + 1);
        } else if (strcmp(argv[i], "--empty") == 0) {
            empty = 1;
        } else {
            fprintf(stderr, "usage: fake-metad [--alpha HOST:PORT] [--empty]\n");
            return 2;
        }
    }
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof a) != 0 || listen(lfd, 16) != 0 ||
        getsockname(lfd, (struct sockaddr *)&a, &len) != 0) {
        perror("fake-metad");
        return 1;
    }
    printf("listening on 127.0.0.1:%d\n", ntohs(a.sin_port));
    fflush(stdout);
    for (;;) {
        int fd = accept(lfd, NULL, NULL);
        if (fd >= 0) serve(fd); /* one client at a time is enough for the tests */
    }
}
