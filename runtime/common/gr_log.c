/* gr_log.c: the daemons' log on stderr: one line per event, prefixed with the local time
 * (milliseconds), the program and the level. Each line is formatted first and written
 * with one fputs, so lines from concurrent threads never interleave.
 *
 * Messages carry what peers sent (HELLO names, tokens' owners, function names, error
 * texts), before and after authentication: every control character is escaped here,
 * in the one place all log lines pass, so a peer can neither start a forged line with
 * a newline nor drive a terminal with escape sequences. Each line is bounded. */
#include "gr_log.h"

#include <stdarg.h>
#include <stdio.h>
#include <sys/time.h>
#include <time.h>

/* Written once by main before any thread starts; read-only afterwards. */
static int log_level = GR_LOG_INFO;
static const char *log_program = "gridrpc";

static const char *const level_names[] = {"error", "warn", "info", "debug"};

void gr_log_init(const char *program, int level) {
    log_program = program;
    log_level = level;
}

int gr_log_enabled(int level) {
    return level <= log_level;
}

/* Bytes of the UTF-8 sequence starting at S (up to N bytes) when it is well formed and
 * not a C1 control (U+0080..U+009F); 0 otherwise. */
static size_t utf8_printable(const unsigned char *s, size_t n) {
    size_t len = s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 && s[0] < 0xe0 ? 2 : 0;
    if (!len || len > n) return 0;
    for (size_t i = 1; i < len; i++)
        if ((s[i] & 0xc0) != 0x80) return 0;
    if (s[0] == 0xc2 && s[1] < 0xa0) return 0; /* C1 */
    return len;
}

size_t gr_log_escape(const char *in, size_t n, char *out, size_t cap) {
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *)in;
    size_t o = 0;
    if (!cap) return 0;
    for (size_t i = 0; i < n && s[i];) {
        unsigned char c = s[i];
        size_t len = c >= 0x20 && c < 0x7f ? 1 : c >= 0x80 ? utf8_printable(s + i, n - i) : 0;
        if (len) {
            if (o + len >= cap) break;
            for (size_t k = 0; k < len; k++)
                out[o++] = (char)s[i + k];
            i += len;
            continue;
        }
        const char *esc = c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == '\t' ? "\\t" : NULL;
        char x[5] = {'\\', 'x', hex[c >> 4], hex[c & 15], 0};
        if (!esc) esc = x;
        size_t el = esc == x ? 4 : 2;
        if (o + el >= cap) break;
        for (size_t k = 0; k < el; k++)
            out[o++] = esc[k];
        i++;
    }
    out[o] = '\0';
    return o;
}

void gr_log(int level, const char *fmt, ...) {
    if (level > log_level) return;
    char msg[GR_LOG_MAX_MESSAGE], line[4 * GR_LOG_MAX_MESSAGE + 128];
    struct timeval tv;
    struct tm tm;
    gettimeofday(&tv, NULL);
    localtime_r(&tv.tv_sec, &tm);
    size_t n = strftime(line, sizeof line, "%Y-%m-%dT%H:%M:%S", &tm);
    n += (size_t)snprintf(line + n, sizeof line - n, ".%03d %s %s: ", (int)(tv.tv_usec / 1000), log_program,
                          level_names[level]);
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (k < 0) k = 0;
    size_t m = (size_t)k < sizeof msg ? (size_t)k : sizeof msg - 1;
    n += gr_log_escape(msg, m, line + n, sizeof line - n - 1);
    line[n++] = '\n';
    line[n] = '\0';
    fputs(line, stderr);
}
