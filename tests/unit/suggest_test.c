/* suggest_test.c: "did you mean" (runtime/common/gr_suggest.c): the typos people make
 * (a letter doubled, dropped, swapped, another case) find the name meant, far words and
 * empty or overlong ones find nothing, the first of equally close names wins, and the
 * distance cut short at its limit still counts right. Prints TAP. */
#include <stdio.h>
#include <string.h>

#include "gr_suggest.h"
#include "tap.h"

/* The best of the NULL-terminated NAMES for WORD, or "(none)". */
static const char *best_of(const char *word, const char *const *names) {
    gr_suggest s;
    gr_suggest_init(&s, word);
    for (; *names; names++)
        gr_suggest_offer(&s, *names);
    const char *b = gr_suggest_best(&s);
    return b ? b : "(none)";
}

static void expect(const char *word, const char *const *names, const char *want, const char *why) {
    const char *got = best_of(word, names);
    result(strcmp(got, want) == 0, "%s: '%s' -> %s (got %s)", why, word, want, got);
}

int main(void) {
    static const char *const fns[] = {"dmmul", "dgemv", "ddot", "linalg/dmmul", "linalg/dmmul_rows", NULL};
    static const char *const opts[] = {"threads", "thread-stack", "queue", "quiet", "port", "host", NULL};
    static const char *const keys[] = {
        "server", "metaserver", "timeout", "connect_timeout", "token", "key_file", "tls_ca", "retries", NULL};
    static const char *const attrs[] = {"hostname", "tag", "port", "invoke_server", "session_timeout", NULL};
    static const char *const cmds[] = {"status", "ls", "describe", "call", "submit", "fetch", NULL};

    expect("dmmull", fns, "dmmul", "a letter doubled");
    expect("linalg/dmmull", fns, "linalg/dmmul", "a qualified name");
    expect("threds", opts, "threads", "a letter dropped");
    expect("hostnme", attrs, "hostname", "a letter dropped in a key");
    expect("stauts", cmds, "status", "a swapped pair counts one edit");
    expect("dmmlu", fns, "dmmul", "a swapped pair at the end");
    expect("timeotu", keys, "timeout", "a swapped pair in a key");
    expect("HostName", attrs, "hostname", "case is ignored");
    expect("retires", keys, "retries", "a swapped pair in the middle");
    expect("conect_timout", keys, "connect_timeout", "two edits in a long name");
    expect("Ls", cmds, "ls", "a two-letter word: its other case");
    expect("lz", cmds, "ls", "a two-letter word: one edit");
    expect("x", cmds, "(none)", "a one-letter word two edits from everything");
    expect("frobnicate", opts, "(none)", "a far word");
    expect("frobnicate", cmds, "(none)", "a far word among commands");
    expect("nosuch", fns, "(none)", "nothing close among functions");
    expect("", opts, "(none)", "the empty word");
    expect("tim", keys, "(none)", "a short stem is not a typo of the long name");

    /* Ties: both are one edit from "dot"; the first offered wins, in either order. */
    static const char *const tie1[] = {"ddot", "dott", NULL}, *const tie2[] = {"dott", "ddot", NULL};
    expect("dot", tie1, "ddot", "of equals, the first offered (1)");
    expect("dot", tie2, "dott", "of equals, the first offered (2)");
    /* A closer name offered later still wins. */
    static const char *const closer[] = {"threads", "thredz", "threds", NULL};
    expect("threds", closer, "threds", "an exact match beats a near one offered before it");

    /* The cap: a word or a name over 64 bytes is never matched, one at 64 is. */
    char w64[65], w65[66], n64[65];
    memset(w64, 'a', 64), w64[64] = '\0';
    memset(w65, 'a', 65), w65[65] = '\0';
    memcpy(n64, w64, sizeof n64);
    n64[10] = 'b';
    const char *const long_names[] = {n64, NULL};
    expect(w64, long_names, n64, "a 64-byte word finds a name one edit away");
    const char *const too_long[] = {w65, NULL};
    expect(w64, too_long, "(none)", "a name over 64 bytes is not offered");
    expect(w65, long_names, "(none)", "a word over 64 bytes gets no suggestion");

    result(gr_suggest_distance("ca", "ac", 5) == 1, "distance: a swap is 1");
    result(gr_suggest_distance("kitten", "sitting", 5) == 3, "distance: kitten/sitting is 3");
    result(gr_suggest_distance("abc", "abcdefgh", 2) == 3, "distance: over MAX is MAX + 1");
    result(gr_suggest_distance("ABC", "abc", 0) == 0, "distance: case-insensitive");

    printf("1..%d\n", tests);
    return failed ? 1 : 0;
}
