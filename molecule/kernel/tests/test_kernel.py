# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One GPU server's communication layer on two VMs with Debian's kernel, read back from the kernel, layer by layer.

- The bond: /proc/net/bonding parsed by the collection's own parse_bonding and judged by bond_verify, as the role
  does; each VM the other's LACP partner; the VLAN on it carries 9000-byte frames.
- RDMA: the files the role wrote for module options and boot-time modules, the initramfs it rebuilt and booted
  through the image's GRUB after its reboot, the options in effect after that boot, the modules it loaded, memlock as
  PAM and systemd give it; the topology facts gathered live by the collection's own module against ibv_devinfo -v
  and sysfs; the nccl role's NCCL_IB_HCA and NCCL_IB_GID_INDEX against sysfs; the verify role's perftest sweep
  between the VMs, gated, and its report.
- One run is enough (issue 36): the VMs were bare before converge (prepare.yml recorded no RDMA device and no bond);
  site.yml's soft_roce step made rxe0 on the bond its bonding step made and rxe1 on ens6, each with its unit, and
  the nccl role, discovering again after those steps, named them in NCCL_IB_HCA with their VLANs' GID index. vm02
  names its rails (gpufabric_rail_interfaces: rail 0 only, molecule.yml): its NCCL_IB_HCA and the rails its sweep
  tests follow, vm01's do not. Molecule's idempotence step shows that a second run changes nothing.
- IPsec: the SAs read from the kernel (`ip -s xfrm state`) and from strongSwan (`swanctl --list-sas`, parsed and
  judged by the collection's own parse_list_sas and evaluate_sas, as swanctl_verify does), traffic counted on them;
  Soft-RoCE (rxe0, on the bond whose VLAN carries the ESP policy) then sends ib_send_bw traffic between the VMs while
  tcpdump captures the VLAN: RoCE v2 packets (UDP 4791) leave in clear, their InfiniBand transport header (BTH)
  readable and naming the queue pair ib_send_bw reported, although the ESP policy covers both addresses.
- Faults, last: ens5's cable pulled at both ends with the QEMU monitor (scripts/vmlab.sh link): traffic keeps flowing
  over ens4 and bond_verify names ens5, and, with gpufabric.core.health deployed on both VMs and Debian's Prometheus
  and Alertmanager run by the test on the generated rules, GpufabricBondPartnerLost fires for ens5 on both VMs with
  exactly its labels; then it is restored, LACP negotiated again and the alerts resolved; and vm02 reached over the
  bond itself, its connection cut by a bonding change (rollback.yml): vm02's own timer must put it back, with the
  files as before.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import os
import re
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
import testinfra

from ansible_collections.gpufabric.core.plugins.filter.bond_validate import bond_validate
from ansible_collections.gpufabric.core.plugins.filter.bond_verify import bond_verify
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.proc_bonding import parse_bonding
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.ibv_devinfo import parse_ibv_devinfo
from ansible_collections.gpufabric.core.plugins.module_utils.nccl.config import port_gid_index
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.swanctl import evaluate_sas, parse_list_sas

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "tests"))
import health_lab  # noqa: E402  pylint: disable=wrong-import-position

SCENARIO = Path(__file__).resolve().parents[1]
EPHEMERAL = Path(os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY", ""))
VMLAB = ROOT / "scripts" / "vmlab.sh"
PEER = {"vm01": "vm02", "vm02": "vm01"}
NUMBER = {"vm01": 1, "vm02": 2}
# The scenario's rails (molecule.yml): RDMA device, the netdev it is made on, its VLAN, the untagged and the VLAN's
# network (the host part of every address is the VM's number). Rail 0 is on the bond.
RAILS = [("rxe0", "bond0", 100, "192.168.40", "10.100.0"), ("rxe1", "ens6", 101, "192.168.41", "10.101.0")]
# The Soft-RoCE units gpufabric.core.soft_roce writes, one per device.
SOFT_ROCE_UNIT = "gpufabric-soft-roce-%s.service"
# VLAN 100 on the bond: the IPsec mesh's addresses.
VLAN_ADDRESS = {"vm01": "10.100.0.1", "vm02": "10.100.0.2"}
VLAN = "bond0.100"
# The scenario's bond, normalised as the role normalises it (defaults: 802.3ad, fast, layer3+4, miimon 100).
EXPECTED = bond_validate([{"name": "bond0", "members": ["ens4", "ens5"], "addresses": ["192.168.40.1/24"]}],
                         vlans=[{"id": 100, "link": "bond0", "addresses": ["10.100.0.1/24"]}])["bonds"][0]
# molecule.yml's rdma_module_options, each value other than ib_core's default.
OPTIONS = {"ib_core": {"send_queue_size": "256", "recv_queue_size": "1024"}}
ROCE_PORT = 4791


def name_of(host):
    return host.backend.get_hostname()


def peer_of(host):
    """The other VM, through the same Molecule inventory."""
    return testinfra.get_host("ansible://" + PEER[name_of(host)], ansible_inventory=host.backend.ansible_inventory)


def rails_of(host):
    """The scenario's rails this host's run resolved: RAILS in the order its gpufabric_rail_interfaces names their
    netdevs when it names them (vm02), else every rail (vm01: its RDMA devices, rail_source rdma_devices)."""
    named = host.ansible.get_variables().get("gpufabric_rail_interfaces")
    if not named:
        return RAILS
    by_netdev = {rail[1]: rail for rail in RAILS}
    return [by_netdev[netdev] for netdev in named]


def wait_for(predicate, timeout, step=2):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(step)


def playbook(*args, timeout=900):
    """ansible-playbook with the scenario's inventory and settings, from the controller: (return code, output)."""
    env = dict(os.environ, ANSIBLE_CONFIG=str(EPHEMERAL / "ansible.cfg"), ANSIBLE_FORCE_COLOR="false",
               ANSIBLE_ROLES_PATH=str(ROOT / "roles"),
               ANSIBLE_COLLECTIONS_PATH="%s:%s" % (ROOT / ".build" / "collections",
                                                   ROOT / ".venv" / "lib" / "python3.11" / "site-packages"))
    run = subprocess.run([str(ROOT / ".venv" / "bin" / "ansible-playbook"), "-i", str(EPHEMERAL / "inventory"),
                          *args], env=env, capture_output=True, text=True, timeout=timeout, check=False)
    return run.returncode, run.stdout + run.stderr


# --- The bond -------------------------------------------------------------------------------------------------------

def read_bond(host):
    return host.file("/proc/net/bonding/bond0").content_string


def test_lacp_partner_negotiated_on_both_members(host, capsys):
    text = read_bond(host)
    # In the test log, so that each run shows what the kernel negotiated.
    with capsys.disabled():
        print("\n/proc/net/bonding/bond0 on %s:\n%s" % (name_of(host), text))
    bond = parse_bonding(text)
    # The partner is the other VM's bond: its LACP system MAC and key, as the other VM's kernel shows them.
    peer = parse_bonding(read_bond(peer_of(host)))
    peer_mac = peer["system_mac"]
    assert peer_mac and peer_mac != bond["system_mac"]
    assert bond["mode"] == "802.3ad" and bond["lacp_rate"] == "fast" and bond["xmit_hash_policy"] == "layer3+4"
    assert bond["mii_polling_ms"] == 100
    assert sorted(s["name"] for s in bond["slaves"]) == ["ens4", "ens5"]
    aggregator = bond["active_aggregator"]
    assert aggregator["number_of_ports"] == 2 and aggregator["partner_mac"] == peer_mac
    assert aggregator["partner_key"] == peer["active_aggregator"]["actor_key"]
    for slave in bond["slaves"]:
        assert slave["mii_status"] == "up" and slave["speed_mbps"] == 100000, slave
        assert slave["aggregator_id"] == aggregator["aggregator_id"], slave
        assert slave["partner_mac"] == peer_mac, slave
    assert re.search(r"details partner lacp pdu:\n(?:\s+.*\n)*?\s+oper key: [1-9]", text), "no partner key"
    assert bond_verify(text, EXPECTED) == []


# The IPsec mesh rides VLAN 100: between its addresses every packet is ESP in tunnel mode, whose 54 bytes (outer IPv4
# header 20, ESP header 8, IV 8, trailer 2, ICV 16, no padding for AES-GCM at this size) come out of the 9000. The
# largest packet that leaves unfragmented is 8946 bytes (8918 of ICMP payload), each a 9000-byte frame on the wire.
ESP_PATH_MTU = 9000 - 54


def test_bond_and_its_vlan_carry_9000_byte_frames(host):
    name = name_of(host)
    link = host.check_output("ip -d -o link show dev %s" % VLAN)
    assert "mtu 9000" in link and "vlan protocol 802.1Q id 100" in link
    assert VLAN_ADDRESS[name] + "/24" in host.check_output("ip -o -4 addr show dev %s" % VLAN)
    # The bond's own address, outside the mesh: 8972 bytes of ICMP payload + 28 of headers = 9000, not fragmented.
    ping = host.run("ping -c 3 -W 5 -M do -s 8972 192.168.40.%d" % NUMBER[PEER[name]])
    assert ping.rc == 0 and " 0% packet loss" in ping.stdout, ping.stdout + ping.stderr
    # The VLAN's, through the SA: the kernel derives the path MTU from the VLAN's 9000 less ESP's overhead.
    too_big = host.run("ping -c 1 -W 5 -M do -s 8972 %s" % VLAN_ADDRESS[PEER[name]])
    assert too_big.rc != 0 and "mtu=%d" % ESP_PATH_MTU in too_big.stdout + too_big.stderr, too_big.stdout
    ping = host.run("ping -c 3 -W 5 -M do -s %d %s" % (ESP_PATH_MTU - 28, VLAN_ADDRESS[PEER[name]]))
    assert ping.rc == 0 and " 0% packet loss" in ping.stdout, ping.stdout + ping.stderr


# --- RDMA and NCCL --------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def topology(host):
    """gpufabric_topology gathered live on this VM by gpufabric.core.topology_facts."""
    result = host.ansible("gpufabric.core.topology_facts", "", check=False)
    return result["ansible_facts"]["gpufabric_topology"]


def test_module_options_and_boot_modules_written_and_modules_loaded(host):
    # The options apply at the next load of ib_core: the tests below read them back after the role's reboot.
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
    # The Soft-RoCE step ran after the reboot: its devices are there for the tests that follow.
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
    returncode, output = playbook("--limit", "vm01", "--tags", "rdma", "-e", '{"rdma_module_options": {"ib_core": '
                                  '"send_queue_size=256 disable_raw_qp_encap=1"}}', str(SCENARIO / "converge.yml"))
    assert returncode != 0, output[-4000:]
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


def test_nccl_ib_hca_is_the_rxe_devices_and_the_gid_index_the_vlans_from_sysfs(host, capsys):
    text = host.file("/etc/nccl.conf").content_string
    # In the test log: the NCCL file the one run wrote on each VM.
    with capsys.disabled():
        print("\n/etc/nccl.conf on %s:\n%s" % (name_of(host), text))
    variables = _nccl_variables(host)
    # The rxe devices the kernel has, port 1 each, '=' for exact names: all of them on vm01, the rails vm02 names.
    devices = sorted(host.check_output("ls /sys/class/infiniband").split())
    assert devices == ["rxe0", "rxe1"]
    rails = rails_of(host)
    assert variables["NCCL_IB_HCA"] == "=" + ",".join("%s:1" % device for device, *_rest in rails)
    if name_of(host) == "vm01":
        assert variables["NCCL_IB_HCA"] == "=" + ",".join("%s:1" % device for device in devices)
    # The GID index of each rail's VLAN address in the kernel's own table, the same on both rails.
    indexes = {_vlan_gid_index(host, device, netdev, vlan, tagged) for device, netdev, vlan, _untagged, tagged in rails}
    assert len(indexes) == 1, indexes
    assert variables["NCCL_IB_GID_INDEX"] == str(indexes.pop())
    # No GPU: no GPUDirect level to derive.
    assert "NCCL_NET_GDR_LEVEL" not in variables


def test_the_vms_were_bare_before_the_run(host):
    # Recorded by prepare.yml before converge: no RDMA device and no bond; everything the tests read was made by
    # the one site.yml run of converge.
    assert host.file("/var/lib/vmlab-before-converge.txt").content_string.split("\n")[:2] == [
        "rdma_devices: ", "bonds: "]


def test_the_soft_roce_step_made_each_device_on_its_netdev_with_its_unit(host):
    for device, netdev, *_rest in RAILS:
        base = "/sys/class/infiniband/%s" % device
        assert host.file(base + "/parent").content_string.strip() == netdev, device
        assert host.file(base + "/ports/1/state").content_string.split() == ["4:", "ACTIVE"], device
        unit = host.service(SOFT_ROCE_UNIT % device)
        assert unit.is_enabled and unit.is_running, device


def test_rail_interfaces_on_one_vm_change_its_nccl_hcas_and_not_the_others(host):
    if name_of(host) != "vm02":
        pytest.skip("vm02 names its rails; compared with vm01 once")
    assert [rail[0] for rail in rails_of(host)] == ["rxe0"]
    assert [rail[0] for rail in rails_of(peer_of(host))] == ["rxe0", "rxe1"]
    assert _nccl_variables(host)["NCCL_IB_HCA"] == "=rxe0:1"
    assert _nccl_variables(peer_of(host))["NCCL_IB_HCA"] == "=rxe0:1,rxe1:1"


SWEEP_SECONDS = []


@pytest.fixture(scope="module")
def sweep():
    """One run of verify_fabric.yml (the verify role's perftest sweep) from the controller, with vm01 also in a
    group whose gate (1000 Gbit/s) it cannot reach: its output, return code and the report the role wrote."""
    extra = EPHEMERAL / "inventory-unreachable-gate.yml"
    extra.write_text("all:\n  children:\n    kernel_unreachable_gate:\n      hosts:\n        vm01: {}\n")
    report = EPHEMERAL / "verify-report" / "verify.json"
    if report.exists():
        report.unlink()
    started = time.monotonic()
    returncode, output = playbook("-i", str(extra), str(SCENARIO / "verify_fabric.yml"))
    # What one verify step of site.yml costs here (printed by the test below): the reason it is not in converge.
    SWEEP_SECONDS.append(time.monotonic() - started)
    assert report.exists(), output[-4000:]
    return returncode, output, json.loads(report.read_text())


def test_perftest_per_rail_over_the_vlan_gid_between_the_vms_passes_its_gate(host, sweep, capsys):
    if name_of(host) != "vm02":
        pytest.skip("vm02 carries the reachable gate")
    _rc, output, report = sweep
    tests = report["tests"]
    # One ib_write_bw per rail both VMs have, each on its rxe device at both ends, on the VLAN's GID (-x, from
    # topology_facts): rail 0 only, the one rail vm02 names (vm01's rail 1 has no peer rail).
    assert sorted((test["rail"], test["client_device"], test["server_device"]) for test in tests) == \
        [(0, "rxe0", "rxe0")], output[-4000:]
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
        print("  verify_fabric.yml took %.0f s" % SWEEP_SECONDS[0])
    assert verdict["status"] == "pass", verdict
    assert gates == {0.001}


def test_a_gate_the_measured_rate_cannot_reach_fails_the_host_and_the_report(host, sweep):
    if name_of(host) != "vm01":
        pytest.skip("vm01 carries the unreachable gate")
    rc, output, report = sweep
    assert rc != 0, output[-4000:]
    verdict = report["hosts"]["vm01"]
    assert verdict["status"] == "fail" and report["verdict"] == "fail"
    # One message per rail tested: rail 0, the one vm02 (gpufabric_rail_interfaces) has too.
    assert len(verdict["messages"]) == 1, verdict
    for message in verdict["messages"]:
        assert "expected at least 1000.00 Gbit/s (absolute threshold of group 'kernel_unreachable_gate')" \
            in message, message
    assert "vm01 rail 0 (rxe0): measured" in output
    assert "Gate | Fail the hosts below their gates" in output


# --- IPsec ----------------------------------------------------------------------------------------------------------

# `ip -s xfrm state`: one SA per "src A dst B" line; the AEAD line and the byte/packet counters follow.
_SA = re.compile(r"^src (\S+) dst (\S+)\n((?:[ \t].*\n?)*)", re.M)
# With -s the key length follows the key: "aead rfc4106(gcm(aes)) 0x... (288 bits) 128".
_AEAD = re.compile(r"^\s+aead (\S+) 0x([0-9a-f]+)(?: \(\d+ bits\))? (\d+)", re.M)
_CURRENT = re.compile(r"lifetime current:\s*\n\s*(\d+)\(bytes\), (\d+)\(packets\)")


def xfrm_states(output):
    """The kernel's SAs in `ip -s xfrm state` output, keyed by (src, dst): algorithm, key length in bits, ICV bits,
    bytes, packets (no key)."""
    states = {}
    for src, dst, body in _SA.findall(output):
        aead = _AEAD.search(body)
        current = _CURRENT.search(body)
        states[(src, dst)] = {
            "proto_esp": "proto esp" in body,
            "aead": aead.group(1) if aead else None,
            "key_bits": len(aead.group(2)) * 4 if aead else 0,
            "icv_bits": int(aead.group(3)) if aead else 0,
            "bytes": int(current.group(1)) if current else None,
            "packets": int(current.group(2)) if current else None,
        }
    return states


def pair_states(host, output):
    """This host's outbound and inbound SA with its peer in `ip -s xfrm state` output (None where missing)."""
    me, peer = VLAN_ADDRESS[name_of(host)], VLAN_ADDRESS[PEER[name_of(host)]]
    states = xfrm_states(output)
    return states.get((me, peer)), states.get((peer, me))


def test_the_child_sa_is_in_the_kernel_with_aes_gcm(host):
    output = host.check_output("ip -s xfrm state")
    outbound, inbound = pair_states(host, output)
    for sa in (outbound, inbound):
        assert sa is not None, sorted(xfrm_states(output))
        # rfc4106(gcm(aes)) with a 288-bit key (AES-256 and the 32-bit salt) and a 128-bit ICV: aes256gcm16.
        assert sa["proto_esp"] and sa["aead"] == "rfc4106(gcm(aes))", sa
        assert (sa["key_bits"], sa["icv_bits"]) == (288, 128), sa
    # The kernel does ESP: no userspace data path, no TUN device.
    assert not host.file("/sys/class/net/ipsec0").exists
    assert "load = no" in host.file("/etc/strongswan.d/gpufabric.conf").content_string


def test_strongswan_reports_the_pair_installed(host):
    name = name_of(host)
    sas = parse_list_sas(host.check_output("swanctl --list-sas --noblock"))
    expected = [{"peer": PEER[name], "ike": "gf-" + PEER[name], "child": "gf-" + PEER[name],
                 "remote_host": VLAN_ADDRESS[PEER[name]]}]
    result = evaluate_sas(sas, expected, encryption=["AES_GCM_16-256"])
    assert [r["ok"] for r in result] == [True], result
    child = [sa for sa in sas if sa["name"] == "gf-" + PEER[name]][0]["children"][0]
    assert (child["protocol"], child["mode"], child["udp_encap"]) == ("ESP", "TUNNEL", False), child


def test_traffic_over_the_data_link_is_counted_on_the_sas(host, capsys):
    name = name_of(host)
    before_out, before_in = pair_states(host, host.check_output("ip -s xfrm state"))
    ping = host.run("ping -c 5 -i 0.3 -W 5 -I %s %s" % (VLAN_ADDRESS[name], VLAN_ADDRESS[PEER[name]]))
    assert ping.rc == 0 and " 0% packet loss" in ping.stdout, ping.stdout + ping.stderr
    after = host.check_output("ip -s xfrm state")
    after_out, after_in = pair_states(host, after)
    # 5 echo requests out and 5 replies in, each at least 84 bytes of IP.
    assert after_out["packets"] - before_out["packets"] >= 5 and after_out["bytes"] - before_out["bytes"] >= 5 * 84
    assert after_in["packets"] - before_in["packets"] >= 5 and after_in["bytes"] - before_in["bytes"] >= 5 * 84
    # In the test log with the counters, the key material replaced.
    with capsys.disabled():
        print("\nip -s xfrm state on %s (keys replaced by 0x<key>):\n%s" % (
            name, re.sub(r"0x[0-9a-f]{16,}", "0x<key>", after)))


def _pcap_ipv4(data):
    """The IPv4 packets of a pcap file (Ethernet link type) written by tcpdump -w: (src, dst, proto, ip length,
    UDP destination port or None, UDP payload or b"")."""
    magic = struct.unpack("<I", data[:4])[0]
    endian = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    offset, packets = 24, []
    while offset + 16 <= len(data):
        caplen = struct.unpack(endian + "I", data[offset + 8:offset + 12])[0]
        frame = data[offset + 16:offset + 16 + caplen]
        offset += 16 + caplen
        if len(frame) < 14 + 20 or frame[12:14] != b"\x08\x00":
            continue
        ip = frame[14:]
        ihl = (ip[0] & 0x0F) * 4
        src, dst = ".".join(str(b) for b in ip[12:16]), ".".join(str(b) for b in ip[16:20])
        proto, length = ip[9], struct.unpack("!H", ip[2:4])[0]
        dport, payload = None, b""
        if proto == 17 and len(ip) >= ihl + 8:
            dport, payload = struct.unpack("!H", ip[ihl + 2:ihl + 4])[0], ip[ihl + 8:]
        packets.append((src, dst, proto, length, dport, payload))
    return packets


def address_gid_index(port, address):
    """The index of the RoCE v2 GID of an IPv4 address on a port parsed from ibv_devinfo -v (rxe0 holds the bond's
    and its VLAN's: the test's RoCE traffic rides the VLAN that the ESP policy covers)."""
    for gid in port["gids"]:
        if (gid.get("type") or "").replace(" ", "").lower() == "rocev2" and \
                ipaddress.IPv6Address(gid["gid"]).ipv4_mapped == ipaddress.IPv4Address(address):
            return gid["index"]
    return None


def test_roce_v2_on_the_protected_link(host, capsys):
    """What RDMA does with the ESP policy of its link installed, on Soft-RoCE: the policy is no guarantee.

    Measured on Debian's 6.1 kernel: rxe sends its requests (the 1 KiB SENDs) through the kernel's IP output and
    so through the ESP SA, but its responder's acknowledgements leave in clear, RoCE v2 on UDP 4791 with a
    readable transport header. (A hardware RoCE NIC builds every packet itself and none passes XFRM; this lab has
    none.)
    """
    name = name_of(host)
    if name != "vm01":
        pytest.skip("one ib_send_bw run, vm01 to vm02")
    server = peer_of(host)
    port = parse_ibv_devinfo(host.check_output("ibv_devinfo -v -d rxe0"))["devices"][0]["ports"][0]
    gid_index = address_gid_index(port, VLAN_ADDRESS[name])
    assert port["state"] == "ACTIVE" and gid_index is not None, port
    # The ESP policy covering the two addresses is installed while RoCE runs.
    policies = host.check_output("ip xfrm policy")
    assert re.search(r"src %s/32 dst %s/32 \n\s+dir out" % (VLAN_ADDRESS["vm01"], VLAN_ADDRESS["vm02"]), policies), policies
    host.run("rm -f /tmp/roce.pcap")
    capture = ("timeout 120 tcpdump -i %s -nn -s 128 -U -w /tmp/roce.pcap 'udp port %d or esp' "
               ">/tmp/roce.tcpdump.log 2>&1 & echo $!" % (VLAN, ROCE_PORT))
    tcpdump_pid = host.check_output("sh -c %s" % _quote(capture)).strip()
    server_gid = address_gid_index(parse_ibv_devinfo(server.check_output("ibv_devinfo -v -d rxe0"))
                                   ["devices"][0]["ports"][0], VLAN_ADDRESS["vm02"])
    server_command = ("timeout 120 ib_send_bw -d rxe0 -x %d -n 50 -s 1024 "
                      ">/tmp/ib_send_bw.server 2>&1 </dev/null & echo started" % server_gid)
    server.check_output("sh -c %s" % _quote(server_command))
    deadline = time.monotonic() + 60
    while True:
        client = host.run("timeout 90 ib_send_bw -d rxe0 -x %d -n 50 -s 1024 %s" % (gid_index, VLAN_ADDRESS["vm02"]))
        if client.rc == 0 or time.monotonic() > deadline:
            break
        time.sleep(3)  # the server was not listening yet
    host.run("sleep 2; kill -INT %s; sleep 1" % tcpdump_pid)
    assert client.rc == 0, client.stdout + client.stderr
    local_qpn = re.search(r"local address:.*QPN (0x[0-9a-f]+)", client.stdout)
    assert local_qpn, client.stdout
    packets = _pcap_ipv4(host.file("/tmp/roce.pcap").content)
    summary = host.check_output("tcpdump -r /tmp/roce.pcap -nn 2>/dev/null | cut -d' ' -f2- | "
                                "sed -E 's/seq=0x[0-9a-f]+/seq=N/; s/\\.[0-9]+ >/ >/' | sort | uniq -c")
    clear = [p for p in packets if p[2] == 17 and p[4] == ROCE_PORT]
    sends_in_esp = [p for p in packets if p[2] == 50 and p[0] == VLAN_ADDRESS["vm01"] and p[3] > 1024]
    with capsys.disabled():
        print("\nRoCE v2 with the ESP policy installed (tcpdump on vm01 %s):\n%s" % (VLAN, summary))
    # RoCE v2 in clear on the protected link: acknowledgements from the server, their transport header (BTH)
    # readable: opcode RC ACKNOWLEDGE (0x11), destination QP the client's queue pair.
    assert len(clear) >= 50, summary
    assert {(p[0], p[1]) for p in clear} == {(VLAN_ADDRESS["vm02"], VLAN_ADDRESS["vm01"])}, summary
    assert {p[5][0] for p in clear} == {0x11}, summary
    assert {int.from_bytes(p[5][5:8], "big") for p in clear} == {int(local_qpn.group(1), 16)}, summary
    # The 1 KiB SENDs themselves went through the SA: Soft-RoCE is software in the kernel's IP stack.
    assert len(sends_in_esp) >= 50, summary


def _quote(text):
    return "'" + text.replace("'", "'\"'\"'") + "'"


def test_the_collection_names_the_roce_rail_the_policy_does_not_encrypt(host):
    # The role's verify module, run on the host as the role runs it: rxe0's address is inside this host's traffic
    # selector, so swanctl_verify must say that RoCE on it bypasses kernel IPsec (what the capture test shows).
    name = name_of(host)
    expected = [{"peer": PEER[name], "ike": "gf-" + PEER[name], "child": "gf-" + PEER[name],
                 "remote_host": VLAN_ADDRESS[PEER[name]]}]
    args = json.dumps({"expected": expected, "traffic_selectors": [VLAN_ADDRESS[name] + "/32"],
                       "fail_on_problems": False})
    result = host.ansible("gpufabric.core.swanctl_verify", args, check=False)
    # Both RDMA devices are found; only rxe0 carries an address inside the selector (rxe1 is on the other rail).
    assert result["rdma_devices"] == ["rxe0", "rxe1"], result
    assert [(entry["device"], entry["netdev"], entry["address"]) for entry in result["roce_unencrypted"]] == [
        ("rxe0", VLAN, VLAN_ADDRESS[name])], result
    assert result["roce_warnings"] == [
        "RoCE on rxe0 (%s, %s) bypasses kernel IPsec: not encrypted" % (VLAN, VLAN_ADDRESS[name])], result


# --- Faults, last: a cable pulled, then a change that cuts the host off --------------------------------------------

def vmlab(*args):
    subprocess.run([str(VMLAB), *args], check=True, capture_output=True, text=True, timeout=120)


# The health alert of a member without its LACP partner (plugins/module_utils/health/rules.py) and the labels of its
# contract with the remediation loop (docs/alerts.md).
BOND_ALERT = "GpufabricBondPartnerLost"
BOND_ALERT_CONTRACT = {"gpufabric_scope": "node", "gpufabric_remediation": "drain", "severity": "warning"}
# Scrape and evaluation interval of the test's Prometheus: node_exporter's scrape under TCG takes a good part of a
# second of the VM's one emulated CPU.
MONITORING_INTERVAL = "2s"
# An alert reaches Alertmanager bond_for (4 s, molecule.yml) after a sample (1 s), a scrape and an evaluation (2 s
# each) have seen the member out of sync: the deadlines leave room for a loaded machine.
ALERT_S = 90


def metrics_forward(name):
    """This machine's end of the VM's forward of node_exporter's port (scripts/vmlab.sh, molecule.yml's
    GPUFABRIC_VMLAB_METRICS_PORT)."""
    return int(os.environ["GPUFABRIC_VMLAB_METRICS_PORT"]) + NUMBER[name]


def test_a_pulled_cable_keeps_traffic_flowing_and_is_named(host, capsys):
    """ens5's cable pulled at both ends: bond_verify names it, traffic keeps flowing over ens4, and the health role's
    series raise GpufabricBondPartnerLost in Prometheus and Alertmanager, naming host, bond and member, on both VMs;
    with the cable back the bond is whole and the alerts resolve."""
    if name_of(host) != "vm01":
        pytest.skip("the cable is pulled once, from vm01")
    started = time.monotonic()
    # gpufabric.core.health on both VMs, once (molecule.yml says why not in converge).
    returncode, output = playbook(str(ROOT / "playbooks" / "health.yml"))
    assert returncode == 0, output[-6000:]
    deployed = time.monotonic()
    # Prometheus scrapes each VM through its forward, as the monitoring playbook would write the target (no target
    # labels in this inventory: the label host alone).
    targets = [{"name": name, "address": "127.0.0.1", "port": metrics_forward(name), "labels": {}} for name in NUMBER]
    thresholds = host.ansible.get_variables()["health_thresholds"]
    with health_lab.local_monitoring(EPHEMERAL / "monitoring", targets, thresholds, MONITORING_INTERVAL) as api:
        # Healthy first: both VMs scraped, both members of both bonds in sync, no alert pending or firing.
        health_lab.wait_for("both VMs scraped and their 4 bond members in sync",
                            lambda: health_lab.series_count(api["prometheus"], 'up{job="gpufabric"} == 1') == 2
                            and health_lab.series_count(api["prometheus"], "gpufabric_bond_member_in_sync == 1") == 4, ALERT_S)
        health_lab.wait_for("no alert", lambda: not health_lab.prometheus_alerts(api["prometheus"]), ALERT_S)
        assert health_lab.alertmanager_alerts(api["alertmanager"]) == []
        healthy = time.monotonic()
        since = time.time()
        vmlab("link", "vm01", "ens5", "off")
        pulled = time.monotonic()
        seconds = {}
        try:
            # bond_verify names the member whose link is down.
            problems = wait_for(lambda: [p for p in bond_verify(read_bond(host), EXPECTED) if "ens5" in p], 30)
            assert problems, bond_verify(read_bond(host), EXPECTED)
            bond = parse_bonding(read_bond(host))
            state = {slave["name"]: slave["mii_status"] for slave in bond["slaves"]}
            assert state == {"ens4": "up", "ens5": "down"}
            # Traffic keeps flowing over the remaining member, in 9000-byte frames (ESP's largest packets on the VLAN).
            ping = host.run("ping -c 20 -i 0.2 -W 5 -M do -s %d %s" % (ESP_PATH_MTU - 28, VLAN_ADDRESS["vm02"]))
            assert ping.rc == 0 and " 0% packet loss" in ping.stdout, ping.stdout + ping.stderr
            # The alert, on both VMs: the cable is pulled at both ends, so vm02's ens5 lost its carrier as well.
            # Exactly the contract's labels, the series' host, bond and member, and the scrape target's.
            for name in NUMBER:
                labels = {"host": name, "bond": "bond0", "netdev": "ens5"}
                alerts, _waited = health_lab.wait_alert(api["prometheus"], api["alertmanager"], BOND_ALERT, labels,
                                                        ALERT_S)
                seconds[name] = time.monotonic() - pulled
                assert [alert["labels"] for alert in alerts] == [dict(
                    labels, alertname=BOND_ALERT, instance="127.0.0.1:%d" % metrics_forward(name), job="gpufabric",
                    **BOND_ALERT_CONTRACT)], alerts
                assert alerts[0]["annotations"]["summary"] == \
                    "%s bond bond0 member ens5 has no LACP partner in sync" % name, alerts
                with capsys.disabled():
                    print("\n%s seen in Alertmanager %.1f s after the pull: %s"
                          % (BOND_ALERT, seconds[name], json.dumps(alerts[0]["labels"], sort_keys=True)))
        finally:
            vmlab("link", "vm01", "ens5", "on")
        restored = time.monotonic()
        assert wait_for(lambda: bond_verify(read_bond(host), EXPECTED) == [], 60), \
            bond_verify(read_bond(host), EXPECTED)
        for name in NUMBER:
            health_lab.wait_resolved(api["prometheus"], api["alertmanager"], BOND_ALERT,
                                     {"host": name, "bond": "bond0", "netdev": "ens5"}, ALERT_S)
        resolved = time.monotonic()
        # Nothing but the pulled member's alert, on its two ends, fired from the pull to now.
        fired = health_lab.fired_since(api["prometheus"], since)
        assert sorted((alert["alertname"], alert.get("host"), alert.get("bond"), alert.get("netdev"))
                      for alert in fired) == [
            (BOND_ALERT, "vm01", "bond0", "ens5"), (BOND_ALERT, "vm02", "bond0", "ens5")], fired
    with capsys.disabled():
        print("\nhealth on the VMs: playbooks/health.yml %.0f s, Prometheus up and the lab healthy %.0f s, cable "
              "pulled -> alert in Alertmanager %s, cable back -> resolved %.0f s; the test %.0f s"
              % (deployed - started, healthy - deployed,
                 ", ".join("%s %.0f s" % item for item in sorted(seconds.items())), resolved - restored,
                 time.monotonic() - started))


def test_rollback_over_the_bond(host, capsys):
    """vm02's SSH session runs over bond0; a change that cuts it is reverted by vm02's own timer."""
    if name_of(host) != "vm01":
        pytest.skip("one rollback, of vm02 reached through vm01")
    evidence = EPHEMERAL / "rollback-over-bond.json"
    if evidence.exists():
        evidence.unlink()
    started = time.time()
    returncode, output = playbook(str(SCENARIO / "rollback.yml"))
    assert returncode == 0, output[-6000:]
    result = json.loads(evidence.read_text())
    # The session was on the bond: sshd on vm02 saw vm01's bond address as the client, its own as the server.
    assert result["connection"].split()[0::2] == ["192.168.40.1", "192.168.40.2"], result["connection"]
    message = result["message"]
    assert "was reverted" in message and "Wait for the host to answer on a new connection" in message, message
    assert "rollback exit status 0" in message and "(all identical)" in message, message
    assert result["after"] == result["before"] and result["before"], result
    assert " 192.168.40.2/24 " in result["addresses"] and "192.168.40.202" not in result["addresses"], result
    # The timer, not the controller, restored it: the controller's revert-now could not reach the node.
    assert "the change was not confirmed in time" in result["rollback_log"], result["rollback_log"]
    assert "requested by the controller" not in result["rollback_log"], result["rollback_log"]
    restore = result["rollback_done_at"] - result["armed_at"]
    back = result["ssh_back_at"] - result["armed_at"]
    assert result["rollback_timeout"] <= restore < result["rollback_timeout"] + 60, result
    with capsys.disabled():
        print("\nrollback over the bond: armed -> vm02's rollback done %.1f s (timer %d s), armed -> SSH over the "
              "bond back %.1f s, whole play %.1f s" % (restore, result["rollback_timeout"], back,
                                                       time.time() - started))
    # The bond is whole again on both sides.
    assert wait_for(lambda: bond_verify(read_bond(host), EXPECTED) == [], 60), bond_verify(read_bond(host), EXPECTED)
    ping = host.run("ping -c 3 -W 5 192.168.40.2")
    assert ping.rc == 0, ping.stdout + ping.stderr
