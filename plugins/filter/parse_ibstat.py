# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible_collections.gpufabric.core.plugins.module_utils.parsers.ibstat import parse_ibstat
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.common import ParseError
from ansible_collections.gpufabric.core.plugins.plugin_utils.filter_errors import raising_filter_error

DOCUMENTATION = r"""
name: parse_ibstat
short_description: Parse the output of ibstat (infiniband-diags) into CAs and ports
version_added: 0.1.0
description:
  - Parses the output of C(ibstat) into one entry per channel adapter (CA) with its ports.
  - Port states are given in one spelling shared with P(gpufabric.core.parse_ibv_devinfo#filter) and
    M(gpufabric.core.topology_facts) (C(ACTIVE), C(DOWN), C(INIT), C(ARMED)); physical states as ibstat spells them
    (C(LinkUp), C(Disabled), C(Polling)); the rate as a number of Gb/s.
  - Lines the tools print on failure (C(ibwarn), C(ibpanic), C(iberror), driver messages) are returned in
    C(errors) rather than dropped, so a partial output still gives the CAs it lists.
  - Text holding neither a CA block nor a tool message raises an error naming the command and the problem.
options:
  _input:
    description: The output of C(ibstat); include stderr (C(2>&1)) to see its error messages in C(errors).
    type: string
    required: true
author:
  - gpufabric.core contributors
"""

EXAMPLES = r"""
- name: Read the RDMA ports
  ansible.builtin.command: ibstat
  register: ibstat_raw
  changed_when: false
  check_mode: false

- name: List the ports that are not active
  vars:
    ibstat: "{{ ibstat_raw.stdout | gpufabric.core.parse_ibstat }}"
  ansible.builtin.debug:
    msg: "{{ item.0.name }} port {{ item.1.port }} is {{ item.1.state }} ({{ item.1.physical_state }})"
  loop: "{{ ibstat.cas | subelements('ports') }}"
  when: item.1.state != 'ACTIVE'
"""

RETURN = r"""
_value:
  description: The CAs and the error lines.
  type: dict
  contains:
    cas:
      description: One entry per CA, in ibstat's order.
      type: list
      elements: dict
      sample:
        - name: mlx5_0
          ca_type: MT4129
          number_of_ports: 1
          firmware_version: 28.39.1002
          hardware_version: "0"
          node_guid: "0x946dae0300cde72c"
          system_image_guid: "0x946dae0300cde72c"
          ports:
            - port: 1
              state: ACTIVE
              physical_state: LinkUp
              rate_gbps: 400.0
              base_lid: 75
              lmc: 0
              sm_lid: 334
              capability_mask: "0xa751e848"
              port_guid: "0x946dae0300cde72c"
              link_layer: InfiniBand
    errors:
      description: Lines the tools printed on failure, in order, then one sentence per CA that lists no port; empty when none.
      type: list
      elements: str
      sample: ["ibpanic: [2137592] main: stat of IB device 'mthca0' failed: No such file or directory"]
"""


class FilterModule:
    """The parse_ibstat filter."""

    def filters(self):
        return {"parse_ibstat": raising_filter_error("parse_ibstat", parse_ibstat, ParseError)}
