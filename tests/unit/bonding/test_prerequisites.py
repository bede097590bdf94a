# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What bond_config does before a transaction: the helper (the role's package of module_utils and its command) written
into a scratch tree (real files, modes and owners), and the backend's service against the systemctl stand-in tests/fake_systemctl.py (this machine runs no
systemd; the Molecule scenarios bonding and bonding_rollback drive the same code against real systemd)."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpufabric.core.plugins.module_utils.bonding import prerequisites as bpr
from ansible_collections.gpufabric.core.plugins.module_utils.hostio import file_transaction as ft
from ansible_collections.gpufabric.core.plugins.module_utils.bonding.validate import BACKENDS
from ansible_collections.gpufabric.core.plugins.module_utils.hostio.systemd_units import UnitError
from fake_systemctl import FakeSystemd

ROOT = Path(__file__).resolve().parents[3]
ROLE = ROOT / "roles" / "bonding"
# The role passes the collection's module_utils as they are (lookup with rstrip=false).
PACKAGE = {name: (ROOT / "plugins" / "module_utils" / name).read_text()
           for name in yaml.safe_load((ROLE / "vars" / "main.yml").read_text())["__bonding_helper_package"]}
ME = (os.getuid(), os.getgid())
NETWORKD = "systemd-networkd.service"


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def paths(tmp_path):
    return str(tmp_path / "usr" / "local" / "libexec" / "gpufabric-bonding-activate"), str(tmp_path / "lib")


def test_the_helper_is_installed_with_its_package_and_missing_directories_then_left_alone(tmp_path):
    helper, lib = paths(tmp_path)
    changes = bpr.plan_helper(helper, lib, PACKAGE, ME)
    tree = "lib/ansible_collections/gpufabric/core/plugins/module_utils"
    inits = ["lib/ansible_collections", "lib/ansible_collections/gpufabric", "lib/ansible_collections/gpufabric/core",
             "lib/ansible_collections/gpufabric/core/plugins", tree]
    inits += sorted({tree + "/" + os.path.dirname(name) for name in PACKAGE if os.path.dirname(name)})
    assert [(os.path.relpath(c["path"], str(tmp_path)), c["action"]) for c in changes] == [
        (directory + "/__init__.py", "create") for directory in inits] + [
        (tree + "/" + name, "create") for name in sorted(PACKAGE)] + [
        ("usr/local/libexec/gpufabric-bonding-activate", "create")]
    # Planning (all that check mode does) writes nothing.
    assert not (tmp_path / "usr").exists() and not (tmp_path / "lib").exists()

    umask = os.umask(0o077)
    try:
        bpr.install_helper(changes, helper, lib)
    finally:
        os.umask(umask)
    for directory in (tmp_path / "usr", tmp_path / "usr" / "local", tmp_path / "usr" / "local" / "libexec",
                      tmp_path / "lib", tmp_path / tree):
        assert mode(directory) == 0o755, directory
    assert mode(helper) == 0o755 and (os.stat(helper).st_uid, os.stat(helper).st_gid) == ME
    assert (tmp_path / tree / "hostio" / "file_transaction.py").read_text() == PACKAGE["hostio/file_transaction.py"]
    assert not [name for name in os.listdir(os.path.dirname(helper)) if name != "gpufabric-bonding-activate"]
    # The installed command runs the installed package: without a transaction it prints its usage.
    run = subprocess.run([helper], capture_output=True, text=True, check=False)
    assert run.returncode == 2 and "usage: gpufabric-bonding-activate apply|rollback" in run.stderr, run.stderr
    assert bpr.plan_helper(helper, lib, PACKAGE, ME) == []


def test_a_different_helper_is_replaced_and_a_loosened_mode_restored(tmp_path):
    helper, lib = paths(tmp_path)
    bpr.install_helper(bpr.plan_helper(helper, lib, PACKAGE, ME), helper, lib)
    # The bash helper of earlier versions, in the command's place.
    with open(helper, "w") as handle:
        handle.write("#!/usr/bin/env bash\nexit 0\n")
    changes = bpr.plan_helper(helper, lib, PACKAGE, ME)
    assert [c["action"] for c in changes] == ["replace"]
    assert ft.diff_entries(changes)[0]["before"] == "#!/usr/bin/env bash\nexit 0\n"
    bpr.install_helper(changes, helper, lib)
    os.chmod(helper, 0o777)
    changes = bpr.plan_helper(helper, lib, PACKAGE, ME)
    assert [c["action"] for c in changes] == ["mode"] and ft.diff_entries(changes)[0]["after"] == "mode 0755\n"
    bpr.install_helper(changes, helper, lib)
    assert mode(helper) == 0o755 and bpr.plan_helper(helper, lib, PACKAGE, ME) == []


def test_a_helper_owned_by_another_user_is_taken_back(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("only root can give a file to another user")
    helper, lib = paths(tmp_path)
    bpr.install_helper(bpr.plan_helper(helper, lib, PACKAGE), helper, lib)
    os.chown(helper, 4242, 4242)
    changes = bpr.plan_helper(helper, lib, PACKAGE)
    assert [c["action"] for c in changes] == ["owner"]
    assert ft.diff_entries(changes)[0]["before"] == "owner 4242:4242\n"
    bpr.install_helper(changes, helper, lib)
    assert (os.stat(helper).st_uid, os.stat(helper).st_gid) == (0, 0)


def test_a_directory_in_the_helpers_place_and_odd_package_names_are_refused(tmp_path):
    helper, lib = paths(tmp_path)
    os.makedirs(helper)
    with pytest.raises(ValueError, match="exists and is not a regular file"):
        bpr.plan_helper(helper, lib, PACKAGE, ME)
    assert bpr.package_problems({"../x.py": "", "x.sh": "", "__init__.py": "", "ok.py": "", "hostio/ok.py": ""}) == [
        "helper_package: '../x.py' is not a plain relative .py file name",
        "helper_package: '__init__.py' is not a plain relative .py file name",
        "helper_package: 'x.sh' is not a plain relative .py file name"]


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
