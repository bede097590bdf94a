# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible_collections.gpufabric.core.plugins.module_utils.health import remediation
from ansible_collections.gpufabric.core.plugins.plugin_utils.filter_errors import raising_filter_error

DOCUMENTATION = r"""
name: remediation_peers
short_description: Choose a healthy peer behind the same leaf for each node the remediation loop re-verifies
version_added: "0.1.0"
description:
  - For each node alert of P(gpufabric.core.remediation_plan#filter), the first candidate host (natural order) whose
    same rail reaches the same leaf in the fabric map, is up there, is in service in Slurm (neither drained nor down,
    for any reason) and has no alert firing. An alert without a rail takes a peer sharing the node's leaf on any
    rail.
  - The pair is what the C(gpufabric.core.verify) role's sweep tests; with a TCP tool (iperf3) the rail's
    interfaces (C(netdev), C(peer_netdev)) give the addresses to test on.
  - Without a fabric map, or with no such peer, the entry says why and has no peer; the node then stays drained.
options:
  _input:
    description: The node alerts to re-verify (items of the plan).
    type: list
    elements: dict
    required: true
  fabric_map:
    description: The fabric map of P(gpufabric.core.fabric_map#filter) (the JSON discover.yml writes); empty for none.
    type: raw
    required: true
  nodes:
    description: Slurm's nodes, as P(gpufabric.core.slurm_node_state#module) returns them.
    type: list
    elements: dict
    required: true
  firing_hosts:
    description: Inventory hosts with a node alert firing.
    type: list
    elements: str
    default: []
  candidates:
    description: Inventory hosts that may serve as peers.
    type: list
    elements: str
    required: true
  node_names:
    description: Inventory host to Slurm NodeName, for hosts whose names differ.
    type: dict
    default: {}
author:
  - gpufabric.core contributors (@gpufabric)
"""

EXAMPLES = r"""
- name: Pair each node with a peer behind its leaf
  ansible.builtin.set_fact:
    pairs: >-
      {{ plan.return | gpufabric.core.remediation_peers(fabric_map, slurm.nodes, firing_hosts=[],
                                                        candidates=groups['gpu_nodes']) }}
"""

RETURN = r"""
_value:
  description: One entry per item - C(host), C(node), C(peer) (none when there is none), C(rail_index), C(netdev),
    C(peer_netdev), C(leaf) and C(why) (when there is no peer).
  type: list
  elements: dict
"""


def remediation_peers(items, fabric_map, nodes, firing_hosts=None, candidates=None, node_names=None):
    if not isinstance(items, list) or not all(isinstance(item, dict) and item.get("host") for item in items):
        raise remediation.RemediationError("the input must be the plan's node alerts (dicts with a host)")
    if fabric_map not in (None, "") and not isinstance(fabric_map, dict):
        raise remediation.RemediationError("fabric_map must be the fabric map (a dict), got %s"
                                           % type(fabric_map).__name__)
    return remediation.choose_peers(items, fabric_map or None, nodes or [], firing_hosts or [], candidates or [],
                                    node_names or {})


class FilterModule:
    """The remediation_peers filter."""

    def filters(self):
        return {"remediation_peers": raising_filter_error("remediation_peers", remediation_peers,
                                                          (remediation.RemediationError,))}
