#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: slurm_node_state
short_description: Drain a Slurm node for a fabric alert, or return it to service, under the remediation loop's guards
version_added: "0.1.0"
description:
  - Runs on the Slurm controller (any host where C(scontrol) reaches slurmctld). Inside an exclusive lock held in
    O(state_dir), it reads every node (C(scontrol show node)), decides, acts with C(scontrol update) and records the
    action in the loop's ledger, so that two loop actions at once (two rulebook actions, two AWX jobs) never both
    pass the guard.
  - V(drained) drains O(node) with O(reason) when it is in service and the guard has room in every partition of
    the node (at most O(max_drained) of a partition's nodes drained by this loop at once). A node already drained
    by this loop is left as it is; a node drained or down for anyone else is never touched.
  - A drain is this loop's only while the ledger records it and Slurm still shows the reason, user and time it had
    right after the loop set it. A reason a person extended, a drain set again by another user, or a person's
    reason that merely starts with O(prefix) belongs to them.
  - V(resumed) returns O(node) to service only when it was drained by this loop, no alert fires for it
    (O(firing)), its re-verification passed (O(verification)) and O(window) seconds have passed since the loop's
    last action on it. A node drained by anyone else is never resumed.
  - V(query) reads the nodes and records O(record) only.
  - Every decision - the actions and the holds (a refusal, with its reason) - is counted in the ledger
    (C(ledger.json) in O(state_dir)), logged to the controller's journal, and exported in O(textfile) as the
    counter C(gpufabric_remediation_actions_total{action,reason}) for node_exporter's textfile collector.
  - The decisions are the plain functions of the collection's C(remediation) and C(slurm_nodes) module utils.
author:
  - gpufabric.core contributors (@gpufabric)
options:
  state:
    description: What to do with O(node).
    type: str
    choices: [drained, resumed, query]
    required: true
  node:
    description: The Slurm NodeName (one node; a host list expression is refused). Required unless O(state=query).
    type: str
  prefix:
    description: The prefix of every reason this loop writes; a drained node whose reason starts otherwise is not the loop's.
    type: str
    default: "gpufabric:"
  reason:
    description: The drain reason (built by P(gpufabric.core.remediation_plan#filter)); required with O(state=drained). It must start with O(prefix).
    type: str
  alertname:
    description: The alert that asks for the drain, the C(reason) label of the drain's counter.
    type: str
  alert:
    description:
      - The alert a drain is for (C(host), C(rail), C(rail_index), C(netdev), C(leaf), C(leaf_port), C(starts_at)), kept
        in the ledger so that a later reconcile run can re-verify the node on the same rail.
    type: dict
    default: {}
  small_partitions:
    description:
      - Let the guard drain the last node in service of a partition of one or two nodes. Off, such a partition always
        keeps one node in service, whatever O(max_drained) says.
    type: bool
    default: false
  max_drained:
    description: The guard, a number of nodes (C(2)) or a percentage of the partition (C(10%), rounded down, at least 1).
    type: str
    default: "10%"
  window:
    description: Seconds that must pass after the loop's last action on a node before it resumes the node.
    type: int
    default: 300
  firing:
    description: The alerts still firing for the node (Alertmanager's answer just before the call); a resume is held while any fires.
    type: list
    elements: str
    default: []
  verification:
    description:
      - The node's re-verification - V(passed); V(failed) or V(no_peer) (no healthy peer behind its leaf) hold the
        node drained; V(disabled) (the loop runs without re-verification) lets it return on its alerts alone.
    type: str
    choices: [passed, failed, no_peer, disabled]
    default: failed
  verify_message:
    description: Why the re-verification did not pass, for the hold's message.
    type: str
    default: ""
  record:
    description: Further actions decided elsewhere to count in the ledger (a fabric report, a page, a hold for no peer).
    type: list
    elements: dict
    default: []
    suboptions:
      action:
        description: The action.
        type: str
        choices: [drain, resume, hold, report, page]
        required: true
      reason:
        description: Its reason label.
        type: str
        required: true
      node:
        description: The node it concerns, if any.
        type: str
      note:
        description: What happened, for the ledger and the journal.
        type: str
        default: ""
  state_dir:
    description: Directory (created 0700) of the lock and the ledger on this host.
    type: path
    default: /var/lib/gpufabric/remediation
  textfile:
    description: The Prometheus textfile to write the loop's metrics to (its directory must exist); empty writes none.
    type: path
    default: /var/lib/prometheus/node-exporter/gpufabric_remediation.prom
  lock_timeout:
    description: Seconds to wait for another loop action's lock before failing.
    type: int
    default: 120
extends_documentation_fragment:
  - gpufabric.core.attributes
attributes:
  check_mode:
    support: full
    details: Decides and reports what it would do (RV(decision), RV(message), RV(guard)); runs no C(scontrol update) and writes nothing.
  diff_mode:
    support: full
    details: The node's state and reason before and after.
notes:
  - Nothing is written before every check passed; the node is read again after C(scontrol update) and the module
    fails if Slurm does not show the new state.
  - Slurm has no compare-and-set. Between this module's read and its update an operator could drain the node with
    a reason of their own, and a resume would then clear it; the read and the update follow each other within the
    lock, a fraction of a second apart.
seealso:
  - module: gpufabric.core.topology_facts
"""

EXAMPLES = r"""
- name: Drain node1 for its port alert, at most 10 % of its partition drained by the loop
  gpufabric.core.slurm_node_state:
    state: drained
    node: node1
    reason: "gpufabric: rail1 eth2 down since 2026-12-04T10:00:00Z (GpufabricPortDown leaf-b swp1)"
    alertname: GpufabricPortDown
    max_drained: 10%
  delegate_to: "{{ groups['slurm_controller'][0] }}"

- name: Return node1 to service after its re-verification passed
  gpufabric.core.slurm_node_state:
    state: resumed
    node: node1
    verification: passed
    firing: []
    window: 300
  delegate_to: "{{ groups['slurm_controller'][0] }}"
"""

RETURN = r"""
decision:
  description: What the module did (or would do in check mode) - V(drain), V(resume), V(hold) (refused; see RV(reason)) or V(none).
  returned: always
  type: str
  sample: drain
reason:
  description: The reason label of the decision (the alert name for a drain, V(verified) for a resume, a hold's reason such as V(guard) or V(foreign_drain)).
  returned: always
  type: str
  sample: GpufabricPortDown
message:
  description: The decision in one sentence.
  returned: always
  type: str
  sample: "guard: partition lab already has 1 of 3 nodes drained by this loop (node1), the most max_drained 10% allows; node2 is not drained"
wait_s:
  description: Seconds until the action window lets the loop resume the node (with RV(reason) V(window)).
  returned: always
  type: int
  sample: 42
guard:
  description: For a drain, per partition of the node its size, the nodes drained by the loop, the limit and whether there is room.
  returned: when state is drained and the node is in service
  type: dict
  sample: {allowed: false, partitions: [{partition: lab, size: 3, drained_by_loop: [node1], limit: 1, room: false}]}
before:
  description: The node's state and reason before the action.
  returned: always
  type: dict
  sample: {state: IDLE, reason: null, reason_user: null, reason_time: null}
after:
  description: The node's state and reason after the action (as Slurm shows it again).
  returned: when the node changed
  type: dict
  sample: {state: IDLE+DRAIN, reason: "gpufabric: rail1 eth2 down since 2026-12-04T10:00:00Z", reason_user: root}
loop_nodes:
  description: What the ledger keeps per node - the loop's last action on it, when, and the alert of its drain.
  returned: always
  type: dict
  sample: {node1: {action: drain, at: 1796378400.0, reason: GpufabricPortDown, alert: {host: node1, rail: rail1}}}
nodes:
  description: Every node as Slurm showed it before the action (name, state, drained, down, reason, reason_user, partitions).
  returned: always
  type: list
  elements: dict
  sample: [{name: node1, state: IDLE, drained: false, down: false, reason: null, partitions: [lab]}]
recorded:
  description: The actions counted in the ledger by this call.
  returned: always
  type: list
  elements: dict
  sample: [{action: hold, reason: guard, node: node2}]
"""

import os
import re
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufabric.core.plugins.module_utils.hostio import file_transaction as ft
from ansible_collections.gpufabric.core.plugins.module_utils.health import remediation as rm
from ansible_collections.gpufabric.core.plugins.module_utils.fabric import slurm_nodes as sn
from ansible_collections.gpufabric.core.plugins.module_utils.hostio.prometheus_text import write_textfile

# A Slurm NodeName: one node, never a host list expression (node[1-64] would drain them all).
NODE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def read_nodes(module, scontrol):
    rc, out, err = module.run_command([scontrol, "show", "node"], environ_update={"LC_ALL": "C"})
    if rc != 0:
        module.fail_json(msg="scontrol show node failed (rc %d): %s" % (rc, (err or out).strip()))
    try:
        return sn.parse_scontrol_nodes(out)
    except sn.ScontrolParseError as exc:
        module.fail_json(msg="scontrol show node printed what this module cannot read: %s" % exc)


def brief(node):
    return {key: node[key] for key in ("name", "state", "drained", "down", "reason", "reason_user", "partitions")}


def state_text(state):
    if not state:
        return "(no such node)\n"
    return "State=%s\nReason=%s\n" % (state["state"], state["reason"] or "")


def check_params(module, params):
    problems = []
    if params["state"] != "query":
        if not params["node"] or not NODE_NAME.fullmatch(params["node"]):
            problems.append("node: must be one Slurm NodeName (letters, digits, _ . -), never a host list; got %r"
                            % (params["node"],))
    problem = sn.reason_prefix_problem("prefix", params["prefix"])
    if problem:
        problems.append(problem)
    if params["state"] == "drained":
        reason = params["reason"] or ""
        if not reason.startswith(params["prefix"] + " "):
            problems.append("reason: must start with the prefix %r and a space; got %r" % (params["prefix"], reason))
        if sn.reason_problem(reason):
            problems.append("reason: %s; got %r" % (sn.reason_problem(reason), reason))
        problem = rm.max_drained_problem("max_drained", params["max_drained"])
        if problem:
            problems.append(problem)
    if params["window"] < 0:
        problems.append("window: must be 0 or more seconds; got %d" % params["window"])
    if problems:
        module.fail_json(msg="Nothing was changed: %s" % "; ".join(problems))


def main():
    module = AnsibleModule(
        argument_spec={
            "state": {"type": "str", "choices": ["drained", "resumed", "query"], "required": True},
            "node": {"type": "str"},
            "prefix": {"type": "str", "default": "gpufabric:"},
            "reason": {"type": "str"},
            "alertname": {"type": "str"},
            "alert": {"type": "dict", "default": {}},
            "max_drained": {"type": "str", "default": "10%"},
            "small_partitions": {"type": "bool", "default": False},
            "window": {"type": "int", "default": 300},
            "firing": {"type": "list", "elements": "str", "default": []},
            "verification": {"type": "str", "choices": ["passed", "failed", "no_peer", "disabled"], "default": "failed"},
            "verify_message": {"type": "str", "default": ""},
            "record": {"type": "list", "elements": "dict", "default": [], "options": {
                "action": {"type": "str", "choices": list(rm.ACTIONS), "required": True},
                "reason": {"type": "str", "required": True},
                "node": {"type": "str"},
                "note": {"type": "str", "default": ""},
            }},
            "state_dir": {"type": "path", "default": "/var/lib/gpufabric/remediation"},
            "textfile": {"type": "path", "default": "/var/lib/prometheus/node-exporter/gpufabric_remediation.prom"},
            "lock_timeout": {"type": "int", "default": 120},
        },
        required_if=[("state", "drained", ("node", "reason")), ("state", "resumed", ("node",))],
        supports_check_mode=True,
    )
    params = module.params
    check_params(module, params)
    scontrol = module.get_bin_path("scontrol", required=True)
    result = {"changed": False, "decision": "none", "reason": None, "message": "", "wait_s": 0, "recorded": []}
    lock = os.path.join(params["state_dir"], "lock")
    if module.check_mode and not os.path.exists(lock):
        # Check mode before the first run creates nothing, not even the lock: decide on an empty ledger.
        decide_and_act(module, params, scontrol, result, rm.empty_ledger())
    if not module.check_mode:
        try:
            ft.make_directory(params["state_dir"], 0o700)
        except OSError as exc:
            module.fail_json(msg="Cannot create the remediation state directory %s: %s" % (params["state_dir"], exc))
    try:
        with rm.exclusive_lock(lock, params["lock_timeout"]):
            ledger_path = os.path.join(params["state_dir"], "ledger.json")
            try:
                ledger = rm.load_ledger(ft.read_current(ledger_path)[0])
            except (OSError, ValueError) as exc:
                module.fail_json(msg="Cannot read the remediation ledger %s: %s" % (ledger_path, exc))
            decide_and_act(module, params, scontrol, result, ledger, ledger_path)
    except rm.RemediationError as exc:
        module.fail_json(msg=str(exc), **result)


def decide_and_act(module, params, scontrol, result, ledger, ledger_path=None):
    """Read the nodes, decide, act (unless check mode), record; exits the module."""
    nodes = read_nodes(module, scontrol)
    result["nodes"] = [brief(node) for node in nodes]
    now = time.time()
    entries = []
    if params["state"] != "query":
        request = {"node": params["node"], "state": params["state"], "prefix": params["prefix"],
                   "reason": params["reason"], "alertname": params["alertname"],
                   "max_drained": params["max_drained"], "small_partitions": params["small_partitions"],
                   "window": params["window"], "firing": params["firing"],
                   "verification": params["verification"], "verify_message": params["verify_message"]}
        decision = rm.decide(nodes, request, ledger, now)
        result.update({key: decision[key] for key in ("reason", "message", "wait_s", "before")})
        result["decision"] = decision["action"]
        if decision.get("guard"):
            result["guard"] = decision["guard"]
        acts = decision["action"] in ("drain", "resume")
        result["changed"] = acts
        if module._diff and acts:
            after = {"state": "DRAIN", "reason": params["reason"]} if decision["action"] == "drain" \
                else {"state": "RESUME", "reason": None}
            result["diff"] = {"before_header": params["node"], "after_header": params["node"],
                              "before": state_text(decision["before"]), "after": state_text(after)}
        if acts and not module.check_mode:
            nodes = act(module, params, scontrol, decision, nodes, result)
        if decision["action"] != "none":
            entries.append((decision["action"], decision["reason"], params["node"], decision["message"],
                            params["alert"], result.get("after")))
    entries.extend((item["action"], item["reason"], item["node"], item["note"], None, None)
                   for item in params["record"])
    result["recorded"] = [{"action": entry[0], "reason": entry[1], "node": entry[2]} for entry in entries]
    result["loop_nodes"] = ledger.get("nodes") or {}
    if module.check_mode:
        module.exit_json(**result)
    new_ledger = ledger
    for action, reason, node, message, alert, slurm in entries:
        new_ledger = rm.record(new_ledger, action, reason, node, message, now, detail=alert, slurm=slurm)
        module.log("gpufabric remediation: %s %s %s: %s" % (action, reason, node or "-", message))
    result["loop_nodes"] = new_ledger.get("nodes") or {}
    try:
        if entries:
            ft.write_atomically(ledger_path, rm.dump_ledger(new_ledger).encode("utf-8"), 0o600)
            result["changed"] = True
        if params["textfile"]:
            text = rm.metrics(new_ledger, nodes, params["prefix"], params["max_drained"])
            if ft.read_current(params["textfile"])[0] != text:
                write_textfile(params["textfile"], text)
                result["changed"] = True
    except (OSError, ValueError) as exc:
        module.fail_json(msg="Recording the loop's decision (%s, %s) failed: %s" % (
            ledger_path, params["textfile"] or "no textfile", exc), **result)
    module.exit_json(**result)


def act(module, params, scontrol, decision, nodes, result):
    """scontrol update, then read the node back: Slurm must show what was asked. Returns the nodes as they are now."""
    update = [scontrol, "update", "NodeName=%s" % params["node"]]
    update += ["State=DRAIN", "Reason=%s" % params["reason"]] if decision["action"] == "drain" else ["State=RESUME"]
    rc, out, err = module.run_command(update, environ_update={"LC_ALL": "C"})
    if rc != 0:
        module.fail_json(msg="scontrol update NodeName=%s failed (rc %d): %s" % (params["node"], rc, (err or out).strip()),
                         **result)
    nodes = read_nodes(module, scontrol)
    node = next((item for item in nodes if item["name"] == params["node"]), None)
    result["after"] = rm.node_state(node)
    # A drain must show the reason asked for, whole (the ledger records it as the drain's owner); a resume, no drain.
    if decision["action"] == "drain":
        shown = node is not None and node["drained"] and node["reason"] == params["reason"]
    else:
        shown = node is not None and not node["drained"]
    if not shown:
        module.fail_json(msg="Slurm does not show %s %s after scontrol update: %s" % (
            params["node"], "drained by this loop" if decision["action"] == "drain" else "in service",
            state_text(result["after"]).strip()), **result)
    return nodes


if __name__ == "__main__":
    main()
