#!/usr/bin/env python3
"""The end-of-run table of scripts/test.sh: each stage, each scenario and other long test with its time, and the two
pytest workers' busy and idle time, so that whoever reads a CI log sees where its minutes went.

Inputs, both under .cache/test-logs: stages.tsv (name, seconds, exit status; one line per stage of test.sh) and
test-timings.json (written by tests/conftest.py at the end of the pytest session)."""

import json
import re
import sys
from pathlib import Path

LOGS = Path(__file__).resolve().parents[1] / ".cache" / "test-logs"
# Tests shorter than this are counted together per worker.
LISTED_SECONDS = 10.0


def label(nodeid):
    """A short name: the Molecule scenario or compat line a parametrised test runs, else file::test."""
    found = re.match(r"tests/integration/test_(molecule|compat)\.py::\w+\[([\w.]+)\]$", nodeid)
    if found:
        return "%s %s" % ("molecule" if found.group(1) == "molecule" else "compat", found.group(2))
    path, _, name = nodeid.partition("::")
    return "%s::%s" % (Path(path).stem, name)


def table(stages, timings):
    lines = ["%-58s %8s  %s" % ("stage", "seconds", "exit")]
    lines += ["%-58s %8d  %s" % (name, int(seconds), rc) for name, seconds, rc in stages]
    if timings:
        tests = timings["tests"]
        lines += ["", "%-58s %8s  %s" % ("test (setup, call and teardown)", "seconds", "worker")]
        listed = sorted((t for t in tests if t["seconds"] >= LISTED_SECONDS), key=lambda t: -t["seconds"])
        for test in listed:
            outcome = "" if test["outcome"] == "passed" else "  " + test["outcome"].upper()
            lines.append("%-58s %8d  %s%s" % (label(test["nodeid"])[:58], test["seconds"], test["group"], outcome))
        for group in sorted({t["group"] for t in tests}):
            short = [t for t in tests if t["group"] == group and t["seconds"] < LISTED_SECONDS]
            if short:
                lines.append("%-58s %8d  %s" % ("%d tests under %d s each" % (len(short), LISTED_SECONDS),
                                                sum(t["seconds"] for t in short), group))
        wall = timings["wall_seconds"]
        lines += ["", "%-58s %8s %8s" % ("pytest worker (wall %d s)" % wall, "busy", "idle")]
        for group in sorted({t["group"] for t in tests}):
            busy = sum(t["seconds"] for t in tests if t["group"] == group)
            lines.append("%-58s %8d %8d" % (group, busy, max(wall - busy, 0)))
    return "\n".join(lines)


def main():
    stages = []
    stage_file = LOGS / "stages.tsv"
    if stage_file.exists():
        for line in stage_file.read_text().splitlines():
            name, seconds, rc = line.split("\t")
            stages.append((name, int(seconds), rc))
    timings_file = LOGS / "test-timings.json"
    timings = json.loads(timings_file.read_text()) if timings_file.exists() else None
    print(table(stages, timings))
    return 0


if __name__ == "__main__":
    sys.exit(main())
