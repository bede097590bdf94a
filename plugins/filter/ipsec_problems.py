# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible_collections.gpufabric.core.plugins.module_utils.ipsec.inputs import InputError, ipsec_problems
from ansible_collections.gpufabric.core.plugins.plugin_utils.filter_errors import raising_filter_error

DOCUMENTATION = r"""
name: ipsec_problems
short_description: List what is wrong with the ipsec settings of some hosts and the members of their mesh
version_added: 0.1.0
description:
  - "Checks every value the C(gpufabric.core.ipsec) role writes into swanctl.conf or uses for its CA, and returns one
    sentence per problem, each starting with the host and naming the variable (for example
    C(node3: ipsec_identity: '%any' is a wildcard)). An empty list means the settings are usable."
  - "Identities: an IP address, a host name or user@domain (gateways also a distinguished name); wildcards, type
    prefixes, quotes, backslashes, newlines and carriage returns are refused. Every mesh member's identity is
    checked, so that a bad one stops every host before any peer writes it into its configuration."
  - "Durations: strongSwan time values (a number with an optional unit s, m, h, d). Proposals: only algorithms on
    this collection's allow-list (no null, DES, 3DES, MD5, SHA-1, modp768/1024/1536), complete suites."
  - "PKI: validity, renewal and CRL periods positive, renewal shorter than validity, a CA subject that is not
    empty. When O(awx_job) is set (running from AWX or Tower), C(ipsec_pki_dir) must name a persistent folder."
  - The role's preflight and C(playbooks/check_inventory.yml) both run it.
options:
  _input:
    description: Mapping of inventory name to that host's C(ipsec_*) settings (role defaults overlaid with the
      inventory).
    type: dict
    required: true
  members:
    description: The mesh members as their peers see them, dicts with C(name), C(id) (C(ipsec_identity), empty
      for the inventory name), C(address) and C(selectors), including hosts outside the play.
    type: list
    elements: dict
    default: []
  awx_job:
    description: The AWX or Tower job id (C(awx_job_id), C(tower_job_id)) when running from one, else empty.
    type: str
    default: ""
author:
  - gpufabric.core contributors (@gpufabric)
"""

EXAMPLES = r"""
- name: Refuse bad ipsec settings before anything changes
  vars:
    problems: >-
      {{ {inventory_hostname: {'ipsec_identity': ipsec_identity, 'ipsec_dpd_delay': ipsec_dpd_delay}}
         | gpufabric.core.ipsec_problems(members=[{'name': 'node2', 'id': '', 'address': '10.0.0.2'}]) }}
  ansible.builtin.assert:
    that: problems | length == 0
    fail_msg: "{{ problems | join('; ') }}"
    quiet: true
"""

RETURN = r"""
_value:
  description: One sentence per problem; empty when the settings are usable.
  type: list
  elements: str
  sample:
    - "node3: ipsec_identity: '%any' is a wildcard: it would accept any peer"
    - "node1: ipsec_esp_proposals[0]: 3des is refused (3DES has a 64-bit block (Sweet32))"
"""


def ipsec_problems_filter(hosts, members=None, awx_job=""):
    return ipsec_problems(hosts, members=members, awx_job=str(awx_job or ""))


class FilterModule:
    """The ipsec_problems filter."""

    def filters(self):
        return {"ipsec_problems": raising_filter_error("ipsec_problems", ipsec_problems_filter, (InputError,))}
