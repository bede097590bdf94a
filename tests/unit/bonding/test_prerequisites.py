# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What bond_config does before a transaction: the role's real helper written into a scratch tree (real files, modes
and owners), and the backend's service against the systemctl stand-in tests/fake_systemctl.py (this machine runs no
systemd; the Molecule scenarios bonding and bonding_rollback drive the same code against real systemd)."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpufabric.core.plugins.module_utils import bonding_prerequisites as bpr
from ansible_collections.gpufabric.core.plugins.module_utils.bonding_validate import BACKENDS
from ansible_collections.gpufabric.core.plugins.module_utils.systemd_units import UnitError
from fake_systemctl import FakeSystemd

ROOT = Path(__file__).resolve().parents[3]
ROLE = ROOT / "roles" / "bonding"
# The role passes the file as it is (lookup with rstrip=false).
HELPER = (ROLE / "files" / "gpufabric-bonding-activate").read_text()
ME = (os.getuid(), os.getgid())
NETWORKD = "systemd-networkd.service"


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_the_helper_is_written_with_its_missing_directories_then_left_alone(tmp_path):
    path = tmp_path / "usr" / "local" / "libexec" / "gpufabric-bonding-activate"
    change = bpr.plan_helper(str(path), HELPER, ME)
    assert change["action"] == "create" and change["before"] is None
    diff = bpr.helper_diff(change, ME)
    assert diff["before"] == "" and diff["after"] == HELPER
    # Planning (all that check mode does) writes nothing.
    assert not (tmp_path / "usr").exists()

    umask = os.umask(0o077)
    try:
        bpr.install_helper(change, ME)
    finally:
        os.umask(umask)
    assert path.read_bytes() == (ROLE / "files" / "gpufabric-bonding-activate").read_bytes()
    for directory in (tmp_path / "usr", tmp_path / "usr" / "local", path.parent):
        assert mode(directory) == 0o755 and (directory.stat().st_uid, directory.stat().st_gid) == ME
    assert mode(path) == 0o755 and (path.stat().st_uid, path.stat().st_gid) == ME
    assert not [name for name in os.listdir(path.parent) if name != path.name]  # no temporary file left
    # It runs: without a transaction it prints its usage.
    run = subprocess.run([str(path)], capture_output=True, text=True, check=False)
    assert run.returncode == 2 and "usage:" in run.stderr

    assert bpr.plan_helper(str(path), HELPER, ME) is None


def test_a_different_helper_is_replaced_and_a_loosened_mode_restored(tmp_path):
    path = tmp_path / "gpufabric-bonding-activate"
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)
    change = bpr.plan_helper(str(path), HELPER, ME)
    assert change["action"] == "replace"
    diff = bpr.helper_diff(change, ME)
    assert diff["before"] == "#!/bin/sh\nexit 0\n" and diff["after"] == HELPER
    bpr.install_helper(change, ME)
    assert path.read_text() == HELPER and mode(path) == 0o755

    path.chmod(0o777)
    change = bpr.plan_helper(str(path), HELPER, ME)
    assert change["action"] == "mode"
    assert bpr.helper_diff(change, ME)["after"] == "mode 0755\n"
    bpr.install_helper(change, ME)
    assert mode(path) == 0o755 and path.read_text() == HELPER
    assert bpr.plan_helper(str(path), HELPER, ME) is None


def test_a_helper_owned_by_another_user_is_taken_back(tmp_path):
    path = tmp_path / "gpufabric-bonding-activate"
    path.write_text(HELPER)
    path.chmod(0o755)
    other = (ME[0] + 4242, ME[1] + 4242)
    change = bpr.plan_helper(str(path), HELPER, other)
    assert change["action"] == "owner"
    assert bpr.helper_diff(change, other) == {
        "before_header": str(path), "after_header": str(path),
        "before": "owner %d:%d\n" % ME, "after": "owner %d:%d\n" % other}
    if os.geteuid() != 0:
        pytest.skip("only root can give a file to another user")
    bpr.install_helper(change, other)
    assert (path.stat().st_uid, path.stat().st_gid) == other and path.read_text() == HELPER
    bpr.install_helper(bpr.plan_helper(str(path), HELPER, ME), ME)
    assert (path.stat().st_uid, path.stat().st_gid) == ME


def test_a_directory_in_the_helpers_place_is_refused(tmp_path):
    (tmp_path / "gpufabric-bonding-activate").mkdir()
    with pytest.raises(ValueError, match="exists and is not a regular file"):
        bpr.plan_helper(str(tmp_path / "gpufabric-bonding-activate"), HELPER, ME)


@pytest.fixture
def networkd(tmp_path):
    unit = tmp_path / NETWORKD
    unit.write_text("[Service]\nExecStart=/lib/systemd/systemd-networkd\n")
    return unit


def test_a_stopped_disabled_service_is_enabled_and_started_once(tmp_path, networkd):
    systemd = FakeSystemd(tmp_path / "systemd.json", networkd)
    assert bpr.service_actions(systemd, NETWORKD, True) == ["enabled %s" % NETWORKD, "started %s" % NETWORKD]
    assert systemd.state()["enabled"] and systemd.state()["active"]
    calls = len(systemd.state()["calls"])
    assert bpr.service_actions(systemd, NETWORKD, True) == []
    assert systemd.state()["calls"][calls:] == ["is-enabled --quiet %s" % NETWORKD, "is-active --quiet %s" % NETWORKD]


def test_only_what_is_missing_is_done(tmp_path, networkd):
    stopped = FakeSystemd(tmp_path / "stopped.json", networkd, enabled=True)
    assert bpr.service_actions(stopped, NETWORKD, True) == ["started %s" % NETWORKD]
    assert stopped.actions() == ["start %s" % NETWORKD]
    disabled = FakeSystemd(tmp_path / "disabled.json", networkd, active=True)
    assert bpr.service_actions(disabled, NETWORKD, True) == ["enabled %s" % NETWORKD]
    assert disabled.actions() == ["enable %s" % NETWORKD]


def test_check_mode_reports_and_only_asks(tmp_path, networkd):
    systemd = FakeSystemd(tmp_path / "systemd.json", networkd)
    assert bpr.service_actions(systemd, NETWORKD, True, check_mode=True) == [
        "enabled %s" % NETWORKD, "started %s" % NETWORKD]
    assert systemd.actions() == [] and not systemd.state()["enabled"] and not systemd.state()["active"]


def test_not_activating_or_a_backend_without_service_asks_nothing(tmp_path, networkd):
    services = yaml.safe_load((ROLE / "vars" / "main.yml").read_text())["__bonding_services"]
    for backend in BACKENDS:
        systemd = FakeSystemd(tmp_path / ("%s.json" % backend), networkd)
        # As the role passes it: the backend's unit, '' for netplan (its renderer's service runs it).
        service = services.get(backend, "")
        if service:
            (tmp_path / service).write_text("[Service]\nExecStart=/bin/true\n")
        assert bpr.service_actions(systemd, service, False) == []
        assert systemd.state()["calls"] == []
        assert bool(bpr.service_actions(systemd, service, True)) == (backend != "netplan")


def test_a_service_that_does_not_start_fails_naming_it(tmp_path, networkd):
    systemd = FakeSystemd(tmp_path / "systemd.json", networkd, enabled=True, failing=("start",))
    with pytest.raises(UnitError, match="systemctl start %s failed: .* \\(journalctl -u %s\\)" % (NETWORKD, NETWORKD)):
        bpr.service_actions(systemd, NETWORKD, True)
    networkd.unlink()
    missing = FakeSystemd(tmp_path / "missing.json", networkd)
    with pytest.raises(UnitError, match="systemctl enable %s failed: Unit %s not found" % (NETWORKD, NETWORKD)):
        bpr.service_actions(missing, NETWORKD, True)
