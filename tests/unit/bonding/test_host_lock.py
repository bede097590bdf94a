# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One bonding transaction per host: the lock, the pending marker and the persistent rollback units.

Real files and real flock(2) in a temporary state directory; systemd itself is exercised in the Molecule
scenario bonding_rollback.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from ansible_collections.gpufabric.core.plugins.module_utils.bonding import transaction as bt

RECORD = {"id": "20261201T091500Z-5c1e0a7d", "started": "2026-12-01T09:15:00Z", "deadline": "2026-12-01T09:19:00Z",
          "run": "play 'Converge' by alice", "client": "10.89.0.1",
          "changes": "create /etc/systemd/network/10-gpufabric-eth0.network"}


def arm_a(state_dir):
    """Run A: a transaction created, its marker written, its lock released (A waits for its confirmation)."""
    hosts = bt.HostTransactions(str(state_dir))
    hosts.acquire(timeout=1)
    directory = hosts.new_transaction(RECORD["id"])
    with open(os.path.join(directory, "manifest"), "w") as handle:
        handle.write("create\t/etc/systemd/network/10-gpufabric-eth0.network\t-\n")
    hosts.write_pending(dict(RECORD, directory=directory))
    hosts.release()
    return directory


def test_a_second_transaction_is_refused_naming_the_armed_one_and_leaves_it_alone(tmp_path):
    directory = arm_a(tmp_path)
    before = sorted(os.listdir(directory))
    hosts = bt.HostTransactions(str(tmp_path))
    hosts.acquire(timeout=1)
    with pytest.raises(bt.TransactionBusy) as refused:
        hosts.check_not_armed()
    hosts.release()
    message = str(refused.value)
    for fact in (RECORD["id"], "started 2026-12-01T09:15:00Z", "by play 'Converge' by alice", "from 10.89.0.1",
                 "rolls back at 2026-12-01T09:19:00Z", "create /etc/systemd/network/10-gpufabric-eth0.network",
                 "refused and changed nothing"):
        assert fact in message
    # The fault: run B renamed A's directory away and A's timer restored the wrong backup. Now nothing moved.
    assert os.readlink(tmp_path / "current") == RECORD["id"]
    assert not (tmp_path / "previous").exists()
    assert sorted(os.listdir(directory)) == before


def test_a_finished_transaction_no_longer_blocks(tmp_path):
    directory = arm_a(tmp_path)
    (tmp_path / RECORD["id"] / "rollback.rc").write_text("0\n")
    hosts = bt.HostTransactions(str(tmp_path))
    finished = hosts.check_not_armed()
    assert finished["directory"] == directory
    hosts.clear_pending(directory)
    assert hosts.pending() == {}
    assert bt.transaction_state(directory) == "rolled back"


def test_a_marker_without_its_directory_is_refused_not_ignored(tmp_path):
    hosts = bt.HostTransactions(str(tmp_path))
    os.makedirs(str(tmp_path), exist_ok=True)
    hosts.write_pending(dict(RECORD, directory=str(tmp_path / "gone")))
    with pytest.raises(bt.TransactionBusy, match="is missing: the rollback of that change cannot run"):
        hosts.check_not_armed()


def test_the_lock_is_host_wide_and_held_by_the_helper_too(tmp_path):
    """While flock(1), as the helper takes it, holds STATE_DIR/lock, the module waits and then refuses."""
    os.makedirs(str(tmp_path), exist_ok=True)
    holder = subprocess.Popen(["flock", str(tmp_path / "lock"), "sleep", "2.5"])
    try:
        deadline = time.monotonic() + 5
        while not (tmp_path / "lock").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)
        hosts = bt.HostTransactions(str(tmp_path))
        started = time.monotonic()
        with pytest.raises(bt.TransactionBusy, match="holds the lock .* for more than 1 s"):
            hosts.acquire(timeout=1, poll=0.05)
        assert time.monotonic() - started >= 1
    finally:
        holder.wait()
    # Once the holder is done, the lock is free at once.
    hosts.acquire(timeout=1)
    hosts.release()


def test_the_lock_is_not_inherited_by_commands_the_module_runs(tmp_path):
    """The helper started by the module (systemd-run, the rollback) must not keep the module's lock alive."""
    hosts = bt.HostTransactions(str(tmp_path))
    hosts.acquire(timeout=1)
    try:
        listing = "import os; print('\\n'.join(os.path.realpath('/proc/self/fd/' + fd) for fd in os.listdir('/proc/self/fd')))"
        child = subprocess.run([sys.executable, "-c", listing], capture_output=True, text=True, check=True,
                               close_fds=False)
        assert str(tmp_path / "lock") not in child.stdout.splitlines()
    finally:
        hosts.release()


def test_current_and_previous_follow_transactions_and_an_old_layout_is_kept(tmp_path):
    (tmp_path / "current" / "files").mkdir(parents=True)
    (tmp_path / "current" / "manifest").write_text("create\t/x\t-\n")
    hosts = bt.HostTransactions(str(tmp_path))
    first = hosts.new_transaction("20261201T090000Z-00000001")
    legacy = os.readlink(tmp_path / "previous")
    assert legacy.startswith("legacy-") and (tmp_path / legacy / "manifest").exists()
    second = hosts.new_transaction("20261201T090100Z-00000002")
    assert os.readlink(tmp_path / "current") == os.path.basename(second)
    assert os.readlink(tmp_path / "previous") == os.path.basename(first)


def test_old_transactions_are_pruned_but_never_the_pending_one(tmp_path):
    hosts = bt.HostTransactions(str(tmp_path))
    ids = ["20261201T09%02d00Z-%08x" % (minute, minute) for minute in range(bt.KEEP + 3)]
    first = hosts.new_transaction(ids[0])
    hosts.write_pending(dict(RECORD, directory=first))
    for tx_id in ids[1:]:
        hosts.new_transaction(tx_id)
    left = sorted(name for name in os.listdir(str(tmp_path)) if bt.is_transaction_id(name))
    assert ids[0] in left and ids[-1] in left
    assert len(left) == bt.KEEP + 1
    assert ids[1] not in left


def test_the_pending_record_cannot_be_split_by_a_newline():
    text = bt.pending_text(dict(RECORD, run="play 'x'\ndirectory=/etc\r"))
    record = bt.parse_pending(text)
    assert record["run"] == "play 'x' directory=/etc"
    assert "directory" in record and record["directory"] == ""
    assert len(text.splitlines()) == len(bt.PENDING_KEYS)


def test_rollback_units_are_persistent_and_one_runs_before_the_network_at_boot():
    units = bt.rollback_units("/usr/local/libexec/gpufabric-bonding-activate", "/var/lib/gpufabric/bonding/X", 240,
                              "X")
    assert sorted(units) == ["/etc/systemd/system/gpufabric-bonding-rollback-boot.service",
                             "/etc/systemd/system/gpufabric-bonding-rollback.service",
                             "/etc/systemd/system/gpufabric-bonding-rollback.timer"]
    assert "OnActiveSec=240s\n" in units["/etc/systemd/system/gpufabric-bonding-rollback.timer"]
    service = units["/etc/systemd/system/gpufabric-bonding-rollback.service"]
    assert "ExecStart=/usr/local/libexec/gpufabric-bonding-activate rollback /var/lib/gpufabric/bonding/X\n" in service
    boot = units["/etc/systemd/system/gpufabric-bonding-rollback-boot.service"]
    assert "ExecStart=/usr/local/libexec/gpufabric-bonding-activate boot-rollback /var/lib/gpufabric/bonding/X" in boot
    assert "DefaultDependencies=no" in boot and "WantedBy=sysinit.target" in boot
    before = [line for line in boot.splitlines() if line.startswith("Before=")][0].split("=", 1)[1].split()
    assert {"systemd-networkd.service", "NetworkManager.service", "network-pre.target"} <= set(before)
    assert bt.boot_wants_link() == "/etc/systemd/system/sysinit.target.wants/gpufabric-bonding-rollback-boot.service"


def test_transaction_ids_sort_by_time():
    first, second = bt.transaction_id(1796116500, "5c1e0a7dff"), bt.transaction_id(1796116561, "00000000")
    assert first == "20261201T091500Z-5c1e0a7d" and bt.is_transaction_id(first)
    assert sorted([second, first]) == [first, second]
    assert not bt.is_transaction_id(first + "\n")
