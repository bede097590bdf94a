# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Build gpufabric_topology (schema in docs/topology.md) from raw sources, live or from a snapshot.

build_topology is pure: it takes the raw texts of the commands and sysfs files and returns the facts.
collect_live gathers those texts on a host, read_snapshot and write_capture move them to and from a
directory, so a host can be analysed offline with exactly the code that runs live.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re

from ansible_collections.gpufabric.core.plugins.module_utils.hostio import file_transaction as ft
from ansible_collections.gpufabric.core.plugins.module_utils.fabric import sysfs as sysfs_utils
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.proc_bonding import parse_bonding
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.frr_status import FrrStatusError, parse_bgp_summary
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.ibstat import parse_ibstat
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.ibv_devinfo import parse_ibv_devinfo, roce_v2_gid_index
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.lldp import neighbors_by_interface, parse_lldp_neighbors
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.nvidia_smi_topo import (
    parse_nvidia_smi_query_gpu,
    parse_nvidia_smi_topo,
)
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.common import ParseError

SCHEMA_VERSION = 1

# Snapshot layout: source key -> file name inside the snapshot directory.
SNAPSHOT_FILES = {
    "nvidia_smi_topo": "nvidia-smi-topo-m.txt",
    "nvidia_smi_query": "nvidia-smi-query-gpu.csv",
    "ibstat": "ibstat.txt",
    "ibv_devinfo": "ibv_devinfo.txt",
    "lldpctl": "lldpctl.json",
    "bgp_summary": "vtysh-show-bgp-summary.json",
}
SNAPSHOT_BONDING_DIR = "proc/net/bonding"
SNAPSHOT_SYSFS_DIR = "sys"
SNAPSHOT_REASONS_FILE = "reasons.json"

# The commands collect_live runs, as argument lists.
COMMANDS = {
    "nvidia_smi_topo": ["nvidia-smi", "topo", "-m"],
    "nvidia_smi_query": ["nvidia-smi", "--query-gpu=index,name,pci.bus_id", "--format=csv,noheader"],
    "ibstat": ["ibstat"],
    "ibv_devinfo": ["ibv_devinfo", "-v"],
    "lldpctl": ["lldpctl", "-f", "json"],
    "bgp_summary": ["vtysh", "-c", "show bgp summary json"],
}
PACKAGE_HINTS = {
    "nvidia-smi": "the NVIDIA driver is not installed",
    "ibstat": "install infiniband-diags",
    "ibv_devinfo": "install ibverbs-utils (rdma-core)",
    "lldpctl": "install and start lldpd",
    "vtysh": "FRRouting is not installed: no routed uplinks",
}

# PCI/IEEE vendor ids ibv_devinfo prints for NVIDIA (Mellanox) HCAs.
MELLANOX_VENDOR_IDS = ("0x02c9", "0x15b3")

# A GPU whose nearest NIC is this far away sends GPUDirect RDMA traffic across the CPU interconnect.
CROSS_SOCKET_LINK = "SYS"


def _finding(findings, severity, kind, message):
    findings.append({"severity": severity, "kind": kind, "message": message})


def _parse(parser, text, source, findings, reasons):
    """Run a parser; a parse error becomes a finding and a reason instead of failing discovery."""
    try:
        return parser(text)
    except ParseError as exc:
        reasons[source] = str(exc)
        _finding(findings, "error", "parse_error", str(exc))
        return None


def _gpus(sources, sysfs, findings, reasons):
    topo = query = None
    if sources.get("nvidia_smi_topo"):
        topo = _parse(parse_nvidia_smi_topo, sources["nvidia_smi_topo"], "nvidia_smi_topo", findings, reasons)
    if sources.get("nvidia_smi_query"):
        query = _parse(parse_nvidia_smi_query_gpu, sources["nvidia_smi_query"], "nvidia_smi_query", findings, reasons)
    if topo is None and not query:
        reason = (reasons.get("nvidia_smi_topo") or reasons.get("nvidia_smi_query")
                  or "no nvidia-smi output was available")
        return {"available": False, "reason": reason, "devices": []}

    by_index = {}
    for gpu in query or []:
        by_index[gpu["index"]] = {"model": gpu["model"], "pci_bus_id": gpu["pci_bus_id"]}
    topo_gpus = {gpu["index"]: gpu for gpu in (topo["gpus"] if topo else [])}
    devices = []
    for index in sorted(set(by_index) | set(topo_gpus)):
        name = "GPU%d" % index
        known = by_index.get(index, {})
        from_topo = topo_gpus.get(index, {})
        numa = sysfs_utils.pci_numa_node(sysfs, known.get("pci_bus_id"))
        cpu_side = from_topo.get("numa_affinity")
        if cpu_side is not None and (numa is None or from_topo.get("gpu_numa_id") is not None):
            # A Grace-attached GPU (its memory is a NUMA node of its own) hangs off the CPU by NVLink-C2C: the
            # node to run and bind on is the CPU-side one nvidia-smi names first, not what its PCI function says.
            numa = cpu_side
        peers = (topo or {}).get("nvlinks", {}).get(name, {})
        devices.append({
            "index": index,
            "name": name,
            "model": known.get("model"),
            "pci_bus_id": known.get("pci_bus_id"),
            "numa_node": numa,
            "memory_numa_node": from_topo.get("gpu_numa_id"),
            "cpu_affinity": from_topo.get("cpu_affinity"),
            "nvlink_peers": sorted(int(peer[3:]) for peer in peers),
            "nearest_nics": list((topo or {}).get("nearest_nics", {}).get(name, [])),
            "nearest_link": (topo or {}).get("nearest_link", {}).get(name),
        })
    if topo is not None and not topo["legend_found"]:
        _finding(findings, "warning", "no_nic_legend",
                 "nvidia-smi topo -m printed no NIC Legend: %s cannot be matched to RDMA device names"
                 % ", ".join(nic["name"] for nic in topo["nics"]))
    said = (topo or {}).get("errors") or ["nvidia-smi listed no GPU"]
    return {"available": bool(devices), "reason": None if devices else said[0], "devices": devices}


def _place_nics_by_numa(gpus, rdma):
    """Where nvidia-smi says SYS for every NIC of a GPU, keep the NICs on the GPU's own CPU NUMA node.

    A GPU of a Grace host (GB200, GB300) reaches the Grace CPU over NVLink-C2C, not PCIe, so nvidia-smi prints
    SYS to every NIC, its own socket's included. A NIC on the GPU's CPU node is reached without crossing the
    CPU interconnect: what NODE means, so that is the link reported for it. Elsewhere (x86 hosts) a SYS NIC is on
    another socket, no NIC qualifies and the GPU keeps what nvidia-smi said.
    """
    nodes = {device["name"]: device.get("numa_node") for device in rdma["devices"]}
    for gpu in gpus["devices"]:
        if gpu["nearest_link"] != CROSS_SOCKET_LINK or gpu["numa_node"] is None:
            continue
        local = [nic for nic in gpu["nearest_nics"] if nodes.get(nic) == gpu["numa_node"]]
        if local:
            gpu["nearest_nics"] = local
            gpu["nearest_link"] = "NODE"


def _port_template(number):
    return {"port": number, "state": None, "physical_state": None, "rate_gbps": None, "link_layer": None,
            "roce_v2_gid_index": None, "active_mtu": None, "netdev": None}


def _gid_address(gid):
    """The IP address a GID is made from: dotted IPv4 for an IPv4-mapped GID, else the IPv6 text."""
    try:
        address = ipaddress.IPv6Address(gid)
    except ValueError:
        return None
    return str(address.ipv4_mapped) if address.ipv4_mapped else str(address)


def _roce_v2_gids(gids, interfaces):
    """The RoCE v2 GIDs of a port, one per address: [{index, address, family, netdev, vlan}].

    netdev is the device the address is on (sysfs gid_attrs/ndevs; None from ibv_devinfo, which does not say);
    vlan is true when that device is an 802.1Q VLAN (its uevent says DEVTYPE=vlan), so that a consumer can
    tell the VLAN's GID from the untagged one on the same port.
    """
    kinds = {interface["name"]: interface.get("driver") for interface in interfaces}
    entries = []
    for gid in gids:
        if (gid.get("type") or "").lower().replace(" ", "") != "rocev2":
            continue
        address = _gid_address(gid.get("gid") or "")
        if address is None:
            continue
        netdev = gid.get("ndev")
        entries.append({
            "index": gid["index"],
            "address": address,
            "family": "ipv4" if "." in address else "ipv6",
            "netdev": netdev,
            "vlan": bool(netdev) and kinds.get(netdev) == "vlan",
        })
    return entries


def _fill(port, values, keys):
    """Copy values into port where the port does not know them yet (sources are merged by priority)."""
    for key in keys:
        if port.get(key) is None and values.get(key) is not None:
            port[key] = values[key]


def _verbs_model(device):
    """ibv_devinfo gives no model name; NVIDIA/Mellanox HCAs are named MT<vendor_part_id> (hca_type, ibstat)."""
    part = device.get("vendor_part_id")
    if part is None:
        return None
    if (device.get("vendor_id") or "").lower() in MELLANOX_VENDOR_IDS:
        return "MT%d" % part
    return "vendor_part_id %d" % part


def _rdma(sources, sysfs, interfaces, findings, reasons):
    live = sysfs_utils.rdma_devices(sysfs)
    ibstat = ibv = None
    if sources.get("ibstat"):
        ibstat = _parse(parse_ibstat, sources["ibstat"], "ibstat", findings, reasons)
    if sources.get("ibv_devinfo"):
        ibv = _parse(parse_ibv_devinfo, sources["ibv_devinfo"], "ibv_devinfo", findings, reasons)
    for parsed, tool in ((ibstat, "ibstat"), (ibv, "ibv_devinfo")):
        if parsed and parsed["errors"] and (parsed.get("cas") or parsed.get("devices")):
            # Errors beside devices mean a partial view; errors alone mean "no device" (see reasons).
            for line in parsed["errors"]:
                _finding(findings, "warning", "tool_error", "%s reported: %s" % (tool, line))

    names = set(live)
    ibstat_cas = {ca["name"]: ca for ca in (ibstat or {}).get("cas", [])}
    ibv_devices = {device["name"]: device for device in (ibv or {}).get("devices", [])}
    names |= set(ibstat_cas) | set(ibv_devices)
    by_pci = {}
    for interface in interfaces:
        if interface["pci_address"]:
            by_pci.setdefault(interface["pci_address"], []).append(interface["name"])

    devices = []
    for name in sorted(names, key=sysfs_utils.natural_key):
        from_sysfs = live.get(name, {})
        ca = ibstat_cas.get(name, {})
        verbs = ibv_devices.get(name, {})
        pci = from_sysfs.get("pci_address")
        netdevs = from_sysfs.get("netdevs") or by_pci.get(pci, [])
        numbers = set(from_sysfs.get("ports", {}))
        numbers |= {port["port"] for port in ca.get("ports", [])}
        numbers |= {port["port"] for port in verbs.get("ports", [])}
        ports = []
        for number in sorted(numbers):
            port = _port_template(number)
            sys_port = from_sysfs.get("ports", {}).get(number, {})
            ibstat_port = next((p for p in ca.get("ports", []) if p["port"] == number), {})
            verbs_port = next((p for p in verbs.get("ports", []) if p["port"] == number), {})
            for values in (sys_port, ibstat_port, verbs_port):
                _fill(port, values, ("state", "physical_state", "rate_gbps", "link_layer", "active_mtu"))
            if port["link_layer"] == "Ethernet":
                port["roce_v2_gid_index"] = roce_v2_gid_index(sys_port.get("gids") or verbs_port.get("gids") or [])
                port["roce_v2_gids"] = _roce_v2_gids(sys_port.get("gids") or verbs_port.get("gids") or [], interfaces)
                port["gids_known"] = bool(sys_port.get("gids") or verbs_port.get("gids"))
            ndevs = [gid["ndev"] for gid in sys_port.get("gids", []) if gid.get("ndev")]
            if ndevs:
                port["netdev"] = ndevs[0]
            elif 0 < number <= len(netdevs):
                # Ports count from 1: a damaged capture's port 0 must not index from the end (or an empty list).
                port["netdev"] = netdevs[number - 1]
            elif netdevs:
                port["netdev"] = netdevs[0]
            ports.append(port)
        devices.append({
            "name": name,
            "model": from_sysfs.get("hca_type") or ca.get("ca_type") or _verbs_model(verbs),
            "firmware": from_sysfs.get("fw_ver") or ca.get("firmware_version") or verbs.get("fw_ver"),
            "pci_address": pci,
            "numa_node": from_sysfs.get("numa_node"),
            # A software device's netdev (Soft-RoCE rxe, siw): it has no NIC of its own to tune.
            "parent": from_sysfs.get("parent"),
            "netdev": next((port["netdev"] for port in ports if port["netdev"]), None),
            "ports": ports,
        })
    if devices:
        return {"available": True, "reason": None, "devices": devices}
    reason = None
    for parsed, tool in ((ibstat, "ibstat"), (ibv, "ibv_devinfo")):
        if parsed and parsed["errors"]:
            reason = "%s: %s" % (tool, parsed["errors"][0])
    reason = (reasons.get("rdma") or reasons.get("ibstat") or reason or reasons.get("ibv_devinfo")
              or "no RDMA device: /sys/class/infiniband is empty or absent")
    return {"available": False, "reason": reason, "devices": []}


def _bonds(sources, interfaces, findings, reasons):
    bonds = {}
    for name, text in sorted((sources.get("bonding") or {}).items()):
        parsed = _parse(parse_bonding, text, "bonding:%s" % name, findings, reasons)
        if parsed is None:
            continue
        bonds[name] = parsed
        for problem in parsed["problems"]:
            _finding(findings, "warning", "bond_problem", "%s: %s" % (name, problem))
    masters = {}
    for name, bond in bonds.items():
        for slave in bond["slaves"]:
            masters[slave["name"]] = name
    for interface in interfaces:
        for slave in interface.pop("bond_slaves") or []:
            masters.setdefault(slave, interface["name"])
        interface.pop("bond_mode", None)
    for interface in interfaces:
        interface["bond_master"] = masters.get(interface["name"])
    return bonds


def _lldp(sources, findings, reasons):
    """The lldp section; awaited and waited_s stay empty unless wait_for_lldp waits for neighbours."""
    text = sources.get("lldpctl")
    waited = {"awaited": [], "waited_s": 0}
    if not text:
        return dict(waited, available=False, reason=reasons.get("lldpctl") or "no lldpctl output was available",
                    neighbors=[])
    parsed = _parse(parse_lldp_neighbors, text, "lldpctl", findings, reasons)
    if parsed is None:
        return dict(waited, available=False, reason=reasons["lldpctl"], neighbors=[])
    for error in parsed["errors"]:
        _finding(findings, "warning", "lldp_incomplete", "lldpctl: %s" % error)
    return dict(waited, available=True, reason=None, neighbors=parsed["neighbors"])


def _routing(sources, findings, reasons):
    """Routed uplinks from FRR's `show bgp summary json` (the frr_status parser): one entry per BGP session."""
    text = sources.get("bgp_summary")
    if not text:
        return {"available": False, "reason": reasons.get("bgp_summary") or "no vtysh output was available",
                "uplinks": []}
    try:
        sessions = parse_bgp_summary(text)
    except FrrStatusError as exc:
        reasons["bgp_summary"] = str(exc)
        _finding(findings, "error", "parse_error", str(exc))
        return {"available": False, "reason": str(exc), "uplinks": []}
    uplinks = []
    for session in sessions:
        uplinks.append({
            "peer": session["peer"],
            "interface": session["interface"],
            "unnumbered": session["interface"] is not None,
            # The leaf's name: its hostname (BGP hostname capability), else the session's description.
            "leaf": session["hostname"] or session["description"],
            "description": session["description"],
            "remote_as": session["remote_as"],
            "local_as": session["local_as"],
            "state": session["state"],
            "established": session["established"],
            "uptime_ms": session["uptime_ms"],
            "prefixes_received": session["prefixes_received_total"],
        })
        if not session["established"]:
            _finding(findings, "warning", "bgp_session_down", "BGP session to %s (AS %s%s) is %s, not Established" % (
                session["peer"], session["remote_as"],
                ", leaf %s" % uplinks[-1]["leaf"] if uplinks[-1]["leaf"] else "", session["state"]))
    return {"available": True, "reason": None, "uplinks": uplinks}


# ---------------------------------------------------------------- rails: resolved once, read by every consumer

RAIL_INTERFACES_VARIABLE = "gpufabric_rail_interfaces"
_MAC = re.compile(r"^[0-9a-f]{2}(:[0-9a-f]{2}){5}$", re.IGNORECASE)
# States of a usable rail: RDMA port state ACTIVE, or netdev operstate up.
_UP_STATES = frozenset(("ACTIVE", "UP"))


class RailInterfacesError(ValueError):
    """gpufabric_rail_interfaces is not a list or mapping of interface names; the message says what to fix."""


def normalize_rail_interfaces(value, owner=RAIL_INTERFACES_VARIABLE):
    """{rail index: netdev} from a list (item i is rail i) or a mapping; None (or empty) means not set.

    owner names the value in messages (the inventory variable, or "gpufabric_rail_interfaces of HOST").
    """
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        pairs = list(enumerate(value))
    elif isinstance(value, dict):
        pairs = list(value.items())
    else:
        raise RailInterfacesError(
            "%s must be a list of interface names (item i is rail i) or a mapping of rail index to interface "
            "name, not %s" % (owner, type(value).__name__))
    rails = {}
    for rail, netdev in pairs:
        try:
            index = int(rail)
        except (TypeError, ValueError):
            raise RailInterfacesError("%s: rail %r is not an integer" % (owner, rail))
        if index < 0:
            raise RailInterfacesError("%s: rail %d is negative" % (owner, index))
        if not isinstance(netdev, str) or not netdev:
            raise RailInterfacesError("%s: rail %d must name an interface, got %r" % (owner, index, netdev))
        if index in rails:
            raise RailInterfacesError("%s names rail %d twice" % (owner, index))
        rails[index] = netdev
    return rails or None


def switch_name(neighbor):
    """A switch's name: its LLDP system name, else its chassis ID (some switches send no name)."""
    return neighbor.get("chassis_name") or neighbor.get("chassis_id")


def switch_port_name(neighbor):
    """The switch port as people name it: the port ID, unless the switch sent a MAC there (then the description)."""
    port_id = neighbor.get("port_id")
    if port_id and neighbor.get("port_id_type") != "mac" and not _MAC.match(str(port_id)):
        return port_id
    return neighbor.get("port_descr") or port_id


class _RailContext:
    """What placing a rail needs from the facts, indexed once per host."""

    def __init__(self, topology):
        self.devices = {device["name"]: device for device in (topology.get("rdma") or {}).get("devices") or []
                        if isinstance(device, dict) and device.get("name")}
        self.interfaces = {interface["name"]: interface for interface in topology.get("interfaces") or []
                           if isinstance(interface, dict) and interface.get("name")}
        self.neighbors = neighbors_by_interface([neighbor for neighbor in (topology.get("lldp") or {})
                                                 .get("neighbors") or [] if neighbor.get("local_interface")])
        self.slaves = {}
        for interface in self.interfaces.values():
            if interface.get("bond_master"):
                self.slaves.setdefault(interface["bond_master"], []).append(interface["name"])
        # netdev -> (device, port): a port's own netdev first (mlx4 dual-port HCAs have one per port).
        self.by_netdev = {}
        for device in self.devices.values():
            for port in device.get("ports") or []:
                if port.get("netdev"):
                    self.by_netdev.setdefault(port["netdev"], (device, port))
        for device in self.devices.values():
            ports = device.get("ports") or []
            if device.get("netdev") and ports:
                self.by_netdev.setdefault(device["netdev"], (device, ports[0]))

    def neighbor(self, netdev):
        """LLDP neighbour of netdev; a RoCE LAG device (mlx5_bond_0) sits on a bond: LLDP runs on its slaves."""
        if not netdev:
            return None
        seen = self.neighbors.get(netdev) or [n for slave in self.slaves.get(netdev, [])
                                              for n in self.neighbors.get(slave, [])]
        return seen[0] if seen else None

    def rail(self, index, gpu, device, port, netdev, link=None):
        """One rail as the facts hold it: the RDMA port's view when there is one, else the netdev's."""
        interface = self.interfaces.get(netdev) or {}
        if port:
            state, rate, layer = port.get("state"), port.get("rate_gbps"), port.get("link_layer")
        else:
            operstate = interface.get("operstate")
            state = operstate.upper() if isinstance(operstate, str) else None
            speed = interface.get("speed_mbps")
            rate = speed / 1000.0 if isinstance(speed, (int, float)) and speed > 0 else None
            layer = "Ethernet" if interface else None
        neighbor = self.neighbor(netdev)
        numa = (device or {}).get("numa_node")
        if numa is None:
            numa = gpu.get("numa_node") if gpu else interface.get("numa_node")
        return {
            "rail": index,
            "gpu": gpu["name"] if gpu else None,
            "device": (device or {}).get("name"),
            "port": (port or {}).get("port"),
            "netdev": netdev,
            "rate_gbps": rate,
            "link_layer": layer,
            "state": state,
            "up": state in _UP_STATES if state else None,
            "numa_node": numa,
            "link": link,
            "mtu": interface.get("mtu"),
            "active_mtu": (port or {}).get("active_mtu"),
            "switch": neighbor.get("chassis_name") if neighbor else None,
            "switch_id": neighbor.get("chassis_id") if neighbor else None,
            "switch_port": switch_port_name(neighbor) if neighbor else None,
            "exists": True,
        }


def _inventory_rails(context, gpus, rail_interfaces):
    """Rail i on the netdev the inventory names, with the RDMA port on that netdev when there is one."""
    nearest = {}
    for gpu in gpus:
        for nic in gpu.get("nearest_nics") or []:
            nearest.setdefault(nic, gpu)
    rails = []
    for index in sorted(rail_interfaces):
        netdev = rail_interfaces[index]
        device, port = context.by_netdev.get(netdev, (None, None))
        gpu = nearest.get(device["name"]) if device else None
        rail = context.rail(index, gpu, device, port, netdev, link=gpu.get("nearest_link") if gpu else None)
        # A snapshot without its sys/ tree lists no interfaces at all: then only LLDP can vouch for a netdev.
        rail["exists"] = (netdev in context.interfaces or device is not None or netdev in context.neighbors
                          or not context.interfaces)
        rails.append(rail)
    return rails


def _gpu_rails(context, gpus, findings):
    """Rail i: GPU i and its nearest RDMA NIC, each NIC given to one GPU when the topology allows."""
    taken = {}
    rails = []
    for gpu in gpus:
        candidates = gpu.get("nearest_nics") or []
        if not candidates:
            continue
        choice = next((nic for nic in candidates if nic not in taken), candidates[0])
        if choice in taken:
            _finding(findings, "info", "shared_nic", "GPU%d shares its nearest NIC %s with GPU%d"
                     % (gpu["index"], choice, taken[choice]))
        taken.setdefault(choice, gpu["index"])
        device = context.devices.get(choice)
        ports = (device or {}).get("ports") or []
        port = next((p for p in ports if p.get("state") == "ACTIVE"), ports[0] if ports else None)
        netdev = (port or {}).get("netdev") or (device or {}).get("netdev")
        rail = context.rail(gpu["index"], gpu, device, port, netdev, link=gpu.get("nearest_link"))
        # The NIC nvidia-smi names is not an RDMA device this host reports: no port, no netdev, only its name.
        rail["device"] = choice
        rails.append(rail)
    return rails


def _rdma_device_rails(context):
    """Rails of a host without GPUs (storage nodes, GPU-less labs): rail i is the i-th RDMA device, in the natural
    order of names, with an ACTIVE port (its first), so that hosts cabled alike number rails alike."""
    rails = []
    for name in sorted(context.devices, key=sysfs_utils.natural_key):
        device = context.devices[name]
        port = next((entry for entry in device.get("ports") or [] if entry.get("state") == "ACTIVE"), None)
        if port is not None:
            rails.append(context.rail(len(rails), None, device, port, port.get("netdev") or device.get("netdev")))
    return rails


def resolve_rails(topology, rail_interfaces=None):
    """The host's rails, resolved once: (rails, rail_source, findings).

    topology holds at least the gpus, rdma, interfaces and lldp sections of gpufabric_topology (build_topology
    calls this with the sections it just built). The rails come from the first source that has any:
    inventory (rail_interfaces, {index: netdev} or the raw list/mapping of gpufabric_rail_interfaces), gpu (GPU i
    and its nearest RDMA NIC), rdma_devices (only when the facts hold no GPU: the RDMA devices with an ACTIVE
    port), none. Every consumer (fabric map, NCCL, bandwidth sweep, Slurm through the map) reads these rails.
    Raises RailInterfacesError for a rail_interfaces that is not a list or mapping of interface names.
    """
    findings = []
    context = _RailContext(topology)
    gpus = (topology.get("gpus") or {}).get("devices") or []
    wanted = normalize_rail_interfaces(rail_interfaces)
    if wanted:
        return _inventory_rails(context, gpus, wanted), "inventory", findings
    rails = _gpu_rails(context, gpus, findings)
    if rails:
        return rails, "gpu", findings
    if not (topology.get("gpus") or {}).get("available"):
        rails = _rdma_device_rails(context)
        if rails:
            return rails, "rdma_devices", findings
    return [], "none", findings


def _host_findings(gpus, rdma, rails, interfaces, findings):
    rail_devices = {rail["device"] for rail in rails}
    for gpu in gpus["devices"]:
        if gpu["nearest_link"] == CROSS_SOCKET_LINK:
            _finding(findings, "warning", "gpu_nic_cross_socket",
                     "GPU%d's nearest NIC (%s) is across the CPU interconnect (SYS): its RDMA traffic crosses "
                     "sockets; check which slot the NIC or GPU sits in" % (gpu["index"], ", ".join(gpu["nearest_nics"])))
    groups = {}
    for device in rdma["devices"]:
        for port in device["ports"]:
            label = "%s port %d" % (device["name"], port["port"])
            if port["state"] is not None and port["state"] != "ACTIVE":
                _finding(findings, "error" if device["name"] in rail_devices else "warning", "port_down",
                         "%s is %s (physical state %s)" % (label, port["state"], port["physical_state"] or "unknown"))
                continue
            if port["state"] == "ACTIVE" and port["rate_gbps"]:
                group = (device["model"], port["link_layer"])
                groups.setdefault(group, []).append((label, port["rate_gbps"]))
            if (port["state"] == "ACTIVE" and port["link_layer"] == "Ethernet" and port.get("gids_known")
                    and port["roce_v2_gid_index"] is None):
                _finding(findings, "warning", "no_roce_v2_gid",
                         "%s (RoCE) has no RoCE v2 GID: give its netdev %s an IP address" % (label, port["netdev"]))
    for (model, link_layer), members in sorted(groups.items(), key=lambda item: str(item[0])):
        best = max(member[1] for member in members)
        for label, rate in members:
            if rate < best:
                _finding(findings, "warning", "rate_below_peers",
                         "%s runs at %g Gb/s, below the %g Gb/s of the other %s%s ports"
                         % (label, rate, best, (model + " ") if model else "", link_layer or ""))
    active_rails = [rail for rail in rails if rail["state"] == "ACTIVE" and rail["rate_gbps"]]
    if active_rails:
        best = max(rail["rate_gbps"] for rail in active_rails)
        for rail in active_rails:
            if rail["rate_gbps"] < best:
                _finding(findings, "warning", "rail_rate_below_peers",
                         "rail %d (%s, %s port %s) runs at %g Gb/s, below the %g Gb/s of the fastest rail: "
                         "collectives run at the pace of the slowest rail"
                         % (rail["rail"], rail["gpu"], rail["device"], rail["port"], rail["rate_gbps"], best))
    mtus = {interface["name"]: interface["mtu"] for interface in interfaces}
    rail_mtus = {rail["rail"]: mtus.get(rail["netdev"]) for rail in rails if mtus.get(rail["netdev"])}
    if len(set(rail_mtus.values())) > 1:
        _finding(findings, "warning", "rail_mtu_mismatch", "the rails' netdevs have different MTUs (%s): RoCE and "
                 "IPoIB paths of a collective then differ in packet size" % ", ".join(
                     "rail %d %s=%d" % (rail, next(r["netdev"] for r in rails if r["rail"] == rail), mtu)
                     for rail, mtu in sorted(rail_mtus.items())))
    for device in rdma["devices"]:
        for port in device["ports"]:
            port.pop("gids_known", None)


def build_topology(sources, source="live", rail_interfaces=None):
    """Build gpufabric_topology from raw sources (keys in docs/topology.md); a missing key means 'not on
    this host', explained by sources["reasons"][key] when given. Never raises on bad command output:
    what cannot be parsed becomes a finding of severity error and a reason.

    rail_interfaces: the inventory's gpufabric_rail_interfaces (resolve_rails); RailInterfacesError when it is
    not a list or mapping of interface names."""
    sources = sources or {}
    reasons = dict(sources.get("reasons") or {})
    sysfs = sources.get("sysfs") or {}
    findings = []
    interfaces = sysfs_utils.net_interfaces(sysfs)
    gpus = _gpus(sources, sysfs, findings, reasons)
    rdma = _rdma(sources, sysfs, interfaces, findings, reasons)
    _place_nics_by_numa(gpus, rdma)
    bonds = _bonds(sources, interfaces, findings, reasons)
    lldp = _lldp(sources, findings, reasons)
    routing = _routing(sources, findings, reasons)
    rails, rail_source, rail_findings = resolve_rails(
        {"gpus": gpus, "rdma": rdma, "interfaces": interfaces, "lldp": lldp}, rail_interfaces)
    findings.extend(rail_findings)
    _host_findings(gpus, rdma, rails, interfaces, findings)
    return {
        "schema_version": SCHEMA_VERSION,
        "source": source,
        "gpus": gpus,
        "rdma": rdma,
        "interfaces": interfaces,
        "bonds": bonds,
        "lldp": lldp,
        "rails": rails,
        "rail_source": rail_source,
        "findings": findings,
        "routing": routing,
    }


# ---------------------------------------------------------------- gathering the sources


# lldpctl (and lldpd's other tools) start each log line with the time: a reason carrying it would differ on every run.
_LOG_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\S* ")


def _first_line(*texts):
    """The first non-blank line of the texts, without a leading log timestamp, cut at 300 characters."""
    for text in texts:
        for line in (text or "").splitlines():
            if line.strip():
                return _LOG_TIME.sub("", line.strip())[:300]
    return ""


def _command_reader(run, which, timeout, reasons):
    """command(key) -> the output of COMMANDS[key], or None with the reason in reasons[key].

    A command is wrapped in coreutils timeout when available: a wedged driver can hang nvidia-smi forever."""
    timeout_bin = which("timeout")

    def command(key):
        argv = COMMANDS[key]
        path = which(argv[0])
        if not path:
            reasons[key] = "%s not found in PATH (%s)" % (argv[0], PACKAGE_HINTS[argv[0]])
            return None
        full = [path] + argv[1:]
        if timeout_bin:
            # KILL 5 s after TERM: a tool stuck in the driver may ignore TERM.
            full = [timeout_bin, "-k", "5", str(timeout)] + full
        rc, out, err = run(full)
        if rc in (124, 137) and timeout_bin:
            reasons[key] = "%s timed out after %d s" % (" ".join(argv), timeout)
            return None
        if rc != 0:
            reasons[key] = "%s failed (rc %d): %s" % (" ".join(argv), rc, _first_line(err, out) or "no output")
            # ibstat/ibv_devinfo print the CAs they could read before failing: keep them for the parser.
            return (out + ("\n" + err if err else "")) if key in ("ibstat", "ibv_devinfo") and out.strip() else None
        if not out.strip():
            reasons[key] = "%s printed nothing%s" % (" ".join(argv), ": " + _first_line(err) if err.strip() else "")
            return None
        return out + ("\n" + err if err.strip() and key in ("ibstat", "ibv_devinfo") else "")

    return command


def collect_live(run, which, sys_root="/sys", proc_root="/proc", timeout=30):
    """Gather the raw sources on this host.

    run(argv) -> (rc, stdout, stderr) and which(name) -> path or None are given by the caller
    (AnsibleModule.run_command / get_bin_path), so this stays testable without Ansible.
    """
    sources = {"reasons": {}}
    reasons = sources["reasons"]
    command = _command_reader(run, which, timeout, reasons)

    for key in ("nvidia_smi_topo", "nvidia_smi_query"):
        text = command(key)
        if text is not None:
            sources[key] = text
        if key == "nvidia_smi_topo" and text is None and "not found" in reasons.get(key, ""):
            reasons["nvidia_smi_query"] = reasons[key]
            break
    gpu_addresses = []
    if sources.get("nvidia_smi_query"):
        try:
            gpu_addresses = [gpu["pci_bus_id"] for gpu in parse_nvidia_smi_query_gpu(sources["nvidia_smi_query"])]
        except ParseError:
            pass  # build_topology reports the parse error
    if not os.path.isdir(os.path.join(sys_root, "class/infiniband")):
        reasons["rdma"] = "no RDMA device: %s/class/infiniband does not exist (no RDMA driver loaded)" % sys_root
    for key in ("ibstat", "ibv_devinfo", "lldpctl", "bgp_summary"):
        text = command(key)
        if text is not None:
            sources[key] = text
    bonding_dir = os.path.join(proc_root, "net/bonding")
    bonding = {}
    for name in sorted(os.listdir(bonding_dir)) if os.path.isdir(bonding_dir) else []:
        try:
            with open(os.path.join(bonding_dir, name), "r", encoding="utf-8", errors="replace") as handle:
                bonding[name] = handle.read()
        except OSError as exc:
            reasons["bonding:%s" % name] = "cannot read %s: %s" % (os.path.join(bonding_dir, name), exc)
    sources["bonding"] = bonding
    sources["sysfs"] = sysfs_utils.collect_sysfs(sys_root, gpu_addresses)
    return sources


# lldpd, like most switches, sends an LLDPDU every 30 s; while waiting for one, lldpctl is read this often.
LLDP_POLL_S = 2


def reread_lldp(sources, run, which, timeout=30):
    """Replace the lldpctl output (or its reason) in sources, as collect_live gathered them, with a fresh one."""
    sources.pop("lldpctl", None)
    sources["reasons"].pop("lldpctl", None)
    text = _command_reader(run, which, timeout, sources["reasons"])("lldpctl")
    if text is not None:
        sources["lldpctl"] = text


def rails_awaiting_lldp(topology):
    """Netdevs of the rails whose Ethernet link is up but that lldpd, running, lists no neighbour for yet."""
    if not (topology.get("lldp") or {}).get("available"):
        return []
    return [rail["netdev"] for rail in topology.get("rails") or []
            if rail.get("up") and rail.get("exists", True) and rail.get("netdev")
            and rail.get("link_layer") != "InfiniBand" and rail.get("switch_id") is None]


def wait_for_lldp(topology, reread, wait_s, clock, sleep):
    """Read LLDP again until every rail whose link is up has its neighbour, for at most wait_s seconds.

    A switch is only heard at its next LLDPDU: discovery just after lldpd or a link came up would map such a rail
    without its switch, and the next run with it. reread() builds the topology again from a fresh lldpctl output.
    Returns the last topology; lldp.awaited (those rails' netdevs at the start) and lldp.waited_s say what was
    waited for: figures of this run, which the fabric map never copies."""
    awaited = rails_awaiting_lldp(topology) if wait_s > 0 else []
    started = clock()
    missing = awaited
    while missing and clock() - started < wait_s:
        sleep(max(0, min(LLDP_POLL_S, wait_s - (clock() - started))))
        topology = reread()
        missing = rails_awaiting_lldp(topology)
    if awaited:
        topology["lldp"].update(awaited=awaited, waited_s=int(round(clock() - started)))
    return topology


def read_snapshot(directory):
    """Read a snapshot directory (layout in SNAPSHOT_FILES) into sources; absent files get a reason."""
    if not os.path.isdir(directory):
        raise ValueError("snapshot directory %s does not exist" % directory)
    sources = {"reasons": {}}
    reasons_path = os.path.join(directory, SNAPSHOT_REASONS_FILE)
    if os.path.isfile(reasons_path):
        try:
            with open(reasons_path, "r", encoding="utf-8") as handle:
                recorded = json.load(handle)
            if isinstance(recorded, dict):
                sources["reasons"].update({str(k): str(v) for k, v in recorded.items()})
        except (OSError, ValueError):
            pass  # a damaged reasons file only loses explanations
    for key, filename in SNAPSHOT_FILES.items():
        path = os.path.join(directory, filename)
        if os.path.isfile(path):
            with open(path, "r", encoding="utf-8", errors="replace") as handle:
                sources[key] = handle.read()
        else:
            sources["reasons"].setdefault(key, "the snapshot has no %s" % filename)
    bonding_dir = os.path.join(directory, SNAPSHOT_BONDING_DIR)
    sources["bonding"] = {}
    if os.path.isdir(bonding_dir):
        for name in sorted(os.listdir(bonding_dir)):
            path = os.path.join(bonding_dir, name)
            if os.path.isfile(path):
                with open(path, "r", encoding="utf-8", errors="replace") as handle:
                    sources["bonding"][name] = handle.read()
    sys_dir = os.path.join(directory, SNAPSHOT_SYSFS_DIR)
    sources["sysfs"] = sysfs_utils.read_tree(sys_dir) if os.path.isdir(sys_dir) else {}
    if not sources["sysfs"]:
        sources["reasons"].setdefault("rdma", "the snapshot has no sys/ tree and no RDMA command output")
    return sources


def snapshot_files(sources):
    """The files a capture of sources writes: {relative path: content}."""
    files = {}
    for key, filename in SNAPSHOT_FILES.items():
        if sources.get(key):
            files[filename] = sources[key]
    for name, text in (sources.get("bonding") or {}).items():
        files["%s/%s" % (SNAPSHOT_BONDING_DIR, name)] = text
    for relpath, content in (sources.get("sysfs") or {}).items():
        files["%s/%s" % (SNAPSHOT_SYSFS_DIR, relpath)] = content + "\n"
    if sources.get("reasons"):
        files[SNAPSHOT_REASONS_FILE] = json.dumps(sources["reasons"], indent=2, sort_keys=True) + "\n"
    return files


def _layout_files(directory):
    """Files already in directory that belong to the snapshot layout (never any other file)."""
    found = set()
    for filename in list(SNAPSHOT_FILES.values()) + [SNAPSHOT_REASONS_FILE]:
        if os.path.isfile(os.path.join(directory, filename)):
            found.add(filename)
    for subdir in (SNAPSHOT_BONDING_DIR, SNAPSHOT_SYSFS_DIR):
        for root, unused_dirs, files in os.walk(os.path.join(directory, subdir)):
            for name in files:
                found.add(os.path.relpath(os.path.join(root, name), directory).replace(os.sep, "/"))
    return found


def write_capture(directory, sources, check_mode=False):
    """Write the raw sources into directory; return the relative paths written or removed.

    One file_transaction: files are replaced atomically and only when their content differs, and layout files left
    from an earlier capture that this one did not read are removed, so that the snapshot never mixes two states of
    the host (a failure half-way puts the earlier capture back); other files in directory are left alone. In check
    mode nothing is written and the would-be changes are returned.
    """
    wanted = snapshot_files(sources)
    root = os.path.normpath(directory)
    desired = []
    for relpath, content in sorted(wanted.items()):
        # sysfs names never hold "..", but a snapshot path must stay inside directory whatever it is given.
        path = os.path.normpath(os.path.join(root, relpath))
        if not path.startswith(root + os.sep):
            raise ValueError("refusing to write %s outside %s" % (relpath, directory))
        desired.append({"path": path, "content": content, "mode": 0o644})
    stale = sorted(_layout_files(root) - set(wanted)) if os.path.isdir(root) else []
    desired += [{"path": os.path.join(root, relpath), "content": None, "mode": 0o644} for relpath in stale]
    changes = ft.plan(desired, ft.read_all(desired))
    if changes and not check_mode:
        directories = sorted({os.path.dirname(change["path"]) for change in changes if change["after"] is not None})
        ft.apply(changes, make_directories=[(path, 0o755) for path in directories])
    return sorted(os.path.relpath(change["path"], root).replace(os.sep, "/") for change in changes)
