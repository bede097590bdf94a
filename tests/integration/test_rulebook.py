"""The remediation rulebooks without a lab: schema and conditions as ansible-rulebook reads them, and the real
ansible-rulebook (the Drools engine on the machine's Java) receiving an Alertmanager webhook and running
gpufabric.core.remediate once per alert it must act on. In the first such test the playbook stops after reading its
alert, on the Slurm query (localhost has no scontrol): what it read is the test. In the second, scontrol stands in
at its process boundary and Debian's Alertmanager answers: alerts whose labels are Jinja reach the playbook as
ansible_eda.event and stay data. The lab end to end is molecule/health (tests/test_remediation.py)."""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

from integration_helpers import LOG_DIR, ROOT, tail

sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "unit"))
import fake_scontrol  # noqa: E402  pylint: disable=wrong-import-position
from fixture_data import read_fixture  # noqa: E402  pylint: disable=wrong-import-position
from health_lab import ALERTMANAGER, alertmanager_process, free_port  # noqa: E402  pylint: disable=wrong-import-position
from test_remediation_refusals import hostile, post_to_alertmanager, textfile_dir  # noqa: E402  pylint: disable=wrong-import-position

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
        # gpu_nodes: the default remediation_peer_group, the fleet: the loop acts on alerts for its hosts only.
        "children": {"gpu_nodes": {"hosts": {"node1": {}, "node2": {}}}, "slurm_controller": {"hosts": {"localhost": {
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


def post_when_listening(port, payload, proc, log, deadline):
    """POST the payload to the rulebook's webhook once it listens (the JVM and the rule engine take seconds)."""
    while True:
        try:
            request = urllib.request.Request("http://127.0.0.1:%d/alertmanager" % port,
                                             data=json.dumps(payload).encode(), method="POST",
                                             headers={"Content-Type": "application/json"})
            urllib.request.urlopen(request, timeout=5).read()
            return
        except OSError:
            assert proc.poll() is None and time.monotonic() < deadline, tail(log.read_text())
            time.sleep(0.5)


@pytest.mark.skipif(ALERTMANAGER is None, reason="prometheus-alertmanager is not installed (scripts/setup.sh)")
def test_jinja_labels_through_the_webhook_stay_data_and_only_alertmanagers_alert_drains(tmp_path):
    marker = tmp_path / "MARKER"
    words = hostile(marker)
    fields = {"rail": words[0], "netdev": words[1], "device": words[2], "leaf": words[3], "leaf_port": words[0],
              "seen_leaf": words[3], "instance": words[1]}
    notes = {"summary": words[0], "description": words[2]}
    contract = {"alertname": "GpufabricPortDown", "gpufabric_scope": "node", "gpufabric_remediation": "drain"}
    real, forged, outside = (alert("firing", "node", "drain", **dict(contract, host=host, **fields))
                             for host in ("node1", "node2", words[0]))
    for item in (real, forged, outside):
        item["annotations"] = notes
    slurm = fake_scontrol.install(tmp_path / "bin", read_fixture("slurm/lab-22.05-three-nodes-idle.txt"))
    if not os.access("/run", os.W_OK):
        pytest.skip("the loop's state directory must be under /run (or /var/lib ...): /run is not writable here")
    state_dir = tempfile.mkdtemp(prefix="gpufabric-test-rulebook-", dir="/run")
    port = free_port()
    log = LOG_DIR / "rulebook-hostile.log"
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, ANSIBLE_STDOUT_CALLBACK="ansible.builtin.default", ANSIBLE_NOCOLOR="1",
               ANSIBLE_CACHE_PLUGIN="ansible.builtin.memory", PATH="%s:%s" % (slurm, os.environ["PATH"]))
    with alertmanager_process(tmp_path, "route: {receiver: 'null'}\nreceivers: [{name: 'null'}]\n") as base:
        post_to_alertmanager(base, [real])
        (tmp_path / "hosts.yml").write_text(yaml.safe_dump({"all": {
            "vars": {"remediation_alertmanager_url": base, "remediation_state_dir": state_dir,
                     "remediation_textfile_dir": textfile_dir(state_dir), "remediation_report_dir": str(tmp_path / "reports")},
            "children": {"gpu_nodes": {"hosts": {"node1": {}, "node2": {}, "node3": {}}},
                         "slurm_controller": {"hosts": {"localhost": {
                             "ansible_connection": "local",
                             "ansible_python_interpreter": "{{ ansible_playbook_python }}"}}}}}}))
        (tmp_path / "vars.yml").write_text(yaml.safe_dump({"remediation_webhook_host": "127.0.0.1",
                                                           "remediation_webhook_port": port,
                                                           "remediation_reconcile_interval": 3600}))
        with open(log, "w") as out:
            proc = subprocess.Popen(["ansible-rulebook", "-r", "gpufabric.core.remediation", "-i",
                                     str(tmp_path / "hosts.yml"), "--vars", str(tmp_path / "vars.yml")],
                                    cwd=tmp_path, env=env, stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        try:
            deadline = time.monotonic() + 300
            post_when_listening(port, {"version": "4", "status": "firing", "receiver": "gpufabric-remediation",
                                       "alerts": [real, forged, outside]}, proc, log, deadline)
            # Three runs for the alerts and the tick's, each to its end.
            while log.read_text().count("PLAY RECAP") < 4:
                assert time.monotonic() < deadline, tail(log.read_text(), 120)
                time.sleep(1)
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(30)
    text = " ".join(log.read_text().split())
    assert not marker.exists(), tail(log.read_text(), 120)
    ledger = json.loads((Path(state_dir) / "ledger.json").read_text())
    shutil.rmtree(state_dir, ignore_errors=True)
    assert ledger["counters"] == {"drain|GpufabricPortDown": 1, "hold|not_firing": 1, "hold|outside_fleet": 1}, text
    assert [call[:3] for call in fake_scontrol.calls(slurm) if call[0] == "update"] == [
        ["update", "NodeName=node1", "State=DRAIN"]]
    assert "GpufabricPortDown for 'node2': Alertmanager shows no active alert with these labels: not drained" in text
