# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""FRR state parsers on real captures from the routing lab (tests/fixtures/frr), and the problems they show."""

from __future__ import annotations

import json

import pytest

from ansible_collections.gpufabric.core.plugins.module_utils.parsers.frr_status import (
    FrrStatusError,
    detection_time_ms,
    parse_bfd_peers,
    parse_bgp_summary,
    parse_route,
    status_problems,
)
from fixture_data import read_fixture

UPLINKS = [
    {"interface": "eth0", "peer": "10.240.201.2", "leaf": "leaf1", "bfd": True},
    {"interface": "eth1", "peer": None, "leaf": "leaf2", "bfd": True},
]
ANYCAST = "10.240.100.1/32"


def state(name):
    sessions = parse_bgp_summary(read_fixture("frr/lab-bgp-summary-%s.json" % name))
    return sessions


def test_bgp_summary_established_numbered_and_unnumbered():
    sessions = {s["peer"]: s for s in state("established")}
    assert sorted(sessions) == ["10.240.201.2", "eth1"]
    numbered, unnumbered = sessions["10.240.201.2"], sessions["eth1"]
    assert numbered["established"] and unnumbered["established"]
    assert numbered["interface"] is None and unnumbered["interface"] == "eth1"
    assert numbered["remote_as"] == 65101 and unnumbered["remote_as"] == 65102
    assert numbered["uptime_ms"] == 65000 and unnumbered["uptime_ms"] == 15000
    assert unnumbered["connections_established"] == 2 and unnumbered["connections_dropped"] == 1
    # The unnumbered session carries IPv4 and IPv6 unicast: merged into one entry, counted per family.
    assert unnumbered["prefixes_received"] == {"ipv4Unicast": 1, "ipv6Unicast": 0}
    assert numbered["prefixes_received"] == {"ipv4Unicast": 1}
    assert unnumbered["description"] == "leaf2" and unnumbered["hostname"] == "routing-exp-leaf2"


def test_bgp_summary_after_a_cut_shows_the_session_idle():
    sessions = {s["peer"]: s for s in state("leaf2-cut")}
    assert sessions["eth1"]["state"] == "Idle" and not sessions["eth1"]["established"]
    assert sessions["10.240.201.2"]["established"]


def test_bfd_peers_up_with_detection_time():
    peers = parse_bfd_peers(read_fixture("frr/lab-bfd-peers-up.json"))
    assert [p["interface"] for p in peers] == ["eth0", "eth1"]
    assert all(p["up"] for p in peers)
    assert peers[1]["peer"] == "fe80::4c57:c6ff:fef7:5ef7"
    assert [p["detection_time_ms"] for p in peers] == [300, 300]
    assert peers[0]["transmit_interval_ms"] == peers[0]["receive_interval_ms"] == 100
    assert peers[0]["uptime_s"] == 64


def test_bfd_peer_down_after_a_cut():
    peers = {p["interface"]: p for p in parse_bfd_peers(read_fixture("frr/lab-bfd-peers-leaf2-cut.json"))}
    assert not peers["eth1"]["up"] and peers["eth1"]["status"] == "down"
    assert peers["eth1"]["diagnostic"] == "control detection time expired"
    assert peers["eth1"]["downtime_s"] == 2
    assert peers["eth0"]["up"]


def test_detection_time_takes_the_slower_of_our_receive_and_their_transmit():
    # Derived from the up capture: the remote transmits every 300 ms with multiplier 5 (edited to show that the
    # remote's values, not ours, decide how fast we notice).
    peer = json.loads(read_fixture("frr/lab-bfd-peers-up.json"))[0]
    peer.update({"remote-transmit-interval": 300, "remote-detect-multiplier": 5})
    assert detection_time_ms(peer) == 1500


def test_route_with_two_next_hops_one_over_ipv6_link_local():
    route = parse_route(read_fixture("frr/lab-route-ecmp-two-nexthops.json"), ANYCAST)
    assert route["installed"] and route["protocol"] == "bgp"
    assert route["nexthops"] == [
        {"ip": "10.240.201.2", "interface": "eth0"},
        {"ip": "fe80::4c57:c6ff:fef7:5ef7", "interface": "eth1"},
    ]


def test_route_without_an_ip_next_hop():
    route = parse_route(read_fixture("frr/lab-route-ipv6-connected.json"), "fd00:240::11/128")
    assert route["protocol"] == "connected"
    assert route["nexthops"] == [{"ip": None, "interface": "lo"}]


def test_missing_route_is_not_installed():
    # zebra prints {} for a prefix it has no route to.
    route = parse_route("{}\n", ANYCAST)
    assert route == {"prefix": ANYCAST, "protocol": None, "installed": False, "nexthops": []}


def test_no_problems_when_everything_is_up():
    assert status_problems(
        state("established"),
        parse_bfd_peers(read_fixture("frr/lab-bfd-peers-up.json")),
        [parse_route(read_fixture("frr/lab-route-ecmp-two-nexthops.json"), ANYCAST)],
        UPLINKS,
    ) == []


def test_problems_name_the_session_the_bfd_peer_and_the_route():
    problems = status_problems(
        state("leaf2-cut"),
        parse_bfd_peers(read_fixture("frr/lab-bfd-peers-leaf2-cut.json")),
        [parse_route(read_fixture("frr/lab-route-leaf2-cut-one-nexthop.json"), ANYCAST)],
        UPLINKS,
    )
    assert problems == [
        "BGP session to eth1 (leaf leaf2) is Idle, not Established",
        "BFD session to eth1 (leaf leaf2) is down (control detection time expired)",
        "route 10.240.100.1/32 has 1 next hop(s) (10.240.201.2 via eth0), fewer than the 2 uplinks",
    ]


def test_problems_for_sessions_bgpd_does_not_know():
    uplinks = UPLINKS + [{"interface": "eth2", "peer": "10.240.203.2", "leaf": "leaf3", "bfd": False}]
    problems = status_problems(state("established"), parse_bfd_peers(read_fixture("frr/lab-bfd-peers-up.json")),
                               [parse_route("{}", ANYCAST)], uplinks)
    assert problems == [
        "BGP session to 10.240.203.2 (leaf leaf3) is not configured in bgpd",
        "route 10.240.100.1/32 is not installed in the kernel",
    ]


def test_empty_output_when_a_daemon_is_not_running():
    assert parse_bgp_summary("") == []
    assert parse_bfd_peers("\n") == []
    problems = status_problems([], [], [], UPLINKS[:1])
    assert problems == ["BGP session to 10.240.201.2 (leaf leaf1) is not configured in bgpd",
                        "BFD session to 10.240.201.2 (leaf leaf1) does not exist in bfdd"]


@pytest.mark.parametrize("parser, text", [
    (parse_bgp_summary, "% Unknown command: show bgp summary json"),
    (parse_bfd_peers, "{}"),
    (parse_bgp_summary, "[]"),
])
def test_output_that_is_not_the_expected_json_is_refused(parser, text):
    with pytest.raises(FrrStatusError):
        parser(text)
