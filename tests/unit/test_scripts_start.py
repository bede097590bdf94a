# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The project's Python scripts start the way `make run` and `make docs` start them: a child process with the
environment scripts/env.sh gives (the venv's PATH, nothing on PYTHONPATH), from another working directory.

pytest itself puts the collection on sys.path (conftest.py), so an import that only works under pytest passes every
other test; `make run` once ran the whole lab and then exited 2 on scripts/lab_alerts.py's
"No module named 'ansible_collections.gpufabric'". Each script's --help imports everything the script imports.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(path.name for path in (ROOT / "scripts").glob("*.py") if "argparse" in path.read_text())


def test_every_argparse_script_is_covered():
    assert {"docs.py", "lab_alerts.py", "screenshot.py"} <= set(SCRIPTS)


@pytest.mark.parametrize("script", SCRIPTS)
def test_script_imports_and_prints_its_usage_outside_pytest(script, tmp_path):
    environment = {"PATH": "%s:/usr/bin:/bin" % Path(sys.executable).parent, "HOME": str(tmp_path), "LANG": "C.UTF-8"}
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / script), "--help"], cwd=tmp_path, env=environment,
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: "), proc.stdout
