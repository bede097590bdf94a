# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The controller-side problems functions of the rdma, nccl and verify roles and of the rollout settings.

Each role's defaults and the example inventory's values must pass; each bad value must give a sentence that names
the variable's path. The line-break cases are the faults of issue 14: with re.match and `$` a value with a trailing
newline passed the old checks and split the file it was written into.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.gpufabric.core.plugins.module_utils.verify import gates
from ansible_collections.gpufabric.core.plugins.module_utils.inputs.checks import path_problems
from ansible_collections.gpufabric.core.plugins.module_utils.nccl.inputs import nccl_problems
from ansible_collections.gpufabric.core.plugins.module_utils.rdma.inputs import rdma_problems
from ansible_collections.gpufabric.core.plugins.module_utils.inputs.rollout import checked_serial, rollout_problems, RolloutError
from ansible_collections.gpufabric.core.plugins.module_utils.verify.inputs import verify_problems

ROOT = Path(__file__).resolve().parents[4]


def defaults(role):
    return yaml.safe_load((ROOT / "roles" / role / "defaults" / "main.yml").read_text())


def example(*names):
    values = {}
    for name in names:
        values.update(yaml.safe_load((ROOT / "inventories" / "example" / "group_vars" / name).read_text()) or {})
    return values


def with_(role, **changes):
    settings = defaults(role)
    if role == "verify":
        settings["verify_report_dir"] = "/srv/reports/verify"  # the default is a template over $PWD
    settings.update(changes)
    return settings


def only(problems, name):
    assert len(problems) >= 1, problems
    assert all(problem.startswith(name) for problem in problems), problems
    return " ".join(problems)


# ------------------------------------------------------------------ rdma


def test_rdma_defaults_and_example_inventory_pass():
    assert rdma_problems(with_("rdma")) == []
    for model in ("hgx_h100.yml", "l40s_pcie.yml"):
        settings = with_("rdma", **{k: v for k, v in example("gpu_nodes.yml", model).items() if k.startswith("rdma_")})
        assert rdma_problems(settings) == [], model


@pytest.mark.parametrize("changes, name, words", [
    ({"rdma_memlock_limit": "unlimited\n"}, "rdma_memlock_limit", ["'unlimited\\n'"]),
    ({"rdma_memlock_limit": "65536\r"}, "rdma_memlock_limit", ["positive size in KiB"]),
    ({"rdma_memlock_limit": "0"}, "rdma_memlock_limit", ["positive"]),
    ({"rdma_memlock_domains": ["*", "root\n"]}, "rdma_memlock_domains[1]", ["pam_limits domain"]),
    ({"rdma_memlock_domains": ["@rdma users"]}, "rdma_memlock_domains[0]", ["pam_limits domain"]),
    ({"rdma_driver_source": "doca", "rdma_doca_repo_url": "https://mirror.example.org/doca/\n",
      "rdma_doca_gpg_key_url": "https://mirror.example.org/key"}, "rdma_doca_repo_url", ["when rdma_driver_source is doca"]),
    ({"rdma_driver_source": "doca", "rdma_doca_repo_url": "", "rdma_doca_gpg_key_url": "file:///srv/key.asc"},
     "rdma_doca_repo_url", ["DOCA-OFED mirror"]),
    ({"rdma_driver_source": "doca", "rdma_doca_repo_url": "file:///srv/doca/"}, "rdma_doca_gpg_key_url",
     ["(or rdma_doca_gpg_key) must give the repository's signing key"]),
    ({"rdma_doca_gpg_key_url": "https://mirror.example.org/key\r"}, "rdma_doca_gpg_key_url", ["URL"]),
    ({"rdma_doca_gpg_key": "not a key"}, "rdma_doca_gpg_key", ["ASCII-armoured"]),
    ({"rdma_doca_package": "doca-ofed\n"}, "rdma_doca_package", ["package name"]),
    ({"rdma_doca_version": "24.10 *"}, "rdma_doca_version", ["package version"]),
    ({"rdma_extra_packages": ["mstflint", "pciutils\n"]}, "rdma_extra_packages[1]", ["package name"]),
    ({"rdma_module_options": {"ib_uverbs": "disable_raw_qp_encap=1\r"}}, "rdma_module_options.ib_uverbs",
     ["one-line"]),
    ({"rdma_module_options": {"ib_uverbs": "a=1 # b"}}, "rdma_module_options.ib_uverbs", ["'#'"]),
    ({"rdma_module_options": {"ib uverbs": "a=1"}}, "rdma_module_options", ["not a kernel module name"]),
    ({"rdma_modules_load": ["ib_umad", "rdma_ucm\n"]}, "rdma_modules_load[1]", ["kernel module name"]),
    ({"rdma_irq_affinity_exclude_cpus": "0-1\n"}, "rdma_irq_affinity_exclude_cpus", ["cpulist"]),
    ({"rdma_irq_affinity_exclude_cpus": "7-3"}, "rdma_irq_affinity_exclude_cpus", ["backwards"]),
    ({"rdma_devices": ["mlx5_0", "mlx5_1\n"]}, "rdma_devices[1]", ["device"]),
    ({"rdma_roce_tos": 256}, "rdma_roce_tos", ["-1 (leave as is) or 0-255"]),
    ({"rdma_roce_traffic_class": -2}, "rdma_roce_traffic_class", ["0-255"]),
    ({"rdma_device_wait_seconds": -1}, "rdma_device_wait_seconds", ["at least 0"]),
    ({"rdma_reboot_timeout": 0}, "rdma_reboot_timeout", ["at least 1"]),
    ({"rdma_expected_rate_gbps": -400}, "rdma_expected_rate_gbps", ["at least 0"]),
    ({"rdma_mlxconfig_settings": {"PCI_WR_ORDERING\n": 1}}, "rdma_mlxconfig_settings", ["parameter name"]),
    ({"rdma_mlxconfig_settings": {"PCI_WR_ORDERING": "1\n"}}, "rdma_mlxconfig_settings.PCI_WR_ORDERING",
     ["plain value"]),
])
def test_rdma_bad_values_are_named(changes, name, words):
    text = only(rdma_problems(with_("rdma", **changes)), name)
    for word in words:
        assert word in text, text


def test_rdma_every_problem_is_reported_at_once():
    problems = rdma_problems(with_("rdma", rdma_memlock_limit="1\n", rdma_roce_tos=999, rdma_devices=["a b"]))
    assert [problem.split(":")[0] for problem in problems] == ["rdma_memlock_limit", "rdma_devices[0]", "rdma_roce_tos"]


def test_rdma_numbers_as_strings_are_read_as_argument_specs_reads_them():
    assert rdma_problems(with_("rdma", rdma_roce_tos="106", rdma_memlock_limit=65536, rdma_expected_rate_gbps="400")) == []


# ------------------------------------------------------------------ nccl


def test_nccl_defaults_and_example_inventory_pass():
    assert nccl_problems(with_("nccl")) == []
    for model in ("hgx_h100.yml", "l40s_pcie.yml"):
        settings = with_("nccl", **{k: v for k, v in example("gpu_nodes.yml", model).items() if k.startswith("nccl_")})
        assert nccl_problems(settings) == [], model
    assert nccl_problems(with_("nccl", nccl_conf_path="/etc/nccl/job.conf", nccl_env_file_path="/etc/default/nccl",
                               nccl_topology_snapshot="/var/lib/gpufabric/nccl-snapshot")) == []


@pytest.mark.parametrize("changes, name, words", [
    # The fault of issue 14: /etc/nccl/../../etc/passwd was accepted and would have been replaced.
    ({"nccl_conf_path": "/etc/nccl/../../etc/passwd"}, "nccl_conf_path", ["normal form", "/etc/passwd is outside"]),
    ({"nccl_conf_path": "/etc/passwd"}, "nccl_conf_path", ["under /etc/nccl/ or /etc/nccl.conf"]),
    ({"nccl_conf_path": "/etc/nccl.conf\n"}, "nccl_conf_path", ["no whitespace, line breaks"]),
    ({"nccl_conf_path": "etc/nccl.conf"}, "nccl_conf_path", ["absolute"]),
    ({"nccl_profile_script_path": "/etc/profile.d/../bash.bashrc"}, "nccl_profile_script_path", ["normal form"]),
    ({"nccl_profile_script_path": "/etc/profile.d/nccl"}, "nccl_profile_script_path", ["must end in .sh"]),
    ({"nccl_profile_script_path": "/etc/bash.bashrc"}, "nccl_profile_script_path", ["under /etc/profile.d/"]),
    ({"nccl_env_file_path": "/etc/default/environment"}, "nccl_env_file_path", ["must contain 'nccl'"]),
    ({"nccl_env_file_path": "/home/user/nccl.env"}, "nccl_env_file_path", ["under /etc/"]),
    ({"nccl_env_file_path": "/etc/default/./nccl"}, "nccl_env_file_path", ["normal form"]),
    ({"nccl_topology_xml_path": "/etc/nccl//topo.xml"}, "nccl_topology_xml_path", ["normal form"]),
    ({"nccl_topology_xml_path": "/tmp/topo.xml"}, "nccl_topology_xml_path", ["under /etc/nccl/"]),
    ({"nccl_topology_snapshot": "/var/lib/snap/../../../etc"}, "nccl_topology_snapshot", ["normal form"]),
    ({"nccl_socket_ifname": ["bond0", "eth0\n"]}, "nccl_socket_ifname[1]", ["interface name"]),
    ({"nccl_socket_ifname": "bond0.120,a-very-long-interface"}, "nccl_socket_ifname[1]", ["up to 15"]),
    ({"nccl_variables": {"NCCL_IB_TIMEOUT": "22\n"}}, "nccl_variables.NCCL_IB_TIMEOUT", ["cannot carry"]),
    ({"nccl_variables": {"NCCL_IB_TIMEOUT": "22\r"}}, "nccl_variables.NCCL_IB_TIMEOUT", ["cannot carry"]),
    ({"nccl_variables": {"NCCL_IB_HAC": "=mlx5_0:1"}}, "nccl_variables.NCCL_IB_HAC", ["did you mean NCCL_IB_HCA?"]),
    ({"nccl_variables": {"NCCL_DEBUG": "INFO"}}, "nccl_variables.NCCL_DEBUG=INFO", ["nccl_allow_debug_variables"]),
    ({"nccl_roce_qps_per_connection": 0}, "nccl_roce_qps_per_connection", ["1 to 128"]),
    ({"nccl_ib_qps_per_connection": 129}, "nccl_ib_qps_per_connection", ["1 to 128"]),
    ({"nccl_roce_traffic_class": 256}, "nccl_roce_traffic_class", ["0 to 255"]),
    ({"nccl_cluster_nodes": -1}, "nccl_cluster_nodes", ["number of nodes"]),
    ({"nccl_algorithm_tiers": [{"max_nodes": 8, "algorithms": "Ring"}, {"max_nodes": 4, "algorithms": "Tree"}]},
     "nccl_algorithm_tiers[1].max_nodes", ["above the previous tier's (8)"]),
    ({"nccl_algorithm_tiers": [{"max_nodes": None, "algorithms": "Ring"}, {"max_nodes": 4, "algorithms": "Tree"}]},
     "nccl_algorithm_tiers[0].max_nodes", ["only the last tier"]),
    ({"nccl_algorithm_tiers": [{"max_nodes": None, "algorithms": "Ring\nNCCL_DEBUG=TRACE"}]},
     "nccl_algorithm_tiers[0].algorithms", ["NCCL_ALGO names"]),
    ({"nccl_consistency_group": "hgx\n"}, "nccl_consistency_group", ["one-line"]),
    ({"gpufabric_peer_group": ""}, "gpufabric_peer_group", ["non-empty", "cabled alike"]),
    ({"gpufabric_peer_group": ["su1"]}, "gpufabric_peer_group", ["one-line"]),
    ({"nccl_hca_selection": "all"}, "nccl_hca_selection", ["gpu_affine or all_active"]),
])
def test_nccl_bad_values_are_named(changes, name, words):
    text = only(nccl_problems(with_("nccl", **changes)), name)
    for word in words:
        assert word in text, text


def test_nccl_debug_variables_pass_when_allowed():
    assert nccl_problems(with_("nccl", nccl_variables={"NCCL_DEBUG": "INFO"}, nccl_allow_debug_variables=True)) == []


# ------------------------------------------------------------------ verify


def test_verify_defaults_and_example_inventory_pass():
    hosts = ["a", "b"]
    assert verify_problems(with_("verify"), hosts) == []
    for model in ("hgx_h100.yml", "l40s_pcie.yml"):
        settings = with_("verify", **{k: v for k, v in example("gpu_nodes.yml", model).items() if k.startswith("verify_")})
        assert verify_problems(settings, hosts) == [], model


@pytest.mark.parametrize("changes, name, words", [
    ({"verify_gate_percent": 0}, "verify_gate_percent", ["from 1 to 100"]),
    ({"verify_gate_percent": 0.5}, "verify_gate_percent", ["from 1 to 100"]),
    ({"verify_gate_percent": 150}, "verify_gate_percent", ["from 1 to 100"]),
    ({"verify_duration": 0}, "verify_duration", ["at least 1"]),
    ({"verify_poll_interval": 0}, "verify_poll_interval", ["at least 1"]),
    ({"verify_timeout_margin": -1}, "verify_timeout_margin", ["at least 0"]),
    ({"verify_clock_retries": -1}, "verify_clock_retries", ["from 0 to 5"]),
    ({"verify_clock_retries": 9}, "verify_clock_retries", ["from 0 to 5"]),
    ({"verify_streams": 0}, "verify_streams", ["at least 1"]),
    ({"verify_qps": 0}, "verify_qps", ["at least 1"]),
    ({"verify_message_size": 0}, "verify_message_size", ["at least 1"]),
    ({"verify_base_port": 65500}, "verify_base_port", ["1 to 65471"]),
    ({"verify_thresholds_gbps": {"lab": 0}}, "verify_thresholds_gbps.lab", ["positive"]),
    ({"verify_nccl_thresholds_gbytes": {"lab": "fast"}}, "verify_nccl_thresholds_gbytes.lab", ["positive"]),
    ({"verify_use_cuda": True, "verify_bandwidth_tool": "iperf3"}, "verify_use_cuda", ["perftest"]),
    ({"verify_rails": [0, -1]}, "verify_rails", ["rail numbers"]),
    ({"verify_rails_from": "nics"}, "verify_rails_from", ["gpus, rdma_devices"]),
    ({"verify_rails_from": "rdma_devices", "verify_use_cuda": True}, "verify_use_cuda", ["without one"]),
    ({"verify_rounds": [[["a", "c"]]]}, "verify_rounds[0][0]", ["c is not a host of this play"]),
    ({"verify_rounds": [[["a", "b"], ["b", "a"]]]}, "verify_rounds[0][1]", ["already tested in this round"]),
    ({"verify_rounds": [[["a", "b", "c"]]]}, "verify_rounds[0][0]", ["[client, server] pair"]),
    ({"verify_nccl_max_bytes": "8G\n"}, "verify_nccl_max_bytes", ["size such as 8G"]),
    ({"verify_nccl_binary": "all_reduce_perf; reboot"}, "verify_nccl_binary", ["program name"]),
    ({"verify_nccl_mpirun_args": ["--bind-to\nnone"]}, "verify_nccl_mpirun_args[0]", ["one-line"]),
    ({"verify_nccl_environment": {"NCCL_IB_HCA": "=mlx5_0\r"}}, "verify_nccl_environment.NCCL_IB_HCA", ["one-line"]),
    ({"verify_nccl_environment": {"BAD NAME": "1"}}, "verify_nccl_environment", ["not an environment variable"]),
    ({"verify_report_dir": "/srv/reports/../../etc"}, "verify_report_dir", ["normal form"]),
    ({"verify_report_dir": "reports"}, "verify_report_dir", ["absolute"]),
    ({"verify_report_dir": "/"}, "verify_report_dir", ["not /"]),
    ({"verify_textfile_dir": "/etc/cron.d"}, "verify_textfile_dir", ["under /var/lib/"]),
    ({"verify_textfile_dir": "/var/lib/node_exporter/../../../etc"}, "verify_textfile_dir", ["normal form"]),
    ({"verify_address": "10.0.0.1\n"}, "verify_address", ["address or name"]),
])
def test_verify_bad_values_are_named(changes, name, words):
    text = only(verify_problems(with_("verify", **changes), ["a", "b"]), name)
    for word in words:
        assert word in text, text


def test_verify_play_rules_need_the_hosts():
    settings = with_("verify", verify_rounds=[[["a", "z"]]])
    assert verify_problems(settings, None) == []
    assert "verify_sweep: a bandwidth sweep needs at least two hosts" in verify_problems(settings, ["a"])[0]
    assert verify_problems(with_("verify", verify_sweep=False), ["a"]) == []
    assert verify_problems(with_("verify", verify_textfile_dir="/var/lib/prometheus/node-exporter"), ["a", "b"]) == []


@pytest.mark.parametrize("percent", [0, 0.5, 100.5, 150, 200])
def test_gate_percent_beyond_1_to_100_is_refused_by_the_gates_too(percent):
    with pytest.raises(gates.GateError, match="gate percent must be a number from 1 to 100"):
        gates.check_settings(percent, {})


# ------------------------------------------------------------------ rollout


@pytest.mark.parametrize("value", [1, 10, "3", "10%", "100%", [1, 5, "20%"]])
def test_usable_serial_passes(value):
    assert rollout_problems({"gpufabric_serial": value}) == []
    assert checked_serial(value) == value


@pytest.mark.parametrize("value, words", [
    (0, "at least 1 host per batch"),
    ("0", "at least 1 host per batch"),
    (-2, "at least 1 host per batch"),
    ("-2", "at least 1 host per batch"),
    ("ten", "number of hosts (1 or more) or a whole percentage"),
    ("1.5%", "whole percentage"),
    ("0%", "from 1% to 100%"),
    ("150%", "from 1% to 100%"),
    (True, "number of hosts"),
    ([1, 0], "gpufabric_serial[1]: must be at least 1"),
    ([], "empty list"),
])
def test_bad_serial_is_refused_naming_the_variable(value, words):
    problems = rollout_problems({"gpufabric_serial": value})
    assert len(problems) == 1 and problems[0].startswith("gpufabric_serial") and words in problems[0], problems
    with pytest.raises(RolloutError, match="gpufabric_serial"):
        checked_serial(value)


@pytest.mark.parametrize("value, ok", [(0, True), ("25", True), (100, True), (-1, False), (101, False), ("x", False)])
def test_max_fail_percentage(value, ok):
    problems = rollout_problems({"gpufabric_max_fail_percentage": value})
    assert (problems == []) is ok, problems


# ------------------------------------------------------------------ paths


@pytest.mark.parametrize("path, ok", [
    ("/etc/nccl/topo.xml", True),
    ("/etc/nccl", False),            # the directory itself is not a file under it
    ("/etc/nccl-other/topo.xml", False),
    ("/etc/nccl/../nccl/topo.xml", False),
    ("/etc/nccl/topo.xml/", False),
    ("//etc/nccl/topo.xml", False),
    ("/etc/nccl/topo xml", False),
    ("/etc/nccl/$(reboot)", False),
])
def test_paths_stay_under_their_directory_in_normal_form(path, ok):
    assert (path_problems("p", path, under=("/etc/nccl",)) == []) is ok
