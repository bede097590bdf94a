# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible.utils.unsafe_proxy import wrap_var

from ansible_collections.gpufabric.core.plugins.module_utils.health import remediation
from ansible_collections.gpufabric.core.plugins.plugin_utils.filter_errors import raising_filter_error

DOCUMENTATION = r"""
name: remediation_topology_guard
short_description: Whether the remediation guard lets a topology without the dead leaves take their hosts out
version_added: "0.1.0"
description:
  - For the fabric map and the firing leaf and rail alerts that P(gpufabric.core.remediation_fabric_map#filter)
    would take down, the Slurm nodes that Slurm's topology would then leave out, and whether the loop's guard allows
    it - in every partition of those nodes, the loop's drains and the nodes taken out together stay within
    O(max_drained), and a partition of one or two nodes keeps one in service unless O(small_partitions).
options:
  _input:
    description: The fabric map.
    type: dict
    required: true
  alerts:
    description: The confirmed leaf and rail alerts (reports of P(gpufabric.core.remediation_plan#filter)).
    type: list
    elements: dict
    required: true
  nodes:
    description: Slurm's nodes (P(gpufabric.core.slurm_node_state#module)'s RV(gpufabric.core.slurm_node_state#module:nodes)).
    type: list
    elements: dict
    required: true
  loop_nodes:
    description: The ledger's entries per node (RV(gpufabric.core.slurm_node_state#module:loop_nodes)).
    type: dict
    default: {}
  prefix:
    description: The drain reason's prefix.
    type: str
    default: "gpufabric:"
  max_drained:
    description: The guard, a number of nodes or a percentage of the partition.
    type: str
    default: "10%"
  node_names:
    description: Inventory host to Slurm NodeName, for hosts whose names differ.
    type: dict
    default: {}
  small_partitions:
    description: Let a partition of one or two nodes lose its last node in service.
    type: bool
    default: false
author:
  - gpufabric.core contributors (@gpufabric)
"""

EXAMPLES = r"""
- name: May the dead leaf's hosts leave Slurm's topology?
  ansible.builtin.set_fact:
    check: "{{ fabric_map | gpufabric.core.remediation_topology_guard(plan.reports, slurm.nodes, max_drained='10%') }}"
"""

RETURN = r"""
_value:
  description: C(allowed), C(nodes) (the Slurm nodes taken out) and C(message).
  type: dict
  sample: {allowed: false, nodes: [node1, node2], message: "the topology without the dead leaves takes out node1, node2; held by the guard: ..."}
"""


def remediation_topology_guard(fabric_map, alerts, nodes, loop_nodes=None, prefix="gpufabric:", max_drained="10%",
                               node_names=None, small_partitions=False):
    if not isinstance(fabric_map, dict) or not isinstance(fabric_map.get("hosts"), dict):
        raise remediation.RemediationError("the input must be a fabric map (a dict with hosts)")
    if not isinstance(alerts, list) or not isinstance(nodes, list):
        raise remediation.RemediationError("alerts and nodes must be lists (the plan's reports, Slurm's nodes)")
    return wrap_var(remediation.topology_guard(fabric_map, alerts, nodes, loop_nodes or {}, prefix, max_drained,
                                               node_names or {}, bool(small_partitions)))


class FilterModule:
    """The remediation_topology_guard filter."""

    def filters(self):
        return {"remediation_topology_guard": raising_filter_error(
            "remediation_topology_guard", remediation_topology_guard, (remediation.RemediationError,))}
