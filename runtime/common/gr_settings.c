/* gr_settings.c: the one grammar for durations, sizes, ports, host:port and yes/no
 * values (gr_settings.h). Numbers are scanned here rather than with strtod/strtoull:
 * those also take "inf", "nan", "1e9", "0x1p3", "-1" (as a huge unsigned) and follow
 * the locale's decimal point, none of which belongs in a configuration file. */
#include "gr_settings.h"
#include "gr_scheme.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* What the messages show of a value: enough to recognize it, never a screenful. */
#define SHOWN "%.80s"

static const char duration_forms[] =
    "write seconds (30, 0.5) or a number and a unit: ms, s, m, h or d (250ms, 30s, 2m, 1h)";
static const char size_forms[] = "write bytes (4096) or a whole number and K, M, G or T, powers of 1024 "
                                 "(64K, 16M, 1G; KiB and KB mean K too)";
static const char hostport_forms[] =
    "write HOST:PORT, with an IPv6 address in brackets (example.org:7000, 192.0.2.7:7000, [::1]:7000), "
    "and gridrpcs:// in front for TLS";

static int seterr(char *err, size_t errsize, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int seterr(char *err, size_t errsize, const char *fmt, ...) {
    if (err && errsize) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errsize, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static int is_digit(char c) {
    return c >= '0' && c <= '9';
}

static int is_blank(char c) {
    return c == ' ' || c == '\t';
}

/* Skips the blanks between a number and its unit. Returns where the unit starts, or
 * NULL for blanks that nothing follows (trailing junk). */
static const char *unit_start(const char *p) {
    const char *q = p;
    while (is_blank(*q))
        q++;
    return q != p && !*q ? NULL : q;
}

/* Reads "digits", "digits.digits", "digits." or ".digits" at S. The fraction is summed
 * as an integer and divided once, so that 0.25 or 1.5 come out exact. Returns the end,
 * or NULL when S does not start with a digit or a point and a digit. */
static const char *scan_decimal(const char *s, double *out) {
    double whole = 0, frac = 0, scale = 1;
    int digits = 0;
    for (; is_digit(*s); s++, digits++)
        whole = whole * 10 + (*s - '0');
    if (*s == '.') {
        for (s++; is_digit(*s); s++, digits++)
            /* Digits past the 18th cannot change a double: they are read and dropped. */
            if (scale < 1e18) {
                frac = frac * 10 + (*s - '0');
                scale *= 10;
            }
    }
    if (!digits) return NULL;
    *out = whole + frac / scale;
    return s;
}

/* Reads decimal digits at S into *OUT. Returns the end (NULL when there is no digit);
 * *OVERFLOW tells whether the number passed UINT64_MAX. */
static const char *scan_u64(const char *s, uint64_t *out, int *overflow) {
    uint64_t v = 0;
    const char *start = s;
    *overflow = 0;
    for (; is_digit(*s); s++) {
        unsigned d = (unsigned)(*s - '0');
        if (v > (UINT64_MAX - d) / 10) *overflow = 1;
        v = v * 10 + d;
    }
    *out = v;
    return s == start ? NULL : s;
}

int gr_parse_duration(const char *s, double *seconds, char *err, size_t errsize) {
    static const struct {
        const char *name;
        double ms;
    } units[] = {{"", 1000},         {"ms", 1},          {"s", 1000},       {"sec", 1000},
                 {"second", 1000},   {"seconds", 1000},  {"m", 60000},      {"min", 60000},
                 {"minute", 60000},  {"minutes", 60000}, {"h", 3600000},    {"hour", 3600000},
                 {"hours", 3600000}, {"d", 86400000},    {"day", 86400000}, {"days", 86400000}};
    double v;
    const char *p = s ? scan_decimal(s, &v) : NULL;
    const char *unit = p ? unit_start(p) : NULL;
    for (size_t i = 0; unit && i < sizeof units / sizeof units[0]; i++) {
        if (strcasecmp(unit, units[i].name) != 0) continue;
        /* Whole milliseconds per unit, divided once: 250ms is exactly 0.25. */
        double t = v * units[i].ms / 1000.0;
        if (!(t <= GR_DURATION_MAX))
            return seterr(err, errsize,
                          "'" SHOWN "' is too long a duration: at most %.0f seconds (about 31 years)", s,
                          GR_DURATION_MAX);
        *seconds = t;
        return 0;
    }
    return seterr(err, errsize, "'" SHOWN "' is not a duration: %s", s ? s : "", duration_forms);
}

/* The power of two of the size unit at P ("" for bytes), or -1 when it is not one. */
static int size_shift(const char *p) {
    static const struct {
        const char *name;
        int shift;
    } units[] = {{"", 0},     {"b", 0},  {"k", 10},  {"kb", 10},  {"kib", 10}, {"m", 20},  {"mb", 20},
                 {"mib", 20}, {"g", 30}, {"gb", 30}, {"gib", 30}, {"t", 40},   {"tb", 40}, {"tib", 40}};
    const char *unit = unit_start(p);
    for (size_t i = 0; unit && i < sizeof units / sizeof units[0]; i++)
        if (strcasecmp(unit, units[i].name) == 0) return units[i].shift;
    return -1;
}

int gr_parse_size(const char *s, uint64_t *bytes, char *err, size_t errsize) {
    uint64_t n;
    int overflow;
    const char *p = s ? scan_u64(s, &n, &overflow) : NULL;
    int shift = p ? size_shift(p) : -1;
    if (shift < 0) return seterr(err, errsize, "'" SHOWN "' is not a size: %s", s ? s : "", size_forms);
    if (overflow || n > UINT64_MAX >> shift)
        return seterr(err, errsize, "'" SHOWN "' is too large: a size is at most 2^64-1 bytes (16 EiB)", s);
    *bytes = n << shift;
    return 0;
}

int gr_parse_port(const char *s, unsigned flags, int *port, char *err, size_t errsize) {
    uint64_t n;
    int overflow;
    const char *end = s ? scan_u64(s, &n, &overflow) : NULL;
    int min = flags & GR_PORT_ZERO ? 0 : 1;
    if (!end || *end || overflow || n < (uint64_t)min || n > 65535)
        return seterr(err, errsize, "'" SHOWN "' is not a TCP port: write a number from %d to 65535%s",
                      s ? s : "", min, min ? "" : " (0: any free port)");
    *port = (int)n;
    return 0;
}

/* Whether the LEN bytes at H can be a host: not empty, shorter than SIZE, and without
 * blanks, control characters or brackets (which come from a mistyped line, never from
 * a host name or address). */
static int valid_host(const char *h, size_t len, size_t size) {
    if (len == 0 || len >= size) return 0;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)h[i] <= ' ' || h[i] == 0x7f || h[i] == '[' || h[i] == ']') return 0;
    return 1;
}

int gr_parse_hostport(const char *s, unsigned flags, char *host, size_t hostsize, int *port, char *err,
                      size_t errsize) {
    if (!s) s = "";
    /* gridrpcs://host:port names a TLS endpoint; gridrpc:// is the plain default. */
    int tls;
    const char *hp = s + gr_scheme_len(s, &tls);
    const char *h = hp, *after; /* after: the ':' before the port, or the end */
    size_t len;
    if (*hp == '[') {
        const char *close = strchr(hp, ']');
        h = hp + 1;
        len = close ? (size_t)(close - h) : 0;
        after = close ? close + 1 : NULL;
        if (after && *after && *after != ':') after = NULL;
    } else {
        const char *colon = strchr(hp, ':');
        if (colon && strchr(colon + 1, ':'))
            return seterr(err, errsize,
                          "'" SHOWN "' is not HOST:PORT: an IPv6 address goes in brackets ([::1]:7000)", s);
        len = colon ? (size_t)(colon - hp) : strlen(hp);
        after = hp + len;
    }
    if (after && len >= hostsize && hostsize)
        return seterr(err, errsize, "'" SHOWN "' is not HOST:PORT: the host is longer than %zu bytes", s,
                      hostsize - 1);
    if (!after || !valid_host(h, len, hostsize))
        return seterr(err, errsize, "'" SHOWN "' is not HOST:PORT: %s", s, hostport_forms);
    int p = 0;
    if (*after == ':') {
        char perr[160];
        if (gr_parse_port(after + 1, flags, &p, perr, sizeof perr))
            return seterr(err, errsize, "'" SHOWN "' is not HOST:PORT: %s", s, perr);
    } else if (!(flags & GR_PORT_OPTIONAL)) {
        return seterr(err, errsize, "'" SHOWN "' is not HOST:PORT: the port is missing; %s", s,
                      hostport_forms);
    }
    memcpy(host, h, len);
    host[len] = '\0';
    *port = p;
    if (tls) gr_tls_endpoint_mark(host, p);
    return 0;
}

int gr_parse_bool(const char *s, int *value, char *err, size_t errsize) {
    static const char *const yes[] = {"yes", "true", "on", "1"}, *const no[] = {"no", "false", "off", "0"};
    for (size_t i = 0; s && i < sizeof yes / sizeof yes[0]; i++) {
        if (strcasecmp(s, yes[i]) == 0) return *value = 1, 0;
        if (strcasecmp(s, no[i]) == 0) return *value = 0, 0;
    }
    return seterr(err, errsize, "'" SHOWN "' is not yes or no: write yes, true, on, 1 or no, false, off, 0",
                  s ? s : "");
}
