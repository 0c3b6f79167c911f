/* version.c: the library's version string, so that programs and stubs can tell which
 * runtime they run against. */
#include "config.h"

#include "gridrpc.h"

const char *gridrpc_version(void) {
    return PACKAGE_VERSION;
}
