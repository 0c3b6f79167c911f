/* gr_suggest.c: "did you mean" (gr_suggest.h): optimal string alignment distance over
 * three rows on the stack, cut short once no cell can come back under the limit. */
#include "gr_suggest.h"

#include <string.h>

static unsigned char lower(unsigned char c) {
    return c >= 'A' && c <= 'Z' ? (unsigned char)(c - 'A' + 'a') : c;
}

static unsigned min3(unsigned a, unsigned b, unsigned c) {
    unsigned m = a < b ? a : b;
    return m < c ? m : c;
}

unsigned gr_suggest_distance(const char *a, const char *b, unsigned max) {
    size_t la = strlen(a), lb = strlen(b);
    if (la > GR_SUGGEST_MAX || lb > GR_SUGGEST_MAX) return max + 1;
    if ((la > lb ? la - lb : lb - la) > max) return max + 1; /* every length change is an edit */
    unsigned rows[3][GR_SUGGEST_MAX + 1];
    unsigned *pp = rows[0], *prev = rows[1], *cur = rows[2];
    unsigned prev_min = 0;
    for (size_t j = 0; j <= lb; j++)
        prev[j] = (unsigned)j;
    for (size_t i = 1; i <= la; i++) {
        unsigned char ca = lower((unsigned char)a[i - 1]);
        unsigned row_min = cur[0] = (unsigned)i;
        for (size_t j = 1; j <= lb; j++) {
            unsigned char cb = lower((unsigned char)b[j - 1]);
            unsigned d = min3(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb));
            if (i > 1 && j > 1 && ca == lower((unsigned char)b[j - 2]) &&
                lower((unsigned char)a[i - 2]) == cb && pp[j - 2] + 1 < d)
                d = pp[j - 2] + 1;
            cur[j] = d;
            if (d < row_min) row_min = d;
        }
        /* A cell comes from its own row or the two above (a swap): once both rows are
         * over MAX, so is everything below. */
        if (row_min > max && prev_min > max) return max + 1;
        prev_min = row_min;
        unsigned *t = pp;
        pp = prev;
        prev = cur;
        cur = t;
    }
    return prev[lb] > max ? max + 1 : prev[lb];
}

void gr_suggest_init(gr_suggest *s, const char *word) {
    memset(s, 0, sizeof *s);
    size_t n = word ? strlen(word) : 0;
    if (n > GR_SUGGEST_MAX) return; /* len 0: nothing is suggested */
    for (size_t i = 0; i < n; i++)
        s->word[i] = (char)lower((unsigned char)word[i]);
    s->len = n;
}

void gr_suggest_offer(gr_suggest *s, const char *name) {
    if (!s->len || !name || !*name) return;
    size_t n = strlen(name);
    if (n > GR_SUGGEST_MAX) return;
    size_t longer = n > s->len ? n : s->len;
    /* One edit in three letters; a word of one or two letters, where one more edit
     * leaves nothing of it, only one. */
    unsigned limit = s->len <= 2 || longer / 3 < 1 ? 1 : (unsigned)(longer / 3);
    /* Only a closer name replaces the best: the first of equals stays. */
    if (s->best && s->dist == 0) return;
    if (s->best && s->dist - 1 < limit) limit = s->dist - 1;
    unsigned d = gr_suggest_distance(s->word, name, limit);
    if (d <= limit) {
        s->best = name;
        s->dist = d;
    }
}

const char *gr_suggest_best(const gr_suggest *s) {
    return s->best;
}
