# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible_collections.gpufabric.core.plugins.module_utils.parsers.ibv_devinfo import parse_ibv_devinfo
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.common import ParseError
from ansible_collections.gpufabric.core.plugins.plugin_utils.filter_errors import raising_filter_error

DOCUMENTATION = r"""
name: parse_ibv_devinfo
short_description: Parse the output of ibv_devinfo or ibv_devinfo -v (rdma-core)
version_added: 0.1.0
description:
  - Parses the output of C(ibv_devinfo) or C(ibv_devinfo -v) into one entry per RDMA device with its ports.
  - Port states are normalized (C(PORT_ACTIVE (4)) becomes C(ACTIVE)), MTUs are numbers of bytes, and with
    C(-v) the link rate is computed from C(active_width) and C(active_speed) the way C(ibstat) does, and the
    GID table is returned with each GID's type (C(RoCE v2) ...) where the tool prints it.
  - Both the TAB-indented layout of old libibverbs and the space-aligned layout of rdma-core are read.
  - Lines such as C(Failed to get IB devices list) are returned in C(errors). Text holding neither a device
    block nor such a message raises an error naming the command and the problem.
options:
  _input:
    description: The output of C(ibv_devinfo) or C(ibv_devinfo -v); include stderr to see its error messages.
    type: string
    required: true
author:
  - gpufabric.core contributors
"""

EXAMPLES = r"""
- name: Read the RDMA devices
  ansible.builtin.command: ibv_devinfo -v
  register: devinfo_raw
  changed_when: false
  check_mode: false

- name: Show each port's link layer and active MTU
  ansible.builtin.debug:
    msg: "{{ item.0.name }}/{{ item.1.port }}: {{ item.1.link_layer }} MTU {{ item.1.active_mtu }}"
  loop: "{{ (devinfo_raw.stdout | gpufabric.core.parse_ibv_devinfo).devices | subelements('ports') }}"
"""

RETURN = r"""
_value:
  description: The devices and the error lines.
  type: dict
  contains:
    devices:
      description: One entry per device (C(hca_id)), in the tool's order.
      type: list
      elements: dict
      sample:
        - name: mlx4_1
          transport: InfiniBand
          fw_ver: 2.42.5000
          node_guid: "7cfe:9003:00a5:95c0"
          sys_image_guid: "7cfe:9003:00a5:95c3"
          vendor_id: "0x02c9"
          vendor_part_id: 4099
          hw_ver: "0x1"
          board_id: MT_1090120019
          phys_port_cnt: 2
          ports:
            - port: 2
              state: DOWN
              physical_state: Polling
              max_mtu: 4096
              active_mtu: 4096
              sm_lid: 0
              port_lid: 0
              link_layer: InfiniBand
              active_width: 4X
              active_speed: 2.5 Gbps
              rate_gbps: 10.0
              gids: [{index: 0, gid: "fe80:0000:0000:0000:7cfe:9003:00a5:95c2", type: null}]
    errors:
      description: Lines the tool printed on failure, then one sentence per device that lists no port; empty when none.
      type: list
      elements: str
      sample: ["Failed to get IB devices list: Function not implemented"]
"""


class FilterModule:
    """The parse_ibv_devinfo filter."""

    def filters(self):
        return {"parse_ibv_devinfo": raising_filter_error("parse_ibv_devinfo", parse_ibv_devinfo, ParseError)}
