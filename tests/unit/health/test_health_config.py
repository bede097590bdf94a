"""The health role's rules (health_problems) and its desired-state module on a real file system: the four-step
idempotence check of community.crypto (check, apply, check, apply), the installed sampler run once against its
own expected state."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpufabric.core.plugins.module_utils.health import config as hc
from ansible_collections.gpufabric.core.plugins.module_utils.health import rules as health_rules
from ansible_collections.gpufabric.core.plugins.module_utils.health import sample as health_sample

ROOT = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent
DEFAULTS = yaml.safe_load((ROOT / "roles" / "health" / "defaults" / "main.yml").read_text())
# The templated trust default as Ansible renders it where the rdma role's rdma_roce_trust is not set, and the
# webhook token where remediation_webhook_token is not.
RENDERED = dict(DEFAULTS, health_roce_trust="dscp", health_alertmanager_webhook_token="")
GOOD = dict(RENDERED, health_listen_address="10.0.0.11")


def test_the_roce_defaults_follow_the_rdma_role_and_the_ecn_priority():
    assert DEFAULTS["health_roce_trust"] == "{{ rdma_roce_trust | default('dscp') }}"
    assert DEFAULTS["health_roce_pfc_priority"] == DEFAULTS["health_roce_ecn_priority"]


def test_the_role_defaults_have_no_problem_once_the_listen_address_is_rendered():
    assert hc.problems(dict(RENDERED, health_listen_address="gpu-a01.mgmt.example.com")) == []


def test_good_settings_have_no_problem():
    assert hc.problems(GOOD) == []


def test_a_longer_qos_for_allows_a_longer_qos_interval():
    assert hc.problems(dict(GOOD, health_qos_interval=600, health_thresholds={"qos_for": "15m"})) == []


@pytest.mark.parametrize("change, named", [
    ({"health_interval": 0}, "health_interval"),
    ({"health_qos_interval": 0}, "health_qos_interval"),
    ({"health_qos_interval": "4m"}, "health_qos_interval"),
    ({"health_qos_interval": 300}, "health_qos_interval"),  # not shorter than qos_for's 5m
    ({"health_qos_interval": 120, "health_thresholds": {"qos_for": "2m"}}, "health_qos_interval"),
    ({"health_thresholds": {"port_down_for": "30"}}, "health_thresholds.port_down_for"),
    ({"health_thresholds": {"leaf_min_ratio": 1.5}}, "health_thresholds.leaf_min_ratio"),
    ({"health_thresholds": {"no_such": 1}}, "health_thresholds.no_such"),
    ({"health_rails": [{"rail": "rail0", "expected_rate_gbps": 4000}]}, "health_rails[0].expected_rate_gbps"),
    ({"health_rails": [{"rail": "rail0\nfake", "netdev": "eth1"}]}, "health_rails[0].rail"),
    ({"health_target_labels": {"rack": "r1\nr2"}}, "health_target_labels.rack"),
    ({"health_listen_address": ""}, "health_listen_address"),
    ({"health_listen_address": "gpu a01"}, "health_listen_address"),
    ({"health_listen_address": "10.0.0.1\n"}, "health_listen_address"),
    ({"health_alertmanager_webhook_url": "ftp://x"}, "health_alertmanager_webhook_url"),
    ({"health_alertmanager_webhook_url": "http://127.0.0.1:5000/endpoint\n"}, "health_alertmanager_webhook_url"),
    ({"health_thresholds": {"port_down_for": "10s\n"}}, "health_thresholds.port_down_for"),
    ({"health_target_labels": {"leaf": "leaf-a"}}, "health_target_labels.leaf"),
    ({"health_target_labels": {"rack-1": "r1"}}, "health_target_labels.rack-1"),
    ({"health_roce_ecn_priority": 8}, "health_roce_ecn_priority"),
    ({"health_roce_pfc_priority": -1}, "health_roce_pfc_priority"),
    ({"health_roce_pfc_priority": True}, "health_roce_pfc_priority"),
    ({"health_roce_trust": "vlan"}, "health_roce_trust"),
    ({"health_roce_trust": "dscp\n"}, "health_roce_trust"),
    ({"health_monitoring_dir": "prometheus/rules"}, "health_monitoring_dir"),
    ({"health_monitoring_dir": "/etc/prometheus/gpu fabric"}, "health_monitoring_dir"),
    # Each would add a line to node_exporter's environment file (ARGS="...") or an argument to its command line.
    ({"health_textfile_dir": '/var/lib/node-exporter"\nLD_PRELOAD=/tmp/x.so'}, "health_textfile_dir"),
    ({"health_textfile_dir": "/var/lib/node exporter"}, "health_textfile_dir"),
    ({"health_node_exporter_tls_cert_file": "cert.pem", "health_node_exporter_tls_key_file": "/etc/k.pem"},
     "health_node_exporter_tls_cert_file"),
    ({"health_node_exporter_tls_cert_file": "/etc/c.pem", "health_node_exporter_tls_key_file": "/etc/k.pem\n"},
     "health_node_exporter_tls_key_file"),
    ({"health_monitoring_scrape_interval": "0s"}, "health_monitoring_scrape_interval"),
    ({"health_monitoring_evaluation_interval": "fast"}, "health_monitoring_evaluation_interval"),
    ({"health_alertmanager_group_wait": "2h"}, "health_alertmanager_group_wait"),
    ({"health_alertmanager_group_interval": "0s"}, "health_alertmanager_group_interval"),
    ({"health_alertmanager_repeat_interval": "30s"}, "health_alertmanager_repeat_interval"),
    ({"health_alertmanager_repeat_interval": "4h\nroute: {}"}, "health_alertmanager_repeat_interval"),
    ({"health_node_exporter_port": 70000}, "health_node_exporter_port"),
    ({"health_interval": 30}, "health_thresholds.stale_after_seconds"),  # the default 60 s: two intervals
    ({"health_interval": 10, "health_thresholds": {"stale_after_seconds": 20}}, "health_thresholds.stale_after_seconds"),
    ({"health_prometheus_listen_address": "9090"}, "health_prometheus_listen_address"),
    ({"health_alertmanager_listen_address": "0.0.0.0:99999"}, "health_alertmanager_listen_address"),
    ({"health_alertmanager_listen_address": "0.0.0.0:9093 --web.enable-admin-api"}, "health_alertmanager_listen_address"),
    ({"health_prometheus_web_config": {"basic_auth_users": {"p": "plain"}}}, "health_prometheus_web_config.basic_auth_users.p"),
    ({"health_prometheus_web_config": {"users": {}}}, "health_prometheus_web_config.users"),
    ({"health_alertmanager_web_config": {"tls_server_config": {"cert_file": "/c.pem"}}},
     "health_alertmanager_web_config.tls_server_config"),
    ({"health_alertmanager_client": {"username": "prometheus"}}, "health_alertmanager_client"),
    ({"health_alertmanager_client": {"token": "x"}}, "health_alertmanager_client.token"),
    ({"health_monitoring_run_prometheus": True, "health_alertmanager_web_config": {"basic_auth_users": {
        "prometheus": "$2b$04$8F4wz3ZpKcbpbPTEHqV3Qe0Q4YHr8cuHjqYzz9mLkbrZ0uESmdtly"}}}, "health_alertmanager_client"),
    ({"health_alertmanager_webhook_token": "short"}, "health_alertmanager_webhook_token"),
    ({"health_alertmanager_webhook_ca_file": "ca.pem"}, "health_alertmanager_webhook_ca_file"),
])
def test_bad_settings_are_named(change, named):
    found = hc.problems(dict(GOOD, **change))
    assert len(found) == 1 and found[0].startswith(named + ":"), found


# Thresholds as Prometheus reads them (issue 47): Python's int() and float() take "1_000" and other scripts' digits,
# which then reached the rule file as written; a string where a rule writes %d failed with a format error.
HOSTILE_THRESHOLDS = {
    "underscored number": ({"pause_frames_per_second": "1_000"}, "is not a number as Prometheus reads one"),
    "arabic-indic rate": ({"pause_frames_per_second": "\u0661\u0660\u0660\u0660"},
                          "is not a number as Prometheus reads one"),
    "arabic-indic ratio": ({"leaf_min_ratio": "\u0660.\u0665"}, "is not a number as Prometheus reads one"),
    "arabic-indic count": ({"flap_changes": "\u0664"}, "must be a whole number written as a YAML number (4, not '4'"),
    "quoted leaf_min_hosts": ({"leaf_min_hosts": "2"},
                              "must be a whole number written as a YAML number (2, not '2' or 2.5)"),
    "arabic-indic stale seconds": ({"stale_after_seconds": "\u0666\u0660"}, "must be a whole number"),
    "zero flap window": ({"flap_window": "0s"}, "0s is a window of less than a second: Prometheus refuses"),
    "arabic-indic duration": ({"port_down_for": "\u0661\u0660s"}, "is not a duration such as 30s"),
    "underscored duration": ({"port_down_for": "1_0s"}, "is not a duration such as 30s"),
}
# Of those, the ones whose rule file Prometheus would refuse, or that fail to render at all, without the check.
PROMTOOL_REFUSES = ("underscored number", "arabic-indic rate", "arabic-indic ratio", "arabic-indic count",
                    "quoted leaf_min_hosts", "arabic-indic stale seconds", "zero flap window",
                    "arabic-indic duration", "underscored duration")
needs_promtool = pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool (Debian's prometheus)")


@pytest.mark.parametrize("case", sorted(HOSTILE_THRESHOLDS))
def test_thresholds_prometheus_cannot_read_are_refused_naming_them(case):
    thresholds, message = HOSTILE_THRESHOLDS[case]
    found = hc.problems(dict(GOOD, health_thresholds=thresholds))
    assert len(found) == 1 and found[0].startswith("health_thresholds.%s: " % next(iter(thresholds))), found
    assert message in found[0], found


def test_a_flap_window_shorter_than_two_scrapes_is_refused():
    found = hc.problems(dict(GOOD, health_thresholds={"flap_window": "15s"}, health_monitoring_scrape_interval="10s"))
    assert found == ["health_thresholds.flap_window: 15s is shorter than two scrapes of health_monitoring_scrape_interval "
                     "(10s): increase() needs two samples inside the window, so most flaps would go unseen; make it at "
                     "least 20s"]


def _promtool_check_rules(tmp_path, thresholds):
    """promtool's verdict on the rule file these thresholds render (False also when they do not render)."""
    try:
        groups = health_rules.rule_groups(thresholds)  # {"groups": [...]}, the rule file
    except (TypeError, ValueError):
        return False
    (tmp_path / "rules.yml").write_text(yaml.safe_dump(groups))
    return subprocess.run(["promtool", "check", "rules", str(tmp_path / "rules.yml")], capture_output=True,
                          check=False).returncode == 0


# Prometheus's own grammar, beyond the single-unit durations accepted before: compound and day units, "0", a float
# string and an exponent where the rule writes the value as given.
ACCEPTED_THRESHOLDS = {"port_down_for": "1m30s", "flap_window": "1h", "rate_low_for": "1d", "leaf_down_for": "0",
                       "cabling_for": "90s", "leaf_min_ratio": "0.5", "pause_frames_per_second": "1e3",
                       "leaf_min_hosts": 3, "flap_changes": 4.0, "stale_after_seconds": 90}


@needs_promtool
def test_every_threshold_form_accepted_is_one_promtool_accepts(tmp_path):
    assert hc.problems(dict(GOOD, health_thresholds=ACCEPTED_THRESHOLDS)) == []
    assert _promtool_check_rules(tmp_path, ACCEPTED_THRESHOLDS)


@needs_promtool
@pytest.mark.parametrize("case", PROMTOOL_REFUSES)
def test_without_the_check_prometheus_would_refuse_the_rule_file(tmp_path, case):
    # The reason for each refusal above: promtool refuses the rule file, or it cannot even be written.
    assert not _promtool_check_rules(tmp_path, HOSTILE_THRESHOLDS[case][0])


RAIL0 = {"rail": "rail0", "netdev": "eth1", "device": "mlx5_0", "port": 1, "link_layer": "Ethernet"}


@pytest.mark.parametrize("second, named", [
    (RAIL0, ["rail rail0", "netdev eth1", "device and port mlx5_0 port 1"]),  # the same rail pasted twice
    (dict(RAIL0, rail="rail1"), ["netdev eth1", "device and port mlx5_0 port 1"]),
    ({"rail": "rail0", "netdev": "eth2"}, ["rail rail0"]),
    ({"rail": "rail1", "device": "mlx5_0", "port": 1}, ["device and port mlx5_0 port 1"]),
])
def test_two_rails_naming_one_port_are_refused_naming_both_entries(second, named):
    """Two rails alike would make the sampler export one series twice (every sample of that reader fails)."""
    rails = [RAIL0, {"rail": "rail2", "netdev": "eth3"}, second]
    assert hc.problems(dict(GOOD, health_rails=rails)) == [
        "health_rails[0] and health_rails[2] both name %s: each rail is listed once" % what for what in named]


def test_rails_on_two_ports_of_one_device_are_not_duplicates():
    rails = [dict(RAIL0, netdev="ib0"), dict(RAIL0, rail="rail1", netdev="ib1", port=2)]
    assert hc.problems(dict(GOOD, health_rails=rails)) == []


def test_the_unit_watchdog_is_twice_the_samples_budget():
    unit = hc.unit_text("/usr/local/sbin/gpufabric-health", "/etc/gpufabric-health/expected.json", 5)
    assert "\nWatchdogSec=30\n" in unit
    assert "\nExecStopPost=/usr/local/sbin/gpufabric-health clean /etc/gpufabric-health/expected.json\n" in unit
    assert health_sample.sample_budget_seconds(5) == 15 and health_sample.sample_budget_seconds(20) == 60


def test_the_webhook_token_follows_the_rulebook_s_and_is_never_shown():
    assert DEFAULTS["health_alertmanager_webhook_token"] == "{{ remediation_webhook_token | default('') }}"
    secret = "not a token but a secret phrase"
    [problem] = hc.problems(dict(GOOD, health_alertmanager_webhook_token=secret))
    assert secret not in problem


def test_node_exporter_s_web_config_is_root_s_and_its_service_group_s():
    import grp

    [entry] = [item for item in hc.desired_files({
        "lib_dir": "/l", "module_utils": {}, "package": {}, "bin_path": "/b", "state_file": "/s", "unit_file": "/u",
        "expected_state": {"interval": 5}, "web_config_file": "/w", "node_exporter_defaults_file": "/d",
        "basic_auth_users": {"p": "$2b$04$8F4wz3ZpKcbpbPTEHqV3Qe0Q4YHr8cuHjqYzz9mLkbrZ0uESmdtly"},
        "listen_address": "127.0.0.1", "port": 9100, "textfile_dir": "/t", "ethtool": False}) if item["path"] == "/w"]
    assert entry["mode"] == 0o640 and entry["secret"]
    try:
        expected = (0, grp.getgrnam("prometheus").gr_gid)
    except KeyError:  # no prometheus package here (the compat runs' Debian 13 container): root keeps the file
        expected = None
    assert entry["owner"] == expected


def test_the_listen_address_is_one_of_the_hosts_own():
    assert hc.listen_address("127.0.0.1") == "127.0.0.1"
    assert hc.listen_address("localhost") in ("127.0.0.1", "::1")
    # 192.0.2.0/24 is TEST-NET-1: never an address of this machine.
    with pytest.raises(ValueError, match="health_listen_address: '192.0.2.7' .* is not an address of this host"):
        hc.listen_address("192.0.2.7")
    with pytest.raises(ValueError, match="resolves to|does not resolve|is not an address"):
        hc.listen_address("no-such-host.invalid")
    # A name whose first address is not local, its second is: the local one.

    def resolve(name, *_args):
        return [(0, 0, 0, "", ("192.0.2.7", 0)), (0, 0, 0, "", ("127.0.0.1", 0))]
    assert hc.listen_address("mgmt.example", resolve=resolve) == "127.0.0.1"


def test_ipsec_expectations_come_from_the_mesh_group_as_the_ipsec_role_names_them():
    members = ["node1", "node2", "node3.lab"]
    assert hc.ipsec_expected("node1", members, gateways=["gw1"], revoked=["node2"]) == [
        {"peer": "node3.lab", "ike": "gf-node3_lab", "child": "gf-node3_lab"},
        {"peer": "gw1", "ike": "gf-gw1", "child": "gf-gw1"}]
    assert hc.ipsec_expected("storage1", members) == []
    # The names are the ones the ipsec role's mesh gives its connections.
    from ansible_collections.gpufabric.core.plugins.module_utils.ipsec.mesh import build_mesh
    nodes = [{"name": name, "address": "10.0.0.%d" % index, "id": name, "selectors": ["10.77.0.%d/32" % index]}
             for index, name in enumerate(members, start=1)]
    mesh = build_mesh("node1", nodes)
    assert [(item["peer"], item["ike"], item["child"]) for item in mesh["expected"]] == [
        (item["peer"], item["ike"], item["child"]) for item in hc.ipsec_expected("node1", members)]


def test_pcie_links_and_roce_expectations_from_the_topology():
    topology = {
        "gpus": {"devices": [{"name": "GPU0", "pci_bus_id": "00000000:18:00.0"}, {"name": "GPU1", "pci_bus_id": None}]},
        "rdma": {"devices": [{"name": "mlx5_0", "pci_address": "0000:19:00.0"}]},
        "rails": [{"rail": 0, "gpu": "GPU0", "device": "mlx5_0"}],
    }
    assert hc.pcie_from_topology(topology) == [
        {"pci": "0000:18:00.0", "device": "GPU0", "kind": "gpu", "rail": "rail0"},
        {"pci": "0000:19:00.0", "device": "mlx5_0", "kind": "nic", "rail": "rail0"}]
    assert hc.pcie_from_topology({}) == []
    rails = [{"rail": "rail0", "device": "mlx5_0", "link_layer": "Ethernet", "netdev": "ens1f0"},
             {"rail": "rail1", "device": "mlx5_1", "link_layer": "InfiniBand"},
             {"rail": "rail2", "netdev": "eth2", "link_layer": "Ethernet"}]
    assert [rail.get("roce") for rail in hc.with_roce_expectations(rails, 3)] == [{"ecn_priority": 3}, None, None]
    assert [rail.get("roce") for rail in hc.with_roce_expectations(rails, 3, "dscp", 3)] == [
        {"ecn_priority": 3, "trust": "dscp", "pfc_priority": 3}, None, None]
    # No ECN check but trust still checked; empty trust and null priorities check nothing.
    assert hc.with_roce_expectations(rails, None, "pcp")[0]["roce"] == {"trust": "pcp"}
    assert "roce" not in hc.with_roce_expectations(rails, None, "", None)[0]
    assert [rail.get("roce") for rail in hc.with_roce_expectations(rails, None)] == [None, None, None]


def _run(args, *options):
    config = Path(tempfile.gettempdir()) / ("gpufabric-unit-ansible-%d.cfg" % os.getuid())
    config.write_text("[defaults]\ninterpreter_python = %s\n" % sys.executable)
    work = Path(tempfile.mkdtemp(prefix="gpufabric-health-config-"))
    (work / "args.json").write_text(json.dumps(args))
    (work / "play.yml").write_text(
        "- hosts: localhost\n  connection: local\n  gather_facts: false\n  tasks:\n"
        "    - gpufabric.core.health_config: \"{{ lookup('ansible.builtin.file', '%s') | from_json }}\"\n" % (work / "args.json"))
    env = dict(os.environ, ANSIBLE_CONFIG=str(config), ANSIBLE_COLLECTIONS_PATH=str(ROOT / ".build" / "collections"),
               ANSIBLE_NOCOLOR="1", ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json",
               ANSIBLE_LOCALHOST_WARNING="0")
    completed = subprocess.run([str(BIN / "ansible-playbook"), "-i", "localhost,", str(work / "play.yml"), *options],
                               env=env, cwd=str(ROOT), capture_output=True, text=True, timeout=180, check=False)
    return json.loads(completed.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]


def test_check_apply_check_apply_and_the_installed_sampler_runs(tmp_path):
    import yaml
    names = yaml.safe_load((ROOT / "roles" / "health" / "vars" / "main.yml").read_text())["__health_module_utils"]
    module_utils = {name: (ROOT / "plugins" / "module_utils" / name).read_text() for name in names}
    package = {name: (ROOT / "roles" / "health" / "files" / "gpufabric_health" / name).read_text()
               for name in ("__init__.py", "__main__.py")}
    textfile_dir = tmp_path / "textfile"
    args = {"host": "node1", "rails": [{"rail": "rail0", "netdev": "lo", "link_layer": "Ethernet"}],
            "module_utils": module_utils, "package": package, "services": False,
            "lib_dir": str(tmp_path / "lib"), "bin_path": str(tmp_path / "bin" / "gpufabric-health"),
            "state_file": str(tmp_path / "etc" / "expected.json"), "unit_file": str(tmp_path / "unit" / "gpufabric-health.service"),
            "textfile_dir": str(textfile_dir), "listen_address": "127.0.0.1",
            "web_config_file": str(tmp_path / "etc" / "web.yml"), "node_exporter_defaults_file": str(tmp_path / "default" / "ne")}
    (tmp_path / "bin").mkdir()
    (tmp_path / "unit").mkdir()
    (tmp_path / "default").mkdir()
    first = _run(args, "--check")
    assert first["changed"] and not (tmp_path / "lib").exists()
    applied = _run(args, "--diff")
    assert applied["changed"], applied
    assert "--web.listen-address=127.0.0.1:9100" in (tmp_path / "default" / "ne").read_text()
    assert not (tmp_path / "etc" / "web.yml").exists()  # no TLS, no basic auth: no web config
    assert not _run(args, "--check")["changed"]
    assert not _run(args)["changed"]
    # The installed layout imports and samples: the loopback device as a rail.
    out = subprocess.run([sys.executable, str(tmp_path / "bin" / "gpufabric-health"), "once", args["state_file"]],
                         capture_output=True, text=True, check=True, env={"PATH": os.environ["PATH"]}).stdout
    assert 'gpufabric_port_up{host="node1",rail="rail0",netdev="lo"' in out


def test_the_module_refuses_a_path_that_would_add_a_line_to_a_unit_or_node_exporters_arguments(tmp_path):
    args = {"host": "node1", "module_utils": {}, "package": {"__main__.py": ""}, "services": False,
            "lib_dir": str(tmp_path / "lib"), "listen_address": "127.0.0.1",
            "textfile_dir": str(tmp_path / "textfile") + '"\nLD_PRELOAD=/tmp/x.so',
            "state_file": str(tmp_path / "etc" / "expected json")}
    refused = _run(args)
    assert refused.get("failed") and not refused.get("changed"), refused
    assert "textfile_dir: must be an absolute path" in refused["msg"] and "state_file: must be" in refused["msg"]
    assert refused["msg"].startswith("Nothing was changed") and not any(tmp_path.iterdir())
