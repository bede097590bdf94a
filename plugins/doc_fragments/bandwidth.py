# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment:
    # The options both ends of a bandwidth test take: bandwidth_server and bandwidth_client.
    DOCUMENTATION = r"""
options:
  tool:
    description:
      - The test program. C(iperf3) measures a TCP path (management network, the lab);
        the perftest tools measure RDMA, one test per rail.
      - Both ends must use the same tool and test options.
    type: str
    default: iperf3
    choices: [iperf3, ib_write_bw, ib_read_bw, ib_send_bw, ib_atomic_bw, ib_write_lat, ib_read_lat, ib_send_lat, ib_atomic_lat]
  port:
    description:
      - TCP port of the test. For perftest this is the base port, rail I(r) uses O(port) + I(r).
      - Defaults to the tool's own port, 5201 for iperf3 and 18515 for perftest.
    type: int
  duration:
    description: Seconds the test sends data (iperf3 C(-t), perftest C(-D)).
    type: int
    default: 10
  streams:
    description: Parallel TCP streams of an iperf3 test (C(-P)).
    type: int
    default: 1
  bidirectional:
    description:
      - Send in both directions at once (iperf3 C(--bidir), perftest C(-b)).
      - iperf3 reports each direction; perftest reports only their sum.
    type: bool
    default: true
  message_size:
    description: Message size in bytes of a perftest test (C(-s)); the tool's default when unset.
    type: int
  qps:
    description: Queue pairs of a perftest bandwidth test (C(-q)).
    type: int
    default: 1
  use_cuda:
    description:
      - GPUDirect RDMA, perftest only. Buffers live in the memory of the rail's GPU
        (C(--use_cuda=<gpu index>)); needs a perftest built with CUDA.
    type: bool
    default: false
  numa_binding:
    description:
      - Run each test on the CPUs of its NIC's NUMA node, with C(numactl --cpunodebind --membind)
        when numactl is installed, else C(taskset) on the node's CPU list.
      - A node without CPUs (a GPU's memory on a Grace host, which numactl refuses to bind CPUs to) is served by
        the nearest node with CPUs in the kernel's distance table; the test's C(binding) says so.
      - iperf3 tests have no NIC NUMA node and are never bound.
    type: bool
    default: true
  topology:
    description:
      - This host's C(gpufabric_topology) facts (from M(gpufabric.core.topology_facts)).
        Required for perftest tools, which read the NIC, port, NUMA node, GPU and RoCE GID
        index of each rail from it.
    type: dict
  peer_topology:
    description:
      - The other end's C(gpufabric_topology) facts, so that both ends pick the same rails and ports.
        Required for perftest tools.
    type: dict
  rails:
    description: Rail numbers to test; all rails present on both hosts when unset.
    type: list
    elements: int
  rails_from:
    description:
      - Where a perftest tool's rails come from.
      - V(gpus) (GPU servers) takes the rails of O(topology), rail I(i) being GPU I(i) and its nearest RDMA NIC.
      - V(rdma_devices) (hosts without GPUs, such as storage nodes, or a lab of Soft-RoCE VMs) makes rail I(i) the
        I(i)-th RDMA device with an ACTIVE port, in the natural order of device names, so both ends must have their
        devices in the same order. No GPU is involved, so O(use_cuda) cannot apply.
    type: str
    default: gpus
    choices: [gpus, rdma_devices]
  rdma_required:
    description:
      - With a perftest tool on a host without RDMA rails, fail. When false the module reports
        C(available=false) with the reason and changes nothing.
    type: bool
    default: false
  bind_address:
    description: Local address of the iperf3 socket (C(-B)).
    type: str
  extra_args:
    description: Further arguments appended to the tool's command line, one per element.
    type: list
    elements: str
    default: []
"""
