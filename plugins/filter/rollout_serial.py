# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: rollout_serial
short_description: Pass a play's serial through, refusing one Ansible would misread
version_added: "0.1.0"
description:
  - Returns its input when it is a usable C(serial) - a number of hosts of at least 1, a whole percentage from 1%
    to 100%, or a list of them - and fails naming C(gpufabric_serial) otherwise.
  - Ansible runs every host in one batch for a serial of 0 or below and stops with a traceback for a word; this
    filter on a play's C(serial) line stops the play with a sentence instead, before its first task.
options:
  _input:
    description: The serial value (C(gpufabric_serial)).
    type: raw
    required: true
  name:
    description: The variable named in the message.
    type: str
    default: gpufabric_serial
author:
  - gpufabric.core contributors (@gpufabric)
"""

EXAMPLES = r"""
- name: A play rolled out in batches of gpufabric_serial
  hosts: gpu_nodes
  serial: "{{ gpufabric_serial | default('100%') | gpufabric.core.rollout_serial }}"
  tasks:
    - name: Say hello
      ansible.builtin.debug:
        msg: hello
"""

RETURN = r"""
_value:
  description: The serial, unchanged.
  type: raw
"""

from ansible_collections.gpufabric.core.plugins.module_utils.inputs.rollout import RolloutError, checked_serial
from ansible_collections.gpufabric.core.plugins.plugin_utils.filter_errors import raising_filter_error


class FilterModule:
    """The rollout_serial filter."""

    def filters(self):
        return {"rollout_serial": raising_filter_error("rollout_serial", checked_serial, RolloutError)}
