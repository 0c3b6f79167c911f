/* cli_keygen.c: gridrpc keygen FILE: a new key file for the key handshake (32 random
 * bytes as hex, mode 0600; grp_keygen does the work and refuses to replace a file). */
#include <stdio.h>

#include "cli.h"

int cli_keygen(int argc, char **argv, cli_opts *o) {
    (void)o;
    if (argc != 1) {
        cli_error("keygen: give exactly one FILE to write (gridrpc keygen FILE)");
        return CLI_USAGE;
    }
    gr_err e;
    if (grp_keygen(argv[0], &e) != GRID_OK) {
        cli_error("keygen: %s", e.msg);
        return CLI_FAIL;
    }
    grp_keyset ks;
    if (grp_keyset_load(argv[0], &ks, &e) != GRID_OK) {
        cli_error("keygen: the new file does not read back: %s", e.msg);
        return CLI_FAIL;
    }
    printf("wrote %s (key id %s, mode 0600)\n", argv[0], ks.keys[0].id);
    grp_keyset_clear(&ks);
    return CLI_OK;
}
