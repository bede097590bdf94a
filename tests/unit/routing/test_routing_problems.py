# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The routing role's controller-side checks: each bad input is named by its variable's path."""

from __future__ import annotations

import copy

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpufabric.core.plugins.filter.routing_problems import FilterModule

routing_problems = FilterModule().filters()["routing_problems"]

# The lab's node1 (molecule/routing), with the role's defaults.
GOOD = {
    "asn": 65011,
    "router_id": "",
    "uplinks": [
        {"interface": "eth0", "peer": "10.240.11.2", "remote_asn": 65101, "leaf": "routing-leaf1"},
        {"interface": "eth1", "unnumbered": True, "remote_asn": 65102, "leaf": "routing-leaf2"},
    ],
    "loopback_addresses": ["10.240.250.11/32", "fd00:240::11/128"],
    "accept_prefixes": ["0.0.0.0/0", "::/0"],
    "advertise_prefixes": [],
    "verify_prefixes": [],
    "maximum_paths": 16,
    "bfd_enabled": True,
    "bfd_profile": "gpufabric",
    "bfd_transmit_interval": 100,
    "bfd_receive_interval": 100,
    "bfd_detect_multiplier": 3,
    "bgp_keepalive": 3,
    "bgp_hold": 9,
    "bgp_connect_retry": 5,
}


def with_changes(**changes):
    settings = copy.deepcopy(GOOD)
    for path, value in changes.items():
        target = settings
        keys = path.split("__")
        for key in keys[:-1]:
            target = target[int(key)] if key.isdigit() else target[key]
        target[keys[-1]] = value
    return settings


def test_good_settings_have_no_problems():
    assert routing_problems(GOOD) == []


def test_ipv6_numbered_peer_and_hold_off_are_fine():
    settings = with_changes(uplinks__0__peer="2001:db8::1", bgp_hold=0, bgp_keepalive=0)
    assert routing_problems(settings) == []


@pytest.mark.parametrize("changes, expected", [
    ({"asn": 0}, "routing_asn: the host's AS number is required"),
    ({"asn": 23456}, "routing_asn: 23456 is AS_TRANS"),
    ({"asn": 4294967296}, "routing_asn: 4294967296 is outside 1-4294967295"),
    ({"uplinks": []}, "routing_uplinks: at least one routed uplink is needed"),
    ({"uplinks__0__remote_asn": 65011}, "routing_uplinks[0] (eth0).remote_asn: 65011 is the host's own routing_asn"),
    ({"uplinks__0__peer": "10.240.11.300"}, "routing_uplinks[0] (eth0).peer: '10.240.11.300' is not an IP address"),
    ({"uplinks__0__peer": "10.240.11.2/24"}, "routing_uplinks[0] (eth0).peer: '10.240.11.2/24' is not an IP address"),
    # frr.conf takes these as written: a line break would end the neighbor or router-id line there.
    ({"uplinks__0__peer": "10.240.11.2\n"}, "routing_uplinks[0] (eth0).peer: '10.240.11.2\\n' is not an IP address"),
    ({"router_id": "10.240.250.11\n"}, "routing_router_id: '10.240.250.11\\n' is not an IPv4 address"),
    ({"uplinks__0__peer": "fe80::1"}, "routing_uplinks[0] (eth0).peer: fe80::1 is link-local; use unnumbered: true"),
    ({"uplinks__0__peer": "224.0.0.5"}, "routing_uplinks[0] (eth0).peer: 224.0.0.5 is not a unicast peer address"),
    ({"uplinks__1__peer": "10.240.12.2"}, "routing_uplinks[1] (eth1): peer 10.240.12.2 is set but unnumbered is true"),
    ({"uplinks__0__peer": None}, "routing_uplinks[0] (eth0).peer: a numbered uplink needs the leaf's address"),
    ({"uplinks__1__interface": "eth0"}, "routing_uplinks[1] (eth0).interface: eth0 already carries an unnumbered"),
    ({"uplinks__0__interface": "a-name-far-too-long"}, "routing_uplinks[0] (a-name-far-too-long).interface"),
    ({"uplinks__0__remote_as": 1}, "routing_uplinks[0] (eth0): unknown key(s) remote_as"),
    ({"uplinks__0__leaf": "two\nlines"}, "routing_uplinks[0] (eth0).leaf: 'two\\nlines' must be a one-line"),
    ({"loopback_addresses": ["10.240.250.11/24"]}, "routing_loopback_addresses[0]: 10.240.250.11/24 must be a host address, /32"),
    ({"loopback_addresses": ["10.240.250.11"]}, "routing_loopback_addresses[0]: '10.240.250.11' is not an address with a prefix"),
    ({"loopback_addresses": ["127.0.0.2/32"]}, "routing_loopback_addresses[0]: 127.0.0.2/32 is a loopback"),
    ({"loopback_addresses": []}, "routing_loopback_addresses: must list the host's own addresses"),
    ({"loopback_addresses": ["fd00:240::11/128"]}, "routing_router_id: empty and no IPv4 address"),
    ({"router_id": "fd00::1"}, "routing_router_id: 'fd00::1' is not an IPv4 address"),
    ({"accept_prefixes": ["10.0.0.1/8"]}, "routing_accept_prefixes[0]: 10.0.0.1/8 has host bits set; the prefix is 10.0.0.0/8"),
    ({"accept_prefixes": ["default"]}, "routing_accept_prefixes[0]: 'default' is not a prefix in CIDR notation"),
    ({"accept_prefixes": []}, "routing_accept_prefixes: must name at least one prefix"),
    ({"accept_prefixes": ["0.0.0.0/0", "0.0.0.0/0"]}, "routing_accept_prefixes[1]: 0.0.0.0/0 is listed twice"),
    ({"advertise_prefixes": ["10.1.2.0/33"]}, "routing_advertise_prefixes[0]: '10.1.2.0/33' is not a prefix"),
    ({"verify_prefixes": ["10.240.100.1/32"]}, "routing_verify_prefixes[0]: 10.240.100.1/32 is not in routing_accept_prefixes"),
    ({"maximum_paths": 1}, "routing_maximum_paths: 1 is fewer than the 2 uplinks"),
    ({"maximum_paths": 65}, "routing_maximum_paths: 65 is outside 1-64"),
    ({"bfd_transmit_interval": 5}, "routing_bfd_transmit_interval: 5 ms is outside 10-60000 ms"),
    ({"bfd_receive_interval": 60001}, "routing_bfd_receive_interval: 60001 ms is outside 10-60000 ms"),
    ({"bfd_detect_multiplier": 1}, "routing_bfd_detect_multiplier: 1 is outside 2-255"),
    ({"bfd_profile": "fast profile"}, "routing_bfd_profile: 'fast profile' is not a profile name"),
    ({"bgp_hold": 2}, "routing_bgp_hold: 2 s is outside 3-65535 s"),
    ({"bgp_keepalive": 4}, "routing_bgp_keepalive: 4 s is more than a third of routing_bgp_hold (9 s)"),
    ({"bgp_keepalive": True}, "routing_bgp_keepalive: True is not an integer"),
    ({"bgp_connect_retry": 0}, "routing_bgp_connect_retry: 0 s is outside 1-65535 s"),
    ({"bgp_connect_retry": "5"}, "routing_bgp_connect_retry: '5' is not an integer"),
], ids=lambda value: str(value)[:60])
def test_bad_settings_are_named(changes, expected):
    problems = routing_problems(with_changes(**changes))
    assert any(expected in problem for problem in problems), problems


def test_bfd_settings_are_not_checked_when_bfd_is_off():
    assert routing_problems(with_changes(bfd_enabled=False, bfd_transmit_interval=1)) == []


def test_every_problem_is_reported_at_once():
    problems = routing_problems(with_changes(asn=23456, bfd_detect_multiplier=300, uplinks__0__peer="fe80::1"))
    assert len(problems) == 3, problems


def test_prefix_must_be_a_string():
    with pytest.raises(AnsibleFilterError, match="prefix must be a string"):
        routing_problems(GOOD, prefix=1)
