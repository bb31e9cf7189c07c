#!/usr/bin/env python3
"""Render a `cargo gputune report --html` page to PNG in headless Chromium, for review, and
time how long it takes to open.

    python3 scripts/local/report-png.py PAGE.html OUT.png [--runs 5] [--width 1400] [--height 2200]
    python3 scripts/local/report-png.py STORE.db OUT.png     # writes STORE.html first (cargo run --release)

Opening is timed from the navigation to the page's `gputune-rendered` mark (its script has
built every table row and drawn every picture, and the frame after that was laid out and
painted), each run a fresh navigation in one browser, and the median printed. The screenshot is of the viewport, whose
size --width and --height set. Console errors and uncaught exceptions are printed; the script
exits 1 if there were any. Chromium is Debian's `chromium` (CHROMIUM overrides the path); it
is driven over the DevTools protocol on a pipe (--remote-debugging-pipe), so nothing listens
on a port.
"""

import argparse
import base64
import fcntl
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


class Browser:
    """Headless Chromium driven over --remote-debugging-pipe (fd 3 in, fd 4 out)."""

    def __init__(self, width, height):
        exe = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
        if not exe:
            sys.exit("no chromium on PATH (Debian: apt-get install chromium); CHROMIUM=PATH names one")
        self.profile = tempfile.mkdtemp(prefix="gputune-chromium-")
        # The pipes' ends, moved above 10 so that making them the child's fds 3 and 4 cannot
        # overwrite one another.
        high = lambda fd: (fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10), os.close(fd))[0]
        to_child_r, self.to_child = map(high, os.pipe())
        self.from_child, from_child_w = map(high, os.pipe())

        def child_fds():
            os.dup2(to_child_r, 3)
            os.dup2(from_child_w, 4)

        args = [exe, "--headless", "--remote-debugging-pipe", "--no-sandbox", "--disable-gpu",
                "--no-first-run", "--no-default-browser-check", "--hide-scrollbars",
                f"--user-data-dir={self.profile}", f"--window-size={width},{height}", "about:blank"]
        self.proc = subprocess.Popen(args, pass_fds=(3, 4), preexec_fn=child_fds,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_child_r)
        os.close(from_child_w)
        self.buf = b""
        self.next_id = 0
        self.events = []
        targets = self.call("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        self.session = self.call("Target.attachToTarget", targetId=page["targetId"], flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable", session=True)
        self.call("Emulation.setDeviceMetricsOverride", session=True, width=width, height=height,
                  deviceScaleFactor=1, mobile=False)

    def read(self):
        while b"\0" not in self.buf:
            chunk = os.read(self.from_child, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed the pipe")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, session=False, **params):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params}
        if session:
            msg["sessionId"] = self.session
        os.write(self.to_child, json.dumps(msg).encode() + b"\0")
        while True:
            m = self.read()
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)

    def wait_for(self, method, timeout=60):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for k, e in enumerate(self.events):
                if e.get("method") == method:
                    return self.events.pop(k)
            self.events.append(self.read())
        raise RuntimeError(f"no {method} in {timeout} s")

    def evaluate(self, expression):
        r = self.call("Runtime.evaluate", session=True, expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise RuntimeError(r["exceptionDetails"])
        return r["result"].get("value")

    def errors(self):
        out = []
        for e in self.events:
            m, p = e.get("method"), e.get("params", {})
            if m == "Runtime.exceptionThrown":
                out.append(p["exceptionDetails"].get("exception", {}).get("description") or p["exceptionDetails"]["text"])
            elif m == "Runtime.consoleAPICalled" and p.get("type") == "error":
                out.append(" ".join(str(a.get("value", a.get("description"))) for a in p.get("args", [])))
            elif m == "Log.entryAdded" and p["entry"]["level"] == "error":
                out.append(p["entry"]["text"])
        return out

    def close(self):
        self.proc.kill()
        self.proc.wait()
        shutil.rmtree(self.profile, ignore_errors=True)


def open_page(browser, url):
    """Navigates to `url`; seconds until the page's `gputune-rendered` mark."""
    browser.events.clear()
    browser.call("Page.navigate", session=True, url="about:blank")
    browser.wait_for("Page.loadEventFired")
    browser.events.clear()
    browser.call("Page.navigate", session=True, url=url)
    browser.wait_for("Page.loadEventFired")
    # From the navigation's start (the page's time origin) to the mark, set once the first
    # frame after the script's rendering was painted.
    ms = browser.evaluate("""new Promise((done) => {
        const look = () => {
            const m = performance.getEntriesByName('gputune-rendered')[0];
            if (m) done(m.startTime); else setTimeout(look, 10);
        };
        look();
        setTimeout(() => done(null), 30000);
    })""")
    if ms is None:
        raise RuntimeError("the page never marked gputune-rendered (did its script fail?)")
    return ms / 1000


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("page", type=pathlib.Path, help="a report page (.html) or a store (.db)")
    ap.add_argument("png", type=pathlib.Path)
    ap.add_argument("--runs", type=int, default=1, help="opens to time (median printed)")
    ap.add_argument("--width", type=int, default=1400)
    ap.add_argument("--height", type=int, default=2200)
    a = ap.parse_args()
    page = a.page
    if page.suffix == ".db":
        page = page.with_suffix(".html")
        subprocess.run(["cargo", "run", "--quiet", "--release", "-p", "cargo-gputune", "--", "gputune",
                        "report", "--db", str(a.page), "--top", "0", "--html", str(page)],
                       check=True, stdout=subprocess.DEVNULL)
    url = page.resolve().as_uri()
    browser = Browser(a.width, a.height)
    try:
        times = [open_page(browser, url) for _ in range(a.runs)]
        rows = browser.evaluate("document.querySelectorAll('#rows .row').length")
        shot = browser.call("Page.captureScreenshot", session=True, format="png")
        a.png.write_bytes(base64.b64decode(shot["data"]))
        errors = browser.errors()
    finally:
        browser.close()
    size = page.stat().st_size
    print(f"{page}: {size / 1e6:.2f} MB, {rows} table rows; opened in "
          f"{statistics.median(times):.3f} s (median of {len(times)}: "
          f"{', '.join(f'{t:.3f}' for t in times)}); screenshot {a.png}")
    for e in errors:
        print(f"console error: {e}", file=sys.stderr)
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
