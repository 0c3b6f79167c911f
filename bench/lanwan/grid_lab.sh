# grid_lab.sh: what bench/lanwan/sched.sh and ep_meta.sh share (sourced, after
# tests/lab/lab.sh and lab_init): the command line's common part, a grid of one gridmetad
# and N gridrpcd in lab hosts, the metaserver's decisions from its JSON /api/status, and
# the weight that makes a CPU quota the share a server really gets on a busy machine.
# Needs B (the build folder) and the lab's hosts: "meta" at $GL_META_IP, servers s1..sN.

GL_META_IP=10.77.0.2
GL_META_PORT=7100
GL_META= GL_META_HTTP= GL_META_PID= GL_SRV_PIDS=()

# gl_need_root PROG: exit 77 with a message when not root (the lab needs namespaces).
gl_need_root() {
  if [ "$(id -u)" != 0 ]; then
    echo "$1: skipped: needs root (network namespaces, tc, cgroups for the lab); run it as root"
    exit 77
  fi
}

# gl_build PROG TOP: sets B (BUILD_DIR, else top_builddir, else TOP/build) and checks the
# programs; builds bench/meta_lab_client on demand. Exit 1 with what to do otherwise.
gl_build() {
  local prog=$1 top=$2 f
  B=$(cd "${BUILD_DIR:-${top_builddir:-$top/build}}" 2>/dev/null && pwd) || {
    echo "$prog: no build folder ${BUILD_DIR:-${top_builddir:-$top/build}}: build first (README.md)" >&2
    exit 1
  }
  for f in gridmetad gridrpcd gridrpc stubs/.libs/nas.so stubs/.libs/linalg.so; do
    [ -e "$B/$f" ] || {
      echo "$prog: $B/$f is missing: run make in $B" >&2
      exit 1
    }
  done
  # Rebuilt when older than its source (make decides), so a stale client never runs.
  make -C "$B" -s bench/meta_lab_client >/dev/null || {
    echo "$prog: could not build bench/meta_lab_client (make -C $B bench/meta_lab_client)" >&2
    exit 1
  }
  CLIENT=$B/bench/meta_lab_client
}

# gl_weight HOST: a high CPU weight for the host's cgroup (v1 cpu.shares, v2 cpu.weight).
# The quota caps a server; on a machine other jobs share, the weight lets it also get its
# quota while they run, so that S servers at Q% are S x Q% of a CPU, as the study assumes.
# WEIGHT: times the default (1024 shares, weight 100); 8 unless given.
gl_weight() {
  local cg=${LAB__CG[$1]:-} w=${2:-8} # the host's cgroup, made by lab_cpu_quota
  [ -n "$cg" ] || return 0
  if [ -f "$cg/cpu.shares" ]; then
    echo $((1024 * w)) >"$cg/cpu.shares"
  elif [ -f "$cg/cpu.weight" ]; then
    echo $((100 * w)) >"$cg/cpu.weight"
  fi 2>/dev/null || true
}

# gl_weight_unlimited HOST...: no quota and eight times the servers' weight: the client
# and metaserver hosts, which in the study are machines of their own. Without it, servers
# whose quotas add up to the whole machine (16 x 12.5% on 2 cores) leave the client a
# sliver of CPU, and it submits its calls 5 ms apart instead of 1-2.
gl_weight_unlimited() {
  local h
  for h in "$@"; do
    lab_cpu_quota "$h" none && gl_weight "$h" 64
  done
}

# gl_in HOST SITE CMD...: CMD in client host HOST as site SITE, routed by the metaserver.
gl_in() {
  local h=$1 site=$2
  shift 2
  lab_exec "$h" env GRIDRPC_METASERVER="$GL_META" GRIDRPC_SITE="$site" GRIDRPC_QUIET=1 "$@"
}

# gl_start TAG N CHECK_HOST [GRIDRPCD_ARGS...]: a fresh gridmetad (its own registry) and
# servers s1..sN (one worker, one BLAS thread: the quota sets the speed); waits, bounded,
# until CHECK_HOST sees all N up. The servers log each call (queue and run times) in
# their lab log, $LAB_DIR/*.log.
gl_start() {
  local tag=$1 n=$2 chk=$3 i up=0
  shift 3
  GL_META_PORT=$((GL_META_PORT + 1))
  lab_start meta "$B/gridmetad" --host $GL_META_IP --insecure --port $GL_META_PORT --db "$LAB_DIR/$tag.db" \
    --heartbeat 250ms --http $((GL_META_PORT + 100)) --http-host $GL_META_IP ${GRIDMETAD_ARGS:-} || return 1
  GL_META_PID=$LAB_PID
  GL_META=$GL_META_IP:$GL_META_PORT GL_META_HTTP=$GL_META_IP:$((GL_META_PORT + 100))
  GL_SRV_PIDS=()
  for ((i = 1; i <= n; i++)); do
    lab_start "s$i" env OPENBLAS_NUM_THREADS=1 "$B/gridrpcd" --host "$(lab_ip "s$i")" --insecure --port 7000 \
      --module-dir "$B/stubs/.libs" --threads 1 --metaserver "$GL_META" --name "s$i" "$@" || return 1
    GL_SRV_PIDS+=("$LAB_PID")
  done
  for _ in $(seq 1 80); do
    up=$(gl_in "$chk" "$chk" "$B/gridrpc" --timeout 2 --json status 2>/dev/null |
      python3 -c 'import json,sys; print(sum(s["state"]=="up" for s in json.load(sys.stdin)["servers"]))' 2>/dev/null)
    [ "$up" = "$n" ] && return 0
    sleep 0.25
  done
  echo "grid_lab: only ${up:-0} of $n servers came up within 20 s (logs: $LAB_DIR)" >&2
  return 1
}

gl_stop() {
  local p
  for p in "${GL_SRV_PIDS[@]}"; do lab_stop "$p" 5; done
  [ -n "$GL_META_PID" ] && lab_stop "$GL_META_PID" 5
  GL_SRV_PIDS=() GL_META_PID=
}

# gl_links_known HOST SITE N [TRIES]: waits (bounded: TRIES x 0.25 s, default 60) until
# the metaserver knows the bandwidth from SITE to N servers (the client's link probe at
# its first contact, and the calls' REPORTs); prints how many it knows.
gl_links_known() {
  local k=0
  for _ in $(seq 1 "${4:-60}"); do
    k=$(gl_in "$1" "$2" "$B/gridrpc" --timeout 2 --json status 2>/dev/null |
      python3 -c 'import json,sys; print(sum((s["bandwidth"] or 0) > 0 for s in json.load(sys.stdin)["servers"]))' 2>/dev/null)
    [ "$k" = "$3" ] && break
    sleep 0.25
  done
  echo "${k:-0}"
}

# gl_probe HOST SITE N: makes sure the metaserver knows SITE's links to the N servers
# before anything is measured. A client probes the links it does not know at its first
# contact, on a background thread cut when it exits; probing servers busy under a CPU
# quota is slow, so a short process leaves links unknown and the next, measured, one
# would probe them while its calls run. Here processes of tiny calls (EP runs of 2^12
# pairs: below the millisecond under which the metaserver learns no speed from a run,
# so they leave the servers' measured speeds alone) live long enough to finish the
# probe, at most 6 of them; prints how many links are known.
gl_probe() {
  local k=0 spec
  spec=$(printf 'ep:12,%.0s' $(seq 1 60))
  for _ in 1 2 3 4 5 6; do
    gl_in "$1" "$2" timeout 60 "$CLIENT" mix probe "${spec%,}" >/dev/null 2>&1
    k=$(gl_links_known "$1" "$2" "$3" 4)
    [ "$k" = "$3" ] && break
  done
  echo "$k"
}

# gl_decisions HOST TAG FROM FILE CSV: the metaserver's decisions after id FROM (GET
# /api/status), appended to FILE one line each with every candidate's estimate, and to
# CSV as TAG,id,policy,function,site,chosen,held_s,estimates; prints the newest decision
# id, how many were held (every server full) and their seconds held in all.
gl_decisions() {
  lab_exec "$1" python3 - "$GL_META_HTTP" "$3" "$2" "$4" "$5" <<'EOF'
import json, sys, urllib.request
url, since, tag, path, csv = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
st = json.load(urllib.request.urlopen("http://%s/api/status" % url, timeout=5))
name = {s["id"]: s["name"] for s in st["servers"]}
new = sorted((d for d in st["decisions"] if d["id"] > since), key=lambda d: d["id"])
with open(path, "a") as f, open(csv, "a") as c:
    f.write("%s servers: %s\n" % (tag, " ".join("%s(cores=%d,workers=%d,speed=%.3g,calls=%d)" % (
        s["name"], s["cores"], s["workers"], s["speed"], s["calls"]) for s in sorted(st["servers"], key=lambda s: s["name"]))))
    for d in new:
        cands = " ".join("%s=%.3f(w%.3f+t%.3f+c%.3f%s)" % (name.get(x["server"], x["server"]), x["estimate"], x["wait"],
                                                           x["transfer"], x["compute"], ",assumed" if x["assumed_link"] else "")
                         for x in d["candidates"])
        held = " (held %.2f s, %d full)" % (d["held_s"], d["full"]) if d.get("held_s") or d.get("full") else ""
        f.write("%s #%d %s %s %s -> %s%s | %s\n" % (tag, d["id"], d["policy"], d.get("site", ""), d["function"],
                                                   name.get(d["chosen"], d["chosen"]), held, cands))
        c.write("%s,%d,%s,%s,%s,%s,%.3f,%s\n" % (tag, d["id"], d["policy"], d.get("site", ""), d["function"],
                                                 name.get(d["chosen"], d["chosen"]), d.get("held_s", 0) or 0,
                                                 cands.replace(",", ";")))
held = [d.get("held_s", 0) for d in new if (d.get("held_s", 0) or 0) > 0]
print(max([since] + [d["id"] for d in st["decisions"]]), len(held), "%.2f" % sum(held))
EOF
}

# gl_load: the machine's load average (1, 5, 15 min) and CPU count, for the tables.
gl_load() { echo "$(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"; }
