# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The bond the role made on two VMs with Debian's kernel, each the other's LACP partner, read from the kernel.

/proc/net/bonding is parsed by the collection's own parse_bonding and judged by bond_verify, as the role does.
The cable test pulls ens5's cable at both ends with the QEMU monitor (scripts/vmlab.sh link), checks that
traffic keeps flowing over ens4 and that bond_verify names ens5, then restores it and waits for LACP again.
The rollback test (last) reaches vm02 over the bond itself and cuts that connection with a bonding change
(rollback.yml): vm02's own timer must put it back, with the files as before.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest
import testinfra

from ansible_collections.gpufabric.core.plugins.filter.bond_validate import bond_validate
from ansible_collections.gpufabric.core.plugins.filter.bond_verify import bond_verify
from ansible_collections.gpufabric.core.plugins.module_utils.bonding import parse_bonding

ROOT = Path(__file__).resolve().parents[3]
SCENARIO = Path(__file__).resolve().parents[1]
EPHEMERAL = Path(os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY", ""))
VMLAB = ROOT / "scripts" / "vmlab.sh"
PEER = {"vm01": "vm02", "vm02": "vm01"}
VLAN_ADDRESS = {"vm01": "10.100.0.1", "vm02": "10.100.0.2"}
# The scenario's bond, normalised as the role normalises it (defaults: 802.3ad, fast, layer3+4, miimon 100).
EXPECTED = bond_validate([{"name": "bond0", "members": ["ens4", "ens5"]}],
                         vlans=[{"id": 100, "link": "bond0", "addresses": ["10.100.0.1/24"]}])["bonds"][0]


def name_of(host):
    return host.backend.get_hostname()


def peer_of(host):
    """The other VM, through the same Molecule inventory."""
    return testinfra.get_host("ansible://" + PEER[name_of(host)], ansible_inventory=host.backend.ansible_inventory)


def read_bond(host):
    return host.file("/proc/net/bonding/bond0").content_string


def wait_for(predicate, timeout, step=2):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(step)


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


def test_vlan_on_the_bond_carries_9000_byte_frames(host):
    name = name_of(host)
    link = host.check_output("ip -d -o link show dev bond0.100")
    assert "mtu 9000" in link and "vlan protocol 802.1Q id 100" in link
    assert VLAN_ADDRESS[name] + "/24" in host.check_output("ip -o -4 addr show dev bond0.100")
    # 8972 bytes of ICMP payload + 28 of headers = 9000, not fragmented.
    ping = host.run("ping -c 3 -W 5 -M do -s 8972 %s" % VLAN_ADDRESS[PEER[name]])
    assert ping.rc == 0, ping.stdout + ping.stderr
    assert " 0% packet loss" in ping.stdout


def vmlab(*args):
    subprocess.run([str(VMLAB), *args], check=True, capture_output=True, text=True, timeout=120)


def test_a_pulled_cable_keeps_traffic_flowing_and_is_named(host):
    if name_of(host) != "vm01":
        pytest.skip("the cable is pulled once, from vm01")
    vmlab("link", "vm01", "ens5", "off")
    try:
        # bond_verify names the member whose link is down.
        problems = wait_for(lambda: [p for p in bond_verify(read_bond(host), EXPECTED) if "ens5" in p], 30)
        assert problems, bond_verify(read_bond(host), EXPECTED)
        bond = parse_bonding(read_bond(host))
        state = {slave["name"]: slave["mii_status"] for slave in bond["slaves"]}
        assert state == {"ens4": "up", "ens5": "down"}
        # Traffic keeps flowing over the remaining member, at full MTU.
        ping = host.run("ping -c 20 -i 0.2 -W 5 -M do -s 8972 %s" % VLAN_ADDRESS["vm02"])
        assert ping.rc == 0 and " 0% packet loss" in ping.stdout, ping.stdout + ping.stderr
    finally:
        vmlab("link", "vm01", "ens5", "on")
    assert wait_for(lambda: bond_verify(read_bond(host), EXPECTED) == [], 60), bond_verify(read_bond(host), EXPECTED)


def test_rollback_over_the_bond(host, capsys):
    """vm02's SSH session runs over bond0.100; a change that cuts it is reverted by vm02's own timer."""
    if name_of(host) != "vm01":
        pytest.skip("one rollback, of vm02 reached through vm01")
    env = dict(os.environ, ANSIBLE_CONFIG=str(EPHEMERAL / "ansible.cfg"), ANSIBLE_FORCE_COLOR="false",
               ANSIBLE_ROLES_PATH=str(ROOT / "roles"),
               ANSIBLE_COLLECTIONS_PATH="%s:%s" % (ROOT / ".build" / "collections",
                                                   ROOT / ".venv" / "lib" / "python3.11" / "site-packages"))
    evidence = EPHEMERAL / "rollback-over-bond.json"
    if evidence.exists():
        evidence.unlink()
    started = time.time()
    run = subprocess.run([str(ROOT / ".venv" / "bin" / "ansible-playbook"), "-i", str(EPHEMERAL / "inventory"),
                          str(SCENARIO / "rollback.yml")], env=env, capture_output=True, text=True, timeout=900,
                         check=False)
    assert run.returncode == 0, (run.stdout + run.stderr)[-6000:]
    result = json.loads(evidence.read_text())
    # The session was on the bond: sshd on vm02 saw vm01's VLAN address as the client, its own as the server.
    assert result["connection"].split()[0::2] == ["10.100.0.1", "10.100.0.2"], result["connection"]
    message = result["message"]
    assert "was reverted" in message and "Wait for the host to answer on a new connection" in message, message
    assert "rollback exit status 0" in message and "(all identical)" in message, message
    assert result["after"] == result["before"] and result["before"], result
    assert " 10.100.0.2/24 " in result["addresses"] and "10.100.0.202" not in result["addresses"], result
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
    ping = host.run("ping -c 3 -W 5 %s" % VLAN_ADDRESS["vm02"])
    assert ping.rc == 0, ping.stdout + ping.stderr
