"""The role_summary callback counts, per role, the tasks one host ran and how many of them were skipped, and apart
the tasks run once for the batch.

Runs a real ansible-playbook on two local hosts (local connection, nothing is contacted) with a throwaway role of
three tasks, one of them skipped on one host, and two tasks outside the role, one of them run once.
"""

import os
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]

INVENTORY = """
all:
  hosts:
    node-a: {ansible_connection: local, ansible_python_interpreter: "{{ ansible_playbook_python }}"}
    node-b: {ansible_connection: local, ansible_python_interpreter: "{{ ansible_playbook_python }}"}
"""

ROLE_TASKS = """
- name: First
  ansible.builtin.ping:
- name: Only on node-a
  ansible.builtin.ping:
  when: inventory_hostname == "node-a"
- name: Loop of three items counts as one task
  ansible.builtin.debug:
    msg: "{{ item }}"
  loop: [1, 2, 3]
"""

PLAYBOOK = """
- name: Counted play
  hosts: all
  gather_facts: false
  roles:
    - counted
  tasks:
    - name: Outside the role
      ansible.builtin.ping:
    - name: Once for the batch, skipped
      ansible.builtin.ping:
      run_once: true
      when: false
"""


def test_tasks_per_host_and_skipped_per_role(tmp_path):
    (tmp_path / "roles" / "counted" / "tasks").mkdir(parents=True)
    (tmp_path / "roles" / "counted" / "tasks" / "main.yml").write_text(ROLE_TASKS)
    (tmp_path / "inventory.yml").write_text(INVENTORY)
    (tmp_path / "play.yml").write_text(PLAYBOOK)
    env = dict(os.environ)
    env.update({
        "ANSIBLE_COLLECTIONS_PATH": str(ROOT / ".build" / "collections"),
        "ANSIBLE_CALLBACKS_ENABLED": "gpufabric.core.role_summary",
        "ANSIBLE_ROLES_PATH": str(tmp_path / "roles"),
        "ANSIBLE_LOCALHOST_WARNING": "false",
    })
    result = subprocess.run(["ansible-playbook", "-i", "inventory.yml", "play.yml"], env=env, cwd=str(tmp_path),
                            capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    summary = result.stdout[result.stdout.index("GPUFABRIC ROLE SUMMARY"):]
    # Each host has three results from the role (the loop is one task); node-b's include the skipped one, and the
    # busiest host's line shows its skips.
    role_line = re.search(r"^role counted\s+ok=2\s+changed=0\s+failed=0\s+unreachable=0\s+skipped=1\s+(.*)$",
                          summary, re.M)
    assert role_line, summary
    assert role_line.group(1) == "tasks/host=3 (skipped 1)"
    # The run_once task is counted apart, on the one host that ran it, and not in that host's tasks.
    assert re.search(r"^play Counted play\s+ok=2 .* skipped=1 +tasks/host=1 \(skipped 0\)  once=1$", summary, re.M), summary
