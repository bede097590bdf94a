#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: topology_facts
short_description: Discover a GPU server's GPU, RDMA, network, bond and LLDP topology
version_added: 0.1.0
description:
  - Returns C(ansible_facts.gpufabric_topology), the collection's single description of a host's hardware
    (schema version 1, documented in C(docs/topology.md)). It holds GPUs with their PCI bus id, NUMA node, NVLink
    peers and nearest NICs; RDMA devices with ports, state, link layer (InfiniBand or Ethernet for RoCE),
    rate, netdev, RoCE v2 GID index, NUMA node and PCI address; network interfaces with speed, MTU, driver
    and bond membership; bonds parsed from C(/proc/net/bonding); LLDP neighbours; rails (GPU i and its
    nearest RDMA NIC, with the switch port LLDP sees behind it); routed uplinks (the BGP sessions to the
    leaves where FRRouting runs); and C(findings), sentences with a severity for what looks wrong on the host.
  - Sources are C(nvidia-smi topo -m), C(nvidia-smi --query-gpu), C(ibstat), C(ibv_devinfo -v),
    C(lldpctl -f json), C(vtysh -c 'show bgp summary json') (FRRouting's BGP sessions, the routed uplinks),
    C(/proc/net/bonding/*) and sysfs (C(/sys/class/infiniband), C(/sys/class/net),
    PCI NUMA nodes). Each is optional. A host without GPUs, RDMA devices or lldpd gets facts that say so,
    with the reason (command not found, no device, daemon not running), never a failure; output that
    cannot be parsed is reported as a finding of severity C(error).
  - O(capture) writes every raw source the module read into a directory; O(snapshot) reads such a directory
    instead of the live host, so a support engineer can analyse a host offline with the same code.
options:
  capture:
    description:
      - Directory on the managed host into which the raw sources are written, created if needed.
      - "Layout: C(nvidia-smi-topo-m.txt), C(nvidia-smi-query-gpu.csv), C(ibstat.txt), C(ibv_devinfo.txt),
        C(lldpctl.json), C(vtysh-show-bgp-summary.json), C(proc/net/bonding/<bond>), C(sys/<path>) for every sysfs file read, and
        C(reasons.json) explaining the sources that were not available."
      - Files are replaced atomically and only when their content differs; layout files left by an earlier
        capture that this run did not read are removed, so the directory never mixes two states of the host
        (other files in it are left alone). The module reports C(changed) when it wrote or removed a file;
        LLDP neighbour ages move, so a capture of a host running lldpd usually changes.
      - Mutually exclusive with O(snapshot).
    type: path
  snapshot:
    description:
      - Directory in the O(capture) layout to read instead of the live host. Files absent from it give
        facts with the reason C(the snapshot has no <file>).
      - The facts' C(source) is then C(snapshot:<path>).
    type: path
  timeout:
    description:
      - Seconds each discovery command may run before it is abandoned (through coreutils C(timeout)); a
        wedged GPU driver can otherwise hang C(nvidia-smi) indefinitely.
    type: int
    default: 30
  sys_root:
    description:
      - Root of the sysfs tree to read for live discovery; change it only to read a copied tree.
    type: path
    default: /sys
  proc_root:
    description:
      - Root of the proc tree to read C(net/bonding) from for live discovery.
    type: path
    default: /proc
  lldp_wait:
    description:
      - Live discovery only. Seconds to wait, reading C(lldpctl) every 2 s, while a rail whose Ethernet link is up
        has no LLDP neighbour yet and lldpd runs. A switch is heard at its next LLDPDU (every 30 s by default), so
        discovery just after lldpd or a link came up would otherwise map the rail without its switch, and the next
        run would map it with one.
      - V(0) does not wait. A rail still without a neighbour after the wait is mapped without its switch (the fabric
        map's C(no_neighbor) warning). RV(ansible_facts.gpufabric_topology.lldp) says which netdevs were awaited
        (C(awaited)) and for how long (C(waited_s)).
    type: int
    default: 0
  rail_interfaces:
    description:
      - The host's rails as the inventory names them (C(gpufabric_rail_interfaces)), a list whose item I(i) is the
        netdev of rail I(i) (for example C([ens108np0, ens110np0])) or a mapping of rail index to netdev.
      - When set, the rails are these netdevs, each with the RDMA port whose netdev it is (none for a plain
        Ethernet rail); otherwise GPU I(i) and its nearest RDMA NIC; on a host whose facts hold no GPU, the RDMA
        devices with an ACTIVE port. RV(ansible_facts.gpufabric_topology.rail_source) says which.
      - A value that is not a list or mapping of interface names fails the module, naming the variable.
    type: raw
notes:
  - Run with O(capture) on a failing host and analyse the directory elsewhere with O(snapshot).
  - The rails pair each GPU with a distinct nearest NIC when several GPUs share the same best link to
    several NICs, as NCCL does; GPUs that must share a NIC are reported as an C(info) finding.
  - The rails are resolved here, once; the fabric map, the nccl role, the verify role's bandwidth sweep and the
    Slurm topology read them and derive none of their own. Run the module again after a change that adds or
    removes RDMA devices or netdevs (the roles do when a module before them returns C(topology_changed)); the
    facts it returns set C(gpufabric_topology_stale) back to false.
seealso:
  - name: gpufabric_topology schema
    description: The facts' schema, C(docs/topology.md) in the collection.
    link: https://github.com/gpufabric/gpufabric.core/blob/main/docs/topology.md
extends_documentation_fragment:
  - gpufabric.core.attributes
attributes:
  check_mode:
    support: full
    details: Discovery only reads. With O(capture), check mode writes nothing and reports the files that would change.
  diff_mode:
    support: none
    details: The files a capture wrote are listed in RV(capture_files); their content is not diffed.
  facts:
    description: Action returns an C(ansible_facts) dictionary that will update existing host facts.
    support: full
    details: Returns C(ansible_facts.gpufabric_topology).
author:
  - gpufabric.core contributors (@gpufabric)
"""

EXAMPLES = r"""
- name: Discover the topology
  gpufabric.core.topology_facts:

- name: Show which NIC and switch port serve each GPU
  ansible.builtin.debug:
    msg: "rail {{ item.rail }}: {{ item.gpu }} -> {{ item.device }} ({{ item.link }}) -> {{ item.switch }} {{ item.switch_port }}"
  loop: "{{ ansible_facts.gpufabric_topology.rails }}"

- name: Fail on what looks wrong
  ansible.builtin.assert:
    that: ansible_facts.gpufabric_topology.findings | selectattr('severity', 'equalto', 'error') | list | length == 0
    fail_msg: "{{ ansible_facts.gpufabric_topology.findings | map(attribute='message') | list }}"

- name: Capture the raw sources of a host for offline analysis
  gpufabric.core.topology_facts:
    capture: /var/tmp/gpufabric-topology

- name: Analyse a captured host on the controller
  gpufabric.core.topology_facts:
    snapshot: "{{ playbook_dir }}/snapshots/gpu-node-17"
  delegate_to: localhost
"""

RETURN = r"""
ansible_facts:
  description: Facts to add to the host.
  returned: always
  type: dict
  contains:
    gpufabric_topology:
      description: The host's topology, schema version 1 (C(docs/topology.md)).
      returned: always
      type: dict
      contains:
        schema_version:
          description: Version of the schema.
          type: int
          sample: 1
        source:
          description: C(live), or C(snapshot:<path>).
          type: str
          sample: live
        gpus:
          description: C(available), C(reason) when not, and C(devices) (index, name, model, pci_bus_id,
            numa_node, memory_numa_node, cpu_affinity, nvlink_peers, nearest_nics, nearest_link). On a Grace host
            (GH200, GB200, GB300) C(numa_node) is the CPU-side node and C(memory_numa_node) the node of the GPU's own
            memory (null elsewhere, and under CDMM).
          type: dict
          sample:
            available: true
            reason: null
            devices:
              - {index: 0, name: GPU0, model: NVIDIA H100 80GB HBM3, pci_bus_id: "0000:18:00.0", numa_node: 0,
                 memory_numa_node: null, cpu_affinity: "0-47,96-143", nvlink_peers: [1, 2, 3, 4, 5, 6, 7], nearest_nics: [mlx5_0],
                 nearest_link: PIX}
        rdma:
          description: C(available), C(reason) when not, and C(devices) (name, model, firmware, pci_address,
            numa_node, C(parent) - the netdev of a software device such as Soft-RoCE, else null - netdev, ports).
          type: dict
          sample:
            available: false
            reason: "no RDMA device: /sys/class/infiniband does not exist (no RDMA driver loaded)"
            devices: []
        interfaces:
          description: Network interfaces (loopback excluded) with mac, speed_mbps, mtu, driver, operstate,
            bond_master, pci_address, numa_node.
          type: list
          elements: dict
          sample:
            - {name: eth0, mac: "aa:bb:cc:dd:ee:ff", speed_mbps: 100000, mtu: 9000, driver: mlx5_core, operstate: up,
               bond_master: bond0, pci_address: "0000:19:00.0", numa_node: 0}
        bonds:
          description: Each bond of C(/proc/net/bonding), as P(gpufabric.core.parse_bonding#filter) returns it.
          type: dict
          sample: {bond0: {mode: 802.3ad, lacp_rate: fast, healthy: true, problems: []}}
        lldp:
          description:
            - C(available), C(reason) when not, and C(neighbors) as P(gpufabric.core.parse_lldp#filter) returns them.
            - An output without neighbour, or with one lacking its chassis or port id, adds an C(lldp_incomplete)
              warning to C(findings).
            - After live discovery, C(awaited) lists the rails' netdevs that had no neighbour when O(lldp_wait) began
              and C(waited_s) the whole seconds waited (0 when nothing was awaited).
          type: dict
          sample: {available: false, reason: "lldpctl not found in PATH (install and start lldpd)", neighbors: [],
                   awaited: [], waited_s: 0}
        rails:
          description:
            - The host's rails, resolved once from the source RV(ansible_facts.gpufabric_topology.rail_source)
              names (rail, gpu, device, port, netdev, rate_gbps, link_layer, state, up, numa_node, link, mtu,
              active_mtu, switch, switch_id, switch_port, exists).
            - C(state) is the RDMA port's state, or the netdev's operstate in capitals for a rail without an RDMA
              port; C(exists) is false when O(rail_interfaces) names an interface the host does not have.
          type: list
          elements: dict
          sample:
            - {rail: 0, gpu: GPU0, device: mlx5_0, port: 1, netdev: ens1np0, rate_gbps: 400.0, link_layer: Ethernet,
               state: ACTIVE, up: true, numa_node: 0, link: PIX, mtu: 9000, active_mtu: 4096, switch: LEAF01,
               switch_id: "70:06:92:6e:33:18", switch_port: Ethernet184, exists: true}
        rail_source:
          description: Where the rails come from - C(inventory) (O(rail_interfaces)), C(gpu) (GPU I(i) and its
            nearest RDMA NIC), C(rdma_devices) (a host whose facts hold no GPU - its RDMA devices with an ACTIVE
            port), or C(none).
          type: str
          sample: gpu
        findings:
          description: What looks wrong, each with a severity (C(info), C(warning), C(error)), a C(kind) code
            and a sentence.
          type: list
          elements: dict
          sample:
            - {severity: error, kind: port_down, message: "mlx5_7 port 1 is DOWN (physical state Disabled)"}
        routing:
          description:
            - Routed uplinks, C(available), C(reason) when not (no C(vtysh) where FRRouting is not installed), and
              C(uplinks), one per BGP session of C(show bgp summary json) as the M(gpufabric.core.frr_status)
              parser reads it (address families merged).
            - Each uplink has C(peer) (the leaf's address, or the interface of an unnumbered session),
              C(interface) (unnumbered sessions only), C(unnumbered), C(leaf) (the leaf's BGP hostname, else
              the session's description), C(description), C(remote_as), C(local_as), C(state), C(established),
              C(uptime_ms) and C(prefixes_received) (all address families).
            - A session that is not Established adds a C(bgp_session_down) warning to C(findings).
          type: dict
          sample:
            available: true
            reason: null
            uplinks:
              - {peer: 10.240.11.2, interface: null, unnumbered: false, leaf: routing-leaf1,
                 description: routing-leaf1, remote_as: 65101, local_as: 65011, state: Established,
                 established: true, uptime_ms: 65000, prefixes_received: 1}
              - {peer: eth1, interface: eth1, unnumbered: true, leaf: routing-leaf2, description: routing-leaf2,
                 remote_as: 65102, local_as: 65011, state: Established, established: true, uptime_ms: 15000,
                 prefixes_received: 1}
    gpufabric_topology_stale:
      description: Always false here - these facts are current. Modules that change what discovery sees
        (M(gpufabric.core.rdma_config), M(gpufabric.core.bond_config), M(gpufabric.core.frr_config),
        M(gpufabric.core.soft_roce)) set it to true, and the roles after them discover again.
      returned: always
      type: bool
      sample: false
capture_files:
  description: Files (relative to O(capture)) written or removed, or that would be in check mode.
  returned: when O(capture) is set
  type: list
  elements: str
  sample: [ibstat.txt, sys/class/net/eth0/operstate]
"""

import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufabric.core.plugins.module_utils.fabric.topology import (
    RailInterfacesError,
    build_topology,
    normalize_rail_interfaces,
    collect_live,
    read_snapshot,
    reread_lldp,
    wait_for_lldp,
    write_capture,
)


def _live(module, rail_interfaces):
    """(sources, topology) of this host, LLDP read again for at most lldp_wait seconds while a rail awaits it."""
    params = module.params

    def run(argv):
        # LC_ALL=C: the parsers read the tools' English output.
        return module.run_command(argv, environ_update={"LC_ALL": "C", "LANG": "C"})

    sources = collect_live(run, module.get_bin_path, sys_root=params["sys_root"], proc_root=params["proc_root"],
                           timeout=params["timeout"])

    def reread():
        reread_lldp(sources, run, module.get_bin_path, timeout=params["timeout"])
        return build_topology(sources, source="live", rail_interfaces=rail_interfaces)

    topology = wait_for_lldp(build_topology(sources, source="live", rail_interfaces=rail_interfaces), reread,
                             params["lldp_wait"], time.monotonic, time.sleep)
    return sources, topology


def main():
    module = AnsibleModule(
        argument_spec=dict(
            capture=dict(type="path"),
            snapshot=dict(type="path"),
            timeout=dict(type="int", default=30),
            sys_root=dict(type="path", default="/sys"),
            proc_root=dict(type="path", default="/proc"),
            rail_interfaces=dict(type="raw"),
            lldp_wait=dict(type="int", default=0),
        ),
        mutually_exclusive=[("capture", "snapshot")],
        supports_check_mode=True,
    )
    params = module.params
    if params["timeout"] < 1:
        module.fail_json(msg="timeout must be at least 1 second, got %d" % params["timeout"])
    if params["lldp_wait"] < 0:
        module.fail_json(msg="lldp_wait must be 0 or more seconds, got %d" % params["lldp_wait"])
    try:
        rail_interfaces = normalize_rail_interfaces(params["rail_interfaces"])
    except RailInterfacesError as exc:
        module.fail_json(msg="rail_interfaces: %s" % exc)

    result = {"changed": False}
    topology = None
    if params["snapshot"]:
        try:
            sources = read_snapshot(params["snapshot"])
        except (OSError, ValueError) as exc:
            module.fail_json(msg="cannot read snapshot %s: %s; give a directory written by capture"
                             % (params["snapshot"], exc))
    else:
        sources, topology = _live(module, rail_interfaces)

    if params["capture"]:
        if os.path.exists(params["capture"]) and not os.path.isdir(params["capture"]):
            module.fail_json(msg="capture path %s exists and is not a directory" % params["capture"])
        try:
            changed_files = write_capture(params["capture"], sources, check_mode=module.check_mode)
        except (OSError, ValueError) as exc:
            module.fail_json(msg="cannot write the capture into %s: %s" % (params["capture"], exc))
        result["capture_files"] = changed_files
        result["changed"] = bool(changed_files)

    result["ansible_facts"] = {
        "gpufabric_topology": topology or build_topology(sources, source="snapshot:%s" % params["snapshot"],
                                                         rail_interfaces=rail_interfaces),
        "gpufabric_topology_stale": False,
    }
    module.exit_json(**result)


if __name__ == "__main__":
    main()
