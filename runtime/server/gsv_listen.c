/* gsv_listen.c: gridrpcd's use of the daemon core (runtime/daemon/gdm.h): its settings
 * from the options, the wording of its refusals, and the listening socket with the
 * line that says what the server runs. */
#include <stdio.h>

#include "gsv.h"

/* The slowest transfer rate tolerated on top of --io-timeout, for large messages. */
#define GSV_FLOOR_BYTES_PER_S (1024.0 * 1024.0)

static void refusal(int why, const char *addr, unsigned open, unsigned limit, char *msg, size_t len) {
    if (why == GDM_NO_DESCRIPTORS)
        snprintf(msg, len,
                 "the server is out of file descriptors (%u connections open): retry later or use "
                 "another server",
                 open);
    else if (why == GDM_FULL)
        snprintf(msg, len,
                 "the server has %u connections open, its limit (--max-connections %u): retry later, "
                 "close idle connections, or use another server",
                 open, limit);
    else
        snprintf(msg, len,
                 "%s already has %u connections open to this server, the most one address may have "
                 "(--max-connections-per-address %u): close some (one connection carries many calls) "
                 "or retry later",
                 addr, open, limit);
}

int gsv_daemon_init(gsv_server *s) {
    static char stop_note[80];
    snprintf(stop_note, sizeof stop_note, " (at most %g s for running calls)", s->opt.shutdown_timeout);
    gdm_config cfg = {
        .name = "server",
        .ctx = s,
        .conn_size = sizeof(gsv_conn),
        .stack_size = 512 * 1024,
        .max_message = s->opt.limits.max_message,
        .io_timeout = s->opt.io_timeout,
        .idle_timeout = s->opt.idle_timeout,
        .floor_rate = GSV_FLOOR_BYTES_PER_S,
        .stop_note = stop_note,
        .tls = s->tls,
        .refusal = refusal,
    };
    gsv_conn_hooks(&cfg);
    return gdm_init(&s->dm, &cfg, s->opt.max_conns, s->opt.max_conns_per_addr);
}

int gsv_listen(gsv_server *s, gr_err *e) {
    char where[80];
    s->dm.cfg.tls = s->tls; /* loaded after gsv_daemon_init */
    int rc = gdm_listen(&s->dm, s->opt.host, s->opt.port, where, sizeof where, e);
    if (rc) return rc;
    s->listen_fd = s->dm.fd;
    unsigned workers = s->opt.mode == GSV_MODE_POOL ? s->workers : 0;
    gsv_log(GSV_LOG_INFO, "listening on %s: %u function%s, %u worker%s%s, %u core%s, queue %s", where,
            s->reg.nfns, s->reg.nfns == 1 ? "" : "s", workers, workers == 1 ? "" : "s",
            s->opt.mode == GSV_MODE_POOL ? "" : " (thread per call)", s->cores, s->cores == 1 ? "" : "s",
            s->opt.queue == GSV_QUEUE_SJF ? "sjf" : "fcfs");
    return GRID_OK;
}
