/* fault_client.c: the client side of the fault tests (the scripts in tests/faults). Calls
 * faults/echo_after (tests/faults/faults.idl) with values unique to each call and this
 * process, checks every result against what that call sent, and prints one line per
 * call, so the test can tell a result delivered twice, to the wrong caller or half
 * written (a wrong value), and a call lost without an error (no line), from a call
 * that failed with a clear error. The server and metaserver come from the usual
 * GRIDRPC_SERVER / GRIDRPC_METASERVER, the timeouts from GRIDRPC_TIMEOUT and
 * GRIDRPC_CONNECT_TIMEOUT.
 *
 *   calls N SECONDS sync|async [SIZE]  N calls at once of SECONDS each (sync: a thread
 *                                      each; async: grid_call_async, then grid_wait_any)
 *   load SECONDS THREADS CALL_SECONDS  THREADS threads call in a loop for SECONDS (odd
 *                                      threads through grid_call_async + grid_wait)
 *   slow N SECONDS                     faults/big_result of N doubles (call 0) and a small
 *                                      echo (call 1) on the same connection, both async;
 *                                      prints "received" once the server holds both
 *   big N                              faults/big_result of N doubles, checked
 *   file IN OUT                        test/file_upper(IN, OUT)
 *   submit N SECONDS                   two-phase faults/echo_after: prints the job id
 *   fetch ID N WAIT                    fetches it and checks the echo
 *
 * Lines: "call TAG ok pid=P start=S end=E", "call TAG error NAME end=E: MESSAGE",
 * "call TAG wrong ..."; then "summary calls=N ok=A error=B wrong=C dup=D". Exit 0 when
 * nothing was wrong, duplicated or missing (errors allowed: the script judges them), 1
 * otherwise, 2 on a usage error. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gridrpc.h"

#define VEC 64 /* doubles per echo unless SIZE says otherwise */

static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;
static struct timespec t0;
static double salt; /* this process's values differ from every other's */
static int n_ok, n_err, n_wrong, n_dup, n_calls;

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9;
}

static double value(int tag, int i) {
    return salt + (double)tag * 65536.0 + (double)i + 0.5;
}

/* One call's buffers. */
typedef struct slot {
    int tag, n, pid, done;
    double seconds, start;
    double *in, *out;
} slot;

static int slot_init(slot *s, int tag, int n, double seconds) {
    s->tag = tag;
    s->n = n;
    s->pid = -1;
    s->done = 0;
    s->seconds = seconds;
    s->in = malloc((size_t)n * sizeof(double));
    s->out = malloc((size_t)n * sizeof(double));
    if (!s->in || !s->out) return -1;
    for (int i = 0; i < n; i++) {
        s->in[i] = value(tag, i);
        s->out[i] = -1;
    }
    return 0;
}

/* Judges S's outcome RC (MSG: the error message) and prints its line. */
static void settle(slot *s, int rc, const char *msg) {
    double end = now_s();
    pthread_mutex_lock(&out_lock);
    if (s->done++) {
        n_dup++;
        printf("call %d wrong: its outcome came twice\n", s->tag);
    } else if (rc != GRID_OK) {
        n_err++;
        printf("call %d error %s end=%.2f: %s\n", s->tag, grid_error_name(rc), end, msg);
    } else {
        int bad = -1;
        for (int i = 0; i < s->n && bad < 0; i++)
            if (s->out[i] != s->in[i]) bad = i;
        if (bad >= 0 || s->pid <= 0) {
            n_wrong++;
            printf("call %d wrong: out[%d] = %.17g, not %.17g (pid %d)\n", s->tag, bad < 0 ? 0 : bad,
                   bad < 0 ? 0 : s->out[bad], bad < 0 ? 0 : s->in[bad], s->pid);
        } else {
            n_ok++;
            printf("call %d ok pid=%d start=%.2f end=%.2f\n", s->tag, s->pid, s->start, end);
        }
    }
    fflush(stdout);
    pthread_mutex_unlock(&out_lock);
}

static int summary(void) {
    int missing = n_calls - n_ok - n_err - n_wrong;
    printf("summary calls=%d ok=%d error=%d wrong=%d dup=%d missing=%d\n", n_calls, n_ok, n_err, n_wrong,
           n_dup, missing);
    return n_wrong || n_dup || missing ? 1 : 0;
}

static void *sync_call(void *arg) {
    slot *s = arg;
    s->start = now_s();
    int rc = grid_call("faults/echo_after", s->seconds, s->n, s->in, s->out, &s->pid);
    settle(s, rc, rc ? grid_last_error() : "");
    return NULL;
}

/* N calls at once; ASYNC: from this thread with grid_call_async. */
static int calls(int n, double seconds, int async, int size) {
    slot *v = calloc((size_t)n, sizeof *v);
    int *ids = calloc((size_t)n, sizeof *ids);
    pthread_t *th = calloc((size_t)n, sizeof *th);
    if (!v || !ids || !th) return 1;
    n_calls = n;
    for (int i = 0; i < n; i++)
        if (slot_init(&v[i], i, size, seconds)) return 1;
    if (!async) {
        for (int i = 0; i < n; i++)
            if (pthread_create(&th[i], NULL, sync_call, &v[i]) != 0) return 1;
        for (int i = 0; i < n; i++)
            pthread_join(th[i], NULL);
        return summary();
    }
    int started = 0;
    for (int i = 0; i < n; i++) {
        v[i].start = now_s();
        ids[i] = grid_call_async("faults/echo_after", seconds, v[i].n, v[i].in, v[i].out, &v[i].pid);
        if (ids[i] <= 0)
            settle(&v[i], -ids[i], grid_last_error());
        else
            started++;
    }
    /* Each started call must come back from grid_wait_any exactly once. */
    for (int k = 0; k < started; k++) {
        int id = GRID_ID_NONE;
        int rc = grid_wait_any(&id);
        int i = 0;
        while (i < n && ids[i] != id)
            i++;
        if (i == n) {
            pthread_mutex_lock(&out_lock);
            n_wrong++;
            printf("call ? wrong: grid_wait_any returned id %d (code %s), which is not outstanding\n", id,
                   grid_error_name(rc));
            pthread_mutex_unlock(&out_lock);
            continue;
        }
        settle(&v[i], rc, rc ? grid_call_message_np(id) : "");
    }
    int id = -1;
    int rc = grid_wait_any(&id);
    if (id != GRID_ID_NONE) {
        n_wrong++;
        printf("call ? wrong: grid_wait_any returned id %d (%s) after every call was waited on\n", id,
               grid_error_name(rc));
    }
    return summary();
}

/* ---- load */

typedef struct loader {
    int index;
    double until, seconds;
} loader;

static void *load_thread(void *arg) {
    loader *l = arg;
    for (int k = 0; now_s() < l->until; k++) {
        slot s;
        if (slot_init(&s, l->index * 10000 + k, 16, l->seconds)) return NULL;
        pthread_mutex_lock(&out_lock);
        n_calls++;
        pthread_mutex_unlock(&out_lock);
        s.start = now_s();
        int rc;
        const char *msg = "";
        if (l->index % 2) {
            int id = grid_call_async("faults/echo_after", s.seconds, s.n, s.in, s.out, &s.pid);
            if (id <= 0) {
                rc = -id;
                msg = grid_last_error();
            } else {
                rc = grid_wait(id);
                msg = rc ? grid_call_message_np(id) : "";
            }
            settle(&s, rc, msg);
            if (id > 0) grid_forget_np(id);
        } else {
            rc = grid_call("faults/echo_after", s.seconds, s.n, s.in, s.out, &s.pid);
            settle(&s, rc, rc ? grid_last_error() : "");
        }
        free(s.in);
        free(s.out);
    }
    return NULL;
}

static int load(double seconds, int threads, double call_seconds) {
    pthread_t th[64];
    loader l[64];
    if (threads < 1 || threads > 64) return 2;
    for (int i = 0; i < threads; i++) {
        l[i] = (loader){i, now_s() + seconds, call_seconds};
        if (pthread_create(&th[i], NULL, load_thread, &l[i]) != 0) return 1;
    }
    for (int i = 0; i < threads; i++)
        pthread_join(th[i], NULL);
    return summary();
}

/* ---- large results */

static int check_big(const double *out, int n, double seed) {
    for (int i = 0; i < n; i++)
        if (out[i] != seed + i) return i;
    return -1;
}

static int big(int n, int slow, double seconds) {
    double seed = salt;
    double *out = malloc((size_t)n * sizeof *out);
    if (!out) return 1;
    n_calls = 1;
    double start = now_s();
    int rc, id = 0;
    if (slow) {
        id = grid_call_async("faults/big_result", seconds, n, seed, out);
        if (id <= 0) {
            printf("call 0 error %s end=%.2f: %s\n", grid_error_name(-id), now_s(), grid_last_error());
            return 0;
        }
        /* A second call on the same connection, with a small result that comes after
         * the large one has started out (0.5 s later): its answer waits behind it. */
        slot s2;
        if (slot_init(&s2, 1, 16, 0.5)) return 1;
        s2.start = now_s();
        int id2 = grid_call_async("faults/echo_after", s2.seconds, s2.n, s2.in, s2.out, &s2.pid);
        grid_wait_received_np(id);
        if (id2 > 0) grid_wait_received_np(id2);
        printf("received\n");
        fflush(stdout);
        rc = grid_wait(id);
        int rc2 = id2 > 0 ? grid_wait(id2) : -id2;
        n_calls = 2;
        settle(&s2, rc2, rc2 ? (id2 > 0 ? grid_call_message_np(id2) : grid_last_error()) : "");
    } else {
        rc = grid_call("faults/big_result", 0.0, n, seed, out);
    }
    if (rc) {
        printf("call 0 error %s end=%.2f: %s\n", grid_error_name(rc), now_s(),
               slow ? grid_call_message_np(id) : grid_last_error());
        return 0;
    }
    int bad = check_big(out, n, seed);
    if (bad >= 0) {
        printf("call 0 wrong: out[%d] = %.17g, not %.17g\n", bad, out[bad], seed + bad);
        return 1;
    }
    printf("call 0 ok start=%.2f end=%.2f\n", start, now_s());
    return 0;
}

/* ---- files and two-phase calls */

static int file_call(const char *in, const char *out) {
    int rc = grid_call("test/file_upper", in, out);
    if (rc)
        printf("error %s: %s\n", grid_error_name(rc), grid_last_error());
    else
        printf("ok\n");
    return 0;
}

static int submit(int n, double seconds) {
    char id[GRID_JOB_ID_MAX_NP];
    slot s;
    salt = 0; /* the fetching process checks the same values */
    if (slot_init(&s, 1, n, seconds)) return 1;
    int rc = grid_submit_np(id, sizeof id, "faults/echo_after", seconds, n, s.in, s.out, &s.pid);
    if (rc) {
        printf("error %s: %s\n", grid_error_name(rc), grid_last_error());
        return 0;
    }
    puts(id);
    return 0;
}

static int fetch(const char *id, int n, double wait) {
    slot s;
    salt = 0;
    if (slot_init(&s, 1, n, 0)) return 1;
    double *in = calloc((size_t)n, sizeof *in); /* a fetch does not read IN */
    int rc = grid_job_fetch_np(id, wait, 0.0, n, in, s.out, &s.pid);
    free(in);
    if (rc) {
        printf("error %s: %s\n", grid_error_name(rc), grid_last_error());
        return 0;
    }
    for (int i = 0; i < n; i++)
        if (s.out[i] != s.in[i]) {
            printf("wrong: out[%d] = %.17g, not %.17g\n", i, s.out[i], s.in[i]);
            return 1;
        }
    printf("ok pid=%d\n", s.pid);
    return 0;
}

int main(int argc, char **argv) {
    clock_gettime(CLOCK_MONOTONIC, &t0);
    salt = (double)getpid() * 1e8;
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *m = argc > 1 ? argv[1] : "";
    if (strcmp(m, "calls") == 0 && (argc == 5 || argc == 6) &&
        (strcmp(argv[4], "sync") == 0 || strcmp(argv[4], "async") == 0))
        return calls(atoi(argv[2]), atof(argv[3]), strcmp(argv[4], "async") == 0,
                     argc == 6 ? atoi(argv[5]) : VEC);
    if (strcmp(m, "load") == 0 && argc == 5) return load(atof(argv[2]), atoi(argv[3]), atof(argv[4]));
    if (strcmp(m, "slow") == 0 && argc == 4) return big(atoi(argv[2]), 1, atof(argv[3]));
    if (strcmp(m, "big") == 0 && argc == 3) return big(atoi(argv[2]), 0, 0);
    if (strcmp(m, "file") == 0 && argc == 4) return file_call(argv[2], argv[3]);
    if (strcmp(m, "submit") == 0 && argc == 4) return submit(atoi(argv[2]), atof(argv[3]));
    if (strcmp(m, "fetch") == 0 && argc == 5) return fetch(argv[2], atoi(argv[3]), atof(argv[4]));
    fprintf(stderr,
            "usage: fault-client calls N SECONDS sync|async [SIZE] | load SECONDS THREADS CALL_SECONDS |\n"
            "       slow N SECONDS | big N | file IN OUT | submit N SECONDS | fetch ID N WAIT\n");
    return 2;
}
