# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleError
from jinja2.exceptions import TemplateError

from ansible_collections.gpufabric.core.plugins.module_utils.inputs.inventory import CLAIMING_VARIABLES, inventory_problems
from ansible_collections.gpufabric.core.plugins.plugin_utils.filter_errors import raising_filter_error

DOCUMENTATION = r"""
name: inventory_problems
short_description: Find what two hosts of an inventory both claim (an address, a BMC, a BGP router ID)
version_added: "0.1.0"
description:
  - "Each role checks one host's variables; this filter compares the hosts. It returns, for every host that claims
    what another host claims, one sentence per clash naming both hosts and both variables (hosts without a clash are
    left out)."
  - "Compared: the addresses of the bonding role's bonds, VLANs and interfaces (storage and front-end addresses),
    the BMC of the cooling role (C(cooling_bmc.ipmi.host), the host of C(cooling_bmc.redfish.base_url)), the routing
    role's loopback addresses and router ID, and C(verify_address). Addresses are compared by value and names
    without case; loopback, link-local and unspecified addresses are not compared."
  - "C(playbooks/check_inventory.yml) runs it once over every host of the inventory (hosts outside C(--limit)
    included). The IPsec mesh's names, identities and addresses are checked by
    P(gpufabric.core.ipsec_problems#filter)."
  - "A host whose variables cannot be rendered (an undefined variable in a template) claims nothing here: its own
    checks name the error, and the other hosts are still compared."
options:
  _input:
    description: Mapping of inventory name to that host's variables (C(hostvars), or plain dicts); only
      C(bonding_bonds), C(bonding_vlans), C(bonding_ethernets), C(cooling_bmc), C(routing_loopback_addresses),
      C(routing_router_id) and C(verify_address) are read.
    type: dict
    required: true
  hosts:
    description: The inventory names to compare (C(groups['all'])); by default every host of the input.
    type: list
    elements: str
author:
  - gpufabric.core contributors (@gpufabric)
"""

EXAMPLES = r"""
- name: Refuse an address or BMC that another host also claims
  ansible.builtin.assert:
    that: __clashes | length == 0
    fail_msg: "{{ __clashes | join('; ') }}"
    quiet: true
  vars:
    __clashes: >-
      {{ (hostvars | gpufabric.core.inventory_problems(hosts=groups['all']))[inventory_hostname] | default([]) }}
"""

RETURN = r"""
_value:
  description: Inventory name to the sentences of its clashes; hosts without one are not listed.
  type: dict
  sample:
    gpu-r01-n01: ["address '10.110.1.11' is claimed by two hosts: gpu-r01-n01 (bonding_vlans[0].addresses[0]) and
      gpu-r01-n05 (bonding_vlans[0].addresses[0]); each host needs its own"]
"""


def _plain(value):
    """value as plain data, every template in it rendered now (inside the caller's try)."""
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


def inventory_problems_filter(hostvars, hosts=None):
    if not isinstance(hostvars, Mapping):
        raise TypeError("the input must map inventory names to their variables, got %s" % type(hostvars).__name__)
    collected = {}
    for name in list(hostvars) if hosts is None else hosts:
        try:
            variables = hostvars[name]
            collected[name] = {key: _plain(variables[key]) for key in CLAIMING_VARIABLES if key in variables}
        except (AnsibleError, TemplateError):
            # An undefined variable in one of them (ansible-core 2.19 raises a jinja2 UndefinedError for it): that
            # host's own checks name it; it claims nothing here.
            collected[name] = {}
    return inventory_problems(collected)


class FilterModule:
    """The inventory_problems filter."""

    def filters(self):
        return {"inventory_problems": raising_filter_error("inventory_problems", inventory_problems_filter,
                                                           (TypeError,))}
