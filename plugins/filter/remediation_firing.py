# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible.utils.unsafe_proxy import wrap_var

from ansible_collections.gpufabric.core.plugins.module_utils.health import remediation
from ansible_collections.gpufabric.core.plugins.plugin_utils.filter_errors import raising_filter_error

DOCUMENTATION = r"""
name: remediation_firing
short_description: Per host, the node alerts Alertmanager shows firing for it
version_added: "0.1.0"
description:
  - Takes Alertmanager's own list of alerts (the JSON of C(GET /api/v2/alerts)) and returns, per C(host) label, the
    names of the node-scoped alerts that are active, silenced or inhibited - a node with one stays drained, a host
    with one is no re-verification peer. Every string of the result is marked unsafe.
options:
  _input:
    description: Alertmanager's alerts.
    type: list
    elements: dict
    required: true
author:
  - gpufabric.core contributors (@gpufabric)
"""

EXAMPLES = r"""
- name: Keep, per host, the node alerts firing for it
  ansible.builtin.set_fact:
    firing: "{{ alertmanager_answer.json | gpufabric.core.remediation_firing }}"
"""

RETURN = r"""
_value:
  description: Host to the names of its firing node alerts.
  type: dict
  sample: {node1: [GpufabricPortDown]}
"""


def remediation_firing(alertmanager):
    if not isinstance(alertmanager, list):
        raise remediation.RemediationError("remediation_firing takes Alertmanager's list of alerts, got %s"
                                           % type(alertmanager).__name__)
    return wrap_var(remediation.firing_by_host(alertmanager))


class FilterModule:
    """The remediation_firing filter."""

    def filters(self):
        return {"remediation_firing": raising_filter_error("remediation_firing", remediation_firing,
                                                           (remediation.RemediationError,))}
