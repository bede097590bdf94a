# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""systemd_units against a stand-in for systemctl that keeps each unit's state as systemctl reports it (this machine
runs no systemd; the Molecule scenarios drive the same code against the containers' real systemd)."""

from __future__ import annotations

import pytest

from ansible_collections.gpufabric.core.plugins.module_utils import systemd_units as su


class Systemctl:
    """is-enabled/is-active answer 0 or 3 from the state; enable, start, restart, stop and disable change it."""

    def __init__(self, enabled=False, active=False, failing=()):
        self.enabled, self.active, self.failing, self.calls = enabled, active, set(failing), []

    def __call__(self, argv):
        assert argv[0] == "systemctl"
        self.calls.append(" ".join(argv[1:]))
        verb = argv[1]
        if verb == "is-enabled":
            return (0 if self.enabled else 1), "", ""
        if verb == "is-active":
            return (0 if self.active else 3), "", ""
        if verb in self.failing:
            return 1, "", "Job for %s failed because the control process exited with error code." % argv[-1]
        if verb in ("enable", "disable"):
            self.enabled = verb == "enable"
        elif verb in ("start", "restart", "stop"):
            self.active = verb != "stop"
        return 0, "", ""


def test_a_new_unit_is_enabled_and_started_once():
    systemctl = Systemctl()
    assert su.ensure_running(systemctl, "strongswan.service") == ["enabled strongswan.service",
                                                                  "started strongswan.service"]
    assert systemctl.enabled and systemctl.active
    assert su.ensure_running(systemctl, "strongswan.service") == []
    assert systemctl.calls[-2:] == ["is-enabled --quiet strongswan.service", "is-active --quiet strongswan.service"]


def test_restart_when_asked_even_when_running():
    systemctl = Systemctl(enabled=True, active=True)
    assert su.ensure_running(systemctl, "x.service", restart=True) == ["restarted x.service"]


def test_check_mode_only_asks():
    systemctl = Systemctl()
    assert su.ensure_running(systemctl, "x.service", check_mode=True) == ["enabled x.service", "started x.service"]
    assert su.ensure_stopped(Systemctl(enabled=True, active=True), "x.service", check_mode=True) == [
        "stopped x.service", "disabled x.service"]
    assert not systemctl.enabled and not systemctl.active
    assert all(call.startswith("is-") for call in systemctl.calls)


def test_stopped_and_disabled_once():
    systemctl = Systemctl(enabled=True, active=True)
    assert su.ensure_stopped(systemctl, "x.service") == ["stopped x.service", "disabled x.service"]
    assert su.ensure_stopped(systemctl, "x.service") == []


def test_a_failed_start_names_the_unit_and_the_journal():
    with pytest.raises(su.UnitError, match=r"systemctl start x.service failed: Job for x.service failed .*"
                                           r"\(journalctl -u x.service\)"):
        su.ensure_running(Systemctl(enabled=True, failing=["start"]), "x.service")
