# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""parse_bonding on every real /proc/net/bonding capture in tests/fixtures/bonding."""

from __future__ import annotations

import pytest
from fixture_data import fixture_names, read_fixture

from ansible_collections.gpufabric.core.plugins.module_utils.bonding import parse_bonding
from ansible_collections.gpufabric.core.plugins.module_utils.parse_common import ParseError

FOLDER = "bonding"
HEALTHY = "magpie-supermicro-2x10g-802.3ad-healthy.txt"
CX6DX = "cx6dx-2x100g-802.3ad-lacp-partner-ok.txt"
CHURNED = "magpie-802.3ad-churned-mixed-speed-misconfig.txt"

# Values read from the captures: bond settings, then per slave (name, MII, Mbps, aggregator, partner MAC,
# actor port state).
EXPECTED = {
    CX6DX: {
        "bond": ("802.3ad", "slow", 100, "layer3+4", 5, "3c:c7:86:87:8a:21"),
        "slaves": [("enp1s0f0", "up", 100000, 5, "3c:c7:86:87:8a:21", 61),
                   ("enp1s0f1", "up", 100000, 5, "3c:c7:86:87:8a:21", 61)],
        "healthy": True,
    },
    CHURNED: {
        "bond": ("802.3ad", "fast", 100, "layer3+4", 2, "00:23:04:ee:be:66"),
        "slaves": [("enp197s0f2", "up", 100, 1, "00:23:04:ee:be:66", 7),
                   ("enp197s0f0", "up", 1000, 2, "00:23:04:ee:be:66", 63)],
        "healthy": False,
    },
    HEALTHY: {
        "bond": ("802.3ad", "fast", 100, "layer3+4", 1, "02:01:00:00:01:01"),
        "slaves": [("eno3", "up", 10000, 1, "02:01:00:00:01:01", 63),
                   ("eno1", "up", 10000, 1, "02:01:00:00:01:01", 63)],
        "healthy": True,
    },
}


def _bond(name):
    return parse_bonding(read_fixture("%s/%s" % (FOLDER, name)))


def test_every_bonding_fixture_has_expectations():
    assert sorted(EXPECTED) == fixture_names(FOLDER)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_parse_bonding_fixture(name):
    expected = EXPECTED[name]
    bond = _bond(name)
    aggregator = bond["active_aggregator"]
    assert (bond["mode"], bond["lacp_rate"], bond["mii_polling_ms"], bond["xmit_hash_policy"],
            aggregator["aggregator_id"], aggregator["partner_mac"]) == expected["bond"]
    assert [(s["name"], s["mii_status"], s["speed_mbps"], s["aggregator_id"], s["partner_mac"], s["actor_port_state"])
            for s in bond["slaves"]] == expected["slaves"]
    assert bond["healthy"] is expected["healthy"]
    assert bond["healthy"] is (bond["problems"] == [])
    assert bond["mode_description"] == "IEEE 802.3ad Dynamic link aggregation"
    assert bond["driver_version"] == "v3.7.1 (April 27, 2011)"


def test_churned_bond_names_every_problem():
    problems = _bond(CHURNED)["problems"]
    assert len(problems) == 4
    assert problems[0] == "slaves run at different speeds (100, 1000 Mbps): LACP aggregates only ports of one speed"
    assert problems[1].startswith("slaves are in different aggregators (enp197s0f2 in aggregator 1; "
                                  "enp197s0f0 in aggregator 2): only the active aggregator 2 carries traffic")
    assert problems[2].startswith("slave enp197s0f2 is churned (actor churn state)")
    assert problems[3].startswith("slave enp197s0f2 is not in sync / collecting / distributing (actor LACP port state 7)")


def test_churned_bond_details():
    slave = _bond(CHURNED)["slaves"][0]
    assert (slave["actor_churn_state"], slave["partner_churn_state"]) == ("churned", "none")
    assert (slave["actor_churned_count"], slave["partner_port_state"]) == (1, 13)
    assert slave["permanent_hw_addr"] == "b4:96:91:6d:20:fe"


def test_active_aggregator_lines_indented_with_one_space_are_read():
    # The healthy magpie capture lost its TABs in markdown: " Aggregator ID: 1".
    aggregator = _bond(HEALTHY)["active_aggregator"]
    assert aggregator == {"aggregator_id": 1, "number_of_ports": 2, "actor_key": 15, "partner_key": 201,
                          "partner_mac": "02:01:00:00:01:01"}


def test_historical_partner_churn_count_is_not_a_problem():
    bond = _bond(CX6DX)
    assert bond["slaves"][1]["actor_churned_count"] == 1
    assert bond["healthy"] is True


def test_partner_mac_all_zeros_means_no_lacp_partner():
    # The switch stops answering LACP: the kernel then shows a zero partner on the aggregator and slaves.
    text = read_fixture(FOLDER + "/" + HEALTHY).replace("02:01:00:00:01:01", "00:00:00:00:00:00")
    bond = parse_bonding(text)
    assert bond["healthy"] is False
    assert bond["problems"] == ["the LACP partner MAC address is 00:00:00:00:00:00: no LACP partner answers; "
                                "check that the switch ports are in an LACP port-channel (mode active)"]


def test_a_slave_down():
    text = read_fixture(FOLDER + "/" + CX6DX)
    second = text.index("Slave Interface: enp1s0f1")
    text = text[:second] + text[second:].replace("MII Status: up", "MII Status: down", 1).replace(
        "Speed: 100000 Mbps", "Speed: Unknown", 1)
    bond = parse_bonding(text)
    assert bond["slaves"][1]["speed_mbps"] is None
    assert bond["problems"] == ["slave enp1s0f1 is down (MII status down)"]


def test_other_modes_are_named_and_skip_lacp_checks():
    text = read_fixture(FOLDER + "/" + HEALTHY).replace(
        "IEEE 802.3ad Dynamic link aggregation", "fault-tolerance (active-backup)")
    bond = parse_bonding(text)
    assert bond["mode"] == "active-backup"
    assert bond["healthy"] is True


def test_crlf_and_unknown_mode_description_are_kept():
    text = read_fixture(FOLDER + "/" + HEALTHY).replace("\n", "\r\n").replace(
        "IEEE 802.3ad Dynamic link aggregation", "some future mode")
    assert parse_bonding(text)["mode"] == "some future mode"


@pytest.mark.parametrize("garbage", ["hello", "Slave Interface: eth0\nMII Status: up"])
def test_garbage_raises_a_clear_parse_error(garbage):
    with pytest.raises(ParseError, match=r"cannot parse `/proc/net/bonding/<bond>` output: no 'Bonding Mode:' line"):
        parse_bonding(garbage)
