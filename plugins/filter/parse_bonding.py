# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible_collections.gpufabric.core.plugins.module_utils.parsers.proc_bonding import parse_bonding
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.common import ParseError
from ansible_collections.gpufabric.core.plugins.plugin_utils.filter_errors import raising_filter_error

DOCUMENTATION = r"""
name: parse_bonding
short_description: Parse /proc/net/bonding/<bond> and judge the bond's LACP health
version_added: 0.1.0
description:
  - Parses the text of C(/proc/net/bonding/<bond>), as printed by the Linux bonding driver, into plain data.
  - Judges the bond's health. A bond is unhealthy when a slave is down, slaves run at different speeds, and,
    in 802.3ad (LACP) mode, when the LACP partner MAC address is all zeros (no switch answers LACP), when
    slaves sit in different aggregators (only one carries traffic), when a slave's actor or partner churn
    state is C(churned), or when a slave's LACP port state lacks synchronization, collecting or distributing.
  - Raises an error naming the command and the problem when the text is not bonding driver output.
options:
  _input:
    description: The content of C(/proc/net/bonding/<bond>), for example the C(content) of M(ansible.builtin.slurp)
      decoded with C(b64decode), or the C(stdout) of C(cat).
    type: string
    required: true
author:
  - gpufabric.core contributors
"""

EXAMPLES = r"""
- name: Read the bond's state
  ansible.builtin.slurp:
    src: /proc/net/bonding/bond0
  register: bond0_raw

- name: Fail when the LACP bond is not healthy
  vars:
    bond0: "{{ bond0_raw.content | b64decode | gpufabric.core.parse_bonding }}"
  ansible.builtin.assert:
    that: bond0.healthy
    fail_msg: "bond0: {{ bond0.problems | join('; ') }}"
    quiet: true
"""

RETURN = r"""
_value:
  description: The bond's settings, slaves and health.
  type: dict
  contains:
    mode:
      description: Short mode name (C(802.3ad), C(active-backup), C(balance-xor) ...), or the driver's
        description when the mode is unknown.
      type: str
      sample: 802.3ad
    mode_description:
      description: The mode as the driver describes it, without the groups the kernel appends to it.
      type: str
      sample: IEEE 802.3ad Dynamic link aggregation
    mode_suffixes:
      description: The C((...)) groups the kernel appends to the mode, such as C(fail_over_mac active).
      type: list
      elements: str
      sample: ["fail_over_mac active"]
    fail_over_mac:
      description: The C(fail_over_mac) policy (C(none), C(active), C(follow)) of an active-backup bond; null in other modes.
      type: str
      sample: active
    lacp_rate:
      description: C(slow) or C(fast); null outside 802.3ad mode.
      type: str
      sample: fast
    mii_polling_ms:
      description: MII polling interval in milliseconds.
      type: int
      sample: 100
    xmit_hash_policy:
      description: Transmit hash policy without its numeric code.
      type: str
      sample: layer3+4
    mii_status:
      description: The bond's MII status.
      type: str
      sample: up
    active_aggregator:
      description: The active aggregator (802.3ad only); null otherwise.
      type: dict
      sample: {aggregator_id: 1, number_of_ports: 2, actor_key: 15, partner_key: 201, partner_mac: "02:01:00:00:01:01"}
    slaves:
      description: One entry per slave interface, in the driver's order.
      type: list
      elements: dict
      sample:
        - name: eno3
          mii_status: up
          speed_mbps: 10000
          duplex: full
          link_failure_count: 0
          permanent_hw_addr: "3c:ec:ef:19:eb:30"
          aggregator_id: 1
          actor_churn_state: none
          partner_churn_state: none
          actor_churned_count: 0
          partner_churned_count: 0
          actor_port_state: 63
          partner_port_state: 63
          partner_mac: "02:01:00:00:01:01"
    healthy:
      description: True when no problem was found.
      type: bool
      sample: false
    problems:
      description: Sentences describing what is wrong, empty when healthy.
      type: list
      elements: str
      sample:
        - "slaves run at different speeds (100, 1000 Mbps): LACP aggregates only ports of one speed"
    errors:
      description: What could not be read, such as an unknown mode or a bond without any slave section; empty otherwise.
      type: list
      elements: str
      sample: []
"""


class FilterModule:
    """The parse_bonding filter."""

    def filters(self):
        return {"parse_bonding": raising_filter_error("parse_bonding", parse_bonding, ParseError)}
