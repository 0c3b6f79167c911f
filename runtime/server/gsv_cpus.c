/* gsv_cpus.c: how much CPU this server really has, for its worker count and what it
 * tells clients and the metaserver: the online processors, narrowed by the CPU affinity
 * mask and by a cgroup CPU quota (v1 cpu.cfs_quota_us / cpu.cfs_period_us, v2 cpu.max),
 * as a container or a lab host sets them. A server limited to 40% of one CPU on a
 * 16-core machine is not a 16-core server, and a metaserver told so would queue work
 * on it as if it were. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gsv.h"

/* The quota (CPUs, fractional) in the cgroup directory DIR; 0 when it sets none. */
static double quota_in(const char *dir, int v2) {
    char path[4300]; /* DIR (< 4200) and a file name */
    double quota = 0, period = 0;
    if (v2) {
        snprintf(path, sizeof path, "%s/cpu.max", dir);
        FILE *f = fopen(path, "r");
        if (!f) return 0;
        char q[32] = "";
        if (fscanf(f, "%31s %lf", q, &period) == 2 && strcmp(q, "max") != 0) quota = atof(q);
        fclose(f);
    } else {
        snprintf(path, sizeof path, "%s/cpu.cfs_quota_us", dir);
        FILE *f = fopen(path, "r");
        if (!f) return 0;
        if (fscanf(f, "%lf", &quota) != 1) quota = 0;
        fclose(f);
        snprintf(path, sizeof path, "%s/cpu.cfs_period_us", dir);
        if (!(f = fopen(path, "r"))) return 0;
        if (fscanf(f, "%lf", &period) != 1) period = 0;
        fclose(f);
    }
    return quota > 0 && period > 0 ? quota / period : 0;
}

/* 1 when the comma-separated LIST names the controller "cpu". */
static int has_cpu(const char *list) {
    for (const char *p = list; p && *p;) {
        size_t n = strcspn(p, ",");
        if (n == 3 && strncmp(p, "cpu", 3) == 0) return 1;
        p += n;
        if (*p == ',') p++;
    }
    return 0;
}

/* The CPU quota of this process's cgroup, in CPUs; 0 when none is found. Finds where
 * the cpu controller is mounted (/proc/self/mountinfo), then this process's cgroup in
 * it (/proc/self/cgroup). */
static double cgroup_quota(void) {
    char line[4096], mnt[2048] = "", mroot[2048] = "", cg[2048] = "";
    int v2 = 0, found = 0;
    FILE *f = fopen("/proc/self/mountinfo", "r");
    if (!f) return 0;
    while (!found && fgets(line, sizeof line, f)) {
        /* id parent maj:min root mountpoint options ... - fstype source superoptions */
        char root[2048], point[2048], *dash = strstr(line, " - ");
        if (!dash || sscanf(line, "%*s %*s %*s %2047s %2047s", root, point) != 2) continue;
        char fstype[32] = "", super[1024] = "";
        if (sscanf(dash + 3, "%31s %*s %1023s", fstype, super) < 1) continue;
        if (strcmp(fstype, "cgroup2") == 0 && !mnt[0]) {
            snprintf(mnt, sizeof mnt, "%s", point), snprintf(mroot, sizeof mroot, "%s", root), v2 = 1;
        } else if (strcmp(fstype, "cgroup") == 0 && has_cpu(super)) {
            snprintf(mnt, sizeof mnt, "%s", point), snprintf(mroot, sizeof mroot, "%s", root), v2 = 0;
            found = 1; /* v1 cpu wins over a v2 hierarchy without it */
        }
    }
    fclose(f);
    if (!mnt[0] || !(f = fopen("/proc/self/cgroup", "r"))) return 0;
    while (fgets(line, sizeof line, f)) {
        /* hierarchy-id:controllers:path */
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2) continue;
        *c2 = '\0';
        int match = v2 ? c1[1] == '\0' : has_cpu(c1 + 1);
        if (!match) continue;
        snprintf(cg, sizeof cg, "%s", c2 + 1);
        cg[strcspn(cg, "\n")] = '\0';
        break;
    }
    fclose(f);
    if (!cg[0]) return 0;
    /* The path is relative to the hierarchy's root; the mount may show a part of it. */
    const char *rel = cg;
    size_t rl = strlen(mroot);
    if (strcmp(mroot, "/") != 0 && strncmp(cg, mroot, rl) == 0) rel = cg + rl;
    char dir[4200];
    snprintf(dir, sizeof dir, "%s%s", mnt, strcmp(rel, "/") == 0 ? "" : rel);
    /* The tightest quota on the way up to the mount applies. */
    double best = 0;
    for (;;) {
        double q = quota_in(dir, v2);
        if (q > 0 && (best == 0 || q < best)) best = q;
        if (strlen(dir) <= strlen(mnt)) break;
        char *slash = strrchr(dir, '/');
        if (!slash || slash < dir + strlen(mnt)) break;
        *slash = '\0';
    }
    return best;
}

double gsv_cpus_available(void) {
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    double cpus = online > 0 ? (double)online : 1;
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0 && n < cpus) cpus = n;
    }
    double q = cgroup_quota();
    if (q > 0 && q < cpus) cpus = q;
    return cpus;
}
