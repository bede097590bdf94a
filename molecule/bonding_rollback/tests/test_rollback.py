# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""After the converge: the node put itself back on its previous address and files, and says so in its logs."""

from __future__ import annotations

import calendar
import json
import time

# podman exec per check (why: tests/molecule_helpers.py)
testinfra_hosts = ["podman://bonding_rollback-node1"]

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


def test_the_timer_fired_on_time(host):
    # Measured on the host's own clock: the rollback began when the window closed, not whenever the controller got
    # round to it.
    evidence = json.loads(host.file("/root/rollback-test.json").content_string)
    log = host.file(TRANSACTION + "/rollback.log").content_string
    started = [line.split(" ", 1)[0] for line in log.splitlines() if "rolling back (networkd)" in line][0]
    began = calendar.timegm(time.strptime(started, "%Y-%m-%dT%H:%M:%SZ"))
    assert 0 <= began - evidence["armed_at"] <= evidence["rollback_timeout"] + 15


def test_the_controller_recorded_the_revert(host):
    evidence = json.loads(host.file("/root/rollback-test.json").content_string)
    assert "was reverted" in evidence["message"]
    assert evidence["before"] == ["/etc/systemd/network/20-lab-eth0.network"]


def test_the_rollback_restored_once_even_when_asked_again(host):
    # The revert path asks again after the timer fired (revert.yml's revert-now): the restore must not run twice.
    log = host.file(TRANSACTION + "/rollback.log").content_string
    assert log.count("rolling back (networkd)") == 1
    assert log.count("restored /etc/systemd/network/10-gpufabric-eth0.network") == 1
    assert "revert-now: nothing to start, the change was already rolled back or confirmed" in log


def test_nothing_is_left_armed(host):
    assert not host.file("/var/lib/gpufabric/bonding/pending").exists
    for unit in ("gpufabric-bonding-rollback.timer", "gpufabric-bonding-rollback.service",
                 "gpufabric-bonding-rollback-boot.service", "sysinit.target.wants/gpufabric-bonding-rollback-boot.service"):
        assert not host.file("/etc/systemd/system/" + unit).exists, unit


def test_run_b_was_refused_naming_run_a(host):
    evidence = json.loads(host.file("/root/overlap-reboot-test.json").content_string)
    run_a = evidence["transaction"].rsplit("/", 1)[1]
    assert run_a in evidence["refused"] and "by run A of the molecule scenario" in evidence["refused"]
    assert "198.51.100.10" in evidence["armed_addresses"]


def test_a_restart_inside_the_window_came_back_on_the_previous_configuration(host):
    evidence = json.loads(host.file("/root/overlap-reboot-test.json").content_string)
    assert "198.51.100.10" not in evidence["rebooted_addresses"]
    log = host.file(evidence["transaction"] + "/rollback.log").content_string
    assert "rolling back at boot (networkd): the host restarted before the change was confirmed" in log
    assert "restored /etc/systemd/network/10-gpufabric-eth0.network (create undone)" in log
    assert log.count("rolling back") == 1
    assert "already rolled back" in evidence["revert_again"]
    # In this boot (the one after the restart) systemd started the boot unit before systemd-networkd.
    messages = host.check_output("journalctl -b 0 --no-pager -o cat _PID=1").splitlines()
    boot_unit = [i for i, line in enumerate(messages) if "the host restarted before the change was confirmed" in line]
    networkd = [i for i, line in enumerate(messages) if "Network Configuration" in line]
    assert boot_unit and networkd and boot_unit[0] < networkd[0]
