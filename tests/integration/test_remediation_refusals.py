"""Bad remediation input refused before anything runs: by playbooks/remediate.yml's first task (no Slurm query, no
alert read) and by playbooks/check_inventory.yml (no host contacted), each problem naming its variable."""

import base64
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest
import yaml
from ansible.plugins.loader import cache_loader

from integration_helpers import ROOT, run_logged, tail

sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "unit"))
import fake_scontrol  # noqa: E402  pylint: disable=wrong-import-position
from fixture_data import read_fixture  # noqa: E402  pylint: disable=wrong-import-position
from health_lab import ALERTMANAGER, alertmanager_process, free_port  # noqa: E402  pylint: disable=wrong-import-position

ENV = {"ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.default", "ANSIBLE_NOCOLOR": "1",
       "ANSIBLE_CACHE_PLUGIN": "ansible.builtin.memory"}
BAD = {"remediation_max_drained": "0%", "remediation_reason_prefix": "gpu fabric:", "remediation_webhook_port": 70000}
WORDS = ["remediation_max_drained: a percentage of the partition must be above 0 % and at most 100 %",
         "remediation_reason_prefix: must be a word ending in a colon",
         "remediation_webhook_port: must be a TCP port from 1 to 65535; got 70000"]


def test_remediate_refuses_bad_input_in_its_first_task(tmp_path):
    # The Slurm controller is a host nobody can reach: the run must stop before it would be contacted.
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump({"all": {
        "vars": {"remediation_alertmanager_url": "http://192.0.2.1:9093"},
        "children": {"slurm_controller": {"hosts": {"slurm-ctl-unreachable": {"ansible_host": "192.0.2.1"}}}}}}))
    alert = {"status": "firing", "labels": {
        "alertname": "GpufabricPortDown", "gpufabric_scope": "node", "gpufabric_remediation": "drain", "host": "node1"}}
    rc, out = run_logged("remediate-refusal", ["ansible-playbook", "-i", str(tmp_path / "hosts.yml"),
                                               str(ROOT / "playbooks" / "remediate.yml"), "-e",
                                               json.dumps(dict(BAD, remediation_alerts=[alert]))],
                         timeout=300, env=ENV)
    assert rc == 2, tail(out)
    text = " ".join(out.split())
    for words in WORDS:
        assert words in text, tail(out)
    assert "Plan |" not in out and "slurm-ctl-unreachable" not in out.split("PLAY RECAP")[0]


@pytest.mark.parametrize("variable", sorted(BAD))
def test_check_inventory_refuses_each_before_the_rulebook_starts(variable):
    extra_vars = {variable: BAD[variable], "remediation_alertmanager_url": "http://am.example.org:9093"}
    rc, out = run_logged("check-inventory-remediation-" + variable, [
        "ansible-playbook", "-i", str(ROOT / "inventories" / "example"), str(ROOT / "playbooks" / "check_inventory.yml"),
        "--limit", "all[0]", "-e", json.dumps(extra_vars)],
        timeout=300, env=ENV)
    assert rc == 2, tail(out)
    [words] = [words for words in WORDS if words.startswith(variable)]
    assert words in " ".join(out.split()), tail(out)


def test_remediate_refuses_a_slurm_controller_of_an_unsupported_family_from_cached_facts(tmp_path):
    # The loop's plays gather no facts; a fact cache that holds the Slurm controller's is checked by the role's one
    # OS check (gpufabric.core.host_problems) in the same first task, before the host would be contacted.
    cache = tmp_path / "facts"
    # Written through ansible-core's own jsonfile cache plugin, in the form a gathering run leaves.
    cache_loader.get("jsonfile", _uri=str(cache)).set("slurm-ctl-unreachable", {
        "ansible_os_family": "Alpine", "ansible_distribution": "Alpine", "ansible_distribution_version": "3.20",
        "ansible_service_mgr": "openrc"})
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump({"all": {
        "vars": {"remediation_alertmanager_url": "http://192.0.2.1:9093"},
        "children": {"slurm_controller": {"hosts": {"slurm-ctl-unreachable": {"ansible_host": "192.0.2.1"}}}}}}))
    rc, out = run_logged("remediate-refusal-os", ["ansible-playbook", "-i", str(tmp_path / "hosts.yml"),
                                                  str(ROOT / "playbooks" / "remediate.yml"), "-e",
                                                  json.dumps({"remediation_alerts": []})],
                         timeout=300, env=dict(ENV, ANSIBLE_CACHE_PLUGIN="ansible.builtin.jsonfile",
                                               ANSIBLE_CACHE_PLUGIN_CONNECTION=str(cache)))
    assert rc == 2, tail(out)
    assert ("remediation_slurm_controller slurm-ctl-unreachable: the remediation role supports the Debian and RedHat "
            "families; this host is Alpine 3.20 (Alpine) with openrc") in " ".join(out.split()), tail(out)
    assert "Plan |" not in out


# Alert text is data: the -e @event.json path, a real Alertmanager, scontrol at its process boundary

# Jinja in every shape that would run or print differently when templated: a lookup that leaves a file, a filter,
# arithmetic, and a raw block.
def hostile(marker):
    return ["{{ lookup('ansible.builtin.pipe', 'touch %s') }}" % marker, "{{ 7*7 }}",
            "{%% raw %%}{{ lookup('pipe', 'touch %s') }}{%% endraw %%}" % marker,
            "{{ 'x' | ansible.builtin.regex_replace('x', lookup('ansible.builtin.pipe', 'touch %s')) }}" % marker]


def alert_with(labels, annotations, starts="2026-12-04T10:00:00Z"):
    return {"status": "firing", "labels": labels, "annotations": annotations, "startsAt": starts,
            "endsAt": "0001-01-01T00:00:00Z"}


def hostile_alerts(marker):
    """Alerts whose every label and annotation but the contract's own carries Jinja: for node1 (in the fleet, shown
    by Alertmanager: drained), node2 (in the fleet, not in Alertmanager: forged), a host that is Jinja itself, and
    alerts whose contract labels are Jinja (ignored)."""
    words = hostile(marker)
    fields = {"rail": words[0], "netdev": words[1], "device": words[2], "leaf": words[3], "leaf_port": words[0],
              "seen_leaf": words[3], "severity": words[1], "instance": words[0], "job": words[2]}
    notes = {"summary": words[0], "description": words[1], "expected": words[2], "actual": words[3]}
    contract = {"alertname": "GpufabricPortDown", "gpufabric_scope": "node", "gpufabric_remediation": "drain"}
    alerts = [alert_with(dict(contract, host="node1", **fields), notes),
              alert_with(dict(contract, host="node2", **fields), notes)]
    alerts += [alert_with(dict(contract, host=word, **fields), notes) for word in words]
    alerts += [alert_with(dict(contract, host="node1", **{key: word}), notes)
               for key in ("alertname", "gpufabric_scope", "gpufabric_remediation") for word in words]
    return alerts


@pytest.fixture
def state_dir():
    # The loop's state directory must lie under /var/lib, /run, /srv or /opt (remediation_problems).
    if not os.access("/run", os.W_OK):
        pytest.skip("the loop's state directory must be under /run (or /var/lib ...): /run is not writable here")
    path = tempfile.mkdtemp(prefix="gpufabric-test-remediation-", dir="/run")
    yield path
    shutil.rmtree(path, ignore_errors=True)


def textfile_dir(state_dir):
    """node_exporter's textfile directory stand-in, beside the state directory (both must lie under /run ...)."""
    path = os.path.join(state_dir, "textfile")
    os.makedirs(path, exist_ok=True)
    return path


def post_to_alertmanager(base, alerts):
    request = urllib.request.Request(base + "/api/v2/alerts", data=json.dumps([
        {key: alert[key] for key in ("labels", "annotations", "startsAt")} for alert in alerts]).encode(),
        method="POST", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200


@pytest.mark.skipif(ALERTMANAGER is None, reason="prometheus-alertmanager is not installed (scripts/setup.sh)")
def test_jinja_in_every_label_annotation_and_slurm_reason_is_data_and_only_alertmanagers_alert_drains(
        tmp_path, state_dir):
    marker = tmp_path / "MARKER"
    alerts = hostile_alerts(marker)
    slurm = fake_scontrol.install(tmp_path / "bin", read_fixture("slurm/lab-22.05-three-nodes-idle.txt"))
    # A person's drain whose reason is Jinja too: Slurm's reasons reach the playbook as data as well.
    person = "maintenance %s" % hostile(marker)[0]
    assert fake_scontrol.main(str(slurm / "scontrol-state.json"),
                              ["update", "NodeName=node3", "State=DRAIN", "Reason=" + person]) == 0
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump({"all": {
        "children": {"gpu_nodes": {"hosts": {"node1": {}, "node2": {}, "node3": {}}},
                     "slurm_controller": {"hosts": {"localhost": {
                         "ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"}}}}}}))
    with alertmanager_process(tmp_path, "route: {receiver: 'null'}\nreceivers: [{name: 'null'}]\n") as base:
        # Alertmanager holds node1's alert (and the Jinja hosts'), never node2's: that one is forged.
        post_to_alertmanager(base, [alerts[0]] + alerts[2:6])
        (tmp_path / "event.json").write_text(json.dumps({
            "remediation_alerts": {"version": "4", "status": "firing", "alerts": alerts},
            "remediation_alertmanager_url": base, "remediation_state_dir": state_dir,
            "remediation_textfile_dir": textfile_dir(state_dir), "remediation_report_dir": str(tmp_path / "reports")}))
        rc, out = run_logged("remediate-hostile-alerts", [
            "ansible-playbook", "-i", str(tmp_path / "hosts.yml"), str(ROOT / "playbooks" / "remediate.yml"),
            "-e", "@" + str(tmp_path / "event.json")],
            timeout=300, env=dict(ENV, PATH="%s:%s" % (slurm, os.environ["PATH"])))
    assert rc == 0, tail(out)
    assert not marker.exists(), tail(out)
    text = " ".join(out.split())
    # node1 drained with its labels as words; node2's forged alert and the Jinja hosts held, each saying why.
    assert [call[:3] for call in fake_scontrol.calls(slurm) if call[0] == "update"] == [
        ["update", "NodeName=node3", "State=DRAIN"], ["update", "NodeName=node1", "State=DRAIN"]]
    [reason] = [call[3] for call in fake_scontrol.calls(slurm) if call[:2] == ["update", "NodeName=node1"]]
    assert reason.startswith("Reason=gpufabric: ___lookup__ansible.builtin.pipe_") and "{" not in reason, reason
    assert "GpufabricPortDown for 'node2': Alertmanager shows no active alert with these labels: not drained" in text
    ledger = json.loads((Path(state_dir) / "ledger.json").read_text())
    # Held and counted: node2's forged alert, node1's alerts named by Jinja (not what Alertmanager holds), the hosts
    # that are Jinja; the alerts whose contract labels are Jinja match no rule (ignored, in the plan's line).
    assert ledger["counters"] == {"drain|GpufabricPortDown": 1, "hold|not_firing": 5, "hold|outside_fleet": 4}
    notes = [entry["message"] for entry in ledger["recent"] if entry["reason"] == "outside_fleet"]
    assert notes == ["GpufabricPortDown: the host %r is not in the inventory's fleet (remediation_peer_group): not "
                     "acted on" % word for word in hostile(marker)]
    assert text.count("ignored: not an alert of the contract") == 1 and "Plan | Show what the alerts ask for" in text
    # The person's drain, Jinja and all, is theirs: left alone, its reason shown as it is.
    assert list(ledger["nodes"]) == ["node1"]


@pytest.mark.skipif(ALERTMANAGER is None, reason="prometheus-alertmanager is not installed (scripts/setup.sh)")
def test_a_topology_without_a_dead_leaf_needs_alertmanagers_alert_and_the_guards_room(tmp_path, state_dir):
    slurm = fake_scontrol.install(tmp_path / "bin", read_fixture("slurm/lab-22.05-three-nodes-idle.txt"))
    # node1 and node2 behind leaf-b on rail 1, node3 behind leaf-c: the lab's three nodes, one partition.
    (tmp_path / "fabric_map.json").write_text(json.dumps({"hosts": {
        host: {"rails": [{"rail": 1, "netdev": "eth2", "switch": leaf, "up": True}]}
        for host, leaf in (("node1", "leaf-b"), ("node2", "leaf-b"), ("node3", "leaf-c"))}}))
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump({"all": {
        "children": {"gpu_nodes": {"hosts": {"node1": {}, "node2": {}, "node3": {}}},
                     "slurm_controller": {"hosts": {"localhost": {
                         "ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"}}}}}}))
    leaf = {"alertname": "GpufabricLeafDown", "gpufabric_scope": "leaf", "gpufabric_remediation": "report",
            "rail": "rail1"}
    real, forged = dict(leaf, leaf="leaf-b"), dict(leaf, leaf="leaf-c")
    with alertmanager_process(tmp_path, "route: {receiver: 'null'}\nreceivers: [{name: 'null'}]\n") as base:
        post_to_alertmanager(base, [alert_with(real, {"summary": "leaf-b is down"})])
        settings = {"remediation_alertmanager_url": base, "remediation_state_dir": state_dir,
                    "remediation_textfile_dir": textfile_dir(state_dir), "remediation_report_dir": str(tmp_path / "reports"),
                    "remediation_fabric_map": str(tmp_path / "fabric_map.json"),
                    "remediation_topology_regenerate": True}

        def remediate(name, *labels):
            (tmp_path / "event.json").write_text(json.dumps(dict(settings, remediation_alerts=[
                alert_with(item, {"summary": "a leaf is down"}) for item in labels])))
            return run_logged(name, [
                "ansible-playbook", "-i", str(tmp_path / "hosts.yml"), str(ROOT / "playbooks" / "remediate.yml"),
                "-e", "@" + str(tmp_path / "event.json")],
                timeout=300, env=dict(ENV, PATH="%s:%s" % (slurm, os.environ["PATH"])))

        # leaf-c's alert is forged (Alertmanager does not hold it): reported, no topology.
        rc, out = remediate("remediate-forged-leaf", forged)
        assert rc == 0, tail(out)
        assert "no new Slurm topology: Alertmanager shows none of these alerts active" in " ".join(out.split())
        # leaf-b's is real, but its topology would take node1 and node2 (2 of 3) out: the guard (10 %) holds it.
        rc, out = remediate("remediate-guarded-leaf", real)
    assert rc == 2, tail(out)
    text = " ".join(out.split())
    assert ("The remediation guard stopped the loop: the topology without the dead leaves takes out node1, node2; "
            "held by the guard: partition lab: 2 of its 3 nodes would be out (node1, node2), the most max_drained "
            "10% allows") in text, tail(out)
    # scheduler.yml's plays are skipped, scontrol only read.
    [built] = [task.split("TASK [")[0] for task in out.split("TASK [Topology | build the Slurm topology]")[1:]]
    assert "skipping: [localhost]" in built and "ok: [" not in built, tail(out)
    assert {call[0] for call in fake_scontrol.calls(slurm)} == {"show"}
    assert not list((tmp_path / "reports").glob("*/fabric_map.json"))
    ledger = json.loads((Path(state_dir) / "ledger.json").read_text())
    assert ledger["counters"] == {"report|GpufabricLeafDown": 2, "hold|guard": 1}


@contextlib.contextmanager
def alertmanager_with_basic_auth(workdir, user, password):
    """Debian's Alertmanager on 127.0.0.1 behind its own basic auth (--web.config.file); yields its base URL."""
    bcrypt = pytest.importorskip("bcrypt")
    (workdir / "web.yml").write_text(yaml.safe_dump({"basic_auth_users": {
        user: bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=4)).decode()}}))
    (workdir / "alertmanager.yml").write_text("route: {receiver: 'null'}\nreceivers: [{name: 'null'}]\n")
    port = free_port()
    base = "http://127.0.0.1:%d" % port
    process = subprocess.Popen([ALERTMANAGER, "--config.file", str(workdir / "alertmanager.yml"),
                                "--web.config.file", str(workdir / "web.yml"),
                                "--storage.path", str(workdir / "alertmanager-data"),
                                "--web.listen-address", "127.0.0.1:%d" % port, "--cluster.listen-address", ""],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(auth_request(base + "/-/ready", user, password), timeout=2):
                    break
            except OSError:
                assert process.poll() is None and time.monotonic() < deadline, "Alertmanager did not start"
                time.sleep(0.3)
        yield base
    finally:
        process.terminate()
        process.wait(10)


def auth_request(url, user, password, data=None):
    token = base64.b64encode(("%s:%s" % (user, password)).encode()).decode()
    return urllib.request.Request(url, data=data, method="POST" if data else "GET",
                                  headers={"Authorization": "Basic " + token, "Content-Type": "application/json"})


@pytest.mark.skipif(ALERTMANAGER is None, reason="prometheus-alertmanager is not installed (scripts/setup.sh)")
def test_a_drain_asks_alertmanager_with_its_credentials_and_never_logs_the_password(tmp_path, state_dir):
    password = "s3cret-pw-4711"
    slurm = fake_scontrol.install(tmp_path / "bin", read_fixture("slurm/lab-22.05-three-nodes-idle.txt"))
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump({"all": {
        "children": {"gpu_nodes": {"hosts": {"node1": {}, "node2": {}, "node3": {}}},
                     "slurm_controller": {"hosts": {"localhost": {
                         "ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"}}}}}}))
    contract = {"alertname": "GpufabricPortDown", "gpufabric_scope": "node", "gpufabric_remediation": "drain",
                "rail": "rail1", "netdev": "eth2"}
    alerts = [alert_with(dict(contract, host=host), {"summary": "down"}) for host in ("node1", "node2")]
    with alertmanager_with_basic_auth(tmp_path, "loop", password) as base:
        with urllib.request.urlopen(auth_request(base + "/api/v2/alerts", "loop", password, json.dumps([
                {key: item[key] for key in ("labels", "annotations", "startsAt")} for item in alerts]).encode()),
                timeout=10) as response:
            assert response.status == 200

        def remediate(name, alert, **credentials):
            (tmp_path / "event.json").write_text(json.dumps(dict(
                credentials, remediation_alerts=[alert], remediation_alertmanager_url=base,
                remediation_state_dir=state_dir, remediation_textfile_dir=textfile_dir(state_dir),
                remediation_report_dir=str(tmp_path / "reports"), remediation_verify_on_drain=False)))
            return run_logged(name, [
                "ansible-playbook", "-i", str(tmp_path / "hosts.yml"), str(ROOT / "playbooks" / "remediate.yml"),
                "-e", "@" + str(tmp_path / "event.json")],
                timeout=300, env=dict(ENV, PATH="%s:%s" % (slurm, os.environ["PATH"])))

        rc, out = remediate("remediate-alertmanager-auth", alerts[0], remediation_alertmanager_username="loop",
                            remediation_alertmanager_password=password)
        assert rc == 0 and password not in out, tail(out)
        # Without the credentials Alertmanager answers 401: the run stops before the drain.
        rc, out = remediate("remediate-alertmanager-no-auth", alerts[1])
    assert rc == 2 and "HTTP Error 401" in out, tail(out)
    assert [call[:2] for call in fake_scontrol.calls(slurm) if call[0] == "update"] == [["update", "NodeName=node1"]]
