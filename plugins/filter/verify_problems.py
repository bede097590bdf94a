# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible_collections.gpufabric.core.plugins.module_utils.verify.inputs import verify_problems
from ansible_collections.gpufabric.core.plugins.plugin_utils.filter_errors import settings_problems_filter

DOCUMENTATION = r"""
name: verify_problems
short_description: List what is wrong with one host's gpufabric.core.verify role variables
version_added: "0.1.0"
description:
  - Checks one host's variables of the C(gpufabric.core.verify) role on the controller, after their types and
    choices have passed the role's argument specs, and returns one sentence per problem, each naming the variable
    (for example C(verify_gate_percent) or C(verify_rounds[0][1])). An empty list means the variables are usable.
  - "Checked: durations, intervals, streams and queue pairs, C(verify_gate_percent) from 1 to 100, the base port,
    thresholds (positive numbers per group), GPUDirect with a perftest tool only, rail numbers, an explicit plan
    (pairs of play hosts, no host twice in a round), a sweep of at least two hosts, nccl-tests' binary, sizes,
    arguments and environment, C(verify_address), the controller's report directory (absolute, in normal form)
    and the textfile collector directory (under C(/var/lib/), C(/run/), C(/srv/) or C(/opt/))."
  - The role's preflight runs it for every host and C(playbooks/check_inventory.yml) runs it too.
options:
  _input:
    description: One host's variables of the role by name (C(verify_*)); other names are ignored.
    type: dict
    required: true
  hosts:
    description: The hosts of the play; the rules about play hosts are skipped when omitted.
    type: list
    elements: str
author:
  - gpufabric.core contributors (@gpufabric)
"""

EXAMPLES = r"""
- name: Refuse bad verify variables on every host before any test
  vars:
    __names: "{{ query('ansible.builtin.varnames', '^verify_') }}"
    __problems: >-
      {{ dict(__names | zip(__names | map('extract', vars)))
         | gpufabric.core.verify_problems(hosts=ansible_play_hosts_all) }}
  ansible.builtin.assert:
    that: __problems | length == 0
    fail_msg: "{{ __problems | join('; ') }}"
    quiet: true
"""

RETURN = r"""
_value:
  description: One sentence per problem; empty when the variables are usable.
  type: list
  elements: str
  sample:
    - "verify_gate_percent: must be a share of the port rate from 1 to 100 %; got 0"
"""


def _problems(settings, hosts=None):
    if hosts is not None and (not isinstance(hosts, list) or not all(isinstance(host, str) for host in hosts)):
        raise TypeError("hosts must be a list of host names, got %r" % (hosts,))
    return verify_problems(settings, hosts)


class FilterModule:
    """The verify_problems filter."""

    def filters(self):
        return settings_problems_filter("verify_problems", _problems, "verify_* variables")
