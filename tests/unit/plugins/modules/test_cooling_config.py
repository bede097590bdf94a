# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufabric.core.cooling_config run by Ansible on this machine, every path inside the test's directory.

The package it installs is the role's real controller package; the installed command then checks the written
configuration with its own check-config, as the unit's ExecStartPre does.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[4]
BIN = Path(sys.executable).parent
ROLE = ROOT / "roles" / "cooling"
SECRET = "s3cret-Passw0rd"
_CONFIG = Path(tempfile.gettempdir()) / ("gpufabric-unit-ansible-%d.cfg" % os.getuid())


def _run(args, *options):
    """One play on localhost; the arguments come from a file through a lookup, so Ansible never templates them
    (the controller package's Python contains Jinja-like text)."""
    _CONFIG.write_text("[defaults]\ninterpreter_python = %s\n" % sys.executable)
    work = Path(tempfile.mkdtemp(prefix="gpufabric-cooling-config-"))
    (work / "args.json").write_text(json.dumps(args))
    (work / "play.yml").write_text(
        "- hosts: localhost\n  connection: local\n  gather_facts: false\n  tasks:\n"
        "    - gpufabric.core.cooling_config: \"{{ lookup('ansible.builtin.file', '%s') | from_json }}\"\n" % (work / "args.json"))
    env = dict(os.environ, ANSIBLE_CONFIG=str(_CONFIG), ANSIBLE_COLLECTIONS_PATH=str(ROOT / ".build" / "collections"),
               ANSIBLE_NOCOLOR="1", ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json",
               ANSIBLE_LOCALHOST_WARNING="0")
    try:
        completed = subprocess.run([str(BIN / "ansible-playbook"), "-i", "localhost,", str(work / "play.yml"), *options],
                                   env=env, cwd=str(ROOT), capture_output=True, text=True, timeout=180, check=False)
    finally:
        shutil.rmtree(work)
    try:
        report = json.loads(completed.stdout)
    except ValueError:
        pytest.fail("ansible did not print JSON:\n%s\n%s" % (completed.stdout, completed.stderr))
    return report["plays"][0]["tasks"][0]["hosts"]["localhost"], completed.stdout + completed.stderr


def _package():
    variables = yaml.safe_load((ROLE / "vars" / "main.yml").read_text())
    return {name: (ROLE / "files" / "gpufabric_cooling" / name).read_text() for name in variables["__cooling_package_files"]}


def _module_utils():
    variables = yaml.safe_load((ROLE / "vars" / "main.yml").read_text())
    return {name: (ROOT / "plugins" / "module_utils" / name).read_text() for name in variables["__cooling_module_utils"]}


def _args(tmp_path, **overrides):
    state = tmp_path / "var"
    config = {"version": 1, "interval": 5, "stale_after": 20, "on_stop": "full", "hwmon_root": str(tmp_path / "hwmon"),
              "metrics_file": "", "state_dir": str(state),
              "bmc": {"ipmi": {"host": "192.0.2.10", "user": "admin", "password_file": str(tmp_path / "etc" / "ipmi.pass")}},
              "ipmi_profile": {},
              "zones": {"cpu": {"sensors": [{"backend": "ipmi", "selector": "CPU Temp"}],
                                "curve": [{"temp": 40, "duty": 30}, {"temp": 80, "duty": 100}],
                                "critical_temp": 85}},
              "fan_groups": {"chassis": {"backend": "hwmon", "target": "labfan/pwm1", "zones": ["cpu"]}}, "liquid": {}}
    args = {"config": config, "package": _package(), "module_utils": _module_utils(), "ipmi_password": SECRET,
            "ipmi_password_file": str(tmp_path / "etc" / "ipmi.pass"),
            "redfish_password_file": str(tmp_path / "etc" / "redfish.pass"),
            "lib_dir": str(tmp_path / "lib"), "config_dir": str(tmp_path / "etc"),
            "config_file": str(tmp_path / "etc" / "config.json"), "state_dir": str(state),
            "bin_path": str(tmp_path / "sbin-gpufabric-cooling"), "unit_file": str(tmp_path / "gpufabric-cooling.service"),
            "failsafe_record": str(state / "failsafe.record"), "watchdog_sec": 60}
    args.update(overrides)
    return args


def _mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_installs_everything_once_then_changes_nothing(tmp_path):
    (tmp_path / "hwmon").mkdir()
    args = _args(tmp_path)
    result, output = _run(args, "--diff")
    assert result["changed"] and result["restart_required"] and result["daemon_reload"], result
    assert SECRET not in output
    assert _mode(tmp_path / "etc" / "ipmi.pass") == 0o600
    assert (tmp_path / "etc" / "ipmi.pass").read_text() == SECRET + "\n"
    assert _mode(tmp_path / "etc") == 0o750 and _mode(tmp_path / "var") == 0o750
    assert _mode(tmp_path / "etc" / "config.json") == 0o640
    assert _mode(tmp_path / "sbin-gpufabric-cooling") == 0o755
    assert "WatchdogSec=60" in (tmp_path / "gpufabric-cooling.service").read_text()
    assert result["unit_present"] and not result["reboot_marker_present"]
    # The installed command (the real package) accepts the written configuration.
    check = subprocess.run([sys.executable, str(tmp_path / "sbin-gpufabric-cooling"), "check-config",
                            str(tmp_path / "etc" / "config.json")], capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stderr
    again, _output = _run(args)
    assert not again["changed"] and not again["restart_required"] and again["changes"] == [], again


def test_check_mode_writes_nothing_and_hides_the_password(tmp_path):
    result, output = _run(_args(tmp_path), "--check", "--diff")
    assert result["changed"] and result["restart_required"]
    assert SECRET not in output and "secret: %d bytes" % (len(SECRET) + 1) in output
    assert not (tmp_path / "etc").exists() and not (tmp_path / "lib").exists()


def test_a_changed_password_restarts_and_a_removed_one_is_deleted(tmp_path):
    args = _args(tmp_path)
    _run(args)
    result, output = _run(dict(args, ipmi_password="other-secret"), "--diff")
    assert result["restart_required"] and not result["daemon_reload"]
    assert "other-secret" not in output and SECRET not in output
    config = dict(args["config"], bmc={"ipmi": {"host": "192.0.2.10", "user": "admin"}})
    result, _output = _run(dict(args, ipmi_password="", config=config))
    assert result["changed"] and not (tmp_path / "etc" / "ipmi.pass").exists()


def test_a_bad_policy_changes_nothing_and_names_the_setting(tmp_path):
    args = _args(tmp_path)
    args["config"]["zones"]["cpu"]["critical_temp"] = 70  # below the curve's 100 % point at 80
    result, _output = _run(args)
    assert result.get("failed"), result
    assert "nothing was changed" in result["msg"] and "zones.cpu" in result["msg"], result["msg"]
    assert list(tmp_path.iterdir()) == []


def test_disabled_removes_only_the_password_files(tmp_path):
    args = _args(tmp_path)
    _run(args)
    result, _output = _run(dict(args, enabled=False, config={}, package={}, module_utils={}))
    assert result["changed"] and not result["restart_required"]
    assert not (tmp_path / "etc" / "ipmi.pass").exists()
    assert (tmp_path / "etc" / "config.json").exists() and (tmp_path / "gpufabric-cooling.service").exists()


def test_exports_the_reboot_facts_and_says_when_the_gpu_policy_cannot_apply(tmp_path):
    # This machine has no marker (/run/gpufabric/cooling-reboot-required) and no nvidia-smi, as the lab nodes.
    assert shutil.which("nvidia-smi") is None
    result, _output = _run(_args(tmp_path, gpu_policy=True), "--check")
    assert result["ansible_facts"] == {"cooling_reboot_reasons": [], "cooling_reboot_required": False}, result
    assert result["nvidia_smi_present"] is False
    gpu_warning = "GPU power policy (cooling_gpu_models) not applied: nvidia-smi is not installed"
    assert gpu_warning in result["warnings"], result["warnings"]
    # Without a GPU policy to apply, nothing to say.
    result, _output = _run(_args(tmp_path), "--check")
    assert gpu_warning not in result.get("warnings", []), result
