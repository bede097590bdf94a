# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible_collections.gpufabric.core.plugins.module_utils.health import remediation
from ansible_collections.gpufabric.core.plugins.plugin_utils.filter_errors import raising_filter_error

DOCUMENTATION = r"""
name: remediation_fabric_map
short_description: The fabric map with the rails behind firing leaf and rail alerts marked down
version_added: "0.1.0"
description:
  - Returns a copy of the fabric map in which, for each firing leaf alert, the rail it names (every rail when it
    names none) of every host behind that leaf is down, with the alert in its state; a rail alert takes that rail
    down on every host.
  - P(gpufabric.core.slurm_topology#filter) leaves those hosts out of the rail's tree and names the alert, which is
    what C(playbooks/remediate.yml) gives C(playbooks/scheduler.yml) when C(remediation_topology_regenerate) asks
    for it. Resolved alerts change nothing.
options:
  _input:
    description: The fabric map.
    type: dict
    required: true
  alerts:
    description: The leaf and rail alerts (the C(reports) of P(gpufabric.core.remediation_plan#filter)).
    type: list
    elements: dict
    required: true
author:
  - gpufabric.core contributors (@gpufabric)
"""

EXAMPLES = r"""
- name: The fabric map without the dead leaf
  ansible.builtin.copy:
    content: "{{ lookup('ansible.builtin.file', 'reports/discover/fabric_map.json') | from_json
                 | gpufabric.core.remediation_fabric_map(plan.reports) | to_nice_json }}"
    dest: reports/remediation/fabric_map_without_dead_leaves.json
    mode: "0644"
"""

RETURN = r"""
_value:
  description: The fabric map, its dead rails C(up=false) with the alert as their C(state).
  type: dict
"""


def remediation_fabric_map(fabric_map, alerts):
    if not isinstance(fabric_map, dict) or not isinstance(fabric_map.get("hosts"), dict):
        raise remediation.RemediationError("the input must be a fabric map (a dict with hosts)")
    if not isinstance(alerts, list):
        raise remediation.RemediationError("alerts must be the plan's reports (a list)")
    return remediation.fabric_map_without_leaves(fabric_map, alerts)


class FilterModule:
    """The remediation_fabric_map filter."""

    def filters(self):
        return {"remediation_fabric_map": raising_filter_error("remediation_fabric_map", remediation_fabric_map,
                                                               (remediation.RemediationError,))}
