#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: remediation_event
short_description: Read the remediation run's alerts as data, never as templates
version_added: "0.1.0"
description:
  - Returns the alerts a run of C(playbooks/remediate.yml) was given - the variable C(remediation_alerts) (a run by
    hand, C(-e @alert.json), or an AWX survey), else the rulebook's event C(ansible_eda.event) - as a list of
    Alertmanager alerts.
  - The alerts are read from the task's variables without templating them, and every string in them is returned
    marked unsafe. Extra vars are trusted templates in ansible-core, and an alert's labels and annotations come from
    the fabric (a node's exporter, an LLDP system name, anyone who can post to Alertmanager) - a label such as
    C({{ lookup('pipe', ...) }}) must stay text. Reading C(remediation_alerts) any other way (a Jinja expression,
    role argument validation) evaluates it.
  - An action of the controller only; no host is contacted.
options: {}
extends_documentation_fragment:
  - gpufabric.core.attributes
attributes:
  check_mode:
    support: full
    details: Reads only.
  diff_mode:
    support: none
    details: Changes nothing.
  action:
    support: full
    description: An action plugin without a module on the host.
author:
  - gpufabric.core contributors (@gpufabric)
seealso:
  - plugin: gpufabric.core.remediation_plan
    plugin_type: filter
"""

EXAMPLES = r"""
- name: Read the alerts
  gpufabric.core.remediation_event:
  register: alerts

- name: Plan what they ask for
  ansible.builtin.set_fact:
    plan: "{{ alerts.alerts | gpufabric.core.remediation_plan }}"
"""

RETURN = r"""
alerts:
  description: The alerts, each an Alertmanager alert (C(labels), C(annotations), C(status), C(startsAt) ...), every string marked unsafe.
  returned: success
  type: list
  elements: dict
  sample: [{status: firing, labels: {alertname: GpufabricPortDown, host: node1, rail: rail1}}]
source:
  description: Where they came from - V(remediation_alerts), V(ansible_eda.event) or V(none) (no alert given, a reconcile run's empty list).
  returned: always
  type: str
  sample: ansible_eda.event
"""
