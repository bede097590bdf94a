# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: nccl_config
short_description: Derive NCCL's configuration from gpufabric_topology and merge the user's overrides
version_added: "0.1.0"
description:
  - Derives NCCL variables from one host's topology facts (C(docs/topology.md)) -
    C(NCCL_IB_HCA) in exact-match syntax (C(=mlx5_0:1,mlx5_3:1), so that C(mlx5_1) does not also select
    C(mlx5_10)) from the ACTIVE ports of each GPU's nearest RDMA NICs, keeping one link layer;
    C(NCCL_SOCKET_IFNAME) (C(=eth0)) for the bootstrap network; C(NCCL_IB_GID_INDEX) for RoCE v2 from the GID
    table; C(NCCL_IB_DISABLE=1) on hosts without RDMA; C(NCCL_NET_GDR_LEVEL) from the farthest GPU-NIC link in use;
    C(NCCL_IB_QPS_PER_CONNECTION) and C(NCCL_IB_SPLIT_DATA_ON_QPS); optional C(NCCL_ALGO) hints by cluster size;
    C(NCCL_TOPO_FILE) when a topology file is written.
  - Merges O(overrides) over the derived values (C(null) drops a derived variable) after checking them - a name
    NCCL does not define is refused with the closest valid name, debugging-only variables are refused unless
    O(allow_debug=true), renamed variables name their successor, values must fit an unquoted config line.
  - Never fails on what it finds; problems are returned in RV(_value.problems) so that the caller can report all of
    them at once before writing anything.
positional: _input
options:
  _input:
    description: The host's C(gpufabric_topology) fact.
    type: dict
    required: true
  overrides:
    description: NCCL variables set by the user, merged over the derived ones.
    type: dict
    default: {}
  options:
    description:
      - Derivation settings - C(socket_ifname) (list of interface names), C(default_interface),
        C(gdr_level_max) (LOC, PIX, PXB, PHB or SYS), C(roce_qps_per_connection), C(ib_qps_per_connection),
        C(roce_traffic_class), C(algorithm_hints), C(cluster_nodes), C(algorithm_tiers), C(topology_file).
    type: dict
    default: {}
  allow_debug:
    description: Accept debugging-only variables (C(NCCL_DEBUG_SUBSYS), C(NCCL_DEBUG_FILE), C(NCCL_DEBUG=INFO) ...).
    type: bool
    default: false
author:
  - gpufabric.core contributors
"""

EXAMPLES = r"""
- name: Derive NCCL's settings for this host
  ansible.builtin.set_fact:
    nccl_derived: >-
      {{ ansible_facts.gpufabric_topology | gpufabric.core.nccl_config(
           overrides={'NCCL_IB_TIMEOUT': 22},
           options={'default_interface': ansible_facts.default_ipv4.interface}) }}

- name: Refuse problems before writing anything
  ansible.builtin.assert:
    that: nccl_derived.problems | length == 0
    fail_msg: "{{ nccl_derived.problems | join('; ') }}"
"""

RETURN = r"""
_value:
  description: The configuration.
  type: dict
  contains:
    variables:
      description: The variables to write, sorted by name, every value a string.
      type: dict
      sample: {NCCL_IB_HCA: "=mlx5_0:1,mlx5_3:1", NCCL_NET_GDR_LEVEL: PIX, NCCL_SOCKET_IFNAME: "=eth0"}
    derived:
      description: The derived variables before the overrides.
      type: dict
    hca:
      description: The GPU-affine RDMA ports in NCCL_IB_HCA, in GPU order.
      type: list
      elements: str
      sample: ["mlx5_0:1", "mlx5_3:1"]
    link_layer:
      description: C(InfiniBand), C(Ethernet) (RoCE) or null without RDMA.
      type: str
    findings:
      description: What the derivation noticed, each with C(severity) (info, warning, error) and C(message).
      type: list
      elements: dict
    problems:
      description: Why nothing may be written (refused variables, a derivation error the overrides do not settle).
      type: list
      elements: str
      sample: ["NCCL_IB_HAC: not an NCCL variable; did you mean NCCL_IB_HCA?"]
"""

from ansible_collections.gpufabric.core.plugins.module_utils.nccl.config import NcclConfigError, nccl_config
from ansible_collections.gpufabric.core.plugins.plugin_utils.filter_errors import raising_filter_error


def nccl_config_filter(topology, overrides=None, options=None, allow_debug=False):
    return nccl_config(topology, overrides=overrides, options=options, allow_debug=allow_debug)


class FilterModule:
    def filters(self):
        return {"nccl_config": raising_filter_error("nccl_config", nccl_config_filter, NcclConfigError)}
