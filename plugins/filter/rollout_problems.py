# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible_collections.gpufabric.core.plugins.module_utils.inputs.rollout import rollout_problems
from ansible_collections.gpufabric.core.plugins.plugin_utils.filter_errors import settings_problems_filter

DOCUMENTATION = r"""
name: rollout_problems
short_description: List what is wrong with the rolling-batch variables of the collection's playbooks
version_added: "0.1.0"
description:
  - Checks C(gpufabric_serial) (a number of hosts of at least 1, a whole percentage from 1% to 100%, or a list of
    them) and C(gpufabric_max_fail_percentage) (0-100) when they are present, and returns one sentence per problem
    naming the variable.
  - Ansible itself runs every host in one batch for a serial of 0 or below, and stops with a traceback for a word.
  - site.yml's first play and C(playbooks/check_inventory.yml) run this filter; each playbook's C(serial) line
    uses C(gpufabric.core.rollout_serial).
options:
  _input:
    description: Variables by name; only C(gpufabric_serial) and C(gpufabric_max_fail_percentage) are read.
    type: dict
    required: true
author:
  - gpufabric.core contributors (@gpufabric)
"""

EXAMPLES = r"""
- name: Refuse a batch size of 0 before any task
  vars:
    __problems: >-
      {{ {'gpufabric_serial': gpufabric_serial | default('100%'),
          'gpufabric_max_fail_percentage': gpufabric_max_fail_percentage | default(0)}
         | gpufabric.core.rollout_problems }}
  ansible.builtin.assert:
    that: __problems | length == 0
    fail_msg: "{{ __problems | join('; ') }}"
    quiet: true
"""

RETURN = r"""
_value:
  description: One sentence per problem; empty when the settings are usable.
  type: list
  elements: str
  sample:
    - "gpufabric_serial: must be at least 1 host per batch (Ansible runs every host at once for 0); use 100% for one batch"
"""


class FilterModule:
    """The rollout_problems filter."""

    def filters(self):
        return settings_problems_filter("rollout_problems", rollout_problems)
