# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: nccl_topology_xml
short_description: Write an NCCL topology file (NCCL_TOPO_FILE) from gpufabric_topology
version_added: "0.1.0"
description:
  - Returns the text of an NCCL topology XML file that places each GPU and each NIC of the HCA list under its NUMA
    node with its PCI bus id, GPU index and RDMA device name. NCCL loads the file before its own detection and
    completes the attributes of each PCI device from sysfs, so only the placement is written; this corrects hosts
    whose PCI topology NCCL cannot see, such as virtual machines with passthrough GPUs and NICs.
  - Fails with a message naming the devices whose PCI address or NUMA node the facts lack (a snapshot of
    C(nvidia-smi topo -m) alone has neither).
positional: _input
options:
  _input:
    description: The host's C(gpufabric_topology) fact.
    type: dict
    required: true
  hca:
    description: The RDMA ports to place, as C(device:port) (RV(gpufabric.core.nccl_config#filter:_value.hca)).
    type: list
    elements: str
    required: true
author:
  - gpufabric.core contributors
"""

EXAMPLES = r"""
- name: Write the NCCL topology file
  ansible.builtin.copy:
    content: "{{ ansible_facts.gpufabric_topology | gpufabric.core.nccl_topology_xml(nccl_derived.hca) }}"
    dest: /etc/nccl/topo.xml
    mode: "0644"
"""

RETURN = r"""
_value:
  description: The XML text.
  type: str
  sample: |
    <system version="1">
      <cpu numaid="0" affinity="00000000,0000ffff,ffffffff">
        <pci busid="0000:18:00.0">
          <gpu dev="0"/>
        </pci>
        <pci busid="0000:19:00.0">
          <nic>
            <net name="mlx5_0" port="1"/>
          </nic>
        </pci>
      </cpu>
    </system>
"""

from ansible_collections.gpufabric.core.plugins.module_utils.nccl.config import NcclConfigError, topology_xml
from ansible_collections.gpufabric.core.plugins.plugin_utils.filter_errors import raising_filter_error


def nccl_topology_xml(topology, hca):
    if not isinstance(topology, dict):
        raise NcclConfigError("expected gpufabric_topology (a dict), got %s" % type(topology).__name__)
    return topology_xml(topology, list(hca or []))


class FilterModule:
    def filters(self):
        return {"nccl_topology_xml": raising_filter_error("nccl_topology_xml", nccl_topology_xml, NcclConfigError)}
