# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""parse_bonding on every real /proc/net/bonding capture in tests/fixtures/bonding."""

from __future__ import annotations

import pytest
from fixture_data import fixture_names, read_fixture

from ansible_collections.gpufabric.core.plugins.module_utils.parsers.proc_bonding import parse_bonding
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.common import ParseError

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
    assert bond["mode_suffixes"] == [] and bond["errors"] == []
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
    bond = parse_bonding(text)
    assert bond["mode"] == "some future mode"
    assert bond["errors"] == ["unknown bonding mode 'some future mode': the mode is returned as printed"]


def _fail_over_mac_bond():
    # Derived from the cx6dx capture: its Bonding Mode line is replaced by the one the kernel prints for an
    # active-backup bond with fail_over_mac=active (bond_procfs.c appends " (fail_over_mac <policy>)" when the
    # policy is not none). The 802.3ad blocks of the capture stay as they are: only the mode line is under test.
    return read_fixture(FOLDER + "/" + CX6DX).replace(
        "Bonding Mode: IEEE 802.3ad Dynamic link aggregation",
        "Bonding Mode: fault-tolerance (active-backup) (fail_over_mac active)")


def test_mode_suffix_fail_over_mac_is_read_apart_from_the_mode():
    bond = parse_bonding(_fail_over_mac_bond())
    assert bond["mode"] == "active-backup"
    assert bond["mode_description"] == "fault-tolerance (active-backup)"
    assert bond["mode_suffixes"] == ["fail_over_mac active"]
    assert bond["fail_over_mac"] == "active"
    assert bond["errors"] == []


def test_active_backup_without_suffix_means_fail_over_mac_none():
    text = read_fixture(FOLDER + "/" + CX6DX).replace(
        "IEEE 802.3ad Dynamic link aggregation", "fault-tolerance (active-backup)")
    assert parse_bonding(text)["fail_over_mac"] == "none"
    assert _bond(CX6DX)["fail_over_mac"] is None  # only active-backup has the option


def test_bond_verify_compares_the_mode_name_not_the_suffixed_description():
    from ansible_collections.gpufabric.core.plugins.filter.bond_verify import FilterModule
    from ansible_collections.gpufabric.core.plugins.module_utils.bonding.config import normalize

    expected = normalize(bonds=[{"name": "bond0", "members": ["enp1s0f0", "enp1s0f1"], "mode": "active-backup"}])["bonds"][0]
    problems = FilterModule().filters()["bond_verify"](_fail_over_mac_bond(), expected)
    assert not [problem for problem in problems if "mode" in problem], problems


def test_unknown_later_suffix_keeps_the_mode():
    # Derived from the healthy capture: a "(xyz on)" group appended to its mode line, as a later kernel might.
    text = read_fixture(FOLDER + "/" + HEALTHY).replace(
        "IEEE 802.3ad Dynamic link aggregation", "IEEE 802.3ad Dynamic link aggregation (xyz on)")
    bond = parse_bonding(text)
    assert (bond["mode"], bond["mode_suffixes"], bond["fail_over_mac"]) == ("802.3ad", ["xyz on"], None)
    assert bond["healthy"] is True


def test_missing_slave_interface_line_is_refused_instead_of_mixing_slaves():
    # Derived from the cx6dx capture: the "Slave Interface: enp1s0f1" line is deleted, so the second slave's
    # fields would overwrite the first one's.
    text = read_fixture(FOLDER + "/" + CX6DX).replace("Slave Interface: enp1s0f1\n", "")
    with pytest.raises(ParseError, match=r"line \d+ \(MII Status: up\): a second 'mii_status' in the same block"):
        parse_bonding(text)


def test_bond_without_slaves_says_so_in_errors():
    # Derived from the healthy capture: everything from the first "Slave Interface:" on is cut, as the kernel
    # prints a bond whose slaves were all released.
    text = read_fixture(FOLDER + "/" + HEALTHY).split("\nSlave Interface:")[0]
    bond = parse_bonding(text)
    assert bond["slaves"] == []
    assert bond["errors"] == ["no 'Slave Interface:' section: the bond lists no slave"]
    assert "the bond has no slave interfaces" in bond["problems"]


def test_empty_mode_line_is_refused():
    text = read_fixture(FOLDER + "/" + HEALTHY).replace("IEEE 802.3ad Dynamic link aggregation", "")
    with pytest.raises(ParseError, match="names no mode"):
        parse_bonding(text)


@pytest.mark.parametrize("garbage", ["hello", "Slave Interface: eth0\nMII Status: up"])
def test_garbage_raises_a_clear_parse_error(garbage):
    with pytest.raises(ParseError, match=r"cannot parse `/proc/net/bonding/<bond>` output: no 'Bonding Mode:' line"):
        parse_bonding(garbage)
