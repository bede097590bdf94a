"""The declared ansible-core range, proven: ansible-test sanity and the unit tests that exercise ansible-core on every
release line that meta/runtime.yml admits besides the project's own .venv (scripts/compat.sh, one cached virtual
environment each; the lines that need a newer Python than this machine's run in the Debian 13 controller container).
The .venv's line is tested in full by the rest of this test session."""

import os
import re
import subprocess

import ansible.release
import pytest
import yaml

from integration_helpers import ROOT, run_logged, tail

COMPAT = ROOT / "scripts" / "compat.sh"
LINES = subprocess.run([str(COMPAT), "--list"], capture_output=True, text=True, check=True).stdout.split()
# The newest ansible-core line this range claims: the one today's `pip install ansible` brings on Python 3.12+.
NEWEST_LINE = "2.21"
# The line of the project's own .venv, tested in full by the rest of the session.
OWN_LINE = ".".join(ansible.release.__version__.split(".")[:2])


def _minor(line):
    return int(line.split(".")[1])


def test_the_declared_range_is_the_tested_range():
    declared = yaml.safe_load((ROOT / "meta" / "runtime.yml").read_text())["requires_ansible"]
    tested = sorted(LINES + [OWN_LINE], key=_minor)
    assert declared == ">=%s.0" % tested[0], (declared, tested)
    # Every line from the oldest declared to the newest, none skipped, the .venv's once.
    assert [_minor(line) for line in tested] == list(range(_minor(tested[0]), _minor(NEWEST_LINE) + 1)), tested
    assert OWN_LINE not in LINES


@pytest.mark.parametrize("line", LINES)
def test_sanity_and_unit_tests_pass_on_ansible_core(line):
    rc, out = run_logged("compat-%s" % line, [str(COMPAT), line], timeout=1500)
    assert rc == 0, tail(out, 60)
    assert "compat: ansible-core %s." % line in out and " passed in " in out
    # The unit tests that exercise ansible-core run on the oldest line and on the newest (scripts/compat.sh
    # UNIT_LINES); the lines between run sanity, as .venv's line runs them in full.
    if line in (min(LINES, key=_minor), NEWEST_LINE):
        assert "unit tests that exercise ansible-core" in out and re.search(r"^\d+ passed", out, re.M), tail(out, 30)


CONVERGE_LAB = "gpufabric-compat-controller"


@pytest.fixture()
def two_node_lab():
    env = dict(os.environ, GPUFABRIC_LAB_NAME=CONVERGE_LAB, GPUFABRIC_LAB_SUBNET="10.231.30.0/24")
    subprocess.run([str(ROOT / "scripts" / "lab.sh"), "up", "2"], env=env, check=True)
    yield env, ROOT / "inventories" / "lab" / ("%s.yml" % CONVERGE_LAB)
    subprocess.run([str(ROOT / "scripts" / "lab.sh"), "down"], env=env, check=False)


def test_a_lab_converged_from_the_newest_line_changes_nothing_the_second_time(two_node_lab):
    """A Debian 13 controller (Python 3.13) with the newest ansible-core line converges a two-node lab: discovery, the
    IPsec mesh with its CA on that controller, NCCL; the second run changes nothing, and ansible-core warns of nothing
    the collection uses."""
    env, inventory = two_node_lab
    outputs = []
    for run in ("first", "second"):
        rc, out = run_logged("compat-%s-converge-%s" % (NEWEST_LINE, run), [
            str(COMPAT), "--playbook", NEWEST_LINE, CONVERGE_LAB, "-i", str(inventory),
            str(ROOT / "playbooks" / "site.yml"), "--tags", "discover,ipsec,nccl"], env=env, timeout=1200)
        assert rc == 0, tail(out, 80)
        outputs.append(out)
    first, second = outputs
    assert re.search(r"ansible-playbook from ansible-core %s\.\d+ \(Python 3\.1[3-9]" % re.escape(NEWEST_LINE), first)
    recap = dict(re.findall(r"^(node0[12])\s+: ok=\d+\s+changed=(\d+)", second, re.M))
    assert recap == {"node01": "0", "node02": "0"}, tail(second, 30)
    for out in outputs:
        assert "[DEPRECATION WARNING]" not in out, [line for line in out.splitlines() if "DEPRECATION" in line]
