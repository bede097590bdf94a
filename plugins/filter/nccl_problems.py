# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible_collections.gpufabric.core.plugins.module_utils.nccl.inputs import nccl_problems
from ansible_collections.gpufabric.core.plugins.plugin_utils.filter_errors import settings_problems_filter

DOCUMENTATION = r"""
name: nccl_problems
short_description: List what is wrong with the gpufabric.core.nccl role's variables
version_added: "0.1.0"
description:
  - Checks the variables of the C(gpufabric.core.nccl) role on the controller, after their types and choices have
    passed the role's argument specs, and returns one sentence per problem, each naming the variable (for example
    C(nccl_variables.NCCL_IB_HAC) or C(nccl_conf_path)). An empty list means the variables are usable.
  - "Checked: C(nccl_variables) (names NCCL defines, with the closest name for a typo; values a config file can
    carry; debugging variables only with C(nccl_allow_debug_variables)), interface names, the numbers, the
    algorithm tiers, and the paths the role writes - in normal form (no C(..)) and inside their documented
    directories - C(nccl_conf_path) C(/etc/nccl.conf) or under C(/etc/nccl/), C(nccl_profile_script_path) a
    C(.sh) file under C(/etc/profile.d/), C(nccl_env_file_path) under C(/etc/) with C(nccl) in its name,
    C(nccl_topology_xml_path) under C(/etc/nccl/)."
  - What needs the host's topology (the RDMA ports, agreement within a peer group) is checked later, on the
    facts, by C(gpufabric.core.nccl_config) and C(gpufabric.core.nccl_hca_consistency).
  - The role's preflight and C(playbooks/check_inventory.yml) run this same filter.
options:
  _input:
    description: The role's variables by name (C(nccl_*)), and the inventory's C(gpufabric_peer_group) the role
      groups hosts by; other names are ignored.
    type: dict
    required: true
author:
  - gpufabric.core contributors (@gpufabric)
"""

EXAMPLES = r"""
- name: Refuse bad nccl variables before anything on the host changes
  vars:
    __names: "{{ query('ansible.builtin.varnames', '^nccl_') }}"
    __problems: "{{ dict(__names | zip(__names | map('extract', vars))) | gpufabric.core.nccl_problems }}"
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
    - "nccl_conf_path: must be under /etc/nccl/ or /etc/nccl.conf; /etc/passwd is outside"
"""


class FilterModule:
    """The nccl_problems filter."""

    def filters(self):
        return settings_problems_filter("nccl_problems", nccl_problems, "nccl_* variables")
