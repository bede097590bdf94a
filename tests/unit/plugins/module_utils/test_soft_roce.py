# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Soft-RoCE as desired state: input problems, the unit each device gets (checked by systemd-analyze and
systemd-escape on this machine), and conflicts read from real sysfs captures of the QEMU lab (rxe0 on bond0) and
of a RoCE NIC (the kernel's formats, as test_topology.py builds them)."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from fixture_data import read_fixture

from ansible_collections.gpufabric.core.plugins.module_utils.rdma import soft_roce as sr
from ansible_collections.gpufabric.core.plugins.module_utils.fabric.sysfs import rdma_devices


def _listing(name, prefix):
    """A `grep -H . FILES` capture of tests/fixtures/lab_qemu (file:value per line) as sysfs keys under prefix."""
    entries = {}
    for line in read_fixture("lab_qemu/" + name).splitlines():
        path, _sep, value = line.partition(":")
        entries[prefix + path] = value
    return entries


def _lab_sysfs():
    """rxe0 on bond0 as the VM lab's kernel shows it (its GID table), and the parent netdev each Soft-RoCE device
    of the lab's site.yml run reports (rxe0 on bond0, rxe1 on ens5)."""
    sysfs = _listing("lab-qemu-sysfs-gids-rxe0.txt", "class/infiniband/rxe0/ports/1/")
    sysfs.update(_listing("lab-qemu-sysfs-parent-rxe.txt", "class/infiniband/"))
    return sysfs


# A RoCE NIC's device in sysfs (the kernel's formats): mlx5_0 with its PCI netdev ens108np0.
HARDWARE = {
    "class/infiniband/mlx5_0/hca_type": "MT4129",
    "class/infiniband/mlx5_0/device/uevent": "DRIVER=mlx5_core\nPCI_SLOT_NAME=0000:19:00.0",
    "class/infiniband/mlx5_0/device/net/ens108np0/ifindex": "4",
    "class/infiniband/mlx5_0/ports/1/state": "4: ACTIVE",
    "class/infiniband/mlx5_0/ports/1/gids/0": "fe80:0000:0000:0000:a288:c2ff:fee3:142a",
    "class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/0": "ens108np0",
}


def test_good_devices_have_no_problem():
    assert sr.problems([{"name": "rxe0", "netdev": "bond0"}, {"name": "rxe1", "netdev": "ens5"}]) == []
    assert sr.problems([]) == []


@pytest.mark.parametrize("devices, expected", [
    ("rxe0", "gpufabric_soft_roce: must be a list of {name, netdev}, got str"),
    ([{"name": "rxe0"}], "gpufabric_soft_roce[0].netdev: must be an interface name"),
    ([{"name": "rxe0", "netdev": "bond0", "vlan": 100}], "gpufabric_soft_roce[0]: must be a dict with name and netdev only"),
    ([{"name": "rxe 0", "netdev": "bond0"}], "gpufabric_soft_roce[0].name: must be an RDMA device name"),
    ([{"name": "rxe0", "netdev": "bond0; reboot"}], "gpufabric_soft_roce[0].netdev: must be an interface name"),
    ([{"name": "rxe0", "netdev": "a-very-long-name0"}], "gpufabric_soft_roce[0].netdev: must be an interface name"),
    ([{"name": "rxe0", "netdev": "bond0"}, {"name": "rxe0", "netdev": "ens5"}],
     "gpufabric_soft_roce[1].name: rxe0 is also gpufabric_soft_roce[0].name"),
    ([{"name": "rxe0", "netdev": "bond0"}, {"name": "rxe1", "netdev": "bond0"}],
     "gpufabric_soft_roce[1].netdev: bond0 already carries gpufabric_soft_roce[0]"),
])
def test_bad_devices_are_named(devices, expected):
    found = sr.problems(devices)
    assert len(found) == 1 and found[0].startswith(expected), found


def test_the_unit_is_bound_to_its_netdev_and_makes_the_device_only_when_missing():
    text = sr.unit_content("rxe0", "bond-a", "/usr/bin/rdma", "/usr/sbin/modprobe")
    assert text.startswith(sr.HEADER)
    lines = text.splitlines()
    # The name systemd gives the netdev's device unit (systemd-escape --path, '-' escaped).
    assert "BindsTo=sys-subsystem-net-devices-bond\\x2da.device" in lines
    assert "WantedBy=sys-subsystem-net-devices-bond\\x2da.device" in lines
    assert "ExecStart=/bin/sh -c 'test -e /sys/class/infiniband/rxe0 || exec /usr/bin/rdma link add rxe0 type rxe " \
           "netdev bond-a'" in lines
    assert sr.unit_name("rxe0") == "gpufabric-soft-roce-rxe0.service"
    assert sr.device_of_unit("gpufabric-soft-roce-rxe0.service") == "rxe0"
    assert sr.device_of_unit("gpufabric-soft-roce-rxe 0.service") is None
    assert sr.device_of_unit("gpufabric-bonding-apply.service") is None


@pytest.mark.skipif(not shutil.which("systemd-escape"), reason="no systemd-escape")
@pytest.mark.parametrize("netdev", ["bond0", "bond-a", "ens5.x_1", "eth-1.100"])
def test_device_unit_names_are_systemd_escapes_own(netdev):
    escaped = subprocess.run(["systemd-escape", "--path", "/sys/subsystem/net/devices/" + netdev], check=True,
                             capture_output=True, text=True).stdout.strip()
    assert sr.netdev_device_unit(netdev) == "%s.device" % escaped


@pytest.mark.skipif(not shutil.which("systemd-analyze"), reason="no systemd-analyze")
def test_systemd_analyze_accepts_the_unit(tmp_path):
    # systemd-analyze checks that the tools exist: this machine has no kmod, so true stands in for modprobe's path.
    unit = tmp_path / sr.unit_name("rxe0")
    unit.write_text(sr.unit_content("rxe0", "bond-a", shutil.which("rdma") or "/bin/true", shutil.which("true")))
    checked = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_lab_s_rxe0_is_a_soft_roce_device_on_bond0():
    devices = rdma_devices(_lab_sysfs())
    assert sr.soft_devices(devices) == {"rxe0": "bond0", "rxe1": "ens5"}
    # Already there on the same netdev: nothing conflicts.
    assert sr.conflicts([{"name": "rxe0", "netdev": "bond0"}], devices, {"bond0", "bond0.100"}) == []


def test_conflicts_are_named_before_anything_changes():
    devices = rdma_devices(dict(_lab_sysfs(), **HARDWARE))
    found = sr.conflicts([{"name": "rxe0", "netdev": "ens5"}, {"name": "rxe1", "netdev": "ens108np0"},
                          {"name": "mlx5_0", "netdev": "bond0"}, {"name": "rxe2", "netdev": "bond9"}],
                         devices, {"bond0", "ens5", "ens108np0"})
    assert found == [
        "gpufabric_soft_roce[0].name: the RDMA device rxe0 already exists on bond0",
        "gpufabric_soft_roce[0].netdev: ens5 is the netdev of rxe1 already; the kernel makes one Soft-RoCE device "
        "per netdev",
        "gpufabric_soft_roce[1].netdev: ens108np0 already has the RDMA device mlx5_0; a Soft-RoCE device would "
        "shadow its NIC's own RDMA function",
        "gpufabric_soft_roce[1].name: the RDMA device rxe1 already exists on ens5",
        "gpufabric_soft_roce[2].name: the RDMA device mlx5_0 already exists (a hardware device)",
        "gpufabric_soft_roce[2].netdev: bond0 is the netdev of rxe0 already; the kernel makes one Soft-RoCE device "
        "per netdev",
        "gpufabric_soft_roce[3].netdev: bond9 does not exist on this host (make it first: a bond or VLAN of the "
        "bonding role comes before this step)",
    ]


def test_a_device_this_module_removes_in_the_same_run_frees_its_name_and_netdev():
    devices = rdma_devices(_lab_sysfs())
    # rxe1 on ens5 renamed rxe5.
    renamed = [{"name": "rxe0", "netdev": "bond0"}, {"name": "rxe5", "netdev": "ens5"}]
    assert sr.conflicts(renamed, devices, {"bond0", "ens5"}) == [
        "gpufabric_soft_roce[1].netdev: ens5 is the netdev of rxe1 already; the kernel makes one Soft-RoCE device "
        "per netdev"]
    assert sr.conflicts(renamed, devices, {"bond0", "ens5"}, removable=["rxe1"]) == []
