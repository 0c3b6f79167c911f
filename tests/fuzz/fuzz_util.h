/* fuzz_util.h: what several fuzz targets need around the code they test: the input fed
 * through a socket (the way a daemon reads it), written to a file (the way a
 * configuration is read), split into words (a command line), and stderr silenced while
 * a parser writes its warnings (so a run shows findings, not usage messages). Header
 * only: each target is one C file plus fuzz_main.c or libFuzzer's main. */
#ifndef FUZZ_UTIL_H
#define FUZZ_UTIL_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Aborts with WHAT when COND is false: a broken promise of the code under test is a
 * finding like a crash (libFuzzer and fuzz_main both report the abort). */
static inline void fuzz_check(int cond, const char *what) {
    if (!cond) {
        fprintf(stderr, "fuzz: invariant broken: %s\n", what);
        abort();
    }
}

/* A socket whose peer has sent DATA and closed its sending side: reads see DATA, then
 * end of file. Returns the descriptor to read from, or -1 (the input is then skipped).
 * *PEER receives the other end, still open, for replies; the caller closes both. */
static inline int fuzz_socket_with(const uint8_t *data, size_t size, int *peer) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return -1;
    int big = 1 << 20;
    setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
    setsockopt(sv[0], SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    size_t off = 0;
    while (off < size) {
        ssize_t k = write(sv[1], data + off, size - off);
        if (k <= 0) break;
        off += (size_t)k;
    }
    shutdown(sv[1], SHUT_WR);
    if (off < size) {
        close(sv[0]);
        close(sv[1]);
        return -1;
    }
    *peer = sv[1];
    return sv[0];
}

static char fuzz_dir[512];
static char fuzz_files[8][64];

/* Removes the folder of fuzz_tmpdir and the files fuzz_write_file wrote there. */
static inline void fuzz_cleanup(void) {
    char path[sizeof fuzz_dir * 2 + 2]; /* as fuzz_dir, twice: gcc counts both parts at most */
    for (int i = 0; i < 8 && fuzz_files[i][0]; i++) {
        snprintf(path, sizeof path, "%s/%s", fuzz_dir, fuzz_files[i]);
        unlink(path);
    }
    rmdir(fuzz_dir);
}

/* A private folder for the files a target writes (made once per process, under
 * $TMPDIR or /tmp; removed at exit with what fuzz_write_file put there). */
static inline const char *fuzz_tmpdir(void) {
    char *dir = fuzz_dir;
    if (!dir[0]) {
        const char *t = getenv("TMPDIR");
        snprintf(dir, sizeof fuzz_dir, "%s/gridrpc-fuzz-XXXXXX", t && *t ? t : "/tmp");
        if (!mkdtemp(dir)) {
            perror("fuzz: mkdtemp");
            abort();
        }
        atexit(fuzz_cleanup);
    }
    return dir;
}

/* Writes DATA to NAME (a plain name, under 64 bytes) in fuzz_tmpdir(); its path goes to
 * BUF (N bytes), which is returned. */
static inline const char *fuzz_write_file(const char *name, const uint8_t *data, size_t size, char *buf,
                                          size_t n) {
    snprintf(buf, n, "%s/%s", fuzz_tmpdir(), name);
    for (int i = 0; i < 8; i++) {
        if (strcmp(fuzz_files[i], name) == 0) break;
        if (!fuzz_files[i][0]) {
            snprintf(fuzz_files[i], sizeof fuzz_files[i], "%s", name);
            break;
        }
    }
    int fd = open(buf, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        perror(buf);
        abort();
    }
    size_t off = 0;
    while (off < size) {
        ssize_t k = write(fd, data + off, size - off);
        if (k <= 0) {
            perror(buf);
            abort();
        }
        off += (size_t)k;
    }
    close(fd);
    return buf;
}

/* A NUL-terminated copy of DATA (the parsers under test take C strings). */
static inline char *fuzz_strndup(const uint8_t *data, size_t size) {
    char *s = malloc(size + 1);
    if (!s) abort();
    memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

/* Silences stdout and stderr until fuzz_quiet_end: the parsers print a warning, a usage
 * message or their help for most inputs. Only the stdio streams are swapped (glibc's
 * stdout and stderr are variables), not the descriptors: the sanitizers and libFuzzer
 * write to descriptor 2 and to the stream they took at start, so a crash inside still
 * says what it was. */
typedef struct fuzz_quiet {
    FILE *out, *err;
} fuzz_quiet;

static inline fuzz_quiet fuzz_quiet_begin(void) {
    static FILE *null;
    if (!null && !(null = fopen("/dev/null", "w"))) abort();
    fflush(stdout);
    fflush(stderr);
    fuzz_quiet q = {stdout, stderr};
    stdout = null;
    stderr = null;
    return q;
}

static inline void fuzz_quiet_end(fuzz_quiet q) {
    fflush(stdout);
    stdout = q.out;
    stderr = q.err;
}

#endif /* FUZZ_UTIL_H */
