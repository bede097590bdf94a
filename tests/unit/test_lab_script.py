# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""scripts/lab.sh refuses a bad release or release list with a clear message before it builds or starts anything.

The lab itself (images, nodes) is exercised by the site test and the Molecule scenarios; these tests start nothing.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LAB_SH = ROOT / "scripts" / "lab.sh"
# A lab name no one uses, so that nothing of a real lab is touched.
LAB = "unit-test-%d" % os.getpid()


def run(*args, **env):
    environment = {k: v for k, v in os.environ.items() if not k.startswith("GPUFABRIC_LAB_")}
    environment.update(GPUFABRIC_LAB_NAME=LAB, **env)
    return subprocess.run([str(LAB_SH), *args], capture_output=True, text=True, env=environment, timeout=60,
                          check=False)


@pytest.mark.parametrize("args, env, message", [
    (("up", "2"), {"GPUFABRIC_LAB_RELEASE": "sid"},
     "release must be one of bookworm trixie forky (or debian12, debian13, debian14), got 'sid'"),
    (("up", "3"), {"GPUFABRIC_LAB_RELEASES": "bookworm trixie"},
     "GPUFABRIC_LAB_RELEASES names 2 release(s) for 3 node(s): give one per node"),
    (("up", "2"), {"GPUFABRIC_LAB_RELEASES": "debian12 debian15"},
     "release must be one of bookworm trixie forky (or debian12, debian13, debian14), got 'debian15'"),
    (("image",), {"GPUFABRIC_LAB_RELEASE": "buster"},
     "release must be one of bookworm trixie forky (or debian12, debian13, debian14), got 'buster'"),
])
def test_a_bad_release_is_named_before_anything_starts(args, env, message):
    result = run(*args, **env)
    assert result.returncode == 1
    assert message in result.stderr
    assert "building" not in result.stderr
    assert not (ROOT / ".lab" / LAB).exists()
    assert not (ROOT / "inventories" / "lab" / (LAB + ".yml")).exists()


def test_usage_error():
    result = run("frobnicate")
    assert result.returncode == 1 and "usage: scripts/lab.sh" in result.stderr
