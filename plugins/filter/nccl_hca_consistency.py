# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: nccl_hca_consistency
short_description: Report hosts of one peer group whose NCCL NIC selections differ
version_added: "0.1.0"
description:
  - Hosts that run one job together must use the same RDMA ports, or collectives between them fall back to a
    slower path or hang. This filter groups the hosts by their peer group (the inventory's C(gpufabric_peer_group),
    the hosts cabled alike) and reports each group whose hosts differ in C(NCCL_IB_HCA) (compared as sets) or in
    C(NCCL_IB_DISABLE). It is the collection's one check for that hang; the C(gpufabric.core.nccl) role runs it
    before it writes.
  - Hosts without a group, or without a configuration yet, are not compared.
positional: _input
options:
  _input:
    description: Host names to compare (usually C(ansible_play_hosts)).
    type: list
    elements: str
    required: true
  hostvars:
    description: C(hostvars).
    type: dict
    required: true
  config_var:
    description: Name of the host variable holding the result of P(gpufabric.core.nccl_config#filter).
    type: str
    default: __nccl_config
  group_var:
    description:
      - Name of the host variable naming the host's peer group.
      - The default was C(nccl_consistency_group), the nccl role's own grouping, now deprecated.
    type: str
    default: gpufabric_peer_group
  group:
    description: Report only this group (each host checking its own group); empty reports every group.
    type: str
    default: ""
author:
  - gpufabric.core contributors
"""

EXAMPLES = r"""
- name: Compare this host's NIC selection with the other hosts of its group
  ansible.builtin.assert:
    that: __problems | length == 0
    fail_msg: "{{ __problems | join('; ') }}"
  vars:
    __problems: "{{ ansible_play_hosts | gpufabric.core.nccl_hca_consistency(hostvars, group=gpufabric_peer_group) }}"
"""

RETURN = r"""
_value:
  description: One sentence per group whose hosts differ; empty when all agree.
  type: list
  elements: str
  sample:
    - "consistency group h100: 2 different NIC selections, collectives between these hosts would fall back or hang:
      NCCL_IB_HCA=mlx5_0:1,mlx5_1:1 on gpu01; NCCL_IB_HCA=mlx5_0:1 on gpu02"
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufabric.core.plugins.module_utils.nccl.config import hca_consistency


def nccl_hca_consistency(hosts, hostvars, config_var="__nccl_config", group_var="gpufabric_peer_group", group=""):
    if not isinstance(hosts, (list, tuple)):
        raise AnsibleFilterError("nccl_hca_consistency: expected a list of host names, got %s" % type(hosts).__name__)
    entries = []
    for host in hosts:
        host_vars = hostvars[host]
        config = host_vars.get(config_var) if hasattr(host_vars, "get") else None
        if not isinstance(config, dict) or "variables" not in config:
            continue
        member_of = host_vars.get(group_var)
        if group and member_of != group:
            continue
        entries.append({"host": host, "group": member_of, "variables": config["variables"]})
    return hca_consistency(entries)


class FilterModule:
    def filters(self):
        return {"nccl_hca_consistency": nccl_hca_consistency}
