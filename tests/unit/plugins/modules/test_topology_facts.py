# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufabric.core.topology_facts run by Ansible itself on this machine (no GPU, no RDMA, no lldpd)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from fixture_data import read_fixture

ROOT = Path(__file__).resolve().parents[4]
BIN = Path(sys.executable).parent


# A neutral configuration (the repository's ansible.cfg names the lab inventory and fleet callbacks) that runs
# modules with this test's Python rather than whatever interpreter discovery finds first.
_CONFIG = Path(tempfile.gettempdir()) / ("gpufabric-unit-ansible-%d.cfg" % os.getuid())


def _env():
    _CONFIG.write_text("[defaults]\ninterpreter_python = %s\n" % sys.executable)
    return dict(os.environ, ANSIBLE_CONFIG=str(_CONFIG), ANSIBLE_COLLECTIONS_PATH=str(ROOT / ".build" / "collections"),
                ANSIBLE_NOCOLOR="1", ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json",
                ANSIBLE_LOCALHOST_WARNING="0")


def _module(args="", *options):
    """Run the module on localhost through ansible; return its result dict."""
    command = [str(BIN / "ansible"), "localhost", "-i", "localhost,", "-c", "local",
               "-m", "gpufabric.core.topology_facts", *options]
    if args:
        command += ["-a", args]
    completed = subprocess.run(command, env=_env(), cwd=str(ROOT), capture_output=True, text=True, timeout=180,
                               check=False)
    try:
        report = json.loads(completed.stdout)
    except ValueError:
        pytest.fail("ansible did not print JSON:\n%s\n%s" % (completed.stdout, completed.stderr))
    return report["plays"][0]["tasks"][0]["hosts"]["localhost"]


def test_live_host_without_gpu_rdma_or_lldpd_gets_facts_with_reasons():
    # Interfaces may come and go while the module runs (containers starting elsewhere on this machine).
    before = set(os.listdir("/sys/class/net")) - {"lo"}
    result = _module()
    after = set(os.listdir("/sys/class/net")) - {"lo"}
    assert result.get("failed") is not True, result
    assert result["changed"] is False
    topology = result["ansible_facts"]["gpufabric_topology"]
    assert (topology["schema_version"], topology["source"]) == (1, "live")
    assert topology["gpus"]["available"] is False
    assert "nvidia-smi" in topology["gpus"]["reason"]
    assert topology["rdma"]["available"] is False
    assert topology["rdma"]["reason"] == "no RDMA device: /sys/class/infiniband does not exist (no RDMA driver loaded)"
    # Without lldpd the reason says so; with it (a developer's machine) the facts carry its neighbours.
    assert topology["lldp"]["available"] is True or topology["lldp"]["reason"]
    if shutil.which("lldpctl") is None:
        assert topology["lldp"]["reason"] == "lldpctl not found in PATH (install and start lldpd)"
    assert (topology["rails"], topology["rail_source"]) == ([], "none")
    assert result["ansible_facts"]["gpufabric_topology_stale"] is False
    names = {i["name"] for i in topology["interfaces"]}
    assert before & after <= names <= before | after, (names, before, after)


def test_check_mode_capture_writes_nothing(tmp_path):
    target = tmp_path / "capture"
    result = _module("capture=%s" % target, "--check")
    assert result["changed"] is True
    assert "reasons.json" in result["capture_files"]
    assert not target.exists()


def test_capture_is_idempotent_and_its_snapshot_gives_the_same_facts(tmp_path):
    # This machine's own /sys changes while other tests start and stop containers (a podman bridge appearing between
    # two captures made a second capture differ): the capture's idempotence is shown on a frozen copy of it, the
    # sysfs and procfs files a first capture of the live host kept.
    frozen = tmp_path / "live"
    live = _module("capture=%s" % frozen)
    assert live["changed"] is True and (frozen / "reasons.json").is_file()
    assert oct((frozen / "reasons.json").stat().st_mode & 0o777) == "0o644"
    roots = "sys_root=%s proc_root=%s" % (frozen / "sys", frozen / "proc")
    target = tmp_path / "capture"
    first = _module("%s capture=%s" % (roots, target))
    assert first["changed"] is True and (target / "reasons.json").is_file()
    second = _module("%s capture=%s" % (roots, target))
    assert (second["changed"], second["capture_files"]) == (False, [])
    offline = _module("snapshot=%s" % target)
    live_facts = first["ansible_facts"]["gpufabric_topology"]
    offline_facts = offline["ansible_facts"]["gpufabric_topology"]
    assert offline_facts["source"] == "snapshot:%s" % target
    assert {k: v for k, v in offline_facts.items() if k != "source"} == {
        k: v for k, v in live_facts.items() if k != "source"}


def test_snapshot_of_real_captures(tmp_path):
    (tmp_path / "nvidia-smi-topo-m.txt").write_text(read_fixture("nvidia_smi_topo/sglang-30401-hgx-h100-8gpu-8nic.txt"))
    (tmp_path / "ibstat.txt").write_text(read_fixture("ibstat_ibv_devinfo/gpud-h100-ibstat-8x-cx7-roce-some-down.txt"))
    bonding = tmp_path / "proc" / "net" / "bonding"
    bonding.mkdir(parents=True)
    (bonding / "bond0").write_text(read_fixture("bonding/magpie-802.3ad-churned-mixed-speed-misconfig.txt"))
    result = _module("snapshot=%s" % tmp_path)
    topology = result["ansible_facts"]["gpufabric_topology"]
    assert [rail["device"] for rail in topology["rails"]] == ["mlx5_%d" % i for i in range(8)]
    assert [rail["rate_gbps"] for rail in topology["rails"]][:3] == [400.0, 100.0, 100.0]
    assert {f["message"] for f in topology["findings"] if f["kind"] == "port_down"} == {
        "mlx5_5 port 1 is DOWN (physical state Disabled)", "mlx5_11 port 1 is DOWN (physical state Disabled)"}
    assert topology["bonds"]["bond0"]["healthy"] is False
    assert topology["lldp"]["reason"] == "the snapshot has no lldpctl.json"


@pytest.mark.parametrize("args, message", [
    ("capture=/tmp/x snapshot=/tmp/y", "parameters are mutually exclusive: capture|snapshot"),
    ("snapshot=/nonexistent/gpufabric", "cannot read snapshot /nonexistent/gpufabric: snapshot directory"),
    ("timeout=0", "timeout must be at least 1 second, got 0"),
    ("bogus=1", "Unsupported parameters"),
])
def test_bad_arguments_fail_with_a_clear_message(args, message):
    result = _module(args)
    assert result["failed"] is True
    assert message in result["msg"]


def test_inventory_rails_are_resolved_in_the_facts():
    # gpufabric_rail_interfaces as the inventory writes it, a mapping with string keys: rail 1 names the loopback
    # (never listed) and rail 0 an interface this machine does not have.
    result = _module(json.dumps({"rail_interfaces": {"1": "lo", "0": "gpufabric-nic9"}}))
    topology = result["ansible_facts"]["gpufabric_topology"]
    assert topology["rail_source"] == "inventory"
    assert [(rail["rail"], rail["netdev"], rail["device"], rail["exists"]) for rail in topology["rails"]] == [
        (0, "gpufabric-nic9", None, False), (1, "lo", None, False)]


@pytest.mark.parametrize("value, message", [
    ("eth1,eth2", "gpufabric_rail_interfaces must be a list of interface names (item i is rail i) or a mapping"),
    ({"first": "eth1"}, "gpufabric_rail_interfaces: rail 'first' is not an integer"),
    (["eth1", ""], "gpufabric_rail_interfaces: rail 1 must name an interface, got ''"),
])
def test_bad_rail_interfaces_fail_naming_the_variable(value, message):
    result = _module(json.dumps({"rail_interfaces": value}))
    assert result["failed"] is True
    assert message in result["msg"], result["msg"]


def test_capture_onto_a_file_fails_clearly(tmp_path):
    target = tmp_path / "a-file"
    target.write_text("x")
    result = _module("capture=%s" % target)
    assert result["failed"] is True
    assert result["msg"] == "capture path %s exists and is not a directory" % target


def test_module_docs_render():
    completed = subprocess.run([str(BIN / "ansible-doc"), "--json", "gpufabric.core.topology_facts"], env=_env(),
                               capture_output=True, text=True, timeout=120, check=False)
    assert completed.returncode == 0, completed.stderr
    doc = json.loads(completed.stdout)["gpufabric.core.topology_facts"]
    assert sorted(doc["doc"]["options"]) == ["capture", "lldp_wait", "proc_root", "rail_interfaces", "snapshot",
                                             "sys_root", "timeout"]
    assert doc["doc"]["attributes"]["check_mode"]["support"] == "full"
    assert "gpufabric_topology" in doc["return"]["ansible_facts"]["contains"]
