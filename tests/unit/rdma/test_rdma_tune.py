"""The boot-time tuning script the rdma role installs (roles/rdma/files/gpufabric_rdma_tune.py).

The lab has no RDMA NIC, so the host side is a sysfs/procfs tree laid out like the kernel's (class symlinks to
PCI device directories, msi_irqs, numa_node, local_cpulist, /proc/irq/N/smp_affinity_list). Its NUMA layout
and NIC names come from a real server: the H800 box of tests/fixtures/nvidia_smi_topo (two sockets,
node 0 = CPUs 0-55,112-167, node 1 = 56-111,168-223, eight mlx5 NICs, one per GPU).
"""

import importlib.util
import json
import subprocess
from pathlib import Path

import pytest

from ansible_collections.gpufabric.core.plugins.module_utils.parsers.nvidia_smi_topo import parse_nvidia_smi_topo
from fixture_data import read_fixture
from grace_sysfs import write_grace_nodes

SCRIPT = Path(__file__).resolve().parents[3] / "roles" / "rdma" / "files" / "gpufabric_rdma_tune.py"
_spec = importlib.util.spec_from_file_location("gpufabric_rdma_tune", SCRIPT)
tune = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tune)

H800 = "nvidia_smi_topo/sglang-28424-h800-nv8-9nic-bond.txt"
IRQS_PER_NIC = 12


def h800_layout():
    """{nic name: (numa node, cpulist)} of the real H800 server: a NIC sits on its nearest GPU's node."""
    topo = parse_nvidia_smi_topo(read_fixture(H800))
    gpu_numa = {gpu["name"]: (gpu["numa_affinity"], gpu["cpu_affinity"]) for gpu in topo["gpus"]}
    return {nics[0]: gpu_numa[gpu] for gpu, nics in topo["nearest_nics"].items()}


class FakeHost:
    """A sysfs/procfs tree shaped like the kernel's."""

    def __init__(self, root, online="0-223"):
        self.sys = root / "sys"
        self.proc = root / "proc"
        (self.sys / "devices" / "system" / "cpu").mkdir(parents=True)
        (self.sys / "devices" / "system" / "cpu" / "online").write_text(online + "\n")
        (self.sys / "class" / "infiniband").mkdir(parents=True)
        (self.sys / "class" / "net").mkdir(parents=True)
        self.next_irq = 100
        self.next_bus = 0x18

    def add_nic(self, name, numa_node, cpulist, link_layer="InfiniBand", netdev=None, irqs=IRQS_PER_NIC, ports=1):
        address = "0000:%02x:00.0" % self.next_bus
        self.next_bus += 1
        pci = self.sys / "devices" / "pci0000:00" / address
        (pci / "msi_irqs").mkdir(parents=True)
        (pci / "numa_node").write_text("%d\n" % numa_node)
        (pci / "local_cpulist").write_text(cpulist + "\n")
        numbers = list(range(self.next_irq, self.next_irq + irqs))
        self.next_irq += irqs
        for irq in numbers:
            (pci / "msi_irqs" / str(irq)).write_text("msix\n")
            (self.proc / "irq" / str(irq)).mkdir(parents=True)
            (self.proc / "irq" / str(irq) / "smp_affinity_list").write_text("0-223\n")
        ib = self.sys / "class" / "infiniband" / name
        ib.mkdir()
        (ib / "device").symlink_to(pci)
        for port in range(1, ports + 1):
            (ib / "ports" / str(port)).mkdir(parents=True)
            (ib / "ports" / str(port) / "link_layer").write_text(link_layer + "\n")
        if netdev:
            (pci / "net" / netdev).mkdir(parents=True)
            (self.sys / "class" / "net" / netdev).mkdir()
            (self.sys / "class" / "net" / netdev / "device").symlink_to(pci)
        return address, numbers

    def affinity(self, irq):
        return (self.proc / "irq" / str(irq) / "smp_affinity_list").read_text().strip()

    def host(self):
        return tune.Host(str(self.sys), str(self.proc))


def config(**overrides):
    base = {"devices": [], "wait_seconds": 0, "irq_affinity": {"exclude_cpus": ""},
            "roce": {"trust": "dscp", "tos": 106, "mode": "RoCE v2", "traffic_class": 106},
            "pcie_relaxed_ordering": "keep", "mlxconfig": {}}
    base.update(overrides)
    return tune.validate_config(base)


@pytest.fixture
def h800(tmp_path):
    fake = FakeHost(tmp_path)
    irqs = {}
    for name, (numa, cpulist) in sorted(h800_layout().items()):
        irqs[name] = fake.add_nic(name, numa, cpulist)[1]
    return fake, irqs


# ------------------------------------------------------------------ CPU lists


@pytest.mark.parametrize("name", ["sglang-28424-h800-nv8-9nic-bond.txt", "sglang-30401-hgx-h100-8gpu-8nic.txt",
                                  "asus-esc8000a-e12-4x-rtx6000ada-4nic.txt", "puget-wrx90-2gpu-2nic-single-numa.txt"])
def test_cpulists_of_real_servers_round_trip(name):
    topo = parse_nvidia_smi_topo(read_fixture("nvidia_smi_topo/" + name))
    lists = {gpu["cpu_affinity"] for gpu in topo["gpus"]}
    for text in lists:
        cpus = tune.parse_cpulist(text)
        assert tune.format_cpulist(cpus) == text
    # The nodes of one server do not overlap.
    expanded = [set(tune.parse_cpulist(text)) for text in lists]
    assert sum(len(s) for s in expanded) == len(set().union(*expanded))


def test_cpulist_values():
    assert tune.parse_cpulist("0-55,112-167")[:3] == [0, 1, 2]
    assert len(tune.parse_cpulist("0-55,112-167")) == 112
    assert tune.parse_cpulist("") == []
    assert tune.parse_cpulist(" 7 ") == [7]
    for bad in ("0-", "a", "5-3", "1,,2"):
        with pytest.raises(tune.TuneError):
            tune.parse_cpulist(bad)


# ------------------------------------------------------------------ IRQ affinity


def test_irqs_pinned_to_numa_local_cpus(h800):
    fake, irqs = h800
    layout = h800_layout()
    assert tune.action_irq_affinity(fake.host(), config()) == 0
    for name, numbers in irqs.items():
        local = set(tune.parse_cpulist(layout[name][1]))
        pinned = [int(fake.affinity(irq)) for irq in numbers]
        assert set(pinned) <= local, name
        # One IRQ per CPU while the node has CPUs to spare.
        assert len(set(pinned)) == len(numbers)


def test_grace_blackwell_nics_irqs_stay_on_their_grace_socket(tmp_path):
    # The GB200 host: Grace 0 = CPUs 0-71 (node 0), Grace 1 = 72-143 (node 1), and 32 NUMA nodes without CPUs
    # (GPU memory). NICs sit on a Grace node; the kernel's local_cpulist is that socket's CPUs.
    fake = FakeHost(tmp_path, online="0-143")
    nodes = write_grace_nodes(fake.sys)
    irqs = {}
    for index in range(4):
        socket = index // 2
        irqs[socket] = irqs.get(socket, []) + fake.add_nic("mlx5_%d" % index, socket, nodes[socket][0])[1]
    assert tune.action_irq_affinity(fake.host(), config()) == 0
    for socket, numbers in irqs.items():
        pinned = [int(fake.affinity(irq)) for irq in numbers]
        assert set(pinned) <= set(tune.parse_cpulist(nodes[socket][0])), socket
        assert len(set(pinned)) == len(pinned)


def test_device_on_a_node_without_cpus_takes_the_nearest_node_with_cpus(tmp_path, capsys):
    # A device whose sysfs numa_node is one of the GB200 host's GPU memory nodes (18: GPU2's) has an empty
    # local_cpulist. Instead of spreading its IRQs over every online CPU, they go to Grace 1, the nearest node
    # with CPUs. No NIC was seen reporting such a node: this is the rule for when one does.
    fake = FakeHost(tmp_path, online="0-143")
    write_grace_nodes(fake.sys)
    _address, numbers = fake.add_nic("mlx5_0", 18, "", irqs=4)
    assert tune.action_irq_affinity(fake.host(), config()) == 0
    assert [fake.affinity(irq) for irq in numbers] == ["72", "73", "74", "75"]
    out = capsys.readouterr().out
    assert "mlx5_0: NUMA node 18 has no CPUs; node 1 is the nearest that has" in out
    assert "mlx5_0: NUMA node 1, 4 IRQs over CPUs 72-143" in out


def test_nics_of_one_node_share_the_rotation(h800):
    fake, irqs = h800
    tune.action_irq_affinity(fake.host(), config())
    by_node = {}
    for name, (numa, _cpulist) in h800_layout().items():
        by_node.setdefault(numa, []).extend(int(fake.affinity(irq)) for irq in irqs[name])
    # Four NICs x 12 IRQs on each 112-CPU node: 48 distinct CPUs, no stacking.
    for numa, cpus in by_node.items():
        assert len(cpus) == 4 * IRQS_PER_NIC
        assert len(set(cpus)) == len(cpus), numa


def test_excluded_cpus_never_get_irqs(h800):
    fake, irqs = h800
    tune.action_irq_affinity(fake.host(), config(irq_affinity={"exclude_cpus": "0-3,56-59"}))
    pinned = {int(fake.affinity(irq)) for numbers in irqs.values() for irq in numbers}
    assert not pinned & {0, 1, 2, 3, 56, 57, 58, 59}
    assert 4 in pinned and 60 in pinned


def test_second_run_changes_nothing(h800, capsys):
    fake, _irqs = h800
    tune.action_irq_affinity(fake.host(), config())
    capsys.readouterr()
    tune.action_irq_affinity(fake.host(), config())
    assert "IRQ affinity: 0 changed, 96 already right, 0 refused by the kernel" in capsys.readouterr().out


def test_kernel_managed_irq_is_reported_not_fatal(tmp_path, capsys):
    fake = FakeHost(tmp_path)
    _address, numbers = fake.add_nic("mlx5_0", 1, "56-111,168-223", irqs=3)
    # The kernel refuses writes to managed IRQs; a directory in place of the file refuses the same way.
    managed = fake.proc / "irq" / str(numbers[1]) / "smp_affinity_list"
    managed.unlink()
    managed.mkdir()
    assert tune.action_irq_affinity(fake.host(), config()) == 0
    out = capsys.readouterr().out
    assert "IRQ %d kept its affinity" % numbers[1] in out
    assert "2 changed, 0 already right, 1 refused by the kernel" in out


def test_only_named_devices_and_netdev_names(tmp_path):
    fake = FakeHost(tmp_path)
    _a, first = fake.add_nic("mlx5_0", 0, "0-55,112-167", link_layer="Ethernet", netdev="ens1np0", irqs=2)
    _b, second = fake.add_nic("mlx5_1", 1, "56-111,168-223", irqs=2)
    tune.action_irq_affinity(fake.host(), config(devices=["ens1np0"]))
    assert [fake.affinity(irq) for irq in first] == ["0", "1"]
    assert [fake.affinity(irq) for irq in second] == ["0-223", "0-223"]


def test_no_rdma_device_is_a_logged_no_op(tmp_path, capsys):
    fake = FakeHost(tmp_path)
    assert tune.action_irq_affinity(fake.host(), config()) == 0
    assert "no RDMA device found under" in capsys.readouterr().out


def test_missing_named_device_fails_the_unit(tmp_path, capsys):
    fake = FakeHost(tmp_path)
    path = tmp_path / "rdma-tune.json"
    path.write_text(json.dumps({"devices": ["mlx5_7"], "wait_seconds": 0}))
    rc = tune.main(["irq-affinity", "--config", str(path), "--sysfs-root", str(fake.sys), "--proc-root", str(fake.proc)])
    assert rc == 2
    assert "configured RDMA devices not found: mlx5_7" in capsys.readouterr().out


def test_dry_run_writes_nothing(h800):
    fake, irqs = h800
    tune.action_irq_affinity(fake.host(), config(), dry_run=True)
    assert fake.affinity(irqs["mlx5_0"][0]) == "0-223"


# ------------------------------------------------------------------ RoCE


class Recorder:
    def __init__(self, returncode=0, stdout=""):
        self.commands = []
        self.returncode = returncode
        self.stdout = stdout

    def __call__(self, command, **_kwargs):
        self.commands.append(command)
        return subprocess.CompletedProcess(command, self.returncode, self.stdout)


def test_roce_settings_on_ethernet_ports_only(tmp_path, monkeypatch, capsys):
    fake = FakeHost(tmp_path)
    fake.add_nic("mlx5_0", 0, "0-55", link_layer="Ethernet", netdev="ens1np0")
    fake.add_nic("mlx5_1", 0, "0-55", link_layer="InfiniBand")
    # rdma_cm configfs: the kernel creates ports/N when the device directory is made; pre-made here.
    (fake.sys / "kernel" / "config" / "rdma_cm" / "mlx5_0" / "ports" / "1").mkdir(parents=True)
    tc = fake.sys / "class" / "infiniband" / "mlx5_0" / "tc" / "1"
    tc.mkdir(parents=True)
    (tc / "traffic_class").write_text("")
    monkeypatch.setattr(tune.shutil, "which", lambda name: "/usr/sbin/" + name)
    run = Recorder()
    assert tune.action_roce(fake.host(), config(), run=run) == 0
    port = fake.sys / "kernel" / "config" / "rdma_cm" / "mlx5_0" / "ports" / "1"
    assert (port / "default_roce_tos").read_text() == "106"
    assert (port / "default_roce_mode").read_text() == "RoCE v2"
    assert (tc / "traffic_class").read_text() == "106\n"
    assert run.commands == [["/usr/sbin/mlnx_qos", "-i", "ens1np0", "--trust", "dscp"]]
    out = capsys.readouterr().out
    assert "mlx5_1: no port with an Ethernet link layer; not RoCE" in out
    assert not (fake.sys / "kernel" / "config" / "rdma_cm" / "mlx5_1").exists()


def test_roce_without_tools_or_configfs_says_so(tmp_path, monkeypatch, capsys):
    fake = FakeHost(tmp_path)
    fake.add_nic("mlx5_0", 0, "0-55", link_layer="Ethernet", netdev="ens1np0")
    monkeypatch.setattr(tune.shutil, "which", lambda name: None)
    assert tune.action_roce(fake.host(), config()) == 0
    out = capsys.readouterr().out
    assert "mlnx_qos not installed" in out
    assert "configfs not mounted or rdma_cm not loaded" in out
    assert "traffic class not set" in out


# ------------------------------------------------------------------ PCIe relaxed ordering


def test_relaxed_ordering_sets_devctl_bit(tmp_path, monkeypatch):
    fake = FakeHost(tmp_path)
    address = fake.add_nic("mlx5_0", 0, "0-55", ports=2)[0]
    monkeypatch.setattr(tune.shutil, "which", lambda name: "/usr/bin/" + name)
    run = Recorder()
    assert tune.action_pcie_relaxed_ordering(fake.host(), config(pcie_relaxed_ordering="enable"), run=run) == 0
    assert run.commands == [["/usr/bin/setpci", "-s", address, "CAP_EXP+8.w=0010:0010"]]
    run = Recorder()
    tune.action_pcie_relaxed_ordering(fake.host(), config(pcie_relaxed_ordering="disable"), run=run)
    assert run.commands == [["/usr/bin/setpci", "-s", address, "CAP_EXP+8.w=0000:0010"]]


def test_relaxed_ordering_keep_runs_nothing(tmp_path, monkeypatch):
    fake = FakeHost(tmp_path)
    fake.add_nic("mlx5_0", 0, "0-55")
    run = Recorder()
    assert tune.action_pcie_relaxed_ordering(fake.host(), config(), run=run) == 0
    assert run.commands == []


# ------------------------------------------------------------------ mlxconfig

# The layout of `mlxconfig -d <dev> query <params>` as the NVIDIA MFT user manual prints it. Not a capture from
# a server of ours (none in tests/fixtures): replace with a real capture when one is published.
MLXCONFIG_QUERY = """
Device #1:
----------

Device type:    ConnectX7
Name:           MCX75310AAS-NEA_Ax
Description:    NVIDIA ConnectX-7 HHHL Adapter card; 400GbE / NDR IB (default mode); Single-port OSFP
Device:         0000:19:00.0

Configurations:                                      Next Boot
        PCI_WR_ORDERING                             per_mkey(0)
        ADVANCED_PCI_SETTINGS                       False(0)
"""


def test_parse_mlxconfig_query_next_boot_values():
    assert tune.parse_mlxconfig_query(MLXCONFIG_QUERY) == {
        "PCI_WR_ORDERING": "per_mkey(0)",
        "ADVANCED_PCI_SETTINGS": "False(0)",
    }
    assert tune.mlxconfig_value_matches("per_mkey(0)", "0")
    assert tune.mlxconfig_value_matches("per_mkey(0)", "PER_MKEY")
    assert not tune.mlxconfig_value_matches("per_mkey(0)", "1")


def test_mlxconfig_check_reports_pending_without_setting(tmp_path, monkeypatch, capsys):
    fake = FakeHost(tmp_path)
    address = fake.add_nic("mlx5_0", 0, "0-55")[0]
    monkeypatch.setattr(tune.shutil, "which", lambda name: "/usr/bin/" + name)
    run = Recorder(stdout=MLXCONFIG_QUERY)
    settings = {"PCI_WR_ORDERING": "1", "ADVANCED_PCI_SETTINGS": "0"}
    assert tune.action_mlxconfig(fake.host(), config(mlxconfig=settings), check=True, run=run) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["changed"] is True
    assert report["devices"][address]["pending"] == {"PCI_WR_ORDERING": "1"}
    assert len(run.commands) == 1  # the query only
    tune.action_mlxconfig(fake.host(), config(mlxconfig=settings), check=False, run=run)
    assert run.commands[-1] == ["/usr/bin/mlxconfig", "-y", "-d", address, "set", "PCI_WR_ORDERING=1"]


# ------------------------------------------------------------------ configuration


@pytest.mark.parametrize("bad, message", [
    ({"devise": []}, "unknown configuration keys: devise"),
    ({"roce": {"trust": "dcsp"}}, "roce.trust"),
    ({"roce": {"tos": 300}}, "roce.tos"),
    ({"irq_affinity": {"exclude_cpus": "0-"}}, "not a CPU list"),
    ({"pcie_relaxed_ordering": "on"}, "pcie_relaxed_ordering"),
    ({"wait_seconds": True}, "wait_seconds"),
    ({"mlxconfig": {"pci wr": 1}}, "not an mlxconfig name"),
    # A trailing newline passed re.match with `$` before (issue 14): names and values are matched whole now.
    ({"devices": ["mlx5_0\n"]}, "devices must be a list of device names"),
    ({"mlxconfig": {"PCI_WR_ORDERING\n": 1}}, "not an mlxconfig name"),
    ({"mlxconfig": {"PCI_WR_ORDERING": "1\n"}}, "mlxconfig value of PCI_WR_ORDERING"),
])
def test_bad_configuration_is_named(bad, message):
    with pytest.raises(tune.TuneError, match=message.replace(".", r"\.")):
        tune.validate_config(bad)
