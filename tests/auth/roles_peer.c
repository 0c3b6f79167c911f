/* roles_peer.c: a hostile peer of gridmetad for tests/auth/roles.sh (issue 25): it
 * connects with a key file, claims a role, and sends one raw metaserver message, as a
 * client with a stolen client key or another server would. It prints one line: "ok
 * ..." or "refused: MESSAGE (GRID_ERR_...)" (the metaserver's ERROR and its code), and
 * exits 0 either way; 1 when the exchange itself failed (no connection, a broken reply).
 * Usage: roles-peer PORT KEYFILE|- client|server|admin COMMAND [ARGS]
 *   register HOST PORT NAME   REGISTER a server with one function, test/echo_int
 *   heartbeat ID              HEARTBEAT for server ID
 *   unregister ID             UNREGISTER server ID
 *   report ID                 REPORT GRID_ERR_CONN_LOST for server ID
 *   servers                   SERVERS: "ID HOST:PORT NAME up|down NFUNCTIONS" per line */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gridrpc.h"
#include "grp_auth.h"
#include "grp_meta.h"
#include "grp_proto.h"

static grw_reader rd;
static grw_writer wr;

static int die(const char *what, const gr_err *e) {
    printf("error: %s: %s\n", what, e->msg);
    return 1;
}

/* Reads the reply to a request: 0 with the body of EXPECTED next, 2 after printing the
 * ERROR, 1 on a broken exchange. */
static int reply(uint32_t expected) {
    grw_header h;
    gr_err e;
    rd.deadline_ns = gr_now_ns() + 10000000000LL;
    if (grp_read_header(&rd, &h, &e)) return die("reply", &e);
    if (h.type == GRP_ERROR) {
        grp_error m;
        if (grp_read_error(&rd, &m, &e)) return die("ERROR", &e);
        printf("refused: %s (%s)\n", m.message, grid_error_name(m.code));
        return 2;
    }
    if (h.type != expected) {
        printf("error: %s instead of %s\n", grp_type_name(h.type), grp_type_name(expected));
        return 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: roles-peer PORT KEYFILE|- ROLE COMMAND [ARGS]\n");
        return 2;
    }
    gr_err e;
    grp_keyset ks;
    memset(&ks, 0, sizeof ks);
    if (strcmp(argv[2], "-") != 0 && grp_keyset_load(argv[2], &ks, &e)) return die("key file", &e);
    uint32_t role = strcmp(argv[3], "server") == 0  ? GRP_ROLE_SERVER
                    : strcmp(argv[3], "admin") == 0 ? GRP_ROLE_ADMIN
                                                    : GRP_ROLE_CLIENT;
    int fd = grw_connect("127.0.0.1", atoi(argv[1]), 5, &e);
    if (fd < 0) return die("connect", &e);
    grw_reader_init(&rd, fd, 1u << 24);
    grw_writer_init(&wr, fd);
    rd.deadline_ns = wr.deadline_ns = gr_now_ns() + 10000000000LL;
    grp_hello m;
    memset(&m, 0, sizeof m);
    snprintf(m.client, sizeof m.client, "roles-peer");
    m.min_version = m.max_version = GRW_VERSION;
    grp_hello_ok ok;
    int refused = 0;
    if (grp_auth_hello_as(&rd, &wr, 1, &m, &ks, role, GRP_PEER_GRIDMETAD, "", &ok, &refused, &e)) {
        if (refused) {
            printf("refused: %s (%s)\n", e.msg, grid_error_name(e.code));
            return 0;
        }
        return die("HELLO", &e);
    }
    const char *cmd = argv[4];
    int rc = 1;
    if (strcmp(cmd, "register") == 0 && argc == 8) {
        grp_function f;
        memset(&f, 0, sizeof f);
        snprintf(f.name, sizeof f.name, "test/echo_int");
        f.hash = 1;
        grp_register r;
        memset(&r, 0, sizeof r);
        snprintf(r.host, sizeof r.host, "%s", argv[5]);
        r.port = (uint32_t)atoi(argv[6]);
        snprintf(r.name, sizeof r.name, "%s", argv[7]);
        r.cores = 1;
        r.speed = 1e15;
        r.nfunctions = 1;
        r.functions = &f;
        grp_register_ok rok;
        if (grp_write_register(&wr, 2, &r, &e)) return die("REGISTER", &e);
        rc = reply(GRP_REGISTER_OK);
        if (!rc && grp_read_register_ok(&rd, &rok, &e)) return die("REGISTER_OK", &e);
        if (!rc) printf("ok id=%llu\n", (unsigned long long)rok.server_id);
    } else if (strcmp(cmd, "heartbeat") == 0 && argc == 6) {
        grp_heartbeat h;
        memset(&h, 0, sizeof h);
        h.server_id = strtoull(argv[5], NULL, 10);
        h.workers = h.cores = 1;
        if (grp_write_heartbeat(&wr, 2, &h, &e)) return die("HEARTBEAT", &e);
        rc = reply(GRP_HEARTBEAT_OK);
        if (!rc && grp_read_empty(&rd, &e)) return die("HEARTBEAT_OK", &e);
        if (!rc) printf("ok\n");
    } else if (strcmp(cmd, "unregister") == 0 && argc == 6) {
        if (grp_write_unregister(&wr, 2, strtoull(argv[5], NULL, 10), &e)) return die("UNREGISTER", &e);
        rc = reply(GRP_UNREGISTER_OK);
        if (!rc && grp_read_empty(&rd, &e)) return die("UNREGISTER_OK", &e);
        if (!rc) printf("ok\n");
    } else if (strcmp(cmd, "report") == 0 && argc == 6) {
        grp_report r;
        memset(&r, 0, sizeof r);
        r.server_id = strtoull(argv[5], NULL, 10);
        r.code = GRID_ERR_CONN_LOST;
        snprintf(r.function, sizeof r.function, "test/echo_int");
        /* REPORT has no answer: a PING after it returns once the REPORT was applied. */
        if (grp_write_report(&wr, 2, &r, &e) || grp_write_empty(&wr, GRP_PING, 3, &e))
            return die("REPORT", &e);
        rc = reply(GRP_PONG);
        if (!rc) printf("ok\n");
    } else if (strcmp(cmd, "servers") == 0 && argc == 5) {
        if (grp_write_servers(&wr, 2, "", &e)) return die("SERVERS", &e);
        rc = reply(GRP_SERVERS_OK);
        grp_server_info *v = NULL;
        uint32_t n = 0;
        if (!rc && grp_read_servers_ok(&rd, &v, &n, &e)) return die("SERVERS_OK", &e);
        for (uint32_t i = 0; i < n; i++)
            printf("%llu %s:%u %s %s %u\n", (unsigned long long)v[i].id, v[i].host, v[i].port, v[i].name,
                   v[i].state == GRP_SERVER_UP ? "up" : "down", v[i].nfunctions);
        grp_servers_free(v, n);
    } else {
        fprintf(stderr, "roles-peer: unknown command or arguments: %s\n", cmd);
        return 2;
    }
    close(fd);
    return rc == 1 ? 1 : 0;
}
