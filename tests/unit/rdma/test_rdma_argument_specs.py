"""The rdma role's argument_specs stop bad input in the first task, naming the variable.

Runs ansible-playbook on localhost in check mode: the role fails in its argument validation, before any task
that could touch the machine (and check mode would change nothing anyway). Molecule's rdma scenario repeats
this against a converged lab node and checks the node did not change. That defaults/main.yml and the specs agree is
checked for every role in tests/integration/test_docs.py.
"""

import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

PLAYBOOK = """
- name: Apply the rdma role on the controller in check mode
  hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Apply the rdma role
      ansible.builtin.include_role:
        name: gpufabric.core.rdma
"""


def run_role(tmp_path, extra_vars):
    playbook = tmp_path / "play.yml"
    playbook.write_text(PLAYBOOK)
    env = dict(os.environ)
    env.update({
        "ANSIBLE_COLLECTIONS_PATH": str(ROOT / ".build" / "collections"),
        "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json",
        "ANSIBLE_CALLBACKS_ENABLED": "ansible.posix.profile_tasks",
        "ANSIBLE_LOCALHOST_WARNING": "false",
        "ANSIBLE_INVENTORY_UNPARSED_WARNING": "false",
    })
    result = subprocess.run(
        ["ansible-playbook", "-i", "localhost,", "--check", str(playbook), "-e", json.dumps(extra_vars)],
        env=env, capture_output=True, text=True, timeout=300, check=False, cwd=str(tmp_path),
    )
    report = json.JSONDecoder().raw_decode(result.stdout[result.stdout.index("{"):])[0]
    return result.returncode, report


@pytest.mark.parametrize("extra_vars, words", [
    ({"rdma_driver_source": "ofed_tarball"}, ["rdma_driver_source", "ofed_tarball", "inbox, doca"]),
    ({"rdma_reboot_ok": "perhaps"}, ["rdma_reboot_ok", "bool"]),
    ({"rdma_module_options": ["ib_uverbs"]}, ["rdma_module_options", "dict"]),
], ids=["unknown-driver-source", "wrong-type-bool", "wrong-type-dict"])
def test_bad_input_fails_in_argument_validation(tmp_path, extra_vars, words):
    rc, report = run_role(tmp_path, extra_vars)
    assert rc == 2
    tasks = [task for play in report["plays"] for task in play["tasks"]
             if task["task"]["name"].startswith("gpufabric.core.rdma : ")]
    # The validation is the first task of the role and the only one of its tasks that ran.
    assert len(tasks) == 1
    assert tasks[0]["task"]["name"].startswith("gpufabric.core.rdma : Validating arguments against arg spec")
    result = tasks[0]["hosts"]["localhost"]
    assert result["failed"] is True
    for word in words:
        assert word in result["msg"], result["msg"]
    assert report["stats"]["localhost"]["changed"] == 0
