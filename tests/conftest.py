"""How `make test` shares the machine: two pytest workers (scripts/test.sh runs `-n 2 --dist loadgroup`).

The lab tests (every Molecule scenario, the site and packaging tests) run one after another on one worker, at normal
priority: their containers and VMs keep timers that are part of what they test (LACP, BFD, the bonding rollback, the
cooling fail-safe), and they leave about a third of the CPU idle while they wait on them. Everything else (unit tests,
sanity on each ansible-core line, lint, docs, the inventory checks) runs on the other worker at a lower priority, so
it takes the time the lab leaves idle and never the lab's. Run without -n, as a developer running one file does, the
tests run in one process as before.
"""

import os
from collections import defaultdict

import pytest

LAB_TESTS = ("tests/integration/test_molecule.py", "tests/integration/test_site.py",
             "tests/integration/test_packaging.py")
BACKGROUND_NICENESS = 10


def group_of(nodeid):
    return "lab" if nodeid.startswith(LAB_TESTS) else "checks"


# Before xdist's own hook, which reads the mark to keep each group on one worker.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    for item in items:
        item.add_marker(pytest.mark.xdist_group(group_of(item.nodeid)))


def pytest_runtest_setup(item):
    # A worker runs one group only; the one running the checks lowers its own priority once, for all it starts.
    if os.environ.get("PYTEST_XDIST_WORKER") and group_of(item.nodeid) == "checks":
        current = os.nice(0)
        if current < BACKGROUND_NICENESS:
            os.nice(BACKGROUND_NICENESS - current)


def pytest_terminal_summary(terminalreporter):
    # Each group's own time, beside the session's wall time that pytest prints: the stages of one CI run.
    seconds = defaultdict(float)
    for reports in terminalreporter.stats.values():
        for report in reports:
            if getattr(report, "when", None) in ("setup", "call", "teardown"):
                seconds[group_of(report.nodeid)] += report.duration
    if seconds:
        terminalreporter.write_line("test time per group: " + ", ".join(
            "%s %.0f s" % (group, seconds[group]) for group in sorted(seconds)))
