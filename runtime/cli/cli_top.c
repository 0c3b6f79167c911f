/* cli_top.c: gridrpc top: the status view (cli_status_print) refreshed every interval
 * until a signal or --count refreshes. On a terminal each frame is drawn over the last
 * in the alternate screen, which is given back on exit; otherwise (a pipe, a file,
 * --json) the frames follow one another as plain text, so scripts and tests read them. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

/* The signal that asked top to stop (0: none yet); set by the handler while a refresh
 * asks the peer, when the signals are not blocked. */
static volatile sig_atomic_t stop_signal;

static void on_signal(int sig) {
    stop_signal = sig;
}

/* Alternate screen and hidden cursor on entry; the user's screen and cursor on exit. */
#define TOP_ENTER "\033[?1049h\033[?25l"
#define TOP_LEAVE "\033[?25h\033[?1049l"

static void put(const char *s) {
    fputs(s, stdout);
    fflush(stdout);
}

/* The line above each frame: the time, who is watched, how often, and which refresh. */
static void header(FILE *f, const cli_opts *o, unsigned n, int tty) {
    char when[64] = "?", every[32];
    time_t t = time(NULL);
    struct tm tm;
    if (localtime_r(&t, &tm)) strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
    cli_format_double(o->interval, every, sizeof every);
    if (o->target == CLI_SERVER)
        fprintf(f, "gridrpc top: %s, server %s:%d, every %s s", when, o->server_host, o->server_port, every);
    else
        fprintf(f, "gridrpc top: %s, metaserver %s:%d, every %s s", when, o->meta_host, o->meta_port, every);
    if (o->count)
        fprintf(f, " (refresh %u of %u)", n, o->count);
    else
        fprintf(f, " (refresh %u)", n);
    fputs(tty ? "; Ctrl-C quits\n\n" : "\n", f);
}

/* One refresh into a memory buffer, so a frame is written whole or not at all. Returns
 * the buffer (free it; NULL when out of memory) and in *failed whether the peer
 * answered. */
static char *frame(const cli_opts *o, unsigned n, int tty, size_t *len, int *failed) {
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    if (!f) return NULL;
    if (!o->json) header(f, o, n, tty);
    gr_err e = {0, ""};
    *failed = cli_status_print(o, f, &e) != CLI_OK;
    if (*failed && o->json) {
        fputs("{\"error\": ", f);
        cli_json_string(f, e.msg);
        fputs("}\n", f);
    } else if (*failed) {
        char every[32];
        cli_format_double(o->interval, every, sizeof every);
        fprintf(f, "error: %s\ntop keeps trying every %s s\n", e.msg, every);
    }
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* Draws BUF over the last frame: home, each line cleared to its end, the rest of the
 * screen cleared, so a shorter frame leaves nothing of a longer one. */
static void draw_tty(const char *buf, size_t len) {
    fputs("\033[H", stdout);
    for (size_t i = 0; i < len; i++) {
        if (buf[i] == '\n') fputs("\033[K", stdout);
        fputc(buf[i], stdout);
    }
    fputs("\033[J", stdout);
    fflush(stdout);
}

/* Sleeps SECONDS with SET blocked; returns the signal of SET that came, or 0. */
static int sleep_for(const sigset_t *set, double seconds) {
    struct timespec now, end;
    clock_gettime(CLOCK_MONOTONIC, &end);
    end.tv_sec += (time_t)seconds;
    end.tv_nsec += (long)((seconds - (double)(time_t)seconds) * 1e9);
    if (end.tv_nsec >= 1000000000L) {
        end.tv_sec++;
        end.tv_nsec -= 1000000000L;
    }
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        struct timespec left = {end.tv_sec - now.tv_sec, end.tv_nsec - now.tv_nsec};
        if (left.tv_nsec < 0) {
            left.tv_sec--;
            left.tv_nsec += 1000000000L;
        }
        if (left.tv_sec < 0) return 0;
        int sig = sigtimedwait(set, NULL, &left);
        if (sig > 0) return sig;
        /* EINTR: another signal (a resize) cut the wait short; wait out the rest. */
        if (errno != EINTR) return 0;
    }
}

int cli_top(int argc, char **argv, cli_opts *o) {
    if (argc > 0) {
        cli_error("top takes no arguments, got '%s' (gridrpc top --help)", argv[0]);
        return CLI_USAGE;
    }
    if (cli_resolve_target(o, CLI_SERVER | CLI_METASERVER)) return CLI_FAIL;
    int tty = !o->json && isatty(STDOUT_FILENO);
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    /* No SA_RESTART: a signal during a refresh cuts its wait for the peer short. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    if (tty) put(TOP_ENTER);
    int rc = CLI_OK;
    for (unsigned n = 1;; n++) {
        size_t len = 0;
        int failed = 0;
        char *buf = frame(o, n, tty, &len, &failed);
        /* From here to the next refresh the signals wait: a frame is never cut half-drawn
         * and a signal while sleeping ends the sleep (sigtimedwait). */
        sigprocmask(SIG_BLOCK, &set, &old);
        if (!buf) {
            rc = CLI_FAIL;
            if (tty) put(TOP_LEAVE);
            cli_error("out of memory");
            return rc;
        }
        if (stop_signal) {
            free(buf); /* a refresh a signal cut short: not worth showing */
            break;
        }
        if (tty) {
            draw_tty(buf, len);
        } else {
            if (n > 1 && !o->json) fputc('\n', stdout);
            fwrite(buf, 1, len, stdout);
            fflush(stdout);
        }
        free(buf);
        if (o->count && n >= o->count) {
            rc = failed ? CLI_FAIL : CLI_OK;
            break;
        }
        if (sleep_for(&set, o->interval)) break;
        sigprocmask(SIG_SETMASK, &old, NULL);
    }
    if (tty) put(TOP_LEAVE);
    /* Stopped by a signal: asked for, so a success (the signals stay blocked till exit). */
    return rc;
}
