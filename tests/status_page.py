#!/usr/bin/env python3
"""status_page.py: helpers for tests/status-page.sh (standard library only).

  serve PAGE --script FILE:N,FILE:N,...,FAIL:N
      Serves PAGE at / and api/status from the script: the first N requests get the
      first file, the next ones the next, and so on (the last entry repeats); FAIL
      answers 503 as an unreachable metaserver would look to the page. Prints
      "listening on 127.0.0.1:PORT" once ready and logs each api/status request to
      standard error ("api/status 3 -> down.json").
  check DOM --server ID:NAME:STATE ... [--conn STATE]
      Reads a DOM dumped by chromium and checks that the row id="server-ID" exists,
      shows NAME, and that both the row and its state cell say data-state="STATE".
  check DOM --api URL
      The same for every server the JSON at URL lists (a real gridmetad).
  live URL --chromium PATH --profile DIR --want NAME:STATE,... --then CMD
       --want NAME:STATE,... [--dump DOM] [--timeout S]
      One page load in headless chromium, driven over its DevTools pipe
      (--remote-debugging-pipe; standard library only): waits until the page shows the
      first states, marks the document, runs CMD (sh -c, e.g. kills a server), then
      waits until the same document (the mark still there: polled, not reloaded) shows
      the second states; DOM gets the final page. Each wait is bounded by S seconds
      (default 20). Prints one "PASS what" or "FAIL what: why" line per step.
  inspect URL --chromium PATH --profile DIR --checks NAME [--width W --height H]
       [--shot PNG] [--timeout S]
      One page load in headless chromium, its viewport W x H CSS pixels (default
      1280 x 800): waits until the named set of CHECKS ("calls": a failed and a
      successful call in the recent calls and the per-function counts; "down": a down
      server greyed; both: no sideways scrolling) all pass, or S seconds; prints a PASS
      or FAIL line per check, then saves a screenshot of the whole page to PNG.
Exit status of check, live and inspect: 0 when everything matches, 1 otherwise (each
problem printed).
"""
import base64
import os
import select
import subprocess
import time
import fcntl
import html.parser
import http.server
import json
import sys
import urllib.request


def serve(argv):
    page = argv[0]
    script = []
    if len(argv) >= 3 and argv[1] == "--script":
        for item in argv[2].split(","):
            name, _, count = item.rpartition(":")
            script.append((name, int(count)))
    with open(page, "rb") as f:
        page_bytes = f.read()
    state = {"n": 0}

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, fmt, *args):
            pass

        def send(self, code, ctype, body):
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            path = self.path.split("?")[0]
            if path in ("/", "/index.html"):
                self.send(200, "text/html; charset=utf-8", page_bytes)
                return
            if path != "/api/status":
                self.send(404, "text/plain", b"not found\n")
                return
            state["n"] += 1
            n, name, seen = state["n"], script[-1][0], 0
            for entry, count in script:
                seen += count
                if n <= seen:
                    name = entry
                    break
            sys.stderr.write("api/status %d -> %s\n" % (n, name))
            sys.stderr.flush()
            if name == "FAIL":
                self.send(503, "text/plain", b"metaserver down\n")
                return
            with open(name, "rb") as f:
                self.send(200, "application/json", f.read())

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print("listening on 127.0.0.1:%d" % srv.server_address[1], flush=True)
    srv.serve_forever()


class Dom(html.parser.HTMLParser):
    """Collects server rows: id, data-state, the state cell's data-state, the text."""

    def __init__(self):
        super().__init__()
        self.rows = {}
        self.row = None
        self.conn = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id") == "conn":
            self.conn = a.get("data-state")
        if tag == "tr" and (a.get("id") or "").startswith("server-"):
            self.row = {"state": a.get("data-state"), "cell": None, "text": ""}
            self.rows[a["id"][len("server-"):]] = self.row
        elif self.row is not None and tag == "td" and "state" in (a.get("class") or "").split():
            self.row["cell"] = a.get("data-state")

    def handle_endtag(self, tag):
        if tag == "tr":
            self.row = None

    def handle_data(self, data):
        if self.row is not None:
            self.row["text"] += data


def check(argv):
    dom = Dom()
    with open(argv[0], encoding="utf-8") as f:
        dom.feed(f.read())
    want, conn, problems = [], None, []
    i = 1
    while i < len(argv):
        if argv[i] == "--server":
            sid, name, st = argv[i + 1].split(":")
            want.append((sid, name, st))
        elif argv[i] == "--conn":
            conn = argv[i + 1]
        elif argv[i] == "--api":
            with urllib.request.urlopen(argv[i + 1], timeout=10) as r:
                for s in json.load(r)["servers"]:
                    want.append((str(s["id"]), s["name"], s["state"]))
        i += 2
    if not want:
        problems.append("no servers to look for")
    for sid, name, st in want:
        row = dom.rows.get(sid)
        if row is None:
            problems.append("no row id=server-%s (rows: %s)" % (sid, sorted(dom.rows)))
            continue
        if name not in row["text"]:
            problems.append("server-%s does not show its name %r: %r" % (sid, name, row["text"]))
        if row["state"] != st or row["cell"] != st:
            problems.append("server-%s: data-state %r, state cell %r; expected %r" % (sid, row["state"], row["cell"], st))
        if st not in row["text"]:
            problems.append("server-%s does not show the word %r" % (sid, st))
    if conn is not None and dom.conn != conn:
        problems.append("connection indicator data-state %r; expected %r" % (dom.conn, conn))
    for p in problems:
        print(p)
    return 1 if problems else 0


class Cdp:
    """Chrome DevTools protocol over --remote-debugging-pipe: JSON messages ending in a
    NUL byte, commands on the browser's fd 3, replies and events on its fd 4."""

    def __init__(self, chromium, profile, url):
        to_browser_r, self.wfd = os.pipe()
        self.rfd, from_browser_w = os.pipe()

        def fds():  # in the child: the pipe ends at the numbers chromium expects
            # Moved above 10 first: dup2 onto itself (a pipe end that already is 3 or 4)
            # would keep its close-on-exec flag.
            a = fcntl.fcntl(to_browser_r, fcntl.F_DUPFD, 10)
            b = fcntl.fcntl(from_browser_w, fcntl.F_DUPFD, 10)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen(
            [chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--user-data-dir=" + profile, "--remote-debugging-pipe", url],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=open(profile + ".err", "w"),
            preexec_fn=fds, close_fds=False)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self.buf = b""
        self.next_id = 0
        self.session = None

    def close(self):
        try:
            self.send("Browser.close", timeout=5)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def send(self, method, params=None, session=None, timeout=20):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.wfd, json.dumps(msg).encode() + b"\0")
        until = time.monotonic() + timeout
        while True:
            while b"\0" in self.buf:
                raw, self.buf = self.buf.split(b"\0", 1)
                reply = json.loads(raw)
                if reply.get("id") == self.next_id:
                    if "error" in reply:
                        raise RuntimeError("%s: %s" % (method, reply["error"].get("message")))
                    return reply.get("result", {})
            left = until - time.monotonic()
            if left <= 0 or not select.select([self.rfd], [], [], left)[0]:
                raise TimeoutError("%s: no reply from chromium within %d s" % (method, timeout))
            chunk = os.read(self.rfd, 1 << 16)
            if not chunk:
                raise RuntimeError("%s: chromium closed its DevTools pipe (exited?)" % method)
            self.buf += chunk

    def attach(self, url_prefix, timeout):
        until = time.monotonic() + timeout
        while time.monotonic() < until:
            for t in self.send("Target.getTargets")["targetInfos"]:
                if t["type"] == "page" and t["url"].startswith(url_prefix):
                    self.session = self.send("Target.attachToTarget",
                                             {"targetId": t["targetId"], "flatten": True})["sessionId"]
                    return
            time.sleep(0.2)
        raise TimeoutError("no page for %s in chromium within %d s" % (url_prefix, timeout))

    def eval(self, expr):
        r = self.send("Runtime.evaluate", {"expression": expr, "returnByValue": True}, self.session)
        if "exceptionDetails" in r:
            raise RuntimeError("page script failed: %s" % r["exceptionDetails"].get("text"))
        return r["result"].get("value")


# The page's server rows as the person sees them, and the mark of this document.
ROWS_JS = """JSON.stringify({
  conn: (document.getElementById("conn") || {dataset: {}}).dataset.state || null,
  mark: window.__statusPageMark || null,
  rows: Array.from(document.querySelectorAll('tr[id^="server-"]')).map(function (r) {
    var cell = r.querySelector("td.state");
    return {state: r.dataset.state, cell: cell ? cell.dataset.state : null,
            name: r.dataset.name, text: r.textContent};
  })})"""


def states_problems(view, want):
    rows = {r["name"]: r for r in view["rows"]}
    problems = []
    for name, st in want:
        r = rows.get(name)
        if r is None:
            problems.append("no row for %s (rows: %s)" % (name, sorted(rows)))
        elif r["state"] != st or r["cell"] != st or st not in r["text"]:
            problems.append("%s shows %r (state cell %r), not %r" % (name, r["state"], r["cell"], st))
    if view["conn"] != "ok":
        problems.append("connection indicator %r, not 'ok'" % view["conn"])
    return problems


def wait_states(cdp, want, timeout):
    until = time.monotonic() + timeout
    t0 = time.monotonic()
    while True:
        view = json.loads(cdp.eval(ROWS_JS))
        problems = states_problems(view, want)
        if not problems:
            return view, time.monotonic() - t0, []
        if time.monotonic() >= until:
            return view, time.monotonic() - t0, problems
        time.sleep(0.2)


def live(argv):
    url, opts, wants, i = argv[0], {"--timeout": "20"}, [], 1
    while i + 1 < len(argv):
        if argv[i] == "--want":
            wants.append([tuple(x.split(":")) for x in argv[i + 1].split(",")])
        else:
            opts[argv[i]] = argv[i + 1]
        i += 2
    timeout = float(opts["--timeout"])
    if len(wants) != 2 or "--chromium" not in opts or "--profile" not in opts or "--then" not in opts:
        sys.stderr.write(__doc__)
        return 2
    failed = 0

    def report(ok, what, why=""):
        nonlocal failed
        failed |= not ok
        print(("PASS %s" % what) if ok else ("FAIL %s: %s" % (what, why)), flush=True)

    cdp = Cdp(opts["--chromium"], opts["--profile"], url)
    try:
        cdp.attach(url, timeout)
        first = ", ".join("%s %s" % w for w in wants[0])
        view, took, problems = wait_states(cdp, wants[0], timeout)
        report(not problems, "the page loads and shows %s (after %.1f s)" % (first, took), "; ".join(problems))
        if problems:
            return 1
        mark = "mark-%d" % os.getpid()
        cdp.eval("window.__statusPageMark = %s" % json.dumps(mark))
        rc = subprocess.call(["sh", "-c", opts["--then"]])
        report(rc == 0, "ran: %s" % opts["--then"], "exit status %d" % rc)
        second = ", ".join("%s %s" % w for w in wants[1])
        view, took, problems = wait_states(cdp, wants[1], timeout)
        report(not problems, "the open page then shows %s (after %.1f s)" % (second, took), "; ".join(problems))
        report(view["mark"] == mark, "without a reload (the page polls)",
               "the document was replaced (mark %r)" % view["mark"])
        if "--dump" in opts:
            with open(opts["--dump"], "w", encoding="utf-8") as f:
                f.write(cdp.eval("document.documentElement.outerHTML"))
    except (RuntimeError, TimeoutError, OSError) as exc:
        report(False, "driving chromium", str(exc))
    finally:
        cdp.close()
    return 1 if failed else 0


# Checks run inside the page: each an expression giving [passed, what it saw]. Styles are
# read as the browser computed them, so a rule that is removed or overridden fails.
FITS_JS = """[document.documentElement.scrollWidth <= window.innerWidth &&
   Array.from(document.querySelectorAll("section")).every(function (s) { return s.scrollWidth <= s.clientWidth; }),
  "viewport " + window.innerWidth + " px, page " + document.documentElement.scrollWidth + " px wide; sections " +
  Array.from(document.querySelectorAll("section")).map(function (s) { return s.scrollWidth + "/" + s.clientWidth; }).join(" ")]"""
CHECKS = {
    "calls": {
        # A failed call (test/crash): its row marked fail, red, with the error's name and text.
        "a failed call is in the recent calls, marked fail, in red, with its error": """(function () {
  var r = document.querySelector('tr.call.fail[data-outcome="fail"][data-function$="crash"]');
  if (!r) return [false, "no failed crash row: " + Array.from(document.querySelectorAll("tr.call")).map(function (x) {
    return x.className + " " + x.dataset.function; }).join("; ")];
  var o = r.querySelector("td.outcome"), color = getComputedStyle(o).color;
  return [color === "rgb(179, 38, 30)" && /GRID_ERR_\\w+/.test(o.textContent) && o.querySelector(".msg").textContent.length > 3,
          "outcome '" + o.textContent + "' in " + color];
})()""",
        # A successful dmmul: OK, its duration, the server it ran on, not red.
        "a successful dmmul is in the recent calls as OK, with its duration and server": """(function () {
  var r = document.querySelector('tr.call.ok[data-outcome="ok"][data-function$="dmmul"]');
  if (!r) return [false, "no OK dmmul row"];
  var d = r.querySelector("td.duration").textContent, srv = r.querySelector("td.server").textContent,
      o = r.querySelector("td.outcome"), color = getComputedStyle(o).color;
  return [o.textContent === "OK" && /^[0-9.]+ (µs|ms|s)$/.test(d) && /^(alpha|beta)$/.test(srv) && color !== "rgb(179, 38, 30)",
          "outcome " + o.textContent + " in " + color + ", duration '" + d + "', server '" + srv + "'"];
})()""",
        "per function: the calls and failures of test/crash and linalg/dmmul": """(function () {
  var c = document.querySelector('#functions tr[data-function$="crash"]'),
      m = document.querySelector('#functions tr[data-function$="dmmul"]');
  if (!c || !m) return [false, "rows: " + document.getElementById("functions").textContent];
  var cc = c.querySelectorAll("td"), mm = m.querySelectorAll("td");
  return [Number(cc[2].textContent) >= 1 && cc[2].classList.contains("failed") && Number(mm[1].textContent) >= 1 &&
          /^[0-9.]+ (µs|ms|s)$/.test(mm[3].textContent), c.textContent + " | " + m.textContent];
})()""",
        "the page fits the viewport: no sideways scrolling": FITS_JS,
    },
    "down": {
        # beta killed: greyed, when it was last seen, no stale load or running count.
        "the down server is greyed, 'last seen N ago', '–' for its load and running calls": """(function () {
  var r = document.querySelector('tr[data-name="beta"]');
  if (!r || r.dataset.state !== "down") return [false, "beta row " + (r ? r.dataset.state : "missing")];
  var seen = r.querySelector("td.seen").textContent, bg = getComputedStyle(r.querySelector("td.name")).backgroundColor;
  var live = ["running", "queued", "pending", "load"].map(function (k) { return r.querySelector("td." + k).textContent; });
  return [/^last seen [0-9.]+s ago$/.test(seen) && bg === "rgb(240, 241, 243)" &&
          live.every(function (t) { return t === "–"; }), "'" + seen + "', background " + bg + ", " + live.join(" ")];
})()""",
        "the up server still shows its load": """(function () {
  var r = document.querySelector('tr[data-name="alpha"]');
  return [!!r && r.dataset.state === "up" && /^[0-9]+ \\/ [0-9]+$/.test(r.querySelector("td.running").textContent) &&
          !/last seen/.test(r.textContent), r ? r.querySelector("td.running").textContent : "no alpha row"];
})()""",
        "the page fits the viewport: no sideways scrolling": FITS_JS,
    },
}


def inspect(argv):
    url, opts, i = argv[0], {"--timeout": "20", "--width": "1280", "--height": "800"}, 1
    while i + 1 < len(argv):
        opts[argv[i]] = argv[i + 1]
        i += 2
    if "--chromium" not in opts or "--profile" not in opts or opts.get("--checks") not in CHECKS:
        sys.stderr.write(__doc__)
        return 2
    checks = CHECKS[opts["--checks"]]
    timeout = float(opts["--timeout"])
    failed = 0
    cdp = Cdp(opts["--chromium"], opts["--profile"], url)
    try:
        cdp.attach(url, timeout)
        w, h = int(opts["--width"]), int(opts["--height"])
        cdp.send("Emulation.setDeviceMetricsOverride",
                 {"width": w, "height": h, "deviceScaleFactor": 1, "mobile": False}, cdp.session)
        until = time.monotonic() + timeout
        while True:
            # Before the page has rendered, a check may throw: that is a "not yet".
            seen = {name: json.loads(cdp.eval("JSON.stringify((function () { try { return %s; } catch (e) "
                                              "{ return [false, String(e)]; } })())" % js))
                    for name, js in checks.items()}
            if all(v[0] for v in seen.values()) or time.monotonic() >= until:
                break
            time.sleep(0.3)
        for name, (passed, what) in seen.items():
            failed |= not passed
            print(("PASS %s (%s)" % (name, what)) if passed else ("FAIL %s: %s" % (name, what)), flush=True)
        if "--shot" in opts:
            # The whole page, not only the viewport: the shot shows every section.
            tall = cdp.eval("document.documentElement.scrollHeight")
            shot = cdp.send("Page.captureScreenshot",
                            {"format": "png", "captureBeyondViewport": True,
                             "clip": {"x": 0, "y": 0, "width": w, "height": max(h, tall), "scale": 1}},
                            cdp.session)
            with open(opts["--shot"], "wb") as f:
                f.write(base64.b64decode(shot["data"]))
    except (RuntimeError, TimeoutError, OSError) as exc:
        failed = 1
        print("FAIL driving chromium: %s" % exc, flush=True)
    finally:
        cdp.close()
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "serve":
        serve(sys.argv[2:])
    elif len(sys.argv) >= 3 and sys.argv[1] == "check":
        sys.exit(check(sys.argv[2:]))
    elif len(sys.argv) >= 3 and sys.argv[1] == "live":
        sys.exit(live(sys.argv[2:]))
    elif len(sys.argv) >= 3 and sys.argv[1] == "inspect":
        sys.exit(inspect(sys.argv[2:]))
    else:
        sys.stderr.write(__doc__)
        sys.exit(2)
