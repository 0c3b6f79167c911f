/* raw_hello.c: sends one raw HELLO with a client name given byte for byte (newlines,
 * escape codes: what the client library would never send) to a daemon on
 * 127.0.0.1:PORT and waits for its answer, for tests/safe-defaults.sh's log checks.
 * Usage: raw-hello PORT NAME. Exit 0 once the daemon answered or closed. */
#include <stdlib.h>

#include "raw_peer.h"

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: raw-hello PORT NAME\n");
        return 2;
    }
    int fd = raw_connect(atoi(argv[1]));
    if (fd < 0) return 1;
    grw_writer wr;
    if (raw_send_hello(&wr, fd, argv[2])) return 1;
    grw_reader rd;
    memset(&rd, 0, sizeof rd);
    rd.fd = -1;
    uint32_t t = raw_read_reply(&rd, fd, 0, NULL, NULL, 0, NULL, 10);
    printf("reply type %u\n", t);
    close(fd);
    return 0;
}
