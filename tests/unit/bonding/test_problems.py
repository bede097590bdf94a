# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""bonding_problems: the role's one controller-side check, every problem at once, each naming its variable."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.gpufabric.core.plugins.filter.bonding_problems import FilterModule
from ansible_collections.gpufabric.core.plugins.module_utils.bonding.inputs import (
    ROLLBACK_MARGIN, bond_defaults, bonding_problems)

ROOT = Path(__file__).resolve().parents[3]
bonding_problems_filter = FilterModule().filters()["bonding_problems"]

BOND = {"name": "bond0", "members": ["ens1f0np0", "ens1f1np1"]}


def role_settings(**overrides):
    """The role's defaults, read from the role as data, overlaid as an inventory would."""
    settings = yaml.safe_load((ROOT / "roles" / "bonding" / "defaults" / "main.yml").read_text())
    settings.update(overrides)
    return settings


def test_the_role_defaults_are_usable():
    assert bonding_problems(role_settings()) == []
    assert bonding_problems(role_settings(bonding_bonds=[BOND])) == []


def test_every_problem_at_once_bonds_and_rollback_window():
    problems = bonding_problems(role_settings(
        bonding_bonds=[dict(BOND, mtu=9300), {"name": "bond1", "members": ["ens1f1np1", "ens2f0"]}],
        bonding_lacp_rate="turbo", bonding_rollback_timeout=60))
    assert "bonding_bonds[0] (bond0).mtu: 9300 is out of range 1280-9216" in problems
    assert any(p.startswith("bonding_bonds[1] (bond1).members[0]: ens1f1np1 is already a member of") for p in problems)
    assert any("bonding_lacp_rate" in p and "turbo" in p for p in problems)
    assert problems[-1].startswith("bonding_rollback_timeout (60 s) must be at least")


def test_addressing_rules_run_when_the_definitions_are_well_formed():
    problems = bonding_problems(role_settings(bonding_bonds=[BOND], bonding_vlans=[
        {"id": 110, "link": "bond0", "addresses": ["10.110.1.5/16"]},
        {"id": 111, "link": "bond0", "addresses": ["10.110.7.5/24"]}]))
    assert len(problems) == 1 and problems[0].startswith("bonding_vlans[1] (bond0.111).addresses[0]: 10.110.7.5/24 overlaps")


def test_role_wide_defaults_reach_the_bonds():
    assert bond_defaults(role_settings(bonding_mtu=1500))["mtu"] == 1500
    problems = bonding_problems(role_settings(bonding_bonds=[BOND], bonding_mtu=9300))
    assert problems and all("9300" in p for p in problems)


@pytest.mark.parametrize("settle, confirm, verify, bonds, needed", [
    (5, 60, True, [], 5 + 2 * 60 + ROLLBACK_MARGIN),          # nothing to verify without bonds
    (5, 60, True, [BOND], 5 + 2 * 60 + 60 + ROLLBACK_MARGIN),  # bonds verified: their timeout counts
    (5, 60, False, [BOND], 5 + 2 * 60 + ROLLBACK_MARGIN),
    # The one type of every role's <role>_verify (true and false above are its deprecated values).
    (5, 60, "after_change", [BOND], 5 + 2 * 60 + 60 + ROLLBACK_MARGIN),
    (5, 60, "always", [BOND], 5 + 2 * 60 + 60 + ROLLBACK_MARGIN),
    (5, 60, "never", [BOND], 5 + 2 * 60 + ROLLBACK_MARGIN),
])
def test_rollback_window_boundary(settle, confirm, verify, bonds, needed):
    def at(timeout):
        return bonding_problems(role_settings(bonding_bonds=bonds, bonding_settle_seconds=settle,
                                              bonding_confirm_timeout=confirm, bonding_verify=verify,
                                              bonding_verify_timeout=60, bonding_rollback_timeout=timeout))
    assert at(needed) == []
    (problem,) = at(needed - 1)
    assert problem.startswith("bonding_rollback_timeout (%d s) must be at least bonding_settle_seconds (%d) + "
                              "2 x bonding_confirm_timeout (%d; " % (needed - 1, settle, confirm))
    assert "= %d s, or the host could revert a good change" % needed in problem
    assert ("+ bonding_verify_timeout (60) +" in problem) == (verify not in (False, "never") and bool(bonds))


def test_a_verify_value_of_no_known_mode_is_named():
    assert bonding_problems(role_settings(bonding_bonds=[BOND], bonding_verify="sometimes")) == [
        "bonding_verify: must be after_change, always or never (true and false are deprecated); got 'sometimes'"]


def test_the_message_the_rollback_scenario_reads():
    # molecule/bonding_rollback: settle 5 + 2 x confirm 60 + margin 20 = 145 s, no bonds.
    (problem,) = bonding_problems(role_settings(bonding_ethernets=[{"name": "eth0", "addresses": ["192.0.2.10/24"]}],
                                                bonding_rollback_timeout=85, bonding_settle_seconds=5,
                                                bonding_confirm_timeout=60))
    assert "2 x bonding_confirm_timeout (60" in problem and "= 145 s" in problem


def test_timings_as_strings_from_extra_vars_and_bad_timings():
    assert bonding_problems(role_settings(bonding_rollback_timeout="240", bonding_confirm_timeout="60")) == []
    problems = bonding_problems(role_settings(bonding_rollback_timeout="4 minutes", bonding_settle_seconds=-1))
    assert problems == ["bonding_rollback_timeout: must be a whole number of seconds, 0 or more; got '4 minutes'",
                        "bonding_settle_seconds: must be a whole number of seconds, 0 or more; got -1"]


def test_without_a_rollback_timeout_the_window_is_not_checked():
    assert bonding_problems({"bonding_bonds": [BOND]}) == []


def test_filter_refuses_what_is_not_a_dict():
    with pytest.raises(AnsibleFilterError, match="must be a dict of bonding_"):
        bonding_problems_filter([BOND])
    assert bonding_problems_filter(role_settings()) == []
