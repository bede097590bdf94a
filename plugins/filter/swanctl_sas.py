# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible_collections.gpufabric.core.plugins.module_utils.parsers.common import ParseError
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.swanctl import parse_list_sas
from ansible_collections.gpufabric.core.plugins.plugin_utils.filter_errors import raising_filter_error

DOCUMENTATION = r"""
name: swanctl_sas
short_description: Parse the output of C(swanctl --list-sas) into IKE and CHILD SAs
version_added: 0.1.0
description:
  - Parses the default (human) output of strongSwan's C(swanctl --list-sas), the form swanctl prints on every
    release and the one people paste into tickets, into a list of IKE SAs with their CHILD SAs.
  - Each IKE and CHILD SA carries its key exchanges and a C(post_quantum) flag. A CHILD SA's own key exchanges
    are those of its rekeys (PFS); it counts as post-quantum when its IKE SA does, since its keys derive from the
    IKE SA's.
  - An empty output means no SAs and gives an empty list.
  - Raises an error naming the line it could not read when the text is not C(swanctl --list-sas) output.
  - The same parser backs the M(gpufabric.core.swanctl_verify) module.
options:
  _input:
    description: The C(stdout) of C(swanctl --list-sas).
    type: string
    required: true
author:
  - gpufabric.core contributors
"""

EXAMPLES = r"""
- name: Read the SAs
  ansible.builtin.command: swanctl --list-sas
  register: list_sas
  changed_when: false
  check_mode: false

- name: Show the packets that went through each CHILD SA
  ansible.builtin.debug:
    msg: "{{ item.0.name }} {{ item.1.name }}: {{ item.1.packets_out }} packets out, {{ item.1.packets_in }} in"
  loop: "{{ list_sas.stdout | gpufabric.core.swanctl_sas | subelements('children') }}"
  loop_control:
    label: "{{ item.1.name }}"
"""

RETURN = r"""
_value:
  description: One entry per IKE SA, in the order swanctl printed them.
  type: list
  elements: dict
  contains:
    name:
      description: Connection name.
      type: str
      sample: gf-node2
    uniqueid:
      description: IKE SA unique id (changes when the SA is re-established).
      type: int
      sample: 1
    state:
      description: IKE SA state (ESTABLISHED, CONNECTING, DELETING ...).
      type: str
      sample: ESTABLISHED
    version:
      description: IKE version.
      type: int
      sample: 2
    initiator:
      description: Whether this host initiated the IKE SA.
      type: bool
      sample: true
    local:
      description: Local identity, address and port.
      type: dict
      sample: {id: node1, host: 10.232.77.11, port: 4500}
    remote:
      description: Remote identity, address and port.
      type: dict
      sample: {id: node2, host: 10.232.77.12, port: 4500}
    algorithms:
      description: Negotiated IKE algorithms (encryption[, integrity], PRF, key exchange); empty while connecting.
      type: list
      elements: str
      sample: [AES_GCM_16-256, PRF_HMAC_SHA2_384, ECP_384, KE1_ML_KEM_768]
    key_exchanges:
      description:
        - The IKE SA's key exchanges in negotiation order, the classical group first and then the RFC 9370
          additional ones that strongSwan 6 lists as C(KE1_...), without that prefix; empty while connecting.
      type: list
      elements: str
      sample: [ECP_384, ML_KEM_768]
    post_quantum:
      description: Whether one of the IKE SA's key exchanges is a post-quantum KEM (ML-KEM).
      type: bool
      sample: true
    established_seconds:
      description: Seconds since the IKE SA was established; null when not established.
      type: int
      sample: 12
    rekey_seconds:
      description: Seconds until the IKE SA is rekeyed; null when not scheduled.
      type: int
      sample: 14234
    tasks:
      description: Queued, active and passive IKE tasks, when swanctl lists any.
      type: dict
      sample: {active: [IKE_INIT, IKE_AUTH]}
    children:
      description: CHILD SAs of this IKE SA.
      type: list
      elements: dict
      sample:
        - name: gf-node2
          uniqueid: 3
          reqid: 1
          state: INSTALLED
          mode: TUNNEL
          udp_encap: true
          protocol: ESP
          algorithms: [AES_GCM_16-256, ECP_384]
          encryption: AES_GCM_16-256
          key_exchanges: [ECP_384]
          post_quantum: true
          bytes_in: 252
          packets_in: 3
          bytes_out: 252
          packets_out: 3
          local_ts: [10.77.0.1/32]
          remote_ts: [10.77.0.2/32]
"""


class FilterModule:
    """The swanctl_sas filter."""

    def filters(self):
        return {"swanctl_sas": raising_filter_error("swanctl_sas", parse_list_sas, ParseError)}
