/* cli_keygen.c: gridrpc keygen [--role ROLE] FILE: a new key file for the key
 * handshake (32 random bytes as hex after the role they may prove, mode 0600;
 * grp_keygen does the work and refuses to replace a file). */
#include <stdio.h>
#include <string.h>

#include "cli.h"

int cli_keygen(int argc, char **argv, cli_opts *o) {
    uint32_t role = 0;
    const char *rname = o->role;
    if (rname) {
        role = strcmp(rname, "client") == 0   ? GRP_ROLE_CLIENT
               : strcmp(rname, "server") == 0 ? GRP_ROLE_SERVER
               : strcmp(rname, "admin") == 0  ? GRP_ROLE_ADMIN
                                              : 0;
        if (!role) {
            cli_error("keygen: --role '%s': a role is client, server or admin", rname);
            return CLI_USAGE;
        }
    }
    if (argc != 1) {
        cli_error("keygen: give exactly one FILE to write (gridrpc keygen [--role ROLE] FILE)");
        return CLI_USAGE;
    }
    gr_err e;
    if (grp_keygen(argv[0], role, &e) != GRID_OK) {
        cli_error("keygen: %s", e.msg);
        return CLI_FAIL;
    }
    grp_keyset ks;
    if (grp_keyset_load(argv[0], &ks, &e) != GRID_OK) {
        cli_error("keygen: the new file does not read back: %s", e.msg);
        return CLI_FAIL;
    }
    printf("wrote %s (key id %s, %s, mode 0600)\n", argv[0], ks.keys[0].id,
           role ? rname : "untagged: every role");
    grp_keyset_clear(&ks);
    return CLI_OK;
}
