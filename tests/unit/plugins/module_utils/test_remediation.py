"""The remediation loop's decisions, on Slurm's own words: node lists parsed from real `scontrol show node` captures
(tests/fixtures/slurm), alerts shaped as Alertmanager's webhook sends them (payload version 4) with the labels of the
health rules' contract."""

import json
import multiprocessing
import os
import time

import pytest

from ansible_collections.gpufabric.core.plugins.module_utils.health import remediation as rm
from ansible_collections.gpufabric.core.plugins.module_utils.fabric import slurm_nodes as sn
from fixture_data import read_fixture

PREFIX = "gpufabric:"


def alert(host="node1", status="firing", scope="node", remediation="drain", **labels):
    base = {"alertname": "GpufabricPortDown", "gpufabric_scope": scope, "gpufabric_remediation": remediation,
            "severity": "page", "host": host, "rail": "rail1", "netdev": "eth2", "leaf": "leaf-b", "leaf_port": "swp1"}
    base.update(labels)
    return {"status": status, "labels": {key: value for key, value in base.items() if value is not None},
            "annotations": {"summary": "%s rail1 (eth2) is down" % host},
            "startsAt": "2026-12-04T10:00:00.5Z", "endsAt": "0001-01-01T00:00:00Z", "fingerprint": "f00"}


def webhook(*alerts):
    return {"version": "4", "status": "firing", "receiver": "gpufabric-remediation", "groupLabels": {},
            "commonLabels": {}, "alerts": list(alerts)}


def huji_nodes():
    return sn.parse_scontrol_nodes(read_fixture("slurm/public-huji-17.11-four-nodes-one-drained.txt"))


def with_state(nodes, name, state, reason=None):
    """A copy of the parsed nodes with one node's state as scontrol would print it after an update."""
    out = []
    for node in nodes:
        if node["name"] == name:
            base, flags, not_responding = sn.split_state(state)
            node = dict(node, state=state, base_state=base, flags=flags, drained="DRAIN" in flags,
                        down=base in sn.DOWN_STATES, reason=reason, reason_user="root" if reason else None,
                        reason_time="2026-12-04T10:00:01" if reason else None)
        out.append(node)
    return out


def loop_drain(nodes, name, reason=PREFIX + " rail1 eth2 down", state="IDLE+DRAIN", ledger=None, now=1.0,
               detail=None):
    """The nodes with `name` drained by the loop, and the ledger that records the drain as Slurm showed it."""
    nodes = with_state(nodes, name, state, reason)
    shown = rm.node_state(next(node for node in nodes if node["name"] == name))
    ledger = rm.record(ledger or rm.empty_ledger(), "drain", "GpufabricPortDown", name, now=now, detail=detail,
                       slurm=shown)
    return nodes, ledger


# Alerts into a plan

@pytest.mark.parametrize("shape", ["payload", "event", "split", "list"])
def test_every_shape_of_the_webhook_gives_the_same_alerts(shape):
    a, b = alert("node1"), alert("node2", status="resolved")
    value = {"payload": webhook(a, b), "list": [a, b], "event": {"payload": webhook(a, b), "meta": {}},
             "split": [a, b]}[shape]
    assert rm.alerts_from(value) == [a, b]


def test_the_plan_drains_firing_node_alerts_returns_resolved_ones_and_reports_the_fabric():
    plan = rm.plan(webhook(
        alert("node1"),
        alert("node2", status="resolved"),
        alert("node3", alertname="GpufabricCablingMismatch"),
        alert("node3", status="resolved"),  # node3 still has a firing alert: it does not return
        alert(None, scope="leaf", remediation="report", alertname="GpufabricLeafDown", netdev=None, leaf_port=None),
        alert(None, scope="rail", remediation="drain", alertname="GpufabricRailDown", leaf=None),
        alert("node4", remediation="none", alertname="GpufabricCannotSee"),
        {"status": "firing", "labels": {"alertname": "NodeFilesystemFull", "host": "node1"}},
    ), node_names={"node1": "gpu-a01"})
    assert [(item["host"], item["node"]) for item in plan["drain"]] == [("node1", "gpu-a01"), ("node3", "node3")]
    assert plan["drain"][0]["reason"] == (
        "gpufabric: rail1 eth2 down since 2026-12-04T10:00:00Z (GpufabricPortDown leaf-b swp1)")
    assert plan["drain"][1]["reason"].startswith("gpufabric: rail1 eth2 miscabled since")
    assert [item["host"] for item in plan["return"]] == ["node2"]
    # A rail alert asking for a drain is still the fabric's fault: reported, never drained.
    assert [item["alertname"] for item in plan["reports"]] == ["GpufabricLeafDown", "GpufabricRailDown"]
    assert [item["ignored"] for item in plan["ignored"]] == [
        "gpufabric_remediation none on a node alert asks for no action",
        "not an alert of the contract (gpufabric_scope None, gpufabric_remediation None)"]


def in_alertmanager(*alerts, state="active"):
    """Alertmanager's answer to GET /api/v2/alerts for these webhook alerts (the same labels, its own status)."""
    return [{"labels": dict(item["labels"]), "annotations": item["annotations"], "startsAt": item["startsAt"],
             "fingerprint": item["fingerprint"], "status": {"state": state, "silencedBy": [], "inhibitedBy": []}}
            for item in alerts]


def test_only_the_fleets_hosts_are_acted_on_the_others_are_held_and_say_why():
    plan = rm.plan([alert("node1"), alert("login01"), alert("login01", status="resolved"), alert("node2")],
                   fleet=["node1", "node2", "node3"])
    assert [item["host"] for item in plan["drain"]] == ["node1", "node2"]
    assert [(item["host"], item["hold"]) for item in plan["held"]] == [("login01", "outside_fleet")] * 2
    assert plan["held"][0]["message"] == (
        "GpufabricPortDown: the host 'login01' is not in the inventory's fleet (remediation_peer_group): not acted on")


def test_a_drain_needs_alertmanager_to_show_the_same_alert_active():
    real, forged = alert("node1"), alert("node2")
    silenced = alert("node3")
    other_labels = alert("node1", rail="rail0")  # node1 fires, but not this alert
    plan = rm.plan([real, forged, silenced, other_labels],
                   alertmanager=in_alertmanager(real) + in_alertmanager(silenced, state="suppressed"))
    assert [item["host"] for item in plan["drain"]] == ["node1"]
    assert plan["drain"][0]["labels"]["rail"] == "rail1"
    assert [(item["host"], item["hold"]) for item in plan["held"]] == [
        ("node2", "not_firing"), ("node3", "not_firing"), ("node1", "not_firing")]
    assert "Alertmanager shows no active alert with these labels: not drained" in plan["held"][0]["message"]
    # A resolved alert asks for no confirmation (a return asks Alertmanager itself, before the resume).
    assert [item["host"] for item in rm.plan([alert("node2", status="resolved")], alertmanager=[])["return"]] == [
        "node2"]


def test_a_leaf_report_is_confirmed_only_by_alertmanager():
    leaf = alert(None, scope="leaf", remediation="report", alertname="GpufabricLeafDown", netdev=None)
    assert rm.plan([leaf], alertmanager=in_alertmanager(leaf))["reports"][0]["confirmed"] is True
    assert rm.plan([leaf], alertmanager=[])["reports"][0]["confirmed"] is False
    assert "confirmed" not in rm.plan([leaf])["reports"][0]


def test_alertmanagers_node_alerts_by_host():
    answer = in_alertmanager(alert("node1"), alert("node1", alertname="GpufabricPortFlapping")) \
        + in_alertmanager(alert("node2"), state="suppressed") + in_alertmanager(alert("node3"), state="unprocessed") \
        + in_alertmanager(alert(None, scope="leaf", remediation="report", alertname="GpufabricLeafDown"))
    assert rm.firing_by_host(answer) == {"node1": ["GpufabricPortDown", "GpufabricPortFlapping"],
                                         "node2": ["GpufabricPortDown"]}


def test_a_node_alert_without_a_host_is_ignored_and_says_why():
    plan = rm.plan([alert(None)])
    assert plan["drain"] == [] and plan["ignored"][0]["ignored"] == "a node alert without a host label"


def test_what_is_not_an_alert_is_refused():
    with pytest.raises(rm.RemediationError, match="labels mapping"):
        rm.alerts_from({"status": "firing"})
    with pytest.raises(rm.RemediationError, match="mapping"):
        rm.alerts_from(["GpufabricPortDown"])


@pytest.mark.parametrize("rail, index", [("rail1", 1), ("3", 3), (0, 0), ("rail", None), (None, None), ("r1x", None)])
def test_rail_numbers(rail, index):
    assert rm.rail_index(rail) == index


# The guard

@pytest.mark.parametrize("value, size, limit", [
    ("10%", 4, 1),     # 0.4 rounds down to 0: at least one
    ("10%", 100, 10),
    ("10%", 109, 10),  # rounded down
    ("25%", 4, 1),
    ("50%", 4, 2),
    ("100%", 3, 3),
    ("0.5%", 1000, 5),
    (2, 3, 2),
    ("3", 100, 3),
])
def test_guard_arithmetic(value, size, limit):
    assert rm.drain_limit(value, size) == limit


@pytest.mark.parametrize("value", [0, "0", "0%", "150%", "100.5%", -1, "-5%", "ten", "", None, True, 1.5, "%"])
def test_a_guard_of_nothing_or_above_the_partition_is_refused(value):
    problem = rm.max_drained_problem("remediation_max_drained", value)
    assert problem and problem.startswith("remediation_max_drained: ")
    with pytest.raises(rm.RemediationError):
        rm.drain_limit(value, 10)


def test_the_guard_counts_only_this_loops_drains_per_partition_of_the_node():
    # oxygen-04 was drained by a person ("memory issues?"): it does not count against the loop's guard.
    nodes = huji_nodes()
    checked = rm.guard(nodes, "cortex-01", PREFIX, "25%")
    assert checked["allowed"]
    assert [(c["partition"], c["size"], c["limit"], c["drained_by_loop"]) for c in checked["partitions"]] == [
        ("short", 4, 1, []), ("killable", 3, 1, [])]
    # The loop drains dumfries-002 (short, medium, killable): cortex-01 shares short and killable, each full now.
    nodes, ledger = loop_drain(nodes, "dumfries-002", PREFIX + " rail0 eth1 down", "ALLOCATED+DRAIN")
    checked = rm.guard(nodes, "cortex-01", PREFIX, "25%", ledger["nodes"])
    assert not checked["allowed"]
    assert [c["room"] for c in checked["partitions"]] == [False, False]
    # A drain whose reason merely starts with the prefix, without the ledger's record, is a person's: not counted.
    assert rm.guard(nodes, "cortex-01", PREFIX, "25%")["allowed"]
    # cricket shares only short with it; with a guard of 2 there is room everywhere it shares with others.
    assert rm.guard(nodes, "cricket", PREFIX, 2, ledger["nodes"], small_partitions=True)["allowed"]


def test_the_guard_never_drains_the_last_node_in_service_of_a_partition_of_one_or_two():
    # cricket is the only node of debug, other, allowed and deny; long has cricket and oxygen-04 (a person's drain).
    nodes = huji_nodes()
    checked = rm.guard(nodes, "cricket", PREFIX, "100%")
    assert not checked["allowed"]
    assert {c["partition"] for c in checked["partitions"] if c["last_in_service"]} == {
        "long", "debug", "other", "allowed", "deny"}
    decision = rm.decide(nodes, request("cricket", max_drained="100%", small_partitions=False), rm.empty_ledger(), 0)
    assert (decision["action"], decision["reason"]) == ("hold", "guard")
    assert ("partition long has 2 node(s) and this drain would leave none of them in service" in decision["message"])
    assert rm.guard(nodes, "cricket", PREFIX, "100%", small_partitions=True)["allowed"]
    # A partition of two with both in service: one may go, never the second.
    nodes = [dict(node, partitions=["pair"]) for node in huji_nodes() if node["name"] in ("cortex-01", "dumfries-002")]
    assert rm.guard(nodes, "cortex-01", PREFIX, 2)["allowed"]
    nodes, ledger = loop_drain(nodes, "cortex-01")
    assert not rm.guard(nodes, "dumfries-002", PREFIX, 2, ledger["nodes"])["allowed"]


# Decisions

def request(node, state="drained", **extra):
    base = {"node": node, "state": state, "prefix": PREFIX, "reason": PREFIX + " rail1 eth2 down",
            "alertname": "GpufabricPortDown", "max_drained": "50%", "window": 300, "firing": [],
            "verification": "passed", "small_partitions": True}
    base.update(extra)
    return base


def test_drain_a_node_in_service():
    # cricket is alone in some partitions: small_partitions (request) lets the guard drain it.
    decision = rm.decide(huji_nodes(), request("cricket"), rm.empty_ledger(), 1000.0)
    assert (decision["action"], decision["reason"]) == ("drain", "GpufabricPortDown")
    assert decision["before"] == {"state": "IDLE", "reason": None, "reason_user": None, "reason_time": None}


def test_a_node_drained_by_someone_else_is_never_touched():
    nodes = huji_nodes()
    drain = rm.decide(nodes, request("oxygen-04"), rm.empty_ledger(), 1000.0)
    assert (drain["action"], drain["reason"]) == ("hold", "foreign_drain")
    assert "'memory issues?' by root" in drain["message"]
    resume = rm.decide(nodes, request("oxygen-04", "resumed"), rm.empty_ledger(), 1000.0)
    assert (resume["action"], resume["reason"]) == ("hold", "foreign_drain")
    assert "never resumed" in resume["message"]


def test_a_node_down_for_any_reason_is_someone_elses():
    nodes = with_state(huji_nodes(), "cricket", "DOWN*", "Not responding")
    assert rm.decide(nodes, request("cricket"), rm.empty_ledger(), 0)["reason"] == "foreign_drain"


def test_a_drain_already_ours_is_left_as_it_is():
    nodes, ledger = loop_drain(huji_nodes(), "cricket", PREFIX + " rail0 eth1 down")
    decision = rm.decide(nodes, request("cricket"), ledger, 0)
    assert decision["action"] == "none" and "already drained by this loop" in decision["message"]


@pytest.mark.parametrize("reason, user", [
    (PREFIX + " rail0 eth1 down -- DO NOT RESUME, RMA 4711", "root"),  # a person extended the loop's reason
    (PREFIX + " rail0 eth1 down", "alice"),                            # another user drained it again
])
def test_a_loop_drain_someone_changed_is_theirs_and_never_resumed(reason, user):
    nodes, ledger = loop_drain(huji_nodes(), "cricket", PREFIX + " rail0 eth1 down")
    nodes = [dict(node, reason=reason, reason_user=user) if node["name"] == "cricket" else node for node in nodes]
    decision = rm.decide(nodes, request("cricket", "resumed"), ledger, 10000.0)
    assert (decision["action"], decision["reason"]) == ("hold", "foreign_drain")
    assert "never resumed" in decision["message"]


def test_a_persons_drain_that_starts_with_the_prefix_is_not_the_loops():
    nodes = with_state(huji_nodes(), "cricket", "IDLE+DRAIN", PREFIX + " by hand, see ticket 12")
    assert rm.decide(nodes, request("cricket", "resumed"), rm.empty_ledger(), 0)["reason"] == "foreign_drain"
    assert rm.decide(nodes, request("cricket"), rm.empty_ledger(), 0)["reason"] == "foreign_drain"


def test_the_guard_holds_a_drain_and_says_which_partition_is_full():
    nodes, ledger = loop_drain(huji_nodes(), "cortex-01", PREFIX + " rail0 eth1 down", "ALLOCATED+DRAIN")
    decision = rm.decide(nodes, request("cricket", max_drained="25%"), ledger, 0)
    assert (decision["action"], decision["reason"]) == ("hold", "guard")
    assert decision["message"] == (
        "guard: partition short already has 1 of 4 nodes drained by this loop (cortex-01), the most max_drained "
        "25% allows; cricket is not drained")


def test_an_unknown_node_is_held():
    decision = rm.decide(huji_nodes(), request("node[1-64]"), rm.empty_ledger(), 0)
    assert (decision["action"], decision["reason"]) == ("hold", "unknown_node")


@pytest.mark.parametrize("extra, reason", [
    ({"firing": ["GpufabricPortDown"]}, "alert_firing"),
    ({"verification": "failed", "verify_message": "rail 1: 0.0 of 0.1 Gbit/s"}, "verify_failed"),
    ({"verification": "no_peer"}, "no_peer"),
])
def test_a_resume_waits_for_silence_and_a_passed_reverification(extra, reason):
    nodes, ledger = loop_drain(huji_nodes(), "cricket", now=-1000.0)
    decision = rm.decide(nodes, request("cricket", "resumed", **extra), ledger, 0)
    assert (decision["action"], decision["reason"]) == ("hold", reason)


def test_the_window_holds_a_resume_but_never_a_drain():
    nodes, ledger = loop_drain(huji_nodes(), "cricket", now=1000.0)
    held = rm.decide(nodes, request("cricket", "resumed"), ledger, 1100.0)
    assert (held["action"], held["reason"], held["wait_s"]) == ("hold", "window", 200)
    assert rm.decide(nodes, request("cricket", "resumed"), ledger, 1300.0)["action"] == "resume"
    # Resumed at 1300, the fault is back at 1310: drained at once.
    ledger = rm.record(ledger, "resume", "verified", "cricket", now=1300.0)
    assert rm.decide(huji_nodes(), request("cricket"), ledger, 1310.0)["action"] == "drain"


def test_resume_without_reverification_is_counted_apart():
    nodes, ledger = loop_drain(huji_nodes(), "cricket", now=-1000.0)
    decision = rm.decide(nodes, request("cricket", "resumed", verification="disabled"), ledger, 0)
    assert (decision["action"], decision["reason"]) == ("resume", "unverified")


# Peers

def fabric_map():
    def rails(leaf0, leaf1, up1=True):
        return [{"rail": 0, "netdev": "eth1", "switch": leaf0, "up": True},
                {"rail": 1, "netdev": "eth2", "switch": leaf1, "up": up1}]
    return {"hosts": {"node1": {"rails": rails("leaf-a", "leaf-b")}, "node2": {"rails": rails("leaf-a", "leaf-b")},
                      "node3": {"rails": rails("leaf-a", "leaf-b", up1=False)},
                      "node10": {"rails": rails("leaf-c", "leaf-b")}, "node4": {"rails": rails("leaf-c", "leaf-d")}}}


def slurm(**states):
    return [{"name": name, "drained": states.get(name) == "drain", "down": states.get(name) == "down"}
            for name in ("node1", "node2", "node3", "node4", "node10")]


def test_the_peer_is_in_service_silent_and_behind_the_same_leaf_on_the_same_rail():
    item = rm.classify(alert("node1"))
    candidates = ["node10", "node2", "node3", "node4", "node1"]
    [pair] = rm.choose_peers([item], fabric_map(), slurm(), [], candidates)
    assert (pair["peer"], pair["leaf"], pair["rail_index"], pair["netdev"], pair["peer_netdev"]) == (
        "node2", "leaf-b", 1, "eth2", "eth2")
    # node2 drained by anyone, node3's rail down in the map: node10 (natural order after node2).
    [pair] = rm.choose_peers([item], fabric_map(), slurm(node2="drain"), [], candidates)
    assert pair["peer"] == "node10"
    # node10 has an alert firing: nobody is left behind leaf-b.
    [pair] = rm.choose_peers([item], fabric_map(), slurm(node2="down"), ["node10"], candidates)
    assert pair["peer"] is None and pair["why"] == "no host in service without an alert behind leaf-b on rail 1 to test node1 against"


def test_an_alert_without_a_rail_takes_a_peer_sharing_a_leaf():
    item = rm.classify(alert("node4", rail=None, netdev=None, leaf=None, alertname="GpufabricPcieLinkDegraded"))
    [pair] = rm.choose_peers([item], fabric_map(), slurm(), [], ["node1", "node10", "node4"])
    assert (pair["peer"], pair["leaf"], pair["rail_index"]) == ("node10", "leaf-c", None)


def test_no_fabric_map_means_no_peer():
    [pair] = rm.choose_peers([rm.classify(alert("node1"))], None, slurm(), [], ["node2"])
    assert pair["peer"] is None and "no fabric map" in pair["why"]


# Fabric reports and the topology without the dead leaf

def test_a_firing_leaf_alert_takes_that_leafs_rail_down_in_the_map_copy_only():
    original = fabric_map()
    leaf = rm.classify(alert(None, scope="leaf", remediation="report", alertname="GpufabricLeafDown"))
    copy = rm.fabric_map_without_leaves(original, [leaf])
    down = sorted(host for host, entry in copy["hosts"].items() for rail in entry["rails"]
                  if rail["rail"] == 1 and rail["up"] is False)
    assert down == ["node1", "node10", "node2", "node3"]
    assert copy["hosts"]["node1"]["rails"][1]["state"].startswith("down: GpufabricLeafDown leaf-b since")
    assert all(rail["up"] for rail in copy["hosts"]["node4"]["rails"])
    assert original["hosts"]["node1"]["rails"][1]["up"] is True
    resolved = dict(leaf, status="resolved")
    assert rm.fabric_map_without_leaves(original, [resolved]) == original


# The ledger and its metrics

def test_every_action_is_counted_and_exported_with_zeros_for_what_has_not_happened():
    ledger = rm.empty_ledger()
    nodes, ledger = loop_drain(huji_nodes(), "cricket", now=10.0)
    ledger = rm.record(ledger, "hold", "guard", "node2", "guard full", now=11.0)
    ledger = rm.record(ledger, "page", "guard", "node2", now=11.5)
    ledger = rm.load_ledger(rm.dump_ledger(ledger))
    text = rm.metrics(ledger, nodes, PREFIX, "50%")
    lines = text.splitlines()
    assert "# TYPE gpufabric_remediation_actions_total counter" in lines
    assert 'gpufabric_remediation_actions_total{action="drain",reason="GpufabricPortDown"} 1' in lines
    assert 'gpufabric_remediation_actions_total{action="hold",reason="guard"} 1' in lines
    assert 'gpufabric_remediation_actions_total{action="hold",reason="window"} 0' in lines
    assert 'gpufabric_remediation_actions_total{action="resume",reason="verified"} 0' in lines
    assert 'gpufabric_remediation_drained_nodes{partition="short"} 1' in lines
    assert 'gpufabric_remediation_drained_nodes{partition="killable"} 0' in lines
    assert 'gpufabric_remediation_drain_limit{partition="short"} 2' in lines
    assert ledger["nodes"] == {"cricket": {
        "action": "drain", "at": 10.0, "reason": "GpufabricPortDown", "slurm_reason": PREFIX + " rail1 eth2 down",
        "slurm_user": "root", "slurm_time": "2026-12-04T10:00:01"}}
    assert [entry["action"] for entry in ledger["recent"]] == ["drain", "hold", "page"]


def test_prometheus_reads_the_metrics_back():
    parser = pytest.importorskip("prometheus_client.parser")
    ledger = rm.record(rm.empty_ledger(), "report", "GpufabricLeafDown", now=1.0)
    families = {family.name: family for family in parser.text_string_to_metric_families(rm.metrics(ledger))}
    samples = {(s.labels["action"], s.labels["reason"]): s.value
               for s in families["gpufabric_remediation_actions"].samples if s.name.endswith("_total")}
    assert samples[("report", "GpufabricLeafDown")] == 1.0


def test_the_ledger_keeps_the_recent_actions_bounded_and_refuses_a_stranger():
    ledger = rm.empty_ledger()
    for index in range(rm.RECENT_ACTIONS + 5):
        ledger = rm.record(ledger, "hold", "window", "node1", now=float(index))
    assert len(ledger["recent"]) == rm.RECENT_ACTIONS and ledger["counters"]["hold|window"] == rm.RECENT_ACTIONS + 5
    with pytest.raises(rm.RemediationError, match="version"):
        rm.load_ledger(json.dumps({"version": 99}))
    with pytest.raises(rm.RemediationError, match="not JSON"):
        rm.load_ledger("{")
    with pytest.raises(rm.RemediationError, match="unknown remediation action"):
        rm.record(ledger, "reboot", "x")


# Two loop actions at once: the lock

def _guarded_drain(path, name, results):
    """What the module does inside its lock, with the ledger standing in for Slurm's drained nodes."""
    with rm.exclusive_lock(os.path.join(path, "lock"), timeout=30, poll=0.01):
        ledger_file = os.path.join(path, "ledger.json")
        ledger = rm.load_ledger(open(ledger_file).read() if os.path.exists(ledger_file) else None)
        drained = [node for node, last in ledger["nodes"].items() if last["action"] == "drain"]
        time.sleep(0.2)  # a slow scontrol: the other process is waiting on the lock meanwhile
        if len(drained) + 1 <= 1:
            ledger = rm.record(ledger, "drain", "GpufabricPortDown", name)
            results.put((name, "drain"))
        else:
            ledger = rm.record(ledger, "hold", "guard", name)
            results.put((name, "hold"))
        with open(ledger_file, "w") as handle:
            handle.write(rm.dump_ledger(ledger))


def test_two_actions_at_once_never_both_pass_a_guard_of_one(tmp_path):
    results = multiprocessing.Queue()
    workers = [multiprocessing.Process(target=_guarded_drain, args=(str(tmp_path), name, results))
               for name in ("node1", "node2")]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    outcomes = sorted(results.get(timeout=5)[1] for worker in workers)
    assert outcomes == ["drain", "hold"]


def test_a_lock_held_too_long_is_an_error_naming_it(tmp_path):
    lock = str(tmp_path / "lock")
    with rm.exclusive_lock(lock, timeout=5):
        pid = os.fork()
        if pid == 0:  # the second action
            try:
                with rm.exclusive_lock(lock, timeout=0.3, poll=0.05):
                    os._exit(1)
            except rm.RemediationError as exc:
                os._exit(0 if "held %s" % lock in str(exc) else 2)
        status = os.waitpid(pid, 0)[1]
    assert os.WEXITSTATUS(status) == 0


def test_the_topology_without_a_dead_leaf_leaves_its_hosts_out_and_names_the_alert():
    """A dead leaf of rail 0 in the fleet of test_slurm_topology (real SONiC LLDP): slurm_topology, given the
    remediation's copy of the map, builds rail 0's tree without the leaf and says why each host is left out."""
    from ansible_collections.gpufabric.core.plugins.module_utils.parsers.lldp import parse_lldp
    from ansible_collections.gpufabric.core.plugins.module_utils.fabric.slurm_topology import build_slurm_topology
    from test_slurm_topology import SONIC, _host, _map

    sonic = parse_lldp(read_fixture(SONIC))
    hosts = {"gpu-%02d" % n: _host(sonic, "Ethernet%d" % (184 - 8 * ((n - 1) % 4)),
                                   rename={"LEAF0%d" % m: "LEAF0%d" % (m + 4) for m in range(1, 5)} if n > 4 else None)
             for n in range(1, 9)}
    fabric = _map((hosts, {host: "su1" if host <= "gpu-04" else "su2" for host in hosts}))
    leaf = rm.classify({"status": "firing", "startsAt": "2026-12-04T10:00:00Z", "labels": {
        "alertname": "GpufabricLeafDown", "gpufabric_scope": "leaf", "gpufabric_remediation": "report",
        "leaf": "LEAF01", "rail": "rail0"}})
    slurm = build_slurm_topology(rm.fabric_map_without_leaves(fabric, [leaf]))
    lines = [line for line in slurm["topology_conf"].splitlines() if not line.startswith("#")]
    assert lines == ["SwitchName=LEAF05 Nodes=gpu-[05-08]"]
    excluded = {item["host"]: item["reasons"] for item in slurm["excluded"]}
    assert sorted(excluded) == ["gpu-01", "gpu-02", "gpu-03", "gpu-04"]
    assert excluded["gpu-01"] == ["rail 0 (ens108np0) is down: GpufabricLeafDown LEAF01 since 2026-12-04T10:00:00Z"]
    # Without the alert, rail 0's tree has both leaves.
    assert "SwitchName=LEAF01 Nodes=gpu-[01-04]" in build_slurm_topology(fabric)["topology_conf"]


def test_a_topology_without_a_dead_leaf_goes_through_the_guard():
    lab = sn.parse_scontrol_nodes(read_fixture("slurm/lab-22.05-three-nodes-idle.txt"))  # node1-3, partition lab
    leaf_b = rm.classify(alert(None, scope="leaf", remediation="report", alertname="GpufabricLeafDown",
                               leaf="leaf-b", netdev=None, leaf_port=None))
    held = rm.topology_guard(fabric_map(), [leaf_b], lab, {}, PREFIX, "10%")
    # node3's rail 1 was down already; node10 is behind leaf-b but no Slurm node of the lab.
    assert (held["allowed"], held["nodes"]) == (False, ["node1", "node2", "node10"])
    assert held["message"] == (
        "the topology without the dead leaves takes out node1, node2, node10; held by the guard: partition lab: 2 "
        "of its 3 nodes would be out (node1, node2), the most max_drained 10% allows")
    assert rm.topology_guard(fabric_map(), [leaf_b], lab, {}, PREFIX, "2")["allowed"]
    # The loop's own drains count: with node3 drained by it, 3 of lab would be out.
    nodes, ledger = loop_drain(lab, "node3")
    held = rm.topology_guard(fabric_map(), [leaf_b], nodes, ledger["nodes"], PREFIX, "2")
    assert not held["allowed"] and held["message"].endswith(
        "partition lab: 3 of its 3 nodes would be out (node1, node2, node3), the most max_drained 2 allows, none left "
        "in service")
    leaf_d = dict(leaf_b, leaf="leaf-d")
    assert rm.topology_guard(fabric_map(), [leaf_d], lab, {}, PREFIX, "10%") == {
        "allowed": True, "nodes": ["node4"], "message": "the topology without the dead leaves takes out node4"}


# Reconcile

def test_a_reconcile_run_returns_every_node_the_loop_holds_drained_on_the_rail_of_its_alert():
    drain = rm.classify(alert("cricket-host"), node_names={"cricket-host": "cricket"})
    nodes, ledger = loop_drain(huji_nodes(), "cricket", detail=drain)
    nodes, ledger = loop_drain(nodes, "cortex-01", PREFIX + " rail0 eth1 down", "ALLOCATED+DRAIN", ledger)
    plan = rm.plan([], node_names={"cricket-host": "cricket"}, reconcile_nodes=nodes, loop_nodes=ledger["nodes"])
    returning = {item["node"]: item for item in plan["return"]}
    # oxygen-04 is a person's drain: not the loop's to return.
    assert sorted(returning) == ["cortex-01", "cricket"]
    assert {key: returning["cricket"][key] for key in ("host", "rail_index", "netdev", "leaf", "status")} == {
        "host": "cricket-host", "rail_index": 1, "netdev": "eth2", "leaf": "leaf-b", "status": "resolved"}
    # No alert kept with its drain: the node's own name, any rail.
    assert (returning["cortex-01"]["host"], returning["cortex-01"]["rail_index"]) == ("cortex-01", None)
    # A node whose alert fires in the same batch is drained, not returned.
    plan = rm.plan([alert("cricket-host")], node_names={"cricket-host": "cricket"}, reconcile_nodes=nodes,
                   loop_nodes=ledger["nodes"])
    assert [item["node"] for item in plan["drain"]] == ["cricket"] and [i["node"] for i in plan["return"]] == ["cortex-01"]
