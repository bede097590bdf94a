# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible_collections.gpufabric.core.plugins.module_utils.health.remediation_inputs import remediation_problems
from ansible_collections.gpufabric.core.plugins.plugin_utils.filter_errors import settings_problems_filter

DOCUMENTATION = r"""
name: remediation_problems
short_description: List what is wrong with the gpufabric.core.remediation role's variables
version_added: "0.1.0"
description:
  - Checks the variables of the C(gpufabric.core.remediation) role on the controller, after their types have passed
    the role's argument specs, and returns one sentence per problem, each naming the variable. An empty list means
    the variables are usable.
  - "Checked: the drain reason prefix (a word and a colon, at most 32 characters: scontrol strips quotes and splits
    lines, and a prefix that another reason could start with would let the loop resume someone else's drain), the
    guard C(remediation_max_drained) (a number of nodes of 1 or more, or a percentage above 0 and at most 100), the
    action window (0 to 86400 s), the webhook's listen address and port (1 to 65535), Alertmanager's URL
    (required), the page's labels and duration, and the state, textfile, report and fabric map paths."
  - The remediation playbook's first play runs it, and so does C(playbooks/check_inventory.yml), which is what to
    run before starting the rulebook.
options:
  _input:
    description: The role's variables by name (C(remediation_*)); a missing one takes the role's default.
    type: dict
    required: true
  groups:
    description: The inventory's groups (C(groups)); given, C(remediation_peer_group) must be one of them when
      C(remediation_verify) is on.
    type: raw
author:
  - gpufabric.core contributors (@gpufabric)
"""

EXAMPLES = r"""
- name: Refuse bad remediation variables before anything runs
  vars:
    __names: "{{ query('ansible.builtin.varnames', '^remediation_') }}"
    __problems: "{{ dict(__names | zip(__names | map('extract', vars))) | gpufabric.core.remediation_problems }}"
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
    - "remediation_max_drained: a percentage of the partition must be above 0 % and at most 100 %; got '150%'"
"""


def _problems(settings, groups=None):
    return remediation_problems(settings, groups=None if groups is None else list(groups))


class FilterModule:
    """The remediation_problems filter."""

    def filters(self):
        return settings_problems_filter("remediation_problems", _problems, "remediation_* variables")
