# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The parse_perftest, parse_nccl_tests, pairing_rounds and rail_test_problem filters: thin wrappers, clear errors, real templating."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError
from fixture_data import FIXTURES, read_fixture

from ansible_collections.gpufabric.core.plugins.filter.pairing_rounds import FilterModule as PairingFilters
from ansible_collections.gpufabric.core.plugins.filter.parse_nccl_tests import FilterModule as NcclFilters
from ansible_collections.gpufabric.core.plugins.filter.parse_perftest import FilterModule as PerftestFilters
from ansible_collections.gpufabric.core.plugins.filter.rail_test_problem import FilterModule as RailFilters
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.nccl_tests import parse_nccl_tests
from ansible_collections.gpufabric.core.plugins.module_utils.verify.pairing import pairing_rounds
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.perftest import parse_perftest

PERFTEST = PerftestFilters().filters()["parse_perftest"]
NCCL_TESTS = NcclFilters().filters()["parse_nccl_tests"]
PAIRING = PairingFilters().filters()["pairing_rounds"]
RAIL_PROBLEM = RailFilters().filters()["rail_test_problem"]

REPO = Path(__file__).resolve().parents[4]


def test_filters_return_what_module_utils_return():
    perftest_text = read_fixture("perftest/egx-ib_write_bw-a-roce-client-all-sizes-gbits.txt")
    assert PERFTEST(perftest_text) == parse_perftest(perftest_text)
    assert PERFTEST(perftest_text)["bw_avg_gbps_max"] == 88.08
    nccl_text = read_fixture("nccl_tests/moc-h100-roce-2node-allreduce.txt")
    assert NCCL_TESTS(nccl_text) == parse_nccl_tests(nccl_text)
    assert NCCL_TESTS(nccl_text)["avg_bus_bandwidth"] == 15.0418
    hosts = ["n%d" % index for index in range(6)]
    assert PAIRING(hosts) == pairing_rounds(hosts, "all")
    assert PAIRING(hosts, "quick") == pairing_rounds(hosts, "quick")


@pytest.mark.parametrize(
    "name,function,value,message",
    [
        ("parse_perftest", PERFTEST, "no such thing\n", "gpufabric.core.parse_perftest: cannot parse `perftest` output: no perftest title"),
        ("parse_perftest", PERFTEST, 42, "gpufabric.core.parse_perftest: cannot parse `perftest` output: expected text, got int"),
        ("parse_nccl_tests", NCCL_TESTS, "", "gpufabric.core.parse_nccl_tests: cannot parse `nccl-tests` output: the output is empty"),
        ("parse_nccl_tests", NCCL_TESTS, read_fixture("perftest/perftest-228-error-couldnt-connect-no-server.txt"),
         "gpufabric.core.parse_nccl_tests: cannot parse `nccl-tests` output: no results table"),
    ],
)
def test_parse_errors_become_filter_errors(name, function, value, message):
    with pytest.raises(AnsibleFilterError) as caught:
        function(value)
    assert str(caught.value).startswith(message), name


def test_pairing_errors_become_filter_errors():
    with pytest.raises(AnsibleFilterError, match=r"gpufabric.core.pairing_rounds: mode must be one of all, quick, got 'fastest'"):
        PAIRING(["a", "b"], "fastest")
    with pytest.raises(AnsibleFilterError, match=r"gpufabric.core.pairing_rounds: hosts must be unique; listed more than once: a"):
        PAIRING(["a", "b", "a"])


PLAYBOOK = """
- name: Use the verification filters through Ansible's own templating
  hosts: gpu
  gather_facts: false
  connection: local
  tasks:
    - name: Plan, parse and report once
      run_once: true
      vars:
        gpu_hosts: "{{ groups['gpu'] }}"
        locality: "{{ dict(gpu_hosts | zip(gpu_hosts | map('extract', hostvars, 'gpufabric_locality'))) }}"
        perftest: "{{ lookup('ansible.builtin.file', fixtures ~ '/perftest/deepops-ib_write_bw-R-roce-cx5-100g-client-cpufreq-warning.txt')
                      | gpufabric.core.parse_perftest }}"
        nccl: "{{ lookup('ansible.builtin.file', fixtures ~ '/nccl_tests/deepops-4x-dgx-a100-slurm-allreduce-old-format.txt')
                  | gpufabric.core.parse_nccl_tests }}"
      ansible.builtin.copy:
        dest: "{{ out }}"
        mode: "0600"
        content: "{{ {'all': gpu_hosts | gpufabric.core.pairing_rounds('all'),
                      'quick': gpu_hosts | gpufabric.core.pairing_rounds('quick', locality),
                      'perftest_avg': perftest.bw_avg_gbps_max, 'perftest_device': perftest.device,
                      'perftest_error': perftest.error,
                      'nccl_avg': nccl.avg_bus_bandwidth,
                      'rail_problems': dict(gpu_hosts | zip(gpu_hosts | map('extract', hostvars)
                        | map(attribute='gpufabric_topology', default={})
                        | map('gpufabric.core.rail_test_problem', 'gpus')))} | to_json }}"
"""

INVENTORY = """
gpu:
  hosts:
    r1n1:
      gpufabric_locality: {rack: r1, switch: leaf-r1}
      gpufabric_topology:
        rdma: {available: true, devices: [{name: mlx5_0}]}
        rails: [{rail: 0, gpu: GPU0, device: mlx5_0, port: 1}]
        rail_source: gpu
    r1n2:
      gpufabric_locality: {rack: r1, switch: leaf-r1}
      gpufabric_topology:
        rdma: {available: false, reason: "no RDMA device: /sys/class/infiniband is empty or absent"}
        rails: []
        rail_source: none
    r2n1: {gpufabric_locality: {rack: r2, switch: leaf-r2}}
    r2n2: {gpufabric_locality: {rack: r2, switch: leaf-r2}}
"""


def test_filters_in_a_real_playbook(tmp_path):
    # The EXAMPLES' way of building locality from hostvars, run by ansible-playbook itself.
    (tmp_path / "play.yml").write_text(PLAYBOOK)
    (tmp_path / "hosts.yml").write_text(INVENTORY)
    out = tmp_path / "out.json"
    env = dict(os.environ)
    env["ANSIBLE_COLLECTIONS_PATH"] = str(REPO / ".build" / "collections")
    env["ANSIBLE_HOME"] = str(tmp_path / "ansible-home")
    # The fixture is read verbatim; the header line is harmless to both parsers (neither matches it).
    playbook = Path(sys.executable).parent / "ansible-playbook"
    completed = subprocess.run(
        [str(playbook), "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "play.yml"),
         "-e", "out=%s fixtures=%s ansible_python_interpreter=%s" % (out, FIXTURES, sys.executable)],
        cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=180, check=False,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    result = json.loads(out.read_text())
    assert len(result["all"]) == 3
    for pairs in result["quick"]:
        for first, second in pairs:
            assert first[:2] != second[:2]  # every quick pair crosses racks
    assert result["perftest_avg"] == 92.4 and result["perftest_device"] == "mlx5_0"
    assert result["perftest_error"] is None
    assert result["nccl_avg"] == 113.289
    assert result["rail_problems"] == {
        "r1n1": None,
        "r1n2": "no RDMA device on this host (no RDMA device: /sys/class/infiniband is empty or absent)",
        "r2n1": "no gpufabric_topology facts: run gpufabric.core.topology_facts first",
        "r2n2": "no gpufabric_topology facts: run gpufabric.core.topology_facts first"}


def test_rail_test_problem_reads_the_rails_the_facts_resolved():
    # A GPU-less host (the lab's Soft-RoCE rail): its rails are its RDMA devices, which rails_from=gpus refuses.
    topology = {"rdma": {"available": True, "devices": [{"name": "rxe0"}]}, "rail_source": "rdma_devices",
                "rails": [{"rail": 0, "gpu": None, "device": "rxe0", "port": 1}]}
    assert "rails_from=rdma_devices" in RAIL_PROBLEM(topology)
    assert RAIL_PROBLEM(topology, "rdma_devices") is None
    # Named in gpufabric_rail_interfaces, the same rail is taken by both.
    assert RAIL_PROBLEM(dict(topology, rail_source="inventory")) is None
    with pytest.raises(AnsibleFilterError, match=r"gpufabric.core.rail_test_problem: rails_from must be one of"):
        RAIL_PROBLEM(topology, "nics")
