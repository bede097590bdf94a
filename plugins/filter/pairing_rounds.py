# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible_collections.gpufabric.core.plugins.module_utils.verify.pairing import PairingError, pairing_rounds
from ansible_collections.gpufabric.core.plugins.plugin_utils.filter_errors import raising_filter_error

DOCUMENTATION = r"""
name: pairing_rounds
short_description: Plan rounds of concurrent host-pair bandwidth tests
version_added: 0.1.0
description:
  - Returns a list of rounds; each round is a list of disjoint pairs C([first, second]) that can run their
    point-to-point test (perftest, iperf3) at the same time, since no host appears twice in a round.
    The next round starts when the slowest pair of the round ends.
  - In mode C(all) every unordered pair is tested exactly once, planned with the circle method (round-robin
    tournament) in N-1 rounds for an even number of hosts and N rounds for an odd number, the minimum
    possible because a NIC runs one test at a time.
  - In mode C(quick) every host is tested in every round (one host idles when N is odd) in at most
    ceil(log2 N) rounds. Each round prefers, in this order, pairs not tested in an earlier round, pairs
    whose hosts are in different racks, then behind different switches, then pairs joining hosts not yet
    linked through earlier rounds, so that a slow host shows up against several partners and the
    uplinks between racks are exercised.
  - The orientation of each pair alternates so that every host comes first in about half of its pairs;
    run the client on the first host and the server on the second to exercise both directions of every NIC.
  - The plan is deterministic, a function of the order of the host list and of O(locality) only.
options:
  _input:
    description: Host names, unique. Fewer than two hosts give no rounds.
    type: list
    elements: string
    required: true
  mode:
    description: C(all) for every pair once, C(quick) for a short sweep testing every host each round.
    type: string
    default: all
    choices: [all, quick]
  locality:
    description:
      - Where each host sits, used by mode C(quick) only; hosts missing from it, or with an empty rack or
        switch, have an unknown locality and are never counted as crossing.
      - A dict of host name to either a dict with optional keys C(rack) and C(switch) (other keys are
        ignored) or a two-element list C([rack, switch]).
      - The simplest source is a per-host inventory variable, for example C(gpufabric_locality) holding the keys
        C(rack) and C(switch), gathered into one dict with the C(extract) filter as the examples show.
      - The C(switch) of a host can also come from its discovered topology,
        C(gpufabric_topology.rails[0].switch), the LLDP neighbour of its first rail.
    type: dict
author:
  - gpufabric.core contributors
"""

EXAMPLES = r"""
- name: Plan a full sweep, every pair once
  ansible.builtin.set_fact:
    sweep_rounds: "{{ groups['gpu'] | gpufabric.core.pairing_rounds('all') }}"
  # 4 hosts a b c d -> [[[a, d], [b, c]], [[c, a], [d, b]], [[a, b], [c, d]]]

# Inventory, per host: gpufabric_locality: {rack: r12, switch: leaf-r12-a}
- name: Plan a quick sweep crossing racks, locality from a per-host variable
  vars:
    gpu_hosts: "{{ groups['gpu'] }}"
    locality: "{{ dict(gpu_hosts | zip(gpu_hosts | map('extract', hostvars, 'gpufabric_locality'))) }}"
  ansible.builtin.set_fact:
    sweep_rounds: "{{ gpu_hosts | gpufabric.core.pairing_rounds('quick', locality) }}"

- name: Same, with the locality given inline as [rack, switch]
  ansible.builtin.debug:
    msg: "{{ ['n1', 'n2', 'n3', 'n4'] | gpufabric.core.pairing_rounds('quick', {'n1': ['r1', 's1'], 'n2': ['r1', 's1'],
             'n3': ['r2', 's2'], 'n4': ['r2', 's2']}) }}"
  # -> [[['n3', 'n1'], ['n4', 'n2']], [['n1', 'n4'], ['n2', 'n3']]]: every pair crosses racks
"""

RETURN = r"""
_value:
  description: Rounds in the order to run them; each round is a list of pairs C([first, second]).
  type: list
  elements: list
  sample: [[["n3", "n1"], ["n4", "n2"]], [["n1", "n4"], ["n2", "n3"]]]
"""


class FilterModule:
    """The pairing_rounds filter."""

    def filters(self):
        return {"pairing_rounds": raising_filter_error("pairing_rounds", pairing_rounds, PairingError)}
