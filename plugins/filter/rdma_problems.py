# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible_collections.gpufabric.core.plugins.module_utils.rdma.inputs import rdma_problems
from ansible_collections.gpufabric.core.plugins.plugin_utils.filter_errors import settings_problems_filter

DOCUMENTATION = r"""
name: rdma_problems
short_description: List what is wrong with the gpufabric.core.rdma role's variables
version_added: "0.1.0"
description:
  - Checks the variables of the C(gpufabric.core.rdma) role on the controller, after their types and choices have
    passed the role's argument specs, and returns one sentence per problem, each naming the variable (for example
    C(rdma_memlock_domains[2])). An empty list means the variables are usable.
  - "Checked: the DOCA-OFED mirror and key URLs (required with C(rdma_driver_source=doca)), package names and
    versions, kernel module names and one-line option strings, the memlock limit and pam_limits domains, the IRQ
    cpulist, device names, RoCE ToS and traffic class (-1 or 0-255), waits and rates, mlxconfig parameters."
  - Every pattern must match the whole value, so a trailing newline or carriage return, which would split the
    file the value is written into, is refused.
  - The role's preflight and C(playbooks/check_inventory.yml) run this same filter.
options:
  _input:
    description: The role's variables by name (C(rdma_*)); other names are ignored.
    type: dict
    required: true
author:
  - gpufabric.core contributors (@gpufabric)
"""

EXAMPLES = r"""
- name: Refuse bad rdma variables before anything on the host changes
  vars:
    __names: "{{ query('ansible.builtin.varnames', '^rdma_') }}"
    __problems: "{{ dict(__names | zip(__names | map('extract', vars))) | gpufabric.core.rdma_problems }}"
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
    - "rdma_memlock_limit: must be 'unlimited' or a positive size in KiB; got 'unlimited\\n'"
"""


class FilterModule:
    """The rdma_problems filter."""

    def filters(self):
        return settings_problems_filter("rdma_problems", rdma_problems, "rdma_* variables")
