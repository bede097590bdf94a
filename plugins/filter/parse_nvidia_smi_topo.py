# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible_collections.gpufabric.core.plugins.module_utils.parsers.nvidia_smi_topo import parse_nvidia_smi_topo
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.common import ParseError
from ansible_collections.gpufabric.core.plugins.plugin_utils.filter_errors import raising_filter_error

DOCUMENTATION = r"""
name: parse_nvidia_smi_topo
short_description: Parse nvidia-smi topo -m, the GPU and NIC link matrix
version_added: 0.1.0
description:
  - Parses the output of C(nvidia-smi topo -m) into GPUs, NICs, the link matrix and, for every GPU, the NICs
    it reaches over its best PCIe path, ranked C(PIX) < C(PXB) < C(PHB) < C(NODE) < C(SYS) (C(NV#) links join
    GPUs and never count as a NIC path).
  - Reads the current layout (C(NIC0) ... columns resolved through the C(NIC Legend)) and the older one that
    names RDMA devices (C(mlx5_0) ...) in the header; ANSI escapes, TAB or space alignment and extra
    trailing columns are accepted. Without a legend, NICs keep their C(NIC#) name and C(device) is null.
  - An empty C(CPU Affinity) cell (a Slurm cgroup granting no CPU of the GPU's NUMA node) is read as empty and
    the next cells keep their columns. Link cells printed without a separator (C(PXBNODE), C(SYSSYS) on hosts
    with more than ten NICs) are split when the row is short by exactly that many cells and the split is
    unambiguous; a row that cannot be read that way raises an error naming its line.
  - C(No devices were found) gives empty lists and says so in C(errors).
  - Text without a header row naming C(GPU0) or with a malformed matrix raises an error naming the command
    and the problem.
options:
  _input:
    description: The output of C(nvidia-smi topo -m).
    type: string
    required: true
author:
  - gpufabric.core contributors
"""

EXAMPLES = r"""
- name: Read the topology matrix
  ansible.builtin.command: nvidia-smi topo -m
  register: topo_raw
  changed_when: false
  check_mode: false

- name: Show the nearest NIC of every GPU
  ansible.builtin.debug:
    msg: "{{ (topo_raw.stdout | gpufabric.core.parse_nvidia_smi_topo).nearest_nics }}"
  # -> {"GPU0": ["mlx5_0"], "GPU1": ["mlx5_3"], ...}
"""

RETURN = r"""
_value:
  description: The parsed matrix.
  type: dict
  contains:
    gpus:
      description:
        - One entry per GPU row.
        - C(numa_affinity_nodes) lists the nodes of the NUMA Affinity cell; Grace hosts (GH200, GB200, GB300) print
          several (C(0,3-9,11-17)). C(numa_affinity) is the first of them, the node of the CPUs the GPU is attached
          to; the others are the GPU's memory partitions, which have no CPUs.
        - C(gpu_numa_id) is the NUMA node of the GPU's own memory (GPU NUMA ID), null where that memory is no NUMA node.
      type: list
      elements: dict
      sample: [{name: GPU0, index: 0, cpu_affinity: "0-71", numa_affinity: 0, numa_affinity_nodes: [0, 3, 4, 5, 6, 7, 8, 9],
                gpu_numa_id: 2}]
    nics:
      description: One entry per NIC column; C(device) is the RDMA device name, null when no legend gives it.
      type: list
      elements: dict
      sample: [{name: NIC0, device: mlx5_0}, {name: NIC8, device: mlx5_bond_0}]
    matrix:
      description: Link code between every row and column device (C(X) on the diagonal).
      type: dict
      sample: {GPU0: {GPU0: X, GPU1: NV8, NIC0: PIX}}
    nearest_nics:
      description: For each GPU, the device names (or C(NIC#) names without legend) of the NICs with its best link.
      type: dict
      sample: {GPU0: [mlx5_0], GPU1: [mlx5_3]}
    nearest_link:
      description: For each GPU, the link code to its nearest NICs (C(SOC)/C(CPU) of old drivers read as C(SYS)/C(PHB)); null without NICs.
      type: dict
      sample: {GPU0: PIX}
    nvlinks:
      description: For each GPU, the GPUs it reaches over NVLink and the number of bonded links.
      type: dict
      sample: {GPU0: {GPU1: 8}}
    attribute_columns:
      description: The header's columns after the matrix (CPU Affinity, NUMA Affinity ...).
      type: list
      elements: str
      sample: [CPU Affinity, NUMA Affinity, GPU NUMA ID]
    legend_found:
      description: False when NICs are named C(NIC#) but no C(NIC Legend) maps them to devices.
      type: bool
      sample: true
    errors:
      description: Why the output holds no GPU (C(No devices were found)); empty when a matrix was read.
      type: list
      elements: str
      sample: []
"""


class FilterModule:
    """The parse_nvidia_smi_topo filter."""

    def filters(self):
        return {"parse_nvidia_smi_topo": raising_filter_error("parse_nvidia_smi_topo", parse_nvidia_smi_topo, ParseError)}
