# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The bonding role, run for real by ansible-playbook, stops on bad input before it changes anything.

Each case includes the role in a block and keeps its failure message; the play then proves that no task changed
anything and that the files the install phase would write do not exist.
"""

from __future__ import annotations

import json

import pytest

BOND = {"name": "bond0", "members": ["ens1f0np0", "ens1f1np1"]}

CASES = {
    "unknown mode": ({"bonding_bonds": [dict(BOND, mode="802.3ae")]}, ["mode", "bonding_bonds", "802.3ae"]),
    "unknown hash policy": ({"bonding_bonds": [dict(BOND, xmit_hash_policy="layer9")]},
                            ["xmit_hash_policy", "bonding_bonds", "layer9"]),
    "unknown lacp rate": ({"bonding_bonds": [dict(BOND, lacp_rate="turbo")]}, ["lacp_rate", "bonding_bonds", "turbo"]),
    "role-wide lacp rate": ({"bonding_bonds": [BOND], "bonding_lacp_rate": "turbo"}, ["bonding_lacp_rate", "turbo"]),
    "mtu out of range": ({"bonding_bonds": [dict(BOND, mtu=9300)]},
                         ["bonding_bonds[0] (bond0).mtu: 9300 is out of range 1280-9216"]),
    "address not an address": ({"bonding_bonds": [BOND],
                                "bonding_vlans": [{"id": 100, "link": "bond0", "addresses": ["10.0.0.256/24"]}]},
                               ["bonding_vlans[0].addresses[0]: '10.0.0.256/24' is not an IP address"]),
    "vlan id over 4094": ({"bonding_bonds": [BOND], "bonding_vlans": [{"id": 4095, "link": "bond0"}]},
                          ["bonding_vlans[0].id: 4095 is out of range 1-4094"]),
    "member in two bonds": ({"bonding_bonds": [BOND, {"name": "bond1", "members": ["ens1f1np1", "ens2f0"]}]},
                            ["bonding_bonds[1] (bond1).members[0]: ens1f1np1 is already a member of "
                             "bonding_bonds[0] (bond0)"]),
    "rollback shorter than the confirmation": ({"bonding_bonds": [BOND], "bonding_rollback_timeout": 60},
                                               ["bonding_rollback_timeout (60 s) must be at least"]),
    # It reaches the rollback units' ExecStart line, run as root.
    "state dir adding a unit line": ({"bonding_bonds": [BOND],
                                      "bonding_state_dir": "/var/lib/gpufabric/bonding\nExecStartPre=/bin/true"},
                                     ["bonding_state_dir: must be an absolute directory"]),
}

PLAYBOOK = """
- name: Every bad input, one role run each
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Run the role on one case
      ansible.builtin.include_tasks: case.yml
      loop: "{{ cases | dict2items }}"
      loop_control:
        loop_var: case

    - name: Look for what the install phase would have written
      ansible.builtin.stat:
        path: "{{ item }}"
      loop: [/usr/local/libexec/gpufabric-bonding-activate, /var/lib/gpufabric/bonding]
      register: written

    # Printed, not written to a file: the play must change nothing at all.
    - name: Show the messages
      ansible.builtin.debug:
        msg: "RESULT={{ {'messages': messages, 'written': written.results | selectattr('stat.exists')
                     | map(attribute='item') | list} | to_json }}"
"""

CASE = """
- name: Case {{ case.key }}
  block:
    - name: Include the role
      ansible.builtin.include_role:
        name: gpufabric.core.bonding
      vars:
        bonding_bonds: "{{ case.value.bonding_bonds | default([]) }}"
        bonding_vlans: "{{ case.value.bonding_vlans | default([]) }}"
        bonding_lacp_rate: "{{ case.value.bonding_lacp_rate | default('fast') }}"
        bonding_rollback_timeout: "{{ case.value.bonding_rollback_timeout | default(180) }}"
        bonding_state_dir: "{{ case.value.bonding_state_dir | default('/var/lib/gpufabric/bonding') }}"
        bonding_backend: networkd
    - name: Record a run that did not fail
      ansible.builtin.set_fact:
        messages: "{{ messages | default({}) | combine({case.key: 'NO FAILURE'}) }}"
  rescue:
    - name: Record the failure
      ansible.builtin.set_fact:
        messages: "{{ messages | default({}) | combine({case.key: ansible_failed_task.name ~ ' => '
                      ~ ansible_failed_result.msg}) }}"
"""


@pytest.fixture(scope="module")
def outcome(tmp_path_factory):
    import os
    import subprocess
    from pathlib import Path
    root = Path(__file__).resolve().parents[3]
    work = tmp_path_factory.mktemp("bad_inputs")
    (work / "playbook.yml").write_text(PLAYBOOK)
    (work / "case.yml").write_text(CASE)
    (work / "vars.json").write_text(json.dumps({"cases": {k: v[0] for k, v in CASES.items()}}))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(root / ".build" / "collections"),
               ANSIBLE_ROLES_PATH=str(root / "roles"), ANSIBLE_NOCOLOR="1", ANSIBLE_LOCALHOST_WARNING="false",
               ANSIBLE_STDOUT_CALLBACK="ansible.builtin.default", ANSIBLE_CALLBACK_RESULT_FORMAT="json")
    run = subprocess.run([str(root / ".venv" / "bin" / "ansible-playbook"), "-i", "localhost,", "-c", "local",
                          "-e", "ansible_python_interpreter=%s" % (root / ".venv" / "bin" / "python"),
                          "-e", "@%s" % (work / "vars.json"), str(work / "playbook.yml")],
                         capture_output=True, text=True, env=env, cwd=work, timeout=900, check=False)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    recap = run.stdout.split("PLAY RECAP", 1)[1]
    line = next(line for line in run.stdout.splitlines() if '"msg": "RESULT=' in line)
    printed = json.loads("{%s}" % line.strip().rstrip(","))["msg"]
    return json.loads(printed[len("RESULT="):]), recap


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_fails_naming_the_variable(outcome, case):
    result, dummy = outcome
    message = result["messages"][case]
    assert message != "NO FAILURE"
    for expected in CASES[case][1]:
        assert expected in message, message
    # Stopped by the argument spec or by the preflight checks, before the host is touched.
    assert message.startswith(("Validating arguments against arg spec", "Validate bonds, VLANs",
                               "Check that the rollback leaves time")), message


def test_nothing_changed_on_the_host(outcome):
    result, recap = outcome
    assert "changed=0" in recap and "failed=0" in recap, recap
    assert result["written"] == []
