# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""scripts/vmlab.sh refuses bad input with a clear message before it starts, builds or removes anything.

The VMs themselves run in the kernel Molecule scenario (whose snapshot `make test` saves first with `snapshot`) and
the VM benchmark; these tests start none.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VMLAB = ROOT / "scripts" / "vmlab.sh"
# A lab name no one uses, so that nothing of a real lab is touched.
LAB = "unit-test-%d" % os.getpid()


def run(*args, **env):
    environment = dict(os.environ, GPUFABRIC_VMLAB_NAME=LAB, **env)
    return subprocess.run([str(VMLAB), *args], capture_output=True, text=True, env=environment, timeout=60, check=False)


@pytest.mark.parametrize("count, message", [
    ("0", "VM count must be from 1 to 3, got 0"),
    ("4", "VM count must be from 1 to 3, got 4"),
    ("two", "VM count must be a whole number from 1 to 3, got 'two'"),
])
@pytest.mark.parametrize("command", ["up", "snapshot"])
def test_up_and_snapshot_refuse_a_bad_count_before_anything_starts(command, count, message):
    result = run(command, count)
    assert result.returncode == 1 and message in result.stderr
    assert not (ROOT / ".lab" / ("vm-" + LAB)).exists()


def test_snapshot_refuses_the_setting_that_saves_no_snapshot():
    result = run("snapshot", "2", GPUFABRIC_VMLAB_SNAPSHOT="0")
    assert result.returncode == 1 and "snapshot with GPUFABRIC_VMLAB_SNAPSHOT=0 saves nothing" in result.stderr
    assert not (ROOT / ".lab" / ("vm-" + LAB)).exists()


def test_link_and_ssh_refuse_a_vm_that_is_not_running():
    result = run("link", "vm01", "ens4", "off")
    assert result.returncode == 1 and "vm01 is not running in lab vm-%s" % LAB in result.stderr
    result = run("ssh", "node1", "true")
    assert result.returncode == 1 and "unknown VM 'node1'" in result.stderr


@pytest.mark.parametrize("args", [("link", "vm01", "ens4"), ("link", "vm01", "ens4", "off", "--both"), ("snapshot", "2", "3"),
                                  ("frobnicate",), ()])
def test_usage_errors(args):
    result = run(*args)
    assert result.returncode == 1 and "usage: scripts/vmlab.sh" in result.stderr


@pytest.mark.parametrize("setting, value, message", [
    ("GPUFABRIC_VMLAB_ACCEL", "hvf", "GPUFABRIC_VMLAB_ACCEL must be kvm or tcg, got 'hvf'"),
    ("GPUFABRIC_VMLAB_MEMORY", "64", "GPUFABRIC_VMLAB_MEMORY must be a number of MiB, at least 512, got '64'"),
    ("GPUFABRIC_VMLAB_SSH_PORT", "22", "GPUFABRIC_VMLAB_SSH_PORT must be a port number from 1024 to 65000, got '22'"),
    ("GPUFABRIC_VMLAB_LINK_PORT", "x", "GPUFABRIC_VMLAB_LINK_PORT must be a port number from 1024 to 65000, got 'x'"),
    ("GPUFABRIC_VMLAB_METRICS_PORT", "65100",
     "GPUFABRIC_VMLAB_METRICS_PORT must be a port number from 1024 to 65000, got '65100'"),
])
def test_a_bad_setting_is_named_before_anything_starts(setting, value, message):
    result = run("up", "1", **{setting: value})
    assert result.returncode == 1 and message in result.stderr
    assert "image" not in result.stderr
    assert not (ROOT / ".lab" / ("vm-" + LAB)).exists()
