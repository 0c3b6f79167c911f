#!/bin/sh
# status-page.sh: gridmetad's status page (metaserver/www/status.html) in a real
# headless browser (Debian's chromium): it loads, shows every registered server by name
# with its state, updates in place when a server goes down, and keeps the last data
# with "metaserver unreachable" when api/status fails; the recent calls show a failure
# marked with its error, names from peers as text (never markup), the per-function
# counts, and a down server greyed with when it was last seen, not its stale load. The
# page makes no request outside its own origin.
#
# By default a scripted server (tests/status_page.py) serves the page and an api/status
# that changes over time: both servers up, then beta down, then failures. With
# PAGE_URL=http://HOST:PORT (a running gridmetad --http), the page there is checked
# against that server's own api/status instead. Skips (77) without chromium.
. "$top_srcdir/tests/lib.sh"
PY=${PYTHON:-python3}
PAGE=$top_srcdir/metaserver/www/status.html
HELPER=$top_srcdir/tests/status_page.py
CHROMIUM=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
if [ -z "$CHROMIUM" ]; then
  echo "# chromium is not installed (apt-get install chromium): skipping the status page test"
  rm -rf "$T_TMP"; exit 77
fi
cd "$T_TMP" || exit 1
pids=
cleanup() { for p in $pids; do kill "$p" 2>/dev/null; done; }
trap cleanup EXIT

# browse OUT URL [MS]: the DOM after MS ms of the page's own (virtual) time.
browse() {
  timeout 90 "$CHROMIUM" --headless=new --no-sandbox --disable-gpu --no-first-run \
    --user-data-dir="$T_TMP/chrome" --virtual-time-budget="${3:-3000}" --dump-dom "$2" >"$1" 2>"$1.err"
}
# serve OUT SCRIPT: the scripted server; its base URL goes to $url.
serve() {
  "$PY" "$HELPER" serve "$PAGE" --script "$2" >"$1" 2>"$1.err" &
  pids="$pids $!"
  _i=0
  while [ $_i -lt 100 ]; do
    url=$(sed -n 's|^listening on |http://|p' "$1" 2>/dev/null)
    [ -n "$url" ] && return 0
    sleep 0.1; _i=$((_i + 1))
  done
  diag <"$1.err"
  return 1
}

# Self-contained: no URL but the SVG namespace's (a name, never fetched).
ext=$(grep -Eo '(https?:)?//[A-Za-z0-9.-]+\.[a-z]{2,}[^"'"'"' )]*' "$PAGE" | grep -v '^http://www.w3.org/2000/svg$' || true)
if [ -z "$ext" ] && ! grep -qiE '@import|<link |<script [^>]*src=' "$PAGE"; then ok "the page loads nothing from elsewhere"; else fail "external references: $ext"; fi

if [ -n "${PAGE_URL:-}" ]; then
  # A real metaserver: the DOM must agree with its api/status.
  url=${PAGE_URL%/}
  if browse dom.html "$url/" 3000 && "$PY" "$HELPER" check dom.html --api "$url/api/status" --conn ok >check.out 2>&1; then
    ok "the page shows every server of $url/api/status with its state"
  else
    fail "page at $url"; diag <check.out; diag <dom.html.err
  fi
else
  # Two servers up; beta goes down; then the metaserver stops answering.
  "$PY" - <<'PYEOF'
import json
now = 1795000000000
hist = [[now - 120000 + i * 10000, i % 3, (i * 2) % 5, 0.5 + i * 0.1] for i in range(13)]
def doc(beta):
    return {"metaserver": {"version": "0.1.0", "scheduler": "mct", "uptime_s": 3725, "calls": 120,
                           "failures": 2, "decisions": 118, "heartbeat_ms": 1000},
            "servers": [{"id": 1, "name": "alpha", "host": "10.0.0.1", "port": 7001, "state": "up", "cores": 8,
                         "workers": 4, "running": 2, "queued": 1, "pending": 1, "loadavg": 1.25, "speed": 12.5e9,
                         "beat_age_ms": 400, "calls": 100, "failures": 1, "functions": ["linalg/dmmul", "nas/ep"],
                         "history": hist},
                        {"id": 2, "name": "beta", "host": "10.0.0.2", "port": 7002, "state": beta, "cores": 2,
                         "workers": 2, "running": 0, "queued": 0, "pending": 0, "loadavg": 0.1, "speed": 3e9,
                         "beat_age_ms": 700 if beta == "up" else 15000, "last_seen_ms": 700 if beta == "up" else 15000,
                         "last_beat_unix_ms": now - 15000, "calls": 20, "failures": 1,
                         "functions": ["linalg/dmmul"], "history": hist[:5]}],
            "links": [{"site": "lab", "server": 1, "bandwidth": 117e6, "latency": 0.0004, "samples": 12, "age_s": 3.5},
                      {"site": "lab", "server": 2, "bandwidth": 1.2e6, "latency": 0.05, "samples": 3, "age_s": 40}],
            "decisions": [{"id": 118, "unix_ms": now, "function": "linalg/dmmul", "site": "lab", "policy": "mct",
                           "chosen": 1, "candidates": [
                               {"server": 1, "estimate": 0.35, "wait": 0.1, "transfer": 0.05, "compute": 0.2,
                                "assumed_link": False},
                               {"server": 2, "estimate": 1.8, "wait": 0, "transfer": 1.6, "compute": 0.2,
                                "assumed_link": True}]}],
            # Names chosen by peers: markup that would run if the page parsed it.
            "recent": [{"unix_ms": now, "function": "<img src=x onerror=\"document.title='owned'\">", "site": "<u>x</u>",
                        "server": 1, "server_name": "alpha", "host": "10.0.0.1", "port": 7001, "seconds": 0.25,
                        "run_s": 0.2, "ok": True, "outcome": "OK", "message": ""},
                       {"unix_ms": now - 1000, "function": "test/crash", "site": "lab", "server": 2,
                        "server_name": "beta", "host": "10.0.0.2", "port": 7002, "seconds": 0.031, "run_s": 0,
                        "ok": False, "outcome": "GRID_ERR_CRASHED", "message": "the function crashed its executor"},
                       {"unix_ms": now - 2000, "function": "linalg/dmmul", "site": "lab", "server": 1,
                        "server_name": "alpha", "host": "10.0.0.1", "port": 7001, "seconds": 1.5, "run_s": 1.2,
                        "ok": True, "outcome": "OK", "message": ""}],
            "functions": [{"function": "linalg/dmmul", "calls": 7, "failures": 0, "mean_s": 1.5, "mean_run_s": 1.2,
                           "servers": 2},
                          {"function": "test/crash", "calls": 0, "failures": 3, "mean_s": 0, "mean_run_s": 0,
                           "servers": 1}]}
json.dump(doc("up"), open("up.json", "w"))
json.dump(doc("down"), open("down.json", "w"))
PYEOF
  if serve up.out up.json:1000000 && shot_url=$url && browse dom.html "$url/" 3000 &&
    "$PY" "$HELPER" check dom.html --server 1:alpha:up --server 2:beta:up --conn ok >check.out 2>&1; then
    ok "the page loads and shows both registered servers, up"
  else
    fail "page with two servers up"; diag <check.out; diag <dom.html.err
  fi
  if grep -q 'id="scheduler">mct<' dom.html && grep -q 'id="calls">120<' dom.html && grep -q '117.0 MB/s' dom.html && grep -q '0.40 ms' dom.html &&
    grep -q '<tr class="chosen" data-server="1">' dom.html && grep -q 'assumed link' dom.html; then
    ok "header, link matrix and decisions (chosen candidate highlighted)"; else fail "header, links, decisions"; diag <dom.html
  fi
  # The recent calls and the functions, from the DOM as chromium left it.
  if "$PY" - <<'PYEOF'
import re, sys
dom = open("dom.html").read()
problems = []
rows = re.findall(r'<tr class="call (\w+)" data-outcome="(\w+)" data-function="([^"]*)"[^>]*>(.*?)</tr>', dom, re.S)
text = [(c, o, f, re.sub(r"<[^>]+>", "|", body)) for c, o, f, body in rows]
if len(text) != 3:
    problems.append("3 call rows expected: %r" % text)
else:
    if not (text[1][:3] == ("fail", "fail", "test/crash") and "GRID_ERR_CRASHED" in text[1][3]
            and "the function crashed its executor" in text[1][3] and "beta" in text[1][3]):
        problems.append("the failed call: %r" % (text[1],))
    if not (text[2][:3] == ("ok", "ok", "linalg/dmmul") and "|1.50 s|" in text[2][3] and "|OK|" in text[2][3]
            and "alpha" in text[2][3]):
        problems.append("the OK call: %r" % (text[2],))
    # The markup arrives as text: escaped in the DOM, no element made of it, nothing ran.
    if not ("&lt;img src=x onerror=\"document.title='owned'\"&gt;" in text[0][3] and "&lt;u&gt;x&lt;/u&gt;" in text[0][3]):
        problems.append("the hostile names as text: %r" % (text[0],))
if '<img src="x"' in dom or "<u>x</u>" in dom or "owned" in re.search(r"<title>(.*?)</title>", dom).group(1):
    problems.append("peer markup became markup")
m = re.search(r'<tr data-function="linalg/dmmul">(.*?)</tr>', dom, re.S)
c = re.search(r'<tr data-function="test/crash">(.*?)</tr>', dom, re.S)
if not m or re.sub(r"<[^>]+>", "|", m.group(1)).split("|")[1:-1] != ["linalg/dmmul", "", "7", "", "0", "", "1.50 s", "", "1.20 s", "", "2"]:
    problems.append("the functions row of dmmul: %r" % (m and m.group(1)))
if not c or '<td class="num failed">3</td>' not in c.group(1):
    problems.append("the functions row of test/crash (failures marked): %r" % (c and c.group(1)))
print("".join("# %s\n" % p for p in problems), end="")
sys.exit(1 if problems else 0)
PYEOF
  then ok "recent calls: the failure marked fail with its error, the OK call with its duration and server; names as text; per-function counts"
  else fail "recent calls and functions"; fi

  # The chart: a line of running + queued in alpha's row.
  if "$PY" - <<'PYEOF'
import re, sys
dom = open("dom.html").read()
row = re.search(r'<tr id="server-1".*?</tr>', dom, re.S).group(0)
pts = re.search(r'<polyline points="([^"]+)"', row).group(1).split()
sys.exit(0 if len(pts) == 13 else 1)
PYEOF
  then ok "each server has a chart of its load history"; else fail "sparkline"; fi

  # One page load: up twice, down three times, then failures. The DOM at the end must
  # show beta down and still both servers, with the unreachable notice.
  if serve live.out up.json:2,down.json:3,FAIL:1000000 && browse live.html "$url/" 8000 &&
    "$PY" "$HELPER" check live.html --server 1:alpha:up --server 2:beta:down --conn unreachable >check.out 2>&1; then
    ok "the open page shows beta down when it goes down, and keeps the data when api/status fails"
  else
    fail "live update"; diag <check.out; diag <live.out.err
  fi
  # beta down: greyed, when it was last seen, no running or load figures.
  if "$PY" - <<'PYEOF'
import re, sys
dom = open("live.html").read()
row = re.search(r'<tr id="server-2".*?</tr>', dom, re.S).group(0)
cells = dict(re.findall(r'<td class="num (running|queued|pending|load|seen)"[^>]*>([^<]*)</td>', row))
ok = cells == {"running": "–", "queued": "–", "pending": "–", "load": "–", "seen": "last seen 15s ago"}
alpha = re.search(r'<tr id="server-1".*?</tr>', dom, re.S).group(0)
ok = ok and '<td class="num running">2 / 4</td>' in alpha and "last seen" not in alpha
print("# beta %r" % cells)
sys.exit(0 if ok else 1)
PYEOF
  then ok "the down server shows when it was last seen and '–' for its load; the up one its pool"
  else fail "the down server's row"; fi
  if [ "$(grep -c '^api/status' live.out.err)" -ge 6 ] && grep -q 'metaserver unreachable' live.html; then
    ok "the page polls about every second and says 'metaserver unreachable'"
  else
    fail "polling"; diag <live.out.err
  fi
fi

# A screenshot renders (for people reviewing the page; left in the build tree).
shot=${STATUS_PAGE_SCREENSHOT:-$top_builddir/status-page.png}
if timeout 90 "$CHROMIUM" --headless=new --no-sandbox --disable-gpu --no-first-run --user-data-dir="$T_TMP/chrome" \
  --virtual-time-budget=3000 --window-size=1400,900 --screenshot="$shot" "${shot_url:-$url}/" >shot.err 2>&1 &&
  [ "$(head -c 4 "$shot" | od -An -c | tr -d ' ')" = '211PNG' ]; then
  ok "a screenshot renders ($shot)"
else
  fail "screenshot"; diag <shot.err
fi
finish
