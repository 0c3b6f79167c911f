/* installed_prog.c: the C program that tests/install.sh and tests/client-only.sh build
 * with pkg-config against an installed GridRPC: prints the library's version and, given
 * a server as the first argument, calls test/null_call there. */
#include <gridrpc.h>
#include <stdio.h>

int main(int argc, char **argv) {
    printf("gridrpc %s\n", gridrpc_version());
    if (argc < 2) return 0;
    char url[256];
    snprintf(url, sizeof url, "gridrpc://%s/test/null_call", argv[1]);
    int rc = grid_call(url);
    printf("null_call %s %s\n", grid_error_name(rc), rc ? grid_last_error() : "");
    return rc != GRID_OK;
}
