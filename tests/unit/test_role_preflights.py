"""The rdma, nccl and verify preflights refuse values that pass argument_specs but are wrong, naming the variable.

Runs ansible-playbook in check mode, with the role's preflight tag only, on two local hosts (local connection,
nothing is contacted): the role's first task after the argument validation is its controller-side check, and it must be the one that fails, on the host
with the bad value only, before any other task of the role runs. Each case was accepted by the old preflights:
patterns matched with `$` let a trailing newline through, paths were not normalised, the verify preflight ran once,
for the first host only, and allowed verify_gate_percent up to 200.
"""

import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

INVENTORY = """
all:
  hosts:
    node-a: {ansible_connection: local, ansible_python_interpreter: "{{ ansible_playbook_python }}"}
    node-b: {ansible_connection: local, ansible_python_interpreter: "{{ ansible_playbook_python }}"}
"""

PLAYBOOK = """
- name: Apply one role to two local hosts in check mode
  hosts: all
  gather_facts: false
  tasks:
    - name: Apply the role
      ansible.builtin.include_role:
        name: gpufabric.core.{role}
      tags: [always]
"""


def run_role(tmp_path, role, bad_host_vars):
    (tmp_path / "host_vars").mkdir()
    (tmp_path / "inventory.yml").write_text(INVENTORY)
    (tmp_path / "host_vars" / "node-b.yml").write_text(json.dumps(bad_host_vars))
    playbook = tmp_path / "play.yml"
    playbook.write_text(PLAYBOOK.format(role=role))
    env = dict(os.environ)
    env.update({
        "ANSIBLE_COLLECTIONS_PATH": str(ROOT / ".build" / "collections"),
        "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json",
        "ANSIBLE_LOCALHOST_WARNING": "false",
    })
    env.pop("ANSIBLE_CALLBACKS_ENABLED", None)
    # The verify role needs a second host for its sweep and an address for each host.
    extra = {"verify_sweep": True, "verify_bandwidth_tool": "iperf3", "verify_address": "127.0.0.1",
             "verify_report_dir": str(tmp_path / "report"), "verify_install_packages": False,
             "verify_nccl_single_node": False} if role == "verify" else {}
    result = subprocess.run(
        ["ansible-playbook", "-i", str(tmp_path / "inventory.yml"), "--check", "--tags", role + "_preflight", str(playbook), "-e", json.dumps(extra)],
        env=env, capture_output=True, text=True, timeout=300, check=False, cwd=str(tmp_path),
    )
    report = json.JSONDecoder().raw_decode(result.stdout[result.stdout.index("{"):])[0]
    return result.returncode, report


CASES = {
    "rdma memlock limit with a trailing newline": ("rdma", {"rdma_memlock_limit": "unlimited\n"}, "rdma_memlock_limit"),
    "rdma memlock domain with a carriage return": (
        "rdma", {"rdma_memlock_domains": ["*", "root\r"]}, "rdma_memlock_domains[1]"),
    "rdma mirror URL with a trailing newline": (
        "rdma", {"rdma_driver_source": "doca", "rdma_doca_repo_url": "https://mirror.example.org/doca/\n",
                 "rdma_doca_gpg_key_url": "https://mirror.example.org/k"},
        "rdma_doca_repo_url"),
    "nccl conf path escaping /etc/nccl": ("nccl", {"nccl_conf_path": "/etc/nccl/../../etc/passwd"}, "nccl_conf_path"),
    "nccl value with a trailing newline": (
        "nccl", {"nccl_variables": {"NCCL_IB_TIMEOUT": "22\n"}}, "nccl_variables.NCCL_IB_TIMEOUT"),
    "verify gate percent 0 on the second host": ("verify", {"verify_gate_percent": 0}, "verify_gate_percent"),
    "verify gate percent 150 on the second host": ("verify", {"verify_gate_percent": 150}, "verify_gate_percent"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_preflight_refuses_the_bad_host_only_naming_the_variable(tmp_path, case):
    role, bad, name = CASES[case]
    rc, report = run_role(tmp_path, role, bad)
    assert rc == 2, json.dumps(report["stats"])
    assert report["stats"]["node-b"]["failures"] == 1
    assert report["stats"]["node-b"]["changed"] == 0
    tasks = [task for play in report["plays"] for task in play["tasks"] if "node-b" in task["hosts"]]
    role_tasks = [task for task in tasks if task["task"]["name"].startswith("gpufabric.core.%s : " % role)]
    # The argument validation, then the controller-side check, which fails; nothing after it ran on node-b.
    names = [task["task"]["name"].split(" : ", 1)[1] for task in role_tasks]
    assert len(names) == 2 and names[0].startswith("Validating arguments against arg spec"), names
    assert "Check the role's variables on the controller" in names[1], names
    failed = role_tasks[1]["hosts"]["node-b"]
    assert failed.get("failed") and name + ":" in failed["msg"], failed
    # The same check passed on node-a, whose variables are the defaults.
    assert not role_tasks[1]["hosts"]["node-a"].get("failed"), role_tasks[1]["hosts"]["node-a"]


# node-a's Python does not exist: should a play get past the guard, its modules fail at once and change nothing
# on the machine running the test. The guard itself runs on the implicit localhost.
SITE_INVENTORY = """
all:
  children:
    gpu_nodes:
      hosts:
        node-a: {ansible_connection: local, ansible_python_interpreter: /nonexistent/python3}
"""


def run_playbook(tmp_path, playbook, *args):
    (tmp_path / "inventory.yml").write_text(SITE_INVENTORY)
    env = dict(os.environ)
    env.update({
        "ANSIBLE_COLLECTIONS_PATH": str(ROOT / ".build" / "collections"),
        "ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.default",
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_LOCALHOST_WARNING": "false",
    })
    env.pop("ANSIBLE_CALLBACKS_ENABLED", None)
    result = subprocess.run(
        ["ansible-playbook", "-i", str(tmp_path / "inventory.yml"), "--check", str(ROOT / "playbooks" / playbook), *args],
        env=env, capture_output=True, text=True, timeout=300, check=False, cwd=str(tmp_path),
    )
    return result.returncode, result.stdout + result.stderr


@pytest.mark.parametrize("serial", ["0", "-1", "ten"])
def test_site_refuses_a_bad_serial_before_any_task(tmp_path, serial):
    # Before, 0 and -1 ran every host in one batch and "ten" stopped with a Python traceback, after discovery.
    rc, out = run_playbook(tmp_path, "site.yml", "-e", "gpufabric_serial=" + serial)
    assert rc != 0, out
    assert "gpufabric_serial: must be" in out, out
    tasks = [line.split("]")[0] for line in out.splitlines() if line.startswith("TASK [")]
    assert tasks == ["TASK [Refuse a gpufabric_serial or gpufabric_max_fail_percentage that Ansible would misread"], tasks
    assert "Traceback" not in out and "probably a bug" not in out, out


def test_one_playbook_alone_refuses_a_bad_serial_before_any_task(tmp_path):
    rc, out = run_playbook(tmp_path, "nccl.yml", "-e", "gpufabric_serial=0")
    assert rc != 0, out
    assert "gpufabric_serial: must be at least 1 host per batch" in out, out
    assert "TASK [" not in out, out
