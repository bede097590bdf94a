# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible.utils.unsafe_proxy import wrap_var

from ansible_collections.gpufabric.core.plugins.module_utils.health import remediation
from ansible_collections.gpufabric.core.plugins.module_utils.fabric.slurm_nodes import reason_prefix_problem
from ansible_collections.gpufabric.core.plugins.plugin_utils.filter_errors import raising_filter_error

DOCUMENTATION = r"""
name: remediation_plan
short_description: Read Alertmanager's alerts into what the remediation loop does with each
version_added: "0.1.0"
description:
  - Takes the alerts of an Alertmanager webhook (payload version 4) in any of the shapes they reach a playbook - the
    payload, an ansible-rulebook event holding it (C(ansible_eda.event)), one alert split out of it by
    C(eda.builtin.event_splitter), or a list of alerts - and reads each by the labels of the health rules' contract
    (C(gpufabric_scope), C(gpufabric_remediation), C(host), C(rail), C(netdev), C(leaf), C(leaf_port)).
  - "Returns the nodes to drain (node-scoped C(drain) alerts firing, each with its Slurm drain reason, for example
    C(gpufabric: rail1 eth2 down since 2026-12-04T10:00:00Z (GpufabricPortDown leaf-b swp1))), the nodes to return
    to service (their alert resolved and none firing in the batch), the fabric reports (leaf and rail alerts: never a
    drain) and the alerts ignored with the reason (C(none) alerts, alerts of other rules)."
  - The inventory host of an alert's C(host) label becomes its Slurm node through O(node_names) (the hosts'
    C(scheduler_node_name)).
  - A node alert for a host outside O(fleet), or a firing one that O(alertmanager) does not show active with the
    same labels, is held (C(held), with C(hold) V(outside_fleet) or V(not_firing) and a message).
  - Every string of the result is marked unsafe - the labels come from the fabric and are never templated.
options:
  _input:
    description: The alerts (payload, event, one alert or a list).
    type: raw
    required: true
  node_names:
    description: Inventory host to Slurm NodeName, for hosts whose names differ.
    type: dict
    default: {}
  prefix:
    description: The drain reason's prefix.
    type: str
    default: "gpufabric:"
  reconcile_nodes:
    description:
      - Slurm's nodes (P(gpufabric.core.slurm_node_state#module)'s RV(gpufabric.core.slurm_node_state#module:nodes)) for a
        reconcile run - every node the loop holds drained returns too, re-verified on the rail of the alert it was
        drained for (from O(loop_nodes)). Retries returns that were held (no peer, a failed sweep) and resolved
        alerts missed while the rulebook was down.
    type: list
    elements: dict
  loop_nodes:
    description: The ledger's entries per node (RV(gpufabric.core.slurm_node_state#module:loop_nodes)), with O(reconcile_nodes).
    type: dict
  fleet:
    description: The inventory hosts the loop may act on (the group C(remediation_peer_group)); unset, every host.
    type: list
    elements: str
  alertmanager:
    description:
      - Alertmanager's own alerts (the JSON of C(GET /api/v2/alerts)), asked just before. A firing node alert is
        drained only when Alertmanager shows an active alert with exactly its labels; each report says whether it
        is confirmed. Unset, nothing is cross-checked (the plan shown before Alertmanager is asked).
    type: list
    elements: dict
author:
  - gpufabric.core contributors (@gpufabric)
"""

EXAMPLES = r"""
- name: Read the webhook's alerts
  ansible.builtin.set_fact:
    plan: "{{ ansible_eda.event | gpufabric.core.remediation_plan(node_names={'gpu-a01': 'a01'}) }}"
"""

RETURN = r"""
_value:
  description: The plan.
  type: dict
  contains:
    drain:
      description: Firing node alerts, one per node, each with C(host), C(node), C(alertname), C(rail), C(rail_index),
        C(netdev), C(leaf), C(leaf_port), C(starts_at), C(labels) and the drain C(reason).
      type: list
      elements: dict
    return:
      description: Resolved node alerts of nodes with no firing alert in the batch, one per node.
      type: list
      elements: dict
    reports:
      description: Leaf and rail alerts, firing or resolved.
      type: list
      elements: dict
    ignored:
      description: Alerts that ask for no action, each with C(ignored) saying why.
      type: list
      elements: dict
    held:
      description: Node alerts the loop must not act on, each with C(hold) (V(outside_fleet), V(not_firing)) and C(message).
      type: list
      elements: dict
"""


def remediation_plan(alerts, node_names=None, prefix="gpufabric:", reconcile_nodes=None, loop_nodes=None, fleet=None,
                     alertmanager=None):
    if node_names is not None and not isinstance(node_names, dict):
        raise remediation.RemediationError("node_names must map inventory hosts to Slurm node names, got %r"
                                           % (node_names,))
    problem = reason_prefix_problem("prefix", prefix)
    if problem:
        raise remediation.RemediationError(problem)
    if reconcile_nodes is not None and not isinstance(reconcile_nodes, list):
        raise remediation.RemediationError("reconcile_nodes must be the list of nodes slurm_node_state returns")
    for name, value in (("fleet", fleet), ("alertmanager", alertmanager)):
        if value is not None and not isinstance(value, list):
            raise remediation.RemediationError("%s must be a list, got %s" % (name, type(value).__name__))
    return wrap_var(remediation.plan(alerts, node_names or {}, prefix, reconcile_nodes, loop_nodes or {},
                                     fleet=None if fleet is None else list(fleet), alertmanager=alertmanager))


class FilterModule:
    """The remediation_plan filter."""

    def filters(self):
        return {"remediation_plan": raising_filter_error("remediation_plan", remediation_plan,
                                                         (remediation.RemediationError,))}
