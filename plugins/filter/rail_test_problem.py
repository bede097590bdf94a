# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from collections.abc import Mapping

from ansible_collections.gpufabric.core.plugins.module_utils.verify.bandwidth import (
    RAILS_FROM,
    BandwidthError,
    rdma_unavailable_reason,
)
from ansible_collections.gpufabric.core.plugins.plugin_utils.filter_errors import raising_filter_error

DOCUMENTATION = r"""
name: rail_test_problem
short_description: Say why a host's rails cannot be swept with perftest, or nothing when they can
version_added: 0.1.0
description:
  - Reads the rails that M(gpufabric.core.topology_facts) resolved in a host's C(gpufabric_topology) (the
    inventory's C(gpufabric_rail_interfaces), else GPU I(i) and its nearest RDMA NIC, else, on a host without GPUs,
    its RDMA devices with an ACTIVE port) and returns why none of them can be tested, the same sentence the
    bandwidth modules give, or V(null) when the host has RDMA rails to test.
  - The C(gpufabric.core.verify) role plans its sweep with it, so that hosts without rails are reported with the
    reason instead of being paired.
positional: rails_from
options:
  _input:
    description: The host's C(gpufabric_topology); an empty mapping means the host has no facts.
    type: dict
    required: true
  rails_from:
    description:
      - V(gpus) takes the rails from the inventory or the GPUs; V(rdma_devices) also those of a host without GPUs
        (C(verify_rails_from)).
    type: str
    default: gpus
    choices: [gpus, rdma_devices]
author:
  - gpufabric.core contributors
"""

EXAMPLES = r"""
- name: Hosts whose rails cannot be tested, with the reason
  ansible.builtin.debug:
    msg: "{{ dict(ansible_play_hosts | zip(ansible_play_hosts | map('extract', hostvars)
             | map(attribute='gpufabric_topology', default={}) | map('gpufabric.core.rail_test_problem'))) }}"
"""

RETURN = r"""
_value:
  description: Why the host's rails cannot be swept, or V(null) when they can.
  type: str
  sample: "no RDMA device on this host (no RDMA device: /sys/class/infiniband does not exist (no RDMA driver loaded))"
"""


def rail_test_problem(topology, rails_from="gpus"):
    if rails_from not in RAILS_FROM:
        raise BandwidthError("rails_from must be one of %s, got %r" % (", ".join(RAILS_FROM), rails_from))
    return rdma_unavailable_reason(dict(topology) if isinstance(topology, Mapping) else topology, rails_from)


class FilterModule:
    def filters(self):
        return {"rail_test_problem": raising_filter_error("rail_test_problem", rail_test_problem, BandwidthError)}
