# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read the sysfs files topology discovery needs, and interpret them.

Discovery keeps sysfs as a flat dict {path relative to /sys: content}: the live host, a snapshot's
sys/ tree and unit tests all produce the same dict, and directory listings are implied by the keys
(class/infiniband/mlx5_0/device/net/ens1np0/ifindex says that mlx5_0's netdev is ens1np0), so a
snapshot needs regular files only, no symlinks.
"""

from __future__ import annotations

import os
import re

from ansible_collections.gpufabric.core.plugins.module_utils.parsers.common import int_or_none
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.ibstat import (
    normalize_physical_state,
    normalize_port_state,
    parse_rate_gbps,
)

# parent: the netdev of a software device (Soft-RoCE rxe, siw); hardware devices have none.
_IB_DEVICE_FILES = ("hca_type", "fw_ver", "board_id", "node_guid", "parent", "device/uevent", "device/numa_node")
_IB_PORT_FILES = ("state", "phys_state", "rate", "link_layer")
_NET_FILES = ("address", "mtu", "operstate", "speed", "type", "uevent", "dev_port", "device/uevent",
              "device/numa_node", "bonding/slaves", "bonding/mode")
_ZERO_GID = re.compile(r"^[0:]+$")
_DIGITS = re.compile(r"^\d+$")
_ARPHRD_LOOPBACK = "772"


def _read(path):
    """Content of a sysfs file without its trailing newline; None when it cannot be read.

    Many sysfs attributes fail on read in some states (speed of a down link: EINVAL), which means
    'unknown', not an error.
    """
    try:
        with open(path, "r", encoding="utf-8", errors="replace") as handle:
            return handle.read().rstrip("\n")
    except (OSError, ValueError):
        return None


def _listdir(path):
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def _take(root, found, relpath):
    content = _read(os.path.join(root, relpath))
    if content is not None:
        found[relpath] = content


def _collect_rdma(root, found):
    """The class/infiniband files of every RDMA device: device attributes, netdevs, ports and used GID entries."""
    for device in _listdir(os.path.join(root, "class/infiniband")):
        base = "class/infiniband/%s" % device
        for name in _IB_DEVICE_FILES:
            _take(root, found, "%s/%s" % (base, name))
        for netdev in _listdir(os.path.join(root, base, "device/net")):
            _take(root, found, "%s/device/net/%s/ifindex" % (base, netdev))
        for port in _listdir(os.path.join(root, base, "ports")):
            port_base = "%s/ports/%s" % (base, port)
            for name in _IB_PORT_FILES:
                _take(root, found, "%s/%s" % (port_base, name))
            for index in _listdir(os.path.join(root, port_base, "gids")):
                gid = _read(os.path.join(root, port_base, "gids", index))
                if gid is None or _ZERO_GID.match(gid):
                    continue  # an unused entry of the GID table
                found["%s/gids/%s" % (port_base, index)] = gid
                _take(root, found, "%s/gid_attrs/types/%s" % (port_base, index))
                _take(root, found, "%s/gid_attrs/ndevs/%s" % (port_base, index))


def collect_sysfs(root="/sys", gpu_pci_addresses=()):
    """Read the RDMA, network and GPU PCI attributes under root; return {relative path: content}."""
    found = {}
    _collect_rdma(root, found)
    for interface in _listdir(os.path.join(root, "class/net")):
        base = "class/net/%s" % interface
        if _read(os.path.join(root, base, "type")) == _ARPHRD_LOOPBACK:
            continue
        for name in _NET_FILES:
            _take(root, found, "%s/%s" % (base, name))
    for address in gpu_pci_addresses:
        if address:
            _take(root, found, "bus/pci/devices/%s/numa_node" % address)
    return found


def live_rdma_devices(root="/sys"):
    """rdma_devices() of this host, reading only class/infiniband (for modules that need the RDMA devices and
    their GID tables now, not the whole topology)."""
    found = {}
    _collect_rdma(root, found)
    return rdma_devices(found)


def net_speed_gbps(netdev, root="/sys"):
    """The link speed of netdev in Gbit/s; None for a virtual or down link (EINVAL or -1) or an unknown netdev."""
    speed = int_or_none(_read(os.path.join(root, "class/net", netdev, "speed")))
    return speed / 1000.0 if speed is not None and speed > 0 else None


def read_tree(root):
    """Every regular file under root (a snapshot's sys/ directory) as {relative path: content}."""
    found = {}
    for directory, unused_subdirs, files in os.walk(root):
        for name in files:
            path = os.path.join(directory, name)
            content = _read(path)
            if content is not None:
                found[os.path.relpath(path, root).replace(os.sep, "/")] = content
    return found


def parse_uevent(text):
    """'DRIVER=mlx5_core\\nPCI_SLOT_NAME=0000:19:00.0' -> {'DRIVER': 'mlx5_core', ...}."""
    values = {}
    for line in (text or "").splitlines():
        key, sep, value = line.partition("=")
        if sep:
            values[key.strip()] = value.strip()
    return values


def numa_node(text):
    """sysfs numa_node: -1 (no NUMA affinity reported) and unreadable values give None."""
    text = (text or "").strip()
    return int(text) if _DIGITS.match(text) else None


def _children(sysfs, prefix):
    """Names of the entries directly below prefix, as implied by the keys."""
    names = set()
    for key in sysfs:
        if key.startswith(prefix):
            names.add(key[len(prefix):].split("/", 1)[0])
    return names


def natural_key(name):
    """Sort mlx5_2 before mlx5_10."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def rdma_devices(sysfs):
    """RDMA devices under class/infiniband: {name: {pci_address, numa_node, driver, hca_type, fw_ver,
    board_id, parent, netdevs, ports: {port: {state, physical_state, rate_gbps, link_layer, gids}}}}."""
    devices = {}
    for name in sorted(_children(sysfs, "class/infiniband/"), key=natural_key):
        base = "class/infiniband/%s/" % name
        uevent = parse_uevent(sysfs.get(base + "device/uevent"))
        ports = {}
        for port in sorted(_children(sysfs, base + "ports/"), key=natural_key):
            if not port.isdigit():
                continue
            port_base = "%sports/%s/" % (base, port)
            gids = []
            for index in sorted(_children(sysfs, port_base + "gids/"), key=natural_key):
                if not index.isdigit():
                    continue
                gids.append({
                    "index": int(index),
                    "gid": sysfs[port_base + "gids/" + index].lower(),
                    "type": sysfs.get(port_base + "gid_attrs/types/" + index),
                    "ndev": sysfs.get(port_base + "gid_attrs/ndevs/" + index),
                })
            rate = sysfs.get(port_base + "rate")
            ports[int(port)] = {
                "state": normalize_port_state(sysfs.get(port_base + "state")),
                "physical_state": normalize_physical_state(sysfs.get(port_base + "phys_state")),
                "rate_gbps": parse_rate_gbps(rate) if rate else None,
                "link_layer": sysfs.get(port_base + "link_layer"),
                "gids": gids,
            }
        devices[name] = {
            "pci_address": uevent.get("PCI_SLOT_NAME"),
            "driver": uevent.get("DRIVER"),
            "numa_node": numa_node(sysfs.get(base + "device/numa_node")),
            "hca_type": sysfs.get(base + "hca_type"),
            "fw_ver": sysfs.get(base + "fw_ver"),
            "board_id": sysfs.get(base + "board_id"),
            "parent": sysfs.get(base + "parent"),
            "netdevs": sorted(_children(sysfs, base + "device/net/"), key=natural_key),
            "ports": ports,
        }
    return devices


def net_interfaces(sysfs):
    """Network interfaces under class/net (loopback excluded), each with its bond slaves if a bond."""
    interfaces = []
    for name in sorted(_children(sysfs, "class/net/"), key=natural_key):
        base = "class/net/%s/" % name
        if sysfs.get(base + "type") == _ARPHRD_LOOPBACK:
            continue
        device = parse_uevent(sysfs.get(base + "device/uevent"))
        own = parse_uevent(sysfs.get(base + "uevent"))
        operstate = sysfs.get(base + "operstate")
        speed = int_or_none(sysfs.get(base + "speed"))
        slaves = sysfs.get(base + "bonding/slaves")
        interfaces.append({
            "name": name,
            "mac": sysfs.get(base + "address"),
            # The kernel reports -1 (or a stale value) for links that are down.
            "speed_mbps": speed if speed is not None and speed > 0 and operstate != "down" else None,
            "mtu": int_or_none(sysfs.get(base + "mtu")),
            "driver": device.get("DRIVER") or own.get("DEVTYPE"),
            "operstate": operstate,
            "pci_address": device.get("PCI_SLOT_NAME"),
            "numa_node": numa_node(sysfs.get(base + "device/numa_node")),
            "bond_slaves": slaves.split() if slaves is not None else None,
            "bond_mode": (sysfs.get(base + "bonding/mode") or "").split(" ")[0] or None,
        })
    return interfaces


def pci_numa_node(sysfs, address):
    return numa_node(sysfs.get("bus/pci/devices/%s/numa_node" % address)) if address else None
