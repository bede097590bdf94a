# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/site.yml on bare VMs, read back from their kernels: one run is enough.

Before the run the VMs had no bond and no RDMA device; the run made both after its discover play took their
topology (the bonding play, then the Soft-RoCE play). The nccl and verify roles must have discovered again:
NCCL_IB_HCA lists the devices the run made (or those gpufabric_rail_interfaces names), NCCL_IB_GID_INDEX is their
VLAN's RoCE v2 GID as the kernel's table holds it, and the bandwidth sweep tested exactly those rails. A second
run changes nothing.

Input, from the environment (tests/vm/run_site_one_run.sh sets them; a Molecule scenario sets the first from its
own inventory):
  GPUFABRIC_SITE_ONE_RUN_INVENTORY   the inventory the run used (a file or directory, with the VMs' connection)
  GPUFABRIC_SITE_ONE_RUN_REPORT      the verify role's verify.json of that run (the sweep's tests)
  GPUFABRIC_SITE_ONE_RUN_RECAP       the output of a second run of site.yml (its PLAY RECAP), when there was one
The host variables read here are the run's own: gpufabric_soft_roce, bonding_vlans, gpufabric_rail_interfaces.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re

import pytest
import testinfra

INVENTORY = os.environ.get("GPUFABRIC_SITE_ONE_RUN_INVENTORY", "")
REPORT = os.environ.get("GPUFABRIC_SITE_ONE_RUN_REPORT", "")
RECAP = os.environ.get("GPUFABRIC_SITE_ONE_RUN_RECAP", "")
HOSTS = ("vm01", "vm02")

pytestmark = pytest.mark.skipif(not INVENTORY, reason="GPUFABRIC_SITE_ONE_RUN_INVENTORY is not set: no VMs to read")
testinfra_hosts = ["ansible://%s?ansible_inventory=%s" % (name, INVENTORY) for name in HOSTS] if INVENTORY else []


def _name(host):
    return host.backend.get_hostname()


def _rails(variables):
    """The rails this host's run must have resolved: [(device, netdev)] in rail order.

    gpufabric_rail_interfaces names the netdevs when set; otherwise, on these GPU-less VMs, the rails are the RDMA
    devices with an ACTIVE port in the natural order of their names (every device made here is ACTIVE).
    """
    devices = {device["netdev"]: device["name"] for device in variables["gpufabric_soft_roce"]}
    named = variables.get("gpufabric_rail_interfaces")
    if named:
        return [(devices[netdev], netdev) for netdev in named]
    by_name = {name: netdev for netdev, name in devices.items()}
    return [(name, by_name[name]) for name in sorted(by_name, key=lambda text: [
        int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text)])]


def _nccl_conf(host):
    values = {}
    for line in host.file("/etc/nccl.conf").content_string.splitlines():
        if line and not line.startswith("#"):
            name, _sep, value = line.partition("=")
            values[name] = value
    return values


def _vlan_ipv4_gid_index(host, device, vlan_netdev):
    """The index of the IPv4 RoCE v2 GID of vlan_netdev in device's port 1 table, read from sysfs."""
    base = "/sys/class/infiniband/%s/ports/1" % device
    found = []
    # One grep over the table: unset entries fail to read and are left out (-s), only readable ones are listed.
    listing = host.run("cd %s && grep -sH . gids/* gid_attrs/ndevs/* gid_attrs/types/*" % base).stdout
    table = {}
    for line in listing.splitlines():
        path, _sep, value = line.partition(":")
        kind, _slash, index = path.rpartition("/")
        table.setdefault(int(index), {})[kind] = value
    for index, entry in sorted(table.items()):
        if entry.get("gid_attrs/ndevs") != vlan_netdev or entry.get("gid_attrs/types") != "RoCE v2":
            continue
        if ipaddress.IPv6Address(entry["gids"]).ipv4_mapped is not None:
            found.append(index)
    assert len(found) == 1, (device, vlan_netdev, table)
    return found[0]


def test_the_soft_roce_devices_exist_on_their_netdevs_with_their_units(host):
    for device in host.ansible.get_variables()["gpufabric_soft_roce"]:
        base = "/sys/class/infiniband/%s" % device["name"]
        assert host.file(base + "/parent").content_string.strip() == device["netdev"], device
        assert host.file(base + "/ports/1/state").content_string.split() == ["4:", "ACTIVE"], device
        unit = host.service("gpufabric-soft-roce-%s.service" % device["name"])
        assert unit.is_enabled and unit.is_running, device


def test_nccl_ib_hca_names_the_rails_the_run_made(host):
    rails = _rails(host.ansible.get_variables())
    assert _nccl_conf(host)["NCCL_IB_HCA"] == "=" + ",".join("%s:1" % device for device, _netdev in rails)


def test_the_gid_index_is_the_rails_vlan_gid_in_the_kernels_table(host):
    variables = host.ansible.get_variables()
    vlans = {vlan["link"]: vlan.get("name") or "%s.%d" % (vlan["link"], vlan["id"]) for vlan in variables["bonding_vlans"]}
    indexes = {_vlan_ipv4_gid_index(host, device, vlans[netdev]) for device, netdev in _rails(variables)}
    assert len(indexes) == 1, indexes
    assert _nccl_conf(host)["NCCL_IB_GID_INDEX"] == str(indexes.pop())


@pytest.mark.skipif(not REPORT, reason="GPUFABRIC_SITE_ONE_RUN_REPORT is not set")
def test_the_sweep_tested_the_rails_both_ends_have(host, capsys):
    if _name(host) != HOSTS[0]:
        pytest.skip("the report covers both hosts: read once")
    with open(REPORT, encoding="utf-8") as handle:
        tests = json.load(handle)["tests"]
    rails = {name: dict(enumerate(_rails(testinfra.get_host(
        "ansible://%s?ansible_inventory=%s" % (name, INVENTORY)).ansible.get_variables()))) for name in HOSTS}
    common = sorted(set(rails[HOSTS[0]]) & set(rails[HOSTS[1]]))
    pairs = sorted({(test["client"], test["server"]) for test in tests})
    assert pairs and {host for pair in pairs for host in pair} == set(HOSTS), pairs
    for client, server in pairs:
        assert sorted(test["rail"] for test in tests if (test["client"], test["server"]) == (client, server)) \
            == common, tests
    for test in tests:
        # Each end on its own rail's device: the devices this run made, as the facts after the change name them.
        assert (test["client_device"], test["server_device"]) == (
            rails[test["client"]][test["rail"]][0], rails[test["server"]][test["rail"]][0]), test
        assert test["error"] is None, test
        assert test["client_to_server_gbps"] > 0.001, test
    with capsys.disabled():
        print("\nthe sweep's rails (verify.json):")
        for test in sorted(tests, key=lambda item: item["rail"]):
            print("  rail %d: %s %s -> %s %s: %s" % (
                test["rail"], test["client"], test["client_device"], test["server"], test["server_device"],
                test["command"]))


@pytest.mark.skipif(not RECAP, reason="GPUFABRIC_SITE_ONE_RUN_RECAP is not set: no second run")
def test_a_second_run_changes_nothing(host):
    with open(RECAP, encoding="utf-8") as handle:
        text = handle.read()
    recap = re.search(r"^%s\s+:\s+ok=\d+\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)" % _name(host),
                      text.split("PLAY RECAP", 1)[-1], re.MULTILINE)
    assert recap, text[-2000:]
    assert recap.groups() == ("0", "0", "0"), recap.group(0)
