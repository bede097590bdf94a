# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufabric.core.report_files run by Ansible on this machine, every path inside the test's directory."""

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
                                "-m", "gpufabric.core.report_files", "-a", json.dumps(args), *options],
                               env=env, cwd=str(ROOT), capture_output=True, text=True, timeout=180, check=False)
    try:
        report = json.loads(completed.stdout)
    except ValueError:
        pytest.fail("ansible did not print JSON:\n%s\n%s" % (completed.stdout, completed.stderr))
    return report["plays"][0]["tasks"][0]["hosts"]["localhost"]


FILES = {"fabric_map.json": '{\n  "hosts": {}\n}\n', "fabric_map.html": "<!DOCTYPE html>\n<title>map</title>\n"}


def test_check_mode_writes_nothing_then_both_files_and_the_directory_then_nothing(tmp_path):
    reports = tmp_path / "a" / "reports"
    checked = _run({"path": str(reports), "files": FILES}, "--check", "--diff")
    assert checked["changed"] and [c["action"] for c in checked["changes"]] == ["create", "create"], checked
    assert [d["after"] for d in checked["diff"]] == [FILES["fabric_map.html"], FILES["fabric_map.json"]]
    assert not (tmp_path / "a").exists()

    written = _run({"path": str(reports), "files": FILES, "directory_mode": "0750"})
    assert written["changed"], written
    assert {p.name: p.read_text() for p in reports.iterdir()} == FILES
    assert stat.S_IMODE(reports.stat().st_mode) == 0o750
    assert {stat.S_IMODE(p.stat().st_mode) for p in reports.iterdir()} == {0o644}

    again = _run({"path": str(reports), "files": FILES, "directory_mode": "0750"}, "--check")
    assert not again["changed"] and again["changes"] == [], again
    again = _run({"path": str(reports), "files": FILES})
    assert not again["changed"], again
    # An existing directory keeps its mode.
    assert stat.S_IMODE(reports.stat().st_mode) == 0o750


def test_a_changed_report_replaces_only_that_file_with_a_diff(tmp_path):
    _run({"path": str(tmp_path), "files": FILES})
    changed = dict(FILES, **{"fabric_map.json": '{\n  "hosts": {"node1": {}}\n}\n'})
    result = _run({"path": str(tmp_path), "files": changed}, "--diff")
    assert result["changes"] == [{"path": str(tmp_path / "fabric_map.json"), "action": "replace"}], result
    assert result["diff"][0]["before"] == FILES["fabric_map.json"]
    assert (tmp_path / "fabric_map.json").read_text() == changed["fabric_map.json"]
    os.chmod(tmp_path / "fabric_map.html", 0o600)
    result = _run({"path": str(tmp_path), "files": changed})
    assert [c["action"] for c in result["changes"]] == ["mode"]
    assert stat.S_IMODE((tmp_path / "fabric_map.html").stat().st_mode) == 0o644


@pytest.mark.parametrize("args, message", [
    ({"files": {"../escape.json": "x"}}, "each name must be a file name without a directory part; got '../escape.json'"),
    ({"files": {"a.json": "x"}, "mode": "rw-r--r--"}, "mode: must be an octal mode such as '0644' (quoted); got 'rw-r--r--'"),
    ({"files": {"a.json": "x"}, "mode": "0666"}, "mode: 0666 lets every local user write the file"),
])
def test_bad_arguments_write_nothing(tmp_path, args, message):
    result = _run(dict(args, path=str(tmp_path / "reports")))
    assert result.get("failed") and message in result["msg"], result
    assert not (tmp_path / "reports").exists()


@pytest.mark.parametrize("key, number", [("mode", 416), ("directory_mode", 493)])
def test_report_mode_given_as_unquoted_yaml_int_is_refused(tmp_path, key, number):
    """YAML reads an unquoted `mode: 0640` as 416 (0755 as 493). Taken as the string "416" and read as octal, it
    wrote the report 0416, which every local user could write; now the number is refused, asking for quotes."""
    result = _run({"path": str(tmp_path / "reports"), "files": {"a.json": "x"}, key: number})
    assert result.get("failed"), result
    assert "%s: got the number %d" % (key, number) in result["msg"] and "Quote the mode" in result["msg"], result
    assert not (tmp_path / "reports").exists()
