"""The declared ansible-core range, proven: ansible-test sanity and the unit tests on every older release line that
meta/runtime.yml admits (scripts/compat.sh, one cached virtual environment each). The newest line is the project's
own .venv, which the rest of this test session runs on."""

import subprocess

import pytest
import yaml

from integration_helpers import ROOT, run_logged, tail

COMPAT = ROOT / "scripts" / "compat.sh"
LINES = subprocess.run([str(COMPAT), "--list"], capture_output=True, text=True, check=True).stdout.split()


def test_the_declared_range_is_the_tested_range():
    declared = yaml.safe_load((ROOT / "meta" / "runtime.yml").read_text())["requires_ansible"]
    assert declared == ">=%s.0" % LINES[0], (declared, LINES)
    assert LINES == ["2.16", "2.17", "2.18"]


@pytest.mark.parametrize("line", LINES)
def test_sanity_and_unit_tests_pass_on_ansible_core(line):
    rc, out = run_logged("compat-%s" % line, [str(COMPAT), line], timeout=1500)
    assert rc == 0, tail(out, 60)
    assert "compat: ansible-core %s." % line in out and " passed in " in out
