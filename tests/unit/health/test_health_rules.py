"""The health rules as code: promtool check rules, and promtool test rules with input series for every alert:
it fires with the contract's labels, a shorter fault does not fire, and it resolves. The Alertmanager config is
checked by amtool. (Inhibition is Alertmanager's, not the rules': test_health_alertmanager.py runs a real one.)"""

import shutil
import subprocess

import pytest
import yaml

from ansible_collections.gpufabric.core.plugins.module_utils.health import rules as hr

pytestmark = pytest.mark.skipif(shutil.which("promtool") is None,
                                reason="promtool (Debian package prometheus, scripts/setup.sh) is not installed")

NODE = {"host": "node1", "rail": "rail0", "netdev": "eth1", "device": "", "port": "", "leaf": "leaf-a", "leaf_port": "swp1"}
# The labels the make run lab's miscabled node04 exported (scripts/lab_alerts.py printed them).
LAB_NODE04 = {"host": "node04", "rail": "rail0", "netdev": "eth1", "leaf": "leaf-a", "seen_leaf": "leaf-b",
              "seen_port": "swp4"}
# The PCIe link labels of a GPU the sampler exports (health_sample).
GPU0_LINK = {"host": "node1", "device": "GPU0", "pci": "0000:18:00.0", "kind": "gpu", "rail": "rail0"}


# A node_exporter target as the generated file_sd gives it (job, instance, host).
TARGET = {"job": "gpufabric", "instance": "10.0.0.11:9100", "host": "node1"}
NODE2_TARGET = dict(TARGET, instance="10.0.0.12:9100", host="node2")
NODE3_TARGET = dict(TARGET, instance="10.0.0.13:9100", host="node3")


def stale_alert(target, why):
    return node_alert("GpufabricHealthStale", dict(target, gpufabric_sample=why), remediation="none")


def series(name, labels, values):
    return {"series": "%s{%s}" % (name, ",".join('%s="%s"' % item for item in labels.items())), "values": values}


def node_alert(name, labels, scope="node", remediation="drain", severity="warning"):
    return dict(labels, alertname=name, gpufabric_scope=scope, gpufabric_remediation=remediation, severity=severity)


def fired(name, at, labels, annotations=None):
    alert = {"exp_labels": {key: value for key, value in labels.items() if value != ""}}  # "" is no label
    if annotations is not None:
        alert["exp_annotations"] = annotations
    return {"eval_time": at, "alertname": name, "exp_alerts": [alert]}


def silent(name, at):
    return {"eval_time": at, "alertname": name, "exp_alerts": []}


# (alert name, input series, [alert tests]); one sample every 10 s and an evaluation every 10 s, as the generated
# prometheus.yml scrapes and evaluates by default.
CASES = {
    "port down 40 s pages, a 10 s blip does not, and it resolves": (
        [series("gpufabric_port_up", NODE, "1 0 0 0 0 1 1 1 1 1"),
         series("gpufabric_port_up", dict(NODE, host="node2"), "1 0 1 1 1 1 1 1 1 1")],
        [silent("GpufabricPortDown", "10s"),
         fired("GpufabricPortDown", "20s", node_alert("GpufabricPortDown", NODE, severity="page")),
         fired("GpufabricPortDown", "40s", node_alert("GpufabricPortDown", NODE, severity="page")),
         silent("GpufabricPortDown", "1m")]),
    "two fails within 5 minutes pages as a flap": (
        [series("gpufabric_port_state_changes_total", NODE, "0 0 1 2 3 4 4 4")],
        [silent("GpufabricPortFlapping", "30s"),
         fired("GpufabricPortFlapping", "1m", node_alert("GpufabricPortFlapping", NODE, severity="page"))]),
    "more than one lost carrier in 6 hours warns": (
        [series("gpufabric_port_state_changes_total", NODE, "0x20 2x20 4x20")],
        [silent("GpufabricPortCarrierLost", "5m"),
         fired("GpufabricPortCarrierLost", "8m", node_alert("GpufabricPortCarrierLost", NODE))]),
    "a port at half its expected rate": (
        [series("gpufabric_port_rate_bytes_per_second", NODE, "25e9x14 50e9x4"),
         series("gpufabric_port_expected_rate_bytes_per_second", NODE, "50e9x18")],
        [silent("GpufabricPortRateLow", "1m"),
         fired("GpufabricPortRateLow", "2m10s", node_alert("GpufabricPortRateLow", NODE)),
         silent("GpufabricPortRateLow", "2m50s")]),
    "a GPU trained at x8 where x16 is expected": (
        [series("gpufabric_pcie_link_width", GPU0_LINK, "8x40"),
         series("gpufabric_pcie_link_expected_width", GPU0_LINK, "16x40"),
         series("gpufabric_pcie_link_speed_transfers_per_second", GPU0_LINK, "32e9x40"),
         series("gpufabric_pcie_link_expected_speed_transfers_per_second", GPU0_LINK, "32e9x40")],
        [silent("GpufabricPcieLinkDegraded", "4m"),
         fired("GpufabricPcieLinkDegraded", "6m", node_alert("GpufabricPcieLinkDegraded", {
             "host": "node1", "device": "GPU0", "pci": "0000:18:00.0", "kind": "gpu", "rail": "rail0"}))]),
    "two cables swapped": (
        [series("gpufabric_lldp_neighbour_ok", dict(NODE, seen_leaf="leaf-b", seen_port="swp1"), "0x8 stale"),
         series("gpufabric_lldp_neighbour_ok", dict(NODE, seen_leaf="leaf-a", seen_port="swp1"), "_x8 1x4")],
        [silent("GpufabricCablingMismatch", "50s"),
         fired("GpufabricCablingMismatch", "1m10s", node_alert("GpufabricCablingMismatch", dict(NODE, seen_leaf="leaf-b", seen_port="swp1"))),
         silent("GpufabricCablingMismatch", "2m")]),
    # node1 hears two neighbours for 6 min (a hub between it and its leaf) and warns; node2 for the 2 min a moved
    # cable's old neighbour stays listed (lldpd's TTL) and does not.
    "two LLDP neighbours on one port for 5 min warn (not drained), a stale one for 2 min does not": (
        [series("gpufabric_lldp_neighbours", NODE, "1 2x36 1x10"),
         series("gpufabric_lldp_neighbours", dict(NODE, host="node2"), "1 2x12 1x40")],
        [silent("GpufabricLldpExtraNeighbour", "4m50s"),
         fired("GpufabricLldpExtraNeighbour", "5m30s", node_alert("GpufabricLldpExtraNeighbour", NODE, remediation="none")),
         silent("GpufabricLldpExtraNeighbour", "7m")]),
    "a bond member without its LACP partner": (
        [series("gpufabric_bond_member_in_sync", {"host": "node1", "bond": "bond0", "netdev": "ens4"}, "1 0 0 0 0 1")],
        [silent("GpufabricBondPartnerLost", "10s"),
         fired("GpufabricBondPartnerLost", "30s", node_alert("GpufabricBondPartnerLost", {"host": "node1", "bond": "bond0", "netdev": "ens4"})),
         silent("GpufabricBondPartnerLost", "1m")]),
    "a leaf's BGP and BFD sessions down": (
        [series("gpufabric_bgp_peer_established", {"host": "node1", "peer": "eth1", "leaf": "leaf2", "netdev": "eth1"}, "0x6"),
         series("gpufabric_bfd_peer_up", {"host": "node1", "peer": "eth1", "leaf": "leaf2", "netdev": "eth1"}, "0x6")],
        [fired("GpufabricBgpPeerDown", "1m", node_alert("GpufabricBgpPeerDown", {"host": "node1", "peer": "eth1", "leaf": "leaf2", "netdev": "eth1"})),
         fired("GpufabricBfdPeerDown", "1m", node_alert("GpufabricBfdPeerDown", {"host": "node1", "peer": "eth1", "leaf": "leaf2", "netdev": "eth1"}))]),
    "a CHILD SA deleted, then re-established": (
        [series("gpufabric_ipsec_child_sa_installed", {"host": "node1", "peer": "node2", "child": "gf-node2"}, "0x8 1x4")],
        [silent("GpufabricIpsecSaMissing", "50s"),
         fired("GpufabricIpsecSaMissing", "1m10s", node_alert("GpufabricIpsecSaMissing", {"host": "node1", "peer": "node2", "child": "gf-node2"})),
         silent("GpufabricIpsecSaMissing", "2m")]),
    "ECN off on the RoCE priority": (
        [series("gpufabric_roce_ecn_enabled", dict(NODE, priority="3", point="np"), "0x40")],
        [fired("GpufabricRoceEcnOff", "6m", node_alert("GpufabricRoceEcnOff", dict(NODE, priority="3", point="np")))]),
    "RoCE trust pcp where dscp is expected for 5 min fires, a 3 min one does not, and it resolves": (
        [series("gpufabric_roce_trust_ok", dict(NODE, trust="dscp", seen_trust="pcp"), "0x40 stale"),
         series("gpufabric_roce_trust_ok", dict(NODE, trust="dscp", seen_trust="dscp"), "_x41 1x10"),
         series("gpufabric_roce_trust_ok", dict(NODE, host="node2", trust="dscp", seen_trust="pcp"), "0x18 stale"),
         series("gpufabric_roce_trust_ok", dict(NODE, host="node2", trust="dscp", seen_trust="dscp"), "_x19 1x32")],
        [silent("GpufabricRoceTrustMismatch", "4m50s"),
         fired("GpufabricRoceTrustMismatch", "5m30s",
               node_alert("GpufabricRoceTrustMismatch", dict(NODE, trust="dscp", seen_trust="pcp"))),
         silent("GpufabricRoceTrustMismatch", "7m")]),
    "PFC off on the lossless priority for 5 min warns (not drained), a 3 min one and other priorities do not, and it resolves": (
        [series("gpufabric_roce_pfc_enabled", dict(NODE, priority="3", lossless="true"), "0x40 1x10"),
         series("gpufabric_roce_pfc_enabled", dict(NODE, priority="0", lossless="false"), "0x50"),
         series("gpufabric_roce_pfc_enabled", dict(NODE, host="node2", priority="3", lossless="true"), "0x18 1x32")],
        [silent("GpufabricRocePfcOff", "4m50s"),
         fired("GpufabricRocePfcOff", "5m30s",
               node_alert("GpufabricRocePfcOff", dict(NODE, priority="3", lossless="true"), remediation="none")),
         silent("GpufabricRocePfcOff", "7m")]),
    "a pause storm is reported, never drained": (
        [series("gpufabric_roce_pause_frames_total", dict(NODE, direction="rx", priority="3"), "0+30000x30")],
        [fired("GpufabricPauseStorm", "5m", node_alert("GpufabricPauseStorm", dict(NODE, direction="rx", priority="3"), remediation="none"))]),
    "the cooling controller in fail-safe": (
        [series("gpufabric_cooling_failsafe", {"host": "node1", "group": "chassis"}, "1x10")],
        [fired("GpufabricCoolingFailsafe", "1m30s", node_alert("GpufabricCoolingFailsafe", {"host": "node1", "group": "chassis"}, remediation="none"))]),
    "cannot see is informational": (
        [series("gpufabric_health_source_up", {"host": "node1", "source": "lldp"}, "0x16")],
        [fired("GpufabricCannotSee", "2m30s", node_alert("GpufabricCannotSee", {"host": "node1", "source": "lldp"}, remediation="none", severity="info"))]),
    # node1's sampler never wrote (then starts at 3m20s), node2's writes every 10 s, node3's stops at 1m.
    "a host without a fresh sample warns (not drained), a fresh one does not, and it resolves": (
        [series("up", TARGET, "1x40"), series("up", NODE2_TARGET, "1x40"), series("up", NODE3_TARGET, "1x40"),
         series("gpufabric_health_sample_timestamp_seconds", TARGET, "_x20 200+10x20"),
         series("gpufabric_health_sample_timestamp_seconds", NODE2_TARGET, "0+10x40"),
         series("gpufabric_health_sample_timestamp_seconds", NODE3_TARGET, "0+10x6 60x34")],
        [silent("GpufabricHealthStale", "1m50s"),
         fired("GpufabricHealthStale", "2m", stale_alert(TARGET, "absent")),
         fired("GpufabricHealthStale", "3m10s", stale_alert(TARGET, "absent")),
         silent("GpufabricHealthStale", "3m20s"),
         fired("GpufabricHealthStale", "4m10s", stale_alert(NODE3_TARGET, "stale")),
         fired("GpufabricHealthStale", "6m", stale_alert(NODE3_TARGET, "stale"))]),
    "one leaf down: one leaf alert, one evaluation before the node alerts it inhibits": (
        [series("gpufabric_port_up", dict(NODE, host="node%d" % index), "1 0 0 0 0 0 0") for index in (1, 2, 3)]
        + [series("gpufabric_port_up", dict(NODE, host="node4", leaf="leaf-b"), "1x6")],
        [silent("GpufabricLeafDown", "0s"),
         fired("GpufabricLeafDown", "10s", {"alertname": "GpufabricLeafDown", "leaf": "leaf-a", "rail": "rail0",
                                            "gpufabric_scope": "leaf", "gpufabric_remediation": "report", "severity": "page"}),
         silent("GpufabricPortDown", "10s"),
         fired("GpufabricLeafDown", "45s", {"alertname": "GpufabricLeafDown", "leaf": "leaf-a", "rail": "rail0",
                                            "gpufabric_scope": "leaf", "gpufabric_remediation": "report", "severity": "page"}),
         silent("GpufabricRailDown", "1m")]),
    "one host down is no leaf alert": (
        [series("gpufabric_port_up", dict(NODE, host="node%d" % index), "1 0 0 0 0 0 0" if index == 1 else "1x6") for index in (1, 2, 3)],
        [silent("GpufabricLeafDown", "1m30s")]),
    "a rail down behind two leaves": (
        [series("gpufabric_port_up", dict(NODE, host="node%d" % index, leaf=leaf), "0x6")
         for index, leaf in ((1, "leaf-a"), (2, "leaf-a"), (3, "leaf-c"), (4, "leaf-c"))],
        [fired("GpufabricRailDown", "45s", {"alertname": "GpufabricRailDown", "rail": "rail0", "gpufabric_scope": "rail",
                                            "gpufabric_remediation": "report", "severity": "page"})]),
}


ANNOTATED = {
    "port down names host, rail, interface, leaf and port": (
        CASES["port down 40 s pages, a 10 s blip does not, and it resolves"][0],
        [fired("GpufabricPortDown", "30s", node_alert("GpufabricPortDown", NODE, severity="page"), {
            "summary": "node1 rail0 (eth1), cabled to leaf-a port swp1 is down", "expected": "port up",
            "actual": "port down for over 10s"})]),
    "cabling names what was expected and what is seen": (
        CASES["two cables swapped"][0],
        [fired("GpufabricCablingMismatch", "1m10s", node_alert("GpufabricCablingMismatch", dict(NODE, seen_leaf="leaf-b", seen_port="swp1")), {
            "summary": "node1 rail0 (eth1), cabled to leaf-a port swp1 reaches leaf-b port swp1 instead",
            "expected": "leaf-a port swp1", "actual": "leaf-b port swp1"})]),
    "a host that never wrote its textfile, and one whose sampler stopped": (
        CASES["a host without a fresh sample warns (not drained), a fresh one does not, and it resolves"][0],
        [fired("GpufabricHealthStale", "2m", stale_alert(TARGET, "absent"), {
            "summary": "node1: gpufabric-health has written no sample, so none of its alerts can fire",
            "expected": "a sample every interval, the last under 60s old",
            "actual": "no textfile (the sampler stopped, failed or never ran)"}),
         fired("GpufabricHealthStale", "4m10s", stale_alert(NODE3_TARGET, "stale"), {
             "summary": "node3: gpufabric-health has written no new sample for 3m 10s, so none of its alerts can fire",
             "expected": "a sample every interval, the last under 60s old",
             "actual": "the last sample 3m 10s old"})]),
    "cannot see names the source": (
        CASES["cannot see is informational"][0],
        [fired("GpufabricCannotSee", "2m30s", node_alert("GpufabricCannotSee", {"host": "node1", "source": "lldp"}, remediation="none", severity="info"), {
            "summary": "node1: gpufabric-health cannot see lldp", "expected": "every source readable",
            "actual": "unreadable"})]),
    # The make run lab's node04 (its two cables crossed): the fabric map expects each rail on its leaf, at no port
    # in particular (the inventory names none), so the port is no label and the texts say none.
    "two LLDP neighbours named with the rail and the leaf": (
        [series("gpufabric_lldp_neighbours", NODE, "2x40")],
        [fired("GpufabricLldpExtraNeighbour", "5m30s", node_alert("GpufabricLldpExtraNeighbour", NODE, remediation="none"), {
            "summary": "node1 rail0 (eth1), cabled to leaf-a port swp1 hears 2 LLDP neighbours on one port",
            "expected": "one LLDP neighbour, the leaf", "actual": "2 neighbours"})]),
    "cabling of a rail whose expected leaf port is unknown": (
        [series("gpufabric_lldp_neighbour_ok", LAB_NODE04, "0x10")],
        [fired("GpufabricCablingMismatch", "1m10s", node_alert("GpufabricCablingMismatch", LAB_NODE04), {
            "summary": "node04 rail0 (eth1), cabled to leaf-a reaches leaf-b port swp4 instead",
            "expected": "leaf-a, any port", "actual": "leaf-b port swp4"})]),
}


@pytest.fixture(scope="module")
def rule_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("rules") / "gpufabric.rules.yml"
    path.write_text(yaml.safe_dump(hr.rule_groups(), sort_keys=False))
    return path


@pytest.fixture(scope="module")
def rule_file_labels_only(tmp_path_factory):
    """The same rules without annotations: the cases check every label exactly, ANNOTATED checks the texts."""
    groups = hr.rule_groups()
    for group in groups["groups"]:
        for rule in group["rules"]:
            rule.pop("annotations", None)
    path = tmp_path_factory.mktemp("rules") / "gpufabric.labels.rules.yml"
    path.write_text(yaml.safe_dump(groups, sort_keys=False))
    return path


def promtool(*args):
    return subprocess.run(["promtool", *args], capture_output=True, text=True, check=False)


def test_promtool_check_rules(rule_file):
    result = promtool("check", "rules", str(rule_file))
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_alert_has_a_case():
    tested = {test["alertname"] for _series, tests in CASES.values() for test in tests}
    assert tested == set(hr.alert_names(hr.rule_groups()))


def run_promtool_test(rule_file, input_series, tests, tmp_path):
    spec = {"rule_files": [str(rule_file)], "evaluation_interval": "10s",
            "tests": [{"interval": "10s", "input_series": input_series, "alert_rule_test": tests}]}
    path = tmp_path / "test.yml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return promtool("test", "rules", str(path))


@pytest.mark.parametrize("case", sorted(CASES))
def test_promtool_test_rules(case, rule_file_labels_only, tmp_path):
    result = run_promtool_test(rule_file_labels_only, *CASES[case], tmp_path)
    assert result.returncode == 0, case + "\n" + result.stdout + result.stderr


@pytest.mark.parametrize("case", sorted(ANNOTATED))
def test_promtool_test_rules_annotations(case, rule_file, tmp_path):
    result = run_promtool_test(rule_file, *ANNOTATED[case], tmp_path)
    assert result.returncode == 0, case + "\n" + result.stdout + result.stderr


def test_amtool_accepts_the_alertmanager_config(tmp_path):
    if shutil.which("amtool") is None:
        pytest.skip("amtool (prometheus-alertmanager) is not installed")
    path = tmp_path / "alertmanager.yml"
    path.write_text(yaml.safe_dump(hr.alertmanager_config("http://127.0.0.1:5000/endpoint"), sort_keys=False))
    result = subprocess.run(["amtool", "check-config", str(path)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    routes = subprocess.run(["amtool", "config", "routes", "test", "--config.file", str(path), "--verify.receivers",
                             "gpufabric-remediation", "gpufabric_remediation=drain", "alertname=GpufabricPortDown"],
                            capture_output=True, text=True, check=False)
    assert routes.returncode == 0, routes.stdout + routes.stderr
