"""The sampler's readers on real captures: procfs's sysfs trees (an mlx5 HCA, a PCI device behind a root port),
an H200's PCIe link captured on a GPU machine lent to the project, lspci -vv of a downgraded root port, ethtool -S
of an mlx5 NIC sending pause frames."""

import pytest
import sysfs_tree
from fixture_data import read_fixture
from sysfs_tree import materialize

from ansible_collections.gpufabric.core.plugins.module_utils.health import readers as hr


@pytest.fixture
def sys_root(tmp_path):
    materialize("sysfs/procfs-mlx5_0-infiniband.tsv", tmp_path)
    materialize("sysfs/procfs-pci-links.tsv", tmp_path)
    return tmp_path


def test_ib_port_state_rate_and_counters(sys_root):
    port = hr.read_ib_port(str(sys_root), "mlx5_0", 1)
    assert (port["exists"], port["state"], port["phys_state"], port["rate_gbps"], port["link_layer"]) == (
        True, "ACTIVE", "ACTIVE", 25.0, "InfiniBand")
    assert port["counters"]["port_xmit_data"] == 2880761508848
    assert port["counters"]["link_downed"] == 0
    assert port["hw_counters"]["out_of_sequence"] == 1 and port["hw_counters"]["local_ack_timeout_err"] == 131
    assert "np_cnp_sent" not in port["hw_counters"]  # this ConnectX-4 firmware has none: unknown, not zero


def test_an_absent_ib_port_is_unknown(sys_root):
    port = hr.read_ib_port(str(sys_root), "mlx5_0", 2)
    assert port["exists"] is False and port["state"] is None and port["counters"] == {}


@pytest.mark.parametrize("text, expected", [
    ("4: ACTIVE", (4, "ACTIVE")), ("1: DOWN", (1, "DOWN")), ("5: LinkUp", (5, "LinkUp")), (None, (None, None)), ("", (None, None))])
def test_port_states(text, expected):
    assert hr.parse_port_state(text) == expected


@pytest.mark.parametrize("text, expected", [
    ("25 Gb/sec (1X EDR)", 25.0), ("400 Gb/sec (4X NDR)", 400.0), ("2.5 Gb/sec (1X SDR)", 2.5), ("", None), (None, None)])
def test_ib_rates(text, expected):
    assert hr.parse_ib_rate_gbps(text) == expected


def test_pcie_link_expected_is_the_lower_of_the_device_and_its_upstream_port(sys_root):
    gpu = hr.read_pcie_link(str(sys_root), "0000:01:00.0")
    assert gpu["upstream"] == "0000:00:02.1"
    assert (gpu["current_speed_gts"], gpu["current_width"]) == (8.0, 4)
    # The device can do x4, its root port x8: the link is expected at x4, and it is there.
    assert (gpu["expected_speed_gts"], gpu["expected_width"]) == (8.0, 4)


def test_a_device_on_a_root_bus_has_no_upstream_port(sys_root):
    link = hr.read_pcie_link(str(sys_root), "0000:a2:00.0")
    assert link["upstream"] is None and (link["expected_speed_gts"], link["expected_width"]) == (16.0, 8)


def test_an_absent_pci_device_is_unknown(sys_root):
    link = hr.read_pcie_link(str(sys_root), "0000:ff:00.0")
    assert link["exists"] is False and link["expected_width"] is None


def test_pcie_link_of_a_real_h200_on_a_vms_root_bus(tmp_path):
    # scripts/gpu-capture.sh recorded the attributes of readlink -f /sys/bus/pci/devices/0000:00:06.0, so the
    # kernel's link to that directory is known; the capture holds no symlink lines, so it is made here.
    materialize("sysfs/device-h200-vm-gpu-pci-link.tsv", tmp_path)
    (tmp_path / "bus" / "pci" / "devices").mkdir(parents=True)
    (tmp_path / "bus" / "pci" / "devices" / "0000:00:06.0").symlink_to("../../../devices/pci0000:00/0000:00:06.0")
    link = hr.read_pcie_link(str(tmp_path), "0000:00:06.0")
    # Gen5 x16 trained at Gen5 x16; the parent is the root bus pci0000:00, no port, so expected is the GPU's own.
    assert link == {"exists": True, "current_speed_gts": 32.0, "current_width": 16, "max_speed_gts": 32.0,
                    "max_width": 16, "upstream": None, "expected_speed_gts": 32.0, "expected_width": 16}


@pytest.mark.parametrize("line", ["/etc/x\t1", "devices/../../x\t1"])
def test_a_capture_line_outside_sys_is_refused(tmp_path, monkeypatch, line):
    monkeypatch.setattr(sysfs_tree, "read_fixture", lambda relpath: line + "\n")
    with pytest.raises(ValueError, match="is not a path under /sys"):
        materialize("sysfs/x.tsv", tmp_path)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("text, expected", [
    ("16.0 GT/s PCIe", 16.0), ("2.5 GT/s PCIe", 2.5), ("16GT/s", 16.0), ("Unknown", None), (None, None)])
def test_gts(text, expected):
    assert hr.parse_gts(text) == expected


def test_lspci_downgraded_root_port():
    links = hr.parse_lspci_links(read_fixture("lspci/rocm-x570-root-port-downgraded.txt"))
    assert links == {"0000:00:03.1": {"cap_speed_gts": 16.0, "cap_width": 16, "sta_speed_gts": 2.5, "sta_width": 8,
                                      "downgraded": True}}  # 00:03.0 has no PCI Express capability


def test_ethtool_stats_of_mlx5_pause_and_out_of_buffer():
    stats = hr.parse_ethtool_stats(read_fixture("ethtool/mlx5-kernel6.5-xdp-pause-out-of-buffer.txt"))
    assert stats["tx_pause_ctrl_phy"] == 44414017 and stats["rx_discards_phy"] == 441063206498
    assert "NIC statistics" not in " ".join(stats)
    found = hr.pause_and_congestion(stats)
    # The poster left zero counters out: rx_pause_ctrl_phy is unknown here, not 0.
    assert found == {"pause": {("tx", "global"): 44414017}, "out_of_buffer": 534918379}


def test_ethtool_per_priority_pause_and_per_queue_lines():
    text = "NIC statistics:\n     rx_prio3_pause: 142\n     tx_prio3_pause: 87\n     [0]: rx_bytes: 5\n     rx_pause_ctrl_phy: 0\n"
    found = hr.pause_and_congestion(hr.parse_ethtool_stats(text))
    assert found["pause"] == {("rx", "3"): 142, ("tx", "3"): 87, ("rx", "global"): 0}
    assert found["out_of_buffer"] is None


def test_netdev_of_this_machines_loopback():
    # A real sysfs: the loopback device exists everywhere; its speed is unknown (the kernel refuses to say).
    found = hr.read_netdev("/sys", "lo")
    assert found["exists"] is True and found["speed_mbps"] is None
    assert hr.read_netdev("/sys", "no-such-netdev")["exists"] is False


def test_roce_ecn_layout(tmp_path):
    # mlx5's layout (Documentation/networking/device_drivers/ethernet/mellanox/mlx5): one file per priority.
    for role, value in (("roce_np", "1"), ("roce_rp", "0")):
        directory = tmp_path / "class" / "net" / "eth2" / "ecn" / role / "enable"
        directory.mkdir(parents=True)
        (directory / "3").write_text(value + "\n")
    assert hr.read_roce_ecn(str(tmp_path), "eth2", 3) == (True, False)
    assert hr.read_roce_ecn(str(tmp_path), "eth2", 4) == (None, None)
