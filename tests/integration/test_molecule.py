"""Every Molecule scenario under molecule/, each with its full test sequence (check and idempotence included)."""

import re

import pytest

from integration_helpers import ROOT, VM_SCENARIOS, run_logged, tail

SCENARIOS = sorted(p.parent.name for p in (ROOT / "molecule").glob("*/molecule.yml"))


# The VM scenario boots QEMU VMs under software emulation, rebuilds an initramfs and reboots them.
VM_SCENARIO_TIMEOUT = 1800
CONTAINER_SCENARIO_TIMEOUT = 1200


def verifier_failures(out):
    """The failed Testinfra tests and their assertion lines: a failed verify step's tail is the destroy step's output."""
    lines = re.sub(r"\x1b\[[0-9;]*m", "", out).splitlines()
    starts = [index for index, line in enumerate(lines) if "verify: Executing Testinfra" in line]
    if not starts:
        return ""
    section = (line.lstrip(" \u2502") for line in lines[starts[-1]:])
    return "\n".join(line for line in section if re.match(r"(FAILED |E )", line))


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_molecule_scenario(scenario):
    timeout = VM_SCENARIO_TIMEOUT if scenario in VM_SCENARIOS else CONTAINER_SCENARIO_TIMEOUT
    rc, out = run_logged(f"molecule-{scenario}", ["molecule", "test", "-s", scenario], timeout=timeout)
    assert rc == 0, f"molecule test -s {scenario} failed; full log in .cache/test-logs/molecule-{scenario}.log\n" + (
        verifier_failures(out) + "\n" + tail(out, 80))
