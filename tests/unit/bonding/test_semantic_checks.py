# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Values that pass the type check but are wrong: refused on the controller, naming the variable's path."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpufabric.core.plugins.filter.bond_validate import FilterModule
from ansible_collections.gpufabric.core.plugins.module_utils.bonding.addressing import addressing_problems
from ansible_collections.gpufabric.core.plugins.module_utils.bonding.validate import is_mac, normalize

bond_validate = FilterModule().filters()["bond_validate"]

BOND = {"name": "bond0", "members": ["ens1f0np0", "ens1f1np1"]}


def refused(*args, **kwargs):
    with pytest.raises(AnsibleFilterError) as caught:
        bond_validate(*args, **kwargs)
    return str(caught.value)


def test_an_lacp_bond_of_one_member_is_refused():
    message = refused([{"name": "bond0", "members": ["ens1f0np0"]}])
    assert "bonding_bonds[0] (bond0).members: an 802.3ad (LACP) bond needs at least two members, bond0 has one" \
        in message
    # active-backup of one member is a legitimate placeholder and stays accepted.
    assert bond_validate([{"name": "bond0", "mode": "active-backup", "members": ["ens1f0np0"]}])


def test_a_bond_listed_as_its_own_member_is_refused():
    message = refused([{"name": "bond0", "members": ["ens1f0np0", "bond0"]}])
    assert "bonding_bonds[0] (bond0).members[1]: bond0 is the bond itself" in message


def test_a_bond_as_member_of_another_bond_is_refused():
    message = refused([BOND, {"name": "bond1", "members": ["bond0", "ens2"]}])
    assert "bonding_bonds[1] (bond1).members[0]: bond0 is another bond of bonding_bonds" in message


def test_a_gateway_outside_every_subnet_of_its_interface_is_refused():
    message = refused([dict(BOND, addresses=["10.1.0.5/24", "fd00:1::5/64"],
                            routes=[{"to": "10.2.0.0/16", "via": "10.9.0.1"}, {"to": "default", "via": "fd00:2::1"}])])
    assert ("bonding_bonds[0] (bond0).routes[0].via: gateway 10.9.0.1 is outside every IPv4 subnet of bond0 "
            "(10.1.0.5/24)") in message
    assert "bonding_bonds[0] (bond0).routes[1].via: gateway fd00:2::1 is outside every IPv6 subnet of bond0" in message


def test_a_gateway_on_an_interface_without_address_is_refused():
    message = refused([BOND], vlans=[{"id": 100, "link": "bond0", "routes": [{"to": "10.2.0.0/16", "via": "10.1.0.1"}]}])
    assert "bonding_vlans[0] (bond0.100).routes[0].via: gateway 10.1.0.1 is outside every IPv4 subnet of bond0.100 " \
           "(it has none)" in message


def test_a_gateway_inside_the_subnet_or_on_link_is_accepted():
    config = bond_validate([dict(BOND, addresses=["10.1.0.5/24"],
                                 routes=[{"to": "10.2.0.0/16", "via": "10.1.0.1"},
                                         {"to": "10.3.0.0/16", "via": "192.0.2.1", "on_link": True}])])
    assert [r["via"] for r in config["bonds"][0]["routes"]] == ["10.1.0.1", "192.0.2.1"]


def test_two_default_routes_in_one_table_are_refused():
    message = refused([dict(BOND, addresses=["10.1.0.5/24"], routes=[{"to": "default", "via": "10.1.0.1"}])],
                      ethernets=[{"name": "eno1", "addresses": ["192.0.2.5/24"],
                                  "routes": [{"to": "0.0.0.0/0", "via": "192.0.2.1"}]}])
    assert ("bonding_ethernets[0] (eno1).routes[0]: a second IPv4 default route in table main with no metric (the "
            "first is bonding_bonds[0] (bond0).routes[0])") in message


def test_default_routes_in_separate_tables_or_with_distinct_metrics_are_accepted():
    bond = dict(BOND, addresses=["10.1.0.5/24"],
                routes=[{"to": "default", "via": "10.1.0.1"}, {"to": "default", "via": "10.1.0.1", "table": 101},
                        {"to": "default", "via": "10.1.0.2", "metric": 200}])
    assert len(bond_validate([bond])["bonds"][0]["routes"]) == 3
    assert "table 101" in refused([dict(bond, routes=bond["routes"] + [
        {"to": "default", "via": "10.1.0.3", "table": 101}])])


def test_overlapping_subnets_of_two_interfaces_are_refused():
    message = refused([dict(BOND, addresses=["10.1.0.5/16"])],
                      vlans=[{"id": 100, "link": "bond0", "addresses": ["10.1.7.5/24"]}])
    assert ("bonding_vlans[0] (bond0.100).addresses[0]: 10.1.7.5/24 overlaps 10.1.0.5/16 of "
            "bonding_bonds[0] (bond0).addresses[0]") in message


def test_two_addresses_of_one_subnet_on_one_interface_are_accepted():
    assert bond_validate([dict(BOND, addresses=["10.1.0.5/24", "10.1.0.6/24"])])


def test_the_scenario_configuration_passes():
    """The bonding scenario's variables (molecule/bonding/molecule.yml) are a valid configuration."""
    config = normalize(
        bonds=[BOND, {"name": "bond1", "mode": "active-backup", "members": ["b8:ce:f6:0a:0b:0c", "b8:ce:f6:0a:0b:0d"],
                      "mtu": 1500, "addresses": ["192.0.2.21/24"]}],
        vlans=[{"id": 200, "link": "bond0", "addresses": ["10.200.0.11/24"]},
               {"id": 300, "link": "bond0", "name": "training", "addresses": ["10.30.0.11/24", "fd00:30::11/64"],
                "routes": [{"to": "10.31.0.0/16", "via": "10.30.0.1", "table": 300}],
                "routing_policy": [{"from": "10.30.0.0/24", "table": 300, "priority": 300}]}])
    assert addressing_problems(config) == []


@pytest.mark.parametrize("value", ["b8:ce:f6:0a:0b:0c\n", "b8:ce:f6:0a:0b:0c\r", "b8:ce:f6:0a:0b:0c\r\n"])
def test_a_mac_address_with_a_trailing_line_break_is_refused(value):
    assert not is_mac(value)
    message = refused([{"name": "bond0", "mode": "active-backup", "members": [value]}])
    assert "bonding_bonds[0] (bond0).members[0]" in message


@pytest.mark.parametrize("value", ["9000\n", "9000\r"])
def test_a_number_with_a_trailing_line_break_is_refused(value):
    assert "bonding_bonds[0] (bond0).mtu" in refused([dict(BOND, mtu=value)])
