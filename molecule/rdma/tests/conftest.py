"""Helpers for tests that run ansible-playbook against the scenario's instance from the verifier."""

import json
import os
import subprocess
from pathlib import Path

import pytest

SCENARIO_DIR = Path(__file__).resolve().parent.parent


def run_playbook(playbook, *args):
    """Run a playbook of this scenario on its inventory; return (rc, parsed JSON callback output, text)."""
    env = dict(os.environ)
    env["ANSIBLE_STDOUT_CALLBACK"] = "ansible.posix.json"
    env.pop("ANSIBLE_CALLBACKS_ENABLED", None)
    env["ANSIBLE_NOCOLOR"] = "1"
    command = ["ansible-playbook", "-i", env["MOLECULE_INVENTORY_FILE"], str(SCENARIO_DIR / playbook), *args]
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600, check=False)
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
