"""Every Molecule scenario under molecule/, each with its full test sequence (check and idempotence included)."""

import pytest

from integration_helpers import ROOT, run_logged, tail

SCENARIOS = sorted(p.parent.name for p in (ROOT / "molecule").glob("*/molecule.yml"))


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_molecule_scenario(scenario):
    rc, out = run_logged(f"molecule-{scenario}", ["molecule", "test", "-s", scenario], timeout=1200)
    assert rc == 0, f"molecule test -s {scenario} failed; full log in .cache/test-logs/molecule-{scenario}.log\n" + tail(out, 80)
