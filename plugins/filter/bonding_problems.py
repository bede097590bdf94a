# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: bonding_problems
short_description: List what is wrong with the gpufabric.core.bonding role's variables
version_added: "0.1.0"
description:
  - Checks the variables of the C(gpufabric.core.bonding) role on the controller, after their types and choices
    have passed the role's argument specs, and returns one sentence per problem, each naming the variable and the
    item (for example C(bonding_bonds[0] (bond0).lacp_rate)). An empty list means the variables are usable.
  - "Checked: every rule of P(gpufabric.core.bond_validate#filter) (modes, options per mode, MTU, VLAN ids and parents,
    interface names, members, addresses, routes, routing rules, overlapping subnets, gateways outside every subnet,
    duplicate default routes), with the role-wide bond defaults (C(bonding_mode), C(bonding_miimon), ...) applied;
    and that C(bonding_rollback_timeout) leaves the controller time to reconnect, verify and confirm (at least
    C(bonding_settle_seconds) + 2 x C(bonding_confirm_timeout), + C(bonding_verify_timeout) when bonds are
    verified, + 20 s)."
  - The role's preflight and C(playbooks/check_inventory.yml) run this same filter.
positional: _input
options:
  _input:
    description: The role's variables by name (C(bonding_*)); other names are ignored. Missing lists count as
      empty; the rollback window is checked when C(bonding_rollback_timeout) is given.
    type: dict
    required: true
  prefix:
    description: Prefix of the variable names.
    type: str
    default: bonding
requirements:
  - netaddr (on the controller)
author:
  - gpufabric.core contributors (@gpufabric)
"""

EXAMPLES = r"""
- name: Refuse bad bonding variables before anything on the host changes
  vars:
    __names: "{{ query('ansible.builtin.varnames', '^bonding_') }}"
    __problems: "{{ dict(__names | zip(__names | map('extract', vars))) | gpufabric.core.bonding_problems }}"
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
    - "bonding_bonds[0] (bond0).mtu: 9300 is out of range 1280-9216"
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufabric.core.plugins.module_utils.bonding.addressing import HAS_NETADDR, NETADDR_IMPORT_ERROR
from ansible_collections.gpufabric.core.plugins.module_utils.bonding.inputs import bonding_problems


def bonding_problems_filter(settings, prefix="bonding"):
    if not HAS_NETADDR:
        raise AnsibleFilterError("gpufabric.core.bonding_problems needs the Python package netaddr on the controller "
                                 "(pip install netaddr): %s" % NETADDR_IMPORT_ERROR)
    if not isinstance(settings, dict):
        raise AnsibleFilterError("gpufabric.core.bonding_problems: the input must be a dict of %s_* variables, got %s"
                                 % (prefix, type(settings).__name__))
    return bonding_problems(settings, prefix=prefix)


class FilterModule:
    """The bonding_problems filter."""

    def filters(self):
        return {"bonding_problems": bonding_problems_filter}
