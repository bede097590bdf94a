#!/usr/bin/env python
"""A PNG of a web page as headless Chromium draws it, after a script of clicks ran in the page: the DevTools protocol
over Chromium's --remote-debugging-pipe (file descriptors 3 and 4, JSON messages ended by NUL), standard library only.

    scripts/screenshot.py URL OUT.png [--js 'EXPRESSION'] [--width 1400] [--height 900]

docs/images/lab_alerts.png is Prometheus's alerts page of the `make run` lab (docs/alerts.md says how it was taken).
"""

import argparse
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "browser"))

from report_check import find_chromium  # noqa: E402  the one lookup of Chromium's name, shared with the report check


class Browser:
    """One headless Chromium, driven over the DevTools pipe."""

    def __init__(self, width, height):
        chromium = find_chromium()
        if chromium is None:
            raise SystemExit("screenshot: chromium is not installed (apt-get install chromium)")
        self.profile = tempfile.mkdtemp(prefix="gpufabric-screenshot-")
        to_browser_read, self.to_browser = os.pipe()
        self.from_browser, from_browser_write = os.pipe()

        def pipes():  # the browser reads commands on fd 3 and answers on fd 4 (inheritable: os.pipe's are not)
            read, write = os.dup(to_browser_read), os.dup(from_browser_write)
            os.dup2(read, 3)
            os.dup2(write, 4)

        self.process = subprocess.Popen(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
             "--remote-debugging-pipe", "--user-data-dir=" + self.profile, "--window-size=%d,%d" % (width, height)],
            # close_fds would close 3 and 4 after pipes() made them; the parent's other descriptors are few.
            preexec_fn=pipes, close_fds=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_browser_read)
        os.close(from_browser_write)
        self.buffer = b""
        self.next_id = 0
        self.events = []

    def _message(self, timeout):
        deadline = time.monotonic() + timeout
        while b"\0" not in self.buffer:
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise RuntimeError("chromium did not answer")
            chunk = os.read(self.from_browser, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed its DevTools pipe")
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method, params=None, session=None, timeout=60):
        self.next_id += 1
        request = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            request["sessionId"] = session
        os.write(self.to_browser, json.dumps(request).encode() + b"\0")
        while True:
            message = self._message(timeout)
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError("%s: %s" % (method, message["error"]))
                return message["result"]
            self.events.append(message)

    def wait_event(self, method, timeout=60):
        deadline = time.monotonic() + timeout
        while True:
            for index, event in enumerate(self.events):
                if event.get("method") == method:
                    return self.events.pop(index)
            self.events.append(self._message(max(0.1, deadline - time.monotonic())))

    def close(self):
        self.process.kill()
        self.process.wait()
        shutil.rmtree(self.profile, ignore_errors=True)


def screenshot(url, out, js=None, width=1400, height=900):
    browser = Browser(width, height)
    try:
        target = browser.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = browser.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        browser.call("Page.enable", session=session)
        browser.call("Emulation.setDeviceMetricsOverride", {"width": width, "height": height, "deviceScaleFactor": 1,
                                                            "mobile": False}, session=session)
        browser.call("Page.navigate", {"url": url}, session=session)
        browser.wait_event("Page.loadEventFired")
        if js:
            result = browser.call("Runtime.evaluate", {"expression": js, "awaitPromise": True}, session=session)
            if result.get("exceptionDetails"):
                raise RuntimeError("the page's script failed: %s" % result["exceptionDetails"])
        # The whole page, not only the window.
        size = browser.call("Runtime.evaluate", {"expression": "document.documentElement.scrollHeight",
                                                 "returnByValue": True}, session=session)["result"]["value"]
        png = browser.call("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": width, "height": max(height, int(size)), "scale": 1}}, session=session)
        with open(out, "wb") as handle:
            handle.write(base64.b64decode(png["data"]))
    finally:
        browser.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url")
    parser.add_argument("out")
    parser.add_argument("--js", help="a JavaScript expression run in the page before the picture (clicks, filters)")
    parser.add_argument("--width", type=int, default=1400)
    parser.add_argument("--height", type=int, default=900)
    args = parser.parse_args()
    screenshot(args.url, args.out, args.js, args.width, args.height)
    print("screenshot: %s" % args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
