# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""NetworkManager: render keyfiles, and compare a rendered keyfile with what nmcli made of it."""

from __future__ import annotations

import ipaddress
import uuid

from ansible_collections.gpufabric.core.plugins.module_utils.bonding.render_common import MANAGED_HEADER, _ini

# Fixed namespace so NetworkManager profile UUIDs stay the same from run to run (idempotence).
_UUID_NAMESPACE = uuid.UUID("5b0e3c9e-4f0a-4c53-9a7e-0c6d2f1b7a31")


def _family(address):
    return ipaddress.ip_interface(address).version


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
