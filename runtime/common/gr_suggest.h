/* gr_suggest.h: "did you mean" for a word nobody knows: the closest of the names offered
 * (an option, a subcommand, a configuration key, a function), by an edit distance that
 * counts a swapped pair of letters as one edit and ignores case. An accumulator, so a
 * caller offers the names of whatever container it holds without copying them out:
 *
 *     gr_suggest s;
 *     gr_suggest_init(&s, word);
 *     for (...) gr_suggest_offer(&s, name);
 *     const char *best = gr_suggest_best(&s); // NULL: nothing close enough
 *
 * Close enough: at most one edit in three letters of the longer name (at least one),
 * and for a word of one or two letters only one edit. Of equally close names the first
 * offered wins. Words and names over GR_SUGGEST_MAX bytes are never matched, so the
 * work per name is bounded. */
#ifndef GR_SUGGEST_H
#define GR_SUGGEST_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GR_SUGGEST_MAX 64

typedef struct gr_suggest {
    char word[GR_SUGGEST_MAX + 1]; /* lower-cased */
    size_t len;                    /* 0: no suggestion possible */
    const char *best;              /* a name offered (the caller's storage) */
    unsigned dist;
} gr_suggest;

void gr_suggest_init(gr_suggest *s, const char *word);
/* NAME must stay valid until gr_suggest_best is read. NULL is ignored. */
void gr_suggest_offer(gr_suggest *s, const char *name);
const char *gr_suggest_best(const gr_suggest *s);

/* The distance between A and B (case-insensitive; a swapped neighbour pair counts 1),
 * or MAX + 1 when it is over MAX or either is longer than GR_SUGGEST_MAX. */
unsigned gr_suggest_distance(const char *a, const char *b, unsigned max);

#ifdef __cplusplus
}
#endif

#endif /* GR_SUGGEST_H */
