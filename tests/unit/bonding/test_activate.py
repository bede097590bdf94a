# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rollback helper gpufabric-bonding-activate (module_utils/bonding/activate.py), every command, on a transaction
that bond_config's own code wrote: real files, modes and flock(2) in the test's directory; at the process boundary,
systemctl is tests/fake_systemctl.py and the backends' tools (ip, networkctl, netplan, nmcli) a recorder. What those
tools do to a real network is the Molecule scenarios' part (bonding, bonding_rollback, and the VM scenario's rollback
over a bond).
"""

from __future__ import annotations

import os
import stat

import pytest

from ansible_collections.gpufabric.core.plugins.module_utils.bonding import activate as ba
from ansible_collections.gpufabric.core.plugins.module_utils.bonding import plan as bp
from ansible_collections.gpufabric.core.plugins.module_utils.bonding import transaction as bt
from ansible_collections.gpufabric.core.plugins.modules import bond_config
from fake_systemctl import FakeSystemd

TIMER = bt.ROLLBACK_UNIT + ".timer"
NETDEV_OLD = "[NetDev]\nName=bond0\nKind=bond\n"
NETDEV_NEW = "[NetDev]\nName=bond0\nKind=bond\nMTUBytes=9000\n"


class Host:
    """The helper's process boundary: systemctl answered by FakeSystemd, every other command recorded."""

    def __init__(self, tmp_path, links=("bond0",), failing=()):
        units = tmp_path / "units"
        units.mkdir(parents=True)
        for name in ("systemd-networkd.service", TIMER, bt.ROLLBACK_UNIT + ".service"):
            (units / name).write_text("[Unit]\n")
        self.systemd = FakeSystemd(tmp_path / "systemd.json", units / "systemd-networkd.service", enabled=True,
                                   active=True)
        self.links, self.failing, self.calls = set(links), set(failing), []

    def __call__(self, argv):
        if argv[0] == "systemctl":
            return self.systemd(argv)
        command = " ".join(argv)
        self.calls.append(command)
        if argv[:3] == ["ip", "link", "show"]:
            return (0 if argv[-1] in self.links else 1), "", ""
        if command in self.failing:
            return 1, "", "%s: failed" % argv[0]
        return 0, "", ""

    def tools(self):
        """The backend commands run, the read-only ip queries left out."""
        return [call for call in self.calls if not call.startswith("ip link show")]


@pytest.fixture(name="armed")
def fixture_armed(tmp_path, monkeypatch):
    """A networkd change armed by bond_config's code and installed: a.network replaced (mode 0640), b.netdev (the
    bond) changed, gone.network removed, c.network created. Returns (transaction directory, config dir, before)."""
    monkeypatch.setattr(bt, "UNIT_DIR", str(tmp_path / "systemd"))
    config = tmp_path / "network"
    config.mkdir()
    before = {"10-gpufabric-a.network": ("[Match]\nName=eth0\n", 0o640), "10-gpufabric-b.netdev": (NETDEV_OLD, 0o644),
              "10-gpufabric-gone.network": ("[Match]\nName=eth9\n", 0o644)}
    for name, (text, mode) in before.items():
        (config / name).write_text(text)
        (config / name).chmod(mode)
    desired = {"10-gpufabric-a.network": "[Match]\nName=eth0\n[Network]\nAddress=10.0.0.1/24\n",
               "10-gpufabric-b.netdev": NETDEV_NEW, "10-gpufabric-c.network": "[Match]\nName=eth1\n"}
    current = bond_config.read_owned("networkd", str(config), "10-gpufabric-")
    changes = bp.plan_changes({name: entry[0] for name, entry in current.items()}, desired)
    files = bond_config.file_changes(changes, str(config), 0o644, current)
    hosts = bt.HostTransactions(str(tmp_path / "state"))
    hosts.acquire(timeout=1)
    transaction = bond_config.Transaction("networkd", str(config), changes, files,
                                          hosts.new_transaction("20261201T091500Z-5c1e0a7d"))
    transaction.write_state()
    hosts.write_pending({"id": "20261201T091500Z-5c1e0a7d", "directory": transaction.path, "run": "a test"})
    bt.install_units("/usr/local/libexec/gpufabric-bonding-activate", transaction.path, 180, "20261201T091500Z-5c1e0a7d")
    transaction.install()
    hosts.release()
    return transaction.path, config, before


def snapshot(directory):
    return {path.name: (path.read_text(), stat.S_IMODE(path.stat().st_mode)) for path in sorted(directory.iterdir())}


def log_of(transaction, name="rollback.log"):
    with open(os.path.join(transaction, name)) as handle:
        return handle.read()


def nothing_armed(tmp_path, transaction):
    units = [path for path in (tmp_path / "systemd").rglob("*") if not path.is_dir()]
    return units == [] and not os.path.exists(os.path.join(os.path.dirname(transaction), bt.PENDING))


def test_the_timer_restores_every_file_as_it_was_and_disarms(tmp_path, armed):
    transaction, config, before = armed
    assert snapshot(config) != before and (tmp_path / "systemd" / TIMER).exists()
    host = Host(tmp_path)
    assert ba.Transaction(transaction, run=host).execute("rollback") == 0
    assert snapshot(config) == before
    assert log_of(transaction, "rollback.rc") == "0\n"
    log = log_of(transaction)
    assert "rolling back (networkd), the change was not confirmed in time" in log
    for line in ("restored %s/10-gpufabric-a.network (replace undone)", "restored %s/10-gpufabric-c.network (create "
                 "undone)", "restored %s/10-gpufabric-gone.network (remove undone)"):
        assert line % config in log
    # The bond whose .netdev changed is deleted so that networkd makes it again from the restored file.
    assert host.tools() == ["networkctl delete bond0", "networkctl reload"]
    assert host.systemd.actions() == ["stop %s" % TIMER, "daemon-reload"]
    assert nothing_armed(tmp_path, transaction)
    assert not [name for name in os.listdir(str(config)) if name.startswith(".")]


def test_a_second_rollback_restores_nothing(tmp_path, armed):
    transaction, config, before = armed
    host = Host(tmp_path)
    ba.Transaction(transaction, run=host).execute("rollback")
    (config / "10-gpufabric-a.network").write_text("changed by hand since\n")
    assert ba.Transaction(transaction, run=host).execute("rollback") == 0
    assert (config / "10-gpufabric-a.network").read_text() == "changed by hand since\n"
    log = log_of(transaction)
    assert log.count("rolling back (networkd)") == 1 and "already rolled back (exit status 0); not restoring" in log


def test_each_file_is_restored_even_when_one_cannot_be(tmp_path, armed):
    transaction, config, before = armed
    backup = [name for name in os.listdir(os.path.join(transaction, "files")) if name.endswith("a.network")][0]
    os.unlink(os.path.join(transaction, "files", backup))
    host = Host(tmp_path)
    assert ba.Transaction(transaction, run=host).execute("rollback") == 1
    expected = dict(before)
    expected["10-gpufabric-a.network"] = snapshot(config)["10-gpufabric-a.network"]  # the new one stays
    assert snapshot(config) == expected
    assert "could not restore %s/10-gpufabric-a.network (replace not undone)" % config in log_of(transaction)
    # The activation and the disarming still ran.
    assert host.tools()[-1] == "networkctl reload" and nothing_armed(tmp_path, transaction)
    assert log_of(transaction, "rollback.rc") == "1\n"


def test_a_failed_activation_of_the_previous_files_is_exit_status_1_and_still_disarms(tmp_path, armed):
    transaction, config, before = armed
    host = Host(tmp_path, failing={"networkctl reload"})
    assert ba.Transaction(transaction, run=host).execute("rollback") == 1
    assert snapshot(config) == before and nothing_armed(tmp_path, transaction)
    assert "networkctl reload exited with status 1" in log_of(transaction)


def test_networkd_is_started_when_it_is_not_running(tmp_path, armed):
    transaction, config, before = armed
    host = Host(tmp_path)
    host.systemd(["systemctl", "stop", "systemd-networkd.service"])
    ba.Transaction(transaction, run=host).execute("rollback")
    assert "start systemd-networkd.service" in host.systemd.actions()


def test_at_boot_the_files_are_restored_without_asking_systemd_or_the_network(tmp_path, armed):
    transaction, config, before = armed
    host = Host(tmp_path)
    assert ba.Transaction(transaction, run=host).execute("boot-rollback") == 0
    assert snapshot(config) == before
    assert "rolling back at boot (networkd): the host restarted before the change was confirmed" in log_of(transaction)
    # No daemon-reload in the boot transaction and no networkctl: the network services start after this unit.
    assert host.tools() == [] and "daemon-reload" not in host.systemd.actions()
    assert nothing_armed(tmp_path, transaction)


def test_at_boot_netplan_generates_again_from_the_restored_files(tmp_path, armed):
    transaction, config, before = armed
    with open(os.path.join(transaction, "backend"), "w") as handle:
        handle.write("netplan\n")
    host = Host(tmp_path)
    assert ba.Transaction(transaction, run=host).execute("boot-rollback") == 0
    assert host.tools() == ["netplan generate"]


def test_confirm_disarms_and_a_later_rollback_does_nothing(tmp_path, armed, capsys):
    transaction, config, before = armed
    new = snapshot(config)
    host = Host(tmp_path)
    assert ba.Transaction(transaction, run=host).execute("confirm") == 0
    assert capsys.readouterr().out == "confirmed; gpufabric-bonding-rollback.timer disarmed\n"
    assert os.path.exists(os.path.join(transaction, "confirmed")) and nothing_armed(tmp_path, transaction)
    assert log_of(transaction, "apply.log").endswith(" confirmed\n")
    assert ba.Transaction(transaction, run=host).execute("rollback") == 0
    assert snapshot(config) == new
    assert "the change was confirmed; nothing to roll back" in log_of(transaction)


def test_confirm_after_the_rollback_started_is_too_late(tmp_path, armed, capsys):
    transaction, config, before = armed
    host = Host(tmp_path)
    ba.Transaction(transaction, run=host).execute("rollback")
    assert ba.Transaction(transaction, run=host).execute("confirm") == 3
    assert "too late: the rollback of this change already started" in capsys.readouterr().err
    assert not os.path.exists(os.path.join(transaction, "confirmed"))


def test_revert_now_starts_the_timers_service_once(tmp_path, armed, capsys):
    transaction, config, before = armed
    host = Host(tmp_path)
    assert ba.Transaction(transaction, run=host).execute("revert-now") == 0
    assert host.systemd.actions() == ["start --no-block %s.service" % bt.ROLLBACK_UNIT]
    # That service runs the rollback, which says who asked for it.
    assert ba.Transaction(transaction, run=host).execute("rollback") == 0
    assert "rolling back (networkd), requested by the controller" in log_of(transaction)
    # Asked again after the rollback (revert.yml reconnecting late): nothing to start, nothing restored twice.
    assert ba.Transaction(transaction, run=host).execute("revert-now") == 0
    assert capsys.readouterr().out == "already rolled back or confirmed\n"
    assert "revert-now: nothing to start, the change was already rolled back or confirmed" in log_of(transaction)
    assert log_of(transaction).count("rolling back") == 1


def test_apply_activates_each_backend_and_not_after_a_rollback_started(tmp_path, armed):
    transaction, config, before = armed
    host = Host(tmp_path, links=())
    assert ba.Transaction(transaction, run=host).execute("apply", delay=0) == 0
    # bond0 did not exist yet: nothing to delete.
    assert host.tools() == ["networkctl reload"]
    assert log_of(transaction, "apply.rc") == "0\n" and "activation finished with exit status 0" in log_of(
        transaction, "apply.log")
    for backend, plan, expected in (
            ("netplan", {}, ["netplan apply"]),
            ("networkmanager", {"apply.up": "gf-bond0\ngf-bond0-port0\n"},
             ["nmcli connection reload", "nmcli connection up id gf-bond0", "nmcli connection up id gf-bond0-port0"])):
        with open(os.path.join(transaction, "backend"), "w") as handle:
            handle.write(backend + "\n")
        for name, text in plan.items():
            with open(os.path.join(transaction, name), "w") as handle:
                handle.write(text)
        host = Host(tmp_path / backend)
        assert ba.Transaction(transaction, run=host).execute("apply", delay=0) == 0
        assert host.tools() == expected
    open(os.path.join(transaction, "rollback.started"), "w").close()
    assert ba.Transaction(transaction, run=Host(tmp_path / "late")).execute("apply", delay=0) == 3


def test_the_command_line(tmp_path, armed, capsys):
    transaction, config, before = armed
    assert ba.main([]) == 2 and "usage: gpufabric-bonding-activate apply|rollback" in capsys.readouterr().err
    assert ba.main(["undo", transaction]) == 2 and "unknown command undo" in capsys.readouterr().err
    assert ba.main(["rollback", str(tmp_path)]) == 2
    assert "is not a complete transaction directory (no manifest)" in capsys.readouterr().err
    # The path the role's revert.yml may give: the state directory's current link.
    host = Host(tmp_path)
    assert ba.main(["rollback", os.path.join(os.path.dirname(transaction), "current")], run=host) == 0
    assert snapshot(config) == before and nothing_armed(tmp_path, transaction)


def test_a_rollback_whose_manifest_cannot_be_read_still_activates_and_disarms(tmp_path, armed):
    transaction, config, before = armed
    os.unlink(os.path.join(transaction, "manifest"))
    host = Host(tmp_path)
    assert ba.Transaction(transaction, run=host).execute("rollback") == 1
    assert "restoring the files failed: FileNotFoundError" in log_of(transaction)
    assert host.tools()[-1] == "networkctl reload" and nothing_armed(tmp_path, transaction)
    assert log_of(transaction, "rollback.rc") == "1\n"
