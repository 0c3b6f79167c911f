/* jobs_client.c: the program side of tests/jobs.sh (two-phase calls). Each run is one
 * process doing one step, so a job submitted by one process is fetched by another:
 *   submit PORT N           test/echo_double(N, in[i] = 1.5 i): prints the job id
 *   submit-sleep PORT S     test/sleep_count(S): prints the job id
 *   fetch ID N WAIT         fetches the echo into out[N]: "ok" when out[i] == 1.5 i
 *   fetch-count ID WAIT     fetches sleep_count: "count=K"
 *   state ID                "STATE CODE"
 *   forget ID
 * A call that fails prints "error NAME: MESSAGE" and exits 3. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gridrpc.h"

static int failed(int rc) {
    printf("error %s: %s\n", grid_error_name(rc), grid_last_error());
    return 3;
}

int main(int argc, char **argv) {
    if (argc < 3) return 2;
    grid_set_timeouts_np(5, 120);
    const char *cmd = argv[1];
    char id[GRID_JOB_ID_MAX_NP], fn[256];
    if (strcmp(cmd, "submit") == 0 && argc == 4) {
        int n = atoi(argv[3]);
        double *in = calloc((size_t)n + 1, sizeof *in);
        for (int i = 0; i < n; i++)
            in[i] = 1.5 * i;
        snprintf(fn, sizeof fn, "gridrpc://127.0.0.1:%s/test/echo_double", argv[2]);
        /* OUT is never written by a submit: NULL would do; a buffer shows it stays as it was. */
        double sentinel = 42;
        int rc = grid_submit_np(id, sizeof id, fn, n, in, &sentinel);
        free(in);
        if (rc) return failed(rc);
        if (sentinel != 42) return printf("submit wrote an OUT buffer\n"), 1;
        puts(id);
        return 0;
    }
    if (strcmp(cmd, "submit-sleep") == 0 && argc == 4) {
        snprintf(fn, sizeof fn, "gridrpc://127.0.0.1:%s/test/sleep_count", argv[2]);
        int count = -1;
        int rc = grid_submit_np(id, sizeof id, fn, atof(argv[3]), &count);
        if (rc) return failed(rc);
        puts(id);
        return 0;
    }
    if (strcmp(cmd, "fetch") == 0 && argc == 5) {
        int n = atoi(argv[3]);
        double *out = calloc((size_t)n + 1, sizeof *out);
        for (int i = 0; i < n; i++)
            out[i] = -1;
        /* The IN array is not read by a fetch: zeros here, not what was submitted. */
        double *in = calloc((size_t)n + 1, sizeof *in);
        int rc = grid_job_fetch_np(argv[2], atof(argv[4]), n, in, out);
        free(in);
        if (rc) {
            for (int i = 0; i < n; i++)
                if (out[i] != -1) return printf("a failed fetch wrote the results\n"), 1;
            free(out);
            return failed(rc);
        }
        for (int i = 0; i < n; i++)
            if (out[i] != 1.5 * i) return printf("out[%d] = %g, not %g\n", i, out[i], 1.5 * i), 1;
        free(out);
        puts("ok");
        return 0;
    }
    if (strcmp(cmd, "fetch-count") == 0 && argc == 4) {
        int count = -1;
        int rc = grid_job_fetch_np(argv[2], atof(argv[3]), 0.0, &count);
        if (rc) return failed(rc);
        printf("count=%d\n", count);
        return 0;
    }
    if (strcmp(cmd, "state") == 0) {
        grid_job_info_np info;
        int rc = grid_job_state_np(argv[2], &info);
        if (rc) return failed(rc);
        static const char *const names[] = {"?", "queued", "running", "done", "failed"};
        printf("%s %s %s\n", info.state >= 1 && info.state <= 4 ? names[info.state] : "?",
               grid_error_name(info.code), info.function);
        return 0;
    }
    if (strcmp(cmd, "forget") == 0) {
        int rc = grid_job_forget_np(argv[2]);
        if (rc) return failed(rc);
        puts("forgotten");
        return 0;
    }
    return 2;
}
