/* cli_json.c: the little JSON the tool writes for scripts (--json): strings escaped
 * per RFC 8259, numbers that are always valid JSON. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"

void cli_json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        default:
            if (*p < 0x20)
                fprintf(f, "\\u%04x", *p);
            else
                fputc(*p, f);
        }
    }
    fputc('"', f);
}

void cli_json_number(FILE *f, double v) {
    if (!isfinite(v)) {
        fputs("null", f);
        return;
    }
    /* Whole numbers print without an exponent or a point, others round-trip. */
    if (v == (double)(long long)v && fabs(v) < 1e15)
        fprintf(f, "%lld", (long long)v);
    else {
        char buf[40];
        cli_format_double(v, buf, sizeof buf);
        fputs(buf, f);
    }
}

void cli_format_double(double v, char *buf, size_t size) {
    /* The shortest of %.15g .. %.17g that reads back as V: 0.1 stays 0.1. */
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, size, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) return;
    }
}
