# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Open a verification report in headless Chromium and check what its scripts drew.

Chromium's --dump-dom prints the DOM after the page's scripts ran; with --enable-logging
the page's console errors (uncaught exceptions included) go to stderr. Both are checked:
the page's script sets body[data-rendered=true] as its last statement, so an exception
anywhere leaves it false even if the log line format changes.

Usable as a library (the pytest test, the Molecule scenario) and from the command line:
  python tests/browser/report_check.py reports/verify.html --failing-host node3
"""

from __future__ import annotations

import argparse
import html.parser
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run", "--disable-dev-shm-usage", "--enable-logging=stderr", "--v=0",
]
_SCRIPT_ERROR_MARKERS = ("Uncaught", "SyntaxError", "ReferenceError", "TypeError")


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def dump_dom(html_path, timeout=120):
    """(DOM after scripts ran, console lines that report script errors)."""
    chromium = find_chromium()
    if chromium is None:
        raise RuntimeError("chromium is not installed: apt-get install chromium")
    with tempfile.TemporaryDirectory(prefix="gpufabric-chromium-") as profile:
        run = subprocess.run(
            [chromium, *CHROMIUM_FLAGS, "--user-data-dir=" + profile, "--dump-dom", Path(html_path).resolve().as_uri()],
            capture_output=True, text=True, timeout=timeout, check=False,
        )
    if run.returncode != 0 or "<html" not in run.stdout:
        raise RuntimeError("chromium exited with %d: %s" % (run.returncode, run.stderr.strip()[-2000:]))
    errors = [line for line in run.stderr.splitlines() if "CONSOLE" in line and any(marker in line for marker in _SCRIPT_ERROR_MARKERS)]
    return run.stdout, errors


class _Elements(html.parser.HTMLParser):
    """Every element's tag and attributes, plus the text of the elements with an id."""

    def __init__(self):
        super().__init__()
        self.elements = []
        self.text_by_id = {}
        self._open_ids = []

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        self.elements.append((tag, attributes))
        if attributes.get("id"):
            self._open_ids.append((tag, attributes["id"]))
            self.text_by_id.setdefault(attributes["id"], "")

    def handle_endtag(self, tag):
        if self._open_ids and self._open_ids[-1][0] == tag:
            self._open_ids.pop()

    def handle_data(self, data):
        for _tag, element_id in self._open_ids:
            self.text_by_id[element_id] += data


def _classes(attributes):
    return set((attributes.get("class") or "").split())


def check_rendered(dom, script_errors, failing_hosts=(), passing_hosts=()):
    """Problems found in the rendered page, as sentences; empty when it rendered as it should."""
    parser = _Elements()
    parser.feed(dom)
    problems = ["script error: %s" % line for line in script_errors]
    body = [attrs for tag, attrs in parser.elements if tag == "body"]
    if not body or body[0].get("data-rendered") != "true":
        problems.append("the page's script did not run to its end (body data-rendered is not true)")
    tables = [attrs for tag, attrs in parser.elements if tag == "table" and "heatmap" in _classes(attrs)]
    cells = [attrs for tag, attrs in parser.elements if tag == "td" and "cell" in _classes(attrs)]
    if not tables or not cells:
        problems.append("no heatmap drawn (%d heatmap tables, %d value cells)" % (len(tables), len(cells)))
    marked = set(attrs.get("data-host") for tag, attrs in parser.elements if tag == "th" and "host-fail" in _classes(attrs))
    for host in failing_hosts:
        if host not in marked:
            problems.append("failing host %s is not marked in the heatmap" % host)
        if not any(attrs.get("data-host") == host and "cell-fail" in _classes(attrs) for attrs in cells):
            problems.append("no cell of failing host %s is marked as below expectation" % host)
    for host in passing_hosts:
        if host in marked:
            problems.append("passing host %s is marked as failing" % host)
    verdict = parser.text_by_id.get("verdict", "").strip()
    if verdict != ("FAIL" if failing_hosts else "PASS"):
        problems.append("the verdict shows %r" % verdict)
    if failing_hosts and not parser.text_by_id.get("failure-list", "").strip():
        problems.append("the failure list is empty")
    return problems


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", help="path of verify.html")
    parser.add_argument("--failing-host", action="append", default=[], help="a host the heatmap must mark as failing")
    parser.add_argument("--passing-host", action="append", default=[], help="a host the heatmap must not mark")
    args = parser.parse_args(argv)
    dom, errors = dump_dom(args.report)
    problems = check_rendered(dom, errors, args.failing_host, args.passing_host)
    for problem in problems:
        print("FAIL: " + problem)
    if not problems:
        print("OK: %s rendered: heatmap drawn, no script errors, failing hosts marked: %s" % (args.report, ", ".join(args.failing_host) or "none"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
