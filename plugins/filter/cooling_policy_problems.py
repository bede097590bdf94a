# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible_collections.gpufabric.core.plugins.module_utils.cooling_policy import policy_problems

DOCUMENTATION = r"""
name: cooling_policy_problems
short_description: List what is wrong with a fan-curve and liquid-cooling policy
version_added: 0.1.0
description:
  - Validates a cooling policy as the gpufabric.core.cooling role and its controller service use it, and
    returns one sentence per problem, each naming the variable (for example
    C(cooling_zones.gpu.curve[2].duty)). An empty list means the policy is usable.
  - "Curves: at least two points; temperatures strictly increasing and within -40..150 C; duties 0-100 %,
    non-decreasing and not below the zone's C(min_duty)."
  - "Zones need sensors with a known backend (ipmi, redfish, hwmon, nvml, nvidia_smi) and a selector; every
    fan group names existing zones, and every zone feeds a fan group."
  - "Timing: C(interval) 0.5-60 s and C(stale_after) at least twice the interval. Vendor raw-command profiles,
    BMC endpoints and liquid-cooling thresholds and actions are checked too."
  - The controller on the host runs the same code (C(gpufabric-cooling check-config)) before its configuration
    file is replaced.
options:
  _input:
    description: The policy, with the keys C(zones), C(fan_groups), C(bmc), C(ipmi_profile), C(interval),
      C(stale_after), C(on_stop) and C(liquid).
    type: dict
    required: true
  prefix:
    description: Prepended to top-level keys in messages, so that they name the variables the user set.
    type: str
    default: ""
author:
  - gpufabric.core contributors (@gpufabric)
"""

EXAMPLES = r"""
- name: Refuse a bad fan curve before anything on the host changes
  vars:
    problems: >-
      {{ {'zones': cooling_zones, 'fan_groups': cooling_fan_groups, 'interval': cooling_interval,
          'stale_after': cooling_stale_after} | gpufabric.core.cooling_policy_problems(prefix='cooling_') }}
  ansible.builtin.assert:
    that: problems | length == 0
    fail_msg: "{{ problems | join('; ') }}"
    quiet: true
"""

RETURN = r"""
_value:
  description: One sentence per problem; empty when the policy is usable.
  type: list
  elements: str
  sample:
    - "cooling_zones.gpu.curve[2].duty: 120 is outside 0-100 %"
    - "cooling_fan_groups.chassis.zones: zone 'gpu' is not defined in cooling_zones (defined: cpu)"
"""


def cooling_policy_problems(policy, prefix=""):
    if not isinstance(prefix, str):
        raise AnsibleFilterError("gpufabric.core.cooling_policy_problems: prefix must be a string, got %r" % (prefix,))
    return policy_problems(policy, prefix)


class FilterModule:
    """The cooling_policy_problems filter."""

    def filters(self):
        return {"cooling_policy_problems": cooling_policy_problems}
