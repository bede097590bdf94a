# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""After the converge: the node put itself back on its previous address and files, and says so in its logs."""

from __future__ import annotations

import json

TRANSACTION = "/var/lib/gpufabric/bonding/current"


def test_the_node_rolled_back_by_itself(host):
    assert host.file(TRANSACTION + "/rollback.rc").content_string.strip() == "0"
    log = host.file(TRANSACTION + "/rollback.log").content_string
    assert "restored /etc/systemd/network/10-gpufabric-eth0.network (create undone)" in log
    assert not host.file(TRANSACTION + "/confirmed").exists
    assert host.file(TRANSACTION + "/apply.rc").content_string.strip() == "0"


def test_the_timer_fired_not_the_controller(host):
    # The controller could not reach the node, so the revert was started by the node's own timer, never by the
    # controller's revert-now.
    journal = host.check_output("journalctl --no-pager -o cat")
    assert "restore the previous network configuration unless confirmed" in journal
    assert "gpufabric-bonding-revert-now" not in journal
    assert host.run("systemctl is-active gpufabric-bonding-rollback.timer").rc != 0


def test_eth0_has_its_old_address_back_and_not_the_new_one(host):
    addresses = host.check_output("ip -o -4 addr show dev eth0")
    assert "192.0.2.10" not in addresses
    before = host.file("/etc/systemd/network/20-lab-eth0.network").content_string
    old = [line.split("=", 1)[1] for line in before.splitlines() if line.startswith("Address=")][0]
    assert old in addresses
    assert not host.file("/etc/systemd/network/10-gpufabric-eth0.network").exists


def test_the_controller_recorded_the_revert(host):
    evidence = json.loads(host.file("/root/rollback-test.json").content_string)
    assert "was reverted" in evidence["message"]
    assert evidence["before"] == ["/etc/systemd/network/20-lab-eth0.network"]
