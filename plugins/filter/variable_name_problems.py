# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible_collections.gpufabric.core.plugins.module_utils.inputs.variable_names import misspelt_variable_problems

DOCUMENTATION = r"""
name: variable_name_problems
short_description: Name the variables of a host that look like the collection's but that nothing reads
version_added: "0.1.0"
description:
  - Ansible ignores a variable that nothing reads. A misspelt prefix (C(rmda_expected_rate_gbps)) or a misspelt
    fleet variable (C(gpufabric_rail_interface)) leaves the real one at its default without a word.
  - Returns one sentence for each name that no role's argument spec and no playbook of the collection reads but that
    is nearly one of those names (one letter swapped, left out or added), naming the one it was probably meant to be.
  - Names with a role's own prefix are left to that role's argument spec, which refuses every unknown option.
    Names unlike any of the collection's (the inventory's own variables) pass.
  - C(playbooks/check_inventory.yml) runs it on every host's variable names.
positional: _input, argument_specs
options:
  _input:
    description: The host's variable names (C(query('ansible.builtin.varnames', '.+'))).
    type: list
    elements: str
    required: true
  argument_specs:
    description: Each role's parsed C(meta/argument_specs.yml), by role name.
    type: dict
    required: true
author:
  - gpufabric.core contributors (@gpufabric)
"""

EXAMPLES = r"""
- name: Refuse a misspelt variable before any host changes
  vars:
    __specs: >-
      {{ dict(['rdma', 'nccl'] | zip(['rdma', 'nccl']
              | map('regex_replace', '^(.*)$', playbook_dir ~ '/../roles/\\1/meta/argument_specs.yml')
              | map('ansible.builtin.file') | map('ansible.builtin.from_yaml'))) }}
    __problems: "{{ query('ansible.builtin.varnames', '.+') | gpufabric.core.variable_name_problems(__specs) }}"
  ansible.builtin.assert:
    that: __problems | length == 0
    fail_msg: "{{ __problems | join('; ') }}"
    quiet: true
"""

RETURN = r"""
_value:
  description: One sentence per misspelt variable; empty when every name is known or unlike the collection's.
  type: list
  elements: str
  sample:
    - "rmda_expected_rate_gbps: no role or playbook of gpufabric.core reads this variable; did you mean
      rdma_expected_rate_gbps? (a misspelt variable is ignored, and rdma_expected_rate_gbps keeps its default)"
"""


class FilterModule:
    def filters(self):
        return {"variable_name_problems": misspelt_variable_problems}
