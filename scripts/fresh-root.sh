#!/usr/bin/env bash
# fresh-root.sh: runs CI's command on a machine that has nothing yet. Makes a bare Debian
# bookworm root with debootstrap (once, kept as a template), copies it, clones this
# repository's REV into the copy and runs `bash .ci/run` there as CI does (CI=true, no
# standard input, a clean environment), then unmounts everything it mounted and removes
# the copy, even after a failure. Needs root and the network (Debian's mirror, Maven
# Central, PyPI). The output goes to OUT and ends with the run's seconds.
#
# usage: scripts/fresh-root.sh [--keep] [--tiers "check fuzz"] [--dir DIR] [REV [OUT]]
#   REV      what to test (default HEAD; committed work only: the clone takes REV)
#   OUT      where the output goes (default DIR/run-<rev>.out)
#   --dir    where the template and the copies live (default /var/tmp/gridrpc-fresh-root)
#   --tiers  TIERS for scripts/test.sh (default: every tier)
#   --keep   keep the copy afterwards (its build folders, for a look at a failure)
set -uo pipefail
dir=/var/tmp/gridrpc-fresh-root tiers= keep=0
while [ $# -gt 0 ]; do
  case $1 in
  --dir) dir=$2; shift 2 ;;
  --tiers) tiers=$2; shift 2 ;;
  --keep) keep=1; shift ;;
  -h | --help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  -*) echo "fresh-root: unknown option $1 (see --help)" >&2; exit 2 ;;
  *) break ;;
  esac
done
[ "$(id -u)" -eq 0 ] || { echo "fresh-root: needs root (debootstrap, chroot, mounts)" >&2; exit 2; }
top=$(cd "$(dirname "$0")/.." && pwd)
rev=$(git -C "$top" rev-parse --verify "${1:-HEAD}^{commit}") || { echo "fresh-root: no commit '${1:-HEAD}'" >&2; exit 2; }
mkdir -p "$dir"
out=${2:-$dir/run-${rev:0:12}.out}
template=$dir/bookworm
if [ ! -x "$template/bin/bash" ]; then
  command -v debootstrap >/dev/null || apt-get install -y -q debootstrap >/dev/null ||
    { echo "fresh-root: cannot install debootstrap" >&2; exit 1; }
  # The machine's own Debian mirror, as apt here is configured.
  mirror=$(cat /etc/apt/sources.list.d/* /etc/apt/sources.list 2>/dev/null | grep -E '^(URIs:|deb )' |
    grep -o -m1 'http[^ ]*' | head -1)
  echo "fresh-root: making the bare root ($template, ${mirror:-the default mirror})"
  rm -rf "$template.tmp"
  debootstrap --variant=minbase bookworm "$template.tmp" ${mirror:+"$mirror"} >"$dir/debootstrap.out" 2>&1 ||
    { tail -5 "$dir/debootstrap.out" >&2; exit 1; }
  mv "$template.tmp" "$template"
fi
root=$dir/run-$$
rm -rf "$root"
cp -a "$template" "$root"
cleanup() {
  # Network namespaces that tests made leave bind mounts under the root's /run/netns.
  grep " $root/" /proc/self/mounts | awk '{print $2}' | sort -r | while read -r m; do umount -l "$m" 2>/dev/null; done
  umount -l "$root" 2>/dev/null
  [ "$keep" -eq 1 ] && echo "fresh-root: kept $root" || rm -rf "$root"
}
trap cleanup EXIT
# The root is a mount point of its own, as / is on a machine (the network lab's
# "mount --make-rslave /" needs one).
mount --bind "$root" "$root"
cp /etc/resolv.conf "$root/etc/resolv.conf"
# A machine of this kind trusts the CAs its own store does (a proxy's, for one).
if ls /usr/local/share/ca-certificates/*.crt >/dev/null 2>&1; then
  mkdir -p "$root/usr/local/share/ca-certificates"
  cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
fi
mount -t proc proc "$root/proc"
mount --rbind /sys "$root/sys" && mount --make-rslave "$root/sys"
mount --rbind /dev "$root/dev" && mount --make-rslave "$root/dev"
mkdir -p "$root/run/netns"
git clone -q "$top" "$root/root/gridrpc" && git -C "$root/root/gridrpc" checkout -q "$rev" ||
  { echo "fresh-root: clone failed" >&2; exit 1; }
ca=/etc/ssl/certs/ca-certificates.crt
echo "fresh-root: running .ci/run on ${rev:0:12} in $root; output in $out"
start=$(date +%s)
chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin CI=true \
  SSL_CERT_FILE=$ca PIP_CERT=$ca REQUESTS_CA_BUNDLE=$ca CURL_CA_BUNDLE=$ca ${tiers:+TIERS="$tiers"} \
  bash -c 'cd /root/gridrpc && bash .ci/run' </dev/null >"$out" 2>&1
rc=$?
echo "fresh-root: rc=$rc in $(($(date +%s) - start)) s" | tee -a "$out"
exit $rc
