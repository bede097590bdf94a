# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""NCCL configuration derived from topology facts built from real captures (tests/fixtures).

Pairs: the HGX H100 topology (sglang#30401, NIC legend mlx5_0..mlx5_7) with the ibstat of H100 nodes of the same
mlx5_0..mlx5_11 layout (leptonai/gpud test data, InfiniBand and RoCE), as test_topology.py pairs them; the ASUS
ESC8000A topology with the ibv_devinfo of the same machine (luigifcruz/stelline); the tempura PCIe box without NICs.
Where a test edits a capture or adds sysfs files (the fixtures hold no GID table of a RoCE host), it says so.
"""

from __future__ import annotations

import xml.dom.minidom

import pytest
from fixture_data import fixture_names, read_fixture

from ansible.errors import AnsibleFilterError
from ansible_collections.gpufabric.core.plugins.filter.nccl_config import FilterModule as NcclConfigFilters
from ansible_collections.gpufabric.core.plugins.filter.nccl_hca_consistency import nccl_hca_consistency
from ansible_collections.gpufabric.core.plugins.filter.nccl_topology_xml import FilterModule as TopologyXmlFilters
from ansible_collections.gpufabric.core.plugins.module_utils.nccl.config import (
    DEBUG_ONLY_VARIABLES,
    NCCL_VARIABLES,
    RENAMED_VARIABLES,
    RETIRED_VARIABLES,
    NcclConfigError,
    check_variables,
    derive,
    hca_consistency,
    nccl_config,
    suggest,
    topology_xml,
)
from ansible_collections.gpufabric.core.plugins.module_utils.fabric.topology import build_topology

nccl_config_filter = NcclConfigFilters().filters()["nccl_config"]
nccl_topology_xml = TopologyXmlFilters().filters()["nccl_topology_xml"]

HGX_TOPO = "nvidia_smi_topo/sglang-30401-hgx-h100-8gpu-8nic.txt"
IB_SOME_DOWN = "ibstat_ibv_devinfo/gpud-h100-ibstat-8x-cx7-ib-400g-some-down.txt"
ROCE_ALL_ACTIVE = "ibstat_ibv_devinfo/gpud-h100-ibstat-8x-cx7-roce-400g-4x-cx6dx.txt"
ASUS_TOPO = "nvidia_smi_topo/asus-esc8000a-e12-4x-rtx6000ada-4nic.txt"
ASUS_IBV = "ibstat_ibv_devinfo/asus-esc8000a-e12-ibv_devinfo-cx7-eth-portdown.txt"
TEMPURA_TOPO = "nvidia_smi_topo/tempura-8x-quadro-rtx6000-pcie-switch-ansi.txt"
NO_RDMA = {"rdma": "no RDMA device: /sys/class/infiniband does not exist (no RDMA driver loaded)"}


def _topology(topo, ibstat=None, ibv_devinfo=None, sysfs=None, query=None, reasons=None):
    sources = {"nvidia_smi_topo": read_fixture(topo), "reasons": dict(reasons or {})}
    if ibstat:
        sources["ibstat"] = read_fixture(ibstat)
    if ibv_devinfo:
        sources["ibv_devinfo"] = ibv_devinfo if "\n" in ibv_devinfo else read_fixture(ibv_devinfo)
    if sysfs:
        sources["sysfs"] = sysfs
    if query:
        sources["nvidia_smi_query"] = query
    return build_topology(sources)


def _roce_gid_sysfs(indexes):
    """GID tables in the kernel's sysfs format for mlx5_<n> port 1, the RoCE v2 IPv4-mapped entry at indexes[n]."""
    sysfs = {}
    for device, index in indexes.items():
        port = "class/infiniband/mlx5_%d/ports/1/" % device
        sysfs[port + "gids/0"] = "fe80:0000:0000:0000:a288:c2ff:fee3:14%02x" % device
        sysfs[port + "gid_attrs/types/0"] = "IB/RoCE v1"
        sysfs[port + "gids/1"] = "fe80:0000:0000:0000:a288:c2ff:fee3:14%02x" % device
        sysfs[port + "gid_attrs/types/1"] = "RoCE v2"
        sysfs[port + "gids/%d" % index] = "0000:0000:0000:0000:0000:ffff:0a14:01%02x" % device
        sysfs[port + "gid_attrs/types/%d" % index] = "RoCE v2"
    return sysfs


def _messages(result, severity=None):
    return [f["message"] for f in result["findings"] if severity in (None, f["severity"])]


# ------------------------------------------------------------------ derivation from real captures


def test_hgx_infiniband_host_keeps_active_gpu_affine_infiniband_ports():
    topology = _topology(HGX_TOPO, ibstat=IB_SOME_DOWN)
    result = nccl_config(topology, options={"default_interface": "eth0"})
    # GPU2's mlx5_2 and GPU7's mlx5_7 are DOWN; GPU1's mlx5_1 is an Ethernet ConnectX-6 Dx among InfiniBand rails.
    assert result["variables"] == {
        "NCCL_IB_HCA": "=mlx5_0:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1",
        "NCCL_NET_GDR_LEVEL": "PIX",
        "NCCL_SOCKET_IFNAME": "=eth0",
    }
    assert result["link_layer"] == "InfiniBand" and result["problems"] == []
    warnings = _messages(result, "warning")
    # NCCL_IB_HCA is the ACTIVE ports of the rails topology_facts resolved, the rails every consumer reads.
    assert [rail["device"] for rail in topology["rails"]] == ["mlx5_%d" % n for n in range(8)]
    assert "rail 2 (GPU2, mlx5_2): mlx5_2 port 1 is DOWN, left out of NCCL_IB_HCA: its GPU's traffic goes to a " \
           "farther NIC" in warnings
    assert any(m.startswith("rail 7 (GPU7, mlx5_7): mlx5_7 port 1 is DOWN") for m in warnings)
    assert any(m.startswith("mlx5_1 port 1 (Ethernet) left out of NCCL_IB_HCA") for m in warnings)
    # InfiniBand: no GID index, NCCL's default single QP.
    assert "NCCL_IB_GID_INDEX" not in result["variables"] and "NCCL_IB_QPS_PER_CONNECTION" not in result["variables"]


def test_hgx_roce_host_exact_match_keeps_mlx5_10_and_11_out():
    topology = _topology(HGX_TOPO, ibstat=ROCE_ALL_ACTIVE)
    result = nccl_config(topology, options={"default_interface": "bond0"})
    assert result["variables"]["NCCL_IB_HCA"] == "=mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_7:1"
    # mlx5_10 and mlx5_11 are ACTIVE 400 Gb/s RoCE ports of this host that no GPU is near: without the leading '='
    # NCCL reads mlx5_1 as a prefix and would select them too.
    names = [device["name"] for device in topology["rdma"]["devices"]]
    assert "mlx5_10" in names and "mlx5_11" in names
    assert result["variables"]["NCCL_IB_HCA"].startswith("=")
    assert result["link_layer"] == "Ethernet"
    assert result["variables"]["NCCL_SOCKET_IFNAME"] == "=bond0"
    assert result["variables"]["NCCL_IB_QPS_PER_CONNECTION"] == "4"
    assert result["variables"]["NCCL_IB_SPLIT_DATA_ON_QPS"] == "0"
    # ibstat holds no GID table: the index is not guessed.
    assert "NCCL_IB_GID_INDEX" not in result["variables"]
    assert _messages(result, "warning") == [
        "no RoCE v2 GID index known for mlx5_0:1, mlx5_1:1, mlx5_2:1, mlx5_3:1, mlx5_4:1, mlx5_5:1, mlx5_6:1, mlx5_7:1 "
        "(the facts hold no GID table: capture ibv_devinfo -v or sysfs): NCCL_IB_GID_INDEX not written, NCCL picks "
        "the GID itself"]


def test_roce_gid_index_from_the_gid_table():
    # sysfs GID tables (kernel format) added to the real ibstat: RoCE v2 IPv4-mapped GID at index 3 on every rail.
    topology = _topology(HGX_TOPO, ibstat=ROCE_ALL_ACTIVE, sysfs=_roce_gid_sysfs({n: 3 for n in range(8)}))
    result = nccl_config(topology, options={"default_interface": "eth0", "roce_traffic_class": 106})
    assert result["variables"]["NCCL_IB_GID_INDEX"] == "3"
    assert result["variables"]["NCCL_IB_TC"] == "106"
    # One rail whose IPv4 GID sits elsewhere: one value cannot serve all, so none is written.
    indexes = {n: 3 for n in range(8)}
    indexes[5] = 2
    mixed = nccl_config(_topology(HGX_TOPO, ibstat=ROCE_ALL_ACTIVE, sysfs=_roce_gid_sysfs(indexes)))
    assert "NCCL_IB_GID_INDEX" not in mixed["variables"]
    assert any(m.startswith("the RoCE v2 GID index differs between ports (2 on mlx5_5:1; 3 on mlx5_0:1")
               for m in _messages(mixed, "warning"))


def test_pcie_host_with_ports_down_is_refused_until_decided():
    # The ASUS box as captured: 4 GPUs, two dual-port ConnectX-7 in Ethernet mode, every port PORT_DOWN.
    topology = _topology(ASUS_TOPO, ibv_devinfo=ASUS_IBV)
    result = nccl_config(topology, options={"default_interface": "eth0"})
    assert result["problems"] == [
        "RDMA devices are present but no rail has an ACTIVE RDMA port: NCCL would silently fall back to a farther NIC "
        "or TCP; bring the links up, or set NCCL_IB_HCA (or NCCL_IB_DISABLE) in nccl_variables"]
    assert "NCCL_IB_HCA" not in result["variables"]
    decided = nccl_config(topology, overrides={"NCCL_IB_DISABLE": 1}, options={"default_interface": "eth0"})
    assert decided["problems"] == []
    assert decided["variables"] == {"NCCL_IB_DISABLE": "1", "NCCL_SOCKET_IFNAME": "=eth0"}


def test_pcie_host_with_fewer_cabled_ports_than_gpus():
    # The same capture with one port per card cabled (mlx5_0 and mlx5_2 edited to PORT_ACTIVE): four GPUs share two
    # ports, each GPU reaching its port through the host bridges of its NUMA node (nvidia-smi NODE = NCCL PHB).
    text = read_fixture(ASUS_IBV)
    blocks = text.split("hca_id:")
    for index in (1, 3):  # blocks[1] is mlx5_0, blocks[3] mlx5_2
        blocks[index] = blocks[index].replace("PORT_DOWN (1)", "PORT_ACTIVE (4)")
    topology = _topology(ASUS_TOPO, ibv_devinfo="hca_id:".join(blocks))
    result = nccl_config(topology, options={"socket_ifname": ["enp1s0f0"]})
    assert result["problems"] == []
    assert result["variables"] == {
        "NCCL_IB_HCA": "=mlx5_0:1,mlx5_2:1",
        "NCCL_IB_QPS_PER_CONNECTION": "4",
        "NCCL_IB_SPLIT_DATA_ON_QPS": "0",
        "NCCL_NET_GDR_LEVEL": "PHB",
        "NCCL_SOCKET_IFNAME": "=enp1s0f0",
    }
    assert result["hca"] == ["mlx5_0:1", "mlx5_2:1"]
    # GPUDirect RDMA capped below the host bridges when the cluster asks for it.
    capped = derive(topology, {"gdr_level_max": "PXB"})
    assert capped["variables"]["NCCL_NET_GDR_LEVEL"] == "PXB"


def test_host_without_rdma_uses_sockets_on_the_named_interfaces():
    topology = _topology(TEMPURA_TOPO, reasons=NO_RDMA)
    assert topology["gpus"]["available"] and len(topology["gpus"]["devices"]) == 8
    result = nccl_config(topology, options={"socket_ifname": ["eno1", "eno2"], "default_interface": "eth9"})
    assert result["variables"] == {"NCCL_IB_DISABLE": "1", "NCCL_SOCKET_IFNAME": "=eno1,eno2"}
    assert result["hca"] == [] and result["link_layer"] is None
    assert _messages(result, "info") == [
        "RDMA not available (no RDMA device: /sys/class/infiniband does not exist (no RDMA driver loaded)): "
        "NCCL_IB_DISABLE=1, NCCL uses TCP sockets"]


def test_without_any_bootstrap_interface_nothing_is_guessed():
    result = derive(_topology(TEMPURA_TOPO, reasons=NO_RDMA))
    assert "NCCL_SOCKET_IFNAME" not in result["variables"]
    assert _messages(result, "warning")[0].startswith("no bootstrap interface")


def test_algorithm_hints_by_cluster_size_only_when_asked():
    topology = _topology(HGX_TOPO, ibstat=IB_SOME_DOWN)
    assert "NCCL_ALGO" not in derive(topology, {"cluster_nodes": 64})["variables"]
    sizes = {nodes: derive(topology, {"algorithm_hints": True, "cluster_nodes": nodes})["variables"]["NCCL_ALGO"]
             for nodes in (2, 4, 16, 32, 33, 512)}
    assert sizes == {2: "Ring", 4: "Ring", 16: "Tree,Ring", 32: "Tree,Ring", 33: "NVLSTree,Tree", 512: "NVLSTree,Tree"}


def test_topology_file_is_named_in_the_variables():
    result = derive(_topology(HGX_TOPO, ibstat=IB_SOME_DOWN), {"topology_file": "/etc/nccl/topo.xml"})
    assert result["variables"]["NCCL_TOPO_FILE"] == "/etc/nccl/topo.xml"


# ------------------------------------------------------------------ the user's variables


def test_typo_is_refused_with_the_closest_name():
    assert check_variables({"NCCL_IB_HAC": "=mlx5_0:1"}) == ["NCCL_IB_HAC: not an NCCL variable; did you mean NCCL_IB_HCA?"]
    assert check_variables({"NCCL_SOCKET_IFNAM": "=eth0"}) == [
        "NCCL_SOCKET_IFNAM: not an NCCL variable; did you mean NCCL_SOCKET_IFNAME?"]
    assert check_variables({"CUDA_VISIBLE_DEVICES": "0"}) == [
        "CUDA_VISIBLE_DEVICES: not an NCCL variable; no NCCL variable has a similar name"]
    assert suggest("nccl_ib_gid_idx") == "NCCL_IB_GID_INDEX"


def test_renamed_and_malformed_names_and_unsafe_values():
    assert check_variables({"NCCL_IB_GDR_LEVEL": 2}) == [
        "NCCL_IB_GDR_LEVEL: NCCL renamed it NCCL_NET_GDR_LEVEL; use the new name"]
    assert check_variables({"nccl ib hca": 1})[0].startswith("'nccl ib hca': not a variable name")
    problems = check_variables({"NCCL_IB_HCA": "mlx5_0 mlx5_1", "NCCL_SOCKET_IFNAME": "$(reboot)", "NCCL_ALGO": ["Ring"]})
    assert problems == [
        "NCCL_ALGO: the value must be a string or a number, got a list",
        "NCCL_IB_HCA: the value 'mlx5_0 mlx5_1' holds characters that nccl.conf and environment files cannot carry "
        "(whitespace, quotes, $, `, \\, ;, # ...)",
        "NCCL_SOCKET_IFNAME: the value '$(reboot)' holds characters that nccl.conf and environment files cannot "
        "carry (whitespace, quotes, $, `, \\, ;, # ...)",
    ]


def test_debugging_variables_need_explicit_permission():
    refused = check_variables({"NCCL_DEBUG_SUBSYS": "INIT,NET", "NCCL_DEBUG": "INFO", "NCCL_GRAPH_FILE": "/tmp/g.xml"})
    assert refused[0] == (
        "NCCL_DEBUG=INFO: a debugging level, refused in production; use VERSION or WARN, or set "
        "nccl_allow_debug_variables: true while you diagnose")
    assert [p.split(":")[0] for p in refused[1:]] == ["NCCL_DEBUG_SUBSYS", "NCCL_GRAPH_FILE"]
    assert "nccl_allow_debug_variables: true" in refused[1]
    assert check_variables({"NCCL_DEBUG_SUBSYS": "INIT,NET", "NCCL_DEBUG": "INFO"}, allow_debug=True) == []
    # NVIDIA's own /etc/nccl.conf example sets WARN: production-safe.
    assert check_variables({"NCCL_DEBUG": "WARN"}) == []


def test_overrides_merge_drop_and_stringify():
    topology = _topology(HGX_TOPO, ibstat=IB_SOME_DOWN)
    result = nccl_config(topology, overrides={"NCCL_NET_GDR_LEVEL": None, "NCCL_IB_TIMEOUT": 22,
                                              "NCCL_CROSS_NIC": True, "NCCL_IB_HCA": "=mlx5_0:1"})
    assert result["variables"] == {"NCCL_CROSS_NIC": "1", "NCCL_IB_HCA": "=mlx5_0:1", "NCCL_IB_TIMEOUT": "22"}
    assert result["derived"]["NCCL_NET_GDR_LEVEL"] == "PIX"
    assert list(result["variables"]) == sorted(result["variables"])
    assert result["retired"] == list(RETIRED_VARIABLES)
    # A refused override leaves the derived values untouched and reports why.
    refused = nccl_config(topology, overrides={"NCCL_IB_HAC": "=mlx5_0:1"})
    assert refused["problems"] == ["NCCL_IB_HAC: not an NCCL variable; did you mean NCCL_IB_HCA?"]
    assert refused["variables"]["NCCL_IB_HCA"] == "=mlx5_0:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1"


def test_variable_tables_are_consistent():
    assert DEBUG_ONLY_VARIABLES <= NCCL_VARIABLES
    assert not set(RENAMED_VARIABLES) & NCCL_VARIABLES
    assert set(RENAMED_VARIABLES.values()) <= NCCL_VARIABLES
    assert "NCCL_GRAPH_FILE" in RETIRED_VARIABLES and "NCCL_GRAPH_FILE" in DEBUG_ONLY_VARIABLES


def test_bad_input_is_a_clear_error():
    with pytest.raises(NcclConfigError, match="expected gpufabric_topology"):
        derive({"gpus": []})
    with pytest.raises(NcclConfigError, match="unknown option"):
        derive(_topology(TEMPURA_TOPO, reasons=NO_RDMA), {"socket_ifnames": ["eth0"]})
    with pytest.raises(NcclConfigError, match="socket_ifname must list interface names"):
        derive(_topology(TEMPURA_TOPO, reasons=NO_RDMA), {"socket_ifname": ["eth0; reboot"]})
    with pytest.raises(AnsibleFilterError, match="nccl_config: gdr_level_max must be one of"):
        nccl_config_filter(_topology(TEMPURA_TOPO, reasons=NO_RDMA), options={"gdr_level_max": "NODE"})


# ------------------------------------------------------------------ across hosts


def test_hosts_of_one_group_must_select_the_same_ports():
    ib = nccl_config(_topology(HGX_TOPO, ibstat=IB_SOME_DOWN))["variables"]
    roce = nccl_config(_topology(HGX_TOPO, ibstat=ROCE_ALL_ACTIVE))["variables"]
    tcp = nccl_config(_topology(TEMPURA_TOPO, reasons=NO_RDMA))["variables"]
    reordered = dict(ib, NCCL_IB_HCA="=mlx5_6:1,mlx5_5:1,mlx5_4:1,mlx5_3:1,mlx5_0:1")
    hosts = [
        {"host": "gpu01", "group": "h100", "variables": ib},
        {"host": "gpu02", "group": "h100", "variables": reordered},   # same set: NCCL does not care for order
        {"host": "gpu03", "group": "h100", "variables": roce},
        {"host": "pcie01", "group": "pcie", "variables": tcp},
        {"host": "pcie02", "group": "pcie", "variables": tcp},
        {"host": "lab01", "group": None, "variables": roce},
    ]
    assert hca_consistency(hosts) == [
        "consistency group h100: 2 different NIC selections, collectives between these hosts would fall back or hang: "
        "NCCL_IB_HCA=mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_7:1 on gpu03; "
        "NCCL_IB_HCA=mlx5_0:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1 on gpu01, gpu02"]
    mixed = hca_consistency([{"host": "a", "group": "g", "variables": ib}, {"host": "b", "group": "g", "variables": tcp}])
    assert "TCP only (NCCL_IB_DISABLE=1) on b" in mixed[0]


def test_consistency_filter_reads_hostvars_and_one_group():
    ib = {"variables": nccl_config(_topology(HGX_TOPO, ibstat=IB_SOME_DOWN))["variables"]}
    roce = {"variables": nccl_config(_topology(HGX_TOPO, ibstat=ROCE_ALL_ACTIVE))["variables"]}
    hostvars = {
        "gpu01": {"__nccl_config": ib, "__nccl_group": "h100"},
        "gpu02": {"__nccl_config": roce, "__nccl_group": "h100"},
        "gpu03": {"__nccl_config": roce, "__nccl_group": "roce"},
        "gpu04": {"__nccl_group": "roce"},  # refused earlier: no configuration to compare
    }
    hosts = sorted(hostvars)
    assert nccl_hca_consistency(hosts, hostvars, group_var="__nccl_group", group="roce") == []
    problems = nccl_hca_consistency(hosts, hostvars, group_var="__nccl_group", group="h100")
    assert len(problems) == 1 and problems[0].startswith("consistency group h100: 2 different NIC selections")
    with pytest.raises(AnsibleFilterError, match="expected a list of host names"):
        nccl_hca_consistency("gpu01", hostvars)


def test_the_one_check_groups_hosts_by_gpufabric_peer_group():
    # Three HGX RoCE hosts of one peer group, the third with its rail 5 (mlx5_5) down in the capture: the group's
    # hosts would hand NCCL different NICs. The fabric map does not repeat this check; the nccl role runs this one.
    healthy = {"variables": nccl_config(_topology(HGX_TOPO, ibstat=ROCE_ALL_ACTIVE))["variables"]}
    down = {"variables": nccl_config(_topology(
        HGX_TOPO, ibstat="ibstat_ibv_devinfo/gpud-h100-ibstat-8x-cx7-roce-some-down.txt"))["variables"]}
    hostvars = {"h100-a": {"__nccl_config": healthy, "gpufabric_peer_group": "su1"},
                "h100-b": {"__nccl_config": healthy, "gpufabric_peer_group": "su1"},
                "h100-c": {"__nccl_config": down, "gpufabric_peer_group": "su1"},
                "h100-d": {"__nccl_config": down, "gpufabric_peer_group": "su2"}}
    [problem] = nccl_hca_consistency(sorted(hostvars), hostvars)
    assert problem.startswith("consistency group su1: 2 different NIC selections")
    assert "mlx5_4:1,mlx5_6:1,mlx5_7:1 on h100-c" in problem and "on h100-a, h100-b" in problem
    assert nccl_hca_consistency(sorted(hostvars), hostvars, group="su2") == []


# ------------------------------------------------------------------ the NCCL topology file


def test_topology_xml_places_gpus_and_nics_under_their_numa_nodes():
    # nvidia-smi --query-gpu and the NICs' sysfs PCI/NUMA files are not among the fixtures: written here in their
    # formats for the HGX board (GPU bus ids of an HGX H100 baseboard).
    bus = ["18", "2a", "3a", "5d", "9a", "ab", "ba", "db"]
    query = "".join("%d, NVIDIA H100 80GB HBM3, 00000000:%s:00.0\n" % (i, b.upper()) for i, b in enumerate(bus))
    sysfs = {}
    for i, b in enumerate(bus):
        nic_bus = "%02x" % (int(b, 16) + 1)
        sysfs["class/infiniband/mlx5_%d/device/uevent" % i] = "DRIVER=mlx5_core\nPCI_SLOT_NAME=0000:%s:00.0" % nic_bus
        sysfs["class/infiniband/mlx5_%d/device/numa_node" % i] = "0" if i < 4 else "1"
    topology = _topology(HGX_TOPO, ibstat=IB_SOME_DOWN, sysfs=sysfs, query=query)
    hca = nccl_config(topology)["hca"]
    text = nccl_topology_xml(topology, hca)
    document = xml.dom.minidom.parseString(text)
    cpus = document.getElementsByTagName("cpu")
    assert [cpu.getAttribute("numaid") for cpu in cpus] == ["0", "1"]
    # 0-47,96-143 as NCCL's 32-bit hex words, most significant first.
    assert cpus[0].getAttribute("affinity") == "0000ffff,ffffffff,00000000,0000ffff,ffffffff"
    node0_gpus = [gpu.getAttribute("dev") for gpu in cpus[0].getElementsByTagName("gpu")]
    node0_nets = [net.getAttribute("name") for net in cpus[0].getElementsByTagName("net")]
    node1_nets = [net.getAttribute("name") for net in cpus[1].getElementsByTagName("net")]
    assert node0_gpus == ["0", "1", "2", "3"]
    assert node0_nets == ["mlx5_0", "mlx5_3"] and node1_nets == ["mlx5_4", "mlx5_5", "mlx5_6"]
    assert cpus[0].getElementsByTagName("pci")[0].getAttribute("busid") == "0000:18:00.0"


def test_topology_xml_puts_grace_blackwell_gpus_under_their_grace_cpu():
    # The GB200 capture: each GPU's memory is a NUMA node of its own (GPU NUMA ID 2, 10, 18, 26) without CPUs, and
    # before its NUMA Affinity list was read the file was refused. The GPUs belong under the Grace CPU nvidia-smi
    # names first. The query output (bus ids of a GB200 compute tray) and the NICs' sysfs are written here.
    bus = ["0008", "0009", "0018", "0019"]
    query = "".join("%d, NVIDIA GB200, 0000%s:01:00.0\n" % (i, b) for i, b in enumerate(bus))
    sysfs = {}
    for i in range(8):
        sysfs["class/infiniband/mlx5_%d/device/uevent" % i] = "DRIVER=mlx5_core\nPCI_SLOT_NAME=%04x:03:00.0" % i
        sysfs["class/infiniband/mlx5_%d/device/numa_node" % i] = "0" if i < 4 else "1"
    topology = _topology("nvidia_smi_topo/gb200-4gpu-8nic-numa-lists.txt", sysfs=sysfs, query=query)
    document = xml.dom.minidom.parseString(nccl_topology_xml(topology, ["mlx5_0:1", "mlx5_4:1"]))
    cpus = document.getElementsByTagName("cpu")
    assert [cpu.getAttribute("numaid") for cpu in cpus] == ["0", "1"]
    assert [[gpu.getAttribute("dev") for gpu in cpu.getElementsByTagName("gpu")] for cpu in cpus] == [["0", "1"], ["2", "3"]]
    assert [[net.getAttribute("name") for net in cpu.getElementsByTagName("net")] for cpu in cpus] == [["mlx5_0"], ["mlx5_4"]]
    # CPUs 72-143 as NCCL's 32-bit hex words, most significant first.
    assert cpus[1].getAttribute("affinity") == "0000ffff,ffffffff,ffffff00,00000000,00000000"


def test_topology_xml_refuses_facts_without_pci_addresses():
    topology = _topology(HGX_TOPO, ibstat=IB_SOME_DOWN)
    with pytest.raises(NcclConfigError, match=r"lack them for GPU0 \(PCI bus id None, NUMA node 0\)"):
        topology_xml(topology, ["mlx5_0:1"])
    with pytest.raises(AnsibleFilterError, match="nccl_topology_xml: an NCCL topology file needs"):
        nccl_topology_xml(topology, ["mlx5_0:1"])


# ------------------------------------------------------------------ every capture pairing


@pytest.mark.parametrize("topo", fixture_names("nvidia_smi_topo"))
@pytest.mark.parametrize("rdma", fixture_names("ibstat_ibv_devinfo"))
def test_any_pair_of_captures_gives_a_usable_answer(topo, rdma):
    # Whatever the capture, the result names only ACTIVE ports the facts know, in exact-match syntax, or says why not.
    key = "ibstat" if "ibstat" in rdma else "ibv_devinfo"
    topology = build_topology({"nvidia_smi_topo": read_fixture("nvidia_smi_topo/" + topo),
                               key: read_fixture("ibstat_ibv_devinfo/" + rdma)})
    result = nccl_config(topology, options={"default_interface": "eth0"})
    active = {"%s:%s" % (device["name"], port["port"]) for device in topology["rdma"]["devices"]
              for port in device["ports"] if port["state"] == "ACTIVE"}
    hca = result["variables"].get("NCCL_IB_HCA")
    if hca:
        assert hca.startswith("=") and set(hca[1:].split(",")) <= active and result["problems"] == []
    elif topology["rdma"]["available"]:
        assert result["problems"] and "NCCL_IB_HCA" in result["problems"][0]
    else:
        assert result["variables"]["NCCL_IB_DISABLE"] == "1"
    assert result["variables"]["NCCL_SOCKET_IFNAME"] == "=eth0"
