#!/usr/bin/env python
"""The end-of-run table of scripts/test.sh: each stage, each scenario and other long test with its time, and the
pytest workers' busy and idle time, so that whoever reads a CI log sees where its minutes went.

Inputs, under .cache/test-logs: stages.tsv (name, seconds, exit status; one line per stage of test.sh),
test-timings.json (written by tests/conftest.py at the end of the pytest session) and vmstat.log (`vmstat -n 10`
while the stages ran: how much of the two cores the run used)."""

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
    path, _separator, name = nodeid.partition("::")
    return "%s::%s" % (Path(path).stem, name)


def cpu_use(vmstat_text):
    """Mean user+system, I/O wait and idle percent of vmstat's samples after its first (since boot) line."""
    samples = []
    for line in vmstat_text.splitlines():
        fields = line.split()
        if len(fields) >= 17 and fields[0].isdigit():
            samples.append([int(value) for value in fields[12:16]])
    samples = samples[1:]
    if not samples:
        return None
    user, system, idle, wait = (sum(column) / len(samples) for column in zip(*samples))
    return user + system, wait, idle, len(samples)


def table(stages, timings, cpu=None):
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
    if cpu:
        lines += ["", "CPU over the run (vmstat, %d samples of 10 s): %.0f %% busy, %.0f %% waiting on I/O, %.0f %% idle"
                  % (cpu[3], cpu[0], cpu[1], cpu[2])]
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
    vmstat_file = LOGS / "vmstat.log"
    cpu = cpu_use(vmstat_file.read_text()) if vmstat_file.exists() else None
    print(table(stages, timings, cpu))
    return 0


if __name__ == "__main__":
    sys.exit(main())
