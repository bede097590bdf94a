# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible_collections.gpufabric.core.plugins.module_utils.ipsec.mesh import MeshError, build_mesh
from ansible_collections.gpufabric.core.plugins.plugin_utils.filter_errors import raising_filter_error

DOCUMENTATION = r"""
name: swanctl_mesh
short_description: Build one host's strongSwan connections of a full IPsec mesh
version_added: 0.1.0
description:
  - From the mesh members (and optional gateways), returns this host's swanctl connections, one per peer, the
    bypass (pass) policies that keep the controller's SSH session out of tunnels, and the SAs to verify.
  - Traffic selectors of a host are its explicit selectors, its IKE address (unless C(protect_address) is false)
    and its addresses inside O(vlan_subnets). Overlapping selectors, shared IKE addresses or hosts with nothing to
    protect are refused with a message naming the hosts.
  - In each pair the host whose name sorts first initiates (C(trap|start)); the other installs a trap policy only,
    so the pair never builds duplicate SAs. A host always initiates towards gateways.
  - Used by the C(gpufabric.core.ipsec) role.
options:
  _input:
    description: Name of the host whose connections are built.
    type: string
    required: true
  nodes:
    description: Every mesh member, dicts with C(name), C(address), C(id), C(addresses), C(selectors) and
      C(protect_address).
    type: list
    elements: dict
    required: true
  vlan_subnets:
    description: Subnets whose member addresses are protected, as host selectors.
    type: list
    elements: string
    default: []
  gateways:
    description: Gateways, dicts with C(name), C(address), C(id) and C(networks) (the subnets behind them).
    type: list
    elements: dict
    default: []
  revoked:
    description: Names of hosts whose certificates are revoked (trap only, expected to have no SA).
    type: list
    elements: string
    default: []
  controller_addresses:
    description: Addresses the controller connects from; SSH from them gets a pass policy when a tunnel would
      capture it.
    type: list
    elements: string
    default: []
  bypass_networks:
    description: Networks that never enter a tunnel.
    type: list
    elements: string
    default: []
  ssh_port:
    description: The SSH port the controller connects to.
    type: integer
    default: 22
  prefix:
    description: Prefix of connection names.
    type: string
    default: gf
author:
  - gpufabric.core contributors
"""

EXAMPLES = r"""
- name: Build this host's connections
  ansible.builtin.set_fact:
    mesh: >-
      {{ inventory_hostname | gpufabric.core.swanctl_mesh(
           nodes=[{'name': 'node1', 'address': '10.0.0.1', 'id': 'node1'},
                  {'name': 'node2', 'address': '10.0.0.2', 'id': 'node2'}],
           vlan_subnets=['10.40.0.0/24']) }}
"""

RETURN = r"""
_value:
  description: This host's part of the mesh.
  type: dict
  contains:
    local:
      description: The host's name.
      type: str
      sample: node1
    local_ts:
      description: The networks this host protects.
      type: list
      elements: str
      sample: [10.0.0.1/32]
    connections:
      description: One swanctl connection per peer.
      type: list
      elements: dict
      sample:
        - name: gf-node2
          peer: node2
          kind: host
          revoked: false
          local_addrs: [10.0.0.1]
          remote_addrs: [10.0.0.2]
          local_id: node1
          remote_id: node2
          local_ts: [10.0.0.1/32]
          remote_ts: [10.0.0.2/32]
          start_action: trap|start
          initiator: true
    shunts:
      description: Pass policies (name, local_ts, remote_ts).
      type: list
      elements: dict
      sample:
        - name: gf-bypass-ssh-10_0_0_2
          local_ts: ["10.0.0.1/32[tcp/22]"]
          remote_ts: [10.0.0.2/32]
    expected:
      description: The SAs to verify, as M(gpufabric.core.swanctl_verify) takes them.
      type: list
      elements: dict
      sample:
        - {peer: node2, ike: gf-node2, child: gf-node2, remote_host: 10.0.0.2, initiator: true, absent: false}
"""


def swanctl_mesh_filter(local_name, nodes, vlan_subnets=None, gateways=None, revoked=None,
                        controller_addresses=None, bypass_networks=None, ssh_port=22, prefix="gf"):
    return build_mesh(local_name, nodes, vlan_subnets=vlan_subnets, gateways=gateways, revoked=revoked,
                      controller_addresses=controller_addresses, bypass_networks=bypass_networks,
                      ssh_port=ssh_port, prefix=prefix)


class FilterModule:
    """The swanctl_mesh filter."""

    def filters(self):
        return {"swanctl_mesh": raising_filter_error("swanctl_mesh", swanctl_mesh_filter, (MeshError, KeyError, TypeError))}
