"""The remediation loop against real Slurm, Alertmanager, Prometheus and ansible-rulebook, with faults.

The tests run in order and share the lab: a hand drain and three cables pulled at once (one node drained with its
reason, the guard holding the second and paging, the hand-drained one left alone), the cables put back (the
drained node re-verified against a peer behind its leaf and resumed, the hand-drained one still drained), then a
whole leaf down (one fabric report, nothing drained). Every wait is a poll with a deadline. What scontrol showed
before, during and after is kept in the scenario's directory (scontrol-*.txt) and printed."""

import json
import time

import pytest

import remediation_lab as lab

PORT = 15380
FIRST_FAULT = ["remediation-node1", "remediation-node2"]
HAND = ("remediation-node3", "node3", "maintenance: PSU swap")
STATE = {}


@pytest.fixture(scope="module", autouse=True)
def rulebook():
    STATE["since"] = int(time.time())
    book = lab.Rulebook(PORT, str(lab.LAB / "rulebook.log")).start()
    yield book
    book.stop()


def keep(name, text):
    (lab.LAB / ("scontrol-%s.txt" % name)).write_text(text)
    print("scontrol show node, %s:\n%s" % (name, text))


def counter(ledger, key):
    return ledger["counters"].get(key, 0)


def test_every_node_is_idle_and_the_loop_exports_its_counters_at_zero():
    nodes = lab.nodes()
    assert sorted(nodes) == ["node1", "node2", "node3"]
    assert {name: node["state"] for name, node in nodes.items()} == {"node1": "IDLE", "node2": "IDLE", "node3": "IDLE"}
    keep("before", lab.scontrol_text())
    series = lab.poll("gpufabric_remediation_actions_total in Prometheus",
                      lambda: lab.prometheus_query("gpufabric_remediation_actions_total"), 60)
    values = {(s["metric"]["action"], s["metric"]["reason"]): float(s["value"][1]) for s in series}
    assert values[("hold", "guard")] == 0 and values[("resume", "verified")] == 0


def test_one_node_drained_with_its_reason_the_guard_holds_the_next_a_hand_drain_is_left_alone():
    lab.drain_by_hand(HAND[1], HAND[2])
    faults = [("remediation-node1", "rail1"), ("remediation-node2", "rail0"), (HAND[0], "rail1")]
    for host, rail in faults:
        lab.cable(host, rail, up=False)
    alerts = [lab.node_alert(host, rail) for host, rail in faults]
    starts = lab.now_rfc3339()
    started = time.monotonic()
    lab.fire(alerts, starts)
    STATE.update(alerts=alerts, starts=starts)

    def decided():
        ledger = lab.ledger()
        done = (counter(ledger, "drain|GpufabricPortDown") + counter(ledger, "hold|guard") >= 2
                and counter(ledger, "hold|foreign_drain") >= 1)
        return ledger if done else None
    ledger = lab.poll("a drain, a guard hold and a foreign-drain hold in the loop's ledger", decided, 150)
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
    # Every action counted in Prometheus, through node_exporter's textfile collector on the controller.

    def exported():
        series = lab.prometheus_query('gpufabric_remediation_actions_total > 0')
        values = {(s["metric"]["action"], s["metric"]["reason"]): float(s["value"][1]) for s in series}
        return values if len(values) >= 4 else None
    values = lab.poll("the actions in Prometheus", exported, 60)
    assert values == {("drain", "GpufabricPortDown"): 1, ("hold", "guard"): 1, ("page", "guard"): 1,
                      ("hold", "foreign_drain"): 1}
    STATE.update(drained=host, held=held, faults=faults, drain_s=elapsed)
    keep("during", lab.scontrol_text())
    print("fault posted -> node drained and the guard's hold decided: %.1f s" % elapsed)


def test_cables_back_the_drained_node_returns_after_its_reverification_the_hand_drain_stays():
    drained, held, faults = STATE["drained"], STATE["held"], dict(STATE["faults"])
    alerts = {alert["labels"]["host"]: alert for alert in STATE["alerts"]}
    # The held node and the hand-drained node first: the drained node's peer must be in service and silent.
    for host in (held, HAND[0]):
        lab.cable(host, faults[host], up=True)
    lab.resolve([alerts[held], alerts[HAND[0]]], STATE["starts"])
    lab.poll("the held and the hand-drained nodes' alerts gone from Alertmanager",
             lambda: not lab.active_alerts(host=held, alertname="GpufabricPortDown")
             and not lab.active_alerts(host=HAND[0], alertname="GpufabricPortDown"), 60)
    lab.cable(drained, faults[drained], up=True)
    started = time.monotonic()
    lab.resolve([alerts[drained]], STATE["starts"])
    name = lab.NODES[drained][0]
    lab.poll("%s back in service" % name, lambda: lab.nodes()[name]["state"] == "IDLE", 240)
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
    print("fault removed -> node back in service (re-verified): %.1f s" % elapsed)


def test_a_whole_leaf_down_gives_one_fabric_report_and_drains_nothing():
    before = lab.ledger()
    hosts = sorted(lab.NODES)
    for host in hosts:
        lab.cable(host, "rail0", up=False)
    alerts = [lab.node_alert(host, "rail0") for host in hosts] + [lab.leaf_alert("leaf-a", "rail0")]
    starts = lab.now_rfc3339()
    lab.fire(alerts, starts)

    def reported():
        ledger = lab.ledger()
        return ledger if counter(ledger, "report|GpufabricLeafDown") == 1 else None
    ledger = lab.poll("the leaf report in the loop's ledger", reported, 120)
    # Alertmanager held the node alerts back behind the leaf alert (inhibited): the loop never saw them.
    node_alerts = lab.active_alerts(alertname="GpufabricPortDown", rail="rail0")
    assert len(node_alerts) == 3 and all(alert["status"]["inhibitedBy"] for alert in node_alerts)
    assert counter(ledger, "drain|GpufabricPortDown") == counter(before, "drain|GpufabricPortDown")
    nodes = lab.nodes()
    assert nodes["node1"]["state"] == "IDLE" and nodes["node2"]["state"] == "IDLE"
    report = json.loads(sorted((lab.LAB / "reports" / "remediation").glob("*/fabric_report.json"))[-1].read_text())
    assert report["nodes_drained"] == 0
    assert [(alert["alertname"], alert["leaf"], alert["rail"]) for alert in report["alerts"]] == [
        ("GpufabricLeafDown", "leaf-a", "rail0")]
    for host in hosts:
        lab.cable(host, "rail0", up=True)
    lab.resolve(alerts, starts)
    lab.poll("no fabric alert left in Alertmanager", lambda: not lab.active_alerts(gpufabric_remediation="drain")
             and not lab.active_alerts(gpufabric_remediation="report"), 60)


def test_every_decision_is_in_the_controllers_journal_and_the_rulebook_still_runs(rulebook):
    journal = lab.podman_exec(lab.CTL, "journalctl --no-pager --output=cat --since=@%d | grep '^gpufabric remediation: '"
                              " || true" % STATE["since"])
    kinds = [" ".join(line.split()[2:4]) for line in journal.splitlines()]
    assert kinds.count("drain GpufabricPortDown") == 1 and kinds.count("resume verified") == 1, journal
    assert kinds.count("hold guard") == 1 and kinds.count("page guard") == 1, journal
    assert kinds.count("report GpufabricLeafDown") == 1 and kinds.count("hold foreign_drain") >= 2, journal
    assert rulebook.proc.poll() is None, (lab.LAB / "rulebook.log").read_text()[-3000:]
