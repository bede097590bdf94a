# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests of the fleet fabric map, its HTML page and their filters.

The LLDP neighbours come from the real `lldpctl -f json0` captures in tests/fixtures/lldp, parsed by the
collection's own parse_lldp; a fleet is several hosts carrying those neighbours, with cables moved where a
test needs a miscabled host. RDMA and interface facts follow docs/topology.md.
"""

from __future__ import annotations

import copy
import json
import re

import pytest
from ansible.errors import AnsibleFilterError
from fixture_data import LAB_CABLES_SYSFS, read_fixture
from jinja2 import Undefined

from ansible_collections.gpufabric.core.plugins.filter.fabric_map import FilterModule as FabricMapFilters
from ansible_collections.gpufabric.core.plugins.filter.fabric_map_html import fabric_map_html as html_filter
from ansible_collections.gpufabric.core.plugins.module_utils.fabric.map import (
    FabricMapError,
    build_fabric_map,
    natural_key,
    normalize_rail_interfaces,
)
from ansible_collections.gpufabric.core.plugins.module_utils.fabric.map_html import render_html
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.lldp import parse_lldp
from ansible_collections.gpufabric.core.plugins.module_utils.fabric.topology import build_topology, resolve_rails

fabric_map_filter = FabricMapFilters().filters()["fabric_map"]

SONIC = "lldp/unifabric-json0-gpu-rails-sonic-leaves.txt"
B2B = "lldp/unifabric-json0-server-h3c-and-b2b.txt"
# The four GPU-rail NICs of the SONiC capture, in leaf order: LEAF01..LEAF04 (ens1np0 goes to StorageSW).
SONIC_RAILS = ["ens108np0", "ens110np0", "ens841np0", "ens842np0"]


def _kinds(fabric_map, kind):
    return [item for item in fabric_map["findings"] if item["kind"] == kind]


def _host_from_lldp(neighbours, mtu=9000, operstate="up", speed_mbps=400000):
    """gpufabric_topology of an Ethernet-only host whose netdevs are the local interfaces of these neighbours."""
    names = sorted({item["local_interface"] for item in neighbours})
    return {
        "schema_version": 1, "source": "live",
        "gpus": {"available": False, "reason": "nvidia-smi: command not found", "devices": []},
        "rdma": {"available": False, "reason": "no RDMA devices in /sys/class/infiniband", "devices": []},
        "interfaces": [{"name": name, "mtu": mtu, "operstate": operstate, "speed_mbps": speed_mbps,
                        "driver": "mlx5_core", "bond_master": None} for name in names],
        "bonds": {},
        "lldp": {"available": True, "reason": None, "neighbors": copy.deepcopy(neighbours)},
        "rails": [],
        "findings": [],
    }


def _swap_cables(topology, first, second):
    """Move the LLDP neighbours of two netdevs onto each other, as a swapped pair of cables does."""
    for neighbour in topology["lldp"]["neighbors"]:
        if neighbour["local_interface"] == first:
            neighbour["local_interface"] = second
        elif neighbour["local_interface"] == second:
            neighbour["local_interface"] = first
    return topology


def _gpu_host(devices, switches, down=(), rate=400.0, active_mtu=4096, mtu=9000, link_layer="Ethernet", slot=0):
    """gpufabric_topology of a GPU server whose GPU i is nearest mlx5_i, its rails resolved by topology_facts' own
    resolve_rails; its rails reach port Ethernet<slot> of their leaves."""
    gpus, rdma, interfaces, neighbours = [], [], [], []
    for rail, device in enumerate(devices):
        netdev = "ens%dnp0" % (rail + 1)
        state = "DOWN" if rail in down else "ACTIVE"
        gpus.append({"index": rail, "name": "GPU%d" % rail, "numa_node": rail // 4, "nearest_nics": [device],
                     "nearest_link": "PIX"})
        rdma.append({"name": device, "netdev": netdev, "numa_node": rail // 4, "ports": [
            {"port": 1, "state": state, "physical_state": "LinkUp", "rate_gbps": rate, "link_layer": link_layer,
             "active_mtu": active_mtu, "netdev": netdev}]})
        interfaces.append({"name": netdev, "mtu": mtu, "operstate": "up", "speed_mbps": int(rate * 1000)})
        switch = switches[rail] if rail < len(switches) else None
        if switch and link_layer == "Ethernet":
            neighbours.append({"local_interface": netdev, "chassis_name": switch, "chassis_id": "70:06:92:6e:32:1c",
                               "port_id": "Ethernet%d" % slot, "port_id_type": "local",
                               "port_descr": "Ethernet%d" % slot})
    topology = {"schema_version": 1, "source": "live",
                "gpus": {"available": True, "reason": None, "devices": gpus},
                "rdma": {"available": True, "reason": None, "devices": rdma}, "interfaces": interfaces, "bonds": {},
                "lldp": {"available": True, "reason": None, "neighbors": neighbours}, "findings": []}
    topology["rails"], topology["rail_source"], _findings = resolve_rails(topology)
    return topology


@pytest.fixture
def sonic_neighbours():
    return parse_lldp(read_fixture(SONIC))


@pytest.fixture
def sonic_fleet(sonic_neighbours):
    """Five hosts cabled like the SONiC capture, host n on leaf port 184 - 8 (n - 1); gpu-05 has its rail 0 and
    rail 1 cables swapped."""
    fleet = {}
    for number in range(1, 6):
        fleet["gpu-%02d" % number] = _host_from_lldp(sonic_neighbours)
        for neighbour in fleet["gpu-%02d" % number]["lldp"]["neighbors"]:
            neighbour["port_id"] = neighbour["port_descr"] = "Ethernet%d" % (184 - 8 * (number - 1))
    _swap_cables(fleet["gpu-05"], "ens108np0", "ens110np0")
    return fleet


def test_real_lldp_rails_reach_the_captured_leaves(sonic_fleet):
    fabric = build_fabric_map(sonic_fleet, rail_interfaces={host: SONIC_RAILS for host in sonic_fleet})
    rails = fabric["hosts"]["gpu-01"]["rails"]
    assert [rail["switch"] for rail in rails] == ["LEAF01", "LEAF02", "LEAF03", "LEAF04"]
    # Rail-optimized, as captured: every rail lands on the same port number of its own leaf.
    assert {rail["switch_port"] for rail in rails} == {"Ethernet184"}
    assert fabric["hosts"]["gpu-02"]["rails"][3]["switch_port"] == "Ethernet176"
    assert [rail["netdev"] for rail in rails] == SONIC_RAILS
    assert all(rail["aligned"] and rail["up"] and rail["rate_gbps"] == 400.0 for rail in rails)
    assert fabric["hosts"]["gpu-01"]["rail_source"] == "inventory"
    assert fabric["summary"]["rails"] == 4


def test_swapped_cables_mark_the_host_miscabled(sonic_fleet):
    fabric = build_fabric_map(sonic_fleet, rail_interfaces={host: SONIC_RAILS for host in sonic_fleet})
    assert fabric["summary"]["miscabled_hosts"] == ["gpu-05"]
    assert fabric["hosts"]["gpu-05"]["status"] == "error"
    assert all(fabric["hosts"]["gpu-%02d" % n]["status"] == "ok" for n in range(1, 5))
    misaligned = _kinds(fabric, "rail_misaligned")
    assert [(item["host"], item["rail"]) for item in misaligned] == [("gpu-05", 0), ("gpu-05", 1)]
    assert misaligned[0]["severity"] == "error"
    assert "reaches LEAF02 port Ethernet152" in misaligned[0]["message"]
    assert "reaches LEAF01 (LEAF01 on 4, LEAF02 on 1)" in misaligned[0]["message"]
    rail0 = fabric["hosts"]["gpu-05"]["rails"][0]
    assert (rail0["switch"], rail0["expected_switch"], rail0["aligned"]) == ("LEAF02", "LEAF01", False)
    # The switch view shows the crossing: LEAF01 carries rails 0 (four hosts) and 1 (gpu-05).
    assert fabric["switches"]["LEAF01"]["rails"] == [0, 1]
    assert fabric["switches"]["LEAF01"]["hosts"] == 5
    assert [port["host"] for port in fabric["switches"]["LEAF01"]["ports"]] == [
        "gpu-05", "gpu-04", "gpu-03", "gpu-02", "gpu-01"]  # Ethernet152 .. Ethernet184
    assert _kinds(fabric, "switch_port_conflict") == []


def test_two_hosts_on_one_switch_port_is_a_conflict(sonic_neighbours):
    # Unaltered, the capture put on two hosts says both reach Ethernet184 of every leaf: impossible with cables.
    fleet = {"a": _host_from_lldp(sonic_neighbours), "b": _host_from_lldp(sonic_neighbours)}
    fabric = build_fabric_map(fleet, rail_interfaces={"a": SONIC_RAILS, "b": SONIC_RAILS})
    conflicts = _kinds(fabric, "switch_port_conflict")
    assert len(conflicts) == 8
    assert conflicts[0]["message"] == ("a rail 0 reaches LEAF01 port Ethernet184, which b rail 0 also reach: "
                                       "stale LLDP data, a loop or a shared segment")
    assert fabric["summary"]["hosts_by_status"] == {"error": 2}


def test_port_id_that_is_a_mac_falls_back_to_the_port_description():
    neighbours = parse_lldp(read_fixture(B2B))
    fabric = build_fabric_map({"host-a": _host_from_lldp(neighbours)},
                              rail_interfaces={"host-a": ["enp5s0f0np0", "enp11s0f0np0"]})
    rails = fabric["hosts"]["host-a"]["rails"]
    assert [(rail["switch"], rail["switch_port"]) for rail in rails] == [
        ("10-20-1-50", "enp5s0f0np0"), ("10-20-1-50", "enp11s0f0np0")]


def test_switch_without_a_system_name_is_named_by_its_chassis_id(sonic_neighbours):
    topology = _host_from_lldp(sonic_neighbours)
    for neighbour in topology["lldp"]["neighbors"]:
        neighbour["chassis_name"] = None
    fabric = build_fabric_map({"h": topology}, rail_interfaces={"h": SONIC_RAILS[:1]})
    assert fabric["hosts"]["h"]["rails"][0]["switch"] == "70:06:92:6e:33:18"


def test_gpu_rails_are_checked_per_peer_group():
    leaves_su1 = ["su1-leaf-r%d" % rail for rail in range(4)]
    leaves_su2 = ["su2-leaf-r%d" % rail for rail in range(4)]
    devices = ["mlx5_%d" % rail for rail in range(4)]
    fleet = {"a1": _gpu_host(devices, leaves_su1, slot=0), "a2": _gpu_host(devices, leaves_su1, slot=8),
             "b1": _gpu_host(devices, leaves_su2, slot=0), "b2": _gpu_host(devices, leaves_su2, slot=8),
             "b3": _gpu_host(devices, leaves_su2, slot=16)}
    groups = {"a1": "su1", "a2": "su1", "b1": "su2", "b2": "su2", "b3": "su2"}
    fabric = build_fabric_map(fleet, peer_groups=groups)
    assert fabric["summary"]["miscabled_hosts"] == []
    assert fabric["hosts"]["a1"]["rail_source"] == "gpu"
    assert fabric["hosts"]["a1"]["rails"][3]["switch"] == "su1-leaf-r3"
    assert {(item["group"], item["rail"]): item["expected_switch"] for item in fabric["rails"]}[("su2", 2)] == \
        "su2-leaf-r2"
    # Without groups the two units look like one: su1's hosts are the minority on every rail.
    flat = build_fabric_map(fleet)
    assert flat["summary"]["miscabled_hosts"] == ["a1", "a2"]


def test_a_host_missing_a_nic_shows_in_its_rails_the_nccl_role_checks_the_group():
    # One check for "hosts cabled alike give NCCL the same NICs": the nccl role's, on what NCCL will read
    # (test_nccl_config.py). The map lists each host's devices and rails; rail 7 has one host fewer.
    full = ["mlx5_%d" % rail for rail in range(8)]
    leaves = ["leaf-r%d" % rail for rail in range(8)]
    fleet = {"n%d" % number: _gpu_host(full, leaves, slot=number * 8) for number in range(1, 4)}
    fleet["n4"] = _gpu_host(full[:7], leaves, slot=32)
    fabric = build_fabric_map(fleet)
    assert fabric["hosts"]["n4"]["rdma_devices"][-1] == "mlx5_6"
    assert [rail["device"] for rail in fabric["hosts"]["n4"]["rails"]] == full[:7]
    assert {entry["rail"]: entry["hosts"] for entry in fabric["rails"]}[7] == 3
    assert [item["kind"] for item in fabric["findings"]] == []


def test_rate_mtu_and_down_ports():
    devices = ["mlx5_0", "mlx5_1"]
    leaves = ["leaf-r0", "leaf-r1"]
    fleet = {"n1": _gpu_host(devices, leaves, slot=8), "n2": _gpu_host(devices, leaves, slot=16),
             "n3": _gpu_host(devices, leaves, rate=200.0, active_mtu=1024, mtu=1500, slot=24),
             "n4": _gpu_host(devices, leaves, down=(1,), slot=32)}
    fleet["n4"]["findings"] = [{"severity": "error", "kind": "port_down", "message": "mlx5_1 port 1 is DOWN"}]
    fabric = build_fabric_map(fleet)
    rate = _kinds(fabric, "rate_mismatch")
    assert sorted((item["host"], item["rail"]) for item in rate) == [("n3", 0), ("n3", 1)]
    assert "runs at 200 Gb/s" in rate[0]["message"] and "at 400 Gb/s" in rate[0]["message"]
    mtu = _kinds(fabric, "mtu_mismatch")
    assert sorted((item["host"], item["rail"], "RDMA" in item["message"]) for item in mtu) == [
        ("n3", 0, False), ("n3", 0, True), ("n3", 1, False), ("n3", 1, True)]
    # topology_facts reports RDMA ports down on the host; the map lists them without repeating the finding.
    down = _kinds(fabric, "port_down")
    assert [(item["scope"], item["host"], item["message"]) for item in down] == [
        ("host", "n4", "n4: mlx5_1 port 1 is DOWN")]
    assert fabric["summary"]["rail_ports_down"] == ["n4 rail 1 (mlx5_1 port 1, ens2np0)"]
    assert fabric["hosts"]["n3"]["status"] == "warning"
    assert fabric["summary"]["hosts_by_status"] == {"ok": 2, "warning": 1, "error": 1}
    # Errors sort first.
    assert fabric["findings"][0]["severity"] == "error"


def test_netdev_rail_down_is_a_fleet_finding(sonic_neighbours):
    down = _host_from_lldp(sonic_neighbours, operstate="lowerlayerdown")
    fabric = build_fabric_map({"h": down}, rail_interfaces={"h": SONIC_RAILS[:1]})
    assert [(item["kind"], item["severity"], item["message"]) for item in fabric["findings"]] == [
        ("port_down", "error", "h rail 0 (ens108np0) is LOWERLAYERDOWN")]


def test_fleet_from_real_gpu_and_rdma_outputs():
    """Facts built by topology.build_topology from captured `nvidia-smi topo -m` and `ibstat` of HGX H100 RoCE
    servers: two hosts healthy, one whose mlx5_5 (rail 5) is down."""
    topo = read_fixture("nvidia_smi_topo/sglang-30401-hgx-h100-8gpu-8nic.txt")
    healthy = read_fixture("ibstat_ibv_devinfo/gpud-h100-ibstat-8x-cx7-roce-400g-4x-cx6dx.txt")
    some_down = read_fixture("ibstat_ibv_devinfo/gpud-h100-ibstat-8x-cx7-roce-some-down.txt")
    fleet = {host: build_topology({"nvidia_smi_topo": topo, "ibstat": ibstat})
             for host, ibstat in (("h100-a", healthy), ("h100-b", healthy), ("h100-c", some_down))}
    fabric = build_fabric_map(fleet)
    rails = fabric["hosts"]["h100-a"]["rails"]
    assert fabric["hosts"]["h100-a"]["rail_source"] == "gpu"
    assert [(rail["gpu"], rail["device"]) for rail in rails] == [("GPU%d" % i, "mlx5_%d" % i) for i in range(8)]
    # The captured box pairs GPU1, GPU2 and GPU7 with 100 Gb/s ConnectX-6 Dx ports, the others with 400 Gb/s.
    assert [rail["rate_gbps"] for rail in rails] == [400.0, 100.0, 100.0, 400.0, 400.0, 400.0, 400.0, 100.0]
    assert {rail["link_layer"] for rail in rails} == {"Ethernet"}
    assert fabric["summary"]["rail_ports_down"] == ["h100-c rail 5 (mlx5_5 port 1)"]
    # A port down shows ibstat's 40 Gb/s: no rate mismatch is claimed for it.
    assert _kinds(fabric, "rate_mismatch") == []
    assert fabric["hosts"]["h100-c"]["status"] == "error"
    assert fabric["hosts"]["h100-a"]["status"] == "warning"  # its own slow rails and no LLDP
    assert [item["host"] for item in _kinds(fabric, "no_lldp")] == ["h100-a", "h100-b", "h100-c"]
    # All three carry the same 12 RDMA devices.
    assert len(fabric["hosts"]["h100-c"]["rdma_devices"]) == 12


def test_tie_is_reported_as_ambiguous_not_as_miscabled():
    fleet = {"n1": _gpu_host(["mlx5_0"], ["leaf-a"]), "n2": _gpu_host(["mlx5_0"], ["leaf-b"])}
    fabric = build_fabric_map(fleet)
    assert fabric["summary"]["miscabled_hosts"] == []
    assert [item["kind"] for item in fabric["findings"]] == ["rail_ambiguous"]
    assert fabric["hosts"]["n1"]["rails"][0]["aligned"] is None


def test_infiniband_rails_have_no_lldp_switch():
    fleet = {"n%d" % number: _gpu_host(["mlx5_0", "mlx5_1"], [], link_layer="InfiniBand") for number in (1, 2)}
    fabric = build_fabric_map(fleet)
    assert [item["kind"] for item in fabric["findings"]] == ["infiniband_rails"]
    assert fabric["findings"][0]["message"].startswith("4 InfiniBand rails")
    assert fabric["switches"] == {}


def test_hosts_without_facts_rails_or_lldp(sonic_neighbours):
    lldp_missing = _host_from_lldp(sonic_neighbours)
    lldp_missing["lldp"] = {"available": False, "reason": "lldpctl: command not found", "neighbors": []}
    bare = _host_from_lldp([])
    fabric = build_fabric_map({"down": None, "nolldp": lldp_missing, "bare": bare},
                              rail_interfaces={"nolldp": SONIC_RAILS})
    assert fabric["hosts"]["down"]["status"] == "no_facts"
    assert _kinds(fabric, "no_facts")[0]["host"] == "down"
    assert "lldpctl: command not found" in _kinds(fabric, "no_lldp")[0]["message"]
    assert _kinds(fabric, "no_rails")[0]["host"] == "bare"
    assert fabric["summary"]["hosts_with_facts"] == 2


def test_rail_interface_typo_and_missing_neighbour(sonic_neighbours):
    topology = _host_from_lldp(sonic_neighbours)
    topology["interfaces"].append({"name": "ens9np0", "mtu": 9000, "operstate": "up", "speed_mbps": 400000})
    fabric = build_fabric_map({"h": topology}, rail_interfaces={"h": {"0": "ens108np0", "1": "ens9np0",
                                                                      "2": "ens99np9"}})
    assert [item["kind"] for item in fabric["findings"]] == ["rail_interface_missing", "no_neighbor"]
    assert "ens99np9" in fabric["findings"][0]["message"]


def test_interface_rail_borrows_rdma_port_data(sonic_neighbours):
    topology = _host_from_lldp(sonic_neighbours)
    topology["rdma"] = {"available": True, "reason": None, "devices": [{"name": "mlx5_3", "netdev": "ens108np0",
                        "ports": [{"port": 1, "state": "DOWN", "rate_gbps": 100.0, "link_layer": "Ethernet",
                                   "active_mtu": 1024}]}]}
    rail = build_fabric_map({"h": topology}, rail_interfaces={"h": ["ens108np0"]})["hosts"]["h"]["rails"][0]
    assert (rail["device"], rail["port"], rail["state"], rail["up"], rail["rate_gbps"], rail["active_mtu"],
            rail["mtu"]) == ("mlx5_3", 1, "DOWN", False, 100.0, 1024, 9000)


@pytest.mark.parametrize("value, problem", [
    ("eth1", "must be a list"),
    ({"x": "eth1"}, "is not an integer"),
    ({-1: "eth1"}, "is negative"),
    ([""], "must name an interface"),
    ({0: "eth1", "0": "eth2"}, "names rail 0 twice"),
])
def test_bad_rail_interfaces_are_rejected(value, problem):
    with pytest.raises(FabricMapError, match=problem):
        normalize_rail_interfaces(value, "node1")


def test_bad_input_is_rejected_with_a_message():
    with pytest.raises(FabricMapError, match="mapping of host name"):
        build_fabric_map(["node1"])
    with pytest.raises(FabricMapError, match="node1 is a str"):
        build_fabric_map({"node1": "facts"})
    with pytest.raises(FabricMapError, match="schema_version 2"):
        build_fabric_map({"node1": {"schema_version": 2}})
    with pytest.raises(FabricMapError, match="peer_groups must be a mapping"):
        build_fabric_map({}, peer_groups=["a"])


def test_filters_convert_errors_and_missing_facts(sonic_fleet):
    with pytest.raises(AnsibleFilterError, match="gpufabric.core.fabric_map: .*rail 'x' is not an integer"):
        fabric_map_filter(sonic_fleet, rail_interfaces={"gpu-01": {"x": "eth0"}})
    fabric = fabric_map_filter({"gpu-01": sonic_fleet["gpu-01"], "gone": {}, "undef": Undefined()},
                               rail_interfaces={"gpu-01": SONIC_RAILS})
    assert [fabric["hosts"][host]["status"] for host in ("gone", "undef")] == ["no_facts", "no_facts"]
    with pytest.raises(AnsibleFilterError, match="expects the output of gpufabric.core.fabric_map"):
        html_filter({"hosts": {}})
    with pytest.raises(AnsibleFilterError, match="max_hosts_drawn must be an integer"):
        html_filter(fabric, max_hosts_drawn="many")


def test_map_is_json_and_deterministic(sonic_fleet):
    rails = {host: SONIC_RAILS for host in sonic_fleet}
    first = json.dumps(build_fabric_map(sonic_fleet, rail_interfaces=rails), sort_keys=True)
    reordered = dict(reversed(list(sonic_fleet.items())))
    assert json.dumps(build_fabric_map(reordered, rail_interfaces=rails), sort_keys=True) == first


def _lldpctl_later(text, seconds):
    """The same lldpctl output read `seconds` later: every neighbour's age has grown, nothing else moved."""
    def older(match):
        days, hours, minutes, secs = (int(part) for part in match.groups())
        total = days * 86400 + hours * 3600 + minutes * 60 + secs + seconds
        return '"age": "%d day, %02d:%02d:%02d"' % (total // 86400, total % 86400 // 3600, total % 3600 // 60,
                                                    total % 60)
    return re.sub(r'"age": "(\d+) days?, (\d\d):(\d\d):(\d\d)"', older, text)


def _lldpctl_reversed(text):
    """The same neighbours listed in the other order, as lldpd does when their frames arrive the other way round."""
    decoded = json.loads(text)
    decoded["lldp"][0]["interface"].reverse()
    return json.dumps(decoded)


def _lab_fleet(node_lldp, recabled_lldp):
    """The container lab from its captures: node01-03 cabled straight, node04 seconds after its cables were
    swapped (both leaves listed on each port until the old one's TTL runs out), rails eth1 and eth2."""
    texts = {"node01": node_lldp, "node02": node_lldp, "node03": node_lldp, "node04": recabled_lldp}
    return {host: build_topology({"lldpctl": text, "sysfs": LAB_CABLES_SYSFS}, rail_interfaces=["eth1", "eth2"])
            for host, text in texts.items()}


def test_the_map_of_one_fabric_is_the_same_whenever_it_is_read():
    """A second discovery of an unchanged fabric reads other LLDP ages and may list one port's neighbours in the
    other order: the map (JSON and page) must not move, so that the report is not rewritten."""
    node, recabled = read_fixture("lldp/lab-json0-node1.txt"), read_fixture("lldp/lab-json0-node1-recabled.txt")
    reads = [(node, recabled), (_lldpctl_later(node, 95), _lldpctl_later(recabled, 30)),
             (_lldpctl_reversed(node), _lldpctl_reversed(recabled))]
    maps = [build_fabric_map(_lab_fleet(*read)) for read in reads]
    texts = [(json.dumps(fabric, indent=2, sort_keys=True), render_html(fabric)) for fabric in maps]
    assert texts[1] == texts[0] and texts[2] == texts[0]
    # What the map says: node04's cables moved to the other leaf (the youngest neighbour of each port).
    assert maps[0]["summary"]["miscabled_hosts"] == ["node04"]
    assert [(rail["switch"], rail["switch_port"]) for rail in maps[0]["hosts"]["node04"]["rails"]] == [
        ("leaf-b", "swp1"), ("leaf-a", "swp1")]
    assert not re.search(r'"(age|age_seconds|ttl|waited_s)"', texts[0][0])


def test_host_findings_join_the_fleet_findings(sonic_fleet):
    sonic_fleet["gpu-02"]["findings"] = [
        {"severity": "warning", "kind": "rate_below_peers",
         "message": "ens1np0 runs at 100 Gb/s, below the 400 Gb/s of the others"},
        {"severity": "loud", "message": "an unknown severity counts as a warning"}]
    fabric = build_fabric_map(sonic_fleet, rail_interfaces={host: SONIC_RAILS for host in sonic_fleet})
    host_findings = [item for item in fabric["findings"] if item["scope"] == "host"]
    assert [(item["kind"], item["message"]) for item in host_findings] == [
        ("host", "gpu-02: an unknown severity counts as a warning"),
        ("rate_below_peers", "gpu-02: ens1np0 runs at 100 Gb/s, below the 400 Gb/s of the others")]
    assert {item["severity"] for item in host_findings} == {"warning"}
    assert fabric["hosts"]["gpu-02"]["status"] == "warning"
    assert fabric["summary"]["findings"] == {"info": 0, "warning": 2, "error": 2}


def test_html_page_draws_hosts_rails_and_miscabled_links(sonic_fleet):
    sonic_fleet["<b>evil</b>"] = sonic_fleet.pop("gpu-04")
    fabric = build_fabric_map(sonic_fleet, rail_interfaces={host: SONIC_RAILS for host in sonic_fleet})
    page = html_filter(fabric, title="Fabric & friends")
    assert page.startswith("<!DOCTYPE html>") and "<title>Fabric &amp; friends</title>" in page
    svg = re.search(r"<svg .*?</svg>", page, re.S).group(0)
    # 5 hosts x 4 rails, one line each; the two of gpu-05 that cross are red and dashed.
    assert svg.count("</line>") == 20
    assert svg.count('stroke="#d62728" stroke-width="3" stroke-dasharray="7 4"><title>gpu-05') == 2
    assert all(">LEAF0%d</text>" % leaf in svg for leaf in range(1, 5))
    assert "<b>evil</b>" not in page and "&lt;b&gt;evil&lt;/b&gt;" in page
    assert "expected LEAF01" in page and "script" not in page


def test_html_picture_keeps_problem_hosts_when_the_fleet_is_large():
    leaves = ["leaf-r0", "leaf-r1"]
    fleet = {"n%03d" % number: _gpu_host(["mlx5_0", "mlx5_1"], leaves, slot=number) for number in range(100)}
    fleet["n099"] = _gpu_host(["mlx5_0", "mlx5_1"], leaves[::-1], slot=99)
    page = render_html(build_fabric_map(fleet), max_hosts_drawn=10)
    assert "10 of 100 hosts drawn" in page
    assert ">n099</text>" in page and ">n050</text>" not in page
    assert page.count("<tr><td class=") == 100  # every host is in the rail table


def test_natural_key_orders_numbers_numerically():
    assert sorted(["node10", "node2", "node1"], key=natural_key) == ["node1", "node2", "node10"]


def test_empty_and_factless_fleets_still_render():
    empty = build_fabric_map({})
    assert empty["summary"]["hosts"] == 0 and empty["findings"] == []
    assert "<p>No findings.</p>" in render_html(empty)
    factless = build_fabric_map({"a": None, "b": {"schema_version": 1}})
    assert factless["summary"]["hosts_by_status"] == {"no_facts": 1, "ok": 1}
    assert [item["kind"] for item in factless["findings"]] == ["no_facts", "no_rails"]
    assert ">a</text>" in render_html(factless)


def _routed_host(capture):
    """gpufabric_topology of a routed lab node (no GPU, no RDMA, no LLDP) from a real `show bgp summary json`."""
    return build_topology({"bgp_summary": read_fixture("frr/%s" % capture),
                           "reasons": {"lldpctl": "lldpctl not found in PATH (install and start lldpd)"}})


def test_routed_uplinks_show_both_leaves_beside_the_lldp_view(sonic_neighbours):
    # Real captures of the routing lab: node-a with both sessions up, node-b 1.5 s after its leaf2 port went down.
    fleet = {"node-a": _routed_host("lab-bgp-summary-established.json"),
             "node-b": _routed_host("lab-bgp-summary-leaf2-cut.json"),
             "gpu-01": _host_from_lldp(sonic_neighbours)}
    fabric = build_fabric_map(fleet, rail_interfaces={"gpu-01": SONIC_RAILS})
    node_a = fabric["hosts"]["node-a"]["routed_uplinks"]
    assert [(u["leaf"], u["peer"], u["interface"], u["remote_as"], u["state"]) for u in node_a] == [
        ("routing-exp-leaf1", "10.240.201.2", None, 65101, "Established"),
        ("routing-exp-leaf2", "eth1", "eth1", 65102, "Established")]
    assert fabric["hosts"]["gpu-01"]["routed_uplinks"] == []
    # The LLDP view is what it was: the routed hosts add no switch, the rails still reach the SONiC leaves.
    assert sorted(fabric["switches"]) == ["LEAF01", "LEAF02", "LEAF03", "LEAF04"]
    assert sorted(fabric["leaves"]) == ["routing-exp-leaf1", "routing-exp-leaf2"]
    leaf2 = fabric["leaves"]["routing-exp-leaf2"]
    assert leaf2["remote_as"] == [65102] and leaf2["hosts"] == 2 and leaf2["established"] == 1
    assert [(s["host"], s["state"]) for s in leaf2["sessions"]] == [("node-a", "Established"), ("node-b", "Idle")]
    summary = fabric["summary"]
    assert (summary["routed_hosts"], summary["routed_uplinks"], summary["routed_uplinks_down"],
            summary["leaves"]) == (2, 4, 1, 2)
    # The session down is the host's own finding (topology_facts), carried into the map with the host's status.
    down = _kinds(fabric, "bgp_session_down")
    assert [(item["host"], item["scope"], item["severity"]) for item in down] == [("node-b", "host", "warning")]
    assert fabric["hosts"]["node-b"]["status"] == "warning"
    page = render_html(fabric)
    table = page.split("<h2>Routed uplinks (BGP)</h2>", 1)[1]
    assert table.count("<tr><td class=") == 4
    assert '<td class="error">Idle</td>' in table and ">routing-exp-leaf2<" in table
    assert json.loads(json.dumps(fabric)) == fabric


def test_routed_uplink_without_hostname_or_description_is_named_by_asn_and_peer():
    topology = _routed_host("lab-bgp-summary-established.json")
    for uplink in topology["routing"]["uplinks"]:
        uplink["leaf"] = uplink["description"] = None  # a leaf without the hostname capability nor a description
    hosts = build_fabric_map({"node": topology})["hosts"]
    assert [u["leaf"] for u in hosts["node"]["routed_uplinks"]] == ["AS65101 10.240.201.2", "AS65102 eth1"]


def test_no_routed_uplinks_says_so_in_the_page(sonic_fleet):
    fabric = build_fabric_map(sonic_fleet, rail_interfaces={host: SONIC_RAILS for host in sonic_fleet})
    assert fabric["leaves"] == {} and fabric["summary"]["routed_uplinks"] == 0
    assert "No routed uplink" in render_html(fabric)
