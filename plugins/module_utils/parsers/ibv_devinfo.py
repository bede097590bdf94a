# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse `ibv_devinfo` and `ibv_devinfo -v` (rdma-core / libibverbs)."""

from __future__ import annotations

import re

from ansible_collections.gpufabric.core.plugins.module_utils.parsers.ibstat import (
    normalize_physical_state,
    normalize_port_state,
    parse_rate_gbps,
)
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.common import (
    FieldsOnce,
    ParseError,
    clean_lines,
    describe_line,
)

COMMAND = "ibv_devinfo"

_HCA = re.compile(r"^\s*hca_id:\s*(\S+)\s*$")
_PORT = re.compile(r"^\s+port:\s*(\d+)\s*$")
_GID = re.compile(r"^\s+GID\[\s*(\d+)\]:\s*([0-9A-Fa-f:.]+)\s*(?:,\s*(.+?))?\s*$")
_KEY_VALUE = re.compile(r"^\s+([A-Za-z_][A-Za-z0-9_]*):\s*(.*?)\s*$")
_LEADING_INT = re.compile(r"^(\d+)")
_WIDTH = re.compile(r"^(\d+)X\b", re.IGNORECASE)


def _leading_int(value):
    """'4096 (5)' -> 4096; None when the value does not start with a number."""
    match = _LEADING_INT.match(value or "")
    return int(match.group(1)) if match else None


def _drop_code(value):
    """'InfiniBand (0)' -> 'InfiniBand'."""
    return re.sub(r"\s*\(\d+\)\s*$", "", value or "") or None


_DEVICE_FIELDS = {
    "transport": ("transport", _drop_code),
    "fw_ver": ("fw_ver", str),
    "node_guid": ("node_guid", str),
    "sys_image_guid": ("sys_image_guid", str),
    "vendor_id": ("vendor_id", str),
    "vendor_part_id": ("vendor_part_id", _leading_int),
    "hw_ver": ("hw_ver", str),
    "board_id": ("board_id", str),
    "phys_port_cnt": ("phys_port_cnt", _leading_int),
}

_PORT_FIELDS = {
    "state": ("state", normalize_port_state),
    "max_mtu": ("max_mtu", _leading_int),
    "active_mtu": ("active_mtu", _leading_int),
    "sm_lid": ("sm_lid", _leading_int),
    "port_lid": ("port_lid", _leading_int),
    "link_layer": ("link_layer", str),
    "active_width": ("active_width", _drop_code),
    "active_speed": ("active_speed", _drop_code),
    "phys_state": ("physical_state", normalize_physical_state),
}


def _new_port(number):
    port = {"port": number, "rate_gbps": None, "gids": []}
    for name, unused_convert in _PORT_FIELDS.values():
        port[name] = None
    return port


def _port_rate(port):
    """Link rate = lanes x per-lane speed, as ibstat computes it: 4X x 100.0 Gbps = 400."""
    width = _WIDTH.match(port["active_width"] or "")
    speed = parse_rate_gbps(port["active_speed"])
    if width and speed is not None:
        return int(width.group(1)) * speed
    return None


def parse_ibv_devinfo(text):
    """Parse `ibv_devinfo` or `ibv_devinfo -v` output.

    Returns {"devices": [{name, transport, fw_ver, node_guid, vendor_part_id, board_id, phys_port_cnt,
    ports: [{port, state, physical_state, max_mtu, active_mtu, link_layer, active_width, active_speed,
    rate_gbps, gids: [{index, gid, type}]}]}], "errors": [lines]}; errors holds the tool's failure lines
    and a sentence for each device that lists no port. Width, speed, physical state and
    GIDs are only printed with -v; without it they are None or empty. Both the TAB-indented layout of
    old libibverbs and the space-aligned one of rdma-core are read.
    """
    lines = clean_lines(text, COMMAND)
    devices = []
    errors = []
    device = None
    port = None
    fields = FieldsOnce(COMMAND, "an 'hca_id:' or 'port:' line")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        match = _HCA.match(line)
        if match:
            device = {"name": match.group(1), "ports": []}
            device.update({field[0]: None for field in _DEVICE_FIELDS.values()})
            devices.append(device)
            port = None
            continue
        if device is None or not line[0].isspace():
            # "Failed to get IB devices list: ...", "No IB devices found", provider warnings.
            errors.append(line.strip())
            continue
        match = _PORT.match(line)
        if match:
            port = _new_port(int(match.group(1)))
            if any(known["port"] == port["port"] for known in device["ports"]):
                raise ParseError(COMMAND, "%s: hca_id %s lists port %d twice; an 'hca_id:' line is missing before it"
                                 % (describe_line(number, line), device["name"], port["port"]))
            device["ports"].append(port)
            continue
        if port is not None:
            match = _GID.match(line)
            if match:
                port["gids"].append({"index": int(match.group(1)), "gid": match.group(2).lower(),
                                     "type": match.group(3)})
                continue
        match = _KEY_VALUE.match(line)
        if not match:
            continue  # capability flag lists and free text of -v
        key, value = match.group(1), match.group(2)
        if port is None and key in _PORT_FIELDS:
            raise ParseError(COMMAND, "%s: %r outside any port block of %s; a 'port:' line is missing before it"
                             % (describe_line(number, line), key, device["name"]))
        if port is not None and key in _PORT_FIELDS:
            name, convert = _PORT_FIELDS[key]
            fields.set(port, name, convert(value), number, line)
        elif port is None and key in _DEVICE_FIELDS:
            name, convert = _DEVICE_FIELDS[key]
            fields.set(device, name, convert(value), number, line)
    for device in devices:
        for port in device["ports"]:
            port["rate_gbps"] = _port_rate(port)
    for device in devices:
        if not device["ports"]:
            errors.append("hca_id %s lists no port (no 'port: <n>' block): the output is cut or the device is gone"
                          % device["name"])
    if not devices and not errors:
        raise ParseError(COMMAND, "no 'hca_id:' block found")
    if not devices and not any(("device" in line.lower() or "fail" in line.lower()) for line in errors):
        raise ParseError(COMMAND, "no 'hca_id:' block found; the output starts with %r" % errors[0][:120])
    return {"devices": devices, "errors": errors}


def roce_v2_gid_index(gids):
    """Index of the first RoCE v2 GID holding an IPv4-mapped address, else of the first RoCE v2 GID.

    NCCL_IB_GID_INDEX wants a RoCE v2 GID; one mapped from an IPv4 address routes across L3 fabrics.
    """
    roce_v2 = [gid for gid in gids if (gid.get("type") or "").lower().replace(" ", "") == "rocev2"]
    for gid in roce_v2:
        if gid["gid"].startswith("0000:0000:0000:0000:0000:ffff:") or gid["gid"].startswith("::ffff:"):
            return gid["index"]
    return roce_v2[0]["index"] if roce_v2 else None
