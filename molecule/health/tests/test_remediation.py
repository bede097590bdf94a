"""The remediation loop against real Slurm, Prometheus, Alertmanager and ansible-rulebook, with faults; after
test_health.py, in the same lab. Every alert the loop receives is raised by Prometheus from the health rules (a
cable pulled at its leaf) and routed by Alertmanager's generated configuration to the rulebook's webhook.

The tests run in order and share the lab: a hand drain and three cables pulled at once (one node drained with its
reason, the guard holding the second and paging, the hand-drained one left alone), the cables put back (the
drained node re-verified against a peer behind its leaf and resumed, the hand-drained one still drained), then a
whole leaf down (one fabric report, nothing drained). Every wait is a poll with a deadline. What scontrol showed
before, during and after is kept in the scenario's directory (scontrol-*.txt) and printed, with the seconds from
the cable pulled to the drain and from the cable back to the node IDLE (the lab's intervals: molecule.yml)."""

import json
import shlex
import time
import urllib.request

import pytest

import remediation_lab as lab

PORT = 15380
FIRST_FAULT = ["health-node1", "health-node2"]
HAND = ("health-node3", "node3", "maintenance: PSU swap")
STATE = {}
FIGURES = {}


@pytest.fixture(scope="module", autouse=True)
def rulebook():
    STATE["since"] = int(time.time())
    lab.restart_alertmanager()
    book = lab.Rulebook(PORT, str(lab.LAB / "rulebook.log")).start()
    yield book
    book.stop()


def keep(name, text):
    (lab.LAB / ("scontrol-%s.txt" % name)).write_text(text)
    print("scontrol show node, %s:\n%s" % (name, text))


def figure(name, seconds, what):
    """A measured figure (no assertion on it): printed, and kept in .cache/test-logs/remediation-figures.json, since
    the verifier's output shows no print of a passing test."""
    FIGURES[name] = round(seconds, 1)
    log = lab.ROOT / ".cache" / "test-logs" / "remediation-figures.json"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(json.dumps(FIGURES, indent=1) + "\n")
    print("%s: %.1f s" % (what, seconds))


def counter(ledger, key):
    return ledger["counters"].get(key, 0)


def test_every_node_is_idle_and_the_loop_exports_its_counters_at_zero():
    nodes = lab.nodes()
    assert sorted(nodes) == ["node1", "node2", "node3"]
    assert {name: node["state"] for name, node in nodes.items()} == {"node1": "IDLE", "node2": "IDLE", "node3": "IDLE"}
    keep("before", lab.scontrol_text())
    values = lab.poll("gpufabric_remediation_actions_total exported by the controller's node_exporter",
                      lab.exported_actions, 60)
    assert values[("hold", "guard")] == 0 and values[("resume", "verified")] == 0


def test_one_node_drained_with_its_reason_the_guard_holds_the_next_a_hand_drain_is_left_alone():
    lab.drain_by_hand(HAND[1], HAND[2])
    # Two cables behind leaf-b, one behind leaf-a: below the lab's leaf_min_hosts, three node faults. node1's rail 0
    # (not rail 1, where its BGP session with leaf-b runs: that would add BFD and BGP alerts of node1).
    faults = [("health-node1", "rail0"), ("health-node2", "rail1"), (HAND[0], "rail1")]
    started = time.monotonic()
    for host, rail in faults:
        lab.cable(host, rail, up=False)

    def decided():
        ledger = lab.ledger()
        done = (counter(ledger, "drain|GpufabricPortDown") + counter(ledger, "hold|guard") >= 2
                and counter(ledger, "hold|foreign_drain") >= 1)
        return ledger if done else None
    ledger = lab.poll("a drain, a guard hold and a foreign-drain hold in the loop's ledger", decided, 240)
    elapsed = time.monotonic() - started
    nodes = lab.nodes()
    drained = [host for host in FIRST_FAULT if nodes[lab.NODES[host][0]]["drained"]]
    # Two runs at once (one per alert), one guard of 1 node of 3: exactly one passed it.
    assert len(drained) == 1, lab.scontrol_text()
    [host] = drained
    held = next(other for other in FIRST_FAULT if other != host)
    rail = dict(faults)[host]
    netdev, leaf, leaf_port = lab.NODES[host][1][rail]
    node = nodes[lab.NODES[host][0]]
    # The alert's startsAt, as Prometheus raised it: the "since" of the reason.
    starts = lab.alert_starts(host=host, alertname="GpufabricPortDown")
    assert starts, lab.active_alerts(host=host)
    assert node["state"] == "IDLE+DRAIN"
    assert node["reason"] == "gpufabric: %s %s down since %sZ (GpufabricPortDown %s %s)" % (
        rail, netdev, starts[:19], leaf, leaf_port)
    assert nodes[lab.NODES[held][0]]["state"] == "IDLE"
    assert (nodes["node3"]["state"], nodes["node3"]["reason"]) == ("IDLE+DRAIN", HAND[2])
    assert counter(ledger, "drain|GpufabricPortDown") == 1 and counter(ledger, "hold|guard") == 1
    # The guard paged: its alert is in Alertmanager, routed away from the loop.
    pages = lab.poll("the guard's page in Alertmanager",
                     lambda: lab.active_alerts(alertname="GpufabricRemediationGuard"), 60)
    assert [page["labels"]["host"] for page in pages] == [held]
    assert pages[0]["labels"]["gpufabric_remediation"] == "none" and pages[0]["labels"]["severity"] == "page"
    assert "already has 1 of 3 nodes drained by this loop" in pages[0]["annotations"]["summary"]
    # Every action counted, exported through node_exporter's textfile collector on the controller.

    def exported():
        values = {key: value for key, value in lab.exported_actions().items() if value > 0}
        return values if len(values) >= 4 else None
    values = lab.poll("the actions exported by the controller's node_exporter", exported, 60)
    assert values == {("drain", "GpufabricPortDown"): 1, ("hold", "guard"): 1, ("page", "guard"): 1,
                      ("hold", "foreign_drain"): 1}
    STATE.update(drained=host, held=held, faults=faults, drain_s=elapsed)
    keep("during", lab.scontrol_text())
    figure("fault_to_drain_s", elapsed, "cables pulled -> node drained and the guard's hold decided (through "
           "Prometheus, Alertmanager and the rulebook)")


def test_cables_back_the_drained_node_returns_after_its_reverification_the_hand_drain_stays():
    drained, held, faults = STATE["drained"], STATE["held"], dict(STATE["faults"])
    # The held node and the hand-drained node first: the drained node's peer must be in service and silent.
    for host in (held, HAND[0]):
        lab.cable(host, faults[host], up=True)
    lab.poll("the held and the hand-drained nodes' alerts resolved in Alertmanager",
             lambda: not lab.active_alerts(host=held, alertname="GpufabricPortDown")
             and not lab.active_alerts(host=HAND[0], alertname="GpufabricPortDown"), 90)
    started = time.monotonic()
    lab.cable(drained, faults[drained], up=True)
    name = lab.NODES[drained][0]
    lab.poll("%s back in service" % name, lambda: lab.nodes()[name]["state"] == "IDLE", 300)
    elapsed = time.monotonic() - started
    nodes = lab.nodes()
    assert (nodes["node3"]["state"], nodes["node3"]["reason"]) == ("IDLE+DRAIN", HAND[2])
    ledger = lab.ledger()
    assert counter(ledger, "resume|verified") == 1
    assert ledger["nodes"][name]["action"] == "resume"
    # Never resumed the hand drain; its resolved alert was counted as a hold.
    assert counter(ledger, "hold|foreign_drain") >= 2
    resume = next(entry for entry in reversed(ledger["recent"]) if entry["action"] == "resume")
    drain = next(entry for entry in ledger["recent"] if entry["action"] == "drain")
    assert resume["at"] - drain["at"] >= 20  # remediation_action_window
    # The re-verification that let it back: the verify role's report, the node and its peer behind the same leaf.
    reports = sorted((lab.LAB / "reports" / "remediation").glob("*/verify/verify.json"))
    verdicts = json.loads(reports[-1].read_text())
    assert verdicts["hosts"][drained]["status"] == "pass" and verdicts["hosts"][held]["status"] == "pass"
    STATE["resume_s"] = elapsed
    keep("after", lab.scontrol_text())
    figure("restore_to_idle_s", elapsed, "cable put back -> node back in service (resolved, re-verified, resumed)")


def test_a_whole_leaf_down_gives_one_fabric_report_and_drains_nothing():
    before = lab.ledger()
    hosts = sorted(lab.NODES)
    for host in hosts:
        lab.cable(host, "rail0", up=False)

    def reported():
        ledger = lab.ledger()
        return ledger if counter(ledger, "report|GpufabricLeafDown") == 1 else None
    ledger = lab.poll("the leaf report in the loop's ledger", reported, 180)
    # Alertmanager held the node alerts back behind the leaf alert (inhibited): the loop never saw them.
    node_alerts = lab.poll("the three node alerts, inhibited",
                           lambda: [alert for alert in lab.active_alerts(alertname="GpufabricPortDown", rail="rail0")
                                    if alert["status"]["inhibitedBy"]], 90)
    assert len(node_alerts) == 3, node_alerts
    assert counter(ledger, "drain|GpufabricPortDown") == counter(before, "drain|GpufabricPortDown")
    nodes = lab.nodes()
    assert nodes["node1"]["state"] == "IDLE" and nodes["node2"]["state"] == "IDLE"
    report = json.loads(sorted((lab.LAB / "reports" / "remediation").glob("*/fabric_report.json"))[-1].read_text())
    assert report["nodes_drained"] == 0
    assert [(alert["alertname"], alert["leaf"], alert["rail"]) for alert in report["alerts"]] == [
        ("GpufabricLeafDown", "leaf-a", "rail0")]
    for host in hosts:
        lab.cable(host, "rail0", up=True)
    try:
        lab.poll("no fabric alert left in Alertmanager", lambda: not fabric_alerts_left(), 120)
    except AssertionError as error:
        raise AssertionError("%s; left: %r" % (error, fabric_alerts_left())) from error


def fabric_alerts_left():
    return [(alert["labels"]["alertname"], alert["labels"].get("host"), alert["labels"].get("rail"),
             alert["status"]["state"]) for kind in ("drain", "report")
            for alert in lab.active_alerts(gpufabric_remediation=kind)]


def test_every_decision_is_in_the_controllers_journal_and_the_rulebook_still_runs(rulebook):
    journal = lab.podman_exec(lab.CTL, "journalctl --no-pager --output=cat --since=@%d | grep '^gpufabric remediation: '"
                              " || true" % STATE["since"])
    kinds = [" ".join(line.split()[2:4]) for line in journal.splitlines()]
    assert kinds.count("drain GpufabricPortDown") == 1 and kinds.count("resume verified") == 1, journal
    assert kinds.count("hold guard") == 1 and kinds.count("page guard") == 1, journal
    assert kinds.count("report GpufabricLeafDown") == 1 and kinds.count("hold foreign_drain") >= 2, journal
    assert rulebook.proc.poll() is None, (lab.LAB / "rulebook.log").read_text()[-3000:]


def post_notification(rulebook, alerts):
    """A notification as Alertmanager sends one, POSTed by hand to the rulebook's webhook with its token (the worst
    case: the token leaked)."""
    body = json.dumps({"version": "4", "status": "firing", "receiver": "gpufabric-remediation", "groupKey": "forged",
                       "groupLabels": {}, "commonLabels": {}, "commonAnnotations": {}, "externalURL": "",
                       "truncatedAlerts": 0, "alerts": alerts}).encode()
    request = urllib.request.Request("http://%s:%d/" % (rulebook.host, PORT), data=body, method="POST", headers={
        "Content-Type": "application/json", "Authorization": "Bearer " + lab.WEBHOOK_TOKEN})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status


def test_forged_alerts_a_node_speaking_for_another_and_jinja_from_the_fabric_drain_nothing_and_run_nothing(rulebook):
    """Issue 47's probes end to end, last (they may drain the node that lies): a notification no Prometheus raised,
    for health-node2 with Jinja in every text, POSTed with the webhook's token; health-node1's node_exporter serving
    a series that names health-node2; leaf-b advertising a Jinja system name over LLDP. The playbook runs on this
    machine: a Jinja that ran would create the marker here."""
    marker = lab.LAB / "jinja-ran"
    jinja = "{{ lookup('pipe', 'touch %s') }}" % marker
    before = lab.ledger()
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    forged = {"status": "firing", "labels": {
        "alertname": "GpufabricPortDown", "host": "health-node2", "rail": jinja, "netdev": "eth2", "leaf": jinja,
        "leaf_port": "swp2", "severity": "page", "gpufabric_scope": "node", "gpufabric_remediation": "drain"},
        "annotations": {"summary": jinja}, "startsAt": now, "endsAt": "0001-01-01T00:00:00Z",
        "generatorURL": jinja, "fingerprint": "0000000000000000"}
    assert post_notification(rulebook, [forged]) == 200
    held = lab.poll("the forged alert held: Alertmanager shows no such alert active", lambda: counter(
        lab.ledger(), "hold|not_firing") > counter(before, "hold|not_firing"), 120)
    assert held and lab.nodes()["node2"]["state"] == "IDLE"

    # leaf-b advertises a system name that is Jinja: the nodes behind it see another leaf, as data, and the loop acts
    # on it as on any cabling fault (one drain, the guard holding the next).
    decided_before = counter(lab.ledger(), "drain|GpufabricCablingMismatch") + counter(lab.ledger(), "hold|guard")
    lab.podman_exec("health-leaf-b", "lldpcli configure system hostname %s" % shlex.quote(jinja))
    try:
        cabling = lab.poll("the cabling alert naming the Jinja leaf as data", lambda: [
            alert for alert in lab.active_alerts(alertname="GpufabricCablingMismatch")
            if alert["labels"].get("seen_leaf") == jinja], 120)
        assert {alert["labels"]["leaf"] for alert in cabling} == {"leaf-b"}, cabling
        lab.poll("the loop's decision on the cabling alerts (it read their labels)", lambda: counter(
            lab.ledger(), "drain|GpufabricCablingMismatch") + counter(lab.ledger(), "hold|guard") > decided_before, 180)
    finally:
        lab.podman_exec("health-leaf-b", "lldpcli configure system hostname leaf-b")

    # health-node1 claims a port of health-node2: Prometheus labels the series with its own target's host.
    claim = ('gpufabric_port_up{host="health-node2",rail="rail1",netdev="eth9",leaf="leaf-b",leaf_port="swp2"} 0\n')
    lab.podman_exec("health-node1", "printf '%s' > /var/lib/prometheus/node-exporter/claim.prom.$$ && "
                    "mv /var/lib/prometheus/node-exporter/claim.prom.$$ /var/lib/prometheus/node-exporter/claim.prom"
                    % claim.replace("\n", "\\n"))
    try:
        liar = lab.poll("the claimed port's alert, under the host that served it",
                        lambda: lab.active_alerts(alertname="GpufabricPortDown", netdev="eth9"), 120)
        assert {alert["labels"]["host"] for alert in liar} == {"health-node1"}, liar
        assert not lab.active_alerts(alertname="GpufabricPortDown", host="health-node2")
    finally:
        lab.podman_exec("health-node1", "rm -f /var/lib/prometheus/node-exporter/claim.prom")

    assert not marker.exists(), "a label from the fabric ran as code on the controller"
    assert rulebook.proc.poll() is None, (lab.LAB / "rulebook.log").read_text()[-3000:]
