# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufabric.core.bond_config run for real on this machine against a scratch directory.

The four steps of a module integration test (check mode: changed with a diff; apply: changed; check mode: not
changed; apply: not changed), with systemd-networkd itself validating the files in an isolated namespace. The
activation and rollback need systemd as PID 1 and are tested by the Molecule scenarios.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

PLAYBOOK = """
- name: Four steps of bond_config
  hosts: localhost
  gather_facts: false
  module_defaults:
    gpufabric.core.bond_config:
      backend: networkd
      config_dir: "{{ work }}/network"
      state_dir: "{{ work }}/state"
      activate: false
      bonds:
        - {name: bond0, members: [ens1f0np0, ens1f1np1]}
      vlans:
        - {id: 200, link: bond0, addresses: [10.200.0.11/24]}
  tasks:
    - name: Check mode on an empty directory
      gpufabric.core.bond_config:
      check_mode: true
      diff: true
      register: check1
    - name: List the directory after check mode
      ansible.builtin.find:
        paths: "{{ work }}/network"
      register: after_check
    - name: Apply
      gpufabric.core.bond_config:
      register: apply1
    - name: Check mode again
      gpufabric.core.bond_config:
      check_mode: true
      register: check2
    - name: Apply again
      gpufabric.core.bond_config:
      register: apply2
    - name: A bad value the module refuses by itself
      gpufabric.core.bond_config:
        bonds:
          - {name: bond0, members: [ens1f0np0], lacp_rate: turbo}
      register: bad
      ignore_errors: true
    - name: Save
      ansible.builtin.copy:
        content: "{{ {'check1': check1, 'apply1': apply1, 'check2': check2, 'apply2': apply2, 'bad': bad,
                     'after_check': after_check.files | map(attribute='path') | map('basename') | list} | to_json }}"
        dest: "{{ work }}/result.json"
        mode: "0600"
"""


def networkd_sandbox_possible():
    if os.geteuid() != 0 or not shutil.which("unshare") or not os.path.exists("/lib/systemd/systemd-networkd"):
        return False
    return subprocess.run(["unshare", "--mount", "--net", "true"], capture_output=True, check=False).returncode == 0


pytestmark = pytest.mark.skipif(not networkd_sandbox_possible(),
                                reason="needs root, systemd-networkd and unshare (mount and network namespaces)")


def test_four_steps_with_real_networkd_validation(run_playbook, tmp_path):
    os.makedirs(tmp_path / "network")
    # A file the module does not own, with a key networkd ignores: reported as a warning, left alone.
    (tmp_path / "network" / "50-other.network").write_text("[Match]\nName=eth9\n\n[Network]\nBogus=1\n")
    run = run_playbook(PLAYBOOK, {"work": str(tmp_path)})
    assert run.returncode == 0, run.stdout[-3000:]
    result = json.loads((tmp_path / "result.json").read_text())
    check1, apply1, check2, apply2 = (result[k] for k in ("check1", "apply1", "check2", "apply2"))

    assert check1["changed"] and len(check1["diff"]) == 6
    assert {c["action"] for c in check1["changes"]} == {"create"}
    assert check1["validation"]["ran"] and "Enumeration completed" in check1["validation"]["output"]
    assert any("50-other.network:5: Unknown key 'Bogus'" in w for w in check1["validation"]["warnings"])
    assert result["after_check"] == ["50-other.network"]  # check mode wrote nothing

    assert apply1["changed"] and not apply1["rollback_armed"] and not apply1["activation_started"]
    names = sorted(os.listdir(tmp_path / "network"))
    assert names == sorted(["50-other.network"] + [os.path.basename(p) for p in apply1["files"]])
    netdev = (tmp_path / "network" / "10-gpufabric-bond0.netdev")
    assert oct(netdev.stat().st_mode & 0o777) == "0o644"
    assert "LACPTransmitRate=fast" in netdev.read_text()
    manifest = (tmp_path / "state" / "current" / "manifest").read_text().splitlines()
    assert len(manifest) == 6 and all(line.startswith("create\t") for line in manifest)
    assert apply1["checksums_before"] == {path: None for path in apply1["files"]}

    assert not check2["changed"] and check2["changes"] == []
    assert not apply2["changed"]
    bad = result["bad"]
    assert bad["failed"] and "bonding_bonds[0] (bond0).lacp_rate: 'turbo' is not one of slow, fast" in bad["msg"]
