# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rdma role on two VMs with Debian's kernel and Soft-RoCE rails, read back from the kernel.

The files the role wrote for module options and boot-time modules, the initramfs it rebuilt and booted through
the image's GRUB after its reboot, the options in effect after that boot, the modules it loaded, memlock as PAM and
systemd give it. The topology facts are gathered live by the collection's own
module and compared with what ibv_devinfo -v and sysfs say; the nccl role's NCCL_IB_HCA and NCCL_IB_GID_INDEX are
compared with sysfs; the verify role's perftest sweep between the VMs is run, gated and its report read.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from ansible_collections.gpufabric.core.plugins.module_utils.ibv_devinfo import parse_ibv_devinfo
from ansible_collections.gpufabric.core.plugins.module_utils.nccl_config import port_gid_index

# The scenario's rails (molecule.yml): device, link, VLAN, the host part of every address is the VM's number.
RAILS = [("rxe0", "ens4", 100, "192.168.40", "10.100.0"), ("rxe1", "ens5", 101, "192.168.41", "10.101.0")]
NUMBER = {"vm01": 1, "vm02": 2}
# molecule.yml's rdma_module_options, each value other than ib_core's default.
OPTIONS = {"ib_core": {"send_queue_size": "256", "recv_queue_size": "1024"}}
ROOT = Path(__file__).resolve().parents[3]
SCENARIO = Path(__file__).resolve().parents[1]
EPHEMERAL = Path(os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY", ""))


def name_of(host):
    return host.backend.get_hostname()


@pytest.fixture(scope="module")
def topology(host):
    """gpufabric_topology gathered live on this VM by gpufabric.core.topology_facts."""
    result = host.ansible("gpufabric.core.topology_facts", "", check=False)
    return result["ansible_facts"]["gpufabric_topology"]


def test_module_options_and_boot_modules_written_and_modules_loaded(host):
    # The options apply at the next load of ib_core (loaded by prepare.yml before they were written): the tests
    # below read them back after the role's reboot.
    text = host.file("/etc/modprobe.d/gpufabric-rdma.conf").content_string
    for module, options in OPTIONS.items():
        assert "options %s %s" % (module, " ".join("%s=%s" % item for item in options.items())) in text
    listed = [line for line in host.file("/etc/modules-load.d/gpufabric-rdma.conf").content_string.splitlines()
              if line and not line.startswith("#")]
    assert listed == ["ib_umad", "rdma_ucm"]
    for module in listed:
        assert host.file("/sys/module/%s" % module).is_directory, module


def test_the_role_rebooted_through_grub_into_the_initramfs_it_rebuilt(host):
    # GRUB's command line (the image's embedded configuration, scripts/vmlab.sh), not QEMU's -append: GRUB's
    # linux command puts BOOT_IMAGE first.
    assert host.file("/proc/cmdline").content_string.split() == [
        "BOOT_IMAGE=/vmlinuz", "root=/dev/vda1", "rw", "console=ttyS0"]
    initrd = "/boot/initrd.img-" + host.check_output("uname -r")
    # Rebuilt by the role (prepare.yml recorded the image's own), before this boot (the role's reboot).
    before = host.file("/var/lib/vmlab-initrd-before.sha256").content_string.split()[0]
    assert host.check_output("sha256sum %s" % initrd).split()[0] != before
    booted = int(host.check_output("awk '/^btime/ {print $2}' /proc/stat"))
    assert int(host.check_output("stat -c %%Y %s" % initrd)) < booted
    # It holds the role's modprobe.d file, and it is the one this boot loaded: the kernel freed exactly its size
    # (x86 frees the initrd up to the next page boundary).
    assert "etc/modprobe.d/gpufabric-rdma.conf" in host.check_output("lsinitramfs %s" % initrd).splitlines()
    freed = re.findall(r"^Freeing initrd memory: (\d+)K$", host.check_output("journalctl -k -b -o cat"), re.M)
    size = int(host.check_output("stat -c %%s %s" % initrd))
    assert freed == [str(-(-size // 4096) * 4)], (freed, size)
    # The reboot cleared the role's marker (/run is a tmpfs).
    assert not host.file("/run/gpufabric/rdma-reboot-required").exists


def test_module_options_in_effect_read_back_from_sys_module(host):
    # The role rebooted the VM after writing modprobe.d: the values the kernel holds now are those the modules got
    # at boot.
    for module, options in OPTIONS.items():
        for name, value in options.items():
            assert host.file("/sys/module/%s/parameters/%s" % (module, name)).content_string.strip() == value, name
    # The rails are back (prepare.yml's boot unit made them again) for the tests that follow.
    assert host.file("/sys/class/infiniband/rxe0/ports/1").is_directory


def test_memlock_unlimited_for_a_login_shell_and_for_services(host):
    # A new login session through PAM (pam_limits reads /etc/security/limits.d): the "*" domain, as user nobody.
    assert host.check_output("runuser -l nobody -s /bin/sh -c 'ulimit -l'") == "unlimited"
    assert host.check_output("runuser -l root -s /bin/sh -c 'ulimit -l'") == "unlimited"
    # A service started by systemd after the role's DefaultLimitMEMLOCK and daemon-reexec.
    assert host.check_output("systemd-run --quiet --wait --pipe sh -c 'ulimit -l'") == "unlimited"


def test_topology_ports_link_layer_and_netdevs_match_ibv_devinfo(host, topology, capsys):
    # In the test log, so that each run shows the devices the kernel made.
    verbose = host.check_output("ibv_devinfo -v")
    with capsys.disabled():
        print("\nibv_devinfo -v on %s:\n%s" % (name_of(host), verbose))
    verbs = {device["name"]: device for device in parse_ibv_devinfo(verbose)["devices"]}
    assert topology["rdma"]["available"] is True
    devices = {device["name"]: device for device in topology["rdma"]["devices"]}
    assert sorted(devices) == sorted(verbs) == ["rxe0", "rxe1"]
    for device, netdev, _vlan, _untagged, _tagged in RAILS:
        [port] = devices[device]["ports"]
        [verbs_port] = verbs[device]["ports"]
        assert (port["port"], port["state"], port["link_layer"]) == (1, "ACTIVE", "Ethernet")
        assert (verbs_port["state"], verbs_port["link_layer"]) == ("ACTIVE", "Ethernet")
        assert port["netdev"] == netdev
        assert host.check_output("rdma link show %s/1" % device).split()[-1] == netdev


def test_topology_roce_v2_gid_per_address_and_vlan_match_sysfs(host, topology):
    number = NUMBER[name_of(host)]
    devices = {device["name"]: device for device in topology["rdma"]["devices"]}
    for device, netdev, vlan, untagged, tagged in RAILS:
        [port] = devices[device]["ports"]
        base = "/sys/class/infiniband/%s/ports/1/" % device
        by_address = {entry["address"]: entry for entry in port["roce_v2_gids"]}
        for address, on in (("%s.%d" % (untagged, number), netdev), ("%s.%d" % (tagged, number), "%s.%d" % (netdev, vlan))):
            entry = by_address[address]
            gid = host.file(base + "gids/%d" % entry["index"]).content_string.strip()
            assert ipaddress.IPv6Address(gid).ipv4_mapped == ipaddress.IPv4Address(address)
            assert host.file(base + "gid_attrs/types/%d" % entry["index"]).content_string.strip() == "RoCE v2"
            assert host.file(base + "gid_attrs/ndevs/%d" % entry["index"]).content_string.strip() == on
            assert entry["netdev"] == on and entry["vlan"] is (on != netdev)


def test_nccl_gid_choice_is_the_vlan_gid_of_each_rail(host, topology):
    number = NUMBER[name_of(host)]
    devices = {device["name"]: device for device in topology["rdma"]["devices"]}
    for device, netdev, vlan, _untagged, tagged in RAILS:
        [port] = devices[device]["ports"]
        index, reason = port_gid_index(port)
        assert reason is None
        # The kernel's own table: the GID of the VLAN's IPv4 address.
        ndev = host.file("/sys/class/infiniband/%s/ports/1/gid_attrs/ndevs/%d" % (device, index)).content_string
        gid = host.file("/sys/class/infiniband/%s/ports/1/gids/%d" % (device, index)).content_string.strip()
        assert ndev.strip() == "%s.%d" % (netdev, vlan)
        assert str(ipaddress.IPv6Address(gid).ipv4_mapped) == "%s.%d" % (tagged, number)


def test_an_option_the_installed_module_does_not_know_is_refused_before_any_file_changes(host):
    # Debian's 6.1 kernel loads ib_core with an unknown option and only logs "unknown parameter ... ignored"
    # (tests/fixtures/lab_qemu); the role must refuse it by name, from modinfo -p, before it writes anything.
    if name_of(host) != "vm01":
        pytest.skip("one refusal, on vm01")
    written = ["/etc/modprobe.d/gpufabric-rdma.conf", "/etc/modules-load.d/gpufabric-rdma.conf"]
    before = [hashlib.sha256(host.file(path).content).hexdigest() for path in written]
    env = dict(os.environ, ANSIBLE_CONFIG=str(EPHEMERAL / "ansible.cfg"), ANSIBLE_FORCE_COLOR="false",
               ANSIBLE_ROLES_PATH=str(ROOT / "roles"),
               ANSIBLE_COLLECTIONS_PATH="%s:%s" % (ROOT / ".build" / "collections",
                                                   ROOT / ".venv" / "lib" / "python3.11" / "site-packages"))
    run = subprocess.run([str(ROOT / ".venv" / "bin" / "ansible-playbook"), "-i", str(EPHEMERAL / "inventory"),
                          "--limit", "vm01", "-e", '{"rdma_module_options": {"ib_core": "send_queue_size=256 '
                          'disable_raw_qp_encap=1"}}', str(SCENARIO / "converge.yml")],
                         env=env, capture_output=True, text=True, timeout=900, check=False)
    output = run.stdout + run.stderr
    assert run.returncode != 0, output[-4000:]
    assert "rdma_module_options.ib_core: option 'disable_raw_qp_encap' is not a parameter of the installed ib_core" \
        in output, output[-4000:]
    assert [hashlib.sha256(host.file(path).content).hexdigest() for path in written] == before


def _nccl_variables(host):
    """NCCL_* = value lines of /etc/nccl.conf, which the nccl role wrote in converge."""
    lines = host.file("/etc/nccl.conf").content_string.splitlines()
    return dict(line.split("=", 1) for line in lines if line.startswith("NCCL_"))


def _vlan_gid_index(host, device, netdev, vlan, tagged):
    """The index of the GID of the rail's VLAN address, read from the kernel's own table in sysfs."""
    address = ipaddress.IPv4Address("%s.%d" % (tagged, NUMBER[name_of(host)]))
    base = "/sys/class/infiniband/%s/ports/1/" % device
    found = []
    for index in range(16):
        # Unset entries fail to read (an empty answer): only the readable ones count.
        ndev = host.run("cat %sgid_attrs/ndevs/%d 2>/dev/null" % (base, index)).stdout.strip()
        if ndev != "%s.%d" % (netdev, vlan):
            continue
        gid = host.run("cat %sgids/%d" % (base, index)).stdout.strip()
        if ipaddress.IPv6Address(gid).ipv4_mapped == address:
            found.append(index)
    assert len(found) == 1, (device, found)
    return found[0]


def test_nccl_ib_hca_is_the_rxe_devices_and_the_gid_index_the_vlans_from_sysfs(host):
    variables = _nccl_variables(host)
    # The rxe devices the kernel has, port 1 each, '=' for exact names.
    devices = sorted(host.check_output("ls /sys/class/infiniband").split())
    assert devices == ["rxe0", "rxe1"]
    assert variables["NCCL_IB_HCA"] == "=" + ",".join("%s:1" % device for device in devices)
    # The GID index of each rail's VLAN address in the kernel's own table, the same on both rails.
    indexes = {_vlan_gid_index(host, device, netdev, vlan, tagged) for device, netdev, vlan, _untagged, tagged in RAILS}
    assert len(indexes) == 1, indexes
    assert variables["NCCL_IB_GID_INDEX"] == str(indexes.pop())
    # No GPU: no GPUDirect level to derive.
    assert "NCCL_NET_GDR_LEVEL" not in variables


@pytest.fixture(scope="module")
def sweep():
    """One run of verify_fabric.yml (the verify role's perftest sweep) from the controller, with vm01 also in a
    group whose gate (1000 Gbit/s) it cannot reach: its output, return code and the report the role wrote."""
    extra = EPHEMERAL / "inventory-unreachable-gate.yml"
    extra.write_text("all:\n  children:\n    rdma_kernel_unreachable_gate:\n      hosts:\n        vm01: {}\n")
    report = EPHEMERAL / "verify-report" / "verify.json"
    if report.exists():
        report.unlink()
    env = dict(os.environ, ANSIBLE_CONFIG=str(EPHEMERAL / "ansible.cfg"), ANSIBLE_FORCE_COLOR="false",
               ANSIBLE_ROLES_PATH=str(ROOT / "roles"),
               ANSIBLE_COLLECTIONS_PATH="%s:%s" % (ROOT / ".build" / "collections",
                                                   ROOT / ".venv" / "lib" / "python3.11" / "site-packages"))
    run = subprocess.run([str(ROOT / ".venv" / "bin" / "ansible-playbook"), "-i", str(EPHEMERAL / "inventory"),
                          "-i", str(extra), str(SCENARIO / "verify_fabric.yml")],
                         env=env, capture_output=True, text=True, timeout=900, check=False)
    output = run.stdout + run.stderr
    assert report.exists(), output[-4000:]
    return run.returncode, output, json.loads(report.read_text())


def test_perftest_per_rail_over_the_vlan_gid_between_the_vms_passes_its_gate(host, sweep, capsys):
    if name_of(host) != "vm02":
        pytest.skip("vm02 carries the reachable gate")
    _rc, output, report = sweep
    tests = report["tests"]
    # One ib_write_bw per rail, each on its rxe device at both ends, on the VLAN's GID (-x, from topology_facts).
    assert sorted((test["rail"], test["client_device"], test["server_device"]) for test in tests) == \
        [(0, "rxe0", "rxe0"), (1, "rxe1", "rxe1")], output[-4000:]
    for test in tests:
        assert test["error"] is None, test
        rail = RAILS[test["rail"]]
        argv = test["command"].split()
        # The GID perftest was given (-x) and the one it reports using: the VLAN's, per this VM's sysfs (both VMs
        # are laid out alike).
        assert int(argv[argv.index("-x") + 1]) == test["details"]["gid_index"] == \
            _vlan_gid_index(host, rail[0], rail[1], rail[2], rail[4]), test
        # One direction (verify_fabric.yml): ib_write_bw writes from the client to the server.
        assert test["client_to_server_gbps"] > 0.001, test
    verdict = report["hosts"]["vm02"]
    gates = {rail["expected_gbps"] for rail in verdict["rails"].values()}
    with capsys.disabled():
        print("\nthe verify role's perftest sweep (report verify.json):")
        for test in tests:
            print("  rail %d: %s -> %.4f Gbit/s" % (test["rail"], test["command"], test["client_to_server_gbps"]))
        print("  vm02: %s (gate %s Gbit/s); vm01: %s" % (verdict["status"], sorted(gates),
                                                         report["hosts"]["vm01"]["status"]))
    assert verdict["status"] == "pass", verdict
    assert gates == {0.001}


def test_a_gate_the_measured_rate_cannot_reach_fails_the_host_and_the_report(host, sweep):
    if name_of(host) != "vm01":
        pytest.skip("vm01 carries the unreachable gate")
    rc, output, report = sweep
    assert rc != 0, output[-4000:]
    verdict = report["hosts"]["vm01"]
    assert verdict["status"] == "fail" and report["verdict"] == "fail"
    assert len(verdict["messages"]) == 2, verdict
    for message in verdict["messages"]:
        assert "expected at least 1000.00 Gbit/s (absolute threshold of group 'rdma_kernel_unreachable_gate')" \
            in message, message
    assert "vm01 rail 0 (rxe0): measured" in output
    assert "Gate | Fail the hosts below their gates" in output
