# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""build_topology from real captures, snapshots on disk, and live discovery on this very machine."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest
from fixture_data import FIXTURES, LAB_CABLES_SYSFS, fixture_names, read_fixture
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.gpufabric.core.plugins.module_utils.parsers.proc_bonding import parse_bonding
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.ibstat import parse_ibstat
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.ibv_devinfo import parse_ibv_devinfo
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.lldp import parse_lldp
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.nvidia_smi_topo import parse_nvidia_smi_topo
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.common import ParseError
from ansible_collections.gpufabric.core.plugins.module_utils.fabric.topology import (
    SCHEMA_VERSION,
    RailInterfacesError,
    build_topology,
    collect_live,
    read_snapshot,
    reread_lldp,
    resolve_rails,
    wait_for_lldp,
    write_capture,
)

HGX_TOPO = "nvidia_smi_topo/sglang-30401-hgx-h100-8gpu-8nic.txt"
IB_SOME_DOWN = "ibstat_ibv_devinfo/gpud-h100-ibstat-8x-cx7-ib-400g-some-down.txt"
SONIC_LLDP = "lldp/unifabric-json0-gpu-rails-sonic-leaves.txt"
CHURNED_BOND = "bonding/magpie-802.3ad-churned-mixed-speed-misconfig.txt"
# "routing" (the routed uplinks, from FRR's BGP summary) was added after "findings": schema 1, one more key.
TOP_LEVEL = ["schema_version", "source", "gpus", "rdma", "interfaces", "bonds", "lldp", "rails", "rail_source", "findings",
             "routing"]
BGP_ESTABLISHED = "frr/lab-bgp-summary-established.json"
BGP_LEAF2_CUT = "frr/lab-bgp-summary-leaf2-cut.json"

# sysfs of one RoCE rail NIC in the kernel's formats (class/infiniband/<dev>/ports/<n>/{state,rate,...},
# gid_attrs/{types,ndevs}/<index>, device/uevent): the lab has no RDMA device to read them from.
ROCE_SYSFS = {
    "class/infiniband/mlx5_0/hca_type": "MT4129",
    "class/infiniband/mlx5_0/fw_ver": "28.39.1002",
    "class/infiniband/mlx5_0/device/uevent": "DRIVER=mlx5_core\nPCI_CLASS=20000\nPCI_SLOT_NAME=0000:19:00.0",
    "class/infiniband/mlx5_0/device/numa_node": "0",
    "class/infiniband/mlx5_0/device/net/ens108np0/ifindex": "4",
    "class/infiniband/mlx5_0/ports/1/state": "4: ACTIVE",
    "class/infiniband/mlx5_0/ports/1/phys_state": "5: LinkUp",
    "class/infiniband/mlx5_0/ports/1/rate": "400 Gb/sec (4X NDR)",
    "class/infiniband/mlx5_0/ports/1/link_layer": "Ethernet",
    "class/infiniband/mlx5_0/ports/1/gids/0": "fe80:0000:0000:0000:a288:c2ff:fee3:142a",
    "class/infiniband/mlx5_0/ports/1/gid_attrs/types/0": "IB/RoCE v1",
    "class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/0": "ens108np0",
    "class/infiniband/mlx5_0/ports/1/gids/1": "fe80:0000:0000:0000:a288:c2ff:fee3:142a",
    "class/infiniband/mlx5_0/ports/1/gid_attrs/types/1": "RoCE v2",
    "class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/1": "ens108np0",
    "class/infiniband/mlx5_0/ports/1/gids/3": "0000:0000:0000:0000:0000:ffff:0a14:0132",
    "class/infiniband/mlx5_0/ports/1/gid_attrs/types/3": "RoCE v2",
    "class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/3": "ens108np0",
    "class/net/ens108np0/address": "a0:88:c2:e3:14:2a",
    "class/net/ens108np0/mtu": "9000",
    "class/net/ens108np0/operstate": "up",
    "class/net/ens108np0/speed": "400000",
    "class/net/ens108np0/type": "1",
    "class/net/ens108np0/device/uevent": "DRIVER=mlx5_core\nPCI_SLOT_NAME=0000:19:00.0",
    "class/net/ens108np0/device/numa_node": "0",
    "class/net/lo/type": "772",
    "bus/pci/devices/0000:18:00.0/numa_node": "0",
}


def _hgx_sources():
    return {
        "nvidia_smi_topo": read_fixture(HGX_TOPO),
        "ibstat": read_fixture(IB_SOME_DOWN),
        "lldpctl": read_fixture(SONIC_LLDP),
        "bonding": {"bond0": read_fixture(CHURNED_BOND)},
    }


def _neighbor_of(topology, interface):
    return next(n for n in topology["lldp"]["neighbors"] if n["local_interface"] == interface)


def _kinds(topology, kind):
    return [finding for finding in topology["findings"] if finding["kind"] == kind]


def test_schema_top_level_and_missing_sources_have_reasons():
    topology = build_topology({"reasons": {"nvidia_smi_topo": "nvidia-smi not found in PATH"}})
    assert list(topology) == TOP_LEVEL
    assert topology["schema_version"] == SCHEMA_VERSION == 1
    assert topology["gpus"] == {"available": False, "reason": "nvidia-smi not found in PATH", "devices": []}
    assert topology["rdma"]["available"] is False and "infiniband" in topology["rdma"]["reason"]
    assert topology["lldp"] == {"available": False, "reason": "no lldpctl output was available", "neighbors": [],
                                "awaited": [], "waited_s": 0}
    assert topology["routing"] == {"available": False, "reason": "no vtysh output was available", "uplinks": []}
    assert topology["rails"] == [] and topology["findings"] == []


def test_routed_uplinks_from_the_real_bgp_summary_numbered_and_unnumbered():
    topology = build_topology({"bgp_summary": read_fixture(BGP_ESTABLISHED)})
    routing = topology["routing"]
    assert routing["available"] is True and routing["reason"] is None
    assert routing["uplinks"] == [
        {"peer": "10.240.201.2", "interface": None, "unnumbered": False, "leaf": "routing-exp-leaf1",
         "description": "leaf1", "remote_as": 65101, "local_as": 65001, "state": "Established", "established": True,
         "uptime_ms": 65000, "prefixes_received": 1},
        # Unnumbered: keyed by the interface in FRR; its IPv4 and IPv6 families merged into one uplink.
        {"peer": "eth1", "interface": "eth1", "unnumbered": True, "leaf": "routing-exp-leaf2",
         "description": "leaf2", "remote_as": 65102, "local_as": 65001, "state": "Established", "established": True,
         "uptime_ms": 15000, "prefixes_received": 1},
    ]
    assert topology["findings"] == []


def test_routed_uplink_down_is_a_finding_naming_peer_asn_and_leaf():
    topology = build_topology({"bgp_summary": read_fixture(BGP_LEAF2_CUT)})
    states = {uplink["peer"]: uplink["state"] for uplink in topology["routing"]["uplinks"]}
    assert states == {"10.240.201.2": "Established", "eth1": "Idle"}
    assert [(f["severity"], f["message"]) for f in _kinds(topology, "bgp_session_down")] == [
        ("warning", "BGP session to eth1 (AS 65102, leaf routing-exp-leaf2) is Idle, not Established")]


def test_bgp_summary_that_is_not_json_is_a_finding_not_a_failure():
    # The capture cut in the middle of an object, as a vtysh killed by the timeout leaves it.
    topology = build_topology({"bgp_summary": read_fixture(BGP_ESTABLISHED)[:300]})
    assert topology["routing"]["available"] is False
    assert topology["routing"]["reason"].startswith("show bgp summary json: output is not JSON")
    assert [f["severity"] for f in _kinds(topology, "parse_error")] == ["error"]


def test_bgpd_without_sessions_is_available_with_no_uplinks():
    # An object without address families (no `router bgp`, or no neighbour configured yet): hand-written, not a
    # capture; the parser's contract for it is "no session".
    topology = build_topology({"bgp_summary": "{}\n"})
    assert topology["routing"] == {"available": True, "reason": None, "uplinks": []}


def test_snapshot_carries_the_bgp_summary(tmp_path):
    sources = {"bgp_summary": read_fixture(BGP_ESTABLISHED), "sysfs": ROCE_SYSFS}
    assert "vtysh-show-bgp-summary.json" in write_capture(str(tmp_path), sources)
    offline = build_topology(read_snapshot(str(tmp_path)))
    assert offline["routing"] == build_topology(sources)["routing"]
    # An older snapshot without the file: the reason says so.
    os.unlink(str(tmp_path / "vtysh-show-bgp-summary.json"))
    assert build_topology(read_snapshot(str(tmp_path)))["routing"]["reason"] == (
        "the snapshot has no vtysh-show-bgp-summary.json")


def test_hgx_rails_gpus_and_findings_from_real_captures():
    topology = build_topology(_hgx_sources())
    gpus = topology["gpus"]["devices"]
    assert len(gpus) == 8
    assert gpus[4]["nearest_nics"] == ["mlx5_4"] and gpus[4]["nearest_link"] == "PIX"
    assert gpus[4]["numa_node"] == 1 and gpus[4]["cpu_affinity"] == "48-95,144-191"
    assert gpus[0]["nvlink_peers"] == [1, 2, 3, 4, 5, 6, 7]
    assert [(rail["rail"], rail["device"]) for rail in topology["rails"]] == [(i, "mlx5_%d" % i) for i in range(8)]
    rail7 = topology["rails"][7]
    assert (rail7["state"], rail7["rate_gbps"], rail7["link_layer"]) == ("DOWN", 40.0, "Ethernet")
    assert len(topology["rdma"]["devices"]) == 12
    # mlx5_2 and mlx5_7 are rails (errors); mlx5_8 is not (warning).
    down = {(f["severity"], f["message"]) for f in _kinds(topology, "port_down")}
    assert down == {("error", "mlx5_2 port 1 is DOWN (physical state Disabled)"),
                    ("error", "mlx5_7 port 1 is DOWN (physical state Disabled)"),
                    ("warning", "mlx5_8 port 1 is DOWN (physical state Disabled)")}
    # GPU1's nearest NIC mlx5_1 is a 100 Gb/s ConnectX-6 Dx in this capture: slower than the 400 Gb/s rails.
    slow = _kinds(topology, "rail_rate_below_peers")
    assert [f["message"].split(" runs at ")[0] for f in slow] == ["rail 1 (GPU1, mlx5_1 port 1)"]
    assert len(_kinds(topology, "bond_problem")) == 4
    assert topology["bonds"]["bond0"]["healthy"] is False


def test_rate_below_peers_of_the_same_model():
    text = read_fixture(IB_SOME_DOWN)
    first_400 = text.index("Rate: 400")
    text = text[:first_400] + "Rate: 200" + text[first_400 + len("Rate: 400"):]
    topology = build_topology({"ibstat": text})
    assert [f["message"] for f in _kinds(topology, "rate_below_peers")] == [
        "mlx5_0 port 1 runs at 200 Gb/s, below the 400 Gb/s of the other MT4129 InfiniBand ports"]


def test_gpu_across_the_cpu_interconnect_is_reported():
    # In the h20 capture GPU4's PIX NIC is NIC3; make every path of GPU4 to a NIC cross sockets.
    lines = read_fixture("nvidia_smi_topo/nccl-tests-321-h20-vm-8gpu-8nic-no-legend.txt").split("\n")
    lines[5] = lines[5].replace("NODE", "SYS ").replace("PIX", "SYS")
    topology = build_topology({"nvidia_smi_topo": "\n".join(lines)})
    cross = _kinds(topology, "gpu_nic_cross_socket")
    assert len(cross) == 1 and cross[0]["message"].startswith("GPU4's nearest NIC (NIC0, NIC1, NIC2, NIC3, NIC4")
    assert _kinds(topology, "no_nic_legend")[0]["severity"] == "warning"


def test_shared_nearest_nics_are_spread_over_rails():
    topology = build_topology({"nvidia_smi_topo": read_fixture("nvidia_smi_topo/asus-esc8000a-e12-4x-rtx6000ada-4nic.txt")})
    assert [(rail["gpu"], rail["device"], rail["link"]) for rail in topology["rails"]] == [
        ("GPU0", "mlx5_0", "NODE"), ("GPU1", "mlx5_1", "NODE"), ("GPU2", "mlx5_2", "NODE"), ("GPU3", "mlx5_3", "NODE")]
    assert _kinds(topology, "shared_nic") == []
    shared = build_topology({"nvidia_smi_topo": read_fixture("nvidia_smi_topo/princeton-della-2x-a100-2nic-mlx5-columns.txt")
                             .replace("GPU1\tSYS\t X \tSYS\tNODE", "GPU1\tSYS\t X \tNODE\tSYS")})
    assert [rail["device"] for rail in shared["rails"]] == ["mlx5_0", "mlx5_0"]
    assert _kinds(shared, "shared_nic")[0]["message"] == "GPU1 shares its nearest NIC mlx5_0 with GPU0"


def test_sysfs_roce_port_netdev_gid_and_lldp_switch():
    sources = {
        "nvidia_smi_topo": read_fixture("nvidia_smi_topo/sglang-30401-hgx-h100-8gpu-8nic.txt"),
        "nvidia_smi_query": "0, NVIDIA H100 80GB HBM3, 00000000:18:00.0\n",
        "lldpctl": read_fixture(SONIC_LLDP),
        "sysfs": ROCE_SYSFS,
    }
    topology = build_topology(sources)
    device = topology["rdma"]["devices"][0]
    assert (device["name"], device["pci_address"], device["numa_node"], device["netdev"]) == (
        "mlx5_0", "0000:19:00.0", 0, "ens108np0")
    port = device["ports"][0]
    assert (port["state"], port["physical_state"], port["rate_gbps"], port["roce_v2_gid_index"]) == (
        "ACTIVE", "LinkUp", 400.0, 3)
    rail0 = topology["rails"][0]
    assert (rail0["netdev"], rail0["switch"], rail0["switch_port"], rail0["switch_id"]) == (
        "ens108np0", "LEAF01", "Ethernet184", "70:06:92:6e:33:18")
    gpu0 = topology["gpus"]["devices"][0]
    assert (gpu0["model"], gpu0["pci_bus_id"], gpu0["numa_node"]) == ("NVIDIA H100 80GB HBM3", "0000:18:00.0", 0)
    assert topology["interfaces"] == [{
        "name": "ens108np0", "mac": "a0:88:c2:e3:14:2a", "speed_mbps": 400000, "mtu": 9000, "driver": "mlx5_core",
        "operstate": "up", "pci_address": "0000:19:00.0", "numa_node": 0, "bond_master": None}]


def test_inventory_rails_override_the_gpu_pairing_with_the_port_on_each_netdev():
    sources = {"nvidia_smi_topo": read_fixture(HGX_TOPO), "lldpctl": read_fixture(SONIC_LLDP), "sysfs": ROCE_SYSFS}
    gpu = build_topology(sources)
    assert gpu["rail_source"] == "gpu" and len(gpu["rails"]) == 8
    # gpufabric_rail_interfaces as an inventory writes it (string keys): rail 0 on mlx5_0's netdev, rail 1 on a
    # netdev the host does not have.
    topology = build_topology(sources, rail_interfaces={"1": "ens9np0", "0": "ens108np0"})
    assert topology["rail_source"] == "inventory"
    rail0, rail1 = topology["rails"]
    assert (rail0["rail"], rail0["gpu"], rail0["device"], rail0["port"], rail0["netdev"], rail0["link"]) == (
        0, "GPU0", "mlx5_0", 1, "ens108np0", "PIX")
    assert (rail0["state"], rail0["up"], rail0["rate_gbps"], rail0["mtu"], rail0["exists"]) == (
        "ACTIVE", True, 400.0, 9000, True)
    assert (rail0["switch"], rail0["switch_port"]) == ("LEAF01", "Ethernet184")
    assert (rail1["netdev"], rail1["device"], rail1["state"], rail1["exists"]) == ("ens9np0", None, None, False)
    with pytest.raises(RailInterfacesError, match="gpufabric_rail_interfaces must be a list of interface names"):
        build_topology(sources, rail_interfaces="ens108np0")


def test_rdma_devices_are_rails_only_on_a_host_without_gpus():
    # No nvidia-smi: the RDMA device with an ACTIVE port is rail 0.
    topology = build_topology({"sysfs": ROCE_SYSFS, "reasons": {"nvidia_smi_topo": "nvidia-smi not found"}})
    assert topology["rail_source"] == "rdma_devices"
    assert [(rail["rail"], rail["device"], rail["netdev"], rail["gpu"]) for rail in topology["rails"]] == [
        (0, "mlx5_0", "ens108np0", None)]
    # A GPU host whose nvidia-smi prints no NIC legend: GPU rails on NICs no RDMA device answers to (NIC7 ...),
    # never the host's RDMA devices in their place.
    no_legend = build_topology({"nvidia_smi_topo": read_fixture(
        "nvidia_smi_topo/nccl-tests-321-h20-vm-8gpu-8nic-no-legend.txt"), "sysfs": ROCE_SYSFS})
    assert no_legend["rail_source"] == "gpu"
    assert [(rail["gpu"], rail["device"], rail["port"], rail["state"]) for rail in no_legend["rails"]][:2] == [
        ("GPU0", "NIC7", None, None), ("GPU1", "NIC6", None, None)]


def test_switch_port_sent_as_a_mac_is_named_by_its_description():
    topology = build_topology({"sysfs": ROCE_SYSFS, "lldpctl": read_fixture(SONIC_LLDP)})
    rail = topology["rails"][0]
    # Edited from the capture: the switch sends its port's MAC as the port ID (some do), its name as the description.
    neighbor = dict(_neighbor_of(topology, "ens108np0"), port_id="a0:88:c2:e3:14:2a", port_id_type="mac",
                    port_descr="Ethernet1/1")
    topology["lldp"]["neighbors"] = [neighbor]
    rails, _source, _findings = resolve_rails(topology)
    assert (rail["switch_port"], rails[0]["switch_port"]) == ("Ethernet184", "Ethernet1/1")


GB200_TOPO = "nvidia_smi_topo/gb200-4gpu-8nic-numa-lists.txt"


def _grace_nic_sysfs(nodes):
    """sysfs of RDMA NICs mlx5_<i> on NUMA node nodes[i], in the kernel's formats (the capture has no sysfs)."""
    sysfs = {}
    for index, node in enumerate(nodes):
        base = "class/infiniband/mlx5_%d/" % index
        sysfs[base + "device/uevent"] = "DRIVER=mlx5_core\nPCI_SLOT_NAME=000%d:01:00.0" % index
        sysfs[base + "device/numa_node"] = str(node)
        sysfs[base + "ports/1/state"] = "4: ACTIVE"
        sysfs[base + "ports/1/link_layer"] = "InfiniBand"
    return sysfs


def test_grace_blackwell_gpus_take_the_nics_of_their_own_cpu_node():
    # The GB200 capture prints SYS from every GPU to every NIC. With the NICs' NUMA nodes from sysfs (mlx5_0-3 on
    # Grace 0, mlx5_4-7 on Grace 1, as a compute tray cables them), each GPU's nearest NICs are those of its own
    # CPU node, reached within the node (NODE), and no GPU is reported as crossing sockets.
    topology = build_topology({"nvidia_smi_topo": read_fixture(GB200_TOPO), "sysfs": _grace_nic_sysfs([0] * 4 + [1] * 4)})
    gpus = topology["gpus"]["devices"]
    assert [(gpu["numa_node"], gpu["memory_numa_node"]) for gpu in gpus] == [(0, 2), (0, 10), (1, 18), (1, 26)]
    assert [gpu["nearest_nics"] for gpu in gpus] == [["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"]] * 2 + [
        ["mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7"]] * 2
    assert {gpu["nearest_link"] for gpu in gpus} == {"NODE"}
    assert _kinds(topology, "gpu_nic_cross_socket") == []


def test_grace_gpus_keep_every_sys_nic_when_sysfs_does_not_say_where_the_nics_are():
    topology = build_topology({"nvidia_smi_topo": read_fixture(GB200_TOPO)})
    gpus = topology["gpus"]["devices"]
    assert [len(gpu["nearest_nics"]) for gpu in gpus] == [8] * 4
    assert {gpu["nearest_link"] for gpu in gpus} == {"SYS"}
    assert len(_kinds(topology, "gpu_nic_cross_socket")) == 4


def test_x86_sys_nics_on_the_other_socket_stay_cross_socket():
    # Derived from the Della capture (x86, 2 sockets): GPU0's NODE link to mlx5_0 becomes SYS, as when both NICs
    # sit on the other socket, where sysfs puts them. No NIC is on GPU0's node: it keeps both, SYS, and the finding.
    della = read_fixture("nvidia_smi_topo/princeton-della-2x-a100-2nic-mlx5-columns.txt")
    edited = della.replace("GPU0\t X \tSYS\tNODE", "GPU0\t X \tSYS\tSYS")
    assert edited != della
    topology = build_topology({"nvidia_smi_topo": edited, "sysfs": _grace_nic_sysfs([1, 1])})
    gpu0 = topology["gpus"]["devices"][0]
    assert (gpu0["numa_node"], gpu0["nearest_nics"], gpu0["nearest_link"]) == (0, ["mlx5_0", "mlx5_1"], "SYS")
    assert gpu0["memory_numa_node"] is None
    assert [f["message"][:30] for f in _kinds(topology, "gpu_nic_cross_socket")] == ["GPU0's nearest NIC (mlx5_0, ml"]


def test_grace_hopper_numa_node_is_the_cpu_side_one_not_the_gpu_memory_node():
    # GH200 (NVIDIA Aerial reference setup): the GPU's memory is NUMA node 1, without CPUs. Should its PCI function
    # report that node in sysfs (NVML's nvmlDeviceGetNumaNodeId returns such memory-only nodes, as vLLM#39361
    # found on GB200), binding to it fails: the CPU-side node nvidia-smi names first wins. Model and bus id are
    # the ones cuBB_system_checks printed for that GPU.
    sources = {
        "nvidia_smi_topo": read_fixture("nvidia_smi_topo/aerial-gh200-1gpu-4nic-gpu-numa-id.txt"),
        "nvidia_smi_query": "0, NVIDIA GH200 480GB, 00000009:01:00.0\n",
        "sysfs": {"bus/pci/devices/0009:01:00.0/numa_node": "1"},
    }
    gpu = build_topology(sources)["gpus"]["devices"][0]
    assert (gpu["pci_bus_id"], gpu["numa_node"], gpu["memory_numa_node"]) == ("0009:01:00.0", 0, 1)


def test_roce_port_without_v2_gid_is_reported():
    sysfs = {k: v for k, v in ROCE_SYSFS.items() if "/gids/1" not in k and "/gids/3" not in k
             and not k.endswith(("/types/1", "/types/3", "/ndevs/1", "/ndevs/3"))}
    topology = build_topology({"sysfs": sysfs})
    assert topology["rdma"]["devices"][0]["ports"][0]["roce_v2_gid_index"] is None
    assert _kinds(topology, "no_roce_v2_gid")[0]["message"] == (
        "mlx5_0 port 1 (RoCE) has no RoCE v2 GID: give its netdev ens108np0 an IP address")


def test_unparseable_source_is_a_finding_not_a_failure():
    topology = build_topology({"ibstat": "<html>502 Bad Gateway</html>", "lldpctl": "lldpctl: unable to connect",
                               "bonding": {"bond0": "garbage"}})
    errors = [f for f in topology["findings"] if f["severity"] == "error"]
    assert [f["kind"] for f in errors] == ["parse_error"] * 3
    assert topology["rdma"]["reason"].startswith("cannot parse `ibstat` output")
    assert topology["lldp"]["reason"].startswith("cannot parse `lldpctl -f json` output: not JSON")
    assert topology["bonds"] == {}


def test_ibstat_error_tail_is_a_warning_beside_the_devices():
    text = read_fixture("ibstat_ibv_devinfo/l2fwd-nv-6-ibstat-cx6dx-2port-roce-100g.txt") + (
        "ibpanic: [2137592] main: stat of IB device 'mthca0' failed: No such file or directory\n")
    topology = build_topology({"ibstat": text})
    assert len(topology["rdma"]["devices"]) == 2
    assert _kinds(topology, "tool_error")[0]["message"].startswith("ibstat reported: ibpanic: [2137592]")


def _write(directory, relpath, text):
    path = os.path.join(directory, relpath)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


def test_snapshot_of_real_captures(tmp_path):
    snapshot = str(tmp_path / "node17")
    _write(snapshot, "nvidia-smi-topo-m.txt", read_fixture("nvidia_smi_topo/sglang-28424-h800-nv8-9nic-bond.txt"))
    _write(snapshot, "ibstat.txt", read_fixture("ibstat_ibv_devinfo/mooncake-2039-ibstat-8x-cx7-ib400-4x-cx6dx-eth.txt"))
    _write(snapshot, "ibv_devinfo.txt", read_fixture("ibstat_ibv_devinfo/heioy-ibv_devinfo-2x-cx3-ib-old-tab-format.txt"))
    _write(snapshot, "lldpctl.json", read_fixture(SONIC_LLDP))
    _write(snapshot, "proc/net/bonding/bond0", read_fixture("bonding/magpie-supermicro-2x10g-802.3ad-healthy.txt"))
    for relpath, content in ROCE_SYSFS.items():
        _write(snapshot, "sys/" + relpath, content + "\n")
    topology = build_topology(read_snapshot(snapshot), source="snapshot:" + snapshot)
    assert topology["source"] == "snapshot:" + snapshot
    assert [rail["device"] for rail in topology["rails"]] == [
        "mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_9"]
    names = [device["name"] for device in topology["rdma"]["devices"]]
    assert names[:5] == ["mlx4_0", "mlx4_1", "mlx5_0", "mlx5_1", "mlx5_2"]
    assert topology["bonds"]["bond0"]["healthy"] is True
    assert topology["lldp"]["available"] is True and len(topology["lldp"]["neighbors"]) == 5
    # sysfs wins over ibstat for mlx5_0 (it is the live state); ibv_devinfo fills the MTU of mlx4 ports.
    mlx5_0 = next(d for d in topology["rdma"]["devices"] if d["name"] == "mlx5_0")
    assert (mlx5_0["ports"][0]["link_layer"], mlx5_0["netdev"]) == ("Ethernet", "ens108np0")
    mlx4_1 = next(d for d in topology["rdma"]["devices"] if d["name"] == "mlx4_1")
    assert [p["active_mtu"] for p in mlx4_1["ports"]] == [4096, 4096]
    assert topology["gpus"]["devices"][0]["pci_bus_id"] is None  # no nvidia-smi-query-gpu.csv in this snapshot


# A snapshot write_capture made on a live host with one H200 in a VM, and the facts build_topology returned there
# (scripts/gpu-capture.sh; provenance in its README.md). Archived, as sysfs names hold colons.
DEVICE_H200 = FIXTURES / "topology_snapshot" / "device-h200-vm"


def _unpack_snapshot(archive_path, target):
    """The archive's regular files under target, refusing any name that would land outside it."""
    with tarfile.open(archive_path) as archive:
        for member in archive.getmembers():
            parts = member.name.split("/")
            assert parts[0] == "snapshot" and ".." not in parts and (member.isfile() or member.isdir()), member.name
            if member.isfile():
                path = target.joinpath(*parts)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(archive.extractfile(member).read())
    return target / "snapshot"


def test_snapshot_made_on_a_real_h200_host_gives_the_facts_built_there(tmp_path):
    snapshot = str(_unpack_snapshot(DEVICE_H200 / "snapshot.tar.gz", tmp_path))
    sources = read_snapshot(snapshot)
    offline = build_topology(sources, source="snapshot:" + snapshot)
    on_host = json.loads((DEVICE_H200 / "topology.json").read_text(encoding="utf-8"))
    # source differs by design: the host built its facts from live commands, this test from the snapshot.
    assert (on_host["source"], offline["source"]) == ("live", "snapshot:" + snapshot)
    # lldp's awaited and waited_s (the LLDP wait, nothing waited) came after the capture.
    assert (offline["lldp"].pop("awaited"), offline["lldp"].pop("waited_s")) == ([], 0)
    assert {k: v for k, v in offline.items() if k != "source"} == {k: v for k, v in on_host.items() if k != "source"}
    # What those facts say, from the real files: the VM gives the GPU's PCI function no NUMA node (-1), so the
    # node is nvidia-smi's NUMA Affinity; GPU NUMA ID N/A means its memory is no node of its own.
    assert sources["sysfs"]["bus/pci/devices/0000:00:06.0/numa_node"] == "-1"
    assert offline["gpus"]["devices"] == [{
        "index": 0, "name": "GPU0", "model": "NVIDIA H200", "pci_bus_id": "0000:00:06.0", "numa_node": 0,
        "memory_numa_node": None, "cpu_affinity": "0-15", "nvlink_peers": [], "nearest_nics": [], "nearest_link": None,
    }]
    assert offline["rdma"] == {"available": False, "devices": [], "reason": "ibstat not found in PATH (install infiniband-diags)"}
    eth0 = next(interface for interface in offline["interfaces"] if interface["name"] == "eth0")
    assert (eth0["driver"], eth0["mtu"], eth0["operstate"], eth0["speed_mbps"]) == ("virtio_net", 1400, "up", None)
    assert (offline["rails"], offline["rail_source"], offline["findings"]) == ([], "none", [])


def test_snapshot_with_only_some_files_gives_what_they_allow(tmp_path):
    _write(str(tmp_path), "ibstat.txt", read_fixture(IB_SOME_DOWN))
    topology = build_topology(read_snapshot(str(tmp_path)))
    assert topology["gpus"]["available"] is False
    assert topology["gpus"]["reason"] == "the snapshot has no nvidia-smi-topo-m.txt"
    assert topology["lldp"]["reason"] == "the snapshot has no lldpctl.json"
    assert topology["rdma"]["available"] is True and len(topology["rdma"]["devices"]) == 12


def test_missing_snapshot_directory_raises(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        read_snapshot(str(tmp_path / "nowhere"))


def _run(argv):
    completed = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=120)
    return completed.returncode, completed.stdout, completed.stderr


def test_live_discovery_on_this_machine_returns_facts_with_reasons(tmp_path):
    """This lab machine has no GPU, no RDMA device and no lldpd: the facts must say so, without failing."""
    sources = collect_live(_run, shutil.which)
    topology = build_topology(sources)
    assert topology["gpus"]["available"] is False and topology["gpus"]["reason"]
    assert topology["rdma"]["available"] is False and topology["rdma"]["reason"]
    if not shutil.which("lldpctl"):
        assert topology["lldp"]["reason"] == "lldpctl not found in PATH (install and start lldpd)"
    # The interfaces are the machine's own, as sysfs lists them.
    expected = sorted(name for name in os.listdir("/sys/class/net")
                      if int(Path("/sys/class/net", name, "type").read_text()) != 772)  # 772: loopback
    assert sorted(i["name"] for i in topology["interfaces"]) == expected
    for interface in topology["interfaces"]:
        with open("/sys/class/net/%s/mtu" % interface["name"]) as handle:
            assert interface["mtu"] == int(handle.read())
    # Capture, then read the capture back: the same facts, offline.
    capture = str(tmp_path / "capture")
    written = write_capture(capture, sources)
    assert "reasons.json" in written and any(path.startswith("sys/class/net/") for path in written)
    assert write_capture(capture, sources) == []  # unchanged content is not rewritten
    offline = build_topology(read_snapshot(capture), source="snapshot:" + capture)
    assert {k: v for k, v in offline.items() if k != "source"} == {k: v for k, v in topology.items() if k != "source"}
    with open(os.path.join(capture, "reasons.json")) as handle:
        assert json.load(handle) == sources["reasons"]


def test_capture_in_check_mode_writes_nothing(tmp_path):
    sources = {"ibstat": read_fixture(IB_SOME_DOWN), "sysfs": ROCE_SYSFS}
    target = str(tmp_path / "capture")
    would = write_capture(target, sources, check_mode=True)
    assert "ibstat.txt" in would and "sys/class/infiniband/mlx5_0/ports/1/rate" in would
    assert not os.path.exists(target)


# Every real capture of the five folders with the parser that reads it.
_PARSERS = {
    "nvidia_smi_topo": parse_nvidia_smi_topo,
    "bonding": parse_bonding,
    "lldp": parse_lldp,
}
_CAPTURES = [
    (_PARSERS.get(folder) or (parse_ibstat if "ibstat" in name else parse_ibv_devinfo), "%s/%s" % (folder, name))
    for folder in ("nvidia_smi_topo", "ibstat_ibv_devinfo", "bonding", "lldp")
    for name in fixture_names(folder)
]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_damaged_captures_parse_or_raise_parse_error_never_a_traceback(data):
    """Unseen variants: lines dropped, duplicated, cut short or with a character changed."""
    parser, relpath = data.draw(st.sampled_from(_CAPTURES))
    lines = read_fixture(relpath).split("\n")
    for unused_step in range(data.draw(st.integers(min_value=1, max_value=3))):
        index = data.draw(st.integers(min_value=0, max_value=len(lines) - 1))
        operation = data.draw(st.sampled_from(["drop", "duplicate", "truncate", "replace", "cut"]))
        if operation == "drop" and len(lines) > 1:
            del lines[index]
        elif operation == "duplicate":
            lines.insert(index, lines[data.draw(st.integers(min_value=0, max_value=len(lines) - 1))])
        elif operation == "truncate":
            lines = lines[:index + 1]
        elif operation == "replace" and lines[index]:
            position = data.draw(st.integers(min_value=0, max_value=len(lines[index]) - 1))
            lines[index] = lines[index][:position] + data.draw(st.sampled_from(["", " ", "\t", "X", ":", "{", "NV", "0"])) \
                + lines[index][position + 1:]
        elif operation == "cut" and lines[index]:
            lines[index] = lines[index][:data.draw(st.integers(min_value=0, max_value=len(lines[index])))]
    text = "\n".join(lines)
    try:
        parser(text)
    except ParseError as error:
        assert str(error).startswith("cannot parse `")
    # And discovery as a whole never fails on it.
    key = {"nvidia_smi_topo": "nvidia_smi_topo", "lldp": "lldpctl"}.get(relpath.split("/")[0])
    sources = {"bonding": {"bond0": text}} if relpath.startswith("bonding/") else {
        key or ("ibstat" if parser is parse_ibstat else "ibv_devinfo"): text}
    assert list(build_topology(sources)) == TOP_LEVEL


def test_rail_on_a_roce_lag_bond_reads_lldp_of_the_slaves_and_mtu_mismatch():
    # sglang-28424: NIC8 is mlx5_bond_0; make it GPU0's nearest NIC, carried by bond0 over ens108np0.
    topo = read_fixture("nvidia_smi_topo/sglang-28424-h800-nv8-9nic-bond.txt").replace(
        "GPU0     X      NV8     NV8     NV8     NV8     NV8     NV8     NV8     PIX ",
        "GPU0     X      NV8     NV8     NV8     NV8     NV8     NV8     NV8     NODE").replace(
        "SYS     SYS     SYS     SYS     NODE    0-55,112-167    0               N/A\nGPU1",
        "SYS     SYS     SYS     SYS     PIX     0-55,112-167    0               N/A\nGPU1", 1)
    sysfs = {key.replace("mlx5_0", "mlx5_bond_0").replace("device/net/ens108np0", "device/net/bond0")
             .replace("/ndevs/0", "/ndevs/x"): value for key, value in ROCE_SYSFS.items() if "/ndevs/" not in key}
    sysfs.update({"class/net/bond0/mtu": "1500", "class/net/bond0/operstate": "up", "class/net/bond0/type": "1",
                  "class/net/bond0/bonding/slaves": "ens108np0", "class/net/bond0/uevent": "DEVTYPE=bond\nINTERFACE=bond0",
                  "class/infiniband/mlx5_3/device/net/ens841np0/ifindex": "7",
                  "class/infiniband/mlx5_3/ports/1/state": "4: ACTIVE",
                  "class/infiniband/mlx5_3/ports/1/link_layer": "Ethernet",
                  "class/net/ens841np0/mtu": "9000", "class/net/ens841np0/type": "1"})
    topology = build_topology({"nvidia_smi_topo": topo, "sysfs": sysfs, "lldpctl": read_fixture(SONIC_LLDP)})
    rail0, rail1 = topology["rails"][0], topology["rails"][1]
    assert (rail0["device"], rail0["netdev"], rail0["switch"], rail0["switch_port"]) == (
        "mlx5_bond_0", "bond0", "LEAF01", "Ethernet184")
    assert (rail1["device"], rail1["netdev"], rail1["switch"]) == ("mlx5_3", "ens841np0", "LEAF03")
    bond0 = next(i for i in topology["interfaces"] if i["name"] == "bond0")
    assert bond0["driver"] == "bond"
    assert next(i for i in topology["interfaces"] if i["name"] == "ens108np0")["bond_master"] == "bond0"
    assert _kinds(topology, "rail_mtu_mismatch")[0]["message"].startswith(
        "the rails' netdevs have different MTUs (rail 0 bond0=1500, rail 1 ens841np0=9000)")


def test_recapture_removes_stale_layout_files_and_keeps_others(tmp_path):
    target = str(tmp_path)
    _write(target, "notes.txt", "the engineer's own notes\n")
    first = {"nvidia_smi_topo": read_fixture(HGX_TOPO), "bonding": {"bond0": read_fixture(CHURNED_BOND)},
             "sysfs": ROCE_SYSFS}
    assert "nvidia-smi-topo-m.txt" in write_capture(target, first)
    # The next capture of the host has no GPU output and no bond: the old files must not survive into it.
    second = {"ibstat": read_fixture(IB_SOME_DOWN), "sysfs": ROCE_SYSFS, "reasons": {"nvidia_smi_topo": "gone"}}
    would = write_capture(target, second, check_mode=True)
    assert sorted(would) == ["ibstat.txt", "nvidia-smi-topo-m.txt", "proc/net/bonding/bond0", "reasons.json"]
    assert os.path.exists(os.path.join(target, "nvidia-smi-topo-m.txt"))
    assert write_capture(target, second) == would
    assert not os.path.exists(os.path.join(target, "nvidia-smi-topo-m.txt"))
    assert not os.path.exists(os.path.join(target, "proc/net/bonding/bond0"))
    assert os.path.exists(os.path.join(target, "notes.txt"))
    offline = build_topology(read_snapshot(target))
    assert offline["gpus"]["reason"] == "gone"
    assert write_capture(target, second) == []


def test_ibv_devinfo_only_devices_get_the_mellanox_model_name():
    topology = build_topology({"ibv_devinfo": read_fixture("ibstat_ibv_devinfo/puget-wrx90-ibv_devinfo-cx7-eth.txt")})
    assert [(d["name"], d["model"], d["firmware"]) for d in topology["rdma"]["devices"]] == [
        ("mlx5_0", "MT4129", "28.44.1036"), ("mlx5_1", "MT4129", "28.44.1036")]
    assert [f["message"] for f in _kinds(topology, "port_down")] == [
        "mlx5_0 port 1 is DOWN (physical state unknown)", "mlx5_1 port 1 is DOWN (physical state unknown)"]


# lldpctl's stderr without a running lldpd, captured in the lab's Debian 13 image (lldpd 1.0.19) twice, a second apart.
LLDPCTL_NO_DAEMON = [
    "2026-12-04T14:18:48 [WARN/control] unable to connect to socket /run/lldpd.socket: No such file or directory\n",
    "2026-12-04T14:18:49 [WARN/control] unable to connect to socket /run/lldpd.socket: No such file or directory\n",
]


def test_a_failing_tools_reason_is_the_same_on_every_run(tmp_path):
    """A reason is part of the facts and of a capture: the log time lldpctl prints must not make each run differ."""
    reasons = []
    for stderr in LLDPCTL_NO_DAEMON:
        sources = collect_live(lambda argv, err=stderr: (1, "", err) if "/usr/sbin/lldpctl" in argv else (127, "", ""),
                               lambda name: "/usr/sbin/lldpctl" if name == "lldpctl" else None,
                               sys_root=str(tmp_path), proc_root=str(tmp_path))
        reasons.append(build_topology(sources)["lldp"]["reason"])
    assert reasons[0] == reasons[1]
    assert reasons[0].endswith("(rc 1): [WARN/control] unable to connect to socket /run/lldpd.socket: No such file or "
                               "directory")


# The lab's node1 (tests/fixtures/lldp/lab-json0-node1.txt: eth1 to leaf-a, eth2 to leaf-b) and what lldpd 1.0.16
# prints before it has heard any neighbour.
LAB_NODE1_LLDP = read_fixture("lldp/lab-json0-node1.txt")
LLDPD_NO_NEIGHBOUR_YET = '{\n  "lldp": [\n    {\n      \n    }\n  ]\n}\n'
LLDPCTL = "/usr/sbin/lldpctl"


class _Clock:
    """time.monotonic and time.sleep of a test: sleeping moves the clock, nothing waits."""

    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def _host_hearing(outputs, tmp_path, operstate="up"):
    """(sources, reread, calls) of a lab node whose lldpctl prints outputs in turn, the last from then on."""
    calls = []

    def run(argv):
        if LLDPCTL not in argv:
            return 127, "", ""
        calls.append(argv)
        return 0, outputs[min(len(calls), len(outputs)) - 1], ""

    def which(name):
        return LLDPCTL if name == "lldpctl" else None

    sources = collect_live(run, which, sys_root=str(tmp_path), proc_root=str(tmp_path))
    sources["sysfs"] = dict(LAB_CABLES_SYSFS, **{"class/net/eth2/operstate": operstate})

    def reread():
        reread_lldp(sources, run, which)
        return build_topology(sources, rail_interfaces=["eth1", "eth2"])

    return build_topology(sources, rail_interfaces=["eth1", "eth2"]), reread, calls


def test_discovery_waits_for_switches_not_heard_yet_and_says_for_how_long(tmp_path):
    # lldpd heard nothing on the first two reads, both leaves on the third (4 s later).
    topology, reread, calls = _host_hearing([LLDPD_NO_NEIGHBOUR_YET] * 2 + [LAB_NODE1_LLDP], tmp_path)
    clock = _Clock()
    waited = wait_for_lldp(topology, reread, 35, clock, clock.sleep)
    assert [(rail["netdev"], rail["switch"], rail["switch_port"]) for rail in waited["rails"]] == [
        ("eth1", "leaf-a", "swp1"), ("eth2", "leaf-b", "swp1")]
    assert (waited["lldp"]["awaited"], waited["lldp"]["waited_s"], len(calls)) == (["eth1", "eth2"], 4, 3)
    # What discovery would have mapped without waiting: the same rails without their switches.
    assert [rail["switch"] for rail in topology["rails"]] == [None, None]


def test_the_wait_is_bounded_and_a_silent_switch_stays_unmapped(tmp_path):
    topology, reread, calls = _host_hearing([LLDPD_NO_NEIGHBOUR_YET], tmp_path)
    clock = _Clock()
    waited = wait_for_lldp(topology, reread, 35, clock, clock.sleep)
    assert (waited["lldp"]["awaited"], waited["lldp"]["waited_s"]) == (["eth1", "eth2"], 35)
    assert [rail["switch"] for rail in waited["rails"]] == [None, None]
    assert len(calls) == 1 + 18  # every 2 s, the last read at 35 s
    assert clock.now == 135.0


def test_no_wait_when_told_not_to_when_every_rail_is_heard_or_when_the_link_is_down(tmp_path):
    clock = _Clock()
    topology, reread, calls = _host_hearing([LLDPD_NO_NEIGHBOUR_YET], tmp_path)
    assert wait_for_lldp(topology, reread, 0, clock, clock.sleep)["lldp"]["awaited"] == []
    topology, reread, calls = _host_hearing([LAB_NODE1_LLDP], tmp_path)
    assert wait_for_lldp(topology, reread, 35, clock, clock.sleep)["lldp"]["waited_s"] == 0
    # eth2 down: no LLDP frame can arrive on it, eth1 is awaited alone.
    topology, reread, calls = _host_hearing([LLDPD_NO_NEIGHBOUR_YET, LAB_NODE1_LLDP], tmp_path, operstate="down")
    waited = wait_for_lldp(topology, reread, 35, clock, clock.sleep)
    assert (waited["lldp"]["awaited"], waited["lldp"]["waited_s"], len(calls)) == (["eth1"], 2, 2)
    assert clock.now == 102.0
    # lldpd not running: nothing to wait for (the facts say why there is no LLDP).
    without = build_topology({"sysfs": LAB_CABLES_SYSFS, "reasons": {"lldpctl": "lldpctl not found in PATH"}},
                             rail_interfaces=["eth1", "eth2"])
    assert wait_for_lldp(without, None, 35, clock, clock.sleep)["lldp"]["awaited"] == []
