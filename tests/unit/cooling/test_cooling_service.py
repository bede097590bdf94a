"""gpufabric.core.cooling_config runs the controller's service after its files: cooling_files.service_actions
against a systemctl stand-in (fake_systemctl), then the module itself run by Ansible with that stand-in on PATH.

The stand-in keeps the unit text systemd loaded and the text the running controller was started from, so the tests
see that a changed unit is reloaded before the restart. The cooling Molecule scenario runs the same code against
real systemd, with the restart's ExecStopPost stop path.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from fake_systemctl import FakeSystemd

from ansible_collections.gpufabric.core.plugins.module_utils.cooling import files as cf
from ansible_collections.gpufabric.core.plugins.module_utils.hostio.systemd_units import UnitError

ROOT = Path(__file__).resolve().parents[3]
# The module's own harness (one play on localhost, every path in the test's directory): one copy of it.
sys.path.insert(0, str(ROOT / "tests" / "unit" / "plugins" / "modules"))
from test_cooling_config import _args, _run  # noqa: E402  pylint: disable=wrong-import-position

UNIT = "gpufabric-cooling.service"


@pytest.fixture
def unit_file(tmp_path):
    path = tmp_path / UNIT
    path.write_text(cf.unit_text("/usr/local/sbin/gpufabric-cooling", "/etc/gpufabric-cooling/config.json",
                                 "/var/lib/gpufabric-cooling/failsafe.record", 120))
    return path


def test_a_new_controller_is_reloaded_enabled_and_started_then_left_alone(tmp_path, unit_file):
    systemd = FakeSystemd(tmp_path / "systemd.json", unit_file)
    assert cf.service_actions(systemd, UNIT, True, files_changed=True, unit_changed=True) == [
        "daemon-reload", "enabled %s" % UNIT, "restarted %s" % UNIT]
    state = systemd.state()
    assert state["enabled"] and state["active"] and state["running"] == unit_file.read_text()
    calls = len(state["calls"])
    assert cf.service_actions(systemd, UNIT, True) == []
    assert systemd.state()["calls"][calls:] == ["is-enabled --quiet %s" % UNIT, "is-active --quiet %s" % UNIT]


def test_a_changed_unit_is_reloaded_before_the_restart(tmp_path, unit_file):
    systemd = FakeSystemd(tmp_path / "systemd.json", unit_file)
    cf.service_actions(systemd, UNIT, True, files_changed=True, unit_changed=True)
    unit_file.write_text(unit_file.read_text().replace("WatchdogSec=120", "WatchdogSec=60"))
    assert cf.service_actions(systemd, UNIT, True, files_changed=True, unit_changed=True) == [
        "daemon-reload", "restarted %s" % UNIT]
    assert "WatchdogSec=60" in systemd.state()["running"]


def test_changed_files_restart_without_a_reload_and_a_stopped_controller_is_only_started(tmp_path, unit_file):
    systemd = FakeSystemd(tmp_path / "systemd.json", unit_file, enabled=True, active=True)
    assert cf.service_actions(systemd, UNIT, True, files_changed=True) == ["restarted %s" % UNIT]
    assert systemd.actions() == ["restart %s" % UNIT]
    stopped = FakeSystemd(tmp_path / "stopped.json", unit_file, enabled=True)
    assert cf.service_actions(stopped, UNIT, True) == ["started %s" % UNIT]
    assert stopped.actions() == ["start %s" % UNIT]


def test_turned_off_it_is_stopped_and_disabled_once_and_a_missing_unit_is_no_failure(tmp_path, unit_file):
    systemd = FakeSystemd(tmp_path / "systemd.json", unit_file, enabled=True, active=True)
    assert cf.service_actions(systemd, UNIT, False) == ["stopped %s" % UNIT, "disabled %s" % UNIT]
    assert not systemd.state()["enabled"] and not systemd.state()["active"]
    assert cf.service_actions(systemd, UNIT, False) == []
    unit_file.unlink()
    never = FakeSystemd(tmp_path / "never.json", unit_file)
    assert cf.service_actions(never, UNIT, False, unit_present=False) == []
    assert never.state()["calls"] == []


def test_check_mode_only_asks(tmp_path, unit_file):
    systemd = FakeSystemd(tmp_path / "systemd.json", unit_file)
    assert cf.service_actions(systemd, UNIT, True, files_changed=True, unit_changed=True, check_mode=True) == [
        "daemon-reload", "enabled %s" % UNIT, "restarted %s" % UNIT]
    running = FakeSystemd(tmp_path / "running.json", unit_file, enabled=True, active=True)
    assert cf.service_actions(running, UNIT, False, check_mode=True) == ["stopped %s" % UNIT, "disabled %s" % UNIT]
    for stand_in in (systemd, running):
        assert stand_in.actions() == []
    assert running.state()["active"] and not systemd.state()["active"]


def test_a_failed_restart_names_the_unit_and_its_journal(tmp_path, unit_file):
    systemd = FakeSystemd(tmp_path / "systemd.json", unit_file, enabled=True, active=True, failing=["restart"])
    with pytest.raises(UnitError, match=r"systemctl restart %s failed: .*\(journalctl -u %s\)" % (UNIT, UNIT)):
        cf.service_actions(systemd, UNIT, True, files_changed=True)


def _module_systemd(tmp_path, monkeypatch, **state):
    """The stand-in as `systemctl` first on the PATH Ansible's module inherits, for the unit file _args writes."""
    systemd = FakeSystemd(tmp_path / "systemd.json", tmp_path / UNIT, **state)
    monkeypatch.setenv("PATH", "%s:%s" % (systemd.install(tmp_path / "fake-bin"), os.environ["PATH"]))
    return systemd


def test_the_module_starts_what_it_installed_checks_first_and_then_changes_nothing(tmp_path, monkeypatch):
    (tmp_path / "hwmon").mkdir()
    systemd = _module_systemd(tmp_path, monkeypatch)
    args = _args(tmp_path, service=UNIT)
    result, _output = _run(args, "--check")
    assert result["changed"] and result["service_actions"] == ["daemon-reload", "enabled %s" % UNIT,
                                                               "restarted %s" % UNIT], result
    assert systemd.actions() == [] and not (tmp_path / UNIT).exists()
    result, _output = _run(args)
    assert result["changed"] and result["restart_required"] and result["daemon_reload"], result
    assert result["service_actions"] == ["daemon-reload", "enabled %s" % UNIT, "restarted %s" % UNIT]
    assert systemd.actions() == ["daemon-reload", "enable %s" % UNIT, "restart %s" % UNIT]
    assert systemd.state()["running"] == (tmp_path / UNIT).read_text()
    again, _output = _run(args)
    assert not again["changed"] and again["service_actions"] == [] and again["changes"] == [], again
    assert len(systemd.actions()) == 3
    # A changed configuration restarts the controller (its stop path runs first), with no reload: the unit is the same.
    changed = dict(args, config=dict(args["config"], interval=2))
    result, _output = _run(changed)
    assert result["changed"] and result["service_actions"] == ["restarted %s" % UNIT], result
    assert systemd.actions()[3:] == ["restart %s" % UNIT]


def test_the_module_turned_off_stops_disables_and_removes_the_secrets(tmp_path, monkeypatch):
    systemd = _module_systemd(tmp_path, monkeypatch)
    args = _args(tmp_path, service=UNIT)
    _run(args)
    off = dict(args, enabled=False, config={}, package={})
    result, _output = _run(off, "--check")
    assert result["changed"] and result["service_actions"] == ["stopped %s" % UNIT, "disabled %s" % UNIT], result
    assert systemd.state()["active"] and (tmp_path / "etc" / "ipmi.pass").exists()
    result, _output = _run(off)
    assert result["changed"] and result["service_actions"] == ["stopped %s" % UNIT, "disabled %s" % UNIT], result
    assert not systemd.state()["active"] and not systemd.state()["enabled"]
    assert not (tmp_path / "etc" / "ipmi.pass").exists()
    again, _output = _run(off)
    assert not again["changed"] and again["service_actions"] == [], again
    # A host that never had the controller: nothing to stop, no systemctl call, no failure.
    (tmp_path / UNIT).unlink()
    calls = len(systemd.state()["calls"])
    result, _output = _run(off)
    assert not result.get("failed") and not result["unit_present"] and result["service_actions"] == [], result
    assert len(systemd.state()["calls"]) == calls


def test_the_module_fails_naming_the_journal_when_the_controller_does_not_start(tmp_path, monkeypatch):
    _module_systemd(tmp_path, monkeypatch, failing=["restart"])
    result, _output = _run(_args(tmp_path, service=UNIT))
    assert result.get("failed"), result
    assert "the service is not" in result["msg"] and "journalctl -u %s" % UNIT in result["msg"], result["msg"]
    assert (tmp_path / "etc" / "config.json").exists() and (tmp_path / UNIT).exists()
