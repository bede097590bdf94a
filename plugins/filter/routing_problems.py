# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: routing_problems
short_description: List what is wrong with the routing role's BGP, BFD and address settings
version_added: "0.1.0"
description:
  - Checks the variables of C(gpufabric.core.routing) on the controller, before any host is touched, and returns
    one sentence per problem, each naming the variable (for example C(routing_uplinks[1] (eth1).remote_asn)).
    An empty list means the settings are usable.
  - "AS numbers 1-4294967295 (not AS_TRANS 23456), uplinks eBGP (the leaf's AS differs from the host's), each
    uplink either numbered (a unicast peer address, not link-local) or unnumbered, interfaces and peers unique."
  - "Loopback addresses host routes (/32, /128); prefixes in CIDR notation with no host bits; verified prefixes
    among the accepted ones; ECMP paths at least the number of uplinks."
  - "BFD intervals 10-60000 ms and multiplier 2-255 (FRR's limits); BGP hold 0 or 3-65535 s with the keepalive at
    most a third of it; the connect-retry timer 1-65535 s."
  - "The ECMP hash: C(multipath_hash_policy) one of l3, l4, l3_inner, custom (checked when given), custom with a
    non-empty C(multipath_hash_fields) of known field names."
  - Addresses are checked with netaddr.
options:
  _input:
    description: The settings, the role's variables without their C(routing_) prefix (C(asn), C(uplinks),
      C(loopback_addresses), C(router_id), C(accept_prefixes), C(advertise_prefixes), C(verify_prefixes),
      C(maximum_paths), C(bfd_enabled), C(bfd_profile), C(bfd_transmit_interval), C(bfd_receive_interval),
      C(bfd_detect_multiplier), C(bgp_keepalive), C(bgp_hold), C(bgp_connect_retry), C(multipath_hash_policy),
      C(multipath_hash_fields)).
    type: dict
    required: true
  prefix:
    description: Prepended to the keys in messages, so that they name the variables the user set.
    type: str
    default: routing_
requirements:
  - netaddr (on the controller)
author:
  - gpufabric.core contributors (@gpufabric)
"""

EXAMPLES = r"""
- name: Refuse bad routing settings before anything on the host changes
  vars:
    problems: >-
      {{ {'asn': routing_asn, 'uplinks': routing_uplinks, 'loopback_addresses': routing_loopback_addresses,
          'accept_prefixes': routing_accept_prefixes, 'bgp_keepalive': routing_bgp_keepalive,
          'bgp_hold': routing_bgp_hold} | gpufabric.core.routing_problems }}
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
    - "routing_uplinks[0] (eth0).remote_asn: 65001 is the host's own routing_asn; uplinks are eBGP, each leaf in its own AS"
    - "routing_bfd_transmit_interval: 5 ms is outside 10-60000 ms"
"""

from ansible.errors import AnsibleFilterError
from ansible_collections.gpufabric.core.plugins.module_utils.inputs.checks import masked
from ansible_collections.gpufabric.core.plugins.module_utils.routing.config import routing_problems as _problems
from ansible_collections.gpufabric.core.plugins.module_utils.routing.multipath_hash import hash_settings_problems


def routing_problems(settings, prefix="routing_"):
    if not isinstance(prefix, str):
        raise AnsibleFilterError("gpufabric.core.routing_problems: prefix must be a string, got %r" % (prefix,))
    problems = _problems(settings, prefix)
    if isinstance(settings, dict) and "multipath_hash_policy" in settings:
        problems += hash_settings_problems(settings, prefix)
    return masked(problems, settings)


class FilterModule:
    """The routing_problems filter."""

    def filters(self):
        return {"routing_problems": routing_problems}
