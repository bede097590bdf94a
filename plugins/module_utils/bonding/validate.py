# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Validate and normalise bond, VLAN and interface definitions (the bonding role's variables).

One place for the rules, used by the controller-side filter bond_validate (preflight, before any host is touched)
and by the bond_config module on the host (defence in depth). The backends' own tools accept some wrong values
silently (netplan takes ``lacp-rate: turbo``; NetworkManager drops an unknown bond option without an error), so
these checks do not rely on them.

Addresses are parsed with the standard library's ``ipaddress``: this code also runs on managed hosts, where
netaddr is not guaranteed. The checks of the configuration as a whole (subnets, gateways, default routes) use
netaddr and live in bonding_addressing.
"""

from __future__ import annotations

import ipaddress
import re

from ansible_collections.gpufabric.core.plugins.module_utils.inputs.checks import IFNAME, interface_name_problem, kind_of, shown

MODES = ("balance-rr", "active-backup", "balance-xor", "broadcast", "802.3ad", "balance-tlb", "balance-alb")
LACP_RATES = ("slow", "fast")
# Policies that netplan, systemd-networkd and NetworkManager all accept.
XMIT_HASH_POLICIES = ("layer2", "layer2+3", "layer3+4", "encap2+3", "encap3+4")
AD_SELECTS = ("stable", "bandwidth", "count")
BACKENDS = ("networkd", "netplan", "networkmanager")

# Which modes read which option (kernel Documentation/networking/bonding.rst).
MODE_OPTIONS = {
    "lacp_rate": ("802.3ad",),
    "ad_select": ("802.3ad",),
    "min_links": ("802.3ad",),
    "xmit_hash_policy": ("balance-xor", "802.3ad", "balance-tlb"),
    "primary": ("active-backup", "balance-tlb", "balance-alb"),
}

# 1280 keeps IPv6 possible; 9216 is the largest frame common data-centre switches forward.
MTU_MIN = 1280
MTU_MAX = 9216
VLAN_ID_MIN = 1
VLAN_ID_MAX = 4094
# miimon 0 turns link monitoring off (this role configures no ARP monitoring instead): a dead member would stay in
# the bond and black-hole its share of the traffic.
MIIMON_MIN = 1
MIIMON_MAX = 10000
ROUTE_TABLE_MAX = 4294967295
RULE_PRIORITY_MAX = 32765  # 32766 and 32767 are the kernel's main and default rules

# Whole-value patterns (fullmatch): a trailing newline or carriage return must not pass.
_MAC = re.compile(r"[0-9a-fA-F]{2}([:-][0-9a-fA-F]{2}){5}")
_INTEGER = re.compile(r"-?[0-9]+")


class BondingConfigError(ValueError):
    """The bond, VLAN or interface definitions are invalid; ``problems`` lists every problem found."""

    def __init__(self, problems):
        self.problems = list(problems)
        super().__init__("invalid bonding configuration:\n- " + "\n- ".join(self.problems))


def _where(variable, index, item, key=None):
    name = item.get("name") if isinstance(item, dict) else None
    label = "%s[%d]" % (variable, index)
    if name:
        # A name that is not one (a control character, a pattern) is quoted, so that the label prints it escaped.
        label += " (%s)" % (name if isinstance(name, str) and IFNAME.fullmatch(name) else repr(name)[:40])
    return label + ("." + key if key else "")


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _as_int(value):
    """Ints, and strings of digits as YAML or extra-vars may give them; None when not an integer."""
    if _is_int(value):
        return value
    if isinstance(value, str) and _INTEGER.fullmatch(value.strip(" ")):
        return int(value.strip(" "))
    return None


def is_mac(value):
    return isinstance(value, str) and bool(_MAC.fullmatch(value))


def _check_int(problems, label, value, low, high):
    number = _as_int(value)
    if number is None:
        problems.append("%s: %r is not an integer" % (label, value))
        return None
    if not low <= number <= high:
        problems.append("%s: %d is out of range %d-%d" % (label, number, low, high))
        return None
    return number


def _check_choice(problems, label, value, choices):
    if value not in choices:
        problems.append("%s: %r is not one of %s" % (label, value, ", ".join(choices)))
        return None
    return value


def _interface_address(problems, label, value):
    if not isinstance(value, str) or "/" not in value:
        problems.append("%s: %r is not an IP address with a prefix length (for example 10.0.0.5/24 or "
                        "fd00::5/64)" % (label, value))
        return None
    try:
        address = ipaddress.ip_interface(value)
    except ValueError as error:
        problems.append("%s: %r is not an IP address with a prefix length: %s" % (label, value, error))
        return None
    if address.ip == address.network.network_address and address.network.prefixlen < address.max_prefixlen - 1:
        problems.append("%s: %r is a network address, not a host address" % (label, value))
        return None
    return str(address)


def _network(problems, label, value):
    try:
        return ipaddress.ip_network(value, strict=True)
    except (ValueError, TypeError) as error:
        problems.append("%s: %r is not a network in CIDR notation (for example 10.1.0.0/16): %s"
                        % (label, value, error))
        return None


def _ip(problems, label, value):
    try:
        return ipaddress.ip_address(value)
    except (ValueError, TypeError):
        problems.append("%s: %r is not an IP address" % (label, value))
        return None


def _routes(problems, label, routes):
    result = []
    if routes is None:
        return result
    if not isinstance(routes, list):
        problems.append("%s: must be a list of routes" % label)
        return result
    for index, route in enumerate(routes):
        where = "%s[%d]" % (label, index)
        if not isinstance(route, dict):
            problems.append("%s: must be a dict with 'to' and optionally 'via', 'metric', 'table'" % where)
            continue
        unknown = sorted(set(route) - {"to", "via", "metric", "table", "on_link"})
        if unknown:
            problems.append("%s: unknown keys %s (allowed: to, via, metric, table, on_link)"
                            % (where, ", ".join(unknown)))
        to = route.get("to")
        via = _ip(problems, where + ".via", route["via"]) if route.get("via") is not None else None
        if to in ("default", "0.0.0.0/0", "::/0"):
            if via is None and to == "default":
                problems.append("%s.to: a default route needs 'via' (the gateway)" % where)
                continue
            family = via.version if via is not None else (6 if to == "::/0" else 4)
            to_net = ipaddress.ip_network("0.0.0.0/0" if family == 4 else "::/0")
        elif to is None:
            problems.append("%s.to: missing (a network such as 10.2.0.0/16, or 'default')" % where)
            continue
        else:
            to_net = _network(problems, where + ".to", to)
            if to_net is None:
                continue
        if via is not None and via.version != to_net.version:
            problems.append("%s: destination %s is IPv%d but gateway %s is IPv%d"
                            % (where, to_net, to_net.version, via, via.version))
            continue
        entry = {"to": str(to_net), "via": str(via) if via is not None else None, "metric": None, "table": None,
                 "on_link": bool(route.get("on_link", False))}
        if route.get("metric") is not None:
            entry["metric"] = _check_int(problems, where + ".metric", route["metric"], 0, ROUTE_TABLE_MAX)
        if route.get("table") is not None:
            entry["table"] = _check_int(problems, where + ".table", route["table"], 1, ROUTE_TABLE_MAX)
        result.append(entry)
    return result


def _routing_policy(problems, label, rules):
    result = []
    if rules is None:
        return result
    if not isinstance(rules, list):
        problems.append("%s: must be a list of rules" % label)
        return result
    for index, rule in enumerate(rules):
        where = "%s[%d]" % (label, index)
        if not isinstance(rule, dict):
            problems.append("%s: must be a dict with 'from' and/or 'to', 'table' and optionally 'priority'" % where)
            continue
        unknown = sorted(set(rule) - {"from", "to", "table", "priority"})
        if unknown:
            problems.append("%s: unknown keys %s (allowed: from, to, table, priority)" % (where, ", ".join(unknown)))
        if rule.get("from") is None and rule.get("to") is None:
            problems.append("%s: needs 'from' or 'to' (a network in CIDR notation)" % where)
            continue
        entry = {"from": None, "to": None, "table": None, "priority": None}
        for key in ("from", "to"):
            if rule.get(key) is not None:
                network = _network(problems, "%s.%s" % (where, key), rule[key])
                entry[key] = str(network) if network is not None else None
        versions = {ipaddress.ip_network(entry[k]).version for k in ("from", "to") if entry[k]}
        if len(versions) > 1:
            problems.append("%s: 'from' and 'to' mix IPv4 and IPv6" % where)
        if rule.get("table") is None:
            problems.append("%s.table: missing (the routing table the rule selects)" % where)
        else:
            entry["table"] = _check_int(problems, where + ".table", rule["table"], 1, ROUTE_TABLE_MAX)
        if rule.get("priority") is not None:
            entry["priority"] = _check_int(problems, where + ".priority", rule["priority"], 0, RULE_PRIORITY_MAX)
        result.append(entry)
    return result


def _addresses(problems, label, addresses):
    if addresses is None:
        return []
    if not isinstance(addresses, list):
        problems.append("%s: must be a list of addresses such as 10.0.0.5/24" % label)
        return []
    result = []
    for index, value in enumerate(addresses):
        address = _interface_address(problems, "%s[%d]" % (label, index), value)
        if address is not None:
            result.append(address)
    return result


def _l3(problems, where, item):
    """Addresses, routes and routing policy of one interface."""
    return {
        "addresses": _addresses(problems, where("addresses"), item.get("addresses")),
        "routes": _routes(problems, where("routes"), item.get("routes")),
        "routing_policy": _routing_policy(problems, where("routing_policy"), item.get("routing_policy")),
    }


def _check_keys(problems, label, item, allowed):
    unknown = sorted(set(item) - set(allowed))
    if unknown:
        problems.append("%s: unknown keys %s (allowed: %s)" % (label, ", ".join(unknown), ", ".join(sorted(allowed))))


_BOND_KEYS = ("name", "mode", "members", "miimon", "lacp_rate", "xmit_hash_policy", "ad_select", "min_links",
              "primary", "mtu", "addresses", "routes", "routing_policy")
_VLAN_KEYS = ("id", "link", "name", "mtu", "addresses", "routes", "routing_policy")
_ETHERNET_KEYS = ("name", "mtu", "addresses", "routes", "routing_policy")

DEFAULT_BOND_SETTINGS = {
    "mode": "802.3ad",
    "miimon": 100,
    "lacp_rate": "fast",
    "xmit_hash_policy": "layer3+4",
    "ad_select": "stable",
    "min_links": 1,
    "mtu": 9000,
}


def _as_list(problems, variable, value):
    if value is None:
        return []
    if not isinstance(value, list):
        problems.append("%s: must be a list, got a %s" % (variable, kind_of(value)))
        return []
    return value


def normalize(bonds=None, vlans=None, ethernets=None, bond_defaults=None, prefix="bonding"):
    """Validate the user's definitions and return them normalised.

    bonds, vlans and ethernets are the role variables ``<prefix>_bonds``, ``<prefix>_vlans`` and
    ``<prefix>_ethernets``; bond_defaults holds the role-wide defaults (``mode``, ``miimon``, ``lacp_rate``,
    ``xmit_hash_policy``, ``ad_select``, ``min_links``, ``mtu``), applied only to bonds whose mode reads them.
    Raises BondingConfigError listing every problem, each naming the variable and the item.
    """
    problems = []
    defaults = dict(DEFAULT_BOND_SETTINGS)
    defaults.update({k: v for k, v in (bond_defaults or {}).items() if v is not None})
    bonds_var, vlans_var, eth_var = prefix + "_bonds", prefix + "_vlans", prefix + "_ethernets"

    default_mode = defaults["mode"]
    if default_mode not in MODES:
        problems.append("%s_mode: %r is not one of %s" % (prefix, default_mode, ", ".join(MODES)))
        default_mode = "802.3ad"

    owners = {}  # interface name -> "variable[i]" that defines it, to catch duplicates
    member_owner = {}  # member name or MAC -> bond label

    def claim(name, label):
        if name in owners:
            problems.append("%s: interface %s is already defined by %s" % (label, name, owners[name]))
        else:
            owners[name] = label

    result = {"bonds": [], "vlans": [], "ethernets": []}
    for index, bond in enumerate(_as_list(problems, bonds_var, bonds)):
        if not isinstance(bond, dict):
            problems.append("%s[%d]: must be a dict with at least 'name' and 'members'" % (bonds_var, index))
            continue

        def where(key=None, _i=index, _b=bond):
            return _where(bonds_var, _i, _b, key)

        _check_keys(problems, where(), bond, _BOND_KEYS)
        name = bond.get("name")
        problem = interface_name_problem(name)
        if problem:
            problems.append("%s: %s" % (where("name"), problem))
            continue
        claim(name, where())
        mode = bond.get("mode", default_mode)
        if bond.get("mode") is not None:
            mode = _check_choice(problems, where("mode"), bond["mode"], MODES) or default_mode
        entry = {"name": name, "mode": mode}
        miimon_label = where("miimon") if bond.get("miimon") is not None else "%s_miimon" % prefix
        entry["miimon"] = _check_int(problems, miimon_label, bond.get("miimon", defaults["miimon"]), MIIMON_MIN,
                                     MIIMON_MAX)
        for key, choices in (("lacp_rate", LACP_RATES), ("xmit_hash_policy", XMIT_HASH_POLICIES),
                             ("ad_select", AD_SELECTS), ("min_links", None), ("primary", None)):
            applies = mode in MODE_OPTIONS[key]
            explicit = bond.get(key)
            if explicit is not None and not applies:
                problems.append("%s: applies only to mode %s, not to %s; remove it from this bond"
                                % (where(key), " / ".join(MODE_OPTIONS[key]), mode))
                entry[key] = None
                continue
            value = explicit if explicit is not None else (defaults.get(key) if applies else None)
            if value is None:
                entry[key] = None
            elif choices:
                label = where(key) if explicit is not None else "%s_%s" % (prefix, key)
                entry[key] = _check_choice(problems, label, value, choices)
            elif key == "min_links":
                label = where(key) if explicit is not None else "%s_min_links" % prefix
                entry[key] = _check_int(problems, label, value, 0, 1024)
            else:
                entry[key] = value
        members = []
        raw_members = bond.get("members")
        if raw_members is not None and not isinstance(raw_members, list):
            problems.append("%s: must be a list of interface names or MAC addresses, one item each, got a %s %s"
                            % (where("members"), kind_of(raw_members), shown(raw_members)))
            raw_members = []
        elif not raw_members:
            problems.append("%s: must list at least one member interface (name or MAC address)" % where("members"))
            raw_members = []
        bond_names = [b.get("name") for b in bonds if isinstance(b, dict)] if isinstance(bonds, list) else []
        for m_index, member in enumerate(raw_members):
            label = "%s[%d]" % (where("members"), m_index)
            if member == name:
                problems.append("%s: %s is the bond itself; a bond's members are the interfaces it aggregates"
                                % (label, member))
                continue
            if member in bond_names:
                problems.append("%s: %s is another bond of %s; the kernel cannot put a bond into a bond"
                                % (label, member, bonds_var))
                continue
            if is_mac(member):
                key = member.lower().replace("-", ":")
                members.append({"name": None, "mac": key, "id": "%s-port%d" % (name, m_index)})
            else:
                problem = interface_name_problem(member)
                if problem:
                    problems.append("%s: %s (members are interface names or MAC addresses)" % (label, problem))
                    continue
                key = member
                members.append({"name": member, "mac": None, "id": member})
            if key in member_owner:
                problems.append("%s: %s is already a member of %s; an interface can be in one bond only"
                                % (label, member, member_owner[key]))
            else:
                member_owner[key] = where()
        entry["members"] = members
        if mode == "802.3ad" and len(members) == 1 and len(raw_members) == 1:
            problems.append("%s: an 802.3ad (LACP) bond needs at least two members, %s has one; an LACP bond of one "
                            "link has no redundancy and the switch side is often configured for two" % (
                                where("members"), name))
        if entry["min_links"] is not None and members and entry["min_links"] > len(members):
            problems.append("%s: %d is more than the bond's %d members: the bond would never come up"
                            % (where("min_links"), entry["min_links"], len(members)))
        if entry["primary"] is not None and entry["primary"] not in [m["name"] for m in members]:
            problems.append("%s: %r is not one of the bond's members (by name)" % (where("primary"), entry["primary"]))
        mtu_label = where("mtu") if bond.get("mtu") is not None else "%s_mtu" % prefix
        entry["mtu"] = _check_int(problems, mtu_label, bond.get("mtu", defaults["mtu"]), MTU_MIN, MTU_MAX)
        entry.update(_l3(problems, where, bond))
        result["bonds"].append(entry)

    for index, item in enumerate(_as_list(problems, eth_var, ethernets)):
        if not isinstance(item, dict):
            problems.append("%s[%d]: must be a dict with at least 'name'" % (eth_var, index))
            continue

        def where(key=None, _i=index, _e=item):
            return _where(eth_var, _i, _e, key)

        _check_keys(problems, where(), item, _ETHERNET_KEYS)
        problem = interface_name_problem(item.get("name"))
        if problem:
            problems.append("%s: %s" % (where("name"), problem))
            continue
        claim(item["name"], where())
        if item["name"] in member_owner:
            problems.append("%s: %s is a member of %s; a bond member cannot also carry its own configuration"
                            % (where("name"), item["name"], member_owner[item["name"]]))
        entry = {"name": item["name"], "mtu": None}
        if item.get("mtu") is not None:
            entry["mtu"] = _check_int(problems, where("mtu"), item["mtu"], MTU_MIN, MTU_MAX)
        entry.update(_l3(problems, where, item))
        result["ethernets"].append(entry)

    parents = {b["name"]: b for b in result["bonds"]}
    parents.update({e["name"]: e for e in result["ethernets"]})
    vlan_keys = {}
    for index, item in enumerate(_as_list(problems, vlans_var, vlans)):
        if not isinstance(item, dict):
            problems.append("%s[%d]: must be a dict with at least 'id' and 'link'" % (vlans_var, index))
            continue

        def where(key=None, _i=index, _v=item):
            return _where(vlans_var, _i, _v, key)

        _check_keys(problems, where(), item, _VLAN_KEYS)
        if item.get("id") is None:
            problems.append("%s: missing (a VLAN id, %d-%d)" % (where("id"), VLAN_ID_MIN, VLAN_ID_MAX))
            vlan_id = None
        else:
            vlan_id = _check_int(problems, where("id"), item["id"], VLAN_ID_MIN, VLAN_ID_MAX)
        link = item.get("link")
        if link not in parents:
            problems.append("%s: %r is not a bond in %s or an interface in %s; a VLAN's parent must be managed "
                            "by this role" % (where("link"), link, bonds_var, eth_var))
            continue
        if vlan_id is None:
            continue
        name = item.get("name") or "%s.%d" % (link, vlan_id)
        problem = interface_name_problem(name)
        if problem:
            problems.append("%s: %s (set 'name' to a shorter one)" % (where("name"), problem))
            continue
        claim(name, where())
        if (link, vlan_id) in vlan_keys:
            problems.append("%s: VLAN %d on %s is already defined by %s"
                            % (where("id"), vlan_id, link, vlan_keys[(link, vlan_id)]))
        vlan_keys[(link, vlan_id)] = where()
        entry = {"name": name, "id": vlan_id, "link": link, "mtu": None}
        if item.get("mtu") is not None:
            entry["mtu"] = _check_int(problems, where("mtu"), item["mtu"], MTU_MIN, MTU_MAX)
            parent_mtu = parents[link]["mtu"]
            if entry["mtu"] is not None and parent_mtu is not None and entry["mtu"] > parent_mtu:
                problems.append("%s: %d is larger than the MTU %d of its parent %s"
                                % (where("mtu"), entry["mtu"], parent_mtu, link))
        entry.update(_l3(problems, where, item))
        result["vlans"].append(entry)

    seen_addresses = {}
    for kind in ("bonds", "vlans", "ethernets"):
        for entry in result[kind]:
            for address in entry["addresses"]:
                ip = address.split("/")[0]
                if ip in seen_addresses:
                    problems.append("%s_%s (%s): address %s is also assigned to %s"
                                    % (prefix, kind, entry["name"], ip, seen_addresses[ip]))
                seen_addresses[ip] = entry["name"]

    if problems:
        raise BondingConfigError(problems)
    for kind in ("bonds", "ethernets"):
        for entry in result[kind]:
            entry["vlans"] = [v["name"] for v in result["vlans"] if v["link"] == entry["name"]]
    return result
