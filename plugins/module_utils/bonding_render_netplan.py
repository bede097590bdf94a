# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""netplan: render one YAML file with a small deterministic emitter (no PyYAML needed on the host)."""

from __future__ import annotations

import json
import re

from ansible_collections.gpufabric.core.plugins.module_utils.bonding_render_common import MANAGED_HEADER
from ansible_collections.gpufabric.core.plugins.module_utils.bonding_validate import _is_int


_PLAIN_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")


def _yaml_scalar(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if _is_int(value):
        return str(value)
    # JSON strings are valid YAML double-quoted scalars: no ambiguity for values such as "802.3ad" or "on".
    return json.dumps(str(value))


def _yaml(value, indent=0):
    """A small block-style YAML emitter for dicts, lists and scalars: deterministic, no PyYAML on the host."""
    pad = " " * indent
    lines = []
    if isinstance(value, dict):
        for key, item in value.items():
            key_text = key if _PLAIN_KEY.fullmatch(key) else json.dumps(key)
            if isinstance(item, (dict, list)) and item:
                lines.append("%s%s:" % (pad, key_text))
                lines.extend(_yaml(item, indent + 2))
            elif isinstance(item, dict):
                lines.append("%s%s: {}" % (pad, key_text))
            elif isinstance(item, list):
                lines.append("%s%s: []" % (pad, key_text))
            else:
                lines.append("%s%s: %s" % (pad, key_text, _yaml_scalar(item)))
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, dict) and item:
                sub = _yaml(item, indent + 2)
                lines.append("%s- %s" % (pad, sub[0].lstrip()))
                lines.extend(sub[1:])
            else:
                lines.append("%s- %s" % (pad, _yaml_scalar(item)))
    return lines


def _netplan_l3(entry, target):
    if entry["addresses"]:
        target["addresses"] = list(entry["addresses"])
    else:
        target["dhcp4"] = False
        target["dhcp6"] = False
        target["link-local"] = []
    if entry.get("mtu"):
        target["mtu"] = entry["mtu"]
    if entry["routes"]:
        routes = []
        for route in entry["routes"]:
            item = {"to": "default" if route["to"] in ("0.0.0.0/0", "::/0") else route["to"]}
            for key, netplan_key in (("via", "via"), ("metric", "metric"), ("table", "table")):
                if route[key] is not None:
                    item[netplan_key] = route[key]
            if route["on_link"]:
                item["on-link"] = True
            routes.append(item)
        target["routes"] = routes
    if entry["routing_policy"]:
        target["routing-policy"] = [
            {k: rule[k] for k in ("from", "to", "table", "priority") if rule[k] is not None}
            for rule in entry["routing_policy"]]
    return target


def render_netplan(config, file_name="60-gpufabric-bonding.yaml", renderer=None):
    network = {"version": 2}
    if renderer:
        network["renderer"] = renderer
    ethernets, bonds, vlans = {}, {}, {}
    for bond in config["bonds"]:
        for member in bond["members"]:
            # netplan requires every bond member to be defined under ethernets.
            ethernets[member["id"]] = {"match": {"macaddress": member["mac"]}} if member["mac"] else {}
        parameters = {"mode": bond["mode"]}
        for key, netplan_key in (("miimon", "mii-monitor-interval"), ("lacp_rate", "lacp-rate"),
                                 ("xmit_hash_policy", "transmit-hash-policy"), ("ad_select", "ad-select"),
                                 ("min_links", "min-links"), ("primary", "primary")):
            if bond[key] is not None:
                parameters[netplan_key] = bond[key]
        bonds[bond["name"]] = _netplan_l3(bond, {"interfaces": [m["id"] for m in bond["members"]],
                                                 "parameters": parameters})
    for eth in config["ethernets"]:
        ethernets[eth["name"]] = _netplan_l3(eth, {})
    for vlan in config["vlans"]:
        vlans[vlan["name"]] = _netplan_l3(vlan, {"id": vlan["id"], "link": vlan["link"]})
    for key, value in (("ethernets", ethernets), ("bonds", bonds), ("vlans", vlans)):
        if value:
            network[key] = value
    text = "# %s\n" % MANAGED_HEADER + "\n".join(_yaml({"network": network})) + "\n"
    return {file_name: text}
