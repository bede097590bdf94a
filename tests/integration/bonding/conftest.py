"""Run ansible-playbook on this machine (connection local) with the working tree as gpufabric.core."""

import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def run_playbook(tmp_path):
    def run(playbook_text, extra_vars=None):
        playbook = tmp_path / "playbook.yml"
        playbook.write_text(playbook_text)
        env = dict(os.environ)
        env.update({
            "ANSIBLE_COLLECTIONS_PATH": str(ROOT / ".build" / "collections"),
            "ANSIBLE_ROLES_PATH": str(ROOT / "roles"),
            "ANSIBLE_HOST_KEY_CHECKING": "false",
            "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_LOCALHOST_WARNING": "false",
            "ANSIBLE_INVENTORY_UNPARSED_WARNING": "false",
        })
        if (ROOT / "ansible.cfg").exists():
            env["ANSIBLE_CONFIG"] = str(ROOT / "ansible.cfg")
        command = [str(ROOT / ".venv" / "bin" / "ansible-playbook"), "-i", "localhost,", "-c", "local",
                   "-e", "ansible_python_interpreter=%s" % (ROOT / ".venv" / "bin" / "python"), str(playbook)]
        if extra_vars is not None:
            vars_file = tmp_path / "vars.json"
            vars_file.write_text(json.dumps(extra_vars))
            command[-1:-1] = ["-e", "@%s" % vars_file]
        return subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600,
                              check=False)
    return run
