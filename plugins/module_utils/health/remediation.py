# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The remediation loop's decisions: which alerts ask for what, whether the guard lets one more node go, whether a
node may return, and the ledger that remembers every action and exports it as Prometheus text.

Plain functions over data (the alerts Alertmanager sends, the nodes of slurm_nodes.parse_scontrol_nodes, the
ledger as a dict), used by the gpufabric.core.slurm_node_state module on the Slurm controller and by the
remediation role's filters on the Ansible controller. The alert labels are the contract with the health rules
(docs/remediation.md): alertname, gpufabric_scope node|leaf|rail, gpufabric_remediation drain|report|none, severity,
and host, rail, netdev, device, port, leaf, leaf_port.

Decisions (``decide``): a drain needs a node in service (not drained or down by anyone) and the guard's room in
every partition of the node (one of a partition of one or two nodes stays in service); a resume needs a node drained
by this loop (its ledger records the drain and Slurm still shows the reason, user and time it set), no alert firing
for it, a passed re-verification and the action window elapsed since the loop's last action on it.
Anything else is a hold with a reason from HOLD_REASONS, recorded like an action. The window never delays a drain:
a node with a firing fault leaves the scheduler at once; it is what keeps a flapping node out, since every drain
restarts it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
import re
import time

from ansible_collections.gpufabric.core.plugins.module_utils.fabric.map import natural_key
from ansible_collections.gpufabric.core.plugins.module_utils.hostio.prometheus_text import Exposition
from ansible_collections.gpufabric.core.plugins.module_utils.fabric.slurm_nodes import drain_owner, drain_reason

SCOPES = ("node", "leaf", "rail")
REMEDIATIONS = ("drain", "report", "none")
# What the loop records: actions it took and holds (refusals), each with a reason label of bounded cardinality.
ACTIONS = ("drain", "resume", "hold", "report", "page")
HOLD_REASONS = ("guard", "foreign_drain", "alert_firing", "verify_failed", "window", "unknown_node", "no_peer",
                "outside_fleet", "not_firing")
# The ledger keeps this many recent actions (the Slurm controller's journal keeps them all).
RECENT_ACTIONS = 200
LEDGER_VERSION = 1
# What the ledger keeps of the alert a node was drained for.
ALERT_KEYS = ("host", "node", "alertname", "rail", "rail_index", "netdev", "leaf", "leaf_port", "starts_at")
_PERCENT = re.compile(r"([0-9]+(?:\.[0-9]+)?)\s*%")
_RAIL_INDEX = re.compile(r"(?:rail)?([0-9]+)")


class RemediationError(ValueError):
    """Input the loop cannot act on (a guard it cannot read, alerts that are not Alertmanager's)."""


# Alerts

def alerts_from(value):
    """The list of alerts in an Alertmanager webhook payload, an ansible-rulebook event (the payload under
    'payload', or one alert split out by eda.builtin.event_splitter), one alert, or a list of alerts."""
    if value is None:
        return []
    if isinstance(value, list):
        found = []
        for item in value:
            found.extend(alerts_from(item))
        return found
    if not isinstance(value, dict):
        raise RemediationError("an alert must be a mapping with labels and status, got %s" % type(value).__name__)
    if "payload" in value and isinstance(value["payload"], (dict, list)):
        return alerts_from(value["payload"])
    if "alerts" in value and isinstance(value["alerts"], list):
        return alerts_from(value["alerts"])
    if not isinstance(value.get("labels"), dict):
        raise RemediationError("an alert must have a labels mapping (Alertmanager's webhook alert), got keys %s"
                               % ", ".join(sorted(map(str, value))))
    return [value]


def rail_index(rail):
    """'rail1' or '1' or 1 -> 1; None when the label names no rail number."""
    if isinstance(rail, int) and not isinstance(rail, bool):
        return rail
    match = _RAIL_INDEX.fullmatch(str(rail or "").strip())
    return int(match.group(1)) if match else None


def classify(alert, node_names=None):
    """One alert as the loop reads it: kind (drain, report or ignore), status (firing or resolved), the inventory
    host and its Slurm node name, the rail and its number, netdev, leaf, leaf_port, alertname, scope, starts_at,
    the labels, and why it is ignored when it is."""
    labels = {str(key): str(value) for key, value in (alert.get("labels") or {}).items()}
    scope = labels.get("gpufabric_scope")
    remediation = labels.get("gpufabric_remediation")
    status = str(alert.get("status") or "firing")
    host = labels.get("host")
    item = {
        "alertname": labels.get("alertname"),
        "status": "resolved" if status == "resolved" else "firing",
        "scope": scope,
        "remediation": remediation,
        "host": host,
        "node": (node_names or {}).get(host, host) if host else None,
        "rail": labels.get("rail"),
        "rail_index": rail_index(labels.get("rail")),
        "netdev": labels.get("netdev"),
        "leaf": labels.get("leaf"),
        "leaf_port": labels.get("leaf_port"),
        "starts_at": alert.get("startsAt"),
        "ends_at": alert.get("endsAt"),
        "fingerprint": alert.get("fingerprint"),
        "summary": (alert.get("annotations") or {}).get("summary"),
        "labels": labels,
        "kind": "ignore",
        "ignored": None,
    }
    if remediation == "drain" and scope == "node":
        if host:
            item["kind"] = "drain"
        else:
            item["ignored"] = "a node alert without a host label"
    elif remediation == "report" and scope in ("leaf", "rail"):
        item["kind"] = "report"
    elif remediation == "drain" and scope in ("leaf", "rail"):
        # A fault of the fabric itself is never answered by draining the nodes behind it.
        item["kind"] = "report"
    elif remediation in REMEDIATIONS and scope in SCOPES:
        item["ignored"] = "gpufabric_remediation %s on a %s alert asks for no action" % (remediation, scope)
    else:
        item["ignored"] = ("not an alert of the contract (gpufabric_scope %r, gpufabric_remediation %r)"
                           % (scope, remediation))
    return item


def plan(alerts, node_names=None, prefix="gpufabric:", reconcile_nodes=None, loop_nodes=None, fleet=None,
         alertmanager=None):
    """What a batch of alerts asks for: nodes to drain (firing node alerts, each with its drain reason), nodes to
    return (node alerts resolved for a node with no firing one in the batch), fabric reports (leaf and rail alerts,
    firing or resolved), the alerts ignored with why, and the node alerts held with why (hold, message). One entry
    per node: its first firing alert, or its last resolved one. With reconcile_nodes (Slurm's nodes) every node the
    loop holds drained returns too (a reconcile run, see reconcile_items).

    fleet (the inventory hosts the loop acts on) holds every node alert for another host (outside_fleet).
    alertmanager (Alertmanager's own GET /api/v2/alerts, asked just before) holds a firing node alert it does not
    show active with the same labels (not_firing), and marks each report confirmed or not."""
    drain, resolved, reports, ignored, held = {}, {}, [], [], []
    for alert in alerts_from(alerts):
        item = classify(alert, node_names)
        if item["kind"] == "drain":
            hold = _hold(item, fleet, alertmanager)
            if hold:
                held.append(hold)
            elif item["status"] == "firing":
                item["reason"] = drain_reason(prefix, item["labels"], item["starts_at"])
                drain.setdefault(item["node"], item)
            else:
                resolved[item["node"]] = item
        elif item["kind"] == "report":
            if alertmanager is not None:
                item["confirmed"] = item["status"] == "firing" and active_in(alertmanager, item["labels"])
            reports.append(item)
        else:
            ignored.append(item)
    if reconcile_nodes is not None:
        for item in reconcile_items(reconcile_nodes, loop_nodes, prefix, node_names):
            resolved.setdefault(item["node"], item)
    returning = [item for node, item in resolved.items() if node not in drain]
    return {"drain": list(drain.values()), "return": returning, "reports": reports, "ignored": ignored,
            "held": held}


def _hold(item, fleet, alertmanager):
    """The hold of a node alert the loop must not act on, or None."""
    if fleet is not None and item["host"] not in fleet:
        return dict(item, hold="outside_fleet",
                    message="%s: the host %r is not in the inventory's fleet (remediation_peer_group): not acted on"
                    % (item["alertname"], item["host"]))
    if item["status"] == "firing" and alertmanager is not None and not active_in(alertmanager, item["labels"]):
        return dict(item, hold="not_firing",
                    message="%s for %r: Alertmanager shows no active alert with these labels: not drained"
                    % (item["alertname"], item["host"]))
    return None


def active_in(alertmanager, labels):
    """Whether Alertmanager's answer (its alerts, GET /api/v2/alerts) holds an active alert with exactly these
    labels: the identity of an alert is its label set, and a drain acts only on what Alertmanager itself shows."""
    for alert in alertmanager or []:
        state = (alert.get("status") or {}).get("state", "active") if isinstance(alert, dict) else None
        theirs = alert.get("labels") if isinstance(alert, dict) else None
        if state == "active" and isinstance(theirs, dict) \
                and {str(key): str(value) for key, value in theirs.items()} == labels:
            return True
    return False


def firing_by_host(alertmanager):
    """Per host, the names of the node alerts Alertmanager shows firing for it (active, silenced or inhibited):
    a node with one stays drained, a host with one is no peer."""
    firing = {}
    for alert in alertmanager or []:
        labels = alert.get("labels") or {}
        state = (alert.get("status") or {}).get("state", "active")
        if state in ("active", "suppressed") and labels.get("gpufabric_scope") == "node" and labels.get("host"):
            firing.setdefault(str(labels["host"]), []).append(str(labels.get("alertname")))
    return firing


def reconcile_items(nodes, ledger_nodes, prefix, node_names=None):
    """A reconcile tick's returns: one resolved item per node the loop holds drained, built from the alert it was
    drained for (kept in the ledger), or from its name alone when the ledger has none. A resolved alert missed while
    the rulebook was down, or a return held for want of a peer, is retried this way."""
    hosts = {name: host for host, name in (node_names or {}).items()}
    items = []
    for node in nodes:
        if drain_owner(node, prefix, (ledger_nodes or {}).get(node["name"])) != "ours":
            continue
        kept = ((ledger_nodes or {}).get(node["name"]) or {}).get("alert") or {}
        item = {key: kept.get(key) for key in ALERT_KEYS}
        item.update(node=node["name"], host=kept.get("host") or hosts.get(node["name"], node["name"]),
                    status="resolved", kind="drain", reconcile=True)
        items.append(item)
    return items


# Re-verification: a healthy peer behind the same leaf

def _rail_of(entry, index):
    for rail in (entry or {}).get("rails") or []:
        if rail.get("rail") == index:
            return rail
    return None


def _leaf_of(rail):
    return (rail or {}).get("switch") or (rail or {}).get("expected_switch")


def choose_peers(items, fabric_map, nodes, firing_hosts, candidates, node_names=None):
    """A peer for the re-verification of each item (a node alert of plan()), or why there is none.

    The peer is the first candidate host (natural order) whose same rail reaches the same leaf in the fabric map
    (the alert's leaf label, else the node's own leaf in the map) and is up there, that Slurm shows in service
    (not drained, not down, for any reason) and that has no alert firing (firing_hosts). An alert without a rail
    takes a peer sharing the node's leaf on any rail. Returns one dict per item: host, node, peer (None when there
    is none), rail_index, netdev and peer_netdev (the interfaces of that rail, for a TCP test), leaf, and why
    (when peer is None).
    """
    node_names = node_names or {}
    hosts = ((fabric_map or {}).get("hosts") or {}) if isinstance(fabric_map, dict) else {}
    out_of_service = {node["name"] for node in nodes or [] if node.get("drained") or node.get("down")}
    firing = set(firing_hosts or [])
    pairs = []
    for item in items:
        host, index = item["host"], item.get("rail_index")
        entry = hosts.get(host)
        pair = {"host": host, "node": item.get("node") or node_names.get(host, host), "peer": None,
                "rail_index": index, "netdev": item.get("netdev"), "peer_netdev": None, "leaf": None, "why": None}
        if not hosts:
            pairs.append(dict(pair, why="no fabric map to find a peer behind the same leaf (run discover.yml)"))
            continue
        if entry is None:
            pairs.append(dict(pair, why="%s is not in the fabric map" % host))
            continue
        indexes = [index] if index is not None else [rail.get("rail") for rail in entry.get("rails") or []]
        for rail_number in indexes:
            leaf = (item.get("leaf") if index is not None else None) or _leaf_of(_rail_of(entry, rail_number))
            if leaf is None:
                continue
            for peer in sorted(candidates or [], key=natural_key):
                rail = _rail_of(hosts.get(peer), rail_number)
                if (peer == host or peer in firing or node_names.get(peer, peer) in out_of_service
                        or _leaf_of(rail) != leaf or rail.get("up") is False):
                    continue
                own = _rail_of(entry, rail_number) or {}
                pair.update(peer=peer, leaf=leaf, rail_index=rail_number if index is not None else None,
                            netdev=item.get("netdev") or own.get("netdev"), peer_netdev=rail.get("netdev"))
                break
            if pair["peer"]:
                break
            pair["leaf"] = leaf
        if not pair["peer"]:
            pair["why"] = ("no host in service without an alert behind %s%s to test %s against"
                           % (pair["leaf"] or "its leaf", " on rail %d" % index if index is not None else "", host))
        pairs.append(pair)
    return pairs


# Leaf and rail alerts: no node is drained; Slurm's topology can leave the dead leaf out

def fabric_map_without_leaves(fabric_map, items):
    """A copy of the fabric map in which the rails behind each firing leaf alert (that rail only when the alert
    names one, every rail otherwise) are down, so that gpufabric.core.slurm_topology leaves their hosts out of
    the rail's tree and says why. Rail alerts take the whole rail down."""
    copy = json.loads(json.dumps(fabric_map))
    for item in items:
        if item.get("status") != "firing":
            continue
        index = item.get("rail_index")
        for entry in (copy.get("hosts") or {}).values():
            for rail in entry.get("rails") or []:
                same_rail = index is None or rail.get("rail") == index
                behind = item.get("scope") == "rail" or _leaf_of(rail) == item.get("leaf")
                if same_rail and behind:
                    rail["up"] = False
                    rail["state"] = "down: %s %s since %s" % (item.get("alertname"), item.get("leaf") or item.get("rail"),
                                                              item.get("starts_at"))
    return copy


def topology_guard(fabric_map, items, nodes, ledger_nodes, prefix, max_drained, node_names=None,
                   small_partitions=False):
    """Whether the guard lets a topology without the dead leaves of items (fabric_map_without_leaves) take the
    hosts behind them out of Slurm's trees: in every partition of those nodes, the loop's drains and the nodes
    taken out together stay within the drain limit, and a partition of one or two nodes keeps one in service.
    Returns allowed, the Slurm nodes taken out, and a message."""
    after = fabric_map_without_leaves(fabric_map, items)
    before_hosts, after_hosts = (fabric_map or {}).get("hosts") or {}, after.get("hosts") or {}
    out = sorted({(node_names or {}).get(host, host) for host, entry in after_hosts.items()
                  for index, rail in enumerate(entry.get("rails") or [])
                  if rail.get("up") is False and (before_hosts[host]["rails"][index].get("up") is not False)},
                 key=natural_key)
    full = []
    for partition in sorted({part for node in nodes if node["name"] in out for part in node["partitions"]}):
        members = [node for node in nodes if partition in node["partitions"]]
        taken = {node["name"] for node in members if node["name"] in out
                 or drain_owner(node, prefix, (ledger_nodes or {}).get(node["name"])) == "ours"}
        limit = drain_limit(max_drained, len(members))
        in_service = [node for node in members if node["name"] not in taken
                      and not node.get("drained") and not node.get("down")]
        if len(taken) > limit or (len(members) <= 2 and not small_partitions and not in_service):
            full.append("partition %s: %d of its %d nodes would be out (%s), the most max_drained %s allows%s"
                        % (partition, len(taken), len(members), ", ".join(sorted(taken, key=natural_key)),
                           max_drained, "" if in_service else ", none left in service"))
    message = ("the topology without the dead leaves takes out %s" % (", ".join(out) or "no node")
               + ("; held by the guard: " + "; ".join(full) if full else ""))
    return {"allowed": not full, "nodes": out, "message": message}


# The guard

def max_drained_problem(name, value):
    """A sentence naming `name` when the guard is not a count of 1 or more or a percentage above 0 and at most 100."""
    if isinstance(value, bool):
        value = None
    if isinstance(value, int) and value >= 1:
        return None
    if isinstance(value, str):
        text = value.strip()
        match = _PERCENT.fullmatch(text)
        if match:
            share = float(match.group(1))
            if 0 < share <= 100:
                return None
            return ("%s: a percentage of the partition must be above 0 %% and at most 100 %%; got %r"
                    % (name, value))
        if text.isdigit() and int(text) >= 1:
            return None
    return ("%s: must be a number of nodes (1 or more) or a percentage of the partition such as 10%%, above 0 "
            "and at most 100; got %r" % (name, value))


def drain_limit(max_drained, partition_size):
    """How many of a partition's nodes this loop may hold drained at once: the count given, or the percentage of
    the partition rounded down, but at least 1 (a loop that may drain nothing in a small partition is no loop)."""
    problem = max_drained_problem("max_drained", max_drained)
    if problem:
        raise RemediationError(problem)
    if isinstance(max_drained, str) and max_drained.strip().endswith("%"):
        share = float(_PERCENT.fullmatch(max_drained.strip()).group(1))
        return max(1, int(math.floor(partition_size * share / 100.0 + 1e-9)))
    return int(max_drained)


def guard(nodes, node_name, prefix, max_drained, ledger_nodes=None, small_partitions=False):
    """The guard for draining node_name: per partition of the node, its size, the nodes this loop holds drained
    there (node_name excluded) and the limit; allowed when every partition has room for one more. A partition of
    one or two nodes keeps one node in service (drained or down by no one) unless small_partitions allows it."""
    target = next((node for node in nodes if node["name"] == node_name), None)
    partitions = (target or {}).get("partitions") or []
    if not partitions:
        # A node in no partition: the guard counts the whole cluster.
        partitions = [None]
    checks = []
    for partition in partitions:
        members = [node for node in nodes if partition is None or partition in node["partitions"]]
        ours = sorted(node["name"] for node in members
                      if node["name"] != node_name
                      and drain_owner(node, prefix, (ledger_nodes or {}).get(node["name"])) == "ours")
        limit = drain_limit(max_drained, len(members))
        in_service = [node for node in members if node["name"] != node_name
                      and not node.get("drained") and not node.get("down")]
        last = len(members) <= 2 and not small_partitions and not in_service
        checks.append({"partition": partition or "(all nodes)", "size": len(members), "drained_by_loop": ours,
                       "limit": limit, "last_in_service": last, "room": len(ours) + 1 <= limit and not last})
    return {"allowed": all(check["room"] for check in checks), "partitions": checks}


# Decisions

def _guard_words(check, max_drained):
    if check["last_in_service"]:
        return ("partition %s has %d node(s) and this drain would leave none of them in service (a partition of one "
                "or two nodes keeps one unless small_partitions allows it)" % (check["partition"], check["size"]))
    return ("partition %s already has %d of %d nodes drained by this loop (%s), the most max_drained %s allows"
            % (check["partition"], len(check["drained_by_loop"]), check["size"], ", ".join(check["drained_by_loop"]),
               max_drained))


def window_left(ledger, node_name, now, window):
    """Seconds left before the loop may act on node_name again (0 when it may)."""
    last = (ledger.get("nodes") or {}).get(node_name)
    if not last or not window:
        return 0
    return max(0, int(math.ceil(float(last["at"]) + float(window) - now)))


def decide(nodes, request, ledger, now):
    """The loop's decision for one request, without acting.

    request: node, state (drained or resumed), prefix, reason (drain), max_drained (drain), window (resume),
    firing (the node's alerts still firing, resume), verification (passed, failed, no_peer or disabled, resume).
    Returns {action: drain|resume|hold|none, reason: the metric's reason label, message, wait_s, guard, node}.
    """
    name = request["node"]
    node = next((item for item in nodes if item["name"] == name), None)
    result = {"node": name, "action": "none", "reason": None, "message": "", "wait_s": 0, "guard": None,
              "before": node_state(node)}
    if node is None:
        return dict(result, action="hold", reason="unknown_node",
                    message="Slurm knows no node %s (scontrol show node lists %d nodes)" % (name, len(nodes)))
    owner = drain_owner(node, request["prefix"], (ledger.get("nodes") or {}).get(name))
    if request["state"] == "drained":
        if owner == "ours":
            return dict(result, message="%s is already drained by this loop: %s" % (name, node["reason"]))
        if owner == "foreign":
            return dict(result, action="hold", reason="foreign_drain",
                        message="%s is %s with a reason this loop did not write (%r by %s): left alone"
                        % (name, node["state"], node["reason"], node["reason_user"] or "unknown"))
        checked = guard(nodes, name, request["prefix"], request["max_drained"], ledger.get("nodes"),
                        request.get("small_partitions", False))
        result["guard"] = checked
        if not checked["allowed"]:
            full = [check for check in checked["partitions"] if not check["room"]]
            return dict(result, action="hold", reason="guard", message="guard: %s" % "; ".join(
                _guard_words(check, request["max_drained"]) for check in full) + "; %s is not drained" % name)
        return dict(result, action="drain", reason=request.get("alertname") or "alert",
                    message="drain %s: %s" % (name, request["reason"]))
    # resumed
    if owner is None:
        return dict(result, message="%s is not drained: nothing to resume" % name)
    if owner == "foreign":
        return dict(result, action="hold", reason="foreign_drain",
                    message="%s is %s with a reason this loop did not write (%r by %s): never resumed by it"
                    % (name, node["state"], node["reason"], node["reason_user"] or "unknown"))
    if request.get("firing"):
        return dict(result, action="hold", reason="alert_firing",
                    message="%s stays drained: alerts still firing for it: %s"
                    % (name, ", ".join(sorted(set(map(str, request["firing"]))))))
    verification = request.get("verification") or "failed"
    if verification not in ("passed", "disabled"):
        reason = "no_peer" if verification == "no_peer" else "verify_failed"
        return dict(result, action="hold", reason=reason,
                    message="%s stays drained: %s%s" % (
                        name, "no healthy peer to re-verify it against" if reason == "no_peer"
                        else "its re-verification did not pass",
                        ": " + request["verify_message"] if request.get("verify_message") else ""))
    wait = window_left(ledger, name, now, request.get("window"))
    if wait:
        return dict(result, action="hold", reason="window", wait_s=wait,
                    message="%s stays drained for %d s more: the loop acted on it %s s ago and waits %s s between "
                    "two actions on a node" % (name, wait, int(now - float(ledger["nodes"][name]["at"])),
                                               request.get("window")))
    checked = verification == "passed"
    return dict(result, action="resume", reason="verified" if checked else "unverified",
                message="resume %s: %s, no alert firing (was drained: %s)"
                % (name, "re-verified" if checked else "re-verification disabled", node["reason"]))


def node_state(node):
    if node is None:
        return None
    return {"state": node["state"], "reason": node["reason"], "reason_user": node["reason_user"],
            "reason_time": node["reason_time"]}


# The ledger: what the loop did, kept on the Slurm controller beside the lock

def empty_ledger():
    return {"version": LEDGER_VERSION, "nodes": {}, "counters": {}, "recent": []}


def load_ledger(text):
    """The ledger from its JSON text (None or empty: a new ledger); a ledger that is not ours is an error."""
    if not text:
        return empty_ledger()
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise RemediationError("the remediation ledger is not JSON (%s); move it aside to start a new one" % exc)
    if not isinstance(data, dict) or data.get("version") != LEDGER_VERSION:
        raise RemediationError("the remediation ledger has version %r, this collection writes version %d"
                               % (data.get("version") if isinstance(data, dict) else None, LEDGER_VERSION))
    for key, empty in (("nodes", {}), ("counters", {}), ("recent", [])):
        data.setdefault(key, empty)
    return data


def record(ledger, action, reason, node=None, message="", now=None, detail=None, slurm=None):
    """Count one action in the ledger (a new ledger is returned, the given one is left as it was). slurm: the
    node as Slurm showed it right after a drain (reason, reason_user, reason_time), what makes the drain the
    loop's (slurm_nodes.drain_owner)."""
    if action not in ACTIONS:
        raise RemediationError("unknown remediation action %r (one of %s)" % (action, ", ".join(ACTIONS)))
    now = time.time() if now is None else now
    ledger = json.loads(json.dumps(ledger))
    key = "%s|%s" % (action, reason)
    ledger["counters"][key] = ledger["counters"].get(key, 0) + 1
    entry = {"at": round(now, 3), "action": action, "reason": reason, "node": node, "message": message}
    if detail:
        entry["detail"] = detail
    ledger["recent"] = (ledger["recent"] + [entry])[-RECENT_ACTIONS:]
    if node and action in ("drain", "resume"):
        ledger["nodes"][node] = {"action": action, "at": round(now, 3), "reason": reason}
        if action == "drain" and detail:
            # What the reconcile tick needs to re-verify the node later: host, rail, interface, leaf.
            ledger["nodes"][node]["alert"] = {key: detail.get(key) for key in ALERT_KEYS}
        if action == "drain" and slurm:
            ledger["nodes"][node].update(slurm_reason=slurm.get("reason"), slurm_user=slurm.get("reason_user"),
                                         slurm_time=slurm.get("reason_time"))
    return ledger


def dump_ledger(ledger):
    return json.dumps(ledger, indent=1, sort_keys=True) + "\n"


def metrics(ledger, nodes=None, prefix=None, limits=None):
    """The loop's Prometheus text: every action counted by action and reason (every action and hold reason is
    written, at 0 until it happens, so that increase() sees the first one), and, when the nodes are given, the
    nodes this loop holds drained per partition beside the guard's limit."""
    exposition = Exposition()
    actions = exposition.family("gpufabric_remediation_actions_total",
                                "Actions of the gpufabric remediation loop (and its holds), by action and reason.",
                                "counter")
    counters = dict(ledger.get("counters") or {})
    for reason in HOLD_REASONS:
        counters.setdefault("hold|%s" % reason, 0)
    counters.setdefault("page|guard", 0)
    counters.setdefault("resume|verified", 0)
    for key in sorted(counters):
        action, reason = key.split("|", 1)
        actions.add({"action": action, "reason": reason}, counters[key])
    if nodes is not None and prefix is not None:
        drained = exposition.family("gpufabric_remediation_drained_nodes",
                                    "Nodes drained by the remediation loop now, per Slurm partition.")
        limit = exposition.family("gpufabric_remediation_drain_limit",
                                  "The most nodes of a partition the remediation loop may hold drained at once.")
        partitions = sorted({partition for node in nodes for partition in node["partitions"]})
        for partition in partitions:
            members = [node for node in nodes if partition in node["partitions"]]
            recorded = ledger.get("nodes") or {}
            drained.add({"partition": partition}, sum(
                1 for node in members if drain_owner(node, prefix, recorded.get(node["name"])) == "ours"))
            if limits is not None:
                limit.add({"partition": partition}, drain_limit(limits, len(members)))
    return exposition.render()


@contextlib.contextmanager
def exclusive_lock(path, timeout, poll=0.2):
    """Hold an exclusive flock on path (created 0600) for the block; RemediationError after timeout seconds.

    The lock lives on the Slurm controller, so that two loop actions - two rulebook actions, two AWX jobs, a person
    running the playbook - never both pass the guard: each reads Slurm, decides and acts inside it."""
    handle = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    deadline = time.monotonic() + timeout
    try:
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise RemediationError("another remediation action has held %s for over %s s" % (path, timeout))
                time.sleep(poll)
        yield
    finally:
        os.close(handle)
