/* cli_table.c: the tool's tables: columns as wide as their widest cell, numbers
 * right-aligned, two spaces between columns, the last column never padded. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cli_table_init(cli_table *t, int ncols, const char *const *headers, const char *align) {
    memset(t, 0, sizeof *t);
    t->ncols = ncols;
    t->align = align;
    return cli_table_row(t, headers);
}

int cli_table_row(cli_table *t, const char *const *cells) {
    if (t->nrows == t->cap) {
        size_t ncap = t->cap ? t->cap * 2 : 16;
        char **c = realloc(t->cells, ncap * (size_t)t->ncols * sizeof *c);
        if (!c) return -1;
        t->cells = c;
        t->cap = ncap;
    }
    for (int i = 0; i < t->ncols; i++) {
        char *s = strdup(cells[i] ? cells[i] : "");
        if (!s) return -1;
        t->cells[t->nrows * (size_t)t->ncols + (size_t)i] = s;
    }
    t->nrows++;
    return 0;
}

void cli_table_print(const cli_table *t, FILE *f) {
    size_t width[64] = {0}, total = 1;
    int ncols = t->ncols < 64 ? t->ncols : 64;
    for (size_t r = 0; r < t->nrows; r++)
        for (int i = 0; i < ncols; i++) {
            size_t w = strlen(t->cells[r * (size_t)t->ncols + (size_t)i]);
            if (w > width[i]) width[i] = w;
        }
    for (int i = 0; i < ncols; i++)
        total += width[i] + 2;
    char *line = malloc(total);
    if (!line) return;
    for (size_t r = 0; r < t->nrows; r++) {
        size_t n = 0;
        for (int i = 0; i < ncols; i++) {
            const char *s = t->cells[r * (size_t)t->ncols + (size_t)i];
            int right = t->align && t->align[i] == 'r';
            if (i) n += (size_t)snprintf(line + n, total - n, "  ");
            n += (size_t)snprintf(line + n, total - n, right ? "%*s" : "%-*s", (int)width[i], s);
        }
        /* Empty or short cells at the end leave no trailing blanks. */
        while (n > 0 && line[n - 1] == ' ')
            n--;
        line[n] = '\0';
        fprintf(f, "%s\n", line);
    }
    free(line);
}

void cli_table_free(cli_table *t) {
    for (size_t k = 0; k < t->nrows * (size_t)t->ncols; k++)
        free(t->cells[k]);
    free(t->cells);
    memset(t, 0, sizeof *t);
}
