# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Validation of the bonding role's variables: every bad input fails, naming the variable and the item."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpufabric.core.plugins.filter.bond_validate import FilterModule
from ansible_collections.gpufabric.core.plugins.module_utils.bonding.validate import BondingConfigError, normalize

bond_validate = FilterModule().filters()["bond_validate"]

BOND = {"name": "bond0", "members": ["ens1f0np0", "ens1f1np1"]}


def problems_of(**kwargs):
    with pytest.raises(BondingConfigError) as caught:
        normalize(**kwargs)
    return caught.value.problems


def test_defaults_follow_the_mode():
    config = normalize(bonds=[BOND, {"name": "bond1", "mode": "active-backup", "members": ["eno1", "eno2"],
                                     "primary": "eno1"}])
    lacp, backup = config["bonds"]
    assert (lacp["mode"], lacp["miimon"], lacp["lacp_rate"], lacp["xmit_hash_policy"], lacp["ad_select"],
            lacp["min_links"], lacp["mtu"]) == ("802.3ad", 100, "fast", "layer3+4", "stable", 1, 9000)
    # active-backup reads none of the LACP or hashing options: the role defaults must not leak into it.
    assert (backup["lacp_rate"], backup["xmit_hash_policy"], backup["ad_select"], backup["min_links"]) == (
        None, None, None, None)
    assert backup["primary"] == "eno1"
    assert [m["name"] for m in lacp["members"]] == ["ens1f0np0", "ens1f1np1"]


def test_members_by_mac_are_normalised():
    config = normalize(bonds=[{"name": "bond0", "members": ["B8-CE-F6-01-02-03", "ens2"]}])
    member = config["bonds"][0]["members"][0]
    assert member == {"name": None, "mac": "b8:ce:f6:01:02:03", "id": "bond0-port0"}


@pytest.mark.parametrize("key, value, expected", [
    ("mode", "802.3ae", "bonding_bonds[0] (bond0).mode: '802.3ae' is not one of"),
    ("lacp_rate", "turbo", "bonding_bonds[0] (bond0).lacp_rate: 'turbo' is not one of slow, fast"),
    ("xmit_hash_policy", "layer9", "bonding_bonds[0] (bond0).xmit_hash_policy: 'layer9' is not one of"),
    ("ad_select", "fastest", "bonding_bonds[0] (bond0).ad_select: 'fastest' is not one of"),
    ("mtu", 9217, "bonding_bonds[0] (bond0).mtu: 9217 is out of range 1280-9216"),
    ("mtu", 576, "bonding_bonds[0] (bond0).mtu: 576 is out of range 1280-9216"),
    ("mtu", "jumbo", "bonding_bonds[0] (bond0).mtu: 'jumbo' is not an integer"),
    ("min_links", 3, "bonding_bonds[0] (bond0).min_links: 3 is more than the bond's 2 members"),
    ("addresses", ["10.0.0.300/24"], "bonding_bonds[0] (bond0).addresses[0]: '10.0.0.300/24' is not an IP address"),
    ("addresses", ["10.0.0.5"], "bonding_bonds[0] (bond0).addresses[0]: '10.0.0.5' is not an IP address with a "
                                "prefix length"),
    ("addresses", ["10.0.0.0/24"], "is a network address, not a host address"),
    ("miimon", -1, "bonding_bonds[0] (bond0).miimon: -1 is out of range 1-10000"),
    ("speed", 100, "bonding_bonds[0] (bond0): unknown keys speed"),
    # A comma-separated string is the likely mistake; "at least one member" told the user nothing.
    ("members", "ens1f0np0,ens1f1np1", "bonding_bonds[0] (bond0).members: must be a list of interface names or MAC "
                                       "addresses, one item each, got a string 'ens1f0np0,ens1f1np1'"),
    ("members", [], "bonding_bonds[0] (bond0).members: must list at least one member interface"),
    ("members", None, "bonding_bonds[0] (bond0).members: must list at least one member interface"),
])
def test_bad_bond_values_name_the_variable(key, value, expected):
    problems = problems_of(bonds=[dict(BOND, **{key: value})])
    assert any(expected in problem for problem in problems), problems


def test_options_of_other_modes_are_refused():
    problems = problems_of(bonds=[dict(BOND, mode="active-backup", lacp_rate="fast", xmit_hash_policy="layer2")])
    assert "bonding_bonds[0] (bond0).lacp_rate: applies only to mode 802.3ad, not to active-backup; remove it " \
           "from this bond" in problems
    assert any(p.startswith("bonding_bonds[0] (bond0).xmit_hash_policy: applies only to mode balance-xor")
               for p in problems)


def test_role_wide_defaults_are_checked_too():
    problems = problems_of(bonds=[BOND], bond_defaults={"lacp_rate": "turbo", "mtu": 10000})
    assert "bonding_lacp_rate: 'turbo' is not one of slow, fast" in problems
    assert "bonding_mtu: 10000 is out of range 1280-9216" in problems


def test_member_in_two_bonds():
    problems = problems_of(bonds=[BOND, {"name": "bond1", "members": ["ens1f1np1", "ens2"]}])
    assert problems == ["bonding_bonds[1] (bond1).members[0]: ens1f1np1 is already a member of "
                        "bonding_bonds[0] (bond0); an interface can be in one bond only"]


def test_same_mac_in_two_bonds_whatever_its_spelling():
    problems = problems_of(bonds=[{"name": "bond0", "mode": "active-backup", "members": ["b8:ce:f6:01:02:03"]},
                                  {"name": "bond1", "mode": "active-backup", "members": ["B8-CE-F6-01-02-03"]}])
    assert "already a member of bonding_bonds[0] (bond0)" in problems[0]


def test_member_cannot_also_be_a_plain_interface():
    problems = problems_of(bonds=[BOND], ethernets=[{"name": "ens1f0np0", "addresses": ["192.0.2.1/24"]}])
    assert problems[0].startswith("bonding_ethernets[0] (ens1f0np0).name: ens1f0np0 is a member of bonding_bonds[0]")


@pytest.mark.parametrize("vlan, expected", [
    ({"id": 4095, "link": "bond0"}, "bonding_vlans[0].id: 4095 is out of range 1-4094"),
    ({"id": 0, "link": "bond0"}, "bonding_vlans[0].id: 0 is out of range 1-4094"),
    ({"link": "bond0"}, "bonding_vlans[0].id: missing"),
    ({"id": 100, "link": "bond9"}, "bonding_vlans[0].link: 'bond9' is not a bond in bonding_bonds"),
    ({"id": 100, "link": "bond0", "mtu": 9100}, "bonding_vlans[0].mtu: 9100 is larger than the MTU 9000 of its "
                                                "parent bond0"),
    ({"id": 100, "link": "bond0", "name": "storage-vlan-0100"}, "is longer than the kernel's 15 characters"),
    ({"id": 100, "link": "bond0", "addresses": ["fd00::1/129"]}, "bonding_vlans[0].addresses[0]: 'fd00::1/129'"),
])
def test_bad_vlans_name_the_variable(vlan, expected):
    problems = problems_of(bonds=[BOND], vlans=[vlan])
    assert any(expected in problem for problem in problems), problems


def test_duplicate_vlan_and_duplicate_address():
    problems = problems_of(bonds=[dict(BOND, addresses=["10.1.0.5/24"])],
                           vlans=[{"id": 100, "link": "bond0", "addresses": ["10.1.0.5/24"]},
                                  {"id": 100, "link": "bond0", "name": "v100"}])
    assert any("bonding_vlans[1] (v100).id: VLAN 100 on bond0 is already defined by bonding_vlans[0]" in p
               for p in problems), problems
    assert any("address 10.1.0.5 is also assigned to bond0" in p for p in problems), problems


@pytest.mark.parametrize("route, expected", [
    ({"to": "default"}, "a default route needs 'via'"),
    ({"to": "10.3.0.0/15", "via": "10.1.0.1"}, "'10.3.0.0/15' is not a network in CIDR notation"),
    ({"to": "10.2.0.0/16", "via": "fd00::1"}, "destination 10.2.0.0/16 is IPv4 but gateway fd00::1 is IPv6"),
    ({"to": "10.2.0.0/16", "via": "10.1.0.1", "table": 0}, "routes[0].table: 0 is out of range"),
    ({"to": "10.2.0.0/16", "gw": "10.1.0.1"}, "unknown keys gw"),
])
def test_bad_routes(route, expected):
    problems = problems_of(bonds=[dict(BOND, addresses=["10.1.0.5/24"], routes=[route])])
    assert any(p.startswith("bonding_bonds[0] (bond0).routes[0]") and expected in p for p in problems), problems


def test_routing_policy():
    config = normalize(bonds=[dict(BOND, addresses=["10.1.0.5/24"],
                                   routing_policy=[{"from": "10.1.0.0/24", "table": 101, "priority": 100}])])
    assert config["bonds"][0]["routing_policy"] == [
        {"from": "10.1.0.0/24", "to": None, "table": 101, "priority": 100}]
    problems = problems_of(bonds=[dict(BOND, routing_policy=[{"from": "10.1.0.0/24"},
                                                             {"table": 5},
                                                             {"to": "10.0.0.0/8", "table": 5, "priority": 32766}])])
    assert "bonding_bonds[0] (bond0).routing_policy[0].table: missing (the routing table the rule selects)" in problems
    assert "bonding_bonds[0] (bond0).routing_policy[1]: needs 'from' or 'to' (a network in CIDR notation)" in problems
    assert "bonding_bonds[0] (bond0).routing_policy[2].priority: 32766 is out of range 0-32765" in problems


def test_every_problem_is_reported_at_once():
    problems = problems_of(bonds=[dict(BOND, mode="xor", mtu=100000)], vlans=[{"id": 5000, "link": "bond0"}])
    assert len(problems) == 3, problems


def test_filter_raises_ansible_filter_error_with_the_variable():
    with pytest.raises(AnsibleFilterError) as caught:
        bond_validate([dict(BOND, lacp_rate="turbo")])
    assert "bonding_bonds[0] (bond0).lacp_rate: 'turbo'" in str(caught.value)
    assert bond_validate([BOND])["bonds"][0]["name"] == "bond0"


def test_strings_of_digits_from_extra_vars_are_integers():
    config = normalize(bonds=[dict(BOND, mtu="9000", miimon="50")], vlans=[{"id": "100", "link": "bond0"}])
    assert (config["bonds"][0]["mtu"], config["bonds"][0]["miimon"], config["vlans"][0]["id"]) == (9000, 50, 100)


def test_a_value_read_from_the_inventory_is_named_as_the_inventory_says_it():
    """ansible-core 2.19 hands filters tagged copies (_AnsibleTaggedStr): their class names mean nothing to a user."""
    tags = pytest.importorskip("ansible._internal._datatag._tags")
    bonds = tags.Origin(path="/inventory/group_vars/gpu.yml", line_num=3).tag("bond0")
    assert problems_of(bonds=bonds) == ["bonding_bonds: must be a list, got a string"]
