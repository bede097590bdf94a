# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: bond_validate
short_description: Validate and normalise bond, VLAN and interface definitions on the controller
version_added: "0.1.0"
description:
  - Checks the role variables of C(gpufabric.core.bonding) before any host is touched. It checks the bonding mode,
    LACP rate, transmit hash policy and aggregator selection against the kernel's values, the options that apply to
    each mode, the MTU range, IP addresses, routes and routing rules, VLAN ids (1-4094) and parents, interface
    names, and that no interface is a member of two bonds or defined twice.
  - It also refuses what is well-formed but wrong (checked with netaddr) - an 802.3ad bond with one member, a bond
    listed as its own member or as a member of another bond, a route whose gateway lies outside every subnet of
    its interface (unless C(on_link) is set), two default routes of one address family in one table with the same
    metric, and subnets of different interfaces that overlap.
  - Returns the definitions with the defaults applied. Every problem found is reported at once, each naming the
    variable and the item (for example C(bonding_bonds[0] (bond0).lacp_rate)).
  - The same rules run again on the host in M(gpufabric.core.bond_config).
positional: _input
options:
  _input:
    description: The bonds (C(bonding_bonds)).
    type: list
    elements: dict
    required: true
  vlans:
    description: The VLAN sub-interfaces (C(bonding_vlans)).
    type: list
    elements: dict
    default: []
  ethernets:
    description: Plain interfaces (C(bonding_ethernets)).
    type: list
    elements: dict
    default: []
  defaults:
    description: Role-wide bond defaults (C(mode), C(miimon), C(lacp_rate), C(xmit_hash_policy), C(ad_select), C(min_links), C(mtu)).
    type: dict
    default: {}
  prefix:
    description: Prefix of the variable names in error messages.
    type: str
    default: bonding
requirements:
  - netaddr (on the controller)
author:
  - gpufabric.core contributors (@gpufabric)
"""

EXAMPLES = r"""
- name: Validate the bonding variables before touching any host
  ansible.builtin.set_fact:
    bonding_normalised: >-
      {{ bonding_bonds | gpufabric.core.bond_validate(vlans=bonding_vlans, ethernets=bonding_ethernets,
         defaults={'mode': bonding_mode, 'mtu': bonding_mtu}) }}
"""

RETURN = r"""
_value:
  description: The normalised configuration.
  type: dict
  contains:
    bonds:
      description: Bonds with mode, miimon, lacp_rate, xmit_hash_policy, ad_select, min_links, primary, mtu, members
        (dicts with name, mac, id), addresses, routes, routing_policy and vlans (names of their VLANs).
      type: list
      elements: dict
    vlans:
      description: VLANs with name, id, link, mtu, addresses, routes, routing_policy.
      type: list
      elements: dict
    ethernets:
      description: Plain interfaces with name, mtu, addresses, routes, routing_policy, vlans.
      type: list
      elements: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufabric.core.plugins.module_utils.bonding.addressing import (
    HAS_NETADDR, NETADDR_IMPORT_ERROR, addressing_problems)
from ansible_collections.gpufabric.core.plugins.module_utils.bonding.validate import BondingConfigError, normalize
from ansible_collections.gpufabric.core.plugins.plugin_utils.filter_errors import raising_filter_error


def bond_validate(bonds, vlans=None, ethernets=None, defaults=None, prefix="bonding"):
    if not HAS_NETADDR:
        raise AnsibleFilterError("bond_validate needs the Python package netaddr on the controller "
                                 "(pip install netaddr): %s" % NETADDR_IMPORT_ERROR)
    config = normalize(bonds, vlans, ethernets, defaults, prefix=prefix)
    problems = addressing_problems(config, prefix=prefix)
    if problems:
        raise BondingConfigError(problems)
    return config


class FilterModule:
    def filters(self):
        return {"bond_validate": raising_filter_error("bond_validate", bond_validate, BondingConfigError)}
