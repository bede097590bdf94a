# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse the LLDP neighbours printed by `lldpctl -f json` and `lldpctl -f json0` (lldpd).

The two formats carry the same data in different shapes:
- json0 wraps every value in a list and names elements with a "name" key;
- json collapses single elements, keys interfaces and chassis by their name, and turns the interface
  list into a single object when there is only one neighbour.
lldpd before 0.9.7 prints the neighbour's TTL under the chassis, later releases under the port.
"""

from __future__ import annotations

import ipaddress
import json
import re

from ansible_collections.gpufabric.core.plugins.module_utils.parsers.common import ParseError

COMMAND = "lldpctl -f json"
# What tells two neighbours apart (the LLDP MSAP: chassis and port), names first.
_IDENTITY = ("chassis_name", "chassis_id", "port_id", "port_descr")


def _first(value):
    """Unwrap json0's one-element lists."""
    while isinstance(value, list):
        if not value:
            return None
        value = value[0]
    return value


def _text(value):
    """A scalar TLV value in either format: "x", {"value": "x"}, [{"value": "x"}]."""
    value = _first(value)
    if isinstance(value, dict):
        value = value.get("value")
    if value is None:
        return None
    return str(value).replace("\r", "").strip()


def _texts(value):
    """All values of a repeated TLV (mgmt-ip) as a list of strings."""
    if value is None:
        return []
    items = value if isinstance(value, list) else [value]
    found = []
    for item in items:
        text = _text(item)
        if text:
            found.append(text)
    return found


def _id(value):
    """An id TLV: {"type": "mac", "value": "..."} possibly wrapped in lists."""
    value = _first(value)
    if isinstance(value, dict):
        return _text(value.get("value")), value.get("type")
    if value is None:
        return None, None
    return str(value), None


def _is_id_object(value):
    value = _first(value)
    return isinstance(value, dict) and ("value" in value or "type" in value)


def _chassis(raw):
    """Return (name, body) of a chassis in either format."""
    if isinstance(raw, list):  # json0: [{"id": [...], "name": [...], ...}]
        body = _first(raw)
        if not isinstance(body, dict):
            raise ParseError(COMMAND, "a chassis entry is %s, not an object" % type(body).__name__)
        return _text(body.get("name")), body
    if raw is None:
        return None, {}
    if not isinstance(raw, dict):
        raise ParseError(COMMAND, "a chassis is %s, not an object" % type(raw).__name__)
    if "id" in raw and _is_id_object(raw["id"]):
        # json without a system name: the chassis object is the body itself.
        return _text(raw.get("name")), raw
    if len(raw) == 1:
        name, body = next(iter(raw.items()))
        if isinstance(body, dict):
            return name, body
    raise ParseError(COMMAND, "unexpected chassis object with keys %s" % ", ".join(sorted(raw)))


def _preferred_ip(addresses):
    """The first global IPv4 address, else the first global IPv6, else the first one given."""
    ranked = []
    for position, address in enumerate(addresses):
        try:
            parsed = ipaddress.ip_address(address)
        except ValueError:
            ranked.append((3, position, address))
            continue
        rank = 0 if parsed.version == 4 else (2 if parsed.is_link_local else 1)
        ranked.append((rank, position, address))
    return min(ranked)[2] if ranked else None


def _neighbor(local_interface, body):
    if not isinstance(body, dict):
        raise ParseError(COMMAND, "interface %s: expected an object, got %s" % (local_interface, type(body).__name__))
    chassis_name, chassis = _chassis(body.get("chassis"))
    chassis_id, chassis_id_type = _id(chassis.get("id"))
    port = _first(body.get("port")) or {}
    if not isinstance(port, dict):
        port = {}
    port_id, port_id_type = _id(port.get("id"))
    mgmt_ips = _texts(chassis.get("mgmt-ip"))
    # lldpd 1.x prints the TTL under the port; 0.9.4 to 0.9.6 (SONiC's for years) under the chassis.
    ttl = _text(port.get("ttl")) or _text(body.get("ttl")) or _text(chassis.get("ttl"))
    vlans = []
    raw_vlans = body.get("vlan")
    for vlan in raw_vlans if isinstance(raw_vlans, list) else ([raw_vlans] if raw_vlans else []):
        vlan_id = _text(vlan.get("vlan-id")) if isinstance(vlan, dict) else None
        if vlan_id and vlan_id.isdigit():
            vlans.append(int(vlan_id))
    age = re.match(r"(\d+) days?, (\d+):(\d\d):(\d\d)$", _text(body.get("age")) or "")
    return {
        "local_interface": local_interface,
        "via": _text(body.get("via")),
        # Since lldpd first heard this neighbour (or its data last changed), "0 day, 00:10:19"; None when not printed.
        "age_seconds": (int(age.group(1)) * 86400 + int(age.group(2)) * 3600 + int(age.group(3)) * 60
                        + int(age.group(4))) if age else None,
        "chassis_name": chassis_name or None,
        "chassis_id": chassis_id,
        "chassis_id_type": chassis_id_type,
        "chassis_descr": _text(chassis.get("descr")),
        "mgmt_ip": _preferred_ip(mgmt_ips),
        "mgmt_ips": mgmt_ips,
        "port_id": port_id,
        "port_id_type": port_id_type,
        "port_descr": _text(port.get("descr")),
        "ttl": int(ttl) if ttl and ttl.isdigit() else None,
        "vlans": vlans,
    }


def _interfaces(lldp):
    """Yield (local interface name, neighbour body) for both formats and any number of neighbours."""
    for block in lldp if isinstance(lldp, list) else [lldp]:
        if not isinstance(block, dict):
            raise ParseError(COMMAND, "'lldp' holds %s instead of an object" % type(block).__name__)
        interfaces = block.get("interface")
        if interfaces is None:
            continue  # no neighbours: {"lldp": {}} or {"lldp": [{}]}
        if isinstance(interfaces, dict):
            # json, one neighbour: {"eth0": {...}}; json0 never uses a dict here.
            interfaces = [interfaces]
        if not isinstance(interfaces, list):
            raise ParseError(COMMAND, "'interface' holds %s instead of a list or an object" % type(interfaces).__name__)
        for entry in interfaces:
            if not isinstance(entry, dict):
                raise ParseError(COMMAND, "an interface entry is %s, not an object" % type(entry).__name__)
            if "name" in entry and isinstance(entry.get("name"), str) and ("chassis" in entry or "via" in entry):
                yield entry["name"], entry  # json0
            else:
                for name, body in entry.items():
                    yield name, body


def parse_lldp_neighbors(data):
    """Parse `lldpctl -f json` or `-f json0` output and say what it lacks.

    Returns {"neighbors": [as parse_lldp], "errors": [sentences]}: errors says when lldpd lists no
    neighbour at all, and names each neighbour that lacks a chassis id or port id (mandatory in every
    LLDPDU, so their absence means a damaged output).
    """
    if isinstance(data, (bytes, bytearray)):
        data = data.decode("utf-8", errors="replace")
    if isinstance(data, str):
        if not data.strip():
            raise ParseError(COMMAND, "the output is empty (is lldpd running?)")
        try:
            data = json.loads(data)
        except ValueError as exc:
            first = data.strip().splitlines()[0][:120]
            raise ParseError(COMMAND, "not JSON (%s); the output starts with %r; run lldpctl with -f json"
                             % (exc, first)) from None
    if not isinstance(data, dict) or "lldp" not in data:
        raise ParseError(COMMAND, "the JSON has no top-level 'lldp' key")
    neighbors = [_neighbor(name, body) for name, body in _interfaces(data["lldp"])]
    errors = []
    if not neighbors:
        errors.append("lldpd lists no neighbour on any interface (no LLDP frame received, or lldpd just started)")
    for neighbor in neighbors:
        missing = [what for what, key in (("chassis id", "chassis_id"), ("port id", "port_id")) if not neighbor[key]]
        if missing:
            errors.append("interface %s: the neighbour has no %s" % (neighbor["local_interface"], " and no ".join(missing)))
    return {"neighbors": neighbors, "errors": errors}


def parse_lldp(data):
    """Parse `lldpctl -f json` or `-f json0` output (text, or the already decoded object).

    Returns one dict per neighbour, in the order lldpd printed them: local_interface, chassis_name
    (None when the neighbour sends no system name), chassis_id, chassis_id_type, chassis_descr,
    mgmt_ip (preferred address), mgmt_ips, port_id, port_id_type, port_descr, ttl, vlans, via, age_seconds.
    An empty list means no neighbour; parse_lldp_neighbors says so in its errors.
    """
    return parse_lldp_neighbors(data)["neighbors"]


def neighbors_by_interface(neighbors):
    """Group parsed neighbours by local interface: {interface: [neighbour, ...]}, the youngest first.

    lldpd keeps a neighbour that stopped sending until its TTL runs out (120 s by default): a cable moved to another
    switch port is listed with both neighbours for that long, the old one first. The one heard first most recently
    is the cable's (tests/fixtures/lldp/lab-json0-node1-recabled.txt). Neighbours of one age, or without ages, are in
    the order of their chassis and port, not in lldpd's, which is the order their frames happened to arrive in.
    """
    grouped = {}
    for neighbor in neighbors:
        grouped.setdefault(neighbor["local_interface"], []).append(neighbor)
    for seen in grouped.values():
        seen.sort(key=lambda neighbor: (neighbor.get("age_seconds") is None, neighbor.get("age_seconds") or 0,
                                        [str(neighbor.get(key) or "") for key in _IDENTITY]))
    return grouped
