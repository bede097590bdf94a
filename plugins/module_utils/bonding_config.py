# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Validate bond, VLAN and interface definitions and render them for netplan, systemd-networkd or
NetworkManager keyfiles.

One place for the rules, used by the controller-side filter (preflight, before any host is touched) and by the
bond_config module on the host (defence in depth). The backends' own tools accept some wrong values silently
(netplan takes ``lacp-rate: turbo``; NetworkManager drops an unknown bond option without an error), so these
checks do not rely on them.

Addresses are checked with the standard library's ``ipaddress`` rather than netaddr: this code also runs on
managed hosts, where netaddr is not guaranteed, and both reject the same malformed input.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import re
import uuid

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
MIIMON_MAX = 10000
ROUTE_TABLE_MAX = 4294967295
RULE_PRIORITY_MAX = 32765  # 32766 and 32767 are the kernel's main and default rules

MANAGED_HEADER = "Managed by gpufabric.core.bonding (Ansible): local changes are overwritten."

_IFNAME_FORBIDDEN = re.compile(r"[\s/:%]")
# Whole-value patterns (fullmatch): a trailing newline or carriage return must not pass.
_MAC = re.compile(r"[0-9a-fA-F]{2}([:-][0-9a-fA-F]{2}){5}")
_INTEGER = re.compile(r"-?[0-9]+")
# Fixed namespace so NetworkManager profile UUIDs stay the same from run to run (idempotence).
_UUID_NAMESPACE = uuid.UUID("5b0e3c9e-4f0a-4c53-9a7e-0c6d2f1b7a31")


class BondingConfigError(ValueError):
    """The bond, VLAN or interface definitions are invalid; ``problems`` lists every problem found."""

    def __init__(self, problems):
        self.problems = list(problems)
        super().__init__("invalid bonding configuration:\n- " + "\n- ".join(self.problems))


# ---------------------------------------------------------------------------------------------------------------
# Validation and normalisation
# ---------------------------------------------------------------------------------------------------------------

def _where(variable, index, item, key=None):
    name = item.get("name") if isinstance(item, dict) else None
    label = "%s[%d]" % (variable, index)
    if name:
        label += " (%s)" % name
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


def interface_name_problem(name):
    """Return why name cannot be a Linux interface name, or None."""
    if not isinstance(name, str) or not name:
        return "must be a non-empty string"
    if len(name) > 15:
        return "%r is longer than the kernel's 15 characters for an interface name" % name
    if name in (".", "..") or _IFNAME_FORBIDDEN.search(name):
        return "%r is not a valid interface name (no spaces, '/', ':' or '%%')" % name
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
        problems.append("%s: must be a list, got %s" % (variable, type(value).__name__))
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
        entry["miimon"] = _check_int(problems, where("miimon"), bond.get("miimon", defaults["miimon"]), 0,
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
        if not isinstance(raw_members, list) or not raw_members:
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


# ---------------------------------------------------------------------------------------------------------------
# Rendering
# ---------------------------------------------------------------------------------------------------------------

def _ini(sections):
    """Render [(section, [(key, value), ...]), ...] as an INI file; None values are left out."""
    blocks = []
    for section, pairs in sections:
        lines = ["[%s]" % section] + ["%s=%s" % (k, v) for k, v in pairs if v is not None]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"


def _family(address):
    return ipaddress.ip_interface(address).version


# systemd-networkd -------------------------------------------------------------------------------------------------

def _networkd_l3(entry):
    network = [("Address", a) for a in entry["addresses"]]
    sections = []
    for route in entry["routes"]:
        sections.append(("Route", [("Destination", route["to"]), ("Gateway", route["via"]),
                                   ("Metric", route["metric"]), ("Table", route["table"]),
                                   ("GatewayOnLink", "yes" if route["on_link"] else None)]))
    for rule in entry["routing_policy"]:
        sections.append(("RoutingPolicyRule", [("From", rule["from"]), ("To", rule["to"]), ("Table", rule["table"]),
                                               ("Priority", rule["priority"])]))
    return network, sections


def _networkd_network(match, entry, extra_network=(), link=()):
    network, extra_sections = _networkd_l3(entry)
    network = list(extra_network) + network + [("VLAN", v) for v in entry.get("vlans", [])]
    if not entry["addresses"]:
        # No address of its own (a bond that only carries VLANs): no DHCP, no IPv6 autoconfiguration on it.
        network += [("LinkLocalAddressing", "no"), ("IPv6AcceptRA", "no")]
    sections = [("Match", match)]
    if link:
        sections.append(("Link", list(link)))
    sections.append(("Network", network))
    return "# %s\n" % MANAGED_HEADER + _ini(sections + extra_sections)


def render_networkd(config, file_prefix="10-gpufabric-"):
    files = {}
    for bond in config["bonds"]:
        files["%s%s.netdev" % (file_prefix, bond["name"])] = "# %s\n" % MANAGED_HEADER + _ini([
            ("NetDev", [("Name", bond["name"]), ("Kind", "bond"), ("MTUBytes", bond["mtu"])]),
            ("Bond", [("Mode", bond["mode"]),
                      ("MIIMonitorSec", "%dms" % bond["miimon"] if bond["miimon"] is not None else None),
                      ("LACPTransmitRate", bond["lacp_rate"]), ("TransmitHashPolicy", bond["xmit_hash_policy"]),
                      ("AdSelect", bond["ad_select"]), ("MinLinks", bond["min_links"]),
                      ("PrimarySlave", None)]),
        ])
        files["%s%s.network" % (file_prefix, bond["name"])] = _networkd_network(
            [("Name", bond["name"])], bond, link=[("MTUBytes", bond["mtu"])])
        for member in bond["members"]:
            # Permanent MAC: the bond and its VLANs take over the member's current MAC and would match too.
            match = [("Name", member["name"])] if member["name"] else [("PermanentMACAddress", member["mac"])]
            primary = [("PrimarySlave", "yes")] if member["name"] and member["name"] == bond["primary"] else []
            files["%s%s-member-%s.network" % (file_prefix, bond["name"], member["id"])] = (
                "# %s\n" % MANAGED_HEADER
                + _ini([("Match", match), ("Network", [("Bond", bond["name"])] + primary)]))
    for eth in config["ethernets"]:
        files["%s%s.network" % (file_prefix, eth["name"])] = _networkd_network(
            [("Name", eth["name"])], eth, link=[("MTUBytes", eth["mtu"])] if eth["mtu"] else ())
    for vlan in config["vlans"]:
        files["%s%s.netdev" % (file_prefix, vlan["name"])] = "# %s\n" % MANAGED_HEADER + _ini([
            ("NetDev", [("Name", vlan["name"]), ("Kind", "vlan"), ("MTUBytes", vlan["mtu"])]),
            ("VLAN", [("Id", vlan["id"])]),
        ])
        files["%s%s.network" % (file_prefix, vlan["name"])] = _networkd_network([("Name", vlan["name"])], vlan)
    return files


# netplan ----------------------------------------------------------------------------------------------------------

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


# NetworkManager keyfiles ------------------------------------------------------------------------------------------

def connection_uuid(profile_id):
    return str(uuid.uuid5(_UUID_NAMESPACE, profile_id))


def _nm_ip(entry):
    """[ipv4] and [ipv6] sections of a keyfile."""
    sections = []
    for family, section in ((4, "ipv4"), (6, "ipv6")):
        addresses = [a for a in entry["addresses"] if _family(a) == family]
        routes = [r for r in entry["routes"] if ipaddress.ip_network(r["to"]).version == family]
        rules = [r for r in entry["routing_policy"]
                 if ipaddress.ip_network(r["from"] or r["to"]).version == family]
        if not addresses and not routes:
            sections.append((section, [("method", "disabled")]))
            continue
        pairs = [("method", "manual")]
        pairs += [("address%d" % (i + 1), a) for i, a in enumerate(addresses)]
        for i, route in enumerate(routes, 1):
            # Keyfile syntax: DEST/PLEN[,GATEWAY[,METRIC]]; an unspecified gateway is written as 0.0.0.0 or ::.
            unspecified = "0.0.0.0" if family == 4 else "::"
            value = route["to"]
            if route["via"] or route["metric"] is not None:
                value += "," + (route["via"] or unspecified)
            if route["metric"] is not None:
                value += ",%d" % route["metric"]
            pairs.append(("route%d" % i, value))
            options = []
            if route["table"] is not None:
                options.append("table=%d" % route["table"])
            if route["on_link"]:
                options.append("onlink=true")
            if options:
                pairs.append(("route%d_options" % i, ",".join(options)))
        for i, rule in enumerate(rules, 1):
            words = ["priority %d" % rule["priority"]] if rule["priority"] is not None else []
            words += ["from %s" % rule["from"]] if rule["from"] else []
            words += ["to %s" % rule["to"]] if rule["to"] else []
            words.append("table %d" % rule["table"])
            pairs.append(("routing-rule%d" % i, " ".join(words)))
        sections.append((section, pairs))
    return sections


def _nm_profile(profile_id, conn_type, interface_name, extra_connection=(), sections=()):
    connection = [("id", profile_id), ("uuid", connection_uuid(profile_id)), ("type", conn_type),
                  ("interface-name", interface_name)] + list(extra_connection)
    return "# %s\n" % MANAGED_HEADER + _ini([("connection", connection)] + list(sections))


def nm_profile_id(name, profile_prefix="gpufabric-"):
    return profile_prefix + name


def render_networkmanager(config, profile_prefix="gpufabric-"):
    files = {}

    def filename(pid):
        return "%s.nmconnection" % pid

    for bond in config["bonds"]:
        pid = nm_profile_id(bond["name"], profile_prefix)
        options = [("mode", bond["mode"]), ("miimon", bond["miimon"]), ("lacp_rate", bond["lacp_rate"]),
                   ("xmit_hash_policy", bond["xmit_hash_policy"]), ("ad_select", bond["ad_select"]),
                   ("min_links", bond["min_links"]), ("primary", bond["primary"])]
        files[filename(pid)] = _nm_profile(
            pid, "bond", bond["name"], [("autoconnect-slaves", 1)],
            [("ethernet", [("mtu", bond["mtu"])]), ("bond", options)] + _nm_ip(bond))
        for member in bond["members"]:
            mpid = nm_profile_id("%s-port-%s" % (bond["name"], member["id"]), profile_prefix)
            ethernet = [("mtu", bond["mtu"])]
            if member["mac"]:
                ethernet.insert(0, ("mac-address", member["mac"].upper()))
            files[filename(mpid)] = _nm_profile(
                mpid, "ethernet", member["name"],
                [("master", connection_uuid(pid)), ("slave-type", "bond")], [("ethernet", ethernet)])
    for eth in config["ethernets"]:
        pid = nm_profile_id(eth["name"], profile_prefix)
        files[filename(pid)] = _nm_profile(pid, "ethernet", eth["name"], (),
                                           [("ethernet", [("mtu", eth["mtu"])])] + _nm_ip(eth))
    for vlan in config["vlans"]:
        pid = nm_profile_id(vlan["name"], profile_prefix)
        parent = connection_uuid(nm_profile_id(vlan["link"], profile_prefix))
        sections = [("vlan", [("id", vlan["id"]), ("parent", parent)])]
        if vlan["mtu"]:
            sections.insert(0, ("ethernet", [("mtu", vlan["mtu"])]))
        files[filename(pid)] = _nm_profile(pid, "vlan", vlan["name"], (), sections + _nm_ip(vlan))
    return files


def render(backend, config, **options):
    """Return {file name: content} for backend ('networkd', 'netplan' or 'networkmanager')."""
    if backend == "networkd":
        return render_networkd(config, **options)
    if backend == "netplan":
        return render_netplan(config, **options)
    if backend == "networkmanager":
        return render_networkmanager(config, **options)
    raise BondingConfigError(["bonding_backend: %r is not one of %s" % (backend, ", ".join(BACKENDS))])


def interface_names(config):
    """Names of the virtual devices (bonds, VLANs) and of every interface the configuration touches."""
    virtual = [b["name"] for b in config["bonds"]] + [v["name"] for v in config["vlans"]]
    members = [m["name"] for b in config["bonds"] for m in b["members"] if m["name"]]
    return {"virtual": virtual, "links": virtual + members + [e["name"] for e in config["ethernets"]]}


# ---------------------------------------------------------------------------------------------------------------
# Reading what the real tools say
# ---------------------------------------------------------------------------------------------------------------

# systemd-networkd logs "<path>:<line>: <message>" for each setting it ignores or rejects while loading files.
_NETWORKD_FILE_MESSAGE = re.compile(r"^(?P<path>/\S+?\.(?:netdev|network|link)):(?P<line>\d+): (?P<message>.+)$")
_NETWORKD_FILE_FAILURE = re.compile(r"^(?P<path>/\S+?\.(?:netdev|network|link)): (?P<message>.+)$")


def networkd_file_problems(log_text, file_names, directory="/etc/systemd/network"):
    """Pick the lines of a systemd-networkd start-up log that concern the given files.

    networkd accepts a file with unknown keys or values that do not parse (it logs "..., ignoring" and goes
    on), so any message it prints about one of our files is a problem: the setting would silently be lost.
    Returns a list of "file:line: message" strings.
    """
    wanted = {"%s/%s" % (directory.rstrip("/"), name) for name in file_names}
    problems = []
    for line in log_text.replace("\r", "").split("\n"):
        line = line.strip()
        match = _NETWORKD_FILE_MESSAGE.match(line) or _NETWORKD_FILE_FAILURE.match(line)
        if match and match.group("path") in wanted:
            problems.append(line)
    return problems


def keyfile_pairs(text):
    """{(section, key): value} of a keyfile, comments and blank lines left out."""
    pairs = {}
    section = None
    for raw in text.replace("\r", "").split("\n"):
        line = raw.strip()
        if not line or line.startswith("#") or line.startswith(";"):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
            continue
        if "=" in line and section is not None:
            key, value = line.split("=", 1)
            pairs[(section, key.strip())] = value.strip()
    return pairs


# NetworkManager writes some settings back under the current names of older aliases.
_NM_SECTION_ALIASES = {"ethernet": "802-3-ethernet"}


def keyfile_dropped_settings(rendered, normalised):
    """Settings of the rendered keyfile that NetworkManager's reader did not keep, or changed.

    ``normalised`` is the keyfile nmcli prints after reading ``rendered`` (``nmcli --offline connection
    modify``). nmcli exits 0 even when it drops a bond option it does not know, so comparing is the check.
    """
    before = keyfile_pairs(rendered)
    after = keyfile_pairs(normalised)
    problems = []
    for (section, key), value in sorted(before.items()):
        kept = after.get((section, key))
        if kept is None and section in _NM_SECTION_ALIASES:
            kept = after.get((_NM_SECTION_ALIASES[section], key))
        if kept is None:
            problems.append("[%s] %s=%s was dropped by NetworkManager" % (section, key, value))
        elif kept != value and kept.lower() != value.lower():
            problems.append("[%s] %s=%s was changed to %s by NetworkManager" % (section, key, value, kept))
    return problems


# ---------------------------------------------------------------------------------------------------------------
# Planning a change of files as one transaction that can be undone
# ---------------------------------------------------------------------------------------------------------------
# Pure functions: given the files a backend owns now and the files it should own, say what to create, replace
# and remove, what the activation has to tear down first and what the undo has to restore. The bond_config module
# does the I/O; the helper script roles/bonding/files/gpufabric-bonding-activate reads the plan files.
MANIFEST = "manifest"
_NAME_LINE = re.compile(r"^\s*Name\s*=\s*(\S+)\s*$", re.MULTILINE)
_NETDEV_SECTION = re.compile(r"^\s*\[NetDev\]", re.MULTILINE)


def sha1(text):
    return hashlib.sha1(text.encode("utf-8")).hexdigest() if text is not None else None


def plan_changes(current, desired):
    """current, desired: {file name: content} of the files the backend owns. Returns a list of changes.

    Each change is {"action": create|replace|remove, "name": file name, "before": text or None,
    "after": text or None}; unchanged files are left out. The order is stable (sorted by name).
    """
    changes = []
    for name in sorted(set(current) | set(desired)):
        before, after = current.get(name), desired.get(name)
        if before == after:
            continue
        action = "create" if before is None else ("remove" if after is None else "replace")
        changes.append({"action": action, "name": name, "before": before, "after": after})
    return changes


def _netdev_name(text):
    if text is None or not _NETDEV_SECTION.search(text):
        return None
    # The [NetDev] section's Name= is the first Name= in a .netdev file.
    match = _NAME_LINE.search(text)
    return match.group(1) if match else None


def networkd_netdevs_to_delete(changes):
    """Virtual devices to delete before `networkctl reload`, for the change and for its undo.

    networkd creates netdevs from new .netdev files on reload but never changes or removes an existing one,
    so a netdev whose file is replaced or removed has to be deleted first to take its new (or no) settings.
    """
    apply, revert = [], []
    for change in changes:
        if not change["name"].endswith(".netdev"):
            continue
        before, after = _netdev_name(change["before"]), _netdev_name(change["after"])
        if change["action"] in ("replace", "remove") and before:
            apply.append(before)
        if change["action"] in ("create", "replace") and after:
            revert.append(after)
    return sorted(set(apply)), sorted(set(revert))


_NM_ORDER = {"ethernet": 0, "bond": 1, "vlan": 3}
_NM_TYPE = re.compile(r"^\s*type\s*=\s*(\S+)\s*$", re.MULTILINE)
_NM_ID = re.compile(r"^\s*id\s*=\s*(.+?)\s*$", re.MULTILINE)
_NM_PORT = re.compile(r"^\s*slave-type\s*=|^\s*port-type\s*=", re.MULTILINE)


def _nm_rank(text):
    kind = (_NM_TYPE.search(text) or [None, "ethernet"])[1]
    if _NM_PORT.search(text):
        return 2  # ports after their bond
    return _NM_ORDER.get(kind, 0)


def networkmanager_profiles_to_activate(changes):
    """Profile ids to `nmcli connection up` after the change and after its undo, parents before children."""
    apply, revert = [], []
    for change in changes:
        if change["after"] is not None:
            apply.append((_nm_rank(change["after"]), (_NM_ID.search(change["after"]) or [None, None])[1]))
        if change["before"] is not None:
            revert.append((_nm_rank(change["before"]), (_NM_ID.search(change["before"]) or [None, None])[1]))
    return ([pid for dummy, pid in sorted(apply) if pid], [pid for dummy, pid in sorted(revert) if pid])


def manifest_text(changes, directory):
    """One line per changed file: action, path, name of its backup in the state directory (or '-')."""
    lines = []
    for index, change in enumerate(changes):
        backup = "%03d-%s" % (index, change["name"]) if change["before"] is not None else "-"
        lines.append("%s\t%s/%s\t%s" % (change["action"], directory.rstrip("/"), change["name"], backup))
    return "\n".join(lines) + "\n"


def diff_entries(changes, directory):
    """Ansible diff entries (before/after with headers), one per changed file."""
    entries = []
    for change in changes:
        path = "%s/%s" % (directory.rstrip("/"), change["name"])
        entries.append({
            "before_header": path if change["before"] is not None else "%s (absent)" % path,
            "after_header": path if change["after"] is not None else "%s (removed)" % path,
            "before": change["before"] or "",
            "after": change["after"] or "",
        })
    return entries


# ---------------------------------------------------------------------------------------------------------------
# Checking the running bond against what was configured
# ---------------------------------------------------------------------------------------------------------------

def runtime_problems(parsed, expected):
    """Compare a bond parsed by bonding.parse_bonding with its normalised definition.

    Returns sentences naming the bond: the parser's own health findings (members down, several aggregators,
    no LACP partner, churn) plus every configured setting that the kernel does not show.
    """
    name = expected["name"]
    problems = ["%s: %s" % (name, problem) for problem in parsed.get("problems", [])]
    if parsed.get("mode") != expected["mode"]:
        problems.append("%s: the kernel runs mode %s, configured %s (a changed bond mode often needs the bond to be "
                        "recreated)" % (name, parsed.get("mode"), expected["mode"]))
    slaves = parsed.get("slaves", [])
    names = {slave["name"] for slave in slaves}
    macs = {(slave.get("permanent_hw_addr") or "").lower() for slave in slaves}
    for member in expected["members"]:
        if member["name"] and member["name"] not in names:
            problems.append("%s: member %s is not enslaved" % (name, member["name"]))
        if member["mac"] and member["mac"] not in macs:
            problems.append("%s: no enslaved interface has the permanent MAC address %s" % (name, member["mac"]))
    if len(slaves) > len(expected["members"]):
        problems.append("%s: %d interfaces are enslaved, %d configured (%s)" % (
            name, len(slaves), len(expected["members"]), ", ".join(sorted(names))))
    checks = [("xmit_hash_policy", "transmit hash policy"), ("miimon", "MII polling interval")]
    if expected["mode"] == "802.3ad":
        checks += [("lacp_rate", "LACP rate"), ("ad_select", "aggregator selection"), ("min_links", "min links")]
    for key, label in checks:
        running = parsed.get("mii_polling_ms") if key == "miimon" else parsed.get(key)
        if expected.get(key) is not None and running is not None and str(running) != str(expected[key]):
            problems.append("%s: %s is %s in the kernel, configured %s" % (name, label, running, expected[key]))
    if expected["mode"] == "802.3ad":
        aggregator = parsed.get("active_aggregator") or {}
        if not aggregator or aggregator.get("partner_mac") is None:
            problems.append("%s: no active aggregator and no LACP partner: is the switch side an LACP port-channel?"
                            % name)
        elif aggregator.get("number_of_ports") is not None and aggregator["number_of_ports"] != len(slaves):
            problems.append("%s: the active aggregator holds %d of %d members" % (
                name, aggregator["number_of_ports"], len(slaves)))
    return problems
