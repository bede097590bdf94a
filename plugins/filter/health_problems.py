# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: health_problems
short_description: List what is wrong with the health role's sampler, node_exporter and alert settings
version_added: "0.1.0"
description:
  - Checks the variables of C(gpufabric.core.health) on the controller, before any host is touched, and returns one
    sentence per problem, each naming the variable. An empty list means the settings are usable. The role's
    preflight and C(playbooks/check_inventory.yml) apply it alike.
  - "Intervals in range (sample 1-300 s, commands 1-3600 s, scrape and evaluation 1 s-1 h); every alert threshold
    known, durations such as 30s or 5m, counts and ratios in range; an expected port rate no NIC can reach (above
    1600 Gb/s) refused; no line break in any value that becomes a Prometheus label, target labels valid label names
    and not the series' own; the listen address an IP address or a host name; the webhook an http(s) URL; the
    ECN priority 0-7; the monitoring directory an absolute path."
options:
  _input:
    description: The role's variables by their full names (C(health_interval), C(health_thresholds), ... - every
      C(health_*) variable of the role's argument specs).
    type: dict
    required: true
  targets:
    description: The monitoring side's scrape targets (dicts with C(name) and C(labels)); each one's labels are
      checked as C(health_target_labels) of that host.
    type: list
    elements: dict
author:
  - gpufabric.core contributors (@gpufabric)
"""

EXAMPLES = r"""
- name: Refuse bad health settings before anything on the host changes
  ansible.builtin.assert:
    that: problems | length == 0
    fail_msg: "{{ problems | join('; ') }}"
    quiet: true
  vars:
    names: "{{ query('ansible.builtin.varnames', '^health_') }}"
    problems: "{{ dict(names | zip(query('ansible.builtin.vars', *names))) | gpufabric.core.health_problems }}"
"""

RETURN = r"""
_value:
  description: One sentence per problem; empty when the settings are usable.
  type: list
  elements: str
  sample:
    - "health_rails[0].expected_rate_gbps: 4000 Gb/s is a rate no NIC reaches (0 to 1600)"
    - "health_thresholds.port_down_for: '30' is not a duration such as 30s, 5m or 1h"
"""

from ansible.errors import AnsibleFilterError
from ansible_collections.gpufabric.core.plugins.module_utils.health.config import problems as _problems
from ansible_collections.gpufabric.core.plugins.module_utils.health.config import target_label_problems


def health_problems(settings, targets=None):
    if not isinstance(settings, dict):
        raise AnsibleFilterError("gpufabric.core.health_problems: expects a dict of the role's variables, got %r"
                                 % type(settings).__name__)
    found = _problems(settings)
    for target in targets or []:
        found += target_label_problems(target.get("labels"),
                                       name="%s: health_target_labels" % target.get("name"))
    return found


class FilterModule:
    """The health_problems filter."""

    def filters(self):
        return {"health_problems": health_problems}
