/* cli_values.c: arguments typed at the shell for gridrpc call, checked as strictly as
 * the library checks a program's arguments (a whole number for an int, in range for
 * its type), and results formatted back for people and for JSON. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define MAX_ARG_FILE ((size_t)64 << 20)
#define MAX_TOKENS (1u << 26)

static int push(cli_values *v, uint32_t *cap, const char *s, size_t n, char *err, size_t errsize) {
    if (v->n == MAX_TOKENS) {
        snprintf(err, errsize, "more than %u values", MAX_TOKENS);
        return -1;
    }
    if (v->n == *cap) {
        uint32_t ncap = *cap ? *cap * 2 : 16;
        char **t = realloc(v->tok, ncap * sizeof *t);
        if (!t) {
            snprintf(err, errsize, "out of memory");
            return -1;
        }
        v->tok = t;
        *cap = ncap;
    }
    char *copy = malloc(n + 1);
    if (!copy) {
        snprintf(err, errsize, "out of memory");
        return -1;
    }
    memcpy(copy, s, n);
    copy[n] = '\0';
    v->tok[v->n++] = copy;
    return 0;
}

/* Reads a JSON string starting at *P (at the opening quote) into a malloc'd *OUT. */
static int quoted(const char **p, char **out, size_t *outlen, char *err, size_t errsize) {
    const char *s = *p + 1;
    size_t cap = strlen(s) + 1, n = 0;
    char *buf = malloc(cap);
    if (!buf) {
        snprintf(err, errsize, "out of memory");
        return -1;
    }
    for (;;) {
        char c = *s++;
        if (c == '\0') {
            snprintf(err, errsize, "a string has no closing quote");
            free(buf);
            return -1;
        }
        if (c == '"') break;
        if (c == '\\') {
            char x = *s++;
            switch (x) {
            case 'n': c = '\n'; break;
            case 't': c = '\t'; break;
            case 'r': c = '\r'; break;
            case '"':
            case '\\':
            case '/': c = x; break;
            default:
                snprintf(err, errsize, "unknown escape '\\%c' in a string (use \\\" \\\\ \\n \\t \\r)",
                         x ? x : ' ');
                free(buf);
                return -1;
            }
        }
        buf[n++] = c;
    }
    buf[n] = '\0';
    *p = s;
    *out = buf;
    *outlen = n;
    return 0;
}

/* Splits S into tokens at commas, white space and brackets (lists). */
static int split(const char *s, int brackets, cli_values *v, char *err, size_t errsize) {
    uint32_t cap = 0;
    int depth = 0;
    const char *p = s;
    for (;;) {
        while (*p && (isspace((unsigned char)*p) || *p == ','))
            p++;
        if (!*p) break;
        if (brackets && *p == '[') {
            depth++;
            p++;
            continue;
        }
        if (brackets && *p == ']') {
            if (--depth < 0) {
                snprintf(err, errsize, "']' without its '['");
                return -1;
            }
            p++;
            continue;
        }
        if (*p == '"') {
            char *str;
            size_t len;
            if (quoted(&p, &str, &len, err, errsize)) return -1;
            int rc = push(v, &cap, str, len, err, errsize);
            free(str);
            if (rc) return -1;
            continue;
        }
        const char *q = p;
        while (*q && !isspace((unsigned char)*q) && *q != ',' && !(brackets && (*q == '[' || *q == ']')))
            q++;
        if (push(v, &cap, p, (size_t)(q - p), err, errsize)) return -1;
        p = q;
    }
    if (depth != 0) {
        snprintf(err, errsize, "'[' without its ']'");
        return -1;
    }
    return 0;
}

static int read_arg_file(const char *path, char **out, char *err, size_t errsize) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errsize, "cannot read '%s': %s", path, strerror(errno));
        return -1;
    }
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
        if (n == cap) {
            if (cap >= MAX_ARG_FILE) {
                snprintf(err, errsize, "'%s' is larger than 64 MiB", path);
                free(buf);
                fclose(f);
                return -1;
            }
            char *nb = realloc(buf, cap * 2 + 1);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    int bad = ferror(f);
    fclose(f);
    if (!buf || bad) {
        snprintf(err, errsize, "cannot read '%s': %s", path, buf ? "read error" : "out of memory");
        free(buf);
        return -1;
    }
    buf[n] = '\0';
    if (strlen(buf) != n) {
        snprintf(err, errsize, "'%s' is not a text file of numbers", path);
        free(buf);
        return -1;
    }
    *out = buf;
    return 0;
}

int cli_values_parse(const char *text, cli_values *out, char *err, size_t errsize) {
    memset(out, 0, sizeof *out);
    int rc;
    if (text[0] == '@') {
        char *buf;
        if (read_arg_file(text + 1, &buf, err, errsize)) return -1;
        out->is_list = 1;
        rc = split(buf, 0, out, err, errsize);
        free(buf);
    } else {
        const char *p = text;
        while (isspace((unsigned char)*p))
            p++;
        out->is_list = *p == '[';
        rc = split(text, 1, out, err, errsize);
    }
    if (rc) cli_values_free(out);
    return rc;
}

void cli_values_free(cli_values *v) {
    for (uint32_t i = 0; i < v->n; i++)
        free(v->tok[i]);
    free(v->tok);
    memset(v, 0, sizeof *v);
}

static int is_int_type(uint32_t t) {
    return t == GRD_CHAR || t == GRD_SHORT || t == GRD_INT || t == GRD_LONG || t == GRD_LONGLONG;
}

int cli_store_number(const char *tok, uint32_t type, int uns, void *dst, char *err, size_t errsize) {
    char *end;
    errno = 0;
    if (type == GRD_FLOAT || type == GRD_DOUBLE) {
        double d = strtod(tok, &end);
        if (end == tok || *end) {
            snprintf(err, errsize, "'%s' is not a number", tok);
            return -1;
        }
        if (type == GRD_FLOAT) {
            if (isfinite(d) && fabs(d) > 3.4028234663852886e38) {
                snprintf(err, errsize, "'%s' is out of range for a float", tok);
                return -1;
            }
            float f = (float)d;
            memcpy(dst, &f, sizeof f);
        } else {
            memcpy(dst, &d, sizeof d);
        }
        return 0;
    }
    if (!is_int_type(type)) {
        snprintf(err, errsize, "not a number type");
        return -1;
    }
    size_t size = grd_type_size(type);
    const char *tname = grd_type_name(type);
    /* Whole numbers in any notation a person might type (1e3, 4.0) are accepted, as long
     * as they are exact; "2.5" for an int is refused. */
    long long sv = 0;
    unsigned long long uv = 0;
    int neg = 0;
    const char *p = tok;
    while (isspace((unsigned char)*p))
        p++;
    neg = *p == '-';
    if (uns && !neg) {
        uv = strtoull(tok, &end, 10);
    } else {
        sv = strtoll(tok, &end, 10);
    }
    if (end == tok || *end) {
        double d = strtod(tok, &end);
        if (end == tok || *end) {
            snprintf(err, errsize, "'%s' is not a number (expected a whole %s%s)", tok,
                     uns ? "unsigned " : "", tname);
            return -1;
        }
        if (d != floor(d) || !isfinite(d) || fabs(d) >= 9.2e18) {
            snprintf(err, errsize, "'%s' is not a whole number (expected %s%s)", tok, uns ? "unsigned " : "",
                     tname);
            return -1;
        }
        sv = (long long)d;
        uv = (unsigned long long)(d < 0 ? 0 : d);
        errno = 0;
    }
    if (errno == ERANGE) {
        snprintf(err, errsize, "'%s' is out of range for %s%s", tok, uns ? "unsigned " : "", tname);
        return -1;
    }
    if (uns) {
        if (neg && sv != 0) {
            snprintf(err, errsize, "'%s' is negative: expected unsigned %s", tok, tname);
            return -1;
        }
        if (neg) uv = 0;
        unsigned long long max = size >= 8 ? ULLONG_MAX : (1ull << (size * 8)) - 1;
        if (uv > max) {
            snprintf(err, errsize, "'%s' is out of range for unsigned %s (0 to %llu)", tok, tname, max);
            return -1;
        }
        uint8_t b1 = (uint8_t)uv;
        uint16_t b2 = (uint16_t)uv;
        uint32_t b4 = (uint32_t)uv;
        uint64_t b8 = (uint64_t)uv;
        memcpy(dst,
               size == 1   ? (void *)&b1
               : size == 2 ? (void *)&b2
               : size == 4 ? (void *)&b4
                           : (void *)&b8,
               size);
        return 0;
    }
    long long max = size >= 8 ? LLONG_MAX : (long long)((1ull << (size * 8 - 1)) - 1);
    long long min = -max - 1;
    if (sv > max || sv < min) {
        snprintf(err, errsize, "'%s' is out of range for %s (%lld to %lld)", tok, tname, min, max);
        return -1;
    }
    int8_t b1 = (int8_t)sv;
    int16_t b2 = (int16_t)sv;
    int32_t b4 = (int32_t)sv;
    int64_t b8 = (int64_t)sv;
    memcpy(dst,
           size == 1   ? (void *)&b1
           : size == 2 ? (void *)&b2
           : size == 4 ? (void *)&b4
                       : (void *)&b8,
           size);
    return 0;
}

int64_t cli_load_int(const void *src, uint32_t type, int uns) {
    size_t size = grd_type_size(type);
    if (size == 1) return uns ? (int64_t) * (const uint8_t *)src : (int64_t) * (const int8_t *)src;
    if (size == 2) return uns ? (int64_t) * (const uint16_t *)src : (int64_t) * (const int16_t *)src;
    if (size == 4) return uns ? (int64_t) * (const uint32_t *)src : (int64_t) * (const int32_t *)src;
    return *(const int64_t *)src;
}

/* A float in the fewest digits that read back as the same float (0.1f is "0.1", not
 * the "0.100000001" of its double). */
static void format_float(float f, char *buf, size_t size) {
    for (int prec = 6; prec <= 9; prec++) {
        snprintf(buf, size, "%.*g", prec, (double)f);
        if (strtof(buf, NULL) == f) return;
    }
}

void cli_format_elem(const void *src, uint32_t type, int uns, int json, char *buf, size_t size) {
    char re[40], im[40];
    switch (type) {
    case GRD_FLOAT:
    case GRD_DOUBLE: {
        double d = type == GRD_FLOAT ? (double)*(const float *)src : *(const double *)src;
        if (json && !isfinite(d))
            snprintf(buf, size, "null");
        else if (type == GRD_FLOAT)
            format_float(*(const float *)src, buf, size);
        else
            cli_format_double(d, buf, size);
        return;
    }
    case GRD_SCOMPLEX:
    case GRD_DCOMPLEX: {
        double r, i;
        if (type == GRD_SCOMPLEX) {
            r = ((const float *)src)[0];
            i = ((const float *)src)[1];
        } else {
            r = ((const double *)src)[0];
            i = ((const double *)src)[1];
        }
        if (json) {
            if (isfinite(r))
                cli_format_double(r, re, sizeof re);
            else
                snprintf(re, sizeof re, "null");
            if (isfinite(i))
                cli_format_double(i, im, sizeof im);
            else
                snprintf(im, sizeof im, "null");
            snprintf(buf, size, "[%s, %s]", re, im);
            return;
        }
        cli_format_double(r, re, sizeof re);
        cli_format_double(i < 0 ? -i : i, im, sizeof im);
        snprintf(buf, size, "%s%s%si", re, i < 0 ? "-" : "+", im);
        return;
    }
    default: {
        int64_t v = cli_load_int(src, type, uns);
        if (uns && grd_type_size(type) >= 8)
            snprintf(buf, size, "%" PRIu64, *(const uint64_t *)src);
        else
            snprintf(buf, size, "%" PRId64, v);
    }
    }
}
