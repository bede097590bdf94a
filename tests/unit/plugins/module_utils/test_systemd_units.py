# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""systemd_units against the systemctl stand-in tests/fake_systemctl.py (this machine runs no systemd; the Molecule
scenarios drive the same code against the containers' real systemd)."""

from __future__ import annotations

import logging
import os
import socket

import pytest

from ansible_collections.gpufabric.core.plugins.module_utils.hostio import systemd_units as su
from fake_systemctl import FakeSystemd


@pytest.fixture(name="systemd")
def fixture_systemd(tmp_path):
    unit = tmp_path / "x.service"
    unit.write_text("[Service]\nExecStart=/bin/true\n")
    return lambda **state: FakeSystemd(tmp_path / ("state-%d.json" % len(list(tmp_path.iterdir()))), unit, **state)


def test_a_new_unit_is_enabled_and_started_once(systemd):
    systemctl = systemd()
    assert su.ensure_running(systemctl, "x.service") == ["enabled x.service", "started x.service"]
    assert systemctl.state()["enabled"] and systemctl.state()["active"]
    assert su.ensure_running(systemctl, "x.service") == []
    assert systemctl.actions() == ["enable x.service", "start x.service"]


def test_restart_when_asked_even_when_running(systemd):
    systemctl = systemd(enabled=True, active=True)
    assert su.ensure_running(systemctl, "x.service", restart=True) == ["restarted x.service"]
    assert systemctl.actions() == ["restart x.service"]


def test_reload_a_running_unit_start_a_stopped_one(systemd):
    running, stopped = systemd(enabled=True, active=True), systemd(enabled=True)
    assert su.ensure_running(running, "x.service", reload=True) == ["reloaded x.service"]
    assert su.ensure_running(stopped, "x.service", reload=True) == ["started x.service"]
    assert su.ensure_running(running, "x.service", restart=True, reload=True) == ["restarted x.service"]
    assert running.actions() == ["reload x.service", "restart x.service"] and stopped.actions() == ["start x.service"]


def test_check_mode_only_asks(systemd):
    stopped, running = systemd(), systemd(enabled=True, active=True)
    assert su.ensure_running(stopped, "x.service", check_mode=True) == ["enabled x.service", "started x.service"]
    assert su.ensure_stopped(running, "x.service", check_mode=True) == ["stopped x.service", "disabled x.service"]
    assert stopped.actions() == [] and running.actions() == []


def test_stopped_and_disabled_once(systemd):
    systemctl = systemd(enabled=True, active=True)
    assert su.ensure_stopped(systemctl, "x.service") == ["stopped x.service", "disabled x.service"]
    assert su.ensure_stopped(systemctl, "x.service") == []


def test_a_failed_start_names_the_unit_and_the_journal(systemd):
    with pytest.raises(su.UnitError, match=r"systemctl start x.service failed: Job for x.service failed .*"
                                           r"\(journalctl -u x.service\)"):
        su.ensure_running(systemd(enabled=True, failing=["start"]), "x.service")


def test_the_manager_reads_units_again_and_check_mode_asks_nothing(systemd):
    systemctl = systemd()
    assert su.daemon_reload(systemctl, check_mode=True) == ["daemon-reload"]
    assert su.daemon_reexec(systemctl, check_mode=True) == ["daemon-reexec"]
    assert systemctl.state()["calls"] == []
    assert su.daemon_reload(systemctl) + su.daemon_reexec(systemctl) == ["daemon-reload", "daemon-reexec"]
    assert systemctl.actions() == ["daemon-reload", "daemon-reexec"]
    assert systemctl.state()["loaded"] == "[Service]\nExecStart=/bin/true\n"


def test_a_failed_reexec_is_an_error_that_names_it(systemd):
    with pytest.raises(su.UnitError, match=r"^systemctl daemon-reexec failed: Job for .* failed"):
        su.daemon_reexec(systemd(failing=["daemon-reexec"]))


def test_plain_start_stop_and_the_queries_the_bonding_helper_uses(systemd, tmp_path):
    (tmp_path / "y.timer").write_text("[Timer]\nOnActiveSec=60s\n")
    systemctl = systemd()
    su.start(systemctl, "y.timer")
    su.start(systemctl, "x.service", no_block=True)
    assert systemctl.unit("y.timer")["active"] and systemctl.state()["active"]
    assert su.unit_property(systemctl, "y.timer", "NextElapseUSecRealtime") != ""
    su.stop(systemctl, "y.timer")
    su.reset_failed(systemctl, "gone.service")
    assert systemctl.actions() == ["start y.timer", "start --no-block x.service", "show -p NextElapseUSecRealtime "
                                   "--value y.timer", "stop y.timer", "reset-failed gone.service"]
    # A unit systemd does not know cannot be stopped: an error that names it (the caller decides whether it matters).
    with pytest.raises(su.UnitError, match="systemctl stop gone.service failed: Unit gone.service not found"):
        su.stop(systemctl, "gone.service")


def test_a_transient_unit_runs_the_command_past_the_caller_and_a_refusal_names_the_unit():
    calls = []

    def run(argv, rc=0, err=""):
        calls.append(argv)
        return rc, "", err

    su.run_transient(run, "gpufabric-bond-apply.service", ["/usr/local/libexec/x", "apply", "/var/lib/x/1"], "apply")
    assert calls == [["systemd-run", "--unit", "gpufabric-bond-apply.service", "--no-block", "--collect",
                      "--description", "apply", "/usr/local/libexec/x", "apply", "/var/lib/x/1"]]
    # Whatever systemd-run prints on stderr reaches the message, stripped, after the unit's name.
    with pytest.raises(su.UnitError, match=r"^systemd-run --unit gpufabric-bond-apply.service failed: refused$"):
        su.run_transient(lambda argv: run(argv, 1, "refused\n"), "gpufabric-bond-apply.service", ["x"], "apply")


def test_sd_notify_sends_one_datagram_to_a_path_and_to_an_abstract_socket(tmp_path, monkeypatch):
    """The host programs' READY/WATCHDOG notifications, received on real AF_UNIX datagram sockets as systemd's."""
    path = str(tmp_path / "notify")
    abstract = "gpufabric-test-%d" % os.getpid()
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as by_path, \
            socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as by_name:
        by_path.bind(path)
        by_name.bind("\0" + abstract)
        monkeypatch.setenv("NOTIFY_SOCKET", path)
        assert su.sd_notify("READY=1") is None
        assert by_path.recv(64) == b"READY=1"
        monkeypatch.setenv("NOTIFY_SOCKET", "@" + abstract)
        assert su.sd_notify("WATCHDOG=1\nSTATUS=ok") is None
        assert by_name.recv(64) == b"WATCHDOG=1\nSTATUS=ok"


def test_sd_notify_is_nothing_outside_systemd_and_says_why_it_could_not_send(tmp_path, monkeypatch):
    monkeypatch.delenv("NOTIFY_SOCKET", raising=False)
    assert su.sd_notify("READY=1") is None
    monkeypatch.setenv("NOTIFY_SOCKET", str(tmp_path / "gone"))
    assert su.sd_notify("WATCHDOG=1").startswith("cannot notify systemd: ")


def test_sd_notify_logs_why_it_could_not_send_on_the_programs_logger(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("NOTIFY_SOCKET", str(tmp_path / "gone"))
    problem = su.sd_notify("WATCHDOG=1", logging.getLogger("gpufabric-test"))
    assert [(record.levelname, record.getMessage()) for record in caplog.records] == [("WARNING", problem)]
    assert problem.startswith("cannot notify systemd: ")
