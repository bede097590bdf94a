# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: path_mtu_targets
short_description: The path MTU probes of one verify pair, per rail, seen from the client
version_added: "0.1.0"
description:
  - With iperf3 (the management network, the lab), one probe on rail C(tcp) from the default route's interface to
    the server's test address; with a perftest tool, one per rail both hosts have, from the client's rail netdev to
    the server's IPv4 address on its rail netdev (a rail without one is listed in C(skipped)).
  - The MTUs are the interfaces' configured ones from the facts (C(gpufabric_topology) rails, else the interface
    facts). The result feeds M(gpufabric.core.path_mtu).
options:
  _input:
    description: The server's inventory name.
    type: str
    required: true
  client:
    description: The client's inventory name.
    type: str
    required: true
  client_facts:
    description: The client's C(ansible_facts).
    type: dict
    required: true
  server_facts:
    description: The server's C(ansible_facts).
    type: dict
    required: true
  server_address:
    description: The server's C(verify_address), when set.
    type: str
  perftest:
    description: Whether the sweep tests RDMA rails (a perftest tool) rather than iperf3.
    type: bool
    default: false
  rails:
    description: Rail numbers to probe; empty probes every rail both hosts have.
    type: list
    elements: int
author:
  - gpufabric.core contributors (@gpufabric)
"""

EXAMPLES = r"""
- name: Probe the path MTU to this round's server
  gpufabric.core.path_mtu:
    targets: "{{ (server | gpufabric.core.path_mtu_targets(inventory_hostname, ansible_facts,
                                                             hostvars[server].ansible_facts)).targets }}"
"""

RETURN = r"""
_value:
  description: C(targets), the probes, and C(skipped), a sentence per rail that cannot be probed.
  type: dict
  sample: {targets: [{client: node1, server: node2, rail: tcp, interface: eth0, address: 10.0.0.2, mtu: 9000,
                      peer_interface: eth0, peer_mtu: 9000}], skipped: []}
"""

from ansible_collections.gpufabric.core.plugins.module_utils.verify.path_mtu import targets


def path_mtu_targets(server, client, client_facts, server_facts, server_address=None, perftest=False, rails=None):
    found, skipped = targets(client, server, client_facts, server_facts, server_address or None, bool(perftest),
                             rails or None)
    return {"targets": found, "skipped": skipped}


class FilterModule:
    """The path_mtu_targets filter."""

    def filters(self):
        return {"path_mtu_targets": path_mtu_targets}
