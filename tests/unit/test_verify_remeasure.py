"""The verify role measures again the pairs whose perftest could not measure the CPU clock, and only those.

perftest prints zeros when its clock check fails (tests/fixtures/lab_qemu/lab-qemu-ib_write_bw-rxe0-vlan-client.txt,
captured on a loaded VM); bandwidth_client reports such a result with clock_unmeasured and an error. The role's
remeasure pass (roles/verify/tasks/remeasure.yml) runs here with ansible-playbook on three local hosts: node-a's
result of round 1 is unmeasured, node-c's of round 2 was measured. The pass must find node-a -> node-b alone, measure
it again with a real iperf3 on 127.0.0.1 through the role's own round (bandwidth_server, bandwidth_client) and put
the new result in the old one's place, keeping its round; node-c's stays as it was.
"""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

INVENTORY = """
all:
  vars:
    ansible_connection: local
    ansible_python_interpreter: "{{ ansible_playbook_python }}"
    verify_address: 127.0.0.1
  hosts:
    node-a:
    node-b:
    node-c:
"""

UNMEASURED = {"tool": "ib_write_bw", "client": "node-a", "server": "node-b", "rail": 0, "round": 1,
              "client_to_server_gbps": None, "clock_unmeasured": True,
              "error": "ib_write_bw could not measure this host's CPU clock (Correlation coefficient r^2: 0.798944 "
                       "< 0.9), so the zeros it printed are no measurement"}
MEASURED = {"tool": "ib_write_bw", "client": "node-c", "server": "node-a", "rail": 0, "round": 2,
            "client_to_server_gbps": 0.0305, "clock_unmeasured": False, "error": None}

PLAYBOOK = """
- name: Measure again what perftest could not time
  hosts: all
  gather_facts: false
  vars:
    verify_bandwidth_tool: iperf3
    verify_duration: 1
    verify_bidirectional: false
    # Away from iperf3's own port and the lab's.
    verify_base_port: 25931
    verify_poll_interval: 1
  tasks:
    - name: The results of the first pass (as plan.yml and the rounds leave them)
      ansible.builtin.set_fact:
        __verify_results: "{{ first_pass[inventory_hostname] }}"
        __verify_path_mtu: []

    - name: Measure again
      ansible.builtin.include_role:
        name: gpufabric.core.verify
        tasks_from: remeasure.yml

    - name: Show what the pass found and kept
      ansible.builtin.debug:
        msg: {found: "{{ __verify_remeasure_rounds }}", results: "{{ __verify_results }}", path_mtu: "{{ __verify_path_mtu }}"}
"""


@pytest.mark.skipif(shutil.which("iperf3") is None, reason="iperf3 is installed by scripts/setup.sh")
def test_only_the_unmeasured_pair_is_measured_again_in_its_round(tmp_path):
    (tmp_path / "inventory.yml").write_text(INVENTORY)
    (tmp_path / "play.yml").write_text(PLAYBOOK)
    first_pass = {"node-a": [UNMEASURED], "node-b": [], "node-c": [MEASURED]}
    env = dict(os.environ)
    env.update({
        "ANSIBLE_COLLECTIONS_PATH": str(ROOT / ".build" / "collections"),
        "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json",
        "ANSIBLE_LOCALHOST_WARNING": "false",
    })
    env.pop("ANSIBLE_CALLBACKS_ENABLED", None)
    result = subprocess.run(
        ["ansible-playbook", "-i", "inventory.yml", "play.yml", "-e", json.dumps({"first_pass": first_pass})],
        env=env, capture_output=True, text=True, timeout=300, check=False, cwd=str(tmp_path),
    )
    report = json.JSONDecoder().raw_decode(result.stdout[result.stdout.index("{"):])[0]
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    shown = {host: outcome["msg"] for task in report["plays"][0]["tasks"]
             if task["task"]["name"] == "Show what the pass found and kept"
             for host, outcome in task["hosts"].items()}
    # Found once, for every host alike: the one pair, in its own round.
    assert {json.dumps(msg["found"]) for msg in shown.values()} == {json.dumps([{"number": 1, "pairs": [["node-a", "node-b"]]}])}
    [again] = shown["node-a"]["results"]
    assert (again["tool"], again["client"], again["server"], again["round"]) == ("iperf3", "node-a", "node-b", 1), again
    assert again["error"] is None and again["clock_unmeasured"] is False, again
    assert again["client_to_server_gbps"] > 0, again
    assert shown["node-b"]["results"] == []
    assert shown["node-c"]["results"] == [MEASURED]
    # Its path was proven in its first round: measuring again sends no DF probe.
    assert all(msg["path_mtu"] == [] for msg in shown.values())
