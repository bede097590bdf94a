"""The sampler on real captures: a sysfs tree (procfs's mlx5_0 and PCI devices, a netdev laid out as the kernel
does), /proc/net/bonding, and the lab's lldpctl, vtysh and swanctl outputs answering its commands (a fake only at
the process boundary: which command ran, what it printed)."""

import math

import pytest
from fixture_data import read_fixture
from prometheus_client.parser import text_string_to_metric_families
from sysfs_tree import materialize

from ansible_collections.gpufabric.core.plugins.module_utils.health import sample as health_sample


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def netdev(root, name, operstate, speed, carrier_changes):
    base = root / "class" / "net" / name
    base.mkdir(parents=True, exist_ok=True)
    (base / "operstate").write_text(operstate + "\n")
    (base / "carrier").write_text(("1" if operstate == "up" else "0") + "\n")
    (base / "speed").write_text("%d\n" % speed)
    (base / "carrier_changes").write_text("%d\n" % carrier_changes)


@pytest.fixture
def host(tmp_path):
    sys_root = tmp_path / "sys"
    materialize("sysfs/procfs-mlx5_0-infiniband.tsv", sys_root)
    materialize("sysfs/procfs-pci-links.tsv", sys_root)
    netdev(sys_root, "eth1", "up", 10000, 2)
    netdev(sys_root, "eth2", "up", 10000, 2)
    bonding = tmp_path / "proc" / "net" / "bonding"
    bonding.mkdir(parents=True)
    (bonding / "bond0").write_text(read_fixture("bonding/cx6dx-2x100g-802.3ad-lacp-partner-ok.txt"))
    outputs = {
        ("lldpcli",): read_fixture("lldp/lab-json0-node1.txt"),
        ("vtysh", "show bgp summary json"): read_fixture("frr/lab-bgp-summary-leaf2-cut.json"),
        ("vtysh", "show bfd peers json"): read_fixture("frr/lab-bfd-peers-leaf2-cut.json"),
        ("swanctl",): read_fixture("strongswan/lab-debian12-list-sas-node1-mixed-mesh.txt"),
    }
    calls = []

    def run(argv, timeout=None):
        calls.append(argv)
        key = (argv[0], argv[2]) if argv[0] == "vtysh" else (argv[0],)
        if key not in outputs:
            raise OSError(2, "No such file or directory: %r" % argv[0])
        return 0, outputs[key]

    return {"sys": str(sys_root), "proc": str(tmp_path / "proc"), "run": run, "calls": calls, "sys_root": sys_root}


def expected_state(**extra):
    state = {
        "version": 1, "host": "node1", "command_interval": 10,
        "rails": [
            {"rail": "rail0", "netdev": "eth1", "link_layer": "Ethernet", "expected_rate_gbps": 10, "leaf": "leaf-a",
             "leaf_port": "swp1"},
            {"rail": "rail1", "netdev": "eth2", "link_layer": "Ethernet", "expected_rate_gbps": 10, "leaf": "leaf-b",
             "leaf_port": "swp1"},
            {"rail": "rail2", "device": "mlx5_0", "port": 1, "link_layer": "InfiniBand", "expected_rate_gbps": 100},
        ],
        "pcie": [{"device": "GPU0", "pci": "0000:01:00.0", "kind": "gpu", "rail": "rail0"}],
    }
    state.update(extra)
    return state


def families(text):
    return {family.name: family for family in text_string_to_metric_families(text)}


def values(family, **match):
    return [(sample.labels, sample.value) for sample in family.samples
            if all(sample.labels.get(key) == value for key, value in match.items())]


def test_ports_rates_and_pcie_against_what_was_expected(host):
    sampler = health_sample.Sampler(expected_state(), run=host["run"], clock=Clock(), sys_root=host["sys"], proc_root=host["proc"])
    found = families(sampler.sample().render())
    up = {sample.labels["rail"]: sample.value for sample in found["gpufabric_port_up"].samples}
    assert up == {"rail0": 1.0, "rail1": 1.0, "rail2": 1.0}
    rate = {s.labels["rail"]: s.value for s in found["gpufabric_port_rate_bytes_per_second"].samples}
    expected = {s.labels["rail"]: s.value for s in found["gpufabric_port_expected_rate_bytes_per_second"].samples}
    assert rate["rail2"] == 25e9 / 8 and expected["rail2"] == 100e9 / 8  # an EDR 1X link where 4X was expected
    assert rate["rail0"] == expected["rail0"] == 10e9 / 8
    [(labels, width)] = values(found["gpufabric_pcie_link_width"])
    assert labels == {"host": "node1", "device": "GPU0", "pci": "0000:01:00.0", "kind": "gpu", "rail": "rail0"} and width == 4
    assert values(found["gpufabric_pcie_link_expected_width"])[0][1] == 4
    assert values(found["gpufabric_pcie_link_speed_transfers_per_second"])[0][1] == 8e9


def test_a_port_going_down_counts_down_seconds_and_state_changes(host):
    clock = Clock()
    sampler = health_sample.Sampler(expected_state(), run=host["run"], clock=clock, sys_root=host["sys"], proc_root=host["proc"])
    sampler.sample()
    netdev(host["sys_root"], "eth1", "down", -1, 3)
    clock.now += 5
    sampler.sample()
    clock.now += 5
    found = families(sampler.sample().render())
    assert values(found["gpufabric_port_up"], rail="rail0")[0][1] == 0.0
    assert math.isnan(values(found["gpufabric_port_rate_bytes_per_second"], rail="rail0")[0][1])
    assert values(found["gpufabric_port_down_seconds"], rail="rail0")[0][1] == 5.0
    assert values(found["gpufabric_port_state_changes"], rail="rail0")[0][1] == 3.0  # the kernel's carrier_changes


def test_cabling_against_the_lab_capture(host):
    # The lab capture: node1's eth1 reaches leaf-a, eth2 leaf-b. Expect rail1 on leaf-a instead: a mismatch, named.
    state = expected_state()
    state["rails"][1]["leaf"] = "leaf-a"
    sampler = health_sample.Sampler(state, run=host["run"], clock=Clock(), sys_root=host["sys"], proc_root=host["proc"])
    found = families(sampler.sample().render())
    [(labels0, ok0)] = values(found["gpufabric_lldp_neighbour_ok"], rail="rail0")
    [(labels1, ok1)] = values(found["gpufabric_lldp_neighbour_ok"], rail="rail1")
    assert ok0 == 1.0 and labels0["seen_leaf"] == "leaf-a"
    assert ok1 == 0.0 and (labels1["leaf"], labels1["seen_leaf"]) == ("leaf-a", "leaf-b")
    assert [count for _labels, count in values(found["gpufabric_lldp_neighbours"])] == [1.0, 1.0]


def test_cables_swapped_a_moment_ago_are_seen_although_lldpd_still_lists_the_old_neighbours(host):
    # The lab capture four seconds after node1's cables were crossed: each port lists its old neighbour (until its
    # TTL, 120 s) first and the new one second. The newer is the cable: both rails are miscabled now, not in 2 min.
    def run(argv, timeout=None):
        return 0, read_fixture("lldp/lab-json0-node1-recabled.txt")

    sampler = health_sample.Sampler(expected_state(), run=run, clock=Clock(), sys_root=host["sys"], proc_root=host["proc"])
    found = families(sampler.sample().render())
    seen = {labels["rail"]: (labels["seen_leaf"], labels["seen_port"], ok)
            for labels, ok in values(found["gpufabric_lldp_neighbour_ok"])}
    assert seen == {"rail0": ("leaf-b", "swp1", 0.0), "rail1": ("leaf-a", "swp1", 0.0)}
    # Both neighbours are counted: a port that keeps two beyond a TTL warns (GpufabricLldpExtraNeighbour).
    assert {labels["rail"]: count for labels, count in values(found["gpufabric_lldp_neighbours"])} == {"rail0": 2.0, "rail1": 2.0}


def test_lldp_that_cannot_be_asked_is_unknown_not_miscabled(host):
    sampler = health_sample.Sampler(expected_state(), run=lambda argv, timeout=None: (1, ""), clock=Clock(), sys_root=host["sys"], proc_root=host["proc"])
    found = families(sampler.sample().render())
    assert all(math.isnan(value) for _labels, value in values(found["gpufabric_lldp_neighbour_ok"]))
    assert all(math.isnan(value) for _labels, value in values(found["gpufabric_lldp_neighbours"]))
    assert values(found["gpufabric_health_source_up"], source="lldp")[0][1] == 0.0


def test_bond_bgp_bfd_and_ipsec_against_the_expected_peers(host):
    state = expected_state(
        bonds=[{"bond": "bond0", "members": ["enp1s0f0", "enp1s0f1", "missing0"]}],
        bgp_peers=[{"peer": "10.240.201.2", "leaf": "leaf1"}, {"peer": "eth1", "interface": "eth1", "leaf": "leaf2"}],
        bfd_peers=[{"peer": "10.240.201.2", "interface": "eth0", "leaf": "leaf1"}, {"peer": "eth1", "interface": "eth1", "leaf": "leaf2"}],
        ipsec=[{"peer": "ipsec-node4", "ike": "gf-ipsec-node4", "child": "gf-ipsec-node4"},
               {"peer": "ipsec-node9", "ike": "gf-ipsec-node9", "child": "gf-ipsec-node9"}],
    )
    sampler = health_sample.Sampler(state, run=host["run"], clock=Clock(), sys_root=host["sys"], proc_root=host["proc"])
    found = families(sampler.sample().render())
    bond = {s.labels["netdev"]: s.value for s in found["gpufabric_bond_member_in_sync"].samples}
    assert bond["missing0"] == 0.0 and sum(bond.values()) == 2.0
    bgp = {s.labels["leaf"]: s.value for s in found["gpufabric_bgp_peer_established"].samples}
    bfd = {s.labels["leaf"]: s.value for s in found["gpufabric_bfd_peer_up"].samples}
    assert bgp == {"leaf1": 1.0, "leaf2": 0.0} and bfd == {"leaf1": 1.0, "leaf2": 0.0}  # the capture: leaf2 cut
    sas = {s.labels["peer"]: s.value for s in found["gpufabric_ipsec_child_sa_installed"].samples}
    assert sas == {"ipsec-node4": 1.0, "ipsec-node9": 0.0}


def test_commands_run_once_per_command_interval(host):
    clock = Clock()
    sampler = health_sample.Sampler(expected_state(ipsec=[{"peer": "p", "ike": "p", "child": "p"}]), run=host["run"],
                                    clock=clock, sys_root=host["sys"], proc_root=host["proc"])
    for _sample in range(3):
        sampler.sample()
        clock.now += 3
    assert [call[0] for call in host["calls"]] == ["lldpcli", "swanctl"]
    clock.now += 10
    sampler.sample()
    assert len(host["calls"]) == 4


def test_the_bond_members_in_sync_of_a_churned_capture():
    bond = health_sample.bonding_parser.parse_bonding(read_fixture("bonding/magpie-802.3ad-churned-mixed-speed-misconfig.txt"))
    verdicts = {slave["name"]: health_sample.member_in_sync(bond, slave["name"]) for slave in bond["slaves"]}
    assert any(not ok for ok, _why in verdicts.values()), verdicts


# -- RoCE QoS: mlnx_qos answering with the real captures in tests/fixtures/mlnx_qos ------------------------------------

def bind_driver(host, netdev, driver):
    """The netdev's device bound to driver, as sysfs links it: class/net/NETDEV/device/driver -> bus/pci/drivers/DRIVER."""
    target = host["sys_root"] / "bus" / "pci" / "drivers" / driver
    target.mkdir(parents=True, exist_ok=True)
    device = host["sys_root"] / "class" / "net" / netdev / "device"
    device.mkdir(exist_ok=True)
    (device / "driver").symlink_to(target)


@pytest.fixture
def mlx5_host(host):
    bind_driver(host, "eth1", "mlx5_core")
    return host


def roce_qos_state(trust="dscp", pfc_priority=3):
    state = expected_state()
    state["rails"][0]["roce"] = {"trust": trust, "pfc_priority": pfc_priority}
    return state


def answering_mlnx_qos(host, answer):
    """The host's commands, with mlnx_qos printing answer (a fixture) or exiting as answer says."""
    def run(argv, timeout=None):
        if argv[0] == "mlnx_qos":
            host["calls"].append(argv)
            return answer if isinstance(answer, tuple) else (0, read_fixture("mlnx_qos/" + answer))
        return host["run"](argv)
    return run


def qos_sample(host, state, run, clock=None):
    sampler = health_sample.Sampler(state, run=run, clock=clock or Clock(), sys_root=host["sys"], proc_root=host["proc"])
    return sampler, families(sampler.sample().render())


def pfc_by_priority(found):
    return {(labels["priority"], labels["lossless"]): value for labels, value in values(found["gpufabric_roce_pfc_enabled"])}


def test_trust_and_pfc_as_configured_on_a_firmware_dcbx_nic(mlx5_host):
    _sampler, found = qos_sample(mlx5_host, roce_qos_state(), answering_mlnx_qos(mlx5_host, "firmware-dscp-pfc3-ets.txt"))
    assert ["mlnx_qos", "-i", "eth1"] in mlx5_host["calls"]
    [(labels, ok)] = values(found["gpufabric_roce_trust_ok"])
    assert (labels["rail"], labels["netdev"], labels["trust"], labels["seen_trust"], ok) == ("rail0", "eth1", "dscp", "dscp", 1.0)
    pfc = pfc_by_priority(found)
    assert pfc == {(str(priority), "true" if priority == 3 else "false"): 1.0 if priority == 3 else 0.0 for priority in range(8)}
    assert values(found["gpufabric_health_source_up"], source="mlnx_qos")[0][1] == 1.0


def test_trust_pcp_and_pfc_off_where_dscp_and_lossless_3_are_expected(mlx5_host):
    _sampler, found = qos_sample(mlx5_host, roce_qos_state(), answering_mlnx_qos(mlx5_host, "os-pcp-pfc-off.txt"))
    [(labels, ok)] = values(found["gpufabric_roce_trust_ok"])
    assert (labels["trust"], labels["seen_trust"], ok) == ("dscp", "pcp", 0.0)
    assert pfc_by_priority(found)[("3", "true")] == 0.0
    assert values(found["gpufabric_health_source_up"], source="mlnx_qos")[0][1] == 1.0  # read: a fault, not blindness


def test_pcp_trust_expected_and_found_with_pfc_on_3(mlx5_host):
    _sampler, found = qos_sample(mlx5_host, roce_qos_state(trust="pcp"), answering_mlnx_qos(mlx5_host, "os-pcp-pfc3.txt"))
    assert values(found["gpufabric_roce_trust_ok"])[0][1] == 1.0
    assert pfc_by_priority(found)[("3", "true")] == 1.0


def test_without_mlnx_qos_installed_trust_and_pfc_are_unknown_and_no_source_is_down(mlx5_host):
    """An mlx5 host on inbox drivers: mlnx_qos is not there, so trust and PFC are NaN and GpufabricCannotSee has no
    series to fire on."""
    _sampler, found = qos_sample(mlx5_host, roce_qos_state(), mlx5_host["run"])
    [(labels, ok)] = values(found["gpufabric_roce_trust_ok"])
    assert math.isnan(ok) and labels["seen_trust"] == ""
    assert len(pfc_by_priority(found)) == 8 and all(math.isnan(value) for value in pfc_by_priority(found).values())
    assert values(found["gpufabric_health_source_up"], source="mlnx_qos") == []


@pytest.mark.parametrize("answer", [(1, ""), (0, "Netlink error: Operation not supported\n")])
def test_mlnx_qos_installed_but_failing_is_unknown_and_its_source_down(mlx5_host, answer):
    _sampler, found = qos_sample(mlx5_host, roce_qos_state(), answering_mlnx_qos(mlx5_host, answer))
    assert math.isnan(values(found["gpufabric_roce_trust_ok"])[0][1])
    assert values(found["gpufabric_health_source_up"], source="mlnx_qos")[0][1] == 0.0


@pytest.mark.parametrize("driver", ["bnxt_en", None])  # another vendor's RoCE NIC; a bond or veth (no device)
def test_a_netdev_not_of_mlx5_is_not_asked(host, driver):
    if driver:
        bind_driver(host, "eth1", driver)
    _sampler, found = qos_sample(host, roce_qos_state(), answering_mlnx_qos(host, "os-pcp-pfc3.txt"))
    assert not [call for call in host["calls"] if call[0] == "mlnx_qos"]
    assert math.isnan(values(found["gpufabric_roce_trust_ok"])[0][1])
    assert values(found["gpufabric_health_source_up"], source="mlnx_qos") == []


def test_no_trust_or_pfc_expected_runs_no_mlnx_qos(mlx5_host):
    _sampler, found = qos_sample(mlx5_host, roce_qos_state(trust="", pfc_priority=None), answering_mlnx_qos(mlx5_host, "os-pcp-pfc3.txt"))
    assert not [call for call in mlx5_host["calls"] if call[0] == "mlnx_qos"]
    assert "gpufabric_roce_trust_ok" not in found and "gpufabric_roce_pfc_enabled" not in found  # no samples, no family


def test_mlnx_qos_runs_once_per_qos_interval_while_ethtool_runs_every_command_interval(mlx5_host):
    clock = Clock()
    state = dict(roce_qos_state(trust="pcp"), qos_interval=60)
    sampler, _found = qos_sample(mlx5_host, state, answering_mlnx_qos(mlx5_host, "os-pcp-pfc3.txt"), clock)

    def runs(program):
        return len([call for call in mlx5_host["calls"] if call[0] == program])
    ethtool_before = runs("ethtool")
    for _sample in range(5):
        clock.now += 10
        found = families(sampler.sample().render())
    assert (runs("mlnx_qos"), runs("ethtool") - ethtool_before) == (1, 5)
    assert values(found["gpufabric_roce_trust_ok"])[0][1] == 1.0  # the last answer kept in between
    clock.now += 10
    sampler.sample()
    assert runs("mlnx_qos") == 2


def test_without_a_qos_interval_mlnx_qos_runs_every_command_interval(mlx5_host):
    clock = Clock()
    sampler, _found = qos_sample(mlx5_host, roce_qos_state(), answering_mlnx_qos(mlx5_host, "os-pcp-pfc3.txt"), clock)
    clock.now += 10
    sampler.sample()
    assert len([call for call in mlx5_host["calls"] if call[0] == "mlnx_qos"]) == 2
