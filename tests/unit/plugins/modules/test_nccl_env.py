# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufabric.core.nccl_env run by Ansible on this machine, every path inside the test's directory."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[4]
BIN = Path(sys.executable).parent
_CONFIG = Path(tempfile.gettempdir()) / ("gpufabric-unit-ansible-%d.cfg" % os.getuid())


def _run(args, *options):
    _CONFIG.write_text("[defaults]\ninterpreter_python = %s\n" % sys.executable)
    env = dict(os.environ, ANSIBLE_CONFIG=str(_CONFIG), ANSIBLE_COLLECTIONS_PATH=str(ROOT / ".build" / "collections"),
               ANSIBLE_NOCOLOR="1", ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json",
               ANSIBLE_LOCALHOST_WARNING="0")
    completed = subprocess.run([str(BIN / "ansible"), "localhost", "-i", "localhost,", "-c", "local",
                                "-m", "gpufabric.core.nccl_env", "-a", json.dumps(args), *options],
                               env=env, cwd=str(ROOT), capture_output=True, text=True, timeout=180, check=False)
    try:
        report = json.loads(completed.stdout)
    except ValueError:
        pytest.fail("ansible did not print JSON:\n%s\n%s" % (completed.stdout, completed.stderr))
    return report["plays"][0]["tasks"][0]["hosts"]["localhost"]


def _args(tmp_path, **overrides):
    args = {"variables": {"NCCL_IB_HCA": "=mlx5_0:1", "NCCL_SOCKET_IFNAME": "=eth0"}, "topology_source": "snapshot",
            "conf_path": str(tmp_path / "nccl.conf"), "profile_script_path": str(tmp_path / "profile.d" / "nccl.sh"),
            "env_file_path": str(tmp_path / "default" / "nccl"),
            "topology_xml": "<system version=\"1\"><cpu numaid=\"0\"/></system>\n",
            "topology_xml_path": str(tmp_path / "nccl" / "topo.xml")}
    args.update(overrides)
    return args


def test_writes_all_files_once_then_changes_nothing(tmp_path):
    result = _run(_args(tmp_path), "--diff")
    assert result["changed"] and len(result["changes"]) == 4, result
    assert (tmp_path / "nccl.conf").read_text().endswith("NCCL_IB_HCA==mlx5_0:1\nNCCL_SOCKET_IFNAME==eth0\n")
    assert "export NCCL_IB_HCA==mlx5_0:1" in (tmp_path / "profile.d" / "nccl.sh").read_text()
    assert stat.S_IMODE(os.stat(tmp_path / "nccl" / "topo.xml").st_mode) == 0o644
    # A login shell reads the script as written.
    shell = subprocess.run(["/bin/sh", "-c", ". %s && echo $NCCL_IB_HCA" % (tmp_path / "profile.d" / "nccl.sh")],
                           capture_output=True, text=True, check=True)
    assert shell.stdout == "=mlx5_0:1\n"
    again = _run(_args(tmp_path))
    assert not again["changed"] and again["changes"] == [], again


def test_check_mode_writes_nothing(tmp_path):
    result = _run(_args(tmp_path), "--check", "--diff")
    assert result["changed"]
    assert list(tmp_path.iterdir()) == []


def test_turned_off_files_are_removed_in_the_same_transaction(tmp_path):
    _run(_args(tmp_path))
    result = _run(_args(tmp_path, profile_script_path="", profile_script_remove=str(tmp_path / "profile.d" / "nccl.sh"),
                        topology_xml=""))
    assert sorted((c["action"], Path(c["path"]).name) for c in result["changes"]) == [("remove", "nccl.sh"),
                                                                                      ("remove", "topo.xml")]
    assert not (tmp_path / "profile.d" / "nccl.sh").exists() and not (tmp_path / "nccl" / "topo.xml").exists()


def test_broken_xml_writes_nothing_at_all(tmp_path):
    result = _run(_args(tmp_path, topology_xml="<system><cpu></system>\n"))
    assert result.get("failed") and "not well-formed XML" in result["msg"], result
    assert not (tmp_path / "nccl.conf").exists()
    assert not (tmp_path / "profile.d" / "nccl.sh").exists()


def _verifying(tmp_path, **overrides):
    """Arguments that verify, with other NCCL settings looked for inside the test's directory only."""
    (tmp_path / "etc").mkdir(exist_ok=True)
    return _args(tmp_path, other_settings_globs=[str(tmp_path / "etc" / "*.sh"), str(tmp_path / "profile.d" / "*.sh")],
                 **overrides)


def test_verifies_after_a_change_and_not_on_a_run_that_changes_nothing(tmp_path):
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "cuda.sh").write_text("export PATH=/usr/local/cuda/bin:$PATH\n  export NCCL_IB_HCA=mlx5\n")
    (tmp_path / "etc" / "other.sh").write_text("export CUDA_HOME=/usr/local/cuda\n")
    first = _run(_verifying(tmp_path))
    assert first["changed"] and first["verified"], first
    # The module's own profile script sets NCCL variables by design: only the other file is named.
    assert first["other_settings"] == [str(tmp_path / "etc" / "cuda.sh")]
    assert any("environment wins over %s" % (tmp_path / "nccl.conf") in warning for warning in first["warnings"])
    again = _run(_verifying(tmp_path))
    assert not again["changed"] and not again["verified"] and again["other_settings"] == [], again


def test_always_verifies_and_fails_when_something_else_rewrote_the_file(tmp_path):
    _run(_verifying(tmp_path))
    conf = tmp_path / "nccl.conf"
    conf.write_text(conf.read_text() + "NCCL_GRAPH_FILE=/etc/old.xml\n")
    # Only reading: the file is named, not rewritten.
    result = _run(_verifying(tmp_path, verify="always", write=False, retired=["NCCL_GRAPH_FILE"]))
    assert result.get("failed") and not result["changed"], result
    assert "Something else writes this file" in result["msg"] and "NCCL_GRAPH_FILE" in result["msg"]
    assert [change["action"] for change in result["changes"]] == ["replace"]
    assert conf.read_text().endswith("NCCL_GRAPH_FILE=/etc/old.xml\n")
    # A run that writes puts it right and verifies what it wrote.
    fixed = _run(_verifying(tmp_path, verify="always", retired=["NCCL_GRAPH_FILE"]))
    assert fixed["changed"] and fixed["verified"] and not fixed.get("failed"), fixed


def test_check_mode_does_not_read_back_what_it_did_not_write(tmp_path):
    result = _run(_verifying(tmp_path, verify="always"), "--check")
    assert result["changed"] and result["verified"] and not result.get("failed"), result
    assert not (tmp_path / "nccl.conf").exists()


def test_never_verifies(tmp_path):
    result = _run(_verifying(tmp_path, verify="never"))
    assert result["changed"] and not result["verified"], result
