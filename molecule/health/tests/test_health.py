"""Faults injected into the health lab (molecule.yml), each alert awaited through Prometheus's and Alertmanager's
HTTP APIs with its labels checked, then the fault removed and the alert awaited resolved. The tests run in file
order: first the healthy lab, last the check that nothing but the injected faults alerted over the whole run.

Each test appends the alerts its fault may raise to EXPECTED; the labels of every alert seen are written to
.cache/test-logs/health-alerts.json with the seconds each took to reach Alertmanager (the scenario's intervals:
molecule.yml).
"""

import json
import os
import sys
import time
from pathlib import Path

import pytest

SCENARIO = Path(__file__).resolve().parents[1]
ROOT = SCENARIO.parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from health_lab import (  # noqa: E402
    alertmanager_alerts,
    fired_since,
    in_container,
    matches,
    prometheus_alerts,
    recable,
    series_count,
    set_link,
    wait_alert,
    wait_for,
    wait_resolved,
)

EPHEMERAL = Path(os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY", "/nonexistent"))
NODES = ["health-node1", "health-node2", "health-node3"]
# Alerts reach Alertmanager in about 10-15 s with the lab's intervals; the deadlines leave room for a loaded machine.
DETECT_S = 90
RESOLVE_S = 120
SCOPE = {"page": {"gpufabric_scope": "node", "gpufabric_remediation": "drain", "severity": "page"},
         "warning": {"gpufabric_scope": "node", "gpufabric_remediation": "drain", "severity": "warning"}}
# Labels Prometheus adds to every series of the scrape job.
TARGET_LABELS = {"instance", "job"}

EXPECTED = []  # (alertname, labels) every alert the injected faults may raise
SEEN = []      # what each test saw, for the log
STARTED = []


@pytest.fixture(scope="module")
def api():
    address = (EPHEMERAL / "address-health-mon").read_text().strip()
    return {"prometheus": "http://%s:9090" % address, "alertmanager": "http://%s:9093" % address}


def record(name, labels, seconds, alerts):
    EXPECTED.append((name, labels))
    SEEN.append({"alertname": name, "seconds_to_alertmanager": round(seconds, 1),
                 "alerts": [{"labels": alert["labels"], "state": alert["status"]["state"]} for alert in alerts]})
    log = ROOT / ".cache" / "test-logs" / "health-alerts.json"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(json.dumps(SEEN, indent=1) + "\n")


def exact_labels(alert, name, labels, scope):
    """The alert holds exactly the contract's labels: name, scope, remediation, severity, the fault's labels, and
    the scrape target's instance and job."""
    want = dict(labels, alertname=name, **scope)
    got = dict(alert["labels"])
    assert {key: got.get(key) for key in want} == want, got
    assert set(got) - set(want) <= TARGET_LABELS, got


def expect(api, name, labels, scope, state="active"):
    alerts, seconds = wait_alert(api["prometheus"], api["alertmanager"], name, labels, DETECT_S, state=state)
    assert len(alerts) == 1, alerts
    exact_labels(alerts[0], name, labels, scope)
    assert alerts[0]["annotations"]["summary"] and alerts[0]["annotations"]["expected"], alerts[0]
    record(name, labels, seconds, alerts)
    return alerts[0]


def gone(api, name, labels):
    wait_resolved(api["prometheus"], api["alertmanager"], name, labels, RESOLVE_S)


def test_a_healthy_lab_is_all_green_and_raises_nothing(api):
    prometheus = api["prometheus"]
    # Every node scraped, and every check of the expected state passing: six rails up and cabled as the fabric
    # map says, node1's BGP and BFD sessions with leaf-b, the CHILD SA between node2 and node3 on both ends.
    for expr, wanted in (('up{job="gpufabric"} == 1', 3), ("gpufabric_port_up == 1", 6),
                         ("gpufabric_lldp_neighbour_ok == 1", 6), ("gpufabric_lldp_neighbours == 1", 6),
                         ("gpufabric_bgp_peer_established == 1", 1),
                         ("gpufabric_bfd_peer_up == 1", 1), ("gpufabric_ipsec_child_sa_installed == 1", 2),
                         ("gpufabric_health_source_up == 1", 9)):
        wait_for("%s on %d series" % (expr, wanted), lambda: series_count(api["prometheus"], expr) == wanted, DETECT_S)
    assert series_count(api["prometheus"], "gpufabric_health_source_up == 0") == 0
    wait_for("no alert pending or firing", lambda: not prometheus_alerts(prometheus), DETECT_S)
    assert alertmanager_alerts(api["alertmanager"]) == []
    STARTED.append(time.time())


def test_a_rail_link_down_pages_naming_host_rail_interface_leaf_and_port(api):
    labels = {"host": "health-node2", "rail": "rail1", "netdev": "eth2", "leaf": "leaf-b", "leaf_port": "swp2"}
    set_link("health-leaf-b", "swp2", "down")
    try:
        alert = expect(api, "GpufabricPortDown", labels, SCOPE["page"])
        assert alert["annotations"]["summary"] == "health-node2 rail1 (eth2), cabled to leaf-b port swp2 is down"
    finally:
        set_link("health-leaf-b", "swp2", "up")
    gone(api, "GpufabricPortDown", labels)


def test_the_same_rail_down_behind_one_leaf_is_one_leaf_alert_and_the_node_alerts_are_inhibited(api):
    ports = ["swp1", "swp2", "swp3"]
    for port in ports:
        set_link("health-leaf-a", port, "down")
    try:
        leaf = {"leaf": "leaf-a", "rail": "rail0"}
        expect(api, "GpufabricLeafDown", leaf, {"gpufabric_scope": "leaf", "gpufabric_remediation": "report",
                                                "severity": "page"})
        nodes = [{"host": node, "rail": "rail0", "netdev": "eth1", "leaf": "leaf-a", "leaf_port": port}
                 for node, port in zip(NODES, ports)]
        leaf_alert = [alert for alert in alertmanager_alerts(api["alertmanager"])
                      if alert["labels"]["alertname"] == "GpufabricLeafDown"]
        for labels in nodes:
            # Firing in Prometheus, held back by Alertmanager: inhibited by the leaf alert.
            alert = expect(api, "GpufabricPortDown", labels, SCOPE["page"], state="suppressed")
            assert alert["status"]["inhibitedBy"] == [leaf_alert[0]["fingerprint"]], alert
        # One alert reaches the people and the remediation loop: the leaf's.
        active = [alert["labels"]["alertname"] for alert in alertmanager_alerts(api["alertmanager"])
                  if alert["status"]["state"] == "active"]
        assert active == ["GpufabricLeafDown"], active
    finally:
        for port in ports:
            set_link("health-leaf-a", port, "up")
    gone(api, "GpufabricLeafDown", {"leaf": "leaf-a"})
    for node in NODES:
        gone(api, "GpufabricPortDown", {"host": node})


def test_two_cables_swapped_show_the_leaf_and_port_seen(api):
    recable("health-node3", [("eth1", "health-leaf-b", "swp3"), ("eth2", "health-leaf-a", "swp3")])
    try:
        alert = expect(api, "GpufabricCablingMismatch",
                       {"host": "health-node3", "rail": "rail0", "netdev": "eth1", "leaf": "leaf-a", "leaf_port": "swp3",
                        "seen_leaf": "leaf-b", "seen_port": "swp3"}, SCOPE["warning"])
        assert alert["annotations"]["expected"] == "leaf-a port swp3", alert
        assert alert["annotations"]["actual"] == "leaf-b port swp3", alert
        expect(api, "GpufabricCablingMismatch",
               {"host": "health-node3", "rail": "rail1", "netdev": "eth2", "leaf": "leaf-b", "leaf_port": "swp3",
                "seen_leaf": "leaf-a", "seen_port": "swp3"}, SCOPE["warning"])
    finally:
        recable("health-node3", [("eth1", "health-leaf-a", "swp3"), ("eth2", "health-leaf-b", "swp3")])
    gone(api, "GpufabricCablingMismatch", {"host": "health-node3"})


def test_a_stopped_frr_leaf_downs_bfd_and_bgp_naming_the_peer(api):
    labels = {"host": "health-node1", "peer": "10.243.12.2", "leaf": "leaf-b", "netdev": "eth2"}
    in_container("health-leaf-b", "systemctl", "stop", "frr.service")
    try:
        alert = expect(api, "GpufabricBfdPeerDown", labels, SCOPE["warning"])
        assert alert["annotations"]["summary"] == \
            "health-node1 BFD session with leaf-b (10.243.12.2 on eth2) is down", alert
        expect(api, "GpufabricBgpPeerDown", labels, SCOPE["warning"])
    finally:
        in_container("health-leaf-b", "systemctl", "start", "frr.service")
    gone(api, "GpufabricBfdPeerDown", {"host": "health-node1"})
    gone(api, "GpufabricBgpPeerDown", {"host": "health-node1"})


def test_a_deleted_child_sa_names_the_peer(api):
    in_container("health-node2", "swanctl", "--terminate", "--child", "gf-health-node3")
    try:
        for host, peer in (("health-node2", "health-node3"), ("health-node3", "health-node2")):
            expect(api, "GpufabricIpsecSaMissing", {"host": host, "peer": peer, "child": "gf-" + peer},
                   SCOPE["warning"])
    finally:
        in_container("health-node2", "swanctl", "--initiate", "--child", "gf-health-node3", timeout=60)
    gone(api, "GpufabricIpsecSaMissing", {})


def test_over_the_whole_scenario_only_the_injected_faults_alerted(api):
    assert STARTED, "the healthy-lab test did not pass: nothing to compare with"
    fired = fired_since(api["prometheus"], STARTED[0])
    unexpected = [labels for labels in fired
                  if not any(labels.get("alertname") == name and matches(labels, wanted) for name, wanted in EXPECTED)]
    assert unexpected == [], unexpected
    assert {labels["alertname"] for labels in fired} == {name for name, _labels in EXPECTED}
    # And the lab is healthy again.
    wait_for("no alert pending or firing", lambda: not prometheus_alerts(api["prometheus"]), DETECT_S)
