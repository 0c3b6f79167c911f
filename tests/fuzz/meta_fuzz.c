/* meta_fuzz.c: fuzz target for gridmetad's input: the requests a peer sends it, read and
 * answered by gms_request.c against a real in-memory state (gms_state.c: registration,
 * heartbeats, decisions and their schedulers, reports, links, the server list), then
 * the /api/status JSON (gms_status.c) built from what the requests left, which must be
 * well-formed JSON whatever names and numbers the peers sent. Its HTTP side parses
 * nothing of ours: libmicrohttpd reads the request and gms_http.c compares the path.
 *
 * One input is one connection: up to 16 messages, the first of which must be HELLO (as
 * the daemon core's reader requires: gdm_reader.c), replies read and dropped by a thread. The state is
 * new for every input, so a finding replays alone; after the connection the sweeper
 * runs as if a day had passed, and the status is checked again. A SCHEDULE that finds
 * every server full is held 2 ms (--max-hold), reading the REPORTs that follow it, so
 * the hold is reached without slowing the fuzzer; nothing is persisted (no registry). */
#include <pthread.h>
#include <stdbool.h>

#include "fuzz_util.h"
#include "gms.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_INPUT 65536
#define MAX_MESSAGES 16

static void *drain(void *arg) {
    int fd = *(int *)arg;
    char buf[65536];
    while (read(fd, buf, sizeof buf) > 0) {
    }
    return NULL;
}

/* ---- a JSON checker (RFC 8259), enough to say whether the status is well-formed */

typedef struct jp {
    const char *p, *end;
    int depth;
} jp;

static void ws(jp *j) {
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
        j->p++;
}

static bool lit(jp *j, const char *s) {
    size_t n = strlen(s);
    if ((size_t)(j->end - j->p) < n || memcmp(j->p, s, n) != 0) return false;
    j->p += n;
    return true;
}

static bool hex4(jp *j) {
    for (int i = 0; i < 4; i++, j->p++)
        if (j->p >= j->end || !strchr("0123456789abcdefABCDEF", *j->p) || !*j->p) return false;
    return true;
}

/* A string: no raw control characters, known escapes only, valid UTF-8. */
static bool string(jp *j) {
    if (!lit(j, "\"")) return false;
    while (j->p < j->end) {
        unsigned char c = (unsigned char)*j->p;
        if (c == '"') {
            j->p++;
            return true;
        }
        if (c < 0x20) return false;
        if (c == '\\') {
            j->p++;
            if (j->p >= j->end) return false;
            char e = *j->p++;
            if (e == 'u') {
                if (!hex4(j)) return false;
            } else if (!strchr("\"\\/bfnrt", e) || !e) {
                return false;
            }
            continue;
        }
        /* UTF-8 as python's json reads it: the code point of the shortest form, not a
         * surrogate, at most U+10FFFF. */
        int more = c < 0x80             ? 0
                   : (c & 0xe0) == 0xc0 ? 1
                   : (c & 0xf0) == 0xe0 ? 2
                   : (c & 0xf8) == 0xf0 ? 3
                                        : -1;
        if (more < 0) return false;
        uint32_t cp = more == 0 ? c : more == 1 ? (c & 0x1fu) : more == 2 ? (c & 0x0fu) : (c & 0x07u);
        j->p++;
        for (int k = 0; k < more; k++, j->p++) {
            if (j->p >= j->end || ((unsigned char)*j->p & 0xc0) != 0x80) return false;
            cp = cp << 6 | ((unsigned char)*j->p & 0x3fu);
        }
        static const uint32_t least[] = {0, 0x80, 0x800, 0x10000};
        if (cp < least[more] || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff) return false;
    }
    return false;
}

static bool number(jp *j) {
    const char *s = j->p;
    if (j->p < j->end && *j->p == '-') j->p++;
    if (j->p >= j->end || !(*j->p >= '0' && *j->p <= '9')) return false;
    if (*j->p == '0')
        j->p++;
    else
        while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
            j->p++;
    if (j->p < j->end && *j->p == '.') {
        j->p++;
        if (j->p >= j->end || !(*j->p >= '0' && *j->p <= '9')) return false;
        while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
            j->p++;
    }
    if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
        j->p++;
        if (j->p < j->end && (*j->p == '+' || *j->p == '-')) j->p++;
        if (j->p >= j->end || !(*j->p >= '0' && *j->p <= '9')) return false;
        while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
            j->p++;
    }
    return j->p > s;
}

static bool value(jp *j) {
    ws(j);
    if (j->p >= j->end || ++j->depth > 64) return false;
    bool ok;
    if (*j->p == '{' || *j->p == '[') {
        char close = *j->p == '{' ? '}' : ']';
        bool object = close == '}';
        j->p++;
        ws(j);
        if (j->p < j->end && *j->p == close) {
            j->p++;
            j->depth--;
            return true;
        }
        for (;;) {
            ws(j);
            if (object) {
                if (!string(j)) return false;
                ws(j);
                if (!lit(j, ":")) return false;
            }
            if (!value(j)) return false;
            ws(j);
            if (lit(j, ",")) continue;
            ok = j->p < j->end && *j->p == close;
            if (ok) j->p++;
            break;
        }
    } else if (*j->p == '"') {
        ok = string(j);
    } else if (*j->p == 't' || *j->p == 'f' || *j->p == 'n') {
        ok = lit(j, "true") || lit(j, "false") || lit(j, "null");
    } else {
        ok = number(j);
    }
    j->depth--;
    return ok;
}

static void check_json(const gms_buf *b) {
    fuzz_check(!b->failed && b->p != NULL, "the status was built");
    fuzz_check(strlen(b->p) == b->len, "the status has no NUL inside");
    jp j = {b->p, b->p + b->len, 0};
    bool ok = value(&j);
    ws(&j);
    if (!ok || j.p != j.end) {
        fprintf(stderr, "meta_fuzz: bad JSON near byte %zu of %zu: %.80s\n", (size_t)(j.p - b->p), b->len,
                j.p);
        fuzz_check(0, "the status is well-formed JSON");
    }
}

/* ---- one connection */

static void status(gms_state *st) {
    gms_buf b = {0};
    gms_status_json(st, &b);
    check_json(&b);
    free(b.p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static gms_options opt;
    static int ready;
    if (size > MAX_INPUT) return 0;
    if (!ready) {
        ready = 1;
        opt.host = "127.0.0.1";
        opt.port = 7100;
        opt.db = ":memory:";
        opt.policy = GRP_POLICY_MCT;
        opt.http_port = -1;
        opt.http_host = "127.0.0.1";
        opt.heartbeat_ms = 1000;
        opt.down_after = 3;
        opt.max_conns = 16;
        opt.io_timeout = 5;
        opt.max_hold = 0.002; /* held requests are reached, for 2 ms at most */
        opt.log_level = GMS_LOG_DEBUG;
        /* Every line is formatted (the debug log explains each decision), none shown. */
        gr_log_init("gridmetad", GMS_LOG_DEBUG);
    }
    int peer;
    int fd = fuzz_socket_with(data, size, &peer);
    if (fd < 0) return 0;
    pthread_t drainer;
    if (pthread_create(&drainer, NULL, drain, &peer) != 0) abort();

    gms_state st;
    /* The policy changes with the input, so every scheduler sees hostile numbers. */
    int policy = GRP_POLICY_MCT + (size ? data[size - 1] % 3 : 0);
    if (gms_state_init(&st, policy, opt.heartbeat_ms, opt.down_after)) abort();
    gms_net net;
    if (gms_net_init(&net, &st, &opt)) abort();
    gms_conn *c = calloc(1, sizeof *c);
    c->dm = &net.dm;
    c->net = &net;
    c->fd = fd;
    pthread_mutex_init(&c->wlock, NULL);
    snprintf(c->peer, sizeof c->peer, "192.0.2.1:40000");
    snprintf(c->peer_host, sizeof c->peer_host, "192.0.2.1");
    grw_reader_init(&c->r, fd, GMS_MAX_MESSAGE);

    fuzz_quiet q = fuzz_quiet_begin();
    for (int m = 0; m < MAX_MESSAGES; m++) {
        grw_header h;
        gr_err e;
        memset(&h, 0, sizeof h);
        c->r.deadline_ns = gr_now_ns() + 5000000000LL;
        if (grp_read_header(&c->r, &h, &e)) break;
        /* As serve_one. With issue 13's keys (gridmetad --key-file) AUTH must follow
         * HELLO: mirror that check here, and give this target a key so that a seed of
         * HELLO, AUTH reaches the requests behind it. */
        if (!c->hello_done && h.type != GRP_HELLO) break;
        if (gms_request_serve(c, &h) != GMS_KEEP) break;
    }
    status(&st);
    /* A day later: every server is down and every pending decision has expired. */
    gms_state_sweep(&st, gr_now_ns() + 86400LL * 1000000000LL, gms_unix_ms() + 86400LL * 1000);
    fuzz_quiet_end(q);
    status(&st);
    grp_pong p;
    gms_state_totals(&st, &p);

    shutdown(fd, SHUT_RDWR);
    close(fd);
    pthread_join(drainer, NULL);
    close(peer);
    pthread_mutex_destroy(&c->wlock);
    free(c);
    gdm_free(&net.dm);
    gms_state_free(&st);
    return 0;
}
