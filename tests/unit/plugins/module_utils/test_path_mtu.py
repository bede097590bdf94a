# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Path MTU per rail: DF ping outputs captured in the lab (tests/fixtures/ping), the bounded search against a
path that drops what is over its MTU, the probes of a pair, and the verdicts a mismatch fails."""

from __future__ import annotations

import pytest
from fixture_data import fixture_bytes, read_fixture

from ansible_collections.gpufabric.core.plugins.filter.path_mtu_targets import FilterModule
from ansible_collections.gpufabric.core.plugins.module_utils.verify import path_mtu as pm

path_mtu_targets = FilterModule().filters()["path_mtu_targets"]


def _capture(name):
    rc = int(fixture_bytes("ping/%s.txt" % name).decode().split("exit status ", 1)[1].split(";", 1)[0])
    return rc, read_fixture("ping/%s.txt" % name)


@pytest.mark.parametrize("name, expected", [
    ("lab-ipv4-df-1500-pass", (pm.PASS, None)),
    ("lab-ipv6-df-1500-pass", (pm.PASS, None)),
    ("lab-ipv4-df-9000-bridge-port-1500-lost", (pm.LOST, None)),
    ("lab-ipv6-df-9000-bridge-port-1500-lost", (pm.LOST, None)),
    ("lab-ipv4-df-9001-local-too-long", (pm.TOO_BIG, 9000)),
    ("lab-ipv6-df-9001-local-too-long", (pm.TOO_BIG, 9000)),
    ("lab-ipv4-df-9000-router-frag-needed", (pm.FRAG_NEEDED, 1500)),
    ("lab-ipv4-df-9000-cached-pmtu-1500", (pm.TOO_BIG, 1500)),
])
def test_parse_captured_pings(name, expected):
    rc, out = _capture(name)
    assert pm.parse_ping(rc, out) == expected


def test_parse_ping_that_could_not_run():
    assert pm.parse_ping(2, "", "ping: socket: Operation not permitted") == (pm.ERROR, None)


def path(path_mtu, local_mtu, family="ipv4"):
    """A probe against a path that silently drops packets over path_mtu, from an interface at local_mtu."""
    def probe(size, over=False):
        packet = size + pm.HEADERS[family]
        if packet > local_mtu:
            return pm.TOO_BIG, local_mtu
        return (pm.PASS, None) if packet <= path_mtu else (pm.LOST, None)
    return probe


def test_a_right_path_takes_two_probes():
    result = pm.check_path(path(9000, 9000), 9000, "ipv4")
    assert (result["status"], result["path_mtu"], result["probes"]) == ("ok", 9000, 2)
    assert [p["size"] for p in result["probe_log"]] == [8972, 8973]
    assert pm.check_path(path(9000, 9000, "ipv6"), 9000, "ipv6")["probe_log"][0]["size"] == 8952


@pytest.mark.parametrize("found, family", [(1500, "ipv4"), (9000 - 1, "ipv4"), (68, "ipv4"), (1500, "ipv6"),
                                           (4200, "ipv4"), (1280, "ipv6")])
def test_search_finds_the_path_mtu_within_the_bound(found, family):
    result = pm.check_path(path(found, 9000, family), 9000, family)
    assert (result["status"], result["path_mtu"]) == ("mismatch", found), result
    assert result["probes"] <= pm.MAX_PROBES, result


def test_search_stops_at_its_bounds_and_says_where_it_stopped():
    result = pm.check_path(path(1500, 9000), 9000, "ipv4", max_probes=4)
    assert result["path_mtu"] is None and result["probes"] == 4
    assert result["detail"].startswith("search stopped after 4 probes: the path MTU lies in "), result
    ticks = iter(range(100))
    timed = pm.check_path(path(1500, 9000), 9000, "ipv4", budget_s=3, clock=lambda: next(ticks))
    assert timed["probes"] < 6 and timed["path_mtu"] is None, timed


def test_an_interface_above_its_configured_mtu_is_a_mismatch():
    result = pm.check_path(path(9000, 9000), 1500, "ipv4")
    assert result["status"] == "mismatch" and "more than the configured MTU 1500" in result["detail"]


TARGET = {"client": "node1", "server": "node4", "rail": "tcp", "interface": "eth0", "address": "10.89.0.5",
          "mtu": 9000, "peer_interface": "eth0", "peer_mtu": 9000}


def test_message_and_verdicts():
    result = pm.check_path(path(1500, 9000), 9000, "ipv4")
    text = pm.message(TARGET, result)
    assert text.startswith("node1 -> node4 rail tcp (eth0 -> eth0): path MTU 1500, configured 9000 on node1 (eth0) and "
                           "9000 on node4 (eth0); a DF packet of 9000 bytes does not cross ("), text
    verdicts = {"node1": {"status": "pass", "rails": {}, "messages": []}}
    pm.apply_to_verdicts(verdicts, [dict(TARGET, **result, message=text),
                                    dict(TARGET, server="node2", status="ok", problem=None)])
    assert verdicts["node1"] == {"status": "fail", "rails": {}, "messages": [text]}
    assert verdicts["node4"]["messages"] == [text] and "node2" not in verdicts
    assert pm.peer_mtu_problem(dict(TARGET, peer_mtu=1500)).startswith(
        "node1 -> node4 rail tcp: configured MTU 9000 on node1 (eth0) but 1500 on node4 (eth0)")


def test_targets_iperf3_and_perftest():
    client = {"default_ipv4": {"interface": "eth0", "address": "10.89.0.2", "mtu": 9000}}
    server = {"default_ipv4": {"interface": "eth0", "address": "10.89.0.5", "mtu": 9000}, "interfaces": ["lo", "eth0"],
              "eth0": {"device": "eth0", "mtu": 9000, "ipv4": {"address": "10.89.0.5"}}}
    assert path_mtu_targets("node4", "node1", client, server) == {"targets": [TARGET], "skipped": []}
    rails = [{"rail": 0, "netdev": "ens1f0", "mtu": 9000}, {"rail": 1, "netdev": "ens2f0", "mtu": 4200}]
    client = {"gpufabric_topology": {"rails": rails}}
    server = {"gpufabric_topology": {"rails": rails}, "ens1f0": {"ipv4": {"address": "192.168.10.4"}, "mtu": 9000}}
    planned = path_mtu_targets("node4", "node1", client, server, perftest=True)
    assert [(t["rail"], t["interface"], t["address"], t["mtu"]) for t in planned["targets"]] == [
        ("0", "ens1f0", "192.168.10.4", 9000)]
    assert planned["skipped"] == ["node1 -> node4 rail 1: ens2f0 on node4 has no IPv4 address to probe"]
