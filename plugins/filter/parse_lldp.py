# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible_collections.gpufabric.core.plugins.module_utils.parsers.lldp import parse_lldp, parse_lldp_neighbors
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.common import ParseError
from ansible_collections.gpufabric.core.plugins.plugin_utils.filter_errors import raising_filter_error

DOCUMENTATION = r"""
name: parse_lldp
short_description: Parse lldpd's JSON neighbour list (lldpctl -f json or -f json0)
version_added: 0.1.0
description:
  - Parses the output of C(lldpctl -f json) or C(lldpctl -f json0) (lldpd) into one flat entry per neighbour.
  - Both formats are accepted, with one neighbour or many; C(-f json) turns a single neighbour into an object
    instead of a list and keys chassis by their name, C(-f json0) wraps every value in lists.
  - An output without neighbours gives an empty list; with O(with_errors=true) the result is a dict whose
    C(errors) says so, and names each neighbour without a chassis id or port id. Text that is not lldpctl
    JSON raises an error naming the command and the problem.
options:
  _input:
    description: The output of C(lldpctl -f json) or C(-f json0), as text or as the already decoded object.
    type: raw
    required: true
  with_errors:
    description: Return C({neighbors, errors}) instead of the bare list of neighbours.
    type: bool
    default: false
author:
  - gpufabric.core contributors
"""

EXAMPLES = r"""
- name: Read the LLDP neighbours
  ansible.builtin.command: lldpctl -f json
  register: lldp_raw
  changed_when: false
  check_mode: false

- name: Show which switch port each interface is cabled to
  ansible.builtin.debug:
    msg: "{{ item.local_interface }} -> {{ item.chassis_name }} {{ item.port_id }}"
  loop: "{{ lldp_raw.stdout | gpufabric.core.parse_lldp }}"

- name: Fail when lldpd saw no neighbour
  ansible.builtin.assert:
    that: lldp.errors | length == 0
    fail_msg: "{{ lldp.errors }}"
  vars:
    lldp: "{{ lldp_raw.stdout | gpufabric.core.parse_lldp(with_errors=true) }}"
"""

RETURN = r"""
_value:
  description:
    - One entry per neighbour, in lldpd's order.
    - With O(with_errors=true), a dict C({neighbors, errors}) holding that list and the sentences that say what
      the output lacks (no neighbour at all, a neighbour without chassis id or port id).
  type: list
  elements: dict
  contains:
    local_interface:
      description: The local interface that received the LLDP frames.
      type: str
      sample: ens841np0
    chassis_name:
      description: The neighbour's system name; null when it sends none.
      type: str
      sample: LEAF03
    chassis_id:
      description: The neighbour's chassis id (usually a MAC address).
      type: str
      sample: "70:06:92:6e:32:1c"
    chassis_id_type:
      description: The chassis id subtype (C(mac), C(local), C(ip) ...).
      type: str
      sample: mac
    chassis_descr:
      description: The neighbour's system description.
      type: str
      sample: "SONiC Software Version: SONiC.CuOS_4.0-0.R_X86_64_ztp - HwSku: ds730-32d"
    mgmt_ip:
      description: The preferred management address (global IPv4, then global IPv6, then link-local); null if none.
      type: str
      sample: 10.193.77.203
    mgmt_ips:
      description: Every management address the neighbour advertises.
      type: list
      elements: str
      sample: ["10.20.1.50", "fe80::ae1f:6bff:fe25:8664"]
    port_id:
      description: The neighbour's port id (switch port name, or a MAC address for hosts).
      type: str
      sample: Ethernet184
    port_id_type:
      description: The port id subtype (C(ifname), C(local), C(mac) ...).
      type: str
      sample: local
    port_descr:
      description: The neighbour's port description.
      type: str
      sample: Ethernet184
    ttl:
      description: Time to live of the information in seconds.
      type: int
      sample: 120
    vlans:
      description: VLAN ids the neighbour advertises on the port.
      type: list
      elements: int
      sample: []
    via:
      description: Protocol the neighbour was learned through (LLDP, CDPv2 ...).
      type: str
      sample: LLDP
    age_seconds:
      description:
        - Seconds since lldpd first heard this neighbour on the port (or its information last changed); null when
          the output has no age.
        - lldpd keeps a neighbour that stopped sending until its TTL runs out, so a cable moved to another switch port
          lists two neighbours on one port for up to the TTL; the youngest is the cable's.
      type: int
      sample: 619
"""


def _parse_lldp(data, with_errors=False):
    return parse_lldp_neighbors(data) if with_errors else parse_lldp(data)


class FilterModule:
    """The parse_lldp filter."""

    def filters(self):
        return {"parse_lldp": raising_filter_error("parse_lldp", _parse_lldp, ParseError)}
