# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the bonding role left on each lab node, checked with the real tools inside the node.

The lab kernel has no bonding or 802.1Q driver: bonds and VLANs are never up here. These tests check the files,
their validation by netplan / systemd-networkd / nmcli, the activation and confirmation (networkd) and ECMP.
"""

from __future__ import annotations

import pytest

# podman exec per check (why: tests/molecule_helpers.py)
testinfra_hosts = ["podman://bonding-networkd", "podman://bonding-netplan", "podman://bonding-nm"]

NETWORKD_DIR = "/etc/systemd/network"
NETWORKD_FILES = [
    "10-gpufabric-bond0.netdev", "10-gpufabric-bond0.network", "10-gpufabric-bond0-member-ens1f0np0.network",
    "10-gpufabric-bond0-member-ens1f1np1.network", "10-gpufabric-bond1.netdev", "10-gpufabric-bond1.network",
    "10-gpufabric-bond1-member-bond1-port0.network", "10-gpufabric-bond1-member-bond1-port1.network",
    "10-gpufabric-bond0.200.netdev", "10-gpufabric-bond0.200.network", "10-gpufabric-training.netdev",
    "10-gpufabric-training.network"]
NM_DIR = "/etc/NetworkManager/system-connections"


# The scenario's host_vars, by instance name: asking Ansible for the variables costs seconds per test.
BACKENDS = {"bonding-networkd": "networkd", "bonding-netplan": "netplan", "bonding-nm": "networkmanager"}


def backend(host):
    return BACKENDS[host.backend.get_hostname()]


def test_networkd_files_and_the_kernel_refusing_the_bond(host):
    if backend(host) != "networkd":
        pytest.skip("networkd node only")
    for name in NETWORKD_FILES:
        managed = host.file("%s/%s" % (NETWORKD_DIR, name))
        assert managed.exists and managed.user == "root" and managed.mode == 0o644, name
    netdev = host.file(NETWORKD_DIR + "/10-gpufabric-bond0.netdev").content_string
    for line in ("Kind=bond", "Mode=802.3ad", "LACPTransmitRate=fast", "TransmitHashPolicy=layer3+4",
                 "MIIMonitorSec=100ms", "MinLinks=1", "MTUBytes=9000", "AdSelect=stable"):
        assert line in netdev.splitlines()
    training = host.file(NETWORKD_DIR + "/10-gpufabric-training.network").content_string
    assert "Address=fd00:30::11/64" in training and "[RoutingPolicyRule]\nFrom=10.30.0.0/24\nTable=300" in training
    assert "PermanentMACAddress=b8:ce:f6:0a:0b:0c" in host.file(
        NETWORKD_DIR + "/10-gpufabric-bond1-member-bond1-port0.network").content_string
    # The running networkd loaded the files and asked the kernel for the bonds: this kernel has no bonding driver.
    # systemd 257 (Debian 13) words the refusal differently from 252 (Debian 12): the node's own version decides.
    systemd_version = int(host.check_output("systemctl --version").split()[1])
    refused = "Failed to create netdev" if systemd_version >= 257 else "netdev could not be created"
    journal = host.check_output("journalctl -u systemd-networkd --no-pager -o cat")
    assert "bond0: %s: Operation not supported" % refused in journal
    assert "bond1: %s: Operation not supported" % refused in journal
    # ...and found nothing to ignore in them.
    assert "10-gpufabric" not in journal
    assert not host.file("/proc/net/bonding/bond0").exists


def test_networkd_change_was_confirmed_and_the_timer_disarmed(host):
    if backend(host) != "networkd":
        pytest.skip("networkd node only")
    assert host.file("/var/lib/gpufabric/bonding/current/confirmed").exists
    assert host.file("/var/lib/gpufabric/bonding/current/apply.rc").content_string.strip() == "0"
    assert not host.file("/var/lib/gpufabric/bonding/current/rollback.started").exists
    timer = host.run("systemctl is-active gpufabric-bonding-rollback.timer")
    assert timer.stdout.strip() in ("inactive", "unknown") or timer.rc != 0
    assert host.service("systemd-networkd").is_running


def test_netplan_file_is_accepted_by_netplan_generate(host):
    if backend(host) != "netplan":
        pytest.skip("netplan node only")
    managed = host.file("/etc/netplan/60-gpufabric-bonding.yaml")
    assert managed.exists and managed.mode == 0o600
    assert 'lacp-rate: "fast"' in managed.content_string
    host.check_output("rm -rf /tmp/np && mkdir -p /tmp/np/etc/netplan && cp /etc/netplan/*.yaml /tmp/np/etc/netplan/")
    generated = host.run("netplan generate --root-dir /tmp/np")
    assert generated.rc == 0, generated.stderr
    # netplan renders for networkd: the bond's options survive into its .netdev.
    netdev = host.file("/tmp/np/run/systemd/network/10-netplan-bond0.netdev").content_string
    assert "LACPTransmitRate=fast" in netdev and "TransmitHashPolicy=layer3+4" in netdev


def test_netplan_rejects_what_the_role_would_refuse_anyway(host):
    """netplan generate rejects a bad mode; 0.106 (Debian 12) accepts lacp-rate turbo, which is why the role validates
    on its own, and 1.1 (Debian 13) rejects it too. The node's installed netplan decides which is expected."""
    if backend(host) != "netplan":
        pytest.skip("netplan node only")
    netplan_major = int(host.check_output("dpkg-query -W -f='${Version}' netplan.io").split(".")[0])
    source = "/etc/netplan/60-gpufabric-bonding.yaml"
    host.check_output("rm -rf /tmp/npbad && mkdir -p /tmp/npbad/etc/netplan")
    host.check_output("sed 's/lacp-rate: \"fast\"/lacp-rate: \"turbo\"/' %s > /tmp/npbad/etc/netplan/x.yaml" % source)
    turbo = host.run("netplan generate --root-dir /tmp/npbad")
    if netplan_major >= 1:
        assert turbo.rc != 0 and "unknown lacp-rate value 'turbo'" in turbo.stderr
    else:
        assert turbo.rc == 0
        assert "LACPTransmitRate=turbo" in host.file(
            "/tmp/npbad/run/systemd/network/10-netplan-bond0.netdev").content_string
    host.check_output("sed 's/mode: \"802.3ad\"/mode: \"802.3ae\"/' %s > /tmp/npbad/etc/netplan/x.yaml" % source)
    rejected = host.run("netplan generate --root-dir /tmp/npbad")
    assert rejected.rc != 0 and "unknown bond mode '802.3ae'" in rejected.stderr


def test_networkmanager_keyfiles_pass_nmcli_offline(host):
    if backend(host) != "networkmanager":
        pytest.skip("NetworkManager node only")
    names = host.check_output("ls %s" % NM_DIR).split()
    assert sorted(names) == sorted([
        "gpufabric-bond0.nmconnection", "gpufabric-bond0-port-ens1f0np0.nmconnection",
        "gpufabric-bond0-port-ens1f1np1.nmconnection", "gpufabric-bond1.nmconnection",
        "gpufabric-bond1-port-bond1-port0.nmconnection", "gpufabric-bond1-port-bond1-port1.nmconnection",
        "gpufabric-bond0.200.nmconnection", "gpufabric-training.nmconnection"])
    for name in names:
        keyfile = host.file("%s/%s" % (NM_DIR, name))
        assert keyfile.mode == 0o600 and keyfile.user == "root", name
        checked = host.run("nmcli --offline connection modify connection.id %s < %s/%s"
                           % (name[:-len(".nmconnection")], NM_DIR, name))
        assert checked.rc == 0, checked.stderr
    bond = host.run("nmcli --offline connection modify connection.id gpufabric-bond0 < %s/gpufabric-bond0.nmconnection"
                    % NM_DIR).stdout
    assert "lacp_rate=fast" in bond and "xmit_hash_policy=layer3+4" in bond and "mode=802.3ad" in bond


def test_not_activated_backends_keep_a_backup_but_arm_nothing(host):
    if backend(host) == "networkd":
        pytest.skip("activated on the networkd node")
    # bonding_activate: false - the transaction (manifest, backups) is kept for a manual rollback, nothing ran.
    manifest = host.file("/var/lib/gpufabric/bonding/current/manifest").content_string.splitlines()
    assert manifest and all(line.startswith("create\t") for line in manifest)
    assert not host.file("/var/lib/gpufabric/bonding/current/apply.rc").exists
    assert host.run("systemctl is-active gpufabric-bonding-rollback.timer").rc != 0


def test_ecmp_sysctls_persisted(host):
    conf = host.file("/etc/sysctl.d/90-gpufabric-ecmp.conf").content_string.split()
    assert sorted(conf) == ["net.ipv4.fib_multipath_hash_policy=1", "net.ipv6.fib_multipath_hash_policy=1"]


def test_helper_and_the_directory_its_copy_created(host):
    # /usr/local/libexec is not in Debian's base: bond_config, which installs the helper, creates it (0755, root).
    directory = host.file("/usr/local/libexec")
    assert directory.is_directory and directory.user == "root" and directory.group == "root"
    assert directory.mode == 0o755
    helper = host.file("/usr/local/libexec/gpufabric-bonding-activate")
    assert helper.user == "root" and helper.mode == 0o755


def test_backend_packages_installed_without_recommends(host):
    # NetworkManager recommends ModemManager, wpasupplicant and ppp: not for a GPU server's bonds.
    if backend(host) == "networkmanager":
        assert host.package("network-manager").is_installed
        assert not host.package("modemmanager").is_installed
        assert not host.package("wpasupplicant").is_installed
    elif backend(host) == "netplan":
        assert host.package("netplan.io").is_installed
