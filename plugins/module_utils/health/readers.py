# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Readers of the fabric's live state for the gpufabric-health sampler: plain functions from text or a sysfs tree
to data.

- read_netdev: /sys/class/net/<netdev> (operstate, carrier, speed, carrier change counts);
- read_ib_port: /sys/class/infiniband/<device>/ports/<port> (state, rate, counters, hw_counters);
- read_pcie_link: /sys/bus/pci/devices/<address> link speed and width, and its upstream port's maximum;
- parse_lspci_links: the LnkCap/LnkSta lines of `lspci -vv` (the same facts, from a capture or a host without the
  sysfs attributes);
- parse_ethtool_stats, pause_and_congestion: `ethtool -S` of mlx5 (pause frames, per-priority pause, out of buffer);
- read_roce_ecn: /sys/class/net/<netdev>/ecn/roce_{np,rp}/enable/<priority> (mlx5).

A value that cannot be read is None (unknown), never 0 or "down": the sampler exports unknown as unknown.
Standard library only, relative imports only: the health role installs this file unchanged on each host.
"""

from __future__ import annotations

import os
import re

_STATE = re.compile(r"^\s*(\d+)\s*:\s*(\S+)")
_RATE = re.compile(r"^\s*([0-9.]+)\s*Gb/sec")
_GTS = re.compile(r"([0-9.]+)\s*GT/s")
_LSPCI_DEVICE = re.compile(r"^(?:([0-9a-fA-F]{4}):)?([0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s")
_LNK = re.compile(r"^\s*(LnkCap|LnkSta):\s*(.*)$")
_WIDTH = re.compile(r"Width\s+x(\d+)")
_PCI_ADDRESS = re.compile(r"^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")
_ETHTOOL_LINE = re.compile(r"^\s+([A-Za-z0-9_.\-]+):\s+(-?\d+)\s*$")
_PRIO_PAUSE = re.compile(r"^(rx|tx)_prio([0-7])_pause$")


def read_text(path):
    """A sysfs/procfs file's content without its trailing newline; None when it cannot be read (a down link's
    speed gives EINVAL: unknown, not an error)."""
    try:
        with open(path, "r", encoding="utf-8", errors="replace") as handle:
            return handle.read().rstrip("\n")
    except (OSError, ValueError):
        return None


def _int(text):
    try:
        return int(text.strip())
    except (AttributeError, ValueError):
        return None


def _counters(directory):
    """{name: int} of every integer file in a counters directory; {} when it does not exist."""
    values = {}
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return values
    for name in names:
        value = _int(read_text(os.path.join(directory, name)))
        if value is not None:
            values[name] = value
    return values


def read_netdev(sys_root, netdev):
    """operstate, carrier (True/False/None), speed_mbps (None when unknown: down, or -1/unset as veth and virtio
    report it), carrier_changes, carrier_down_count (kernel counters; None where the kernel has none)."""
    base = os.path.join(sys_root, "class", "net", netdev)
    if not os.path.isdir(base):
        return {"exists": False, "operstate": None, "carrier": None, "speed_mbps": None, "carrier_changes": None,
                "carrier_down_count": None}
    carrier = _int(read_text(os.path.join(base, "carrier")))
    speed = _int(read_text(os.path.join(base, "speed")))
    return {
        "exists": True,
        "operstate": read_text(os.path.join(base, "operstate")),
        "carrier": None if carrier is None else carrier == 1,
        "speed_mbps": speed if speed is not None and speed > 0 else None,
        "carrier_changes": _int(read_text(os.path.join(base, "carrier_changes"))),
        "carrier_down_count": _int(read_text(os.path.join(base, "carrier_down_count"))),
    }


def parse_port_state(text):
    """'4: ACTIVE' -> (4, 'ACTIVE'); None -> (None, None)."""
    match = _STATE.match(text or "")
    return (int(match.group(1)), match.group(2)) if match else (None, None)


def parse_ib_rate_gbps(text):
    """'25 Gb/sec (1X EDR)' -> 25.0; '400 Gb/sec (4X NDR)' -> 400.0; unreadable -> None."""
    match = _RATE.match(text or "")
    return float(match.group(1)) if match else None


def read_ib_port(sys_root, device, port):
    """An RDMA port: state, phys_state, rate_gbps, link_layer, counters and hw_counters ({} where absent)."""
    base = os.path.join(sys_root, "class", "infiniband", device, "ports", str(port))
    if not os.path.isdir(base):
        return {"exists": False, "state": None, "phys_state": None, "rate_gbps": None, "link_layer": None,
                "counters": {}, "hw_counters": {}}
    return {
        "exists": True,
        "state": parse_port_state(read_text(os.path.join(base, "state")))[1],
        "phys_state": parse_port_state(read_text(os.path.join(base, "phys_state")))[1],
        "rate_gbps": parse_ib_rate_gbps(read_text(os.path.join(base, "rate"))),
        "link_layer": read_text(os.path.join(base, "link_layer")),
        "counters": _counters(os.path.join(base, "counters")),
        "hw_counters": _counters(os.path.join(base, "hw_counters")),
    }


def parse_gts(text):
    """A PCIe link speed in GT/s: '16.0 GT/s PCIe' (sysfs), '16GT/s' (lspci), '2.5 GT/s' -> float; 'Unknown' or
    None -> None."""
    match = _GTS.search(text or "")
    return float(match.group(1)) if match else None


def _width(text):
    value = _int(text)
    return value if value and value > 0 else None


def _link(base):
    return {
        "current_speed_gts": parse_gts(read_text(os.path.join(base, "current_link_speed"))),
        "current_width": _width(read_text(os.path.join(base, "current_link_width"))),
        "max_speed_gts": parse_gts(read_text(os.path.join(base, "max_link_speed"))),
        "max_width": _width(read_text(os.path.join(base, "max_link_width"))),
    }


def _lower(first, second):
    known = [value for value in (first, second) if value is not None]
    return min(known) if known else None


def read_pcie_link(sys_root, address):
    """The PCIe link of a device and what it should train at: the lower of its own maximum and its upstream
    port's maximum (a Gen5 NIC in a Gen4 slot is expected at Gen4; only less than that is a downtrained link).

    Returns exists, current_speed_gts, current_width, max_speed_gts, max_width, upstream (address or None),
    expected_speed_gts, expected_width.
    """
    base = os.path.join(sys_root, "bus", "pci", "devices", address)
    if not os.path.exists(base):
        return {"exists": False, "current_speed_gts": None, "current_width": None, "max_speed_gts": None,
                "max_width": None, "upstream": None, "expected_speed_gts": None, "expected_width": None}
    link = dict(_link(base), exists=True, upstream=None)
    # /sys/bus/pci/devices/<address> links to .../pci0000:00/<bridge>/<address>: the parent is the upstream port.
    parent = os.path.basename(os.path.dirname(os.path.realpath(base)))
    upstream = {"max_speed_gts": None, "max_width": None}
    if _PCI_ADDRESS.match(parent):
        link["upstream"] = parent
        upstream = _link(os.path.join(sys_root, "bus", "pci", "devices", parent))
    link["expected_speed_gts"] = _lower(link["max_speed_gts"], upstream["max_speed_gts"])
    link["expected_width"] = _lower(link["max_width"], upstream["max_width"])
    return link


def parse_lspci_links(text):
    """{address: {cap_speed_gts, cap_width, sta_speed_gts, sta_width, downgraded}} from `lspci -vv`; devices
    without a PCI Express capability (no LnkCap) are left out. An address without a domain gets 0000:."""
    links = {}
    current = None
    for line in (text or "").splitlines():
        device = _LSPCI_DEVICE.match(line)
        if device:
            current = "%s:%s" % ((device.group(1) or "0000").lower(), device.group(2).lower())
            continue
        match = _LNK.match(line)
        if not match or current is None:
            continue
        entry = links.setdefault(current, {"cap_speed_gts": None, "cap_width": None, "sta_speed_gts": None,
                                           "sta_width": None, "downgraded": False})
        kind = "cap" if match.group(1) == "LnkCap" else "sta"
        body = match.group(2)
        width = _WIDTH.search(body)
        entry[kind + "_speed_gts"] = parse_gts(body)
        entry[kind + "_width"] = int(width.group(1)) if width else None
        if kind == "sta" and "(downgraded)" in body:
            entry["downgraded"] = True
    return links


def parse_ethtool_stats(text):
    """{counter: int} from `ethtool -S`; lines that are not `name: integer` (the header, per-queue '[0]: x: n'
    lines of some drivers, strings) are skipped."""
    stats = {}
    for line in (text or "").splitlines():
        match = _ETHTOOL_LINE.match(line)
        if match:
            stats[match.group(1)] = int(match.group(2))
    return stats


def pause_and_congestion(stats):
    """The pause and congestion counters of mlx5's `ethtool -S` that a RoCE fabric is watched by.

    Returns pause: {(direction, priority): frames} with priority "global" for 802.3x pause (rx/tx_pause_ctrl_phy)
    and "0".."7" for PFC (rx/tx_prioN_pause), and out_of_buffer (rx_out_of_buffer: packets dropped for want of a
    receive buffer) or None. A counter the driver does not print is left out (unknown, not zero).
    """
    pause = {}
    for direction in ("rx", "tx"):
        name = "%s_pause_ctrl_phy" % direction
        if name in stats:
            pause[(direction, "global")] = stats[name]
    for name, value in stats.items():
        match = _PRIO_PAUSE.match(name)
        if match:
            pause[(match.group(1), match.group(2))] = value
    return {"pause": pause, "out_of_buffer": stats.get("rx_out_of_buffer")}


def read_roce_ecn(sys_root, netdev, priority):
    """(notification point enabled, reaction point enabled) for a priority, each True/False/None (mlx5 only)."""
    base = os.path.join(sys_root, "class", "net", netdev, "ecn")
    values = []
    for role in ("roce_np", "roce_rp"):
        value = _int(read_text(os.path.join(base, role, "enable", str(priority))))
        values.append(None if value is None else value == 1)
    return tuple(values)


def read_netdev_driver(sys_root, netdev):
    """The kernel driver bound to a netdev's device ("mlx5_core"), None when sysfs does not say (virtual netdevs)."""
    try:
        return os.path.basename(os.readlink(os.path.join(sys_root, "class", "net", netdev, "device", "driver")))
    except OSError:
        return None
