"""The monitoring side: the health_monitoring_config filter's texts checked by Debian's promtool and amtool as a
Prometheus would load them, and the health_monitoring module run by Ansible on this machine (check, apply, check,
apply; a file promtool refuses changes nothing)."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import yaml

from ansible.errors import AnsibleFilterError
from ansible_collections.gpufabric.core.plugins.filter.health_monitoring_config import health_monitoring_config

ROOT = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent
TARGETS = [{"name": "node2", "address": "10.0.0.12", "port": 9100, "labels": {"rack": "r01"}},
           {"name": "node1", "address": "fd00::11", "port": 9101, "labels": {}}]
needs_promtool = pytest.mark.skipif(shutil.which("promtool") is None or shutil.which("amtool") is None,
                                    reason="promtool and amtool (Debian's prometheus, prometheus-alertmanager)")


def test_targets_name_each_host_with_its_labels_and_bracket_ipv6():
    texts = health_monitoring_config(TARGETS)
    assert json.loads(texts["targets"]) == [
        {"targets": ["[fd00::11]:9101"], "labels": {"host": "node1"}},
        {"targets": ["10.0.0.12:9100"], "labels": {"rack": "r01", "host": "node2"}}]


def test_thresholds_and_intervals_reach_the_rules_and_prometheus_yml():
    texts = health_monitoring_config(TARGETS, thresholds={"port_down_for": "10s"}, evaluation_interval="5s",
                                     scrape_interval="2s", rules_file="/etc/p/r.yml", targets_file="/etc/p/t.json",
                                     webhook_url="http://127.0.0.1:5000/endpoint")
    rules = yaml.safe_load(texts["rules"])
    port_down = [rule for group in rules["groups"] for rule in group["rules"] if rule.get("alert") == "GpufabricPortDown"]
    assert port_down[0]["for"] == "10s" and {group["interval"] for group in rules["groups"]} == {"5s"}
    prometheus = yaml.safe_load(texts["prometheus"])
    assert prometheus["global"] == {"scrape_interval": "2s", "evaluation_interval": "5s"}
    assert prometheus["rule_files"] == ["/etc/p/r.yml"]
    assert prometheus["scrape_configs"][0]["file_sd_configs"] == [{"files": ["/etc/p/t.json"]}]
    assert "honor_labels" not in prometheus["scrape_configs"][0]
    assert prometheus["scrape_configs"][0]["metric_relabel_configs"] == [{"action": "labeldrop", "regex": "exported_.+"}]
    receivers = yaml.safe_load(texts["alertmanager"])["receivers"]
    assert {"name": "gpufabric-remediation",
            "webhook_configs": [{"url": "http://127.0.0.1:5000/endpoint", "send_resolved": True}]} in receivers


def test_the_webhook_token_is_a_file_the_receiver_reads_never_the_token_itself():
    texts = health_monitoring_config(TARGETS, webhook_url="http://10.0.0.1:5000/alertmanager",
                                     webhook_token_file="/etc/prometheus/gpufabric/remediation_webhook_token")
    [receiver] = [item for item in yaml.safe_load(texts["alertmanager"])["receivers"]
                  if item["name"] == "gpufabric-remediation"]
    assert receiver["webhook_configs"][0]["http_config"] == {"authorization": {
        "type": "Bearer", "credentials_file": "/etc/prometheus/gpufabric/remediation_webhook_token"}}
    texts = health_monitoring_config(TARGETS, webhook_url="https://10.0.0.1:5000/alertmanager",
                                     webhook_ca_file="/etc/prometheus/gpufabric/webhook-ca.pem")
    [receiver] = [item for item in yaml.safe_load(texts["alertmanager"])["receivers"]
                  if item["name"] == "gpufabric-remediation"]
    assert receiver["webhook_configs"][0]["http_config"] == {"tls_config": {
        "ca_file": "/etc/prometheus/gpufabric/webhook-ca.pem"}}


def test_services_listen_where_told_with_their_web_config_and_prometheus_authenticates_to_alertmanager():
    web = {"basic_auth_users": {"prometheus": "$2y$10$abcdefghijklmnopqrstuu5h0Xj3dX3mQ0m6J7GZpP1g0KQhPq3y"}}
    texts = health_monitoring_config(TARGETS, services={
        "prometheus": {"listen_address": "127.0.0.1:9090", "web_config": {}, "web_config_file": "/etc/p/web.yml"},
        "alertmanager": {"listen_address": "0.0.0.0:9093", "web_config": web, "web_config_file": "/etc/p/am-web.yml",
                         "client": {"username": "prometheus", "password_file": "/etc/p/am-password"}}})
    assert texts["prometheus_defaults"].endswith('\nARGS="--web.listen-address=127.0.0.1:9090"\n')
    assert texts["alertmanager_defaults"].endswith(
        '\nARGS="--web.listen-address=0.0.0.0:9093 --cluster.listen-address= --web.config.file=/etc/p/am-web.yml"\n')
    assert "prometheus_web" not in texts and yaml.safe_load(texts["alertmanager_web"]) == web
    [alertmanager] = yaml.safe_load(texts["prometheus"])["alerting"]["alertmanagers"]
    assert alertmanager == {"basic_auth": {"username": "prometheus", "password_file": "/etc/p/am-password"},
                            "static_configs": [{"targets": ["127.0.0.1:9093"]}]}


def test_alertmanager_timings_reach_the_route_and_default_to_10s_1m_4h():
    route = yaml.safe_load(health_monitoring_config(TARGETS)["alertmanager"])["route"]
    assert (route["group_wait"], route["group_interval"], route["repeat_interval"]) == ("10s", "1m", "4h")
    texts = health_monitoring_config(TARGETS, alertmanager_timing={"group_wait": "0s", "repeat_interval": "12h"})
    route = yaml.safe_load(texts["alertmanager"])["route"]
    assert (route["group_wait"], route["group_interval"], route["repeat_interval"]) == ("0s", "1m", "12h")


@pytest.mark.parametrize("timing, named", [
    ({"repeat_interval": "10s"}, "alertmanager_timing.repeat_interval: 10s is out of range"),
    ({"group_wait": "soon"}, "alertmanager_timing.group_wait: 'soon' is not a duration"),
    ({"group_by": "5m"}, "alertmanager_timing.group_by: unknown Alertmanager timing"),
    ({"group_interval": "1m\n"}, "alertmanager_timing.group_interval: .* is not a duration"),
])
def test_bad_alertmanager_timings_are_refused_naming_them(timing, named):
    with pytest.raises(AnsibleFilterError, match="health_monitoring_config: " + named):
        health_monitoring_config(TARGETS, alertmanager_timing=timing)


def test_values_as_ansible_core_hands_them_render_as_plain_yaml():
    # ansible-core 2.19 passes inventory values as tagged str subclasses, which yaml.safe_dump refuses.
    tags = pytest.importorskip("ansible._internal._datatag._tags")
    tagged = tags.Origin(path="/inventory/group_vars/all.yml", line_num=3).tag
    texts = health_monitoring_config([{"name": tagged("node1"), "address": tagged("10.0.0.11"), "port": 9100}],
                                     thresholds={"port_down_for": tagged("4s")}, scrape_interval=tagged("2s"),
                                     webhook_url=tagged("http://127.0.0.1:5000/endpoint"))
    rules = yaml.safe_load(texts["rules"])
    assert [rule["for"] for group in rules["groups"] for rule in group["rules"]
            if rule.get("alert") == "GpufabricPortDown"] == ["4s"]
    assert yaml.safe_load(texts["prometheus"])["global"]["scrape_interval"] == "2s"


def test_bad_input_is_refused_naming_the_filter():
    with pytest.raises(AnsibleFilterError, match="health_monitoring_config: expects a list of hosts"):
        health_monitoring_config([{"name": "node1"}])
    with pytest.raises(AnsibleFilterError, match="health_monitoring_config: .*not a duration"):
        health_monitoring_config(TARGETS, thresholds={"port_down_for": "soon"})


@needs_promtool
def test_prometheus_loads_what_the_filter_renders(tmp_path):
    texts = health_monitoring_config(TARGETS, rules_file=str(tmp_path / "gpufabric.rules.yml"),
                                     targets_file=str(tmp_path / "gpufabric_targets.json"))
    for kind, name in (("rules", "gpufabric.rules.yml"), ("targets", "gpufabric_targets.json"),
                       ("prometheus", "prometheus.yml"), ("alertmanager", "alertmanager.yml")):
        (tmp_path / name).write_text(texts[kind])
    # The whole configuration, rule files and file_sd file included (no --syntax-only).
    for argv in (["promtool", "check", "config", str(tmp_path / "prometheus.yml")],
                 ["amtool", "check-config", str(tmp_path / "alertmanager.yml")]):
        result = subprocess.run(argv, capture_output=True, text=True, check=False)
        assert result.returncode == 0, result.stdout + result.stderr


def _run(args, *options):
    """The module in a play, its arguments read from a JSON file: the rules' own {{ $labels.host }} templates are
    data, as they are when the role passes the filter's texts."""
    config = Path(tempfile.gettempdir()) / ("gpufabric-unit-ansible-%d.cfg" % os.getuid())
    config.write_text("[defaults]\ninterpreter_python = %s\n" % sys.executable)
    work = Path(tempfile.mkdtemp(prefix="gpufabric-health-monitoring-"))
    (work / "args.json").write_text(json.dumps(args))
    (work / "play.yml").write_text(
        "- hosts: localhost\n  connection: local\n  gather_facts: false\n  tasks:\n"
        "    - gpufabric.core.health_monitoring: \"{{ lookup('ansible.builtin.file', '%s') | from_json }}\"\n"
        % (work / "args.json"))
    env = dict(os.environ, ANSIBLE_CONFIG=str(config), ANSIBLE_COLLECTIONS_PATH=str(ROOT / ".build" / "collections"),
               ANSIBLE_NOCOLOR="1", ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json",
               ANSIBLE_LOCALHOST_WARNING="0")
    completed = subprocess.run([str(BIN / "ansible-playbook"), "-i", "localhost,", str(work / "play.yml"), *options],
                               env=env, cwd=str(ROOT), capture_output=True, text=True, timeout=180, check=False)
    shutil.rmtree(work)
    return json.loads(completed.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]


@needs_promtool
def test_check_apply_check_apply_and_a_refused_rule_file_changes_nothing(tmp_path):
    directory = tmp_path / "prometheus" / "gpufabric"
    texts = health_monitoring_config(TARGETS)
    files = {kind: {"path": str(directory / name), "content": texts[kind]}
             for kind, name in (("targets", "gpufabric_targets.json"), ("rules", "gpufabric.rules.yml"),
                                ("alertmanager", "alertmanager.yml"))}
    checked = _run({"files": files}, "--check", "--diff")
    assert checked["changed"] and not directory.exists(), checked
    assert [change["action"] for change in checked["changes"]] == ["mkdir", "create", "create", "create"]
    applied = _run({"files": files})
    assert applied["changed"] and applied["service_actions"] == [], applied
    assert {path.name: path.read_text() for path in directory.iterdir()} == {
        Path(entry["path"]).name: entry["content"] for entry in files.values()}
    assert not _run({"files": files}, "--check")["changed"]
    assert not _run({"files": files})["changed"]

    # A rule promtool refuses (and a changed target list beside it): nothing is replaced, in check mode or not.
    broken = dict(files, rules=dict(files["rules"], content="groups:\n- name: x\n  rules:\n  - alert: X\n    expr: up ==\n"),
                  targets=dict(files["targets"], content="[]\n"))
    for options in (("--check",), ()):
        refused = _run({"files": broken}, *options)
        assert refused.get("failed") and "promtool refused %s" % files["rules"]["path"] in refused["msg"], refused
        assert (directory / "gpufabric_targets.json").read_text() == files["targets"]["content"]
        assert (directory / "gpufabric.rules.yml").read_text() == files["rules"]["content"]
    assert "files.grafana: unknown" in _run({"files": dict(files, grafana=files["rules"])})["msg"]


@needs_promtool
def test_secrets_and_web_configs_are_the_services_group_s_alone_and_never_shown(tmp_path):
    import grp

    token = "Zm9yZ2VkLWFsZXJ0cy1nZXQtNDAxLW5vdw"
    web = "basic_auth_users:\n  prometheus: $2b$04$8F4wz3ZpKcbpbPTEHqV3Qe0Q4YHr8cuHjqYzz9mLkbrZ0uESmdtly\n"
    files = {"alertmanager_defaults": {"path": str(tmp_path / "prometheus-alertmanager"),
                                       "content": 'ARGS="--web.listen-address=127.0.0.1:9093"\n'}}
    web_file = {"path": str(tmp_path / "alertmanager-web.yml"), "content": web, "kind": "alertmanager_web"}
    secrets = [{"path": str(tmp_path / "remediation_webhook_token"), "content": token}, web_file]
    applied = _run({"files": files, "secret_files": secrets}, "--diff")
    assert applied["changed"] and token not in json.dumps(applied) and "$2b$04$" not in json.dumps(applied), applied
    group = grp.getgrnam("prometheus").gr_gid if os.geteuid() == 0 else None
    for name, mode in (("remediation_webhook_token", 0o640), ("alertmanager-web.yml", 0o640),
                       ("prometheus-alertmanager", 0o644)):
        info = (tmp_path / name).stat()
        assert info.st_mode & 0o777 == (mode if group is not None else min(mode, 0o600) if mode == 0o640 else mode)
        if group is not None and mode == 0o640:
            assert (info.st_uid, info.st_gid) == (0, group)
    assert (tmp_path / "remediation_webhook_token").read_text() == token
    assert not _run({"files": files, "secret_files": secrets})["changed"]
    # A web configuration promtool refuses (a password where a bcrypt hash belongs) changes nothing.
    bad = [secrets[0], dict(web_file, content="basic_auth_users:\n  p: plain\n")]
    refused = _run({"files": files, "secret_files": bad})
    assert refused.get("failed") and "promtool refused %s" % web_file["path"] in refused["msg"], refused
    assert "plain" not in json.dumps(refused)
    assert (tmp_path / "alertmanager-web.yml").read_text() == web
