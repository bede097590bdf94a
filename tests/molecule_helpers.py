"""Helpers shared by the Molecule scenarios' verifier tests (molecule/<scenario>/tests) and the benchmarks that
reuse a scenario's lab: run a command in a lab container, run a scenario's playbook on Molecule's inventory and read
the ansible.posix.json report.

The scenarios' testinfra_hosts are podman:// hosts: each check runs through `podman exec` (a fraction of a second),
not through testinfra's Ansible backend, which has no podman connection and falls back to running a module per
check (1-3 s each).

Import after putting this folder on sys.path (a scenario's tests are collected from its own folder):
    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tests"))
    from molecule_helpers import podman_exec, run_playbook, task_results
"""

import json
import os
import subprocess

import pytest


def podman_exec(container, command, check=True, timeout=120):
    """Run `command` with bash in a lab container; return its stdout. With check, a non-zero exit fails naming the
    command, the container and what it printed."""
    result = subprocess.run(["podman", "exec", container, "bash", "-c", command], capture_output=True, text=True,
                            timeout=timeout, check=False)
    if check and result.returncode != 0:
        raise AssertionError("%s on %s failed (%d): %s%s" % (
            command, container, result.returncode, result.stdout, result.stderr))
    return result.stdout


def run_playbook(scenario_dir, playbook, *args, timeout=600):
    """Run a playbook of a scenario on Molecule's inventory; return (rc, parsed JSON callback output, text)."""
    env = dict(os.environ)
    env["ANSIBLE_STDOUT_CALLBACK"] = "ansible.posix.json"
    env.pop("ANSIBLE_CALLBACKS_ENABLED", None)
    env["ANSIBLE_NOCOLOR"] = "1"
    command = ["ansible-playbook", "-i", env["MOLECULE_INVENTORY_FILE"], os.path.join(str(scenario_dir), playbook),
               *args]
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    try:
        # Callbacks enabled in the scenario's ansible.cfg (profile_tasks) print after the JSON document.
        report = json.JSONDecoder().raw_decode(result.stdout[result.stdout.index("{"):])[0]
    except ValueError:
        pytest.fail("no JSON report from %s:\n%s\n%s" % (" ".join(command), result.stdout[-3000:], result.stderr[-3000:]))
    return result.returncode, report, result.stdout + result.stderr


def task_results(report, host):
    """[(task name without its role prefix, result)] for one host, in order."""
    return [
        (task["task"]["name"].split(" : ", 1)[-1], task["hosts"][host])
        for play in report["plays"]
        for task in play["tasks"]
        if host in task["hosts"]
    ]
