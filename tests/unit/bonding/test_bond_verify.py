# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Post-activation verification on real /proc/net/bonding outputs (tests/fixtures/bonding)."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from fixture_data import read_fixture

from ansible_collections.gpufabric.core.plugins.filter.bond_verify import FilterModule
from ansible_collections.gpufabric.core.plugins.module_utils.bonding.config import normalize

bond_verify = FilterModule().filters()["bond_verify"]


def expected(members, **settings):
    return normalize(bonds=[dict({"name": "bond0", "members": members, "min_links": 0}, **settings)])["bonds"][0]


def test_healthy_supermicro_bond_matches_its_definition():
    text = read_fixture("bonding/magpie-supermicro-2x10g-802.3ad-healthy.txt")
    assert bond_verify(text, expected(["eno1", "eno3"], lacp_rate="fast")) == []


def test_members_by_permanent_mac():
    text = read_fixture("bonding/magpie-supermicro-2x10g-802.3ad-healthy.txt")
    assert bond_verify(text, expected(["3c:ec:ef:19:eb:2e", "3C:EC:EF:19:EB:30"])) == []
    problems = bond_verify(text, expected(["3c:ec:ef:19:eb:2e", "3c:ec:ef:19:eb:99"]))
    assert problems == ["bond0: no enslaved interface has the permanent MAC address 3c:ec:ef:19:eb:99"]


def test_cx6dx_bond_runs_lacp_slow_where_fast_was_configured():
    text = read_fixture("bonding/cx6dx-2x100g-802.3ad-lacp-partner-ok.txt")
    assert bond_verify(text, expected(["enp1s0f0", "enp1s0f1"])) == [
        "bond0: LACP rate is slow in the kernel, configured fast"]
    assert bond_verify(text, expected(["enp1s0f0", "enp1s0f1"], lacp_rate="slow")) == []


def test_misconfigured_bond_two_aggregators_and_churn():
    text = read_fixture("bonding/magpie-802.3ad-churned-mixed-speed-misconfig.txt")
    problems = bond_verify(text, expected(["enp197s0f0", "enp197s0f2"]))
    assert any("different aggregators" in p and "enp197s0f2 in aggregator 1" in p for p in problems), problems
    assert any("enp197s0f2" in p and "churned" in p for p in problems), problems
    assert any("different speeds" in p for p in problems), problems
    assert "bond0: the active aggregator holds 1 of 2 members" in problems
    assert all(p.startswith("bond0: ") for p in problems)


def test_missing_member_and_wrong_mode():
    text = read_fixture("bonding/magpie-supermicro-2x10g-802.3ad-healthy.txt")
    problems = bond_verify(text, expected(["eno1", "eno3", "eno4"]))
    assert problems == ["bond0: member eno4 is not enslaved"]
    problems = bond_verify(text, normalize(bonds=[{"name": "bond0", "mode": "balance-xor",
                                                   "members": ["eno1", "eno3"]}])["bonds"][0])
    assert problems[0].startswith("bond0: the kernel runs mode 802.3ad, configured balance-xor")


def test_absent_bond_is_a_problem_not_an_error():
    assert bond_verify("", expected(["eno1", "eno2"])) == [
        "bond0: /proc/net/bonding/bond0 does not exist: the kernel did not create the bond (is the bonding driver "
        "available?)"]


def test_text_that_is_not_bonding_output_raises_a_filter_error():
    with pytest.raises(AnsibleFilterError, match="Bonding Mode"):
        bond_verify("hello\n", expected(["eno1", "eno2"]))
