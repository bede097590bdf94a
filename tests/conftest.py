"""How `make test` shares the machine: three pytest workers (scripts/test.sh runs `-n 3 --dist loadgroup`).

The foreground worker runs, one after another and at normal priority, the lab tests whose assertions depend on
timers or rates: LACP and BFD timeouts, the bonding rollback, the cooling fail-safe, IPsec over kernel SAs, the
bandwidth gates, and the site test. They leave part of the CPU idle while they wait on those timers. Two background
workers run everything else at a lower priority in that idle time: one the Molecule scenarios whose assertions hold at
any speed (the container ipsec scenario among them: its waits poll for a state with a deadline, nothing measures a
rate or a timer) and the compat lines that run in the Debian 13 controller container; the other the unit tests,
sanity on the other ansible-core lines, lint, docs, the inventory checks and packaging. Two, because one background
worker was the longest of the run (about 3,000 s busy) while the scenarios' own waits left the CPU idle now and
then; at nice 10 both yield to the foreground. The VM scenario comes last on the foreground worker, so that the image
and snapshot scripts/test.sh builds for them in the background are ready when the first starts. Run without -n, as a
developer running one file does, the tests run in one process as before.
"""

import json
import os
import re
import time
from collections import defaultdict
from pathlib import Path

import pytest

from integration.integration_helpers import VM_SCENARIOS

# Where each test's time goes for scripts/test.sh's end-of-run table (scripts/test_table.py reads it).
TIMINGS = Path(__file__).resolve().parents[1] / ".cache" / "test-logs" / "test-timings.json"

# Scenarios without protocol timers or bandwidth gates in what they assert.
BACKGROUND_SCENARIOS = {"fabric", "ipsec", "nccl", "rdma"}
# The compat lines that run in the controller container (scripts/compat.sh): podman work, like the scenarios. The
# converge from the newest line stays with packaging, whose lab uses the same subnet.
CONTAINER_COMPAT = re.compile(r"tests/integration/test_compat\.py::test_sanity_and_unit_tests_pass_on_ansible_core\[2\.2\d\]")

BACKGROUND_NICENESS = 10


def scenario_of(nodeid):
    """The Molecule scenario a test_molecule.py test runs, else None."""
    scenario = re.match(r"tests/integration/test_molecule\.py::\w+\[(\w+)\]", nodeid)
    return scenario.group(1) if scenario else None


def group_of(nodeid):
    if nodeid.startswith("tests/integration/test_site.py"):
        return "foreground"
    scenario = scenario_of(nodeid)
    if scenario and scenario not in BACKGROUND_SCENARIOS:
        return "foreground"
    if scenario or CONTAINER_COMPAT.match(nodeid):
        return "background-labs"
    return "background"


# Before xdist's own hook, which reads the mark to keep each group on one worker.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    for item in items:
        item.add_marker(pytest.mark.xdist_group(group_of(item.nodeid)))
    # The VM scenario last on its worker: scripts/test.sh builds its image and snapshot in the background
    # meanwhile, and it would otherwise wait for them.
    items.sort(key=lambda item: scenario_of(item.nodeid) in VM_SCENARIOS)


def pytest_runtest_setup(item):
    # A worker runs one group only; a background one lowers its own priority once, for all it starts.
    if os.environ.get("PYTEST_XDIST_WORKER") and group_of(item.nodeid) != "foreground":
        current = os.nice(0)
        if current < BACKGROUND_NICENESS:
            os.nice(BACKGROUND_NICENESS - current)


_STARTED = pytest.StashKey[float]()


def pytest_sessionstart(session):
    session.config.stash[_STARTED] = time.monotonic()


def pytest_terminal_summary(terminalreporter):
    # Each group's own time, beside the session's wall time that pytest prints: the stages of one CI run.
    seconds = defaultdict(float)
    tests = defaultdict(lambda: {"seconds": 0.0, "outcome": "passed"})
    for reports in terminalreporter.stats.values():
        for report in reports:
            if getattr(report, "when", None) in ("setup", "call", "teardown"):
                seconds[group_of(report.nodeid)] += report.duration
                test = tests[report.nodeid]
                test["seconds"] += report.duration
                if report.outcome != "passed" and test["outcome"] == "passed":
                    test["outcome"] = report.outcome
    if seconds:
        terminalreporter.write_line("test time per group: " + ", ".join(
            "%s %.0f s" % (group, seconds[group]) for group in sorted(seconds)))
    # Only the session that ran the workers (or the single process) writes the table's input.
    if os.environ.get("PYTEST_XDIST_WORKER") or not tests:
        return
    wall = time.monotonic() - terminalreporter.config.stash.get(_STARTED, time.monotonic())
    TIMINGS.parent.mkdir(parents=True, exist_ok=True)
    TIMINGS.write_text(json.dumps({
        "wall_seconds": wall,
        "workers": int(getattr(terminalreporter.config.option, "numprocesses", 0) or 1),
        "tests": [dict(test, nodeid=nodeid, group=group_of(nodeid)) for nodeid, test in sorted(tests.items())],
    }, indent=1))
