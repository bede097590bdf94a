# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rendering for netplan, systemd-networkd and NetworkManager, and reading what their tools say."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.gpufabric.core.plugins.module_utils.bonding import config as bc

DATA = Path(__file__).resolve().parent / "data"

CONFIG = bc.normalize(
    bonds=[{"name": "bond0", "members": ["ens1f0np0", "B8:CE:F6:01:02:03"], "addresses": ["10.10.0.5/24"],
            "routes": [{"to": "default", "via": "10.10.0.1", "metric": 100},
                       {"to": "10.20.0.0/16", "via": "10.10.0.254", "table": 100}],
            "routing_policy": [{"from": "10.10.0.0/24", "table": 100, "priority": 100}]},
           {"name": "bond1", "mode": "active-backup", "members": ["eno1", "eno2"], "primary": "eno1", "mtu": 1500}],
    vlans=[{"id": 100, "link": "bond0", "addresses": ["10.100.0.5/24", "fd00:100::5/64"]}],
    ethernets=[{"name": "eth9", "addresses": ["192.0.2.10/24"], "routes": [{"to": "198.51.100.0/24"}]}])


def data(name):
    text = (DATA / name).read_text()
    return text.split("\n", 1)[1] if text.startswith("# source:") else text


def ini(text):
    return bc.keyfile_pairs(text)


def test_networkd_files_and_bond_settings():
    files = bc.render_networkd(CONFIG)
    assert sorted(files) == [
        "10-gpufabric-bond0-member-bond0-port1.network", "10-gpufabric-bond0-member-ens1f0np0.network",
        "10-gpufabric-bond0.100.netdev", "10-gpufabric-bond0.100.network", "10-gpufabric-bond0.netdev",
        "10-gpufabric-bond0.network", "10-gpufabric-bond1-member-eno1.network",
        "10-gpufabric-bond1-member-eno2.network", "10-gpufabric-bond1.netdev", "10-gpufabric-bond1.network",
        "10-gpufabric-eth9.network"]
    bond = ini(files["10-gpufabric-bond0.netdev"])
    assert bond[("NetDev", "Kind")] == "bond" and bond[("NetDev", "MTUBytes")] == "9000"
    assert (bond[("Bond", "Mode")], bond[("Bond", "LACPTransmitRate")], bond[("Bond", "TransmitHashPolicy")],
            bond[("Bond", "MIIMonitorSec")], bond[("Bond", "AdSelect")], bond[("Bond", "MinLinks")]) == (
        "802.3ad", "fast", "layer3+4", "100ms", "stable", "1")
    backup = ini(files["10-gpufabric-bond1.netdev"])
    assert ("Bond", "LACPTransmitRate") not in backup and backup[("Bond", "Mode")] == "active-backup"
    assert "PrimarySlave=yes" in files["10-gpufabric-bond1-member-eno1.network"]
    # A member chosen by MAC matches the permanent address: the bond and its VLANs carry the same current MAC.
    assert "PermanentMACAddress=b8:ce:f6:01:02:03" in files["10-gpufabric-bond0-member-bond0-port1.network"]
    network = files["10-gpufabric-bond0.network"]
    assert "VLAN=bond0.100" in network and "Address=10.10.0.5/24" in network
    assert "[RoutingPolicyRule]\nFrom=10.10.0.0/24\nTable=100\nPriority=100" in network
    assert "[Route]\nDestination=10.20.0.0/16\nGateway=10.10.0.254\nTable=100" in network
    vlan = ini(files["10-gpufabric-bond0.100.netdev"])
    assert (vlan[("NetDev", "Kind")], vlan[("VLAN", "Id")]) == ("vlan", "100")
    assert all(text.startswith("# " + bc.MANAGED_HEADER) for text in files.values())


def test_netplan_yaml_is_what_netplan_expects():
    (name, text), = bc.render_netplan(CONFIG).items()
    assert name == "60-gpufabric-bonding.yaml"
    network = yaml.safe_load(text)["network"]
    assert network["version"] == 2
    assert network["ethernets"]["bond0-port1"] == {"match": {"macaddress": "b8:ce:f6:01:02:03"}}
    assert network["ethernets"]["ens1f0np0"] == {}
    assert network["bonds"]["bond0"]["interfaces"] == ["ens1f0np0", "bond0-port1"]
    assert network["bonds"]["bond0"]["parameters"] == {
        "mode": "802.3ad", "mii-monitor-interval": 100, "lacp-rate": "fast", "transmit-hash-policy": "layer3+4",
        "ad-select": "stable", "min-links": 1}
    assert network["bonds"]["bond0"]["routes"][0] == {"to": "default", "via": "10.10.0.1", "metric": 100}
    assert network["bonds"]["bond0"]["routing-policy"] == [{"from": "10.10.0.0/24", "table": 100, "priority": 100}]
    assert network["bonds"]["bond1"]["parameters"] == {
        "mode": "active-backup", "mii-monitor-interval": 100, "primary": "eno1"}
    assert network["vlans"]["bond0.100"] == {"id": 100, "link": "bond0",
                                             "addresses": ["10.100.0.5/24", "fd00:100::5/64"]}
    assert network["ethernets"]["eth9"]["routes"] == [{"to": "198.51.100.0/24"}]
    # "802.3ad" must stay a string, never a float: every string is quoted.
    assert 'mode: "802.3ad"' in text


def test_netplan_renderer_is_optional():
    assert "renderer" not in yaml.safe_load(bc.render_netplan(CONFIG)["60-gpufabric-bonding.yaml"])["network"]
    text = bc.render_netplan(CONFIG, renderer="NetworkManager")["60-gpufabric-bonding.yaml"]
    assert yaml.safe_load(text)["network"]["renderer"] == "NetworkManager"


def test_networkmanager_keyfiles():
    files = bc.render_networkmanager(CONFIG)
    bond = ini(files["gpufabric-bond0.nmconnection"])
    assert bond[("connection", "uuid")] == bc.connection_uuid("gpufabric-bond0")
    assert (bond[("bond", "mode")], bond[("bond", "lacp_rate")], bond[("bond", "xmit_hash_policy")]) == (
        "802.3ad", "fast", "layer3+4")
    assert bond[("ipv4", "route1")] == "0.0.0.0/0,10.10.0.1,100"
    assert bond[("ipv4", "route2_options")] == "table=100"
    assert bond[("ipv4", "routing-rule1")] == "priority 100 from 10.10.0.0/24 table 100"
    assert bond[("ipv6", "method")] == "disabled"
    port = ini(files["gpufabric-bond0-port-bond0-port1.nmconnection"])
    assert port[("connection", "master")] == bond[("connection", "uuid")]
    assert port[("ethernet", "mac-address")] == "B8:CE:F6:01:02:03"
    assert ("connection", "interface-name") not in port
    vlan = ini(files["gpufabric-bond0.100.nmconnection"])
    assert (vlan[("vlan", "id")], vlan[("vlan", "parent")]) == ("100", bond[("connection", "uuid")])
    assert vlan[("ipv6", "address1")] == "fd00:100::5/64"
    eth = ini(files["gpufabric-eth9.nmconnection"])
    # A route without gateway but with no metric stays DEST/PLEN; NetworkManager's own keyfile syntax.
    assert eth[("ipv4", "route1")] == "198.51.100.0/24"


def test_rendering_is_deterministic():
    assert bc.render_networkmanager(CONFIG) == bc.render_networkmanager(bc.normalize(
        bonds=[{"name": "bond0", "members": ["ens1f0np0", "B8:CE:F6:01:02:03"], "addresses": ["10.10.0.5/24"],
                "routes": [{"to": "default", "via": "10.10.0.1", "metric": 100},
                           {"to": "10.20.0.0/16", "via": "10.10.0.254", "table": 100}],
                "routing_policy": [{"from": "10.10.0.0/24", "table": 100, "priority": 100}]},
               {"name": "bond1", "mode": "active-backup", "members": ["eno1", "eno2"], "primary": "eno1",
                "mtu": 1500}],
        vlans=[{"id": 100, "link": "bond0", "addresses": ["10.100.0.5/24", "fd00:100::5/64"]}],
        ethernets=[{"name": "eth9", "addresses": ["192.0.2.10/24"], "routes": [{"to": "198.51.100.0/24"}]}]))


def test_nmcli_silently_drops_bad_bond_options_and_we_notice():
    """Real nmcli 1.42.4 output: exit status 0, lacp_rate=turbo and xmit_hash_policy=layer9 simply vanish."""
    bad = (DATA / "nm-bond0-bad.nmconnection").read_text()
    problems = bc.keyfile_dropped_settings(bad, data("nmcli-offline-bond0-bad.txt"))
    assert problems == ["[bond] lacp_rate=turbo was dropped by NetworkManager",
                        "[bond] xmit_hash_policy=layer9 was dropped by NetworkManager"]
    good = (DATA / "nm-bond0-good.nmconnection").read_text()
    assert bc.keyfile_dropped_settings(good, data("nmcli-offline-bond0-good.txt")) == []


def test_networkd_log_lines_about_our_files():
    """Lines as systemd-networkd 252 printed them when loading a bad .netdev in an isolated namespace."""
    log = data("networkd-252-bad-netdev.txt")
    problems = bc.networkd_file_problems(log, ["10-bond.netdev"])
    assert problems == [
        "/etc/systemd/network/10-bond.netdev:8: Failed to parse bond transmit hash policy, ignoring: layer9",
        "/etc/systemd/network/10-bond.netdev:9: Failed to parse bond lacp rate, ignoring: turbo",
        "/etc/systemd/network/10-bond.netdev:10: Unknown key 'Foo' in section [Bond], ignoring."]
    assert bc.networkd_file_problems(log, ["20-other.network"]) == []


@pytest.mark.parametrize("capture", ["networkd-252-sandbox-debug.txt", "networkd-257-sandbox-debug.txt"])
def test_networkd_sandbox_log_at_debug_level(capture):
    """The validator's sandbox as systemd 252 (Debian 12) and 257 (Debian 13) print it at debug level: 257 words the
    parse errors differently, confirms every file it loaded, and says "Enumeration completed." only at that level."""
    log = data(capture)
    problems = bc.networkd_file_problems(log, ["10-bond.netdev", "10-bond.network"])
    assert [line.split(": ", 1)[0] for line in problems] == [
        "/etc/systemd/network/10-bond.netdev:8", "/etc/systemd/network/10-bond.netdev:9",
        "/etc/systemd/network/10-bond.netdev:10"]
    assert "layer9" in problems[0] and "turbo" in problems[1] and "Unknown key 'Foo'" in problems[2]
    assert "Enumeration completed" in log


@pytest.mark.parametrize("capture", ["networkd-252-sandbox-debug.txt", "networkd-257-sandbox-debug.txt"])
def test_networkd_file_it_cannot_read_is_a_problem(capture):
    """A file networkd cannot open would be skipped at boot: both releases' wordings are caught."""
    problems = bc.networkd_file_problems(data(capture), ["20-secret.network"])
    assert len(problems) == 1 and "/etc/systemd/network/20-secret.network" in problems[0]
    assert problems[0].endswith("Permission denied")
