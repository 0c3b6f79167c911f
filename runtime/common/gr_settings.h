/* gr_settings.h: the one grammar for the values of settings. The client's configuration
 * (GRIDRPC_*, ~/.gridrpc.conf), the Ninf-G configuration reader (grpc_initialize) and
 * gridrpcd's options all parse through here, so that "2m" means two minutes and
 * "[::1]:7000" means the same address wherever a setting is written. The forms are
 * described for users in docs/api.md, "Durations, sizes and addresses".
 *
 * Every parser takes the whole value (no leading or trailing blanks) and returns 0, or
 * -1 with a message in ERR (when ERR is not NULL) that quotes the value and lists the
 * accepted forms: "'5x' is not a duration: write ...". Callers put where the value came
 * from in front ("FILE:LINE: timeout: ", "gridrpcd: --io-timeout: "). On failure the
 * outputs are left untouched. */
#ifndef GR_SETTINGS_H
#define GR_SETTINGS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The longest duration, in seconds (about 31.7 years): as a nanosecond deadline it still
 * fits in 64 bits with room for the clock's current value. */
#define GR_DURATION_MAX 1e9

/* Flags for gr_parse_port and gr_parse_hostport. */
enum {
    GR_PORT_ZERO = 1,     /* port 0 is allowed (a server's "any free port") */
    GR_PORT_OPTIONAL = 2, /* gr_parse_hostport: a host alone is allowed; *port is then 0 */
};

/* A duration: a decimal number of seconds ("30", "0.5") or a decimal number and a unit,
 * with or without a blank between them: ms, s, m, h, d, or the words sec, second(s),
 * min, minute(s), hour(s), day(s), in any case ("250ms", "30s", "2m", "1.5 h"). Never
 * negative, at most GR_DURATION_MAX seconds. */
int gr_parse_duration(const char *s, double *seconds, char *err, size_t errsize);

/* A size in bytes: a whole number, optionally with a unit, with or without a blank:
 * B, or K, M, G, T (alone or followed by B or iB, in any case), each a power of 1024
 * ("4096", "64K", "16MiB", "1 GB"). At most 2^64-1 bytes. */
int gr_parse_size(const char *s, uint64_t *bytes, char *err, size_t errsize);

/* A TCP port: decimal digits, 1 to 65535 (0 too with GR_PORT_ZERO). */
int gr_parse_port(const char *s, unsigned flags, int *port, char *err, size_t errsize);

/* "host:port", or "[address]:port" for an IPv6 address (whose colons would otherwise be
 * ambiguous: an unbracketed host with a colon is refused). The host is copied without
 * brackets into HOST (HOSTSIZE bytes, a longer one is refused). FLAGS: GR_PORT_ZERO,
 * GR_PORT_OPTIONAL ("host" or "[address]" alone). */
int gr_parse_hostport(const char *s, unsigned flags, char *host, size_t hostsize, int *port, char *err,
                      size_t errsize);

/* A yes/no setting: yes, true, on, 1 or no, false, off, 0, in any case. */
int gr_parse_bool(const char *s, int *value, char *err, size_t errsize);

#ifdef __cplusplus
}
#endif

#endif /* GR_SETTINGS_H */
