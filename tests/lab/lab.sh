# lab.sh: the network/compute lab, a bash library to source. One machine, many "hosts":
# network namespaces on one bridge (in a hub namespace), each host's link shaped in rate
# (tc tbf) and delay (NFQUEUE + tests/lab/nfq_delay: this kernel has no netem), and CPU
# quotas (cgroup cpu controller) so that "servers" differ in speed. Everything the lab makes
# carries one unique prefix and is torn down on exit, even after a failure or a signal.
# Functions and an example: tests/lab/README.md. Needs bash 4.4+, root, iproute2, iptables.
#
#   source tests/lab/lab.sh
#   lab_init mytest || exit $?         # 77: skipped (not root, no namespaces, no tc)
#   lab_host s1 11; lab_link s1 20mbit 20; lab_cpu_quota s1 50
#   lab_run_bg s1 ./gridrpcd --host "$(lab_ip s1)" --insecure --port 7000 ...
#   lab_wait_line "$LAB_LOG" '^listening on ' 10 "$LAB_PID" || exit 1
#   lab_exec client ./examples/dmmul 300
# shellcheck shell=bash

# The hosts' subnet: 10.77.0.0/24. It only exists inside the lab's namespaces (the root
# namespace never sees it), so it cannot clash with the machine's own addresses or routes.
LAB_SUBNET=${LAB_SUBNET:-10.77.0}
# Every lab's names start with glab + 4 characters: namespaces "glabXXXX-NAME", interfaces
# "glabXXXXhN"/"glabXXXXbN"/"glabXXXXbr" (<= 15 characters), cgroups "glabXXXX-NAME", the
# working folder $LAB_ROOT/glabXXXX (logs; the owner's pid for lab_cleanup_stale).
LAB_ROOT=${LAB_ROOT:-/tmp/gridrpc-lab}
LAB__FAMILY=glab
LAB__HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# lab__alive PID: the process exists and is not a zombie.
lab__alive() {
  local -  # the caller's set -e / -u / pipefail stay outside: errors are returned
  set +eu +o pipefail
  local st
  st=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  st=${st##*) }
  [ "${st%% *}" != Z ]
}
lab__err() { echo "lab: $*" >&2; }
lab__skip() { echo "lab: skipped: $*"; }

# lab__nfq_delay: the delay program's path (LAB_NFQ_DELAY, else the build folder).
lab__nfq_delay() {
  local -  # the caller's set -e / -u / pipefail stay outside: errors are returned
  set +eu +o pipefail
  local c
  for c in "${LAB_NFQ_DELAY:-}" "${top_builddir:+$top_builddir/tests/lab/nfq_delay}" \
    "${LAB_BUILD:-$LAB__HERE/../../build}/tests/lab/nfq_delay"; do
    if [ -n "$c" ] && [ -x "$c" ]; then
      echo "$c"
      return 0
    fi
  done
  return 1
}

# lab__starttime PID: the process's start time (field 22 of /proc/PID/stat), to tell a live
# owner from a recycled pid.
lab__starttime() {
  local -  # the caller's set -e / -u / pipefail stay outside: errors are returned
  set +eu +o pipefail
  local s
  s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  s=${s##*) }
  set -- $s
  echo "${20}"
}

# lab__cgroot: "v1 DIR" or "v2 DIR" for the cgroup hierarchy holding the cpu controller.
lab__cgroot() {
  local -  # the caller's set -e / -u / pipefail stay outside: errors are returned
  set +eu +o pipefail
  if [ -f /sys/fs/cgroup/cgroup.controllers ] && grep -qw cpu /sys/fs/cgroup/cgroup.controllers; then
    echo "v2 /sys/fs/cgroup"
    return 0
  fi
  local dev dir type opts rest
  while read -r dev dir type opts rest; do
    if [ "$type" = cgroup ] && [[ ",$opts," == *,cpu,* ]]; then
      echo "v1 $dir"
      return 0
    fi
  done </proc/mounts
  return 1
}

# lab_init NAME: checks that a lab can be made here (else prints "lab: skipped: WHY" and
# returns 77), picks a unique prefix (LAB_PFX), makes the hub namespace and its bridge and
# the working folder (LAB_DIR), and installs the EXIT/INT/TERM traps that call
# lab_teardown. An EXIT trap set before lab_init still runs (after the teardown); one set
# after it replaces the lab's: call lab_teardown from it.
lab_init() {
  local -  # the caller's set -e / -u / pipefail stay outside: errors are returned
  set +eu +o pipefail
  local name=${1:-lab} c id i
  if [ -n "${LAB_PFX:-}" ]; then
    lab__err "lab_init: this shell already has a lab ($LAB_PFX): call lab_teardown first"
    return 1
  fi
  if [ -z "${BASH_VERSINFO:-}" ] || [ "${BASH_VERSINFO[0]}" -lt 4 ] ||
    { [ "${BASH_VERSINFO[0]}" -eq 4 ] && [ "${BASH_VERSINFO[1]}" -lt 4 ]; }; then
    lab__skip "needs bash 4.4 or later"
    return 77
  fi
  if [ "$(id -u)" != 0 ]; then
    lab__skip "needs root (network namespaces, tc, iptables, cgroups); run as root"
    return 77
  fi
  for c in ip tc iptables iptables-restore; do
    command -v "$c" >/dev/null 2>&1 || {
      lab__skip "'$c' is not installed (Debian: iproute2, iptables)"
      return 77
    }
  done
  mkdir -p "$LAB_ROOT" || {
    lab__skip "cannot create $LAB_ROOT"
    return 77
  }
  # A fresh id: mkdir is the atomic reservation; no namespace may carry it either.
  local chars=abcdefghijklmnopqrstuvwxyz0123456789 k
  for i in 1 2 3 4 5 6 7 8 9 10; do
    id=
    for k in 1 2 3 4; do id+=${chars:$((RANDOM % 36)):1}; done
    if ! ip netns list 2>/dev/null | grep -q "^$LAB__FAMILY$id-" && mkdir "$LAB_ROOT/$LAB__FAMILY$id" 2>/dev/null; then
      break
    fi
    id=
  done
  if [ -z "$id" ]; then
    lab__skip "cannot pick a unique lab prefix under $LAB_ROOT"
    return 77
  fi
  LAB_PFX=$LAB__FAMILY$id
  LAB_DIR=$LAB_ROOT/$LAB_PFX
  LAB_NAME=$name
  LAB__OWNER=$BASHPID
  # $BASHPID inside $(...) would be the command substitution's own pid: the start time
  # must be this shell's, or lab_cleanup_stale takes a live lab for a dead one.
  echo "$LAB__OWNER $(lab__starttime "$LAB__OWNER") $name" >"$LAB_DIR/owner"
  declare -gA LAB__IP=() LAB__IDX=() LAB__RATE=() LAB__DELAY=() LAB__CG=() LAB__QUEUE=() LAB__QPID=()
  declare -ga LAB_HOSTS=() LAB__PIDS=()
  LAB__NEXT_Q=1
  LAB__NLOG=0
  LAB_PID=
  LAB_LOG=
  LAB__HUB=$LAB_PFX-hub
  LAB__BR=${LAB_PFX}br

  # Traps first: from here on, whatever happens, what was made goes away.
  local prev
  prev=$(trap -p EXIT)
  LAB__PREV_EXIT=
  if [ -n "$prev" ]; then
    eval "set -- $prev"
    LAB__PREV_EXIT=$3
  fi
  trap 'lab__on_exit' EXIT
  trap 'lab__on_signal INT 130' INT
  trap 'lab__on_signal TERM 143' TERM

  if ! ip netns add "$LAB__HUB" 2>"$LAB_DIR/init.err"; then
    lab__skip "cannot create a network namespace: $(head -1 "$LAB_DIR/init.err")"
    lab_teardown
    return 77
  fi
  if ! { ip -n "$LAB__HUB" link set lo up && ip -n "$LAB__HUB" link add "$LAB__BR" type bridge &&
    ip -n "$LAB__HUB" link set "$LAB__BR" up; } 2>"$LAB_DIR/init.err"; then
    lab__skip "cannot create a bridge in a namespace: $(head -1 "$LAB_DIR/init.err")"
    lab_teardown
    return 77
  fi
  if ! tc -n "$LAB__HUB" qdisc add dev lo root tbf rate 1gbit burst 64kb latency 10ms 2>"$LAB_DIR/init.err"; then
    lab__skip "tc cannot shape a link (tbf): $(head -1 "$LAB_DIR/init.err")"
    lab_teardown
    return 77
  fi
  tc -n "$LAB__HUB" qdisc del dev lo root 2>/dev/null
  return 0
}

lab__on_exit() {
  local rc=$? # first: the status the shell is exiting with
  set +eu +o pipefail
  lab_teardown
  if [ -n "${LAB__PREV_EXIT:-}" ]; then
    eval "$LAB__PREV_EXIT"
  fi
  exit "$rc"
}

lab__on_signal() {
  set +eu +o pipefail
  lab__err "caught SIG$1: tearing the lab down"
  lab_teardown
  trap - EXIT
  if [ -n "${LAB__PREV_EXIT:-}" ]; then
    eval "$LAB__PREV_EXIT"
  fi
  exit "$2"
}

# lab__known NAME: NAME is a host of this lab (else a message naming the hosts there are).
lab__known() {
  local -  # the caller's set -e / -u / pipefail stay outside: errors are returned
  set +eu +o pipefail
  if [ -z "${LAB_PFX:-}" ]; then
    lab__err "no lab: call lab_init first"
    return 1
  fi
  if [ -z "${1:-}" ] || [ -z "${LAB__IP[$1]:-}" ]; then
    lab__err "no host '${1:-}' in this lab (hosts: ${LAB_HOSTS[*]:-none}); lab_host NAME IP makes one"
    return 1
  fi
}

# lab_ns NAME / lab_ip NAME / lab_ifname NAME: the host's namespace, address, interface.
lab_ns() { lab__known "${1:-}" && echo "$LAB_PFX-$1"; }
lab_ip() { lab__known "${1:-}" && echo "${LAB__IP[$1]}"; }
lab_ifname() { lab__known "${1:-}" && echo "${LAB_PFX}h${LAB__IDX[$1]}"; }

# lab_host NAME IP: a host: namespace glabXXXX-NAME with loopback up, joined to the hub's
# bridge by a veth pair, with address 10.77.0.X/24. IP is X (1-254) or 10.77.0.X.
lab_host() {
  local -  # the caller's set -e / -u / pipefail stay outside: errors are returned
  set +eu +o pipefail
  local name=${1:-} ip=${2:-} x h
  if [ -z "${LAB_PFX:-}" ]; then
    lab__err "lab_host: no lab: call lab_init first"
    return 1
  fi
  if ! [[ $name =~ ^[a-z][a-z0-9_]{0,15}$ ]] || [ "$name" = hub ]; then
    lab__err "lab_host: '$name' is not a host name: use 1-16 of a-z, 0-9, _ starting with a letter (not 'hub')"
    return 1
  fi
  if [ -n "${LAB__IP[$name]:-}" ]; then
    lab__err "lab_host: host '$name' exists already (${LAB__IP[$name]})"
    return 1
  fi
  x=${ip#"$LAB_SUBNET".}
  if ! [[ $x =~ ^[0-9]{1,3}$ ]] || [ "$x" -lt 1 ] || [ "$x" -gt 254 ]; then
    lab__err "lab_host: '$ip' is not an address of the lab: write X or $LAB_SUBNET.X with X from 1 to 254"
    return 1
  fi
  ip=$LAB_SUBNET.$x
  for h in "${LAB_HOSTS[@]}"; do
    if [ "${LAB__IP[$h]}" = "$ip" ]; then
      lab__err "lab_host: $ip is host '$h' already"
      return 1
    fi
  done
  local idx=$((${#LAB_HOSTS[@]} + 1)) ns=$LAB_PFX-$name
  local hif=${LAB_PFX}h$idx bif=${LAB_PFX}b$idx
  if ! {
    ip netns add "$ns" &&
      ip -n "$ns" link set lo up &&
      ip link add "$hif" netns "$ns" type veth peer name "$bif" netns "$LAB__HUB" &&
      ip -n "$ns" addr add "$ip/24" dev "$hif" &&
      ip -n "$ns" link set "$hif" up &&
      ip -n "$LAB__HUB" link set "$bif" master "$LAB__BR" &&
      ip -n "$LAB__HUB" link set "$bif" up
  }; then
    lab__err "lab_host: cannot make host '$name' ($ip)"
    return 1
  fi
  # No IPv6 chatter (router solicitations, DAD) in the measurements.
  ip netns exec "$ns" sh -c 'echo 1 >/proc/sys/net/ipv6/conf/all/disable_ipv6' 2>/dev/null
  LAB_HOSTS+=("$name")
  LAB__IP[$name]=$ip
  LAB__IDX[$name]=$idx
  LAB__RATE[$name]=0
  LAB__DELAY[$name]=0
  # Delays are per pair of hosts: a new host needs its rules too.
  lab__apply_delays
}

# lab__rate_bits RATE: bits per second for 20mbit, 1gbit, 500kbit, 1.5mbit, 2000000
# (SI, decimal; also k, m, g); 0 for 0, none, off, unlimited.
lab__rate_bits() {
  local -  # the caller's set -e / -u / pipefail stay outside: errors are returned
  set +eu +o pipefail
  local r=${1,,}
  case "$r" in
  0 | none | off | unlimited)
    echo 0
    return 0
    ;;
  esac
  if ! [[ $r =~ ^([0-9]+(\.[0-9]+)?)(bit|kbit|mbit|gbit|k|m|g)?$ ]]; then
    lab__err "'$1' is not a rate: write bits per second as 20mbit, 1gbit, 500kbit (or 0 for unlimited)"
    return 1
  fi
  local mult=1
  case "${BASH_REMATCH[3]}" in
  kbit | k) mult=1000 ;;
  mbit | m) mult=1000000 ;;
  gbit | g) mult=1000000000 ;;
  esac
  awk -v n="${BASH_REMATCH[1]}" -v m="$mult" 'BEGIN { v = n * m; if (v < 8000) exit 1; printf "%.0f\n", v }' || {
    lab__err "'$1': a rate must be at least 8kbit"
    return 1
  }
}

# lab__shape NS DEV BITS DELAY_MS: tbf on DEV's egress (BITS 0: none).
lab__shape() {
  local -  # the caller's set -e / -u / pipefail stay outside: errors are returned
  set +eu +o pipefail
  local ns=$1 dev=$2 bits=$3 delay=$4
  tc -n "$ns" qdisc del dev "$dev" root 2>/dev/null
  [ "$bits" = 0 ] && return 0
  # burst: 4 ms at the rate, at least 32 KiB (one GSO packet and then some); queue: 50 ms
  # plus two round trips of this link's delay, so that TCP can fill the link.
  local burst limit
  read -r burst limit < <(awk -v b="$bits" -v d="$delay" 'BEGIN {
    B = b / 8; burst = B * 0.004; if (burst < 32768) burst = 32768
    limit = B * (0.05 + 4 * d / 1000) + burst
    printf "%.0f %.0f\n", burst, limit }')
  tc -n "$ns" qdisc add dev "$dev" root tbf rate "${bits}bit" burst "$burst" limit "$limit"
}

# lab_link NAME RATE DELAY_MS: shapes the link between host NAME and the hub, both ways:
# RATE (20mbit, 1gbit, 0 for unlimited) with tbf on the egress of both veth ends, and
# DELAY_MS (0 for none; decimals allowed) each way. A packet between two hosts crosses both
# links: from A to B it is delayed DELAY(A) + DELAY(B) (held on B's INPUT by nfq_delay),
# so the round trip between them is 2 x (DELAY(A) + DELAY(B)). Can be called again to
# change a link (with traffic flowing).
lab_link() {
  local -  # the caller's set -e / -u / pipefail stay outside: errors are returned
  set +eu +o pipefail
  lab__known "${1:-}" || return 1
  local name=$1 bits delay=${3:-}
  bits=$(lab__rate_bits "${2:-}") || return 1
  if ! [[ $delay =~ ^[0-9]+(\.[0-9]+)?$ ]] || awk -v d="$delay" 'BEGIN { exit !(d > 60000) }'; then
    lab__err "lab_link: '$delay' is not a delay: write milliseconds from 0 to 60000 (decimals allowed)"
    return 1
  fi
  delay=$(awk -v d="$delay" 'BEGIN { printf "%g\n", d }')
  if [ "$delay" != 0 ] && ! lab__nfq_delay >/dev/null; then
    lab__err "lab_link: a delay needs tests/lab/nfq_delay (built when libnetfilter-queue-dev is installed): build it, or set LAB_NFQ_DELAY"
    return 1
  fi
  local idx=${LAB__IDX[$name]}
  lab__shape "$LAB_PFX-$name" "${LAB_PFX}h$idx" "$bits" "$delay" &&
    lab__shape "$LAB__HUB" "${LAB_PFX}b$idx" "$bits" "$delay" || {
    lab__err "lab_link: tc could not shape $name's link to $2"
    return 1
  }
  LAB__RATE[$name]=$bits
  LAB__DELAY[$name]=$delay
  lab__apply_delays
}

# lab__delay_queue NAME TOTAL_MS: sets LAB__Q to the queue number of a running nfq_delay in
# host NAME's namespace that holds packets TOTAL_MS (started on first use). Not through
# $(...): the pid and the queue must be recorded in the lab's shell.
lab__delay_queue() {
  local -  # the caller's set -e / -u / pipefail stay outside: errors are returned
  set +eu +o pipefail
  local name=$1 total=$2 key="$1|$2" ns=$LAB_PFX-$1
  LAB__Q=${LAB__QUEUE[$key]:-}
  [ -n "$LAB__Q" ] && return 0
  local prog q log rt=--rt
  prog=$(lab__nfq_delay) || return 1
  q=$LAB__NEXT_Q
  LAB__NEXT_Q=$((q + 1))
  [ "${LAB_NFQ_RT:-1}" = 0 ] && rt=
  log=$LAB_DIR/nfq_delay.$name.q$q.log
  ip netns exec "$ns" "$prog" --queue "$q" --delay "$total" $rt >"$log" 2>&1 </dev/null &
  LAB__PIDS+=($!)
  if ! lab_wait_line "$log" 'holding packets' 5 $! >/dev/null; then
    lab__err "nfq_delay did not start in $ns (queue $q): $(tail -2 "$log")"
    return 1
  fi
  LAB__QUEUE[$key]=$q
  LAB__QPID[$key]=$!
  LAB__Q=$q
}

# lab__apply_delays: (re)writes every host's LABDELAY chain (one rule per peer whose path
# has a delay), atomically per namespace with iptables-restore.
lab__apply_delays() {
  local -  # the caller's set -e / -u / pipefail stay outside: errors are returned
  set +eu +o pipefail
  local h s total rules key
  local -A used=()
  for h in "${LAB_HOSTS[@]}"; do
    rules="*filter"$'\n'":LABDELAY - [0:0]"$'\n'
    for s in "${LAB_HOSTS[@]}"; do
      [ "$s" = "$h" ] && continue
      total=$(awk -v a="${LAB__DELAY[$h]}" -v b="${LAB__DELAY[$s]}" 'BEGIN { printf "%g\n", a + b }')
      [ "$total" = 0 ] && continue
      lab__delay_queue "$h" "$total" || return 1
      used["$h|$total"]=1
      rules+="-A LABDELAY -s ${LAB__IP[$s]}/32 -j NFQUEUE --queue-num $LAB__Q --queue-bypass"$'\n'
    done
    rules+="COMMIT"$'\n'
    if ! ip netns exec "$LAB_PFX-$h" iptables -n -L LABDELAY >/dev/null 2>&1; then
      ip netns exec "$LAB_PFX-$h" iptables -N LABDELAY &&
        ip netns exec "$LAB_PFX-$h" iptables -I INPUT -j LABDELAY || {
        lab__err "cannot add iptables rules in host $h"
        return 1
      }
    fi
    printf '%s' "$rules" | ip netns exec "$LAB_PFX-$h" iptables-restore --noflush || {
      lab__err "iptables-restore failed in host $h"
      return 1
    }
  done
  # Delay programs no rule sends packets to any more (a link changed) stop; what they
  # still hold, they release as they exit.
  for key in "${!LAB__QUEUE[@]}"; do
    [ -n "${used[$key]:-}" ] && continue
    lab_stop "${LAB__QPID[$key]}" 2
    unset "LAB__QUEUE[$key]" "LAB__QPID[$key]"
  done
}

# lab_link_down NAME / lab_link_up NAME: cuts host NAME off the hub (a dead cable) and back.
lab_link_down() { lab__known "${1:-}" && ip -n "$LAB__HUB" link set "${LAB_PFX}b${LAB__IDX[$1]}" down; }
lab_link_up() { lab__known "${1:-}" && ip -n "$LAB__HUB" link set "${LAB_PFX}b${LAB__IDX[$1]}" up; }

# lab_have_delay / lab_have_cpu_quota: whether lab_link can delay and lab_cpu_quota can
# limit here (for tests that skip a part).
lab_have_delay() { lab__nfq_delay >/dev/null; }
lab_have_cpu_quota() { lab__cgroot >/dev/null; }

# lab_cpu_quota NAME PERCENT: processes of host NAME (those already running in it, and
# every later lab_exec / lab_run_bg) get PERCENT of one CPU (150: one and a half CPUs;
# 0 or none: no limit), through a cgroup glabXXXX-NAME (v1 cpu.cfs_quota_us or v2 cpu.max,
# period LAB_CPU_PERIOD_US, default 100000: 100 ms). A call shorter than a few periods
# runs at full speed or waits for the next period depending on where in the period it
# starts; a shorter period (10000) makes a quota'd host a steadily slower machine.
lab_cpu_quota() {
  local -  # the caller's set -e / -u / pipefail stay outside: errors are returned
  set +eu +o pipefail
  lab__known "${1:-}" || return 1
  local name=$1 pct=${2:-} ver root cg quota p
  if ! [[ ${pct,,} =~ ^([0-9]+(\.[0-9]+)?|none)$ ]]; then
    lab__err "lab_cpu_quota: '$pct' is not a percentage of one CPU: write 25, 150 or none"
    return 1
  fi
  read -r ver root < <(lab__cgroot) || true
  if [ -z "${ver:-}" ]; then
    lab__err "lab_cpu_quota: no cgroup cpu controller is mounted (v1 'cpu' or v2 with cpu in cgroup.controllers)"
    return 1
  fi
  cg=$root/$LAB_PFX-$name
  local period=${LAB_CPU_PERIOD_US:-100000}
  if ! [[ $period =~ ^[0-9]+$ ]] || [ "$period" -lt 1000 ] || [ "$period" -gt 1000000 ]; then
    lab__err "lab_cpu_quota: LAB_CPU_PERIOD_US='$period': write microseconds from 1000 to 1000000"
    return 1
  fi
  if [ "${pct,,}" = none ] || [ "$pct" = 0 ]; then
    quota=-1
  else
    # The kernel's smallest quota is 1 ms.
    quota=$(awk -v p="$pct" -v t="$period" 'BEGIN { q = int(p * t / 100 + 0.5); if (q < 1000) q = 1000; print q }')
  fi
  if [ "$ver" = v2 ]; then
    grep -qw cpu "$root/cgroup.subtree_control" 2>/dev/null || echo +cpu >"$root/cgroup.subtree_control" || {
      lab__err "lab_cpu_quota: cannot enable the cpu controller in $root"
      return 1
    }
    mkdir -p "$cg" && if [ "$quota" = -1 ]; then echo "max $period" >"$cg/cpu.max"; else echo "$quota $period" >"$cg/cpu.max"; fi
  else
    # No limit first: the kernel refuses a period that makes the current quota invalid.
    mkdir -p "$cg" && echo -1 >"$cg/cpu.cfs_quota_us" && echo "$period" >"$cg/cpu.cfs_period_us" &&
      echo "$quota" >"$cg/cpu.cfs_quota_us"
  fi || {
    lab__err "lab_cpu_quota: cannot set a quota in $cg"
    return 1
  }
  LAB__CG[$name]=$cg
  # What already runs on the host (a server started before the quota) slows down too.
  for p in $(ip netns pids "$LAB_PFX-$name" 2>/dev/null); do
    echo "$p" >"$cg/cgroup.procs" 2>/dev/null
  done
  return 0
}

# lab__in NAME: sets LAB__IN to the command prefix that runs a program in host NAME's
# network namespace. nsenter enters the network namespace alone; `ip netns exec` would
# also mount a fresh /sys, hiding /sys/fs/cgroup, where a program learns its CPU quota
# (as it does in a container). Both exec the program: its pid is the one started.
lab__in() {
  if command -v nsenter >/dev/null 2>&1; then
    LAB__IN=(nsenter "--net=/run/netns/$LAB_PFX-$1" --)
  else
    LAB__IN=(ip netns exec "$LAB_PFX-$1")
  fi
}

# lab_exec NAME CMD...: runs CMD in host NAME (in the foreground, under its CPU quota);
# returns CMD's status. CMD is a program: for shell code, lab_exec NAME bash -c '...'.
lab_exec() {
  local -  # the caller's set -e / -u / pipefail stay outside: errors are returned
  set +eu +o pipefail
  lab__known "${1:-}" || return 1
  local name=$1 cg LAB__IN
  shift
  lab__in "$name"
  cg=${LAB__CG[$name]:-}
  if [ -n "$cg" ]; then
    (echo "$BASHPID" >"$cg/cgroup.procs" && exec "${LAB__IN[@]}" "$@")
  else
    "${LAB__IN[@]}" "$@"
  fi
}

# lab_run_bg NAME CMD...: starts CMD in host NAME in the background (under its CPU quota),
# stdout and stderr to a log in LAB_DIR. Sets LAB_PID (its pid) and LAB_LOG (the log); the
# teardown stops it. Call it in the lab's shell (not in $(...)): it records the pid.
lab_run_bg() {
  local -  # the caller's set -e / -u / pipefail stay outside: errors are returned
  set +eu +o pipefail
  lab__known "${1:-}" || return 1
  local name=$1 cg LAB__IN
  shift
  lab__in "$name"
  cg=${LAB__CG[$name]:-}
  LAB__NLOG=$((LAB__NLOG + 1))
  LAB_LOG=$LAB_DIR/$name.$LAB__NLOG.$(basename "${1:-cmd}").log
  if [ -n "$cg" ]; then
    (echo "$BASHPID" >"$cg/cgroup.procs" && exec "${LAB__IN[@]}" "$@") >"$LAB_LOG" 2>&1 </dev/null &
  else
    "${LAB__IN[@]}" "$@" >"$LAB_LOG" 2>&1 </dev/null &
  fi
  LAB_PID=$!
  LAB__PIDS+=("$LAB_PID")
}

# lab_start NAME CMD...: lab_run_bg, then waits (LAB_START_TIMEOUT s, default 15) for the
# "listening on HOST:PORT" line that gridrpcd, gridmetad and lab_net.py serve print once
# ready; sets LAB_PID, LAB_LOG and LAB_ADDR (HOST:PORT). Fails (1) when the server exits
# or stays silent, printing its log's tail.
lab_start() {
  local -  # the caller's set -e / -u / pipefail stay outside: errors are returned
  set +eu +o pipefail
  LAB_ADDR=
  lab_run_bg "$@" || return 1
  lab_wait_line "$LAB_LOG" '^listening on ' "${LAB_START_TIMEOUT:-15}" "$LAB_PID" || return 1
  LAB_ADDR=$(sed -n 's/^listening on //p' "$LAB_LOG" | head -1)
}

# lab_wait_line FILE REGEX TIMEOUT [PID]: waits until a line of FILE matches the extended
# REGEX (0), for at most TIMEOUT seconds (1, with a message and FILE's tail), or until PID
# has exited (1: it died before printing it).
lab_wait_line() {
  local -  # the caller's set -e / -u / pipefail stay outside: errors are returned
  set +eu +o pipefail
  local file=${1:-} re=${2:-} timeout=${3:-10} pid=${4:-} n i
  n=$(awk -v t="$timeout" 'BEGIN { n = int(t * 20 + 0.999); print (n < 1 ? 1 : n) }')
  for ((i = 0; i < n; i++)); do
    grep -Eq -- "$re" "$file" 2>/dev/null && return 0
    if [ -n "$pid" ] && ! lab__alive "$pid"; then
      grep -Eq -- "$re" "$file" 2>/dev/null && return 0
      lab__err "process $pid exited before printing /$re/ in $file:"
      tail -5 "$file" 2>/dev/null | sed 's/^/lab:   /' >&2
      return 1
    fi
    sleep 0.05
  done
  lab__err "timed out after $timeout s waiting for /$re/ in $file:"
  tail -5 "$file" 2>/dev/null | sed 's/^/lab:   /' >&2
  return 1
}

# lab_stop PID [TIMEOUT]: SIGTERM, then SIGKILL after TIMEOUT seconds (default 5). Returns
# 0 once the process is gone (1 when no PID is given); its exit status, when it is a child
# of this shell, goes to LAB_STATUS (143: ended by the SIGTERM).
lab_stop() {
  local -  # the caller's set -e / -u / pipefail stay outside: errors are returned
  set +eu +o pipefail
  local pid=${1:-} t=${2:-5} i n
  LAB_STATUS=
  [ -n "$pid" ] || return 1
  if kill -TERM "$pid" 2>/dev/null; then
    n=$(awk -v t="$t" 'BEGIN { print int(t * 20) }')
    for ((i = 0; i < n; i++)); do
      lab__alive "$pid" || break
      sleep 0.05
    done
    kill -KILL "$pid" 2>/dev/null
  fi
  wait "$pid" 2>/dev/null
  LAB_STATUS=$?
  return 0
}

# lab_info: the hosts, their links and quotas, one line each.
lab_info() {
  local -  # the caller's set -e / -u / pipefail stay outside: errors are returned
  set +eu +o pipefail
  local h q
  printf '%-10s %-14s %-18s %-10s %-10s %s\n' host address namespace rate delay_ms cpu
  for h in "${LAB_HOSTS[@]}"; do
    q=unlimited
    if [ -n "${LAB__CG[$h]:-}" ]; then
      if [ -f "${LAB__CG[$h]}/cpu.max" ]; then
        q=$(awk '{ print ($1 == "max") ? "unlimited" : $1 / $2 * 100 "%" }' "${LAB__CG[$h]}/cpu.max")
      else
        q=$(awk -v t="$(cat "${LAB__CG[$h]}/cpu.cfs_period_us")" '{ print ($1 < 0) ? "unlimited" : $1 / t * 100 "%" }' "${LAB__CG[$h]}/cpu.cfs_quota_us")
      fi
    fi
    printf '%-10s %-14s %-18s %-10s %-10s %s\n' "$h" "${LAB__IP[$h]}" "$LAB_PFX-$h" \
      "$(awk -v b="${LAB__RATE[$h]}" 'BEGIN { if (b == 0) print "unlimited"; else if (b >= 1e9) print b / 1e9 "gbit"; else if (b >= 1e6) print b / 1e6 "mbit"; else print b / 1e3 "kbit" }')" \
      "${LAB__DELAY[$h]}" "$q"
  done
}

# lab__cleanup_prefix PFX [PIDS...]: removes everything named PFX: processes in its
# namespaces and cgroups (and the given pids when they are still children of this shell),
# the namespaces (their veths, bridge and iptables rules go with them), cgroups, stray
# interfaces, the working folder (kept when LAB_KEEP=1).
lab__cleanup_prefix() {
  local -
  set +e +u
  local pfx=$1 ns nss pids p d i ver root
  shift
  nss=$(ip netns list 2>/dev/null | awk '{ print $1 }' | grep "^$pfx-")
  read -r ver root < <(lab__cgroot 2>/dev/null)
  pids=
  for ns in $nss; do
    pids+=" $(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')"
  done
  if [ -n "$root" ]; then
    for d in "$root/$pfx"-*; do
      [ -f "$d/cgroup.procs" ] && pids+=" $(tr '\n' ' ' <"$d/cgroup.procs")"
    done
  fi
  for p in "$@"; do
    [ "$(awk '/^PPid:/ { print $2 }' "/proc/$p/status" 2>/dev/null)" = "$BASHPID" ] && pids+=" $p"
  done
  pids=$(echo "$pids" | tr ' ' '\n' | grep -E '^[0-9]+$' | grep -vx "$BASHPID" | sort -u | tr '\n' ' ')
  if [ -n "${pids// /}" ]; then
    kill -TERM $pids 2>/dev/null
    for ((i = 0; i < 60; i++)); do
      local alive=
      for p in $pids; do lab__alive "$p" && alive+=" $p"; done
      [ -z "$alive" ] && break
      sleep 0.05
    done
    [ -n "$alive" ] && kill -KILL $alive 2>/dev/null
    for p in $pids; do
      wait "$p" 2>/dev/null
    done
    for ((i = 0; i < 40; i++)); do
      alive=
      for p in $pids; do lab__alive "$p" && alive+=" $p"; done
      [ -z "$alive" ] && break
      sleep 0.05
    done
  fi
  for ns in $nss; do
    ip netns del "$ns" 2>/dev/null || lab__err "could not delete namespace $ns"
  done
  for d in $(ip -o link show 2>/dev/null | awk -F': ' '{ print $2 }' | sed 's/@.*//' | grep "^$pfx"); do
    ip link del "$d" 2>/dev/null
  done
  if [ -n "$root" ]; then
    for d in "$root/$pfx"-*; do
      [ -d "$d" ] || continue
      for ((i = 0; i < 40; i++)); do
        rmdir "$d" 2>/dev/null && break
        sleep 0.05
      done
      [ -d "$d" ] && lab__err "could not remove cgroup $d"
    done
  fi
  if [ -d "$LAB_ROOT/$pfx" ] && { [ "${LAB_KEEP:-0}" = 1 ] || [ -f "$LAB_ROOT/$pfx/kept" ]; }; then
    [ -f "$LAB_ROOT/$pfx/kept" ] || lab__err "LAB_KEEP=1: logs kept in $LAB_ROOT/$pfx"
    rm -f "$LAB_ROOT/$pfx/owner"
    : >"$LAB_ROOT/$pfx/kept"
  else
    rm -rf "${LAB_ROOT:?}/$pfx"
  fi
}

# lab_teardown: removes everything this shell's lab made (idempotent); the traps call it.
lab_teardown() {
  local -
  set +e +u
  [ -n "${LAB_PFX:-}" ] || return 0
  # Only the shell that made the lab tears it down (not a $(...) or ( ) inside it).
  [ "${LAB__OWNER:-}" = "$BASHPID" ] || return 0
  lab__cleanup_prefix "$LAB_PFX" "${LAB__PIDS[@]}"
  trap - INT TERM
  if [ -n "${LAB__PREV_EXIT:-}" ]; then trap -- "$LAB__PREV_EXIT" EXIT; else trap - EXIT; fi
  LAB_LAST_PFX=$LAB_PFX
  LAB_PFX=
  LAB_HOSTS=()
  LAB__PIDS=()
  return 0
}

# lab_cleanup_stale: removes the leftovers of labs whose shell is gone (a crash, SIGKILL):
# namespaces, cgroups, interfaces and folders named glabXXXX. Labs whose owner still runs
# (in parallel, another test) are left alone.
lab_cleanup_stale() {
  local -
  set +e +u
  local ver root pfxs p owner pid st n=0
  read -r ver root < <(lab__cgroot 2>/dev/null)
  pfxs=$({
    ip netns list 2>/dev/null | awk '{ print $1 }'
    [ -n "$root" ] && ls "$root" 2>/dev/null
    ls "$LAB_ROOT" 2>/dev/null
    ip -o link show 2>/dev/null | awk -F': ' '{ print $2 }'
  } | grep -oE "^$LAB__FAMILY[0-9a-z]{4}" | sort -u)
  for p in $pfxs; do
    [ "$p" = "${LAB_PFX:-}" ] && continue
    owner=$(cat "$LAB_ROOT/$p/owner" 2>/dev/null)
    # A folder just made, whose owner line is not written yet: a lab starting right now.
    if [ -z "$owner" ] && [ -d "$LAB_ROOT/$p" ] && [ ! -f "$LAB_ROOT/$p/kept" ] &&
      [ -n "$(find "$LAB_ROOT/$p" -maxdepth 0 -newermt '-10 seconds' 2>/dev/null)" ]; then
      continue
    fi
    # Kept logs (LAB_KEEP=1) with nothing else left are not leftovers.
    if [ -f "$LAB_ROOT/$p/kept" ] && ! ip netns list 2>/dev/null | grep -q "^$p-"; then
      continue
    fi
    if [ -n "$owner" ]; then
      read -r pid st _ <<<"$owner"
      if [ -n "$pid" ] && [ "$(lab__starttime "$pid")" = "$st" ]; then
        continue
      fi
    fi
    lab__cleanup_prefix "$p"
    echo "lab: removed the leftovers of lab $p"
    n=$((n + 1))
  done
  return 0
}
