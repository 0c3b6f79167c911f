/* nfq_delay.c: the link delay of the network lab (tests/lab/lab.sh). This kernel has no
 * netem, so a delay is made here: every packet that iptables sends to one netfilter queue
 * is held for a fixed time, then accepted, in the order it arrived (a constant delay on a
 * FIFO keeps TCP's segments in order, so no reordering is introduced).
 *
 * Usage: nfq_delay --queue N --delay MS [--maxlen PACKETS] [--rt]
 * Runs in the network namespace whose packets it delays (queues are per namespace); prints
 * "nfq_delay: queue N: holding packets for MS ms" once bound, and exits 0 on SIGTERM or
 * SIGINT after releasing what it still holds. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <libnetfilter_queue/libnetfilter_queue.h>
#include <linux/netfilter.h>
#include <linux/netlink.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>

#ifndef SOL_NETLINK
#define SOL_NETLINK 270
#endif

/* One held packet: its queue id and when it may go. */
struct held {
    uint32_t id;
    int64_t due_ns;
};

/* The FIFO of held packets (a ring; the kernel never holds more than maxlen, so a ring of
 * maxlen + slack never overflows). */
struct fifo {
    struct held *slot;
    size_t cap, head, count;
    int64_t delay_ns;
    unsigned long overflow;
};

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig) {
    (void)sig;
    stop_requested = 1;
}

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void usage(FILE *out) {
    fprintf(out, "Usage: nfq_delay --queue N --delay MS [--maxlen PACKETS] [--rt]\n"
                 "Holds each packet of netfilter queue N for MS milliseconds (a decimal number),\n"
                 "then accepts it, in arrival order. Send packets to it with\n"
                 "  iptables -A INPUT ... -j NFQUEUE --queue-num N --queue-bypass\n"
                 "in the same network namespace.\n"
                 "  --maxlen PACKETS  packets the kernel may hold for us (default 65536)\n"
                 "  --rt              run at real-time priority (steadier delays on a busy machine)\n");
}

/* parse_num: a decimal number within [lo, hi], or exit 2 naming the option. */
static double parse_num(const char *opt, const char *s, double lo, double hi) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || v < lo || v > hi) {
        fprintf(stderr, "nfq_delay: %s: '%s' is not a number from %g to %g\n", opt, s, lo, hi);
        exit(2);
    }
    return v;
}

static int on_packet(struct nfq_q_handle *qh, struct nfgenmsg *msg, struct nfq_data *nfa, void *data) {
    (void)msg;
    struct fifo *f = data;
    struct nfqnl_msg_packet_hdr *ph = nfq_get_msg_packet_hdr(nfa);
    if (!ph) return 0;
    uint32_t id = ntohl(ph->packet_id);
    if (f->count == f->cap) {
        /* Cannot happen while the kernel respects maxlen; never drop silently. */
        f->overflow++;
        return nfq_set_verdict(qh, id, NF_ACCEPT, 0, NULL);
    }
    struct held *h = &f->slot[(f->head + f->count) % f->cap];
    h->id = id;
    h->due_ns = now_ns() + f->delay_ns;
    f->count++;
    return 0;
}

/* release: accepts every held packet that is due (all of them when all is set) with one
 * batch verdict: ids grow in arrival order, so "every id up to the last due one" is
 * exactly the due ones. */
static void release(struct nfq_q_handle *qh, struct fifo *f, int all) {
    int64_t now = now_ns();
    int any = 0;
    uint32_t last = 0;
    while (f->count && (all || f->slot[f->head].due_ns <= now)) {
        last = f->slot[f->head].id;
        any = 1;
        f->head = (f->head + 1) % f->cap;
        f->count--;
    }
    if (any && nfq_set_verdict_batch(qh, last, NF_ACCEPT) < 0)
        fprintf(stderr, "nfq_delay: verdict for packets up to id %u failed: %s\n", last, strerror(errno));
}

int main(int argc, char **argv) {
    long queue = -1;
    double delay_ms = -1;
    long maxlen = 65536;
    int rt = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--rt")) {
            rt = 1;
        } else if (!strcmp(a, "--queue") || !strcmp(a, "--delay") || !strcmp(a, "--maxlen")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "nfq_delay: %s needs a value\n", a);
                return 2;
            }
            const char *v = argv[++i];
            if (!strcmp(a, "--queue"))
                queue = (long)parse_num(a, v, 0, 65535);
            else if (!strcmp(a, "--delay"))
                delay_ms = parse_num(a, v, 0, 60000);
            else
                maxlen = (long)parse_num(a, v, 16, 1 << 22);
        } else {
            fprintf(stderr, "nfq_delay: unknown argument '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (queue < 0 || delay_ms < 0) {
        fprintf(stderr, "nfq_delay: --queue and --delay are required\n");
        usage(stderr);
        return 2;
    }

    struct fifo f = {.cap = (size_t)maxlen + 64, .delay_ns = (int64_t)(delay_ms * 1e6)};
    f.slot = calloc(f.cap, sizeof *f.slot);
    if (!f.slot) {
        fprintf(stderr, "nfq_delay: out of memory for %ld packets\n", maxlen);
        return 1;
    }

    /* Sleeping to the microsecond: the default 50 us timer slack would blur the delay. */
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    if (rt) {
        struct sched_param sp = {.sched_priority = 10};
        if (sched_setscheduler(0, SCHED_FIFO, &sp) != 0)
            fprintf(stderr, "nfq_delay: --rt: cannot use SCHED_FIFO (%s); going on at normal priority\n",
                    strerror(errno));
    }

    struct nfq_handle *h = nfq_open();
    if (!h) {
        fprintf(stderr,
                "nfq_delay: cannot open a netfilter queue handle (%s): run as root, with the "
                "nfnetlink_queue module available\n",
                strerror(errno));
        return 1;
    }
    struct nfq_q_handle *qh = nfq_create_queue(h, (uint16_t)queue, on_packet, &f);
    if (!qh) {
        fprintf(stderr,
                "nfq_delay: cannot bind queue %ld (%s): is another program bound to it in "
                "this network namespace?\n",
                queue, strerror(errno));
        nfq_close(h);
        return 1;
    }
    /* Only the packet id is needed: no payload is copied to us. */
    if (nfq_set_mode(qh, NFQNL_COPY_META, 0) < 0) {
        fprintf(stderr, "nfq_delay: cannot set copy mode (%s)\n", strerror(errno));
        return 1;
    }
    if (nfq_set_queue_maxlen(qh, (uint32_t)maxlen) < 0)
        fprintf(stderr, "nfq_delay: cannot set the queue length to %ld (%s)\n", maxlen, strerror(errno));
    /* Whole GSO packets, unsegmented: fewer messages at high rates; we never look inside. */
    nfq_set_queue_flags(qh, NFQA_CFG_F_GSO, NFQA_CFG_F_GSO);

    int fd = nfq_fd(h);
    nfnl_rcvbufsiz(nfq_nfnlh(h), 8 << 20);
    int one = 1;
    /* A full socket buffer must not end the program: the kernel drops, we go on. */
    setsockopt(fd, SOL_NETLINK, NETLINK_NO_ENOBUFS, &one, sizeof one);

    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigset_t blocked, waitmask;
    sigemptyset(&blocked);
    sigaddset(&blocked, SIGTERM);
    sigaddset(&blocked, SIGINT);
    sigprocmask(SIG_BLOCK, &blocked, &waitmask);
    sigdelset(&waitmask, SIGTERM);
    sigdelset(&waitmask, SIGINT);

    printf("nfq_delay: queue %ld: holding packets for %g ms\n", queue, delay_ms);
    fflush(stdout);

    static char buf[1 << 17] __attribute__((aligned));
    while (!stop_requested) {
        struct timespec ts, *tsp = NULL;
        if (f.count) {
            int64_t wait = f.slot[f.head].due_ns - now_ns();
            if (wait < 0) wait = 0;
            ts.tv_sec = wait / 1000000000;
            ts.tv_nsec = wait % 1000000000;
            tsp = &ts;
        }
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int r = ppoll(&pfd, 1, tsp, &waitmask);
        if (r < 0 && errno != EINTR) {
            fprintf(stderr, "nfq_delay: poll: %s\n", strerror(errno));
            break;
        }
        if (r > 0) {
            for (;;) {
                ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
                if (n < 0) {
                    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ENOBUFS)
                        fprintf(stderr, "nfq_delay: recv: %s\n", strerror(errno));
                    break;
                }
                nfq_handle_packet(h, buf, (int)n);
            }
        }
        release(qh, &f, 0);
    }
    release(qh, &f, 1);
    if (f.overflow)
        fprintf(stderr, "nfq_delay: %lu packets passed undelayed (held queue full)\n", f.overflow);
    nfq_destroy_queue(qh);
    nfq_close(h);
    free(f.slot);
    return 0;
}
