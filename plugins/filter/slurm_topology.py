# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: slurm_topology
short_description: Slurm topology (tree per rail, block) and a leaf-ordered host list from the fabric map
version_added: 0.1.0
author: gpufabric.core contributors
description:
  - Turns the fabric map of P(gpufabric.core.fabric_map#filter) into Slurm's network topology, so that Slurm places the
    ranks of a job under as few switches as possible.
  - "C(topology/tree): one C(SwitchName) per leaf with the nodes whose rail reaches it, as LLDP saw it, and a spine
    level above the leaves when O(spines) or LLDP on the leaves' uplinks (O(switch_neighbors)) names it. A
    rail-optimised fabric has one tree per rail and Slurm reads one, so the tree of every rail is built and the
    chosen O(rail)'s is the result."
  - "C(topology/block) (Slurm 23.11 and later): blocks from O(blocks), an NVLink domain or a rack per host, with
    O(block_sizes) checked as slurmctld checks them. Given as C(topology.conf) and as C(topology.yaml) (Slurm 25.05
    and later)."
  - "Hosts the map could not place are left out and named with their reasons, never guessed: hosts without facts,
    miscabled hosts (a rail on another switch than its peers'), a rail without LLDP neighbour or down, a switch port
    shared with another host, a rail whose peer group has no majority switch."
  - "The second output is the host list ordered by leaf and rail, for launchers that take one (C(mpirun
    --hostfile), C(SLURM_HOSTFILE) with C(--distribution=arbitrary)): hosts of one leaf stay together."
  - A pure function of its input, run on the controller.
positional: rail
options:
  _input:
    description: The fabric map, as P(gpufabric.core.fabric_map#filter) returns it (and playbooks/discover.yml writes it).
    type: dict
    required: true
  rail:
    description: The rail whose tree is the result. Default the lowest rail of the map.
    type: int
  spines:
    description:
      - Mapping of leaf switch (its LLDP system name, as in the map) to the spine above it, or a list of spines.
      - Wins over O(switch_neighbors) for that leaf. Leaves that reach the same set of spines share one Slurm switch
        above them.
    type: dict
    default: {}
  switch_neighbors:
    description:
      - Mapping of leaf switch to its LLDP neighbours, as P(gpufabric.core.parse_lldp#filter) returns them from the
        leaf's C(lldpctl -f json0) (switches running lldpd, such as SONiC or Cumulus).
      - A neighbour on a port that no host of the map reaches, that is neither a host nor a leaf of the map, is a
        spine.
    type: dict
    default: {}
  node_names:
    description: Mapping of host name to its Slurm C(NodeName), for hosts whose names differ. Default the host name.
    type: dict
    default: {}
  blocks:
    description: Mapping of host name to its block (NVLink domain or rack) for C(topology/block).
    type: dict
    default: {}
  block_sizes:
    description:
      - C(BlockSizes) for C(topology/block), in nodes. The first is the base block; every further size must be the
        base times a power of two, and every block must have at least the base's node count.
      - Without it, slurmctld takes the first block's node count as the base; that is checked too.
    type: list
    elements: int
notes:
  - "Slurm only places a job inside one tree: a rail whose leaves have no common switch above them gets a warning
    C(tree_not_connected). Slurm nodes missing from the tree (those left out) get no multi-node jobs with other
    nodes; drain them until the map places them."
  - Switch names that Slurm's hostlist parser would misread (a chassis ID MAC) have their other characters turned
    into C(-); C(switch_names) lists such renames.
seealso:
  - plugin: gpufabric.core.fabric_map
    plugin_type: filter
"""

EXAMPLES = r"""
- name: Slurm topology of rail 0, with the spine named in the inventory
  ansible.builtin.set_fact:
    slurm: "{{ fabric_map | gpufabric.core.slurm_topology(rail=0, spines={'leaf-a': 'spine-1', 'leaf-b': 'spine-1'}) }}"

- name: Write topology.conf
  ansible.builtin.copy:
    content: "{{ slurm.topology_conf }}"
    dest: /etc/slurm/topology.conf
    mode: "0644"

- name: Name the hosts left out
  ansible.builtin.debug:
    msg: "{{ slurm.excluded | map(attribute='node') | join(', ') }}"

- name: Block topology from NVLink domains
  ansible.builtin.set_fact:
    slurm_blocks: >-
      {{ (fabric_map | gpufabric.core.slurm_topology(blocks={'gb1': 'nvl1', 'gb2': 'nvl1', 'gb3': 'nvl2',
      'gb4': 'nvl2'}, block_sizes=[2, 4])).block.topology_conf }}
"""

RETURN = r"""
_value:
  description:
    - "C(plugin) topology/tree; C(rail) the chosen rail; C(switches) its switches; C(topology_conf) its topology.conf; C(hostlist) its hosts
      ordered by leaf (then their leaves on the other rails, then leaf port) and C(hostfile) the same one per line;
      C(excluded) the hosts left out (C(host), C(node), C(reasons)); C(rails) the same per rail, with C(switches)
      (C(name), C(lldp_name), C(level) 0 leaf or 1 spine, C(nodes), C(switches)) and C(top_switches); C(switch_names) Slurm name to
      LLDP name where they differ; C(findings) (C(severity), C(kind), C(host), C(rail), C(message))."
    - "C(block): null without O(blocks), else C(blocks) (C(name), C(nodes)), C(block_sizes), C(topology_conf) and
      C(topology_yaml)."
  type: dict
  sample:
    plugin: topology/tree
    rail: 0
    topology_conf: "SwitchName=leaf-a Nodes=node[01-03]\n"
    hostlist: [node01, node02, node03]
    hostfile: "node01\nnode02\nnode03\n"
    excluded:
      - host: node04
        node: node04
        reasons: ["miscabled: node04 rail 0 (eth1) reaches leaf-b port swp4, but rail 0 of its peers ..."]
    block: null
"""

from collections.abc import Mapping

from jinja2 import Undefined

from ansible_collections.gpufabric.core.plugins.module_utils.fabric.slurm_topology import (
    SlurmTopologyError,
    build_slurm_topology,
)
from ansible_collections.gpufabric.core.plugins.plugin_utils.filter_errors import raising_filter_error


def _plain(value):
    """Ansible's lazy mappings and lists as plain ones; an undefined value as None."""
    if isinstance(value, Undefined):
        return None
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


def slurm_topology(fabric_map, rail=None, spines=None, switch_neighbors=None, node_names=None, blocks=None,
                   block_sizes=None):
    if isinstance(rail, str) and rail.strip().isdigit():
        rail = int(rail)  # -e rail=0 arrives as a string
    return build_slurm_topology(_plain(fabric_map), rail=rail, spines=_plain(spines),
                                switch_neighbors=_plain(switch_neighbors), node_names=_plain(node_names),
                                blocks=_plain(blocks) or None, block_sizes=_plain(block_sizes) or None)


class FilterModule:
    def filters(self):
        return {"slurm_topology": raising_filter_error("slurm_topology", slurm_topology, SlurmTopologyError)}
