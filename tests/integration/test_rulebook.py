"""The remediation rulebooks without a lab: schema and conditions as ansible-rulebook reads them, and the real
ansible-rulebook (the Drools engine on the machine's Java) receiving an Alertmanager webhook and running
gpufabric.core.remediate once per alert it must act on. Here the playbook stops after reading its alert, on the
Slurm query (localhost has no scontrol): what it read is the test. The lab end to end is molecule/health
(tests/test_remediation.py)."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request

import pytest
import yaml

from integration_helpers import LOG_DIR, ROOT, tail

sys.path.insert(0, str(ROOT / "tests"))
from health_lab import free_port  # noqa: E402  pylint: disable=wrong-import-position

RULEBOOKS = ROOT / "extensions" / "eda" / "rulebooks"

pytestmark = pytest.mark.skipif(shutil.which("ansible-rulebook") is None or shutil.which("java") is None,
                                reason="ansible-rulebook (requirements.txt) and Java (scripts/setup.sh) are needed")


def load(name):
    return yaml.safe_load((RULEBOOKS / name).read_text())


def test_both_rulebooks_pass_ansible_rulebooks_schema_and_parse():
    from ansible_rulebook.rules_parser import parse_rule_sets
    from ansible_rulebook.validators import Validate

    for name in ("remediation.yml", "remediation_controller.yml"):
        data = load(name)
        Validate.rulebook(data)
        [ruleset] = parse_rule_sets(data, {"remediation_webhook_host": "127.0.0.1", "remediation_webhook_port": 5000,
                                           "awx_organization": "Default"})
        assert [rule.name for rule in ruleset.rules] == [
            "A node's fabric fault fires - drain the node",
            "A node's fabric fault resolved - re-verify the node, return it to service",
            "A leaf or a rail is down - report it, drain nothing",
            "A reconcile tick - return the nodes the loop holds drained with no alert firing for them"]


def test_the_controller_rulebook_keeps_the_same_sources_conditions_and_locks():
    """One set of conditions, two ways to run the action: a change to one rulebook must reach the other."""
    standalone, controller = load("remediation.yml")[0], load("remediation_controller.yml")[0]
    assert standalone["sources"] == controller["sources"]
    assert standalone["execution_strategy"] == controller["execution_strategy"] == "parallel"
    for mine, theirs in zip(standalone["rules"], controller["rules"], strict=True):
        assert mine["condition"] == theirs["condition"]
        assert mine["action"]["run_playbook"]["name"] == "gpufabric.core.remediate"
        assert theirs["action"]["run_job_template"]["name"] == "gpufabric remediate"
        assert mine["action"]["run_playbook"]["lock"] == theirs["action"]["run_job_template"]["lock"]
        assert mine["action"]["run_playbook"].get("extra_vars") == \
            theirs["action"]["run_job_template"].get("job_args", {}).get("extra_vars")
    awx = yaml.safe_load((ROOT / "playbooks" / "awx_configure.yml").read_text())[0]["vars"]["awx_job_templates"]
    [template] = [t for t in awx if t["name"] == "gpufabric remediate"]
    assert template["playbook"] == "playbooks/remediate.yml" and template["simultaneous"] is True


def alert(status, scope, remediation, **labels):
    return {"status": status, "labels": dict(labels, gpufabric_scope=scope, gpufabric_remediation=remediation),
            "annotations": {"summary": "test"}, "startsAt": "2026-12-04T10:00:00Z", "endsAt": "0001-01-01T00:00:00Z"}


def test_ansible_rulebook_runs_the_playbook_once_per_alert_to_act_on_and_once_for_its_reconcile_tick(tmp_path):
    port = free_port()
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump({"all": {
        "vars": {"remediation_alertmanager_url": "http://127.0.0.1:9",
                 "remediation_report_dir": str(tmp_path / "reports")},
        # gpu_nodes: the default remediation_peer_group, which the preflight wants to be a group of the inventory.
        "children": {"gpu_nodes": {}, "slurm_controller": {"hosts": {"localhost": {
            "ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"}}}}}}))
    # The tick's first run comes at the start; the next not within the test.
    (tmp_path / "vars.yml").write_text(yaml.safe_dump({"remediation_webhook_host": "127.0.0.1",
                                                       "remediation_webhook_port": port,
                                                       "remediation_reconcile_interval": 3600}))
    log = LOG_DIR / "rulebook-offline.log"
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, ANSIBLE_STDOUT_CALLBACK="ansible.builtin.default", ANSIBLE_NOCOLOR="1",
               ANSIBLE_CACHE_PLUGIN="ansible.builtin.memory")
    with open(log, "w") as out:
        proc = subprocess.Popen(["ansible-rulebook", "-r", "gpufabric.core.remediation", "-i",
                                 str(tmp_path / "hosts.yml"), "--vars", str(tmp_path / "vars.yml")],
                                cwd=tmp_path, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        payload = {"version": "4", "status": "firing", "receiver": "gpufabric-remediation", "alerts": [
            alert("firing", "node", "drain", alertname="GpufabricPortDown", host="node1", rail="rail1", netdev="eth2"),
            alert("resolved", "node", "drain", alertname="GpufabricPortDown", host="node2", rail="rail0"),
            alert("firing", "leaf", "report", alertname="GpufabricLeafDown", leaf="leaf-b", rail="rail1"),
            alert("firing", "node", "none", alertname="GpufabricCannotSee", host="node3"),
        ]}
        deadline = time.monotonic() + 120
        while True:  # the JVM and the rule engine start in a few seconds; poll the port until it answers
            try:
                request = urllib.request.Request("http://127.0.0.1:%d/alertmanager" % port,
                                                 data=json.dumps(payload).encode(), method="POST",
                                                 headers={"Content-Type": "application/json"})
                urllib.request.urlopen(request, timeout=5).read()
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, tail(log.read_text())
                time.sleep(0.5)
        wanted = ["\"drain: node1; return: none; fabric reports: none",
                  "\"drain: none; return: node2; fabric reports: none",
                  "\"drain: none; return: none; fabric reports: GpufabricLeafDown",
                  "\"reconcile run; drain: none; return: none; fabric reports: none"]
        while True:
            text = " ".join(log.read_text().split())
            if all(line in text for line in wanted):
                break
            assert time.monotonic() < deadline, tail(log.read_text(), 120)
            time.sleep(0.5)
        # One run per alert to act on and one for the tick: four plans read, none for node3's alert.
        plans = [line for line in log.read_text().splitlines() if '"msg": "' in line and "fabric reports:" in line]
        assert len(plans) == 4, "\n".join(plans)
        assert "node3" not in text
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(30)
