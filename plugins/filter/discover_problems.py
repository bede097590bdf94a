# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: discover_problems
short_description: List what is wrong with the variables of playbooks/discover.yml
version_added: "0.1.0"
description:
  - Checks the play variables of C(playbooks/discover.yml) and each host's fabric variables on the controller and
    returns one sentence per problem, naming the variable (and the host). An empty list means they are usable.
  - "Play variables: C(discover_report_dir) a path, C(discover_report_name) a file name without a directory part,
    C(discover_fail_on) one of error, warning, never, C(discover_html_title) a string, C(discover_max_hosts_drawn)
    a whole number (a string of digits, as extra vars give it, too), C(discover_lldp_wait) a whole number of seconds
    from 0 to 120, C(discover_capture_dir) empty or absolute."
  - "Host variables: C(gpufabric_rail_interfaces) a list or a mapping, C(gpufabric_peer_group) a non-empty string,
    C(gpufabric_snapshot_dir) an absolute path."
positional: _input
options:
  _input:
    description: The play variables by name (C(discover_*)); names not given are not checked.
    type: dict
    required: true
  hosts:
    description: Host name to the fabric variables that host defines.
    type: dict
    default: {}
author:
  - gpufabric.core contributors (@gpufabric)
"""

EXAMPLES = r"""
- name: Refuse bad discover variables before any host is contacted
  ansible.builtin.assert:
    that: __problems | length == 0
    fail_msg: "{{ __problems | join('; ') }}"
    quiet: true
  vars:
    __problems: >-
      {{ {'discover_fail_on': discover_fail_on | default('error')}
         | gpufabric.core.discover_problems(hosts={'node1': {'gpufabric_peer_group': 'rack1'}}) }}
  run_once: true
"""

RETURN = r"""
_value:
  description: One sentence per problem; empty when the variables are usable.
  type: list
  elements: str
  sample:
    - "discover_fail_on: must be one of error, warning, never, got 'errors'"
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufabric.core.plugins.module_utils.fabric.discover_inputs import discover_problems
from ansible_collections.gpufabric.core.plugins.module_utils.inputs.checks import masked


def discover_problems_filter(settings, hosts=None):
    if not isinstance(settings, dict) or not isinstance(hosts or {}, dict):
        raise AnsibleFilterError("gpufabric.core.discover_problems: the input and hosts must be dicts")
    return masked(discover_problems(settings, hosts), settings, hosts)


class FilterModule:
    """The discover_problems filter."""

    def filters(self):
        return {"discover_problems": discover_problems_filter}
