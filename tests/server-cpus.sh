#!/usr/bin/env bash
# server-cpus.sh: gridrpcd counts the CPUs it may really use. Inside a lab host whose
# cgroup CPU quota is 40% of one CPU it reports 1 core (its pool, its HELLO_OK and the
# metaserver see that, not the machine's count); at 150% it reports 2. Needs root and a
# cgroup cpu controller (the lab skips otherwise). TAP output.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/lab/lab.sh"
B=$top_builddir
lab_init cpus || exit $?
lab_host a 10
online=$(getconf _NPROCESSORS_ONLN)
# cores_under PCT: the cores gridrpcd reports in host a under a quota of PCT% of a CPU.
cores_under() {
  lab_cpu_quota a "$1" || return 1
  lab_start a "$B/gridrpcd" --host "$(lab_ip a)" --insecure --port "$2" --module-dir "$B/stubs/.libs" || return 1
  lab_wait_line "$LAB_LOG" ' cores?,' 5 "$LAB_PID" || return 1
  sed -n 's/.* \([0-9][0-9]*\) cores\{0,1\},.*/\1/p' "$LAB_LOG" | head -1
}
c=$(cores_under 40 7000)
[ "$c" = 1 ] && ok "a quota of 40% of a CPU: 1 core (the machine has $online)" || fail "40%: '$c' cores"
if [ "$online" -ge 2 ]; then
  c=$(cores_under 150 7001)
  [ "$c" = 2 ] && ok "a quota of 150%: 2 cores" || fail "150%: '$c' cores"
else
  ok "# SKIP one online CPU: a quota of 150% cannot show 2"
fi
c=$(cores_under none 7002)
[ "$c" = "$online" ] && ok "no quota: every online CPU ($online)" || fail "no quota: '$c' cores, $online online"
finish
