# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: fabric_map
short_description: Build the fleet fabric map from every host's gpufabric_topology
version_added: 0.1.0
author: gpufabric.core contributors
description:
  - Joins the C(gpufabric_topology) facts of many hosts (from M(gpufabric.core.topology_facts)) into one map of
    the fabric, for every rail, which leaf switch and switch port each host's NIC reaches through LLDP.
  - "Reports findings across hosts: rail misalignment (rail I(i) of a host reaches another switch than rail
    I(i) of most of its peer group), link rate and MTU mismatches per rail, rail ports down, a switch port claimed
    by two hosts, and hosts without facts."
  - "A host's rails are the C(rails) of its facts, resolved once by M(gpufabric.core.topology_facts): the
    inventory's C(gpufabric_rail_interfaces), else GPU I(i) and its nearest RDMA NIC, else (a host without GPUs)
    its RDMA devices with an ACTIVE port. The map derives none of its own."
  - Peers are the hosts of one O(peer_groups) group (the inventory's C(gpufabric_peer_group), hosts cabled alike),
    so that hosts of different scalable units or models are not compared with each other. Hosts with no group
    are in group C(all). Whether the hosts of a group give NCCL the same NICs is checked once, by the
    C(gpufabric.core.nccl) role before it writes (P(gpufabric.core.nccl_hca_consistency#filter)), not here.
  - A pure function of its input, run on the controller; its run time grows linearly with the number of hosts.
positional: peer_groups, rail_interfaces
options:
  _input:
    description:
      - Mapping of inventory host name to that host's C(gpufabric_topology) facts.
      - A value of V(null) or an empty mapping means no facts were gathered (the host was unreachable or
        topology_facts failed); the host is listed with an error finding.
    type: dict
    required: true
  peer_groups:
    description:
      - Mapping of host name to the name of its peer group. Hosts of one group are expected to be cabled alike.
    type: dict
    default: {}
  rail_interfaces:
    description:
      - Deprecated, removed in the next release - give C(gpufabric_rail_interfaces) to
        M(gpufabric.core.topology_facts) (O(gpufabric.core.topology_facts#module:rail_interfaces)) instead, as
        C(playbooks/discover.yml) does, so that every consumer reads the same rails.
      - Mapping of host name to its rail interfaces, a list whose item I(i) is the netdev of rail I(i), or a
        mapping of rail index to netdev; the host's rails are resolved again from its facts with it, by the same
        function topology_facts runs.
    type: dict
    default: {}
notes:
  - "A host without rails is an C(info) finding (C(no_rails)); the facts' C(rail_source) is shown per host."
  - "A rail's switch is the LLDP system name of the neighbour on the rail's netdev (its chassis ID when the switch
    sends no name); its switch port is the neighbour's port ID, or its port description when the port ID is a MAC
    address."
  - "Alignment: for each peer group and rail, the switch most hosts reach is expected; a host whose rail reaches
    another one is C(miscabled) (error C(rail_misaligned)). When two switches tie, nobody is blamed and a warning
    C(rail_ambiguous) is given. Put the hosts of each scalable unit in their own peer group, since rail I(i) of
    different units goes to different leaves by design."
  - "InfiniBand ports do not speak LLDP: IB rails have no switch here and are reported once as an C(info); use
    ibnetdiscover for the IB fabric. Rate, MTU and port-state checks still apply to them."
  - "Finding kinds of scope C(fleet): C(rail_misaligned), C(rail_ambiguous), C(rate_mismatch), C(mtu_mismatch)
    (netdev MTU or RDMA active MTU), C(port_down), C(no_neighbor), C(no_lldp), C(switch_port_conflict), C(rail_interface_missing), C(no_rails), C(no_facts),
    C(infiniband_rails)."
seealso:
  - plugin: gpufabric.core.fabric_map_html
    plugin_type: filter
  - module: gpufabric.core.topology_facts
"""

EXAMPLES = r"""
- name: Build the fabric map of the hosts of this play
  ansible.builtin.set_fact:
    fabric_map: >-
      {{ topologies | gpufabric.core.fabric_map(peer_groups=groups_by_host) }}
  vars:
    topologies: "{{ dict(ansible_play_hosts | zip(ansible_play_hosts | map('extract', hostvars, 'gpufabric_topology'))) }}"
    groups_by_host: {node1: su1, node2: su1, node3: su1}
  run_once: true

- name: Fail on miscabled hosts
  ansible.builtin.assert:
    that: fabric_map.summary.miscabled_hosts | length == 0
    fail_msg: "Miscabled: {{ fabric_map.summary.miscabled_hosts | join(', ') }}"
  run_once: true
"""

RETURN = r"""
_value:
  description:
    - "The fabric map: C(schema_version); C(summary) (counts, C(miscabled_hosts), C(hosts_by_status),
      C(rail_ports_down));
      C(hosts) (per host: C(peer_group), C(rail_source) inventory, gpu, rdma_devices or none, C(rdma_devices), C(rails) with
      C(switch), C(switch_port), C(expected_switch), C(aligned), C(state), C(rate_gbps), C(mtu), C(status),
      C(miscabled), C(routed_uplinks)); C(rails) (per rail and group: expected switch, rate and MTU, switch
      counts); C(switches) (ports with the host and rail reaching them); C(findings) (C(severity), C(scope),
      C(kind), C(host), C(group), C(rail), C(message)), errors first; C(leaves) (the routed view)."
    - "Routed uplinks, beside the LLDP view: each host's C(routed_uplinks) are its BGP sessions to its leaves
      from the C(routing) section of its facts (C(peer), C(interface) for unnumbered sessions, C(unnumbered),
      C(leaf), C(remote_as), C(state), C(established)); C(leaves) maps each leaf to its C(remote_as) numbers, the
      number of C(hosts) peering with it, how many sessions are C(established), and the C(sessions) (C(host),
      C(peer), C(interface), C(state), C(established)); the summary counts C(routed_hosts), C(routed_uplinks),
      C(routed_uplinks_down) and C(leaves). A session that is not Established is the host's own
      C(bgp_session_down) finding."
    - Findings of scope C(host) are those topology_facts reported on the host itself, with their own C(kind);
      those of scope C(fleet) come from comparing hosts.
  type: dict
  sample:
    schema_version: 1
    summary:
      hosts: 3
      hosts_with_facts: 3
      rails: 2
      switches: 2
      findings: {info: 0, warning: 0, error: 2}
      miscabled_hosts: [node3]
      hosts_by_status: {ok: 2, error: 1}
      rail_ports_down: []
      routed_hosts: 1
      routed_uplinks: 2
      routed_uplinks_down: 0
      leaves: 2
    leaves:
      leaf-a1:
        remote_as: [65101]
        hosts: 1
        established: 1
        sessions: [{host: node1, peer: 10.1.0.0, interface: null, state: Established, established: true}]
    findings:
      - severity: error
        scope: fleet
        kind: rail_misaligned
        host: node3
        group: all
        rail: 0
        message: "node3 rail 0 (eth1) reaches leaf-b port swp3, but rail 0 of its peers in group all reaches
          leaf-a (leaf-a on 2, leaf-b on 1)"
"""

from collections.abc import Mapping

from jinja2 import Undefined

from ansible_collections.gpufabric.core.plugins.module_utils.fabric.map import FabricMapError, build_fabric_map
from ansible_collections.gpufabric.core.plugins.plugin_utils.filter_errors import raising_filter_error


def _plain(value):
    """Turn Ansible's lazy mappings (hostvars, templated dicts) into the plain dicts the builder checks for."""
    if isinstance(value, Undefined):
        return None
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


def fabric_map(topologies, peer_groups=None, rail_interfaces=None):
    if isinstance(topologies, Mapping):
        # An empty mapping is what Jinja's map(attribute=..., default={}) gives for a host without facts.
        # The facts are read as they are (Ansible's lazy dicts are dicts): copying them first costs more than
        # building the map.
        topologies = {host: (facts if isinstance(facts, Mapping) and facts else None)
                      for host, facts in topologies.items()}
    return build_fabric_map(topologies, peer_groups=_plain(peer_groups) or None,
                            rail_interfaces=_plain(rail_interfaces) or None)


class FilterModule:
    def filters(self):
        return {"fabric_map": raising_filter_error("fabric_map", fabric_map, FabricMapError)}
