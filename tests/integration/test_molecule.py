"""Every Molecule scenario under molecule/, each with its full test sequence (check and idempotence included)."""

import pytest

from integration_helpers import ROOT, run_logged, tail

SCENARIOS = sorted(p.parent.name for p in (ROOT / "molecule").glob("*/molecule.yml"))


# The *_kernel scenarios boot QEMU VMs under software emulation; rdma_kernel also rebuilds an initramfs and reboots.
VM_SCENARIO_TIMEOUT = 1800
CONTAINER_SCENARIO_TIMEOUT = 1200


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_molecule_scenario(scenario):
    timeout = VM_SCENARIO_TIMEOUT if scenario.endswith("_kernel") else CONTAINER_SCENARIO_TIMEOUT
    rc, out = run_logged(f"molecule-{scenario}", ["molecule", "test", "-s", scenario], timeout=timeout)
    assert rc == 0, f"molecule test -s {scenario} failed; full log in .cache/test-logs/molecule-{scenario}.log\n" + tail(out, 80)
