# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible_collections.gpufabric.core.plugins.module_utils.cooling.policy import mig_layout_problems, policy_problems

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
  - "Every zone needs C(critical_temp), and its curve must reach 100 % at or below it. Values that pass a type
    check but are wrong are refused: BMC timeouts, retries, ports and cipher suites as numbers in range
    (C(\"5s\") is not a timeout), fan group C(min_duty) 0-100, hwmon targets under C(hwmon_root) with no C(..),
    action commands as argument lists, C(http://) BMC URLs without C(allow_insecure_http), liquid cooling without
    a Redfish BMC, and text with a newline or carriage return."
  - With C(gpu_mig_layout) (and C(gpu_mig_config)) in the input, the MIG layout name is checked too.
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
  only:
    description: V(gpu_mig) checks only C(gpu_mig_layout) against C(gpu_mig_config) (the role's GPU phase, which
      runs without the controller); by default the whole policy is checked.
    type: str
    choices: [gpu_mig]
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


def cooling_policy_problems(policy, prefix="", only=None):
    if not isinstance(prefix, str):
        raise AnsibleFilterError("gpufabric.core.cooling_policy_problems: prefix must be a string, got %r" % (prefix,))
    if only not in (None, "gpu_mig"):
        raise AnsibleFilterError("gpufabric.core.cooling_policy_problems: only must be gpu_mig or unset, got %r" % (only,))
    if only == "gpu_mig":
        if not isinstance(policy, dict):
            raise AnsibleFilterError("gpufabric.core.cooling_policy_problems: the input must be a mapping")
        return mig_layout_problems(policy.get("gpu_mig_layout"), policy.get("gpu_mig_config"), prefix)
    return policy_problems(policy, prefix)


class FilterModule:
    """The cooling_policy_problems filter."""

    def filters(self):
        return {"cooling_policy_problems": cooling_policy_problems}
