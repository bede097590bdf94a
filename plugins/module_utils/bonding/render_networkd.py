# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""systemd-networkd: render .netdev and .network files, and read what networkd logs about them."""

from __future__ import annotations

import re

from ansible_collections.gpufabric.core.plugins.module_utils.bonding.render_common import MANAGED_HEADER, _ini


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


# systemd-networkd logs "<path>:<line>: <message>" for each setting it ignores or rejects while loading files.
_NETWORKD_FILE_MESSAGE = re.compile(r"^(?P<path>/\S+?\.(?:netdev|network|link)):(?P<line>\d+): (?P<message>.+)$")
_NETWORKD_FILE_FAILURE = re.compile(r"^(?P<path>/\S+?\.(?:netdev|network|link)): (?P<message>.+)$")
# A file it cannot read: 252 "Failed to open configuration file 'PATH': REASON", 257 "Failed to open PATH: REASON".
_NETWORKD_OPEN_FAILURE = re.compile(
    r"Failed to open (?:configuration file )?'?(?P<path>/\S+?\.(?:netdev|network|link))'?: (?P<message>.+)\Z")
# At debug level (the only level at which 257 says "Enumeration completed.") 257 confirms each file it loaded.
_NETWORKD_FILE_LOADED = "Successfully loaded."


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
        match = (_NETWORKD_FILE_MESSAGE.match(line) or _NETWORKD_FILE_FAILURE.match(line)
                 or _NETWORKD_OPEN_FAILURE.fullmatch(line))
        if match and match.group("path") in wanted and match.group("message") != _NETWORKD_FILE_LOADED:
            problems.append(line)
    return problems
