# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""netplan: render one YAML file with PyYAML (python3-yaml, which netplan itself depends on), in a fixed style."""

from __future__ import annotations

from ansible_collections.gpufabric.core.plugins.module_utils.bonding.render_common import MANAGED_HEADER

try:
    import yaml

    HAS_YAML = True
    YAML_IMPORT_ERROR = None
except ImportError as exc:  # a host without netplan; only the netplan backend needs it
    HAS_YAML = False
    YAML_IMPORT_ERROR = exc

if HAS_YAML:
    class _NetplanDumper(yaml.SafeDumper):
        """Block style, list items indented under their key, keys plain and every string double-quoted: "802.3ad"
        or "on" stay strings for any YAML reader. Keys in the order the renderer builds them."""

        def increase_indent(self, flow=False, indentless=False):
            return super().increase_indent(flow, False)

    class _Key(str):
        """A mapping key, printed plain."""

    _NetplanDumper.add_representer(
        str, lambda dumper, value: dumper.represent_scalar("tag:yaml.org,2002:str", value, style='"'))
    _NetplanDumper.add_representer(
        _Key, lambda dumper, value: dumper.represent_scalar("tag:yaml.org,2002:str", str(value)))


def _keys_plain(value):
    if isinstance(value, dict):
        return {_Key(key): _keys_plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_keys_plain(item) for item in value]
    return value


def _yaml(value):
    if not HAS_YAML:
        raise RuntimeError("rendering netplan YAML needs PyYAML (Debian/Ubuntu: python3-yaml, which netplan.io depends "
                           "on): %s" % YAML_IMPORT_ERROR)
    # width: never fold a long quoted string over lines.
    return yaml.dump(_keys_plain(value), Dumper=_NetplanDumper, default_flow_style=False, sort_keys=False,
                     width=1 << 30)


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
    text = "# %s\n" % MANAGED_HEADER + _yaml({"network": network})
    return {file_name: text}
