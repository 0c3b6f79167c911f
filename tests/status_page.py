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
Exit status of check: 0 when everything matches, 1 otherwise (each problem printed).
"""
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


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "serve":
        serve(sys.argv[2:])
    elif len(sys.argv) >= 3 and sys.argv[1] == "check":
        sys.exit(check(sys.argv[2:]))
    else:
        sys.stderr.write(__doc__)
        sys.exit(2)
