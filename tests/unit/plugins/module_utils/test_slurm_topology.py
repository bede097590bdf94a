# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Slurm topology from fabric maps built from real LLDP captures (tests/fixtures/lldp).

The fleet: two scalable units of four GPU servers, every host carrying the neighbours of the real SONiC capture
(four rail NICs on LEAF01..LEAF04). Edits, made here and not in the capture: host n of a unit reaches port
Ethernet(184 - 8 (n - 1)) of its leaves, as a real unit is cabled (the capture is one host); the second unit's leaves
are renamed LEAF05..LEAF08, since the capture shows one unit; gpu-08 has its rail 0 and 1 cables swapped.
"""

from __future__ import annotations

import copy

import pytest
from ansible.errors import AnsibleFilterError
from fixture_data import read_fixture
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpufabric.core.plugins.filter.slurm_topology import FilterModule
from ansible_collections.gpufabric.core.plugins.module_utils.fabric.map import build_fabric_map
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.lldp import parse_lldp
from ansible_collections.gpufabric.core.plugins.module_utils.fabric.slurm_topology import (
    SlurmTopologyError,
    build_slurm_topology,
    compress_hostlist,
)

SONIC = "lldp/unifabric-json0-gpu-rails-sonic-leaves.txt"
B2B = "lldp/unifabric-json0-server-h3c-and-b2b.txt"
SONIC_RAILS = ["ens108np0", "ens110np0", "ens841np0", "ens842np0"]  # LEAF01..LEAF04 in the capture
slurm_filter = FilterModule().filters()["slurm_topology"]


def _host(neighbours, port, rename=None):
    """gpufabric_topology of an Ethernet-only host with these neighbours, all on leaf port `port`."""
    neighbours = copy.deepcopy(neighbours)
    for neighbour in neighbours:
        neighbour["port_id"] = neighbour["port_descr"] = port
        if rename and neighbour["chassis_name"] in rename:
            neighbour["chassis_name"] = rename[neighbour["chassis_name"]]
    names = sorted({item["local_interface"] for item in neighbours})
    return {
        "schema_version": 1, "source": "live",
        "gpus": {"available": False, "reason": "nvidia-smi: command not found", "devices": []},
        "rdma": {"available": False, "reason": "no RDMA devices", "devices": []},
        "interfaces": [{"name": name, "mtu": 9000, "operstate": "up", "speed_mbps": 400000} for name in names],
        "bonds": {}, "rails": [], "findings": [],
        "lldp": {"available": True, "reason": None, "neighbors": neighbours},
    }


def _swap(topology, first, second):
    for neighbour in topology["lldp"]["neighbors"]:
        if neighbour["local_interface"] in (first, second):
            neighbour["local_interface"] = second if neighbour["local_interface"] == first else first


@pytest.fixture(scope="module")
def sonic():
    return parse_lldp(read_fixture(SONIC))


@pytest.fixture(scope="module")
def fleet(sonic):
    second_unit = {"LEAF0%d" % n: "LEAF0%d" % (n + 4) for n in range(1, 5)}
    fleet, groups = {}, {}
    for number in range(1, 9):
        host = "gpu-%02d" % number
        slot = 184 - 8 * ((number - 1) % 4)
        fleet[host] = _host(sonic, "Ethernet%d" % slot, rename=second_unit if number > 4 else None)
        groups[host] = "su1" if number <= 4 else "su2"
    _swap(fleet["gpu-08"], "ens108np0", "ens110np0")
    return fleet, groups


def _map(fleet, **changes):
    topologies, groups = copy.deepcopy(fleet)
    topologies.update(changes)
    return build_fabric_map(topologies, peer_groups=groups,
                            rail_interfaces={host: SONIC_RAILS for host in topologies})


def test_rail0_tree_has_one_switch_per_leaf_and_leaves_out_the_miscabled_host(fleet):
    slurm = build_slurm_topology(_map(fleet))
    assert slurm["rail"] == 0 and sorted(slurm["rails"]) == [0, 1, 2, 3]
    lines = [line for line in slurm["topology_conf"].splitlines() if not line.startswith("#")]
    assert lines == ["SwitchName=LEAF01 Nodes=gpu-[01-04]", "SwitchName=LEAF05 Nodes=gpu-[05-07]"]
    assert [item["host"] for item in slurm["excluded"]] == ["gpu-08"]
    reason = slurm["excluded"][0]["reasons"][0]
    assert reason.startswith("miscabled: gpu-08 rail 0 (ens108np0) reaches LEAF06 port Ethernet160")
    assert "# left out: gpu-08: miscabled" in slurm["topology_conf"]
    left_out = [item for item in slurm["findings"] if item["kind"] == "host_left_out"]
    assert [(item["host"], item["severity"]) for item in left_out] == [("gpu-08", "warning")]
    # Two leaves and nothing above them: Slurm cannot place a job across them, which is said.
    assert [item["kind"] for item in slurm["findings"] if item["severity"] == "warning"] == [
        "tree_not_connected", "host_left_out"]


def test_every_rail_has_its_own_tree(fleet):
    slurm = build_slurm_topology(_map(fleet), rail=3)
    assert "SwitchName=LEAF04 Nodes=gpu-[01-04]\nSwitchName=LEAF08 Nodes=gpu-[05-07]\n" in slurm["topology_conf"]
    # gpu-08's rail 3 is cabled right, but a host miscabled on any rail is out of every tree: its place is in doubt.
    assert [item["host"] for item in slurm["excluded"]] == ["gpu-08"]
    assert slurm["rails"][3]["topology_conf"] == slurm["topology_conf"]
    assert slurm["rails"][1]["switches"][0] == {"name": "LEAF02", "lldp_name": "LEAF02", "level": 0,
                                                "nodes": ["gpu-01", "gpu-02", "gpu-03", "gpu-04"], "switches": []}


def test_spines_from_the_inventory_join_the_leaves(fleet):
    slurm = build_slurm_topology(_map(fleet), spines={"LEAF01": "SPINE01", "LEAF05": ["SPINE01"]})
    assert slurm["topology_conf"].splitlines()[-1] == "SwitchName=SPINE01 Switches=LEAF[01,05]"
    assert "tree_not_connected" not in [item["kind"] for item in slurm["findings"]]
    spines = {"LEAF01": ["SPINE02", "SPINE01"], "LEAF05": ["SPINE01", "SPINE02"]}
    two = build_slurm_topology(_map(fleet), spines=spines)
    assert "SwitchName=spines-SPINE01_SPINE02 Switches=LEAF[01,05]" in two["topology_conf"]
    assert "# spines-SPINE01_SPINE02 stands for the spines SPINE01, SPINE02" in two["topology_conf"]


def test_spine_from_lldp_on_the_leaf_uplinks(fleet):
    """A leaf's own lldpd view: its host ports (what the map holds) and one uplink. The uplink neighbour is the real
    H3C switch of the b2b capture, moved onto leaf port Ethernet0; the host ports are made from the map."""
    fabric = _map(fleet)
    uplink = next(item for item in parse_lldp(read_fixture(B2B)) if item["chassis_name"].endswith("AccessSwitch"))
    leaf_views = {}
    for leaf in ("LEAF01", "LEAF05"):
        view = [dict(uplink, local_interface="Ethernet0")]
        view += [{"local_interface": port["port"], "chassis_name": port["host"], "chassis_id": "aa:bb:cc:00:00:01",
                  "port_id": "ens108np0"} for port in fabric["switches"][leaf]["ports"]]
        leaf_views[leaf] = view
    slurm = build_slurm_topology(fabric, switch_neighbors=leaf_views)
    assert slurm["topology_conf"].splitlines()[-1] == (
        "SwitchName=DaoCloud_ShangPu_H3C_D01_AccessSwitch Switches=LEAF[01,05]")
    # The inventory wins over LLDP for the leaf it names.
    mixed = build_slurm_topology(fabric, switch_neighbors=leaf_views, spines={"LEAF05": "SPINE09"})
    assert "SwitchName=SPINE09 Switches=LEAF05" in mixed["topology_conf"]
    assert "tree_not_connected" in [item["kind"] for item in mixed["findings"]]


def test_hostlist_keeps_the_hosts_of_one_leaf_together(fleet):
    slurm = build_slurm_topology(_map(fleet))
    # LEAF01's hosts, by leaf port (Ethernet160 first), then LEAF05's; gpu-08 is left out.
    assert slurm["hostlist"] == ["gpu-04", "gpu-03", "gpu-02", "gpu-01", "gpu-07", "gpu-06", "gpu-05"]
    assert slurm["hostfile"] == "gpu-04\ngpu-03\ngpu-02\ngpu-01\ngpu-07\ngpu-06\ngpu-05\n"


def test_hosts_without_lldp_down_or_without_facts_are_left_out_and_named(fleet, sonic):
    no_lldp = _host(sonic, "Ethernet176")
    no_lldp["lldp"] = {"available": False, "reason": "lldpctl: command not found", "neighbors": []}
    down = _host(sonic, "Ethernet168")
    down["interfaces"][0]["operstate"] = "down"  # ens108np0, rail 0
    fabric = _map(fleet, **{"gpu-02": no_lldp, "gpu-03": down, "gpu-04": None})
    slurm = build_slurm_topology(fabric)
    excluded = {item["host"]: item["reasons"] for item in slurm["excluded"]}
    assert sorted(excluded) == ["gpu-02", "gpu-03", "gpu-04", "gpu-08"]
    assert excluded["gpu-02"] == ["rail 0 (ens108np0) has no LLDP neighbour"]
    assert excluded["gpu-03"] == ["rail 0 (ens108np0) is DOWN"]
    assert excluded["gpu-04"][0] == "no topology facts (unreachable, or topology_facts failed)"
    assert "SwitchName=LEAF01 Nodes=gpu-01\n" in slurm["topology_conf"]
    # gpu-03's rail 1 is up: it stays in rail 1's tree.
    assert "gpu-03" in slurm["rails"][1]["switches"][0]["nodes"]


def test_switch_port_conflict_and_ambiguous_rail_are_not_guessed(fleet, sonic):
    # gpu-02 claims gpu-01's ports (stale LLDP): neither can be placed.
    fabric = _map(fleet, **{"gpu-02": _host(sonic, "Ethernet184")})
    slurm = build_slurm_topology(fabric)
    assert [item["host"] for item in slurm["excluded"]] == ["gpu-01", "gpu-02", "gpu-08"]
    assert slurm["excluded"][0]["reasons"][0].startswith("switch port conflict: gpu-01 rail 0 reaches LEAF01")
    # Two hosts in one group on two leaves: a tie, the map blames nobody, and the topology places neither.
    tie = build_fabric_map({"a": _host(sonic, "Ethernet1"), "b": _host(sonic, "Ethernet2", {"LEAF01": "LEAF09"})},
                           rail_interfaces={"a": SONIC_RAILS, "b": SONIC_RAILS})
    slurm = build_slurm_topology(tie)
    assert [item["host"] for item in slurm["excluded"]] == ["a", "b"]
    assert "has no majority switch" in slurm["excluded"][0]["reasons"][0]
    assert slurm["hostlist"] == [] and "nothing_placed" in [item["kind"] for item in slurm["findings"]]


def test_node_names_and_switch_names_are_made_slurm_safe(fleet, sonic):
    fabric = _map(fleet)
    slurm = build_slurm_topology(fabric, node_names={"gpu-01": "g001", "gpu-02": "g002"})
    assert "SwitchName=LEAF01 Nodes=g[001-002],gpu-[03-04]" in slurm["topology_conf"]
    # A switch that sends no system name is named by its chassis ID MAC: colons do not survive Slurm's parser.
    nameless = copy.deepcopy(sonic)
    for neighbour in nameless:
        neighbour["chassis_name"] = None
    fabric = build_fabric_map({"a": _host(nameless, "Ethernet1")}, rail_interfaces={"a": SONIC_RAILS})
    slurm = build_slurm_topology(fabric)
    assert "SwitchName=70-06-92-6e-33-18 Nodes=a" in slurm["topology_conf"]
    assert slurm["switch_names"]["70-06-92-6e-33-18"] == "70:06:92:6e:33:18"


@pytest.mark.parametrize("kwargs, message", [
    ({"rail": 7}, "rail 7 is not in the fabric map, whose rails are 0, 1, 2, 3"),
    ({"rail": "0"}, "rail must be a rail index"),
    ({"node_names": {"gpu-01": "bad name"}}, "node_names[gpu-01] (the Slurm NodeName of gpu-01) must be"),
    ({"node_names": {"gpu-01": "x", "gpu-02": "x"}}, "node_names gives gpu-01 and gpu-02 the same Slurm NodeName x"),
    ({"node_names": {"nohost": "x"}}, "node_names names hosts that are not in the fabric map: nohost"),
    ({"spines": {"LEAF99": "S"}}, "spines names leaf LEAF99, which no host reaches"),
    ({"spines": {"LEAF01": []}}, "spines[LEAF01] must name a spine switch or a list of them"),
    ({"switch_neighbors": {"LEAF01": "text"}}, "switch_neighbors[LEAF01] must be the list of LLDP neighbours"),
    ({"spines": ["LEAF01"]}, "spines must be a mapping, not list"),
    ({"block_sizes": [4]}, "block_sizes is set but blocks is empty"),
])
def test_bad_input_is_refused_with_the_variable_named(fleet, kwargs, message):
    with pytest.raises(SlurmTopologyError) as error:
        build_slurm_topology(_map(fleet), **kwargs)
    assert message in str(error.value)


def test_not_a_fabric_map_is_refused():
    with pytest.raises(SlurmTopologyError, match="must be the fabric map"):
        build_slurm_topology({"hosts": []})
    with pytest.raises(SlurmTopologyError, match="schema_version 2"):
        build_slurm_topology({"schema_version": 2, "hosts": {}, "findings": []})


def _blocks(size, count):
    return {"gpu-%02d" % (index + 1): "nvl%d" % (index // size + 1) for index in range(size * count)}


def test_block_topology_from_nvlink_domains(fleet):
    slurm = build_slurm_topology(_map(fleet), blocks=_blocks(2, 4), block_sizes=[2, 4, 8])
    block = slurm["block"]
    assert block["topology_conf"].splitlines()[2:] == [
        "BlockName=nvl1 Nodes=gpu-[01-02]", "BlockName=nvl2 Nodes=gpu-[03-04]", "BlockName=nvl3 Nodes=gpu-[05-06]",
        "BlockName=nvl4 Nodes=gpu-[07-08]", "BlockSizes=2,4,8"]
    assert block["topology_yaml"].splitlines()[1:8] == [
        "---", "- topology: block", "  cluster_default: true", "  block:", "    block_sizes: [2, 4, 8]",
        "    blocks:", "      - block: nvl1"]
    # Block membership is the NVLink domain from the inventory: gpu-08's Ethernet cabling does not change it.
    assert block["blocks"][3] == {"name": "nvl4", "nodes": ["gpu-07", "gpu-08"]}
    assert [item["kind"] for item in slurm["findings"] if item["kind"].startswith("block")] == []


@pytest.mark.parametrize("blocks, sizes, message", [
    (_blocks(2, 4), [2, 6], "6 is not the base block size 2 times a power of two"),
    (_blocks(2, 4), [4, 8], "blocks nvl1, nvl2, nvl3, nvl4 have fewer nodes than the base block size 4"),
    (_blocks(2, 4), [4, 2], "ascending order"),
    (_blocks(2, 4), [0], "positive whole numbers"),
    (dict(_blocks(4, 1), **{"gpu-05": "nvl2"}), None, "blocks nvl2 have fewer nodes than the base block size 4"),
    ({"gpu-01": "rack 1"}, None, "blocks[gpu-01] (the NVLink domain or rack of gpu-01) must be a name"),
    ({"gpu-99": "nvl1"}, None, "blocks names host gpu-99, which is not in the fabric map"),
])
def test_block_sizes_are_checked_as_slurmctld_checks_them(fleet, blocks, sizes, message):
    with pytest.raises(SlurmTopologyError) as error:
        build_slurm_topology(_map(fleet), blocks=blocks, block_sizes=sizes)
    assert message in str(error.value)


def test_block_findings_for_odd_but_valid_blocks(fleet):
    blocks = dict(_blocks(2, 3), **{"gpu-07": "nvl3"})  # nvl3 has three nodes; gpu-08 is in no block
    slurm = build_slurm_topology(_map(fleet), blocks=blocks, block_sizes=[2, 16])
    kinds = {item["kind"]: item["message"] for item in slurm["findings"]}
    assert kinds["block_larger_than_base"].startswith("blocks nvl3 have more nodes than the base block size 2")
    assert kinds["block_size_too_large"].startswith("block size 16 is larger than the 7 nodes in blocks")
    assert kinds["not_in_block"].endswith(": gpu-08")


@pytest.mark.parametrize("names, expected", [
    (["node01", "node02", "node03", "gpu7"], "gpu7,node[01-03]"),
    (["node9", "node10", "node11", "node8"], "node[8-9],node[10-11]"),
    (["a-1", "a-3", "a-4", "b"], "a-[1,3-4],b"),
    (["leaf-a"], "leaf-a"),
])
def test_compress_hostlist(names, expected):
    assert compress_hostlist(names) == expected


def _expand(expression):
    """Slurm's reading of the expressions compress_hostlist writes (prefix[a-b,c],...), to check the round trip."""
    names = []
    for part in expression.replace("],", "]\n").split("\n"):
        if "[" not in part:
            names += [item for item in part.split(",") if item]
            continue
        leading, ranges = part.rstrip("]").split("[")
        plain = leading.split(",")
        names += plain[:-1]
        for item in ranges.split(","):
            low, _dash, high = item.partition("-")
            names += ["%s%0*d" % (plain[-1], len(low), number) for number in range(int(low), int(high or low) + 1)]
    return names


@settings(max_examples=60, deadline=None)
@given(st.sets(st.tuples(st.sampled_from(["n", "gpu-", "x"]), st.integers(0, 120), st.sampled_from([1, 3]))))
def test_compress_hostlist_round_trips(items):
    names = {"%s%0*d" % (prefix, width, number) for prefix, number, width in items}
    assert sorted(_expand(compress_hostlist(names))) == sorted(names)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=1, max_size=12))
def test_hostlist_groups_leaves_for_any_cabling(sonic_leaves):
    """Hosts on random leaves (one peer group per leaf, so nobody is miscabled): each leaf's hosts are contiguous."""
    neighbours = parse_lldp(read_fixture(SONIC))
    fleet, groups = {}, {}
    for index, leaf in enumerate(sonic_leaves):
        host = "h%02d" % index
        fleet[host] = _host(neighbours, "Ethernet%d" % index, {"LEAF01": "LEAF1%d" % leaf})
        groups[host] = "leaf%d" % leaf
    fabric = build_fabric_map(fleet, peer_groups=groups, rail_interfaces={host: SONIC_RAILS for host in fleet})
    slurm = build_slurm_topology(fabric)
    leaves = [fabric["hosts"][host]["rails"][0]["switch"] for host in slurm["hostlist"]]
    assert sorted(slurm["hostlist"]) == sorted(fleet)
    assert all(leaves.index(leaf) + leaves.count(leaf) - 1 == len(leaves) - 1 - leaves[::-1].index(leaf)
               for leaf in set(leaves))


def test_filter_reads_lazy_values_and_turns_errors_into_filter_errors(fleet):
    fabric = _map(fleet)
    assert slurm_filter(fabric, "1")["rail"] == 1  # -e rail=1 arrives as text
    assert slurm_filter(fabric, blocks={}, block_sizes=[])["block"] is None
    with pytest.raises(AnsibleFilterError, match=r"^gpufabric.core.slurm_topology: rail 9 is not in the fabric map"):
        slurm_filter(fabric, 9)


LAB = "lldp/lab-json0-%s.txt"


def _lab_host(neighbours):
    names = sorted({item["local_interface"] for item in neighbours})
    return {"schema_version": 1, "source": "live", "rails": [], "findings": [], "bonds": {},
            "interfaces": [{"name": name, "mtu": 1500, "operstate": "up", "speed_mbps": 10000} for name in names],
            "lldp": {"available": True, "reason": None, "neighbors": neighbours}}


def test_lab_capture_gives_the_tree_slurmctld_showed():
    """The lab's own captures (molecule/scheduler): node1 and node3 as captured; node2 is node1's capture with the
    leaf ports moved from swp1 to swp2, where node2 is cabled (its own capture would differ only there)."""
    node1 = parse_lldp(read_fixture(LAB % "node1"))
    node2 = [dict(item, port_descr="swp2") for item in node1]
    fleet = {"scheduler-node1": _lab_host(node1), "scheduler-node2": _lab_host(node2),
             "scheduler-node3": _lab_host(parse_lldp(read_fixture(LAB % "node3")))}
    fabric = build_fabric_map(fleet, rail_interfaces={host: ["eth1", "eth2"] for host in fleet})
    assert fabric["summary"]["miscabled_hosts"] == ["scheduler-node3"]
    leaf_a = parse_lldp(read_fixture(LAB % "leaf-a"))
    slurm = build_slurm_topology(fabric, switch_neighbors={"leaf-a": leaf_a})
    # What `scontrol show topology` printed in the scenario, from the same file.
    assert [line for line in slurm["topology_conf"].splitlines() if not line.startswith("#")] == [
        "SwitchName=leaf-a Nodes=scheduler-node[1-2]", "SwitchName=spine-1 Switches=leaf-a"]
    assert slurm["hostlist"] == ["scheduler-node1", "scheduler-node2"]
    assert [item["host"] for item in slurm["excluded"]] == ["scheduler-node3"]
    # leaf-a's own view: its host ports swp1..3 are downlinks, swp49 (to spine-1) the uplink.
    assert sorted(item["local_interface"] for item in leaf_a) == ["swp1", "swp2", "swp3", "swp49"]
