"""The role's configure phase removes the BMC password files once the controller (or the password) is gone.

Runs the role's own configure tasks with ansible-playbook on the controller host, the password file paths pointed
into the test's directory with extra vars (role vars are below extra vars in precedence); the controller is
disabled, so nothing else on this machine is touched. Removal while the controller stays enabled is covered by
the cooling Molecule scenario (test_password_file_is_removed_with_the_password).
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def test_password_files_are_removed_when_the_controller_is_turned_off(tmp_path):
    playbook_bin = shutil.which("ansible-playbook")
    if not playbook_bin:
        pytest.skip("ansible-playbook not on PATH (source scripts/env.sh)")
    ipmi, redfish = tmp_path / "ipmi.pass", tmp_path / "redfish.pass"
    for path in (ipmi, redfish):
        path.write_text("old-secret\n")
        path.chmod(0o600)
    playbook = tmp_path / "configure.yml"
    playbook.write_text(
        "- hosts: localhost\n  connection: local\n  gather_facts: false\n  tasks:\n"
        "    - ansible.builtin.include_role:\n        name: gpufabric.core.cooling\n        tasks_from: configure\n"
    )
    extra = {"cooling_controller_enabled": False, "__cooling_ipmi_password_file": str(ipmi),
             "__cooling_redfish_password_file": str(redfish),
             "cooling_bmc": {"ipmi": {"host": "192.0.2.10", "password": "still-set"}},
             "ansible_python_interpreter": sys.executable}
    env = dict(os.environ, ANSIBLE_ROLES_PATH=str(ROOT / "roles"))
    run = subprocess.run([playbook_bin, "-i", "localhost,", "-e", json.dumps(extra), str(playbook)],
                         capture_output=True, text=True, env=env, timeout=600, check=False)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert not ipmi.exists() and not redfish.exists()
    assert "old-secret" not in run.stdout and "still-set" not in run.stdout
